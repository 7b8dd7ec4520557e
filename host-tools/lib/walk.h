/* SPDX-License-Identifier: MIT */
/*
 * walk.h - one pass over a .tvt file: chunks in file order, records of
 * each CPU in sequence order, losses and damage found and counted.
 *
 * Every exporter (dump, drcov, chrome, pt) is a callback over this walk,
 * so loss accounting is done once:
 *  - sequence gaps between records chunks of a CPU (records the producer
 *    wrote but the file does not hold: ring overwrite, network loss),
 *  - records before the first chunk of a CPU (capture started late),
 *  - TV_REC_LOST records (records the producer never wrote),
 *  - the ring's own lost_records counter (TVT_KIND_RING snapshots),
 *  - PT byte-offset gaps and PT_SYNC pt_lost.
 */
#ifndef TVH_WALK_H
#define TVH_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "host-tools/lib/progress.h"
#include "host-tools/lib/stream.h"
#include "host-tools/lib/tvt.h"
#include "vmm/trace/format.h"

enum tvh_event_kind {
	TVH_EV_RECORD,       /* rec: a good record */
	TVH_EV_MALFORMED,    /* rec (header fields), err, file_offset */
	TVH_EV_GAP,          /* seq, count: records missing before seq */
	TVH_EV_PT,           /* pt_offset, data, len: PT bytes in stream order */
	TVH_EV_PT_GAP,       /* pt_offset, count: PT bytes missing before pt_offset */
	TVH_EV_RING,         /* ring: a ring header snapshot */
	TVH_EV_CHUNK_ERROR,  /* err, file_offset: a damaged chunk; cpu UINT32_MAX
	                      * unless known (a truncated chunk's header is whole) */
};

/* Why records are missing (TVH_EV_GAP). */
enum tvh_gap_kind {
	TVH_GAP_SEQ = 0,     /* between two chunks */
	TVH_GAP_HEAD = 1,    /* before the first chunk of that CPU */
	/* TVH_EV_PT_GAP made by ptbranch.h (never by the walk itself): */
	TVH_GAP_PT_CUT = 2,  /* a loss PT_SYNC counts (count: how much pt_lost grew) */
	TVH_GAP_PT_ERROR = 3,/* a decode error (err, a pt_error_code); count 0 */
};

struct tvh_event {
	enum tvh_event_kind kind;
	uint32_t cpu;
	const struct trace_event *rec;
	int err;
	uint64_t file_offset;
	uint64_t seq;
	uint64_t count;
	enum tvh_gap_kind gap;
	uint64_t pt_offset;
	const uint8_t *data;
	uint64_t len;
	const struct tv_trace_ring *ring;
	bool pt;             /* TVH_EV_RECORD: a branch decoded from PT (ptbranch.h);
	                      * pt_offset: the decoder's stream offset */
	/*
	 * PT decoded by ptbranch.h: a branch (pt), a TVH_GAP_PT_ERROR gap, or
	 * a TVH_EV_PT without bytes (len 0) at the end of a decoded run (the
	 * instructions after its last branch; pt_offset: the run's end).
	 * The instructions a branch carries end with its source instruction.
	 */
	uint64_t insns;      /* instructions decoded since the CPU's previous such event */
	uint64_t ip;         /* TVH_GAP_PT_ERROR: the last instruction's IP (0: none) */
	uint64_t skipped;    /* TVH_GAP_PT_ERROR: PT bytes from pt_offset to where the
	                      * decoder resumed (its next sync, else the run's end) */
};

/* Return 0 to go on; anything else stops the walk and is returned by it. */
typedef int (*tvh_walk_fn)(void *ctx, const struct tvh_event *ev);

struct tvh_cpu_stats {
	uint32_t cpu;
	uint64_t records;                 /* good records */
	uint64_t by_type[TV_REC_TYPE_MAX];
	uint64_t first_seq;               /* of the first record chunk */
	uint64_t next_seq;                /* one past the last record seen */
	bool have_seq;
	uint64_t lost_gap;                /* sequence gaps between chunks */
	uint64_t lost_head;               /* before the first chunk */
	uint64_t lost_rec;                /* sum of TV_REC_LOST.records */
	uint64_t dup;                     /* records seen twice (overlapping chunks) */
	uint64_t malformed;               /* bad records (all kinds) */
	uint64_t orphan_compact;          /* of those: compact without a predecessor */
	uint64_t unparsed_chunks;         /* chunks whose tail could not be parsed */
	bool have_ring;                   /* last ring snapshot: */
	struct tv_trace_ring ring;
	uint64_t tsc_hz;                  /* last TIME record's, else ring's */
	uint64_t pt_bytes;
	uint64_t pt_next;                 /* next expected PT offset */
	bool have_pt;
	uint64_t pt_gap;                  /* PT bytes missing between chunks */
	uint64_t pt_head;                 /* PT bytes before the first chunk */
	uint64_t pt_dup;
	uint64_t pt_lost;                 /* last PT_SYNC pt_lost */
};

struct tvh_stats {
	uint64_t chunks;
	uint64_t chunks_by_kind[4];        /* index enum tvt_kind; [0] = unknown kinds */
	uint64_t bad_chunks;               /* CRC, bad header, truncated */
	uint64_t truncated_chunks;
	uint64_t skipped_bytes;            /* resynchronisation */
	uint64_t records;
	uint64_t by_type[TV_REC_TYPE_MAX];
	uint64_t malformed;
	uint32_t ncpus;                    /* entries in cpus[], sorted by cpu */
	struct tvh_cpu_stats *cpus;
};

struct tvh_walk_opts {
	int64_t cpu;               /* only this CPU's events reach fn; -1: all */
	bool want_pt;              /* deliver TVH_EV_PT (else only counted) */
	struct tvh_progress *progress;  /* may be NULL */
};

/*
 * tvh_walk - walk r from its first chunk; fn may be NULL (stats only).
 * stats is reset and filled (free with tvh_stats_free); it counts every
 * CPU whatever opts->cpu says.  Damaged data is reported through fn and
 * stats and does not stop the walk.
 * Returns 0, fn's nonzero value, or -TVH_ERR_NOMEM / -TVH_ERR_HEADER
 * (a CPU index above TVH_MAX_CPU) / -TVH_ERR_LIMIT (more than
 * TVH_MAX_CPUS_SEEN distinct CPUs).
 *
 * Readers keep state per CPU seen (a decoder, a table, a temporary file),
 * so the number of distinct CPUs is bounded, not only their index: a file
 * of one record on each of 65,536 CPUs (4 MB) would otherwise cost
 * gigabytes.  TVH_MAX_CPUS_SEEN is the export protocol's limit
 * (TVP_MAX_CPUS, CPU indexes 0..1023); beyond it a file is refused with
 * -TVH_ERR_LIMIT (the CLI: exit 3), never read into an OOM.
 */
#define TVH_MAX_CPU 65535u
#define TVH_MAX_CPUS_SEEN 1024u
int tvh_walk(struct tvt_reader *r, const struct tvh_walk_opts *opts,
	     tvh_walk_fn fn, void *ctx, struct tvh_stats *stats);

void tvh_stats_free(struct tvh_stats *stats);

/* The stats of one CPU, or NULL. */
const struct tvh_cpu_stats *tvh_stats_cpu(const struct tvh_stats *stats,
					  uint32_t cpu);

/* Sum over CPUs of lost_gap + lost_head + lost_rec. */
uint64_t tvh_stats_lost(const struct tvh_stats *stats);
/* Sum over CPUs of the ring snapshots' lost_records. */
uint64_t tvh_stats_ring_lost(const struct tvh_stats *stats);
/* Anything damaged: malformed records, bad chunks or skipped bytes. */
bool tvh_stats_damaged(const struct tvh_stats *stats);

/* Decode a ring snapshot payload (>= 128 bytes); -TVH_ERR_MAGIC/-VERSION. */
int tvh_ring_decode(const uint8_t *p, uint64_t len, struct tv_trace_ring *out);

#endif /* TVH_WALK_H */
