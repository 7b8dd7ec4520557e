/* SPDX-License-Identifier: MIT */
/*
 * vmx_caps.c - VMX capability MSR decoding (SDM 3C Appendix A).
 */
#include "vmm/vmx/vmx_caps.h"

#include <string.h>

#include "vmm/hw/hw.h"
#include "vmm/vmx/vmx_defs.h"

void vmx_caps_read(struct vmx_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->basic = hw_rdmsr(MSR_IA32_VMX_BASIC);
	c->true_ctls = (c->basic & VMX_BASIC_TRUE_CTLS) != 0;
	/*
	 * A.2: when BASIC[55] is set the TRUE_* MSRs report the real
	 * default-1 bits; the old MSRs keep reporting them as must-be-1.
	 */
	c->pin = hw_rdmsr(c->true_ctls ? MSR_IA32_VMX_TRUE_PINBASED_CTLS : MSR_IA32_VMX_PINBASED_CTLS);
	c->proc = hw_rdmsr(c->true_ctls ? MSR_IA32_VMX_TRUE_PROCBASED_CTLS : MSR_IA32_VMX_PROCBASED_CTLS);
	c->exit = hw_rdmsr(c->true_ctls ? MSR_IA32_VMX_TRUE_EXIT_CTLS : MSR_IA32_VMX_EXIT_CTLS);
	c->entry = hw_rdmsr(c->true_ctls ? MSR_IA32_VMX_TRUE_ENTRY_CTLS : MSR_IA32_VMX_ENTRY_CTLS);
	c->misc = hw_rdmsr(MSR_IA32_VMX_MISC);
	c->cr0_fixed0 = hw_rdmsr(MSR_IA32_VMX_CR0_FIXED0);
	c->cr0_fixed1 = hw_rdmsr(MSR_IA32_VMX_CR0_FIXED1);
	c->cr4_fixed0 = hw_rdmsr(MSR_IA32_VMX_CR4_FIXED0);
	c->cr4_fixed1 = hw_rdmsr(MSR_IA32_VMX_CR4_FIXED1);
	/* A.3.3: the secondary MSR exists only if its activation bit may be 1. */
	if (vmx_control_allowed(c->proc, CPU_ACTIVATE_SECONDARY_CONTROLS)) {
		c->proc2 = hw_rdmsr(MSR_IA32_VMX_PROCBASED_CTLS2);
		/* A.10: EPT_VPID_CAP exists if EPT or VPID may be enabled. */
		if (vmx_control_allowed(c->proc2, CPU2_ENABLE_EPT) ||
		    vmx_control_allowed(c->proc2, CPU2_ENABLE_VPID))
			c->ept_vpid = hw_rdmsr(MSR_IA32_VMX_EPT_VPID_CAP);
		if (vmx_control_allowed(c->proc2, CPU2_ENABLE_VMFUNC))
			c->vmfunc = hw_rdmsr(MSR_IA32_VMX_VMFUNC);
	}
}

uint32_t vmx_adjust_controls(uint64_t cap_msr, uint32_t want, uint32_t *missing)
{
	uint32_t must1 = (uint32_t)cap_msr;
	uint32_t may1 = (uint32_t)(cap_msr >> 32);

	if (missing)
		*missing = want & ~may1;
	return (want | must1) & may1;
}

uint64_t vmx_fix_cr0(const struct vmx_caps *c, uint64_t cr0, bool unrestricted)
{
	uint64_t fixed0 = c->cr0_fixed0;

	if (unrestricted)
		fixed0 &= ~((1ull << 0) | (1ull << 31));
	return (cr0 | fixed0) & c->cr0_fixed1;
}

uint64_t vmx_fix_cr4(const struct vmx_caps *c, uint64_t cr4)
{
	return (cr4 | c->cr4_fixed0) & c->cr4_fixed1;
}

const char *vmx_instruction_error_text(uint32_t err)
{
	static const char *const text[] = {
		[1] = "VMCALL executed in VMX root operation",
		[2] = "VMCLEAR with invalid physical address",
		[3] = "VMCLEAR with VMXON pointer",
		[4] = "VMLAUNCH with non-clear VMCS",
		[5] = "VMRESUME with non-launched VMCS",
		[6] = "VMRESUME after VMXOFF",
		[7] = "VM entry with invalid control field(s)",
		[8] = "VM entry with invalid host-state field(s)",
		[9] = "VMPTRLD with invalid physical address",
		[10] = "VMPTRLD with VMXON pointer",
		[11] = "VMPTRLD with incorrect VMCS revision identifier",
		[12] = "VMREAD/VMWRITE from/to unsupported VMCS component",
		[13] = "VMWRITE to read-only VMCS component",
		[15] = "VMXON executed in VMX root operation",
		[16] = "VM entry with invalid executive-VMCS pointer",
		[17] = "VM entry with non-launched executive VMCS",
		[18] = "VM entry with executive-VMCS pointer not VMXON pointer",
		[19] = "VMCALL with non-clear VMCS",
		[20] = "VMCALL with invalid VM-exit control fields",
		[22] = "VMCALL with incorrect MSEG revision identifier",
		[23] = "VMXOFF under dual-monitor treatment of SMIs and SMM",
		[24] = "VMCALL with invalid SMM-monitor features",
		[25] = "VM entry with invalid VM-execution control fields in executive VMCS",
		[26] = "VM entry with events blocked by MOV SS",
		[28] = "Invalid operand to INVEPT/INVVPID",
	};

	if (err < sizeof(text) / sizeof(text[0]) && text[err])
		return text[err];
	return "unknown VM-instruction error";
}
