/* SPDX-License-Identifier: MIT */
/*
 * test_trace_bts.c - the BTS backend (vmm/trace/backend/bts.c): MSR numbers, bit
 * positions and the DS/record layouts; capability decoding and the probe
 * through the hw fake; DEBUGCTL bits for each CPL filter; the DS save area
 * byte for byte; every refused setup; draining byte for byte into the
 * ring (full and compact branch records, LOG loss notes); wraps, a full
 * buffer, a corrupted DS area, filters, bad slots and PMIs.
 *
 * The "hardware" is a model in this file (hw_store) that stores records
 * through the DS area the way the SDM describes: at the index, index
 * advanced by 24, circular mode wrapping to the base, BTINT mode
 * storing nothing at the absolute maximum.  Linear addresses (what the
 * DS area holds) differ from the host pointers, so a drain that mixed
 * them up would read the wrong memory.
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
#include "vmm/trace/backend/bts.h"
#include "vmm/trace/ring.h"
#include "vmm/vmx/vmx_defs.h"

#define Q(v) (uint8_t)((v) >> 0), (uint8_t)((v) >> 8), (uint8_t)((v) >> 16), \
	(uint8_t)((v) >> 24), (uint8_t)((v) >> 32), (uint8_t)((v) >> 40),    \
	(uint8_t)((v) >> 48), (uint8_t)((v) >> 56)
#define D(v) (uint8_t)((v) >> 0), (uint8_t)((v) >> 8), (uint8_t)((v) >> 16), (uint8_t)((v) >> 24)

#define HDR 128u
#define DSZ 4096u
static uint64_t arena[(HDR + DSZ) / 8];
static struct tv_trace_ring *r = (struct tv_trace_ring *)arena;

/* Guest-linear addresses of the two regions (not the host pointers). */
#define DS_LIN  0xffff888000100000ull
#define BUF_LIN 0xffff888000200000ull
#define NREC    8u

static _Alignas(4096) uint8_t ds_mem[4096];
static _Alignas(4096) uint8_t buf_mem[4096];
static struct bts_state st;
static struct bts_caps caps;
static bool lazy_wrap;   /* circular: wrap before the next store instead of after this one */

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	memset(arena, 0xee, sizeof(arena));
	memset(ds_mem, 0xee, sizeof(ds_mem));
	memset(buf_mem, 0xee, sizeof(buf_mem));
	memset(&st, 0, sizeof(st));
	memset(&caps, 0, sizeof(caps));
	lazy_wrap = false;
	caps.supported = caps.ds = caps.dtes64 = caps.ds_cpl = true;
	caps.linear_bits = 48;
	caps.pmu_version = 4;
	assert_int_equal(trace_ring_init(r, sizeof(arena), 0, 0, TV_SOURCE_BTS,
					 TV_OVERFLOW_STOP, 0, 0), 0);
	return 0;
}

static struct bts_mem ds_region(void)
{
	return (struct bts_mem){ .va = ds_mem, .lin = DS_LIN, .size = sizeof(ds_mem) };
}

/* nrec slots plus 20 spare bytes: the slot count is floor(size / 24). */
static struct bts_mem buf_region(uint32_t nrec)
{
	return (struct bts_mem){ .va = buf_mem, .lin = BUF_LIN, .size = nrec * 24u + 20u };
}

static void init_mode(enum bts_mode mode, uint32_t margin, const struct trace_filter *f)
{
	struct bts_mem ds = ds_region(), buf = buf_region(NREC);

	assert_int_equal(bts_area_init(&st, &caps, f, &ds, &buf, mode, margin, NULL, NULL, 0), 0);
}

/* --- the hardware model ----------------------------------------------------------- */

static struct bts_ds_area *dsa(void)
{
	return (struct bts_ds_area *)ds_mem;
}

static void hw_store(uint64_t from, uint64_t to, uint64_t flags)
{
	struct bts_ds_area *ds = dsa();
	bool circular = !(st.debugctl & BTS_DEBUGCTL_BTINT);
	uint8_t *slot;

	if (ds->bts_index >= ds->bts_absolute_maximum) {
		if (!circular)
			return;                  /* full: the branch is not stored */
		ds->bts_index = ds->bts_buffer_base;
	}
	slot = buf_mem + (ds->bts_index - BUF_LIN);
	memcpy(slot, &from, 8);
	memcpy(slot + 8, &to, 8);
	memcpy(slot + 16, &flags, 8);
	ds->bts_index += 24;
	if (circular && !lazy_wrap && ds->bts_index >= ds->bts_absolute_maximum)
		ds->bts_index = ds->bts_buffer_base;
}

/* k-th branch of a straight run: every from lies 0x80 past the previous to. */
static uint64_t run_from(uint32_t k) { return 0x401000ull + 0x100ull * k; }
static uint64_t run_to(uint32_t k) { return 0x401080ull + 0x100ull * k; }

/* --- ring checks ---------------------------------------------------------------------- */

static const uint8_t *at(uint64_t pos)
{
	return trace_ring_data(r) + (pos & (DSZ - 1));
}

/* A full 24-byte TV_REC_BRANCH (kind unknown, no TSC) at pos. */
static void assert_branch(uint64_t pos, uint32_t flags, uint64_t from, uint64_t to)
{
	const uint8_t want[24] = {
		TV_REC_BRANCH, TV_BR_UNKNOWN, 24, 0, D(flags), Q(from), Q(to),
	};

	assert_true(pos + 24 <= r->head);
	assert_memory_equal(at(pos), want, sizeof(want));
}

/* A 16-byte TV_REC_BRANCH_COMPACT: from = previous to + off. */
static void assert_compact(uint64_t pos, uint32_t off, uint64_t to)
{
	const uint8_t want[16] = {
		TV_REC_BRANCH_COMPACT, TV_BR_UNKNOWN, 16, 0, D(off), Q(to),
	};

	assert_true(pos + 16 <= r->head);
	assert_memory_equal(at(pos), want, sizeof(want));
}

/* A TV_REC_LOG at warn level with text; returns its size. */
static uint64_t assert_log(uint64_t pos, uint64_t tsc, const char *text)
{
	size_t len = strlen(text);
	uint64_t size = (16 + len + 7) & ~7ull;
	const uint8_t hdr[16] = {
		TV_REC_LOG, 1, (uint8_t)size, (uint8_t)(size >> 8), D(len), Q(tsc),
	};
	static const uint8_t zeros[8];

	assert_true(pos + size <= r->head);
	assert_memory_equal(at(pos), hdr, sizeof(hdr));
	assert_memory_equal(at(pos + 16), text, len);
	assert_memory_equal(at(pos + 16 + len), zeros, size - 16 - len);
	return size;
}

/* records [k0, k1) of a straight run, starting at pos with a full record */
static uint64_t assert_run(uint64_t pos, uint32_t k0, uint32_t k1)
{
	assert_branch(pos, 0, run_from(k0), run_to(k0));
	pos += 24;
	for (uint32_t k = k0 + 1; k < k1; k++) {
		assert_compact(pos, 0x80, run_to(k));
		pos += 16;
	}
	return pos;
}

static void assert_rewound(void)
{
	static const uint8_t sentinel[24] = {
		Q(BTS_SENTINEL_FROM), Q(BTS_SENTINEL_TO), Q(BTS_SENTINEL_FLAGS),
	};

	assert_int_equal(dsa()->bts_index, BUF_LIN);
	assert_memory_equal(buf_mem + (NREC - 1) * 24, sentinel, sizeof(sentinel));
}

/* --- constants and layouts ------------------------------------------------------------ */

static void test_constants(void **state)
{
	(void)state;
	assert_int_equal(BTS_MSR_DS_AREA, 0x600);
	assert_int_equal(BTS_MSR_DEBUGCTL, 0x1d9);
	assert_int_equal(BTS_MSR_MISC_ENABLE, 0x1a0);
	assert_int_equal(BTS_MSR_PERF_GLOBAL_STATUS, 0x38e);
	assert_int_equal(BTS_MSR_PERF_GLOBAL_OVF_CTRL, 0x390);
	/* IA32_DEBUGCTL: TR 6, BTS 7, BTINT 8, BTS_OFF_OS 9, BTS_OFF_USR 10. */
	assert_int_equal(BTS_DEBUGCTL_TR, 0x40);
	assert_int_equal(BTS_DEBUGCTL_BTS, 0x80);
	assert_int_equal(BTS_DEBUGCTL_BTINT, 0x100);
	assert_int_equal(BTS_DEBUGCTL_BTS_OFF_OS, 0x200);
	assert_int_equal(BTS_DEBUGCTL_BTS_OFF_USR, 0x400);
	assert_int_equal(BTS_DEBUGCTL_MASK, 0x7c0);
	assert_int_equal(BTS_MISC_ENABLE_BTS_UNAVAILABLE, 0x800);
	assert_int_equal(BTS_GLOBAL_STATUS_OVF_BUFFER, 0x4000000000000000ull);
	assert_int_equal(BTS_CPUID1_EDX_DS, 0x200000);
	assert_int_equal(BTS_CPUID1_ECX_DTES64, 0x4);
	assert_int_equal(BTS_CPUID1_ECX_DS_CPL, 0x10);
	assert_int_equal(BTS_RECORD_SIZE, 24);
	assert_int_equal(BTS_RECORD_PREDICTED, 0x10);
	assert_int_equal(offsetof(struct bts_ds_area, bts_buffer_base), 0x00);
	assert_int_equal(offsetof(struct bts_ds_area, bts_index), 0x08);
	assert_int_equal(offsetof(struct bts_ds_area, bts_absolute_maximum), 0x10);
	assert_int_equal(offsetof(struct bts_ds_area, bts_interrupt_threshold), 0x18);
	assert_int_equal(offsetof(struct bts_ds_area, pebs_index), 0x28);
	assert_int_equal(offsetof(struct bts_ds_area, pebs_absolute_maximum), 0x30);
	assert_int_equal(offsetof(struct bts_record, to), 8);
	assert_int_equal(offsetof(struct bts_record, flags), 16);
	/* The sentinel can never be a stored branch, for 48- and 57-bit CPUs. */
	assert_false(bts_slot_valid(BTS_SENTINEL_FROM, BTS_SENTINEL_TO, 48));
	assert_false(bts_slot_valid(BTS_SENTINEL_FROM, BTS_SENTINEL_TO, 57));
	assert_string_equal(bts_strerror(0), "ok");
	assert_string_equal(bts_strerror(BTS_ERR_INVAL), "invalid argument or BTS not set up");
	assert_string_equal(bts_strerror(BTS_ERR_UNSUPPORTED), "not supported by this CPU");
	assert_string_equal(bts_strerror(BTS_ERR_ALIGN), "misaligned DS area or BTS buffer");
	assert_string_equal(bts_strerror(BTS_ERR_SIZE),
			    "DS area or BTS buffer too small, or bad margin");
	assert_string_equal(bts_strerror(BTS_ERR_CORRUPT), "DS save area changed under the hardware");
	assert_string_equal(bts_strerror(-99), "unknown error");
}

static void test_vmx_controls(void **state)
{
	uint32_t entry = 0, exit = 0;

	(void)state;
	bts_vmx_controls(&entry, &exit);
	assert_int_equal(entry, ENTRY_LOAD_DEBUG_CONTROLS);
	assert_int_equal(exit, EXIT_SAVE_DEBUG_CONTROLS);
	assert_int_equal(entry, 0x4);
	assert_int_equal(exit, 0x4);
}

static void test_slot_valid(void **state)
{
	(void)state;
	assert_true(bts_slot_valid(0x401000, 0x402000, 48));
	assert_true(bts_slot_valid(0, 0x402000, 48));            /* one zero is a real address */
	assert_true(bts_slot_valid(0xffff800000000000ull, 0x00007fffffffffffull, 48));
	assert_false(bts_slot_valid(0, 0, 48));
	assert_false(bts_slot_valid(0x0000800000000000ull, 0x401000, 48));
	assert_false(bts_slot_valid(0x401000, 0xffff7fffffffffffull, 48));
	/* 57-bit: a 48-bit non-canonical address is fine, bit 56 rules. */
	assert_true(bts_slot_valid(0x0000800000000000ull, 0xff00000000000000ull, 57));
	assert_false(bts_slot_valid(0x0100000000000000ull, 0x401000, 57));
}

/* --- capabilities ------------------------------------------------------------------------ */

static struct cpu_caps intel(bool ds, bool dtes64, bool ds_cpl)
{
	struct cpu_caps c;

	memset(&c, 0, sizeof(c));
	c.vendor_id = CPU_VENDOR_INTEL;
	c.family = 6;
	c.model = 0x55;
	c.ds = ds;
	c.dtes64 = dtes64;
	c.ds_cpl = ds_cpl;
	return c;
}

static void test_caps_decode(void **state)
{
	struct cpu_caps c = intel(true, true, true);
	struct bts_caps bc;

	(void)state;
	bts_caps_decode(&c, 0x850089, 0, 4, &bc);
	assert_true(bc.supported);
	assert_null(bc.reason);
	assert_true(bc.ds && bc.dtes64 && bc.ds_cpl);
	assert_false(bc.bts_unavailable);
	assert_int_equal(bc.linear_bits, 48);
	assert_int_equal(bc.pmu_version, 4);

	bts_caps_decode(&c, 0, 57, 2, &bc);
	assert_true(bc.supported);
	assert_int_equal(bc.linear_bits, 57);
	bts_caps_decode(&c, 0, 64, 2, &bc);       /* the sentinel needs a hole: 48 */
	assert_int_equal(bc.linear_bits, 48);

	/* DS-CPL is reported, not required. */
	c = intel(true, true, false);
	bts_caps_decode(&c, 0, 48, 4, &bc);
	assert_true(bc.supported);
	assert_false(bc.ds_cpl);

	bts_caps_decode(&c, BTS_MISC_ENABLE_BTS_UNAVAILABLE, 48, 4, &bc);
	assert_false(bc.supported);
	assert_true(bc.bts_unavailable);
	assert_string_equal(bc.reason, "IA32_MISC_ENABLE[11] says BTS unavailable");

	c = intel(false, true, true);
	bts_caps_decode(&c, 0, 48, 4, &bc);
	assert_false(bc.supported);
	assert_string_equal(bc.reason, "no debug store (CPUID.1:EDX[21] DS = 0)");

	c = intel(true, false, true);
	bts_caps_decode(&c, 0, 48, 4, &bc);
	assert_false(bc.supported);
	assert_string_equal(bc.reason, "no 64-bit DS area (CPUID.1:ECX[2] DTES64 = 0)");

	c = intel(true, true, true);
	c.vendor_id = CPU_VENDOR_AMD;
	bts_caps_decode(&c, 0, 48, 4, &bc);
	assert_false(bc.supported);
	assert_string_equal(bc.reason, "not an Intel CPU");

	bts_caps_decode(NULL, 0, 48, 4, &bc);
	assert_false(bc.supported);
	assert_string_equal(bc.reason, "no capability values");
}

/* A Skylake-SP-like CPU: DS, DTES64, DS-CPL; perfmon v4; 48-bit linear. */
static void seed_cpu(uint32_t vendor_ebx, uint32_t vendor_ecx, uint32_t vendor_edx)
{
	hw_fake_set_cpuid(0, 0, 0x16, vendor_ebx, vendor_ecx, vendor_edx);
	hw_fake_set_cpuid(1, 0, 0x00050654, 0x00100800, 0x7ffefbff, 0xbfebfbff);
	hw_fake_set_cpuid(0xa, 0, 0x07300804, 0, 0, 0x00000603);
	hw_fake_set_cpuid(0x80000000u, 0, 0x80000008u, 0, 0, 0);
	hw_fake_set_cpuid(0x80000008u, 0, 0x0000302e, 0, 0, 0);
}

static void test_probe_through_the_fake(void **state)
{
	struct bts_caps bc;

	(void)state;
	seed_cpu(0x756e6547, 0x6c65746e, 0x49656e69);   /* GenuineIntel */
	hw_fake_set_msr(BTS_MSR_MISC_ENABLE, 0x850089);
	bts_probe(&bc);
	assert_true(bc.supported);
	assert_true(bc.ds_cpl);
	assert_int_equal(bc.linear_bits, 48);
	assert_int_equal(bc.pmu_version, 4);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);

	hw_fake_set_msr(BTS_MSR_MISC_ENABLE, 0x850089 | BTS_MISC_ENABLE_BTS_UNAVAILABLE);
	bts_probe(&bc);
	assert_false(bc.supported);
	assert_string_equal(bc.reason, "IA32_MISC_ENABLE[11] says BTS unavailable");

	/* Not Intel: IA32_MISC_ENABLE is not read. */
	hw_fake_reset();
	seed_cpu(0x68747541, 0x444d4163, 0x69746e65);   /* AuthenticAMD */
	bts_probe(&bc);
	assert_false(bc.supported);
	assert_string_equal(bc.reason, "not an Intel CPU");
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
}

/* --- DEBUGCTL bits -------------------------------------------------------------------------- */

static void test_debugctl_bits(void **state)
{
	struct trace_filter f;
	uint64_t v = 0;
	char why[128];

	(void)state;
	assert_int_equal(bts_debugctl_bits(&caps, NULL, BTS_MODE_CIRCULAR, &v, why, sizeof(why)), 0);
	assert_int_equal(v, 0xc0);
	assert_string_equal(why, "");
	assert_int_equal(bts_debugctl_bits(&caps, NULL, BTS_MODE_INT, &v, NULL, 0), 0);
	assert_int_equal(v, 0x1c0);

	trace_filter_all(&f);
	f.cpl = TRACE_CPL_KERNEL;
	assert_int_equal(bts_debugctl_bits(&caps, &f, BTS_MODE_INT, &v, NULL, 0), 0);
	assert_int_equal(v, 0x5c0);                      /* + BTS_OFF_USR */
	f.cpl = TRACE_CPL_USER;
	assert_int_equal(bts_debugctl_bits(&caps, &f, BTS_MODE_CIRCULAR, &v, NULL, 0), 0);
	assert_int_equal(v, 0x2c0);                      /* + BTS_OFF_OS */
	f.cpl = 0xf;                                     /* every ring */
	assert_int_equal(bts_debugctl_bits(&caps, &f, BTS_MODE_CIRCULAR, &v, NULL, 0), 0);
	assert_int_equal(v, 0xc0);
	f.cpl = TRACE_CPL_USER | (1u << 1);              /* rings 1 and 3: USR covers both */
	assert_int_equal(bts_debugctl_bits(&caps, &f, BTS_MODE_CIRCULAR, &v, NULL, 0), 0);
	assert_int_equal(v, 0x2c0);

	/* Refused, with why. */
	v = 0x1234;
	f.cpl = TRACE_CPL_KERNEL | (1u << 2);
	assert_int_equal(bts_debugctl_bits(&caps, &f, BTS_MODE_INT, &v, why, sizeof(why)),
			 BTS_ERR_UNSUPPORTED);
	assert_string_equal(why, "bts: cpl filter 0x5: BTS_OFF_USR skips CPL 1-3 together");
	assert_int_equal(v, 0x1234);
	f.cpl = 0;
	assert_int_equal(bts_debugctl_bits(&caps, &f, BTS_MODE_INT, &v, why, sizeof(why)),
			 BTS_ERR_INVAL);
	assert_string_equal(why, "bts: cpl filter selects no privilege level");
	f.cpl = 0x11;
	assert_int_equal(bts_debugctl_bits(&caps, &f, BTS_MODE_INT, &v, why, sizeof(why)),
			 BTS_ERR_INVAL);
	assert_string_equal(why, "bts: cpl filter 0x11 has unknown bits");
	assert_int_equal(bts_debugctl_bits(&caps, NULL, (enum bts_mode)2, &v, why, sizeof(why)),
			 BTS_ERR_INVAL);
	assert_string_equal(why, "bts: unknown buffer mode 2");
	assert_int_equal(bts_debugctl_bits(NULL, NULL, BTS_MODE_INT, &v, NULL, 0), BTS_ERR_INVAL);

	/* Without DS-CPL only "every ring" can be done. */
	caps.ds_cpl = false;
	f.cpl = TRACE_CPL_USER;
	assert_int_equal(bts_debugctl_bits(&caps, &f, BTS_MODE_INT, &v, why, sizeof(why)),
			 BTS_ERR_UNSUPPORTED);
	assert_string_equal(why, "bts: a CPL filter needs CPL-qualified BTS (CPUID.1:ECX[4] DS-CPL)");
	f.cpl = TRACE_CPL_ALL;
	assert_int_equal(bts_debugctl_bits(&caps, &f, BTS_MODE_INT, &v, NULL, 0), 0);
	assert_int_equal(v, 0x1c0);
}

/* --- the DS save area ------------------------------------------------------------------------ */

static void test_area_init_int_bytes(void **state)
{
	struct bts_mem ds = ds_region(), buf = buf_region(NREC);
	struct bts_setup out;
	uint8_t tail[64];
	const uint64_t max = BUF_LIN + NREC * 24, thr = BUF_LIN + (NREC - 3) * 24;
	const uint8_t want[64] = {
		Q(BUF_LIN), Q(BUF_LIN), Q(max), Q(thr), Q(0ull), Q(0ull), Q(0ull), Q(0ull),
	};

	(void)state;
	memset(tail, 0xee, sizeof(tail));
	assert_int_equal(bts_area_init(&st, &caps, NULL, &ds, &buf, BTS_MODE_INT, 3, &out,
				       NULL, 0), 0);
	assert_memory_equal(ds_mem, want, sizeof(want));
	assert_memory_equal(ds_mem + 64, tail, sizeof(tail));    /* nothing past 40H */
	assert_int_equal(max, 0xffff8880002000c0ull);
	assert_int_equal(thr, 0xffff888000200078ull);
	assert_int_equal(out.ds_area, DS_LIN);
	assert_int_equal(out.debugctl, 0x1c0);
	assert_int_equal(out.records, NREC);
	assert_int_equal(out.threshold, thr);
	assert_true(st.ready);
	assert_int_equal(st.nrec, NREC);
	/* Slots 0..6 untouched, slot 7 the sentinel, the spare bytes untouched. */
	assert_memory_equal(buf_mem, tail, 64);
	assert_rewound();
	assert_memory_equal(buf_mem + NREC * 24, tail, 20);
	/* No MSR, no VMCS: the caller programs both. */
	assert_int_equal(hw_fake_msr_write_count, 0);
	assert_int_equal(hw_fake_vmwrite_count, 0);
}

static void test_area_init_circular(void **state)
{
	struct bts_mem ds = ds_region(), buf = buf_region(NREC);
	struct bts_setup out;
	struct trace_filter f;

	(void)state;
	trace_filter_all(&f);
	f.cpl = TRACE_CPL_USER;
	/* margin is ignored in circular mode */
	assert_int_equal(bts_area_init(&st, &caps, &f, &ds, &buf, BTS_MODE_CIRCULAR, 0, &out,
				       NULL, 0), 0);
	assert_int_equal(dsa()->bts_buffer_base, BUF_LIN);
	assert_int_equal(dsa()->bts_index, BUF_LIN);
	assert_int_equal(dsa()->bts_absolute_maximum, BUF_LIN + 192);
	assert_int_equal(dsa()->bts_interrupt_threshold, BUF_LIN + 216);   /* never reached */
	assert_int_equal(out.threshold, BUF_LIN + 216);
	assert_int_equal(out.debugctl, 0x2c0);
	assert_int_equal(st.mode, BTS_MODE_CIRCULAR);
	assert_false(st.report_mispred);
}

/* Every refusal writes nothing: the 0xee fill survives. */
static void assert_untouched(void)
{
	uint8_t fill[256];

	memset(fill, 0xee, sizeof(fill));
	assert_memory_equal(ds_mem, fill, sizeof(fill));
	assert_memory_equal(buf_mem, fill, sizeof(fill));
	assert_false(st.ready);
}

static void expect_refused(struct bts_mem ds, struct bts_mem buf, enum bts_mode mode,
			   uint32_t margin, int err, const char *why_want)
{
	char why[128];

	assert_int_equal(bts_area_init(&st, &caps, NULL, &ds, &buf, mode, margin, NULL,
				       why, sizeof(why)), err);
	assert_string_equal(why, why_want);
	assert_untouched();
}

static void test_area_init_refusals(void **state)
{
	struct bts_mem ds = ds_region(), buf = buf_region(NREC), x;
	char why[128];

	(void)state;
	x = ds; x.va = ds_mem + 8;
	expect_refused(x, buf, BTS_MODE_INT, 2, BTS_ERR_ALIGN, "bts: DS area not 64-byte aligned");
	x = ds; x.lin = DS_LIN + 32;
	expect_refused(x, buf, BTS_MODE_INT, 2, BTS_ERR_ALIGN, "bts: DS area not 64-byte aligned");
	x = buf; x.va = buf_mem + 4;
	expect_refused(ds, x, BTS_MODE_INT, 2, BTS_ERR_ALIGN, "bts: BTS buffer not 8-byte aligned");
	x = buf; x.lin = BUF_LIN + 2;
	expect_refused(ds, x, BTS_MODE_INT, 2, BTS_ERR_ALIGN, "bts: BTS buffer not 8-byte aligned");
	x = ds; x.size = 63;
	expect_refused(x, buf, BTS_MODE_INT, 2, BTS_ERR_SIZE, "bts: DS area of 63 bytes, need 64");
	x = buf; x.size = 4 * 24 - 1;
	expect_refused(ds, x, BTS_MODE_INT, 2, BTS_ERR_SIZE, "bts: BTS buffer holds 3 records, need 4");
	expect_refused(ds, buf, BTS_MODE_INT, 0, BTS_ERR_SIZE, "bts: margin 0 must be 1..7 for 8 records");
	expect_refused(ds, buf, BTS_MODE_INT, 8, BTS_ERR_SIZE, "bts: margin 8 must be 1..7 for 8 records");
	x = buf; x.lin = 0x00007fffffffff80ull;   /* runs into the non-canonical hole */
	expect_refused(ds, x, BTS_MODE_INT, 2, BTS_ERR_INVAL,
		       "bts: region not canonical for 48-bit linear addresses");
	x = ds; x.lin = 0x0000800000000000ull;
	expect_refused(x, buf, BTS_MODE_INT, 2, BTS_ERR_INVAL,
		       "bts: region not canonical for 48-bit linear addresses");
	x = buf; x.lin = 0xffffffffffffff80ull;   /* past the top of the address space */
	expect_refused(ds, x, BTS_MODE_INT, 2, BTS_ERR_SIZE, "bts: region runs past the address space");
	x = buf; x.lin = DS_LIN + 0x40 - 24;      /* linear overlap */
	expect_refused(ds, x, BTS_MODE_INT, 2, BTS_ERR_INVAL, "bts: DS area and BTS buffer overlap");
	x = buf; x.va = NULL;
	expect_refused(ds, x, BTS_MODE_INT, 2, BTS_ERR_INVAL, "bts: NULL region");

	caps.ds_cpl = false;
	{
		struct trace_filter f;

		trace_filter_all(&f);
		f.cpl = TRACE_CPL_KERNEL;
		assert_int_equal(bts_area_init(&st, &caps, &f, &ds, &buf, BTS_MODE_INT, 2, NULL,
					       why, sizeof(why)), BTS_ERR_UNSUPPORTED);
		assert_string_equal(why, "bts: a CPL filter needs CPL-qualified BTS (CPUID.1:ECX[4] DS-CPL)");
		assert_untouched();
	}
	caps.supported = false;
	caps.reason = "IA32_MISC_ENABLE[11] says BTS unavailable";
	expect_refused(ds, buf, BTS_MODE_INT, 2, BTS_ERR_UNSUPPORTED,
		       "bts: IA32_MISC_ENABLE[11] says BTS unavailable");
	assert_int_equal(bts_area_init(NULL, &caps, NULL, &ds, &buf, BTS_MODE_INT, 2, NULL,
				       why, sizeof(why)), BTS_ERR_INVAL);
	assert_string_equal(why, "bts: NULL argument");
	assert_int_equal(hw_fake_msr_write_count, 0);
}

static void test_guest_debugctl(void **state)
{
	(void)state;
	/* Not set up: our bits cleared from whatever the guest wrote. */
	assert_int_equal(bts_guest_debugctl(&st, 0x7c1, true), 0x1);
	assert_int_equal(bts_guest_debugctl(NULL, 0x4003, true), 0x4003);
	init_mode(BTS_MODE_INT, 2, NULL);
	/* The guest's LBR/BTF/FREEZE bits kept, its BTS bits replaced by ours. */
	assert_int_equal(bts_guest_debugctl(&st, 0x803, true), 0x9c3);
	assert_int_equal(bts_guest_debugctl(&st, 0x600, true), 0x1c0);
	/* Buffer not mapped in the current address space: off. */
	assert_int_equal(bts_guest_debugctl(&st, 0x7c3, false), 0x3);
}

/* --- draining ------------------------------------------------------------------------------------ */

static void test_drain_vectors(void **state)
{
	(void)state;
	init_mode(BTS_MODE_INT, 2, NULL);
	hw_store(0x401000, 0x402000, BTS_RECORD_PREDICTED);
	hw_store(0x402010, 0x403000, 0);                             /* compact: +0x10 */
	hw_store(0x401500, 0x7fff0000, BTS_RECORD_PREDICTED);         /* from < prev to: full */
	hw_store(0xffffffff81000000ull, 0xffffffff81000100ull, 0);    /* 2^32 and more past: full */
	hw_store(0xffffffff81000180ull, 0x7f0000001000ull, 0);        /* compact: +0x80 */
	assert_int_equal(dsa()->bts_index, BUF_LIN + 5 * 24);
	assert_int_equal(bts_drain(&st, r, NULL, 0x1000, 100), 5);
	assert_branch(0, 0, 0x401000, 0x402000);
	assert_compact(24, 0x10, 0x403000);
	assert_branch(40, 0, 0x401500, 0x7fff0000);
	assert_branch(64, 0, 0xffffffff81000000ull, 0xffffffff81000100ull);
	assert_compact(88, 0x80, 0x7f0000001000ull);
	assert_int_equal(r->head, 104);
	assert_int_equal(r->next_seq, 5);
	assert_rewound();
	assert_int_equal(st.stats.drains, 1);
	assert_int_equal(st.stats.slots, 5);
	assert_int_equal(st.stats.recorded, 5);
	assert_int_equal(st.stats.full + st.stats.wraps + st.stats.bad + st.stats.notes, 0);

	/* Nothing new: nothing read, nothing written. */
	assert_int_equal(bts_drain(&st, r, NULL, 0x1000, 101), 0);
	assert_int_equal(r->head, 104);
	assert_int_equal(st.stats.slots, 5);

	/* The next stretch goes on from the base, and the chain goes on with it. */
	hw_store(0x7f0000001010ull, 0x7f0000002000ull, 0);
	assert_int_equal(dsa()->bts_index, BUF_LIN + 24);
	assert_int_equal(bts_drain(&st, r, NULL, 0x1000, 102), 1);
	assert_compact(104, 0x10, 0x7f0000002000ull);
	assert_int_equal(st.stats.drains, 3);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
	assert_int_equal(hw_fake_msr_write_count, 0);
}

static void test_drain_mispred_option(void **state)
{
	(void)state;
	init_mode(BTS_MODE_CIRCULAR, 0, NULL);
	st.report_mispred = true;
	hw_store(0x401000, 0x402000, BTS_RECORD_PREDICTED);
	hw_store(0x402010, 0x403000, 0);                 /* not predicted: flagged, full */
	hw_store(0x403010, 0x404000, BTS_RECORD_PREDICTED | 0xffffffffffff0000ull);
	assert_int_equal(bts_drain(&st, r, NULL, 0, 0), 3);
	assert_branch(0, 0, 0x401000, 0x402000);
	assert_branch(24, TV_BRF_MISPRED, 0x402010, 0x403000);
	assert_compact(48, 0x10, 0x404000);              /* reserved flag bits ignored */
	assert_int_equal(r->head, 64);
}

static void test_drain_bad_slots(void **state)
{
	(void)state;
	init_mode(BTS_MODE_CIRCULAR, 0, NULL);
	hw_store(0x401000, 0x402000, 0);
	hw_store(0, 0, 0);                                       /* empty / scrubbed */
	hw_store(0x0000900000000000ull, 0x402000, 0);            /* non-canonical from */
	hw_store(0x402000, 0xffff000000000000ull, 0);            /* non-canonical to */
	hw_store(0x402010, 0x403000, 0);
	assert_int_equal(bts_drain(&st, r, NULL, 0, 0), 2);
	assert_branch(0, 0, 0x401000, 0x402000);
	assert_compact(24, 0x10, 0x403000);
	assert_int_equal(st.stats.slots, 5);
	assert_int_equal(st.stats.bad, 3);
	assert_int_equal(st.stats.recorded, 2);
}

static void test_drain_ip_filter(void **state)
{
	struct trace_filter f;

	(void)state;
	trace_filter_all(&f);
	f.nranges = 1;
	f.ranges[0].lo = 0x400000;
	f.ranges[0].hi = 0x400fff;
	init_mode(BTS_MODE_CIRCULAR, 0, &f);
	hw_store(0x400010, 0x900000, 0);     /* from in range */
	hw_store(0x900000, 0x910000, 0);     /* neither */
	hw_store(0x910000, 0x400800, 0);     /* to in range */
	hw_store(0x920000, 0x401000, 0);     /* just past the range */
	assert_int_equal(bts_drain(&st, r, &f, 0, 0), 2);
	assert_branch(0, 0, 0x400010, 0x900000);
	assert_compact(24, 0x10000, 0x400800);
	assert_int_equal(r->head, 40);
	assert_int_equal(st.stats.filtered, 2);
	assert_int_equal(st.stats.recorded, 2);
	assert_rewound();
}

static void test_drain_cr3_filter(void **state)
{
	struct trace_filter f;

	(void)state;
	trace_filter_all(&f);
	f.cr3 = 0x1234000;
	init_mode(BTS_MODE_CIRCULAR, 0, &f);
	hw_store(0x401000, 0x402000, 0);
	hw_store(0x402010, 0x403000, 0);
	/* Stored under another address space: consumed, not emitted. */
	assert_int_equal(bts_drain(&st, r, &f, 0x5678000, 0), 0);
	assert_int_equal(st.stats.filtered_cr3, 2);
	assert_int_equal(r->head, 0);
	assert_rewound();
	/* PCID bits 11:0 are not part of the match. */
	hw_store(0x401000, 0x402000, 0);
	assert_int_equal(bts_drain(&st, r, &f, 0x1234005, 0), 1);
	assert_branch(0, 0, 0x401000, 0x402000);
	/* A filter with cr3 0 takes every address space. */
	f.cr3 = 0;
	hw_store(0x402010, 0x403000, 0);
	assert_int_equal(bts_drain(&st, r, &f, 0x9999000, 0), 1);
	assert_int_equal(st.stats.filtered_cr3, 2);
}

/* Circular, 11 stores into 8 slots: 3 written over, counted, a note first. */
static void test_circular_wrap(void **state)
{
	const char *text = "bts: buffer went round: at least 3 older records written over";
	uint64_t pos;

	(void)state;
	init_mode(BTS_MODE_CIRCULAR, 0, NULL);
	for (uint32_t k = 0; k < 11; k++)
		hw_store(run_from(k), run_to(k), 0);
	assert_int_equal(dsa()->bts_index, BUF_LIN + 3 * 24);
	assert_int_equal(bts_drain(&st, r, NULL, 0, 555), 8);
	pos = assert_log(0, 555, text);
	assert_int_equal(pos, 80);
	pos = assert_run(pos, 3, 11);                    /* oldest left first, then the newest */
	assert_int_equal(r->head, pos);
	assert_int_equal(st.stats.wraps, 1);
	assert_int_equal(st.stats.lost_min, 3);
	assert_int_equal(st.stats.notes, 1);
	assert_int_equal(st.stats.recorded, 8);
	assert_rewound();

	/* A quiet stretch after it: no false wrap. */
	hw_store(run_from(11), run_to(11), 0);
	assert_int_equal(bts_drain(&st, r, NULL, 0, 556), 1);
	assert_compact(pos, 0x80, run_to(11));
	assert_int_equal(st.stats.wraps, 1);
}

/* Exactly one buffer's worth, eager and lazy wrap: a possible loss, count 0. */
static void test_circular_exact_round(void **state)
{
	const char *text = "bts: buffer filled or went round: older records may be written over";
	uint64_t pos;

	(void)state;
	for (int lazy = 0; lazy < 2; lazy++) {
		setup(NULL);
		lazy_wrap = lazy;
		init_mode(BTS_MODE_CIRCULAR, 0, NULL);
		for (uint32_t k = 0; k < NREC; k++)
			hw_store(run_from(k), run_to(k), 0);
		assert_int_equal(dsa()->bts_index, lazy ? BUF_LIN + NREC * 24 : BUF_LIN);
		assert_int_equal(bts_drain(&st, r, NULL, 0, 9), NREC);
		pos = assert_log(0, 9, text);
		pos = assert_run(pos, 0, NREC);
		assert_int_equal(r->head, pos);
		assert_int_equal(st.stats.wraps, 1);
		assert_int_equal(st.stats.lost_min, 0);
		assert_rewound();
	}
	lazy_wrap = false;
}

/* BTINT: 10 branches into 8 slots; the last 2 are not stored, a note after. */
static void test_int_full(void **state)
{
	const char *text = "bts: buffer full at the absolute maximum: later branches may be lost "
			   "(count unknown)";
	uint64_t pos;

	(void)state;
	init_mode(BTS_MODE_INT, 2, NULL);
	for (uint32_t k = 0; k < 10; k++)
		hw_store(run_from(k), run_to(k), 0);
	assert_int_equal(dsa()->bts_index, BUF_LIN + NREC * 24);
	assert_int_equal(bts_drain(&st, r, NULL, 0, 77), NREC);
	pos = assert_run(0, 0, NREC);
	pos += assert_log(pos, 77, text);
	assert_int_equal(r->head, pos);
	assert_int_equal(st.stats.full, 1);
	assert_int_equal(st.stats.wraps, 0);
	assert_int_equal(st.stats.notes, 1);
	assert_rewound();
}

/* BTINT set, yet the sentinel went and the index is below the end: a wrap all the same. */
static void test_int_unexpected_wrap(void **state)
{
	(void)state;
	init_mode(BTS_MODE_INT, 2, NULL);
	for (uint32_t k = 0; k < NREC; k++)
		hw_store(run_from(k), run_to(k), 0);
	dsa()->bts_index = BUF_LIN;                      /* a CPU that wrapped */
	hw_store(run_from(8), run_to(8), 0);
	assert_int_equal(bts_drain(&st, r, NULL, 0, 1), NREC);
	assert_int_equal(st.stats.wraps, 1);
	assert_int_equal(st.stats.lost_min, 1);
	assert_int_equal(st.stats.full, 0);
	assert_int_equal(at(0)[0], TV_REC_LOG);
}

static void test_corrupt_ds(void **state)
{
	const char *text = "bts: DS save area changed under the hardware: buffer dropped, "
			   "records lost (count unknown)";
	const uint64_t bad_index[] = {
		BUF_LIN + 3 * 24 + 8,          /* not a record boundary */
		BUF_LIN - 24,                  /* below the base */
		BUF_LIN + (NREC + 1) * 24,     /* past the maximum */
	};
	uint64_t pos = 0;

	(void)state;
	init_mode(BTS_MODE_INT, 2, NULL);
	hw_store(run_from(0), run_to(0), 0);
	dsa()->bts_absolute_maximum += 24 * 100;         /* the guest scribbled */
	assert_int_equal(bts_drain(&st, r, NULL, 0, 5), BTS_ERR_CORRUPT);
	pos += assert_log(pos, 5, text);
	assert_int_equal(dsa()->bts_absolute_maximum, BUF_LIN + NREC * 24);
	assert_int_equal(dsa()->bts_interrupt_threshold, BUF_LIN + 6 * 24);
	assert_rewound();
	for (size_t n = 0; n < sizeof(bad_index) / sizeof(bad_index[0]); n++) {
		dsa()->bts_index = bad_index[n];
		assert_int_equal(bts_drain(&st, r, NULL, 0, 6), BTS_ERR_CORRUPT);
		pos += assert_log(pos, 6, text);
		assert_rewound();
	}
	dsa()->bts_buffer_base = 0;
	assert_int_equal(bts_drain(&st, r, NULL, 0, 7), BTS_ERR_CORRUPT);
	assert_int_equal(dsa()->bts_buffer_base, BUF_LIN);
	assert_int_equal(st.stats.corrupt, 5);
	assert_int_equal(st.stats.recorded, 0);
	/* Afterwards it works again. */
	hw_store(run_from(0), run_to(0), 0);
	assert_int_equal(bts_drain(&st, r, NULL, 0, 8), 1);
}

static void test_ring_full_still_consumes(void **state)
{
	uint64_t total = 0;

	(void)state;
	init_mode(BTS_MODE_CIRCULAR, 0, NULL);
	for (int round = 0; round < 60; round++) {
		/* jumps far apart: every record a full 24-byte branch */
		for (uint32_t k = 0; k < NREC - 1; k++)
			hw_store(0x1000ull * (k + 1) + round, 0x100000ull * (k + 1), 0);
		assert_true(bts_drain(&st, r, NULL, 0, 0) >= 0);
		total += NREC - 1;
		assert_rewound();
	}
	assert_int_equal(st.stats.recorded + st.stats.dropped, total);
	assert_int_equal(st.stats.recorded, DSZ / 24);
	assert_int_equal(r->lost_records, st.stats.dropped);
	assert_int_equal(st.stats.wraps, 0);
}

static void test_drain_invalid(void **state)
{
	(void)state;
	assert_int_equal(bts_drain(&st, r, NULL, 0, 0), BTS_ERR_INVAL);   /* not set up */
	assert_int_equal(bts_drain(NULL, r, NULL, 0, 0), BTS_ERR_INVAL);
	init_mode(BTS_MODE_INT, 2, NULL);
	assert_int_equal(bts_drain(&st, NULL, NULL, 0, 0), BTS_ERR_INVAL);
	assert_int_equal(st.stats.drains, 0);
	assert_int_equal(bts_on_pmi(NULL, r, NULL, 0, 0), BTS_ERR_INVAL);
}

/* --- PMIs ---------------------------------------------------------------------------------------- */

static void test_pmi(void **state)
{
	const struct hw_fake_msr_write *w;

	(void)state;
	init_mode(BTS_MODE_INT, 2, NULL);            /* threshold: slot 6 */
	hw_fake_set_msr(BTS_MSR_PERF_GLOBAL_STATUS, BTS_GLOBAL_STATUS_OVF_BUFFER | 0x1);
	for (uint32_t k = 0; k < 6; k++)
		hw_store(run_from(k), run_to(k), 0);
	assert_int_equal(bts_on_pmi(&st, r, NULL, 0, 0), BTS_PMI_OURS);
	assert_run(0, 0, 6);
	assert_rewound();
	/* OvfBuffer alone acknowledged, the guest's counter 0 bit left. */
	assert_int_equal(hw_fake_msr_write_count, 1);
	w = hw_fake_msr_write_log(0);
	assert_int_equal(w->msr, 0x390);
	assert_int_equal(w->value, 0x4000000000000000ull);

	/* Below the threshold: not ours, nothing drained, nothing acknowledged. */
	hw_fake_set_msr(BTS_MSR_PERF_GLOBAL_STATUS, 0x1);
	hw_store(run_from(6), run_to(6), 0);
	assert_int_equal(bts_on_pmi(&st, r, NULL, 0, 0), BTS_PMI_NOT_OURS);
	assert_int_equal(dsa()->bts_index, BUF_LIN + 24);
	assert_int_equal(hw_fake_msr_write_count, 1);
	assert_int_equal(st.stats.pmis, 2);
	assert_int_equal(st.stats.pmis_ours, 1);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
}

static void test_pmi_circular_and_old_pmu(void **state)
{
	(void)state;
	caps.pmu_version = 1;                        /* no IA32_PERF_GLOBAL_STATUS */
	init_mode(BTS_MODE_CIRCULAR, 0, NULL);
	for (uint32_t k = 0; k < 7; k++)
		hw_store(run_from(k), run_to(k), 0);
	/* Circular never interrupts: not ours, and no MSR touched. */
	assert_int_equal(bts_on_pmi(&st, r, NULL, 0, 0), BTS_PMI_NOT_OURS);
	assert_int_equal(dsa()->bts_index, BUF_LIN + 7 * 24);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
	assert_int_equal(hw_fake_msr_write_count, 0);

	setup(NULL);
	caps.pmu_version = 1;
	init_mode(BTS_MODE_INT, 1, NULL);            /* threshold: slot 7 */
	for (uint32_t k = 0; k < NREC; k++)
		hw_store(run_from(k), run_to(k), 0);
	assert_int_equal(bts_on_pmi(&st, r, NULL, 0, 3), BTS_PMI_OURS);
	assert_int_equal(st.stats.full, 1);          /* at the maximum: the note says so */
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
	assert_int_equal(hw_fake_msr_write_count, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_constants, setup),
		cmocka_unit_test_setup(test_vmx_controls, setup),
		cmocka_unit_test_setup(test_slot_valid, setup),
		cmocka_unit_test_setup(test_caps_decode, setup),
		cmocka_unit_test_setup(test_probe_through_the_fake, setup),
		cmocka_unit_test_setup(test_debugctl_bits, setup),
		cmocka_unit_test_setup(test_area_init_int_bytes, setup),
		cmocka_unit_test_setup(test_area_init_circular, setup),
		cmocka_unit_test_setup(test_area_init_refusals, setup),
		cmocka_unit_test_setup(test_guest_debugctl, setup),
		cmocka_unit_test_setup(test_drain_vectors, setup),
		cmocka_unit_test_setup(test_drain_mispred_option, setup),
		cmocka_unit_test_setup(test_drain_bad_slots, setup),
		cmocka_unit_test_setup(test_drain_ip_filter, setup),
		cmocka_unit_test_setup(test_drain_cr3_filter, setup),
		cmocka_unit_test_setup(test_circular_wrap, setup),
		cmocka_unit_test_setup(test_circular_exact_round, setup),
		cmocka_unit_test_setup(test_int_full, setup),
		cmocka_unit_test_setup(test_int_unexpected_wrap, setup),
		cmocka_unit_test_setup(test_corrupt_ds, setup),
		cmocka_unit_test_setup(test_ring_full_still_consumes, setup),
		cmocka_unit_test_setup(test_drain_invalid, setup),
		cmocka_unit_test_setup(test_pmi, setup),
		cmocka_unit_test_setup(test_pmi_circular_and_old_pmu, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
