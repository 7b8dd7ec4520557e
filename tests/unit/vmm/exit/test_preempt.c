/* SPDX-License-Identifier: MIT */
/*
 * test_preempt.c - the poll hook (vmm/exit/preempt.c) as the exit path drives
 * it (vmx_exit_handler -> vcpu_periodic): on its CPU only, at the
 * VMX-preemption timer's exit and at any other exit once the period has
 * passed, the timer re-armed for the earliest deadline; without the
 * pin-based control, one warning and polling at exits.
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
#include "vmm/hv.h"
#include "vmm/lib/log.h"
#include "vmm/exit/preempt.h"
#include "vmm/vmx/vmx.h"

static struct per_cpu cpus[2];
static struct guest_regs regs;
static int calls[2];
static char logbuf[8192];
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

/* The hook: counts calls per context. */
static void hook(void *ctx)
{
	int *n = ctx;

	(*n)++;
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
	memset(cpus, 0, sizeof(cpus));
	memset(&regs, 0, sizeof(regs));
	memset(calls, 0, sizeof(calls));
	for (uint32_t i = 0; i < 2; i++) {
		cpus[i].index = i;
		cpus[i].pin = PIN_PREEMPTION_TIMER;
		cpus[i].timer_shift = 4;
	}
	/* CPU 1 polls every 1000 ticks, starting at TSC 1000 */
	assert_int_equal(hv_set_poll_hook(hook, &calls[1], 1), 0);
	cpus[1].poll_period_tsc = 1000;
	cpus[1].next_poll_tsc = 1000;
	hw_fake_set_tsc_step(0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hv_set_poll_hook(NULL, NULL, 0);
	return 0;
}

static void exit_on(struct per_cpu *cpu, uint32_t reason, uint64_t tsc)
{
	hw_fake_set_tsc(tsc);
	hw_fake_vmcs_set(VMCS_EXIT_REASON, reason);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 2);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x1000);
	vmx_exit_handler(cpu, &regs);
}

static void test_period_from_microseconds(void **state)
{
	(void)state;
	assert_int_equal(preempt_period_tsc(1000, 100000000ull), 100000);   /* 1 ms at 100 MHz */
	assert_int_equal(preempt_period_tsc(PREEMPT_POLL_US_DEFAULT, 3000000000ull), 3000000);
	assert_int_equal(preempt_period_tsc(0, 100000000ull), 0);
	assert_int_equal(preempt_period_tsc(1000, 0), 0);
	assert_int_equal(preempt_period_tsc(1000000, UINT64_MAX / 100), 0);  /* overflow */
}

static void test_timer_exit_runs_hook_and_rearms(void **state)
{
	(void)state;
	exit_on(&cpus[1], EXIT_REASON_PREEMPTION_TIMER, 1000);
	assert_int_equal(calls[1], 1);
	assert_int_equal(cpus[1].stats.polls, 1);
	assert_int_equal(cpus[1].next_poll_tsc, 2000);
	/* re-armed: 1000 TSC ticks >> IA32_VMX_MISC[4:0] = 4 */
	assert_int_equal(hw_fake_vmcs_get(VMCS_PREEMPTION_TIMER_VALUE), 1000 >> 4);
	/* early: not yet, and the timer counts the rest */
	exit_on(&cpus[1], EXIT_REASON_PREEMPTION_TIMER, 1500);
	assert_int_equal(calls[1], 1);
	assert_int_equal(hw_fake_vmcs_get(VMCS_PREEMPTION_TIMER_VALUE), 500 >> 4);
}

static void test_any_exit_polls_once_due(void **state)
{
	(void)state;
	/* a guest that exits often: CPUIDs before and after the deadline */
	hw_fake_set_cpuid(0, 0, 0xd, 0, 0, 0);
	exit_on(&cpus[1], EXIT_REASON_CPUID, 999);
	assert_int_equal(calls[1], 0);
	exit_on(&cpus[1], EXIT_REASON_CPUID, 1001);
	assert_int_equal(calls[1], 1);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0x1002);   /* the CPUID retired */
	assert_int_equal(cpus[1].next_poll_tsc, 2000);
	assert_int_equal(hw_fake_vmcs_get(VMCS_PREEMPTION_TIMER_VALUE), 999 >> 4);
	/* far behind: one call, the deadline restarts from now */
	exit_on(&cpus[1], EXIT_REASON_CPUID, 10500);
	assert_int_equal(calls[1], 2);
	assert_int_equal(cpus[1].next_poll_tsc, 11500);
}

static void test_only_the_designated_cpu(void **state)
{
	(void)state;
	/* CPU 0 has no poll period: its timer exits run nothing */
	exit_on(&cpus[0], EXIT_REASON_PREEMPTION_TIMER, 5000);
	assert_int_equal(calls[1], 0);
	assert_int_equal(cpus[0].stats.polls, 0);
	/* even with a period, the hook belongs to CPU 1 */
	cpus[0].poll_period_tsc = 1000;
	exit_on(&cpus[0], EXIT_REASON_PREEMPTION_TIMER, 5000);
	assert_int_equal(calls[1], 0);
	exit_on(&cpus[1], EXIT_REASON_PREEMPTION_TIMER, 5000);
	assert_int_equal(calls[1], 1);
	/* re-registered for CPU 0 with another context */
	hv_set_poll_hook(hook, &calls[0], 0);
	exit_on(&cpus[1], EXIT_REASON_PREEMPTION_TIMER, 9000);
	exit_on(&cpus[0], EXIT_REASON_PREEMPTION_TIMER, 9000);
	assert_int_equal(calls[1], 1);
	assert_int_equal(calls[0], 1);
}

static void test_timer_meets_the_earliest_deadline(void **state)
{
	(void)state;
	/* heartbeat due at 1,000,000, poll at 1000: the timer waits for the poll */
	cpus[1].timer_period_tsc = 1000000;
	cpus[1].next_beat_tsc = 1000000;
	assert_int_equal(vcpu_timer_value(&cpus[1], 200), 800 >> 4);
	assert_int_equal(preempt_deadline(&cpus[1], 200), 1000);
	cpus[1].next_poll_tsc = 2000000;
	assert_int_equal(preempt_deadline(&cpus[1], 200), 1000000);
	/* neither: the timer saturates instead of firing */
	cpus[1].timer_period_tsc = 0;
	cpus[1].poll_period_tsc = 0;
	assert_int_equal(vcpu_timer_value(&cpus[1], 200), 0xffffffffu);
}

/* The pt drain tick counts only while the CPU's window is open. */
static void test_drain_tick_only_in_a_window(void **state)
{
	(void)state;
	cpus[1].timer_period_tsc = 0;
	cpus[1].poll_period_tsc = 0;
	cpus[1].drain_period_tsc = 5000;
	cpus[1].next_drain_tsc = 3000;
	cpus[1].drain_armed = false;
	assert_int_equal(vcpu_timer_value(&cpus[1], 200), 0xffffffffu);
	cpus[1].drain_armed = true;
	assert_int_equal(preempt_deadline(&cpus[1], 200), 3000);
	assert_int_equal(vcpu_timer_value(&cpus[1], 200), 2800 >> 4);
	/* the earlier of the tick and the heartbeat */
	cpus[1].timer_period_tsc = 1000000;
	cpus[1].next_beat_tsc = 2000;
	assert_int_equal(preempt_deadline(&cpus[1], 200), 2000);
	cpus[1].drain_armed = false;
	cpus[1].drain_period_tsc = 0;
	cpus[1].timer_period_tsc = 0;
}

/* A CPU with the VMX capabilities of Bochs's corei7_skylake_x (all optional controls). */
static void vmx_cpu_with_caps(struct per_cpu *c)
{
	memset(c, 0, sizeof(*c));
	c->caps.pin = 0xffffffff00000016ull;
	c->caps.proc = 0xffffffff0401e172ull;
	c->caps.proc2 = 0xffffffff00000000ull;
	c->caps.exit = 0xffffffff00036dffull;
	c->caps.entry = 0xffffffff000011ffull;
}

static void test_control_present_and_absent(void **state)
{
	struct per_cpu c;
	char why[120];

	(void)state;
	vmx_cpu_with_caps(&c);
	c.poll_period_tsc = 1000;
	assert_int_equal(vmx_compute_controls(&c, true, why, sizeof(why)), 0);
	assert_int_equal(c.pin & PIN_PREEMPTION_TIMER, PIN_PREEMPTION_TIMER);
	assert_int_equal(lines, 0);

	/* allowed-1 of bit 6 clear: logged once, the poll keeps its period */
	c.caps.pin = 0xffffffbf00000016ull;
	assert_int_equal(vmx_compute_controls(&c, true, why, sizeof(why)), 0);
	assert_int_equal(c.pin & PIN_PREEMPTION_TIMER, 0);
	assert_int_equal(c.poll_period_tsc, 1000);
	assert_int_equal(lines, 1);
	assert_non_null(strstr(logbuf, "no VMX-preemption timer: periodic work (poll hook) only on exits"));

	/* and then the exits poll, without touching the timer field */
	cpus[1].pin = c.pin;
	hw_fake_vmcs_set(VMCS_PREEMPTION_TIMER_VALUE, 77);
	exit_on(&cpus[1], EXIT_REASON_CPUID, 999);
	assert_int_equal(calls[1], 0);
	exit_on(&cpus[1], EXIT_REASON_CPUID, 1000);
	assert_int_equal(calls[1], 1);
	assert_int_equal(hw_fake_vmcs_get(VMCS_PREEMPTION_TIMER_VALUE), 77);
}

/* pmi = on asks for NMI exiting; without it the pin control stays clear. */
static void test_nmi_exiting_for_pmi(void **state)
{
	struct per_cpu c;
	char why[120];

	(void)state;
	vmx_cpu_with_caps(&c);
	assert_int_equal(vmx_compute_controls(&c, true, why, sizeof(why)), 0);
	assert_int_equal(c.pin & PIN_NMI_EXITING, 0);
	c.trace_pin_ctls = PIN_NMI_EXITING;          /* pmi = on */
	assert_int_equal(vmx_compute_controls(&c, true, why, sizeof(why)), 0);
	assert_int_equal(c.pin & PIN_NMI_EXITING, PIN_NMI_EXITING);
	assert_int_equal(lines, 0);
	/* a CPU whose allowed-1 lacks it (none known): said, not silently dropped */
	c.caps.pin = 0xfffffff700000016ull;
	assert_int_equal(vmx_compute_controls(&c, true, why, sizeof(why)), 0);
	assert_int_equal(c.pin & PIN_NMI_EXITING, 0);
	assert_non_null(strstr(logbuf, "NMI exiting not allowed: pmi windows will not open"));
}

/* lbr/btf: arch LBR's IA32_LBR_CTL loaded on entry and cleared on exit, both or neither. */
static void test_lbr_ctl_switch(void **state)
{
	struct per_cpu c;
	char why[120];

	(void)state;
	vmx_cpu_with_caps(&c);
	assert_int_equal(vmx_compute_controls(&c, true, why, sizeof(why)), 0);
	assert_int_equal(c.entry_ctls & ENTRY_LOAD_LBR_CTL, 0);
	assert_int_equal(c.exit_ctls & EXIT_CLEAR_LBR_CTL, 0);
	c.trace_entry_ctls = ENTRY_LOAD_LBR_CTL;     /* lbr/btf */
	c.trace_exit_ctls = EXIT_CLEAR_LBR_CTL;
	assert_int_equal(vmx_compute_controls(&c, true, why, sizeof(why)), 0);
	assert_int_equal(c.entry_ctls & ENTRY_LOAD_LBR_CTL, ENTRY_LOAD_LBR_CTL);
	assert_int_equal(c.exit_ctls & EXIT_CLEAR_LBR_CTL, EXIT_CLEAR_LBR_CTL);
	c.caps.entry = 0xffdfffff000011ffull;           /* no load IA32_LBR_CTL */
	assert_int_equal(vmx_compute_controls(&c, true, why, sizeof(why)), 0);
	assert_int_equal(c.entry_ctls & ENTRY_LOAD_LBR_CTL, 0);
	assert_int_equal(c.exit_ctls & EXIT_CLEAR_LBR_CTL, 0);
}

/* lbr pmi: IA32_PERF_GLOBAL_CTRL loaded on entry and exit, only where it exists. */
static void test_perf_global_ctrl_switch(void **state)
{
	struct per_cpu c;
	char why[120];

	(void)state;
	vmx_cpu_with_caps(&c);
	hw_fake_set_cpuid(0, 0, 0x16, 0, 0, 0);
	hw_fake_set_cpuid(0xa, 0, 0x07300404, 0, 0, 0);
	assert_int_equal(vmx_compute_controls(&c, true, why, sizeof(why)), 0);
	assert_int_equal(c.entry_ctls & ENTRY_LOAD_PERF_GLOBAL_CTRL, 0);
	c.trace_entry_ctls = ENTRY_LOAD_PERF_GLOBAL_CTRL;   /* lbr with pmi */
	c.trace_exit_ctls = EXIT_LOAD_PERF_GLOBAL_CTRL;
	assert_int_equal(vmx_compute_controls(&c, true, why, sizeof(why)), 0);
	assert_int_equal(c.entry_ctls & ENTRY_LOAD_PERF_GLOBAL_CTRL, ENTRY_LOAD_PERF_GLOBAL_CTRL);
	assert_int_equal(c.exit_ctls & EXIT_LOAD_PERF_GLOBAL_CTRL, EXIT_LOAD_PERF_GLOBAL_CTRL);
	/* only one of the two offered: neither */
	c.caps.exit = 0xffffefff00036dffull;
	assert_int_equal(vmx_compute_controls(&c, true, why, sizeof(why)), 0);
	assert_int_equal(c.entry_ctls & ENTRY_LOAD_PERF_GLOBAL_CTRL, 0);
	assert_int_equal(c.exit_ctls & EXIT_LOAD_PERF_GLOBAL_CTRL, 0);
	/* perfmon v1: no such MSR, so neither, and said */
	c.caps.exit = 0xffffffff00036dffull;
	hw_fake_set_cpuid(0xa, 0, 0x07300401, 0, 0, 0);
	assert_int_equal(vmx_compute_controls(&c, true, why, sizeof(why)), 0);
	assert_false(c.trace_entry_ctls & ENTRY_LOAD_PERF_GLOBAL_CTRL);   /* no longer asked for */
	assert_false(c.trace_exit_ctls & EXIT_LOAD_PERF_GLOBAL_CTRL);
	assert_int_equal(c.entry_ctls & ENTRY_LOAD_PERF_GLOBAL_CTRL, 0);
	assert_non_null(strstr(logbuf, "no IA32_PERF_GLOBAL_CTRL (perfmon before v2)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_period_from_microseconds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nmi_exiting_for_pmi, setup, teardown),
		cmocka_unit_test_setup_teardown(test_perf_global_ctrl_switch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_ctl_switch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_exit_runs_hook_and_rearms, setup, teardown),
		cmocka_unit_test_setup_teardown(test_any_exit_polls_once_due, setup, teardown),
		cmocka_unit_test_setup_teardown(test_only_the_designated_cpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_meets_the_earliest_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_control_present_and_absent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drain_tick_only_in_a_window, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
