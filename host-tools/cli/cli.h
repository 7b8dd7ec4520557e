/* SPDX-License-Identifier: MIT */
/*
 * cli.h - what the command line's files share: option parsing, messages,
 * opening traces and outputs.  main.c holds these and the older
 * commands; cmd_perf.c the perf-style ones (info, script, report,
 * coverage, timeline).  Not part of the library.
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
	const char *out;
	bool quiet;
	bool progress;
	struct tvh_symtab st;
	struct tvh_progress prog;
};

/*
 * Options every subcommand may take; a command's own go to its opt_fn.
 * parse_opts returns 0 with optind at the first operand, EXIT_USAGE, or
 * -1 for --help.
 */
enum {
	OPT_CPU = 0x100, OPT_ELF, OPT_PROGRESS, OPT_NO_SUMMARY, OPT_FLAVOR,
	OPT_SEQ_TIME, OPT_BRANCHES, OPT_PT_CPU, OPT_RAW, OPT_NO_SYMBOLS,
	OPT_MACHINE, OPT_IMAGE_DIR, OPT_THREADS, OPT_SORT, OPT_TOP, OPT_PER_CPU,
	OPT_FORMAT, OPT_ALL,
};

typedef int (*opt_fn)(int opt, const char *arg, void *ctx);

#define COMMON_LONGOPTS \
	{ "help", no_argument, NULL, 'h' }, \
	{ "quiet", no_argument, NULL, 'q' }, \
	{ "progress", no_argument, NULL, OPT_PROGRESS }

/* --elf and --image are one option; --image-dir goes with them. */
#define IMAGE_LONGOPTS \
	{ "elf", required_argument, NULL, OPT_ELF }, \
	{ "image", required_argument, NULL, OPT_ELF }, \
	{ "image-dir", required_argument, NULL, OPT_IMAGE_DIR }

void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int parse_opts(int argc, char **argv, const char *shortopts,
	       const struct option *longopts, struct common *c, opt_fn own,
	       void *ctx);
#define CMD_GO (-1)
int parse_file_cmd(int argc, char **argv, const char *shortopts,
		   const struct option *longopts, struct common *c, opt_fn own,
		   void *ctx, void (*usage)(FILE *));

/* --elf/--image modules into c->st (EXIT_USAGE/EXIT_ERR with a message). */
int load_elfs(struct common *c);
/*
 * load_images - with --image-dir, the trace's IMAGE records as modules
 * (files found in the directory, loaded at the recorded base), after
 * those given by hand; a summary on stderr unless -q.  0 or EXIT_ERR.
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

/* cmd_perf.c */
int cmd_info(int argc, char **argv);
void info_usage(FILE *f);
int cmd_script(int argc, char **argv);
void script_usage(FILE *f);
int cmd_report(int argc, char **argv);
void report_usage(FILE *f);
int cmd_coverage(int argc, char **argv);
void coverage_usage(FILE *f);
int cmd_timeline(int argc, char **argv);
void timeline_usage(FILE *f);

#endif /* TVH_CLI_H */
