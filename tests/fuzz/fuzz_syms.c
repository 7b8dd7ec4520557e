/* SPDX-License-Identifier: MIT */
/*
 * fuzz_syms.c - libFuzzer target: the symbol files the host tools read
 * (`--kallsyms`, `--elf`): /proc/kallsyms and System.map text
 * (ksyms.c), a kernel image's own compressed kallsyms table
 * (kallsyms_img.c), a PE image's sections and exports (pe.c), each
 * followed by lookups.  Input: one byte picking the reader (low 2 bits),
 * then the file.  ELF symbols go through elfutils' libdw (not ours).
 */
#include <stdlib.h>

#include "host-tools/lib/kallsyms_img.h"
#include "host-tools/lib/ksyms.h"
#include "host-tools/lib/pe.h"

static void ksyms_probe(struct tvh_ksyms *k, const uint8_t *data, size_t size)
{
	const char *name, *module;
	uint64_t off;

	tvh_ksyms_addr_of(k, "_text");
	for (size_t i = 0; i + 8 <= size && i < 128; i += 8) {
		uint64_t a = 0;

		for (unsigned b = 0; b < 8; b++)
			a |= (uint64_t)data[i + b] << (8 * b);
		if (tvh_ksyms_lookup(k, a, &name, &off, &module) == 0 && !name)
			abort();
		tvh_ksyms_lookup_data(k, a, &name, &off, &module);
	}
	if (k->n) {
		tvh_ksyms_lookup(k, k->lo, &name, &off, &module);
		tvh_ksyms_relocate(k, 0x1000000);
		tvh_ksyms_phys_alias(k, 0x1000000);
		tvh_ksyms_lookup(k, k->lo + 0x1000000, &name, &off, &module);
		tvh_ksyms_lookup(k, 0x1000000, &name, &off, &module);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tvh_ksyms k;
	struct tvh_pe pe;
	unsigned pick;

	if (size < 1)
		return 0;
	pick = data[0] & 3;
	data++;
	size--;
	switch (pick) {
	case 0:
	case 1:
		tvh_ksyms_init(&k);
		if (tvh_ksyms_parse(&k, (const char *)data, size,
				    pick ? TVH_KSYMS_SYSTEM_MAP : TVH_KSYMS_KALLSYMS, "fuzz") > 0)
			ksyms_probe(&k, data, size);
		tvh_ksyms_free(&k);
		break;
	case 2:
		tvh_ksyms_init(&k);
		if (tvh_ksyms_from_image(&k, data, size, "fuzz") > 0)
			ksyms_probe(&k, data, size);
		tvh_ksyms_free(&k);
		break;
	default:
		if (tvh_pe_parse(data, size, &pe) == 0) {
			uint32_t off;

			for (uint32_t rva = 0; rva < pe.size_of_image && rva < (1u << 20); rva += 0x100)
				tvh_pe_func(&pe, rva, &off);
			tvh_pe_func(&pe, pe.entry_rva, &off);
			tvh_pe_free(&pe);
		}
		break;
	}
	return 0;
}
