/* SPDX-License-Identifier: MIT */
/*
 * pe.h - PE/COFF image files (UEFI drivers and applications, Windows
 * binaries) as the symbolizer needs them: sections at their addresses,
 * the entry point, and function names from the export table and the
 * COFF symbol table.
 *
 * The file is read as stored on disk (sections at PointerToRawData),
 * every offset bounds-checked.  References: Microsoft "PE Format"
 * (learn.microsoft.com/windows/win32/debug/pe-format): MS-DOS stub
 * (e_lfanew at 0x3c), "PE\0\0", COFF file header (20 bytes), optional
 * header (magic 0x10b PE32 / 0x20b PE32+), data directory 0 = export
 * table, section table (40 bytes per section), COFF symbol table
 * (18-byte records, long names in the string table after it).
 * EDK2 images normally have neither exports nor COFF symbols (their
 * symbols are in the .pdb/.debug file the CodeView record names):
 * addresses in them show as module+offset.
 */
#ifndef TVH_PE_H
#define TVH_PE_H

#include <stddef.h>
#include <stdint.h>

#include "host-tools/lib/sym.h"

#define TVH_PE_MAX_SECTIONS 96u      /* the loader's own limit */

/* A function name at an RVA; name points into the file or pe->names. */
struct tvh_pe_sym {
	uint32_t rva;
	const char *name;
};

struct tvh_pe {
	uint16_t machine;        /* IMAGE_FILE_MACHINE_* (0x8664 x64) */
	uint64_t image_base;     /* preferred (link-time) address */
	uint32_t size_of_image;
	uint32_t entry_rva;
	struct tvh_segment *segs;/* headers + sections, link-time addresses */
	unsigned nsegs;
	struct tvh_pe_sym *syms; /* sorted by rva, unique */
	size_t nsyms;
	char *names;             /* NUL-terminated copies of the symbol names */
};

/*
 * tvh_pe_parse - read the PE image file in img[0..size) (kept: segments
 * and names point into it).  Free with tvh_pe_free.
 * Errors: -TVH_ERR_MAGIC (no MZ / PE signature), -TVH_ERR_TRUNCATED
 * (a header or table runs past the end), -TVH_ERR_HEADER (optional
 * header magic unknown, too many sections, a section outside the
 * image), -TVH_ERR_NOMEM.  Broken export or symbol tables are ignored
 * (no names from them), not errors.
 */
int tvh_pe_parse(const uint8_t *img, size_t size, struct tvh_pe *pe);
void tvh_pe_free(struct tvh_pe *pe);

/* True when img starts with "MZ" (a PE candidate). */
int tvh_pe_is_pe(const uint8_t *img, size_t size);

/*
 * tvh_pe_func - the function holding rva: the symbol with the highest
 * RVA at or below it inside an executable section.  NULL when none.
 */
const char *tvh_pe_func(const struct tvh_pe *pe, uint32_t rva, uint32_t *off);

#endif /* TVH_PE_H */
