/* SPDX-License-Identifier: MIT */
/*
 * exit_cpuid.c - CPUID (exit reason 10; unconditional in VMX non-root,
 * SDM 3C 26.1.2).
 *
 * The guest sees the real CPU with three differences:
 *  - VMX (leaf 1 ECX[5]) is hidden, and SMX (ECX[6]) with it: GETSEC
 *    raises #UD in the guest (exit_misc.c), so offering SMX would lie;
 *  - the OS-controlled bits are computed from the guest's CR4, not the
 *    host's: leaf 1 ECX[27] OSXSAVE = CR4.OSXSAVE, leaf 7 ECX[4] OSPKE =
 *    CR4.PKE (SDM 2A CPUID);
 *  - the hypervisor leaves 0x40000000-0x4fffffff: 0x40000000 and
 *    0x40000001 describe tracevisor (vmm/exit/hypercall.h), the rest of the
 *    range reads as zeros.
 * Leaf 1 ECX[31] ("hypervisor present") stays as the hardware has it
 * (0): a tracer should not change how the OS behaves; tools probe leaf
 * 0x40000000 directly.
 */
#include <string.h>

#include "vmm/exit/exit.h"
#include "vmm/hw/hw.h"
#include "vmm/exit/hypercall.h"
#include "vmm/version.h"

static void hypervisor_leaf(uint32_t leaf, struct hw_cpuid_regs *r)
{
	/* "tracevisor" NUL-padded to 12 bytes, as EBX, ECX, EDX. */
	static const char signature[12] = "tracevisor";

	memset(r, 0, sizeof(*r));
	switch (leaf) {
	case TV_CPUID_LEAF_SIGNATURE:
		r->eax = TV_CPUID_LEAF_MAX;
		memcpy(&r->ebx, signature, 4);
		memcpy(&r->ecx, signature + 4, 4);
		memcpy(&r->edx, signature + 8, 4);
		break;
	case TV_CPUID_LEAF_VERSION:
		r->eax = TV_VERSION_CODE;
		r->ebx = TV_HC_ABI_VERSION;
		break;
	default:
		break;
	}
}

enum exit_action exit_cpuid(struct exit_ctx *ctx)
{
	struct guest_regs *regs = ctx->regs;
	uint32_t leaf = (uint32_t)regs->rax, subleaf = (uint32_t)regs->rcx;
	struct hw_cpuid_regs r;

	if ((leaf & 0xf0000000u) == 0x40000000u) {
		hypervisor_leaf(leaf, &r);
	} else {
		hw_cpuid(leaf, subleaf, &r);
		if (leaf == 1) {
			uint64_t cr4 = exit_guest_cr4(ctx);

			r.ecx &= ~(CPUID_1_ECX_VMX | CPUID_1_ECX_SMX | CPUID_1_ECX_OSXSAVE);
			if (cr4 & CR4_OSXSAVE)
				r.ecx |= CPUID_1_ECX_OSXSAVE;
		} else if (leaf == 7 && subleaf == 0) {
			r.ecx &= ~CPUID_7_ECX_OSPKE;
			if (exit_guest_cr4(ctx) & CR4_PKE)
				r.ecx |= CPUID_7_ECX_OSPKE;
		}
	}
	/* CPUID writes EAX/EBX/ECX/EDX and clears bits 63:32 of each (SDM 2A). */
	regs->rax = r.eax;
	regs->rbx = r.ebx;
	regs->rcx = r.ecx;
	regs->rdx = r.edx;
	exit_skip_instruction(ctx);
	return EXIT_RESUME;
}
