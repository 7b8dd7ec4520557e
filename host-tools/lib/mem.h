/* SPDX-License-Identifier: MIT */
/*
 * mem.h - memory-access tracing on the host (docs/MEMTRACE.md, issue 18):
 * the TV_REC_MEM records of a capture as a listing, one access a line in
 * time order across CPUs, and a sharing report in the spirit of perf c2c
 * (one row per 64-byte cache line).  `tracevisor mem` is the CLI.
 *
 * Collecting (tvh_mem_event, a tvh_walk callback): every good TV_REC_MEM
 * (an access), TV_REC_MEM_WATCH (a watch armed or removed, a guest's
 * label) and TV_REC_MEM_STATS (the hypervisor's counters, since boot: the
 * last one of each CPU counts).  A malformed record of these types (wrong
 * size, contradictory flags, an op out of its enum; vmm/trace/read.c) is
 * counted in bad, never used.  tvh_mem_sort puts the accesses in time
 * order: TSC, then CPU, then the record's sequence number.
 *
 * Listing line (tvh_mem_list, text):
 *   cpu1 5000 0x401020 writer_b+0x4 w 4 gla=0x10008 gpa=0x10008 new=0x2 buf+0x8
 * CPU, TSC, the instruction's RIP and its symbol (as every tool names
 * code: --image, --image-dir, --kallsyms/--system-map, IMAGE regions;
 * '-' when nothing names it), the access r, w or rw (read-modify-write),
 * "+lock" when locked, the size in bytes ('?' undecoded), the
 * guest-linear ('?' when the record has none) and guest-physical
 * addresses, old=/new= when the record has them, the words split=GPA2
 * (crosses a page), string, stack, undecoded, cpl=N (N != 0), and last
 * the data's name (tvh_mem_data_name) when anything names it.  Lines
 * starting with '#' are the watches (before) and the counters and losses
 * (after).
 *
 * Data names (tvh_mem_data_name), the first that applies:
 *  1. the guest's labels: a TV_REC_MEM_WATCH (ARM or LABEL) with a label
 *     whose [lo, hi) holds the guest-physical address: LABEL+0xOFF (the
 *     latest such record wins); labels are the traced machine's bytes:
 *     anything but printable ASCII other than space becomes '_';
 *  2. kernel data symbols (--kallsyms/--system-map, types d/D/b/B/r/R...)
 *     by the guest-linear address: jiffies+0x0;
 *  3. an ELF module's symbol (DWARF/ELF symbol table: objects too) or a
 *     region by the guest-linear address.
 *
 * Sharing report (tvh_mem_sharing_build): the accesses grouped by the
 * 64-byte line of their first byte's guest-physical address (caches are
 * physically tagged; an access crossing a line counts in its first line
 * only).  Per line:
 *  reads, writes, locked  accesses with the read, write, lock flag (a
 *                         read-modify-write counts as a read and a write);
 *  transfers              consecutive accesses to the line, in time
 *                         order across CPUs, made by different CPUs with
 *                         at least one of the two a write: the line's
 *                         ping-pong between caches.  A proxy, not a cache
 *                         model: CPU 0 writing, then CPU 1 and CPU 2
 *                         reading counts one (a MESI cache would move the
 *                         line twice), and evictions are not modelled;
 *  sharing                private (one CPU), read-shared (several, no
 *                         write), true (a byte one CPU writes is read or
 *                         written by another), false (several CPUs, some
 *                         write, and no byte one writes is touched by
 *                         another: they only share the line);
 *  offsets                each start offset used in the line with its
 *                         sizes, CPUs, counts and its code locations
 *                         (RIPs) by count, highest first.
 * Rows come sorted by transfers, then accesses (both highest first), then
 * address.
 */
#ifndef TVH_MEM_H
#define TVH_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "host-tools/lib/cputab.h"
#include "host-tools/lib/sym.h"
#include "host-tools/lib/walk.h"

#define TVH_MEM_LINE 64u

/* One access (a good TV_REC_MEM). */
struct tvh_mem_access {
	uint32_t cpu;
	uint32_t flags;          /* TV_MEMF_* */
	uint64_t seq;            /* the record's sequence number in its CPU's stream */
	uint64_t tsc, rip, cr3, gla, gpa, gpa2, old, new_val;
	uint16_t id;             /* watch id */
	uint8_t size;            /* bytes, 0: unknown */
	uint8_t cpl;
};

/* One TV_REC_MEM_WATCH. */
struct tvh_mem_watch {
	uint32_t cpu;
	uint8_t op, mode, origin;    /* enum tv_mem_watch_op, TV_MEMW_MODE_*, origin */
	uint16_t id;
	uint64_t tsc, lo, hi, gla, cr3;
	char *label;             /* sanitised (see above), NUL terminated; "" none */
};

/* The hypervisor's counters (TV_REC_MEM_STATS) and what the capture holds, per CPU. */
struct tvh_mem_cpu {
	uint64_t accesses;       /* TV_REC_MEM records collected (all, before --cpu) */
	bool have_stats;
	uint64_t recorded, filtered, collateral, steps, undecoded, outside_window;
};

struct tvh_mem {
	struct tvh_mem_access *v;
	size_t n, cap;
	struct tvh_mem_watch *w;
	size_t nw, wcap;
	struct tvh_cputab cpus;  /* struct tvh_mem_cpu */
	int64_t only_cpu;        /* keep only this CPU's accesses (-1: all); watches
				  * and counters of every CPU are kept */
	uint64_t bad;            /* malformed TV_REC_MEM / _WATCH / _STATS records */
	uint64_t bad_by_type[3]; /* [type - TV_REC_MEM] */
	int err;                 /* first allocation failure */
};

void tvh_mem_init(struct tvh_mem *m);
void tvh_mem_free(struct tvh_mem *m);

/* A tvh_walk callback (ctx = struct tvh_mem).  Returns 0 or -TVH_ERR_NOMEM. */
int tvh_mem_event(void *ctx, const struct tvh_event *ev);

/* Accesses in time order (TSC, CPU, sequence number). */
void tvh_mem_sort(struct tvh_mem *m);

/*
 * tvh_mem_data_name - the name of the data at gpa (and gla when
 * have_gla), as above, into buf ("" when nothing names it; st may be NULL:
 * labels only).  Returns the length written.
 */
int tvh_mem_data_name(const struct tvh_mem *m, struct tvh_symtab *st, bool have_gla,
		      uint64_t gla, uint64_t gpa, char *buf, size_t n);

/* "r", "w", "rw", "+lock" appended when locked, "?" for neither. */
const char *tvh_mem_kind(uint32_t flags);

/*
 * tvh_mem_list - the listing (sorted first), text or a JSON object
 * {"accesses": [...], "watches": [...], "cpus": [...], "totals": {...},
 * "lost_records": N, "malformed_records": N, "bad_memory_records": N}.
 * st may be NULL (no symbols); s: the walk's stats (losses), may be NULL.
 * Returns 0 or -TVH_ERR_IO.
 */
int tvh_mem_list(struct tvh_mem *m, struct tvh_symtab *st, const struct tvh_stats *s,
		 bool json, FILE *out);

enum tvh_mem_share {
	TVH_SHARE_PRIVATE,
	TVH_SHARE_READ,          /* several CPUs, reads only */
	TVH_SHARE_FALSE,
	TVH_SHARE_TRUE,
};
const char *tvh_mem_share_name(enum tvh_mem_share k);

struct tvh_mem_site {
	uint64_t rip;
	uint64_t count;
};

struct tvh_mem_offset {
	uint32_t off;            /* in the line */
	uint8_t size_min, size_max;
	uint64_t accesses, reads, writes, locked;
	uint32_t *cpus;          /* sorted */
	uint32_t ncpus;
	struct tvh_mem_site *sites;  /* count highest first, then rip */
	uint32_t nsites;
};

struct tvh_mem_line_cpu {
	uint32_t cpu;
	uint64_t accesses, reads, writes;
	uint64_t rmask, wmask;   /* bytes of the line read, written */
};

struct tvh_mem_line {
	uint64_t gpa;            /* of the line's first byte */
	bool have_gla;
	uint64_t gla;            /* a linear address of it (the first access with one) */
	uint64_t accesses, reads, writes, locked, transfers;
	enum tvh_mem_share share;
	struct tvh_mem_line_cpu *cpus;   /* sorted by cpu */
	uint32_t ncpus;
	struct tvh_mem_offset *offs;     /* sorted by off */
	uint32_t noffs;
};

struct tvh_mem_sharing {
	struct tvh_mem_line *v;
	size_t n;
	uint64_t accesses;
	uint64_t by_share[4];    /* lines of each enum tvh_mem_share */
};

/* Build the report from m (sorted here).  0 or -TVH_ERR_NOMEM (sh empty). */
int tvh_mem_sharing_build(struct tvh_mem *m, struct tvh_mem_sharing *sh);
void tvh_mem_sharing_free(struct tvh_mem_sharing *sh);

/*
 * tvh_mem_sharing_write - the report, text or JSON ({"lines": [...],
 * "summary": {...}, ...}); top: code locations per offset (0: all).
 * Text, one row per line, then one row per offset:
 *   line 0x10000 buf+0x0 cpus 0,1 reads 0 writes 8 locked 0 transfers 7 false-sharing offsets +0x0,+0x8
 *     +0x0 size 4 cpus 0 reads 0 writes 4 locked 0: 0x401005 writer_a+0x5 x4
 * Returns 0 or -TVH_ERR_IO.
 */
int tvh_mem_sharing_write(const struct tvh_mem_sharing *sh, const struct tvh_mem *m,
			  struct tvh_symtab *st, const struct tvh_stats *s,
			  unsigned top, bool json, FILE *out);

#endif /* TVH_MEM_H */
