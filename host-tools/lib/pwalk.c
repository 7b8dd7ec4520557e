/* SPDX-License-Identifier: MIT */
/*
 * pwalk.c - the walk with one worker thread per CPU stream (see pwalk.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/pwalk.h"
#include "host-tools/lib/walk_int.h"

struct item {
	struct cpu_slot *slot;
	struct tvt_chunk c;
	int err;                 /* 0 or -TVH_ERR_TRUNCATED */
};

struct worker {
	pthread_t thread;
	bool started;
	struct pwalk *pw;
	pthread_mutex_t lock;
	pthread_cond_t not_empty, not_full;
	struct item q[TVH_PWALK_QUEUE];
	unsigned head, count;
	bool closed;             /* no more items will come */
	uint64_t low;            /* file offset of the oldest unfinished item */
	bool busy;
};

struct pwalk {
	struct walk w;
	const struct tvh_pwalk_ops *ops;
	void *ctx;
	struct worker *workers;
	unsigned nworkers;
	pthread_mutex_t abort_lock;
	int abort_ret;           /* first nonzero callback value */
};

static int get_abort(struct pwalk *pw)
{
	int ret;

	pthread_mutex_lock(&pw->abort_lock);
	ret = pw->abort_ret;
	pthread_mutex_unlock(&pw->abort_lock);
	return ret;
}

static void set_abort(struct pwalk *pw, int ret)
{
	pthread_mutex_lock(&pw->abort_lock);
	if (!pw->abort_ret)
		pw->abort_ret = ret;
	pthread_mutex_unlock(&pw->abort_lock);
}

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct pwalk *pw = wk->pw;

	for (;;) {
		struct item it;
		int ret;

		pthread_mutex_lock(&wk->lock);
		while (!wk->count && !wk->closed)
			pthread_cond_wait(&wk->not_empty, &wk->lock);
		if (!wk->count) {
			pthread_mutex_unlock(&wk->lock);
			break;
		}
		it = wk->q[wk->head];
		wk->busy = true;
		wk->low = it.c.file_offset;
		wk->head = (wk->head + 1) % TVH_PWALK_QUEUE;
		wk->count--;
		pthread_cond_signal(&wk->not_full);
		pthread_mutex_unlock(&wk->lock);

		/* After an abort the queue is drained without processing. */
		if (!get_abort(pw)) {
			ret = tvh_walk_chunk(&pw->w, it.slot, it.err, &it.c);
			if (ret)
				set_abort(pw, ret);
		}
		pthread_mutex_lock(&wk->lock);
		wk->busy = false;
		pthread_mutex_unlock(&wk->lock);
	}
	return NULL;
}

static void push(struct worker *wk, const struct item *it)
{
	pthread_mutex_lock(&wk->lock);
	while (wk->count == TVH_PWALK_QUEUE)
		pthread_cond_wait(&wk->not_full, &wk->lock);
	wk->q[(wk->head + wk->count) % TVH_PWALK_QUEUE] = *it;
	wk->count++;
	pthread_cond_signal(&wk->not_empty);
	pthread_mutex_unlock(&wk->lock);
}

/* File offset below which no worker needs the mapping any more. */
static uint64_t low_water(struct pwalk *pw, uint64_t reader_pos)
{
	uint64_t low = reader_pos;

	for (unsigned i = 0; i < pw->nworkers; i++) {
		struct worker *wk = &pw->workers[i];

		pthread_mutex_lock(&wk->lock);
		if (wk->busy && wk->low < low)
			low = wk->low;
		if (wk->count && wk->q[wk->head].c.file_offset < low)
			low = wk->q[wk->head].c.file_offset;
		pthread_mutex_unlock(&wk->lock);
	}
	return low;
}

static unsigned pick_threads(unsigned threads)
{
	long n;

	if (threads)
		return threads > TVH_PWALK_MAX_THREADS ? TVH_PWALK_MAX_THREADS : threads;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	return n > (long)TVH_PWALK_MAX_THREADS ? TVH_PWALK_MAX_THREADS : (unsigned)n;
}

/* A new slot: its context from ops->begin; a worker if one is still free. */
static int new_slot(struct pwalk *pw, struct cpu_slot *s, unsigned max_workers)
{
	struct worker *wk;

	s->fn = pw->ops->event;
	s->ctx = pw->ops->begin(pw->ctx, s->st.cpu);
	if (!s->ctx)
		return -TVH_ERR_NOMEM;
	s->own_ctx = true;
	if (pw->nworkers >= max_workers)
		return 0;
	wk = &pw->workers[pw->nworkers];
	memset(wk, 0, sizeof(*wk));
	wk->pw = pw;
	pthread_mutex_init(&wk->lock, NULL);
	pthread_cond_init(&wk->not_empty, NULL);
	pthread_cond_init(&wk->not_full, NULL);
	if (pthread_create(&wk->thread, NULL, worker_main, wk)) {
		pthread_mutex_destroy(&wk->lock);
		pthread_cond_destroy(&wk->not_empty);
		pthread_cond_destroy(&wk->not_full);
		/* No thread: the CPUs seen so far carry on with fewer workers. */
		return pw->nworkers ? 0 : -TVH_ERR_NOMEM;
	}
	wk->started = true;
	pw->nworkers++;
	return 0;
}

#define RELEASE_STEP (64ull << 20)   /* check the low water mark this often */

int tvh_pwalk(struct tvt_reader *r, const struct tvh_walk_opts *opts,
	      unsigned threads, const struct tvh_pwalk_ops *ops, void *ctx,
	      struct tvh_stats *stats)
{
	static const struct tvh_walk_opts defaults = { .cpu = -1 };
	struct pwalk pw;
	struct cpu_slot *s = NULL;
	struct tvt_chunk c;
	unsigned max_workers = pick_threads(threads);
	uint64_t next_release = RELEASE_STEP;
	int got, ret = 0;

	memset(stats, 0, sizeof(*stats));
	if (!ops || !ops->event || !ops->begin)
		return -TVH_ERR_INVALID;
	memset(&pw, 0, sizeof(pw));
	pw.w = (struct walk){ .r = r, .opts = opts ? opts : &defaults,
			      .fn = ops->global, .ctx = ctx, .stats = stats };
	pw.ops = ops;
	pw.ctx = ctx;
	pw.workers = calloc(max_workers, sizeof(*pw.workers));
	if (!pw.workers)
		return -TVH_ERR_NOMEM;
	pthread_mutex_init(&pw.abort_lock, NULL);
	tvt_reader_rewind(r);
	while ((got = tvh_walk_next(&pw.w, &c, &s)) > 0) {
		struct item it = { .slot = s, .c = c,
				   .err = got == 2 ? -TVH_ERR_TRUNCATED : 0 };
		uint32_t idx = (uint32_t)pw.w.slot_of[c.cpu];

		if (!s->own_ctx) {
			ret = new_slot(&pw, s, max_workers);
			if (ret)
				break;
		}
		if (get_abort(&pw))
			break;
		push(&pw.workers[idx % pw.nworkers], &it);
		if (r->pos >= next_release) {
			tvt_reader_release(r, low_water(&pw, r->pos));
			next_release = r->pos + RELEASE_STEP;
		}
	}
	if (got < 0 && !ret)
		ret = got;
	for (unsigned i = 0; i < pw.nworkers; i++) {
		struct worker *wk = &pw.workers[i];

		pthread_mutex_lock(&wk->lock);
		wk->closed = true;
		pthread_cond_signal(&wk->not_empty);
		pthread_mutex_unlock(&wk->lock);
	}
	for (unsigned i = 0; i < pw.nworkers; i++) {
		struct worker *wk = &pw.workers[i];

		pthread_join(wk->thread, NULL);
		pthread_mutex_destroy(&wk->lock);
		pthread_cond_destroy(&wk->not_empty);
		pthread_cond_destroy(&wk->not_full);
	}
	if (!ret)
		ret = pw.abort_ret;
	pthread_mutex_destroy(&pw.abort_lock);
	free(pw.workers);

	/* Contexts finish in CPU order (slots are in first-seen order). */
	for (;;) {
		struct cpu_slot *next = NULL;

		for (uint32_t i = 0; i < pw.w.nslots; i++) {
			struct cpu_slot *t = pw.w.slots[i];

			if (t->own_ctx && (!next || t->st.cpu < next->st.cpu))
				next = t;
		}
		if (!next)
			break;
		if (ops->end) {
			int e = ops->end(ctx, next->st.cpu, next->ctx, ret != 0);

			if (e && !ret)
				ret = e;
		}
		next->own_ctx = false;
	}
	return tvh_walk_finish(&pw.w, ret);
}
