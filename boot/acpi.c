/* SPDX-License-Identifier: MIT */
/*
 * acpi.c - RSDP -> XSDT -> MCFG (contract in acpi.h).
 */
#include "boot/acpi.h"

#include <stddef.h>
#include <string.h>

/* Layouts (ACPI 6.5 5.2.5.3, 5.2.6; PCI Firmware Spec 3.2 Table 4-2/4-3). */
struct acpi_rsdp {
	char signature[8];        /* "RSD PTR " */
	uint8_t checksum;         /* first 20 bytes sum to 0 */
	char oem_id[6];
	uint8_t revision;         /* 2 for ACPI 2.0 and later */
	uint32_t rsdt_address;
	uint32_t length;          /* of the whole structure (36) */
	uint64_t xsdt_address;
	uint8_t extended_checksum;  /* all length bytes sum to 0 */
	uint8_t reserved[3];
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_rsdp) == 36, "RSDP is 36 bytes");
_Static_assert(offsetof(struct acpi_rsdp, xsdt_address) == 24, "RSDP.XsdtAddress at 24");

struct acpi_sdt_header {
	char signature[4];
	uint32_t length;          /* header included */
	uint8_t revision;
	uint8_t checksum;
	char oem_id[6];
	char oem_table_id[8];
	uint32_t oem_revision;
	uint32_t creator_id;
	uint32_t creator_revision;
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_sdt_header) == 36, "SDT header is 36 bytes");

struct acpi_mcfg_entry {
	uint64_t base;
	uint16_t segment;
	uint8_t start_bus, end_bus;
	uint32_t reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_mcfg_entry) == 16, "MCFG allocation is 16 bytes");

#define MCFG_ENTRIES_OFFSET (sizeof(struct acpi_sdt_header) + 8)
/* Tables larger than this are not believed (a corrupt length). */
#define ACPI_TABLE_MAX (1u << 20)

static uint8_t sum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint8_t s = 0;

	for (size_t i = 0; i < n; i++)
		s = (uint8_t)(s + b[i]);
	return s;
}

static const struct acpi_sdt_header *table_at(uint64_t pa, const char sig[4], size_t min_len)
{
	const struct acpi_sdt_header *h = (const void *)(uintptr_t)pa;
	uint32_t len;

	if (!pa)
		return NULL;
	memcpy(&len, &h->length, sizeof(len));
	if (memcmp(h->signature, sig, 4) || len < min_len || len > ACPI_TABLE_MAX ||
	    sum(h, len) != 0)
		return NULL;
	return h;
}

int acpi_find_ecam(const void *rsdp_p, struct pci_ecam *out)
{
	const struct acpi_rsdp *rsdp = rsdp_p;
	const struct acpi_sdt_header *xsdt, *mcfg = NULL;
	uint64_t xsdt_pa;
	uint32_t len;
	size_t n;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!rsdp || !out)
		return ACPI_ERR_ARG;
	if (memcmp(rsdp->signature, "RSD PTR ", 8) || sum(rsdp, 20) != 0 || rsdp->revision < 2)
		return ACPI_ERR_RSDP;
	memcpy(&len, &rsdp->length, sizeof(len));
	memcpy(&xsdt_pa, &rsdp->xsdt_address, sizeof(xsdt_pa));
	if (len < sizeof(*rsdp) || len > 4096 || sum(rsdp, len) != 0 || !xsdt_pa)
		return ACPI_ERR_RSDP;
	xsdt = table_at(xsdt_pa, "XSDT", sizeof(*xsdt));
	if (!xsdt)
		return ACPI_ERR_TABLE;
	memcpy(&len, &xsdt->length, sizeof(len));
	n = (len - sizeof(*xsdt)) / 8;
	for (size_t i = 0; i < n && !mcfg; i++) {
		const struct acpi_sdt_header *h;
		uint64_t pa;

		memcpy(&pa, (const uint8_t *)xsdt + sizeof(*xsdt) + 8 * i, sizeof(pa));
		h = (const void *)(uintptr_t)pa;
		if (!pa || memcmp(h->signature, "MCFG", 4))
			continue;
		mcfg = table_at(pa, "MCFG", MCFG_ENTRIES_OFFSET);
		if (!mcfg)
			return ACPI_ERR_TABLE;
	}
	if (!mcfg)
		return ACPI_ERR_NOT_FOUND;
	memcpy(&len, &mcfg->length, sizeof(len));
	n = (len - MCFG_ENTRIES_OFFSET) / sizeof(struct acpi_mcfg_entry);
	for (size_t i = 0; i < n; i++) {
		struct acpi_mcfg_entry e;

		memcpy(&e, (const uint8_t *)mcfg + MCFG_ENTRIES_OFFSET + i * sizeof(e), sizeof(e));
		if (e.segment != 0 || !e.base || e.start_bus > e.end_bus)
			continue;
		out->base = e.base;
		out->segment = 0;
		out->start_bus = e.start_bus;
		out->end_bus = e.end_bus;
		return 0;
	}
	return ACPI_ERR_NOT_FOUND;
}

const char *acpi_strerror(int err)
{
	switch (err) {
	case 0: return "ok";
	case ACPI_ERR_ARG: return "bad argument";
	case ACPI_ERR_RSDP: return "no valid ACPI 2.0 RSDP with an XSDT";
	case ACPI_ERR_TABLE: return "XSDT or MCFG with a bad signature, length or checksum";
	case ACPI_ERR_NOT_FOUND: return "no MCFG allocation for PCI segment 0";
	default: return "unknown error";
	}
}
