/* SPDX-License-Identifier: MIT */
/*
 * acpi.h - the ACPI tables tracevisor reads, through a physical-memory
 * reader so that the same walk runs at boot (boot/, identity-mapped
 * firmware memory), in VMX root (the resident copy, reading the guest's
 * memory after the OS loader installed its tables) and on a host test.
 *
 * The walk (ACPI 6.5): the RSDP (5.2.5.3, revision >= 2: the XSDT
 * address; both checksums) -> the XSDT (5.2.8, 64-bit entries) -> a table
 * by signature (its length and checksum checked: all bytes sum to 0).
 * Users: boot/acpi.c (MCFG, the ECAM base for PCI hiding) and
 * vmm/exit/exit_io.c (the FADT's PM1 control ports: the guest's ACPI
 * sleep/power-off).  The RSDP comes from the EFI configuration table
 * (ACPI 2.0 GUID), read here too from the EFI system table's address
 * (no efi.h: its layout is declared in acpi.c), since the OS loader may
 * install the tables only after boot (docs/PCI-HIDE.md, "ACPI power-off").
 *
 * Every read goes through rd (vmm/lib/guest_mem.h's gmem_read_phys_fn:
 * 0 on success; calls never cross a 4 KiB boundary); a failed read is
 * ACPI_ERR_TABLE (or ACPI_ERR_RSDP for the RSDP itself).
 *
 * Errors (negative):
 *   ACPI_ERR_ARG        a NULL reader or output, address 0
 *   ACPI_ERR_RSDP       bad RSDP signature or checksum, revision < 2, no
 *                       XSDT; no ACPI 2.0 entry in the EFI configuration
 *                       table, or a system table without its signature
 *   ACPI_ERR_TABLE      an XSDT or the table asked for with a bad
 *                       signature, length or checksum, or unreadable
 *   ACPI_ERR_NOT_FOUND  no table with that signature (or, for the PM1
 *                       ports, a FADT naming none in system I/O space)
 */
#ifndef TV_LIB_ACPI_H
#define TV_LIB_ACPI_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/lib/guest_mem.h"

#define ACPI_ERR_ARG       (-1)
#define ACPI_ERR_RSDP      (-2)
#define ACPI_ERR_TABLE     (-3)
#define ACPI_ERR_NOT_FOUND (-4)

/* Tables larger than this are not believed (a corrupt length). */
#define ACPI_TABLE_MAX (1u << 20)

/* The standard header of every table but the RSDP (ACPI 6.5 5.2.6). */
#define ACPI_SDT_HEADER_BYTES 36u

/*
 * acpi_read_direct - a reader for memory mapped where it lies (boot:
 * identity-mapped; host tests: pointers as addresses): memcpy.  ctx unused.
 */
int acpi_read_direct(void *ctx, uint64_t pa, void *buf, size_t len);

/*
 * acpi_efi_rsdp - the ACPI 2.0 RSDP's address from the EFI system table
 * at st_pa (UEFI 2.10 4.3: signature "IBI SYST", NumberOfTableEntries and
 * ConfigurationTable; 4.6: the entry with the ACPI 2.0 table GUID
 * 8868e871-e4f1-11d3-bc22-0080c73c8881).  At most 1024 entries are looked
 * at.  Returns 0 (*rsdp_pa set) or ACPI_ERR_ARG / ACPI_ERR_RSDP.
 */
int acpi_efi_rsdp(gmem_read_phys_fn rd, void *ctx, uint64_t st_pa, uint64_t *rsdp_pa);

/*
 * acpi_find_table - the first table with signature sig (4 bytes) listed
 * in the XSDT of the RSDP at rsdp_pa, valid (length in [min_len,
 * ACPI_TABLE_MAX], checksum 0).  Returns 0 (*pa, *len set) or an error
 * above; a listed table with that signature that is not valid is
 * ACPI_ERR_TABLE (the walk stops there, as an OS would not use it either).
 */
int acpi_find_table(gmem_read_phys_fn rd, void *ctx, uint64_t rsdp_pa, const char sig[4],
		    uint32_t min_len, uint64_t *pa, uint32_t *len);

/*
 * The PM1 control registers of the FADT (ACPI 6.5 5.2.9, Table 5.9;
 * 4.8.3.2: PM1a_CNT and PM1b_CNT, SLP_TYP bits 12:10, SLP_EN bit 13, a
 * write with SLP_EN set enters the sleep state SLP_TYP names - S5 is the
 * power-off).  Each register is in system I/O space at a port, or absent
 * (0).  X_PM1x_CNT_BLK (a Generic Address Structure, 5.2.3.2), when the
 * FADT is long enough to hold it and its address is not 0, overrides the
 * 32-bit PM1x_CNT_BLK (5.2.9: "OSPM must ignore" the latter then); one in
 * any other address space (system memory, ...) is not an I/O port:
 * pm1x_cnt stays 0 and pm1x_not_io says why.
 */
#define ACPI_PM1_SLP_EN     (1u << 13)
#define ACPI_PM1_SLP_TYP(v) (((v) >> 10) & 7u)

struct acpi_pm1 {
	uint16_t pm1a_cnt, pm1b_cnt;  /* port, 0: none */
	uint8_t cnt_len;              /* PM1_CNT_LEN (bytes, >= 2 per the spec) */
	bool pm1a_not_io, pm1b_not_io; /* named by an X_ GAS outside system I/O space */
	uint64_t fadt_pa;
};

/*
 * acpi_fadt_pm1 - parse a FADT image (fadt[0..len), already checked) into
 * *out.  Returns 0, or ACPI_ERR_NOT_FOUND when neither register is an I/O
 * port (*out still filled), ACPI_ERR_ARG (NULL, len < 116: too short for
 * PM1_CNT_LEN).
 */
int acpi_fadt_pm1(const uint8_t *fadt, uint32_t len, struct acpi_pm1 *out);

/*
 * acpi_find_pm1 - the FADT ("FACP") of the RSDP at rsdp_pa, parsed by
 * acpi_fadt_pm1.  Returns 0 or an error above (*out zeroed but for what
 * was found).
 */
int acpi_find_pm1(gmem_read_phys_fn rd, void *ctx, uint64_t rsdp_pa, struct acpi_pm1 *out);

/* Text for an ACPI_ERR_* code ("ok" for 0), in the terms of the walk above. */
const char *acpi_err_text(int err);

#endif /* TV_LIB_ACPI_H */
