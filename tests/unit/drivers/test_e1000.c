/* SPDX-License-Identifier: MIT */
/*
 * test_e1000.c - drivers/e1000.c against a device model written here: a
 * register file behind the driver's devio accessor, EERD in the 8254x or
 * the 82574 layout with its DONE bit, CTRL.RST that clears itself, a
 * transmitter that walks TDH up to TDT writing DD back, and a receiver
 * that fills descriptors from RDH with DD|EOP.  Descriptor addresses are
 * host pointers (the driver's identity-mapping assumption).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "drivers/e1000.h"
#include "drivers/nic.h"
#include "hw_fake.h"
#include "vmm/lib/log.h"

/* --- the device model --------------------------------------------------------- */

#define NREGS (0x6000 / 4)
#define MAX_FRAMES 1024  /* a full ring and two more rounds of E1000_NTX */

struct model {
	uint32_t regs[NREGS];
	enum e1000_nvm layout;      /* which EERD format the part speaks */
	uint16_t eeprom[64];
	bool eerd_dead;             /* EERD never reports DONE */
	uint32_t ral_after_reset, rah_after_reset;
	bool rst_stuck;
	int resets;
	uint32_t imc_written;       /* OR of every IMC write */
	uint32_t ims;               /* enabled interrupt causes */
	bool tx_stalled;            /* the transmitter takes nothing */
	uint8_t frames[MAX_FRAMES][2048];
	uint16_t frame_len[MAX_FRAMES];
	int nframes;
	uint8_t tx_cmd_seen;        /* OR of the cmd bytes of sent descriptors */
	int rx_overruns;            /* frames the model had no descriptor for */
};

static struct model m;
static struct nic nic;
static uint8_t *dma;

static uint32_t reg(uint32_t off)
{
	return m.regs[off / 4];
}

static void model_tx(void)
{
	struct e1000_tx_desc *ring = (struct e1000_tx_desc *)(uintptr_t)
		((uint64_t)reg(E1000_TDBAH) << 32 | reg(E1000_TDBAL));
	uint32_t n = reg(E1000_TDLEN) / 16;

	if (m.tx_stalled || !(reg(E1000_TCTL) & E1000_TCTL_EN))
		return;
	while (reg(E1000_TDH) != reg(E1000_TDT)) {
		struct e1000_tx_desc *d = &ring[reg(E1000_TDH)];

		assert_true(m.nframes < MAX_FRAMES);
		assert_true(d->length <= 2048);
		memcpy(m.frames[m.nframes], (void *)(uintptr_t)d->addr, d->length);
		m.frame_len[m.nframes++] = d->length;
		m.tx_cmd_seen |= d->cmd;
		if (d->cmd & E1000_TXD_CMD_RS)
			d->status |= E1000_TXD_DD;
		m.regs[E1000_TDH / 4] = (reg(E1000_TDH) + 1) % n;
	}
}

static void model_reset(void)
{
	m.resets++;
	memset(m.regs, 0, sizeof(m.regs));
	m.regs[E1000_RAL0 / 4] = m.ral_after_reset;
	m.regs[E1000_RAH0 / 4] = m.rah_after_reset;
	m.regs[E1000_STATUS / 4] = E1000_STATUS_LU;
	m.ims = 0;
	if (m.rst_stuck)
		m.regs[E1000_CTRL / 4] = E1000_CTRL_RST;
}

static uint32_t mread(void *ctx, uint64_t base, uint32_t off, int width)
{
	uint32_t v;

	(void)ctx;
	assert_int_equal(base, 0xfebc0000u);
	assert_int_equal(width, 4);
	assert_true(off % 4 == 0 && off / 4 < NREGS);
	v = m.regs[off / 4];
	if (off == E1000_ICR)
		m.regs[off / 4] = 0;
	return v;
}

static void mwrite(void *ctx, uint64_t base, uint32_t off, int width, uint32_t v)
{
	(void)ctx;
	assert_int_equal(base, 0xfebc0000u);
	assert_int_equal(width, 4);
	assert_true(off % 4 == 0 && off / 4 < NREGS);
	switch (off) {
	case E1000_CTRL:
		if (v & E1000_CTRL_RST) {
			model_reset();
			return;
		}
		break;
	case E1000_IMS:
		m.ims |= v;
		return;
	case E1000_IMC:
		m.ims &= ~v;
		m.imc_written |= v;
		return;
	case E1000_EERD: {
		uint32_t addr, done;

		if (!(v & 1))
			return;
		if (m.layout == E1000_NVM_EERD_8254X) {
			addr = (v >> 8) & 0xff;
			done = 1u << 4;
		} else {
			addr = (v >> 2) & 0x3fff;
			done = 1u << 1;
		}
		m.regs[off / 4] = v & ~1u;
		if (!m.eerd_dead && addr < 64)
			m.regs[off / 4] = (uint32_t)m.eeprom[addr] << 16 | done | (v & 0xfffe);
		return;
	}
	default:
		break;
	}
	m.regs[off / 4] = v;
	if (off == E1000_TDT)
		model_tx();
}

/* The wire delivers a frame: next descriptor at RDH, if the device owns it. */
static void model_rx(const void *frame, uint16_t len, uint8_t status, uint8_t errors)
{
	struct e1000_rx_desc *ring = (struct e1000_rx_desc *)(uintptr_t)
		((uint64_t)reg(E1000_RDBAH) << 32 | reg(E1000_RDBAL));
	uint32_t n = reg(E1000_RDLEN) / 16, h = reg(E1000_RDH);

	assert_true(reg(E1000_RCTL) & E1000_RCTL_EN);
	if (h == reg(E1000_RDT)) {
		m.rx_overruns++;
		return;
	}
	memcpy((void *)(uintptr_t)ring[h].addr, frame, len);
	ring[h].length = len;
	ring[h].errors = errors;
	ring[h].status = status;
	m.regs[E1000_RDH / 4] = (h + 1) % n;
}

static const uint8_t qemu_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

static void eeprom_with_mac(const uint8_t mac[6], bool good_checksum)
{
	uint16_t sum = 0;

	memset(m.eeprom, 0, sizeof(m.eeprom));
	for (int i = 0; i < 3; i++)
		m.eeprom[i] = (uint16_t)(mac[2 * i] | mac[2 * i + 1] << 8);
	m.eeprom[0x0a] = 0x4408;
	for (int i = 0; i < 0x3f; i++)
		sum = (uint16_t)(sum + m.eeprom[i]);
	m.eeprom[0x3f] = (uint16_t)(0xbaba - sum + (good_checksum ? 0 : 1));
}

static void attach(uint16_t device)
{
	memset(&nic, 0, sizeof(nic));
	nic.drv = nic_find_driver(0x8086, device, &nic.model);
	assert_ptr_equal(nic.drv, &e1000_driver);
	nic.pci.vendor = 0x8086;
	nic.pci.device = device;
	nic.io.base = 0xfebc0000u;
	nic.io.read = mread;
	nic.io.write = mwrite;
}

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	log_set_ring(NULL);
	memset(&m, 0, sizeof(m));
	m.layout = E1000_NVM_EERD_8254X;
	eeprom_with_mac(qemu_mac, true);
	m.regs[E1000_STATUS / 4] = E1000_STATUS_LU;
	dma = aligned_alloc(4096, NIC_DMA_BYTES);
	assert_non_null(dma);
	memset(dma, 0xa5, NIC_DMA_BYTES);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(dma);
	return 0;
}

static void frame(uint8_t *f, size_t len, uint32_t tag)
{
	for (size_t i = 0; i < len; i++)
		f[i] = (uint8_t)(tag * 7 + i);
}

/* --- identification ---------------------------------------------------------------- */

static void test_driver_table(void **state)
{
	const char *model = NULL;

	(void)state;
	assert_ptr_equal(nic_find_driver(0x8086, 0x100e, &model), &e1000_driver);
	assert_string_equal(model, "82540EM");
	assert_ptr_equal(nic_find_driver(0x8086, 0x10d3, &model), &e1000_driver);
	assert_string_equal(model, "82574L");
	assert_ptr_equal(nic_find_driver(0x8086, 0x15b8, &model), &e1000_driver);
	assert_string_equal(model, "I219-V");
	assert_ptr_equal(nic_find_driver(0x8086, 0x153a, &model), &e1000_driver);
	assert_string_equal(model, "I217-LM");
	assert_null(nic_find_driver(0x8086, 0x10c9, NULL));   /* 82576: igb, not ours */
	assert_null(nic_find_driver(0x10ec, 0x100e, NULL));   /* right ID, wrong vendor */
	assert_ptr_equal(nic_find_driver(0x1af4, 0x1000, NULL), &virtio_net_driver);
	assert_null(nic_find_driver(0x1af4, 0x1041, NULL));   /* modern-only virtio-net */
	assert_int_equal(e1000_nvm_kind(0x100e), E1000_NVM_EERD_8254X);
	assert_int_equal(e1000_nvm_kind(0x10d3), E1000_NVM_EERD_82574);
	assert_int_equal(e1000_nvm_kind(0x15b7), E1000_NVM_RAL);
}

/* --- bring-up --------------------------------------------------------------------------- */

static void test_init_82540em_mac_from_eeprom_when_ral_is_zero(void **state)
{
	(void)state;
	attach(0x100e);   /* Bochs: RAL/RAH read 0 after reset */
	m.ims = 0xffff;   /* whatever the firmware left enabled */
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	assert_memory_equal(nic.mac, qemu_mac, 6);
	assert_int_equal(m.resets, 1);
	/* Polled: every cause masked, nothing enabled. */
	assert_int_equal(m.imc_written, 0xffffffffu);
	assert_int_equal(m.ims, 0);
	/* Receive address 0 = the MAC, valid; link forced up. */
	assert_int_equal(reg(E1000_RAL0), 0x12005452u);
	assert_int_equal(reg(E1000_RAH0), 0x5634u | E1000_RAH_AV);
	assert_true(reg(E1000_CTRL) & E1000_CTRL_SLU);
	assert_int_equal(reg(E1000_RCTL), E1000_RCTL_EN | E1000_RCTL_BAM | E1000_RCTL_SECRC);
	assert_true(reg(E1000_TCTL) & E1000_TCTL_EN);
	assert_true(reg(E1000_TCTL) & E1000_TCTL_PSP);
	assert_int_equal(reg(E1000_RDLEN), E1000_NRX * 16);
	assert_int_equal(reg(E1000_TDLEN), E1000_NTX * 16);
	assert_int_equal(reg(E1000_RDT), E1000_NRX - 1);
	assert_int_equal(reg(E1000_TDT), 0);
	/* The rings are inside the DMA block, 16-byte aligned at least. */
	assert_true(reg(E1000_RDBAL) >= (uint32_t)(uintptr_t)dma || reg(E1000_RDBAH));
	assert_int_equal(reg(E1000_RDBAL) & 0xf, 0);
	assert_true(nic_link_up(&nic));
	m.regs[E1000_STATUS / 4] = 0;
	assert_false(nic_link_up(&nic));
}

static void test_82574_uses_its_eerd_layout(void **state)
{
	static const uint8_t mac[6] = { 0x00, 0x1b, 0x21, 0xaa, 0xbb, 0xcc };

	(void)state;
	m.layout = E1000_NVM_EERD_82574;
	eeprom_with_mac(mac, true);
	attach(0x10d3);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	assert_memory_equal(nic.mac, mac, 6);
}

static void test_eeprom_timeout_falls_back_to_valid_ral(void **state)
{
	(void)state;
	m.eerd_dead = true;
	m.ral_after_reset = 0x33221100u;
	m.rah_after_reset = 0x5544u | E1000_RAH_AV;
	attach(0x100e);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	assert_memory_equal(nic.mac, ((uint8_t[]){ 0x00, 0x11, 0x22, 0x33, 0x44, 0x55 }), 6);
}

static void test_eeprom_timeout_without_ral_fails(void **state)
{
	(void)state;
	m.eerd_dead = true;
	attach(0x100e);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), NIC_E_TIMEOUT);
	assert_false(nic.up);
	assert_int_equal(nic_tx(&nic, dma, 60), NIC_E_DOWN);
}

static void test_bad_checksum_prefers_valid_ral(void **state)
{
	static const uint8_t ral_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };

	(void)state;
	eeprom_with_mac(qemu_mac, false);
	m.ral_after_reset = 0x00000002u;
	m.rah_after_reset = 0x0100u | E1000_RAH_AV;
	attach(0x100e);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	assert_memory_equal(nic.mac, ral_mac, 6);
	/* Without a valid RAL the EEPROM's address is still taken. */
	m.rah_after_reset = 0x0100u;   /* AV clear */
	attach(0x100e);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	assert_memory_equal(nic.mac, qemu_mac, 6);
}

static void test_i219_reads_ral_only(void **state)
{
	(void)state;
	m.eerd_dead = true;   /* the I21x has no EERD: it must not be waited on */
	m.ral_after_reset = 0x56341200u;
	m.rah_after_reset = 0x9a78u | E1000_RAH_AV;
	attach(0x15b8);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	assert_memory_equal(nic.mac, ((uint8_t[]){ 0x00, 0x12, 0x34, 0x56, 0x78, 0x9a }), 6);
	assert_int_equal(hw_fake_pause_count, 0);
	m.rah_after_reset = 0x9a78u;   /* not valid */
	attach(0x15b8);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), NIC_E_DEVICE);
}

static void test_reset_that_never_completes(void **state)
{
	(void)state;
	m.rst_stuck = true;
	attach(0x100e);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), NIC_E_TIMEOUT);
}

static void test_dma_block_checks(void **state)
{
	(void)state;
	attach(0x100e);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES - 4096), NIC_E_NOMEM);
	assert_int_equal(nic_init(&nic, dma + 8, NIC_DMA_BYTES), NIC_E_ARG);
	assert_int_equal(m.resets, 0);
}

/* --- transmit --------------------------------------------------------------------------- */

static void test_tx_frames_reach_the_wire(void **state)
{
	uint8_t f[3][1514];
	const size_t len[3] = { 60, 1514, 342 };

	(void)state;
	attach(0x100e);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	for (int i = 0; i < 3; i++) {
		frame(f[i], len[i], (uint32_t)i);
		assert_int_equal(nic_tx(&nic, f[i], len[i]), 0);
	}
	assert_int_equal(m.nframes, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(m.frame_len[i], len[i]);
		assert_memory_equal(m.frames[i], f[i], len[i]);
	}
	assert_int_equal(m.tx_cmd_seen, E1000_TXD_CMD_EOP | E1000_TXD_CMD_IFCS | E1000_TXD_CMD_RS);
	assert_int_equal(reg(E1000_TDT), 3);
	assert_int_equal(nic.stats.tx_frames, 3);
	assert_int_equal(nic.stats.tx_bytes, 60 + 1514 + 342);
	assert_int_equal(nic_tx(&nic, f[0], 13), NIC_E_SIZE);
	assert_int_equal(nic_tx(&nic, f[0], 1515), NIC_E_SIZE);
	assert_int_equal(m.nframes, 3);
}

static void test_tx_ring_full_then_drains(void **state)
{
	uint8_t f[64];
	int i;

	(void)state;
	attach(0x100e);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	m.tx_stalled = true;
	/* One descriptor stays empty so that TDT never catches TDH. */
	for (i = 0; i < E1000_NTX - 1; i++) {
		frame(f, sizeof(f), (uint32_t)i);
		assert_int_equal(nic_tx(&nic, f, sizeof(f)), 0);
	}
	assert_int_equal(nic_tx(&nic, f, sizeof(f)), NIC_E_FULL);
	assert_int_equal(nic.stats.tx_drops, 1);
	assert_int_equal(m.nframes, 0);
	assert_int_equal(nic_tx_pending(&nic), E1000_NTX - 1);
	m.tx_stalled = false;
	model_tx();
	assert_int_equal(m.nframes, E1000_NTX - 1);
	assert_int_equal(nic_tx_pending(&nic), 0);
	/* DD written back: the ring is reclaimed and wraps. */
	for (i = 0; i < 2 * E1000_NTX; i++) {
		frame(f, sizeof(f), 1000u + (uint32_t)i);
		assert_int_equal(nic_tx(&nic, f, sizeof(f)), 0);
	}
	assert_int_equal(m.nframes, 3 * E1000_NTX - 1);
	frame(f, sizeof(f), 1000u + 2 * E1000_NTX - 1);
	assert_memory_equal(m.frames[m.nframes - 1], f, sizeof(f));
}

/* --- receive ----------------------------------------------------------------------------- */

struct rx_log {
	int n;
	uint8_t data[MAX_FRAMES][128];
	size_t len[MAX_FRAMES];
};

static void on_rx(void *ctx, const void *f, size_t len)
{
	struct rx_log *l = ctx;

	assert_true(l->n < MAX_FRAMES && len <= 128);
	memcpy(l->data[l->n], f, len);
	l->len[l->n++] = len;
}

static void test_rx_delivers_in_order_within_budget(void **state)
{
	static struct rx_log log;
	uint8_t f[100];

	(void)state;
	memset(&log, 0, sizeof(log));
	attach(0x100e);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	assert_int_equal(nic_poll(&nic, on_rx, &log, 16), 0);
	for (uint32_t i = 0; i < 5; i++) {
		frame(f, 60 + i, i);
		model_rx(f, (uint16_t)(60 + i), E1000_RXD_DD | E1000_RXD_EOP, 0);
	}
	assert_int_equal(nic_poll(&nic, on_rx, &log, 2), 2);
	assert_int_equal(nic_poll(&nic, on_rx, &log, 16), 3);
	assert_int_equal(log.n, 5);
	for (uint32_t i = 0; i < 5; i++) {
		frame(f, 60 + i, i);
		assert_int_equal(log.len[i], 60 + i);
		assert_memory_equal(log.data[i], f, 60 + i);
	}
	/* Each descriptor went back to the device. */
	assert_int_equal(reg(E1000_RDT), 4);
	assert_int_equal(nic.stats.rx_frames, 5);
}

static void test_rx_ring_wraps(void **state)
{
	static struct rx_log log;
	uint8_t f[64];
	uint32_t sent = 0;

	(void)state;
	attach(0x100e);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	for (int round = 0; round < 10; round++) {
		memset(&log, 0, sizeof(log));
		for (int i = 0; i < 50; i++, sent++) {
			frame(f, sizeof(f), sent);
			model_rx(f, sizeof(f), E1000_RXD_DD | E1000_RXD_EOP, 0);
		}
		assert_int_equal(nic_poll(&nic, on_rx, &log, 64), 50);
		for (int i = 0; i < 50; i++) {
			frame(f, sizeof(f), sent - 50 + (uint32_t)i);
			assert_memory_equal(log.data[i], f, sizeof(f));
		}
	}
	assert_int_equal(m.rx_overruns, 0);
	assert_int_equal(nic.stats.rx_frames, 500);
	/* A full ring: the device owns 63, the 64th frame finds no descriptor. */
	for (int i = 0; i < E1000_NRX; i++)
		model_rx(f, sizeof(f), E1000_RXD_DD | E1000_RXD_EOP, 0);
	assert_int_equal(m.rx_overruns, 1);
}

static void test_rx_errors_and_fragments_are_not_delivered(void **state)
{
	static struct rx_log log;
	uint8_t f[80];

	(void)state;
	memset(&log, 0, sizeof(log));
	attach(0x100e);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	frame(f, sizeof(f), 1);
	model_rx(f, sizeof(f), E1000_RXD_DD | E1000_RXD_EOP, 0x01);  /* CRC error */
	model_rx(f, sizeof(f), E1000_RXD_DD, 0);                     /* first part ... */
	model_rx(f, sizeof(f), E1000_RXD_DD | E1000_RXD_EOP, 0);     /* ... and the rest */
	model_rx(f, 10, E1000_RXD_DD | E1000_RXD_EOP, 0);            /* runt */
	frame(f, sizeof(f), 2);
	model_rx(f, sizeof(f), E1000_RXD_DD | E1000_RXD_EOP, 0x20);  /* TCPE: no offload, fine */
	assert_int_equal(nic_poll(&nic, on_rx, &log, 64), 1);
	assert_int_equal(log.n, 1);
	assert_memory_equal(log.data[0], f, sizeof(f));
	assert_int_equal(nic.stats.errors, 1);
	assert_int_equal(nic.stats.rx_drops, 3);
	assert_int_equal(reg(E1000_RDT), 4);
}

static void test_stop_quiesces(void **state)
{
	uint8_t f[60] = { 0 };

	(void)state;
	attach(0x100e);
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	assert_int_equal(nic_tx(&nic, f, sizeof(f)), 0);
	nic_stop(&nic, NULL);
	assert_int_equal(m.resets, 2);
	assert_int_equal(reg(E1000_RCTL), 0);
	assert_int_equal(reg(E1000_TCTL), 0);
	assert_int_equal(reg(E1000_RDBAL) | reg(E1000_TDBAL), 0);
	assert_int_equal(m.ims, 0);
	assert_false(nic.up);
	assert_int_equal(nic_tx(&nic, f, sizeof(f)), NIC_E_DOWN);
	assert_int_equal(nic_poll(&nic, on_rx, NULL, 1), NIC_E_DOWN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_driver_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_init_82540em_mac_from_eeprom_when_ral_is_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(test_82574_uses_its_eerd_layout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eeprom_timeout_falls_back_to_valid_ral, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eeprom_timeout_without_ral_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_checksum_prefers_valid_ral, setup, teardown),
		cmocka_unit_test_setup_teardown(test_i219_reads_ral_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reset_that_never_completes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dma_block_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx_frames_reach_the_wire, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx_ring_full_then_drains, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_delivers_in_order_within_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_ring_wraps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_errors_and_fragments_are_not_delivered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_quiesces, setup, teardown),
	};

	return cmocka_run_group_tests_name("test_e1000", tests, NULL, NULL);
}
