/* SPDX-License-Identifier: MIT */
/*
 * main.c - `tracevisor`, the host-side command line: a thin layer over
 * the library in host-tools/ (docs/HOST-TOOLS.md).
 *
 * Exit status of every subcommand: 0 done, input clean; 1 error (nothing
 * or not everything written); 2 usage; 3 done, but the input had damaged
 * chunks, malformed records or PT decode errors (reported).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/dump.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/images.h"
#include "host-tools/lib/pt.h"
#include "host-tools/lib/record.h"
#include "host-tools/lib/serial_in.h"
#include "host-tools/lib/sym.h"
#include "host-tools/lib/tvt.h"
#include "host-tools/lib/walk.h"
#include "vmm/version.h"

const char *cmd_name = "tracevisor";

void msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tracevisor %s: ", cmd_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "tracevisor %s: ", cmd_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'tracevisor %s --help'.\n", cmd_name);
	return EXIT_USAGE;
}

/* ---- shared option handling ---------------------------------------------- */

static int parse_cpu(const char *s, int64_t *cpu)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (!*s || *end || errno || *s == '-' || v > TVH_MAX_CPU)
		return usage_error("bad CPU index '%s' (0..%u)", s, TVH_MAX_CPU);
	*cpu = (int64_t)v;
	return 0;
}

static int add_elf(struct common *c, const char *spec)
{
	const char **n = realloc(c->elfs, (size_t)(c->nelfs + 1) * sizeof(*n));

	if (!n) {
		msg("out of memory");
		return EXIT_ERR;
	}
	c->elfs = n;
	c->elfs[c->nelfs++] = spec;
	return 0;
}

int load_elfs(struct common *c)
{
	tvh_symtab_init(&c->st);
	for (int i = 0; i < c->nelfs; i++) {
		int ret = tvh_symtab_add(&c->st, c->elfs[i]);

		if (ret < 0) {
			msg("--image %s: %s", c->elfs[i], c->st.error[0] ? c->st.error :
			    tvh_errstr(ret));
			return ret == -TVH_ERR_INVALID ? EXIT_USAGE : EXIT_ERR;
		}
	}
	return 0;
}

int load_images(struct common *c, struct tvt_reader *r, const char *path)
{
	struct tvh_images im;
	struct tvh_images_load_stats ls;
	int err;

	if (!c->image_dir)
		return 0;
	err = tvh_images_collect(r, &im);
	if (!err)
		err = tvh_images_load(&im, c->image_dir, &c->st,
				      c->quiet ? NULL : stderr, &ls);
	if (err) {
		if (err == -TVH_ERR_IO)
			msg("--image-dir %s: %s", c->image_dir, strerror(errno));
		else
			msg("%s: %s", path, tvh_errstr(err));
		tvh_images_free(&im);
		return EXIT_ERR;
	}
	if (!c->quiet)
		fprintf(stderr, "tracevisor %s: %s: %zu IMAGE records: %u loaded from %s, "
			"%u not found there, %u unreadable\n", cmd_name, path, im.n,
			ls.found, c->image_dir, ls.missing, ls.bad);
	tvh_images_free(&im);
	return 0;
}

void common_free(struct common *c)
{
	tvh_symtab_free(&c->st);
	free(c->elfs);
}

int open_trace(const char *arg, struct tvt_reader *r)
{
	char *file = NULL;
	const char *path;
	int err = tvt_resolve_path(arg, &file);

	if (err == -TVH_ERR_NOT_FOUND) {
		msg("%s: a directory without %s (not a capture directory)", arg,
		    TVT_CAPTURE_FILE);
		return EXIT_ERR;
	}
	if (err) {
		msg("%s: %s", arg, err == -TVH_ERR_IO ? strerror(errno) : tvh_errstr(err));
		return EXIT_ERR;
	}
	path = file;
	err = tvt_reader_open(r, path);
	if (!err) {
		free(file);
		return 0;
	}
	if (err == -TVH_ERR_IO)
		msg("%s: %s", path, strerror(errno));
	else if (err == -TVH_ERR_MAGIC)
		msg("%s: not a tracevisor trace file (bad magic)", path);
	else if (err == -TVH_ERR_VERSION)
		msg("%s: trace file version not supported by this tool (it reads version %u)",
		    path, TVT_VERSION);
	else
		msg("%s: %s (in the file header, offset 0)", path, tvh_errstr(err));
	free(file);
	return EXIT_ERR;
}

FILE *open_out(const char *path, const char *mode)
{
	FILE *f;

	if (!strcmp(path, "-"))
		return stdout;
	f = fopen(path, mode);
	if (!f)
		msg("%s: %s", path, strerror(errno));
	return f;
}

/* Only a regular file we wrote is ever removed (never /dev/null, a FIFO, ...). */
static bool is_regular(FILE *f)
{
	struct stat st;

	return f != stdout && !fstat(fileno(f), &st) && S_ISREG(st.st_mode);
}

/* An output that failed half way is removed rather than left looking whole. */
void discard_out(FILE *f, const char *path)
{
	bool regular = is_regular(f);

	if (f == stdout) {
		fflush(f);
		return;
	}
	fclose(f);
	if (regular)
		unlink(path);
}

int close_out(FILE *f, const char *path)
{
	bool regular = is_regular(f);
	int bad = ferror(f);

	if (f == stdout)
		bad |= fflush(f);
	else
		bad |= fclose(f);
	if (bad) {
		msg("%s: write failed: %s", path, strerror(errno));
		if (regular)
			unlink(path);
		return EXIT_ERR;
	}
	return 0;
}

void progress_init(struct common *c, const struct tvt_reader *r,
		   const char *what)
{
	tvh_progress_init(&c->prog, stderr, what, r->size, !c->quiet, c->progress);
}

/* Report walk errors (not damage: that is in the stats). */
int walk_failed(int ret, const char *path)
{
	if (!ret)
		return 0;
	msg("%s: %s", path, ret < 0 ? tvh_errstr(ret) : "aborted");
	return EXIT_ERR;
}

void warn_damage(const struct tvh_stats *s, const char *path)
{
	if (!tvh_stats_damaged(s))
		return;
	msg("%s: damaged input: %" PRIu64 " bad chunks, %" PRIu64
	    " malformed records, %" PRIu64 " bytes skipped", path, s->bad_chunks,
	    s->malformed, s->skipped_bytes);
}

int parse_opts(int argc, char **argv, const char *shortopts,
		      const struct option *longopts, struct common *c, opt_fn own,
		      void *ctx)
{
	int opt, idx;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, shortopts, longopts, &idx)) != -1) {
		int ret = 0;

		switch (opt) {
		case 'h':
			return -1;
		case 'q':
			c->quiet = true;
			break;
		case 'o':
			c->out = optarg;
			break;
		case OPT_PROGRESS:
			c->progress = true;
			break;
		case OPT_CPU:
			ret = parse_cpu(optarg, &c->cpu);
			break;
		case OPT_ELF:
			ret = add_elf(c, optarg);
			break;
		case OPT_IMAGE_DIR:
			c->image_dir = optarg;
			break;
		case '?':
			/* optopt: the short option or long option's value; 0: unknown long */
			if (optopt > 0 && optopt < 0x100 && !strchr(shortopts, optopt))
				return usage_error("option '-%c' is unknown", optopt);
			if (optopt)
				return usage_error("option '%s' needs a value",
						   argv[optind - 1]);
			return usage_error("option '%s' is unknown", argv[optind - 1]);
		default:
			ret = own ? own(opt, optarg, ctx) : usage_error("bad option");
			break;
		}
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * parse_file_cmd - parse_opts, then --help (usage on stdout) and exactly
 * one FILE operand, at argv[optind], for the commands that read one trace.
 * Returns CMD_GO to go on, else the exit status the command returns.
 */
int parse_file_cmd(int argc, char **argv, const char *shortopts,
		   const struct option *longopts, struct common *c, opt_fn own,
		   void *ctx, void (*usage)(FILE *))
{
	int ret = parse_opts(argc, argv, shortopts, longopts, c, own, ctx);

	if (ret < 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (ret)
		return ret;
	if (argc - optind != 1)
		return usage_error(argc - optind ? "one FILE expected" : "missing FILE");
	return CMD_GO;
}

/* ---- dump ---------------------------------------------------------------- */

static void dump_usage(FILE *f)
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

static int cmd_dump(int argc, char **argv)
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

/* ---- symbolize ----------------------------------------------------------- */

static void symbolize_usage(FILE *f)
{
	fputs("Usage: tracevisor symbolize --image PATH[@BASE]... [ADDR...]\n"
	      "Print 'ADDR func+off (file:line)' for each address given as an\n"
	      "argument, or for each line of stdin when none is (addr2line style;\n"
	      "'?" "?' when no module holds the address).  Symbols and lines come from\n"
	      "the ELF files through elfutils (separate debuginfo found by build-id\n"
	      "or .gnu_debuglink).  BASE is the run-time address of the module's\n"
	      "lowest PT_LOAD segment (default: its link address); for a PE/COFF\n"
	      "image (UEFI driver) its run-time ImageBase: names from its export\n"
	      "table or COFF symbols, else module+offset.\n"
	      "\n"
	      "  --image PATH[@BASE] a module, ELF or PE (repeatable, at least one;\n"
	      "                      --elf is the same option)\n"
	      "  -h, --help          this text\n"
	      "\n"
	      "Use 'tracevisor dump --elf ...' to symbolize a whole trace.\n", f);
}

static int symbolize_one(struct tvh_symtab *st, const char *tok)
{
	char buf[1024], *end;
	unsigned long long a;

	errno = 0;
	a = strtoull(tok, &end, 16);
	if (!*tok || *end || errno || *tok == '-') {
		msg("bad address '%s' (hex, 0x optional)", tok);
		return 1;
	}
	if (tvh_sym_format(st, a, buf, sizeof(buf)) > 0)
		printf("0x%llx %s\n", a, buf);
	else
		printf("0x%llx ?\?\n", a);
	return 0;
}

static int cmd_symbolize(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "elf", required_argument, NULL, OPT_ELF },
		{ "image", required_argument, NULL, OPT_ELF },
		{ NULL, 0, NULL, 0 },
	};
	struct common c = { .cpu = -1 };
	int ret, bad = 0;

	ret = parse_opts(argc, argv, "hq", lo, &c, NULL, NULL);
	if (ret < 0) {
		symbolize_usage(stdout);
		ret = EXIT_OK;
		goto out;
	}
	if (ret)
		goto out;
	if (!c.nelfs) {
		ret = usage_error("at least one --elf/--image PATH[@BASE] is needed");
		goto out;
	}
	ret = load_elfs(&c);
	if (ret)
		goto out;
	if (optind < argc) {
		for (int i = optind; i < argc; i++)
			bad |= symbolize_one(&c.st, argv[i]);
	} else {
		char line[256];

		while (fgets(line, sizeof(line), stdin)) {
			char *p = line, *e;

			while (*p == ' ' || *p == '\t')
				p++;
			e = p + strlen(p);
			while (e > p && (e[-1] == '\n' || e[-1] == '\r' ||
					 e[-1] == ' ' || e[-1] == '\t'))
				*--e = 0;
			if (*p)
				bad |= symbolize_one(&c.st, p);
		}
	}
	ret = bad ? EXIT_ERR : EXIT_OK;
	if (fflush(stdout))
		ret = EXIT_ERR;
out:
	common_free(&c);
	return ret;
}

/* ---- pt ------------------------------------------------------------------ */

static void pt_usage(FILE *f)
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

static int cmd_pt(int argc, char **argv)
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

/* ---- pt-decode ----------------------------------------------------------- */

static void pt_decode_usage(FILE *f)
{
	fputs("Usage: tracevisor pt-decode FILE.tvt --cpu N --elf PATH[@BASE]...\n"
	      "       tracevisor pt-decode --raw FILE.pt --elf PATH[@BASE]...\n"
	      "Decode a CPU's Intel PT stream with libipt's instruction-flow decoder\n"
	      "over an image built from the ELF files' executable segments, and\n"
	      "print each instruction (or, with --branches, each taken transfer).\n"
	      "Decode errors are printed with their stream offset; decoding resumes\n"
	      "at the next PSB.  The stream is decoded in runs split at gaps between\n"
	      "PT chunks and at the losses the CPU's PT_SYNC records count (pt_lost\n"
	      "grew: a cut), each printed as a [gap ...] line.\n"
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

void print_sym(struct tvh_symtab *st, uint64_t a)
{
	char buf[512];

	if (st && tvh_sym_format(st, a, buf, sizeof(buf)) > 0)
		printf(" %s", buf);
}

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
		printf(": %s]\n", pt_errstr(pt_errcode(it->err)));
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

int read_file(const char *path, uint8_t **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;

	*data = NULL;
	*len = 0;
	if (!f) {
		msg("%s: %s", path, strerror(errno));
		return EXIT_ERR;
	}
	for (;;) {
		size_t got;

		if (n == cap) {
			uint8_t *nb;

			cap = cap ? cap * 2 : 1 << 20;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				msg("%s: out of memory", path);
				return EXIT_ERR;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		msg("%s: %s", path, strerror(errno));
		free(buf);
		fclose(f);
		return EXIT_ERR;
	}
	fclose(f);
	*data = buf;
	*len = n;
	return 0;
}

static int cmd_pt_decode(int argc, char **argv)
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
	if (!c.nelfs)
		msg("no --elf given: every instruction will fail to decode (no code)");
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
	}
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

/* ---- from-serial ------------------------------------------------------------- */

static void from_serial_usage(FILE *f)
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

static int cmd_from_serial(int argc, char **argv)
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

/* ---- top level ------------------------------------------------------------- */

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	void (*usage)(FILE *f);
	const char *summary;
};

static const struct command commands[] = {
	{ "info", cmd_info, info_usage, "what a capture holds: CPUs, sources, time span, losses, images" },
	{ "script", cmd_script, script_usage, "branches as text, symbolized (like perf script)" },
	{ "report", cmd_report, report_usage, "hottest functions and edges" },
	{ "coverage", cmd_coverage, coverage_usage, "basic-block coverage: drcov (Lighthouse) or module+offset" },
	{ "timeline", cmd_timeline, timeline_usage, "call/return slices per CPU as Chrome trace-event JSON (Perfetto)" },
	{ "dump", cmd_dump, dump_usage, "records, one per line, and a summary of losses and damage" },
	{ "symbolize", cmd_symbolize, symbolize_usage, "addresses to func+off (file:line) from ELF/PE files" },
	{ "drcov", cmd_coverage, coverage_usage, "old name of 'coverage' (drcov output)" },
	{ "chrome", cmd_timeline, timeline_usage, "old name of 'timeline'" },
	{ "pt", cmd_pt, pt_usage, "a CPU's raw Intel PT stream, for ptdump/ptxed" },
	{ "pt-decode", cmd_pt_decode, pt_decode_usage, "decode a CPU's Intel PT stream with libipt" },
	{ "from-serial", cmd_from_serial, from_serial_usage, "a trace file from the TVT1 lines of a serial log" },
	{ "record", tvh_cmd_record, tvh_record_usage, "receive traces over UDP into capture directories" },
	{ "control", tvh_cmd_control, tvh_control_usage, "send an authenticated CONTROL to a traced machine" },
};

static void main_usage(FILE *f)
{
	fputs("Usage: tracevisor COMMAND [OPTIONS] ...\n"
	      "Host tools for tracevisor trace files (.tvt, docs/TRACEFILE.md).\n\n"
	      "Commands:\n", f);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
	fputs("\n'tracevisor COMMAND --help' describes each.  'tracevisor --version'.\n"
	      "Exit status: 0 ok, 1 error, 2 usage, 3 damaged input (output still written).\n", f);
}

int main(int argc, char **argv)
{
	const char *name;

	if (argc < 2) {
		main_usage(stderr);
		return EXIT_USAGE;
	}
	name = argv[1];
	if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
		main_usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(name, "--version")) {
		printf("tracevisor host tools %s (trace format %u, file format %u)\n",
		       TV_VERSION, TV_TRACE_VERSION, TVT_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(name, "help")) {
		if (argc < 3) {
			main_usage(stdout);
			return EXIT_OK;
		}
		name = argv[2];
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (!strcmp(name, commands[i].name)) {
				cmd_name = commands[i].name;
				commands[i].usage(stdout);
				return EXIT_OK;
			}
		fprintf(stderr, "tracevisor: unknown command '%s'\n", name);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(name, commands[i].name))
			continue;
		cmd_name = commands[i].name;
		if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
			commands[i].usage(stdout);
			return EXIT_OK;
		}
		return commands[i].run(argc - 1, argv + 1);
	}
	fprintf(stderr, "tracevisor: unknown command '%s'\n", name);
	main_usage(stderr);
	return EXIT_USAGE;
}
