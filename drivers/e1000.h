/* SPDX-License-Identifier: MIT */
/*
 * e1000.h - Intel 8254x / 82574 / I217 / I219 gigabit NICs, polled.
 *
 * Sources: "PCI/PCI-X Family of Gigabit Ethernet Controllers Software
 * Developer's Manual" (8254x SDM, rev. 4.0), "Intel 82574 GbE Controller
 * Family Datasheet", "Intel Ethernet Connection I217 / I219 Datasheet".
 * The three share the register offsets and the legacy descriptor formats
 * used here; they differ in how the station address is read (e1000_nvm).
 *
 * Only the 82540EM is exercised (QEMU's and Bochs's e1000 model it);
 * the 82574L and I21x paths follow the datasheets and are unverified on
 * silicon (docs/NET.md).
 */
#ifndef TV_E1000_H
#define TV_E1000_H

#include <stdint.h>

#include "drivers/nic.h"

/* Register offsets (8254x SDM 13.4; the same in the 82574 and I21x). */
#define E1000_CTRL     0x0000
#define E1000_STATUS   0x0008
#define E1000_EECD     0x0010
#define E1000_EERD     0x0014
#define E1000_CTRL_EXT 0x0018
#define E1000_ICR      0x00c0
#define E1000_IMS      0x00d0
#define E1000_IMC      0x00d8
#define E1000_RCTL     0x0100
#define E1000_TCTL     0x0400
#define E1000_TIPG     0x0410
#define E1000_RDBAL    0x2800
#define E1000_RDBAH    0x2804
#define E1000_RDLEN    0x2808
#define E1000_RDH      0x2810
#define E1000_RDT      0x2818
#define E1000_TDBAL    0x3800
#define E1000_TDBAH    0x3804
#define E1000_TDLEN    0x3808
#define E1000_TDH      0x3810
#define E1000_TDT      0x3818
#define E1000_MTA      0x5200   /* 128 dwords */
#define E1000_RAL0     0x5400
#define E1000_RAH0     0x5404

#define E1000_CTRL_SLU   (1u << 6)    /* set link up */
#define E1000_CTRL_RST   (1u << 26)   /* self-clearing device reset */
#define E1000_STATUS_LU  (1u << 1)    /* link up */
#define E1000_RAH_AV     (1u << 31)   /* address valid */

#define E1000_RCTL_EN    (1u << 1)
#define E1000_RCTL_BAM   (1u << 15)   /* accept broadcast */
#define E1000_RCTL_SECRC (1u << 26)   /* strip the FCS */
/* BSIZE 00 with BSEX 0: 2048-byte buffers. */

#define E1000_TCTL_EN    (1u << 1)
#define E1000_TCTL_PSP   (1u << 3)    /* pad short packets */
#define E1000_TCTL_CT(x)   ((uint32_t)(x) << 4)   /* collision threshold */
#define E1000_TCTL_COLD(x) ((uint32_t)(x) << 12)  /* collision distance */

/* Legacy receive descriptor (8254x SDM 3.2.3). */
struct e1000_rx_desc {
	uint64_t addr;
	uint16_t length;
	uint16_t csum;
	uint8_t status;
	uint8_t errors;
	uint16_t special;
} __attribute__((packed));
_Static_assert(sizeof(struct e1000_rx_desc) == 16, "legacy RX descriptor is 16 bytes");

#define E1000_RXD_DD  0x01   /* descriptor done */
#define E1000_RXD_EOP 0x02   /* end of packet */

/* Legacy transmit descriptor (8254x SDM 3.3.3). */
struct e1000_tx_desc {
	uint64_t addr;
	uint16_t length;
	uint8_t cso;
	uint8_t cmd;
	uint8_t status;
	uint8_t css;
	uint16_t special;
} __attribute__((packed));
_Static_assert(sizeof(struct e1000_tx_desc) == 16, "legacy TX descriptor is 16 bytes");

#define E1000_TXD_CMD_EOP  0x01
#define E1000_TXD_CMD_IFCS 0x02   /* insert FCS */
#define E1000_TXD_CMD_RS   0x08   /* report status (DD) */
#define E1000_TXD_DD       0x01

/* Ring sizes: lengths must be multiples of 128 bytes (8 descriptors). */
#define E1000_NRX 64
#define E1000_NTX 256   /* a poll's burst (EXPORT_TX_BUDGET and resends) with room: 4 KiB */
#define E1000_BUF 2048

/* How the station address is found (e1000_nvm_kind). */
enum e1000_nvm {
	E1000_NVM_EERD_8254X,   /* EERD: START 0, DONE 4, ADDR 15:8 (8254x SDM 13.4.4) */
	E1000_NVM_EERD_82574,   /* EERD: START 0, DONE 1, ADDR 15:2 (82574 datasheet, EERD) */
	E1000_NVM_RAL,          /* I21x: the PCH loads RAL0/RAH0 from the flash NVM */
};

/* e1000_nvm_kind - the NVM access of a supported device ID. */
enum e1000_nvm e1000_nvm_kind(uint16_t device);

/*
 * e1000_eeprom_read - one 16-bit NVM word through EERD.  Returns 0,
 * NIC_E_ARG (the device has no EERD) or NIC_E_TIMEOUT (DONE never set).
 */
int e1000_eeprom_read(struct nic *nic, enum e1000_nvm kind, uint8_t word, uint16_t *out);

#endif /* TV_E1000_H */
