/* SPDX-License-Identifier: MIT */
/*
 * acpi.c - RSDP -> XSDT -> a table, the FADT's PM1 control ports and the
 * RSDP from the EFI system table (contract in acpi.h).
 */
#include "vmm/lib/acpi.h"

#include <stddef.h>
#include <string.h>

/* Layouts (ACPI 6.5 5.2.5.3, 5.2.6, 5.2.3.2, 5.2.9). */
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
_Static_assert(sizeof(struct acpi_sdt_header) == ACPI_SDT_HEADER_BYTES, "SDT header is 36 bytes");

/* Generic Address Structure (5.2.3.2). */
struct acpi_gas {
	uint8_t space_id;         /* 0 system memory, 1 system I/O, ... */
	uint8_t bit_width, bit_offset, access_size;
	uint64_t address;
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_gas) == 12, "GAS is 12 bytes");

#define ACPI_SPACE_SYSTEM_IO 1u

/* FADT field offsets (Table 5.9). */
#define FADT_PM1A_CNT_BLK   64u
#define FADT_PM1B_CNT_BLK   68u
#define FADT_PM1_CNT_LEN    89u
#define FADT_V1_BYTES       116u   /* ACPI 1.0's FADT ends at Flags */
#define FADT_X_PM1A_CNT_BLK 172u
#define FADT_X_PM1B_CNT_BLK 184u

/* EFI system table (UEFI 2.10 4.3, 64-bit): offsets of what is read. */
#define EFI_ST_SIGNATURE      0x5453595320494249ull   /* "IBI SYST" */
#define EFI_ST_NUM_ENTRIES    104u
#define EFI_ST_CONFIG_TABLE   112u
#define EFI_CONFIG_ENTRY      24u     /* EFI_GUID VendorGuid; VOID *VendorTable */
#define EFI_CONFIG_MAX        1024u

static const uint8_t acpi20_guid[16] = {   /* 8868e871-e4f1-11d3-bc22-0080c73c8881 */
	0x71, 0xe8, 0x68, 0x88, 0xf1, 0xe4, 0xd3, 0x11,
	0xbc, 0x22, 0x00, 0x80, 0xc7, 0x3c, 0x88, 0x81,
};

int acpi_read_direct(void *ctx, uint64_t pa, void *buf, size_t len)
{
	(void)ctx;
	memcpy(buf, (const void *)(uintptr_t)pa, len);
	return 0;
}

/* rd, split so that no call crosses a 4 KiB boundary (the reader's rule). */
static int rd_span(gmem_read_phys_fn rd, void *ctx, uint64_t pa, void *buf, size_t len)
{
	uint8_t *b = buf;

	while (len) {
		size_t n = 4096 - (size_t)(pa & 4095);

		if (n > len)
			n = len;
		if (rd(ctx, pa, b, n))
			return -1;
		pa += n;
		b += n;
		len -= n;
	}
	return 0;
}

static uint8_t sum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint8_t s = 0;

	for (size_t i = 0; i < n; i++)
		s = (uint8_t)(s + b[i]);
	return s;
}

/* The byte sum of len bytes at pa, read in pieces; -1 if unreadable. */
static int sum_at(gmem_read_phys_fn rd, void *ctx, uint64_t pa, uint32_t len)
{
	uint8_t chunk[256], s = 0;

	for (uint32_t o = 0; o < len;) {
		uint32_t n = len - o < sizeof(chunk) ? len - o : (uint32_t)sizeof(chunk);

		if (rd_span(rd, ctx, pa + o, chunk, n))
			return -1;
		s = (uint8_t)(s + sum(chunk, n));
		o += n;
	}
	return s;
}

/* The header at pa if it has signature sig and a believable length. */
static int header_at(gmem_read_phys_fn rd, void *ctx, uint64_t pa, const char sig[4],
		     uint32_t min_len, uint32_t *len)
{
	struct acpi_sdt_header h;

	if (!pa || rd_span(rd, ctx, pa, &h, sizeof(h)))
		return ACPI_ERR_TABLE;
	if (memcmp(h.signature, sig, 4) || h.length < min_len || h.length < sizeof(h) ||
	    h.length > ACPI_TABLE_MAX)
		return ACPI_ERR_TABLE;
	*len = h.length;
	return sum_at(rd, ctx, pa, h.length) == 0 ? 0 : ACPI_ERR_TABLE;
}

static int rsdp_xsdt(gmem_read_phys_fn rd, void *ctx, uint64_t rsdp_pa, uint64_t *xsdt_pa)
{
	struct acpi_rsdp r;

	if (rd_span(rd, ctx, rsdp_pa, &r, sizeof(r)))
		return ACPI_ERR_RSDP;
	if (memcmp(r.signature, "RSD PTR ", 8) || sum(&r, 20) != 0 || r.revision < 2)
		return ACPI_ERR_RSDP;
	if (r.length < sizeof(r) || r.length > 4096 || !r.xsdt_address)
		return ACPI_ERR_RSDP;
	if (sum_at(rd, ctx, rsdp_pa, r.length) != 0)
		return ACPI_ERR_RSDP;
	*xsdt_pa = r.xsdt_address;
	return 0;
}

int acpi_find_table(gmem_read_phys_fn rd, void *ctx, uint64_t rsdp_pa, const char sig[4],
		    uint32_t min_len, uint64_t *pa, uint32_t *len)
{
	uint64_t xsdt_pa;
	uint32_t xlen;
	int rc;

	if (!rd || !rsdp_pa || !sig || !pa || !len)
		return ACPI_ERR_ARG;
	rc = rsdp_xsdt(rd, ctx, rsdp_pa, &xsdt_pa);
	if (rc)
		return rc;
	rc = header_at(rd, ctx, xsdt_pa, "XSDT", ACPI_SDT_HEADER_BYTES, &xlen);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < (xlen - ACPI_SDT_HEADER_BYTES) / 8; i++) {
		uint64_t tpa;
		char s[4];

		if (rd_span(rd, ctx, xsdt_pa + ACPI_SDT_HEADER_BYTES + 8ull * i, &tpa, 8))
			return ACPI_ERR_TABLE;
		if (!tpa || rd_span(rd, ctx, tpa, s, 4) || memcmp(s, sig, 4))
			continue;
		rc = header_at(rd, ctx, tpa, sig, min_len, len);
		if (rc)
			return rc;
		*pa = tpa;
		return 0;
	}
	return ACPI_ERR_NOT_FOUND;
}

/* One PM1 control register: the X_ GAS when present, else the 32-bit block. */
static uint16_t pm1_port(const uint8_t *fadt, uint32_t len, uint32_t legacy_off, uint32_t x_off,
			 bool *not_io)
{
	uint32_t legacy;

	*not_io = false;
	if (len >= x_off + sizeof(struct acpi_gas)) {
		struct acpi_gas g;

		memcpy(&g, fadt + x_off, sizeof(g));
		if (g.address) {
			if (g.space_id != ACPI_SPACE_SYSTEM_IO || g.address > 0xffff) {
				*not_io = true;
				return 0;
			}
			return (uint16_t)g.address;
		}
	}
	memcpy(&legacy, fadt + legacy_off, sizeof(legacy));
	return legacy <= 0xffff ? (uint16_t)legacy : 0;
}

int acpi_fadt_pm1(const uint8_t *fadt, uint32_t len, struct acpi_pm1 *out)
{
	if (!out)
		return ACPI_ERR_ARG;
	memset(out, 0, sizeof(*out));
	if (!fadt || len < FADT_V1_BYTES)
		return ACPI_ERR_ARG;
	out->pm1a_cnt = pm1_port(fadt, len, FADT_PM1A_CNT_BLK, FADT_X_PM1A_CNT_BLK, &out->pm1a_not_io);
	out->pm1b_cnt = pm1_port(fadt, len, FADT_PM1B_CNT_BLK, FADT_X_PM1B_CNT_BLK, &out->pm1b_not_io);
	out->cnt_len = fadt[FADT_PM1_CNT_LEN];
	return out->pm1a_cnt || out->pm1b_cnt ? 0 : ACPI_ERR_NOT_FOUND;
}

int acpi_find_pm1(gmem_read_phys_fn rd, void *ctx, uint64_t rsdp_pa, struct acpi_pm1 *out)
{
	uint8_t fadt[FADT_X_PM1B_CNT_BLK + sizeof(struct acpi_gas)];
	uint64_t pa;
	uint32_t len;
	int rc;

	if (!out)
		return ACPI_ERR_ARG;
	memset(out, 0, sizeof(*out));
	rc = acpi_find_table(rd, ctx, rsdp_pa, "FACP", FADT_V1_BYTES, &pa, &len);
	if (rc)
		return rc;
	if (len > sizeof(fadt))
		len = sizeof(fadt);   /* nothing beyond X_PM1b_CNT_BLK is read */
	if (rd_span(rd, ctx, pa, fadt, len))
		return ACPI_ERR_TABLE;
	rc = acpi_fadt_pm1(fadt, len, out);
	out->fadt_pa = pa;
	return rc;
}

int acpi_efi_rsdp(gmem_read_phys_fn rd, void *ctx, uint64_t st_pa, uint64_t *rsdp_pa)
{
	uint64_t sig, n, table;

	if (!rd || !st_pa || !rsdp_pa)
		return ACPI_ERR_ARG;
	*rsdp_pa = 0;
	if (rd_span(rd, ctx, st_pa, &sig, 8) || sig != EFI_ST_SIGNATURE ||
	    rd_span(rd, ctx, st_pa + EFI_ST_NUM_ENTRIES, &n, 8) ||
	    rd_span(rd, ctx, st_pa + EFI_ST_CONFIG_TABLE, &table, 8) || !table)
		return ACPI_ERR_RSDP;
	if (n > EFI_CONFIG_MAX)
		n = EFI_CONFIG_MAX;
	for (uint64_t i = 0; i < n; i++) {
		uint8_t e[EFI_CONFIG_ENTRY];

		if (rd_span(rd, ctx, table + i * EFI_CONFIG_ENTRY, e, sizeof(e)))
			return ACPI_ERR_RSDP;
		if (memcmp(e, acpi20_guid, sizeof(acpi20_guid)))
			continue;
		memcpy(rsdp_pa, e + 16, 8);
		return *rsdp_pa ? 0 : ACPI_ERR_RSDP;
	}
	return ACPI_ERR_RSDP;
}

const char *acpi_err_text(int err)
{
	switch (err) {
	case 0: return "ok";
	case ACPI_ERR_ARG: return "bad argument";
	case ACPI_ERR_RSDP: return "no valid ACPI 2.0 RSDP with an XSDT";
	case ACPI_ERR_TABLE: return "a table with a bad signature, length or checksum";
	case ACPI_ERR_NOT_FOUND: return "not found";
	default: return "unknown error";
	}
}
