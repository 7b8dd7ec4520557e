/* SPDX-License-Identifier: MIT */
/*
 * pci_hide.c - the hidden PCI functions and configuration mechanism #1
 * as the guest sees it (the contract is in pci_hide.h).
 */
#include "vmm/exit/pci_hide.h"

#include <string.h>

#include "vmm/vmx/ept.h"
#include "vmm/hw/hw.h"
#include "vmm/vmx/mtrr.h"

static struct pci_hide_list hide_list;
static struct pci_ecam ecam;

/*
 * The guest's CONFIG_ADDRESS (one per machine) and what the hardware
 * register holds now; they differ only after tracevisor's own accesses.
 */
static uint32_t latch;
static uint32_t hw_latch;
static bool hw_latch_known;
static int cfg_lock;

static void lock(void)
{
	while (__atomic_exchange_n(&cfg_lock, 1, __ATOMIC_ACQUIRE))
		hw_pause();
}

static void unlock(void)
{
	__atomic_store_n(&cfg_lock, 0, __ATOMIC_RELEASE);
}

/* --- the list ------------------------------------------------------------ */

int pci_hide_add(uint32_t bus, uint32_t dev, uint32_t fn)
{
	if (bus > 255 || dev > 31 || fn > 7)
		return PCI_HIDE_ERR_INVAL;
	if (pci_hide_is_hidden((uint8_t)bus, (uint8_t)dev, (uint8_t)fn))
		return 0;
	if (hide_list.n >= PCI_HIDE_MAX)
		return PCI_HIDE_ERR_FULL;
	hide_list.f[hide_list.n].bus = (uint8_t)bus;
	hide_list.f[hide_list.n].dev = (uint8_t)dev;
	hide_list.f[hide_list.n].fn = (uint8_t)fn;
	hide_list.n++;
	return 0;
}

bool pci_hide_is_hidden(uint8_t bus, uint8_t dev, uint8_t fn)
{
	for (uint32_t i = 0; i < hide_list.n && i < PCI_HIDE_MAX; i++)
		if (hide_list.f[i].bus == bus && hide_list.f[i].dev == dev &&
		    hide_list.f[i].fn == fn)
			return true;
	return false;
}

const struct pci_hide_list *pci_hide_get(void)
{
	return &hide_list;
}

void pci_hide_init(const struct pci_hide_list *list, const struct pci_ecam *e)
{
	struct pci_hide_list l = { 0 };
	struct pci_ecam c = { 0 };

	/* Copies first: list may be pci_hide_get() itself. */
	if (list)
		l = *list;
	if (e)
		c = *e;
	pci_hide_reset();
	hide_list = l;
	if (hide_list.n > PCI_HIDE_MAX)
		hide_list.n = PCI_HIDE_MAX;
	ecam = c;
}

void pci_hide_reset(void)
{
	memset(&hide_list, 0, sizeof(hide_list));
	memset(&ecam, 0, sizeof(ecam));
	latch = 0;
	hw_latch = 0;
	hw_latch_known = false;
	cfg_lock = 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Exactly n hex digits at s (n <= 4); -1 otherwise. */
static int hex_n(const char *s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		int d = hex_digit(s[i]);

		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

int pci_bdf_parse(const char *s, struct pci_bdf *out)
{
	int bus, dev, fn;

	if (!s || !out)
		return PCI_HIDE_ERR_INVAL;
	/* "SSSS:" segment prefix, as lspci -D prints it: only segment 0. */
	if (strlen(s) == 12 && s[4] == ':') {
		if (hex_n(s, 4) != 0)
			return PCI_HIDE_ERR_INVAL;
		s += 5;
	}
	if (strlen(s) != 7 || s[2] != ':' || s[5] != '.')
		return PCI_HIDE_ERR_INVAL;
	bus = hex_n(s, 2);
	dev = hex_n(s + 3, 2);
	fn = hex_n(s + 6, 1);
	if (bus < 0 || dev < 0 || dev > 31 || fn < 0 || fn > 7)
		return PCI_HIDE_ERR_INVAL;
	out->bus = (uint8_t)bus;
	out->dev = (uint8_t)dev;
	out->fn = (uint8_t)fn;
	return 0;
}

/* --- configuration mechanism #1 ------------------------------------------- */

static uint32_t width_mask(unsigned size)
{
	return size >= 4 ? 0xffffffffu : (1u << (8 * size)) - 1;
}

static uint32_t port_in(uint16_t port, unsigned size)
{
	if (size == 1)
		return hw_inb(port);
	if (size == 2)
		return hw_inw(port);
	return hw_inl(port);
}

static void port_out(uint16_t port, unsigned size, uint32_t v)
{
	if (size == 1)
		hw_outb(port, (uint8_t)v);
	else if (size == 2)
		hw_outw(port, (uint16_t)v);
	else
		hw_outl(port, v);
}

/* Under the lock: the hardware latch holds the guest's again. */
static void sync_hw_latch(void)
{
	if (hw_latch_known && hw_latch == latch)
		return;
	hw_outl(PCI_M1_ADDRESS_PORT, latch);
	hw_latch = latch;
	hw_latch_known = true;
}

enum pci_io_outcome pci_cfg_io(uint16_t port, unsigned size, bool in, uint32_t *value)
{
	uint32_t mask = width_mask(size);
	enum pci_io_outcome out = PCI_IO_PASSED;

	lock();
	if (port == PCI_M1_ADDRESS_PORT && size == 4) {
		/*
		 * Only a dword access is CONFIG_ADDRESS; bytes and words at
		 * 0xCF8-0xCFB are ordinary I/O (PCI 3.0 3.2.2.3.2), e.g. the
		 * reset control register at 0xCF9: passed below.
		 */
		if (in) {
			*value = latch;
			out = PCI_IO_LATCH_READ;
		} else {
			latch = *value & ~PCI_CA_RO_ZERO;
			hw_outl(PCI_M1_ADDRESS_PORT, *value);
			hw_latch = latch;
			hw_latch_known = true;
			out = PCI_IO_LATCH_WRITE;
		}
		goto done;
	}
	/*
	 * Any byte of the access in 0xCFC-0xCFF while the enable bit is set
	 * makes it a configuration cycle for the latched function; one that
	 * straddles into 0xD00 or down into 0xCFA is treated as one too.
	 */
	if (port < PCI_M1_DATA_PORT + 4 && port + size > PCI_M1_DATA_PORT &&
	    (latch & PCI_CA_ENABLE) &&
	    pci_hide_is_hidden((uint8_t)PCI_CA_BUS(latch), (uint8_t)PCI_CA_DEV(latch),
			       (uint8_t)PCI_CA_FN(latch))) {
		if (in) {
			*value = mask;
			out = PCI_IO_HIDDEN_READ;
		} else {
			out = PCI_IO_HIDDEN_WRITE;
		}
		goto done;
	}
	/* The hardware decides from its own latch: make it the guest's. */
	if (port + size > PCI_M1_DATA_PORT)
		sync_hw_latch();
	if (in)
		*value = port_in(port, size) & mask;
	else
		port_out(port, size, *value & mask);
done:
	unlock();
	return out;
}

uint32_t pci_cfg_latch(void)
{
	return __atomic_load_n(&latch, __ATOMIC_RELAXED);
}

void pci_cfg_latch_init(uint32_t hw_value)
{
	lock();
	latch = hw_value & ~PCI_CA_RO_ZERO;
	hw_latch = hw_value;
	hw_latch_known = true;
	unlock();
}

static uint32_t own_address(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t reg)
{
	return PCI_CA_ENABLE | ((uint32_t)bus << 16) | ((uint32_t)(dev & 0x1f) << 11) |
	       ((uint32_t)(fn & 7) << 8) | (reg & 0xfcu);
}

uint32_t pci_cfg_read32(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t reg)
{
	uint32_t v;

	lock();
	hw_latch = own_address(bus, dev, fn, reg);
	hw_latch_known = true;
	hw_outl(PCI_M1_ADDRESS_PORT, hw_latch);
	v = hw_inl(PCI_M1_DATA_PORT);
	unlock();
	return v;
}

void pci_cfg_write32(uint8_t bus, uint8_t dev, uint8_t fn, uint8_t reg, uint32_t value)
{
	lock();
	hw_latch = own_address(bus, dev, fn, reg);
	hw_latch_known = true;
	hw_outl(PCI_M1_ADDRESS_PORT, hw_latch);
	hw_outl(PCI_M1_DATA_PORT, value);
	unlock();
}

/* --- ECAM ------------------------------------------------------------------ */

const struct pci_ecam *pci_hide_ecam(void)
{
	return &ecam;
}

bool pci_hide_ecam_page(uint32_t i, uint64_t *gpa)
{
	const struct pci_bdf *f;

	if (i >= hide_list.n || i >= PCI_HIDE_MAX || !ecam.base)
		return false;
	f = &hide_list.f[i];
	if (f->bus < ecam.start_bus || f->bus > ecam.end_bus)
		return false;
	*gpa = ecam.base + pci_ecam_offset(f->bus, f->dev, f->fn);
	return true;
}

bool pci_hide_ecam_hit(uint64_t gpa)
{
	uint64_t page;

	for (uint32_t i = 0; i < hide_list.n; i++)
		if (pci_hide_ecam_page(i, &page) && (gpa & ~0xfffull) == page)
			return true;
	return false;
}

int pci_hide_map_ecam(struct ept *ept, struct page_pool *pool, uint64_t ff_pa)
{
	int mapped = 0;

	for (uint32_t i = 0; i < hide_list.n; i++) {
		uint64_t gpa;
		int rc;

		if (!pci_hide_ecam_page(i, &gpa))
			continue;
		rc = ept_map_4k(ept, pool, gpa, ff_pa, EPT_R | EPT_X, MTRR_TYPE_UC);
		if (rc)
			return rc;
		mapped++;
	}
	return mapped;
}
