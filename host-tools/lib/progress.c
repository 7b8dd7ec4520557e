/* SPDX-License-Identifier: MIT */
/*
 * progress.c - progress lines on stderr (see progress.h).
 */
#include <time.h>
#include <unistd.h>

#include "host-tools/lib/progress.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void tvh_progress_init(struct tvh_progress *p, FILE *out, const char *what,
		       uint64_t total, bool enabled, bool force)
{
	p->out = out;
	p->what = what;
	p->total = total;
	p->active = enabled && total > 0 && (force || total >= TVH_PROGRESS_MIN);
	p->tty = out && isatty(fileno(out));
	p->last_ns = 0;
	p->last_decile = 0;
	p->drawn = false;
}

void tvh_progress_update(struct tvh_progress *p, uint64_t done)
{
	unsigned pct;

	if (!p || !p->active)
		return;
	if (done > p->total)
		done = p->total;
	pct = (unsigned)(done * 100 / p->total);
	if (p->tty) {
		uint64_t t = now_ns();

		if (p->drawn && t - p->last_ns < 500000000ull)
			return;
		p->last_ns = t;
		fprintf(p->out, "\r%s: %3u%% (%.1f/%.1f MiB)", p->what, pct,
			done / 1048576.0, p->total / 1048576.0);
		fflush(p->out);
		p->drawn = true;
	} else if (pct / 10 > p->last_decile) {
		p->last_decile = pct / 10;
		fprintf(p->out, "%s: %u%% (%.1f/%.1f MiB)\n", p->what,
			p->last_decile * 10, done / 1048576.0,
			p->total / 1048576.0);
		p->drawn = true;
	}
}

void tvh_progress_done(struct tvh_progress *p)
{
	if (!p || !p->active || !p->drawn)
		return;
	if (p->tty)
		fprintf(p->out, "\r%s: 100%% (%.1f MiB)          \n", p->what,
			p->total / 1048576.0);
	p->drawn = false;
}

void tvh_progress_restart(struct tvh_progress *p, const char *what)
{
	if (!p)
		return;
	tvh_progress_done(p);
	p->what = what;
	p->last_ns = 0;
	p->last_decile = 0;
	p->drawn = false;
}
