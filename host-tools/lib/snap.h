/* SPDX-License-Identifier: MIT */
/*
 * snap.h - the code snapshot store: the guest code pages a capture's
 * TV_REC_CODE / TV_REC_CODE_DATA records carry (vmm/trace/format.h,
 * docs/SNAPSHOTS.md), indexed so a decoder can read the bytes that ran
 * at an address, in an address space, at a time.
 *
 * Contents are indexed by hash over the whole capture (the hypervisor
 * sends a content once per boot, on whichever CPU saw it first); a
 * content is assembled from its eight 512-byte chunks and kept only if
 * tv_code_hash of the 4 KiB matches (else counted in bad_hash).  Each
 * TV_REC_CODE is a snapshot: page gpa executed at linear under cr3 from
 * tsc on, valid until the next TV_REC_CODE of the same gpa (any CPU).
 *
 * Lookup of (cr3, ip, tsc), in this order (the first rule that finds a
 * snapshot of ip's linear page with a content wins; within a rule the
 * latest start):
 *  1. a snapshot of this address space valid at tsc; kernel snapshots
 *     (fetched at CPL 0: no TV_CODEF_USER) belong to every address space,
 *     and cr3 0 means any;
 *  2. the earliest snapshot of this address space starting after tsc: a
 *     page's first execution comes before its snapshot's tsc, while a
 *     decoder's time is the last timing packet's, a little earlier;
 *  3. a snapshot of any address space valid at tsc (shared libraries,
 *     a binary mapped at the same address in another process);
 *  4. the earliest of any address space starting after tsc;
 *  5. the latest whose validity ended before tsc, this address space
 *     first, then any.
 * tsc 0 therefore means the earliest snapshot.  An upper-half (kernel)
 * linear page whose kernel snapshots all name one gpa also has every other
 * kernel snapshot of that gpa, taken under another linear address (the
 * identity mapping Linux starts from), as its own (snap.c, add_aliases;
 * stats.aliases).  CR3 values are compared
 * on bits 51:12 (the PCID in 11:0, and PT's PIP packets carry no bits
 * below 5).
 *
 * Only the sideband is read (records, never PT bytes).  Contents (4 KiB
 * each, once per distinct content) are held in memory up to a bound
 * (struct tvh_snap_opts: spill_bytes); the ones past it go to an unlinked
 * temporary file that tvh_snap_finish maps read-only, so the kernel pages
 * them in and out and a capture with more distinct code than memory
 * still loads.  What stays in memory regardless: about 72 bytes per
 * snapshot (its index entry and its by-address pointer), 48 to 96 bytes
 * per distinct content (the hash table, at most half full), one 4 KiB
 * page per content still being assembled, and a 256 KiB write buffer
 * while loading.  After tvh_snap_finish the store is immutable: every
 * read function may be called from any number of threads at once, and
 * hit.page pointers (memory or the mapped file) stay valid until
 * tvh_snap_free, which unmaps the file and closes it.
 */
#ifndef TVH_SNAP_H
#define TVH_SNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host-tools/lib/progress.h"
#include "host-tools/lib/tvt.h"
#include "host-tools/lib/walk.h"

struct tvh_snap;

/* Bits of CR3 that name an address space (SDM 3A 4.5: bits 51:12 in 4-level paging). */
#define TVH_SNAP_CR3_MASK 0x000ffffffffff000ull

struct tvh_snap_stats {
	uint64_t records;        /* TV_REC_CODE records (snapshots) */
	uint64_t new_records;    /*   of those with TV_CODEF_NEW */
	uint64_t rearms;         /*   with TV_CODEF_REARM */
	uint64_t user;           /*   with TV_CODEF_USER */
	uint64_t no_linear;      /*   without TV_CODEF_LINEAR: gpa only, not looked up */
	uint64_t data_records;   /* TV_REC_CODE_DATA records */
	uint64_t bad_records;    /* either kind with a bad field (size, chunk index) */
	uint64_t pages;          /* distinct guest-physical pages */
	uint64_t contents;       /* distinct contents assembled with a good hash */
	uint64_t bytes;          /* contents * TV_CODE_PAGE = mem_bytes + spilled_bytes */
	uint64_t mem_bytes;      /*   held in memory (at most spill_bytes) */
	uint64_t spilled_bytes;  /*   in the spill file */
	uint64_t spill_errors;   /* the spill file failed (create, write, map): 0 or 1 */
	uint64_t bad_hash;       /* contents assembled whose hash did not match: dropped */
	uint64_t missing_data;   /* snapshots whose content never arrived whole */
	uint64_t missing_chunks; /* chunks absent from contents begun but never finished */
	uint64_t aliases;        /* copies of a kernel page's snapshots under its other
				    upper-half linear address (snap.c, add_aliases) */
	uint64_t runtime_maps;   /* copies of firmware runtime pages' snapshots under
				    the OS's mapping of their image (add_runtime_maps) */
	uint64_t runtime_conflicts; /* firmware images mapped at two offsets: not filled */
};

/* Where contents go: the first spill_bytes of them in memory, the rest to a file. */
#define TVH_SNAP_SPILL_DEFAULT (64ull << 20)
struct tvh_snap_opts {
	uint64_t spill_bytes;    /* contents kept in memory; 0: every one to the file */
	const char *dir;         /* of the unlinked spill file (copied) */
};

/*
 * tvh_snap_opts_default - spill_bytes from the environment's
 * TVH_SNAP_SPILL_BYTES (bytes, or with a K, M or G suffix; unset or
 * unreadable: TVH_SNAP_SPILL_DEFAULT), dir from TMPDIR (else /tmp).
 */
void tvh_snap_opts_default(struct tvh_snap_opts *o);

/*
 * tvh_snap_load - read the snapshots of every CPU of r in one pass
 * (tvh_walk, records only; progress may be NULL).  *out is a store
 * (empty when the capture has none: tvh_snap_empty).  opts NULL: the
 * defaults (tvh_snap_opts_default).
 * Returns 0, -TVH_ERR_NOMEM, -TVH_ERR_IO (the spill file could not be
 * created, written - a full disk - or mapped; errno says why) or a walk
 * error (then *out is NULL).
 */
int tvh_snap_load(struct tvt_reader *r, struct tvh_progress *progress,
		  struct tvh_snap **out);
int tvh_snap_load_opts(struct tvt_reader *r, struct tvh_progress *progress,
		       const struct tvh_snap_opts *opts, struct tvh_snap **out);

/*
 * Building by hand, for walks that do more (info): tvh_snap_new, then
 * tvh_snap_add for every event of the walk (any CPU, any order between
 * CPUs, each CPU's events in stream order; other events are ignored),
 * then tvh_snap_finish, after which the store is read-only.
 * new: NULL for out of memory (opts NULL: the defaults).  add, finish:
 * 0, -TVH_ERR_NOMEM or -TVH_ERR_IO (the spill file, errno set; the
 * store keeps failing with it, stats count it in spill_errors).
 */
struct tvh_snap *tvh_snap_new(void);
struct tvh_snap *tvh_snap_new_opts(const struct tvh_snap_opts *opts);
int tvh_snap_add(struct tvh_snap *s, const struct tvh_event *ev);
int tvh_snap_finish(struct tvh_snap *s);

void tvh_snap_free(struct tvh_snap *s);

/* True when the store has no snapshot with a content (NULL: true). */
bool tvh_snap_empty(const struct tvh_snap *s);

void tvh_snap_get_stats(const struct tvh_snap *s, struct tvh_snap_stats *st);

/* A snapshot found by tvh_snap_lookup. */
struct tvh_snap_hit {
	const uint8_t *page;     /* TV_CODE_PAGE bytes, owned by the store */
	uint64_t linear;         /* the page's linear address */
	uint64_t gpa;
	uint64_t cr3;            /* as recorded */
	uint64_t start;          /* its tsc */
	uint64_t end;            /* the next snapshot of its gpa; UINT64_MAX: none */
	uint64_t hash;
	uint8_t flags;           /* TV_CODEF_* */
	uint32_t cpu;            /* whose stream carried it */
};

/*
 * tvh_snap_lookup - the snapshot of ip's linear page for (cr3, tsc) by
 * the rules above.  Returns 0 with *hit filled, or -TVH_ERR_NOT_FOUND.
 */
int tvh_snap_lookup(const struct tvh_snap *s, uint64_t cr3, uint64_t ip,
		    uint64_t tsc, struct tvh_snap_hit *hit);

/*
 * tvh_snap_span - the times around tsc over which every lookup of ip's
 * linear page (any cr3) gives the same answer: [*lo, *hi) holds tsc and
 * no snapshot of that page starts or ends strictly inside it (the rules
 * above only compare tsc with starts and ends).  [0, UINT64_MAX) when
 * the page never changes.  For a cache of code read through the store:
 * what it read at tsc stays right while its clock is in the span.
 */
void tvh_snap_span(const struct tvh_snap *s, uint64_t ip, uint64_t tsc,
		   uint64_t *lo, uint64_t *hi);

/*
 * tvh_snap_read - copy up to len bytes of code at linear address ip as
 * executed under cr3 (0: any address space) at tsc (0: the first
 * snapshot), page after page, each page looked up on its own.  Returns
 * the bytes copied: less than len where a page has no snapshot, 0 when
 * ip's has none.
 */
size_t tvh_snap_read(const struct tvh_snap *s, uint64_t cr3, uint64_t ip,
		     uint64_t tsc, uint8_t *buf, size_t len);

/*
 * A reader's cursor: tvh_snap_read with a small cache of the pages it
 * looked up last (exact on cr3, page and tsc, so it never changes an
 * answer), for a decoder that reads every instruction's bytes.  One
 * cursor per thread; the store is shared.
 */
#define TVH_SNAP_CURSOR_WAYS 64u
struct tvh_snap_cursor {
	const struct tvh_snap *s;
	struct {
		uint64_t linear;     /* 1 (not a page address): empty */
		uint64_t cr3;        /* masked */
		uint64_t tsc;
		const uint8_t *page; /* NULL: no snapshot */
	} e[TVH_SNAP_CURSOR_WAYS];
	uint64_t hits, misses;
};

void tvh_snap_cursor_init(struct tvh_snap_cursor *c, const struct tvh_snap *s);
size_t tvh_snap_cursor_read(struct tvh_snap_cursor *c, uint64_t cr3, uint64_t ip,
			    uint64_t tsc, uint8_t *buf, size_t len);

#endif /* TVH_SNAP_H */
