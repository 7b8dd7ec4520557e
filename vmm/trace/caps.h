/* SPDX-License-Identifier: MIT */
/*
 * trace_caps.h - what one CPU can trace with, and which backend to use.
 *
 * Built from CPUID (vmm/lib/caps.h) and the MSRs that gate each tracing
 * feature, read through the hw seam.  Decoding is split from reading:
 * trace_caps_read() gathers the raw values into struct trace_caps_raw on
 * the calling CPU, trace_caps_decode() is pure, so recorded values of real
 * CPUs (and of the Bochs model) are tested on the host.
 *
 * Requirements per backend (SDM references in trace_caps.c):
 *   PT   CPUID.(7,0):EBX[25], leaf 0x14 with ToPA output, IA32_VMX_MISC[14]
 *        (PT usable in VMX operation), VM-entry "load IA32_RTIT_CTL" (18)
 *        and VM-exit "clear IA32_RTIT_CTL" (25) allowed-1.
 *   BTS  CPUID.1:EDX[21] DS, CPUID.1:ECX[2] DTES64 (64-bit DS area),
 *        IA32_MISC_ENABLE[11] clear, DEBUGCTL that holds what is written.
 *   LBR  arch LBR (CPUID.(7,0):EDX[19] + leaf 0x1C), or PDCM with the
 *        format in IA32_PERF_CAPABILITIES[5:0] and a stack depth known
 *        for the model (table in trace_caps.c; unknown model: depth 0 and
 *        no legacy LBR), DEBUGCTL that holds what is written, and the
 *        VMX "load/save debug controls" so the guest's DEBUGCTL is
 *        switched on entry and exit.
 *   BTF  LBR (for the `from` of each branch) plus the debug controls.
 *   MTF  the "monitor trap flag" processor-based control (bit 27).
 *
 * The DEBUGCTL probe: QEMU TCG and Bochs (with ignore_bad_msrs=1, as our
 * scenarios run it) read unknown MSRs as 0 and drop writes, yet Bochs's
 * corei7_skylake_x model reports DS, DTES64 and PDCM in CPUID and reads
 * IA32_MISC_ENABLE as 0 ("BTS available").  Setting DEBUGCTL.LBR and
 * reading it back tells a real DEBUGCTL from a dropped one; without it
 * auto would pick BTS in Bochs and record nothing.
 */
#ifndef TV_TRACE_CAPS_H
#define TV_TRACE_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/lib/caps.h"
#include "vmm/trace/format.h"

/* Errors (negative returns). */
#define TRACE_CAPS_EUNSUPPORTED (-1)  /* the requested source cannot run here */
#define TRACE_CAPS_EINVAL       (-2)  /* bad argument (unknown source, NULL) */

/* Legacy LBR formats, IA32_PERF_CAPABILITIES[5:0] (SDM 3B 18.4.8.1). */
#define LBR_FORMAT_32          0x00
#define LBR_FORMAT_LIP         0x01
#define LBR_FORMAT_EIP         0x02
#define LBR_FORMAT_EIP_FLAGS   0x03
#define LBR_FORMAT_EIP_FLAGS2  0x04
#define LBR_FORMAT_INFO        0x05
#define LBR_FORMAT_TIME        0x06
#define LBR_FORMAT_INFO2       0x07
#define LBR_FORMAT_ARCH        0x3f   /* arch LBR: PERF_CAPABILITIES[5:0] = 3FH */

/* What trace_caps_read() gathers; everything trace_caps_decode() needs. */
struct trace_caps_raw {
	struct cpu_caps cpu;         /* CPUID, vmm/lib/caps.c */
	uint32_t pmu_leaf_a_eax;     /* CPUID.0AH:EAX (0 when max leaf < 0xA) */
	uint32_t pmu_leaf_a_edx;
	/* MSRs; each 0 when not read (the CPU does not have it) */
	uint64_t vmx_basic, vmx_misc;
	uint64_t vmx_procbased, vmx_exit, vmx_entry;           /* IA32_VMX_*_CTLS */
	uint64_t vmx_true_procbased, vmx_true_exit, vmx_true_entry; /* IA32_VMX_TRUE_*, basic[55] */
	uint64_t misc_enable;
	uint64_t perf_capabilities;
	bool have_vmx_msrs;          /* the VMX capability MSRs were read */
	bool have_misc_enable;
	bool debugctl_works;         /* DEBUGCTL.LBR written and read back as 1 */
};

struct trace_caps {
	uint32_t family, model;      /* display values */
	bool intel;

	/* VMX (SDM 3C A.3-A.6) */
	bool vmx;
	bool true_ctls;              /* IA32_VMX_BASIC[55] */
	bool entry_load_debug;       /* VM-entry control 2 allowed-1 */
	bool exit_save_debug;        /* VM-exit control 2 allowed-1 */
	bool mtf;                    /* primary proc-based control 27 allowed-1 */

	/* Intel PT (SDM 3C 33.3, 26.x PT and VMX) */
	bool pt_cpuid;               /* CPUID.(7,0):EBX[25] with leaf 0x14 */
	bool pt_topa;                /* CPUID.(14H,0):ECX[0] */
	bool pt_topa_multi;          /* ECX[1] */
	bool pt_single_range;        /* ECX[2] */
	bool pt_cr3_filter, pt_ip_filter, pt_mtc, pt_psb_cyc, pt_ptwrite, pt_power_event;
	uint32_t pt_addr_ranges;
	bool pt_vmx;                 /* IA32_VMX_MISC[14] */
	bool pt_entry_load_rtit;     /* VM-entry control 18 */
	bool pt_exit_clear_rtit;     /* VM-exit control 25 */
	bool lbr_entry_load_ctl;     /* VM-entry control 21: load guest IA32_LBR_CTL */
	bool lbr_exit_clear_ctl;     /* VM-exit control 26: clear IA32_LBR_CTL */
	bool pt;                     /* usable by tracevisor: all of the above */

	/* BTS (SDM 3B 18.4.5, 18.6.8) */
	bool ds, dtes64, ds_cpl;
	bool bts_unavailable;        /* IA32_MISC_ENABLE[11] */
	bool pebs_unavailable;       /* IA32_MISC_ENABLE[12] */
	bool debugctl_works;
	bool bts;

	/* LBR (SDM 3B 18.1 arch, 18.4.8 legacy) */
	bool pdcm;
	uint64_t perf_capabilities;
	uint32_t lbr_format;         /* PERF_CAPABILITIES[5:0]; LBR_FORMAT_ARCH for arch */
	bool arch_lbr;
	uint32_t arch_lbr_depth_mask;
	uint32_t lbr_depth;          /* entries; 0 = unknown (no LBR) */
	bool lbr_select;             /* MSR_LBR_SELECT exists (Nehalem, Silvermont and later) */
	bool lbr_info;               /* MSR_LBR_INFO_n exist (formats 5 and 7) */
	uint32_t lbr_from0, lbr_to0; /* first FROM/TO MSR of the stack */
	bool lbr;

	bool btf;

	/* architectural PMU, CPUID.0AH (SDM 3B 20.2) */
	uint32_t pmu_version, pmu_gp_counters, pmu_fixed_counters;
	bool perf_metrics;           /* PERF_CAPABILITIES[15] */
};

/*
 * trace_caps_read - gather raw values on the calling CPU (CPUID, then only
 * MSRs that CPUID says exist) and decode them into *tc.  Runs the DEBUGCTL
 * probe on Intel CPUs with DS or PDCM or arch LBR: DEBUGCTL is read,
 * written with LBR set, read back and restored.  Call before the CPU
 * launches its guest, or in VMX root (where DEBUGCTL is the host's, 0
 * after every VM exit: SDM 3C 28.5.1).  raw may be NULL.
 */
void trace_caps_read(struct trace_caps *tc, struct trace_caps_raw *raw);

/* trace_caps_decode - pure: *tc from *raw (see the table above). */
void trace_caps_decode(struct trace_caps *tc, const struct trace_caps_raw *raw);

/*
 * trace_caps_lbr_model_depth - legacy LBR stack depth for family 6 model
 * (0 when the model is not in the table); *from0 and *to0 receive the stack's
 * first FROM/TO MSR when known.  SDM 3B 18.4.8 / Vol. 4 per-model tables.
 */
uint32_t trace_caps_lbr_model_depth(uint32_t family, uint32_t model,
				    uint32_t *from0, uint32_t *to0, bool *has_select);

/*
 * trace_choose - pick the source to use.  requested TV_SOURCE_NONE means
 * auto: PT, else BTS, else BTF (+LBR), else MTF.  An explicit request the
 * CPU cannot do fails: returns TRACE_CAPS_EUNSUPPORTED with why naming the
 * missing feature(s) ("bts: IA32_MISC_ENABLE[11] says BTS unavailable"),
 * never falling back.  Auto with nothing usable also returns
 * TRACE_CAPS_EUNSUPPORTED.  An unknown requested value returns
 * TRACE_CAPS_EINVAL.  On success returns 0, *chosen is set and why holds
 * a short reason ("auto: pt").  why may be NULL; it is always
 * NUL-terminated when whylen > 0.
 */
int trace_choose(const struct trace_caps *tc, enum tv_source requested,
		 enum tv_source *chosen, char *why, size_t whylen);

/*
 * trace_caps_missing - what stops source from running here, as text
 * ("" when nothing does).  Returns the length (snprintf semantics).
 */
int trace_caps_missing(const struct trace_caps *tc, enum tv_source source,
		       char *buf, size_t len);

/* trace_caps_describe - one line: "pt no (...), bts yes, lbr yes (format 5, 32 deep), ...". */
int trace_caps_describe(const struct trace_caps *tc, char *buf, size_t len);

/* trace_caps_source_name - "auto" for NONE, "mtf", "btf", "lbr", "bts", "pt", "?" otherwise. */
const char *trace_caps_source_name(enum tv_source s);

#endif /* TV_TRACE_CAPS_H */
