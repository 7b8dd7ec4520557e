/* SPDX-License-Identifier: MIT */
/*
 * test_acpi.c - vmm/lib/acpi.c on a fake physical memory: the EFI system
 * table's configuration table -> RSDP -> XSDT -> FACP, the FADT's PM1
 * control ports (32-bit blocks, X_ GAS in I/O and memory space, PM1b),
 * checksums, missing tables, and a reader that is never asked to cross a
 * 4 KiB boundary.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/lib/acpi.h"
#include "acpi_fake.h"

static void test_fadt_legacy_ports(void **state)
{
	struct acpi_pm1 pm;

	(void)state;
	acpi_fake_build(0xb004, 0, NULL, NULL);
	assert_int_equal(acpi_find_pm1(acpi_fake_read, NULL, ACPI_FAKE_RSDP, &pm), 0);
	assert_int_equal(pm.pm1a_cnt, 0xb004);
	assert_int_equal(pm.pm1b_cnt, 0);
	assert_int_equal(pm.cnt_len, 2);
	assert_false(pm.pm1a_not_io);
	assert_int_equal(pm.fadt_pa, ACPI_FAKE_FADT);
	assert_int_equal(acpi_fake_crossings, 0);
}

static void test_fadt_pm1b_and_x_gas_in_io_space(void **state)
{
	struct acpi_pm1 pm;
	struct acpi_fake_gas xa = { 1, 16, 0, 2, 0x1804 };   /* system I/O */

	(void)state;
	/* X_PM1a_CNT_BLK overrides the 32-bit block (ACPI 6.5 5.2.9) */
	acpi_fake_build(0xb004, 0xb104, &xa, NULL);
	assert_int_equal(acpi_find_pm1(acpi_fake_read, NULL, ACPI_FAKE_RSDP, &pm), 0);
	assert_int_equal(pm.pm1a_cnt, 0x1804);
	assert_int_equal(pm.pm1b_cnt, 0xb104);
}

static void test_fadt_x_gas_in_memory_space_is_not_a_port(void **state)
{
	struct acpi_pm1 pm;
	struct acpi_fake_gas xa = { 0, 16, 0, 2, 0xfed80004 };  /* system memory */

	(void)state;
	acpi_fake_build(0xb004, 0, &xa, NULL);
	assert_int_equal(acpi_find_pm1(acpi_fake_read, NULL, ACPI_FAKE_RSDP, &pm), ACPI_ERR_NOT_FOUND);
	assert_int_equal(pm.pm1a_cnt, 0);      /* the legacy block is ignored, as OSPM ignores it */
	assert_true(pm.pm1a_not_io);
	/* the address space decides, not the address: a low memory address is no port either */
	xa.address = 0x2004;
	acpi_fake_build(0xb004, 0, &xa, NULL);
	assert_int_equal(acpi_find_pm1(acpi_fake_read, NULL, ACPI_FAKE_RSDP, &pm), ACPI_ERR_NOT_FOUND);
	assert_int_equal(pm.pm1a_cnt, 0);
	assert_true(pm.pm1a_not_io);
	/* PM1b still found in I/O space */
	acpi_fake_build(0xb004, 0xb104, &xa, NULL);
	assert_int_equal(acpi_find_pm1(acpi_fake_read, NULL, ACPI_FAKE_RSDP, &pm), 0);
	assert_int_equal(pm.pm1a_cnt, 0);
	assert_int_equal(pm.pm1b_cnt, 0xb104);
}

static void test_bad_checksums_and_missing_tables(void **state)
{
	struct acpi_pm1 pm;

	(void)state;
	acpi_fake_build(0xb004, 0, NULL, NULL);
	acpi_fake_mem[ACPI_FAKE_FADT + 64] ^= 1;       /* PM1a_CNT_BLK changed: checksum wrong */
	assert_int_equal(acpi_find_pm1(acpi_fake_read, NULL, ACPI_FAKE_RSDP, &pm), ACPI_ERR_TABLE);
	assert_int_equal(pm.pm1a_cnt, 0);

	acpi_fake_build(0xb004, 0, NULL, NULL);
	acpi_fake_mem[ACPI_FAKE_XSDT + 40] ^= 1;       /* XSDT entry changed */
	assert_int_equal(acpi_find_pm1(acpi_fake_read, NULL, ACPI_FAKE_RSDP, &pm), ACPI_ERR_TABLE);

	acpi_fake_build(0xb004, 0, NULL, NULL);
	acpi_fake_mem[ACPI_FAKE_RSDP + 30] ^= 1;       /* extended checksum wrong */
	assert_int_equal(acpi_find_pm1(acpi_fake_read, NULL, ACPI_FAKE_RSDP, &pm), ACPI_ERR_RSDP);

	/* no FACP: the table is there under another name */
	acpi_fake_build(0xb004, 0, NULL, "APIC");
	assert_int_equal(acpi_find_pm1(acpi_fake_read, NULL, ACPI_FAKE_RSDP, &pm), ACPI_ERR_NOT_FOUND);
	assert_string_equal(acpi_err_text(ACPI_ERR_NOT_FOUND), "not found");

	/* a FADT naming no port at all */
	acpi_fake_build(0, 0, NULL, NULL);
	assert_int_equal(acpi_find_pm1(acpi_fake_read, NULL, ACPI_FAKE_RSDP, &pm), ACPI_ERR_NOT_FOUND);

	/* an unreadable address */
	assert_int_equal(acpi_find_pm1(acpi_fake_read, NULL, sizeof(acpi_fake_mem) + 4096, &pm),
			 ACPI_ERR_RSDP);
	assert_int_equal(acpi_find_pm1(NULL, NULL, ACPI_FAKE_RSDP, &pm), ACPI_ERR_ARG);
	assert_int_equal(acpi_fadt_pm1(acpi_fake_mem + ACPI_FAKE_FADT, 100, &pm), ACPI_ERR_ARG);
}

static void test_rsdp_from_the_efi_system_table(void **state)
{
	uint64_t rsdp = 1;

	(void)state;
	acpi_fake_build(0xb004, 0, NULL, NULL);
	assert_int_equal(acpi_efi_rsdp(acpi_fake_read, NULL, ACPI_FAKE_EFI_ST, &rsdp), 0);
	assert_int_equal(rsdp, ACPI_FAKE_RSDP);
	/* not a system table */
	assert_int_equal(acpi_efi_rsdp(acpi_fake_read, NULL, ACPI_FAKE_RSDP, &rsdp), ACPI_ERR_RSDP);
	assert_int_equal(rsdp, 0);
	/* no ACPI 2.0 GUID among the entries (the firmware published none) */
	acpi_fake_mem[ACPI_FAKE_CONFIG + 24 + 0] ^= 0xff;
	assert_int_equal(acpi_efi_rsdp(acpi_fake_read, NULL, ACPI_FAKE_EFI_ST, &rsdp), ACPI_ERR_RSDP);
	assert_int_equal(acpi_efi_rsdp(acpi_fake_read, NULL, 0, &rsdp), ACPI_ERR_ARG);
	assert_int_equal(acpi_fake_crossings, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fadt_legacy_ports),
		cmocka_unit_test(test_fadt_pm1b_and_x_gas_in_io_space),
		cmocka_unit_test(test_fadt_x_gas_in_memory_space_is_not_a_port),
		cmocka_unit_test(test_bad_checksums_and_missing_tables),
		cmocka_unit_test(test_rsdp_from_the_efi_system_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
