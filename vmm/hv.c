/* SPDX-License-Identifier: MIT */
/*
 * hv.c - initialisation of the resident copy.
 */
#include "vmm/hv.h"

#include "drivers/serial.h"
#include "vmm/hw/hw.h"
#include "vmm/trace/serial_enc.h"

#include <string.h>

static struct serial_port hv_com;
struct hv_boot_info hv;
static bool hv_net_on;      /* the network exporter took over from serial */

struct per_cpu *hv_this_cpu(void)
{
	struct hw_cpuid_regs r;
	uint32_t apic;

	hw_cpuid(0, 0, &r);
	if (r.eax >= 0xb) {
		hw_cpuid(0xb, 0, &r);
		apic = r.edx;            /* x2APIC ID, valid with or without x2APIC mode */
		if (r.ebx == 0) {        /* leaf 0xB not implemented after all */
			hw_cpuid(1, 0, &r);
			apic = r.ebx >> 24;
		}
	} else {
		hw_cpuid(1, 0, &r);
		apic = r.ebx >> 24;
	}
	for (uint32_t i = 0; i < hv.ncpus; i++)
		if (hv.cpus[i].apic_id == apic)
			return &hv.cpus[i];
	return NULL;
}

void host_nmi(void)
{
	struct per_cpu *cpu = hv_this_cpu();

	if (!cpu)
		return;      /* unknown CPU: nothing to reflect it to */
	cpu->stats.nmis_in_root++;
	__atomic_fetch_add(&cpu->nmi_pending, 1, __ATOMIC_ACQ_REL);
}

/*
 * Guest-physical reads for the tracer: EPT is an identity map and the host
 * page tables map [0, map_top) 1:1, so a guest-physical address is read
 * where it is.  Reads beyond the map fail instead of faulting in root.
 */
static int hv_read_phys(void *opaque, uint64_t gpa, void *buf, size_t len)
{
	(void)opaque;
	if (gpa >= hv.map_top || len > hv.map_top - gpa)
		return -1;
	memcpy(buf, (const void *)(uintptr_t)gpa, len);
	return 0;
}

/*
 * The serial exporter (docs/SERIAL-TRANSPORT.md), the fallback when no
 * NIC is in use: one emitter per CPU, its lines written whole under the logger's
 * lock so they never split a log line (or one another).
 */
#define HV_EXPORT_CPUS 64
static struct trace_serial hv_tser[HV_EXPORT_CPUS];
static bool hv_tser_ready[HV_EXPORT_CPUS];

static void hv_serial_line(void *ctx, const char *s, size_t n)
{
	(void)ctx;
	log_write_raw(s, n);
}

/*
 * pt: the CPU's PT stream since the last export as P lines (the bytes
 * left the byte ring; a line the UART loses is a gap the receiver sees
 * in the offsets).
 */
static void hv_trace_pt_serial(struct per_cpu *cpu, struct trace_serial *ts)
{
	uint8_t buf[960];   /* ten full P lines; on this CPU's stack (CPUs export at once) */
	uint64_t off, first = 0, total = 0;
	size_t n;

	while ((n = trace_pt_take(cpu, buf, sizeof(buf), &off)) > 0) {
		int64_t sent = trace_serial_emit_pt(ts, buf, n, off, 0);

		if (sent < 0) {
			log_err("trace: cpu %u: serial PT export failed at offset %llu: %s", cpu->index,
				(unsigned long long)off, trace_serial_strerror((int)sent));
			return;
		}
		if (!total)
			first = off;
		total += n;
	}
	log_info("trace: cpu %u: exported %llu PT bytes over serial (stream offsets %llu..%llu)",
		 cpu->index, (unsigned long long)total, (unsigned long long)first,
		 (unsigned long long)(first + total));
}

/*
 * A trace window closed on this CPU: send what its ring holds since the
 * last export, then free that space (under overflow = stop the next
 * window gets the whole ring again).  Runs in VMX root on that CPU, so the
 * guest waits while the UART drains: ~90 bytes of line per 16-byte
 * branch record, ~8 ms per 1,000 records at 115200 baud.
 */
static void hv_trace_window(struct per_cpu *cpu)
{
	struct tv_trace_ring *ring = trace_cpu_ring(cpu);
	struct trace_cursor *exported = trace_cpu_exported(cpu);
	struct trace_serial_result res;
	struct trace_serial *ts;
	int64_t n;

	if (!ring)
		return;
	if (hv_net_on) {
		/*
		 * Records and PT bytes streamed as produced; this waits for the
		 * window's acks (both streams) and logs.
		 */
		hv.net_ops->window(cpu);
		return;
	}
	if (!hv.serial_port) {
		log_warn("trace: cpu %u: no exporter (serial = off): the window's records stay in memory",
			 cpu->index);
		return;
	}
	if (cpu->index >= HV_EXPORT_CPUS) {
		log_warn("trace: cpu %u: beyond the serial exporter's %u CPUs: not exported",
			 cpu->index, HV_EXPORT_CPUS);
		return;
	}
	ts = &hv_tser[cpu->index];
	if (!hv_tser_ready[cpu->index]) {
		trace_serial_init(ts, ring->cpu, hv_serial_line, NULL);
		hv_tser_ready[cpu->index] = true;
	}
	n = trace_serial_emit_ring(ts, ring, exported, 0, &res);
	if (n < 0) {
		log_err("trace: cpu %u: serial export failed: %s", cpu->index,
			trace_serial_strerror((int)n));
		return;
	}
	trace_ring_consume(ring, exported);
	log_info("trace: cpu %u: exported %llu records over serial (%llu lines, %llu bytes), %llu gone before export",
		 cpu->index, (unsigned long long)res.records, (unsigned long long)res.lines,
		 (unsigned long long)res.bytes, (unsigned long long)res.missed);
	if (trace_cpu_pt_stream(cpu))
		hv_trace_pt_serial(cpu, ts);
}

void hv_init(const struct hv_boot_info *bi)
{
	/* Sinks copied from the original point into the original: drop them. */
	hv = *bi;
	log_clear_sinks();
	log_set_ring(bi->log_ring);
	log_set_level(bi->log_level);
	if (bi->serial_port) {
		/* Programmed by boot already: attach, do not reset its FIFO. */
		serial_attach(&hv_com, bi->serial_port);
		log_add_sink(serial_write, &hv_com);
	}
	pci_hide_init(&bi->pci_hide, &bi->ecam);
	if (bi->pci_hide.n)
		pci_cfg_latch_init(bi->pci_latch);
	preempt_hook_install(&bi->poll);
	trace_engine_init(&bi->trace, hv_read_phys, NULL, hv_trace_window);
	trace_trigger_arm(bi->ept, bi->pool);
	hv_net_on = false;
	if (bi->net_ops && bi->net.enabled) {
		hv_net_on = bi->net_ops->start(&hv.net, bi->cpus, bi->ncpus) == 0;
		if (!hv_net_on)
			log_warn("hv: network export not running: trace windows go out over %s",
				 bi->serial_port ? "serial" : "nothing (serial = off): they stay in memory");
	}
	log_info("hv: resident copy initialised, %u CPUs, exporter %s", bi->ncpus,
		 hv_net_on ? "network" : "serial");
}
