/* SPDX-License-Identifier: MIT */
/*
 * pwalk.h - the walk of walk.h with each CPU stream decoded on its own
 * thread.
 *
 * One reader (the calling thread) reads chunks in file order and hands
 * each to the worker of its CPU through a bounded queue (TVH_PWALK_QUEUE
 * chunks: memory stays bounded whatever the file size; the reader waits
 * when a worker falls behind).  A worker decodes its CPU's chunks in
 * stream order and calls that CPU's callback with that CPU's context, so
 * callbacks need no locks as long as they touch only their context.
 * With more CPUs than threads, CPU streams share workers (CPU i goes to
 * worker i mod threads), still each in order.
 *
 * Determinism: contexts are created on the reading thread when a CPU is
 * first seen, and finished (ops->end) after every worker is done, in
 * ascending CPU order: output written there comes in a fixed order
 * whatever the threads did.
 *
 * Chunk payloads are read from the file mapping in place; pages behind
 * the slowest worker are released as the walk goes (tvt_reader_release),
 * so a capture larger than memory streams through.
 */
#ifndef TVH_PWALK_H
#define TVH_PWALK_H

#include "host-tools/lib/walk.h"

#define TVH_PWALK_QUEUE 64u          /* chunks in flight per worker */
#define TVH_PWALK_MAX_THREADS 64u

struct tvh_pwalk_ops {
	/*
	 * A new CPU stream: return its context (events of that CPU go to
	 * event(ctx_of_cpu, ev)), or NULL for out of memory.  Reading thread.
	 */
	void *(*begin)(void *ctx, uint32_t cpu);
	tvh_walk_fn event;               /* worker thread */
	/*
	 * After all workers finished, per CPU in ascending order, on the
	 * calling thread; nonzero stops (later CPUs still get end() with
	 * aborted = true, to free).
	 */
	int (*end)(void *ctx, uint32_t cpu, void *cpu_ctx, bool aborted);
	/* Events of no CPU (damaged chunk headers); reading thread; may be NULL. */
	tvh_walk_fn global;
};

/*
 * tvh_pwalk - walk r with up to `threads` workers (0: one per online
 * processor, at most TVH_PWALK_MAX_THREADS; 1: still a worker thread).
 * stats as tvh_walk's.  Returns 0, the first nonzero value a callback
 * returned, -TVH_ERR_NOMEM, -TVH_ERR_HEADER (CPU index above
 * TVH_MAX_CPU) or -TVH_ERR_INVALID (no ops->event or ops->begin).
 */
int tvh_pwalk(struct tvt_reader *r, const struct tvh_walk_opts *opts,
	      unsigned threads, const struct tvh_pwalk_ops *ops, void *ctx,
	      struct tvh_stats *stats);

#endif /* TVH_PWALK_H */
