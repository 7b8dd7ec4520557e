/* SPDX-License-Identifier: MIT */
/*
 * ptfast.c - the fast PT decoder: packets steer a walk over cached code
 * blocks (see ptfast.h for the semantics and how they relate to libipt).
 *
 * The decoder stands at d->ip.  TNT bits are consumed as soon as their
 * packet arrives (run()); when they are used up the decoder stops at the
 * IP after the last branch they decided: from there, the hardware's next
 * packet tells what comes (SDM 3C 33.3: TNT for conditional branches and
 * compressed returns, TIP for indirect and far transfers, FUP+TIP for
 * asynchronous events, TIP.PGD when tracing stops at a branch), and the
 * straight-line code up to that point is walked only then.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/ptbranch.h"
#include "host-tools/lib/ptfast.h"
#include "host-tools/lib/ptfast_int.h"
#include "host-tools/lib/ptfast_pkt.h"
#include "host-tools/lib/pt.h"
#include "host-tools/lib/sym.h"
#include "vmm/lib/x86_decode.h"

/* libipt's return stack: 64 entries, the oldest dropped when full. */
#define PTF_RS 64

/* Packets whose event takes the next FUP (libipt binds them to it). */
#define PTF_FUP_TAKEN 1

struct tvh_ptf_decoder {
	struct tvh_ptf_opts o;
	struct ptf_cache cache;
	struct ptf_map edges, runs;
	uint64_t cov_insns;

	/* this call */
	const uint8_t *buf;
	size_t len;
	uint64_t base;
	tvh_ptf_fn fn;
	void *ctx;
	int ret;                 /* fn's nonzero value */
	uint64_t emitted_insns;  /* st.insns at the last item emitted */
	struct tvh_ptf_stats st;
	uint64_t pkt_off;        /* offset in buf of the packet being handled */
	size_t pkt_end;          /* and of the byte after it */
	size_t nb;               /* the next PSB of the chain (ptf_next_sync) */

	/* trace state */
	bool synced;
	bool enabled;            /* the flow: tracing on, d->ip valid */
	bool q_enabled;          /* PacketEn as the packets tell (MODE.TSX binds to FUP) */
	uint8_t mode;
	uint64_t ip;
	uint64_t cr3, vmcs;
	uint64_t last_ip;        /* IP compression (SDM 3C 33.4.2.2) */
	bool have_ip, ip_suppressed;
	uint64_t tnt;            /* bits not yet used, the next one at ntnt - 1 */
	unsigned ntnt;
	bool tnt_fresh;          /* no bit of the TNT packet used yet */
	uint32_t spin;           /* instructions since a packet was last read */
	bool spin_enable;        /* enabled, no instruction since: see walk() */

	/* time: the last TSC packet, and libipt's time at the last packet read */
	bool have_tsc, rd_have_tsc;
	uint64_t tsc, rd_tsc;
	/* opts.libipt_branches: the transfer waiting for its destination */
	bool pend;
	struct tvh_ptf_item pend_it;
	bool quiet;              /* only timing packets since the last TNT or TIP */
	uint64_t rs[PTF_RS + 1];
	struct ptf_block *rs_blk[PTF_RS + 1];   /* the call's block (cache gen rs_gen) */
	uint64_t rs_gen[PTF_RS + 1];
	uint8_t rs_top, rs_bottom;

	/* packets waiting for the packet they bind to */
	bool fup_pending;        /* FUP seen, its TIP / TIP.PGD not yet */
	uint64_t fup_ip;
	bool fup_have_tsc;       /* the time at the FUP (its event's) */
	uint64_t fup_tsc;
	unsigned fup_taken;      /* events that consume the next FUP */
	bool ovf_fup;            /* the next FUP resolves an OVF */
	bool mode_pending;       /* MODE.Exec: binds to the next TIP-class packet */
	uint8_t pend_mode;
	bool tip_cr3;            /* PIP after FUP: applies at the TIP */
	uint64_t pend_tip_cr3;
	bool tip_vmcs;
	uint64_t pend_tip_vmcs;
	bool pip_pending;        /* PIP while enabled: binds to MOV CR3 / far branch */
	uint64_t pend_cr3;

	/* where run() stopped: its last block and the successor side taken */
	struct ptf_block *rprev;
	int rside;
	uint64_t rgen;

	/* straight-run tracking for coverage in the per-instruction walks */
	uint64_t run_start;
	uint32_t run_insns;

	/* the code window of the per-instruction walks */
	uint8_t win[256];
	uint64_t win_ip, win_asid;
	size_t win_len;
	uint8_t win_mode;
	uint64_t win_gen;
	bool win_valid;

	/*
	 * Code read through opts.fallback (rewritten pages): the clock times
	 * [span_lo, span_hi) over which all of it stays what was read;
	 * stale: the clock left them, flush before the next use of a block.
	 */
	uint64_t span_lo, span_hi;
	bool stale;
};

/* ---- code access and instruction classes ------------------------------ */

/* Narrow the span to the times pages first..last read at now stay the same. */
static void span_pages(struct tvh_ptf_decoder *d, uint64_t first, uint64_t last,
		       uint64_t now)
{
	for (uint64_t pg = first & ~0xfffull;; pg += 0x1000) {
		uint64_t lo, hi;

		d->o.fallback_span(d->o.fallback_ctx, pg, now, &lo, &hi);
		if (lo > d->span_lo)
			d->span_lo = lo;
		if (hi < d->span_hi)
			d->span_hi = hi;
		if (pg == (last & ~0xfffull))
			return;
	}
}

static int read_code(struct tvh_ptf_decoder *d, uint8_t *buf, size_t size, uint64_t ip)
{
	struct pt_asid asid;
	int n = -pte_nomap;

	if (d->o.read) {
		pt_asid_init(&asid);
		asid.cr3 = d->cr3;
		asid.vmcs = d->vmcs;
		n = d->o.read(buf, size, &asid, ip, d->o.read_ctx);
	}
	if (n == -pte_nomap && d->o.fallback) {
		/* libipt's time when it decodes this instruction (pt.c mem_clock). */
		uint64_t now = d->rd_have_tsc ? d->rd_tsc : 0;
		size_t got = d->o.fallback(d->o.fallback_ctx,
					   d->cr3 == pt_asid_no_cr3 ? 0 : d->cr3, ip,
					   now, buf, size);

		n = got ? (int)got : -pte_nomap;
		if (d->o.fallback_span && size)
			span_pages(d, ip, ip + size - 1, now);
	}
	return n;
}

/*
 * libipt's time moved (rd_*: the time at the packet it read last, which
 * tvh_pt_decode's snapshot clock follows): the code read through the
 * fallback may be another now.
 */
static inline void clock_set(struct tvh_ptf_decoder *d, bool have, uint64_t tsc)
{
	uint64_t now = have ? tsc : 0;

	d->rd_have_tsc = have;
	d->rd_tsc = tsc;
	if (now < d->span_lo || now >= d->span_hi)
		d->stale = true;
}

static void fold_block(void *ctx, const struct ptf_block *b);

/*
 * Before any block or the code window is used: after the clock left the
 * span, drop them (block pointers held elsewhere die with the cache's
 * generation, as at a flush for size).
 */
static inline void clock_check(struct tvh_ptf_decoder *d)
{
	if (__builtin_expect(!d->stale, 1))
		return;
	ptf_cache_flush(&d->cache, d->o.coverage ? fold_block : NULL, d);
	d->win_valid = false;
	d->span_lo = 0;
	d->span_hi = UINT64_MAX;
	d->stale = false;
	d->st.clock_flushes++;
}

/* Up to 15 bytes at ip into out, reading across section ends; count or error. */
static int fetch(struct tvh_ptf_decoder *d, uint64_t ip, uint8_t *out)
{
	size_t have = 0;

	clock_check(d);
	if (d->win_valid && d->win_asid == d->cr3 && ip >= d->win_ip &&
	    ip - d->win_ip + X86_MAX_INSN_LEN <= d->win_len) {
		memcpy(out, d->win + (ip - d->win_ip), X86_MAX_INSN_LEN);
		return X86_MAX_INSN_LEN;
	}
	while (have < sizeof(d->win)) {
		int n = read_code(d, d->win + have, sizeof(d->win) - have, ip + have);

		if (n <= 0) {
			if (!have)
				return n < 0 ? n : -pte_nomap;
			break;
		}
		have += (size_t)n;
		if (have >= X86_MAX_INSN_LEN)
			break;
	}
	d->win_valid = true;
	d->win_ip = ip;
	d->win_len = have;
	d->win_asid = d->cr3;
	if (have > X86_MAX_INSN_LEN)
		have = X86_MAX_INSN_LEN;
	memcpy(out, d->win, have);
	return (int)have;
}

/* An instruction and what libipt makes of it (pt_ild's classes). */
struct ptf_insn {
	uint64_t ip;
	uint8_t len;
	uint8_t end;             /* enum ptf_end, or PTF_E_CONT: not a branch */
	uint8_t iclass;
	uint8_t br;
	bool direct, nopush, movcr3;
	uint64_t target;
};

static int decode_insn(struct tvh_ptf_decoder *d, uint64_t ip, uint8_t mode,
		       struct ptf_insn *in)
{
	uint8_t raw[X86_MAX_INSN_LEN];
	struct x86_insn x;
	unsigned reg;
	int n, len;

	memset(in, 0, sizeof(*in));
	in->ip = ip;
	in->end = PTF_E_CONT;
	in->iclass = ptic_other;
	if (mode != 16 && mode != 32 && mode != 64)
		return -pte_bad_insn;
	n = fetch(d, ip, raw);
	if (n < 0)
		return n;
	len = x86_decode(raw, (size_t)n, (enum x86_mode)mode, &x);
	if (len < 0)
		return -pte_bad_insn;
	in->len = (uint8_t)len;
	reg = (x.modrm >> 3) & 7;
	if (x.encoding != X86_ENC_LEGACY)
		return 0;
	if (x.map == X86_MAP_PRIMARY) {
		switch (x.opcode) {
		case 0x70 ... 0x7f:
		case 0xe0 ... 0xe3:
			in->end = PTF_E_JCC;
			in->iclass = ptic_cond_jump;
			in->direct = true;
			break;
		case 0xe8:
			in->end = PTF_E_CALL;
			in->iclass = ptic_call;
			in->direct = true;
			in->nopush = x.rel == 0;
			break;
		case 0xe9:
		case 0xeb:
			in->end = PTF_E_JMP;
			in->iclass = ptic_jump;
			in->direct = true;
			break;
		case 0xff:
			if (reg == 2) {
				in->end = PTF_E_CALL_IND;
				in->iclass = ptic_call;
			} else if (reg == 3) {
				in->end = PTF_E_FAR;
				in->iclass = ptic_far_call;
			} else if (reg == 4) {
				in->end = PTF_E_JMP_IND;
				in->iclass = ptic_jump;
			} else if (reg == 5) {
				in->end = PTF_E_FAR;
				in->iclass = ptic_far_jump;
			}
			break;
		case 0x9a: case 0xcc: case 0xcd: case 0xce: case 0xf1:
			in->end = PTF_E_FAR;
			in->iclass = ptic_far_call;
			break;
		case 0xea:
			in->end = PTF_E_FAR;
			in->iclass = ptic_far_jump;
			break;
		case 0xca: case 0xcb: case 0xcf:
			in->end = PTF_E_FAR;
			in->iclass = ptic_far_return;
			break;
		case 0xc2:
		case 0xc3:
			in->end = PTF_E_RET;
			in->iclass = ptic_return;
			break;
		default:
			break;
		}
	} else if (x.map == X86_MAP_0F) {
		switch (x.opcode) {
		case 0x80 ... 0x8f:
			in->end = PTF_E_JCC;
			in->iclass = ptic_cond_jump;
			in->direct = true;
			break;
		case 0x05: case 0x34:           /* SYSCALL, SYSENTER */
			in->end = PTF_E_FAR;
			in->iclass = ptic_far_call;
			break;
		case 0x07: case 0x35:           /* SYSRET, SYSEXIT */
			in->end = PTF_E_FAR;
			in->iclass = ptic_far_return;
			break;
		case 0x01:                      /* VMCALL; VMLAUNCH, VMRESUME, UIRET */
			if (x.modrm == 0xc1) {
				in->end = PTF_E_FAR;
				in->iclass = ptic_far_call;
			} else if (x.modrm == 0xc2 || x.modrm == 0xc3 || x.modrm == 0xec) {
				in->end = PTF_E_FAR;
				in->iclass = ptic_far_return;
			}
			break;
		case 0x22:                      /* MOV CR3, r (SDM 3C 33.4.2.5: PIP) */
			in->movcr3 = reg == 3 && !(x.rex & 4);
			break;
		case 0xae:                      /* PTWRITE */
			if ((x.flags & X86_F_REP) && !(x.flags & X86_F_OPSIZE) && reg == 4)
				in->iclass = ptic_ptwrite;
			break;
		default:
			break;
		}
	}
	if (in->direct)
		in->target = ip + (uint64_t)len + (uint64_t)x.rel;
	if (in->end != PTF_E_CONT)
		in->br = tvh_ptbr_kind((enum pt_insn_class)in->iclass, raw, (unsigned)len);
	return 0;
}

/* ---- the block cache ------------------------------------------------- */

static void fold_block(void *ctx, const struct ptf_block *b)
{
	struct tvh_ptf_decoder *d = ctx;

	if (b->hits) {
		ptf_map_add(&d->runs, b->start, b->next, b->hits, b->ninsns);
		if (b->end == PTF_E_JMP || b->end == PTF_E_CALL)
			ptf_map_add(&d->edges, b->last_ip, b->target, b->hits, b->br);
	}
	if (b->taken)
		ptf_map_add(&d->edges, b->last_ip, b->target, b->taken, b->br);
	for (unsigned k = 0; k < PTF_IND_WAYS; k++)
		if (b->ind[k].n)
			ptf_map_add(&d->edges, b->last_ip, b->ind[k].to, b->ind[k].n, b->br);
	if (b->ret_n)
		ptf_map_add(&d->edges, b->ret_from, b->next, b->ret_n, b->ret_br);
}

/* Analyse the code at ip: up to the first branch (SDM 3C 33.3.1's list). */
static struct ptf_block *build(struct tvh_ptf_decoder *d, uint64_t ip)
{
	struct ptf_block *b;
	uint64_t at = ip;
	uint64_t gen = d->cache.gen;

	b = ptf_cache_insert(&d->cache, ip, d->cr3, d->mode, d->o.coverage ? fold_block : NULL, d);
	if (!b)
		return NULL;
	(void)gen;
	d->st.blocks_built++;
	for (;;) {
		struct ptf_insn in;
		int err = decode_insn(d, at, d->mode, &in);

		if (err < 0) {
			b->end = PTF_E_ERR;
			b->err = err;
			b->last_ip = at;
			b->next = at;
			return b;
		}
		b->ninsns++;
		b->last_ip = at;
		b->next = at + in.len;
		if (in.movcr3)
			b->binds_pip = 1;
		if (in.end != PTF_E_CONT || b->ninsns == TVH_PTF_MAX_RUN) {
			b->end = in.end;
			b->iclass = in.iclass;
			b->br = in.br;
			b->target = in.target;
			b->nopush = in.nopush;
			return b;
		}
		at = b->next;
	}
}

static inline struct ptf_block *lookup(struct tvh_ptf_decoder *d, uint64_t ip)
{
	struct ptf_block *b;

	clock_check(d);
	b = ptf_cache_find(&d->cache, ip, d->cr3, d->mode);
	return b ? b : build(d, ip);
}

/* ---- output ------------------------------------------------------------ */

static int emit(struct tvh_ptf_decoder *d, struct tvh_ptf_item *it)
{
	int ret;

	it->offset = d->base + d->pkt_off;
	it->insns = d->st.insns - d->emitted_insns;
	d->emitted_insns = d->st.insns;
	if (!d->fn)
		return 0;
	ret = d->fn(d->ctx, it);
	if (ret && !d->ret)
		d->ret = ret;
	return ret;
}

/* libipt's time: the time at the packet it read last (pt_insn_time). */
static inline void rd_time(struct tvh_ptf_decoder *d)
{
	clock_set(d, d->have_tsc, d->tsc);
}

/*
 * opts.libipt_branches: tvh_pt_decode reports a transfer when libipt
 * returns the instruction at its destination, with the time it has then;
 * an event first (enable, disable, async branch or disable, overflow, a
 * resync) or the end of the trace drops it.  confirm() is called where
 * that instruction is decoded, drop() where it is not.
 */
/*
 * libipt fetches the next event as soon as its TNT bits are used up (and
 * right after delivering an event): the time it then has is the time at
 * the packet that completes that event, after d->pkt_end.  Sets
 * d->rd_* to it when an event comes next (timing packets may come
 * between), else leaves them.
 */
static void rd_time_next_event(struct tvh_ptf_decoder *d)
{
	size_t pos = d->pkt_end;
	bool have = d->have_tsc, bind = false, in_psb = false;
	uint64_t tsc = d->tsc;

	while (pos < d->len) {
		struct ptf_pkt pk;
		int n = ptf_pkt_decode(d->buf + pos, d->buf + d->len, &pk);

		if (n < 0)
			return;
		pos += (size_t)n;
		switch (pk.type) {
		case PTF_PKT_TSC:
			have = true;
			tsc = pk.payload;
			continue;
		case PTF_PKT_PAD: case PTF_PKT_MTC: case PTF_PKT_CYC: case PTF_PKT_TMA:
			continue;
		case PTF_PKT_PSB:
			in_psb = true;
			continue;
		case PTF_PKT_PSBEND:
			break;
		case PTF_PKT_MODE_EXEC: case PTF_PKT_MODE_TSX: case PTF_PKT_MWAIT:
			bind = true;    /* completed by a later FUP or TIP-class packet */
			continue;
		case PTF_PKT_FUP:
			if (in_psb)
				continue;
			bind = true;    /* async: completed by its TIP or TIP.PGD */
			continue;
		case PTF_PKT_EXSTOP: case PTF_PKT_PTW:
			if (pk.flags & 1) {
				bind = true;
				continue;
			}
			break;
		case PTF_PKT_TNT:
			if (bind || in_psb)
				return;         /* not a stream libipt takes */
			return;
		case PTF_PKT_TIP:
			if (!bind)
				return;         /* a branch, not an event */
			break;
		case PTF_PKT_PIP: case PTF_PKT_VMCS:
			if (in_psb || bind)
				continue;       /* in PSB+, or bound to the TIP */
			break;              /* an event of its own */
		default:
			if (in_psb)
				continue;       /* CBR, MNT... in PSB+ */
			break;              /* events of their own */
		}
		clock_set(d, have, tsc);
		return;
	}
}

static inline void confirm(struct tvh_ptf_decoder *d)
{
	if (d->pend) {
		d->pend = false;
		d->pend_it.has_tsc = d->rd_have_tsc;
		d->pend_it.tsc = d->rd_have_tsc ? d->rd_tsc : 0;
		emit(d, &d->pend_it);
	}
}

static inline void drop(struct tvh_ptf_decoder *d)
{
	d->pend = false;
}

/*
 * An asynchronous event at `at` (FUP + TIP.PGD: a VM exit; FUP + TIP: an
 * interrupt or exception): the pending transfer is reported when it led
 * there (it completed before the event; SDM 3C 33.4.2.21, the FUP names
 * the next instruction), anything else dropped, as tvh_pt_decode does.
 * Seen for a direct call, and for the far return into
 * x86_64_start_kernel, whose targets' first fetches exit (snapshots).
 */
static inline void confirm_to(struct tvh_ptf_decoder *d, uint64_t at, bool have_tsc,
			      uint64_t tsc)
{
	if (d->pend && d->pend_it.to == at && d->pend_it.from != at) {
		/* With the event's time (its FUP's), as tvh_pt_decode gives it. */
		d->pend = false;
		d->pend_it.has_tsc = have_tsc;
		d->pend_it.tsc = have_tsc ? tsc : 0;
		emit(d, &d->pend_it);
	} else {
		drop(d);
	}
}

static inline void branch(struct tvh_ptf_decoder *d, uint64_t from, uint64_t to,
			  uint8_t br, uint8_t iclass)
{
	d->st.branches++;
	if (d->fn) {
		struct tvh_ptf_item it = { .kind = TVH_PTF_BRANCH, .from = from, .to = to,
					   .br = br, .iclass = iclass };

		if (d->o.libipt_branches) {
			d->pend = true;
			d->pend_it = it;
			return;
		}
		emit(d, &it);
	}
}

/* A transfer reported at once: an event names its destination. */
static void branch_now(struct tvh_ptf_decoder *d, uint64_t from, uint64_t to,
		       uint8_t br, uint8_t iclass)
{
	d->st.branches++;
	if (d->fn) {
		struct tvh_ptf_item it = { .kind = TVH_PTF_BRANCH, .from = from, .to = to,
					   .br = br, .iclass = iclass,
					   .has_tsc = d->rd_have_tsc,
					   .tsc = d->rd_have_tsc ? d->rd_tsc : 0 };

		emit(d, &it);
	}
}

/* An edge the block counters do not hold (indirect, async, walks). */
static inline void edge(struct tvh_ptf_decoder *d, uint64_t from, uint64_t to, uint8_t br)
{
	if (d->o.coverage)
		ptf_map_add(&d->edges, from, to, 1, br);
}

static void error(struct tvh_ptf_decoder *d, int err, uint64_t ip)
{
	struct tvh_ptf_item it = { .kind = TVH_PTF_ERROR, .err = err, .ip = ip };

	d->st.errors++;
	d->synced = false;
	d->enabled = false;
	drop(d);
	emit(d, &it);
}

static void rs_push(struct tvh_ptf_decoder *d, uint64_t ip)
{
	d->rs[d->rs_top] = ip;
	d->rs_blk[d->rs_top] = NULL;
	d->rs_top = d->rs_top == PTF_RS ? 0 : d->rs_top + 1;
	if (d->rs_top == d->rs_bottom)
		d->rs_bottom = d->rs_bottom == PTF_RS ? 0 : d->rs_bottom + 1;
}

/* A call block's push: the return finds the block after the call through it. */
static inline void rs_push_blk(struct tvh_ptf_decoder *d, struct ptf_block *b)
{
	uint8_t top = d->rs_top;

	rs_push(d, b->next);
	d->rs_blk[top] = b;
	d->rs_gen[top] = d->cache.gen;
}

static int rs_pop(struct tvh_ptf_decoder *d, uint64_t *ip)
{
	if (d->rs_top == d->rs_bottom)
		return -pte_retstack_empty;
	d->rs_top = d->rs_top ? d->rs_top - 1 : PTF_RS;
	*ip = d->rs[d->rs_top];
	return 0;
}

/* ---- runs: the fast path ------------------------------------------------ */

/* A block ran to its end: count it. */
static inline void done(struct tvh_ptf_decoder *d, struct ptf_block *b)
{
	d->st.insns += b->ninsns;
	b->hits++;
	if (b->binds_pip && d->pip_pending) {
		d->cr3 = d->pend_cr3;
		d->pip_pending = false;
	}
}

/* Instructions before an error in a block count, as libipt reports them. */
static int block_error(struct tvh_ptf_decoder *d, struct ptf_block *b)
{
	/* The transfer before is reported with the instructions up to its
	 * source (item insns), as tvh_pt_decode reports it. */
	if (b->ninsns)
		confirm(d);
	d->st.insns += b->ninsns;
	return b->err;
}

/*
 * The spin bound (pt.h, TVH_PT_ERR_SPIN), counted as tvh_pt_decode counts
 * it over libipt: instructions since the decoder last read a packet.
 * libipt reads a TNT packet for the first bit it needs and a TIP for the
 * transfer that takes it, so that instruction ends a spin (reads) and the
 * others add to it.  True when the bound is reached in b (its
 * instructions up to that point are counted).
 */
static inline __attribute__((always_inline)) bool
spin_block(struct tvh_ptf_decoder *d, const struct ptf_block *b,
			      bool reads, bool empties)
{
	uint32_t n = b->ninsns - (reads ? 1u : 0u);

	if (d->spin + n >= TVH_PT_SPIN_LIMIT) {
		confirm(d);
		d->st.insns += TVH_PT_SPIN_LIMIT - d->spin;
		d->spin = 0;
		return true;
	}
	/* The block's first instruction is the destination of the transfer
	 * before; when it is the one that reads, libipt has read first. */
	if (d->pend) {
		if (b->ninsns == 1) {
			if (reads)
				rd_time(d);
			if (empties)
				rd_time_next_event(d);
		}
		confirm(d);
	}
	if (reads)
		rd_time(d);
	d->spin = reads ? 0 : d->spin + n;
	d->spin_enable = false;
	return false;
}

/*
 * Follow the flow from d->ip on the cached TNT bits and, with have_tip,
 * one TIP target (the next indirect or far transfer, or an uncompressed
 * RET, takes it).  Stops where the bits run out (d->ip: the IP after the
 * last branch they decided) or at a transfer that needs a TIP it does not
 * have (d->ip: that block's start).  Returns 0, 1 (have_tip and the TIP
 * was not used: the caller decides), or a negative pt_error_code.
 */
static int run(struct tvh_ptf_decoder *d, bool have_tip, uint64_t tip)
{
	struct ptf_block *prev = NULL, *b, **slot, *cb = NULL;
	int side = 0;
	uint64_t gen;
	int ret = 0;

	clock_check(d);
	gen = d->cache.gen;

	/* Resume from the block the last run ended in: no hash lookup. */
	if (d->rprev && d->rgen == gen) {
		prev = d->rprev;
		side = d->rside;
	}
	d->rprev = NULL;

	slot = prev ? &prev->succ[side] : NULL;
	while (d->ntnt || have_tip) {
		uint64_t to;
		int taken;

		/* A packet read in the last block moved libipt's clock. */
		if (__builtin_expect(d->stale, 0)) {
			clock_check(d);
			gen = d->cache.gen;
			prev = NULL;
			slot = NULL;
		}
		b = slot ? *slot : NULL;
		if (!b || b->start != d->ip || b->asid != d->cr3 || b->mode != d->mode) {
			b = lookup(d, d->ip);
			if (!b)
				return -pte_nomem;
			if (gen != d->cache.gen) {
				gen = d->cache.gen;
				prev = NULL;
				slot = NULL;
			}
			if (slot)
				*slot = b;
		}
		switch (b->end) {
		case PTF_E_JCC:
			if (!d->ntnt) {
				ret = have_tip ? -pte_bad_query : 0;
				if (ret)
					confirm(d);     /* libipt decoded the jcc */
				goto stop;
			}
			if (spin_block(d, b, d->tnt_fresh, d->ntnt == 1))
				return TVH_PT_ERR_SPIN;
			d->tnt_fresh = false;
			d->ntnt--;
			taken = (int)(d->tnt >> d->ntnt) & 1;
			done(d, b);
			if (taken) {
				if (b->target != b->next) {
					b->taken++;
					branch(d, b->last_ip, b->target, b->br, b->iclass);
				}
				d->ip = b->target;
				side = 1;
			} else {
				d->ip = b->next;
				side = 0;
			}
			break;
		case PTF_E_JMP:
		case PTF_E_CALL:
			if (spin_block(d, b, false, false))
				return TVH_PT_ERR_SPIN;
			done(d, b);
			if (b->end == PTF_E_CALL && !b->nopush)
				rs_push_blk(d, b);
			branch(d, b->last_ip, b->target, b->br, b->iclass);
			d->ip = b->target;
			side = 1;
			break;
		case PTF_E_CONT:
			if (spin_block(d, b, false, false))
				return TVH_PT_ERR_SPIN;
			done(d, b);
			d->ip = b->next;
			side = 0;
			break;
		case PTF_E_RET:
			if (d->ntnt) {
				int err;

				/* Compressed RET: a taken TNT bit (SDM 3C 33.4.2.2). */
				if (spin_block(d, b, d->tnt_fresh, d->ntnt == 1))
					return TVH_PT_ERR_SPIN;
				d->tnt_fresh = false;
				d->ntnt--;
				if (!((d->tnt >> d->ntnt) & 1)) {
					d->st.insns += b->ninsns;
					return -pte_bad_retcomp;
				}
				err = rs_pop(d, &to);
				if (err) {
					d->st.insns += b->ninsns;
					return err;
				}
				/* The block after the call, without a lookup. */
				if (d->rs_blk[d->rs_top] && d->rs_gen[d->rs_top] == gen)
					cb = d->rs_blk[d->rs_top];
			} else {
				if (!have_tip)
					goto stop;
				if (spin_block(d, b, true, true))
					return TVH_PT_ERR_SPIN;
				to = tip;
				have_tip = false;
			}
			goto indirect;
		case PTF_E_JMP_IND:
		case PTF_E_CALL_IND:
		case PTF_E_FAR:
			if (!have_tip)
				goto stop;
			if (spin_block(d, b, true, true))
				return TVH_PT_ERR_SPIN;
			to = tip;
			have_tip = false;
			if (b->end == PTF_E_CALL_IND)
				rs_push_blk(d, b);
indirect:
			done(d, b);
			if (b->end == PTF_E_FAR && d->pip_pending) {
				d->cr3 = d->pend_cr3;
				d->pip_pending = false;
			}
			if (d->o.coverage && cb) {
				/* A return to a call site mostly comes from the same
				 * return instruction: counted in the call's block. */
				if (cb->ret_from == b->last_ip && cb->ret_n) {
					cb->ret_n++;
				} else {
					if (cb->ret_n)
						ptf_map_add(&d->edges, cb->ret_from, cb->next,
							    cb->ret_n, cb->ret_br);
					cb->ret_from = b->last_ip;
					cb->ret_br = b->br;
					cb->ret_n = 1;
				}
			} else if (d->o.coverage) {
				/* Most indirect transfers go to one of a few targets:
				 * the block counts PTF_IND_WAYS of them, the fewest
				 * counted goes to the map when a new one comes. */
				unsigned k, low = 0;

				for (k = 0; k < PTF_IND_WAYS; k++) {
					if (b->ind[k].to == to && b->ind[k].n)
						break;
					if (b->ind[k].n < b->ind[low].n)
						low = k;
				}
				if (k < PTF_IND_WAYS) {
					b->ind[k].n++;
				} else {
					if (b->ind[low].n)
						ptf_map_add(&d->edges, b->last_ip, b->ind[low].to,
							    b->ind[low].n, b->br);
					b->ind[low].to = to;
					b->ind[low].n = 1;
				}
			}
			branch(d, b->last_ip, to, b->br, b->iclass);
			d->ip = to;
			side = 1;
			if (!have_tip && d->mode_pending) {
				/* MODE.Exec binds to the TIP's IP. */
				d->mode = d->pend_mode;
				d->mode_pending = false;
			}
			break;
		case PTF_E_ERR:
		default:
			return block_error(d, b);
		}
		prev = b;
		slot = &b->succ[side];
		if (cb) {
			slot = &cb->succ[0];
			cb = NULL;
		}
		if (d->ret)
			return 0;
	}
	/* Stopped after prev: the next run starts at prev->succ[side]. */
	if (prev && gen == d->cache.gen) {
		d->rprev = prev;
		d->rside = side;
		d->rgen = gen;
	}
	return 0;
stop:
	/* Stopped at b (its start is d->ip): reached from prev. */
	if (prev && gen == d->cache.gen) {
		d->rprev = prev;
		d->rside = side;
		d->rgen = gen;
	}
	return ret;
}

/* ---- per-instruction walks: where events bind ------------------------- */

static void run_end(struct tvh_ptf_decoder *d, uint64_t end)
{
	if (d->o.coverage && d->run_insns)
		ptf_map_add(&d->runs, d->run_start, end, 1, d->run_insns);
	d->run_insns = 0;
}

/*
 * The straight-line walk from d->ip until bind(in) says so (bound: the
 * instruction is part of the event) or ip == at (with use_at: the event
 * is before that instruction).  Direct jumps and calls are followed;
 * anything else that needs trace is -pte_bad_query (the event is ahead
 * of it).  *bound receives the binding instruction.
 */
enum ptf_bind { PTF_BIND_NONE, PTF_BIND_DISABLE_IP, PTF_BIND_DISABLE_NOIP };

static int walk(struct tvh_ptf_decoder *d, bool use_at, uint64_t at,
		enum ptf_bind kind, uint64_t dis_ip, struct ptf_insn *bound)
{
	/*
	 * libipt reads an event's packet at the first instruction boundary
	 * after the packet before it: with that instruction when one decided
	 * the flow, else (tracing just enabled) with the walk's first one.
	 */
	bool first_reads = d->spin_enable;

	d->run_start = d->ip;
	d->run_insns = 0;
	d->spin = 0;
	rd_time(d);
	for (;;) {
		struct ptf_insn in;
		bool binds = false;
		int err;

		if (use_at && d->ip == at) {
			run_end(d, d->ip);
			return 0;
		}
		err = decode_insn(d, d->ip, d->mode, &in);
		if (err < 0) {
			run_end(d, d->ip);
			return err;
		}
		confirm(d);
		if (kind == PTF_BIND_DISABLE_NOIP) {
			/* libipt: far branches, CPL and CR3 changes take it. */
			binds = in.end == PTF_E_FAR || in.movcr3;
		} else if (kind == PTF_BIND_DISABLE_IP) {
			binds = in.end != PTF_E_CONT &&
				!((in.end == PTF_E_JMP || in.end == PTF_E_CALL) &&
				  in.target != dis_ip);
		}
		d->st.insns++;
		d->run_insns++;
		if (first_reads) {
			first_reads = false;
			d->spin_enable = false;
		} else if (++d->spin >= TVH_PT_SPIN_LIMIT) {
			d->spin = 0;
			run_end(d, d->ip + in.len);
			return TVH_PT_ERR_SPIN;
		}
		if (binds) {
			run_end(d, d->ip + in.len);
			*bound = in;
			return 1;
		}
		if (in.movcr3 && d->pip_pending) {
			d->cr3 = d->pend_cr3;
			d->pip_pending = false;
		}
		switch (in.end) {
		case PTF_E_CONT:
			d->ip += in.len;
			if (d->run_insns == TVH_PTF_MAX_RUN) {
				run_end(d, d->ip);
				d->run_start = d->ip;
			}
			continue;
		case PTF_E_JMP:
		case PTF_E_CALL:
			run_end(d, d->ip + in.len);
			if (in.end == PTF_E_CALL && !in.nopush)
				rs_push(d, d->ip + in.len);
			edge(d, d->ip, in.target, in.br);
			branch(d, d->ip, in.target, in.br, in.iclass);
			d->ip = in.target;
			d->run_start = d->ip;
			continue;
		default:
			d->st.insns--;
			d->run_insns--;
			run_end(d, d->ip);
			return -pte_bad_query;
		}
	}
}

/* Walk to the event's IP (async branch or disable, PSB+ or OVF FUP). */
static int walk_to(struct tvh_ptf_decoder *d, uint64_t at)
{
	struct ptf_insn in;

	if (d->ntnt)
		return -pte_bad_query;
	return walk(d, true, at, PTF_BIND_NONE, 0, &in);
}

/*
 * End of the trace.  libipt stops as soon as a query finds no more trace:
 * right after the packet that used the last TNT bit or the last TIP.  But
 * when bits are left and the flow stopped at a transfer that needs a TIP,
 * the instructions up to and including that transfer were decoded (the
 * query that fails comes after them): count them.
 */
static int walk_end(struct tvh_ptf_decoder *d)
{
	struct ptf_block *b;

	if (!d->ntnt) {
		drop(d);
		return 0;
	}
	b = lookup(d, d->ip);
	if (!b)
		return -pte_nomem;
	if (b->end == PTF_E_ERR)
		return block_error(d, b);
	confirm(d);
	done(d, b);
	return 0;
}

/*
 * The buffer ends inside the packet at p (n bytes left): does libipt
 * decode on?  It reads timing, status and event packets ahead and takes
 * one cut short for the end of the trace (as when it cannot read the
 * opcode); a branch packet it only identifies ahead, and finds it cut
 * when a query reaches it (libipt 2.0.5 as the fuzz target sees it).
 */
static bool trunc_decodes_on(const uint8_t *p, size_t n)
{
	/* Only a branch packet: TIP (SDM 3C 33.4.2.2) or a long TNT.
	 * Events (FUP, TIP.PGE/PGD, MODE, PIP...) are fetched at once. */
	if (p[0] == 0x02)
		return n >= 2 && p[1] == 0xa3;
	return (p[0] & 0x1f) == 0x0d;
}

/*
 * The buffer ends inside a packet: libipt, not told the trace ended,
 * decodes on to the next instruction that needs trace (whose query then
 * fails with -pte_eos, which tvh_pt_decode does not report).
 */
static int walk_trunc(struct tvh_ptf_decoder *d)
{
	struct ptf_insn in;
	int err = walk(d, false, 0, PTF_BIND_NONE, 0, &in);

	drop(d);
	return err == -pte_bad_query ? 0 : err;
}

/* ---- packets ------------------------------------------------------------ */

/* The IP of an IP packet after compression (libipt's pt_last_ip). */
static void update_ip(struct tvh_ptf_decoder *d, const struct ptf_pkt *pk)
{
	switch (pk->ipc) {
	case PTF_IPC_SUPPRESSED:
		d->ip_suppressed = true;
		return;
	case PTF_IPC_UPDATE_16:
		d->last_ip = (d->last_ip & ~0xffffull) | (pk->payload & 0xffff);
		break;
	case PTF_IPC_UPDATE_32:
		d->last_ip = (d->last_ip & ~0xffffffffull) | (pk->payload & 0xffffffffull);
		break;
	case PTF_IPC_SEXT_48:
		d->last_ip = (uint64_t)((int64_t)(pk->payload << 16) >> 16);
		break;
	case PTF_IPC_UPDATE_48:
		d->last_ip = (d->last_ip & ~0xffffffffffffull) |
			     (pk->payload & 0xffffffffffffull);
		break;
	default:
		d->last_ip = pk->payload;
		break;
	}
	d->have_ip = true;
	d->ip_suppressed = false;
}

/* -pte_noip / -pte_ip_suppressed when the packet gave no IP, else 0. */
static int packet_ip(const struct tvh_ptf_decoder *d, uint64_t *ip)
{
	if (!d->have_ip)
		return -pte_noip;
	if (d->ip_suppressed)
		return -pte_ip_suppressed;
	*ip = d->last_ip;
	return 0;
}

static uint8_t exec_mode(const struct ptf_pkt *pk)
{
	/* CS.L and CS.D (SDM 3C 33.4.2.8): both set is reserved. */
	switch (pk->flags & 3) {
	case 0: return 16;
	case 2: return 32;
	case 1: return 64;
	default: return 0;
	}
}

static void reset_flow(struct tvh_ptf_decoder *d)
{
	d->enabled = false;
	d->q_enabled = false;
	d->mode = 0;
	d->cr3 = pt_asid_no_cr3;
	d->vmcs = pt_asid_no_vmcs;
	d->have_ip = false;
	d->ip_suppressed = false;
	d->last_ip = 0;
	d->ntnt = 0;
	d->spin = 0;
	d->spin_enable = false;
	d->pend = false;
	d->rs_top = d->rs_bottom = 0;
	d->fup_pending = false;
	d->fup_taken = 0;
	d->ovf_fup = false;
	d->mode_pending = false;
	d->tip_cr3 = false;
	d->tip_vmcs = false;
	d->pip_pending = false;
}

/* The TIP-bound packets (PIP, VMCS, MODE.Exec after a FUP) take effect. */
static void apply_tip_bound(struct tvh_ptf_decoder *d)
{
	if (d->tip_cr3)
		d->cr3 = d->pend_tip_cr3;
	if (d->tip_vmcs)
		d->vmcs = d->pend_tip_vmcs;
	if (d->mode_pending)
		d->mode = d->pend_mode;
	d->tip_cr3 = d->tip_vmcs = d->mode_pending = false;
}

/*
 * The next PSB at or after from: the last 16 bytes of a run of 02 82
 * pairs (libipt's pt_sync_forward picks that one, so a longer run in
 * garbage syncs at the same byte).
 */
static size_t ptf_next_psb(const uint8_t *buf, size_t len, size_t from)
{
	size_t p = tvh_pt_next_psb(buf, len, from);

	if (p >= len)
		return len;
	while (p + 18 <= len && buf[p + 16] == 0x02 && buf[p + 17] == 0x82)
		p += 2;
	return p;
}

struct psb_hdr {
	bool fup, mode, pip, vmcs, tsc;
	uint64_t fup_ip, tsc_v;
	uint8_t mode_v;
	uint64_t cr3, vmcs_v;
	size_t end;              /* offset after PSBEND */
};

/*
 * Read the PSB+ at pos (SDM 3C 33.3.7): the packets libipt allows there.
 * The IP compression starts over at the PSB.  0, or -pte_eos (the buffer
 * ends first), -pte_bad_context, packet errors.
 */
static int read_psb(const uint8_t *buf, size_t len, size_t pos, struct psb_hdr *h)
{
	const uint8_t *end = buf + len;
	size_t stop = ptf_next_psb(buf, len, pos + 16);
	uint64_t last = 0;
	bool have = false;
	struct ptf_pkt pk;
	int n;

	(void)end;
	memset(h, 0, sizeof(*h));
	n = ptf_pkt_decode(buf + pos, end, &pk);
	if (n < 0)
		return n;
	pos += (size_t)n;
	for (;;) {
		if (pos >= stop)
			return stop == len ? -pte_eos : -pte_bad_context;
		n = ptf_pkt_decode(buf + pos, buf + stop, &pk);
		if (n == -pte_eos && stop < len)
			return -pte_bad_context;
		if (n < 0)
			return n;
		pos += (size_t)n;
		switch (pk.type) {
		case PTF_PKT_PSBEND:
			h->end = pos;
			return 0;
		case PTF_PKT_FUP: {
			struct tvh_ptf_decoder t;

			t.last_ip = last;
			t.have_ip = have;
			t.ip_suppressed = false;
			update_ip(&t, &pk);
			last = t.last_ip;
			have = t.have_ip;
			if (pk.ipc != PTF_IPC_SUPPRESSED) {
				h->fup = true;
				h->fup_ip = last;
			}
			break;
		}
		case PTF_PKT_PIP:
			h->pip = true;
			h->cr3 = pk.payload;
			break;
		case PTF_PKT_MODE_EXEC:
			h->mode = true;
			h->mode_v = exec_mode(&pk);
			break;
		case PTF_PKT_VMCS:
			h->vmcs = true;
			h->vmcs_v = pk.payload;
			break;
		case PTF_PKT_TSC:
			h->tsc = true;
			h->tsc_v = pk.payload;
			break;
		case PTF_PKT_MODE_TSX:
		case PTF_PKT_PAD:
		case PTF_PKT_CBR:
		case PTF_PKT_TMA:
		case PTF_PKT_MTC:
		case PTF_PKT_CYC:
		case PTF_PKT_MNT:
			break;
		default:
			return -pte_bad_context;
		}
	}
}

/*
 * After the PSB+ h (tracing on at its FUP): what comes before libipt
 * decodes the instruction there?  The first packet after PSBEND that is
 * not timing or status tells: an overflow or the end of the trace (the
 * pending transfer is dropped), an asynchronous branch or disable at the
 * FUP's IP (the transfer led there: reported, as tvh_pt_decode does, with
 * the time of the last TSC before that event's TIP in *tsc), or anything
 * else (the instruction is decoded).
 */
enum psb_next { PSB_DECODE, PSB_DROP, PSB_EVENT };

static enum psb_next psb_next(const struct tvh_ptf_decoder *d, const struct psb_hdr *h,
			      bool *have_tsc, uint64_t *tsc)
{
	struct tvh_ptf_decoder t;
	size_t pos = h->end;
	bool fup = false, fup_have = false;
	uint64_t fup_tsc = 0;

	/* IP compression goes on from the PSB+ FUP. */
	t.last_ip = h->fup_ip;
	t.have_ip = true;
	t.ip_suppressed = false;
	*have_tsc = h->tsc;
	*tsc = h->tsc_v;
	while (pos < d->len) {
		struct ptf_pkt pk;
		int n = ptf_pkt_decode(d->buf + pos, d->buf + d->len, &pk);

		if (n < 0)
			return PSB_DECODE;
		pos += (size_t)n;
		switch (pk.type) {
		case PTF_PKT_TSC:
			*have_tsc = true;
			*tsc = pk.payload;
			continue;
		case PTF_PKT_PAD: case PTF_PKT_MTC: case PTF_PKT_CYC:
		case PTF_PKT_TMA: case PTF_PKT_CBR: case PTF_PKT_MNT: case PTF_PKT_PIP:
		case PTF_PKT_VMCS: case PTF_PKT_MODE_EXEC:
			continue;
		case PTF_PKT_OVF:
			return fup ? PSB_DECODE : PSB_DROP;
		case PTF_PKT_FUP:
			update_ip(&t, &pk);
			if (fup || t.ip_suppressed || t.last_ip != d->ip)
				return PSB_DECODE;
			fup = true;     /* an async event if a TIP or TIP.PGD follows */
			fup_have = *have_tsc;
			fup_tsc = *tsc;
			continue;
		case PTF_PKT_TIP:
		case PTF_PKT_TIP_PGD:
			if (!fup)
				return PSB_DECODE;
			*have_tsc = fup_have;    /* the event's time: at its FUP */
			*tsc = fup_tsc;
			return PSB_EVENT;
		default:
			return PSB_DECODE;
		}
	}
	return PSB_DROP;         /* the trace ends: libipt stops there */
}

/*
 * Before the PSB at pos: the flow walks to the PSB+ FUP (the instruction
 * the PSB came at).  Errors are reported; returns fn's value.
 */
static void psb_close(struct tvh_ptf_decoder *d, const struct psb_hdr *h)
{
	int err;

	if (!d->synced || !d->enabled || !h->fup)
		return;
	err = walk_to(d, h->fup_ip);
	if (err < 0) {
		error(d, err, d->ip);
		return;
	}
	if (d->pend) {
		struct ptf_insn in;
		bool have_tsc;
		uint64_t tsc;
		enum psb_next next = psb_next(d, h, &have_tsc, &tsc);

		/* libipt reads through a PSB+ without a resync: the transfer's
		 * destination is the instruction at the FUP, decoded with the
		 * PSB+'s time (its status events are read first), unless an
		 * event comes first: one at the FUP's IP names the destination
		 * (confirm_to's rule), an overflow or the end drops it. */
		if (next == PSB_EVENT) {
			confirm_to(d, d->ip, have_tsc, tsc);
		} else if (next == PSB_DECODE &&
			   decode_insn(d, d->ip, h->mode ? h->mode_v : d->mode, &in) == 0) {
			if (h->tsc) {
				d->tsc = h->tsc_v;
				d->have_tsc = true;
			}
			rd_time(d);
			confirm(d);
		}
		drop(d);
	}
}

static void psb_open(struct tvh_ptf_decoder *d, const struct psb_hdr *h, size_t pos)
{
	struct tvh_ptf_item it = { .kind = TVH_PTF_SYNC };

	reset_flow(d);
	d->synced = true;
	if (h->tsc) {
		d->tsc = h->tsc_v;
		d->have_tsc = true;
	}
	rd_time(d);
	if (h->mode)
		d->mode = h->mode_v;
	if (h->pip)
		d->cr3 = h->cr3;
	if (h->vmcs)
		d->vmcs = h->vmcs_v;
	if (h->fup) {
		d->spin_enable = true;
		d->enabled = d->q_enabled = true;
		d->ip = h->fup_ip;
		d->last_ip = h->fup_ip;
		d->have_ip = true;
	}
	d->st.syncs++;
	d->pkt_off = pos;
	emit(d, &it);
}

/* OVF (SDM 3C 33.4.2.16): is a FUP next, before anything but timing? */
static int ovf_lookahead(const uint8_t *buf, size_t len, size_t pos)
{
	struct ptf_pkt pk;

	while (pos < len) {
		int n = ptf_pkt_decode(buf + pos, buf + len, &pk);

		if (n < 0)
			return n == -pte_eos ? 0 : n;
		pos += (size_t)n;
		switch (pk.type) {
		case PTF_PKT_FUP:
			return 1;
		case PTF_PKT_PAD: case PTF_PKT_MNT: case PTF_PKT_CBR: case PTF_PKT_TSC:
		case PTF_PKT_TMA: case PTF_PKT_MTC: case PTF_PKT_CYC:
			continue;
		case PTF_PKT_PSBEND: case PTF_PKT_TIP: case PTF_PKT_TIP_PGD:
		case PTF_PKT_TNT:
			return -pte_bad_context;
		default:
			return 0;
		}
	}
	return 0;
}

/* One packet while synced.  0 or a negative pt_error_code. */
static int packet(struct tvh_ptf_decoder *d, const struct ptf_pkt *pk, size_t pos)
{
	uint64_t ip = 0;
	int err;

	switch (pk->type) {
	case PTF_PKT_TNT:
		if (!d->enabled)
			return -pte_no_enable;
		if (d->ntnt || d->fup_pending)
			return -pte_bad_query;
		d->tnt = pk->payload;
		d->ntnt = pk->nbits;
		d->tnt_fresh = true;
		return run(d, false, 0);
	case PTF_PKT_TIP:
		update_ip(d, pk);
		if (!d->enabled)
			return d->fup_pending ? -pte_bad_context : -pte_no_enable;
		if (d->fup_pending) {
			/* FUP+TIP: an interrupt or exception at the FUP's IP. */
			d->fup_pending = false;
			err = walk_to(d, d->fup_ip);
			if (err < 0)
				return err;
			err = packet_ip(d, &ip);
			if (err < 0)
				return -pte_noip;
			/* the transfer to where it struck */
			confirm_to(d, d->fup_ip, d->fup_have_tsc, d->fup_tsc);
			edge(d, d->fup_ip, ip, TV_BR_INTERRUPT);
			/* The record has the event's time: at its FUP. */
			clock_set(d, d->fup_have_tsc, d->fup_tsc);
			branch_now(d, d->fup_ip, ip, TV_BR_INTERRUPT, ptic_error);
			rd_time(d);
			d->ip = ip;
			apply_tip_bound(d);
			return 0;
		}
		if (d->ip_suppressed || !d->have_ip)
			return -pte_noip;
		if (d->mode_pending && d->ntnt)
			return -pte_bad_query;
		/* A MODE.Exec before: libipt reads its event, bound to this
		 * TIP, at the instruction boundary after the last bit. */
		if (d->mode_pending)
			rd_time(d);
		return run(d, true, d->last_ip);
	case PTF_PKT_TIP_PGE:
		update_ip(d, pk);
		if (d->fup_pending || d->enabled)
			return -pte_bad_context;
		if (packet_ip(d, &ip) < 0)
			return -pte_bad_packet;
		d->enabled = d->q_enabled = true;
		d->ip = ip;
		d->ntnt = 0;
		d->spin = 0;
		d->spin_enable = true;
		drop(d);
		rd_time(d);
		apply_tip_bound(d);
		return 0;
	case PTF_PKT_TIP_PGD:
		update_ip(d, pk);
		d->q_enabled = false;
		if (d->fup_pending) {
			/* FUP+TIP.PGD: tracing stops at the FUP's IP. */
			d->fup_pending = false;
			if (!d->enabled)
				return -pte_bad_context;
			err = walk_to(d, d->fup_ip);
			if (err < 0)
				return err;
			/* A VM exit at the walk's last transfer's destination:
			 * that transfer completed (tvh_pt_decode's on_event). */
			confirm_to(d, d->fup_ip, d->fup_have_tsc, d->fup_tsc);
			d->enabled = false;
			apply_tip_bound(d);
			return 0;
		}
		if (d->mode_pending || !d->enabled)
			return -pte_bad_context;
		if (d->ntnt)
			return -pte_bad_query;
		{
			struct ptf_insn in;
			bool noip = packet_ip(d, &ip) < 0;

			err = walk(d, false, 0, noip ? PTF_BIND_DISABLE_NOIP :
				   PTF_BIND_DISABLE_IP, ip, &in);
			if (err < 0)
				return err;
			if (!noip) {
				edge(d, in.ip, ip, in.br);
				/* libipt has fetched the next event when it is asked
				 * for the time of this one. */
				if (d->o.libipt_branches)
					rd_time_next_event(d);
				branch_now(d, in.ip, ip, in.br, in.iclass);
			}
			if (in.movcr3 && d->pip_pending) {
				d->cr3 = d->pend_cr3;
				d->pip_pending = false;
			}
		}
		d->enabled = false;
		apply_tip_bound(d);
		return 0;
	case PTF_PKT_FUP:
		update_ip(d, pk);
		if (d->ovf_fup) {
			d->ovf_fup = false;
			err = packet_ip(d, &ip);
			if (err < 0)
				return err;
			d->enabled = d->q_enabled = true;
			d->ip = ip;
			d->spin = 0;
			d->spin_enable = true;
			rd_time(d);
			return 0;
		}
		if (d->fup_taken) {
			d->fup_taken = 0;
			rd_time(d);     /* the event bound to this FUP is read */
			return 0;
		}
		if (d->fup_pending)
			return -pte_bad_context;
		err = packet_ip(d, &ip);
		if (err < 0)
			return err;
		d->fup_pending = true;
		d->fup_ip = ip;
		d->fup_have_tsc = d->have_tsc;
		d->fup_tsc = d->tsc;
		return 0;
	case PTF_PKT_PIP:
		/*
		 * libipt reads event packets as soon as its TNT bits are used
		 * up (ptfast has used them when the next packet comes): the
		 * time of the transfers whose destination comes after is theirs.
		 */
		if (!d->fup_pending)
			rd_time(d);
		if (d->fup_pending) {
			d->tip_cr3 = true;
			d->pend_tip_cr3 = pk->payload;
		} else if (!d->enabled) {
			d->cr3 = pk->payload;
		} else {
			if (d->ntnt || d->pip_pending)
				return -pte_bad_query;
			d->pip_pending = true;
			d->pend_cr3 = pk->payload;
		}
		return 0;
	case PTF_PKT_VMCS:
		if (!d->fup_pending)
			rd_time(d);
		if (d->fup_pending) {
			d->tip_vmcs = true;
			d->pend_tip_vmcs = pk->payload;
		} else if (!d->enabled) {
			d->vmcs = pk->payload;
		} else {
			return -pte_bad_context;
		}
		return 0;
	case PTF_PKT_MODE_EXEC:
		d->mode_pending = true;
		d->pend_mode = exec_mode(pk);
		return 0;
	case PTF_PKT_MODE_TSX:
		/* Binds to the next FUP; an abort's FUP+TIP is an async branch. */
		if (d->q_enabled && !(pk->flags & 2))
			d->fup_taken = PTF_FUP_TAKEN;
		return 0;
	case PTF_PKT_EXSTOP:
	case PTF_PKT_PTW:
		if (pk->flags & 1)
			d->fup_taken = PTF_FUP_TAKEN;
		else
			rd_time(d);
		return 0;
	case PTF_PKT_MWAIT:
		d->fup_taken = PTF_FUP_TAKEN;
		return 0;
	case PTF_PKT_OVF:
		if (d->ntnt)
			return -pte_bad_query;
		err = ovf_lookahead(d->buf, d->nb, pos + pk->size);
		if (err < 0)
			return err;
		/* Overflow: the packet state starts over (libipt's pt_qry_reset). */
		drop(d);
		d->have_ip = false;
		d->ip_suppressed = false;
		d->last_ip = 0;
		d->fup_pending = false;
		d->fup_taken = 0;
		d->mode_pending = d->tip_cr3 = d->tip_vmcs = false;
		d->enabled = false;
		d->q_enabled = err > 0;
		d->ovf_fup = err > 0;
		return 0;
	case PTF_PKT_STOP:
		rd_time(d);
		return d->enabled ? -pte_bad_context : 0;
	case PTF_PKT_CBR:
	case PTF_PKT_MNT:
	case PTF_PKT_PWRE:
	case PTF_PKT_PWRX:
		rd_time(d);     /* events of their own in libipt */
		return 0;
	case PTF_PKT_TSC:
		d->tsc = pk->payload;
		d->have_tsc = true;
		return 0;
	case PTF_PKT_MTC:
	case PTF_PKT_CYC:
		d->st.fine_timing++;
		return 0;
	default:
		return 0;       /* timing, power, PAD, MNT, PSBEND outside PSB+ */
	}
}

/* ---- the packet loop ------------------------------------------------- */

static void set_stats(struct tvh_ptf_decoder *d)
{
	size_t bytes = ptf_cache_bytes(&d->cache);

	d->st.cache_flushes = d->cache.flushes;
	if (bytes > d->st.peak_cache_bytes)
		d->st.peak_cache_bytes = bytes;
}

/*
 * The PSBs that start pieces and resynchronise: a chain, each found by
 * tvh_pt_next_psb after the end of the one before (so overlapping PSB
 * patterns in garbage split the same way for one thread and for many).
 * No packet is decoded across one.
 */
static size_t next_sync(const uint8_t *buf, size_t len, size_t psb)
{
	return ptf_next_psb(buf, len, psb + 16);
}

/*
 * Decode buf[start..limit) of buf[0..len): start is 0 or a PSB of the
 * chain, limit is len or a PSB of the chain (whose PSB+ is read to finish
 * the flow up to it).
 */
static int decode_range(struct tvh_ptf_decoder *d, const uint8_t *buf, size_t len,
			uint64_t offset, size_t start, size_t limit, tvh_ptf_fn fn,
			void *ctx, struct tvh_ptf_stats *stats)
{
	size_t pos = start;
	bool trunc = false;      /* the buffer ends inside a packet */

	d->buf = buf;
	d->len = len;
	d->base = offset;
	d->fn = fn;
	d->ctx = ctx;
	d->ret = 0;
	memset(&d->st, 0, sizeof(d->st));
	d->emitted_insns = 0;
	reset_flow(d);
	d->have_tsc = false;
	d->tsc = 0;
	clock_set(d, false, 0);
	d->synced = false;
	d->nb = ptf_next_psb(buf, len, start);
	while (pos < limit && !d->ret) {
		struct ptf_pkt pk;
		int n, err;

		if (!d->synced)
			pos = d->nb;
		if (pos >= limit)
			break;
		d->pkt_off = pos;
		if (pos == d->nb) {
			struct psb_hdr h;

			d->nb = next_sync(buf, len, pos);
			err = read_psb(buf, len, pos, &h);
			if (err == -pte_eos) {
				d->synced = false;     /* a PSB+ cut by the end */
				break;
			}
			if (err < 0) {
				error(d, err, d->ip);
				continue;
			}
			psb_close(d, &h);
			psb_open(d, &h, pos);
			pos = h.end;
			continue;
		}
		/* Fast path: TNT-8 (SDM 3C 33.4.2.1), the bulk of a trace. */
		if (!(buf[pos] & 1) && buf[pos] > 2 && d->enabled && !d->ntnt &&
		    !d->fup_pending) {
			unsigned b = buf[pos];

			d->ntnt = 30u - (unsigned)__builtin_clz(b);
			d->tnt = (b >> 1) & ((1u << d->ntnt) - 1);
			d->tnt_fresh = true;
			d->quiet = true;
			pos++;
			d->pkt_end = pos;
			err = run(d, false, 0);
			if (err < 0)
				error(d, err, d->ip);
			continue;
		}
		n = ptf_pkt_decode(buf + pos, buf + d->nb, &pk);
		if (n < 0) {
			if (n == -pte_eos && d->nb == len) {
				trunc = trunc_decodes_on(buf + pos, len - pos);
				break;
			}
			/* Cut by a PSB: -pte_bad_packet, resync there. */
			error(d, n == -pte_eos ? -pte_bad_packet : n, d->ip);
			continue;
		}
		d->pkt_end = pos + (size_t)n;
		switch (pk.type) {
		case PTF_PKT_TNT: case PTF_PKT_TIP:
			d->quiet = true;
			break;
		case PTF_PKT_PAD: case PTF_PKT_TSC: case PTF_PKT_MTC: case PTF_PKT_CYC:
		case PTF_PKT_TMA:
			break;
		default:
			d->quiet = false;       /* libipt has an event to deliver */
			break;
		}
		err = packet(d, &pk, pos);
		pos += (size_t)n;
		if (err < 0)
			error(d, err, d->ip);
	}
	if (d->ret)
		goto out;
	if (limit < len) {
		struct psb_hdr h;

		/* The next piece starts at this PSB: finish the flow up to it. */
		if (d->synced && read_psb(buf, len, limit, &h) == 0)
			psb_close(d, &h);
		/* The piece's end (its last instructions, item insns). */
		if (!d->ret) {
			struct tvh_ptf_item it = { .kind = TVH_PTF_END };

			d->pkt_off = limit;
			emit(d, &it);
		}
	} else {
		struct tvh_ptf_item it = { .kind = TVH_PTF_END };

		if (d->synced && d->enabled) {
			int err = trunc && !d->ntnt && d->quiet ? walk_trunc(d) : walk_end(d);

			if (err < 0)
				error(d, err, d->ip);
		}
		d->pkt_off = len;
		if (!d->ret)
			emit(d, &it);
	}
out:
	set_stats(d);
	d->cov_insns += d->st.insns;
	if (stats)
		*stats = d->st;
	return d->ret;
}

struct tvh_ptf_decoder *tvh_ptf_alloc(const struct tvh_ptf_opts *opts)
{
	struct tvh_ptf_decoder *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	if (opts)
		d->o = *opts;
	d->cache.max = d->o.max_blocks;
	d->span_hi = UINT64_MAX;
	return d;
}

void tvh_ptf_free(struct tvh_ptf_decoder *d)
{
	if (!d)
		return;
	ptf_cache_free(&d->cache);
	ptf_map_free(&d->edges);
	ptf_map_free(&d->runs);
	free(d);
}

int tvh_ptf_decode(struct tvh_ptf_decoder *d, const uint8_t *buf, size_t len,
		   uint64_t offset, tvh_ptf_fn fn, void *ctx,
		   struct tvh_ptf_stats *stats)
{
	return decode_range(d, buf, len, offset, 0, len, fn, ctx, stats);
}

/* ---- coverage ------------------------------------------------------------ */

static int cmp_edge(const void *a, const void *b)
{
	const struct tvh_ptf_edge *x = a, *y = b;

	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	if (x->to != y->to)
		return x->to < y->to ? -1 : 1;
	return (int)x->br - (int)y->br;
}

static int cmp_bb(const void *a, const void *b)
{
	const struct tvh_ptf_bb *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return 0;
}

int tvh_ptf_coverage(struct tvh_ptf_decoder *d, struct tvh_ptf_cov *out)
{
	struct ptf_map edges = { 0 }, runs = { 0 };
	struct tvh_ptf_decoder tmp;
	size_t k;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	/* The maps plus what the live blocks hold, without disturbing d. */
	tmp = *d;
	tmp.edges = edges;
	tmp.runs = runs;
	for (k = 0; k < d->edges.cap && !ret; k++)
		if (d->edges.v[k].used)
			ret = ptf_map_add(&tmp.edges, d->edges.v[k].a, d->edges.v[k].b,
					  d->edges.v[k].count, d->edges.v[k].extra);
	for (k = 0; k < d->runs.cap && !ret; k++)
		if (d->runs.v[k].used)
			ret = ptf_map_add(&tmp.runs, d->runs.v[k].a, d->runs.v[k].b,
					  d->runs.v[k].count, d->runs.v[k].extra);
	if (!ret)
		ptf_cache_each(&d->cache, fold_block, &tmp);
	out->edges = calloc(tmp.edges.n + 1, sizeof(*out->edges));
	out->blocks = calloc(tmp.runs.n + 1, sizeof(*out->blocks));
	if (ret || !out->edges || !out->blocks) {
		ret = -TVH_ERR_NOMEM;
		goto done;
	}
	for (k = 0; k < tmp.edges.cap; k++) {
		const struct ptf_ment *e = &tmp.edges.v[k];

		if (e->used)
			out->edges[out->nedges++] = (struct tvh_ptf_edge){
				.from = e->a, .to = e->b, .count = e->count, .br = (uint8_t)e->extra };
	}
	for (k = 0; k < tmp.runs.cap; k++) {
		const struct ptf_ment *e = &tmp.runs.v[k];

		if (e->used)
			out->blocks[out->nblocks++] = (struct tvh_ptf_bb){
				.start = e->a, .end = e->b, .count = e->count, .ninsns = e->extra };
	}
	qsort(out->edges, out->nedges, sizeof(*out->edges), cmp_edge);
	qsort(out->blocks, out->nblocks, sizeof(*out->blocks), cmp_bb);
	out->insns = d->cov_insns;
done:
	ptf_map_free(&tmp.edges);
	ptf_map_free(&tmp.runs);
	if (ret)
		tvh_ptf_cov_free(out);
	return ret;
}

void tvh_ptf_cov_free(struct tvh_ptf_cov *c)
{
	free(c->edges);
	free(c->blocks);
	memset(c, 0, sizeof(*c));
}

int tvh_ptf_cov_merge(struct tvh_ptf_cov *dst, const struct tvh_ptf_cov *src)
{
	struct tvh_ptf_edge *e = calloc(dst->nedges + src->nedges + 1, sizeof(*e));
	struct tvh_ptf_bb *b = calloc(dst->nblocks + src->nblocks + 1, sizeof(*b));
	size_t i = 0, j = 0, n = 0;

	if (!e || !b) {
		free(e);
		free(b);
		return -TVH_ERR_NOMEM;
	}
	while (i < dst->nedges || j < src->nedges) {
		int c = i == dst->nedges ? 1 : j == src->nedges ? -1 :
			cmp_edge(&dst->edges[i], &src->edges[j]);

		if (c < 0) {
			e[n++] = dst->edges[i++];
		} else if (c > 0) {
			e[n++] = src->edges[j++];
		} else {
			e[n] = dst->edges[i++];
			e[n++].count += src->edges[j++].count;
		}
	}
	free(dst->edges);
	dst->edges = e;
	dst->nedges = n;
	i = j = n = 0;
	while (i < dst->nblocks || j < src->nblocks) {
		int c = i == dst->nblocks ? 1 : j == src->nblocks ? -1 :
			cmp_bb(&dst->blocks[i], &src->blocks[j]);

		if (c < 0) {
			b[n++] = dst->blocks[i++];
		} else if (c > 0) {
			b[n++] = src->blocks[j++];
		} else {
			b[n] = dst->blocks[i++];
			b[n++].count += src->blocks[j++].count;
		}
	}
	free(dst->blocks);
	dst->blocks = b;
	dst->nblocks = n;
	dst->insns += src->insns;
	return 0;
}

/* ---- parallel ------------------------------------------------------------- */

struct ptf_piece {
	pthread_t thread;
	bool threaded;
	struct tvh_ptf_decoder *dec;   /* the caller's, or NULL: one of its own */
	const uint8_t *buf;
	size_t len, start, limit;
	uint64_t offset;
	const struct tvh_ptf_opts *opts;
	tvh_ptf_fn fn;
	void *ctx;
	struct tvh_ptf_cov cov;
	bool want_cov;
	struct tvh_ptf_stats st;
	int ret;
};

static void *piece_main(void *arg)
{
	struct ptf_piece *p = arg;
	struct tvh_ptf_decoder *d = p->dec ? p->dec : tvh_ptf_alloc(p->opts);

	if (!d) {
		p->ret = -TVH_ERR_NOMEM;
		return NULL;
	}
	p->ret = decode_range(d, p->buf, p->len, p->offset, p->start, p->limit,
			      p->fn, p->ctx, &p->st);
	if (!p->ret && p->want_cov)
		p->ret = tvh_ptf_coverage(d, &p->cov);
	if (!p->dec)
		tvh_ptf_free(d);
	return NULL;
}

bool tvh_ptf_fine_timing(const uint8_t *buf, size_t len)
{
	size_t pos = ptf_next_psb(buf, len, 0);

	while (pos < len) {
		struct ptf_pkt pk;
		int n;

		/* TNT-8 and PAD, most of a trace: one byte, bit 0 clear (0x02
		 * starts the extended packets). */
		if (!(buf[pos] & 1) && buf[pos] != 0x02) {
			pos++;
			continue;
		}
		n = ptf_pkt_decode(buf + pos, buf + len, &pk);
		if (n < 0) {
			pos = ptf_next_psb(buf, len, pos + 1);
			continue;
		}
		if (pk.type == PTF_PKT_MTC || pk.type == PTF_PKT_CYC)
			return true;
		pos += (size_t)n;
	}
	return false;
}

size_t tvh_ptf_first_sync(const uint8_t *buf, size_t len)
{
	return ptf_next_psb(buf, len, 0);
}

size_t tvh_ptf_next_sync(const uint8_t *buf, size_t len, size_t sync)
{
	return sync < len ? next_sync(buf, len, sync) : len;
}

int tvh_ptf_decode_parallel(const uint8_t *buf, size_t len, uint64_t offset,
			    const struct tvh_ptf_opts *opts, unsigned nthreads,
			    tvh_ptf_fn fn, void *const *ctxs,
			    struct tvh_ptf_cov *cov, struct tvh_ptf_stats *stats)
{
	return tvh_ptf_decode_range_parallel(buf, len, offset, 0, len, opts, NULL,
					     nthreads, fn, ctxs, cov, stats);
}

int tvh_ptf_decode_range_parallel(const uint8_t *buf, size_t len, uint64_t offset,
				  size_t start, size_t limit,
				  const struct tvh_ptf_opts *opts,
				  struct tvh_ptf_decoder *const *decs, unsigned nthreads,
				  tvh_ptf_fn fn, void *const *ctxs,
				  struct tvh_ptf_cov *cov, struct tvh_ptf_stats *stats)
{
	struct ptf_piece *pc;
	size_t sync, from = start;
	unsigned n = 0;
	int ret = 0;

	if (stats)
		memset(stats, 0, sizeof(*stats));
	if (cov)
		memset(cov, 0, sizeof(*cov));
	if (!nthreads || start > limit || limit > len ||
	    (cov && (decs || !opts || !opts->coverage)))
		return -TVH_ERR_INVALID;
	pc = calloc(nthreads, sizeof(*pc));
	if (!pc)
		return -TVH_ERR_NOMEM;
	sync = start ? start : ptf_next_psb(buf, len, 0);

	for (unsigned i = 0; i < nthreads && (start < limit || !n); i++) {
		size_t want = from + (size_t)((unsigned __int128)(limit - from) * (i + 1) / nthreads);
		size_t end;

		/* The first PSB of the chain at or after want (next_sync). */
		while (i + 1 < nthreads && sync < limit && sync < want)
			sync = next_sync(buf, len, sync);
		end = i + 1 == nthreads || sync > limit ? limit : sync;
		if (end <= start && n)
			continue;
		pc[n] = (struct ptf_piece){ .buf = buf, .len = len, .start = start,
			.limit = end, .offset = offset, .opts = opts, .fn = fn,
			.ctx = ctxs ? ctxs[n] : NULL, .want_cov = cov != NULL,
			.dec = decs ? decs[n] : NULL };
		start = end;
		n++;
	}
	for (unsigned i = 0; i < n; i++) {
		pc[i].threaded = n > 1 && !pthread_create(&pc[i].thread, NULL, piece_main, &pc[i]);
		if (!pc[i].threaded)
			piece_main(&pc[i]);
	}
	for (unsigned i = 0; i < n; i++) {
		if (pc[i].threaded)
			pthread_join(pc[i].thread, NULL);
		if (pc[i].ret && !ret)
			ret = pc[i].ret;
		if (stats) {
			stats->insns += pc[i].st.insns;
			stats->branches += pc[i].st.branches;
			stats->syncs += pc[i].st.syncs;
			stats->errors += pc[i].st.errors;
			stats->blocks_built += pc[i].st.blocks_built;
			stats->cache_flushes += pc[i].st.cache_flushes;
			stats->clock_flushes += pc[i].st.clock_flushes;
			stats->fine_timing += pc[i].st.fine_timing;
			if (pc[i].st.peak_cache_bytes > stats->peak_cache_bytes)
				stats->peak_cache_bytes = pc[i].st.peak_cache_bytes;
		}
		if (cov && !ret && tvh_ptf_cov_merge(cov, &pc[i].cov))
			ret = -TVH_ERR_NOMEM;
		tvh_ptf_cov_free(&pc[i].cov);
	}
	if (ret && cov)
		tvh_ptf_cov_free(cov);
	free(pc);
	return ret;
}

/* ---- images ---------------------------------------------------------------- */

int tvh_ptf_image_add(struct tvh_ptf_image *im, uint64_t vaddr,
		      const uint8_t *bytes, uint64_t size)
{
	struct tvh_ptf_seg s = { .vaddr = vaddr, .size = size };
	size_t i;

	if (im->nsegs == im->cap) {
		size_t cap = im->cap ? im->cap * 2 : 8;
		struct tvh_ptf_seg *v = realloc(im->segs, cap * sizeof(*v));

		if (!v)
			return -TVH_ERR_NOMEM;
		im->segs = v;
		im->cap = cap;
	}
	s.bytes = malloc(size ? size : 1);
	if (!s.bytes)
		return -TVH_ERR_NOMEM;
	memcpy(s.bytes, bytes, size);
	for (i = im->nsegs; i > 0 && im->segs[i - 1].vaddr > vaddr; i--)
		im->segs[i] = im->segs[i - 1];
	im->segs[i] = s;
	im->nsegs++;
	return 0;
}

int tvh_ptf_image_from_symtab(struct tvh_ptf_image *im, const struct tvh_symtab *st)
{
	for (unsigned i = 0; i < st->nmods; i++) {
		const struct tvh_module *m = &st->mods[i];

		for (unsigned k = 0; k < m->nsegs; k++) {
			const struct tvh_segment *s = &m->segs[k];
			uint8_t *tmp;
			int ret;

			if (!(s->flags & PF_X) || !s->filesz)
				continue;
			if (m->image && s->offset + s->filesz <= m->image_size) {
				ret = tvh_ptf_image_add(im, s->vaddr + m->bias,
							m->image + s->offset, s->filesz);
			} else {
				tmp = malloc(s->filesz);
				if (!tmp)
					return -TVH_ERR_NOMEM;
				if (pread(m->fd, tmp, s->filesz, (off_t)s->offset) !=
				    (ssize_t)s->filesz) {
					free(tmp);
					return -TVH_ERR_IO;
				}
				ret = tvh_ptf_image_add(im, s->vaddr + m->bias, tmp, s->filesz);
				free(tmp);
			}
			if (ret)
				return ret;
		}
	}
	return 0;
}

void tvh_ptf_image_free(struct tvh_ptf_image *im)
{
	for (size_t i = 0; i < im->nsegs; i++)
		free(im->segs[i].bytes);
	free(im->segs);
	memset(im, 0, sizeof(*im));
}

int tvh_ptf_image_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		       uint64_t ip, void *ctx)
{
	const struct tvh_ptf_image *im = ctx;
	size_t lo = 0, hi = im->nsegs;

	(void)asid;
	/* The last segment starting at or below ip. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (im->segs[mid].vaddr <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -pte_nomap;
	{
		const struct tvh_ptf_seg *s = &im->segs[lo - 1];
		uint64_t off = ip - s->vaddr;

		if (off >= s->size)
			return -pte_nomap;
		if (size > s->size - off)
			size = (size_t)(s->size - off);
		memcpy(buffer, s->bytes + off, size);
		return (int)size;
	}
}
