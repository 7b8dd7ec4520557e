/* SPDX-License-Identifier: MIT */
/*
 * selftest.h - the link self-test's record stream (docs/NET.md, "Link
 * self-test"): generated records the receiver can check one by one
 * without any state from the sender but the count.  Pure code: built into
 * tracevisor.efi and the unit tests; tests/qemu/net.sh checks the same
 * format in Python.
 *
 * Datagram, all fields little-endian:
 *   0  u32 magic "TVST"     4  u32 session (per boot)
 *   8  u32 first sequence  12  u16 record count, u16 record size (32)
 *   16 count records of 32 bytes:
 *        0 u32 seq   4 u32 total   8..27 payload   28 u32 CRC-32 of bytes 0..27
 * A datagram with record count 0 ends the test; its first-sequence field
 * holds the number of records sent.
 * payload: x = seq * 2654435761 + 1 (mod 2^32), then five times
 * x ^= x << 13, x ^= x >> 17, x ^= x << 5 and the 4 bytes of x.
 */
#ifndef TV_NET_SELFTEST_H
#define TV_NET_SELFTEST_H

#include <stddef.h>
#include <stdint.h>

#define SELFTEST_MAGIC      0x54535654u   /* "TVST" */
#define SELFTEST_HDR_BYTES  16
#define SELFTEST_REC_BYTES  32
#define SELFTEST_PER_DGRAM  40            /* 1296-byte datagrams: no IP fragments */

/* selftest_record - record seq of a test of total records into out. */
void selftest_record(uint8_t out[SELFTEST_REC_BYTES], uint32_t seq, uint32_t total);

/*
 * selftest_datagram - header plus records first..first+count-1 into buf.
 * count 0 writes the end marker (first = records sent).  Returns the
 * datagram's length, or 0 when count > SELFTEST_PER_DGRAM or cap is short.
 */
size_t selftest_datagram(uint8_t *buf, size_t cap, uint32_t session, uint32_t first,
			 uint32_t count, uint32_t total);

#endif /* TV_NET_SELFTEST_H */
