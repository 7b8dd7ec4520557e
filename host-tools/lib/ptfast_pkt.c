/* SPDX-License-Identifier: MIT */
/*
 * ptfast_pkt.c - PT packets from bytes (see ptfast_pkt.h).  Opcodes and
 * sizes: SDM Vol. 3C 33.4.2 (Table 33-? "Packet opcodes" per packet).
 */
#include <intel-pt.h>
#include <string.h>

#include "host-tools/lib/ptfast_pkt.h"

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Index of the highest set bit of v (v != 0). */
static unsigned msb(uint64_t v)
{
	return 63u - (unsigned)__builtin_clzll(v);
}

static int fixed(const uint8_t *p, const uint8_t *end, struct ptf_pkt *pk,
		 enum ptf_pkt_type t, unsigned size, unsigned pl_at, unsigned pl_len)
{
	if ((size_t)(end - p) < size)
		return -pte_eos;
	pk->type = (uint8_t)t;
	pk->size = (uint8_t)size;
	pk->payload = pl_len ? le(p + pl_at, pl_len) : 0;
	return (int)size;
}

/* TIP, TIP.PGE, TIP.PGD, FUP: the IPBytes field picks the payload size. */
static int ip_packet(const uint8_t *p, const uint8_t *end, struct ptf_pkt *pk,
		     enum ptf_pkt_type t)
{
	static const int8_t bytes[8] = { 0, 2, 4, 6, 6, -1, 8, -1 };
	unsigned ipc = p[0] >> 5;

	if (bytes[ipc] < 0)
		return -pte_bad_packet;
	pk->ipc = (uint8_t)ipc;
	return fixed(p, end, pk, t, 1u + (unsigned)bytes[ipc], 1, (unsigned)bytes[ipc]);
}

static int ext_packet(const uint8_t *p, const uint8_t *end, struct ptf_pkt *pk)
{
	static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };
	uint8_t op;
	int n;

	if (end - p < 2)
		return -pte_eos;
	op = p[1];
	switch (op) {
	case 0x82:
		if (end - p < 16)
			return -pte_eos;
		if (memcmp(p, psb, 16))
			return -pte_bad_packet;
		return fixed(p, end, pk, PTF_PKT_PSB, 16, 0, 0);
	case 0x23:
		return fixed(p, end, pk, PTF_PKT_PSBEND, 2, 0, 0);
	case 0xa3:
		n = fixed(p, end, pk, PTF_PKT_TNT, 8, 2, 6);
		if (n < 0)
			return n;
		if (!pk->payload)
			return -pte_bad_packet;
		pk->nbits = (uint8_t)msb(pk->payload);
		pk->payload &= (1ull << pk->nbits) - 1;
		return n;
	case 0x43:
		n = fixed(p, end, pk, PTF_PKT_PIP, 8, 2, 6);
		if (n < 0)
			return n;
		/* Bit 0 is NR; CR3[51:5] sits in bits 47:1. */
		pk->flags = pk->payload & 1;
		pk->payload = (pk->payload >> 1) << 5;
		return n;
	case 0xf3:
		return fixed(p, end, pk, PTF_PKT_OVF, 2, 0, 0);
	case 0x03:
		return fixed(p, end, pk, PTF_PKT_CBR, 4, 2, 1);
	case 0x83:
		return fixed(p, end, pk, PTF_PKT_STOP, 2, 0, 0);
	case 0x73:
		n = fixed(p, end, pk, PTF_PKT_TMA, 7, 2, 5);
		/*
		 * Byte 4 is reserved and FastCounter is 9 bits (byte 5, bit 0 of
		 * byte 6): libipt refuses a TMA with any other bit set.
		 */
		if (n >= 0 && (p[4] || (p[6] & 0xfe)))
			return -pte_bad_packet;
		return n;
	case 0xc8:
		n = fixed(p, end, pk, PTF_PKT_VMCS, 7, 2, 5);
		if (n >= 0)
			pk->payload <<= 12;
		return n;
	case 0xc3:
		if (end - p < 3)
			return -pte_eos;
		if (p[2] != 0x88)
			return -pte_bad_opc;
		return fixed(p, end, pk, PTF_PKT_MNT, 11, 3, 8);
	case 0x62:
	case 0xe2:
		n = fixed(p, end, pk, PTF_PKT_EXSTOP, 2, 0, 0);
		pk->flags = op >> 7;
		return n;
	case 0xc2:
		return fixed(p, end, pk, PTF_PKT_MWAIT, 10, 2, 8);
	case 0x22:
		return fixed(p, end, pk, PTF_PKT_PWRE, 4, 2, 2);
	case 0xa2:
		return fixed(p, end, pk, PTF_PKT_PWRX, 7, 2, 5);
	default:
		break;
	}
	if ((op & 0x1f) == 0x12) {     /* PTW: IP bit 7, PayloadBytes 6:5 */
		unsigned pb = (op >> 5) & 3;

		if (pb > 1)
			return -pte_bad_packet;
		n = fixed(p, end, pk, PTF_PKT_PTW, pb ? 10 : 6, 2, pb ? 8 : 4);
		pk->flags = op >> 7;
		return n;
	}
	return -pte_bad_opc;
}

int ptf_pkt_decode(const uint8_t *p, const uint8_t *end, struct ptf_pkt *pk)
{
	uint8_t b = p[0];

	pk->ipc = 0;
	pk->nbits = 0;
	pk->flags = 0;
	pk->payload = 0;
	if (b == 0x00)
		return fixed(p, end, pk, PTF_PKT_PAD, 1, 0, 0);
	if (b == 0x02)
		return ext_packet(p, end, pk);
	if (!(b & 1)) {                /* TNT-8: stop bit, then the bits */
		pk->type = PTF_PKT_TNT;
		pk->size = 1;
		pk->nbits = (uint8_t)(msb(b) - 1);
		pk->payload = (b >> 1) & ((1u << pk->nbits) - 1);
		return 1;
	}
	if ((b & 3) == 3) {            /* CYC: Exp bit 2, then bit 0 of each byte */
		unsigned size = 1;

		if (b & 4) {
			for (;;) {
				if (p + size >= end)
					return -pte_eos;
				/* 5 + 7 bits a byte: 9 bytes hold 61, a 10th
				 * would pass 64 (libipt refuses it too). */
				if (++size > 9)
					return -pte_bad_packet;
				if (!(p[size - 1] & 1))
					break;
			}
		}
		pk->type = PTF_PKT_CYC;
		pk->size = (uint8_t)size;
		return (int)size;
	}
	switch (b & 0x1f) {
	case 0x0d:
		return ip_packet(p, end, pk, PTF_PKT_TIP);
	case 0x11:
		return ip_packet(p, end, pk, PTF_PKT_TIP_PGE);
	case 0x01:
		return ip_packet(p, end, pk, PTF_PKT_TIP_PGD);
	case 0x1d:
		return ip_packet(p, end, pk, PTF_PKT_FUP);
	default:
		break;
	}
	switch (b) {
	case 0x19:
		return fixed(p, end, pk, PTF_PKT_TSC, 8, 1, 7);
	case 0x59:
		return fixed(p, end, pk, PTF_PKT_MTC, 2, 1, 1);
	case 0x99: {
		int n = fixed(p, end, pk, PTF_PKT_MODE_EXEC, 2, 1, 1);
		unsigned leaf;

		if (n < 0)
			return n;
		leaf = (unsigned)(pk->payload >> 5) & 7;
		pk->flags = pk->payload & 3;
		if (leaf == 1)
			pk->type = PTF_PKT_MODE_TSX;
		else if (leaf != 0)
			return -pte_bad_packet;
		return n;
	}
	default:
		return -pte_bad_opc;
	}
}
