/* SPDX-License-Identifier: MIT */
/*
 * walk_int.h - the walk's internals, shared by walk.c (one thread) and
 * pwalk.c (one worker per CPU stream).  Not for exporters: they see
 * walk.h and pwalk.h only.
 *
 * The reading side (tvh_walk_next) runs on one thread: it reads chunks in
 * file order, counts them and finds each chunk's CPU slot.  Everything a
 * chunk does to its CPU (sequence tracking, record decoding, the
 * callback, counters in s->part) is tvh_walk_chunk on that slot, which
 * touches nothing shared: the slots of different CPUs can be processed
 * on different threads as long as each slot's chunks keep their order.
 */
#ifndef TVH_WALK_INT_H
#define TVH_WALK_INT_H

#include "host-tools/lib/walk.h"

/* Global counters a slot accumulates; summed into tvh_stats at the end. */
struct walk_part {
	uint64_t records;
	uint64_t by_type[TV_REC_TYPE_MAX];
	uint64_t malformed;
	uint64_t bad_chunks;
};

struct cpu_slot {
	struct tvh_cpu_stats st;
	struct tvh_stream stream;
	bool desync;             /* the last records chunk ended in a fatal error */
	struct walk_part part;
	tvh_walk_fn fn;          /* this CPU's callback and its context */
	void *ctx;
	bool own_ctx;            /* pwalk: ctx came from ops->begin */
};

struct walk {
	struct tvt_reader *r;
	const struct tvh_walk_opts *opts;
	tvh_walk_fn fn;          /* for events of no CPU, and new slots' default */
	void *ctx;
	struct tvh_stats *stats;
	struct cpu_slot **slots; /* each allocated once: pointers stay valid */
	uint32_t nslots, cap;
	int32_t *slot_of;        /* cpu -> slot index or -1 */
	uint32_t slot_of_len;
};

/* The slot of cpu, created (with w->fn, w->ctx) when new; NULL: no memory,
 * or TVH_MAX_CPUS_SEEN slots exist already. */
struct cpu_slot *tvh_walk_slot(struct walk *w, uint32_t cpu);

/*
 * tvh_walk_next - the next chunk that belongs to a CPU, into *c, and its
 * slot.  Chunks of no CPU (damaged headers) are reported to w->fn here.
 * Returns 1, 2 (a truncated chunk: pass -TVH_ERR_TRUNCATED on), 0 at the
 * end, w->fn's nonzero value, -TVH_ERR_NOMEM, -TVH_ERR_HEADER (a CPU
 * index above TVH_MAX_CPU) or -TVH_ERR_LIMIT (TVH_MAX_CPUS_SEEN).
 */
int tvh_walk_next(struct walk *w, struct tvt_chunk *c, struct cpu_slot **slot);

/* Process one chunk on its slot (err: 0 or -TVH_ERR_TRUNCATED). */
int tvh_walk_chunk(struct walk *w, struct cpu_slot *s, int err,
		   const struct tvt_chunk *c);

/* Fill w->stats from the slots and free them; returns ret or -TVH_ERR_NOMEM. */
int tvh_walk_finish(struct walk *w, int ret);

#endif /* TVH_WALK_INT_H */
