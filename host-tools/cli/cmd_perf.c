/* SPDX-License-Identifier: MIT */
/*
 * cmd_perf.c - the perf-style commands of the CLI: info, script, report,
 * coverage (alias drcov), timeline (alias chrome).  Shared CLI plumbing
 * is in main.c (cli.h); the work is in the library (info.h, script.h,
 * report.h, drcov.h, chrome.h over pwalk.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-tools/lib/chrome.h"
#include "host-tools/cli/cli.h"
#include "host-tools/lib/drcov.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/info.h"
#include "host-tools/lib/ptbranch.h"
#include "host-tools/lib/pwalk.h"
#include "host-tools/lib/report.h"
#include "host-tools/lib/script.h"

/* Text every symbolizing command's --help shares. */
#define IMAGE_HELP \
	"  --image PATH[@BASE] a module: ELF (vmlinux, kernel modules, user\n" \
	"                      binaries, gnu-efi .so) or PE/COFF (UEFI drivers)\n" \
	"                      loaded at BASE (repeatable; --elf is the same)\n" \
	"  --image-dir DIR     for each IMAGE record of the trace, load the file\n" \
	"                      DIR holds for its name (debug path, FvFile GUID,\n" \
	"                      file name) at the recorded base; KASLR kernels\n" \
	"                      come out right from the kernel's IMAGE record\n"
/* script, report, coverage: PT captures (pt_walk). */
#define PT_HELP \
	"\nIntel PT (source pt): with modules (--image, --image-dir) each CPU's PT\n" \
	"stream is decoded with libipt over the modules' code bytes (the ELF/PE\n" \
	"files given) and each taken transfer is used as a branch; PT losses\n" \
	"(gaps, PT_SYNC cuts) and decode errors are PT_GAP lines and restart\n" \
	"decoding at the next PSB.  Without modules PT cannot be decoded: each\n" \
	"CPU with PT bytes is named on stderr.\n"
#define COMMON_HELP \
	"  -q, --quiet         no progress or summary on stderr\n" \
	"      --progress      progress on stderr even for small files\n" \
	"  -h, --help          this text\n"
#define EXIT_HELP \
	"\nExit status: 0 clean input, 1 error (file named with the offset where\n" \
	"it applies), 2 usage, 3 done but the input was damaged (reported).\n"

static const char *usage_name(const char *primary)
{
	return strcmp(cmd_name, "tracevisor") ? cmd_name : primary;
}

/* Modules from --image and, with --image-dir, from the trace's IMAGE records. */
static int setup_modules(struct common *c, struct tvt_reader *r, const char *path)
{
	int ret = load_elfs(c);

	if (!ret)
		ret = load_images(c, r, path);
	return ret;
}

/* open_with_modules - open_trace, then the modules; r is closed on failure. */
static int open_with_modules(struct common *c, struct tvt_reader *r, const char *path)
{
	int ret = open_trace(path, r);

	if (ret)
		return ret;
	ret = setup_modules(c, r, path);
	if (ret)
		tvt_reader_close(r);
	return ret;
}

static int parse_threads(const char *arg, unsigned *threads)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (!*arg || *end || errno || *arg == '-' || v > TVH_PWALK_MAX_THREADS)
		return usage_error("bad thread count '%s' (0..%u, 0: one per processor)",
				   arg, TVH_PWALK_MAX_THREADS);
	*threads = (unsigned)v;
	return 0;
}

static int finish_walk(int ret, const struct tvh_stats *s, const char *path)
{
	if (ret)
		return walk_failed(ret, path);
	warn_damage(s, path);
	return tvh_stats_damaged(s) ? EXIT_DAMAGED : EXIT_OK;
}

/* What PT decoding did in a walk (pt_walk). */
struct pt_result {
	struct tvh_ptbr_stats st;
	bool decoded;            /* modules were given: PT was decoded */
};

/* Say, for each CPU with PT bytes, that they need --image to be decoded. */
static void warn_pt_undecoded(const struct tvh_stats *s, const char *what)
{
	for (uint32_t i = 0; i < s->ncpus; i++)
		if (s->cpus[i].pt_bytes)
			msg("cpu%u: %" PRIu64 " bytes of Intel PT not decoded: %s", s->cpus[i].cpu,
			    s->cpus[i].pt_bytes, what);
}

/*
 * pt_walk - tvh_pwalk(ops, ctx), with each CPU's Intel PT stream decoded
 * into branch records for ops (ptbranch.h) when modules are loaded: PT
 * decoding needs the code bytes, from the same --image/--elf files.
 * Without modules, PT is only counted and each CPU that has some is named
 * on stderr.  Returns tvh_pwalk's value, -TVH_ERR_PT (image setup).
 */
static int pt_walk(struct common *c, struct tvt_reader *r, struct tvh_walk_opts *wo,
		   unsigned threads, const struct tvh_pwalk_ops *ops, void *ctx,
		   struct tvh_stats *s, struct pt_result *pr)
{
	struct pt_image *img;
	struct tvh_ptbr b;
	int ret;

	memset(pr, 0, sizeof(*pr));
	if (!c->st.nmods) {
		ret = tvh_pwalk(r, wo, threads, ops, ctx, s);
		if (!ret)
			warn_pt_undecoded(s, "PT needs the code to be decoded: give the "
					  "modules with --image PATH[@BASE] (or --image-dir)");
		return ret;
	}
	ret = tvh_pt_image(&c->st, &img);
	if (ret) {
		memset(s, 0, sizeof(*s));
		return ret;
	}
	tvh_ptbr_init(&b, ops, ctx, img, NULL);
	wo->want_pt = true;
	ret = tvh_pwalk(r, wo, threads, &tvh_ptbr_ops, &b, s);
	pt_image_free(img);
	pr->st = b.stats;
	pr->decoded = true;
	if (!ret && b.stats.cpus && !c->quiet)
		fprintf(stderr, "tracevisor %s: Intel PT of %u CPU%s: %" PRIu64 " bytes decoded"
			" into %" PRIu64 " branches, %" PRIu64 " syncs, %" PRIu64
			" decode errors; lost %" PRIu64 " bytes in gaps, %" PRIu64
			" at %" PRIu64 " cuts (counted by PT_SYNC)\n", cmd_name,
			b.stats.cpus, b.stats.cpus == 1 ? "" : "s", b.stats.bytes,
			b.stats.branches, b.stats.syncs, b.stats.errors,
			b.stats.gap_bytes, b.stats.cut_bytes, b.stats.cuts);
	if (!ret && b.stats.errors)
		msg("%" PRIu64 " PT decode errors (each a PT_GAP; decoding resumed at the"
		    " next PSB): wrong or missing --image code, or damaged PT", b.stats.errors);
	return ret;
}

/* finish_walk, and status 3 when PT had decode errors. */
static int finish_pt_walk(const struct tvh_stats *s, const struct pt_result *pr,
			  const char *path)
{
	int ret = finish_walk(0, s, path);

	return ret == EXIT_OK && pr->st.errors ? EXIT_DAMAGED : ret;
}

/* ---- info ---------------------------------------------------------------- */

void info_usage(FILE *f)
{
	fprintf(f, "Usage: tracevisor %s [OPTIONS] FILE.tvt|CAPTURE-DIR\n", usage_name("info"));
	fputs("What a capture holds: the file header (machine, session, creation\n"
	      "time, trace format), per CPU the trace source (mtf, lbr, bts, pt),\n"
	      "records, branches, trace windows, time span (first to last TSC, in\n"
	      "seconds with the recorded TSC frequency) and losses; the images the\n"
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

/* ---- script -------------------------------------------------------------- */

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

/* ---- report -------------------------------------------------------------- */

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
	      IMAGE_HELP
	      "  -j, --threads N     decoding threads (default: one per processor)\n"
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
		{ "sort", required_argument, NULL, OPT_SORT },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "per-cpu", no_argument, NULL, OPT_PER_CPU },
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
			struct tvh_report_opts o = { ro.sort, ro.top, title };

			if (c.cpu >= 0 && run.v[i]->cpu != (uint32_t)c.cpu)
				continue;
			snprintf(title, sizeof(title), "cpu%u", run.v[i]->cpu);
			if (i)
				fputc('\n', out);
			ret = tvh_report_write(&run.v[i], 1, &c.st, &o, out);
		}
	} else {
		char title[32];
		struct tvh_report_opts o = { ro.sort, ro.top, title };

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

/* ---- coverage (drcov) ------------------------------------------------------ */

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
	      "                      (at least one module, given or found, is needed)\n"
	      "  --cpu N             only CPU N's branches\n"
	      "  --flavor NAME       the 'DRCOV FLAVOR' (default tracevisor)\n"
	      "  -j, --threads N     decoding threads (default: one per processor)\n"
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

int cmd_coverage(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "output", required_argument, NULL, 'o' },
		{ "cpu", required_argument, NULL, OPT_CPU },
		IMAGE_LONGOPTS,
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
	if (!c.nelfs && !c.image_dir) {
		ret = usage_error("at least one --elf/--image PATH[@BASE] or an --image-dir "
				  "is needed (coverage offsets are module-relative)");
		goto out;
	}
	ret = open_trace(argv[optind], &r);
	if (ret)
		goto out;
	ret = setup_modules(&c, &r, argv[optind]);
	if (!ret && !c.st.nmods) {
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
				c.out, run.total.nbbs, ds->approx, c.st.nmods, ds->outside,
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

/* ---- timeline (chrome) ----------------------------------------------------- */

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
	      "'chrome' is the old name of this command (same options).  Intel PT is\n"
	      "not decoded here yet (CPUs with PT are named on stderr; script, report\n"
	      "and coverage decode it).\n"
	      "\n"
	      "Options:\n"
	      "  -o, --output FILE   the JSON file ('-': stdout)\n"
	      IMAGE_HELP
	      "  --cpu N             only CPU N\n"
	      "  --sequence-time     use sequence numbers as time even with a TSC\n"
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
		{ "sequence-time", no_argument, NULL, OPT_SEQ_TIME },
		{ NULL, 0, NULL, 0 },
	};
	struct common c = { .cpu = -1 };
	struct tvh_chrome_opts co;
	struct tvh_chrome_stats cs;
	struct tvt_reader r;
	bool seq_time = false;
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
	progress_init(&c, &r, cmd_name);
	co = (struct tvh_chrome_opts){ .st = &c.st, .cpu = c.cpu,
				       .sequence_time = seq_time,
				       .progress = &c.prog };
	ret = tvh_chrome_write(&r, &co, out, &cs);
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
		warn_pt_undecoded(&cs.walk, "timeline does not decode PT yet (script, "
				  "report and coverage do, with --image)");
		ret = finish_walk(0, &cs.walk, argv[optind]);
	}
	tvh_stats_free(&cs.walk);
	tvt_reader_close(&r);
out:
	common_free(&c);
	return ret;
}
