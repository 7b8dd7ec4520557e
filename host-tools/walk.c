/* SPDX-License-Identifier: MIT */
/*
 * walk.c - one pass over a .tvt file (see walk.h).
 */
#include <stdlib.h>
#include <string.h>

#include "host-tools/error.h"
#include "host-tools/le.h"
#include "host-tools/walk.h"

struct cpu_slot {
	struct tvh_cpu_stats st;
	struct tvh_stream stream;
	bool desync;             /* the last records chunk ended in a fatal error */
};

struct walk {
	struct tvt_reader *r;
	const struct tvh_walk_opts *opts;
	tvh_walk_fn fn;
	void *ctx;
	struct tvh_stats *stats;
	struct cpu_slot *slots;
	uint32_t nslots, cap;
	int32_t *slot_of;        /* cpu -> slot index or -1 */
	uint32_t slot_of_len;
};

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

static struct cpu_slot *slot_for(struct walk *w, uint32_t cpu)
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
		if (w->nslots == w->cap) {
			uint32_t n = w->cap ? 2 * w->cap : 8;
			struct cpu_slot *s = realloc(w->slots, n * sizeof(*s));

			if (!s)
				return NULL;
			w->slots = s;
			w->cap = n;
		}
		memset(&w->slots[w->nslots], 0, sizeof(w->slots[0]));
		w->slots[w->nslots].st.cpu = cpu;
		tvh_stream_init(&w->slots[w->nslots].stream);
		w->slot_of[cpu] = (int32_t)w->nslots++;
	}
	return &w->slots[w->slot_of[cpu]];
}

static int emit(struct walk *w, const struct tvh_event *ev)
{
	if (!w->fn)
		return 0;
	if (w->opts->cpu >= 0 && ev->cpu != (uint64_t)w->opts->cpu &&
	    ev->cpu != UINT32_MAX)
		return 0;
	return w->fn(w->ctx, ev);
}

static int do_records(struct walk *w, const struct tvt_chunk *c)
{
	struct cpu_slot *s = slot_for(w, c->cpu);
	struct tvh_cpu_stats *st;
	struct tvh_event ev;
	struct trace_event rec;
	bool contiguous;
	int ret, err;

	if (!s)
		return c->cpu > TVH_MAX_CPU ? -TVH_ERR_HEADER : -TVH_ERR_NOMEM;
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
			ret = emit(w, &ev);
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
		ret = emit(w, &ev);
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
			w->stats->records++;
			if (rec.type < TV_REC_TYPE_MAX) {
				st->by_type[rec.type]++;
				w->stats->by_type[rec.type]++;
			}
			if (rec.type == TV_REC_LOST)
				st->lost_rec += rec.u.lost.records;
			else if (rec.type == TV_REC_TIME && rec.u.time.tsc_hz)
				st->tsc_hz = rec.u.time.tsc_hz;
			else if (rec.type == TV_REC_PT_SYNC)
				st->pt_lost = rec.u.pt_sync.pt_lost;
		} else {
			ev.kind = TVH_EV_MALFORMED;
			ev.err = err;
			st->malformed++;
			w->stats->malformed++;
			if (err == -TVH_ERR_REC_NO_PREV)
				st->orphan_compact++;
			if (!tvh_record_error_is_skippable(err)) {
				st->unparsed_chunks++;
				s->desync = true;
			}
		}
		ret = emit(w, &ev);
		if (ret)
			return ret;
	}
	return 0;
}

static int do_pt(struct walk *w, const struct tvt_chunk *c)
{
	struct cpu_slot *s = slot_for(w, c->cpu);
	struct tvh_cpu_stats *st;
	struct tvh_event ev;
	uint64_t skip = 0;
	int ret;

	if (!s)
		return c->cpu > TVH_MAX_CPU ? -TVH_ERR_HEADER : -TVH_ERR_NOMEM;
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
			ret = emit(w, &ev);
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
		ret = emit(w, &ev);
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
	return emit(w, &ev);
}

static int chunk_error(struct walk *w, uint32_t cpu, int err, uint64_t off)
{
	struct tvh_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = TVH_EV_CHUNK_ERROR;
	ev.cpu = cpu;
	ev.err = err;
	ev.file_offset = off;
	w->stats->bad_chunks++;
	return emit(w, &ev);
}

static int do_ring(struct walk *w, const struct tvt_chunk *c)
{
	struct cpu_slot *s = slot_for(w, c->cpu);
	struct tv_trace_ring ring;
	struct tvh_event ev;
	int err;

	if (!s)
		return c->cpu > TVH_MAX_CPU ? -TVH_ERR_HEADER : -TVH_ERR_NOMEM;
	err = tvh_ring_decode(c->payload, c->length, &ring);
	if (!err && ring.cpu != c->cpu)
		err = -TVH_ERR_HEADER;
	if (err)
		return chunk_error(w, c->cpu, err, c->file_offset);
	s->st.have_ring = true;
	s->st.ring = ring;
	memset(&ev, 0, sizeof(ev));
	ev.kind = TVH_EV_RING;
	ev.cpu = c->cpu;
	ev.file_offset = c->file_offset;
	ev.ring = &s->st.ring;
	return emit(w, &ev);
}

static int cmp_cpu(const void *a, const void *b)
{
	const struct tvh_cpu_stats *x = a, *y = b;

	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

int tvh_walk(struct tvt_reader *r, const struct tvh_walk_opts *opts,
	     tvh_walk_fn fn, void *ctx, struct tvh_stats *stats)
{
	static const struct tvh_walk_opts defaults = { .cpu = -1 };
	struct walk w = { .r = r, .opts = opts ? opts : &defaults, .fn = fn,
			  .ctx = ctx, .stats = stats };
	struct tvt_chunk c;
	int got, ret = 0;

	memset(stats, 0, sizeof(*stats));
	tvt_reader_rewind(r);
	while ((got = tvt_next_chunk(r, &c)) != 0) {
		tvh_progress_update(w.opts->progress, r->pos);
		if (got < 0) {
			/* A CRC error may be in the header: its cpu is not trusted. */
			uint32_t cpu = got == -TVH_ERR_TRUNCATED && c.payload ?
				c.cpu : UINT32_MAX;

			if (got == -TVH_ERR_TRUNCATED)
				stats->truncated_chunks++;
			ret = chunk_error(&w, cpu, got, c.file_offset);
			if (ret)
				break;
			/* Salvage what a truncated chunk holds. */
			if (got != -TVH_ERR_TRUNCATED || !c.payload)
				continue;
		}
		stats->chunks++;
		switch (c.kind) {
		case TVT_KIND_RECORDS:
			stats->chunks_by_kind[TVT_KIND_RECORDS]++;
			ret = do_records(&w, &c);
			break;
		case TVT_KIND_PT:
			stats->chunks_by_kind[TVT_KIND_PT]++;
			ret = do_pt(&w, &c);
			break;
		case TVT_KIND_RING:
			stats->chunks_by_kind[TVT_KIND_RING]++;
			ret = got < 0 ? 0 : do_ring(&w, &c);
			break;
		default:
			stats->chunks_by_kind[0]++;
			break;
		}
		if (ret)
			break;
	}
	stats->skipped_bytes = r->skipped_total;
	if (w.nslots) {
		stats->cpus = calloc(w.nslots, sizeof(*stats->cpus));
		if (stats->cpus) {
			for (uint32_t i = 0; i < w.nslots; i++)
				stats->cpus[i] = w.slots[i].st;
			stats->ncpus = w.nslots;
			qsort(stats->cpus, w.nslots, sizeof(*stats->cpus), cmp_cpu);
		} else if (!ret) {
			ret = -TVH_ERR_NOMEM;
		}
	}
	free(w.slots);
	free(w.slot_of);
	return ret;
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
		n += stats->cpus[i].lost_gap + stats->cpus[i].lost_head +
		     stats->cpus[i].lost_rec;
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
