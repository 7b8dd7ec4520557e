/* SPDX-License-Identifier: MIT */
/*
 * walk.c - one pass over a .tvt file (see walk.h).
 */
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/le.h"
#include "host-tools/lib/text.h"
#include "host-tools/lib/walk.h"
#include "host-tools/lib/walk_int.h"

int tvh_ring_decode(const uint8_t *p, uint64_t len, struct tv_trace_ring *o)
{
	if (len < sizeof(*o))
		return -TVH_ERR_TRUNCATED;
	memset(o, 0, sizeof(*o));
	o->magic = tvh_le32(p + 0);
	o->version = tvh_le16(p + 4);
	o->hdr_size = tvh_le16(p + 6);
	o->cpu = tvh_le32(p + 8);
	o->apic_id = tvh_le32(p + 12);
	o->source = tvh_le32(p + 16);
	o->flags = tvh_le32(p + 20);
	o->data_size = tvh_le64(p + 24);
	o->head = tvh_le64(p + 32);
	o->tail = tvh_le64(p + 40);
	o->tail_seq = tvh_le64(p + 48);
	o->next_seq = tvh_le64(p + 56);
	o->lost_records = tvh_le64(p + 64);
	o->lost_bytes = tvh_le64(p + 72);
	o->tsc_hz = tvh_le64(p + 80);
	o->start_tsc = tvh_le64(p + 88);
	if (o->magic != TV_TRACE_MAGIC)
		return -TVH_ERR_MAGIC;
	if (o->version != TV_TRACE_VERSION || o->hdr_size < sizeof(*o))
		return -TVH_ERR_VERSION;
	return 0;
}

struct cpu_slot *tvh_walk_slot(struct walk *w, uint32_t cpu)
{
	if (cpu > TVH_MAX_CPU)
		return NULL;
	if (cpu >= w->slot_of_len) {
		uint32_t n = cpu + 1 > 2 * w->slot_of_len ? cpu + 1 : 2 * w->slot_of_len;
		int32_t *t = realloc(w->slot_of, n * sizeof(*t));

		if (!t)
			return NULL;
		for (uint32_t i = w->slot_of_len; i < n; i++)
			t[i] = -1;
		w->slot_of = t;
		w->slot_of_len = n;
	}
	if (w->slot_of[cpu] < 0) {
		struct cpu_slot *s;

		if (w->nslots >= TVH_MAX_CPUS_SEEN)
			return NULL;   /* tvh_walk_next says -TVH_ERR_LIMIT */
		if (w->nslots == w->cap) {
			uint32_t n = w->cap ? 2 * w->cap : 8;
			struct cpu_slot **v = realloc(w->slots, n * sizeof(*v));

			if (!v)
				return NULL;
			w->slots = v;
			w->cap = n;
		}
		/* One allocation per slot: a worker thread keeps its pointer. */
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		s->st.cpu = cpu;
		s->fn = w->fn;
		s->ctx = w->ctx;
		tvh_stream_init(&s->stream);
		w->slots[w->nslots] = s;
		w->slot_of[cpu] = (int32_t)w->nslots++;
	}
	return w->slots[w->slot_of[cpu]];
}

/* s: the CPU's slot (its callback), NULL for events of no CPU. */
static int emit(struct walk *w, struct cpu_slot *s, const struct tvh_event *ev)
{
	tvh_walk_fn fn = s ? s->fn : w->fn;

	if (!fn)
		return 0;
	if (w->opts->cpu >= 0 && ev->cpu != (uint64_t)w->opts->cpu &&
	    ev->cpu != UINT32_MAX)
		return 0;
	return fn(s ? s->ctx : w->ctx, ev);
}

static int do_records(struct walk *w, struct cpu_slot *s, const struct tvt_chunk *c)
{
	struct tvh_cpu_stats *st;
	struct tvh_event ev;
	struct trace_event rec;
	bool contiguous;
	int ret, err;

	st = &s->st;
	contiguous = st->have_seq && !s->desync && c->first == st->next_seq;
	if (c->flags & TVT_CHUNK_F_STREAM_START) {
		st->have_seq = true;
		st->next_seq = c->first;
		contiguous = false;
	} else if (!st->have_seq) {
		st->first_seq = c->first;
		if (c->first) {
			memset(&ev, 0, sizeof(ev));
			ev.kind = TVH_EV_GAP;
			ev.cpu = c->cpu;
			ev.gap = TVH_GAP_HEAD;
			ev.seq = 0;
			ev.count = c->first;
			ev.file_offset = c->file_offset;
			st->lost_head += c->first;
			ret = emit(w, s, &ev);
			if (ret)
				return ret;
		}
		st->have_seq = true;
		st->next_seq = c->first;
	} else if (c->first > st->next_seq) {
		memset(&ev, 0, sizeof(ev));
		ev.kind = TVH_EV_GAP;
		ev.cpu = c->cpu;
		ev.gap = TVH_GAP_SEQ;
		ev.seq = st->next_seq;
		ev.count = c->first - st->next_seq;
		ev.file_offset = c->file_offset;
		st->lost_gap += ev.count;
		st->next_seq = c->first;
		ret = emit(w, s, &ev);
		if (ret)
			return ret;
	}
	s->desync = false;
	tvh_stream_feed(&s->stream, c->payload, (size_t)c->length, c->first,
			contiguous);
	while ((err = tvh_next_record(&s->stream, &rec)) != 0) {
		memset(&ev, 0, sizeof(ev));
		ev.cpu = c->cpu;
		ev.rec = &rec;
		ev.file_offset = c->file_offset + TVT_CHUNK_HDR_SIZE + rec.offset;
		if (err > 0 || tvh_record_error_is_skippable(err)) {
			if (rec.seq < st->next_seq) {
				st->dup++;
				continue;
			}
			st->next_seq = rec.seq + 1;
		}
		if (err > 0) {
			ev.kind = TVH_EV_RECORD;
			st->records++;
			s->part.records++;
			if (rec.type < TV_REC_TYPE_MAX) {
				st->by_type[rec.type]++;
				s->part.by_type[rec.type]++;
			}
			if (rec.type == TV_REC_LOST)
				st->lost_rec = tvh_sat_add(st->lost_rec, rec.u.lost.records);
			else if (rec.type == TV_REC_TIME && rec.u.time.tsc_hz)
				st->tsc_hz = rec.u.time.tsc_hz;
			else if (rec.type == TV_REC_PT_SYNC)
				st->pt_lost = rec.u.pt_sync.pt_lost;
		} else {
			ev.kind = TVH_EV_MALFORMED;
			ev.err = err;
			st->malformed++;
			s->part.malformed++;
			if (err == -TVH_ERR_REC_NO_PREV)
				st->orphan_compact++;
			if (!tvh_record_error_is_skippable(err)) {
				st->unparsed_chunks++;
				s->desync = true;
			}
		}
		ret = emit(w, s, &ev);
		if (ret)
			return ret;
	}
	return 0;
}

static int do_pt(struct walk *w, struct cpu_slot *s, const struct tvt_chunk *c)
{
	struct tvh_cpu_stats *st;
	struct tvh_event ev;
	uint64_t skip = 0;
	int ret;

	st = &s->st;
	memset(&ev, 0, sizeof(ev));
	ev.cpu = c->cpu;
	ev.file_offset = c->file_offset;
	if ((c->flags & TVT_CHUNK_F_STREAM_START) || !st->have_pt) {
		if (!(c->flags & TVT_CHUNK_F_STREAM_START) && c->first) {
			ev.kind = TVH_EV_PT_GAP;
			ev.gap = TVH_GAP_HEAD;
			ev.pt_offset = 0;
			ev.count = c->first;
			st->pt_head += c->first;
			ret = emit(w, s, &ev);
			if (ret)
				return ret;
		}
		st->have_pt = true;
		st->pt_next = c->first;
	} else if (c->first > st->pt_next) {
		ev.kind = TVH_EV_PT_GAP;
		ev.gap = TVH_GAP_SEQ;
		ev.pt_offset = st->pt_next;
		ev.count = c->first - st->pt_next;
		st->pt_gap += ev.count;
		st->pt_next = c->first;
		ret = emit(w, s, &ev);
		if (ret)
			return ret;
	} else if (c->first < st->pt_next) {
		skip = st->pt_next - c->first;
		if (skip > c->length)
			skip = c->length;
		st->pt_dup += skip;
	}
	if (c->length <= skip)
		return 0;
	st->pt_bytes += c->length - skip;
	st->pt_next = c->first + c->length;
	if (!w->opts->want_pt)
		return 0;
	ev.kind = TVH_EV_PT;
	ev.pt_offset = c->first + skip;
	ev.data = c->payload + skip;
	ev.len = c->length - skip;
	return emit(w, s, &ev);
}

/*
 * s: the slot of the chunk's CPU (its callback and counters), or NULL:
 * counted globally, reported with cpu (UINT32_MAX when not trusted).
 */
static int chunk_error(struct walk *w, struct cpu_slot *s, uint32_t cpu,
		       int err, uint64_t off)
{
	struct tvh_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = TVH_EV_CHUNK_ERROR;
	ev.cpu = cpu;
	ev.err = err;
	ev.file_offset = off;
	if (s)
		s->part.bad_chunks++;
	else
		w->stats->bad_chunks++;
	return emit(w, s, &ev);
}

static int do_ring(struct walk *w, struct cpu_slot *s, const struct tvt_chunk *c)
{
	struct tv_trace_ring ring;
	struct tvh_event ev;
	int err;

	err = tvh_ring_decode(c->payload, c->length, &ring);
	if (!err && ring.cpu != c->cpu)
		err = -TVH_ERR_HEADER;
	if (err)
		return chunk_error(w, s, c->cpu, err, c->file_offset);
	s->st.have_ring = true;
	s->st.ring = ring;
	memset(&ev, 0, sizeof(ev));
	ev.kind = TVH_EV_RING;
	ev.cpu = c->cpu;
	ev.file_offset = c->file_offset;
	ev.ring = &s->st.ring;
	return emit(w, s, &ev);
}

static int cmp_cpu(const void *a, const void *b)
{
	const struct tvh_cpu_stats *x = a, *y = b;

	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

int tvh_walk_chunk(struct walk *w, struct cpu_slot *s, int got,
		   const struct tvt_chunk *c)
{
	int ret;

	if (got < 0) {
		/* Only a truncated chunk with a whole header reaches here. */
		ret = chunk_error(w, s, c->cpu, got, c->file_offset);
		if (ret)
			return ret;
	}
	switch (c->kind) {
	case TVT_KIND_RECORDS:
		return do_records(w, s, c);
	case TVT_KIND_PT:
		return do_pt(w, s, c);
	case TVT_KIND_RING:
		return got < 0 ? 0 : do_ring(w, s, c);
	default:
		return 0;
	}
}

int tvh_walk_next(struct walk *w, struct tvt_chunk *c, struct cpu_slot **slot)
{
	struct tvh_stats *stats = w->stats;
	int got, ret;

	while ((got = tvt_next_chunk(w->r, c)) != 0) {
		tvh_progress_update(w->opts->progress, w->r->pos);
		if (got < 0) {
			/* A CRC error may be in the header: its cpu is not trusted. */
			bool known = got == -TVH_ERR_TRUNCATED && c->payload;

			if (got == -TVH_ERR_TRUNCATED)
				stats->truncated_chunks++;
			if (!known || c->kind < TVT_KIND_RECORDS ||
			    c->kind > TVT_KIND_RING) {
				ret = chunk_error(w, NULL, known ? c->cpu : UINT32_MAX,
						  got, c->file_offset);
				if (ret)
					return ret;
				if (!known)
					continue;
			}
			/* Salvage what a truncated chunk holds (its CPU's job). */
		}
		stats->chunks++;
		if (c->kind < TVT_KIND_RECORDS || c->kind > TVT_KIND_RING) {
			stats->chunks_by_kind[0]++;
			continue;
		}
		stats->chunks_by_kind[c->kind]++;
		*slot = tvh_walk_slot(w, c->cpu);
		if (!*slot)
			return c->cpu > TVH_MAX_CPU ? -TVH_ERR_HEADER :
			       w->nslots >= TVH_MAX_CPUS_SEEN ? -TVH_ERR_LIMIT : -TVH_ERR_NOMEM;
		return got < 0 ? 2 : 1;
	}
	return 0;
}

int tvh_walk_finish(struct walk *w, int ret)
{
	struct tvh_stats *stats = w->stats;

	stats->skipped_bytes = w->r->skipped_total;
	if (w->nslots) {
		stats->cpus = calloc(w->nslots, sizeof(*stats->cpus));
		if (stats->cpus) {
			for (uint32_t i = 0; i < w->nslots; i++) {
				const struct cpu_slot *s = w->slots[i];

				stats->cpus[i] = s->st;
				stats->records += s->part.records;
				stats->malformed += s->part.malformed;
				stats->bad_chunks += s->part.bad_chunks;
				for (unsigned t = 0; t < TV_REC_TYPE_MAX; t++)
					stats->by_type[t] += s->part.by_type[t];
			}
			stats->ncpus = w->nslots;
			qsort(stats->cpus, w->nslots, sizeof(*stats->cpus), cmp_cpu);
		} else if (!ret) {
			ret = -TVH_ERR_NOMEM;
		}
	}
	for (uint32_t i = 0; i < w->nslots; i++)
		free(w->slots[i]);
	free(w->slots);
	free(w->slot_of);
	return ret;
}

int tvh_walk(struct tvt_reader *r, const struct tvh_walk_opts *opts,
	     tvh_walk_fn fn, void *ctx, struct tvh_stats *stats)
{
	static const struct tvh_walk_opts defaults = { .cpu = -1 };
	struct walk w = { .r = r, .opts = opts ? opts : &defaults, .fn = fn,
			  .ctx = ctx, .stats = stats };
	struct cpu_slot *s = NULL;
	struct tvt_chunk c;
	int got, ret = 0;

	memset(stats, 0, sizeof(*stats));
	tvt_reader_rewind(r);
	while ((got = tvh_walk_next(&w, &c, &s)) > 0) {
		ret = tvh_walk_chunk(&w, s, got == 2 ? -TVH_ERR_TRUNCATED : 0, &c);
		if (ret)
			break;
	}
	if (got < 0)
		ret = got;
	return tvh_walk_finish(&w, ret);
}

void tvh_stats_free(struct tvh_stats *stats)
{
	free(stats->cpus);
	memset(stats, 0, sizeof(*stats));
}

const struct tvh_cpu_stats *tvh_stats_cpu(const struct tvh_stats *stats,
					  uint32_t cpu)
{
	for (uint32_t i = 0; i < stats->ncpus; i++)
		if (stats->cpus[i].cpu == cpu)
			return &stats->cpus[i];
	return NULL;
}

uint64_t tvh_stats_lost(const struct tvh_stats *stats)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < stats->ncpus; i++)
		n = tvh_sat_add(n, tvh_sat_add(stats->cpus[i].lost_gap + stats->cpus[i].lost_head,
					       stats->cpus[i].lost_rec));
	return n;
}

uint64_t tvh_stats_ring_lost(const struct tvh_stats *stats)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < stats->ncpus; i++)
		if (stats->cpus[i].have_ring)
			n += stats->cpus[i].ring.lost_records;
	return n;
}

bool tvh_stats_damaged(const struct tvh_stats *stats)
{
	return stats->malformed || stats->bad_chunks || stats->skipped_bytes;
}
