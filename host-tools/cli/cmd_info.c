/* SPDX-License-Identifier: MIT */
/*
 * cmd_info.c - `tracevisor info`: what a capture holds (info.h does the
 * work).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/pwalk.h"
#include "host-tools/lib/info.h"

void info_usage(FILE *f)
{
	fprintf(f, "Usage: tracevisor %s [OPTIONS] FILE.tvt|CAPTURE-DIR\n", usage_name("info"));
	fputs("What a capture holds: the file header (machine, session, creation\n"
	      "time, trace format), per CPU the trace source (mtf, lbr, bts, pt),\n"
	      "records, branches, trace windows, time span (first to last TSC, in\n"
	      "seconds with the recorded TSC frequency) and losses, and the buffer\n"
	      "sizes in force on the machine (record ring, PT stream ring, ToPA or\n"
	      "BTS output, drain tick: its CONFIG \"buffers\" record); the images the\n"
	      "trace names (IMAGE records); counts per record type; damage.\n"
	      "A capture directory (what 'tracevisor record' writes) is read through\n"
	      "its trace.tvt.\n"
	      "\n"
	      "Options:\n"
	      "  -o, --output FILE   write there instead of stdout\n"
	      COMMON_HELP
	      EXIT_HELP
	      "\nExample:\n"
	      "  tracevisor info build/run/trace.tvt\n", f);
}

int cmd_info(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	struct common c = { .cpu = -1 };
	struct tvt_reader r;
	struct tvh_stats s;
	struct tvh_info in;
	struct tvh_walk_opts wo;
	FILE *out;
	int ret;

	ret = parse_file_cmd(argc, argv, "hqo:", lo, &c, NULL, NULL, info_usage);
	if (ret != CMD_GO)
		goto out;
	ret = open_trace(argv[optind], &r);
	if (ret)
		goto out;
	progress_init(&c, &r, "info");
	tvh_info_init(&in);
	wo = (struct tvh_walk_opts){ .cpu = -1, .progress = &c.prog };
	ret = tvh_walk(&r, &wo, tvh_info_event, &in, &s);
	tvh_progress_done(&c.prog);
	if (ret) {
		ret = walk_failed(ret, argv[optind]);
	} else {
		out = open_out(c.out ? c.out : "-", "w");
		if (!out) {
			ret = EXIT_ERR;
		} else {
			char *file = NULL;

			tvt_resolve_path(argv[optind], &file);
			tvh_info_write(&in, &r, &s, file ? file : argv[optind], out);
			free(file);
			ret = close_out(out, c.out ? c.out : "-");
		}
		if (!ret)
			ret = finish_walk(0, &s, argv[optind]);
	}
	tvh_info_free(&in);
	tvh_stats_free(&s);
	tvt_reader_close(&r);
out:
	common_free(&c);
	return ret;
}
