/* SPDX-License-Identifier: MIT */
/*
 * test_log.c - the lossy log ring and the levelled logger (vmm/lib/log.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/lib/log.h"

#define HDR ((uint64_t)sizeof(struct log_entry_hdr))

/* Bytes an entry of len text bytes takes in the ring. */
static uint64_t entry_size(size_t len)
{
	return HDR + ((len + 7) & ~(size_t)7);
}

/* The ring memory with a guard zone on each side. */
static uint8_t arena[16 + 8192 + 16];
#define RING_MEM (arena + 16)

static void check_guards(void)
{
	for (size_t i = 0; i < 16; i++) {
		assert_int_equal(arena[i], 0xee);
		assert_int_equal(arena[sizeof(arena) - 1 - i], 0xee);
	}
}

static struct log_ring ring;

/* Sink that appends to a buffer and counts calls. */
struct capture {
	char text[4096];
	size_t len;
	int calls;
	size_t last_len;
};

static struct capture cap_a, cap_b;

static void capture(void *ctx, const char *text, size_t len)
{
	struct capture *c = ctx;

	c->calls++;
	c->last_len = len;
	if (len > sizeof(c->text) - 1 - c->len)
		len = sizeof(c->text) - 1 - c->len;
	memcpy(c->text + c->len, text, len);
	c->len += len;
	c->text[c->len] = '\0';
}

static void other_sink(void *ctx, const char *text, size_t len)
{
	capture(ctx, text, len);
}

static uint8_t cpu_index;

static uint8_t current_cpu(void)
{
	return cpu_index;
}

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	memset(arena, 0xee, sizeof(arena));
	memset(&cap_a, 0, sizeof(cap_a));
	memset(&cap_b, 0, sizeof(cap_b));
	log_clear_sinks();
	log_set_ring(NULL);
	log_set_level(LOG_INFO);
	log_set_cpu_fn(NULL);
	cpu_index = 0;
	return 0;
}

/* Run fn in a child process: returns its exit status (sanitizer reports exit non-zero). */
static int run_in_child(void (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* --- ring init --------------------------------------------------------------- */

static void test_ring_init_rejects_bad_sizes(void **state)
{
	static const uint64_t bad[] = { 0, 1, 128, 255, 256, 257, 300, 384, 511, 1000, 4097, 6144 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(log_ring_init(&ring, RING_MEM, bad[i]), -1);
	assert_int_equal(log_ring_init(&ring, NULL, 4096), -1);
	assert_int_equal(log_ring_init(&ring, RING_MEM, LOG_RING_MIN), 0);
	assert_int_equal(log_ring_init(&ring, RING_MEM, 8192), 0);
	assert_int_equal(ring.size, 8192);
	assert_int_equal(ring.head, 0);
	assert_int_equal(ring.tail, 0);
	assert_int_equal(ring.lost, 0);
	assert_int_equal(ring.next_seq, 0);
	assert_ptr_equal(ring.buf, RING_MEM);
}

/* --- push and pop ---------------------------------------------------------------- */

static void test_push_pop_roundtrip(void **state)
{
	struct log_entry_hdr h;
	char text[64];

	(void)state;
	assert_int_equal(log_ring_init(&ring, RING_MEM, 1024), 0);
	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), -1);
	assert_int_equal(log_ring_push(&ring, 0x1122334455667788ull, LOG_WARN, 7, "hello", 5), 0);
	assert_int_equal(log_ring_push(&ring, 2, LOG_DEBUG, 255, "", 0), 0);
	assert_int_equal(ring.head, entry_size(5) + entry_size(0));

	memset(text, 'z', sizeof(text));
	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), 5);
	assert_string_equal(text, "hello");
	assert_int_equal(h.tsc, 0x1122334455667788ull);
	assert_int_equal(h.seq, 0);
	assert_int_equal(h.level, LOG_WARN);
	assert_int_equal(h.cpu, 7);
	assert_int_equal(h.len, 5);
	assert_int_equal(h.reserved, 0);

	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), 0);
	assert_string_equal(text, "");
	assert_int_equal(h.seq, 1);
	assert_int_equal(h.cpu, 255);
	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), -1);
	assert_int_equal(ring.lost, 0);
	check_guards();
}

static void test_wrap_with_straddling_entries(void **state)
{
	struct log_entry_hdr h;
	char text[64], want[64];
	int straddled_hdr = 0, straddled_text = 0;
	uint64_t popped = 0, last = 0, held;
	uint64_t got = 0;

	(void)state;
	/* 13-byte texts make 40-byte entries: offsets 0, 40, ..., 480 (header cut), ... */
	assert_int_equal(log_ring_init(&ring, RING_MEM, 512), 0);
	for (uint32_t i = 0; i < 60; i++) {
		uint64_t off = ring.head & 511;

		if (off + HDR > 512)
			straddled_hdr++;
		else if (off + HDR + 13 > 512)
			straddled_text++;
		snprintf(want, sizeof(want), "entry %04u ok", i);
		assert_int_equal(strlen(want), 13);
		log_ring_push(&ring, 1000 + i, (uint8_t)(i & 3), (uint8_t)i, want, 13);
		check_guards();
		assert_true(ring.head - ring.tail <= 512);
		/* 512 / 40: at most 12 entries held */
		assert_true(ring.next_seq - ring.lost - popped <= 12);

		/* Pop every third push; the oldest held is seq lost + popped. */
		if (i % 3 == 2) {
			uint64_t seq = ring.lost + popped;

			snprintf(want, sizeof(want), "entry %04u ok", (unsigned)seq);
			assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), 13);
			assert_string_equal(text, want);
			assert_int_equal(h.seq, seq);
			assert_int_equal(h.tsc, 1000 + seq);
			assert_int_equal(h.cpu, seq);
			assert_int_equal(h.level, seq & 3);
			popped++;
		}
	}
	assert_true(straddled_hdr > 0);
	assert_true(straddled_text > 0);
	assert_true(ring.lost > 0);
	held = ring.next_seq - ring.lost - popped;
	/* Full after the last drop: 11 or 12 entries, depending on the last pop. */
	assert_true(held == 11 || held == 12);
	/* Drain: contiguous sequence numbers ending at 59. */
	while (log_ring_pop(&ring, &h, text, sizeof(text)) == 13) {
		snprintf(want, sizeof(want), "entry %04u ok", (unsigned)h.seq);
		assert_string_equal(text, want);
		assert_int_equal(h.tsc, 1000 + h.seq);
		if (got)
			assert_int_equal(h.seq, last + 1);
		else
			assert_int_equal(h.seq, ring.lost + popped);
		last = h.seq;
		got++;
	}
	assert_int_equal(got, held);
	assert_int_equal(last, 59);
	assert_int_equal(ring.head, ring.tail);
	check_guards();
}

static void test_lost_counting_when_full(void **state)
{
	struct log_entry_hdr h;
	char text[64];

	(void)state;
	/* 8 entries of 64 bytes fill a 512-byte ring exactly. */
	assert_int_equal(log_ring_init(&ring, RING_MEM, 512), 0);
	for (int i = 0; i < 8; i++)
		log_ring_push(&ring, (uint64_t)i, LOG_INFO, 0, "0123456789012345678901234567890123456789", 40);
	assert_int_equal(ring.lost, 0);
	assert_int_equal(ring.head - ring.tail, 512);
	/* The ninth drops exactly the oldest one. */
	log_ring_push(&ring, 8, LOG_INFO, 0, "0123456789012345678901234567890123456789", 40);
	assert_int_equal(ring.lost, 1);
	/* A small one needs room too: one more dropped. */
	log_ring_push(&ring, 9, LOG_INFO, 0, "x", 1);
	assert_int_equal(ring.lost, 2);
	/* ten more small ones (32 bytes each) into the 64-byte holes */
	for (int i = 0; i < 10; i++)
		log_ring_push(&ring, (uint64_t)(10 + i), LOG_INFO, 0, "y", 1);
	assert_int_equal(ring.next_seq, 20);
	assert_true(ring.head - ring.tail <= 512);
	/* survivors = pushed - lost, oldest first, contiguous */
	{
		uint64_t expect = ring.lost;
		int n = 0;

		while (log_ring_pop(&ring, &h, text, sizeof(text)) >= 0) {
			assert_int_equal(h.seq, expect);
			assert_int_equal(h.tsc, expect);
			expect++;
			n++;
		}
		assert_int_equal(expect, 20);
		assert_int_equal((uint64_t)n + ring.lost, 20);
	}
	check_guards();
}

static void test_pop_into_small_buffers(void **state)
{
	struct log_entry_hdr h;
	char text[8];

	(void)state;
	assert_int_equal(log_ring_init(&ring, RING_MEM, 512), 0);
	log_ring_push(&ring, 1, LOG_ERR, 0, "abcdefghij", 10);
	log_ring_push(&ring, 2, LOG_ERR, 0, "second", 6);
	log_ring_push(&ring, 3, LOG_ERR, 0, "third", 5);
	log_ring_push(&ring, 4, LOG_ERR, 0, "fourth", 6);

	memset(text, '#', sizeof(text));
	assert_int_equal(log_ring_pop(&ring, &h, text, 4), 3);
	assert_string_equal(text, "abc");
	assert_int_equal(text[4], '#');
	assert_int_equal(h.len, 10);              /* the header keeps the full length */

	/* The cut entry was consumed whole: the next pop is the next entry. */
	memset(text, '#', sizeof(text));
	assert_int_equal(log_ring_pop(&ring, &h, text, 1), 0);
	assert_int_equal(text[0], '\0');
	assert_int_equal(text[1], '#');
	assert_int_equal(h.seq, 1);

	/* cap 0: nothing written at all, entry consumed */
	memset(text, '#', sizeof(text));
	assert_int_equal(log_ring_pop(&ring, &h, text, 0), 0);
	assert_int_equal(text[0], '#');
	assert_int_equal(h.seq, 2);

	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), 6);
	assert_string_equal(text, "fourth");
	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), -1);
}

static void pop_null_zero(void)
{
	static uint8_t mem[LOG_RING_MIN];
	struct log_ring r;
	struct log_entry_hdr h;

	log_ring_init(&r, mem, sizeof(mem));
	log_ring_push(&r, 1, LOG_INFO, 0, "drop me", 7);
	/* "up to cap-1 bytes": with cap 0 nothing is copied, so no buffer is needed. */
	if (log_ring_pop(&r, &h, NULL, 0) != 0 || h.len != 7 || r.tail != r.head)
		_exit(3);
}

static void test_pop_cap0_null_text(void **state)
{
	(void)state;
	assert_int_equal(run_in_child(pop_null_zero), 0);
}

static void test_push_cuts_at_max_line(void **state)
{
	struct log_entry_hdr h;
	char big[LOG_MAX_LINE + 100], text[LOG_MAX_LINE + 100];

	(void)state;
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	assert_int_equal(log_ring_init(&ring, RING_MEM, 4096), 0);
	log_ring_push(&ring, 1, LOG_INFO, 0, big, sizeof(big));
	assert_int_equal(ring.head, entry_size(LOG_MAX_LINE));
	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), LOG_MAX_LINE);
	assert_int_equal(h.len, LOG_MAX_LINE);
	assert_memory_equal(text, big, LOG_MAX_LINE);
}

/*
 * Child body: exits 0 when a LOG_MAX_LINE entry survives in a LOG_RING_MIN
 * ring (the smallest log_ring_init accepts), non-zero otherwise.  The
 * ring memory holds stale bytes, as a reused buffer would.
 */
static void max_line_in_smallest_ring(void)
{
	static uint8_t mem[LOG_RING_MIN];
	struct log_ring r;
	struct log_entry_hdr h;
	char big[LOG_MAX_LINE], text[LOG_MAX_LINE + 1];
	int n;

	alarm(5);  /* a push that never returns is a failure, not a hang */
	memset(mem, 0xee, sizeof(mem));
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('A' + i % 26);
	if (log_ring_init(&r, mem, sizeof(mem)))
		_exit(2);
	log_ring_push(&r, 77, LOG_WARN, 1, big, sizeof(big));
	if (r.lost != 0 || r.tail > r.head || r.head - r.tail > r.size)
		_exit(3);
	n = log_ring_pop(&r, &h, text, sizeof(text));
	if (n <= 0 || h.tsc != 77 || h.seq != 0 || h.level != LOG_WARN || h.len > LOG_MAX_LINE ||
	    memcmp(text, big, (size_t)n))
		_exit(4);
}

static void test_max_line_fits_smallest_ring(void **state)
{
	(void)state;
	assert_int_equal(run_in_child(max_line_in_smallest_ring), 0);
}

/* --- log_ring_move ---------------------------------------------------------------- */

static void test_ring_move(void **state)
{
	static uint8_t small_mem[512];
	struct log_ring src;
	struct log_entry_hdr h;
	char text[64];

	(void)state;
	assert_int_equal(log_ring_init(&src, small_mem, sizeof(small_mem)), 0);
	assert_int_equal(log_ring_init(&ring, RING_MEM, 1024), 0);
	log_ring_push(&ring, 5, LOG_INFO, 0, "already here", 12);
	ring.lost = 1;
	/* Overfill the boot ring: 16 entries of 40 bytes in 512, so 4 lost. */
	for (int i = 0; i < 16; i++) {
		snprintf(text, sizeof(text), "boot line %02d.", i);
		log_ring_push(&src, 100 + (uint64_t)i, (uint8_t)(i % 4), (uint8_t)(10 + i), text, 13);
	}
	assert_int_equal(src.lost, 4);

	log_ring_move(&ring, &src);
	assert_int_equal(src.lost, 0);
	assert_int_equal(src.head, src.tail);
	assert_int_equal(ring.lost, 5);
	assert_int_equal(ring.next_seq, 13);

	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), 12);
	assert_string_equal(text, "already here");
	for (int i = 4; i < 16; i++) {
		char want[32];

		snprintf(want, sizeof(want), "boot line %02d.", i);
		assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), 13);
		assert_string_equal(text, want);
		assert_int_equal(h.tsc, 100 + (uint64_t)i);    /* kept */
		assert_int_equal(h.level, i % 4);               /* kept */
		assert_int_equal(h.cpu, 10 + i);                /* kept */
		assert_int_equal(h.seq, (uint64_t)(i - 3));     /* renumbered by dst */
	}
	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), -1);
}

static void test_ring_move_into_smaller_ring_counts_loss(void **state)
{
	static uint8_t big_mem[2048];
	struct log_ring src;
	struct log_entry_hdr h;
	char text[64];
	int n = 0;

	(void)state;
	assert_int_equal(log_ring_init(&src, big_mem, sizeof(big_mem)), 0);
	for (int i = 0; i < 20; i++)
		log_ring_push(&src, (uint64_t)i, LOG_INFO, 0, "0123456789012345678901234567890123456789", 40);
	assert_int_equal(log_ring_init(&ring, RING_MEM, 512), 0);
	log_ring_move(&ring, &src);
	/* 512 bytes hold 8 of these 64-byte entries */
	assert_int_equal(ring.lost, 12);
	while (log_ring_pop(&ring, &h, text, sizeof(text)) >= 0) {
		assert_int_equal(h.tsc, 12 + (uint64_t)n);
		n++;
	}
	assert_int_equal(n, 8);
	check_guards();
}

/* --- the global logger ------------------------------------------------------------- */

static void test_sink_receives_formatted_line(void **state)
{
	(void)state;
	assert_int_equal(log_add_sink(capture, &cap_a), 0);
	log_info("hello %d from %s", 42, "cpu");
	assert_int_equal(cap_a.calls, 1);
	assert_string_equal(cap_a.text, "[info] hello 42 from cpu\n");
	assert_int_equal(cap_a.last_len, strlen("[info] hello 42 from cpu\n"));
	log_err("e");
	log_warn("w");
	assert_string_equal(cap_a.text, "[info] hello 42 from cpu\n[err] e\n[warn] w\n");
}

static void test_level_filtering(void **state)
{
	struct log_entry_hdr h;
	char text[64];

	(void)state;
	assert_int_equal(log_ring_init(&ring, RING_MEM, 1024), 0);
	log_set_ring(&ring);
	log_add_sink(capture, &cap_a);
	assert_int_equal(log_get_level(), LOG_INFO);
	log_debug("dropped");
	assert_int_equal(cap_a.calls, 0);
	assert_int_equal(ring.head, 0);  /* not in the ring either */

	log_set_level(LOG_DEBUG);
	log_debug("kept %u", 1u);
	assert_string_equal(cap_a.text, "[debug] kept 1\n");

	log_set_level(LOG_ERR);
	assert_int_equal(log_get_level(), LOG_ERR);
	log_warn("dropped too");
	log_info("and this");
	log_err("only errors");
	assert_string_equal(cap_a.text, "[debug] kept 1\n[err] only errors\n");

	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), 6);
	assert_string_equal(text, "kept 1");
	assert_int_equal(h.level, LOG_DEBUG);
	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), 11);
	assert_string_equal(text, "only errors");
	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), -1);
}

static void test_ring_gets_tsc_cpu_and_text_without_prefix(void **state)
{
	struct log_entry_hdr h;
	char text[64];

	(void)state;
	assert_int_equal(log_ring_init(&ring, RING_MEM, 1024), 0);
	log_set_ring(&ring);
	assert_ptr_equal(log_get_ring(), &ring);
	log_set_cpu_fn(current_cpu);
	hw_fake_set_tsc(5000);
	cpu_index = 3;
	log_warn("on cpu %u", 3u);
	cpu_index = 9;
	log_info("second");
	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), 8);
	assert_string_equal(text, "on cpu 3");
	assert_int_equal(h.tsc, 5000);
	assert_int_equal(h.cpu, 3);
	assert_int_equal(h.level, LOG_WARN);
	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), 6);
	assert_int_equal(h.tsc, 5001);  /* one rdtsc per message */
	assert_int_equal(h.cpu, 9);
	/* no ring: sinks only, and nothing breaks */
	log_set_ring(NULL);
	log_info("nowhere");
	assert_int_equal(ring.head, ring.tail);
}

static void test_max_line_cut_with_ellipsis(void **state)
{
	struct log_entry_hdr h;
	char big[400], text[LOG_MAX_LINE + 1], want[LOG_MAX_LINE + 16];

	(void)state;
	assert_int_equal(log_ring_init(&ring, RING_MEM, 4096), 0);
	log_set_ring(&ring);
	log_add_sink(capture, &cap_a);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_info("%s", big);

	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), LOG_MAX_LINE);
	assert_int_equal(strlen(text), LOG_MAX_LINE);
	assert_memory_equal(text + LOG_MAX_LINE - 3, "...", 3);
	assert_int_equal(text[LOG_MAX_LINE - 4], 'x');

	snprintf(want, sizeof(want), "[info] %s\n", text);
	assert_string_equal(cap_a.text, want);
	assert_int_equal(cap_a.last_len, 7 + LOG_MAX_LINE + 1);
}

static void test_exact_max_line_not_cut(void **state)
{
	struct log_entry_hdr h;
	char msg[LOG_MAX_LINE + 2], text[LOG_MAX_LINE + 1];

	(void)state;
	assert_int_equal(log_ring_init(&ring, RING_MEM, 4096), 0);
	log_set_ring(&ring);
	log_add_sink(capture, &cap_a);
	log_set_level(LOG_DEBUG);
	memset(msg, 'm', LOG_MAX_LINE);
	msg[LOG_MAX_LINE] = '\0';
	log_debug("%s", msg);
	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), LOG_MAX_LINE);
	assert_string_equal(text, msg);  /* no "..." */
	/* the longest prefix, "[debug] ", still gets its newline */
	assert_int_equal(cap_a.last_len, 8 + LOG_MAX_LINE + 1);
	assert_int_equal(cap_a.text[cap_a.len - 1], '\n');
	/* one more character is cut */
	msg[LOG_MAX_LINE] = 'M';
	msg[LOG_MAX_LINE + 1] = '\0';
	log_debug("%s", msg);
	assert_int_equal(log_ring_pop(&ring, &h, text, sizeof(text)), LOG_MAX_LINE);
	assert_memory_equal(text + LOG_MAX_LINE - 3, "...", 3);
}

/* Raw text reaches every sink unchanged, whatever the level, never the ring. */
static void test_write_raw_sinks_only(void **state)
{
	(void)state;
	assert_int_equal(log_ring_init(&ring, RING_MEM, 1024), 0);
	log_set_ring(&ring);
	log_set_level(LOG_ERR);
	assert_int_equal(log_add_sink(capture, &cap_a), 0);
	assert_int_equal(log_add_sink(other_sink, &cap_b), 0);
	log_write_raw("TVT1 0 0 E 0 0 xx 00000000\n", 27);
	assert_int_equal(cap_a.calls, 1);
	assert_int_equal(cap_a.last_len, 27);
	assert_string_equal(cap_a.text, "TVT1 0 0 E 0 0 xx 00000000\n");
	assert_string_equal(cap_b.text, cap_a.text);
	assert_int_equal(ring.head, ring.tail);
	/* the lock was released: a log line goes through afterwards */
	log_err("after");
	assert_int_equal(cap_a.calls, 2);
	assert_non_null(strstr(cap_a.text, "[err] after\n"));
}

static void test_sinks_add_remove(void **state)
{
	(void)state;
	assert_int_equal(log_add_sink(capture, &cap_a), 0);
	assert_int_equal(log_add_sink(other_sink, &cap_b), 0);
	assert_int_equal(log_add_sink(capture, &cap_b), 0);
	assert_int_equal(log_add_sink(other_sink, &cap_a), 0);
	assert_int_equal(log_add_sink(capture, &cap_a), -1);  /* LOG_MAX_SINKS taken */

	log_info("one");
	assert_int_equal(cap_a.calls, 2);
	assert_int_equal(cap_b.calls, 2);

	/* removes every registration of capture, keeps other_sink's */
	log_remove_sink(capture);
	log_info("two");
	assert_int_equal(cap_a.calls, 3);
	assert_int_equal(cap_b.calls, 3);
	assert_string_equal(cap_b.text, "[info] one\n[info] one\n[info] two\n");

	/* freed slots are reused */
	assert_int_equal(log_add_sink(capture, &cap_a), 0);
	assert_int_equal(log_add_sink(capture, &cap_a), 0);
	assert_int_equal(log_add_sink(capture, &cap_a), -1);

	log_remove_sink(other_sink);
	log_remove_sink(other_sink);  /* removing again is harmless */
	log_info("three");
	assert_int_equal(cap_b.calls, 3);
	assert_int_equal(cap_a.calls, 5);

	log_clear_sinks();
	log_info("four");
	assert_int_equal(cap_a.calls, 5);
}

static void test_level_names(void **state)
{
	(void)state;
	assert_string_equal(log_level_name(LOG_ERR), "err");
	assert_string_equal(log_level_name(LOG_WARN), "warn");
	assert_string_equal(log_level_name(LOG_INFO), "info");
	assert_string_equal(log_level_name(LOG_DEBUG), "debug");
	assert_string_equal(log_level_name((enum log_level)4), "?");
	assert_string_equal(log_level_name((enum log_level)-1), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_ring_init_rejects_bad_sizes, setup),
		cmocka_unit_test_setup(test_push_pop_roundtrip, setup),
		cmocka_unit_test_setup(test_wrap_with_straddling_entries, setup),
		cmocka_unit_test_setup(test_lost_counting_when_full, setup),
		cmocka_unit_test_setup(test_pop_into_small_buffers, setup),
		cmocka_unit_test_setup(test_pop_cap0_null_text, setup),
		cmocka_unit_test_setup(test_push_cuts_at_max_line, setup),
		cmocka_unit_test_setup(test_max_line_fits_smallest_ring, setup),
		cmocka_unit_test_setup(test_ring_move, setup),
		cmocka_unit_test_setup(test_ring_move_into_smaller_ring_counts_loss, setup),
		cmocka_unit_test_setup(test_sink_receives_formatted_line, setup),
		cmocka_unit_test_setup(test_level_filtering, setup),
		cmocka_unit_test_setup(test_ring_gets_tsc_cpu_and_text_without_prefix, setup),
		cmocka_unit_test_setup(test_max_line_cut_with_ellipsis, setup),
		cmocka_unit_test_setup(test_exact_max_line_not_cut, setup),
		cmocka_unit_test_setup(test_write_raw_sinks_only, setup),
		cmocka_unit_test_setup(test_sinks_add_remove, setup),
		cmocka_unit_test_setup(test_level_names, setup),
	};

	return cmocka_run_group_tests_name("test_log", tests, NULL, NULL);
}
