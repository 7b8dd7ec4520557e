/* SPDX-License-Identifier: MIT */
/*
 * cmd_dump.c - `tracevisor dump`: every record of a trace, one line each,
 * and a summary (dump.h does the work).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/dump.h"
#include "host-tools/lib/walk.h"

void dump_usage(FILE *f)
{
	fputs("Usage: tracevisor dump [OPTIONS] FILE.tvt|CAPTURE-DIR\n"
	      "Print every record of a trace file, one line each (seq, cpu, type,\n"
	      "fields; branches as 'from -> to kind'), then a summary: records per\n"
	      "type and per CPU, lost records (sequence gaps, LOST records, ring\n"
	      "counters), malformed records and damaged chunks.\n"
	      "\n"
	      "  --cpu N             only CPU N's lines (the summary covers every CPU)\n"
	      "  --image PATH[@BASE] symbolize branch addresses as func+off (file:line)\n"
	      "                      with this ELF or PE/COFF image loaded at BASE\n"
	      "                      (repeatable; --elf is the same option)\n"
	      "  --image-dir DIR     also load the trace's IMAGE records' files from DIR\n"
	      "  --kallsyms FILE, --system-map FILE  kernel symbols (as for script)\n"
	      "  -s, --summary-only  no record lines\n"
	      "      --no-summary    no summary\n"
	      "  -q, --quiet         no progress on stderr\n"
	      "      --progress      progress on stderr even for small files\n"
	      "  -h, --help          this text\n"
	      "\n"
	      "Exit status: 0 clean, 1 error, 2 usage, 3 damaged input (still dumped).\n", f);
}

struct dump_opts {
	bool summary_only;
	bool no_summary;
};

static int dump_opt(int opt, const char *arg, void *ctx)
{
	struct dump_opts *d = ctx;

	(void)arg;
	if (opt == 's')
		d->summary_only = true;
	else if (opt == OPT_NO_SUMMARY)
		d->no_summary = true;
	else
		return usage_error("bad option");
	return 0;
}

int cmd_dump(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "cpu", required_argument, NULL, OPT_CPU },
		IMAGE_LONGOPTS,
		{ "summary-only", no_argument, NULL, 's' },
		{ "no-summary", no_argument, NULL, OPT_NO_SUMMARY },
		{ NULL, 0, NULL, 0 },
	};
	struct common c = { .cpu = -1 };
	struct dump_opts d = { 0 };
	struct tvt_reader r;
	struct tvh_stats s;
	struct tvh_dump dc;
	struct tvh_walk_opts wo;
	int ret;

	ret = parse_file_cmd(argc, argv, "hqs", lo, &c, dump_opt, &d, dump_usage);
	if (ret != CMD_GO)
		goto out;
	ret = load_elfs(&c);
	if (ret)
		goto out;
	ret = open_trace(argv[optind], &r);
	if (ret)
		goto out;
	ret = load_images(&c, &r, argv[optind]);
	if (ret) {
		tvt_reader_close(&r);
		goto out;
	}
	progress_init(&c, &r, "dump");
	dc = (struct tvh_dump){ .out = stdout, .st = &c.st, .records = !d.summary_only };
	wo = (struct tvh_walk_opts){ .cpu = c.cpu, .progress = &c.prog };
	if (dc.records)
		tvh_dump_header(stdout, &r, true);
	ret = walk_failed(tvh_walk(&r, &wo, tvh_dump_event, &dc, &s), argv[optind]);
	tvh_progress_done(&c.prog);
	if (!ret) {
		if (!d.no_summary) {
			if (!dc.records)
				tvh_dump_header(stdout, &r, false);
			tvh_dump_summary(stdout, &s);
		}
		if (c.cpu >= 0 && !tvh_stats_cpu(&s, (uint32_t)c.cpu))
			msg("%s: no data for CPU %" PRId64, argv[optind], c.cpu);
		warn_damage(&s, argv[optind]);
		ret = tvh_stats_damaged(&s) ? EXIT_DAMAGED : EXIT_OK;
	}
	if (fflush(stdout) || ferror(stdout)) {
		msg("writing the dump failed: %s", strerror(errno));
		ret = EXIT_ERR;
	}
	tvh_stats_free(&s);
	tvt_reader_close(&r);
out:
	common_free(&c);
	return ret;
}
