/* SPDX-License-Identifier: MIT */
/*
 * cmd_report.c - `tracevisor report`: the hottest functions and edges
 * (report.h does the work).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/pwalk.h"
#include "host-tools/lib/report.h"

void report_usage(FILE *f)
{
	fprintf(f, "Usage: tracevisor %s [OPTIONS] FILE.tvt|CAPTURE-DIR\n", usage_name("report"));
	fputs("Where the traced code went: the hottest functions and the hottest\n"
	      "edges, from the branch records.\n"
	      "\n"
	      "  functions  'branches': branches landing in the function (calls,\n"
	      "             jumps and returns into it: each starts one executed basic\n"
	      "             block); 'blocks': distinct basic blocks executed in it.\n"
	      "             Without a symbol for it, a target is its own row\n"
	      "             (module+offset, or the bare address).\n"
	      "  edges      from -> to pairs by how often the transfer was taken,\n"
	      "             with the branch kind.\n"
	      "Percentages are of all branches in the table's scope.  Rows with equal\n"
	      "counts are ordered by name or address: the output is deterministic.\n"
	      "\n"
	      "Options:\n"
	      "  --cpu N             only CPU N\n"
	      "  --per-cpu           one report per CPU instead of one for all\n"
	      "  --sort KEY          functions by 'branches' (default) or 'blocks'\n"
	      "  --top N             rows per table (default 20, 0: all)\n"
	      "  --phases            first, per boot phase (firmware, loader, kernel,\n"
	      "                      user) the branches, blocks and hottest functions:\n"
	      "                      loader = IMAGE records of kind loader (the OS\n"
	      "                      loader, the kernel's EFI stub); firmware =\n"
	      "                      firmware IMAGE records, and lower-half code before\n"
	      "                      the CPU first went to the upper half; kernel =\n"
	      "                      upper half, the kernel's symbols (--system-map),\n"
	      "                      vmlinux; user = lower-half code outside images\n"
	      "                      after that (addresses, not CPL: records carry none).\n"
	      "                      Then per phase, for PT: instructions decoded (by the\n"
	      "                      address of the block they ran in), PT bytes decoded,\n"
	      "                      decode errors (at the error's last IP) and the PT\n"
	      "                      bytes skipped after them (to the sync decoding\n"
	      "                      resumed at), and 'decoded' = insns / (insns + an\n"
	      "                      ESTIMATE of the insns in the skipped bytes: skipped x\n"
	      "                      the phase's insns per decoded PT byte, or the\n"
	      "                      capture's where the phase decoded no byte); '-' where\n"
	      "                      unknown (branch records do not count instructions)\n"
	      IMAGE_HELP
	      "  -j, --threads N     decoding threads (default: one per processor)\n"
	      DECODER_USAGE
	      "  -o, --output FILE   write there instead of stdout\n"
	      COMMON_HELP
	      PT_HELP
	      EXIT_HELP
	      "\nExamples:\n"
	      "  tracevisor report trace.tvt --image build/payload.so@0x1e1ef000\n"
	      "  tracevisor report trace.tvt --image-dir fw/ --per-cpu --sort blocks --top 5\n", f);
}

struct report_opts {
	enum tvh_report_sort sort;
	size_t top;
	bool per_cpu;
	bool phases;
	unsigned threads;
};

static int report_opt(int opt, const char *arg, void *ctx)
{
	struct report_opts *o = ctx;
	char *end;
	unsigned long long v;

	switch (opt) {
	case OPT_SORT:
		if (!strcmp(arg, "branches"))
			o->sort = TVH_SORT_BRANCHES;
		else if (!strcmp(arg, "blocks"))
			o->sort = TVH_SORT_BLOCKS;
		else
			return usage_error("bad --sort '%s' (branches or blocks)", arg);
		return 0;
	case OPT_TOP:
		errno = 0;
		v = strtoull(arg, &end, 10);
		if (!*arg || *end || errno || *arg == '-')
			return usage_error("bad --top '%s'", arg);
		o->top = (size_t)v;
		return 0;
	case OPT_PER_CPU:
		o->per_cpu = true;
		return 0;
	case OPT_PHASES:
		o->phases = true;
		return 0;
	case 'j':
	case OPT_THREADS:
		return parse_threads(arg, &o->threads);
	default:
		return usage_error("bad option");
	}
}

/* Per-CPU counts kept in CPU order (end() runs in that order). */
struct report_run {
	struct tvh_report_cpu **v;
	size_t n;
};

static void *report_begin(void *ctx, uint32_t cpu)
{
	struct tvh_report_cpu *rc = calloc(1, sizeof(*rc));

	(void)ctx;
	if (rc)
		rc->cpu = cpu;
	return rc;
}

static int report_end(void *ctx, uint32_t cpu, void *cpu_ctx, bool aborted)
{
	struct report_run *run = ctx;
	struct tvh_report_cpu **v;

	(void)cpu;
	v = aborted ? NULL : realloc(run->v, (run->n + 1) * sizeof(*v));
	if (!v) {
		tvh_report_cpu_free(cpu_ctx);
		free(cpu_ctx);
		return aborted ? 0 : -TVH_ERR_NOMEM;
	}
	run->v = v;
	run->v[run->n++] = cpu_ctx;
	return 0;
}

int cmd_report(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "output", required_argument, NULL, 'o' },
		{ "cpu", required_argument, NULL, OPT_CPU },
		IMAGE_LONGOPTS,
		DECODER_LONGOPT,
		{ "sort", required_argument, NULL, OPT_SORT },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "per-cpu", no_argument, NULL, OPT_PER_CPU },
		{ "phases", no_argument, NULL, OPT_PHASES },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ NULL, 0, NULL, 0 },
	};
	static const struct tvh_pwalk_ops ops = {
		.begin = report_begin, .event = tvh_report_event, .end = report_end,
	};
	struct common c = { .cpu = -1 };
	struct report_opts ro = { .sort = TVH_SORT_BRANCHES, .top = 20 };
	struct report_run run = { 0 };
	struct pt_result pr;
	struct tvt_reader r;
	struct tvh_stats s;
	struct tvh_walk_opts wo;
	const char *outp;
	FILE *out;
	int ret;

	ret = parse_file_cmd(argc, argv, "hqo:j:", lo, &c, report_opt, &ro, report_usage);
	if (ret != CMD_GO)
		goto out;
	ret = open_with_modules(&c, &r, argv[optind]);
	if (ret)
		goto out;
	progress_init(&c, &r, "report");
	wo = (struct tvh_walk_opts){ .cpu = c.cpu, .progress = &c.prog };
	ret = pt_walk(&c, &r, &wo, ro.threads, &ops, &run, &s, &pr);
	tvh_progress_done(&c.prog);
	if (ret) {
		ret = walk_failed(ret, argv[optind]);
		goto done;
	}
	outp = c.out ? c.out : "-";
	out = open_out(outp, "w");
	if (!out) {
		ret = EXIT_ERR;
		goto done;
	}
	/* Events of other CPUs were filtered out: their counts are empty. */
	if (ro.per_cpu) {
		for (size_t i = 0; i < run.n && !ret; i++) {
			char title[32];
			struct tvh_report_opts o = { ro.sort, ro.top, title, ro.phases };

			if (c.cpu >= 0 && run.v[i]->cpu != (uint32_t)c.cpu)
				continue;
			snprintf(title, sizeof(title), "cpu%u", run.v[i]->cpu);
			if (i)
				fputc('\n', out);
			ret = tvh_report_write(&run.v[i], 1, &c.st, &o, out);
		}
	} else {
		char title[32];
		struct tvh_report_opts o = { ro.sort, ro.top, title, ro.phases };

		if (c.cpu >= 0)
			snprintf(title, sizeof(title), "cpu%" PRId64, c.cpu);
		else
			snprintf(title, sizeof(title), "all CPUs");
		ret = tvh_report_write(run.v, run.n, &c.st, &o, out);
	}
	if (ret) {
		msg("%s: %s", ret == -TVH_ERR_IO ? outp : argv[optind], tvh_errstr(ret));
		discard_out(out, outp);
		ret = EXIT_ERR;
	} else {
		ret = close_out(out, outp);
	}
	if (!ret)
		ret = finish_pt_walk(&s, &pr, argv[optind]);
done:
	for (size_t i = 0; i < run.n; i++) {
		tvh_report_cpu_free(run.v[i]);
		free(run.v[i]);
	}
	free(run.v);
	tvh_stats_free(&s);
	tvt_reader_close(&r);
out:
	common_free(&c);
	return ret;
}
