/* SPDX-License-Identifier: MIT */
/*
 * cputab.c - per-CPU state table (see cputab.h).
 */
#include <stdlib.h>

#include "host-tools/lib/cputab.h"
#include "host-tools/lib/walk.h"

void *tvh_cputab_get(struct tvh_cputab *t, uint32_t cpu)
{
	if (cpu > TVH_MAX_CPU)
		return NULL;
	if (cpu >= t->len) {
		uint32_t n = cpu + 1 > 2 * t->len ? cpu + 1 : 2 * t->len;
		void **s = realloc(t->slots, n * sizeof(*s));

		if (!s)
			return NULL;
		for (uint32_t i = t->len; i < n; i++)
			s[i] = NULL;
		t->slots = s;
		t->len = n;
	}
	if (!t->slots[cpu])
		t->slots[cpu] = calloc(1, t->elem);
	return t->slots[cpu];
}

void tvh_cputab_free(struct tvh_cputab *t, void (*fini)(void *state))
{
	for (uint32_t i = 0; i < t->len; i++) {
		if (t->slots[i] && fini)
			fini(t->slots[i]);
		free(t->slots[i]);
	}
	free(t->slots);
	t->slots = NULL;
	t->len = 0;
}
