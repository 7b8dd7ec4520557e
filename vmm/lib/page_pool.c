/* SPDX-License-Identifier: MIT */
/*
 * page_pool.c - bump allocator of zeroed 4 KiB pages.
 */
#include "vmm/lib/page_pool.h"

#include <string.h>

int page_pool_init(struct page_pool *pool, void *base, size_t bytes)
{
	return page_pool_init_at(pool, base, (uint64_t)(uintptr_t)base, bytes);
}

int page_pool_init_at(struct page_pool *pool, void *base, uint64_t base_pa,
		      size_t bytes)
{
	memset(pool, 0, sizeof(*pool));
	if (!base)
		return PAGE_POOL_ERR_INVAL;
	if (((uintptr_t)base | base_pa) & (PAGE_POOL_PAGE_SIZE - 1))
		return PAGE_POOL_ERR_ALIGN;
	pool->base = base;
	pool->base_pa = base_pa;
	pool->npages = bytes / PAGE_POOL_PAGE_SIZE;
	return 0;
}

void *page_pool_alloc(struct page_pool *pool)
{
	size_t idx = __atomic_load_n(&pool->used, __ATOMIC_RELAXED);
	uint8_t *page;

	do {
		if (idx >= pool->npages) {
			__atomic_fetch_add(&pool->failures, 1, __ATOMIC_RELAXED);
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&pool->used, &idx, idx + 1, 0,
					      __ATOMIC_ACQ_REL, __ATOMIC_RELAXED));
	page = pool->base + idx * (size_t)PAGE_POOL_PAGE_SIZE;
	memset(page, 0, PAGE_POOL_PAGE_SIZE);
	return page;
}

size_t page_pool_avail(const struct page_pool *pool)
{
	size_t used = __atomic_load_n(&pool->used, __ATOMIC_RELAXED);

	return used < pool->npages ? pool->npages - used : 0;
}

uint64_t page_pool_pa(const struct page_pool *pool, const void *va)
{
	uintptr_t off = (uintptr_t)va - (uintptr_t)pool->base;

	/* Unsigned wrap makes addresses below base fail this test too. */
	if (!pool->base || off >= pool->npages * (size_t)PAGE_POOL_PAGE_SIZE)
		return PAGE_POOL_BAD_PA;
	return pool->base_pa + off;
}

void *page_pool_va(const struct page_pool *pool, uint64_t pa)
{
	uint64_t off = pa - pool->base_pa;

	if (!pool->base || off >= (uint64_t)pool->npages * PAGE_POOL_PAGE_SIZE)
		return NULL;
	return pool->base + off;
}
