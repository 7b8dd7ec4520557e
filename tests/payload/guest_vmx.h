/* SPDX-License-Identifier: MIT */
/*
 * guest_vmx.h - a minimal VM entry for the bench's guest programs that
 * check VMX interplay of a trace-hardware model (tests/payload/pmctest.c,
 * archlbrtest.c, pttest.c): VMXON, a VMCS whose guest is the very machine state of
 * the caller at a given RIP (same address space, GDT, IDT), the allowed
 * control settings from the capability MSRs.  The VMLAUNCH itself and the
 * guest are guest_helpers.S's.  Each program includes it once.
 */
#ifndef TV_GUEST_VMX_H
#define TV_GUEST_VMX_H

#include <stdint.h>

#include "vmm/hw/hw.h"
#include "vmm/vmx/vmx_defs.h"
#include "tests/payload/guest_helpers.h"

/* The allowed settings of a VMX control from its capability MSR (SDM 3D
 * "VMX Capability Reporting Facility"). */
static inline uint32_t vmx_adjust(uint32_t want, uint32_t msr)
{
	uint64_t cap = hw_rdmsr(msr);

	return (want | (uint32_t)cap) & (uint32_t)(cap >> 32);
}

static inline int vmx_true_ctls(void)
{
	return (hw_rdmsr(MSR_IA32_VMX_BASIC) & VMX_BASIC_TRUE_CTLS) != 0;
}

/* The allowed-1 settings of the VM-entry and VM-exit controls (the TRUE
 * MSRs where IA32_VMX_BASIC[55] says they exist). */
static inline uint32_t vmx_entry_allowed1(void)
{
	return (uint32_t)(hw_rdmsr(vmx_true_ctls() ? MSR_IA32_VMX_TRUE_ENTRY_CTLS : MSR_IA32_VMX_ENTRY_CTLS) >> 32);
}

static inline uint32_t vmx_exit_allowed1(void)
{
	return (uint32_t)(hw_rdmsr(vmx_true_ctls() ? MSR_IA32_VMX_TRUE_EXIT_CTLS : MSR_IA32_VMX_EXIT_CTLS) >> 32);
}

struct vmx_segment {
	uint16_t sel;
	uint32_t ar, limit;
	uint64_t base;
};

/* A GDT segment as the VMCS guest-state area wants it (access rights,
 * byte-granular limit, base; "unusable" for a null selector). */
static inline struct vmx_segment vmx_seg(const struct hw_dtr *gdt, uint16_t sel)
{
	struct vmx_segment s = { sel, 0x10000, 0, 0 };
	uint64_t d;

	if (!(sel & ~7u))
		return s;
	d = *(const uint64_t *)(uintptr_t)(gdt->base + (sel & ~7u));
	s.ar = (uint32_t)(d >> 40) & 0xf0ff;
	if (s.ar & 0x10)
		s.ar |= 1;
	s.limit = (uint32_t)(d & 0xffff) | ((uint32_t)(d >> 32) & 0xf0000);
	if (s.ar & 0x8000)
		s.limit = (s.limit << 12) | 0xfff;
	s.base = ((d >> 16) & 0xffffff) | ((d >> 56) << 24);
	return s;
}

/* VMWRITE: 1 when it failed.  VMREAD: ~0 when it failed. */
static inline int vmcs_w(uint32_t field, uint64_t v)
{
	return hw_vmwrite(field, v) ? 1 : 0;
}

static inline uint64_t vmcs_r(uint32_t field)
{
	uint64_t v = 0;

	return hw_vmread(field, &v) ? ~0ull : v;
}

/* The 4 KiB page vmcs as the current VMCS: revision identifier, VMCLEAR,
 * VMPTRLD.  0, or 1 when either failed. */
static inline int vmcs_load(uint32_t *vmcs)
{
	uint64_t pa = (uint64_t)(uintptr_t)vmcs;

	vmcs[0] = VMX_BASIC_REVISION(hw_rdmsr(MSR_IA32_VMX_BASIC));
	return hw_vmclear(pa) != 0 || hw_vmptrld(pa) != 0;
}

/* The current VMCS for a guest that runs at guest_rip in this very address
 * space on the stack below guest_sp and exits back into guest_vmx_launch,
 * with the given entry and exit controls (adjusted to what is allowed).
 * Returns the number of failed VMWRITEs. */
static inline int vmcs_setup(uint32_t entry, uint32_t exit_ctls, uint64_t guest_sp, uint64_t guest_rip)
{
	int t = vmx_true_ctls(), bad = 0;
	struct hw_dtr gdt, idt;
	uint16_t tr = hw_read_selector(HW_SEG_TR);
	uint64_t fs_base = hw_rdmsr(0xc0000100), gs_base = hw_rdmsr(0xc0000101), tr_base = 0;

	hw_sgdt(&gdt);
	hw_sidt(&idt);
	if (tr)
		tr_base = vmx_seg(&gdt, tr).base |
			  (*(const uint64_t *)(uintptr_t)(gdt.base + (tr & ~7u) + 8) << 32);
	bad += vmcs_w(VMCS_PIN_BASED_CTLS,
		      vmx_adjust(0, t ? MSR_IA32_VMX_TRUE_PINBASED_CTLS : MSR_IA32_VMX_PINBASED_CTLS));
	bad += vmcs_w(VMCS_PROC_BASED_CTLS,
		      vmx_adjust(0, t ? MSR_IA32_VMX_TRUE_PROCBASED_CTLS : MSR_IA32_VMX_PROCBASED_CTLS));
	bad += vmcs_w(VMCS_EXIT_CTLS, vmx_adjust(EXIT_HOST_ADDRESS_SPACE_SIZE | exit_ctls,
						 t ? MSR_IA32_VMX_TRUE_EXIT_CTLS : MSR_IA32_VMX_EXIT_CTLS));
	bad += vmcs_w(VMCS_ENTRY_CTLS, vmx_adjust(ENTRY_IA32E_MODE_GUEST | entry,
						  t ? MSR_IA32_VMX_TRUE_ENTRY_CTLS : MSR_IA32_VMX_ENTRY_CTLS));
	bad += vmcs_w(VMCS_EXCEPTION_BITMAP, 0);
	bad += vmcs_w(VMCS_CR3_TARGET_COUNT, 0);
	bad += vmcs_w(VMCS_EXIT_MSR_STORE_COUNT, 0);
	bad += vmcs_w(VMCS_EXIT_MSR_LOAD_COUNT, 0);
	bad += vmcs_w(VMCS_ENTRY_MSR_LOAD_COUNT, 0);
	bad += vmcs_w(VMCS_ENTRY_INTR_INFO, 0);
	bad += vmcs_w(VMCS_VMCS_LINK_POINTER, ~0ull);

	/* host: now.  TR must not be 0 for VM entry: without one (OVMF),
	 * CS's selector stands in (the exit loads TR's base and limit from
	 * the VMCS, not from the GDT) */
	bad += vmcs_w(VMCS_HOST_CR0, hw_read_cr0());
	bad += vmcs_w(VMCS_HOST_CR3, hw_read_cr3());
	bad += vmcs_w(VMCS_HOST_CR4, hw_read_cr4());
	bad += vmcs_w(VMCS_HOST_ES_SELECTOR, hw_read_selector(HW_SEG_ES) & ~7u);
	bad += vmcs_w(VMCS_HOST_CS_SELECTOR, hw_read_selector(HW_SEG_CS) & ~7u);
	bad += vmcs_w(VMCS_HOST_SS_SELECTOR, hw_read_selector(HW_SEG_SS) & ~7u);
	bad += vmcs_w(VMCS_HOST_DS_SELECTOR, hw_read_selector(HW_SEG_DS) & ~7u);
	bad += vmcs_w(VMCS_HOST_FS_SELECTOR, hw_read_selector(HW_SEG_FS) & ~7u);
	bad += vmcs_w(VMCS_HOST_GS_SELECTOR, hw_read_selector(HW_SEG_GS) & ~7u);
	bad += vmcs_w(VMCS_HOST_TR_SELECTOR, tr ? tr : hw_read_selector(HW_SEG_CS) & ~7u);
	bad += vmcs_w(VMCS_HOST_FS_BASE, fs_base);
	bad += vmcs_w(VMCS_HOST_GS_BASE, gs_base);
	bad += vmcs_w(VMCS_HOST_TR_BASE, tr_base);
	bad += vmcs_w(VMCS_HOST_GDTR_BASE, gdt.base);
	bad += vmcs_w(VMCS_HOST_IDTR_BASE, idt.base);
	bad += vmcs_w(VMCS_HOST_IA32_SYSENTER_CS, 0);
	bad += vmcs_w(VMCS_HOST_IA32_SYSENTER_ESP, 0);
	bad += vmcs_w(VMCS_HOST_IA32_SYSENTER_EIP, 0);

	/* guest: the same machine state, at guest_rip */
	bad += vmcs_w(VMCS_GUEST_CR0, hw_read_cr0());
	bad += vmcs_w(VMCS_GUEST_CR3, hw_read_cr3());
	bad += vmcs_w(VMCS_GUEST_CR4, hw_read_cr4());
	bad += vmcs_w(VMCS_GUEST_DR7, 0x400);
	bad += vmcs_w(VMCS_GUEST_IA32_DEBUGCTL, 0);
	for (int i = 0; i < 6; i++) { /* ES, CS, SS, DS, FS, GS: encodings 2 apart */
		struct vmx_segment s = vmx_seg(&gdt, hw_read_selector((enum hw_seg)i));

		bad += vmcs_w(VMCS_GUEST_ES_SELECTOR + 2 * i, s.sel);
		bad += vmcs_w(VMCS_GUEST_ES_AR + 2 * i, s.ar);
		bad += vmcs_w(VMCS_GUEST_ES_LIMIT + 2 * i, s.limit);
		bad += vmcs_w(VMCS_GUEST_ES_BASE + 2 * i,
			      i == HW_SEG_FS ? fs_base : i == HW_SEG_GS ? gs_base : s.base);
	}
	bad += vmcs_w(VMCS_GUEST_LDTR_SELECTOR, 0);
	bad += vmcs_w(VMCS_GUEST_LDTR_AR, 0x10000);
	bad += vmcs_w(VMCS_GUEST_LDTR_LIMIT, 0);
	bad += vmcs_w(VMCS_GUEST_LDTR_BASE, 0);
	bad += vmcs_w(VMCS_GUEST_TR_SELECTOR, 0);
	bad += vmcs_w(VMCS_GUEST_TR_AR, 0x8b);
	bad += vmcs_w(VMCS_GUEST_TR_LIMIT, 0x67);
	bad += vmcs_w(VMCS_GUEST_TR_BASE, 0);
	bad += vmcs_w(VMCS_GUEST_GDTR_BASE, gdt.base);
	bad += vmcs_w(VMCS_GUEST_GDTR_LIMIT, gdt.limit);
	bad += vmcs_w(VMCS_GUEST_IDTR_BASE, idt.base);
	bad += vmcs_w(VMCS_GUEST_IDTR_LIMIT, idt.limit);
	bad += vmcs_w(VMCS_GUEST_RSP, guest_sp);
	bad += vmcs_w(VMCS_GUEST_RIP, guest_rip);
	bad += vmcs_w(VMCS_GUEST_RFLAGS, 0x2);
	bad += vmcs_w(VMCS_GUEST_INTERRUPTIBILITY, 0);
	bad += vmcs_w(VMCS_GUEST_ACTIVITY_STATE, ACTIVITY_ACTIVE);
	bad += vmcs_w(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, 0);
	bad += vmcs_w(VMCS_GUEST_IA32_SYSENTER_CS, 0);
	bad += vmcs_w(VMCS_GUEST_IA32_SYSENTER_ESP, 0);
	bad += vmcs_w(VMCS_GUEST_IA32_SYSENTER_EIP, 0);
	return bad;
}

/* Is VMX there (CPUID.1:ECX.VMX[5])?  Locks IA32_FEATURE_CONTROL with
 * VMXON outside SMX allowed if the firmware left it unlocked. */
static inline int vmx_available(void)
{
	struct hw_cpuid_regs r1;
	uint64_t fc;

	hw_cpuid(1, 0, &r1);
	if (!(r1.ecx & (1u << 5)))
		return 0;
	fc = hw_rdmsr(0x3a); /* IA32_FEATURE_CONTROL */
	if (!(fc & 1))
		hw_wrmsr(0x3a, fc | 5); /* lock, VMXON outside SMX */
	return 1;
}

/* CR0/CR4 to the VMX fixed bits with CR4.VMXE; the old CR0/CR4 go to
 * saved[0], saved[1] for vmx_leave. */
static inline void vmx_set_cr(uint64_t saved[2])
{
	saved[0] = hw_read_cr0();
	saved[1] = hw_read_cr4();
	hw_write_cr0((saved[0] | hw_rdmsr(MSR_IA32_VMX_CR0_FIXED0)) & hw_rdmsr(MSR_IA32_VMX_CR0_FIXED1));
	hw_write_cr4((saved[1] | hw_rdmsr(MSR_IA32_VMX_CR4_FIXED0) | (1ull << 13)) &
		     hw_rdmsr(MSR_IA32_VMX_CR4_FIXED1));
}

/* VMXON with the 4 KiB region vmxon_page (after vmx_set_cr).  Returns 0,
 * or the VMXON failure. */
static inline int vmx_on(uint32_t *vmxon_page)
{
	vmxon_page[0] = VMX_BASIC_REVISION(hw_rdmsr(MSR_IA32_VMX_BASIC));
	return hw_vmxon((uint64_t)(uintptr_t)vmxon_page);
}

/* vmx_set_cr, then vmx_on. */
static inline int vmx_enter(uint32_t *vmxon_page, uint64_t saved[2])
{
	vmx_set_cr(saved);
	return vmx_on(vmxon_page);
}

/* VMCLEAR vmcs (if not 0), VMXOFF (after a successful vmx_enter), CR0/CR4
 * back. */
static inline void vmx_leave(uint32_t *vmcs, int vmxon_ok, const uint64_t saved[2])
{
	if (vmxon_ok) {
		if (vmcs)
			hw_vmclear((uint64_t)(uintptr_t)vmcs);
		hw_vmxoff();
	}
	hw_write_cr4(saved[1]);
	hw_write_cr0(saved[0]);
}

#endif /* TV_GUEST_VMX_H */
