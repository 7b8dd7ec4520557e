/* SPDX-License-Identifier: MIT */
/*
 * test_trace_ring.c - the per-CPU trace record ring (vmm/trace/ring.c):
 * byte-exact records, wrap-around, compact/full selection, both overflow
 * policies with exact loss counts, and the consumer side.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/trace/format.h"
#include "vmm/trace/ring.h"

#define HDR  128u
#define DS   4096u
#define SYNC (DS >> TRACE_RING_SYNC_SHIFT)

/* Little-endian bytes of a 64-bit value, for hand-built expected records. */
#define Q(v) (uint8_t)((v) >> 0), (uint8_t)((v) >> 8), (uint8_t)((v) >> 16), \
	(uint8_t)((v) >> 24), (uint8_t)((v) >> 32), (uint8_t)((v) >> 40),    \
	(uint8_t)((v) >> 48), (uint8_t)((v) >> 56)

#define A1 0x1122334455667788ull
#define A2 0x99aabbccddeeff00ull
#define A3 0x0123456789abcdefull

/*
 * The ring block (header + 4096-byte data area + 64 bytes the ring must
 * not use) between two guard zones.  uint64_t: the block is 8-aligned.
 */
#define GUARD 16u
#define EXTRA 64u
#define BLOCK_BYTES (HDR + DS + EXTRA)
static uint64_t arena[(GUARD + BLOCK_BYTES + GUARD) / 8];
#define BLOCK ((struct tv_trace_ring *)((uint8_t *)arena + GUARD))

static struct tv_trace_ring *r;

static int setup(void **state)
{
	(void)state;
	memset(arena, 0xee, sizeof(arena));
	r = BLOCK;
	return 0;
}

/* Guards and the unused end of the block are untouched. */
static void check_guards(void)
{
	const uint8_t *a = (const uint8_t *)arena;

	for (size_t i = 0; i < GUARD; i++) {
		assert_int_equal(a[i], 0xee);
		assert_int_equal(a[sizeof(arena) - 1 - i], 0xee);
	}
	for (size_t i = 0; i < EXTRA; i++)
		assert_int_equal(a[GUARD + HDR + DS + i], 0xee);
}

static void init_ring(enum tv_overflow policy)
{
	assert_int_equal(trace_ring_init(r, BLOCK_BYTES, 2, 5, TV_SOURCE_MTF, policy, 1000, 77), 0);
}

/* Ring bytes at running position pos, wrap undone. */
static void ring_bytes(uint64_t pos, void *out, size_t n)
{
	const uint8_t *d = trace_ring_data(r);

	for (size_t i = 0; i < n; i++)
		((uint8_t *)out)[i] = d[(pos + i) & (r->data_size - 1)];
}

static void assert_ring_bytes(uint64_t pos, const void *want, size_t n)
{
	uint8_t got[TV_REC_MAX_SIZE];

	assert_true(n <= sizeof(got));
	ring_bytes(pos, got, n);
	assert_memory_equal(got, want, n);
}

static struct tv_rec rec_at(uint64_t pos)
{
	struct tv_rec h;

	ring_bytes(pos, &h, sizeof(h));
	return h;
}

/*
 * Walk tail..head: every size sound, and the count of records equals
 * next_seq - tail_seq (tail_seq names the record at tail).
 */
static void check_ring(void)
{
	uint64_t pos = r->tail, n = 0;

	assert_true(r->head >= r->tail);
	assert_true(r->head - r->tail <= r->data_size);
	assert_true(r->tail_seq <= r->next_seq);
	while (pos < r->head) {
		struct tv_rec h = rec_at(pos);

		assert_true(h.size >= 8 && (h.size & 7) == 0 && h.size <= TV_REC_MAX_SIZE);
		assert_true(h.type > TV_REC_PAD && h.type < TV_REC_TYPE_MAX);
		pos += h.size;
		n++;
	}
	assert_true(pos == r->head);
	assert_int_equal(n, r->next_seq - r->tail_seq);
	if (trace_ring_policy(r) == TV_OVERFLOW_OVERWRITE && r->tail != r->head)
		assert_int_not_equal(rec_at(r->tail).type, TV_REC_BRANCH_COMPACT);
	check_guards();
}

/* STOP: release everything written so far. */
static void consume_all(void)
{
	struct trace_cursor c = { r->head, r->next_seq };

	assert_int_equal(trace_ring_consume(r, &c), 0);
	assert_int_equal(r->tail, r->head);
	assert_int_equal(r->tail_seq, r->next_seq);
}

/*
 * STOP: move head to data offset off (mod data_size) with CONFIG records
 * (16..1024 bytes each) that are released at once: the ring is empty
 * afterwards.  Always moves by at least 16 bytes.
 */
static void advance_to(uint64_t off)
{
	uint64_t gap = (off - r->head) & (DS - 1);
	static const char text[TRACE_TEXT_MAX];

	if (gap < 16)
		gap += DS;
	while (gap) {
		uint64_t size = gap > TV_REC_MAX_SIZE ? TV_REC_MAX_SIZE : gap;

		if (gap - size == 8)
			size -= 8;   /* leave 16, never a gap of 8 */
		assert_int_equal(trace_append_config(r, 1, text, size - 16), 0);
		consume_all();
		gap -= size;
	}
	assert_int_equal(r->head & (DS - 1), off & (DS - 1));
}

/* Fill with n 32-byte PT_SYNC records (value i in pt_offset). */
static void put_pt_syncs(unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(trace_append_pt_sync(r, 100 + i, i, 0), 0);
}

/* --- init ------------------------------------------------------------------ */

static void test_init_header(void **state)
{
	(void)state;
	init_ring(TV_OVERFLOW_OVERWRITE);
	assert_int_equal(r->magic, TV_TRACE_MAGIC);
	assert_int_equal(r->version, TV_TRACE_VERSION);
	assert_int_equal(r->hdr_size, 128);
	assert_int_equal(r->cpu, 2);
	assert_int_equal(r->apic_id, 5);
	assert_int_equal(r->source, TV_SOURCE_MTF);
	assert_int_equal(r->flags, TV_OVERFLOW_OVERWRITE);
	assert_int_equal(r->data_size, DS);  /* 4096 + 64 available: 4096 used */
	assert_int_equal(r->head, 0);
	assert_int_equal(r->tail, 0);
	assert_int_equal(r->tail_seq, 0);
	assert_int_equal(r->next_seq, 0);
	assert_int_equal(r->lost_records, 0);
	assert_int_equal(r->lost_bytes, 0);
	assert_int_equal(r->tsc_hz, 1000);
	assert_int_equal(r->start_tsc, 77);
	assert_int_equal(r->chain_pos, TV_CHAIN_NONE);
	assert_int_equal(r->pending_lost, 0);
	assert_int_equal(r->last_tsc, 77);
	assert_ptr_equal(trace_ring_data(r), (uint8_t *)r + 128);
	/* The data area is not cleared (it may be large); the rest untouched. */
	assert_int_equal(trace_ring_data(r)[0], 0xee);
	assert_int_equal(trace_ring_validate(r, BLOCK_BYTES), 0);
	check_guards();
}

static void test_init_data_size_is_largest_power_of_two(void **state)
{
	static uint64_t big[(HDR + 3 * 8192) / 8];
	struct tv_trace_ring *b = (struct tv_trace_ring *)big;

	(void)state;
	assert_int_equal(trace_ring_init(b, HDR + 4096, 0, 0, TV_SOURCE_LBR, TV_OVERFLOW_STOP, 0, 0), 0);
	assert_int_equal(b->data_size, 4096);
	assert_int_equal(trace_ring_init(b, HDR + 8191, 0, 0, TV_SOURCE_LBR, TV_OVERFLOW_STOP, 0, 0), 0);
	assert_int_equal(b->data_size, 4096);
	assert_int_equal(trace_ring_init(b, HDR + 8192, 0, 0, TV_SOURCE_LBR, TV_OVERFLOW_STOP, 0, 0), 0);
	assert_int_equal(b->data_size, 8192);
	assert_int_equal(trace_ring_init(b, sizeof(big), 0, 0, TV_SOURCE_PT, TV_OVERFLOW_STOP, 0, 0), 0);
	assert_int_equal(b->data_size, 16384);
}

static void test_init_rejects(void **state)
{
	(void)state;
	assert_int_equal(trace_ring_init(NULL, BLOCK_BYTES, 0, 0, TV_SOURCE_MTF, TV_OVERFLOW_STOP, 0, 0),
			 TRACE_ERR_INVAL);
	assert_int_equal(trace_ring_init((struct tv_trace_ring *)((uint8_t *)r + 4), BLOCK_BYTES - 8,
					 0, 0, TV_SOURCE_MTF, TV_OVERFLOW_STOP, 0, 0), TRACE_ERR_INVAL);
	assert_int_equal(trace_ring_init(r, BLOCK_BYTES, 0, 0, (enum tv_source)(TV_SOURCE_MAX + 1), TV_OVERFLOW_STOP, 0, 0),
			 TRACE_ERR_INVAL);
	assert_int_equal(trace_ring_init(r, BLOCK_BYTES, 0, 0, TV_SOURCE_MTF, (enum tv_overflow)2, 0, 0),
			 TRACE_ERR_INVAL);
	assert_int_equal(trace_ring_init(r, HDR + 4095, 0, 0, TV_SOURCE_MTF, TV_OVERFLOW_STOP, 0, 0),
			 TRACE_ERR_TOO_SMALL);
	assert_int_equal(trace_ring_init(r, 0, 0, 0, TV_SOURCE_MTF, TV_OVERFLOW_STOP, 0, 0),
			 TRACE_ERR_TOO_SMALL);
	/* Nothing was written by any of them. */
	assert_int_equal(((uint8_t *)r)[0], 0xee);
	check_guards();
}

/* --- record layout ------------------------------------------------------------ */

static void test_layout_branch_full(void **state)
{
	static const uint8_t plain[] = {
		0x01, TV_BR_CALL, 24, 0, 0, 0, 0, 0, Q(A1), Q(A2),
	};
	static const uint8_t with_tsc[] = {
		0x01, TV_BR_RET, 32, 0, 0x03, 0, 0, 0, Q(A2), Q(A3), Q(0x4000000000000001ull),
	};

	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	assert_int_equal(trace_append_branch(r, A1, A2, TV_BR_CALL, 0, 0xdead), 0);
	/* from < previous to: full; flags TSC|MISPRED */
	assert_int_equal(trace_append_branch(r, A2, A3, TV_BR_RET, TV_BRF_TSC | TV_BRF_MISPRED,
					     0x4000000000000001ull), 0);
	assert_int_equal(r->head, 56);
	assert_int_equal(r->next_seq, 2);
	assert_ring_bytes(0, plain, sizeof(plain));
	assert_ring_bytes(24, with_tsc, sizeof(with_tsc));
	assert_int_equal(r->last_tsc, 0x4000000000000001ull);  /* tsc of the plain one ignored */
	check_ring();
}

static void test_layout_compact(void **state)
{
	static const uint8_t want[] = {
		0x01, TV_BR_JMP, 24, 0, 0, 0, 0, 0, Q(0x1000ull), Q(0x2000ull),
		0x02, TV_BR_JCC, 16, 0, 0x34, 0x12, 0, 0, Q(0x7000ull),
		0x02, TV_BR_CALL_IND, 16, 0, 0xff, 0xff, 0xff, 0xff, Q(A1),
	};

	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	assert_int_equal(trace_append_branch(r, 0x1000, 0x2000, TV_BR_JMP, 0, 0), 0);
	assert_int_equal(trace_append_branch(r, 0x2000 + 0x1234, 0x7000, TV_BR_JCC, 0, 0), 0);
	/* base is the compact record's `to`; the largest offset that fits */
	assert_int_equal(trace_append_branch(r, 0x7000 + 0xffffffffull, A1, TV_BR_CALL_IND, 0, 0), 0);
	assert_int_equal(r->head, sizeof(want));
	assert_ring_bytes(0, want, sizeof(want));
	assert_int_equal(r->chain_pos, 0);
	assert_int_equal(r->chain_to, A1);
	check_ring();
}

static void test_layout_fixed_records(void **state)
{
	static const uint8_t want[] = {
		/* LBR: kind, flags in aux, from, to, lbr_info */
		0x03, TV_BR_JCC, 32, 0, 0x06, 0, 0, 0, Q(A1), Q(A2), Q(0x8000000000000123ull),
		/* CR3 */
		0x04, 0, 32, 0, 0, 0, 0, 0, Q(0x11ull), Q(0x1234000ull), Q(0xfffff80000001000ull),
		/* START (address), STOP (full) */
		0x05, 0, 24, 0, 0x02, 0, 0, 0, Q(0x12ull), Q(0x401000ull),
		0x06, 0, 24, 0, 0x06, 0, 0, 0, Q(0x13ull), Q(0x401005ull),
		/* TIME */
		0x08, 0, 32, 0, 0, 0, 0, 0, Q(0x14ull), Q(2400000000ull), Q(1700000000000000000ull),
		/* PT_SYNC */
		0x0d, 0, 32, 0, 0, 0, 0, 0, Q(0x15ull), Q(0x10000ull), Q(0x80ull),
	};

	(void)state;
	init_ring(TV_OVERFLOW_OVERWRITE);
	assert_int_equal(trace_append_lbr(r, A1, A2, TV_BR_JCC, TV_BRF_MISPRED | TV_BRF_IN_TSX,
					  0x8000000000000123ull), 0);
	assert_int_equal(trace_append_cr3(r, 0x11, 0x1234000, 0xfffff80000001000ull), 0);
	assert_int_equal(trace_append_start(r, 0x12, TV_TRIG_ADDRESS, 0x401000), 0);
	assert_int_equal(trace_append_stop(r, 0x13, TV_TRIG_FULL, 0x401005), 0);
	assert_int_equal(trace_append_time(r, 0x14, 2400000000ull, 1700000000000000000ull), 0);
	assert_int_equal(trace_append_pt_sync(r, 0x15, 0x10000, 0x80), 0);
	assert_int_equal(r->head, sizeof(want));
	assert_int_equal(r->next_seq, 6);
	assert_ring_bytes(0, want, sizeof(want));
	assert_int_equal(r->last_tsc, 0x15);
	check_ring();
}

static void test_layout_text_records(void **state)
{
	static const uint8_t want[] = {
		/* CONFIG "source=mtf" (10 bytes), padded with 6 zeros */
		0x07, 0, 32, 0, 10, 0, 0, 0, Q(0x21ull),
		's', 'o', 'u', 'r', 'c', 'e', '=', 'm', 't', 'f', 0, 0, 0, 0, 0, 0,
		/* LOG level 1, "hi" */
		0x09, 1, 24, 0, 2, 0, 0, 0, Q(0x22ull), 'h', 'i', 0, 0, 0, 0, 0, 0,
		/* LOG, empty */
		0x09, 3, 16, 0, 0, 0, 0, 0, Q(0x23ull),
		/* IMAGE kernel "vmlinux" */
		0x0a, TV_IMG_KERNEL, 40, 0, 7, 0, 0, 0, Q(0x24ull), Q(0xffffffff81000000ull),
		Q(0x2000000ull), 'v', 'm', 'l', 'i', 'n', 'u', 'x', 0,
		/* MARKER with an 8-byte label: no padding */
		0x0c, 0, 32, 0, 8, 0, 0, 0, Q(0x25ull), Q(A3), 'c', 'h', 'e', 'c', 'k', 'p', 't', '1',
		/* MARKER without a label */
		0x0c, 0, 24, 0, 0, 0, 0, 0, Q(0x26ull), Q(7ull),
	};

	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	/* The data area holds 0xee: padding must be written as zeros. */
	assert_int_equal(trace_append_config(r, 0x21, "source=mtf", 10), 0);
	assert_int_equal(trace_append_log(r, 0x22, 1, "hi", 2), 0);
	assert_int_equal(trace_append_log(r, 0x23, 3, NULL, 0), 0);
	assert_int_equal(trace_append_image(r, 0x24, TV_IMG_KERNEL, 0xffffffff81000000ull, 0x2000000,
					    "vmlinux", 7), 0);
	assert_int_equal(trace_append_marker(r, 0x25, A3, "checkpt1", 8), 0);
	assert_int_equal(trace_append_marker(r, 0x26, 7, NULL, 0), 0);
	assert_int_equal(r->head, sizeof(want));
	assert_ring_bytes(0, want, sizeof(want));
	check_ring();
}

static void test_text_cut_to_max(void **state)
{
	static char big[2000];
	uint8_t got[TV_REC_MAX_SIZE];
	struct tv_rec h;

	(void)state;
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	init_ring(TV_OVERFLOW_STOP);

	assert_int_equal(trace_append_config(r, 1, big, sizeof(big)), 0);
	h = rec_at(0);
	assert_int_equal(h.size, TV_REC_MAX_SIZE);
	assert_int_equal(h.aux, TRACE_TEXT_MAX);
	assert_int_equal(TRACE_TEXT_MAX, 1008);
	ring_bytes(16, got, TRACE_TEXT_MAX);
	assert_memory_equal(got, big, TRACE_TEXT_MAX);

	assert_int_equal(trace_append_log(r, 2, 0, big, TRACE_TEXT_MAX + 1), 0);
	assert_int_equal(rec_at(1024).size, TV_REC_MAX_SIZE);
	assert_int_equal(rec_at(1024).aux, TRACE_TEXT_MAX);

	/* IMAGE: 32-byte fixed part, name up to 992 */
	assert_int_equal(trace_append_image(r, 3, TV_IMG_FIRMWARE, 0, 0, big, sizeof(big)), 0);
	assert_int_equal(rec_at(2048).size, TV_REC_MAX_SIZE);
	assert_int_equal(rec_at(2048).aux, 992);
	ring_bytes(2048 + 32, got, 992);
	assert_memory_equal(got, big, 992);

	/* MARKER: 24-byte fixed part, label up to 1000 (already a multiple of 8) */
	consume_all();
	assert_int_equal(trace_append_marker(r, 4, 1, big, 1001), 0);
	assert_int_equal(rec_at(3072).size, TV_REC_MAX_SIZE);
	assert_int_equal(rec_at(3072).aux, 1000);
	ring_bytes(3072 + 24, got, 1000);
	assert_memory_equal(got, big, 1000);

	/* 1001 bytes of text: 1017 rounds up to 1024 with 7 zero bytes */
	consume_all();
	assert_int_equal(trace_append_config(r, 5, big, 1001), 0);
	h = rec_at(4096);
	assert_int_equal(h.size, 1024);
	assert_int_equal(h.aux, 1001);
	ring_bytes(4096 + 16 + 1001, got, 7);
	for (int i = 0; i < 7; i++)
		assert_int_equal(got[i], 0);
	check_ring();
}

static void test_invalid_arguments_write_nothing(void **state)
{
	struct tv_trace_ring fake;

	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	assert_int_equal(trace_append_branch(NULL, 1, 2, TV_BR_JMP, 0, 0), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_branch(r, 1, 2, TV_BR_KIND_MAX, 0, 0), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_branch(r, 1, 2, TV_BR_JMP, 1u << 4, 0), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_lbr(r, 1, 2, (enum tv_branch_kind)200, 0, 0), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_lbr(r, 1, 2, TV_BR_JMP, 0x80000000u, 0), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_start(r, 1, TV_TRIG_FULL, 0), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_start(r, 1, TV_TRIG_LIMIT, 0), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_stop(r, 1, (enum tv_trigger)(TV_TRIG_MAX + 1), 0), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_log(r, 1, 4, "x", 1), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_log(r, 1, 0, NULL, 1), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_config(r, 1, NULL, 3), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_image(r, 1, (enum tv_image_kind)4, 0, 0, "x", 1), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_image(r, 1, TV_IMG_OTHER, 0, 0, NULL, 1), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_marker(r, 1, 0, NULL, 2), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_cr3(NULL, 1, 0, 0), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_time(NULL, 1, 0, 0), TRACE_ERR_INVAL);
	assert_int_equal(trace_append_pt_sync(NULL, 1, 0, 0), TRACE_ERR_INVAL);
	/* Not a ring: no magic */
	memset(&fake, 0, sizeof(fake));
	assert_int_equal(trace_append_cr3(&fake, 1, 0, 0), TRACE_ERR_INVAL);
	assert_int_equal(r->head, 0);
	assert_int_equal(r->next_seq, 0);
	assert_int_equal(r->last_tsc, 77);
	/* The last valid triggers are accepted. */
	assert_int_equal(trace_append_start(r, 1, TV_TRIG_RECEIVER, 0), 0);
	assert_int_equal(trace_append_stop(r, 1, TV_TRIG_LIMIT, 0), 0);
	check_ring();
}

/* --- compact / full selection ----------------------------------------------------- */

static uint8_t type_of_last(uint64_t before)
{
	return rec_at(before).type;
}

/* Append a flag-less branch and return the type it was written as. */
static uint8_t branch_type(uint64_t from, uint64_t to)
{
	uint64_t at = r->head;

	assert_int_equal(trace_append_branch(r, from, to, TV_BR_JCC, 0, 0), 0);
	return type_of_last(at);
}

static void test_compact_rules(void **state)
{
	uint64_t at;

	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	/* after init: full, even with offset 0 */
	assert_int_equal(branch_type(0x100, 0x200), TV_REC_BRANCH);
	/* offset 0 */
	assert_int_equal(branch_type(0x200, 0x300), TV_REC_BRANCH_COMPACT);
	/* backwards: full */
	assert_int_equal(branch_type(0x2ff, 0x400), TV_REC_BRANCH);
	/* 2^32 - 1 fits, 2^32 does not */
	assert_int_equal(branch_type(0x400 + 0xffffffffull, 0x500), TV_REC_BRANCH_COMPACT);
	assert_int_equal(rec_at(r->head - 16).aux, 0xffffffffu);
	assert_int_equal(branch_type(0x500 + 0x100000000ull, 0x600), TV_REC_BRANCH);
	/* offset near the top of the address space, wrapping: full */
	assert_int_equal(branch_type(0x5ff, 0xfffffffffffffff0ull), TV_REC_BRANCH);
	assert_int_equal(branch_type(0x10, 0x20), TV_REC_BRANCH);
	/* flags force full (the compact record has no room for them) */
	at = r->head;
	assert_int_equal(trace_append_branch(r, 0x20, 0x30, TV_BR_JCC, TV_BRF_MISPRED, 0), 0);
	assert_int_equal(type_of_last(at), TV_REC_BRANCH);
	at = r->head;
	assert_int_equal(trace_append_branch(r, 0x30, 0x40, TV_BR_JCC, TV_BRF_TSC, 9), 0);
	assert_int_equal(rec_at(at).size, 32);
	assert_int_equal(branch_type(0x44, 0x50), TV_REC_BRANCH_COMPACT);
	/* any non-branch record closes the chain */
	assert_int_equal(trace_append_cr3(r, 1, 0x1000, 0), 0);
	assert_int_equal(branch_type(0x50, 0x60), TV_REC_BRANCH);
	assert_int_equal(branch_type(0x60, 0x70), TV_REC_BRANCH_COMPACT);
	assert_int_equal(trace_append_start(r, 2, TV_TRIG_HYPERCALL, 0), 0);
	assert_int_equal(branch_type(0x70, 0x80), TV_REC_BRANCH);
	/* an LBR entry is not part of the chain */
	assert_int_equal(trace_append_lbr(r, 0x80, 0x90, TV_BR_JCC, 0, 0), 0);
	assert_int_equal(branch_type(0x90, 0xa0), TV_REC_BRANCH);
	check_ring();
}

static void test_full_branch_every_sync_interval(void **state)
{
	uint64_t to = 0x1000;

	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	/* 24 + 15 * 16 = 264: compact while head - chain_pos < 256 */
	assert_int_equal(branch_type(to, to + 8), TV_REC_BRANCH);
	to += 8;
	for (int i = 0; i < 15; i++, to += 8)
		assert_int_equal(branch_type(to + 2, to + 8), TV_REC_BRANCH_COMPACT);
	assert_int_equal(r->head, 264);
	assert_true(r->head - r->chain_pos >= SYNC);
	assert_int_equal(branch_type(to + 2, to + 8), TV_REC_BRANCH);
	assert_int_equal(r->chain_pos, 264);
	to += 8;
	assert_int_equal(branch_type(to + 2, to + 8), TV_REC_BRANCH_COMPACT);
	check_ring();
}

/* --- wrap-around --------------------------------------------------------------------- */

static void test_wrap_fixed_record_at_every_split(void **state)
{
	static const uint8_t want[] = {
		0x01, TV_BR_SYSCALL, 32, 0, 0x01, 0, 0, 0, Q(A1), Q(A2), Q(A3),
	};
	const uint8_t *d;

	(void)state;
	for (uint64_t k = 8; k <= 32; k += 8) {
		uint8_t lin[64];
		struct trace_cursor c;
		size_t len;

		setup(NULL);
		init_ring(TV_OVERFLOW_STOP);
		advance_to(DS - k);
		d = trace_ring_data(r);
		assert_int_equal(trace_append_branch(r, A1, A2, TV_BR_SYSCALL, TV_BRF_TSC, A3), 0);
		/* the first k bytes at the end of the area, the rest at its start */
		assert_memory_equal(d + DS - k, want, k);
		if (k < sizeof(want))
			assert_memory_equal(d, want + k, sizeof(want) - k);
		/* the consumer gets it linear */
		assert_int_equal(trace_ring_cursor_tail(r, &c), 0);
		assert_int_equal(trace_ring_peek(r, &c, lin, sizeof(lin), &len), 0);
		assert_int_equal(len, sizeof(want));
		assert_memory_equal(lin, want, sizeof(want));
		check_ring();
	}
}

static void test_wrap_text(void **state)
{
	static const uint8_t text_rec[] = {
		0x09, 2, 40, 0, 20, 0, 0, 0, Q(0x31ull),
		'0', '1', '2', '3', '4', '5', '6', '7', '8', '9',
		'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 0, 0, 0, 0,
	};
	const uint8_t *d;

	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	/* text record header at the last 8 bytes + tsc at 0: text wraps completely */
	advance_to(DS - 8);
	d = trace_ring_data(r);
	assert_int_equal(trace_append_log(r, 0x31, 2, "0123456789abcdefghij", 20), 0);
	assert_memory_equal(d + DS - 8, text_rec, 8);
	assert_memory_equal(d, text_rec + 8, sizeof(text_rec) - 8);
	/* the text itself split in the middle */
	advance_to(DS - 24);
	assert_int_equal(trace_append_log(r, 0x31, 2, "0123456789abcdefghij", 20), 0);
	assert_memory_equal(d + DS - 24, text_rec, 24);
	assert_memory_equal(d, text_rec + 24, sizeof(text_rec) - 24);
	check_ring();
}

/* --- STOP policy ------------------------------------------------------------------------ */

static void test_stop_drops_new_and_reports_lost(void **state)
{
	static const uint8_t lost_rec[] = {
		0x0b, 0, 24, 0, 0, 0, 0, 0, Q(0x5555ull), Q(3ull),
	};
	struct trace_cursor c;

	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	put_pt_syncs(128);                       /* exactly full */
	assert_int_equal(r->head, DS);
	assert_int_equal(r->lost_records, 0);

	assert_int_equal(trace_append_pt_sync(r, 1, 0, 0), TRACE_ERR_FULL);
	assert_int_equal(r->lost_records, 1);
	assert_int_equal(r->lost_bytes, 32);
	assert_int_equal(r->pending_lost, 1);
	/* a branch after a PT_SYNC is full: 24 bytes */
	assert_int_equal(trace_append_branch(r, 0x10, 0x20, TV_BR_JMP, 0, 0), TRACE_ERR_FULL);
	assert_int_equal(r->lost_records, 2);
	assert_int_equal(r->lost_bytes, 56);
	assert_int_equal(r->head, DS);
	assert_int_equal(r->next_seq, 128);
	assert_int_equal(r->tail_seq, 0);

	/* 32 bytes released: a CR3 fits, but not with the LOST record owed */
	c.pos = 32;
	c.seq = 1;
	assert_int_equal(trace_ring_consume(r, &c), 0);
	assert_int_equal(r->tail, 32);
	assert_int_equal(r->tail_seq, 1);
	assert_int_equal(trace_append_cr3(r, 0x5555, 1, 2), TRACE_ERR_FULL);
	assert_int_equal(r->lost_records, 3);
	assert_int_equal(r->lost_bytes, 88);
	assert_int_equal(r->pending_lost, 3);
	assert_int_equal(r->head, DS);

	/* 64 released: LOST (24, tsc = newest given) then a full branch (24) */
	c.pos = 64;
	c.seq = 2;
	assert_int_equal(trace_ring_consume(r, &c), 0);
	assert_int_equal(trace_append_branch(r, 0x20, 0x30, TV_BR_JMP, 0, 0), 0);
	assert_int_equal(r->next_seq, 130);
	assert_int_equal(r->head, DS + 48);
	assert_ring_bytes(DS, lost_rec, sizeof(lost_rec));
	assert_int_equal(rec_at(DS + 24).type, TV_REC_BRANCH);
	assert_int_equal(r->pending_lost, 0);
	assert_int_equal(r->lost_records, 3);    /* LOST itself is no loss */
	assert_int_equal(r->lost_bytes, 88);
	/* the chain opened by that branch goes on */
	assert_int_equal(branch_type(0x34, 0x40), TV_REC_BRANCH_COMPACT);
	assert_int_equal(r->head - r->tail, DS);
	check_ring();
}

static void test_stop_drop_breaks_chain(void **state)
{
	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	put_pt_syncs(127);                       /* 4064 */
	assert_int_equal(branch_type(0x100, 0x200), TV_REC_BRANCH);   /* 4088 */
	/* would be compact (16): dropped and counted at 16 bytes */
	assert_int_equal(trace_append_branch(r, 0x210, 0x300, TV_BR_JCC, 0, 0), TRACE_ERR_FULL);
	assert_int_equal(r->lost_bytes, 16);
	assert_int_equal(r->chain_pos, TV_CHAIN_NONE);
	/* later drops are full branches: 24, or 32 with a TSC */
	assert_int_equal(trace_append_branch(r, 0x310, 0x400, TV_BR_JCC, 0, 0), TRACE_ERR_FULL);
	assert_int_equal(trace_append_branch(r, 0x410, 0x500, TV_BR_JCC, TV_BRF_TSC, 0x77), TRACE_ERR_FULL);
	assert_int_equal(r->lost_records, 3);
	assert_int_equal(r->lost_bytes, 16 + 24 + 32);
	assert_int_equal(r->last_tsc, 0x77);
	consume_all();
	/* would have been compact from 0x500: LOST(3) then a full branch */
	assert_int_equal(branch_type(0x510, 0x600), TV_REC_LOST);
	assert_int_equal(rec_at(4088 + 24).type, TV_REC_BRANCH);
	assert_int_equal(r->next_seq, 130);
	assert_int_equal(branch_type(0x610, 0x700), TV_REC_BRANCH_COMPACT);
	check_ring();
}

static void test_stop_lost_written_before_stop_record(void **state)
{
	uint64_t records;

	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	put_pt_syncs(128);
	for (int i = 0; i < 5; i++)
		assert_int_equal(trace_append_branch(r, 1, 2, TV_BR_JMP, 0, 0), TRACE_ERR_FULL);
	consume_all();
	assert_int_equal(trace_append_stop(r, 0x99, TV_TRIG_FULL, 0x1234), 0);
	assert_int_equal(rec_at(DS).type, TV_REC_LOST);
	ring_bytes(DS + 16, &records, sizeof(records));
	assert_int_equal(records, 5);
	assert_int_equal(rec_at(DS + 24).type, TV_REC_STOP);
	check_ring();
}

/* --- OVERWRITE policy --------------------------------------------------------------------- */

static void test_overwrite_drops_oldest_exactly(void **state)
{
	static char text[100];

	(void)state;
	init_ring(TV_OVERFLOW_OVERWRITE);
	put_pt_syncs(128);
	assert_int_equal(r->lost_records, 0);
	assert_int_equal(r->head - r->tail, DS);

	assert_int_equal(trace_append_cr3(r, 1, 2, 3), 0);
	assert_int_equal(r->tail, 32);
	assert_int_equal(r->tail_seq, 1);
	assert_int_equal(r->lost_records, 1);
	assert_int_equal(r->lost_bytes, 32);

	/* 120 bytes need four 32-byte records to go */
	assert_int_equal(trace_append_config(r, 4, text, sizeof(text)), 0);
	assert_int_equal(rec_at(DS + 32).size, 120);
	assert_int_equal(r->tail, 160);
	assert_int_equal(r->tail_seq, 5);
	assert_int_equal(r->lost_records, 5);
	assert_int_equal(r->lost_bytes, 160);
	assert_int_equal(r->head - r->tail, DS - 8);
	/* no LOST records under OVERWRITE: tail_seq tells */
	assert_int_equal(r->next_seq, 130);
	assert_int_equal(r->pending_lost, 0);
	check_ring();
}

static void test_overwrite_drops_compact_followers(void **state)
{
	(void)state;
	init_ring(TV_OVERFLOW_OVERWRITE);
	assert_int_equal(branch_type(0x100, 0x200), TV_REC_BRANCH);       /* 0..24 */
	for (int i = 0; i < 5; i++)                                       /* 24..104 */
		assert_int_equal(branch_type(0x200 + 0x100 * i + 4, 0x300 + 0x100 * i),
				 TV_REC_BRANCH_COMPACT);
	assert_int_equal(trace_append_cr3(r, 1, 2, 3), 0);                /* 104..136 */
	put_pt_syncs(123);                                                /* ..4072 */
	assert_int_equal(r->head, 4072);

	/* 32 needed, 24 free: dropping the full branch (24) is enough for room,
	 * but its 5 compact followers cannot be decoded without it */
	assert_int_equal(trace_append_pt_sync(r, 1, 0, 0), 0);
	assert_int_equal(r->tail, 104);
	assert_int_equal(r->tail_seq, 6);
	assert_int_equal(rec_at(r->tail).type, TV_REC_CR3);
	assert_int_equal(r->lost_records, 6);
	assert_int_equal(r->lost_bytes, 104);
	assert_int_equal(r->tail_seq, r->lost_records);
	check_ring();
}

static void test_overwrite_long_branch_run(void **state)
{
	uint64_t to = 0x10000, prev_lost = 0;

	(void)state;
	init_ring(TV_OVERFLOW_OVERWRITE);
	/* Mostly compact branches: each drop takes at most one sync interval. */
	for (int i = 0; i < 5000; i++) {
		uint64_t from = to + (uint64_t)(i % 7);

		assert_int_equal(trace_append_branch(r, from, from + 0x40, TV_BR_JCC, 0, 0), 0);
		to = from + 0x40;
		assert_true(r->lost_bytes - prev_lost <= SYNC + 16);
		assert_true(r->head - r->tail >= DS - SYNC - 16 - 24 || r->lost_records == 0);
		prev_lost = r->lost_bytes;
		assert_int_equal(r->tail_seq, r->lost_records);
		if ((i & 63) == 0)
			check_ring();
	}
	assert_true(r->lost_records > 0);
	assert_int_equal(r->head - r->tail + r->lost_bytes, r->head);
	check_ring();
}

/* --- consumer --------------------------------------------------------------------------- */

static void put_three(void)
{
	assert_int_equal(branch_type(0x100, 0x200), TV_REC_BRANCH);     /* 24 */
	assert_int_equal(trace_append_cr3(r, 1, 2, 3), 0);              /* 32 */
	assert_int_equal(branch_type(0x300, 0x400), TV_REC_BRANCH);     /* 24 */
	assert_int_equal(branch_type(0x410, 0x500), TV_REC_BRANCH_COMPACT); /* 16 */
}

static void test_peek_whole_records(void **state)
{
	uint8_t buf[128], all[96];
	struct trace_cursor c, bad;
	size_t len = 99;

	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	assert_int_equal(trace_ring_cursor_tail(r, &c), 0);
	/* empty */
	assert_int_equal(trace_ring_peek(r, &c, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(trace_ring_peek(r, &c, NULL, 0, &len), 0);
	put_three();
	ring_bytes(0, all, sizeof(all));

	assert_int_equal(trace_ring_peek(r, &c, buf, 23, &len), TRACE_ERR_NOSPC);
	assert_int_equal(len, 0);
	assert_int_equal(c.pos, 0);
	assert_int_equal(trace_ring_peek(r, &c, NULL, 0, &len), TRACE_ERR_NOSPC);
	assert_int_equal(trace_ring_peek(r, &c, buf, 24, &len), 0);
	assert_int_equal(len, 24);
	assert_int_equal(c.pos, 24);
	assert_int_equal(c.seq, 1);
	/* 55 bytes: the CR3 (32) fits, the branch after it (24) does not */
	assert_int_equal(trace_ring_peek(r, &c, buf + 24, 55, &len), 0);
	assert_int_equal(len, 32);
	assert_int_equal(c.seq, 2);
	assert_int_equal(trace_ring_readable(r, &c), 40);
	assert_int_equal(trace_ring_peek(r, &c, buf + 56, sizeof(buf) - 56, &len), 0);
	assert_int_equal(len, 40);
	assert_int_equal(c.pos, 96);
	assert_int_equal(c.seq, 4);
	assert_memory_equal(buf, all, 96);
	/* the ring did not change */
	assert_int_equal(r->tail, 0);
	assert_int_equal(r->tail_seq, 0);
	assert_int_equal(trace_ring_peek(r, &c, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, 0);

	/* cursors that do not belong to this ring */
	bad.pos = 104;
	bad.seq = 4;
	assert_int_equal(trace_ring_peek(r, &bad, buf, sizeof(buf), &len), TRACE_ERR_RANGE);
	bad.pos = 0;
	bad.seq = 1;
	assert_int_equal(trace_ring_peek(r, &bad, buf, sizeof(buf), &len), TRACE_ERR_RANGE);
	bad.pos = 96;
	bad.seq = 3;
	assert_int_equal(trace_ring_peek(r, &bad, buf, sizeof(buf), &len), TRACE_ERR_RANGE);
	bad.pos = 24;
	bad.seq = 9;
	assert_int_equal(trace_ring_peek(r, &bad, buf, sizeof(buf), &len), TRACE_ERR_RANGE);
	assert_int_equal(trace_ring_peek(NULL, &c, buf, sizeof(buf), &len), TRACE_ERR_INVAL);
	assert_int_equal(trace_ring_peek(r, NULL, buf, sizeof(buf), &len), TRACE_ERR_INVAL);
	assert_int_equal(trace_ring_peek(r, &c, buf, sizeof(buf), NULL), TRACE_ERR_INVAL);
	assert_int_equal(trace_ring_peek(r, &c, NULL, 8, &len), TRACE_ERR_INVAL);
	assert_int_equal(trace_ring_cursor_tail(r, NULL), TRACE_ERR_INVAL);
	check_ring();
}

static void test_peek_overwritten_and_resync(void **state)
{
	uint8_t buf[TV_REC_MAX_SIZE];
	struct trace_cursor c, old;
	size_t len;

	(void)state;
	init_ring(TV_OVERFLOW_OVERWRITE);
	put_pt_syncs(10);
	assert_int_equal(trace_ring_cursor_tail(r, &c), 0);
	assert_int_equal(trace_ring_peek(r, &c, buf, 64, &len), 0);   /* read 2 */
	assert_int_equal(c.seq, 2);
	assert_int_equal(trace_ring_resync(r, &c), 0);                /* nothing missed */
	assert_int_equal(c.seq, 2);
	put_pt_syncs(128 - 10 + 5);                                   /* drops seq 0..4 */
	assert_int_equal(r->tail_seq, 5);
	old = c;
	assert_int_equal(trace_ring_peek(r, &c, buf, sizeof(buf), &len), TRACE_ERR_OVERWRITTEN);
	assert_int_equal(len, 0);
	assert_int_equal(c.pos, old.pos);
	assert_int_equal(trace_ring_readable(r, &c), 0);
	assert_int_equal(trace_ring_resync(r, &c), 3);                /* seq 2, 3, 4 */
	assert_int_equal(c.pos, r->tail);
	assert_int_equal(c.seq, 5);
	assert_int_equal(trace_ring_peek(r, &c, buf, 32, &len), 0);
	assert_int_equal(len, 32);
	{
		struct tv_rec_pt_sync p;

		memcpy(&p, buf, sizeof(p));
		assert_int_equal(p.pt_offset, 5);   /* the 6th PT_SYNC written */
	}
	/* consume does not release anything under OVERWRITE */
	assert_int_equal(trace_ring_consume(r, &c), 0);
	assert_int_equal(r->tail_seq, 5);
	check_ring();
}

static void test_consume_checks_boundaries(void **state)
{
	struct trace_cursor c;

	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	put_three();                                   /* 0, 24, 56, 80, head 96 */
	c.pos = 24;
	c.seq = 1;
	assert_int_equal(trace_ring_consume(r, &c), 0);
	assert_int_equal(r->tail, 24);
	assert_int_equal(r->tail_seq, 1);
	/* inside a record */
	c.pos = 40;
	c.seq = 2;
	assert_int_equal(trace_ring_consume(r, &c), TRACE_ERR_RANGE);
	/* right place, wrong sequence number */
	c.pos = 56;
	c.seq = 3;
	assert_int_equal(trace_ring_consume(r, &c), TRACE_ERR_RANGE);
	/* beyond head */
	c.pos = 104;
	c.seq = 5;
	assert_int_equal(trace_ring_consume(r, &c), TRACE_ERR_RANGE);
	/* behind tail with a newer seq: inconsistent */
	c.pos = 0;
	c.seq = 2;
	assert_int_equal(trace_ring_consume(r, &c), TRACE_ERR_RANGE);
	assert_int_equal(r->tail, 24);
	/* already released: nothing to do */
	c.pos = 0;
	c.seq = 0;
	assert_int_equal(trace_ring_consume(r, &c), 0);
	assert_int_equal(r->tail, 24);
	/* everything */
	c.pos = 96;
	c.seq = 4;
	assert_int_equal(trace_ring_consume(r, &c), 0);
	assert_int_equal(r->tail, 96);
	assert_int_equal(r->tail_seq, 4);
	assert_int_equal(trace_ring_consume(NULL, &c), TRACE_ERR_INVAL);
	assert_int_equal(trace_ring_consume(r, NULL), TRACE_ERR_INVAL);
	check_ring();
}

static void test_corrupt_ring(void **state)
{
	uint8_t buf[256];
	struct trace_cursor c;
	size_t len;
	uint8_t *d;

	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	put_three();
	d = trace_ring_data(r);
	d[24 + 2] = 0;                                 /* the CR3's size: 0 */
	d[24 + 3] = 0;
	assert_int_equal(trace_ring_cursor_tail(r, &c), 0);
	/* the good record before it comes out, then the error */
	assert_int_equal(trace_ring_peek(r, &c, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, 24);
	assert_int_equal(trace_ring_peek(r, &c, buf, sizeof(buf), &len), TRACE_ERR_CORRUPT);
	c.pos = 96;
	c.seq = 4;
	assert_int_equal(trace_ring_consume(r, &c), TRACE_ERR_CORRUPT);

	/* OVERWRITE: a scribbled tail record makes the producer drop it all, counted */
	setup(NULL);
	init_ring(TV_OVERFLOW_OVERWRITE);
	put_pt_syncs(128);
	d = trace_ring_data(r);
	d[2] = 0xf8;                                   /* size 0xfff8 > TV_REC_MAX_SIZE */
	d[3] = 0xff;
	assert_int_equal(trace_append_cr3(r, 1, 2, 3), 0);
	assert_int_equal(r->lost_records, 128);
	assert_int_equal(r->lost_bytes, DS);
	assert_int_equal(r->tail, DS);
	assert_int_equal(r->tail_seq, 128);
	assert_int_equal(r->next_seq, 129);
	check_ring();
}

static void test_validate_header(void **state)
{
	struct tv_trace_ring h;

	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	put_three();
	assert_int_equal(trace_ring_validate(r, BLOCK_BYTES), 0);
	assert_int_equal(trace_ring_validate(NULL, BLOCK_BYTES), TRACE_ERR_INVAL);
	assert_int_equal(trace_ring_validate(r, HDR + DS - 1), TRACE_ERR_BAD_HEADER);
	assert_int_equal(trace_ring_validate(r, 64), TRACE_ERR_BAD_HEADER);
#define BAD(field, value)                                                        \
	do {                                                                      \
		h = *r;                                                           \
		h.field = value;                                                  \
		assert_int_equal(trace_ring_validate(&h, BLOCK_BYTES), TRACE_ERR_BAD_HEADER); \
	} while (0)
	BAD(magic, 0);
	BAD(version, 2);
	BAD(hdr_size, 120);
	BAD(hdr_size, 132);
	BAD(flags, 2);
	BAD(data_size, 2048);
	BAD(data_size, 6144);
	BAD(data_size, 8192);
	BAD(tail, 100);
	BAD(head, DS + 8);
	BAD(head, 97);
	BAD(tail_seq, 5);
	BAD(next_seq, 13);     /* 13 records cannot fit in 96 bytes */
#undef BAD
}

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(trace_strerror(0), "ok");
	for (int e = TRACE_ERR_BUSY; e <= TRACE_ERR_INVAL; e++) {
		assert_string_not_equal(trace_strerror(e), "unknown error");
		for (int f = e + 1; f <= TRACE_ERR_INVAL; f++)
			assert_string_not_equal(trace_strerror(e), trace_strerror(f));
	}
	assert_string_equal(trace_strerror(-100), "unknown error");
	assert_string_equal(trace_strerror(5), "unknown error");
}

/* --- random operations, invariants after each ----------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64: reproducible, good enough to pick operations */
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void random_ops(enum tv_overflow policy)
{
	static char text[TV_REC_MAX_SIZE];
	uint8_t buf[2048];
	struct trace_cursor c;
	uint64_t to = 0x1000, full = 0;

	init_ring(policy);
	assert_int_equal(trace_ring_cursor_tail(r, &c), 0);
	for (int i = 0; i < 20000; i++) {
		uint64_t op = rnd() % 100, before = r->lost_records;
		int rc;

		if (op < 80) {
			/* mostly short forward blocks (compact), sometimes anywhere */
			uint64_t from = (rnd() % 16 == 0) ? rnd() : to + rnd() % 64;

			to = rnd();
			rc = trace_append_branch(r, from, to, (enum tv_branch_kind)(rnd() % TV_BR_KIND_MAX),
						 rnd() % 8 == 0 ? TV_BRF_TSC : 0, rnd());
		} else if (op < 88) {
			rc = trace_append_cr3(r, rnd(), rnd(), rnd());
		} else if (op < 92) {
			rc = trace_append_log(r, rnd(), 2, text, rnd() % sizeof(text));
		} else {
			size_t len;

			rc = 0;
			if (trace_ring_peek(r, &c, buf, rnd() % sizeof(buf), &len) == TRACE_ERR_OVERWRITTEN)
				trace_ring_resync(r, &c);
			else if (policy == TV_OVERFLOW_STOP && rnd() % 2)
				assert_int_equal(trace_ring_consume(r, &c), 0);
		}
		if (rc == TRACE_ERR_FULL) {
			assert_int_equal(policy, TV_OVERFLOW_STOP);
			assert_int_equal(r->lost_records, before + 1);
			full++;
		} else {
			assert_int_equal(rc, 0);
		}
		if (policy == TV_OVERFLOW_OVERWRITE)
			assert_int_equal(r->tail_seq, r->lost_records);
		if ((i & 31) == 0)
			check_ring();
	}
	if (policy == TV_OVERFLOW_STOP)
		assert_int_equal(full, r->lost_records);
	assert_true(r->lost_records > 0);
	check_ring();
}

static void test_random_operations_stop(void **state)
{
	(void)state;
	rng_state = 0x9e3779b97f4a7c15ull;
	random_ops(TV_OVERFLOW_STOP);
}

static void test_random_operations_overwrite(void **state)
{
	(void)state;
	rng_state = 0x2545f4914f6cdd1dull;
	random_ops(TV_OVERFLOW_OVERWRITE);
}

/* --- cross-CPU reader: the (tail, tail_seq) seqlock ---------------------------------- */

/* A writer caught between its stores: readers wait, then say BUSY; nothing is read. */
static void test_seqlock_busy_tail(void **state)
{
	uint8_t buf[256];
	struct trace_cursor c = { 0, 0 }, t;
	size_t len = 99;

	(void)state;
	init_ring(TV_OVERFLOW_OVERWRITE);
	put_pt_syncs(200);                    /* overwrites: tail moved */
	assert_int_equal(trace_ring_cursor_tail(r, &t), 0);
	assert_int_equal(t.pos & 7, 0);
	r->tail |= TRACE_TAIL_BUSY;           /* as set_tail leaves it mid-write */
	assert_int_equal(trace_ring_cursor_tail(r, &c), TRACE_ERR_BUSY);
	c = t;
	assert_int_equal(trace_ring_peek(r, &c, buf, sizeof(buf), &len), TRACE_ERR_BUSY);
	assert_int_equal(len, 0);
	assert_int_equal(c.pos, t.pos);
	assert_int_equal(trace_ring_resync(r, &c), 0);
	assert_int_equal(trace_ring_validate(r, BLOCK_BYTES), TRACE_ERR_BAD_HEADER);
	/* The producer itself never sees the bit: it writes on, and clears it. */
	assert_int_equal(trace_append_pt_sync(r, 1, 2, 3), 0);
	assert_int_equal(r->tail & TRACE_TAIL_BUSY, 0);
	assert_int_equal(trace_ring_cursor_tail(r, &c), 0);
	assert_int_equal(trace_ring_peek(r, &c, buf, sizeof(buf), &len), 0);
	assert_true(len > 0);
	check_ring();
}

/* Sequence numbers near 2^64 wrap around: peek, resync and consume still agree. */
static void test_seq_wraps_around(void **state)
{
	uint8_t buf[TV_REC_MAX_SIZE];
	struct trace_cursor c;
	size_t len;

	(void)state;
	init_ring(TV_OVERFLOW_STOP);
	r->tail_seq = r->next_seq = UINT64_MAX - 2;
	put_pt_syncs(6);
	assert_int_equal(r->next_seq, 3);
	assert_int_equal(trace_ring_validate(r, BLOCK_BYTES), 0);
	assert_int_equal(trace_ring_cursor_tail(r, &c), 0);
	assert_int_equal(c.seq, UINT64_MAX - 2);
	assert_int_equal(trace_ring_peek(r, &c, buf, 4 * 32, &len), 0);
	assert_int_equal(len, 4 * 32);
	assert_int_equal(c.seq, 1);
	assert_int_equal(trace_ring_consume(r, &c), 0);
	assert_int_equal(r->tail_seq, 1);
	assert_int_equal(trace_ring_consume(r, &c), 0);   /* released already */
	assert_int_equal(trace_ring_peek(r, &c, buf, sizeof(buf), &len), 0);
	assert_int_equal(len, 2 * 32);
	assert_int_equal(c.seq, 3);

	setup(NULL);
	init_ring(TV_OVERFLOW_OVERWRITE);
	r->tail_seq = r->next_seq = UINT64_MAX - 10;
	assert_int_equal(trace_ring_cursor_tail(r, &c), 0);
	put_pt_syncs(200);                    /* 128 fit: 72 dropped */
	assert_int_equal(trace_ring_peek(r, &c, buf, sizeof(buf), &len), TRACE_ERR_OVERWRITTEN);
	assert_int_equal(trace_ring_resync(r, &c), 72);
	assert_int_equal(c.seq, UINT64_MAX - 10 + 72);
	assert_int_equal(trace_ring_peek(r, &c, buf, 32, &len), 0);
	check_ring();
}

#include <pthread.h>
#include <stdlib.h>

/*
 * A producer thread appends MARKER records whose value is their own
 * sequence number into a small OVERWRITE ring, as fast as it can, while
 * this thread reads it like the exporter on another CPU does: take the
 * tail, peek, resync.  Every record handed out must carry the sequence
 * number the reader was told, and the reader must never see an
 * inconsistent (tail, tail_seq) pair (RANGE) or a torn record (CORRUPT).
 * Runs a fixed number of appends, not a time.
 */
#define XCPU_APPENDS 2000000u

static uint64_t xarena[(HDR + DS) / 8];
static struct tv_trace_ring *xr;
static int xdone, xgo;

static void *xproducer(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&xgo, __ATOMIC_ACQUIRE))
		;
	for (unsigned i = 0; i < XCPU_APPENDS; i++) {
		uint64_t seq = xr->next_seq;   /* this thread is the only producer */

		if (trace_append_marker(xr, i, seq, NULL, 0))
			abort();
	}
	__atomic_store_n(&xdone, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_cross_cpu_reader(void **state)
{
	static uint8_t buf[TV_REC_MAX_SIZE];
	uint64_t got = 0, overwritten = 0, missed = 0, busy = 0;
	struct trace_cursor c;
	pthread_t th;

	(void)state;
	xr = (struct tv_trace_ring *)xarena;
	assert_int_equal(trace_ring_init(xr, sizeof(xarena), 1, 1, TV_SOURCE_MTF,
					 TV_OVERFLOW_OVERWRITE, 0, 0), 0);
	__atomic_store_n(&xdone, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&xgo, 0, __ATOMIC_RELAXED);
	assert_int_equal(trace_ring_cursor_tail(xr, &c), 0);
	assert_int_equal(pthread_create(&th, NULL, xproducer, NULL), 0);
	__atomic_store_n(&xgo, 1, __ATOMIC_RELEASE);
	for (;;) {
		struct trace_cursor at = c;
		int done = __atomic_load_n(&xdone, __ATOMIC_ACQUIRE);
		size_t len = 0;
		/* 2 records at most per peek: many peeks race the producer */
		int err = trace_ring_peek(xr, &c, buf, 48, &len);

		if (err == TRACE_ERR_OVERWRITTEN) {
			overwritten++;
			missed += trace_ring_resync(xr, &c);
			continue;
		}
		/*
		 * BUSY: tail kept moving.  RANGE: the cursor is at head and the
		 * producer thread was preempted between storing next_seq and
		 * head (on the hypervisor nothing preempts it).  Both: again.
		 */
		if (err == TRACE_ERR_BUSY || err == TRACE_ERR_RANGE) {
			busy++;
			continue;
		}
		assert_int_equal(err, 0);
		for (size_t off = 0; off < len; off += 24) {
			uint64_t value;

			assert_int_equal(buf[off], TV_REC_MARKER);
			memcpy(&value, buf + off + 16, 8);
			assert_int_equal(value, at.seq + off / 24);
			got++;
		}
		if (!len && done)
			break;   /* the producer had finished before this peek found nothing */
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	/* Every record was read or counted as missed, none twice. */
	assert_int_equal(got + missed, XCPU_APPENDS);
	assert_int_equal(c.seq, XCPU_APPENDS);
	/* Fresh tail snapshots agree with the final header. */
	assert_int_equal(trace_ring_cursor_tail(xr, &c), 0);
	assert_int_equal(c.seq, xr->tail_seq);
	assert_int_equal(c.pos, xr->tail);
	print_message("cross-cpu: %llu read, %llu missed, %llu overwritten peeks, %llu retries\n",
		      (unsigned long long)got, (unsigned long long)missed,
		      (unsigned long long)overwritten, (unsigned long long)busy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_init_header, setup),
		cmocka_unit_test_setup(test_init_data_size_is_largest_power_of_two, setup),
		cmocka_unit_test_setup(test_init_rejects, setup),
		cmocka_unit_test_setup(test_layout_branch_full, setup),
		cmocka_unit_test_setup(test_layout_compact, setup),
		cmocka_unit_test_setup(test_layout_fixed_records, setup),
		cmocka_unit_test_setup(test_layout_text_records, setup),
		cmocka_unit_test_setup(test_text_cut_to_max, setup),
		cmocka_unit_test_setup(test_invalid_arguments_write_nothing, setup),
		cmocka_unit_test_setup(test_compact_rules, setup),
		cmocka_unit_test_setup(test_full_branch_every_sync_interval, setup),
		cmocka_unit_test_setup(test_wrap_fixed_record_at_every_split, setup),
		cmocka_unit_test_setup(test_wrap_text, setup),
		cmocka_unit_test_setup(test_stop_drops_new_and_reports_lost, setup),
		cmocka_unit_test_setup(test_stop_drop_breaks_chain, setup),
		cmocka_unit_test_setup(test_stop_lost_written_before_stop_record, setup),
		cmocka_unit_test_setup(test_overwrite_drops_oldest_exactly, setup),
		cmocka_unit_test_setup(test_overwrite_drops_compact_followers, setup),
		cmocka_unit_test_setup(test_overwrite_long_branch_run, setup),
		cmocka_unit_test_setup(test_peek_whole_records, setup),
		cmocka_unit_test_setup(test_peek_overwritten_and_resync, setup),
		cmocka_unit_test_setup(test_consume_checks_boundaries, setup),
		cmocka_unit_test_setup(test_corrupt_ring, setup),
		cmocka_unit_test_setup(test_validate_header, setup),
		cmocka_unit_test_setup(test_strerror, setup),
		cmocka_unit_test_setup(test_random_operations_stop, setup),
		cmocka_unit_test_setup(test_random_operations_overwrite, setup),
		cmocka_unit_test_setup(test_seqlock_busy_tail, setup),
		cmocka_unit_test_setup(test_seq_wraps_around, setup),
		cmocka_unit_test_setup(test_cross_cpu_reader, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
