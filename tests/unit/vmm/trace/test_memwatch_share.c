/* SPDX-License-Identifier: MIT */
/*
 * test_memwatch_share.c - mtrace's sharing filter (vmm/trace/memshare.c):
 * the state machine of one line against mtrace's two rules, false and
 * true sharing, read-modify-writes, CPUs without a bit, lines apart,
 * the table full, and the table under threads.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/trace/memshare.h"

#define SLOTS 64
static uint64_t keys[SLOTS], state[SLOTS];
static struct memshare s;

static int setup(void **st)
{
	(void)st;
	assert_int_equal(memshare_init(&s, keys, state, SLOTS), 0);
	return 0;
}

#define LINE 0x8000ull
static int rd(uint32_t cpu, uint64_t a) { return memshare_access(&s, cpu, a, true, false); }
static int wr(uint32_t cpu, uint64_t a) { return memshare_access(&s, cpu, a, false, true); }
static int rmw(uint32_t cpu, uint64_t a) { return memshare_access(&s, cpu, a, true, true); }

static void test_first_access_logged_then_quiet(void **st)
{
	(void)st;
	assert_int_equal(rd(0, LINE), MEMSHARE_LOG);        /* c's first read */
	assert_int_equal(rd(0, LINE + 8), MEMSHARE_QUIET);  /* same line, no foreign write */
	assert_int_equal(wr(0, LINE), MEMSHARE_LOG);        /* c's first write */
	assert_int_equal(wr(0, LINE + 63), MEMSHARE_QUIET);
	assert_int_equal(rd(0, LINE), MEMSHARE_QUIET);      /* its own write does not count */
	assert_int_equal(rd(1, LINE), MEMSHARE_LOG);        /* another CPU's first read */
	assert_int_equal(rd(1, LINE), MEMSHARE_QUIET);
}

static void test_read_after_foreign_write(void **st)
{
	(void)st;
	assert_int_equal(rd(0, LINE), MEMSHARE_LOG);
	assert_int_equal(rd(0, LINE), MEMSHARE_QUIET);
	assert_int_equal(wr(1, LINE + 8), MEMSHARE_LOG);
	assert_int_equal(rd(0, LINE), MEMSHARE_LOG);        /* another CPU wrote since c last read */
	assert_int_equal(rd(0, LINE), MEMSHARE_QUIET);
	assert_int_equal(rd(1, LINE), MEMSHARE_LOG);        /* cpu 1's first read */
}

static void test_write_after_foreign_read(void **st)
{
	(void)st;
	assert_int_equal(wr(0, LINE), MEMSHARE_LOG);
	assert_int_equal(wr(0, LINE), MEMSHARE_QUIET);
	assert_int_equal(rd(1, LINE), MEMSHARE_LOG);
	assert_int_equal(wr(0, LINE), MEMSHARE_LOG);        /* another CPU read since c last wrote */
	assert_int_equal(wr(0, LINE), MEMSHARE_QUIET);
	assert_int_equal(rd(1, LINE), MEMSHARE_LOG);        /* cpu 0 wrote since cpu 1 read */
	assert_int_equal(rd(0, LINE), MEMSHARE_LOG);        /* cpu 0's first read */
	assert_int_equal(wr(0, LINE), MEMSHARE_LOG);        /* cpu 1's read came after its last write */
	assert_int_equal(rd(0, LINE), MEMSHARE_QUIET);      /* its own write does not count */
	assert_int_equal(wr(0, LINE), MEMSHARE_QUIET);      /* only its own read since its write */
}

/* Two CPUs writing different words of one line: every write moves the line. */
static void test_false_sharing_ping_pong(void **st)
{
	(void)st;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wr(0, LINE + 0), MEMSHARE_LOG);
		assert_int_equal(wr(1, LINE + 32), MEMSHARE_LOG);
	}
	/* runs on one CPU: only the first of each run */
	assert_int_equal(wr(0, LINE), MEMSHARE_LOG);
	assert_int_equal(wr(0, LINE), MEMSHARE_QUIET);
	assert_int_equal(wr(0, LINE), MEMSHARE_QUIET);
	assert_int_equal(wr(1, LINE + 32), MEMSHARE_LOG);
	assert_int_equal(wr(1, LINE + 32), MEMSHARE_QUIET);
}

static void test_rmw_logged_by_either_rule(void **st)
{
	(void)st;
	assert_int_equal(rmw(0, LINE), MEMSHARE_LOG);       /* first read and write */
	assert_int_equal(rmw(0, LINE), MEMSHARE_QUIET);
	assert_int_equal(rd(1, LINE), MEMSHARE_LOG);
	assert_int_equal(rmw(0, LINE), MEMSHARE_LOG);       /* the write rule: cpu 1 read */
	assert_int_equal(rmw(1, LINE), MEMSHARE_LOG);       /* both rules: cpu 0 wrote */
	assert_int_equal(rmw(1, LINE), MEMSHARE_QUIET);
	assert_int_equal(memshare_access(&s, 1, LINE, false, false), MEMSHARE_LOG);   /* neither */
}

static void test_lines_apart(void **st)
{
	(void)st;
	assert_int_equal(wr(0, LINE), MEMSHARE_LOG);
	assert_int_equal(wr(1, LINE + 64), MEMSHARE_LOG);   /* the next line */
	assert_int_equal(wr(0, LINE), MEMSHARE_QUIET);      /* cpu 1 never touched this one */
	assert_int_equal(wr(1, LINE + 64), MEMSHARE_QUIET);
}

static void test_wide_cpu(void **st)
{
	(void)st;
	assert_int_equal(wr(0, LINE), MEMSHARE_LOG);
	assert_int_equal(rd(3, LINE), MEMSHARE_LOG);
	assert_int_equal(rd(MEMSHARE_MAX_CPUS, LINE), MEMSHARE_WIDE);   /* no bit: always logged */
	assert_int_equal(rd(MEMSHARE_MAX_CPUS, LINE), MEMSHARE_WIDE);
	assert_true(memshare_logs(MEMSHARE_WIDE));
	assert_int_equal(wr(0, LINE), MEMSHARE_LOG);        /* its read was foreign to cpu 0's write */
	assert_int_equal(rd(3, LINE), MEMSHARE_LOG);        /* cpu 0 wrote */
	assert_int_equal(wr(40, LINE), MEMSHARE_WIDE);
	assert_int_equal(rd(3, LINE), MEMSHARE_LOG);        /* its write was foreign to cpu 3 */
	assert_int_equal(wr(0, LINE), MEMSHARE_LOG);
}

static void test_table_full_and_reset(void **st)
{
	uint64_t k2[2], s2[2];
	struct memshare small;

	(void)st;
	assert_int_equal(memshare_init(&small, k2, s2, 3), -1);        /* not a power of two */
	assert_int_equal(memshare_init(NULL, k2, s2, 2), -1);
	assert_int_equal(memshare_init(&small, k2, s2, 2), 0);
	assert_int_equal(memshare_access(&small, 0, 0x1000, false, true), MEMSHARE_LOG);
	assert_int_equal(memshare_access(&small, 0, 0x2000, false, true), MEMSHARE_LOG);
	assert_int_equal(memshare_access(&small, 0, 0x3000, false, true), MEMSHARE_NO_SLOT);
	assert_int_equal(memshare_access(&small, 0, 0x1000, false, true), MEMSHARE_QUIET);
	memshare_reset(&small);
	assert_int_equal(memshare_access(&small, 0, 0x1000, false, true), MEMSHARE_LOG);
	assert_int_equal(memshare_access(NULL, 0, 0x1000, true, false), MEMSHARE_NO_SLOT);
}

/* The pure step against a hand-computed word. */
static void test_step_word(void **st)
{
	uint64_t w = 0;

	(void)st;
	assert_int_equal(memshare_step(&w, 2, true, false), MEMSHARE_LOG);
	assert_int_equal(w, 1ull << 2);
	assert_int_equal(memshare_step(&w, 5, false, true), MEMSHARE_LOG);
	assert_int_equal(w, 1ull << 37);                    /* cpu 2's read bit gone, cpu 5 wrote */
	assert_int_equal(memshare_step(&w, 5, true, false), MEMSHARE_LOG);
	assert_int_equal(w, (1ull << 37) | (1ull << 5));
	assert_int_equal(memshare_step(&w, 2, true, false), MEMSHARE_LOG);
	assert_int_equal(w, (1ull << 5) | (1ull << 2));     /* cpu 5's write is no longer quiet */
}

/* Threads hammering one line: every answer is LOG or QUIET, none lost, no crash. */
struct hammer {
	uint32_t cpu;
	uint64_t logged;
};

static void *hammer_fn(void *arg)
{
	struct hammer *h = arg;

	for (int i = 0; i < 20000; i++)
		if (memshare_logs(memshare_access(&s, h->cpu, LINE + 8 * h->cpu, (i & 1) != 0,
						  (i & 1) == 0)))
			h->logged++;
	return NULL;
}

static void test_threads(void **st)
{
	pthread_t th[4];
	struct hammer h[4];

	(void)st;
	for (uint32_t i = 0; i < 4; i++) {
		h[i] = (struct hammer){ .cpu = i };
		assert_int_equal(pthread_create(&th[i], NULL, hammer_fn, &h[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	for (int i = 0; i < 4; i++) {
		assert_true(h[i].logged >= 2);                 /* its first read and first write */
		assert_true(h[i].logged <= 20000);
	}
	{
		unsigned claimed = 0;

		for (int i = 0; i < SLOTS; i++)
			claimed += keys[i] != 0;
		assert_int_equal(claimed, 1);                   /* the line's key claimed once */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_first_access_logged_then_quiet, setup),
		cmocka_unit_test_setup(test_read_after_foreign_write, setup),
		cmocka_unit_test_setup(test_write_after_foreign_read, setup),
		cmocka_unit_test_setup(test_false_sharing_ping_pong, setup),
		cmocka_unit_test_setup(test_rmw_logged_by_either_rule, setup),
		cmocka_unit_test_setup(test_lines_apart, setup),
		cmocka_unit_test_setup(test_wide_cpu, setup),
		cmocka_unit_test_setup(test_table_full_and_reset, setup),
		cmocka_unit_test_setup(test_step_word, setup),
		cmocka_unit_test_setup(test_threads, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
