/* SPDX-License-Identifier: MIT */
/*
 * vmx_boot.h - virtualize every CPU (the blue pill).
 */
#ifndef TV_VMX_BOOT_H
#define TV_VMX_BOOT_H

#include <stdint.h>

#include "vmm/hv.h"
#include "vmm/lib/log.h"
#include "vmm/trace/engine.h"

struct vmx_boot_params {
	uint32_t phys_addr_bits;     /* CPUID.80000008H:EAX[7:0] */
	uint64_t map_top;            /* EPT/host map covers [0, map_top) */
	struct log_ring *log_ring;   /* handed to the resident copy */
	uint64_t log_ring_pa, log_ring_bytes;
	uint16_t serial_port;
	const struct hv_serial_ops *serial_ops; /* in this image (NULL: none); the copy's goes to hv_init */
	log_sink_fn console_sink;    /* removed while APs run (ConOut is BSP-only) */
	uint64_t tsc_hz;             /* measured at boot */
	uint32_t heartbeat_s;        /* config: 0 = off */
	uint32_t poll_us;            /* config: period of the poll hook (hv_set_poll_hook) */
	uint32_t pt_drain_us;        /* config: source = pt drain tick, 0 = off */
	struct trace_setup trace;    /* what to trace; ring_kb per CPU */
	bool trace_cpu_all;          /* every CPU gets a ring, else trace_cpus */
	uint32_t trace_cpus[8];      /* bit n: CPU index n traces */
	/*
	 * The export network (net.enabled: a NIC was chosen, already
	 * pci_hide_add()ed): vmx_boot reserves its DMA block and the
	 * exporter, fills net.dma, net.ex and net.cpu, and the resident copy
	 * brings it up (net_resident_ops).  Needs vmx_boot_save_net_state().
	 */
	struct hv_net net;
};

/*
 * vmx_boot_save_net_state - at efi_main entry, before anything uses the
 * network: keep the pristine bytes of the network state (lwIP, net/,
 * the NIC drivers: _net_state_start.._net_state_end, linker.ld) in loader
 * memory, for the resident copy to start from.  Without that snapshot
 * (no memory), vmx_boot leaves the network off.
 */
void vmx_boot_save_net_state(void);

/*
 * vmx_boot - reserve, relocate, build host state and EPT, launch all CPUs.
 * Returns 0 when every CPU runs as a guest (this call returns in the
 * guest), -1 otherwise with the reason logged; the machine then boots on.
 */
int vmx_boot(const struct vmx_boot_params *p);

#endif /* TV_VMX_BOOT_H */
