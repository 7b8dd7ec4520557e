/* SPDX-License-Identifier: MIT */
/*
 * test_host_ksyms.c - kernel symbols as users have them (ksyms.c):
 * System.map and /proc/kallsyms parsing with malformed lines, lookup,
 * relocation from the capture (images.c), the symtab's fallbacks (kernel
 * symbols, IMAGE records' names: sym.c), and module extents from the
 * executable segments for coverage (drcov.c) on a vmlinux-shaped ELF.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "host-tools/lib/drcov.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/images.h"
#include "host-tools/lib/ksyms.h"
#include "host-tools/lib/report.h"
#include "host-tools/lib/script.h"
#include "host-tools/lib/sym.h"
#include "tests/host/helpers.h"

static const char sysmap[] =
	"0000000000000000 D fixed_percpu_data\n"
	"0000000000001000 A __per_cpu_end\n"
	"ffffffff81000000 T _text\n"
	"ffffffff81000000 T startup_64\n"
	"ffffffff81000070 T secondary_startup_64\n"
	"ffffffff81001000 t do_one_initcall\n"
	"ffffffff81001000 T do_one_initcall_alias\n"
	"ffffffff81002000 T start_kernel\n"
	"ffffffff81003000 T _etext\n"
	"ffffffff82000000 D some_data\n"
	"ffffffff82100000 B _end\n";

static int parse(struct tvh_ksyms *k, const char *text, enum tvh_ksyms_format f)
{
	tvh_ksyms_init(k);
	return tvh_ksyms_parse(k, text, strlen(text), f, "map");
}

static void lookup_is(const struct tvh_ksyms *k, uint64_t a, const char *name,
		      uint64_t off)
{
	const char *n, *m;
	uint64_t o;

	assert_int_equal(tvh_ksyms_lookup(k, a, &n, &o, &m), 0);
	assert_string_equal(n, name);
	assert_int_equal(o, off);
}

static void not_found(const struct tvh_ksyms *k, uint64_t a)
{
	const char *n, *m;
	uint64_t o;

	assert_int_equal(tvh_ksyms_lookup(k, a, &n, &o, &m), -TVH_ERR_NOT_FOUND);
	assert_null(n);
}

static void test_system_map(void **state)
{
	struct tvh_ksyms k;

	(void)state;
	/* 11 lines: A skipped, 1 lower-half dropped, 2 aliases folded. */
	assert_int_equal(parse(&k, sysmap, TVH_KSYMS_SYSTEM_MAP), 7);
	assert_int_equal(k.lines, 11);
	assert_int_equal(k.skipped_types, 1);
	assert_int_equal(k.lower_half, 1);
	assert_int_equal(k.aliases, 2);
	assert_int_equal(k.unsorted, 0);
	assert_true(k.have_text);
	assert_int_equal(k.text, 0xffffffff81000000ull);
	assert_int_equal(k.startup_64, 0xffffffff81000000ull);
	assert_int_equal(k.lo, 0xffffffff81000000ull);
	assert_int_equal(k.hi, 0xffffffff82100000ull);          /* _end */
	/* First of the best kind at one address: _text (T, first) over startup_64. */
	lookup_is(&k, 0xffffffff81000000ull, "_text", 0);
	lookup_is(&k, 0xffffffff81000010ull, "_text", 0x10);
	lookup_is(&k, 0xffffffff81000070ull, "secondary_startup_64", 0);
	/* Global T over local t at one address, whatever the file order. */
	lookup_is(&k, 0xffffffff81001004ull, "do_one_initcall_alias", 4);
	lookup_is(&k, 0xffffffff81002abcull, "start_kernel", 0xabc);
	lookup_is(&k, 0xffffffff820fffffull, "some_data", 0xfffff);
	/* Outside the kernel's range: the per-CPU offsets name nothing. */
	not_found(&k, 0);
	not_found(&k, 0x10);
	not_found(&k, 0x7e000000);
	not_found(&k, 0xffffffff80ffffffull);
	not_found(&k, 0xffffffff82100000ull);
	assert_int_equal(tvh_ksyms_addr_of(&k, "start_kernel"), 0xffffffff81002000ull);
	assert_int_equal(tvh_ksyms_addr_of(&k, "nope"), 0);
	tvh_ksyms_free(&k);
}

static void test_kallsyms_modules(void **state)
{
	static const char ks[] =
		"ffffffff81000000 T _text\n"
		"ffffffff81000100 T startup_64\n"
		"ffffffff81002000 T start_kernel\n"
		"ffffffffc0a01000 t foo_init\t[foo]\n"
		"ffffffffc0a01100 T foo_read [foo]\n"
		"\n"
		"   \n";
	struct tvh_ksyms k;
	const char *n, *m;
	uint64_t o;

	(void)state;
	assert_int_equal(parse(&k, ks, TVH_KSYMS_KALLSYMS), 5);
	assert_int_equal(tvh_ksyms_lookup(&k, 0xffffffffc0a01104ull, &n, &o, &m), 0);
	assert_string_equal(n, "foo_read");
	assert_int_equal(o, 4);
	assert_string_equal(m, "foo");
	assert_int_equal(tvh_ksyms_lookup(&k, 0xffffffff81002001ull, &n, &o, &m), 0);
	assert_null(m);
	/* No _end: the range ends a page after the last symbol. */
	assert_int_equal(k.hi, 0xffffffffc0a02100ull);
	tvh_ksyms_free(&k);

	/* A System.map line has no module. */
	assert_int_equal(parse(&k, "ffffffffc0a01000 t foo_init\t[foo]\n",
			       TVH_KSYMS_SYSTEM_MAP), -TVH_ERR_INVALID);
	assert_true(th_contains(k.error, "map:1: extra text after the name"));
	tvh_ksyms_free(&k);
}

static void bad(const char *text, const char *msg)
{
	struct tvh_ksyms k;

	assert_int_equal(parse(&k, text, TVH_KSYMS_KALLSYMS), -TVH_ERR_INVALID);
	if (!th_contains(k.error, msg))
		fail_msg("error '%s' lacks '%s'", k.error, msg);
	assert_int_equal(k.n, 0);
	tvh_ksyms_free(&k);
}

static void test_malformed(void **state)
{
	char longname[700];

	(void)state;
	bad("ffffffff81000000 T a\nffffffffg1000000 T b\n", "map:2: bad address 'ffffffffg1000000 T b'");
	bad("ffffffff81000000 T a\n\nffffffff81000010\n", "map:3: missing type and name");
	bad("ffffffff81000000 T\n", "map:1: missing name");
	bad("ffffffff81000000  \n", "map:1: missing type and name");
	bad("ffffffff81000000 TT a\n", "map:1: bad type");
	bad("ffffffff81000000 % a\n", "map:1: bad type");
	bad("1ffffffff81000000 T a\n", "map:1: address longer than 16 hex digits");
	bad("0xffffffff81000000 T a\n", "map:1: bad address");
	bad("ffffffff81000000 T a [foo\n", "map:1: bad module");
	bad("ffffffff81000000 T a [foo] x\n", "map:1: extra text after '[module]'");
	bad("ffffffff81000000 T a b\n", "map:1: extra text after the name");
	{
		static const char nul[] = "ffffffff81000000 T a\0b\n";
		struct tvh_ksyms k;

		tvh_ksyms_init(&k);
		assert_int_equal(tvh_ksyms_parse(&k, nul, sizeof(nul) - 1,
						 TVH_KSYMS_KALLSYMS, "map"), -TVH_ERR_INVALID);
		assert_true(th_contains(k.error, "map:1: NUL byte"));
		tvh_ksyms_free(&k);
	}
	bad("", "no symbol");
	bad("\n\n", "map:2: no symbol");
	bad("0000000000000000 A only_absolute\n", "no symbol");
	memset(longname, 'x', sizeof(longname));
	memcpy(longname, "ffffffff81000000 T ", 19);
	longname[19 + 512] = '\n';
	longname[19 + 513] = 0;
	bad(longname, "map:1: name longer than 511 bytes");
	/* 511 bytes is fine. */
	longname[19 + 511] = '\n';
	longname[19 + 512] = 0;
	{
		struct tvh_ksyms k;

		assert_int_equal(parse(&k, longname, TVH_KSYMS_KALLSYMS), 1);
		tvh_ksyms_free(&k);
	}
}

/* The same checks for a System.map, whose lines have no [module]. */
static void bad_map(const char *text, const char *msg)
{
	struct tvh_ksyms k;

	assert_int_equal(parse(&k, text, TVH_KSYMS_SYSTEM_MAP), -TVH_ERR_INVALID);
	if (!th_contains(k.error, msg))
		fail_msg("error '%s' lacks '%s'", k.error, msg);
	assert_int_equal(k.n, 0);
	tvh_ksyms_free(&k);
}

static void test_malformed_system_map(void **state)
{
	static const char crlf[] = "ffffffff81000000 T _text\r\n\tffffffff81002000\tT\tstart_kernel \r\n";
	struct tvh_ksyms k;

	(void)state;
	bad_map("ffffffff81000000 T a\tfoo]\n", "map:1: extra text after the name (a System.map line");
	bad_map("ffffffff81000000 T a [foo]\n", "map:1: extra text after the name (a System.map line");
	bad_map("ffffffff81000000 T a\nffffffff8100000z T b\n", "map:2: bad address");
	bad_map("ffffffff81000000 t\n", "map:1: missing name");
	bad_map("ffffffff81000000\n", "map:1: missing type and name");
	bad_map("ffffffff81000000 Tx a\n", "map:1: bad type");
	bad_map("ffffffff81000000 1 a\n", "map:1: bad type");
	bad_map("00000000ffffffff81000000 T a\n", "map:1: address longer than 16 hex digits");
	bad_map("T ffffffff81000000 a\n", "map:1: bad address");
	/* CRLF line ends and tabs are blanks: a Windows-copied map still loads. */
	assert_int_equal(parse(&k, crlf, TVH_KSYMS_SYSTEM_MAP), 2);
	lookup_is(&k, 0xffffffff81002010ull, "start_kernel", 0x10);
	tvh_ksyms_free(&k);
	/* An error names the first bad line only, after good ones. */
	bad_map("ffffffff81000000 T a\nffffffff81000010 T b\nffffffff81000020 T c d e\n"
		"zz T f\n", "map:3: extra text after the name");
}

static void test_zero_addresses(void **state)
{
	static const char z[] =
		"0000000000000000 T _text\n"
		"0000000000000000 T startup_64\n"
		"0000000000000000 t foo\t[foo]\n";

	(void)state;
	bad(z, "every address is 0: /proc/kallsyms read without privilege");
	bad(z, "kptr_restrict");
}

static void test_unsorted_and_duplicates(void **state)
{
	static const char u[] =
		"ffffffff81002000 T c\n"
		"ffffffff81000000 T a\n"
		"ffffffff81001000 T b\n"
		"ffffffff81001000 T b\n"
		"ffffffff81001000 d b_data\n";
	struct tvh_ksyms k;

	(void)state;
	assert_int_equal(parse(&k, u, TVH_KSYMS_SYSTEM_MAP), 3);
	assert_int_equal(k.unsorted, 1);
	assert_int_equal(k.aliases, 2);
	lookup_is(&k, 0xffffffff81000fffull, "a", 0xfff);
	lookup_is(&k, 0xffffffff81001000ull, "b", 0);
	lookup_is(&k, 0xffffffff81002001ull, "c", 1);
	/* No _text nor startup_64: the lowest symbol stands for the text. */
	assert_false(k.have_text);
	assert_int_equal(k.text, 0xffffffff81000000ull);
	tvh_ksyms_free(&k);
}

static void test_relocate(void **state)
{
	struct tvh_ksyms k;

	(void)state;
	assert_true(parse(&k, sysmap, TVH_KSYMS_SYSTEM_MAP) > 0);
	tvh_ksyms_relocate(&k, 0x1a000000);           /* KASLR slide */
	lookup_is(&k, 0xffffffff9b002004ull, "start_kernel", 4);
	not_found(&k, 0xffffffff81002004ull);
	/* The physical alias: startup_64 ran at 0x1000000 before paging. */
	tvh_ksyms_phys_alias(&k, 0x1000000);
	assert_int_equal(k.phys_len, 0x3000);                /* _etext - _text */
	lookup_is(&k, 0x1002010, "start_kernel", 0x10);
	lookup_is(&k, 0x1000000, "_text", 0);
	not_found(&k, 0x1003000);
	not_found(&k, 0xfffff0);
	tvh_ksyms_free(&k);
}

static void test_load_file(void **state)
{
	char *p = th_path("System.map-test");
	struct tvh_ksyms k;

	(void)state;
	th_write_file(p, sysmap, strlen(sysmap));
	tvh_ksyms_init(&k);
	assert_int_equal(tvh_ksyms_load(&k, p, TVH_KSYMS_SYSTEM_MAP), 7);
	tvh_ksyms_free(&k);
	tvh_ksyms_init(&k);
	assert_int_equal(tvh_ksyms_load(&k, "/nonexistent/System.map", TVH_KSYMS_SYSTEM_MAP),
			 -TVH_ERR_IO);
	assert_true(th_contains(k.error, "/nonexistent/System.map: No such file"));
	tvh_ksyms_free(&k);
	free(p);
}

/* 200k symbols: parse and a million lookups in well under a second each. */
static void test_big_map(void **state)
{
	const size_t n = 200000;
	char *buf = malloc(n * 40), *p = buf;
	struct tvh_ksyms k;
	struct timespec t0, t1;
	uint64_t x = 1;
	double s;

	(void)state;
	/* Written in reverse: the sort does the work. */
	for (size_t i = n; i-- > 0;)
		p += sprintf(p, "%016llx t fn_%zu\n",
			     0xffffffff81000000ull + (unsigned long long)i * 0x40, i);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(parse(&k, buf, TVH_KSYMS_SYSTEM_MAP), (int)n);
	for (unsigned i = 0; i < 1000000; i++) {
		const char *nm, *m;
		uint64_t o, a;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		a = 0xffffffff81000000ull + (x >> 20) % (n * 0x40);
		assert_int_equal(tvh_ksyms_lookup(&k, a, &nm, &o, &m), 0);
		assert_true(o < 0x40);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	print_message("200k symbols parsed, 1M lookups: %.3f s\n", s);
	assert_true(s < 10.0);        /* ASan build; about 0.3 s without */
	lookup_is(&k, 0xffffffff81000000ull + 12345 * 0x40 + 7, "fn_12345", 7);
	assert_int_equal(k.unsorted, n - 1);
	tvh_ksyms_free(&k);
	free(buf);
}

/* The symtab's fallbacks: kernel symbols, then IMAGE records' names. */
static void test_symtab_fallbacks(void **state)
{
	struct tvh_symtab st;
	struct tvh_ksyms k;
	struct tvh_images im;
	struct tvh_regions rg = { 0 };
	struct tvh_sym s;
	char buf[256];

	(void)state;
	memset(&im, 0, sizeof(im));
	assert_true(parse(&k, sysmap, TVH_KSYMS_SYSTEM_MAP) > 0);
	tvh_symtab_init(&st);
	assert_false(tvh_symtab_usable(&st));
	st.ksyms = &k;
	assert_true(tvh_symtab_usable(&st));
	assert_true(tvh_sym_format(&st, 0xffffffff81002010ull, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, "start_kernel+0x10");
	assert_int_equal(tvh_sym_lookup(&st, 0xffffffff81002010ull, &s), 0);
	assert_int_equal(s.module, -1);
	assert_true(s.ksym);
	assert_string_equal(s.module_name, "kernel");
	assert_int_equal(s.module_offset, 0x2010);

	/* Firmware drivers by their CodeView name, else the FvFile GUID. */
	assert_int_equal(tvh_images_add(&im, 0, TV_IMG_FIRMWARE, 0x7e000000, 0x10000, 0,
					"/b/Build/OvmfX64/DEBUG_GCC5/X64/DxeCore.dll", 42), 1);
	assert_int_equal(tvh_images_add(&im, 0, TV_IMG_FIRMWARE, 0x7d000000, 0x2000, 0,
					"FvFile(7C04A583-9E3E-4F1C-AD65-E05268D0B4D1)", 44), 1);
	assert_int_equal(tvh_images_add(&im, 0, TV_IMG_LOADER, 0x7c000000, 0x1000, 0,
					"\\EFI\\BOOT\\BOOTX64.EFI", 21), 1);
	assert_int_equal(tvh_images_add(&im, 0, TV_IMG_OTHER, 0x7b000000, 0, 0,
					"sizeless", 8), 1);
	assert_int_equal(tvh_images_regions(&im, &rg), 0);
	assert_int_equal(rg.n, 3);
	st.regions = &rg;
	tvh_sym_format(&st, 0x7e000123, buf, sizeof(buf));
	assert_string_equal(buf, "DxeCore+0x123");
	tvh_sym_format(&st, 0x7d001fff, buf, sizeof(buf));
	assert_string_equal(buf, "7C04A583-9E3E-4F1C-AD65-E05268D0B4D1+0x1fff");
	tvh_sym_format(&st, 0x7c000000, buf, sizeof(buf));
	assert_string_equal(buf, "BOOTX64+0x0");
	assert_int_equal(tvh_sym_lookup(&st, 0x7d002000, &s), -TVH_ERR_NOT_FOUND);
	assert_int_equal(tvh_sym_lookup(&st, 0x7b000000, &s), -TVH_ERR_NOT_FOUND);
	assert_int_equal(tvh_sym_lookup(&st, 0x7e00ffff, &s), 0);
	assert_int_equal(s.module, -1);
	assert_null(s.func);
	assert_string_equal(s.module_name, "DxeCore");
	/* A clone shares them. */
	{
		struct tvh_symtab c;

		tvh_symtab_init(&c);
		assert_int_equal(tvh_symtab_clone(&c, &st), 0);
		tvh_sym_format(&c, 0xffffffff81002000ull, buf, sizeof(buf));
		assert_string_equal(buf, "start_kernel+0x0");
		tvh_symtab_free(&c);
	}
	tvh_symtab_free(&st);
	tvh_regions_free(&rg);
	tvh_images_free(&im);
	tvh_ksyms_free(&k);
}

static void test_relocate_from_capture(void **state)
{
	struct tvh_images im;
	struct tvh_ksyms k;
	char how[320];

	(void)state;
	/* Nothing in the capture: the file as is, said so. */
	memset(&im, 0, sizeof(im));
	assert_true(parse(&k, sysmap, TVH_KSYMS_SYSTEM_MAP) > 0);
	assert_int_equal(tvh_images_relocate_ksyms(&im, &k, how, sizeof(how)), 0);
	assert_true(th_contains(how, "used as in the file"));
	lookup_is(&k, 0xffffffff81002000ull, "start_kernel", 0);
	tvh_ksyms_free(&k);

	/* A kernel IMAGE record at the KASLR address. */
	assert_int_equal(tvh_images_add(&im, 0, TV_IMG_KERNEL, 0xffffffffa2000000ull,
					0x2000000, 0, "vmlinux", 7), 1);
	assert_true(parse(&k, sysmap, TVH_KSYMS_SYSTEM_MAP) > 0);
	assert_int_equal(tvh_images_relocate_ksyms(&im, &k, how, sizeof(how)), 1);
	assert_true(th_contains(how, "relocated by 0x21000000"));
	lookup_is(&k, 0xffffffffa2002008ull, "start_kernel", 8);
	tvh_ksyms_free(&k);
	tvh_images_free(&im);

	/* A kernel_entry window at startup_64's physical address. */
	memset(&im, 0, sizeof(im));
	im.have_kernel_entry = true;
	im.kernel_entry = 0x1600000;
	assert_true(parse(&k, sysmap, TVH_KSYMS_SYSTEM_MAP) > 0);
	assert_int_equal(tvh_images_relocate_ksyms(&im, &k, how, sizeof(how)), 1);
	assert_true(th_contains(how, "physical address 0x1600000"));
	lookup_is(&k, 0x1600000, "_text", 0);
	lookup_is(&k, 0x1602004, "start_kernel", 4);
	lookup_is(&k, 0xffffffff81002000ull, "start_kernel", 0);
	tvh_ksyms_free(&k);

	/* ... and at a virtual one. */
	im.kernel_entry = 0xffffffff91000000ull;
	assert_true(parse(&k, sysmap, TVH_KSYMS_SYSTEM_MAP) > 0);
	assert_int_equal(tvh_images_relocate_ksyms(&im, &k, how, sizeof(how)), 1);
	lookup_is(&k, 0xffffffff91002000ull, "start_kernel", 0);
	tvh_ksyms_free(&k);
}

/*
 * Coverage extents from the executable segments: a vmlinux-shaped ELF
 * (per-CPU data at 0, text at 0xffffffff81000000) at its link address
 * and at a physical one.  Before, its extent ran from 0 to the top and
 * every block's offset overflowed 32 bits ("too big").
 */
static const char vmlinux_src[] =
	"	.section .pcpu,\"aw\"\n"
	"	.quad 0\n"
	"	.text\n"
	"	.globl _start\n"
	"_start:	call f\n"
	"	jmp g\n"
	"f:	ret\n"
	"g:	nop\n"
	"	ret\n";

static void test_exec_extents(void **state)
{
	char *elf = th_compile("vmlinux_like", "S", vmlinux_src,
			       "-nostdlib -static -no-pie -Wl,-e,_start -Wl,--build-id=none "
			       "-Wl,-Ttext=0xffffffff81000000 -Wl,--section-start=.pcpu=0");
	char spec[512], *out;
	struct tvh_symtab st;
	struct tvh_drcov d;
	uint64_t lo, hi, end, f, g;
	FILE *fp;
	size_t len;

	(void)state;
	assert_non_null(elf);
	f = th_elf_sym(elf, "f");
	g = th_elf_sym(elf, "g");
	tvh_symtab_init(&st);
	snprintf(spec, sizeof(spec), "%s@0", elf);
	assert_int_equal(tvh_symtab_add(&st, spec), 0);
	/* The physical alias: text at 0x1000000, so the per-CPU segment wraps above. */
	snprintf(spec, sizeof(spec), "%s@0x80000000", elf);
	assert_int_equal(tvh_symtab_add(&st, spec), 1);
	assert_int_equal(st.mods[0].base, 0);
	assert_int_equal(st.mods[0].end, 0xffffffff8100000aull);
	assert_true(tvh_module_exec_span(&st.mods[0], &lo, &hi));
	assert_int_equal(lo, 0xffffffff81000000ull);
	assert_int_equal(hi, 0xffffffff8100000aull);
	assert_int_equal(tvh_symtab_find_exec(&st, f), 0);
	assert_int_equal(tvh_symtab_find_exec(&st, 0), -1);   /* data, not code */
	assert_int_equal(tvh_symtab_find(&st, 0), 0);
	assert_int_equal(tvh_drcov_base(&st.mods[0], &end), 0xffffffff81000000ull);
	assert_int_equal(end, 0xffffffff8100000aull);
	assert_int_equal(tvh_drcov_base(&st.mods[1], &end), 0x1000000);
	assert_int_equal(tvh_symtab_find(&st, 0x1000000), 0);       /* the old extent */
	assert_int_equal(tvh_symtab_find_exec(&st, 0x1000000), 1);
	{
		char buf[128];

		tvh_sym_format(&st, 0x1000000 + (f - 0xffffffff81000000ull), buf,
			       sizeof(buf));
		assert_string_equal(buf, "f+0x0");
	}

	tvh_drcov_init(&d, &st);
	assert_int_equal(tvh_drcov_add(&d, f, f + 1, false), 1);
	assert_int_equal(tvh_drcov_add(&d, g, g + 2, false), 1);
	/* The same code run at its physical address, before paging. */
	assert_int_equal(tvh_drcov_add(&d, f - 0xffffffff81000000ull + 0x1000000ull,
				       f - 0xffffffff81000000ull + 0x1000001ull, false), 1);
	assert_int_equal(tvh_drcov_add(&d, 0, 8, false), 0);  /* per-CPU data */
	assert_int_equal(d.stats.too_big, 0);
	assert_int_equal(d.stats.outside, 1);
	assert_int_equal(d.nbbs, 3);
	assert_int_equal(d.bbs[0].start, f - 0xffffffff81000000ull);
	assert_int_equal(d.bbs[0].mod_id, 0);
	assert_int_equal(d.bbs[1].start, g - 0xffffffff81000000ull);
	assert_int_equal(d.bbs[2].mod_id, 1);
	assert_int_equal(d.bbs[2].start, f - 0xffffffff81000000ull);
	fp = open_memstream(&out, &len);
	assert_int_equal(tvh_drcov_write(&d, fp, NULL), 0);
	fclose(fp);
	assert_true(th_contains(out, "0, 0xffffffff81000000, 0xffffffff8100000a, "
				"0xffffffff81000000, 0x00000000, 0x00000000, "));
	assert_true(th_contains(out, "1, 0x0000000001000000, 0x000000000100000a, "));
	assert_true(th_contains(out, "BB Table: 3 bbs\n"));
	free(out);
	tvh_drcov_free(&d);
	tvh_symtab_free(&st);
	free(elf);
}

/* report --phases: firmware, loader, kernel, user from images, symbols, order. */
static void test_report_phases(void **state)
{
	static const uint64_t to[] = {
		0x7e000100, 0x7c000010, 0x100000, 0x1602000, 0xffffffff81002000ull,
		0x401000, 0x401000, 0x100000, 0xffffffff81002004ull,
	};
	struct tvh_symtab st;
	struct tvh_ksyms k;
	struct tvh_images im;
	struct tvh_regions rg = { 0 };
	struct tvh_report_cpu rc = { 0 }, *rcs[1] = { &rc };
	struct tvh_report_opts o = { TVH_SORT_BRANCHES, 0, "all CPUs", true };
	char *out;
	size_t len;
	FILE *f;

	(void)state;
	memset(&im, 0, sizeof(im));
	assert_true(parse(&k, sysmap, TVH_KSYMS_SYSTEM_MAP) > 0);
	tvh_ksyms_phys_alias(&k, 0x1600000);
	assert_int_equal(tvh_images_add(&im, 0, TV_IMG_FIRMWARE, 0x7e000000, 0x10000, 0,
					"X64/DxeCore.dll", 15), 1);
	assert_int_equal(tvh_images_add(&im, 0, TV_IMG_LOADER, 0x7c000000, 0x1000, 0,
					"\\EFI\\BOOT\\BOOTX64.EFI", 21), 1);
	assert_int_equal(tvh_images_regions(&im, &rg), 0);
	tvh_symtab_init(&st);
	st.ksyms = &k;
	st.regions = &rg;
	assert_int_equal(tvh_report_phase(&st, 0x7e000100, true), TVH_PHASE_FIRMWARE);
	assert_int_equal(tvh_report_phase(&st, 0x7c000010, true), TVH_PHASE_LOADER);
	assert_int_equal(tvh_report_phase(&st, 0x100000, false), TVH_PHASE_FIRMWARE);
	assert_int_equal(tvh_report_phase(&st, 0x100000, true), TVH_PHASE_USER);
	assert_int_equal(tvh_report_phase(&st, 0x1602000, false), TVH_PHASE_KERNEL);
	assert_int_equal(tvh_report_phase(&st, 0xffffffff81002000ull, false),
			 TVH_PHASE_KERNEL);
	assert_int_equal(tvh_report_phase(NULL, 0xffff800000000000ull, false),
			 TVH_PHASE_KERNEL);
	assert_string_equal(tvh_phase_name(TVH_PHASE_USER), "user");

	for (size_t i = 0; i < sizeof(to) / sizeof(to[0]); i++) {
		struct trace_event r = { .type = TV_REC_BRANCH };
		struct tvh_event ev = { .kind = TVH_EV_RECORD, .rec = &r };

		r.u.branch.from = 0x10;
		r.u.branch.to = to[i];
		r.u.branch.kind = TV_BR_CALL;
		assert_int_equal(tvh_report_event(&rc, &ev), 0);
	}
	f = open_memstream(&out, &len);
	assert_int_equal(tvh_report_write(rcs, 1, &st, &o, f), 0);
	fclose(f);
	/* firmware: DxeCore and 0x100000 before the kernel; user: 0x401000 x2, 0x100000. */
	assert_true(th_contains(out, "           2   22.22%        2  firmware\n"));
	assert_true(th_contains(out, "           1   11.11%        1  loader\n"));
	assert_true(th_contains(out, "           3   33.33%        3  kernel\n"));
	assert_true(th_contains(out, "           3   33.33%        2  user\n"));
	/* Its physical text and start_kernel+0x4 fold into one function. */
	assert_true(th_contains(out, "# kernel: hottest functions (1 function)\n"));
	assert_true(th_contains(out, "# user: hottest functions (2 functions)\n"));
	assert_true(th_contains(out, "  start_kernel (kernel)\n"));
	assert_true(th_contains(out, "  DxeCore+0x100\n"));
	assert_true(th_contains(out, "  BOOTX64+0x10\n"));
	/* The usual tables follow, unchanged: 9 branches, 7 distinct targets. */
	assert_true(th_contains(out, "# all CPUs: 9 branches, "));
	assert_true(th_contains(out, " 7 basic blocks, "));
	free(out);
	tvh_report_cpu_free(&rc);
	tvh_symtab_free(&st);
	tvh_regions_free(&rg);
	tvh_images_free(&im);
	tvh_ksyms_free(&k);
}

/*
 * script names kernel addresses from kernel symbols alone (--system-map
 * or --kallsyms with no --image: the whole boot decoded from its code
 * snapshots): it used to print bare addresses unless a module was loaded.
 */
static void test_script_kernel_names_only(void **state)
{
	struct tvh_symtab st;
	struct tvh_ksyms k;
	struct tvh_script sc;
	struct trace_event r = { .type = TV_REC_BRANCH };
	struct tvh_event ev = { .kind = TVH_EV_RECORD, .rec = &r };
	char *out;
	size_t len;
	FILE *f;

	(void)state;
	assert_true(parse(&k, sysmap, TVH_KSYMS_SYSTEM_MAP) > 0);
	tvh_symtab_init(&st);
	st.ksyms = &k;
	r.u.branch.from = 0xffffffff81000070ull;
	r.u.branch.to = 0xffffffff81002000ull;
	r.u.branch.kind = TV_BR_JMP;
	f = open_memstream(&out, &len);
	tvh_script_init(&sc, f, &st, false);
	assert_int_equal(tvh_script_event(&sc, &ev), 0);
	fclose(f);
	assert_true(th_contains(out, "secondary_startup_64+0x0"));
	assert_true(th_contains(out, "=> 0xffffffff81002000 start_kernel+0x0"));
	free(out);
	tvh_symtab_free(&st);
	tvh_ksyms_free(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_system_map),
		cmocka_unit_test(test_kallsyms_modules),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_malformed_system_map),
		cmocka_unit_test(test_zero_addresses),
		cmocka_unit_test(test_unsorted_and_duplicates),
		cmocka_unit_test(test_relocate),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_big_map),
		cmocka_unit_test(test_symtab_fallbacks),
		cmocka_unit_test(test_relocate_from_capture),
		cmocka_unit_test(test_exec_extents),
		cmocka_unit_test(test_report_phases),
		cmocka_unit_test(test_script_kernel_names_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
