/* SPDX-License-Identifier: MIT */
/*
 * trace_mtf.c - see trace_mtf.h.
 */
#include <string.h>

#include "vmm/trace/backend/mtf.h"
#include "vmm/lib/log.h"
#include "vmm/lib/x86_decode.h"
#include "vmm/trace/backend.h"
#include "vmm/trace/caps.h"
#include "vmm/vmx/vmx_defs.h"

void mtf_reset(struct mtf_state *s)
{
	s->have_prev = false;
	s->prev_decoded = false;
}

/* An IP after adding to it, as the CPU wraps it in this mode. */
static uint64_t ip_wrap(uint64_t ip, uint8_t mode)
{
	if (mode == X86_MODE_16)
		return ip & 0xffffull;
	if (mode == X86_MODE_32)
		return ip & 0xffffffffull;
	return ip;
}

/* Decode the instruction at g and remember it as the previous one. */
static void remember(struct mtf_state *s, const struct mtf_guest *g,
		     mtf_fetch_fn fetch, void *fetch_ctx)
{
	uint8_t bytes[X86_MAX_INSN_LEN];
	struct x86_insn insn;
	uint64_t target;
	size_t n;

	s->have_prev = true;
	s->prev_decoded = false;
	s->prev_has_target = false;
	s->prev_branch = X86_BR_NONE;
	s->prev_len = 0;
	s->prev_ip = g->ip;
	s->prev_cs_base = g->cs_base;
	s->prev_linear = g->cs_base + g->ip;
	s->prev_cpl = g->cpl;
	s->prev_mode = g->mode;
	s->prev_cr3 = g->cr3;

	n = fetch ? fetch(fetch_ctx, s->prev_linear, bytes, sizeof(bytes)) : 0;
	if (n > sizeof(bytes) || x86_decode(bytes, n, (enum x86_mode)g->mode, &insn) < 0) {
		s->stats.decode_errors++;
		return;
	}
	s->prev_decoded = true;
	s->prev_len = insn.len;
	s->prev_branch = insn.branch;
	if (x86_branch_target(&insn, g->ip, &target)) {
		s->prev_has_target = true;
		s->prev_target = g->cs_base + target;
	}
}

static bool passes(const struct trace_filter *f, const struct mtf_state *s,
		   uint64_t from, uint64_t to)
{
	if (!f)
		return true;
	if (!trace_filter_cpl(f, s->prev_cpl))
		return false;
	if (f->cr3 && (s->prev_cr3 & ~0xfffull) != (f->cr3 & ~0xfffull))
		return false;
	return trace_filter_ip(f, from, to);
}

int mtf_observe(struct mtf_state *s, struct tv_trace_ring *ring,
		const struct trace_filter *filter, const struct mtf_guest *g,
		mtf_fetch_fn fetch, void *fetch_ctx)
{
	uint64_t now = g->cs_base + g->ip, fall;
	uint8_t kind = TV_BR_UNKNOWN;
	bool transfer = false;
	int rc = 0;

	s->stats.observations++;
	if (s->have_prev && now != s->prev_linear) {
		if (!s->prev_decoded) {
			/* Unknown length: a short step forward is taken as sequential. */
			transfer = !(now > s->prev_linear && now - s->prev_linear <= X86_MAX_INSN_LEN);
		} else {
			fall = s->prev_cs_base + ip_wrap(s->prev_ip + s->prev_len, s->prev_mode);
			switch (s->prev_branch) {
			case X86_BR_NONE:
				transfer = now != fall;
				kind = TV_BR_INTERRUPT;
				break;
			case X86_BR_JCC:
				if (now == s->prev_target) {
					transfer = true;
					kind = TV_BR_JCC;
				} else if (now != fall) {
					transfer = true;
					kind = TV_BR_INTERRUPT;
				}
				break;
			case X86_BR_JMP:
			case X86_BR_CALL:
				transfer = true;
				kind = now == s->prev_target ? x86_branch_kind((enum x86_branch)s->prev_branch) :
							       TV_BR_INTERRUPT;
				break;
			default:
				/* Indirect, far, returns, INT n, SYSCALL, IRET. */
				transfer = true;
				kind = x86_branch_kind((enum x86_branch)s->prev_branch);
				break;
			}
		}
	}

	if (transfer) {
		if (!passes(filter, s, s->prev_linear, now)) {
			s->stats.filtered++;
		} else {
			rc = trace_append_branch(ring, s->prev_linear, now,
						 (enum tv_branch_kind)kind, 0, g->tsc);
			if (rc == 0) {
				s->stats.branches++;
				if (kind == TV_BR_INTERRUPT)
					s->stats.events++;
				rc = 1;
			} else if (rc == TRACE_ERR_FULL) {
				s->stats.dropped++;
			}
		}
	}
	if (!s->have_prev || now != s->prev_linear || g->cr3 != s->prev_cr3 ||
	    g->cpl != s->prev_cpl || g->mode != s->prev_mode)
		remember(s, g, fetch, fetch_ctx);
	return rc;
}

/* --- the unit ---------------------------------------------------------------- */

struct mtf_state *mtf_unit(struct trace_bcpu *b)
{
	return b->priv;
}

static bool mtf_usable(struct trace_bcpu *b)
{
	return (b->proc_allowed1 & CPU_MONITOR_TRAP_FLAG) != 0;
}

static int mtf_open(struct trace_bcpu *b, struct trace_view *v)
{
	mtf_reset(mtf_unit(b));
	trace_view_set(v, TRACE_VIEW_MTF, 1);
	return 0;
}

static void mtf_close(struct trace_bcpu *b, struct trace_view *v)
{
	(void)b;
	trace_view_set(v, TRACE_VIEW_MTF, 0);
}

/* Every exit of a window: record the transfer since the last one. */
static uint32_t mtf_drain(struct trace_bcpu *b, struct trace_view *v)
{
	struct mtf_state *s = mtf_unit(b);
	struct trace_guest tg;
	struct mtf_guest mg;
	struct gmem_ctx g;
	int rc;

	(void)v;
	/* A CPU waiting for SIPI runs nothing: its next IP is the SIPI vector. */
	if (b->waiting_sipi) {
		mtf_reset(s);
		return 0;
	}
	trace_guest_read(&tg);
	mg.ip = tg.ip;
	mg.cs_base = tg.cs_base;
	mg.cr3 = tg.cr3;
	mg.mode = tg.mode;
	mg.cpl = tg.cpl;
	mg.tsc = tg.tsc;
	trace_guest_mem(&g);
	rc = mtf_observe(s, b->ring, b->filter, &mg, trace_guest_fetch, &g);
	if (rc == 1)
		b->window_branches++;
	return rc == TRACE_ERR_FULL ? TRACE_DO_STOP_FULL : TRACE_DO_LIMIT;
}

static void mtf_log_stop(struct trace_bcpu *b, const char *trig)
{
	struct mtf_state *s = mtf_unit(b);

	log_info("trace: cpu %u: window %llu stopped (%s): %llu branches, %llu events, %llu filtered, %llu dropped, %llu undecodable, %llu steps; ring lost %llu records",
		 b->index, (unsigned long long)b->windows, trig,
		 (unsigned long long)b->window_branches, (unsigned long long)s->stats.events,
		 (unsigned long long)s->stats.filtered,
		 (unsigned long long)s->stats.dropped,
		 (unsigned long long)s->stats.decode_errors,
		 (unsigned long long)s->stats.observations,
		 (unsigned long long)b->ring->lost_records);
}

/* The machine can (trace_caps, decoded at boot from the boot CPU). */
static bool mtf_caps_ok(const struct trace_caps *tc)
{
	return tc->vmx && tc->mtf;
}

const struct trace_backend trace_backend_MTF = {
	.name = "mtf",
	.source = TV_SOURCE_MTF,
	.events = TRACE_EV_MTF,
	.state_bytes = sizeof(struct mtf_state),
	.caps_ok = mtf_caps_ok,
	.usable = mtf_usable,
	.open = mtf_open,
	.close = mtf_close,
	.drain = mtf_drain,
	.log_stop = mtf_log_stop,
};
