/* SPDX-License-Identifier: MIT */
/*
 * test_host_timeline_pt.c - `timeline` decodes Intel PT (chrome.c through
 * ptbranch.h): a PT stream encoded with libipt's encoder (pt_fixture.h,
 * with TSC packets) in a .tvt, written as Chrome trace-event JSON: the
 * calls and returns are nested slices named after the target, timed by
 * the TSC packets; a loss between runs is an instant event; without an
 * image PT is only counted.
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

#include "host-tools/lib/chrome.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/pt.h"
#include "host-tools/lib/sym.h"
#include "tests/host/helpers.h"
#include "tests/host/json_check.h"
#include "tests/host/pt_fixture.h"

#define TSC0 1000000ull
#define STEP 1000ull           /* 1 us at 1 GHz */

static struct pt_fixture fx;

static int setup(void **state)
{
	(void)state;
	return ptf_build(&fx);
}

static int teardown(void **state)
{
	(void)state;
	ptf_free(&fx);
	return 0;
}

struct slice_ev {
	char ph;
	double ts;
	char name[64];
};

struct result {
	struct tvh_chrome_stats cs;
	struct slice_ev ev[64];
	unsigned n;              /* B and E events of tid 0 */
	unsigned lost_instants;
	char *json;
	const char *time_base;
	struct jval *root;
};

/* A capture of CPU 0: TIME and START records, then the PT in nruns runs. */
static void run(struct result *res, unsigned nruns, bool with_image)
{
	uint8_t pt[2][512];
	size_t len[2] = { 0, 0 };
	struct recbuf rb = { 0 };
	struct th_tvt t;
	struct tvt_reader r;
	struct tvh_symtab st;
	struct tvh_chrome_opts o;
	struct pt_image *img = NULL;
	size_t jlen;
	FILE *f;
	uint64_t off = 0;
	char err[128];
	const struct jval *evs;

	memset(res, 0, sizeof(*res));
	for (unsigned i = 0; i < nruns; i++)
		assert_int_equal(ptf_encode_tsc(&fx, pt[i], sizeof(pt[i]), &len[i],
						TSC0 + i * 100 * STEP, STEP), 8);
	rb_time(&rb, TSC0, 1000000000ull, 0);
	rb_startstop(&rb, TV_REC_START, TV_TRIG_BOOT, TSC0, ptf_sym(&fx, "_start"));
	th_tvt_begin(&t, "m", 1);
	th_tvt_records(&t, 0, 0, &rb);
	for (unsigned i = 0; i < nruns; i++) {
		th_tvt_chunk(&t, 0, TVT_KIND_PT, 0, off, pt[i], len[i]);
		off += len[i] + 100;           /* 100 bytes lost between runs */
	}
	th_tvt_end(&t);
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, t.len), 0);

	tvh_symtab_init(&st);
	assert_int_equal(tvh_symtab_add(&st, fx.elf), 0);
	if (with_image)
		assert_int_equal(tvh_pt_image(&st, &img), 0);
	o = (struct tvh_chrome_opts){ .st = &st, .cpu = -1, .pt_image = img };
	f = open_memstream(&res->json, &jlen);
	assert_int_equal(tvh_chrome_write(&r, &o, f, &res->cs), 0);
	fclose(f);
	if (img)
		pt_image_free(img);
	tvh_symtab_free(&st);
	tvt_reader_close(&r);
	th_tvt_free(&t);
	rb_free(&rb);

	res->root = json_parse(res->json, jlen, err, sizeof(err));
	if (!res->root)
		fail_msg("bad JSON: %s", err);
	res->time_base = json_get_str(json_get(res->root, "otherData"), "time_base");
	evs = json_get(res->root, "traceEvents");
	assert_non_null(evs);
	for (size_t i = 0; i < evs->len; i++) {
		const struct jval *e = &evs->items[i];
		const char *ph = json_get_str(e, "ph"), *name = json_get_str(e, "name");
		const struct jval *ts = json_get(e, "ts");

		if (name && !strncmp(name, "PT lost", 7))
			res->lost_instants++;
		if (!ph || (ph[0] != 'B' && ph[0] != 'E'))
			continue;
		assert_true(res->n < 64);
		res->ev[res->n].ph = ph[0];
		res->ev[res->n].ts = ts ? ts->num : -1;
		snprintf(res->ev[res->n].name, sizeof(res->ev[0].name), "%s",
			 name ? name : "");
		res->n++;
	}
}

static void result_free(struct result *res)
{
	json_free(res->root);
	free(res->json);
	tvh_stats_free(&res->cs.walk);
}

static void test_calls_timed_by_tsc(void **state)
{
	struct result res;
	double last = -1;

	(void)state;
	run(&res, 1, true);
	assert_true(res.cs.pt_decoded);
	assert_int_equal(res.cs.pt.cpus, 1);
	assert_int_equal(res.cs.pt.errors, 0);
	assert_int_equal(res.cs.pt.branches, fx.ntaken);
	assert_int_equal(res.cs.pt_slices, 3);
	assert_int_equal(res.cs.slices, 3);
	assert_int_equal(res.cs.unmatched_returns, 0);
	assert_int_equal(res.cs.closed_at_end, 0);
	assert_string_equal(res.time_base, "tsc");
	/* call func, ret; three times: B E B E B E, named after the target. */
	assert_int_equal(res.n, 6);
	for (unsigned i = 0; i < res.n; i++) {
		assert_int_equal(res.ev[i].ph, i % 2 ? 'E' : 'B');
		/* func and its first instruction's label i_add share an address. */
		if (res.ev[i].ph == 'B' && strcmp(res.ev[i].name, "func") &&
		    strcmp(res.ev[i].name, "i_add"))
			fail_msg("slice named '%s', not func", res.ev[i].name);
		/* Time from the TSC packets: 0..7 us, never backwards. */
		assert_true(res.ev[i].ts >= last);
		assert_true(res.ev[i].ts >= 0 && res.ev[i].ts <= 7.0);
		last = res.ev[i].ts;
	}
	/* One TSC packet before each TNT bit: the calls are 2 us apart. */
	assert_true(res.ev[2].ts > res.ev[0].ts);
	assert_true(res.ev[4].ts > res.ev[2].ts);
	assert_true(res.ev[5].ts > res.ev[4].ts);
	result_free(&res);
}

static void test_loss_between_runs(void **state)
{
	struct result res;

	(void)state;
	run(&res, 2, true);
	assert_int_equal(res.cs.pt.branches, 2 * fx.ntaken);
	assert_int_equal(res.cs.pt.gap_bytes, 100);
	assert_int_equal(res.cs.pt_slices, 6);
	assert_int_equal(res.cs.pt_losses, 1);
	assert_int_equal(res.lost_instants, 1);
	assert_int_equal(res.n, 12);
	/* The second run's TSC is 100 us later. */
	assert_true(res.ev[6].ts >= 100.0 && res.ev[6].ts <= 107.0);
	result_free(&res);
}

static void test_without_image(void **state)
{
	struct result res;

	(void)state;
	run(&res, 1, false);
	assert_false(res.cs.pt_decoded);
	assert_int_equal(res.cs.slices, 0);
	assert_int_equal(res.n, 0);
	assert_int_equal(res.cs.walk.cpus[0].pt_bytes > 0, 1);
	result_free(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calls_timed_by_tsc),
		cmocka_unit_test(test_loss_between_runs),
		cmocka_unit_test(test_without_image),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
