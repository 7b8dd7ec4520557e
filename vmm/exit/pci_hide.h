/* SPDX-License-Identifier: MIT */
/*
 * pci_hide.h - PCI functions the guest must not see (the export NIC, or
 * any device named by pci_hide= in tracevisor.conf), and the emulation of
 * PCI configuration mechanism #1 (ports 0xCF8-0xCFF) that hides them.
 *
 * A hidden function reads as "no device" through both ways an OS reaches
 * configuration space:
 *   - mechanism #1 (PCI Local Bus Spec 3.0, 3.2.2.3.2): CONFIG_ADDRESS at
 *     0xCF8 (dword accesses only), CONFIG_DATA at 0xCFC-0xCFF.  The I/O
 *     bitmaps make those eight ports exit (vmm/exit/exit_io.c); reads of a
 *     hidden function return all ones (vendor ID 0xFFFF: no device,
 *     PCI 3.0 6.2.1), writes are dropped;
 *   - ECAM / MMCONFIG (PCI Express Base Spec 7.2.2, located by the ACPI
 *     MCFG table, PCI Firmware Spec 3.2 4.1.2): the 4-KiB page of each
 *     hidden function is mapped in EPT read-only onto a page of 0xFF
 *     bytes; writes fault into exit_ept.c and are dropped.
 *
 * CONFIG_ADDRESS is one register per machine, not per CPU, so the latch
 * is one global.  Writes to it are forwarded to the hardware as well and
 * every access to a visible function goes to the hardware after the
 * hardware latch was made equal to the guest's: the real devices always
 * see exactly the accesses the guest made to them (no shadow of their
 * state to go stale), and tracevisor's own configuration accesses in VMX
 * root (pci_cfg_read32/pci_cfg_write32) may use the hardware latch in
 * between.  One lock orders the latch and the data access across CPUs.
 *
 * The list is set at boot (pci_hide_add, before vmx_boot copies it into
 * the resident image through struct hv_boot_info) and read-only after.
 *
 * Errors (negative):
 *   PCI_HIDE_ERR_INVAL  bus > 255, device > 31, function > 7, NULL
 *                       pointer, or text that is not BB:DD.F
 *   PCI_HIDE_ERR_FULL   PCI_HIDE_MAX functions are hidden already
 */
#ifndef TV_PCI_HIDE_H
#define TV_PCI_HIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCI_HIDE_MAX 16

#define PCI_HIDE_ERR_INVAL (-1)
#define PCI_HIDE_ERR_FULL  (-2)

/* Configuration mechanism #1 ports and CONFIG_ADDRESS fields (PCI 3.0 3.2.2.3.2). */
#define PCI_M1_ADDRESS_PORT   0xcf8u
#define PCI_M1_DATA_PORT      0xcfcu
#define PCI_CA_ENABLE        (1u << 31)
#define PCI_CA_BUS(a)        (((a) >> 16) & 0xffu)
#define PCI_CA_DEV(a)        (((a) >> 11) & 0x1fu)
#define PCI_CA_FN(a)         (((a) >> 8) & 0x7u)
#define PCI_CA_REG(a)        ((a) & 0xfcu)
/* Bits 1:0 of CONFIG_ADDRESS are read-only zero. */
#define PCI_CA_RO_ZERO       0x3u

/* ECAM: 1 MiB per bus, 32 KiB per device, 4 KiB per function (PCIe 7.2.2). */
static inline uint64_t pci_ecam_offset(uint8_t bus, uint8_t dev, uint8_t fn)
{
	return ((uint64_t)bus << 20) | ((uint64_t)(dev & 0x1f) << 15) | ((uint64_t)(fn & 7) << 12);
}

struct pci_bdf {
	uint8_t bus, dev, fn;
};

struct pci_hide_list {
	uint32_t n;
	struct pci_bdf f[PCI_HIDE_MAX];
};

/*
 * One MCFG allocation (PCI Firmware Spec 3.2, Table 4-3): base is the
 * address of bus 0 of the segment even when start_bus > 0, so a
 * function's page is base + pci_ecam_offset(bus, dev, fn).  base 0: none.
 */
struct pci_ecam {
	uint64_t base;
	uint16_t segment;
	uint8_t start_bus, end_bus;
};

/* How pci_cfg_io answered one access. */
enum pci_io_outcome {
	PCI_IO_PASSED = 0,      /* forwarded to the hardware */
	PCI_IO_LATCH_WRITE,     /* dword write of CONFIG_ADDRESS (latched and forwarded) */
	PCI_IO_LATCH_READ,      /* dword read of CONFIG_ADDRESS (the latch) */
	PCI_IO_HIDDEN_READ,     /* CONFIG_DATA read of a hidden function: all ones */
	PCI_IO_HIDDEN_WRITE,    /* CONFIG_DATA write to a hidden function: dropped */
};

/* --- the list ------------------------------------------------------------ */

/*
 * pci_hide_add - hide bus:dev.fn (segment 0) from the guest.  Adding a
 * function twice is not an error (one entry).  Boot only: call before
 * vmx_boot, which hands the list to the resident copy.
 * Returns 0, PCI_HIDE_ERR_INVAL or PCI_HIDE_ERR_FULL.
 */
int pci_hide_add(uint32_t bus, uint32_t dev, uint32_t fn);

/* pci_hide_is_hidden - is bus:dev.fn in the list? */
bool pci_hide_is_hidden(uint8_t bus, uint8_t dev, uint8_t fn);

/* The list as it stands (for vmx_boot to copy into struct hv_boot_info). */
const struct pci_hide_list *pci_hide_get(void);

/*
 * pci_hide_init - the resident copy's state from boot info: list, ECAM
 * allocation (NULL or base 0: none).  Resets the latch.
 */
void pci_hide_init(const struct pci_hide_list *list, const struct pci_ecam *ecam);

/* pci_hide_reset - empty list, no ECAM, latch 0 (tests). */
void pci_hide_reset(void);

/*
 * pci_bdf_parse - "BB:DD.F" in hex as lspci prints it (an optional
 * "0000:" segment prefix, segment 0 only), bus 00-ff, device 00-1f,
 * function 0-7.  s must end right after F.
 * Returns 0 or PCI_HIDE_ERR_INVAL.
 */
int pci_bdf_parse(const char *s, struct pci_bdf *out);

/* --- configuration mechanism #1 ------------------------------------------- */

/*
 * pci_cfg_io - the guest's access to port (size 1, 2 or 4 bytes) in
 * 0xCF8-0xCFF, as the hardware would answer it with the hidden
 * functions absent:
 *   - a dword at 0xCF8 writes or reads CONFIG_ADDRESS (bits 1:0 read as 0);
 *   - an access touching 0xCFC-0xCFF with the enable bit set and the
 *     latch naming a hidden function reads all ones or is dropped;
 *   - everything else (a visible function, enable bit clear - then the
 *     data ports are ordinary I/O -, bytes and words at 0xCF8-0xCFB such
 *     as the reset control register at 0xCF9) goes to the hardware.
 * in: a read, *value receives the result (width-truncated); else *value
 * is written.  Returns the outcome.
 */
enum pci_io_outcome pci_cfg_io(uint16_t port, unsigned size, bool in, uint32_t *value);

/* The CONFIG_ADDRESS latch the guest last wrote (tests, diagnostics). */
uint32_t pci_cfg_latch(void);

/*
 * pci_cfg_latch_init - start from what the hardware register holds at
 * boot (the firmware's last CONFIG_ADDRESS), as the guest would read it.
 */
void pci_cfg_latch_init(uint32_t hw_value);

/*
 * pci_cfg_read32 / pci_cfg_write32 - tracevisor's own configuration
 * accesses (VMX root, e.g. the export NIC's driver), through mechanism #1
 * under the same lock; the guest's latch is restored in the hardware
 * before the guest's next data access.  reg is a dword offset 0..0xfc.
 */
uint32_t pci_cfg_read32(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t reg);
void pci_cfg_write32(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t reg, uint32_t value);

/* --- ECAM ------------------------------------------------------------------ */

/* The allocation the hypervisor uses (base 0: none). */
const struct pci_ecam *pci_hide_ecam(void);

/*
 * pci_hide_ecam_page - the guest-physical ECAM page of the i-th hidden
 * function.  False when i is past the list, there is no ECAM allocation,
 * or that function's bus lies outside start_bus..end_bus.
 */
bool pci_hide_ecam_page(uint32_t i, uint64_t *gpa);

/* pci_hide_ecam_hit - does gpa lie in the ECAM page of a hidden function? */
bool pci_hide_ecam_hit(uint64_t gpa);

struct ept;
struct page_pool;
/*
 * pci_hide_map_ecam - boot, after ept_build: map the ECAM page of every
 * hidden function read+execute-only (a fetch reads 0xFF bytes, as from
 * the real page of an absent function) onto ff_pa, a page of 0xFF bytes,
 * UC.  No INVEPT: no CPU has used the tables yet.  Returns the number of
 * pages mapped, or the first ept_map_4k error (EPT_ERR_*, negative).
 */
int pci_hide_map_ecam(struct ept *ept, struct page_pool *pool, uint64_t ff_pa);

#endif /* TV_PCI_HIDE_H */
