/* SPDX-License-Identifier: MIT */
/*
 * test_periodic.c - the VMX-preemption timer and the heartbeat
 * (vmm/exit/periodic.c, the timer controls in vmm/vmx/vmx.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/exit/exit.h"
#include "vmm/lib/log.h"
#include "vmm/vmx/vmx.h"

static struct per_cpu cpu;
static struct guest_regs regs;
static char logbuf[16 * 1024];
static size_t loglen;
static int lines;

static void capture(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	if (len > sizeof(logbuf) - 1 - loglen)
		len = sizeof(logbuf) - 1 - loglen;
	memcpy(logbuf + loglen, text, len);
	loglen += len;
	logbuf[loglen] = 0;
	lines++;
}

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	log_add_sink(capture, NULL);
	log_set_level(LOG_INFO);
	loglen = 0;
	lines = 0;
	logbuf[0] = 0;
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	memset(&cpu, 0, sizeof(cpu));
	memset(&regs, 0, sizeof(regs));
	cpu.index = 1;
	cpu.pin = PIN_PREEMPTION_TIMER;
	cpu.timer_period_tsc = 1000000;    /* 1 s at 1 MHz */
	cpu.timer_shift = 5;
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0xffffffff81000000ull);
	return 0;
}

static void test_timer_value_counts_down_to_deadline(void **state)
{
	(void)state;
	cpu.next_beat_tsc = 1000000;
	assert_int_equal(vcpu_timer_value(&cpu, 0), 1000000 >> 5);
	assert_int_equal(vcpu_timer_value(&cpu, 999999), 0);      /* 1 >> 5 */
	assert_int_equal(vcpu_timer_value(&cpu, 1000000), 0);
	assert_int_equal(vcpu_timer_value(&cpu, 5000000), 0);     /* overdue */
	/* a far deadline saturates the 32-bit field instead of wrapping */
	cpu.next_beat_tsc = 1ull << 50;
	assert_int_equal(vcpu_timer_value(&cpu, 0), 0xffffffffu);
	/* TSC values near the wrap still compare as a distance */
	cpu.next_beat_tsc = 64;
	assert_int_equal(vcpu_timer_value(&cpu, (uint64_t)-64), 128 >> 5);
}

static void test_periodic_rearms_and_beats_once_per_period(void **state)
{
	(void)state;
	cpu.next_beat_tsc = 1000000;
	hw_fake_set_tsc(400000);
	vcpu_periodic(&cpu);
	assert_int_equal(lines, 0);
	assert_int_equal(hw_fake_vmcs_get(VMCS_PREEMPTION_TIMER_VALUE), 600000 >> 5);

	cpu.stats.exits = 40;
	cpu.stats.by_reason[EXIT_REASON_CPUID] = 30;
	cpu.stats.by_reason[EXIT_REASON_RDMSR] = 7;
	cpu.stats.by_reason[EXIT_REASON_PREEMPTION_TIMER] = 3;
	hw_fake_set_tsc(1000100);
	vcpu_periodic(&cpu);
	assert_int_equal(lines, 1);
	assert_non_null(strstr(logbuf, "hb: cpu 1: 40 exits (+40: CPUID 30, RDMSR 7, VMX-preemption timer expired 3), 0 NMIs in root, guest RIP 0xffffffff81000000"));
	assert_int_equal(cpu.next_beat_tsc, 2000000);
	assert_int_equal(hw_fake_vmcs_get(VMCS_PREEMPTION_TIMER_VALUE), (2000000 - 1000100) >> 5);

	/* the next line counts only what happened since */
	cpu.stats.exits = 45;
	cpu.stats.by_reason[EXIT_REASON_RDMSR] = 12;
	hw_fake_set_tsc(2000000);
	vcpu_periodic(&cpu);
	assert_int_equal(lines, 2);
	assert_non_null(strstr(logbuf, "45 exits (+5: RDMSR 5)"));
}

static void test_periodic_skips_missed_beats(void **state)
{
	(void)state;
	cpu.next_beat_tsc = 1000000;
	hw_fake_set_tsc(7500000);  /* six periods late: one line, not six */
	vcpu_periodic(&cpu);
	assert_int_equal(lines, 1);
	assert_int_equal(cpu.next_beat_tsc, 8500000);
}

static void test_periodic_off_without_the_control(void **state)
{
	(void)state;
	cpu.pin = 0;
	cpu.next_beat_tsc = 1;
	hw_fake_vmcs_set(VMCS_PREEMPTION_TIMER_VALUE, 77);
	hw_fake_set_tsc(1ull << 40);
	vcpu_periodic(&cpu);
	assert_int_equal(lines, 0);
	assert_int_equal(hw_fake_vmcs_get(VMCS_PREEMPTION_TIMER_VALUE), 77);
}

static void test_timer_exit_is_dispatched(void **state)
{
	(void)state;
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_PREEMPTION_TIMER);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	assert_int_equal(cpu.stats.by_reason[EXIT_REASON_PREEMPTION_TIMER], 1);
}

static void test_controls_ask_for_the_timer_only_with_a_period(void **state)
{
	char why[120];

	(void)state;
	memset(&cpu, 0, sizeof(cpu));
	/* allowed-1 in the high half: everything the code asks for */
	cpu.caps.pin = 0xffffffff00000016ull;
	cpu.caps.proc = 0xffffffff0401e172ull;
	cpu.caps.proc2 = 0xffffffff00000000ull;
	cpu.caps.exit = 0xffffffff00036dffull;
	cpu.caps.entry = 0xffffffff000011ffull;
	assert_int_equal(vmx_compute_controls(&cpu, true, why, sizeof(why)), 0);
	assert_int_equal(cpu.pin & PIN_PREEMPTION_TIMER, 0);
	cpu.timer_period_tsc = 100;
	assert_int_equal(vmx_compute_controls(&cpu, true, why, sizeof(why)), 0);
	assert_int_equal(cpu.pin & PIN_PREEMPTION_TIMER, PIN_PREEMPTION_TIMER);
	/* a CPU without the timer: warned, period dropped, still launches */
	cpu.caps.pin = 0x0000003f00000016ull;
	assert_int_equal(vmx_compute_controls(&cpu, true, why, sizeof(why)), 0);
	assert_int_equal(cpu.pin & PIN_PREEMPTION_TIMER, 0);
	assert_int_equal(cpu.timer_period_tsc, 0);
	assert_non_null(strstr(logbuf, "no VMX-preemption timer"));
}

static void test_nmi_from_root_is_injected(void **state)
{
	(void)state;
	/* none pending: nothing written */
	assert_false(vcpu_deliver_nmi(&cpu));
	assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_INTR_INFO), 0);
	cpu.nmi_pending = 2;
	hw_fake_vmcs_set(VMCS_GUEST_ACTIVITY_STATE, ACTIVITY_HLT);
	assert_true(vcpu_deliver_nmi(&cpu));
	assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_INTR_INFO), 0x80000202u);
	assert_int_equal(cpu.nmi_pending, 1);
	assert_int_equal(cpu.stats.nmis_reflected, 1);
	/* one event per entry: the second waits for the next exit */
	assert_false(vcpu_deliver_nmi(&cpu));
	assert_int_equal(cpu.nmi_pending, 1);
}

static void test_nmi_held_while_blocked(void **state)
{
	static const struct { uint64_t intr, act; } blocked[] = {
		{ INTERRUPTIBILITY_NMI, ACTIVITY_ACTIVE },
		{ INTERRUPTIBILITY_MOV_SS, ACTIVITY_ACTIVE },
		{ 0, ACTIVITY_WAIT_SIPI },
		{ 0, ACTIVITY_SHUTDOWN },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(blocked) / sizeof(blocked[0]); i++) {
		cpu.nmi_pending = 1;
		hw_fake_vmcs_set(VMCS_ENTRY_INTR_INFO, 0);
		hw_fake_vmcs_set(VMCS_GUEST_INTERRUPTIBILITY, blocked[i].intr);
		hw_fake_vmcs_set(VMCS_GUEST_ACTIVITY_STATE, blocked[i].act);
		assert_false(vcpu_deliver_nmi(&cpu));
		assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_INTR_INFO), 0);
		assert_int_equal(cpu.nmi_pending, 1);
	}
	/* STI blocking does not hold off an NMI */
	hw_fake_vmcs_set(VMCS_GUEST_INTERRUPTIBILITY, INTERRUPTIBILITY_STI);
	hw_fake_vmcs_set(VMCS_GUEST_ACTIVITY_STATE, ACTIVITY_ACTIVE);
	assert_true(vcpu_deliver_nmi(&cpu));
	/* an exception being injected takes precedence this time */
	cpu.nmi_pending = 1;
	hw_fake_vmcs_set(VMCS_ENTRY_INTR_INFO, intr_info_hw_exception(VEC_UD, false));
	assert_false(vcpu_deliver_nmi(&cpu));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_timer_value_counts_down_to_deadline, setup),
		cmocka_unit_test_setup(test_periodic_rearms_and_beats_once_per_period, setup),
		cmocka_unit_test_setup(test_periodic_skips_missed_beats, setup),
		cmocka_unit_test_setup(test_periodic_off_without_the_control, setup),
		cmocka_unit_test_setup(test_timer_exit_is_dispatched, setup),
		cmocka_unit_test_setup(test_controls_ask_for_the_timer_only_with_a_period, setup),
		cmocka_unit_test_setup(test_nmi_from_root_is_injected, setup),
		cmocka_unit_test_setup(test_nmi_held_while_blocked, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
