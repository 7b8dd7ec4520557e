/* SPDX-License-Identifier: MIT */
/*
 * report.h - where the traced code spent its branches: hottest functions
 * and hottest edges, from branch records (full, compact, LBR).
 *
 * Per CPU stream (one tvh_report_cpu each, filled on that CPU's worker
 * thread), counted by raw address:
 *   targets  branch `to` address -> how many branches landed there (each
 *            is the start of one executed basic block);
 *   edges    (from, to) -> how many times that transfer was taken, with
 *            the last branch kind seen for it.
 * Then, on one thread, the counts are merged (all CPUs or one) and each
 * target is symbolized into its function (sym.h: func, else
 * module+offset, else the bare address), giving per function:
 *   branches  branches landing in it (calls, jumps, returns into it);
 *   blocks    distinct basic-block starts in it that were executed.
 */
#ifndef TVH_REPORT_H
#define TVH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "host-tools/lib/sym.h"
#include "host-tools/lib/walk.h"

/* Open-addressing counters keyed by one or two u64 (key 0,0 allowed). */
struct tvh_counts {
	uint64_t *k1, *k2, *n;
	uint8_t *kind;           /* edges: last branch kind */
	uint8_t *used;
	size_t cap, len;
};

struct tvh_report_cpu {
	uint32_t cpu;
	struct tvh_counts targets;
	struct tvh_counts edges;
	uint64_t branches;
};

/* A tvh_walk/tvh_pwalk event callback, ctx = struct tvh_report_cpu. */
int tvh_report_event(void *ctx, const struct tvh_event *ev);
void tvh_report_cpu_free(struct tvh_report_cpu *rc);

enum tvh_report_sort {
	TVH_SORT_BRANCHES,       /* functions by branches landing in them */
	TVH_SORT_BLOCKS,         /* by distinct basic blocks executed */
};

struct tvh_report_opts {
	enum tvh_report_sort sort;
	size_t top;              /* rows per table; 0: all */
	const char *title;       /* "all CPUs", "cpu1" */
};

/*
 * tvh_report_write - merge the per-CPU counts rc[0..n) and print both
 * tables.  Rows are sorted by count, then by name/address, so the output
 * is the same however the work was split.  Returns 0, -TVH_ERR_NOMEM or
 * -TVH_ERR_IO.
 */
int tvh_report_write(struct tvh_report_cpu *const *rc, size_t n,
		     struct tvh_symtab *st, const struct tvh_report_opts *o,
		     FILE *out);

#endif /* TVH_REPORT_H */
