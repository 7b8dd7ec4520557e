/* SPDX-License-Identifier: MIT */
/*
 * segment.c - GDT descriptor decoding.
 */
#include "vmm/lib/segment.h"

#include <string.h>

static void seg_unusable(uint16_t sel, struct seg_state *out)
{
	out->selector = sel;
	out->base = 0;
	out->limit = 0;
	out->ar = SEG_AR_UNUSABLE;
}

bool seg_from_gdt(const uint8_t *gdt, uint32_t gdt_limit, uint16_t sel,
		  struct seg_state *out)
{
	uint32_t index = sel >> 3;
	uint64_t d, hi = 0;
	uint32_t limit;

	if (index == 0 || (sel & 4) || (uint64_t)index * 8 + 7 > gdt_limit) {
		seg_unusable(sel, out);
		return false;
	}
	memcpy(&d, gdt + (uint64_t)index * 8, 8);
	if (!(d & (1ull << 47))) {  /* not present */
		seg_unusable(sel, out);
		return false;
	}
	out->selector = sel;
	/* Bits 47:40 are type/S/DPL/P, 55:52 AVL/L/DB/G: VMCS AR 7:0 and 15:12. */
	out->ar = (uint32_t)((d >> 40) & 0xf0ff);
	limit = (uint32_t)((d & 0xffff) | ((d >> 32) & 0xf0000));
	if (d & (1ull << 55))
		limit = (limit << 12) | 0xfff;
	out->limit = limit;
	out->base = ((d >> 16) & 0xffffff) | (((d >> 56) & 0xff) << 24);
	if (!(d & (1ull << 44))) {
		/* System descriptor: 16 bytes in IA-32e mode. */
		if ((uint64_t)index * 8 + 15 <= gdt_limit) {
			memcpy(&hi, gdt + (uint64_t)index * 8 + 8, 8);
			out->base |= (hi & 0xffffffff) << 32;
		}
	}
	return true;
}

void seg_fake_tr(uint64_t tss_base, struct seg_state *out)
{
	out->selector = 0;
	out->base = tss_base;
	out->limit = 0x67;
	out->ar = 0x8b;  /* present, DPL 0, S=0, type 11: 64-bit busy TSS */
}

uint64_t seg_encode_descriptor(uint32_t base, uint32_t limit_field, uint32_t ar)
{
	uint64_t d = 0;

	d |= limit_field & 0xffff;
	d |= (uint64_t)(base & 0xffffff) << 16;
	d |= (uint64_t)(ar & 0xff) << 40;
	d |= (uint64_t)((limit_field >> 16) & 0xf) << 48;
	d |= (uint64_t)((ar >> 12) & 0xf) << 52;
	d |= (uint64_t)((base >> 24) & 0xff) << 56;
	return d;
}
