/* SPDX-License-Identifier: MIT */
/*
 * hv.h - the resident half of tracevisor.
 *
 * boot/ copies the whole image into reserved memory and calls hv_init()
 * in that copy; from then on VM exits run the copy's code on the copy's
 * globals, while the firmware-loaded original goes on as guest-side boot
 * code (chainload) until the OS reclaims it.  The two halves share only
 * what struct hv_boot_info points to.
 */
#ifndef TV_HV_H
#define TV_HV_H

#include <stdint.h>

#include "vmm/vmx/ept.h"
#include "vmm/lib/efi_images.h"
#include "vmm/lib/log.h"
#include "vmm/lib/page_pool.h"
#include "vmm/exit/pci_hide.h"
#include "vmm/exit/preempt.h"
#include "vmm/trace/trace.h"
#include "vmm/vmx/vcpu.h"

struct exporter;

/*
 * The NIC boot chose, found again by address and IDs in the resident copy
 * (net/net.c probes it; drivers/pci.h's struct pci_dev is not vmm's).
 */
struct hv_nic_id {
	struct pci_bdf addr;          /* segment 0 (vmm/exit/pci_hide.h) */
	uint16_t vendor, device;
};

/*
 * The export network of the resident copy (docs/NET.md, "In VMX root"):
 * the NIC boot chose (found again by address and ID, its driver taken from
 * the copy's own table), blocks in reserved memory, and the net config.
 */
struct hv_net {
	bool enabled;                 /* a NIC was chosen and tracing is on */
	struct hv_nic_id nic;
	void *dma;                    /* NIC_DMA_BYTES, 4 KiB aligned, reserved */
	struct exporter *ex;          /* reserved (the struct is large) */
	bool dhcp;
	uint32_t ip, gw;              /* static address, gateway (0 = none) */
	uint8_t prefix;
	uint32_t receiver_ip;
	uint16_t receiver_port;
	uint8_t keylen;               /* 0: no control key */
	uint8_t key[64];
	uint8_t data_keylen;          /* 0: the data path unsealed (config_data_key) */
	uint8_t data_key[64];
	char machine[64];
	uint32_t caps;                /* TVP_CAP_SOURCE bits this CPU offers */
	uint64_t tsc_hz;
	uint32_t cpu;                 /* per_cpu index that owns the NIC (the poll hook's) */
	uint32_t heartbeat_s;         /* exporter status line period, 0 = only on loss */
};

/*
 * What the network side (net/net.c) does for the resident copy; boot
 * points hv_boot_info.net_ops at the copy's table (NULL: no network, as in
 * the unit tests).  start: NIC, lwIP, exporter over every CPU's ring; 0 or
 * a negative error (logged), after which the serial exporter is used.
 * window: a trace window closed on cpu (VMX root, that CPU).
 * pump: one export step from cpu (VMX root): on the CPU that drives the
 * NIC, run the link once; elsewhere a short pause.  Returns true when the
 * receiver has acknowledged every stream (records and PT bytes of every
 * CPU).  The guest's power-off waits on it (vmm/trace/poweroff.h).
 */
struct hv_net_ops {
	int (*start)(const struct hv_net *n, struct per_cpu *cpus, uint32_t ncpus);
	void (*window)(struct per_cpu *cpu);
	bool (*pump)(struct per_cpu *cpu);
};

/*
 * The serial line of the resident copy (docs/SERIAL-TRANSPORT.md), the
 * way the network comes in: boot points hv_boot_info.serial_ops at the
 * copy's table (NULL: no serial line, as in the unit tests).  attach:
 * take over the UART at port that boot already programmed (no reset: its
 * FIFO is kept) and return the ctx for write; write: a log sink
 * (vmm/lib/log.h) that puts text on that line.  The serial exporter's
 * lines go out through the logger (log_write_raw), so through write.
 */
struct hv_serial_ops {
	void *(*attach)(uint16_t port);
	log_sink_fn write;
};

struct hv_boot_info {
	struct log_ring *log_ring;    /* reserved memory */
	enum log_level log_level;
	uint16_t serial_port;         /* 0: none */
	const struct hv_serial_ops *serial_ops; /* in the resident copy, or NULL */
	struct per_cpu *cpus;
	uint32_t ncpus;
	struct ept *ept;              /* shared by all CPUs */
	struct page_pool *pool;       /* for EPT splits after boot */
	uint64_t scratch_pa;          /* where guest accesses to hidden pages land */
	struct ept_range hidden[2];   /* tracevisor's memory */
	uint32_t nhidden;
	uint64_t map_top;             /* host identity map covers [0, map_top) */
	struct trace_setup trace;
	struct pci_hide_list pci_hide; /* functions the guest must not see */
	struct pci_ecam ecam;          /* MCFG segment 0 (base 0: none found) */
	uint32_t pci_latch;            /* CONFIG_ADDRESS at boot (with pci_hide.n != 0) */
	struct preempt_hook poll;      /* rebased into the resident copy */
	struct hv_net net;
	const struct hv_net_ops *net_ops; /* in the resident copy, or NULL */
	uint64_t efi_system_table;     /* physical; 0: none (the ACPI power-off port, exit_io.h) */
	struct efi_img_seen boot_images; /* images_record's, for the ExitBootServices rescan */
};

/* The resident copy's view of the above, set by hv_init(). */
extern struct hv_boot_info hv;

/* hv_this_cpu - the calling CPU's per_cpu (by APIC ID), NULL if unknown. */
struct per_cpu *hv_this_cpu(void);

/* host_nmi - from the host IDT: an NMI arrived in VMX root (vmx_entry.S). */
void host_nmi(void);

/*
 * hv_set_poll_hook - run fn(ctx) in VMX root on the CPU with per_cpu
 * index cpu, every poll_us (tracevisor.conf) and at its exits once that
 * much time has passed (vmm/exit/preempt.h).  Register at boot, before
 * vmx_boot: it rebases fn and ctx when they point into the loaded image;
 * ctx anywhere else must be memory the OS never reclaims.  fn NULL
 * removes the hook.  Returns 0.
 */
int hv_set_poll_hook(void (*fn)(void *ctx), void *ctx, uint32_t cpu);

/* hv_init - called in the resident copy before any CPU launches. */
void hv_init(const struct hv_boot_info *bi);

#endif /* TV_HV_H */
