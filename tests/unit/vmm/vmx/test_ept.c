/* SPDX-License-Identifier: MIT */
/*
 * test_ept.c - the identity EPT (vmm/vmx/ept.c) and its page pool
 * (vmm/lib/page_pool.c).
 *
 * The pool's memory comes from the host heap but claims the physical
 * address POOL_PA, so an entry holding a virtual address, or code
 * following an entry without converting it, fails loudly under ASan.
 * The MTRRs are an OVMF/QEMU-like set (see test_mtrr.c) plus a WC
 * framebuffer-like range at 32 GiB; the "hypervisor" hides 5 pages at
 * 0x7ee01000 (given unaligned, to check the widening to pages).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/vmx/ept.h"
#include "vmm/vmx/mtrr.h"
#include "vmm/lib/page_pool.h"
#include "vmm/vmx/vmx_caps.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)

#define POOL_PA   0x70000000ull
#define PHYS_BITS 40
#define CAP_ALL   (EPT_CAP_PWL4 | EPT_CAP_MEMTYPE_UC | EPT_CAP_MEMTYPE_WB | \
		   EPT_CAP_PDE_2MB | EPT_CAP_PDPTE_1GB | EPT_CAP_INVEPT)
#define ALL8(t)   (0x0101010101010101ull * (uint64_t)(t))

#define HIDDEN_BASE 0x7ee00800ull   /* widened to 0x7ee00000 .. 0x7ee05000 */
#define HIDDEN_SIZE 0x4700ull   /* ends at 0x7ee04f00 */
#define HIDDEN_PAGES 5

struct fixture {
	void *mem;
	size_t pages;
	struct page_pool pool;
	struct mtrr_state mtrr;
	struct ept_range hidden[4];
	struct ept_params params;
	struct ept ept;
};

static void set_var(struct mtrr_state *s, unsigned n, uint64_t base, uint64_t size, unsigned type)
{
	s->var[n].base = base | type;
	s->var[n].mask = (~(size - 1) & (((1ull << PHYS_BITS) - 1) & ~0xfffull)) |
			 MTRR_PHYSMASK_VALID;
}

static void ovmf_mtrrs(struct mtrr_state *s)
{
	memset(s, 0, sizeof(*s));
	s->present = true;
	s->phys_addr_bits = PHYS_BITS;
	s->cap = 0x508;
	s->def_type = MTRR_DEF_E | MTRR_DEF_FE | MTRR_TYPE_WB;
	s->fixed[0] = ALL8(MTRR_TYPE_WB);
	s->fixed[1] = ALL8(MTRR_TYPE_WB);
	s->fixed[2] = ALL8(MTRR_TYPE_UC);
	for (int i = 3; i < MTRR_NUM_FIXED; i++)
		s->fixed[i] = ALL8(MTRR_TYPE_WB);
	s->var_count = 8;
	set_var(s, 0, 0xc0000000, 1 * GiB, MTRR_TYPE_UC);
	set_var(s, 1, 32 * GiB, 256 * MiB, MTRR_TYPE_WC);
}

static struct fixture *fixture_new(size_t pages, uint64_t top)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->pages = pages;
	assert_int_equal(posix_memalign(&f->mem, 4096, pages * 4096), 0);
	memset(f->mem, 0xa5, pages * 4096);  /* the pool must zero what it hands out */
	assert_int_equal(page_pool_init_at(&f->pool, f->mem, POOL_PA, pages * 4096), 0);
	ovmf_mtrrs(&f->mtrr);
	f->hidden[0].base = HIDDEN_BASE;
	f->hidden[0].size = HIDDEN_SIZE;
	f->params.top = top;
	f->params.allow_1g = true;
	f->params.allow_2m = true;
	f->params.ept_vpid_cap = CAP_ALL;
	f->params.mtrr = &f->mtrr;
	f->params.hidden = f->hidden;
	f->params.nhidden = 1;
	return f;
}

static void fixture_free(struct fixture *f)
{
	free(f->mem);
	free(f);
}

static bool is_hidden(const struct ept_params *p, uint64_t base, uint64_t size)
{
	for (size_t i = 0; i < p->nhidden; i++) {
		uint64_t hb = p->hidden[i].base & ~0xfffull;
		uint64_t he = (p->hidden[i].base + p->hidden[i].size + 0xfff) & ~0xfffull;

		if (p->hidden[i].size && hb < base + size && base < he)
			return true;
	}
	return false;
}

/*
 * Walk every leaf of [0, top) and check: identity, the MTRR type of the
 * whole leaf, RWX (0 exactly on hidden pages), ignore-PAT 0, and that the
 * leaf is as large as allowed (its parent block could not be one leaf;
 * checked when minimal, i.e. before any ept_map_4k).
 * Returns the number of leaves seen.
 */
static uint64_t check_identity(const struct fixture *f, uint64_t lo, uint64_t hi, bool minimal)
{
	const struct ept_params *p = &f->params;
	uint64_t gpa = lo, n = 0;
	uint64_t biggest = p->allow_1g ? GiB : p->allow_2m ? 2 * MiB : 4 * KiB;

	while (gpa < hi) {
		struct ept_leaf l;
		int want;

		assert_int_equal(ept_lookup(&f->ept, gpa, &l), 0);
		assert_int_equal(gpa & (l.page_size - 1), 0);
		if (l.hpa != gpa)
			fail_msg("gpa %#llx maps to %#llx", (unsigned long long)gpa,
				 (unsigned long long)l.hpa);
		want = mtrr_range_type(p->mtrr, gpa, l.page_size);
		if (want == MTRR_TYPE_MIXED || (unsigned)want != l.memtype)
			fail_msg("gpa %#llx size %#llx type %u, MTRRs say %d",
				 (unsigned long long)gpa, (unsigned long long)l.page_size,
				 l.memtype, want);
		assert_false(l.ignore_pat);
		if (l.page_size == 4 * KiB && is_hidden(p, gpa, 4 * KiB))
			assert_int_equal(l.rwx, 0);
		else
			assert_int_equal(l.rwx, 7);
		if (minimal && l.page_size < biggest) {
			uint64_t parent = l.page_size * 512, pb = gpa & ~(parent - 1);

			if (!(pb + parent > p->top || is_hidden(p, pb, parent) ||
			      mtrr_range_type(p->mtrr, pb, parent) == MTRR_TYPE_MIXED))
				fail_msg("gpa %#llx: %#llx leaf where a %#llx one fits",
					 (unsigned long long)gpa, (unsigned long long)l.page_size,
					 (unsigned long long)parent);
		}
		gpa += l.page_size;
		n++;
	}
	return n;
}

/* Raw format of every entry (SDM 3C 29.3.2 tables, 29.3.3.1). */
static void check_format(const struct fixture *f, uint64_t table_pa, unsigned level)
{
	const uint64_t *t = page_pool_va(&f->pool, table_pa);
	uint64_t reserved_hi = ~((1ull << PHYS_BITS) - 1) & 0x000fffffffffffffull;

	assert_non_null(t);
	for (unsigned i = 0; i < 512; i++) {
		uint64_t e = t[i];
		unsigned mt = (unsigned)((e >> 3) & 7);

		if (!(e & 7) && level != 0) {
			assert_int_equal(e, 0);
			continue;
		}
		assert_int_equal(e & reserved_hi, 0);
		assert_int_equal(e >> 52, 0);
		if (level == 0 || (level <= 2 && (e & EPT_LARGE))) {
			assert_true(mt == 0 || mt == 1 || mt == 4 || mt == 5 || mt == 6);
			assert_int_equal(e & EPT_IGNORE_PAT, 0);
			if (level == 2)
				assert_int_equal(e & 0x3ffff000ull, 0);  /* 29:12 */
			if (level == 1)
				assert_int_equal(e & 0x1ff000ull, 0);    /* 20:12 */
		} else {
			assert_int_equal(e & 0xf8, 0);               /* 7:3 */
			assert_int_equal(e & 7, 7);
			/* points into the pool, by physical address */
			assert_true((e & EPT_ADDR_MASK) >= POOL_PA);
			assert_true((e & EPT_ADDR_MASK) < POOL_PA + f->pages * 4096);
			check_format(f, e & EPT_ADDR_MASK, level - 1);
		}
	}
}

/* --- page pool ------------------------------------------------------------ */

static void test_pool(void **state)
{
	static uint8_t mem[4 * 4096] __attribute__((aligned(4096)));
	struct page_pool pool;
	uint8_t *a, *b;

	(void)state;
	assert_int_equal(page_pool_init(&pool, NULL, 4096), PAGE_POOL_ERR_INVAL);
	assert_int_equal(page_pool_init(&pool, mem + 8, 4096), PAGE_POOL_ERR_ALIGN);
	assert_int_equal(page_pool_init_at(&pool, mem, 0x1234, 4096), PAGE_POOL_ERR_ALIGN);

	/* identity: pa == va */
	assert_int_equal(page_pool_init(&pool, mem, sizeof(mem) + 100), 0);
	assert_int_equal(page_pool_avail(&pool), 4);
	assert_int_equal(page_pool_pa(&pool, mem + 5000), (uint64_t)(uintptr_t)(mem + 5000));

	memset(mem, 0xff, sizeof(mem));
	assert_int_equal(page_pool_init_at(&pool, mem, 0x200000, sizeof(mem)), 0);
	a = page_pool_alloc(&pool);
	b = page_pool_alloc(&pool);
	assert_ptr_equal(a, mem);
	assert_ptr_equal(b, mem + 4096);
	for (int i = 0; i < 4096; i++)
		assert_int_equal(a[i] | b[i], 0);
	assert_int_equal(mem[2 * 4096], 0xff);  /* not handed out: untouched */
	assert_int_equal(page_pool_pa(&pool, b), 0x201000);
	assert_int_equal(page_pool_pa(&pool, b + 17), 0x201011);
	assert_ptr_equal(page_pool_va(&pool, 0x201011), b + 17);
	assert_int_equal(page_pool_pa(&pool, mem + sizeof(mem)), PAGE_POOL_BAD_PA);
	assert_int_equal(page_pool_pa(&pool, (const void *)((uintptr_t)mem - 1)), PAGE_POOL_BAD_PA);
	assert_null(page_pool_va(&pool, 0x1ff000));
	assert_null(page_pool_va(&pool, 0x204000));
	assert_non_null(page_pool_alloc(&pool));
	assert_non_null(page_pool_alloc(&pool));
	assert_int_equal(page_pool_avail(&pool), 0);
	assert_int_equal(pool.failures, 0);
	assert_null(page_pool_alloc(&pool));
	assert_null(page_pool_alloc(&pool));
	assert_int_equal(pool.failures, 2);
	assert_int_equal(pool.used, 4);
}

/* --- building ------------------------------------------------------------- */

static void test_build_64g_with_1g_pages(void **state)
{
	struct fixture *f = fixture_new(64, 64 * GiB);
	const struct ept_stats *s = &f->ept.stats;
	uint64_t need;
	struct ept_leaf l;

	(void)state;
	assert_int_equal(ept_count_tables(&f->params, &need), 0);
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), 0);
	assert_int_equal(f->pool.used, need);
	ept_log(&f->ept);

	/*
	 * GiB 0: fixed ranges below 1 MiB -> 2M leaves, the first split to 4K.
	 * GiB 1: the hidden pages -> 2M leaves, one split to 4K.
	 * GiB 3: UC (PCI hole), GiB 32: 256 MiB WC + 768 MiB WB -> 2M leaves.
	 */
	assert_int_equal(s->leaves_1g, 61);
	assert_int_equal(s->leaves_2m, 511 + 511 + 512);
	assert_int_equal(s->leaves_4k, 512 + 512 - HIDDEN_PAGES);
	assert_int_equal(s->hidden_4k, HIDDEN_PAGES);
	assert_int_equal(s->pml4_tables, 1);
	assert_int_equal(s->pdpt_tables, 1);
	assert_int_equal(s->pd_tables, 3);
	assert_int_equal(s->pt_tables, 2);
	assert_int_equal(need, 7);

	assert_int_equal(check_identity(f, 0, 64 * GiB, true), 61 + 1534 + 1024);
	check_format(f, f->ept.pml4_pa, 3);

	/* spot checks, with an offset inside the page */
	assert_int_equal(ept_lookup(&f->ept, 0xa0123, &l), 0);
	assert_int_equal(l.hpa, 0xa0123);
	assert_int_equal(l.page_size, 4 * KiB);
	assert_int_equal(l.memtype, MTRR_TYPE_UC);
	assert_int_equal(ept_lookup(&f->ept, 3 * GiB + 0x12345678, &l), 0);
	assert_int_equal(l.hpa, 3 * GiB + 0x12345678);
	assert_int_equal(l.level, EPT_LEVEL_PDPT);
	assert_int_equal(l.memtype, MTRR_TYPE_UC);
	assert_int_equal(ept_lookup(&f->ept, 32 * GiB + 0x100, &l), 0);
	assert_int_equal(l.level, EPT_LEVEL_PD);
	assert_int_equal(l.memtype, MTRR_TYPE_WC);
	assert_int_equal(ept_lookup(&f->ept, 33 * GiB - 1, &l), 0);
	assert_int_equal(l.memtype, MTRR_TYPE_WB);
	assert_int_equal(ept_lookup(&f->ept, 0x7ee04fff, &l), 0);
	assert_int_equal(l.rwx, 0);
	assert_int_equal(l.hpa, 0x7ee04fff);
	assert_int_equal(ept_lookup(&f->ept, 0x7ee05000, &l), 0);
	assert_int_equal(l.rwx, 7);
	assert_int_equal(ept_lookup(&f->ept, 0x7edff000, &l), 0);
	assert_int_equal(l.rwx, 7);

	/* beyond the map */
	assert_int_equal(ept_lookup(&f->ept, 64 * GiB, &l), EPT_ERR_NOT_MAPPED);
	assert_int_equal(ept_lookup(&f->ept, 1ull << 48, &l), EPT_ERR_RANGE);
	fixture_free(f);
}

static void test_eptp(void **state)
{
	struct fixture *f = fixture_new(64, 4 * GiB);

	(void)state;
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), 0);
	assert_int_equal(f->ept.pml4_pa, POOL_PA);      /* first page of the pool */
	assert_ptr_equal(f->ept.pml4, f->mem);
	/* WB paging structures (bits 2:0 = 6), 4-level walk (5:3 = 3), no A/D */
	assert_int_equal(f->ept.eptp, POOL_PA | (3 << 3) | 6);
	assert_int_equal(f->ept.eptp & 0xfc0, 0);

	/* only UC reported: UC paging structures */
	f->params.ept_vpid_cap = CAP_ALL & ~EPT_CAP_MEMTYPE_WB;
	assert_int_equal(page_pool_init_at(&f->pool, f->mem, POOL_PA, f->pages * 4096), 0);
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), 0);
	assert_int_equal(f->ept.eptp, POOL_PA | (3 << 3) | 0);

	/* neither type, or no 4-level walk: refused, nothing taken */
	assert_int_equal(page_pool_init_at(&f->pool, f->mem, POOL_PA, f->pages * 4096), 0);
	f->params.ept_vpid_cap = CAP_ALL & ~(EPT_CAP_MEMTYPE_WB | EPT_CAP_MEMTYPE_UC);
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), EPT_ERR_CAPS);
	f->params.ept_vpid_cap = CAP_ALL & ~EPT_CAP_PWL4;
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), EPT_ERR_CAPS);
	assert_int_equal(f->ept.eptp, 0);
	assert_null(f->ept.pml4);
	assert_int_equal(f->pool.used, 0);
	fixture_free(f);
}

static void test_no_1g_pages_when_not_allowed(void **state)
{
	struct fixture *f = fixture_new(128, 64 * GiB);

	(void)state;
	f->params.allow_1g = false;
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), 0);
	assert_int_equal(f->ept.stats.leaves_1g, 0);
	assert_int_equal(f->ept.stats.pd_tables, 64);
	assert_int_equal(f->ept.stats.leaves_2m, 64 * 512 - 2);
	check_identity(f, 0, 64 * GiB, true);

	/* allowed by the caller but not by the CPU (cap bit 17): same */
	assert_int_equal(page_pool_init_at(&f->pool, f->mem, POOL_PA, f->pages * 4096), 0);
	f->params.allow_1g = true;
	f->params.ept_vpid_cap = CAP_ALL & ~EPT_CAP_PDPTE_1GB;
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), 0);
	assert_int_equal(f->ept.stats.leaves_1g, 0);
	assert_int_equal(f->ept.stats.leaves_2m, 64 * 512 - 2);
	fixture_free(f);
}

static void test_4k_only(void **state)
{
	/* 4 GiB of 4 KiB pages: 1 + 1 + 4 + 2048 tables */
	struct fixture *f = fixture_new(2054, 4 * GiB);
	struct ept_leaf l;

	(void)state;
	f->params.allow_1g = false;
	f->params.allow_2m = false;
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), 0);
	assert_int_equal(page_pool_avail(&f->pool), 0);
	assert_int_equal(f->ept.stats.leaves_4k + f->ept.stats.hidden_4k, 1ull << 20);
	assert_int_equal(f->ept.stats.leaves_2m + f->ept.stats.leaves_1g, 0);
	for (uint64_t gpa = 0; gpa < 4 * GiB; gpa += 4 * KiB + 0x10000) {
		assert_int_equal(ept_lookup(&f->ept, gpa, &l), 0);
		assert_int_equal(l.hpa, gpa);
		assert_int_equal(l.page_size, 4 * KiB);
		assert_int_equal(l.memtype, (unsigned)mtrr_type_at(&f->mtrr, gpa));
	}
	fixture_free(f);
}

static void test_mtrrs_disabled_all_uc(void **state)
{
	struct fixture *f = fixture_new(16, 64 * GiB);

	(void)state;
	f->mtrr.def_type &= ~MTRR_DEF_E;
	f->params.nhidden = 0;
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), 0);
	assert_int_equal(f->ept.stats.leaves_1g, 64);
	assert_int_equal(f->ept.stats.pd_tables + f->ept.stats.pt_tables, 0);
	check_identity(f, 0, 64 * GiB, true);
	fixture_free(f);
}

static void test_hidden_ranges(void **state)
{
	struct fixture *f = fixture_new(64, 8 * GiB + 6 * MiB + 12 * KiB);  /* odd top */
	struct ept_leaf l;

	(void)state;
	/* a whole 2 MiB page hidden, one beyond top (ignored), one of size 0 */
	f->hidden[1].base = 6 * GiB;
	f->hidden[1].size = 2 * MiB;
	f->hidden[2].base = 9 * GiB;
	f->hidden[2].size = 1 * MiB;
	f->hidden[3].base = 7 * GiB;
	f->hidden[3].size = 0;
	f->params.nhidden = 4;
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), 0);
	assert_int_equal(f->ept.stats.hidden_4k, HIDDEN_PAGES + 512);
	check_identity(f, 0, f->params.top, true);
	check_format(f, f->ept.pml4_pa, 3);
	assert_int_equal(ept_lookup(&f->ept, 6 * GiB + 2 * MiB, &l), 0);
	assert_int_equal(l.page_size, 2 * MiB);
	/* top not 2 MiB aligned: the last PT ends in not-present slots */
	assert_int_equal(ept_lookup(&f->ept, f->params.top - 4 * KiB, &l), 0);
	assert_int_equal(l.rwx, 7);
	assert_int_equal(ept_lookup(&f->ept, f->params.top, &l), 0);
	assert_int_equal(l.rwx, 0);
	assert_int_equal(ept_lookup(&f->ept, f->params.top + 2 * MiB, &l), EPT_ERR_NOT_MAPPED);
	fixture_free(f);
}

static void test_bad_params(void **state)
{
	struct fixture *f = fixture_new(16, 64 * GiB);
	uint64_t n;

	(void)state;
	f->params.top = 0;
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), EPT_ERR_INVAL);
	f->params.top = 4 * GiB + 100;
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), EPT_ERR_INVAL);
	f->params.top = (1ull << PHYS_BITS) + 1 * GiB;  /* beyond MAXPHYADDR */
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), EPT_ERR_RANGE);
	f->mtrr.phys_addr_bits = 52;
	f->params.top = (1ull << 48) + 1 * GiB;          /* beyond the 4-level walk */
	assert_int_equal(ept_count_tables(&f->params, &n), EPT_ERR_RANGE);
	f->params.top = 4 * GiB;
	f->params.mtrr = NULL;
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), EPT_ERR_INVAL);
	f->params.mtrr = &f->mtrr;
	f->params.hidden = NULL;
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), EPT_ERR_INVAL);
	f->params.hidden = f->hidden;
	assert_int_equal(ept_build(&f->ept, NULL, &f->params), EPT_ERR_INVAL);
	/* the pool itself above MAXPHYADDR */
	f->mtrr.phys_addr_bits = 30;  /* clamped to 32: 4 GiB */
	assert_int_equal(page_pool_init_at(&f->pool, f->mem, 4 * GiB, f->pages * 4096), 0);
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), EPT_ERR_RANGE);
	assert_int_equal(f->pool.used, 0);
	assert_string_equal(ept_strerror(EPT_ERR_NOMEM), "page pool exhausted");
	assert_string_equal(ept_strerror(0), "ok");
	assert_string_equal(ept_strerror(-100), "unknown error");
	fixture_free(f);
}

static void test_pool_exhaustion(void **state)
{
	struct fixture *f = fixture_new(8, 64 * GiB);  /* the 64 GiB map needs 7 */
	uint8_t *snapshot = malloc(8 * 4096);
	struct ept_stats before;
	struct ept_leaf l;

	(void)state;
	assert_non_null(snapshot);
	assert_int_equal(page_pool_init_at(&f->pool, f->mem, POOL_PA, 6 * 4096), 0);
	memset(&f->ept, 0x5a, sizeof(f->ept));
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), EPT_ERR_NOMEM);
	assert_null(f->ept.pml4);
	assert_int_equal(f->ept.eptp, 0);
	assert_int_equal(f->pool.used, 0);  /* refused before taking a page */
	assert_int_equal(ept_lookup(&f->ept, 0, &l), EPT_ERR_NOT_MAPPED);

	assert_int_equal(page_pool_init_at(&f->pool, f->mem, POOL_PA, 8 * 4096), 0);
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), 0);
	assert_int_equal(page_pool_avail(&f->pool), 1);

	/* splitting a 1 GiB page needs two pages, one is left: refused,
	 * no page taken, tables and stats untouched */
	memcpy(snapshot, f->mem, 8 * 4096);
	before = f->ept.stats;
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 5 * GiB, 0x1000, EPT_R, MTRR_TYPE_WB),
			 EPT_ERR_NOMEM);
	assert_memory_equal(&before, &f->ept.stats, sizeof(before));
	assert_memory_equal(snapshot, f->mem, 8 * 4096);
	assert_int_equal(f->pool.used, 7);
	check_identity(f, 0, 64 * GiB, true);
	/* splitting a 2 MiB page needs one: fine */
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 32 * GiB + 2 * MiB, 0x1000, EPT_R, MTRR_TYPE_WC), 0);
	assert_int_equal(page_pool_avail(&f->pool), 0);
	/* a 4 KiB leaf needs none: still works with the pool empty */
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 0x7ee00000, 0x1000, EPT_R | EPT_W, MTRR_TYPE_WB), 0);
	assert_int_equal(ept_lookup(&f->ept, 0x7ee00000, &l), 0);
	assert_int_equal(l.hpa, 0x1000);
	free(snapshot);
	fixture_free(f);
}

/* --- remapping ------------------------------------------------------------ */

static void test_map_4k_splits_1g(void **state)
{
	struct fixture *f = fixture_new(64, 64 * GiB);
	struct ept_stats before;
	struct ept_leaf l;
	uint64_t gpa = 5 * GiB + 0x23456000, scratch = 0x7ee03000, used;

	(void)state;
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), 0);
	before = f->ept.stats;
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, gpa, scratch, EPT_R, MTRR_TYPE_WB), 0);
	assert_int_equal(ept_lookup(&f->ept, gpa + 0x10, &l), 0);
	assert_int_equal(l.hpa, scratch + 0x10);
	assert_int_equal(l.page_size, 4 * KiB);
	assert_int_equal(l.rwx, EPT_R);
	assert_int_equal(l.memtype, MTRR_TYPE_WB);
	assert_int_equal(f->ept.stats.leaves_1g, before.leaves_1g - 1);
	assert_int_equal(f->ept.stats.leaves_2m, before.leaves_2m + 511);
	assert_int_equal(f->ept.stats.leaves_4k, before.leaves_4k + 512);
	assert_int_equal(f->ept.stats.pd_tables, before.pd_tables + 1);
	assert_int_equal(f->ept.stats.pt_tables, before.pt_tables + 1);
	assert_int_equal(f->ept.stats.splits, 2);

	/* every other address of the GiB (and around it) is as before */
	check_identity(f, 4 * GiB, gpa, false);
	check_identity(f, gpa + 4 * KiB, 7 * GiB, false);
	check_format(f, f->ept.pml4_pa, 3);

	/* the same mapping again changes nothing; back to identity works */
	used = f->pool.used;
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, gpa, scratch, EPT_R, MTRR_TYPE_WB), 0);
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, gpa, gpa, EPT_RWX, MTRR_TYPE_WB), 0);
	assert_int_equal(f->pool.used, used);
	check_identity(f, 4 * GiB, 7 * GiB, false);
	/* identity mapping of a page inside a large leaf: no split at all */
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 9 * GiB, 9 * GiB, EPT_RWX, MTRR_TYPE_WB), 0);
	assert_int_equal(f->pool.used, used);
	fixture_free(f);
}

static void test_map_4k_splits_2m_and_uc_1g(void **state)
{
	struct fixture *f = fixture_new(64, 64 * GiB);
	struct ept_stats before;
	struct ept_leaf l;

	(void)state;
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), 0);
	before = f->ept.stats;
	/* a 2 MiB WC leaf at 32 GiB + 4 MiB */
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 32 * GiB + 5 * MiB, 0x7ee01000,
				    EPT_R | EPT_W, MTRR_TYPE_UC), 0);
	assert_int_equal(f->ept.stats.leaves_2m, before.leaves_2m - 1);
	assert_int_equal(f->ept.stats.pt_tables, before.pt_tables + 1);
	assert_int_equal(f->ept.stats.splits, 1);
	assert_int_equal(ept_lookup(&f->ept, 32 * GiB + 5 * MiB, &l), 0);
	assert_int_equal(l.memtype, MTRR_TYPE_UC);
	assert_int_equal(l.rwx, EPT_R | EPT_W);
	check_identity(f, 32 * GiB, 32 * GiB + 5 * MiB, false);
	check_identity(f, 32 * GiB + 5 * MiB + 4 * KiB, 34 * GiB, false);

	/* a 1 GiB UC leaf keeps UC on all the split pieces */
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 0xfee00000, 0xfee00000, EPT_R, MTRR_TYPE_UC), 0);
	check_identity(f, 3 * GiB, 0xfee00000, false);
	check_identity(f, 0xfee01000, 4 * GiB, false);
	fixture_free(f);
}

static void test_map_4k_hidden_and_unmapped(void **state)
{
	struct fixture *f = fixture_new(64, 64 * GiB);
	struct ept_leaf l;
	uint64_t hid = 0x7ee02000;

	(void)state;
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), 0);
	/* the EPT-violation handler's use: a hidden page onto a scratch page */
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, hid, 0x7ee04000, EPT_R | EPT_W, MTRR_TYPE_WB), 0);
	assert_int_equal(f->ept.stats.hidden_4k, HIDDEN_PAGES - 1);
	assert_int_equal(f->ept.stats.leaves_4k, 1024 - HIDDEN_PAGES + 1);
	assert_int_equal(ept_lookup(&f->ept, hid, &l), 0);
	assert_int_equal(l.hpa, 0x7ee04000);
	/* and hiding one more */
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 0x7ee05000, 0x7ee05000, 0, MTRR_TYPE_WB), 0);
	assert_int_equal(f->ept.stats.hidden_4k, HIDDEN_PAGES);
	assert_int_equal(ept_lookup(&f->ept, 0x7ee05000, &l), 0);
	assert_int_equal(l.rwx, 0);

	/* beyond top: tables are created, neighbours stay unmapped */
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 100 * GiB, 0x1000, EPT_RWX, MTRR_TYPE_WB), 0);
	assert_int_equal(ept_lookup(&f->ept, 100 * GiB, &l), 0);
	assert_int_equal(l.hpa, 0x1000);
	assert_int_equal(ept_lookup(&f->ept, 100 * GiB + 4 * KiB, &l), 0);
	assert_int_equal(l.rwx, 0);
	assert_int_equal(ept_lookup(&f->ept, 101 * GiB, &l), EPT_ERR_NOT_MAPPED);
	/* and beyond the first PML4 entry (512 GiB): a new PDPT too */
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 600 * GiB, 0x2000, EPT_R, MTRR_TYPE_UC), 0);
	assert_int_equal(f->ept.stats.pdpt_tables, 2);
	assert_int_equal(ept_lookup(&f->ept, 600 * GiB + 5, &l), 0);
	assert_int_equal(l.hpa, 0x2005);
	/* everything else as built */
	check_identity(f, 0, hid, true);
	check_identity(f, hid + 4 * KiB, 0x7ee05000, true);
	check_identity(f, 0x7ee06000, 64 * GiB, true);
	fixture_free(f);
}

static void test_map_4k_bad_args(void **state)
{
	struct fixture *f = fixture_new(64, 8 * GiB);
	struct page_pool other;

	(void)state;
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 0, 0, EPT_R, MTRR_TYPE_WB), EPT_ERR_INVAL);  /* not built */
	assert_int_equal(ept_build(&f->ept, &f->pool, &f->params), 0);
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 0x1001, 0, EPT_R, MTRR_TYPE_WB), EPT_ERR_ALIGN);
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 0, 0x800, EPT_R, MTRR_TYPE_WB), EPT_ERR_ALIGN);
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 1ull << 48, 0, EPT_R, MTRR_TYPE_WB), EPT_ERR_RANGE);
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 0, 1ull << PHYS_BITS, EPT_R, MTRR_TYPE_WB), EPT_ERR_RANGE);
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 0, 0, EPT_W, MTRR_TYPE_WB), EPT_ERR_INVAL);
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 0, 0, EPT_R, 2), EPT_ERR_INVAL);
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 0, 0, EPT_R, 7), EPT_ERR_INVAL);
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 0, 0, 8 | EPT_R, MTRR_TYPE_WB), EPT_ERR_INVAL);
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 0, 0, EPT_X, MTRR_TYPE_WB), EPT_ERR_INVAL);
	/* a pool with another va - pa would put wrong addresses in entries */
	assert_int_equal(page_pool_init_at(&other, (uint8_t *)f->mem + 4096, POOL_PA, 4096), 0);
	assert_int_equal(ept_map_4k(&f->ept, &other, 0, 0, EPT_R, MTRR_TYPE_WB), EPT_ERR_INVAL);
	/* execute-only where the CPU supports it */
	f->ept.cap |= EPT_CAP_EXEC_ONLY;
	assert_int_equal(ept_map_4k(&f->ept, &f->pool, 0x2000, 0x2000, EPT_X, MTRR_TYPE_WB), 0);
	fixture_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_build_64g_with_1g_pages),
		cmocka_unit_test(test_eptp),
		cmocka_unit_test(test_no_1g_pages_when_not_allowed),
		cmocka_unit_test(test_4k_only),
		cmocka_unit_test(test_mtrrs_disabled_all_uc),
		cmocka_unit_test(test_hidden_ranges),
		cmocka_unit_test(test_bad_params),
		cmocka_unit_test(test_pool_exhaustion),
		cmocka_unit_test(test_map_4k_splits_1g),
		cmocka_unit_test(test_map_4k_splits_2m_and_uc_1g),
		cmocka_unit_test(test_map_4k_hidden_and_unmapped),
		cmocka_unit_test(test_map_4k_bad_args),
	};

	return cmocka_run_group_tests_name("test_ept", tests, NULL, NULL);
}
