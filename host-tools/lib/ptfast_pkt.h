/* SPDX-License-Identifier: MIT */
/*
 * ptfast_pkt.h - the packet layer of the fast PT decoder (ptfast.h):
 * one packet at a time from raw bytes, written from the SDM's packet
 * formats (Vol. 3C 33.4.2, "Packet Definitions").  Internal to ptfast.
 */
#ifndef TVH_PTFAST_PKT_H
#define TVH_PTFAST_PKT_H

#include <stddef.h>
#include <stdint.h>

enum ptf_pkt_type {
	PTF_PKT_PAD,
	PTF_PKT_TNT,        /* TNT-8 and long TNT: bits, nbits (oldest highest) */
	PTF_PKT_TIP,
	PTF_PKT_TIP_PGE,
	PTF_PKT_TIP_PGD,
	PTF_PKT_FUP,
	PTF_PKT_PIP,        /* payload: CR3, flags bit 0: NR */
	PTF_PKT_MODE_EXEC,  /* flags: bit 0 CS.L, bit 1 CS.D */
	PTF_PKT_MODE_TSX,   /* flags: bit 0 InTX, bit 1 TXAbort */
	PTF_PKT_PSB,
	PTF_PKT_PSBEND,
	PTF_PKT_OVF,
	PTF_PKT_TSC,
	PTF_PKT_MTC,
	PTF_PKT_CYC,
	PTF_PKT_CBR,
	PTF_PKT_TMA,
	PTF_PKT_VMCS,       /* payload: the VMCS base */
	PTF_PKT_STOP,
	PTF_PKT_MNT,
	PTF_PKT_PTW,        /* flags bit 0: IP (binds to a FUP) */
	PTF_PKT_EXSTOP,     /* flags bit 0: IP */
	PTF_PKT_MWAIT,
	PTF_PKT_PWRE,
	PTF_PKT_PWRX,
};

struct ptf_pkt {
	uint8_t type;       /* enum ptf_pkt_type */
	uint8_t size;       /* bytes */
	uint8_t ipc;        /* IP packets: IPBytes (SDM Table 33-11) */
	uint8_t nbits;      /* TNT */
	uint8_t flags;
	uint64_t payload;   /* IP bytes as encoded, TNT bits, CR3, VMCS */
};

/* IP-compression values (SDM 3C Table 33-11). */
enum {
	PTF_IPC_SUPPRESSED = 0,
	PTF_IPC_UPDATE_16 = 1,
	PTF_IPC_UPDATE_32 = 2,
	PTF_IPC_SEXT_48 = 3,
	PTF_IPC_UPDATE_48 = 4,
	PTF_IPC_FULL = 6,
};

/*
 * ptf_pkt_decode - the packet at p (p < end).  Returns its size, or
 * -pte_eos (it runs past end), -pte_bad_opc (no such packet),
 * -pte_bad_packet (reserved payload: IPBytes 5/7, a MODE leaf other than
 * Exec/TSX, an empty long TNT, a PTW size 2/3, an over-long CYC).
 */
int ptf_pkt_decode(const uint8_t *p, const uint8_t *end, struct ptf_pkt *pk);

#endif /* TVH_PTFAST_PKT_H */
