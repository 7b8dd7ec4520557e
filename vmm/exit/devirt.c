/* SPDX-License-Identifier: MIT */
/*
 * devirt.c - leaving VMX again: what a CPU needs to continue as if it had
 * never been virtualized.
 *
 * Used only while tracevisor boots: when some CPU cannot be launched, the
 * CPUs already running as guests are asked (TV_HC_DEVIRT, from the boot
 * code on that CPU) to drop out of VMX, so the whole machine boots
 * unvirtualized rather than half traced.  The VMCALL's exit captures the
 * guest context into a frame; hw_vmx_devirt() then loads it into the real
 * CPU, VMXOFF, and returns to the instruction after the VMCALL.
 *
 * The guest is UEFI firmware in 64-bit mode with paging identity-mapped,
 * which is what makes this simple: CR0 and EFER are as the host has them
 * (both come from the same firmware state), and tracevisor's memory stays
 * mapped in the firmware's page tables.  A guest in any other mode is
 * refused (the hypercall returns TV_HC_EBUSY).
 */
#include <stddef.h>

#include "vmm/exit/devirt.h"
#include "vmm/exit/exit.h"
#include "vmm/lib/log.h"

_Static_assert(offsetof(struct hw_devirt_frame, rip) == 128, "frame: rip");
_Static_assert(offsetof(struct hw_devirt_frame, cs) == 144, "frame: cs");
_Static_assert(offsetof(struct hw_devirt_frame, ds) == 160, "frame: ds");
_Static_assert(offsetof(struct hw_devirt_frame, fs_base) == 192, "frame: fs_base");
_Static_assert(offsetof(struct hw_devirt_frame, cr3) == 208, "frame: cr3");
_Static_assert(offsetof(struct hw_devirt_frame, gdtr) == 224, "frame: gdtr");
_Static_assert(offsetof(struct hw_devirt_frame, idtr) == 240, "frame: idtr");
_Static_assert(offsetof(struct hw_devirt_frame, iret) == 256, "frame: iret");

int devirt_capture(const struct exit_ctx *ctx, struct hw_devirt_frame *f)
{
	const struct guest_regs *r = ctx->regs;
	uint64_t cr0 = exit_guest_cr0(ctx);

	if (!exit_guest_64bit() || !(cr0 & CR0_PG))
		return -1;
	f->gpr[0] = r->rax;
	f->gpr[1] = r->rcx;
	f->gpr[2] = r->rdx;
	f->gpr[3] = r->rbx;
	f->gpr[4] = vmcs_get(VMCS_GUEST_RSP);
	f->gpr[5] = r->rbp;
	f->gpr[6] = r->rsi;
	f->gpr[7] = r->rdi;
	f->gpr[8] = r->r8;
	f->gpr[9] = r->r9;
	f->gpr[10] = r->r10;
	f->gpr[11] = r->r11;
	f->gpr[12] = r->r12;
	f->gpr[13] = r->r13;
	f->gpr[14] = r->r14;
	f->gpr[15] = r->r15;
	/* Past the VMCALL: the exit left RIP on it (SDM 3C 28.2.1). */
	f->rip = vmcs_get(VMCS_GUEST_RIP) + ctx->instr_len;
	f->rflags = vmcs_get(VMCS_GUEST_RFLAGS);
	f->cs = vmcs_get(VMCS_GUEST_CS_SELECTOR);
	f->ss = vmcs_get(VMCS_GUEST_SS_SELECTOR);
	f->ds = vmcs_get(VMCS_GUEST_DS_SELECTOR);
	f->es = vmcs_get(VMCS_GUEST_ES_SELECTOR);
	f->fs = vmcs_get(VMCS_GUEST_FS_SELECTOR);
	f->gs = vmcs_get(VMCS_GUEST_GS_SELECTOR);
	f->fs_base = vmcs_get(VMCS_GUEST_FS_BASE);
	f->gs_base = vmcs_get(VMCS_GUEST_GS_BASE);
	f->cr3 = vmcs_get(VMCS_GUEST_CR3);
	/* The guest's own view: VMXE is ours (shadowed) and goes with VMXOFF. */
	f->cr4 = exit_guest_cr4(ctx) & ~(uint64_t)CR4_VMXE;
	f->gdtr.base = vmcs_get(VMCS_GUEST_GDTR_BASE);
	f->gdtr.limit = (uint16_t)vmcs_get(VMCS_GUEST_GDTR_LIMIT);
	f->idtr.base = vmcs_get(VMCS_GUEST_IDTR_BASE);
	f->idtr.limit = (uint16_t)vmcs_get(VMCS_GUEST_IDTR_LIMIT);
	return 0;
}
