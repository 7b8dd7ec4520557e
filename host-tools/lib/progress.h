/* SPDX-License-Identifier: MIT */
/*
 * progress.h - "what: 42% (1.2/2.9 GiB)" on stderr for long inputs.
 *
 * Silent unless enabled and the total is at least TVH_PROGRESS_MIN bytes
 * (or forced).  On a terminal one line is redrawn at most every 0.5 s; on
 * a pipe or file a line is printed every 10%.
 */
#ifndef TVH_PROGRESS_H
#define TVH_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define TVH_PROGRESS_MIN (64ull << 20)

struct tvh_progress {
	FILE *out;
	const char *what;
	uint64_t total;
	bool active;
	bool tty;
	uint64_t last_ns;
	unsigned last_decile;
	bool drawn;
};

/* enabled: -q not given; force: print even for small inputs. */
void tvh_progress_init(struct tvh_progress *p, FILE *out, const char *what,
		       uint64_t total, bool enabled, bool force);
void tvh_progress_update(struct tvh_progress *p, uint64_t done);
/* Ends the current line and starts over as `what` (a second pass). */
void tvh_progress_restart(struct tvh_progress *p, const char *what);
/* Ends the line; prints nothing if nothing was drawn. */
void tvh_progress_done(struct tvh_progress *p);

#endif /* TVH_PROGRESS_H */
