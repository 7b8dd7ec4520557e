/* SPDX-License-Identifier: MIT */
/*
 * sha256.h - SHA-256 (FIPS 180-4, section 6.2) and HMAC-SHA256 (RFC 2104,
 * FIPS 198-1), for the export protocol's authenticated control messages
 * (docs/PROTOCOL.md, CONTROL).
 *
 * Pure and freestanding: no allocation, no floating point, only string.h.
 * Incremental (init / update / final) and one-shot forms.  None of these
 * functions fail: with valid pointers every input is accepted (NULL data
 * is allowed with length 0), so they return nothing.  Message length is
 * counted in bytes up to 2^61 - 1 (the 2^64-bit limit of FIPS 180-4).
 */
#ifndef TV_NET_SHA256_H
#define TV_NET_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32u
#define SHA256_BLOCK_LEN  64u

struct sha256_ctx {
	uint32_t h[8];          /* intermediate hash value H(i) */
	uint64_t bytes;         /* message bytes so far */
	uint8_t block[SHA256_BLOCK_LEN];
	uint32_t fill;          /* bytes in block */
};

void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *data, size_t len);
/* Writes the digest; c must be initialised again before reuse. */
void sha256_final(struct sha256_ctx *c, uint8_t out[SHA256_DIGEST_LEN]);
void sha256(const void *data, size_t len, uint8_t out[SHA256_DIGEST_LEN]);

struct hmac_sha256_ctx {
	struct sha256_ctx inner;
	struct sha256_ctx outer;  /* already fed K0 ^ opad */
};

/* Keys longer than the block size are hashed first (RFC 2104 section 2). */
void hmac_sha256_init(struct hmac_sha256_ctx *c, const void *key, size_t keylen);
void hmac_sha256_update(struct hmac_sha256_ctx *c, const void *data, size_t len);
void hmac_sha256_final(struct hmac_sha256_ctx *c, uint8_t out[SHA256_DIGEST_LEN]);
void hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
		 uint8_t out[SHA256_DIGEST_LEN]);

/*
 * Compare a[0..n) and b[0..n) in time that depends only on n, so a forger
 * learns nothing from how long a rejection takes.  True when equal.
 */
bool tv_ct_equal(const void *a, const void *b, size_t n);

#endif /* TV_NET_SHA256_H */
