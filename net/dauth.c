/* SPDX-License-Identifier: MIT */
/*
 * dauth.c - per-session key, per-datagram tag, replay window (dauth.h).
 */
#include "net/dauth.h"

#include <string.h>

#include "net/sha256.h"

static void put64(uint8_t *p, uint64_t v)
{
	for (unsigned i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

void dauth_derive(const void *psk, size_t psklen, uint64_t session,
		  const uint8_t nonce_m[DAUTH_NONCE_LEN],
		  const uint8_t nonce_r[DAUTH_NONCE_LEN], uint8_t ks[SIPHASH_KEY_LEN])
{
	static const char label[] = "tvnp-data-v2";
	uint8_t in[sizeof(label) - 1 + 8 + 2 * DAUTH_NONCE_LEN], mac[SHA256_DIGEST_LEN];
	size_t n = 0;

	memcpy(in, label, sizeof(label) - 1);
	n += sizeof(label) - 1;
	put64(in + n, session);
	n += 8;
	memcpy(in + n, nonce_m, DAUTH_NONCE_LEN);
	n += DAUTH_NONCE_LEN;
	memcpy(in + n, nonce_r, DAUTH_NONCE_LEN);
	n += DAUTH_NONCE_LEN;
	hmac_sha256(psk, psklen, in, n, mac);
	memcpy(ks, mac, SIPHASH_KEY_LEN);
}

uint64_t dauth_tag(const uint8_t ks[SIPHASH_KEY_LEN], const void *buf, size_t len,
		   uint64_t pn)
{
	struct siphash_ctx c;
	uint8_t p[8];

	put64(p, pn);
	siphash_init(&c, ks);
	siphash_update(&c, buf, len);
	siphash_update(&c, p, sizeof(p));
	return siphash_final(&c);
}

int dauth_seal(uint8_t *buf, size_t len, size_t cap, const uint8_t ks[SIPHASH_KEY_LEN],
	       uint64_t pn)
{
	if (!buf || cap < DAUTH_TRAILER_LEN || len > cap - DAUTH_TRAILER_LEN || len > INT32_MAX)
		return DAUTH_ERR_SHORT;
	put64(buf + len, pn);
	put64(buf + len + 8, dauth_tag(ks, buf, len, pn));
	return (int)(len + DAUTH_TRAILER_LEN);
}

int dauth_open(const uint8_t *buf, size_t len, const uint8_t ks[SIPHASH_KEY_LEN],
	       struct dauth_window *w, uint64_t *pn)
{
	size_t body;
	uint64_t n, bit;

	if (!buf || len < DAUTH_TRAILER_LEN || len > INT32_MAX)
		return DAUTH_ERR_SHORT;
	body = len - DAUTH_TRAILER_LEN;
	n = get64(buf + body);
	/* One 64-bit comparison: no early exit byte by byte to time. */
	if (dauth_tag(ks, buf, body, n) != get64(buf + body + 8))
		return DAUTH_ERR_TAG;
	/* Authentic: now the window (RFC 4303 3.4.3's sliding window). */
	if (n == 0 || (w->top >= DAUTH_WINDOW && n <= w->top - DAUTH_WINDOW))
		return DAUTH_ERR_REPLAY;
	bit = n % DAUTH_WINDOW;
	if (n > w->top) {
		/* Slide: forget the numbers that leave the window. */
		uint64_t gap = n - w->top;

		if (gap >= DAUTH_WINDOW) {
			memset(w->bits, 0, sizeof(w->bits));
		} else {
			for (uint64_t k = w->top + 1; k < n; k++)
				w->bits[(k % DAUTH_WINDOW) / 64] &= ~(1ull << (k % 64));
		}
		w->top = n;
	} else if (w->bits[bit / 64] & (1ull << (bit % 64))) {
		return DAUTH_ERR_REPLAY;
	}
	w->bits[bit / 64] |= 1ull << (bit % 64);
	if (pn)
		*pn = n;
	return (int)body;
}
