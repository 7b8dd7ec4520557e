/* SPDX-License-Identifier: MIT */
/*
 * mtrr.h - memory type range registers: read them once, answer "what
 * memory type does this physical range have?" as pure logic.
 *
 * With EPT on, the MTRRs no longer apply to guest-physical accesses; the
 * memory type comes from the EPT leaf instead (SDM 3C 29.3.7.2: "the
 * MTRRs have no effect on the memory type used for an access to a
 * guest-physical address").  ept.c therefore copies the MTRR type of each
 * page into the leaf that maps it, and this module is what it asks.
 *
 * References: SDM 3A 12.11 (Memory Cache Control, MTRRs):
 *   12.11.1    IA32_MTRRCAP: VCNT, FIX, WC, SMRR
 *   12.11.2.1  IA32_MTRR_DEF_TYPE: default type, FE, E
 *   12.11.2.2  fixed ranges (11 MSRs, 88 sub-ranges below 1 MiB)
 *   12.11.2.3  variable ranges (PHYSBASEn / PHYSMASKn)
 *   12.11.4.1  precedence
 */
#ifndef TV_MTRR_H
#define TV_MTRR_H

#include <stdbool.h>
#include <stdint.h>

/* --- MSRs (SDM Vol. 4 names) ---------------------------------------------- */
#define MSR_IA32_MTRRCAP            0x000000fe
#define MSR_IA32_MTRR_PHYSBASE(n)   (0x00000200u + 2u * (n))
#define MSR_IA32_MTRR_PHYSMASK(n)   (0x00000201u + 2u * (n))
#define MSR_IA32_MTRR_FIX64K_00000  0x00000250
#define MSR_IA32_MTRR_FIX16K_80000  0x00000258
#define MSR_IA32_MTRR_FIX16K_A0000  0x00000259
#define MSR_IA32_MTRR_FIX4K_C0000   0x00000268  /* ... FIX4K_F8000 = 0x26f */
#define MSR_IA32_MTRR_DEF_TYPE      0x000002ff

/* IA32_MTRRCAP (12.11.1) */
#define MTRRCAP_VCNT_MASK   0xffull
#define MTRRCAP_FIX         (1ull << 8)
#define MTRRCAP_WC          (1ull << 10)
#define MTRRCAP_SMRR        (1ull << 11)

/* IA32_MTRR_DEF_TYPE (12.11.2.1) */
#define MTRR_DEF_TYPE_MASK  0xffull
#define MTRR_DEF_FE         (1ull << 10)
#define MTRR_DEF_E          (1ull << 11)

/* PHYSBASE bits 7:0 type, (MAXPHYADDR-1):12 base; PHYSMASK bit 11 valid. */
#define MTRR_PHYSBASE_TYPE_MASK 0xffull
#define MTRR_PHYSMASK_VALID     (1ull << 11)

/* Memory types (12.11.2, Table 12-8); 2, 3 and 7..255 are reserved. */
#define MTRR_TYPE_UC     0
#define MTRR_TYPE_WC     1
#define MTRR_TYPE_WT     4
#define MTRR_TYPE_WP     5
#define MTRR_TYPE_WB     6
#define MTRR_TYPE_MIXED  (-1)   /* mtrr_range_type: the range is not uniform */

#define MTRR_NUM_FIXED   11
#define MTRR_MAX_VAR     32     /* VCNT is 8 bits; real parts have <= 10 */
#define MTRR_FIXED_END   0x100000ull  /* fixed ranges cover [0, 1 MiB) */

/* MAXPHYADDR when CPUID 0x80000008 is absent (SDM 3A 4.1.4). */
#define MTRR_DEFAULT_PHYS_BITS 36

struct mtrr_var {
	uint64_t base;   /* IA32_MTRR_PHYSBASEn as read */
	uint64_t mask;   /* IA32_MTRR_PHYSMASKn as read */
};

struct mtrr_state {
	bool present;             /* CPUID.1:EDX.MTRR[bit 12] */
	uint32_t phys_addr_bits;  /* MAXPHYADDR, CPUID.80000008H:EAX[7:0] */
	uint64_t cap;             /* IA32_MTRRCAP */
	uint64_t def_type;        /* IA32_MTRR_DEF_TYPE */
	/* 0x250, 0x258, 0x259, 0x268..0x26f in that order; 0 unless cap.FIX */
	uint64_t fixed[MTRR_NUM_FIXED];
	uint32_t var_count;       /* ranges read: min(VCNT, MTRR_MAX_VAR) */
	uint32_t var_dropped;     /* VCNT - var_count (logged as a warning) */
	struct mtrr_var var[MTRR_MAX_VAR];
};

/*
 * mtrr_read - read the calling CPU's MTRRs through hw_rdmsr.
 * present: CPUID.1:EDX.MTRR[bit 12]; when false no MSR is touched (they
 * would #GP) and the state reads as "MTRRs disabled", i.e. UC everywhere.
 * Fixed-range MSRs are read only if IA32_MTRRCAP.FIX is set (they #GP
 * otherwise).  phys_addr_bits: MAXPHYADDR; 0 means 36.
 */
void mtrr_read(struct mtrr_state *s, bool present, uint32_t phys_addr_bits);

/*
 * mtrr_range_type - the memory type of every byte of [base, base + size),
 * or MTRR_TYPE_MIXED when two bytes differ.  Pure; no MSR access.
 *
 * The range is widened to 4 KiB granularity (MTRR granularity); size 0 is
 * taken as 1 byte; a range running past 2^64 stops there.  The answer is
 * always one of UC, WC, WT, WP, WB (reserved encodings in the registers
 * are treated as UC) or MIXED.
 *
 * Cost: variable ranges are tested against naturally aligned power-of-two
 * blocks as a whole (see mtrr.c), so a 1 GiB or 2 MiB query costs a few
 * passes over the variable ranges, not one per 4 KiB page.  A query of
 * exactly 4 KiB is always exact; larger queries are exact for contiguous
 * masks and may answer MIXED conservatively for pathological
 * non-contiguous ones, which only makes the caller split further.
 */
int mtrr_range_type(const struct mtrr_state *s, uint64_t base, uint64_t size);

/* mtrr_type_at - the memory type of the 4 KiB page holding addr. */
int mtrr_type_at(const struct mtrr_state *s, uint64_t addr);

/* mtrr_phys_bits - MAXPHYADDR used for masks (36 when none was given). */
uint32_t mtrr_phys_bits(const struct mtrr_state *s);

/* "UC", "WC", "WT", "WP", "WB", "mixed", or "reserved". */
const char *mtrr_type_name(int type);

/* mtrr_log - cap, default type and each valid variable range, at info. */
void mtrr_log(const struct mtrr_state *s);

#endif /* TV_MTRR_H */
