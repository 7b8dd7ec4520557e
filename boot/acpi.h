/* SPDX-License-Identifier: MIT */
/*
 * acpi.h - the one ACPI table tracevisor reads: MCFG, for the ECAM base
 * of PCI segment 0 (vmm/exit/pci_hide.h hides ECAM pages of hidden functions).
 *
 * The walk is RSDP (ACPI 6.5 5.2.5.3, revision >= 2: the XSDT address)
 * -> XSDT (5.2.8, 64-bit entries) -> the table with signature "MCFG"
 * (PCI Firmware Spec 3.2 4.1.2: 36-byte header, 8 reserved bytes, then
 * 16-byte allocations: base address, segment, start bus, end bus).
 * Every table's checksum (all bytes sum to 0) and length are checked.
 * The walk is vmm/lib/acpi.c's (also used in VMX root for the FADT's
 * PM1 control ports); here tables are read where they lie: the caller
 * runs with physical memory identity-mapped (boot/, before
 * ExitBootServices).  The RSDP comes from the EFI configuration table
 * (ACPI 2.0 GUID), found in boot/vmx_boot.c: this file has no EFI
 * dependency so the host tests run it.
 *
 * Errors (negative):
 *   ACPI_ERR_ARG        rsdp or out NULL
 *   ACPI_ERR_RSDP       bad RSDP signature or checksum, revision < 2, no XSDT
 *   ACPI_ERR_TABLE      an XSDT or MCFG with a bad signature, length or checksum
 *   ACPI_ERR_NOT_FOUND  no MCFG, or an MCFG without a segment-0 allocation
 */
#ifndef TV_ACPI_H
#define TV_ACPI_H

#include <stdint.h>

#include "vmm/exit/pci_hide.h"
#include "vmm/lib/acpi.h"   /* ACPI_ERR_* */

/*
 * acpi_find_ecam - the MCFG allocation of PCI segment 0 (the first one
 * listed, if several cover parts of its buses), from the RSDP at rsdp.
 * Returns 0 (*out filled) or an error above (*out zeroed).
 */
int acpi_find_ecam(const void *rsdp, struct pci_ecam *out);

/* Text for an ACPI_ERR_* code ("ok" for 0). */
const char *acpi_strerror(int err);

#endif /* TV_ACPI_H */
