/* SPDX-License-Identifier: MIT */
/*
 * test_host_sym.c - modules and symbolization (host-tools/lib/sym.c) against
 * tiny ELF files compiled at test time: fixed-address, PIE, relocated
 * with @BASE, stripped, without debug info, and bad inputs.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/sym.h"
#include "tests/host/helpers.h"

/* Line numbers matter: helper is on line 1, entry on 2, its call on 3. */
static const char src[] =
	"int helper(int x) { return x * 3 + 1; }\n"
	"int entry(void) {\n"
	"	return helper(4);\n"
	"}\n";

#define EXEC_FLAGS "-g -O0 -nostdlib -static -no-pie -Wl,-e,entry -Wl,--build-id=none"
#define PIE_FLAGS  "-g -O0 -nostdlib -fPIE -pie -Wl,-e,entry -Wl,--build-id=none"

static char *exec_elf, *pie_elf, *stripped_elf, *nodebug_elf, *obj;

static int setup(void **state)
{
	(void)state;
	exec_elf = th_compile("sym_src", "c", src, EXEC_FLAGS);
	pie_elf = th_compile("sym_pie", "c", src, PIE_FLAGS);
	stripped_elf = th_compile("sym_stripped", "c", src, EXEC_FLAGS " -s");
	nodebug_elf = th_compile("sym_nodebug", "c", src,
				 "-O0 -nostdlib -static -no-pie -Wl,-e,entry");
	obj = th_compile("sym_obj.o", "c", src, "-c -g");
	return exec_elf && pie_elf && stripped_elf && nodebug_elf && obj ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(exec_elf);
	free(pie_elf);
	free(stripped_elf);
	free(nodebug_elf);
	free(obj);
	return 0;
}

/* The file bytes at link-time address addr, from the section headers. */
static void file_bytes(const char *path, uint64_t addr, uint8_t *out, size_t n)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	bool done = false;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (!done && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_PROGBITS || addr < sh.sh_addr ||
		    addr + n > sh.sh_addr + sh.sh_size)
			continue;
		assert_int_equal(pread(fd, out, n, (off_t)(sh.sh_offset + addr - sh.sh_addr)),
				 (ssize_t)n);
		done = true;
	}
	elf_end(elf);
	close(fd);
	assert_true(done);
}

static bool ends_with(const char *s, const char *tail)
{
	size_t a = s ? strlen(s) : 0, b = strlen(tail);

	return s && a >= b && !strcmp(s + a - b, tail);
}

static void check_helper_and_entry(struct tvh_symtab *st, uint64_t bias,
				   const char *path)
{
	uint64_t helper = th_elf_sym(path, "helper") + bias;
	uint64_t entry = th_elf_sym(path, "entry") + bias;
	struct tvh_sym s;
	bool line3 = false;

	assert_int_equal(tvh_sym_lookup(st, helper, &s), 0);
	assert_string_equal(s.func, "helper");
	assert_int_equal(s.func_offset, 0);
	assert_true(ends_with(s.file, ".c"));
	assert_int_equal(s.line, 1);
	assert_int_equal(tvh_sym_lookup(st, helper + 4, &s), 0);
	assert_string_equal(s.func, "helper");
	assert_int_equal(s.func_offset, 4);
	assert_int_equal(tvh_sym_lookup(st, entry, &s), 0);
	assert_string_equal(s.func, "entry");
	assert_int_equal(s.line, 2);
	for (uint64_t a = entry; a < entry + 32; a++) {
		assert_int_equal(tvh_sym_lookup(st, a, &s), 0);
		if (s.func && !strcmp(s.func, "entry") && s.line == 3)
			line3 = true;
	}
	assert_true(line3);
}

static void test_fixed_address(void **state)
{
	struct tvh_symtab st;
	char buf[256];
	uint64_t helper = th_elf_sym(exec_elf, "helper");
	int n;

	(void)state;
	tvh_symtab_init(&st);
	assert_int_equal(tvh_symtab_add(&st, exec_elf), 0);
	assert_false(st.mods[0].has_base);
	assert_int_equal(st.mods[0].bias, 0);
	assert_true(st.mods[0].base <= helper && helper < st.mods[0].end);
	assert_int_equal(st.mods[0].entry, th_elf_sym(exec_elf, "entry"));
	assert_string_equal(st.mods[0].name, "sym_src");
	check_helper_and_entry(&st, 0, exec_elf);

	n = tvh_sym_format(&st, helper + 2, buf, sizeof(buf));
	assert_int_equal(n, (int)strlen(buf));
	assert_true(!strncmp(buf, "helper+0x2 (", 12));
	assert_true(ends_with(buf, "sym_src.c:1)"));
	/* Truncation keeps a NUL and reports what fits. */
	assert_int_equal(tvh_sym_format(&st, helper, buf, 5), 4);
	assert_string_equal(buf, "help");
	/* Outside every module. */
	assert_int_equal(tvh_symtab_find(&st, 0x10), -1);
	assert_int_equal(tvh_sym_format(&st, 0x10, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	{
		struct tvh_sym s;

		assert_int_equal(tvh_sym_lookup(&st, 0x10, &s), -TVH_ERR_NOT_FOUND);
		assert_int_equal(s.module, -1);
	}
	/* Cached the second time. */
	{
		uint64_t hits = st.cache_hits;
		struct tvh_sym s;

		assert_int_equal(tvh_sym_lookup(&st, helper, &s), 0);
		assert_true(st.cache_hits > hits);
	}
	tvh_symtab_free(&st);
}

static void test_relocated_and_pie(void **state)
{
	struct tvh_symtab st;
	char *spec;
	const uint64_t exec_base = 0xffffffff9a000000ull;   /* a KASLR-like base */
	const uint64_t pie_base = 0x7f0000000000ull;
	uint64_t bias;
	uint8_t got[16], want[16];

	(void)state;
	tvh_symtab_init(&st);
	assert_true(asprintf(&spec, "%s@0x%llx", exec_elf,
			     (unsigned long long)exec_base) > 0);
	assert_int_equal(tvh_symtab_add(&st, spec), 0);
	free(spec);
	assert_true(st.mods[0].has_base);
	assert_int_equal(st.mods[0].base, exec_base);
	bias = st.mods[0].bias;
	check_helper_and_entry(&st, bias, exec_elf);
	/* The unrelocated address is no longer in the module. */
	assert_int_equal(tvh_symtab_find(&st, th_elf_sym(exec_elf, "helper")), -1);

	assert_true(asprintf(&spec, "%s@%llu", pie_elf, (unsigned long long)pie_base) > 0);
	assert_int_equal(tvh_symtab_add(&st, spec), 1);
	free(spec);
	assert_int_equal(st.mods[1].base, pie_base);
	check_helper_and_entry(&st, st.mods[1].bias, pie_elf);
	assert_int_equal(tvh_symtab_find(&st, pie_base + th_elf_sym(pie_elf, "helper")), 1);
	assert_int_equal(tvh_symtab_find(&st, exec_base + 0x10), 0);

	/* Code bytes at run-time addresses are the file's. */
	file_bytes(exec_elf, th_elf_sym(exec_elf, "helper"), want, sizeof(want));
	assert_int_equal(tvh_sym_read(&st, th_elf_sym(exec_elf, "helper") + bias, got,
				      sizeof(got)), sizeof(got));
	assert_memory_equal(got, want, sizeof(want));
	assert_int_equal(tvh_sym_read(&st, 0x10, got, sizeof(got)), 0);
	tvh_symtab_free(&st);
}

static void test_stripped_and_nodebug(void **state)
{
	struct tvh_symtab st;
	struct tvh_sym s;
	char buf[256];
	uint64_t helper = th_elf_sym(nodebug_elf, "helper");

	(void)state;
	tvh_symtab_init(&st);
	assert_int_equal(tvh_symtab_add(&st, nodebug_elf), 0);
	assert_int_equal(tvh_sym_lookup(&st, helper + 1, &s), 0);
	assert_string_equal(s.func, "helper");
	assert_null(s.file);
	tvh_sym_format(&st, helper + 1, buf, sizeof(buf));
	assert_string_equal(buf, "helper+0x1");
	tvh_symtab_free(&st);

	/* No symbols at all: module+offset. */
	tvh_symtab_init(&st);
	assert_int_equal(tvh_symtab_add(&st, stripped_elf), 0);
	assert_int_equal(tvh_sym_lookup(&st, st.mods[0].base + 0x1003, &s), 0);
	assert_null(s.func);
	tvh_sym_format(&st, st.mods[0].base + 0x1003, buf, sizeof(buf));
	assert_string_equal(buf, "sym_stripped+0x1003");
	tvh_symtab_free(&st);
}

static void test_bad_modules(void **state)
{
	struct tvh_symtab st;
	char *missing = th_path("missing.elf"), *text = th_path("text.txt"), *spec;

	(void)state;
	th_write_file(text, "not an elf\n", 11);
	tvh_symtab_init(&st);
	assert_int_equal(tvh_symtab_add(&st, missing), -TVH_ERR_IO);
	assert_non_null(strstr(st.error, "missing.elf"));
	assert_int_equal(tvh_symtab_add(&st, text), -TVH_ERR_ELF);
	assert_non_null(strstr(st.error, "not an ELF"));
	assert_int_equal(tvh_symtab_add(&st, obj), -TVH_ERR_ELF);
	assert_non_null(strstr(st.error, "ET_EXEC"));
	assert_int_equal(tvh_symtab_add(&st, ""), -TVH_ERR_INVALID);
	assert_int_equal(tvh_symtab_add(&st, "@0x1000"), -TVH_ERR_INVALID);
	assert_true(asprintf(&spec, "%s@0x1000", missing) > 0);
	assert_int_equal(tvh_symtab_add(&st, spec), -TVH_ERR_IO);
	assert_int_equal(st.nmods, 0);
	free(spec);
	tvh_symtab_free(&st);
	free(missing);
	free(text);
}

static void test_spec_parsing(void **state)
{
	char *path;
	uint64_t base;
	bool has;

	(void)state;
	assert_int_equal(tvh_parse_elf_spec("vmlinux@0xffffffff81000000", false, &path,
					    &base, &has), 0);
	assert_string_equal(path, "vmlinux");
	assert_true(has);
	assert_int_equal(base, 0xffffffff81000000ull);
	free(path);
	assert_int_equal(tvh_parse_elf_spec("a@b/c.elf", false, &path, &base, &has), 0);
	assert_string_equal(path, "a@b/c.elf");
	assert_false(has);
	free(path);
	assert_int_equal(tvh_parse_elf_spec("x@1/y@4096", false, &path, &base, &has), 0);
	assert_string_equal(path, "x@1/y");
	assert_int_equal(base, 4096);
	free(path);
	assert_int_equal(tvh_parse_elf_spec("f@", false, &path, &base, &has), 0);
	assert_string_equal(path, "f@");
	free(path);
	assert_int_equal(tvh_parse_elf_spec("f@-5", false, &path, &base, &has), 0);
	assert_string_equal(path, "f@-5");
	free(path);
	assert_int_equal(tvh_parse_elf_spec("f", true, &path, &base, &has), -TVH_ERR_INVALID);
	assert_int_equal(tvh_parse_elf_spec("", false, &path, &base, &has), -TVH_ERR_INVALID);
	assert_int_equal(tvh_parse_elf_spec(NULL, false, &path, &base, &has), -TVH_ERR_INVALID);
	assert_null(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed_address),
		cmocka_unit_test(test_relocated_and_pie),
		cmocka_unit_test(test_stripped_and_nodebug),
		cmocka_unit_test(test_bad_modules),
		cmocka_unit_test(test_spec_parsing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
