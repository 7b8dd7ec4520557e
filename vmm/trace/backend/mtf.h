/* SPDX-License-Identifier: MIT */
/*
 * trace_mtf.h - the MTF backend's logic: from one guest instruction
 * boundary to the next, decide whether control was transferred and record
 * it.  Works on any VT-x CPU with the monitor trap flag (and in Bochs).
 *
 * With the "monitor trap flag" processor-based control set, the guest
 * exits (reason 37) at the next instruction boundary: after one
 * instruction completes, or after an event (interrupt, exception) is
 * delivered and before the handler's first instruction runs (SDM 3C
 * 26.5.2, 26.7.2).  The hypervisor sees a sequence of guest states; this
 * module turns it into branch records:
 *
 *   - before the guest runs, mtf_observe() decodes the instruction at the
 *     guest's IP (vmm/lib/x86_decode.h) and remembers it;
 *   - at the next observation it compares the new IP with what that
 *     instruction does: the fall-through (not a transfer), the target of a
 *     direct branch, any IP after an indirect one; an IP that is neither
 *     means an event was delivered (from = the instruction it interrupted
 *     or that faulted, kind TV_BR_INTERRUPT);
 *   - an unchanged IP (REP iteration, an exit before the instruction ran,
 *     HLT) is no transfer.
 *
 * mtf_observe() is called once per VM exit, after the handler, with the
 * state the guest will resume in; so an instruction the hypervisor
 * emulated (CPUID, RDMSR) shows as its fall-through and an injected event
 * shows at the MTF exit after its delivery.  Addresses are linear (CS base
 * + IP), so real-mode code (APs starting) records physical-like addresses.
 *
 * Unconditional branches are recorded even when their target is the
 * fall-through (CALL to the next instruction is common); a taken Jcc whose
 * target is its fall-through cannot be told from a not-taken one and is
 * not recorded.  An asynchronous event delivered just before an indirect
 * branch would execute is attributed to that branch: the hypervisor does
 * not intercept external interrupts (docs/BACKENDS-MTF.md).
 *
 * Pure code: guest memory is read through the fetch callback, records go
 * to a struct tv_trace_ring; no VMCS access here (vmm/trace.c does that).
 */
#ifndef TV_TRACE_MTF_H
#define TV_TRACE_MTF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/trace/trace.h"

/* Guest state at one instruction boundary, as read from the VMCS. */
struct mtf_guest {
	uint64_t ip;              /* RIP (EIP/IP: the caller masks outside 64-bit) */
	uint64_t cs_base;
	uint64_t cr3;
	uint8_t mode;             /* enum x86_mode: 16, 32 or 64 */
	uint8_t cpl;
	uint64_t tsc;
};

/*
 * Read up to len bytes of guest memory at a linear address into buf;
 * return how many were read (0..len: fewer when the page after is not
 * mapped).  The instruction is decoded from what was read.
 */
typedef size_t (*mtf_fetch_fn)(void *ctx, uint64_t linear, uint8_t *buf, size_t len);

struct mtf_stats {
	uint64_t observations;    /* mtf_observe calls with tracing on */
	uint64_t branches;        /* transfers recorded */
	uint64_t events;          /* ... of which events (TV_BR_INTERRUPT) */
	uint64_t filtered;        /* transfers the filter dropped */
	uint64_t dropped;         /* transfers the ring dropped (STOP policy, full) */
	uint64_t decode_errors;   /* instructions that could not be decoded */
};

/* One CPU's MTF state.  Zero it (or mtf_reset) before use. */
struct mtf_state {
	bool have_prev;           /* prev_* describe the instruction last seen */
	bool prev_decoded;        /* ... and it decoded */
	uint8_t prev_len;
	uint8_t prev_branch;      /* enum x86_branch */
	uint8_t prev_cpl;
	uint8_t prev_mode;
	bool prev_has_target;     /* direct branch: prev_target is valid */
	uint64_t prev_linear;     /* CS base + IP */
	uint64_t prev_cs_base;
	uint64_t prev_ip;
	uint64_t prev_target;     /* linear */
	uint64_t prev_cr3;
	struct mtf_stats stats;
};

/* mtf_reset - forget the last instruction (tracing starts or resumes). */
void mtf_reset(struct mtf_state *s);

/*
 * mtf_observe - the guest is about to run (again) in state *g: record the
 * transfer from the previous instruction, if there was one and it passes
 * filter, into ring; then decode the instruction at *g.
 * Returns 1 when a branch was recorded, 0 when none was (no transfer,
 * filtered, first observation), or a negative TRACE_ERR_* from the ring
 * (TRACE_ERR_FULL: dropped under the STOP policy, counted in
 * stats.dropped; the next observation goes on).  filter may be NULL (all).
 */
int mtf_observe(struct mtf_state *s, struct tv_trace_ring *ring,
		const struct trace_filter *filter, const struct mtf_guest *g,
		mtf_fetch_fn fetch, void *fetch_ctx);

/*
 * The unit (trace_backend_MTF, vmm/trace/backend.h): the monitor trap
 * flag on while a window is open; every exit of the window is one
 * observed instruction (its drain).  Its per-CPU state is a struct
 * mtf_state (mtf_unit).
 */
struct trace_bcpu;
struct mtf_state *mtf_unit(struct trace_bcpu *b);

#endif /* TV_TRACE_MTF_H */
