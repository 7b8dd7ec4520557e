/* SPDX-License-Identifier: MIT */
/*
 * cmd_pt_decode.c - `tracevisor pt-decode`: a CPU's Intel PT stream
 * decoded with libipt, one instruction or branch per line (pt.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/pt.h"

void pt_decode_usage(FILE *f)
{
	fputs("Usage: tracevisor pt-decode FILE.tvt --cpu N [--elf PATH[@BASE]...]\n"
	      "       tracevisor pt-decode --raw FILE.pt --elf PATH[@BASE]...\n"
	      "Decode a CPU's Intel PT stream with libipt's instruction-flow decoder\n"
	      "over an image built from the ELF files' executable segments, and\n"
	      "print each instruction (or, with --branches, each taken transfer).\n"
	      "Decode errors are printed with their stream offset; decoding resumes\n"
	      "at the next PSB.  The stream is decoded in runs split at gaps between\n"
	      "PT chunks and at the losses the CPU's PT_SYNC records count (pt_lost\n"
	      "grew: a cut), each printed as a [gap ...] line.  Code the ELF files\n"
	      "do not hold is read from the capture's code snapshots (the page as it\n"
	      "was at the decoder's time in its address space): a capture with\n"
	      "snapshots decodes with no --elf.\n"
	      "\n"
	      "  --cpu N             the CPU (required with a .tvt)\n"
	      "  --elf PATH[@BASE]   code for the decoder and symbols (repeatable)\n"
	      "  --raw               FILE is a raw PT stream (e.g. from 'tracevisor pt')\n"
	      "  --branches          print 'from -> to kind' for taken transfers only\n"
	      "  --pt-cpu F/M[/S]    the traced CPU's family/model/stepping (errata)\n"
	      "  --no-symbols        addresses only\n"
	      "  -q, --quiet         no summary or progress on stderr\n"
	      "      --progress      progress on stderr even for small files\n"
	      "  -h, --help          this text\n", f);
}

struct ptd_opts {
	bool raw;
	bool no_symbols;
	struct tvh_pt_opts pt;
};

static int ptd_opt(int opt, const char *arg, void *ctx)
{
	struct ptd_opts *p = ctx;

	switch (opt) {
	case OPT_RAW:
		p->raw = true;
		return 0;
	case OPT_BRANCHES:
		p->pt.branches = true;
		return 0;
	case OPT_NO_SYMBOLS:
		p->no_symbols = true;
		return 0;
	case OPT_PT_CPU:
		if (tvh_pt_parse_cpu(arg, &p->pt.cpu))
			return usage_error("bad --pt-cpu '%s' (want FAMILY/MODEL[/STEPPING])", arg);
		return 0;
	default:
		return usage_error("bad option");
	}
}

struct ptd_print {
	struct tvh_symtab *st;
};

static int ptd_item(void *ctx, const struct tvh_pt_item *it)
{
	struct ptd_print *p = ctx;
	const struct pt_event *ev = it->event;

	switch (it->kind) {
	case TVH_PT_SYNC:
		printf("[sync at offset 0x%" PRIx64 "]\n", it->offset);
		break;
	case TVH_PT_END:
		printf("[end of trace at offset 0x%" PRIx64 "]\n", it->offset);
		break;
	case TVH_PT_ERROR:
		printf("[error at offset 0x%" PRIx64, it->offset);
		if (it->ip)
			printf(", last ip 0x%" PRIx64, it->ip);
		printf(": %s]\n", tvh_pt_errstr(it->err));
		break;
	case TVH_PT_INSN: {
		char raw[3 * 15 + 1];
		int n = 0;

		for (unsigned i = 0; i < it->insn->size && i < 15; i++)
			n += snprintf(raw + n, sizeof(raw) - (size_t)n, "%s%02x",
				      i ? " " : "", it->insn->raw[i]);
		raw[n] = 0;
		printf("0x%016" PRIx64 "  %-30s %-8s", it->insn->ip, raw,
		       tvh_pt_iclass_name(it->insn->iclass));
		print_sym(p->st, it->insn->ip);
		putchar('\n');
		break;
	}
	case TVH_PT_BRANCH:
		printf("0x%" PRIx64, it->from);
		print_sym(p->st, it->from);
		printf(" -> 0x%" PRIx64, it->to);
		print_sym(p->st, it->to);
		printf(" %s\n", tvh_pt_iclass_name(it->iclass));
		break;
	case TVH_PT_EVENT:
		printf("[%s", tvh_pt_event_name(ev->type));
		switch (ev->type) {
		case ptev_enabled:
			printf(" 0x%" PRIx64 "%s", ev->variant.enabled.ip,
			       ev->variant.enabled.resumed ? " resumed" : "");
			break;
		case ptev_disabled:
			if (!ev->ip_suppressed)
				printf(" 0x%" PRIx64, ev->variant.disabled.ip);
			break;
		case ptev_async_disabled:
			printf(" at 0x%" PRIx64, ev->variant.async_disabled.at);
			break;
		case ptev_async_branch:
			printf(" 0x%" PRIx64 " -> 0x%" PRIx64, ev->variant.async_branch.from,
			       ev->variant.async_branch.to);
			break;
		case ptev_paging:
			printf(" cr3=0x%" PRIx64, ev->variant.paging.cr3);
			break;
		case ptev_async_paging:
			printf(" cr3=0x%" PRIx64 " at 0x%" PRIx64,
			       ev->variant.async_paging.cr3, ev->variant.async_paging.ip);
			break;
		case ptev_overflow:
			if (!ev->ip_suppressed)
				printf(" resume 0x%" PRIx64, ev->variant.overflow.ip);
			break;
		case ptev_exec_mode:
			printf(" %s", ev->variant.exec_mode.mode == ptem_64bit ? "64-bit" :
			       ev->variant.exec_mode.mode == ptem_32bit ? "32-bit" :
			       ev->variant.exec_mode.mode == ptem_16bit ? "16-bit" : "unknown");
			break;
		default:
			break;
		}
		if (ev->has_tsc)
			printf(" tsc=%" PRIu64, ev->tsc);
		printf("]\n");
		break;
	}
	return 0;
}

static void print_cut(const struct tvh_pt_cut *cut)
{
	printf("[gap: %" PRIu64 " PT bytes lost at offset 0x%" PRIx64
	       " (counted by PT_SYNC); decoding resumes at the next PSB]\n",
	       cut->lost, cut->offset);
}


int cmd_pt_decode(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "cpu", required_argument, NULL, OPT_CPU },
		{ "elf", required_argument, NULL, OPT_ELF },
		{ "image", required_argument, NULL, OPT_ELF },
		{ "raw", no_argument, NULL, OPT_RAW },
		{ "branches", no_argument, NULL, OPT_BRANCHES },
		{ "pt-cpu", required_argument, NULL, OPT_PT_CPU },
		{ "no-symbols", no_argument, NULL, OPT_NO_SYMBOLS },
		{ NULL, 0, NULL, 0 },
	};
	struct common c = { .cpu = -1 };
	struct ptd_opts po = { 0 };
	struct tvh_pt_stream ps = { 0 };
	struct tvh_pt_stats total = { 0 };
	struct tvh_stats s = { 0 };
	struct pt_image *img = NULL;
	struct ptd_print pp;
	bool damaged = false;
	size_t ci = 0;
	int ret;

	ret = parse_file_cmd(argc, argv, "hq", lo, &c, ptd_opt, &po, pt_decode_usage);
	if (ret != CMD_GO)
		goto out;
	if (!po.raw && c.cpu < 0) {
		ret = usage_error("missing --cpu N");
		goto out;
	}
	ret = load_elfs(&c);
	if (ret)
		goto out;
	if (tvh_pt_image(&c.st, &img)) {
		msg("cannot build the decoder image");
		ret = EXIT_ERR;
		goto out;
	}
	if (po.raw) {
		struct tvh_pt_run *run = calloc(1, sizeof(*run));

		if (!run) {
			ret = EXIT_ERR;
			goto out;
		}
		ret = read_file(argv[optind], &run->data, &run->len);
		if (ret) {
			free(run);
			goto out;
		}
		ps.runs = run;
		ps.nruns = 1;
		ps.bytes = run->len;
	} else {
		struct tvt_reader r;

		ret = open_trace(argv[optind], &r);
		if (ret)
			goto out;
		ret = load_snapshots(&c, &r);
		if (ret) {
			tvt_reader_close(&r);
			ret = walk_failed(ret, argv[optind]);
			goto out;
		}
		po.pt.snap = c.snap;
		progress_init(&c, &r, "pt-decode");
		ret = tvh_pt_collect(&r, (uint32_t)c.cpu, &ps, &s, &c.prog);
		tvh_progress_done(&c.prog);
		tvt_reader_close(&r);
		if (ret == -TVH_ERR_NOT_FOUND) {
			msg("%s: no PT data for CPU %" PRId64, argv[optind], c.cpu);
			ret = EXIT_ERR;
			goto out;
		}
		if (ret) {
			ret = walk_failed(ret, argv[optind]);
			goto out;
		}
		damaged = tvh_stats_damaged(&s);
		po.pt.times = ps.times;
		po.pt.ntimes = ps.ntimes;
	}
	if (!have_code(&c))
		msg("no --elf given and no code snapshots in the capture: every"
		    " instruction will fail to decode (no code)");
	pp.st = po.no_symbols ? NULL : &c.st;
	for (size_t i = 0; i < ps.nruns; i++) {
		const struct tvh_pt_run *run = &ps.runs[i];
		struct tvh_pt_stats st;
		uint64_t prev_end = i ? ps.runs[i - 1].offset + ps.runs[i - 1].len : 0;

		/* In stream order: cuts (PT_SYNC-counted losses), gaps, cuts. */
		while (ci < ps.ncuts && ps.cuts[ci].offset <= prev_end)
			print_cut(&ps.cuts[ci++]);
		if (run->offset > prev_end)
			printf("[gap: %" PRIu64 " PT bytes lost before offset 0x%" PRIx64 "]\n",
			       run->offset - prev_end, run->offset);
		while (ci < ps.ncuts && ps.cuts[ci].offset <= run->offset)
			print_cut(&ps.cuts[ci++]);
		ret = tvh_pt_decode(run->data, run->len, run->offset, img, &po.pt,
				    ptd_item, &pp, &st);
		if (ret) {
			msg("cannot decode (libipt setup failed)");
			ret = EXIT_ERR;
			goto out;
		}
		total.insns += st.insns;
		total.branches += st.branches;
		total.events += st.events;
		total.syncs += st.syncs;
		total.errors += st.errors;
	}
	while (ci < ps.ncuts)
		print_cut(&ps.cuts[ci++]);
	if (fflush(stdout) || ferror(stdout)) {
		msg("writing failed: %s", strerror(errno));
		ret = EXIT_ERR;
		goto out;
	}
	if (!c.quiet)
		fprintf(stderr, "tracevisor pt-decode: %" PRIu64 " PT bytes, %" PRIu64
			" lost in gaps, %" PRIu64 " lost at %zu cuts (counted by PT_SYNC); %"
			PRIu64 " instructions, %" PRIu64 " branches, %" PRIu64
			" events, %" PRIu64 " syncs, %" PRIu64 " decode errors\n",
			ps.bytes, ps.gap_bytes, ps.cut_bytes, ps.ncuts, total.insns,
			total.branches, total.events, total.syncs, total.errors);
	if (!total.syncs)
		msg("no PSB found: nothing decoded");
	if (damaged)
		warn_damage(&s, argv[optind]);
	ret = (damaged || total.errors || !total.syncs) ? EXIT_DAMAGED : EXIT_OK;
out:
	if (img)
		pt_image_free(img);
	tvh_pt_stream_free(&ps);
	tvh_stats_free(&s);
	common_free(&c);
	return ret;
}
