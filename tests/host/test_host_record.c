/* SPDX-License-Identifier: MIT */
/*
 * test_host_record.c - the capture directory (host-tools/lib/capture.c) that
 * `tracevisor record` writes: trace.tvt chunks, raw PT files, meta.json,
 * losses.json/losses.txt, loss range bookkeeping.  The socket loop
 * itself is tested through the library by test_host_receiver.c and end
 * to end by tests/build/net-*.sh.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <dirent.h>

#include <cmocka.h>

#include "host-tools/lib/capture.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/le.h"
#include "host-tools/lib/record.h"
#include "host-tools/lib/tvt.h"
#include "net/recv.h"
#include "tests/host/helpers.h"
#include "tests/host/json_check.h"

static void hello_fill(struct tvp_hello *h, const char *machine)
{
	memset(h, 0, sizeof(*h));
	h->cpu_count = 2;
	h->source = TV_SOURCE_MTF;
	h->overflow = TV_OVERFLOW_OVERWRITE;
	h->vendor_id = TVP_VENDOR_INTEL;
	h->stepping = 4;
	h->family = 6;
	h->model = 0x55;
	h->caps = TVP_CAP_SOURCE(TV_SOURCE_MTF) | TVP_CAP_SOURCE(TV_SOURCE_PT) | TVP_CAP_CONTROL;
	h->tsc_hz = 2100000000ull;
	h->boot_tsc = 12345;
	h->ring_bytes = 1u << 20;
	h->unix_ns = 1700000000000000000ull;
	memcpy(h->vendor, "GenuineIntel", 12);
	strncpy(h->sw_version, "v0.1-test", sizeof(h->sw_version));
	strncpy(h->machine, machine, sizeof(h->machine));
}

static char *outdir(const char *name)
{
	return th_path(name);
}

static struct jval *parse_file(const char *dir, const char *name)
{
	char path[4200], err[128];
	size_t len;
	char *text;
	struct jval *v;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	text = th_read_file(path, &len);
	v = json_parse(text, len, err, sizeof(err));
	if (!v)
		fail_msg("%s: %s\n%s", name, err, text);
	free(text);
	return v;
}

static double num(const struct jval *o, const char *key)
{
	const struct jval *v = json_get(o, key);

	assert_non_null(v);
	assert_int_equal(v->t, J_NUM);
	return v->num;
}

static void test_dir_name(void **state)
{
	char buf[128];

	(void)state;
	assert_int_equal(cap_dir_name(buf, sizeof(buf), "lab-7", 5, 0x1122334455667788ull), 22);
	assert_string_equal(buf, "lab-7-1122334455667788");
	/* Slashes, dots in front, spaces and non-ASCII never make a path. */
	assert_true(cap_dir_name(buf, sizeof(buf), "../x y/\xc3\xa9", 9, 1) > 0);
	assert_string_equal(buf, "_._x_y___-0000000000000001");
	assert_true(cap_dir_name(buf, sizeof(buf), "", 0, 2) > 0);
	assert_string_equal(buf, "unknown-0000000000000002");
	assert_true(cap_dir_name(buf, sizeof(buf), NULL, 0, 3) > 0);
	assert_string_equal(buf, "unknown-0000000000000003");
	/* Too long names are cut at CAP_MACHINE_DIR. */
	{
		char m[100];

		memset(m, 'a', sizeof(m));
		assert_int_equal(cap_dir_name(buf, sizeof(buf), m, sizeof(m), 4),
				 CAP_MACHINE_DIR + 17);
	}
	assert_int_equal(cap_dir_name(buf, 10, "x", 1, 5), -TVH_ERR_INVALID);
}

/* Two CPUs, a gap, a loss, PT, a heartbeat: the file and the JSON say so exactly. */
static void test_capture_roundtrip(void **state)
{
	struct tvp_hello h;
	struct cap c;
	struct recbuf a = { 0 }, b = { 0 };
	struct tvp_hb_cpu hb;
	struct cap_range miss[1] = { { 40, 42 } };
	struct cap_stream_stats st = { .duplicates = 3, .retransmit_reqs = 2,
				       .nacked_records = 5, .datagrams = 9,
				       .missing = miss, .nmissing = 1 };
	char *out = outdir("rt");
	struct tvt_reader r;
	struct tvt_chunk ch;
	char path[4200];
	uint8_t pt[100];
	unsigned nrec = 0, npt = 0, nring = 0;
	struct jval *meta, *loss;
	const struct jval *cpus, *c0, *rng;
	struct stat sb;

	(void)state;
	hello_fill(&h, "lab 7");
	assert_int_equal(cap_open(&c, out, 0xabcdef0123456789ull, &h, "127.0.0.1:5000",
				  1700000001000000000ull), 0);
	assert_non_null(strstr(c.dir, "/lab_7-abcdef0123456789"));
	rb_branch(&a, TV_BR_CALL, 0x1000, 0x2000);
	rb_compact(&a, TV_BR_JCC, 0x10, 0x3000);
	rb_lost(&a, 7, 11);
	assert_int_equal(cap_stream_start(&c, 0, 0), 0);
	assert_int_equal(cap_records(&c, 0, 0, a.p, a.len, false, 0), 0);
	/* CPU 1 from 5; then 10..: a gap of 2 records (5+3 = 8, 8 and 9 lost). */
	assert_int_equal(cap_records(&c, 1, 5, a.p, a.len, false, 0), 0);
	assert_int_equal(cap_loss(&c, 1, 8, 2), 0);
	assert_int_equal(cap_loss(&c, 1, 8, 2), 0);     /* repeated notice: once */
	assert_int_equal(cap_records(&c, 1, 10, a.p, a.len, false, 0), 0);
	for (unsigned i = 0; i < sizeof(pt); i++)
		pt[i] = (uint8_t)i;
	assert_int_equal(cap_pt(&c, 1, 0, pt, 60), 0);
	assert_int_equal(cap_pt(&c, 1, 60, pt + 60, 40), 0);
	memset(&hb, 0, sizeof(hb));
	hb.cpu = 1;
	hb.produced = hb.head_seq = 13;
	hb.lost_overwrite = 2;
	hb.ring_dropped = 4;
	assert_int_equal(cap_heartbeat(&c, &hb), 0);
	assert_int_equal(cap_set_stream(&c, 1, &st), 0);
	/* meta.json exists while the capture is open, and says so. */
	meta = parse_file(c.dir, "meta.json");
	assert_true(json_get(meta, "complete")->t == J_BOOL && !json_get(meta, "complete")->b);
	json_free(meta);
	assert_int_equal(cap_close(&c, 1700000002000000000ull), 0);

	snprintf(path, sizeof(path), "%s/trace.tvt", c.dir);
	assert_int_equal(tvt_reader_open(&r, path), 0);
	assert_int_equal(r.info.session_id, 0xabcdef0123456789ull);
	assert_string_equal(r.info.machine, "lab 7");
	while (tvt_next_chunk(&r, &ch) == 1) {
		if (ch.kind == TVT_KIND_RECORDS) {
			/*
			 * cpu0 @0, cpu1 @5 then @10 (the gap splits the run);
			 * CPUs interleave in any order, each in stream order.
			 */
			static const uint64_t want1[] = { 5, 10 };
			static unsigned n1;

			if (nrec == 0)
				n1 = 0;
			assert_true(nrec < 3);
			if (ch.cpu == 0) {
				assert_int_equal(ch.first, 0);
				assert_int_equal(ch.flags, TVT_CHUNK_F_STREAM_START);
			} else {
				assert_int_equal(ch.cpu, 1);
				assert_true(n1 < 2);
				assert_int_equal(ch.first, want1[n1++]);
				assert_int_equal(ch.flags, 0);
			}
			assert_int_equal(ch.length, a.len);
			assert_memory_equal(ch.payload, a.p, a.len);
			nrec++;
		} else if (ch.kind == TVT_KIND_PT) {
			assert_int_equal(ch.cpu, 1);
			assert_int_equal(ch.first, npt ? 60 : 0);
			npt++;
		} else if (ch.kind == TVT_KIND_RING) {
			assert_int_equal(tvh_le32(ch.payload), TV_TRACE_MAGIC);
			assert_int_equal(tvh_le64(ch.payload + 24), 1u << 20);
			if (ch.cpu == 1) {
				/* from cpu1's heartbeat */
				assert_int_equal(tvh_le64(ch.payload + 56), 13);   /* next_seq */
				assert_int_equal(tvh_le64(ch.payload + 64), 4);    /* lost_records */
			} else {
				/* no heartbeat: HELLO + what arrived (records 0..2) */
				assert_int_equal(ch.cpu, 0);
				assert_int_equal(tvh_le64(ch.payload + 56), 3);
				assert_int_equal(tvh_le64(ch.payload + 64), 0);
			}
			nring++;
		}
	}
	assert_int_equal(nrec, 3);
	assert_int_equal(npt, 2);
	assert_int_equal(nring, 2);
	tvt_reader_close(&r);
	snprintf(path, sizeof(path), "%s/cpu1.pt", c.dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, 100);
	snprintf(path, sizeof(path), "%s/cpu0.pt", c.dir);
	assert_int_not_equal(stat(path, &sb), 0);

	meta = parse_file(c.dir, "meta.json");
	assert_string_equal(json_get_str(meta, "session_id"), "abcdef0123456789");
	assert_string_equal(json_get_str(meta, "machine"), "lab 7");
	assert_string_equal(json_get_str(json_get(meta, "cpu"), "vendor"), "GenuineIntel");
	assert_int_equal((int)num(json_get(meta, "cpu"), "model"), 0x55);
	assert_int_equal((int)num(json_get(meta, "cpu"), "family"), 6);
	assert_int_equal((int)num(json_get(meta, "cpu"), "stepping"), 4);
	assert_true(num(meta, "tsc_hz") == 2100000000.0);
	assert_int_equal((int)num(meta, "cpu_count"), 2);
	assert_int_equal((int)num(meta, "protocol_version"), 1);
	assert_string_equal(json_get_str(json_get(meta, "trace"), "source"), "mtf");
	assert_string_equal(json_get_str(json_get(meta, "trace"), "overflow"), "overwrite");
	rng = json_get(json_get(meta, "trace"), "capabilities");
	assert_int_equal(rng->len, 2);
	assert_string_equal(rng->items[0].str, "mtf");
	assert_string_equal(rng->items[1].str, "pt");
	assert_true(json_get(meta, "complete")->b);
	assert_string_equal(json_get_str(meta, "end_time"), "2023-11-14T22:13:22.000000000Z");
	assert_int_equal(json_get(meta, "buffers")->t, J_NULL);   /* no "buffers" record came */
	assert_string_equal(json_get(json_get(meta, "files"), "pt")->items[0].str, "cpu1.pt");
	json_free(meta);

	loss = parse_file(c.dir, "losses.json");
	assert_true(num(json_get(loss, "total"), "declared_lost") == 2);
	assert_true(num(json_get(loss, "total"), "records") == 9);
	cpus = json_get(loss, "cpus");
	assert_int_equal(cpus->len, 2);
	c0 = &cpus->items[1];
	assert_true(num(c0, "cpu") == 1);
	assert_true(num(c0, "records_received") == 6);
	assert_true(num(c0, "declared_lost") == 2);
	assert_true(num(c0, "duplicates") == 3);
	assert_true(num(c0, "retransmit_requests") == 2);
	assert_true(num(c0, "missing_at_close") == 2);
	assert_true(num(c0, "lost_records_in_stream") == 22);
	assert_true(num(c0, "pt_bytes") == 100);
	rng = json_get(c0, "declared_lost_ranges");
	assert_int_equal(rng->len, 1);
	assert_true(num(&rng->items[0], "first") == 8 && num(&rng->items[0], "count") == 2);
	assert_true(num(json_get(c0, "sender"), "lost_overwrite") == 2);
	assert_true(json_get(&cpus->items[0], "sender")->t == J_NULL);
	json_free(loss);
	{
		size_t len;
		char *txt;

		snprintf(path, sizeof(path), "%s/losses.txt", c.dir);
		txt = th_read_file(path, &len);
		assert_true(th_contains(txt, "lost (overwritten before ack): seq 8..9 (2)"));
		assert_true(th_contains(txt, "missing at close: seq 40..41 (2)"));
		free(txt);
	}
	cap_free(&c);
	rb_free(&a);
	rb_free(&b);
	free(out);
}

/* LOSS notices overlap, touch and repeat: each record counted once. */
static void test_loss_merge(void **state)
{
	struct cap c;
	char *out = outdir("merge");
	struct cap_cpu *p;

	(void)state;
	assert_int_equal(cap_open(&c, out, 7, NULL, NULL, 0), 0);
	assert_non_null(strstr(c.dir, "/unknown-0000000000000007"));
	assert_int_equal(cap_loss(&c, 3, 100, 10), 0);   /* 100..109 */
	assert_int_equal(cap_loss(&c, 3, 10, 5), 0);     /* 10..14 */
	assert_int_equal(cap_loss(&c, 3, 105, 10), 0);   /* overlaps: +5 */
	assert_int_equal(cap_loss(&c, 3, 15, 5), 0);     /* touches: merged */
	assert_int_equal(cap_loss(&c, 3, 50, 1), 0);
	assert_int_equal(cap_loss(&c, 3, 0, 200), 0);    /* swallows all */
	assert_int_equal(cap_loss(&c, 3, 300, 0), -TVH_ERR_INVALID);
	assert_int_equal(cap_loss(&c, TVP_MAX_CPUS, 1, 1), -TVH_ERR_INVALID);
	p = c.cpus[3];
	assert_non_null(p);
	assert_int_equal(p->nloss, 1);
	assert_int_equal(p->loss[0].first, 0);
	assert_int_equal(p->loss[0].end, 200);
	assert_int_equal(p->lost, 200);
	assert_int_equal(c.lost, 200);
	assert_int_equal(cap_loss(&c, 3, 400, 1), 0);
	assert_int_equal(cap_loss(&c, 3, 300, 1), 0);
	assert_int_equal(p->nloss, 3);
	assert_int_equal(p->loss[1].first, 300);
	assert_int_equal(p->lost, 202);
	assert_int_equal(cap_close(&c, 0), 0);
	cap_free(&c);
	free(out);
}

/* A compact branch after a gap becomes the full branch its base says. */
static void test_compact_expanded(void **state)
{
	struct cap c;
	struct recbuf a = { 0 }, e = { 0 };
	char *out = outdir("compact");
	char path[4200];
	struct tvt_reader r;
	struct tvt_chunk ch;
	unsigned n = 0;

	(void)state;
	rb_compact(&a, TV_BR_JCC, 0x10, 0x3000);
	rb_compact(&a, TV_BR_JMP, 0x4, 0x4000);
	/* Expected: the first one full (from = base 0x2000 + 0x10), the second kept. */
	rb_branch(&e, TV_BR_JCC, 0x2010, 0x3000);
	rb_compact(&e, TV_BR_JMP, 0x4, 0x4000);
	assert_int_equal(cap_open(&c, out, 8, NULL, NULL, 0), 0);
	assert_int_equal(cap_records(&c, 0, 20, a.p, a.len, true, 0x2000), 0);
	/* Continuing the run: the base is known, nothing changes. */
	assert_int_equal(cap_records(&c, 0, 22, a.p, a.len, true, 0x5000), 0);
	assert_int_equal(c.cpus[0]->expanded, 1);
	assert_int_equal(cap_close(&c, 0), 0);
	snprintf(path, sizeof(path), "%s/trace.tvt", c.dir);
	assert_int_equal(tvt_reader_open(&r, path), 0);
	while (tvt_next_chunk(&r, &ch) == 1) {
		assert_int_equal(ch.kind, TVT_KIND_RECORDS);
		assert_int_equal(ch.first, 20);
		assert_int_equal(ch.length, e.len + a.len);
		assert_memory_equal(ch.payload, e.p, e.len);
		assert_memory_equal(ch.payload + e.len, a.p, a.len);
		n++;
	}
	assert_int_equal(n, 1);
	tvt_reader_close(&r);
	cap_free(&c);
	rb_free(&a);
	rb_free(&e);
	free(out);
}

/* Payloads that are not whole records write nothing; the capture goes on. */
static void test_bad_records(void **state)
{
	struct cap c;
	struct recbuf a = { 0 };
	uint8_t bad[16];
	char *out = outdir("bad");

	(void)state;
	rb_branch(&a, TV_BR_CALL, 1, 2);
	assert_int_equal(cap_open(&c, out, 9, NULL, NULL, 0), 0);
	memset(bad, 0, sizeof(bad));
	tvh_put_le16(bad + 2, 12);                       /* not a multiple of 8 */
	assert_int_equal(cap_records(&c, 0, 0, bad, sizeof(bad), false, 0), -TVH_ERR_INVALID);
	tvh_put_le16(bad + 2, 24);                       /* runs past the end */
	assert_int_equal(cap_records(&c, 0, 0, bad, sizeof(bad), false, 0), -TVH_ERR_INVALID);
	assert_int_equal(cap_records(&c, 0, 0, a.p, a.len - 1, false, 0), -TVH_ERR_INVALID);
	assert_int_equal(cap_records(&c, TVP_MAX_CPUS, 0, a.p, a.len, false, 0), -TVH_ERR_INVALID);
	assert_null(c.cpus[0]);
	assert_int_equal(cap_records(&c, 0, 0, a.p, a.len, false, 0), 0);
	assert_int_equal(c.records, 1);
	assert_int_equal(cap_close(&c, 0), 0);
	assert_int_equal(cap_records(&c, 0, 1, a.p, a.len, false, 0), -TVH_ERR_INVALID);
	cap_free(&c);
	rb_free(&a);
	free(out);
}

/* The same session twice: a second directory, the first one untouched. */
static void test_dir_exists(void **state)
{
	struct cap c1, c2;
	char *out = outdir("twice");
	struct tvp_hello h;

	(void)state;
	hello_fill(&h, "m");
	assert_int_equal(cap_open(&c1, out, 10, &h, NULL, 0), 0);
	assert_int_equal(cap_open(&c2, out, 10, &h, NULL, 0), 0);
	assert_string_not_equal(c1.dir, c2.dir);
	assert_non_null(strstr(c2.dir, "/m-000000000000000a.1"));
	assert_int_equal(cap_close(&c1, 0), 0);
	assert_int_equal(cap_close(&c2, 0), 0);
	cap_free(&c1);
	cap_free(&c2);
	assert_int_equal(cap_open(&c1, "/proc/nonexistent/x", 11, &h, NULL, 0), -TVH_ERR_IO);
	free(out);
}

/* A large run is cut into CAP_RUN_BYTES chunks that follow each other. */
static void test_run_chunks(void **state)
{
	struct cap c;
	struct recbuf a = { 0 };
	char *out = outdir("runs");
	char path[4200];
	struct tvt_reader r;
	struct tvt_chunk ch;
	uint64_t next = 0, n = 0;

	(void)state;
	for (unsigned i = 0; i < 40; i++)
		rb_branch(&a, TV_BR_CALL, i, i + 1);
	assert_int_equal(cap_open(&c, out, 12, NULL, NULL, 0), 0);
	for (unsigned i = 0; i < 200; i++)
		assert_int_equal(cap_records(&c, 2, (uint64_t)i * 40, a.p, a.len, false, 0), 0);
	assert_int_equal(cap_close(&c, 0), 0);
	snprintf(path, sizeof(path), "%s/trace.tvt", c.dir);
	assert_int_equal(tvt_reader_open(&r, path), 0);
	while (tvt_next_chunk(&r, &ch) == 1) {
		assert_int_equal(ch.first, next);
		assert_true(ch.length <= CAP_RUN_BYTES + 24);
		next += ch.length / 24;
		n++;
	}
	assert_int_equal(next, 8000);
	assert_true(n >= 3);
	tvt_reader_close(&r);
	cap_free(&c);
	rb_free(&a);
	free(out);
}

/* Records before the HELLO wait in memory; the directory gets the machine's name. */
static void test_deferred_begin(void **state)
{
	struct cap c;
	struct recbuf a = { 0 };
	struct tvp_hello h;
	char *out = outdir("deferred");
	char path[4200];
	struct tvt_reader r;
	struct tvt_chunk ch;
	struct stat sb;
	unsigned n = 0;

	(void)state;
	rb_branch(&a, TV_BR_CALL, 1, 2);
	assert_int_equal(cap_init(&c, out, 0x77, "10.0.0.1:9", 5), 0);
	assert_int_equal(cap_stream_start(&c, 1, 40), 0);
	assert_int_equal(cap_records(&c, 1, 40, a.p, a.len, false, 0), 0);
	assert_int_equal(cap_flush(&c), 0);
	assert_int_equal(c.pending, a.len);
	assert_string_equal(c.dir, "");
	assert_int_not_equal(stat(out, &sb), 0);         /* nothing on disk yet */
	hello_fill(&h, "late");
	assert_int_equal(cap_set_hello(&c, &h), 0);
	assert_non_null(strstr(c.dir, "/late-0000000000000077"));
	assert_int_equal(cap_records(&c, 1, 41, a.p, a.len, false, 0), 0);
	assert_int_equal(cap_close(&c, 6), 0);
	snprintf(path, sizeof(path), "%s/trace.tvt", c.dir);
	assert_int_equal(tvt_reader_open(&r, path), 0);
	assert_string_equal(r.info.machine, "late");
	while (tvt_next_chunk(&r, &ch) == 1) {
		if (ch.kind == TVT_KIND_RING) {
			/* source and TSC rate from the late HELLO, next_seq from the data */
			assert_int_equal(tvh_le64(ch.payload + 56), 42);
			continue;
		}
		assert_int_equal(ch.first, 40);
		assert_int_equal(ch.flags, TVT_CHUNK_F_STREAM_START);
		assert_int_equal(ch.length, 2 * a.len);
		n++;
	}
	assert_int_equal(n, 1);
	tvt_reader_close(&r);
	cap_free(&c);
	/* Never a HELLO: cap_close still writes everything, as "unknown". */
	assert_int_equal(cap_init(&c, out, 0x78, NULL, 0), 0);
	assert_int_equal(cap_records(&c, 0, 0, a.p, a.len, false, 0), 0);
	assert_int_equal(cap_close(&c, 0), 0);
	assert_non_null(strstr(c.dir, "/unknown-0000000000000078"));
	snprintf(path, sizeof(path), "%s/losses.json", c.dir);
	assert_int_equal(stat(path, &sb), 0);
	cap_free(&c);
	rb_free(&a);
	free(out);
}

/* The receiver's option parsers (record.c). */
static void test_parse_addr(void **state)
{
	struct sockaddr_in a;

	(void)state;
	assert_int_equal(rec_parse_addr("127.0.0.1:7000", 6543, &a), 0);
	assert_int_equal(ntohl(a.sin_addr.s_addr), 0x7f000001);
	assert_int_equal(ntohs(a.sin_port), 7000);
	assert_int_equal(rec_parse_addr("10.1.2.3", 6543, &a), 0);
	assert_int_equal(ntohs(a.sin_port), 6543);
	assert_int_equal(rec_parse_addr(":9", 6543, &a), 0);
	assert_int_equal(a.sin_addr.s_addr, htonl(INADDR_ANY));
	assert_int_equal(ntohs(a.sin_port), 9);
	assert_int_equal(rec_parse_addr("8000", 6543, &a), 0);
	assert_int_equal(ntohs(a.sin_port), 8000);
	assert_int_equal(rec_parse_addr("localhost:1", 6543, &a), 0);
	assert_int_equal(ntohl(a.sin_addr.s_addr), 0x7f000001);
	assert_int_equal(rec_parse_addr("1.2.3.4:0", 6543, &a), -TVH_ERR_INVALID);
	assert_int_equal(rec_parse_addr("1.2.3.4:65536", 6543, &a), -TVH_ERR_INVALID);
	assert_int_equal(rec_parse_addr("1.2.3.4:", 6543, &a), -TVH_ERR_INVALID);
	assert_int_equal(rec_parse_addr("1.2.3:5", 6543, &a), -TVH_ERR_INVALID);
	assert_int_equal(rec_parse_addr("host.example:5", 6543, &a), -TVH_ERR_INVALID);
	assert_int_equal(rec_parse_addr("", 6543, &a), -TVH_ERR_INVALID);
}

static void test_parse_key(void **state)
{
	uint8_t key[REC_KEY_MAX];
	size_t len = 0;
	char big[2 * REC_KEY_MAX + 3];
	char *path;

	(void)state;
	assert_int_equal(rec_parse_key_hex("0x00ff10", key, &len), 0);
	assert_int_equal(len, 3);
	assert_int_equal(key[0], 0x00);
	assert_int_equal(key[1], 0xff);
	assert_int_equal(key[2], 0x10);
	assert_int_equal(rec_parse_key_hex(" aB cd\n", key, &len), 0);
	assert_int_equal(len, 2);
	assert_int_equal(key[0], 0xab);
	assert_int_equal(rec_parse_key_hex("abc", key, &len), -TVH_ERR_INVALID);   /* odd */
	assert_int_equal(rec_parse_key_hex("zz", key, &len), -TVH_ERR_INVALID);
	assert_int_equal(rec_parse_key_hex("", key, &len), -TVH_ERR_INVALID);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(rec_parse_key_hex(big + 2, key, &len), 0);              /* 256 bytes */
	assert_int_equal(len, REC_KEY_MAX);
	assert_int_equal(rec_parse_key_hex(big, key, &len), -TVH_ERR_INVALID);     /* 257 */
	/* A key file: hex text is decoded, anything else is raw bytes. */
	path = th_path("hex.key");
	th_write_file(path, "0102 0304\n", 10);
	assert_int_equal(rec_load_key(path, key, &len), 0);
	assert_int_equal(len, 4);
	assert_int_equal(key[3], 4);
	th_write_file(path, "secret!", 7);
	assert_int_equal(rec_load_key(path, key, &len), 0);
	assert_int_equal(len, 7);
	assert_memory_equal(key, "secret!", 7);
	th_write_file(path, "", 0);
	assert_int_equal(rec_load_key(path, key, &len), -TVH_ERR_INVALID);
	free(path);
	assert_int_equal(rec_load_key("/nonexistent/key", key, &len), -TVH_ERR_IO);
}

static void test_parse_cpus(void **state)
{
	uint64_t m[16];

	(void)state;
	assert_int_equal(rec_parse_cpus("0-3,8,1023", m), 0);
	assert_int_equal(m[0], 0x10full);
	assert_int_equal(m[15], 1ull << 63);
	for (int i = 1; i < 15; i++)
		assert_int_equal(m[i], 0);
	assert_int_equal(rec_parse_cpus("all", m), 0);
	assert_int_equal(m[7], UINT64_MAX);
	assert_int_equal(rec_parse_cpus("64", m), 0);
	assert_int_equal(m[0], 0);
	assert_int_equal(m[1], 1);
	assert_int_equal(rec_parse_cpus("1024", m), -TVH_ERR_INVALID);
	assert_int_equal(rec_parse_cpus("3-1", m), -TVH_ERR_INVALID);
	assert_int_equal(rec_parse_cpus("1,", m), -TVH_ERR_INVALID);
	assert_int_equal(rec_parse_cpus("x", m), -TVH_ERR_INVALID);
	assert_int_equal(rec_parse_cpus("", m), -TVH_ERR_INVALID);
}

static void test_human(void **state)
{
	char b[16];

	(void)state;
	rec_human(b, sizeof(b), 999);
	assert_string_equal(b, "999");
	rec_human(b, sizeof(b), 1234);
	assert_string_equal(b, "1.2k");
	rec_human(b, sizeof(b), 45600000);
	assert_string_equal(b, "45.6M");
}

/*
 * PT over the network as `tracevisor record` wires it: net/recv.c's ops.pt
 * into cap_pt.  PT datagrams arrive out of order, twice, and the stream's
 * FIRST last; cpuN.pt and trace.tvt's PT chunks get the bytes once, in
 * stream order, with no gap; a gap still open at close is one (losses.json
 * pt_gap_bytes) and the bytes after it follow.
 */
struct pt_rx {
	struct cap *cap;
	uint64_t missing;
};

static void ptrx_pt(void *ctx, uint64_t session, uint32_t cpu, uint64_t offset,
		    const uint8_t *bytes, size_t len)
{
	struct pt_rx *x = ctx;

	(void)session;
	assert_int_equal(cap_pt(x->cap, cpu, offset, bytes, len), 0);
}

static void ptrx_missing(void *ctx, uint64_t session, uint32_t cpu, uint64_t offset,
			 uint64_t count)
{
	struct pt_rx *x = ctx;

	(void)session;
	(void)cpu;
	(void)offset;
	x->missing += count;
}

static uint8_t ptpat(uint64_t o)
{
	return (uint8_t)(o * 13 + o / 256);
}

static int ptrx_feed(struct receiver *rx, uint64_t off, size_t len, uint16_t flags)
{
	uint8_t bytes[TVP_PT_MAX_PAYLOAD], dg[TVP_MAX_DATAGRAM];
	int n;

	for (size_t i = 0; i < len; i++)
		bytes[i] = ptpat(off + i);
	n = proto_encode_pt_flags(dg, sizeof(dg), 0x77, 2, flags, off, bytes, len);
	assert_true(n > 0);
	return recv_feed(rx, dg, (size_t)n, 1);
}

static void test_pt_stream_in_order(void **state)
{
	static const uint64_t order[] = { 3, 1, 4, 1, 5, 2, 6, 0, 3, 7 };
	struct recv_ops ops = { .pt = ptrx_pt, .pt_missing = ptrx_missing };
	struct receiver *rx = calloc(1, sizeof(*rx));
	struct tvp_hello h;
	struct cap c;
	struct pt_rx x = { &c, 0 };
	char *out = outdir("ptrx");
	char path[4200];
	uint8_t *file, *want;
	size_t flen;
	struct jval *loss;
	const struct jval *c2;

	(void)state;
	assert_non_null(rx);
	recv_init(rx, &ops, &x, 0);
	hello_fill(&h, "pt box");
	h.cpu_count = 3;
	h.source = TV_SOURCE_PT;
	h.caps |= TVP_CAP_PT_STREAM;
	assert_int_equal(cap_open(&c, out, 0x77, &h, "127.0.0.1:5000", 1700000001000000000ull), 0);
	/* Eight datagrams of 1000 bytes from offset 4096, 0 (FIRST) late. */
	for (unsigned i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		assert_int_equal(ptrx_feed(rx, 4096 + order[i] * 1000, 1000,
					   order[i] == 0 ? TVP_PT_F_FIRST : 0), 0);
	assert_int_equal(recv_session_get(rx, 0x77)->pt[2].records, 8000);
	assert_int_equal(recv_session_get(rx, 0x77)->pt[2].dups, 2);   /* 1 held, 3 delivered */
	/* Then a datagram after a gap of 500 bytes that never comes. */
	assert_int_equal(ptrx_feed(rx, 4096 + 8500, 700, 0), 0);
	assert_int_equal(recv_close(rx, 0x77), 0);
	assert_int_equal(x.missing, 500);
	assert_int_equal(cap_close(&c, 1700000002000000000ull), 0);

	snprintf(path, sizeof(path), "%s/cpu2.pt", c.dir);
	file = (uint8_t *)th_read_file(path, &flen);
	assert_int_equal(flen, 8700);
	want = malloc(8700);
	assert_non_null(want);
	for (uint64_t i = 0; i < 8700; i++)
		want[i] = ptpat(4096 + (i < 8000 ? i : i + 500));
	assert_memory_equal(file, want, 8700);
	loss = parse_file(c.dir, "losses.json");
	c2 = &json_get(loss, "cpus")->items[0];
	assert_true(num(c2, "cpu") == 2);
	assert_true(num(c2, "pt_bytes") == 8700);
	assert_true(num(c2, "pt_gap_bytes") == 500);
	json_free(loss);
	free(file);
	free(want);
	cap_free(&c);
	free(rx);
	free(out);
}

static void ptrx_hello(void *ctx, uint64_t session, uint64_t addr, const struct tvp_hello *h)
{
	struct pt_rx *x = ctx;

	(void)session;
	(void)addr;
	assert_int_equal(cap_set_hello(x->cap, h), 0);
}

/* Entries of directory dir, "." and ".." left out. */
static unsigned dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/*
 * PT bytes before the HELLO (the HELLO lost once on a lossy link): the PT
 * stream starts the capture as unknown-<session>, and the HELLO, when it
 * comes, renames the directory with the open files in it; PT bytes and
 * CPUs after it land there too.  Through recv.c, as record.c wires it.
 */
static void test_pt_before_hello(void **state)
{
	struct recv_ops ops = { .pt = ptrx_pt, .pt_missing = ptrx_missing, .hello = ptrx_hello };
	struct receiver *rx = calloc(1, sizeof(*rx));
	struct tvp_hello h, other;
	struct cap c;
	struct pt_rx x = { &c, 0 };
	char *out = outdir("ptfirst");
	char path[4200], first[CAP_DIR_MAX];
	uint8_t dg[TVP_MAX_DATAGRAM], *file, want[3000];
	size_t flen;
	struct stat sb;
	struct jval *meta;
	const struct jval *pt;
	struct tvt_reader r;
	struct tvt_chunk ch;
	uint64_t pt_at = 0;
	unsigned chunks = 0;
	int n;

	(void)state;
	assert_non_null(rx);
	recv_init(rx, &ops, &x, 0);
	assert_int_equal(cap_init(&c, out, 0x77, "10.0.0.2:7", 5), 0);
	/* Two PT datagrams of CPU 2, FIRST at 0: delivered, the capture begins. */
	assert_int_equal(ptrx_feed(rx, 0, 1000, TVP_PT_F_FIRST), 0);
	assert_int_equal(ptrx_feed(rx, 1000, 1000, 0), 0);
	assert_non_null(strstr(c.dir, "/unknown-0000000000000077"));
	assert_false(c.have_hello);
	snprintf(first, sizeof(first), "%s", c.dir);
	snprintf(path, sizeof(path), "%s/cpu2.pt", first);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, 2000);
	/* The HELLO: the same directory, now with the machine's name. */
	hello_fill(&h, "pt box");
	h.cpu_count = 4;
	h.source = TV_SOURCE_PT;
	h.caps |= TVP_CAP_PT_STREAM;
	n = proto_encode_hello(dg, sizeof(dg), 0x77, &h);
	assert_true(n > 0);
	assert_int_equal(recv_feed(rx, dg, (size_t)n, 1), 0);
	assert_true(c.have_hello);
	assert_non_null(strstr(c.dir, "/pt_box-0000000000000077"));
	assert_int_not_equal(stat(first, &sb), 0);          /* moved, not copied */
	assert_int_equal(dir_entries(out), 1);
	/* A later HELLO with another name changes nothing. */
	hello_fill(&other, "other");
	assert_int_equal(cap_set_hello(&c, &other), 0);
	assert_non_null(strstr(c.dir, "/pt_box-0000000000000077"));
	assert_int_equal(cap_set_hello(&c, &h), 0);
	/* More of CPU 2 (its file was open across the rename), a new CPU. */
	assert_int_equal(ptrx_feed(rx, 2000, 1000, 0), 0);
	assert_int_equal(cap_pt(&c, 3, 500, "abc", 3), 0);
	assert_int_equal(recv_close(rx, 0x77), 0);
	assert_int_equal(x.missing, 0);
	assert_int_equal(cap_close(&c, 6), 0);
	assert_int_equal(dir_entries(out), 1);

	snprintf(path, sizeof(path), "%s/cpu2.pt", c.dir);
	file = th_read_file(path, &flen);
	assert_int_equal(flen, 3000);
	for (uint64_t i = 0; i < 3000; i++)
		want[i] = ptpat(i);
	assert_memory_equal(file, want, 3000);
	free(file);
	snprintf(path, sizeof(path), "%s/cpu3.pt", c.dir);
	file = th_read_file(path, &flen);
	assert_int_equal(flen, 3);
	free(file);
	meta = parse_file(c.dir, "meta.json");
	assert_string_equal(json_get(meta, "machine")->str, "pt box");
	assert_true(json_get(meta, "hello_received")->b);
	assert_true(json_get(meta, "complete")->b);
	pt = json_get(json_get(meta, "files"), "pt");
	assert_int_equal(pt->len, 2);
	assert_string_equal(pt->items[0].str, "cpu2.pt");
	assert_string_equal(pt->items[1].str, "cpu3.pt");
	json_free(meta);
	snprintf(path, sizeof(path), "%s/losses.json", c.dir);
	assert_int_equal(stat(path, &sb), 0);
	/* trace.tvt: every PT chunk at its offset; its header was written unnamed. */
	snprintf(path, sizeof(path), "%s/trace.tvt", c.dir);
	assert_int_equal(tvt_reader_open(&r, path), 0);
	assert_string_equal(r.info.machine, "");
	while (tvt_next_chunk(&r, &ch) == 1) {
		if (ch.kind != TVT_KIND_PT || ch.cpu != 2)
			continue;
		assert_int_equal(ch.first, pt_at);
		pt_at += ch.length;
		chunks++;
	}
	assert_int_equal(pt_at, 3000);
	assert_int_equal(chunks, 3);
	tvt_reader_close(&r);
	cap_free(&c);
	free(rx);
	free(out);
}

/* The renamed-to name is taken: ".1" like a new capture, the other one untouched. */
static void test_pt_before_hello_name_taken(void **state)
{
	struct cap c;
	struct tvp_hello h;
	char *out = outdir("pttaken");
	char path[4200];
	struct stat sb;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/m-0000000000000079", out);
	assert_int_equal(mkdir(out, 0755), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/m-0000000000000079/keep", out);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(cap_init(&c, out, 0x79, NULL, 0), 0);
	assert_int_equal(cap_pt(&c, 0, 0, "xyz", 3), 0);
	assert_non_null(strstr(c.dir, "/unknown-0000000000000079"));
	hello_fill(&h, "m");
	assert_int_equal(cap_set_hello(&c, &h), 0);
	assert_non_null(strstr(c.dir, "/m-0000000000000079.1"));
	assert_int_equal(cap_close(&c, 0), 0);
	assert_int_equal(stat(path, &sb), 0);               /* the other one's file */
	snprintf(path, sizeof(path), "%s/m-0000000000000079/cpu0.pt", out);
	assert_int_not_equal(stat(path, &sb), 0);
	snprintf(path, sizeof(path), "%s/cpu0.pt", c.dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, 3);
	assert_int_equal(dir_entries(out), 2);
	cap_free(&c);
	/* A HELLO without a name: unknown-<session> stays. */
	assert_int_equal(cap_init(&c, out, 0x7a, NULL, 0), 0);
	assert_int_equal(cap_pt(&c, 0, 0, "xyz", 3), 0);
	hello_fill(&h, "");
	assert_int_equal(cap_set_hello(&c, &h), 0);
	assert_non_null(strstr(c.dir, "/unknown-000000000000007a"));
	assert_null(strstr(c.dir, ".1"));
	assert_int_equal(cap_close(&c, 0), 0);
	cap_free(&c);
	free(out);
}

/*
 * The machine's buffer sizes (its CONFIG "buffers" record, docs/CAPTURE.md):
 * meta.json "buffers" from the first one, written at once (the capture
 * is still open), also before the HELLO; other CONFIG text is not it.
 */
static void test_meta_buffers(void **state)
{
	static const char line[] = "buffers ring_bytes=67108736 stream_bytes=268435456 output_bytes=67108864 output_regions=16 output_region_bytes=4194304 drain_us=256000";
	static const char other[] = "buffers ring_bytes=1 stream_bytes=2";
	struct cap c;
	struct recbuf a = { 0 };
	char *out = outdir("bufs");
	struct jval *meta;
	const struct jval *b;

	(void)state;
	assert_int_equal(cap_open(&c, out, 0x1234ull, NULL, "127.0.0.1:5000",
				  1700000001000000000ull), 0);
	rb_text(&a, TV_REC_CONFIG, 0, 5, "mode=pt", 7);
	rb_text(&a, TV_REC_CONFIG, 0, 6, line, sizeof(line) - 1);
	rb_branch(&a, TV_BR_CALL, 0x1000, 0x2000);
	rb_text(&a, TV_REC_CONFIG, 0, 7, other, sizeof(other) - 1);   /* a later one: ignored */
	assert_int_equal(cap_stream_start(&c, 1, 0), 0);
	assert_int_equal(cap_records(&c, 1, 0, a.p, a.len, false, 0), 0);
	assert_int_equal(cap_begin(&c), 0);
	meta = parse_file(c.dir, "meta.json");
	b = json_get(meta, "buffers");
	assert_non_null(b);
	assert_int_equal(b->t, J_OBJ);
	assert_true(num(b, "ring_bytes") == 67108736.0);
	assert_true(num(b, "stream_bytes") == 268435456.0);
	assert_true(num(b, "output_bytes") == 67108864.0);
	assert_true(num(b, "output_regions") == 16.0);
	assert_true(num(b, "output_region_bytes") == 4194304.0);
	assert_true(num(b, "drain_us") == 256000.0);
	assert_false(json_get(meta, "complete")->b);
	json_free(meta);
	assert_int_equal(cap_close(&c, 1700000002000000000ull), 0);
	meta = parse_file(c.dir, "meta.json");
	assert_true(num(json_get(meta, "buffers"), "stream_bytes") == 268435456.0);
	json_free(meta);
	cap_free(&c);
	rb_free(&a);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dir_name),
		cmocka_unit_test(test_capture_roundtrip),
		cmocka_unit_test(test_meta_buffers),
		cmocka_unit_test(test_loss_merge),
		cmocka_unit_test(test_compact_expanded),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_dir_exists),
		cmocka_unit_test(test_run_chunks),
		cmocka_unit_test(test_deferred_begin),
		cmocka_unit_test(test_parse_addr),
		cmocka_unit_test(test_parse_key),
		cmocka_unit_test(test_parse_cpus),
		cmocka_unit_test(test_human),
		cmocka_unit_test(test_pt_stream_in_order),
		cmocka_unit_test(test_pt_before_hello),
		cmocka_unit_test(test_pt_before_hello_name_taken),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
