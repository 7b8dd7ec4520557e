/* SPDX-License-Identifier: MIT */
/*
 * ept.c - identity-mapped EPT with hidden pages (SDM 3C 29.3).
 */
#include "vmm/vmx/ept.h"

#include <string.h>

#include "vmm/lib/log.h"
#include "vmm/vmx/vmx_caps.h"

_Static_assert(EPT_ENTRIES * sizeof(uint64_t) == PAGE_POOL_PAGE_SIZE,
	       "an EPT paging structure is one 4 KiB page of 512 entries");

static unsigned level_shift(unsigned level)
{
	return 12 + 9 * level;
}

static unsigned level_index(uint64_t gpa, unsigned level)
{
	return (unsigned)(gpa >> level_shift(level)) & (EPT_ENTRIES - 1);
}

static uint64_t *table_va(const struct ept *ept, uint64_t pa)
{
	return (uint64_t *)(uintptr_t)((uintptr_t)pa + ept->va_minus_pa);
}

static uintptr_t pool_va_minus_pa(const struct page_pool *pool)
{
	return (uintptr_t)pool->base - (uintptr_t)pool->base_pa;
}

/* 29.3.7.2: 0 UC, 1 WC, 4 WT, 5 WP, 6 WB; 2, 3, 7 are misconfigurations. */
static bool memtype_valid(unsigned t)
{
	return t == MTRR_TYPE_UC || t == MTRR_TYPE_WC || t == MTRR_TYPE_WT ||
	       t == MTRR_TYPE_WP || t == MTRR_TYPE_WB;
}

static uint64_t leaf_entry(uint64_t hpa, unsigned memtype, unsigned rwx)
{
	/* ignore-PAT stays 0: the guest's PAT combines with the EPT type
	 * as it would with the MTRR type on bare metal (29.3.7.2). */
	return hpa | ((uint64_t)memtype << EPT_MEMTYPE_SHIFT) | rwx;
}

/* Non-leaf entries allow everything; the leaves decide (29.3.3.2: the
 * access rights of a translation are the AND over the walk).  Bits 7:3
 * are reserved in non-leaf entries and stay 0 (29.3.3.1). */
static uint64_t table_entry(uint64_t table_pa)
{
	return table_pa | EPT_RWX;
}

static uint64_t phys_limit(uint32_t phys_bits)
{
	return 1ull << phys_bits;
}

/* --- building ----------------------------------------------------------- */

struct builder {
	const struct ept_params *p;
	struct page_pool *pool;   /* NULL: only count */
	bool use_1g, use_2m;
	uint64_t tables;
	struct ept_stats stats;
};

/* Does [base, base + size) touch a hidden range (widened to pages)? */
static bool touches_hidden(const struct ept_params *p, uint64_t base, uint64_t size)
{
	for (size_t i = 0; i < p->nhidden; i++) {
		const struct ept_range *h = &p->hidden[i];
		uint64_t hb = h->base & ~(EPT_PAGE_4K - 1), he;

		if (h->size == 0)
			continue;
		/* end, rounded up to a page; saturates at 2^64 - 1 */
		if (h->size > UINT64_MAX - h->base || h->base + h->size > UINT64_MAX - (EPT_PAGE_4K - 1))
			he = UINT64_MAX;
		else
			he = (h->base + h->size + EPT_PAGE_4K - 1) & ~(EPT_PAGE_4K - 1);
		if (hb < base + size && base < he)
			return true;
	}
	return false;
}

static int new_table(struct builder *b, unsigned level, uint64_t **va, uint64_t *pa)
{
	*va = NULL;
	*pa = 0;
	if (b->pool) {
		*va = page_pool_alloc(b->pool);
		if (!*va)
			return EPT_ERR_NOMEM;
		*pa = page_pool_pa(b->pool, *va);
	}
	b->tables++;
	switch (level) {
	case EPT_LEVEL_PML4: b->stats.pml4_tables++; break;
	case EPT_LEVEL_PDPT: b->stats.pdpt_tables++; break;
	case EPT_LEVEL_PD: b->stats.pd_tables++; break;
	default: b->stats.pt_tables++; break;
	}
	return 0;
}

static bool large_allowed(const struct builder *b, unsigned level)
{
	return (level == EPT_LEVEL_PDPT && b->use_1g) ||
	       (level == EPT_LEVEL_PD && b->use_2m);
}

/* Fill the table at level (table may be NULL when counting) for the
 * region starting at base. */
static int build_table(struct builder *b, uint64_t *table, unsigned level, uint64_t base)
{
	const struct ept_params *p = b->p;
	uint64_t size = 1ull << level_shift(level);

	for (unsigned i = 0; i < EPT_ENTRIES; i++) {
		uint64_t addr = base + i * size;
		uint64_t *child, child_pa;
		int t, err;

		if (addr >= p->top)
			break;
		if (level == EPT_LEVEL_PT) {
			bool hidden = touches_hidden(p, addr, EPT_PAGE_4K);

			/* A 4 KiB query is always exact, never MIXED. */
			t = mtrr_type_at(p->mtrr, addr);
			if (table)
				table[i] = leaf_entry(addr, (unsigned)t, hidden ? 0 : EPT_RWX);
			if (hidden)
				b->stats.hidden_4k++;
			else
				b->stats.leaves_4k++;
			continue;
		}
		/*
		 * A large leaf needs one memory type over the whole page:
		 * EPT gives a leaf one type, and 12.11.9 makes a native
		 * large page over mixed MTRR types undefined, so a split is
		 * what keeps the guest's view identical to bare metal.
		 */
		if (large_allowed(b, level) && addr + size <= p->top &&
		    !touches_hidden(p, addr, size) &&
		    (t = mtrr_range_type(p->mtrr, addr, size)) != MTRR_TYPE_MIXED) {
			if (table)
				table[i] = leaf_entry(addr, (unsigned)t, EPT_RWX) | EPT_LARGE;
			if (level == EPT_LEVEL_PDPT)
				b->stats.leaves_1g++;
			else
				b->stats.leaves_2m++;
			continue;
		}
		err = new_table(b, level - 1, &child, &child_pa);
		if (err)
			return err;
		err = build_table(b, child, level - 1, addr);
		if (err)
			return err;
		if (table)
			table[i] = table_entry(child_pa);
	}
	return 0;
}

static int check_params(const struct ept_params *p, uint64_t *eptp_type)
{
	uint32_t phys_bits;

	if (!p || !p->mtrr || (p->nhidden && !p->hidden))
		return EPT_ERR_INVAL;
	if (p->top == 0 || (p->top & (EPT_PAGE_4K - 1)))
		return EPT_ERR_INVAL;
	phys_bits = mtrr_phys_bits(p->mtrr);
	if (p->top > EPT_MAX_GPA || p->top > phys_limit(phys_bits))
		return EPT_ERR_RANGE;
	/* 25.6.11 / A.10: the walk length and the paging-structure memory
	 * type in the EPTP must be ones the CPU reports, or VM entry fails. */
	if (!(p->ept_vpid_cap & EPT_CAP_PWL4))
		return EPT_ERR_CAPS;
	if (p->ept_vpid_cap & EPT_CAP_MEMTYPE_WB)
		*eptp_type = EPTP_MEMTYPE_WB;
	else if (p->ept_vpid_cap & EPT_CAP_MEMTYPE_UC)
		*eptp_type = EPTP_MEMTYPE_UC;
	else
		return EPT_ERR_CAPS;
	return 0;
}

static void builder_init(struct builder *b, const struct ept_params *p)
{
	memset(b, 0, sizeof(*b));
	b->p = p;
	/* Bit 7 of a PDPTE/PDE may be 1 only if the CPU says so (A.10). */
	b->use_1g = p->allow_1g && (p->ept_vpid_cap & EPT_CAP_PDPTE_1GB);
	b->use_2m = p->allow_2m && (p->ept_vpid_cap & EPT_CAP_PDE_2MB);
}

/* Tables ept_build(p) takes; p already checked. */
static int count_tables(const struct ept_params *p, uint64_t *pages)
{
	struct builder b;
	uint64_t *pml4, pml4_pa;
	int err;

	builder_init(&b, p);
	err = new_table(&b, EPT_LEVEL_PML4, &pml4, &pml4_pa);
	if (!err)
		err = build_table(&b, NULL, EPT_LEVEL_PML4, 0);
	*pages = err ? 0 : b.tables;
	return err;
}

int ept_count_tables(const struct ept_params *p, uint64_t *pages)
{
	uint64_t eptp_type;
	int err;

	*pages = 0;
	err = check_params(p, &eptp_type);
	if (err)
		return err;
	return count_tables(p, pages);
}

int ept_build(struct ept *ept, struct page_pool *pool, const struct ept_params *p)
{
	struct builder b;
	uint64_t eptp_type, need, *pml4, pml4_pa;
	uint32_t phys_bits;
	int err;

	memset(ept, 0, sizeof(*ept));
	if (!pool)
		return EPT_ERR_INVAL;
	err = check_params(p, &eptp_type);
	if (!err)
		err = count_tables(p, &need);
	if (err)
		return err;
	phys_bits = mtrr_phys_bits(p->mtrr);
	/* Table addresses go into entries whose bits 51:MAXPHYADDR must
	 * be 0 (29.3.3.1), so the whole pool must lie below it. */
	if (pool->base_pa + (uint64_t)pool->npages * PAGE_POOL_PAGE_SIZE > phys_limit(phys_bits))
		return EPT_ERR_RANGE;
	if (page_pool_avail(pool) < need) {
		log_err("ept: %llu table pages needed, pool has %llu",
			(unsigned long long)need, (unsigned long long)page_pool_avail(pool));
		return EPT_ERR_NOMEM;
	}

	builder_init(&b, p);
	b.pool = pool;
	err = new_table(&b, EPT_LEVEL_PML4, &pml4, &pml4_pa);
	if (!err)
		err = build_table(&b, pml4, EPT_LEVEL_PML4, 0);
	if (err) {
		/* Only if another CPU drained the pool meanwhile; the pages
		 * taken are lost (bump allocator), the EPT stays unusable. */
		memset(ept, 0, sizeof(*ept));
		return err;
	}
	ept->pml4 = pml4;
	ept->pml4_pa = pml4_pa;
	ept->top = p->top;
	ept->cap = p->ept_vpid_cap;
	ept->phys_bits = phys_bits;
	ept->va_minus_pa = pool_va_minus_pa(pool);
	ept->stats = b.stats;
	/* 25.6.11: bits 2:0 type, 5:3 walk length - 1, 6 A/D (off),
	 * (N-1):12 PML4 address. */
	ept->eptp = pml4_pa | EPTP_WALK_4 | eptp_type;
	return 0;
}

/* --- lookup ------------------------------------------------------------- */

static void fill_leaf(struct ept_leaf *out, uint64_t e, unsigned level, uint64_t gpa)
{
	uint64_t size = 1ull << level_shift(level);

	out->entry = e;
	out->page_size = size;
	out->level = (enum ept_level)level;
	out->hpa = (e & EPT_ADDR_MASK & ~(size - 1)) | (gpa & (size - 1));
	out->rwx = (unsigned)(e & EPT_RWX);
	out->memtype = (unsigned)((e & EPT_MEMTYPE_MASK) >> EPT_MEMTYPE_SHIFT);
	out->ignore_pat = (e & EPT_IGNORE_PAT) != 0;
}

int ept_lookup(const struct ept *ept, uint64_t gpa, struct ept_leaf *out)
{
	const uint64_t *table = ept->pml4;

	memset(out, 0, sizeof(*out));
	if (gpa >= EPT_MAX_GPA)
		return EPT_ERR_RANGE;
	if (!table)
		return EPT_ERR_NOT_MAPPED;
	for (unsigned level = EPT_LEVEL_PML4;; level--) {
		uint64_t e = __atomic_load_n(&table[level_index(gpa, level)], __ATOMIC_ACQUIRE);

		if (level == EPT_LEVEL_PT) {
			fill_leaf(out, e, level, gpa);
			return 0;
		}
		/* 29.3.2: bits 2:0 all 0 means not present, rest ignored. */
		if (!(e & EPT_RWX))
			return EPT_ERR_NOT_MAPPED;
		if (level != EPT_LEVEL_PML4 && (e & EPT_LARGE)) {
			fill_leaf(out, e, level, gpa);
			return 0;
		}
		table = table_va(ept, e & EPT_ADDR_MASK);
	}
}

/* --- remapping one page ------------------------------------------------- */

int ept_map_4k(struct ept *ept, struct page_pool *pool, uint64_t gpa,
	       uint64_t hpa, unsigned rwx, unsigned memtype)
{
	uint64_t *table, *slot, e = 0, new_e, old_4k;
	uint64_t *tabs[EPT_LEVEL_PML4] = { NULL }, pas[EPT_LEVEL_PML4] = { 0 };
	uint64_t src_attr = 0, src_base = 0, src_frame = 0;
	unsigned level, stop;
	bool split;

	if ((gpa | hpa) & (EPT_PAGE_4K - 1))
		return EPT_ERR_ALIGN;
	if (!ept->pml4 || !pool || pool_va_minus_pa(pool) != ept->va_minus_pa)
		return EPT_ERR_INVAL;
	if (gpa >= EPT_MAX_GPA || hpa >= phys_limit(ept->phys_bits))
		return EPT_ERR_RANGE;
	if ((rwx & ~(unsigned)EPT_RWX) || !memtype_valid(memtype))
		return EPT_ERR_INVAL;
	/* 29.3.3.1: write without read is a misconfiguration, and so is
	 * execute without read unless execute-only is supported. */
	if ((rwx & EPT_W) && !(rwx & EPT_R))
		return EPT_ERR_INVAL;
	if ((rwx & EPT_X) && !(rwx & EPT_R) && !(ept->cap & EPT_CAP_EXEC_ONLY))
		return EPT_ERR_INVAL;
	new_e = leaf_entry(hpa, memtype, rwx);

	/* Walk to the PT slot, or to where the walk stops early. */
	table = ept->pml4;
	for (level = EPT_LEVEL_PML4;; level--) {
		slot = &table[level_index(gpa, level)];
		e = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
		if (level == EPT_LEVEL_PT)
			break;
		if (!(e & EPT_RWX) || (level != EPT_LEVEL_PML4 && (e & EPT_LARGE)))
			break;
		table = table_va(ept, e & EPT_ADDR_MASK);
	}
	stop = level;
	split = stop != EPT_LEVEL_PT && stop != EPT_LEVEL_PML4 && (e & EPT_RWX) && (e & EPT_LARGE);

	/* Already so (e.g. an identity page mapped again): nothing to do. */
	if (stop == EPT_LEVEL_PT || split) {
		struct ept_leaf cur;

		fill_leaf(&cur, e, stop, gpa);
		if (cur.hpa == hpa && cur.rwx == rwx && cur.memtype == memtype && !cur.ignore_pat)
			return 0;
	}

	if (stop == EPT_LEVEL_PT) {
		old_4k = e;
		__atomic_store_n(slot, new_e, __ATOMIC_RELEASE);
		ept->edits++;
		goto account;
	}

	/* Tables for levels stop-1 .. PT, all or nothing. */
	if (page_pool_avail(pool) < stop)
		return EPT_ERR_NOMEM;
	for (level = 0; level < stop; level++) {
		tabs[level] = page_pool_alloc(pool);
		if (!tabs[level])
			return EPT_ERR_NOMEM;  /* raced: nothing installed */
		pas[level] = page_pool_pa(pool, tabs[level]);
	}

	if (split) {
		uint64_t size = 1ull << level_shift(stop);

		src_attr = e & (EPT_RWX | EPT_MEMTYPE_MASK | EPT_IGNORE_PAT);
		src_base = gpa & ~(size - 1);
		src_frame = e & EPT_ADDR_MASK & ~(size - 1);
	}
	old_4k = 0;
	/* Fill bottom-up; nothing is reachable by the CPU until the final
	 * store below, so the order of these writes does not matter. */
	for (level = 0; level < stop; level++) {
		uint64_t *t = tabs[level];
		uint64_t esize = 1ull << level_shift(level);
		/* the region this table covers */
		uint64_t region = gpa & ~((esize << 9) - 1);

		if (split) {
			/* 29.3.2: a split keeps every other page's hpa,
			 * rights and type: leaves one size down. */
			for (unsigned j = 0; j < EPT_ENTRIES; j++)
				t[j] = (src_frame + (region - src_base) + j * esize) | src_attr |
				       (level == EPT_LEVEL_PT ? 0 : EPT_LARGE);
		}
		if (level == EPT_LEVEL_PT) {
			old_4k = t[level_index(gpa, level)];
			t[level_index(gpa, level)] = new_e;
		} else {
			t[level_index(gpa, level)] = table_entry(pas[level - 1]);
		}
	}
	/* One aligned 64-bit store makes the new subtree live. */
	__atomic_store_n(slot, table_entry(pas[stop - 1]), __ATOMIC_RELEASE);
	ept->edits++;

	for (level = 0; level < stop; level++) {
		switch (level) {
		case EPT_LEVEL_PDPT: ept->stats.pdpt_tables++; break;
		case EPT_LEVEL_PD: ept->stats.pd_tables++; break;
		default: ept->stats.pt_tables++; break;
		}
	}
	if (split && (src_attr & EPT_RWX)) {
		/* 1 GiB -> 512 x 2 MiB, then the one on gpa's path -> 512 x 4 KiB */
		if (stop == EPT_LEVEL_PDPT) {
			ept->stats.leaves_1g--;
			ept->stats.leaves_2m += EPT_ENTRIES;
			ept->stats.splits++;
		}
		ept->stats.leaves_2m--;
		ept->stats.leaves_4k += EPT_ENTRIES;
		ept->stats.splits++;
	}

account:
	if (old_4k & EPT_RWX)
		ept->stats.leaves_4k--;
	else if (gpa < ept->top)
		ept->stats.hidden_4k--;
	if (rwx)
		ept->stats.leaves_4k++;
	else if (gpa < ept->top)
		ept->stats.hidden_4k++;
	return 0;
}

/* --- rights of one leaf, any size ------------------------------------------ */

int ept_set_rights(struct ept *ept, uint64_t gpa, unsigned rwx, struct ept_leaf *old)
{
	uint64_t *table = ept->pml4, *slot = NULL, e = 0;
	unsigned level;

	if (old)
		memset(old, 0, sizeof(*old));
	if (!rwx || (rwx & ~(unsigned)EPT_RWX))
		return EPT_ERR_INVAL;
	/* 29.3.3.1: W without R, or X without R and no execute-only support */
	if ((rwx & EPT_W) && !(rwx & EPT_R))
		return EPT_ERR_INVAL;
	if ((rwx & EPT_X) && !(rwx & EPT_R) && !(ept->cap & EPT_CAP_EXEC_ONLY))
		return EPT_ERR_INVAL;
	if (gpa >= EPT_MAX_GPA)
		return EPT_ERR_RANGE;
	if (!table)
		return EPT_ERR_NOT_MAPPED;
	for (level = EPT_LEVEL_PML4;; level--) {
		slot = &table[level_index(gpa, level)];
		e = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
		if (!(e & EPT_RWX))
			return EPT_ERR_NOT_MAPPED;   /* a not-present leaf or table */
		if (level == EPT_LEVEL_PT || (level != EPT_LEVEL_PML4 && (e & EPT_LARGE)))
			break;
		table = table_va(ept, e & EPT_ADDR_MASK);
	}
	if (old)
		fill_leaf(old, e, level, gpa);
	__atomic_store_n(slot, (e & ~(uint64_t)EPT_RWX) | rwx, __ATOMIC_RELEASE);
	ept->edits++;
	return 0;
}

uint64_t *ept_table(const struct ept *ept, uint64_t gpa, enum ept_level level)
{
	uint64_t *table = ept->pml4;

	if (gpa >= EPT_MAX_GPA || !table || (unsigned)level > EPT_LEVEL_PML4)
		return NULL;
	for (unsigned l = EPT_LEVEL_PML4; l > (unsigned)level; l--) {
		uint64_t e = __atomic_load_n(&table[level_index(gpa, l)], __ATOMIC_ACQUIRE);

		if (!(e & EPT_RWX) || (l != EPT_LEVEL_PML4 && (e & EPT_LARGE)))
			return NULL;
		table = table_va(ept, e & EPT_ADDR_MASK);
	}
	return table;
}

/* --- text --------------------------------------------------------------- */

const char *ept_strerror(int err)
{
	switch (err) {
	case 0: return "ok";
	case EPT_ERR_NOMEM: return "page pool exhausted";
	case EPT_ERR_INVAL: return "invalid argument";
	case EPT_ERR_RANGE: return "address beyond the 4-level walk or MAXPHYADDR";
	case EPT_ERR_CAPS: return "CPU lacks the 4-level EPT walk or a UC/WB paging-structure type";
	case EPT_ERR_NOT_MAPPED: return "guest-physical address not mapped";
	case EPT_ERR_ALIGN: return "address not 4 KiB aligned";
	default: return "unknown error";
	}
}

void ept_log(const struct ept *ept)
{
	const struct ept_stats *s = &ept->stats;

	log_info("ept: eptp %#llx, identity map of [0, %#llx), maxphyaddr %u",
		 (unsigned long long)ept->eptp, (unsigned long long)ept->top, ept->phys_bits);
	log_info("ept: tables pml4 %llu pdpt %llu pd %llu pt %llu (%llu KiB); leaves 1G %llu 2M %llu 4K %llu, hidden 4K %llu",
		 (unsigned long long)s->pml4_tables, (unsigned long long)s->pdpt_tables,
		 (unsigned long long)s->pd_tables, (unsigned long long)s->pt_tables,
		 (unsigned long long)((s->pml4_tables + s->pdpt_tables + s->pd_tables + s->pt_tables) * 4),
		 (unsigned long long)s->leaves_1g, (unsigned long long)s->leaves_2m,
		 (unsigned long long)s->leaves_4k, (unsigned long long)s->hidden_4k);
}
