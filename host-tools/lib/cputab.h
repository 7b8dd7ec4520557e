/* SPDX-License-Identifier: MIT */
/*
 * cputab.h - per-CPU state of fixed size, created zeroed on first use.
 */
#ifndef TVH_CPUTAB_H
#define TVH_CPUTAB_H

#include <stddef.h>
#include <stdint.h>

struct tvh_cputab {
	size_t elem;             /* bytes per CPU */
	void **slots;            /* indexed by CPU, NULL = not seen */
	uint32_t len;
};

static inline void tvh_cputab_init(struct tvh_cputab *t, size_t elem)
{
	t->elem = elem;
	t->slots = NULL;
	t->len = 0;
}

/* The state of cpu (zeroed when new); NULL when out of memory or cpu > TVH_MAX_CPU. */
void *tvh_cputab_get(struct tvh_cputab *t, uint32_t cpu);

/* The state of cpu if it exists. */
static inline void *tvh_cputab_peek(const struct tvh_cputab *t, uint32_t cpu)
{
	return cpu < t->len ? t->slots[cpu] : NULL;
}

/* Frees every state (fini, if given, first) and the table. */
void tvh_cputab_free(struct tvh_cputab *t, void (*fini)(void *state));

#endif /* TVH_CPUTAB_H */
