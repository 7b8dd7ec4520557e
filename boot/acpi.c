/* SPDX-License-Identifier: MIT */
/*
 * acpi.c - RSDP -> XSDT -> MCFG (contract in acpi.h); the walk is
 * vmm/lib/acpi.c's.
 */
#include "boot/acpi.h"

#include <stddef.h>
#include <string.h>

/* An MCFG allocation (PCI Firmware Spec 3.2 Table 4-3). */
struct acpi_mcfg_entry {
	uint64_t base;
	uint16_t segment;
	uint8_t start_bus, end_bus;
	uint32_t reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_mcfg_entry) == 16, "MCFG allocation is 16 bytes");

/* The 36-byte header, then 8 reserved bytes (Table 4-2). */
#define MCFG_ENTRIES_OFFSET (ACPI_SDT_HEADER_BYTES + 8)

int acpi_find_ecam(const void *rsdp, struct pci_ecam *out)
{
	const uint8_t *mcfg;
	uint64_t pa;
	uint32_t len;
	size_t n;
	int rc;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!rsdp || !out)
		return ACPI_ERR_ARG;
	/* Boot: firmware memory is identity-mapped, read where it lies. */
	rc = acpi_find_table(acpi_read_direct, NULL, (uint64_t)(uintptr_t)rsdp, "MCFG",
			     MCFG_ENTRIES_OFFSET, &pa, &len);
	if (rc)
		return rc;
	mcfg = (const uint8_t *)(uintptr_t)pa;
	n = (len - MCFG_ENTRIES_OFFSET) / sizeof(struct acpi_mcfg_entry);
	for (size_t i = 0; i < n; i++) {
		struct acpi_mcfg_entry e;

		memcpy(&e, mcfg + MCFG_ENTRIES_OFFSET + i * sizeof(e), sizeof(e));
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
