/* SPDX-License-Identifier: MIT */
/*
 * exit_misc.c - the small exits: XSETBV, INVD, GETSEC, the VMX
 * instructions, triple fault.  All of them exit unconditionally in VMX
 * non-root operation (SDM 3C 26.1.2).
 */
#include "vmm/exit/exit.h"
#include "vmm/exit/hooks.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"

bool xsetbv_xcr0_valid(uint64_t value, uint64_t supported)
{
	uint64_t avx512 = value & XCR0_AVX512;

	if (value & ~supported)
		return false;  /* a bit CPUID.(0DH,0):EDX:EAX does not offer */
	if (!(value & XCR0_X87))
		return false;
	if ((value & XCR0_AVX) && !(value & XCR0_SSE))
		return false;
	if (!(value & XCR0_BNDREGS) != !(value & XCR0_BNDCSR))
		return false;
	if (avx512 && (avx512 != XCR0_AVX512 || !(value & XCR0_AVX)))
		return false;
	if (!(value & XCR0_XTILECFG) != !(value & XCR0_XTILEDATA))
		return false;
	return true;
}

/*
 * XSETBV (55).  #GP(0) unless CPL = 0, ECX = 0 and the value passes the
 * XCR0 rules (SDM 2B XSETBV; SDM 1 13.3).  XCR0 is not switched by VMX
 * transitions, so setting it here sets the guest's.  Host code runs with
 * the firmware's CR4, whose OSXSAVE may be clear (XSETBV would #UD in
 * VMX root): set it around the instruction; HOST_CR4 restores it on the
 * next exit anyway.
 */
enum exit_action exit_xsetbv(struct exit_ctx *ctx)
{
	struct guest_regs *regs = ctx->regs;
	uint32_t xcr = (uint32_t)regs->rcx;
	uint64_t value = ((uint64_t)(uint32_t)regs->rdx << 32) | (uint32_t)regs->rax;
	struct hw_cpuid_regs r;
	uint64_t host_cr4;

	hw_cpuid(0xd, 0, &r);
	if (exit_guest_cpl() != 0 || xcr != 0 ||
	    !xsetbv_xcr0_valid(value, ((uint64_t)r.edx << 32) | r.eax)) {
		exit_inject_exception(ctx, VEC_GP, true, 0);
		return EXIT_RESUME;
	}
	host_cr4 = hw_read_cr4();
	if (!(host_cr4 & CR4_OSXSAVE))
		hw_write_cr4(host_cr4 | CR4_OSXSAVE);
	hw_xsetbv(0, value);
	if (!(host_cr4 & CR4_OSXSAVE))
		hw_write_cr4(host_cr4);
	exit_skip_instruction(ctx);
	return EXIT_RESUME;
}

/*
 * INVD (13) would drop dirty cache lines without writing them back,
 * tracevisor's own writes (trace buffers, log ring) included.  WBINVD
 * gives the guest everything INVD promises and loses nothing; the SDM
 * itself tells software to prefer WBINVD unless losing the data is the
 * point (SDM 2A INVD).
 */
enum exit_action exit_invd(struct exit_ctx *ctx)
{
	hw_wbinvd();
	exit_skip_instruction(ctx);
	return EXIT_RESUME;
}

/* GETSEC (11): SMX is not offered to the guest (CPUID.1:ECX.SMX = 0), so #UD. */
enum exit_action exit_getsec(struct exit_ctx *ctx)
{
	exit_inject_exception(ctx, VEC_UD, false, 0);
	return EXIT_RESUME;
}

/*
 * VMCLEAR, VMLAUNCH, VMPTRLD, VMPTRST, VMREAD, VMRESUME, VMWRITE, VMXOFF,
 * VMXON, INVEPT, INVVPID, VMFUNC: no nested VMX.  The guest sees a CPU
 * without VMX, on which these raise #UD (SDM 3C 31.3: CR4.VMXE = 0 or not
 * in VMX operation).
 */
enum exit_action exit_vmx_instruction(struct exit_ctx *ctx)
{
	exit_inject_exception(ctx, VEC_UD, false, 0);
	return EXIT_RESUME;
}

/* Triple fault (2): the guest reset itself, on purpose or not. */
enum exit_action exit_triple_fault(struct exit_ctx *ctx)
{
	log_err("exit: cpu %u: guest triple fault: RIP %#llx CR0 %#llx CR3 %#llx CR4 %#llx (IDT-vectoring info %#llx)",
		ctx->cpu->index, (unsigned long long)vmcs_get(VMCS_GUEST_RIP),
		(unsigned long long)vmcs_get(VMCS_GUEST_CR0), (unsigned long long)vmcs_get(VMCS_GUEST_CR3),
		(unsigned long long)vmcs_get(VMCS_GUEST_CR4),
		(unsigned long long)vmcs_get(VMCS_IDT_VECTORING_INFO));
	/* What decides whether #PF/#DF could be delivered.  CR2 is not
	 * switched by VM exits (SDM 3C 28.5): the host's is the guest's. */
	log_err("exit: cpu %u: RSP %#llx CR2 %#llx IDTR %#llx/%#llx GDTR %#llx/%#llx SS ar %#llx interruptibility %#llx activity %llu",
		ctx->cpu->index, (unsigned long long)vmcs_get(VMCS_GUEST_RSP),
		(unsigned long long)hw_read_cr2(),
		(unsigned long long)vmcs_get(VMCS_GUEST_IDTR_BASE),
		(unsigned long long)vmcs_get(VMCS_GUEST_IDTR_LIMIT),
		(unsigned long long)vmcs_get(VMCS_GUEST_GDTR_BASE),
		(unsigned long long)vmcs_get(VMCS_GUEST_GDTR_LIMIT),
		(unsigned long long)vmcs_get(VMCS_GUEST_SS_AR),
		(unsigned long long)vmcs_get(VMCS_GUEST_INTERRUPTIBILITY),
		(unsigned long long)vmcs_get(VMCS_GUEST_ACTIVITY_STATE));
	/* The branches that led here are what a user wants most: the tracer
	 * closes its window, which hands it to the exporter, before the reset. */
	if (exit_hooks_get()->guest_reset)
		exit_hooks_get()->guest_reset(ctx->cpu);
	return EXIT_RESET_MACHINE;
}
