/* SPDX-License-Identifier: MIT */
/*
 * mem_code.S - memory accesses known from their construction, for the
 * memory-access tracing scenario (tests/bochs/mem-watch.sh computes every
 * expected access from these labels, as `nm` shows them, and the buffer
 * address memtest.efi prints, and compares them record for record).
 *
 * uint64_t tvm_run(uint64_t *buf, uint64_t cpu, volatile uint64_t *turn,
 *                  uint64_t a_iters, uint64_t b_steps)     (System V ABI)
 *
 * buf is the watched buffer (256 bytes watched, 4 lines of 64), cpu 0 or
 * 1, turn an unwatched word the two CPUs pass between them.  Interrupts
 * are off inside the window (TV_HC_TRACE_START .. TV_HC_TRACE_STOP), so
 * only this code runs in it.  Returns the stop hypercall's RAX.
 *
 * Phase A, both CPUs at once, i = 0 .. a_iters-1:
 *   tvm_a_store  movq  (cpu << 32 | i) -> buf[cpu]       write 8, line 0
 *   tvm_a_load   movq  buf[cpu] -> rax                   read 8, line 0
 *   tvm_a_xadd   lock xaddq 1, buf[8]                    locked RMW 8, line 1
 *   tvm_a_coll   movq  i -> buf[256] (same page, not watched: collateral)
 * Line 0 is written by both CPUs at different words: false sharing.
 * Line 1 is one counter both CPUs add to: true sharing; the old values
 * of all the XADDs are 0 .. 2 * a_iters - 1, each once.
 *
 * Phase B, turn by turn (CPU 0 first), s = 0 .. b_steps-1 each:
 *   tvm_b_w1     movl  (cpu << 16 | s) -> buf[32 + cpu] (32-bit words)   write 4, line 2
 *   tvm_b_r1     movl  buf32[32 + cpu] -> eax            read 4, line 2
 *   tvm_b_r2     movzbl byte buf + 128 + 4 * (1 - cpu)   read 1, line 2 (the other's word)
 *   tvm_b_w2     movb  s -> byte buf + 128 + 4 * cpu + 1 write 1, line 2
 * then the turn passes to the other CPU.  The order of these accesses over
 * both CPUs is fixed, so mtrace's sharing rule keeps a known subset.
 */
	.text
	.globl tvm_run
	.type tvm_run, @function
tvm_run:
	push	%rbx
	push	%r12
	push	%r13
	push	%r14
	push	%r15
	push	%rbp
	pushfq
	cli
	mov	%rdi, %r12		/* buf */
	mov	%rsi, %r13		/* cpu */
	mov	%rdx, %r14		/* turn */
	mov	%rcx, %r15		/* a_iters */
	mov	%r8, %rbp		/* b_steps */
	mov	$1, %eax		/* TV_HC_TRACE_START */
	xor	%ebx, %ebx
	xor	%ecx, %ecx
	xor	%edx, %edx
	vmcall

	/* --- phase A: both CPUs at once -------------------------------- */
	xor	%r8d, %r8d		/* i */
	test	%r15, %r15
	jz	2f
1:	mov	%r13, %r9
	shl	$32, %r9
	or	%r8, %r9
	.globl tvm_a_store
tvm_a_store:
	mov	%r9, (%r12,%r13,8)
	.globl tvm_a_load
tvm_a_load:
	mov	(%r12,%r13,8), %rax
	mov	$1, %edx
	.globl tvm_a_xadd
tvm_a_xadd:
	lock xadd %rdx, 64(%r12)
	.globl tvm_a_coll
tvm_a_coll:
	mov	%r8, 256(%r12)
	inc	%r8
	cmp	%r15, %r8
	jb	1b
2:
	/* --- phase B: turn by turn ------------------------------------- */
	xor	%r8d, %r8d		/* s */
	test	%rbp, %rbp
	jz	5f
3:	mov	(%r14), %rax		/* wait for our turn */
	cmp	%r13, %rax
	je	4f
	pause
	jmp	3b
4:	mov	%r13, %r9
	shl	$16, %r9
	or	%r8, %r9
	.globl tvm_b_w1
tvm_b_w1:
	mov	%r9d, 128(%r12,%r13,4)
	.globl tvm_b_r1
tvm_b_r1:
	mov	128(%r12,%r13,4), %eax
	mov	$1, %r10
	sub	%r13, %r10
	.globl tvm_b_r2
tvm_b_r2:
	movzbl	128(%r12,%r10,4), %eax
	.globl tvm_b_w2
tvm_b_w2:
	mov	%r8b, 129(%r12,%r13,4)
	mov	%r10, (%r14)		/* the other CPU's turn */
	inc	%r8
	cmp	%rbp, %r8
	jb	3b
5:
	mov	$2, %eax		/* TV_HC_TRACE_STOP */
	xor	%ebx, %ebx
	xor	%ecx, %ecx
	xor	%edx, %edx
	vmcall
	popfq
	pop	%rbp
	pop	%r15
	pop	%r14
	pop	%r13
	pop	%r12
	pop	%rbx
	ret
	.size tvm_run, . - tvm_run

/*
 * int64_t tvm_hcall(uint64_t fn, uint64_t rbx, uint64_t rcx, uint64_t rdx,
 *                   const char label[16])
 * A tracevisor hypercall with the 16-byte label in RSI:RDI (the memory
 * watch calls); returns RAX.
 */
	.globl tvm_hcall
	.type tvm_hcall, @function
tvm_hcall:
	push	%rbx
	mov	%rdi, %rax
	mov	%rsi, %rbx
	mov	%rcx, %r9		/* rdx argument */
	mov	%rdx, %rcx
	mov	%r9, %rdx
	mov	(%r8), %rsi
	mov	8(%r8), %rdi
	vmcall
	pop	%rbx
	ret
	.size tvm_hcall, . - tvm_hcall

	.section .note.GNU-stack, "", @progbits
