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
 *
 * Phases (opts.phases): each branch target is put in one of four boot
 * phases, from the address (branch records carry no CPL) and what the
 * trace says about it:
 *   loader    in an IMAGE record of kind loader (the images loaded
 *             after tracevisor's boot: the OS loader, the kernel's EFI
 *             stub; recorded at ExitBootServices, docs/FORMAT.md);
 *   firmware  in a firmware IMAGE record, or a lower-half address in
 *             none before the CPU first went to the kernel (SEC/PEI,
 *             code outside the debug image table);
 *   kernel    an upper-half address (>= 0xffff800000000000), the
 *             kernel's IMAGE record, an address the kernel symbols name
 *             (--system-map/--kallsyms, its physical text included) or
 *             code of a module named vmlinux*;
 *   user      a lower-half address in no image after the CPU went to
 *             the kernel.
 * "Went to the kernel" is per CPU, in stream order: the first branch
 * into the upper half.  Per phase: branches, distinct blocks and the
 * hottest functions.
 *
 * Instructions (PT decoded by ptbranch.h only: branch records do not
 * say how many ran; '-' then): a branch's instructions (ev.insns, up to
 * its source) go to the phase of the CPU's previous branch target (the
 * block they ran in), or of the source when there is none (a run's
 * first branch, after an error); an error's to the phase of
 * its last IP, with the error and the PT bytes skipped after it; the end
 * of a run's to the phase of the CPU's last branch target.  The PT bytes
 * decoded between two such events go with the second.  Decoded fraction
 * per phase: insns / (insns + skipped x insns per decoded byte of that
 * phase, else of the whole capture when the phase decoded no byte): the
 * undecoded part is an estimate.
 */
#ifndef TVH_REPORT_H
#define TVH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "host-tools/lib/sym.h"
#include "host-tools/lib/walk.h"

/* More counts of a wide table: targets: PT insns, bytes of the block
 * there; srcs: PT bytes, -; errs: bytes skipped, -.  One cache line. */
struct tvh_count2 {
	uint64_t n2, n3;
};

/* Open-addressing counters keyed by one or two u64 (key 0,0 allowed). */
struct tvh_counts {
	uint64_t *k1, *k2, *n;
	struct tvh_count2 *x;    /* wide only */
	uint8_t *kind;           /* edges: last branch kind */
	uint8_t *used;
	size_t cap, len;
	bool wide;               /* n2, n3 kept (set before the first add) */
};

struct tvh_report_cpu {
	uint32_t cpu;
	struct tvh_counts targets;
	struct tvh_counts edges;
	uint64_t branches;
	bool kernel_seen;        /* a branch went to the upper half already */
	/* PT (ptbranch.h), keyed (address, late) as targets: */
	bool pt;                 /* instructions known: PT decoded */
	struct tvh_counts srcs;  /* by source: n: instructions, n2: PT bytes decoded */
	struct tvh_counts errs;  /* n: decode errors, n2: PT bytes skipped */
	uint64_t last_to;        /* the last branch target (0: none yet) */
	uint64_t pt_at;          /* PT offset the next event's bytes start at */
	bool prev_live;          /* the next PT branch's block starts at last_to, */
	size_t prev_slot, prev_cap;   /* targets' slot while targets.cap is prev_cap */
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
	bool phases;             /* a section per boot phase first (above) */
};

enum tvh_phase { TVH_PHASE_FIRMWARE, TVH_PHASE_LOADER, TVH_PHASE_KERNEL,
		 TVH_PHASE_USER, TVH_PHASES };

/* The phase of a branch target (rules above); late: the CPU went to the kernel. */
enum tvh_phase tvh_report_phase(struct tvh_symtab *st, uint64_t addr, bool late);
const char *tvh_phase_name(enum tvh_phase p);

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
