/* SPDX-License-Identifier: MIT */
/*
 * test_engine_lbr.c - the engine driving the LBR backend on the fake seam
 * (fixture: ../engine_hw.h): the stack drained at exits and at stop
 * without duplicates, full stacks flagged and counted, architectural LBR
 * (GUEST_IA32_LBR_CTL, BR_TYPE kinds, refusals), and pmi = on (the
 * counter, the frozen stack, the guest's PMU view).
 */
#include "../engine_hw.h"

/* --- LBR ------------------------------------------------------------------------ */

static void lbr_engine(uint64_t stop_after, uint32_t cpl)
{
	engine(TV_SOURCE_LBR, TV_TRIG_HYPERCALL, stop_after, cpl);
}

static void test_lbr_window_vmcs(void **state)
{
	(void)state;
	lbr_engine(0, TRACE_CPL_KERNEL);
	hw_fake_set_msr(FROM(5), 0x777);       /* older than the window */
	hw_fake_set_msr(TO(5), 0x888);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_LBR);
	assert_int_equal(vmcs(VMCS_GUEST_RFLAGS), 0x2);              /* no TF */
	assert_int_equal(vmcs(VMCS_EXCEPTION_BITMAP), 0);             /* no #DB */
	assert_int_equal(hw_fake_get_msr(SELECT), 1u << 1);           /* CPL_NEQ_0 suppressed */
	assert_int_equal(hw_fake_get_msr(FROM(5)), 0);                /* emptied */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(windows_done, 1);
}

static void test_lbr_drains_at_exits_once(void **state)
{
	struct trace_event ev[16];

	(void)state;
	lbr_engine(0, TRACE_CPL_ALL);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	lbr_push(0x1001, 0x1101);
	lbr_push(0x1002, 0x1102);
	lbr_push(0x1003, 0x1103);
	cpuid_exit(0x1200);                   /* drains 3 */
	assert_int_equal(hw_fake_get_msr(FROM(1)), 0);
	cpuid_exit(0x1202);                   /* nothing new: nothing twice */
	lbr_push(0x1004, 0x1104);
	lbr_push(0x1005, 0x1105);
	cpuid_exit(0x1204);                   /* drains 2 */
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_LBR);
	lbr_push(0x1006, 0x1106);             /* between the last exit and STOP */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);

	assert_int_equal(events(ev, 16), 8);
	assert_int_equal(ev[0].type, TV_REC_START);
	for (unsigned i = 1; i <= 6; i++) {
		assert_int_equal(ev[i].type, TV_REC_LBR);
		assert_int_equal(ev[i].u.branch.from, 0x1000 + i);
		assert_int_equal(ev[i].u.branch.to, 0x1100 + i);
		assert_int_equal(ev[i].u.branch.lbr_info, 3);
		assert_false(ev[i].u.branch.flags & TV_BRF_LBR_FULL);
	}
	assert_int_equal(ev[7].type, TV_REC_STOP);
	assert_int_equal(cpu.trace->b.window_branches, 6);
	/* Reads: the VMCALL that started, three CPUID exits, the stop. */
	assert_non_null(strstr(logbuf, "window 1 stopped (hypercall): 6 branches, 0 filtered, 0 dropped, 5 reads, 0 full reads (older branches lost); ring lost 0 records"));
	/* Not drained outside a window. */
	lbr_push(0x1007, 0x1107);
	cpuid_exit(0x1300);
	assert_int_equal(hw_fake_get_msr(FROM(7)), 0x1007);
	assert_int_equal(events(ev, 16), 8);
}

/* More branches than the stack holds between two exits: flagged and counted. */
static void test_lbr_full_stack(void **state)
{
	struct trace_event ev[48];
	size_t n;

	(void)state;
	lbr_engine(0, TRACE_CPL_ALL);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (unsigned i = 0; i < 40; i++)     /* 40 branches, 32 kept */
		lbr_push(0x2000 + i, 0x3000 + i);
	cpuid_exit(0x1200);
	lbr_push(0x4000, 0x5000);
	cpuid_exit(0x1202);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	n = events(ev, 48);
	assert_int_equal(n, 1 + 32 + 1 + 1);
	for (unsigned k = 0; k < 32; k++) {
		assert_int_equal(ev[1 + k].u.branch.from, 0x2000 + 8 + k);   /* the newest 32 */
		assert_int_equal(!!(ev[1 + k].u.branch.flags & TV_BRF_LBR_FULL), k == 0);
	}
	assert_int_equal(ev[33].u.branch.from, 0x4000);
	assert_false(ev[33].u.branch.flags & TV_BRF_LBR_FULL);
	assert_int_equal(lbr_unit(&cpu.trace->b)->lbr.stats.full_reads, 1);
	assert_non_null(strstr(logbuf, ": 33 branches, 0 filtered, 0 dropped, 4 reads, 1 full reads (older branches lost);"));
}

static void test_lbr_stop_after_and_full_ring(void **state)
{
	struct trace_event ev[8];

	(void)state;
	lbr_engine(2, TRACE_CPL_ALL);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	lbr_push(0x1001, 0x1101);
	cpuid_exit(0x1200);
	assert_true(cpu.trace->b.active);
	lbr_push(0x1002, 0x1102);
	lbr_push(0x1003, 0x1103);
	cpuid_exit(0x1202);                   /* 3 >= 2: closed at this drain */
	assert_false(cpu.trace->b.active);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(events(ev, 8), 5);
	assert_int_equal(ev[4].u.startstop.trigger, TV_TRIG_LIMIT);
}

/* Architectural LBR is not driven: refused, said so. */
/* An arch LBR CPU (CPUID.(7,0):EDX[19], leaf 1CH: depths 8-32, all filters). */
static void arch_lbr_cpu(void)
{
	hw_fake_set_cpuid(0, 0, 0x1c, 0x756e6547, 0x6c65746e, 0x49656e69);
	hw_fake_set_cpuid(7, 0, 0, 0, 0, 1u << 19);
	hw_fake_set_cpuid(0x1c, 0, 0xf, 0x7, 0x7, 0);
	hw_fake_set_msr(0x14ce, 0);
	hw_fake_set_msr(0x14cf, 32);
	for (uint32_t i = 0; i < 32; i++) {
		hw_fake_set_msr(0x1500 + i, 0);
		hw_fake_set_msr(0x1600 + i, 0);
		hw_fake_set_msr(0x1200 + i, 0);
	}
}

/* Arch LBR records one more branch: entry 0 is the newest, the rest shift. */
static void arch_push(uint64_t from, uint64_t to, uint32_t br_type)
{
	for (uint32_t i = 31; i > 0; i--) {
		hw_fake_set_msr(0x1500 + i, hw_fake_get_msr(0x1500 + i - 1));
		hw_fake_set_msr(0x1600 + i, hw_fake_get_msr(0x1600 + i - 1));
		hw_fake_set_msr(0x1200 + i, hw_fake_get_msr(0x1200 + i - 1));
	}
	hw_fake_set_msr(0x1500, from);
	hw_fake_set_msr(0x1600, to);
	hw_fake_set_msr(0x1200, (uint64_t)br_type << 56 | 7);
}

/* Without the VMX LBR_CTL controls an arch LBR window is refused, saying why. */
static void test_lbr_arch_refused(void **state)
{
	(void)state;
	lbr_engine(0, TRACE_CPL_ALL);
	arch_lbr_cpu();
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "architectural LBR, 32 deep, but the VMCS does not load and clear IA32_LBR_CTL"));
}

/*
 * Arch LBR: IA32_LBR_DEPTH written at the start (empties the array),
 * GUEST_IA32_LBR_CTL = LBREn, OS, USR and every branch type for the
 * window's entries only, DEBUGCTL.LBR never; the entries (0 newest) read
 * at exits oldest first with their BR_TYPE kinds, each once.
 */
static void test_lbr_arch_window(void **state)
{
	struct trace_event ev[16];

	(void)state;
	cpu.entry_ctls |= ENTRY_LOAD_LBR_CTL;
	cpu.exit_ctls |= EXIT_CLEAR_LBR_CTL;
	lbr_engine(0, TRACE_CPL_ALL);
	arch_lbr_cpu();
	hw_fake_vmcs_set(VMCS_GUEST_IA32_LBR_CTL, 0);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_non_null(strstr(logbuf, "architectural LBR, 32 deep, CPL filter, branch filter, mispredict, branch type"));
	assert_int_equal(hw_fake_get_msr(0x14cf), 32);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_LBR_CTL), 0x7f0007);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	arch_push(0x3001, 0x3101, 0);       /* jcc */
	arch_push(0x3002, 0x3102, 4);       /* call */
	arch_push(0x3003, 0x3103, 5);       /* ret */
	cpuid_exit(0x1200);
	arch_push(0x3004, 0x3104, 1);       /* jmp-ind */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	cpuid_exit(0x1202);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_LBR_CTL), 0);
	assert_int_equal(events(ev, 16), 6);
	assert_int_equal(ev[1].u.branch.from, 0x3001);
	assert_int_equal(ev[1].u.branch.kind, TV_BR_JCC);
	assert_int_equal(ev[2].u.branch.kind, TV_BR_CALL);
	assert_int_equal(ev[3].u.branch.kind, TV_BR_RET);
	assert_int_equal(ev[4].u.branch.from, 0x3004);
	assert_int_equal(ev[4].u.branch.kind, TV_BR_JMP_IND);
	assert_int_equal(ev[5].type, TV_REC_STOP);
}

/* A kernel-only filter: LBR_CTL.OS without USR. */
static void test_lbr_arch_cpl_filter(void **state)
{
	(void)state;
	cpu.entry_ctls |= ENTRY_LOAD_LBR_CTL;
	cpu.exit_ctls |= EXIT_CLEAR_LBR_CTL;
	lbr_engine(0, TRACE_CPL_KERNEL);
	arch_lbr_cpu();
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_LBR_CTL), 0x7f0003);
}

/* --- lbr with pmi: the counter, the frozen stack, the guest's PMU view ----------- */

#define EVTSEL3      0x189u
#define PMC3         0xc4u
#define GLOBAL_CTRL  0x38fu
#define PMC3_EVTSEL  0x5300c4ull     /* C4H umask 0, USR OS INT EN */
#define DBG_LBR      (1ull << 0)
#define DBG_FREEZE   (1ull << 11)

static void lbr_pmi_engine(uint32_t every)
{
	struct trace_caps tc;

	eng_pmi = 1;
	eng_pmi_every = every;
	cpu.pin |= PIN_NMI_EXITING;
	cpu.entry_ctls |= ENTRY_LOAD_PERF_GLOBAL_CTRL;
	cpu.exit_ctls |= EXIT_LOAD_PERF_GLOBAL_CTRL;
	pmi_apic();
	hw_fake_set_msr(GLOBAL_STATUS, 0);
	hw_fake_set_msr(EVTSEL3, 0);
	hw_fake_set_msr(PMC3, 0);
	hw_fake_vmcs_set(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL, 0x3);   /* the guest's PMC0, PMC1 */
	lbr_engine(0, TRACE_CPL_ALL);
	assert_int_equal(trace_msr_configure_pmc(true, 3), 0);
	trace_caps_read(&tc, NULL);
	assert_int_equal(trace_msr_init(trace_msr_state_of(&cpu), &tc, TV_SOURCE_LBR), 0);
}

/*
 * The window arms PMC3 with "branch instructions retired" from -period,
 * enables it in the VMCS field only, and sets FREEZE_LBRS_ON_PMI; the
 * overflow's NMI exit reads the frozen stack, unfreezes, reloads.
 */
static void test_lbr_pmi_counter_and_freeze(void **state)
{
	struct trace_event ev[32];

	(void)state;
	lbr_pmi_engine(8);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(hw_fake_get_msr(EVTSEL3), PMC3_EVTSEL);
	assert_int_equal(hw_fake_get_msr(PMC3), 0xfffffff8u);          /* -8, legacy write */
	assert_int_equal(vmcs(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL), 0xb);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_LBR | DBG_FREEZE);
	assert_int_equal(lvtpc(), LVT_NMI);

	for (unsigned i = 1; i <= 6; i++)
		lbr_push(0x2000 + i, 0x2100 + i);
	hw_fake_set_msr(GLOBAL_STATUS, 1ull << 3 | 1ull << 58);         /* PMC3 overflow, LBR_Frz */
	hw_fake_set_msr(PMC3, 1);
	pmi_delivered();
	nmi_exit(0x1200);
	assert_int_equal(cpu.trace->b.window_branches, 6);
	assert_int_equal(hw_fake_get_msr(GLOBAL_STATUS), 0);             /* acknowledged */
	assert_int_equal(hw_fake_get_msr(PMC3), 0xfffffff8u);          /* reloaded */
	assert_int_equal(cpu.nmi_pending, 0);
	assert_int_equal(lvtpc(), LVT_NMI);
	assert_int_equal(lbr_unit(&cpu.trace->b)->lbr.stats.pmis_ours, 1);

	/* an NMI that is not the counter's: the guest's */
	nmi_exit(0x1202);
	assert_int_equal(cpu.nmi_pending, 1);
	cpu.nmi_pending = 0;

	/* overflowed just before another exit: found there, claimed if its NMI came in root */
	lbr_push(0x2007, 0x2107);
	hw_fake_set_msr(GLOBAL_STATUS, 1ull << 3 | 1ull << 58);
	cpu.nmi_pending = 1;
	cpuid_exit(0x1204);
	assert_int_equal(cpu.nmi_pending, 0);
	assert_int_equal(cpu.trace->pmi.root_claimed, 1);
	assert_int_equal(cpu.trace->b.window_branches, 7);

	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(hw_fake_get_msr(EVTSEL3), 0);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL), 0x3);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(events(ev, 32), 9);
	for (unsigned i = 1; i <= 7; i++) {
		assert_int_equal(ev[i].u.branch.from, 0x2000 + i);
		assert_false(ev[i].u.branch.flags & TV_BRF_LBR_FULL);
	}
	assert_non_null(strstr(logbuf, "window 1 PMIs: 2 ours (1 taken in VMX root), 1 NMIs reflected"));
}

/* The guest sees its own PMU: our counter and its enable bit shadowed. */
static void test_lbr_pmi_guest_pmu_view(void **state)
{
	(void)state;
	lbr_pmi_engine(8);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 2);
	/* IA32_PERF_GLOBAL_CTRL = 0x5: the field keeps our bit 3 */
	regs.rcx = GLOBAL_CTRL;
	regs.rax = 0x5;
	regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL), 0xd);
	regs.rcx = GLOBAL_CTRL;
	regs.rax = regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_RDMSR), EXIT_RESUME);
	assert_int_equal(regs.rax, 0x5);
	/* switching everything off leaves ours on */
	regs.rcx = GLOBAL_CTRL;
	regs.rax = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL), 0x8);
	/* PERFEVTSEL3 and PMC3: shadowed */
	regs.rcx = EVTSEL3;
	regs.rax = 0x4300c0;
	regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(hw_fake_get_msr(EVTSEL3), PMC3_EVTSEL);
	regs.rcx = EVTSEL3;
	regs.rax = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_RDMSR), EXIT_RESUME);
	assert_int_equal(regs.rax, 0x4300c0);
	regs.rcx = PMC3;
	regs.rax = 0x80000000u;
	regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(hw_fake_get_msr(PMC3), 0xfffffff8u);
	regs.rcx = PMC3;
	regs.rax = regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_RDMSR), EXIT_RESUME);
	assert_int_equal(regs.rax, 0x80000000u);                 /* sign-extended to 48 bits */
	assert_int_equal(regs.rdx, 0xffff);
	/* STATUS hides our overflow; OVF_CTRL cannot clear it */
	hw_fake_set_msr(GLOBAL_STATUS, 1ull << 3 | 1ull << 0);
	regs.rcx = GLOBAL_STATUS;
	regs.rax = regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_RDMSR), EXIT_RESUME);
	assert_int_equal(regs.rax, 1);
	regs.rcx = OVF_CTRL;
	regs.rax = 0xf;
	regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(hw_fake_msr_write_log(0)->value, 0x7);
	/* PERFEVTSEL0 is the guest's: not intercepted */
	assert_false(trace_msr_intercepts(0x186, true));
	assert_true(trace_msr_intercepts(EVTSEL3, true));
	assert_true(trace_msr_intercepts(GLOBAL_CTRL, false));
}

/* lbr pmi refused: no load-PERF_GLOBAL_CTRL controls; a period past the stack. */
static void test_lbr_pmi_refusals(void **state)
{
	(void)state;
	lbr_pmi_engine(8);
	cpu.entry_ctls &= ~ENTRY_LOAD_PERF_GLOBAL_CTRL;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "pmi needs the VM-entry and VM-exit controls that load IA32_PERF_GLOBAL_CTRL"));
	lbr_pmi_engine(33);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "pmi_every = 33 must be at most the stack's 32 entries"));
	lbr_pmi_engine(8);
	hw_fake_set_cpuid(0xa, 0, 0x07300404, 1u << 5, 0, 0);   /* no branch event */
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "branch-instructions-retired event"));
	assert_false(cpu.trace->b.active);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL), 0x3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lbr_pmi_counter_and_freeze, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_pmi_guest_pmu_view, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_pmi_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_window_vmcs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_drains_at_exits_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_full_stack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_stop_after_and_full_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_arch_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_arch_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_arch_cpl_filter, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
