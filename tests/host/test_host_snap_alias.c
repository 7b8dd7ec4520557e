/* SPDX-License-Identifier: MIT */
/*
 * test_host_snap_alias.c - the snapshot store's kernel aliases
 * (host-tools/lib/snap.c, add_aliases): a guest-physical page executed
 * first through one mapping and later through another brings a
 * snapshot only under the first; the second mapping must still find
 * the content the page had at the time asked.  The shape is the one
 * seen in a whole boot of Debian's Linux: __x86_indirect_thunk_rax's
 * page snapshotted at its identity address (startup_64), then at the
 * high kernel address only after alternatives patched it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>

#include <cmocka.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/snap.h"
#include "tests/host/helpers.h"

#define PG TV_CODE_PAGE
#define HI 0xffffffff81e01000ull       /* the thunk's page, high mapping */
#define GPA 0x2401000ull                /* its physical page (= identity linear) */
#define CR3 0x3010000ull

static void fill(uint8_t *page, uint8_t seed)
{
	for (unsigned i = 0; i < PG; i++)
		page[i] = (uint8_t)(seed + i * 13);
}

static struct tvh_snap *load(struct th_tvt *t, const struct recbuf *b)
{
	struct tvt_reader r;
	struct tvh_snap *s = NULL;

	th_tvt_begin(t, "m", 1);
	th_tvt_records(t, 0, 0, b);
	th_tvt_end(t);
	assert_int_equal(tvt_reader_open_mem(&r, t->buf, t->len), 0);
	assert_int_equal(tvh_snap_load(&r, NULL, &s), 0);
	tvt_reader_close(&r);
	return s;
}

/*
 * Identity snapshot at 100, high-address snapshot after the patch at 300:
 * at 200 the high address reads the unpatched content (valid 100..300),
 * at 400 the patched one; the identity address keeps its own answers.
 */
static void test_high_mapping_reads_identity_snapshot(void **state)
{
	static uint8_t orig[PG], patched[PG];
	struct recbuf b = { 0 };
	struct th_tvt t = { 0 };
	struct tvh_snap *s;
	struct tvh_snap_hit hit;
	struct tvh_snap_stats st;
	uint64_t lo, hi;
	uint8_t buf[8];

	(void)state;
	fill(orig, 1);
	fill(patched, 2);
	rb_snap(&b, TV_CODEF_NEW, 100, GPA, GPA, 0x3fa01000, orig);
	rb_snap(&b, TV_CODEF_NEW | TV_CODEF_REARM, 300, GPA, HI, CR3, patched);
	s = load(&t, &b);

	assert_int_equal(tvh_snap_lookup(s, CR3, HI + 0x580, 200, &hit), 0);
	assert_ptr_not_equal(hit.page, NULL);
	assert_memory_equal(hit.page, orig, PG);
	assert_int_equal(hit.start, 100);
	assert_int_equal(hit.end, 300);
	assert_int_equal(hit.linear, HI);
	assert_int_equal(hit.gpa, GPA);
	assert_int_equal(tvh_snap_read(s, 0, HI + 0x580, 200, buf, sizeof(buf)), sizeof(buf));
	assert_memory_equal(buf, orig + 0x580, sizeof(buf));

	assert_int_equal(tvh_snap_lookup(s, CR3, HI + 0x580, 400, &hit), 0);
	assert_memory_equal(hit.page, patched, PG);
	assert_int_equal(hit.start, 300);

	/* Before either: the earliest, now the identity one's content. */
	assert_int_equal(tvh_snap_lookup(s, CR3, HI, 50, &hit), 0);
	assert_memory_equal(hit.page, orig, PG);

	/* A cache over the high page must flush at 300, and only there. */
	tvh_snap_span(s, HI + 0x580, 200, &lo, &hi);
	assert_int_equal(lo, 100);
	assert_int_equal(hi, 300);

	/* The identity page (lower half) is not given the high one's copies. */
	assert_int_equal(tvh_snap_lookup(s, 0, GPA, 400, &hit), 0);
	assert_memory_equal(hit.page, orig, PG);

	tvh_snap_get_stats(s, &st);
	assert_int_equal(st.records, 2);
	assert_int_equal(st.aliases, 1);
	tvh_snap_free(s);
	th_tvt_free(&t);
	rb_free(&b);
}

/*
 * A high linear page seen with two gpas (a module area reused) gets no
 * copies: which gpa it mapped at a time is not known.  And user pages
 * never: a lower-half address maps different pages in different
 * processes.
 */
static void test_no_alias_when_mapping_unknown(void **state)
{
	static uint8_t a[PG], a2[PG], c[PG], u[PG], k[PG];
	const uint64_t mod = 0xffffffffc0001000ull, other = 0xffffffffc0200000ull;
	struct recbuf b = { 0 };
	struct th_tvt t = { 0 };
	struct tvh_snap *s;
	struct tvh_snap_hit hit;
	struct tvh_snap_stats st;

	(void)state;
	fill(a, 3);
	fill(a2, 4);
	fill(c, 5);
	fill(u, 6);
	fill(k, 7);
	/* gpa 0x100000 at `other` (t 50) and at `mod` (t 100); `mod` also maps 0x200000 at 500. */
	rb_snap(&b, TV_CODEF_NEW, 50, 0x100000, other, CR3, a);
	rb_snap(&b, TV_CODEF_NEW | TV_CODEF_REARM, 100, 0x100000, mod, CR3, a2);
	rb_snap(&b, TV_CODEF_NEW, 500, 0x200000, mod, CR3, c);
	/* gpa 0x300000 as kernel code at its identity address, then as user code. */
	rb_snap(&b, TV_CODEF_NEW, 10, 0x300000, 0x300000, CR3, k);
	rb_snap(&b, TV_CODEF_NEW | TV_CODEF_REARM | TV_CODEF_USER, 20, 0x300000, 0x400000,
		 0x5000000, u);
	s = load(&t, &b);

	/* mod at 75: its own first snapshot (rule 2), not gpa 0x100000's at `other`. */
	assert_int_equal(tvh_snap_lookup(s, CR3, mod, 75, &hit), 0);
	assert_memory_equal(hit.page, a2, PG);
	assert_int_equal(hit.start, 100);
	/* `other` names one gpa: it does see the later content of that gpa. */
	assert_int_equal(tvh_snap_lookup(s, CR3, other, 150, &hit), 0);
	assert_memory_equal(hit.page, a2, PG);
	/* The user page at 15: its own (rule 2), not the kernel's identity content. */
	assert_int_equal(tvh_snap_lookup(s, 0x5000000, 0x400000, 15, &hit), 0);
	assert_memory_equal(hit.page, u, PG);

	tvh_snap_get_stats(s, &st);
	assert_int_equal(st.aliases, 1);     /* a2's content under `other` only */
	tvh_snap_free(s);
	th_tvt_free(&t);
	rb_free(&b);
}

/*
 * Firmware runtime code under the OS's mapping (add_runtime_maps): a
 * runtime image at physical 0x3f860000 (IMAGE record), pages 0x3f861000
 * and 0x3f863000 run by the firmware at their physical addresses; the OS
 * maps the image at 0xfffffffec0000000 + physical, and a relocation
 * rewrote page 0x3f862000, which is snapshotted again under that mapping.
 * Page 0x3f861000, called through the mapping, has no snapshot there.
 */
#define RT_OFF 0xfffffffec0000000ull
#define EFI_CR3 0x4dcc000ull

static void test_runtime_page_under_os_mapping(void **state)
{
	static uint8_t p1[PG], p2[PG], p2r[PG], p3[PG], q[PG], x[PG];
	struct recbuf b = { 0 };
	struct th_tvt t = { 0 };
	struct tvh_snap *s;
	struct tvh_snap_hit hit;
	struct tvh_snap_stats st;

	(void)state;
	fill(p1, 8);
	fill(p2, 9);
	fill(p2r, 10);
	fill(p3, 11);
	fill(q, 12);
	fill(x, 13);
	rb_image(&b, TV_IMG_FIRMWARE, 1, 0x3f860000, 0x4000, "FvFile(rt)");
	rb_image(&b, TV_IMG_FIRMWARE, 1, 0x3f860000, 0x4000, "FvFile(rt)");  /* again */
	rb_snap(&b, TV_CODEF_NEW, 10, 0x3f861000, 0x3f861000, 0x3fa01000, p1);
	rb_snap(&b, TV_CODEF_NEW, 11, 0x3f862000, 0x3f862000, 0x3fa01000, p2);
	rb_snap(&b, TV_CODEF_NEW, 12, 0x3f863000, 0x3f863000, 0x3fa01000, p3);
	rb_snap(&b, TV_CODEF_NEW | TV_CODEF_REARM, 500, 0x3f862000, 0x3f862000 + RT_OFF,
		EFI_CR3, p2r);
	/* Outside the image: a page the firmware ran, never given the offset. */
	rb_snap(&b, TV_CODEF_NEW, 13, 0x3f870000, 0x3f870000, 0x3fa01000, q);
	/* 0x3f863000 + RT_OFF is some other gpa's page: not filled over. */
	rb_snap(&b, TV_CODEF_NEW, 14, 0x5000000, 0x3f863000 + RT_OFF, EFI_CR3, x);
	s = load(&t, &b);

	assert_int_equal(tvh_snap_lookup(s, EFI_CR3, 0x3f861000 + RT_OFF + 0x71, 600, &hit), 0);
	assert_memory_equal(hit.page, p1, PG);
	assert_int_equal(hit.gpa, 0x3f861000);
	assert_int_equal(hit.start, 10);
	assert_int_equal(tvh_snap_lookup(s, EFI_CR3, 0x3f862000 + RT_OFF, 600, &hit), 0);
	assert_memory_equal(hit.page, p2r, PG);
	assert_int_equal(tvh_snap_lookup(s, EFI_CR3, 0x3f863000 + RT_OFF, 600, &hit), 0);
	assert_memory_equal(hit.page, x, PG);
	assert_int_not_equal(tvh_snap_lookup(s, EFI_CR3, 0x3f870000 + RT_OFF, 600, &hit), 0);

	tvh_snap_get_stats(s, &st);
	assert_int_equal(st.runtime_maps, 1);
	assert_int_equal(st.runtime_conflicts, 0);
	tvh_snap_free(s);
	th_tvt_free(&t);
	rb_free(&b);
}

/* An image whose pages the OS mapped at two offsets: which one a page has is unknown. */
static void test_runtime_two_offsets_not_filled(void **state)
{
	static uint8_t p1[PG], p2[PG], p3[PG];
	struct recbuf b = { 0 };
	struct th_tvt t = { 0 };
	struct tvh_snap *s;
	struct tvh_snap_hit hit;
	struct tvh_snap_stats st;

	(void)state;
	fill(p1, 14);
	fill(p2, 15);
	fill(p3, 16);
	rb_image(&b, TV_IMG_FIRMWARE, 1, 0x3f860000, 0x4000, "FvFile(rt)");
	rb_snap(&b, TV_CODEF_NEW, 10, 0x3f861000, 0x3f861000, 0x3fa01000, p1);
	rb_snap(&b, TV_CODEF_NEW, 20, 0x3f862000, 0x3f862000 + RT_OFF, EFI_CR3, p2);
	rb_snap(&b, TV_CODEF_NEW, 30, 0x3f863000, 0x3f863000 + RT_OFF - 0x200000, EFI_CR3, p3);
	s = load(&t, &b);
	assert_int_not_equal(tvh_snap_lookup(s, EFI_CR3, 0x3f861000 + RT_OFF, 600, &hit), 0);
	assert_int_not_equal(tvh_snap_lookup(s, EFI_CR3, 0x3f861000 + RT_OFF - 0x200000, 600,
					     &hit), 0);
	tvh_snap_get_stats(s, &st);
	assert_int_equal(st.runtime_maps, 0);
	assert_int_equal(st.runtime_conflicts, 1);
	tvh_snap_free(s);
	th_tvt_free(&t);
	rb_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_high_mapping_reads_identity_snapshot),
		cmocka_unit_test(test_no_alias_when_mapping_unknown),
		cmocka_unit_test(test_runtime_page_under_os_mapping),
		cmocka_unit_test(test_runtime_two_offsets_not_filled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
