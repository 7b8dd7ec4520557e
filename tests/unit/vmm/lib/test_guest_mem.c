/* SPDX-License-Identifier: MIT */
/*
 * test_guest_mem.c - the guest page-table walker (vmm/lib/guest_mem.c).
 *
 * Guest-physical memory is a 16 MiB heap array behind the read_phys
 * callback; reads outside it fail (so a walk that follows a wrong address
 * shows up as GMEM_ERR_READ, and ASan watches the array).  Page tables
 * for each paging mode are built in it with small helpers that take
 * pages from a bump allocator at 1 MiB.  Data pages live at 4 MiB and up.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/lib/guest_mem.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define MEM_SIZE (16 * MiB)
#define TABLES_AT (1 * MiB)

#define P   GMEM_PTE_P
#define RW  GMEM_PTE_RW
#define US  GMEM_PTE_US
#define PS  GMEM_PTE_PS
#define XD  GMEM_PTE_XD

struct fake_mem {
	uint8_t *mem;
	uint64_t next_table;      /* bump allocator for table pages */
	unsigned reads;
	uint64_t fail_at;         /* a read touching this page fails; ~0 = none */
};

static struct fake_mem fm;

static int fake_read(void *opaque, uint64_t gpa, void *buf, size_t len)
{
	struct fake_mem *f = opaque;

	f->reads++;
	/* The walker promises never to cross a 4 KiB page in one call. */
	assert_true(len >= 1 && len <= 4096);
	assert_int_equal(gpa >> 12, (gpa + len - 1) >> 12);
	if (f->fail_at != ~0ull && (gpa >> 12) == (f->fail_at >> 12))
		return -1;
	if (gpa >= MEM_SIZE || len > MEM_SIZE - gpa)
		return -1;
	memcpy(buf, f->mem + gpa, len);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	fm.mem = calloc(1, MEM_SIZE);
	assert_non_null(fm.mem);
	fm.next_table = TABLES_AT;
	fm.reads = 0;
	fm.fail_at = ~0ull;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(fm.mem);
	fm.mem = NULL;
	return 0;
}

static uint64_t new_table(void)
{
	uint64_t pa = fm.next_table;

	fm.next_table += 4096;
	assert_true(fm.next_table <= 4 * MiB);
	return pa;
}

static void put64(uint64_t gpa, uint64_t v)
{
	memcpy(fm.mem + gpa, &v, 8);
}

static uint64_t get64(uint64_t gpa)
{
	uint64_t v;

	memcpy(&v, fm.mem + gpa, 8);
	return v;
}

static void put32(uint64_t gpa, uint32_t v)
{
	memcpy(fm.mem + gpa, &v, 4);
}

/* Fill a data page with a pattern that names it. */
static void fill_page(uint64_t gpa, uint8_t tag)
{
	for (unsigned i = 0; i < 4096; i++)
		fm.mem[gpa + i] = (uint8_t)(tag ^ i);
}

static struct gmem_ctx ctx_for(uint64_t cr0, uint64_t cr3, uint64_t cr4, uint64_t efer)
{
	struct gmem_ctx c = {
		.cr0 = cr0, .cr3 = cr3, .cr4 = cr4, .efer = efer,
		.maxphyaddr = 46, .read_phys = fake_read, .opaque = &fm,
	};

	return c;
}

/* --- IA-32e helpers ------------------------------------------------------- */

/* Map gva at the given leaf level (1 = 4 KiB, 2 = 2 MiB, 3 = 1 GiB). */
static void map_ia32e(uint64_t root, unsigned levels, uint64_t gva, uint64_t gpa,
		      unsigned leaf_level, uint64_t flags)
{
	uint64_t table = root;

	for (unsigned level = levels; level > leaf_level; level--) {
		uint64_t slot = table + 8 * ((gva >> (12 + 9 * (level - 1))) & 0x1ff);
		uint64_t e = get64(slot);

		if (!(e & P)) {
			e = new_table() | P | RW | US;
			put64(slot, e);
		}
		table = e & 0x000ffffffffff000ull;
	}
	put64(table + 8 * ((gva >> (12 + 9 * (leaf_level - 1))) & 0x1ff),
	      gpa | flags | P | (leaf_level > 1 ? PS : 0));
}

/* The address of the entry mapping gva at level (tables must exist). */
static uint64_t slot_ia32e(uint64_t root, unsigned levels, uint64_t gva, unsigned at)
{
	uint64_t table = root;

	for (unsigned level = levels; level > at; level--)
		table = get64(table + 8 * ((gva >> (12 + 9 * (level - 1))) & 0x1ff)) &
			0x000ffffffffff000ull;
	return table + 8 * ((gva >> (12 + 9 * (at - 1))) & 0x1ff);
}

static void expect_walk(const struct gmem_ctx *c, uint64_t gva, uint64_t gpa,
			uint64_t size, unsigned level)
{
	struct gmem_walk w;
	uint64_t t = 0;

	assert_int_equal(gmem_walk(c, gva, &w), 0);
	assert_true(w.gpa == gpa);
	assert_true(w.page_size == size);
	assert_int_equal(w.level, level);
	assert_int_equal(gmem_translate(c, gva, &t), 0);
	assert_true(t == gpa);
}

static void expect_error(const struct gmem_ctx *c, uint64_t gva, int err, unsigned level)
{
	struct gmem_walk w;
	uint64_t t = 0x5a5a;

	assert_int_equal(gmem_walk(c, gva, &w), err);
	if (level)
		assert_int_equal(w.fault_level, level);
	assert_int_equal(gmem_translate(c, gva, &t), err);
	assert_true(t == 0x5a5a);
}

/* --- tests ---------------------------------------------------------------- */

static void test_paging_off(void **state)
{
	struct gmem_ctx c = ctx_for(0x11, 0, 0, 0);   /* PE + ET, no PG */
	struct gmem_walk w;
	uint8_t buf[32];

	(void)state;
	assert_int_equal(gmem_paging_mode(&c), GMEM_PAGING_OFF);
	expect_walk(&c, 0x12345, 0x12345, 4096, 0);
	/* legacy linear addresses are 32 bits */
	expect_walk(&c, 0x100001234ull, 0x1234, 4096, 0);
	assert_int_equal(gmem_walk(&c, 0xb8000, &w), 0);
	assert_int_equal(w.paging, GMEM_PAGING_OFF);
	assert_true(w.leaf == 0);
	/* CR4.PAE alone or EFER.LMA alone do not turn paging on */
	c.cr4 = GMEM_CR4_PAE | GMEM_CR4_LA57;
	c.efer = GMEM_EFER_LMA;
	assert_int_equal(gmem_paging_mode(&c), GMEM_PAGING_OFF);

	fill_page(0x400000, 0x11);
	fill_page(0x401000, 0x22);
	assert_int_equal(gmem_read(&c, 0x400ff0, buf, sizeof(buf)), 0);
	assert_memory_equal(buf, fm.mem + 0x400ff0, sizeof(buf));
	assert_int_equal(fm.reads, 2);   /* one call per page */
}

static void test_paging_32(void **state)
{
	uint64_t pd = new_table(), pt = new_table();
	struct gmem_ctx c = ctx_for(GMEM_CR0_PG | 1, pd | 0x18 /* PWT|PCD */, 0, 0);
	uint8_t buf[8];

	(void)state;
	assert_int_equal(gmem_paging_mode(&c), GMEM_PAGING_32);
	/* 0x00401000 -> 0x500000 through a page table */
	put32(pd + 4 * 1, (uint32_t)(pt | P | RW));
	put32(pt + 4 * 1, 0x500000 | P | RW | US);
	put32(pt + 4 * 2, 0x503000 | P | 0x80 /* PAT, not PS */);
	expect_walk(&c, 0x00401abc, 0x500abc, 4096, 1);
	expect_walk(&c, 0x00402fff, 0x503fff, 4096, 1);
	/* not present: PTE, then PDE */
	expect_error(&c, 0x00403000, -GMEM_ERR_NOT_PRESENT, 1);
	expect_error(&c, 0x00800000, -GMEM_ERR_NOT_PRESENT, 2);
	/* upper 32 bits of the linear address are dropped */
	expect_walk(&c, 0xffffffff00401abcull, 0x500abc, 4096, 1);

	/* 4 MiB page at 0x80000000 -> 0xc00000; PS needs CR4.PSE */
	put32(pd + 4 * 0x200, 0xc00000 | P | RW | (uint32_t)PS);
	c.cr4 = GMEM_CR4_PSE;
	expect_walk(&c, 0x80123456, 0xd23456, 4 * MiB, 2);
	fill_page(0xd23000, 0x33);
	assert_int_equal(gmem_read(&c, 0x80123456, buf, sizeof(buf)), 0);
	assert_memory_equal(buf, fm.mem + 0xd23456, sizeof(buf));
	/* without CR4.PSE the PDE names a page table (at 0xc00000) */
	c.cr4 = 0;
	put32(0xc00000 + 4 * 0x123, 0x600000 | P);
	expect_walk(&c, 0x80123456, 0x600456, 4096, 1);

	/* PSE-36: PDE bits 20:13 are physical bits 39:32 */
	c.cr4 = GMEM_CR4_PSE;
	c.maxphyaddr = 40;
	put32(pd + 4 * 0x201, 0xc00000 | P | (uint32_t)PS | (0xabu << 13));
	expect_walk(&c, 0x80400010, 0xab00c00010ull, 4 * MiB, 2);
	/* ... only up to MAXPHYADDR: with 36 bits, PDE bits 20:17 are reserved */
	c.maxphyaddr = 36;
	expect_error(&c, 0x80400010, -GMEM_ERR_RESERVED, 2);
	put32(pd + 4 * 0x201, 0xc00000 | P | (uint32_t)PS | (0xbu << 13));
	expect_walk(&c, 0x80400010, 0xb00c00010ull, 4 * MiB, 2);
	/* bit 21 is always reserved in a 4 MiB PDE */
	put32(pd + 4 * 0x201, 0xc00000 | P | (uint32_t)PS | (1u << 21));
	expect_error(&c, 0x80400010, -GMEM_ERR_RESERVED, 2);
}

static void test_paging_pae(void **state)
{
	uint64_t pdpt_page = new_table(), pd = new_table(), pt = new_table();
	uint64_t pdpt = pdpt_page + 0x20;   /* CR3[31:5]: 32-byte aligned */
	struct gmem_ctx c = ctx_for(GMEM_CR0_PG | 1, pdpt, GMEM_CR4_PAE, 0);
	struct gmem_walk w;

	(void)state;
	assert_int_equal(gmem_paging_mode(&c), GMEM_PAGING_PAE);
	put64(pdpt + 8 * 2, pd | P);                 /* 0x80000000 .. 0xbfffffff */
	put64(pd + 8 * 0, pt | P | RW);
	put64(pt + 8 * 5, 0x705000 | P | RW);
	put64(pd + 8 * 1, 0xa00000 | P | PS);        /* 2 MiB at 0x80200000 */
	expect_walk(&c, 0x80005123, 0x705123, 4096, 1);
	expect_walk(&c, 0x80345678, 0xb45678, 2 * MiB, 2);
	assert_int_equal(gmem_walk(&c, 0x80345678, &w), 0);
	assert_true(w.leaf == (0xa00000 | P | PS));
	expect_walk(&c, 0x1080005123ull, 0x705123, 4096, 1);   /* 32-bit linear */
	expect_error(&c, 0x40000000, -GMEM_ERR_NOT_PRESENT, 3);
	expect_error(&c, 0x80400000, -GMEM_ERR_NOT_PRESENT, 2);
	expect_error(&c, 0x80006000, -GMEM_ERR_NOT_PRESENT, 1);

	/* XD is reserved without EFER.NXE */
	put64(pt + 8 * 5, 0x705000 | P | XD);
	expect_error(&c, 0x80005123, -GMEM_ERR_RESERVED, 1);
	c.efer = GMEM_EFER_NXE;
	expect_walk(&c, 0x80005123, 0x705123, 4096, 1);
	/* physical bits at or above MAXPHYADDR (46) */
	put64(pt + 8 * 5, 0x705000 | P | (1ull << 46));
	expect_error(&c, 0x80005123, -GMEM_ERR_RESERVED, 1);
	c.maxphyaddr = 52;
	put64(pt + 8 * 5, 0x705000 | P | (1ull << 62));   /* 62:M reserved in PAE */
	expect_error(&c, 0x80005123, -GMEM_ERR_RESERVED, 1);
	c.maxphyaddr = 46;
	/* 2 MiB leaf: bits 20:13 reserved, bit 12 is PAT */
	put64(pd + 8 * 1, 0xa00000 | P | PS | (1ull << 13));
	expect_error(&c, 0x80345678, -GMEM_ERR_RESERVED, 2);
	put64(pd + 8 * 1, 0xa00000 | P | PS | (1ull << 12));
	expect_walk(&c, 0x80345678, 0xb45678, 2 * MiB, 2);
	/* PDPTE: bits 2:1 and 8:5 reserved, XD too even with NXE */
	put64(pdpt + 8 * 2, pd | P | RW);
	expect_error(&c, 0x80005000, -GMEM_ERR_RESERVED, 3);
	put64(pdpt + 8 * 2, pd | P | XD);
	expect_error(&c, 0x80005000, -GMEM_ERR_RESERVED, 3);
	put64(pdpt + 8 * 2, pd | P | 0x18 /* PWT|PCD fine */);
	expect_walk(&c, 0x80345678, 0xb45678, 2 * MiB, 2);

	/* the VMCS copy of the PDPTEs wins over memory */
	c.pdpte_valid = true;
	c.pdpte[2] = 0;
	expect_error(&c, 0x80005000, -GMEM_ERR_NOT_PRESENT, 3);
	memset(fm.mem + pdpt, 0, 32);
	c.pdpte[2] = pd | P;
	expect_walk(&c, 0x80345678, 0xb45678, 2 * MiB, 2);
}

static void test_paging_4level(void **state)
{
	uint64_t pml4 = new_table();
	struct gmem_ctx c = ctx_for(GMEM_CR0_PG | 1, pml4 | 0x123 /* PCID */,
				    GMEM_CR4_PAE, GMEM_EFER_LMA | GMEM_EFER_NXE);
	const uint64_t kva = 0xffff800000201000ull;

	(void)state;
	assert_int_equal(gmem_paging_mode(&c), GMEM_PAGING_4LEVEL);
	map_ia32e(pml4, 4, 0x401000, 0x800000, 1, RW | US);
	map_ia32e(pml4, 4, 0x40000000, 0xe00000, 2, RW);          /* 2 MiB */
	map_ia32e(pml4, 4, 0x8000000000ull, 0x40000000, 3, RW);   /* 1 GiB */
	map_ia32e(pml4, 4, kva, 0x900000, 1, RW | XD);
	map_ia32e(pml4, 4, 0x7ffffffff000ull, 0x901000, 1, RW);   /* top of low half */

	expect_walk(&c, 0x401234, 0x800234, 4096, 1);
	expect_walk(&c, 0x40123456, 0xf23456, 2 * MiB, 2);
	expect_walk(&c, 0x8012345678ull, 0x52345678, GiB, 3);
	expect_walk(&c, kva + 0x10, 0x900010, 4096, 1);
	expect_walk(&c, 0x7fffffffffffull, 0x901fff, 4096, 1);

	/* canonical: bits 63:47 equal */
	expect_error(&c, 0x0000800000000000ull, -GMEM_ERR_NONCANONICAL, 0);
	expect_error(&c, 0xffff7fffffffffffull, -GMEM_ERR_NONCANONICAL, 0);
	expect_error(&c, 0x8000000000401000ull, -GMEM_ERR_NONCANONICAL, 0);
	expect_error(&c, 0xffff800000000000ull, -GMEM_ERR_NOT_PRESENT, 2);

	/* not present at each level */
	expect_error(&c, 0x0000010000000000ull, -GMEM_ERR_NOT_PRESENT, 4);
	expect_error(&c, 0x00000000c0000000ull, -GMEM_ERR_NOT_PRESENT, 3);
	expect_error(&c, 0x0000000000600000ull, -GMEM_ERR_NOT_PRESENT, 2);
	expect_error(&c, 0x0000000000402000ull, -GMEM_ERR_NOT_PRESENT, 1);

	/* XD without NXE */
	c.efer = GMEM_EFER_LMA;
	expect_error(&c, kva, -GMEM_ERR_RESERVED, 1);
	c.efer = GMEM_EFER_LMA | GMEM_EFER_NXE;
	/* bits 51:M (M = 46) */
	put64(slot_ia32e(pml4, 4, 0x401000, 2), get64(slot_ia32e(pml4, 4, 0x401000, 2)) |
	      (1ull << 50));
	expect_error(&c, 0x401000, -GMEM_ERR_RESERVED, 2);
	c.maxphyaddr = 52;
	expect_error(&c, 0x401000, -GMEM_ERR_READ, 0);   /* follows it: outside memory */
	c.maxphyaddr = 46;
	put64(slot_ia32e(pml4, 4, 0x401000, 2), get64(slot_ia32e(pml4, 4, 0x401000, 2)) &
	      ~(1ull << 50));
	/* bits 62:52 are ignored (protection keys, software bits) */
	put64(slot_ia32e(pml4, 4, 0x401000, 1), 0x800000 | P | (0x7ffull << 52));
	expect_walk(&c, 0x401234, 0x800234, 4096, 1);
	/* bit 7 of a PTE is PAT, not a page size */
	put64(slot_ia32e(pml4, 4, 0x401000, 1), 0x800000 | P | PS);
	expect_walk(&c, 0x401234, 0x800234, 4096, 1);
	/* PS in a PML4E is reserved */
	put64(slot_ia32e(pml4, 4, 0x401000, 4), get64(slot_ia32e(pml4, 4, 0x401000, 4)) | PS);
	expect_error(&c, 0x401000, -GMEM_ERR_RESERVED, 4);
	put64(slot_ia32e(pml4, 4, 0x401000, 4), get64(slot_ia32e(pml4, 4, 0x401000, 4)) & ~PS);
	/* 1 GiB leaf: bits 29:13 reserved; 2 MiB leaf: 20:13 */
	put64(slot_ia32e(pml4, 4, 0x8000000000ull, 3), 0x40000000 | P | PS | (1ull << 29));
	expect_error(&c, 0x8000000000ull, -GMEM_ERR_RESERVED, 3);
	put64(slot_ia32e(pml4, 4, 0x8000000000ull, 3), 0x40000000 | P | PS | (1ull << 12));
	expect_walk(&c, 0x8000000000ull, 0x40000000, GiB, 3);
	put64(slot_ia32e(pml4, 4, 0x40000000, 2), 0xe00000 | P | PS | (1ull << 20));
	expect_error(&c, 0x40000000, -GMEM_ERR_RESERVED, 2);
	/* a 1 GiB mapping ignores nothing else: PAT (bit 12) is not address */
	expect_walk(&c, 0x8000000000ull + 0x3fffffff, 0x7fffffff, GiB, 3);
}

static void test_paging_5level(void **state)
{
	uint64_t pml5 = new_table();
	struct gmem_ctx c = ctx_for(GMEM_CR0_PG | 1, pml5, GMEM_CR4_PAE | GMEM_CR4_LA57,
				    GMEM_EFER_LMA);
	const uint64_t va = 0x00ff800000403000ull;   /* needs 57 bits */

	(void)state;
	assert_int_equal(gmem_paging_mode(&c), GMEM_PAGING_5LEVEL);
	map_ia32e(pml5, 5, va, 0xa01000, 1, RW);
	map_ia32e(pml5, 5, 0xff00000000600000ull, 0xc00000, 2, RW);
	map_ia32e(pml5, 5, 0x1000, 0xa02000, 1, RW);
	expect_walk(&c, va + 0x123, 0xa01123, 4096, 1);
	expect_walk(&c, 0xff00000000654321ull, 0xc54321, 2 * MiB, 2);
	expect_walk(&c, 0x1fff, 0xa02fff, 4096, 1);
	/* canonical is 57 bits now */
	expect_error(&c, 0x0100000000000000ull, -GMEM_ERR_NONCANONICAL, 0);
	expect_error(&c, 0xfe00000000000000ull, -GMEM_ERR_NONCANONICAL, 0);
	expect_error(&c, 0x00fe000000000000ull, -GMEM_ERR_NOT_PRESENT, 5);
	/* PS is reserved in a PML5E */
	put64(slot_ia32e(pml5, 5, va, 5), get64(slot_ia32e(pml5, 5, va, 5)) | PS);
	expect_error(&c, va, -GMEM_ERR_RESERVED, 5);
	/* the same address is non-canonical with 4-level paging */
	c.cr4 = GMEM_CR4_PAE;
	expect_error(&c, va, -GMEM_ERR_NONCANONICAL, 0);
}

static void test_read_across_pages(void **state)
{
	uint64_t pml4 = new_table();
	struct gmem_ctx c = ctx_for(GMEM_CR0_PG | 1, pml4, GMEM_CR4_PAE,
				    GMEM_EFER_LMA | GMEM_EFER_NXE);
	uint8_t buf[3 * 4096], want[3 * 4096];

	(void)state;
	/* three consecutive linear pages on scattered physical pages */
	fill_page(0x600000, 0xa1);
	fill_page(0x4ff000, 0xb2);
	fill_page(0x777000, 0xc3);
	map_ia32e(pml4, 4, 0x10000, 0x600000, 1, RW);
	map_ia32e(pml4, 4, 0x11000, 0x4ff000, 1, RW);
	map_ia32e(pml4, 4, 0x12000, 0x777000, 1, RW);
	memcpy(want, fm.mem + 0x600000, 4096);
	memcpy(want + 4096, fm.mem + 0x4ff000, 4096);
	memcpy(want + 8192, fm.mem + 0x777000, 4096);

	/* an instruction straddling a page boundary */
	assert_int_equal(gmem_read(&c, 0x10ffa, buf, 15), 0);
	assert_memory_equal(buf, want + 0xffa, 15);
	/* all three pages, unaligned at both ends */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(gmem_read(&c, 0x10001, buf, sizeof(buf) - 2), 0);
	assert_memory_equal(buf, want + 1, sizeof(buf) - 2);
	/* len 0 reads nothing, even at an unmapped address */
	fm.reads = 0;
	assert_int_equal(gmem_read(&c, 0x900000, buf, 0), 0);
	assert_int_equal(fm.reads, 0);

	/* into a missing page: the first part arrives, then the error */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(gmem_read(&c, 0x12ff8, buf, 16), -GMEM_ERR_NOT_PRESENT);
	assert_memory_equal(buf, want + 0x2ff8, 8);
	/* a failing data read */
	fm.fail_at = 0x4ff000;
	assert_int_equal(gmem_read(&c, 0x10ff0, buf, 32), -GMEM_ERR_READ);
	fm.fail_at = ~0ull;
	/* a failing table read */
	fm.fail_at = pml4;
	assert_int_equal(gmem_read(&c, 0x10000, buf, 4), -GMEM_ERR_READ);
	fm.fail_at = ~0ull;
	/* non-canonical */
	assert_int_equal(gmem_read(&c, 0x0000800000000000ull, buf, 4), -GMEM_ERR_NONCANONICAL);

	/* 32-bit paging wraps at 4 GiB: 0xfffffffe + 4 reads pages 0xfffff and 0 */
	{
		uint64_t pd = new_table(), pt_hi = new_table(), pt_lo = new_table();
		struct gmem_ctx c32 = ctx_for(GMEM_CR0_PG | 1, pd, 0, 0);

		put32(pd + 4 * 0x3ff, (uint32_t)(pt_hi | P));
		put32(pt_hi + 4 * 0x3ff, 0x600000 | P);
		put32(pd, (uint32_t)(pt_lo | P));
		put32(pt_lo, 0x777000 | P);
		assert_int_equal(gmem_read(&c32, 0xfffffffe, buf, 4), 0);
		assert_memory_equal(buf, want + 4094, 2);
		assert_memory_equal(buf + 2, want + 8192, 2);
	}
}

static void test_no_writes_and_args(void **state)
{
	uint64_t pml4 = new_table();
	struct gmem_ctx c = ctx_for(GMEM_CR0_PG | 1, pml4, GMEM_CR4_PAE,
				    GMEM_EFER_LMA | GMEM_EFER_NXE);
	struct gmem_walk w;
	uint64_t gpa;
	uint8_t *before, buf[64];

	(void)state;
	map_ia32e(pml4, 4, 0x10000, 0x600000, 1, RW);
	map_ia32e(pml4, 4, 0x200000, 0x800000, 2, RW);
	before = malloc(MEM_SIZE);
	assert_non_null(before);
	memcpy(before, fm.mem, MEM_SIZE);
	/* walks and reads leave guest memory as it was: no A/D bits */
	assert_int_equal(gmem_read(&c, 0x10000, buf, sizeof(buf)), 0);
	assert_int_equal(gmem_read(&c, 0x200100, buf, sizeof(buf)), 0);
	assert_int_equal(gmem_translate(&c, 0x10000, &gpa), 0);
	assert_memory_equal(before, fm.mem, MEM_SIZE);
	free(before);
	assert_int_equal(get64(slot_ia32e(pml4, 4, 0x10000, 1)) & (GMEM_PTE_A | GMEM_PTE_D), 0);

	/* arguments */
	assert_int_equal(gmem_walk(NULL, 0, &w), -GMEM_ERR_ARG);
	assert_int_equal(gmem_walk(&c, 0, NULL), -GMEM_ERR_ARG);
	assert_int_equal(gmem_translate(&c, 0x10000, NULL), -GMEM_ERR_ARG);
	assert_int_equal(gmem_read(&c, 0x10000, NULL, 1), -GMEM_ERR_ARG);
	assert_int_equal(gmem_read(NULL, 0x10000, buf, 1), -GMEM_ERR_ARG);
	c.maxphyaddr = 53;
	assert_int_equal(gmem_translate(&c, 0x10000, &gpa), -GMEM_ERR_ARG);
	c.maxphyaddr = 31;
	assert_int_equal(gmem_translate(&c, 0x10000, &gpa), -GMEM_ERR_ARG);
	c.maxphyaddr = 0;   /* means 52 */
	assert_int_equal(gmem_translate(&c, 0x10000, &gpa), 0);
	c.read_phys = NULL;
	assert_int_equal(gmem_translate(&c, 0x10000, &gpa), -GMEM_ERR_ARG);

	assert_string_equal(gmem_strerror(0), "ok");
	assert_string_equal(gmem_strerror(-GMEM_ERR_NOT_PRESENT), "page not present");
	assert_string_not_equal(gmem_strerror(-GMEM_ERR_NONCANONICAL), "unknown error");
	assert_string_not_equal(gmem_strerror(-GMEM_ERR_RESERVED), "unknown error");
	assert_string_not_equal(gmem_strerror(-GMEM_ERR_READ), "unknown error");
	assert_string_not_equal(gmem_strerror(-GMEM_ERR_ARG), "unknown error");
	assert_string_equal(gmem_strerror(-99), "unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_paging_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paging_32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paging_pae, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paging_4level, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paging_5level, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_across_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_writes_and_args, setup, teardown),
	};

	return cmocka_run_group_tests_name("test_guest_mem", tests, NULL, NULL);
}
