/* SPDX-License-Identifier: MIT */
/*
 * host.c - host page tables, GDT and IDT (SDM 3A 4.5 paging, 3.4.5
 * descriptors, 6.14.1 64-bit IDT gates).
 */
#include "vmm/vmx/host.h"

#include <string.h>

#include "vmm/lib/segment.h"
#include "vmm/vmx/vmx.h"

#define PTE_P   (1ull << 0)
#define PTE_RW  (1ull << 1)
#define PTE_PS  (1ull << 7)
#define GIB (1ull << 30)
#define MIB2 (1ull << 21)

uint64_t host_build_page_tables(struct page_pool *pool, uint64_t top, bool gb_pages)
{
	uint64_t *pml4, *pdpt = NULL;
	uint64_t ngb = (top + GIB - 1) / GIB;

	if (ngb == 0)
		ngb = 1;
	if (ngb > 512ull * 512)
		ngb = 512ull * 512;
	pml4 = page_pool_alloc(pool);
	if (!pml4)
		return 0;
	for (uint64_t g = 0; g < ngb; g++) {
		uint64_t *pd;

		if (g % 512 == 0) {
			pdpt = page_pool_alloc(pool);
			if (!pdpt)
				return 0;
			pml4[g / 512] = page_pool_pa(pool, pdpt) | PTE_P | PTE_RW;
		}
		if (gb_pages) {
			pdpt[g % 512] = (g * GIB) | PTE_P | PTE_RW | PTE_PS;
			continue;
		}
		pd = page_pool_alloc(pool);
		if (!pd)
			return 0;
		for (uint64_t m = 0; m < 512; m++)
			pd[m] = (g * GIB + m * MIB2) | PTE_P | PTE_RW | PTE_PS;
		pdpt[g % 512] = page_pool_pa(pool, pd) | PTE_P | PTE_RW;
	}
	return page_pool_pa(pool, pml4);
}

_Static_assert(HOST_SEL_TSS / 8 + 1 < HOST_GDT_BYTES / 8, "TSS descriptor inside the host GDT");

void host_build_gdt(uint8_t *gdt, uint64_t tss_base)
{
	uint64_t d[HOST_GDT_BYTES / 8] = { 0 };

	/* 64-bit code: P, S, type 0xB, L=1, G=1; data: P, S, type 3, D/B=1, G=1. */
	d[1] = seg_encode_descriptor(0, 0xfffff, 0xa09b);
	d[2] = seg_encode_descriptor(0, 0xfffff, 0xc093);
	/* 64-bit TSS (type 9, available), 16 bytes. */
	d[HOST_SEL_TSS / 8] = seg_encode_descriptor((uint32_t)tss_base, 0x67, 0x0089);
	d[HOST_SEL_TSS / 8 + 1] = tss_base >> 32;
	memcpy(gdt, d, HOST_GDT_BYTES);
}

void host_build_idt(uint8_t *idt, uint64_t stub_base, uint32_t stub_count)
{
	for (uint32_t v = 0; v < 256; v++) {
		uint64_t target = stub_base + 16ull * (v < stub_count ? v : 13);
		uint64_t lo, hi;

		/* offset 15:0, selector, IST 0, type 0xE (interrupt gate), P. */
		lo = (target & 0xffff) | ((uint64_t)HOST_SEL_CODE << 16) |
		     (0x8eull << 40) | (((target >> 16) & 0xffff) << 48);
		hi = target >> 32;
		memcpy(idt + v * 16, &lo, 8);
		memcpy(idt + v * 16 + 8, &hi, 8);
	}
}
