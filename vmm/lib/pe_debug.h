/* SPDX-License-Identifier: MIT */
/*
 * pe_debug.h - the debug file name a PE/COFF image carries (the CodeView
 * record of its debug directory), used to name firmware images in the
 * trace's IMAGE records so host tools can find their symbols.
 *
 * EDK2 builds (OVMF, most vendor firmware) put an "RSDS" (PDB 7.0) or
 * "NB10" (PDB 2.0) record there holding the path of the .pdb/.dll the
 * image was linked as, e.g. ".../DEBUG/DxeCore.dll" (PE/COFF spec 6.1
 * "The .debug Section", Debug Type IMAGE_DEBUG_TYPE_CODEVIEW = 2).
 *
 * The image is read as loaded in memory (sections at their RVAs), every
 * offset bounds-checked against size.  Errors (negative):
 *   PE_ERR_ARG      image or out NULL
 *   PE_ERR_FORMAT   not a PE32/PE32+ image (MZ/PE signatures, sizes)
 *   PE_ERR_NONE     a valid image without a CodeView record
 */
#ifndef TV_PE_DEBUG_H
#define TV_PE_DEBUG_H

#include <stddef.h>
#include <stdint.h>

#define PE_ERR_ARG    (-1)
#define PE_ERR_FORMAT (-2)
#define PE_ERR_NONE   (-3)

/*
 * pe_codeview_path - point *path at the NUL-terminated debug path inside
 * image[0..size) and set *len to its length (without the NUL).
 */
int pe_codeview_path(const uint8_t *image, size_t size, const char **path, size_t *len);

/*
 * pe_image_size - SizeOfImage from the headers at hdr[0..size) (the start
 * of an image as loaded: MZ, PE\0\0, a PE32/PE32+ optional header).
 * 0, PE_ERR_ARG or PE_ERR_FORMAT (also for a SizeOfImage of 0).
 */
int pe_image_size(const uint8_t *hdr, size_t size, uint32_t *image_size);

/*
 * The same parse in pieces, for a caller that cannot map the whole image
 * (vmm/lib/efi_images.c copies each piece out of guest memory through a
 * reader):
 *
 * pe_debug_dir - the debug directory's RVA and size (data directory 6)
 * from the headers at hdr[0..size).  0, PE_ERR_ARG, PE_ERR_FORMAT, or
 * PE_ERR_NONE (no debug directory, or an empty one).
 */
#define PE_DEBUG_ENTRY_SIZE  28   /* one IMAGE_DEBUG_DIRECTORY entry */
#define PE_DEBUG_CODEVIEW    2    /* IMAGE_DEBUG_TYPE_CODEVIEW */
int pe_debug_dir(const uint8_t *hdr, size_t size, uint32_t *rva, uint32_t *bytes);

/*
 * pe_debug_entry - Type, AddressOfRawData (an RVA) and SizeOfData of the
 * PE_DEBUG_ENTRY_SIZE bytes at e.  0 or PE_ERR_ARG.
 */
int pe_debug_entry(const uint8_t *e, uint32_t *type, uint32_t *rva, uint32_t *bytes);

/*
 * pe_codeview_record - the path in one CodeView record rec[0..n) ("RSDS"
 * or "NB10", the path NUL-terminated inside it): *path points into rec.
 * 0, PE_ERR_ARG, or PE_ERR_NONE (another signature, no terminator, empty).
 */
int pe_codeview_record(const uint8_t *rec, size_t n, const char **path, size_t *len);

/* pe_basename - the last component of a path with / or \ separators. */
const char *pe_basename(const char *path, size_t len, size_t *out_len);

#endif /* TV_PE_DEBUG_H */
