/* SPDX-License-Identifier: MIT */
/*
 * efi_images_fake.h - a fake physical memory holding an EFI system table,
 * its configuration table and a debug image info table (the layouts of
 * vmm/lib/efi_images.c, written here from the UEFI spec's offsets), for
 * test_efi_images.c and test_trace_images.c.  Static helpers: included
 * once per test file.
 *
 * Layout (physical addresses in the fake memory):
 *   0x1000 system table ("IBI SYST", 2 configuration entries at 0x1100)
 *   0x1100 configuration table: an ACPI 2.0 entry, then the debug table's
 *   0x1200 EFI_DEBUG_IMAGE_INFO_TABLE_HEADER (slots at 0x1300)
 *   0x1300 the slots (64 of them up to 0x1500)
 *   0x2000 + slot * 0x100: EFI_DEBUG_IMAGE_INFO_NORMAL (+0), the loaded
 *          image protocol (+0x20), the device path (+0x80)
 *   images anywhere the test puts them (PE headers written when inside)
 */
#ifndef TV_TEST_EFI_IMAGES_FAKE_H
#define TV_TEST_EFI_IMAGES_FAKE_H

#pragma GCC diagnostic ignored "-Wunused-function"

#include <stdint.h>
#include <string.h>

#define EFI_FAKE_ST      0x1000u
#define EFI_FAKE_CONFIG  0x1100u
#define EFI_FAKE_HDR     0x1200u
#define EFI_FAKE_SLOTS   0x1300u
#define EFI_FAKE_ENTRY(s) (0x2000u + (uint64_t)(s) * 0x100u)

static uint8_t *efi_fake_mem;
static size_t efi_fake_size;
static unsigned efi_fake_crossings;   /* reads across a 4 KiB boundary (must stay 0) */
static unsigned long efi_fake_reads;
static uint64_t efi_fake_deny_lo, efi_fake_deny_hi;   /* reads touching it fail */

static void efi_fake_w(uint64_t at, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		efi_fake_mem[at + i] = (uint8_t)(v >> (8 * i));
}

static int efi_fake_read(void *opaque, uint64_t pa, void *buf, size_t len)
{
	(void)opaque;
	efi_fake_reads++;
	if ((pa & 4095) + len > 4096)
		efi_fake_crossings++;
	if (pa < efi_fake_deny_hi && pa + len > efi_fake_deny_lo)
		return -1;
	if (pa >= efi_fake_size || len > efi_fake_size - pa)
		return -1;
	memcpy(buf, efi_fake_mem + pa, len);
	return 0;
}

/* An empty memory with the system table, configuration table and header. */
static void efi_fake_init(uint8_t *mem, size_t size, uint32_t table_size)
{
	static const uint8_t acpi20[16] = { 0x71, 0xe8, 0x68, 0x88, 0xf1, 0xe4, 0xd3, 0x11,
					    0xbc, 0x22, 0x00, 0x80, 0xc7, 0x3c, 0x88, 0x81 };
	static const uint8_t dbg[16] = { 0x77, 0x2e, 0x15, 0x49, 0xda, 0x1a, 0x64, 0x47,
					 0xb7, 0xa2, 0x7a, 0xfe, 0xfe, 0xd9, 0x5e, 0x8b };

	efi_fake_mem = mem;
	efi_fake_size = size;
	efi_fake_crossings = 0;
	efi_fake_reads = 0;
	efi_fake_deny_lo = efi_fake_deny_hi = 0;
	memset(mem, 0, size);
	efi_fake_w(EFI_FAKE_ST, 0x5453595320494249ull, 8);      /* "IBI SYST" */
	efi_fake_w(EFI_FAKE_ST + 104, 2, 8);                     /* NumberOfTableEntries */
	efi_fake_w(EFI_FAKE_ST + 112, EFI_FAKE_CONFIG, 8);       /* ConfigurationTable */
	memcpy(mem + EFI_FAKE_CONFIG, acpi20, 16);
	efi_fake_w(EFI_FAKE_CONFIG + 16, 0xe0000, 8);
	memcpy(mem + EFI_FAKE_CONFIG + 24, dbg, 16);
	efi_fake_w(EFI_FAKE_CONFIG + 24 + 16, EFI_FAKE_HDR, 8);
	efi_fake_w(EFI_FAKE_HDR + 4, table_size, 4);             /* TableSize */
	efi_fake_w(EFI_FAKE_HDR + 8, EFI_FAKE_SLOTS, 8);         /* EfiDebugImageInfoTable */
}

/* A PE32+ header at base with a CodeView RSDS record naming path. */
static void efi_fake_pe(uint64_t base, const char *path)
{
	const uint64_t pe = base + 0x80, opt = pe + 24, dirs = opt + 112;
	const uint64_t dbgdir = base + 0x200, cv = base + 0x240;

	efi_fake_mem[base] = 'M';
	efi_fake_mem[base + 1] = 'Z';
	efi_fake_w(base + 0x3c, 0x80, 4);
	memcpy(efi_fake_mem + pe, "PE\0\0", 4);
	efi_fake_w(pe + 4, 0x8664, 2);
	efi_fake_w(pe + 20, 112 + 16 * 8, 2);
	efi_fake_w(opt, 0x20b, 2);
	efi_fake_w(dirs - 4, 16, 4);
	efi_fake_w(dirs + 8 * 6, 0x200, 4);          /* debug directory RVA */
	efi_fake_w(dirs + 8 * 6 + 4, 2 * 28, 4);
	efi_fake_w(dbgdir + 12, 16, 4);              /* entry 0: REPRO */
	efi_fake_w(dbgdir + 28 + 12, 2, 4);          /* entry 1: CodeView */
	efi_fake_w(dbgdir + 28 + 16, 24 + strlen(path) + 1, 4);
	efi_fake_w(dbgdir + 28 + 20, 0x240, 4);
	memcpy(efi_fake_mem + cv, "RSDS", 4);
	memcpy(efi_fake_mem + cv + 24, path, strlen(path) + 1);
}

/*
 * Slot slot: an image at base of size bytes; a CodeView path (PE headers
 * written at base, which must then be inside the memory), a file path
 * node, an FvFile GUID, each optional (NULL).
 */
static void efi_fake_image(uint32_t slot, uint64_t base, uint64_t size, const char *cv_path,
			   const char *file_path, const uint8_t *fv_guid)
{
	const uint64_t e = EFI_FAKE_ENTRY(slot), li = e + 0x20, dp = e + 0x80;
	uint64_t at = dp;

	efi_fake_w(EFI_FAKE_SLOTS + 8ull * slot, e, 8);
	efi_fake_w(e, 1, 4);                        /* EFI_DEBUG_IMAGE_INFO_TYPE_NORMAL */
	efi_fake_w(e + 8, li, 8);
	efi_fake_w(li + 32, fv_guid || file_path ? dp : 0, 8);   /* FilePath */
	efi_fake_w(li + 64, base, 8);
	efi_fake_w(li + 72, size, 8);
	if (fv_guid) {
		efi_fake_w(at, 0x0604, 2);          /* media, FvFile */
		efi_fake_w(at + 2, 20, 2);
		memcpy(efi_fake_mem + at + 4, fv_guid, 16);
		at += 20;
	}
	if (file_path) {
		size_t n = strlen(file_path);

		efi_fake_w(at, 0x0404, 2);          /* media, file path */
		efi_fake_w(at + 2, 4 + 2 * (n + 1), 2);
		for (size_t i = 0; i <= n; i++)
			efi_fake_w(at + 4 + 2 * i, (uint8_t)file_path[i], 2);
		at += 4 + 2 * (n + 1);
	}
	efi_fake_w(at, 0xff7f, 2);                  /* end of the whole path */
	efi_fake_w(at + 2, 4, 2);
	if (cv_path)
		efi_fake_pe(base, cv_path);
}

#endif /* TV_TEST_EFI_IMAGES_FAKE_H */
