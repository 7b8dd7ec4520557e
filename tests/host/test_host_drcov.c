/* SPDX-License-Identifier: MIT */
/*
 * test_host_drcov.c - basic blocks from branch records and the drcov
 * file layout (host-tools/lib/drcov.c), over a tiny ELF assembled at test
 * time so every block boundary is a known label.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host-tools/lib/drcov.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/le.h"
#include "tests/host/helpers.h"

static const char asm_src[] =
	"	.text\n"
	"	.globl _start\n"
	"_start:	nop\n"
	"	nop\n"
	"j0:	jz t1\n"                   /* 2 bytes */
	"t1:	nop\n"
	"c0:	call fn\n"                 /* 5 bytes */
	"after:	nop\n"
	"	nop\n"
	"x0:	nop\n"                     /* not a branch: size falls back */
	"	hlt\n"
	"fn:	nop\n"
	"	nop\n"
	"r0:	ret\n"                     /* 1 byte */
	"big:	.skip 70000, 0x90\n"
	"bigend:	ret\n";

static char *elf;
static uint64_t L_start, L_j0, L_t1, L_c0, L_after, L_x0, L_fn, L_r0, L_big;

static int setup(void **state)
{
	(void)state;
	elf = th_compile("drcov_prog", "S", asm_src,
			 "-nostdlib -static -no-pie -Wl,-e,_start -Wl,--build-id=none");
	if (!elf)
		return -1;
	L_start = th_elf_sym(elf, "_start");
	L_j0 = th_elf_sym(elf, "j0");
	L_t1 = th_elf_sym(elf, "t1");
	L_c0 = th_elf_sym(elf, "c0");
	L_after = th_elf_sym(elf, "after");
	L_x0 = th_elf_sym(elf, "x0");
	L_fn = th_elf_sym(elf, "fn");
	L_r0 = th_elf_sym(elf, "r0");
	L_big = th_elf_sym(elf, "big");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(elf);
	return 0;
}

struct bb {
	uint64_t start, size;
};

/* Runs the walk + drcov writer; returns the file bytes. */
static char *run_drcov(const struct th_tvt *t, struct tvh_symtab *st,
		       struct tvh_drcov_stats *ds, size_t *len)
{
	struct tvt_reader r;
	struct tvh_drcov d;
	struct tvh_stats s;
	char *buf = NULL;
	FILE *f;

	f = open_memstream(&buf, len);
	assert_non_null(f);
	assert_int_equal(tvt_reader_open_mem(&r, t->buf, t->len), 0);
	tvh_drcov_init(&d, st);
	assert_int_equal(tvh_walk(&r, NULL, tvh_drcov_event, &d, &s), 0);
	assert_int_equal(tvh_drcov_write(&d, f, NULL), 0);
	fclose(f);
	*ds = d.stats;
	tvh_drcov_free(&d);
	tvh_stats_free(&s);
	tvt_reader_close(&r);
	return buf;
}

/* Checks the text part and returns a pointer to the BB table. */
static const uint8_t *check_header(const char *buf, size_t len,
				   const struct tvh_symtab *st, size_t nbbs)
{
	char *want, *real = realpath(elf, NULL);
	const struct tvh_module *m = &st->mods[0];
	size_t wl;

	assert_non_null(real);
	assert_true(asprintf(&want,
		"DRCOV VERSION: 2\n"
		"DRCOV FLAVOR: tracevisor\n"
		"Module Table: version 2, count 1\n"
		"Columns: id, base, end, entry, checksum, timestamp, path\n"
		"0, 0x%016llx, 0x%016llx, 0x%016llx, 0x00000000, 0x00000000, %s\n"
		"BB Table: %zu bbs\n",
		(unsigned long long)m->base, (unsigned long long)m->end,
		(unsigned long long)m->entry, real, nbbs) > 0);
	wl = strlen(want);
	assert_true(len >= wl);
	assert_memory_equal(buf, want, wl);
	assert_int_equal(len, wl + 8 * nbbs);
	free(want);
	free(real);
	return (const uint8_t *)buf + wl;
}

static void check_bbs(const uint8_t *p, const struct tvh_module *m,
		      const struct bb *want, size_t n)
{
	for (size_t i = 0; i < n; i++, p += 8) {
		if (tvh_le32(p) != want[i].start - m->base || tvh_le16(p + 4) != want[i].size)
			fail_msg("bb %zu: offset 0x%x size %u, want 0x%llx size %llu", i,
				 tvh_le32(p), tvh_le16(p + 4),
				 (unsigned long long)(want[i].start - m->base),
				 (unsigned long long)want[i].size);
		assert_int_equal(tvh_le16(p + 6), 0);
	}
}

static void build_trace(struct th_tvt *t, uint64_t bias)
{
	struct recbuf a = { 0 }, b = { 0 };

	rb_startstop(&a, TV_REC_START, TV_TRIG_BOOT, 1, 0);
	rb_branch(&a, TV_BR_JMP, 0x10, L_start + bias);            /* chain starts */
	rb_branch(&a, TV_BR_JCC, L_j0 + bias, L_t1 + bias);        /* [_start, j0+2) */
	rb_branch(&a, TV_BR_CALL, L_c0 + bias, L_fn + bias);       /* [t1, c0+5) */
	rb_branch(&a, TV_BR_RET, L_r0 + bias, L_after + bias);     /* [fn, r0+1) */
	rb_compact(&a, TV_BR_JMP, (uint32_t)(L_x0 - L_after), L_start + bias); /* [after, x0+1) approx */
	rb_branch(&a, TV_BR_JCC, L_j0 + bias, L_t1 + bias);        /* duplicate */
	/* seq 7..9 lost: the chain breaks */
	rb_branch(&b, TV_BR_CALL, L_c0 + bias, L_fn + bias);       /* no block */
	rb_branch(&b, TV_BR_EXCEPTION, L_fn + 1 + bias, 0x20);     /* [fn, fn+1) */
	rb_branch(&b, TV_BR_JMP, 0x30, L_t1 + bias);               /* starts outside: dropped */
	rb_branch(&b, TV_BR_JMP, L_start + bias, L_r0 + bias);     /* backwards: dropped */
	rb_lost(&b, 5, 1);
	rb_branch(&b, TV_BR_JMP, L_r0 + bias, L_start + bias);     /* after LOST: no block */
	th_tvt_begin(t, "m", 1);
	th_tvt_records(t, 0, 0, &a);
	th_tvt_records(t, 0, 10, &b);
	th_tvt_end(t);
	rb_free(&a);
	rb_free(&b);
}

static void test_blocks_and_layout(void **state)
{
	struct tvh_symtab st;
	struct th_tvt t;
	struct tvh_drcov_stats ds;
	const uint8_t *table;
	size_t len;
	char *buf;

	(void)state;
	tvh_symtab_init(&st);
	assert_int_equal(tvh_symtab_add(&st, elf), 0);
	build_trace(&t, 0);
	buf = run_drcov(&t, &st, &ds, &len);
	{
		const struct bb want[] = {
			{ L_start, L_j0 + 2 - L_start },
			{ L_t1, L_c0 + 5 - L_t1 },
			{ L_fn, L_r0 + 1 - L_fn },
			{ L_after, L_x0 + 1 - L_after },
			{ L_fn, 1 },
		};

		table = check_header(buf, len, &st, 5);
		check_bbs(table, &st.mods[0], want, 5);
	}
	assert_int_equal(ds.unique, 5);
	assert_int_equal(ds.approx, 1);
	assert_int_equal(ds.outside, 1);
	assert_int_equal(ds.backwards, 1);
	assert_int_equal(ds.blocks, 8);
	free(buf);
	th_tvt_free(&t);
	tvh_symtab_free(&st);
}

static void test_relocated_module(void **state)
{
	struct tvh_symtab st;
	struct th_tvt t;
	struct tvh_drcov_stats ds;
	const uint8_t *table;
	char *spec, *buf;
	size_t len;
	uint64_t base = 0xffffffffc0000000ull, bias;

	(void)state;
	tvh_symtab_init(&st);
	assert_true(asprintf(&spec, "%s@0x%llx", elf, (unsigned long long)base) > 0);
	assert_int_equal(tvh_symtab_add(&st, spec), 0);
	free(spec);
	bias = st.mods[0].bias;
	assert_int_equal(st.mods[0].base, base);
	build_trace(&t, bias);
	buf = run_drcov(&t, &st, &ds, &len);
	{
		/* Offsets are module-relative, so they do not change. */
		const struct bb want[] = {
			{ L_start + bias, L_j0 + 2 - L_start },
			{ L_t1 + bias, L_c0 + 5 - L_t1 },
		};

		table = check_header(buf, len, &st, 5);
		check_bbs(table, &st.mods[0], want, 2);
		assert_int_equal(tvh_le32(table), L_start - (base - bias));
	}
	free(buf);
	th_tvt_free(&t);
	tvh_symtab_free(&st);
}

static void test_add_limits(void **state)
{
	struct tvh_symtab st;
	struct tvh_drcov d;
	uint64_t end;

	(void)state;
	tvh_symtab_init(&st);
	assert_int_equal(tvh_symtab_add(&st, elf), 0);
	end = st.mods[0].end;
	tvh_drcov_init(&d, &st);
	assert_int_equal(tvh_drcov_add(&d, L_big, L_big + 0xffff, false), 1);
	assert_int_equal(tvh_drcov_add(&d, L_big, L_big + 0x10000, false), 0);
	assert_int_equal(d.stats.too_big, 1);
	assert_int_equal(tvh_drcov_add(&d, end - 4, end + 4, false), 0);
	assert_int_equal(d.stats.cross_module, 1);
	assert_int_equal(tvh_drcov_add(&d, L_fn, L_fn, false), 0);
	assert_int_equal(d.stats.empty, 1);
	assert_int_equal(tvh_drcov_add(&d, L_fn, L_fn - 1, false), 0);
	assert_int_equal(d.stats.backwards, 1);
	/* Many distinct blocks: the set grows and keeps them unique. */
	for (uint64_t i = 0; i < 5000; i++)
		assert_int_equal(tvh_drcov_add(&d, L_big + i, L_big + i + 3, i & 1), 1);
	for (uint64_t i = 0; i < 5000; i++)
		assert_int_equal(tvh_drcov_add(&d, L_big + i, L_big + i + 3, false), 0);
	assert_int_equal(d.nbbs, 5001);
	assert_int_equal(d.stats.approx, 2500);
	tvh_drcov_free(&d);
	tvh_symtab_free(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocks_and_layout),
		cmocka_unit_test(test_relocated_module),
		cmocka_unit_test(test_add_limits),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
