/* SPDX-License-Identifier: MIT */
/*
 * pt.h - a CPU's Intel PT byte stream from a .tvt: extraction (for
 * libipt's ptdump/ptxed) and instruction-flow decoding with libipt.
 *
 * PT chunks carry the stream's running byte offset; a gap between chunks
 * is PT data lost on the way (dropped on the wire, overwritten).  Losses
 * on the traced machine (ToPA STOP, an operational error, bytes a full
 * stream ring refused) take no stream offsets: the producer counts them
 * in TV_REC_PT_SYNC.pt_lost, written at pt_offset = where the bytes stop
 * (vmm/trace/backend/pt.c).  So a PT_SYNC whose pt_lost grew is a *cut*: the
 * bytes before and after it do not belong together, although their
 * offsets are consecutive.  Decoding treats each run free of gaps and
 * cuts as its own buffer (the decoder resynchronises at the next PSB)
 * and reports every position as a stream offset, so errors point at the
 * same bytes in `tracevisor pt` output only when there was no gap (the
 * extraction concatenates runs; it prints the runs' offsets).
 */
#ifndef TVH_PT_H
#define TVH_PT_H

#include <intel-pt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "host-tools/lib/progress.h"
#include "host-tools/lib/snap.h"
#include "host-tools/lib/sym.h"
#include "host-tools/lib/tvt.h"
#include "host-tools/lib/walk.h"

/* One run of a CPU's PT stream, free of gaps and cuts. */
struct tvh_pt_run {
	uint64_t offset;         /* stream offset of data[0] */
	uint8_t *data;
	size_t len;
	size_t cap;              /* allocated bytes of data */
};

/*
 * A loss the record stream counts: a PT_SYNC whose pt_lost is above the
 * CPU's previous PT_SYNC's (0 before the first).  When PT_SYNC records
 * were lost in between, the loss happened at or before offset.
 */
struct tvh_pt_cut {
	uint64_t offset;         /* the PT_SYNC's pt_offset */
	uint64_t lost;           /* how much pt_lost grew (ToPA STOP: 1, size unknown) */
};

/* A PT_SYNC record's time: the producer's TSC when the stream was at offset. */
struct tvh_pt_time {
	uint64_t offset;
	uint64_t tsc;
};

struct tvh_pt_stream {
	struct tvh_pt_run *runs;
	size_t nruns;
	uint64_t bytes;
	uint64_t gap_bytes;      /* between runs and before the first */
	struct tvh_pt_cut *cuts; /* sorted by offset, one per offset */
	size_t ncuts;
	uint64_t cut_bytes;      /* sum of cuts[].lost */
	struct tvh_pt_time *times;    /* PT_SYNC times, sorted by offset */
	size_t ntimes;
};

/*
 * tvh_pt_collect - read CPU cpu's PT stream into memory, split into runs
 * at byte gaps and at the cuts its PT_SYNC records mark (records and PT
 * chunks are separate streams: the cuts are applied after the walk).
 * A cut at a run's first byte or in a gap splits nothing but is listed.
 * stats (may be NULL) receives the walk's statistics (caller frees).
 * Returns 0, -TVH_ERR_NOT_FOUND (no PT data for cpu), -TVH_ERR_NOMEM,
 * walk errors.
 */
int tvh_pt_collect(struct tvt_reader *r, uint32_t cpu, struct tvh_pt_stream *out,
		   struct tvh_stats *stats, struct tvh_progress *progress);
void tvh_pt_stream_free(struct tvh_pt_stream *s);

/* Cuts being gathered from a CPU's PT_SYNC records. */
struct tvh_pt_cuts {
	struct tvh_pt_cut *v;
	size_t n, cap;
	uint64_t last_lost;      /* the previous PT_SYNC's pt_lost */
	struct tvh_pt_time *t;   /* every PT_SYNC's (offset, tsc) */
	size_t nt, tcap;
};

/*
 * tvh_pt_collect's parts, for walk callbacks that do more than collect
 * (one CPU's events only): tvh_pt_collect_event takes TVH_EV_PT bytes,
 * TVH_EV_PT_GAP counts and PT_SYNC records into *s (zeroed first) and
 * ignores the rest; tvh_pt_collect_finish(c, ret) moves the cuts and
 * PT_SYNC times into *s
 * and, when ret is 0, splits the runs at them.  Both return 0 or
 * -TVH_ERR_NOMEM (finish: ret when nonzero); *s is the caller's to free.
 */
struct tvh_pt_collector {
	struct tvh_pt_stream *s;
	struct tvh_pt_cuts cuts;
};
int tvh_pt_collect_event(struct tvh_pt_collector *c, const struct tvh_event *ev);
int tvh_pt_collect_finish(struct tvh_pt_collector *c, int ret);

/*
 * tvh_pt_extract - write CPU cpu's PT bytes to out, runs back to back
 * (no copy in memory; cuts change no byte).  runs_out (may be NULL) gets
 * a description of every run, gap and cut, one line each, in stream
 * order, after the walk ("gap: N bytes lost at stream offset X" for both;
 * a cut says "(counted by PT_SYNC)").  Returns the bytes written or
 * -TVH_ERR_NOT_FOUND, -TVH_ERR_IO, -TVH_ERR_NOMEM, walk errors.
 */
int64_t tvh_pt_extract(struct tvt_reader *r, uint32_t cpu, FILE *out,
		       FILE *runs_out, struct tvh_stats *stats,
		       struct tvh_progress *progress);

/*
 * tvh_pt_image - a libipt image holding every executable PT_LOAD segment
 * of st's modules at its run-time address (any address space).  Returns
 * 0 or -TVH_ERR_NOMEM, -TVH_ERR_PT.  Code snapshots are not sections:
 * tvh_pt_decode with opts->snap sets the image's read-memory callback for
 * the length of the decode (libipt reads sections first, so --image
 * files win where they map an address).
 */
int tvh_pt_image(const struct tvh_symtab *st, struct pt_image **out);

enum tvh_pt_item_kind {
	TVH_PT_SYNC,             /* synchronised at a PSB: offset */
	TVH_PT_INSN,             /* insn */
	TVH_PT_BRANCH,           /* branches mode: from -> to, iclass of the source */
	TVH_PT_EVENT,            /* event */
	TVH_PT_ERROR,            /* err (negative pt_error_code), offset, ip (last insn) */
	TVH_PT_END,              /* end of a run's trace: offset */
};

struct tvh_pt_item {
	enum tvh_pt_item_kind kind;
	uint64_t offset;         /* stream offset of the decoder's position */
	const struct pt_insn *insn;   /* TVH_PT_BRANCH: the transfer instruction */
	const struct pt_event *event;
	int err;
	uint64_t ip;
	uint64_t from, to;
	enum pt_insn_class iclass;
	bool has_tsc;            /* TVH_PT_BRANCH: the decoder's time (pt_insn_time) */
	uint64_t tsc;
	uint64_t insns;          /* instructions decoded since the previous item of this
	                          * call: the items' sum is stats.insns */
};

typedef int (*tvh_pt_fn)(void *ctx, const struct tvh_pt_item *it);

struct tvh_pt_opts {
	struct pt_cpu cpu;       /* family/model/stepping for errata; vendor 0 = unknown */
	bool branches;           /* report TVH_PT_BRANCH (taken transfers) instead of TVH_PT_INSN */
	/*
	 * Code snapshots (may be NULL): what the image's files do not map is
	 * read from the store, for the decoder's address space (PIP's CR3)
	 * and time: the decoder's (pt_insn_time, TSC packets), else the
	 * latest of times[] at or before the decoder's offset, else 0.
	 */
	const struct tvh_snap *snap;
	const struct tvh_pt_time *times;   /* sorted by offset; may be NULL */
	size_t ntimes;
};

/*
 * tvh_pt_snap_read - libipt's read_memory_callback_t over a store:
 * context is a struct tvh_pt_mem whose tsc the caller keeps current.
 * Returns the bytes read or -pte_nomap.
 */
struct tvh_pt_mem {
	struct tvh_snap_cursor cur;
	uint64_t tsc;
};
int tvh_pt_snap_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *context);

/*
 * TVH_PT_ERR_SPIN - a TVH_PT_ERROR of our own (outside libipt's error
 * codes): the decoder followed TVH_PT_SPIN_LIMIT instructions without
 * reading one more PT byte.  Real execution cannot do that (a loop of
 * direct jumps ends with an interrupt, whose FUP stops the decoder at the
 * loop), so the code given is not the code that ran: text the OS patched
 * (alternatives, retpolines turned into plain jumps), a wrong base.  The
 * run is given up and decoding resumes at the next PSB instead of
 * following the loop forever.  tvh_pt_errstr names it.
 */
#define TVH_PT_ERR_SPIN   (-1000)
#define TVH_PT_SPIN_LIMIT (1u << 20)

/* tvh_pt_errstr - text of a TVH_PT_ERROR's err: libipt's, or ours. */
const char *tvh_pt_errstr(int err);

struct tvh_pt_stats {
	uint64_t insns;
	uint64_t branches;
	uint64_t events;
	uint64_t syncs;
	uint64_t errors;
};

/*
 * tvh_pt_decode - decode buf[0..len) (stream offset `offset`) with the
 * pt_insn decoder over image (NULL: nothing mapped but opts->snap, if
 * any; with neither every instruction fails with -pte_nomap).  With
 * opts->snap the image's read-memory callback is replaced during the
 * call: an image serves one decode at a time.  Errors are reported through fn (TVH_PT_ERROR,
 * counted) and decoding resumes at the next PSB.  Returns 0, fn's nonzero
 * value, or -TVH_ERR_PT when the decoder cannot be set up, -TVH_ERR_NOMEM.
 */
int tvh_pt_decode(const uint8_t *buf, size_t len, uint64_t offset,
		  struct pt_image *image, const struct tvh_pt_opts *opts,
		  tvh_pt_fn fn, void *ctx, struct tvh_pt_stats *stats);

/*
 * tvh_pt_decode_parallel - tvh_pt_decode split over nthreads threads: the
 * run is cut at PSB packets (where a decoder can start on its own) into
 * up to nthreads pieces of about equal size, each decoded by
 * tvh_pt_decode with images[i] (one per thread: libipt decoders share no
 * state, an image's callback may be called from several threads
 * otherwise) and fn(ctxs[i], item) (ctxs may be NULL: counting only).
 * Piece i covers the stream from its PSB up to the next piece's PSB, so
 * each instruction is decoded once; items of piece i all come before
 * those of piece i+1 in the stream.  stats is the sum.  Returns 0, the
 * first nonzero fn value, -TVH_ERR_PT, -TVH_ERR_NOMEM, -TVH_ERR_INVALID
 * (nthreads 0).
 */
int tvh_pt_decode_parallel(const uint8_t *buf, size_t len, uint64_t offset,
			   struct pt_image *const *images, unsigned nthreads,
			   const struct tvh_pt_opts *opts, tvh_pt_fn fn,
			   void *const *ctxs, struct tvh_pt_stats *stats);

/* Offset in buf[0..len) of the first PSB at or after from; len if none. */
size_t tvh_pt_next_psb(const uint8_t *buf, size_t len, size_t from);

const char *tvh_pt_iclass_name(enum pt_insn_class c);
const char *tvh_pt_event_name(enum pt_event_type t);

/* Parse "FAMILY/MODEL[/STEPPING]" (decimal or 0x hex) into an Intel pt_cpu. */
int tvh_pt_parse_cpu(const char *s, struct pt_cpu *cpu);

#endif /* TVH_PT_H */
