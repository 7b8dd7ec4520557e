/* SPDX-License-Identifier: MIT */
/*
 * test_pci.c - drivers/pci.c: configuration mechanism #1 through the port
 * fake of tests/fakes/hw_fake (address encoding, byte lanes), and the
 * scan, BAR sizing and command register through a configuration-space
 * model behind struct pci_cfg.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "drivers/pci.h"
#include "hw_fake.h"

/* --- a configuration-space model ------------------------------------------ */

struct fdev {
	struct pci_addr a;
	uint8_t cfg[256];
	uint32_t bar_mask[6];      /* writable bits of each BAR dword */
	uint16_t cmd_at_sizing;    /* command register when a BAR got all ones */
	int sizing_writes;
};

static struct fdev devs[8];
static int ndevs;
static int cfg_reads;

static struct fdev *find(struct pci_addr a)
{
	for (int i = 0; i < ndevs; i++)
		if (devs[i].a.bus == a.bus && devs[i].a.dev == a.dev && devs[i].a.fn == a.fn)
			return &devs[i];
	return NULL;
}

static uint32_t model_read(void *ctx, struct pci_addr a, uint16_t off, int width)
{
	struct fdev *d = find(a);
	uint32_t v = 0;

	(void)ctx;
	cfg_reads++;
	assert_true(off % width == 0 && off < 256);
	if (!d)
		return width == 4 ? 0xffffffffu : width == 2 ? 0xffff : 0xff;
	memcpy(&v, d->cfg + off, (size_t)width);
	return v;
}

static void model_write(void *ctx, struct pci_addr a, uint16_t off, int width, uint32_t v)
{
	struct fdev *d = find(a);

	(void)ctx;
	assert_true(off % width == 0 && off < 256);
	if (!d)
		return;
	if (off >= PCI_BAR0 && off < PCI_BAR0 + 24) {
		int i = (off - PCI_BAR0) / 4;
		uint32_t old;

		assert_int_equal(width, 4);
		memcpy(&old, d->cfg + off, 4);
		if (v == 0xffffffffu) {
			memcpy(&d->cmd_at_sizing, d->cfg + PCI_COMMAND, 2);
			d->sizing_writes++;
		}
		/* Read-only low bits (type, prefetch, I/O indicator) stay. */
		v = (v & d->bar_mask[i]) | (old & ~d->bar_mask[i]);
	}
	memcpy(d->cfg + off, &v, (size_t)width);
}

static const struct pci_cfg model = { model_read, model_write, NULL };

static struct fdev *add(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t vendor, uint16_t device,
			uint8_t hdr)
{
	struct fdev *d = &devs[ndevs++];

	memset(d, 0, sizeof(*d));
	d->a = (struct pci_addr){ bus, dev, fn };
	memcpy(d->cfg + PCI_VENDOR_ID, &vendor, 2);
	memcpy(d->cfg + PCI_DEVICE_ID, &device, 2);
	d->cfg[PCI_CLASS] = PCI_CLASS_NETWORK;
	d->cfg[PCI_HEADER_TYPE] = hdr;
	return d;
}

static void set32(struct fdev *d, uint16_t off, uint32_t v)
{
	memcpy(d->cfg + off, &v, 4);
}

static uint32_t get32(struct fdev *d, uint16_t off)
{
	uint32_t v;

	memcpy(&v, d->cfg + off, 4);
	return v;
}

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	ndevs = 0;
	cfg_reads = 0;
	return 0;
}

/* --- mechanism #1 through the ports ----------------------------------------- */

static uint32_t port_dword;   /* what the "device" holds at the selected dword */
static uint32_t last_address;

static uint32_t ports_in(uint16_t port, int width, void *ctx)
{
	const struct hw_fake_io *io = hw_fake_io_out_log(0);

	(void)ctx;
	/* Every access selects its dword first with a 32-bit OUT to 0xCF8. */
	assert_non_null(io);
	assert_int_equal(io->port, 0xcf8);
	assert_int_equal(io->width, 4);
	last_address = io->value;
	assert_true(port >= 0xcfc && port <= 0xcff);
	assert_true((port & 3) + width <= 4);
	return port_dword >> (8 * (port & 3));
}

static void test_address_encoding(void **state)
{
	(void)state;
	assert_int_equal(pci_cfg_address((struct pci_addr){ 0, 0, 0 }, 0), 0x80000000u);
	/* bus 23:16, device 15:11, function 10:8, register 7:2 (PCI 3.0, 3.2.2.3.2). */
	assert_int_equal(pci_cfg_address((struct pci_addr){ 0xab, 0x1f, 6 }, 0x3e),
			 0x80000000u | 0xab0000u | 0x1fu << 11 | 6u << 8 | 0x3c);
}

static void test_ports_read_widths(void **state)
{
	struct pci_addr a = { 2, 3, 1 };

	(void)state;
	hw_fake_set_io_in(ports_in, NULL);
	port_dword = 0x10d38086;
	assert_int_equal(pci_read32(&pci_cfg_ports, a, PCI_VENDOR_ID), 0x10d38086);
	assert_int_equal(last_address, pci_cfg_address(a, 0));
	assert_int_equal(pci_read16(&pci_cfg_ports, a, PCI_DEVICE_ID), 0x10d3);
	assert_int_equal(last_address, pci_cfg_address(a, 0));
	port_dword = 0x02000003;   /* class 02, subclass 00, prog-if 00, revision 03 */
	assert_int_equal(pci_read8(&pci_cfg_ports, a, PCI_CLASS), 0x02);
	assert_int_equal(pci_read8(&pci_cfg_ports, a, PCI_REVISION), 0x03);
	assert_int_equal(last_address, pci_cfg_address(a, 8));
}

static void test_ports_write16_touches_only_its_lanes(void **state)
{
	struct pci_addr a = { 0, 4, 0 };
	const struct hw_fake_io *io;

	(void)state;
	/* Command at 0x04: a 16-bit OUT to 0xCFC, never a dword that would
	 * also write the status register's write-one-to-clear bits. */
	pci_write16(&pci_cfg_ports, a, PCI_COMMAND, 0x0407);
	io = hw_fake_io_out_log(0);
	assert_int_equal(io->port, 0xcfc);
	assert_int_equal(io->width, 2);
	assert_int_equal(io->value, 0x0407);
	io = hw_fake_io_out_log(1);
	assert_int_equal(io->port, 0xcf8);
	assert_int_equal(io->value, pci_cfg_address(a, PCI_COMMAND));
	/* A register in the upper half goes to 0xCFE. */
	pci_write16(&pci_cfg_ports, a, PCI_STATUS, 0xf900);
	io = hw_fake_io_out_log(0);
	assert_int_equal(io->port, 0xcfe);
	assert_int_equal(io->width, 2);
	pci_write32(&pci_cfg_ports, a, PCI_BAR0, 0xfebc0000u);
	io = hw_fake_io_out_log(0);
	assert_int_equal(io->port, 0xcfc);
	assert_int_equal(io->width, 4);
	assert_int_equal(io->value, 0xfebc0000u);
}

static void test_nothing_there_reads_all_ones(void **state)
{
	struct pci_dev d;

	(void)state;
	/* hw_fake's floating bus: every IN reads all ones. */
	assert_int_equal(pci_probe(&pci_cfg_ports, (struct pci_addr){ 0, 1, 0 }, &d), PCI_E_NODEV);
	assert_int_equal(pci_probe(&model, (struct pci_addr){ 0, 1, 0 }, &d), PCI_E_NODEV);
}

/* --- scan ------------------------------------------------------------------------- */

struct seen {
	struct pci_dev d[16];
	int n;
	int stop_at;
};

static int visit(const struct pci_dev *d, void *ctx)
{
	struct seen *s = ctx;

	s->d[s->n++] = *d;
	return s->n == s->stop_at ? 7 : 0;
}

static void test_scan_finds_functions_in_order(void **state)
{
	struct seen s = { .n = 0, .stop_at = 0 };

	(void)state;
	add(0, 0, 0, 0x8086, 0x29c0, 0x00);
	add(0, 0, 1, 0x8086, 0xdead, 0x00);   /* fn 0 not multi-function: not scanned */
	add(0, 3, 0, 0x8086, 0x100e, 0x80);   /* multi-function */
	add(0, 3, 5, 0x1af4, 0x1000, 0x00);
	add(2, 0x1f, 6, 0x8086, 0x15b8, 0x00); /* function 6 without function 0: absent */
	add(5, 0x1f, 0, 0x8086, 0x15b7, 0x00);
	assert_int_equal(pci_scan(&model, visit, &s), 0);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.d[0].device, 0x29c0);
	assert_int_equal(s.d[1].device, 0x100e);
	assert_int_equal(s.d[1].header_type, 0x80);
	assert_int_equal(s.d[2].vendor, 0x1af4);
	assert_int_equal(s.d[2].addr.fn, 5);
	assert_int_equal(s.d[3].addr.bus, 5);
	assert_int_equal(s.d[3].addr.dev, 0x1f);
	assert_int_equal(s.d[3].class_code, PCI_CLASS_NETWORK);
	assert_int_equal(s.d[3].device, 0x15b7);
}

static void test_scan_stops_when_asked(void **state)
{
	struct seen s = { .n = 0, .stop_at = 2 };

	(void)state;
	add(0, 1, 0, 0x8086, 1, 0);
	add(0, 2, 0, 0x8086, 2, 0);
	add(0, 3, 0, 0x8086, 3, 0);
	assert_int_equal(pci_scan(&model, visit, &s), 7);
	assert_int_equal(s.n, 2);
}

/* --- BARs ------------------------------------------------------------------------- */

static void test_bar_decode_kinds_and_sizes(void **state)
{
	struct fdev *d;
	struct pci_addr a = { 0, 3, 0 };
	struct pci_bar b;

	(void)state;
	d = add(0, 3, 0, 0x8086, 0x100e, 0);
	set32(d, PCI_BAR0, 0xfebc0000u);            /* 128 KiB memory, 32-bit */
	d->bar_mask[0] = 0xfffe0000u;
	set32(d, PCI_BAR0 + 4, 0x0000c041u);        /* 64 ports at 0xc040 */
	d->bar_mask[1] = 0xffffffc0u;
	set32(d, PCI_BAR0 + 8, 0x0000400cu);        /* 64-bit prefetchable 16 KiB ... */
	d->bar_mask[2] = 0xffffc000u;
	set32(d, PCI_BAR0 + 12, 0x00000008u);       /* ... at 0x8_0000_4000 */
	d->bar_mask[3] = 0xffffffffu;
	d->cfg[PCI_COMMAND] = PCI_CMD_IO | PCI_CMD_MEMORY | PCI_CMD_BUS_MASTER;

	assert_int_equal(pci_bar_decode(&model, a, 0, &b), 0);
	assert_int_equal(b.kind, PCI_BAR_MEM32);
	assert_int_equal(b.base, 0xfebc0000u);
	assert_int_equal(b.size, 128 * 1024);
	assert_false(b.prefetchable);
	/* Decoding was off while the BAR held all ones, and is back. */
	assert_int_equal(d->cmd_at_sizing & (PCI_CMD_IO | PCI_CMD_MEMORY), 0);
	assert_int_equal(d->cfg[PCI_COMMAND], PCI_CMD_IO | PCI_CMD_MEMORY | PCI_CMD_BUS_MASTER);
	assert_int_equal(get32(d, PCI_BAR0), 0xfebc0000u);

	assert_int_equal(pci_bar_decode(&model, a, 1, &b), 0);
	assert_int_equal(b.kind, PCI_BAR_IO);
	assert_int_equal(b.base, 0xc040);
	assert_int_equal(b.size, 64);
	assert_int_equal(get32(d, PCI_BAR0 + 4), 0x0000c041u);

	assert_int_equal(pci_bar_decode(&model, a, 2, &b), 0);
	assert_int_equal(b.kind, PCI_BAR_MEM64);
	assert_true(b.prefetchable);
	assert_int_equal(b.base, 0x800004000ull);
	assert_int_equal(b.size, 16 * 1024);
	assert_int_equal(get32(d, PCI_BAR0 + 8), 0x0000400cu);
	assert_int_equal(get32(d, PCI_BAR0 + 12), 0x00000008u);

	/* BAR4 not implemented (reads 0, nothing writable). */
	assert_int_equal(pci_bar_decode(&model, a, 4, &b), PCI_E_BAR);
	assert_int_equal(b.kind, PCI_BAR_NONE);
	assert_int_equal(pci_bar_decode(&model, a, 6, &b), PCI_E_ARG);
	assert_int_equal(pci_bar_decode(&model, a, -1, &b), PCI_E_ARG);
	/* A 64-bit BAR cannot start in slot 5. */
	set32(d, PCI_BAR0 + 20, 0x4u);
	d->bar_mask[5] = 0xfffff000u;
	assert_int_equal(pci_bar_decode(&model, a, 5, &b), PCI_E_BAR);
	assert_int_equal(pci_bar_decode(&model, (struct pci_addr){ 0, 9, 0 }, 0, &b), PCI_E_NODEV);
}

static void test_enable_and_disable_keep_other_bits(void **state)
{
	struct fdev *d;
	struct pci_addr a = { 1, 0, 0 };

	(void)state;
	d = add(1, 0, 0, 0x1af4, 0x1000, 0);
	d->cfg[PCI_COMMAND] = PCI_CMD_IO;
	d->cfg[PCI_STATUS + 1] = 0x02;
	assert_int_equal(pci_enable(&model, a, PCI_CMD_BUS_MASTER | PCI_CMD_INTX_DISABLE),
			 PCI_CMD_IO | PCI_CMD_BUS_MASTER | PCI_CMD_INTX_DISABLE);
	assert_int_equal(d->cfg[PCI_COMMAND], PCI_CMD_IO | PCI_CMD_BUS_MASTER);
	assert_int_equal(d->cfg[PCI_COMMAND + 1], PCI_CMD_INTX_DISABLE >> 8);
	assert_int_equal(pci_disable(&model, a, PCI_CMD_BUS_MASTER),
			 PCI_CMD_IO | PCI_CMD_INTX_DISABLE);
	assert_int_equal(d->cfg[PCI_COMMAND], PCI_CMD_IO);
	assert_int_equal(d->cfg[PCI_STATUS + 1], 0x02);   /* status untouched */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_address_encoding, setup),
		cmocka_unit_test_setup(test_ports_read_widths, setup),
		cmocka_unit_test_setup(test_ports_write16_touches_only_its_lanes, setup),
		cmocka_unit_test_setup(test_nothing_there_reads_all_ones, setup),
		cmocka_unit_test_setup(test_scan_finds_functions_in_order, setup),
		cmocka_unit_test_setup(test_scan_stops_when_asked, setup),
		cmocka_unit_test_setup(test_bar_decode_kinds_and_sizes, setup),
		cmocka_unit_test_setup(test_enable_and_disable_keep_other_bits, setup),
	};

	return cmocka_run_group_tests_name("test_pci", tests, NULL, NULL);
}
