/* SPDX-License-Identifier: MIT */
/*
 * test_source_list.c - TV_SOURCE_LIST (vmm/trace/format.h), the one list of
 * trace sources, and the tables that take from it: the wire values stay
 * put, every source has a unique name fit for a config keyword, and the
 * bounds of the ring, the HELLO's capability bits and the caps names follow
 * the list.  (The Wireshark dissector is checked by tests/build/source-list.sh.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "net/proto.h"
#include "vmm/trace/caps.h"
#include "vmm/trace/format.h"
#include "vmm/trace/ring.h"

/* The numbers are in capture files and on the wire: they never change. */
static void test_wire_values(void **state)
{
	(void)state;
	assert_int_equal(TV_SOURCE_NONE, 0);
	assert_int_equal(TV_SOURCE_MTF, 1);
	assert_int_equal(TV_SOURCE_BTF, 2);
	assert_int_equal(TV_SOURCE_LBR, 3);
	assert_int_equal(TV_SOURCE_BTS, 4);
	assert_int_equal(TV_SOURCE_PT, 5);
	assert_int_equal(TV_SOURCE_COUNT, 6);
	assert_int_equal(TV_SOURCE_MAX, TV_SOURCE_PT);
}

/* Every listed value has a name; nothing else has one. */
static void test_every_source_has_a_name(void **state)
{
	(void)state;
	assert_null(tv_source_name(TV_SOURCE_NONE));
	for (unsigned s = TV_SOURCE_NONE + 1; s <= TV_SOURCE_MAX; s++)
		assert_non_null(tv_source_name(s));
	for (unsigned s = TV_SOURCE_MAX + 1; s < 300; s++)
		assert_null(tv_source_name(s));
	assert_null(tv_source_name(~0u));
	assert_string_equal(tv_source_name(TV_SOURCE_MTF), "mtf");
	assert_string_equal(tv_source_name(TV_SOURCE_PT), "pt");
}

/* Names are unique, 1..15 characters of a-z 0-9 _ (a config keyword, a
 * JSON and Lua string without escapes), and none is a reserved word. */
static void test_names_unique_and_plain(void **state)
{
	(void)state;
	for (unsigned s = TV_SOURCE_NONE + 1; s <= TV_SOURCE_MAX; s++) {
		const char *n = tv_source_name(s);
		size_t len = strlen(n);

		assert_true(len >= 1 && len <= 15);
		for (size_t i = 0; i < len; i++)
			assert_true((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= '0' && n[i] <= '9') ||
				    n[i] == '_');
		assert_string_not_equal(n, "auto");
		assert_string_not_equal(n, "none");
		for (unsigned t = s + 1; t <= TV_SOURCE_MAX; t++)
			assert_string_not_equal(n, tv_source_name(t));
	}
}

/* The PMI column: lbr, bts and pt drain on a PMI, mtf and btf do not. */
static void test_pmi_column(void **state)
{
	(void)state;
	assert_false(tv_source_takes_pmi(TV_SOURCE_NONE));
	assert_false(tv_source_takes_pmi(TV_SOURCE_MTF));
	assert_false(tv_source_takes_pmi(TV_SOURCE_BTF));
	assert_true(tv_source_takes_pmi(TV_SOURCE_LBR));
	assert_true(tv_source_takes_pmi(TV_SOURCE_BTS));
	assert_true(tv_source_takes_pmi(TV_SOURCE_PT));
	assert_false(tv_source_takes_pmi(TV_SOURCE_MAX + 1));
}

/* trace_caps_source_name: "auto" for NONE, the list's name, "?" beyond. */
static void test_caps_names(void **state)
{
	(void)state;
	assert_string_equal(trace_caps_source_name(TV_SOURCE_NONE), "auto");
	for (unsigned s = TV_SOURCE_NONE + 1; s <= TV_SOURCE_MAX; s++)
		assert_string_equal(trace_caps_source_name((enum tv_source)s), tv_source_name(s));
	assert_string_equal(trace_caps_source_name((enum tv_source)(TV_SOURCE_MAX + 1)), "?");
}

/* The HELLO's known capability bits: exactly one per listed source. */
static void test_cap_bits(void **state)
{
	uint32_t bits = 0;

	(void)state;
	for (unsigned s = TV_SOURCE_NONE + 1; s <= TV_SOURCE_MAX; s++)
		bits |= TVP_CAP_SOURCE(s);
	assert_int_equal(TVP_CAP_SOURCES, bits);
	assert_int_equal(TVP_CAP_KNOWN & 0xffffu, bits);
	assert_int_equal(TVP_CAP_SOURCES & (TVP_CAP_CONTROL | TVP_CAP_PT_STREAM), 0);
}

/* The ring takes every value up to TV_SOURCE_MAX and nothing above. */
static void test_ring_bound(void **state)
{
	static uint64_t mem[(128 + 4096) / 8];
	struct tv_trace_ring *r = (struct tv_trace_ring *)mem;

	(void)state;
	for (unsigned s = TV_SOURCE_NONE; s <= TV_SOURCE_MAX; s++) {
		assert_int_equal(trace_ring_init(r, sizeof(mem), 0, 0, (enum tv_source)s,
						 TV_OVERFLOW_STOP, 0, 0), 0);
		assert_int_equal(r->source, s);
	}
	assert_int_equal(trace_ring_init(r, sizeof(mem), 0, 0, (enum tv_source)(TV_SOURCE_MAX + 1),
					 TV_OVERFLOW_STOP, 0, 0), TRACE_ERR_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire_values),
		cmocka_unit_test(test_every_source_has_a_name),
		cmocka_unit_test(test_names_unique_and_plain),
		cmocka_unit_test(test_pmi_column),
		cmocka_unit_test(test_caps_names),
		cmocka_unit_test(test_cap_bits),
		cmocka_unit_test(test_ring_bound),
	};

	return cmocka_run_group_tests_name("test_source_list", tests, NULL, NULL);
}
