/* SPDX-License-Identifier: MIT */
/*
 * cmd_symbolize.c - `tracevisor symbolize`: addresses to func+off
 * (file:line), addr2line style (sym.h does the work).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/sym.h"

void symbolize_usage(FILE *f)
{
	fputs("Usage: tracevisor symbolize --image PATH[@BASE]... [--kallsyms FILE |\n"
	      "       --system-map FILE] [ADDR...]\n"
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
	      "  --kallsyms FILE     kernel symbols from a /proc/kallsyms (as root)\n"
	      "  --system-map FILE   kernel symbols from a System.map (addresses as in\n"
	      "                      the file: no capture to relocate them by)\n"
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

int cmd_symbolize(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "elf", required_argument, NULL, OPT_ELF },
		{ "image", required_argument, NULL, OPT_ELF },
		{ "kallsyms", required_argument, NULL, OPT_KALLSYMS },
		{ "system-map", required_argument, NULL, OPT_SYSTEM_MAP },
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
	if (!c.nelfs && !c.ksyms_path) {
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
