/* SPDX-License-Identifier: MIT */
/*
 * le.h - little-endian loads and stores on byte pointers.
 *
 * The trace stream and the .tvt file are little endian and are read from
 * unaligned positions in mapped files; these helpers are the only way the
 * host tools touch multi-byte fields there.
 */
#ifndef TVH_LE_H
#define TVH_LE_H

#include <stdint.h>

static inline uint16_t tvh_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t tvh_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static inline uint64_t tvh_le64(const uint8_t *p)
{
	return (uint64_t)tvh_le32(p) | ((uint64_t)tvh_le32(p + 4) << 32);
}

static inline void tvh_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void tvh_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void tvh_put_le64(uint8_t *p, uint64_t v)
{
	tvh_put_le32(p, (uint32_t)v);
	tvh_put_le32(p + 4, (uint32_t)(v >> 32));
}

#endif /* TVH_LE_H */
