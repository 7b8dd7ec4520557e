/* SPDX-License-Identifier: MIT */
/*
 * ptgen.c - random code and the PT the hardware would write for a random
 * execution of it (see ptgen.h).  Packet rules: SDM 3C 33.3 (TNT before
 * any TIP/FUP, FUP+TIP for asynchronous events, TIP.PGD/TIP.PGE, PSB+
 * with MODE.Exec and a FUP while tracing, OVF then FUP or TIP.PGE, RET
 * compression against a 64-entry stack flushed at PSB).
 */
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/host/ptgen.h"

enum gk { K_FILL, K_JCC, K_JMP, K_CALL, K_CALL0, K_RET, K_JMPI, K_CALLI, K_FAR };

struct gi {
	uint64_t ip;
	uint8_t len, kind, rel8;
	uint64_t target;
};

struct region {
	uint8_t mode;            /* 16, 32, 64 */
	uint64_t base;
	struct gi *v;
	size_t n;
	size_t *blocks;          /* insn index of each block start */
	size_t nblocks;
	uint8_t *bytes;
	size_t size;
};

struct gen {
	uint64_t rng;
	const struct ptgen_opts *o;
	struct region r[3];
	struct pt_encoder *e;
	uint64_t last_ip;
	int have_last;
	uint64_t tnt;
	unsigned ntnt, tnt_max;
	uint64_t rs[65];
	unsigned rs_top, rs_bottom;
	int fail;
	uint64_t cr3;            /* the current address space (a few in turn) */
	/* IPs executed since the last packet the decoders use to move on:
	 * an event at one of them binds where the decoders first reach it,
	 * so calls in between (a cycle of direct jumps) are not seen. */
	uint64_t seen[32];
	unsigned nseen;
	int cycle;
};

static int gen_trace(void)
{
	static int on = -1;

	if (on < 0)
		on = getenv("PTGEN_TRACE") != NULL;
	return on;
}

static uint64_t rnd(struct gen *g)
{
	g->rng ^= g->rng << 13;
	g->rng ^= g->rng >> 7;
	g->rng ^= g->rng << 17;
	return g->rng;
}

static unsigned pick(struct gen *g, unsigned n)
{
	return (unsigned)(rnd(g) % n);
}

static int chance(struct gen *g, unsigned per_mille)
{
	return pick(g, 1000) < per_mille;
}

/* ---- code ---------------------------------------------------------------- */

static const struct { uint8_t b[3]; uint8_t len; } fills[] = {
	{ { 0x90 }, 1 },               /* nop */
	{ { 0x31, 0xc0 }, 2 },         /* xor eax, eax */
	{ { 0x83, 0xc0, 0x05 }, 3 },   /* add eax, 5 */
	{ { 0x89, 0xd8 }, 2 },         /* mov eax, ebx */
	{ { 0x85, 0xc0 }, 2 },         /* test eax, eax */
};

static int layout(struct gen *g, struct region *r, uint8_t mode, uint64_t base,
		  unsigned nblocks)
{
	size_t cap = (size_t)nblocks * 8 + 8, ip = 0;

	memset(r, 0, sizeof(*r));
	r->mode = mode;
	r->base = base;
	r->v = calloc(cap, sizeof(*r->v));
	r->blocks = calloc(nblocks + 1, sizeof(*r->blocks));
	if (!r->v || !r->blocks)
		return -1;
	for (unsigned b = 0; b <= nblocks; b++) {
		unsigned nf = pick(g, 6);
		struct gi t = { 0 };

		r->blocks[r->nblocks++] = r->n;
		for (unsigned k = 0; k < nf; k++) {
			unsigned f = pick(g, 5);

			r->v[r->n++] = (struct gi){ .ip = base + ip, .len = fills[f].len,
						    .kind = K_FILL, .target = f };
			ip += fills[f].len;
		}
		if (b == nblocks) {
			t.kind = K_JMPI;             /* the end: jump somewhere */
		} else {
			static const uint8_t kinds[] = { K_JCC, K_JCC, K_JCC, K_JCC, K_JMP,
				K_CALL, K_CALL, K_CALL0, K_RET, K_RET, K_JMPI, K_CALLI, K_FAR };

			t.kind = kinds[pick(g, sizeof(kinds))];
			if (mode == 16 && (t.kind == K_CALL || t.kind == K_CALL0 ||
					   t.kind == K_FAR))
				t.kind = K_JCC;
		}
		switch (t.kind) {
		case K_JCC:
			t.rel8 = mode == 16 || chance(g, 300);
			t.len = t.rel8 ? 2 : 6;
			break;
		case K_JMP:
			t.rel8 = mode == 16 || chance(g, 300);
			t.len = t.rel8 ? 2 : 5;
			break;
		case K_CALL:
		case K_CALL0:
			t.len = 5;
			break;
		case K_RET:
			t.len = 1;
			break;
		case K_JMPI:
		case K_CALLI:
			t.len = 2;
			break;
		default:
			t.len = mode == 64 && chance(g, 500) ? 2 : 1;   /* syscall or int3 */
			break;
		}
		t.ip = base + ip;
		ip += t.len;
		r->v[r->n++] = t;
	}
	r->nblocks--;              /* the last block is not a target */
	r->size = ip;
	r->bytes = calloc(1, ip);
	if (!r->bytes)
		return -1;
	for (size_t i = 0; i < r->n; i++) {
		struct gi *x = &r->v[i];
		uint8_t *p = r->bytes + (x->ip - base);
		uint64_t end = x->ip + x->len;
		int64_t rel;

		switch (x->kind) {
		case K_FILL:
			memcpy(p, fills[x->target].b, x->len);
			continue;
		case K_JCC:
		case K_JMP:
			if (x->rel8) {
				/* A block in reach, else the fall-through (rel 0). */
				x->target = end;
				for (int tries = 0; tries < 8; tries++) {
					uint64_t t = r->v[r->blocks[pick(g, (unsigned)r->nblocks)]].ip;

					if ((int64_t)(t - end) >= -128 && (int64_t)(t - end) <= 127) {
						x->target = t;
						break;
					}
				}
				rel = (int64_t)(x->target - end);
				if (x->kind == K_JCC) {
					/* Jcc, or LOOP / JrCXZ now and then. */
					static const uint8_t ops[] = { 0x74, 0x75, 0x7c, 0xe2, 0xe3 };

					p[0] = mode == 16 ? 0x74 : ops[pick(g, 5)];
				} else {
					p[0] = 0xeb;
				}
				p[1] = (uint8_t)rel;
			} else {
				x->target = r->v[r->blocks[pick(g, (unsigned)r->nblocks)]].ip;
				rel = (int64_t)(x->target - end);
				if (x->kind == K_JCC) {
					p[0] = 0x0f;
					p[1] = (uint8_t)(0x80 + pick(g, 16));
					memcpy(p + 2, &(int32_t){ (int32_t)rel }, 4);
				} else {
					p[0] = 0xe9;
					memcpy(p + 1, &(int32_t){ (int32_t)rel }, 4);
				}
			}
			break;
		case K_CALL:
			x->target = r->v[r->blocks[pick(g, (unsigned)r->nblocks)]].ip;
			p[0] = 0xe8;
			memcpy(p + 1, &(int32_t){ (int32_t)(x->target - end) }, 4);
			break;
		case K_CALL0:
			x->target = end;
			p[0] = 0xe8;
			break;
		case K_RET:
			p[0] = 0xc3;
			break;
		case K_JMPI:
			p[0] = 0xff;
			p[1] = 0xe0;
			break;
		case K_CALLI:
			p[0] = 0xff;
			p[1] = 0xd0;
			break;
		default:
			if (x->len == 2) {
				p[0] = 0x0f;
				p[1] = 0x05;
			} else {
				p[0] = 0xcc;
			}
			break;
		}
	}
	return 0;
}

static size_t find(const struct region *r, uint64_t ip)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (r->v[mid].ip < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- packets --------------------------------------------------------------- */

static void put(struct gen *g, struct pt_packet *p)
{
	if (pt_enc_next(g->e, p) < 0)
		g->fail = 1;
	memset(p, 0, sizeof(*p));
}

static void flush_tnt(struct gen *g)
{
	struct pt_packet p;

	if (!g->ntnt)
		return;
	memset(&p, 0, sizeof(p));
	p.type = g->ntnt > 6 ? ppt_tnt_64 : ppt_tnt_8;
	p.payload.tnt.bit_size = (uint8_t)g->ntnt;
	p.payload.tnt.payload = g->tnt;
	put(g, &p);
	g->ntnt = 0;
	g->tnt = 0;
	g->tnt_max = g->o->long_tnt && chance(g, 300) ? 1 + pick(g, 47) : 1 + pick(g, 6);
}

static void timing(struct gen *g)
{
	struct pt_packet p;
	unsigned k;

	if (!chance(g, g->o->p_timing))
		return;
	memset(&p, 0, sizeof(p));
	/* tsc_only: PAD, TSC or CBR (cases 0, 1, 4). */
	k = g->o->tsc_only ? pick(g, 3) : pick(g, 5);
	if (g->o->tsc_only && k == 2)
		k = 4;
	switch (k) {
	case 0:
		p.type = ppt_pad;
		break;
	case 1:
		p.type = ppt_tsc;
		p.payload.tsc.tsc = rnd(g) & 0xffffffffffffffull;
		break;
	case 2:
		p.type = ppt_mtc;
		p.payload.mtc.ctc = (uint8_t)rnd(g);
		break;
	case 3:
		p.type = ppt_cyc;
		p.payload.cyc.value = rnd(g) & 0xfff;
		break;
	default:
		p.type = ppt_cbr;
		p.payload.cbr.ratio = (uint8_t)(1 + pick(g, 40));
		break;
	}
	put(g, &p);
}

static void tnt_bit(struct gen *g, int taken)
{
	g->nseen = 0;
	g->cycle = 0;
	g->tnt = (g->tnt << 1) | (uint64_t)(taken & 1);
	if (++g->ntnt >= g->tnt_max)
		flush_tnt(g);
}

/* An IP packet, compressed against the last IP when that is allowed. */
static void ip_packet(struct gen *g, enum pt_packet_type t, uint64_t ip, int suppress)
{
	struct pt_packet p;

	flush_tnt(g);
	timing(g);
	g->nseen = 0;
	g->cycle = 0;
	memset(&p, 0, sizeof(p));
	p.type = t;
	if (suppress) {
		p.payload.ip.ipc = pt_ipc_suppressed;
	} else {
		enum pt_ip_compression c = pt_ipc_sext_48;
		unsigned k = pick(g, 5);

		if (k == 0)
			c = pt_ipc_full;
		else if (k == 1 && g->have_last && (g->last_ip >> 16) == (ip >> 16))
			c = pt_ipc_update_16;
		else if (k == 2 && g->have_last && (g->last_ip >> 32) == (ip >> 32))
			c = pt_ipc_update_32;
		else if (k == 3 && g->have_last && (g->last_ip >> 48) == (ip >> 48))
			c = pt_ipc_update_48;
		p.payload.ip.ipc = c;
		p.payload.ip.ip = ip;
		g->last_ip = ip;
		g->have_last = 1;
	}
	put(g, &p);
}

static void mode_packet(struct gen *g, uint8_t mode)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec = pt_set_exec_mode(mode == 64 ? ptem_64bit :
						    mode == 32 ? ptem_32bit : ptem_16bit);
	put(g, &p);
}

/* PIP (SDM 3C 33.4.2.5): switch changes to one of four CR3s, else the current one. */
static void pip_packet(struct gen *g, int do_switch)
{
	struct pt_packet p;

	if (do_switch)
		g->cr3 = (uint64_t)(1 + pick(g, 4)) << 12;
	memset(&p, 0, sizeof(p));
	p.type = ppt_pip;
	p.payload.pip.cr3 = g->cr3;
	put(g, &p);
}

static void rs_push(struct gen *g, uint64_t ip)
{
	if (gen_trace())
		fprintf(stderr, "gen: push %llx\n", (unsigned long long)ip);
	g->rs[g->rs_top] = ip;
	g->rs_top = g->rs_top == 64 ? 0 : g->rs_top + 1;
	if (g->rs_top == g->rs_bottom)
		g->rs_bottom = g->rs_bottom == 64 ? 0 : g->rs_bottom + 1;
}

static int rs_pop(struct gen *g, uint64_t *ip)
{
	if (g->rs_top == g->rs_bottom)
		return 0;
	g->rs_top = g->rs_top ? g->rs_top - 1 : 64;
	*ip = g->rs[g->rs_top];
	if (gen_trace())
		fprintf(stderr, "gen: pop %llx\n", (unsigned long long)*ip);
	return 1;
}

static uint64_t any_block(struct gen *g, const struct region *r)
{
	return r->v[r->blocks[pick(g, (unsigned)r->nblocks)]].ip;
}

static uint64_t offset(struct gen *g)
{
	uint64_t off = 0;

	pt_enc_get_offset(g->e, &off);
	return off;
}

/* ---- execution -------------------------------------------------------------- */

int ptgen_make(struct ptgen *out, const struct ptgen_opts *o)
{
	struct gen g;
	struct pt_config cfg;
	size_t cap = o->bytes + 65536;
	unsigned cur = 2;            /* region index: 0 = 16, 1 = 32, 2 = 64-bit */
	uint64_t ip, next_psb = 0;
	int enabled = 0;
	unsigned nb = o->nblocks ? o->nblocks : 200;

	memset(out, 0, sizeof(*out));
	memset(&g, 0, sizeof(g));
	g.rng = o->seed * 2654435761u + 88172645463325252ull;
	g.o = o;
	g.tnt_max = 6;
	g.cr3 = 1u << 12;
	if (layout(&g, &g.r[0], 16, 0x1000, nb / 8 + 4) ||
	    layout(&g, &g.r[1], 32, 0x08048000, nb / 4 + 4) ||
	    layout(&g, &g.r[2], 64, 0x0000555512340000ull, nb))
		goto fail;
	for (int i = 0; i < 3; i++)
		if (tvh_ptf_image_add(&out->image, g.r[i].base, g.r[i].bytes, g.r[i].size))
			goto fail;
	out->buf = malloc(cap);
	if (!out->buf)
		goto fail;
	pt_config_init(&cfg);
	cfg.begin = out->buf;
	cfg.end = out->buf + cap;
	g.e = pt_alloc_encoder(&cfg);
	if (!g.e)
		goto fail;
	ip = any_block(&g, &g.r[cur]);
	uint64_t quiet = 0, last_off = 0;

	while (offset(&g) < o->bytes && !g.fail) {
		struct region *r = &g.r[cur];
		struct pt_packet p;
		size_t i;
		struct gi *x;

		if (offset(&g) >= next_psb) {
			/* PSB+ (SDM 3C 33.3.7): the IP compression starts over. */
			flush_tnt(&g);
			memset(&p, 0, sizeof(p));
			p.type = ppt_psb;
			put(&g, &p);
			g.have_last = 0;
			if (o->tsc_only) {
				/* As with TSCEn: every PSB+ has the time. */
				memset(&p, 0, sizeof(p));
				p.type = ppt_tsc;
				p.payload.tsc.tsc = rnd(&g) & 0xffffffffffffffull;
				put(&g, &p);
				memset(&p, 0, sizeof(p));
			}
			mode_packet(&g, r->mode);
			if (chance(&g, 500))
				pip_packet(&g, 0);
			if (enabled) {
				p.type = ppt_fup;
				p.payload.ip.ipc = pt_ipc_sext_48;
				p.payload.ip.ip = ip;
				put(&g, &p);
				g.last_ip = ip;
				g.have_last = 1;
			}
			p.type = ppt_psbend;
			put(&g, &p);
			g.rs_top = g.rs_bottom = 0;
			next_psb = o->psb_every ? offset(&g) + o->psb_every : (uint64_t)-1;
		}
		if (!enabled) {
			/* Tracing off: timing, maybe a mode, then TIP.PGE. */
			timing(&g);
			if (chance(&g, o->p_mode)) {
				cur = pick(&g, 3);
				r = &g.r[cur];
				g.rs_top = g.rs_bottom = 0;
			}
			mode_packet(&g, r->mode);
			ip = any_block(&g, r);
			ip_packet(&g, ppt_tip_pge, ip, 0);
			enabled = 1;
			continue;
		}
		i = find(r, ip);
		x = &r->v[i];
		if (gen_trace() && x->kind != K_FILL)
			fprintf(stderr, "gen: at %llx kind %u off %llx\n", (unsigned long long)ip,
				x->kind, (unsigned long long)offset(&g));
		/* A loop of direct jumps writes no trace: interrupt it. */
		if (offset(&g) != last_off) {
			last_off = offset(&g);
			quiet = 0;
		}
		for (unsigned k = 0; k < g.nseen && !g.cycle; k++)
			g.cycle = g.seen[k] == ip;
		if (g.nseen < 32)
			g.seen[g.nseen++] = ip;
		else
			g.cycle = 1;
		if (chance(&g, o->p_async / 4) || ++quiet > 1000) {
			quiet = 0;
			/* The decoders stop at the first visit: forget calls since. */
			if (g.cycle)
				g.rs_top = g.rs_bottom = 0;
			/* Interrupt before x: FUP (its IP), TIP (the handler). */
			ip_packet(&g, ppt_fup, ip, 0);
			if (chance(&g, o->p_disable)) {
				ip_packet(&g, ppt_tip_pgd, 0, 1);
				enabled = 0;
				continue;
			}
			if (chance(&g, o->p_pip))
				pip_packet(&g, 1);
			ip = any_block(&g, r);
			ip_packet(&g, ppt_tip, ip, 0);
			out->branches++;
			continue;
		}
		if (chance(&g, o->p_ovf / 4) && !g.cycle) {
			flush_tnt(&g);
			memset(&p, 0, sizeof(p));
			p.type = ppt_ovf;
			put(&g, &p);
			g.have_last = 0;
			g.rs_top = g.rs_bottom = 0;
			if (chance(&g, 500)) {
				ip = any_block(&g, r);
				ip_packet(&g, ppt_fup, ip, 0);
			} else {
				enabled = 0;
			}
			continue;
		}
		switch (x->kind) {
		case K_FILL:
			ip += x->len;
			break;
		case K_JCC: {
			int taken = pick(&g, 2);

			tnt_bit(&g, taken);
			ip = taken ? x->target : x->ip + x->len;
			if (taken && x->target != x->ip + x->len)
				out->branches++;
			break;
		}
		case K_JMP:
		case K_CALL0:
			ip = x->target;
			out->branches++;
			break;
		case K_CALL:
			/* libipt pushes no call to the next instruction (rel 0). */
			if (x->target != x->ip + x->len)
				rs_push(&g, x->ip + x->len);
			ip = x->target;
			out->branches++;
			break;
		case K_RET: {
			uint64_t ra;

			out->branches++;
			if (rs_pop(&g, &ra)) {
				if (o->retcomp) {
					tnt_bit(&g, 1);
				} else {
					ip_packet(&g, ppt_tip, ra, 0);
				}
				ip = ra;
			} else {
				ip = any_block(&g, r);
				ip_packet(&g, ppt_tip, ip, 0);
			}
			break;
		}
		case K_JMPI:
		case K_CALLI:
		case K_FAR:
			if (chance(&g, o->p_disable)) {
				/* Leaves the traced context. */
				int noip = x->kind == K_FAR && chance(&g, 500);

				ip_packet(&g, ppt_tip_pgd, any_block(&g, r), noip);
				if (!noip)
					out->branches++;
				enabled = 0;
				break;
			}
			/* A call that leaves by TIP.PGD is not pushed (libipt binds the disable to it). */
			if (x->kind == K_CALLI)
				rs_push(&g, x->ip + x->len);
			if (x->kind == K_FAR && chance(&g, o->p_pip)) {
				flush_tnt(&g);
				pip_packet(&g, 1);
			}
			if (chance(&g, o->p_mode)) {
				flush_tnt(&g);
				cur = pick(&g, 3);
				r = &g.r[cur];
				g.rs_top = g.rs_bottom = 0;
				mode_packet(&g, r->mode);
			}
			/* Each site has one to three targets, as real code does. */
			if (r->nblocks) {
				uint64_t h = (x->ip * 0x9e3779b97f4a7c15ull) >> 20;
				unsigned k = pick(&g, 1 + (unsigned)(h % 3));

				ip = r->v[r->blocks[(h + k * 7919) % r->nblocks]].ip;
			}
			ip_packet(&g, ppt_tip, ip, 0);
			out->branches++;
			break;
		}
	}
	flush_tnt(&g);
	out->len = (size_t)offset(&g);
	pt_free_encoder(g.e);
	for (int i = 0; i < 3; i++) {
		free(g.r[i].v);
		free(g.r[i].blocks);
		free(g.r[i].bytes);
	}
	return g.fail ? -1 : 0;
fail:
	for (int i = 0; i < 3; i++) {
		free(g.r[i].v);
		free(g.r[i].blocks);
		free(g.r[i].bytes);
	}
	if (g.e)
		pt_free_encoder(g.e);
	ptgen_free(out);
	return -1;
}

void ptgen_free(struct ptgen *g)
{
	tvh_ptf_image_free(&g->image);
	free(g->buf);
	memset(g, 0, sizeof(*g));
}
