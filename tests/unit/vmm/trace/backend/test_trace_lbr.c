/* SPDX-License-Identifier: MIT */
/*
 * test_trace_lbr.c - the LBR backend (vmm/trace/backend/lbr.c): MSR numbers and
 * bit positions, every record format byte for byte, LBR_SELECT and
 * IA32_LBR_CTL filters, model detection, reading the stack oldest first
 * across the TOS wrap, de-duplication across reads, the IP filter, and
 * PMIs (ours or not, streamlined or legacy freeze).  The LBR MSRs live in
 * the hw fake's table: tests seed slots and check what was cleared.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/lib/caps.h"
#include "vmm/trace/backend/lbr.h"
#include "vmm/trace/ring.h"
#include "vmm/vmx/vmx_defs.h"

#define Q(v) (uint8_t)((v) >> 0), (uint8_t)((v) >> 8), (uint8_t)((v) >> 16), \
	(uint8_t)((v) >> 24), (uint8_t)((v) >> 32), (uint8_t)((v) >> 40),    \
	(uint8_t)((v) >> 48), (uint8_t)((v) >> 56)

#define HDR 128u
#define DS  4096u
static uint64_t arena[(HDR + DS) / 8];
static struct tv_trace_ring *r = (struct tv_trace_ring *)arena;
static struct lbr_state st;

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	memset(arena, 0xee, sizeof(arena));
	memset(&st, 0, sizeof(st));
	assert_int_equal(trace_ring_init(r, sizeof(arena), 0, 0, TV_SOURCE_LBR,
					 TV_OVERFLOW_STOP, 0, 0), 0);
	return 0;
}

/* The 32-byte TV_REC_LBR at running position pos, byte for byte. */
static void assert_lbr_rec(uint64_t pos, uint8_t kind, uint32_t flags, uint64_t from,
			   uint64_t to, uint64_t info)
{
	const uint8_t want[32] = {
		TV_REC_LBR, kind, 32, 0,
		(uint8_t)flags, (uint8_t)(flags >> 8), (uint8_t)(flags >> 16), (uint8_t)(flags >> 24),
		Q(from), Q(to), Q(info),
	};

	assert_true(pos + 32 <= r->head);
	assert_memory_equal(trace_ring_data(r) + (pos & (DS - 1)), want, sizeof(want));
}

/* --- caps builders ------------------------------------------------------------------ */

static struct cpu_caps intel_cpu(uint32_t model)
{
	struct cpu_caps c;

	memset(&c, 0, sizeof(c));
	c.vendor_id = CPU_VENDOR_INTEL;
	c.family = 6;
	c.model = model;
	c.pdcm = true;
	return c;
}

static struct lbr_caps legacy_caps(uint32_t model, uint8_t fmt, uint32_t version)
{
	struct cpu_caps c = intel_cpu(model);
	struct lbr_caps lc;

	lbr_caps_decode(&c, 0x3000u | fmt, version, &lc);
	assert_true(lc.supported);
	return lc;
}

static struct lbr_caps arch_caps(void)
{
	struct cpu_caps c = intel_cpu(0x97);
	struct lbr_caps lc;

	c.arch_lbr = true;
	c.arch_lbr_depth_mask = 0x0f;        /* 8, 16, 24, 32 */
	c.arch_lbr_max_depth = 32;
	c.arch_lbr_cpl_filter = c.arch_lbr_branch_filter = c.arch_lbr_call_stack = true;
	c.arch_lbr_mispredict = c.arch_lbr_timed = c.arch_lbr_branch_type = true;
	lbr_caps_decode(&c, 0, 5, &lc);
	assert_true(lc.supported);
	return lc;
}

/* Seed every stack MSR of caps with 0 (so reads are never "unknown"). */
static void seed_empty(const struct lbr_caps *c, uint64_t tos)
{
	if (!c->arch)
		hw_fake_set_msr(LBR_MSR_TOS, tos);
	for (uint32_t i = 0; i < c->depth; i++) {
		hw_fake_set_msr(c->from_0 + i, 0);
		hw_fake_set_msr(c->to_0 + i, 0);
		if (c->has_info)
			hw_fake_set_msr(c->info_0 + i, 0);
	}
}

static void seed_slot(const struct lbr_caps *c, uint32_t slot, uint64_t from, uint64_t to,
		      uint64_t info)
{
	hw_fake_set_msr(c->from_0 + slot, from);
	hw_fake_set_msr(c->to_0 + slot, to);
	if (c->has_info)
		hw_fake_set_msr(c->info_0 + slot, info);
}

/* --- constants ------------------------------------------------------------------------- */

static void test_msr_numbers_and_bits(void **state)
{
	(void)state;
	/* Architectural LBR MSRs (SDM Vol. 4, Table 2-2). */
	assert_int_equal(LBR_MSR_ARCH_CTL, 0x14ce);
	assert_int_equal(LBR_MSR_ARCH_DEPTH, 0x14cf);
	assert_int_equal(LBR_MSR_ARCH_FROM_0, 0x1500);
	assert_int_equal(LBR_MSR_ARCH_TO_0, 0x1600);
	assert_int_equal(LBR_MSR_ARCH_INFO_0, 0x1200);
	/* Model-specific stack. */
	assert_int_equal(LBR_MSR_SELECT, 0x1c8);
	assert_int_equal(LBR_MSR_TOS, 0x1c9);
	assert_int_equal(LBR_MSR_NHM_FROM_0, 0x680);
	assert_int_equal(LBR_MSR_NHM_TO_0, 0x6c0);
	assert_int_equal(LBR_MSR_INFO_0, 0xdc0);
	assert_int_equal(LBR_MSR_ATOM_FROM_0, 0x40);
	assert_int_equal(LBR_MSR_ATOM_TO_0, 0x60);
	assert_int_equal(LBR_MSR_DEBUGCTL, 0x1d9);
	assert_int_equal(LBR_MSR_PERF_CAPABILITIES, 0x345);
	assert_int_equal(LBR_MSR_PERF_GLOBAL_STATUS, 0x38e);
	assert_int_equal(LBR_MSR_PERF_GLOBAL_STATUS_RESET, 0x390);
	/* DEBUGCTL: LBR 0, BTF 1, FREEZE_LBRS_ON_PMI 11. */
	assert_int_equal(LBR_DEBUGCTL_LBR, 0x1);
	assert_int_equal(LBR_DEBUGCTL_BTF, 0x2);
	assert_int_equal(LBR_DEBUGCTL_FREEZE_LBRS_ON_PMI, 0x800);
	assert_int_equal(LBR_GLOBAL_STATUS_LBR_FRZ, 0x0400000000000000ull);
	/* LBR_INFO. */
	assert_int_equal(LBR_INFO_MISPRED, 0x8000000000000000ull);
	assert_int_equal(LBR_INFO_IN_TSX, 0x4000000000000000ull);
	assert_int_equal(LBR_INFO_TSX_ABORT, 0x2000000000000000ull);
	assert_int_equal(LBR_INFO_CYC_CNT_VALID, 0x1000000000000000ull);
	assert_int_equal(LBR_INFO_BR_TYPE_MASK, 0x0f00000000000000ull);
	assert_int_equal(LBR_INFO_CYC_CNT_MASK, 0xffff);
	/* The VMCS field for the guest's IA32_LBR_CTL (64-bit guest state, index 11). */
	assert_int_equal(LBR_VMCS_GUEST_IA32_LBR_CTL, 0x2816);
	assert_int_equal(LBR_VMCS_GUEST_IA32_LBR_CTL, VMCS_GUEST_IA32_DEBUGCTL + 2 * 10);
}

/* --- record formats --------------------------------------------------------------------- */

struct fmt_vec {
	uint8_t fmt;
	uint64_t from_raw, to_raw, info_raw;
	uint64_t from, to;
	uint32_t flags;
	uint16_t cycles;
	bool cycles_valid;
};

static const struct fmt_vec fmt_vecs[] = {
	/* 0: one MSR, from in 31:0, to in 63:32; to_raw ignored. */
	{ 0, 0x8000123400401000ull, 0xdeadull, 0, 0x00401000ull, 0x80001234ull, 0, 0, false },
	/* 1, 2: plain 64-bit addresses; bit 63 is an address bit. */
	{ 1, 0xffffffff81000010ull, 0x00007f0000001000ull, 0,
	  0xffffffff81000010ull, 0x00007f0000001000ull, 0, 0, false },
	{ 2, 0xffffffff81000010ull, 0xffffffff81000020ull, 0,
	  0xffffffff81000010ull, 0xffffffff81000020ull, 0, 0, false },
	/* 3: bit 63 mispredicted, 62:0 sign-extended. */
	{ 3, 0x8000000000401000ull, 0x402000ull, 0, 0x401000ull, 0x402000ull, TV_BRF_MISPRED, 0, false },
	{ 3, 0x7fffffff81000010ull, 0xffffffff81000020ull, 0,
	  0xffffffff81000010ull, 0xffffffff81000020ull, 0, 0, false },
	{ 3, 0xffffffff81000010ull, 0x1ull, 0, 0xffffffff81000010ull, 0x1ull, TV_BRF_MISPRED, 0, false },
	/* 4: 63 mispred, 62 in TSX, 61 TSX abort, 60:0 sign-extended. */
	{ 4, 0xe000000000401000ull, 0x402000ull, 0, 0x401000ull, 0x402000ull,
	  TV_BRF_MISPRED | TV_BRF_IN_TSX | TV_BRF_TSX_ABORT, 0, false },
	{ 4, 0x1fffffff81000000ull, 0xffffffff81000040ull, 0,
	  0xffffffff81000000ull, 0xffffffff81000040ull, 0, 0, false },
	{ 4, 0x5fffffff81000000ull, 0x10ull, 0, 0xffffffff81000000ull, 0x10ull, TV_BRF_IN_TSX, 0, false },
	{ 4, 0x3fffffff81000000ull, 0x10ull, 0, 0xffffffff81000000ull, 0x10ull, TV_BRF_TSX_ABORT, 0, false },
	/* 5: 64-bit addresses, flags and cycles in LBR_INFO. */
	{ 5, 0xffffffff81000010ull, 0xffffffff81000020ull, 0xe000000000000123ull,
	  0xffffffff81000010ull, 0xffffffff81000020ull,
	  TV_BRF_MISPRED | TV_BRF_IN_TSX | TV_BRF_TSX_ABORT, 0x123, true },
	{ 5, 0x401000ull, 0x402000ull, 0x8000000000000007ull, 0x401000ull, 0x402000ull,
	  TV_BRF_MISPRED, 7, true },
	/* 6: FROM 63 mispred; TO 63:48 cycles, 47:0 sign-extended. */
	{ 6, 0x8000000000401000ull, 0x0007800000002000ull, 0,
	  0x401000ull, 0xffff800000002000ull, TV_BRF_MISPRED, 7, true },
	{ 6, 0x7fffffff81000000ull, 0xffff000000401000ull, 0,
	  0xffffffff81000000ull, 0x401000ull, 0, 0xffff, true },
	/* 7: like 5, but bits 62:61 of LBR_INFO are not TSX flags. */
	{ 7, 0x401000ull, 0x402000ull, 0xe000000000000010ull, 0x401000ull, 0x402000ull,
	  TV_BRF_MISPRED, 0x10, true },
};

static void test_format_decoding(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(fmt_vecs) / sizeof(fmt_vecs[0]); i++) {
		const struct fmt_vec *v = &fmt_vecs[i];
		struct lbr_caps c = legacy_caps(0x55, v->fmt, 4);
		struct lbr_entry e;

		assert_int_equal(c.format, v->fmt);
		assert_true(lbr_decode(&c, v->from_raw, v->to_raw, v->info_raw, &e));
		if (e.from != v->from || e.to != v->to || e.flags != v->flags ||
		    e.cycles != v->cycles || e.cycles_valid != v->cycles_valid)
			fail_msg("vector %zu (format %u): from %#llx to %#llx flags %#x cycles %u/%d",
				 i, v->fmt, (unsigned long long)e.from, (unsigned long long)e.to,
				 e.flags, e.cycles, e.cycles_valid);
		assert_int_equal(e.info, c.has_info ? v->info_raw : 0);
		assert_int_equal(e.kind, TV_BR_UNKNOWN);
	}
}

static void test_format_has_info_and_empty(void **state)
{
	struct lbr_entry e;

	(void)state;
	for (uint8_t f = 0; f <= LBR_FMT_MAX_KNOWN; f++) {
		struct lbr_caps c = legacy_caps(0x55, f, 4);

		assert_int_equal(c.has_info, f == 5 || f == 7);
		assert_int_equal(c.info_0, c.has_info ? 0xdc0 : 0);
		assert_int_equal(c.mispred, f >= 3);
		assert_false(lbr_decode(&c, 0, 0, 0xffff, &e));
	}
	/* Format 0 ignores TO: a zero FROM is empty whatever TO holds. */
	struct lbr_caps c0 = legacy_caps(0x1a, 0, 1);
	assert_false(lbr_decode(&c0, 0, 0x1234, 0, &e));
}

static void test_arch_info_decoding(void **state)
{
	struct lbr_caps c = arch_caps();
	struct lbr_entry e;
	uint64_t info;

	(void)state;
	/* MISPRED 63, CYC_CNT_VALID 60, BR_TYPE 59:56 = 4 (near relative call), cycles 0x55. */
	info = (1ull << 63) | (1ull << 60) | (4ull << 56) | 0x55;
	assert_int_equal(info, 0x9400000000000055ull);
	assert_true(lbr_decode(&c, 0xffffffff81000000ull, 0xffffffff81001000ull, info, &e));
	assert_int_equal(e.from, 0xffffffff81000000ull);
	assert_int_equal(e.to, 0xffffffff81001000ull);
	assert_int_equal(e.flags, TV_BRF_MISPRED);
	assert_int_equal(e.kind, TV_BR_CALL);
	assert_int_equal(e.cycles, 0x55);
	assert_true(e.cycles_valid);
	assert_int_equal(e.info, info);
	/* No CYC_CNT_VALID: the count is not valid; TSX bits are flags. */
	assert_true(lbr_decode(&c, 1, 2, (1ull << 62) | (1ull << 61) | (5ull << 56) | 9, &e));
	assert_false(e.cycles_valid);
	assert_int_equal(e.flags, TV_BRF_IN_TSX | TV_BRF_TSX_ABORT);
	assert_int_equal(e.kind, TV_BR_RET);
	/* BR_TYPE map. */
	assert_int_equal(lbr_arch_br_type_kind(0), TV_BR_JCC);
	assert_int_equal(lbr_arch_br_type_kind(1), TV_BR_JMP_IND);
	assert_int_equal(lbr_arch_br_type_kind(2), TV_BR_JMP);
	assert_int_equal(lbr_arch_br_type_kind(3), TV_BR_CALL_IND);
	assert_int_equal(lbr_arch_br_type_kind(4), TV_BR_CALL);
	assert_int_equal(lbr_arch_br_type_kind(5), TV_BR_RET);
	assert_int_equal(lbr_arch_br_type_kind(8), TV_BR_UNKNOWN);
	/* Without CPUID.1CH:ECX[2] the type field is not used. */
	c.branch_type = false;
	assert_true(lbr_decode(&c, 1, 2, 4ull << 56, &e));
	assert_int_equal(e.kind, TV_BR_UNKNOWN);
}

/* --- filters ------------------------------------------------------------------------------ */

static void test_select_bits(void **state)
{
	struct trace_filter f;

	(void)state;
	trace_filter_all(&f);
	assert_int_equal(lbr_select_bits(&f, LBR_KINDS_ALL), 0);
	assert_int_equal(lbr_select_bits(NULL, LBR_KINDS_ALL), 0);
	f.cpl = TRACE_CPL_KERNEL;
	assert_int_equal(lbr_select_bits(&f, LBR_KINDS_ALL), LBR_SEL_CPL_NEQ_0);
	assert_int_equal(lbr_select_bits(&f, LBR_KINDS_ALL), 0x2);
	f.cpl = TRACE_CPL_USER;
	assert_int_equal(lbr_select_bits(&f, LBR_KINDS_ALL), 0x1);
	f.cpl = 0;
	assert_int_equal(lbr_select_bits(&f, LBR_KINDS_ALL), 0x3);
	/* Keep calls and returns: suppress JCC 2, IND_CALL 4, IND_JMP 6, REL_JMP 7, FAR 8. */
	f.cpl = TRACE_CPL_ALL;
	assert_int_equal(lbr_select_bits(&f, LBR_KIND(TV_BR_CALL) | LBR_KIND(TV_BR_RET)), 0x1d4);
	/* Interrupts only: FAR_BRANCH kept, every near class suppressed. */
	assert_int_equal(lbr_select_bits(&f, LBR_KIND(TV_BR_INTERRUPT)), 0xfc);
	/* Each near kind clears exactly its own bit. */
	assert_int_equal(lbr_select_bits(&f, 0xffffffffu & ~LBR_KIND(TV_BR_JCC)), LBR_SEL_JCC);
	assert_int_equal(lbr_select_bits(&f, 0xffffffffu & ~LBR_KIND(TV_BR_JMP)), 1u << 7);
	assert_int_equal(lbr_select_bits(&f, 0xffffffffu & ~LBR_KIND(TV_BR_JMP_IND)), 1u << 6);
	assert_int_equal(lbr_select_bits(&f, 0xffffffffu & ~LBR_KIND(TV_BR_CALL)), 1u << 3);
	assert_int_equal(lbr_select_bits(&f, 0xffffffffu & ~LBR_KIND(TV_BR_CALL_IND)), 1u << 4);
	assert_int_equal(lbr_select_bits(&f, 0xffffffffu & ~LBR_KIND(TV_BR_RET)), 1u << 5);
	/* CALLSTACK (bit 9) is never set. */
	assert_int_equal(lbr_select_bits(&f, LBR_KIND(TV_BR_UNKNOWN)) & LBR_SEL_EN_CALLSTACK, 0);
}

static void test_arch_ctl_bits(void **state)
{
	struct lbr_caps c = arch_caps();
	struct trace_filter f;

	(void)state;
	trace_filter_all(&f);
	assert_int_equal(lbr_arch_ctl_bits(&c, &f, LBR_KINDS_ALL), 0x7f0007);
	f.cpl = TRACE_CPL_KERNEL;
	assert_int_equal(lbr_arch_ctl_bits(&c, &f, LBR_KINDS_ALL), 0x7f0003);
	f.cpl = TRACE_CPL_USER;
	assert_int_equal(lbr_arch_ctl_bits(&c, &f, LBR_KINDS_ALL), 0x7f0005);
	f.cpl = TRACE_CPL_ALL;
	/* Calls and returns: REL_CALL 19, RET 21. */
	assert_int_equal(lbr_arch_ctl_bits(&c, &f, LBR_KIND(TV_BR_CALL) | LBR_KIND(TV_BR_RET)),
			 0x280007);
	assert_int_equal(lbr_arch_ctl_bits(&c, &f, LBR_KIND(TV_BR_JCC)), 0x10007);
	assert_int_equal(lbr_arch_ctl_bits(&c, &f, LBR_KIND(TV_BR_JMP)), 0x20007);
	assert_int_equal(lbr_arch_ctl_bits(&c, &f, LBR_KIND(TV_BR_JMP_IND)), 0x40007);
	assert_int_equal(lbr_arch_ctl_bits(&c, &f, LBR_KIND(TV_BR_CALL_IND)), 0x100007);
	assert_int_equal(lbr_arch_ctl_bits(&c, &f, LBR_KIND(TV_BR_SYSCALL)), 0x400007);
	/* Filtering not enumerated: only LBREn. */
	c.cpl_filter = c.branch_filter = false;
	assert_int_equal(lbr_arch_ctl_bits(&c, &f, LBR_KIND(TV_BR_JCC)), 0x1);
}

static void test_vmx_controls(void **state)
{
	struct lbr_caps legacy = legacy_caps(0x55, 5, 4), arch = arch_caps();
	uint32_t entry, exit;

	(void)state;
	lbr_vmx_controls(&legacy, &entry, &exit);
	assert_int_equal(entry, 0x4);          /* load debug controls */
	assert_int_equal(exit, 0x4);           /* save debug controls */
	lbr_vmx_controls(&arch, &entry, &exit);
	assert_int_equal(entry, 0x200004);     /* + load guest IA32_LBR_CTL (21) */
	assert_int_equal(exit, 0x4000004);     /* + clear IA32_LBR_CTL (26) */
}

/* --- detection ------------------------------------------------------------------------------ */

static void test_caps_models(void **state)
{
	static const struct { uint8_t model, depth; uint16_t from, to; } rows[] = {
		{ 0x1a, 16, 0x680, 0x6c0 }, { 0x1e, 16, 0x680, 0x6c0 }, { 0x2e, 16, 0x680, 0x6c0 },
		{ 0x25, 16, 0x680, 0x6c0 }, { 0x2c, 16, 0x680, 0x6c0 }, { 0x2f, 16, 0x680, 0x6c0 },
		{ 0x2a, 16, 0x680, 0x6c0 }, { 0x2d, 16, 0x680, 0x6c0 }, { 0x3a, 16, 0x680, 0x6c0 },
		{ 0x3e, 16, 0x680, 0x6c0 }, { 0x3c, 16, 0x680, 0x6c0 }, { 0x3f, 16, 0x680, 0x6c0 },
		{ 0x45, 16, 0x680, 0x6c0 }, { 0x46, 16, 0x680, 0x6c0 }, { 0x3d, 16, 0x680, 0x6c0 },
		{ 0x4f, 16, 0x680, 0x6c0 }, { 0x56, 16, 0x680, 0x6c0 },
		{ 0x4e, 32, 0x680, 0x6c0 }, { 0x5e, 32, 0x680, 0x6c0 }, { 0x55, 32, 0x680, 0x6c0 },
		{ 0x8e, 32, 0x680, 0x6c0 }, { 0x9e, 32, 0x680, 0x6c0 }, { 0xa5, 32, 0x680, 0x6c0 },
		{ 0x7d, 32, 0x680, 0x6c0 }, { 0x7e, 32, 0x680, 0x6c0 },
		{ 0x6a, 32, 0x680, 0x6c0 }, { 0x6c, 32, 0x680, 0x6c0 },
		{ 0x37, 8, 0x40, 0x60 }, { 0x4d, 8, 0x40, 0x60 }, { 0x4c, 8, 0x40, 0x60 },
		{ 0x5c, 32, 0x680, 0x6c0 }, { 0x7a, 32, 0x680, 0x6c0 }, { 0x57, 8, 0x680, 0x6c0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct lbr_model *m = lbr_model_lookup(6, rows[i].model);

		assert_non_null(m);
		assert_int_equal(m->depth, rows[i].depth);
		assert_int_equal(m->from_0, rows[i].from);
		assert_int_equal(m->to_0, rows[i].to);
	}
	assert_null(lbr_model_lookup(6, 0x0f));   /* Core 2: not in the table */
	assert_null(lbr_model_lookup(15, 0x55));
}

static void test_caps_decode(void **state)
{
	struct cpu_caps c = intel_cpu(0x55);
	struct lbr_caps lc;

	(void)state;
	/* Skylake-SP, format 5, perfmon v4. */
	lbr_caps_decode(&c, 0x33c5, 4, &lc);
	assert_true(lc.supported);
	assert_null(lc.reason);
	assert_false(lc.arch);
	assert_int_equal(lc.format, 5);
	assert_int_equal(lc.depth, 32);
	assert_int_equal(lc.tos_msr, 0x1c9);
	assert_int_equal(lc.from_0, 0x680);
	assert_int_equal(lc.to_0, 0x6c0);
	assert_int_equal(lc.info_0, 0xdc0);
	assert_true(lc.has_info && lc.has_select && lc.streamlined_freeze && lc.timed);
	assert_string_equal(lc.name, "Skylake-SP/Cascade Lake/Cooper Lake");
	/* Haswell, format 4, perfmon v3: legacy freeze. */
	c = intel_cpu(0x3c);
	lbr_caps_decode(&c, 0x32c4, 3, &lc);
	assert_true(lc.supported);
	assert_int_equal(lc.depth, 16);
	assert_false(lc.has_info);
	assert_false(lc.streamlined_freeze);
	/* Silvermont: 8 at 0x40/0x60. */
	c = intel_cpu(0x4d);
	lbr_caps_decode(&c, 0x0, 3, &lc);
	assert_true(lc.supported);
	assert_int_equal(lc.depth, 8);
	assert_int_equal(lc.from_0, 0x40);
	/* Refusals, each with its reason. */
	c = intel_cpu(0x55);
	c.vendor_id = CPU_VENDOR_AMD;
	lbr_caps_decode(&c, 5, 4, &lc);
	assert_false(lc.supported);
	assert_string_equal(lc.reason, "not an Intel CPU");
	c = intel_cpu(0x55);
	c.pdcm = false;
	lbr_caps_decode(&c, 5, 4, &lc);
	assert_false(lc.supported);
	assert_non_null(strstr(lc.reason, "PDCM"));
	c = intel_cpu(0x55);
	lbr_caps_decode(&c, 0x08, 4, &lc);
	assert_false(lc.supported);
	assert_non_null(strstr(lc.reason, "unknown LBR format"));
	c = intel_cpu(0x0f);
	lbr_caps_decode(&c, 0x01, 2, &lc);
	assert_false(lc.supported);
	assert_non_null(strstr(lc.reason, "not in the LBR table"));
	c = intel_cpu(0x55);
	c.family = 15;
	lbr_caps_decode(&c, 0x05, 2, &lc);
	assert_false(lc.supported);
	/* Arch LBR: depth from leaf 0x1C, no TOS, entry MSRs at 0x1500/0x1600/0x1200. */
	lc = arch_caps();
	assert_true(lc.arch);
	assert_int_equal(lc.format, LBR_FMT_ARCH);
	assert_int_equal(lc.depth, 32);
	assert_int_equal(lc.from_0, 0x1500);
	assert_int_equal(lc.to_0, 0x1600);
	assert_int_equal(lc.info_0, 0x1200);
	assert_true(lc.streamlined_freeze);
	c = intel_cpu(0x97);
	c.arch_lbr = true;
	lbr_caps_decode(&c, 0, 5, &lc);
	assert_false(lc.supported);
	assert_non_null(strstr(lc.reason, "depth"));
}

static void test_probe_through_the_fake(void **state)
{
	struct lbr_caps lc;

	(void)state;
	hw_fake_set_cpuid(0, 0, 0x16, 0x756e6547, 0x6c65746e, 0x49656e69);
	/* Family 6 model 0x55 stepping 4; PDCM (ECX bit 15). */
	hw_fake_set_cpuid(1, 0, 0x00050654, 0, 1u << 15, 0);
	hw_fake_set_cpuid(0xa, 0, 0x07300404, 0, 0, 0);   /* perfmon version 4 */
	hw_fake_set_msr(LBR_MSR_PERF_CAPABILITIES, 0x33c5);
	lbr_probe(&lc);
	assert_true(lc.supported);
	assert_int_equal(lc.model, 0x55);
	assert_int_equal(lc.format, 5);
	assert_true(lc.streamlined_freeze);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
}

/* --- reading the stack --------------------------------------------------------------------------- */

static void test_start_programs_select_and_clears(void **state)
{
	struct lbr_caps c = legacy_caps(0x3c, 4, 3);
	struct trace_filter f;

	(void)state;
	trace_filter_all(&f);
	f.cpl = TRACE_CPL_KERNEL;
	seed_empty(&c, 0);
	seed_slot(&c, 5, 0x1111, 0x2222, 0);   /* left over from before the start */
	assert_int_equal(lbr_start(&st, &c, &f, LBR_KINDS_ALL, 0), 0);
	assert_int_equal(hw_fake_get_msr(LBR_MSR_SELECT), LBR_SEL_CPL_NEQ_0);
	assert_int_equal(st.ctl, 0x2);
	assert_int_equal(hw_fake_get_msr(0x685), 0);
	assert_int_equal(hw_fake_get_msr(0x6c5), 0);
	assert_int_equal(lbr_read(&st, r, NULL), 0);
	assert_int_equal(r->head, 0);
	/* Errors. */
	assert_int_equal(lbr_start(NULL, &c, &f, 0, 0), LBR_ERR_INVAL);
	c.supported = false;
	assert_int_equal(lbr_start(&st, &c, &f, 0, 0), LBR_ERR_UNSUPPORTED);
	assert_int_equal(lbr_read(NULL, r, NULL), LBR_ERR_INVAL);
	assert_string_equal(lbr_strerror(LBR_ERR_INVAL), "invalid argument or LBR not started");
	assert_string_equal(lbr_strerror(LBR_ERR_UNSUPPORTED), "no usable LBR on this CPU");
	assert_string_equal(lbr_strerror(0), "success");
	assert_string_equal(lbr_strerror(-99), "unknown error");
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
}

/* 16 entries, format 4: ten records ending at TOS 3 wrap from slot 10 to slot 3. */
static void test_tos_wrap_16(void **state)
{
	struct lbr_caps c = legacy_caps(0x3c, 4, 3);

	(void)state;
	seed_empty(&c, 0);
	assert_int_equal(lbr_start(&st, &c, NULL, LBR_KINDS_ALL, 0), 0);
	hw_fake_set_msr(LBR_MSR_TOS, 3);
	for (uint32_t k = 0; k < 10; k++) {
		uint32_t slot = (3 + 16 - 9 + k) % 16;   /* k = 0 oldest at slot 10 */
		uint64_t from = 0x1000 + k;

		if (k == 4)
			from |= LBR_FROM_MISPRED;
		seed_slot(&c, slot, from, 0x2000 + k, 0);
	}
	assert_int_equal(lbr_read(&st, r, NULL), 10);
	for (uint32_t k = 0; k < 10; k++)
		assert_lbr_rec(32 * k, TV_BR_UNKNOWN, k == 4 ? TV_BRF_MISPRED : 0,
			       0x1000 + k, 0x2000 + k, 0);
	assert_int_equal(r->head, 320);
	assert_int_equal(st.stats.entries, 10);
	assert_int_equal(st.stats.recorded, 10);
	assert_int_equal(st.stats.full_reads, 0);
	/* Every slot read is empty now; TOS is left alone. */
	for (uint32_t s = 0; s < 16; s++) {
		assert_int_equal(hw_fake_get_msr(0x680 + s), 0);
		assert_int_equal(hw_fake_get_msr(0x6c0 + s), 0);
	}
	assert_int_equal(hw_fake_get_msr(LBR_MSR_TOS), 3);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
}

/* 32 entries with INFO, all valid, TOS 7: the oldest is slot 8. */
static void test_full_stack_32(void **state)
{
	struct lbr_caps c = legacy_caps(0x55, 5, 4);

	(void)state;
	seed_empty(&c, 0);
	assert_int_equal(lbr_start(&st, &c, NULL, LBR_KINDS_ALL, 0), 0);
	hw_fake_set_msr(LBR_MSR_TOS, 7);
	for (uint32_t s = 0; s < 32; s++)
		seed_slot(&c, s, 0xffffffff81000000ull + s, 0xffffffff82000000ull + s,
			  (s == 8 ? LBR_INFO_MISPRED : 0) | s);
	assert_int_equal(lbr_read(&st, r, NULL), 32);
	for (uint32_t k = 0; k < 32; k++) {
		uint32_t s = (8 + k) % 32;

		/* The oldest of a full read says older branches may be lost. */
		assert_lbr_rec(32 * k, TV_BR_UNKNOWN,
			       (s == 8 ? TV_BRF_MISPRED : 0) | (k == 0 ? TV_BRF_LBR_FULL : 0),
			       0xffffffff81000000ull + s, 0xffffffff82000000ull + s,
			       (s == 8 ? LBR_INFO_MISPRED : 0) | s);
	}
	assert_int_equal(st.stats.full_reads, 1);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
}

/* The same records never reach the ring twice. */
static void test_dedup_across_reads(void **state)
{
	struct lbr_caps c = legacy_caps(0x3c, 4, 3);

	(void)state;
	seed_empty(&c, 0);
	assert_int_equal(lbr_start(&st, &c, NULL, LBR_KINDS_ALL, 0), 0);
	hw_fake_set_msr(LBR_MSR_TOS, 15);
	seed_slot(&c, 14, 0x100, 0x200, 0);
	seed_slot(&c, 15, 0x101, 0x201, 0);
	assert_int_equal(lbr_read(&st, r, NULL), 2);
	/* Nothing happened: nothing new. */
	assert_int_equal(lbr_read(&st, r, NULL), 0);
	assert_int_equal(lbr_read(&st, r, NULL), 0);
	/* Three more branches: TOS wraps 15 -> 2. */
	seed_slot(&c, 0, 0x102, 0x202, 0);
	seed_slot(&c, 1, 0x103, 0x203, 0);
	seed_slot(&c, 2, 0x104, 0x204, 0);
	hw_fake_set_msr(LBR_MSR_TOS, 2);
	assert_int_equal(lbr_read(&st, r, NULL), 3);
	for (uint32_t k = 0; k < 5; k++)
		assert_lbr_rec(32 * k, TV_BR_UNKNOWN, 0, 0x100 + k, 0x200 + k, 0);
	assert_int_equal(r->head, 5 * 32);
	assert_int_equal(st.stats.reads, 4);
	assert_int_equal(st.stats.entries, 5);
}

/* Arch LBR: entry 0 is the newest; a DEPTH write empties the stack. */
static void test_arch_read(void **state)
{
	struct lbr_caps c = arch_caps();
	const struct hw_fake_msr_write *w;

	(void)state;
	seed_empty(&c, 0);
	assert_int_equal(lbr_start(&st, &c, NULL, LBR_KINDS_ALL, 0), 0);
	w = hw_fake_msr_write_log(0);
	assert_non_null(w);
	assert_int_equal(w->msr, 0x14cf);
	assert_int_equal(w->value, 32);
	assert_int_equal(st.ctl, 0x7f0007);
	for (uint32_t i = 0; i < 5; i++)
		seed_slot(&c, i, 0x5000 - i, 0x6000 - i, (2ull << 56) | (1ull << 60) | (10 + i));
	assert_int_equal(lbr_read(&st, r, NULL), 5);
	for (uint32_t k = 0; k < 5; k++) {
		uint32_t i = 4 - k;

		assert_lbr_rec(32 * k, TV_BR_JMP, 0, 0x5000 - i, 0x6000 - i,
			       (2ull << 56) | (1ull << 60) | (10 + i));
	}
	w = hw_fake_msr_write_log(0);
	assert_int_equal(w->msr, 0x14cf);
	assert_int_equal(w->value, 32);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
}

static void test_ip_filter(void **state)
{
	struct lbr_caps c = legacy_caps(0x3c, 3, 3);
	struct trace_filter f;

	(void)state;
	trace_filter_all(&f);
	f.nranges = 1;
	f.ranges[0].lo = 0x400000;
	f.ranges[0].hi = 0x400fff;
	seed_empty(&c, 0);
	assert_int_equal(lbr_start(&st, &c, &f, LBR_KINDS_ALL, 0), 0);
	hw_fake_set_msr(LBR_MSR_TOS, 3);
	seed_slot(&c, 0, 0x400010, 0x900000, 0);   /* from in range */
	seed_slot(&c, 1, 0x900000, 0x910000, 0);   /* neither */
	seed_slot(&c, 2, 0x910000, 0x400800, 0);   /* to in range */
	seed_slot(&c, 3, 0x920000, 0x401000, 0);   /* just past the range */
	assert_int_equal(lbr_read(&st, r, &f), 2);
	assert_lbr_rec(0, TV_BR_UNKNOWN, 0, 0x400010, 0x900000, 0);
	assert_lbr_rec(32, TV_BR_UNKNOWN, 0, 0x910000, 0x400800, 0);
	assert_int_equal(st.stats.filtered, 2);
	assert_int_equal(st.stats.entries, 4);
	/* Filtered records are consumed too. */
	assert_int_equal(hw_fake_get_msr(0x681), 0);
	assert_int_equal(lbr_read(&st, r, &f), 0);
}

static void test_ring_full_still_consumes(void **state)
{
	struct lbr_caps c = legacy_caps(0x55, 5, 4);
	uint64_t total = 0;

	(void)state;
	seed_empty(&c, 0);
	assert_int_equal(lbr_start(&st, &c, NULL, LBR_KINDS_ALL, 0), 0);
	for (int round = 0; round < 5; round++) {
		for (uint32_t s = 0; s < 32; s++)
			seed_slot(&c, s, 0x1000 + s, 0x2000 + s, 0);
		assert_true(lbr_read(&st, r, NULL) >= 0);
		total += 32;
		for (uint32_t s = 0; s < 32; s++)
			assert_int_equal(hw_fake_get_msr(0x680 + s), 0);
	}
	assert_int_equal(st.stats.recorded + st.stats.dropped, total);
	assert_int_equal(st.stats.recorded, DS / 32);
	assert_int_equal(r->lost_records, st.stats.dropped);
}

static void test_lbr_top(void **state)
{
	struct lbr_caps c = legacy_caps(0x3c, 4, 3);
	struct lbr_entry e;

	(void)state;
	seed_empty(&c, 0);
	assert_false(lbr_top(&st, &e));   /* not started */
	assert_int_equal(lbr_start(&st, &c, NULL, LBR_KINDS_ALL, 0), 0);
	assert_false(lbr_top(&st, &e));   /* empty */
	hw_fake_set_msr(LBR_MSR_TOS, 9);
	seed_slot(&c, 9, 0x8000000000401000ull, 0x402000, 0);
	seed_slot(&c, 8, 0x300000, 0x301000, 0);
	assert_true(lbr_top(&st, &e));
	assert_int_equal(e.from, 0x401000);
	assert_int_equal(e.to, 0x402000);
	assert_int_equal(e.flags, TV_BRF_MISPRED);
	/* Not consumed. */
	assert_int_equal(hw_fake_get_msr(0x689), 0x8000000000401000ull);
}

/* --- DEBUGCTL and PMIs --------------------------------------------------------------------------- */

static void test_guest_debugctl(void **state)
{
	struct lbr_caps legacy = legacy_caps(0x55, 5, 4), arch = arch_caps();

	(void)state;
	seed_empty(&legacy, 0);
	assert_int_equal(lbr_guest_debugctl(&st, 0x40), 0x40);    /* not started */
	assert_int_equal(lbr_start(&st, &legacy, NULL, LBR_KINDS_ALL, 0), 0);
	assert_int_equal(lbr_guest_debugctl(&st, 0x40), 0x41);    /* LBR, no PMI: no freeze */
	assert_int_equal(lbr_start(&st, &legacy, NULL, LBR_KINDS_ALL, 1ull << 32), 0);
	assert_int_equal(lbr_guest_debugctl(&st, 0), 0x801);
	seed_empty(&arch, 0);
	assert_int_equal(lbr_start(&st, &arch, NULL, LBR_KINDS_ALL, 1ull << 32), 0);
	assert_int_equal(lbr_guest_debugctl(&st, 0), 0x800);      /* arch: LBR_CTL enables */
	lbr_stop(&st);
	assert_int_equal(lbr_guest_debugctl(&st, 2), 2);
}

static void pmi_setup(const struct lbr_caps *c, uint64_t status)
{
	seed_empty(c, 0);
	assert_int_equal(lbr_start(&st, c, NULL, LBR_KINDS_ALL, 1ull << 32), 0);
	hw_fake_set_msr(LBR_MSR_TOS, 1);
	seed_slot(c, 0, 0x100, 0x200, 0);
	seed_slot(c, 1, 0x101, 0x201, 0);
	hw_fake_set_msr(LBR_MSR_PERF_GLOBAL_STATUS, status);
	hw_fake_set_msr(LBR_MSR_PERF_GLOBAL_STATUS_RESET, 0);
}

static void test_pmi_ours_streamlined(void **state)
{
	struct lbr_caps c = legacy_caps(0x55, 5, 4);
	uint64_t dbg = 0x801;

	(void)state;
	pmi_setup(&c, LBR_GLOBAL_STATUS_LBR_FRZ | (1ull << 32));
	assert_int_equal(lbr_pmi(&st, r, NULL, &dbg), LBR_PMI_OURS);
	assert_int_equal(hw_fake_get_msr(LBR_MSR_PERF_GLOBAL_STATUS_RESET),
			 LBR_GLOBAL_STATUS_LBR_FRZ | (1ull << 32));
	assert_int_equal(dbg, 0x801);
	assert_int_equal(r->head, 64);
	assert_lbr_rec(0, TV_BR_UNKNOWN, 0, 0x100, 0x200, 0);
	assert_lbr_rec(32, TV_BR_UNKNOWN, 0, 0x101, 0x201, 0);
	assert_int_equal(st.stats.pmis, 1);
	assert_int_equal(st.stats.pmis_ours, 1);
}

static void test_pmi_not_ours(void **state)
{
	struct lbr_caps c = legacy_caps(0x55, 5, 4);
	uint64_t dbg = 0x801;

	(void)state;
	/* The guest's PMC0 overflowed: its bit is left for it, the freeze is lifted. */
	pmi_setup(&c, LBR_GLOBAL_STATUS_LBR_FRZ | 1);
	assert_int_equal(lbr_pmi(&st, r, NULL, &dbg), LBR_PMI_NOT_OURS);
	assert_int_equal(hw_fake_get_msr(LBR_MSR_PERF_GLOBAL_STATUS_RESET),
			 LBR_GLOBAL_STATUS_LBR_FRZ);
	assert_int_equal(r->head, 64);
	assert_int_equal(st.stats.pmis_ours, 0);
	/* Neither frozen nor ours: no write at all. */
	hw_fake_set_msr(LBR_MSR_PERF_GLOBAL_STATUS, 1);
	hw_fake_set_msr(LBR_MSR_PERF_GLOBAL_STATUS_RESET, 0x1234);
	assert_int_equal(lbr_pmi(&st, r, NULL, &dbg), LBR_PMI_NOT_OURS);
	assert_int_equal(hw_fake_get_msr(LBR_MSR_PERF_GLOBAL_STATUS_RESET), 0x1234);
	assert_int_equal(lbr_pmi(&st, r, NULL, NULL), LBR_ERR_INVAL);
}

static void test_pmi_legacy_freeze(void **state)
{
	struct lbr_caps c = legacy_caps(0x3c, 4, 3);
	uint64_t dbg = 0x800;   /* the freeze cleared LBR in the saved DEBUGCTL */

	(void)state;
	pmi_setup(&c, 1ull << 32);
	assert_int_equal(lbr_pmi(&st, r, NULL, &dbg), LBR_PMI_OURS);
	assert_int_equal(dbg, 0x801);
	assert_int_equal(hw_fake_get_msr(LBR_MSR_PERF_GLOBAL_STATUS_RESET), 1ull << 32);
	assert_int_equal(r->head, 64);
}

static void test_msr_owned(void **state)
{
	struct lbr_caps legacy = legacy_caps(0x3c, 4, 3), skl = legacy_caps(0x55, 5, 4);
	struct lbr_caps arch = arch_caps();

	(void)state;
	assert_true(lbr_msr_owned(&legacy, 0x1c9));
	assert_true(lbr_msr_owned(&legacy, 0x1c8));
	assert_true(lbr_msr_owned(&legacy, 0x680));
	assert_true(lbr_msr_owned(&legacy, 0x68f));
	assert_false(lbr_msr_owned(&legacy, 0x690));
	assert_true(lbr_msr_owned(&legacy, 0x6cf));
	assert_false(lbr_msr_owned(&legacy, 0xdc0));
	assert_true(lbr_msr_owned(&skl, 0xddf));
	assert_false(lbr_msr_owned(&skl, 0xde0));
	assert_false(lbr_msr_owned(&legacy, 0x1d9));   /* DEBUGCTL is shadowed, not owned */
	assert_true(lbr_msr_owned(&arch, 0x14ce));
	assert_true(lbr_msr_owned(&arch, 0x14cf));
	assert_true(lbr_msr_owned(&arch, 0x151f));
	assert_false(lbr_msr_owned(&arch, 0x1520));
	assert_true(lbr_msr_owned(&arch, 0x1200));
	assert_false(lbr_msr_owned(&arch, 0x1c9));
	assert_false(lbr_msr_owned(NULL, 0x680));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_msr_numbers_and_bits, setup),
		cmocka_unit_test_setup(test_format_decoding, setup),
		cmocka_unit_test_setup(test_format_has_info_and_empty, setup),
		cmocka_unit_test_setup(test_arch_info_decoding, setup),
		cmocka_unit_test_setup(test_select_bits, setup),
		cmocka_unit_test_setup(test_arch_ctl_bits, setup),
		cmocka_unit_test_setup(test_vmx_controls, setup),
		cmocka_unit_test_setup(test_caps_models, setup),
		cmocka_unit_test_setup(test_caps_decode, setup),
		cmocka_unit_test_setup(test_probe_through_the_fake, setup),
		cmocka_unit_test_setup(test_start_programs_select_and_clears, setup),
		cmocka_unit_test_setup(test_tos_wrap_16, setup),
		cmocka_unit_test_setup(test_full_stack_32, setup),
		cmocka_unit_test_setup(test_dedup_across_reads, setup),
		cmocka_unit_test_setup(test_arch_read, setup),
		cmocka_unit_test_setup(test_ip_filter, setup),
		cmocka_unit_test_setup(test_ring_full_still_consumes, setup),
		cmocka_unit_test_setup(test_lbr_top, setup),
		cmocka_unit_test_setup(test_guest_debugctl, setup),
		cmocka_unit_test_setup(test_pmi_ours_streamlined, setup),
		cmocka_unit_test_setup(test_pmi_not_ours, setup),
		cmocka_unit_test_setup(test_pmi_legacy_freeze, setup),
		cmocka_unit_test_setup(test_msr_owned, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
