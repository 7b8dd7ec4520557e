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

#include "host-tools/error.h"
#include "host-tools/pt.h"

/* ---- collecting ---------------------------------------------------------- */

struct collect {
	struct tvh_pt_stream *s;
};

static int collect_fn(void *ctx, const struct tvh_event *ev)
{
	struct collect *c = ctx;
	struct tvh_pt_stream *s = c->s;
	struct tvh_pt_run *run;

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

void tvh_pt_stream_free(struct tvh_pt_stream *s)
{
	for (size_t i = 0; i < s->nruns; i++)
		free(s->runs[i].data);
	free(s->runs);
	memset(s, 0, sizeof(*s));
}

int tvh_pt_collect(struct tvt_reader *r, uint32_t cpu, struct tvh_pt_stream *out,
		   struct tvh_stats *stats, struct tvh_progress *progress)
{
	struct tvh_walk_opts wo = { .cpu = cpu, .want_pt = true, .progress = progress };
	struct collect c = { out };
	struct tvh_stats local;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = tvh_walk(r, &wo, collect_fn, &c, stats ? stats : &local);
	if (!stats)
		tvh_stats_free(&local);
	if (!ret && !out->nruns)
		ret = -TVH_ERR_NOT_FOUND;
	if (ret)
		tvh_pt_stream_free(out);
	return ret;
}

struct extract {
	FILE *out;
	FILE *runs;
	uint64_t written;
	uint64_t run_start;      /* stream offset of the current run */
	uint64_t run_out;        /* output offset of the current run */
	uint64_t next;           /* stream offset following the last byte */
	bool in_run;
};

static void end_run(struct extract *x)
{
	if (x->in_run && x->runs)
		fprintf(x->runs, "run: stream offsets 0x%" PRIx64 "..0x%" PRIx64
			" at output offset 0x%" PRIx64 " (%" PRIu64 " bytes)\n",
			x->run_start, x->next, x->run_out, x->next - x->run_start);
	x->in_run = false;
}

static int extract_fn(void *ctx, const struct tvh_event *ev)
{
	struct extract *x = ctx;

	if (ev->kind == TVH_EV_PT_GAP) {
		end_run(x);
		if (x->runs)
			fprintf(x->runs, "gap: %" PRIu64 " bytes lost at stream offset 0x%"
				PRIx64 "%s\n", ev->count, ev->pt_offset,
				ev->gap == TVH_GAP_HEAD ? " (before the capture)" : "");
		return 0;
	}
	if (ev->kind != TVH_EV_PT || !ev->len)
		return 0;
	if (!x->in_run || ev->pt_offset != x->next) {
		end_run(x);
		x->in_run = true;
		x->run_start = ev->pt_offset;
		x->run_out = x->written;
	}
	if (fwrite(ev->data, 1, ev->len, x->out) != ev->len)
		return -TVH_ERR_IO;
	x->written += ev->len;
	x->next = ev->pt_offset + ev->len;
	return 0;
}

int64_t tvh_pt_extract(struct tvt_reader *r, uint32_t cpu, FILE *out,
		       FILE *runs_out, struct tvh_stats *stats,
		       struct tvh_progress *progress)
{
	struct tvh_walk_opts wo = { .cpu = cpu, .want_pt = true, .progress = progress };
	struct extract x = { .out = out, .runs = runs_out };
	struct tvh_stats local;
	int ret;

	ret = tvh_walk(r, &wo, extract_fn, &x, stats ? stats : &local);
	if (!stats)
		tvh_stats_free(&local);
	end_run(&x);
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
};

static uint64_t dec_offset(const struct dec *x)
{
	uint64_t off = 0;

	pt_insn_get_offset(x->d, &off);
	return x->base + off;
}

static int report(struct dec *x, struct tvh_pt_item *it)
{
	return x->fn ? x->fn(x->ctx, it) : 0;
}

static int on_insn(struct dec *x, const struct pt_insn *insn)
{
	struct tvh_pt_item it = { .kind = TVH_PT_INSN, .insn = insn, .ip = insn->ip };
	int ret = 0;

	x->st->insns++;
	if (!x->o->branches) {
		ret = report(x, &it);
	} else if (x->pending) {
		bool fallthrough = insn->ip == x->last.ip + x->last.size;

		if (!(fallthrough && x->last.iclass == ptic_cond_jump)) {
			it.kind = TVH_PT_BRANCH;
			it.from = x->last.ip;
			it.to = insn->ip;
			it.iclass = x->last.iclass;
			x->st->branches++;
			ret = report(x, &it);
		}
	}
	x->last = *insn;
	x->have_last = true;
	x->pending = insn->iclass != ptic_other && insn->iclass != ptic_ptwrite &&
		     insn->iclass != ptic_error;
	return ret;
}

static int on_event(struct dec *x, const struct pt_event *ev)
{
	struct tvh_pt_item it = { .kind = TVH_PT_EVENT, .event = ev,
				  .offset = dec_offset(x) };
	int ret;

	x->st->events++;
	if (x->o->branches && x->pending && ev->type == ptev_disabled &&
	    !ev->ip_suppressed) {
		struct tvh_pt_item b = { .kind = TVH_PT_BRANCH, .from = x->last.ip,
					 .to = ev->variant.disabled.ip,
					 .iclass = x->last.iclass };

		x->st->branches++;
		ret = report(x, &b);
		if (ret)
			return ret;
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
	x.d = pt_insn_alloc_decoder(&cfg);
	if (!x.d)
		return -TVH_ERR_PT;
	if (image && pt_insn_set_image(x.d, image) < 0) {
		pt_insn_free_decoder(x.d);
		return -TVH_ERR_PT;
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
	pt_insn_free_decoder(x.d);
	return ret;
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
