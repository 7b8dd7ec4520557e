/* SPDX-License-Identifier: MIT */
/*
 * cmd_timeline.c - `tracevisor timeline` (old name `chrome`): call/return
 * slices per CPU as Chrome trace-event JSON (chrome.h does the work).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/pwalk.h"
#include "host-tools/lib/chrome.h"
#include "host-tools/lib/pt.h"

void timeline_usage(FILE *f)
{
	fprintf(f, "Usage: tracevisor %s [OPTIONS] FILE.tvt|CAPTURE-DIR -o OUT.json\n",
		usage_name("timeline"));
	fputs("Write Chrome trace-event JSON (open it in ui.perfetto.dev or\n"
	      "chrome://tracing): one track per CPU, calls/returns (and syscalls,\n"
	      "exceptions, interrupts) as nested slices named after the target's\n"
	      "symbol, instant events for CR3 changes, start/stop, markers, log\n"
	      "lines, images and lost records.  Time comes from the TSC and the\n"
	      "TSC frequency in the trace; without them, from sequence numbers.\n"
	      "'chrome' is the old name of this command (same options).\n"
	      "\n"
	      "Intel PT (source pt): with modules (--image, --image-dir) each CPU's PT\n"
	      "stream is decoded with libipt as script, report and coverage do, and its\n"
	      "calls and returns become the slices, timed by the PT stream's TSC\n"
	      "packets; PT losses and decode errors close the open slices and show as\n"
	      "instant events.  Without modules PT cannot be decoded: each CPU with PT\n"
	      "bytes is named on stderr.\n"
	      "\n"
	      "Options:\n"
	      "  -o, --output FILE   the JSON file ('-': stdout)\n"
	      IMAGE_HELP
	      "  --cpu N             only CPU N\n"
	      "  --sequence-time     use sequence numbers as time even with a TSC\n"
	      DECODER_USAGE
	      COMMON_HELP
	      EXIT_HELP
	      "\nExample:\n"
	      "  tracevisor timeline trace.tvt --image build/payload.so@0x1e1ef000 -o t.json\n", f);
}

static int seq_opt(int opt, const char *arg, void *ctx)
{
	(void)arg;
	if (opt != OPT_SEQ_TIME)
		return usage_error("bad option");
	*(bool *)ctx = true;
	return 0;
}

int cmd_timeline(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "output", required_argument, NULL, 'o' },
		{ "cpu", required_argument, NULL, OPT_CPU },
		IMAGE_LONGOPTS,
		DECODER_LONGOPT,
		{ "sequence-time", no_argument, NULL, OPT_SEQ_TIME },
		{ NULL, 0, NULL, 0 },
	};
	struct common c = { .cpu = -1 };
	struct tvh_chrome_opts co;
	struct tvh_chrome_stats cs;
	struct tvt_reader r;
	struct pt_image *img = NULL;
	struct tvh_ptf_image fimg = { 0 };
	struct tvh_ptbr_fast fast = { .image = &fimg };
	bool seq_time = false, libipt = false;
	FILE *out;
	int ret;

	ret = parse_file_cmd(argc, argv, "hqo:", lo, &c, seq_opt, &seq_time, timeline_usage);
	if (ret != CMD_GO)
		goto out;
	if (!c.out) {
		ret = usage_error("missing -o OUT.json");
		goto out;
	}
	ret = open_with_modules(&c, &r, argv[optind]);
	if (ret)
		goto out;
	out = open_out(c.out, "w");
	if (!out) {
		tvt_reader_close(&r);
		ret = EXIT_ERR;
		goto out;
	}
	/* PT needs the code bytes: the modules' segments, else snapshots. */
	ret = load_snapshots(&c, &r);
	if (ret) {
		msg("%s: code snapshots: %s", argv[optind], tvh_errstr(ret));
		discard_out(out, c.out);
		tvt_reader_close(&r);
		ret = EXIT_ERR;
		goto out;
	}
	libipt = have_code(&c) && use_libipt(&c);
	if (have_code(&c) && (tvh_pt_image(&c.st, &img) ||
			       (!libipt && tvh_ptf_image_from_symtab(&fimg, &c.st)))) {
		msg("cannot set up the PT decoder's image");
		if (img)
			pt_image_free(img);
		tvh_ptf_image_free(&fimg);
		discard_out(out, c.out);
		tvt_reader_close(&r);
		ret = EXIT_ERR;
		goto out;
	}
	progress_init(&c, &r, cmd_name);
	co = (struct tvh_chrome_opts){ .st = &c.st, .cpu = c.cpu,
				       .sequence_time = seq_time,
				       .progress = &c.prog, .pt_image = img,
				       .snap = c.snap };
	fast.snap = c.snap;
	co.pt_fast = libipt ? NULL : &fast;
	ret = tvh_chrome_write(&r, &co, out, &cs);
	if (img)
		pt_image_free(img);
	tvh_ptf_image_free(&fimg);
	tvh_progress_done(&c.prog);
	if (ret) {
		msg("%s: %s", ret == -TVH_ERR_IO ? c.out : argv[optind], tvh_errstr(ret));
		discard_out(out, c.out);
		ret = EXIT_ERR;
	} else {
		ret = close_out(out, c.out);
	}
	if (!ret) {
		if (!c.quiet)
			fprintf(stderr, "tracevisor %s: %s: %" PRIu64 " events (%"
				PRIu64 " slices, %" PRIu64 " instants), time from %s"
				"; %" PRIu64 " returns without a call, %" PRIu64
				" slices closed by loss\n", cmd_name, c.out, cs.events,
				cs.slices, cs.instants, cs.tsc_time ? "TSC" : "sequence numbers",
				cs.unmatched_returns, cs.closed_by_loss);
		if (cs.pt_decoded && cs.pt.cpus && !c.quiet)
			fprintf(stderr, "tracevisor %s: Intel PT of %u CPU%s: %" PRIu64
				" bytes decoded into %" PRIu64 " branches (%" PRIu64
				" slices), %" PRIu64 " syncs, %" PRIu64 " decode errors; lost %"
				PRIu64 " bytes in gaps, %" PRIu64 " at %" PRIu64
				" cuts (counted by PT_SYNC); decoder %s\n", cmd_name, cs.pt.cpus,
				cs.pt.cpus == 1 ? "" : "s", cs.pt.bytes, cs.pt.branches,
				cs.pt_slices, cs.pt.syncs, cs.pt.errors, cs.pt.gap_bytes,
				cs.pt.cut_bytes, cs.pt.cuts, libipt ? "libipt" : "fast");
		if (cs.pt_decoded && cs.pt.errors)
			msg("%" PRIu64 " PT decode errors (each closes the open slices; "
			    "decoding resumed at the next PSB): wrong or missing --image "
			    "code, or damaged PT", cs.pt.errors);
		if (!cs.pt_decoded)
			warn_pt_undecoded(&cs.walk, "PT needs the code to be decoded: the "
					  "capture has no code snapshots; give the modules with "
					  "--image PATH[@BASE] (or --image-dir)");
		ret = finish_walk(0, &cs.walk, argv[optind]);
		if (ret == EXIT_OK && cs.pt.errors)
			ret = EXIT_DAMAGED;
	}
	tvh_stats_free(&cs.walk);
	tvt_reader_close(&r);
out:
	common_free(&c);
	return ret;
}
