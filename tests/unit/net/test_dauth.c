/* SPDX-License-Identifier: MIT */
/*
 * test_dauth.c - the authenticated data path's primitives (net/dauth.c):
 * key derivation, seal/open, forged and damaged datagrams, the replay
 * window (duplicates, reordering within it, too old, far ahead).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "net/dauth.h"
#include "net/proto.h"

static const uint8_t psk[] = "a pre-shared key of 32 bytes....";
static const uint8_t nm[DAUTH_NONCE_LEN] = { 1, 2, 3 }, nr[DAUTH_NONCE_LEN] = { 9, 8, 7 };

/* The key depends on every input; the same inputs give the same key. */
static void test_derive(void **state)
{
	uint8_t a[SIPHASH_KEY_LEN], b[SIPHASH_KEY_LEN];
	uint8_t n2[DAUTH_NONCE_LEN] = { 1, 2, 4 };

	(void)state;
	dauth_derive(psk, 32, 0x5eed, nm, nr, a);
	dauth_derive(psk, 32, 0x5eed, nm, nr, b);
	assert_memory_equal(a, b, sizeof(a));
	dauth_derive(psk, 32, 0x5eee, nm, nr, b);
	assert_memory_not_equal(a, b, sizeof(a));
	dauth_derive(psk, 32, 0x5eed, n2, nr, b);
	assert_memory_not_equal(a, b, sizeof(a));
	dauth_derive(psk, 32, 0x5eed, nm, n2, b);
	assert_memory_not_equal(a, b, sizeof(a));
	dauth_derive(psk, 31, 0x5eed, nm, nr, b);
	assert_memory_not_equal(a, b, sizeof(a));
	/* the nonces are not interchangeable (machine's first) */
	dauth_derive(psk, 32, 0x5eed, nr, nm, b);
	assert_memory_not_equal(a, b, sizeof(a));
}

/* A sealed HEARTBEAT opens to itself; any changed bit or another key does not. */
static void test_seal_open(void **state)
{
	uint8_t ks[SIPHASH_KEY_LEN], k2[SIPHASH_KEY_LEN], b[TVP_MAX_DATAGRAM + DAUTH_TRAILER_LEN];
	uint8_t c[sizeof(b)];
	struct tvp_heartbeat h = { .tsc = 77, .hb_seq = 3 };
	struct dauth_window w;
	uint64_t pn = 0;
	int len = proto_encode_heartbeat(b, sizeof(b), 0x5eed, &h, NULL), sl;

	(void)state;
	assert_true(len > 0);
	dauth_derive(psk, 32, 0x5eed, nm, nr, ks);
	dauth_derive(psk, 32, 0x5eed, nr, nm, k2);
	sl = dauth_seal(b, (size_t)len, sizeof(b), ks, 1);
	assert_int_equal(sl, len + (int)DAUTH_TRAILER_LEN);
	for (int i = 0; i < sl * 8; i++) {
		memset(&w, 0, sizeof(w));
		memcpy(c, b, (size_t)sl);
		c[i / 8] ^= (uint8_t)(1u << (i % 8));
		assert_int_equal(dauth_open(c, (size_t)sl, ks, &w, &pn), DAUTH_ERR_TAG);
		assert_int_equal(w.top, 0);          /* a forged datagram moves nothing */
	}
	memset(&w, 0, sizeof(w));
	assert_int_equal(dauth_open(b, (size_t)sl, k2, &w, &pn), DAUTH_ERR_TAG);
	assert_int_equal(dauth_open(b, (size_t)sl - 1, ks, &w, &pn), DAUTH_ERR_TAG);
	assert_int_equal(dauth_open(b, DAUTH_TRAILER_LEN - 1, ks, &w, &pn), DAUTH_ERR_SHORT);
	assert_int_equal(dauth_open(b, (size_t)sl, ks, &w, &pn), len);
	assert_int_equal(pn, 1);
	/* no room for the trailer */
	assert_int_equal(dauth_seal(b, (size_t)len, (size_t)len + 15, ks, 2), DAUTH_ERR_SHORT);
}

/* Duplicates refused, reordering within the window taken once, old refused. */
static void test_window(void **state)
{
	uint8_t ks[SIPHASH_KEY_LEN], b[64];
	struct dauth_window w;
	uint64_t pn;

	(void)state;
	dauth_derive(psk, 32, 1, nm, nr, ks);
	memset(&w, 0, sizeof(w));
	memset(b, 0x42, sizeof(b));
#define OPEN(n) (dauth_seal(b, 40, sizeof(b), ks, (n)), dauth_open(b, 56, ks, &w, &pn))
	assert_int_equal(OPEN(0), DAUTH_ERR_REPLAY);          /* 0 is never sent */
	assert_int_equal(OPEN(5), 40);
	assert_int_equal(OPEN(5), DAUTH_ERR_REPLAY);
	assert_int_equal(OPEN(3), 40);                        /* late, inside the window */
	assert_int_equal(OPEN(3), DAUTH_ERR_REPLAY);
	assert_int_equal(OPEN(4), 40);
	assert_int_equal(OPEN(5 + DAUTH_WINDOW - 1), 40);     /* 5 is still remembered */
	assert_int_equal(OPEN(3 + DAUTH_WINDOW), 40);         /* 3's slot, 3 gone: not a replay */
	assert_int_equal(OPEN(5), DAUTH_ERR_REPLAY);
	assert_int_equal(OPEN(5 + DAUTH_WINDOW), 40);         /* 5 leaves the window */
	assert_int_equal(OPEN(5), DAUTH_ERR_REPLAY);          /* too old now */
	assert_int_equal(OPEN(6), 40);                        /* the oldest in the window, never seen */
	assert_int_equal(OPEN(6), DAUTH_ERR_REPLAY);
	assert_int_equal(OPEN(100000), 40);                   /* far ahead: window cleared */
	assert_int_equal(OPEN(100000 - DAUTH_WINDOW + 1), 40);
	assert_int_equal(OPEN(100000 - DAUTH_WINDOW), DAUTH_ERR_REPLAY);
	assert_int_equal(OPEN(100000 - 1), 40);
	assert_int_equal(OPEN(100000 - 1), DAUTH_ERR_REPLAY);
#undef OPEN
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_derive),
		cmocka_unit_test(test_seal_open),
		cmocka_unit_test(test_window),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
