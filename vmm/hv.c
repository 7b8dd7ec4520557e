/* SPDX-License-Identifier: MIT */
/*
 * hv.c - initialisation of the resident copy.
 */
#include "vmm/hv.h"

#include "vmm/exit/exit_io.h"
#include "vmm/hw/hw.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/images.h"
#include "vmm/trace/poweroff.h"
#include "vmm/trace/serial_export.h"
#include "vmm/trace/snap.h"

#include <string.h>

struct hv_boot_info hv;
static bool hv_net_on;      /* the network exporter took over from serial */
static bool hv_serial_on;   /* a serial line is attached (log sink, serial exporter) */

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
 * The serial exporter's lines (vmm/trace/serial_export.c) go to every log
 * sink (the serial line boot registered) whole, under the logger's lock,
 * so they never split a log line (or one another).
 */
static void hv_serial_line(void *ctx, const char *s, size_t n)
{
	(void)ctx;
	log_write_raw(s, n);
}

/*
 * A trace window closed on this CPU (VMX root, that CPU): the network
 * exporter when it runs, else the serial one.
 */
static void hv_trace_window(struct per_cpu *cpu)
{
	if (!trace_cpu_ring(cpu))
		return;
	if (hv_net_on) {
		/*
		 * Records and PT bytes streamed as produced; this waits for the
		 * window's acks (both streams) and logs.
		 */
		hv.net_ops->window(cpu);
		return;
	}
	(void)serial_export_window(cpu);   /* logs what it did or why not */
}

/*
 * The guest powers off: one export step (the network exporter's); the
 * serial exporter has written each window out when it closed.
 */
static bool hv_trace_pump(struct per_cpu *cpu)
{
	if (hv_net_on && hv.net_ops->pump)
		return hv.net_ops->pump(cpu);
	return true;
}

/*
 * The ACPI power-off port (vmm/exit/exit_io.h): with a trace source the
 * CPUs have I/O bitmaps (boot/vmx_boot.c); look for the FADT now (real
 * firmware publishes it at boot) and again at ExitBootServices
 * (vmm/trace/hcall.c), when an OS loader may have installed it.
 */
static void hv_sleep_init(const struct hv_boot_info *bi)
{
	const struct per_cpu *c0 = bi->ncpus ? &bi->cpus[0] : NULL;

	if (!c0 || !c0->io_bitmap_a_pa || bi->trace.source == TV_SOURCE_NONE) {
		io_sleep_init(NULL, NULL, 0, NULL, NULL);
		return;
	}
	io_sleep_init((uint8_t *)(uintptr_t)c0->io_bitmap_a_pa,
		      (uint8_t *)(uintptr_t)c0->io_bitmap_b_pa, bi->efi_system_table, hv_read_phys,
		      NULL);
	(void)io_sleep_learn("boot");
}

void hv_init(const struct hv_boot_info *bi)
{
	/* Sinks copied from the original point into the original: drop them. */
	hv = *bi;
	log_clear_sinks();
	log_set_ring(bi->log_ring);
	log_set_level(bi->log_level);
	hv_serial_on = bi->serial_port && bi->serial_ops;
	if (hv_serial_on) {
		/* Programmed by boot already: attach, do not reset its FIFO. */
		log_add_sink(bi->serial_ops->write, bi->serial_ops->attach(bi->serial_port));
	}
	serial_export_init(hv_serial_on ? hv_serial_line : NULL, NULL);
	pci_hide_init(&bi->pci_hide, &bi->ecam);
	if (bi->pci_hide.n)
		pci_cfg_latch_init(bi->pci_latch);
	preempt_hook_install(&bi->poll);
	trace_engine_init(&bi->trace, hv_read_phys, NULL, hv_trace_window);
	trace_images_init(&hv.boot_images, hv.efi_system_table);   /* grown by the rescans */
	trace_trigger_arm(bi->ept, bi->pool);
	trace_snap_arm(bi->ept, bi->pool);   /* after the trigger: it finds its page executable */
	hv_net_on = false;
	if (bi->net_ops && bi->net.enabled) {
		hv_net_on = bi->net_ops->start(&hv.net, bi->cpus, bi->ncpus) == 0;
		if (!hv_net_on)
			log_warn("hv: network export not running: trace windows go out over %s",
				 hv_serial_on ? "serial" : "nothing (serial = off): they stay in memory");
	}
	trace_engine_set_cpus(bi->cpus, bi->ncpus, hv_trace_pump);
	hv_sleep_init(bi);
	log_info("hv: resident copy initialised, %u CPUs, exporter %s", bi->ncpus,
		 hv_net_on ? "network" : "serial");
}
