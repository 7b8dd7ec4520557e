/* SPDX-License-Identifier: MIT */
/*
 * siphash.c - SipHash-2-4 (siphash.h), written from the paper's
 * specification (section 2): four 64-bit words of state initialised from
 * the key and the constants "somepseudorandomlygeneratedbytes", 2 SipRounds
 * per 8-byte message word, the last word carrying the length mod 256 in its
 * top byte, 4 SipRounds after xoring 0xff into v2.
 */
#include "net/siphash.h"

static uint64_t rotl(uint64_t x, unsigned b)
{
	return x << b | x >> (64 - b);
}

static uint64_t load64(const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* One SipRound (the paper's figure 2.1: ARX on (v0, v1) and (v2, v3)). */
#define SIPROUND(c)                                                             \
	do {                                                                    \
		(c)->v0 += (c)->v1; (c)->v1 = rotl((c)->v1, 13); (c)->v1 ^= (c)->v0; \
		(c)->v0 = rotl((c)->v0, 32);                                    \
		(c)->v2 += (c)->v3; (c)->v3 = rotl((c)->v3, 16); (c)->v3 ^= (c)->v2; \
		(c)->v0 += (c)->v3; (c)->v3 = rotl((c)->v3, 21); (c)->v3 ^= (c)->v0; \
		(c)->v2 += (c)->v1; (c)->v1 = rotl((c)->v1, 17); (c)->v1 ^= (c)->v2; \
		(c)->v2 = rotl((c)->v2, 32);                                    \
	} while (0)

static void compress(struct siphash_ctx *c, uint64_t m)
{
	c->v3 ^= m;
	SIPROUND(c);
	SIPROUND(c);
	c->v0 ^= m;
}

void siphash_init(struct siphash_ctx *c, const uint8_t key[SIPHASH_KEY_LEN])
{
	uint64_t k0 = load64(key), k1 = load64(key + 8);

	c->v0 = k0 ^ 0x736f6d6570736575ull;   /* "somepseu" */
	c->v1 = k1 ^ 0x646f72616e646f6dull;   /* "dorandom" */
	c->v2 = k0 ^ 0x6c7967656e657261ull;   /* "lygenera" */
	c->v3 = k1 ^ 0x7465646279746573ull;   /* "tedbytes" */
	c->tail = 0;
	c->bytes = 0;
}

void siphash_update(struct siphash_ctx *c, const void *data, size_t len)
{
	const uint8_t *p = data;
	unsigned fill = (unsigned)(c->bytes & 7);

	c->bytes += len;
	/* Complete a word begun by an earlier update. */
	while (fill && len) {
		c->tail |= (uint64_t)*p++ << (8 * fill);
		len--;
		if (++fill == 8) {
			compress(c, c->tail);
			c->tail = 0;
			fill = 0;
		}
	}
	for (; len >= 8; p += 8, len -= 8)
		compress(c, load64(p));
	for (unsigned i = 0; i < len; i++)
		c->tail |= (uint64_t)p[i] << (8 * (fill + i));
}

uint64_t siphash_final(struct siphash_ctx *c)
{
	compress(c, c->tail | c->bytes << 56);
	c->v2 ^= 0xff;
	SIPROUND(c);
	SIPROUND(c);
	SIPROUND(c);
	SIPROUND(c);
	return c->v0 ^ c->v1 ^ c->v2 ^ c->v3;
}

uint64_t siphash24(const uint8_t key[SIPHASH_KEY_LEN], const void *data, size_t len)
{
	struct siphash_ctx c;

	siphash_init(&c, key);
	siphash_update(&c, data, len);
	return siphash_final(&c);
}
