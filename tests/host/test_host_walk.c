/* SPDX-License-Identifier: MIT */
/*
 * test_host_walk.c - one pass over a .tvt (host-tools/lib/walk.c): per-CPU
 * sequence tracking, every kind of loss, damage, PT runs, CPU filter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/walk.h"
#include "tests/host/helpers.h"

/* Every event, flattened for checking. */
struct seen {
	unsigned n;
	struct {
		enum tvh_event_kind kind;
		uint32_t cpu;
		uint64_t seq;        /* record seq or gap start */
		uint64_t count;
		uint8_t type;
		int err;
		uint64_t from;
		uint64_t pt_offset;
		uint64_t len;
		enum tvh_gap_kind gap;
	} ev[256];
};

static int record_fn(void *ctx, const struct tvh_event *ev)
{
	struct seen *s = ctx;

	assert_true(s->n < 256);
	s->ev[s->n].kind = ev->kind;
	s->ev[s->n].cpu = ev->cpu;
	s->ev[s->n].err = ev->err;
	s->ev[s->n].gap = ev->gap;
	if (ev->rec) {
		s->ev[s->n].seq = ev->rec->seq;
		s->ev[s->n].type = ev->rec->type;
		s->ev[s->n].from = ev->rec->u.branch.from;
	} else {
		s->ev[s->n].seq = ev->seq;
	}
	s->ev[s->n].count = ev->count;
	s->ev[s->n].pt_offset = ev->pt_offset;
	s->ev[s->n].len = ev->len;
	s->n++;
	return 0;
}

static void walk_mem(const struct th_tvt *t, const struct tvh_walk_opts *o,
		     struct seen *s, struct tvh_stats *st)
{
	struct tvt_reader r;

	memset(s, 0, sizeof(*s));
	assert_int_equal(tvt_reader_open_mem(&r, t->buf, t->len), 0);
	assert_int_equal(tvh_walk(&r, o, record_fn, s, st), 0);
	tvt_reader_close(&r);
}

static void test_two_cpus_and_gaps(void **state)
{
	struct recbuf a0 = { 0 }, a1 = { 0 }, b0 = { 0 }, c0 = { 0 };
	struct th_tvt t;
	struct seen s;
	struct tvh_stats st;
	const struct tvh_cpu_stats *c;

	(void)state;
	rb_startstop(&a0, TV_REC_START, TV_TRIG_BOOT, 10, 0);
	rb_branch(&a0, TV_BR_CALL, 0x100, 0x200);          /* seq 0, 1 */
	rb_branch(&a1, TV_BR_JMP, 0x300, 0x400);           /* cpu 1: seq 5 (head gap 5) */
	rb_compact(&b0, TV_BR_RET, 0x10, 0x105);           /* seq 2: contiguous */
	rb_lost(&b0, 20, 7);                               /* seq 3 */
	rb_branch(&c0, TV_BR_JMP, 0x500, 0x600);           /* seq 10: gap 4..9 */
	rb_compact(&c0, TV_BR_JMP, 4, 0x700);              /* seq 11: from 0x604 */
	th_tvt_begin(&t, "m", 1);
	th_tvt_records(&t, 0, 0, &a0);
	th_tvt_records(&t, 1, 5, &a1);
	th_tvt_records(&t, 0, 2, &b0);
	th_tvt_records(&t, 0, 10, &c0);
	th_tvt_end(&t);
	walk_mem(&t, NULL, &s, &st);

	assert_int_equal(s.n, 9);
	assert_int_equal(s.ev[0].kind, TVH_EV_RECORD);
	assert_int_equal(s.ev[0].type, TV_REC_START);
	assert_int_equal(s.ev[1].seq, 1);
	assert_int_equal(s.ev[2].kind, TVH_EV_GAP);
	assert_int_equal(s.ev[2].gap, TVH_GAP_HEAD);
	assert_int_equal(s.ev[2].cpu, 1);
	assert_int_equal(s.ev[2].seq, 0);
	assert_int_equal(s.ev[2].count, 5);
	assert_int_equal(s.ev[3].cpu, 1);
	assert_int_equal(s.ev[3].seq, 5);
	assert_int_equal(s.ev[4].type, TV_REC_BRANCH_COMPACT);
	assert_int_equal(s.ev[4].from, 0x210);     /* expanded across chunks */
	assert_int_equal(s.ev[5].type, TV_REC_LOST);
	assert_int_equal(s.ev[6].kind, TVH_EV_GAP);
	assert_int_equal(s.ev[6].gap, TVH_GAP_SEQ);
	assert_int_equal(s.ev[6].seq, 4);
	assert_int_equal(s.ev[6].count, 6);
	assert_int_equal(s.ev[7].seq, 10);
	assert_int_equal(s.ev[8].from, 0x604);

	assert_int_equal(st.chunks, 4);
	assert_int_equal(st.chunks_by_kind[TVT_KIND_RECORDS], 4);
	assert_int_equal(st.records, 7);
	assert_int_equal(st.by_type[TV_REC_BRANCH], 3);
	assert_int_equal(st.by_type[TV_REC_BRANCH_COMPACT], 2);
	assert_int_equal(st.ncpus, 2);
	assert_int_equal(st.cpus[0].cpu, 0);
	c = tvh_stats_cpu(&st, 0);
	assert_non_null(c);
	assert_int_equal(c->records, 6);
	assert_int_equal(c->lost_gap, 6);
	assert_int_equal(c->lost_rec, 7);
	assert_int_equal(c->lost_head, 0);
	assert_int_equal(c->first_seq, 0);
	assert_int_equal(c->next_seq, 12);
	c = tvh_stats_cpu(&st, 1);
	assert_int_equal(c->lost_head, 5);
	assert_null(tvh_stats_cpu(&st, 2));
	assert_int_equal(tvh_stats_lost(&st), 6 + 7 + 5);
	assert_false(tvh_stats_damaged(&st));
	tvh_stats_free(&st);

	/* The CPU filter hides events, not statistics. */
	{
		struct tvh_walk_opts o = { .cpu = 1 };

		walk_mem(&t, &o, &s, &st);
		assert_int_equal(s.n, 2);
		assert_int_equal(s.ev[0].kind, TVH_EV_GAP);
		assert_int_equal(s.ev[1].cpu, 1);
		assert_int_equal(st.records, 7);
		tvh_stats_free(&st);
	}
	th_tvt_free(&t);
	rb_free(&a0);
	rb_free(&a1);
	rb_free(&b0);
	rb_free(&c0);
}

static void test_stream_start_and_duplicates(void **state)
{
	struct recbuf a = { 0 };
	struct th_tvt t;
	struct seen s;
	struct tvh_stats st;

	(void)state;
	rb_branch(&a, TV_BR_JMP, 1, 2);
	rb_branch(&a, TV_BR_JMP, 3, 4);
	rb_branch(&a, TV_BR_JMP, 5, 6);
	th_tvt_begin(&t, "m", 1);
	/* A stream that starts at 100 by the producer's word: no head loss. */
	th_tvt_chunk(&t, 0, TVT_KIND_RECORDS, TVT_CHUNK_F_STREAM_START, 100, a.p, a.len);
	/* The same records again, then one more (overlap by 2). */
	th_tvt_records(&t, 0, 101, &a);
	th_tvt_end(&t);
	walk_mem(&t, NULL, &s, &st);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.ev[0].seq, 100);
	assert_int_equal(s.ev[3].seq, 103);
	assert_int_equal(st.cpus[0].dup, 2);
	assert_int_equal(st.cpus[0].lost_head, 0);
	assert_int_equal(tvh_stats_lost(&st), 0);
	tvh_stats_free(&st);
	th_tvt_free(&t);
	rb_free(&a);
}

static void test_malformed_records(void **state)
{
	struct recbuf a = { 0 }, b = { 0 };
	struct th_tvt t;
	struct seen s;
	struct tvh_stats st;
	uint8_t bad[8] = { TV_REC_PAD, 0, 4, 0 };  /* size 4: fatal */

	(void)state;
	rb_compact(&a, TV_BR_JMP, 1, 2);            /* orphan (seq 0) */
	rb_rec(&a, 77, 0, 0, NULL, 0, NULL, 0);     /* unknown type (seq 1) */
	rb_branch(&a, TV_BR_JMP, 3, 4);             /* seq 2 */
	rb_raw(&a, bad, 8);                         /* fatal at seq 3 */
	rb_branch(&a, TV_BR_JMP, 5, 6);             /* not parsed */
	rb_compact(&b, TV_BR_JMP, 8, 0x10);         /* seq 5: after desync, orphan */
	th_tvt_begin(&t, "m", 1);
	th_tvt_records(&t, 2, 0, &a);
	th_tvt_records(&t, 2, 5, &b);
	th_tvt_end(&t);
	walk_mem(&t, NULL, &s, &st);
	assert_int_equal(s.n, 6);
	assert_int_equal(s.ev[0].kind, TVH_EV_MALFORMED);
	assert_int_equal(s.ev[0].err, -TVH_ERR_REC_NO_PREV);
	assert_int_equal(s.ev[1].kind, TVH_EV_MALFORMED);
	assert_int_equal(s.ev[1].err, -TVH_ERR_REC_TYPE);
	assert_int_equal(s.ev[2].kind, TVH_EV_RECORD);
	assert_int_equal(s.ev[3].kind, TVH_EV_MALFORMED);
	assert_int_equal(s.ev[3].err, -TVH_ERR_REC_SIZE);
	assert_int_equal(s.ev[3].seq, 3);
	assert_int_equal(s.ev[4].kind, TVH_EV_GAP);
	assert_int_equal(s.ev[4].seq, 3);
	assert_int_equal(s.ev[4].count, 2);
	assert_int_equal(s.ev[5].err, -TVH_ERR_REC_NO_PREV);
	assert_int_equal(st.malformed, 4);
	assert_int_equal(st.cpus[0].orphan_compact, 2);
	assert_int_equal(st.cpus[0].unparsed_chunks, 1);
	assert_int_equal(st.records, 1);
	assert_true(tvh_stats_damaged(&st));
	tvh_stats_free(&st);
	th_tvt_free(&t);
	rb_free(&a);
	rb_free(&b);
}

static void test_ring_time_and_pt(void **state)
{
	struct recbuf a = { 0 };
	struct th_tvt t;
	struct seen s;
	struct tvh_stats st;
	uint8_t ring[128], pt[32];
	struct tvh_walk_opts o = { .cpu = -1, .want_pt = true };
	const struct tvh_cpu_stats *c;

	(void)state;
	memset(pt, 0x11, sizeof(pt));
	rb_time(&a, 5, 3000000000ull, 0);
	rb_pt_sync(&a, 6, 16, 4);
	th_ring(ring, 0, TV_SOURCE_PT, TV_OVERFLOW_STOP, 2, 9, 2000000000ull);
	th_tvt_begin(&t, "m", 1);
	th_tvt_chunk(&t, 0, TVT_KIND_PT, 0, 8, pt, 16);        /* head gap 8 */
	th_tvt_chunk(&t, 0, TVT_KIND_PT, 0, 24, pt, 16);       /* contiguous */
	th_tvt_chunk(&t, 0, TVT_KIND_PT, 0, 36, pt, 8);        /* overlap 4 */
	th_tvt_chunk(&t, 0, TVT_KIND_PT, 0, 50, pt, 4);        /* gap 6 */
	th_tvt_records(&t, 0, 0, &a);
	th_tvt_chunk(&t, 0, TVT_KIND_RING, 0, 0, ring, sizeof(ring));
	th_ring(ring, 1, TV_SOURCE_PT, 0, 0, 0, 0);          /* says cpu 1 in a cpu 0 chunk */
	th_tvt_chunk(&t, 0, TVT_KIND_RING, 0, 0, ring, sizeof(ring));
	th_ring(ring, 0, 0, 0, 0, 0, 0);
	ring[0] ^= 1;                                         /* bad magic */
	th_tvt_chunk(&t, 0, TVT_KIND_RING, 0, 0, ring, sizeof(ring));
	th_tvt_end(&t);
	walk_mem(&t, &o, &s, &st);
	assert_int_equal(s.ev[0].kind, TVH_EV_PT_GAP);
	assert_int_equal(s.ev[0].gap, TVH_GAP_HEAD);
	assert_int_equal(s.ev[0].count, 8);
	assert_int_equal(s.ev[1].kind, TVH_EV_PT);
	assert_int_equal(s.ev[1].pt_offset, 8);
	assert_int_equal(s.ev[2].pt_offset, 24);
	assert_int_equal(s.ev[3].pt_offset, 40);   /* the overlap is cut */
	assert_int_equal(s.ev[3].len, 4);
	assert_int_equal(s.ev[4].kind, TVH_EV_PT_GAP);
	assert_int_equal(s.ev[4].pt_offset, 44);
	assert_int_equal(s.ev[4].count, 6);
	assert_int_equal(s.ev[5].pt_offset, 50);
	assert_int_equal(s.ev[8].kind, TVH_EV_RING);
	assert_int_equal(s.ev[9].kind, TVH_EV_CHUNK_ERROR);
	assert_int_equal(s.ev[9].err, -TVH_ERR_HEADER);
	assert_int_equal(s.ev[10].kind, TVH_EV_CHUNK_ERROR);
	assert_int_equal(s.ev[10].err, -TVH_ERR_MAGIC);
	c = tvh_stats_cpu(&st, 0);
	assert_int_equal(c->pt_bytes, 16 + 16 + 4 + 4);
	assert_int_equal(c->pt_head, 8);
	assert_int_equal(c->pt_gap, 6);
	assert_int_equal(c->pt_dup, 4);
	assert_int_equal(c->pt_lost, 4);
	assert_int_equal(c->tsc_hz, 3000000000ull);
	assert_true(c->have_ring);
	assert_int_equal(c->ring.lost_records, 9);
	assert_int_equal(c->ring.tsc_hz, 2000000000ull);
	assert_int_equal(tvh_stats_ring_lost(&st), 9);
	assert_int_equal(st.bad_chunks, 2);
	assert_int_equal(st.chunks_by_kind[TVT_KIND_PT], 4);
	assert_int_equal(st.chunks_by_kind[TVT_KIND_RING], 3);
	tvh_stats_free(&st);

	/* Without want_pt the bytes are counted but not delivered. */
	o.want_pt = false;
	walk_mem(&t, &o, &s, &st);
	for (unsigned i = 0; i < s.n; i++)
		assert_int_not_equal(s.ev[i].kind, TVH_EV_PT);
	assert_int_equal(tvh_stats_cpu(&st, 0)->pt_bytes, 40);
	tvh_stats_free(&st);
	th_tvt_free(&t);
	rb_free(&a);
}

static void test_damaged_chunks(void **state)
{
	struct recbuf a = { 0 }, b = { 0 };
	struct th_tvt t;
	struct seen s;
	struct tvh_stats st;
	size_t cut;

	(void)state;
	rb_branch(&a, TV_BR_JMP, 1, 2);
	rb_branch(&a, TV_BR_JMP, 3, 4);
	rb_branch(&b, TV_BR_JMP, 5, 6);
	rb_branch(&b, TV_BR_JMP, 7, 8);
	th_tvt_begin(&t, "m", 1);
	th_tvt_records(&t, 0, 0, &a);
	th_tvt_records(&t, 0, 2, &b);
	th_tvt_records(&t, 0, 4, &a);
	th_tvt_end(&t);
	/* Corrupt chunk 2's payload: CRC error, its two records become a gap. */
	t.buf[64 + 8 + 40 + a.len + 40 + 9] ^= 1;
	walk_mem(&t, NULL, &s, &st);
	assert_int_equal(s.ev[2].kind, TVH_EV_CHUNK_ERROR);
	assert_int_equal(s.ev[2].err, -TVH_ERR_CRC);
	assert_int_equal(s.ev[2].cpu, UINT32_MAX);    /* the header is not trusted */
	assert_int_equal(s.ev[3].kind, TVH_EV_GAP);
	assert_int_equal(s.ev[3].count, 2);
	assert_int_equal(st.bad_chunks, 1);
	assert_true(tvh_stats_damaged(&st));
	tvh_stats_free(&st);

	/* Undo that; truncate in the last chunk: its first record is salvaged. */
	t.buf[64 + 8 + 40 + a.len + 40 + 9] ^= 1;
	cut = t.len - 10;
	{
		struct th_tvt tt = t;

		tt.len = cut;
		walk_mem(&tt, NULL, &s, &st);
	}
	assert_int_equal(st.truncated_chunks, 1);
	assert_int_equal(s.ev[s.n - 2].kind, TVH_EV_RECORD);
	assert_int_equal(s.ev[s.n - 2].seq, 4);
	assert_int_equal(s.ev[s.n - 1].kind, TVH_EV_MALFORMED);
	assert_int_equal(s.ev[s.n - 1].err, -TVH_ERR_TRUNCATED);
	tvh_stats_free(&st);
	th_tvt_free(&t);
	rb_free(&a);
	rb_free(&b);
}

static int stop_at_two(void *ctx, const struct tvh_event *ev)
{
	int *n = ctx;

	(void)ev;
	return ++*n == 2 ? 42 : 0;
}

static void test_callback_stops_and_limits(void **state)
{
	struct recbuf a = { 0 };
	struct th_tvt t;
	struct tvt_reader r;
	struct tvh_stats st;
	int n = 0;

	(void)state;
	rb_branch(&a, TV_BR_JMP, 1, 2);
	rb_branch(&a, TV_BR_JMP, 1, 2);
	rb_branch(&a, TV_BR_JMP, 1, 2);
	th_tvt_begin(&t, "m", 1);
	th_tvt_records(&t, 0, 0, &a);
	th_tvt_records(&t, TVH_MAX_CPU + 1, 0, &a);
	th_tvt_end(&t);
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, t.len), 0);
	assert_int_equal(tvh_walk(&r, NULL, stop_at_two, &n, &st), 42);
	tvh_stats_free(&st);
	/* A CPU index past the limit is refused (a damaged header, most likely). */
	assert_int_equal(tvh_walk(&r, NULL, NULL, NULL, &st), -TVH_ERR_HEADER);
	assert_int_equal(st.records, 3);
	tvh_stats_free(&st);
	tvt_reader_close(&r);
	th_tvt_free(&t);
	rb_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_cpus_and_gaps),
		cmocka_unit_test(test_stream_start_and_duplicates),
		cmocka_unit_test(test_malformed_records),
		cmocka_unit_test(test_ring_time_and_pt),
		cmocka_unit_test(test_damaged_chunks),
		cmocka_unit_test(test_callback_stops_and_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
