/* SPDX-License-Identifier: MIT */
/*
 * pci.c - configuration mechanism #1, bus scan, BAR decoding.
 */
#include "drivers/pci.h"

#include "vmm/hw/hw.h"

#define PCI_CONFIG_ADDRESS 0xcf8
#define PCI_CONFIG_DATA    0xcfc

uint32_t pci_cfg_address(struct pci_addr a, uint16_t off)
{
	/* Bit 31 enable, 23:16 bus, 15:11 device, 10:8 function, 7:2 register. */
	return 0x80000000u | (uint32_t)a.bus << 16 | (uint32_t)(a.dev & 0x1f) << 11 |
	       (uint32_t)(a.fn & 7) << 8 | (off & 0xfc);
}

/*
 * The byte lanes of CONFIG_DATA select the bytes of the dword (PCI 3.0,
 * 3.2.2.3.2): a 16-bit register at offset 6 is read with IN 0xCFE, so a
 * 16-bit write never rewrites its neighbour (the status register's bits
 * are write-one-to-clear).
 */
static uint32_t ports_read(void *ctx, struct pci_addr a, uint16_t off, int width)
{
	uint16_t port = (uint16_t)(PCI_CONFIG_DATA + (off & 3));

	(void)ctx;
	hw_outl(PCI_CONFIG_ADDRESS, pci_cfg_address(a, off));
	switch (width) {
	case 1: return hw_inb(port);
	case 2: return hw_inw(port);
	default: return hw_inl(PCI_CONFIG_DATA);
	}
}

static void ports_write(void *ctx, struct pci_addr a, uint16_t off, int width, uint32_t v)
{
	uint16_t port = (uint16_t)(PCI_CONFIG_DATA + (off & 3));

	(void)ctx;
	hw_outl(PCI_CONFIG_ADDRESS, pci_cfg_address(a, off));
	switch (width) {
	case 1: hw_outb(port, (uint8_t)v); break;
	case 2: hw_outw(port, (uint16_t)v); break;
	default: hw_outl(PCI_CONFIG_DATA, v); break;
	}
}

const struct pci_cfg pci_cfg_ports = { ports_read, ports_write, 0 };

uint32_t pci_read32(const struct pci_cfg *c, struct pci_addr a, uint16_t off)
{
	return c->read(c->ctx, a, off, 4);
}

uint16_t pci_read16(const struct pci_cfg *c, struct pci_addr a, uint16_t off)
{
	return (uint16_t)c->read(c->ctx, a, off, 2);
}

uint8_t pci_read8(const struct pci_cfg *c, struct pci_addr a, uint16_t off)
{
	return (uint8_t)c->read(c->ctx, a, off, 1);
}

void pci_write32(const struct pci_cfg *c, struct pci_addr a, uint16_t off, uint32_t v)
{
	c->write(c->ctx, a, off, 4, v);
}

void pci_write16(const struct pci_cfg *c, struct pci_addr a, uint16_t off, uint16_t v)
{
	c->write(c->ctx, a, off, 2, v);
}

int pci_probe(const struct pci_cfg *c, struct pci_addr a, struct pci_dev *d)
{
	uint32_t id = pci_read32(c, a, PCI_VENDOR_ID);
	uint32_t cls;

	if ((id & 0xffff) == 0xffff)
		return PCI_E_NODEV;
	cls = pci_read32(c, a, PCI_REVISION);
	d->addr = a;
	d->vendor = (uint16_t)id;
	d->device = (uint16_t)(id >> 16);
	d->prog_if = (uint8_t)(cls >> 8);
	d->subclass = (uint8_t)(cls >> 16);
	d->class_code = (uint8_t)(cls >> 24);
	d->header_type = pci_read8(c, a, PCI_HEADER_TYPE);
	return 0;
}

int pci_scan(const struct pci_cfg *c, pci_visit_fn fn, void *ctx)
{
	for (unsigned bus = 0; bus < 256; bus++) {
		for (unsigned dev = 0; dev < 32; dev++) {
			unsigned nfn = 1;

			for (unsigned f = 0; f < nfn; f++) {
				struct pci_addr a = { (uint8_t)bus, (uint8_t)dev, (uint8_t)f };
				struct pci_dev d;
				int rc;

				if (pci_probe(c, a, &d))
					continue;
				/* Functions 1..7 exist only behind a multi-function fn 0 (PCI 3.0, 6.2.1). */
				if (f == 0 && (d.header_type & PCI_HEADER_MULTIFUNCTION))
					nfn = 8;
				rc = fn(&d, ctx);
				if (rc)
					return rc;
			}
		}
	}
	return 0;
}

int pci_bar_decode(const struct pci_cfg *c, struct pci_addr a, int index,
		   struct pci_bar *bar)
{
	uint16_t off, cmd;
	uint32_t lo, lo_mask, hi = 0, hi_mask = 0xffffffffu;
	uint64_t mask;

	if (index < 0 || index > 5)
		return PCI_E_ARG;
	if (pci_read16(c, a, PCI_VENDOR_ID) == 0xffff)
		return PCI_E_NODEV;
	off = (uint16_t)(PCI_BAR0 + 4 * index);
	bar->kind = PCI_BAR_NONE;
	bar->prefetchable = false;
	bar->base = 0;
	bar->size = 0;

	lo = pci_read32(c, a, off);
	if ((lo & 1) == 0 && ((lo >> 1) & 3) == 2) {
		if (index == 5)
			return PCI_E_BAR;
		hi = pci_read32(c, a, (uint16_t)(off + 4));
	}

	/* No decoding while the BAR holds all ones (PCI 3.0, 6.2.5.1). */
	cmd = pci_read16(c, a, PCI_COMMAND);
	pci_write16(c, a, PCI_COMMAND, cmd & (uint16_t)~(PCI_CMD_IO | PCI_CMD_MEMORY));
	pci_write32(c, a, off, 0xffffffffu);
	lo_mask = pci_read32(c, a, off);
	pci_write32(c, a, off, lo);
	if ((lo & 1) == 0 && ((lo >> 1) & 3) == 2) {
		pci_write32(c, a, (uint16_t)(off + 4), 0xffffffffu);
		hi_mask = pci_read32(c, a, (uint16_t)(off + 4));
		pci_write32(c, a, (uint16_t)(off + 4), hi);
	}
	pci_write16(c, a, PCI_COMMAND, cmd);

	if (lo & 1) {
		/* I/O: bits 31:2 address (upper 16 may read as 0 on x86). */
		mask = lo_mask & ~3u;
		if ((mask & 0xffff) == 0)
			return PCI_E_BAR;
		mask |= 0xffff0000u;
		bar->kind = PCI_BAR_IO;
		bar->base = lo & 0xfffcu;
		bar->size = (uint32_t)(~mask + 1);
		return 0;
	}
	switch ((lo >> 1) & 3) {
	case 0:
		mask = lo_mask & ~0xfu;
		if (!mask)
			return PCI_E_BAR;
		bar->kind = PCI_BAR_MEM32;
		bar->base = lo & ~0xfu;
		bar->size = (uint32_t)(~(uint32_t)mask + 1);
		break;
	case 2:
		mask = ((uint64_t)hi_mask << 32) | (lo_mask & ~0xfu);
		if (!mask)
			return PCI_E_BAR;
		bar->kind = PCI_BAR_MEM64;
		bar->base = ((uint64_t)hi << 32) | (lo & ~0xfu);
		bar->size = ~mask + 1;
		break;
	default:
		/* Type 1 (below 1 MiB) is reserved since PCI 3.0. */
		return PCI_E_BAR;
	}
	bar->prefetchable = (lo >> 3) & 1;
	return 0;
}

uint16_t pci_enable(const struct pci_cfg *c, struct pci_addr a, uint16_t bits)
{
	uint16_t cmd = pci_read16(c, a, PCI_COMMAND) | bits;

	pci_write16(c, a, PCI_COMMAND, cmd);
	return cmd;
}

uint16_t pci_disable(const struct pci_cfg *c, struct pci_addr a, uint16_t bits)
{
	uint16_t cmd = pci_read16(c, a, PCI_COMMAND) & (uint16_t)~bits;

	pci_write16(c, a, PCI_COMMAND, cmd);
	return cmd;
}
