/* SPDX-License-Identifier: MIT */
/*
 * reloc.h - re-relocating tracevisor's own image.
 *
 * The firmware loads tracevisor.efi into EfiLoaderCode memory, which the
 * OS reclaims after ExitBootServices.  The VMX-root half of tracevisor
 * must live on, so boot copies the whole image into reserved memory and
 * re-applies the image's relocations for the new base.  Only
 * R_X86_64_RELATIVE exists in the image (the build checks it); with RELA
 * entries the value is base + addend, independent of what the old copy
 * held, so re-applying is exact.
 */
#ifndef TV_RELOC_H
#define TV_RELOC_H

#include <stddef.h>
#include <stdint.h>

/* ELF-64 structures (System V ABI), declared here: elf.h is a host header. */
struct elf64_dyn {
	int64_t tag;
	uint64_t val;
};
struct elf64_rela {
	uint64_t offset;
	uint64_t info;
	int64_t addend;
};
_Static_assert(sizeof(struct elf64_rela) == 24, "Elf64_Rela is 24 bytes");

#define ELF_DT_NULL 0
#define ELF_DT_RELA 7
#define ELF_DT_RELASZ 8
#define ELF_DT_RELAENT 9
#define ELF_R_X86_64_NONE 0
#define ELF_R_X86_64_RELATIVE 8

#define RELOC_ERR_NO_RELA   (-1)  /* dynamic section lacks RELA/RELASZ */
#define RELOC_ERR_ENTSIZE   (-2)  /* RELAENT is not 24 */
#define RELOC_ERR_RANGE     (-3)  /* a table or target outside the image */
#define RELOC_ERR_TYPE      (-4)  /* a relocation other than RELATIVE/NONE */

/*
 * reloc_image - apply every RELATIVE relocation of the image at base
 * (size bytes) for that base.  dyn_off: offset of _DYNAMIC in the image.
 * Returns the number applied, or a RELOC_ERR_* code (nothing is written
 * when the tables are malformed; a bad entry stops at that entry).
 */
long reloc_image(uint8_t *base, uint64_t size, uint64_t dyn_off);

#endif /* TV_RELOC_H */
