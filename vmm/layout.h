/* SPDX-License-Identifier: MIT */
/*
 * layout.h - where everything tracevisor owns sits inside its one memory
 * reservation.  Pure arithmetic (no EFI, no hardware): boot/vmx_boot.c
 * asks for the total, reserves it, and places every part at the offsets
 * given here; the trace parts' sizes come from trace_engine_needs().
 *
 * Order inside the reservation (every offset page aligned, relative to
 * its start):
 *   image      the resident copy of tracevisor
 *   cpus       struct per_cpu[ncpus]
 *   info       boot info, host environments, EPT, MTRR, pool and log state
 *   idt, guest TSS, I/O bitmap A, I/O bitmap B, the all-ones page
 *   nic_dma, exporter   only with network export
 *   per-CPU pages       per CPU: VMXON, VMCS, MSR bitmap, GDT+TSS, host stack
 *   pool       the page pool (host page tables, EPT)
 *   rings      per CPU: the trace ring (0 bytes: no tracing)
 *   guest      per CPU: backend memory the guest's EPT maps read/write
 *              (bts: DS area and buffer) - the one range given back
 *   hidden     per CPU: backend memory the guest never sees (pt: ToPA
 *              regions, table, stream ring), the first one aligned to
 *              hidden_align in *physical* address: a ToPA region is
 *              aligned to its size (SDM 3C 33.2.7.2).  The total keeps
 *              one hidden_align of slack for that, whatever the base.
 */
#ifndef TV_LAYOUT_H
#define TV_LAYOUT_H

#include <stdint.h>

#define HV_PAGE 4096ull

/* One CPU's pages, in order (vmx_boot fills them). */
#define HV_PERCPU_VMXON      0ull
#define HV_PERCPU_VMCS       (1 * HV_PAGE)
#define HV_PERCPU_MSR_BITMAP (2 * HV_PAGE)
#define HV_PERCPU_GDT        (3 * HV_PAGE)   /* GDT, the TSS 256 bytes in */
#define HV_PERCPU_TSS        (HV_PERCPU_GDT + 256)
#define HV_HOST_STACK_BYTES  (64ull * 1024)
#define HV_PERCPU_BYTES      (4 * HV_PAGE + HV_HOST_STACK_BYTES)

#define HV_POOL_BYTES        (8ull * 1024 * 1024)

/* What varies from one boot to the next. */
struct hv_layout_req {
	uint64_t image_bytes;       /* the loaded image (rounded up here) */
	uint32_t ncpus;
	uint64_t cpu_struct_bytes;  /* sizeof(struct per_cpu) */
	uint64_t info_bytes;        /* boot info + host envs + EPT/MTRR/pool/log state */
	uint64_t nic_dma_bytes;     /* 0: no network export */
	uint64_t exporter_bytes;    /* 0: no network export */
	/*
	 * per traced CPU, from trace_engine_needs() (0: none), for ntraced
	 * CPUs (the ones trace_cpus selects; 0: all ncpus): the k-th traced
	 * CPU's part is at off + k * bytes.  64-bit: hundreds of MiB per CPU
	 * times 256 CPUs is fine; a sum past 2^64 is HV_LAYOUT_EOVERFLOW.
	 */
	uint32_t ntraced;
	uint64_t ring_bytes;
	uint64_t guest_bytes;
	uint64_t hidden_bytes;
	uint64_t hidden_align;      /* a power of two >= HV_PAGE when hidden_bytes */
	/*
	 * Page-pool bytes beyond HV_POOL_BYTES, from trace_engine_needs()
	 * (pool_bytes: code snapshots' EPT splits and tables); a page multiple.
	 */
	uint64_t pool_extra_bytes;
};

/*
 * Offsets from the start of the reservation.  Per-CPU parts: CPU i's is
 * at off + i * bytes (bytes is per CPU; 0 = the part is absent); the
 * trace parts (ring, guest, hidden) are per traced CPU: the k-th traced
 * CPU's at off + k * bytes, for ntraced CPUs.
 */
struct hv_layout {
	uint64_t total;             /* what to reserve: a page multiple */
	uint64_t image_off, image_bytes;
	uint64_t cpus_off, cpus_bytes;
	uint64_t info_off, info_bytes;
	uint64_t idt_off, guest_tss_off, io_bitmap_a_off, io_bitmap_b_off, ff_page_off;
	uint64_t nic_dma_off, nic_dma_bytes;
	uint64_t exporter_off, exporter_bytes;
	uint64_t percpu_off, percpu_bytes;
	uint64_t pool_off, pool_bytes;
	uint64_t ring_off, ring_bytes;
	uint64_t guest_off, guest_bytes;
	uint64_t hidden_off, hidden_bytes;
	uint32_t ntraced;           /* CPUs with trace parts */
};

#define HV_LAYOUT_EINVAL    (-1)   /* no CPU, ntraced > ncpus, a size not page aligned, a bad alignment */
#define HV_LAYOUT_EOVERFLOW (-2)   /* the sizes do not fit in 64 bits */

/*
 * hv_layout_compute - lay out req for a reservation that starts at
 * physical address base_pa (page aligned).  out->total does not depend
 * on base_pa: call once with 0 to learn the size, reserve, then again
 * with the real base.  ring_bytes, guest_bytes and hidden_bytes must be
 * page multiples (hidden_bytes a multiple of hidden_align).  Returns 0,
 * HV_LAYOUT_EINVAL or HV_LAYOUT_EOVERFLOW (out is then zeroed).
 */
int hv_layout_compute(const struct hv_layout_req *req, uint64_t base_pa, struct hv_layout *out);

/* Text for an HV_LAYOUT_* code. */
const char *hv_layout_strerror(int rc);

#endif /* TV_LAYOUT_H */
