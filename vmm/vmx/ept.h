/* SPDX-License-Identifier: MIT */
/*
 * ept.h - the guest's extended page tables: an identity map of physical
 * memory with the hypervisor's own pages cut out.
 *
 * ept_build maps [0, top) guest-physical to the same host-physical
 * addresses with a 4-level walk, using the largest page (1 GiB, 2 MiB,
 * 4 KiB) that (a) the CPU and the caller allow, (b) lies below top,
 * (c) touches no hidden range and (d) has one MTRR memory type.  Each
 * leaf carries that MTRR type with ignore-PAT = 0, so the guest's
 * effective type is the MTRR type combined with its own PAT exactly as
 * without virtualization (SDM 3C 29.3.7.2; with EPT on the MTRRs are not
 * consulted for guest-physical accesses).  Hidden pages get 4 KiB leaves
 * with R = W = X = 0: any guest access is an EPT violation.
 *
 * Tables come only from a struct page_pool; entries hold physical
 * addresses, the code reaches tables through the pool's va - pa offset.
 *
 * Concurrency: ept_build runs once at boot.  ept_map_4k may run while
 * guests use the tables (each change becomes visible with one aligned
 * 64-bit store of a fully built subtree), but calls must be serialized by
 * the caller, who must then INVEPT (single-context, this EPTP) on every
 * CPU using it (SDM 3C 29.4.3).  ept_lookup may run concurrently.
 *
 * Errors (negative, text from ept_strerror):
 *   EPT_ERR_NOMEM       the pool cannot supply the tables needed
 *   EPT_ERR_INVAL       bad argument (NULL, top 0 or unaligned, W without
 *                       R, X without R and no execute-only support,
 *                       reserved memory type, pool with another va - pa)
 *   EPT_ERR_RANGE       address beyond the 4-level walk (2^48) or
 *                       MAXPHYADDR (bits 51:N of entries must be 0)
 *   EPT_ERR_CAPS        IA32_VMX_EPT_VPID_CAP lacks the 4-level walk or
 *                       both UC and WB paging-structure types
 *   EPT_ERR_NOT_MAPPED  ept_lookup: no leaf maps that address
 *   EPT_ERR_ALIGN       an address that must be 4 KiB aligned is not
 */
#ifndef TV_EPT_H
#define TV_EPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/vmx/mtrr.h"
#include "vmm/lib/page_pool.h"

/* --- EPT paging-structure entries (SDM 3C 29.3.2, Tables 29-1 to 29-6) --- */
#define EPT_R            (1ull << 0)
#define EPT_W            (1ull << 1)
#define EPT_X            (1ull << 2)   /* supervisor execute with MBEC */
#define EPT_RWX          (EPT_R | EPT_W | EPT_X)
#define EPT_MEMTYPE_SHIFT 3            /* bits 5:3, leaves only */
#define EPT_MEMTYPE_MASK (7ull << EPT_MEMTYPE_SHIFT)
#define EPT_IGNORE_PAT   (1ull << 6)   /* leaves only */
#define EPT_LARGE        (1ull << 7)   /* PDPTE: 1 GiB page, PDE: 2 MiB page */
#define EPT_ACCESSED     (1ull << 8)   /* only with EPTP[6] */
#define EPT_DIRTY        (1ull << 9)   /* leaves, only with EPTP[6] */
#define EPT_ADDR_MASK    0x000ffffffffff000ull  /* bits 51:12 */

#define EPT_ENTRIES      512
#define EPT_PAGE_4K      (1ull << 12)
#define EPT_PAGE_2M      (1ull << 21)
#define EPT_PAGE_1G      (1ull << 30)
#define EPT_MAX_GPA      (1ull << 48)  /* what a 4-level walk translates */

/* --- EPTP (SDM 3C 25.6.11) ---------------------------------------------- */
#define EPTP_MEMTYPE_UC  0ull          /* bits 2:0: paging-structure type */
#define EPTP_MEMTYPE_WB  6ull
#define EPTP_WALK_4      (3ull << 3)   /* bits 5:3: walk length - 1 */
#define EPTP_AD_ENABLE   (1ull << 6)   /* not used by tracevisor */

/* Levels as the walk meets them; ept_leaf.level uses the leaf's. */
enum ept_level {
	EPT_LEVEL_PT = 0,    /* 4 KiB leaves */
	EPT_LEVEL_PD = 1,    /* 2 MiB leaves or page tables */
	EPT_LEVEL_PDPT = 2,  /* 1 GiB leaves or page directories */
	EPT_LEVEL_PML4 = 3,
};

#define EPT_ERR_NOMEM      (-1)
#define EPT_ERR_INVAL      (-2)
#define EPT_ERR_RANGE      (-3)
#define EPT_ERR_CAPS       (-4)
#define EPT_ERR_NOT_MAPPED (-5)
#define EPT_ERR_ALIGN      (-6)

/* A physical range; hidden ranges are widened outward to 4 KiB pages. */
struct ept_range {
	uint64_t base;
	uint64_t size;
};

struct ept_params {
	/*
	 * End of the map (exclusive), 4 KiB aligned, <= 2^48 and <=
	 * 2^MAXPHYADDR.  The caller passes max(4 GiB, highest memory-map
	 * address) rounded up to 1 GiB, which covers all RAM and MMIO
	 * the firmware reported plus the 32-bit MMIO hole.
	 */
	uint64_t top;
	bool allow_1g;                 /* also requires EPT_CAP_PDPTE_1GB (bit 17) */
	bool allow_2m;                 /* also requires EPT_CAP_PDE_2MB (bit 16) */
	uint64_t ept_vpid_cap;         /* IA32_VMX_EPT_VPID_CAP */
	const struct mtrr_state *mtrr; /* types per page; MAXPHYADDR */
	const struct ept_range *hidden;  /* never accessible to the guest */
	size_t nhidden;
};

struct ept_stats {
	uint64_t pml4_tables, pdpt_tables, pd_tables, pt_tables;  /* pages */
	uint64_t leaves_1g, leaves_2m, leaves_4k;  /* present leaves (RWX != 0) */
	uint64_t hidden_4k;   /* 4 KiB leaves below top with RWX = 0 */
	uint64_t splits;      /* large leaves ept_map_4k split */
};

struct ept {
	uint64_t *pml4;       /* virtual address of the PML4 */
	uint64_t pml4_pa;
	uint64_t eptp;        /* the VMCS EPT_POINTER value */
	uint64_t top;
	uint64_t cap;         /* IA32_VMX_EPT_VPID_CAP */
	uint32_t phys_bits;   /* MAXPHYADDR */
	uintptr_t va_minus_pa;  /* of the pool(s) the tables come from */
	struct ept_stats stats;
	/*
	 * Changes by ept_map_4k and ept_set_rights since ept_build (under the
	 * callers' lock): who keeps a copy of some tables or a flushed TLB
	 * (memory watches' open view, vmm/trace/memwatch.h) knows from it
	 * whether anything moved.
	 */
	uint64_t edits;
};

/* A leaf as ept_lookup finds it. */
struct ept_leaf {
	uint64_t entry;       /* raw entry */
	uint64_t hpa;         /* translation of the looked-up gpa (with offset) */
	uint64_t page_size;   /* 4 KiB, 2 MiB or 1 GiB */
	enum ept_level level; /* EPT_LEVEL_PT, _PD or _PDPT */
	unsigned rwx;         /* bits 2:0; 0 = not present (hidden or unmapped) */
	unsigned memtype;     /* bits 5:3 */
	bool ignore_pat;
};

/*
 * ept_build - build the identity map described by p, tables from pool.
 * First counts the tables it needs (as ept_count_tables) and fails with
 * EPT_ERR_NOMEM before taking any page if the pool holds fewer.  On any
 * error *ept is zeroed (no EPTP); on success ept->eptp is ready for the
 * VMCS (4-level walk, WB paging structures if EPT_CAP_MEMTYPE_WB else UC,
 * no accessed/dirty flags).
 * Returns 0, EPT_ERR_INVAL, EPT_ERR_RANGE, EPT_ERR_CAPS or EPT_ERR_NOMEM.
 */
int ept_build(struct ept *ept, struct page_pool *pool, const struct ept_params *p);

/*
 * ept_count_tables - the number of table pages ept_build(p) takes, so the
 * caller can size the pool before ExitBootServices.  Touches no memory.
 * Returns 0 (*pages set), EPT_ERR_INVAL, EPT_ERR_RANGE or EPT_ERR_CAPS.
 */
int ept_count_tables(const struct ept_params *p, uint64_t *pages);

/*
 * ept_lookup - walk the tables for gpa.  A 4 KiB leaf with rwx == 0 (a
 * hidden page, or a never-mapped slot of a page table) is returned with
 * 0; a missing table or non-present entry above the PT level gives
 * EPT_ERR_NOT_MAPPED.
 * Returns 0, EPT_ERR_RANGE (gpa >= 2^48) or EPT_ERR_NOT_MAPPED.
 */
int ept_lookup(const struct ept *ept, uint64_t gpa, struct ept_leaf *out);

/*
 * ept_map_4k - map the 4 KiB page at gpa to hpa with the given rights
 * (EPT_R/W/X bits; 0 makes it not present) and memory type (an MTRR_TYPE_*
 * value), ignore-PAT 0.  A large leaf covering gpa is split first into
 * leaves of the next size down with its own hpa, rights and type, so
 * every other address translates as before; missing tables are created.
 * Needs up to three pages from pool (which must have the same va - pa as
 * the one ept_build used); if it holds fewer, nothing changes.  Mapping a
 * page to what it already is changes nothing either.
 * Returns 0, EPT_ERR_ALIGN, EPT_ERR_RANGE, EPT_ERR_INVAL or EPT_ERR_NOMEM.
 */
int ept_map_4k(struct ept *ept, struct page_pool *pool, uint64_t gpa,
	       uint64_t hpa, unsigned rwx, unsigned memtype);

/*
 * ept_set_rights - give the present leaf that maps gpa, whatever its size
 * (a 1 GiB or 2 MiB leaf stays one), the rights rwx; its address, memory
 * type and ignore-PAT stay.  One aligned 64-bit store, so it may run
 * while guests use the tables; calls are serialized and followed by
 * INVEPT as for ept_map_4k.  *old (may be NULL) receives the leaf as it
 * was.  Needs no pool page: the code-snapshot tracker (vmm/trace/snap.c)
 * uses it where a split is not wanted or not possible.
 * Returns 0, EPT_ERR_RANGE (gpa >= 2^48), EPT_ERR_NOT_MAPPED (no present
 * leaf maps gpa) or EPT_ERR_INVAL (rwx 0 or not a valid combination, as
 * for ept_map_4k).
 */
int ept_set_rights(struct ept *ept, uint64_t gpa, unsigned rwx, struct ept_leaf *old);

/*
 * ept_table - the table of level (EPT_LEVEL_PML4 .. EPT_LEVEL_PT) on the
 * walk for gpa, its va; NULL when the walk ends above that level (a large
 * leaf or a non-present entry) or gpa >= 2^48.  May run concurrently
 * with edits (each entry read once).
 */
uint64_t *ept_table(const struct ept *ept, uint64_t gpa, enum ept_level level);

/* Text for an EPT_ERR_* code ("ok" for 0). */
const char *ept_strerror(int err);

/* ept_log - EPTP, top, tables and leaves per size, at info. */
void ept_log(const struct ept *ept);

#endif /* TV_EPT_H */
