/* SPDX-License-Identifier: MIT */
/*
 * vmx_caps.h - VMX capability MSRs and what follows from them: allowed
 * control settings, CR0/CR4 fixed bits, EPT/VPID features.  Pure logic
 * over MSR values (read through the hw seam), tested on the host.
 */
#ifndef TV_VMX_CAPS_H
#define TV_VMX_CAPS_H

#include <stdbool.h>
#include <stdint.h>

struct vmx_caps {
	uint64_t basic;
	bool true_ctls;                 /* IA32_VMX_BASIC[55]: use the TRUE_* MSRs */
	uint64_t pin, proc, proc2, exit, entry;  /* the capability MSR for each */
	uint64_t misc;
	uint64_t cr0_fixed0, cr0_fixed1, cr4_fixed0, cr4_fixed1;
	uint64_t ept_vpid;              /* 0 when neither EPT nor VPID may be set */
	uint64_t vmfunc;
};

/* vmx_caps_read - read every VMX capability MSR of the calling CPU. */
void vmx_caps_read(struct vmx_caps *c);

/*
 * vmx_adjust_controls - the control value to use (SDM 3C A.3-A.5): bits
 * in the MSR's low half must be 1, bits clear in its high half must be 0.
 * want: the bits we ask for.  *missing receives the wanted bits the CPU
 * cannot set (0 when all are available).
 */
uint32_t vmx_adjust_controls(uint64_t cap_msr, uint32_t want, uint32_t *missing);

/* vmx_control_allowed - may this bit be 1? (high half of the MSR) */
static inline bool vmx_control_allowed(uint64_t cap_msr, uint32_t bit)
{
	return ((cap_msr >> 32) & bit) == bit;
}

/*
 * vmx_fix_cr - apply IA32_VMX_CRx_FIXED0/1 (A.7, A.8): bits set in fixed0
 * forced to 1, bits clear in fixed1 forced to 0.  For CR0 with
 * unrestricted guest, PE (bit 0) and PG (bit 31) may stay as they are
 * (26.3.1.1): pass unrestricted = true.
 */
uint64_t vmx_fix_cr0(const struct vmx_caps *c, uint64_t cr0, bool unrestricted);
uint64_t vmx_fix_cr4(const struct vmx_caps *c, uint64_t cr4);

/* IA32_VMX_EPT_VPID_CAP bits (A.10). */
#define EPT_CAP_EXEC_ONLY      (1ull << 0)
#define EPT_CAP_PWL4           (1ull << 6)
#define EPT_CAP_PWL5           (1ull << 7)
#define EPT_CAP_MEMTYPE_UC     (1ull << 8)
#define EPT_CAP_MEMTYPE_WB     (1ull << 14)
#define EPT_CAP_PDE_2MB        (1ull << 16)
#define EPT_CAP_PDPTE_1GB      (1ull << 17)
#define EPT_CAP_INVEPT         (1ull << 20)
#define EPT_CAP_ACCESSED_DIRTY (1ull << 21)
#define EPT_CAP_INVEPT_SINGLE  (1ull << 25)
#define EPT_CAP_INVEPT_ALL     (1ull << 26)
#define VPID_CAP_INVVPID       (1ull << 32)
#define VPID_CAP_INVVPID_ADDR  (1ull << 40)
#define VPID_CAP_INVVPID_SINGLE (1ull << 41)
#define VPID_CAP_INVVPID_ALL   (1ull << 42)

/*
 * vmx_instruction_error_text - the SDM 3C 31.4 text for a
 * VM-instruction error number, or "unknown VM-instruction error".
 */
const char *vmx_instruction_error_text(uint32_t err);

#endif /* TV_VMX_CAPS_H */
