/* SPDX-License-Identifier: MIT */
/*
 * test_host_serial.c - serial log -> .tvt (host-tools/lib/serial_in.c): two
 * CPUs' rings emitted by the real encoder (vmm/trace/serial_enc.c), the lines
 * mixed into a noisy log (firmware chatter, a stray "TVT1 " in text, a
 * line glued to junk, CRLF, binary bytes), then damaged: an R line
 * dropped, one corrupted (bad CRC), one cut short, a piece of a big
 * record dropped, the last R line of the other CPU dropped.  Every count
 * is asserted exactly, and the .tvt is read back record by record against
 * the ring.  Then the CLI: the same through `from-serial`, --help, and
 * bad input.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/serial_in.h"
#include "host-tools/lib/tvt.h"
#include "tests/host/helpers.h"
#include "vmm/trace/ring.h"
#include "vmm/trace/serial_enc.h"

#define RING_BYTES (128u + 8192u)

/* --- the sender side ------------------------------------------------------------ */

struct line {
	char text[TRACE_SERIAL_LINE_MAX + 1];
	size_t len;
	struct trace_serial_line l;    /* as parsed back */
	unsigned records;              /* R: whole records; F: 1 on the last piece */
};

struct capture {
	struct line *v;
	size_t n, cap;
};

static void cap_write(void *ctx, const char *s, size_t n)
{
	struct capture *c = ctx;
	struct line *ln;

	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		c->v = realloc(c->v, c->cap * sizeof(*c->v));
		assert_non_null(c->v);
	}
	ln = &c->v[c->n++];
	assert_true(n <= TRACE_SERIAL_LINE_MAX);
	memcpy(ln->text, s, n);
	ln->text[n] = 0;
	ln->len = n;
	assert_int_equal(trace_serial_parse(s, n, &ln->l), 0);
	ln->records = 0;
	if (ln->l.kind == TRACE_SERIAL_RECORDS) {
		for (size_t o = ln->l.off; o < ln->l.len; ln->records++)
			o += (size_t)(ln->l.payload[o + 2] | (ln->l.payload[o + 3] << 8));
	}
}

struct sender {
	uint64_t ring_mem[RING_BYTES / 8];
	struct tv_trace_ring *r;
	struct trace_serial ts;
	struct trace_cursor c;
	uint8_t all[8192];             /* every record, linear (seq 0 at 0) */
	size_t all_len;
	uint64_t offs[1024];           /* byte offset of record seq in `all` */
};

static struct capture cap;
static struct sender s0, s1;
static uint8_t pt_bytes[300];

static void sender_init(struct sender *s, uint32_t cpu)
{
	memset(s, 0, sizeof(*s));
	s->r = (struct tv_trace_ring *)s->ring_mem;
	assert_int_equal(trace_ring_init(s->r, sizeof(s->ring_mem), cpu, cpu + 10,
					 TV_SOURCE_MTF, TV_OVERFLOW_STOP, 1000000, 1), 0);
	trace_serial_init(&s->ts, cpu, cap_write, &cap);
	assert_int_equal(trace_ring_cursor_tail(s->r, &s->c), 0);
}

static void sender_emit(struct sender *s)
{
	assert_true(trace_serial_emit_ring(&s->ts, s->r, &s->c, 0, NULL) >= 0);
	assert_int_equal(s->c.seq, s->r->next_seq);
}

/* The ring's records, linear, and where each starts. */
static void sender_snapshot(struct sender *s)
{
	struct trace_cursor c;
	size_t n;

	assert_int_equal(trace_ring_cursor_tail(s->r, &c), 0);
	assert_int_equal(c.seq, 0);
	assert_int_equal(trace_ring_peek(s->r, &c, s->all, sizeof(s->all), &n), 0);
	assert_int_equal(c.seq, s->r->next_seq);
	s->all_len = n;
	for (size_t o = 0, q = 0; o < n; q++) {
		s->offs[q] = o;
		o += (size_t)(s->all[o + 2] | (s->all[o + 3] << 8));
		s->offs[q + 1] = o;
	}
}

static void fill(struct sender *s, unsigned n, unsigned salt)
{
	char text[300];

	memset(text, 'a' + (int)salt, sizeof(text));
	for (unsigned i = 0; i < n; i++) {
		uint64_t b = 0x7000000 + salt * 0x100000 + i * 0x40;

		assert_int_equal(trace_append_branch(s->r, b, b + 0x10, TV_BR_JMP, 0, 0), 0);
		assert_int_equal(trace_append_branch(s->r, b + 0x18, b + 0x30, TV_BR_CALL, 0, 0), 0);
		if (i % 5 == 0)
			assert_int_equal(trace_append_cr3(s->r, 10 + i, 0x1000 * i, b), 0);
		if (i % 7 == 3)
			assert_int_equal(trace_append_marker(s->r, 20 + i, i, "mk", 2), 0);
	}
	assert_int_equal(trace_append_log(s->r, 99, 2, text, sizeof(text)), 0);
}

/* Which lines of cap are damaged, and how. */
enum fate { KEEP, DROP, CORRUPT, CUT, GLUE, CRLF };

static enum fate *fates;

/* Expected counts, derived from the lines chosen. */
struct want {
	uint64_t cpu0_gap, cpu0_tail, cpu1_tail, pieces_dropped;
	uint64_t seq_missing[2][1024];   /* 1: record seq was never received */
};
static struct want want;

static size_t nth_line(uint32_t cpu, char kind, unsigned nth)
{
	unsigned k = 0;

	for (size_t i = 0; i < cap.n; i++)
		if (cap.v[i].l.cpu == cpu && cap.v[i].l.kind == kind && k++ == nth)
			return i;
	fail_msg("no line %u of kind %c for cpu %u", nth, kind, cpu);
	return 0;
}

static void mark_missing(size_t i)
{
	const struct line *ln = &cap.v[i];

	for (unsigned k = 0; k < ln->records; k++)
		want.seq_missing[ln->l.cpu][ln->l.first + k] = 1;
}

/* The log text: our lines, the chosen damage, junk around them. */
static char *build_log(size_t *len_out)
{
	static const char *const junk[] = {
		"BdsDxe: loading Boot0001 \"UEFI QEMU HARDDISK\"\n",
		"[    0.000000] Linux version 6.6.0 (gcc) #1 SMP\n",
		"note: lines starting TVT1 are the trace\n",   /* a stray tag: malformed */
		"\n",
		"X64 Exception Type - 0D(#GP - General Protection)\r\n",
	};
	size_t cap_len = 1 << 20, len = 0;
	char *log = malloc(cap_len);

	assert_non_null(log);
#define PUT(s, n) do { assert_true(len + (n) < cap_len); memcpy(log + len, (s), (n)); len += (n); } while (0)
	PUT("\x01\x02\xff binary\0bytes\n", 18);
	for (size_t i = 0; i < cap.n; i++) {
		const struct line *ln = &cap.v[i];
		const char *j = junk[i % 5];

		PUT(j, strlen(j));
		switch (fates[i]) {
		case KEEP:
			PUT(ln->text, ln->len);
			break;
		case DROP:
			break;
		case CORRUPT: {
			char t[TRACE_SERIAL_LINE_MAX + 1];
			/* The payload is the 7th field: after 6 spaces. */
			char *p = t;

			memcpy(t, ln->text, ln->len + 1);
			for (unsigned sp = 0; sp < 6; p++)
				sp += *p == ' ';
			p[3] = p[3] == 'A' ? 'B' : 'A';
			PUT(t, ln->len);
			break;
		}
		case CUT:
			PUT(ln->text, ln->len / 2);
			PUT("\n", 1);
			break;
		case GLUE:
			PUT("Shell> ", 7);   /* firmware output without a line end */
			PUT(ln->text, ln->len);
			break;
		case CRLF:
			PUT(ln->text, ln->len - 1);
			PUT("\r\n", 2);
			break;
		}
	}
	PUT("last words without a newline", 28);
#undef PUT
	*len_out = len;
	return log;
}

static char *logtext;
static size_t loglen;
static uint64_t junk_tagged;   /* stray-tag junk lines in the log */
static uint64_t log_lines;

static int setup(void **state)
{
	size_t i0, big0;

	(void)state;
	memset(&cap, 0, sizeof(cap));
	memset(&want, 0, sizeof(want));
	for (unsigned i = 0; i < sizeof(pt_bytes); i++)
		pt_bytes[i] = (uint8_t)(i * 13 + 1);

	/* Two emissions of CPU 0, one of CPU 1 and its PT, interleaved. */
	sender_init(&s0, 0);
	sender_init(&s1, 1);
	fill(&s0, 30, 0);
	sender_emit(&s0);
	fill(&s1, 12, 1);
	for (unsigned i = 0; i < 6; i++)   /* R lines after the big record */
		assert_int_equal(trace_append_cr3(s1.r, 500 + i, i, i), 0);
	assert_int_equal(trace_serial_emit_pt(&s1.ts, pt_bytes, sizeof(pt_bytes), 0, 0),
			 sizeof(pt_bytes));
	fill(&s0, 30, 2);
	sender_emit(&s0);
	sender_emit(&s1);
	sender_snapshot(&s0);
	sender_snapshot(&s1);

	fates = calloc(cap.n, sizeof(*fates));
	assert_non_null(fates);
	/* CPU 0: R lines 2, 5 and 8 dropped, corrupted, cut short. */
	i0 = nth_line(0, 'R', 2);
	fates[i0] = DROP;
	mark_missing(i0);
	i0 = nth_line(0, 'R', 5);
	fates[i0] = CORRUPT;
	mark_missing(i0);
	i0 = nth_line(0, 'R', 8);
	fates[i0] = CUT;
	mark_missing(i0);
	/* CPU 0's second big record (4 pieces of 96, 96, 96, 32): piece 1 dropped. */
	big0 = nth_line(0, 'F', 4);
	assert_int_equal(cap.v[big0].l.off, 0);
	fates[big0 + 1] = DROP;
	want.seq_missing[0][cap.v[big0].l.first] = 1;
	want.pieces_dropped = 3;
	/* CPU 1: its last R line (right before its last E line). */
	for (size_t i = cap.n; i-- > 0;)
		if (cap.v[i].l.cpu == 1 && cap.v[i].l.kind == 'R') {
			fates[i] = DROP;
			mark_missing(i);
			want.cpu1_tail = cap.v[i].records;
			break;
		}
	/* Noise that must not hurt: a line glued to junk, CRLF ends. */
	fates[nth_line(0, 'R', 3)] = GLUE;
	fates[nth_line(1, 'R', 1)] = CRLF;
	fates[nth_line(0, 'E', 0)] = CRLF;

	/* CPU 0's big record is its last: lost after the last one received. */
	for (uint64_t q = s0.r->next_seq; q-- > 0 && want.seq_missing[0][q];)
		want.cpu0_tail++;
	for (unsigned q = 0; q < s0.r->next_seq; q++)
		want.cpu0_gap += want.seq_missing[0][q];
	want.cpu0_gap -= want.cpu0_tail;

	logtext = build_log(&loglen);
	/* Lines in the log: one per '\n' plus the unterminated last one. */
	log_lines = 1;
	for (size_t i = 0; i < loglen; i++)
		log_lines += logtext[i] == '\n';
	junk_tagged = 0;
	for (size_t i = 0; i < cap.n; i++)
		junk_tagged += i % 5 == 2;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(cap.v);
	free(fates);
	free(logtext);
	return 0;
}

/* --- the receiver ----------------------------------------------------------------- */

/* Every records chunk of cpu in the .tvt matches the ring's bytes; count them. */
static uint64_t check_records(const void *tvt, size_t len, uint32_t cpu,
			      const struct sender *s, uint64_t *rings, uint64_t *pt,
			      uint64_t *expanded)
{
	struct tvt_reader r;
	struct tvt_chunk c;
	uint64_t records = 0, next = 0;
	int ret;

	assert_int_equal(tvt_reader_open_mem(&r, tvt, len), 0);
	while ((ret = tvt_next_chunk(&r, &c)) != 0) {
		assert_int_equal(ret, 1);
		if (c.cpu != cpu)
			continue;
		if (c.kind == TVT_KIND_RING) {
			struct tv_trace_ring ring;

			assert_int_equal(c.length, 128);
			memcpy(&ring, c.payload, sizeof(ring));
			assert_int_equal(ring.cpu, cpu);
			assert_int_equal(ring.next_seq, s->r->next_seq);  /* the last one */
			(*rings)++;
			continue;
		}
		if (c.kind == TVT_KIND_PT) {
			assert_true(c.first + c.length <= sizeof(pt_bytes));
			assert_memory_equal(c.payload, pt_bytes + c.first, c.length);
			*pt += c.length;
			continue;
		}
		assert_int_equal(c.kind, TVT_KIND_RECORDS);
		/* Chunks break exactly at the missing records, nowhere else. */
		assert_true(c.first >= next);
		for (uint64_t q = next; q < c.first; q++)
			assert_true(want.seq_missing[cpu][q]);
		{
			size_t o = s->offs[c.first], n = 0, skip = 0;
			uint64_t q = c.first;
			const uint8_t *orig = s->all + o;

			if (orig[0] == TV_REC_BRANCH_COMPACT && c.first > 0) {
				/* After a loss: written as the full branch, from the line's base. */
				assert_int_equal(c.payload[0], TV_REC_BRANCH);
				assert_int_equal(c.payload[1], orig[1]);
				assert_int_equal(c.payload[2], 24);
				assert_memory_equal(c.payload + 16, orig + 8, 8);   /* to */
				(*expanded)++;
				skip = 24;
				n = 24;
				o += 16;
				q++;
			}
			while (n < c.length) {
				assert_false(want.seq_missing[cpu][q]);
				n += s->offs[q + 1] - s->offs[q];
				q++;
			}
			assert_int_equal(n, c.length);
			assert_memory_equal(c.payload + skip, s->all + o, c.length - skip);
			records += q - c.first;
			next = q;
		}
	}
	tvt_reader_close(&r);
	return records;
}

static void test_round_trip_with_damage(void **state)
{
	struct tvh_serial_in in;
	struct tvt_writer w;
	struct tvt_file_info info = { .trace_version = TV_TRACE_VERSION, .machine = "bochs" };
	const struct tvh_serial_cpu_stats *c0, *c1;
	char *buf = NULL;
	size_t blen = 0;
	FILE *f = open_memstream(&buf, &blen);
	uint64_t rings = 0, pt = 0, expanded = 0, rec0, rec1, n0 = s0.r->next_seq, n1 = s1.r->next_seq;

	(void)state;
	assert_non_null(f);
	assert_int_equal(tvt_writer_init(&w, f, &info), 0);
	tvh_serial_in_init(&in, &w);
	assert_int_equal(tvh_serial_in_text(&in, logtext, loglen), 0);
	assert_int_equal(tvh_serial_in_finish(&in), 0);
	assert_int_equal(tvt_writer_finish(&w), 0);
	fclose(f);

	/* Lines. */
	assert_int_equal(in.st.lines, log_lines);
	assert_int_equal(in.st.tagged, cap.n - 3 + junk_tagged);   /* 3 dropped */
	assert_int_equal(in.st.accepted, cap.n - 5);               /* and 2 broken */
	assert_int_equal(in.st.bad_crc, 1);
	assert_int_equal(in.st.malformed, 1 + junk_tagged);
	assert_int_equal(in.st.unknown_kind, 0);
	assert_int_equal(in.st.bad_content, 0);
	assert_int_equal(in.st.cpus, 2);

	/* CPU 0: 3 R lines and 1 F piece lost; 2 emissions. */
	c0 = tvh_serial_in_cpu(&in, 0);
	assert_non_null(c0);
	assert_int_equal(c0->chunks_missing, 4);
	assert_int_equal(c0->chunk_back, 0);
	assert_int_equal(c0->rec_gap, want.cpu0_gap);
	assert_int_equal(c0->rec_head, 0);
	assert_int_equal(c0->rec_tail, want.cpu0_tail);
	assert_int_equal(want.cpu0_tail, 1);
	assert_int_equal(c0->rec_missed, 0);
	assert_int_equal(c0->records, n0 - want.cpu0_gap - want.cpu0_tail);
	assert_int_equal(c0->first_seq, 0);
	assert_int_equal(c0->next_seq, n0 - 1);
	assert_int_equal(c0->pieces_dropped, want.pieces_dropped);
	assert_int_equal(c0->headers, 2);
	assert_int_equal(c0->ends, 2);
	assert_int_equal(c0->end_next, n0);
	assert_int_equal(c0->dup_records, 0);
	assert_true(c0->have_ring);
	assert_int_equal(c0->ring.next_seq, n0);

	/* CPU 1: its last R line lost: only the E line knows. */
	c1 = tvh_serial_in_cpu(&in, 1);
	assert_non_null(c1);
	assert_int_equal(c1->chunks_missing, 1);
	assert_int_equal(c1->rec_gap, 0);
	assert_int_equal(c1->rec_tail, want.cpu1_tail);
	assert_true(want.cpu1_tail > 0);
	assert_int_equal(c1->records, n1 - want.cpu1_tail);
	assert_int_equal(c1->pt_bytes, sizeof(pt_bytes));
	assert_int_equal(c1->pt_missing, 0);
	assert_int_equal(c1->pieces_dropped, 0);
	assert_null(tvh_serial_in_cpu(&in, 2));

	assert_int_equal(in.st.records, c0->records + c1->records);
	assert_int_equal(in.st.chunks_missing, 5);
	assert_int_equal(in.st.rec_missing, want.cpu0_gap + want.cpu0_tail + want.cpu1_tail);
	assert_int_equal(in.st.pieces_dropped, want.pieces_dropped);

	/* The file: exactly the records received, byte for byte. */
	rec0 = check_records(buf, blen, 0, &s0, &rings, &pt, &expanded);
	assert_int_equal(expanded, c0->expanded);
	assert_true(c0->expanded > 0);
	assert_int_equal(rec0, c0->records);
	assert_int_equal(rings, 1);
	rec1 = check_records(buf, blen, 1, &s1, &rings, &pt, &expanded);
	assert_int_equal(rec1, c1->records);
	assert_int_equal(rings, 2);
	assert_int_equal(pt, sizeof(pt_bytes));

	tvh_serial_in_free(&in);
	free(buf);
}

/* Nothing lost: a clean log gives every record and no missing count. */
static void test_clean_log(void **state)
{
	struct tvh_serial_in in;
	char *text = NULL;
	size_t len = 0;

	(void)state;
	for (size_t i = 0; i < cap.n; i++) {
		text = realloc(text, len + cap.v[i].len);
		assert_non_null(text);
		memcpy(text + len, cap.v[i].text, cap.v[i].len);
		len += cap.v[i].len;
	}
	tvh_serial_in_init(&in, NULL);
	assert_int_equal(tvh_serial_in_text(&in, text, len), 0);
	assert_int_equal(tvh_serial_in_finish(&in), 0);
	assert_int_equal(in.st.accepted, cap.n);
	assert_int_equal(in.st.lines, cap.n);
	assert_int_equal(in.st.records, s0.r->next_seq + s1.r->next_seq);
	assert_int_equal(in.st.chunks_missing, 0);
	assert_int_equal(in.st.rec_missing, 0);
	assert_int_equal(in.st.pieces_dropped, 0);
	/* Finishing twice changes nothing. */
	assert_int_equal(tvh_serial_in_finish(&in), 0);
	assert_int_equal(in.st.cpus, 2);
	tvh_serial_in_free(&in);

	/* The same log twice: the repeat is duplicates, counted, not data. */
	tvh_serial_in_init(&in, NULL);
	assert_int_equal(tvh_serial_in_text(&in, text, len), 0);
	assert_int_equal(tvh_serial_in_text(&in, text, len), 0);
	assert_int_equal(tvh_serial_in_finish(&in), 0);
	assert_int_equal(in.st.records, s0.r->next_seq + s1.r->next_seq);
	assert_int_equal(tvh_serial_in_cpu(&in, 0)->dup_records, s0.r->next_seq);
	assert_int_equal(tvh_serial_in_cpu(&in, 0)->chunk_back, 1);
	assert_int_equal(in.st.rec_missing, 0);
	tvh_serial_in_free(&in);
	free(text);
}

/* Losses at the start: the first lines of a CPU, and a head gap from E. */
static void test_head_losses(void **state)
{
	struct tvh_serial_in in;
	const struct tvh_serial_cpu_stats *c0;
	size_t first_r = nth_line(0, 'R', 0);

	(void)state;
	tvh_serial_in_init(&in, NULL);
	for (size_t i = 0; i < cap.n; i++)
		if (i != first_r && cap.v[i].l.cpu == 0)
			assert_int_equal(tvh_serial_in_line(&in, cap.v[i].text, cap.v[i].len), 0);
	assert_int_equal(tvh_serial_in_finish(&in), 0);
	c0 = tvh_serial_in_cpu(&in, 0);
	assert_int_equal(c0->chunks_missing, 1);
	assert_int_equal(c0->rec_head, cap.v[first_r].records);
	assert_int_equal(c0->rec_gap, 0);
	assert_int_equal(c0->first_seq, cap.v[first_r].records);
	tvh_serial_in_free(&in);

	/* A log with no TVT1 line at all. */
	tvh_serial_in_init(&in, NULL);
	assert_int_equal(tvh_serial_in_text(&in, "hello\nworld\n", 12), 0);
	assert_int_equal(tvh_serial_in_finish(&in), 0);
	assert_int_equal(in.st.lines, 2);
	assert_int_equal(in.st.tagged, 0);
	assert_int_equal(in.st.accepted, 0);
	assert_int_equal(in.st.cpus, 0);
	tvh_serial_in_free(&in);
	assert_int_equal(tvh_serial_in_text(NULL, "", 0), -TVH_ERR_INVALID);
}

/* --- the CLI ------------------------------------------------------------------------ */

static int cli(const char *args, char **out, char **err)
{
	char *cmd;
	int rc;

	assert_true(asprintf(&cmd, "'%s' %s", th_cli(), args) > 0);
	rc = th_run(cmd, out, err);
	free(cmd);
	return rc;
}

static void test_cli(void **state)
{
	char *log = th_path("serial.log"), *tvt = th_path("serial.tvt");
	char *empty = th_path("empty.log"), *none = th_path("none.tvt");
	char *args, *out, *err, *want_msg;
	int rc;
	uint64_t missing = want.cpu0_gap + want.cpu0_tail + want.cpu1_tail;

	(void)state;
	th_write_file(log, logtext, loglen);
	assert_true(asprintf(&args, "from-serial '%s' -o '%s'", log, tvt) > 0);
	assert_int_equal(cli(args, NULL, &err), 0);
	assert_true(th_contains(err, "1 bad CRC"));
	assert_true(asprintf(&want_msg, "warning: %s: data missing: 5 lines (chunk numbers), %"
			     PRIu64 " records", log, missing) > 0);
	if (!th_contains(err, want_msg))
		fail_msg("stderr:\n%s\nwant: %s", err, want_msg);
	assert_true(th_contains(err, "cpu1: "));
	free(want_msg);
	free(err);
	free(args);

	/* The output is a trace the other commands read. */
	assert_true(asprintf(&args, "dump -s '%s'", tvt) > 0);
	rc = cli(args, &out, &err);
	if (rc != 0)
		fail_msg("dump: exit %d\n%s\n%s", rc, out, err);
	free(err);
	assert_true(th_contains(out, "# tracevisor trace: session 0x0000000000000000, machine \"serial.log\""));
	assert_true(asprintf(&want_msg, "lost records: %" PRIu64 " (sequence gaps %" PRIu64,
			     want.cpu0_gap, want.cpu0_gap) > 0);
	if (!th_contains(out, want_msg))
		fail_msg("dump:\n%s\nwant: %s", out, want_msg);
	free(want_msg);
	free(out);
	free(args);

	/* -q keeps the warning, drops the rest. */
	assert_true(asprintf(&args, "from-serial -q --machine lab '%s' -o '%s'", log, tvt) > 0);
	assert_int_equal(cli(args, NULL, &err), 0);
	assert_true(th_contains(err, "warning:"));
	assert_false(th_contains(err, "cpu0:"));
	free(err);
	free(args);

	/* Help. */
	assert_int_equal(cli("from-serial --help", &out, NULL), 0);
	assert_true(th_contains(out, "Usage: tracevisor from-serial"));
	free(out);

	/* Unreadable input: 1. */
	assert_true(asprintf(&args, "from-serial '%s/nonexistent.log' -o '%s'", th_dir(), none) > 0);
	assert_int_equal(cli(args, NULL, &err), 1);
	assert_true(th_contains(err, "No such file"));
	assert_true(access(none, F_OK) != 0);
	free(err);
	free(args);

	/* No data: 1, no output left behind. */
	th_write_file(empty, "just firmware\nTVT1 nonsense\n", 28);
	assert_true(asprintf(&args, "from-serial '%s' -o '%s'", empty, none) > 0);
	assert_int_equal(cli(args, NULL, &err), 1);
	assert_true(th_contains(err, "no TVT1 data (2 lines, 1 with the tag: 0 bad CRC, 1 malformed)"));
	assert_true(access(none, F_OK) != 0);
	free(err);
	free(args);

	/* Usage. */
	assert_int_equal(cli("from-serial x.log", NULL, &err), 2);
	assert_true(th_contains(err, "missing -o"));
	free(err);
	assert_int_equal(cli("from-serial --bogus x.log -o y", NULL, &err), 2);
	free(err);

	free(log);
	free(tvt);
	free(empty);
	free(none);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_with_damage),
		cmocka_unit_test(test_clean_log),
		cmocka_unit_test(test_head_losses),
		cmocka_unit_test(test_cli),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
