/* SPDX-License-Identifier: MIT */
/*
 * test_host_mem.c - memory-access tracing on the host (host-tools/lib/mem.c,
 * `tracevisor mem`/`c2c`, the reader's TV_REC_MEM* decoding, dump/info):
 * synthetic captures built here, with two CPUs writing different words
 * of one cache line (false sharing, transfers counted exactly), a line
 * both write (true sharing), a private and a read-shared line, the
 * guest's labels and System.map data symbols naming data, and damaged
 * memory records counted, never used.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "host-tools/lib/dump.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/info.h"
#include "host-tools/lib/ksyms.h"
#include "host-tools/lib/mem.h"
#include "host-tools/lib/stream.h"
#include "host-tools/lib/sym.h"
#include "net/proto.h"
#include "tests/host/helpers.h"
#include "tests/host/json_check.h"

#define R TV_MEMF_READ
#define W TV_MEMF_WRITE
#define LK TV_MEMF_LOCK
#define LIN TV_MEMF_LINEAR

/* The watched buffer: guest-physical 0x10000, linear 0x7000010000. */
#define GPA 0x10000ull
#define GLA 0x7000010000ull

/* One TV_REC_MEM: gla = GLA + (gpa - GPA) when LIN; old/new as flagged. */
static void mem(struct recbuf *b, uint32_t flags, uint8_t size, uint64_t tsc,
		uint64_t rip, uint64_t gpa, uint64_t old, uint64_t new_val)
{
	uint64_t f[8] = { tsc, rip, 0x1000, (flags & LIN) ? GLA + (gpa - GPA) : 0, gpa,
			  0, old, new_val };

	rb_rec(b, TV_REC_MEM, size, flags | (1u << TV_MEMF_ID_SHIFT), f, 8, NULL, 0);
}

static void watch(struct recbuf *b, uint8_t op, uint16_t id, uint8_t mode, uint8_t origin,
		  uint64_t tsc, uint64_t lo, uint64_t hi, const char *label)
{
	uint64_t f[5] = { tsc, lo, hi, 0, 0 };

	rb_rec(b, TV_REC_MEM_WATCH, op, id | (uint32_t)mode << 16 | (uint32_t)origin << 24,
	       f, 5, label, label ? strlen(label) : 0);
}

static void stats(struct recbuf *b, uint64_t tsc, uint64_t recorded, uint64_t filtered,
		  uint64_t collateral, uint64_t steps)
{
	uint64_t f[7] = { tsc, recorded, filtered, collateral, steps, 1, 2 };

	rb_rec(b, TV_REC_MEM_STATS, 0, 0, f, 7, NULL, 0);
}

/* Code sites of the scenario. */
#define RIP_A  0x401005ull   /* cpu0: stores to buf+0x0 */
#define RIP_B  0x401053ull   /* cpu1: stores to buf+0x8 */
#define RIP_X  0x401100ull   /* both: lock xadd on buf+0x40 */
#define RIP_RD 0x401200ull   /* reads */

/*
 * The scenario, by line (64 bytes, buf = 0x10000):
 *  0x10000  cpu0 writes +0x0 at tsc 100, 300, 500, 700; cpu1 writes +0x8 at
 *           200, 400, 600, 800: 8 writes alternating: 7 transfers, false sharing
 *  0x10040  cpu0 lock xadd +0x0 at 150, cpu1 at 250, cpu0 reads +0x0 at 350:
 *           2 transfers, true sharing, 2 locked
 *  0x10080  cpu0 reads +0x10 three times (110, 120, 130): private, 0 transfers
 *  0x100c0  cpu0 reads +0x0 (140), cpu1 reads +0x4 (145): read-shared
 *  0x10100  cpu0 writes +0x0 (900), cpu1 reads +0x8 (910), cpu0 writes +0x0
 *           (920): 2 transfers, false sharing (a reader of another word)
 * One label names the buffer (cpu0's config watch), one label names the
 * third line.
 */
static void scenario(struct th_tvt *t)
{
	struct recbuf a = { 0 }, b = { 0 };

	rb_startstop(&a, TV_REC_START, TV_TRIG_BOOT, 50, 0x401000);
	watch(&a, TV_MEMW_ARM, 1, TV_MEMW_MODE_RW, TV_MEMW_FROM_CONFIG, 60, GPA, GPA + 0x1000, "buf");
	watch(&a, TV_MEMW_LABEL, 2, 0, TV_MEMW_FROM_HYPERCALL, 61, GPA + 0x80, GPA + 0xc0, "stats");
	for (int i = 0; i < 4; i++)
		mem(&a, W | LIN | TV_MEMF_NEW, 4, 100 + 200 * (uint64_t)i, RIP_A, GPA, 0,
		    (uint64_t)i + 1);
	mem(&a, R | LIN | TV_MEMF_OLD, 8, 110, RIP_RD, GPA + 0x90, 7, 0);
	mem(&a, R | LIN | TV_MEMF_OLD, 8, 120, RIP_RD, GPA + 0x90, 7, 0);
	mem(&a, R | LIN | TV_MEMF_OLD, 8, 130, RIP_RD, GPA + 0x90, 7, 0);
	mem(&a, R | LIN, 4, 140, RIP_RD, GPA + 0xc0, 0, 0);
	mem(&a, R | W | LK | LIN | TV_MEMF_OLD | TV_MEMF_NEW, 4, 150, RIP_X, GPA + 0x40, 0, 1);
	mem(&a, R | LIN, 4, 350, RIP_RD, GPA + 0x40, 0, 0);
	mem(&a, W | LIN, 8, 900, RIP_A, GPA + 0x100, 0, 0);
	mem(&a, W | LIN, 8, 920, RIP_A, GPA + 0x100, 0, 0);
	stats(&a, 1000, 15, 3, 5, 23);
	rb_startstop(&a, TV_REC_STOP, TV_TRIG_BOOT, 1001, 0x401000);

	rb_startstop(&b, TV_REC_START, TV_TRIG_BOOT, 55, 0x401000);
	for (int i = 0; i < 4; i++)
		mem(&b, W | LIN | TV_MEMF_NEW, 4, 200 + 200 * (uint64_t)i, RIP_B, GPA + 8, 0,
		    (uint64_t)i + 0x10);
	mem(&b, R | LIN, 4, 145, RIP_RD, GPA + 0xc4, 0, 0);
	mem(&b, R | W | LK | LIN | TV_MEMF_OLD | TV_MEMF_NEW, 4, 250, RIP_X, GPA + 0x40, 1, 2);
	mem(&b, R | LIN, 8, 910, RIP_RD, GPA + 0x108, 0, 0);
	stats(&b, 1000, 7, 0, 1, 8);
	rb_startstop(&b, TV_REC_STOP, TV_TRIG_BOOT, 1002, 0x401000);

	th_tvt_begin(t, "memhost", 0x18);
	th_tvt_chunk(t, 0, TVT_KIND_RECORDS, TVT_CHUNK_F_STREAM_START, 0, a.p, a.len);
	th_tvt_chunk(t, 1, TVT_KIND_RECORDS, TVT_CHUNK_F_STREAM_START, 0, b.p, b.len);
	th_tvt_end(t);
	rb_free(&a);
	rb_free(&b);
}

static void collect(const struct th_tvt *t, struct tvh_mem *m, struct tvh_stats *s)
{
	struct tvt_reader r;

	assert_int_equal(tvt_reader_open_mem(&r, t->buf, t->len), 0);
	tvh_mem_init(m);
	assert_int_equal(tvh_walk(&r, NULL, tvh_mem_event, m, s), 0);
	tvt_reader_close(&r);
}

static const struct tvh_mem_line *find_line(const struct tvh_mem_sharing *sh, uint64_t gpa)
{
	for (size_t i = 0; i < sh->n; i++)
		if (sh->v[i].gpa == gpa)
			return &sh->v[i];
	fail_msg("no line 0x%llx", (unsigned long long)gpa);
	return NULL;
}

/* The reader decodes the three records field by field. */
static void test_reader_fields(void **state)
{
	struct recbuf b = { 0 };
	struct tvh_stream s;
	struct trace_event r;
	uint64_t f[8] = { 10, 0x401000, 0x3000, 0x7000, 0x9ff8, 0xa000, 0x11, 0x22 };

	(void)state;
	rb_rec(&b, TV_REC_MEM, 16, R | W | LK | TV_MEMF_OLD | TV_MEMF_NEW | TV_MEMF_SPLIT | LIN |
	       3u << TV_MEMF_CPL_SHIFT | 7u << TV_MEMF_ID_SHIFT, f, 8, NULL, 0);
	watch(&b, TV_MEMW_ARM, 7, TV_MEMW_MODE_W, TV_MEMW_FROM_CONTROL, 11, 0x9000, 0xb000,
	      "ring buffer");
	stats(&b, 12, 1, 2, 3, 4);
	tvh_stream_init(&s);
	tvh_stream_feed(&s, b.p, b.len, 0, false);
	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.type, TV_REC_MEM);
	assert_true(r.has_tsc);
	assert_int_equal(r.tsc, 10);
	assert_int_equal(r.u.mem.rip, 0x401000);
	assert_int_equal(r.u.mem.cr3, 0x3000);
	assert_int_equal(r.u.mem.gla, 0x7000);
	assert_int_equal(r.u.mem.gpa, 0x9ff8);
	assert_int_equal(r.u.mem.gpa2, 0xa000);
	assert_int_equal(r.u.mem.old, 0x11);
	assert_int_equal(r.u.mem.new_val, 0x22);
	assert_int_equal(r.u.mem.size, 16);
	assert_int_equal(r.u.mem.cpl, 3);
	assert_int_equal(r.u.mem.id, 7);
	assert_int_equal(r.u.mem.flags, R | W | LK | TV_MEMF_OLD | TV_MEMF_NEW | TV_MEMF_SPLIT | LIN);
	assert_string_equal(tvh_mem_kind(r.u.mem.flags), "rw+lock");
	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.type, TV_REC_MEM_WATCH);
	assert_int_equal(r.u.mem_watch.op, TV_MEMW_ARM);
	assert_int_equal(r.u.mem_watch.id, 7);
	assert_int_equal(r.u.mem_watch.mode, TV_MEMW_MODE_W);
	assert_int_equal(r.u.mem_watch.origin, TV_MEMW_FROM_CONTROL);
	assert_int_equal(r.u.mem_watch.lo, 0x9000);
	assert_int_equal(r.u.mem_watch.hi, 0xb000);
	assert_int_equal(r.u.mem_watch.label_len, 11);   /* up to the padding */
	assert_memory_equal(r.u.mem_watch.label, "ring buffer", 11);
	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.type, TV_REC_MEM_STATS);
	assert_int_equal(r.tsc, 12);
	assert_int_equal(r.u.mem_stats.recorded, 1);
	assert_int_equal(r.u.mem_stats.filtered, 2);
	assert_int_equal(r.u.mem_stats.collateral, 3);
	assert_int_equal(r.u.mem_stats.steps, 4);
	assert_int_equal(r.u.mem_stats.undecoded, 1);
	assert_int_equal(r.u.mem_stats.outside_window, 2);
	assert_int_equal(tvh_next_record(&s, &r), 0);
	assert_string_equal(tvh_rec_type_name(TV_REC_MEM), "MEM");
	assert_string_equal(tvh_rec_type_name(TV_REC_MEM_WATCH), "MEM_WATCH");
	assert_string_equal(tvh_rec_type_name(TV_REC_MEM_STATS), "MEM_STATS");
	rb_free(&b);
}

/* Damaged memory records: each a skippable REC_FIELD, the stream goes on. */
static void test_reader_rejects(void **state)
{
	struct recbuf b = { 0 };
	struct tvh_stream s;
	struct trace_event r;
	uint64_t f[8] = { 1, 2, 3, 4, 0x5000, 0, 0, 0 };
	unsigned bad = 0;
	int ret;

	(void)state;
	rb_rec(&b, TV_REC_MEM, 4, R, f, 7, NULL, 0);                      /* 64 bytes */
	rb_rec(&b, TV_REC_MEM, 4, 0, f, 8, NULL, 0);                      /* neither r nor w */
	rb_rec(&b, TV_REC_MEM, 4, R | TV_MEMF_NEW, f, 8, NULL, 0);        /* new without write */
	rb_rec(&b, TV_REC_MEM, 4, W | TV_MEMF_UNDECODED, f, 8, NULL, 0);  /* undecoded, sized */
	f[5] = 0x6008;
	rb_rec(&b, TV_REC_MEM, 4, W | TV_MEMF_SPLIT, f, 8, NULL, 0);      /* split, gpa2 unaligned */
	watch(&b, 0, 1, TV_MEMW_MODE_RW, TV_MEMW_FROM_CONFIG, 1, 0x1000, 0x2000, NULL);  /* op 0 */
	watch(&b, 4, 1, TV_MEMW_MODE_RW, TV_MEMW_FROM_CONFIG, 1, 0x1000, 0x2000, NULL);  /* op 4 */
	watch(&b, TV_MEMW_ARM, 1, 0, TV_MEMW_FROM_CONFIG, 1, 0x1000, 0x2000, NULL);      /* mode 0 */
	watch(&b, TV_MEMW_ARM, 1, 4, TV_MEMW_FROM_CONFIG, 1, 0x1000, 0x2000, NULL);      /* mode 4 */
	watch(&b, TV_MEMW_ARM, 1, TV_MEMW_MODE_R, 0, 1, 0x1000, 0x2000, NULL);           /* origin 0 */
	watch(&b, TV_MEMW_ARM, 1, TV_MEMW_MODE_R, 4, 1, 0x1000, 0x2000, NULL);           /* origin 4 */
	watch(&b, TV_MEMW_LABEL, 1, 0, TV_MEMW_FROM_HYPERCALL, 1, 0x2000, 0x2000, "x");  /* empty */
	rb_rec(&b, TV_REC_MEM_WATCH, TV_MEMW_REMOVE, 1u | 1u << 24, f, 4, NULL, 0);     /* 40 bytes */
	rb_rec(&b, TV_REC_MEM_STATS, 0, 0, f, 6, NULL, 0);                /* 56 bytes */
	rb_rec(&b, TV_REC_MEM_STATS, 0, 0, f, 8, NULL, 0);                /* 72 bytes */
	/* still good after all that: a REMOVE needs no range, an undecoded record no size */
	watch(&b, TV_MEMW_REMOVE, 1, 0, TV_MEMW_FROM_HYPERCALL, 1, 0, 0, NULL);
	f[5] = 0;
	rb_rec(&b, TV_REC_MEM, 0, W | TV_MEMF_UNDECODED, f, 8, NULL, 0);
	tvh_stream_init(&s);
	tvh_stream_feed(&s, b.p, b.len, 0, false);
	for (unsigned i = 0; i < 15; i++) {
		ret = tvh_next_record(&s, &r);
		if (ret != -TVH_ERR_REC_FIELD)
			fail_msg("record %u: %d, want REC_FIELD", i, ret);
		bad++;
	}
	assert_int_equal(bad, 15);
	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.u.mem_watch.op, TV_MEMW_REMOVE);
	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_true(r.u.mem.flags & TV_MEMF_UNDECODED);
	assert_int_equal(tvh_next_record(&s, &r), 0);
	rb_free(&b);
}

/* The sharing report: every count of every line of the scenario. */
static void test_sharing_lines(void **state)
{
	const struct tvh_mem_line *l;
	struct tvh_mem_sharing sh;
	struct th_tvt t;
	struct tvh_stats s;
	struct tvh_mem m;

	(void)state;
	scenario(&t);
	collect(&t, &m, &s);
	assert_int_equal(m.n, 19);
	assert_int_equal(m.bad, 0);
	assert_int_equal(tvh_mem_sharing_build(&m, &sh), 0);
	assert_int_equal(sh.n, 5);
	assert_int_equal(sh.accesses, 19);
	assert_int_equal(sh.by_share[TVH_SHARE_FALSE], 2);
	assert_int_equal(sh.by_share[TVH_SHARE_TRUE], 1);
	assert_int_equal(sh.by_share[TVH_SHARE_READ], 1);
	assert_int_equal(sh.by_share[TVH_SHARE_PRIVATE], 1);

	/* sorted by transfers, then accesses, then address */
	assert_int_equal(sh.v[0].gpa, GPA);
	assert_int_equal(sh.v[1].gpa, GPA + 0x40);
	assert_int_equal(sh.v[2].gpa, GPA + 0x100);
	assert_int_equal(sh.v[3].gpa, GPA + 0x80);
	assert_int_equal(sh.v[4].gpa, GPA + 0xc0);

	l = find_line(&sh, GPA);                 /* false sharing */
	assert_int_equal(l->share, TVH_SHARE_FALSE);
	assert_int_equal(l->ncpus, 2);
	assert_int_equal(l->accesses, 8);
	assert_int_equal(l->reads, 0);
	assert_int_equal(l->writes, 8);
	assert_int_equal(l->locked, 0);
	assert_int_equal(l->transfers, 7);
	assert_true(l->have_gla);
	assert_int_equal(l->gla, GLA);
	assert_int_equal(l->noffs, 2);
	assert_int_equal(l->offs[0].off, 0);
	assert_int_equal(l->offs[0].writes, 4);
	assert_int_equal(l->offs[0].ncpus, 1);
	assert_int_equal(l->offs[0].cpus[0], 0);
	assert_int_equal(l->offs[0].nsites, 1);
	assert_int_equal(l->offs[0].sites[0].rip, RIP_A);
	assert_int_equal(l->offs[0].sites[0].count, 4);
	assert_int_equal(l->offs[1].off, 8);
	assert_int_equal(l->offs[1].cpus[0], 1);
	assert_int_equal(l->offs[1].sites[0].rip, RIP_B);
	assert_int_equal(l->offs[1].sites[0].count, 4);
	assert_int_equal(l->offs[1].size_min, 4);
	assert_int_equal(l->offs[1].size_max, 4);

	l = find_line(&sh, GPA + 0x40);          /* true sharing */
	assert_int_equal(l->share, TVH_SHARE_TRUE);
	assert_int_equal(l->accesses, 3);
	assert_int_equal(l->reads, 3);
	assert_int_equal(l->writes, 2);
	assert_int_equal(l->locked, 2);
	assert_int_equal(l->transfers, 2);
	assert_int_equal(l->noffs, 1);
	assert_int_equal(l->offs[0].nsites, 2);
	assert_int_equal(l->offs[0].sites[0].rip, RIP_X);   /* 2 before 1 */
	assert_int_equal(l->offs[0].sites[0].count, 2);
	assert_int_equal(l->offs[0].sites[1].rip, RIP_RD);

	l = find_line(&sh, GPA + 0x80);          /* private */
	assert_int_equal(l->share, TVH_SHARE_PRIVATE);
	assert_int_equal(l->transfers, 0);
	assert_int_equal(l->reads, 3);
	assert_int_equal(l->offs[0].off, 0x10);
	assert_int_equal(l->offs[0].size_max, 8);

	l = find_line(&sh, GPA + 0xc0);          /* read-shared */
	assert_int_equal(l->share, TVH_SHARE_READ);
	assert_int_equal(l->transfers, 0);
	assert_int_equal(l->ncpus, 2);

	l = find_line(&sh, GPA + 0x100);         /* a reader of another word */
	assert_int_equal(l->share, TVH_SHARE_FALSE);
	assert_int_equal(l->transfers, 2);

	tvh_mem_sharing_free(&sh);
	tvh_mem_free(&m);
	tvh_stats_free(&s);
	th_tvt_free(&t);
}

/* Transfers follow time order across CPUs, not the file's chunk order. */
static void test_transfers_time_order(void **state)
{
	struct recbuf a = { 0 }, b = { 0 }, c = { 0 };
	struct tvh_mem_sharing sh;
	struct th_tvt t;
	struct tvh_stats s;
	struct tvh_mem m;

	(void)state;
	/* cpu0: w 10, w 20, r 60; cpu1: w 30, r 40; cpu2: r 50 (same byte) */
	mem(&a, W, 4, 10, 1, GPA, 0, 0);
	mem(&a, W, 4, 20, 1, GPA, 0, 0);
	mem(&a, R, 4, 60, 1, GPA, 0, 0);
	mem(&b, W, 4, 30, 2, GPA, 0, 0);
	mem(&b, R, 4, 40, 2, GPA, 0, 0);
	mem(&c, R, 4, 50, 3, GPA, 0, 0);
	th_tvt_begin(&t, "order", 1);
	th_tvt_chunk(&t, 2, TVT_KIND_RECORDS, TVT_CHUNK_F_STREAM_START, 0, c.p, c.len);
	th_tvt_chunk(&t, 0, TVT_KIND_RECORDS, TVT_CHUNK_F_STREAM_START, 0, a.p, a.len);
	th_tvt_chunk(&t, 1, TVT_KIND_RECORDS, TVT_CHUNK_F_STREAM_START, 0, b.p, b.len);
	th_tvt_end(&t);
	collect(&t, &m, &s);
	assert_int_equal(tvh_mem_sharing_build(&m, &sh), 0);
	/* 10c0w 20c0w | 30c1w (+1) 40c1r | 50c2r (prev r: 0) | 60c0r (both r: 0) */
	assert_int_equal(sh.n, 1);
	assert_int_equal(sh.v[0].transfers, 1);
	assert_int_equal(sh.v[0].share, TVH_SHARE_TRUE);
	assert_int_equal(sh.v[0].ncpus, 3);
	/* the listing's order */
	assert_int_equal(m.v[0].tsc, 10);
	assert_int_equal(m.v[2].cpu, 1);
	assert_int_equal(m.v[4].cpu, 2);
	assert_int_equal(m.v[5].tsc, 60);
	tvh_mem_sharing_free(&sh);
	tvh_mem_free(&m);
	tvh_stats_free(&s);
	th_tvt_free(&t);
	rb_free(&a);
	rb_free(&b);
	rb_free(&c);
}

static char *listing(struct tvh_mem *m, struct tvh_symtab *st, bool json, bool sharing)
{
	struct tvh_mem_sharing sh;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	if (sharing) {
		assert_int_equal(tvh_mem_sharing_build(m, &sh), 0);
		assert_int_equal(tvh_mem_sharing_write(&sh, m, st, NULL, 3, json, f), 0);
		tvh_mem_sharing_free(&sh);
	} else {
		assert_int_equal(tvh_mem_list(m, st, NULL, json, f), 0);
	}
	fclose(f);
	return text;
}

/* The text forms: exact lines. */
static void test_text_lines(void **state)
{
	struct th_tvt t;
	struct tvh_stats s;
	struct tvh_mem m;
	char *out;

	(void)state;
	scenario(&t);
	collect(&t, &m, &s);
	out = listing(&m, NULL, false, false);
	assert_true(th_contains(out, "# watch 1 armed 0x10000-0x11000 rw by config on cpu0 tsc 60 \"buf\"\n"));
	assert_true(th_contains(out, "# watch 2 label 0x10080-0x100c0 by hypercall on cpu0 tsc 61 \"stats\"\n"));
	assert_true(th_contains(out, "\ncpu0 100 0x401005 - w 4 gla=0x7000010000 gpa=0x10000 new=0x1 buf+0x0\n"
				     "cpu0 110 0x401200 - r 8 gla=0x7000010090 gpa=0x10090 old=0x7 stats+0x10\n"));
	assert_true(th_contains(out, "\ncpu1 250 0x401100 - rw+lock 4 gla=0x7000010040 gpa=0x10040 old=0x1 new=0x2 buf+0x40\n"));
	/* time order across CPUs: 140 (cpu0), 145 (cpu1), 150 (cpu0) */
	assert_true(th_contains(out, "gpa=0x100c0 buf+0xc0\ncpu1 145 "));
	assert_true(th_contains(out, "gpa=0x100c4 buf+0xc4\ncpu0 150 "));
	assert_true(th_contains(out, "# accesses: 19 (reads 9, writes 12, locked 2), cpu0 12, cpu1 7\n"));
	assert_true(th_contains(out, "# cpu0: recorded 15, filtered 3, collateral 5, steps 23, undecoded 1, outside window 2\n"));
	assert_true(th_contains(out, "# hypervisor (since boot, 2 CPUs): recorded 22, filtered 3, collateral 6, steps 31, undecoded 2, outside window 4\n"));
	free(out);

	out = listing(&m, NULL, false, true);
	assert_true(th_contains(out, "# sharing: 5 cache lines of 64 bytes (by guest-physical address), 19 accesses; false sharing 2, true sharing 1, read-shared 1, private 1\n"));
	assert_true(th_contains(out, "\nline 0x10000 buf+0x0 cpus 0,1 reads 0 writes 8 locked 0 transfers 7 false-sharing offsets +0x0,+0x8\n"
				     "  +0x0 size 4 cpus 0 reads 0 writes 4 locked 0: 0x401005 x4\n"
				     "  +0x8 size 4 cpus 1 reads 0 writes 4 locked 0: 0x401053 x4\n"
				     "line 0x10040 buf+0x40 cpus 0,1 reads 3 writes 2 locked 2 transfers 2 true-sharing offsets +0x0\n"
				     "  +0x0 size 4 cpus 0,1 reads 3 writes 2 locked 2: 0x401100 x2, 0x401200 x1\n"));
	assert_true(th_contains(out, "\nline 0x10080 stats+0x0 cpus 0 reads 3 writes 0 locked 0 transfers 0 private offsets +0x10\n"));
	free(out);
	tvh_mem_free(&m);
	tvh_stats_free(&s);
	th_tvt_free(&t);
}

/* JSON: valid, and the false-shared line first with its numbers. */
static void test_json(void **state)
{
	const struct jval *v, *line, *off;
	struct th_tvt t;
	struct tvh_stats s;
	struct tvh_mem m;
	struct jval *j;
	char err[128];
	char *out;

	(void)state;
	scenario(&t);
	collect(&t, &m, &s);
	out = listing(&m, NULL, true, true);
	j = json_parse(out, strlen(out), err, sizeof(err));
	if (!j)
		fail_msg("sharing JSON: %s", err);
	v = json_get(j, "lines");
	assert_non_null(v);
	assert_int_equal(v->t, J_ARR);
	assert_int_equal(v->len, 5);
	line = &v->items[0];
	assert_string_equal(json_get_str(line, "line"), "0x10000");
	assert_string_equal(json_get_str(line, "name"), "buf+0x0");
	assert_string_equal(json_get_str(line, "sharing"), "false-sharing");
	assert_true(json_get(line, "transfers")->num == 7.0);
	assert_true(json_get(line, "writes")->num == 8.0);
	assert_int_equal(json_get(line, "cpus")->len, 2);
	off = &json_get(line, "offsets")->items[1];
	assert_true(json_get(off, "offset")->num == 8.0);
	assert_string_equal(json_get_str(&json_get(off, "top")->items[0], "rip"), "0x401053");
	assert_true(json_get(json_get(j, "summary"), "false_sharing")->num == 2.0);
	json_free(j);
	free(out);

	out = listing(&m, NULL, true, false);
	j = json_parse(out, strlen(out), err, sizeof(err));
	if (!j)
		fail_msg("listing JSON: %s", err);
	v = json_get(j, "accesses");
	assert_int_equal(v->len, 19);
	assert_string_equal(json_get_str(&v->items[0], "name"), "buf+0x0");
	assert_string_equal(json_get_str(&v->items[0], "new"), "0x1");
	assert_true(json_get(&v->items[0], "write")->b);
	assert_int_equal(json_get(j, "watches")->len, 2);
	assert_true(json_get(json_get(j, "totals"), "steps")->num == 31.0);
	json_free(j);
	free(out);
	tvh_mem_free(&m);
	tvh_stats_free(&s);
	th_tvt_free(&t);
}

/* Data names: the guest's label first, then System.map data symbols by gla. */
static void test_data_names(void **state)
{
	static const char map[] =
		"ffffffff81000000 T _text\n"
		"ffffffff81000100 T do_timer\n"
		"ffffffff82000000 D jiffies_64\n"
		"ffffffff82000000 D jiffies\n"
		"ffffffff82000040 d local_data\n"
		"ffffffff82001000 T after_data_code\n"
		"ffffffff82002000 B some_bss\n"
		"ffffffff82003000 R ro_table\n"
		"ffffffff82004000 B _end\n";
	struct tvh_ksyms k;
	struct tvh_symtab st;
	struct tvh_mem m;
	struct recbuf b = { 0 };
	struct th_tvt t;
	struct tvh_stats s;
	char buf[128];

	(void)state;
	tvh_ksyms_init(&k);
	assert_true(tvh_ksyms_parse(&k, map, strlen(map), TVH_KSYMS_SYSTEM_MAP, "System.map") > 0);
	tvh_symtab_init(&st);
	st.ksyms = &k;
	/* labels: a label with odd bytes, and a later one over part of it */
	watch(&b, TV_MEMW_ARM, 1, TV_MEMW_MODE_RW, TV_MEMW_FROM_HYPERCALL, 1, 0x5000, 0x6000,
	      "my obj\x01");
	watch(&b, TV_MEMW_LABEL, 2, 0, TV_MEMW_FROM_HYPERCALL, 2, 0x5800, 0x5900, "inner");
	th_tvt_begin(&t, "names", 1);
	th_tvt_chunk(&t, 0, TVT_KIND_RECORDS, TVT_CHUNK_F_STREAM_START, 0, b.p, b.len);
	th_tvt_end(&t);
	collect(&t, &m, &s);
	assert_int_equal(m.nw, 2);
	assert_string_equal(m.w[0].label, "my_obj_");

	assert_int_equal(tvh_mem_data_name(&m, &st, true, 0xffffffff82000008ull, 0x5010, buf,
					   sizeof(buf)), 12);
	assert_string_equal(buf, "my_obj_+0x10");            /* the label wins */
	tvh_mem_data_name(&m, &st, true, 0, 0x5810, buf, sizeof(buf));
	assert_string_equal(buf, "inner+0x10");               /* the latest label */
	tvh_mem_data_name(&m, &st, true, 0xffffffff82000008ull, 0x2000008, buf, sizeof(buf));
	assert_string_equal(buf, "jiffies_64+0x8");           /* first in file order */
	tvh_mem_data_name(&m, &st, true, 0xffffffff82000048ull, 0x2000048, buf, sizeof(buf));
	assert_string_equal(buf, "local_data+0x8");
	tvh_mem_data_name(&m, &st, true, 0xffffffff82002010ull, 0, buf, sizeof(buf));
	assert_string_equal(buf, "some_bss+0x10");
	tvh_mem_data_name(&m, &st, true, 0xffffffff82003000ull, 0, buf, sizeof(buf));
	assert_string_equal(buf, "ro_table+0x0");
	/* in code: not data; no linear address: no symbol; outside the kernel: none */
	assert_int_equal(tvh_mem_data_name(&m, &st, true, 0xffffffff82001008ull, 0, buf,
					   sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(tvh_mem_data_name(&m, &st, false, 0xffffffff82000008ull, 0, buf,
					   sizeof(buf)), 0);
	assert_int_equal(tvh_mem_data_name(&m, &st, true, 0x401000, 0, buf, sizeof(buf)), 0);
	/* KASLR: the map relocated */
	tvh_ksyms_relocate(&k, 0x1000000);
	tvh_mem_data_name(&m, &st, true, 0xffffffff83000010ull, 0, buf, sizeof(buf));
	assert_string_equal(buf, "jiffies_64+0x10");
	/* a short buffer is cut, NUL terminated */
	assert_int_equal(tvh_mem_data_name(&m, &st, true, 0, 0x5010, buf, 5), 4);
	assert_string_equal(buf, "my_o");

	tvh_mem_free(&m);
	tvh_stats_free(&s);
	th_tvt_free(&t);
	rb_free(&b);
	tvh_symtab_free(&st);
	tvh_ksyms_free(&k);
}

/* A corrupt and a truncated TV_REC_MEM: counted, never listed, no crash. */
static void test_damaged_counted(void **state)
{
	struct recbuf a = { 0 };
	struct th_tvt t;
	struct tvh_stats s;
	struct tvh_mem m;
	uint64_t f[8] = { 5, 0x401000, 0, 0, GPA + 8, 0, 0, 0 };
	size_t cut;

	(void)state;
	mem(&a, W, 4, 1, 0x401000, GPA, 0, 0);
	rb_rec(&a, TV_REC_MEM, 4, W, f, 6, NULL, 0);      /* 56 bytes: REC_FIELD */
	mem(&a, W, 4, 2, 0x401000, GPA, 0, 0);
	mem(&a, W, 4, 3, 0x401000, GPA, 0, 0);            /* cut below: TRUNCATED */
	cut = a.len - 40;
	th_tvt_begin(&t, "bad", 1);
	th_tvt_chunk(&t, 0, TVT_KIND_RECORDS, TVT_CHUNK_F_STREAM_START, 0, a.p, cut);
	th_tvt_end(&t);
	collect(&t, &m, &s);
	assert_int_equal(m.n, 2);
	assert_int_equal(m.bad, 2);
	assert_int_equal(m.bad_by_type[0], 2);
	assert_int_equal(s.malformed, 2);
	assert_true(tvh_stats_damaged(&s));
	tvh_mem_free(&m);
	tvh_stats_free(&s);
	th_tvt_free(&t);
	rb_free(&a);
}

/* dump prints the records, info counts them. */
static void test_dump_info(void **state)
{
	struct tvt_reader r;
	struct tvh_info in;
	struct tvh_dump d;
	struct th_tvt t;
	struct tvh_stats s;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	scenario(&t);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, t.len), 0);
	d = (struct tvh_dump){ .out = f, .st = NULL, .records = true };
	assert_int_equal(tvh_walk(&r, NULL, tvh_dump_event, &d, &s), 0);
	tvh_stats_free(&s);
	tvh_info_init(&in);
	assert_int_equal(tvh_walk(&r, NULL, tvh_info_event, &in, &s), 0);
	assert_int_equal(tvh_info_write(&in, &r, &s, "x.tvt", f), 0);
	fclose(f);
	assert_true(th_contains(text, " cpu0  MEM      rip=0x401005 w size=4 gla=0x7000010000 gpa=0x10000 new=0x1 cr3=0x1000 cpl=0 watch=1 tsc=100\n"));
	assert_true(th_contains(text, " cpu0  MEM_WATCH arm id=1 mode=3 origin=1 lo=0x10000 hi=0x11000 \"buf\" tsc=60\n"));
	assert_true(th_contains(text, " cpu1  MEM_STATS recorded=7 filtered=0 collateral=1 steps=8 undecoded=1 outside_window=2 tsc=1000\n"));
	assert_true(th_contains(text, "memory accesses: 19 in the capture; hypervisor (2 CPUs, since boot): recorded 22, filtered 3, collateral 6, steps 31, undecoded 2, outside window 4\n"
				      "  watches: 1 armed, 0 removed, 1 labels\n"));
	assert_true(th_contains(text, "  MEM             19\n"));
	tvh_info_free(&in);
	tvh_stats_free(&s);
	tvt_reader_close(&r);
	th_tvt_free(&t);
	free(text);
}

/* The CLI: mem, c2c, --json, --cpu, exit 3 on damage. */
static void test_cli(void **state)
{
	struct recbuf a = { 0 };
	struct th_tvt t, bad;
	char *path, *bpath, *cmd, *out, *err;
	struct jval *j;
	char e[128];

	(void)state;
	scenario(&t);
	path = th_tvt_save(&t, "mem.tvt");
	assert_true(asprintf(&cmd, "'%s' mem '%s'", th_cli(), path) > 0);
	assert_int_equal(th_run(cmd, &out, &err), 0);
	assert_true(th_contains(out, "\ncpu1 200 0x401053 - w 4 gla=0x7000010008 gpa=0x10008 new=0x10 buf+0x8\n"));
	free(cmd); free(out); free(err);

	assert_true(asprintf(&cmd, "'%s' c2c '%s'", th_cli(), path) > 0);
	assert_int_equal(th_run(cmd, &out, &err), 0);
	assert_true(th_contains(out, "\nline 0x10000 buf+0x0 cpus 0,1 reads 0 writes 8 locked 0 transfers 7 false-sharing offsets +0x0,+0x8\n"));
	free(cmd); free(out); free(err);

	assert_true(asprintf(&cmd, "'%s' mem --sharing --json --top 1 '%s'", th_cli(), path) > 0);
	assert_int_equal(th_run(cmd, &out, &err), 0);
	j = json_parse(out, strlen(out), e, sizeof(e));
	if (!j)
		fail_msg("%s", e);
	assert_int_equal(json_get(&json_get(&json_get(j, "lines")->items[1], "offsets")->items[0],
				  "top")->len, 1);
	json_free(j);
	free(cmd); free(out); free(err);

	assert_true(asprintf(&cmd, "'%s' mem --cpu 1 '%s'", th_cli(), path) > 0);
	assert_int_equal(th_run(cmd, &out, &err), 0);
	assert_null(strstr(out, "\ncpu0 "));
	assert_true(th_contains(out, "# accesses: 7 "));
	free(cmd); free(out); free(err);

	assert_true(asprintf(&cmd, "'%s' info '%s'", th_cli(), path) > 0);
	assert_int_equal(th_run(cmd, &out, &err), 0);
	assert_true(th_contains(out, "memory accesses: 19 in the capture"));
	free(cmd); free(out); free(err);

	assert_true(asprintf(&cmd, "'%s' mem --help", th_cli()) > 0);
	assert_int_equal(th_run(cmd, &out, NULL), 0);
	assert_true(th_contains(out, "Usage: tracevisor mem [OPTIONS]"));
	free(cmd); free(out);
	assert_true(asprintf(&cmd, "'%s' help c2c", th_cli()) > 0);
	assert_int_equal(th_run(cmd, &out, NULL), 0);
	assert_true(th_contains(out, "Usage: tracevisor c2c [OPTIONS]"));
	free(cmd); free(out);
	assert_true(asprintf(&cmd, "'%s' --help", th_cli()) > 0);
	assert_int_equal(th_run(cmd, &out, NULL), 0);
	assert_true(th_contains(out, "  mem         accesses to watched memory"));
	free(cmd); free(out);

	assert_true(asprintf(&cmd, "'%s' mem --top x '%s'", th_cli(), path) > 0);
	assert_int_equal(th_run(cmd, NULL, NULL), 2);
	free(cmd);

	/* a damaged memory record: listed without it, exit 3 */
	mem(&a, W, 4, 1, 0x401000, GPA, 0, 0);
	mem(&a, 0, 4, 2, 0x401000, GPA, 0, 0);
	th_tvt_begin(&bad, "bad", 1);
	th_tvt_chunk(&bad, 0, TVT_KIND_RECORDS, TVT_CHUNK_F_STREAM_START, 0, a.p, a.len);
	th_tvt_end(&bad);
	bpath = th_tvt_save(&bad, "mem-bad.tvt");
	assert_true(asprintf(&cmd, "'%s' mem '%s'", th_cli(), bpath) > 0);
	assert_int_equal(th_run(cmd, &out, &err), 3);
	assert_true(th_contains(out, "# accesses: 1 "));
	assert_true(th_contains(out, "(memory records 1)"));
	assert_true(th_contains(err, "1 malformed memory records"));
	free(cmd); free(out); free(err);

	rb_free(&a);
	th_tvt_free(&bad);
	th_tvt_free(&t);
	free(bpath);
	free(path);
}

/* `tracevisor control watch/unwatch/label`: the datagram a machine would get. */
static void test_control_watch(void **state)
{
	static const uint8_t key[4] = { 0x00, 0x11, 0x22, 0x33 };
	static const char *const bad[] = {
		"watch 0x2000-0x1000", "watch 0x1000-0x2000:x", "watch 0x1000", "label 0x1000-0x2000",
		"unwatch 0", "unwatch 65536", "watch 0x1000-0x2000 a b", "label 0x1000-0x2000:r x",
	};
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	uint8_t b[TVP_MAX_DATAGRAM];
	struct timeval tv = { 5, 0 };
	struct proto_msg m;
	char *cmd, *out;
	ssize_t n;
	int fd;

	(void)state;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);

	assert_true(asprintf(&cmd, "'%s' control --to 127.0.0.1:%u --session 5eed --key-hex 00112233 "
			     "--counter 7 watch 0x10000-0x11000:w 'the buf'", th_cli(),
			     ntohs(sa.sin_port)) > 0);
	assert_int_equal(th_run(cmd, &out, NULL), 0);
	assert_true(th_contains(out, "sent watch (counter 7)"));
	free(cmd); free(out);
	n = recv(fd, b, sizeof(b), 0);
	assert_true(n > 0);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_int_equal(proto_control_verify(b, (size_t)n, key, sizeof(key)), 0);
	assert_int_equal(m.session, 0x5eed);
	assert_int_equal(m.u.control.c.counter, 7);
	assert_int_equal(m.u.control.c.op, TVP_CTL_MEM_WATCH);
	assert_int_equal(m.u.control.arg.mem_watch.op, TV_MEMW_ARM);
	assert_int_equal(m.u.control.arg.mem_watch.lo, 0x10000);
	assert_int_equal(m.u.control.arg.mem_watch.hi, 0x11000);
	assert_int_equal(m.u.control.arg.mem_watch.mode, TV_MEMW_MODE_W);
	assert_int_equal(m.u.control.arg.mem_watch.label_len, 7);
	assert_memory_equal(m.u.control.label, "the buf", 7);

	assert_true(asprintf(&cmd, "'%s' control --to 127.0.0.1:%u --session 5eed --key-hex 00112233 "
			     "watch 4096-8192", th_cli(), ntohs(sa.sin_port)) > 0);
	assert_int_equal(th_run(cmd, NULL, NULL), 0);
	free(cmd);
	n = recv(fd, b, sizeof(b), 0);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_int_equal(m.u.control.arg.mem_watch.mode, TV_MEMW_MODE_RW);   /* the default */
	assert_int_equal(m.u.control.arg.mem_watch.hi, 8192);
	assert_int_equal(m.u.control.arg.mem_watch.label_len, 0);

	assert_true(asprintf(&cmd, "'%s' control --to 127.0.0.1:%u --session 5eed --key-hex 00112233 "
			     "unwatch 3", th_cli(), ntohs(sa.sin_port)) > 0);
	assert_int_equal(th_run(cmd, NULL, NULL), 0);
	free(cmd);
	n = recv(fd, b, sizeof(b), 0);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_int_equal(m.u.control.arg.mem_watch.op, TV_MEMW_REMOVE);
	assert_int_equal(m.u.control.arg.mem_watch.id, 3);

	assert_true(asprintf(&cmd, "'%s' control --to 127.0.0.1:%u --session 5eed --key-hex 00112233 "
			     "label 0x2000-0x2040 counters", th_cli(), ntohs(sa.sin_port)) > 0);
	assert_int_equal(th_run(cmd, NULL, NULL), 0);
	free(cmd);
	n = recv(fd, b, sizeof(b), 0);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_int_equal(m.u.control.arg.mem_watch.op, TV_MEMW_LABEL);
	assert_int_equal(m.u.control.arg.mem_watch.mode, 0);
	assert_memory_equal(m.u.control.label, "counters", 8);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc;

		assert_true(asprintf(&cmd, "'%s' control --to 127.0.0.1:%u --session 5eed "
				     "--key-hex 00112233 %s", th_cli(), ntohs(sa.sin_port), bad[i]) > 0);
		rc = th_run(cmd, NULL, NULL);
		if (rc != 2)
			fail_msg("'%s': exit %d, want 2", bad[i], rc);
		free(cmd);
	}
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reader_fields),
		cmocka_unit_test(test_reader_rejects),
		cmocka_unit_test(test_sharing_lines),
		cmocka_unit_test(test_transfers_time_order),
		cmocka_unit_test(test_text_lines),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_data_names),
		cmocka_unit_test(test_damaged_counted),
		cmocka_unit_test(test_dump_info),
		cmocka_unit_test(test_cli),
		cmocka_unit_test(test_control_watch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
