/* SPDX-License-Identifier: MIT */
/*
 * guest_helpers.S - assembly helpers shared by the bench's guest programs
 * (tests/payload/pmctest.c, archlbrtest.c; declared in guest_helpers.h):
 * a #GP handler for WRMSR/RDMSR probes, bare WRMSR/RDMSR, VMLAUNCH with
 * the exit coming back into the caller, and a tiny VMX guest.
 */
	.text

/* #GP handler for the probes: counts and skips the 2-byte instruction
 * that faulted (WRMSR, RDMSR, RDPMC). */
	.globl	guest_gp
	.type	guest_gp, @function
guest_gp:
	incq	guest_gp_count(%rip)
	addq	$8, %rsp		/* the error code */
	addq	$2, (%rsp)		/* past the faulting instruction */
	iretq
	.size	guest_gp, . - guest_gp

/* void guest_wrmsr(uint32_t msr, uint64_t value): a bare WRMSR. */
	.globl	guest_wrmsr
	.type	guest_wrmsr, @function
guest_wrmsr:
	movl	%edi, %ecx
	movq	%rsi, %rax
	movq	%rsi, %rdx
	shrq	$32, %rdx
	wrmsr
	ret
	.size	guest_wrmsr, . - guest_wrmsr

/* uint64_t guest_rdmsr(uint32_t msr): a bare RDMSR (0 after a #GP). */
	.globl	guest_rdmsr
	.type	guest_rdmsr, @function
guest_rdmsr:
	movl	%edi, %ecx
	xorl	%eax, %eax
	xorl	%edx, %edx
	rdmsr
	shlq	$32, %rdx
	orq	%rdx, %rax
	ret
	.size	guest_rdmsr, . - guest_rdmsr

/*
 * int guest_vmx_launch(void): see guest_helpers.h.  The VM exit leaves
 * GDTR and IDTR with limit 0xFFFF (SDM 3C "Loading Host Segment and
 * Descriptor-Table Registers"): both are reloaded as they were.
 * Callee-saved registers are preserved.
 */
	.globl	guest_vmx_launch
	.type	guest_vmx_launch, @function
guest_vmx_launch:
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
	.size	guest_vmx_launch, . - guest_vmx_launch

/* guest_vmx_guest: see guest_helpers.h. */
	.globl	guest_vmx_guest, guest_vmx_guest_leaf, guest_vmx_guest_ret
	.globl	guest_vmx_guest_jz, guest_vmx_guest_exit
	.type	guest_vmx_guest, @function
guest_vmx_guest:
	call	guest_vmx_guest_leaf
guest_vmx_guest_ret:
	xorl	%eax, %eax
guest_vmx_guest_jz:
	jz	guest_vmx_guest_exit
	nop
guest_vmx_guest_exit:
	vmcall
	ud2
guest_vmx_guest_leaf:
	ret
	.size	guest_vmx_guest, . - guest_vmx_guest

	.data
	.balign	8
	.globl	guest_gp_count
guest_gp_count:	.quad	0

	.section .note.GNU-stack, "", @progbits
