/* SPDX-License-Identifier: MIT */
/*
 * test_host_chrome.c - Chrome trace-event JSON (host-tools/lib/chrome.c),
 * checked with a strict JSON parser: structure, B/E nesting per CPU,
 * monotonic time, TSC interpolation, sequence time, escaping, symbols.
 */
#define _GNU_SOURCE
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host-tools/lib/chrome.h"
#include "host-tools/lib/error.h"
#include "tests/host/helpers.h"
#include "tests/host/json_check.h"

struct out {
	char *buf;
	size_t len;
	struct jval *root;
	const struct jval *events;
	struct tvh_chrome_stats cs;
};

static void render(const struct th_tvt *t, struct tvh_symtab *st, bool seq_time,
		   int64_t cpu, struct out *o)
{
	struct tvt_reader r;
	struct tvh_chrome_opts co = { .st = st, .cpu = cpu, .sequence_time = seq_time };
	char err[128];
	FILE *f;

	memset(o, 0, sizeof(*o));
	f = open_memstream(&o->buf, &o->len);
	assert_non_null(f);
	assert_int_equal(tvt_reader_open_mem(&r, t->buf, t->len), 0);
	assert_int_equal(tvh_chrome_write(&r, &co, f, &o->cs), 0);
	fclose(f);
	tvt_reader_close(&r);
	o->root = json_parse(o->buf, o->len, err, sizeof(err));
	if (!o->root)
		fail_msg("invalid JSON: %s\n%s", err, o->buf);
	assert_int_equal(o->root->t, J_OBJ);
	o->events = json_get(o->root, "traceEvents");
	assert_non_null(o->events);
	assert_int_equal(o->events->t, J_ARR);
	assert_string_equal(json_get_str(o->root, "displayTimeUnit"), "ns");
}

static void out_free(struct out *o)
{
	json_free(o->root);
	free(o->buf);
	tvh_stats_free(&o->cs.walk);
}

static double num(const struct jval *ev, const char *key)
{
	const struct jval *v = json_get(ev, key);

	assert_non_null(v);
	assert_int_equal(v->t, J_NUM);
	return v->num;
}

/*
 * The rules every output must follow: each event has ph/pid/tid/ts (M:
 * name); per tid, ts never decreases and E never outnumbers B; at the
 * end each tid is balanced.
 */
static void check_structure(const struct out *o)
{
	double last_ts[8];
	int depth[8];

	for (int i = 0; i < 8; i++) {
		last_ts[i] = -1;
		depth[i] = 0;
	}
	for (size_t i = 0; i < o->events->len; i++) {
		const struct jval *ev = &o->events->items[i];
		const char *ph = json_get_str(ev, "ph");
		int tid;

		assert_int_equal(ev->t, J_OBJ);
		assert_non_null(ph);
		assert_int_equal(num(ev, "pid"), 0);
		if (!strcmp(ph, "M")) {
			assert_non_null(json_get_str(ev, "name"));
			continue;
		}
		tid = (int)num(ev, "tid");
		assert_true(tid >= 0 && tid < 8);
		assert_true(num(ev, "ts") >= last_ts[tid]);
		last_ts[tid] = num(ev, "ts");
		if (!strcmp(ph, "B")) {
			depth[tid]++;
			assert_non_null(json_get_str(ev, "name"));
		} else if (!strcmp(ph, "E")) {
			assert_true(--depth[tid] >= 0);
		} else {
			assert_string_equal(ph, "i");
			assert_string_equal(json_get_str(ev, "s"), "t");
			assert_non_null(json_get_str(ev, "name"));
		}
	}
	for (int i = 0; i < 8; i++)
		assert_int_equal(depth[i], 0);
}

/* The n-th event (0-based) of phase ph on tid, or NULL. */
static const struct jval *nth(const struct out *o, const char *ph, int tid, int n)
{
	for (size_t i = 0; i < o->events->len; i++) {
		const struct jval *ev = &o->events->items[i];

		if (strcmp(json_get_str(ev, "ph"), ph) || !json_get(ev, "tid") ||
		    (int)num(ev, "tid") != tid)
			continue;
		if (n-- == 0)
			return ev;
	}
	return NULL;
}

static const struct jval *named(const struct out *o, const char *name)
{
	for (size_t i = 0; i < o->events->len; i++) {
		const char *n = json_get_str(&o->events->items[i], "name");

		if (n && !strcmp(n, name))
			return &o->events->items[i];
	}
	return NULL;
}

/* cpu 0: TSC at 1 GHz, so 1 tick = 1 ns = 0.001 us. */
static void build(struct th_tvt *t)
{
	struct recbuf a = { 0 }, b = { 0 }, c = { 0 };
	static const char label[] = "say \"hi\"\n\xff!";

	rb_time(&a, 1000, 1000000000ull, 0);                    /* seq 0 */
	rb_startstop(&a, TV_REC_START, TV_TRIG_BOOT, 1000, 0x10); /* 1 */
	rb_branch_tsc(&a, TV_BR_CALL, 0x100, 0x2000, 2000, 0);  /* 2: B at 1.0 us */
	rb_compact(&a, TV_BR_JCC, 4, 0x2010);                   /* 3 */
	rb_compact(&a, TV_BR_CALL_IND, 4, 0x3000);              /* 4: B interpolated */
	rb_compact(&a, TV_BR_RET, 4, 0x2020);                   /* 5: E */
	rb_branch_tsc(&a, TV_BR_RET, 0x2030, 0x105, 6000, 0);   /* 6: E at 5.0 us */
	rb_branch_tsc(&a, TV_BR_RET, 0x110, 0x120, 6500, 0);    /* 7: unmatched */
	rb_cr3(&a, 7000, 0xabc000, 0x130);                      /* 8 */
	rb_marker(&a, 7100, 42, label, sizeof(label) - 1);      /* 9 */
	rb_branch_tsc(&a, TV_BR_INTERRUPT, 0x140, 0x9000, 7200, 0); /* 10: B trap */
	rb_branch_tsc(&a, TV_BR_CALL, 0x9004, 0x9100, 7300, 0); /* 11: B call inside */
	rb_branch_tsc(&a, TV_BR_SYSRET, 0x9008, 0x140, 7400, 0); /* 12: E x2 */
	rb_branch_tsc(&a, TV_BR_CALL, 0x150, 0x2000, 7500, 0);  /* 13: B, closed by gap */
	/* seq 14..15 lost */
	rb_text(&b, TV_REC_LOG, 1, 8000, "boot ok", 7);          /* 16 */
	rb_image(&b, TV_IMG_LOADER, 8100, 0x7000000, 0x1000, "grubx64.efi"); /* 17 */
	rb_branch_tsc(&b, TV_BR_CALL, 0x160, 0x2000, 8200, 0);  /* 18: B, open at the end */
	rb_lost(&b, 8300, 3);                                    /* 19: closes it */
	rb_branch_tsc(&b, TV_BR_CALL, 0x170, 0x3000, 8400, 0);  /* 20: open at the end */
	rb_startstop(&b, TV_REC_STOP, TV_TRIG_LIMIT, 9000, 0x180); /* 21: closes it */
	rb_branch_tsc(&b, TV_BR_CALL, 0x190, 0x2000, 9100, 0);  /* 22: closed at end */
	/* cpu 1: no TSC at all -> sequence time on that track */
	rb_branch(&c, TV_BR_CALL, 0x100, 0x2000);
	rb_branch(&c, TV_BR_RET, 0x2000, 0x105);
	th_tvt_begin(t, "bench \"A\"", 7);
	th_tvt_records(t, 0, 0, &a);
	th_tvt_records(t, 0, 16, &b);
	th_tvt_records(t, 1, 0, &c);
	th_tvt_end(t);
	rb_free(&a);
	rb_free(&b);
	rb_free(&c);
}

static void test_tsc_time_and_slices(void **state)
{
	struct th_tvt t;
	struct out o;
	const struct jval *ev;

	(void)state;
	build(&t);
	render(&t, NULL, false, -1, &o);
	check_structure(&o);
	assert_true(o.cs.tsc_time);
	assert_int_equal(o.cs.tsc_hz, 1000000000ull);
	assert_string_equal(json_get_str(json_get(o.root, "otherData"), "time_base"), "tsc");
	assert_string_equal(json_get_str(json_get(o.root, "otherData"), "machine"), "bench \"A\"");

	/* First B: the call at tsc 2000 -> (2000 - 1000) ns = 1 us. */
	ev = nth(&o, "B", 0, 0);
	assert_non_null(ev);
	assert_string_equal(json_get_str(ev, "name"), "0x2000");
	assert_string_equal(json_get_str(ev, "cat"), "call");
	assert_true(fabs(num(ev, "ts") - 1.0) < 1e-9);
	assert_string_equal(json_get_str(json_get(ev, "args"), "from"), "0x100");
	/* Second B: seq 4, between tsc 2000 (seq 2) and 6000 (seq 6): 4000 -> 3 us. */
	ev = nth(&o, "B", 0, 1);
	assert_string_equal(json_get_str(ev, "name"), "0x3000");
	assert_true(fabs(num(ev, "ts") - 3.0) < 1e-9);
	/* E of the compact ret at seq 5: 5000 -> 4 us; then the ret at 6000 -> 5 us. */
	assert_true(fabs(num(nth(&o, "E", 0, 0), "ts") - 4.0) < 1e-9);
	assert_true(fabs(num(nth(&o, "E", 0, 1), "ts") - 5.0) < 1e-9);
	assert_int_equal(o.cs.unmatched_returns, 1);
	/* The interrupt slice and the call in it both end at the sysret. */
	ev = nth(&o, "B", 0, 2);
	assert_string_equal(json_get_str(ev, "name"), "interrupt: 0x9000");
	assert_string_equal(json_get_str(ev, "cat"), "interrupt");
	assert_true(fabs(num(nth(&o, "E", 0, 2), "ts") - 6.4) < 1e-9);
	assert_true(fabs(num(nth(&o, "E", 0, 3), "ts") - 6.4) < 1e-9);

	/* Instants. */
	assert_non_null(named(&o, "cr3 0xabc000"));
	assert_non_null(named(&o, "start (boot)"));
	assert_non_null(named(&o, "stop (limit)"));
	assert_non_null(named(&o, "lost 2 records (sequence gap)"));
	assert_non_null(named(&o, "lost 3 records (LOST)"));
	assert_non_null(named(&o, "log: boot ok"));
	assert_non_null(named(&o, "image: grubx64.efi"));
	/* The label's quote, newline and invalid byte survive as JSON. */
	ev = named(&o, "marker: say \"hi\"\n\xef\xbf\xbd!");
	assert_non_null(ev);
	assert_string_equal(json_get_str(json_get(ev, "args"), "value"), "0x2a");
	/* The gap, LOST and STOP each closed one slice, the end one more. */
	assert_int_equal(o.cs.closed_by_loss, 3);
	assert_int_equal(o.cs.closed_at_end, 1);

	/* cpu 1 has no TSC: its events sit at their sequence numbers. */
	assert_true(fabs(num(nth(&o, "B", 1, 0), "ts") - 0.0) < 1e-9);
	assert_true(fabs(num(nth(&o, "E", 1, 0), "ts") - 1.0) < 1e-9);
	/* Track names. */
	ev = named(&o, "thread_name");
	assert_non_null(ev);
	assert_string_equal(json_get_str(json_get(ev, "args"), "name"), "cpu 0");
	ev = named(&o, "process_name");
	assert_string_equal(json_get_str(json_get(ev, "args"), "name"), "tracevisor: bench \"A\"");
	out_free(&o);
	th_tvt_free(&t);
}

static void test_sequence_time_and_cpu_filter(void **state)
{
	struct th_tvt t;
	struct out o;

	(void)state;
	build(&t);
	render(&t, NULL, true, 0, &o);
	check_structure(&o);
	assert_false(o.cs.tsc_time);
	assert_string_equal(json_get_str(json_get(o.root, "otherData"), "time_base"), "sequence");
	assert_true(fabs(num(nth(&o, "B", 0, 0), "ts") - 2.0) < 1e-9);
	assert_true(fabs(num(nth(&o, "B", 0, 1), "ts") - 4.0) < 1e-9);
	assert_null(nth(&o, "B", 1, 0));     /* filtered out */
	out_free(&o);
	th_tvt_free(&t);
}

static void test_no_frequency_means_sequence(void **state)
{
	struct recbuf a = { 0 };
	struct th_tvt t;
	struct out o;

	(void)state;
	rb_branch_tsc(&a, TV_BR_CALL, 1, 2, 5000, 0);
	rb_branch_tsc(&a, TV_BR_RET, 3, 4, 9000, 0);
	th_tvt_begin(&t, "", 0);
	th_tvt_records(&t, 0, 0, &a);
	th_tvt_end(&t);
	render(&t, NULL, false, -1, &o);
	check_structure(&o);
	assert_false(o.cs.tsc_time);
	assert_true(fabs(num(nth(&o, "E", 0, 0), "ts") - 1.0) < 1e-9);
	out_free(&o);
	th_tvt_free(&t);

	/* The ring snapshot's frequency is used when there is no TIME record. */
	{
		uint8_t ring[128];

		th_ring(ring, 0, TV_SOURCE_BTS, 0, 2, 0, 2000000000ull);
		th_tvt_begin(&t, "", 0);
		th_tvt_chunk(&t, 0, TVT_KIND_RING, 0, 0, ring, sizeof(ring));
		th_tvt_records(&t, 0, 0, &a);
		th_tvt_end(&t);
		render(&t, NULL, false, -1, &o);
		assert_true(o.cs.tsc_time);
		assert_true(fabs(num(nth(&o, "E", 0, 0), "ts") - 2.0) < 1e-9);
		out_free(&o);
		th_tvt_free(&t);
	}
	rb_free(&a);
}

static void test_symbol_names_and_depth(void **state)
{
	static const char src[] =
		"int leaf(int x) { return x + 1; }\n"
		"int entry(void) { return leaf(2); }\n";
	char *elf = th_compile("chrome_syms", "c", src,
			       "-g -O0 -nostdlib -static -no-pie -Wl,-e,entry");
	struct tvh_symtab st;
	struct recbuf a = { 0 };
	struct th_tvt t;
	struct out o;
	uint64_t leaf;

	(void)state;
	assert_non_null(elf);
	leaf = th_elf_sym(elf, "leaf");
	tvh_symtab_init(&st);
	assert_int_equal(tvh_symtab_add(&st, elf), 0);
	rb_branch(&a, TV_BR_CALL, 0x10, leaf);
	rb_branch(&a, TV_BR_CALL, 0x10, leaf + 3);
	for (unsigned i = 0; i < TVH_CHROME_MAX_DEPTH + 10; i++)
		rb_branch(&a, TV_BR_CALL, 0x20, 0x30);
	for (unsigned i = 0; i < TVH_CHROME_MAX_DEPTH + 20; i++)
		rb_branch(&a, TV_BR_RET, 0x30, 0x20);
	th_tvt_begin(&t, "", 0);
	th_tvt_records(&t, 0, 0, &a);
	th_tvt_end(&t);
	render(&t, &st, false, -1, &o);
	check_structure(&o);
	assert_string_equal(json_get_str(nth(&o, "B", 0, 0), "name"), "leaf");
	assert_string_equal(json_get_str(nth(&o, "B", 0, 1), "name"), "leaf+0x3");
	assert_int_equal(o.cs.slices, TVH_CHROME_MAX_DEPTH);
	assert_int_equal(o.cs.too_deep, 12);
	assert_int_equal(o.cs.unmatched_returns, 20 - 12);
	out_free(&o);
	th_tvt_free(&t);
	tvh_symtab_free(&st);
	rb_free(&a);
	free(elf);
}

static void test_json_checker_rejects(void **state)
{
	static const char *const bad[] = {
		"", "{", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "01", "1.", "\"\\x\"",
		"\"a\nb\"", "\"\xff\"", "[1] x", "\"\\ud800\"", "tru", "{1:2}",
	};
	static const char *const good[] = {
		"{}", "[]", "0", "-1.5e+3", "\"\\u00e9\\ud83d\\ude00\"", "[true,false,null]",
		" {\"a\":[1,{\"b\":\"c\"}]} ",
	};
	char err[64];

	(void)state;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct jval *v = json_parse(bad[i], strlen(bad[i]), err, sizeof(err));

		if (v)
			fail_msg("accepted bad JSON '%s'", bad[i]);
	}
	for (unsigned i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct jval *v = json_parse(good[i], strlen(good[i]), err, sizeof(err));

		if (!v)
			fail_msg("rejected '%s': %s", good[i], err);
		json_free(v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tsc_time_and_slices),
		cmocka_unit_test(test_sequence_time_and_cpu_filter),
		cmocka_unit_test(test_no_frequency_means_sequence),
		cmocka_unit_test(test_symbol_names_and_depth),
		cmocka_unit_test(test_json_checker_rejects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
