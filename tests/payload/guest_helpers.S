/* SPDX-License-Identifier: MIT */
/*
 * guest_helpers.S - assembly helpers shared by the bench's guest programs
 * (tests/payload/pmctest.c, archlbrtest.c, pttest.c, btstest.c; declared
 * in guest_helpers.h): a #GP handler for WRMSR/RDMSR probes, bare
 * WRMSR/RDMSR, VMLAUNCH with the exit coming back into the caller (with
 * or without an MSR write right before it), and a tiny VMX guest.
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
 * int guest_vmx_launch(void) and
 * int guest_vmx_launch_wrmsr(uint32_t msr, uint64_t value): see
 * guest_helpers.h.  One body (VMX_LAUNCH); the second writes the MSR right
 * before its VMLAUNCH (at guest_vmx_wrmsr_vmlaunch), the first has no
 * instruction of that.  The VM exit leaves GDTR and IDTR with limit 0xFFFF
 * (SDM 3C "Loading Host Segment and Descriptor-Table Registers"): both are
 * reloaded as they were.  Callee-saved registers are preserved.
 */
.macro VMX_LAUNCH name, wrmsr
	.globl	\name
	.type	\name, @function
\name:
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
	leaq	.Lvmexit\@(%rip), %rdx
	movl	$0x6c16, %eax		/* HOST_RIP */
	vmwrite	%rdx, %rax
.if \wrmsr
	movl	%edi, %ecx
	movq	%rsi, %rax
	movq	%rsi, %rdx
	shrq	$32, %rdx
	wrmsr				/* its next IP: the VMLAUNCH */
	.globl	guest_vmx_wrmsr_vmlaunch
guest_vmx_wrmsr_vmlaunch:
.endif
	vmlaunch
	movl	$1, %eax
	jmp	.Lvmdone\@
.Lvmexit\@:
	lgdt	(%rsp)
	lidt	16(%rsp)
	xorl	%eax, %eax
.Lvmdone\@:
	addq	$40, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbp
	popq	%rbx
	ret
	.size	\name, . - \name
.endm

	VMX_LAUNCH guest_vmx_launch, 0
	VMX_LAUNCH guest_vmx_launch_wrmsr, 1

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
