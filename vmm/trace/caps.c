/* SPDX-License-Identifier: MIT */
/*
 * trace_caps.c - per-CPU tracing capabilities and the choice of backend.
 *
 * SDM references (Intel SDM, order number 325462):
 *  - VMX capability MSRs and allowed-1 settings: 3D App. A.2-A.6; the
 *    TRUE_* MSRs apply when IA32_VMX_BASIC[55] = 1 (A.1).
 *  - "monitor trap flag": primary processor-based control 27 (3C 25.6.2).
 *  - "save/load debug controls": VM-exit control 2, VM-entry control 2
 *    (3C 25.7.1, 25.8.1); VM exit clears IA32_DEBUGCTL (3C 28.5.1).
 *  - PT: CPUID.(7,0):EBX[25] and leaf 14H (3C 33.3); PT in VMX operation
 *    needs IA32_VMX_MISC[14] (3D A.6); "load IA32_RTIT_CTL" is VM-entry
 *    control 18, "clear IA32_RTIT_CTL" VM-exit control 25 (3C 25.7.1,
 *    25.8.1, 33.5.2.x).
 *  - BTS: CPUID.1:EDX[21] DS, CPUID.1:ECX[2] DTES64, IA32_MISC_ENABLE[11]
 *    "BTS unavailable" (3B 18.4.5, 18.6.8.1; Vol. 4 Table 2-2).
 *  - LBR: PDCM CPUID.1:ECX[15] -> IA32_PERF_CAPABILITIES[5:0] format
 *    (3B 18.4.8.1); arch LBR CPUID.(7,0):EDX[19] and leaf 1CH (3B 18.1.3);
 *    per-model stack depth and addresses (3B 18.4.8, 18.5-18.13; Vol. 4).
 *  - Architectural PMU: CPUID.0AH (3B 20.2).
 */
#include "vmm/trace/caps.h"
#include "vmm/trace/backend.h"

#include <stdio.h>
#include <string.h>

#include "vmm/hw/hw.h"
#include "vmm/hw/msr.h"
#include "vmm/vmx/vmx_caps.h"
#include "vmm/vmx/vmx_defs.h"

/*
 * Legacy LBR stacks by family 6 model.  From SDM 3B 18.4.8 and the
 * per-model chapters (18.5 Core 2 / Atom, 18.6 Nehalem, 18.9 Sandy Bridge,
 * 18.11 Haswell, 18.12 Broadwell, 18.13 Skylake), cross-checked with the
 * recorded MSR lists of a Core 2 X6800 (0x40-0x43 / 0x60-0x63) and an
 * i7-6700K (LBR_SELECT, TOS with 5 bits) in VirtualBox's CPU database.
 * Models not listed (Tremont, Xeon Phi, anything new without arch LBR)
 * give depth 0: no legacy LBR backend there until they are added.
 */
struct caps_lbr_model {
	uint8_t model;
	uint8_t depth;
	bool select;
};

static const struct caps_lbr_model caps_lbr_models[] = {
	/* Core 2 (Merom, Penryn, Dunnington): 4 entries at 0x40/0x60 */
	{ 0x0f, 4, false }, { 0x16, 4, false }, { 0x17, 4, false }, { 0x1d, 4, false },
	/* Bonnell/Saltwell Atom: 8 at 0x40/0x60 */
	{ 0x1c, 8, false }, { 0x26, 8, false }, { 0x27, 8, false }, { 0x35, 8, false },
	{ 0x36, 8, false },
	/* Silvermont/Airmont: 8 at 0x40/0x60, LBR_SELECT */
	{ 0x37, 8, true }, { 0x4a, 8, true }, { 0x4c, 8, true }, { 0x4d, 8, true },
	{ 0x5a, 8, true }, { 0x5d, 8, true },
	/* Nehalem, Westmere: 16 at 0x680/0x6c0 */
	{ 0x1a, 16, true }, { 0x1e, 16, true }, { 0x1f, 16, true }, { 0x2e, 16, true },
	{ 0x25, 16, true }, { 0x2c, 16, true }, { 0x2f, 16, true },
	/* Sandy Bridge, Ivy Bridge */
	{ 0x2a, 16, true }, { 0x2d, 16, true }, { 0x3a, 16, true }, { 0x3e, 16, true },
	/* Haswell, Broadwell */
	{ 0x3c, 16, true }, { 0x3f, 16, true }, { 0x45, 16, true }, { 0x46, 16, true },
	{ 0x3d, 16, true }, { 0x47, 16, true }, { 0x4f, 16, true }, { 0x56, 16, true },
	/* Goldmont, Goldmont Plus: 32 */
	{ 0x5c, 32, true }, { 0x5f, 32, true }, { 0x7a, 32, true },
	/* Skylake, Kaby/Coffee/Comet Lake, Cannon/Ice/Tiger/Rocket Lake, Skylake-SP,
	 * Ice Lake-SP/D: 32 at 0x680/0x6c0 with LBR_INFO at 0xdc0 (format 5) */
	{ 0x4e, 32, true }, { 0x5e, 32, true }, { 0x55, 32, true }, { 0x8e, 32, true },
	{ 0x9e, 32, true }, { 0xa5, 32, true }, { 0xa6, 32, true }, { 0x66, 32, true },
	{ 0x7d, 32, true }, { 0x7e, 32, true }, { 0x6a, 32, true }, { 0x6c, 32, true },
	{ 0x8c, 32, true }, { 0x8d, 32, true }, { 0xa7, 32, true },
};

uint32_t trace_caps_lbr_model_depth(uint32_t family, uint32_t model,
				    uint32_t *from0, uint32_t *to0, bool *has_select)
{
	if (from0)
		*from0 = 0;
	if (to0)
		*to0 = 0;
	if (has_select)
		*has_select = false;
	if (family != 6)
		return 0;
	for (size_t i = 0; i < sizeof(caps_lbr_models) / sizeof(caps_lbr_models[0]); i++) {
		const struct caps_lbr_model *m = &caps_lbr_models[i];

		if (m->model != model)
			continue;
		if (from0)
			*from0 = m->depth >= 16 ? MSR_LBR_NHM_FROM_0 : MSR_LBR_CORE_FROM_0;
		if (to0)
			*to0 = m->depth >= 16 ? MSR_LBR_NHM_TO_0 : MSR_LBR_CORE_TO_0;
		if (has_select)
			*has_select = m->select;
		return m->depth;
	}
	return 0;
}

void trace_caps_read(struct trace_caps *tc, struct trace_caps_raw *raw_out)
{
	struct trace_caps_raw raw;

	memset(&raw, 0, sizeof(raw));
	caps_read(&raw.cpu);
	if (raw.cpu.max_leaf >= 0xa) {
		struct hw_cpuid_regs r;

		hw_cpuid(0xa, 0, &r);
		raw.pmu_leaf_a_eax = r.eax;
		raw.pmu_leaf_a_edx = r.edx;
	}
	if (raw.cpu.vendor_id == CPU_VENDOR_INTEL && raw.cpu.vmx) {
		/* SDM 3D A.1: the VMX capability MSRs exist when CPUID.1:ECX.VMX = 1;
		 * the TRUE_* ones only when IA32_VMX_BASIC[55] = 1. */
		raw.vmx_basic = hw_rdmsr(MSR_IA32_VMX_BASIC);
		raw.vmx_procbased = hw_rdmsr(MSR_IA32_VMX_PROCBASED_CTLS);
		raw.vmx_exit = hw_rdmsr(MSR_IA32_VMX_EXIT_CTLS);
		raw.vmx_entry = hw_rdmsr(MSR_IA32_VMX_ENTRY_CTLS);
		raw.vmx_misc = hw_rdmsr(MSR_IA32_VMX_MISC);
		if (raw.vmx_basic & VMX_BASIC_TRUE_CTLS) {
			raw.vmx_true_procbased = hw_rdmsr(MSR_IA32_VMX_TRUE_PROCBASED_CTLS);
			raw.vmx_true_exit = hw_rdmsr(MSR_IA32_VMX_TRUE_EXIT_CTLS);
			raw.vmx_true_entry = hw_rdmsr(MSR_IA32_VMX_TRUE_ENTRY_CTLS);
		}
		raw.have_vmx_msrs = true;
	}
	if (raw.cpu.vendor_id == CPU_VENDOR_INTEL &&
	    (raw.cpu.family == 6 || raw.cpu.family == 0xf)) {
		uint64_t saved, back;

		/* Architectural since the Pentium 4 / family 6 (Vol. 4 Table 2-2). */
		raw.misc_enable = hw_rdmsr(MSR_IA32_MISC_ENABLE);
		raw.have_misc_enable = true;
		if (raw.cpu.pdcm)
			raw.perf_capabilities = hw_rdmsr(MSR_IA32_PERF_CAPABILITIES);
		/*
		 * The probe uses BTF: it exists on every family 6/15 part, arch
		 * LBR ones included (where DEBUGCTL.LBR is no longer the enable),
		 * and does nothing while RFLAGS.TF = 0 (SDM 3B 18.4.3).
		 */
		saved = hw_rdmsr(MSR_IA32_DEBUGCTL);
		hw_wrmsr(MSR_IA32_DEBUGCTL, saved | DEBUGCTL_BTF);
		back = hw_rdmsr(MSR_IA32_DEBUGCTL);
		hw_wrmsr(MSR_IA32_DEBUGCTL, saved);
		raw.debugctl_works = (back & DEBUGCTL_BTF) != 0;
	}
	trace_caps_decode(tc, &raw);
	if (raw_out)
		*raw_out = raw;
}

void trace_caps_decode(struct trace_caps *tc, const struct trace_caps_raw *raw)
{
	const struct cpu_caps *c = &raw->cpu;
	uint64_t proc, exit_ctls, entry;
	uint32_t edx_fixed;

	memset(tc, 0, sizeof(*tc));
	tc->family = c->family;
	tc->model = c->model;
	tc->intel = c->vendor_id == CPU_VENDOR_INTEL;

	/* VMX */
	tc->vmx = tc->intel && c->vmx && raw->have_vmx_msrs;
	tc->true_ctls = (raw->vmx_basic & VMX_BASIC_TRUE_CTLS) != 0;
	proc = tc->true_ctls ? raw->vmx_true_procbased : raw->vmx_procbased;
	exit_ctls = tc->true_ctls ? raw->vmx_true_exit : raw->vmx_exit;
	entry = tc->true_ctls ? raw->vmx_true_entry : raw->vmx_entry;
	if (tc->vmx) {
		tc->entry_load_debug = vmx_control_allowed(entry, ENTRY_LOAD_DEBUG_CONTROLS);
		tc->exit_save_debug = vmx_control_allowed(exit_ctls, EXIT_SAVE_DEBUG_CONTROLS);
		tc->mtf = vmx_control_allowed(proc, CPU_MONITOR_TRAP_FLAG);
		tc->pt_vmx = (raw->vmx_misc & VMX_MISC_PT_IN_VMX) != 0;
		tc->pt_entry_load_rtit = vmx_control_allowed(entry, ENTRY_LOAD_RTIT_CTL);
		tc->pt_exit_clear_rtit = vmx_control_allowed(exit_ctls, EXIT_CLEAR_RTIT_CTL);
		tc->lbr_entry_load_ctl = vmx_control_allowed(entry, ENTRY_LOAD_LBR_CTL);
		tc->lbr_exit_clear_ctl = vmx_control_allowed(exit_ctls, EXIT_CLEAR_LBR_CTL);
	}

	/* PT: caps_read() already dropped the bit when leaf 0x14 is missing */
	tc->pt_cpuid = tc->intel && c->pt;
	if (tc->pt_cpuid) {
		tc->pt_topa = c->pt_ecx & PT_ECX_TOPA;
		tc->pt_topa_multi = c->pt_ecx & PT_ECX_TOPA_MULTI;
		tc->pt_single_range = c->pt_ecx & PT_ECX_SINGLE_RANGE;
		tc->pt_cr3_filter = c->pt_ebx & PT_EBX_CR3_FILTER;
		tc->pt_ip_filter = c->pt_ebx & PT_EBX_IP_FILTER;
		tc->pt_mtc = c->pt_ebx & PT_EBX_MTC;
		tc->pt_psb_cyc = c->pt_ebx & PT_EBX_PSB_CYC;
		tc->pt_ptwrite = c->pt_ebx & PT_EBX_PTWRITE;
		tc->pt_power_event = c->pt_ebx & PT_EBX_POWER_EVENT;
		tc->pt_addr_ranges = c->pt_addr_ranges;
	}
	tc->pt = tc->vmx && tc->pt_cpuid && tc->pt_topa && tc->pt_vmx &&
		 tc->pt_entry_load_rtit && tc->pt_exit_clear_rtit;

	/* BTS */
	tc->ds = tc->intel && c->ds;
	tc->dtes64 = c->dtes64;
	tc->ds_cpl = c->ds_cpl;
	tc->debugctl_works = raw->debugctl_works;
	tc->bts_unavailable = !raw->have_misc_enable ||
			      (raw->misc_enable & MISC_ENABLE_BTS_UNAVAILABLE);
	tc->pebs_unavailable = !raw->have_misc_enable ||
			       (raw->misc_enable & MISC_ENABLE_PEBS_UNAVAILABLE);
	tc->bts = tc->vmx && tc->ds && tc->dtes64 && !tc->bts_unavailable &&
		  tc->debugctl_works && tc->entry_load_debug && tc->exit_save_debug;

	/* LBR */
	tc->pdcm = tc->intel && c->pdcm;
	tc->perf_capabilities = tc->pdcm ? raw->perf_capabilities : 0;
	tc->arch_lbr = tc->intel && c->arch_lbr && c->arch_lbr_max_depth > 0;
	if (tc->arch_lbr) {
		tc->lbr_format = LBR_FORMAT_ARCH;
		tc->arch_lbr_depth_mask = c->arch_lbr_depth_mask;
		tc->lbr_depth = c->arch_lbr_max_depth;
		tc->lbr_info = true;
		tc->lbr_from0 = MSR_IA32_LBR_0_FROM_IP;
		tc->lbr_to0 = MSR_IA32_LBR_0_TO_IP;
	} else if (tc->pdcm) {
		tc->lbr_format = (uint32_t)(tc->perf_capabilities & 0x3f);
		if (tc->lbr_format != LBR_FORMAT_ARCH)
			tc->lbr_depth = trace_caps_lbr_model_depth(c->family, c->model,
								   &tc->lbr_from0, &tc->lbr_to0,
								   &tc->lbr_select);
		tc->lbr_info = tc->lbr_depth &&
			       (tc->lbr_format == LBR_FORMAT_INFO || tc->lbr_format == LBR_FORMAT_INFO2);
	}
	tc->lbr = tc->vmx && tc->lbr_depth > 0 && tc->debugctl_works &&
		  tc->entry_load_debug && tc->exit_save_debug &&
		  (!tc->arch_lbr || (tc->lbr_entry_load_ctl && tc->lbr_exit_clear_ctl));
	tc->btf = tc->lbr;

	/* architectural PMU (SDM 3B 20.2.1-20.2.5) */
	if (tc->intel) {
		tc->pmu_version = raw->pmu_leaf_a_eax & 0xff;
		tc->pmu_gp_counters = (raw->pmu_leaf_a_eax >> 8) & 0xff;
		edx_fixed = tc->pmu_version > 1 ? raw->pmu_leaf_a_edx & 0x1f : 0;
		/*
		 * Core 2 reports 0 fixed counters in CPUID.0AH:EDX (recorded
		 * X6800: EDX = 0) but has 3 (SDM 3B 20.2.2); assume 3 for
		 * versions 2-4 on bare metal, as Linux does.
		 */
		if (tc->pmu_version >= 2 && tc->pmu_version <= 4 && !c->hypervisor &&
		    edx_fixed < 3)
			edx_fixed = 3;
		tc->pmu_fixed_counters = edx_fixed;
		tc->perf_metrics = (tc->perf_capabilities >> 15) & 1;
	}
}

const char *trace_caps_source_name(enum tv_source s)
{
	const char *name = tv_source_name(s);

	if (s == TV_SOURCE_NONE)
		return "auto";
	return name ? name : "?";
}

/* Append ", text" (or "text" first) to buf at *n; snprintf semantics. */
static void add(char *buf, size_t len, size_t *n, const char *text)
{
	int w = snprintf(*n < len ? buf + *n : NULL, *n < len ? len - *n : 0, "%s%s",
			 *n ? ", " : "", text);

	if (w > 0)
		*n += (size_t)w;
}

static void missing_common(const struct trace_caps *tc, char *buf, size_t len, size_t *n)
{
	if (!tc->intel)
		add(buf, len, n, "an Intel CPU");
	else if (!tc->vmx)
		add(buf, len, n, "VMX (CPUID.1:ECX[5] and its capability MSRs)");
}

static void missing_debugctl(const struct trace_caps *tc, char *buf, size_t len, size_t *n)
{
	if (!tc->vmx)
		return;
	if (!tc->entry_load_debug)
		add(buf, len, n, "VM-entry control 'load debug controls' (bit 2)");
	if (!tc->exit_save_debug)
		add(buf, len, n, "VM-exit control 'save debug controls' (bit 2)");
	if (!tc->debugctl_works)
		add(buf, len, n, "an IA32_DEBUGCTL that keeps what is written (dropped: an emulator?)");
}

static void missing_lbr(const struct trace_caps *tc, char *buf, size_t len, size_t *n)
{
	char t[96];

	if (tc->arch_lbr) {
		/* SDM 3C 25.7.1, 25.8.1: without them the guest's IA32_LBR_CTL
		 * would record VMX root too, or not be switched at all */
		if (tc->vmx && !tc->lbr_entry_load_ctl)
			add(buf, len, n, "the VM-entry control \"load guest IA32_LBR_CTL\" (arch LBR)");
		if (tc->vmx && !tc->lbr_exit_clear_ctl)
			add(buf, len, n, "the VM-exit control \"clear IA32_LBR_CTL\" (arch LBR)");
		return;
	}
	if (tc->lbr_depth)
		return;
	if (!tc->pdcm) {
		add(buf, len, n, "PDCM (CPUID.1:ECX[15]) for the LBR format, or arch LBR (CPUID.(7,0):EDX[19])");
		return;
	}
	snprintf(t, sizeof(t), "a known LBR stack depth for family %#x model %#x (format %u)",
		 tc->family, tc->model, tc->lbr_format);
	add(buf, len, n, t);
}

int trace_caps_missing(const struct trace_caps *tc, enum tv_source source, char *buf, size_t len)
{
	size_t n = 0;

	if (len)
		buf[0] = '\0';
	missing_common(tc, buf, len, &n);
	switch (source) {
	case TV_SOURCE_PT:
		if (!tc->pt_cpuid)
			add(buf, len, &n, "Intel PT (CPUID.(7,0):EBX[25] with leaf 0x14)");
		else if (!tc->pt_topa)
			add(buf, len, &n, "ToPA output (CPUID.(14H,0):ECX[0])");
		if (tc->vmx && !tc->pt_vmx)
			add(buf, len, &n, "PT in VMX operation (IA32_VMX_MISC[14])");
		if (tc->vmx && !tc->pt_entry_load_rtit)
			add(buf, len, &n, "VM-entry control 'load IA32_RTIT_CTL' (bit 18)");
		if (tc->vmx && !tc->pt_exit_clear_rtit)
			add(buf, len, &n, "VM-exit control 'clear IA32_RTIT_CTL' (bit 25)");
		break;
	case TV_SOURCE_BTS:
		if (!tc->ds)
			add(buf, len, &n, "debug store (CPUID.1:EDX[21] DS)");
		if (tc->ds && !tc->dtes64)
			add(buf, len, &n, "64-bit DS area (CPUID.1:ECX[2] DTES64)");
		if (tc->intel && tc->bts_unavailable)
			add(buf, len, &n, "BTS (IA32_MISC_ENABLE[11] says unavailable)");
		missing_debugctl(tc, buf, len, &n);
		break;
	case TV_SOURCE_LBR:
	case TV_SOURCE_BTF:
		missing_lbr(tc, buf, len, &n);
		missing_debugctl(tc, buf, len, &n);
		break;
	case TV_SOURCE_MTF:
		if (tc->vmx && !tc->mtf)
			add(buf, len, &n, "monitor trap flag (primary processor-based control 27)");
		break;
	default:
		break;   /* TV_SOURCE_NONE, or a backend with nothing beyond VMX to name */
	}
	return (int)n;
}

/* Can this machine trace s?  The backend says (trace_backend.caps_ok). */
static bool can(const struct trace_caps *tc, enum tv_source s)
{
	const struct trace_backend *be = trace_backend_of(s);

	if (!be)
		return false;
	return be->caps_ok ? be->caps_ok(tc) : tc->vmx;
}

int trace_choose(const struct trace_caps *tc, enum tv_source requested,
		 enum tv_source *chosen, char *why, size_t whylen)
{
	static const enum tv_source order[] = {
		TV_SOURCE_PT, TV_SOURCE_BTS, TV_SOURCE_BTF, TV_SOURCE_MTF,
	};
	char miss[256];

	if (why && whylen)
		why[0] = '\0';
	if (!tc || !chosen)
		return TRACE_CAPS_EINVAL;
	if (requested != TV_SOURCE_NONE) {
		if (!trace_backend_of(requested)) {
			if (why && whylen)
				snprintf(why, whylen, "unknown source %d", (int)requested);
			return TRACE_CAPS_EINVAL;
		}
		if (!can(tc, requested)) {
			trace_caps_missing(tc, requested, miss, sizeof(miss));
			if (why && whylen)
				snprintf(why, whylen, "%s: missing %s", trace_caps_source_name(requested),
					 miss[0] ? miss : "?");
			return TRACE_CAPS_EUNSUPPORTED;
		}
		*chosen = requested;
		if (why && whylen)
			snprintf(why, whylen, "%s: as configured", trace_caps_source_name(requested));
		return 0;
	}
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (can(tc, order[i])) {
			*chosen = order[i];
			if (why && whylen) {
				if (i == 0) {
					snprintf(why, whylen, "auto: %s", trace_caps_source_name(order[i]));
				} else {
					/* say why the better one was passed over */
					trace_caps_missing(tc, order[0], miss, sizeof(miss));
					snprintf(why, whylen, "auto: %s (pt: missing %s)",
						 trace_caps_source_name(order[i]), miss);
				}
			}
			return 0;
		}
	}
	trace_caps_missing(tc, TV_SOURCE_MTF, miss, sizeof(miss));
	if (why && whylen)
		snprintf(why, whylen, "auto: no source usable (mtf: missing %s)", miss[0] ? miss : "?");
	return TRACE_CAPS_EUNSUPPORTED;
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

int trace_caps_describe(const struct trace_caps *tc, char *buf, size_t len)
{
	char lbr[64];

	if (tc->arch_lbr)
		snprintf(lbr, sizeof(lbr), "arch, depth %u", tc->lbr_depth);
	else if (tc->pdcm)
		snprintf(lbr, sizeof(lbr), "format %u, depth %u%s", tc->lbr_format, tc->lbr_depth,
			 tc->lbr_depth ? "" : " unknown");
	else
		snprintf(lbr, sizeof(lbr), "no PDCM");
	return snprintf(buf, len,
			"vmx %s%s, debug ctls %s, debugctl %s, mtf %s, pt %s (cpuid %s, topa %s, vmx-misc %s, rtit entry/exit %s/%s), bts %s, lbr %s (%s), btf %s, pmu v%u %u+%u",
			yes_no(tc->vmx), tc->true_ctls ? " (true ctls)" : "",
			yes_no(tc->entry_load_debug && tc->exit_save_debug), tc->debugctl_works ? "ok" : "dead",
			yes_no(tc->vmx && tc->mtf), yes_no(tc->pt), yes_no(tc->pt_cpuid), yes_no(tc->pt_topa),
			yes_no(tc->pt_vmx), yes_no(tc->pt_entry_load_rtit), yes_no(tc->pt_exit_clear_rtit),
			yes_no(tc->bts), yes_no(tc->lbr), lbr, yes_no(tc->btf), tc->pmu_version,
			tc->pmu_gp_counters, tc->pmu_fixed_counters);
}
