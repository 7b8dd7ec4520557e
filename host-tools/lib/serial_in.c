/* SPDX-License-Identifier: MIT */
/*
 * serial_in.c - serial log -> .tvt (see serial_in.h).  Lines are parsed
 * and CRC-checked by vmm/trace/serial_enc.c, the same code that writes them.
 */
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/le.h"
#include "host-tools/lib/serial_in.h"
#include "host-tools/lib/walk.h"

#define HDR_BYTES ((size_t)sizeof(struct tv_trace_ring))
#define RUN_FLUSH (1u << 20)   /* write a records/PT run once it is this big */

/* A growing byte run that becomes one .tvt chunk. */
struct run {
	uint8_t *p;
	size_t len, cap;
	uint64_t first;          /* sequence number / PT offset of p[0] */
};

struct serial_cpu {
	struct tvh_serial_cpu_stats st;
	bool seen;               /* a line of this CPU was accepted */
	uint64_t next_chunk;
	struct run rec;
	struct run pt;
	bool have_pt;
	uint64_t pt_next;        /* PT offset after the last byte received */
	/* The record being put together from F lines. */
	bool big_open;
	uint64_t big_seq, big_chunk;
	size_t big_len;
	uint64_t big_pieces;
	uint8_t big[TV_REC_MAX_SIZE];
	/* The header snapshot being put together from H lines. */
	size_t hdr_len;
	uint64_t hdr_chunk;
	uint8_t hdr[HDR_BYTES];
	uint8_t ring_raw[HDR_BYTES];   /* the last whole snapshot, as sent */
};

static void fail(struct tvh_serial_in *s, int err)
{
	if (!s->error)
		s->error = err;
}

static void run_append(struct tvh_serial_in *s, struct run *r, const uint8_t *p,
		       size_t n)
{
	if (r->len + n > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		uint8_t *np;

		while (cap < r->len + n)
			cap *= 2;
		np = realloc(r->p, cap);
		if (!np) {
			fail(s, -TVH_ERR_NOMEM);
			return;
		}
		r->p = np;
		r->cap = cap;
	}
	memcpy(r->p + r->len, p, n);
	r->len += n;
}

static void run_flush(struct tvh_serial_in *s, uint32_t cpu, uint16_t kind,
		      struct run *r)
{
	if (r->len && s->w && !s->error) {
		int err = tvt_write_chunk(s->w, cpu, kind, 0, r->first, r->p, r->len);

		if (err)
			fail(s, err);
	}
	r->len = 0;
}

void tvh_serial_in_init(struct tvh_serial_in *s, struct tvt_writer *w)
{
	memset(s, 0, sizeof(*s));
	s->w = w;
	tvh_cputab_init(&s->cpus, sizeof(struct serial_cpu));
}

/* Chunk numbers: from 0 per CPU; a gap is lines lost. */
static void track_chunk(struct serial_cpu *c, uint64_t chunk)
{
	if (!c->seen) {
		c->st.chunks_missing += chunk;
		c->seen = true;
	} else if (chunk > c->next_chunk) {
		c->st.chunks_missing += chunk - c->next_chunk;
	} else if (chunk < c->next_chunk) {
		c->st.chunk_back++;
	}
	c->next_chunk = chunk + 1;
}

/* One record of sequence number seq, already checked to be whole. */
static void take_record(struct tvh_serial_in *s, struct serial_cpu *c, uint64_t seq,
			const uint8_t *p, size_t size)
{
	struct tvh_serial_cpu_stats *st = &c->st;

	if (st->have_seq && seq < st->next_seq) {
		st->dup_records++;
		return;
	}
	if (!st->have_seq) {
		st->have_seq = true;
		st->first_seq = seq;
	} else if (seq > st->next_seq) {
		st->rec_gap += seq - st->next_seq;
		run_flush(s, st->cpu, TVT_KIND_RECORDS, &c->rec);
	}
	if (!c->rec.len)
		c->rec.first = seq;
	run_append(s, &c->rec, p, size);
	st->next_seq = seq + 1;
	st->records++;
	if (c->rec.len >= RUN_FLUSH)
		run_flush(s, st->cpu, TVT_KIND_RECORDS, &c->rec);
}

/*
 * A compact branch whose predecessor was lost, with the base its line
 * carried: written as the full branch it stands for (same sequence
 * number), so the file decodes without a hole in the chain.
 */
static void take_expanded(struct tvh_serial_in *s, struct serial_cpu *c, uint64_t seq,
			  const uint8_t *p, uint64_t base)
{
	uint8_t full[TV_REC_BRANCH_SIZE];

	full[0] = TV_REC_BRANCH;
	full[1] = p[1];                              /* kind */
	tvh_put_le16(full + 2, TV_REC_BRANCH_SIZE);
	tvh_put_le32(full + 4, 0);                   /* flags: a compact has none */
	tvh_put_le64(full + 8, base + tvh_le32(p + 4));
	tvh_put_le64(full + 16, tvh_le64(p + 8));
	take_record(s, c, seq, full, sizeof(full));
	c->st.expanded++;
}

/*
 * An R line (or a finished F record): whole records from seq on; base
 * (when has_base) is the `to` before the first one.
 */
static void take_records(struct tvh_serial_in *s, struct serial_cpu *c, uint64_t seq,
			 const uint8_t *p, size_t len, bool has_base, uint64_t base)
{
	for (size_t off = 0; off < len; seq++) {
		size_t size;

		if (len - off < sizeof(struct tv_rec)) {
			s->st.bad_content++;
			return;
		}
		size = tvh_le16(p + off + 2);
		if (size < sizeof(struct tv_rec) || (size & 7) || size > TV_REC_MAX_SIZE ||
		    size > len - off) {
			s->st.bad_content++;   /* the sender's bug: drop the rest */
			return;
		}
		if (off == 0 && has_base && p[0] == TV_REC_BRANCH_COMPACT &&
		    size == sizeof(struct tv_rec_branch_compact) &&
		    (!c->st.have_seq || seq > c->st.next_seq))
			take_expanded(s, c, seq, p, base);
		else
			take_record(s, c, seq, p + off, size);
		off += size;
	}
}

static void drop_big(struct serial_cpu *c)
{
	if (c->big_open)
		c->st.pieces_dropped += c->big_pieces;
	c->big_open = false;
}

static void take_piece(struct tvh_serial_in *s, struct serial_cpu *c,
		       const struct trace_serial_line *l)
{
	size_t size;

	if (l->off == 0) {
		drop_big(c);
		c->big_open = true;
		c->big_seq = l->first;
		c->big_len = 0;
		c->big_pieces = 0;
	} else if (!c->big_open || c->big_seq != l->first || c->big_len != l->off ||
		   l->chunk != c->big_chunk + 1) {
		/* Its start is gone: this piece and any open record are lost. */
		drop_big(c);
		c->st.pieces_dropped++;
		return;
	}
	memcpy(c->big + c->big_len, l->payload, l->len);   /* off + len <= max: parse */
	c->big_len += l->len;
	c->big_chunk = l->chunk;
	c->big_pieces++;
	if (c->big_len < sizeof(struct tv_rec))
		return;
	size = tvh_le16(c->big + 2);
	if (size < sizeof(struct tv_rec) || (size & 7) || size > TV_REC_MAX_SIZE ||
	    size < c->big_len) {
		s->st.bad_content++;
		drop_big(c);
		return;
	}
	if (c->big_len == size) {
		take_records(s, c, c->big_seq, c->big, size, false, 0);
		c->big_open = false;
	}
}

static void take_header(struct tvh_serial_in *s, struct serial_cpu *c,
			const struct trace_serial_line *l)
{
	struct tv_trace_ring ring;

	if (l->off == 0) {
		c->hdr_len = 0;
	} else if (l->off != c->hdr_len || l->chunk != c->hdr_chunk + 1) {
		c->hdr_len = 0;   /* the first part is gone: wait for the next snapshot */
		return;
	}
	memcpy(c->hdr + l->off, l->payload, l->len);   /* off + len <= 128: parse */
	c->hdr_len = (size_t)l->off + l->len;
	c->hdr_chunk = l->chunk;
	if (c->hdr_len < HDR_BYTES)
		return;
	c->hdr_len = 0;
	if (tvh_ring_decode(c->hdr, HDR_BYTES, &ring) || ring.cpu != l->cpu) {
		s->st.bad_content++;
		return;
	}
	c->st.have_ring = true;
	c->st.ring = ring;
	c->st.headers++;
	memcpy(c->ring_raw, c->hdr, HDR_BYTES);
}

static void take_pt(struct tvh_serial_in *s, struct serial_cpu *c,
		    const struct trace_serial_line *l)
{
	uint64_t off = l->first;
	const uint8_t *p = l->payload;
	size_t n = l->len;

	if (c->have_pt && off < c->pt_next) {
		uint64_t dup = c->pt_next - off;

		if (dup >= n)
			return;
		p += dup;
		n -= (size_t)dup;
		off = c->pt_next;
	}
	if (c->have_pt && off > c->pt_next) {
		c->st.pt_missing += off - c->pt_next;
		run_flush(s, c->st.cpu, TVT_KIND_PT, &c->pt);
	}
	if (!c->pt.len)
		c->pt.first = off;
	run_append(s, &c->pt, p, n);
	c->have_pt = true;
	c->pt_next = off + n;
	c->st.pt_bytes += n;
	if (c->pt.len >= RUN_FLUSH)
		run_flush(s, c->st.cpu, TVT_KIND_PT, &c->pt);
}

static void take_end(struct serial_cpu *c, const struct trace_serial_line *l)
{
	struct trace_serial_end e;

	trace_serial_decode_end(l, &e);
	if (!c->st.have_end || e.first_seq < c->st.end_start)
		c->st.end_start = e.first_seq;
	if (!c->st.have_end || l->first > c->st.end_next)
		c->st.end_next = l->first;
	c->st.have_end = true;
	c->st.ends++;
	c->st.rec_missed += e.missed;
}

int tvh_serial_in_line(struct tvh_serial_in *s, const char *line, size_t n)
{
	struct trace_serial_line l;
	struct serial_cpu *c;
	int ret;

	if (!s || (!line && n))
		return -TVH_ERR_INVALID;
	if (s->error)
		return s->error;
	s->st.lines++;
	ret = trace_serial_parse(line ? line : "", n, &l);
	if (ret == TRACE_SERIAL_ERR_NO_TAG)
		return 0;
	s->st.tagged++;
	if (ret == TRACE_SERIAL_ERR_CRC) {
		s->st.bad_crc++;
		return 0;
	}
	if (ret || l.cpu > TVH_MAX_CPU) {
		s->st.malformed++;
		return 0;
	}
	c = tvh_cputab_get(&s->cpus, l.cpu);
	if (!c) {
		fail(s, -TVH_ERR_NOMEM);
		return s->error;
	}
	s->st.accepted++;
	c->st.cpu = l.cpu;
	c->st.lines++;
	track_chunk(c, l.chunk);
	switch (l.kind) {
	case TRACE_SERIAL_HEADER:
		take_header(s, c, &l);
		break;
	case TRACE_SERIAL_RECORDS:
		take_records(s, c, l.first, l.payload + l.off, (size_t)(l.len - l.off),
			     l.off == 8, l.off == 8 ? tvh_le64(l.payload) : 0);
		break;
	case TRACE_SERIAL_FRAGMENT:
		take_piece(s, c, &l);
		break;
	case TRACE_SERIAL_PT:
		take_pt(s, c, &l);
		break;
	case TRACE_SERIAL_END:
		take_end(c, &l);
		break;
	default:
		s->st.unknown_kind++;
		break;
	}
	return s->error;
}

int tvh_serial_in_text(struct tvh_serial_in *s, const char *text, size_t n)
{
	size_t pos = 0;

	if (!s || (!text && n))
		return -TVH_ERR_INVALID;
	while (pos < n) {
		const char *nl = memchr(text + pos, '\n', n - pos);
		size_t len = nl ? (size_t)(nl - (text + pos)) + 1 : n - pos;
		int ret = tvh_serial_in_line(s, text + pos, len);

		if (ret)
			return ret;
		pos += len;
	}
	return s->error;
}

static void finish_cpu(struct tvh_serial_in *s, struct serial_cpu *c)
{
	struct tvh_serial_cpu_stats *st = &c->st;
	uint64_t base;

	drop_big(c);
	run_flush(s, st->cpu, TVT_KIND_RECORDS, &c->rec);
	run_flush(s, st->cpu, TVT_KIND_PT, &c->pt);
	if (st->have_ring && s->w && !s->error) {
		int err = tvt_write_chunk(s->w, st->cpu, TVT_KIND_RING, 0, 0,
					  c->ring_raw, HDR_BYTES);

		if (err)
			fail(s, err);
	}
	if (st->have_end) {
		if (st->have_seq && st->first_seq > st->end_start)
			st->rec_head = st->first_seq - st->end_start;
		base = st->have_seq ? st->next_seq : st->end_start;
		if (st->end_next > base)
			st->rec_tail = st->end_next - base;
	}
	s->st.records += st->records;
	s->st.chunks_missing += st->chunks_missing;
	s->st.rec_missing += tvh_serial_missing(st);
	s->st.rec_missed += st->rec_missed;
	s->st.pieces_dropped += st->pieces_dropped;
	s->st.pt_bytes += st->pt_bytes;
	s->st.pt_missing += st->pt_missing;
	s->st.cpus++;
}

int tvh_serial_in_finish(struct tvh_serial_in *s)
{
	if (!s)
		return -TVH_ERR_INVALID;
	if (s->finished)
		return s->error;
	s->finished = true;
	for (uint32_t i = 0; i < s->cpus.len; i++) {
		struct serial_cpu *c = tvh_cputab_peek(&s->cpus, i);

		if (c && c->seen)
			finish_cpu(s, c);
	}
	return s->error;
}

const struct tvh_serial_cpu_stats *tvh_serial_in_cpu(const struct tvh_serial_in *s,
						     uint32_t cpu)
{
	const struct serial_cpu *c = s ? tvh_cputab_peek(&s->cpus, cpu) : NULL;

	return c && c->seen ? &c->st : NULL;
}

uint32_t tvh_serial_in_cpu_limit(const struct tvh_serial_in *s)
{
	return s ? s->cpus.len : 0;
}

static void free_cpu(void *state)
{
	struct serial_cpu *c = state;

	free(c->rec.p);
	free(c->pt.p);
}

void tvh_serial_in_free(struct tvh_serial_in *s)
{
	if (s)
		tvh_cputab_free(&s->cpus, free_cpu);
}
