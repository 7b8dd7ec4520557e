/* SPDX-License-Identifier: MIT */
/*
 * selftest.c - record generator of the link self-test.
 */
#include "net/selftest.h"

#include "vmm/trace/serial_enc.h"

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

void selftest_record(uint8_t out[SELFTEST_REC_BYTES], uint32_t seq, uint32_t total)
{
	uint32_t x = seq * 2654435761u + 1;

	put32(out, seq);
	put32(out + 4, total);
	for (int i = 0; i < 5; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		put32(out + 8 + 4 * i, x);
	}
	put32(out + 28, trace_serial_crc32(0, out, 28));
}

size_t selftest_datagram(uint8_t *buf, size_t cap, uint32_t session, uint32_t first,
			 uint32_t count, uint32_t total)
{
	size_t len = SELFTEST_HDR_BYTES + (size_t)count * SELFTEST_REC_BYTES;

	if (count > SELFTEST_PER_DGRAM || cap < len)
		return 0;
	put32(buf, SELFTEST_MAGIC);
	put32(buf + 4, session);
	put32(buf + 8, first);
	put32(buf + 12, count | (uint32_t)SELFTEST_REC_BYTES << 16);
	for (uint32_t i = 0; i < count; i++)
		selftest_record(buf + SELFTEST_HDR_BYTES + i * SELFTEST_REC_BYTES, first + i, total);
	return len;
}
