/* SPDX-License-Identifier: MIT */
/*
 * rawframe.h - a complete Ethernet + IPv4 + UDP frame built by hand, for
 * the raw transmit benchmark of the link self-test (net_bench, docs/NET.md
 * "Raw transmit rate"): the same driver sends the same-size frame over and
 * over without lwIP or the export protocol, which gives the emulator's (or
 * NIC's) frame-rate ceiling to set the exporter's goodput against.
 *
 * Layout (RFC 791, RFC 768): 14-byte Ethernet II header (type 0x0800),
 * 20-byte IPv4 header (version 4, IHL 5, DF set, TTL 64, protocol 17,
 * header checksum filled in), 8-byte UDP header with checksum 0 ("no
 * checksum", allowed over IPv4), then the payload: a 32-bit big-endian
 * sequence number followed by a fixed byte pattern (byte i = i & 0xff).
 * Addresses are host-order integers (10.0.2.15 = 0x0a00020f).
 */
#ifndef TV_RAWFRAME_H
#define TV_RAWFRAME_H

#include <stddef.h>
#include <stdint.h>

#define RAWFRAME_HDR_BYTES   42u      /* Ethernet 14 + IPv4 20 + UDP 8 */
#define RAWFRAME_PAYLOAD_MAX 1472u    /* 1500-byte MTU */
#define RAWFRAME_PAYLOAD_MIN 4u       /* the sequence number */

struct rawframe_addr {
	uint8_t dst_mac[6], src_mac[6];
	uint32_t src_ip, dst_ip;
	uint16_t src_port, dst_port;
};

/* rawframe_ip_checksum - the Internet checksum (RFC 1071) of len bytes. */
uint16_t rawframe_ip_checksum(const uint8_t *p, size_t len);

/*
 * rawframe_build - frame number seq with payload bytes of payload into
 * buf.  Returns the frame length, or 0 if cap is too small or payload is
 * outside RAWFRAME_PAYLOAD_MIN..RAWFRAME_PAYLOAD_MAX.
 */
size_t rawframe_build(uint8_t *buf, size_t cap, const struct rawframe_addr *a,
		      uint32_t seq, size_t payload);

/*
 * rawframe_set_seq - change the sequence number (and the IPv4
 * identification and checksum with it) of a frame rawframe_build made.
 */
void rawframe_set_seq(uint8_t *frame, uint32_t seq);

#endif /* TV_RAWFRAME_H */
