/* SPDX-License-Identifier: MIT */
/*
 * bts_branches.S - the known branches of lbr_branches.S, run under the
 * Bochs BTS model (tests/bochs/bts-model.sh, docs/BOCHS-MODEL.md), and the
 * PMI handler btstest.c installs (its #GP probe is guest_helpers.S's).
 *
 * The sequence is lbr_branches.S's BRANCHES/LEAVES macros with the prefix
 * btst (its 9 taken branches are listed there); that file is included
 * whole for them, so lbrt_run & co. are in this image too, unused.
 */
#include "tests/payload/lbr_branches.S"

	.text

/*
 * void btst_run(uint64_t debugctl): IA32_DEBUGCTL = debugctl, the
 * sequence, IA32_DEBUGCTL = 0.  The caller has set up IA32_DS_AREA and
 * the buffer, interrupts off.  The magic breakpoints bracket the sequence
 * for the Bochs debugger's own trace, as in lbrt_run.
 */
	.globl	btst_run
	.type	btst_run, @function
btst_run:
	movl	$0x1d9, %ecx
	movq	%rdi, %rax
	movq	%rdi, %rdx
	shrq	$32, %rdx
	wrmsr
	xchgw	%bx, %bx
	BRANCHES btst
	xchgw	%bx, %bx
	DEBUGCTL 0
	ret
	LEAVES btst
	.size	btst_run, . - btst_run

/* void btst_sti_window(void): let a pending interrupt in, then off again. */
	.globl	btst_sti_window
	.type	btst_sti_window, @function
btst_sti_window:
	sti
	nop
	nop
	cli
	ret
	.size	btst_sti_window, . - btst_sti_window

/* The PMI handler (the vector btstest.c puts in the LVT performance
 * monitoring entry): counts and keeps the RIP it interrupted; the caller
 * sends the EOI. */
	.globl	btst_pmi
	.type	btst_pmi, @function
btst_pmi:
	pushq	%rax
	movq	8(%rsp), %rax		/* the frame's RIP */
	movq	%rax, btst_pmi_rip(%rip)
	incq	btst_pmi_count(%rip)
	popq	%rax
	iretq
	.size	btst_pmi, . - btst_pmi

	.data
	.balign	8
	.globl	btst_pmi_count, btst_pmi_rip
btst_pmi_count:	.quad	0
btst_pmi_rip:	.quad	0

	.section .note.GNU-stack, "", @progbits
