/* SPDX-License-Identifier: MIT */
/*
 * test_trace_needs.c - trace_engine_needs: what each source asks of VMX,
 * of the drain tick and of the boot code's per-CPU memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/trace/engine.h"
#include "vmm/trace/needs.h"
#include "vmm/vmx/vmx_defs.h"

static void needs_of(uint8_t source, uint8_t pmi, struct trace_needs *n)
{
	struct trace_setup s;

	memset(&s, 0, sizeof(s));
	s.source = source;
	s.pmi = pmi;
	s.ring_kb = 64;
	trace_engine_needs(&s, n);
}

static void test_none_needs_nothing(void **state)
{
	struct trace_needs n, zero;

	(void)state;
	memset(&zero, 0, sizeof(zero));
	needs_of(TV_SOURCE_NONE, 1, &n);
	assert_memory_equal(&n, &zero, sizeof(n));
	trace_engine_needs(NULL, &n);
	assert_memory_equal(&n, &zero, sizeof(n));
}

static void test_ring_bytes_every_source(void **state)
{
	struct trace_needs n;

	(void)state;
	for (uint8_t s = TV_SOURCE_MTF; s <= TV_SOURCE_PT; s++) {
		needs_of(s, 0, &n);
		assert_true(n.ring_bytes >= (64u << 10) + 4096);
		assert_int_equal(n.ring_bytes & 4095, 0);
	}
}

static void test_controls_per_source(void **state)
{
	struct trace_needs n;

	(void)state;
	needs_of(TV_SOURCE_MTF, 1, &n);
	assert_int_equal(n.entry_ctls | n.exit_ctls | n.pin_ctls, 0);
	assert_false(n.drain_tick);
	assert_int_equal(n.hidden_bytes + n.guest_bytes, 0);

	needs_of(TV_SOURCE_BTF, 0, &n);
	assert_int_equal(n.entry_ctls, ENTRY_LOAD_LBR_CTL);
	assert_int_equal(n.exit_ctls, EXIT_CLEAR_LBR_CTL);
	assert_int_equal(n.pin_ctls, 0);

	needs_of(TV_SOURCE_LBR, 0, &n);
	assert_int_equal(n.entry_ctls, ENTRY_LOAD_LBR_CTL);
	assert_int_equal(n.exit_ctls, EXIT_CLEAR_LBR_CTL);
	assert_int_equal(n.pin_ctls, 0);
	needs_of(TV_SOURCE_LBR, 1, &n);
	assert_int_equal(n.entry_ctls, ENTRY_LOAD_LBR_CTL | ENTRY_LOAD_PERF_GLOBAL_CTRL);
	assert_int_equal(n.exit_ctls, EXIT_CLEAR_LBR_CTL | EXIT_LOAD_PERF_GLOBAL_CTRL);
	assert_int_equal(n.pin_ctls, PIN_NMI_EXITING);

	needs_of(TV_SOURCE_BTS, 0, &n);
	assert_int_equal(n.entry_ctls | n.exit_ctls | n.pin_ctls, 0);
	assert_int_equal(n.guest_bytes, TRACE_BTS_AREA_BYTES);
	assert_int_equal(n.hidden_bytes, 0);
	needs_of(TV_SOURCE_BTS, 1, &n);
	assert_int_equal(n.pin_ctls, PIN_NMI_EXITING);

	needs_of(TV_SOURCE_PT, 0, &n);
	assert_int_equal(n.entry_ctls | n.exit_ctls | n.pin_ctls, 0);
	assert_int_equal(n.entry_ctls_traced, ENTRY_LOAD_RTIT_CTL);
	assert_int_equal(n.exit_ctls_traced, EXIT_CLEAR_RTIT_CTL);
	assert_true(n.drain_tick);
	assert_int_equal(n.hidden_bytes, TRACE_PT_AREA_BYTES);
	assert_int_equal(n.hidden_align, TRACE_PT_REGION_BYTES);
	assert_int_equal(n.guest_bytes, 0);
	needs_of(TV_SOURCE_PT, 1, &n);
	assert_int_equal(n.pin_ctls, PIN_NMI_EXITING);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none_needs_nothing),
		cmocka_unit_test(test_ring_bytes_every_source),
		cmocka_unit_test(test_controls_per_source),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
