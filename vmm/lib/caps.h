/* SPDX-License-Identifier: MIT */
/*
 * caps.h - what this CPU offers for tracing, read from CPUID only.
 *
 * CPUID is the only trustworthy source before touching MSRs: QEMU TCG and
 * Bochs read unknown trace MSRs as 0 and drop writes without #GP, so "did
 * the MSR fault" tells nothing.  Bit positions follow SDM Vol. 2A (CPUID)
 * and Vol. 3B ch. 33 (leaf 0x14) and the arch-LBR leaf 0x1C.
 */
#ifndef TV_CAPS_H
#define TV_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CPUID.01H:ECX / EDX */
#define CPUID_1_ECX_DTES64   (1u << 2)
#define CPUID_1_ECX_DS_CPL   (1u << 4)
#define CPUID_1_ECX_VMX      (1u << 5)
#define CPUID_1_ECX_SMX      (1u << 6)
#define CPUID_1_ECX_PDCM     (1u << 15)
#define CPUID_1_ECX_HYPERVISOR (1u << 31)
#define CPUID_1_EDX_DS       (1u << 21)
/* CPUID.(EAX=07H,ECX=0) */
#define CPUID_7_EBX_PT       (1u << 25)
#define CPUID_7_EDX_ARCH_LBR (1u << 19)
/* CPUID.80000001H:ECX */
#define CPUID_80000001_ECX_SVM (1u << 2)
/* CPUID.80000007H:EDX */
#define CPUID_80000007_EDX_INVARIANT_TSC (1u << 8)

/* CPUID.(EAX=14H,ECX=0):EBX */
#define PT_EBX_CR3_FILTER     (1u << 0)
#define PT_EBX_PSB_CYC        (1u << 1)
#define PT_EBX_IP_FILTER      (1u << 2)
#define PT_EBX_MTC            (1u << 3)
#define PT_EBX_PTWRITE        (1u << 4)
#define PT_EBX_POWER_EVENT    (1u << 5)
/* CPUID.(EAX=14H,ECX=0):ECX */
#define PT_ECX_TOPA           (1u << 0)
#define PT_ECX_TOPA_MULTI     (1u << 1)
#define PT_ECX_SINGLE_RANGE   (1u << 2)
#define PT_ECX_TRANSPORT      (1u << 3)
#define PT_ECX_LIP            (1u << 31)

enum cpu_vendor { CPU_VENDOR_OTHER, CPU_VENDOR_INTEL, CPU_VENDOR_AMD };

struct cpu_caps {
	char vendor[13];
	char brand[49];
	enum cpu_vendor vendor_id;
	uint32_t max_leaf, max_ext_leaf;
	uint32_t family, model, stepping;  /* display values (SDM 2A CPUID.01H) */
	uint32_t signature;                /* raw CPUID.01H:EAX */

	bool vmx, smx, svm, hypervisor, invariant_tsc;
	bool ds, dtes64, ds_cpl, pdcm;     /* DS save area / BTS, PERF_CAPABILITIES */

	bool arch_lbr;
	uint32_t arch_lbr_depth_mask;      /* bit n: depth 8*(n+1) supported */
	uint32_t arch_lbr_max_depth;
	bool arch_lbr_cpl_filter, arch_lbr_branch_filter, arch_lbr_call_stack;
	bool arch_lbr_mispredict, arch_lbr_timed, arch_lbr_branch_type;

	bool pt;
	uint32_t pt_ebx, pt_ecx;           /* leaf 0x14 sub-leaf 0 */
	uint32_t pt_addr_ranges;           /* sub-leaf 1 EAX[2:0] */
	uint32_t pt_mtc_periods;           /* sub-leaf 1 EAX[31:16] bitmap */
	uint32_t pt_cyc_thresholds;        /* sub-leaf 1 EBX[15:0] bitmap */
	uint32_t pt_psb_freqs;             /* sub-leaf 1 EBX[31:16] bitmap */
};

/* caps_read - fill *caps from CPUID on the calling CPU (via the hw seam). */
void caps_read(struct cpu_caps *caps);

/* caps_vendor_signature family/model decoding of a raw CPUID.01H:EAX. */
void caps_decode_signature(uint32_t eax, enum cpu_vendor vendor,
			   uint32_t *family, uint32_t *model, uint32_t *stepping);

/*
 * caps_describe_pt - one-line summary of the PT features into buf
 * ("ToPA multi-entry, single-range, 2 address ranges, CR3 filter, ...").
 * Returns the length written (snprintf semantics).
 */
int caps_describe_pt(const struct cpu_caps *caps, char *buf, size_t len);

/* caps_log - the capability part of the banner, at info. */
void caps_log(const struct cpu_caps *caps);

#endif /* TV_CAPS_H */
