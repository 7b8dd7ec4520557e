/* SPDX-License-Identifier: MIT */
/*
 * vmx_entry.S - the three pieces of VMX that cannot be written in C:
 * the launch that returns twice, the VM-exit entry point, and the host's
 * exception stubs.  Everything else is C above vmm/hw/hw.h.
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
 * void hw_vmx_devirt(struct hw_devirt_frame *f)  (noreturn)
 *
 * Leave VMX for good and continue as the guest described by f (offsets:
 * struct hw_devirt_frame in vmm/hw/hw.h, asserted in vmm/exit/devirt.c).  Order
 * matters: the guest's CR3 maps this code and f (identity-mapped memory),
 * CR4.VMXE can only clear after VMXOFF, segment loads zero the FS/GS bases
 * so the MSR writes come after them, and IRETQ loads CS, SS and RSP.
 */
	.globl hw_vmx_devirt
	.type hw_vmx_devirt, @function
hw_vmx_devirt:
	mov %rdi, %rbx
	lgdt 224(%rbx)
	lidt 240(%rbx)
	mov 208(%rbx), %rax
	mov %rax, %cr3
	vmxoff
	mov 216(%rbx), %rax
	mov %rax, %cr4
	mov 160(%rbx), %rax
	mov %ax, %ds
	mov 168(%rbx), %rax
	mov %ax, %es
	mov 176(%rbx), %rax
	mov %ax, %fs
	mov 184(%rbx), %rax
	mov %ax, %gs
	mov $0xc0000100, %ecx	/* IA32_FS_BASE */
	mov 192(%rbx), %rax
	mov %rax, %rdx
	shr $32, %rdx
	wrmsr
	mov $0xc0000101, %ecx	/* IA32_GS_BASE */
	mov 200(%rbx), %rax
	mov %rax, %rdx
	shr $32, %rdx
	wrmsr
	/* IRETQ frame in f->iret: RIP, CS, RFLAGS, RSP, SS */
	mov 128(%rbx), %rax
	mov %rax, 256(%rbx)
	mov 144(%rbx), %rax
	mov %rax, 264(%rbx)
	mov 136(%rbx), %rax
	mov %rax, 272(%rbx)
	mov 32(%rbx), %rax
	mov %rax, 280(%rbx)
	mov 152(%rbx), %rax
	mov %rax, 288(%rbx)
	lea 256(%rbx), %rsp
	mov 0(%rbx), %rax
	mov 8(%rbx), %rcx
	mov 16(%rbx), %rdx
	mov 40(%rbx), %rbp
	mov 48(%rbx), %rsi
	mov 56(%rbx), %rdi
	mov 64(%rbx), %r8
	mov 72(%rbx), %r9
	mov 80(%rbx), %r10
	mov 88(%rbx), %r11
	mov 96(%rbx), %r12
	mov 104(%rbx), %r13
	mov 112(%rbx), %r14
	mov 120(%rbx), %r15
	mov 24(%rbx), %rbx
	iretq
	.size hw_vmx_devirt, . - hw_vmx_devirt

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
	.align 16
host_stub_2:			/* NMI: the guest's, taken in VMX root */
	jmp host_nmi_entry
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

/*
 * An NMI while tracevisor runs in VMX root is not tracevisor's: host_nmi()
 * records it for injection into the guest at the next VM entry, and the
 * interrupted code goes on.  Every register is preserved (the NMI can
 * arrive anywhere, even inside the exit stub).
 */
host_nmi_entry:
	push %rax
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	push %r8
	push %r9
	push %r10
	push %r11
	push %rbx
	mov %rsp, %rbx
	and $-16, %rsp
	cld
	call host_nmi
	mov %rbx, %rsp
	pop %rbx
	pop %r11
	pop %r10
	pop %r9
	pop %r8
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rax
	iretq

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
