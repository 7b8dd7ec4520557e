/* SPDX-License-Identifier: MIT */
/*
 * siphash.h - SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast
 * short-input PRF", 2012), the MAC planned for the export protocol's
 * authenticated data path (docs/PROTOCOL.md, "Threat model").
 *
 * Chosen because it needs only 64-bit additions, rotations and xors: no
 * SSE, no multiplier, no table (so no cache-timing leak), which suits the
 * hypervisor's -mgeneral-regs-only build.  A 128-bit key, a 64-bit tag.
 *
 * Pure and freestanding: no allocation, only stdint/stddef.  Incremental
 * (init / update / final) and one-shot forms; none fails (NULL data is
 * allowed with length 0).
 */
#ifndef TV_NET_SIPHASH_H
#define TV_NET_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define SIPHASH_KEY_LEN 16u
#define SIPHASH_TAG_LEN 8u

struct siphash_ctx {
	uint64_t v0, v1, v2, v3;
	uint64_t tail;          /* up to 7 bytes not yet compressed, little endian */
	uint64_t bytes;         /* message bytes so far (its low byte ends the input) */
};

void siphash_init(struct siphash_ctx *c, const uint8_t key[SIPHASH_KEY_LEN]);
void siphash_update(struct siphash_ctx *c, const void *data, size_t len);
uint64_t siphash_final(struct siphash_ctx *c);
uint64_t siphash24(const uint8_t key[SIPHASH_KEY_LEN], const void *data, size_t len);

#endif /* TV_NET_SIPHASH_H */
