/* SPDX-License-Identifier: MIT */
/*
 * test_sha256.c - SHA-256 and HMAC-SHA256 (net/sha256.c): the FIPS 180-2
 * appendix B / NIST CSHA example vectors, the RFC 4231 HMAC test cases 1
 * to 7, incremental updates split at every offset equal to the one-shot
 * digest, padding boundaries (55, 56, 63, 64 bytes), a cross-check of
 * random messages and keys against `openssl dgst -sha256 -hmac` (skipped
 * when openssl is missing), and the constant-time comparison.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "net/sha256.h"

static void hex(const uint8_t *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void check_sha(const void *msg, size_t len, const char *want)
{
	uint8_t d[32];
	char h[65];

	sha256(msg, len, d);
	hex(d, 32, h);
	assert_string_equal(h, want);
}

static void test_nist_vectors(void **state)
{
	static const char two_block[] =
		"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	struct sha256_ctx c;
	uint8_t d[32], chunk[1000];
	char h[65];

	(void)state;
	check_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	check_sha(NULL, 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	check_sha(two_block, strlen(two_block),
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* One million 'a', fed in 1000-byte pieces. */
	memset(chunk, 'a', sizeof(chunk));
	sha256_init(&c);
	for (int i = 0; i < 1000; i++)
		sha256_update(&c, chunk, sizeof(chunk));
	sha256_final(&c, d);
	hex(d, 32, h);
	assert_string_equal(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* Python hashlib values for 'a' * n at the padding boundaries. */
static void test_padding_boundaries(void **state)
{
	static const struct { size_t n; const char *d; } v[] = {
		{ 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
		{ 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a" },
		{ 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34" },
		{ 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
		{ 65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0" },
	};
	char a[65];

	(void)state;
	memset(a, 'a', sizeof(a));
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		check_sha(a, v[i].n, v[i].d);
}

static void test_incremental_every_split(void **state)
{
	uint8_t msg[200], one[32], two[32];
	struct sha256_ctx c;

	(void)state;
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 7 + 3);
	sha256(msg, sizeof(msg), one);
	for (size_t split = 0; split <= sizeof(msg); split++) {
		sha256_init(&c);
		sha256_update(&c, msg, split);
		sha256_update(&c, msg + split, sizeof(msg) - split);
		sha256_final(&c, two);
		assert_memory_equal(one, two, 32);
	}
	/* Byte by byte. */
	sha256_init(&c);
	for (size_t i = 0; i < sizeof(msg); i++)
		sha256_update(&c, msg + i, 1);
	sha256_final(&c, two);
	assert_memory_equal(one, two, 32);
}

struct rfc4231 {
	uint8_t key[131];
	size_t keylen;
	const char *data;
	uint8_t dbuf[50];
	size_t datalen;
	const char *mac;      /* hex, possibly truncated (case 5) */
};

static void check_hmac(const void *key, size_t keylen, const void *data,
		       size_t len, const char *want)
{
	struct hmac_sha256_ctx c;
	uint8_t d[32], d2[32];
	char h[65];

	hmac_sha256(key, keylen, data, len, d);
	hex(d, 32, h);
	assert_int_equal(strncmp(h, want, strlen(want)), 0);
	/* Incremental in two halves gives the same tag. */
	hmac_sha256_init(&c, key, keylen);
	hmac_sha256_update(&c, data, len / 2);
	hmac_sha256_update(&c, (const uint8_t *)data + len / 2, len - len / 2);
	hmac_sha256_final(&c, d2);
	assert_memory_equal(d, d2, 32);
}

static void test_rfc4231(void **state)
{
	uint8_t k[131], dd[50];
	static const char tc6[] = "Test Using Larger Than Block-Size Key - Hash Key First";
	static const char tc7[] = "This is a test using a larger than block-size key and a "
		"larger than block-size data. The key needs to be hashed before "
		"being used by the HMAC algorithm.";

	(void)state;
	memset(k, 0x0b, 20);
	check_hmac(k, 20, "Hi There", 8,
		   "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	check_hmac("Jefe", 4, "what do ya want for nothing?", 28,
		   "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	memset(k, 0xaa, 20);
	memset(dd, 0xdd, 50);
	check_hmac(k, 20, dd, 50,
		   "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
	for (int i = 0; i < 25; i++)
		k[i] = (uint8_t)(i + 1);
	memset(dd, 0xcd, 50);
	check_hmac(k, 25, dd, 50,
		   "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
	memset(k, 0x0c, 20);
	check_hmac(k, 20, "Test With Truncation", 20, "a3b6167473100ee06e0c796c2955552b");
	memset(k, 0xaa, 131);
	check_hmac(k, 131, tc6, strlen(tc6),
		   "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
	check_hmac(k, 131, tc7, strlen(tc7),
		   "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

/* xorshift64*, seeded: the same messages every run. */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

/* The same tags as OpenSSL, an implementation independent of ours. */
static void test_openssl_cross_check(void **state)
{
	char dir[] = "/tmp/tv_sha256_XXXXXX";
	char path[64], cmd[256], line[256];
	int checked = 0;

	(void)state;
	if (system("openssl version >/dev/null 2>&1") != 0)
		skip();
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/msg", dir);
	for (int round = 0; round < 12; round++) {
		size_t len = (size_t)(next_rand() % 300);
		char key[24];
		uint8_t msg[300], d[32];
		char want[65];
		FILE *f;

		for (size_t i = 0; i < len; i++)
			msg[i] = (uint8_t)next_rand();
		/* Printable keys: openssl takes -hmac as a string. */
		for (size_t i = 0; i < sizeof(key) - 1; i++)
			key[i] = (char)('a' + next_rand() % 26);
		key[sizeof(key) - 1] = 0;
		f = fopen(path, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(msg, 1, len, f), len);
		fclose(f);

		snprintf(cmd, sizeof(cmd), "openssl dgst -sha256 -hmac %s -r %s", key, path);
		f = popen(cmd, "r");
		assert_non_null(f);
		assert_non_null(fgets(line, sizeof(line), f));
		pclose(f);
		hmac_sha256(key, strlen(key), msg, len, d);
		hex(d, 32, want);
		assert_int_equal(strncmp(line, want, 64), 0);

		snprintf(cmd, sizeof(cmd), "openssl dgst -sha256 -r %s", path);
		f = popen(cmd, "r");
		assert_non_null(f);
		assert_non_null(fgets(line, sizeof(line), f));
		pclose(f);
		sha256(msg, len, d);
		hex(d, 32, want);
		assert_int_equal(strncmp(line, want, 64), 0);
		checked++;
	}
	unlink(path);
	rmdir(dir);
	assert_int_equal(checked, 12);
}

static void test_ct_equal(void **state)
{
	uint8_t a[32], b[32];

	(void)state;
	memset(a, 0x5a, sizeof(a));
	memcpy(b, a, sizeof(b));
	assert_true(tv_ct_equal(a, b, 32));
	assert_true(tv_ct_equal(a, b, 0));
	for (int i = 0; i < 32; i++) {
		b[i] ^= 0x80;
		assert_false(tv_ct_equal(a, b, 32));
		b[i] ^= 0x80;
	}
	b[31] ^= 1;
	assert_true(tv_ct_equal(a, b, 31));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nist_vectors),
		cmocka_unit_test(test_padding_boundaries),
		cmocka_unit_test(test_incremental_every_split),
		cmocka_unit_test(test_rfc4231),
		cmocka_unit_test(test_openssl_cross_check),
		cmocka_unit_test(test_ct_equal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
