/* SPDX-License-Identifier: MIT */
/*
 * info.h - what a capture holds, for `tracevisor info`: the file header,
 * per CPU the trace source (from the ring snapshots), the time span (first
 * and last TSC, in seconds with the TSC frequency), trace windows
 * (START/STOP) and losses; the images the trace names; then dump's
 * summary (counts per record type, losses, damage).
 */
#ifndef TVH_INFO_H
#define TVH_INFO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "host-tools/lib/cputab.h"
#include "host-tools/lib/images.h"
#include "host-tools/lib/snap.h"
#include "host-tools/lib/tvt.h"
#include "host-tools/lib/walk.h"

/*
 * The buffer sizes in force on the traced machine, from the CONFIG record
 * "buffers ..." it writes into each traced CPU's ring at boot
 * (docs/CAPTURE.md, "Buffer sizes"): bytes, 0 for a buffer the source
 * does not have.
 */
struct tvh_buffers {
	uint64_t ring_bytes;          /* the record ring's data area (trace_buffer_kb) */
	uint64_t stream_bytes;        /* the byte stream ring (pt: pt_buffer_kb) */
	uint64_t output_bytes;        /* the hardware's output (pt: pt_topa_kb; bts: bts_buffer_kb) */
	uint64_t output_region_bytes; /* ... in output_regions regions of this size */
	uint32_t output_regions;
	uint32_t drain_us;            /* the drain tick (pt_drain_us), 0: none */
};

/*
 * tvh_buffers_parse - text[0..len) of a TV_REC_CONFIG record: true when
 * it is the "buffers" line, its name=value fields in *b (names it does not
 * know are skipped, missing ones 0); false (b untouched) otherwise.
 */
bool tvh_buffers_parse(const char *text, size_t len, struct tvh_buffers *b);

/* tvh_buffers_json - b as a JSON object, the names of struct tvh_buffers. */
void tvh_buffers_json(FILE *out, const struct tvh_buffers *b);

/*
 * The hypervisor's code snapshot counters: a LOG record per CPU at window
 * stop, "snap: cpu N: NAME VALUE, NAME VALUE, ..." (vmm/trace/snap.c;
 * names as written, e.g. "fetch exits").  tvh_snap_log_parse fills up to
 * TVH_SNAP_COUNTERS of them and *cpu; false when text is not such a line.
 */
#define TVH_SNAP_COUNTERS 12u
struct tvh_snap_counter {
	char name[24];
	uint64_t value;
};
bool tvh_snap_log_parse(const char *text, size_t len, uint32_t *cpu,
			struct tvh_snap_counter *v, unsigned *n);

struct tvh_info_cpu {
	bool have_buffers;
	struct tvh_buffers buffers;   /* the first "buffers" CONFIG record */
	bool have_tsc;
	uint64_t first_tsc, last_tsc;
	uint64_t windows;        /* START records */
	uint64_t branches;
	unsigned nsnap;          /* the last "snap: cpu N:" LOG line's counters */
	struct tvh_snap_counter snap[TVH_SNAP_COUNTERS];
	/* memory-access tracing: records, and the last TV_REC_MEM_STATS */
	uint64_t mem_accesses, mem_watch_ops[4];   /* [enum tv_mem_watch_op] */
	bool have_mem_stats;
	uint64_t mem_stats[6];   /* recorded, filtered, collateral, steps,
				  * undecoded, outside window */
};

struct tvh_info {
	struct tvh_cputab cpus;  /* struct tvh_info_cpu */
	struct tvh_images images;
	struct tvh_snap *snap;   /* the capture's code snapshots (counted) */
	uint64_t mem_bad;        /* malformed TV_REC_MEM, _WATCH, _STATS records */
	int err;                 /* first allocation failure */
};

void tvh_info_init(struct tvh_info *in);
void tvh_info_free(struct tvh_info *in);

/* A tvh_walk callback (ctx = struct tvh_info).  Returns 0 or -TVH_ERR_NOMEM. */
int tvh_info_event(void *ctx, const struct tvh_event *ev);

/* Print it all; path and size name the file.  Returns 0 or -TVH_ERR_IO. */
int tvh_info_write(const struct tvh_info *in, const struct tvt_reader *r,
		   const struct tvh_stats *s, const char *path, FILE *out);

#endif /* TVH_INFO_H */
