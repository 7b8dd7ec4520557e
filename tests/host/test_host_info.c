/* SPDX-License-Identifier: MIT */
/*
 * test_host_info.c - `tracevisor info`'s library (host-tools/lib/info.c):
 * the CONFIG "buffers" record the machine writes into each traced ring
 * (tvh_buffers_parse, its JSON) and the per-CPU "buffers:" line of the
 * info output.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host-tools/lib/info.h"
#include "tests/host/helpers.h"

static bool parse(const char *text, struct tvh_buffers *b)
{
	return tvh_buffers_parse(text, strlen(text), b);
}

/* The line vmm/trace/needs.c writes, every field; 64-bit values. */
static void test_parse_fields(void **state)
{
	struct tvh_buffers b;

	(void)state;
	assert_true(parse("buffers ring_bytes=1048448 stream_bytes=1048576 output_bytes=262144 output_regions=4 output_region_bytes=65536 drain_us=1000", &b));
	assert_int_equal(b.ring_bytes, 1048448);
	assert_int_equal(b.stream_bytes, 1048576);
	assert_int_equal(b.output_bytes, 262144);
	assert_int_equal(b.output_regions, 4);
	assert_int_equal(b.output_region_bytes, 65536);
	assert_int_equal(b.drain_us, 1000);
	assert_true(parse("buffers stream_bytes=4398046511104", &b));
	assert_int_equal(b.stream_bytes, 4398046511104ull);          /* 4 TiB */
	assert_int_equal(b.ring_bytes, 0);                           /* missing: 0 */
}

/* Not the line, or damaged fields: never a wrong number. */
static void test_parse_other_and_damaged(void **state)
{
	struct tvh_buffers b;

	(void)state;
	memset(&b, 0x5a, sizeof(b));
	assert_false(parse("mode=pt", &b));
	assert_false(parse("buffers", &b));                  /* no separator: another key */
	assert_false(parse("buffersring_bytes=1", &b));
	assert_false(tvh_buffers_parse(NULL, 0, &b));
	assert_int_equal(b.ring_bytes, 0x5a5a5a5a5a5a5a5aull);   /* untouched */
	assert_true(parse("buffers ring_bytes=12x stream_bytes= output_bytes=99999999999999999999999 future_key=7 drain_us=5", &b));
	assert_int_equal(b.ring_bytes, 0);
	assert_int_equal(b.stream_bytes, 0);
	assert_int_equal(b.output_bytes, 0);                 /* past 64 bits */
	assert_int_equal(b.drain_us, 5);
	/* the length bounds the text (records are not NUL terminated) */
	assert_true(tvh_buffers_parse("buffers drain_us=1234", 19, &b));
	assert_int_equal(b.drain_us, 12);
}

static void test_json(void **state)
{
	struct tvh_buffers b = { 1, 2, 3, 4, 5, 6 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	tvh_buffers_json(f, &b);
	fclose(f);
	assert_string_equal(text, "{\"ring_bytes\": 1, \"stream_bytes\": 2, \"output_bytes\": 3, \"output_regions\": 5, \"output_region_bytes\": 4, \"drain_us\": 6}");
	free(text);
}

/* info prints each CPU's sizes under its line: PT (regions, tick) and BTS. */
static void test_info_output(void **state)
{
	static const char pt[] = "buffers ring_bytes=67108736 stream_bytes=67108864 output_bytes=16777216 output_regions=4 output_region_bytes=4194304 drain_us=64000";
	static const char bts[] = "buffers ring_bytes=1048448 stream_bytes=0 output_bytes=65536 output_regions=1 output_region_bytes=65536 drain_us=0";
	struct recbuf a = { 0 }, b = { 0 };
	struct th_tvt t;
	struct tvt_reader r;
	struct tvh_walk_opts wo = { .cpu = -1 };
	struct tvh_stats s;
	struct tvh_info in;
	char *path, *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	rb_text(&a, TV_REC_CONFIG, 0, 10, pt, sizeof(pt) - 1);
	rb_branch(&a, TV_BR_CALL, 0x1000, 0x2000);
	rb_text(&a, TV_REC_CONFIG, 0, 20, bts, sizeof(bts) - 1);   /* a second one: the first counts */
	rb_text(&b, TV_REC_CONFIG, 0, 10, bts, sizeof(bts) - 1);
	th_tvt_begin(&t, "lab", 9);
	th_tvt_records(&t, 0, 0, &a);
	th_tvt_records(&t, 1, 0, &b);
	th_tvt_end(&t);
	path = th_tvt_save(&t, "info-buffers.tvt");
	assert_int_equal(tvt_reader_open(&r, path), 0);
	tvh_info_init(&in);
	assert_int_equal(tvh_walk(&r, &wo, tvh_info_event, &in, &s), 0);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(tvh_info_write(&in, &r, &s, path, f), 0);
	fclose(f);
	if (!strstr(text, "    buffers: record ring 67108736 bytes, stream ring 64 MiB, hardware output 16 MiB (4 x 4 MiB), drain tick 64000 us\n") ||
	    !strstr(text, "    buffers: record ring 1048448 bytes, hardware output 64 KiB\n"))
		fail_msg("info output:\n%s", text);
	/* once: CPU 1's; CPU 0 kept its first record */
	assert_null(strstr(strstr(text, "hardware output 64 KiB") + 1, "hardware output 64 KiB"));
	free(text);
	tvh_info_free(&in);
	tvh_stats_free(&s);
	tvt_reader_close(&r);
	th_tvt_free(&t);
	rb_free(&a);
	rb_free(&b);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_fields),
		cmocka_unit_test(test_parse_other_and_damaged),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_info_output),
	};

	return cmocka_run_group_tests_name("test_host_info", tests, NULL, NULL);
}
