/* SPDX-License-Identifier: MIT */
/*
 * ptbranch.c - PT decoded into branch records for the walk's consumers
 * (see ptbranch.h).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/ptbranch.h"

void tvh_ptbr_init(struct tvh_ptbr *b, const struct tvh_pwalk_ops *inner,
		   void *inner_ctx, struct pt_image *image, const struct pt_cpu *cpu)
{
	memset(b, 0, sizeof(*b));
	b->inner = inner;
	b->inner_ctx = inner_ctx;
	b->image = image;
	b->opts.branches = true;
	if (cpu)
		b->opts.cpu = *cpu;
}

uint8_t tvh_ptbr_kind(enum pt_insn_class c, const uint8_t *raw, unsigned size)
{
	unsigned i = 0;
	uint8_t op, op2;

	/* Legacy prefixes, then REX (SDM 2A 2.1, 2.2.1). */
	while (i < size && (raw[i] == 0x26 || raw[i] == 0x2e || raw[i] == 0x36 ||
			    raw[i] == 0x3e || raw[i] == 0x64 || raw[i] == 0x65 ||
			    raw[i] == 0x66 || raw[i] == 0x67 || raw[i] == 0xf0 ||
			    raw[i] == 0xf2 || raw[i] == 0xf3))
		i++;
	if (i < size && (raw[i] & 0xf0) == 0x40)
		i++;
	op = i < size ? raw[i] : 0;
	op2 = i + 1 < size ? raw[i + 1] : 0;
	switch (c) {
	case ptic_call:
		return op == 0xe8 ? TV_BR_CALL : TV_BR_CALL_IND;
	case ptic_jump:
		return op == 0xe9 || op == 0xeb ? TV_BR_JMP : TV_BR_JMP_IND;
	case ptic_cond_jump:
		return TV_BR_JCC;
	case ptic_return:
		return TV_BR_RET;
	case ptic_far_call:
		if ((op == 0x0f && (op2 == 0x05 || op2 == 0x34)) || op == 0xcc ||
		    op == 0xcd || op == 0xce || op == 0xf1)
			return TV_BR_SYSCALL;
		return TV_BR_FAR;
	case ptic_far_return:
		if ((op == 0x0f && (op2 == 0x07 || op2 == 0x35)) || op == 0xcf)
			return TV_BR_SYSRET;
		return TV_BR_FAR;
	case ptic_far_jump:
		return TV_BR_FAR;
	default:
		return TV_BR_UNKNOWN;
	}
}

struct ptbr_cpu {
	struct tvh_ptbr *b;
	void *inner;             /* the consumer's context for this CPU */
	uint32_t cpu;
	struct tvh_pt_stream ps;
	struct tvh_pt_collector col;
	uint64_t nbranches;      /* seq of the next branch record */
	struct tvh_ptf_decoder **decs;   /* fast: one per job, caches kept across runs */
	unsigned ndecs;
	uint64_t insns;          /* decoded since the last branch or error passed on */
	struct tvh_event err;    /* an error held until the decoder resumes (skipped) */
	bool err_held;
};

static void *ptbr_begin(void *ctx, uint32_t cpu)
{
	struct tvh_ptbr *b = ctx;
	struct ptbr_cpu *pc = calloc(1, sizeof(*pc));

	if (!pc)
		return NULL;
	pc->inner = b->inner->begin(b->inner_ctx, cpu);
	if (!pc->inner) {
		free(pc);
		return NULL;
	}
	pc->b = b;
	pc->cpu = cpu;
	pc->col.s = &pc->ps;
	return pc;
}

static int ptbr_event(void *ctx, const struct tvh_event *ev)
{
	struct ptbr_cpu *pc = ctx;

	if (ev->kind == TVH_EV_PT || ev->kind == TVH_EV_PT_GAP ||
	    (ev->kind == TVH_EV_RECORD && ev->rec->type == TV_REC_PT_SYNC)) {
		int ret = tvh_pt_collect_event(&pc->col, ev);

		if (ret)
			return ret;
		if (ev->kind != TVH_EV_RECORD)
			return 0;     /* given to the consumer in order at the end */
	}
	return pc->b->inner->event(pc->inner, ev);
}

static int emit_gap(struct ptbr_cpu *pc, enum tvh_gap_kind kind, uint64_t offset,
		    uint64_t count, int err)
{
	struct tvh_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = TVH_EV_PT_GAP;
	ev.cpu = pc->cpu;
	ev.gap = kind;
	ev.pt_offset = offset;
	ev.count = count;
	ev.err = err;
	return pc->b->inner->event(pc->inner, &ev);
}

static int emit_branch(struct ptbr_cpu *pc, uint64_t offset, uint64_t from,
		       uint64_t to, uint8_t kind, bool has_tsc, uint64_t tsc)
{
	struct trace_event rec;
	struct tvh_event ev;

	memset(&rec, 0, sizeof(rec));
	rec.seq = pc->nbranches++;
	rec.type = TV_REC_BRANCH;
	rec.info = kind;
	rec.size = sizeof(struct tv_rec_branch);
	rec.has_tsc = has_tsc;
	rec.tsc = tsc;
	rec.u.branch.from = from;
	rec.u.branch.to = to;
	rec.u.branch.kind = kind;
	memset(&ev, 0, sizeof(ev));
	ev.kind = TVH_EV_RECORD;
	ev.cpu = pc->cpu;
	ev.rec = &rec;
	ev.pt = true;
	ev.pt_offset = offset;
	ev.insns = pc->insns;
	pc->insns = 0;
	pc->b->stats.branches++;
	return pc->b->inner->event(pc->inner, &ev);
}

/* The error held back, passed on with the bytes skipped up to resume. */
static int flush_error(struct ptbr_cpu *pc, uint64_t resume)
{
	if (!pc->err_held)
		return 0;
	pc->err_held = false;
	pc->err.skipped = resume > pc->err.pt_offset ? resume - pc->err.pt_offset : 0;
	return pc->b->inner->event(pc->inner, &pc->err);
}

/*
 * The end of a run: the error held, then the instructions after the
 * last branch, on a PT event without bytes (len 0) at the run's end.
 */
static int end_run(struct ptbr_cpu *pc, uint64_t end)
{
	struct tvh_event ev;
	int ret = flush_error(pc, end);

	if (ret || !pc->insns)
		return ret;
	memset(&ev, 0, sizeof(ev));
	ev.kind = TVH_EV_PT;
	ev.cpu = pc->cpu;
	ev.pt_offset = end;
	ev.insns = pc->insns;
	pc->insns = 0;
	return pc->b->inner->event(pc->inner, &ev);
}

/*
 * Every item: its instructions go with the next branch or error passed
 * on; an error is held until the next item (the sync the decoder resumed
 * at, or the run's end) says how many bytes were skipped.
 */
static int count_item(struct ptbr_cpu *pc, bool error, uint64_t insns,
		      uint64_t offset, int err, uint64_t ip)
{
	int ret;

	pc->insns += insns;
	ret = flush_error(pc, offset);
	if (!ret && error) {
		memset(&pc->err, 0, sizeof(pc->err));
		pc->err.kind = TVH_EV_PT_GAP;
		pc->err.cpu = pc->cpu;
		pc->err.gap = TVH_GAP_PT_ERROR;
		pc->err.pt_offset = offset;
		pc->err.err = err;
		pc->err.ip = ip;
		pc->err.insns = pc->insns;
		pc->insns = 0;
		pc->err_held = true;
	}
	return ret;
}

static int ptbr_item(void *ctx, const struct tvh_pt_item *it)
{
	struct ptbr_cpu *pc = ctx;
	const struct pt_event *e = it->event;
	int ret = count_item(pc, it->kind == TVH_PT_ERROR, it->insns, it->offset,
			     it->err, it->ip);

	if (ret)
		return ret;
	switch (it->kind) {
	case TVH_PT_BRANCH:
		return emit_branch(pc, it->offset, it->from, it->to,
				   tvh_ptbr_kind(it->iclass, it->insn ? it->insn->raw : NULL,
						 it->insn ? it->insn->size : 0),
				   it->has_tsc, it->tsc);
	case TVH_PT_EVENT:
		if (e->type == ptev_async_branch)
			return emit_branch(pc, it->offset, e->variant.async_branch.from,
					   e->variant.async_branch.to, TV_BR_INTERRUPT,
					   e->has_tsc, e->tsc);
		return 0;
	default:
		return 0;
	}
}

/* ---- the fast decoder ---------------------------------------------------- */

static int fast_item(void *ctx, const struct tvh_ptf_item *it)
{
	struct ptbr_cpu *pc = ctx;
	int ret = count_item(pc, it->kind == TVH_PTF_ERROR, it->insns, it->offset,
			     it->err, it->ip);

	if (!ret && it->kind == TVH_PTF_BRANCH)
		ret = emit_branch(pc, it->offset, it->from, it->to, it->br, it->has_tsc,
				  it->tsc);
	return ret;
}

static size_t snap_fallback(const void *ctx, uint64_t cr3, uint64_t ip, uint64_t tsc,
			    uint8_t *buf, size_t len)
{
	return tvh_snap_read(ctx, cr3, ip, tsc, buf, len);
}

static void snap_span(const void *ctx, uint64_t ip, uint64_t tsc, uint64_t *lo,
		      uint64_t *hi)
{
	tvh_snap_span(ctx, ip, tsc, lo, hi);
}

/* Records of one piece, kept until the pieces before it are passed on. */
struct piece_items {
	struct tvh_ptf_item *v;
	size_t n, cap;
	int err;
};

static int keep_item(void *ctx, const struct tvh_ptf_item *it)
{
	struct piece_items *p = ctx;

	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 4096;
		struct tvh_ptf_item *v = realloc(p->v, cap * sizeof(*v));

		if (!v) {
			p->err = -TVH_ERR_NOMEM;
			return p->err;
		}
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n++] = *it;
	return 0;
}

/* Bytes of PT per piece and window: bounds the records held at once. */
#define PTBR_PIECE_BYTES (1u << 20)
#define PTBR_MAX_JOBS 64u

static unsigned fast_jobs(const struct tvh_ptbr_fast *f)
{
	long n = f->jobs ? (long)f->jobs : sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1u : n > (long)PTBR_MAX_JOBS ? PTBR_MAX_JOBS : (unsigned)n;
}

/*
 * One run through ptfast: in one go with one job (or a short run), else
 * window by window of jobs pieces cut at sync points, each window's
 * pieces decoded at once and their records passed on in order.
 */
static int fast_run(struct ptbr_cpu *pc, const struct tvh_pt_run *run,
		    const struct tvh_ptf_opts *o, struct tvh_ptf_stats *st)
{
	unsigned jobs = fast_jobs(pc->b->fast);
	struct piece_items *items;
	void *ctxs[PTBR_MAX_JOBS];
	size_t start = 0, sync;
	int ret = 0;

	memset(st, 0, sizeof(*st));
	if (!pc->decs) {
		pc->decs = calloc(jobs, sizeof(*pc->decs));
		if (!pc->decs)
			return -TVH_ERR_NOMEM;
		pc->ndecs = jobs;
		for (unsigned i = 0; i < jobs; i++) {
			pc->decs[i] = tvh_ptf_alloc(o);
			if (!pc->decs[i])
				return -TVH_ERR_NOMEM;
		}
	}
	if (jobs == 1 || run->len <= PTBR_PIECE_BYTES)
		return tvh_ptf_decode(pc->decs[0], run->data, run->len, run->offset,
				      fast_item, pc, st);
	items = calloc(jobs, sizeof(*items));
	if (!items)
		return -TVH_ERR_NOMEM;
	for (unsigned i = 0; i < jobs; i++)
		ctxs[i] = &items[i];
	sync = tvh_ptf_first_sync(run->data, run->len);
	for (;;) {
		size_t want = start + (size_t)jobs * PTBR_PIECE_BYTES, end;
		struct tvh_ptf_stats ws;

		while (sync < run->len && sync < want)
			sync = tvh_ptf_next_sync(run->data, run->len, sync);
		end = sync < run->len ? sync : run->len;
		ret = tvh_ptf_decode_range_parallel(run->data, run->len, run->offset, start,
						    end, o, pc->decs, jobs, keep_item, ctxs,
						    NULL, &ws);
		for (unsigned i = 0; i < jobs; i++) {
			if (!ret && items[i].err)
				ret = items[i].err;
			for (size_t k = 0; !ret && k < items[i].n; k++)
				ret = fast_item(pc, &items[i].v[k]);
			items[i].n = 0;
		}
		st->insns += ws.insns;
		st->branches += ws.branches;
		st->syncs += ws.syncs;
		st->errors += ws.errors;
		st->fine_timing += ws.fine_timing;
		if (ret || end >= run->len)
			break;
		start = end;
	}
	for (unsigned i = 0; i < jobs; i++)
		free(items[i].v);
	free(items);
	return ret;
}

/* Decode the CPU's runs in stream order, losses between them. */
static int ptbr_decode(struct ptbr_cpu *pc)
{
	struct tvh_ptbr *b = pc->b;
	const struct tvh_pt_stream *ps = &pc->ps;
	size_t ci = 0;
	int ret = 0;

	b->stats.cpus++;
	b->stats.bytes += ps->bytes;
	b->stats.gap_bytes += ps->gap_bytes;
	b->stats.cut_bytes += ps->cut_bytes;
	b->stats.cuts += ps->ncuts;
	for (size_t i = 0; i < ps->nruns && !ret; i++) {
		const struct tvh_pt_run *run = &ps->runs[i];
		uint64_t prev_end = i ? ps->runs[i - 1].offset + ps->runs[i - 1].len : 0;
		struct tvh_pt_stats st;

		while (!ret && ci < ps->ncuts && ps->cuts[ci].offset <= prev_end) {
			ret = emit_gap(pc, TVH_GAP_PT_CUT, ps->cuts[ci].offset,
				       ps->cuts[ci].lost, 0);
			ci++;
		}
		if (!ret && run->offset > prev_end)
			ret = emit_gap(pc, i ? TVH_GAP_SEQ : TVH_GAP_HEAD, prev_end,
				       run->offset - prev_end, 0);
		while (!ret && ci < ps->ncuts && ps->cuts[ci].offset <= run->offset) {
			ret = emit_gap(pc, TVH_GAP_PT_CUT, ps->cuts[ci].offset,
				       ps->cuts[ci].lost, 0);
			ci++;
		}
		if (ret)
			break;
		if (b->fast && !tvh_ptf_fine_timing(run->data, run->len)) {
			struct tvh_ptf_opts fo = {
				.read = tvh_ptf_image_read, .read_ctx = (void *)b->fast->image,
				.fallback = b->fast->snap ? snap_fallback : NULL,
				.fallback_ctx = b->fast->snap,
				.fallback_span = b->fast->snap ? snap_span : NULL,
				.libipt_branches = true };
			struct tvh_ptf_stats fst;

			ret = fast_run(pc, run, &fo, &fst);
			if (!ret)
				ret = end_run(pc, run->offset + run->len);
			b->stats.errors += fst.errors;
			b->stats.syncs += fst.syncs;
			b->stats.fast_runs++;
			continue;
		}
		/* This CPU's PT_SYNC times: the snapshots' clock without TSC packets. */
		b->opts.times = ps->times;
		b->opts.ntimes = ps->ntimes;
		ret = tvh_pt_decode(run->data, run->len, run->offset, b->image,
				    &b->opts, ptbr_item, pc, &st);
		if (!ret)
			ret = end_run(pc, run->offset + run->len);
		b->stats.errors += st.errors;
		b->stats.syncs += st.syncs;
		b->stats.libipt_runs++;
	}
	for (; !ret && ci < ps->ncuts; ci++)
		ret = emit_gap(pc, TVH_GAP_PT_CUT, ps->cuts[ci].offset,
			       ps->cuts[ci].lost, 0);
	return ret;
}

static int ptbr_end(void *ctx, uint32_t cpu, void *cpu_ctx, bool aborted)
{
	struct tvh_ptbr *b = ctx;
	struct ptbr_cpu *pc = cpu_ctx;
	int ret = tvh_pt_collect_finish(&pc->col, 0), iret;

	if (!aborted && !ret && pc->ps.nruns)
		ret = ptbr_decode(pc);
	iret = b->inner->end(b->inner_ctx, cpu, pc->inner, aborted || ret);
	tvh_pt_stream_free(&pc->ps);
	for (unsigned i = 0; i < pc->ndecs; i++)
		tvh_ptf_free(pc->decs[i]);
	free(pc->decs);
	free(pc);
	return ret ? ret : iret;
}

static int ptbr_global(void *ctx, const struct tvh_event *ev)
{
	struct tvh_ptbr *b = ctx;

	return b->inner->global ? b->inner->global(b->inner_ctx, ev) : 0;
}

const struct tvh_pwalk_ops tvh_ptbr_ops = {
	.begin = ptbr_begin, .event = ptbr_event, .end = ptbr_end,
	.global = ptbr_global,
};
