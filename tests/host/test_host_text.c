/* SPDX-License-Identifier: MIT */
/*
 * test_host_text.c - the library's one JSON string escaper and its text
 * quoting (host-tools/lib/text.c): control characters, quotes and
 * backslashes, valid UTF-8 kept, every invalid byte replaced; the output
 * always parses as strict JSON (tests/host/json_check.c) back to the
 * expected string.  Also the escaper where the capture uses it: a HELLO
 * whose names hold such bytes gives a meta.json that parses.
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

#include "host-tools/lib/capture.h"
#include "host-tools/lib/text.h"
#include "tests/host/helpers.h"
#include "tests/host/json_check.h"

/* What fn writes for s[0..len), as a malloc'ed NUL-terminated string. */
static char *render(void (*fn)(FILE *, const char *, size_t), const char *s, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	assert_non_null(f);
	fn(f, s, len);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* tvh_json_string(s[0..len)) is exactly `want`, and parses back to `back`. */
static void check_json(const char *s, size_t len, const char *want, const char *back,
		       size_t back_len)
{
	char *out = render(tvh_json_string, s, len), err[128];
	struct jval *v;

	assert_string_equal(out, want);
	v = json_parse(out, strlen(out), err, sizeof(err));
	if (!v)
		fail_msg("%s: %s", out, err);
	assert_int_equal(v->t, J_STR);
	assert_int_equal(v->len, back_len);
	assert_memory_equal(v->str, back, back_len);
	json_free(v);
	free(out);
}

static void test_json_escapes(void **state)
{
	(void)state;
	check_json("", 0, "\"\"", "", 0);
	check_json("plain text 123", 14, "\"plain text 123\"", "plain text 123", 14);
	check_json("a\"b\\c", 5, "\"a\\\"b\\\\c\"", "a\"b\\c", 5);
	check_json("l1\nl2\r\tx", 8, "\"l1\\nl2\\r\\tx\"", "l1\nl2\r\tx", 8);
	/* Other controls, DEL and an embedded NUL as \uXXXX. */
	check_json("\x01\x1f\x7f", 3, "\"\\u0001\\u001f\\u007f\"", "\x01\x1f\x7f", 3);
	check_json("a\0b", 3, "\"a\\u0000b\"", "a\0b", 3);
	check_json("\b\f", 2, "\"\\u0008\\u000c\"", "\b\f", 2);
	/* '/' needs no escape. */
	check_json("a/b", 3, "\"a/b\"", "a/b", 3);
}

static void test_json_utf8(void **state)
{
	(void)state;
	/* Valid sequences of 2, 3 and 4 bytes are kept as they are. */
	check_json("\xc3\xa9", 2, "\"\xc3\xa9\"", "\xc3\xa9", 2);                  /* U+00E9 */
	check_json("\xe2\x82\xac", 3, "\"\xe2\x82\xac\"", "\xe2\x82\xac", 3);      /* U+20AC */
	check_json("\xf0\x9f\x98\x80", 4, "\"\xf0\x9f\x98\x80\"", "\xf0\x9f\x98\x80", 4);
	check_json("\xf4\x8f\xbf\xbf", 4, "\"\xf4\x8f\xbf\xbf\"", "\xf4\x8f\xbf\xbf", 4);
	/* Every byte of an invalid sequence becomes U+FFFD. */
	check_json("\x80", 1, "\"\\ufffd\"", "\xef\xbf\xbd", 3);                    /* lone continuation */
	check_json("\xc0\x80", 2, "\"\\ufffd\\ufffd\"", "\xef\xbf\xbd\xef\xbf\xbd", 6); /* overlong NUL */
	check_json("\xe0\x80\xaf", 3, "\"\\ufffd\\ufffd\\ufffd\"",
		   "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9);                     /* overlong '/' */
	check_json("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"",
		   "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 9);                     /* surrogate */
	check_json("\xf4\x90\x80\x80", 4, "\"\\ufffd\\ufffd\\ufffd\\ufffd\"",
		   "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", 12);        /* > U+10FFFF */
	check_json("\xff", 1, "\"\\ufffd\"", "\xef\xbf\xbd", 3);
	/* Cut short by the end of the string (len), then valid text again. */
	check_json("x\xe2\x82", 3, "\"x\\ufffd\\ufffd\"", "x\xef\xbf\xbd\xef\xbf\xbd", 7);
	check_json("\xe2\x82y", 3, "\"\\ufffd\\ufffdy\"", "\xef\xbf\xbd\xef\xbf\xbdy", 7);
	/* len, not the NUL, ends the string: a valid sequence cut by len. */
	check_json("\xc3\xa9", 1, "\"\\ufffd\"", "\xef\xbf\xbd", 3);
}

static void test_utf8_len(void **state)
{
	(void)state;
	assert_int_equal(tvh_utf8_len((const uint8_t *)"a", 1), 1);
	assert_int_equal(tvh_utf8_len((const uint8_t *)"\xc3\xa9", 2), 2);
	assert_int_equal(tvh_utf8_len((const uint8_t *)"\xe2\x82\xac", 3), 3);
	assert_int_equal(tvh_utf8_len((const uint8_t *)"\xf0\x9f\x98\x80", 4), 4);
	assert_int_equal(tvh_utf8_len((const uint8_t *)"\xe2\x82\xac", 2), 0);
	assert_int_equal(tvh_utf8_len((const uint8_t *)"\xc1\xbf", 2), 0);
	assert_int_equal(tvh_utf8_len((const uint8_t *)"\xed\xbf\xbf", 3), 0);
	assert_int_equal(tvh_utf8_len((const uint8_t *)"\xf8\x80\x80\x80", 4), 0);
	assert_int_equal(tvh_utf8_len((const uint8_t *)"", 0), 0);
}

static void test_quoted(void **state)
{
	char *out;

	(void)state;
	out = render(tvh_quoted, "a\"b\\c\n\r\t", 8);
	assert_string_equal(out, "\"a\\\"b\\\\c\\n\\r\\t\"");
	free(out);
	/* Controls, DEL and invalid UTF-8 bytes as \xNN; valid UTF-8 kept. */
	out = render(tvh_quoted, "\x01\x7f\xc3\xa9\xff\xc0\x80", 7);
	assert_string_equal(out, "\"\\x01\\x7f\xc3\xa9\\xff\\xc0\\x80\"");
	free(out);
}

/* The capture's meta.json: the HELLO's names through the same escaper. */
static void test_capture_meta_names(void **state)
{
	static const char machine[] = "lab \"7\"\\\n\x7f\xff\xc3\xa9";
	struct tvp_hello h;
	struct cap c;
	char path[4200], err[128];
	size_t len;
	char *text;
	struct jval *meta;
	const struct jval *cpu;
	char *out = th_path("text-cap");

	(void)state;
	memset(&h, 0, sizeof(h));
	h.cpu_count = 1;
	h.source = TV_SOURCE_MTF;
	h.vendor_id = TVP_VENDOR_INTEL;
	memcpy(h.vendor, "Genuine\x01ntel", 12);
	memcpy(h.sw_version, "v\t1", 3);
	memcpy(h.machine, machine, sizeof(machine) - 1);
	assert_int_equal(cap_init(&c, out, 0x42, "10.0.0.9:5", 1), 0);
	assert_int_equal(cap_set_hello(&c, &h), 0);
	assert_int_equal(cap_close(&c, 2), 0);
	snprintf(path, sizeof(path), "%s/meta.json", c.dir);
	text = th_read_file(path, &len);
	meta = json_parse(text, len, err, sizeof(err));
	if (!meta)
		fail_msg("meta.json: %s\n%s", err, text);
	assert_string_equal(json_get_str(meta, "machine"), "lab \"7\"\\\n\x7f\xef\xbf\xbd\xc3\xa9");
	assert_string_equal(json_get_str(meta, "sender_version"), "v\t1");
	assert_string_equal(json_get_str(meta, "peer"), "10.0.0.9:5");
	cpu = json_get(meta, "cpu");
	assert_non_null(cpu);
	assert_string_equal(json_get_str(cpu, "vendor"), "Genuine\x01ntel");
	/* The escapes are text.h's: \n and \t short, DEL as \u007f. */
	assert_non_null(strstr(text, "\"lab \\\"7\\\"\\\\\\n\\u007f\\ufffd\xc3\xa9\""));
	json_free(meta);
	free(text);
	cap_free(&c);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_escapes),
		cmocka_unit_test(test_json_utf8),
		cmocka_unit_test(test_utf8_len),
		cmocka_unit_test(test_quoted),
		cmocka_unit_test(test_capture_meta_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
