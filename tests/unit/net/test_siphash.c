/* SPDX-License-Identifier: MIT */
/*
 * test_siphash.c - SipHash-2-4 (net/siphash.c) against the reference
 * vectors of the SipHash paper (key 00..0f, message 00..len-1), and the
 * incremental form against the one-shot one for every split.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "net/siphash.h"

static uint8_t key[SIPHASH_KEY_LEN], msg[64];

static int setup(void **state)
{
	(void)state;
	for (unsigned i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)i;
	for (unsigned i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	return 0;
}

/* The paper's appendix A (15 bytes) and vectors.h entries 0, 1, 8, 63. */
static void test_vectors(void **state)
{
	(void)state;
	assert_int_equal(siphash24(key, msg, 0), 0x726fdb47dd0e0e31ull);
	assert_int_equal(siphash24(key, msg, 1), 0x74f839c593dc67fdull);
	assert_int_equal(siphash24(key, msg, 8), 0x93f5f5799a932462ull);
	assert_int_equal(siphash24(key, msg, 15), 0xa129ca6149be45e5ull);
	assert_int_equal(siphash24(key, msg, 63), 0x958a324ceb064572ull);
	assert_int_equal(siphash24(key, NULL, 0), 0x726fdb47dd0e0e31ull);
}

/* Any cut of the message into three updates gives the one-shot tag. */
static void test_incremental(void **state)
{
	(void)state;
	for (size_t len = 0; len <= sizeof(msg); len++) {
		uint64_t want = siphash24(key, msg, len);

		for (size_t a = 0; a <= len; a++)
			for (size_t b = a; b <= len; b += 3) {
				struct siphash_ctx c;

				siphash_init(&c, key);
				siphash_update(&c, msg, a);
				siphash_update(&c, msg + a, b - a);
				siphash_update(&c, msg + b, len - b);
				assert_int_equal(siphash_final(&c), want);
			}
	}
}

/* A different key or one changed bit gives a different tag. */
static void test_sensitive(void **state)
{
	uint8_t k2[SIPHASH_KEY_LEN], m2[64];
	uint64_t t = siphash24(key, msg, 64);

	(void)state;
	memcpy(k2, key, sizeof(k2));
	k2[15] ^= 0x80;
	assert_true(siphash24(k2, msg, 64) != t);
	memcpy(m2, msg, sizeof(m2));
	m2[33] ^= 1;
	assert_true(siphash24(key, m2, 64) != t);
	assert_true(siphash24(key, msg, 63) != t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_vectors, setup),
		cmocka_unit_test_setup(test_incremental, setup),
		cmocka_unit_test_setup(test_sensitive, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
