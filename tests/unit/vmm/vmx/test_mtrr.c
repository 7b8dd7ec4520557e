/* SPDX-License-Identifier: MIT */
/*
 * test_mtrr.c - MTRR decoding and memory-type queries (vmm/vmx/mtrr.c).
 *
 * Most tests fill struct mtrr_state directly; mtrr_read is tested through
 * the MSR table of tests/fakes/hw_fake.  The values mimic what OVMF
 * programs under QEMU: IA32_MTRRCAP 0x508 (8 variable ranges, fixed
 * ranges, WC), default WB, one variable UC range over the 32-bit PCI hole
 * 0xC0000000-0xFFFFFFFF, fixed ranges WB except UC for the legacy VGA
 * window 0xA0000-0xBFFFF (and here a WP option ROM at 0xC0000).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/vmx/mtrr.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)

#define UC MTRR_TYPE_UC
#define WC MTRR_TYPE_WC
#define WT MTRR_TYPE_WT
#define WP MTRR_TYPE_WP
#define WB MTRR_TYPE_WB
#define MIXED MTRR_TYPE_MIXED

#define ALL8(t) (0x0101010101010101ull * (uint64_t)(t))

static uint64_t phys_mask(uint32_t bits)
{
	return ((1ull << bits) - 1) & ~0xfffull;
}

/* Variable range n = [base, base + size), size a power of two. */
static void set_var(struct mtrr_state *s, unsigned n, uint64_t base, uint64_t size, unsigned type)
{
	s->var[n].base = base | type;
	s->var[n].mask = (~(size - 1) & phys_mask(s->phys_addr_bits)) | MTRR_PHYSMASK_VALID;
	if (s->var_count <= n)
		s->var_count = n + 1;
}

static void ovmf_state(struct mtrr_state *s)
{
	memset(s, 0, sizeof(*s));
	s->present = true;
	s->phys_addr_bits = 40;
	s->cap = 0x508;                          /* VCNT 8, FIX, WC */
	s->def_type = MTRR_DEF_E | MTRR_DEF_FE | WB;
	s->fixed[0] = ALL8(WB);                  /* 0x00000-0x7ffff */
	s->fixed[1] = ALL8(WB);                  /* 0x80000-0x9ffff */
	s->fixed[2] = ALL8(UC);                  /* 0xa0000-0xbffff VGA */
	s->fixed[3] = ALL8(WP);                  /* 0xc0000-0xc7fff ROM */
	for (int i = 4; i < MTRR_NUM_FIXED; i++)
		s->fixed[i] = ALL8(WB);
	s->var_count = 8;
	set_var(s, 0, 0xc0000000, 1 * GiB, UC);  /* PCI hole */
}

/* --- an independent, literal reading of SDM 3A 12.11.4.1 for one page -- */

static int ref_resolve(unsigned set, int def)
{
	if (!set)
		return def;
	if (set & (1u << UC))
		return UC;
	if (set == ((1u << WT) | (1u << WB)))
		return WT;
	for (int t = 0; t < 8; t++)
		if (set == (1u << t))
			return t;
	return UC;  /* undefined overlap */
}

static int ref_type(const struct mtrr_state *s, uint64_t a)
{
	uint64_t pm = phys_mask(s->phys_addr_bits ? s->phys_addr_bits : 36);
	unsigned set = 0;

	if (!s->present || !(s->def_type & MTRR_DEF_E))
		return UC;
	if (a < MiB && (s->def_type & MTRR_DEF_FE) && (s->cap & MTRRCAP_FIX)) {
		int t;

		if (a < 0x80000)
			t = (int)(s->fixed[0] >> (8 * (a / (64 * KiB)))) & 0xff;
		else if (a < 0xc0000)
			t = (int)(s->fixed[1 + (a - 0x80000) / (128 * KiB)] >>
				  (8 * (((a - 0x80000) / (16 * KiB)) % 8))) & 0xff;
		else
			t = (int)(s->fixed[3 + (a - 0xc0000) / (32 * KiB)] >>
				  (8 * (((a - 0xc0000) / (4 * KiB)) % 8))) & 0xff;
		return (t == 2 || t == 3 || t > 6) ? UC : t;
	}
	for (uint32_t i = 0; i < s->var_count; i++) {
		uint64_t m = s->var[i].mask & pm;
		unsigned t = (unsigned)(s->var[i].base & 0xff);

		if (!(s->var[i].mask & MTRR_PHYSMASK_VALID))
			continue;
		if ((a & m) == (s->var[i].base & m))
			set |= 1u << ((t == 2 || t == 3 || t > 6) ? UC : t);
	}
	{
		int d = (int)(s->def_type & 0xff);

		return ref_resolve(set, (d == 2 || d == 3 || d > 6) ? UC : d);
	}
}

/* --- tests ---------------------------------------------------------------- */

static void test_ovmf_point_types(void **state)
{
	struct mtrr_state s;

	(void)state;
	ovmf_state(&s);
	assert_int_equal(mtrr_type_at(&s, 0), WB);
	assert_int_equal(mtrr_type_at(&s, 0x9f000), WB);
	assert_int_equal(mtrr_type_at(&s, 0x9ffff), WB);
	assert_int_equal(mtrr_type_at(&s, 0xa0000), UC);
	assert_int_equal(mtrr_type_at(&s, 0xbf000), UC);
	assert_int_equal(mtrr_type_at(&s, 0xc0000), WP);
	assert_int_equal(mtrr_type_at(&s, 0xc7fff), WP);
	assert_int_equal(mtrr_type_at(&s, 0xc8000), WB);
	assert_int_equal(mtrr_type_at(&s, 0xff000), WB);
	assert_int_equal(mtrr_type_at(&s, 0x100000), WB);
	assert_int_equal(mtrr_type_at(&s, 0xbffff000), WB);
	assert_int_equal(mtrr_type_at(&s, 0xc0000000), UC);
	assert_int_equal(mtrr_type_at(&s, 0xfee00000), UC);
	assert_int_equal(mtrr_type_at(&s, 0xfffff000), UC);
	assert_int_equal(mtrr_type_at(&s, 0x100000000), WB);
	assert_int_equal(mtrr_type_at(&s, 63 * GiB), WB);
}

static void test_ovmf_ranges(void **state)
{
	struct mtrr_state s;

	(void)state;
	ovmf_state(&s);
	assert_int_equal(mtrr_range_type(&s, 0, 640 * KiB), WB);
	assert_int_equal(mtrr_range_type(&s, 0, 644 * KiB), MIXED);
	assert_int_equal(mtrr_range_type(&s, 0xa0000, 128 * KiB), UC);
	assert_int_equal(mtrr_range_type(&s, 0xc0000, 32 * KiB), WP);
	assert_int_equal(mtrr_range_type(&s, 0xc8000, 0x38000), WB);
	assert_int_equal(mtrr_range_type(&s, 0, 2 * MiB), MIXED);
	assert_int_equal(mtrr_range_type(&s, 0, 1 * GiB), MIXED);
	assert_int_equal(mtrr_range_type(&s, 1 * MiB, 1 * MiB), WB);
	assert_int_equal(mtrr_range_type(&s, 1 * MiB, 0xbff00000), WB);  /* unaligned */
	assert_int_equal(mtrr_range_type(&s, 1 * GiB, 1 * GiB), WB);
	assert_int_equal(mtrr_range_type(&s, 3 * GiB, 1 * GiB), UC);
	assert_int_equal(mtrr_range_type(&s, 2 * GiB, 2 * GiB), MIXED);
	assert_int_equal(mtrr_range_type(&s, 0xbfe00000, 2 * MiB), WB);
	assert_int_equal(mtrr_range_type(&s, 0xbfe00000, 4 * MiB), MIXED);
	assert_int_equal(mtrr_range_type(&s, 0xc0000000, 2 * MiB), UC);
	assert_int_equal(mtrr_range_type(&s, 4 * GiB, 60 * GiB), WB);
	assert_int_equal(mtrr_range_type(&s, 4 * GiB, 1ull << 39), WB);
	/* sub-page and odd sizes widen to pages */
	assert_int_equal(mtrr_range_type(&s, 0xbffffff0, 0x10), WB);
	assert_int_equal(mtrr_range_type(&s, 0xbffffff0, 0x11), MIXED);
	assert_int_equal(mtrr_range_type(&s, 0xc0000123, 0), UC);
	/* Above 2^MAXPHYADDR the masks see only bits 39:12, so the PCI
	 * hole aliases there (no such memory exists; EPT refuses a top
	 * beyond MAXPHYADDR). */
	assert_int_equal(mtrr_range_type(&s, (1ull << 40) + 3 * GiB, 4 * KiB), UC);
	/* a range running past 2^64 stops there */
	s.var[0].mask &= ~MTRR_PHYSMASK_VALID;
	assert_int_equal(mtrr_range_type(&s, 1ull << 40, UINT64_MAX), WB);
	assert_int_equal(mtrr_range_type(&s, UINT64_MAX - 4095, 8192), WB);
}

static void test_disabled_is_uc(void **state)
{
	struct mtrr_state s;

	(void)state;
	ovmf_state(&s);
	s.def_type &= ~MTRR_DEF_E;  /* FE and the ranges no longer matter */
	assert_int_equal(mtrr_type_at(&s, 0), UC);
	assert_int_equal(mtrr_type_at(&s, 0xc0000), UC);
	assert_int_equal(mtrr_type_at(&s, 0x100000000), UC);
	assert_int_equal(mtrr_range_type(&s, 0, 64 * GiB), UC);

	ovmf_state(&s);
	s.present = false;  /* no MTRRs at all: mtrr_read leaves E clear */
	assert_int_equal(mtrr_range_type(&s, 0, 64 * GiB), UC);
}

static void test_fixed_disabled(void **state)
{
	struct mtrr_state s;

	(void)state;
	ovmf_state(&s);
	s.def_type &= ~MTRR_DEF_FE;
	/* Below 1 MiB the variable ranges and the default apply. */
	assert_int_equal(mtrr_type_at(&s, 0xa0000), WB);
	assert_int_equal(mtrr_type_at(&s, 0xc0000), WB);
	assert_int_equal(mtrr_range_type(&s, 0, 2 * MiB), WB);
	assert_int_equal(mtrr_range_type(&s, 0, 1 * GiB), WB);

	/* FE set but the CPU has no fixed ranges (cap.FIX = 0): same. */
	ovmf_state(&s);
	s.cap &= ~MTRRCAP_FIX;
	assert_int_equal(mtrr_type_at(&s, 0xa0000), WB);
	assert_int_equal(mtrr_range_type(&s, 0, 1 * GiB), WB);

	/* Fixed ranges with the UC variable range placed low: fixed win. */
	ovmf_state(&s);
	set_var(&s, 1, 0, 2 * MiB, UC);
	assert_int_equal(mtrr_type_at(&s, 0x0), WB);
	assert_int_equal(mtrr_type_at(&s, 0x100000), UC);
	assert_int_equal(mtrr_range_type(&s, 1 * MiB, 1 * MiB), UC);
}

static void test_overlap_uc_wins(void **state)
{
	struct mtrr_state s;

	(void)state;
	ovmf_state(&s);
	s.def_type = MTRR_DEF_E | UC;           /* real-firmware style: default UC */
	s.var_count = 0;
	set_var(&s, 0, 0, 4 * GiB, WB);
	set_var(&s, 1, 2 * GiB, 256 * MiB, UC);
	assert_int_equal(mtrr_type_at(&s, 2 * GiB - 4 * KiB), WB);
	assert_int_equal(mtrr_type_at(&s, 2 * GiB), UC);
	assert_int_equal(mtrr_type_at(&s, 2 * GiB + 256 * MiB), WB);
	assert_int_equal(mtrr_range_type(&s, 2 * GiB, 256 * MiB), UC);
	assert_int_equal(mtrr_range_type(&s, 2 * GiB, 1 * GiB), MIXED);
	assert_int_equal(mtrr_range_type(&s, 0, 4 * GiB), MIXED);
	assert_int_equal(mtrr_range_type(&s, 4 * GiB, 4 * GiB), UC);  /* default */
	/* UC over the whole block wins over any partial range inside it */
	set_var(&s, 2, 2 * GiB + 4 * MiB, 4 * KiB, WT);
	assert_int_equal(mtrr_range_type(&s, 2 * GiB, 256 * MiB), UC);
}

static void test_overlap_wt_wb(void **state)
{
	struct mtrr_state s;

	(void)state;
	ovmf_state(&s);
	s.var_count = 0;
	set_var(&s, 0, 0, 4 * GiB, WB);
	set_var(&s, 1, 1 * GiB, 1 * GiB, WT);
	assert_int_equal(mtrr_type_at(&s, 1 * GiB), WT);
	assert_int_equal(mtrr_range_type(&s, 1 * GiB, 1 * GiB), WT);
	assert_int_equal(mtrr_range_type(&s, 1 * GiB, 2 * GiB), MIXED);
	/* identical types overlapping: that type */
	set_var(&s, 2, 1 * GiB, 512 * MiB, WT);
	assert_int_equal(mtrr_range_type(&s, 1 * GiB, 1 * GiB), WT);
}

static void test_overlap_undefined_is_uc(void **state)
{
	struct mtrr_state s;

	(void)state;
	ovmf_state(&s);
	s.var_count = 0;
	set_var(&s, 0, 0, 4 * GiB, WB);
	set_var(&s, 1, 2 * GiB, 16 * MiB, WC);
	assert_int_equal(mtrr_type_at(&s, 2 * GiB), UC);
	assert_int_equal(mtrr_range_type(&s, 2 * GiB, 16 * MiB), UC);
	assert_int_equal(mtrr_range_type(&s, 2 * GiB, 32 * MiB), MIXED);
	/* WT + WP, and WT + WB + WP: undefined too */
	set_var(&s, 0, 0, 4 * GiB, WT);
	set_var(&s, 1, 2 * GiB, 16 * MiB, WP);
	assert_int_equal(mtrr_type_at(&s, 2 * GiB), UC);
	set_var(&s, 2, 2 * GiB, 1 * GiB, WB);
	assert_int_equal(mtrr_type_at(&s, 2 * GiB), UC);
	assert_int_equal(mtrr_type_at(&s, 2 * GiB + 16 * MiB), WT);
}

static void test_partial_ranges_that_change_nothing(void **state)
{
	struct mtrr_state s;

	(void)state;
	ovmf_state(&s);
	/* WB ranges inside the WB default do not split a 1 GiB block */
	set_var(&s, 1, 64 * MiB, 16 * MiB, WB);
	set_var(&s, 2, 5 * GiB + 4 * KiB, 4 * KiB, WB);
	assert_int_equal(mtrr_range_type(&s, 0 * GiB + 1 * MiB, 1 * GiB - 1 * MiB), WB);
	assert_int_equal(mtrr_range_type(&s, 5 * GiB, 1 * GiB), WB);
	/* a WT page inside a WT range inside WB default: uniform WT there */
	set_var(&s, 3, 8 * GiB, 1 * GiB, WT);
	set_var(&s, 4, 8 * GiB + 12 * KiB, 4 * KiB, WB);
	assert_int_equal(mtrr_range_type(&s, 8 * GiB, 1 * GiB), WT);
}

static void test_small_range_inside_block(void **state)
{
	struct mtrr_state s;

	(void)state;
	ovmf_state(&s);
	set_var(&s, 1, 0x12345000, 4 * KiB, UC);
	assert_int_equal(mtrr_type_at(&s, 0x12344000), WB);
	assert_int_equal(mtrr_type_at(&s, 0x12345000), UC);
	assert_int_equal(mtrr_type_at(&s, 0x12346000), WB);
	assert_int_equal(mtrr_range_type(&s, 0x12200000, 2 * MiB), MIXED);
	assert_int_equal(mtrr_range_type(&s, 0x12000000, 2 * MiB), WB);
	assert_int_equal(mtrr_range_type(&s, 0, 1 * GiB), MIXED);
	assert_int_equal(mtrr_range_type(&s, 1 * GiB, 1 * GiB), WB);
	assert_int_equal(mtrr_range_type(&s, 0x12346000, 0x1000000), WB);
}

static void test_noncontiguous_mask(void **state)
{
	struct mtrr_state s;

	(void)state;
	ovmf_state(&s);
	/* 12.11.3 allows it: bit 12 and bits 39:30 in the mask, base
	 * 4 GiB + 4 KiB: every odd page of [4 GiB, 5 GiB) is UC. */
	s.var[1].base = (4 * GiB + 4 * KiB) | UC;
	s.var[1].mask = (0xffc0000000ull | 0x1000) | MTRR_PHYSMASK_VALID;
	assert_int_equal(mtrr_type_at(&s, 4 * GiB), WB);
	assert_int_equal(mtrr_type_at(&s, 4 * GiB + 4 * KiB), UC);
	assert_int_equal(mtrr_type_at(&s, 5 * GiB - 4 * KiB), UC);
	assert_int_equal(mtrr_type_at(&s, 5 * GiB + 4 * KiB), WB);
	assert_int_equal(mtrr_range_type(&s, 4 * GiB, 8 * KiB), MIXED);
	assert_int_equal(mtrr_range_type(&s, 4 * GiB, 1 * GiB), MIXED);
	assert_int_equal(mtrr_range_type(&s, 5 * GiB, 1 * GiB), WB);
	/* the same mask with type WB inside WB: uniform, found without splitting */
	s.var[1].base = (4 * GiB + 4 * KiB) | WB;
	assert_int_equal(mtrr_range_type(&s, 4 * GiB, 1 * GiB), WB);
}

static void test_reserved_encodings_are_uc(void **state)
{
	struct mtrr_state s;

	(void)state;
	ovmf_state(&s);
	set_var(&s, 1, 8 * GiB, 1 * GiB, 2);
	assert_int_equal(mtrr_range_type(&s, 8 * GiB, 1 * GiB), UC);
	s.def_type = MTRR_DEF_E | 7;
	assert_int_equal(mtrr_type_at(&s, 16 * GiB), UC);
	s.fixed[0] = ALL8(3);
	s.def_type |= MTRR_DEF_FE;
	assert_int_equal(mtrr_type_at(&s, 0), UC);
	/* an invalid (V = 0) range is ignored */
	ovmf_state(&s);
	s.var[0].mask &= ~MTRR_PHYSMASK_VALID;
	assert_int_equal(mtrr_range_type(&s, 3 * GiB, 1 * GiB), WB);
}

static void test_maxphyaddr(void **state)
{
	struct mtrr_state s;

	(void)state;
	ovmf_state(&s);
	s.phys_addr_bits = 0;  /* no CPUID 0x80000008: 36 bits */
	assert_int_equal(mtrr_phys_bits(&s), 36);
	s.var_count = 1;
	s.var[0].base = 0xc0000000 | UC;
	s.var[0].mask = 0xfc0000000ull | MTRR_PHYSMASK_VALID;  /* bits 35:30 */
	assert_int_equal(mtrr_type_at(&s, 0xc0000000), UC);
	assert_int_equal(mtrr_range_type(&s, 3 * GiB, 1 * GiB), UC);
	assert_int_equal(mtrr_range_type(&s, 4 * GiB, 1 * GiB), WB);
	/* bits of the mask above MAXPHYADDR are not address bits */
	s.var[0].mask |= 0xff000000000ull;
	assert_int_equal(mtrr_range_type(&s, 3 * GiB, 1 * GiB), UC);
}

/* Pseudo-random contiguous configurations against the literal reference,
 * every aligned block from 4 KiB to 256 MiB over [0, 256 MiB), plus
 * unaligned ranges. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

#define SPACE_PAGES (256 * MiB / (4 * KiB))

static void test_against_reference(void **state)
{
	static const unsigned types[] = { UC, WC, WT, WP, WB };
	static int8_t page[SPACE_PAGES];
	struct mtrr_state s;

	(void)state;
	for (int cfg = 0; cfg < 24; cfg++) {
		memset(&s, 0, sizeof(s));
		s.present = true;
		s.phys_addr_bits = 36;
		s.cap = 0x508;
		s.def_type = MTRR_DEF_E | ((cfg & 1) ? MTRR_DEF_FE : 0) | types[rng() % 5];
		for (int i = 0; i < MTRR_NUM_FIXED; i++)
			s.fixed[i] = (rng() & 1) ? ALL8(WB) : ALL8(types[rng() % 5]);
		for (unsigned n = 0; n < 8; n++) {
			unsigned order = 12 + (unsigned)(rng() % 17);  /* 4 KiB .. 256 MiB */
			uint64_t base = (rng() % (256 * MiB)) & ~((1ull << order) - 1);

			/* bias toward the common types so overlaps stay defined sometimes */
			set_var(&s, n, base, 1ull << order, (rng() % 3) ? types[rng() % 5] : WB);
			if (rng() % 4 == 0)
				s.var[n].mask &= ~MTRR_PHYSMASK_VALID;
		}
		for (uint64_t p = 0; p < SPACE_PAGES; p++)
			page[p] = (int8_t)ref_type(&s, p * 4 * KiB);
		for (unsigned order = 12; order <= 28; order++) {
			uint64_t n = 1ull << (order - 12);

			for (uint64_t b = 0; b < SPACE_PAGES; b += n) {
				int want = page[b];

				for (uint64_t p = b + 1; p < b + n; p++)
					if (page[p] != want) {
						want = MIXED;
						break;
					}
				if (mtrr_range_type(&s, b * 4 * KiB, n * 4 * KiB) != want)
					fail_msg("cfg %d: [%#llx, +%#llx) gives %d, reference %d", cfg,
						 (unsigned long long)(b * 4 * KiB),
						 (unsigned long long)(n * 4 * KiB),
						 mtrr_range_type(&s, b * 4 * KiB, n * 4 * KiB), want);
			}
		}
		for (int r = 0; r < 200; r++) {
			uint64_t b = rng() % SPACE_PAGES, n = 1 + rng() % (SPACE_PAGES - b);
			int want = page[b];

			if ((r & 1) && n > 64)
				n = 1 + n % 64;
			for (uint64_t p = b + 1; p < b + n; p++)
				if (page[p] != want) {
					want = MIXED;
					break;
				}
			assert_int_equal(mtrr_range_type(&s, b * 4 * KiB, n * 4 * KiB), want);
		}
	}
}

static void test_read_through_msrs(void **state)
{
	struct mtrr_state s;

	(void)state;
	hw_fake_reset();
	hw_fake_set_msr(MSR_IA32_MTRRCAP, 0x508);
	hw_fake_set_msr(MSR_IA32_MTRR_DEF_TYPE, 0xc06);
	hw_fake_set_msr(MSR_IA32_MTRR_FIX64K_00000, ALL8(WB));
	hw_fake_set_msr(MSR_IA32_MTRR_FIX16K_80000, ALL8(WB));
	hw_fake_set_msr(MSR_IA32_MTRR_FIX16K_A0000, ALL8(UC));
	for (uint32_t i = 0; i < 8; i++)
		hw_fake_set_msr(MSR_IA32_MTRR_FIX4K_C0000 + i, ALL8(WP));
	for (uint32_t i = 0; i < 8; i++) {
		hw_fake_set_msr(MSR_IA32_MTRR_PHYSBASE(i), 0);
		hw_fake_set_msr(MSR_IA32_MTRR_PHYSMASK(i), 0);
	}
	hw_fake_set_msr(MSR_IA32_MTRR_PHYSBASE(0), 0xc0000000 | UC);
	hw_fake_set_msr(MSR_IA32_MTRR_PHYSMASK(0), 0xffc0000800ull);

	mtrr_read(&s, true, 40);
	assert_true(s.present);
	assert_int_equal(s.phys_addr_bits, 40);
	assert_int_equal(s.cap, 0x508);
	assert_int_equal(s.def_type, 0xc06);
	assert_int_equal(s.var_count, 8);
	assert_int_equal(s.var_dropped, 0);
	assert_int_equal(s.fixed[2], ALL8(UC));
	assert_int_equal(s.fixed[10], ALL8(WP));
	assert_int_equal(s.var[0].mask, 0xffc0000800ull);
	assert_int_equal(mtrr_type_at(&s, 0xa0000), UC);
	assert_int_equal(mtrr_type_at(&s, 0xf0000), WP);
	assert_int_equal(mtrr_range_type(&s, 3 * GiB, 1 * GiB), UC);
	assert_int_equal(mtrr_range_type(&s, 1 * GiB, 2 * GiB), WB);
	mtrr_log(&s);

	/* No FIX in the cap: the fixed MSRs (which would #GP) stay unread. */
	hw_fake_set_msr(MSR_IA32_MTRRCAP, 0x402);
	hw_fake_set_msr(MSR_IA32_MTRR_FIX16K_A0000, 0xdeadbeef);
	mtrr_read(&s, true, 0);
	assert_int_equal(s.phys_addr_bits, 36);
	assert_int_equal(s.var_count, 2);
	for (int i = 0; i < MTRR_NUM_FIXED; i++)
		assert_int_equal(s.fixed[i], 0);
	assert_int_equal(mtrr_type_at(&s, 0xa0000), WB);

	/* CPUID says no MTRRs: nothing is read, UC everywhere. */
	hw_fake_reset();
	mtrr_read(&s, false, 40);
	assert_false(s.present);
	assert_int_equal(s.cap, 0);
	assert_int_equal(mtrr_range_type(&s, 0, 64 * GiB), UC);
	mtrr_log(&s);
}

static void test_type_names(void **state)
{
	(void)state;
	assert_string_equal(mtrr_type_name(UC), "UC");
	assert_string_equal(mtrr_type_name(WB), "WB");
	assert_string_equal(mtrr_type_name(MIXED), "mixed");
	assert_string_equal(mtrr_type_name(2), "reserved");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ovmf_point_types),
		cmocka_unit_test(test_ovmf_ranges),
		cmocka_unit_test(test_disabled_is_uc),
		cmocka_unit_test(test_fixed_disabled),
		cmocka_unit_test(test_overlap_uc_wins),
		cmocka_unit_test(test_overlap_wt_wb),
		cmocka_unit_test(test_overlap_undefined_is_uc),
		cmocka_unit_test(test_partial_ranges_that_change_nothing),
		cmocka_unit_test(test_small_range_inside_block),
		cmocka_unit_test(test_noncontiguous_mask),
		cmocka_unit_test(test_reserved_encodings_are_uc),
		cmocka_unit_test(test_maxphyaddr),
		cmocka_unit_test(test_against_reference),
		cmocka_unit_test(test_read_through_msrs),
		cmocka_unit_test(test_type_names),
	};

	return cmocka_run_group_tests_name("test_mtrr", tests, NULL, NULL);
}
