/* SPDX-License-Identifier: MIT */
/*
 * trace_btf.c - see trace_btf.h and docs/BACKENDS-LBR.md.
 */
#include <string.h>

#include "vmm/trace/backend/btf.h"
#include "vmm/hw/hw.h"
#include "vmm/hw/msr.h"
#include "vmm/lib/log.h"
#include "vmm/lib/x86_decode.h"
#include "vmm/trace/backend.h"
#include "vmm/trace/caps.h"
#include "vmm/trace/msr_policy.h"
#include "vmm/vmx/vmx_defs.h"

const char *btf_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case BTF_ERR_INVAL:
		return "invalid argument";
	case BTF_ERR_BUSY:
		return "BTF tracing already on";
	case BTF_ERR_GUEST_TF:
		return "the guest single-steps itself (RFLAGS.TF or DEBUGCTL.BTF)";
	default:
		return "unknown error";
	}
}

void btf_init(struct btf_state *s, uint64_t guest_debugctl)
{
	memset(s, 0, sizeof(*s));
	s->guest_debugctl = guest_debugctl;
}

int btf_start(struct btf_state *s, uint64_t guest_rflags)
{
	if (!s)
		return BTF_ERR_INVAL;
	if (s->tracing)
		return BTF_ERR_BUSY;
	/*
	 * A TF we armed in an earlier window may still be set: that is not
	 * the guest stepping.  Any other TF, or the guest's own BTF, is.
	 */
	if (((guest_rflags & BTF_RFLAGS_TF) && !s->tf_armed) ||
	    (s->guest_debugctl & BTF_DEBUGCTL_BTF))
		return BTF_ERR_GUEST_TF;
	s->tracing = true;
	return 0;
}

void btf_stop(struct btf_state *s)
{
	if (s)
		s->tracing = false;
}

bool btf_intercept_db(const struct btf_state *s)
{
	return s && (s->tracing || s->ever_armed);
}

uint64_t btf_debugctl_read(const struct btf_state *s)
{
	return s ? s->guest_debugctl : 0;
}

void btf_debugctl_write(struct btf_state *s, uint64_t value)
{
	if (s)
		s->guest_debugctl = value;
}

void btf_prepare_entry(struct btf_state *s, struct btf_entry *e)
{
	bool blocking;

	if (!s || !e)
		return;
	if (s->tracing && !s->reflect_pending) {
		e->rflags |= BTF_RFLAGS_TF;
		s->tf_armed = true;
		s->ever_armed = true;
	} else if (s->tf_armed) {
		e->rflags &= ~BTF_RFLAGS_TF;
		s->tf_armed = false;
	}
	s->reflect_pending = false;
	e->debugctl = s->guest_debugctl;
	if (s->tracing)
		e->debugctl |= BTF_DEBUGCTL_BTF | BTF_DEBUGCTL_LBR;

	/*
	 * SDM 3C 27.3.1.5: with blocking by STI or MOV SS, or activity HLT,
	 * BS must be 1 if TF = 1 and BTF = 0, and 0 if TF = 0 or BTF = 1;
	 * otherwise VM entry fails.
	 */
	blocking = (e->interruptibility & (BTF_INTR_STI | BTF_INTR_MOV_SS)) ||
		   e->activity == BTF_ACTIVITY_HLT;
	if (blocking) {
		if ((e->rflags & BTF_RFLAGS_TF) && !(e->debugctl & BTF_DEBUGCTL_BTF))
			e->pending_dbg |= BTF_PENDING_DBG_BS;
		else
			e->pending_dbg &= ~BTF_PENDING_DBG_BS;
	}
}

uint64_t btf_guest_dr6(uint64_t cur, uint64_t qual, bool strip_bs)
{
	uint64_t dr6;

	if (strip_bs)
		qual &= ~BTF_DR6_BS;
	dr6 = (cur & ~BTF_DR6_B0_B3) | (qual & (BTF_DR6_B0_B3 | BTF_DR6_BD | BTF_DR6_BS));
	/* Active-low conditions: 0 in DR6 means it happened. */
	dr6 = (qual & BTF_DR6_BLD) ? dr6 & ~BTF_DR6_BLD : dr6 | BTF_DR6_BLD;
	dr6 = (qual & BTF_DR6_RTM) ? dr6 & ~BTF_DR6_RTM : dr6 | BTF_DR6_RTM;
	/* Bits 10:4 and 31:17 read 1, bit 12 and 63:32 read 0 (SDM 3B 18.2.3). */
	dr6 |= 0xfffe07f0ull;
	dr6 &= 0xffffefffull;
	return dr6;
}

/* Kind of the branch instruction at from, TV_BR_UNKNOWN when unknown. */
static uint8_t branch_kind(struct btf_state *s, uint64_t from, uint8_t mode,
			   btf_fetch_fn fetch, void *fetch_ctx)
{
	uint8_t bytes[X86_MAX_INSN_LEN];
	struct x86_insn insn;
	size_t n;

	if (!fetch)
		return TV_BR_UNKNOWN;
	n = fetch(fetch_ctx, from, bytes, sizeof(bytes));
	if (n > sizeof(bytes) || x86_decode(bytes, n, (enum x86_mode)mode, &insn) < 0) {
		s->stats.decode_errors++;
		return TV_BR_UNKNOWN;
	}
	return x86_branch_kind((enum x86_branch)insn.branch);
}

static bool passes(const struct trace_filter *f, const struct btf_db *in,
		   uint64_t from, uint64_t to)
{
	if (!f)
		return true;
	if (!trace_filter_cpl(f, in->cpl))
		return false;
	if (f->cr3 && (in->cr3 & ~0xfffull) != (f->cr3 & ~0xfffull))
		return false;
	return trace_filter_ip(f, from, to);
}

static void record_step(struct btf_state *s, struct tv_trace_ring *ring,
			const struct trace_filter *f, const struct btf_db *in,
			btf_fetch_fn fetch, void *fetch_ctx, struct btf_db_result *out)
{
	uint64_t to = in->mode == X86_MODE_64 ? in->rip : in->cs_base + in->rip;
	uint64_t from = 0;
	uint8_t kind = TV_BR_UNKNOWN;
	int rc;

	s->stats.steps++;
	/* The LBR top is this branch only if it ends where the guest stands. */
	if (in->lbr_valid && (in->lbr_to == to || in->lbr_to == in->rip)) {
		from = in->lbr_from;
		kind = branch_kind(s, from, in->mode, fetch, fetch_ctx);
	} else {
		s->stats.from_unknown++;
	}
	if (!passes(f, in, from, to)) {
		s->stats.filtered++;
		return;
	}
	rc = trace_append_branch(ring, from, to, (enum tv_branch_kind)kind, 0, 0);
	if (rc == 0) {
		s->stats.recorded++;
		out->recorded = true;
	} else {
		s->stats.dropped++;
	}
}

int btf_on_db(struct btf_state *s, struct tv_trace_ring *ring, const struct trace_filter *f,
	      const struct btf_db *in, btf_fetch_fn fetch, void *fetch_ctx,
	      struct btf_db_result *out)
{
	bool bs, ours_bs, guest_cause;

	if (!s || !ring || !in || !out)
		return BTF_ERR_INVAL;
	memset(out, 0, sizeof(*out));
	out->action = BTF_RESUME;
	out->rflags = in->rflags;
	out->dr6 = in->dr6;
	s->stats.db_exits++;

	bs = (in->qual & BTF_DR6_BS) != 0;
	/*
	 * A single step is ours when we armed TF for this run, or when TF
	 * was ever ours and lingers in a frame the guest restored (the guest
	 * cannot have been stepping: btf_start refuses that).
	 */
	ours_bs = bs && (s->tf_armed || s->ever_armed);
	guest_cause = (in->qual & (BTF_DR6_B0_B3 | BTF_DR6_BD | BTF_DR6_BLD)) || !ours_bs;

	if (ours_bs) {
		if (s->tracing && s->tf_armed)
			record_step(s, ring, f, in, fetch, fetch_ctx, out);
		else
			s->stats.stray++;
		if (!s->tracing)
			out->rflags &= ~BTF_RFLAGS_TF;
	}
	if (!guest_cause)
		return 0;

	out->action = BTF_REFLECT;
	out->dr6 = btf_guest_dr6(in->dr6, in->qual, ours_bs);
	out->clear_dr7_gd = (in->qual & BTF_DR6_BD) != 0;
	if (s->tf_armed || ours_bs) {
		/* The frame the guest's handler gets must hold its own TF (0). */
		out->rflags &= ~BTF_RFLAGS_TF;
		s->tf_armed = false;
		s->reflect_pending = true;
	}
	s->stats.reflected++;
	return 0;
}

/* --- the unit ---------------------------------------------------------------- */

/* The DEBUGCTL bits btf owns (docs/TRACE-MSR-POLICY.md): never the guest's in the field. */
#define BTF_DEBUGCTL_OWNED (DEBUGCTL_LBR | DEBUGCTL_BTF | DEBUGCTL_FREEZE_LBRS_ON_PMI)

struct btf_unit *btf_unit(struct trace_bcpu *b)
{
	return b->priv;
}

static int btf_open(struct trace_bcpu *b, struct trace_view *v)
{
	struct btf_unit *u = btf_unit(b);
	int rc;

	/* The shadow btf_start checks: the guest's bits, ours stripped. */
	btf_debugctl_write(&u->btf, trace_view_get(v, TRACE_VIEW_DEBUGCTL) & ~BTF_DEBUGCTL_OWNED);
	rc = btf_start(&u->btf, trace_view_get(v, TRACE_VIEW_RFLAGS));
	if (rc) {
		log_warn("trace: cpu %u: btf window not opened: %s", b->index, btf_strerror(rc));
		return TRACE_EBUSY;
	}
	memset(&u->btf.stats, 0, sizeof(u->btf.stats));
	/*
	 * LBR_SELECT 0: the top of the stack must be the branch that
	 * stepped, whatever it is; btf_on_db filters in software.
	 */
	lbr_start(&u->lbr.lbr, &u->lbr.caps, NULL, LBR_KINDS_ALL, 0);
	return 0;
}

static void btf_close(struct trace_bcpu *b, struct trace_view *v)
{
	struct btf_unit *u = btf_unit(b);

	(void)v;
	/* TF and DEBUGCTL come off before the next entry (btf_prepare_entry). */
	btf_stop(&u->btf);
	lbr_stop(&u->lbr.lbr);
}

/*
 * Before every entry: TF and DEBUGCTL from btf_prepare_entry, with the
 * guest's own DEBUGCTL bits (what the field holds without ours) as the
 * shadow it merges.  Nothing to do while no window was ever opened and
 * the field holds nothing of ours.  Also after a window: a TF we armed
 * must come off.
 */
static uint32_t btf_prepare(struct trace_bcpu *b, struct trace_view *v)
{
	struct btf_unit *u = btf_unit(b);
	uint64_t dbg = trace_view_get(v, TRACE_VIEW_DEBUGCTL);
	struct btf_entry e;
	uint64_t rflags, pending;

	if (!u->btf.tracing && !u->btf.tf_armed && !u->btf.reflect_pending &&
	    !(dbg & BTF_DEBUGCTL_OWNED))
		return 0;
	btf_debugctl_write(&u->btf, dbg & ~BTF_DEBUGCTL_OWNED);
	memset(&e, 0, sizeof(e));
	e.rflags = rflags = trace_view_get(v, TRACE_VIEW_RFLAGS);
	e.pending_dbg = pending = trace_view_get(v, TRACE_VIEW_PENDING_DBG);
	e.interruptibility = (uint32_t)trace_view_get(v, TRACE_VIEW_INTERRUPTIBILITY);
	e.activity = (uint32_t)trace_view_get(v, TRACE_VIEW_ACTIVITY);
	btf_prepare_entry(&u->btf, &e);
	if (e.rflags != rflags)
		trace_view_set(v, TRACE_VIEW_RFLAGS, e.rflags);
	if (e.debugctl != dbg)
		trace_view_set(v, TRACE_VIEW_DEBUGCTL, e.debugctl);
	if (e.pending_dbg != pending)
		trace_view_set(v, TRACE_VIEW_PENDING_DBG, e.pending_dbg);
	if (btf_intercept_db(&u->btf) && !b->db_intercepted) {
		/* Intercept #DB from now on (exception bitmap bit 1, SDM 3C 25.6.3). */
		trace_view_set(v, TRACE_VIEW_EXC_BITMAP,
			       trace_view_get(v, TRACE_VIEW_EXC_BITMAP) | (1ull << BTF_DB_VECTOR));
		b->db_intercepted = true;
	}
	lbr_unit_set_ctl(b, v, u->btf.tracing);
	return 0;
}

/*
 * One hardware #DB exit: a branch record from the LBR top (the exit
 * cleared DEBUGCTL, not the stack), a stray step swallowed, or a #DB
 * reflected with the guest's DR6 (and DR7.GD cleared for BD, as delivery
 * would).
 */
static uint32_t btf_db(struct trace_bcpu *b, struct trace_view *v, uint64_t qual)
{
	struct btf_unit *u = btf_unit(b);
	struct btf_db in;
	struct btf_db_result out;
	struct trace_guest g;
	struct gmem_ctx gm;
	struct lbr_entry top;
	uint64_t dropped = u->btf.stats.dropped;

	trace_guest_read(&g);
	memset(&in, 0, sizeof(in));
	in.qual = qual;
	in.dr6 = hw_read_dr6();   /* VMX does not switch DR6: the guest's */
	in.rip = g.ip;
	in.cs_base = g.cs_base;
	in.rflags = trace_view_get(v, TRACE_VIEW_RFLAGS);
	in.cr3 = g.cr3;
	in.cpl = g.cpl;
	in.mode = g.mode;
	if (lbr_top(&u->lbr.lbr, &top)) {
		in.lbr_valid = true;
		in.lbr_from = top.from;
		in.lbr_to = top.to;
	}
	trace_guest_mem(&gm);
	btf_on_db(&u->btf, b->ring, b->filter, &in, trace_guest_fetch, &gm, &out);
	if (out.recorded)
		b->window_branches++;
	if (out.rflags != in.rflags)
		trace_view_set(v, TRACE_VIEW_RFLAGS, out.rflags);
	if (out.action == BTF_REFLECT) {
		/* Delivery would have written DR6 (and cleared DR7.GD for BD). */
		hw_write_dr6(out.dr6);
		if (out.clear_dr7_gd)
			trace_view_set(v, TRACE_VIEW_DR7, trace_view_get(v, TRACE_VIEW_DR7) & ~BTF_DR7_GD);
		v->reflect_db = true;
	}
	return u->btf.stats.dropped != dropped ? TRACE_DO_STOP_FULL : TRACE_DO_LIMIT;
}

static void btf_log_stop(struct trace_bcpu *b, const char *trig)
{
	struct btf_unit *u = btf_unit(b);

	log_info("trace: cpu %u: window %llu stopped (%s): %llu branches, %llu filtered, %llu dropped, %llu undecodable, %llu from unknown, %llu #DB exits, %llu reflected, %llu stray; ring lost %llu records",
		 b->index, (unsigned long long)b->windows, trig,
		 (unsigned long long)b->window_branches,
		 (unsigned long long)u->btf.stats.filtered,
		 (unsigned long long)u->btf.stats.dropped,
		 (unsigned long long)u->btf.stats.decode_errors,
		 (unsigned long long)u->btf.stats.from_unknown,
		 (unsigned long long)u->btf.stats.db_exits,
		 (unsigned long long)u->btf.stats.reflected,
		 (unsigned long long)u->btf.stats.stray,
		 (unsigned long long)b->ring->lost_records);
}

/* The machine can (trace_caps, decoded at boot from the boot CPU). */
static bool btf_caps_ok(const struct trace_caps *tc)
{
	return tc->btf;
}

const struct trace_backend trace_backend_BTF = {
	.name = "btf",
	.source = TV_SOURCE_BTF,
	.events = TRACE_EV_DB,
	.debugctl_owned = BTF_DEBUGCTL_OWNED,
	.state_bytes = sizeof(struct btf_unit),
	.msr_owned = TRACE_OWN_LBR | TRACE_OWN_BTF,
	/* arch LBR: IA32_LBR_CTL loaded on entry, cleared on exit */
	.entry_ctls = ENTRY_LOAD_LBR_CTL,
	.exit_ctls = EXIT_CLEAR_LBR_CTL,
	.caps_ok = btf_caps_ok,
	.usable = lbr_unit_usable,
	.open = btf_open,
	.close = btf_close,
	.prepare = btf_prepare,
	.on_db = btf_db,
	.log_stop = btf_log_stop,
};
