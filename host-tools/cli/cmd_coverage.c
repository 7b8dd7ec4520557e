/* SPDX-License-Identifier: MIT */
/*
 * cmd_coverage.c - `tracevisor coverage` (old name `drcov`): basic-block
 * coverage, drcov for Lighthouse or module+offset (drcov.h does the work).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/pwalk.h"
#include "host-tools/lib/drcov.h"

void coverage_usage(FILE *f)
{
	const char *n = usage_name("coverage");

	fprintf(f, "Usage: tracevisor %s [OPTIONS] FILE.tvt|CAPTURE-DIR -o OUT\n", n);
	fputs("Basic-block coverage of the traced branches, for Lighthouse (IDA,\n"
	      "Binary Ninja), Lightkeeper (Ghidra), bncov, drcov2lcov:\n"
	      "  --format drcov   DynamoRIO's drcov format, version 2 (default)\n"
	      "  --format modoff  text, one 'module+offset' line per block (hex\n"
	      "                   offset from the module's base), '#' comments\n"
	      "A block runs from a branch target to the end of the next branch on\n"
	      "that CPU; the branch's length is decoded from the module's bytes,\n"
	      "else the block ends one byte past the branch address (counted as\n"
	      "approximate).  Only blocks inside a module (--image, --image-dir) are\n"
	      "written.  CPU streams are decoded in parallel and merged in CPU\n"
	      "order: blocks are listed once, first-seen on the lowest CPU first.\n"
	      "'drcov' is the old name of this command (same options).\n"
	      "\n"
	      "Options:\n"
	      "  -o, --output FILE   the output file ('-': stdout)\n"
	      "  --format FMT        drcov (default) or modoff\n"
	      IMAGE_HELP
	      "                      (at least one module, given or found, is needed;\n"
	      "                      a capture with code snapshots and no file: its\n"
	      "                      IMAGE records are the modules, block sizes\n"
	      "                      approximate)\n"
	      "  --cpu N             only CPU N's branches\n"
	      "  --flavor NAME       the 'DRCOV FLAVOR' (default tracevisor)\n"
	      "  -j, --threads N     decoding threads (default: one per processor)\n"
	      DECODER_USAGE
	      COMMON_HELP
	      PT_HELP
	      "From PT, a block starts at a transfer's target (the code from a PSB or\n"
	      "TIP.PGE up to the first transfer is not counted yet).\n"
	      EXIT_HELP
	      "\nExamples:\n"
	      "  tracevisor coverage trace.tvt --image prog@0x400000 -o prog.drcov\n"
	      "  tracevisor coverage capture/ --image-dir fw/ --format modoff -o cov.txt\n", f);
}

struct coverage_opts {
	const char *flavor;
	bool modoff;
	unsigned threads;
};

static int coverage_opt(int opt, const char *arg, void *ctx)
{
	struct coverage_opts *o = ctx;

	switch (opt) {
	case OPT_FLAVOR:
		if (!*arg || strchr(arg, '\n'))
			return usage_error("bad flavor");
		o->flavor = arg;
		return 0;
	case OPT_FORMAT:
		if (!strcmp(arg, "drcov"))
			o->modoff = false;
		else if (!strcmp(arg, "modoff"))
			o->modoff = true;
		else
			return usage_error("bad --format '%s' (drcov or modoff)", arg);
		return 0;
	case 'j':
	case OPT_THREADS:
		return parse_threads(arg, &o->threads);
	default:
		return usage_error("bad option");
	}
}

struct coverage_run {
	struct tvh_symtab *st;
	struct tvh_drcov total;
};

static void *coverage_begin(void *ctx, uint32_t cpu)
{
	struct coverage_run *run = ctx;
	struct tvh_drcov *d = malloc(sizeof(*d));

	(void)cpu;
	/* Block building only reads the symtab (find, code bytes): shared. */
	if (d)
		tvh_drcov_init(d, run->st);
	return d;
}

static int coverage_end(void *ctx, uint32_t cpu, void *cpu_ctx, bool aborted)
{
	struct coverage_run *run = ctx;
	int ret = aborted ? 0 : tvh_drcov_merge(&run->total, cpu_ctx);

	(void)cpu;
	tvh_drcov_free(cpu_ctx);
	free(cpu_ctx);
	return ret;
}

/*
 * With no file given: whether the capture has code snapshots, which then
 * decode its PT, the IMAGE records naming the modules.  Quiet (a missing
 * file is the usage error's business); keeps the store in c->snap.
 */
static bool snapshots_only(struct common *c, const char *arg)
{
	struct tvt_reader r;
	char *path = NULL;
	bool yes = false;

	if (tvt_resolve_path(arg, &path))
		return false;
	if (!tvt_reader_open(&r, path)) {
		yes = !load_snapshots(c, &r) && !tvh_snap_empty(c->snap);
		tvt_reader_close(&r);
	}
	free(path);
	return yes;
}

int cmd_coverage(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "output", required_argument, NULL, 'o' },
		{ "cpu", required_argument, NULL, OPT_CPU },
		IMAGE_LONGOPTS,
		DECODER_LONGOPT,
		{ "flavor", required_argument, NULL, OPT_FLAVOR },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ NULL, 0, NULL, 0 },
	};
	static const struct tvh_pwalk_ops ops = {
		.begin = coverage_begin, .event = tvh_drcov_event, .end = coverage_end,
	};
	struct common c = { .cpu = -1 };
	struct coverage_opts co = { .flavor = "tracevisor" };
	struct coverage_run run;
	struct pt_result pr;
	struct tvt_reader r;
	struct tvh_stats s;
	struct tvh_walk_opts wo;
	FILE *out;
	int ret;

	ret = parse_file_cmd(argc, argv, "hqo:j:", lo, &c, coverage_opt, &co, coverage_usage);
	if (ret != CMD_GO)
		goto out;
	if (!c.out) {
		ret = usage_error("missing -o OUT");
		goto out;
	}
	if (!c.nelfs && !c.image_dir && !snapshots_only(&c, argv[optind])) {
		ret = usage_error("at least one --elf/--image PATH[@BASE] or an --image-dir "
				  "is needed (coverage offsets are module-relative; a capture"
				  " with code snapshots uses its IMAGE records)");
		goto out;
	}
	ret = open_trace(argv[optind], &r);
	if (ret)
		goto out;
	ret = setup_modules(&c, &r, argv[optind]);
	if (!ret && !c.st.nmods && c.snap && c.regions.n) {
		/* Decoded from the snapshots; the IMAGE records are the modules. */
	} else if (!ret && !c.st.nmods && c.snap) {
		msg("%s: no module: the capture has code snapshots but no IMAGE record"
		    " to name blocks by (give --image)", argv[optind]);
		ret = EXIT_ERR;
	} else if (!ret && !c.st.nmods) {
		msg("%s: no module: none of the IMAGE records' files is in %s",
		    argv[optind], c.image_dir);
		ret = EXIT_ERR;
	}
	if (ret) {
		tvt_reader_close(&r);
		goto out;
	}
	progress_init(&c, &r, cmd_name);
	run.st = &c.st;
	tvh_drcov_init(&run.total, &c.st);
	wo = (struct tvh_walk_opts){ .cpu = c.cpu, .progress = &c.prog };
	ret = pt_walk(&c, &r, &wo, co.threads, &ops, &run, &s, &pr);
	tvh_progress_done(&c.prog);
	if (ret) {
		ret = walk_failed(ret, argv[optind]);
	} else {
		out = open_out(c.out, "wb");
		if (!out) {
			ret = EXIT_ERR;
		} else if (co.modoff ? tvh_drcov_write_modoff(&run.total, out) :
			   tvh_drcov_write(&run.total, out, co.flavor)) {
			msg("%s: write failed: %s", c.out, strerror(errno));
			discard_out(out, c.out);
			ret = EXIT_ERR;
		} else {
			ret = close_out(out, c.out);
		}
	}
	if (!ret) {
		const struct tvh_drcov_stats *ds = &run.total.stats;

		if (!c.quiet)
			fprintf(stderr, "tracevisor %s: %s: %zu blocks (%" PRIu64
				" with approximate size) in %u modules; dropped %"
				PRIu64 " outside modules, %" PRIu64 " crossing modules, %"
				PRIu64 " inconsistent, %" PRIu64 " too big\n", cmd_name,
				c.out, run.total.nbbs, ds->approx,
				c.st.nmods ? c.st.nmods : (unsigned)c.regions.n, ds->outside,
				ds->cross_module, ds->backwards, ds->too_big);
		if (!run.total.nbbs)
			msg("no basic block fell inside the given modules (check @BASE)");
		ret = finish_pt_walk(&s, &pr, argv[optind]);
	}
	tvh_drcov_free(&run.total);
	tvh_stats_free(&s);
	tvt_reader_close(&r);
out:
	common_free(&c);
	return ret;
}
