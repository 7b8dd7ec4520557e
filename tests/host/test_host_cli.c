/* SPDX-License-Identifier: MIT */
/*
 * test_host_cli.c - the `tracevisor` command line, run as a process (the
 * ASan/UBSan build next to this test): help on every subcommand, usage
 * errors (exit 2), bad input (1), damaged input (3), and each
 * subcommand's output on small generated traces.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/host/helpers.h"
#include "tests/host/json_check.h"
#include "tests/host/pt_fixture.h"

static const char *const subcommands[] = {
	"dump", "symbolize", "drcov", "chrome", "pt", "pt-decode", "from-serial",
};

static struct pt_fixture fx;
static char *trace;          /* a clean trace */
static char *damaged;        /* the same with a bad CRC */
static char *sym_elf;        /* C program with debug info */
static uint64_t helper;

static const char sym_src[] =
	"int helper(int x) { return x * 3 + 1; }\n"
	"int entry(void) {\n"
	"	return helper(4);\n"
	"}\n";

/* Runs "CLI ARGS"; returns the exit status. */
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
	struct recbuf a = { 0 }, b = { 0 };
	struct th_tvt t;
	uint8_t pt[512];
	size_t ptlen = 0;

	(void)state;
	if (ptf_build(&fx))
		return -1;
	sym_elf = th_compile("cli_sym", "c", sym_src,
			     "-g -O0 -nostdlib -static -no-pie -Wl,-e,entry -Wl,--build-id=none");
	if (!sym_elf)
		return -1;
	helper = th_elf_sym(sym_elf, "helper");
	ptf_encode(&fx, pt, sizeof(pt), &ptlen, 1);

	rb_time(&a, 1000, 1000000000ull, 0);
	rb_startstop(&a, TV_REC_START, TV_TRIG_BOOT, 1000, 0x10);
	rb_branch_tsc(&a, TV_BR_CALL, 0x100, helper, 2000, 0);
	rb_branch_tsc(&a, TV_BR_RET, helper + 10, 0x105, 3000, 0);
	rb_marker(&a, 3500, 1, "phase", 5);
	rb_branch(&b, TV_BR_JMP, 0x200, 0x300);
	th_tvt_begin(&t, "lab", 7);
	th_tvt_records(&t, 0, 0, &a);
	th_tvt_records(&t, 0, 7, &b);                 /* 2 records lost */
	th_tvt_chunk(&t, 1, TVT_KIND_PT, 0, 0, pt, 20);
	th_tvt_chunk(&t, 1, TVT_KIND_PT, 0, 20, pt + 20, ptlen - 20);
	th_tvt_end(&t);
	trace = th_tvt_save(&t, "cli.tvt");
	t.buf[t.len - 1 - 8 - 40 - 8] ^= 0x01;        /* inside the last chunks */
	damaged = th_tvt_save(&t, "cli-damaged.tvt");
	th_tvt_free(&t);
	rb_free(&a);
	rb_free(&b);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	ptf_free(&fx);
	free(trace);
	free(damaged);
	free(sym_elf);
	return 0;
}

static void test_help(void **state)
{
	char *out, *err, *args, *want;

	(void)state;
	assert_int_equal(cli("--help", &out, NULL), 0);
	assert_true(th_contains(out, "Usage: tracevisor COMMAND"));
	free(out);
	assert_int_equal(cli("--version", &out, NULL), 0);
	assert_true(th_contains(out, "tracevisor host tools"));
	free(out);
	assert_int_equal(cli("", NULL, &err), 2);
	assert_true(th_contains(err, "Usage:"));
	free(err);
	assert_int_equal(cli("frobnicate", NULL, &err), 2);
	assert_true(th_contains(err, "unknown command 'frobnicate'"));
	free(err);
	for (unsigned i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++) {
		assert_true(asprintf(&want, "Usage: tracevisor %s", subcommands[i]) > 0);
		assert_true(asprintf(&args, "%s --help", subcommands[i]) > 0);
		assert_int_equal(cli(args, &out, NULL), 0);
		assert_true(th_contains(out, want));
		free(out);
		free(args);
		assert_true(asprintf(&args, "help %s", subcommands[i]) > 0);
		assert_int_equal(cli(args, &out, NULL), 0);
		assert_true(th_contains(out, want));
		free(out);
		free(args);
		free(want);
	}
}

static void test_usage_errors(void **state)
{
	static const struct {
		const char *args;
		const char *msg;
	} cases[] = {
		{ "dump", "missing FILE" },
		{ "dump a b", "one FILE expected" },
		{ "dump --bogus x", "option '--bogus' is unknown" },
		{ "dump -Z x", "option '-Z' is unknown" },
		{ "dump --cpu", "option '--cpu' needs a value" },
		{ "dump --cpu x1 f", "bad CPU index 'x1'" },
		{ "dump --cpu -1 f", "bad CPU index" },
		{ "drcov f.tvt", "missing -o" },
		{ "drcov f.tvt -o x.drcov", "at least one --elf" },
		{ "chrome f.tvt", "missing -o" },
		{ "pt f.tvt -o x.pt", "missing --cpu" },
		{ "pt f.tvt --cpu 1", "missing -o" },
		{ "pt-decode f.tvt", "missing --cpu" },
		{ "pt-decode --pt-cpu 6 --raw f.pt", "bad --pt-cpu" },
		{ "symbolize 0x1000", "at least one --elf" },
		{ "drcov f.tvt -o x --elf a --flavor ''", "bad flavor" },
		{ "from-serial", "missing LOGFILE" },
		{ "from-serial a.log b.log -o x.tvt", "one LOGFILE expected" },
		{ "from-serial a.log", "missing -o" },
		{ "from-serial a.log -o x.tvt --machine", "option '--machine' needs a value" },
	};
	char *err;

	(void)state;
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = cli(cases[i].args, NULL, &err);

		if (rc != 2)
			fail_msg("'%s': exit %d, want 2\n%s", cases[i].args, rc, err);
		assert_true(th_contains(err, cases[i].msg));
		assert_true(th_contains(err, "--help"));
		free(err);
	}
}

static void test_bad_input(void **state)
{
	char *err, *args, *text = th_path("notes.txt");

	(void)state;
	static const char notes[] =
		"just text, long enough to hold a header......................\n";

	th_write_file(text, notes, sizeof(notes) - 1);
	assert_true(asprintf(&args, "dump '%s'", text) > 0);
	assert_int_equal(cli(args, NULL, &err), 1);
	assert_true(th_contains(err, "not a tracevisor trace file"));
	free(err);
	free(args);
	assert_int_equal(cli("dump /nonexistent/x.tvt", NULL, &err), 1);
	assert_true(th_contains(err, "No such file"));
	free(err);
	assert_true(asprintf(&args, "dump --elf '%s' '%s'", text, trace) > 0);
	assert_int_equal(cli(args, NULL, &err), 1);
	assert_true(th_contains(err, "not an ELF file"));
	free(err);
	free(args);
	{
		/* A failed output is removed, but only a regular file. */
		char *pt0 = th_path("cpu0.pt");

		assert_true(asprintf(&args, "pt '%s' --cpu 0 -o '%s'", trace, pt0) > 0);
		assert_int_equal(cli(args, NULL, &err), 1);
		assert_true(th_contains(err, "no PT data for CPU 0"));
		assert_int_equal(access(pt0, F_OK), -1);
		free(err);
		free(args);
		free(pt0);
		assert_true(asprintf(&args, "pt '%s' --cpu 0 -o - >/dev/null", trace) > 0);
		assert_int_equal(cli(args, NULL, &err), 1);
		free(err);
		free(args);
	}
	assert_true(asprintf(&args, "chrome '%s' -o /nonexistent/dir/x.json", trace) > 0);
	assert_int_equal(cli(args, NULL, &err), 1);
	free(err);
	free(args);
	free(text);
}

static void test_dump(void **state)
{
	char *out, *err, *args;

	(void)state;
	assert_true(asprintf(&args, "dump -q '%s'", trace) > 0);
	assert_int_equal(cli(args, &out, &err), 0);
	assert_true(th_contains(out, "# tracevisor trace: session 0x0000000000000007, machine \"lab\""));
	assert_true(th_contains(out, "           1 cpu0  START    trigger=boot rip=0x10 tsc=1000\n"));
	assert_true(th_contains(out, " cpu0  BRANCH   0x100 -> 0x"));
	assert_true(th_contains(out, " call tsc=2000\n"));
	assert_true(th_contains(out, "           4 cpu0  MARKER   value=0x1 \"phase\" tsc=3500\n"));
	assert_true(th_contains(out, "           - cpu0  GAP      seq 5..6: 2 records lost (sequence gap)\n"));
	assert_true(th_contains(out, "           7 cpu0  BRANCH   0x200 -> 0x300 jmp\n"));
	assert_true(th_contains(out, "lost records: 2 (sequence gaps 2, before first chunk 0, LOST records 0)\n"));
	assert_true(th_contains(out, "malformed records: 0\n"));
	assert_true(th_contains(out, "cpu1: no record stream, pt 42 bytes"));
	free(out);
	free(err);
	free(args);

	/* Symbolized. */
	assert_true(asprintf(&args, "dump -q --elf '%s' '%s'", sym_elf, trace) > 0);
	assert_int_equal(cli(args, &out, NULL), 0);
	assert_true(th_contains(out, " helper+0x0 (") && th_contains(out, "cli_sym.c:1) call"));
	assert_true(th_contains(out, " helper+0xa ("));
	free(out);
	free(args);

	/* Summary only, one CPU, forced progress on stderr. */
	assert_true(asprintf(&args, "dump -s --cpu 0 --progress '%s'", trace) > 0);
	assert_int_equal(cli(args, &out, &err), 0);
	assert_null(strstr(out, "trigger=boot"));
	assert_true(th_contains(out, "records: 6\n"));
	assert_true(th_contains(err, "dump: 100%"));
	free(out);
	free(err);
	free(args);

	/* Damaged: still dumped, exit 3, the damage named. */
	assert_true(asprintf(&args, "dump -q '%s'", damaged) > 0);
	assert_int_equal(cli(args, &out, &err), 3);
	assert_true(th_contains(out, "BAD_CHUNK"));
	assert_true(th_contains(out, "checksum mismatch"));
	assert_true(th_contains(err, "damaged input"));
	free(out);
	free(err);
	free(args);
}

static void test_symbolize(void **state)
{
	char *out, *err, *args, *cmd;

	(void)state;
	assert_true(asprintf(&args, "symbolize --elf '%s' 0x%llx %llx 0x10", sym_elf,
			     (unsigned long long)helper, (unsigned long long)helper + 1) > 0);
	assert_int_equal(cli(args, &out, NULL), 0);
	assert_true(th_contains(out, " helper+0x0 ("));
	assert_true(th_contains(out, " helper+0x1 ("));
	assert_true(th_contains(out, "0x10 ??\n"));
	free(out);
	free(args);
	assert_true(asprintf(&args, "symbolize --elf '%s' zz", sym_elf) > 0);
	assert_int_equal(cli(args, NULL, &err), 1);
	assert_true(th_contains(err, "bad address 'zz'"));
	free(err);
	free(args);
	/* From stdin. */
	assert_true(asprintf(&cmd, "printf '  0x%llx \\n\\n' | '%s' symbolize --elf '%s'",
			     (unsigned long long)helper, th_cli(), sym_elf) > 0);
	{
		char *o = NULL;
		int rc;
		char *full;

		assert_true(asprintf(&full, "%s", cmd) > 0);
		rc = th_run(full, &o, NULL);
		assert_int_equal(rc, 0);
		assert_true(th_contains(o, " helper+0x0 ("));
		free(o);
		free(full);
	}
	free(cmd);
}

static void test_drcov_and_chrome(void **state)
{
	char *out, *err, *args, *cov = th_path("out.drcov"), *json = th_path("out.json");
	char *data, jerr[64];
	size_t len;
	struct jval *v;

	(void)state;
	/* CPU 0: CPU 1 holds the PT of another program (test_pt_script). */
	assert_true(asprintf(&args, "drcov '%s' --cpu 0 -o '%s' --elf '%s' --flavor test",
			     trace, cov, sym_elf) > 0);
	assert_int_equal(cli(args, NULL, &err), 0);
	assert_true(th_contains(err, "blocks"));
	free(err);
	free(args);
	data = th_read_file(cov, &len);
	assert_true(!strncmp(data, "DRCOV VERSION: 2\nDRCOV FLAVOR: test\n"
			     "Module Table: version 2, count 1\n", 67));
	/* One block: helper .. helper+10 plus a length-1 guess (not a branch there). */
	assert_true(th_contains(data, "BB Table: 1 bbs\n"));
	free(data);

	/* CPU 0 again: timeline decodes CPU 1's PT, which is not sym_elf's code. */
	assert_true(asprintf(&args, "chrome -q '%s' --cpu 0 -o '%s' --elf '%s'", trace,
			     json, sym_elf) > 0);
	assert_int_equal(cli(args, &out, &err), 0);
	free(out);
	free(err);
	free(args);
	data = th_read_file(json, &len);
	v = json_parse(data, len, jerr, sizeof(jerr));
	if (!v)
		fail_msg("bad JSON: %s", jerr);
	assert_true(th_contains(data, "\"name\":\"helper\""));
	assert_true(th_contains(data, "\"time_base\":\"tsc\""));
	json_free(v);
	free(data);

	/* CPU 1's PT decoded over its program: call slices, no errors. */
	assert_true(asprintf(&args, "timeline '%s' --cpu 1 -o '%s' --elf '%s'", trace,
			     json, fx.elf) > 0);
	assert_int_equal(cli(args, &out, &err), 0);
	assert_true(th_contains(err, "Intel PT of 1 CPU: "));
	assert_true(th_contains(err, " 0 decode errors"));
	free(out);
	free(err);
	free(args);
	data = th_read_file(json, &len);
	v = json_parse(data, len, jerr, sizeof(jerr));
	if (!v)
		fail_msg("bad JSON: %s", jerr);
	assert_true(th_contains(data, "\"cat\":\"call\""));
	json_free(v);
	free(data);
	free(cov);
	free(json);
}

static void test_pt_commands(void **state)
{
	char *out, *err, *args, *raw = th_path("cpu1.pt"), *spec;
	uint8_t pt[512];
	size_t ptlen = 0, len;
	char *data;

	(void)state;
	ptf_encode(&fx, pt, sizeof(pt), &ptlen, 1);
	assert_true(asprintf(&args, "pt '%s' --cpu 1 -o '%s'", trace, raw) > 0);
	assert_int_equal(cli(args, NULL, &err), 0);
	assert_true(th_contains(err, "run: stream offsets 0x0.."));
	free(err);
	free(args);
	data = th_read_file(raw, &len);
	assert_int_equal(len, ptlen);
	assert_memory_equal(data, pt, ptlen);
	free(data);

	spec = fx.elf;
	assert_true(asprintf(&args, "pt-decode '%s' --cpu 1 --elf '%s'", trace, spec) > 0);
	assert_int_equal(cli(args, &out, &err), 0);
	assert_true(th_contains(out, "[sync at offset 0x0]\n"));
	assert_true(th_contains(out, "[enabled 0x"));
	assert_true(th_contains(out, "e8 "));      /* the call's bytes */
	assert_true(th_contains(out, "call     i_call+0x0"));
	assert_true(th_contains(out, "[disabled 0xdead000]"));
	assert_true(th_contains(err, "20 instructions"));
	assert_true(th_contains(err, "0 decode errors"));
	free(out);
	free(err);
	free(args);

	assert_true(asprintf(&args, "pt-decode --raw '%s' --branches --no-symbols --elf '%s'",
			     raw, spec) > 0);
	assert_int_equal(cli(args, &out, &err), 0);
	assert_true(th_contains(out, " -> 0xdead000 jmp\n"));
	assert_null(strstr(out, "i_call"));
	assert_true(th_contains(err, "10 branches"));
	free(out);
	free(err);
	free(args);

	/* A broken stream: decode error reported with its offset, exit 3. */
	{
		uint8_t bad[1024];
		size_t n = 0;
		char *badpath = th_path("bad.pt");

		ptf_encode(&fx, bad, sizeof(bad), &n, 0);
		ptf_encode(&fx, bad, sizeof(bad), &n, 1);
		th_write_file(badpath, bad, n);
		assert_true(asprintf(&args, "pt-decode -q --raw '%s' --elf '%s'", badpath, spec) > 0);
		assert_int_equal(cli(args, &out, NULL), 3);
		assert_true(th_contains(out, "[error at offset 0x"));
		assert_true(th_contains(out, "compressed return"));
		free(out);
		free(args);
		free(badpath);
	}
	free(raw);
}

/* A loss counted by PT_SYNC in the middle of a packet sequence. */
static void test_pt_cut(void **state)
{
	uint8_t pt[1024];
	size_t len, cut, resume;
	struct recbuf rec = { 0 };
	struct th_tvt t;
	char *path, *out, *err, *args, *want, *raw = th_path("cut.pt");

	(void)state;
	ptf_encode_cut(&fx, pt, sizeof(pt), &len, &cut, &resume);
	rb_pt_sync(&rec, 100, cut, 1);
	th_tvt_begin(&t, "lab", 7);
	th_tvt_chunk(&t, 0, TVT_KIND_PT, 0, 0, pt, len);
	th_tvt_records(&t, 0, 0, &rec);
	th_tvt_end(&t);
	path = th_tvt_save(&t, "cut.tvt");
	th_tvt_free(&t);
	rb_free(&rec);

	assert_true(asprintf(&args, "pt-decode '%s' --cpu 0 --elf '%s'", path, fx.elf) > 0);
	assert_int_equal(cli(args, &out, &err), 0);
	assert_null(strstr(out, "[error"));
	assert_true(asprintf(&want, "[gap: 1 PT bytes lost at offset 0x%zx (counted by PT_SYNC);"
			     " decoding resumes at the next PSB]\n[sync at offset 0x%zx]\n",
			     cut, resume) > 0);
	assert_true(th_contains(out, want));
	assert_true(th_contains(err, ", 0 lost in gaps, 1 lost at 1 cuts (counted by PT_SYNC);"));
	assert_true(th_contains(err, " 0 decode errors"));
	free(want);
	free(out);
	free(err);
	free(args);

	assert_true(asprintf(&args, "pt '%s' --cpu 0 -o '%s'", path, raw) > 0);
	assert_int_equal(cli(args, NULL, &err), 0);
	assert_true(asprintf(&want, "gap: 1 bytes lost at stream offset 0x%zx (counted by PT_SYNC", cut) > 0);
	assert_true(th_contains(err, want));
	free(want);
	free(err);
	free(args);
	free(raw);
	free(path);
}

/* script/coverage on a PT capture: branches from libipt, the cut as a PT_GAP. */
static void test_pt_script(void **state)
{
	uint8_t pt[1024];
	size_t len, cut, resume;
	struct recbuf rec = { 0 };
	struct th_tvt t;
	char *path, *out, *err, *args, *want = NULL, *line, *cov = th_path("pt.modoff");
	size_t wlen = 0;
	FILE *w;
	unsigned nb = 0;

	(void)state;
	ptf_encode_cut(&fx, pt, sizeof(pt), &len, &cut, &resume);
	rb_pt_sync(&rec, 100, 0, 0);
	rb_pt_sync(&rec, 200, cut, 1);
	th_tvt_begin(&t, "lab", 7);
	th_tvt_records(&t, 0, 0, &rec);
	th_tvt_chunk(&t, 0, TVT_KIND_PT, TVT_CHUNK_F_STREAM_START, 0, pt, 9);
	th_tvt_chunk(&t, 0, TVT_KIND_PT, 0, 9, pt + 9, len - 9);
	th_tvt_end(&t);
	path = th_tvt_save(&t, "pt-script.tvt");
	th_tvt_free(&t);
	rb_free(&rec);

	/* Expected: before the cut, the transfers up to the second call's ret
	 * (the last jnz is never resolved); the cut; after it, all of them. */
	w = open_memstream(&want, &wlen);
	for (unsigned i = 0; i < 8; i++, nb++)
		fprintf(w, "cpu0   %10u  %-9s 0x%llx => 0x%llx\n", nb,
			fx.taken[i].c == ptic_call ? "call" : fx.taken[i].c == ptic_return ?
			"ret" : "jcc", (unsigned long long)fx.taken[i].from,
			(unsigned long long)fx.taken[i].to);
	fprintf(w, "           - cpu0  PT_GAP   offset 0x%zx: 1 PT bytes lost"
		" (counted by PT_SYNC)\n", cut);
	for (unsigned i = 0; i < fx.ntaken; i++, nb++)
		fprintf(w, "cpu0   %10u  %-9s 0x%llx => 0x%llx\n", nb,
			fx.taken[i].c == ptic_call ? "call" : fx.taken[i].c == ptic_return ?
			"ret" : fx.taken[i].c == ptic_cond_jump ? "jcc" : "jmp-ind",
			(unsigned long long)fx.taken[i].from,
			(unsigned long long)fx.taken[i].to);
	fclose(w);

	assert_true(asprintf(&args, "script '%s' --no-symbols --image '%s'", path, fx.elf) > 0);
	assert_int_equal(cli(args, &out, &err), 0);
	/* Each branch line ends in pt@0xOFF (the decoder's offset): strip it. */
	for (line = out; (line = strstr(line, " pt@0x")) != NULL;) {
		char *end = strchr(line, '\n');

		memmove(line, end, strlen(end) + 1);
	}
	assert_string_equal(out, want);
	assert_true(th_contains(err, "Intel PT of 1 CPU: "));
	assert_true(th_contains(err, " into 18 branches, 2 syncs, 0 decode errors; lost 0 bytes in gaps,"
				" 1 at 1 cuts"));
	free(out);
	free(err);
	free(args);

	/* Without the code: said on stderr, not silently nothing. */
	assert_true(asprintf(&args, "script '%s'", path) > 0);
	assert_int_equal(cli(args, &out, &err), 0);
	assert_null(strstr(out, "cpu0 "));
	assert_true(th_contains(err, "cpu0: "));
	assert_true(th_contains(err, " bytes of Intel PT not decoded: PT needs the code"));
	assert_true(th_contains(err, "--image"));
	free(out);
	free(err);
	free(args);

	/* Coverage: blocks from the decoded branches. */
	assert_true(asprintf(&args, "coverage '%s' --format modoff -o '%s' --image '%s'",
			     path, cov, fx.elf) > 0);
	assert_int_equal(cli(args, NULL, &err), 0);
	free(err);
	free(args);
	out = th_read_file(cov, &len);
	/* First-seen order; 0x100a twice: ended by the taken jnz, then by jmp *%rax. */
	assert_true(th_contains(out, "\npt_prog+101c\npt_prog+100a\npt_prog+1005\n"
				"pt_prog+100a\npt_prog+1019\n"));
	assert_int_equal(ptf_sym(&fx, "func"), 0x40101c);
	assert_int_equal(ptf_sym(&fx, "target"), 0x401019);
	free(out);
	free(cov);
	free(want);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_dump),
		cmocka_unit_test(test_symbolize),
		cmocka_unit_test(test_drcov_and_chrome),
		cmocka_unit_test(test_pt_commands),
		cmocka_unit_test(test_pt_cut),
		cmocka_unit_test(test_pt_script),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
