/* SPDX-License-Identifier: MIT */
/*
 * drcov.h - basic-block coverage from branch records, written in
 * DynamoRIO's drcov format (version 2, module table version 2), which
 * Lighthouse, bncov, Cartographer and drcov2lcov read:
 *
 *   DRCOV VERSION: 2
 *   DRCOV FLAVOR: tracevisor
 *   Module Table: version 2, count N
 *   Columns: id, base, end, entry, checksum, timestamp, path
 *   0, 0x0000000000400000, 0x0000000000402000, 0x0000000000401000, 0x00000000, 0x00000000, /abs/path
 *   BB Table: M bbs
 *   <M x struct tvh_drcov_bb, 8 bytes each, little endian, no separators>
 *
 * A basic block runs from a branch's `to` to the end of the next branch
 * of the same CPU (its `from` plus that branch instruction's length).
 * The length is decoded from the module's bytes (x86_len.h); when it
 * cannot be, the block ends at `from` + 1 (it still covers the branch's
 * first byte, which is what coverage tools key on) and is counted as
 * approximate.  Exceptions and interrupts end the block at `from`
 * (excluded: the faulting instruction did not complete, the interrupted
 * one did not start).  The chain restarts after anything that breaks
 * it: a sequence gap, LOST, START/STOP, a malformed record.  Blocks are
 * listed once (first-seen order), in the module holding their start;
 * blocks that span modules, leave every module, run backwards or exceed
 * 65535 bytes are dropped and counted.
 *
 * Module extents are the executable segments (sym.h,
 * tvh_symtab_find_exec): a block belongs to the module whose code holds
 * it.  A module whose whole extent is over 4 GiB (a vmlinux: its per-CPU
 * segment is at 0, its text at 0xffffffff81000000) cannot give drcov's
 * 32-bit offsets from its lowest segment: its table row and offsets then
 * start at its lowest executable segment (_text) and end at its highest
 * one's end (tvh_drcov_base).
 */
#ifndef TVH_DRCOV_H
#define TVH_DRCOV_H

#include <stdint.h>
#include <stdio.h>

#include "host-tools/lib/cputab.h"
#include "host-tools/lib/sym.h"
#include "host-tools/lib/walk.h"

/* One BB Table entry as drcov stores it (_bb_entry_t). */
struct tvh_drcov_bb {
	uint32_t start;          /* offset from the module base */
	uint16_t size;
	uint16_t mod_id;
};
_Static_assert(sizeof(struct tvh_drcov_bb) == 8, "drcov bb entry is 8 bytes");

#define TVH_DRCOV_MAX_BB 0xffffu

struct tvh_drcov_stats {
	uint64_t blocks;         /* blocks seen, duplicates included */
	uint64_t unique;
	uint64_t approx;         /* of the unique: size from the +1 fallback */
	uint64_t outside;        /* start in no module */
	uint64_t cross_module;
	uint64_t backwards;      /* `from` before the block start */
	uint64_t too_big;
	uint64_t empty;          /* exception/interrupt at the block start */
};

struct tvh_drcov {
	struct tvh_symtab *st;
	struct tvh_drcov_bb *bbs;
	size_t nbbs, cap;
	uint8_t *bb_approx;      /* per bbs[i]: its size is the fallback */
	uint64_t *set;           /* keys of bbs, open addressing; 0 = empty */
	size_t set_cap;
	struct tvh_cputab chain; /* per CPU: struct drcov_chain (drcov.c) */
	struct tvh_drcov_stats stats;
};

/*
 * tvh_drcov_base - the run-time base drcov offsets of m count from, and
 * in *end the end of its row: m's base and end, or its executable span
 * when m spans more than 4 GiB.
 */
uint64_t tvh_drcov_base(const struct tvh_module *m, uint64_t *end);

/*
 * st must outlive d and hold at least one module or region.  With no
 * module, regions (the IMAGE records' names, st->regions) are the modules,
 * without a file (a capture decoded from its code snapshots).
 */
void tvh_drcov_init(struct tvh_drcov *d, struct tvh_symtab *st);
void tvh_drcov_free(struct tvh_drcov *d);

/* A tvh_walk callback (ctx = d).  Returns 0 or -TVH_ERR_NOMEM. */
int tvh_drcov_event(void *ctx, const struct tvh_event *ev);

/*
 * tvh_drcov_add - one block [start, end) at run-time addresses.
 * approx: its size is the fallback.  Returns 1 added, 0 dropped or
 * already there (counted in stats), -TVH_ERR_NOMEM.
 */
int tvh_drcov_add(struct tvh_drcov *d, uint64_t start, uint64_t end, bool approx);

/*
 * tvh_drcov_merge - add src's blocks (in src's order) and counters to
 * dst: per-CPU coverage built in parallel, merged in CPU order.  Both
 * must use the same symtab modules.  Returns 0 or -TVH_ERR_NOMEM.
 */
int tvh_drcov_merge(struct tvh_drcov *dst, const struct tvh_drcov *src);

/*
 * tvh_drcov_write_modoff - the blocks as "module+offset" lines (hex
 * offset of each block start from its module's base, first-seen order),
 * the plain text form Lighthouse also loads; '#' lines are comments.
 * Returns 0 or -TVH_ERR_IO.
 */
int tvh_drcov_write_modoff(const struct tvh_drcov *d, FILE *out);

/*
 * tvh_drcov_write - the drcov file; module paths are made absolute when
 * they can be.  Returns 0 or -TVH_ERR_IO.
 */
int tvh_drcov_write(const struct tvh_drcov *d, FILE *out, const char *flavor);

#endif /* TVH_DRCOV_H */
