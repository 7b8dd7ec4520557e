/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ptfast.c - libFuzzer target: the fast PT decoder (ptfast.c) and
 * libipt's instruction-flow decoder on the same arbitrary bytes over the
 * same fixed code image (fuzz_pt.c's: NOPs, a Jcc, a call, an INT3, a
 * ret, an indirect jump).  Where both decode the whole input without an
 * error, their taken-branch sequences must be equal (abort otherwise);
 * one thread must equal two pieces cut at a PSB, always.  libipt's
 * branch list is derived as in tests/host/test_host_ptfast.c (a transfer
 * and the next IP libipt reports or its event names); inputs where libipt
 * cannot name a transfer's destination (an OVF right after it) are not
 * compared.
 */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/ptbranch.h"
#include "host-tools/lib/ptfast.h"
#include "vmm/trace/format.h"

#define CODE_BASE 0x1000u
#define MAX_BR 4096

/* nop x4; je -6; call +1; int3; ret; jmp *%rax */
static const uint8_t code[] = {
	0x90, 0x90, 0x90, 0x90, 0x74, 0xfa, 0xe8, 0x01, 0x00, 0x00, 0x00,
	0xcc, 0xc3, 0xff, 0xe0,
};

static int read_code(uint8_t *buf, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *ctx)
{
	(void)asid;
	(void)ctx;
	if (ip < CODE_BASE || ip - CODE_BASE >= sizeof(code))
		return -pte_nomap;
	if (size > sizeof(code) - (ip - CODE_BASE))
		size = sizeof(code) - (ip - CODE_BASE);
	memcpy(buf, code + (ip - CODE_BASE), size);
	return (int)size;
}

struct brs {
	uint64_t v[MAX_BR][2];
	uint8_t kind[MAX_BR];
	unsigned n, errors;
	int full, unsure;
};

static void add(struct brs *b, uint64_t from, uint64_t to, uint8_t kind)
{
	if (b->n == MAX_BR) {
		b->full = 1;
		return;
	}
	b->v[b->n][0] = from;
	b->v[b->n][1] = to;
	b->kind[b->n++] = kind;
}

struct ref {
	struct brs *b;
	int pending;
	struct pt_insn last;
};

static void resolve(struct ref *r, uint64_t dest)
{
	if (r->pending && !(r->last.iclass == ptic_cond_jump &&
			    dest == r->last.ip + r->last.size))
		add(r->b, r->last.ip, dest,
		    tvh_ptbr_kind(r->last.iclass, r->last.raw, r->last.size));
	r->pending = 0;
}

static void ref_event(struct ref *r, const struct pt_event *ev)
{

	switch (ev->type) {
	case ptev_disabled:
		if (!ev->ip_suppressed)
			resolve(r, ev->variant.disabled.ip);
		r->pending = 0;
		break;
	case ptev_async_disabled:
		resolve(r, ev->variant.async_disabled.at);
		break;
	case ptev_async_branch:
		resolve(r, ev->variant.async_branch.from);
		add(r->b, ev->variant.async_branch.from, ev->variant.async_branch.to,
		    TV_BR_INTERRUPT);
		break;
	case ptev_overflow:
		if (r->pending)
			r->b->unsure = 1;
		r->pending = 0;
		break;
	case ptev_enabled:
		r->pending = 0;
		break;
	default:
		break;
	}
}

static void libipt(const uint8_t *data, size_t size, struct pt_image *img, struct brs *b)
{
	struct pt_config cfg;
	struct pt_insn_decoder *d;
	struct ref r = { .b = b };
	uint64_t steps = 0;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)data;
	cfg.end = (uint8_t *)data + size;
	d = pt_insn_alloc_decoder(&cfg);
	if (!d)
		abort();
	pt_insn_set_image(d, img);
	for (;;) {
		int st = pt_insn_sync_forward(d);

		if (st < 0) {
			/*
			 * Not the end: libipt refused what follows its sync
			 * point (a PSB inside a PSB+: -pte_bad_context), an
			 * error, so the branch lists are not compared.
			 */
			if (st != -pte_eos)
				b->errors++;
			break;
		}
		for (;;) {
			struct pt_insn in;
			struct pt_event ev;

			while (st >= 0 && (st & pts_event_pending)) {
				st = pt_insn_event(d, &ev, sizeof(ev));
				if (st >= 0)
					ref_event(&r, &ev);
				else
					b->unsure = 1;   /* an event lost to a cut packet */
			}
			if (st >= 0 && (st & pts_eos) && r.pending) {
				memset(&in, 0, sizeof(in));
				pt_insn_next(d, &in, sizeof(in));
				resolve(&r, in.ip);
			}
			if (st < 0 || (st & pts_eos))
				break;
			if (++steps > 100000) {       /* libipt loops on some inputs */
				b->errors++;
				st = -pte_eos;
				break;
			}
			memset(&in, 0, sizeof(in));
			st = pt_insn_next(d, &in, sizeof(in));

			/* A transfer whose next step hit the end: libipt may or may
			 * not know where it went (a compressed RET does, a missing
			 * TIP does not) and does not tell. */
			if (st == -pte_eos && in.iclass != ptic_error &&
			    in.iclass != ptic_other && in.iclass != ptic_ptwrite)
				b->unsure = 1;
			if (st >= 0 || in.iclass != ptic_error) {
				resolve(&r, in.ip);
				r.last = in;
				r.pending = in.iclass != ptic_other && in.iclass != ptic_ptwrite;
			}
			if (st < 0)
				break;
		}
		r.pending = 0;
		if (st < 0 && st != -pte_eos)
			b->errors++;
		if (steps > 100000)
			break;
	}
	pt_insn_free_decoder(d);
}

static int fast_item(void *ctx, const struct tvh_ptf_item *it)
{
	struct brs *b = ctx;

	if (it->kind == TVH_PTF_BRANCH)
		add(b, it->from, it->to, it->br);
	else if (it->kind == TVH_PTF_ERROR)
		b->errors++;
	return 0;
}

static void expect_equal(const struct brs *a, const struct brs *b, const char *what)
{
	if (a->n != b->n || memcmp(a->v, b->v, a->n * sizeof(a->v[0])) ||
	    memcmp(a->kind, b->kind, a->n)) {
		fprintf(stderr, "fuzz_ptfast: %s differ (%u vs %u branches)\n", what, a->n, b->n);
		for (unsigned i = 0; i < a->n || i < b->n; i++)
			fprintf(stderr, "  %u: %llx->%llx (%u) | %llx->%llx (%u)\n", i,
				i < a->n ? (unsigned long long)a->v[i][0] : 0ull,
				i < a->n ? (unsigned long long)a->v[i][1] : 0ull,
				i < a->n ? a->kind[i] : 0,
				i < b->n ? (unsigned long long)b->v[i][0] : 0ull,
				i < b->n ? (unsigned long long)b->v[i][1] : 0ull,
				i < b->n ? b->kind[i] : 0);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pt_image *img;
	static struct brs ref, fast, parts[2];
	struct tvh_ptf_opts o = { .read = read_code };
	struct tvh_ptf_decoder *d;
	void *ctxs[2] = { &parts[0], &parts[1] };

	if (!img) {
		img = pt_image_alloc("fuzz");
		pt_image_set_callback(img, read_code, NULL);
	}
	memset(&ref, 0, sizeof(ref));
	memset(&fast, 0, sizeof(fast));
	memset(parts, 0, sizeof(parts));
	d = tvh_ptf_alloc(&o);
	if (!d)
		return 0;
	tvh_ptf_decode(d, data, size, 0, fast_item, &fast, NULL);
	tvh_ptf_free(d);
	/*
	 * Pieces cut at a PSB give the same items: cut where a two-thread
	 * tvh_ptf_decode_parallel cuts (the first sync point at or past the
	 * middle), each piece decoded on this thread (threads cost more than
	 * the decode at this size; test_host_ptfast runs them threaded).
	 */
	{
		size_t cut = tvh_ptf_first_sync(data, size);

		while (cut < size && cut < size / 2)
			cut = tvh_ptf_next_sync(data, size, cut);
		if (cut > size)
			cut = size;
		tvh_ptf_decode_range_parallel(data, size, 0, 0, cut, &o, NULL, 1, fast_item,
					      &ctxs[0], NULL, NULL);
		if (cut < size)
			tvh_ptf_decode_range_parallel(data, size, 0, cut, size, &o, NULL, 1,
						      fast_item, &ctxs[1], NULL, NULL);
	}
	for (unsigned i = 0; i < parts[1].n; i++)
		add(&parts[0], parts[1].v[i][0], parts[1].v[i][1], parts[1].kind[i]);
	if (!fast.full && !parts[0].full)
		expect_equal(&fast, &parts[0], "one thread and two pieces");
	libipt(data, size, img, &ref);
	if (!ref.errors && !fast.errors && !ref.unsure && !ref.full && !fast.full)
		expect_equal(&ref, &fast, "libipt and ptfast");
	return 0;
}
