/* SPDX-License-Identifier: MIT */
/*
 * trace.h - the tracing engine shared by every backend: what to trace
 * (filters, triggers) and one CPU's tracing state.
 *
 * Each backend (MTF, BTF+LBR, LBR, BTS, Intel PT) lives in its own
 * vmm/trace_<name>.[ch], keeps its hardware logic pure (privileged
 * operations only through vmm/hw/hw.h) and writes what it sees into the CPU's
 * record ring (vmm/trace/ring.h) with the filters below applied.  Raw PT
 * bytes are the exception: they go to a per-CPU byte stream of their own,
 * with TV_REC_PT_SYNC records in the ring tying the two together.
 */
#ifndef TV_TRACE_H
#define TV_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/trace/format.h"
#include "vmm/trace/ring.h"

/* CPL filter bits (trace_filter.cpl). */
#define TRACE_CPL_KERNEL  (1u << 0)   /* CPL 0 */
#define TRACE_CPL_USER    (1u << 3)   /* CPL 3 */
#define TRACE_CPL_ALL     (TRACE_CPL_KERNEL | TRACE_CPL_USER)

#define TRACE_MAX_RANGES  4

struct trace_range {
	uint64_t lo, hi;          /* inclusive, guest linear addresses */
};

/*
 * What a backend records.  A branch passes when the CPL it ran at is in
 * cpl, the guest CR3 matches cr3 (0: any), and, with nranges > 0, its
 * `from` or `to` lies in one of the ranges.  Backends that filter in
 * hardware (PT, BTS for CPL, LBR_SELECT) program the same rules there and
 * still apply what the hardware cannot.
 */
struct trace_filter {
	uint32_t cpl;             /* TRACE_CPL_* */
	uint32_t nranges;
	uint64_t cr3;             /* 0 = any address space */
	struct trace_range ranges[TRACE_MAX_RANGES];
};

/*
 * Intel PT packet options beyond branches (config key pt_options,
 * docs/CONFIG.md; vmm/trace/backend/pt.h struct pt_options): each is checked
 * against the CPU's leaf 14H when a window opens, never dropped.
 */
struct trace_pt_opts {
	uint8_t tsc;              /* TSCEn (default on) */
	uint8_t dis_retc;         /* DisRETC: no RET compression */
	uint8_t mtc, mtc_freq;    /* MTCEn, MTCFreq 0..15 */
	uint8_t cyc, cyc_thresh;  /* CYCEn, CycThresh 0..15 */
	uint8_t psb_freq;         /* PSBFreq 0..15 (0: the reset value) */
	uint8_t reserved;
};

/* trace_pt_opts_default - TSC packets on, everything else off. */
static inline void trace_pt_opts_default(struct trace_pt_opts *o)
{
	*o = (struct trace_pt_opts){ .tsc = 1 };
}

/* trace_filter_all - a filter that passes everything. */
static inline void trace_filter_all(struct trace_filter *f)
{
	f->cpl = TRACE_CPL_ALL;
	f->nranges = 0;
	f->cr3 = 0;
}

/* trace_filter_ip - true when from/to pass the IP ranges (or there are none). */
static inline bool trace_filter_ip(const struct trace_filter *f, uint64_t from, uint64_t to)
{
	if (!f->nranges)
		return true;
	for (uint32_t i = 0; i < f->nranges && i < TRACE_MAX_RANGES; i++) {
		const struct trace_range *r = &f->ranges[i];

		if ((from >= r->lo && from <= r->hi) || (to >= r->lo && to <= r->hi))
			return true;
	}
	return false;
}

/* trace_filter_cpl - true when a branch at CPL cpl (0..3) passes. */
static inline bool trace_filter_cpl(const struct trace_filter *f, unsigned cpl)
{
	return (f->cpl & (1u << (cpl & 3))) != 0;
}

/*
 * The engine's error codes (trace_start, trace_stop, trace_request, the
 * backends' open): never the guest ABI's; vmm/trace/hcall.c maps them to
 * TV_HC_* for the hypercalls.
 */
#define TRACE_EOK     0
#define TRACE_ENOSYS  (-1)   /* cannot: no ring, no usable unit, a setting it refuses */
#define TRACE_EBUSY   (-2)   /* not now: start while open, stop while closed, ... */
#define TRACE_EINVAL  (-3)   /* a bad argument */

/*
 * Memory-access tracing (docs/MEMTRACE.md, vmm/trace/memwatch.h): the
 * config's watches (mem_watch, guest-physical [lo, hi), mode
 * TV_MEMW_MODE_*) and mem_filter.
 */
#define TRACE_MEM_WATCH_CONFIG_MAX 16
struct trace_mem_watch {
	uint64_t lo, hi;
	uint8_t mode;
};
enum trace_mem_filter {
	TRACE_MEM_FILTER_NONE = 0,
	TRACE_MEM_FILTER_SHARING = 1,   /* mtrace's cache-line sharing rule (memshare.h) */
};

/* What to trace, from the configuration; the same for every CPU. */
struct trace_setup {
	uint8_t source;           /* enum tv_source; TV_SOURCE_NONE = no tracing */
	uint8_t overflow;         /* enum tv_overflow */
	uint8_t start;            /* TV_TRIG_BOOT, _HYPERCALL, _ADDRESS, _EXIT_BOOT_SERVICES or _KERNEL_ENTRY */
	uint8_t pmi;              /* lbr/bts/pt: also drain on the PMI (NMI exits) */
	uint32_t ring_kb;         /* per CPU */
	uint64_t stop_after;      /* branch records per window, 0 = no limit */
	uint64_t start_addr;      /* TV_TRIG_ADDRESS: guest-physical address */
	struct trace_filter filter;
	struct trace_pt_opts pt;  /* source = pt: packet options */
	uint32_t pmi_every;       /* bts: threshold, lbr: counter period (records); 0 = default */
	uint32_t wait_ms;         /* overflow = wait: the bound of one wait (0 = TRACE_WAIT_MS_DEFAULT) */
	uint8_t stall_tsc;        /* enum trace_stall_tsc (vmm/trace/stall.h) */
	uint8_t code_snapshots;   /* enum trace_snap_mode (vmm/trace/snap.h); 0 = auto */
	/*
	 * Per-CPU buffer sizes in bytes, from the config (docs/CONFIG.md:
	 * pt_buffer_kb, pt_topa_kb, bts_buffer_kb); 0 = the default below.
	 * The record ring is ring_kb.  trace_engine_needs turns them into
	 * memory to reserve; the backends lay their areas out from them.
	 */
	uint64_t pt_ring_bytes;   /* pt: the stream ring the drains fill (a power of two) */
	uint64_t pt_topa_bytes;   /* pt: the ToPA output regions together (a power of two) */
	uint64_t bts_buf_bytes;   /* bts: the BTS buffer (a power of two), after the DS page */
	/* memory-access tracing: the config's watches and filter (struct trace_mem_watch above) */
	uint8_t mem_filter;       /* enum trace_mem_filter */
	uint8_t nmem_watch;
	struct trace_mem_watch mem_watch[TRACE_MEM_WATCH_CONFIG_MAX];
};

/* code_snapshots (docs/SNAPSHOTS.md): auto is on with source = pt. */
enum trace_snap_mode {
	TRACE_SNAP_AUTO = 0,
	TRACE_SNAP_ON = 1,
	TRACE_SNAP_OFF = 2,
};

/* The sizes a 0 in struct trace_setup stands for (the config's defaults). */
#define TRACE_PT_RING_BYTES_DEFAULT (1024ull * 1024)
#define TRACE_PT_TOPA_BYTES_DEFAULT (256ull * 1024)
#define TRACE_BTS_BUF_BYTES_DEFAULT (64ull * 1024)
/* bts_buffer_kb's bound: the buffer is walked page by page at CR3 changes. */
#define TRACE_BTS_BUF_BYTES_MAX     (4ull * 1024 * 1024)

#endif /* TV_TRACE_H */
