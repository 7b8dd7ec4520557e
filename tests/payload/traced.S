/* SPDX-License-Identifier: MIT */
/*
 * traced.S - the payload's traced window: code whose every branch is known
 * from its construction, for the MTF ground-truth scenario
 * (tests/bochs/trace-mtf.sh computes the expected branch list from these
 * labels, as `nm` shows them, and compares it record for record).
 *
 * uint64_t tv_traced(uint64_t iterations)   (System V ABI, iterations >= 1)
 *
 * Interrupts are off inside the window, so nothing but this code runs
 * between TV_HC_TRACE_START and TV_HC_TRACE_STOP.  Returns the stop
 * hypercall's status (RAX), 0 on success.
 *
 * Per iteration i (0-based), the branches are:
 *   tvt_jmp_ind -> tvt_case0 (i even) or tvt_case1 (i odd)    indirect jmp
 *   even: tvt_call_a -> tvt_leaf_a, tvt_ret_a -> tvt_after_a,   direct call, ret
 *         tvt_jmp_next -> tvt_next                              direct jmp
 *   odd:  tvt_call_b -> tvt_leaf_b, tvt_ret_b -> tvt_next       indirect call, ret
 *   (i & 2): tvt_jnz -> tvt_skip                                taken jcc
 *   i < iterations - 1: tvt_jcc -> tvt_loop                     taken jcc
 */
	.text
	.globl tv_traced
	.type tv_traced, @function
tv_traced:
	push	%rbx
	push	%r12
	pushfq
	cli
	mov	%rdi, %r12
	mov	$1, %eax		/* TV_HC_TRACE_START */
	xor	%ebx, %ebx
	xor	%ecx, %ecx
	xor	%edx, %edx
	vmcall
	.globl tvt_after_start
tvt_after_start:
	xor	%ebx, %ebx
	.globl tvt_loop
tvt_loop:
	mov	%ebx, %eax
	and	$1, %eax
	lea	tvt_table(%rip), %rcx
	movslq	(%rcx,%rax,4), %rdx
	add	%rcx, %rdx
	.globl tvt_jmp_ind
tvt_jmp_ind:
	jmp	*%rdx
	.globl tvt_case0
tvt_case0:
	.globl tvt_call_a
tvt_call_a:
	call	tvt_leaf_a
	.globl tvt_after_a
tvt_after_a:
	.globl tvt_jmp_next
tvt_jmp_next:
	jmp	tvt_next
	.globl tvt_case1
tvt_case1:
	lea	tvt_leaf_b(%rip), %rax
	.globl tvt_call_b
tvt_call_b:
	call	*%rax
	.globl tvt_next
tvt_next:
	test	$2, %ebx
	.globl tvt_jnz
tvt_jnz:
	jnz	tvt_skip
	nop
	.globl tvt_skip
tvt_skip:
	inc	%ebx
	cmp	%r12d, %ebx
	.globl tvt_jcc
tvt_jcc:
	jb	tvt_loop
	mov	$2, %eax		/* TV_HC_TRACE_STOP */
	vmcall
	popfq
	pop	%r12
	pop	%rbx
	ret
	.size tv_traced, . - tv_traced

	.globl tvt_leaf_a
tvt_leaf_a:
	.globl tvt_ret_a
tvt_ret_a:
	ret
	.globl tvt_leaf_b
tvt_leaf_b:
	nop
	.globl tvt_ret_b
tvt_ret_b:
	ret

	.balign 4
tvt_table:
	.long	tvt_case0 - tvt_table
	.long	tvt_case1 - tvt_table

	.section .note.GNU-stack, "", @progbits
