/* SPDX-License-Identifier: MIT */
/*
 * test_config_wait.c - the back-pressure keys of tracevisor.conf
 * (vmm/config_trace.c; docs/CONFIG.md, docs/BACKPRESSURE.md): overflow =
 * wait, its default when a receiver is configured (and only then),
 * wait_ms and stall_tsc with good and bad values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/config.h"
#include "vmm/trace/stall.h"

static struct tv_config cfg;
static struct config_result res;

static uint32_t parse(const char *text)
{
	config_defaults(&cfg);
	return config_parse(&cfg, text, strlen(text), &res);
}

static void assert_one_error(uint32_t line, const char *needle)
{
	assert_int_equal(res.nerrors, 1);
	assert_int_equal(res.errors[0].line, line);
	if (!strstr(res.errors[0].msg, needle))
		fail_msg("error message \"%s\" lacks \"%s\"", res.errors[0].msg, needle);
}

static void test_overflow_wait(void **state)
{
	(void)state;
	assert_int_equal(parse("overflow = wait\n"), 0);
	assert_int_equal(cfg.trace_overflow, TV_OVERFLOW_WAIT);
	assert_int_equal(parse("overflow = waiting\n"), 1);
	assert_one_error(1, "overflow must be wait, stop or overwrite");
	assert_int_equal(cfg.trace_overflow, TV_OVERFLOW_OVERWRITE);
}

/* wait is the default with a receiver, only when overflow is not set; overwrite without. */
static void test_overflow_default_follows_receiver(void **state)
{
	(void)state;
	assert_int_equal(parse(""), 0);
	assert_int_equal(cfg.trace_overflow, TV_OVERFLOW_OVERWRITE);
	assert_int_equal(parse("source = pt\n"), 0);
	assert_int_equal(cfg.trace_overflow, TV_OVERFLOW_OVERWRITE);
	assert_int_equal(parse("receiver = 10.0.2.2:6543\n"), 0);
	assert_int_equal(cfg.trace_overflow, TV_OVERFLOW_WAIT);
	/* the order of the lines does not matter */
	assert_int_equal(parse("overflow = stop\nreceiver = 10.0.2.2:6543\n"), 0);
	assert_int_equal(cfg.trace_overflow, TV_OVERFLOW_STOP);
	assert_int_equal(parse("receiver = 192.168.1.5:7000\noverflow = overwrite\n"), 0);
	assert_int_equal(cfg.trace_overflow, TV_OVERFLOW_OVERWRITE);
	/* a bad receiver line sets nothing: no receiver, no wait */
	assert_int_equal(parse("receiver = nowhere\n"), 1);
	assert_int_equal(cfg.trace_overflow, TV_OVERFLOW_OVERWRITE);
	/* a bad overflow line with a receiver: the default for a receiver */
	assert_int_equal(parse("receiver = 10.0.2.2:6543\noverflow = drop\n"), 1);
	assert_int_equal(cfg.trace_overflow, TV_OVERFLOW_WAIT);
}

static void test_wait_ms(void **state)
{
	(void)state;
	assert_int_equal(parse(""), 0);
	assert_int_equal(cfg.trace_wait_ms, 2000);
	assert_int_equal(cfg.trace_wait_ms, TRACE_WAIT_MS_DEFAULT);
	assert_int_equal(parse("wait_ms = 1\n"), 0);
	assert_int_equal(cfg.trace_wait_ms, 1);
	assert_int_equal(parse("wait_ms = 3600000\n"), 0);
	assert_int_equal(cfg.trace_wait_ms, 3600000);
	static const char *const bad[] = { "wait_ms = 0\n", "wait_ms = 3600001\n", "wait_ms = 2s\n",
					   "wait_ms = -5\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i]), 1);
		assert_one_error(1, "wait_ms must be 1..3600000 milliseconds");
		assert_int_equal(cfg.trace_wait_ms, 2000);
	}
}

static void test_stall_tsc(void **state)
{
	(void)state;
	assert_int_equal(parse(""), 0);
	assert_int_equal(cfg.trace_stall_tsc, TRACE_STALL_TSC_KEEP);
	assert_int_equal(parse("stall_tsc = hide\n"), 0);
	assert_int_equal(cfg.trace_stall_tsc, TRACE_STALL_TSC_HIDE);
	assert_int_equal(parse("stall_tsc = keep\n"), 0);
	assert_int_equal(cfg.trace_stall_tsc, TRACE_STALL_TSC_KEEP);
	assert_int_equal(parse("stall_tsc = freeze\n"), 1);
	assert_one_error(1, "stall_tsc must be keep or hide");
	assert_int_equal(cfg.trace_stall_tsc, TRACE_STALL_TSC_KEEP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overflow_wait),
		cmocka_unit_test(test_overflow_default_follows_receiver),
		cmocka_unit_test(test_wait_ms),
		cmocka_unit_test(test_stall_tsc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
