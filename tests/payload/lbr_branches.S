/* SPDX-License-Identifier: MIT */
/*
 * lbr_branches.S - known branches for the Bochs trace-hardware model test
 * (tests/bochs/lbr-model.sh, docs/BOCHS-MODEL.md).
 *
 * BRANCHES p expands to one fixed sequence with labels p_*; its taken
 * branches, in order, follow from the code alone (the test derives them
 * from `nm`):
 *   1 p_jmp   -> p_t1     near relative jmp
 *   2 p_jz    -> p_t2     Jcc, forward (eax = 0)
 *   3 p_jnz   -> p_loop   Jcc, backward (ecx 3 -> 2)
 *   4 p_jnz   -> p_loop   Jcc, backward (ecx 2 -> 1); falls through at 0
 *   5 p_jmpi  -> p_t3     near indirect jmp
 *   6 p_call  -> p_leaf   near relative call
 *   7 p_leaf  -> p_after  near return (p_leaf is the ret)
 *   8 p_calli -> p_leaf2  near indirect call
 *   9 p_ret2  -> p_after2 near return
 * Clobbers rax, rcx, rdx (caller-saved in both ABIs).
 */
	.text

.macro BRANCHES p
\p\()_jmp:	jmp	\p\()_t1
	ud2
\p\()_t1:	xorl	%eax, %eax
\p\()_jz:	jz	\p\()_t2
	ud2
\p\()_t2:	movl	$3, %ecx
\p\()_loop:	decl	%ecx
\p\()_jnz:	jnz	\p\()_loop
	leaq	\p\()_t3(%rip), %rax
\p\()_jmpi:	jmp	*%rax
	ud2
\p\()_t3:
\p\()_call:	call	\p\()_leaf
\p\()_after:	leaq	\p\()_leaf2(%rip), %rax
\p\()_calli:	call	*%rax
\p\()_after2:	nop
.endm

.macro LEAVES p
\p\()_leaf:	ret
\p\()_leaf2:	nop
\p\()_ret2:	ret
.endm

/* wrmsr IA32_DEBUGCTL (0x1d9) = v; not a branch */
.macro DEBUGCTL v
	movl	$0x1d9, %ecx
	movl	$\v, %eax
	xorl	%edx, %edx
	wrmsr
.endm

/*
 * void lbrt_run(void): DEBUGCTL.LBR on, the sequence, LBR off.  The
 * caller has set LBR_SELECT and cleared the stack, interrupts off.  The
 * two magic breakpoints bracket the sequence for the Bochs debugger's
 * own instruction trace (the test's second, independent ground truth).
 */
	.globl	lbrt_run
	.type	lbrt_run, @function
lbrt_run:
	DEBUGCTL 1
	xchgw	%bx, %bx	/* Bochs magic breakpoint (a nop unless magic_break: enabled=1) */
	BRANCHES lbrt
	xchgw	%bx, %bx
	DEBUGCTL 0
	ret
	LEAVES lbrt
	.size	lbrt_run, . - lbrt_run

/*
 * void btft_run(void): DEBUGCTL = LBR | BTF, TF on (popfq), the
 * sequence, TF off, DEBUGCTL off.  btft_db (vector 1, installed by the
 * caller) logs each #DB: the RIP it interrupts (the branch target, a
 * trap) and the newest LBR FROM (the branch), then sets LBR | BTF again,
 * which the #DB delivery cleared.
 */
	.globl	btft_run
	.type	btft_run, @function
btft_run:
	DEBUGCTL 3
	pushfq
	orq	$0x100, (%rsp)
	popfq
	BRANCHES btft
	pushfq
	andq	$~0x100, (%rsp)
	popfq
	DEBUGCTL 0
	ret
	LEAVES btft
	.size	btft_run, . - btft_run

	.globl	btft_db
	.type	btft_db, @function
btft_db:
	pushq	%rax
	pushq	%rcx
	pushq	%rdx
	pushq	%rbx
	movq	btft_count(%rip), %rbx
	cmpq	$64, %rbx
	jae	1f
	leaq	btft_rip(%rip), %rax
	movq	32(%rsp), %rcx		/* the frame's RIP */
	movq	%rcx, (%rax, %rbx, 8)
	movl	$0x1c9, %ecx		/* MSR_LASTBRANCH_TOS */
	rdmsr
	leal	0x680(%eax), %ecx	/* MSR_LASTBRANCH_n_FROM_IP */
	rdmsr
	shlq	$32, %rdx
	orq	%rdx, %rax
	leaq	btft_from(%rip), %rcx
	movq	%rax, (%rcx, %rbx, 8)
	movq	%dr6, %rax
	movq	%rax, btft_dr6(%rip)
	/* the debug-control bits the delivery left */
	movl	$0x1d9, %ecx
	rdmsr
	leaq	btft_ctl(%rip), %rcx
	movq	%rax, (%rcx, %rbx, 8)
1:	incq	btft_count(%rip)
	xorq	%rax, %rax
	movq	%rax, %dr6
	DEBUGCTL 3
	popq	%rbx
	popq	%rdx
	popq	%rcx
	popq	%rax
	iretq
	.size	btft_db, . - btft_db

	.data
	.balign	8
	.globl	btft_count, btft_rip, btft_from, btft_ctl, btft_dr6
btft_count:	.quad	0
btft_dr6:	.quad	0
btft_rip:	.fill	64, 8, 0
btft_from:	.fill	64, 8, 0
btft_ctl:	.fill	64, 8, 0

	.section .note.GNU-stack, "", @progbits
