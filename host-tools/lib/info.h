/* SPDX-License-Identifier: MIT */
/*
 * info.h - what a capture holds, for `tracevisor info`: the file header,
 * per CPU the trace source (from the ring snapshots), the time span (first
 * and last TSC, in seconds with the TSC frequency), trace windows
 * (START/STOP) and losses; the images the trace names; then dump's
 * summary (counts per record type, losses, damage).
 */
#ifndef TVH_INFO_H
#define TVH_INFO_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "host-tools/lib/cputab.h"
#include "host-tools/lib/images.h"
#include "host-tools/lib/tvt.h"
#include "host-tools/lib/walk.h"

struct tvh_info_cpu {
	bool have_tsc;
	uint64_t first_tsc, last_tsc;
	uint64_t windows;        /* START records */
	uint64_t branches;
};

struct tvh_info {
	struct tvh_cputab cpus;  /* struct tvh_info_cpu */
	struct tvh_images images;
	int err;                 /* first allocation failure */
};

void tvh_info_init(struct tvh_info *in);
void tvh_info_free(struct tvh_info *in);

/* A tvh_walk callback (ctx = struct tvh_info).  Returns 0 or -TVH_ERR_NOMEM. */
int tvh_info_event(void *ctx, const struct tvh_event *ev);

/* Print it all; path and size name the file.  Returns 0 or -TVH_ERR_IO. */
int tvh_info_write(const struct tvh_info *in, const struct tvt_reader *r,
		   const struct tvh_stats *s, const char *path, FILE *out);

#endif /* TVH_INFO_H */
