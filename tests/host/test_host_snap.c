/* SPDX-License-Identifier: MIT */
/*
 * test_host_snap.c - the code snapshot store (host-tools/lib/snap.c) and
 * PT decoding from it (pt.c's read-memory callback, the CLI without
 * --image).
 *
 * Captures are built by hand: TV_REC_CODE / TV_REC_CODE_DATA records as
 * the hypervisor writes them (vmm/trace/format.h), in .tvt chunks of one
 * or several CPUs.  The end-to-end cases take the code pages of
 * pt_fixture.c's program from its ELF file, so decoding from snapshots
 * can be compared with decoding over the file itself.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <intel-pt.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "host-tools/lib/dump.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/info.h"
#include "host-tools/lib/pt.h"
#include "host-tools/lib/ptfast.h"
#include "host-tools/lib/snap.h"
#include "host-tools/lib/stream.h"
#include "host-tools/lib/sym.h"
#include "tests/host/helpers.h"
#include "tests/host/pt_fixture.h"

#define PG TV_CODE_PAGE

/*
 * Every test runs twice (main): contents in memory (the default bound),
 * then with TVH_SNAP_SPILL_BYTES=0, every content in the spill file, the
 * CLI's included; the answers must be the same.
 */
static bool spill_mode;

/* ---- building records -------------------------------------------------------- */

static void fill(uint8_t *page, uint8_t seed)
{
	for (unsigned i = 0; i < PG; i++)
		page[i] = (uint8_t)(seed + i * 7);
}

/* The store of a capture made of per-CPU record buffers, in that order. */
static struct tvh_snap *load(struct th_tvt *t, const struct recbuf *const *bufs,
			     const uint32_t *cpus, unsigned n)
{
	struct tvt_reader r;
	struct tvh_snap *s = NULL;

	th_tvt_begin(t, "m", 1);
	for (unsigned i = 0; i < n; i++)
		th_tvt_records(t, cpus[i], 0, bufs[i]);
	th_tvt_end(t);
	assert_int_equal(tvt_reader_open_mem(&r, t->buf, t->len), 0);
	assert_int_equal(tvh_snap_load(&r, NULL, &s), 0);
	assert_non_null(s);
	tvt_reader_close(&r);
	{
		struct tvh_snap_stats st;

		/* The mode is the one asked for: all in memory, or all in the file. */
		tvh_snap_get_stats(s, &st);
		assert_int_equal(st.mem_bytes, spill_mode ? 0 : st.bytes);
		assert_int_equal(st.spilled_bytes, spill_mode ? st.bytes : 0);
	}
	return s;
}

static const uint8_t *page_at(const struct tvh_snap *s, uint64_t cr3, uint64_t ip,
			      uint64_t tsc)
{
	struct tvh_snap_hit hit;

	if (tvh_snap_lookup(s, cr3, ip, tsc, &hit))
		return NULL;
	return hit.page;
}

/* ---- the store ---------------------------------------------------------------- */

/* One content named by two snapshots: stored once, found from both. */
static void test_dedup_by_hash(void **state)
{
	static uint8_t p[PG];
	struct recbuf b = { 0 };
	const struct recbuf *bufs[] = { &b };
	const uint32_t cpus[] = { 0 };
	struct tvh_snap_stats st;
	struct th_tvt t;
	struct tvh_snap *s;

	(void)state;
	fill(p, 1);
	rb_snap(&b, TV_CODEF_NEW, 100, 0x10000, 0xffffffff81000000ull, 0x1000, p);
	rb_snap(&b, 0, 200, 0x20000, 0xffffffff81001000ull, 0x1000, p);
	s = load(&t, bufs, cpus, 1);
	tvh_snap_get_stats(s, &st);
	assert_int_equal(st.records, 2);
	assert_int_equal(st.new_records, 1);
	assert_int_equal(st.data_records, TV_CODE_CHUNKS);
	assert_int_equal(st.pages, 2);
	assert_int_equal(st.contents, 1);
	assert_int_equal(st.bytes, PG);
	assert_int_equal(st.bad_hash, 0);
	assert_int_equal(st.missing_data, 0);
	assert_false(tvh_snap_empty(s));
	assert_non_null(page_at(s, 0x1000, 0xffffffff81000010ull, 150));
	assert_ptr_equal(page_at(s, 0x1000, 0xffffffff81000010ull, 150),
			 page_at(s, 0x1000, 0xffffffff81001ff0ull, 250));
	assert_memory_equal(page_at(s, 0x1000, 0xffffffff81001000ull, 250), p, PG);
	assert_null(page_at(s, 0x1000, 0xffffffff81002000ull, 250));
	tvh_snap_free(s);
	th_tvt_free(&t);
	rb_free(&b);
}

/*
 * The content came on CPU 0's stream, split over two .tvt chunks; CPU 1
 * only names it, and its chunk comes first in the file.
 */
static void test_content_split_across_cpus(void **state)
{
	static uint8_t p[PG];
	struct recbuf a = { 0 }, a2 = { 0 }, c1 = { 0 };
	struct tvh_snap_stats st;
	struct th_tvt t;
	struct tvt_reader r;
	struct tvh_snap *s;
	uint64_t h;
	uint8_t buf[32];

	(void)state;
	fill(p, 9);
	h = tv_code_hash(p);
	rb_code(&c1, TV_CODEF_LINEAR | TV_CODEF_USER, 300, 0x7000, 0x400000, 0x5000, h);
	rb_code(&a, TV_CODEF_NEW | TV_CODEF_LINEAR | TV_CODEF_USER, 200, 0x7000, 0x400000,
		0x4000, h);
	for (unsigned k = 0; k < 3; k++)
		rb_chunk(&a, h, k, p);
	for (unsigned k = 3; k < TV_CODE_CHUNKS; k++)
		rb_chunk(&a2, h, k, p);
	th_tvt_begin(&t, "m", 1);
	th_tvt_records(&t, 1, 0, &c1);
	th_tvt_records(&t, 0, 0, &a);
	th_tvt_records(&t, 0, a.count, &a2);
	th_tvt_end(&t);
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, t.len), 0);
	assert_int_equal(tvh_snap_load(&r, NULL, &s), 0);
	tvt_reader_close(&r);
	tvh_snap_get_stats(s, &st);
	assert_int_equal(st.records, 2);
	assert_int_equal(st.contents, 1);
	assert_int_equal(st.pages, 1);
	assert_int_equal(st.missing_data, 0);
	assert_int_equal(st.missing_chunks, 0);
	assert_int_equal(st.user, 2);
	/* CPU 1's snapshot, in its own address space, has the bytes. */
	assert_int_equal(tvh_snap_read(s, 0x5000, 0x400ff0, 400, buf, 16), 16);
	assert_memory_equal(buf, p + 0xff0, 16);
	tvh_snap_free(s);
	th_tvt_free(&t);
	rb_free(&a);
	rb_free(&a2);
	rb_free(&c1);
}

/* A content whose bytes do not match its hash is dropped and counted. */
static void test_bad_hash_rejected(void **state)
{
	static uint8_t p[PG];
	struct recbuf b = { 0 };
	const struct recbuf *bufs[] = { &b };
	const uint32_t cpus[] = { 0 };
	struct tvh_snap_stats st;
	struct th_tvt t;
	struct tvh_snap *s;
	uint64_t h;

	(void)state;
	fill(p, 3);
	h = tv_code_hash(p);
	rb_code(&b, TV_CODEF_NEW | TV_CODEF_LINEAR, 10, 0x1000, 0x1000, 0, h);
	p[700] ^= 0x40;                  /* damaged in chunk 1 */
	for (unsigned k = 0; k < TV_CODE_CHUNKS; k++)
		rb_chunk(&b, h, k, p);
	s = load(&t, bufs, cpus, 1);
	tvh_snap_get_stats(s, &st);
	assert_int_equal(st.bad_hash, 1);
	assert_int_equal(st.contents, 0);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(st.missing_data, 1);
	assert_true(tvh_snap_empty(s));
	assert_null(page_at(s, 0, 0x1000, 10));
	tvh_snap_free(s);
	th_tvt_free(&t);
	rb_free(&b);
}

/* A chunk lost on the way: the content is missing, never guessed. */
static void test_missing_chunk_counted(void **state)
{
	static uint8_t p[PG];
	struct recbuf b = { 0 };
	const struct recbuf *bufs[] = { &b };
	const uint32_t cpus[] = { 0 };
	struct tvh_snap_stats st;
	struct th_tvt t;
	struct tvh_snap *s;
	uint64_t h;
	uint8_t buf[8];

	(void)state;
	fill(p, 5);
	h = tv_code_hash(p);
	rb_code(&b, TV_CODEF_NEW | TV_CODEF_LINEAR, 10, 0x3000, 0x3000, 0, h);
	for (unsigned k = 0; k < TV_CODE_CHUNKS; k++)
		if (k != 6)
			rb_chunk(&b, h, k, p);
	/* And a snapshot whose content never came at all. */
	rb_code(&b, TV_CODEF_LINEAR, 20, 0x4000, 0x4000, 0, 0x1234);
	s = load(&t, bufs, cpus, 1);
	tvh_snap_get_stats(s, &st);
	assert_int_equal(st.missing_chunks, 1);
	assert_int_equal(st.missing_data, 2);
	assert_int_equal(st.contents, 0);
	assert_int_equal(st.bad_hash, 0);
	assert_int_equal(tvh_snap_read(s, 0, 0x3000, 10, buf, sizeof(buf)), 0);
	tvh_snap_free(s);
	th_tvt_free(&t);
	rb_free(&b);
}

/*
 * A patched kernel page: snapshot at 100, written (re-armed) and
 * snapshotted again at 500.  The older content before 500, the newer
 * from it; tsc 0 (unknown) is the earliest; just before the first
 * snapshot (a decoder's time lags the first execution) the first.
 */
static void test_resnapshot_by_time(void **state)
{
	static uint8_t p1[PG], p2[PG];
	struct recbuf b0 = { 0 }, b1 = { 0 };
	const struct recbuf *bufs[] = { &b0, &b1 };
	const uint32_t cpus[] = { 0, 1 };
	struct tvh_snap_stats st;
	struct tvh_snap_hit hit;
	struct th_tvt t;
	struct tvh_snap *s;
	const uint64_t lin = 0xffffffff81234000ull;

	(void)state;
	fill(p1, 11);
	memcpy(p2, p1, PG);
	memset(p2 + 0x100, 0x90, 5);     /* a call turned into a 5-byte nop */
	rb_snap(&b0, TV_CODEF_NEW, 100, 0x1234000, lin, 0x1000, p1);
	/* The re-snapshot happens on the other CPU, under another CR3. */
	rb_snap(&b1, TV_CODEF_NEW | TV_CODEF_REARM, 500, 0x1234000, lin, 0x2000, p2);
	s = load(&t, bufs, cpus, 2);
	tvh_snap_get_stats(s, &st);
	assert_int_equal(st.pages, 1);
	assert_int_equal(st.contents, 2);
	assert_int_equal(st.rearms, 1);
	assert_memory_equal(page_at(s, 0x1000, lin + 0x100, 300), p1, PG);
	assert_memory_equal(page_at(s, 0x2000, lin + 0x100, 499), p1, PG);
	assert_memory_equal(page_at(s, 0x1000, lin + 0x100, 500), p2, PG);
	assert_memory_equal(page_at(s, 0x3000, lin + 0x100, 9999), p2, PG);
	assert_memory_equal(page_at(s, 0, lin, 0), p1, PG);
	assert_memory_equal(page_at(s, 0x1000, lin, 90), p1, PG);
	assert_int_equal(tvh_snap_lookup(s, 0x1000, lin + 5, 300, &hit), 0);
	assert_int_equal(hit.start, 100);
	assert_int_equal(hit.end, 500);
	assert_int_equal(hit.gpa, 0x1234000);
	assert_int_equal(hit.linear, lin);
	assert_int_equal(hit.cpu, 0);
	assert_int_equal(tvh_snap_lookup(s, 0x1000, lin + 5, 700, &hit), 0);
	assert_int_equal(hit.end, UINT64_MAX);
	assert_int_equal(hit.cpu, 1);
	assert_int_equal(hit.flags & TV_CODEF_REARM, TV_CODEF_REARM);
	tvh_snap_free(s);
	th_tvt_free(&t);
	rb_free(&b0);
	rb_free(&b1);
}

/*
 * User pages: a process's own snapshot first; a page of the same binary
 * that another process snapshotted (a shared page executes without a
 * new exit) when it has none; CR3's PCID bits do not matter.
 */
static void test_fallback_any_address_space(void **state)
{
	static uint8_t pa[PG], pb[PG], pk[PG];
	struct recbuf b = { 0 };
	const struct recbuf *bufs[] = { &b };
	const uint32_t cpus[] = { 0 };
	struct th_tvt t;
	struct tvh_snap *s;
	const uint8_t U = TV_CODEF_USER;

	(void)state;
	fill(pa, 21);
	fill(pb, 22);
	fill(pk, 23);
	rb_snap(&b, TV_CODEF_NEW | U, 100, 0xa000, 0x400000, 0xa000, pa);
	rb_snap(&b, TV_CODEF_NEW | U, 1000, 0xb000, 0x400000, 0xb000, pb);
	rb_snap(&b, TV_CODEF_NEW, 50, 0xc000, 0xffffffff81000000ull, 0xa000, pk);
	s = load(&t, bufs, cpus, 1);
	/* Own address space, valid: A's; B's from its snapshot on. */
	assert_memory_equal(page_at(s, 0xa000, 0x400010, 2000), pa, PG);
	assert_memory_equal(page_at(s, 0xb000, 0x400010, 2000), pb, PG);
	/* B just before its snapshot: its own upcoming one, not A's valid one. */
	assert_memory_equal(page_at(s, 0xb000, 0x400010, 900), pb, PG);
	/* Another process with no snapshot of the page: any address space. */
	assert_memory_equal(page_at(s, 0xd000, 0x400010, 500), pa, PG);
	assert_memory_equal(page_at(s, 0xd000, 0x400010, 5000), pb, PG);
	/* PCID bits (11:0) ignored. */
	assert_memory_equal(page_at(s, 0xb000 | 0x5, 0x400010, 2000), pb, PG);
	/* Kernel pages belong to every address space. */
	assert_memory_equal(page_at(s, 0xb000, 0xffffffff81000abcull, 2000), pk, PG);
	assert_memory_equal(page_at(s, 0, 0xffffffff81000abcull, 2000), pk, PG);
	tvh_snap_free(s);
	th_tvt_free(&t);
	rb_free(&b);
}

/* Reads across a page boundary; a page without a snapshot ends the read. */
static void test_read_across_pages(void **state)
{
	static uint8_t p1[PG], p2[PG];
	struct recbuf b = { 0 };
	const struct recbuf *bufs[] = { &b };
	const uint32_t cpus[] = { 0 };
	struct tvh_snap_cursor cur;
	struct th_tvt t;
	struct tvh_snap *s;
	uint8_t buf[32];

	(void)state;
	fill(p1, 31);
	fill(p2, 32);
	rb_snap(&b, TV_CODEF_NEW, 10, 0x50000, 0x7000, 0, p1);
	rb_snap(&b, TV_CODEF_NEW, 20, 0x90000, 0x8000, 0, p2);
	/* gpa only: counted, never looked up by address. */
	rb_code(&b, 0, 30, 0x60000, 0, 0, tv_code_hash(p1));
	s = load(&t, bufs, cpus, 1);
	assert_int_equal(tvh_snap_read(s, 0, 0x7ff8, 30, buf, 16), 16);
	assert_memory_equal(buf, p1 + PG - 8, 8);
	assert_memory_equal(buf + 8, p2, 8);
	assert_int_equal(tvh_snap_read(s, 0, 0x8ffa, 30, buf, 16), 6);
	assert_memory_equal(buf, p2 + PG - 6, 6);
	assert_int_equal(tvh_snap_read(s, 0, 0x9000, 30, buf, 16), 0);
	/* The cursor answers the same, from its cache the second time. */
	tvh_snap_cursor_init(&cur, s);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(tvh_snap_cursor_read(&cur, 0, 0x7ff8, 30, buf, 16), 16);
	assert_memory_equal(buf + 8, p2, 8);
	assert_int_equal(tvh_snap_cursor_read(&cur, 0, 0x7ff8, 30, buf, 16), 16);
	assert_memory_equal(buf, p1 + PG - 8, 8);
	assert_int_equal(cur.misses, 2);
	assert_int_equal(cur.hits, 2);
	assert_int_equal(tvh_snap_cursor_read(&cur, 0, 0x9000, 30, buf, 16), 0);
	{
		struct tvh_snap_stats st;

		tvh_snap_get_stats(s, &st);
		assert_int_equal(st.no_linear, 1);
		assert_int_equal(st.pages, 3);
	}
	tvh_snap_free(s);
	th_tvt_free(&t);
	rb_free(&b);
}

/* Records with bad fields are malformed for the reader: counted, not used. */
static void test_bad_records(void **state)
{
	static uint8_t p[PG];
	struct recbuf b = { 0 };
	const struct recbuf *bufs[] = { &b };
	const uint32_t cpus[] = { 0 };
	struct tvh_snap_stats st;
	struct th_tvt t;
	struct tvh_snap *s;
	uint64_t h;

	(void)state;
	fill(p, 41);
	h = tv_code_hash(p);
	rb_code(&b, TV_CODEF_NEW | TV_CODEF_LINEAR, 10, 0x1000, 0x1000, 0, h);
	for (unsigned k = 0; k < TV_CODE_CHUNKS; k++)
		rb_chunk(&b, h, k == 7 ? 9 : k, p);      /* chunk index 9 */
	s = load(&t, bufs, cpus, 1);
	tvh_snap_get_stats(s, &st);
	assert_int_equal(st.bad_records, 1);
	assert_int_equal(st.contents, 0);
	assert_int_equal(st.missing_chunks, 1);
	tvh_snap_free(s);
	th_tvt_free(&t);
	rb_free(&b);
	/* An empty store, and none at all. */
	s = tvh_snap_new();
	assert_non_null(s);
	assert_int_equal(tvh_snap_finish(s), 0);
	assert_true(tvh_snap_empty(s));
	assert_int_equal(tvh_snap_read(s, 0, 0, 0, (uint8_t *)&h, 8), 0);
	tvh_snap_free(s);
	assert_true(tvh_snap_empty(NULL));
	tvh_snap_get_stats(NULL, &st);
	assert_int_equal(st.records, 0);
}

/* ---- info and dump ---------------------------------------------------------------- */

static void log_line(struct recbuf *b, const char *text)
{
	rb_text(b, TV_REC_LOG, 2, 5000, text, strlen(text));
}

/* `info` counts the snapshots and sums the hypervisor's per-CPU counters. */
static void test_info_counts(void **state)
{
	static uint8_t p[PG];
	struct recbuf b0 = { 0 }, b1 = { 0 };
	struct th_tvt t;
	struct tvt_reader r;
	struct tvh_walk_opts wo = { .cpu = -1 };
	struct tvh_info in;
	struct tvh_stats st;
	char *text = NULL;
	size_t tlen;
	FILE *f;

	(void)state;
	fill(p, 51);
	rb_snap(&b0, TV_CODEF_NEW, 100, 0x10000, 0x401000, 0x1000, p);
	log_line(&b0, "snap: cpu 0: snapshots 1, new 1, rearms 0, fetch exits 2, write exits 0,"
		 " bytes 4096, untracked 0, lost 0");
	log_line(&b0, "snap: contents 1 of 4096 slots");          /* not a CPU line */
	rb_snap(&b1, TV_CODEF_REARM | TV_CODEF_USER, 200, 0x20000, 0x402000, 0x2000, p);
	log_line(&b1, "snap: cpu 1: snapshots 1, new 0, rearms 1, fetch exits 1, write exits 1,"
		 " bytes 0, untracked 0, lost 0");
	th_tvt_begin(&t, "m", 1);
	th_tvt_records(&t, 0, 0, &b0);
	th_tvt_records(&t, 1, 0, &b1);
	th_tvt_end(&t);
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, t.len), 0);
	tvh_info_init(&in);
	assert_int_equal(tvh_walk(&r, &wo, tvh_info_event, &in, &st), 0);
	f = open_memstream(&text, &tlen);
	assert_int_equal(tvh_info_write(&in, &r, &st, "x.tvt", f), 0);
	fclose(f);
	assert_true(th_contains(text, spill_mode ?
				"code snapshots: 2 (new 1, re-armed 1, user 1), 2 pages,"
				" 1 contents = 4 KiB (4 KiB in the spill file); bad hash 0,"
				" missing 0 (chunks 0), bad records 0\n" :
				"code snapshots: 2 (new 1, re-armed 1, user 1), 2 pages,"
				" 1 contents = 4 KiB; bad hash 0, missing 0 (chunks 0),"
				" bad records 0\n"));
	assert_true(th_contains(text, "  hypervisor: snapshots 2, new 1, rearms 1, fetch exits 3,"
				" write exits 1, bytes 4096, untracked 0, lost 0 (2 CPUs)\n"));
	free(text);
	tvh_info_free(&in);
	tvh_stats_free(&st);
	tvt_reader_close(&r);
	th_tvt_free(&t);
	rb_free(&b0);
	rb_free(&b1);
}

/* The LOG line parser on good and malformed lines. */
static void test_log_parse(void **state)
{
	static const struct { const char *text; bool ok; uint32_t cpu; unsigned n; } cases[] = {
		{ "snap: cpu 3: snapshots 7, fetch exits 9", true, 3, 2 },
		{ "snap: cpu 0: pages 5, junk, bytes x1, fetch exits 7", true, 0, 2 },
		{ "snap: cpu x: pages 5", false, 0, 0 },
		{ "snap: cpu 1 pages 5", false, 0, 0 },
		{ "snap: cpu 99999999999: pages 5", false, 0, 0 },
		{ "snap: contents 3 of 5", false, 0, 0 },
		{ "snap: cpu 2: ", false, 0, 0 },
		{ "snap: cpu 2: 5, 6", false, 0, 0 },
		{ "snap: cpu 2: big 99999999999999999999999", false, 0, 0 },
		{ "", false, 0, 0 },
	};
	struct tvh_snap_counter v[TVH_SNAP_COUNTERS];
	char longname[200];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t cpu = 77;
		unsigned n = 0;
		bool ok = tvh_snap_log_parse(cases[i].text, strlen(cases[i].text), &cpu, v, &n);

		if (ok != cases[i].ok || (ok && (cpu != cases[i].cpu || n != cases[i].n)))
			fail_msg("case %zu '%s': ok %d cpu %u n %u", i, cases[i].text, ok, cpu, n);
	}
	snprintf(longname, sizeof(longname), "snap: cpu 3: snapshots 7, fetch exits 9");
	assert_true(tvh_snap_log_parse(longname, strlen(longname), &(uint32_t){ 0 }, v,
				       &(unsigned){ 0 }));
	assert_string_equal(v[1].name, "fetch exits");
	assert_int_equal(v[1].value, 9);
	/* Names are cut to fit; a line with more items than slots keeps the first. */
	snprintf(longname, sizeof(longname), "snap: cpu 1: %s 5", "a-very-long-counter-name-indeed");
	assert_true(tvh_snap_log_parse(longname, strlen(longname), &(uint32_t){ 0 }, v,
				       &(unsigned){ 0 }));
	assert_int_equal(strlen(v[0].name), sizeof(v[0].name) - 1);
	assert_false(tvh_snap_log_parse(NULL, 0, &(uint32_t){ 0 }, v, &(unsigned){ 0 }));
}

/* `dump` prints both kinds readably. */
static void test_dump_fields(void **state)
{
	static uint8_t p[PG];
	struct recbuf b = { 0 };
	struct tvh_stream st;
	struct trace_event rec;
	char *text = NULL;
	size_t tlen;
	FILE *f;
	uint64_t h;

	(void)state;
	fill(p, 0);
	h = tv_code_hash(p);
	rb_snap(&b, TV_CODEF_NEW | TV_CODEF_USER, 100, 0x10000, 0x401000, 0x1000, p);
	rb_code(&b, 0, 7, 0x20000, 0, 0x1000, h);
	tvh_stream_init(&st);
	tvh_stream_feed(&st, b.p, b.len, 0, false);
	f = open_memstream(&text, &tlen);
	while (tvh_next_record(&st, &rec) > 0) {
		tvh_dump_fields(f, &rec, NULL);
		fputc('\n', f);
	}
	fclose(f);
	{
		char *want;

		assert_true(asprintf(&want, "gpa=0x10000 linear=0x401000 cr3=0x1000 hash=%016llx"
				     " new user tsc=100\n", (unsigned long long)h) > 0);
		assert_true(th_contains(text, want));
		free(want);
		assert_true(asprintf(&want, "hash=%016llx chunk=3 bytes=0x600..0x800: 00 07 0e 15",
				     (unsigned long long)h) > 0);
		assert_true(th_contains(text, want));
		free(want);
		assert_true(asprintf(&want, "gpa=0x20000 linear=? cr3=0x1000 hash=%016llx tsc=7\n",
				     (unsigned long long)h) > 0);
		assert_true(th_contains(text, want));
		free(want);
	}
	free(text);
	rb_free(&b);
}

/* ---- decoding from snapshots ---------------------------------------------------- */

static struct pt_fixture fx;
static struct tvh_symtab fst;       /* the fixture's ELF */
static struct pt_image *file_image;
static uint8_t code_page[PG];        /* the page holding the program */
static uint64_t code_lin;

static int setup(void **state)
{
	const struct tvh_module *m;
	uint8_t *file;
	size_t flen;

	(void)state;
	if (ptf_build(&fx))
		return -1;
	tvh_symtab_init(&fst);
	if (tvh_symtab_add(&fst, fx.elf) || tvh_pt_image(&fst, &file_image))
		return -1;
	/* The executable segment's bytes at their addresses: what a snapshot holds. */
	code_lin = ptf_sym(&fx, "_start") & ~(uint64_t)(PG - 1);
	if ((ptf_sym(&fx, "i_ret") & ~(uint64_t)(PG - 1)) != code_lin)
		return -1;                          /* one page, as the tests assume */
	file = th_read_file(fx.elf, &flen);
	m = &fst.mods[0];
	for (unsigned k = 0; k < m->nsegs; k++) {
		const struct tvh_segment *sg = &m->segs[k];

		if (!(sg->flags & PF_X))
			continue;
		for (uint64_t a = sg->vaddr; a < sg->vaddr + sg->filesz; a++)
			if (a >= code_lin && a < code_lin + PG &&
			    sg->offset + (a - sg->vaddr) < flen)
				code_page[a - code_lin] = file[sg->offset + (a - sg->vaddr)];
	}
	free(file);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pt_image_free(file_image);
	tvh_symtab_free(&fst);
	ptf_free(&fx);
	return 0;
}

struct flow {
	uint64_t ip[64];
	unsigned n, errors, syncs;
};

static int on_item(void *ctx, const struct tvh_pt_item *it)
{
	struct flow *f = ctx;

	if (it->kind == TVH_PT_INSN && f->n < 64)
		f->ip[f->n++] = it->insn->ip;
	if (it->kind == TVH_PT_ERROR)
		f->errors++;
	if (it->kind == TVH_PT_SYNC)
		f->syncs++;
	return 0;
}

static unsigned count_ip(const struct flow *f, uint64_t ip)
{
	unsigned n = 0;

	for (unsigned i = 0; i < f->n; i++)
		n += f->ip[i] == ip;
	return n;
}

/* The program's page with func's `add $1,%edx` turned into `ret`. */
static void patched_page(uint8_t *out)
{
	memcpy(out, code_page, PG);
	out[ptf_sym(&fx, "i_add") - code_lin] = 0xc3;
}

/*
 * A capture with the program's PT on CPU 0 and its page's snapshot (the
 * content on CPU 1's stream), decoded with no file: the same instructions
 * as over the ELF file, in pt_decode and through the PT_SYNC clock.
 */
static void test_decode_equals_file(void **state)
{
	uint8_t pt[512];
	size_t len = 0;
	struct recbuf r0 = { 0 }, r1 = { 0 };
	struct th_tvt t;
	struct tvt_reader r;
	struct tvh_snap *s;
	struct tvh_pt_stream ps;
	struct tvh_pt_opts o = { 0 };
	struct flow ff = { 0 }, fs = { 0 }, fn = { 0 };
	struct pt_image *empty;

	(void)state;
	ptf_encode(&fx, pt, sizeof(pt), &len, 1);
	rb_pt_sync(&r0, 1000, 0, 0);
	rb_code(&r0, TV_CODEF_LINEAR | TV_CODEF_USER, 1001, 0x77000, code_lin, 0x9000,
		tv_code_hash(code_page));
	rb_snap(&r1, TV_CODEF_NEW | TV_CODEF_USER, 900, 0x77000, code_lin, 0x8000, code_page);
	th_tvt_begin(&t, "m", 1);
	th_tvt_chunk(&t, 0, TVT_KIND_PT, TVT_CHUNK_F_STREAM_START, 0, pt, len);
	th_tvt_records(&t, 0, 0, &r0);
	th_tvt_records(&t, 1, 0, &r1);
	th_tvt_end(&t);
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, t.len), 0);
	assert_int_equal(tvh_snap_load(&r, NULL, &s), 0);
	assert_int_equal(tvh_pt_collect(&r, 0, &ps, NULL, NULL), 0);
	assert_int_equal(ps.nruns, 1);
	assert_int_equal(ps.ntimes, 1);
	assert_int_equal(ps.times[0].tsc, 1000);

	/* Over the file. */
	assert_int_equal(tvh_pt_decode(ps.runs[0].data, ps.runs[0].len, 0, file_image,
				       NULL, on_item, &ff, NULL), 0);
	assert_int_equal(ff.errors, 0);
	assert_int_equal(ff.n, fx.nflow);
	/* No image at all, only the snapshots. */
	o.snap = s;
	o.times = ps.times;
	o.ntimes = ps.ntimes;
	assert_int_equal(tvh_pt_decode(ps.runs[0].data, ps.runs[0].len, 0, NULL, &o,
				       on_item, &fs, NULL), 0);
	assert_int_equal(fs.errors, 0);
	assert_int_equal(fs.n, ff.n);
	assert_memory_equal(fs.ip, ff.ip, ff.n * sizeof(ff.ip[0]));
	/* An empty image of the tools (no modules) with the snapshots: the same. */
	{
		struct tvh_symtab none;

		tvh_symtab_init(&none);
		assert_int_equal(tvh_pt_image(&none, &empty), 0);
		tvh_symtab_free(&none);
	}
	assert_int_equal(tvh_pt_decode(ps.runs[0].data, ps.runs[0].len, 0, empty, &o,
				       on_item, &fn, NULL), 0);
	assert_int_equal(fn.n, ff.n);
	assert_memory_equal(fn.ip, ff.ip, ff.n * sizeof(ff.ip[0]));
	/* The callback is the decode's only: afterwards the image maps nothing. */
	memset(&fn, 0, sizeof(fn));
	assert_int_equal(tvh_pt_decode(ps.runs[0].data, ps.runs[0].len, 0, empty, NULL,
				       on_item, &fn, NULL), 0);
	assert_int_equal(fn.n, 0);
	assert_true(fn.errors >= 1);
	pt_image_free(empty);
	/* Parallel decoding: one image per thread, each with its own clock. */
	{
		struct pt_image *imgs[2] = { NULL, NULL };
		struct tvh_pt_stats st;

		assert_int_equal(tvh_pt_decode_parallel(ps.runs[0].data, ps.runs[0].len, 0,
							imgs, 2, &o, NULL, NULL, &st), 0);
		assert_int_equal(st.insns, fx.nflow);
		assert_int_equal(st.errors, 0);
	}
	tvh_pt_stream_free(&ps);
	tvh_snap_free(s);
	tvt_reader_close(&r);
	th_tvt_free(&t);
	rb_free(&r0);
	rb_free(&r1);
}

/* Decode one run with TSC packets over a store of two contents of the page. */
static void decode_two(uint64_t t_first, const uint8_t *first, uint64_t t_second,
		       const uint8_t *second, const struct tvh_pt_time *times,
		       size_t ntimes, bool tsc_packets, struct flow *f)
{
	uint8_t pt[512];
	size_t len = 0;
	struct tvh_snap *s = tvh_snap_new();
	struct tvh_pt_opts o = { 0 };
	struct recbuf b = { 0 };
	struct tvh_stream st;
	struct trace_event rec;
	struct tvh_event ev;

	assert_non_null(s);
	if (tsc_packets)
		ptf_encode_tsc(&fx, pt, sizeof(pt), &len, 1000, 10);
	else
		ptf_encode(&fx, pt, sizeof(pt), &len, 1);
	rb_snap(&b, TV_CODEF_NEW, t_first, 0x5000, code_lin, 0, first);
	rb_snap(&b, TV_CODEF_NEW | TV_CODEF_REARM, t_second, 0x5000, code_lin, 0, second);
	/* Built by hand from the records, as a walk would (tvh_snap_add). */
	tvh_stream_init(&st);
	tvh_stream_feed(&st, b.p, b.len, 0, false);
	memset(&ev, 0, sizeof(ev));
	ev.kind = TVH_EV_RECORD;
	ev.rec = &rec;
	while (tvh_next_record(&st, &rec) > 0)
		assert_int_equal(tvh_snap_add(s, &ev), 0);
	assert_int_equal(tvh_snap_finish(s), 0);
	o.snap = s;
	o.times = times;
	o.ntimes = ntimes;
	memset(f, 0, sizeof(*f));
	assert_int_equal(tvh_pt_decode(pt, len, 0, NULL, &o, on_item, f, NULL), 0);
	tvh_snap_free(s);
	rb_free(&b);
}

/*
 * A page patched during the trace: the decoder reads the content valid at
 * its time (TSC packets 1000..1070), the older one before the
 * re-snapshot, the newer after.
 */
static void test_decode_patched_page_by_time(void **state)
{
	static uint8_t bad[PG];
	const uint64_t add = ptf_sym(&fx, "i_add"), ret = ptf_sym(&fx, "i_ret");
	struct flow f;

	(void)state;
	patched_page(bad);
	/* The right content valid all along, the patch comes after the trace. */
	decode_two(1, code_page, 5000, bad, NULL, 0, true, &f);
	assert_int_equal(f.errors, 0);
	assert_int_equal(f.n, fx.nflow);
	for (unsigned i = 0; i < fx.nflow; i++)
		assert_int_equal(f.ip[i], fx.flow[i]);
	/* The patched content valid during the trace: func is a bare ret. */
	decode_two(1, bad, 5000, code_page, NULL, 0, true, &f);
	assert_int_equal(f.errors, 0);
	assert_int_equal(count_ip(&f, add), 3);
	assert_int_equal(count_ip(&f, ret), 0);
	assert_int_equal(f.n, fx.nflow - 3);
	/* Patched at 1015: the first call runs the old code, the last the new. */
	decode_two(1, code_page, 1015, bad, NULL, 0, true, &f);
	assert_int_equal(f.errors, 0);
	assert_true(count_ip(&f, ret) >= 1);
	assert_true(count_ip(&f, ret) <= 2);
	assert_int_equal(f.ip[2], add);
	assert_int_equal(f.ip[3], ret);
}

/* Branch records, libipt's (tvh_pt_decode branches mode) or ptfast's. */
struct brs {
	struct {
		uint64_t from, to, tsc;
		bool has_tsc;
	} v[64];
	unsigned n, errors;
};

static int on_libipt_branch(void *ctx, const struct tvh_pt_item *it)
{
	struct brs *b = ctx;

	if (it->kind == TVH_PT_BRANCH && b->n < 64) {
		b->v[b->n].from = it->from;
		b->v[b->n].to = it->to;
		b->v[b->n].has_tsc = it->has_tsc;
		b->v[b->n++].tsc = it->tsc;
	}
	b->errors += it->kind == TVH_PT_ERROR;
	return 0;
}

static int on_fast_branch(void *ctx, const struct tvh_ptf_item *it)
{
	struct brs *b = ctx;

	if (it->kind == TVH_PTF_BRANCH && b->n < 64) {
		b->v[b->n].from = it->from;
		b->v[b->n].to = it->to;
		b->v[b->n].has_tsc = it->has_tsc;
		b->v[b->n++].tsc = it->tsc;
	}
	b->errors += it->kind == TVH_PTF_ERROR;
	return 0;
}

static size_t fast_snap_read(const void *ctx, uint64_t cr3, uint64_t ip, uint64_t tsc,
			     uint8_t *buf, size_t len)
{
	return tvh_snap_read(ctx, cr3, ip, tsc, buf, len);
}

static void fast_snap_span(const void *ctx, uint64_t ip, uint64_t tsc, uint64_t *lo,
			   uint64_t *hi)
{
	tvh_snap_span(ctx, ip, tsc, lo, hi);
}

/*
 * The run with TSC packets (1000..1070) over a store of the page's
 * contents[k] from times[k] on, decoded by libipt and by ptfast (with
 * the span, as ptbranch.c sets it): the same branch records, times
 * included.  Returns ptfast's clock flushes.
 */
static uint64_t fast_equals_libipt(const uint64_t *times, const uint8_t *const *contents,
				   unsigned n)
{
	uint8_t pt[512];
	size_t len = 0;
	struct tvh_snap *s = tvh_snap_new();
	struct tvh_pt_opts o = { 0 };
	struct recbuf rb = { 0 };
	struct tvh_stream st;
	struct trace_event rec;
	struct tvh_event ev;
	struct tvh_ptf_decoder *d;
	struct tvh_ptf_stats pst;
	static struct brs lb, fb;

	assert_non_null(s);
	ptf_encode_tsc(&fx, pt, sizeof(pt), &len, 1000, 10);
	for (unsigned k = 0; k < n; k++)
		rb_snap(&rb, TV_CODEF_NEW | (k ? TV_CODEF_REARM : 0), times[k], 0x5000,
			code_lin, 0, contents[k]);
	tvh_stream_init(&st);
	tvh_stream_feed(&st, rb.p, rb.len, 0, false);
	memset(&ev, 0, sizeof(ev));
	ev.kind = TVH_EV_RECORD;
	ev.rec = &rec;
	while (tvh_next_record(&st, &rec) > 0)
		assert_int_equal(tvh_snap_add(s, &ev), 0);
	assert_int_equal(tvh_snap_finish(s), 0);

	memset(&lb, 0, sizeof(lb));
	memset(&fb, 0, sizeof(fb));
	o.snap = s;
	o.branches = true;
	assert_int_equal(tvh_pt_decode(pt, len, 0, NULL, &o, on_libipt_branch, &lb, NULL), 0);
	{
		struct tvh_ptf_opts fo = { .fallback = fast_snap_read, .fallback_ctx = s,
					   .fallback_span = fast_snap_span,
					   .libipt_branches = true };

		d = tvh_ptf_alloc(&fo);
		assert_non_null(d);
		assert_int_equal(tvh_ptf_decode(d, pt, len, 0, on_fast_branch, &fb, &pst), 0);
		tvh_ptf_free(d);
	}
	assert_true(lb.n > 0);
	assert_int_equal(fb.errors, lb.errors);
	assert_int_equal(fb.n, lb.n);
	for (unsigned i = 0; i < lb.n; i++) {
		assert_int_equal(fb.v[i].from, lb.v[i].from);
		assert_int_equal(fb.v[i].to, lb.v[i].to);
		assert_int_equal(fb.v[i].has_tsc, lb.v[i].has_tsc);
		assert_int_equal(fb.v[i].tsc, lb.v[i].tsc);
	}
	tvh_snap_free(s);
	rb_free(&rb);
	return pst.clock_flushes;
}

/*
 * The fast decoder over a page rewritten during the trace gives libipt's
 * records exactly: its block cache is flushed when its clock leaves the
 * times the code it read stays the same (patched at every time around
 * the run's TSC packets, either way round, and patched then put back).
 */
static void test_fast_decode_patched_page(void **state)
{
	static uint8_t bad[PG];
	uint64_t flushes = 0;

	(void)state;
	patched_page(bad);
	for (uint64_t t = 995; t <= 1080; t += 5) {
		const uint64_t times[] = { 1, t };
		const uint8_t *const good_bad[] = { code_page, bad };
		const uint8_t *const bad_good[] = { bad, code_page };

		flushes += fast_equals_libipt(times, good_bad, 2);
		flushes += fast_equals_libipt(times, bad_good, 2);
	}
	for (uint64_t t = 1000; t <= 1060; t += 10) {
		const uint64_t times[] = { 1, t, t + 10 };
		const uint8_t *const flip[] = { code_page, bad, code_page };
		const uint8_t *const flop[] = { bad, code_page, bad };

		flushes += fast_equals_libipt(times, flip, 3);
		flushes += fast_equals_libipt(times, flop, 3);
	}
	/* The cache was dropped where the content changed under the run. */
	assert_true(flushes > 0);
	/* A page that never changes: no flush. */
	{
		const uint64_t times[] = { 1 };
		const uint8_t *const one[] = { code_page };

		assert_int_equal(fast_equals_libipt(times, one, 1), 0);
	}
}

/* script's lines end in pt@0xOFF, the decoder's own offset: cut it. */
static void cut_offsets(char *s)
{
	for (char *p; (p = strstr(s, " pt@0x")) != NULL;) {
		char *e = p + 6;

		while (*e && *e != '\n')
			e++;
		memmove(p, e, strlen(e) + 1);
	}
}

/*
 * The tools over a capture whose page is rewritten in the middle of the
 * run (func becomes a bare ret at 1035, between TSC packets): script and
 * report print the same with --decoder libipt, fast (one and two
 * threads) and the default, which is the fast decoder.
 */
static void test_tools_rewritten_page(void **state)
{
	static uint8_t bad[PG];
	uint8_t pt[512];
	size_t len = 0;
	struct recbuf r0 = { 0 };
	struct th_tvt t;
	char *path, *ret_ip, *add_ip;
	static const char *const cmds[] = { "script --no-symbols", "report" };
	static const char *const dec[] = { "--decoder libipt", "--decoder fast",
					   "--decoder fast -j 2", "" };

	(void)state;
	patched_page(bad);
	ptf_encode_tsc(&fx, pt, sizeof(pt), &len, 1000, 10);
	rb_pt_sync(&r0, 990, 0, 0);
	rb_snap(&r0, TV_CODEF_NEW, 900, 0x77000, code_lin, 0x8000, code_page);
	rb_snap(&r0, TV_CODEF_NEW | TV_CODEF_REARM, 1035, 0x77000, code_lin, 0x8000, bad);
	th_tvt_begin(&t, "m", 1);
	th_tvt_chunk(&t, 0, TVT_KIND_PT, TVT_CHUNK_F_STREAM_START, 0, pt, len);
	th_tvt_records(&t, 0, 0, &r0);
	th_tvt_end(&t);
	path = th_tvt_save(&t, "snap-rewritten.tvt");
	th_tvt_free(&t);
	rb_free(&r0);
	assert_true(asprintf(&ret_ip, "0x%llx =>", (unsigned long long)ptf_sym(&fx, "i_ret")) > 0);
	assert_true(asprintf(&add_ip, "0x%llx =>", (unsigned long long)ptf_sym(&fx, "i_add")) > 0);

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char *ref = NULL;

		for (size_t k = 0; k < sizeof(dec) / sizeof(dec[0]); k++) {
			char *cmd, *out = NULL, *err = NULL;

			assert_true(asprintf(&cmd, "'%s' %s '%s' %s", th_cli(), cmds[i], path,
					     dec[k]) > 0);
			if (th_run(cmd, &out, &err) != 0)
				fail_msg("%s: %s", cmd, err);
			assert_true(th_contains(err, "decoded into"));
			assert_true(th_contains(err, " 0 decode errors"));
			assert_true(th_contains(err, k ? "decoder fast" : "decoder libipt"));
			cut_offsets(out);
			if (!k) {
				ref = out;
				if (!i) {
					/* Both versions of func ran: its ret, then the patch's. */
					assert_true(th_contains(out, ret_ip));
					assert_true(th_contains(out, add_ip));
				}
			} else {
				if (strcmp(ref, out))
					fail_msg("%s: '%s' differs from --decoder libipt:\n%s\n---\n%s",
						 cmds[i], dec[k], ref, out);
				free(out);
			}
			free(err);
			free(cmd);
		}
		free(ref);
	}
	free(ret_ip);
	free(add_ip);
	free(path);
}

/* Without TSC packets the PT_SYNC records' times are the clock. */
static void test_decode_clock_from_pt_sync(void **state)
{
	static uint8_t bad[PG];
	const struct tvh_pt_time at2000 = { .offset = 0, .tsc = 2000 };
	struct flow f;

	(void)state;
	patched_page(bad);
	/* Patched before 500, fixed at 1500: at 2000 the fixed one. */
	decode_two(1, bad, 1500, code_page, &at2000, 1, false, &f);
	assert_int_equal(f.errors, 0);
	assert_int_equal(f.n, fx.nflow);
	/* No time at all: the earliest (the patched one). */
	decode_two(1, bad, 1500, code_page, NULL, 0, false, &f);
	assert_int_equal(f.n, fx.nflow - 3);
}

/* The CLI: pt-decode and script decode a capture with snapshots, no --image. */
static void test_cli_without_image(void **state)
{
	uint8_t pt[512];
	size_t len = 0;
	struct recbuf r0 = { 0 };
	struct th_tvt t;
	char *path, *cmd, *out = NULL, *err = NULL, *want;

	(void)state;
	ptf_encode(&fx, pt, sizeof(pt), &len, 1);
	rb_pt_sync(&r0, 1000, 0, 0);
	rb_snap(&r0, TV_CODEF_NEW, 900, 0x77000, code_lin, 0x8000, code_page);
	/* An IMAGE record names the program: coverage's module without a file. */
	rb_image(&r0, TV_IMG_LOADER, 800, code_lin, PG, "\\EFI\\BOOT\\PROG.EFI");
	th_tvt_begin(&t, "m", 1);
	th_tvt_chunk(&t, 0, TVT_KIND_PT, TVT_CHUNK_F_STREAM_START, 0, pt, len);
	th_tvt_records(&t, 0, 0, &r0);
	th_tvt_end(&t);
	path = th_tvt_save(&t, "snap.tvt");

	assert_true(asprintf(&cmd, "'%s' pt-decode '%s' --cpu 0", th_cli(), path) > 0);
	assert_int_equal(th_run(cmd, &out, &err), 0);
	assert_true(th_contains(err, "code snapshots: 1 pages, 1 contents (4 KiB), 0 missing"));
	assert_true(asprintf(&want, "%u instructions", fx.nflow) > 0);
	assert_true(th_contains(err, want));
	assert_true(th_contains(err, " 0 decode errors"));
	free(want);
	assert_true(asprintf(&want, "%llx", (unsigned long long)ptf_sym(&fx, "i_ret")) > 0);
	assert_true(th_contains(out, want));
	free(want);
	free(cmd);
	free(out);
	free(err);

	assert_true(asprintf(&cmd, "'%s' script '%s' --no-symbols", th_cli(), path) > 0);
	assert_int_equal(th_run(cmd, &out, &err), 0);
	assert_null(strstr(err, "PT needs the code"));
	assert_true(asprintf(&want, "into %u branches, 1 syncs, 0 decode errors", fx.ntaken) > 0);
	assert_true(th_contains(err, want));
	free(want);
	assert_true(asprintf(&want, "0x%llx => 0x%llx",
			     (unsigned long long)fx.taken[0].from,
			     (unsigned long long)fx.taken[0].to) > 0);
	assert_true(th_contains(out, want));
	free(want);
	free(cmd);
	free(out);
	free(err);

	/* report, coverage and timeline decode it too. */
	{
		static const char *const cmds[] = {
			"report '%s' --phases",
			"coverage '%s' --format modoff -o '%s.cov'",
			"timeline '%s' -o '%s.json'",
		};

		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
			char *args;

			assert_true(asprintf(&args, cmds[i], path, path) > 0);
			assert_true(asprintf(&cmd, "'%s' %s", th_cli(), args) > 0);
			if (th_run(cmd, NULL, &err) != 0 || strstr(err, "PT needs the code") || !strstr(err, "code snapshots: 1 pages") ||
			    !strstr(err, " 0 decode errors"))
				fail_msg("%s: %s", args, err);
			free(args);
			free(cmd);
			free(err);
		}
	}
	/* Blocks by the IMAGE record's name (sizes approximate: no file). */
	{
		char *cov, *line;
		size_t clen;

		assert_true(asprintf(&cov, "%s.cov", path) > 0);
		out = th_read_file(cov, &clen);
		assert_true(asprintf(&line, "\nPROG+%llx\n", (unsigned long long)
				     (ptf_sym(&fx, "func") - code_lin)) > 0);
		if (!th_contains(out, line))
			fail_msg("%s lacks %s", out, line);
		free(line);
		free(out);
		free(cov);
	}
	free(path);
	th_tvt_free(&t);
	rb_free(&r0);
}

/* ---- the spill file ---------------------------------------------------------- */

/* Many snapshots: contents re-snapshotted, shared, per address space, on 3 CPUs. */
#define SPILL_N 300u
static void spill_capture(struct th_tvt *t)
{
	static uint8_t p[PG];
	struct recbuf b[3] = { { 0 } };

	th_tvt_begin(t, "m", 1);
	for (unsigned i = 0; i < SPILL_N; i++) {
		uint8_t U = i % 3 == 0 ? TV_CODEF_USER : 0;
		uint64_t lin = (U ? 0x400000ull : 0xffffffff81000000ull) + (uint64_t)(i % 97) * PG;

		fill(p, (uint8_t)i);
		p[0] = (uint8_t)(i >> 8);
		p[1] = (uint8_t)i;
		rb_snap(&b[i % 3], TV_CODEF_NEW | U | (i >= 97 ? TV_CODEF_REARM : 0),
			1000 + 10ull * i, 0x100000 + (uint64_t)(i % 97) * PG, lin,
			0x1000ull * (1 + i % 5), p);
		/* Every fifth names an older content again (dedup). */
		if (i % 5 == 4)
			rb_code(&b[(i + 1) % 3], TV_CODEF_LINEAR, 1005 + 10ull * i,
				0x900000 + (uint64_t)i * PG, 0x7f0000000000ull + (uint64_t)i * PG,
				0x1000, tv_code_hash(p));
	}
	for (unsigned c = 0; c < 3; c++) {
		th_tvt_records(t, c, 0, &b[c]);
		rb_free(&b[c]);
	}
	th_tvt_end(t);
}

static struct tvh_snap *load_opts(const struct th_tvt *t, uint64_t spill, const char *dir,
				  int *ret)
{
	struct tvh_snap_opts o = { .spill_bytes = spill, .dir = dir };
	struct tvt_reader r;
	struct tvh_snap *s = NULL;

	assert_int_equal(tvt_reader_open_mem(&r, t->buf, t->len), 0);
	*ret = tvh_snap_load_opts(&r, NULL, &o, &s);
	tvt_reader_close(&r);
	return s;
}

/* Whether p lies in a mapping of a deleted file (the unlinked spill file). */
static bool in_deleted_file(const void *p)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	bool yes = false;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)p >= lo &&
		    (uintptr_t)p < hi) {
			yes = strstr(line, "(deleted)") != NULL;
			break;
		}
	}
	fclose(f);
	return yes;
}

/*
 * The same records, contents all in memory, all in the file, and split
 * at a bound of 40 pages: every lookup, span, read and cursor read
 * answers the same; the bound holds; the file holds the rest.
 */
static void test_spill_equals_memory(void **state)
{
	static uint8_t a[2 * PG], b[2 * PG];
	const uint64_t bound = 40 * PG;
	struct tvh_snap *mem, *sp[2];
	struct tvh_snap_stats ms, ss;
	struct th_tvt t;
	unsigned compared = 0;
	int ret;

	(void)state;
	spill_capture(&t);
	mem = load_opts(&t, UINT64_MAX, th_dir(), &ret);
	assert_int_equal(ret, 0);
	sp[0] = load_opts(&t, 0, th_dir(), &ret);
	assert_int_equal(ret, 0);
	sp[1] = load_opts(&t, bound, th_dir(), &ret);
	assert_int_equal(ret, 0);
	tvh_snap_get_stats(mem, &ms);
	assert_int_equal(ms.contents, SPILL_N);
	assert_int_equal(ms.mem_bytes, SPILL_N * PG);
	assert_int_equal(ms.spilled_bytes, 0);
	for (unsigned m = 0; m < 2; m++) {
		struct tvh_snap_stats x;

		tvh_snap_get_stats(sp[m], &x);
		/* Every counter but where the bytes are is the same. */
		x.mem_bytes = ms.mem_bytes;
		x.spilled_bytes = ms.spilled_bytes;
		assert_memory_equal(&x, &ms, sizeof(x));
	}
	tvh_snap_get_stats(sp[0], &ss);
	assert_int_equal(ss.mem_bytes, 0);
	assert_int_equal(ss.spilled_bytes, SPILL_N * PG);
	tvh_snap_get_stats(sp[1], &ss);
	assert_int_equal(ss.mem_bytes, bound);
	assert_int_equal(ss.spilled_bytes, SPILL_N * PG - bound);
	for (unsigned m = 0; m < 2; m++) {
		struct tvh_snap_cursor cm, cs;

		tvh_snap_cursor_init(&cm, mem);
		tvh_snap_cursor_init(&cs, sp[m]);
		for (uint64_t tsc = 0; tsc < 1000 + 10 * SPILL_N + 20; tsc += 7) {
			static const uint64_t cr3s[] = { 0, 0x1000, 0x3000, 0x5000, 0x9000 };
			uint64_t base[] = { 0x400000, 0xffffffff81000000ull, 0x7f0000000000ull };
			uint64_t cr3 = cr3s[tsc % 5];

			for (unsigned k = 0; k < 3; k++) {
				uint64_t ip = base[k] + ((tsc * 131) % (300 * PG)) + PG - 3;
				struct tvh_snap_hit hm, hs;
				uint64_t lm, hm_, ls, hs_;
				int rm = tvh_snap_lookup(mem, cr3, ip, tsc, &hm);

				assert_int_equal(tvh_snap_lookup(sp[m], cr3, ip, tsc, &hs), rm);
				if (!rm) {
					assert_memory_equal(hm.page, hs.page, PG);
					assert_int_equal(hm.start, hs.start);
					assert_int_equal(hm.end, hs.end);
					assert_int_equal(hm.gpa, hs.gpa);
					assert_int_equal(hm.linear, hs.linear);
					assert_int_equal(hm.hash, hs.hash);
					assert_int_equal(hm.cpu, hs.cpu);
					assert_int_equal(hm.flags, hs.flags);
					assert_int_equal(hm.cr3, hs.cr3);
					/* All in the file: the page is the mapped file's. */
					if (m == 0)
						assert_true(in_deleted_file(hs.page));
					compared++;
				}
				tvh_snap_span(mem, ip, tsc, &lm, &hm_);
				tvh_snap_span(sp[m], ip, tsc, &ls, &hs_);
				assert_int_equal(lm, ls);
				assert_int_equal(hm_, hs_);
				memset(a, 0, sizeof(a));
				memset(b, 0, sizeof(b));
				assert_int_equal(tvh_snap_read(sp[m], cr3, ip, tsc, b, 6),
						 tvh_snap_read(mem, cr3, ip, tsc, a, 6));
				assert_memory_equal(a, b, 6);
				assert_int_equal(tvh_snap_cursor_read(&cs, cr3, ip, tsc, b, sizeof(b)),
						 tvh_snap_cursor_read(&cm, cr3, ip, tsc, a, sizeof(a)));
				assert_memory_equal(a, b, sizeof(a));
			}
		}
	}
	assert_true(compared > 1000);
	tvh_snap_free(mem);
	tvh_snap_free(sp[0]);
	tvh_snap_free(sp[1]);
	th_tvt_free(&t);
}

/* The environment test_spill_errors changes, put back even when it fails. */
static char *saved_tmpdir;

static int save_env(void **state)
{
	(void)state;
	saved_tmpdir = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	return 0;
}

static int restore_env(void **state)
{
	(void)state;
	if (saved_tmpdir)
		setenv("TMPDIR", saved_tmpdir, 1);
	else
		unsetenv("TMPDIR");
	if (spill_mode)
		setenv("TVH_SNAP_SPILL_BYTES", "0", 1);
	else
		unsetenv("TVH_SNAP_SPILL_BYTES");
	return 0;
}

static int restore_env_free(void **state)
{
	restore_env(state);
	free(saved_tmpdir);
	saved_tmpdir = NULL;
	return 0;
}

/*
 * The file cannot be made (a missing directory) or written (a full
 * disk, as RLIMIT_FSIZE makes one: EFBIG): an error with errno, counted,
 * never contents dropped in silence; within the bound no file is needed.
 */
static void test_spill_errors(void **state)
{
	static uint8_t p[PG];
	struct tvh_snap_opts o = { .spill_bytes = 0, .dir = "/nonexistent-tvh-dir" };
	struct tvh_snap_stats st;
	struct recbuf rb = { 0 };
	struct rlimit old, lim;
	struct th_tvt t;
	struct tvh_snap *s;
	void (*prev)(int);
	int ret;

	(void)state;
	spill_capture(&t);
	errno = 0;
	s = load_opts(&t, 0, "/nonexistent-tvh-dir", &ret);
	assert_int_equal(ret, -TVH_ERR_IO);
	assert_int_equal(errno, ENOENT);
	assert_null(s);
	s = load_opts(&t, UINT64_MAX, "/nonexistent-tvh-dir", &ret);
	assert_int_equal(ret, 0);
	tvh_snap_free(s);

	/* By hand: add fails at the first content, and keeps failing. */
	s = tvh_snap_new_opts(&o);
	assert_non_null(s);
	fill(p, 77);
	rb_snap(&rb, TV_CODEF_NEW, 10, 0x1000, 0x1000, 0, p);
	{
		struct th_tvt t1;
		struct tvt_reader r;
		struct tvh_walk_opts wo = { .cpu = -1 };
		struct tvh_stats ws;
		struct tvh_info in;
		char *text = NULL;
		size_t tlen = 0;
		FILE *f;

		th_tvt_begin(&t1, "m", 1);
		th_tvt_records(&t1, 0, 0, &rb);
		th_tvt_end(&t1);
		assert_int_equal(tvt_reader_open_mem(&r, t1.buf, t1.len), 0);
		assert_int_equal(tvh_walk(&r, &wo, (int (*)(void *, const struct tvh_event *))
					  tvh_snap_add, s, &ws), -TVH_ERR_IO);
		tvh_stats_free(&ws);
		assert_int_equal(tvh_snap_finish(s), -TVH_ERR_IO);
		assert_int_equal(errno, ENOENT);
		tvh_snap_get_stats(s, &st);
		assert_int_equal(st.spill_errors, 1);
		assert_int_equal(st.spilled_bytes, 0);
		tvh_snap_free(s);
		/* info goes on and says why instead of a short count. */
		assert_int_equal(setenv("TMPDIR", "/nonexistent-tvh-dir", 1), 0);
		assert_int_equal(setenv("TVH_SNAP_SPILL_BYTES", "0", 1), 0);
		tvt_reader_rewind(&r);
		tvh_info_init(&in);
		assert_int_equal(tvh_walk(&r, &wo, tvh_info_event, &in, &ws), 0);
		f = open_memstream(&text, &tlen);
		assert_int_equal(tvh_info_write(&in, &r, &ws, "x.tvt", f), 0);
		fclose(f);
		if (!th_contains(text, "code snapshots: I/O error: the spill file in"
				 " /nonexistent-tvh-dir") || !th_contains(text, strerror(ENOENT)) ||
		    th_contains(text, "contents ="))
			fail_msg("%s", text);
		free(text);
		tvh_stats_free(&ws);
		tvh_info_free(&in);
		restore_env(NULL);
		tvt_reader_close(&r);
		th_tvt_free(&t1);
	}
	rb_free(&rb);

	/* A full disk: the file may not grow past 64 KiB (16 of 300 contents). */
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 64 << 10;
	prev = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	errno = 0;
	s = load_opts(&t, 0, th_dir(), &ret);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, prev);
	assert_int_equal(ret, -TVH_ERR_IO);
	assert_int_equal(errno, EFBIG);
	assert_null(s);
	th_tvt_free(&t);
}

/* The CLI says why (the directory, errno's text) and fails; info shows the split. */
static void test_cli_spill(void **state)
{
	static uint8_t p[PG];
	struct recbuf r0 = { 0 };
	struct th_tvt t;
	char *path, *cmd, *out = NULL, *err = NULL;
	uint8_t pt[512];
	size_t len = 0;

	(void)state;
	ptf_encode(&fx, pt, sizeof(pt), &len, 1);
	rb_pt_sync(&r0, 1000, 0, 0);
	rb_snap(&r0, TV_CODEF_NEW, 900, 0x77000, code_lin, 0x8000, code_page);
	fill(p, 3);
	rb_snap(&r0, TV_CODEF_NEW, 950, 0x78000, code_lin + PG, 0x8000, p);
	th_tvt_begin(&t, "m", 1);
	th_tvt_chunk(&t, 0, TVT_KIND_PT, TVT_CHUNK_F_STREAM_START, 0, pt, len);
	th_tvt_records(&t, 0, 0, &r0);
	th_tvt_end(&t);
	path = th_tvt_save(&t, "spill.tvt");
	assert_true(asprintf(&cmd, "TMPDIR=/nonexistent-tvh-dir TVH_SNAP_SPILL_BYTES=0 '%s'"
			     " pt-decode '%s' --cpu 0", th_cli(), path) > 0);
	assert_int_not_equal(th_run(cmd, &out, &err), 0);
	if (!th_contains(err, "code snapshots: the spill file in /nonexistent-tvh-dir") ||
	    !th_contains(err, strerror(ENOENT)))
		fail_msg("%s", err);
	free(cmd);
	free(out);
	free(err);
	assert_true(asprintf(&cmd, "TVH_SNAP_SPILL_BYTES=4k '%s' info '%s'", th_cli(), path) > 0);
	assert_int_equal(th_run(cmd, &out, &err), 0);
	if (!th_contains(out, "2 contents = 8 KiB (4 KiB in the spill file);"))
		fail_msg("%s", out);
	free(cmd);
	free(out);
	free(err);
	/* info shows the rest of the capture and why the snapshots are not counted. */
	assert_true(asprintf(&cmd, "TMPDIR=/nonexistent-tvh-dir TVH_SNAP_SPILL_BYTES=0 '%s'"
			     " info '%s'", th_cli(), path) > 0);
	assert_int_equal(th_run(cmd, &out, &err), 0);
	if (!th_contains(out, "code snapshots: I/O error: the spill file in /nonexistent-tvh-dir") ||
	    !th_contains(out, strerror(ENOENT)) || !th_contains(out, "records"))
		fail_msg("%s", out);
	free(cmd);
	free(out);
	free(err);
	free(path);
	th_tvt_free(&t);
	rb_free(&r0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dedup_by_hash),
		cmocka_unit_test(test_content_split_across_cpus),
		cmocka_unit_test(test_bad_hash_rejected),
		cmocka_unit_test(test_missing_chunk_counted),
		cmocka_unit_test(test_resnapshot_by_time),
		cmocka_unit_test(test_fallback_any_address_space),
		cmocka_unit_test(test_read_across_pages),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_info_counts),
		cmocka_unit_test(test_log_parse),
		cmocka_unit_test(test_dump_fields),
		cmocka_unit_test(test_decode_equals_file),
		cmocka_unit_test(test_decode_patched_page_by_time),
		cmocka_unit_test(test_decode_clock_from_pt_sync),
		cmocka_unit_test(test_fast_decode_patched_page),
		cmocka_unit_test(test_tools_rewritten_page),
		cmocka_unit_test(test_cli_without_image),
		cmocka_unit_test(test_spill_equals_memory),
		cmocka_unit_test_setup_teardown(test_spill_errors, save_env, restore_env_free),
		cmocka_unit_test(test_cli_spill),
	};
	const size_t n = sizeof(tests) / sizeof(tests[0]);
	int failed;

	/* Once with contents in memory, once with every one in the spill file. */
	unsetenv("TVH_SNAP_SPILL_BYTES");
	spill_mode = false;
	failed = _cmocka_run_group_tests("snap (contents in memory)", tests, n, setup, teardown);
	setenv("TVH_SNAP_SPILL_BYTES", "0", 1);
	spill_mode = true;
	failed += _cmocka_run_group_tests("snap (contents in the spill file)", tests, n, setup,
					  teardown);
	return failed;
}
