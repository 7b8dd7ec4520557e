/* SPDX-License-Identifier: MIT */
/*
 * trace_lbr.h - the LBR backend's logic: find the CPU's last-branch-record
 * facility, program its filters, and move the guest's branch records from
 * the LBR stack into the CPU's record ring exactly once.
 *
 * Two facilities exist (docs/BACKENDS-LBR.md has the prose, the SDM
 * sections and what only hardware can show):
 *
 *  - the model-specific ("legacy") LBR stack, SDM 3B 18.4.8: depth and MSR
 *    addresses by CPU model (lbr_model_lookup), a top-of-stack index in
 *    MSR_LASTBRANCH_TOS, the record layout given by
 *    IA32_PERF_CAPABILITIES[5:0] (enum lbr_format), filtering by
 *    MSR_LBR_SELECT (suppress bits), enabled by IA32_DEBUGCTL.LBR;
 *  - architectural LBR, SDM 3B ch. 19 (CPUID.(7,0):EDX[19], leaf 0x1C):
 *    IA32_LBR_CTL enables and filters (enable bits), IA32_LBR_DEPTH picks
 *    the depth, entry 0 always holds the newest record.
 *
 * Where the hypervisor sits: the guest's IA32_DEBUGCTL is the VMCS field
 * GUEST_IA32_DEBUGCTL, loaded on entry with the "load debug controls"
 * entry control and saved on exit with "save debug controls"; a VM exit
 * clears the MSR (SDM 3C 28.5.1), so the hypervisor's own branches are
 * never recorded with legacy LBR.  Arch LBR has its own pair: the VMCS
 * field GUEST_IA32_LBR_CTL (encoding 0x2816) with the "load guest
 * IA32_LBR_CTL" entry control (bit 21) and the "clear IA32_LBR_CTL" exit
 * control (bit 26); lbr_vmx_controls says which a configuration needs.
 * Nothing here touches the VMCS: the caller reads and writes the fields
 * (vmm/trace/engine.c); MSRs are read and written through vmm/hw/hw.h only.
 *
 * De-duplication: the stack is read at PMIs and around VM exits, and the
 * same record must reach the ring once.  After lbr_read has taken the
 * valid entries it zeroes them (legacy: WRMSR 0 to each FROM/TO it read;
 * arch: one WRMSR to IA32_LBR_DEPTH, which resets every entry), so the
 * next read finds only records written since.  A zero FROM and TO is an
 * empty slot; the walk goes from the newest entry back and stops at the
 * first empty one.  When every slot is valid the stack was full: more
 * branches may have happened than it holds, and the ones before the
 * oldest are lost without trace (counted in stats.full_reads, the only
 * signal there is; see docs/BACKENDS-LBR.md for what a PMI every
 * depth - margin taken branches buys).
 *
 * Errors (negative, text from lbr_strerror):
 *   LBR_ERR_INVAL        NULL argument, or state not started
 *   LBR_ERR_UNSUPPORTED  the caps say no usable LBR (caps->reason says why)
 */
#ifndef TV_TRACE_LBR_H
#define TV_TRACE_LBR_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/lib/caps.h"
#include "vmm/trace/trace.h"

#define LBR_ERR_INVAL        (-1)
#define LBR_ERR_UNSUPPORTED  (-2)

/* Text for an LBR_ERR_* code (or 0); "unknown error" otherwise. */
const char *lbr_strerror(int err);

/* --- MSRs (SDM Vol. 4 names, LBR_ prefix to stay unique) -------------------- */
#define LBR_MSR_DEBUGCTL            0x1d9u   /* IA32_DEBUGCTL */
#define LBR_MSR_PERF_CAPABILITIES   0x345u   /* IA32_PERF_CAPABILITIES */
#define LBR_MSR_SELECT              0x1c8u   /* MSR_LBR_SELECT (Nehalem and later) */
#define LBR_MSR_TOS                 0x1c9u   /* MSR_LASTBRANCH_TOS */
#define LBR_MSR_ATOM_FROM_0         0x040u   /* MSR_LASTBRANCH_0_FROM_IP (Silvermont/Airmont) */
#define LBR_MSR_ATOM_TO_0           0x060u   /* MSR_LASTBRANCH_0_TO_IP */
#define LBR_MSR_NHM_FROM_0          0x680u   /* MSR_LASTBRANCH_0_FROM_IP (Nehalem and later) */
#define LBR_MSR_NHM_TO_0            0x6c0u   /* MSR_LASTBRANCH_0_TO_IP */
#define LBR_MSR_INFO_0              0xdc0u   /* MSR_LBR_INFO_0 (formats 5 and 7) */
#define LBR_MSR_ARCH_CTL            0x14ceu  /* IA32_LBR_CTL */
#define LBR_MSR_ARCH_DEPTH          0x14cfu  /* IA32_LBR_DEPTH */
#define LBR_MSR_ARCH_FROM_0         0x1500u  /* IA32_LBR_0_FROM_IP */
#define LBR_MSR_ARCH_TO_0           0x1600u  /* IA32_LBR_0_TO_IP */
#define LBR_MSR_ARCH_INFO_0         0x1200u  /* IA32_LBR_0_INFO */
#define LBR_MSR_PERF_GLOBAL_STATUS  0x38eu   /* IA32_PERF_GLOBAL_STATUS */
#define LBR_MSR_PERF_GLOBAL_STATUS_RESET 0x390u /* _RESET (v4); IA32_PERF_GLOBAL_OVF_CTRL before */

/* IA32_DEBUGCTL (SDM 3B 18.4.1). */
#define LBR_DEBUGCTL_LBR                (1ull << 0)
#define LBR_DEBUGCTL_BTF                (1ull << 1)
#define LBR_DEBUGCTL_FREEZE_LBRS_ON_PMI (1ull << 11)

/* IA32_PERF_GLOBAL_STATUS / _RESET (SDM 3B 20.2.4, perfmon v4). */
#define LBR_GLOBAL_STATUS_LBR_FRZ       (1ull << 58)

/* IA32_PERF_CAPABILITIES[5:0]: LBR format. */
#define LBR_PERF_CAP_FORMAT_MASK        0x3full

/* MSR_LBR_SELECT: each bit set SUPPRESSES that class (SDM 3B 18.7.2, Nehalem and later). */
#define LBR_SEL_CPL_EQ_0        (1ull << 0)   /* branches ending in ring 0 */
#define LBR_SEL_CPL_NEQ_0       (1ull << 1)   /* branches ending in rings 1-3 */
#define LBR_SEL_JCC             (1ull << 2)
#define LBR_SEL_NEAR_REL_CALL   (1ull << 3)
#define LBR_SEL_NEAR_IND_CALL   (1ull << 4)
#define LBR_SEL_NEAR_RET        (1ull << 5)
#define LBR_SEL_NEAR_IND_JMP    (1ull << 6)
#define LBR_SEL_NEAR_REL_JMP    (1ull << 7)
#define LBR_SEL_FAR_BRANCH      (1ull << 8)
#define LBR_SEL_EN_CALLSTACK    (1ull << 9)   /* Haswell and later; never set here */

/* IA32_LBR_CTL: each bit set ENABLES (SDM 3B ch. 19, Architectural LBRs). */
#define LBR_CTL_LBREN           (1ull << 0)
#define LBR_CTL_OS              (1ull << 1)   /* record at CPL 0 */
#define LBR_CTL_USR             (1ull << 2)   /* record at CPL > 0 */
#define LBR_CTL_CALL_STACK      (1ull << 3)
#define LBR_CTL_COND            (1ull << 16)
#define LBR_CTL_NEAR_REL_JMP    (1ull << 17)
#define LBR_CTL_NEAR_IND_JMP    (1ull << 18)
#define LBR_CTL_NEAR_REL_CALL   (1ull << 19)
#define LBR_CTL_NEAR_IND_CALL   (1ull << 20)
#define LBR_CTL_NEAR_RET        (1ull << 21)
#define LBR_CTL_OTHER_BRANCH    (1ull << 22)
#define LBR_CTL_TYPES           (0x7full << 16)

/* LBR_INFO (MSR_LBR_INFO_x for formats 5/7, IA32_LBR_x_INFO for arch LBR). */
#define LBR_INFO_MISPRED        (1ull << 63)
#define LBR_INFO_IN_TSX         (1ull << 62)
#define LBR_INFO_TSX_ABORT      (1ull << 61)
#define LBR_INFO_CYC_CNT_VALID  (1ull << 60)  /* arch LBR */
#define LBR_INFO_BR_TYPE_SHIFT  56            /* arch LBR: 59:56 */
#define LBR_INFO_BR_TYPE_MASK   (0xfull << LBR_INFO_BR_TYPE_SHIFT)
#define LBR_INFO_CYC_CNT_MASK   0xffffull     /* 15:0 */

/* FROM_IP flag bits of formats 3, 4 and 6 (SDM 3B 18.4.8.1). */
#define LBR_FROM_MISPRED        (1ull << 63)
#define LBR_FROM_IN_TSX         (1ull << 62)  /* format 4 only */
#define LBR_FROM_TSX_ABORT      (1ull << 61)  /* format 4 only */

/* VMX (SDM 3C Appendix B, 25.7.1, 25.8.1): the arch-LBR guest-state field. */
#define LBR_VMCS_GUEST_IA32_LBR_CTL 0x00002816u

/*
 * LBR record formats, IA32_PERF_CAPABILITIES[5:0] (SDM 3B 18.4.8.1).
 * LBR_FMT_ARCH is not a hardware value: it marks architectural LBR.
 */
enum lbr_format {
	LBR_FMT_32 = 0,            /* FROM MSR holds from (31:0) and to (63:32) */
	LBR_FMT_LIP = 1,           /* 64-bit linear addresses */
	LBR_FMT_EIP = 2,           /* 64-bit EIP/RIP (CS offsets) */
	LBR_FMT_EIP_FLAGS = 3,     /* FROM 63 mispredict, 62:0 address */
	LBR_FMT_EIP_FLAGS_TSX = 4, /* FROM 63 mispred, 62 in TSX, 61 abort, 60:0 address */
	LBR_FMT_EIP_INFO = 5,      /* 64-bit addresses, flags in MSR_LBR_INFO_x */
	LBR_FMT_LIP_CYCLES = 6,    /* FROM 63 mispred; TO 63:48 cycles, 47:0 address */
	LBR_FMT_LIP_INFO = 7,      /* 64-bit addresses, MSR_LBR_INFO_x, no TSX */
	LBR_FMT_MAX_KNOWN = 7,
	LBR_FMT_ARCH = 0x40,       /* architectural LBR (not a PERF_CAPABILITIES value) */
};

/* A row of the model table: one microarchitecture's legacy LBR stack. */
struct lbr_model {
	uint8_t model;             /* CPUID display model, family 6 */
	uint8_t depth;             /* 8, 16 or 32 entries */
	uint16_t from_0;           /* MSR_LASTBRANCH_0_FROM_IP */
	uint16_t to_0;             /* MSR_LASTBRANCH_0_TO_IP */
	uint16_t info_0;           /* MSR_LBR_INFO_0, 0 when the model has none */
	const char *name;
};

/*
 * lbr_model_lookup - the legacy LBR stack of Intel family 6 model `model`,
 * or NULL when the table does not know it (other families: NULL).
 */
const struct lbr_model *lbr_model_lookup(uint32_t family, uint32_t model);

/* What this CPU's LBR facility is. */
struct lbr_caps {
	bool supported;
	bool arch;                 /* architectural LBR */
	uint8_t format;            /* enum lbr_format */
	uint8_t depth;             /* entries read: legacy by model, arch the largest in leaf 0x1C */
	bool has_info;             /* an INFO MSR per entry (formats 5, 7, arch) */
	bool has_select;           /* legacy: MSR_LBR_SELECT exists */
	bool streamlined_freeze;   /* perfmon v4+ / arch: freeze sets LBR_FRZ, keeps DEBUGCTL.LBR */
	bool cpl_filter, branch_filter;  /* arch: CPUID.1CH:EBX[0], [1]; legacy: has_select */
	bool mispred, timed, branch_type; /* arch: CPUID.1CH:ECX[0..2]; legacy by format */
	uint32_t family, model;
	uint32_t tos_msr, from_0, to_0, info_0;
	const char *name;          /* microarchitecture, "architectural" or NULL */
	const char *reason;        /* why not supported; NULL when supported */
};

/*
 * lbr_caps_decode - what LBR a CPU offers, from its CPUID summary, its
 * IA32_PERF_CAPABILITIES value (ignored without cpu->pdcm) and the
 * architectural perfmon version (CPUID.0AH:EAX[7:0]).  Pure.  Not
 * supported (with a reason) for: a non-Intel vendor, no PDCM (the format
 * cannot be known), a format above 7, a legacy model missing from the
 * table, or arch LBR with an empty depth bitmap.
 */
void lbr_caps_decode(const struct cpu_caps *cpu, uint64_t perf_capabilities,
		     uint32_t perfmon_version, struct lbr_caps *out);

/* lbr_probe - lbr_caps_decode on this CPU (CPUID and RDMSR through hw.h). */
void lbr_probe(struct lbr_caps *out);

/* --- filters ------------------------------------------------------------ */

/* Branch kinds for the kinds argument: a bit per enum tv_branch_kind. */
#define LBR_KIND(k)   (1u << (k))
#define LBR_KINDS_ALL 0u   /* no branch-type filter */

/*
 * lbr_select_bits - the MSR_LBR_SELECT value (suppress bits) for filter f
 * (NULL: all) and kinds (LBR_KINDS_ALL, or LBR_KIND() bits to keep).
 * TRACE_CPL_KERNEL off suppresses CPL 0 (CPL_EQ_0); TRACE_CPL_USER off
 * suppresses CPL 1-3 (CPL_NEQ_0: the LBR cannot tell ring 3 from 1-2).
 * FAR_BRANCH covers TV_BR_FAR, SYSCALL, SYSRET, EXCEPTION and INTERRUPT
 * together: it is kept when any of them is.
 */
uint64_t lbr_select_bits(const struct trace_filter *f, uint32_t kinds);

/*
 * lbr_arch_ctl_bits - the IA32_LBR_CTL value (LBREn set) for the same
 * request: OS/USR from the CPL filter when caps->cpl_filter (else both
 * set), type enables when caps->branch_filter (else every type bit).
 */
uint64_t lbr_arch_ctl_bits(const struct lbr_caps *caps, const struct trace_filter *f,
			   uint32_t kinds);

/*
 * lbr_vmx_controls - the VM-entry and VM-exit controls (vmm/vmx/vmx_defs.h
 * bits) the guest needs for caps: "load debug controls" / "save debug
 * controls" always (the guest's DEBUGCTL carries LBR, BTF, FREEZE);
 * with arch LBR also "load guest IA32_LBR_CTL" / "clear IA32_LBR_CTL" so
 * the hypervisor's branches are not recorded.
 */
void lbr_vmx_controls(const struct lbr_caps *caps, uint32_t *entry, uint32_t *exit);

/* --- one decoded record -------------------------------------------------- */

struct lbr_entry {
	uint64_t from, to;         /* flag bits removed, sign-extended */
	uint64_t info;             /* raw LBR_INFO (0 when the format has none) */
	uint32_t flags;            /* TV_BRF_MISPRED / IN_TSX / TSX_ABORT */
	uint16_t cycles;           /* elapsed core cycles (format 6 TO, INFO 15:0) */
	bool cycles_valid;
	uint8_t kind;              /* enum tv_branch_kind (arch LBR BR_TYPE), else UNKNOWN */
};

/*
 * lbr_decode - one record from its raw MSR values (to_raw unused by
 * LBR_FMT_32, info_raw used only by formats with INFO).  Pure.
 * Returns false for an empty slot (from and to both zero).
 */
bool lbr_decode(const struct lbr_caps *caps, uint64_t from_raw, uint64_t to_raw,
		uint64_t info_raw, struct lbr_entry *out);

/* Arch LBR BR_TYPE (LBR_INFO 59:56) to enum tv_branch_kind. */
uint8_t lbr_arch_br_type_kind(uint32_t br_type);

/* --- the backend -------------------------------------------------------------- */

struct lbr_stats {
	uint64_t reads;            /* lbr_read calls */
	uint64_t entries;          /* valid new entries found */
	uint64_t recorded;         /* written to the ring */
	uint64_t filtered;         /* dropped by the IP-range filter */
	uint64_t dropped;          /* the ring refused (STOP policy, full) */
	uint64_t full_reads;       /* reads that found the whole stack new: possible loss */
	uint64_t pmis;             /* lbr_pmi calls */
	uint64_t pmis_ours;        /* ... whose overflow bits were ours */
};

/* The deepest stack: arch LBR depths go up to 64 (leaf 0x1C EAX[7:0]). */
#define LBR_MAX_DEPTH 64

/*
 * One CPU's LBR state.  lbr_start fills it.  The raw[] scratch holds one
 * read's records (newest first) so that they can be written oldest first
 * without a large frame on the hypervisor's stack.
 */
struct lbr_state {
	struct lbr_caps caps;
	bool started;
	uint64_t ctl;              /* legacy: MSR_LBR_SELECT written; arch: IA32_LBR_CTL for the VMCS */
	uint64_t pmi_ovf_mask;     /* PERF_GLOBAL_STATUS overflow bits of our counter(s) */
	struct lbr_stats stats;
	struct lbr_entry scratch[LBR_MAX_DEPTH];
};

/*
 * lbr_start - adopt caps, program the filter (legacy: WRMSR LBR_SELECT when
 * it exists; arch: the IA32_LBR_CTL value is kept in s->ctl for the
 * VMCS, and IA32_LBR_DEPTH is written, which clears the stack) and empty
 * the stack so that nothing older than the start is recorded.
 * pmi_ovf_mask: IA32_PERF_GLOBAL_STATUS bits of the counter(s) the engine
 * programmed to interrupt us (0: exit-driven reads only).
 * Errors: LBR_ERR_INVAL (NULL), LBR_ERR_UNSUPPORTED (!caps->supported).
 */
int lbr_start(struct lbr_state *s, const struct lbr_caps *caps,
	      const struct trace_filter *f, uint32_t kinds, uint64_t pmi_ovf_mask);

/* lbr_stop - forget the start (the caller clears the guest's enables). */
void lbr_stop(struct lbr_state *s);

/*
 * lbr_guest_debugctl - the value for the VMCS GUEST_IA32_DEBUGCTL field:
 * the guest's own value (its shadow) with LBR (legacy only) and, when a
 * PMI counter is set, FREEZE_LBRS_ON_PMI added.  Not started: unchanged.
 */
uint64_t lbr_guest_debugctl(const struct lbr_state *s, uint64_t guest_debugctl);

/*
 * lbr_read - move the new records from the stack into ring, oldest first,
 * as TV_REC_LBR records (flags, kind, raw INFO; TV_BRF_LBR_FULL on the
 * oldest record written when every slot was new), dropping those that fail
 * the IP ranges of f (NULL: all; the CPL part of f is done in hardware by
 * lbr_select_bits / lbr_arch_ctl_bits; CR3 is not known per record and is
 * not applied), then empty the slots read.  A full ring (STOP) drops and
 * counts; the stack is emptied anyway.
 * Returns the number of records written (>= 0) or LBR_ERR_INVAL.
 */
int lbr_read(struct lbr_state *s, struct tv_trace_ring *ring, const struct trace_filter *f);

/*
 * lbr_top - the newest record without consuming it (BTF takes `from`
 * from it).  Returns false when the stack is empty or s is not started.
 */
bool lbr_top(const struct lbr_state *s, struct lbr_entry *out);

/* lbr_pmi results. */
#define LBR_PMI_NOT_OURS 0
#define LBR_PMI_OURS     1

/*
 * lbr_pmi - a PMI arrived (as an NMI exit, or an interrupt exit on the
 * PMI vector) while the guest ran with FREEZE_LBRS_ON_PMI: the stack is
 * frozen.  Read it (lbr_read), then unfreeze: with streamlined freeze
 * clear LBR_FRZ (and our overflow bits) through
 * IA32_PERF_GLOBAL_STATUS_RESET; with the legacy freeze, which cleared
 * DEBUGCTL.LBR in the guest's DEBUGCTL that the exit saved, set it again
 * in *guest_debugctl (the caller writes it back to the VMCS).
 * Returns LBR_PMI_OURS when one of pmi_ovf_mask's bits is set in
 * IA32_PERF_GLOBAL_STATUS (acknowledged here), LBR_PMI_NOT_OURS otherwise
 * (the caller reflects the NMI/PMI to the guest; the guest's bits are
 * left set), or LBR_ERR_INVAL.
 */
int lbr_pmi(struct lbr_state *s, struct tv_trace_ring *ring, const struct trace_filter *f,
	    uint64_t *guest_debugctl);

/*
 * lbr_msr_owned - whether msr belongs to the LBR facility of caps (TOS,
 * SELECT, FROM/TO/INFO stack, arch CTL/DEPTH): the MSR exit handler keeps
 * the guest away from those while the backend runs (docs/BACKENDS-LBR.md).
 */
bool lbr_msr_owned(const struct lbr_caps *caps, uint32_t msr);

/*
 * The unit (trace_backend_LBR, vmm/trace/backend.h), legacy or
 * architectural LBRs: DEBUGCTL.LBR in GUEST_IA32_DEBUGCTL (arch: the
 * filter in GUEST_IA32_LBR_CTL) while a window is open; the stack is
 * drained (lbr_read, TV_REC_LBR) at every exit of the window and at its
 * stop; with pmi the engine's counter (trace_pmc_arm) overflows before
 * the stack could, and its PMI (FREEZE_LBRS_ON_PMI) drains it.  btf
 * (vmm/trace/backend/btf.h) uses the same state for the stack's top.
 */
struct trace_bcpu;
struct trace_view;
struct lbr_unit {
	bool probed;              /* lbr_probe ran on this CPU */
	struct lbr_caps caps;
	struct lbr_state lbr;     /* lbr: the drains; btf: the stack's top */
	uint64_t vmcs_ctl;        /* arch LBR: what GUEST_IA32_LBR_CTL holds */
};
/* The unit's state (lbr and btf keep it first in their per-CPU state). */
struct lbr_unit *lbr_unit(struct trace_bcpu *b);
/* The stack and the VMX controls it needs, probed once; the reason logged. */
bool lbr_unit_usable(struct trace_bcpu *b);
/* Arch LBR: GUEST_IA32_LBR_CTL = the window's IA32_LBR_CTL while on, else 0. */
void lbr_unit_set_ctl(struct trace_bcpu *b, struct trace_view *v, bool on);

#endif /* TV_TRACE_LBR_H */
