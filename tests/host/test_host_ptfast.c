/* SPDX-License-Identifier: MIT */
/*
 * test_host_ptfast.c - the fast PT decoder (host-tools/lib/ptfast.c)
 * against libipt: a plain pt_insn_sync_forward / pt_insn_next /
 * pt_insn_event loop over the same code gives the reference taken-branch
 * sequence (each transfer with the next IP libipt reports, or the IP its
 * FUP / TIP.PGD names; FUP+TIP interrupts as TV_BR_INTERRUPT), the
 * straight runs and the instruction count (ptfast.h defines them); the
 * fast decoder must give exactly the same, in flow mode, in coverage
 * mode and split over 1..4 threads.  Streams: pt_fixture's (assembled
 * program), ptgen's (random code and executions with RET compression on
 * and off, PSB every N bytes, interrupts, TIP.PGD/PGE, OVF, MODE.Exec to
 * 16/32/64-bit code, PIP, timing packets, long TNT), and garbage (no
 * crash; equal wherever both decode without error).
 */
#define _GNU_SOURCE
#include <intel-pt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/pt.h"
#include "host-tools/lib/ptbranch.h"
#include "host-tools/lib/ptfast.h"
#include "host-tools/lib/ptfast_pkt.h"
#include "host-tools/lib/sym.h"
#include "tests/host/helpers.h"
#include "tests/host/pt_fixture.h"
#include "tests/host/ptgen.h"
#include "vmm/trace/format.h"

/* ---- a flow: branches, runs, instructions ---------------------------------- */

#define PTF_ANY (~0ull)

struct br {
	uint64_t from, to;
	uint8_t kind;
	uint64_t off;            /* fast: the packet's offset; wildcard: the OVF's */
};

struct flow {
	struct br *b;
	size_t n, cap;
	struct tvh_ptf_bb *runs;
	size_t nruns, runs_cap;
	uint64_t insns;
	unsigned errors, syncs;
	int first_err;
};

static void add_br_at(struct flow *f, uint64_t from, uint64_t to, uint8_t kind,
		      uint64_t off)
{
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 1024;
		f->b = realloc(f->b, f->cap * sizeof(*f->b));
		assert_non_null(f->b);
	}
	f->b[f->n++] = (struct br){ from, to, kind, off };
}

static void add_br(struct flow *f, uint64_t from, uint64_t to, uint8_t kind)
{
	add_br_at(f, from, to, kind, 0);
}

static void add_run(struct flow *f, uint64_t start, uint64_t end, uint32_t n)
{
	if (f->nruns == f->runs_cap) {
		f->runs_cap = f->runs_cap ? f->runs_cap * 2 : 1024;
		f->runs = realloc(f->runs, f->runs_cap * sizeof(*f->runs));
		assert_non_null(f->runs);
	}
	f->runs[f->nruns++] = (struct tvh_ptf_bb){ .start = start, .end = end,
						   .count = 1, .ninsns = n };
}

static void flow_free(struct flow *f)
{
	free(f->b);
	free(f->runs);
	memset(f, 0, sizeof(*f));
}

/* ---- the reference: libipt ------------------------------------------------- */

struct ref {
	struct flow *f;
	struct pt_insn_decoder *d;
	bool pending, in_run;
	struct pt_insn last;
	uint64_t run_start;
	uint32_t run_n;
};

static void ref_end_run(struct ref *r, uint64_t end)
{
	if (r->in_run && r->run_n)
		add_run(r->f, r->run_start, end, r->run_n);
	r->in_run = false;
	r->run_n = 0;
}

static uint8_t ref_kind(const struct pt_insn *in)
{
	return tvh_ptbr_kind(in->iclass, in->raw, in->size);
}

static void ref_resolve(struct ref *r, uint64_t dest)
{
	if (!r->pending)
		return;
	if (!(r->last.iclass == ptic_cond_jump && dest == r->last.ip + r->last.size))
		add_br(r->f, r->last.ip, dest, ref_kind(&r->last));
	r->pending = false;
}

static void ref_insn(struct ref *r, const struct pt_insn *in)
{
	ref_resolve(r, in->ip);
	if (!r->in_run) {
		r->in_run = true;
		r->run_start = in->ip;
		r->run_n = 0;
	}
	r->run_n++;
	r->f->insns++;
	r->last = *in;
	if (in->iclass != ptic_other && in->iclass != ptic_ptwrite) {
		ref_end_run(r, in->ip + in->size);
		r->pending = true;
	} else if (r->run_n == TVH_PTF_MAX_RUN) {
		ref_end_run(r, in->ip + in->size);
	}
}

static void ref_event(struct ref *r, const struct pt_event *ev)
{
	uint64_t here = r->last.ip + r->last.size;

	switch (ev->type) {
	case ptev_enabled:
		r->pending = false;
		ref_end_run(r, here);
		break;
	case ptev_disabled:
		if (!ev->ip_suppressed)
			ref_resolve(r, ev->variant.disabled.ip);
		r->pending = false;
		ref_end_run(r, here);
		break;
	case ptev_async_disabled:
		ref_resolve(r, ev->variant.async_disabled.at);
		ref_end_run(r, here);
		break;
	case ptev_async_branch:
		ref_resolve(r, ev->variant.async_branch.from);
		ref_end_run(r, here);
		add_br(r->f, ev->variant.async_branch.from, ev->variant.async_branch.to,
		       TV_BR_INTERRUPT);
		break;
	case ptev_overflow:
		/* libipt consumed the transfer's TNT bit or TIP but tells no
		 * one where it went: a wildcard (PTF_ANY) matches what the fast
		 * decoder reports for it, or nothing for a jcc not taken. */
		if (r->pending) {
			uint64_t off = 0;

			pt_insn_get_offset(r->d, &off);
			add_br_at(r->f, r->last.ip, PTF_ANY, ref_kind(&r->last), off);
		}
		r->pending = false;
		ref_end_run(r, here);
		break;
	default:
		if (ev->status_update)
			ref_end_run(r, here);
		break;
	}
}

static void ref_decode(const uint8_t *buf, size_t len, struct pt_image *img,
		       struct flow *f)
{
	struct pt_config cfg;
	struct pt_insn_decoder *d;
	struct ref r = { .f = f };

	memset(f, 0, sizeof(*f));
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	d = pt_insn_alloc_decoder(&cfg);
	assert_non_null(d);
	r.d = d;
	assert_int_equal(pt_insn_set_image(d, img), 0);
	for (;;) {
		int st = pt_insn_sync_forward(d);

		uint64_t spin_off = ~0ull;
		uint32_t spin = 0;

		if (st < 0)
			break;
		f->syncs++;
		for (;;) {
			struct pt_insn in;
			struct pt_event ev;
			uint64_t now = 0;

			while (st >= 0 && (st & pts_event_pending)) {
				st = pt_insn_event(d, &ev, sizeof(ev));
				if (st >= 0)
					ref_event(&r, &ev);
				else if (!f->errors++)   /* an event lost (a cut packet after it) */
					f->first_err = st;
			}
			if (st >= 0 && (st & pts_eos) && r.pending) {
				/* The last transfer's destination: where libipt stands. */
				memset(&in, 0, sizeof(in));
				pt_insn_next(d, &in, sizeof(in));
				ref_resolve(&r, in.ip);
			}
			if (st < 0 || (st & pts_eos))
				break;
			memset(&in, 0, sizeof(in));
			st = pt_insn_next(d, &in, sizeof(in));
			if (st < 0) {
				if (in.iclass != ptic_error)
					ref_insn(&r, &in);
				/* A transfer whose next step hit the end: where it
				 * went, libipt may know but does not tell. */
				if (st == -pte_eos && r.pending && !f->errors++)
					f->first_err = st;
				break;
			}
			ref_insn(&r, &in);
			/* tvh_pt_decode's bound (pt.h): no PT byte read for
			 * TVH_PT_SPIN_LIMIT instructions ends the run. */
			if (pt_insn_get_offset(d, &now) == 0) {
				if (now != spin_off) {
					spin_off = now;
					spin = 0;
				} else if (++spin >= TVH_PT_SPIN_LIMIT) {
					st = TVH_PT_ERR_SPIN;
					break;
				}
			}
		}
		ref_end_run(&r, r.last.ip + r.last.size);
		r.pending = false;
		if (st < 0 && st != -pte_eos) {
			uint64_t eoff = 0;

			pt_insn_get_offset(d, &eoff);
			if (getenv("PTF_DEBUG"))
				print_message("libipt error %d at 0x%llx, last insn 0x%llx\n", st,
					      (unsigned long long)eoff, (unsigned long long)r.last.ip);
			if (!f->errors++)
				f->first_err = st;
		}
	}
	pt_insn_free_decoder(d);
}

/* ---- the fast decoder --------------------------------------------------------- */

static int fast_item(void *ctx, const struct tvh_ptf_item *it)
{
	struct flow *f = ctx;

	if (getenv("PTF_TRACE"))
		print_message("fast: kind %d off 0x%llx %llx->%llx br %u err %d\n", it->kind,
			      (unsigned long long)it->offset, (unsigned long long)it->from,
			      (unsigned long long)it->to, it->br, it->err);
	switch (it->kind) {
	case TVH_PTF_BRANCH:
		add_br_at(f, it->from, it->to, it->br, it->offset);
		break;
	case TVH_PTF_ERROR:
		if (!f->errors++)
			f->first_err = it->err;
		break;
	case TVH_PTF_SYNC:
		f->syncs++;
		break;
	default:
		break;
	}
	return 0;
}

static int cmp_run(const void *a, const void *b)
{
	const struct tvh_ptf_bb *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return 0;
}

static int cmp_br(const void *a, const void *b)
{
	const struct br *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	return (int)x->kind - (int)y->kind;
}

/* Sorted runs with counts summed, like tvh_ptf_cov's. */
static size_t fold_runs(struct tvh_ptf_bb *v, size_t n)
{
	size_t k = 0;

	qsort(v, n, sizeof(*v), cmp_run);
	for (size_t i = 0; i < n; i++) {
		if (k && !cmp_run(&v[k - 1], &v[i])) {
			assert_int_equal(v[k - 1].ninsns, v[i].ninsns);
			v[k - 1].count += v[i].count;
		} else {
			v[k++] = v[i];
		}
	}
	return k;
}

static void dump(const struct flow *a, const struct flow *b, size_t at)
{
	if (!getenv("PTF_DEBUG"))
		return;
	for (size_t i = at > 4 ? at - 4 : 0; i < at + 4; i++)
		print_message("%zu: %llx->%llx (%u) | %llx->%llx (%u)\n", i,
			      i < a->n ? (unsigned long long)a->b[i].from : 0ull,
			      i < a->n ? (unsigned long long)a->b[i].to : 0ull,
			      i < a->n ? a->b[i].kind : 0,
			      i < b->n ? (unsigned long long)b->b[i].from : 0ull,
			      i < b->n ? (unsigned long long)b->b[i].to : 0ull,
			      i < b->n ? b->b[i].kind : 0);
}

/* Resolve ref's wildcards against fast's branches (see ref_event). */
static void resolve_any(struct flow *ref, const struct flow *fast)
{
	size_t i, j = 0, k = 0;

	for (i = 0; i < ref->n; i++) {
		if (ref->b[i].to != PTF_ANY) {
			ref->b[k++] = ref->b[i];
			j++;
			continue;
		}
		if (j < fast->n && fast->b[j].from == ref->b[i].from &&
		    fast->b[j].kind == ref->b[i].kind && fast->b[j].off < ref->b[i].off) {
			ref->b[k++] = fast->b[j++];
		}
	}
	ref->n = k;
}

static void expect_same_branches(const struct flow *a, const struct flow *b, const char *what)
{
	size_t n = a->n < b->n ? a->n : b->n;

	for (size_t i = 0; i < n; i++)
		if (a->b[i].from != b->b[i].from || a->b[i].to != b->b[i].to ||
		    a->b[i].kind != b->b[i].kind) {
			dump(a, b, i);
			break;
		}
	if (a->n != b->n)
		dump(a, b, n);

	for (size_t i = 0; i < n; i++)
		if (a->b[i].from != b->b[i].from || a->b[i].to != b->b[i].to ||
		    a->b[i].kind != b->b[i].kind)
			fail_msg("%s: branch %zu of %zu/%zu: 0x%llx->0x%llx (%u) vs 0x%llx->0x%llx (%u)",
				 what, i, a->n, b->n,
				 (unsigned long long)a->b[i].from, (unsigned long long)a->b[i].to,
				 a->b[i].kind, (unsigned long long)b->b[i].from,
				 (unsigned long long)b->b[i].to, b->b[i].kind);
	if (a->n != b->n)
		fail_msg("%s: %zu branches vs %zu", what, a->n, b->n);
}

/* The coverage against the reference's branches and runs. */
static void expect_coverage(const struct tvh_ptf_cov *c, struct flow *ref)
{
	struct br *b = malloc((ref->n + 1) * sizeof(*b));
	size_t k = 0, nr;

	assert_non_null(b);
	memcpy(b, ref->b, ref->n * sizeof(*b));
	qsort(b, ref->n, sizeof(*b), cmp_br);
	for (size_t i = 0; i < ref->n; k++) {
		uint64_t count = 0;
		size_t j = i;

		while (j < ref->n && !cmp_br(&b[i], &b[j]))
			j++, count++;
		if (k >= c->nedges || c->edges[k].from != b[i].from ||
		    c->edges[k].to != b[i].to || c->edges[k].br != b[i].kind ||
		    c->edges[k].count != count)
			fail_msg("edge %zu: 0x%llx->0x%llx x%llu, coverage has %zu edges", k,
				 (unsigned long long)b[i].from, (unsigned long long)b[i].to,
				 (unsigned long long)count, c->nedges);
		i = j;
	}
	assert_int_equal(k, c->nedges);
	free(b);
	nr = fold_runs(ref->runs, ref->nruns);
	ref->nruns = nr;
	for (size_t i = 0; i < nr; i++)
		if (i >= c->nblocks || c->blocks[i].start != ref->runs[i].start ||
		    c->blocks[i].end != ref->runs[i].end ||
		    c->blocks[i].count != ref->runs[i].count ||
		    c->blocks[i].ninsns != ref->runs[i].ninsns)
			fail_msg("run %zu: 0x%llx..0x%llx x%llu (%u insns); coverage: 0x%llx..0x%llx x%llu (%u)",
				 i, (unsigned long long)ref->runs[i].start,
				 (unsigned long long)ref->runs[i].end,
				 (unsigned long long)ref->runs[i].count, ref->runs[i].ninsns,
				 i < c->nblocks ? (unsigned long long)c->blocks[i].start : 0ull,
				 i < c->nblocks ? (unsigned long long)c->blocks[i].end : 0ull,
				 i < c->nblocks ? (unsigned long long)c->blocks[i].count : 0ull,
				 i < c->nblocks ? c->blocks[i].ninsns : 0u);
	assert_int_equal(nr, c->nblocks);
	assert_int_equal(ref->insns, c->insns);
}

/* ---- opts.libipt_branches against tvh_pt_decode (what the tools use) ---------- */

struct tbr {
	uint64_t from, to, tsc;
	uint8_t kind, has_tsc;
	uint64_t insns;          /* items' insns since the record before (ptbranch.c) */
};

struct tflow {
	struct tbr *v;
	size_t n, cap;
	unsigned errors;
	uint64_t fine_timing;
	uint64_t pend, insns;    /* items' insns: since the last record, in all */
};

/* An item's instructions, and the record it made (if any) takes those pending. */
static void tinsns(struct tflow *f, size_t n_before, uint64_t insns)
{
	f->pend += insns;
	f->insns += insns;
	if (f->n > n_before) {
		f->v[f->n - 1].insns = f->pend;
		f->pend = 0;
	}
}

static void tadd(struct tflow *f, uint64_t from, uint64_t to, uint8_t kind, bool has_tsc,
		 uint64_t tsc)
{
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 1024;
		f->v = realloc(f->v, f->cap * sizeof(*f->v));
		assert_non_null(f->v);
	}
	f->v[f->n++] = (struct tbr){ from, to, has_tsc ? tsc : 0, kind, has_tsc, 0 };
}

/* As ptbranch.c's ptbr_item turns tvh_pt_decode's items into records. */
static int tipt_item(void *ctx, const struct tvh_pt_item *it)
{
	struct tflow *f = ctx;
	size_t n = f->n;

	if (it->kind == TVH_PT_BRANCH)
		tadd(f, it->from, it->to, tvh_ptbr_kind(it->iclass, it->insn->raw, it->insn->size),
		     it->has_tsc, it->tsc);
	else if (it->kind == TVH_PT_EVENT && it->event->type == ptev_async_branch)
		tadd(f, it->event->variant.async_branch.from, it->event->variant.async_branch.to,
		     TV_BR_INTERRUPT, it->event->has_tsc, it->event->tsc);
	else if (it->kind == TVH_PT_ERROR)
		f->errors++;
	tinsns(f, n, it->insns);
	return 0;
}

static int tfast_item(void *ctx, const struct tvh_ptf_item *it)
{
	struct tflow *f = ctx;
	size_t n = f->n;

	if (getenv("PTF_TRACE"))
		print_message("tfast: kind %d off 0x%llx %llx->%llx\n", it->kind,
			      (unsigned long long)it->offset, (unsigned long long)it->from,
			      (unsigned long long)it->to);
	if (it->kind == TVH_PTF_BRANCH)
		tadd(f, it->from, it->to, it->br, it->has_tsc, it->tsc);
	else if (it->kind == TVH_PTF_ERROR)
		f->errors++;
	tinsns(f, n, it->insns);
	return 0;
}

/* Records equal (fails otherwise); returns whether the times are too. */
static bool tflow_expect(const struct tflow *a, const struct tflow *b, bool time,
			 const char *what)
{
	bool same_time = true;

	for (size_t i = 0; i < a->n && i < b->n; i++) {
		const struct tbr *x = &a->v[i], *y = &b->v[i];

		if ((x->from != y->from || x->to != y->to || x->kind != y->kind ||
		     (time && (x->has_tsc != y->has_tsc || x->tsc != y->tsc))) && getenv("PTF_DEBUG"))
			for (size_t k = i > 5 ? i - 5 : 0; k < i + 5 && k < a->n && k < b->n; k++)
				print_message("%zu: %llx->%llx (%u) %llx | %llx->%llx (%u) %llx\n", k,
					      (unsigned long long)a->v[k].from,
					      (unsigned long long)a->v[k].to, a->v[k].kind,
					      (unsigned long long)a->v[k].tsc,
					      (unsigned long long)b->v[k].from,
					      (unsigned long long)b->v[k].to, b->v[k].kind,
					      (unsigned long long)b->v[k].tsc);
		if (time && (x->has_tsc != y->has_tsc || x->tsc != y->tsc)) {
			if (same_time && getenv("PTF_DEBUG"))
				print_message("%s: record %zu: time differs\n", what, i);
			same_time = false;
		}
		if (x->from != y->from || x->to != y->to || x->kind != y->kind)
			fail_msg("%s: record %zu of %zu/%zu: 0x%llx->0x%llx (%u) tsc %u:%llx vs "
				 "0x%llx->0x%llx (%u) tsc %u:%llx", what, i, a->n, b->n,
				 (unsigned long long)x->from, (unsigned long long)x->to, x->kind,
				 x->has_tsc, (unsigned long long)x->tsc,
				 (unsigned long long)y->from, (unsigned long long)y->to, y->kind,
				 y->has_tsc, (unsigned long long)y->tsc);
		/* report --phases: the same instructions before each record */
		if (x->insns != y->insns)
			fail_msg("%s: record %zu 0x%llx->0x%llx: %llu instructions vs %llu", what,
				 i, (unsigned long long)x->from, (unsigned long long)x->to,
				 (unsigned long long)x->insns, (unsigned long long)y->insns);
	}
	if (a->n != b->n)
		fail_msg("%s: %zu records vs %zu", what, a->n, b->n);
	if (a->insns != b->insns || a->pend != b->pend)
		fail_msg("%s: %llu instructions (%llu after the last record) vs %llu (%llu)", what,
			 (unsigned long long)a->insns, (unsigned long long)a->pend,
			 (unsigned long long)b->insns, (unsigned long long)b->pend);
	return same_time;
}

static unsigned tool_compared, tool_timed, tool_time_equal;
static unsigned tool_err_compared, tool_err_equal;
static bool tool_psb_tsc;    /* every PSB+ has a TSC: pieces have the time too */

/*
 * tvh_pt_decode's branches (as ptbranch makes records of them) against
 * ptfast with libipt_branches, one thread and pieces: where neither
 * reports an error, the same records in the same order, with the same
 * time when the stream has no MTC/CYC.
 */
static void tool_differential(const uint8_t *buf, size_t len, tvh_ptf_read_fn read,
			      void *read_ctx, unsigned max_threads)
{
	struct pt_image *img = pt_image_alloc("ptfast-tool");
	struct tvh_pt_opts po = { .branches = true };
	struct tvh_ptf_opts o = { .read = read, .read_ctx = read_ctx, .libipt_branches = true };
	struct tvh_ptf_decoder *d = tvh_ptf_alloc(&o);
	struct tflow a = { 0 }, b = { 0 };
	struct tvh_ptf_stats st;

	assert_non_null(img);
	assert_non_null(d);
	assert_int_equal(pt_image_set_callback(img, read, read_ctx), 0);
	assert_int_equal(tvh_pt_decode(buf, len, 0, img, &po, tipt_item, &a, NULL), 0);
	assert_int_equal(tvh_ptf_decode(d, buf, len, 0, tfast_item, &b, &st), 0);
	if (!a.errors && !b.errors) {
		bool t = tflow_expect(&a, &b, !st.fine_timing,
				      "tvh_pt_decode vs ptfast (libipt_branches)");

		tool_compared++;
		tool_timed += !st.fine_timing;
		tool_time_equal += !st.fine_timing && t;
	} else if (a.errors == b.errors && a.n == b.n) {
		bool same = a.insns == b.insns, recs = true;

		for (size_t i = 0; i < a.n; i++) {
			same &= a.v[i].insns == b.v[i].insns;
			recs &= a.v[i].from == b.v[i].from && a.v[i].to == b.v[i].to;
		}
		tool_err_compared += recs;
		tool_err_equal += recs && same;
		if (recs && !same && getenv("PTF_DEBUG"))
			print_message("errors %u: insns %llu vs %llu\n", a.errors,
				      (unsigned long long)a.insns, (unsigned long long)b.insns);
	}
	for (unsigned t = 2; t <= max_threads; t++) {
		struct tflow parts[4], all = { 0 };
		void *ctxs[4];

		memset(parts, 0, sizeof(parts));
		for (unsigned i = 0; i < t; i++)
			ctxs[i] = &parts[i];
		assert_int_equal(tvh_ptf_decode_parallel(buf, len, 0, &o, t, tfast_item, ctxs,
							 NULL, NULL), 0);
		for (unsigned i = 0; i < t; i++) {
			for (size_t k = 0; k < parts[i].n; k++) {
				tadd(&all, parts[i].v[k].from, parts[i].v[k].to, parts[i].v[k].kind,
				     parts[i].v[k].has_tsc, parts[i].v[k].tsc);
				/* a piece's last instructions go with the next record */
				tinsns(&all, all.n - 1, parts[i].v[k].insns);
			}
			tinsns(&all, all.n, parts[i].pend);
			all.errors += parts[i].errors;
			free(parts[i].v);
		}
		assert_true(tflow_expect(&b, &all, tool_psb_tsc, "libipt_branches: 1 thread vs pieces"));
		assert_int_equal(all.errors, b.errors);
		free(all.v);
	}
	free(a.v);
	free(b.v);
	tvh_ptf_free(d);
	pt_image_free(img);
}

/*
 * Both decoders on buf; strict: neither may report an error and all must
 * agree, else compare only when both decode without error.  Returns
 * whether the comparison happened.
 */
static bool must_accept;     /* what libipt accepts, ptfast must */

static bool differential(const uint8_t *buf, size_t len, tvh_ptf_read_fn read,
			 void *read_ctx, bool strict, unsigned max_threads)
{
	struct pt_image *img = pt_image_alloc("ptfast-test");
	struct tvh_ptf_opts o = { .read = read, .read_ctx = read_ctx, .coverage = true };
	struct tvh_ptf_decoder *d = tvh_ptf_alloc(&o);
	struct flow ref, fast = { 0 };
	struct tvh_ptf_cov cov;
	struct tvh_ptf_stats st;
	bool compared = false;

	assert_non_null(img);
	assert_non_null(d);
	assert_int_equal(pt_image_set_callback(img, read, read_ctx), 0);
	ref_decode(buf, len, img, &ref);
	assert_int_equal(tvh_ptf_decode(d, buf, len, 0, fast_item, &fast, &st), 0);
	assert_int_equal(tvh_ptf_coverage(d, &cov), 0);
	assert_int_equal(st.errors, fast.errors);
	if (strict) {
		if (ref.errors)
			fail_msg("libipt: %u errors, first %s", ref.errors,
				 pt_errstr(pt_errcode(ref.first_err)));
		if (fast.errors)
			fail_msg("ptfast: %u errors, first %s", fast.errors,
				 pt_errstr(pt_errcode(fast.first_err)));
	}
	if (getenv("PTF_DEBUG") && ref.errors)
		print_message("libipt refuses: %s\n", pt_errstr(pt_errcode(ref.first_err)));
	if (must_accept && !ref.errors && fast.errors)
		fail_msg("libipt accepts, ptfast: %u errors, first %s", fast.errors,
			 pt_errstr(pt_errcode(fast.first_err)));
	if (!ref.errors && !fast.errors) {
		resolve_any(&ref, &fast);
		expect_same_branches(&ref, &fast, "libipt vs ptfast");
		assert_int_equal(ref.insns, st.insns);
		expect_coverage(&cov, &ref);
		compared = true;
	}
	/* Pieces: the same items, the same coverage, whatever the input. */
	for (unsigned t = 2; t <= max_threads; t++) {
		struct flow parts[4];
		void *ctxs[4];
		struct flow all = { 0 };
		struct tvh_ptf_cov pc;
		struct tvh_ptf_stats pst;

		memset(parts, 0, sizeof(parts));
		for (unsigned i = 0; i < t; i++)
			ctxs[i] = &parts[i];
		assert_int_equal(tvh_ptf_decode_parallel(buf, len, 0, &o, t, fast_item, ctxs,
							 &pc, &pst), 0);
		for (unsigned i = 0; i < t; i++) {
			for (size_t k = 0; k < parts[i].n; k++)
				add_br(&all, parts[i].b[k].from, parts[i].b[k].to, parts[i].b[k].kind);
			all.errors += parts[i].errors;
			flow_free(&parts[i]);
		}
		expect_same_branches(&fast, &all, "1 thread vs pieces");
		assert_int_equal(all.errors, fast.errors);
		assert_int_equal(pst.insns, st.insns);
		if (getenv("PTF_DEBUG") && (pc.nedges != cov.nedges ||
		    memcmp(pc.edges, cov.edges, cov.nedges * sizeof(*cov.edges)))) {
			for (size_t i = 0; i < cov.nedges || i < pc.nedges; i++)
				print_message("edge %zu: %llx->%llx x%llu | %llx->%llx x%llu\n", i,
					      i < cov.nedges ? (unsigned long long)cov.edges[i].from : 0ull,
					      i < cov.nedges ? (unsigned long long)cov.edges[i].to : 0ull,
					      i < cov.nedges ? (unsigned long long)cov.edges[i].count : 0ull,
					      i < pc.nedges ? (unsigned long long)pc.edges[i].from : 0ull,
					      i < pc.nedges ? (unsigned long long)pc.edges[i].to : 0ull,
					      i < pc.nedges ? (unsigned long long)pc.edges[i].count : 0ull);
		}
		if (getenv("PTF_DEBUG") && pc.nblocks != cov.nblocks) {
			for (size_t i = 0; i < cov.nblocks || i < pc.nblocks; i++)
				print_message("run %zu: %llx..%llx x%llu | %llx..%llx x%llu\n", i,
					      i < cov.nblocks ? (unsigned long long)cov.blocks[i].start : 0ull,
					      i < cov.nblocks ? (unsigned long long)cov.blocks[i].end : 0ull,
					      i < cov.nblocks ? (unsigned long long)cov.blocks[i].count : 0ull,
					      i < pc.nblocks ? (unsigned long long)pc.blocks[i].start : 0ull,
					      i < pc.nblocks ? (unsigned long long)pc.blocks[i].end : 0ull,
					      i < pc.nblocks ? (unsigned long long)pc.blocks[i].count : 0ull);
		}
		assert_int_equal(pc.nedges, cov.nedges);
		assert_int_equal(pc.nblocks, cov.nblocks);
		assert_memory_equal(pc.edges, cov.edges, cov.nedges * sizeof(*cov.edges));
		assert_memory_equal(pc.blocks, cov.blocks, cov.nblocks * sizeof(*cov.blocks));
		tvh_ptf_cov_free(&pc);
		flow_free(&all);
	}
	tvh_ptf_cov_free(&cov);
	flow_free(&ref);
	flow_free(&fast);
	tvh_ptf_free(d);
	pt_image_free(img);
	tool_differential(buf, len, read, read_ctx, max_threads);
	return compared;
}

/* ---- the fixture -------------------------------------------------------------- */

static struct pt_fixture fx;
static struct tvh_symtab st;
static struct tvh_ptf_image fimg;

static int setup(void **state)
{
	(void)state;
	if (ptf_build(&fx))
		return -1;
	tvh_symtab_init(&st);
	if (tvh_symtab_add(&st, fx.elf) || tvh_ptf_image_from_symtab(&fimg, &st))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tvh_ptf_image_free(&fimg);
	tvh_symtab_free(&st);
	ptf_free(&fx);
	return 0;
}

static void test_fixture(void **state)
{
	uint8_t buf[1024];
	size_t len = 0;
	struct tvh_ptf_opts o = { .read = tvh_ptf_image_read, .read_ctx = &fimg };
	struct tvh_ptf_decoder *d = tvh_ptf_alloc(&o);
	struct flow f = { 0 };

	(void)state;
	ptf_encode(&fx, buf, sizeof(buf), &len, 1);
	assert_true(differential(buf, len, tvh_ptf_image_read, &fimg, true, 4));
	/* And against the fixture's own truth. */
	assert_int_equal(tvh_ptf_decode(d, buf, len, 0, fast_item, &f, NULL), 0);
	assert_int_equal(f.n, fx.ntaken);
	for (unsigned i = 0; i < fx.ntaken; i++) {
		assert_int_equal(f.b[i].from, fx.taken[i].from);
		assert_int_equal(f.b[i].to, fx.taken[i].to);
	}
	flow_free(&f);
	/* Two runs back to back, a broken compressed return, a cut stream. */
	len = 0;
	ptf_encode(&fx, buf, sizeof(buf), &len, 1);
	ptf_encode(&fx, buf, sizeof(buf), &len, 1);
	assert_true(differential(buf, len, tvh_ptf_image_read, &fimg, true, 4));
	len = 0;
	ptf_encode(&fx, buf, sizeof(buf), &len, 0);
	ptf_encode(&fx, buf, sizeof(buf), &len, 1);
	differential(buf, len, tvh_ptf_image_read, &fimg, false, 4);
	assert_int_equal(tvh_ptf_decode(d, buf, len, 0, fast_item, &f, NULL), 0);
	assert_int_equal(f.errors, 1);
	assert_int_equal(f.first_err, -pte_bad_retcomp);
	flow_free(&f);
	{
		size_t cut, resume;

		ptf_encode_cut(&fx, buf, sizeof(buf), &len, &cut, &resume);
		differential(buf, len, tvh_ptf_image_read, &fimg, false, 4);
		differential(buf, cut, tvh_ptf_image_read, &fimg, true, 4);
		differential(buf + cut, len - cut, tvh_ptf_image_read, &fimg, false, 4);
	}
	tvh_ptf_free(d);
}

/* ---- generated streams -------------------------------------------------------- */

static unsigned gen_compared, gen_total;

/*
 * Where libipt decodes the stream without error the fast decoder must
 * too, with the same result; a stream libipt refuses is a generator
 * mistake (counted: at most 1 in 20 may be).
 */
static void gen_case(const struct ptgen_opts *o, unsigned threads)
{
	struct ptgen g;

	assert_int_equal(ptgen_make(&g, o), 0);
	/* PTF_DEBUG_DIR=dir: keep each stream and its code there. */
	if (getenv("PTF_DEBUG_DIR")) {
		const char *dir = getenv("PTF_DEBUG_DIR");
		char name[512];
		FILE *f;

		snprintf(name, sizeof(name), "%s/case-%llu-%zu.pt", dir, (unsigned long long)o->seed, o->bytes);
		f = fopen(name, "wb");

		fwrite(g.buf, 1, g.len, f);
		fclose(f);
		for (size_t i = 0; i < g.image.nsegs; i++) {
			snprintf(name, sizeof(name), "%s/case-%llu-%zu-%llx.bin", dir,
				 (unsigned long long)o->seed, o->bytes,
				 (unsigned long long)g.image.segs[i].vaddr);
			f = fopen(name, "wb");
			fwrite(g.image.segs[i].bytes, 1, g.image.segs[i].size, f);
			fclose(f);
		}
		print_message("seed %llu len %zu\n", (unsigned long long)o->seed, g.len);
	}
	gen_total++;
	if (getenv("PTF_DEBUG"))
		print_message("seed %llu\n", (unsigned long long)o->seed);
	must_accept = true;
	gen_compared += differential(g.buf, g.len, tvh_ptf_image_read, &g.image, false,
				     threads);
	must_accept = false;
	ptgen_free(&g);
}

static void test_generated_plain(void **state)
{
	(void)state;
	unsigned only = getenv("PTF_SEED") ? (unsigned)atoi(getenv("PTF_SEED")) : 0;

	for (unsigned s = only ? only : 1; s <= (only ? only : 40); s++) {
		struct ptgen_opts o = { .seed = s, .bytes = 2048 + s * 97, .retcomp = s & 1,
					.psb_every = s % 3 ? 512 : 0, .nblocks = 60 };

		gen_case(&o, s % 5 ? 1 : 3);
	}
	print_message("generated (plain): %u of %u streams accepted by libipt and compared\n",
		      gen_compared, gen_total);
	assert_true(gen_compared * 20 >= gen_total * 19);
	gen_compared = gen_total = 0;
}

static void test_generated_events(void **state)
{
	unsigned only = getenv("PTF_SEED") ? (unsigned)atoi(getenv("PTF_SEED")) : 0;

	(void)state;
	for (unsigned s = only ? only : 100; s < (only ? only + 1 : 260); s++) {
		struct ptgen_opts o = { .seed = s, .bytes = 4096, .retcomp = (s >> 1) & 1,
					.psb_every = 256 + (s % 7) * 300,
					.p_async = 40, .p_disable = 60, .p_ovf = 10,
					.p_mode = 80, .p_timing = 150, .p_pip = 100,
					.nblocks = 40 + s % 100, .long_tnt = s & 1 };

		gen_case(&o, s % 8 ? 1 : 4);
	}
	print_message("generated (events): %u of %u streams accepted by libipt and compared\n",
		      gen_compared, gen_total);
	assert_true(gen_compared * 20 >= gen_total * 19);
	gen_compared = gen_total = 0;
}

/*
 * What the tools see: streams with TSC packets (in every PSB+, as with
 * TSCEn, and between), every event kind: ptfast with libipt_branches
 * gives tvh_pt_decode's branch records with their times, in one go and
 * in pieces.
 */
static void test_generated_tool(void **state)
{
	unsigned only = getenv("PTF_SEED") ? (unsigned)atoi(getenv("PTF_SEED")) : 0;

	(void)state;
	tool_compared = tool_timed = tool_time_equal = 0;
	tool_psb_tsc = true;
	for (unsigned s = only ? only : 300; s < (only ? only + 1 : 400); s++) {
		struct ptgen_opts o = { .seed = s, .bytes = 4096, .retcomp = (s >> 1) & 1,
					.psb_every = 256 + (s % 7) * 300,
					.p_async = s % 3 ? 40 : 0, .p_disable = 60, .p_ovf = s % 4 ? 0 : 10,
					.p_mode = 80, .p_timing = 200, .p_pip = 100,
					.nblocks = 40 + s % 100, .long_tnt = s & 1, .tsc_only = 1 };
		struct ptgen g;

		assert_int_equal(ptgen_make(&g, &o), 0);
		if (getenv("PTF_DEBUG"))
			print_message("tool seed %u\n", s);
		if (getenv("PTF_DEBUG_DIR")) {
			char name[512];
			FILE *f;

			snprintf(name, sizeof(name), "%s/tool-%u.pt", getenv("PTF_DEBUG_DIR"), s);
			f = fopen(name, "wb");
			assert_non_null(f);
			fwrite(g.buf, 1, g.len, f);
			fclose(f);
		}
		tool_differential(g.buf, g.len, tvh_ptf_image_read, &g.image, s % 4 ? 1 : 4);
		ptgen_free(&g);
	}
	tool_psb_tsc = false;
	print_message("tool records: %u of 100 streams decoded by both without error, all "
		      "equal; with TSC only %u, times equal in %u\n", tool_compared, tool_timed,
		      tool_time_equal);
	assert_true(tool_timed * 20 >= 100 * 19 || only);
	/* Times: see ptfast.h (a TSC packet between an event and the
	 * packet libipt reads around it); 74 of 95 on these dense streams. */
	assert_true(tool_time_equal * 4 >= tool_timed * 3 || only);
}

static void test_generated_big(void **state)
{
	struct ptgen_opts o = { .seed = 7, .bytes = 1 << 20, .retcomp = 1,
				.psb_every = 4096, .p_async = 2, .p_disable = 5,
				.p_ovf = 1, .p_mode = 5, .p_timing = 20, .p_pip = 20,
				.nblocks = 3000, .long_tnt = 1 };

	(void)state;
	gen_compared = gen_total = 0;
	if (!getenv("PTF_SEED"))
		gen_case(&o, 4);
	assert_int_equal(gen_compared, gen_total);
	gen_compared = gen_total = 0;
}

/* A tiny cache: blocks are rebuilt after flushes, nothing changes. */
static void test_small_cache(void **state)
{
	struct ptgen_opts o = { .seed = 11, .bytes = 65536, .retcomp = 1, .psb_every = 2048,
				.p_async = 10, .p_disable = 20, .nblocks = 400 };
	struct ptgen g;
	struct tvh_ptf_opts big = { .read = tvh_ptf_image_read, .coverage = true };
	struct tvh_ptf_opts small = big;
	struct tvh_ptf_decoder *a, *b;
	struct flow fa = { 0 }, fb = { 0 };
	struct tvh_ptf_cov ca, cb;
	struct tvh_ptf_stats sb;

	(void)state;
	assert_int_equal(ptgen_make(&g, &o), 0);
	big.read_ctx = small.read_ctx = &g.image;
	small.max_blocks = 16;
	a = tvh_ptf_alloc(&big);
	b = tvh_ptf_alloc(&small);
	assert_int_equal(tvh_ptf_decode(a, g.buf, g.len, 0, fast_item, &fa, NULL), 0);
	assert_int_equal(tvh_ptf_decode(b, g.buf, g.len, 0, fast_item, &fb, &sb), 0);
	assert_true(sb.cache_flushes > 0);
	expect_same_branches(&fa, &fb, "big vs small cache");
	assert_int_equal(tvh_ptf_coverage(a, &ca), 0);
	assert_int_equal(tvh_ptf_coverage(b, &cb), 0);
	assert_int_equal(ca.nedges, cb.nedges);
	assert_int_equal(ca.nblocks, cb.nblocks);
	assert_memory_equal(ca.edges, cb.edges, ca.nedges * sizeof(*ca.edges));
	assert_memory_equal(ca.blocks, cb.blocks, ca.nblocks * sizeof(*ca.blocks));
	tvh_ptf_cov_free(&ca);
	tvh_ptf_cov_free(&cb);
	flow_free(&fa);
	flow_free(&fb);
	tvh_ptf_free(a);
	tvh_ptf_free(b);
	ptgen_free(&g);
}

/* ---- garbage: mutated streams, random bytes ------------------------------------ */

static void test_garbage(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned compared = 0;

	(void)state;
	tool_err_compared = tool_err_equal = 0;
	for (unsigned s = 0; s < 300; s++) {
		struct ptgen_opts o = { .seed = 1000 + s, .bytes = 1024, .retcomp = 1,
					.psb_every = 200, .p_async = 20, .p_disable = 30,
					.p_ovf = 10, .p_mode = 30, .p_timing = 100, .nblocks = 30 };
		struct ptgen g;

		assert_int_equal(ptgen_make(&g, &o), 0);
		for (unsigned k = 0; k < 1 + s % 4; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			if (g.len)
				g.buf[x % g.len] ^= (uint8_t)(1u << (x >> 32) % 8);
		}
		if (getenv("PTF_DEBUG"))
			print_message("garbage case %u\n", s);
		compared += differential(g.buf, g.len, tvh_ptf_image_read, &g.image, false,
					 s % 10 ? 2 : 4);
		ptgen_free(&g);
	}
	assert_true(compared > 0);
	print_message("garbage: %u of 300 mutated streams decoded by both without error\n",
		      compared);
	/*
	 * With errors: the same records and errors in both decoders, and the
	 * same instructions before each record in most (around an error the
	 * two count a few instructions differently: 161 of 188 equal).
	 */
	print_message("garbage with errors: %u decoded into the same records by both, %u of "
		      "them with the same instructions\n", tool_err_compared, tool_err_equal);
	assert_true(tool_err_compared >= 100);
	assert_true(tool_err_equal * 100 >= tool_err_compared * 80);
}

static void test_no_code(void **state)
{
	uint8_t buf[1024];
	size_t len = 0;
	struct tvh_ptf_decoder *d = tvh_ptf_alloc(NULL);
	struct flow f = { 0 };

	(void)state;
	ptf_encode(&fx, buf, sizeof(buf), &len, 1);
	assert_int_equal(tvh_ptf_decode(d, buf, len, 0, fast_item, &f, NULL), 0);
	assert_int_equal(f.errors, 1);
	assert_int_equal(f.first_err, -pte_nomap);
	assert_int_equal(tvh_ptf_decode(d, buf, 0, 0, fast_item, &f, NULL), 0);
	flow_free(&f);
	tvh_ptf_free(d);
}

/* ---- windows: what ptbranch does with --threads ----------------------------- */

/*
 * Consecutive ranges cut at sync points, each decoded in pieces by the
 * same decoders (caches kept): the records of one tvh_ptf_decode.
 */
static void test_windows(void **state)
{
	struct ptgen_opts o = { .seed = 21, .bytes = 1 << 19, .retcomp = 1,
				.psb_every = 2048, .p_async = 5, .p_disable = 10,
				.p_ovf = 2, .p_mode = 10, .p_timing = 50, .p_pip = 20,
				.nblocks = 2000, .long_tnt = 1, .tsc_only = 1 };
	struct tvh_ptf_opts fo = { .read = tvh_ptf_image_read, .libipt_branches = true };
	struct tvh_ptf_decoder *one, *decs[3];
	struct tflow whole = { 0 }, all = { 0 };
	struct ptgen g;
	size_t start = 0, sync;
	unsigned windows = 0;

	(void)state;
	assert_int_equal(ptgen_make(&g, &o), 0);
	fo.read_ctx = &g.image;
	one = tvh_ptf_alloc(&fo);
	assert_non_null(one);
	for (unsigned i = 0; i < 3; i++)
		assert_non_null(decs[i] = tvh_ptf_alloc(&fo));
	assert_int_equal(tvh_ptf_decode(one, g.buf, g.len, 0, tfast_item, &whole, NULL), 0);
	sync = tvh_ptf_first_sync(g.buf, g.len);
	for (;;) {
		struct tflow parts[3];
		void *ctxs[3] = { &parts[0], &parts[1], &parts[2] };
		size_t end;

		memset(parts, 0, sizeof(parts));
		while (sync < g.len && sync < start + 40000)
			sync = tvh_ptf_next_sync(g.buf, g.len, sync);
		end = sync < g.len ? sync : g.len;
		assert_int_equal(tvh_ptf_decode_range_parallel(g.buf, g.len, 0, start, end, &fo,
							       decs, 3, tfast_item, ctxs,
							       NULL, NULL), 0);
		for (unsigned i = 0; i < 3; i++) {
			for (size_t k = 0; k < parts[i].n; k++) {
				tadd(&all, parts[i].v[k].from, parts[i].v[k].to, parts[i].v[k].kind,
				     parts[i].v[k].has_tsc, parts[i].v[k].tsc);
				tinsns(&all, all.n - 1, parts[i].v[k].insns);
			}
			tinsns(&all, all.n, parts[i].pend);
			all.errors += parts[i].errors;
			free(parts[i].v);
		}
		windows++;
		if (end >= g.len)
			break;
		start = end;
	}
	assert_true(windows > 5);
	assert_true(whole.n > 10000);
	assert_true(tflow_expect(&whole, &all, true, "one decode vs windows of pieces"));
	assert_int_equal(all.errors, whole.errors);
	/* cov with the caller's decoders is refused. */
	{
		struct tvh_ptf_cov cov;

		assert_int_equal(tvh_ptf_decode_range_parallel(g.buf, g.len, 0, 0, g.len, &fo,
							       decs, 3, NULL, NULL, &cov, NULL),
				 -TVH_ERR_INVALID);
	}
	free(whole.v);
	free(all.v);
	tvh_ptf_free(one);
	for (unsigned i = 0; i < 3; i++)
		tvh_ptf_free(decs[i]);
	ptgen_free(&g);
}

/* ---- the tools: --decoder fast (default) and libipt give the same output ---- */

static char *tool(const char *args, char **err)
{
	char *cmd, *out = NULL;

	assert_true(asprintf(&cmd, "'%s' %s", th_cli(), args) > 0);
	if (th_run(cmd, &out, err) != 0)
		fail_msg("%s: %s", cmd, *err);
	free(cmd);
	return out;
}

/* script's lines end in pt@0xOFF, the decoder's own offset: cut it. */
static void strip_offsets(char *s)
{
	for (char *p; (p = strstr(s, " pt@0x")) != NULL;) {
		char *e = p + 6;

		while (*e && *e != '\n')
			e++;
		memmove(p, e, strlen(e) + 1);
	}
}

/*
 * A capture of two CPUs with PT over the fixture program: CPU 0 a run
 * with TSC packets, 100 bytes lost, a run cut (PT_SYNC) in the middle;
 * CPU 1 a run with other times.  script, report, coverage and timeline
 * print the same with --decoder libipt, fast and the default, with one
 * and two threads.
 */
static void test_tools_same_output(void **state)
{
	uint8_t a[512], b[1024], c1[512];
	size_t alen = 0, blen = 0, clen = 0, cut, resume;
	struct recbuf r0 = { 0 }, r1 = { 0 };
	struct th_tvt t;
	char *path, *elf = fx.elf;
	static const char *const cmds[] = { "script --no-symbols", "script", "report",
					    "report --per-cpu", "coverage --format modoff -o -",
					    "coverage -o -", "timeline -o -" };
	static const char *const dec[] = { "--decoder libipt", "--decoder fast", "",
					   "--decoder fast -j 2" };

	(void)state;
	assert_int_equal(ptf_encode_tsc(&fx, a, sizeof(a), &alen, 5000, 7), 8);
	ptf_encode_cut(&fx, b, sizeof(b), &blen, &cut, &resume);
	assert_int_equal(ptf_encode_tsc(&fx, c1, sizeof(c1), &clen, 90000, 3), 8);
	rb_time(&r0, 4000, 1000000000ull, 0);
	rb_startstop(&r0, TV_REC_START, TV_TRIG_BOOT, 4000, ptf_sym(&fx, "_start"));
	rb_pt_sync(&r0, 4100, 0, 0);
	rb_pt_sync(&r0, 6000, alen + 100 + cut, 1);
	rb_time(&r1, 80000, 1000000000ull, 0);
	rb_pt_sync(&r1, 80100, 0, 0);
	th_tvt_begin(&t, "ptfast", 3);
	th_tvt_records(&t, 0, 0, &r0);
	th_tvt_records(&t, 1, 0, &r1);
	th_tvt_chunk(&t, 0, TVT_KIND_PT, TVT_CHUNK_F_STREAM_START, 0, a, alen);
	th_tvt_chunk(&t, 0, TVT_KIND_PT, 0, alen + 100, b, blen);
	th_tvt_chunk(&t, 1, TVT_KIND_PT, TVT_CHUNK_F_STREAM_START, 0, c1, clen);
	th_tvt_end(&t);
	path = th_tvt_save(&t, "ptfast-tools.tvt");
	th_tvt_free(&t);
	rb_free(&r0);
	rb_free(&r1);

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char *ref = NULL;

		for (size_t k = 0; k < sizeof(dec) / sizeof(dec[0]); k++) {
			char *args, *out, *err = NULL;

			if (!strncmp(cmds[i], "timeline", 8) && strstr(dec[k], "-j"))
				continue;       /* timeline has no --threads */
			assert_true(asprintf(&args, "%s '%s' --image '%s' %s", cmds[i], path, elf,
					     dec[k]) > 0);
			out = tool(args, &err);
			assert_true(th_contains(err, "decoded into"));
			assert_true(th_contains(err, k ? "decoder fast" : "decoder libipt"));
			strip_offsets(out);
			if (!k) {
				assert_true(strlen(out) > 100);
				ref = out;
			} else {
				if (strcmp(ref, out))
					fail_msg("%s: '%s' differs from --decoder libipt:\n%s\n---\n%s",
						 cmds[i], dec[k], ref, out);
				free(out);
			}
			free(err);
			free(args);
		}
		free(ref);
	}
	free(path);
}

/* ---- code that is not what ran: the spin bound ------------------------------- */

/* 0x5000: je 0x5004; 0x5002: jmp .; 0x5004: jmp *%rax; 0x5006: nops */
static const uint8_t spin_code[] = { 0x74, 0x02, 0xeb, 0xfe, 0xff, 0xe0, 0x90, 0x90 };

static int spin_read(uint8_t *buf, size_t size, const struct pt_asid *asid, uint64_t ip,
		     void *ctx)
{
	(void)asid;
	(void)ctx;
	if (ip < 0x5000 || ip >= 0x5000 + sizeof(spin_code))
		return -pte_nomap;
	if (size > 0x5000 + sizeof(spin_code) - ip)
		size = (size_t)(0x5000 + sizeof(spin_code) - ip);
	memcpy(buf, spin_code + (ip - 0x5000), size);
	return (int)size;
}

struct spin_enc {
	struct pt_encoder *e;
	struct pt_config cfg;
};

static void spin_pkt(struct spin_enc *s, enum pt_packet_type type, uint64_t ip,
		     uint64_t tnt, uint8_t nbits)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	switch (type) {
	case ppt_mode:
		p.payload.mode.leaf = pt_mol_exec;
		p.payload.mode.bits.exec.csl = 1;
		break;
	case ppt_tip_pge:
	case ppt_tip_pgd:
	case ppt_tip:
	case ppt_fup:
		p.payload.ip.ipc = ip ? pt_ipc_sext_48 : pt_ipc_suppressed;
		p.payload.ip.ip = ip;
		break;
	case ppt_tnt_8:
		p.payload.tnt.bit_size = nbits;
		p.payload.tnt.payload = tnt;
		break;
	default:
		break;
	}
	assert_true(pt_enc_next(s->e, &p) > 0);
}

static void spin_psb(struct spin_enc *s, uint64_t fup)
{
	spin_pkt(s, ppt_psb, 0, 0, 0);
	spin_pkt(s, ppt_mode, 0, 0, 0);
	if (fup)
		spin_pkt(s, ppt_fup, fup, 0, 0);
	spin_pkt(s, ppt_psbend, 0, 0, 0);
}

struct spin_res {
	uint64_t branches, errors, syncs;
	int err;
};

static int spin_ipt_item(void *ctx, const struct tvh_pt_item *it)
{
	struct spin_res *r = ctx;

	r->branches += it->kind == TVH_PT_BRANCH;
	r->syncs += it->kind == TVH_PT_SYNC;
	if (it->kind == TVH_PT_ERROR && !r->errors++)
		r->err = it->err;
	return 0;
}

static int spin_fast_item(void *ctx, const struct tvh_ptf_item *it)
{
	struct spin_res *r = ctx;

	r->branches += it->kind == TVH_PTF_BRANCH;
	r->syncs += it->kind == TVH_PTF_SYNC;
	if (it->kind == TVH_PTF_ERROR && !r->errors++)
		r->err = it->err;
	return 0;
}

/* Both decoders on buf: one spin error each, the same branches before it. */
static void spin_compare(const uint8_t *buf, size_t len, uint64_t want_syncs)
{
	struct pt_image *img = pt_image_alloc("spin");
	struct tvh_pt_opts po = { .branches = true };
	struct tvh_ptf_opts fo = { .read = spin_read };
	struct tvh_ptf_decoder *d = tvh_ptf_alloc(&fo);
	struct spin_res a = { 0 }, b = { 0 };

	assert_non_null(img);
	assert_non_null(d);
	assert_int_equal(pt_image_set_callback(img, spin_read, NULL), 0);
	assert_int_equal(tvh_pt_decode(buf, len, 0, img, &po, spin_ipt_item, &a, NULL), 0);
	assert_int_equal(tvh_ptf_decode(d, buf, len, 0, spin_fast_item, &b, NULL), 0);
	if (getenv("PTF_DEBUG"))
		print_message("spin: libipt %llu branches %llu errors %llu syncs, ptfast %llu %llu %llu\n",
			      (unsigned long long)a.branches, (unsigned long long)a.errors,
			      (unsigned long long)a.syncs, (unsigned long long)b.branches,
			      (unsigned long long)b.errors, (unsigned long long)b.syncs);
	assert_int_equal(a.errors, 1);
	assert_int_equal(a.err, TVH_PT_ERR_SPIN);
	assert_int_equal(b.errors, 1);
	assert_int_equal(b.err, TVH_PT_ERR_SPIN);
	assert_true(a.branches >= TVH_PT_SPIN_LIMIT - 2);
	assert_int_equal(a.branches, b.branches);
	assert_int_equal(a.syncs, want_syncs);
	assert_int_equal(b.syncs, want_syncs);
	tvh_ptf_free(d);
	pt_image_free(img);
}

/*
 * A `jmp .` the trace does not stay in (a TIP.PGD that never binds; TNT
 * bits left for a jcc never reached): like tvh_pt_decode, one
 * TVH_PT_ERR_SPIN after TVH_PT_SPIN_LIMIT instructions without a packet
 * read, the same branches before it, decoding resumed at the next PSB.
 */
static void test_spin_bounded(void **state)
{
	uint8_t buf[512];
	struct spin_enc s;
	uint64_t len;

	(void)state;
	for (int sc = 0; sc < 4; sc++) {
		pt_config_init(&s.cfg);
		s.cfg.begin = buf;
		s.cfg.end = buf + sizeof(buf);
		s.e = pt_alloc_encoder(&s.cfg);
		assert_non_null(s.e);
		spin_psb(&s, sc == 2 ? 0x5002 : 0);
		if (sc == 2) {
			/* enabled by the PSB+ at the loop */
			spin_pkt(&s, ppt_tip_pgd, 0x9000, 0, 0);
			spin_pkt(&s, ppt_tip_pge, 0x5004, 0, 0);
		} else if (sc == 3) {
			/* je not taken, an interrupt never reached */
			spin_pkt(&s, ppt_tip_pge, 0x5000, 0, 0);
			spin_pkt(&s, ppt_tnt_8, 0, 0x0, 1);
			spin_pkt(&s, ppt_fup, 0x9000, 0, 0);
			spin_pkt(&s, ppt_tip, 0x5004, 0, 0);
			spin_pkt(&s, ppt_tnt_8, 0, 0x1, 1);
		} else if (sc == 0) {
			spin_pkt(&s, ppt_tip_pge, 0x5002, 0, 0);
			spin_pkt(&s, ppt_tip_pgd, 0x9000, 0, 0);
			/* libipt reads ahead to the next event packet (a PSB
			 * right here would be read and skipped by its resync). */
			spin_pkt(&s, ppt_tip_pge, 0x5004, 0, 0);
		} else {
			/* je not taken, then the loop: one bit left */
			spin_pkt(&s, ppt_tip_pge, 0x5000, 0, 0);
			spin_pkt(&s, ppt_tnt_8, 0, 0x1, 2);
			spin_pkt(&s, ppt_tnt_8, 0, 0x1, 1);
		}
		/* Then a run that decodes: enable at the indirect jump, which
		 * the disable binds to. */
		spin_psb(&s, 0);
		spin_pkt(&s, ppt_tip_pge, 0x5004, 0, 0);
		spin_pkt(&s, ppt_tip_pgd, 0x5006, 0, 0);
		assert_int_equal(pt_enc_get_offset(s.e, &len), 0);
		pt_free_encoder(s.e);
		spin_compare(buf, (size_t)len, 2);
	}
}

/*
 * CYC packets of 1 to 11 bytes (the Exp bit, then bit 0 of each byte
 * extends): the fast packet decoder accepts exactly the sizes libipt's
 * does.  fuzz_ptfast found a 10-byte CYC (68 payload bits) that ptfast
 * read inside a PSB+ and libipt refused (-pte_bad_packet), so the two
 * decoders disagreed on a stream after 4.5 M executions.
 */
static void test_cyc_sizes_as_libipt(void **state)
{
	(void)state;
	for (unsigned n = 1; n <= 11; n++) {
		uint8_t b[16] = { 0 };
		struct pt_packet_decoder *d;
		struct pt_config cfg;
		struct pt_packet lp;
		struct ptf_pkt fp;
		int ln, fn;

		b[0] = n > 1 ? 0xff : 0x03;          /* CYC, Exp set when longer than 1 */
		for (unsigned i = 1; i < n; i++)
			b[i] = i + 1 < n ? 0xff : 0x02; /* bit 0: another byte follows */
		pt_config_init(&cfg);
		cfg.begin = b;
		cfg.end = b + sizeof(b);
		d = pt_pkt_alloc_decoder(&cfg);
		assert_non_null(d);
		assert_int_equal(pt_pkt_sync_set(d, 0), 0);
		ln = pt_pkt_next(d, &lp, sizeof(lp));
		pt_pkt_free_decoder(d);
		fn = ptf_pkt_decode(b, b + sizeof(b), &fp);
		if (ln >= 0) {
			assert_int_equal(fn, (int)n);
			assert_int_equal(lp.size, n);
		} else {
			assert_int_equal(fn, ln);
		}
	}
}

/*
 * Every packet libipt's packet decoder reads, the fast one reads with the
 * same size, and every one libipt refuses, it refuses: each one-byte
 * opcode and each extended opcode (02 xx), followed by payload patterns
 * (zeros, ones, alternating, a counter, each payload byte alone at 0xff).
 * fuzz_ptfast found a TMA whose FastCounter byte had bits above bit 8 set,
 * which libipt refuses (-pte_bad_packet) and the fast decoder read.
 */
static int libipt_pkt(const uint8_t *b, size_t n, struct pt_packet *lp)
{
	struct pt_packet_decoder *d;
	struct pt_config cfg;
	int ln;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)b;
	cfg.end = (uint8_t *)b + n;
	d = pt_pkt_alloc_decoder(&cfg);
	assert_non_null(d);
	assert_int_equal(pt_pkt_sync_set(d, 0), 0);
	ln = pt_pkt_next(d, lp, sizeof(*lp));
	pt_pkt_free_decoder(d);
	return ln;
}

static void test_packets_as_libipt(void **state)
{
	unsigned checked = 0;

	(void)state;
	for (unsigned ext = 0; ext < 2; ext++) {
		for (unsigned op = 0; op < 256; op++) {
			for (unsigned pat = 0; pat < 4 + 14; pat++) {
				uint8_t b[32];
				unsigned at = ext ? 2 : 1;
				struct pt_packet lp;
				struct ptf_pkt fp;
				int ln, fn;

				for (unsigned i = 0; i < sizeof(b); i++)
					b[i] = pat == 0 ? 0 : pat == 1 ? 0xff : pat == 2 ? 0x55 :
					       pat == 3 ? (uint8_t)(i * 37 + 1) :
					       i == at + pat - 4 ? 0xff : 0;
				if (ext) {
					b[0] = 0x02;
					b[1] = (uint8_t)op;
				} else {
					b[0] = (uint8_t)op;
				}
				if (b[0] == 0x02 && b[1] == 0x82)
					continue;            /* PSB: its own 16 bytes */
				ln = libipt_pkt(b, sizeof(b), &lp);
				fn = ptf_pkt_decode(b, b + sizeof(b), &fp);
				if ((ln >= 0) != (fn >= 0) || (ln >= 0 && fn != (int)lp.size))
					fail_msg("%02x %02x (pattern %u): libipt %d (size %u), fast %d",
						 b[0], b[1], pat, ln, ln >= 0 ? lp.size : 0, fn);
				checked++;
			}
		}
	}
	assert_true(checked > 9000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cyc_sizes_as_libipt),
		cmocka_unit_test(test_packets_as_libipt),
		cmocka_unit_test(test_fixture),
		cmocka_unit_test(test_no_code),
		cmocka_unit_test(test_generated_plain),
		cmocka_unit_test(test_generated_events),
		cmocka_unit_test(test_generated_tool),
		cmocka_unit_test(test_generated_big),
		cmocka_unit_test(test_small_cache),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_spin_bounded),
		cmocka_unit_test(test_windows),
		cmocka_unit_test(test_tools_same_output),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
