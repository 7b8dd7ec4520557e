/* SPDX-License-Identifier: MIT */
/*
 * caps.c - CPUID decoding of the tracing capabilities.
 */
#include "vmm/lib/caps.h"

#include <stdio.h>
#include <string.h>

#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"

void caps_decode_signature(uint32_t eax, enum cpu_vendor vendor,
			   uint32_t *family, uint32_t *model, uint32_t *stepping)
{
	uint32_t base_family = (eax >> 8) & 0xf;
	uint32_t base_model = (eax >> 4) & 0xf;

	*stepping = eax & 0xf;
	*family = base_family;
	if (base_family == 0xf)
		*family += (eax >> 20) & 0xff;
	*model = base_model;
	/*
	 * SDM 2A CPUID: extended model applies for family 6 or 15 on Intel;
	 * AMD's APM applies it for base family 15 only.
	 */
	if (base_family == 0xf || (base_family == 6 && vendor != CPU_VENDOR_AMD))
		*model |= ((eax >> 16) & 0xf) << 4;
}

static void copy_regs_str(char *dst, const uint32_t *regs, int n)
{
	memcpy(dst, regs, (size_t)n * 4);
	dst[n * 4] = '\0';
}

void caps_read(struct cpu_caps *c)
{
	struct hw_cpuid_regs r;
	uint32_t v[3];

	memset(c, 0, sizeof(*c));
	hw_cpuid(0, 0, &r);
	c->max_leaf = r.eax;
	v[0] = r.ebx;
	v[1] = r.edx;
	v[2] = r.ecx;
	copy_regs_str(c->vendor, v, 3);
	if (!strcmp(c->vendor, "GenuineIntel"))
		c->vendor_id = CPU_VENDOR_INTEL;
	else if (!strcmp(c->vendor, "AuthenticAMD"))
		c->vendor_id = CPU_VENDOR_AMD;

	if (c->max_leaf >= 1) {
		hw_cpuid(1, 0, &r);
		c->signature = r.eax;
		caps_decode_signature(r.eax, c->vendor_id, &c->family, &c->model,
				      &c->stepping);
		c->vmx = r.ecx & CPUID_1_ECX_VMX;
		c->smx = r.ecx & CPUID_1_ECX_SMX;
		c->dtes64 = r.ecx & CPUID_1_ECX_DTES64;
		c->ds_cpl = r.ecx & CPUID_1_ECX_DS_CPL;
		c->pdcm = r.ecx & CPUID_1_ECX_PDCM;
		c->hypervisor = r.ecx & CPUID_1_ECX_HYPERVISOR;
		c->ds = r.edx & CPUID_1_EDX_DS;
	}
	if (c->max_leaf >= 7) {
		hw_cpuid(7, 0, &r);
		c->pt = r.ebx & CPUID_7_EBX_PT;
		c->arch_lbr = r.edx & CPUID_7_EDX_ARCH_LBR;
	}
	if (c->pt && c->max_leaf >= 0x14) {
		uint32_t max_sub;

		hw_cpuid(0x14, 0, &r);
		max_sub = r.eax;
		c->pt_ebx = r.ebx;
		c->pt_ecx = r.ecx;
		if (max_sub >= 1) {
			hw_cpuid(0x14, 1, &r);
			c->pt_addr_ranges = r.eax & 0x7;
			c->pt_mtc_periods = r.eax >> 16;
			c->pt_cyc_thresholds = r.ebx & 0xffff;
			c->pt_psb_freqs = r.ebx >> 16;
		}
	} else {
		c->pt = false;  /* the feature bit without its leaf is unusable */
	}
	if (c->arch_lbr && c->max_leaf >= 0x1c) {
		hw_cpuid(0x1c, 0, &r);
		c->arch_lbr_depth_mask = r.eax & 0xff;
		for (int n = 7; n >= 0; n--) {
			if (c->arch_lbr_depth_mask & (1u << n)) {
				c->arch_lbr_max_depth = 8u * (uint32_t)(n + 1);
				break;
			}
		}
		c->arch_lbr_cpl_filter = r.ebx & (1u << 0);
		c->arch_lbr_branch_filter = r.ebx & (1u << 1);
		c->arch_lbr_call_stack = r.ebx & (1u << 2);
		c->arch_lbr_mispredict = r.ecx & (1u << 0);
		c->arch_lbr_timed = r.ecx & (1u << 1);
		c->arch_lbr_branch_type = r.ecx & (1u << 2);
	} else {
		c->arch_lbr = false;
	}

	hw_cpuid(0x80000000u, 0, &r);
	c->max_ext_leaf = r.eax >= 0x80000000u && r.eax < 0x8000ffffu ? r.eax : 0;
	if (c->max_ext_leaf >= 0x80000001u) {
		hw_cpuid(0x80000001u, 0, &r);
		c->svm = r.ecx & CPUID_80000001_ECX_SVM;
	}
	if (c->max_ext_leaf >= 0x80000004u) {
		uint32_t b[12];
		char *p;

		for (uint32_t i = 0; i < 3; i++) {
			hw_cpuid(0x80000002u + i, 0, &r);
			b[i * 4 + 0] = r.eax;
			b[i * 4 + 1] = r.ebx;
			b[i * 4 + 2] = r.ecx;
			b[i * 4 + 3] = r.edx;
		}
		copy_regs_str(c->brand, b, 12);
		p = c->brand;
		while (*p == ' ')
			p++;
		memmove(c->brand, p, strlen(p) + 1);
	}
	if (c->max_ext_leaf >= 0x80000007u) {
		hw_cpuid(0x80000007u, 0, &r);
		c->invariant_tsc = r.edx & CPUID_80000007_EDX_INVARIANT_TSC;
	}
}

int caps_describe_pt(const struct cpu_caps *c, char *buf, size_t len)
{
	static const struct {
		int ecx;
		uint32_t bit;
		const char *name;
	} f[] = {
		{ 1, PT_ECX_TOPA, "ToPA" },
		{ 1, PT_ECX_TOPA_MULTI, "ToPA multi-entry" },
		{ 1, PT_ECX_SINGLE_RANGE, "single-range" },
		{ 1, PT_ECX_TRANSPORT, "transport" },
		{ 0, PT_EBX_CR3_FILTER, "CR3 filter" },
		{ 0, PT_EBX_IP_FILTER, "IP filter" },
		{ 0, PT_EBX_MTC, "MTC" },
		{ 0, PT_EBX_PSB_CYC, "PSB/CYC" },
		{ 0, PT_EBX_PTWRITE, "PTWRITE" },
		{ 0, PT_EBX_POWER_EVENT, "power events" },
		{ 1, PT_ECX_LIP, "LIP" },
	};
	size_t n = 0;
	int w;

	if (!c->pt)
		return snprintf(buf, len, "no");
	w = snprintf(buf, len, "yes (%u address ranges", c->pt_addr_ranges);
	if (w < 0)
		return w;
	n = (size_t)w;
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		uint32_t reg = f[i].ecx ? c->pt_ecx : c->pt_ebx;

		if (!(reg & f[i].bit))
			continue;
		w = snprintf(n < len ? buf + n : NULL, n < len ? len - n : 0, ", %s", f[i].name);
		if (w < 0)
			return w;
		n += (size_t)w;
	}
	w = snprintf(n < len ? buf + n : NULL, n < len ? len - n : 0, ")");
	return w < 0 ? w : (int)(n + (size_t)w);
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

void caps_log(const struct cpu_caps *c)
{
	char pt[200];

	log_info("cpu: %s family %u (%#x) model %u (%#x) stepping %u \"%s\"",
		 c->vendor, c->family, c->family, c->model, c->model, c->stepping,
		 c->brand[0] ? c->brand : "?");
	log_info("caps: VMX %s, SMX %s, DS/BTS %s (DTES64 %s, DS-CPL %s), PDCM %s, hypervisor bit %s",
		 yes_no(c->vmx), yes_no(c->smx), yes_no(c->ds), yes_no(c->dtes64), yes_no(c->ds_cpl),
		 yes_no(c->pdcm), yes_no(c->hypervisor));
	if (c->arch_lbr)
		log_info("caps: arch LBR yes (max depth %u, CPL filter %s, branch filter %s, call stack %s, mispredict %s, timed %s)",
			 c->arch_lbr_max_depth, yes_no(c->arch_lbr_cpl_filter),
			 yes_no(c->arch_lbr_branch_filter), yes_no(c->arch_lbr_call_stack),
			 yes_no(c->arch_lbr_mispredict), yes_no(c->arch_lbr_timed));
	else
		log_info("caps: arch LBR no (model-specific LBR format via PERF_CAPABILITIES%s)",
			 c->pdcm ? "" : ": not readable, no PDCM");
	caps_describe_pt(c, pt, sizeof(pt));
	log_info("caps: Intel PT %s", pt);
	if (c->pt)
		log_info("caps: PT MTC periods %#x, CYC thresholds %#x, PSB frequencies %#x",
			 c->pt_mtc_periods, c->pt_cyc_thresholds, c->pt_psb_freqs);
	log_info("caps: SVM %s, invariant TSC %s", yes_no(c->svm), yes_no(c->invariant_tsc));
}
