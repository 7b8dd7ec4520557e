/* SPDX-License-Identifier: MIT */
/*
 * dump.h - the text form of a .tvt: one line per record, then a summary.
 *
 *   # tracevisor trace: session 0x..., machine "lab-1", trace format 1
 *          SEQ CPU  TYPE     FIELDS
 *            0 cpu0 START    trigger=boot rip=0xfff0 tsc=1000
 *            1 cpu0 BRANCH   0x401000 -> 0x401020 call tsc=1010
 *            2 cpu0 BRANCH   0x401025 -> 0x401004 ret compact
 *            - cpu0 GAP      seq 3..9: 7 records lost (sequence gap)
 *
 * With modules (sym.h) every address in a branch is followed by
 * "func+off (file:line)".
 */
#ifndef TVH_DUMP_H
#define TVH_DUMP_H

#include <stdbool.h>
#include <stdio.h>

#include "host-tools/lib/sym.h"
#include "host-tools/lib/tvt.h"
#include "host-tools/lib/walk.h"

struct tvh_dump {
	FILE *out;
	struct tvh_symtab *st;   /* NULL or empty: no symbols */
	bool records;            /* print record lines (else only problems) */
};

/* The "# tracevisor trace: ..." line and the column header. */
void tvh_dump_header(FILE *out, const struct tvt_reader *r, bool columns);

/* A tvh_walk callback (ctx = struct tvh_dump *); always returns 0. */
int tvh_dump_event(void *ctx, const struct tvh_event *ev);

/* The fields of one record, as in the dump (no newline). */
void tvh_dump_fields(FILE *out, const struct trace_event *r, struct tvh_symtab *st);

/* The summary block. */
void tvh_dump_summary(FILE *out, const struct tvh_stats *s);

#endif /* TVH_DUMP_H */
