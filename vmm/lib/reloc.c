/* SPDX-License-Identifier: MIT */
/*
 * reloc.c - apply R_X86_64_RELATIVE relocations to an image copy.
 */
#include "vmm/lib/reloc.h"

#include <string.h>

long reloc_image(uint8_t *base, uint64_t size, uint64_t dyn_off)
{
	uint64_t rela_off = 0, rela_size = 0, rela_ent = sizeof(struct elf64_rela);
	int have_rela = 0, have_size = 0;
	long applied = 0;

	for (uint64_t off = dyn_off;; off += sizeof(struct elf64_dyn)) {
		struct elf64_dyn d;

		if (off + sizeof(d) > size || off < dyn_off)
			return RELOC_ERR_RANGE;
		memcpy(&d, base + off, sizeof(d));
		if (d.tag == ELF_DT_NULL)
			break;
		if (d.tag == ELF_DT_RELA) {
			rela_off = d.val;
			have_rela = 1;
		} else if (d.tag == ELF_DT_RELASZ) {
			rela_size = d.val;
			have_size = 1;
		} else if (d.tag == ELF_DT_RELAENT) {
			rela_ent = d.val;
		}
	}
	if (!have_rela || !have_size)
		return have_rela || have_size ? RELOC_ERR_NO_RELA : 0;
	if (rela_ent != sizeof(struct elf64_rela))
		return RELOC_ERR_ENTSIZE;
	if (rela_off > size || rela_size > size - rela_off || rela_size % rela_ent)
		return RELOC_ERR_RANGE;

	for (uint64_t i = 0; i < rela_size / rela_ent; i++) {
		struct elf64_rela r;
		uint64_t v;

		memcpy(&r, base + rela_off + i * rela_ent, sizeof(r));
		switch ((uint32_t)r.info) {
		case ELF_R_X86_64_NONE:
			continue;
		case ELF_R_X86_64_RELATIVE:
			if (r.offset > size - 8)
				return RELOC_ERR_RANGE;
			v = (uint64_t)(uintptr_t)base + (uint64_t)r.addend;
			memcpy(base + r.offset, &v, sizeof(v));
			applied++;
			break;
		default:
			return RELOC_ERR_TYPE;
		}
	}
	return applied;
}
