/* SPDX-License-Identifier: MIT */
/*
 * pci.h - PCI configuration space, bus scan and BAR decoding.
 *
 * Configuration space is reached through an accessor (struct pci_cfg) so
 * that the logic runs on a host against a fake; pci_cfg_ports is the real
 * one: configuration mechanism #1, CONFIG_ADDRESS at 0xCF8 and
 * CONFIG_DATA at 0xCFC..0xCFF (PCI Local Bus 3.0, 3.2.2.3.2), through the
 * port I/O of vmm/hw/hw.h.  Mechanism #1 reaches segment 0, buses 0..255 and
 * the first 256 bytes of each function, which is all a NIC driver needs.
 *
 * Errors: PCI_E_ARG (bad argument), PCI_E_NODEV (nothing answers at the
 * address), PCI_E_BAR (BAR not implemented, or a 64-bit BAR in slot 5).
 */
#ifndef TV_PCI_H
#define TV_PCI_H

#include <stdbool.h>
#include <stdint.h>

#define PCI_E_ARG   (-1)
#define PCI_E_NODEV (-2)
#define PCI_E_BAR   (-3)

/* Configuration header, type 0 (PCI Local Bus 3.0, 6.1). */
#define PCI_VENDOR_ID    0x00
#define PCI_DEVICE_ID    0x02
#define PCI_COMMAND      0x04
#define PCI_STATUS       0x06
#define PCI_REVISION     0x08
#define PCI_PROG_IF      0x09
#define PCI_SUBCLASS     0x0a
#define PCI_CLASS        0x0b
#define PCI_HEADER_TYPE  0x0e
#define PCI_BAR0         0x10
#define PCI_SUBSYS_VENDOR 0x2c
#define PCI_SUBSYS_ID    0x2e

/* Command register bits (PCI Local Bus 3.0, 6.2.2). */
#define PCI_CMD_IO          0x0001u
#define PCI_CMD_MEMORY      0x0002u
#define PCI_CMD_BUS_MASTER  0x0004u
#define PCI_CMD_INTX_DISABLE 0x0400u

#define PCI_HEADER_MULTIFUNCTION 0x80u
#define PCI_CLASS_NETWORK 0x02u

struct pci_addr {
	uint8_t bus, dev, fn;   /* dev 0..31, fn 0..7 */
};

/*
 * Configuration access.  off is a byte offset below 256, aligned to
 * width (1, 2 or 4).  A read where no function answers returns all ones.
 */
struct pci_cfg {
	uint32_t (*read)(void *ctx, struct pci_addr a, uint16_t off, int width);
	void (*write)(void *ctx, struct pci_addr a, uint16_t off, int width, uint32_t v);
	void *ctx;
};

/* Mechanism #1 through 0xCF8/0xCFC (hw_outl, hw_in, hw_out). */
extern const struct pci_cfg pci_cfg_ports;

/* CONFIG_ADDRESS for a function and dword offset (PCI 3.0, Figure 3-2). */
uint32_t pci_cfg_address(struct pci_addr a, uint16_t off);

uint32_t pci_read32(const struct pci_cfg *c, struct pci_addr a, uint16_t off);
uint16_t pci_read16(const struct pci_cfg *c, struct pci_addr a, uint16_t off);
uint8_t pci_read8(const struct pci_cfg *c, struct pci_addr a, uint16_t off);
void pci_write32(const struct pci_cfg *c, struct pci_addr a, uint16_t off, uint32_t v);
void pci_write16(const struct pci_cfg *c, struct pci_addr a, uint16_t off, uint16_t v);

struct pci_dev {
	struct pci_addr addr;
	uint16_t vendor, device;
	uint8_t class_code, subclass, prog_if, header_type;
};

/*
 * pci_scan - visit every function on buses 0..255 of segment 0 (brute
 * force: buses behind bridges are found by the numbers the firmware gave
 * them).  fn returns 0 to go on; anything else stops the scan and is
 * returned.  Returns 0 after a full scan, or fn's non-zero value.
 */
typedef int (*pci_visit_fn)(const struct pci_dev *d, void *ctx);
int pci_scan(const struct pci_cfg *c, pci_visit_fn fn, void *ctx);

/*
 * pci_probe - read the identification of one function into *d.
 * Returns 0, or PCI_E_NODEV when its vendor ID reads 0xffff.
 */
int pci_probe(const struct pci_cfg *c, struct pci_addr a, struct pci_dev *d);

enum pci_bar_kind { PCI_BAR_NONE, PCI_BAR_IO, PCI_BAR_MEM32, PCI_BAR_MEM64 };

struct pci_bar {
	enum pci_bar_kind kind;
	bool prefetchable;
	uint64_t base;   /* bus address (I/O port number for PCI_BAR_IO) */
	uint64_t size;   /* bytes (ports), a power of two */
};

/*
 * pci_bar_decode - decode and size BAR index (0..5) of a type-0 function.
 * Sizing writes all ones and restores the BAR (PCI 3.0, 6.2.5.1); I/O and
 * memory decoding are turned off meanwhile and restored.  A 64-bit BAR
 * takes index and index+1.  Returns 0, PCI_E_ARG (index > 5),
 * PCI_E_NODEV, or PCI_E_BAR (unimplemented BAR: kind PCI_BAR_NONE, or a
 * 64-bit BAR at index 5).
 */
int pci_bar_decode(const struct pci_cfg *c, struct pci_addr a, int index,
		   struct pci_bar *bar);

/*
 * pci_enable - set bits (PCI_CMD_*) in the command register, keeping the
 * others; pci_disable clears them.  Both return the new command value.
 */
uint16_t pci_enable(const struct pci_cfg *c, struct pci_addr a, uint16_t bits);
uint16_t pci_disable(const struct pci_cfg *c, struct pci_addr a, uint16_t bits);

#endif /* TV_PCI_H */
