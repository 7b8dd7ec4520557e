/* SPDX-License-Identifier: MIT */
/*
 * vmx_entry.S - the three pieces of VMX that cannot be written in C:
 * the launch that returns twice, the VM-exit entry point, and the host's
 * exception stubs.  Everything else is C above vmm/hw.h.
 */

#define VMCS_GUEST_RSP    0x681c
#define VMCS_GUEST_RIP    0x681e
#define VMCS_GUEST_RFLAGS 0x6820

	.text

/*
 * int hw_vmx_launch_here(void)
 *
 * Makes the guest continue exactly here: GUEST_RSP/RIP/RFLAGS are set to
 * this function's own frame, then VMLAUNCH.  On success the CPU is in VMX
 * non-root operation at label 1 with the same stack and registers, and
 * the call returns 0 - now as the guest.  If VMLAUNCH fails as an
 * instruction it returns -1 (VMfailInvalid) or -2 (VMfailValid: see
 * VM_INSTRUCTION_ERROR), still in VMX root.  A VM entry that fails its
 * guest-state checks arrives at the exit entry instead (SDM 3C 27.8); the
 * host then leaves through hw_vmx_launch_fail_return().
 */
	.globl hw_vmx_launch_here
	.type hw_vmx_launch_here, @function
hw_vmx_launch_here:
	push %rbp
	mov %rsp, %rbp
	push %rbx
	push %r12
	push %r13
	push %r14
	push %r15
	pushfq
	pop %rdx
	mov $VMCS_GUEST_RFLAGS, %rax
	vmwrite %rdx, %rax
	mov $VMCS_GUEST_RSP, %rax
	vmwrite %rsp, %rax
	lea 1f(%rip), %rdx
	mov $VMCS_GUEST_RIP, %rax
	vmwrite %rdx, %rax
	vmlaunch
	/* Only reached when VMLAUNCH itself failed. */
	mov $-1, %eax
	jc 2f
	mov $-2, %eax
	jmp 2f
1:	/* The guest starts here. */
	xor %eax, %eax
2:	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbx
	pop %rbp
	ret
	.size hw_vmx_launch_here, . - hw_vmx_launch_here

/*
 * void hw_vmx_launch_fail_return(uint64_t launch_rsp, int err)  (noreturn)
 *
 * After a failed VM entry the CPU is in VMX root on the host stack.
 * launch_rsp is the GUEST_RSP hw_vmx_launch_here wrote: its saved registers
 * are still there, so unwinding them returns err from hw_vmx_launch_here.
 */
	.globl hw_vmx_launch_fail_return
	.type hw_vmx_launch_fail_return, @function
hw_vmx_launch_fail_return:
	mov %rdi, %rsp
	mov %esi, %eax
	jmp 2b
	.size hw_vmx_launch_fail_return, . - hw_vmx_launch_fail_return

/*
 * VM-exit entry (HOST_RIP).  HOST_RSP points at a 16-byte slot at the
 * top of this CPU's host stack whose first quadword is its struct per_cpu
 * pointer.  Guest GPRs are saved as struct guest_regs (rax first at the
 * lowest address), vmx_exit_handler(cpu, regs) decides, and the guest is
 * resumed with its (possibly changed) registers.
 */
	.globl vmx_exit_entry
	.type vmx_exit_entry, @function
vmx_exit_entry:
	push %r15
	push %r14
	push %r13
	push %r12
	push %r11
	push %r10
	push %r9
	push %r8
	push %rdi
	push %rsi
	push %rbp
	push $0			/* rsp: the guest's is in the VMCS */
	push %rbx
	push %rdx
	push %rcx
	push %rax
	mov %rsp, %rsi		/* struct guest_regs * */
	mov 16*8(%rsp), %rdi	/* struct per_cpu * */
	cld
	call vmx_exit_handler
	pop %rax
	pop %rcx
	pop %rdx
	pop %rbx
	add $8, %rsp
	pop %rbp
	pop %rsi
	pop %rdi
	pop %r8
	pop %r9
	pop %r10
	pop %r11
	pop %r12
	pop %r13
	pop %r14
	pop %r15
	vmresume
	/* VMRESUME failed: report from C, never returns. */
	mov (%rsp), %rdi
	and $-16, %rsp
	call vmx_resume_failed
	ud2
	.size vmx_exit_entry, . - vmx_exit_entry

/*
 * Host exception stubs: a CPU fault while tracevisor runs in VMX root is
 * a tracevisor bug.  Each stub pushes a dummy error code where the CPU
 * pushes none, then its vector, and host_exception(vector, frame) reports
 * and stops this CPU.
 */
	.macro HOST_STUB vec, has_err
	.align 16
host_stub_\vec:
	.if \has_err == 0
	push $0
	.endif
	push $\vec
	jmp host_stub_common
	.endm

	.align 16
	.globl host_stub_table
host_stub_table:
	HOST_STUB 0, 0
	HOST_STUB 1, 0
	HOST_STUB 2, 0
	HOST_STUB 3, 0
	HOST_STUB 4, 0
	HOST_STUB 5, 0
	HOST_STUB 6, 0
	HOST_STUB 7, 0
	HOST_STUB 8, 1
	HOST_STUB 9, 0
	HOST_STUB 10, 1
	HOST_STUB 11, 1
	HOST_STUB 12, 1
	HOST_STUB 13, 1
	HOST_STUB 14, 1
	HOST_STUB 15, 0
	HOST_STUB 16, 0
	HOST_STUB 17, 1
	HOST_STUB 18, 0
	HOST_STUB 19, 0
	HOST_STUB 20, 0
	HOST_STUB 21, 1

host_stub_common:
	mov (%rsp), %rdi	/* vector */
	lea 8(%rsp), %rsi	/* error code, RIP, CS, RFLAGS, RSP, SS */
	and $-16, %rsp
	call host_exception
	ud2

/* Each stub is 16-byte aligned: stub n is at host_stub_table + 16 * n. */
	.globl host_stub_count
	.section .rodata
host_stub_count:
	.long 22

	.section .note.GNU-stack, "", @progbits
