/* SPDX-License-Identifier: MIT */
/*
 * acpi_fake.h - a physical memory of 64 KiB holding an EFI system table
 * whose configuration table names an ACPI 2.0 RSDP, an XSDT, a DSDT and
 * a FADT ("FACP", ACPI 6 length 276) that straddles a 4 KiB boundary,
 * every checksum right; and the reader (gmem_read_phys_fn) over it,
 * which counts calls that cross a 4 KiB boundary (the reader contract
 * forbids them).  Header-only, for test_acpi.c and test_exit_io.c.
 */
#ifndef TV_TEST_ACPI_FAKE_H
#define TV_TEST_ACPI_FAKE_H

#include <stdint.h>
#include <string.h>

#define ACPI_FAKE_EFI_ST 0x1000u
#define ACPI_FAKE_CONFIG 0x1100u
#define ACPI_FAKE_RSDP   0x2000u
#define ACPI_FAKE_XSDT   0x3000u
#define ACPI_FAKE_FADT   0x3f80u   /* 276 bytes: crosses 0x4000 */
#define ACPI_FAKE_DSDT   0x5000u

struct acpi_fake_gas {
	uint8_t space_id, bit_width, bit_offset, access_size;
	uint64_t address;
} __attribute__((packed));

static uint8_t acpi_fake_mem[0x10000];
static unsigned acpi_fake_crossings;

static inline int acpi_fake_read(void *ctx, uint64_t pa, void *buf, size_t len)
{
	(void)ctx;
	if (pa >= sizeof(acpi_fake_mem) || len > sizeof(acpi_fake_mem) - pa)
		return -1;
	if (len && (pa >> 12) != ((pa + len - 1) >> 12))
		acpi_fake_crossings++;
	memcpy(buf, acpi_fake_mem + pa, len);
	return 0;
}

static inline void acpi_fake_put32(uint32_t off, uint32_t v) { memcpy(acpi_fake_mem + off, &v, 4); }
static inline void acpi_fake_put64(uint32_t off, uint64_t v) { memcpy(acpi_fake_mem + off, &v, 8); }

/* Set the byte at off so that mem[base..base+len) sums to 0. */
static inline void acpi_fake_fix(uint32_t base, uint32_t len, uint32_t off)
{
	uint8_t s = 0;

	acpi_fake_mem[off] = 0;
	for (uint32_t i = 0; i < len; i++)
		s = (uint8_t)(s + acpi_fake_mem[base + i]);
	acpi_fake_mem[off] = (uint8_t)-s;
}

static inline void acpi_fake_sdt(uint32_t at, const char sig[4], uint32_t len)
{
	memcpy(acpi_fake_mem + at, sig, 4);
	acpi_fake_put32(at + 4, len);
	acpi_fake_mem[at + 8] = 2;                 /* revision */
	memcpy(acpi_fake_mem + at + 10, "TVTEST", 6);
}

/*
 * Build everything: PM1a_CNT_BLK = pm1a, PM1b_CNT_BLK = pm1b (32-bit
 * blocks), X_PM1a_CNT_BLK = xa (NULL: all zero), the FADT's
 * signature fadt_sig (NULL: "FACP").  PM1_CNT_LEN = 2.
 */
static inline void acpi_fake_build(uint32_t pm1a, uint32_t pm1b, const struct acpi_fake_gas *xa,
				   const char *fadt_sig)
{
	static const uint8_t acpi20[16] = {
		0x71, 0xe8, 0x68, 0x88, 0xf1, 0xe4, 0xd3, 0x11,
		0xbc, 0x22, 0x00, 0x80, 0xc7, 0x3c, 0x88, 0x81,
	};

	memset(acpi_fake_mem, 0, sizeof(acpi_fake_mem));
	acpi_fake_crossings = 0;
	/* EFI system table: "IBI SYST", 2 entries, the table at CONFIG */
	acpi_fake_put64(ACPI_FAKE_EFI_ST, 0x5453595320494249ull);
	acpi_fake_put64(ACPI_FAKE_EFI_ST + 104, 2);
	acpi_fake_put64(ACPI_FAKE_EFI_ST + 112, ACPI_FAKE_CONFIG);
	memset(acpi_fake_mem + ACPI_FAKE_CONFIG, 0x11, 16);    /* some other GUID */
	acpi_fake_put64(ACPI_FAKE_CONFIG + 16, 0xdead000);
	memcpy(acpi_fake_mem + ACPI_FAKE_CONFIG + 24, acpi20, 16);
	acpi_fake_put64(ACPI_FAKE_CONFIG + 40, ACPI_FAKE_RSDP);
	/* RSDP, revision 2, length 36 */
	memcpy(acpi_fake_mem + ACPI_FAKE_RSDP, "RSD PTR ", 8);
	memcpy(acpi_fake_mem + ACPI_FAKE_RSDP + 9, "TVTEST", 6);
	acpi_fake_mem[ACPI_FAKE_RSDP + 15] = 2;
	acpi_fake_put32(ACPI_FAKE_RSDP + 20, 36);
	acpi_fake_put64(ACPI_FAKE_RSDP + 24, ACPI_FAKE_XSDT);
	acpi_fake_fix(ACPI_FAKE_RSDP, 20, ACPI_FAKE_RSDP + 8);
	acpi_fake_fix(ACPI_FAKE_RSDP, 36, ACPI_FAKE_RSDP + 32);
	/* XSDT: the DSDT (not normally listed, but a table to skip), the FADT */
	acpi_fake_sdt(ACPI_FAKE_XSDT, "XSDT", 36 + 16);
	acpi_fake_put64(ACPI_FAKE_XSDT + 36, ACPI_FAKE_DSDT);
	acpi_fake_put64(ACPI_FAKE_XSDT + 44, ACPI_FAKE_FADT);
	acpi_fake_fix(ACPI_FAKE_XSDT, 36 + 16, ACPI_FAKE_XSDT + 9);
	acpi_fake_sdt(ACPI_FAKE_DSDT, "DSDT", 36);
	acpi_fake_fix(ACPI_FAKE_DSDT, 36, ACPI_FAKE_DSDT + 9);
	/* FADT (ACPI 6.5 Table 5.9) */
	acpi_fake_sdt(ACPI_FAKE_FADT, fadt_sig ? fadt_sig : "FACP", 276);
	acpi_fake_mem[ACPI_FAKE_FADT + 8] = 6;
	acpi_fake_put32(ACPI_FAKE_FADT + 56, pm1a ? pm1a - 4 : 0);  /* PM1a_EVT_BLK */
	acpi_fake_put32(ACPI_FAKE_FADT + 64, pm1a);
	acpi_fake_put32(ACPI_FAKE_FADT + 68, pm1b);
	acpi_fake_mem[ACPI_FAKE_FADT + 88] = 4;     /* PM1_EVT_LEN */
	acpi_fake_mem[ACPI_FAKE_FADT + 89] = 2;     /* PM1_CNT_LEN */
	if (xa)
		memcpy(acpi_fake_mem + ACPI_FAKE_FADT + 172, xa, 12);
	acpi_fake_fix(ACPI_FAKE_FADT, 276, ACPI_FAKE_FADT + 9);
}

#endif /* TV_TEST_ACPI_FAKE_H */
