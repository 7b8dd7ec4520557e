/* SPDX-License-Identifier: MIT */
/*
 * archlbr_code.S - the known branches recorded under the Bochs
 * architectural-LBR model (tests/bochs/arch-lbr-model.sh,
 * docs/BOCHS-MODEL.md) and the INT handler archlbrtest.c installs.
 *
 * The sequence is lbr_branches.S's BRANCHES/LEAVES macros with the prefix
 * albt (that file is included whole for them: lbrt_run & co. are in this
 * image too, unused), followed by three far transfers, as in pmc_code.S.
 * Its branch instructions, in order, follow from the code alone ("BR_TYPE"
 * is the IA32_LBR_x_INFO encoding each record must carry):
 *   1 albt_jmp   -> albt_t1          near relative JMP   BR_TYPE 2
 *   2 albt_jz    -> albt_t2          Jcc                 0
 *   3 albt_jnz   -> albt_loop        Jcc                 0
 *   4 albt_jnz   -> albt_loop        Jcc                 0
 *   5 albt_jnz   not taken           (no record)
 *   6 albt_jmpi  -> albt_t3          near indirect JMP   1
 *   7 albt_call  -> albt_leaf        near relative CALL  4
 *   8 albt_leaf  -> albt_after       near RET            5
 *   9 albt_calli -> albt_leaf2       near indirect CALL  3
 *  10 albt_ret2  -> albt_after2      near RET            5
 *  11 albt_int   -> albt_int_handler INT n (an event)    8 (OTHER_BRANCH)
 *  12 albt_iret  -> albt_int_ret     IRETQ               8
 *  13 albt_lret  -> albt_lret_to     far RET (LRETQ)     8
 * 12 records, entry 0 (the newest) the LRETQ's.
 */
#include "tests/payload/lbr_branches.S"

#define ALBT_INT_VECTOR 0xe7	/* archlbrtest.c installs albt_int_handler there */

/* wrmsr MSR = 64-bit register REG (clobbers rax, rcx, rdx) */
.macro WRMSR_REG msr, reg
	movl	$\msr, %ecx
	movq	\reg, %rax
	movq	\reg, %rdx
	shrq	$32, %rdx
	wrmsr
.endm

	.text

/*
 * void albt_run(uint64_t lbr_ctl, uint64_t debugctl, uint64_t global_ctrl):
 * IA32_DEBUGCTL = debugctl, IA32_PERF_GLOBAL_CTRL = global_ctrl,
 * IA32_LBR_CTL = lbr_ctl, the sequence, IA32_LBR_CTL = 0,
 * IA32_PERF_GLOBAL_CTRL = 0, IA32_DEBUGCTL (kept in albt_debugctl_after)
 * = 0.  Nothing but the sequence's branches is recorded or counted: the
 * WRMSRs around it are no branches.  The caller has set IA32_LBR_DEPTH
 * (and the counters), interrupts off.  The two magic breakpoints bracket
 * the sequence for the Bochs debugger's own instruction trace.
 */
	.globl	albt_run
	.type	albt_run, @function
albt_run:
	movq	%rdx, %r8
	WRMSR_REG 0x1d9, %rsi		/* IA32_DEBUGCTL */
	WRMSR_REG 0x38f, %r8		/* IA32_PERF_GLOBAL_CTRL */
	WRMSR_REG 0x14ce, %rdi		/* IA32_LBR_CTL */
	xchgw	%bx, %bx		/* Bochs magic breakpoint */
	BRANCHES albt
	.globl	albt_int, albt_int_ret, albt_lret, albt_lret_to
albt_int:
	int	$ALBT_INT_VECTOR
albt_int_ret:
	leaq	albt_lret_to(%rip), %rax
	movl	%cs, %edx
	pushq	%rdx
	pushq	%rax
albt_lret:
	lretq
	ud2			/* not reached: the far return's target is not its next instruction */
albt_lret_to:
	xchgw	%bx, %bx
	xorl	%eax, %eax
	WRMSR_REG 0x14ce, %rax
	xorl	%eax, %eax
	WRMSR_REG 0x38f, %rax
	movl	$0x1d9, %ecx
	rdmsr
	movl	%eax, albt_debugctl_after(%rip)
	movl	%edx, albt_debugctl_after+4(%rip)
	DEBUGCTL 0
	ret
	LEAVES albt
	.size	albt_run, . - albt_run

/* INT ALBT_INT_VECTOR's handler: nothing but its IRETQ. */
	.globl	albt_int_handler, albt_iret
	.type	albt_int_handler, @function
albt_int_handler:
albt_iret:
	iretq
	.size	albt_int_handler, . - albt_int_handler

	.data
	.balign	8
	.globl	albt_debugctl_after
albt_debugctl_after:	.quad	0

	.section .note.GNU-stack, "", @progbits
