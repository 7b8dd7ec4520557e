/* SPDX-License-Identifier: MIT */
/*
 * test_trace_pt.c - the Intel PT backend (vmm/trace/backend/pt.c): IA32_RTIT_CTL
 * and ToPA entry bits byte for byte, capabilities decoded from a real
 * CPU's CPUID leaf 14H, refused requests, ToPA construction and its
 * checks, arming (which MSRs, never TraceEn), the output pointer across
 * regions, draining with wrap / STOP / error / sink-full accounting and
 * the TV_REC_PT_SYNC records, and PMIs ours or not.
 *
 * The recorded CPU: Intel Core i5-8350U (Kaby Lake R, CPUID 000806EA) in
 * a Dell XPS 13 9370, `cpuid -1 --raw` posted by Paul Menzel to LKML on
 * 2022-08-23 (Message-ID 63a60042-4a4a-3bc3-5fa1-4495d80cc06c@molgen.mpg.de):
 *   0x00000014 0x00: eax=0x00000001 ebx=0x0000000f ecx=0x00000007 edx=0
 *   0x00000014 0x01: eax=0x02490002 ebx=0x003f3fff ecx=0 edx=0
 *   0x00000007 0x00: ebx=0x029c67af   0x80000008: eax=0x00003027
 * The dump has no MSRs; the VMX capability values seeded with it are
 * synthetic (only the bits under test are set).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/hw/msr.h"
#include "vmm/lib/byte_ring.h"
#include "vmm/trace/backend/pt.h"
#include "vmm/trace/ring.h"
#include "vmm/vmx/vmx_defs.h"

#define Q(v) (uint8_t)((v) >> 0), (uint8_t)((v) >> 8), (uint8_t)((v) >> 16), \
	(uint8_t)((v) >> 24), (uint8_t)((v) >> 32), (uint8_t)((v) >> 40),    \
	(uint8_t)((v) >> 48), (uint8_t)((v) >> 56)

/* record ring */
#define HDR 128u
#define DS  4096u
static uint64_t arena[(HDR + DS) / 8];
static struct tv_trace_ring *ring = (struct tv_trace_ring *)arena;

/* three output regions (4K, 8K, 4K) at fake physical addresses, a table */
#define PA0 0x00100000ull
#define PA1 0x00102000ull      /* 8 KiB aligned */
#define PA2 0x00104000ull
#define TABLE_PA 0x00200000ull
#define TOTAL 0x4000ull
static uint8_t reg0[0x1000], reg1[0x2000], reg2[0x1000];
static uint64_t table[8];
static struct pt_region regions[3];

/* the byte stream sink */
static uint8_t sink_mem[0x10000];
static struct byte_ring bytes;
static struct pt_sink sink;

static struct pt_state st;
static struct pt_caps kbl;

/* --- the recorded CPU ---------------------------------------------------------- */

static void seed_kbl_cpuid(void)
{
	hw_fake_set_cpuid(0, 0, 0x16, 0x756e6547, 0x6c65746e, 0x49656e69);
	hw_fake_set_cpuid(1, 0, 0x000806ea, 0x00100800, 0x7ffafbff, 0xbfebfbff);
	hw_fake_set_cpuid(7, 0, 0x00000000, 0x029c67af, 0x00000000, 0xbc002e00);
	hw_fake_set_cpuid(0x14, 0, 0x00000001, 0x0000000f, 0x00000007, 0x00000000);
	hw_fake_set_cpuid(0x14, 1, 0x02490002, 0x003f3fff, 0x00000000, 0x00000000);
	hw_fake_set_cpuid(0x80000000u, 0, 0x80000008u, 0, 0, 0);
	hw_fake_set_cpuid(0x80000008u, 0, 0x00003027, 0, 0, 0);
}

/* Synthetic VMX capability MSRs: TRUE controls, PT in VMX, both controls allowed. */
static void seed_vmx(bool true_ctls, bool misc_pt, bool entry18, bool exit25)
{
	hw_fake_set_msr(MSR_IA32_VMX_BASIC, true_ctls ? VMX_BASIC_TRUE_CTLS : 0);
	hw_fake_set_msr(MSR_IA32_VMX_MISC, misc_pt ? (1ull << 14) : 0);
	uint64_t entry = entry18 ? (uint64_t)(1u << 18) << 32 : 0;
	uint64_t exit_ctls = exit25 ? (uint64_t)(1u << 25) << 32 : 0;

	if (true_ctls) {
		hw_fake_set_msr(MSR_IA32_VMX_TRUE_ENTRY_CTLS, entry);
		hw_fake_set_msr(MSR_IA32_VMX_TRUE_EXIT_CTLS, exit_ctls);
		hw_fake_set_msr(MSR_IA32_VMX_ENTRY_CTLS, 0);   /* must not be the ones read */
		hw_fake_set_msr(MSR_IA32_VMX_EXIT_CTLS, 0);
	} else {
		hw_fake_set_msr(MSR_IA32_VMX_ENTRY_CTLS, entry);
		hw_fake_set_msr(MSR_IA32_VMX_EXIT_CTLS, exit_ctls);
	}
}

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	memset(arena, 0xee, sizeof(arena));
	assert_int_equal(trace_ring_init(ring, sizeof(arena), 0, 0, TV_SOURCE_PT,
					 TV_OVERFLOW_STOP, 0, 0), 0);
	memset(&st, 0, sizeof(st));
	memset(table, 0xa5, sizeof(table));
	regions[0] = (struct pt_region){ PA0, reg0, sizeof(reg0) };
	regions[1] = (struct pt_region){ PA1, reg1, sizeof(reg1) };
	regions[2] = (struct pt_region){ PA2, reg2, sizeof(reg2) };
	assert_int_equal(byte_ring_init(&bytes, sink_mem, sizeof(sink_mem)), 0);
	sink = (struct pt_sink){ byte_ring_write, &bytes };
	seed_kbl_cpuid();
	seed_vmx(true, true, true, true);
	pt_caps_read(&kbl, NULL);
	hw_fake_reset();      /* every test starts with empty tables */
	return 0;
}

/* The byte the "hardware" wrote at running output position p (pass 0, 1, ...). */
static uint8_t pat(uint64_t p)
{
	return (uint8_t)(p * 7u + (p >> 8) * 13u + 1u);
}

/* Write running positions [from, to) of the output into the regions, wrapping. */
static void hw_write(uint64_t from, uint64_t to)
{
	for (uint64_t p = from; p < to; p++) {
		uint64_t o = p % TOTAL;

		if (o < 0x1000)
			reg0[o] = pat(p);
		else if (o < 0x3000)
			reg1[o - 0x1000] = pat(p);
		else
			reg2[o - 0x3000] = pat(p);
	}
}

static void set_ptr(uint64_t idx, uint64_t off)
{
	hw_fake_set_msr(PT_MSR_OUTPUT_MASK_PTRS, PT_MASK_PTRS_LOWER | idx << 7 | off << 32);
}

/* Seed what pt_drain reads: status, pointer, global status. */
static void hw_state(uint64_t status, uint64_t idx, uint64_t off, uint64_t global)
{
	hw_fake_set_msr(PT_MSR_STATUS, status);
	set_ptr(idx, off);
	hw_fake_set_msr(PT_MSR_PERF_GLOBAL_STATUS, global);
}

static void build_and_arm(enum pt_topa_mode mode, uint32_t int_entry)
{
	struct pt_options o;
	struct pt_rtit rt;
	uint64_t guest;

	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, regions, 3, mode,
				       int_entry), 0);
	pt_options_default(&o);
	assert_int_equal(pt_rtit_ctl(&kbl, &o, &rt, NULL, 0), 0);
	hw_fake_set_msr(PT_MSR_CTL, 0);
	assert_int_equal(pt_arm(&st, &rt, &guest), 0);
}

/* The stream the sink holds equals pattern positions want[i] for i < n. */
static void assert_stream(const uint64_t *pos_list, size_t n)
{
	static uint8_t got[0x10000];

	assert_int_equal(byte_ring_read(&bytes, got, sizeof(got)), n);
	for (size_t i = 0; i < n; i++)
		if (got[i] != pat(pos_list[i]))
			fail_msg("stream byte %zu: got %#x want %#x (position %#llx)", i, got[i],
				 pat(pos_list[i]), (unsigned long long)pos_list[i]);
}

static uint64_t want_pos[0x10000];

/* Expect the stream to hold positions [from, to). */
static void assert_stream_range(uint64_t from, uint64_t to)
{
	for (uint64_t p = from; p < to; p++)
		want_pos[p - from] = p;
	assert_stream(want_pos, (size_t)(to - from));
}

/* The 32-byte TV_REC_PT_SYNC at ring position pos, byte for byte. */
static void assert_sync_rec(uint64_t pos, uint64_t tsc, uint64_t off, uint64_t lost)
{
	const uint8_t want[32] = { TV_REC_PT_SYNC, 0, 32, 0, 0, 0, 0, 0,
				   Q(tsc), Q(off), Q(lost) };

	assert_memory_equal(trace_ring_data(ring) + pos, want, sizeof(want));
}

static bool msr_written(uint32_t msr, uint64_t *value)
{
	for (size_t b = 0; hw_fake_msr_write_log(b); b++) {
		const struct hw_fake_msr_write *w = hw_fake_msr_write_log(b);

		if (w->msr == msr) {
			if (value)
				*value = w->value;
			return true;
		}
	}
	return false;
}

/* --- bit positions ------------------------------------------------------------- */

static void test_ctl_bit_positions(void **state)
{
	(void)state;
	/* SDM 3C 33.2.8.2 */
	assert_int_equal(PT_CTL_TRACEEN, 0x1);
	assert_int_equal(PT_CTL_CYCEN, 0x2);
	assert_int_equal(PT_CTL_OS, 0x4);
	assert_int_equal(PT_CTL_USER, 0x8);
	assert_int_equal(PT_CTL_PWREVTEN, 0x10);
	assert_int_equal(PT_CTL_FUPONPTW, 0x20);
	assert_int_equal(PT_CTL_FABRICEN, 0x40);
	assert_int_equal(PT_CTL_CR3FILTER, 0x80);
	assert_int_equal(PT_CTL_TOPA, 0x100);
	assert_int_equal(PT_CTL_MTCEN, 0x200);
	assert_int_equal(PT_CTL_TSCEN, 0x400);
	assert_int_equal(PT_CTL_DISRETC, 0x800);
	assert_int_equal(PT_CTL_PTWEN, 0x1000);
	assert_int_equal(PT_CTL_BRANCHEN, 0x2000);
	assert_int_equal(PT_CTL_MTCFREQ_SHIFT, 14);
	assert_int_equal(PT_CTL_CYCTHRESH_SHIFT, 19);
	assert_int_equal(PT_CTL_PSBFREQ_SHIFT, 24);
	assert_int_equal(PT_CTL_ADDR_CFG_SHIFT(0), 32);
	assert_int_equal(PT_CTL_ADDR_CFG_SHIFT(1), 36);
	assert_int_equal(PT_CTL_ADDR_CFG_SHIFT(2), 40);
	assert_int_equal(PT_CTL_ADDR_CFG_SHIFT(3), 44);
	/* IA32_RTIT_STATUS (33.2.8.4), MSR numbers (Vol. 4 Table 2-2) */
	assert_int_equal(PT_STATUS_ERROR, 0x10);
	assert_int_equal(PT_STATUS_STOPPED, 0x20);
	assert_int_equal(PT_MSR_OUTPUT_BASE, 0x560);
	assert_int_equal(PT_MSR_OUTPUT_MASK_PTRS, 0x561);
	assert_int_equal(PT_MSR_CTL, 0x570);
	assert_int_equal(PT_MSR_STATUS, 0x571);
	assert_int_equal(PT_MSR_CR3_MATCH, 0x572);
	assert_int_equal(PT_MSR_ADDR_A(0), 0x580);
	assert_int_equal(PT_MSR_ADDR_B(0), 0x581);
	assert_int_equal(PT_MSR_ADDR_A(1), 0x582);
	assert_int_equal(PT_MSR_ADDR_B(2), 0x585);
	/* agree with the shared headers */
	assert_int_equal(PT_MSR_CTL, MSR_IA32_RTIT_CTL);
	assert_int_equal(PT_MSR_ADDR_A(0), MSR_IA32_RTIT_ADDR0_A);
	assert_int_equal(PT_GLOBAL_STATUS_TOPA_PMI, PERF_GLOBAL_STATUS_TOPA_PMI);
	assert_int_equal(PT_GLOBAL_STATUS_TOPA_PMI, 1ull << 55);
	assert_int_equal(PT_VMX_ENTRY_LOAD_RTIT_CTL, ENTRY_LOAD_RTIT_CTL);
	assert_int_equal(PT_VMX_ENTRY_LOAD_RTIT_CTL, 0x40000);
	assert_int_equal(PT_VMX_EXIT_CLEAR_RTIT_CTL, EXIT_CLEAR_RTIT_CTL);
	assert_int_equal(PT_VMX_EXIT_CLEAR_RTIT_CTL, 0x2000000);
	assert_int_equal(PT_VMCS_GUEST_IA32_RTIT_CTL, VMCS_GUEST_IA32_RTIT_CTL);
	assert_int_equal(PT_VMCS_GUEST_IA32_RTIT_CTL, 0x2814);
	assert_int_equal(PT_VMX_MISC_PT, VMX_MISC_PT_IN_VMX);
}

/* Every option on a CPU that has everything: one exact 64-bit value. */
static void test_ctl_value_exact(void **state)
{
	struct pt_caps all = kbl;
	struct pt_options o;
	struct pt_rtit rt;
	char why[160];

	(void)state;
	all.ptwrite = all.power_event = true;
	all.addr_ranges = 4;
	pt_options_default(&o);
	o.dis_retc = true;
	o.mtc_en = true;
	o.mtc_freq = 3;          /* bit 3 of 0x0249 */
	o.cyc_en = true;
	o.cyc_thresh = 2;
	o.psb_freq = 5;          /* bit 5 of 0x003f */
	o.ptw_en = o.fup_on_ptw = o.pwr_evt_en = true;
	o.filter.cr3 = 0x12345000;
	o.filter.nranges = 2;
	o.filter.ranges[0] = (struct trace_range){ 0xffffffff81000000ull, 0xffffffff81ffffffull };
	o.filter.ranges[1] = (struct trace_range){ 0x400000, 0x401fff };
	assert_int_equal(pt_rtit_ctl(&all, &o, &rt, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	/*
	 * CYCEn 1, OS 2, User 3, PwrEvtEn 4, FUPonPTW 5, CR3Filter 7, ToPA 8,
	 * MTCEn 9, TSCEn 10, DisRETC 11, PTWEn 12, BranchEn 13 = 0x3fbe;
	 * MTCFreq 3 << 14 = 0xc000; CycThresh 2 << 19 = 0x100000;
	 * PSBFreq 5 << 24 = 0x5000000; ADDR0_CFG 1 << 32, ADDR1_CFG 1 << 36.
	 */
	assert_int_equal(rt.ctl, 0x000000110510ffbeull);
	assert_int_equal(rt.ctl & PT_CTL_TRACEEN, 0);
	assert_int_equal(rt.cr3_match, 0x12345000);
	assert_int_equal(rt.nranges, 2);
	assert_int_equal(rt.addr_a[0], 0xffffffff81000000ull);
	assert_int_equal(rt.addr_b[0], 0xffffffff81ffffffull);
	assert_int_equal(rt.addr_a[1], 0x400000);
	assert_int_equal(rt.addr_b[1], 0x401fff);

	/* four ranges: ADDR0..3_CFG = 1 at 35:32, 39:36, 43:40, 47:44 */
	pt_options_default(&o);
	o.filter.nranges = 4;
	for (int i = 0; i < 4; i++)
		o.filter.ranges[i] = (struct trace_range){ 0x1000u * (i + 1), 0x1000u * (i + 1) + 0xfff };
	assert_int_equal(pt_rtit_ctl(&all, &o, &rt, why, sizeof(why)), 0);
	assert_int_equal(rt.ctl, 0x000011110000250cull);  /* + OS|User|ToPA|TSCEn|BranchEn */
	/* defaults: OS, User, ToPA, TSCEn, BranchEn */
	pt_options_default(&o);
	assert_int_equal(pt_rtit_ctl(&kbl, &o, &rt, why, sizeof(why)), 0);
	assert_int_equal(rt.ctl, 0x250c);
	/* kernel only / user only */
	o.filter.cpl = TRACE_CPL_KERNEL;
	assert_int_equal(pt_rtit_ctl(&kbl, &o, &rt, NULL, 0), 0);
	assert_int_equal(rt.ctl, 0x2504);
	o.filter.cpl = TRACE_CPL_USER;
	assert_int_equal(pt_rtit_ctl(&kbl, &o, &rt, NULL, 0), 0);
	assert_int_equal(rt.ctl, 0x2508);
}

static void test_topa_entry_bits(void **state)
{
	(void)state;
	/* SDM 3C 33.2.7.2: END 0, INT 2, STOP 4, Size 9:6, base 12+ */
	assert_int_equal(PT_TOPA_END, 0x1);
	assert_int_equal(PT_TOPA_INT, 0x4);
	assert_int_equal(PT_TOPA_STOP, 0x10);
	assert_int_equal(PT_TOPA_SIZE_MASK, 0x3c0);
	assert_int_equal(pt_topa_entry(0x12345000, 5, PT_TOPA_INT | PT_TOPA_STOP), 0x12345154);
	assert_int_equal(pt_topa_entry(0x7ffffff000ull, 15, 0), 0x7ffffff3c0ull);
	assert_int_equal(pt_topa_entry(0x200000, 0, PT_TOPA_END), 0x200001);
	assert_int_equal(pt_topa_size_code(0x1000), 0);
	assert_int_equal(pt_topa_size_code(0x2000), 1);
	assert_int_equal(pt_topa_size_code(0x200000), 9);
	assert_int_equal(pt_topa_size_code(0x8000000), 15);
	assert_int_equal(pt_topa_size_code(0x10000000), -1);
	assert_int_equal(pt_topa_size_code(0x800), -1);
	assert_int_equal(pt_topa_size_code(0x3000), -1);
	assert_int_equal(pt_topa_size_code(0), -1);
}

/* --- capabilities ---------------------------------------------------------------- */

static void test_caps_kaby_lake_r(void **state)
{
	struct pt_caps c;
	struct pt_caps_raw raw;

	(void)state;
	seed_kbl_cpuid();
	seed_vmx(true, true, true, true);
	pt_caps_read(&c, &raw);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
	assert_int_equal(raw.leaf14[1][0], 0x02490002);
	assert_true(c.intel && c.pt && c.vmx);
	assert_int_equal(c.max_subleaf, 1);
	/* EBX = 0xf */
	assert_true(c.cr3_filter && c.psb_cyc && c.ip_filter && c.mtc);
	assert_false(c.ptwrite || c.power_event);
	/* ECX = 0x7 */
	assert_true(c.topa && c.topa_multi && c.single_range);
	assert_false(c.transport || c.lip);
	/* sub-leaf 1 */
	assert_int_equal(c.addr_ranges, 2);
	assert_int_equal(c.mtc_periods, 0x0249);
	assert_int_equal(c.cyc_thresholds, 0x3fff);
	assert_int_equal(c.psb_freqs, 0x003f);
	assert_int_equal(c.maxphyaddr, 39);
	assert_int_equal(c.linear_bits, 48);
	assert_true(c.vmx_pt && c.entry_load_rtit && c.exit_clear_rtit);
	assert_true(c.usable);
	assert_null(c.reason);
}

static void test_caps_vmx_rules(void **state)
{
	struct pt_caps c;

	(void)state;
	/* no TRUE controls: the plain capability MSRs are the ones read */
	seed_kbl_cpuid();
	seed_vmx(false, true, true, true);
	pt_caps_read(&c, NULL);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
	assert_true(c.usable);

	hw_fake_reset();
	seed_kbl_cpuid();
	seed_vmx(true, false, true, true);
	pt_caps_read(&c, NULL);
	assert_false(c.usable);
	assert_non_null(strstr(c.reason, "IA32_VMX_MISC[14]"));

	hw_fake_reset();
	seed_kbl_cpuid();
	seed_vmx(true, true, false, true);
	pt_caps_read(&c, NULL);
	assert_false(c.usable);
	assert_non_null(strstr(c.reason, "bit 18"));

	hw_fake_reset();
	seed_kbl_cpuid();
	seed_vmx(true, true, true, false);
	pt_caps_read(&c, NULL);
	assert_false(c.usable);
	assert_non_null(strstr(c.reason, "bit 25"));

	/* no VMX in CPUID: the VMX MSRs are not read at all (they would #GP) */
	hw_fake_reset();
	seed_kbl_cpuid();
	hw_fake_set_cpuid(1, 0, 0x000806ea, 0x00100800, 0x7ffafbdf, 0xbfebfbff);
	pt_caps_read(&c, NULL);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
	assert_false(c.vmx);
	assert_true(c.pt && c.topa);
	assert_false(c.usable);

	/* PT bit but leaf 14H beyond the maximum leaf */
	hw_fake_reset();
	seed_kbl_cpuid();
	hw_fake_set_cpuid(0, 0, 0x13, 0x756e6547, 0x6c65746e, 0x49656e69);
	seed_vmx(true, true, true, true);
	pt_caps_read(&c, NULL);
	assert_false(c.pt);
	assert_false(c.topa);
	assert_non_null(strstr(c.reason, "EBX[25]"));

	/* not Intel */
	hw_fake_reset();
	seed_kbl_cpuid();
	hw_fake_set_cpuid(0, 0, 0x16, 0x68747541, 0x444d4163, 0x69746e65);
	pt_caps_read(&c, NULL);
	assert_false(c.intel || c.pt || c.usable);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
}

/* A first-generation style CPU: sub-leaf 0 only, one ToPA entry (synthetic). */
static void test_caps_single_entry(void **state)
{
	struct pt_caps_raw raw;
	struct pt_caps c;
	struct pt_options o;
	struct pt_rtit rt;
	char why[160];

	(void)state;
	memset(&raw, 0, sizeof(raw));
	raw.leaf0_eax = 0x14;
	raw.vendor_ebx = 0x756e6547;
	raw.vendor_ecx = 0x6c65746e;
	raw.vendor_edx = 0x49656e69;
	raw.leaf1_ecx = 1u << 5;
	raw.leaf7_ebx = 1u << 25;
	raw.leaf14[0][0] = 0;
	raw.leaf14[0][1] = 0x1;      /* CR3 filtering only */
	raw.leaf14[0][2] = 0x1;      /* ToPA, single entry */
	raw.leaf14[1][0] = 0x02490002;  /* must be ignored: max sub-leaf 0 */
	raw.vmx_misc = 1ull << 14;
	raw.vmx_entry_ctls = (uint64_t)(1u << 18) << 32;
	raw.vmx_exit_ctls = (uint64_t)(1u << 25) << 32;
	pt_caps_decode(&raw, &c);
	assert_true(c.usable);
	assert_false(c.topa_multi);
	assert_int_equal(c.addr_ranges, 0);
	assert_int_equal(c.mtc_periods, 0);
	assert_int_equal(c.maxphyaddr, 36);

	pt_options_default(&o);
	o.filter.nranges = 1;
	o.filter.ranges[0] = (struct trace_range){ 0x1000, 0x1fff };
	assert_int_equal(pt_rtit_ctl(&c, &o, &rt, why, sizeof(why)), PT_ERR_UNSUPPORTED);
	assert_non_null(strstr(why, "1 IP ranges, the CPU has 0"));
	pt_options_default(&o);
	o.branch_en = false;
	assert_int_equal(pt_rtit_ctl(&c, &o, &rt, why, sizeof(why)), PT_ERR_UNSUPPORTED);
	assert_non_null(strstr(why, "EBX[3]"));

	/* one region only, and no WRAP */
	assert_int_equal(pt_topa_build(&st, &c, table, 8, TABLE_PA, regions, 2, PT_MODE_STOP,
				       PT_TOPA_NO_INT), PT_ERR_UNSUPPORTED);
	assert_int_equal(pt_topa_build(&st, &c, table, 8, TABLE_PA, regions, 1, PT_MODE_WRAP,
				       PT_TOPA_NO_INT), PT_ERR_UNSUPPORTED);
	assert_int_equal(pt_topa_build(&st, &c, table, 8, TABLE_PA, regions, 1, PT_MODE_STOP, 0), 0);
	assert_int_equal(table[0], PA0 | PT_TOPA_INT | PT_TOPA_STOP);
	assert_int_equal(table[1], TABLE_PA | PT_TOPA_END);
}

/* --- refusing impossible requests --------------------------------------------------- */

static void expect_refused(const struct pt_options *o, int err, const char *needle)
{
	struct pt_rtit rt;
	char why[160];

	memset(&rt, 0x5a, sizeof(rt));
	assert_int_equal(pt_rtit_ctl(&kbl, o, &rt, why, sizeof(why)), err);
	if (!strstr(why, needle))
		fail_msg("why \"%s\" lacks \"%s\"", why, needle);
	assert_int_equal(rt.ctl, 0);          /* nothing half-built escapes */
	assert_int_equal(rt.nranges, 0);
}

static void test_refuse_impossible(void **state)
{
	struct pt_options o;
	struct pt_rtit rt;

	(void)state;
	pt_options_default(&o);
	o.mtc_en = true;
	o.mtc_freq = 1;                         /* 0x0249 lacks bit 1 */
	expect_refused(&o, PT_ERR_UNSUPPORTED, "mtc_freq 1 not in");
	o.mtc_freq = 9;                         /* has bit 9 */
	assert_int_equal(pt_rtit_ctl(&kbl, &o, &rt, NULL, 0), 0);
	assert_int_equal(rt.ctl, 0x250cull | PT_CTL_MTCEN | 9ull << 14);

	pt_options_default(&o);
	o.mtc_freq = 3;                         /* without mtc_en */
	expect_refused(&o, PT_ERR_INVAL, "without mtc_en");

	pt_options_default(&o);
	o.cyc_en = true;
	o.cyc_thresh = 14;                      /* 0x3fff: 0..13 */
	expect_refused(&o, PT_ERR_UNSUPPORTED, "cyc_thresh 14");
	o.cyc_thresh = 13;
	assert_int_equal(pt_rtit_ctl(&kbl, &o, &rt, NULL, 0), 0);
	assert_int_equal(rt.ctl, 0x250cull | PT_CTL_CYCEN | 13ull << 19);

	pt_options_default(&o);
	o.psb_freq = 6;                         /* 0x003f: 0..5 */
	expect_refused(&o, PT_ERR_UNSUPPORTED, "psb_freq 6");
	o.psb_freq = 16;
	expect_refused(&o, PT_ERR_INVAL, "0..15");

	pt_options_default(&o);
	o.ptw_en = true;
	expect_refused(&o, PT_ERR_UNSUPPORTED, "EBX[4]");
	pt_options_default(&o);
	o.fup_on_ptw = true;
	expect_refused(&o, PT_ERR_UNSUPPORTED, "EBX[4]");
	pt_options_default(&o);
	o.pwr_evt_en = true;
	expect_refused(&o, PT_ERR_UNSUPPORTED, "EBX[5]");

	/* filters */
	pt_options_default(&o);
	o.filter.cpl = 0;
	expect_refused(&o, PT_ERR_INVAL, "no privilege level");
	o.filter.cpl = 1u << 1;                 /* CPL 1 without CPL 3 */
	expect_refused(&o, PT_ERR_UNSUPPORTED, "CPL 1-3");
	o.filter.cpl = 1u << 4;
	expect_refused(&o, PT_ERR_INVAL, "unknown bits");
	o.filter.cpl = TRACE_CPL_ALL | (1u << 1) | (1u << 2);
	assert_int_equal(pt_rtit_ctl(&kbl, &o, &rt, NULL, 0), 0);
	assert_int_equal(rt.ctl, 0x250c);

	pt_options_default(&o);
	o.filter.cr3 = 0x12345018;              /* bits 4:0 set */
	expect_refused(&o, PT_ERR_INVAL, "bits 4:0");

	pt_options_default(&o);
	o.filter.nranges = 3;                   /* the CPU has 2 */
	for (int i = 0; i < 3; i++)
		o.filter.ranges[i] = (struct trace_range){ 0x1000, 0x2000 };
	expect_refused(&o, PT_ERR_UNSUPPORTED, "3 IP ranges, the CPU has 2");
	o.filter.nranges = 5;
	expect_refused(&o, PT_ERR_INVAL, "at most 4");
	o.filter.nranges = 1;
	o.filter.ranges[0] = (struct trace_range){ 0x0000800000000000ull, 0x0000800000001000ull };
	expect_refused(&o, PT_ERR_INVAL, "not canonical");
	o.filter.ranges[0] = (struct trace_range){ 0x3000, 0x2000 };
	expect_refused(&o, PT_ERR_INVAL, "empty");

	/* a CPU without ToPA is refused outright */
	struct pt_caps no_topa = kbl;

	no_topa.topa = false;
	pt_options_default(&o);
	assert_int_equal(pt_rtit_ctl(&no_topa, &o, &rt, NULL, 0), PT_ERR_UNSUPPORTED);
	assert_int_equal(pt_rtit_ctl(NULL, &o, &rt, NULL, 0), PT_ERR_INVAL);
}

/* --- ToPA --------------------------------------------------------------------------- */

static void test_topa_build_tables(void **state)
{
	(void)state;
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, regions, 3, PT_MODE_STOP, 1), 0);
	assert_int_equal(table[0], PA0 | 0u << 6);
	assert_int_equal(table[1], PA1 | 1u << 6 | PT_TOPA_INT);
	assert_int_equal(table[2], PA2 | PT_TOPA_STOP);
	assert_int_equal(table[3], TABLE_PA | PT_TOPA_END);
	assert_int_equal(table[4], 0xa5a5a5a5a5a5a5a5ull);   /* untouched past END */
	assert_int_equal(st.total, TOTAL);
	assert_int_equal(st.nregions, 3);

	memset(table, 0xa5, sizeof(table));
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, regions, 3, PT_MODE_WRAP,
				       PT_TOPA_NO_INT), 0);
	assert_int_equal(table[0], PA0);
	assert_int_equal(table[1], PA1 | 1u << 6);
	assert_int_equal(table[2], PA2 | PT_TOPA_INT);        /* each round raises a PMI */
	assert_int_equal(table[3], TABLE_PA | PT_TOPA_END);

	/* a 128 MiB region: size code 15 in bits 9:6 */
	struct pt_region big[1] = { { 0x8000000ull, reg0, 0x8000000ull } };

	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, big, 1, PT_MODE_STOP,
				       PT_TOPA_NO_INT), 0);
	assert_int_equal(table[0], 0x8000000ull | 15u << 6 | PT_TOPA_STOP);
}

static void test_topa_build_checks(void **state)
{
	struct pt_region bad[3];

	(void)state;
	memcpy(bad, regions, sizeof(bad));
	bad[1].pa = 0x00101000;                 /* 8 KiB region at a 4 KiB boundary */
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, bad, 3, PT_MODE_STOP,
				       PT_TOPA_NO_INT), PT_ERR_ALIGN);
	memcpy(bad, regions, sizeof(bad));
	bad[1].size = 0x3000;                   /* not a power of two */
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, bad, 3, PT_MODE_STOP,
				       PT_TOPA_NO_INT), PT_ERR_ALIGN);
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA + 0x80, regions, 3,
				       PT_MODE_STOP, PT_TOPA_NO_INT), PT_ERR_ALIGN);
	memcpy(bad, regions, sizeof(bad));
	bad[2].pa = 1ull << 39;                 /* MAXPHYADDR 39 */
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, bad, 3, PT_MODE_STOP,
				       PT_TOPA_NO_INT), PT_ERR_PHYS);
	bad[2].pa = (1ull << 39) - 0x1000;      /* the last page below it is fine */
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, bad, 3, PT_MODE_STOP,
				       PT_TOPA_NO_INT), 0);
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, 1ull << 39, regions, 3, PT_MODE_STOP,
				       PT_TOPA_NO_INT), PT_ERR_PHYS);
	memcpy(bad, regions, sizeof(bad));
	bad[0].va = NULL;
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, bad, 3, PT_MODE_STOP,
				       PT_TOPA_NO_INT), PT_ERR_INVAL);
	assert_int_equal(pt_topa_build(&st, &kbl, table, 3, TABLE_PA, regions, 3, PT_MODE_STOP,
				       PT_TOPA_NO_INT), PT_ERR_INVAL);   /* no room for END */
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, regions, 3, PT_MODE_STOP, 3),
			 PT_ERR_INVAL);
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, regions, 0, PT_MODE_STOP,
				       PT_TOPA_NO_INT), PT_ERR_INVAL);
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, regions, 3,
				       (enum pt_topa_mode)7, PT_TOPA_NO_INT), PT_ERR_INVAL);
	/* nothing was written by any refused call */
	memset(table, 0xa5, sizeof(table));
	memset(&st, 0, sizeof(st));
	memcpy(bad, regions, sizeof(bad));
	bad[2].size = 0x800;
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, bad, 3, PT_MODE_STOP,
				       PT_TOPA_NO_INT), PT_ERR_ALIGN);
	for (int i = 0; i < 8; i++)
		assert_int_equal(table[i], 0xa5a5a5a5a5a5a5a5ull);
	assert_false(st.built);
}

/* --- arming --------------------------------------------------------------------------- */

static void test_arm_writes_msrs_never_traceen(void **state)
{
	struct pt_options o;
	struct pt_rtit rt;
	uint64_t guest = 0, v;

	(void)state;
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, regions, 3, PT_MODE_STOP, 1), 0);
	pt_options_default(&o);
	o.filter.cr3 = 0xabc000;
	o.filter.nranges = 2;
	o.filter.ranges[0] = (struct trace_range){ 0x1000, 0x1fff };
	o.filter.ranges[1] = (struct trace_range){ 0xffffffff80000000ull, 0xffffffff8fffffffull };
	assert_int_equal(pt_rtit_ctl(&kbl, &o, &rt, NULL, 0), 0);

	/* TraceEn already 1 (someone traces): nothing is written */
	hw_fake_set_msr(PT_MSR_CTL, PT_CTL_TRACEEN | PT_CTL_TOPA);
	assert_int_equal(pt_arm(&st, &rt, &guest), PT_ERR_BUSY);
	assert_int_equal(hw_fake_msr_write_count, 0);
	assert_false(st.armed);

	hw_fake_set_msr(PT_MSR_CTL, 0);
	assert_int_equal(pt_arm(&st, &rt, &guest), 0);
	assert_int_equal(guest, rt.ctl | PT_CTL_TRACEEN);
	assert_int_equal(guest, 0x110000258dull);
	assert_int_equal(hw_fake_get_msr(PT_MSR_OUTPUT_BASE), TABLE_PA);
	assert_int_equal(hw_fake_get_msr(PT_MSR_OUTPUT_MASK_PTRS), 0x7f);
	assert_true(msr_written(PT_MSR_STATUS, &v));
	assert_int_equal(v, 0);
	assert_int_equal(hw_fake_get_msr(PT_MSR_CR3_MATCH), 0xabc000);
	assert_int_equal(hw_fake_get_msr(0x580), 0x1000);
	assert_int_equal(hw_fake_get_msr(0x581), 0x1fff);
	assert_int_equal(hw_fake_get_msr(0x582), 0xffffffff80000000ull);
	assert_int_equal(hw_fake_get_msr(0x583), 0xffffffff8fffffffull);
	assert_false(hw_fake_has_msr(0x584));
	assert_true(msr_written(PT_MSR_PERF_GLOBAL_OVF_CTRL, &v));
	assert_int_equal(v, 1ull << 55);
	assert_false(msr_written(PT_MSR_CTL, NULL));    /* TraceEn only via the VMCS */
	assert_int_equal(hw_fake_msr_write_count, 9);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
	assert_true(st.armed);

	/* a value with TraceEn, or without ToPA, is not armed */
	rt.ctl |= PT_CTL_TRACEEN;
	assert_int_equal(pt_arm(&st, &rt, &guest), PT_ERR_INVAL);
	rt.ctl &= ~(PT_CTL_TRACEEN | PT_CTL_TOPA);
	assert_int_equal(pt_arm(&st, &rt, &guest), PT_ERR_INVAL);
	struct pt_state fresh;

	memset(&fresh, 0, sizeof(fresh));
	rt.ctl |= PT_CTL_TOPA;
	assert_int_equal(pt_arm(&fresh, &rt, &guest), PT_ERR_INVAL);   /* not built */
}

/* --- output position ------------------------------------------------------------------ */

static void test_output_pointer_math(void **state)
{
	uint64_t lin, pos;

	(void)state;
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, regions, 3, PT_MODE_STOP,
				       PT_TOPA_NO_INT), 0);
#define MP(i, o) (0x7full | (uint64_t)(i) << 7 | (uint64_t)(o) << 32)
	assert_int_equal(pt_output_linear(&st, MP(0, 0), &lin), 0);
	assert_int_equal(lin, 0);
	assert_int_equal(pt_output_linear(&st, MP(0, 0x10), &lin), 0);
	assert_int_equal(lin, 0x10);
	assert_int_equal(pt_output_linear(&st, MP(1, 0), &lin), 0);
	assert_int_equal(lin, 0x1000);
	assert_int_equal(pt_output_linear(&st, MP(1, 0x1fff), &lin), 0);
	assert_int_equal(lin, 0x2fff);
	assert_int_equal(pt_output_linear(&st, MP(2, 0x123), &lin), 0);
	assert_int_equal(lin, 0x3123);
	assert_int_equal(pt_output_linear(&st, MP(2, 0x1000), &lin), 0);   /* ToPA STOP */
	assert_int_equal(lin, TOTAL);
	assert_int_equal(pt_output_linear(&st, MP(3, 0), &lin), 0);        /* the END entry */
	assert_int_equal(lin, TOTAL);
	/* bits 6:0 do not matter */
	assert_int_equal(pt_output_linear(&st, MP(1, 4) & ~0x7full, &lin), 0);
	assert_int_equal(lin, 0x1004);
	assert_int_equal(pt_output_linear(&st, MP(3, 1), &lin), PT_ERR_HW);
	assert_int_equal(pt_output_linear(&st, MP(4, 0), &lin), PT_ERR_HW);
	assert_int_equal(pt_output_linear(&st, MP(1, 0x2001), &lin), PT_ERR_HW);
	assert_int_equal(pt_output_linear(&st, MP(0x1ffffff, 0), &lin), PT_ERR_HW);

	/* running count: what the drains accounted plus the current offset */
	st.hw_bytes = 0x10000;
	hw_fake_set_msr(PT_MSR_OUTPUT_MASK_PTRS, MP(1, 0x80));
	assert_int_equal(pt_output_pos(&st, &pos), 0);
	assert_int_equal(pos, 0x11080);
#undef MP
}

/* --- draining --------------------------------------------------------------------------- */

static void test_drain_normal_and_rewind(void **state)
{
	(void)state;
	build_and_arm(PT_MODE_STOP, 1);
	assert_int_equal(ring->head, 0);

	/* nothing new: no MSR written, no record */
	hw_state(0, 0, 0, 0);
	uint64_t writes = hw_fake_msr_write_count;

	assert_int_equal(pt_drain(&st, &sink, ring, 100), 0);
	assert_int_equal(hw_fake_msr_write_count, writes);
	assert_int_equal(ring->head, 0);

	/* 0x1100 bytes: region 0 and 0x100 of region 1 */
	hw_write(0, 0x1100);
	hw_state(0, 1, 0x100, 0);
	assert_int_equal(pt_drain(&st, &sink, ring, 200), 0);
	assert_stream_range(0, 0x1100);
	assert_sync_rec(0, 200, 0x1100, 0);
	assert_int_equal(ring->head, 32);
	assert_int_equal(hw_fake_get_msr(PT_MSR_OUTPUT_MASK_PTRS), 0x7f);   /* rewound */
	assert_int_equal(st.stats.bytes, 0x1100);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);

	/* after the rewind the hardware starts at region 0 again */
	hw_write(0, 0x20);
	hw_state(0, 0, 0x20, 0);
	assert_int_equal(pt_drain(&st, &sink, ring, 300), 0);
	assert_stream_range(0, 0x20);
	assert_sync_rec(32, 300, 0x1120, 0);
	assert_int_equal(st.stream_bytes, 0x1120);
	assert_int_equal(st.lost, 0);

	/* all of the buffer exactly, pointer on the last region's end without STOP status */
	hw_write(0, TOTAL);
	hw_state(0, 2, 0x1000, 0);
	assert_int_equal(pt_drain(&st, &sink, ring, 400), 0);
	assert_stream_range(0, TOTAL);
	assert_sync_rec(64, 400, 0x1120 + TOTAL, 0);
}

static void test_drain_wrap_counts_overwritten(void **state)
{
	(void)state;
	build_and_arm(PT_MODE_WRAP, PT_TOPA_NO_INT);

	/* one full round plus 0x80: the first 0x80 bytes were written over */
	hw_write(0, TOTAL + 0x80);
	hw_state(0, 0, 0x80, PT_GLOBAL_STATUS_TOPA_PMI);
	assert_int_equal(pt_drain(&st, &sink, ring, 500), 0);
	assert_stream_range(0x80, TOTAL + 0x80);
	assert_sync_rec(0, 500, 0, 0x80);              /* the gap, before the bytes */
	assert_sync_rec(32, 500, TOTAL, 0x80);
	assert_int_equal(ring->head, 64);
	assert_int_equal(st.stats.wraps, 1);
	assert_int_equal(st.stats.wrapped_bytes, 0x80);
	assert_int_equal(st.hw_bytes, TOTAL + 0x80);
	assert_true(st.pmi_taken);
	uint64_t v;

	assert_true(msr_written(PT_MSR_PERF_GLOBAL_OVF_CTRL, &v));
	assert_int_equal(v, 1ull << 55);
	assert_int_equal(hw_fake_get_msr(PT_MSR_OUTPUT_MASK_PTRS), 0x7f);

	/* exactly one round: nothing lost, the whole buffer */
	hw_write(0, TOTAL);
	hw_state(0, 0, 0, PT_GLOBAL_STATUS_TOPA_PMI);
	assert_int_equal(pt_drain(&st, &sink, ring, 600), 0);
	assert_stream_range(0, TOTAL);
	assert_sync_rec(64, 600, 2 * TOTAL, 0x80);
	assert_int_equal(st.stats.wraps, 2);
	assert_int_equal(ring->head, 96);
}

static void test_drain_wrap_int_boundary(void **state)
{
	(void)state;
	/* INT on region 0 (ends at 0x1000): a PMI with the pointer past it is no wrap */
	build_and_arm(PT_MODE_WRAP, 0);
	hw_write(0, 0x1800);
	hw_state(0, 1, 0x800, PT_GLOBAL_STATUS_TOPA_PMI);
	assert_int_equal(pt_drain(&st, &sink, ring, 1), 0);
	assert_stream_range(0, 0x1800);
	assert_int_equal(st.lost, 0);
	assert_int_equal(st.stats.wraps, 0);
	/* exactly at the end of the INT region: it is full, the PMI is explained */
	hw_write(0, 0x1000);
	hw_state(0, 1, 0, PT_GLOBAL_STATUS_TOPA_PMI);
	assert_int_equal(pt_drain(&st, &sink, ring, 1), 0);
	assert_stream_range(0, 0x1000);
	assert_int_equal(st.lost, 0);
	assert_int_equal(st.stats.wraps, 0);
	/* one byte short of it: the PMI can only come from a full round */
	hw_write(0, TOTAL + 0xfff);
	hw_state(0, 0, 0xfff, PT_GLOBAL_STATUS_TOPA_PMI);
	assert_int_equal(pt_drain(&st, &sink, ring, 1), 0);
	assert_stream_range(0xfff, TOTAL + 0xfff);
	assert_int_equal(st.lost, 0xfff);
	assert_int_equal(st.stats.wraps, 1);

	/* INT on region 1 (ends at 0x3000): the same PMI at 0x1800 means a round */
	setup(NULL);
	build_and_arm(PT_MODE_WRAP, 1);
	hw_write(0, TOTAL + 0x1800);
	hw_state(0, 1, 0x800, PT_GLOBAL_STATUS_TOPA_PMI);
	assert_int_equal(pt_drain(&st, &sink, ring, 2), 0);
	assert_stream_range(0x1800, TOTAL + 0x1800);
	assert_int_equal(st.lost, 0x1800);
	assert_int_equal(st.stats.wraps, 1);

	/* STOP mode never reads a PMI as a wrap */
	setup(NULL);
	build_and_arm(PT_MODE_STOP, 1);
	hw_write(0, 0x800);
	hw_state(0, 0, 0x800, PT_GLOBAL_STATUS_TOPA_PMI);
	assert_int_equal(pt_drain(&st, &sink, ring, 3), 0);
	assert_stream_range(0, 0x800);
	assert_int_equal(st.lost, 0);
}

static void test_drain_stop(void **state)
{
	uint64_t v;
	struct trace_cursor c;
	uint8_t buf[256];
	size_t len;

	(void)state;
	build_and_arm(PT_MODE_STOP, 1);
	hw_write(0, TOTAL);
	/* SDM 33.2.7.2: index of the STOP entry, offset = its size */
	hw_state(PT_STATUS_STOPPED, 2, 0x1000, PT_GLOBAL_STATUS_TOPA_PMI);
	hw_fake_set_msr(PT_MSR_OUTPUT_BASE, TABLE_PA);
	assert_int_equal(pt_drain(&st, &sink, ring, 700), 0);
	assert_stream_range(0, TOTAL);
	assert_sync_rec(0, 700, TOTAL, 1);             /* gap after the bytes, counted */
	assert_int_equal(st.stats.stops, 1);
	assert_true(msr_written(PT_MSR_STATUS, &v));
	assert_int_equal(v, 0);
	assert_int_equal(hw_fake_get_msr(PT_MSR_OUTPUT_MASK_PTRS), 0x7f);
	/* then a LOG record saying so */
	assert_int_equal(trace_ring_cursor_tail(ring, &c), 0);
	assert_int_equal(trace_ring_peek(ring, &c, buf, sizeof(buf), &len), 0);
	assert_true(len > 32);
	assert_int_equal(buf[32], TV_REC_LOG);
	assert_int_equal(buf[33], 1);                  /* warn */
	assert_memory_equal(buf + 48, "pt: ToPA STOP", 13);

	/* the next stretch starts clean */
	hw_write(0, 0x10);
	hw_state(0, 0, 0x10, 0);
	assert_int_equal(pt_drain(&st, &sink, ring, 800), 0);
	assert_stream_range(0, 0x10);
	assert_int_equal(st.stream_bytes, TOTAL + 0x10);
	assert_int_equal(st.lost, 1);
}

static void test_drain_error_and_bad_pointer(void **state)
{
	(void)state;
	build_and_arm(PT_MODE_STOP, PT_TOPA_NO_INT);
	hw_write(0, 0x40);
	hw_state(PT_STATUS_ERROR, 0, 0x40, 0);
	assert_int_equal(pt_drain(&st, &sink, ring, 10), 0);
	assert_stream_range(0, 0x40);
	assert_sync_rec(0, 10, 0x40, 1);
	assert_int_equal(st.stats.errors, 1);
	assert_int_equal(hw_fake_get_msr(PT_MSR_STATUS), 0);

	/* an index beyond the END entry: nothing copied, a gap, reset */
	hw_state(0, 9, 0, 0);
	hw_fake_set_msr(PT_MSR_OUTPUT_BASE, 0xdead000);
	assert_int_equal(pt_drain(&st, &sink, ring, 20), PT_ERR_HW);
	assert_int_equal(byte_ring_read(&bytes, (uint8_t[1]){ 0 }, 1), 0);
	assert_int_equal(st.lost, 2);
	assert_int_equal(st.stats.bad_pointers, 1);
	assert_int_equal(hw_fake_get_msr(PT_MSR_OUTPUT_MASK_PTRS), 0x7f);
	assert_int_equal(hw_fake_get_msr(PT_MSR_OUTPUT_BASE), TABLE_PA);
	/* records: SYNC, LOG, SYNC(offset 0x40, lost 2), LOG */
	assert_int_equal(st.stats.syncs, 2);
}

static void test_drain_sink_full(void **state)
{
	static uint8_t small[0x1000];

	(void)state;
	build_and_arm(PT_MODE_STOP, PT_TOPA_NO_INT);
	assert_int_equal(byte_ring_init(&bytes, small, sizeof(small)), 0);
	hw_write(0, 0x1100);
	hw_state(0, 1, 0x100, 0);
	assert_int_equal(pt_drain(&st, &sink, ring, 30), 0);
	assert_stream_range(0, 0x1000);
	assert_sync_rec(0, 30, 0x1000, 0x100);         /* gap where the sink stopped */
	assert_int_equal(st.stats.sink_dropped, 0x100);
	assert_int_equal(hw_fake_get_msr(PT_MSR_OUTPUT_MASK_PTRS), 0x7f);
}

static void test_drain_requires_arm(void **state)
{
	(void)state;
	assert_int_equal(pt_drain(&st, &sink, ring, 0), PT_ERR_INVAL);
	assert_int_equal(pt_topa_build(&st, &kbl, table, 8, TABLE_PA, regions, 3, PT_MODE_STOP,
				       PT_TOPA_NO_INT), 0);
	assert_int_equal(pt_drain(&st, &sink, ring, 0), PT_ERR_INVAL);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
	build_and_arm(PT_MODE_STOP, PT_TOPA_NO_INT);
	assert_int_equal(pt_drain(&st, NULL, ring, 0), PT_ERR_INVAL);
	assert_int_equal(pt_drain(&st, &sink, NULL, 0), PT_ERR_INVAL);

	/* TraceEn still 1 (no "clear IA32_RTIT_CTL" on exit): hands off */
	hw_state(PT_STATUS_STOPPED, 1, 0x10, PT_GLOBAL_STATUS_TOPA_PMI);
	hw_fake_set_msr(PT_MSR_CTL, PT_CTL_TRACEEN | PT_CTL_TOPA);
	uint64_t writes = hw_fake_msr_write_count;

	assert_int_equal(pt_drain(&st, &sink, ring, 0), PT_ERR_BUSY);
	assert_int_equal(hw_fake_msr_write_count, writes);
	assert_int_equal(ring->head, 0);
	assert_int_equal(st.stats.drains, 0);
}

/* --- PMIs ------------------------------------------------------------------------------------ */

static void test_pmi_ours_and_not(void **state)
{
	uint64_t other = 99, v;

	(void)state;
	/* not armed: never ours */
	hw_fake_set_msr(PT_MSR_PERF_GLOBAL_STATUS, PT_GLOBAL_STATUS_TOPA_PMI);
	assert_int_equal(pt_on_pmi(&st, &sink, ring, 1, &other), PT_PMI_NOT_OURS);
	assert_int_equal(other, 0);
	assert_int_equal(hw_fake_msr_write_count, 0);

	build_and_arm(PT_MODE_STOP, 1);
	/* a guest counter's PMI (PMC0 overflow): not ours, nothing cleared */
	hw_state(0, 0, 0, 1ull << 0);
	uint64_t writes = hw_fake_msr_write_count;

	assert_int_equal(pt_on_pmi(&st, &sink, ring, 2, &other), PT_PMI_NOT_OURS);
	assert_int_equal(other, 1);
	assert_int_equal(hw_fake_msr_write_count, writes);

	/* ToPA PMI plus a guest counter: ours; only bit 55 is cleared; drained */
	hw_write(0, 0x1004);
	hw_state(0, 1, 0x4, PT_GLOBAL_STATUS_TOPA_PMI | 1ull << 32);
	assert_int_equal(pt_on_pmi(&st, &sink, ring, 3, &other), PT_PMI_OURS);
	assert_int_equal(other, 1ull << 32);
	assert_true(msr_written(PT_MSR_PERF_GLOBAL_OVF_CTRL, &v));
	assert_int_equal(v, 1ull << 55);
	assert_stream_range(0, 0x1004);
	assert_int_equal(st.stats.pmis, 2);
	assert_int_equal(st.stats.pmis_ours, 1);
	assert_false(st.pmi_taken);
}

static void test_pmi_consumed_by_earlier_drain(void **state)
{
	uint64_t other;

	(void)state;
	build_and_arm(PT_MODE_STOP, 0);
	/* an exit drains first and sees the ToPA status bit ... */
	hw_write(0, 0x1010);
	hw_state(0, 1, 0x10, PT_GLOBAL_STATUS_TOPA_PMI);
	assert_int_equal(pt_drain(&st, &sink, ring, 1), 0);
	assert_true(st.pmi_taken);
	/* ... the hardware cleared it (OVF_CTRL); the interrupt arrives later */
	hw_state(0, 0, 0, 0);
	assert_int_equal(pt_on_pmi(&st, &sink, ring, 2, &other), PT_PMI_OURS);
	assert_int_equal(other, 0);
	/* once only */
	assert_int_equal(pt_on_pmi(&st, &sink, ring, 3, &other), PT_PMI_NOT_OURS);
	assert_stream_range(0, 0x1010);
}

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(pt_strerror(PT_ERR_BUSY), "IA32_RTIT_CTL.TraceEn is set");
	assert_string_equal(pt_strerror(-99), "unknown error");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_ctl_bit_positions, setup),
		cmocka_unit_test_setup(test_ctl_value_exact, setup),
		cmocka_unit_test_setup(test_topa_entry_bits, setup),
		cmocka_unit_test_setup(test_caps_kaby_lake_r, setup),
		cmocka_unit_test_setup(test_caps_vmx_rules, setup),
		cmocka_unit_test_setup(test_caps_single_entry, setup),
		cmocka_unit_test_setup(test_refuse_impossible, setup),
		cmocka_unit_test_setup(test_topa_build_tables, setup),
		cmocka_unit_test_setup(test_topa_build_checks, setup),
		cmocka_unit_test_setup(test_arm_writes_msrs_never_traceen, setup),
		cmocka_unit_test_setup(test_output_pointer_math, setup),
		cmocka_unit_test_setup(test_drain_normal_and_rewind, setup),
		cmocka_unit_test_setup(test_drain_wrap_counts_overwritten, setup),
		cmocka_unit_test_setup(test_drain_wrap_int_boundary, setup),
		cmocka_unit_test_setup(test_drain_stop, setup),
		cmocka_unit_test_setup(test_drain_error_and_bad_pointer, setup),
		cmocka_unit_test_setup(test_drain_sink_full, setup),
		cmocka_unit_test_setup(test_drain_requires_arm, setup),
		cmocka_unit_test_setup(test_pmi_ours_and_not, setup),
		cmocka_unit_test_setup(test_pmi_consumed_by_earlier_drain, setup),
		cmocka_unit_test_setup(test_strerror, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
