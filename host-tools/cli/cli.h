/* SPDX-License-Identifier: MIT */
/*
 * cli.h - what the command line's files share: option parsing, messages,
 * opening traces and outputs (cli.c), and every command's entry point and
 * usage text (cmd_NAME.c, one file per command; main.c's table names
 * them).  Not part of the library: nothing in host-tools/lib includes it.
 *
 * Exit status of every subcommand: 0 done, input clean; 1 error (nothing
 * or not everything written); 2 usage; 3 done, but the input had damaged
 * chunks, malformed records or PT decode errors (reported).
 */
#ifndef TVH_CLI_H
#define TVH_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "host-tools/lib/progress.h"
#include "host-tools/lib/ptbranch.h"
#include "host-tools/lib/pwalk.h"
#include "host-tools/lib/snap.h"
#include "host-tools/lib/sym.h"
#include "host-tools/lib/tvt.h"
#include "host-tools/lib/walk.h"

enum { EXIT_OK = 0, EXIT_ERR = 1, EXIT_USAGE = 2, EXIT_DAMAGED = 3 };

/* The running subcommand's name, for messages ("tracevisor NAME: ..."). */
extern const char *cmd_name;

struct common {
	int64_t cpu;             /* -1: not given */
	const char **elfs;       /* --elf / --image specs */
	int nelfs;
	const char *image_dir;   /* --image-dir */
	const char *ksyms_path;  /* --kallsyms or --system-map FILE */
	bool ksyms_map;          /* it was --system-map */
	struct tvh_ksyms *ksyms; /* loaded by load_elfs; st.ksyms */
	struct tvh_regions regions;   /* IMAGE records' names; st.regions */
	bool name_images;        /* load_images makes regions (setup_modules) */
	const char *out;
	bool quiet;
	bool progress;
	struct tvh_symtab st;
	struct tvh_progress prog;
	struct tvh_snap *snap;   /* code snapshots of the capture (load_snapshots) */
	int decoder;             /* --decoder: 0 not given, DECODER_FAST, DECODER_LIBIPT */
};

enum { DECODER_FAST = 1, DECODER_LIBIPT };

/*
 * Options every subcommand may take; a command's own go to its opt_fn.
 * parse_opts returns 0 with optind at the first operand, EXIT_USAGE, or
 * -1 for --help.
 */
enum {
	OPT_CPU = 0x100, OPT_ELF, OPT_PROGRESS, OPT_NO_SUMMARY, OPT_FLAVOR,
	OPT_SEQ_TIME, OPT_BRANCHES, OPT_PT_CPU, OPT_RAW, OPT_NO_SYMBOLS,
	OPT_MACHINE, OPT_IMAGE_DIR, OPT_THREADS, OPT_SORT, OPT_TOP, OPT_PER_CPU,
	OPT_FORMAT, OPT_ALL, OPT_KALLSYMS, OPT_SYSTEM_MAP, OPT_PHASES,
	OPT_DECODER,
};

/* --decoder fast|libipt: PT for script, report, coverage, timeline (ptbranch.h). */
#define DECODER_LONGOPT { "decoder", required_argument, NULL, OPT_DECODER }
#define DECODER_USAGE \
	"  --decoder D         PT decoder: fast (default) or libipt (the reference)\n"

typedef int (*opt_fn)(int opt, const char *arg, void *ctx);

#define COMMON_LONGOPTS \
	{ "help", no_argument, NULL, 'h' }, \
	{ "quiet", no_argument, NULL, 'q' }, \
	{ "progress", no_argument, NULL, OPT_PROGRESS }

/* --elf and --image are one option; --image-dir goes with them. */
#define IMAGE_LONGOPTS \
	{ "elf", required_argument, NULL, OPT_ELF }, \
	{ "image", required_argument, NULL, OPT_ELF }, \
	{ "image-dir", required_argument, NULL, OPT_IMAGE_DIR }, \
	{ "kallsyms", required_argument, NULL, OPT_KALLSYMS }, \
	{ "system-map", required_argument, NULL, OPT_SYSTEM_MAP }

void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int parse_opts(int argc, char **argv, const char *shortopts,
	       const struct option *longopts, struct common *c, opt_fn own,
	       void *ctx);
#define CMD_GO (-1)
int parse_file_cmd(int argc, char **argv, const char *shortopts,
		   const struct option *longopts, struct common *c, opt_fn own,
		   void *ctx, void (*usage)(FILE *));

/*
 * --elf/--image modules into c->st, and --kallsyms/--system-map into
 * c->st.ksyms (EXIT_USAGE/EXIT_ERR with a message).
 */
int load_elfs(struct common *c);
/*
 * load_images - with --image-dir, the trace's IMAGE records as modules
 * (files found in the directory, loaded at the recorded base), after
 * those given by hand; a summary on stderr unless -q.  Always: the IMAGE
 * records as named regions (st.regions: firmware drivers as NAME+0xoff
 * with no file) and, with --kallsyms/--system-map, the kernel symbols
 * relocated from what the capture holds (said once on stderr unless -q).
 * 0 or EXIT_ERR.
 */
int load_images(struct common *c, struct tvt_reader *r, const char *path);
void common_free(struct common *c);

/*
 * open_trace - a .tvt file, or a capture directory holding trace.tvt
 * (tvt_resolve_path); messages name the file.  0 or EXIT_ERR.
 */
int open_trace(const char *path, struct tvt_reader *r);
FILE *open_out(const char *path, const char *mode);
void discard_out(FILE *f, const char *path);
int close_out(FILE *f, const char *path);
void progress_init(struct common *c, const struct tvt_reader *r,
		   const char *what);
int walk_failed(int ret, const char *path);
void warn_damage(const struct tvh_stats *s, const char *path);
int read_file(const char *path, uint8_t **data, size_t *len);
void print_sym(struct tvh_symtab *st, uint64_t a);

/* ---- what the walking commands share (cli.c) ---- */

/* Text every symbolizing command's --help shares. */
#define IMAGE_HELP \
	"  --image PATH[@BASE] a module: ELF (vmlinux, kernel modules, user\n" \
	"                      binaries, gnu-efi .so) or PE/COFF (UEFI drivers)\n" \
	"                      loaded at BASE (repeatable; --elf is the same)\n" \
	"  --image-dir DIR     for each IMAGE record of the trace, load the file\n" \
	"                      DIR holds for its name (debug path, FvFile GUID,\n" \
	"                      file name) at the recorded base; KASLR kernels\n" \
	"                      come out right from the kernel's IMAGE record\n" \
	"  --kallsyms FILE     kernel symbols from a /proc/kallsyms of the traced\n" \
	"                      machine (read as root: unprivileged, every address\n" \
	"                      is 0)\n" \
	"  --system-map FILE   kernel symbols from a System.map (Debian:\n" \
	"                      /boot/System.map-VERSION); both are relocated by\n" \
	"                      the capture's kernel IMAGE record or kernel_entry\n" \
	"                      window when it has one (KASLR); either may be a\n" \
	"                      kernel image (vmlinux): its own kallsyms table is\n" \
	"                      read (tracevisor ksyms)\n"
/* script, report, coverage: PT captures (pt_walk). */
#define PT_HELP \
	"\nIntel PT (source pt): with modules (--image, --image-dir) each CPU's PT\n" \
	"stream is decoded with libipt over the modules' code bytes (the ELF/PE\n" \
	"files given) and each taken transfer is used as a branch; PT losses\n" \
	"(gaps, PT_SYNC cuts) and decode errors are PT_GAP lines and restart\n" \
	"decoding at the next PSB.  Code the modules do not hold comes from the\n" \
	"capture's code snapshots (code_snapshots, on by default with PT), so a\n" \
	"capture with snapshots decodes with no --image.  With neither PT cannot\n" \
	"be decoded: each CPU with PT bytes is named on stderr.\n"
#define COMMON_HELP \
	"  -q, --quiet         no progress or summary on stderr\n" \
	"      --progress      progress on stderr even for small files\n" \
	"  -h, --help          this text\n"
#define EXIT_HELP \
	"\nExit status: 0 clean input, 1 error (file named with the offset where\n" \
	"it applies), 2 usage, 3 done but the input was damaged (reported).\n"

/* What PT decoding did in a walk (pt_walk). */
struct pt_result {
	struct tvh_ptbr_stats st;
	bool decoded;            /* modules were given: PT was decoded */
};

/* "tracevisor NAME" in a usage text: the name it was called by (aliases). */
const char *usage_name(const char *primary);
/* Modules from --image and, with --image-dir, from the trace's IMAGE records. */
int setup_modules(struct common *c, struct tvt_reader *r, const char *path);
/* open_with_modules - open_trace, then the modules; r is closed on failure. */
int open_with_modules(struct common *c, struct tvt_reader *r, const char *path);
/* --threads N: 0..TVH_PWALK_MAX_THREADS, else EXIT_USAGE with a message. */
int parse_threads(const char *arg, unsigned *threads);
/* A walk's exit status: walk_failed, else damage warned and EXIT_DAMAGED. */
int finish_walk(int ret, const struct tvh_stats *s, const char *path);
/*
 * load_snapshots - when r has Intel PT, its code snapshots into c->snap
 * (a records pass; counts said on stderr unless -q), so PT decodes
 * without --image.  r is rewound.  0 or tvh_snap_load's error.
 */
int load_snapshots(struct common *c, struct tvt_reader *r);
/* Whether PT can be decoded: modules given or snapshots loaded. */
bool have_code(const struct common *c);
/*
 * use_libipt - decode PT with libipt?  --decoder says; by default the
 * fast decoder, also over code snapshots of pages rewritten during the
 * capture (it reads them at libipt's time and drops its block cache
 * when that code changes: ptbranch.h).
 */
bool use_libipt(const struct common *c);
/* Say, for each CPU with PT bytes, that they were not decoded (what: why). */
void warn_pt_undecoded(const struct tvh_stats *s, const char *what);
/*
 * pt_walk - tvh_pwalk(ops, ctx), with each CPU's Intel PT stream decoded
 * into branch records for ops (ptbranch.h) when modules are loaded or the
 * capture has code snapshots (load_snapshots, called here).
 * Returns tvh_pwalk's value, -TVH_ERR_PT (image setup).
 */
int pt_walk(struct common *c, struct tvt_reader *r, struct tvh_walk_opts *wo,
	    unsigned threads, const struct tvh_pwalk_ops *ops, void *ctx,
	    struct tvh_stats *s, struct pt_result *pr);
/* finish_walk, and status 3 when PT had decode errors. */
int finish_pt_walk(const struct tvh_stats *s, const struct pt_result *pr,
		   const char *path);

/*
 * ---- the commands: int cmd_NAME(argc, argv) returns the exit status,
 * void NAME_usage(f) writes its --help text (cmd_NAME.c).
 */
int cmd_info(int argc, char **argv);
void info_usage(FILE *f);
int cmd_script(int argc, char **argv);
void script_usage(FILE *f);
int cmd_report(int argc, char **argv);
void report_usage(FILE *f);
int cmd_coverage(int argc, char **argv);          /* also `drcov` */
void coverage_usage(FILE *f);
int cmd_timeline(int argc, char **argv);          /* also `chrome` */
void timeline_usage(FILE *f);
int cmd_dump(int argc, char **argv);
void dump_usage(FILE *f);
int cmd_symbolize(int argc, char **argv);
void symbolize_usage(FILE *f);
int cmd_ksyms(int argc, char **argv);
void ksyms_usage(FILE *f);
int cmd_pt(int argc, char **argv);
void pt_usage(FILE *f);
int cmd_pt_decode(int argc, char **argv);
void pt_decode_usage(FILE *f);
int cmd_from_serial(int argc, char **argv);
void from_serial_usage(FILE *f);
int cmd_record(int argc, char **argv);
void record_usage(FILE *f);
int cmd_control(int argc, char **argv);
void control_usage(FILE *f);
int cmd_mem(int argc, char **argv);              /* also `c2c` (--sharing) */
void mem_usage(FILE *f);

#endif /* TVH_CLI_H */
