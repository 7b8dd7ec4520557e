/* SPDX-License-Identifier: MIT */
/*
 * ptfast_blocks.c - the fast PT decoder's block cache (bounded: flushed
 * whole when full, as libxdc does; the counts survive in the coverage
 * maps) and its counted-pair maps.  See ptfast_int.h.
 */
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/ptfast_int.h"

/*
 * Blocks live in chunks that double from PTF_CHUNK_MIN to PTF_CHUNK_MAX
 * blocks: a short decode (a piece, a fuzz input) touches a few KB, a long
 * one amortises its mallocs.
 */
#define PTF_CHUNK_MIN 64u
#define PTF_CHUNK_MAX 4096u
#define PTF_TAB_MIN   256u

struct ptf_chunk {
	struct ptf_chunk *next;
	size_t used, cap;
	struct ptf_block b[];
};

static inline uint64_t mix(uint64_t ip, uint64_t asid, uint8_t mode)
{
	uint64_t h = ip * 0x9e3779b97f4a7c15ull ^ (asid + mode) * 0xc2b2ae3d27d4eb4full;

	return h ^ (h >> 29);
}

struct ptf_block *ptf_cache_find(const struct ptf_cache *c, uint64_t ip,
				 uint64_t asid, uint8_t mode)
{
	size_t mask, i;

	if (!c->cap)
		return NULL;
	mask = c->cap - 1;
	for (i = mix(ip, asid, mode) & mask;; i = (i + 1) & mask) {
		struct ptf_block *b = c->tab[i];

		if (!b)
			return NULL;
		if (b->start == ip && b->asid == asid && b->mode == mode)
			return b;
	}
}

static void place(struct ptf_block **tab, size_t cap, struct ptf_block *b)
{
	size_t mask = cap - 1, i;

	for (i = mix(b->start, b->asid, b->mode) & mask; tab[i]; i = (i + 1) & mask)
		;
	tab[i] = b;
}

void ptf_cache_each(const struct ptf_cache *c,
		    void (*fn)(void *ctx, const struct ptf_block *b), void *ctx)
{
	for (const struct ptf_chunk *k = c->chunks; k; k = k->next)
		for (size_t i = 0; i < k->used; i++)
			fn(ctx, &k->b[i]);
}

static void flush(struct ptf_cache *c,
		  void (*fold)(void *ctx, const struct ptf_block *b), void *ctx)
{
	struct ptf_chunk *k = c->chunks;

	if (fold)
		ptf_cache_each(c, fold, ctx);
	while (k) {
		struct ptf_chunk *next = k->next;

		free(k);
		k = next;
	}
	c->chunks = NULL;
	if (c->tab)
		memset(c->tab, 0, c->cap * sizeof(*c->tab));
	c->n = 0;
	c->flushes++;
	c->gen++;
}

void ptf_cache_flush(struct ptf_cache *c,
		     void (*fold)(void *ctx, const struct ptf_block *b), void *ctx)
{
	flush(c, fold, ctx);
}

struct ptf_block *ptf_cache_insert(struct ptf_cache *c, uint64_t ip, uint64_t asid,
				   uint8_t mode,
				   void (*fold)(void *ctx, const struct ptf_block *b),
				   void *ctx)
{
	struct ptf_block *b;

	if (!c->max)
		c->max = (size_t)1 << 20;
	if (c->n >= c->max)
		flush(c, fold, ctx);
	/* Keep the table at most half full. */
	if ((c->n + 1) * 2 > c->cap) {
		size_t cap = c->cap ? c->cap * 2 : PTF_TAB_MIN;
		struct ptf_block **tab = calloc(cap, sizeof(*tab));

		if (!tab)
			return NULL;
		for (size_t i = 0; i < c->cap; i++)
			if (c->tab[i])
				place(tab, cap, c->tab[i]);
		free(c->tab);
		c->tab = tab;
		c->cap = cap;
	}
	if (!c->chunks || c->chunks->used == c->chunks->cap) {
		size_t n = !c->chunks ? PTF_CHUNK_MIN
			 : c->chunks->cap >= PTF_CHUNK_MAX ? PTF_CHUNK_MAX : c->chunks->cap * 2;
		struct ptf_chunk *k = malloc(sizeof(*k) + n * sizeof(k->b[0]));

		if (!k)
			return NULL;
		k->next = c->chunks;
		k->used = 0;
		k->cap = n;
		c->chunks = k;
	}
	b = &c->chunks->b[c->chunks->used++];
	memset(b, 0, sizeof(*b));
	b->start = ip;
	b->asid = asid;
	b->mode = mode;
	place(c->tab, c->cap, b);
	c->n++;
	return b;
}

void ptf_cache_free(struct ptf_cache *c)
{
	flush(c, NULL, NULL);
	free(c->tab);
	memset(c, 0, sizeof(*c));
}

size_t ptf_cache_bytes(const struct ptf_cache *c)
{
	size_t bytes = c->cap * sizeof(*c->tab);

	for (const struct ptf_chunk *k = c->chunks; k; k = k->next)
		bytes += sizeof(*k) + k->cap * sizeof(k->b[0]);
	return bytes;
}

static inline size_t pair_hash(uint64_t a, uint64_t b, uint32_t extra)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + extra) * 0xc2b2ae3d27d4eb4full;

	return (size_t)(h ^ (h >> 31));
}

int ptf_map_add(struct ptf_map *m, uint64_t a, uint64_t b, uint64_t count,
		uint32_t extra)
{
	size_t mask, i;

	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct ptf_ment *v = calloc(cap, sizeof(*v));

		if (!v)
			return -TVH_ERR_NOMEM;
		for (size_t k = 0; k < m->cap; k++) {
			if (!m->v[k].used)
				continue;
			for (i = pair_hash(m->v[k].a, m->v[k].b, m->v[k].extra) & (cap - 1); v[i].used;
			     i = (i + 1) & (cap - 1))
				;
			v[i] = m->v[k];
		}
		free(m->v);
		m->v = v;
		m->cap = cap;
	}
	mask = m->cap - 1;
	for (i = pair_hash(a, b, extra) & mask; m->v[i].used; i = (i + 1) & mask) {
		if (m->v[i].a == a && m->v[i].b == b && m->v[i].extra == extra) {
			m->v[i].count += count;
			return 0;
		}
	}
	m->v[i] = (struct ptf_ment){ .a = a, .b = b, .count = count, .extra = extra,
				     .used = 1 };
	m->n++;
	return 0;
}

void ptf_map_free(struct ptf_map *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}
