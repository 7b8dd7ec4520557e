/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tvt_cmds.c - libFuzzer target: a .tvt through the readers behind
 * the other commands fuzz_tvt does not run: `info` (per-CPU counters,
 * buffers, snapshots, memory counters), the IMAGE records as regions
 * (images.c), `report` (branch and edge counts, phases), `timeline`
 * (chrome.c's two passes, call depth) and `coverage` (drcov.c's blocks
 * against the IMAGE regions), each writing to /dev/null.  These are the
 * readers issue 20 found sized by CPU index; memory must follow content.
 */
#include <stdio.h>

#include "host-tools/lib/chrome.h"
#include "host-tools/lib/drcov.h"
#include "host-tools/lib/images.h"
#include "host-tools/lib/info.h"
#include "host-tools/lib/report.h"
#include "host-tools/lib/sym.h"
#include "host-tools/lib/tvt.h"
#include "host-tools/lib/walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct tvt_reader r;
	struct tvh_stats s;
	struct tvh_images im;
	struct tvh_regions regions = { 0 };
	struct tvh_symtab st;

	if (!null)
		null = fopen("/dev/null", "w");
	if (tvt_reader_open_mem(&r, data, size))
		return 0;
	{
		struct tvh_info in;

		tvh_info_init(&in);
		if (!tvh_walk(&r, NULL, tvh_info_event, &in, &s))
			tvh_info_write(&in, &r, &s, "fuzz.tvt", null);
		tvh_stats_free(&s);
		tvh_info_free(&in);
	}
	tvh_symtab_init(&st);
	/* Freed whatever it returns (part of the images on a walk error). */
	if (!tvh_images_collect(&r, &im) && !tvh_images_regions(&im, &regions) && regions.n)
		st.regions = &regions;
	tvh_images_free(&im);
	{
		struct tvh_report_cpu rc = { .cpu = 0 };
		struct tvh_report_cpu *v[1] = { &rc };
		struct tvh_report_opts o = { TVH_SORT_BLOCKS, 5, "all CPUs", true };

		if (!tvh_walk(&r, NULL, tvh_report_event, &rc, &s))
			tvh_report_write(v, 1, &st, &o, null);
		tvh_stats_free(&s);
		tvh_report_cpu_free(&rc);
	}
	{
		struct tvh_chrome_opts co = { .st = &st, .cpu = -1 };
		struct tvh_chrome_stats cs = { 0 };

		tvh_chrome_write(&r, &co, null, &cs);
		tvh_stats_free(&cs.walk);
	}
	if (st.regions) {
		struct tvh_drcov d;

		tvh_drcov_init(&d, &st);
		if (!tvh_walk(&r, NULL, tvh_drcov_event, &d, &s)) {
			tvh_drcov_write(&d, null, "tracevisor");
			tvh_drcov_write_modoff(&d, null);
		}
		tvh_stats_free(&s);
		tvh_drcov_free(&d);
	}
	tvh_symtab_free(&st);
	tvh_regions_free(&regions);
	tvt_reader_close(&r);
	return 0;
}
