/* SPDX-License-Identifier: MIT */
/*
 * main.c - `tracevisor`, the host-side command line: the command table
 * and the dispatch.  Each command (its options, usage text and messages)
 * is in cli/cmd_NAME.c, a thin layer over the library in host-tools/lib
 * (docs/HOST-TOOLS.md); what they share is in cli.c (cli.h).
 *
 * Exit status of every subcommand: 0 done, input clean; 1 error (nothing
 * or not everything written); 2 usage; 3 done, but the input had damaged
 * chunks, malformed records or PT decode errors (reported).
 */
#include <stdio.h>
#include <string.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/tvt.h"
#include "vmm/trace/format.h"
#include "vmm/version.h"

/* ---- the command table ------------------------------------------------------ */

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
	{ "mem", cmd_mem, mem_usage, "accesses to watched memory, symbolized; --sharing: cache-line report" },
	{ "c2c", cmd_mem, mem_usage, "cache-line sharing of watched memory ('mem --sharing', like perf c2c)" },
	{ "symbolize", cmd_symbolize, symbolize_usage, "addresses to func+off (file:line) from ELF/PE files" },
	{ "ksyms", cmd_ksyms, ksyms_usage, "a kernel image's own symbol table (for /proc/kallsyms), recovered" },
	{ "drcov", cmd_coverage, coverage_usage, "old name of 'coverage' (drcov output)" },
	{ "chrome", cmd_timeline, timeline_usage, "old name of 'timeline'" },
	{ "pt", cmd_pt, pt_usage, "a CPU's raw Intel PT stream, for ptdump/ptxed" },
	{ "pt-decode", cmd_pt_decode, pt_decode_usage, "decode a CPU's Intel PT stream with libipt" },
	{ "from-serial", cmd_from_serial, from_serial_usage, "a trace file from the TVT1 lines of a serial log" },
	{ "record", cmd_record, record_usage, "receive traces over UDP into capture directories" },
	{ "control", cmd_control, control_usage, "send an authenticated CONTROL to a traced machine" },
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
