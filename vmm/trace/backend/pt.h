/* SPDX-License-Identifier: MIT */
/*
 * trace_pt.h - the Intel Processor Trace backend's logic: what the CPU can
 * do, the IA32_RTIT_* values for a request, the ToPA output table, arming,
 * and moving the raw PT bytes out of the output regions into a per-CPU
 * byte stream with TV_REC_PT_SYNC records in the record ring.
 *
 * docs/BACKENDS-PT.md has the prose, the SDM sections relied on and what
 * only hardware can show.  Sections are those of SDM Vol. 3C ch. 33
 * "Intel Processor Trace" (older editions: ch. 35/36).
 *
 * Where the hypervisor sits (SDM 3C 33.5, 25.7.1, 25.8.1): the guest's
 * IA32_RTIT_CTL is the VMCS field GUEST_IA32_RTIT_CTL (0x2814), loaded on
 * every VM entry by the entry control "load IA32_RTIT_CTL" (bit 18) and
 * cleared on every VM exit by the exit control "clear IA32_RTIT_CTL"
 * (bit 25).  TraceEn is therefore only ever 1 in VMX non-root operation:
 * the hypervisor never traces itself and never sets TraceEn with WRMSR.
 * All other IA32_RTIT_* MSRs may only be written while TraceEn is 0
 * (#GP otherwise), which is always true in VMX root after the first exit.
 * Nothing here touches the VMCS: pt_arm returns the value the caller
 * writes to GUEST_IA32_RTIT_CTL.  MSRs go through vmm/hw/hw.h only.
 *
 * Output: always ToPA (CPUID.(14H,0):ECX[0]), one table in caller memory,
 * N output regions and an END entry pointing back to the table.  Every
 * drain copies what the hardware wrote since the previous drain and then
 * rewinds the output pointer to the first byte of the first region, so
 * the whole buffer is free again at each VM entry.  Two policies decide
 * what happens when one stretch of guest execution writes more than the
 * buffer holds:
 *   PT_MODE_STOP  STOP on the last region: the oldest bytes are kept, the
 *                 hardware stops (IA32_RTIT_STATUS.Stopped) and whatever
 *                 it generated after that is lost; the size of that gap
 *                 cannot be known.
 *   PT_MODE_WRAP  the buffer is circular, the newest bytes are kept; the
 *                 bytes written over are counted (exactly when the hardware
 *                 went round once; a lower bound otherwise).  Needs
 *                 multiple-entry ToPA (see pt_topa_build).
 *
 * Loss accounting (pt_lost of TV_REC_PT_SYNC, never silent): a PT_SYNC
 * record is written where the stream has a gap, with pt_offset the stream
 * position of the gap and pt_lost already including it.  Bytes written
 * over by a wrap and bytes the sink refused are counted exactly; a gap
 * whose size the hardware does not tell (ToPA STOP, operational error,
 * an impossible output pointer) counts as 1 byte, so pt_lost grows at
 * every gap.  The kind of gap is in pt_stats and in a TV_REC_LOG record.
 *
 * Errors (negative, text from pt_strerror):
 *   PT_ERR_INVAL        NULL argument, value out of range, or a state used
 *                       before pt_topa_build / pt_arm
 *   PT_ERR_UNSUPPORTED  the CPU cannot do what was asked (why says what)
 *   PT_ERR_ALIGN        a ToPA table not 4 KiB aligned, a region size not
 *                       a power of two in 4 KiB..128 MiB, or a region not
 *                       naturally aligned to its size
 *   PT_ERR_PHYS         a physical address at or above 2^MAXPHYADDR
 *   PT_ERR_BUSY         IA32_RTIT_CTL.TraceEn is 1 when pt_arm runs: the
 *                       output and filter MSRs cannot be written
 *   PT_ERR_HW           IA32_RTIT_OUTPUT_MASK_PTRS holds an output pointer
 *                       outside the table (the drain reset it; counted)
 */
#ifndef TV_TRACE_PT_H
#define TV_TRACE_PT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/lib/byte_ring.h"
#include "vmm/trace/trace.h"

#define PT_ERR_INVAL        (-1)
#define PT_ERR_UNSUPPORTED  (-2)
#define PT_ERR_ALIGN        (-3)
#define PT_ERR_PHYS         (-4)
#define PT_ERR_BUSY         (-5)
#define PT_ERR_HW           (-6)

/* Text for a PT_ERR_* code (or 0); "unknown error" otherwise. */
const char *pt_strerror(int err);

/* --- MSRs (SDM 4 Table 2-2; 3C 33.2.8) ------------------------------------ */
#define PT_MSR_OUTPUT_BASE        0x560u   /* IA32_RTIT_OUTPUT_BASE */
#define PT_MSR_OUTPUT_MASK_PTRS   0x561u   /* IA32_RTIT_OUTPUT_MASK_PTRS */
#define PT_MSR_CTL                0x570u   /* IA32_RTIT_CTL */
#define PT_MSR_STATUS             0x571u   /* IA32_RTIT_STATUS */
#define PT_MSR_CR3_MATCH          0x572u   /* IA32_RTIT_CR3_MATCH */
#define PT_MSR_ADDR_A(n)          (0x580u + 2u * (n))  /* IA32_RTIT_ADDRn_A */
#define PT_MSR_ADDR_B(n)          (0x581u + 2u * (n))  /* IA32_RTIT_ADDRn_B */
#define PT_MSR_PERF_GLOBAL_STATUS 0x38eu   /* IA32_PERF_GLOBAL_STATUS */
#define PT_MSR_PERF_GLOBAL_OVF_CTRL 0x390u /* _OVF_CTRL; perfmon v4: _STATUS_RESET */

/* IA32_RTIT_CTL (SDM 3C 33.2.8.2). */
#define PT_CTL_TRACEEN          (1ull << 0)
#define PT_CTL_CYCEN            (1ull << 1)
#define PT_CTL_OS               (1ull << 2)
#define PT_CTL_USER             (1ull << 3)
#define PT_CTL_PWREVTEN         (1ull << 4)
#define PT_CTL_FUPONPTW         (1ull << 5)
#define PT_CTL_FABRICEN         (1ull << 6)
#define PT_CTL_CR3FILTER        (1ull << 7)
#define PT_CTL_TOPA             (1ull << 8)
#define PT_CTL_MTCEN            (1ull << 9)
#define PT_CTL_TSCEN            (1ull << 10)
#define PT_CTL_DISRETC          (1ull << 11)
#define PT_CTL_PTWEN            (1ull << 12)
#define PT_CTL_BRANCHEN         (1ull << 13)
#define PT_CTL_MTCFREQ_SHIFT    14            /* 17:14 */
#define PT_CTL_CYCTHRESH_SHIFT  19            /* 22:19 */
#define PT_CTL_PSBFREQ_SHIFT    24            /* 27:24 */
#define PT_CTL_ADDR_CFG_SHIFT(n) (32u + 4u * (n))  /* ADDRn_CFG, 4 bits each */
#define PT_CTL_FIELD_MASK       0xfull
#define PT_ADDR_CFG_UNUSED      0u
#define PT_ADDR_CFG_FILTER      1u            /* FilterEn range */
#define PT_ADDR_CFG_STOP        2u            /* TraceStop range (never used here) */

/* IA32_RTIT_STATUS (SDM 3C 33.2.8.4). */
#define PT_STATUS_FILTEREN      (1ull << 0)
#define PT_STATUS_CONTEXTEN     (1ull << 1)
#define PT_STATUS_TRIGGEREN     (1ull << 2)
#define PT_STATUS_ERROR         (1ull << 4)
#define PT_STATUS_STOPPED       (1ull << 5)
#define PT_STATUS_PENDPSB       (1ull << 6)
#define PT_STATUS_PENDTOPAPMI   (1ull << 7)
#define PT_STATUS_BYTECNT_SHIFT 32            /* PacketByteCnt 48:32 */

/* IA32_RTIT_OUTPUT_MASK_PTRS with ToPA (SDM 3C 33.2.7.2, 33.2.8.8). */
#define PT_MASK_PTRS_LOWER      0x7full       /* 6:0 read as ones */
#define PT_MASK_PTRS_IDX_SHIFT  7             /* 31:7 current ToPA entry index */
#define PT_MASK_PTRS_IDX_MASK   0x1ffffffull  /* 25 bits */
#define PT_MASK_PTRS_OFF_SHIFT  32            /* 63:32 offset in the current region */

/* IA32_PERF_GLOBAL_STATUS / _OVF_CTRL bit 55 (SDM 3B 20.2.4, 3C 33.2.7.2). */
#define PT_GLOBAL_STATUS_TOPA_PMI (1ull << 55)

/* ToPA table entry (SDM 3C 33.2.7.2). */
#define PT_TOPA_END             (1ull << 0)
#define PT_TOPA_INT             (1ull << 2)
#define PT_TOPA_STOP            (1ull << 4)
#define PT_TOPA_SIZE_SHIFT      6             /* 9:6: 4 KiB << code */
#define PT_TOPA_SIZE_MASK       (0xfull << PT_TOPA_SIZE_SHIFT)
#define PT_TOPA_BASE_SHIFT      12            /* MAXPHYADDR-1:12 */
#define PT_TOPA_MIN_SIZE        0x1000ull     /* code 0 */
#define PT_TOPA_MAX_SIZE        0x8000000ull  /* code 15: 128 MiB */

/* pt_topa_entry - one entry: base (4 KiB aligned), size code 0..15, flags PT_TOPA_END/INT/STOP. */
static inline uint64_t pt_topa_entry(uint64_t base, uint32_t size_code, uint64_t flags)
{
	return (base & ~0xfffull) | ((uint64_t)(size_code & 0xfu) << PT_TOPA_SIZE_SHIFT) |
	       (flags & (PT_TOPA_END | PT_TOPA_INT | PT_TOPA_STOP));
}

/* pt_topa_size_code - the Size code (0..15) of a region of size bytes, or -1. */
int pt_topa_size_code(uint64_t size);

/* VMX (SDM 3C 25.7.1, 25.8.1, Appendix A.6 / B.2.3). */
#define PT_VMX_MISC_PT              (1ull << 14)   /* IA32_VMX_MISC: PT usable in VMX operation */
#define PT_VMX_ENTRY_LOAD_RTIT_CTL  (1u << 18)
#define PT_VMX_EXIT_CLEAR_RTIT_CTL  (1u << 25)
#define PT_VMCS_GUEST_IA32_RTIT_CTL 0x00002814u

/* --- capabilities ------------------------------------------------------------ */

#define PT_MAX_RANGES 4   /* IA32_RTIT_CTL has ADDR0..ADDR3_CFG */

/*
 * The raw values pt_caps_decode needs; pt_caps_read fills it on the
 * calling CPU.  Leaves beyond the CPU's maximum and MSRs that do not
 * exist are 0.
 */
struct pt_caps_raw {
	uint32_t leaf0_eax, vendor_ebx, vendor_ecx, vendor_edx; /* CPUID.0 */
	uint32_t leaf1_ecx;            /* CPUID.1:ECX (bit 5 VMX) */
	uint32_t leaf7_ebx;            /* CPUID.(7,0):EBX (bit 25 Intel PT) */
	uint32_t leaf14[2][4];         /* CPUID.(14H,0) and (14H,1): EAX, EBX, ECX, EDX */
	uint32_t ext_max;              /* CPUID.80000000H:EAX */
	uint32_t leaf80000008_eax;     /* physical (7:0) and linear (15:8) address bits */
	uint64_t vmx_basic, vmx_misc;
	/* The controls' capability MSRs: IA32_VMX_TRUE_ENTRY/EXIT_CTLS (0x490,
	 * 0x48F) when IA32_VMX_BASIC[55], else IA32_VMX_ENTRY/EXIT_CTLS (0x484,
	 * 0x483); a control may be 1 when its bit is set in bits 63:32. */
	uint64_t vmx_entry_ctls, vmx_exit_ctls;
};

struct pt_caps {
	bool intel;
	bool pt;                   /* CPUID.(7,0):EBX[25] and leaf 14H within range */
	uint32_t max_subleaf;      /* CPUID.(14H,0):EAX */
	/* CPUID.(14H,0):EBX */
	bool cr3_filter;           /* [0] CR3Filter, IA32_RTIT_CR3_MATCH */
	bool psb_cyc;              /* [1] configurable PSB frequency, cycle-accurate mode */
	bool ip_filter;            /* [2] IP filtering, TraceStop, MSRs kept over warm reset */
	bool mtc;                  /* [3] MTC packets, BranchEn = 0 allowed */
	bool ptwrite;              /* [4] PTWEn, FUPonPTW */
	bool power_event;          /* [5] PwrEvtEn */
	/* CPUID.(14H,0):ECX */
	bool topa;                 /* [0] ToPA output */
	bool topa_multi;           /* [1] more than one output entry per table */
	bool single_range;         /* [2] single-range output */
	bool transport;            /* [3] output to the trace transport (FabricEn) */
	bool lip;                  /* [31] IP payloads are linear (CS base included) */
	/* CPUID.(14H,1), when max_subleaf >= 1 */
	uint32_t addr_ranges;      /* EAX[2:0] */
	uint16_t mtc_periods;      /* EAX[31:16]: bit n = MTCFreq n allowed */
	uint16_t cyc_thresholds;   /* EBX[15:0]: bit n = CycThresh n allowed */
	uint16_t psb_freqs;        /* EBX[31:16]: bit n = PSBFreq n allowed */
	uint32_t maxphyaddr;       /* CPUID.80000008H:EAX[7:0]; 36 without the leaf */
	uint32_t linear_bits;      /* CPUID.80000008H:EAX[15:8]; 48 without the leaf */
	/* VMX */
	bool vmx;                  /* CPUID.1:ECX[5] */
	bool vmx_pt;               /* IA32_VMX_MISC[14] */
	bool entry_load_rtit;      /* VM-entry control 18 may be 1 */
	bool exit_clear_rtit;      /* VM-exit control 25 may be 1 */
	bool usable;               /* all tracevisor needs: pt, topa, the three VMX bits */
	const char *reason;        /* the first thing missing; NULL when usable */
};

/* pt_caps_decode - pure: *out from *raw. */
void pt_caps_decode(const struct pt_caps_raw *raw, struct pt_caps *out);

/*
 * pt_caps_read - gather *raw on the calling CPU (raw may be NULL) and
 * decode it.  CPUID leaves are read only up to the reported maxima; the
 * VMX MSRs only when CPUID.1:ECX[5] says VMX exists, and the TRUE control
 * MSRs only when IA32_VMX_BASIC[55] is set (SDM 3D A.2: the TRUE MSRs
 * report the same allowed-1 settings; they are the ones to consult when
 * they exist).
 */
void pt_caps_read(struct pt_caps *out, struct pt_caps_raw *raw);

/* --- what to trace ------------------------------------------------------------ */

struct pt_options {
	bool branch_en;            /* BranchEn: COFI packets (TNT, TIP, FUP, ...) */
	bool tsc_en;               /* TSCEn */
	bool dis_retc;             /* DisRETC: no RET compression */
	bool mtc_en;               /* MTCEn, period mtc_freq (ART bit, 0..15) */
	uint32_t mtc_freq;
	bool cyc_en;               /* CYCEn, threshold cyc_thresh (0..15) */
	uint32_t cyc_thresh;
	uint32_t psb_freq;         /* PSBFreq: 2 KiB << psb_freq output bytes (0..15) */
	bool ptw_en, fup_on_ptw;   /* PTWEn, FUPonPTW */
	bool pwr_evt_en;           /* PwrEvtEn */
	struct trace_filter filter; /* CPL, CR3 and IP ranges (vmm/trace/trace.h) */
};

/* pt_options_default - branches and TSC, everything else off, filter all. */
void pt_options_default(struct pt_options *o);

/* The MSR values of one configuration. */
struct pt_rtit {
	uint64_t ctl;              /* IA32_RTIT_CTL, ToPA set, TraceEn clear */
	uint64_t cr3_match;        /* IA32_RTIT_CR3_MATCH (with PT_CTL_CR3FILTER) */
	uint32_t nranges;          /* ADDR0..ADDR(nranges-1) used as FilterEn ranges */
	uint64_t addr_a[PT_MAX_RANGES], addr_b[PT_MAX_RANGES];
};

/*
 * pt_rtit_ctl - the IA32_RTIT_CTL value and filter MSRs for o, every bit
 * checked against caps.  Mapping:
 *   filter.cpl: TRACE_CPL_KERNEL -> OS; TRACE_CPL_USER -> User (which
 *     covers CPL 1-3: PT cannot tell ring 3 from rings 1-2); CPL 1 or 2
 *     asked for without CPL 3, or no CPL at all, is refused;
 *   filter.cr3 != 0 -> CR3Filter, CR3_MATCH = cr3 (bits 4:0 must be 0:
 *     the register has no such bits, SDM 33.2.8.6);
 *   filter.ranges -> ADDRn_CFG = 1 (FilterEn) with ADDRn_A = lo,
 *     ADDRn_B = hi (inclusive); each canonical for caps->linear_bits,
 *     lo <= hi, at most caps->addr_ranges of them.  PT traces while the IP
 *     is inside a range, which is not trace_filter_ip's "from or to".
 * Anything the CPU cannot do is refused, never dropped: returns
 * PT_ERR_UNSUPPORTED (or PT_ERR_INVAL for a value no CPU accepts) with
 * why naming the request and the CPUID bit; *out is then all zero.
 * caps must say topa (the only output used).  why may be NULL; it is
 * always NUL-terminated when whylen > 0 ("" on success).
 */
int pt_rtit_ctl(const struct pt_caps *caps, const struct pt_options *o,
		struct pt_rtit *out, char *why, size_t whylen);

/* --- output --------------------------------------------------------------------- */

#define PT_TOPA_MAX_REGIONS 64
#define PT_TOPA_NO_INT      UINT32_MAX

/* One output region: physical address (ToPA), host pointer (drain), size. */
struct pt_region {
	uint64_t pa;
	uint8_t *va;
	uint64_t size;
};

enum pt_topa_mode {
	PT_MODE_STOP = 0,          /* keep the oldest: STOP on the last region */
	PT_MODE_WRAP = 1,          /* keep the newest: circular, overwrites counted */
};

struct pt_stats {
	uint64_t drains;           /* pt_drain calls that found the state armed */
	uint64_t bytes;            /* delivered to the sink */
	uint64_t wraps;            /* drains that found the buffer written over */
	uint64_t wrapped_bytes;    /* bytes counted lost to wraps */
	uint64_t stops;            /* ToPA STOP reached (IA32_RTIT_STATUS.Stopped) */
	uint64_t errors;           /* operational errors (IA32_RTIT_STATUS.Error) */
	uint64_t bad_pointers;     /* impossible IA32_RTIT_OUTPUT_MASK_PTRS values */
	uint64_t sink_dropped;     /* bytes the sink refused */
	uint64_t syncs;            /* TV_REC_PT_SYNC records written */
	uint64_t syncs_dropped;    /* ... refused by the ring (STOP policy, full) */
	uint64_t pmis, pmis_ours;  /* pt_on_pmi calls, and those that were ours */
};

/* One CPU's PT backend state (zero it, then pt_topa_build, then pt_arm). */
struct pt_state {
	/* pt_topa_build */
	bool built;
	enum pt_topa_mode mode;
	uint32_t nregions;
	uint32_t int_entry;        /* INT on this entry too (PT_TOPA_NO_INT: none) */
	uint64_t table_pa;
	uint64_t *table;
	uint64_t total;            /* bytes in all regions */
	struct pt_region regions[PT_TOPA_MAX_REGIONS];
	/* pt_arm */
	bool armed;
	struct pt_rtit rtit;
	/* pt_drain */
	uint64_t hw_bytes;         /* output bytes accounted up to the last rewind */
	uint64_t stream_bytes;     /* bytes delivered to the sink: the PT stream offset */
	uint64_t lost;             /* pt_lost: see the loss accounting above */
	bool pmi_taken;            /* a drain consumed the ToPA PMI status bit before
				    * its interrupt arrived: that PMI is ours */
	struct pt_stats stats;
};

/*
 * pt_topa_build - write the ToPA table for regions[0..n) into table
 * (table_entries entries of caller memory at physical table_pa) and set
 * up s (its drain state zeroed).  Entries 0..n-1 are the regions in
 * order, entry n is END with the table's own address (SDM 33.2.7.2:
 * the table is circular).  STOP mode sets STOP on entry n-1; WRAP mode
 * sets INT on entry n-1 so that every full round raises the ToPA PMI
 * status the drain needs to see a wrap.  int_entry (< n, or
 * PT_TOPA_NO_INT) gets INT as well: choose one before the last so the
 * PMI comes while there is still room (the PMI is not precise).
 * Checks (SDM 33.2.7.2 "ToPA Errors"): caps->topa; 1 <= n <=
 * PT_TOPA_MAX_REGIONS and n + 1 <= table_entries; n == 1 when
 * !caps->topa_multi; WRAP needs caps->topa_multi (a single-entry ToPA
 * may raise its PMI before the region is full, so a wrap could not be
 * told from an early PMI); table 8-byte aligned, table_pa 4 KiB aligned;
 * sizes a power of two 4 KiB..128 MiB, each pa aligned to its size; every
 * byte below 2^caps->maxphyaddr; va non-NULL.
 * Errors: PT_ERR_INVAL, PT_ERR_UNSUPPORTED, PT_ERR_ALIGN, PT_ERR_PHYS;
 * nothing is written on error.
 */
int pt_topa_build(struct pt_state *s, const struct pt_caps *caps,
		  uint64_t *table, size_t table_entries, uint64_t table_pa,
		  const struct pt_region *regions, uint32_t n,
		  enum pt_topa_mode mode, uint32_t int_entry);

/*
 * pt_arm - program this CPU for rtit (from pt_rtit_ctl) with the table
 * of s: IA32_RTIT_OUTPUT_BASE = table, IA32_RTIT_OUTPUT_MASK_PTRS = entry
 * 0 offset 0, IA32_RTIT_STATUS = 0 (PacketByteCnt 0: the first enable
 * emits a full PSB+, SDM 33.2.8.3), CR3_MATCH when CR3Filter, ADDRn_A/B
 * for the ranges, and the ToPA PMI status bit cleared.  IA32_RTIT_CTL
 * is read, never written.  *guest_rtit_ctl receives rtit->ctl | TraceEn
 * for the caller to VMWRITE to GUEST_IA32_RTIT_CTL (with the entry and
 * exit controls set).  Call in VMX root or before launch.
 * Errors: PT_ERR_INVAL (NULL, s not built, rtit->ctl with TraceEn or
 * without ToPA), PT_ERR_BUSY (TraceEn is 1: nothing written).
 */
int pt_arm(struct pt_state *s, const struct pt_rtit *rtit, uint64_t *guest_rtit_ctl);

/*
 * pt_output_linear - pure: the byte offset in the buffer (the regions in
 * table order) that a IA32_RTIT_OUTPUT_MASK_PTRS value points at, in
 * [0, total].  Entry index = bits 31:7, offset in that region = bits
 * 63:32; offset == region size is allowed (ToPA STOP leaves it so,
 * SDM 33.2.7.2), and the END entry's index with offset 0 reads as total.
 * Errors: PT_ERR_INVAL (NULL, s not built), PT_ERR_HW (index beyond the
 * END entry, or offset beyond the region).
 */
int pt_output_linear(const struct pt_state *s, uint64_t mask_ptrs, uint64_t *lin);

/*
 * pt_output_pos - RDMSR IA32_RTIT_OUTPUT_MASK_PTRS and return in *pos the
 * running count of bytes the hardware wrote since pt_arm (as accounted
 * by the drains, plus the current offset).  Only meaningful with
 * TraceEn 0 (SDM 33.2.8.8).  Errors: as pt_output_linear.
 */
int pt_output_pos(const struct pt_state *s, uint64_t *pos);

/*
 * The byte stream sink: write takes len bytes and returns how many it
 * accepted (<= len); fewer means it is full and the rest is counted lost.
 * The engine's sink is a struct byte_ring (vmm/lib/byte_ring.h) with
 * byte_ring_write.
 */
typedef size_t (*pt_sink_fn)(void *ctx, const uint8_t *data, size_t len);
struct pt_sink {
	pt_sink_fn write;
	void *ctx;
};

/*
 * pt_drain - with TraceEn 0 (VMX root), move the bytes written since the
 * last drain, oldest first, to sink, then rewind the output pointer to
 * the first region.  Reads IA32_RTIT_STATUS, _OUTPUT_MASK_PTRS and
 * IA32_PERF_GLOBAL_STATUS.  Cases:
 *  - nothing new: no MSR written, no record;
 *  - normal: [0, pos) copied; one PT_SYNC (offset after, lost);
 *  - WRAP and the ToPA PMI status bit set although no INT region ended
 *    between 0 and pos: the hardware went round; the whole buffer is
 *    copied from pos on, pos bytes counted lost (exact for one round),
 *    a PT_SYNC at the gap (before the bytes) and one after;
 *  - Stopped (STOP mode): the whole buffer is copied, a 1-byte gap after
 *    it, STATUS cleared, a LOG record;
 *  - Error: [0, pos) copied when pos is valid, a 1-byte gap, STATUS
 *    cleared, a LOG record;
 *  - an impossible pointer: nothing copied, a 1-byte gap, PT_ERR_HW.
 * A sink that refuses bytes makes a gap of that many bytes after what it
 * took.  A ToPA PMI status bit seen here is cleared through
 * IA32_PERF_GLOBAL_OVF_CTRL and remembered for pt_on_pmi.  sink and ring
 * are required; records refused by a full ring are counted.
 * Returns 0 (s->stats.bytes counts what was delivered), PT_ERR_INVAL
 * (NULL, not armed: nothing read), PT_ERR_BUSY (IA32_RTIT_CTL.TraceEn is
 * 1, e.g. the exit control is missing: nothing else read or written) or
 * PT_ERR_HW (pointer reset, gap counted).
 */
int pt_drain(struct pt_state *s, const struct pt_sink *sink,
	     struct tv_trace_ring *ring, uint64_t tsc);

/* pt_on_pmi results. */
#define PT_PMI_NOT_OURS 0
#define PT_PMI_OURS     1

/*
 * pt_on_pmi - a PMI reached the hypervisor (NMI or interrupt exit).  It is
 * ours when IA32_PERF_GLOBAL_STATUS[55] (Trace_ToPA_PMI) is set, or when
 * an earlier pt_drain already consumed that bit; then the buffer is
 * drained (pt_drain) and the bit cleared with IA32_PERF_GLOBAL_OVF_CTRL
 * (IA32_PERF_GLOBAL_STATUS_RESET on perfmon v4; SDM 3C 33.2.7.2 "ToPA
 * PMI").  *other_status (may be NULL) receives the other
 * IA32_PERF_GLOBAL_STATUS bits, never touched here: when non-zero the
 * PMI (also) belongs to the guest's counters and the caller reflects it.
 * The caller also unmasks the APIC's LVT performance-monitor entry.
 * Returns PT_PMI_OURS, PT_PMI_NOT_OURS (also when s is not armed:
 * nothing is cleared), PT_ERR_INVAL (NULL), or a pt_drain error: the
 * PMI was ours but PT_ERR_HW (impossible pointer, counted and reset) or
 * PT_ERR_BUSY (TraceEn 1, nothing drained; the status bit stays set).
 */
int pt_on_pmi(struct pt_state *s, const struct pt_sink *sink,
	      struct tv_trace_ring *ring, uint64_t tsc, uint64_t *other_status);

/* --- the per-CPU area --------------------------------------------------------- */

/*
 * One CPU's PT memory, laid out from two sizes (struct trace_setup's
 * pt_topa_bytes and pt_ring_bytes, docs/CONFIG.md pt_topa_kb and
 * pt_buffer_kb), offsets from the area's start:
 *   [0, topa_bytes)           the ToPA output: regions of region_bytes
 *   [table_off, +4 KiB)       the ToPA table
 *   [ring_off, +ring_bytes)   the byte ring the drains fill
 * then padding to a multiple of region_bytes, so that CPU after CPU the
 * areas stay aligned to region_bytes (a region is aligned to its own
 * size, SDM 3C 33.2.7.2): the boot code aligns the first one.
 * Regions: 4 of topa/4 while that is at most PT_AREA_REGION_MAX (so the
 * defaults, 256 KiB and 1 MiB, give today's 4 x 64 KiB and 1344 KiB),
 * else as many PT_AREA_REGION_MAX regions as make topa (at most
 * PT_TOPA_MAX_REGIONS): the padding, under one region per CPU, stays
 * small.  A CPU without multiple-entry ToPA uses region 0 only.
 * int_entry: the region that raises the ToPA PMI with pmi = on, the one
 * that ends at 3/4 of the output (the third of 4): the last quarter is
 * room for the packets written until the PMI arrives (SDM 3C "ToPA PMI":
 * it is not precise).
 */
#define PT_AREA_TOPA_MIN   (4ull * PT_TOPA_MIN_SIZE)      /* 4 regions of 4 KiB */
#define PT_AREA_REGION_MAX (4ull * 1024 * 1024)
#define PT_AREA_TOPA_MAX   (PT_TOPA_MAX_REGIONS * PT_AREA_REGION_MAX)  /* 256 MiB */
#define PT_AREA_RING_MAX   (1ull << 42)                   /* 4 TiB: far beyond any RAM */

struct pt_area_layout {
	uint64_t topa_bytes;      /* regions * region_bytes */
	uint64_t region_bytes;    /* a power of two, PT_TOPA_MIN_SIZE..PT_AREA_REGION_MAX */
	uint32_t regions;         /* 1..PT_TOPA_MAX_REGIONS (with multiple-entry ToPA) */
	uint32_t int_entry;       /* the PMI's region (pmi = on) */
	uint64_t table_off;       /* = topa_bytes */
	uint64_t ring_off;        /* = topa_bytes + 4 KiB */
	uint64_t ring_bytes;
	uint64_t area_bytes;      /* a multiple of region_bytes */
};

/*
 * pt_area_layout - lay out an area for topa_bytes of output and a ring
 * of ring_bytes.  Both must be powers of two, topa_bytes in
 * PT_AREA_TOPA_MIN..PT_AREA_TOPA_MAX, ring_bytes in
 * topa_bytes..PT_AREA_RING_MAX (a drain of the whole output must fit an
 * empty ring).  Returns 0, or PT_ERR_INVAL (l zeroed).
 */
int pt_area_layout(uint64_t topa_bytes, uint64_t ring_bytes, struct pt_area_layout *l);

/*
 * The unit (trace_backend_PT, vmm/trace/backend.h; docs/BACKENDS-PT.md):
 * each CPU has an area (struct pt_area_layout) of reserved memory the guest never
 * sees (the backend's hidden_bytes: trace_cpu_pt_area; PT writes
 * host-physical addresses, not through EPT): the ToPA output regions, the
 * table, and a byte ring the drains fill.  The table is built once (STOP
 * on the last region; with pmi the ToPA PMI on the one before); each
 * window arms the RTIT MSRs in VMX root (pt_arm: PacketByteCnt 0, so it
 * opens with a PSB+) and puts ctl|TraceEn in GUEST_IA32_RTIT_CTL, which
 * "load IA32_RTIT_CTL" puts in force at every VM entry and "clear
 * IA32_RTIT_CTL" takes away at every exit: the hypervisor never traces
 * itself.  Every exit of the window drains the regions into the byte ring
 * (pt_drain; TV_REC_PT_SYNC records tie the stream to the record ring);
 * the exporter takes the bytes with trace_pt_take.  stop_after does not
 * apply: windows end by hypercall, request or a full byte ring.
 */
struct pt_unit {
	bool probed;              /* pt_caps_read ran on this CPU */
	bool busy_logged;         /* one log line for TraceEn found set in VMX root */
	struct pt_caps caps;
	struct pt_state pt;       /* ToPA table (built once) and drain state */
	struct byte_ring ring;    /* the drained PT stream, until exported */
	uint64_t guest_ctl;       /* GUEST_IA32_RTIT_CTL of an open window */
	uint64_t vmcs_ctl;        /* what the field holds (0 at launch) */
	uint64_t drain_errors;    /* pt_drain calls that failed (logged) */
	struct pt_area_layout lay; /* the area (pt_unit_layout of the setup) */
};
struct trace_bcpu;
struct pt_unit *pt_unit(struct trace_bcpu *b);

/*
 * pt_unit_layout - the area for setup s: pt_area_layout of its
 * pt_topa_bytes and pt_ring_bytes (0: TRACE_PT_TOPA_BYTES_DEFAULT,
 * TRACE_PT_RING_BYTES_DEFAULT).  0 or PT_ERR_INVAL.
 */
int pt_unit_layout(const struct trace_setup *s, struct pt_area_layout *l);

#endif /* TV_TRACE_PT_H */
