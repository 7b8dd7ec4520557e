/* SPDX-License-Identifier: MIT */
/*
 * pmc_code.S - the known branches counted under the Bochs
 * performance-counter model (tests/bochs/pmc-model.sh, docs/BOCHS-MODEL.md)
 * and the handlers and VMX guest pmctest.c uses.
 *
 * The sequence is lbr_branches.S's BRANCHES/LEAVES macros with the prefix
 * pmct (that file is included whole for them: lbrt_run & co. are in this
 * image too, unused), followed by three far transfers.  Its branch
 * instructions, in order, follow from the code alone:
 *   1 pmct_jmp    taken, near      8 pmct_leaf  (ret)   taken, near
 *   2 pmct_jz     taken, near      9 pmct_calli         taken, near
 *   3 pmct_jnz    taken, near     10 pmct_ret2          taken, near
 *   4 pmct_jnz    taken, near     11 pmct_int   INT n   far (to pmct_int_handler)
 *   5 pmct_jnz    not taken       12 pmct_iret  IRETQ   far (to pmct_int_ret)
 *   6 pmct_jmpi   taken, near     13 pmct_lret  LRETQ   far (to pmct_lret_to)
 *   7 pmct_call   taken, near
 * 13 branch instructions, 9 of them near taken; 12 of them are LBR records
 * (all but the not-taken JNZ; INT n is recorded as an event).
 */
#include "tests/payload/lbr_branches.S"

#define PMCT_INT_VECTOR 0xe6	/* pmctest.c installs pmct_int_handler there */

	.text

/*
 * void pmct_run(uint64_t global_ctrl, uint64_t debugctl): IA32_DEBUGCTL =
 * debugctl, IA32_PERF_GLOBAL_CTRL = global_ctrl, the sequence,
 * IA32_PERF_GLOBAL_CTRL = 0, IA32_DEBUGCTL (kept in pmct_debugctl_after) = 0.
 * Only the sequence's branches are counted and recorded: the WRMSRs
 * around it are no branches.  The caller has programmed the counters and
 * LVT, interrupts off.  The two magic breakpoints bracket the sequence for
 * the Bochs debugger's own instruction trace, as in lbrt_run.
 */
	.globl	pmct_run
	.type	pmct_run, @function
pmct_run:
	pushq	%rdi
	movl	$0x1d9, %ecx		/* IA32_DEBUGCTL */
	movq	%rsi, %rax
	movq	%rsi, %rdx
	shrq	$32, %rdx
	wrmsr
	popq	%rax
	movq	%rax, %rdx
	shrq	$32, %rdx
	movl	$0x38f, %ecx		/* IA32_PERF_GLOBAL_CTRL */
	wrmsr
	xchgw	%bx, %bx		/* Bochs magic breakpoint */
	BRANCHES pmct
	.globl	pmct_int, pmct_int_ret, pmct_lret, pmct_lret_to
pmct_int:
	int	$PMCT_INT_VECTOR
pmct_int_ret:
	leaq	pmct_lret_to(%rip), %rax
	movl	%cs, %edx
	pushq	%rdx
	pushq	%rax
pmct_lret:
	lretq
	ud2			/* not reached: the far return's target is not its next instruction */
pmct_lret_to:
	xchgw	%bx, %bx
	movl	$0x38f, %ecx
	xorl	%eax, %eax
	xorl	%edx, %edx
	wrmsr
	movl	$0x1d9, %ecx
	rdmsr
	movl	%eax, pmct_debugctl_after(%rip)
	movl	%edx, pmct_debugctl_after+4(%rip)
	DEBUGCTL 0
	ret
	LEAVES pmct
	.size	pmct_run, . - pmct_run

/* INT PMCT_INT_VECTOR's handler: nothing but its IRETQ. */
	.globl	pmct_int_handler, pmct_iret
	.type	pmct_int_handler, @function
pmct_int_handler:
pmct_iret:
	iretq
	.size	pmct_int_handler, . - pmct_int_handler

/* void pmct_sti_window(void): let a pending interrupt in (after the
 * instruction that follows STI: at pmct_sti_window + 2), then off again. */
	.globl	pmct_sti_window
	.type	pmct_sti_window, @function
pmct_sti_window:
	sti
	nop
	nop
	cli
	ret
	.size	pmct_sti_window, . - pmct_sti_window

/* The PMI handler (the vector pmctest.c puts in the LVT performance
 * monitoring entry): counts and keeps the RIP it interrupted; the caller
 * sends the EOI and unmasks the entry again. */
	.globl	pmct_pmi
	.type	pmct_pmi, @function
pmct_pmi:
	pushq	%rax
	movq	8(%rsp), %rax		/* the frame's RIP */
	movq	%rax, pmct_pmi_rip(%rip)
	incq	pmct_pmi_count(%rip)
	popq	%rax
	iretq
	.size	pmct_pmi, . - pmct_pmi

/* #GP handler for the probes below: counts and skips the 2-byte
 * WRMSR/RDPMC that faulted. */
	.globl	pmct_gp
	.type	pmct_gp, @function
pmct_gp:
	incq	pmct_gp_count(%rip)
	addq	$8, %rsp		/* the error code */
	addq	$2, (%rsp)		/* past the wrmsr / rdpmc */
	iretq
	.size	pmct_gp, . - pmct_gp

/* void pmct_wrmsr(uint32_t msr, uint64_t value): a bare WRMSR. */
	.globl	pmct_wrmsr
	.type	pmct_wrmsr, @function
pmct_wrmsr:
	movl	%edi, %ecx
	movq	%rsi, %rax
	movq	%rsi, %rdx
	shrq	$32, %rdx
	wrmsr
	ret
	.size	pmct_wrmsr, . - pmct_wrmsr

/* uint64_t pmct_rdpmc(uint32_t ecx): a bare RDPMC (0 after a #GP). */
	.globl	pmct_rdpmc
	.type	pmct_rdpmc, @function
pmct_rdpmc:
	movl	%edi, %ecx
	xorl	%eax, %eax
	xorl	%edx, %edx
	rdpmc
	shlq	$32, %rdx
	orq	%rdx, %rax
	ret
	.size	pmct_rdpmc, . - pmct_rdpmc

/*
 * int pmct_vmx_launch(void): VMLAUNCH of the current VMCS, whose fields the
 * caller wrote except HOST_RSP and HOST_RIP (written here: the VM exit
 * comes back into this function).  Returns 0 after the VM exit (the
 * guest's, or a failed entry's), 1 when VMLAUNCH itself failed (no exit).
 * The VM exit leaves GDTR and IDTR with limit 0xFFFF (SDM 3C "Loading Host
 * Segment and Descriptor-Table Registers"): both are reloaded as they
 * were.  Callee-saved registers are preserved.
 */
	.globl	pmct_vmx_launch
	.type	pmct_vmx_launch, @function
pmct_vmx_launch:
	pushq	%rbx
	pushq	%rbp
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	subq	$40, %rsp
	sgdt	(%rsp)
	sidt	16(%rsp)
	movl	$0x6c14, %eax		/* HOST_RSP */
	vmwrite	%rsp, %rax
	leaq	.Lvmexit(%rip), %rdx
	movl	$0x6c16, %eax		/* HOST_RIP */
	vmwrite	%rdx, %rax
	vmlaunch
	movl	$1, %eax
	jmp	.Lvmdone
.Lvmexit:
	lgdt	(%rsp)
	lidt	16(%rsp)
	xorl	%eax, %eax
.Lvmdone:
	addq	$40, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbp
	popq	%rbx
	ret
	.size	pmct_vmx_launch, . - pmct_vmx_launch

/*
 * pmct_guest: the VMX guest (GUEST_RIP; same address space, GDT and IDT as
 * the host): three branch instructions (CALL, its RET, a taken JZ), then
 * VMCALL, which exits; it is never resumed.
 */
	.globl	pmct_guest
	.type	pmct_guest, @function
pmct_guest:
	call	.Lguest_leaf
	xorl	%eax, %eax
	jz	.Lguest_vmcall
	nop
.Lguest_vmcall:
	vmcall
	ud2
.Lguest_leaf:
	ret
	.size	pmct_guest, . - pmct_guest

	.data
	.balign	8
	.globl	pmct_pmi_count, pmct_pmi_rip, pmct_gp_count, pmct_debugctl_after
pmct_pmi_count:		.quad	0
pmct_pmi_rip:		.quad	0
pmct_gp_count:		.quad	0
pmct_debugctl_after:	.quad	0

	.section .note.GNU-stack, "", @progbits
