/* SPDX-License-Identifier: MIT */
/*
 * images.h - the trace's image-load sideband (IMAGE records) turned into
 * modules: each IMAGE record names an image and its load address; with a
 * search directory the file for that name is found there and loaded at
 * that address.
 *
 * Names as the hypervisor writes them (vmm/lib/pe_debug.c, docs/FORMAT.md):
 *   - a CodeView debug path of a firmware image,
 *     ".../Build/OvmfX64/DEBUG_GCC5/X64/DxeCore.dll" or "...\\DxeCore.pdb";
 *   - "FvFile(GUID)" for a firmware image without one (the FV file name);
 *   - a device path or file path, "\\EFI\\BOOT\\BOOTX64.EFI";
 *   - the kernel's name for the kernel-base event ("vmlinux"): the record's
 *     base is the KASLR-shifted load address.
 * Candidates, in order, for the last path component NAME with stem STEM
 * (GUID for FvFile(GUID)): NAME, STEM.debug, STEM.efi, STEM.dll, STEM.so,
 * STEM.elf, STEM; matched against the directory's entries ignoring case.
 * The first candidate that exists is loaded (ELF or PE/COFF, sym.h) at the
 * record's base.
 */
#ifndef TVH_IMAGES_H
#define TVH_IMAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "host-tools/lib/sym.h"
#include "host-tools/lib/tvt.h"

struct tvh_image {
	uint32_t cpu;            /* first CPU that reported it */
	uint8_t kind;            /* enum tv_image_kind */
	uint64_t base, size;
	uint64_t tsc;
	char *name;              /* NUL terminated copy */
};

struct tvh_images {
	struct tvh_image *v;     /* first-seen order, (base, name) unique */
	size_t n, cap;
	/* The first START record of trigger kernel_entry: where the kernel began. */
	bool have_kernel_entry;
	uint32_t kernel_entry_cpu;
	uint64_t kernel_entry, kernel_entry_tsc;
};

/*
 * tvh_images_collect - every IMAGE record of r, and the kernel_entry
 * window's START (one pass).  Returns 0,
 * -TVH_ERR_NOMEM or a walk error.  Free with tvh_images_free.
 */
int tvh_images_collect(struct tvt_reader *r, struct tvh_images *out);

/*
 * tvh_images_add - record one image (deduplicated on base and name).
 * Returns 1 added, 0 already there, -TVH_ERR_NOMEM.
 */
int tvh_images_add(struct tvh_images *im, uint32_t cpu, uint8_t kind,
		   uint64_t base, uint64_t size, uint64_t tsc, const char *name,
		   size_t len);
void tvh_images_free(struct tvh_images *im);

/*
 * tvh_image_find - the file in dir for an IMAGE name (rules above).
 * Returns 0 with *path malloc'ed, -TVH_ERR_NOT_FOUND, -TVH_ERR_IO (dir
 * unreadable, errno), -TVH_ERR_NOMEM.
 */
int tvh_image_find(const char *dir, const char *name, char **path);

struct tvh_images_load_stats {
	unsigned found;          /* loaded as modules */
	unsigned missing;        /* no file in dir */
	unsigned bad;            /* a file, but not loadable */
};

/*
 * tvh_images_load - for each image, find its file in dir and add it to st
 * at the image's base.  Images whose base already lies in a module of st
 * (given by hand with --image) are skipped.  log (may be NULL) gets a
 * line per image not loaded.  Returns 0, -TVH_ERR_IO (dir unreadable) or
 * -TVH_ERR_NOMEM.
 */
int tvh_images_load(const struct tvh_images *im, const char *dir,
		    struct tvh_symtab *st, FILE *log,
		    struct tvh_images_load_stats *ls);

/*
 * tvh_image_short_name - the name a module without a file goes by: the
 * last path component without its extension ("DxeCore" for
 * ".../X64/DxeCore.dll" or "...\\DxeCore.pdb", "BOOTX64" for
 * "\\EFI\\BOOT\\BOOTX64.EFI"), the GUID of "FvFile(GUID)".
 */
void tvh_image_short_name(const char *name, char *buf, size_t n);

/*
 * tvh_images_regions - one region (sym.h) per image with a size, named
 * by tvh_image_short_name: firmware drivers and the loader print as
 * NAME+0xoff with no file.  Returns 0 or -TVH_ERR_NOMEM.
 */
int tvh_images_regions(const struct tvh_images *im, struct tvh_regions *out);

struct tvh_ksyms;

/*
 * tvh_images_relocate_ksyms - move a kernel symbol file to where the
 * traced kernel ran, from what the capture holds, and say how in msg:
 *  1. an IMAGE record of kind kernel: its base is the run-time _text
 *     (KASLR); in the upper half, bias = base - the file's _text; below,
 *     the file's text also names that physical alias;
 *  2. else the kernel_entry window's START: its rip is where startup_64
 *     ran (the EFI stub jumps there); upper half: bias = rip - the
 *     file's startup_64; physical: the text's physical alias starts at
 *     rip - (startup_64 - _text), virtual addresses stay as in the file
 *     (the capture does not say the virtual KASLR offset);
 *  3. else nothing: the file is used as is.
 * Returns 1 when the file was relocated or aliased, 0 when not.
 */
int tvh_images_relocate_ksyms(const struct tvh_images *im, struct tvh_ksyms *k,
			      char *msg, size_t n);

#endif /* TVH_IMAGES_H */
