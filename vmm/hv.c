/* SPDX-License-Identifier: MIT */
/*
 * hv.c - initialisation of the resident copy.
 */
#include "vmm/hv.h"

#include "drivers/serial.h"
#include "vmm/hw.h"

#include <string.h>

static struct serial_port hv_com;
struct hv_boot_info hv;

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

/* A trace window closed on this CPU: hand it to the exporter. */
static void hv_trace_window(struct per_cpu *cpu)
{
	(void)cpu;
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
	trace_engine_init(&bi->trace, hv_read_phys, NULL, hv_trace_window);
	trace_trigger_arm(bi->ept, bi->pool);
	log_info("hv: resident copy initialised, %u CPUs", bi->ncpus);
}
