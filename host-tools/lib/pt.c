/* SPDX-License-Identifier: MIT */
/*
 * pt.c - PT stream extraction and libipt instruction-flow decoding
 * (see pt.h).  The decode loop follows libipt's ptxed: drain events,
 * next instruction, on error report and resynchronise forward.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <pthread.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/pt.h"
#include "host-tools/lib/ptbranch.h"

/* ---- cuts: losses the record stream counts ------------------------------- */

/* Every PT_SYNC's time, for decoding code snapshots at the right time. */
static int time_on_event(struct tvh_pt_cuts *c, const struct trace_event *rec)
{
	if (!rec->has_tsc)
		return 0;
	if (c->nt == c->tcap) {
		size_t cap = c->tcap ? 2 * c->tcap : 64;
		struct tvh_pt_time *v = realloc(c->t, cap * sizeof(*v));

		if (!v)
			return -TVH_ERR_NOMEM;
		c->t = v;
		c->tcap = cap;
	}
	c->t[c->nt].offset = rec->u.pt_sync.pt_offset;
	c->t[c->nt++].tsc = rec->tsc;
	return 0;
}

/* A PT_SYNC whose pt_lost grew adds a cut at its pt_offset. */
static int cuts_on_event(struct tvh_pt_cuts *c, const struct tvh_event *ev)
{
	uint64_t lost;
	int ret;

	if (ev->kind != TVH_EV_RECORD || ev->rec->type != TV_REC_PT_SYNC)
		return 0;
	ret = time_on_event(c, ev->rec);
	if (ret)
		return ret;
	lost = ev->rec->u.pt_sync.pt_lost;
	if (lost <= c->last_lost) {
		c->last_lost = lost;      /* equal, or the producer started over */
		return 0;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		struct tvh_pt_cut *v = realloc(c->v, cap * sizeof(*v));

		if (!v)
			return -TVH_ERR_NOMEM;
		c->v = v;
		c->cap = cap;
	}
	c->v[c->n].offset = ev->rec->u.pt_sync.pt_offset;
	c->v[c->n++].lost = lost - c->last_lost;
	c->last_lost = lost;
	return 0;
}

static int cmp_cut(const void *a, const void *b)
{
	const struct tvh_pt_cut *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int cmp_time(const void *a, const void *b)
{
	const struct tvh_pt_time *x = a, *y = b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->tsc < y->tsc ? -1 : x->tsc > y->tsc;
}

/* Sort by offset and merge cuts at the same offset. */
static void cuts_finish(struct tvh_pt_cuts *c)
{
	size_t k = 0;

	if (!c->n)
		return;
	qsort(c->v, c->n, sizeof(*c->v), cmp_cut);
	for (size_t i = 1; i < c->n; i++) {
		if (c->v[i].offset == c->v[k].offset)
			c->v[k].lost += c->v[i].lost;
		else
			c->v[++k] = c->v[i];
	}
	c->n = k + 1;
}

/* Index of the first cut at or after offset (c->n if none). */
static size_t cut_at_or_after(const struct tvh_pt_cuts *c, uint64_t offset)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->v[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- collecting ---------------------------------------------------------- */

int tvh_pt_collect_event(struct tvh_pt_collector *c, const struct tvh_event *ev)
{
	struct tvh_pt_stream *s = c->s;
	struct tvh_pt_run *run;

	if (ev->kind == TVH_EV_RECORD)
		return cuts_on_event(&c->cuts, ev);
	if (ev->kind == TVH_EV_PT_GAP) {
		s->gap_bytes += ev->count;
		return 0;
	}
	if (ev->kind != TVH_EV_PT || !ev->len)
		return 0;
	run = s->nruns ? &s->runs[s->nruns - 1] : NULL;
	if (!run || run->offset + run->len != ev->pt_offset) {
		struct tvh_pt_run *n = realloc(s->runs, (s->nruns + 1) * sizeof(*n));

		if (!n)
			return -TVH_ERR_NOMEM;
		s->runs = n;
		run = &s->runs[s->nruns++];
		memset(run, 0, sizeof(*run));
		run->offset = ev->pt_offset;
	}
	if (run->len + ev->len > run->cap) {
		size_t cap = run->cap ? run->cap : 4096;
		uint8_t *d;

		while (cap < run->len + ev->len)
			cap *= 2;
		d = realloc(run->data, cap);
		if (!d)
			return -TVH_ERR_NOMEM;
		run->data = d;
		run->cap = cap;
	}
	memcpy(run->data + run->len, ev->data, ev->len);
	run->len += ev->len;
	s->bytes += ev->len;
	return 0;
}

/* Split s's runs at the cuts strictly inside them; the later pieces are copies. */
static int split_at_cuts(struct tvh_pt_stream *s, const struct tvh_pt_cuts *c)
{
	struct tvh_pt_run *v;
	bool *copy;
	size_t n = s->nruns, k = 0;

	for (size_t i = 0; i < s->nruns; i++) {
		const struct tvh_pt_run *r = &s->runs[i];

		for (size_t j = cut_at_or_after(c, r->offset + 1);
		     j < c->n && c->v[j].offset < r->offset + r->len; j++)
			n++;
	}
	if (n == s->nruns)
		return 0;
	v = calloc(n, sizeof(*v));
	copy = calloc(n, sizeof(*copy));
	if (!v || !copy)
		goto nomem;
	for (size_t i = 0; i < s->nruns; i++) {
		const struct tvh_pt_run *r = &s->runs[i];
		uint64_t end = r->offset + r->len;
		size_t j = cut_at_or_after(c, r->offset + 1);

		v[k++] = *r;
		for (; j < c->n && c->v[j].offset < end; j++) {
			uint64_t at = c->v[j].offset;
			uint64_t next = j + 1 < c->n && c->v[j + 1].offset < end ?
					c->v[j + 1].offset : end;
			struct tvh_pt_run *t = &v[k];

			v[k - 1].len = (size_t)(at - v[k - 1].offset);
			t->offset = at;
			t->len = t->cap = (size_t)(next - at);
			t->data = malloc(t->len);
			if (!t->data)
				goto nomem;
			copy[k++] = true;
			memcpy(t->data, r->data + (at - r->offset), t->len);
		}
	}
	free(copy);
	free(s->runs);
	s->runs = v;
	s->nruns = n;
	return 0;
nomem:
	/* s->runs still owns the original buffers. */
	for (size_t m = 0; v && copy && m < k; m++)
		if (copy[m])
			free(v[m].data);
	free(v);
	free(copy);
	return -TVH_ERR_NOMEM;
}

static int collect_fn(void *ctx, const struct tvh_event *ev)
{
	return tvh_pt_collect_event(ctx, ev);
}

int tvh_pt_collect_finish(struct tvh_pt_collector *c, int ret)
{
	struct tvh_pt_stream *out = c->s;

	cuts_finish(&c->cuts);
	if (!ret)
		ret = split_at_cuts(out, &c->cuts);
	out->cuts = c->cuts.v;
	out->ncuts = c->cuts.n;
	if (c->cuts.nt)
		qsort(c->cuts.t, c->cuts.nt, sizeof(*c->cuts.t), cmp_time);
	out->times = c->cuts.t;
	out->ntimes = c->cuts.nt;
	memset(&c->cuts, 0, sizeof(c->cuts));
	for (size_t i = 0; i < out->ncuts; i++)
		out->cut_bytes += out->cuts[i].lost;
	return ret;
}

void tvh_pt_stream_free(struct tvh_pt_stream *s)
{
	for (size_t i = 0; i < s->nruns; i++)
		free(s->runs[i].data);
	free(s->runs);
	free(s->cuts);
	free(s->times);
	memset(s, 0, sizeof(*s));
}

int tvh_pt_collect(struct tvt_reader *r, uint32_t cpu, struct tvh_pt_stream *out,
		   struct tvh_stats *stats, struct tvh_progress *progress)
{
	struct tvh_walk_opts wo = { .cpu = cpu, .want_pt = true, .progress = progress };
	struct tvh_pt_collector c = { .s = out };
	struct tvh_stats local;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = tvh_walk(r, &wo, collect_fn, &c, stats ? stats : &local);
	if (!stats)
		tvh_stats_free(&local);
	ret = tvh_pt_collect_finish(&c, ret);
	if (!ret && !out->nruns)
		ret = -TVH_ERR_NOT_FOUND;
	if (ret)
		tvh_pt_stream_free(out);
	return ret;
}

/* What the extraction saw, listed after the walk (cuts come from records). */
struct x_item {
	bool gap;
	bool head;               /* gap: before the capture */
	uint64_t start;          /* run: first stream offset; gap: where */
	uint64_t end;            /* run: one past the last; gap: start + count */
	uint64_t out;            /* run: output offset of start */
};

struct extract {
	FILE *out;
	uint64_t written;
	struct x_item *items;
	size_t nitems, cap;
	struct tvh_pt_cuts cuts;
};

static struct x_item *x_add(struct extract *x)
{
	if (x->nitems == x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 16;
		struct x_item *v = realloc(x->items, cap * sizeof(*v));

		if (!v)
			return NULL;
		x->items = v;
		x->cap = cap;
	}
	memset(&x->items[x->nitems], 0, sizeof(x->items[0]));
	return &x->items[x->nitems++];
}

static int extract_fn(void *ctx, const struct tvh_event *ev)
{
	struct extract *x = ctx;
	struct x_item *it = x->nitems ? &x->items[x->nitems - 1] : NULL;

	if (ev->kind == TVH_EV_RECORD)
		return cuts_on_event(&x->cuts, ev);
	if (ev->kind == TVH_EV_PT_GAP) {
		it = x_add(x);
		if (!it)
			return -TVH_ERR_NOMEM;
		it->gap = true;
		it->head = ev->gap == TVH_GAP_HEAD;
		it->start = ev->pt_offset;
		it->end = ev->pt_offset + ev->count;
		return 0;
	}
	if (ev->kind != TVH_EV_PT || !ev->len)
		return 0;
	if (!it || it->gap || ev->pt_offset != it->end) {
		it = x_add(x);
		if (!it)
			return -TVH_ERR_NOMEM;
		it->start = it->end = ev->pt_offset;
		it->out = x->written;
	}
	if (fwrite(ev->data, 1, ev->len, x->out) != ev->len)
		return -TVH_ERR_IO;
	x->written += ev->len;
	it->end += ev->len;
	return 0;
}

static void list_run(FILE *f, uint64_t start, uint64_t end, uint64_t out)
{
	fprintf(f, "run: stream offsets 0x%" PRIx64 "..0x%" PRIx64
		" at output offset 0x%" PRIx64 " (%" PRIu64 " bytes)\n",
		start, end, out, end - start);
}

static void list_cut(FILE *f, const struct tvh_pt_cut *c)
{
	fprintf(f, "gap: %" PRIu64 " bytes lost at stream offset 0x%" PRIx64
		" (counted by PT_SYNC; offsets go on, bytes before and after do not"
		" belong together)\n", c->lost, c->offset);
}

/* Runs and gaps in stream order, each cut where it falls. */
static void list_items(const struct extract *x, FILE *f)
{
	size_t ci = 0;

	for (size_t i = 0; i < x->nitems; i++) {
		const struct x_item *it = &x->items[i];
		uint64_t start = it->start, out = it->out;

		while (ci < x->cuts.n && x->cuts.v[ci].offset <= it->start)
			list_cut(f, &x->cuts.v[ci++]);
		if (it->gap) {
			fprintf(f, "gap: %" PRIu64 " bytes lost at stream offset 0x%"
				PRIx64 "%s\n", it->end - it->start, it->start,
				it->head ? " (before the capture)" : "");
			continue;
		}
		for (; ci < x->cuts.n && x->cuts.v[ci].offset < it->end; ci++) {
			uint64_t at = x->cuts.v[ci].offset;

			list_run(f, start, at, out);
			list_cut(f, &x->cuts.v[ci]);
			out += at - start;
			start = at;
		}
		list_run(f, start, it->end, out);
	}
	while (ci < x->cuts.n)
		list_cut(f, &x->cuts.v[ci++]);
}

int64_t tvh_pt_extract(struct tvt_reader *r, uint32_t cpu, FILE *out,
		       FILE *runs_out, struct tvh_stats *stats,
		       struct tvh_progress *progress)
{
	struct tvh_walk_opts wo = { .cpu = cpu, .want_pt = true, .progress = progress };
	struct extract x = { .out = out };
	struct tvh_stats local;
	int ret;

	ret = tvh_walk(r, &wo, extract_fn, &x, stats ? stats : &local);
	if (!stats)
		tvh_stats_free(&local);
	cuts_finish(&x.cuts);
	if (runs_out)
		list_items(&x, runs_out);
	free(x.items);
	free(x.cuts.v);
	free(x.cuts.t);
	if (ret)
		return ret;
	if (fflush(out) || ferror(out))
		return -TVH_ERR_IO;
	if (!x.written)
		return -TVH_ERR_NOT_FOUND;
	return (int64_t)x.written;
}

/* ---- image --------------------------------------------------------------- */

int tvh_pt_image(const struct tvh_symtab *st, struct pt_image **out)
{
	struct pt_image *img = pt_image_alloc("tracevisor");

	*out = NULL;
	if (!img)
		return -TVH_ERR_NOMEM;
	for (unsigned i = 0; i < st->nmods; i++) {
		const struct tvh_module *m = &st->mods[i];

		for (unsigned k = 0; k < m->nsegs; k++) {
			const struct tvh_segment *s = &m->segs[k];

			if (!(s->flags & PF_X) || !s->filesz)
				continue;
			if (pt_image_add_file(img, m->path, s->offset, s->filesz,
					      NULL, s->vaddr + m->bias) < 0) {
				pt_image_free(img);
				return -TVH_ERR_PT;
			}
		}
	}
	*out = img;
	return 0;
}

/* ---- code snapshots -------------------------------------------------------- */

int tvh_pt_snap_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *context)
{
	struct tvh_pt_mem *m = context;
	uint64_t cr3 = asid && asid->cr3 != pt_asid_no_cr3 ? asid->cr3 : 0;
	size_t n = tvh_snap_cursor_read(&m->cur, cr3, ip, m->tsc, buffer, size);

	return n ? (int)n : -pte_nomap;
}

/* ---- decoding ------------------------------------------------------------ */

struct dec {
	struct pt_insn_decoder *d;
	uint64_t base;
	const struct tvh_pt_opts *o;
	tvh_pt_fn fn;
	void *ctx;
	struct tvh_pt_stats *st;
	bool pending;            /* branches mode: the last insn was a transfer */
	struct pt_insn last;
	bool have_last;
	struct tvh_pt_mem *mem;  /* code snapshots: its tsc follows the decoder */
	size_t ti;               /* o->times[ti - 1]: the last at or before the offset */
	uint64_t reported_insns; /* st->insns when the last item was reported */
};

static uint64_t dec_offset(const struct dec *x)
{
	uint64_t off = 0;

	pt_insn_get_offset(x->d, &off);
	return x->base + off;
}

/*
 * Keep the snapshot clock at the decoder's time: TSC (with MTC/CYC) when
 * the stream has timing packets, else the PT_SYNC record written at or
 * before the current offset (offsets only grow within a decode).
 */
static void mem_clock(struct dec *x)
{
	const struct tvh_pt_opts *o = x->o;
	uint64_t tsc, off;

	if (pt_insn_time(x->d, &tsc, NULL, NULL) >= 0 && tsc) {
		x->mem->tsc = tsc;
		return;
	}
	if (!o->ntimes)
		return;
	off = dec_offset(x);
	while (x->ti < o->ntimes && o->times[x->ti].offset <= off)
		x->ti++;
	x->mem->tsc = x->ti ? o->times[x->ti - 1].tsc : 0;
}

static int report(struct dec *x, struct tvh_pt_item *it)
{
	it->insns = x->st->insns - x->reported_insns;
	x->reported_insns = x->st->insns;
	return x->fn ? x->fn(x->ctx, it) : 0;
}

/* The decoder's time at a branch: the last TSC (with MTC/CYC), if any. */
static void branch_time(struct dec *x, struct tvh_pt_item *it)
{
	uint64_t tsc;

	it->offset = dec_offset(x);
	if (pt_insn_time(x->d, &tsc, NULL, NULL) >= 0) {
		it->has_tsc = true;
		it->tsc = tsc;
	}
}

static int on_insn(struct dec *x, const struct pt_insn *insn)
{
	struct tvh_pt_item it = { .kind = TVH_PT_INSN, .insn = insn, .ip = insn->ip };
	int ret = 0;

	/* A transfer is reported with the instructions up to its source: this
	 * one (its destination) counts after it, as ptfast counts. */
	if (!x->o->branches) {
		x->st->insns++;
		ret = report(x, &it);
	} else if (x->pending) {
		bool fallthrough = insn->ip == x->last.ip + x->last.size;

		if (!(fallthrough && x->last.iclass == ptic_cond_jump)) {
			it.kind = TVH_PT_BRANCH;
			it.insn = &x->last;
			it.from = x->last.ip;
			it.to = insn->ip;
			it.iclass = x->last.iclass;
			branch_time(x, &it);
			x->st->branches++;
			ret = report(x, &it);
		}
	}
	if (x->o->branches)
		x->st->insns++;
	x->last = *insn;
	x->have_last = true;
	x->pending = insn->iclass != ptic_other && insn->iclass != ptic_ptwrite &&
		     insn->iclass != ptic_error;
	return ret;
}

/*
 * The last instruction's transfer to `to`, which an event names; ev (may
 * be NULL): an asynchronous event, whose time (at its FUP) the transfer
 * takes, else the decoder's.
 */
static int last_branch_to(struct dec *x, uint64_t to, const struct pt_event *ev)
{
	struct tvh_pt_item b = { .kind = TVH_PT_BRANCH, .insn = &x->last,
				 .from = x->last.ip, .to = to,
				 .iclass = x->last.iclass,
				 .offset = dec_offset(x) };

	if (ev) {
		b.has_tsc = ev->has_tsc;
		b.tsc = ev->has_tsc ? ev->tsc : 0;
	} else {
		branch_time(x, &b);
	}
	x->st->branches++;
	return report(x, &b);
}

static int on_event(struct dec *x, const struct pt_event *ev)
{
	struct tvh_pt_item it = { .kind = TVH_PT_EVENT, .event = ev,
				  .offset = dec_offset(x) };
	int ret;

	x->st->events++;
	if (x->o->branches && x->pending && ev->type == ptev_disabled &&
	    !ev->ip_suppressed) {
		ret = last_branch_to(x, ev->variant.disabled.ip, NULL);
		if (ret)
			return ret;
	}
	/*
	 * An asynchronous event at the last transfer's destination: tracing
	 * disabled (a VM exit: FUP + TIP.PGD) or an interrupt or exception
	 * (FUP + TIP).  The FUP names the instruction the event came before
	 * (SDM 3C 33.4.2.21), so the transfer completed: e.g. a call, or the
	 * far return into x86_64_start_kernel, whose target page's first
	 * fetch is an EPT violation (code snapshots).  libipt's flow gives no
	 * instruction after it; without this the transfer would vanish from
	 * the branch list.  A conditional jump whose fall-through the event
	 * names was not taken.  Same rule as ptfast.c's confirm_to.
	 */
	if (x->o->branches && x->pending &&
	    (ev->type == ptev_async_disabled || ev->type == ptev_async_branch)) {
		uint64_t at = ev->type == ptev_async_disabled ? ev->variant.async_disabled.at :
			      ev->variant.async_branch.from;
		bool fallthrough = at == x->last.ip + x->last.size;

		if (at != x->last.ip && !(fallthrough && x->last.iclass == ptic_cond_jump)) {
			ret = last_branch_to(x, at, ev);
			if (ret)
				return ret;
		}
	}
	switch (ev->type) {
	case ptev_enabled:
	case ptev_disabled:
	case ptev_async_disabled:
	case ptev_async_branch:
	case ptev_overflow:
		x->pending = false;
		break;
	default:
		break;
	}
	return report(x, &it);
}

static int drain(struct dec *x, int status, int *ret)
{
	while (status >= 0 && (status & pts_event_pending)) {
		struct pt_event ev;

		status = pt_insn_event(x->d, &ev, sizeof(ev));
		if (status < 0)
			break;
		*ret = on_event(x, &ev);
		if (*ret)
			return status;
	}
	return status;
}

int tvh_pt_decode(const uint8_t *buf, size_t len, uint64_t offset,
		  struct pt_image *image, const struct tvh_pt_opts *opts,
		  tvh_pt_fn fn, void *ctx, struct tvh_pt_stats *stats)
{
	static const struct tvh_pt_opts defaults;
	struct pt_config cfg;
	struct tvh_pt_stats local;
	struct dec x = { .base = offset, .o = opts ? opts : &defaults, .fn = fn,
			 .ctx = ctx, .st = stats ? stats : &local };
	struct pt_image *own = NULL;
	uint64_t last_sync = 0;
	bool synced_once = false;
	int status, ret = 0;

	memset(x.st, 0, sizeof(*x.st));
	if (!len)
		return 0;
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	if (x.o->cpu.vendor != pcv_unknown) {
		cfg.cpu = x.o->cpu;
		if (pt_cpu_errata(&cfg.errata, &cfg.cpu) < 0)
			return -TVH_ERR_PT;
	}
	if (!tvh_snap_empty(x.o->snap)) {
		/* Per decode, so each thread of a parallel decode has its own clock. */
		x.mem = malloc(sizeof(*x.mem));
		if (!x.mem)
			return -TVH_ERR_NOMEM;
		tvh_snap_cursor_init(&x.mem->cur, x.o->snap);
		x.mem->tsc = 0;
		if (!image) {
			image = own = pt_image_alloc("snapshots");
			if (!own) {
				free(x.mem);
				return -TVH_ERR_NOMEM;
			}
		}
		pt_image_set_callback(image, tvh_pt_snap_read, x.mem);
	}
	x.d = pt_insn_alloc_decoder(&cfg);
	if (!x.d) {
		ret = -TVH_ERR_PT;
		goto out;
	}
	if (image && pt_insn_set_image(x.d, image) < 0) {
		ret = -TVH_ERR_PT;
		goto out;
	}
	for (;;) {
		struct tvh_pt_item it;
		uint64_t sync = 0;
		struct pt_insn insn;

		status = pt_insn_sync_forward(x.d);
		if (status < 0) {
			if (status == -pte_eos)
				break;
			memset(&it, 0, sizeof(it));
			it.kind = TVH_PT_ERROR;
			it.err = status;
			it.offset = dec_offset(&x);
			x.st->errors++;
			ret = report(&x, &it);
			/* No progress possible: stop rather than spin. */
			if (ret || (synced_once && it.offset - x.base <= last_sync))
				break;
			last_sync = it.offset - x.base;
			synced_once = true;
			continue;
		}
		pt_insn_get_sync_offset(x.d, &sync);
		if (synced_once && sync <= last_sync)
			break;
		last_sync = sync;
		synced_once = true;
		x.st->syncs++;
		x.pending = false;
		memset(&it, 0, sizeof(it));
		it.kind = TVH_PT_SYNC;
		it.offset = x.base + sync;
		ret = report(&x, &it);
		if (ret)
			break;
		uint64_t spin_off = UINT64_MAX, off_now;
		uint32_t spin = 0;

		for (;;) {
			status = drain(&x, status, &ret);
			if (ret || status < 0)
				break;
			if (status & pts_eos) {
				memset(&it, 0, sizeof(it));
				it.kind = TVH_PT_END;
				it.offset = dec_offset(&x);
				ret = report(&x, &it);
				status = -pte_eos;
				break;
			}
			memset(&insn, 0, sizeof(insn));
			if (x.mem)
				mem_clock(&x);
			status = pt_insn_next(x.d, &insn, sizeof(insn));
			if (status < 0) {
				/* The instruction may be good even when the next step is not. */
				if (insn.iclass != ptic_error)
					ret = on_insn(&x, &insn);
				break;
			}
			ret = on_insn(&x, &insn);
			if (ret)
				break;
			/* No PT byte read for too long: not the code that ran. */
			if (pt_insn_get_offset(x.d, &off_now) == 0) {
				if (off_now != spin_off) {
					spin_off = off_now;
					spin = 0;
				} else if (++spin >= TVH_PT_SPIN_LIMIT) {
					status = TVH_PT_ERR_SPIN;
					break;
				}
			}
		}
		if (ret)
			break;
		if (status == -pte_eos)
			continue;    /* the next sync_forward ends it or finds more */
		memset(&it, 0, sizeof(it));
		it.kind = TVH_PT_ERROR;
		it.err = status;
		it.offset = dec_offset(&x);
		it.ip = x.have_last ? x.last.ip : 0;
		x.st->errors++;
		x.pending = false;
		ret = report(&x, &it);
		if (ret)
			break;
	}
out:
	pt_insn_free_decoder(x.d);
	if (x.mem) {
		pt_image_set_callback(image, NULL, NULL);
		free(x.mem);
	}
	pt_image_free(own);
	return ret;
}

const char *tvh_pt_errstr(int err)
{
	if (err == TVH_PT_ERR_SPIN)
		return "no trace for 1,048,576 instructions: the code is not what ran (patched text?)";
	return pt_errstr(pt_errcode(err));
}

const char *tvh_pt_iclass_name(enum pt_insn_class c)
{
	switch (c) {
	case ptic_other: return "other";
	case ptic_call: return "call";
	case ptic_return: return "ret";
	case ptic_jump: return "jmp";
	case ptic_cond_jump: return "jcc";
	case ptic_far_call: return "far-call";
	case ptic_far_return: return "far-ret";
	case ptic_far_jump: return "far-jmp";
	case ptic_ptwrite: return "ptwrite";
	default: return "error";
	}
}

const char *tvh_pt_event_name(enum pt_event_type t)
{
	switch (t) {
	case ptev_enabled: return "enabled";
	case ptev_disabled: return "disabled";
	case ptev_async_disabled: return "async-disabled";
	case ptev_async_branch: return "async-branch";
	case ptev_paging: return "paging";
	case ptev_async_paging: return "async-paging";
	case ptev_overflow: return "overflow";
	case ptev_exec_mode: return "exec-mode";
	case ptev_tsx: return "tsx";
	case ptev_stop: return "stop";
	case ptev_vmcs: return "vmcs";
	case ptev_async_vmcs: return "async-vmcs";
	case ptev_exstop: return "exstop";
	case ptev_mwait: return "mwait";
	case ptev_pwre: return "pwre";
	case ptev_pwrx: return "pwrx";
	case ptev_ptwrite: return "ptwrite";
	case ptev_tick: return "tick";
	case ptev_cbr: return "cbr";
	case ptev_mnt: return "mnt";
	default: return "unknown";
	}
}

int tvh_pt_parse_cpu(const char *s, struct pt_cpu *cpu)
{
	unsigned long v[3] = { 0, 0, 0 };
	const char *p = s;
	int n = 0;

	memset(cpu, 0, sizeof(*cpu));
	if (!s || !*s)
		return -TVH_ERR_INVALID;
	for (;;) {
		char *end;

		errno = 0;
		v[n++] = strtoul(p, &end, 0);
		if (end == p || errno || *p == '-' || *p == '+')
			return -TVH_ERR_INVALID;
		if (!*end)
			break;
		if (*end != '/' || n == 3)
			return -TVH_ERR_INVALID;
		p = end + 1;
	}
	if (n < 2 || v[0] > 0xffff || v[1] > 0xff || v[2] > 0xff)
		return -TVH_ERR_INVALID;
	cpu->vendor = pcv_intel;
	cpu->family = (uint16_t)v[0];
	cpu->model = (uint8_t)v[1];
	cpu->stepping = (uint8_t)v[2];
	return 0;
}

/* PSB: 02 82 repeated 8 times (SDM 3C 33.4.2.17, PSB packet). */
size_t tvh_pt_next_psb(const uint8_t *buf, size_t len, size_t from)
{
	static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };
	const uint8_t *hit;

	if (from >= len)
		return len;
	hit = memmem(buf + from, len - from, psb, sizeof(psb));
	return hit ? (size_t)(hit - buf) : len;
}

struct pt_piece {
	pthread_t thread;
	const uint8_t *buf;
	size_t len;
	uint64_t offset;
	struct pt_image *image;
	const struct tvh_pt_opts *opts;
	tvh_pt_fn fn;
	void *ctx;
	struct tvh_pt_stats st;
	int ret;
	bool threaded;
};

static int count_only(void *ctx, const struct tvh_pt_item *it)
{
	(void)ctx;
	(void)it;
	return 0;
}

static void *piece_main(void *arg)
{
	struct pt_piece *p = arg;

	p->ret = tvh_pt_decode(p->buf, p->len, p->offset, p->image, p->opts,
			       p->fn, p->ctx, &p->st);
	return NULL;
}

int tvh_pt_decode_parallel(const uint8_t *buf, size_t len, uint64_t offset,
			   struct pt_image *const *images, unsigned nthreads,
			   const struct tvh_pt_opts *opts, tvh_pt_fn fn,
			   void *const *ctxs, struct tvh_pt_stats *stats)
{
	struct pt_piece *pc;
	size_t start = 0;
	unsigned n = 0;
	int ret = 0;

	memset(stats, 0, sizeof(*stats));
	if (!nthreads)
		return -TVH_ERR_INVALID;
	pc = calloc(nthreads, sizeof(*pc));
	if (!pc)
		return -TVH_ERR_NOMEM;
	/* Bytes before the first PSB cannot be decoded by anyone: piece 0 has them. */
	for (unsigned i = 0; i < nthreads && start < len; i++) {
		size_t end = i + 1 == nthreads ? len :
			tvh_pt_next_psb(buf, len, (size_t)((unsigned __int128)len * (i + 1) / nthreads));

		if (end <= start)
			continue;
		pc[n] = (struct pt_piece){ .buf = buf + start, .len = end - start,
			.offset = offset + start, .image = images[n], .opts = opts,
			.fn = fn ? fn : count_only, .ctx = ctxs ? ctxs[n] : NULL };
		start = end;
		n++;
	}
	for (unsigned i = 0; i < n; i++) {
		pc[i].threaded = !pthread_create(&pc[i].thread, NULL, piece_main, &pc[i]);
		if (!pc[i].threaded)
			piece_main(&pc[i]);         /* no thread: do it here */
	}
	for (unsigned i = 0; i < n; i++) {
		if (pc[i].threaded)
			pthread_join(pc[i].thread, NULL);
		if (pc[i].ret && !ret)
			ret = pc[i].ret;
		stats->insns += pc[i].st.insns;
		stats->branches += pc[i].st.branches;
		stats->events += pc[i].st.events;
		stats->syncs += pc[i].st.syncs;
		stats->errors += pc[i].st.errors;
	}
	free(pc);
	return ret;
}
