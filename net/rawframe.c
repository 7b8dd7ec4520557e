/* SPDX-License-Identifier: MIT */
/*
 * rawframe.c - see rawframe.h.
 */
#include "net/rawframe.h"

#include <string.h>

#define ETH_HDR 14u
#define IP_HDR  20u

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

uint16_t rawframe_ip_checksum(const uint8_t *p, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffffu) + (sum >> 16);
	return (uint16_t)~sum;
}

/* IPv4 identification and header checksum for frame number seq. */
static void ip_seal(uint8_t *ip, uint32_t seq)
{
	put16(ip + 4, (uint16_t)seq);
	put16(ip + 10, 0);
	put16(ip + 10, rawframe_ip_checksum(ip, IP_HDR));
}

size_t rawframe_build(uint8_t *buf, size_t cap, const struct rawframe_addr *a,
		      uint32_t seq, size_t payload)
{
	size_t len = RAWFRAME_HDR_BYTES + payload;
	uint8_t *ip = buf + ETH_HDR, *udp = ip + IP_HDR, *data = udp + 8;

	if (!buf || !a || payload < RAWFRAME_PAYLOAD_MIN || payload > RAWFRAME_PAYLOAD_MAX ||
	    cap < len)
		return 0;
	memcpy(buf, a->dst_mac, 6);
	memcpy(buf + 6, a->src_mac, 6);
	put16(buf + 12, 0x0800);
	ip[0] = 0x45;                               /* version 4, 5 words */
	ip[1] = 0;                                  /* DSCP/ECN */
	put16(ip + 2, (uint16_t)(IP_HDR + 8 + payload));
	put16(ip + 6, 0x4000);                      /* DF, offset 0 */
	ip[8] = 64;                                 /* TTL */
	ip[9] = 17;                                 /* UDP */
	put32(ip + 12, a->src_ip);
	put32(ip + 16, a->dst_ip);
	put16(udp, a->src_port);
	put16(udp + 2, a->dst_port);
	put16(udp + 4, (uint16_t)(8 + payload));
	put16(udp + 6, 0);                          /* no checksum */
	for (size_t i = 4; i < payload; i++)
		data[i] = (uint8_t)i;
	rawframe_set_seq(buf, seq);
	return len;
}

void rawframe_set_seq(uint8_t *frame, uint32_t seq)
{
	uint8_t *ip = frame + ETH_HDR;

	put32(ip + IP_HDR + 8, seq);
	ip_seal(ip, seq);
}
