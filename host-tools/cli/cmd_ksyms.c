/* SPDX-License-Identifier: MIT */
/*
 * cmd_ksyms.c - `tracevisor ksyms IMAGE`: the symbol table a kernel image
 * carries for /proc/kallsyms, recovered (kallsyms_img.h) and printed as
 * /proc/kallsyms prints it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host-tools/cli/cli.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/kallsyms_img.h"

void ksyms_usage(FILE *f)
{
	fputs("Usage: tracevisor ksyms [-o FILE] [-q] IMAGE\n"
	      "Print the kernel symbol table that IMAGE (a vmlinux, with or without\n"
	      "an ELF symbol table, e.g. the one extracted from Debian's vmlinuz;\n"
	      "or a raw kernel image) carries for /proc/kallsyms, one\n"
	      "'ADDR TYPE NAME' line per symbol in address order, as /proc/kallsyms\n"
	      "prints it on that kernel booted with nokaslr.  Found by content\n"
	      "(Linux 6.1 to 6.3 and 6.4+ layouts); a summary goes to stderr.\n"
	      "\n"
	      "The other commands take IMAGE itself as --kallsyms or --system-map:\n"
	      "a file that is not text is read this way.\n"
	      "\n"
	      "  -o FILE             write the table to FILE (default: stdout)\n"
	      "  -q, --quiet         no summary\n"
	      "  -h, --help          this text\n", f);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int cmd_ksyms(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	struct common c = { .cpu = -1 };
	struct tvh_kallsyms_img t;
	struct tvh_kallsyms_sym *s = NULL;
	struct tvh_kallsyms_iter it;
	uint8_t *data = NULL;
	size_t len;
	FILE *out = NULL;
	double t0, t1;
	int ret;

	ret = parse_file_cmd(argc, argv, "hqo:", lo, &c, NULL, NULL, ksyms_usage);
	if (ret != CMD_GO)
		goto done;
	if (!c.out)
		c.out = "-";
	ret = read_file(argv[optind], &data, &len);
	if (ret)
		goto done;
	t0 = now_s();
	ret = tvh_kallsyms_img_find(&t, data, len);
	t1 = now_s();
	if (ret) {
		msg("%s: %s", argv[optind], t.error[0] ? t.error : tvh_errstr(ret));
		ret = EXIT_ERR;
		goto done;
	}
	s = malloc(sizeof(*s));
	out = s ? open_out(c.out, "w") : NULL;
	if (!out) {
		if (!s)
			msg("out of memory");
		ret = EXIT_ERR;
		goto done;
	}
	tvh_kallsyms_iter_init(&it, &t);
	while ((ret = tvh_kallsyms_img_next(&t, &it, s)) > 0)
		fprintf(out, "%016llx %c %s\n", (unsigned long long)s->addr, s->type,
			s->name);
	if (ret < 0) {
		msg("%s: symbol %u does not decode", argv[optind], it.i);
		discard_out(out, c.out);
		ret = EXIT_ERR;
		goto done;
	}
	ret = close_out(out, c.out);
	if (!c.quiet)
		msg("%s: %u symbols, kallsyms %s layout%s, relative base %#llx, "
		    "found in %.0f ms", argv[optind], t.num_syms,
		    t.layout == TVH_KALLSYMS_6_1 ? "6.1" :
		    t.layout == TVH_KALLSYMS_6_2 ? "6.2 (seqs_of_names)" : "6.4+",
		    t.abs_percpu ? " (absolute per-CPU)" : "",
		    (unsigned long long)t.relative_base, (t1 - t0) * 1e3);
done:
	free(s);
	free(data);
	common_free(&c);
	return ret;
}
