/* SPDX-License-Identifier: MIT */
/*
 * test_trace_trigger.c - the triggers of vmm/trace/trigger.c that need no
 * EPT (fixture: engine_mtf.h): the boot trigger and the ExitBootServices
 * event.  The address and kernel_entry triggers are tested through the
 * EPT-violation exit in tests/unit/vmm/exit/test_exit_ept.c.
 */
#include "engine_mtf.h"

static void test_boot_trigger(void **state)
{
	struct trace_event ev[4];

	(void)state;
	engine(TV_SOURCE_MTF, TV_TRIG_BOOT, 0);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	assert_true(cpu.trace->b.active);
	assert_true(mtf_in_vmcs());
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));             /* once only */
	assert_int_equal(cpu.trace->b.windows, 1);
	assert_int_equal(events(ev, 4), 1);
	assert_int_equal(ev[0].type, TV_REC_START);
	assert_int_equal(ev[0].u.startstop.trigger, TV_TRIG_BOOT);
}

/*
 * trace_start = exit_boot_services: the thunk's TV_HC_EVENT opens the
 * window (trigger exit-boot-services) and MTF steps from the next
 * instruction; with another trace_start the event only logs; an unknown
 * event is refused.
 */
static void test_exit_boot_services_trigger(void **state)
{
	struct trace_event ev[4];

	(void)state;
	engine(TV_SOURCE_MTF, TV_TRIG_HYPERCALL, 0);
	regs.rbx = TV_HC_EVENT_EXIT_BOOT_SERVICES;
	regs.rax = TV_HC_EVENT;
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_VMCALL);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 3);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	assert_int_equal((int32_t)regs.rax, TV_HC_OK);
	assert_false(cpu.trace->b.active);

	engine(TV_SOURCE_MTF, TV_TRIG_EXIT_BOOT_SERVICES, 0);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x1000);
	regs.rbx = TV_HC_EVENT_EXIT_BOOT_SERVICES;
	regs.rax = TV_HC_EVENT;
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	assert_int_equal((int32_t)regs.rax, TV_HC_OK);
	assert_true(cpu.trace->b.active);
	assert_true(mtf_in_vmcs());
	assert_int_equal(events(ev, 4), 1);
	assert_int_equal(ev[0].type, TV_REC_START);
	assert_int_equal(ev[0].u.startstop.trigger, TV_TRIG_EXIT_BOOT_SERVICES);
	assert_int_equal(ev[0].u.startstop.rip, 0x1000);
	/* a second call (a stale map key makes loaders retry): the window stays */
	regs.rbx = TV_HC_EVENT_EXIT_BOOT_SERVICES;
	regs.rax = TV_HC_EVENT;
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	assert_int_equal((int32_t)regs.rax, TV_HC_EBUSY);
	assert_int_equal(cpu.trace->b.windows, 1);
	regs.rbx = 9;
	regs.rax = TV_HC_EVENT;
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	assert_int_equal((int32_t)regs.rax, TV_HC_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_boot_trigger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_boot_services_trigger, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
