/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tvt.c - libFuzzer target: a .tvt file through the reader, the
 * walk (record decoding, loss tracking), the parallel walk and the text
 * exporters (dump, script, mem's listing and sharing report), as
 * `tracevisor dump`/`script`/`mem` would see it.
 */
#include <stdio.h>

#include "host-tools/lib/dump.h"
#include "host-tools/lib/mem.h"
#include "host-tools/lib/pwalk.h"
#include "host-tools/lib/script.h"
#include "host-tools/lib/tvt.h"

static void *begin(void *ctx, uint32_t cpu)
{
	(void)cpu;
	return ctx;
}

static int count(void *ctx, const struct tvh_event *ev)
{
	(void)ev;
	__atomic_fetch_add((unsigned long *)ctx, 1, __ATOMIC_RELAXED);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	struct tvt_reader r;
	struct tvh_stats s;
	struct tvh_dump d;
	struct tvh_script sc;
	struct tvh_pwalk_ops ops = { .begin = begin, .event = count };
	unsigned long n = 0;

	if (!null)
		null = fopen("/dev/null", "w");
	if (tvt_reader_open_mem(&r, data, size))
		return 0;
	d = (struct tvh_dump){ .out = null, .st = NULL, .records = true };
	tvh_walk(&r, NULL, tvh_dump_event, &d, &s);
	tvh_dump_summary(null, &s);
	tvh_stats_free(&s);
	tvh_script_init(&sc, null, NULL, true);
	tvh_walk(&r, NULL, tvh_script_event, &sc, &s);
	tvh_stats_free(&s);
	tvh_pwalk(&r, NULL, 2, &ops, &n, &s);
	tvh_stats_free(&s);
	{
		struct tvh_mem m;
		struct tvh_mem_sharing sh;

		tvh_mem_init(&m);
		tvh_walk(&r, NULL, tvh_mem_event, &m, &s);
		tvh_mem_list(&m, NULL, &s, false, null);
		tvh_mem_list(&m, NULL, &s, true, null);
		if (!tvh_mem_sharing_build(&m, &sh)) {
			tvh_mem_sharing_write(&sh, &m, NULL, &s, 3, false, null);
			tvh_mem_sharing_write(&sh, &m, NULL, &s, 0, true, null);
			tvh_mem_sharing_free(&sh);
		}
		tvh_mem_free(&m);
		tvh_stats_free(&s);
	}
	tvt_reader_close(&r);
	return 0;
}
