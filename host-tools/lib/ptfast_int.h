/* SPDX-License-Identifier: MIT */
/*
 * ptfast_int.h - the fast PT decoder's internals shared by ptfast.c
 * (packets to flow), ptfast_blocks.c (the block cache and coverage
 * maps).  Not for other files.
 */
#ifndef TVH_PTFAST_INT_H
#define TVH_PTFAST_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "host-tools/lib/ptfast.h"

/* How a block ends: its last instruction. */
enum ptf_end {
	PTF_E_JCC,          /* Jcc, JrCXZ, LOOPcc: a TNT bit */
	PTF_E_JMP,          /* JMP rel: no trace */
	PTF_E_CALL,         /* CALL rel: no trace, pushed unless rel 0 */
	PTF_E_RET,          /* near RET: a TNT bit (compressed) or a TIP */
	PTF_E_JMP_IND,      /* JMP r/m: a TIP */
	PTF_E_CALL_IND,     /* CALL r/m: a TIP, pushed */
	PTF_E_FAR,          /* far transfers, INT, SYSCALL, IRET, VM*: a TIP */
	PTF_E_CONT,         /* TVH_PTF_MAX_RUN instructions: goes on at next */
	PTF_E_ERR,          /* the instruction at last_ip cannot be decoded: err */
};

/* Indirect targets a block counts itself before the edge map. */
#define PTF_IND_WAYS 4

/* Block key and analysis; hits/taken count complete executions. */
struct ptf_block {
	uint64_t start;
	uint64_t asid;          /* CR3 (pt_asid_no_cr3 when unknown) */
	uint8_t mode;           /* 16, 32, 64; 0 unknown */
	uint8_t end;            /* enum ptf_end */
	uint8_t iclass;         /* enum pt_insn_class of the last instruction */
	uint8_t br;             /* TV_BR_* of the last instruction */
	uint8_t nopush;         /* PTF_E_CALL to the next instruction */
	uint8_t binds_pip;      /* a MOV CR3 inside (libipt binds a PIP to it) */
	uint32_t ninsns;        /* instructions executed when the block completes */
	int err;                /* PTF_E_ERR */
	uint64_t last_ip;       /* the last instruction (PTF_E_ERR: the bad one) */
	uint64_t next;          /* after the last instruction */
	uint64_t target;        /* direct branches */
	struct ptf_block *succ[2];   /* last seen: [0] at next, [1] at the target */
	uint64_t hits, taken;
	struct {
		uint64_t to, n;
	} ind[PTF_IND_WAYS];         /* coverage: indirect targets and counts (n 0: free) */
	uint64_t ret_from, ret_n;    /* coverage, call blocks: the last return to next, its count */
	uint8_t ret_br;
};

/* A counted (a, b) pair: edges (from, to) and runs (start, end). */
struct ptf_ment {
	uint64_t a, b, count;
	uint32_t extra;         /* edges: TV_BR_*; runs: instructions */
	uint32_t used;
};

struct ptf_map {
	struct ptf_ment *v;
	size_t cap, n;          /* cap: 0 or a power of two */
};

struct ptf_cache {
	struct ptf_block **tab; /* open addressing, cap a power of two */
	size_t cap, n, max;
	struct ptf_chunk *chunks;
	uint64_t flushes;
	uint64_t gen;           /* bumped on every flush: block pointers die */
};

/* Find the block for (ip, asid, mode) or NULL. */
struct ptf_block *ptf_cache_find(const struct ptf_cache *c, uint64_t ip,
				 uint64_t asid, uint8_t mode);
/*
 * A new block for the key, to be filled by the caller; flushes the cache
 * first when it is full (fold: called on every block before it is freed,
 * to keep its counts).  NULL: no memory.
 */
struct ptf_block *ptf_cache_insert(struct ptf_cache *c, uint64_t ip, uint64_t asid,
				   uint8_t mode,
				   void (*fold)(void *ctx, const struct ptf_block *b),
				   void *ctx);
/* Drop every block (fold as for insert; gen bumped: pointers die). */
void ptf_cache_flush(struct ptf_cache *c,
		     void (*fold)(void *ctx, const struct ptf_block *b), void *ctx);
/* Calls fn on every block. */
void ptf_cache_each(const struct ptf_cache *c,
		    void (*fn)(void *ctx, const struct ptf_block *b), void *ctx);
void ptf_cache_free(struct ptf_cache *c);
size_t ptf_cache_bytes(const struct ptf_cache *c);

/* Add count to (a, b, extra) (the key; for runs extra follows from a, b):
 * 0 or -TVH_ERR_NOMEM. */
int ptf_map_add(struct ptf_map *m, uint64_t a, uint64_t b, uint64_t count,
		uint32_t extra);
void ptf_map_free(struct ptf_map *m);

#endif /* TVH_PTFAST_INT_H */
