/* SPDX-License-Identifier: MIT */
/*
 * test_engine_btf.c - the engine driving the BTF+LBR backend on the fake
 * seam (fixture: ../engine_hw.h): what a window writes to the VMCS
 * (RFLAGS.TF, GUEST_IA32_DEBUGCTL, exception bitmap bit 1, the
 * pending-debug BS rule), #DB exits turned into branch records from the
 * LBR top or reflected to the guest, the guest's DEBUGCTL accesses kept
 * away from the engine's bits; a #DB exit the engine does not own.
 */
#include "../engine_hw.h"

/* --- BTF ---------------------------------------------------------------------- */

static void test_btf_window_vmcs(void **state)
{
	struct trace_event ev[4];

	(void)state;
	/* No window yet: nothing of the engine's in the guest. */
	cpuid_exit(0x0ffe);
	assert_int_equal(vmcs(VMCS_GUEST_RFLAGS), 0x2);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(vmcs(VMCS_EXCEPTION_BITMAP), 0);

	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_true(cpu.trace->b.active);
	/* Armed for the entry that resumes the guest after the VMCALL. */
	assert_int_equal(vmcs(VMCS_GUEST_RFLAGS), 0x2 | TF);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_BTF | DBG_LBR);
	assert_int_equal(vmcs(VMCS_EXCEPTION_BITMAP), 1u << 1);
	/* LBR_SELECT 0 (every branch: the top must be the step's), stack emptied. */
	assert_true(hw_fake_has_msr(SELECT));
	assert_int_equal(hw_fake_get_msr(SELECT), 0);
	/* MTF is not used. */
	assert_false(vmcs(VMCS_PROC_BASED_CTLS) & CPU_MONITOR_TRAP_FLAG);

	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_EBUSY);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_false(cpu.trace->b.active);
	assert_int_equal(windows_done, 1);
	/* Disarmed: our TF and our DEBUGCTL bits gone, the guest's bit kept. */
	assert_int_equal(vmcs(VMCS_GUEST_RFLAGS), 0x2);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	/* #DB stays intercepted: TF may linger in frames the guest saved. */
	assert_int_equal(vmcs(VMCS_EXCEPTION_BITMAP), 1u << 1);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_EBUSY);

	assert_int_equal(events(ev, 4), 2);
	assert_int_equal(ev[0].type, TV_REC_START);
	assert_int_equal(ev[1].type, TV_REC_STOP);
	assert_non_null(strstr(logbuf, "window 1 stopped (hypercall): 0 branches, 0 filtered, 0 dropped, 0 undecodable, 0 from unknown, 0 #DB exits, 0 reflected, 0 stray; ring lost 0 records"));
}

/* SDM 3C 27.3.1.5: with STI/MOV-SS blocking or HLT, BS = TF && !BTF. */
static void test_btf_pending_bs_rule(void **state)
{
	(void)state;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	/*
	 * TF and BTF on, STI blocking (an exit whose handler does not skip
	 * an instruction, e.g. an EPT violation): a pending BS would fail
	 * the entry.
	 */
	hw_fake_vmcs_set(VMCS_GUEST_INTERRUPTIBILITY, INTERRUPTIBILITY_STI);
	hw_fake_vmcs_set(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, PENDING_DBG_BS | 0x1);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	assert_int_equal(vmcs(VMCS_GUEST_PENDING_DBG_EXCEPTIONS), 0x1);
	assert_true(vmcs(VMCS_GUEST_RFLAGS) & TF);
	/* The same in HLT. */
	hw_fake_vmcs_set(VMCS_GUEST_INTERRUPTIBILITY, 0);
	hw_fake_vmcs_set(VMCS_GUEST_ACTIVITY_STATE, ACTIVITY_HLT);
	hw_fake_vmcs_set(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, PENDING_DBG_BS);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	assert_int_equal(vmcs(VMCS_GUEST_PENDING_DBG_EXCEPTIONS), 0);
	/* No blocking, active: the field is left as the exit saved it. */
	hw_fake_vmcs_set(VMCS_GUEST_ACTIVITY_STATE, ACTIVITY_ACTIVE);
	hw_fake_vmcs_set(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, 0x2);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	assert_int_equal(vmcs(VMCS_GUEST_PENDING_DBG_EXCEPTIONS), 0x2);
	/*
	 * After the window, in a MOV-SS shadow: TF comes off, and with it
	 * any BS (TF = 0 needs BS = 0).
	 */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x2 | TF);
	hw_fake_vmcs_set(VMCS_GUEST_IA32_DEBUGCTL, DBG_GUEST | DBG_BTF | DBG_LBR);
	btf_unit(&cpu.trace->b)->btf.tf_armed = true;    /* as left by a window that just ended */
	hw_fake_vmcs_set(VMCS_GUEST_INTERRUPTIBILITY, INTERRUPTIBILITY_MOV_SS);
	hw_fake_vmcs_set(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, PENDING_DBG_BS);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	assert_int_equal(vmcs(VMCS_GUEST_RFLAGS), 0x2);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(vmcs(VMCS_GUEST_PENDING_DBG_EXCEPTIONS), 0);
}

static void test_btf_db_exit_records_lbr_top(void **state)
{
	struct trace_event ev[8];

	(void)state;
	gmem[0x1003] = 0xeb;              /* 0x1003: jmp 0x1010 */
	gmem[0x1004] = 0x0b;
	gmem[0x1010] = 0xe8;              /* 0x1010: call 0x1100 */
	memcpy(&gmem[0x1011], "\xeb\x00\x00\x00", 4);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	/* An older record below the top must not be taken. */
	lbr_push(0x0f00, 0x0f10);
	lbr_push(0x1003, 0x1010);
	db_exit(QUAL_BS, 0x1010);
	assert_int_equal(vmcs(VMCS_ENTRY_INTR_INFO), 0);          /* nothing injected */
	assert_true(vmcs(VMCS_GUEST_RFLAGS) & TF);                 /* still armed */
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_BTF | DBG_LBR);
	lbr_push(0x1010, 0x1100);
	db_exit(QUAL_BS, 0x1100);
	/* A step whose top does not end at RIP: from unknown (0). */
	db_exit(QUAL_BS, 0x1200);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);

	assert_int_equal(events(ev, 8), 5);
	assert_int_equal(ev[1].type, TV_REC_BRANCH);
	assert_int_equal(ev[1].u.branch.from, 0x1003);
	assert_int_equal(ev[1].u.branch.to, 0x1010);
	assert_int_equal(ev[1].u.branch.kind, TV_BR_JMP);
	assert_int_equal(ev[2].u.branch.from, 0x1010);
	assert_int_equal(ev[2].u.branch.to, 0x1100);
	assert_int_equal(ev[2].u.branch.kind, TV_BR_CALL);
	assert_int_equal(ev[3].u.branch.from, 0);
	assert_int_equal(ev[3].u.branch.to, 0x1200);
	assert_int_equal(ev[4].type, TV_REC_STOP);
	assert_int_equal(cpu.trace->b.window_branches, 3);
	/* The LBR stack is read, never emptied, by BTF. */
	assert_int_equal(hw_fake_get_msr(FROM(3)), 0x1010);
	assert_non_null(strstr(logbuf, ": 3 branches, 0 filtered, 0 dropped, 0 undecodable, 1 from unknown, 3 #DB exits, 0 reflected, 0 stray;"));
}

static void test_btf_guest_breakpoint_reflected(void **state)
{
	struct trace_event ev[4];

	(void)state;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	hw_write_dr6(0xffff0ff0);
	/* A data breakpoint (B0) of the guest's, no single step. */
	db_exit(QUAL_B0, 0x1008);
	assert_int_equal(vmcs(VMCS_ENTRY_INTR_INFO), DB_HW_EXC);   /* #DB injected */
	assert_int_equal(hw_read_dr6(), 0xffff0ff1);                /* B0, as delivery writes */
	/* The handler's frame holds the guest's TF (0): not armed on this entry. */
	assert_false(vmcs(VMCS_GUEST_RFLAGS) & TF);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_BTF | DBG_LBR);
	/* The next exit (in the guest's handler) arms again. */
	cpuid_exit(0x3000);
	assert_true(vmcs(VMCS_GUEST_RFLAGS) & TF);
	/* General detect: DR7.GD cleared as delivery would. */
	hw_fake_vmcs_set(VMCS_GUEST_DR7, 0x400 | (1u << 13));
	db_exit(QUAL_BD, 0x3004);
	assert_int_equal(vmcs(VMCS_ENTRY_INTR_INFO), DB_HW_EXC);
	assert_int_equal(vmcs(VMCS_GUEST_DR7), 0x400);
	assert_true(hw_read_dr6() & (1u << 13));
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(events(ev, 4), 2);                         /* no branch */
	assert_int_equal(btf_unit(&cpu.trace->b)->btf.stats.reflected, 2);
}

/* INT1 (ICEBP) is the guest's: delivered as it came, with its length. */
static void test_btf_int1_passed_through(void **state)
{
	uint32_t info = INTR_INFO_VALID | (INTR_TYPE_PRIV_SW_EXC << INTR_INFO_TYPE_SHIFT) | 1u;

	(void)state;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x1004);
	hw_fake_vmcs_set(VMCS_EXIT_INTR_INFO, info);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 1);
	hw_fake_vmcs_set(VMCS_EXIT_QUALIFICATION, 0);
	assert_int_equal(exit_and_entry(EXIT_REASON_EXCEPTION_NMI), EXIT_RESUME);
	assert_int_equal(vmcs(VMCS_ENTRY_INTR_INFO), info);
	assert_int_equal(vmcs(VMCS_ENTRY_INSTRUCTION_LEN), 1);
	assert_int_equal(btf_unit(&cpu.trace->b)->btf.stats.db_exits, 0);
}

/* After the window: a single step from a TF left in a guest frame is swallowed. */
static void test_btf_stray_step_after_window(void **state)
{
	(void)state;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x2 | TF);   /* IRET restored our TF */
	db_exit(QUAL_BS, 0x5000);
	assert_int_equal(vmcs(VMCS_ENTRY_INTR_INFO), 0);
	assert_false(vmcs(VMCS_GUEST_RFLAGS) & TF);
	assert_int_equal(btf_unit(&cpu.trace->b)->btf.stats.stray, 1);
}

static void test_btf_limits_and_refusals(void **state)
{
	struct trace_event ev[8];

	(void)state;
	engine(TV_SOURCE_BTF, TV_TRIG_HYPERCALL, 2, TRACE_CPL_ALL);
	/* The guest single-steps itself: no window. */
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x2 | TF);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_EBUSY);
	assert_false(cpu.trace->b.active);
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x2);
	/* stop_after 2: the second recorded branch closes the window. */
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	lbr_push(0x1003, 0x1010);
	db_exit(QUAL_BS, 0x1010);
	assert_true(cpu.trace->b.active);
	lbr_push(0x1012, 0x1020);
	db_exit(QUAL_BS, 0x1020);
	assert_false(cpu.trace->b.active);
	assert_false(vmcs(VMCS_GUEST_RFLAGS) & TF);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(events(ev, 8), 4);
	assert_int_equal(ev[3].type, TV_REC_STOP);
	assert_int_equal(ev[3].u.startstop.trigger, TV_TRIG_LIMIT);

	/* No PDCM: no LBR format, no btf. */
	memset(&lbr_unit(&cpu.trace->b)->caps, 0, sizeof(lbr_unit(&cpu.trace->b)->caps));
	lbr_unit(&cpu.trace->b)->probed = false;
	hw_fake_set_cpuid(1, 0, 0x00050654, 0, 0, 0);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "no usable LBR stack"));
	/* LBR there, but the VMCS does not switch DEBUGCTL. */
	hw_fake_set_cpuid(1, 0, 0x00050654, 0, 1u << 15, 0);
	lbr_unit(&cpu.trace->b)->probed = false;
	cpu.entry_ctls = 0;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_false(cpu.trace->b.active);
}

/* The boot trigger opens a btf window at the first exit, armed on its entry. */
static void test_btf_boot_trigger(void **state)
{
	(void)state;
	engine(TV_SOURCE_BTF, TV_TRIG_BOOT, 0, TRACE_CPL_ALL);
	cpuid_exit(0x1000);
	assert_true(cpu.trace->b.active);
	assert_true(vmcs(VMCS_GUEST_RFLAGS) & TF);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_BTF | DBG_LBR);
}

/*
 * The guest's RDMSR/WRMSR of IA32_DEBUGCTL during a window: it reads its
 * own value, cannot switch BTF/LBR off, and its own bits reach the field.
 */
static void test_btf_guest_debugctl_access(void **state)
{
	(void)state;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	regs.rcx = MSR_IA32_DEBUGCTL;
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 2);
	assert_int_equal(exit_and_entry(EXIT_REASON_RDMSR), EXIT_RESUME);
	assert_int_equal(regs.rax, DBG_GUEST);
	assert_int_equal(regs.rdx, 0);
	/* The guest clears everything, then sets LBR itself. */
	regs.rcx = MSR_IA32_DEBUGCTL;
	regs.rax = 0;
	regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_BTF | DBG_LBR);
	regs.rcx = MSR_IA32_DEBUGCTL;
	regs.rax = DBG_LBR;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	regs.rcx = MSR_IA32_DEBUGCTL;
	assert_int_equal(exit_and_entry(EXIT_REASON_RDMSR), EXIT_RESUME);
	assert_int_equal(regs.rax, DBG_LBR);                 /* what it wrote */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	/* Its LBR bit is a shadow: never in the hardware, not even now. */
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), 0);
}

/* A #DB exit the engine does not own (mtf source): unexpected, the CPU stops. */
static void test_db_exit_not_ours_stops(void **state)
{
	(void)state;
	engine(TV_SOURCE_MTF, TV_TRIG_HYPERCALL, 0, TRACE_CPL_ALL);
	hw_fake_vmcs_set(VMCS_EXIT_INTR_INFO, DB_HW_EXC);
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_EXCEPTION_NMI);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_STOP_CPU);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_btf_window_vmcs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_pending_bs_rule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_db_exit_records_lbr_top, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_guest_breakpoint_reflected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_int1_passed_through, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_stray_step_after_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_limits_and_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_boot_trigger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_guest_debugctl_access, setup, teardown),
		cmocka_unit_test_setup_teardown(test_db_exit_not_ours_stops, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
