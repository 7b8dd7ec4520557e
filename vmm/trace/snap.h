/* SPDX-License-Identifier: MIT */
/*
 * snap.h - code snapshots taken by the hypervisor (docs/SNAPSHOTS.md):
 * the bytes of every guest page that executes travel in the capture
 * (TV_REC_CODE, TV_REC_CODE_DATA: vmm/trace/format.h), so a decoder
 * needs no file from the user.
 *
 * The tracker is EPT execute permission (SDM 3C 29.3.3.2: an instruction
 * fetch from a page whose leaf has X = 0 is an EPT violation):
 *  - trace_snap_arm, at boot before any CPU uses the EPT: X is cleared on
 *    every present leaf of memory type WB (guest RAM: the EPT leaves
 *    carry the MTRR type, UC/WC/WP for MMIO, flash and the VGA window),
 *    large leaves staying large.  Hidden pages (not present), MMIO and
 *    the address trigger's page (already without X) are not touched.
 *  - a fetch violation on such a page (trace_snap_fetch, through the
 *    exit hooks' ept_fetch after the trigger's): the covering leaf is
 *    split down to 4 KiB (ept_map_4k) and that page mapped R+X without
 *    W; its 4 KiB are hashed (tv_code_hash) and a TV_REC_CODE goes into
 *    this CPU's record ring, followed by the 8 TV_REC_CODE_DATA when the
 *    hash is new to this boot (a global hash set).  The fetch is retried.
 *  - a write violation on a page so mapped (trace_snap_write, the exit
 *    hooks' ept_write): the page becomes R+W without X again (re-armed);
 *    its next fetch takes a new snapshot (TV_CODEF_REARM).
 *  - EPT TLBs: INVEPT (single context) flushes only the CPU that runs it
 *    (SDM 3C 29.4.3.1).  Every rights change bumps a global generation;
 *    each CPU compares it before its next VM entry
 *    (trace_snap_before_entry) and INVEPTs when it changed.  Until then
 *    that CPU may use the old rights (docs/SNAPSHOTS.md, "The window").
 *  - the page pool: a split takes one page table (two for a 1 GiB leaf).
 *    When the pool cannot give them, the whole leaf gets X back, untracked
 *    for good (counted, logged once).  trace_engine_needs asks for
 *    TRACE_SNAP_POOL_BYTES more pool when snapshots are on.
 *  - a page re-armed TRACE_SNAP_REARM_MAX times, or an instruction that
 *    writes the page it executes from (its write exit and fetch exit
 *    alternate at the same RIP), gets R+W+X for good: untracked.
 *
 * Locking: EPT edits and the page table under ept_edit_lock (vmm/exit/
 * exit_ept.h); the hash set is lock-free (compare-and-swap).  Records go
 * into the exiting CPU's own ring, outside the lock (overflow = wait may
 * stall there: vmm/trace/stall.h).
 */
#ifndef TV_TRACE_SNAP_H
#define TV_TRACE_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/trace/trace.h"

struct per_cpu;
struct ept;
struct page_pool;

/* The hash set of contents sent: 8 bytes a slot, 512 KiB of the pool. */
#define TRACE_SNAP_HASH_SLOTS   65536u
/* The pages snapshotted (for REARM and the re-arm limit): 512 KiB. */
#define TRACE_SNAP_PAGE_SLOTS   65536u
/* Linear probes before a set counts as full for that key. */
#define TRACE_SNAP_PROBES       64u
/* Pool pages for splits: 1024 page tables = 2 GiB of 2 MiB leaves at 4 KiB. */
#define TRACE_SNAP_SPLIT_BYTES  (4ull << 20)
#define TRACE_SNAP_POOL_BYTES   (8ull * (TRACE_SNAP_HASH_SLOTS + TRACE_SNAP_PAGE_SLOTS) + \
				 TRACE_SNAP_SPLIT_BYTES)
/*
 * Re-arms of one page before it is left executable and writable.  Linux
 * patches some text pages hundreds of times while it boots (static keys
 * and static calls flipping): at 64, the first whole-boot capture left 7
 * kernel text pages untracked, and their later contents decoded wrong.
 * Each re-arm costs a write exit, a fetch exit and a 48-byte record
 * (contents that come back are not sent again).
 */
#define TRACE_SNAP_REARM_MAX    2000u
/*
 * Self-writing pages (an instruction writes the page it runs from) left
 * executable until the next fetch exit of another page; past this many
 * at once, for good (counted: self_full).  The first TRACE_SNAP_SELF_LOG
 * are logged.
 */
#define TRACE_SNAP_SELF_MAX     32u
/*
 * Self-writing instructions are stepped with MTF (each step a re-arm and
 * a snapshot of what it wrote) while the page has been re-armed fewer
 * times than this, steps included (at most 2 MiB of contents a page);
 * past it, or once a step ends where it began (a REP string
 * instruction's iteration: a bulk copy over its own code), the page is
 * left R+W+X until a fetch elsewhere, as above.
 */
#define TRACE_SNAP_STEP_MAX     512u
#define TRACE_SNAP_SELF_LOG     16u
/* CPUs with their own counters and EPT generation (index < this). */
#define TRACE_SNAP_MAX_CPUS     256u

/*
 * trace_snap_wanted - are code snapshots on for s?  code_snapshots = on
 * or off say so; auto (0) is on with source = pt.  Never without a
 * source.  Pure: trace_engine_needs asks it for the pool.
 */
static inline bool trace_snap_wanted(const struct trace_setup *s)
{
	if (!s || s->source == TV_SOURCE_NONE || s->code_snapshots == TRACE_SNAP_OFF)
		return false;
	return s->code_snapshots == TRACE_SNAP_ON || s->source == TV_SOURCE_PT;
}

/* Per CPU, since boot (the LOG line at each window's stop). */
struct trace_snap_stats {
	uint64_t snapshots;      /* TV_REC_CODE records written */
	uint64_t new_contents;   /* ... with TV_CODEF_NEW (content sent) */
	uint64_t rearms;         /* ... with TV_CODEF_REARM */
	uint64_t fetch_exits;    /* fetch violations handled (stale TLB ones included) */
	uint64_t write_exits;    /* write violations handled (re-arms, stale TLB) */
	uint64_t bytes;          /* CODE and CODE_DATA bytes written into the ring */
	uint64_t untracked;      /* leaves or pages given execute for good */
	uint64_t lost;           /* CODE / CODE_DATA records the ring refused */
	uint64_t self_steps;     /* self-writing instructions stepped (snap.c, self_step) */
};

/* Global: the tables and what did not fit. */
struct trace_snap_global {
	bool armed;
	uint64_t armed_bytes;    /* guest RAM that lost execute at arm time */
	uint64_t contents;       /* hashes in the set */
	uint64_t hash_full;      /* contents sent again: no slot for their hash */
	uint64_t pages;          /* pages in the page table */
	uint64_t page_full;      /* snapshots of pages with no slot (no REARM flag) */
	uint64_t no_ring;        /* snapshots on a CPU without a ring: not recorded */
	uint64_t unreadable;     /* pages the reader could not read: not recorded */
	uint64_t generation;     /* EPT rights changes */
	uint64_t retracked;      /* self-writing pages given back to the tracker */
	uint64_t self_full;      /* self-writing pages left untracked for good (list full) */
};

/*
 * trace_snap_reset - forget everything (not armed).  trace_engine_init
 * calls it.
 */
void trace_snap_reset(void);

/*
 * trace_snap_arm - when trace_snap_wanted(the engine's setup): take the
 * tables from pool, then execute away from guest RAM in ept (see the
 * top).  At boot, before any CPU uses the EPT: no INVEPT.  Logs what it
 * did.  Returns 0 (armed, or snapshots off), or EPT_ERR_NOMEM (the pool
 * cannot hold the tables: snapshots off, logged) or EPT_ERR_INVAL (NULL).
 */
int trace_snap_arm(struct ept *ept, struct page_pool *pool);

/*
 * trace_snap_fetch - an EPT violation for an instruction fetch at gpa on
 * cpu (VMX root, its VMCS current: the exit qualification, guest-linear
 * address, CR3 and SS access rights are read from it).  true when the
 * page is the tracker's and the exit is dealt with (snapshot taken, or a
 * stale TLB flushed, or the page left untracked); false for anything
 * else (the violation is handled as any other).
 */
bool trace_snap_fetch(struct per_cpu *cpu, uint64_t gpa);

/*
 * trace_snap_write - an EPT violation for a write at gpa: true when gpa
 * is a page the tracker made R+X (it is re-armed: R+W, no X) or a stale
 * TLB entry for one it re-armed already; false otherwise.
 */
bool trace_snap_write(struct per_cpu *cpu, uint64_t gpa);
/*
 * trace_snap_sipi - before the entry that follows a SIPI exit: the SIPI
 * page (CS.base) recorded at linear 0, the IP Intel PT gives there
 * (TV_CODEF_PTIP; format.h).
 */
void trace_snap_sipi(struct per_cpu *cpu);
/*
 * trace_snap_mtf - an MTF exit: true when it ends this CPU's step of a
 * self-writing instruction (the page R+X again, snapshotted).
 */
bool trace_snap_mtf(struct per_cpu *cpu);

/* trace_snap_before_entry - INVEPT when another CPU changed rights since this CPU's last. */
void trace_snap_before_entry(struct per_cpu *cpu);

/*
 * trace_snap_window_stop - at a window's stop, before its STOP record:
 * a TV_REC_LOG into cpu's ring and a log line, both
 * "snap: cpu N: snapshots S, new C, rearms R, fetch exits F, write exits
 * W, bytes B, untracked U, lost L" (counts since boot on that CPU:
 * docs/SNAPSHOTS.md), then the global line at info.  Nothing when not
 * armed.
 */
void trace_snap_window_stop(struct per_cpu *cpu);

/* The counters (NULL: not armed or index beyond TRACE_SNAP_MAX_CPUS); the global state. */
const struct trace_snap_stats *trace_snap_stats_of(const struct per_cpu *cpu);
const struct trace_snap_global *trace_snap_global(void);

/*
 * trace_snap_stats_text - the LOG line above for cpu into buf (len
 * bytes, NUL included).  Returns its length (cut to len - 1).
 */
size_t trace_snap_stats_text(const struct per_cpu *cpu, char *buf, size_t len);

#endif /* TV_TRACE_SNAP_H */
