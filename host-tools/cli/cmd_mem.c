/* SPDX-License-Identifier: MIT */
/*
 * cmd_mem.c - `tracevisor mem`: the accesses to watched memory, one a line
 * in time order, or (--sharing, or `tracevisor c2c`) the cache-line
 * sharing report; mem.h does the work.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/mem.h"

/* This command's own options (beyond cli.h's shared ones). */
enum { OPT_MEM_SHARING = 0x200, OPT_MEM_JSON };

void mem_usage(FILE *f)
{
	fprintf(f, "Usage: tracevisor %s [OPTIONS] FILE.tvt|CAPTURE-DIR\n", usage_name("mem"));
	fputs("Memory-access tracing (mem_watch, docs/MEMTRACE.md): every recorded\n"
	      "access to watched memory, one a line, in time order across CPUs:\n"
	      "\n"
	      "  cpu1 5000 0x401020 writer_b+0x4 w 4 gla=0x10008 gpa=0x10008 new=0x2 buf+0x8\n"
	      "\n"
	      "CPU, TSC, the instruction's address and symbol ('-': none), r, w or rw\n"
	      "(read-modify-write) with +lock when locked, the size in bytes ('?':\n"
	      "undecoded), the guest-linear and guest-physical addresses, old=/new=\n"
	      "values when recorded, then the words split=GPA2, string, stack,\n"
	      "undecoded, cpl=N when they apply, and the data's name: the guest's\n"
	      "label (a watch or label hypercall), else a kernel data symbol\n"
	      "(--system-map/--kallsyms), else an ELF symbol of --image.  Lines\n"
	      "starting with '#': the watches (before), the access counts, the\n"
	      "hypervisor's counters (recorded, filtered, collateral, steps,\n"
	      "undecoded, outside window) and the losses (after).\n"
	      "\n"
	      "--sharing (also 'tracevisor c2c'): one row per 64-byte cache line\n"
	      "(guest-physical), like perf c2c's Shared Data Cache Line Table:\n"
	      "\n"
	      "  line 0x10000 buf+0x0 cpus 0,1 reads 0 writes 8 locked 0 transfers 7 false-sharing offsets +0x0,+0x8\n"
	      "    +0x0 size 4 cpus 0 reads 0 writes 4 locked 0: 0x401005 writer_a+0x5 x4\n"
	      "\n"
	      "transfers: consecutive accesses (time order) by different CPUs, one\n"
	      "of them a write; sharing: private, read-shared, true-sharing (a byte\n"
	      "one CPU writes, another touches) or false-sharing (CPUs write, but\n"
	      "never touch each other's bytes).  Sorted by transfers.\n"
	      "\n"
	      "Options:\n"
	      "  --sharing           the cache-line sharing report\n"
	      "  --json              JSON instead of text\n"
	      "  --cpu N             only CPU N's accesses (watches and counters: all)\n"
	      "  --top N             code locations per offset in the report (default 3,\n"
	      "                      0: all)\n"
	      IMAGE_HELP
	      "  --no-symbols        addresses only (the guest's labels still name data)\n"
	      "  -o, --output FILE   write there instead of stdout\n"
	      COMMON_HELP
	      EXIT_HELP
	      "\nExamples:\n"
	      "  tracevisor mem capture/ --system-map System.map\n"
	      "  tracevisor c2c capture/ --image payload.elf --json\n", f);
}

struct mem_opts {
	bool sharing, json, no_symbols;
	unsigned top;
};

static int mem_opt(int opt, const char *arg, void *ctx)
{
	struct mem_opts *o = ctx;
	char *end;
	unsigned long v;

	switch (opt) {
	case OPT_MEM_SHARING:
		o->sharing = true;
		return 0;
	case OPT_MEM_JSON:
		o->json = true;
		return 0;
	case OPT_NO_SYMBOLS:
		o->no_symbols = true;
		return 0;
	case OPT_TOP:
		errno = 0;
		v = strtoul(arg, &end, 10);
		if (!*arg || *end || errno || *arg == '-' || v > 1000000)
			return usage_error("bad --top '%s' (0..1000000)", arg);
		o->top = (unsigned)v;
		return 0;
	default:
		return usage_error("bad option");
	}
}

int cmd_mem(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "output", required_argument, NULL, 'o' },
		{ "cpu", required_argument, NULL, OPT_CPU },
		IMAGE_LONGOPTS,
		{ "sharing", no_argument, NULL, OPT_MEM_SHARING },
		{ "json", no_argument, NULL, OPT_MEM_JSON },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "no-symbols", no_argument, NULL, OPT_NO_SYMBOLS },
		{ NULL, 0, NULL, 0 },
	};
	struct common c = { .cpu = -1 };
	struct mem_opts mo = { .top = 3, .sharing = !strcmp(cmd_name, "c2c") };
	struct tvh_mem_sharing sh;
	struct tvh_walk_opts wo;
	struct tvh_symtab *st;
	struct tvt_reader r;
	struct tvh_stats s;
	struct tvh_mem m;
	const char *outp;
	FILE *out;
	int ret;

	ret = parse_file_cmd(argc, argv, "hqo:", lo, &c, mem_opt, &mo, mem_usage);
	if (ret != CMD_GO)
		goto out;
	ret = open_with_modules(&c, &r, argv[optind]);
	if (ret)
		goto out;
	outp = c.out ? c.out : "-";
	out = open_out(outp, "w");
	if (!out) {
		tvt_reader_close(&r);
		ret = EXIT_ERR;
		goto out;
	}
	tvh_mem_init(&m);
	m.only_cpu = c.cpu;
	progress_init(&c, &r, "mem");
	/* Every CPU: a label armed on one CPU names what another touches. */
	wo = (struct tvh_walk_opts){ .cpu = -1, .progress = &c.prog };
	ret = tvh_walk(&r, &wo, tvh_mem_event, &m, &s);
	tvh_progress_done(&c.prog);
	st = mo.no_symbols ? NULL : &c.st;
	if (!ret && mo.sharing) {
		ret = tvh_mem_sharing_build(&m, &sh);
		if (!ret) {
			ret = tvh_mem_sharing_write(&sh, &m, st, &s, mo.top, mo.json, out);
			tvh_mem_sharing_free(&sh);
		}
	} else if (!ret) {
		ret = tvh_mem_list(&m, st, &s, mo.json, out);
	}
	if (ret == -TVH_ERR_IO) {
		msg("%s: write failed: %s", outp, strerror(errno));
		discard_out(out, outp);
		ret = EXIT_ERR;
	} else if (ret) {
		discard_out(out, outp);
		ret = walk_failed(ret, argv[optind]);
	} else {
		ret = close_out(out, outp);
		if (!ret) {
			if (c.cpu >= 0 && !tvh_stats_cpu(&s, (uint32_t)c.cpu))
				msg("%s: no data for CPU %" PRId64, argv[optind], c.cpu);
			if (!c.quiet && m.bad)
				msg("%s: %" PRIu64 " malformed memory records (not listed)",
				    argv[optind], m.bad);
			ret = finish_walk(0, &s, argv[optind]);
		}
	}
	tvh_mem_free(&m);
	tvh_stats_free(&s);
	tvt_reader_close(&r);
out:
	common_free(&c);
	return ret;
}
