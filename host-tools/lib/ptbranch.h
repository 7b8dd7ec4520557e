/* SPDX-License-Identifier: MIT */
/*
 * ptbranch.h - Intel PT captures through the branch consumers (script,
 * report, coverage): a tvh_pwalk_ops wrapper that decodes each CPU's PT
 * stream with libipt and hands every taken transfer to the wrapped
 * consumer as a branch record.
 *
 * Per CPU, the wrapper passes every event through except the PT bytes
 * and PT gaps of the walk: those it collects (tvh_pt_collector: runs
 * split at byte gaps and at PT_SYNC cuts).  At the end of the CPU's
 * stream (ops->end, on the calling thread, CPU after CPU) it decodes the
 * runs in stream order (tvh_pt_decode in branches mode over the image)
 * and feeds the consumer, after that CPU's records:
 *  - each taken transfer as TVH_EV_RECORD, a TV_REC_BRANCH with from, to,
 *    the kind from the instruction (call/jmp direct or indirect by its
 *    opcode, ret, jcc, far), TSC from the decoder's time when the stream
 *    has TSC packets; ev.pt = true, ev.pt_offset = the decoder's offset,
 *    seq = the branch's index in the CPU's PT branches;
 *  - an asynchronous branch (interrupt, exception: libipt cannot tell
 *    them apart) as a TV_BR_INTERRUPT branch;
 *  - each loss as TVH_EV_PT_GAP: bytes missing between chunks (gap
 *    TVH_GAP_SEQ/HEAD), a cut (TVH_GAP_PT_CUT), a decode error
 *    (TVH_GAP_PT_ERROR, err), so consumers restart their chains there;
 *    an error comes with ip (the last instruction's) and skipped (PT
 *    bytes to the sync the decoder resumed at, else the run's end);
 *  - instructions decoded (ev.insns, report --phases): on each branch
 *    those since the CPU's previous branch or error, up to and including
 *    the branch's source; on an error those before it; the rest of a run
 *    on a TVH_EV_PT without bytes at its end.  Both decoders give the
 *    same counts where both decode without error (test_host_ptfast).
 * Then it calls the consumer's end.  The whole PT stream of a CPU is held
 * in memory until its end (as pt-decode does).
 *
 * Two decoders give the same records: libipt (tvh_pt_decode, the
 * reference) and, with b->fast set, the fast decoder (ptfast.h with
 * opts.libipt_branches): the same branches in the same order, the same
 * gaps (errors: the same where both decoders report one; ptfast.h lists
 * where they differ), the same TSC where ptfast.h says so; pt_offset is
 * each decoder's own position.  The fast decoder cuts each run at PSBs
 * into fast->jobs pieces decoded at once (windows of jobs * 1 MiB,
 * records kept per piece and passed on in stream order), and hands a run
 * whose stream has MTC or CYC packets (timing it does not follow) to
 * libipt.  With code snapshots it reads code at libipt's time (the TSC
 * at the packet libipt read last, 0 before one) and drops its block
 * cache when that time leaves the span over which the pages it read keep
 * their content (tvh_snap_span): a page rewritten during the capture
 * (self-modifying code, text patched at boot) is followed as libipt
 * follows it.  libipt without TSC packets reads at the PT_SYNC times;
 * the fast decoder then at 0 (the earliest snapshot).
 */
#ifndef TVH_PTBRANCH_H
#define TVH_PTBRANCH_H

#include "host-tools/lib/pt.h"
#include "host-tools/lib/ptfast.h"
#include "host-tools/lib/pwalk.h"
#include "host-tools/lib/snap.h"

struct tvh_ptbr_stats {
	uint32_t cpus;           /* CPUs with PT bytes */
	uint64_t bytes;          /* PT bytes collected */
	uint64_t gap_bytes;      /* lost between chunks */
	uint64_t cut_bytes;      /* lost at cuts (PT_SYNC) */
	uint64_t cuts;
	uint64_t branches;       /* branch records made */
	uint64_t errors;         /* decode errors */
	uint64_t syncs;
	uint64_t fast_runs;      /* runs the fast decoder decoded */
	uint64_t libipt_runs;    /* runs libipt decoded (fast not set, or MTC/CYC) */
};

/* The fast decoder's setup (ptfast.h). */
struct tvh_ptbr_fast {
	const struct tvh_ptf_image *image;   /* the modules' code (tvh_ptf_image_from_symtab) */
	const struct tvh_snap *snap;         /* snapshots where image maps nothing; may be NULL */
	unsigned jobs;                       /* pieces at once per run (0: one per processor) */
};

struct tvh_ptbr {
	const struct tvh_pwalk_ops *inner;
	void *inner_ctx;
	struct pt_image *image;
	struct tvh_pt_opts opts;
	const struct tvh_ptbr_fast *fast;   /* non-NULL: decode with ptfast (set after init) */
	struct tvh_ptbr_stats stats;   /* summed in end(): no lock needed */
};

/*
 * tvh_ptbr_init - wrap inner (with its ctx) for decoding over image
 * (not owned; used on the calling thread only).  cpu: errata, may be
 * NULL.  Walk with tvh_ptbr_ops, ctx = b, and want_pt set.
 */
void tvh_ptbr_init(struct tvh_ptbr *b, const struct tvh_pwalk_ops *inner,
		   void *inner_ctx, struct pt_image *image, const struct pt_cpu *cpu);

extern const struct tvh_pwalk_ops tvh_ptbr_ops;

/* The branch kind (TV_BR_*) of a transfer libipt classed as c, from its bytes. */
uint8_t tvh_ptbr_kind(enum pt_insn_class c, const uint8_t *raw, unsigned size);

#endif /* TVH_PTBRANCH_H */
