/* SPDX-License-Identifier: MIT */
/*
 * trace_msr.c - guest MSR virtualization policy for the tracing MSRs.
 * docs/TRACE-MSR-POLICY.md is the table this code implements.
 */
#include "vmm/trace/msr_policy.h"

#include <string.h>

#include "vmm/hw/msr.h"
#include "vmm/trace/backend.h"
#include "vmm/vmx/vcpu.h"

static uint32_t configured_owned;
static enum tv_source configured_backend = TV_SOURCE_NONE;
static bool configured_pmc;      /* lbr with pmi: the last GP counter is ours */
static uint32_t configured_pmc_idx;
static struct trace_msr_state slots[TRACE_MSR_MAX_CPUS];

/* What an MSR number is to this policy. */
enum kind {
	K_NONE = 0,
	K_DEBUGCTL,
	K_LBR_SELECT,
	K_LBR_TOS,
	K_LBR_STACK,        /* legacy FROM/TO/INFO entry */
	K_ARCH_LBR_CTL,
	K_ARCH_LBR_DEPTH,
	K_ARCH_LBR_STACK,   /* IA32_LBR_x_FROM_IP/TO_IP/INFO */
	K_DS_AREA,
	K_PEBS_ENABLE,
	K_RTIT_OUTPUT_BASE,
	K_RTIT_OUTPUT_MASK,
	K_RTIT_CTL,
	K_RTIT_STATUS,
	K_RTIT_CR3_MATCH,
	K_RTIT_ADDR,
	K_GLOBAL_STATUS,
	K_GLOBAL_CTRL,
	K_GLOBAL_OVF_CTRL,
	K_PMC,              /* IA32_PERFEVTSELx, IA32_PMCx, IA32_A_PMCx, x < 8 */
};

#define MSR_IA32_PERFEVTSEL0 0x186u
#define MSR_IA32_PMC0        0xc1u
#define MSR_IA32_A_PMC0      0x4c1u

/* The counter an IA32_PERFEVTSELx / PMCx / A_PMCx MSR belongs to. */
static uint32_t pmc_index(uint32_t msr)
{
	if (msr >= MSR_IA32_A_PMC0)
		return msr - MSR_IA32_A_PMC0;
	if (msr >= MSR_IA32_PERFEVTSEL0)
		return msr - MSR_IA32_PERFEVTSEL0;
	return msr - MSR_IA32_PMC0;
}

static bool in(uint32_t msr, uint32_t first, uint32_t n)
{
	return msr >= first && msr < first + n;
}

static enum kind kind_of(uint32_t msr)
{
	switch (msr) {
	case MSR_IA32_DEBUGCTL: return K_DEBUGCTL;
	case MSR_LBR_SELECT: return K_LBR_SELECT;
	case MSR_LASTBRANCH_TOS: return K_LBR_TOS;
	case MSR_IA32_LBR_CTL: return K_ARCH_LBR_CTL;
	case MSR_IA32_LBR_DEPTH: return K_ARCH_LBR_DEPTH;
	case MSR_IA32_DS_AREA: return K_DS_AREA;
	case MSR_IA32_PEBS_ENABLE: return K_PEBS_ENABLE;
	case MSR_IA32_RTIT_OUTPUT_BASE: return K_RTIT_OUTPUT_BASE;
	case MSR_IA32_RTIT_OUTPUT_MASK_PTRS: return K_RTIT_OUTPUT_MASK;
	case MSR_IA32_RTIT_CTL: return K_RTIT_CTL;
	case MSR_IA32_RTIT_STATUS: return K_RTIT_STATUS;
	case MSR_IA32_RTIT_CR3_MATCH: return K_RTIT_CR3_MATCH;
	case MSR_IA32_PERF_GLOBAL_STATUS: return K_GLOBAL_STATUS;
	case MSR_IA32_PERF_GLOBAL_CTRL: return K_GLOBAL_CTRL;
	case MSR_IA32_PERF_GLOBAL_OVF_CTRL: return K_GLOBAL_OVF_CTRL;
	default: break;
	}
	if (in(msr, MSR_LBR_CORE_FROM_0, 8) || in(msr, MSR_LBR_CORE_TO_0, 8) ||
	    in(msr, MSR_LBR_NHM_FROM_0, 32) || in(msr, MSR_LBR_NHM_TO_0, 32) ||
	    in(msr, MSR_LBR_INFO_0, 32))
		return K_LBR_STACK;
	if (in(msr, MSR_IA32_LBR_0_FROM_IP, ARCH_LBR_MAX_DEPTH) ||
	    in(msr, MSR_IA32_LBR_0_TO_IP, ARCH_LBR_MAX_DEPTH) ||
	    in(msr, MSR_IA32_LBR_0_INFO, ARCH_LBR_MAX_DEPTH))
		return K_ARCH_LBR_STACK;
	if (in(msr, MSR_IA32_RTIT_ADDR0_A, 8))
		return K_RTIT_ADDR;
	if (in(msr, MSR_IA32_PERFEVTSEL0, 8) || in(msr, MSR_IA32_PMC0, 8) || in(msr, MSR_IA32_A_PMC0, 8))
		return K_PMC;
	return K_NONE;
}

bool trace_msr_is_virtualized(uint32_t msr)
{
	return kind_of(msr) != K_NONE;
}

uint32_t trace_msr_owned_by(enum tv_source backend)
{
	const struct trace_backend *be = trace_backend_of(backend);

	return be ? be->msr_owned : 0;
}

static bool backend_valid(enum tv_source b)
{
	return b == TV_SOURCE_NONE || trace_backend_of(b) != NULL;
}

int trace_msr_configure(enum tv_source backend)
{
	if (!backend_valid(backend))
		return TRACE_MSR_EINVAL;
	configured_backend = backend;
	configured_owned = trace_msr_owned_by(backend);
	configured_pmc = false;
	return 0;
}

int trace_msr_configure_pmc(bool on, uint32_t counter)
{
	if (on && (configured_backend != TV_SOURCE_LBR || counter >= 8))
		return TRACE_MSR_EINVAL;
	configured_pmc = on;
	configured_pmc_idx = counter;
	configured_owned = trace_msr_owned_by(configured_backend) | (on ? TRACE_OWN_PMC : 0);
	return 0;
}

/* Bits of DEBUGCTL each feature owns (SDM 3B 18.4.1). */
static uint64_t debugctl_owned(uint32_t owned)
{
	uint64_t m = 0;

	if (owned & TRACE_OWN_LBR)
		m |= DEBUGCTL_LBR | DEBUGCTL_FREEZE_LBRS_ON_PMI;
	if (owned & TRACE_OWN_BTF)
		m |= DEBUGCTL_BTF;
	if (owned & TRACE_OWN_BTS)
		m |= DEBUGCTL_TR | DEBUGCTL_BTS | DEBUGCTL_BTINT | DEBUGCTL_BTS_OFF_OS |
		     DEBUGCTL_BTS_OFF_USR;
	return m;
}

/* PERF_GLOBAL_STATUS bits each feature sets (SDM 3B 20.2.4, 20.2.5). */
static uint64_t status_owned(uint32_t owned)
{
	uint64_t m = 0;

	if (owned & TRACE_OWN_PT)
		m |= PERF_GLOBAL_STATUS_TOPA_PMI;
	if (owned & TRACE_OWN_LBR)
		m |= PERF_GLOBAL_STATUS_LBR_FRZ;
	if (owned & TRACE_OWN_BTS)
		m |= PERF_GLOBAL_STATUS_OVF_BUFFER;
	if (owned & TRACE_OWN_PMC)
		m |= 1ull << configured_pmc_idx;
	return m;
}

bool trace_msr_intercepts(uint32_t msr, bool write)
{
	uint32_t o = configured_owned;

	switch (kind_of(msr)) {
	case K_DEBUGCTL:
		return debugctl_owned(o) != 0;
	case K_LBR_SELECT:
	case K_LBR_TOS:
	case K_LBR_STACK:
	case K_ARCH_LBR_CTL:
	case K_ARCH_LBR_DEPTH:
	case K_ARCH_LBR_STACK:
		return (o & TRACE_OWN_LBR) != 0;
	case K_DS_AREA:
	case K_PEBS_ENABLE:
		return (o & TRACE_OWN_BTS) != 0;
	case K_RTIT_OUTPUT_BASE:
	case K_RTIT_OUTPUT_MASK:
	case K_RTIT_CTL:
	case K_RTIT_STATUS:
	case K_RTIT_CR3_MATCH:
	case K_RTIT_ADDR:
		return (o & TRACE_OWN_PT) != 0;
	case K_GLOBAL_STATUS:
		/* read-only: a WRMSR faults in the hardware by itself */
		return !write && status_owned(o) != 0;
	case K_GLOBAL_OVF_CTRL:
		/* reads show nothing of ours (write-1-to-clear) */
		return write && status_owned(o) != 0;
	case K_GLOBAL_CTRL:
		/* our counter's enable bit lives in the VMCS field: both ways */
		return (o & TRACE_OWN_PMC) != 0;
	case K_PMC:
		return (o & TRACE_OWN_PMC) && pmc_index(msr) == configured_pmc_idx;
	case K_NONE:
		break;
	}
	return false;
}

static uint64_t low_bits(uint32_t n)
{
	return n >= 64 ? ~0ull : (1ull << n) - 1;
}

int trace_msr_init(struct trace_msr_state *s, const struct trace_caps *tc, enum tv_source backend)
{
	uint64_t gp, fixed;

	if (!s || !tc || !backend_valid(backend))
		return TRACE_MSR_EINVAL;
	memset(s, 0, sizeof(*s));
	s->intel = tc->intel;
	s->owned = trace_msr_owned_by(backend);
	if (configured_pmc && backend == TV_SOURCE_LBR) {
		s->owned |= TRACE_OWN_PMC;
		s->pmc_idx = configured_pmc_idx;
	}
	s->pmu_gp_counters = tc->pmu_gp_counters;
	s->pmc_full_width = (tc->perf_capabilities >> 13) & 1;   /* FW_WRITE */

	s->has_ds = tc->ds;
	s->has_pebs = tc->ds && !tc->pebs_unavailable;
	s->has_pt = tc->pt_cpuid;
	s->has_pt_cr3 = tc->pt_cpuid && tc->pt_cr3_filter;
	s->pt_addr_ranges = tc->pt_ip_filter ? tc->pt_addr_ranges : 0;
	if (s->pt_addr_ranges > 4)
		s->pt_addr_ranges = 4;
	s->lbr_arch = tc->arch_lbr;
	s->lbr_depth = tc->lbr_depth;
	s->lbr_from0 = tc->lbr_from0;
	s->lbr_to0 = tc->lbr_to0;
	s->lbr_select_exists = !tc->arch_lbr && tc->lbr_select && tc->lbr_depth;
	s->lbr_info_exists = tc->lbr_info;
	s->arch_lbr_depth_mask = tc->arch_lbr_depth_mask;
	s->pmu_version = tc->pmu_version;

	/*
	 * IA32_DEBUGCTL: bits 0, 1, 6-15 defined, 2-5 and 16-63 reserved
	 * (SDM 3B Figure 18-3; the recorded i7-6700K's write mask
	 * 0xffffffffffff003c).  Core 2 has no bits 13-15 (its recorded mask
	 * 0xffffffffffffe03c): they are accepted here only when the CPU
	 * is Nehalem or later (LBR_SELECT exists or depth >= 16) or has arch LBR.
	 */
	s->debugctl_valid = 0x1fc3;
	if (tc->arch_lbr || tc->lbr_depth >= 16 || tc->lbr_select)
		s->debugctl_valid |= DEBUGCTL_ENABLE_UNCORE_PMI | DEBUGCTL_RTM_DEBUG |
				     ((tc->perf_capabilities & (1ull << 12)) ? DEBUGCTL_FREEZE_WHILE_SMM : 0);
	/* MSR_LBR_SELECT: bits 8:0, bit 9 EN_CALLSTACK from Haswell (format 4) on
	 * (SDM 3B 18.9.2 Table 18-13, 18.11.2); recorded 6700K mask 0x3ff. */
	s->lbr_select_valid = tc->lbr_format >= LBR_FORMAT_EIP_FLAGS2 ? 0x3ff : 0x1ff;
	/* IA32_LBR_CTL (SDM 3B 18.1.2.1): LBREn; OS/USR with the CPL filter,
	 * CALL_STACK, and branch-type bits 22:16 with the branch filter. */
	s->arch_lbr_ctl_valid = 1;
	if (tc->arch_lbr) {
		/* CPUID.1CH:EBX bits read into cpu_caps are not kept in trace_caps:
		 * accept every defined bit; the shadow never reaches hardware. */
		s->arch_lbr_ctl_valid = 0x7f000f;
	}
	gp = low_bits(tc->pmu_gp_counters);
	fixed = low_bits(tc->pmu_fixed_counters);
	/* PEBS_ENABLE: counter enables and their load-latency/fixed companions
	 * live in 31:0 and 63:32; model-specific beyond that, so only bits
	 * [gp, 32) are treated as reserved (the shadow never reaches hardware). */
	s->pebs_valid = tc->pmu_gp_counters ? (gp | 0xffffffff00000000ull) : ~0ull;
	/* IA32_PERF_GLOBAL_CTRL (SDM 3B 20.2.2): PMCs, fixed counters at 32+,
	 * PERF_METRICS_EN (48) when PERF_CAPABILITIES[15]. */
	s->global_ctrl_valid = gp | (fixed << 32) | (tc->perf_metrics ? 1ull << 48 : 0);
	/* IA32_PERF_GLOBAL_STATUS / OVF_CTRL (SDM 3B 20.2.2, 20.2.4, 20.2.5). */
	s->global_status_valid = gp | (fixed << 32) | PERF_GLOBAL_STATUS_OVF_BUFFER |
				 PERF_GLOBAL_STATUS_COND_CHGD;
	if (tc->pmu_version >= 3)
		s->global_status_valid |= PERF_GLOBAL_STATUS_OVF_UNCORE;
	if (tc->pmu_version >= 4)
		s->global_status_valid |= PERF_GLOBAL_STATUS_LBR_FRZ | PERF_GLOBAL_STATUS_CTR_FRZ |
					  PERF_GLOBAL_STATUS_ASCI |
					  (tc->pt_cpuid ? PERF_GLOBAL_STATUS_TOPA_PMI : 0);
	if (tc->perf_metrics)
		s->global_status_valid |= PERF_GLOBAL_STATUS_PERF_METRICS;

	/* IA32_RTIT_CTL (SDM 3C 33.2.8.2 Table 33-6), by what leaf 0x14 offers. */
	s->rtit_ctl_valid = RTIT_CTL_TRACEEN | (1ull << 2) /* OS */ | (1ull << 3) /* User */ |
			    (1ull << 10) /* TSCEn */ | (1ull << 11) /* DisRETC */ |
			    (1ull << 13) /* BranchEn */;
	if (tc->pt_topa)
		s->rtit_ctl_valid |= 1ull << 8;                       /* ToPA */
	if (tc->pt_cr3_filter)
		s->rtit_ctl_valid |= 1ull << 7;                       /* CR3Filter */
	if (tc->pt_psb_cyc)
		s->rtit_ctl_valid |= (1ull << 1) | (0xfull << 19) | (0xfull << 24); /* CYCEn, CycThresh, PSBFreq */
	if (tc->pt_mtc)
		s->rtit_ctl_valid |= (1ull << 9) | (0xfull << 14);   /* MTCEn, MTCFreq */
	if (tc->pt_power_event)
		s->rtit_ctl_valid |= 1ull << 4;                       /* PwrEvtEn */
	if (tc->pt_ptwrite)
		s->rtit_ctl_valid |= (1ull << 5) | (1ull << 12);     /* FUPonPTW, PTWEn */
	for (uint32_t i = 0; i < s->pt_addr_ranges; i++)
		s->rtit_ctl_valid |= 0xfull << (32 + 4 * i);          /* ADDRn_CFG */

	s->arch_lbr_depth = tc->arch_lbr ? tc->lbr_depth : 0;
	s->rtit_output_mask = 0x7f;
	s->ready = true;
	return 0;
}

static bool canonical(uint64_t v)
{
	return (uint64_t)(((int64_t)(v << 16)) >> 16) == v;
}

/* Does msr exist on this CPU (as the hardware would answer RDMSR)? */
static bool exists(const struct trace_msr_state *s, enum kind k, uint32_t msr)
{
	switch (k) {
	case K_DEBUGCTL:
		return s->intel;
	case K_LBR_SELECT:
		return s->lbr_select_exists;
	case K_LBR_TOS:
		return !s->lbr_arch && s->lbr_depth;
	case K_LBR_STACK:
		if (s->lbr_arch || !s->lbr_depth)
			return false;
		return in(msr, s->lbr_from0, s->lbr_depth) || in(msr, s->lbr_to0, s->lbr_depth) ||
		       (s->lbr_info_exists && in(msr, MSR_LBR_INFO_0, s->lbr_depth));
	case K_ARCH_LBR_CTL:
	case K_ARCH_LBR_DEPTH:
		return s->lbr_arch;
	case K_ARCH_LBR_STACK: {
		uint32_t idx = msr & 0xff;

		/* entries at or past IA32_LBR_DEPTH raise #GP (SDM 3B 18.1.2.3) */
		return s->lbr_arch && idx < s->arch_lbr_depth;
	}
	case K_DS_AREA:
		return s->has_ds;
	case K_PEBS_ENABLE:
		return s->has_pebs;
	case K_RTIT_OUTPUT_BASE:
	case K_RTIT_OUTPUT_MASK:
	case K_RTIT_CTL:
	case K_RTIT_STATUS:
		return s->has_pt;
	case K_RTIT_CR3_MATCH:
		return s->has_pt_cr3;
	case K_RTIT_ADDR:
		return s->has_pt && (msr - MSR_IA32_RTIT_ADDR0_A) / 2 < s->pt_addr_ranges;
	case K_GLOBAL_STATUS:
	case K_GLOBAL_CTRL:
	case K_GLOBAL_OVF_CTRL:
		return s->intel && s->pmu_version >= 2;
	case K_PMC:
		return s->intel && pmc_index(msr) < s->pmu_gp_counters &&
		       (msr < MSR_IA32_A_PMC0 || s->pmc_full_width);
	case K_NONE:
		break;
	}
	return false;
}

uint64_t trace_msr_owned_mask(const struct trace_msr_state *s, uint32_t msr)
{
	switch (kind_of(msr)) {
	case K_DEBUGCTL:
		return debugctl_owned(s->owned);
	case K_LBR_SELECT:
	case K_LBR_TOS:
	case K_LBR_STACK:
	case K_ARCH_LBR_CTL:
	case K_ARCH_LBR_DEPTH:
	case K_ARCH_LBR_STACK:
		return (s->owned & TRACE_OWN_LBR) ? ~0ull : 0;
	case K_DS_AREA:
	case K_PEBS_ENABLE:
		return (s->owned & TRACE_OWN_BTS) ? ~0ull : 0;
	case K_RTIT_OUTPUT_BASE:
	case K_RTIT_OUTPUT_MASK:
	case K_RTIT_CTL:
	case K_RTIT_STATUS:
	case K_RTIT_CR3_MATCH:
	case K_RTIT_ADDR:
		return (s->owned & TRACE_OWN_PT) ? ~0ull : 0;
	case K_GLOBAL_STATUS:
	case K_GLOBAL_OVF_CTRL:
		return status_owned(s->owned);
	case K_GLOBAL_CTRL:
		return (s->owned & TRACE_OWN_PMC) ? 1ull << s->pmc_idx : 0;
	case K_PMC:
		return (s->owned & TRACE_OWN_PMC) && pmc_index(msr) == s->pmc_idx ? ~0ull : 0;
	case K_NONE:
		break;
	}
	return 0;
}

/* The shadow of a whole-MSR value, or NULL (stack entries, STATUS). */
static uint64_t *shadow_of(struct trace_msr_state *s, enum kind k, uint32_t msr)
{
	switch (k) {
	case K_DEBUGCTL: return &s->debugctl;
	case K_LBR_SELECT: return &s->lbr_select;
	case K_LBR_TOS: return &s->lbr_tos;
	case K_ARCH_LBR_CTL: return &s->arch_lbr_ctl;
	case K_ARCH_LBR_DEPTH: return &s->arch_lbr_depth;
	case K_DS_AREA: return &s->ds_area;
	case K_PEBS_ENABLE: return &s->pebs_enable;
	case K_RTIT_OUTPUT_BASE: return &s->rtit_output_base;
	case K_RTIT_OUTPUT_MASK: return &s->rtit_output_mask;
	case K_RTIT_CTL: return &s->rtit_ctl;
	case K_RTIT_STATUS: return &s->rtit_status;
	case K_RTIT_CR3_MATCH: return &s->rtit_cr3_match;
	case K_RTIT_ADDR: return &s->rtit_addr[(msr - MSR_IA32_RTIT_ADDR0_A) & 7];
	case K_GLOBAL_CTRL: return &s->global_ctrl;
	case K_GLOBAL_OVF_CTRL: return &s->global_ovf_ctrl;
	case K_PMC: return msr >= MSR_IA32_PERFEVTSEL0 && msr < MSR_IA32_A_PMC0 ?
			   &s->pmc_evtsel : &s->pmc_count;
	case K_LBR_STACK:
	case K_ARCH_LBR_STACK:
	case K_GLOBAL_STATUS:
	case K_NONE:
		break;
	}
	return NULL;
}

uint64_t trace_msr_guest_view(const struct trace_msr_state *s, uint32_t msr, uint64_t hw)
{
	uint64_t owned = trace_msr_owned_mask(s, msr);
	enum kind k = kind_of(msr);
	uint64_t shadow = 0;

	if (!owned)
		return hw;
	/* STATUS has no shadow: the owned bits read 0, as if nothing of
	 * ours had ever overflowed or frozen. */
	if (k != K_GLOBAL_STATUS) {
		uint64_t *p = shadow_of((struct trace_msr_state *)s, k, msr);

		shadow = p ? *p : 0;
	}
	return (hw & ~owned) | (shadow & owned);
}

uint64_t trace_msr_hw_value(const struct trace_msr_state *s, uint32_t msr, uint64_t hw_now)
{
	uint64_t owned = trace_msr_owned_mask(s, msr);
	enum kind k = kind_of(msr);
	const uint64_t *p = shadow_of((struct trace_msr_state *)s, k, msr);
	uint64_t guest = p ? *p : 0;

	if (k == K_GLOBAL_OVF_CTRL)
		return guest & ~owned;  /* write 1 to clear: never clear ours */
	return (guest & ~owned) | (hw_now & owned);
}

enum trace_msr_action trace_msr_read(struct trace_msr_state *s, uint32_t msr, uint64_t *val)
{
	enum kind k = kind_of(msr);
	uint64_t owned;
	uint64_t *p;

	*val = 0;
	s->stats.reads++;
	if (k == K_NONE || !exists(s, k, msr)) {
		s->stats.gp++;
		return TRACE_MSR_GP;
	}
	owned = trace_msr_owned_mask(s, msr);
	if (owned != ~0ull)
		return TRACE_MSR_PASS;  /* none or some bits: merge in guest_view */
	if (k == K_LBR_STACK || k == K_ARCH_LBR_STACK)
		return TRACE_MSR_HANDLED;  /* an empty stack: every entry reads 0 */
	p = shadow_of(s, k, msr);
	*val = p ? *p : 0;
	return TRACE_MSR_HANDLED;
}

static enum trace_msr_action gp(struct trace_msr_state *s)
{
	s->stats.gp++;
	return TRACE_MSR_GP;
}

/* Reserved-bit and value checks of a WRMSR, as the hardware makes them. */
static bool write_ok(const struct trace_msr_state *s, enum kind k, uint64_t v)
{
	switch (k) {
	case K_DEBUGCTL:
		return !(v & ~s->debugctl_valid);
	case K_LBR_SELECT:
		return !(v & ~s->lbr_select_valid);
	case K_LBR_TOS:
		/* TOS is log2(depth) bits (recorded 6700K: 5 bits for 32) */
		return !(v & ~(uint64_t)(s->lbr_depth - 1));
	case K_LBR_STACK:
	case K_ARCH_LBR_STACK:
		return true;
	case K_ARCH_LBR_CTL:
		return !(v & ~s->arch_lbr_ctl_valid);
	case K_ARCH_LBR_DEPTH:
		/* a depth CPUID.1CH:EAX[7:0] lists, 8 * (n + 1) (SDM 3B 18.1.2.2) */
		return v && v <= 64 && !(v & 7) && (s->arch_lbr_depth_mask & (1u << (v / 8 - 1)));
	case K_DS_AREA:
		return canonical(v);
	case K_PEBS_ENABLE:
		return !(v & ~s->pebs_valid);
	case K_RTIT_CTL: {
		if (v & ~s->rtit_ctl_valid)
			return false;
		/* ADDRn_CFG: 0 off, 1 filter, 2 stop; others reserved (33.2.8.2) */
		for (uint32_t i = 0; i < 4; i++)
			if (((v >> (32 + 4 * i)) & 0xf) > 2)
				return false;
		/* TraceEn with single-range output the CPU lacks (ToPA=0) */
		if ((v & RTIT_CTL_TRACEEN) && !(v & (1ull << 8)) &&
		    !(s->rtit_ctl_valid & (1ull << 8)))
			return false;
		return true;
	}
	case K_RTIT_OUTPUT_BASE:
		/* bits 6:0 and those above MAXPHYADDR (<= 52) reserved */
		return !(v & 0x7f) && !(v >> 52);
	case K_RTIT_OUTPUT_MASK:
		return true;
	case K_RTIT_STATUS:
		/* FilterEn, ContextEn, TriggerEn, Error, Stopped, PendPSB,
		 * PendTopaPMI, PacketByteCnt 48:32 (Table 33-7) */
		return !(v & ~0x0001ffff000000f7ull);
	case K_RTIT_CR3_MATCH:
		return !(v & 0x1f);
	case K_RTIT_ADDR:
		return canonical(v);
	case K_GLOBAL_CTRL:
		return !(v & ~s->global_ctrl_valid);
	case K_GLOBAL_OVF_CTRL:
		return !(v & ~s->global_status_valid);
	case K_PMC:
		/* IA32_PERFEVTSELx: 63:32 reserved (before perfmon v5's
		 * extensions); the counters take any value (cut to the width) */
		return true;
	case K_GLOBAL_STATUS:
	case K_NONE:
		break;
	}
	return false;
}

enum trace_msr_action trace_msr_write(struct trace_msr_state *s, uint32_t msr, uint64_t val)
{
	enum kind k = kind_of(msr);
	uint64_t owned;
	uint64_t *p;

	s->stats.writes++;
	if (k == K_NONE || !exists(s, k, msr))
		return gp(s);
	if (k == K_GLOBAL_STATUS)
		return gp(s);  /* read-only (SDM 3B 20.2.2): WRMSR faults */
	if (!write_ok(s, k, val))
		return gp(s);
	/* RTIT MSRs other than CTL cannot change while TraceEn = 1 (33.2.8.x) */
	if ((k == K_RTIT_OUTPUT_BASE || k == K_RTIT_OUTPUT_MASK || k == K_RTIT_STATUS ||
	     k == K_RTIT_CR3_MATCH || k == K_RTIT_ADDR) &&
	    (s->owned & TRACE_OWN_PT) && (s->rtit_ctl & RTIT_CTL_TRACEEN))
		return gp(s);
	if (k == K_RTIT_OUTPUT_MASK)
		val |= 0x7f;  /* LowerMask bits 6:0 read as 1 */
	if (k == K_PMC && msr >= MSR_IA32_PERFEVTSEL0 && msr < MSR_IA32_A_PMC0 && (val >> 32))
		return gp(s);
	if (k == K_PMC && msr < MSR_IA32_PERFEVTSEL0)
		val = (uint64_t)(int64_t)(int32_t)val & 0xffffffffffffull;  /* legacy: sign-extended */
	else if (k == K_PMC && msr >= MSR_IA32_A_PMC0)
		val &= 0xffffffffffffull;
	owned = trace_msr_owned_mask(s, msr);
	p = shadow_of(s, k, msr);
	if (p)
		*p = val;
	if (owned)
		s->stats.shadowed++;
	return owned == ~0ull ? TRACE_MSR_HANDLED : TRACE_MSR_PASS;
}

struct trace_msr_state *trace_msr_state_of(struct per_cpu *cpu)
{
	struct trace_msr_state *s;

	if (!cpu || cpu->index >= TRACE_MSR_MAX_CPUS)
		return NULL;
	s = &slots[cpu->index];
	if (!s->ready) {
		struct trace_caps tc;

		trace_caps_read(&tc, NULL);
		trace_msr_init(s, &tc, configured_backend);
	}
	return s;
}
