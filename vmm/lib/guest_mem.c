/* SPDX-License-Identifier: MIT */
/*
 * guest_mem.c - guest page-table walker (SDM 3A chapter 4), read-only.
 */
#include "vmm/lib/guest_mem.h"

#include <string.h>

#define PAGE_4K   (1ull << 12)
#define PAGE_2M   (1ull << 21)
#define PAGE_4M   (1ull << 22)
#define PAGE_1G   (1ull << 30)

/* Bits hi..lo set (both < 64); none when hi < lo (MAXPHYADDR 52: no 51:52). */
static uint64_t bits(unsigned hi, unsigned lo)
{
	uint64_t top = hi >= 63 ? ~0ull : (1ull << (hi + 1)) - 1;

	if (hi < lo)
		return 0;
	return top & ~((1ull << lo) - 1);
}

enum gmem_paging gmem_paging_mode(const struct gmem_ctx *ctx)
{
	if (!(ctx->cr0 & GMEM_CR0_PG))
		return GMEM_PAGING_OFF;
	if (!(ctx->cr4 & GMEM_CR4_PAE))
		return GMEM_PAGING_32;
	if (!(ctx->efer & GMEM_EFER_LMA))
		return GMEM_PAGING_PAE;
	return (ctx->cr4 & GMEM_CR4_LA57) ? GMEM_PAGING_5LEVEL : GMEM_PAGING_4LEVEL;
}

static int read_entry(const struct gmem_ctx *ctx, uint64_t gpa, unsigned size, uint64_t *e)
{
	uint8_t b[8];

	if (ctx->read_phys(ctx->opaque, gpa, b, size) != 0)
		return -GMEM_ERR_READ;
	*e = 0;
	for (unsigned i = 0; i < size; i++)   /* little endian, as the CPU reads it */
		*e |= (uint64_t)b[i] << (8 * i);
	return 0;
}

/* Check P and the reserved bits of entry e found at level; record a fault. */
static int check_entry(struct gmem_walk *w, uint64_t e, unsigned level, uint64_t rsvd)
{
	if (!(e & GMEM_PTE_P)) {
		w->fault_entry = e;
		w->fault_level = (uint8_t)level;
		return -GMEM_ERR_NOT_PRESENT;
	}
	if (e & rsvd) {
		w->fault_entry = e;
		w->fault_level = (uint8_t)level;
		return -GMEM_ERR_RESERVED;
	}
	return 0;
}

static void leaf(struct gmem_walk *w, uint64_t e, unsigned level, uint64_t frame,
		 uint64_t size, uint64_t la)
{
	w->leaf = e;
	w->level = (uint8_t)level;
	w->page_size = size;
	w->gpa = frame | (la & (size - 1));
}

/* 32-bit paging, SDM 3A 4.3, Tables 4-4 to 4-6. */
static int walk_32(const struct gmem_ctx *ctx, unsigned m, uint32_t la, struct gmem_walk *w)
{
	uint64_t pde, pte, rsvd;
	unsigned m40 = m < 40 ? m : 40;
	int rc;

	rc = read_entry(ctx, (ctx->cr3 & 0xfffff000ull) | ((la >> 22) << 2), 4, &pde);
	if (rc)
		return rc;
	if ((ctx->cr4 & GMEM_CR4_PSE) && (pde & GMEM_PTE_PS)) {
		/* 4 MiB page: bits 20:13 hold physical bits 39:32 (PSE-36),
		 * those at or above MAXPHYADDR and bit 21 are reserved. */
		rsvd = 1ull << 21;
		if (m40 < 40)
			rsvd |= bits(20, 13 + (m40 - 32));
		rc = check_entry(w, pde, 2, rsvd);
		if (rc)
			return rc;
		leaf(w, pde, 2, (pde & 0xffc00000ull) | (((pde >> 13) & 0xff) << 32), PAGE_4M, la);
		return 0;
	}
	rc = check_entry(w, pde, 2, 0);
	if (rc)
		return rc;
	rc = read_entry(ctx, (pde & 0xfffff000ull) | (((la >> 12) & 0x3ff) << 2), 4, &pte);
	if (rc)
		return rc;
	rc = check_entry(w, pte, 1, 0);
	if (rc)
		return rc;
	leaf(w, pte, 1, pte & 0xfffff000ull, PAGE_4K, la);
	return 0;
}

/* PAE paging, SDM 3A 4.4, Tables 4-8 to 4-11. */
static int walk_pae(const struct gmem_ctx *ctx, unsigned m, uint32_t la, struct gmem_walk *w)
{
	uint64_t pdpte, pde, pte, addr = bits(m - 1, 12);
	/* Bits 62:M are reserved in PAE entries, 63 too without NXE. */
	uint64_t rsvd = bits(62, m) | ((ctx->efer & GMEM_EFER_NXE) ? 0 : GMEM_PTE_XD);
	unsigned i = la >> 30;
	int rc;

	if (ctx->pdpte_valid) {
		pdpte = ctx->pdpte[i];
	} else {
		rc = read_entry(ctx, (ctx->cr3 & 0xffffffe0ull) + 8ull * i, 8, &pdpte);
		if (rc)
			return rc;
	}
	/* PDPTE: bits 2:1, 8:5 and 63:M reserved (XD included, Table 4-8). */
	rc = check_entry(w, pdpte, 3, bits(2, 1) | bits(8, 5) | bits(63, m));
	if (rc)
		return rc;
	rc = read_entry(ctx, (pdpte & addr) + 8ull * ((la >> 21) & 0x1ff), 8, &pde);
	if (rc)
		return rc;
	if (pde & GMEM_PTE_PS) {
		rc = check_entry(w, pde, 2, rsvd | bits(20, 13));
		if (rc)
			return rc;
		leaf(w, pde, 2, pde & bits(m - 1, 21), PAGE_2M, la);
		return 0;
	}
	rc = check_entry(w, pde, 2, rsvd);
	if (rc)
		return rc;
	rc = read_entry(ctx, (pde & addr) + 8ull * ((la >> 12) & 0x1ff), 8, &pte);
	if (rc)
		return rc;
	rc = check_entry(w, pte, 1, rsvd);
	if (rc)
		return rc;
	leaf(w, pte, 1, pte & addr, PAGE_4K, la);
	return 0;
}

/* 4- and 5-level paging, SDM 3A 4.5, Tables 4-14 to 4-20. */
static int walk_ia32e(const struct gmem_ctx *ctx, unsigned m, unsigned levels, uint64_t la,
		      struct gmem_walk *w)
{
	uint64_t addr = bits(m - 1, 12);
	/* Bits 51:M are reserved in every entry, 63 without NXE; 62:52 are
	 * ignored or protection keys. */
	uint64_t rsvd = bits(51, m) | ((ctx->efer & GMEM_EFER_NXE) ? 0 : GMEM_PTE_XD);
	unsigned va_bits = levels == 5 ? 57 : 48;
	uint64_t table = ctx->cr3 & addr;
	uint64_t upper = la >> (va_bits - 1);
	int rc;

	/* Canonical: bits 63:va_bits-1 all equal (3A 4.5.1). */
	if (upper != 0 && upper != (~0ull >> (va_bits - 1)))
		return -GMEM_ERR_NONCANONICAL;

	for (unsigned level = levels; level >= 1; level--) {
		unsigned shift = 12 + 9 * (level - 1);
		uint64_t e, r = rsvd;

		rc = read_entry(ctx, table + 8ull * ((la >> shift) & 0x1ff), 8, &e);
		if (rc)
			return rc;
		if (level >= 4)
			r |= GMEM_PTE_PS;          /* PML5E, PML4E: PS reserved */
		else if (level == 3 && (e & GMEM_PTE_PS))
			r |= bits(29, 13);         /* 1 GiB page: bit 12 is PAT */
		else if (level == 2 && (e & GMEM_PTE_PS))
			r |= bits(20, 13);         /* 2 MiB page */
		rc = check_entry(w, e, level, r);
		if (rc)
			return rc;
		if (level == 1 || (level <= 3 && (e & GMEM_PTE_PS))) {
			leaf(w, e, level, e & bits(m - 1, shift), 1ull << shift, la);
			return 0;
		}
		table = e & addr;
	}
	return -GMEM_ERR_NOT_PRESENT;   /* not reached: level 1 is a leaf */
}

int gmem_walk(const struct gmem_ctx *ctx, uint64_t gva, struct gmem_walk *w)
{
	unsigned m;

	if (!w)
		return -GMEM_ERR_ARG;
	memset(w, 0, sizeof(*w));
	if (!ctx || !ctx->read_phys)
		return -GMEM_ERR_ARG;
	m = ctx->maxphyaddr ? ctx->maxphyaddr : 52;
	if (m < 32 || m > 52)
		return -GMEM_ERR_ARG;
	w->paging = (uint8_t)gmem_paging_mode(ctx);
	switch (w->paging) {
	case GMEM_PAGING_OFF:
		w->gpa = gva & 0xffffffffull;
		w->page_size = PAGE_4K;
		return 0;
	case GMEM_PAGING_32:
		return walk_32(ctx, m, (uint32_t)gva, w);
	case GMEM_PAGING_PAE:
		return walk_pae(ctx, m, (uint32_t)gva, w);
	case GMEM_PAGING_4LEVEL:
		return walk_ia32e(ctx, m, 4, gva, w);
	default:
		return walk_ia32e(ctx, m, 5, gva, w);
	}
}

int gmem_translate(const struct gmem_ctx *ctx, uint64_t gva, uint64_t *gpa)
{
	struct gmem_walk w;
	int rc;

	if (!gpa)
		return -GMEM_ERR_ARG;
	rc = gmem_walk(ctx, gva, &w);
	if (rc)
		return rc;
	*gpa = w.gpa;
	return 0;
}

int gmem_read(const struct gmem_ctx *ctx, uint64_t gva, void *buf, size_t len)
{
	uint8_t *p = buf;

	if (!ctx || !ctx->read_phys || (!buf && len))
		return -GMEM_ERR_ARG;
	while (len) {
		size_t chunk = (size_t)(PAGE_4K - (gva & (PAGE_4K - 1)));
		uint64_t gpa;
		int rc;

		if (chunk > len)
			chunk = len;
		rc = gmem_translate(ctx, gva, &gpa);
		if (rc)
			return rc;
		if (ctx->read_phys(ctx->opaque, gpa, p, chunk) != 0)
			return -GMEM_ERR_READ;
		gva += chunk;
		p += chunk;
		len -= chunk;
	}
	return 0;
}

const char *gmem_strerror(int err)
{
	switch (err) {
	case 0:
		return "ok";
	case -GMEM_ERR_NOT_PRESENT:
		return "page not present";
	case -GMEM_ERR_NONCANONICAL:
		return "non-canonical address";
	case -GMEM_ERR_RESERVED:
		return "reserved bit set in a paging-structure entry";
	case -GMEM_ERR_READ:
		return "guest-physical read failed";
	case -GMEM_ERR_ARG:
		return "bad argument";
	default:
		return "unknown error";
	}
}
