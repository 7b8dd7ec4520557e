/* SPDX-License-Identifier: MIT */
/*
 * memshare.c - mtrace's sharing filter; the rule and the state word are
 * described in memshare.h.
 */
#include "vmm/trace/memshare.h"

#include <string.h>

#define RD_SHIFT 0
#define WR_SHIFT 32

int memshare_init(struct memshare *s, uint64_t *keys, uint64_t *state, uint32_t nslots)
{
	if (!s || !keys || !state || !nslots || (nslots & (nslots - 1)))
		return -1;
	s->keys = keys;
	s->state = state;
	s->nslots = nslots;
	memshare_reset(s);
	return 0;
}

void memshare_reset(struct memshare *s)
{
	if (!s || !s->keys)
		return;
	memset(s->keys, 0, (size_t)s->nslots * sizeof(uint64_t));
	memset(s->state, 0, (size_t)s->nslots * sizeof(uint64_t));
}

int memshare_step(uint64_t *word, uint32_t cpu, bool read, bool write)
{
	uint64_t w = *word, mine_rd, mine_wr;
	bool log = false;

	if (cpu >= MEMSHARE_MAX_CPUS) {
		/* No bit of its own: a foreign access to every CPU that has one. */
		if (write)
			w = 0;                              /* every read and write state gone */
		else if (read)
			w &= 0xffffffffull << RD_SHIFT;     /* others' writes are no longer quiet */
		*word = w;
		return MEMSHARE_WIDE;
	}
	mine_rd = 1ull << (RD_SHIFT + cpu);
	mine_wr = 1ull << (WR_SHIFT + cpu);
	if (read) {
		if (!(w & mine_rd))
			log = true;                         /* a foreign write since c last read */
		w |= mine_rd;
		w &= (0xffffffffull << RD_SHIFT) | mine_wr;   /* c's read ends others' quiet writes */
	}
	if (write) {
		if (!(w & mine_wr))
			log = true;                         /* a foreign access since c last wrote */
		/* others must log their next read and write; c keeps its read bit */
		w &= mine_rd;
		w |= mine_wr;
	}
	*word = w;
	return log ? MEMSHARE_LOG : MEMSHARE_QUIET;
}

/* Fibonacci hashing of the line number. */
static uint32_t slot_of(uint64_t line, uint32_t nslots)
{
	return (uint32_t)(((line >> 6) * 0x9e3779b97f4a7c15ull) >> 32) & (nslots - 1);
}

/* The slot of line (claimed if absent), or -1. */
static int64_t find(struct memshare *s, uint64_t line)
{
	uint64_t key = line | 1;
	uint32_t start = slot_of(line, s->nslots);

	for (uint32_t k = 0; k < MEMSHARE_PROBES && k < s->nslots; k++) {
		uint32_t i = (start + k) & (s->nslots - 1);
		uint64_t v = __atomic_load_n(&s->keys[i], __ATOMIC_ACQUIRE);

		if (v == key)
			return i;
		if (v)
			continue;
		if (__atomic_compare_exchange_n(&s->keys[i], &v, key, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return i;
		if (v == key)
			return i;   /* another CPU claimed it just now */
	}
	return -1;
}

int memshare_access(struct memshare *s, uint32_t cpu, uint64_t gpa, bool read, bool write)
{
	uint64_t line = gpa & ~(uint64_t)(MEMSHARE_LINE - 1), old, nw;
	int64_t i;
	int answer;

	if (!read && !write)
		return MEMSHARE_LOG;
	if (!s || !s->keys)
		return MEMSHARE_NO_SLOT;
	i = find(s, line);
	if (i < 0)
		return MEMSHARE_NO_SLOT;
	old = __atomic_load_n(&s->state[i], __ATOMIC_ACQUIRE);
	do {
		nw = old;
		answer = memshare_step(&nw, cpu, read, write);
	} while (!__atomic_compare_exchange_n(&s->state[i], &old, nw, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	return answer;
}
