/* SPDX-License-Identifier: MIT */
/*
 * trace_bts.h - the Branch Trace Store backend's logic: whether the CPU
 * has a usable BTS, the DS save area and BTS buffer in caller memory, the
 * IA32_DEBUGCTL bits for a request, and moving the records the hardware
 * stored into the CPU's record ring exactly once, with every loss counted.
 *
 * docs/BACKENDS-BTS.md has the prose, the SDM sections relied on and what
 * only hardware can show.  SDM sections are named by title as well as
 * number (Vol. 3B ch. 18 "Debug, Branch Profile, TSC, and Intel RDT
 * Features"; ch. 17 in editions before 2022): "IA32_DEBUGCTL MSR",
 * "Branch Trace Store (BTS)", "CPL-Qualified Branch Trace Mechanism",
 * "BTS and DS Save Area" with "64 Bit Format of the DS Save Area",
 * "Setting Up the BTS Buffer" and "Writing the DS Interrupt Service
 * Routine".
 *
 * Where the hypervisor sits: the guest's IA32_DEBUGCTL is the VMCS field
 * GUEST_IA32_DEBUGCTL (0x2802), loaded on entry with the "load debug
 * controls" entry control and saved on exit with "save debug controls";
 * a VM exit clears the MSR (SDM 3C 28.5.1), so BTS stores only while the
 * guest runs and never records the hypervisor.  bts_guest_debugctl gives
 * the value the caller writes to that field; nothing here touches the
 * VMCS, and IA32_DEBUGCTL is never written with WRMSR.  IA32_DS_AREA
 * (0x600) is not switched by VM entries or exits: the caller writes the
 * value bts_area_init returns with WRMSR once, in VMX root or before
 * launch (the guest's own DS_AREA is shadowed by vmm/trace/msr_policy.c and never
 * reaches the MSR).  MSRs otherwise go through vmm/hw/hw.h only.
 *
 * Addresses: IA32_DS_AREA and every pointer in the DS save area are LINEAR
 * addresses, and the hardware stores through the paging structures that
 * are current when the branch retires, i.e. the GUEST's page tables (then
 * EPT).  The caller therefore gives each region twice: the host pointer
 * this code reads and writes (va) and the guest-linear address where the
 * guest's current page tables map the same memory (lin).  While the guest
 * runs on the firmware's identity map, lin is the physical address and
 * equals (uintptr_t)va in tracevisor's own identity map.  Keeping the
 * regions mapped in every address space the guest runs BTS in is the
 * caller's job and the major open problem (docs/BACKENDS-BTS.md).
 *
 * Two buffer modes (IA32_DEBUGCTL.BTINT):
 *   BTS_MODE_CIRCULAR  BTINT = 0: the buffer is circular, the hardware
 *                      wraps the index from the absolute maximum to the
 *                      base and writes over the oldest records; no
 *                      interrupt ever.  Keeps the newest.
 *   BTS_MODE_INT       BTINT = 1: a DS interrupt (a PMI through the local
 *                      APIC's performance-counter LVT entry) when the index
 *                      reaches the interrupt threshold, `margin` records
 *                      before the end; at the absolute maximum the buffer
 *                      is full and later branches are lost.  Keeps the
 *                      oldest.
 *
 * Loss accounting (never silent).  The last record slot holds a sentinel
 * (non-canonical addresses the hardware can never store) from every
 * rewind on; a drain that finds it overwritten knows the hardware reached
 * the end of the buffer since the last drain:
 *   - BTS_MODE_INT, index at the absolute maximum: the buffer is full;
 *     whether branches came after it is unknown (stats.full, a TV_REC_LOG
 *     after the records: "may be lost");
 *   - BTS_MODE_CIRCULAR, index at the absolute maximum: the same position
 *     as the base (the next store wraps), as below;
 *   - index below it: the hardware went round (circular mode, or a CPU
 *     that wraps with BTINT = 1 too): the records from the index on are
 *     the oldest left, those before it the newest; at least index - base
 *     records were written over (exact when it went round once), counted
 *     in stats.lost_min and in a TV_REC_LOG before the records.
 * The record ring's own TV_REC_LOST counts records the ring refused
 * (STOP policy); the ring API has no way to append a TV_REC_LOST for
 * losses upstream of it, hence the LOG records.  Slots with from and to
 * both 0, or a non-canonical address, are counted in stats.bad and not
 * emitted.  DS fields that no longer hold what bts_area_init wrote (the
 * guest can reach that memory) are rewritten, the buffer is dropped and
 * the drain returns BTS_ERR_CORRUPT.
 *
 * Filters: CPL in hardware (BTS_OFF_OS / BTS_OFF_USR, which need DS-CPL);
 * IP ranges in software on from/to (trace_filter_ip); CR3 in software for
 * a whole drain: a BTS record does not say which address space it came
 * from, so the caller drains whenever the guest's CR3 changes (CR3-load
 * exits) and passes the CR3 the records were stored under.
 *
 * Errors (negative, text from bts_strerror):
 *   BTS_ERR_INVAL        NULL argument, value out of range, or a state not
 *                        set up by bts_area_init
 *   BTS_ERR_UNSUPPORTED  the CPU cannot do what was asked (why says what)
 *   BTS_ERR_ALIGN        a DS area not 64-byte aligned, or a BTS buffer
 *                        not 8-byte aligned (host or linear address)
 *   BTS_ERR_SIZE         a DS area under 64 bytes, a BTS buffer with
 *                        room for fewer than BTS_MIN_RECORDS records, a
 *                        region that runs past the top of the address
 *                        space, or (BTS_MODE_INT) a margin of 0 or one
 *                        that leaves no record below the threshold
 *   BTS_ERR_CORRUPT      bts_drain: the DS area or its index was not what
 *                        the hardware could have left (reset, counted)
 */
#ifndef TV_TRACE_BTS_H
#define TV_TRACE_BTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/lib/caps.h"
#include "vmm/trace/trace.h"

#define BTS_ERR_INVAL        (-1)
#define BTS_ERR_UNSUPPORTED  (-2)
#define BTS_ERR_ALIGN        (-3)
#define BTS_ERR_SIZE         (-4)
#define BTS_ERR_CORRUPT      (-5)

/* Text for a BTS_ERR_* code (or 0); "unknown error" otherwise. */
const char *bts_strerror(int err);

/* --- MSRs and bits (SDM Vol. 4 Table 2-2 names, BTS_ prefix) -------------- */
#define BTS_MSR_DEBUGCTL           0x1d9u   /* IA32_DEBUGCTL */
#define BTS_MSR_MISC_ENABLE        0x1a0u   /* IA32_MISC_ENABLE */
#define BTS_MSR_DS_AREA            0x600u   /* IA32_DS_AREA: linear address of the DS save area */
#define BTS_MSR_PERF_GLOBAL_STATUS 0x38eu   /* IA32_PERF_GLOBAL_STATUS (perfmon v2+) */
#define BTS_MSR_PERF_GLOBAL_OVF_CTRL 0x390u /* _OVF_CTRL; perfmon v4: _STATUS_RESET */

/* IA32_DEBUGCTL (SDM 3B "IA32_DEBUGCTL MSR"). */
#define BTS_DEBUGCTL_TR            (1ull << 6)   /* branch trace messages on */
#define BTS_DEBUGCTL_BTS           (1ull << 7)   /* ... stored in the BTS buffer */
#define BTS_DEBUGCTL_BTINT         (1ull << 8)   /* interrupt at the threshold; 0: circular */
#define BTS_DEBUGCTL_BTS_OFF_OS    (1ull << 9)   /* skip branches at CPL 0 (DS-CPL) */
#define BTS_DEBUGCTL_BTS_OFF_USR   (1ull << 10)  /* skip branches at CPL > 0 (DS-CPL) */
#define BTS_DEBUGCTL_MASK          (0x1full << 6)  /* the bits this backend owns */

#define BTS_MISC_ENABLE_BTS_UNAVAILABLE (1ull << 11)  /* RO: 1 = no BTS */
#define BTS_GLOBAL_STATUS_OVF_BUFFER    (1ull << 62)  /* OvfBuffer (DS buffer threshold) */

/* CPUID.1 (SDM 2A CPUID, Table 3-10 / 3-11). */
#define BTS_CPUID1_EDX_DS          (1u << 21)   /* debug store */
#define BTS_CPUID1_ECX_DTES64      (1u << 2)    /* 64-bit DS area layout */
#define BTS_CPUID1_ECX_DS_CPL      (1u << 4)    /* CPL-qualified debug store */

/* --- hardware structures ("64 Bit Format of the DS Save Area") ------------ */

/*
 * The DS buffer management area, 64-bit layout (used in every operating
 * mode when DTES64 = 1).  Every field is a linear address.  PEBS is never
 * armed by tracevisor (IA32_PEBS_ENABLE is shadowed, docs/TRACE-MSR-POLICY.md),
 * so its fields stay 0; the PEBS counter-reset values that follow at 40H
 * are outside this struct and never read by the hardware.
 */
struct bts_ds_area {
	uint64_t bts_buffer_base;          /* first byte of the BTS buffer */
	uint64_t bts_index;                /* next record the hardware writes */
	uint64_t bts_absolute_maximum;     /* first byte past the buffer */
	uint64_t bts_interrupt_threshold;  /* record whose store raises the DS interrupt */
	uint64_t pebs_buffer_base;
	uint64_t pebs_index;
	uint64_t pebs_absolute_maximum;
	uint64_t pebs_interrupt_threshold;
};
_Static_assert(sizeof(struct bts_ds_area) == 64, "DS area: 8 qwords up to the PEBS counter resets");
_Static_assert(offsetof(struct bts_ds_area, bts_index) == 0x08, "BTS index at 8H");
_Static_assert(offsetof(struct bts_ds_area, bts_absolute_maximum) == 0x10, "BTS maximum at 10H");
_Static_assert(offsetof(struct bts_ds_area, bts_interrupt_threshold) == 0x18, "BTS threshold at 18H");
_Static_assert(offsetof(struct bts_ds_area, pebs_buffer_base) == 0x20, "PEBS base at 20H");
_Static_assert(offsetof(struct bts_ds_area, pebs_interrupt_threshold) == 0x38, "PEBS threshold at 38H");

/* One branch record, 64-bit format ("64-bit Branch Trace Record Format"). */
struct bts_record {
	uint64_t from;                     /* linear address of the branch (or interrupted) instruction */
	uint64_t to;                       /* linear address of the target */
	uint64_t flags;                    /* bit 4: branch predicted; the rest reserved */
};
_Static_assert(sizeof(struct bts_record) == 24, "BTS record: 3 x 8 bytes");
#define BTS_RECORD_SIZE        24u
#define BTS_RECORD_PREDICTED   (1ull << 4)

/* The sentinel in the last slot: non-canonical for any linear width. */
#define BTS_SENTINEL_FROM      0x5a5a5a5a5a5a5a5aull
#define BTS_SENTINEL_TO        0xa5a5a5a5a5a5a5a5ull
#define BTS_SENTINEL_FLAGS     0x5e171e1000000000ull

/* --- capabilities ------------------------------------------------------------ */

struct bts_caps {
	bool supported;
	bool ds;                   /* CPUID.1:EDX[21] */
	bool dtes64;               /* CPUID.1:ECX[2] */
	bool ds_cpl;               /* CPUID.1:ECX[4]: BTS_OFF_OS / BTS_OFF_USR work */
	bool bts_unavailable;      /* IA32_MISC_ENABLE[11] */
	uint32_t linear_bits;      /* CPUID.80000008H:EAX[15:8]; 48 when unknown or not 32..57 */
	uint32_t pmu_version;      /* CPUID.0AH:EAX[7:0]: >= 2 has IA32_PERF_GLOBAL_STATUS */
	const char *reason;        /* why not supported; NULL when supported */
};

/*
 * bts_caps_decode - pure: what BTS a CPU offers, from its CPUID summary,
 * IA32_MISC_ENABLE (read only on Intel CPUs with DS), the linear-address
 * width (0: 48) and the perfmon version.  Not supported, with a reason,
 * for: a non-Intel vendor, no DS, no DTES64 (the 32-bit layout would
 * change with the guest's mode: AP start-up and the firmware run outside
 * IA-32e mode), MISC_ENABLE[11] set.  DS-CPL is reported, not required:
 * bts_area_init refuses a CPL filter without it.  (Whether DEBUGCTL holds
 * what is written, which emulators fail, is trace_caps.h's probe.)
 */
void bts_caps_decode(const struct cpu_caps *cpu, uint64_t misc_enable, uint32_t linear_bits,
		     uint32_t pmu_version, struct bts_caps *out);

/* bts_probe - bts_caps_decode on this CPU (CPUID and RDMSR through hw.h). */
void bts_probe(struct bts_caps *out);

/*
 * bts_vmx_controls - the VM-entry and VM-exit controls (vmm/vmx/vmx_defs.h
 * bits) BTS needs: "load debug controls" and "save debug controls", so
 * that GUEST_IA32_DEBUGCTL carries TR/BTS/BTINT/BTS_OFF_* into the guest
 * and the exit leaves the hypervisor with DEBUGCTL 0.
 */
void bts_vmx_controls(uint32_t *entry, uint32_t *exit);

/* --- setup ---------------------------------------------------------------------- */

enum bts_mode {
	BTS_MODE_CIRCULAR = 0,     /* BTINT 0: keep the newest, no interrupt */
	BTS_MODE_INT = 1,          /* BTINT 1: keep the oldest, PMI at the threshold */
};

/* A region: host pointer and the guest-linear address of the same bytes. */
struct bts_mem {
	void *va;
	uint64_t lin;
	uint64_t size;             /* bytes */
};

#define BTS_DS_ALIGN     64u   /* DS area: 64-byte aligned, so it never crosses a page */
#define BTS_BUF_ALIGN    8u    /* BTS buffer base (the SDM asks for 4) */
#define BTS_MIN_RECORDS  4u    /* buffer slots, the sentinel slot included */

struct bts_stats {
	uint64_t drains;           /* bts_drain calls on a set-up state */
	uint64_t slots;            /* records read from the buffer */
	uint64_t recorded;         /* written to the ring */
	uint64_t filtered;         /* dropped by the IP ranges */
	uint64_t filtered_cr3;     /* dropped because the drain's CR3 did not match */
	uint64_t bad;              /* from = to = 0 or a non-canonical address: not emitted */
	uint64_t dropped;          /* the ring refused (STOP policy, full) */
	uint64_t full;             /* drains at the absolute maximum: later branches may be lost */
	uint64_t wraps;            /* drains that found the buffer gone round */
	uint64_t lost_min;         /* records known written over by wraps (a lower bound) */
	uint64_t corrupt;          /* drains that found impossible DS fields: buffer dropped */
	uint64_t notes;            /* TV_REC_LOG loss notes written */
	uint64_t notes_dropped;    /* ... refused by the ring */
	uint64_t pmis, pmis_ours;  /* bts_on_pmi calls, and those that were ours */
};

/*
 * One CPU's BTS state.  bts_area_init fills it; the caller may then set
 * report_mispred (default false): TV_BRF_MISPRED for records whose
 * "predicted" bit is clear.  Off by default because the SDM says Intel
 * Core and Atom microarchitectures do not support that bit (it reads 0),
 * which would mark every branch mispredicted and defeat compact records.
 */
struct bts_state {
	bool ready;
	enum bts_mode mode;
	bool report_mispred;
	uint32_t linear_bits;
	uint32_t pmu_version;
	struct bts_ds_area *ds;    /* host pointer of the DS area */
	uint8_t *buf;              /* host pointer of the BTS buffer */
	uint64_t ds_lin;           /* IA32_DS_AREA */
	uint64_t base, abs_max, threshold;  /* linear, as written into the DS area */
	uint32_t nrec;             /* record slots, the sentinel slot included */
	uint64_t debugctl;         /* our GUEST_IA32_DEBUGCTL bits */
	struct bts_stats stats;
};

/* What the caller must program after bts_area_init. */
struct bts_setup {
	uint64_t ds_area;          /* WRMSR IA32_DS_AREA (VMX root or before launch) */
	uint64_t debugctl;         /* OR into GUEST_IA32_DEBUGCTL (see bts_guest_debugctl) */
	uint32_t records;          /* buffer slots */
	uint64_t threshold;        /* linear BTS interrupt threshold written */
};

/*
 * bts_debugctl_bits - the IA32_DEBUGCTL bits for mode and filter f (NULL:
 * all): TR | BTS, BTINT in BTS_MODE_INT, BTS_OFF_OS when f leaves out
 * CPL 0, BTS_OFF_USR when it leaves out CPL 3 (which skips CPL 1-3
 * together).  Refused, never approximated: a CPL filter without DS-CPL
 * (BTS_ERR_UNSUPPORTED), CPL 1 or 2 without 3 (BTS_ERR_UNSUPPORTED), no
 * CPL at all or unknown bits (BTS_ERR_INVAL).  Returns 0 with *out set, or
 * the error with why saying what (why may be NULL; always NUL-terminated
 * when whylen > 0, "" on success).
 */
int bts_debugctl_bits(const struct bts_caps *caps, const struct trace_filter *f,
		      enum bts_mode mode, uint64_t *out, char *why, size_t whylen);

/*
 * bts_area_init - lay out the DS save area in ds (>= 64 bytes; the first
 * 64 are written, PEBS fields 0) and the BTS buffer in buf
 * (floor(size / 24) record slots, at least BTS_MIN_RECORDS):
 *   base = buf->lin, index = base, absolute maximum = base + slots * 24
 *   (Linux's BTS driver uses the same end; the SDM's "multiple of the
 *   record size plus 1" wording is not followed), the last slot holds the
 *   sentinel;
 *   BTS_MODE_INT: threshold = base + (slots - margin) * 24, i.e. margin
 *   slots of headroom for the PMI to arrive (1 <= margin <= slots - 1, so
 *   that at least one record lies below the threshold; the sentinel slot
 *   is always within the margin);
 *   BTS_MODE_CIRCULAR: margin ignored; threshold = absolute maximum + 24,
 *   never reached (BTINT is 0 anyway; Linux's snapshot mode does the same).
 * Checks: caps supported; ds and buf 64- and 8-byte aligned in both va and
 * lin; the two regions do not overlap (neither as host nor as linear
 * ranges); every byte of both canonical for caps->linear_bits
 * (BTS_ERR_INVAL otherwise); the filter as bts_debugctl_bits.  Writes nothing on
 * error.  s is reset (stats zeroed) and set up; *out (may be NULL) says
 * what to program.  Errors: BTS_ERR_INVAL, BTS_ERR_UNSUPPORTED,
 * BTS_ERR_ALIGN, BTS_ERR_SIZE; why as bts_debugctl_bits.
 */
int bts_area_init(struct bts_state *s, const struct bts_caps *caps,
		  const struct trace_filter *f, const struct bts_mem *ds,
		  const struct bts_mem *buf, enum bts_mode mode, uint32_t margin,
		  struct bts_setup *out, char *why, size_t whylen);

/*
 * bts_guest_debugctl - the value for the VMCS GUEST_IA32_DEBUGCTL field:
 * the guest's own value (its shadow, vmm/trace/msr_policy.c) with bits 6-10
 * replaced by ours when on, cleared when not (s not set up, or the caller
 * has found that the buffer is not mapped in the guest's current address
 * space: a store through an unmapped DS linear address must never
 * happen).
 */
uint64_t bts_guest_debugctl(const struct bts_state *s, uint64_t guest_debugctl, bool on);

/* --- draining --------------------------------------------------------------------- */

/*
 * bts_slot_valid - pure: whether a stored record may be emitted: not
 * from = to = 0 (an empty or scrubbed slot) and both addresses canonical
 * for linear_bits (48 or 57; 32-bit guests store zero-extended EIPs,
 * which are canonical).
 */
bool bts_slot_valid(uint64_t from, uint64_t to, uint32_t linear_bits);

/*
 * bts_drain - with the guest stopped (VMX root), move the records stored
 * since the last drain into ring, oldest first, as branch records
 * (trace_append_branch: TV_REC_BRANCH, or TV_REC_BRANCH_COMPACT where the
 * ring's rule allows; kind TV_BR_UNKNOWN, no TSC; TV_BRF_MISPRED only with
 * report_mispred), then rewind: index = base and the sentinel rewritten.
 * guest_cr3 is the CR3 the records were stored under; with f->cr3 set and
 * not matching (bits 11:0 ignored) every record is counted in
 * filtered_cr3 and consumed.  IP ranges of f drop records (filtered); the
 * CPL part of f is in the hardware (bts_debugctl_bits).  f may be NULL.
 * Loss cases as in the header comment; LOG notes carry tsc.
 * Returns the number of records written (>= 0), BTS_ERR_INVAL (NULL, not
 * set up: nothing read) or BTS_ERR_CORRUPT (DS fields reset, buffer
 * dropped, a LOG note written).
 */
int bts_drain(struct bts_state *s, struct tv_trace_ring *ring, const struct trace_filter *f,
	      uint64_t guest_cr3, uint64_t tsc);

/* bts_on_pmi results. */
#define BTS_PMI_NOT_OURS 0
#define BTS_PMI_OURS     1

/*
 * bts_on_pmi - a PMI reached the hypervisor (NMI or interrupt exit).  In
 * BTS_MODE_INT it is ours when the index in the DS area is at or past the
 * threshold (nothing else says so: Linux's BTS driver decides the same
 * way); then the buffer is drained (bts_drain).  OvfBuffer
 * (IA32_PERF_GLOBAL_STATUS[62], perfmon v2+) is cleared through
 * IA32_PERF_GLOBAL_OVF_CTRL whenever it is set: PEBS is never armed
 * under BTS, so it can only be ours.  The caller unmasks the LVT
 * performance-counter entry and reflects a PMI that is not ours.
 * Returns BTS_PMI_OURS, BTS_PMI_NOT_OURS (also in circular mode, which
 * never interrupts), BTS_ERR_INVAL (NULL, not set up) or a bts_drain error.
 */
int bts_on_pmi(struct bts_state *s, struct tv_trace_ring *ring, const struct trace_filter *f,
	       uint64_t guest_cr3, uint64_t tsc);

/*
 * The unit (trace_backend_BTS, vmm/trace/backend.h; docs/BACKENDS-BTS.md):
 * each CPU has a DS save area page and a buffer of bts_buf_bytes (struct trace_setup) in
 * reserved memory the guest's EPT maps read/write (the backend's
 * guest_bytes: trace_cpu_bts_area).  A window lays them out
 * (bts_area_init; circular mode, or BTINT at pmi_every with pmi), writes
 * IA32_DS_AREA in VMX root and puts TR|BTS (BTS_OFF_OS/USR from the
 * filter's CPLs) in GUEST_IA32_DEBUGCTL while the guest's paging maps the
 * area writable at its own address (walked again when CR3 or CR0
 * changed; otherwise BTS stays off for that entry, noted and counted).
 * The buffer is drained (bts_drain) at every exit of the window and at
 * its stop.
 */
struct bts_unit {
	bool probed;              /* bts_probe ran on this CPU */
	struct bts_caps caps;
	struct bts_state bts;
	bool map_known;           /* map_ok holds for map_cr3/_cr0 */
	bool map_ok;              /* the guest's paging maps the area writable at its address */
	uint64_t map_cr3, map_cr0;
	uint64_t unmapped;        /* entries of a window with BTS held off: not mapped */
};
struct trace_bcpu;
struct bts_unit *bts_unit(struct trace_bcpu *b);

#endif /* TV_TRACE_BTS_H */
