/* SPDX-License-Identifier: MIT */
/*
 * page_pool.h - a bump allocator of zeroed 4 KiB pages.
 *
 * The region is reserved from the firmware at boot (EfiRuntimeServicesData
 * or similar, so the OS never gets it); after ExitBootServices nothing else
 * allocates, so tracevisor's page tables, VMCS pages and scratch pages all
 * come from here.  Pages are never freed.
 *
 * Addresses: the pool knows both the virtual address the code uses and the
 * physical address the hardware sees (EPT entries, EPTP, VMCS pointers).
 * On the target memory is identity mapped and the two are equal; host
 * tests declare a different physical base so that any confusion between
 * the two shows up as a wild pointer under ASan instead of passing quietly.
 *
 * Concurrency: page_pool_alloc may be called from several CPUs at once
 * (atomic compare-and-swap on the bump index); init is boot-only.
 */
#ifndef TV_PAGE_POOL_H
#define TV_PAGE_POOL_H

#include <stddef.h>
#include <stdint.h>

#define PAGE_POOL_PAGE_SIZE 4096u

#define PAGE_POOL_ERR_INVAL (-1)  /* NULL base */
#define PAGE_POOL_ERR_ALIGN (-2)  /* base or base_pa not 4 KiB aligned */

/* Returned by page_pool_pa for an address outside the pool. */
#define PAGE_POOL_BAD_PA (~0ull)

struct page_pool {
	uint8_t *base;          /* virtual address of page 0 */
	uint64_t base_pa;       /* physical address of page 0 */
	size_t npages;          /* pages in the region */
	size_t used;            /* pages handed out (the bump index) */
	uint64_t failures;      /* allocations refused because the pool was empty */
};

/*
 * page_pool_init - manage [base, base + bytes) as an empty pool whose
 * physical address equals its virtual address (identity mapping).
 * bytes is rounded down to whole pages; 0 pages is a valid, empty pool.
 * Returns 0, PAGE_POOL_ERR_INVAL or PAGE_POOL_ERR_ALIGN (*pool zeroed then).
 */
int page_pool_init(struct page_pool *pool, void *base, size_t bytes);

/*
 * page_pool_init_at - as page_pool_init, with base at physical address
 * base_pa.  Host tests use a base_pa different from base.
 * Returns 0, PAGE_POOL_ERR_INVAL or PAGE_POOL_ERR_ALIGN.
 */
int page_pool_init_at(struct page_pool *pool, void *base, uint64_t base_pa,
		      size_t bytes);

/*
 * page_pool_alloc - one zeroed, 4 KiB aligned page, or NULL when the pool
 * is exhausted (pool->failures counts those).
 */
void *page_pool_alloc(struct page_pool *pool);

/* Pages still available (a snapshot when other CPUs allocate). */
size_t page_pool_avail(const struct page_pool *pool);

/*
 * page_pool_pa - physical address of va, which must lie inside the pool;
 * PAGE_POOL_BAD_PA otherwise.
 */
uint64_t page_pool_pa(const struct page_pool *pool, const void *va);

/*
 * page_pool_va - virtual address of pa, which must lie inside the pool;
 * NULL otherwise.
 */
void *page_pool_va(const struct page_pool *pool, uint64_t pa);

#endif /* TV_PAGE_POOL_H */
