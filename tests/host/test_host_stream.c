/* SPDX-License-Identifier: MIT */
/*
 * test_host_stream.c - the record iterator seam (host-tools/lib/stream.c):
 * every record type, compact-branch expansion, and each malformed case.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "host-tools/lib/le.h"
#include "host-tools/lib/stream.h"
#include "tests/host/helpers.h"

static void feed(struct tvh_stream *s, const struct recbuf *b, uint64_t seq)
{
	tvh_stream_init(s);
	tvh_stream_feed(s, b->p, b->len, seq, false);
}

static void test_every_type(void **state)
{
	struct recbuf b = { 0 };
	struct tvh_stream s;
	struct trace_event r;

	(void)state;
	rb_startstop(&b, TV_REC_START, TV_TRIG_HYPERCALL, 100, 0xfff0);
	rb_branch(&b, TV_BR_CALL, 0x1000, 0x2000);
	rb_branch_tsc(&b, TV_BR_RET, 0x2010, 0x1005, 123, TV_BRF_MISPRED);
	rb_compact(&b, TV_BR_JCC, 0x20, 0x3000);
	rb_lbr(&b, TV_BR_JMP, 0x4000, 0x5000, 0xabc);
	rb_cr3(&b, 200, 0x1234000, 0xffff800000001000ull);
	rb_time(&b, 300, 2400000000ull, 1700000000000000000ull);
	rb_text(&b, TV_REC_CONFIG, 0, 400, "mode=mtf", 8);
	rb_text(&b, TV_REC_LOG, 2, 500, "hello log", 9);
	rb_image(&b, TV_IMG_KERNEL, 600, 0xffffffff81000000ull, 0x2000000, "vmlinux");
	rb_lost(&b, 700, 42);
	rb_marker(&b, 800, 7, "phase-1", 7);
	rb_pt_sync(&b, 900, 65536, 12);
	rb_pad(&b, 16);
	rb_startstop(&b, TV_REC_STOP, TV_TRIG_FULL, 1000, 0x1234);
	feed(&s, &b, 10);

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.type, TV_REC_START);
	assert_int_equal(r.seq, 10);
	assert_int_equal(r.offset, 0);
	assert_true(r.has_tsc);
	assert_int_equal(r.tsc, 100);
	assert_int_equal(r.u.startstop.trigger, TV_TRIG_HYPERCALL);
	assert_int_equal(r.u.startstop.rip, 0xfff0);

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.type, TV_REC_BRANCH);
	assert_int_equal(r.size, 24);
	assert_false(r.has_tsc);
	assert_int_equal(r.u.branch.kind, TV_BR_CALL);
	assert_int_equal(r.u.branch.from, 0x1000);
	assert_int_equal(r.u.branch.to, 0x2000);
	assert_false(r.u.branch.compact);

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.size, 32);
	assert_true(r.has_tsc);
	assert_int_equal(r.tsc, 123);
	assert_int_equal(r.u.branch.flags, TV_BRF_TSC | TV_BRF_MISPRED);
	assert_int_equal(r.u.branch.kind, TV_BR_RET);

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.type, TV_REC_BRANCH_COMPACT);
	assert_true(r.u.branch.compact);
	assert_int_equal(r.u.branch.from, 0x1005 + 0x20);
	assert_int_equal(r.u.branch.to, 0x3000);
	assert_int_equal(r.u.branch.kind, TV_BR_JCC);

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.type, TV_REC_LBR);
	assert_int_equal(r.u.branch.from, 0x4000);
	assert_int_equal(r.u.branch.lbr_info, 0xabc);

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.type, TV_REC_CR3);
	assert_int_equal(r.u.cr3.cr3, 0x1234000);
	assert_int_equal(r.u.cr3.rip, 0xffff800000001000ull);
	assert_int_equal(r.tsc, 200);

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.u.time.tsc_hz, 2400000000ull);
	assert_int_equal(r.u.time.unix_ns, 1700000000000000000ull);

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.type, TV_REC_CONFIG);
	assert_int_equal(r.u.text.len, 8);
	assert_memory_equal(r.u.text.text, "mode=mtf", 8);

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.type, TV_REC_LOG);
	assert_int_equal(r.u.text.level, 2);
	assert_int_equal(r.size, 32);   /* 16 + 9 -> 32 */
	assert_memory_equal(r.u.text.text, "hello log", 9);

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.type, TV_REC_IMAGE);
	assert_int_equal(r.u.image.kind, TV_IMG_KERNEL);
	assert_int_equal(r.u.image.base, 0xffffffff81000000ull);
	assert_int_equal(r.u.image.size, 0x2000000);
	assert_int_equal(r.u.image.name_len, 7);
	assert_memory_equal(r.u.image.name, "vmlinux", 7);

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.u.lost.records, 42);

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.u.marker.value, 7);
	assert_memory_equal(r.u.marker.label, "phase-1", 7);

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.u.pt_sync.pt_offset, 65536);
	assert_int_equal(r.u.pt_sync.pt_lost, 12);

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.type, TV_REC_PAD);
	assert_int_equal(r.size, 16);
	assert_int_equal(r.seq, 10 + 13);   /* PAD holds a sequence number */

	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.type, TV_REC_STOP);
	assert_int_equal(r.u.startstop.trigger, TV_TRIG_FULL);
	assert_int_equal(r.seq, 24);

	assert_int_equal(tvh_next_record(&s, &r), 0);
	assert_int_equal(tvh_next_record(&s, &r), 0);
	rb_free(&b);
}

static void test_compact_chain_and_resets(void **state)
{
	struct recbuf b = { 0 };
	struct tvh_stream s;
	struct trace_event r;

	(void)state;
	rb_compact(&b, TV_BR_JMP, 4, 0x100);          /* no predecessor */
	rb_compact(&b, TV_BR_JMP, 8, 0x200);          /* from = 0x108 */
	rb_startstop(&b, TV_REC_START, TV_TRIG_BOOT, 1, 2);
	rb_compact(&b, TV_BR_JMP, 8, 0x300);          /* START reset it */
	rb_branch(&b, TV_BR_CALL, 0x1000, 0x2000);
	rb_lost(&b, 5, 3);
	rb_compact(&b, TV_BR_RET, 1, 0x300);          /* LOST reset it */
	rb_startstop(&b, TV_REC_STOP, TV_TRIG_LIMIT, 6, 7);
	rb_compact(&b, TV_BR_RET, 1, 0x400);          /* STOP does not */
	rb_rec(&b, 99, 0, 0, NULL, 0, NULL, 0);
	rb_compact(&b, TV_BR_RET, 1, 0x500);          /* an unknown type does */
	feed(&s, &b, 0);

	assert_int_equal(tvh_next_record(&s, &r), -TVH_ERR_REC_NO_PREV);
	assert_int_equal(r.seq, 0);
	assert_int_equal(r.u.branch.from, 0);
	assert_int_equal(r.u.branch.to, 0x100);
	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.u.branch.from, 0x108);
	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(tvh_next_record(&s, &r), -TVH_ERR_REC_NO_PREV);
	assert_int_equal(r.seq, 3);
	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(tvh_next_record(&s, &r), -TVH_ERR_REC_NO_PREV);
	assert_int_equal(tvh_next_record(&s, &r), 1);             /* STOP */
	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.u.branch.from, 0x301);
	assert_int_equal(tvh_next_record(&s, &r), -TVH_ERR_REC_TYPE);
	assert_int_equal(tvh_next_record(&s, &r), -TVH_ERR_REC_NO_PREV);
	assert_int_equal(tvh_next_record(&s, &r), 0);
	rb_free(&b);
}

static void test_contiguous_feed_keeps_state(void **state)
{
	struct recbuf a = { 0 }, b = { 0 };
	struct tvh_stream s;
	struct trace_event r;

	(void)state;
	rb_branch(&a, TV_BR_CALL, 0x1000, 0x2000);
	rb_compact(&b, TV_BR_RET, 0x10, 0x1005);
	tvh_stream_init(&s);
	assert_int_equal(tvh_next_record(&s, &r), 0);   /* not fed yet */
	tvh_stream_feed(&s, a.p, a.len, 0, false);
	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(tvh_next_record(&s, &r), 0);
	tvh_stream_feed(&s, b.p, b.len, 1, true);
	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.seq, 1);
	assert_int_equal(r.u.branch.from, 0x2010);
	/* Not contiguous: the predecessor is gone. */
	tvh_stream_feed(&s, b.p, b.len, 7, false);
	assert_int_equal(tvh_next_record(&s, &r), -TVH_ERR_REC_NO_PREV);
	assert_int_equal(r.seq, 7);
	rb_free(&a);
	rb_free(&b);
}

static void put_hdr(struct recbuf *b, uint8_t type, uint16_t size, uint32_t aux)
{
	uint8_t h[8] = { type, 0 };

	tvh_put_le16(h + 2, size);
	tvh_put_le32(h + 4, aux);
	rb_raw(b, h, 8);
}

static void test_fatal_sizes(void **state)
{
	static const uint16_t bad[] = { 0, 4, 12, TV_REC_MAX_SIZE + 8 };
	struct tvh_stream s;
	struct trace_event r;

	(void)state;
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct recbuf b = { 0 };
		uint8_t zeros[TV_REC_MAX_SIZE + 16] = { 0 };

		rb_branch(&b, TV_BR_JMP, 1, 2);
		put_hdr(&b, TV_REC_PAD, bad[i], 0);
		rb_raw(&b, zeros, sizeof(zeros));
		feed(&s, &b, 0);
		assert_int_equal(tvh_next_record(&s, &r), 1);
		assert_int_equal(tvh_next_record(&s, &r), -TVH_ERR_REC_SIZE);
		assert_false(tvh_record_error_is_skippable(-TVH_ERR_REC_SIZE));
		assert_int_equal(r.offset, 24);
		assert_int_equal(r.seq, 1);
		assert_int_equal(tvh_next_record(&s, &r), 0);
		rb_free(&b);
	}
}

static void test_truncated(void **state)
{
	struct recbuf b = { 0 };
	struct tvh_stream s;
	struct trace_event r;

	(void)state;
	rb_branch_tsc(&b, TV_BR_JMP, 1, 2, 3, 0);
	/* Record claims 32 bytes, 24 present. */
	tvh_stream_init(&s);
	tvh_stream_feed(&s, b.p, 24, 0, false);
	assert_int_equal(tvh_next_record(&s, &r), -TVH_ERR_TRUNCATED);
	assert_int_equal(tvh_next_record(&s, &r), 0);
	/* Fewer bytes than a header. */
	tvh_stream_feed(&s, b.p, 5, 0, false);
	assert_int_equal(tvh_next_record(&s, &r), -TVH_ERR_TRUNCATED);
	assert_int_equal(tvh_next_record(&s, &r), 0);
	/* Empty and NULL buffers are simply empty. */
	tvh_stream_feed(&s, NULL, 100, 0, false);
	assert_int_equal(tvh_next_record(&s, &r), 0);
	rb_free(&b);
}

static void test_skippable_errors(void **state)
{
	struct recbuf b = { 0 };
	struct tvh_stream s;
	struct trace_event r;
	uint64_t f[3] = { 1, 2, 3 };
	uint8_t junk[16] = { 0 };

	(void)state;
	put_hdr(&b, 99, 24, 0);                               /* unknown type */
	rb_raw(&b, junk, 16);
	rb_rec(&b, TV_REC_BRANCH, TV_BR_JMP, TV_BRF_TSC, f, 2, NULL, 0); /* TSC flag, 24 bytes */
	rb_rec(&b, TV_REC_BRANCH, 200, 0, f, 2, NULL, 0);     /* bad kind */
	rb_rec(&b, TV_REC_CR3, 0, 0, f, 2, NULL, 0);          /* CR3 of 24 bytes */
	rb_rec(&b, TV_REC_LOG, 9, 3, f, 1, "abc", 3);         /* level 9 */
	rb_rec(&b, TV_REC_CONFIG, 0, 40, f, 1, "abc", 3);     /* aux past the record */
	rb_rec(&b, TV_REC_IMAGE, 7, 1, f, 3, "x", 1);         /* image kind 7 */
	rb_rec(&b, TV_REC_START, 0, TV_TRIG_LIMIT, f, 2, NULL, 0); /* STOP-only trigger */
	rb_rec(&b, TV_REC_STOP, 0, 99, f, 2, NULL, 0);        /* no such trigger */
	rb_rec(&b, TV_REC_LBR, 99, 0, f, 3, NULL, 0);         /* bad kind */
	rb_branch(&b, TV_BR_RET, 5, 6);                       /* good one after */
	feed(&s, &b, 100);
	assert_int_equal(tvh_next_record(&s, &r), -TVH_ERR_REC_TYPE);
	assert_true(tvh_record_error_is_skippable(-TVH_ERR_REC_TYPE));
	assert_int_equal(r.type, 99);
	assert_int_equal(r.seq, 100);
	for (int i = 0; i < 9; i++) {
		assert_int_equal(tvh_next_record(&s, &r), -TVH_ERR_REC_FIELD);
		assert_int_equal(r.seq, 101 + i);
	}
	assert_int_equal(tvh_next_record(&s, &r), 1);
	assert_int_equal(r.seq, 110);
	assert_int_equal(r.u.branch.to, 6);
	assert_int_equal(tvh_next_record(&s, &r), 0);
	rb_free(&b);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(tvh_rec_type_name(TV_REC_BRANCH_COMPACT), "BRANCH_COMPACT");
	assert_string_equal(tvh_rec_type_name(TV_REC_PT_SYNC), "PT_SYNC");
	assert_string_equal(tvh_rec_type_name(200), "?");
	assert_string_equal(tvh_branch_kind_name(TV_BR_CALL_IND), "call-ind");
	assert_string_equal(tvh_branch_kind_name(TV_BR_KIND_MAX), "?");
	assert_string_equal(tvh_trigger_name(TV_TRIG_EXIT_BOOT_SERVICES), "exit-boot-services");
	assert_string_equal(tvh_image_kind_name(TV_IMG_FIRMWARE), "firmware");
	assert_string_equal(tvh_source_name(TV_SOURCE_PT), "pt");
	assert_string_equal(tvh_errstr(-TVH_ERR_CRC), "checksum mismatch");
	assert_string_equal(tvh_errstr(TVH_ERR_CRC), "checksum mismatch");
	assert_string_equal(tvh_errstr(-1000), "unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_type),
		cmocka_unit_test(test_compact_chain_and_resets),
		cmocka_unit_test(test_contiguous_feed_keeps_state),
		cmocka_unit_test(test_fatal_sizes),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_skippable_errors),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
