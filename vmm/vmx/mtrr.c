/* SPDX-License-Identifier: MIT */
/*
 * mtrr.c - MTRR reading and memory-type queries (SDM 3A 12.11).
 *
 * How a range is answered without walking its 4 KiB pages:
 *
 * A variable range matches address A when (A & M) == (B & M), M and B
 * being PHYSMASK and PHYSBASE restricted to bits (MAXPHYADDR-1):12
 * (12.11.3).  Take a naturally aligned block of 2^k bytes at X: its
 * addresses share every bit from k up and take every value in bits k-1:0.
 * So, per range:
 *   - (X ^ B) & M & ~(2^k - 1) != 0: no address of the block matches;
 *   - otherwise, M & (2^k - 1) == 0: every address matches ("full");
 *   - otherwise some match and some do not ("partial").
 * With no partial range the block is uniform and its type follows from
 * the full ones by the precedence rules.  With partial ones, an address
 * sees the full ranges plus some subset of the partial ones, so if every
 * subset of the partial types gives the same answer the block is still
 * uniform (typical: a WB range inside a WB default).  Only when that
 * fails is the block halved; a contiguous range stops being partial once
 * the block is no larger than itself, so the recursion is shallow.  Any
 * range is cut into at most ~2x64 such blocks (a buddy decomposition).
 */
#include "vmm/vmx/mtrr.h"

#include <stddef.h>
#include <string.h>

#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"

#define PAGE_SHIFT 12
#define PAGE_MASK  0xfffull

/* Bit t set: type t is among the matching ranges.  Types are < 8 here. */
typedef uint32_t type_set;

/* Nodes one top-level query may visit before answering MIXED (never hit
 * with contiguous masks: that needs about 2 x ranges x depth nodes). */
#define SPLIT_BUDGET 16384

static const uint32_t fixed_msrs[MTRR_NUM_FIXED] = {
	MSR_IA32_MTRR_FIX64K_00000, MSR_IA32_MTRR_FIX16K_80000,
	MSR_IA32_MTRR_FIX16K_A0000,
	MSR_IA32_MTRR_FIX4K_C0000 + 0, MSR_IA32_MTRR_FIX4K_C0000 + 1,
	MSR_IA32_MTRR_FIX4K_C0000 + 2, MSR_IA32_MTRR_FIX4K_C0000 + 3,
	MSR_IA32_MTRR_FIX4K_C0000 + 4, MSR_IA32_MTRR_FIX4K_C0000 + 5,
	MSR_IA32_MTRR_FIX4K_C0000 + 6, MSR_IA32_MTRR_FIX4K_C0000 + 7,
};

uint32_t mtrr_phys_bits(const struct mtrr_state *s)
{
	uint32_t bits = s->phys_addr_bits;

	if (bits == 0)
		return MTRR_DEFAULT_PHYS_BITS;
	/* Paging-structure and MTRR address fields end at bit 51. */
	if (bits > 52)
		return 52;
	if (bits < 32)
		return 32;
	return bits;
}

void mtrr_read(struct mtrr_state *s, bool present, uint32_t phys_addr_bits)
{
	uint32_t vcnt;

	memset(s, 0, sizeof(*s));
	s->present = present;
	s->phys_addr_bits = phys_addr_bits;
	s->phys_addr_bits = mtrr_phys_bits(s);
	if (!present)
		return;  /* def_type 0: E clear, UC everywhere (12.11.4.1) */

	s->cap = hw_rdmsr(MSR_IA32_MTRRCAP);
	s->def_type = hw_rdmsr(MSR_IA32_MTRR_DEF_TYPE);
	/* 12.11.1: the fixed-range MSRs exist only when FIX is set. */
	if (s->cap & MTRRCAP_FIX)
		for (uint32_t i = 0; i < MTRR_NUM_FIXED; i++)
			s->fixed[i] = hw_rdmsr(fixed_msrs[i]);
	vcnt = (uint32_t)(s->cap & MTRRCAP_VCNT_MASK);
	s->var_count = vcnt < MTRR_MAX_VAR ? vcnt : MTRR_MAX_VAR;
	s->var_dropped = vcnt - s->var_count;
	for (uint32_t i = 0; i < s->var_count; i++) {
		s->var[i].base = hw_rdmsr(MSR_IA32_MTRR_PHYSBASE(i));
		s->var[i].mask = hw_rdmsr(MSR_IA32_MTRR_PHYSMASK(i));
	}
}

/* Reserved encodings cannot be written (#GP), but a hand-filled or
 * corrupt state may hold one: treat it as the safe UC. */
static unsigned sanitize(uint64_t type)
{
	switch (type) {
	case MTRR_TYPE_UC: case MTRR_TYPE_WC: case MTRR_TYPE_WT:
	case MTRR_TYPE_WP: case MTRR_TYPE_WB:
		return (unsigned)type;
	default:
		return MTRR_TYPE_UC;
	}
}

/*
 * 12.11.4.1 step 2: the type when the ranges of these types match (set
 * non-empty).  One type: that type.  UC among them: UC.  Exactly WT and
 * WB: WT.  Anything else is undefined behaviour of the processor, for
 * which UC is the only safe guess.
 */
static int resolve(type_set set, int def)
{
	if (set == 0)
		return def;  /* step 3: no range matches */
	if (set & (1u << MTRR_TYPE_UC))
		return MTRR_TYPE_UC;
	if (set == ((1u << MTRR_TYPE_WT) | (1u << MTRR_TYPE_WB)))
		return MTRR_TYPE_WT;
	if ((set & (set - 1)) == 0)
		return __builtin_ctz(set);
	return MTRR_TYPE_UC;
}

static bool mtrrs_enabled(const struct mtrr_state *s)
{
	return s->present && (s->def_type & MTRR_DEF_E);
}

/* 12.11.2.1: FE has effect only with E set; FIX says the MSRs exist. */
static bool fixed_enabled(const struct mtrr_state *s)
{
	return mtrrs_enabled(s) && (s->def_type & MTRR_DEF_FE) &&
	       (s->cap & MTRRCAP_FIX);
}

/* Type of the 4 KiB page at addr < 1 MiB from the fixed ranges (Table 12-9). */
static int fixed_type(const struct mtrr_state *s, uint64_t addr)
{
	unsigned idx, field;

	if (addr < 0x80000) {            /* 8 x 64 KiB */
		idx = 0;
		field = (unsigned)(addr >> 16);
	} else if (addr < 0xc0000) {     /* 2 MSRs x 8 x 16 KiB */
		idx = 1 + (unsigned)((addr - 0x80000) >> 17);
		field = (unsigned)((addr - 0x80000) >> 14) & 7;
	} else {                         /* 8 MSRs x 8 x 4 KiB */
		idx = 3 + (unsigned)((addr - 0xc0000) >> 15);
		field = (unsigned)((addr - 0xc0000) >> 12) & 7;
	}
	return (int)sanitize((s->fixed[idx] >> (8 * field)) & 0xff);
}

struct var_query {
	const struct mtrr_state *s;
	uint64_t addr_mask;  /* bits (MAXPHYADDR-1):12 */
	int def;
	unsigned budget;
};

/* Type of the aligned block [x, x + 2^order) from variable ranges and
 * the default type, or MIXED. */
static int var_block_type(struct var_query *q, uint64_t x, unsigned order)
{
	uint64_t low = (order >= 64) ? ~0ull : (1ull << order) - 1;
	type_set full = 0, partial = 0;
	int t0, t1;

	if (q->budget == 0)
		return MTRR_TYPE_MIXED;
	q->budget--;

	for (uint32_t i = 0; i < q->s->var_count; i++) {
		const struct mtrr_var *v = &q->s->var[i];
		uint64_t m, b;

		if (!(v->mask & MTRR_PHYSMASK_VALID))
			continue;
		m = v->mask & q->addr_mask;
		b = v->base & q->addr_mask;
		if ((x ^ b) & m & ~low)
			continue;
		if (m & low)
			partial |= 1u << sanitize(v->base & MTRR_PHYSBASE_TYPE_MASK);
		else
			full |= 1u << sanitize(v->base & MTRR_PHYSBASE_TYPE_MASK);
	}
	t0 = resolve(full, q->def);
	/*
	 * No partial range: uniform.  A UC answer from full ranges alone
	 * (UC among them, or an undefined mix) stays UC whatever is added.
	 */
	if (partial == 0 || (t0 == MTRR_TYPE_UC && full))
		return t0;

	/* Every non-empty subset of the partial types (at most 2^5 - 1). */
	for (type_set sub = partial; sub; sub = (sub - 1) & partial)
		if (resolve(full | sub, q->def) != t0)
			goto split;
	return t0;

split:
	/* Mask bits start at 12, so a 4 KiB block has no partial range. */
	if (order <= PAGE_SHIFT)
		return MTRR_TYPE_MIXED;
	t0 = var_block_type(q, x, order - 1);
	if (t0 == MTRR_TYPE_MIXED)
		return t0;
	t1 = var_block_type(q, x + (1ull << (order - 1)), order - 1);
	return t0 == t1 ? t0 : MTRR_TYPE_MIXED;
}

/* Fold t into *acc; false when the range is no longer uniform. */
static bool merge(int *acc, int t)
{
	if (t == MTRR_TYPE_MIXED)
		return false;
	if (*acc == MTRR_TYPE_MIXED)
		*acc = t;
	return *acc == t;
}

static unsigned floor_log2(uint64_t v)
{
	return 63u - (unsigned)__builtin_clzll(v);
}

int mtrr_range_type(const struct mtrr_state *s, uint64_t base, uint64_t size)
{
	uint64_t cur = base & ~PAGE_MASK;
	uint64_t last;           /* last byte, inclusive: no overflow at 2^64 */
	int acc = MTRR_TYPE_MIXED;  /* MIXED here means "nothing seen yet" */
	struct var_query q;

	if (size == 0)
		size = 1;
	last = (size - 1 > UINT64_MAX - base) ? UINT64_MAX : base + size - 1;
	last |= PAGE_MASK;

	/* 12.11.4.1: MTRRs disabled (E = 0) means UC for every access. */
	if (!mtrrs_enabled(s))
		return MTRR_TYPE_UC;

	/* Step 1: fixed ranges decide below 1 MiB, when enabled. */
	if (fixed_enabled(s) && cur < MTRR_FIXED_END) {
		uint64_t stop = last < MTRR_FIXED_END ? last : MTRR_FIXED_END - 1;

		for (; cur <= stop; cur += 1ull << PAGE_SHIFT)
			if (!merge(&acc, fixed_type(s, cur)))
				return MTRR_TYPE_MIXED;
		if (last < MTRR_FIXED_END)
			return acc;
	}

	q.s = s;
	q.addr_mask = ((1ull << mtrr_phys_bits(s)) - 1) & ~PAGE_MASK;
	q.def = (int)sanitize(s->def_type & MTRR_DEF_TYPE_MASK);
	q.budget = SPLIT_BUDGET;

	/* Steps 2 and 3 over a buddy decomposition of [cur, last]. */
	for (;;) {
		uint64_t rem = last - cur;   /* bytes left, minus one */
		unsigned order = cur ? (unsigned)__builtin_ctzll(cur) : 63;

		/* the largest block that fits: 2^order - 1 <= rem */
		if (rem != UINT64_MAX && floor_log2(rem + 1) < order)
			order = floor_log2(rem + 1);
		if (order > 63)
			order = 63;
		if (!merge(&acc, var_block_type(&q, cur, order)))
			return MTRR_TYPE_MIXED;
		if ((1ull << order) - 1 >= rem)
			break;
		cur += 1ull << order;
	}
	return acc;
}

int mtrr_type_at(const struct mtrr_state *s, uint64_t addr)
{
	return mtrr_range_type(s, addr & ~PAGE_MASK, 1ull << PAGE_SHIFT);
}

const char *mtrr_type_name(int type)
{
	switch (type) {
	case MTRR_TYPE_UC: return "UC";
	case MTRR_TYPE_WC: return "WC";
	case MTRR_TYPE_WT: return "WT";
	case MTRR_TYPE_WP: return "WP";
	case MTRR_TYPE_WB: return "WB";
	case MTRR_TYPE_MIXED: return "mixed";
	default: return "reserved";
	}
}

void mtrr_log(const struct mtrr_state *s)
{
	uint64_t addr_mask = ((1ull << mtrr_phys_bits(s)) - 1) & ~PAGE_MASK;

	if (!s->present) {
		log_warn("mtrr: not supported (CPUID.1:EDX[12] clear), treating memory as UC");
		return;
	}
	log_info("mtrr: cap %#llx (vcnt %u%s%s%s), def_type %#llx: %s, default %s, fixed %s, maxphyaddr %u",
		 (unsigned long long)s->cap, (unsigned)(s->cap & MTRRCAP_VCNT_MASK),
		 (s->cap & MTRRCAP_FIX) ? " fix" : "", (s->cap & MTRRCAP_WC) ? " wc" : "",
		 (s->cap & MTRRCAP_SMRR) ? " smrr" : "",
		 (unsigned long long)s->def_type,
		 (s->def_type & MTRR_DEF_E) ? "enabled" : "disabled",
		 mtrr_type_name((int)(s->def_type & MTRR_DEF_TYPE_MASK)),
		 fixed_enabled(s) ? "on" : "off", mtrr_phys_bits(s));
	if (s->var_dropped)
		log_warn("mtrr: %u variable ranges beyond the %u tracevisor reads are ignored",
			 s->var_dropped, MTRR_MAX_VAR);
	for (uint32_t i = 0; i < s->var_count; i++) {
		const struct mtrr_var *v = &s->var[i];
		uint64_t m = v->mask & addr_mask;

		if (!(v->mask & MTRR_PHYSMASK_VALID))
			continue;
		/* size = lowest set mask bit, for the usual contiguous masks */
		log_info("mtrr: var%u base %#llx mask %#llx (%s, size %#llx)", i,
			 (unsigned long long)(v->base & addr_mask), (unsigned long long)m,
			 mtrr_type_name((int)(v->base & MTRR_PHYSBASE_TYPE_MASK)),
			 (unsigned long long)(m ? (m & -m) : 0));
	}
}
