/* SPDX-License-Identifier: MIT */
/*
 * cmd_script.c - `tracevisor script`: branches as text, symbolized, like
 * perf script (script.h does the work).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/pwalk.h"
#include "host-tools/lib/script.h"

void script_usage(FILE *f)
{
	fprintf(f, "Usage: tracevisor %s [OPTIONS] FILE.tvt|CAPTURE-DIR\n", usage_name("script"));
	fputs("Print the traced branches as text, one per line, like perf script:\n"
	      "\n"
	      "  cpu0   100  call      0x401005 main+0x5 (prog.c:7) => 0x401000 helper+0x0 (prog.c:2)\n"
	      "\n"
	      "CPU, sequence number, branch kind, from => to (func+off (file:line)\n"
	      "from DWARF, a PE's exports/COFF symbols, else module+offset, else the\n"
	      "bare address), then tsc=N when the record carries one and the flags.\n"
	      "Losses (GAP), malformed records (BAD, with their file offset) and\n"
	      "damaged chunks always print.  Each CPU stream is decoded on its own\n"
	      "thread; the output is CPU 0's lines, then CPU 1's, ... (each in\n"
	      "stream order), the same for any thread count.\n"
	      "\n"
	      "Options:\n"
	      "  --cpu N             only CPU N\n"
	      IMAGE_HELP
	      "  --all               every record, not only branches (as 'dump' shows them)\n"
	      "  --no-symbols        addresses only\n"
	      "  -j, --threads N     decoding threads (default: one per processor)\n"
	      DECODER_USAGE
	      "  -o, --output FILE   write there instead of stdout\n"
	      COMMON_HELP
	      PT_HELP
	      "A branch decoded from PT ends in pt@0xOFF (the decoder's stream offset);\n"
	      "its number is its index among the CPU's PT branches.  They come after\n"
	      "the CPU's records.\n"
	      EXIT_HELP
	      "\nExamples:\n"
	      "  tracevisor script trace.tvt --image vmlinux@0xffffffff9a000000\n"
	      "  tracevisor script capture/ --image-dir ovmf-debug/ --cpu 1 | less\n", f);
}

struct script_opts {
	bool all, no_symbols;
	unsigned threads;
};

static int script_opt(int opt, const char *arg, void *ctx)
{
	struct script_opts *o = ctx;

	switch (opt) {
	case OPT_ALL:
		o->all = true;
		return 0;
	case OPT_NO_SYMBOLS:
		o->no_symbols = true;
		return 0;
	case 'j':
	case OPT_THREADS:
		return parse_threads(arg, &o->threads);
	default:
		return usage_error("bad option");
	}
}

struct script_run {
	struct common *c;
	struct script_opts *o;
	FILE *out;
	bool failed;
};

/* The event callback gets this as a struct tvh_script: s comes first. */
struct script_cpu {
	struct tvh_script s;
	FILE *tmp;               /* this CPU's lines until the end */
	struct tvh_symtab st;    /* its own: caches and libdwfl are per thread */
};

static void *script_begin(void *ctx, uint32_t cpu)
{
	struct script_run *run = ctx;
	struct script_cpu *sc = calloc(1, sizeof(*sc));

	(void)cpu;
	if (!sc)
		return NULL;
	sc->tmp = tmpfile();
	tvh_symtab_init(&sc->st);
	if (!sc->tmp || (!run->o->no_symbols && tvh_symtab_clone(&sc->st, &run->c->st) < 0)) {
		if (sc->tmp)
			fclose(sc->tmp);
		tvh_symtab_free(&sc->st);
		free(sc);
		return NULL;
	}
	tvh_script_init(&sc->s, sc->tmp, &sc->st, run->o->all);
	return sc;
}

static int script_end(void *ctx, uint32_t cpu, void *cpu_ctx, bool aborted)
{
	struct script_run *run = ctx;
	struct script_cpu *sc = cpu_ctx;
	char buf[1 << 16];
	size_t n;
	int ret = 0;

	(void)cpu;
	if (!aborted) {
		if (ferror(sc->tmp) || fflush(sc->tmp)) {
			ret = -TVH_ERR_IO;
		} else {
			rewind(sc->tmp);
			while ((n = fread(buf, 1, sizeof(buf), sc->tmp)) > 0)
				if (fwrite(buf, 1, n, run->out) != n) {
					ret = -TVH_ERR_IO;
					break;
				}
		}
		if (ret)
			run->failed = true;
	}
	fclose(sc->tmp);
	tvh_symtab_free(&sc->st);
	free(sc);
	return ret;
}

int cmd_script(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "output", required_argument, NULL, 'o' },
		{ "cpu", required_argument, NULL, OPT_CPU },
		IMAGE_LONGOPTS,
		DECODER_LONGOPT,
		{ "all", no_argument, NULL, OPT_ALL },
		{ "no-symbols", no_argument, NULL, OPT_NO_SYMBOLS },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ NULL, 0, NULL, 0 },
	};
	static const struct tvh_pwalk_ops ops = {
		.begin = script_begin, .event = tvh_script_event, .end = script_end,
	};
	struct common c = { .cpu = -1 };
	struct script_opts so = { 0 };
	struct script_run run = { .c = &c, .o = &so };
	struct pt_result pr;
	struct tvt_reader r;
	struct tvh_stats s;
	struct tvh_walk_opts wo;
	const char *outp;
	int ret;

	ret = parse_file_cmd(argc, argv, "hqo:j:", lo, &c, script_opt, &so, script_usage);
	if (ret != CMD_GO)
		goto out;
	ret = open_with_modules(&c, &r, argv[optind]);
	if (ret)
		goto out;
	outp = c.out ? c.out : "-";
	run.out = open_out(outp, "w");
	if (!run.out) {
		tvt_reader_close(&r);
		ret = EXIT_ERR;
		goto out;
	}
	progress_init(&c, &r, "script");
	wo = (struct tvh_walk_opts){ .cpu = c.cpu, .progress = &c.prog };
	ret = pt_walk(&c, &r, &wo, so.threads, &ops, &run, &s, &pr);
	tvh_progress_done(&c.prog);
	if (ret == -TVH_ERR_IO || run.failed) {
		msg("%s: write failed: %s", outp, strerror(errno));
		discard_out(run.out, outp);
		ret = EXIT_ERR;
	} else if (ret) {
		discard_out(run.out, outp);
		ret = walk_failed(ret, argv[optind]);
	} else {
		ret = close_out(run.out, outp);
		if (!ret) {
			if (c.cpu >= 0 && !tvh_stats_cpu(&s, (uint32_t)c.cpu))
				msg("%s: no data for CPU %" PRId64, argv[optind], c.cpu);
			ret = finish_pt_walk(&s, &pr, argv[optind]);
		}
	}
	tvh_stats_free(&s);
	tvt_reader_close(&r);
out:
	common_free(&c);
	return ret;
}
