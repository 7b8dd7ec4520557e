/* SPDX-License-Identifier: MIT */
/*
 * pmc_code.S - the known branches counted under the Bochs
 * performance-counter model (tests/bochs/pmc-model.sh, docs/BOCHS-MODEL.md)
 * and the handlers pmctest.c uses (the #GP probes, VMLAUNCH and the VMX
 * guest are tests/payload/guest_helpers.S's).
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

/* uint64_t pmct_rdpmc(uint32_t ecx): a bare RDPMC (0 after a #GP, which
 * guest_gp skips like a WRMSR). */
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

	.data
	.balign	8
	.globl	pmct_pmi_count, pmct_pmi_rip, pmct_debugctl_after
pmct_pmi_count:		.quad	0
pmct_pmi_rip:		.quad	0
pmct_debugctl_after:	.quad	0

	.section .note.GNU-stack, "", @progbits
