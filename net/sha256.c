/* SPDX-License-Identifier: MIT */
/*
 * sha256.c - SHA-256 from FIPS 180-4 (sections 4.1.2, 4.2.2, 5.1.1, 5.3.3,
 * 6.2.2) and HMAC from RFC 2104; see sha256.h.
 */
#include "net/sha256.h"

#include <string.h>

/*
 * FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the
 * cube roots of the first 64 primes.
 */
static const uint32_t K[64] = {
	0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u,
	0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
	0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u,
	0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
	0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu,
	0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
	0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
	0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
	0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u,
	0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
	0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u,
	0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
	0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u,
	0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
	0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u,
	0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u,
};

/* FIPS 180-4 5.3.3: the square roots of the first 8 primes. */
static const uint32_t H0[8] = {
	0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
	0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u,
};

static uint32_t rotr(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

/* FIPS 180-4 4.1.2, functions (4.2) to (4.7). */
static uint32_t ch(uint32_t x, uint32_t y, uint32_t z) { return (x & y) ^ (~x & z); }
static uint32_t maj(uint32_t x, uint32_t y, uint32_t z) { return (x & y) ^ (x & z) ^ (y & z); }
static uint32_t bsig0(uint32_t x) { return rotr(x, 2) ^ rotr(x, 13) ^ rotr(x, 22); }
static uint32_t bsig1(uint32_t x) { return rotr(x, 6) ^ rotr(x, 11) ^ rotr(x, 25); }
static uint32_t ssig0(uint32_t x) { return rotr(x, 7) ^ rotr(x, 18) ^ (x >> 3); }
static uint32_t ssig1(uint32_t x) { return rotr(x, 17) ^ rotr(x, 19) ^ (x >> 10); }

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* FIPS 180-4 6.2.2: one 512-bit block. */
static void compress(uint32_t h[8], const uint8_t *blk)
{
	uint32_t w[64], a, b, c, d, e, f, g, hh, t1, t2;
	unsigned t;

	for (t = 0; t < 16; t++)
		w[t] = be32(blk + 4 * t);
	for (t = 16; t < 64; t++)
		w[t] = ssig1(w[t - 2]) + w[t - 7] + ssig0(w[t - 15]) + w[t - 16];
	a = h[0]; b = h[1]; c = h[2]; d = h[3];
	e = h[4]; f = h[5]; g = h[6]; hh = h[7];
	for (t = 0; t < 64; t++) {
		t1 = hh + bsig1(e) + ch(e, f, g) + K[t] + w[t];
		t2 = bsig0(a) + maj(a, b, c);
		hh = g; g = f; f = e; e = d + t1;
		d = c; c = b; b = a; a = t1 + t2;
	}
	h[0] += a; h[1] += b; h[2] += c; h[3] += d;
	h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void sha256_init(struct sha256_ctx *c)
{
	memcpy(c->h, H0, sizeof(H0));
	c->bytes = 0;
	c->fill = 0;
}

void sha256_update(struct sha256_ctx *c, const void *data, size_t len)
{
	const uint8_t *p = data;

	c->bytes += len;
	while (len) {
		size_t n = SHA256_BLOCK_LEN - c->fill;

		if (c->fill == 0 && len >= SHA256_BLOCK_LEN) {
			compress(c->h, p);
			p += SHA256_BLOCK_LEN;
			len -= SHA256_BLOCK_LEN;
			continue;
		}
		if (n > len)
			n = len;
		memcpy(c->block + c->fill, p, n);
		c->fill += (uint32_t)n;
		p += n;
		len -= n;
		if (c->fill == SHA256_BLOCK_LEN) {
			compress(c->h, c->block);
			c->fill = 0;
		}
	}
}

/* FIPS 180-4 5.1.1: a 1 bit, zeros, the 64-bit big-endian bit length. */
void sha256_final(struct sha256_ctx *c, uint8_t out[SHA256_DIGEST_LEN])
{
	uint64_t bits = c->bytes * 8;
	unsigned i;

	c->block[c->fill++] = 0x80;
	if (c->fill > SHA256_BLOCK_LEN - 8) {
		memset(c->block + c->fill, 0, SHA256_BLOCK_LEN - c->fill);
		compress(c->h, c->block);
		c->fill = 0;
	}
	memset(c->block + c->fill, 0, SHA256_BLOCK_LEN - 8 - c->fill);
	put_be32(c->block + 56, (uint32_t)(bits >> 32));
	put_be32(c->block + 60, (uint32_t)bits);
	compress(c->h, c->block);
	for (i = 0; i < 8; i++)
		put_be32(out + 4 * i, c->h[i]);
	memset(c, 0, sizeof(*c));
}

void sha256(const void *data, size_t len, uint8_t out[SHA256_DIGEST_LEN])
{
	struct sha256_ctx c;

	sha256_init(&c);
	sha256_update(&c, data, len);
	sha256_final(&c, out);
}

/* RFC 2104 section 2: K0 is the key padded (or hashed, then padded) to B bytes. */
void hmac_sha256_init(struct hmac_sha256_ctx *c, const void *key, size_t keylen)
{
	uint8_t k0[SHA256_BLOCK_LEN], pad[SHA256_BLOCK_LEN];
	unsigned i;

	memset(k0, 0, sizeof(k0));
	if (keylen > SHA256_BLOCK_LEN)
		sha256(key, keylen, k0);
	else if (keylen)
		memcpy(k0, key, keylen);
	for (i = 0; i < SHA256_BLOCK_LEN; i++)
		pad[i] = k0[i] ^ 0x36;   /* ipad */
	sha256_init(&c->inner);
	sha256_update(&c->inner, pad, sizeof(pad));
	for (i = 0; i < SHA256_BLOCK_LEN; i++)
		pad[i] = k0[i] ^ 0x5c;   /* opad */
	sha256_init(&c->outer);
	sha256_update(&c->outer, pad, sizeof(pad));
	memset(k0, 0, sizeof(k0));
	memset(pad, 0, sizeof(pad));
}

void hmac_sha256_update(struct hmac_sha256_ctx *c, const void *data, size_t len)
{
	sha256_update(&c->inner, data, len);
}

void hmac_sha256_final(struct hmac_sha256_ctx *c, uint8_t out[SHA256_DIGEST_LEN])
{
	uint8_t ih[SHA256_DIGEST_LEN];

	sha256_final(&c->inner, ih);
	sha256_update(&c->outer, ih, sizeof(ih));
	sha256_final(&c->outer, out);
	memset(ih, 0, sizeof(ih));
}

void hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
		 uint8_t out[SHA256_DIGEST_LEN])
{
	struct hmac_sha256_ctx c;

	hmac_sha256_init(&c, key, keylen);
	hmac_sha256_update(&c, data, len);
	hmac_sha256_final(&c, out);
}

bool tv_ct_equal(const void *a, const void *b, size_t n)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t diff = 0;
	size_t i;

	for (i = 0; i < n; i++)
		diff |= (uint8_t)(x[i] ^ y[i]);
	return diff == 0;
}
