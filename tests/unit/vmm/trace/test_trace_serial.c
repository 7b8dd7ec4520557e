/* SPDX-License-Identifier: MIT */
/*
 * test_trace_serial.c - the serial trace transport (vmm/trace/serial_enc.c):
 * golden lines computed independently (Python zlib/base64), the CRC check
 * value, ring -> lines -> records round trips byte for byte (records, big
 * records in F pieces, header snapshot, E counts), line length bounds and
 * record boundaries, byte budgets across calls, resynchronisation after
 * OVERWRITE, the ring left untouched, argument errors, PT lines, and the
 * parser against noise, truncation, damage and out-of-range fields.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/trace/format.h"
#include "vmm/trace/read.h"
#include "vmm/trace/ring.h"
#include "vmm/trace/serial_enc.h"

#define HDR 128u
#define DS  4096u
#define CPU 3u

static uint64_t arena[(HDR + DS) / 8];
#define RING ((struct tv_trace_ring *)arena)

/* --- a sink that keeps everything and checks every write is one line ------- */

struct sink {
	char *text;
	size_t len, cap;
	unsigned writes;
	size_t longest;
};

static struct sink out;
static struct trace_serial ts;

static void sink_write(void *ctx, const char *s, size_t n)
{
	struct sink *k = ctx;

	assert_true(n > 0 && n <= TRACE_SERIAL_LINE_MAX);
	assert_int_equal(s[n - 1], '\n');
	assert_null(memchr(s, '\n', n - 1));
	if (k->len + n + 1 > k->cap) {
		k->cap = (k->len + n + 1) * 2;
		k->text = realloc(k->text, k->cap);
		assert_non_null(k->text);
	}
	memcpy(k->text + k->len, s, n);
	k->len += n;
	k->text[k->len] = 0;
	k->writes++;
	if (n > k->longest)
		k->longest = n;
}

static int setup(void **state)
{
	(void)state;
	memset(arena, 0xee, sizeof(arena));
	assert_int_equal(trace_ring_init(RING, sizeof(arena), CPU, 7, TV_SOURCE_MTF,
					 TV_OVERFLOW_STOP, 1000, 5), 0);
	memset(&out, 0, sizeof(out));
	trace_serial_init(&ts, CPU, sink_write, &out);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(out.text);
	memset(&out, 0, sizeof(out));
	return 0;
}

/* --- a receiver: the lines back into a record stream ------------------------- */

struct rx {
	uint8_t rec[64 * 1024];  /* records, linear */
	size_t rec_len;
	uint64_t first_seq, next_seq;
	bool have_seq;
	uint64_t records;
	uint8_t hdr[HDR];
	unsigned hdr_parts;
	uint64_t next_chunk;
	uint8_t big[TV_REC_MAX_SIZE];
	size_t big_len;
	uint64_t big_seq;
	unsigned ends;
	uint64_t end_first;      /* `first` of the last E line */
	struct trace_serial_end end;
	unsigned lines, r_lines, f_lines, p_lines;
	uint64_t prev_to;        /* `to` of the last branch appended */
	bool have_prev;
	unsigned based;          /* R lines that led with a base */
};

static void rx_append(struct rx *x, uint64_t seq, const uint8_t *p, size_t n)
{
	if (!x->have_seq) {
		x->first_seq = x->next_seq = seq;
		x->have_seq = true;
	}
	assert_int_equal(seq, x->next_seq);
	assert_true(x->rec_len + n <= sizeof(x->rec));
	memcpy(x->rec + x->rec_len, p, n);
	x->rec_len += n;
	/* Whole records only: count them by their headers. */
	for (size_t o = 0; o < n;) {
		uint16_t sz = (uint16_t)(p[o + 2] | (p[o + 3] << 8));

		assert_true(sz >= 8 && (sz & 7) == 0 && o + sz <= n);
		if (p[o] == TV_REC_BRANCH || p[o] == TV_REC_BRANCH_COMPACT) {
			memcpy(&x->prev_to, p + o + (p[o] == TV_REC_BRANCH ? 16 : 8), 8);
			x->have_prev = true;
		}
		o += sz;
		x->next_seq++;
		x->records++;
	}
}

/* Every line of out.text, in order; all must parse and chain. */
static void rx_run(struct rx *x, const char *text, size_t len)
{
	const char *s = text, *end = text + len;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		struct trace_serial_line l;
		size_t n = nl ? (size_t)(nl - s) + 1 : (size_t)(end - s);

		assert_int_equal(trace_serial_parse(s, n, &l), 0);
		assert_int_equal(l.cpu, CPU);
		assert_int_equal(l.chunk, x->next_chunk);
		x->next_chunk++;
		x->lines++;
		switch (l.kind) {
		case TRACE_SERIAL_HEADER:
			memcpy(x->hdr + l.off, l.payload, l.len);
			x->hdr_parts++;
			break;
		case TRACE_SERIAL_RECORDS:
			assert_true(l.len <= TRACE_SERIAL_PAYLOAD_MAX);
			if (l.off == 8) {
				/* The base of the compact branch that opens the line. */
				assert_int_equal(l.payload[8], TV_REC_BRANCH_COMPACT);
				assert_true(x->have_prev);
				assert_memory_equal(l.payload, &x->prev_to, 8);
				x->based++;
			}
			rx_append(x, l.first, l.payload + l.off, l.len - l.off);
			x->r_lines++;
			break;
		case TRACE_SERIAL_FRAGMENT:
			if (l.off == 0) {
				x->big_len = 0;
				x->big_seq = l.first;
			}
			assert_int_equal(l.off, x->big_len);
			assert_int_equal(l.first, x->big_seq);
			memcpy(x->big + x->big_len, l.payload, l.len);
			x->big_len += l.len;
			if (x->big_len == (size_t)(x->big[2] | (x->big[3] << 8)))
				rx_append(x, x->big_seq, x->big, x->big_len);
			x->f_lines++;
			break;
		case TRACE_SERIAL_PT:
			x->p_lines++;
			break;
		case TRACE_SERIAL_END:
			trace_serial_decode_end(&l, &x->end);
			x->end_first = l.first;
			x->ends++;
			break;
		default:
			fail_msg("unknown kind %c", l.kind);
		}
		s += n;
	}
}

/* All records the ring holds from its tail, linear. */
static size_t ring_all(uint8_t *buf, size_t cap, uint64_t *first_seq)
{
	struct trace_cursor c;
	size_t len = 0, n;

	assert_int_equal(trace_ring_cursor_tail(RING, &c), 0);
	*first_seq = c.seq;
	for (;;) {
		assert_int_equal(trace_ring_peek(RING, &c, buf + len, cap - len, &n), 0);
		if (!n)
			return len;
		len += n;
	}
}

static void fill_mixed(unsigned rounds)
{
	char text[300];

	memset(text, 'x', sizeof(text));
	for (unsigned i = 0; i < rounds; i++) {
		uint64_t base = 0x400000 + i * 0x100;

		assert_int_equal(trace_append_branch(RING, base, base + 0x40, TV_BR_CALL,
						     TV_BRF_TSC, 100 + i), 0);
		assert_int_equal(trace_append_branch(RING, base + 0x48, base + 0x80,
						     TV_BR_JCC, 0, 0), 0);
		assert_int_equal(trace_append_branch(RING, base + 0x90, base + 0xa0,
						     TV_BR_RET, 0, 0), 0);
		assert_int_equal(trace_append_cr3(RING, 200 + i, 0x1000 * i, base), 0);
		if (i % 3 == 0)
			assert_int_equal(trace_append_log(RING, 300 + i, 2, text,
							  100 + i * 40 % 200), 0);
		if (i % 4 == 1)
			assert_int_equal(trace_append_marker(RING, 400 + i, i, "m", 1), 0);
	}
}

/* --- golden lines and the CRC ------------------------------------------------- */

static void test_crc_check_value(void **state)
{
	(void)state;
	assert_int_equal(trace_serial_crc32(0, "123456789", 9), 0xcbf43926u);
	assert_int_equal(trace_serial_crc32(0, NULL, 0), 0);
	/* Incremental equals one pass. */
	assert_int_equal(trace_serial_crc32(trace_serial_crc32(0, "1234", 4), "56789", 5),
			 0xcbf43926u);
}

static void test_golden_records_line(void **state)
{
	/* Python: struct.pack('<cIQQHH', ...) + payload, zlib.crc32, b64encode. */
	static const char want[] =
		"TVT1 3 1f R 10 0 AQQYAAAAAAAAEAAAAAAAAAAgAAAAAAAA d185309e\n";
	struct trace_serial_line l;
	struct trace_cursor c;

	(void)state;
	/* Sixteen records so that the branch under test is seq 0x10. */
	for (unsigned i = 0; i < 16; i++)
		assert_int_equal(trace_append_marker(RING, i, i, NULL, 0), 0);
	assert_int_equal(trace_append_branch(RING, 0x1000, 0x2000, TV_BR_CALL, 0, 0), 0);
	assert_int_equal(trace_ring_cursor_tail(RING, &c), 0);
	/* Skip the sixteen markers (24 bytes each) with a peek. */
	{
		uint8_t b[16 * 24];
		size_t n;

		assert_int_equal(trace_ring_peek(RING, &c, b, sizeof(b), &n), 0);
		assert_int_equal(n, sizeof(b));
		assert_int_equal(c.seq, 16);
	}
	ts.chunk = 0x1d;   /* two H lines come first: the R line is chunk 0x1f */
	assert_int_equal(trace_serial_emit_ring(&ts, RING, &c, 0, NULL), 1);
	assert_non_null(strstr(out.text, want));
	assert_int_equal(trace_serial_parse(want, sizeof(want) - 1, &l), 0);
	assert_int_equal(l.cpu, 3);
	assert_int_equal(l.chunk, 0x1f);
	assert_int_equal(l.kind, 'R');
	assert_int_equal(l.first, 0x10);
	assert_int_equal(l.len, 24);
}

static void test_golden_pt_line(void **state)
{
	static const char want[] = "TVT1 0 0 P abc 0 AQI= 83be9648\n";
	static const uint8_t pt[2] = { 1, 2 };
	struct trace_serial t0;

	(void)state;
	trace_serial_init(&t0, 0, sink_write, &out);
	assert_int_equal(trace_serial_emit_pt(&t0, pt, sizeof(pt), 0xabc, 0), 2);
	assert_string_equal(out.text, want);
	assert_int_equal(t0.chunk, 1);
}

/* --- round trips ------------------------------------------------------------- */

static struct rx x;

static void test_round_trip_all(void **state)
{
	static uint8_t want[DS];
	struct trace_serial_result res;
	struct trace_cursor c;
	uint64_t first;
	size_t wlen;
	uint8_t before[HDR + DS];

	(void)state;
	fill_mixed(24);
	wlen = ring_all(want, sizeof(want), &first);
	assert_int_equal(first, 0);
	memcpy(before, arena, sizeof(before));

	assert_int_equal(trace_ring_cursor_tail(RING, &c), 0);
	assert_int_equal(trace_serial_emit_ring(&ts, RING, &c, 0, &res),
			 (int64_t)RING->next_seq);
	assert_memory_equal(before, arena, sizeof(before));   /* ring untouched */
	assert_int_equal(c.seq, RING->next_seq);
	assert_int_equal(c.pos, RING->head);
	assert_false(res.more);
	assert_int_equal(res.missed, 0);
	assert_int_equal(res.lines, out.writes);
	assert_int_equal(res.bytes, out.len);
	assert_true(out.longest <= TRACE_SERIAL_LINE_MAX);

	memset(&x, 0, sizeof(x));
	rx_run(&x, out.text, out.len);
	assert_int_equal(x.hdr_parts, 2);
	assert_memory_equal(x.hdr, before, HDR);
	assert_int_equal(x.records, RING->next_seq);
	assert_int_equal(x.rec_len, wlen);
	assert_memory_equal(x.rec, want, wlen);
	assert_true(x.f_lines > 0);       /* the long LOG records went in pieces */
	assert_int_equal(x.ends, 1);
	assert_int_equal(x.end.records, RING->next_seq);
	assert_int_equal(x.end.first_seq, 0);
	assert_int_equal(x.end.next_seq, RING->next_seq);
	assert_int_equal(x.end.missed, 0);
	assert_int_equal(x.end_first, RING->next_seq);
	assert_int_equal(x.lines, 2 + x.r_lines + x.f_lines + 1);
	assert_int_equal(ts.chunk, x.lines);

	/* The records decode cleanly: lines cut only at record boundaries. */
	{
		struct trace_reader rd;
		struct trace_event ev;
		int ret;

		trace_reader_init(&rd);
		trace_reader_feed(&rd, x.rec, x.rec_len, 0, false);
		while ((ret = trace_reader_next(&rd, &ev)) != 0)
			assert_int_equal(ret, 1);
		assert_int_equal(rd.stats.records, RING->next_seq);
		assert_int_equal(rd.stats.bad_records, 0);
	}

	/* Nothing new: H, H, E and no records; the chunk counter goes on. */
	out.len = 0;
	out.writes = 0;
	assert_int_equal(trace_serial_emit_ring(&ts, RING, &c, 0, &res), 0);
	assert_int_equal(res.lines, 3);
	assert_int_equal(out.writes, 3);
}

/*
 * Long compact chains (what MTF writes): lines that open with a compact
 * branch lead with its base, so each line decodes on its own.
 */
static void test_compact_base(void **state)
{
	static uint8_t want[DS];
	struct trace_serial_result res;
	struct trace_cursor c;
	uint64_t first, to = 0x10000;
	size_t wlen;
	const char *s;
	unsigned lines = 0;

	(void)state;
	for (unsigned i = 0; i < 150; i++) {
		assert_int_equal(trace_append_branch(RING, to + 5, to + 0x40, TV_BR_JCC, 0, 0), 0);
		to += 0x40;
	}
	wlen = ring_all(want, sizeof(want), &first);
	assert_int_equal(trace_ring_cursor_tail(RING, &c), 0);
	/* Two calls: the base carries over from one to the next. */
	{
		int64_t n = trace_serial_emit_ring(&ts, RING, &c, 1200, &res);

		if (n <= 0)
			fail_msg("emit: %lld lines %llu", (long long)n, (unsigned long long)res.lines);
	}
	assert_true(res.more);
	assert_true(trace_serial_emit_ring(&ts, RING, &c, 0, &res) > 0);
	assert_false(res.more);
	memset(&x, 0, sizeof(x));
	rx_run(&x, out.text, out.len);
	assert_int_equal(x.rec_len, wlen);
	assert_memory_equal(x.rec, want, wlen);
	assert_true(x.based > x.r_lines / 2);   /* not those opening with a full one */
	/* Each R line decodes alone: its first branch has its `from`. */
	for (s = out.text; (s = strstr(s, " R ")) != NULL; s++) {
		const char *bol = s, *nl = strchr(s, '\n');
		struct trace_serial_line l;
		struct trace_reader rd;
		struct trace_event ev;

		while (bol > out.text && bol[-1] != '\n')
			bol--;
		assert_int_equal(trace_serial_parse(bol, (size_t)(nl - bol + 1), &l), 0);
		if (l.off == 0) {
			/* Only a full branch opens a line without a base. */
			assert_int_equal(l.payload[0], TV_REC_BRANCH);
			continue;
		}
		trace_reader_init(&rd);
		trace_reader_feed(&rd, l.payload + 8, l.len - 8, l.first, false);
		assert_int_equal(trace_reader_next(&rd, &ev), TRACE_ERR_NO_PREV);
		assert_int_equal(ev.u.branch.to - 0x40 + 5,
				 (uint64_t)(l.payload[0] | l.payload[1] << 8 | l.payload[2] << 16) + 5);
		lines++;
	}
	assert_true(lines > 10);
}

/* A small budget: several calls, each within its budget, same bytes overall. */
static void test_budget_across_calls(void **state)
{
	static uint8_t want[DS];
	struct trace_serial_result res;
	struct trace_cursor c;
	uint64_t first;
	size_t wlen;
	unsigned calls = 0;
	const size_t budget = 900;

	(void)state;
	fill_mixed(24);
	wlen = ring_all(want, sizeof(want), &first);
	assert_int_equal(trace_ring_cursor_tail(RING, &c), 0);
	memset(&x, 0, sizeof(x));
	do {
		size_t mark = out.len;
		int64_t n = trace_serial_emit_ring(&ts, RING, &c, budget, &res);

		assert_true(n >= 0);
		assert_int_equal((uint64_t)n, res.records);
		assert_true(res.bytes <= budget);
		assert_int_equal(res.bytes, out.len - mark);
		assert_true(res.records > 0 || !res.more);
		calls++;
		assert_true(calls < 100);
	} while (res.more);
	assert_true(calls > 3);
	rx_run(&x, out.text, out.len);
	assert_int_equal(x.ends, calls);
	assert_int_equal(x.hdr_parts, 2 * calls);
	assert_int_equal(x.rec_len, wlen);
	assert_memory_equal(x.rec, want, wlen);
	assert_int_equal(x.records, RING->next_seq);
	assert_int_equal(c.seq, RING->next_seq);
}

/* A budget that cannot hold the big record's F lines: nothing of it goes. */
static void test_budget_big_record_all_or_none(void **state)
{
	char text[500];
	struct trace_serial_result res;
	struct trace_cursor c;

	(void)state;
	memset(text, 'y', sizeof(text));
	assert_int_equal(trace_append_log(RING, 1, 1, text, sizeof(text)), 0);
	assert_int_equal(trace_ring_cursor_tail(RING, &c), 0);
	/* H + E (about 350 bytes) plus less than the 6 F lines (~1000). */
	assert_int_equal(trace_serial_emit_ring(&ts, RING, &c, 900, &res), 0);
	assert_true(res.more);
	assert_int_equal(res.lines, 3);
	assert_int_equal(c.seq, 0);
	assert_null(strstr(out.text, " F "));
	/* A budget of 0 is no bound. */
	assert_int_equal(trace_serial_emit_ring(&ts, RING, &c, 0, &res), 1);
	assert_false(res.more);
	assert_int_equal(res.lines, 2 + 6 + 1);   /* 516 bytes: 5 x 96 + 36 */
	assert_int_equal(c.seq, 1);
}

/* OVERWRITE dropped what the cursor pointed at: counted, and the rest sent. */
static void test_resync_after_overwrite(void **state)
{
	struct trace_serial_result res;
	struct trace_cursor c;

	(void)state;
	assert_int_equal(trace_ring_init(RING, sizeof(arena), CPU, 7, TV_SOURCE_MTF,
					 TV_OVERFLOW_OVERWRITE, 1000, 5), 0);
	assert_int_equal(trace_ring_cursor_tail(RING, &c), 0);
	for (unsigned i = 0; i < 400; i++)   /* 400 x 32 bytes > 4096 */
		assert_int_equal(trace_append_cr3(RING, i, i, i), 0);
	assert_true(RING->tail_seq > 0);
	assert_int_equal(trace_serial_emit_ring(&ts, RING, &c, 0, &res),
			 (int64_t)(RING->next_seq - RING->tail_seq));
	assert_int_equal(res.missed, RING->tail_seq);
	memset(&x, 0, sizeof(x));
	rx_run(&x, out.text, out.len);
	assert_int_equal(x.first_seq, RING->tail_seq);
	assert_int_equal(x.end.missed, RING->tail_seq);
	assert_int_equal(x.end.first_seq, RING->tail_seq);
	assert_int_equal(x.end.lost_records, RING->lost_records);
	assert_int_equal(x.end.lost_bytes, RING->lost_bytes);
	assert_int_equal(x.records, RING->next_seq - RING->tail_seq);
}

static void test_errors(void **state)
{
	struct trace_serial other;
	struct trace_cursor c;
	struct trace_serial_result res;

	(void)state;
	assert_int_equal(trace_append_cr3(RING, 1, 2, 3), 0);
	assert_int_equal(trace_ring_cursor_tail(RING, &c), 0);
	assert_int_equal(trace_serial_emit_ring(NULL, RING, &c, 0, &res), TRACE_ERR_INVAL);
	assert_int_equal(trace_serial_emit_ring(&ts, NULL, &c, 0, &res), TRACE_ERR_INVAL);
	assert_int_equal(trace_serial_emit_ring(&ts, RING, NULL, 0, &res), TRACE_ERR_INVAL);
	trace_serial_init(&other, CPU + 1, sink_write, &out);
	assert_int_equal(trace_serial_emit_ring(&other, RING, &c, 0, &res), TRACE_ERR_INVAL);
	trace_serial_init(&other, CPU, NULL, NULL);
	assert_int_equal(trace_serial_emit_ring(&other, RING, &c, 0, &res), TRACE_ERR_INVAL);
	c.pos = RING->head + 8;   /* beyond head */
	assert_int_equal(trace_serial_emit_ring(&ts, RING, &c, 0, &res), TRACE_ERR_RANGE);
	c.pos = 0;
	c.seq = 5;    /* seq does not match */
	assert_int_equal(trace_serial_emit_ring(&ts, RING, &c, 0, &res), TRACE_ERR_RANGE);
	assert_int_equal(out.writes, 0);
	assert_int_equal(ts.chunk, 0);
	assert_int_equal(trace_serial_emit_pt(NULL, "", 0, 0, 0), TRACE_ERR_INVAL);
	assert_int_equal(trace_serial_emit_pt(&ts, NULL, 1, 0, 0), TRACE_ERR_INVAL);
	assert_string_equal(trace_serial_strerror(TRACE_SERIAL_ERR_CRC),
			    "TVT1 line CRC mismatch");
	assert_string_equal(trace_serial_strerror(TRACE_ERR_RANGE),
			    trace_strerror(TRACE_ERR_RANGE));
}

/* A corrupt record header after good records: they go, E goes, error returned. */
static void test_corrupt_after_good_records(void **state)
{
	struct trace_serial_result res;
	struct trace_cursor c;
	uint8_t *d;

	(void)state;
	assert_int_equal(trace_append_cr3(RING, 1, 2, 3), 0);
	assert_int_equal(trace_append_cr3(RING, 4, 5, 6), 0);
	d = trace_ring_data(RING);
	d[32 + 2] = 3;   /* second record's size: 3 */
	d[32 + 3] = 0;
	assert_int_equal(trace_ring_cursor_tail(RING, &c), 0);
	assert_int_equal(trace_serial_emit_ring(&ts, RING, &c, 0, &res), TRACE_ERR_CORRUPT);
	assert_int_equal(res.records, 1);
	assert_int_equal(c.seq, 1);
	assert_int_equal(res.lines, 4);   /* H H R E */
	/* Now the cursor is at the bad record: nothing is written. */
	out.writes = 0;
	assert_int_equal(trace_serial_emit_ring(&ts, RING, &c, 0, &res), TRACE_ERR_CORRUPT);
	assert_int_equal(out.writes, 0);
}

static void test_pt_lines(void **state)
{
	uint8_t pt[250];
	int64_t n;

	(void)state;
	for (unsigned i = 0; i < sizeof(pt); i++)
		pt[i] = (uint8_t)(i * 7);
	n = trace_serial_emit_pt(&ts, pt, sizeof(pt), 0x1000, 0);
	assert_int_equal(n, 250);
	assert_int_equal(out.writes, 3);
	{
		const char *s = out.text;
		uint64_t offs[3] = { 0x1000, 0x1060, 0x10c0 };
		size_t lens[3] = { 96, 96, 58 };

		for (unsigned i = 0; i < 3; i++) {
			struct trace_serial_line l;
			const char *nl = strchr(s, '\n');

			assert_int_equal(trace_serial_parse(s, (size_t)(nl - s + 1), &l), 0);
			assert_int_equal(l.kind, 'P');
			assert_int_equal(l.first, offs[i]);
			assert_int_equal(l.len, lens[i]);
			assert_memory_equal(l.payload, pt + offs[i] - 0x1000, lens[i]);
			s = nl + 1;
		}
	}
	/* A budget for one line only. */
	out.len = 0;
	out.writes = 0;
	n = trace_serial_emit_pt(&ts, pt, sizeof(pt), 0, 190);
	assert_int_equal(n, 96);
	assert_int_equal(out.writes, 1);
	assert_int_equal(trace_serial_emit_pt(&ts, pt, 0, 0, 0), 0);
}

/* The widest fields still make a line within the bound. */
static void test_widest_line(void **state)
{
	uint8_t pt[96];
	struct trace_serial t;
	struct trace_serial_line l;

	(void)state;
	memset(pt, 0xff, sizeof(pt));
	trace_serial_init(&t, UINT32_MAX, sink_write, &out);
	t.chunk = UINT64_MAX - 1;
	assert_int_equal(trace_serial_emit_pt(&t, pt, sizeof(pt), UINT64_MAX - 200, 0), 96);
	assert_true(out.longest <= TRACE_SERIAL_LINE_MAX);
	assert_int_equal(trace_serial_parse(out.text, out.len, &l), 0);
	assert_int_equal(l.cpu, UINT32_MAX);
	assert_int_equal(l.chunk, UINT64_MAX - 1);
	assert_int_equal(l.first, UINT64_MAX - 200);
}

/* --- the parser ---------------------------------------------------------------- */

static const char good[] = "TVT1 3 1f R 10 0 AQQYAAAAAAAAEAAAAAAAAAAgAAAAAAAA d185309e";

static int parse_str(const char *s, struct trace_serial_line *l)
{
	return trace_serial_parse(s, strlen(s), l);
}

static void test_parse_noise(void **state)
{
	struct trace_serial_line l;
	char buf[512];

	(void)state;
	assert_int_equal(parse_str(good, &l), 0);
	/* Firmware text before the tag, CRLF after. */
	snprintf(buf, sizeof(buf), "[   1.234] BdsDxe: loading Boot0001%s\r\n", good);
	assert_int_equal(parse_str(buf, &l), 0);
	assert_int_equal(l.first, 0x10);
	/* Not ours. */
	assert_int_equal(parse_str("Booting Linux on physical CPU 0x0\n", &l),
			 TRACE_SERIAL_ERR_NO_TAG);
	assert_int_equal(parse_str("", &l), TRACE_SERIAL_ERR_NO_TAG);
	/* Truncated anywhere: syntax, never a false accept. */
	for (size_t n = 0; n < sizeof(good) - 1; n++) {
		int ret = trace_serial_parse(good, n, &l);

		assert_int_equal(ret, n < TRACE_SERIAL_TAG_LEN ? TRACE_SERIAL_ERR_NO_TAG :
				 TRACE_SERIAL_ERR_SYNTAX);
	}
	/* A cut line, then a whole one on the same text line. */
	snprintf(buf, sizeof(buf), "TVT1 3 1e R f 0 AQQYAAAA%s\n", good);
	assert_int_equal(parse_str(buf, &l), 0);
	assert_int_equal(l.chunk, 0x1f);
	/* Something after the crc. */
	snprintf(buf, sizeof(buf), "%s junk", good);
	assert_int_equal(parse_str(buf, &l), TRACE_SERIAL_ERR_SYNTAX);
	assert_int_equal(trace_serial_parse(NULL, 0, &l), TRACE_ERR_INVAL);
	assert_int_equal(trace_serial_parse(good, 4, NULL), TRACE_ERR_INVAL);
}

static void test_parse_damage(void **state)
{
	struct trace_serial_line l;
	char buf[sizeof(good)];
	unsigned crc = 0, syntax = 0;

	(void)state;
	/* Every single-character change of the fields is caught. */
	for (size_t i = TRACE_SERIAL_TAG_LEN; i < sizeof(good) - 1; i++) {
		static const char subst[] = "0a9fA+/= z";

		for (size_t k = 0; k < sizeof(subst) - 1; k++) {
			int ret;

			if (good[i] == subst[k])
				continue;
			memcpy(buf, good, sizeof(good));
			buf[i] = subst[k];
			ret = parse_str(buf, &l);
			assert_true(ret == TRACE_SERIAL_ERR_CRC || ret == TRACE_SERIAL_ERR_SYNTAX);
			crc += ret == TRACE_SERIAL_ERR_CRC;
			syntax += ret == TRACE_SERIAL_ERR_SYNTAX;
		}
	}
	assert_true(crc > 100 && syntax > 50);
	/* Bad base64: padding inside, length not a multiple of 4. */
	assert_int_equal(parse_str("TVT1 0 0 P abc 0 A=I= 83be9648", &l), TRACE_SERIAL_ERR_SYNTAX);
	assert_int_equal(parse_str("TVT1 0 0 P abc 0 AQI 83be9648", &l), TRACE_SERIAL_ERR_SYNTAX);
	assert_int_equal(parse_str("TVT1 0 0 P abc 0 AQI= 83be9649", &l), TRACE_SERIAL_ERR_CRC);
	/* Upper-case hex and an overlong field are not ours. */
	assert_int_equal(parse_str("TVT1 0 0 P ABC 0 AQI= 83be9648", &l), TRACE_SERIAL_ERR_SYNTAX);
	assert_int_equal(parse_str("TVT1 000000000 0 P abc 0 AQI= 83be9648", &l),
			 TRACE_SERIAL_ERR_SYNTAX);
	assert_int_equal(parse_str("TVT1 0 0 P abc 0 AQI= 83BE9648", &l), TRACE_SERIAL_ERR_SYNTAX);
}

/* Build a line with a correct CRC by hand (via the public CRC). */
static void make_line(char *buf, size_t cap, char kind, uint64_t first, uint16_t off,
		      const uint8_t *p, uint16_t len)
{
	uint8_t f[25 + TRACE_SERIAL_PAYLOAD_MAX];
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char enc[200];
	size_t e = 0;

	f[0] = (uint8_t)kind;
	for (unsigned i = 0; i < 4; i++)
		f[1 + i] = 0;                        /* cpu 0 */
	for (unsigned i = 0; i < 8; i++) {
		f[5 + i] = 0;                        /* chunk 0 */
		f[13 + i] = (uint8_t)(first >> (8 * i));
	}
	f[21] = (uint8_t)off;
	f[22] = (uint8_t)(off >> 8);
	f[23] = (uint8_t)len;
	f[24] = (uint8_t)(len >> 8);
	memcpy(f + 25, p, len);
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < len ? p[i + 2] : 0);

		enc[e++] = b64[v >> 18 & 63];
		enc[e++] = b64[v >> 12 & 63];
		enc[e++] = i + 1 < len ? b64[v >> 6 & 63] : '=';
		enc[e++] = i + 2 < len ? b64[v & 63] : '=';
	}
	enc[e] = 0;
	snprintf(buf, cap, "TVT1 0 0 %c %llx %x %s %08x\n", kind, (unsigned long long)first,
		 off, enc, trace_serial_crc32(0, f, 25u + len));
}

static void test_parse_kind_rules(void **state)
{
	uint8_t p[96] = { 0 };
	char buf[256];
	struct trace_serial_line l;

	(void)state;
	make_line(buf, sizeof(buf), 'R', 5, 0, p, 16);
	assert_int_equal(parse_str(buf, &l), 0);
	make_line(buf, sizeof(buf), 'R', 5, 0, p, 12);     /* not whole records */
	assert_int_equal(parse_str(buf, &l), TRACE_SERIAL_ERR_SYNTAX);
	make_line(buf, sizeof(buf), 'R', 5, 8, p, 16);     /* a base, one record */
	assert_int_equal(parse_str(buf, &l), 0);
	make_line(buf, sizeof(buf), 'R', 5, 8, p, 8);      /* a base, no record */
	assert_int_equal(parse_str(buf, &l), TRACE_SERIAL_ERR_SYNTAX);
	make_line(buf, sizeof(buf), 'R', 5, 16, p, 32);    /* off other than 0, 8 */
	assert_int_equal(parse_str(buf, &l), TRACE_SERIAL_ERR_SYNTAX);
	make_line(buf, sizeof(buf), 'H', 0, 64, p, 64);
	assert_int_equal(parse_str(buf, &l), 0);
	make_line(buf, sizeof(buf), 'H', 0, 72, p, 64);    /* past the header */
	assert_int_equal(parse_str(buf, &l), TRACE_SERIAL_ERR_SYNTAX);
	make_line(buf, sizeof(buf), 'F', 9, 960, p, 64);
	assert_int_equal(parse_str(buf, &l), 0);
	make_line(buf, sizeof(buf), 'F', 9, 1000, p, 64);  /* past the largest record */
	assert_int_equal(parse_str(buf, &l), TRACE_SERIAL_ERR_SYNTAX);
	make_line(buf, sizeof(buf), 'E', 0, 0, p, 40);     /* E payload is 48 bytes */
	assert_int_equal(parse_str(buf, &l), TRACE_SERIAL_ERR_SYNTAX);
	make_line(buf, sizeof(buf), 'Z', 0, 0, p, 7);      /* unknown kind: returned */
	assert_int_equal(parse_str(buf, &l), 0);
	assert_int_equal(l.kind, 'Z');
	assert_int_equal(l.len, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_crc_check_value, setup, teardown),
		cmocka_unit_test_setup_teardown(test_golden_records_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_golden_pt_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_round_trip_all, setup, teardown),
		cmocka_unit_test_setup_teardown(test_compact_base, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_across_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_big_record_all_or_none, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resync_after_overwrite, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_after_good_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pt_lines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_widest_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parse_noise, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parse_damage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parse_kind_rules, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
