/* SPDX-License-Identifier: MIT */
/*
 * test_trace_mtf.c - the MTF backend's transfer detection (vmm/trace/backend/mtf.c)
 * over a fake guest memory, read back through the record reader.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "vmm/trace/backend/mtf.h"
#include "vmm/trace/read.h"

/* Guest memory: 64 KiB at linear 0x10000; anything else is unmapped. */
#define MEM_BASE 0x10000ull
#define MEM_SIZE 0x10000u
static uint8_t mem[MEM_SIZE];
static uint64_t ring_mem[(128 + 8192) / 8];
static struct tv_trace_ring *ring = (struct tv_trace_ring *)ring_mem;
static struct mtf_state st;

static size_t fetch(void *ctx, uint64_t linear, uint8_t *buf, size_t len)
{
	size_t n = 0;

	(void)ctx;
	while (n < len && linear + n >= MEM_BASE && linear + n < MEM_BASE + MEM_SIZE) {
		buf[n] = mem[linear + n - MEM_BASE];
		n++;
	}
	return n;
}

static void put(uint64_t at, const uint8_t *bytes, size_t n)
{
	memcpy(&mem[at - MEM_BASE], bytes, n);
}

static int setup(void **state)
{
	(void)state;
	memset(mem, 0x90, sizeof(mem));  /* NOPs everywhere */
	memset(&st, 0, sizeof(st));
	assert_int_equal(trace_ring_init(ring, sizeof(ring_mem), 0, 0, TV_SOURCE_MTF,
					 TV_OVERFLOW_STOP, 1000000, 0), 0);
	return 0;
}

/* One observation in 64-bit mode, CPL 0, CR3 0x1000. */
static int at(uint64_t ip)
{
	struct mtf_guest g = { .ip = ip, .cs_base = 0, .cr3 = 0x1000, .mode = 64, .cpl = 0, .tsc = ip };

	return mtf_observe(&st, ring, NULL, &g, fetch, NULL);
}

/* Read every branch record of the ring into from[]/to[]/kind[]. */
static size_t branches(uint64_t *from, uint64_t *to, uint8_t *kind, size_t max)
{
	static uint8_t buf[8192];
	struct trace_cursor c;
	struct trace_reader rd;
	struct trace_event ev;
	size_t len = 0, n = 0;
	uint64_t first;

	assert_int_equal(trace_ring_cursor_tail(ring, &c), 0);
	first = c.seq;
	assert_int_equal(trace_ring_peek(ring, &c, buf, sizeof(buf), &len), 0);
	trace_reader_init(&rd);
	trace_reader_feed(&rd, buf, len, first, false);
	while (trace_reader_next(&rd, &ev) == 1) {
		if (ev.type != TV_REC_BRANCH && ev.type != TV_REC_BRANCH_COMPACT)
			continue;
		assert_true(n < max);
		from[n] = ev.u.branch.from;
		to[n] = ev.u.branch.to;
		kind[n] = ev.u.branch.kind;
		n++;
	}
	return n;
}

static void test_sequential_is_silent(void **state)
{
	uint64_t f[4], t[4];
	uint8_t k[4];

	(void)state;
	/* nop; nop; mov eax, 1 (5 bytes); nop */
	put(0x10002, (const uint8_t[]){ 0xb8, 1, 0, 0, 0 }, 5);
	assert_int_equal(at(0x10000), 0);
	assert_int_equal(at(0x10001), 0);
	assert_int_equal(at(0x10002), 0);
	assert_int_equal(at(0x10007), 0);
	assert_int_equal(branches(f, t, k, 4), 0);
	assert_int_equal(st.stats.observations, 4);
	assert_int_equal(st.stats.decode_errors, 0);
}

static void test_direct_branches(void **state)
{
	uint64_t f[8], t[8];
	uint8_t k[8];

	(void)state;
	put(0x10000, (const uint8_t[]){ 0xeb, 0x10 }, 2);             /* jmp +0x10 -> 0x10012 */
	put(0x10012, (const uint8_t[]){ 0x74, 0x02 }, 2);             /* je +2 -> 0x10016 */
	put(0x10016, (const uint8_t[]){ 0x75, 0x7e }, 2);             /* jne (not taken) */
	put(0x10018, (const uint8_t[]){ 0xe8, 0x00, 0x01, 0, 0 }, 5); /* call +0x100 -> 0x1011d */
	put(0x1011d, (const uint8_t[]){ 0xc3 }, 1);                   /* ret */
	assert_int_equal(at(0x10000), 0);
	assert_int_equal(at(0x10012), 1);
	assert_int_equal(at(0x10016), 1);
	assert_int_equal(at(0x10018), 0);   /* fall-through: not taken */
	assert_int_equal(at(0x1011d), 1);
	assert_int_equal(at(0x1001d), 1);   /* back after the call */
	assert_int_equal(branches(f, t, k, 8), 4);
	assert_int_equal(f[0], 0x10000); assert_int_equal(t[0], 0x10012); assert_int_equal(k[0], TV_BR_JMP);
	assert_int_equal(f[1], 0x10012); assert_int_equal(t[1], 0x10016); assert_int_equal(k[1], TV_BR_JCC);
	assert_int_equal(f[2], 0x10018); assert_int_equal(t[2], 0x1011d); assert_int_equal(k[2], TV_BR_CALL);
	assert_int_equal(f[3], 0x1011d); assert_int_equal(t[3], 0x1001d); assert_int_equal(k[3], TV_BR_RET);
	assert_int_equal(st.stats.branches, 4);
	assert_int_equal(st.stats.events, 0);
}

static void test_indirect_and_call_to_next(void **state)
{
	uint64_t f[4], t[4];
	uint8_t k[4];

	(void)state;
	put(0x10000, (const uint8_t[]){ 0xff, 0xe2 }, 2);             /* jmp *%rdx */
	put(0x10400, (const uint8_t[]){ 0xe8, 0, 0, 0, 0 }, 5);       /* call next insn */
	put(0x10405, (const uint8_t[]){ 0xff, 0xd0 }, 2);             /* call *%rax */
	at(0x10000);
	assert_int_equal(at(0x10400), 1);
	assert_int_equal(at(0x10405), 1);   /* target == fall-through: still a call */
	assert_int_equal(at(0x10800), 1);
	assert_int_equal(branches(f, t, k, 4), 3);
	assert_int_equal(k[0], TV_BR_JMP_IND);
	assert_int_equal(k[1], TV_BR_CALL);
	assert_int_equal(t[1], 0x10405);
	assert_int_equal(k[2], TV_BR_CALL_IND);
	assert_int_equal(f[2], 0x10405);
	assert_int_equal(t[2], 0x10800);
}

static void test_events_and_same_ip(void **state)
{
	uint64_t f[4], t[4];
	uint8_t k[4];

	(void)state;
	put(0x10100, (const uint8_t[]){ 0xf3, 0xa4 }, 2);   /* rep movsb */
	put(0x10000, (const uint8_t[]){ 0x74, 0x10 }, 2);   /* je +0x10 */
	at(0x10100);
	assert_int_equal(at(0x10100), 0);   /* another iteration */
	assert_int_equal(at(0x10100), 0);
	assert_int_equal(at(0x10200), 1);   /* neither fall-through: an event */
	mtf_reset(&st);                      /* a new window */
	at(0x10000);
	assert_int_equal(at(0x10300), 1);   /* jcc to neither side: event */
	assert_int_equal(branches(f, t, k, 4), 2);
	assert_int_equal(f[0], 0x10100);
	assert_int_equal(t[0], 0x10200);
	assert_int_equal(k[0], TV_BR_INTERRUPT);
	assert_int_equal(k[1], TV_BR_INTERRUPT);
	assert_int_equal(st.stats.events, 2);
}

static void test_undecodable(void **state)
{
	uint64_t f[4], t[4];
	uint8_t k[4];

	(void)state;
	/* Outside the fake memory: nothing can be fetched. */
	assert_int_equal(at(0x90000), 0);
	assert_int_equal(at(0x90003), 0);   /* short step: taken as sequential */
	assert_int_equal(at(0x10000), 1);   /* far away: recorded, kind unknown */
	assert_int_equal(branches(f, t, k, 4), 1);
	assert_int_equal(k[0], TV_BR_UNKNOWN);
	assert_int_equal(f[0], 0x90003);
	assert_int_equal(st.stats.decode_errors, 2);
}

static void test_filters(void **state)
{
	struct trace_filter fl;
	struct mtf_guest g = { .ip = 0x10000, .cr3 = 0x1000, .mode = 64, .cpl = 0 };
	uint64_t f[4], t[4];
	uint8_t k[4];

	(void)state;
	put(0x10000, (const uint8_t[]){ 0xeb, 0x10 }, 2);
	put(0x10012, (const uint8_t[]){ 0xeb, 0x10 }, 2);
	trace_filter_all(&fl);
	fl.cpl = TRACE_CPL_USER;
	mtf_observe(&st, ring, &fl, &g, fetch, NULL);
	g.ip = 0x10012;
	assert_int_equal(mtf_observe(&st, ring, &fl, &g, fetch, NULL), 0);  /* CPL 0 branch */
	assert_int_equal(st.stats.filtered, 1);
	g.cpl = 3;
	mtf_reset(&st);
	mtf_observe(&st, ring, &fl, &g, fetch, NULL);
	g.ip = 0x10024;
	assert_int_equal(mtf_observe(&st, ring, &fl, &g, fetch, NULL), 1);
	/* IP range excludes both ends: filtered. */
	fl.nranges = 1;
	fl.ranges[0].lo = 0x20000;
	fl.ranges[0].hi = 0x2ffff;
	mtf_reset(&st);
	g.ip = 0x10000;
	mtf_observe(&st, ring, &fl, &g, fetch, NULL);
	g.ip = 0x10012;
	assert_int_equal(mtf_observe(&st, ring, &fl, &g, fetch, NULL), 0);
	/* CR3 filter: another address space is dropped. */
	fl.nranges = 0;
	fl.cr3 = 0x5000;
	mtf_reset(&st);
	g.ip = 0x10000;
	mtf_observe(&st, ring, &fl, &g, fetch, NULL);
	g.ip = 0x10012;
	assert_int_equal(mtf_observe(&st, ring, &fl, &g, fetch, NULL), 0);
	assert_int_equal(st.stats.filtered, 3);
	assert_int_equal(branches(f, t, k, 4), 1);
	assert_int_equal(f[0], 0x10012);
	assert_int_equal(t[0], 0x10024);
}

static void test_real_mode_linear(void **state)
{
	struct mtf_guest g = { .ip = 0x0ffe, .cs_base = 0x10000, .mode = 16 };
	uint64_t f[2], t[2];
	uint8_t k[2];

	(void)state;
	/* Linear addresses: CS.base + IP. */
	put(0x10000 + 0x0ffe, (const uint8_t[]){ 0xeb, 0x04 }, 2);
	mtf_observe(&st, ring, NULL, &g, fetch, NULL);
	g.ip = 0x1004;
	assert_int_equal(mtf_observe(&st, ring, NULL, &g, fetch, NULL), 1);
	assert_int_equal(branches(f, t, k, 2), 1);
	assert_int_equal(f[0], 0x10000 + 0x0ffe);
	assert_int_equal(t[0], 0x10000 + 0x1004);
	assert_int_equal(k[0], TV_BR_JMP);

	/* IP wraps at 64 KiB in 16-bit code: 0xfffe + 2 + 4 = 0x0004. */
	setup(NULL);
	put(0x10000 + 0xfffe, (const uint8_t[]){ 0xeb, 0x04 }, 2);
	g.ip = 0xfffe;
	mtf_observe(&st, ring, NULL, &g, fetch, NULL);
	g.ip = 0x0004;
	assert_int_equal(mtf_observe(&st, ring, NULL, &g, fetch, NULL), 1);
	assert_int_equal(branches(f, t, k, 2), 1);
	assert_int_equal(k[0], TV_BR_JMP);   /* the target, not an event */
	assert_int_equal(t[0], 0x10004);
}

static void test_ring_full_counts(void **state)
{
	int rc = 0;
	uint64_t n = 0;

	(void)state;
	/* Alternate between two far-apart jumps: every step is a full branch. */
	put(0x10000, (const uint8_t[]){ 0xe9, 0xfb, 0x7f, 0, 0 }, 5);  /* jmp +0x7ffb -> 0x18000 */
	put(0x18000, (const uint8_t[]){ 0xe9, 0xfb, 0x7f, 0xff, 0xff }, 5); /* jmp -0x8005 -> 0x10000 */
	at(0x10000);
	for (int i = 0; i < 2000 && rc != TRACE_ERR_FULL; i++, n++)
		rc = at(i & 1 ? 0x10000 : 0x18000);
	assert_int_equal(rc, TRACE_ERR_FULL);
	assert_int_equal(st.stats.dropped, 1);
	assert_int_equal(st.stats.branches, n - 1);
	assert_int_equal(ring->lost_records, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_sequential_is_silent, setup),
		cmocka_unit_test_setup(test_direct_branches, setup),
		cmocka_unit_test_setup(test_indirect_and_call_to_next, setup),
		cmocka_unit_test_setup(test_events_and_same_ip, setup),
		cmocka_unit_test_setup(test_undecodable, setup),
		cmocka_unit_test_setup(test_filters, setup),
		cmocka_unit_test_setup(test_real_mode_linear, setup),
		cmocka_unit_test_setup(test_ring_full_counts, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
