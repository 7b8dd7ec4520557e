/* SPDX-License-Identifier: MIT */
/*
 * cli.c - what the commands of the CLI share (cli.h): messages, the
 * option parser, opening traces and outputs, loading modules.  Not part
 * of the library.
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
#include <unistd.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/images.h"
#include "host-tools/lib/kallsyms_img.h"
#include "host-tools/lib/ksyms.h"
#include "host-tools/lib/ptbranch.h"
#include "host-tools/lib/pwalk.h"
#include "host-tools/lib/sym.h"
#include "host-tools/lib/tvt.h"
#include "host-tools/lib/walk.h"

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

static int load_ksyms(struct common *c)
{
	const char *opt = c->ksyms_map ? "--system-map" : "--kallsyms";
	int ret;

	if (!c->ksyms_path)
		return 0;
	c->ksyms = calloc(1, sizeof(*c->ksyms));
	if (!c->ksyms) {
		msg("out of memory");
		return EXIT_ERR;
	}
	tvh_ksyms_init(c->ksyms);
	/* A kernel image (vmlinux) instead: its own table (kallsyms_img.h). */
	ret = tvh_ksyms_load_any(c->ksyms, c->ksyms_path, c->ksyms_map ?
				 TVH_KSYMS_SYSTEM_MAP : TVH_KSYMS_KALLSYMS);
	if (ret < 0) {
		msg("%s %s", opt, c->ksyms->error[0] ? c->ksyms->error : tvh_errstr(ret));
		return EXIT_ERR;
	}
	c->st.ksyms = c->ksyms;
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
	return load_ksyms(c);
}

int load_images(struct common *c, struct tvt_reader *r, const char *path)
{
	struct tvh_images im;
	struct tvh_images_load_stats ls;
	int err;

	if (!c->image_dir && !c->ksyms && !c->name_images)
		return 0;
	err = tvh_images_collect(r, &im);
	if (!err && c->name_images)
		err = tvh_images_regions(&im, &c->regions);
	if (!err && c->regions.n)
		c->st.regions = &c->regions;
	if (!err && c->ksyms) {
		char how[320];

		tvh_images_relocate_ksyms(&im, c->ksyms, how, sizeof(how));
		if (!c->quiet)
			msg("%s %s: %zu symbols, %s", c->ksyms_map ? "--system-map" :
			    "--kallsyms", c->ksyms_path, c->ksyms->n, how);
	}
	if (!err && !c->image_dir) {
		tvh_images_free(&im);
		return 0;
	}
	if (!err)
		err = tvh_images_load(&im, c->image_dir, &c->st,
				      c->quiet ? NULL : stderr, &ls);
	if (err == -TVH_ERR_LIMIT) {        /* the walk's TVH_MAX_CPUS_SEEN: exit 3 */
		tvh_images_free(&im);
		return walk_failed(err, path);
	}
	if (err) {
		if (err == -TVH_ERR_IO && c->image_dir)
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
	if (c->ksyms) {
		tvh_ksyms_free(c->ksyms);
		free(c->ksyms);
	}
	tvh_regions_free(&c->regions);
	free(c->elfs);
	tvh_snap_free(c->snap);
	c->snap = NULL;
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
	if (ret == -TVH_ERR_LIMIT) {
		/* Damaged or hostile input beyond a documented limit (walk.h). */
		msg("%s: more than %u distinct CPUs: refused (TVH_MAX_CPUS_SEEN, docs/TRACEFILE.md)",
		    path, TVH_MAX_CPUS_SEEN);
		return EXIT_DAMAGED;
	}
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
		case OPT_DECODER:
			if (strcmp(optarg, "fast") && strcmp(optarg, "libipt"))
				return usage_error("bad --decoder '%s' (fast or libipt)", optarg);
			c->decoder = strcmp(optarg, "libipt") ? DECODER_FAST : DECODER_LIBIPT;
			break;
		case OPT_IMAGE_DIR:
			c->image_dir = optarg;
			break;
		case OPT_KALLSYMS:
		case OPT_SYSTEM_MAP:
			if (c->ksyms_path)
				return usage_error("one kernel symbol file: --kallsyms or "
						   "--system-map, once");
			c->ksyms_path = optarg;
			c->ksyms_map = opt == OPT_SYSTEM_MAP;
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

void print_sym(struct tvh_symtab *st, uint64_t a)
{
	char buf[512];

	if (st && tvh_sym_format(st, a, buf, sizeof(buf)) > 0)
		printf(" %s", buf);
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

/* ---- what the walking commands share (info, script, report, coverage, timeline) */

const char *usage_name(const char *primary)
{
	return strcmp(cmd_name, "tracevisor") ? cmd_name : primary;
}

/* Modules from --image and, with --image-dir, from the trace's IMAGE records. */
int setup_modules(struct common *c, struct tvt_reader *r, const char *path)
{
	int ret = load_elfs(c);

	c->name_images = true;
	if (!ret)
		ret = load_images(c, r, path);
	return ret;
}

/* open_with_modules - open_trace, then the modules; r is closed on failure. */
int open_with_modules(struct common *c, struct tvt_reader *r, const char *path)
{
	int ret = open_trace(path, r);

	if (ret)
		return ret;
	ret = setup_modules(c, r, path);
	if (ret)
		tvt_reader_close(r);
	return ret;
}

int parse_threads(const char *arg, unsigned *threads)
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

int finish_walk(int ret, const struct tvh_stats *s, const char *path)
{
	if (ret)
		return walk_failed(ret, path);
	warn_damage(s, path);
	return tvh_stats_damaged(s) ? EXIT_DAMAGED : EXIT_OK;
}

/*
 * Whether r has PT (snapshots serve PT only): stops at the first PT chunk,
 * or at the first ring snapshot naming another source (the receiver
 * writes one per CPU at the start), so other captures cost one chunk.
 */
static bool has_pt(struct tvt_reader *r)
{
	struct tv_trace_ring ring;
	struct tvt_chunk ch;
	bool found = false;
	int ret;

	tvt_reader_rewind(r);
	while ((ret = tvt_next_chunk(r, &ch)) != 0) {
		if (ret <= 0)
			continue;
		if (ch.kind == TVT_KIND_PT) {
			found = true;
			break;
		}
		if (ch.kind == TVT_KIND_RING &&
		    !tvh_ring_decode(ch.payload, ch.length, &ring) &&
		    ring.source != TV_SOURCE_NONE && ring.source != TV_SOURCE_PT)
			break;
	}
	tvt_reader_rewind(r);
	return found;
}

int load_snapshots(struct common *c, struct tvt_reader *r)
{
	struct tvh_snap_stats ss;
	int ret;

	if (c->snap || !has_pt(r))
		return 0;
	ret = tvh_snap_load(r, NULL, &c->snap);
	if (ret == -TVH_ERR_IO) {
		struct tvh_snap_opts so;
		int e = errno;

		tvh_snap_opts_default(&so);
		msg("code snapshots: the spill file in %s (TMPDIR; TVH_SNAP_SPILL_BYTES"
		    " bounds the memory before it): %s", so.dir, strerror(e));
	}
	tvt_reader_rewind(r);
	if (ret)
		return ret;
	tvh_snap_get_stats(c->snap, &ss);
	if (ss.records && !c->quiet)
		fprintf(stderr, "tracevisor %s: code snapshots: %" PRIu64 " pages, %" PRIu64
			" contents (%" PRIu64 " KiB), %" PRIu64 " missing, %" PRIu64
			" bad hash: PT code %s\n", cmd_name, ss.pages, ss.contents,
			ss.bytes >> 10, ss.missing_data, ss.bad_hash,
			c->st.nmods ? "from the modules, then the snapshots" : "from the snapshots");
	return 0;
}

bool have_code(const struct common *c)
{
	return c->st.nmods || !tvh_snap_empty(c->snap);
}

bool use_libipt(const struct common *c)
{
	/* The fast decoder follows rewritten pages (code snapshots) as libipt
	 * does: its block cache is dropped when the code it read changes. */
	return c->decoder == DECODER_LIBIPT;
}

/* Say, for each CPU with PT bytes, that they need --image to be decoded. */
void warn_pt_undecoded(const struct tvh_stats *s, const char *what)
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
int pt_walk(struct common *c, struct tvt_reader *r, struct tvh_walk_opts *wo,
	    unsigned threads, const struct tvh_pwalk_ops *ops, void *ctx,
	    struct tvh_stats *s, struct pt_result *pr)
{
	struct pt_image *img;
	struct tvh_ptf_image fimg = { 0 };
	struct tvh_ptbr_fast fast = { .image = &fimg, .jobs = threads };
	struct tvh_ptbr b;
	bool libipt;
	int ret;

	memset(pr, 0, sizeof(*pr));
	ret = load_snapshots(c, r);
	if (ret) {
		memset(s, 0, sizeof(*s));
		return ret;
	}
	if (!have_code(c)) {
		ret = tvh_pwalk(r, wo, threads, ops, ctx, s);
		if (!ret)
			warn_pt_undecoded(s, "PT needs the code to be decoded: the capture has"
					  " no code snapshots; give the modules with"
					  " --image PATH[@BASE] (or --image-dir)");
		return ret;
	}
	libipt = use_libipt(c);
	ret = tvh_pt_image(&c->st, &img);
	if (!ret && !libipt) {
		ret = tvh_ptf_image_from_symtab(&fimg, &c->st);
		if (ret)
			pt_image_free(img);
	}
	if (ret) {
		tvh_ptf_image_free(&fimg);
		memset(s, 0, sizeof(*s));
		return ret;
	}
	tvh_ptbr_init(&b, ops, ctx, img, NULL);
	b.opts.snap = c->snap;
	fast.snap = c->snap;     /* loaded above */
	b.fast = libipt ? NULL : &fast;
	wo->want_pt = true;
	ret = tvh_pwalk(r, wo, threads, &tvh_ptbr_ops, &b, s);
	pt_image_free(img);
	tvh_ptf_image_free(&fimg);
	pr->st = b.stats;
	pr->decoded = true;
	if (!ret && b.stats.cpus && !c->quiet)
		fprintf(stderr, "tracevisor %s: Intel PT of %u CPU%s: %" PRIu64 " bytes decoded"
			" into %" PRIu64 " branches, %" PRIu64 " syncs, %" PRIu64
			" decode errors; lost %" PRIu64 " bytes in gaps, %" PRIu64
			" at %" PRIu64 " cuts (counted by PT_SYNC); decoder %s%s\n", cmd_name,
			b.stats.cpus, b.stats.cpus == 1 ? "" : "s", b.stats.bytes,
			b.stats.branches, b.stats.syncs, b.stats.errors,
			b.stats.gap_bytes, b.stats.cut_bytes, b.stats.cuts,
			b.fast ? "fast" : "libipt", b.fast && b.stats.libipt_runs ?
			" (libipt for runs with MTC/CYC timing)" : "");
	if (!ret && b.stats.errors)
		msg("%" PRIu64 " PT decode errors (each a PT_GAP; decoding resumed at the"
		    " next PSB): wrong or missing --image code, or damaged PT", b.stats.errors);
	return ret;
}

/* finish_walk, and status 3 when PT had decode errors. */
int finish_pt_walk(const struct tvh_stats *s, const struct pt_result *pr,
		   const char *path)
{
	int ret = finish_walk(0, s, path);

	return ret == EXIT_OK && pr->st.errors ? EXIT_DAMAGED : ret;
}
