/* SPDX-License-Identifier: MIT */
/*
 * chrome.h - a .tvt as Chrome trace-event JSON (chrome://tracing, Perfetto
 * UI "Open trace file", catapult's trace2html).
 *
 *   {"traceEvents":[ ... ],"displayTimeUnit":"ns","otherData":{...}}
 *
 * pid 0 is the traced machine; each CPU is a thread (tid = CPU index)
 * named "cpu N".  Call-like branches (call, indirect call, syscall,
 * exception, interrupt) open a duration slice ("B", named after the
 * target's symbol when ELF modules are given, else its address); ret
 * closes the innermost call slice, sysret/iret closes down to and
 * including the innermost syscall/exception/interrupt slice ("E").
 * STOP, LOST records and sequence gaps close every open slice (the stack
 * is unknown after them) and, with CR3 changes, START, markers, log
 * lines, images and malformed records, are instant events ("i", thread
 * scope).  Slices still open at the end are closed there.
 *
 * Time ("ts", microseconds): with a TSC frequency (TIME record, else the
 * ring snapshot) a CPU's records are placed at (tsc - first tsc of the
 * trace) / tsc_hz; records without a TSC (compact branches, most MTF
 * output) are interpolated by sequence number between the TSC-bearing
 * records around them, and time never goes backwards on a CPU.  With no
 * frequency anywhere, or no TSC on a CPU, "ts" is the sequence number
 * (1 record = 1 us) and otherData.time_base says "sequence".
 *
 * Intel PT (opts.pt_image set): each CPU's PT stream is decoded over that
 * image by the same wrapper script/report/coverage use (ptbranch.h:
 * tvh_pt_decode, one CPU after the other at the end of its stream, so a
 * faster decoder plugs in there for every command) and each taken
 * transfer goes through the rules above.  Their time is the decoder's
 * (libipt's time from TSC packets, refined by MTC/CYC when present):
 * (tsc - first record TSC) / tsc_hz, never backwards on a CPU's PT
 * branches (they are placed apart from the CPU's records, which come
 * first in the file: viewers sort by "ts").  Without TSC packets (or
 * with sequence time) "ts" is the PT branch's index.  PT losses (gaps,
 * PT_SYNC cuts) and decode errors close every open slice and are
 * instant events.
 */
#ifndef TVH_CHROME_H
#define TVH_CHROME_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "host-tools/lib/progress.h"
#include "host-tools/lib/ptbranch.h"
#include "host-tools/lib/sym.h"
#include "host-tools/lib/tvt.h"
#include "host-tools/lib/walk.h"

#define TVH_CHROME_MAX_DEPTH 4096u   /* deeper calls are not drawn */

struct tvh_chrome_opts {
	struct tvh_symtab *st;           /* may be NULL or empty */
	int64_t cpu;                     /* -1: all */
	bool sequence_time;              /* ignore the TSC */
	struct tvh_progress *progress;   /* per pass; may be NULL */
	struct pt_image *pt_image;       /* decode PT over it; NULL: PT only counted */
	const struct tvh_snap *snap;     /* code snapshots beside it (snap.h); may be NULL */
	const struct tvh_ptbr_fast *pt_fast;   /* decode with ptfast (ptbranch.h); NULL: libipt */
};

struct tvh_chrome_stats {
	uint64_t events;
	uint64_t slices;                 /* B events */
	uint64_t unmatched_returns;      /* ret/sysret with nothing to close */
	uint64_t too_deep;               /* calls past TVH_CHROME_MAX_DEPTH */
	uint64_t closed_by_loss;         /* slices closed by STOP/LOST/gaps */
	uint64_t closed_at_end;
	uint64_t instants;
	bool tsc_time;                   /* false: sequence-number time */
	uint64_t tsc_hz;
	struct tvh_stats walk;           /* of the second pass; caller frees */
	bool pt_decoded;                 /* opts.pt_image was given */
	struct tvh_ptbr_stats pt;        /* what PT decoding did */
	uint64_t pt_slices;              /* of slices: from PT branches */
	uint64_t pt_losses;              /* PT gaps, cuts, decode errors */
};

/*
 * tvh_chrome_write - two passes over r (times, then events) into out.
 * Returns 0, -TVH_ERR_NOMEM, -TVH_ERR_IO (writing out) or a walk error.
 */
int tvh_chrome_write(struct tvt_reader *r, const struct tvh_chrome_opts *o,
		     FILE *out, struct tvh_chrome_stats *cs);

#endif /* TVH_CHROME_H */
