/* SPDX-License-Identifier: MIT */
/*
 * cmd_pt.c - `tracevisor pt`: a CPU's raw Intel PT stream, for libipt's
 * ptdump and ptxed (pt.h does the work).
 */
#include <errno.h>
#include <inttypes.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/pt.h"

void pt_usage(FILE *f)
{
	fputs("Usage: tracevisor pt FILE.tvt --cpu N -o OUT.pt\n"
	      "Write CPU N's raw Intel PT byte stream, for libipt's ptdump and ptxed\n"
	      "(ptxed --pt OUT.pt --elf PATH:BASE ...).  Runs of the stream and the\n"
	      "gaps between them (lost PT data) are listed on stderr, with the\n"
	      "losses the CPU's PT_SYNC records count (cuts: the stream offsets go\n"
	      "on, the bytes do not belong together); the runs are written back to\n"
	      "back and unchanged, so decoders resynchronise at the next PSB, except\n"
	      "across a cut, where a decoder may report an error.\n"
	      "\n"
	      "  --cpu N             the CPU (required)\n"
	      "  -o, --output FILE   the PT file ('-': stdout)\n"
	      "  -q, --quiet         no run list or progress on stderr\n"
	      "      --progress      progress on stderr even for small files\n"
	      "  -h, --help          this text\n", f);
}

int cmd_pt(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "output", required_argument, NULL, 'o' },
		{ "cpu", required_argument, NULL, OPT_CPU },
		{ NULL, 0, NULL, 0 },
	};
	struct common c = { .cpu = -1 };
	struct tvt_reader r;
	struct tvh_stats s;
	FILE *out;
	int64_t n;
	int ret;

	ret = parse_file_cmd(argc, argv, "hqo:", lo, &c, NULL, NULL, pt_usage);
	if (ret != CMD_GO)
		goto out;
	if (c.cpu < 0 || !c.out) {
		ret = usage_error(c.cpu < 0 ? "missing --cpu N" : "missing -o OUT.pt");
		goto out;
	}
	ret = open_trace(argv[optind], &r);
	if (ret)
		goto out;
	out = open_out(c.out, "wb");
	if (!out) {
		tvt_reader_close(&r);
		ret = EXIT_ERR;
		goto out;
	}
	progress_init(&c, &r, "pt");
	n = tvh_pt_extract(&r, (uint32_t)c.cpu, out, c.quiet ? NULL : stderr, &s,
			   &c.prog);
	tvh_progress_done(&c.prog);
	if (n < 0)
		discard_out(out, c.out);
	else
		ret = close_out(out, c.out);
	if (n < 0) {
		if (n == -TVH_ERR_NOT_FOUND)
			msg("%s: no PT data for CPU %" PRId64, argv[optind], c.cpu);
		else
			msg("%s: %s", n == -TVH_ERR_IO ? c.out : argv[optind],
			    tvh_errstr((int)n));
		ret = EXIT_ERR;
	} else if (!ret) {
		if (!c.quiet)
			fprintf(stderr, "tracevisor pt: %s: %" PRId64 " bytes of CPU %"
				PRId64 "'s PT stream\n", c.out, n, c.cpu);
		warn_damage(&s, argv[optind]);
		ret = tvh_stats_damaged(&s) ? EXIT_DAMAGED : EXIT_OK;
	}
	tvh_stats_free(&s);
	tvt_reader_close(&r);
out:
	common_free(&c);
	return ret;
}
