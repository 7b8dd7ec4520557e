/* SPDX-License-Identifier: MIT */
/*
 * test_trace_poweroff.c - the guest's power-off (vmm/trace/poweroff.h,
 * vmm/trace/request.c; the hook in vmm/trace/hooks.c): three CPUs, two
 * traced with the MTF backend on the fake seam.  The writing CPU closes
 * its window with trigger guest-power-off and asks the other to; that one
 * closes at its next exit (driven here from the fake pump); the wait is
 * bounded by TRACE_POWEROFF_WAIT_MS of TSC when a CPU never exits or the
 * receiver never acknowledges.
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
#include "vmm/exit/hooks.h"
#include "vmm/exit/hypercall.h"
#include "vmm/lib/log.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/hooks.h"
#include "vmm/trace/poweroff.h"
#include "vmm/trace/read.h"

#define NCPU   3
#define TSC_HZ 100000000ull     /* 100 MHz: the bound is 200,000,000 ticks */

static struct per_cpu cpus[NCPU];
static uint64_t mem[2][(TRACE_CPU_STATE_BYTES + 4096 + 16384) / 8] __attribute__((aligned(64)));
static uint8_t gmem[0x10000];
static int windows[NCPU];

/* The fake pump: after exit_after calls, CPU 1 takes an exit; acks after ack_after calls. */
static struct {
	unsigned calls, exit_after, ack_after;
	unsigned progress_every;   /* 0: none; else the exporter frees room every so many calls */
	bool never_exit, never_ack;
} pump;

static int read_phys(void *opaque, uint64_t gpa, void *buf, size_t len)
{
	(void)opaque;
	if (gpa >= sizeof(gmem) || len > sizeof(gmem) - gpa)
		return -1;
	memcpy(buf, gmem + gpa, len);
	return 0;
}

static void on_window(struct per_cpu *c)
{
	assert_true(c >= cpus && c < cpus + NCPU);
	windows[c - cpus]++;
}

static bool fake_pump(struct per_cpu *c)
{
	assert_ptr_equal(c, &cpus[0]);
	pump.calls++;
	if (!pump.never_exit && pump.calls == pump.exit_after)
		trace_before_entry(&cpus[1], EXIT_REASON_PREEMPTION_TIMER);   /* its timer exit */
	/* A slow but live receiver: the exporter releases what it acknowledged. */
	if (pump.progress_every && pump.calls % pump.progress_every == 0)
		__atomic_fetch_add(&cpus[0].trace->b.ring->tail, 1, __ATOMIC_RELEASE);
	return !pump.never_ack && pump.calls >= pump.ack_after;
}

static int setup(void **state)
{
	struct trace_setup s;

	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	hypercall_set_hooks(NULL);
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	memset(cpus, 0, sizeof(cpus));
	memset(windows, 0, sizeof(windows));
	memset(&pump, 0, sizeof(pump));
	memset(gmem, 0x90, sizeof(gmem));
	hw_fake_vmcs_set(VMCS_ENTRY_CTLS, 0);
	hw_fake_vmcs_set(VMCS_GUEST_CR0, 0x11);
	hw_fake_vmcs_set(VMCS_GUEST_CS_AR, 0xc09b);
	hw_fake_vmcs_set(VMCS_GUEST_SS_AR, 0xc093);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x1000);
	for (uint32_t i = 0; i < NCPU; i++) {
		cpus[i].index = i;
		cpus[i].caps.proc = (uint64_t)(CPU_MONITOR_TRAP_FLAG | CPU_USE_MSR_BITMAPS |
					       CPU_ACTIVATE_SECONDARY_CONTROLS) << 32;
		cpus[i].proc = CPU_USE_MSR_BITMAPS | CPU_ACTIVATE_SECONDARY_CONTROLS;
	}
	hw_fake_vmcs_set(VMCS_PROC_BASED_CTLS, cpus[0].proc);
	for (uint32_t i = 0; i < 2; i++)          /* CPU 2 is not traced */
		assert_int_equal(trace_cpu_init(&cpus[i], mem[i], sizeof(mem[i]), i, i,
						TV_SOURCE_MTF, TV_OVERFLOW_STOP, TSC_HZ, 0), 0);
	memset(&s, 0, sizeof(s));
	s.source = TV_SOURCE_MTF;
	s.overflow = TV_OVERFLOW_STOP;
	s.start = TV_TRIG_HYPERCALL;
	s.ring_kb = 16;
	trace_filter_all(&s.filter);
	trace_pt_opts_default(&s.pt);
	trace_engine_init(&s, read_phys, NULL, on_window);
	trace_engine_set_cpus(cpus, NCPU, fake_pump);
	for (uint32_t i = 0; i < 2; i++)
		assert_int_equal(trace_start(&cpus[i], TV_TRIG_HYPERCALL), TRACE_EOK);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	trace_engine_set_cpus(NULL, 0, NULL);
	exit_hooks_set(NULL);
	return 0;
}

/* The last record of cpu's ring, which must be a STOP: its trigger. */
static unsigned last_stop_trigger(struct per_cpu *c)
{
	static uint8_t buf[16384];
	struct trace_event ev, last = { 0 };
	struct trace_cursor cur;
	struct trace_reader rd;
	size_t len = 0;
	bool any = false;

	assert_int_equal(trace_ring_cursor_tail(c->trace->b.ring, &cur), 0);
	assert_int_equal(trace_ring_peek(c->trace->b.ring, &cur, buf, sizeof(buf), &len), 0);
	trace_reader_init(&rd);
	trace_reader_feed(&rd, buf, len, cur.seq, false);
	while (trace_reader_next(&rd, &ev) == 1) {
		last = ev;
		any = true;
	}
	assert_true(any);
	assert_int_equal(last.type, TV_REC_STOP);
	return last.u.startstop.trigger;
}

static void test_poweroff_closes_every_window(void **state)
{
	(void)state;
	pump.exit_after = 3;
	pump.ack_after = 5;
	assert_true(trace_poweroff(&cpus[0]));
	/* this CPU's window: closed with the trigger, exported (callback) */
	assert_false(trace_cpu_active(&cpus[0]));
	assert_int_equal(last_stop_trigger(&cpus[0]), TV_TRIG_GUEST_POWEROFF);
	assert_string_equal(trace_trigger_name(TV_TRIG_GUEST_POWEROFF), "guest-power-off");
	assert_int_equal(windows[0], 1);
	/* the other: closed at its next exit, by the request */
	assert_false(trace_cpu_active(&cpus[1]));
	assert_int_equal(last_stop_trigger(&cpus[1]), TV_TRIG_GUEST_POWEROFF);
	assert_int_equal(windows[1], 1);
	assert_int_equal(cpus[1].trace->req_pending, 0);
	assert_int_equal(cpus[1].trace->req_applied, 1);
	assert_int_equal(windows[2], 0);
	/* the wait ended as soon as both held: closed and acknowledged */
	assert_int_equal(pump.calls, 5);
}

static void test_request_pending_until_the_cpu_exits(void **state)
{
	(void)state;
	pump.never_exit = true;
	hw_fake_set_tsc_step(TSC_HZ / 1000);   /* 1 ms per TSC read */
	assert_false(trace_poweroff(&cpus[0]));
	/* CPU 1 never exited: asked, still open; the wait was bounded */
	assert_true(cpus[1].trace->req_pending & TRACE_REQ_POWEROFF);
	assert_true(trace_cpu_active(&cpus[1]));
	assert_true(pump.calls >= TRACE_POWEROFF_WAIT_MS / 2 - 2);
	assert_true(pump.calls <= TRACE_POWEROFF_WAIT_MS + 2);
	/* its next exit closes it; a START queued meanwhile does not reopen it */
	assert_int_equal(trace_request(&cpus[1], TRACE_REQ_START, 0, NULL, 0), TRACE_REQ_OK);
	trace_before_entry(&cpus[1], EXIT_REASON_PREEMPTION_TIMER);
	assert_false(trace_cpu_active(&cpus[1]));
	assert_int_equal(cpus[1].trace->req_pending, 0);
	assert_int_equal(last_stop_trigger(&cpus[1]), TV_TRIG_GUEST_POWEROFF);
}

static void test_bounded_when_the_receiver_never_acknowledges(void **state)
{
	uint64_t t0;

	(void)state;
	pump.exit_after = 1;
	pump.never_ack = true;
	hw_fake_set_tsc_step(TSC_HZ / 1000);
	t0 = hw_fake_get_tsc();
	assert_false(trace_poweroff(&cpus[0]));
	assert_false(trace_cpu_active(&cpus[1]));          /* closed, but not acknowledged */
	assert_true(hw_fake_get_tsc() - t0 >= TSC_HZ / 1000 * TRACE_POWEROFF_WAIT_MS);
	assert_true(hw_fake_get_tsc() - t0 <= TSC_HZ / 1000 * (TRACE_POWEROFF_WAIT_MS + 100));
}

static void test_without_pump_and_from_the_exit_hook(void **state)
{
	(void)state;
	/* No pump (serial exporter): only the windows are waited for. */
	trace_engine_set_cpus(cpus, NCPU, NULL);
	trace_request(&cpus[1], TRACE_REQ_STOP, 0, NULL, 0);
	trace_before_entry(&cpus[1], EXIT_REASON_PREEMPTION_TIMER);
	assert_false(trace_cpu_active(&cpus[1]));
	/* through the exit hook, as exit_io.c calls it */
	trace_hooks_register();
	assert_non_null(exit_hooks_get()->guest_sleep);
	exit_hooks_get()->guest_sleep(&cpus[0], 0xb004, 0x3401);
	assert_false(trace_cpu_active(&cpus[0]));
	assert_int_equal(last_stop_trigger(&cpus[0]), TV_TRIG_GUEST_POWEROFF);
	assert_int_equal(last_stop_trigger(&cpus[1]), TV_TRIG_RECEIVER);   /* closed before */
	assert_int_equal(pump.calls, 0);
	assert_int_equal(hw_fake_pause_count, 0);   /* nothing to wait for */
}

/*
 * A slow receiver that keeps acknowledging: the wait goes on past the
 * bound (here 5 s with a 2 s bound), because the bound counts only time
 * without progress.
 */
static void test_waits_while_the_receiver_acknowledges(void **state)
{
	uint64_t t0;

	(void)state;
	pump.exit_after = 1;
	pump.ack_after = 5000;
	pump.progress_every = 300;   /* ~300-600 ms of fake TSC apart */
	hw_fake_set_tsc_step(TSC_HZ / 1000);
	t0 = hw_fake_get_tsc();
	assert_true(trace_poweroff(&cpus[0]));
	assert_int_equal(pump.calls, 5000);
	assert_true(hw_fake_get_tsc() - t0 > TSC_HZ / 1000 * TRACE_POWEROFF_WAIT_MS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_poweroff_closes_every_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_waits_while_the_receiver_acknowledges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_request_pending_until_the_cpu_exits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounded_when_the_receiver_never_acknowledges, setup, teardown),
		cmocka_unit_test_setup_teardown(test_without_pump_and_from_the_exit_hook, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
