/* SPDX-License-Identifier: MIT */
/*
 * test_host_pt.c - Intel PT decoding (host-tools/lib/pt.c) against an
 * independent ground truth (pt_fixture.c): a small program assembled at
 * test time, its control flow encoded packet by packet with libipt's
 * encoder (PSB, PSBEND, MODE.Exec, TIP.PGE, TNT, TIP, TIP.PGD); the
 * decoded instruction addresses must be exactly the ones the program
 * executes.  Also: resynchronisation after an error, PT runs and gaps
 * in a .tvt, extraction.
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
#include "host-tools/lib/ptfast.h"
#include "host-tools/lib/ptbranch.h"
#include "host-tools/lib/sym.h"
#include "tests/host/helpers.h"
#include "tests/host/pt_fixture.h"

static struct pt_fixture fx;
static struct tvh_symtab st;
static struct pt_image *image;

static uint64_t S(const char *name)
{
	return ptf_sym(&fx, name);
}

static int setup(void **state)
{
	(void)state;
	if (ptf_build(&fx))
		return -1;
	tvh_symtab_init(&st);
	if (tvh_symtab_add(&st, fx.elf) || tvh_pt_image(&st, &image))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pt_image_free(image);
	tvh_symtab_free(&st);
	ptf_free(&fx);
	return 0;
}

/* Packet building lives in pt_fixture.c. */
struct enc {
	uint8_t buf[512];
	size_t len;
};

static void enc_begin(struct enc *x)
{
	memset(x, 0, sizeof(*x));
}

static void encode_run(struct enc *x, uint64_t tnt_first)
{
	ptf_encode(&fx, x->buf, sizeof(x->buf), &x->len, (int)tnt_first);
}

static size_t enc_end(struct enc *x)
{
	return x->len;
}

/* ---- collecting decoder output -------------------------------------------- */

struct got {
	uint64_t ip[128];
	unsigned n;
	struct tvh_pt_item br[64];
	unsigned nbr;
	unsigned syncs, errors, ends, enabled, disabled;
	uint64_t sync_off[8], err_off[8];
	int err[8];
	uint64_t disabled_ip;
};

static int collect(void *ctx, const struct tvh_pt_item *it)
{
	struct got *g = ctx;

	switch (it->kind) {
	case TVH_PT_INSN:
		assert_true(g->n < 128);
		g->ip[g->n++] = it->insn->ip;
		break;
	case TVH_PT_BRANCH:
		assert_true(g->nbr < 64);
		g->br[g->nbr++] = *it;
		break;
	case TVH_PT_SYNC:
		g->sync_off[g->syncs++ & 7] = it->offset;
		break;
	case TVH_PT_ERROR:
		g->err_off[g->errors & 7] = it->offset;
		g->err[g->errors++ & 7] = it->err;
		break;
	case TVH_PT_END:
		g->ends++;
		break;
	case TVH_PT_EVENT:
		if (it->event->type == ptev_enabled)
			g->enabled++;
		if (it->event->type == ptev_disabled) {
			g->disabled++;
			g->disabled_ip = it->event->variant.disabled.ip;
		}
		break;
	}
	return 0;
}

static void expect_flow(const struct got *g, unsigned from)
{
	assert_true(g->n >= from + fx.nflow);
	for (unsigned i = 0; i < fx.nflow; i++)
		if (g->ip[from + i] != fx.flow[i])
			fail_msg("insn %u: 0x%llx, expected 0x%llx", i,
				 (unsigned long long)g->ip[from + i],
				 (unsigned long long)fx.flow[i]);
}

/* ---- tests ---------------------------------------------------------------- */

static void test_instruction_flow(void **state)
{
	struct enc x;
	struct got g = { 0 };
	struct tvh_pt_stats ps;
	size_t len;

	(void)state;
	enc_begin(&x);
	encode_run(&x, 1);
	len = enc_end(&x);
	assert_int_equal(tvh_pt_decode(x.buf, len, 0x1000, image, NULL, collect, &g, &ps), 0);
	assert_int_equal(g.errors, 0);
	assert_int_equal(g.n, fx.nflow);
	expect_flow(&g, 0);
	assert_int_equal(g.syncs, 1);
	assert_int_equal(g.sync_off[0], 0x1000);   /* stream offsets */
	assert_int_equal(g.enabled, 1);
	assert_int_equal(g.disabled, 1);
	assert_int_equal(g.disabled_ip, PTF_OUTSIDE);
	assert_int_equal(ps.insns, fx.nflow);
	assert_int_equal(ps.syncs, 1);
	assert_int_equal(ps.errors, 0);
}

static void test_branch_list(void **state)
{
	struct enc x;
	struct got g = { 0 };
	struct tvh_pt_opts o = { .branches = true };
	struct tvh_pt_stats ps;
	size_t len;

	(void)state;
	/* With errata for a real CPU (Skylake) set up too. */
	assert_int_equal(tvh_pt_parse_cpu("6/0x55/4", &o.cpu), 0);
	enc_begin(&x);
	encode_run(&x, 1);
	len = enc_end(&x);
	assert_int_equal(tvh_pt_decode(x.buf, len, 0, image, &o, collect, &g, &ps), 0);
	assert_int_equal(g.n, 0);
	assert_int_equal(g.nbr, fx.ntaken);
	for (unsigned i = 0; i < fx.ntaken; i++) {
		if (g.br[i].from != fx.taken[i].from || g.br[i].to != fx.taken[i].to ||
		    g.br[i].iclass != fx.taken[i].c)
			fail_msg("branch %u: 0x%llx -> 0x%llx (%s), expected 0x%llx -> 0x%llx (%s)",
				 i, (unsigned long long)g.br[i].from,
				 (unsigned long long)g.br[i].to,
				 tvh_pt_iclass_name(g.br[i].iclass),
				 (unsigned long long)fx.taken[i].from,
				 (unsigned long long)fx.taken[i].to,
				 tvh_pt_iclass_name(fx.taken[i].c));
	}
	assert_int_equal(ps.branches, fx.ntaken);
	assert_int_equal(ps.insns, fx.nflow);
}

static void test_error_then_resync(void **state)
{
	struct enc x;
	struct got g = { 0 };
	struct tvh_pt_stats ps;
	uint64_t second;
	size_t len;

	(void)state;
	enc_begin(&x);
	encode_run(&x, 0);                /* broken: the first ret is "not taken" */
	second = x.len;
	encode_run(&x, 1);
	len = enc_end(&x);
	assert_int_equal(tvh_pt_decode(x.buf, len, 0, image, NULL, collect, &g, &ps), 0);
	assert_int_equal(g.errors, 1);
	assert_int_equal(g.err[0], -pte_bad_retcomp);
	assert_true(g.err_off[0] < second);
	assert_int_equal(g.syncs, 2);
	assert_int_equal(g.sync_off[0], 0);
	assert_int_equal(g.sync_off[1], second);
	/* Before the error: mov, call, add, ret; after the resync: all of it. */
	assert_int_equal(g.ip[0], fx.flow[0]);
	assert_int_equal(g.n, 4 + fx.nflow);
	assert_int_equal(g.ip[3], S("i_ret"));
	expect_flow(&g, 4);
}

static void test_no_code_and_garbage(void **state)
{
	struct enc x;
	struct got g = { 0 };
	struct tvh_pt_stats ps;
	uint8_t junk[64];
	size_t len;

	(void)state;
	enc_begin(&x);
	encode_run(&x, 1);
	len = enc_end(&x);
	/* No image: the first instruction cannot be read. */
	assert_int_equal(tvh_pt_decode(x.buf, len, 0, NULL, NULL, collect, &g, &ps), 0);
	assert_int_equal(g.n, 0);
	assert_true(g.errors >= 1);
	assert_int_equal(g.err[0], -pte_nomap);
	/* No PSB at all: nothing, no error, no sync. */
	memset(&g, 0, sizeof(g));
	memset(junk, 0x55, sizeof(junk));
	assert_int_equal(tvh_pt_decode(junk, sizeof(junk), 0, image, NULL, collect, &g, &ps), 0);
	assert_int_equal(g.syncs, 0);
	assert_int_equal(g.n, 0);
	assert_int_equal(tvh_pt_decode(junk, 0, 0, image, NULL, collect, &g, &ps), 0);
}

/* The same run inside a .tvt: split in two chunks mid-packet, then again after a gap. */
static void test_from_tvt(void **state)
{
	struct enc x;
	struct th_tvt t;
	struct tvt_reader r;
	struct tvh_pt_stream ps;
	struct tvh_stats s;
	size_t len;
	char *runs = NULL, *bytes = NULL;
	size_t runs_len, bytes_len;
	FILE *rf, *bf;
	int64_t n;

	(void)state;
	enc_begin(&x);
	encode_run(&x, 1);
	len = enc_end(&x);
	th_tvt_begin(&t, "m", 1);
	th_tvt_chunk(&t, 1, TVT_KIND_PT, 0, 0, x.buf, 21);
	th_tvt_chunk(&t, 0, TVT_KIND_PT, 0, 0, x.buf, 8);   /* another CPU */
	th_tvt_chunk(&t, 1, TVT_KIND_PT, 0, 21, x.buf + 21, len - 21);
	th_tvt_chunk(&t, 1, TVT_KIND_PT, 0, len + 100, x.buf, len);
	th_tvt_end(&t);
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, t.len), 0);

	assert_int_equal(tvh_pt_collect(&r, 1, &ps, &s, NULL), 0);
	assert_int_equal(ps.nruns, 2);
	assert_int_equal(ps.runs[0].offset, 0);
	assert_int_equal(ps.runs[0].len, len);
	assert_memory_equal(ps.runs[0].data, x.buf, len);
	assert_int_equal(ps.runs[1].offset, len + 100);
	assert_int_equal(ps.gap_bytes, 100);
	assert_int_equal(ps.bytes, 2 * len);
	for (size_t i = 0; i < ps.nruns; i++) {
		struct got g = { 0 };

		assert_int_equal(tvh_pt_decode(ps.runs[i].data, ps.runs[i].len,
					       ps.runs[i].offset, image, NULL, collect,
					       &g, NULL), 0);
		assert_int_equal(g.errors, 0);
		expect_flow(&g, 0);
		assert_int_equal(g.sync_off[0], ps.runs[i].offset);
	}
	tvh_pt_stream_free(&ps);
	tvh_stats_free(&s);
	assert_int_equal(tvh_pt_collect(&r, 5, &ps, NULL, NULL), -TVH_ERR_NOT_FOUND);

	/* Extraction: the runs back to back, the layout on the side. */
	rf = open_memstream(&runs, &runs_len);
	bf = open_memstream(&bytes, &bytes_len);
	n = tvh_pt_extract(&r, 1, bf, rf, NULL, NULL);
	fclose(rf);
	fclose(bf);
	assert_int_equal(n, (int64_t)(2 * len));
	assert_int_equal(bytes_len, 2 * len);
	assert_memory_equal(bytes, x.buf, len);
	assert_memory_equal(bytes + len, x.buf, len);
	assert_true(th_contains(runs, "run: stream offsets 0x0.."));
	assert_true(th_contains(runs, "gap: 100 bytes lost"));
	free(runs);
	free(bytes);
	bf = open_memstream(&bytes, &bytes_len);
	assert_int_equal(tvh_pt_extract(&r, 9, bf, NULL, NULL, NULL), -TVH_ERR_NOT_FOUND);
	fclose(bf);
	free(bytes);
	tvt_reader_close(&r);
	th_tvt_free(&t);
}

/*
 * A loss the record stream counts (PT_SYNC pt_lost 0 -> 1) in the middle
 * of a packet sequence: the run is cut there, nothing fails to decode,
 * decoding resumes at the next PSB with the whole flow.
 */
static void test_pt_sync_cut(void **state)
{
	uint8_t buf[1024];
	struct recbuf rec = { 0 }, other = { 0 };
	struct th_tvt t;
	struct tvt_reader r;
	struct tvh_pt_stream ps;
	struct tvh_stats s;
	struct got g = { 0 };
	size_t len, cut, resume;
	char *runs = NULL, *bytes = NULL, *want;
	size_t runs_len, bytes_len;
	FILE *rf, *bf;

	(void)state;
	ptf_encode_cut(&fx, buf, sizeof(buf), &len, &cut, &resume);
	/* Straight across the cut: the stray TNT is an error. */
	assert_int_equal(tvh_pt_decode(buf, len, 0, image, NULL, collect, &g, NULL), 0);
	assert_true(g.errors >= 1);
	assert_int_equal(g.err[0], -pte_bad_query);
	assert_true(g.err_off[0] >= cut);

	rb_pt_sync(&rec, 100, 0, 0);
	rb_pt_sync(&rec, 200, cut, 1);
	rb_pt_sync(&rec, 300, len, 1);
	rb_pt_sync(&other, 100, 3, 5);              /* another CPU's loss */
	th_tvt_begin(&t, "m", 1);
	/* PT first, mid-packet chunk boundaries; the records come after. */
	th_tvt_chunk(&t, 1, TVT_KIND_PT, TVT_CHUNK_F_STREAM_START, 0, buf, cut + 1);
	th_tvt_chunk(&t, 1, TVT_KIND_PT, 0, cut + 1, buf + cut + 1, len - cut - 1);
	th_tvt_records(&t, 0, 0, &other);
	th_tvt_records(&t, 1, 0, &rec);
	th_tvt_end(&t);
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, t.len), 0);

	assert_int_equal(tvh_pt_collect(&r, 1, &ps, &s, NULL), 0);
	assert_int_equal(ps.nruns, 2);
	assert_int_equal(ps.runs[0].offset, 0);
	assert_int_equal(ps.runs[0].len, cut);
	assert_int_equal(ps.runs[1].offset, cut);
	assert_int_equal(ps.runs[1].len, len - cut);
	assert_memory_equal(ps.runs[1].data, buf + cut, len - cut);
	assert_int_equal(ps.ncuts, 1);
	assert_int_equal(ps.cuts[0].offset, cut);
	assert_int_equal(ps.cuts[0].lost, 1);
	assert_int_equal(ps.cut_bytes, 1);
	assert_int_equal(ps.gap_bytes, 0);
	assert_int_equal(ps.bytes, len);

	/* Before the cut: a prefix of the flow, no error (the run just ends). */
	memset(&g, 0, sizeof(g));
	assert_int_equal(tvh_pt_decode(ps.runs[0].data, ps.runs[0].len, 0, image,
				       NULL, collect, &g, NULL), 0);
	assert_int_equal(g.errors, 0);
	/* libipt stops at the last TNT bit (16 here) or at the jump (18). */
	assert_true(g.n >= 11 && g.n <= fx.nflow - 2);
	for (unsigned i = 0; i < g.n; i++)
		assert_int_equal(g.ip[i], fx.flow[i]);
	/* After it: nothing until the next PSB, then all of it. */
	memset(&g, 0, sizeof(g));
	assert_int_equal(tvh_pt_decode(ps.runs[1].data, ps.runs[1].len,
				       ps.runs[1].offset, image, NULL, collect, &g,
				       NULL), 0);
	assert_int_equal(g.errors, 0);
	assert_int_equal(g.syncs, 1);
	assert_int_equal(g.sync_off[0], resume);
	assert_int_equal(g.n, fx.nflow);
	expect_flow(&g, 0);
	tvh_pt_stream_free(&ps);
	tvh_stats_free(&s);

	/* Extraction: the bytes unchanged, the cut listed between two runs. */
	rf = open_memstream(&runs, &runs_len);
	bf = open_memstream(&bytes, &bytes_len);
	assert_int_equal(tvh_pt_extract(&r, 1, bf, rf, NULL, NULL), (int64_t)len);
	fclose(rf);
	fclose(bf);
	assert_int_equal(bytes_len, len);
	assert_memory_equal(bytes, buf, len);
	assert_true(asprintf(&want, "run: stream offsets 0x0..0x%zx at output offset 0x0 (%zu bytes)\n"
			     "gap: 1 bytes lost at stream offset 0x%zx (counted by PT_SYNC;",
			     cut, cut, cut) > 0);
	assert_true(th_contains(runs, want));
	free(want);
	assert_true(asprintf(&want, "run: stream offsets 0x%zx..0x%zx at output offset 0x%zx",
			     cut, len, cut) > 0);
	assert_true(th_contains(runs, want));
	free(want);
	free(runs);
	free(bytes);
	tvt_reader_close(&r);
	th_tvt_free(&t);
	rb_free(&rec);
	rb_free(&other);
}

/* Cuts at a run's start, in a byte gap, after the end; a producer restart. */
static void test_pt_sync_cut_places(void **state)
{
	struct enc x;
	struct recbuf rec = { 0 };
	struct th_tvt t;
	struct tvt_reader r;
	struct tvh_pt_stream ps;
	size_t len;

	(void)state;
	enc_begin(&x);
	encode_run(&x, 1);
	len = enc_end(&x);
	rb_pt_sync(&rec, 1, 0, 2);                  /* at the first byte */
	rb_pt_sync(&rec, 2, len + 10, 3);           /* in the gap */
	rb_pt_sync(&rec, 3, len + 10, 3);           /* nothing new */
	rb_pt_sync(&rec, 4, 2 * len + 100, 7);      /* after the end */
	rb_pt_sync(&rec, 5, 5, 0);                  /* restart: 0 again */
	rb_pt_sync(&rec, 6, 7, 1);                  /* inside run 0 */
	th_tvt_begin(&t, "m", 1);
	th_tvt_records(&t, 2, 0, &rec);
	th_tvt_chunk(&t, 2, TVT_KIND_PT, 0, 0, x.buf, len);
	th_tvt_chunk(&t, 2, TVT_KIND_PT, 0, len + 50, x.buf, len);
	th_tvt_end(&t);
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, t.len), 0);
	assert_int_equal(tvh_pt_collect(&r, 2, &ps, NULL, NULL), 0);
	assert_int_equal(ps.ncuts, 4);
	assert_int_equal(ps.cuts[0].offset, 0);
	assert_int_equal(ps.cuts[0].lost, 2);
	assert_int_equal(ps.cuts[1].offset, 7);
	assert_int_equal(ps.cuts[2].offset, len + 10);
	assert_int_equal(ps.cuts[3].lost, 4);
	assert_int_equal(ps.cut_bytes, 2 + 1 + 1 + 4);
	assert_int_equal(ps.gap_bytes, 50);
	assert_int_equal(ps.nruns, 3);              /* split only at 7 */
	assert_int_equal(ps.runs[0].len, 7);
	assert_int_equal(ps.runs[1].offset, 7);
	assert_int_equal(ps.runs[1].len, len - 7);
	assert_int_equal(ps.runs[2].offset, len + 50);
	assert_int_equal(ps.runs[2].len, len);
	tvh_pt_stream_free(&ps);
	tvt_reader_close(&r);
	th_tvt_free(&t);
	rb_free(&rec);
}

/* ptbranch.c's branch kinds from libipt's class and the opcode. */
static void test_branch_kinds(void **state)
{
	static const struct {
		enum pt_insn_class c;
		uint8_t raw[4];
		unsigned size;
		uint8_t kind;
	} t[] = {
		{ ptic_call, { 0xe8, 0, 0, 0 }, 4, TV_BR_CALL },
		{ ptic_call, { 0xff, 0xd0 }, 2, TV_BR_CALL_IND },
		{ ptic_call, { 0x41, 0xff, 0xd3 }, 3, TV_BR_CALL_IND },
		{ ptic_jump, { 0xeb, 0x02 }, 2, TV_BR_JMP },
		{ ptic_jump, { 0x66, 0xe9, 0, 0 }, 4, TV_BR_JMP },
		{ ptic_jump, { 0x41, 0xff, 0xe3 }, 3, TV_BR_JMP_IND },
		{ ptic_cond_jump, { 0x75, 0xf7 }, 2, TV_BR_JCC },
		{ ptic_return, { 0xc3 }, 1, TV_BR_RET },
		{ ptic_far_call, { 0x0f, 0x05 }, 2, TV_BR_SYSCALL },
		{ ptic_far_call, { 0xcd, 0x80 }, 2, TV_BR_SYSCALL },
		{ ptic_far_call, { 0xff, 0x18 }, 2, TV_BR_FAR },
		{ ptic_far_return, { 0x48, 0xcf }, 2, TV_BR_SYSRET },
		{ ptic_far_return, { 0x48, 0x0f, 0x07 }, 3, TV_BR_SYSRET },
		{ ptic_far_return, { 0xcb }, 1, TV_BR_FAR },
		{ ptic_far_jump, { 0xea }, 1, TV_BR_FAR },
		{ ptic_other, { 0x90 }, 1, TV_BR_UNKNOWN },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (tvh_ptbr_kind(t[i].c, t[i].raw, t[i].size) != t[i].kind)
			fail_msg("case %u: kind %u, expected %u", i,
				 tvh_ptbr_kind(t[i].c, t[i].raw, t[i].size), t[i].kind);
	assert_int_equal(tvh_ptbr_kind(ptic_call, NULL, 0), TV_BR_CALL_IND);
}

/*
 * Code that is not what ran: a `jmp .` where the trace says the CPU went
 * on (here: a TIP.PGD that never binds to a direct jump).  Without a bound
 * the decoder follows the loop forever (as it did on Linux's retpoline
 * thunk in a whole-boot capture, decoded over the unpatched vmlinux);
 * with it: one TVH_PT_ERR_SPIN error after TVH_PT_SPIN_LIMIT
 * instructions, and the run given up.
 */
static int spin_read(uint8_t *buf, size_t size, const struct pt_asid *asid, uint64_t ip, void *ctx)
{
	(void)asid;
	(void)ctx;
	if (ip < 0x5000 || ip >= 0x5002)
		return -pte_nomap;
	for (size_t i = 0; i < size && ip + i < 0x5002; i++)
		buf[i] = (ip + i == 0x5000) ? 0xeb : 0xfe;   /* jmp . */
	return (int)(0x5002 - ip < size ? 0x5002 - ip : size);
}

struct spin_count {
	uint64_t insns, errors;
	int err;
};

static int spin_collect(void *ctx, const struct tvh_pt_item *it)
{
	struct spin_count *c = ctx;

	if (it->kind == TVH_PT_INSN)
		c->insns++;
	if (it->kind == TVH_PT_ERROR) {
		c->errors++;
		c->err = it->err;
	}
	return 0;
}

static void test_endless_loop_bounded(void **state)
{
	struct pt_image *img = pt_image_alloc("spin");
	struct pt_config cfg;
	struct pt_encoder *e;
	struct pt_packet p;
	uint8_t buf[256];
	struct spin_count c = { 0 };
	struct tvh_pt_stats ps;
	int len;

	(void)state;
	assert_non_null(img);
	assert_int_equal(pt_image_set_callback(img, spin_read, NULL), 0);
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + sizeof(buf);
	e = pt_alloc_encoder(&cfg);
	assert_non_null(e);
	memset(&p, 0, sizeof(p));
	p.type = ppt_psb;
	assert_true(pt_enc_next(e, &p) > 0);
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = 1;
	assert_true(pt_enc_next(e, &p) > 0);
	memset(&p, 0, sizeof(p));
	p.type = ppt_psbend;
	assert_true(pt_enc_next(e, &p) > 0);
	p.type = ppt_tip_pge;
	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = 0x5000;
	assert_true(pt_enc_next(e, &p) > 0);
	p.type = ppt_tip_pgd;
	p.payload.ip.ip = 0x9000;
	assert_true(pt_enc_next(e, &p) > 0);
	{
		uint64_t off = 0;

		assert_int_equal(pt_enc_get_offset(e, &off), 0);
		len = (int)off;
	}
	pt_free_encoder(e);
	assert_int_equal(tvh_pt_decode(buf, (size_t)len, 0, img, NULL, spin_collect, &c, &ps), 0);
	assert_int_equal(c.errors, 1);
	assert_int_equal(c.err, TVH_PT_ERR_SPIN);
	assert_true(c.insns >= TVH_PT_SPIN_LIMIT);
	assert_true(c.insns <= TVH_PT_SPIN_LIMIT + 2);
	assert_non_null(strstr(tvh_pt_errstr(TVH_PT_ERR_SPIN), "not what ran"));
	assert_string_equal(tvh_pt_errstr(-pte_nomap), pt_errstr(pte_nomap));
	pt_image_free(img);
}

struct code_at {
	uint64_t at;
	uint8_t b[5];
	unsigned n;
};

/* Code from a table of struct code_at ending with n == 0 (ctx). */
static int table_read(uint8_t *buf, size_t size, const struct pt_asid *asid, uint64_t ip,
		      void *ctx)
{
	const struct code_at *code = ctx;

	(void)asid;
	for (size_t k = 0; code[k].n; k++) {
		if (ip >= code[k].at && ip < code[k].at + code[k].n) {
			size_t n = code[k].at + code[k].n - ip;

			n = n < size ? n : size;
			memcpy(buf, code[k].b + (ip - code[k].at), n);
			return (int)n;
		}
	}
	return -pte_nomap;
}

static const struct code_at exit_code[] = {
	{ 0x5000, { 0xe8, 0xfb, 0x0f, 0x00, 0x00 }, 5 },   /* call 0x6000 */
	{ 0x5005, { 0xeb, 0xfe }, 2 },                     /* jmp . */
	{ 0x6000, { 0xe9, 0xfb, 0x0f, 0x00, 0x00 }, 5 },   /* jmp 0x7000 */
	{ 0x7000, { 0xc3 }, 1 },                           /* ret */
	{ 0, { 0 }, 0 },
};

struct exit_branches {
	uint64_t from[8], to[8];
	unsigned n;
};

static int exit_collect(void *ctx, const struct tvh_pt_item *it)
{
	struct exit_branches *b = ctx;

	if (it->kind == TVH_PT_BRANCH && b->n < 8) {
		b->from[b->n] = it->from;
		b->to[b->n++] = it->to;
	}
	return 0;
}

static int exit_collect_fast(void *ctx, const struct tvh_ptf_item *it)
{
	struct exit_branches *b = ctx;

	if (it->kind == TVH_PTF_BRANCH && b->n < 8) {
		b->from[b->n] = it->from;
		b->to[b->n++] = it->to;
	}
	return 0;
}

static void enc_ip(struct pt_encoder *e, enum pt_packet_type t, uint64_t ip)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = t;
	p.payload.ip.ipc = ip ? pt_ipc_sext_48 : pt_ipc_suppressed;
	p.payload.ip.ip = ip;
	assert_true(pt_enc_next(e, &p) > 0);
}

struct enc_pkt {
	enum pt_packet_type type;
	uint64_t ip;                 /* 0: suppressed */
};

/*
 * PSB, MODE.Exec (64-bit), PSBEND, then pkts (IP packets), decoded by
 * tvh_pt_decode and by ptfast (libipt_branches) over the code table:
 * their branches in *lb and *fb.
 */
static void exit_decode_both(const struct enc_pkt *pkts, size_t n, const struct code_at *code,
			     struct exit_branches *lb, struct exit_branches *fb)
{
	struct pt_image *img = pt_image_alloc("exit");
	struct tvh_pt_opts opts = { .branches = true };
	struct tvh_ptf_opts fo = { .read = table_read, .read_ctx = (void *)code,
				   .libipt_branches = true };
	struct tvh_ptf_decoder *fd;
	struct pt_config cfg;
	struct pt_encoder *e;
	struct pt_packet p;
	uint8_t buf[256];
	uint64_t off = 0;

	assert_non_null(img);
	assert_int_equal(pt_image_set_callback(img, table_read, (void *)code), 0);
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + sizeof(buf);
	e = pt_alloc_encoder(&cfg);
	assert_non_null(e);
	memset(&p, 0, sizeof(p));
	p.type = ppt_psb;
	assert_true(pt_enc_next(e, &p) > 0);
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec.csl = 1;
	assert_true(pt_enc_next(e, &p) > 0);
	memset(&p, 0, sizeof(p));
	p.type = ppt_psbend;
	assert_true(pt_enc_next(e, &p) > 0);
	for (size_t i = 0; i < n; i++)
		enc_ip(e, pkts[i].type, pkts[i].ip);
	assert_int_equal(pt_enc_get_offset(e, &off), 0);
	pt_free_encoder(e);

	memset(lb, 0, sizeof(*lb));
	memset(fb, 0, sizeof(*fb));
	assert_int_equal(tvh_pt_decode(buf, (size_t)off, 0, img, &opts, exit_collect, lb, NULL), 0);
	fd = tvh_ptf_alloc(&fo);
	assert_non_null(fd);
	assert_int_equal(tvh_ptf_decode(fd, buf, (size_t)off, 0, exit_collect_fast, fb, NULL), 0);
	tvh_ptf_free(fd);
	pt_image_free(img);
}

/*
 * A VM exit at the first fetch of a direct call's target (code snapshots'
 * EPT execute tracking): the call completes, then FUP(target) + TIP.PGD,
 * then TIP.PGE at the target.  The call is a taken transfer in the branch
 * list of both decoders (it vanished before: the bochs linux-window-pt
 * window missed 0x1600835 -> 0x1601b60 against MTF).  Code: 0x5000 call
 * 0x6000; 0x6000 jmp 0x7000 (its target's fetch exits too); 0x7000 ret
 * (TIP 0x5005); 0x5005 jmp 0x5005 (not checked past the first three).
 */
static void test_vm_exit_at_branch_target(void **state)
{
	static const struct enc_pkt pkts[] = {
		{ ppt_tip_pge, 0x5000 },
		{ ppt_fup, 0x6000 },          /* exit at the call's target */
		{ ppt_tip_pgd, 0 },
		{ ppt_tip_pge, 0x6000 },
		{ ppt_fup, 0x7000 },          /* exit at the jmp's target */
		{ ppt_tip_pgd, 0 },
		{ ppt_tip_pge, 0x7000 },
		{ ppt_tip, 0x5005 },          /* the ret, not compressed */
		{ ppt_tip_pgd, 0 },
	};
	static const uint64_t from[3] = { 0x5000, 0x6000, 0x7000 }, to[3] = { 0x6000, 0x7000, 0x5005 };
	struct exit_branches lb, fb;

	(void)state;
	exit_decode_both(pkts, sizeof(pkts) / sizeof(pkts[0]), exit_code, &lb, &fb);
	/* then the jmp . at 0x5005 until the decoders give it up */
	assert_true(lb.n >= 3);
	assert_true(fb.n >= 3);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(lb.from[i], from[i]);
		assert_int_equal(lb.to[i], to[i]);
		assert_int_equal(fb.from[i], from[i]);
		assert_int_equal(fb.to[i], to[i]);
	}
}

/*
 * The same for an indirect transfer and for an interrupt: 0x5000 call
 * 0x6000; 0x6000 jmp *%rax (TIP 0x7000), a VM exit at its target (FUP
 * 0x7000 + TIP.PGD, as Bochs's model gave for the far return into
 * x86_64_start_kernel when that page's first fetch exited); 0x7000 ret
 * (TIP 0x5005) and an interrupt right there (FUP 0x5005 + TIP 0x8000).
 * Both decoders keep the jmp and the ret; the fast one reports the
 * interrupt as a branch too (pt.c gives it as an event).
 */
static const struct code_at exit2_code[] = {
	{ 0x5000, { 0xe8, 0xfb, 0x0f, 0x00, 0x00 }, 5 },   /* call 0x6000 */
	{ 0x5005, { 0xeb, 0xfe }, 2 },                     /* jmp . */
	{ 0x6000, { 0xff, 0xe0 }, 2 },                     /* jmp *%rax */
	{ 0x7000, { 0xc3 }, 1 },                           /* ret */
	{ 0x8000, { 0xeb, 0xfe }, 2 },                     /* jmp . */
	{ 0, { 0 }, 0 },
};

static void test_event_at_indirect_and_ret_target(void **state)
{
	static const struct enc_pkt pkts[] = {
		{ ppt_tip_pge, 0x5000 },
		{ ppt_tip, 0x7000 },          /* the indirect jmp */
		{ ppt_fup, 0x7000 },          /* exit at its target */
		{ ppt_tip_pgd, 0 },
		{ ppt_tip_pge, 0x7000 },
		{ ppt_tip, 0x5005 },          /* the ret, not compressed */
		{ ppt_fup, 0x5005 },          /* an interrupt at its destination */
		{ ppt_tip, 0x8000 },
		{ ppt_tip_pgd, 0 },
	};
	static const uint64_t from[4] = { 0x5000, 0x6000, 0x7000, 0x5005 },
			      to[4] = { 0x6000, 0x7000, 0x5005, 0x8000 };
	struct exit_branches lb, fb;

	(void)state;
	exit_decode_both(pkts, sizeof(pkts) / sizeof(pkts[0]), exit2_code, &lb, &fb);
	assert_true(lb.n >= 3);
	assert_true(fb.n >= 4);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(lb.from[i], from[i]);
		assert_int_equal(lb.to[i], to[i]);
	}
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(fb.from[i], from[i]);
		assert_int_equal(fb.to[i], to[i]);
	}
}

static void test_names_and_cpu_parsing(void **state)
{
	struct pt_cpu c;

	(void)state;
	assert_int_equal(tvh_pt_parse_cpu("6/85", &c), 0);
	assert_int_equal(c.vendor, pcv_intel);
	assert_int_equal(c.family, 6);
	assert_int_equal(c.model, 85);
	assert_int_equal(c.stepping, 0);
	assert_int_equal(tvh_pt_parse_cpu("6/0x8c/1", &c), 0);
	assert_int_equal(c.model, 0x8c);
	assert_int_equal(c.stepping, 1);
	assert_int_equal(tvh_pt_parse_cpu("6", &c), -TVH_ERR_INVALID);
	assert_int_equal(tvh_pt_parse_cpu("6/85/4/1", &c), -TVH_ERR_INVALID);
	assert_int_equal(tvh_pt_parse_cpu("6/300", &c), -TVH_ERR_INVALID);
	assert_int_equal(tvh_pt_parse_cpu("6/-1", &c), -TVH_ERR_INVALID);
	assert_int_equal(tvh_pt_parse_cpu("a/b", &c), -TVH_ERR_INVALID);
	assert_int_equal(tvh_pt_parse_cpu("", &c), -TVH_ERR_INVALID);
	assert_string_equal(tvh_pt_iclass_name(ptic_cond_jump), "jcc");
	assert_string_equal(tvh_pt_event_name(ptev_overflow), "overflow");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_instruction_flow),
		cmocka_unit_test(test_branch_list),
		cmocka_unit_test(test_error_then_resync),
		cmocka_unit_test(test_no_code_and_garbage),
		cmocka_unit_test(test_from_tvt),
		cmocka_unit_test(test_pt_sync_cut),
		cmocka_unit_test(test_pt_sync_cut_places),
		cmocka_unit_test(test_branch_kinds),
		cmocka_unit_test(test_endless_loop_bounded),
		cmocka_unit_test(test_vm_exit_at_branch_target),
		cmocka_unit_test(test_event_at_indirect_and_ret_target),
		cmocka_unit_test(test_names_and_cpu_parsing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
