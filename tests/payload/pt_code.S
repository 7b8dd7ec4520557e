/* SPDX-License-Identifier: MIT */
/*
 * pt_code.S - known code for the Bochs Intel PT model test
 * (tests/bochs/pt-model.sh, docs/BOCHS-MODEL.md).
 *
 * void ptt_run(void) turns PT on (WRMSR IA32_RTIT_CTL = ptt_ctl, which
 * includes TraceEn), raises one #UD (UD2 at ptt_ud2, handled by ptt_ud,
 * which the caller installs as vector 6), reloads CR3, calls
 * ptt_far_target indirectly (ptt_far, 64 KiB away, or an alias of it in
 * the upper canonical half), runs ptt_iters
 * iterations of a loop whose body picks
 * one of four paths through a jump table (indirect jmp), and turns PT off
 * (WRMSR IA32_RTIT_CTL = 0).  The paths: a direct call and ret; an
 * indirect call and ret; nested calls (a ret that does not go back to its
 * call site included: ptt_odd); an inner dec/jnz loop of 40, a LOOP and a
 * forward Jcc taken or not by the iteration's parity.  No interrupts
 * (the caller runs it with IF = 0).  Two magic breakpoints (xchg bx,bx)
 * bracket it for the Bochs debugger's own instruction trace.
 *
 * Labels the test reads with nm: ptt_on (the enabling WRMSR), ptt_ud2,
 * ptt_ud, ptt_odd_ret, ptt_nest_ret, ptt_off
 * (the disabling WRMSR), ptt_leaf .. ptt_leaf_end (one function, the IP
 * filter's range).
 * Clobbers rax, rcx, rdx, r8, r9 (caller-saved).
 *
 * The #GP handler and the VMX entry and guest are guest_helpers.S's.
 */
	.text

	.globl	ptt_run
	.type	ptt_run, @function
ptt_run:
	xchgw	%bx, %bx		/* Bochs magic breakpoint */
	movl	$0x570, %ecx		/* IA32_RTIT_CTL */
	movl	ptt_ctl(%rip), %eax
	movl	ptt_ctl+4(%rip), %edx
	.globl	ptt_on
ptt_on:	wrmsr
	.globl	ptt_ud2
ptt_ud2: ud2			/* #UD: FUP + TIP to ptt_ud, whose IRETQ (TIP) comes back past it */
	movq	%cr3, %rax
	movq	%rax, %cr3		/* MOV to CR3: PIP */
	movq	ptt_far_target(%rip), %rax
	call	*%rax			/* ptt_far, or its alias in the upper half: TIPs that need more than 16 IP bits */
	movl	ptt_iters(%rip), %r8d
.Lloop:
	movl	%r8d, %eax
	andl	$3, %eax
	leaq	.Ltable(%rip), %rdx
	movslq	(%rdx, %rax, 4), %rax
	addq	%rdx, %rax
	jmp	*%rax
.Lpath0:
	call	ptt_leaf
	jmp	.Ljoin
.Lpath1:
	leaq	ptt_leaf(%rip), %rax
	call	*%rax
	jmp	.Ljoin
.Lpath2:
	call	ptt_nest
	jmp	.Ljoin
.Lpath3:
	movl	$40, %ecx		/* 40 + 4 TNT bits before the next TIP: one long TNT */
.Linner:
	decl	%ecx
	jnz	.Linner
	movl	$2, %ecx
.Lloopi:
	loop	.Lloopi
	testl	$4, %r8d
	jz	.Ljoin
	nop
.Ljoin:
	decl	%r8d
	jnz	.Lloop
	movl	$0x570, %ecx
	xorl	%eax, %eax
	xorl	%edx, %edx
	.globl	ptt_off
ptt_off: wrmsr
	xchgw	%bx, %bx
	ret
	.size	ptt_run, . - ptt_run

	.section .rodata
	.balign	4
.Ltable:
	.long	.Lpath0 - .Ltable
	.long	.Lpath1 - .Ltable
	.long	.Lpath2 - .Ltable
	.long	.Lpath3 - .Ltable

	.text
/* ptt_leaf: a function on its own, the IP filter test's range */
	.globl	ptt_leaf, ptt_leaf_end
	.type	ptt_leaf, @function
ptt_leaf:
	movl	%r8d, %r9d
	testl	$8, %r9d
	jnz	1f
	incl	%r9d
1:	ret
ptt_leaf_end:
	.size	ptt_leaf, . - ptt_leaf

/* ptt_nest: calls ptt_leaf twice and ptt_odd, which returns past its
 * own call site: that RET's target is not what its CALL pushed, so it
 * can never be a compressed return. */
	.type	ptt_nest, @function
ptt_nest:
	call	ptt_leaf
	call	ptt_odd
	ud2				/* skipped by ptt_odd */
.Lodd_back:
	call	ptt_leaf
	.globl	ptt_nest_ret
ptt_nest_ret:
	ret
	.size	ptt_nest, . - ptt_nest

	.type	ptt_odd, @function
ptt_odd:
	leaq	.Lodd_back(%rip), %rax
	movq	%rax, (%rsp)
	.globl	ptt_odd_ret
ptt_odd_ret:
	ret
	.size	ptt_odd, . - ptt_odd

/* ptt_far: a function at least 64 KiB past the rest of the code, so that
 * the TIPs into it and back differ from the last IP above bit 15. */
	.balign	65536
	.globl	ptt_far
	.type	ptt_far, @function
ptt_far:
	nop
	ret
	.size	ptt_far, . - ptt_far

/* #UD handler: resumes past the 2-byte UD2 at ptt_ud2. */
	.globl	ptt_ud
	.type	ptt_ud, @function
ptt_ud:
	addq	$2, (%rsp)
	iretq
	.size	ptt_ud, . - ptt_ud

/* PMI handler (LVT performance-counter vector): counts, EOI. */
	.globl	ptt_pmi
	.type	ptt_pmi, @function
ptt_pmi:
	incq	ptt_pmi_count(%rip)
	pushq	%rax
	movl	$0xfee000b0, %eax	/* xAPIC EOI */
	movl	$0, (%rax)
	popq	%rax
	iretq
	.size	ptt_pmi, . - ptt_pmi

	.data
	.balign	8
	.globl	ptt_ctl, ptt_iters, ptt_pmi_count, ptt_far_target
ptt_ctl:	.quad	0
ptt_far_target:	.quad	0
ptt_iters:	.long	0
	.long	0
ptt_pmi_count:	.quad	0

	.section .note.GNU-stack, "", @progbits
