/* SPDX-License-Identifier: MIT */
/*
 * test_host_tvt.c - the .tvt file format (host-tools/lib/tvt.c): round
 * trips, byte layout, and every way a file can be damaged.
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

#include "host-tools/lib/error.h"
#include "host-tools/lib/le.h"
#include "host-tools/lib/tvt.h"
#include "tests/host/helpers.h"

static void test_crc32_vector(void **state)
{
	(void)state;
	/* The standard check value of CRC-32/ISO-HDLC. */
	assert_int_equal(tvt_crc32(0, "123456789", 9), 0xcbf43926u);
	/* Chaining equals one pass. */
	assert_int_equal(tvt_crc32(tvt_crc32(0, "1234", 4), "56789", 5), 0xcbf43926u);
	assert_int_equal(tvt_crc32(0, "", 0), 0);
}

/* A file with a records, a PT (two iov parts), a ring and an empty chunk. */
static void make_sample(struct th_tvt *t, struct recbuf *b)
{
	uint8_t ring[128];
	uint8_t pt[13];
	struct iovec iov[2];

	memset(b, 0, sizeof(*b));
	rb_branch(b, TV_BR_CALL, 0x1000, 0x2000);
	rb_marker(b, 5, 6, "m", 1);
	for (unsigned i = 0; i < sizeof(pt); i++)
		pt[i] = (uint8_t)(0xa0 + i);
	th_ring(ring, 3, TV_SOURCE_MTF, TV_OVERFLOW_OVERWRITE, 2, 0, 1000);
	th_tvt_begin(t, "lab-\xc3\xa9 box", 0x1122334455667788ull);
	th_tvt_records(t, 3, 40, b);
	iov[0] = (struct iovec){ pt, 5 };
	iov[1] = (struct iovec){ pt + 5, 8 };
	assert_int_equal(tvt_write_chunkv(&t->w, 3, TVT_KIND_PT, 0, 4096, iov, 2), 0);
	th_tvt_chunk(t, 3, TVT_KIND_RING, 0, 0, ring, sizeof(ring));
	th_tvt_chunk(t, 7, TVT_KIND_RECORDS, TVT_CHUNK_F_STREAM_START, 0, NULL, 0);
	th_tvt_end(t);
}

static void check_sample(struct tvt_reader *r, const struct recbuf *b)
{
	struct tvt_chunk c;

	assert_int_equal(r->info.version, TVT_VERSION);
	assert_int_equal(r->info.session_id, 0x1122334455667788ull);
	assert_int_equal(r->info.created_unix_ns, 1700000000123456789ull);
	assert_int_equal(r->info.trace_version, TV_TRACE_VERSION);
	assert_string_equal(r->info.machine, "lab-\xc3\xa9 box");

	assert_int_equal(tvt_next_chunk(r, &c), 1);
	assert_int_equal(c.file_offset, r->first_chunk);
	assert_int_equal(c.cpu, 3);
	assert_int_equal(c.kind, TVT_KIND_RECORDS);
	assert_int_equal(c.first, 40);
	assert_int_equal(c.length, b->len);
	assert_memory_equal(c.payload, b->p, b->len);
	assert_false(c.truncated);

	assert_int_equal(tvt_next_chunk(r, &c), 1);
	assert_int_equal(c.file_offset % 8, 0);
	assert_int_equal(c.kind, TVT_KIND_PT);
	assert_int_equal(c.first, 4096);
	assert_int_equal(c.length, 13);
	assert_int_equal(c.payload[0], 0xa0);
	assert_int_equal(c.payload[12], 0xac);

	assert_int_equal(tvt_next_chunk(r, &c), 1);
	assert_int_equal(c.file_offset % 8, 0);
	assert_int_equal(c.kind, TVT_KIND_RING);
	assert_int_equal(c.length, 128);
	assert_int_equal(tvh_le32(c.payload), TV_TRACE_MAGIC);

	assert_int_equal(tvt_next_chunk(r, &c), 1);
	assert_int_equal(c.cpu, 7);
	assert_int_equal(c.flags, TVT_CHUNK_F_STREAM_START);
	assert_int_equal(c.length, 0);

	assert_int_equal(tvt_next_chunk(r, &c), 0);
	assert_int_equal(tvt_next_chunk(r, &c), 0);
	assert_int_equal(r->skipped_total, 0);
}

static void test_round_trip_memory(void **state)
{
	struct th_tvt t;
	struct recbuf b;
	struct tvt_reader r;

	(void)state;
	make_sample(&t, &b);
	assert_int_equal(t.len % 8, 0);
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, t.len), 0);
	assert_int_equal(r.first_chunk, 64 + 16);
	check_sample(&r, &b);
	tvt_reader_rewind(&r);
	check_sample(&r, &b);
	tvt_reader_close(&r);
	th_tvt_free(&t);
	rb_free(&b);
}

static void test_round_trip_file(void **state)
{
	struct th_tvt t;
	struct recbuf b;
	struct tvt_reader r;
	char *path;

	(void)state;
	make_sample(&t, &b);
	path = th_tvt_save(&t, "sample.tvt");
	assert_int_equal(tvt_reader_open(&r, path), 0);
	assert_non_null(r.map);
	check_sample(&r, &b);
	tvt_reader_close(&r);
	free(path);
	th_tvt_free(&t);
	rb_free(&b);
}

/* The documented byte layout (docs/TRACEFILE.md), field by field. */
static void test_byte_layout(void **state)
{
	struct th_tvt t;
	struct recbuf b = { 0 };
	const uint8_t *p;
	uint8_t h[40];

	(void)state;
	rb_branch(&b, TV_BR_JMP, 1, 2);
	th_tvt_begin(&t, "abc", 0x0102030405060708ull);
	th_tvt_records(&t, 9, 0x55, &b);
	th_tvt_end(&t);
	p = (const uint8_t *)t.buf;
	assert_int_equal(t.len, 64 + 8 + 40 + 24);
	assert_memory_equal(p, "TVTRACE\0", 8);
	assert_int_equal(tvh_le16(p + 8), 1);
	assert_int_equal(tvh_le16(p + 10), 72);
	assert_int_equal(tvh_le32(p + 12), 0);
	assert_int_equal(tvh_le64(p + 16), 0x0102030405060708ull);
	assert_int_equal(tvh_le64(p + 24), 1700000000123456789ull);
	assert_int_equal(tvh_le32(p + 32), TV_TRACE_VERSION);
	assert_int_equal(tvh_le16(p + 36), 3);
	assert_memory_equal(p + 64, "abc\0\0\0\0\0", 8);
	p += 72;
	assert_memory_equal(p, "TVCK", 4);
	assert_int_equal(tvh_le32(p + 4), 9);
	assert_int_equal(tvh_le16(p + 8), TVT_KIND_RECORDS);
	assert_int_equal(tvh_le16(p + 10), 40);
	assert_int_equal(tvh_le32(p + 12), 0);
	assert_int_equal(tvh_le64(p + 16), 0x55);
	assert_int_equal(tvh_le64(p + 24), 24);
	assert_int_equal(tvh_le32(p + 36), 0);
	/* CRC over the header with the crc field zero, then the payload. */
	memcpy(h, p, 40);
	memset(h + 32, 0, 4);
	assert_int_equal(tvh_le32(p + 32),
			 tvt_crc32(tvt_crc32(0, h, 40), p + 40, 24));
	{
		struct iovec iov = { b.p, b.len };
		uint8_t enc[40];

		tvt_encode_chunk_header(enc, 9, TVT_KIND_RECORDS, 0, 0x55, b.len, &iov, 1);
		assert_memory_equal(enc, p, 40);
	}
	th_tvt_free(&t);
	rb_free(&b);
}

static void test_bad_file_headers(void **state)
{
	struct th_tvt t;
	struct recbuf b;
	struct tvt_reader r;
	char *copy;

	(void)state;
	make_sample(&t, &b);
	copy = malloc(t.len);
	assert_non_null(copy);

	assert_int_equal(tvt_reader_open_mem(&r, t.buf, 0), -TVH_ERR_TRUNCATED);
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, 10), -TVH_ERR_TRUNCATED);
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, 63), -TVH_ERR_TRUNCATED);
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, 70), -TVH_ERR_TRUNCATED); /* name cut */
	assert_int_equal(tvt_reader_open_mem(&r, "hello world, not a trace", 24), -TVH_ERR_MAGIC);

	memcpy(copy, t.buf, t.len);
	copy[0] = 'X';
	assert_int_equal(tvt_reader_open_mem(&r, copy, t.len), -TVH_ERR_MAGIC);

	memcpy(copy, t.buf, t.len);
	tvh_put_le16((uint8_t *)copy + 8, 2);
	assert_int_equal(tvt_reader_open_mem(&r, copy, t.len), -TVH_ERR_VERSION);

	memcpy(copy, t.buf, t.len);
	tvh_put_le16((uint8_t *)copy + 10, 68);       /* not a multiple of 8 */
	assert_int_equal(tvt_reader_open_mem(&r, copy, t.len), -TVH_ERR_HEADER);

	memcpy(copy, t.buf, t.len);
	tvh_put_le16((uint8_t *)copy + 36, 100);      /* name longer than the header */
	assert_int_equal(tvt_reader_open_mem(&r, copy, t.len), -TVH_ERR_HEADER);

	memcpy(copy, t.buf, t.len);
	tvh_put_le16((uint8_t *)copy + 36, TVT_MAX_NAME + 1);
	assert_int_equal(tvt_reader_open_mem(&r, copy, t.len), -TVH_ERR_HEADER);

	/* A larger header (future fields) is skipped over. */
	{
		size_t n = t.len + 8;
		uint8_t *big = calloc(1, n);

		assert_non_null(big);
		memcpy(big, t.buf, 80);
		memcpy(big + 88, t.buf + 80, t.len - 80);
		tvh_put_le16(big + 10, 88);
		assert_int_equal(tvt_reader_open_mem(&r, big, n), 0);
		check_sample(&r, &b);
		tvt_reader_close(&r);
		free(big);
	}

	{
		char *missing = th_path("does-not-exist.tvt");

		assert_int_equal(tvt_reader_open(&r, missing), -TVH_ERR_IO);
		free(missing);
		assert_int_equal(tvt_reader_open(&r, th_dir()), -TVH_ERR_IO);
	}
	{
		char *empty = th_path("empty.tvt");

		th_write_file(empty, "", 0);
		assert_int_equal(tvt_reader_open(&r, empty), -TVH_ERR_TRUNCATED);
		free(empty);
	}
	free(copy);
	th_tvt_free(&t);
	rb_free(&b);
}

static void test_truncated_chunks(void **state)
{
	struct th_tvt t;
	struct recbuf b;
	struct tvt_reader r;
	struct tvt_chunk c;

	(void)state;
	make_sample(&t, &b);
	/* Cut inside the first chunk's payload: its start is returned. */
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, 80 + 40 + 10), 0);
	assert_int_equal(tvt_next_chunk(&r, &c), -TVH_ERR_TRUNCATED);
	assert_true(c.truncated);
	assert_non_null(c.payload);
	assert_int_equal(c.length, 10);
	assert_int_equal(c.cpu, 3);
	assert_int_equal(tvt_next_chunk(&r, &c), 0);
	tvt_reader_close(&r);
	/* Cut inside the header. */
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, 80 + 20), 0);
	assert_int_equal(tvt_next_chunk(&r, &c), -TVH_ERR_TRUNCATED);
	assert_true(c.truncated);
	assert_null(c.payload);
	assert_int_equal(c.file_offset, 80);
	assert_int_equal(tvt_next_chunk(&r, &c), 0);
	tvt_reader_close(&r);
	/* Final padding missing: still fine. */
	{
		struct th_tvt t2;
		uint8_t pt[3] = { 1, 2, 3 };

		th_tvt_begin(&t2, "", 1);
		th_tvt_chunk(&t2, 0, TVT_KIND_PT, 0, 0, pt, 3);
		th_tvt_end(&t2);
		assert_int_equal(tvt_reader_open_mem(&r, t2.buf, t2.len - 5), 0);
		assert_int_equal(tvt_next_chunk(&r, &c), 1);
		assert_int_equal(c.length, 3);
		assert_int_equal(tvt_next_chunk(&r, &c), 0);
		tvt_reader_close(&r);
		th_tvt_free(&t2);
	}
	th_tvt_free(&t);
	rb_free(&b);
}

static void test_crc_mismatch_resyncs(void **state)
{
	struct th_tvt t;
	struct recbuf b;
	struct tvt_reader r;
	struct tvt_chunk c;

	(void)state;
	make_sample(&t, &b);
	t.buf[80 + 40 + 3] ^= 0x40;             /* a payload byte of chunk 1 */
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, t.len), 0);
	assert_int_equal(tvt_next_chunk(&r, &c), -TVH_ERR_CRC);
	assert_int_equal(c.cpu, 3);
	assert_int_equal(c.kind, TVT_KIND_RECORDS);
	assert_int_equal(tvt_next_chunk(&r, &c), 1);
	assert_int_equal(c.kind, TVT_KIND_PT);
	assert_int_equal(c.skipped, 40 + b.len - 8);   /* from 8 past the bad header */
	assert_int_equal(tvt_next_chunk(&r, &c), 1);
	assert_int_equal(c.kind, TVT_KIND_RING);
	assert_int_equal(c.skipped, 0);
	assert_int_equal(tvt_next_chunk(&r, &c), 1);
	assert_int_equal(tvt_next_chunk(&r, &c), 0);
	tvt_reader_close(&r);
	th_tvt_free(&t);
	rb_free(&b);
}

static void test_garbage_and_bad_headers_resync(void **state)
{
	struct th_tvt t;
	struct recbuf b;
	struct tvt_reader r;
	struct tvt_chunk c;
	size_t n;
	uint8_t *g;

	(void)state;
	make_sample(&t, &b);
	/* 24 bytes of garbage between the file header and the first chunk. */
	n = t.len + 24;
	g = malloc(n);
	assert_non_null(g);
	memcpy(g, t.buf, 80);
	memset(g + 80, 0x5a, 24);
	memcpy(g + 104, t.buf + 80, t.len - 80);
	assert_int_equal(tvt_reader_open_mem(&r, g, n), 0);
	assert_int_equal(tvt_next_chunk(&r, &c), -TVH_ERR_MAGIC);
	assert_int_equal(c.file_offset, 80);
	assert_int_equal(tvt_next_chunk(&r, &c), 1);
	assert_int_equal(c.file_offset, 104);
	assert_int_equal(c.skipped, 16);
	assert_int_equal(c.kind, TVT_KIND_RECORDS);
	tvt_reader_close(&r);
	free(g);

	/* A huge length, a bad hdr_size, a records length not a multiple of 8. */
	{
		static const struct { unsigned off; unsigned width; uint64_t v; } bad[] = {
			{ 24, 8, 1ull << 40 }, { 10, 2, 48 }, { 24, 8, 13 },
		};

		for (unsigned i = 0; i < 3; i++) {
			uint8_t *copy = malloc(t.len);

			assert_non_null(copy);
			memcpy(copy, t.buf, t.len);
			if (bad[i].width == 8)
				tvh_put_le64(copy + 80 + bad[i].off, bad[i].v);
			else
				tvh_put_le16(copy + 80 + bad[i].off, (uint16_t)bad[i].v);
			assert_int_equal(tvt_reader_open_mem(&r, copy, t.len), 0);
			assert_int_equal(tvt_next_chunk(&r, &c), -TVH_ERR_HEADER);
			assert_int_equal(tvt_next_chunk(&r, &c), 1);
			assert_int_equal(c.kind, TVT_KIND_PT);
			tvt_reader_close(&r);
			free(copy);
		}
	}
	/* Nothing valid after the damage: end of file, bytes counted. */
	{
		uint8_t *copy = malloc(t.len);

		assert_non_null(copy);
		memcpy(copy, t.buf, t.len);
		memset(copy + 80, 0, t.len - 80);
		assert_int_equal(tvt_reader_open_mem(&r, copy, t.len), 0);
		assert_int_equal(tvt_next_chunk(&r, &c), -TVH_ERR_MAGIC);
		assert_int_equal(tvt_next_chunk(&r, &c), 0);
		assert_int_equal(r.skipped_total, t.len - 80 - 8);
		tvt_reader_close(&r);
		free(copy);
	}
	th_tvt_free(&t);
	rb_free(&b);
}

static void test_unknown_kind_passes(void **state)
{
	struct th_tvt t;
	struct tvt_reader r;
	struct tvt_chunk c;
	uint8_t hdr[40], payload[5] = { 1, 2, 3, 4, 5 };
	struct iovec iov = { payload, 5 };

	(void)state;
	th_tvt_begin(&t, "", 0);
	/* The writer refuses unknown kinds; a newer writer may produce them. */
	assert_int_equal(tvt_write_chunk(&t.w, 0, 9, 0, 0, payload, 5), -TVH_ERR_INVALID);
	tvt_encode_chunk_header(hdr, 0, 9, 0, 0, 5, &iov, 1);
	fwrite(hdr, 1, 40, t.f);
	fwrite(payload, 1, 5, t.f);
	fwrite("\0\0\0", 1, 3, t.f);
	th_tvt_end(&t);
	assert_int_equal(tvt_reader_open_mem(&r, t.buf, t.len), 0);
	assert_int_equal(tvt_next_chunk(&r, &c), 1);
	assert_int_equal(c.kind, 9);
	assert_string_equal(tvt_kind_name(c.kind), "unknown");
	assert_int_equal(c.length, 5);
	assert_int_equal(tvt_next_chunk(&r, &c), 0);
	tvt_reader_close(&r);
	th_tvt_free(&t);
}

static void test_writer_validation(void **state)
{
	struct th_tvt t;
	char name[TVT_MAX_NAME + 2];
	uint8_t ring[128], small[8] = { 0 };
	struct tvt_writer w;
	struct tvt_file_info info = { .machine = name };

	(void)state;
	th_tvt_begin(&t, "x", 0);
	assert_int_equal(tvt_write_chunk(&t.w, 0, TVT_KIND_RECORDS, 0, 0, small, 7), -TVH_ERR_INVALID);
	assert_int_equal(tvt_write_chunk(&t.w, 0, TVT_KIND_RING, 0, 0, small, 8), -TVH_ERR_INVALID);
	assert_int_equal(tvt_write_chunk(&t.w, 0, TVT_KIND_PT, 0, 0, NULL, 8), -TVH_ERR_INVALID);
	assert_int_equal(tvt_write_chunk(&t.w, 0, TVT_KIND_PT, 0, 0, small,
					 TVT_MAX_PAYLOAD + 1), -TVH_ERR_INVALID);
	th_ring(ring, 0, 0, 0, 0, 0, 0);
	assert_int_equal(tvt_write_chunk(&t.w, 0, TVT_KIND_RING, 0, 0, ring, 128), 0);
	th_tvt_end(&t);
	th_tvt_free(&t);

	memset(name, 'n', sizeof(name));
	name[TVT_MAX_NAME + 1] = 0;
	assert_int_equal(tvt_writer_init(&w, stdout, &info), -TVH_ERR_INVALID);
	assert_int_equal(tvt_writer_init(NULL, stdout, &info), -TVH_ERR_INVALID);
	assert_int_equal(tvt_writer_finish(NULL), -TVH_ERR_INVALID);
}

static void test_writer_io_error_is_sticky(void **state)
{
	char buf[100];
	FILE *f = fmemopen(buf, sizeof(buf), "w");
	struct tvt_writer w;
	struct tvt_file_info info = { .machine = "m" };
	uint8_t payload[64] = { 0 };

	(void)state;
	assert_non_null(f);
	setvbuf(f, NULL, _IONBF, 0);
	assert_int_equal(tvt_writer_init(&w, f, &info), 0);   /* 72 bytes fit */
	assert_int_equal(tvt_write_chunk(&w, 0, TVT_KIND_PT, 0, 0, payload, 64), -TVH_ERR_IO);
	assert_int_equal(tvt_write_chunk(&w, 0, TVT_KIND_PT, 0, 0, payload, 1), -TVH_ERR_IO);
	assert_int_equal(tvt_writer_finish(&w), -TVH_ERR_IO);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32_vector),
		cmocka_unit_test(test_round_trip_memory),
		cmocka_unit_test(test_round_trip_file),
		cmocka_unit_test(test_byte_layout),
		cmocka_unit_test(test_bad_file_headers),
		cmocka_unit_test(test_truncated_chunks),
		cmocka_unit_test(test_crc_mismatch_resyncs),
		cmocka_unit_test(test_garbage_and_bad_headers_resync),
		cmocka_unit_test(test_unknown_kind_passes),
		cmocka_unit_test(test_writer_validation),
		cmocka_unit_test(test_writer_io_error_is_sticky),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
