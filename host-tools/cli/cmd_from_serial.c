/* SPDX-License-Identifier: MIT */
/*
 * cmd_from_serial.c - `tracevisor from-serial`: a trace file from the
 * TVT1 lines of a serial log (serial_in.h does the work).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/serial_in.h"
#include "host-tools/lib/tvt.h"
#include "vmm/trace/format.h"

void from_serial_usage(FILE *f)
{
	fputs("Usage: tracevisor from-serial [OPTIONS] LOGFILE -o OUT.tvt\n"
	      "Rebuild a trace file from a serial log that holds the hypervisor's\n"
	      "TVT1 lines (docs/SERIAL-TRANSPORT.md), interleaved with anything\n"
	      "else.  Every line's CRC is checked; each CPU's records, PT bytes and\n"
	      "last ring header snapshot go into OUT.tvt.  What is missing is counted\n"
	      "and reported: lines (chunk number gaps), bad CRCs, malformed lines,\n"
	      "records (sequence number gaps, and before/after what was received as\n"
	      "the sender's end lines announce).\n"
	      "\n"
	      "  -o, --output FILE   the .tvt to write ('-': stdout)\n"
	      "      --machine NAME  machine name in the file (default: LOGFILE's name)\n"
	      "  -q, --quiet         only warnings and errors on stderr\n"
	      "  -h, --help          this text\n"
	      "\n"
	      "Exit status: 0 written (missing data is a warning with counts),\n"
	      "1 LOGFILE unreadable, no TVT1 data in it, or write failure, 2 usage.\n", f);
}

static int machine_opt(int opt, const char *arg, void *ctx)
{
	if (opt != OPT_MACHINE)
		return usage_error("bad option");
	if (strlen(arg) > TVT_MAX_NAME)
		return usage_error("--machine: longer than %u bytes", TVT_MAX_NAME);
	*(const char **)ctx = arg;
	return 0;
}

static void from_serial_report(const struct tvh_serial_in *in, const char *log,
			       const char *out, bool quiet)
{
	const struct tvh_serial_stats *st = &in->st;

	if (!quiet) {
		fprintf(stderr, "tracevisor from-serial: %s: %" PRIu64 " lines, %" PRIu64
			" TVT1 lines: %" PRIu64 " accepted, %" PRIu64 " bad CRC, %"
			PRIu64 " malformed", log, st->lines, st->tagged, st->accepted,
			st->bad_crc, st->malformed);
		if (st->unknown_kind || st->bad_content)
			fprintf(stderr, ", %" PRIu64 " of an unknown kind, %" PRIu64
				" with impossible content", st->unknown_kind, st->bad_content);
		fputc('\n', stderr);
		for (uint32_t i = 0; i < tvh_serial_in_cpu_limit(in); i++) {
			const struct tvh_serial_cpu_stats *c = tvh_serial_in_cpu(in, i);

			if (!c)
				continue;
			fprintf(stderr, "tracevisor from-serial: cpu%" PRIu32 ": %" PRIu64
				" records", c->cpu, c->records);
			if (c->have_seq)
				fprintf(stderr, " (seq %" PRIu64 "..%" PRIu64 ")",
					c->first_seq, c->next_seq - 1);
			fprintf(stderr, ", %" PRIu64 " PT bytes, %" PRIu64 " ring snapshots, %"
				PRIu64 " end lines; missing: %" PRIu64 " lines, %" PRIu64
				" records (gaps %" PRIu64 ", at the start %" PRIu64
				", at the end %" PRIu64 "; %" PRIu64 " never sent), %"
				PRIu64 " record pieces, %" PRIu64 " PT bytes",
				c->pt_bytes, c->headers, c->ends, c->chunks_missing,
				tvh_serial_missing(c), c->rec_gap, c->rec_head, c->rec_tail,
				c->rec_missed, c->pieces_dropped, c->pt_missing);
			if (c->dup_records || c->chunk_back)
				fprintf(stderr, "; %" PRIu64 " duplicate records, chunk numbers went back %"
					PRIu64 " times", c->dup_records, c->chunk_back);
			if (c->expanded)
				fprintf(stderr, "; %" PRIu64 " compact branches after a loss written as full ones",
					c->expanded);
			if (c->have_ring)
				fprintf(stderr, "; ring lost_records %" PRIu64,
					c->ring.lost_records);
			fputc('\n', stderr);
		}
		fprintf(stderr, "tracevisor from-serial: %s: %" PRIu64 " records, %" PRIu64
			" PT bytes of %" PRIu32 " CPUs\n", out, st->records, st->pt_bytes,
			st->cpus);
	}
	if (st->chunks_missing || st->rec_missing || st->bad_crc || st->malformed ||
	    st->pieces_dropped || st->pt_missing || st->bad_content)
		msg("warning: %s: data missing: %" PRIu64 " lines (chunk numbers), %"
		    PRIu64 " records, %" PRIu64 " PT bytes; %" PRIu64 " bad CRC, %"
		    PRIu64 " malformed lines", log, st->chunks_missing, st->rec_missing,
		    st->pt_missing, st->bad_crc, st->malformed);
}

int cmd_from_serial(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "output", required_argument, NULL, 'o' },
		{ "machine", required_argument, NULL, OPT_MACHINE },
		{ NULL, 0, NULL, 0 },
	};
	struct common c = { .cpu = -1 };
	const char *machine = NULL, *log;
	struct tvh_serial_in in;
	struct tvt_file_info info;
	struct tvt_writer w;
	struct timespec now;
	uint8_t *data = NULL;
	size_t len;
	FILE *out;
	int ret, err;

	ret = parse_opts(argc, argv, "hqo:", lo, &c, machine_opt, &machine);
	if (ret < 0) {
		from_serial_usage(stdout);
		ret = EXIT_OK;
		goto out;
	}
	if (ret)
		goto out;
	if (argc - optind != 1) {
		ret = usage_error(argc - optind ? "one LOGFILE expected" : "missing LOGFILE");
		goto out;
	}
	if (!c.out) {
		ret = usage_error("missing -o OUT.tvt");
		goto out;
	}
	log = argv[optind];
	ret = read_file(log, &data, &len);
	if (ret)
		goto out;
	if (!machine) {
		machine = strrchr(log, '/') ? strrchr(log, '/') + 1 : log;
		if (strlen(machine) > TVT_MAX_NAME)
			machine = "serial";
	}
	out = open_out(c.out, "wb");
	if (!out) {
		ret = EXIT_ERR;
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	info = (struct tvt_file_info){
		.session_id = 0,
		.created_unix_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec,
		.trace_version = TV_TRACE_VERSION,
		.machine = machine,
	};
	err = tvt_writer_init(&w, out, &info);
	tvh_serial_in_init(&in, &w);
	if (!err)
		err = tvh_serial_in_text(&in, (const char *)data, len);
	if (!err)
		err = tvh_serial_in_finish(&in);
	if (!err)
		err = tvt_writer_finish(&w);
	if (err) {
		msg("%s: %s", err == -TVH_ERR_IO ? c.out : log, tvh_errstr(err));
		discard_out(out, c.out);
		ret = EXIT_ERR;
	} else if (!in.st.accepted) {
		msg("%s: no TVT1 data (%" PRIu64 " lines, %" PRIu64 " with the tag: %" PRIu64
		    " bad CRC, %" PRIu64 " malformed)", log, in.st.lines, in.st.tagged,
		    in.st.bad_crc, in.st.malformed);
		discard_out(out, c.out);
		ret = EXIT_ERR;
	} else {
		ret = close_out(out, c.out);
		if (!ret)
			from_serial_report(&in, log, c.out, c.quiet);
	}
	tvh_serial_in_free(&in);
out:
	free(data);
	common_free(&c);
	return ret;
}
