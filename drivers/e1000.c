/* SPDX-License-Identifier: MIT */
/*
 * e1000.c - polled driver for the Intel 82540EM, 82574L and I217/I219:
 * one legacy receive ring and one legacy transmit ring, every interrupt
 * masked, frames copied in and out of 2 KiB buffers.
 */
#include "drivers/e1000.h"

#include <string.h>

#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"

/* Bounded waits, in register reads (each read is a bus round trip). */
#define E1000_RESET_POLLS  100000
#define E1000_EERD_POLLS   100000

/* EEPROM words (8254x SDM 5.6, Table 5-2): 0..2 the Ethernet address,
 * 0x3f the checksum word making words 0..0x3f sum to 0xbaba. */
#define E1000_NVM_CHECKSUM_WORDS 0x40
#define E1000_NVM_SUM 0xbabau

/* Receive error bits that mean a damaged frame (8254x SDM 3.2.3.2):
 * CE, SE, SEQ, CXE, RXE.  TCPE/IPE only matter with checksum offload. */
#define E1000_RXE_FRAME 0x97u

struct e1000_priv {
	enum e1000_nvm nvm;
	struct e1000_rx_desc *rx;
	struct e1000_tx_desc *tx;
	uint8_t *rxbuf, *txbuf;
	uint32_t rx_next;      /* next descriptor the device fills */
	uint32_t tx_tail;      /* next descriptor to fill */
	uint32_t tx_clean;     /* oldest descriptor not yet reclaimed */
	bool rx_discard;       /* inside a multi-descriptor frame: drop to EOP */
};

/* Layout of the DMA block: state page, rings, buffers. */
#define E1000_OFF_RX    4096u
#define E1000_OFF_TX    (E1000_OFF_RX + 4096u)
#define E1000_OFF_RXBUF (E1000_OFF_TX + 4096u)
#define E1000_OFF_TXBUF (E1000_OFF_RXBUF + E1000_NRX * E1000_BUF)
#define E1000_DMA_END   (E1000_OFF_TXBUF + E1000_NTX * E1000_BUF)
_Static_assert(E1000_NRX * sizeof(struct e1000_rx_desc) <= 4096, "RX ring fits a page");
_Static_assert(E1000_NTX * sizeof(struct e1000_tx_desc) <= 4096, "TX ring fits a page");
_Static_assert((E1000_NRX * 16) % 128 == 0 && (E1000_NTX * 16) % 128 == 0,
	       "RDLEN/TDLEN are multiples of 128 bytes (8254x SDM 13.4.27, 13.4.39)");
_Static_assert(E1000_DMA_END <= NIC_DMA_BYTES, "e1000 fits the NIC DMA block");
_Static_assert(sizeof(struct e1000_priv) <= 4096, "e1000 state fits its page");

static inline uint32_t rd(struct nic *nic, uint32_t reg)
{
	return devio_read32(&nic->io, reg);
}

static inline void wr(struct nic *nic, uint32_t reg, uint32_t v)
{
	devio_write32(&nic->io, reg, v);
}

static inline uint64_t dev_addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static const struct e1000_id {
	uint16_t device;
	const char *model;
	enum e1000_nvm nvm;
} e1000_ids[] = {
	/* 8254x SDM Table 5-1 (device IDs). */
	{ 0x100e, "82540EM", E1000_NVM_EERD_8254X },
	/* 82574 datasheet, PCI device ID (NVM word 0x0d default). */
	{ 0x10d3, "82574L", E1000_NVM_EERD_82574 },
	/* I217 / I218 / I219 datasheets, device ID tables (LM: vPro, V: consumer). */
	{ 0x153a, "I217-LM", E1000_NVM_RAL }, { 0x153b, "I217-V", E1000_NVM_RAL },
	{ 0x155a, "I218-LM", E1000_NVM_RAL }, { 0x1559, "I218-V", E1000_NVM_RAL },
	{ 0x15a0, "I218-LM", E1000_NVM_RAL }, { 0x15a1, "I218-V", E1000_NVM_RAL },
	{ 0x15a2, "I218-LM", E1000_NVM_RAL }, { 0x15a3, "I218-V", E1000_NVM_RAL },
	{ 0x156f, "I219-LM", E1000_NVM_RAL }, { 0x1570, "I219-V", E1000_NVM_RAL },
	{ 0x15b7, "I219-LM", E1000_NVM_RAL }, { 0x15b8, "I219-V", E1000_NVM_RAL },
	{ 0x15b9, "I219-LM", E1000_NVM_RAL }, { 0x15bb, "I219-LM", E1000_NVM_RAL },
	{ 0x15bc, "I219-V", E1000_NVM_RAL }, { 0x15bd, "I219-LM", E1000_NVM_RAL },
	{ 0x15be, "I219-V", E1000_NVM_RAL }, { 0x15d6, "I219-V", E1000_NVM_RAL },
	{ 0x15d7, "I219-LM", E1000_NVM_RAL }, { 0x15d8, "I219-V", E1000_NVM_RAL },
	{ 0x15e3, "I219-LM", E1000_NVM_RAL }, { 0x15df, "I219-LM", E1000_NVM_RAL },
	{ 0x15e0, "I219-V", E1000_NVM_RAL }, { 0x15e1, "I219-LM", E1000_NVM_RAL },
	{ 0x15e2, "I219-V", E1000_NVM_RAL },
};

static const struct e1000_id *e1000_lookup(uint16_t device)
{
	for (size_t i = 0; i < sizeof(e1000_ids) / sizeof(e1000_ids[0]); i++)
		if (e1000_ids[i].device == device)
			return &e1000_ids[i];
	return NULL;
}

static const char *e1000_match(uint16_t vendor, uint16_t device)
{
	const struct e1000_id *id = vendor == 0x8086 ? e1000_lookup(device) : NULL;

	return id ? id->model : NULL;
}

enum e1000_nvm e1000_nvm_kind(uint16_t device)
{
	const struct e1000_id *id = e1000_lookup(device);

	return id ? id->nvm : E1000_NVM_EERD_8254X;
}

int e1000_eeprom_read(struct nic *nic, enum e1000_nvm kind, uint8_t word, uint16_t *out)
{
	uint32_t done, start, v;

	switch (kind) {
	case E1000_NVM_EERD_8254X:
		/* 8254x SDM 13.4.4: START bit 0, DONE bit 4, ADDR 15:8, DATA 31:16. */
		start = 1u | (uint32_t)word << 8;
		done = 1u << 4;
		break;
	case E1000_NVM_EERD_82574:
		/* 82574 datasheet, EERD: START bit 0, DONE bit 1, ADDR 15:2, DATA 31:16. */
		start = 1u | (uint32_t)word << 2;
		done = 1u << 1;
		break;
	default:
		return NIC_E_ARG;
	}
	wr(nic, E1000_EERD, start);
	for (int i = 0; i < E1000_EERD_POLLS; i++) {
		v = rd(nic, E1000_EERD);
		if (v & done) {
			*out = (uint16_t)(v >> 16);
			return 0;
		}
		hw_pause();
	}
	return NIC_E_TIMEOUT;
}

static bool mac_usable(const uint8_t m[6])
{
	static const uint8_t zero[6];

	/* Not all zeros, not multicast/broadcast (I/G bit of the first octet). */
	return memcmp(m, zero, 6) != 0 && !(m[0] & 1);
}

/* RAL0/RAH0 as the device holds them: 0 if valid (AV set, usable). */
static int mac_from_ral(struct nic *nic, uint8_t m[6])
{
	uint32_t lo = rd(nic, E1000_RAL0), hi = rd(nic, E1000_RAH0);

	for (int i = 0; i < 4; i++)
		m[i] = (uint8_t)(lo >> (8 * i));
	m[4] = (uint8_t)hi;
	m[5] = (uint8_t)(hi >> 8);
	return (hi & E1000_RAH_AV) && mac_usable(m) ? 0 : NIC_E_DEVICE;
}

/*
 * The station address: from the EEPROM through EERD where the part has
 * one (Bochs's 82540EM leaves RAL/RAH zero after reset, so RAL/RAH alone
 * is not enough there), else or when the EEPROM fails from RAL0/RAH0,
 * which the I21x's PCH loads from the NVM at reset.
 */
static int e1000_read_mac(struct nic *nic)
{
	enum e1000_nvm kind = e1000_nvm_kind(nic->pci.device);
	uint8_t ee[6], ral[6];
	uint16_t w[E1000_NVM_CHECKSUM_WORDS];
	uint32_t sum = 0;
	int rc, ral_ok;

	ral_ok = mac_from_ral(nic, ral) == 0;
	if (kind == E1000_NVM_RAL) {
		if (!ral_ok) {
			log_err("e1000: %s: no valid address in RAL0/RAH0", nic->model);
			return NIC_E_DEVICE;
		}
		memcpy(nic->mac, ral, 6);
		return 0;
	}
	for (unsigned i = 0; i < E1000_NVM_CHECKSUM_WORDS; i++) {
		rc = e1000_eeprom_read(nic, kind, (uint8_t)i, &w[i]);
		if (rc) {
			if (ral_ok) {
				log_warn("e1000: EEPROM word %u: %s; using RAL0/RAH0", i, nic_strerror(rc));
				memcpy(nic->mac, ral, 6);
				return 0;
			}
			log_err("e1000: EEPROM word %u: %s and RAL0/RAH0 not valid", i, nic_strerror(rc));
			return rc;
		}
		sum += w[i];
	}
	for (int i = 0; i < 3; i++) {
		ee[2 * i] = (uint8_t)w[i];
		ee[2 * i + 1] = (uint8_t)(w[i] >> 8);
	}
	if ((uint16_t)sum != E1000_NVM_SUM || !mac_usable(ee)) {
		if (ral_ok) {
			log_warn("e1000: EEPROM checksum %#x (want %#x) or address unusable; using RAL0/RAH0",
				 (unsigned)(uint16_t)sum, E1000_NVM_SUM);
			memcpy(nic->mac, ral, 6);
			return 0;
		}
		if (!mac_usable(ee)) {
			log_err("e1000: no usable address in the EEPROM nor in RAL0/RAH0");
			return NIC_E_DEVICE;
		}
		log_warn("e1000: EEPROM checksum %#x, want %#x; using its address anyway",
			 (unsigned)(uint16_t)sum, E1000_NVM_SUM);
	}
	memcpy(nic->mac, ee, 6);
	return 0;
}

/* Device reset with every interrupt masked (8254x SDM 14.3, 13.4.1). */
static int e1000_reset(struct nic *nic)
{
	int i;

	wr(nic, E1000_IMC, 0xffffffffu);
	wr(nic, E1000_RCTL, 0);
	wr(nic, E1000_TCTL, 0);
	wr(nic, E1000_CTRL, rd(nic, E1000_CTRL) | E1000_CTRL_RST);
	for (i = 0; i < E1000_RESET_POLLS; i++) {
		if (!(rd(nic, E1000_CTRL) & E1000_CTRL_RST))
			break;
		hw_pause();
	}
	if (i == E1000_RESET_POLLS)
		return NIC_E_TIMEOUT;
	/* Reset unmasks nothing, but the datasheets ask for IMC again after it. */
	wr(nic, E1000_IMC, 0xffffffffu);
	(void)rd(nic, E1000_ICR);   /* read-to-clear */
	return 0;
}

static int e1000_init(struct nic *nic)
{
	struct e1000_priv *p;
	uint32_t ctrl;
	int rc;

	if (nic->dma_len < E1000_DMA_END)
		return NIC_E_NOMEM;
	rc = e1000_reset(nic);
	if (rc)
		return rc;
	rc = e1000_read_mac(nic);
	if (rc)
		return rc;

	memset(nic->dma, 0, E1000_OFF_RXBUF);
	p = (struct e1000_priv *)nic->dma;
	nic->priv = p;
	p->nvm = e1000_nvm_kind(nic->pci.device);
	p->rx = (struct e1000_rx_desc *)(nic->dma + E1000_OFF_RX);
	p->tx = (struct e1000_tx_desc *)(nic->dma + E1000_OFF_TX);
	p->rxbuf = nic->dma + E1000_OFF_RXBUF;
	p->txbuf = nic->dma + E1000_OFF_TXBUF;

	/* General configuration (8254x SDM 14.3): link up, auto speed, no
	 * link/PHY reset, no loss-of-signal inversion, no VLAN mode. */
	ctrl = rd(nic, E1000_CTRL);
	ctrl |= E1000_CTRL_SLU | (1u << 5);
	ctrl &= ~((1u << 3) | (1u << 7) | (1u << 30) | (1u << 31));
	wr(nic, E1000_CTRL, ctrl);

	/* Receive address 0 = our MAC, valid; empty multicast table (14.4). */
	wr(nic, E1000_RAL0, (uint32_t)nic->mac[0] | (uint32_t)nic->mac[1] << 8 |
	   (uint32_t)nic->mac[2] << 16 | (uint32_t)nic->mac[3] << 24);
	wr(nic, E1000_RAH0, (uint32_t)nic->mac[4] | (uint32_t)nic->mac[5] << 8 | E1000_RAH_AV);
	for (uint32_t i = 0; i < 128; i++)
		wr(nic, E1000_MTA + 4 * i, 0);

	/* Receive ring: every descriptor owned by the device but one (14.4). */
	for (uint32_t i = 0; i < E1000_NRX; i++)
		p->rx[i].addr = dev_addr(p->rxbuf + i * E1000_BUF);
	wr(nic, E1000_RDBAL, (uint32_t)dev_addr(p->rx));
	wr(nic, E1000_RDBAH, (uint32_t)(dev_addr(p->rx) >> 32));
	wr(nic, E1000_RDLEN, E1000_NRX * sizeof(struct e1000_rx_desc));
	wr(nic, E1000_RDH, 0);
	wr(nic, E1000_RDT, E1000_NRX - 1);
	p->rx_next = 0;
	wr(nic, E1000_RCTL, E1000_RCTL_EN | E1000_RCTL_BAM | E1000_RCTL_SECRC);

	/* Transmit ring, empty (14.5); full duplex collision distance. */
	wr(nic, E1000_TDBAL, (uint32_t)dev_addr(p->tx));
	wr(nic, E1000_TDBAH, (uint32_t)(dev_addr(p->tx) >> 32));
	wr(nic, E1000_TDLEN, E1000_NTX * sizeof(struct e1000_tx_desc));
	wr(nic, E1000_TDH, 0);
	wr(nic, E1000_TDT, 0);
	p->tx_tail = p->tx_clean = 0;
	/* IPGT 10, IPGR1 8, IPGR2 6: the 8254x SDM 13.4.34 values for copper. */
	wr(nic, E1000_TIPG, 10u | 8u << 10 | 6u << 20);
	wr(nic, E1000_TCTL, E1000_TCTL_EN | E1000_TCTL_PSP | E1000_TCTL_CT(0x0f) |
	   E1000_TCTL_COLD(0x40));
	return 0;
}

/* Reclaim descriptors the device has sent (DD written back, RS set). */
static void e1000_tx_reclaim(struct e1000_priv *p)
{
	while (p->tx_clean != p->tx_tail) {
		volatile struct e1000_tx_desc *d = &p->tx[p->tx_clean];

		if (!(d->status & E1000_TXD_DD))
			break;
		p->tx_clean = (p->tx_clean + 1) % E1000_NTX;
	}
}

static unsigned e1000_tx_pending(struct nic *nic)
{
	struct e1000_priv *p = nic->priv;

	e1000_tx_reclaim(p);
	return (p->tx_tail + E1000_NTX - p->tx_clean) % E1000_NTX;
}

static int e1000_tx(struct nic *nic, const void *frame, size_t len)
{
	struct e1000_priv *p = nic->priv;
	struct e1000_tx_desc *d;
	uint32_t next;

	e1000_tx_reclaim(p);
	next = (p->tx_tail + 1) % E1000_NTX;
	if (next == p->tx_clean)
		return NIC_E_FULL;
	memcpy(p->txbuf + p->tx_tail * E1000_BUF, frame, len);
	d = &p->tx[p->tx_tail];
	d->addr = dev_addr(p->txbuf + p->tx_tail * E1000_BUF);
	d->length = (uint16_t)len;
	d->cso = 0;
	d->cmd = E1000_TXD_CMD_EOP | E1000_TXD_CMD_IFCS | E1000_TXD_CMD_RS;
	d->status = 0;
	d->css = 0;
	d->special = 0;
	p->tx_tail = next;
	/* The descriptor is in memory before the tail moves past it. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	wr(nic, E1000_TDT, next);
	return 0;
}

static int e1000_poll(struct nic *nic, nic_rx_fn fn, void *ctx, unsigned budget)
{
	struct e1000_priv *p = nic->priv;
	int n = 0;

	while ((unsigned)n < budget) {
		volatile struct e1000_rx_desc *d = &p->rx[p->rx_next];
		uint8_t st = d->status, err;
		uint16_t len;
		uint32_t i = p->rx_next;

		if (!(st & E1000_RXD_DD))
			break;
		/* Read the rest of the descriptor and the buffer after DD. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		err = d->errors;
		len = d->length;
		if (!(st & E1000_RXD_EOP)) {
			p->rx_discard = true;
			nic->stats.rx_drops++;
		} else if (p->rx_discard) {
			p->rx_discard = false;
			nic->stats.rx_drops++;
		} else if (err & E1000_RXE_FRAME) {
			nic->stats.errors++;
		} else if (len < NIC_FRAME_MIN || len > E1000_BUF) {
			nic->stats.rx_drops++;
		} else {
			nic->stats.rx_frames++;
			nic->stats.rx_bytes += len;
			n++;
			fn(ctx, p->rxbuf + i * E1000_BUF, len);
		}
		d->status = 0;
		d->errors = 0;
		p->rx_next = (i + 1) % E1000_NRX;
		/* Give descriptor i back: the device may fill up to i - 1. */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		wr(nic, E1000_RDT, i);
	}
	return n;
}

static bool e1000_link_up(struct nic *nic)
{
	return (rd(nic, E1000_STATUS) & E1000_STATUS_LU) != 0;
}

static void e1000_stop(struct nic *nic)
{
	/* Receiver and transmitter off, then a reset: the device forgets the
	 * ring addresses, so nothing can DMA into the block afterwards. */
	if (e1000_reset(nic))
		log_warn("e1000: reset did not complete while stopping");
	wr(nic, E1000_RDBAL, 0);
	wr(nic, E1000_RDBAH, 0);
	wr(nic, E1000_TDBAL, 0);
	wr(nic, E1000_TDBAH, 0);
}

const struct nic_driver e1000_driver = {
	.name = "e1000",
	.match = e1000_match,
	.bar = 0,
	.bar_kind = PCI_BAR_MEM32,
	.read_mac = e1000_read_mac,
	.init = e1000_init,
	.tx = e1000_tx,
	.tx_pending = e1000_tx_pending,
	.poll = e1000_poll,
	.link_up = e1000_link_up,
	.stop = e1000_stop,
};
