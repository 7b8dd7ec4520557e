/* SPDX-License-Identifier: MIT */
/*
 * test_trace_engine.c - the window lifecycle (vmm/trace/engine.c) on the
 * fake seam with the MTF backend (fixture: engine_mtf.h): windows opened
 * and closed by hypercall, the monitor trap flag in the VMCS, per-exit
 * MTF recording from VMCS guest state and guest memory, limits,
 * refusals, a triple fault closing and exporting the window.
 */
#include "engine_mtf.h"

static void test_window_by_hypercall(void **state)
{
	struct trace_event ev[8];

	(void)state;
	/* 0x1003: jmp 0x1010 (eb 0b); 0x1010: ret? no - a plain call: e8 rel32 */
	gmem[0x1003] = 0xeb;
	gmem[0x1004] = 0x0b;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_true(mtf_in_vmcs());
	assert_true(cpu.proc & CPU_MONITOR_TRAP_FLAG);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0x1003);  /* VMCALL skipped */
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));            /* remembers the jmp at 0x1003 */
	mtf_exit_at(0x1010);                 /* it went to its target */
	mtf_exit_at(0x1011);                 /* a nop */
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_EBUSY);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_false(mtf_in_vmcs());
	assert_int_equal(windows_done, 1);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_EBUSY);

	assert_int_equal(events(ev, 8), 3);
	assert_int_equal(ev[0].type, TV_REC_START);
	assert_int_equal(ev[0].u.startstop.trigger, TV_TRIG_HYPERCALL);
	assert_int_equal(ev[0].u.startstop.rip, 0x1000);
	assert_int_equal(ev[1].type, TV_REC_BRANCH);
	assert_int_equal(ev[1].u.branch.from, 0x1003);
	assert_int_equal(ev[1].u.branch.to, 0x1010);
	assert_int_equal(ev[1].u.branch.kind, TV_BR_JMP);
	assert_int_equal(ev[2].type, TV_REC_STOP);
	assert_int_equal(cpu.trace->b.window_branches, 1);
}

/* A guest that triple-faults mid-window: the window is closed (STOP with
 * trigger guest-reset, MTF off) and exported before the machine resets. */
static void test_triple_fault_closes_and_exports(void **state)
{
	struct trace_event ev[8];

	(void)state;
	gmem[0x1003] = 0xeb;                 /* jmp 0x1010 */
	gmem[0x1004] = 0x0b;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	mtf_exit_at(0x1010);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x1011);
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_TRIPLE_FAULT);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESET_MACHINE);
	assert_false(cpu.trace->b.active);
	assert_false(mtf_in_vmcs());
	assert_int_equal(windows_done, 1);
	assert_int_equal(events(ev, 8), 3);
	assert_int_equal(ev[1].type, TV_REC_BRANCH);
	assert_int_equal(ev[1].u.branch.to, 0x1010);
	assert_int_equal(ev[2].type, TV_REC_STOP);
	assert_int_equal(ev[2].u.startstop.trigger, TV_TRIG_GUEST_RESET);
	assert_int_equal(ev[2].u.startstop.rip, 0x1011);
	assert_string_equal(trace_trigger_name(TV_TRIG_GUEST_RESET), "guest-reset");

	/* no window open: a triple fault still resets, nothing is exported */
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_TRIPLE_FAULT);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESET_MACHINE);
	assert_int_equal(windows_done, 1);
}

static void test_emulated_exit_is_not_a_branch(void **state)
{
	struct trace_event ev[8];

	(void)state;
	/* 0x1003: cpuid (0f a2), emulated by the hypervisor: RIP += 2. */
	gmem[0x1003] = 0x0f;
	gmem[0x1004] = 0xa2;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_CPUID);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 2);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0x1005);
	mtf_exit_at(0x1006);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(events(ev, 8), 2);   /* START, STOP: no branch */
}

static void test_marker_and_limits(void **state)
{
	struct trace_event ev[16];
	size_t n;

	(void)state;
	engine(TV_SOURCE_MTF, TV_TRIG_HYPERCALL, 2);
	/* jmp $+0x10 at 0x1003, 0x1013, 0x1023 ... */
	for (unsigned a = 0x1003; a < 0x1100; a += 0x10) {
		gmem[a] = 0xeb;
		gmem[a + 1] = 0x0e;
	}
	regs.rcx = 0;
	regs.rdx = 0;
	memcpy(&regs.rcx, "ph1", 3);   /* 32-bit guest: label bytes 0..3 in ECX */
	regs.rax = TV_HC_MARKER;
	regs.rbx = 42;
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_VMCALL);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 3);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	assert_int_equal(regs.rax, TV_HC_OK);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x1000);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	mtf_exit_at(0x1013);
	assert_true(cpu.trace->b.active);
	mtf_exit_at(0x1023);                  /* the second branch: limit reached */
	assert_false(cpu.trace->b.active);
	assert_false(mtf_in_vmcs());
	assert_int_equal(windows_done, 1);
	n = events(ev, 16);
	assert_int_equal(n, 5);
	assert_int_equal(ev[0].type, TV_REC_MARKER);
	assert_int_equal(ev[0].u.marker.value, 42);
	assert_int_equal(ev[0].u.marker.label_len, 3);
	assert_memory_equal(ev[0].u.marker.label, "ph1", 3);
	assert_int_equal(ev[4].type, TV_REC_STOP);
	assert_int_equal(ev[4].u.startstop.trigger, TV_TRIG_LIMIT);
}

static void test_refusals(void **state)
{
	(void)state;
	/* No MTF control on this CPU. */
	cpu.caps.proc = 0;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_false(mtf_in_vmcs());
	/* Unknown start flags. */
	regs.rax = TV_HC_TRACE_START;
	regs.rbx = 0x80;
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_VMCALL);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	assert_int_equal((int32_t)regs.rax, TV_HC_EINVAL);
	/* A backend that is not wired in yet. */
	cpu.caps.proc = (uint64_t)CPU_MONITOR_TRAP_FLAG << 32;
	engine(TV_SOURCE_PT, TV_TRIG_HYPERCALL, 0);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	/* No tracing configured: no hooks at all. */
	engine(TV_SOURCE_NONE, TV_TRIG_HYPERCALL, 0);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	/* No ring on this CPU. */
	engine(TV_SOURCE_MTF, TV_TRIG_HYPERCALL, 0);
	cpu.trace = NULL;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_int_equal(vmcall(TV_HC_MARKER), TV_HC_ENOSYS);
}

static void test_wait_for_sipi_records_nothing(void **state)
{
	struct trace_event ev[4];

	(void)state;
	gmem[0x1003] = 0xeb;
	gmem[0x1004] = 0x0b;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	cpu.sipi_state = VCPU_WAIT_FOR_SIPI;
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	cpu.sipi_state = VCPU_RUNNING;
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x9000);  /* the SIPI vector */
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	assert_int_equal(events(ev, 4), 1);       /* START only */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_window_by_hypercall, setup, teardown),
		cmocka_unit_test_setup_teardown(test_triple_fault_closes_and_exports, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emulated_exit_is_not_a_branch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_marker_and_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_for_sipi_records_nothing, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
