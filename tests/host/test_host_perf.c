/* SPDX-License-Identifier: MIT */
/*
 * test_host_perf.c - the perf-style commands (info, script, report,
 * coverage, timeline) through the sanitized CLI: golden outputs on a
 * synthetic two-CPU trace, each exporter's output parsed back (a drcov
 * reader here, the JSON parser for the timeline), determinism across
 * thread counts, capture directories, PE/COFF modules, --image-dir from
 * IMAGE records, and every command on the real capture `make run` leaves
 * in build/run (its capture directory, or trace.tvt from the serial path;
 * skipped with the reason when neither is there).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host-tools/lib/le.h"
#include "tests/host/helpers.h"
#include "tests/host/json_check.h"

static char *trace, *elf, *capdir;
static uint64_t helper;

static const char src[] =
	"int helper(int x) {\n"
	"	return x * 3;\n"
	"}\n"
	"int entry(void) {\n"
	"	return helper(4);\n"
	"}\n";

static int cli(const char *args, char **out, char **err)
{
	char *cmd;
	int rc;

	assert_true(asprintf(&cmd, "'%s' %s", th_cli(), args) > 0);
	rc = th_run(cmd, out, err);
	free(cmd);
	return rc;
}

static int setup(void **state)
{
	struct recbuf a = { 0 }, b = { 0 }, c = { 0 };
	struct th_tvt t;
	char *p;

	(void)state;
	elf = th_compile("perf_sym", "c", src,
			 "-g -O0 -nostdlib -static -no-pie -Wl,-e,entry -Wl,--build-id=none");
	if (!elf)
		return -1;
	helper = th_elf_sym(elf, "helper");
	/* cpu0: a call into helper and back, twice; 2 records lost; a jump. */
	rb_startstop(&a, TV_REC_START, TV_TRIG_BOOT, 1000, 0x10);
	rb_image(&a, TV_IMG_OTHER, 1000, helper & ~0xfffull, 0x2000, "/build/DEBUG/perf_sym.dll");
	rb_branch_tsc(&a, TV_BR_CALL, 0x100, helper, 2000, 0);
	rb_branch_tsc(&a, TV_BR_RET, helper + 10, 0x105, 3000, 0);
	rb_branch(&a, TV_BR_CALL, 0x100, helper);
	rb_branch(&a, TV_BR_RET, helper + 10, 0x105);
	rb_branch(&b, TV_BR_JMP, 0x200, 0x300);
	/* cpu1: a loop on one conditional jump. */
	for (int i = 0; i < 3; i++)
		rb_branch(&c, TV_BR_JCC, helper + 4, helper);
	th_tvt_begin(&t, "perf", 3);
	th_tvt_records(&t, 0, 0, &a);
	th_tvt_records(&t, 1, 0, &c);
	th_tvt_records(&t, 0, 8, &b);                 /* seq 6, 7 lost */
	th_tvt_end(&t);
	trace = th_tvt_save(&t, "perf.tvt");
	/* A capture directory: trace.tvt and meta.json. */
	assert_true(asprintf(&capdir, "%s/capture", th_dir()) > 0);
	mkdir(capdir, 0755);
	assert_true(asprintf(&p, "%s/trace.tvt", capdir) > 0);
	th_write_file(p, t.buf, t.len);
	free(p);
	th_tvt_free(&t);
	rb_free(&a);
	rb_free(&b);
	rb_free(&c);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(trace);
	free(elf);
	free(capdir);
	return 0;
}

static void test_help(void **state)
{
	static const char *const cmds[] = { "info", "script", "report", "coverage",
					    "timeline", "drcov", "chrome" };
	char *out, *args, *want;

	(void)state;
	for (unsigned i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		assert_true(asprintf(&args, "%s --help", cmds[i]) > 0);
		assert_true(asprintf(&want, "Usage: tracevisor %s", cmds[i]) > 0);
		assert_int_equal(cli(args, &out, NULL), 0);
		assert_true(th_contains(out, want));
		assert_true(th_contains(out, "Exit status"));
		assert_true(th_contains(out, "Example"));
		free(out);
		free(args);
		free(want);
	}
	assert_int_equal(cli("--help", &out, NULL), 0);
	assert_true(th_contains(out, "old name of 'coverage'"));
	assert_true(th_contains(out, "old name of 'timeline'"));
	free(out);
}

/* Golden: script without symbols, the exact text. */
static void test_script_golden(void **state)
{
	char *out, *args, *want;

	(void)state;
	assert_true(asprintf(&args, "script -q --no-symbols '%s'", trace) > 0);
	assert_int_equal(cli(args, &out, NULL), 0);
	assert_true(asprintf(&want,
		"cpu0            2  call      0x100 => 0x%1$" PRIx64 " tsc=2000\n"
		"cpu0            3  ret       0x%2$" PRIx64 " => 0x105 tsc=3000\n"
		"cpu0            4  call      0x100 => 0x%1$" PRIx64 "\n"
		"cpu0            5  ret       0x%2$" PRIx64 " => 0x105\n"
		"           - cpu0  GAP      seq 6..7: 2 records lost (sequence gap)\n"
		"cpu0            8  jmp       0x200 => 0x300\n"
		"cpu1            0  jcc       0x%3$" PRIx64 " => 0x%1$" PRIx64 "\n"
		"cpu1            1  jcc       0x%3$" PRIx64 " => 0x%1$" PRIx64 "\n"
		"cpu1            2  jcc       0x%3$" PRIx64 " => 0x%1$" PRIx64 "\n",
		helper, helper + 10, helper + 4) > 0);
	assert_string_equal(out, want);
	free(out);
	free(want);
	free(args);
	/* The same for any thread count, and through the capture directory. */
	assert_true(asprintf(&args, "script -q --no-symbols -j 1 '%s'", capdir) > 0);
	assert_int_equal(cli(args, &out, NULL), 0);
	assert_true(th_contains(out, "cpu0            2  call      0x100"));
	free(args);
	assert_true(asprintf(&args, "script -q --no-symbols --threads 8 '%s'", trace) > 0);
	{
		char *out8;

		assert_int_equal(cli(args, &out8, NULL), 0);
		assert_string_equal(out, out8);
		free(out8);
	}
	free(out);
	free(args);
	/* Symbols, and --all shows the other records. */
	assert_true(asprintf(&args, "script -q --all --cpu 0 --image '%s' '%s'", elf, trace) > 0);
	assert_int_equal(cli(args, &out, NULL), 0);
	assert_true(th_contains(out, "=> 0x") && th_contains(out, " helper+0x0 ("));
	assert_true(th_contains(out, "helper+0xa"));
	assert_true(th_contains(out, "START    trigger=boot"));
	assert_false(th_contains(out, "cpu1"));
	free(out);
	free(args);
}

static void test_report_golden(void **state)
{
	char *out, *args, *want;

	(void)state;
	assert_true(asprintf(&args, "report -q --top 2 --image '%s' '%s'", elf, trace) > 0);
	assert_int_equal(cli(args, &out, NULL), 0);
	assert_true(asprintf(&want,
		"# all CPUs: 8 branches, 3 functions, 3 basic blocks, 4 edges\n"
		"#\n"
		"# hottest functions (by branches landing in them)\n"
		"    branches        %%   blocks  function\n"
		"           5   62.50%%        1  helper (perf_sym)\n"
		"           2   25.00%%        1  0x105\n"
		"#\n"
		"# hottest edges (from -> to)\n"
		"       count        %%  kind     edge\n"
		"           3   37.50%%  jcc      0x%" PRIx64 " helper+0x4 (", helper + 4) > 0);
	assert_true(strncmp(out, want, strlen(want)) == 0);
	assert_true(th_contains(out, "           2   25.00%  call     0x100 -> 0x"));
	free(want);
	free(out);
	free(args);
	/* Per CPU, by blocks. */
	assert_true(asprintf(&args, "report -q --per-cpu --sort blocks '%s'", trace) > 0);
	assert_int_equal(cli(args, &out, NULL), 0);
	assert_true(th_contains(out, "# cpu0: 5 branches, 3 functions, 3 basic blocks, 3 edges"));
	assert_true(th_contains(out, "# cpu1: 3 branches, 1 functions, 1 basic blocks, 1 edges"));
	assert_true(th_contains(out, "(by basic blocks executed in them)"));
	free(out);
	free(args);
	assert_int_equal(cli("report --sort nonsense x.tvt", NULL, NULL), 2);
}

/* A drcov reader: header, module table, then the binary BB table. */
struct bb { uint32_t start; uint16_t size, mod; };

static size_t read_drcov(const char *data, size_t len, struct bb *bbs, size_t max,
			 char *mod_path, size_t plen)
{
	const char *p = data, *end = data + len;
	unsigned nmod = 0, n = 0;
	size_t count;

	assert_true(!strncmp(p, "DRCOV VERSION: 2\n", 17));
	p = strstr(p, "Module Table: version 2, count ");
	assert_non_null(p);
	assert_int_equal(sscanf(p, "Module Table: version 2, count %u", &nmod), 1);
	p = strchr(p, '\n') + 1;
	assert_true(!strncmp(p, "Columns: id, base, end, entry, checksum, timestamp, path\n", 57));
	p = strchr(p, '\n') + 1;
	for (unsigned i = 0; i < nmod; i++) {
		const char *nl = strchr(p, '\n'), *comma = p;

		for (int k = 0; k < 6; k++)
			comma = strchr(comma, ',') + 1;
		snprintf(mod_path, plen, "%.*s", (int)(nl - comma - 1), comma + 1);
		p = nl + 1;
	}
	assert_int_equal(sscanf(p, "BB Table: %u bbs", &n), 1);
	p = strchr(p, '\n') + 1;
	count = n;
	assert_int_equal((size_t)(end - p), count * 8);
	assert_true(count <= max);
	for (size_t i = 0; i < count; i++) {
		const uint8_t *q = (const uint8_t *)p + 8 * i;

		bbs[i] = (struct bb){ tvh_le32(q), tvh_le16(q + 4), tvh_le16(q + 6) };
		assert_true(bbs[i].mod < nmod);
	}
	return count;
}

static void test_coverage(void **state)
{
	char *args, *cov = th_path("perf.drcov"), *txt = th_path("perf.modoff");
	char *data, *text, path[512];
	struct bb bbs[16];
	size_t len, n;

	(void)state;
	assert_true(asprintf(&args, "coverage -q '%s' --image '%s' -o '%s'", trace, elf, cov) > 0);
	assert_int_equal(cli(args, NULL, NULL), 0);
	free(args);
	data = th_read_file(cov, &len);
	n = read_drcov(data, len, bbs, 16, path, sizeof(path));
	assert_true(th_contains(path, "perf_sym"));
	/* helper..ret (the block from helper's start to its ret at +10, +1 byte
	 * of a ret), and cpu1's loop helper..jcc at +4 (its length decoded). */
	assert_int_equal(n, 2);
	free(data);
	assert_true(asprintf(&args, "drcov -q '%s' --image '%s' -o '%s' --format modoff -j 1",
			     trace, elf, txt) > 0);
	assert_int_equal(cli(args, NULL, NULL), 0);
	free(args);
	text = th_read_file(txt, &len);
	/* Parsed back: the same blocks as the drcov file, in the same order. */
	{
		char *line = strchr(text, '\n') + 1;

		assert_true(text[0] == '#');
		for (size_t i = 0; i < n; i++) {
			char name[64];
			unsigned off;

			assert_int_equal(sscanf(line, "%63[^+]+%x", name, &off), 2);
			assert_string_equal(name, "perf_sym");
			assert_int_equal(off, bbs[i].start);
			line = strchr(line, '\n') + 1;
		}
		assert_int_equal(*line, 0);
	}
	free(text);
	assert_int_equal(cli("coverage x.tvt -o y", NULL, NULL), 2);
	free(cov);
	free(txt);
}

static void test_timeline(void **state)
{
	char *args, *json = th_path("perf.json"), *data, err[128];
	struct jval *v;
	const struct jval *ev;
	size_t len;
	unsigned b = 0, e = 0;

	(void)state;
	assert_true(asprintf(&args, "timeline -q '%s' --image '%s' -o '%s'", capdir, elf, json) > 0);
	assert_int_equal(cli(args, NULL, NULL), 0);
	free(args);
	data = th_read_file(json, &len);
	v = json_parse(data, len, err, sizeof(err));
	assert_non_null(v);
	ev = json_get(v, "traceEvents");
	assert_non_null(ev);
	for (size_t i = 0; i < ev->len; i++) {
		const char *ph = json_get_str(&ev->items[i], "ph");

		if (ph && !strcmp(ph, "B")) {
			b++;
			assert_string_equal(json_get_str(&ev->items[i], "name"), "helper");
		}
		if (ph && !strcmp(ph, "E"))
			e++;
	}
	assert_int_equal(b, 2);
	assert_int_equal(e, 2);
	json_free(v);
	free(data);
	free(json);
}

static void test_info_and_capture_dir(void **state)
{
	char *out, *err, *args, *empty;

	(void)state;
	assert_true(asprintf(&args, "info '%s'", capdir) > 0);
	assert_int_equal(cli(args, &out, NULL), 0);
	assert_true(th_contains(out, "/capture/trace.tvt"));
	assert_true(th_contains(out, "cpus: 2"));
	assert_true(th_contains(out, "cpu0: source unknown, 7 records, 5 branches, 1 trace windows, tsc 1000..3000"));
	assert_true(th_contains(out, "lost 2 records"));
	assert_true(th_contains(out, "images: 1 (firmware 0, loader 0, kernel 0, other 1)"));
	assert_true(th_contains(out, "/build/DEBUG/perf_sym.dll"));
	free(out);
	free(args);
	empty = th_path("empty-dir");
	mkdir(empty, 0755);
	assert_true(asprintf(&args, "info '%s'", empty) > 0);
	assert_int_equal(cli(args, NULL, &err), 1);
	assert_true(th_contains(err, "a directory without trace.tvt"));
	free(err);
	free(args);
	free(empty);
}

/* --image-dir: the IMAGE record "/build/DEBUG/perf_sym.dll" finds perf_sym. */
static void test_image_dir(void **state)
{
	char *args, *out, *err, *dir = th_path("images"), *cmd;

	(void)state;
	mkdir(dir, 0755);
	assert_true(asprintf(&cmd, "cp '%s' '%s/PERF_SYM'", elf, dir) > 0);
	assert_int_equal(th_run(cmd, NULL, NULL), 0);
	free(cmd);
	/* The record's base is the page of helper: relocated by that much. */
	assert_true(asprintf(&args, "report --top 1 --image-dir '%s' '%s'", dir, trace) > 0);
	assert_int_equal(cli(args, &out, &err), 0);
	assert_true(th_contains(err, "1 IMAGE records: 1 loaded from"));
	assert_true(th_contains(out, "PERF_SYM"));
	free(out);
	free(err);
	free(args);
	free(dir);
}

/* PE/COFF: the ELF made a PE by objcopy (what gnu-efi does); COFF symbols. */
static void test_pe(void **state)
{
	char *cmd, *pe = th_path("perf_sym.efi"), *stripped = th_path("stripped.efi");
	char *args, *out;

	(void)state;
	assert_true(asprintf(&cmd, "objcopy --target=efi-app-x86_64 '%s' '%s' && "
			     "objcopy --strip-all '%s' '%s'", elf, pe, pe, stripped) > 0);
	if (th_run(cmd, NULL, NULL)) {
		free(cmd);
		skip();
	}
	free(cmd);
	/*
	 * objcopy keeps the ELF's addresses as RVAs with ImageBase 0 (a
	 * fixed-address ELF); load the image at 0x10000000 instead.
	 */
	assert_true(asprintf(&args, "symbolize --image '%s@0x10000000' 0x%" PRIx64,
			     pe, 0x10000000 + helper + 3) > 0);
	assert_int_equal(cli(args, &out, NULL), 0);
	assert_true(th_contains(out, "helper+0x3"));
	free(out);
	free(args);
	assert_true(asprintf(&args, "symbolize --image '%s@0x10000000' 0x%" PRIx64,
			     stripped, 0x10000000 + helper + 3) > 0);
	assert_int_equal(cli(args, &out, NULL), 0);
	assert_false(th_contains(out, "helper"));
	assert_true(asprintf(&cmd, "stripped.efi+0x%" PRIx64, helper + 3) > 0);
	assert_true(th_contains(out, cmd));
	free(cmd);
	free(out);
	free(args);
	free(pe);
	free(stripped);
}

/* Every command on the capture of `make run` (MTF trace of tests/payload, 2 CPUs). */
static void test_bochs_capture(void **state)
{
	const char *root = getenv("TV_ROOT") ? getenv("TV_ROOT") : ".";
	char *tvt, *so, *log, *args, *out, *cmd, *json = th_path("run.json");
	char *cov = th_path("run.drcov"), *data, path[512], jerr[128];
	uint64_t at = 0, base;
	struct bb bbs[64];
	size_t len;

	(void)state;
	assert_true(asprintf(&tvt, "%s/build/run/trace.tvt", root) > 0);
	assert_true(asprintf(&so, "%s/build/payload.so", root) > 0);
	assert_true(asprintf(&log, "%s/build/run/serial.log", root) > 0);
	if (access(tvt, R_OK)) {
		/* make run's network path leaves a capture directory instead */
		glob_t g;
		char pat[600];

		snprintf(pat, sizeof(pat), "%s/build/run/cap/*/trace.tvt", root);
		if (glob(pat, 0, NULL, &g) == 0 && g.gl_pathc > 0) {
			free(tvt);
			tvt = strdup(g.gl_pathv[0]);
			assert_non_null(tvt);
			*strrchr(tvt, '/') = '\0';   /* the directory: info etc. take it */
		}
		globfree(&g);
	}
	if (access(tvt, R_OK) || access(so, R_OK) || access(log, R_OK)) {
		print_message("skip: no Bochs capture in %s/build/run (make run makes one)\n", root);
		free(tvt);
		free(so);
		free(log);
		free(json);
		free(cov);
		skip();
	}
	assert_true(asprintf(&cmd, "tr -d '\\r' <'%s' | sed -n 's/.*cpu 0: traced window at \\(0x[0-9a-f]*\\),.*/\\1/p' | head -1", log) > 0);
	assert_int_equal(th_run(cmd, &out, NULL), 0);
	at = strtoull(out, NULL, 16);
	free(out);
	free(cmd);
	if (at == 0) {
		/* make run's default guest is Linux; this test needs RUN_GUEST=payload. */
		print_message("skip: build/run holds no payload window (make run RUN_GUEST=payload makes one)\n");
		free(tvt);
		free(so);
		free(log);
		free(json);
		free(cov);
		skip();
	}
	base = at - th_elf_sym(so, "tv_traced");

	assert_true(asprintf(&args, "info '%s'", tvt) > 0);
	assert_int_equal(cli(args, &out, NULL), 0);
	assert_true(th_contains(out, "cpus: 2"));
	assert_true(th_contains(out, "source mtf"));
	free(out);
	free(args);

	assert_true(asprintf(&args, "script -q '%s' --image '%s@0x%" PRIx64 "'", tvt, so, base) > 0);
	assert_int_equal(cli(args, &out, NULL), 0);
	assert_true(th_contains(out, "cpu0 ") && th_contains(out, "cpu1 "));
	assert_true(th_contains(out, "tv_traced+0x"));
	assert_true(th_contains(out, "call      0x"));
	free(out);
	free(args);

	assert_true(asprintf(&args, "report -q --top 1 '%s' --image '%s@0x%" PRIx64 "'", tvt, so, base) > 0);
	assert_int_equal(cli(args, &out, NULL), 0);
	assert_true(th_contains(out, "  tv_traced (payload.so)\n"));
	free(out);
	free(args);

	assert_true(asprintf(&args, "coverage -q '%s' --image '%s@0x%" PRIx64 "' -o '%s'", tvt, so, base, cov) > 0);
	assert_int_equal(cli(args, NULL, NULL), 0);
	free(args);
	data = th_read_file(cov, &len);
	assert_true(read_drcov(data, len, bbs, 64, path, sizeof(path)) > 0);
	free(data);

	assert_true(asprintf(&args, "timeline -q '%s' --image '%s@0x%" PRIx64 "' -o '%s'", tvt, so, base, json) > 0);
	assert_int_equal(cli(args, NULL, NULL), 0);
	free(args);
	data = th_read_file(json, &len);
	{
		struct jval *v = json_parse(data, len, jerr, sizeof(jerr));

		assert_non_null(v);
		json_free(v);
	}
	free(data);
	free(tvt);
	free(so);
	free(log);
	free(json);
	free(cov);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_script_golden),
		cmocka_unit_test(test_report_golden),
		cmocka_unit_test(test_coverage),
		cmocka_unit_test(test_timeline),
		cmocka_unit_test(test_info_and_capture_dir),
		cmocka_unit_test(test_image_dir),
		cmocka_unit_test(test_pe),
		cmocka_unit_test(test_bochs_capture),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
