/* SPDX-License-Identifier: MIT */
/*
 * test_trace_read.c - the validating record reader (vmm/trace/read.c):
 * every record type from hand-built bytes, compact expansion and its sync
 * points, malformed input (skippable and fatal), random and mutated bytes,
 * and writer -> reader round trips under both overflow policies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/trace/format.h"
#include "vmm/trace/read.h"
#include "vmm/trace/ring.h"

/* Little-endian bytes of a 64-bit value. */
#define Q(v) (uint8_t)((v) >> 0), (uint8_t)((v) >> 8), (uint8_t)((v) >> 16), \
	(uint8_t)((v) >> 24), (uint8_t)((v) >> 32), (uint8_t)((v) >> 40),    \
	(uint8_t)((v) >> 48), (uint8_t)((v) >> 56)
/* test_skippable_errors_go_on writes trigger 10 as the first unknown one. */
_Static_assert(TV_TRIG_MAX + 1 == 10, "the first unknown trigger is 10");

/* A record header: type, info, size, aux. */
#define H(t, i, s, a) (t), (i), (uint8_t)(s), (uint8_t)((s) >> 8), \
	(uint8_t)(a), (uint8_t)((a) >> 8), (uint8_t)((a) >> 16), (uint8_t)((a) >> 24)

#define A1 0x1122334455667788ull
#define A2 0x99aabbccddeeff00ull
#define A3 0x0123456789abcdefull

static struct trace_reader rd;

static int setup(void **state)
{
	(void)state;
	trace_reader_init(&rd);
	return 0;
}

/* Feed a copy of bytes in an exactly sized heap block (ASan sees overreads). */
static uint8_t *feed_copy(const void *bytes, size_t len, uint64_t first_seq, bool contiguous)
{
	uint8_t *p = malloc(len ? len : 1);

	assert_non_null(p);
	memcpy(p, bytes, len);
	trace_reader_feed(&rd, p, len, first_seq, contiguous);
	return p;
}

/* Every byte fed so far is accounted for once the buffer is drained. */
static void assert_all_bytes_accounted(uint64_t fed)
{
	assert_int_equal(rd.stats.bytes + rd.stats.bad_bytes, fed);
}

/* --- decoding --------------------------------------------------------------- */

static const uint8_t every_type[] = {
	/* 0: PAD, 16 bytes */
	H(0, 0, 16, 0), Q(0ull),
	/* 16: BRANCH, no tsc */
	H(1, TV_BR_CALL, 24, 0), Q(A1), Q(A2),
	/* 40: BRANCH with tsc and MISPRED */
	H(1, TV_BR_RET, 32, 3), Q(A2), Q(A3), Q(0x777ull),
	/* 72: COMPACT: from = A3 + 0x10 */
	H(2, TV_BR_JCC, 16, 0x10), Q(0x5000ull),
	/* 88: LBR */
	H(3, TV_BR_JMP_IND, 32, 2), Q(0x10ull), Q(0x20ull), Q(0x8000000000000001ull),
	/* 120: CR3 */
	H(4, 0, 32, 0), Q(0x101ull), Q(0x3000ull), Q(0x4000ull),
	/* 152: START (kernel entry) */
	H(5, 0, 24, 4), Q(0x102ull), Q(0xffffffff81000000ull),
	/* 176: CONFIG "a=b" */
	H(7, 0, 24, 3), Q(0x103ull), 'a', '=', 'b', 0, 0, 0, 0, 0,
	/* 200: TIME */
	H(8, 0, 32, 0), Q(0x104ull), Q(3000000000ull), Q(1700000000123456789ull),
	/* 232: LOG warn "boom" */
	H(9, 1, 24, 4), Q(0x105ull), 'b', 'o', 'o', 'm', 0, 0, 0, 0,
	/* 256: IMAGE loader "grubx64.efi" (11) */
	H(10, TV_IMG_LOADER, 48, 11), Q(0x106ull), Q(0x7e000000ull), Q(0x30000ull),
	'g', 'r', 'u', 'b', 'x', '6', '4', '.', 'e', 'f', 'i', 0, 0, 0, 0, 0,
	/* 304: LOST 42 */
	H(11, 0, 24, 0), Q(0x107ull), Q(42ull),
	/* 328: MARKER "m" */
	H(12, 0, 32, 1), Q(0x108ull), Q(A1), 'm', 0, 0, 0, 0, 0, 0, 0,
	/* 360: PT_SYNC */
	H(13, 0, 32, 0), Q(0x109ull), Q(0x123456ull), Q(0x40ull),
	/* 392: STOP (receiver) */
	H(6, 0, 24, 5), Q(0x10aull), Q(0x1234ull),
};

static void next_ok(struct trace_event *ev, uint8_t type, uint64_t seq, uint64_t offset)
{
	assert_int_equal(trace_reader_next(&rd, ev), 1);
	assert_int_equal(ev->type, type);
	assert_int_equal(ev->seq, seq);
	assert_int_equal(ev->offset, offset);
}

static void test_decode_every_type(void **state)
{
	struct trace_event ev;
	uint8_t *buf;

	(void)state;
	assert_int_equal(sizeof(every_type), 416);
	buf = feed_copy(every_type, sizeof(every_type), 1000, false);

	next_ok(&ev, TV_REC_PAD, 1000, 0);
	assert_int_equal(ev.size, 16);
	assert_false(ev.has_tsc);

	next_ok(&ev, TV_REC_BRANCH, 1001, 16);
	assert_int_equal(ev.u.branch.from, A1);
	assert_int_equal(ev.u.branch.to, A2);
	assert_int_equal(ev.u.branch.kind, TV_BR_CALL);
	assert_int_equal(ev.u.branch.flags, 0);
	assert_false(ev.u.branch.compact);
	assert_false(ev.has_tsc);

	next_ok(&ev, TV_REC_BRANCH, 1002, 40);
	assert_int_equal(ev.u.branch.from, A2);
	assert_int_equal(ev.u.branch.to, A3);
	assert_int_equal(ev.u.branch.flags, TV_BRF_TSC | TV_BRF_MISPRED);
	assert_true(ev.has_tsc);
	assert_int_equal(ev.tsc, 0x777);

	next_ok(&ev, TV_REC_BRANCH_COMPACT, 1003, 72);
	assert_true(ev.u.branch.compact);
	assert_int_equal(ev.u.branch.from, A3 + 0x10);
	assert_int_equal(ev.u.branch.to, 0x5000);
	assert_int_equal(ev.u.branch.kind, TV_BR_JCC);
	assert_int_equal(ev.u.branch.flags, 0);

	next_ok(&ev, TV_REC_LBR, 1004, 88);
	assert_int_equal(ev.u.branch.from, 0x10);
	assert_int_equal(ev.u.branch.to, 0x20);
	assert_int_equal(ev.u.branch.lbr_info, 0x8000000000000001ull);
	assert_int_equal(ev.u.branch.flags, TV_BRF_MISPRED);
	assert_int_equal(ev.u.branch.kind, TV_BR_JMP_IND);

	next_ok(&ev, TV_REC_CR3, 1005, 120);
	assert_true(ev.has_tsc);
	assert_int_equal(ev.tsc, 0x101);
	assert_int_equal(ev.u.cr3.cr3, 0x3000);
	assert_int_equal(ev.u.cr3.rip, 0x4000);

	next_ok(&ev, TV_REC_START, 1006, 152);
	assert_int_equal(ev.tsc, 0x102);
	assert_int_equal(ev.u.startstop.trigger, TV_TRIG_KERNEL_ENTRY);
	assert_int_equal(ev.u.startstop.rip, 0xffffffff81000000ull);

	next_ok(&ev, TV_REC_CONFIG, 1007, 176);
	assert_int_equal(ev.tsc, 0x103);
	assert_int_equal(ev.u.text.len, 3);
	assert_memory_equal(ev.u.text.text, "a=b", 3);
	assert_ptr_equal(ev.u.text.text, (const char *)buf + 192);

	next_ok(&ev, TV_REC_TIME, 1008, 200);
	assert_int_equal(ev.u.time.tsc_hz, 3000000000ull);
	assert_int_equal(ev.u.time.unix_ns, 1700000000123456789ull);

	next_ok(&ev, TV_REC_LOG, 1009, 232);
	assert_int_equal(ev.u.text.level, 1);
	assert_int_equal(ev.u.text.len, 4);
	assert_memory_equal(ev.u.text.text, "boom", 4);

	next_ok(&ev, TV_REC_IMAGE, 1010, 256);
	assert_int_equal(ev.u.image.kind, TV_IMG_LOADER);
	assert_int_equal(ev.u.image.base, 0x7e000000);
	assert_int_equal(ev.u.image.size, 0x30000);
	assert_int_equal(ev.u.image.name_len, 11);
	assert_memory_equal(ev.u.image.name, "grubx64.efi", 11);

	next_ok(&ev, TV_REC_LOST, 1011, 304);
	assert_int_equal(ev.u.lost.records, 42);

	next_ok(&ev, TV_REC_MARKER, 1012, 328);
	assert_int_equal(ev.u.marker.value, A1);
	assert_int_equal(ev.u.marker.label_len, 1);
	assert_memory_equal(ev.u.marker.label, "m", 1);

	next_ok(&ev, TV_REC_PT_SYNC, 1013, 360);
	assert_int_equal(ev.tsc, 0x109);
	assert_int_equal(ev.u.pt_sync.pt_offset, 0x123456);
	assert_int_equal(ev.u.pt_sync.pt_lost, 0x40);

	next_ok(&ev, TV_REC_STOP, 1014, 392);
	assert_int_equal(ev.u.startstop.trigger, TV_TRIG_RECEIVER);

	assert_int_equal(trace_reader_next(&rd, &ev), 0);
	assert_int_equal(trace_reader_next(&rd, &ev), 0);
	assert_int_equal(rd.stats.records, 15);
	assert_int_equal(rd.stats.bad_records, 0);
	assert_int_equal(rd.stats.lost, 42);
	assert_int_equal(rd.stats.missed, 1000);   /* seq 0..999 never seen */
	assert_all_bytes_accounted(sizeof(every_type));
	free(buf);
}

/* --- compact expansion ----------------------------------------------------------- */

static void test_compact_chain_and_sync_points(void **state)
{
	static const uint8_t bytes[] = {
		H(2, 1, 16, 5), Q(0x100ull),            /* 0: no branch before: NO_PREV */
		H(2, 1, 16, 7), Q(0x200ull),            /* 1: base 0x100 */
		H(4, 0, 32, 0), Q(1ull), Q(2ull), Q(3ull), /* 2: CR3 does not break the chain */
		H(2, 2, 16, 1), Q(0x300ull),            /* 3: base 0x200 */
		H(11, 0, 24, 0), Q(4ull), Q(9ull),      /* 4: LOST breaks it */
		H(2, 2, 16, 1), Q(0x400ull),            /* 5: NO_PREV */
		H(2, 2, 16, 2), Q(0x500ull),            /* 6: base 0x400 */
		H(5, 0, 24, 1), Q(5ull), Q(6ull),       /* 7: START breaks it */
		H(2, 2, 16, 3), Q(0x600ull),            /* 8: NO_PREV */
		H(1, 4, 24, 0), Q(0x1000ull), Q(0x2000ull), /* 9 */
		H(2, 6, 16, 0), Q(0x3000ull),           /* 10: base 0x2000, offset 0 */
	};
	struct trace_event ev;
	uint8_t *buf;

	(void)state;
	buf = feed_copy(bytes, sizeof(bytes), 0, true);
	assert_int_equal(trace_reader_next(&rd, &ev), TRACE_ERR_NO_PREV);
	assert_int_equal(ev.seq, 0);
	assert_int_equal(ev.u.branch.to, 0x100);
	assert_int_equal(ev.u.branch.from, 0);
	assert_true(ev.u.branch.compact);
	next_ok(&ev, TV_REC_BRANCH_COMPACT, 1, 16);
	assert_int_equal(ev.u.branch.from, 0x107);
	next_ok(&ev, TV_REC_CR3, 2, 32);
	next_ok(&ev, TV_REC_BRANCH_COMPACT, 3, 64);
	assert_int_equal(ev.u.branch.from, 0x201);
	next_ok(&ev, TV_REC_LOST, 4, 80);
	assert_int_equal(trace_reader_next(&rd, &ev), TRACE_ERR_NO_PREV);
	assert_int_equal(ev.seq, 5);
	next_ok(&ev, TV_REC_BRANCH_COMPACT, 6, 120);
	assert_int_equal(ev.u.branch.from, 0x402);
	next_ok(&ev, TV_REC_START, 7, 136);
	assert_int_equal(trace_reader_next(&rd, &ev), TRACE_ERR_NO_PREV);
	next_ok(&ev, TV_REC_BRANCH, 9, 176);
	next_ok(&ev, TV_REC_BRANCH_COMPACT, 10, 200);
	assert_int_equal(ev.u.branch.from, 0x2000);
	assert_int_equal(ev.u.branch.to, 0x3000);
	assert_int_equal(ev.u.branch.kind, TV_BR_RET);
	assert_int_equal(trace_reader_next(&rd, &ev), 0);
	assert_int_equal(rd.stats.records, 8);
	assert_int_equal(rd.stats.bad_records, 3);
	assert_int_equal(rd.stats.bad_bytes, 48);
	assert_all_bytes_accounted(sizeof(bytes));
	free(buf);
}

static void test_feed_continuity(void **state)
{
	static const uint8_t full[] = { H(1, 2, 24, 0), Q(0x10ull), Q(0x20ull) };
	static const uint8_t compact[] = { H(2, 2, 16, 4), Q(0x30ull) };
	static const uint8_t broken[] = { H(1, 2, 24, 0), Q(0x10ull), Q(0x20ull), H(4, 0, 3, 0) };
	struct trace_event ev;
	uint8_t *a, *b;

	(void)state;
	/* contiguous: the chain carries over */
	a = feed_copy(full, sizeof(full), 10, false);
	assert_int_equal(rd.stats.missed, 10);
	next_ok(&ev, TV_REC_BRANCH, 10, 0);
	b = feed_copy(compact, sizeof(compact), 11, true);
	next_ok(&ev, TV_REC_BRANCH_COMPACT, 11, 0);
	assert_int_equal(ev.u.branch.from, 0x24);
	free(b);

	/* caller says not contiguous */
	b = feed_copy(compact, sizeof(compact), 12, false);
	assert_int_equal(trace_reader_next(&rd, &ev), TRACE_ERR_NO_PREV);
	free(b);

	/* caller says contiguous, but the sequence numbers disagree: 2 missed */
	b = feed_copy(full, sizeof(full), 13, true);
	next_ok(&ev, TV_REC_BRANCH, 13, 0);
	free(b);
	b = feed_copy(compact, sizeof(compact), 16, true);
	assert_int_equal(trace_reader_next(&rd, &ev), TRACE_ERR_NO_PREV);
	assert_int_equal(rd.stats.missed, 12);
	free(b);

	/* going back (a retransmission) is not missing anything, and breaks the chain */
	b = feed_copy(compact, sizeof(compact), 3, true);
	assert_int_equal(trace_reader_next(&rd, &ev), TRACE_ERR_NO_PREV);
	assert_int_equal(ev.seq, 3);
	assert_int_equal(rd.stats.missed, 12);
	free(b);

	/* a buffer that ended in a fatal error does not continue */
	b = feed_copy(broken, sizeof(broken), 20, false);
	next_ok(&ev, TV_REC_BRANCH, 20, 0);
	assert_int_equal(trace_reader_next(&rd, &ev), TRACE_ERR_REC_SIZE);
	assert_int_equal(trace_reader_next(&rd, &ev), 0);
	free(b);
	b = feed_copy(compact, sizeof(compact), 21, true);
	assert_int_equal(trace_reader_next(&rd, &ev), TRACE_ERR_NO_PREV);
	free(b);

	/* NULL buffer: empty */
	trace_reader_feed(&rd, NULL, 100, 22, true);
	assert_int_equal(trace_reader_next(&rd, &ev), 0);
	free(a);
}

/* --- malformed input ---------------------------------------------------------------- */

struct fatal_case {
	const char *what;
	uint8_t bytes[48];
	size_t len;
	int err;
	uint64_t offset;
};

static void test_fatal_errors_end_the_buffer(void **state)
{
	static const struct fatal_case cases[] = {
		{ "size 0", { H(1, 0, 24, 0), Q(1ull), Q(2ull), H(4, 0, 0, 0) }, 32,
		  TRACE_ERR_REC_SIZE, 24 },
		{ "size 4", { H(9, 0, 4, 0), Q(0ull) }, 16, TRACE_ERR_REC_SIZE, 0 },
		{ "size 12", { H(9, 0, 12, 0), Q(0ull) }, 16, TRACE_ERR_REC_SIZE, 0 },
		{ "size 1032", { H(9, 0, 1032, 0), Q(0ull) }, 16, TRACE_ERR_REC_SIZE, 0 },
		{ "size 65528", { H(0, 0, 65528, 0), Q(0ull) }, 16, TRACE_ERR_REC_SIZE, 0 },
		{ "record past the end", { H(13, 0, 32, 0), Q(1ull), Q(2ull) }, 24,
		  TRACE_ERR_TRUNCATED, 0 },
		{ "5 stray bytes", { H(1, 0, 24, 0), Q(1ull), Q(2ull), 1, 2, 3, 4, 5 }, 29,
		  TRACE_ERR_TRUNCATED, 24 },
	};
	struct trace_event ev;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct fatal_case *c = &cases[i];
		uint8_t *buf;
		int rc;

		trace_reader_init(&rd);
		buf = feed_copy(c->bytes, c->len, 50, false);
		while ((rc = trace_reader_next(&rd, &ev)) == 1)
			;
		if (rc != c->err)
			fail_msg("%s: got %d, want %d", c->what, rc, c->err);
		assert_false(trace_read_error_is_skippable(rc));
		assert_int_equal(ev.offset, c->offset);
		assert_int_equal(ev.seq, 50 + c->offset / 24);
		assert_int_equal(rd.stats.bad_records, 1);
		assert_int_equal(rd.stats.bad_bytes, c->len - c->offset);
		assert_int_equal(trace_reader_next(&rd, &ev), 0);
		assert_all_bytes_accounted(c->len);
		free(buf);
	}
}

static void test_skippable_errors_go_on(void **state)
{
	static const uint8_t bytes[] = {
		H(19, 0, 16, 0), Q(0ull),                  /* unknown type (14, 15: CODE; 16-18: MEM) */
		H(255, 0, 8, 0),                           /* unknown type, bare header */
		H(1, 1, 32, 0), Q(1ull), Q(2ull), Q(3ull), /* BRANCH: 32 bytes without TSC */
		H(1, 1, 24, 1), Q(1ull), Q(2ull),          /* BRANCH: TSC flag in 24 bytes */
		H(1, 12, 24, 0), Q(1ull), Q(0x50ull),      /* BRANCH: kind 12 */
		H(2, 1, 16, 4), Q(0x60ull),                /* compact after it: base 0x50 */
		H(2, 1, 24, 4), Q(0ull), Q(0ull),          /* COMPACT of 24 bytes */
		H(2, 1, 16, 4), Q(0x70ull),                /* chain broken by that */
		H(3, 0, 24, 0), Q(1ull), Q(2ull),          /* LBR too short */
		H(4, 0, 40, 0), Q(1ull), Q(2ull), Q(3ull), Q(4ull), /* CR3 too long */
		H(7, 0, 24, 9), Q(1ull), Q(0ull),          /* CONFIG: 9 bytes need 32 */
		H(7, 0, 16, 0xffffffffu), Q(1ull),         /* CONFIG: aux 2^32-1 (no wrap) */
		H(12, 0, 24, 1), Q(1ull), Q(2ull),         /* MARKER: label outside */
		H(10, 0, 24, 0), Q(1ull), Q(2ull),         /* IMAGE: fixed part is 32 */
		H(10, 4, 32, 0), Q(1ull), Q(2ull), Q(3ull), /* IMAGE kind 4 */
		H(9, 4, 16, 0), Q(1ull),                   /* LOG level 4 */
		H(5, 0, 24, 6), Q(1ull), Q(2ull),          /* START on FULL */
		H(6, 0, 24, 10), Q(1ull), Q(2ull),         /* STOP trigger 10 (TV_TRIG_MAX + 1) */
		H(11, 0, 16, 0), Q(1ull),                  /* LOST too short */
		H(13, 0, 24, 0), Q(1ull), Q(2ull),         /* PT_SYNC too short */
		H(8, 0, 24, 0), Q(1ull), Q(2ull),          /* TIME too short */
		H(4, 0, 32, 0), Q(1ull), Q(2ull), Q(3ull), /* a good CR3 at the end */
	};
	static const int want[] = {
		TRACE_ERR_REC_TYPE, TRACE_ERR_REC_TYPE, TRACE_ERR_REC_FIELD, TRACE_ERR_REC_FIELD,
		TRACE_ERR_REC_FIELD, 1, TRACE_ERR_REC_FIELD, TRACE_ERR_NO_PREV,
		TRACE_ERR_REC_FIELD, TRACE_ERR_REC_FIELD, TRACE_ERR_REC_FIELD, TRACE_ERR_REC_FIELD,
		TRACE_ERR_REC_FIELD, TRACE_ERR_REC_FIELD, TRACE_ERR_REC_FIELD, TRACE_ERR_REC_FIELD,
		TRACE_ERR_REC_FIELD, TRACE_ERR_REC_FIELD, TRACE_ERR_REC_FIELD, TRACE_ERR_REC_FIELD,
		TRACE_ERR_REC_FIELD, 1,
	};
	struct trace_event ev;
	uint8_t *buf;
	uint64_t off = 0;

	(void)state;
	buf = feed_copy(bytes, sizeof(bytes), 0, false);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int rc = trace_reader_next(&rd, &ev);

		if (rc != want[i])
			fail_msg("record %zu: got %d (%s), want %d", i, rc, trace_strerror(rc), want[i]);
		assert_true(rc == 1 || trace_read_error_is_skippable(rc));
		assert_int_equal(ev.seq, i);
		assert_int_equal(ev.offset, off);
		off += ev.size;
	}
	assert_int_equal(ev.type, TV_REC_CR3);
	assert_int_equal(trace_reader_next(&rd, &ev), 0);
	assert_int_equal(off, sizeof(bytes));
	assert_int_equal(rd.stats.records, 2);
	assert_int_equal(rd.stats.bad_records, 20);
	assert_all_bytes_accounted(sizeof(bytes));
	free(buf);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(trace_rec_type_name(TV_REC_BRANCH_COMPACT), "BRANCH_COMPACT");
	assert_string_equal(trace_rec_type_name(TV_REC_PT_SYNC), "PT_SYNC");
	assert_string_equal(trace_rec_type_name(TV_REC_TYPE_MAX), "?");
	assert_string_equal(trace_branch_kind_name(TV_BR_CALL_IND), "call-ind");
	assert_string_equal(trace_branch_kind_name(TV_BR_KIND_MAX), "?");
	assert_string_equal(trace_branch_kind_name(~0u), "?");
}

/* --- random and mutated input --------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/*
 * Drain the reader over buf[0..len): no crash, sequence numbers step by
 * one per record whose end is known, everything returned lies inside the
 * buffer, and bytes decoded + bytes reported malformed = len.
 */
static void drain_checked(const uint8_t *buf, size_t len, uint64_t first_seq)
{
	struct trace_event ev;
	uint64_t seq = first_seq, good = rd.stats.bytes, bad = rd.stats.bad_bytes;
	int rc, fatal = 0;

	while ((rc = trace_reader_next(&rd, &ev)) != 0) {
		assert_int_equal(ev.seq, seq);
		assert_true(ev.offset < len);
		if (rc < 0 && !trace_read_error_is_skippable(rc)) {
			fatal++;
			continue;
		}
		assert_true(ev.offset + ev.size <= len);
		assert_true(ev.size >= 8 && (ev.size & 7) == 0 && ev.size <= TV_REC_MAX_SIZE);
		if (rc == 1 && (ev.type == TV_REC_CONFIG || ev.type == TV_REC_LOG)) {
			assert_true((const uint8_t *)ev.u.text.text >= buf + ev.offset + 16);
			assert_true((const uint8_t *)ev.u.text.text + ev.u.text.len <= buf + ev.offset + ev.size);
		}
		if (rc == 1 && ev.type == TV_REC_IMAGE)
			assert_true((const uint8_t *)ev.u.image.name + ev.u.image.name_len <= buf + ev.offset + ev.size);
		if (rc == 1 && ev.type == TV_REC_MARKER)
			assert_true((const uint8_t *)ev.u.marker.label + ev.u.marker.label_len <= buf + ev.offset + ev.size);
		seq++;
	}
	assert_true(fatal <= 1);
	assert_int_equal(rd.stats.bytes - good + rd.stats.bad_bytes - bad, len);
}

static void test_random_bytes(void **state)
{
	uint64_t total = 0;

	(void)state;
	rng_state = 0x853c49e6748fea9bull;
	trace_reader_init(&rd);
	for (int i = 0; i < 3000; i++) {
		size_t len = (size_t)(rnd() % 2048);
		uint8_t *buf = malloc(len ? len : 1);

		assert_non_null(buf);
		for (size_t j = 0; j < len; j++)
			buf[j] = (uint8_t)rnd();
		/* Half the time make headers plausible so decoding goes deeper. */
		if (i & 1) {
			for (size_t j = 0; j + 8 <= len; j += 8 + 8 * (rnd() % 4)) {
				buf[j] = (uint8_t)(rnd() % (TV_REC_TYPE_MAX + 1));
				buf[j + 2] = (uint8_t)(8 * (1 + rnd() % 5));
				buf[j + 3] = 0;
				if (rnd() % 2)
					memset(buf + j + 4, 0, 4);
			}
		}
		trace_reader_feed(&rd, buf, len, rnd() % 1000, rnd() % 2);
		drain_checked(buf, len, rd.next_seq);
		total += len;
		free(buf);
	}
	assert_all_bytes_accounted(total);
	assert_true(rd.stats.records > 0);
	assert_true(rd.stats.bad_records > 0);
}

/* A valid stream of every kind of record, from the writer. */
static size_t valid_stream(uint8_t *out, size_t cap)
{
	static uint64_t mem[(128 + 16384) / 8];
	struct tv_trace_ring *r = (struct tv_trace_ring *)mem;
	struct trace_cursor c;
	uint64_t to = 0x1000;
	size_t len;

	assert_int_equal(trace_ring_init(r, sizeof(mem), 0, 0, TV_SOURCE_MTF, TV_OVERFLOW_OVERWRITE, 0, 0), 0);
	for (int i = 0; i < 300; i++) {
		uint64_t from = to + rnd() % 32;

		to = rnd() % 4 ? from + 0x100 : rnd();
		switch (rnd() % 12) {
		case 0: trace_append_cr3(r, rnd(), rnd(), rnd()); break;
		case 1: trace_append_log(r, rnd(), 2, "some log line", rnd() % 14); break;
		case 2: trace_append_image(r, rnd(), TV_IMG_OTHER, rnd(), rnd(), "a.efi", 5); break;
		case 3: trace_append_marker(r, rnd(), rnd(), "mark", rnd() % 5); break;
		case 4: trace_append_lbr(r, from, to, TV_BR_JCC, 0, rnd()); break;
		default: trace_append_branch(r, from, to, TV_BR_JMP, 0, 0); break;
		}
	}
	assert_int_equal(trace_ring_cursor_tail(r, &c), 0);
	assert_int_equal(trace_ring_peek(r, &c, out, cap, &len), 0);
	return len;
}

static void test_mutated_streams(void **state)
{
	static uint8_t clean[16384];
	size_t n;

	(void)state;
	rng_state = 0xda942042e4dd58b5ull;
	n = valid_stream(clean, sizeof(clean));
	assert_true(n > 4000);
	/* the clean stream decodes without a single complaint */
	trace_reader_init(&rd);
	trace_reader_feed(&rd, clean, n, 0, false);
	drain_checked(clean, n, 0);
	assert_int_equal(rd.stats.bad_records, 0);

	for (int i = 0; i < 2000; i++) {
		size_t len = n - (rnd() % 3 == 0 ? (size_t)(rnd() % n) : 0);  /* sometimes cut */
		uint8_t *buf = malloc(len ? len : 1);
		int flips = 1 + (int)(rnd() % 8);

		assert_non_null(buf);
		memcpy(buf, clean, len);
		for (int f = 0; f < flips && len; f++)
			buf[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
		trace_reader_init(&rd);
		trace_reader_feed(&rd, buf, len, 7, false);
		drain_checked(buf, len, 7);
		free(buf);
	}
}

/* --- writer -> reader round trips -------------------------------------------------------- */

struct wrec {
	uint8_t type;            /* TV_REC_BRANCH (either form) or TV_REC_CR3 or TV_REC_LOST */
	uint8_t kind;
	uint32_t flags;
	uint64_t from, to, tsc;  /* CR3: tsc, from = cr3; LOST: from = records */
};

#define MAX_W 60000
static struct wrec written[MAX_W];
static size_t nwritten;

/* A random branch: mostly short forward blocks, some backwards, far or flagged. */
static struct wrec random_branch(uint64_t prev_to)
{
	struct wrec w = { .type = TV_REC_BRANCH };

	switch (rnd() % 10) {
	case 0: w.from = rnd(); break;
	case 1: w.from = prev_to - 1 - rnd() % 100; break;
	case 2: w.from = prev_to + 0x100000000ull + rnd() % 1000; break;
	case 3: w.from = prev_to + 0xffffffffull; break;
	default: w.from = prev_to + rnd() % 200; break;
	}
	w.to = rnd() % 4 ? w.from + 2 + rnd() % 4000 : rnd();
	w.kind = (uint8_t)(rnd() % TV_BR_KIND_MAX);
	w.flags = rnd() % 10 == 0 ? (uint32_t)(rnd() % 16) : 0;
	w.tsc = (w.flags & TV_BRF_TSC) ? rnd() : 0;
	return w;
}

static int write_rec(struct tv_trace_ring *r, const struct wrec *w)
{
	if (w->type == TV_REC_CR3)
		return trace_append_cr3(r, w->tsc, w->from, w->to);
	return trace_append_branch(r, w->from, w->to, (enum tv_branch_kind)w->kind, w->flags, w->tsc);
}

static void assert_event_is(const struct trace_event *ev, const struct wrec *w)
{
	switch (w->type) {
	case TV_REC_BRANCH:
		assert_true(ev->type == TV_REC_BRANCH || ev->type == TV_REC_BRANCH_COMPACT);
		assert_int_equal(ev->u.branch.from, w->from);
		assert_int_equal(ev->u.branch.to, w->to);
		assert_int_equal(ev->u.branch.kind, w->kind);
		assert_int_equal(ev->u.branch.flags, w->flags);
		assert_int_equal(ev->has_tsc, (w->flags & TV_BRF_TSC) != 0);
		if (ev->has_tsc)
			assert_int_equal(ev->tsc, w->tsc);
		break;
	case TV_REC_CR3:
		assert_int_equal(ev->type, TV_REC_CR3);
		assert_int_equal(ev->tsc, w->tsc);
		assert_int_equal(ev->u.cr3.cr3, w->from);
		assert_int_equal(ev->u.cr3.rip, w->to);
		break;
	case TV_REC_LOST:
		assert_int_equal(ev->type, TV_REC_LOST);
		assert_int_equal(ev->u.lost.records, w->from);
		break;
	default:
		fail();
	}
}

static uint64_t big_mem[(128 + 65536) / 8];
static uint8_t out_buf[65536];

static void test_roundtrip_overwrite(void **state)
{
	struct tv_trace_ring *r = (struct tv_trace_ring *)big_mem;
	struct trace_event ev;
	struct trace_cursor c;
	uint64_t prev_to = 0x400000, compact = 0;
	size_t len, n = 0;
	int rc;

	(void)state;
	rng_state = 0x6a09e667f3bcc909ull;
	assert_int_equal(trace_ring_init(r, sizeof(big_mem), 0, 0, TV_SOURCE_MTF,
					 TV_OVERFLOW_OVERWRITE, 0, 0), 0);
	for (nwritten = 0; nwritten < 50000; nwritten++) {
		written[nwritten] = random_branch(prev_to);
		assert_int_equal(write_rec(r, &written[nwritten]), 0);
		prev_to = written[nwritten].to;
	}
	assert_true(r->lost_records > 0);
	assert_int_equal(r->tail_seq, r->lost_records);

	/* The whole ring at once, as the exporter would copy it after the fact. */
	assert_int_equal(trace_ring_cursor_tail(r, &c), 0);
	assert_int_equal(trace_ring_peek(r, &c, out_buf, sizeof(out_buf), &len), 0);
	assert_int_equal(len, r->head - r->tail);
	trace_reader_init(&rd);
	trace_reader_feed(&rd, out_buf, len, r->tail_seq, false);
	while ((rc = trace_reader_next(&rd, &ev)) == 1) {
		assert_event_is(&ev, &written[ev.seq]);
		compact += ev.type == TV_REC_BRANCH_COMPACT;
		n++;
	}
	assert_int_equal(rc, 0);
	/* exactly the last n written, the rest counted as missing */
	assert_int_equal(n + r->lost_records, nwritten);
	assert_int_equal(rd.stats.missed, r->lost_records);
	assert_int_equal(rd.stats.bad_records, 0);
	assert_int_equal(rd.stats.lost, 0);
	assert_true(compact > n / 2);
	assert_all_bytes_accounted(len);
}

/*
 * STOP with a consumer that reads at random moments: every branch the
 * producer accepted arrives in order, each run of drops is announced by
 * one LOST record with its exact count right where it happened.
 */
static void test_roundtrip_stop_with_consumer(void **state)
{
	static uint64_t mem[(128 + 8192) / 8];
	struct tv_trace_ring *r = (struct tv_trace_ring *)mem;
	static struct wrec expect[MAX_W * 2];
	size_t nexpect = 0, got = 0;
	uint64_t prev_to = 0x400000, pending = 0, dropped = 0;
	struct trace_cursor c;
	struct trace_event ev;
	int rc;

	(void)state;
	rng_state = 0xbb67ae8584caa73bull;
	assert_int_equal(trace_ring_init(r, sizeof(mem), 0, 0, TV_SOURCE_MTF, TV_OVERFLOW_STOP, 0, 0), 0);
	assert_int_equal(trace_ring_cursor_tail(r, &c), 0);
	trace_reader_init(&rd);
	for (int i = 0; i < 50000 || c.pos != r->head; i++) {
		if (i < 50000) {
			struct wrec w = random_branch(prev_to);

			if (rnd() % 20 == 0) {
				w.type = TV_REC_CR3;
				w.tsc = rnd();
			}
			rc = write_rec(r, &w);
			if (rc == TRACE_ERR_FULL) {
				pending++;
				dropped++;
			} else {
				assert_int_equal(rc, 0);
				if (pending) {
					expect[nexpect++] = (struct wrec){ .type = TV_REC_LOST, .from = pending };
					pending = 0;
				}
				expect[nexpect++] = w;
			}
			if (w.type == TV_REC_BRANCH)
				prev_to = w.to;
		}
		/*
		 * The consumer runs now and then with a buffer of random size:
		 * often enough in some phases, too rarely in others (drops).
		 */
		if (rnd() % ((i / 4000) & 1 ? 500 : 40) == 0 || i >= 50000) {
			uint64_t first = c.seq;
			size_t len;

			rc = trace_ring_peek(r, &c, out_buf, TV_REC_MAX_SIZE + rnd() % 3000, &len);
			assert_int_equal(rc, 0);
			trace_reader_feed(&rd, out_buf, len, first, true);
			while ((rc = trace_reader_next(&rd, &ev)) == 1) {
				assert_true(got < nexpect);
				assert_event_is(&ev, &expect[got]);
				got++;
			}
			assert_int_equal(rc, 0);
			assert_int_equal(trace_ring_consume(r, &c), 0);
		}
	}
	assert_true(dropped > 0);
	assert_int_equal(got, nexpect);
	assert_int_equal(r->lost_records, dropped);
	assert_int_equal(rd.stats.lost + r->pending_lost, r->lost_records);
	assert_int_equal(r->pending_lost, pending);
	assert_int_equal(rd.stats.bad_records, 0);
	assert_int_equal(rd.stats.missed, 0);
}

/*
 * OVERWRITE with a live exporter that falls behind: after each resync the
 * reader is told the gap through first_seq; every record it decodes is the
 * one written with that sequence number, and decoded + missed = written.
 */
static void test_roundtrip_overwrite_live_exporter(void **state)
{
	static uint64_t mem[(128 + 8192) / 8];
	struct tv_trace_ring *r = (struct tv_trace_ring *)mem;
	uint64_t prev_to = 0x400000, missed = 0, decoded = 0, resyncs = 0;
	struct trace_cursor c;
	struct trace_event ev;
	int rc;

	(void)state;
	rng_state = 0x3c6ef372fe94f82bull;
	assert_int_equal(trace_ring_init(r, sizeof(mem), 0, 0, TV_SOURCE_MTF,
					 TV_OVERFLOW_OVERWRITE, 0, 0), 0);
	assert_int_equal(trace_ring_cursor_tail(r, &c), 0);
	trace_reader_init(&rd);
	for (nwritten = 0; nwritten < 50000 || c.pos != r->head; ) {
		if (nwritten < 50000) {
			struct wrec w = random_branch(prev_to);

			if (rnd() % 20 == 0) {
				w.type = TV_REC_CR3;
				w.tsc = rnd();
			} else {
				prev_to = w.to;
			}
			written[nwritten++] = w;
			assert_int_equal(write_rec(r, &w), 0);
		}
		if (rnd() % 300 == 0 || nwritten >= 50000) {
			uint64_t first, gap = trace_ring_resync(r, &c);
			size_t len;

			missed += gap;
			resyncs += gap != 0;
			first = c.seq;
			assert_int_equal(trace_ring_peek(r, &c, out_buf, TV_REC_MAX_SIZE + rnd() % 4000, &len), 0);
			trace_reader_feed(&rd, out_buf, len, first, gap == 0);
			while ((rc = trace_reader_next(&rd, &ev)) == 1) {
				assert_event_is(&ev, &written[ev.seq]);
				decoded++;
			}
			assert_int_equal(rc, 0);
		}
	}
	assert_true(resyncs > 0);
	assert_int_equal(rd.stats.missed, missed);
	assert_int_equal(decoded + missed, nwritten);
	assert_int_equal(rd.stats.bad_records, 0);
	assert_int_equal(r->tail_seq, r->lost_records);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_decode_every_type, setup),
		cmocka_unit_test_setup(test_compact_chain_and_sync_points, setup),
		cmocka_unit_test_setup(test_feed_continuity, setup),
		cmocka_unit_test_setup(test_fatal_errors_end_the_buffer, setup),
		cmocka_unit_test_setup(test_skippable_errors_go_on, setup),
		cmocka_unit_test_setup(test_names, setup),
		cmocka_unit_test_setup(test_random_bytes, setup),
		cmocka_unit_test_setup(test_mutated_streams, setup),
		cmocka_unit_test_setup(test_roundtrip_overwrite, setup),
		cmocka_unit_test_setup(test_roundtrip_stop_with_consumer, setup),
		cmocka_unit_test_setup(test_roundtrip_overwrite_live_exporter, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
