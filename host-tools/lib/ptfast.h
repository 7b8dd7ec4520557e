/* SPDX-License-Identifier: MIT */
/*
 * ptfast.h - a fast Intel PT decoder for taken-branch flow and edge/block
 * coverage (libipt's instruction-flow decoder stays the reference: pt.h).
 *
 * The idea is libxdc's: the static analysis of the code (where a straight
 * run of instructions ends, how it ends, the direct target, how many
 * instructions it holds) is computed once per (address space, mode, IP)
 * from the code bytes and cached; the packet stream then only steers
 * between cached blocks, a TNT bit or a TIP per block, with no work per
 * instruction.  The packet layer is our own (ptfast_pkt.c, SDM 3C 33.4.2).
 *
 * Semantics follow libipt 2.x's pt_insn decoder for traces the hardware
 * writes (the differential test tests/host/test_host_ptfast.c checks it):
 * RET compression with a 64-entry call stack (a direct call to the next
 * instruction is not pushed), TIP.PGE / TIP.PGD (with and without IP),
 * FUP+TIP asynchronous branches, FUP+TIP.PGD asynchronous disables, OVF
 * resolved at a FUP or at a later TIP.PGE, MODE.Exec binding to the next
 * TIP-class packet, MODE.TSX (an abort's FUP+TIP is an async branch),
 * PIP (CR3: address space switch, bound like libipt binds it), PSB+
 * status.  Differences, all on streams the hardware does not write:
 *  - every PSB is a resynchronisation point: the call stack, the last IP
 *    and the mode are reset there and tracing is enabled exactly when the
 *    PSB+ holds a FUP; before that, the flow is walked (straight-line
 *    code and direct branches) to the PSB+ FUP.  This makes decoding by
 *    PSB-delimited pieces identical to decoding in one go;
 *  - events must bind where the hardware would put them: an async
 *    branch's FUP (and a PSB+ FUP, an OVF's FUP) must be reached from the
 *    point where the TNT bits ran out without consuming more trace, a
 *    TIP.PGD binds to the first branch on that path; otherwise the
 *    decoder reports an error (libipt may bind later);
 *  - an indirect branch met while TNT bits are left, a TNT packet while
 *    bits are left, a PIP or VMCS not yet bound when the next event comes
 *    are errors (libipt's bad_query / bad_context, except where libipt
 *    lets a TIP overtake cached TNT bits);
 *  - MODE.Exec before a TIP.PGD is an error (libipt drops the disable);
 *  - time only with opts.libipt_branches, and from TSC packets only:
 *    MTC and CYC are counted (stats.fine_timing), not followed.  The
 *    time is libipt's where the packets allow (the test: every record
 *    of 95 generated streams with TSC in PSB+ and in 1 packet of 5, all
 *    times in 74 of them); it can be one TSC packet apart around events
 *    (PIP, MODE, FUP) where libipt 2.0's insn decoder postpones or reads
 *    ahead differently;
 *  - a MOV CR3 in a block applies a pending PIP after the block.
 * After an error the decoder reports it (TVH_PTF_ERROR, a libipt error
 * code or TVH_PT_ERR_SPIN) and resumes at the next PSB, like
 * tvh_pt_decode; libipt resumes at the first PSB after the packets it
 * has read ahead (the next event or branch packet), so when an error is
 * followed by a PSB with only timing packets between, libipt skips that
 * PSB and this decoder does not.
 *
 * The spin bound is tvh_pt_decode's (pt.h): TVH_PT_SPIN_LIMIT
 * instructions without a packet read (counted as libipt reads packets:
 * a TNT packet at the first bit used, a TIP at its transfer, an event's
 * packet at the instruction boundary before the event's walk) end the
 * run with TVH_PT_ERR_SPIN, after the same branches tvh_pt_decode
 * reports: the code is not what ran.
 *
 * Taken branches are reported as in tvh_pt_decode's branches mode, with
 * one difference: a transfer whose destination is only known from an
 * event (the FUP of an interrupt or async disable right at its target)
 * is reported too (tvh_pt_decode drops it).  A conditional jump whose
 * target is its fall-through is never "taken" (libipt cannot tell).
 *
 * Coverage: edges (from, to) with counts, and blocks: maximal straight
 * runs of executed instructions (start, end = the IP after the last
 * one), split after every branch instruction (taken or not), at every
 * event that moves the IP (async branch, enable, disable, overflow, PSB
 * resync) and every TVH_PTF_MAX_RUN instructions.
 */
#ifndef TVH_PTFAST_H
#define TVH_PTFAST_H

#include <intel-pt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tvh_symtab;

/* The longest block the cache holds: longer straight runs are split. */
#define TVH_PTF_MAX_RUN 4096u

/*
 * Code access: libipt's read_memory_callback_t (the same callbacks serve
 * both decoders).  Returns the bytes read at ip (fewer at the end of a
 * section) or a negative pt_error_code (-pte_nomap).  asid->cr3 is the
 * current CR3 (pt_asid_no_cr3 before any PIP), asid->vmcs likewise.
 */
typedef int (*tvh_ptf_read_fn)(uint8_t *buffer, size_t size,
			       const struct pt_asid *asid, uint64_t ip, void *ctx);

/* A code image of our own: segments of bytes at run-time addresses. */
struct tvh_ptf_seg {
	uint64_t vaddr;
	uint64_t size;
	uint8_t *bytes;          /* owned */
};

struct tvh_ptf_image {
	struct tvh_ptf_seg *segs;   /* sorted by vaddr */
	size_t nsegs, cap;
};

/* Add a copy of bytes[0..size) at vaddr.  0 or -TVH_ERR_NOMEM. */
int tvh_ptf_image_add(struct tvh_ptf_image *im, uint64_t vaddr,
		      const uint8_t *bytes, uint64_t size);
/* Every executable PT_LOAD of st's modules (as tvh_pt_image): 0,
 * -TVH_ERR_NOMEM, -TVH_ERR_IO. */
int tvh_ptf_image_from_symtab(struct tvh_ptf_image *im, const struct tvh_symtab *st);
void tvh_ptf_image_free(struct tvh_ptf_image *im);
/* A tvh_ptf_read_fn over ctx = struct tvh_ptf_image * (any address space). */
int tvh_ptf_image_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		       uint64_t ip, void *ctx);

enum tvh_ptf_item_kind {
	TVH_PTF_SYNC,            /* a PSB: offset */
	TVH_PTF_BRANCH,          /* from -> to, kind (TV_BR_*), iclass */
	TVH_PTF_ERROR,           /* err (negative pt_error_code), offset, ip */
	TVH_PTF_END,             /* end of the buffer, or of a range's piece: offset */
};

struct tvh_ptf_item {
	enum tvh_ptf_item_kind kind;
	uint64_t offset;         /* stream offset of the packet that decided it */
	uint64_t from, to;
	uint8_t br;              /* TV_BR_*: tvh_ptbr_kind of the instruction, TV_BR_INTERRUPT async */
	uint8_t iclass;          /* enum pt_insn_class; ptic_error for async */
	int err;
	uint64_t ip;
	bool has_tsc;            /* BRANCH, opts.libipt_branches: libipt's time */
	uint64_t tsc;
	uint64_t insns;          /* instructions decoded since the previous item of this
	                          * call (stats.insns then): the items' sum is stats.insns */
};

typedef int (*tvh_ptf_fn)(void *ctx, const struct tvh_ptf_item *it);

struct tvh_ptf_opts {
	tvh_ptf_read_fn read;    /* NULL: no code (every instruction -pte_nomap) */
	void *read_ctx;
	/*
	 * Where read maps nothing (may be NULL): code by address space (cr3,
	 * 0 before any PIP), address and time (libipt's at that
	 * instruction: the last TSC packet before the packet libipt would
	 * have read last, 0 before one), e.g. tvh_snap_read's code snapshots.  Returns the
	 * bytes copied, 0 for none.  Called from every decoding thread at
	 * once.
	 */
	size_t (*fallback)(const void *ctx, uint64_t cr3, uint64_t ip, uint64_t tsc,
			   uint8_t *buf, size_t len);
	const void *fallback_ctx;
	/*
	 * With fallback (may be NULL): the times [*lo, *hi) around tsc over
	 * which fallback's answer for ip's 4 KiB page stays the same, for
	 * every cr3 (tvh_snap_span).  The decoder keeps the intersection of
	 * the spans of every page it read through fallback; when its clock
	 * leaves it, the block cache and the code window are flushed
	 * (stats.clock_flushes), so code rewritten during the trace decodes
	 * as read at the decoder's time, as with no cache.  Without it the
	 * cache keeps what it read first for an address.
	 */
	void (*fallback_span)(const void *ctx, uint64_t ip, uint64_t tsc, uint64_t *lo,
			      uint64_t *hi);
	bool coverage;           /* keep edge/block counts (tvh_ptf_coverage) */
	/*
	 * Report branches exactly as tvh_pt_decode's branches mode does over
	 * libipt (what tools show with --decoder libipt): a transfer only
	 * when the instruction at its destination is decoded (one whose
	 * destination only an event names, or that the trace ends after, is
	 * left out; but a transfer to where an asynchronous event struck -
	 * FUP + TIP.PGD, a VM exit at the target's fetch, or FUP + TIP, an
	 * interrupt there - is reported, as tvh_pt_decode does), with the
	 * time libipt gives then (has_tsc, tsc: the last
	 * TSC packet before the packet libipt read last).  Coverage is not
	 * affected.
	 */
	bool libipt_branches;
	size_t max_blocks;       /* block cache bound (0: 1 << 20); flushed when full */
};

struct tvh_ptf_stats {
	uint64_t insns;
	uint64_t branches;       /* taken transfers */
	uint64_t syncs;
	uint64_t errors;
	uint64_t blocks_built;   /* cache misses */
	uint64_t cache_flushes;
	uint64_t clock_flushes;  /* of those: the clock left the fallback's span */
	uint64_t peak_cache_bytes;
	uint64_t fine_timing;    /* MTC and CYC packets (their time is not followed) */
};

struct tvh_ptf_edge {
	uint64_t from, to, count;
	uint8_t br;              /* TV_BR_* */
};

struct tvh_ptf_bb {
	uint64_t start, end, count;
	uint32_t ninsns;         /* instructions per execution */
};

/* Coverage, sorted by (from, to, br) and (start, end), one entry each. */
struct tvh_ptf_cov {
	struct tvh_ptf_edge *edges;
	size_t nedges;
	struct tvh_ptf_bb *blocks;
	size_t nblocks;
	uint64_t insns;
};

struct tvh_ptf_decoder;

/* A decoder (its block cache lives as long as it does).  NULL: no memory. */
struct tvh_ptf_decoder *tvh_ptf_alloc(const struct tvh_ptf_opts *opts);
void tvh_ptf_free(struct tvh_ptf_decoder *d);

/*
 * tvh_ptf_decode - decode buf[0..len) (stream offset `offset`): bytes
 * before the first PSB are skipped, each PSB starts afresh.  fn (may be
 * NULL) gets every item in stream order.  Returns 0 or fn's nonzero
 * value.  stats (may be NULL) receives this call's counts.
 */
int tvh_ptf_decode(struct tvh_ptf_decoder *d, const uint8_t *buf, size_t len,
		   uint64_t offset, tvh_ptf_fn fn, void *ctx,
		   struct tvh_ptf_stats *stats);

/*
 * tvh_ptf_coverage - the coverage counted so far by d (opts.coverage) into
 * *out (caller frees with tvh_ptf_cov_free).  0 or -TVH_ERR_NOMEM.
 */
int tvh_ptf_coverage(struct tvh_ptf_decoder *d, struct tvh_ptf_cov *out);
void tvh_ptf_cov_free(struct tvh_ptf_cov *c);
/* Add src's counts into dst (both sorted): 0 or -TVH_ERR_NOMEM. */
int tvh_ptf_cov_merge(struct tvh_ptf_cov *dst, const struct tvh_ptf_cov *src);

/*
 * tvh_ptf_decode_parallel - buf cut at PSBs into up to nthreads pieces of
 * about equal size, each decoded on its own thread by a decoder of its
 * own with opts; items of piece i go to fn(ctxs[i], item) (ctxs may be
 * NULL), and piece i's items all come before piece i+1's in the stream:
 * concatenated they equal tvh_ptf_decode's.  cov (may be NULL; needs
 * opts->coverage) receives the merged coverage, equal to one decoder's.
 * Returns 0, the first nonzero fn value, -TVH_ERR_NOMEM, -TVH_ERR_INVALID.
 */
int tvh_ptf_decode_parallel(const uint8_t *buf, size_t len, uint64_t offset,
			    const struct tvh_ptf_opts *opts, unsigned nthreads,
			    tvh_ptf_fn fn, void *const *ctxs,
			    struct tvh_ptf_cov *cov, struct tvh_ptf_stats *stats);

/*
 * The PSBs where decoding may be cut (each a resynchronisation point, see
 * above): the first in buf, and the one after sync (len: none).  Pieces
 * cut at these decode to the same items as the whole.
 */
size_t tvh_ptf_first_sync(const uint8_t *buf, size_t len);
/* Does buf hold MTC or CYC packets (time this decoder does not follow)? */
bool tvh_ptf_fine_timing(const uint8_t *buf, size_t len);
size_t tvh_ptf_next_sync(const uint8_t *buf, size_t len, size_t sync);

/*
 * tvh_ptf_decode_range_parallel - tvh_ptf_decode_parallel over
 * buf[start..limit) of buf[0..len): start is 0 or a sync point, limit is
 * len or one (the flow is finished up to it, as for a piece).  decs (may
 * be NULL) are nthreads decoders of the caller's, used for the pieces in
 * order (their block caches carry over between calls; their coverage
 * accumulates, cov is then not taken from them).  Consecutive ranges
 * together give what one tvh_ptf_decode gives.  Returns as
 * tvh_ptf_decode_parallel.
 */
int tvh_ptf_decode_range_parallel(const uint8_t *buf, size_t len, uint64_t offset,
				  size_t start, size_t limit,
				  const struct tvh_ptf_opts *opts,
				  struct tvh_ptf_decoder *const *decs, unsigned nthreads,
				  tvh_ptf_fn fn, void *const *ctxs,
				  struct tvh_ptf_cov *cov, struct tvh_ptf_stats *stats);

#endif /* TVH_PTFAST_H */
