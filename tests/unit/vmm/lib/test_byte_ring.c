/* SPDX-License-Identifier: MIT */
/*
 * test_byte_ring.c - the single-producer, single-consumer byte ring
 * (vmm/lib/byte_ring.c): write keeps the oldest and wraps, read takes
 * oldest first, and the network exporter's side (peek at any held offset,
 * consume up to an offset) gives room back only when it releases it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "vmm/lib/byte_ring.h"

static void test_byte_ring(void **state)
{
	static uint8_t mem[16];
	struct byte_ring b;
	uint8_t out[16];

	(void)state;
	assert_int_equal(byte_ring_init(&b, mem, 12), BYTE_RING_ERR_INVAL);
	assert_int_equal(byte_ring_init(&b, NULL, 16), BYTE_RING_ERR_INVAL);
	assert_int_equal(byte_ring_init(&b, mem, 16), 0);
	assert_int_equal(byte_ring_write(&b, (const uint8_t *)"0123456789", 10), 10);
	assert_int_equal(byte_ring_read(&b, out, 8), 8);
	assert_memory_equal(out, "01234567", 8);
	/* wraps: 2 held, 14 free */
	assert_int_equal(byte_ring_write(&b, (const uint8_t *)"abcdefghijklmnopq", 17), 14);
	assert_int_equal(byte_ring_read(&b, out, sizeof(out)), 16);
	assert_memory_equal(out, "89abcdefghijklmn", 16);
	assert_int_equal(byte_ring_read(&b, out, sizeof(out)), 0);
	assert_int_equal(byte_ring_write(&b, NULL, 0), 0);
}

/*
 * The network exporter's side: peek at any held offset without releasing,
 * release only up to an offset (its receiver's ack); the producer gets
 * room back only from consume.
 */
static void test_byte_ring_peek_consume(void **state)
{
	static uint8_t mem[16];
	struct byte_ring b;
	uint8_t out[16];

	(void)state;
	assert_int_equal(byte_ring_init(&b, mem, 16), 0);
	assert_int_equal(byte_ring_write(&b, (const uint8_t *)"0123456789abcdef", 16), 16);
	assert_int_equal(byte_ring_write(&b, (const uint8_t *)"X", 1), 0);   /* full */
	/* Peek anywhere in [tail, head), as often as wanted. */
	assert_int_equal(byte_ring_peek(&b, 4, out, 3), 3);
	assert_memory_equal(out, "456", 3);
	assert_int_equal(byte_ring_peek(&b, 10, out, sizeof(out)), 6);
	assert_memory_equal(out, "abcdef", 6);
	assert_int_equal(byte_ring_peek(&b, 4, out, 3), 3);
	assert_memory_equal(out, "456", 3);
	assert_int_equal(byte_ring_peek(&b, 16, out, 1), 0);    /* not written yet */
	assert_int_equal(byte_ring_tail(&b), 0);
	assert_int_equal(byte_ring_head(&b), 16);
	/* Release: never past head, never backwards. */
	assert_int_equal(byte_ring_consume(&b, 17), BYTE_RING_ERR_INVAL);
	assert_int_equal(byte_ring_consume(&b, 6), 0);
	assert_int_equal(byte_ring_tail(&b), 6);
	assert_int_equal(byte_ring_consume(&b, 5), BYTE_RING_ERR_INVAL);
	assert_int_equal(byte_ring_consume(&b, 6), 0);          /* nothing to do */
	assert_int_equal(byte_ring_peek(&b, 5, out, 1), 0);     /* released */
	/* Exactly the released room comes back; the new bytes wrap. */
	assert_int_equal(byte_ring_write(&b, (const uint8_t *)"ghijklmnop", 10), 6);
	assert_int_equal(byte_ring_head(&b), 22);
	assert_int_equal(byte_ring_peek(&b, 14, out, sizeof(out)), 8);
	assert_memory_equal(out, "efghijkl", 8);
	/* Held bytes were not written over: offset 6 still reads '6'. */
	assert_int_equal(byte_ring_peek(&b, 6, out, 4), 4);
	assert_memory_equal(out, "6789", 4);
	/* read and consume share the tail. */
	assert_int_equal(byte_ring_read(&b, out, 2), 2);
	assert_memory_equal(out, "67", 2);
	assert_int_equal(byte_ring_tail(&b), 8);
	assert_int_equal(byte_ring_consume(&b, 22), 0);
	assert_int_equal(byte_ring_read(&b, out, sizeof(out)), 0);
	assert_int_equal(byte_ring_peek(NULL, 0, out, 1), 0);
	assert_int_equal(byte_ring_consume(NULL, 0), BYTE_RING_ERR_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_byte_ring),
		cmocka_unit_test(test_byte_ring_peek_consume),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
