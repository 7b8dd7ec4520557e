/* SPDX-License-Identifier: MIT */
/*
 * pe_debug.c - see pe_debug.h.  Offsets from the PE/COFF specification:
 * DOS header e_lfanew at 0x3c; "PE\0\0"; COFF header (20 bytes,
 * SizeOfOptionalHeader at +16); optional header magic 0x10b (PE32, data
 * directories at +96) or 0x20b (PE32+, at +112), NumberOfRvaAndSizes just
 * before them; debug directory = data directory 6; each debug directory
 * entry 28 bytes: Type at +12, SizeOfData at +16, AddressOfRawData at +20.
 */
#include <string.h>

#include "vmm/lib/pe_debug.h"

#define PE_DEBUG_DIR         6

static uint32_t rd16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const uint8_t *p) { return rd16(p) | rd16(p + 2) << 16; }

/* off + n inside size, without overflow. */
static int fits(size_t size, uint64_t off, uint64_t n)
{
	return off <= size && n <= size - off;
}

/* The optional header's offset after the MZ and PE checks, or 0. */
static uint64_t optional_header(const uint8_t *image, size_t size)
{
	uint64_t pe;

	if (!fits(size, 0, 0x40) || image[0] != 'M' || image[1] != 'Z')
		return 0;
	pe = rd32(image + 0x3c);
	if (!fits(size, pe, 24) || memcmp(image + pe, "PE\0\0", 4) != 0)
		return 0;
	if (!fits(size, pe + 24, 2))
		return 0;
	return pe + 24;
}

int pe_image_size(const uint8_t *hdr, size_t size, uint32_t *image_size)
{
	uint64_t opt;
	uint16_t magic;

	if (!hdr || !image_size)
		return PE_ERR_ARG;
	opt = optional_header(hdr, size);
	if (!opt)
		return PE_ERR_FORMAT;
	magic = rd16(hdr + opt);
	/* SizeOfImage: offset 56 of both the PE32 and the PE32+ optional header */
	if ((magic != 0x10b && magic != 0x20b) || !fits(size, opt + 56, 4))
		return PE_ERR_FORMAT;
	*image_size = rd32(hdr + opt + 56);
	return *image_size ? 0 : PE_ERR_FORMAT;
}

int pe_debug_dir(const uint8_t *hdr, size_t size, uint32_t *rva, uint32_t *bytes)
{
	uint64_t opt, dirs, ndirs;

	if (!hdr || !rva || !bytes)
		return PE_ERR_ARG;
	opt = optional_header(hdr, size);
	if (!opt)
		return PE_ERR_FORMAT;
	switch (rd16(hdr + opt)) {
	case 0x10b: dirs = opt + 96; break;
	case 0x20b: dirs = opt + 112; break;
	default: return PE_ERR_FORMAT;
	}
	if (!fits(size, dirs - 4, 4))
		return PE_ERR_FORMAT;
	ndirs = rd32(hdr + dirs - 4);
	if (ndirs <= PE_DEBUG_DIR)
		return PE_ERR_NONE;
	if (!fits(size, dirs + 8 * PE_DEBUG_DIR, 8))
		return PE_ERR_FORMAT;
	*rva = rd32(hdr + dirs + 8 * PE_DEBUG_DIR);
	*bytes = rd32(hdr + dirs + 8 * PE_DEBUG_DIR + 4);
	return *rva && *bytes ? 0 : PE_ERR_NONE;
}

int pe_debug_entry(const uint8_t *e, uint32_t *type, uint32_t *rva, uint32_t *bytes)
{
	if (!e || !type || !rva || !bytes)
		return PE_ERR_ARG;
	*type = rd32(e + 12);
	*bytes = rd32(e + 16);
	*rva = rd32(e + 20);
	return 0;
}

int pe_codeview_record(const uint8_t *rec, size_t n, const char **path, size_t *len)
{
	size_t skip, max, l = 0;
	const char *s;

	if (!rec || !path || !len)
		return PE_ERR_ARG;
	if (n < 4)
		return PE_ERR_NONE;
	if (memcmp(rec, "RSDS", 4) == 0)
		skip = 24;   /* signature, GUID, age */
	else if (memcmp(rec, "NB10", 4) == 0)
		skip = 16;   /* signature, offset, timestamp, age */
	else
		return PE_ERR_NONE;
	if (n <= skip)
		return PE_ERR_NONE;
	s = (const char *)rec + skip;
	max = n - skip;
	while (l < max && s[l])
		l++;
	if (l == max || l == 0)
		return PE_ERR_NONE;   /* not terminated inside the record, or empty */
	*path = s;
	*len = l;
	return 0;
}

int pe_codeview_path(const uint8_t *image, size_t size, const char **path, size_t *len)
{
	uint32_t dbg, dbg_size;
	int rc;

	if (!image || !path || !len)
		return PE_ERR_ARG;
	rc = pe_debug_dir(image, size, &dbg, &dbg_size);
	if (rc)
		return rc;
	if (!fits(size, dbg, dbg_size))
		return PE_ERR_FORMAT;
	for (uint64_t e = dbg; e + PE_DEBUG_ENTRY_SIZE <= (uint64_t)dbg + dbg_size;
	     e += PE_DEBUG_ENTRY_SIZE) {
		uint32_t type, data, n;

		pe_debug_entry(image + e, &type, &data, &n);
		if (type != PE_DEBUG_CODEVIEW || !data || !fits(size, data, n))
			continue;
		if (pe_codeview_record(image + data, n, path, len) == 0)
			return 0;
	}
	return PE_ERR_NONE;
}

const char *pe_basename(const char *path, size_t len, size_t *out_len)
{
	size_t start = 0;

	for (size_t i = 0; i < len; i++)
		if (path[i] == '/' || path[i] == '\\')
			start = i + 1;
	*out_len = len - start;
	return path + start;
}
