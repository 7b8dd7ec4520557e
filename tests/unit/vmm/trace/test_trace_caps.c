/* SPDX-License-Identifier: MIT */
/*
 * test_trace_caps.c - per-CPU trace capabilities and the backend choice
 * (vmm/trace/caps.c) on recorded values of real CPUs:
 *
 *  - Intel Core i7-6700K (Skylake-S): CPUID and MSRs from VirtualBox's CPU
 *    database, src/VBox/VMM/VMMR3/cpus/Intel_Core_i7_6700K.h @ 4908d8d1a85c
 *    (VBoxCpuReport v5.0.51, 2015-11-04): IA32_VMX_* 0x480-0x490,
 *    IA32_MISC_ENABLE 0x850089, IA32_PERF_CAPABILITIES 0x33c5.
 *  - Intel Core 2 X6800 (Conroe, 06_0FH): same database,
 *    Intel_Core2_X6800_2_93GHz.h (VBoxCpuReport v5.2.1, 2017-11-04):
 *    no TRUE controls (IA32_VMX_BASIC[55] = 0), no MTF, LBR format 2.
 *  - Bochs 3.0 corei7_skylake_x (bochs/cpu/cpudb/intel/corei7_skylake-x.cc):
 *    CPUID.1 reports DS, DTES64, DS-CPL and PDCM, leaf 7 has no PT; its
 *    VMX MSRs are the real Skylake-X values listed in that file; msr.cc has
 *    no IA32_MISC_ENABLE, IA32_PERF_CAPABILITIES nor IA32_DEBUGCTL, so
 *    with ignore_bad_msrs=1 (tests/lib.sh) they read 0 and drop writes.
 *  - Intel Core i9-12900K (Alder Lake P-core): CPUID from libcpuid
 *    (docs/CPUS.md), arch LBR; no MSR dump was available, so its VMX MSRs
 *    are the 6700K's (marked where used).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/hw/msr.h"
#include "vmm/trace/caps.h"
#include "vmm/vmx/vmx_defs.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct hw_fake_cpuid_entry skylake_6700k[] = {
	{ 0x00000000, 0, 0x00000016, 0x756e6547, 0x6c65746e, 0x49656e69 },
	{ 0x00000001, 0, 0x000506e3, 0x02100800, 0x7ffafbbf, 0xbfebfbff },
	{ 0x00000007, 0, 0x00000000, 0x029c6fbf, 0x00000000, 0x00000000 },
	{ 0x00000014, 0, 0x00000001, 0x0000000f, 0x00000007, 0x00000000 },
	{ 0x00000014, 1, 0x02490002, 0x003f3fff, 0x00000000, 0x00000000 },
	{ 0x80000000, 0, 0x80000008, 0x00000000, 0x00000000, 0x00000000 },
	{ 0x80000001, 0, 0x00000000, 0x00000000, 0x00000121, 0x2c100800 },
	{ 0x80000007, 0, 0x00000000, 0x00000000, 0x00000000, 0x00000100 },
	{ 0x80000008, 0, 0x00003027, 0x00000000, 0x00000000, 0x00000000 },
};

static const struct { uint32_t msr; uint64_t value; } skylake_6700k_msrs[] = {
	{ 0x480, 0x00da040000000004ull }, { 0x482, 0xfff9fffe0401e172ull },
	{ 0x483, 0x01ffffff00036dffull }, { 0x484, 0x0003ffff000011ffull },
	{ 0x485, 0x000000007004c1e7ull }, { 0x48e, 0xfff9fffe04006172ull },
	{ 0x48f, 0x01ffffff00036dfbull }, { 0x490, 0x0003ffff000011fbull },
	{ 0x1a0, 0x0000000000850089ull }, { 0x345, 0x00000000000033c5ull },
	{ 0x1d9, 0 },
};

static const struct hw_fake_cpuid_entry core2_x6800[] = {
	{ 0x00000000, 0, 0x0000000a, 0x756e6547, 0x6c65746e, 0x49656e69 },
	{ 0x00000001, 0, 0x000006f6, 0x00020800, 0x0000e3bd, 0xbfebfbff },
	{ 0x00000007, 0, 0x00000000, 0x00000000, 0x00000000, 0x00000000 },
	{ 0x0000000a, 0, 0x07280202, 0x00000000, 0x00000000, 0x00000000 },
	{ 0x80000000, 0, 0x80000008, 0x00000000, 0x00000000, 0x00000000 },
	{ 0x80000001, 0, 0x00000000, 0x00000000, 0x00000001, 0x20100800 },
	{ 0x80000007, 0, 0x00000000, 0x00000000, 0x00000000, 0x00000000 },
	{ 0x80000008, 0, 0x00003024, 0x00000000, 0x00000000, 0x00000000 },
};

static const struct { uint32_t msr; uint64_t value; } core2_x6800_msrs[] = {
	{ 0x480, 0x001a040000000007ull }, { 0x482, 0x77b9fffe0401e172ull },
	{ 0x483, 0x0003efff00036dffull }, { 0x484, 0x00001fff000011ffull },
	{ 0x485, 0x00000000000403c0ull }, { 0x1a0, 0x0000004062972489ull },
	{ 0x345, 0x0000000000000082ull }, { 0x1d9, 0x1 },
};

static const struct hw_fake_cpuid_entry alderlake_12900k[] = {
	{ 0x00000000, 0, 0x00000020, 0x756E6547, 0x6C65746E, 0x49656E69 },
	{ 0x00000001, 0, 0x00090672, 0x00800800, 0x7FFAFBFF, 0xBFEBFBFF },
	{ 0x00000007, 0, 0x00000001, 0x239CA7EB, 0x98C027AC, 0xFC1CC410 },
	{ 0x00000014, 0, 0x00000001, 0x0000005F, 0x00000007, 0x00000000 },
	{ 0x00000014, 1, 0x02490002, 0x003F003F, 0x00000000, 0x00000000 },
	{ 0x0000001C, 0, 0x4000000B, 0x00000007, 0x00000007, 0x00000000 },
	{ 0x80000000, 0, 0x80000008, 0x00000000, 0x00000000, 0x00000000 },
};

static struct trace_caps tc;
static struct trace_caps_raw raw;
static char why[256];

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	memset(&tc, 0xa5, sizeof(tc));
	memset(why, 0, sizeof(why));
	return 0;
}

static void load_6700k(void)
{
	hw_fake_load_cpu(skylake_6700k, N(skylake_6700k));
	for (size_t i = 0; i < N(skylake_6700k_msrs); i++)
		hw_fake_set_msr(skylake_6700k_msrs[i].msr, skylake_6700k_msrs[i].value);
}

static void expect_choice(enum tv_source req, int rc, enum tv_source want, const char *needle)
{
	enum tv_source got = (enum tv_source)99;

	assert_int_equal(trace_choose(&tc, req, &got, why, sizeof(why)), rc);
	if (rc == 0)
		assert_int_equal(got, want);
	else
		assert_int_equal(got, 99);  /* untouched on failure */
	if (needle && !strstr(why, needle))
		fail_msg("why \"%s\" lacks \"%s\"", why, needle);
}

/* --- Skylake i7-6700K ----------------------------------------------------- */

static void test_6700k_read(void **state)
{
	(void)state;
	load_6700k();
	trace_caps_read(&tc, &raw);
	/* only MSRs that exist were read */
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
	/* the probe set BTF, then put DEBUGCTL back */
	assert_int_equal(hw_fake_msr_write_count, 2);
	assert_int_equal(hw_fake_msr_write_log(1)->msr, MSR_IA32_DEBUGCTL);
	assert_int_equal(hw_fake_msr_write_log(1)->value, DEBUGCTL_BTF);
	assert_int_equal(hw_fake_get_msr(MSR_IA32_DEBUGCTL), 0);
	assert_true(raw.debugctl_works);

	assert_true(tc.intel);
	assert_int_equal(tc.family, 6);
	assert_int_equal(tc.model, 0x5e);
	assert_true(tc.vmx);
	assert_true(tc.true_ctls);
	assert_true(tc.entry_load_debug);
	assert_true(tc.exit_save_debug);
	assert_true(tc.mtf);
	/* PT exists and works in VMX operation, but this generation lacks the
	 * RTIT_CTL entry/exit controls (they came with later parts) */
	assert_true(tc.pt_cpuid);
	assert_true(tc.pt_topa);
	assert_true(tc.pt_topa_multi);
	assert_true(tc.pt_vmx);
	assert_false(tc.pt_entry_load_rtit);
	assert_false(tc.pt_exit_clear_rtit);
	assert_false(tc.pt);
	assert_int_equal(tc.pt_addr_ranges, 2);
	/* BTS */
	assert_true(tc.ds && tc.dtes64 && tc.ds_cpl);
	assert_false(tc.bts_unavailable);
	assert_false(tc.pebs_unavailable);
	assert_true(tc.bts);
	/* LBR: format 5 (LBR_INFO), 32 entries at 0x680/0x6c0 */
	assert_true(tc.pdcm);
	assert_int_equal(tc.lbr_format, LBR_FORMAT_INFO);
	assert_false(tc.arch_lbr);
	assert_int_equal(tc.lbr_depth, 32);
	assert_int_equal(tc.lbr_from0, MSR_LBR_NHM_FROM_0);
	assert_int_equal(tc.lbr_to0, MSR_LBR_NHM_TO_0);
	assert_true(tc.lbr_select);
	assert_true(tc.lbr_info);
	assert_true(tc.lbr);
	assert_true(tc.btf);
}

static void test_6700k_choice(void **state)
{
	(void)state;
	load_6700k();
	trace_caps_read(&tc, NULL);
	expect_choice(TV_SOURCE_NONE, 0, TV_SOURCE_BTS, "auto: bts (pt: missing");
	assert_non_null(strstr(why, "load IA32_RTIT_CTL"));
	assert_non_null(strstr(why, "clear IA32_RTIT_CTL"));
	expect_choice(TV_SOURCE_PT, TRACE_CAPS_EUNSUPPORTED, 0, "pt: missing VM-entry control 'load IA32_RTIT_CTL' (bit 18)");
	assert_null(strstr(why, "IA32_VMX_MISC"));  /* that part is there */
	expect_choice(TV_SOURCE_BTS, 0, TV_SOURCE_BTS, "as configured");
	expect_choice(TV_SOURCE_LBR, 0, TV_SOURCE_LBR, NULL);
	expect_choice(TV_SOURCE_BTF, 0, TV_SOURCE_BTF, NULL);
	expect_choice(TV_SOURCE_MTF, 0, TV_SOURCE_MTF, NULL);
}

/* With the two RTIT controls allowed (as Ice Lake and later report them),
 * the same CPU picks PT.  A patch of the recorded values, not a dump. */
static void test_6700k_with_rtit_controls_picks_pt(void **state)
{
	(void)state;
	load_6700k();
	hw_fake_set_msr(0x490, 0x0003ffff000011fbull | ((uint64_t)ENTRY_LOAD_RTIT_CTL << 32));
	hw_fake_set_msr(0x48f, 0x01ffffff00036dfbull | ((uint64_t)EXIT_CLEAR_RTIT_CTL << 32));
	trace_caps_read(&tc, NULL);
	assert_true(tc.pt);
	expect_choice(TV_SOURCE_NONE, 0, TV_SOURCE_PT, "auto: pt");
	/* only the TRUE MSRs count when IA32_VMX_BASIC[55] = 1 */
	hw_fake_set_msr(0x484, 0x0003ffff000011ffull | ((uint64_t)ENTRY_LOAD_RTIT_CTL << 32));
	hw_fake_set_msr(0x490, 0x0003ffff000011fbull);
	trace_caps_read(&tc, NULL);
	assert_false(tc.pt_entry_load_rtit);
	/* and without IA32_VMX_MISC[14] PT is out again */
	hw_fake_set_msr(0x490, 0x0003ffff000011fbull | ((uint64_t)ENTRY_LOAD_RTIT_CTL << 32));
	hw_fake_set_msr(0x485, 0x7004c1e7ull & ~VMX_MISC_PT_IN_VMX);
	trace_caps_read(&tc, NULL);
	assert_false(tc.pt);
	expect_choice(TV_SOURCE_PT, TRACE_CAPS_EUNSUPPORTED, 0, "IA32_VMX_MISC[14]");
}

static void test_6700k_bts_disabled_by_misc_enable(void **state)
{
	(void)state;
	load_6700k();
	hw_fake_set_msr(MSR_IA32_MISC_ENABLE, 0x850089ull | MISC_ENABLE_BTS_UNAVAILABLE);
	trace_caps_read(&tc, NULL);
	assert_false(tc.bts);
	expect_choice(TV_SOURCE_BTS, TRACE_CAPS_EUNSUPPORTED, 0, "IA32_MISC_ENABLE[11]");
	/* auto goes on to BTF */
	expect_choice(TV_SOURCE_NONE, 0, TV_SOURCE_BTF, "auto: btf");
}

/* --- Core 2 X6800 ------------------------------------------------------------ */

static void test_core2_x6800(void **state)
{
	(void)state;
	hw_fake_load_cpu(core2_x6800, N(core2_x6800));
	for (size_t i = 0; i < N(core2_x6800_msrs); i++)
		hw_fake_set_msr(core2_x6800_msrs[i].msr, core2_x6800_msrs[i].value);
	trace_caps_read(&tc, &raw);
	/* no TRUE MSRs read: IA32_VMX_BASIC[55] = 0 */
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
	assert_false(tc.true_ctls);
	assert_int_equal(hw_fake_get_msr(MSR_IA32_DEBUGCTL), 1);  /* restored */
	assert_int_equal(tc.model, 0x0f);
	assert_true(tc.vmx);
	assert_true(tc.entry_load_debug && tc.exit_save_debug);
	assert_false(tc.mtf);             /* MTF came with Nehalem */
	assert_false(tc.pt_cpuid);
	assert_true(tc.bts);
	assert_int_equal(tc.lbr_format, LBR_FORMAT_EIP);
	assert_int_equal(tc.lbr_depth, 4);
	assert_int_equal(tc.lbr_from0, MSR_LBR_CORE_FROM_0);
	assert_int_equal(tc.lbr_to0, MSR_LBR_CORE_TO_0);
	assert_false(tc.lbr_select);
	assert_false(tc.lbr_info);
	assert_true(tc.btf);
	/* PMU v2 with 2 counters; CPUID says 0 fixed counters, Core 2 has 3 */
	assert_int_equal(tc.pmu_version, 2);
	assert_int_equal(tc.pmu_gp_counters, 2);
	assert_int_equal(tc.pmu_fixed_counters, 3);

	expect_choice(TV_SOURCE_NONE, 0, TV_SOURCE_BTS, "pt: missing Intel PT");
	expect_choice(TV_SOURCE_MTF, TRACE_CAPS_EUNSUPPORTED, 0,
		      "mtf: missing monitor trap flag (primary processor-based control 27)");
}

/* --- Bochs corei7_skylake_x ----------------------------------------------------- */

static void bochs_raw(struct trace_caps_raw *r)
{
	memset(r, 0, sizeof(*r));
	strcpy(r->cpu.vendor, "GenuineIntel");
	r->cpu.vendor_id = CPU_VENDOR_INTEL;
	r->cpu.max_leaf = 0x16;
	r->cpu.signature = 0x00050654;
	r->cpu.family = 6;
	r->cpu.model = 0x55;
	r->cpu.stepping = 4;
	r->cpu.vmx = true;
	r->cpu.ds = true;       /* BX_CPUID_STD1_EDX_DEBUG_STORE */
	r->cpu.dtes64 = true;   /* BX_CPUID_STD1_ECX_DTES64 */
	r->cpu.ds_cpl = true;
	r->cpu.pdcm = true;     /* BX_CPUID_STD1_ECX_PDCM */
	r->cpu.pt = false;      /* leaf 7 EBX: "x [25:25] Intel Processor Trace" (off) */
	r->cpu.arch_lbr = false;
	r->vmx_basic = 0x00da040000000004ull;
	r->vmx_procbased = 0xfff9fffe0401e172ull;
	r->vmx_exit = 0x01ffffff00036dffull;
	r->vmx_entry = 0x0003ffff000011ffull;
	r->vmx_misc = 0x000000007004c1e7ull;
	r->vmx_true_procbased = 0xfff9fffe04006172ull;
	r->vmx_true_exit = 0x01ffffff00036dfbull;
	r->vmx_true_entry = 0x0003ffff000011fbull;
	r->have_vmx_msrs = true;
	r->misc_enable = 0;     /* not emulated: reads 0 ("BTS available") */
	r->have_misc_enable = true;
	r->perf_capabilities = 0;
	r->debugctl_works = false;  /* not emulated: the probe's write is dropped */
}

static void test_bochs_skylake_x_picks_mtf(void **state)
{
	(void)state;
	bochs_raw(&raw);
	trace_caps_decode(&tc, &raw);
	assert_true(tc.vmx && tc.mtf);
	assert_true(tc.entry_load_debug && tc.exit_save_debug);
	assert_false(tc.pt);
	assert_true(tc.ds);
	assert_false(tc.bts_unavailable);
	assert_false(tc.bts);           /* only the dead DEBUGCTL says so */
	assert_int_equal(tc.lbr_format, 0);
	assert_int_equal(tc.lbr_depth, 32);  /* model 0x55 is in the table */
	assert_false(tc.lbr);
	assert_false(tc.btf);
	expect_choice(TV_SOURCE_NONE, 0, TV_SOURCE_MTF, "auto: mtf");
	expect_choice(TV_SOURCE_BTS, TRACE_CAPS_EUNSUPPORTED, 0, "IA32_DEBUGCTL");
	expect_choice(TV_SOURCE_LBR, TRACE_CAPS_EUNSUPPORTED, 0, "IA32_DEBUGCTL");
	expect_choice(TV_SOURCE_PT, TRACE_CAPS_EUNSUPPORTED, 0, "Intel PT");

	/* Why the probe exists: CPUID and MISC_ENABLE alone would say BTS. */
	raw.debugctl_works = true;
	trace_caps_decode(&tc, &raw);
	expect_choice(TV_SOURCE_NONE, 0, TV_SOURCE_BTS, NULL);
}

/* --- Alder Lake: arch LBR --------------------------------------------------------- */

static void test_alderlake_arch_lbr(void **state)
{
	(void)state;
	hw_fake_load_cpu(alderlake_12900k, N(alderlake_12900k));
	/* VMX MSRs: the 6700K's (no Alder Lake dump at hand) */
	for (size_t i = 0; i < N(skylake_6700k_msrs); i++)
		if (skylake_6700k_msrs[i].msr >= 0x480)
			hw_fake_set_msr(skylake_6700k_msrs[i].msr, skylake_6700k_msrs[i].value);
	hw_fake_set_msr(MSR_IA32_MISC_ENABLE, 0x850089);
	/* PERF_CAPABILITIES[5:0] = 3FH on arch-LBR parts (SDM 3B 18.1.3) */
	hw_fake_set_msr(MSR_IA32_PERF_CAPABILITIES, 0x3f);
	hw_fake_set_msr(MSR_IA32_DEBUGCTL, 0);
	trace_caps_read(&tc, NULL);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
	assert_int_equal(tc.model, 0x97);
	assert_true(tc.arch_lbr);
	assert_int_equal(tc.lbr_format, LBR_FORMAT_ARCH);
	assert_int_equal(tc.lbr_depth, 32);
	assert_int_equal(tc.arch_lbr_depth_mask, 0x0b);
	assert_int_equal(tc.lbr_from0, MSR_IA32_LBR_0_FROM_IP);
	assert_true(tc.lbr_info);
	/* the 6700K's VMX lacks the IA32_LBR_CTL controls: lbr refused, named */
	assert_false(tc.lbr);
	expect_choice(TV_SOURCE_LBR, TRACE_CAPS_EUNSUPPORTED, 0, "load guest IA32_LBR_CTL");
	expect_choice(TV_SOURCE_BTF, TRACE_CAPS_EUNSUPPORTED, 0, "clear IA32_LBR_CTL");
	/* with VM-entry control 21 and VM-exit control 26 allowed it is usable */
	hw_fake_set_msr(0x48f, hw_fake_get_msr(0x48f) | 1ull << (32 + 26));
	hw_fake_set_msr(0x490, hw_fake_get_msr(0x490) | 1ull << (32 + 21));
	trace_caps_read(&tc, NULL);
	assert_true(tc.lbr_entry_load_ctl && tc.lbr_exit_clear_ctl);
	assert_true(tc.lbr);
	expect_choice(TV_SOURCE_LBR, 0, TV_SOURCE_LBR, NULL);
}

/* --- other CPUs and arguments ------------------------------------------------------- */

static void test_amd_has_nothing(void **state)
{
	(void)state;
	memset(&raw, 0, sizeof(raw));
	strcpy(raw.cpu.vendor, "AuthenticAMD");
	raw.cpu.vendor_id = CPU_VENDOR_AMD;
	raw.cpu.family = 0x17;
	raw.cpu.svm = true;
	trace_caps_decode(&tc, &raw);
	assert_false(tc.vmx || tc.pt || tc.bts || tc.lbr || tc.btf || tc.mtf);
	expect_choice(TV_SOURCE_NONE, TRACE_CAPS_EUNSUPPORTED, 0, "an Intel CPU");
	expect_choice(TV_SOURCE_MTF, TRACE_CAPS_EUNSUPPORTED, 0, "mtf: missing an Intel CPU");
}

static void test_unknown_legacy_model(void **state)
{
	(void)state;
	load_6700k();
	/* a family 6 model not in the table (Tremont, 06_86H): no legacy LBR */
	hw_fake_set_cpuid(1, 0, 0x00080665, 0x02100800, 0x7ffafbbf, 0xbfebfbff);
	trace_caps_read(&tc, NULL);
	assert_int_equal(tc.model, 0x86);
	assert_int_equal(tc.lbr_depth, 0);
	assert_false(tc.lbr);
	expect_choice(TV_SOURCE_LBR, TRACE_CAPS_EUNSUPPORTED, 0, "known LBR stack depth for family 0x6 model 0x86");
	expect_choice(TV_SOURCE_BTF, TRACE_CAPS_EUNSUPPORTED, 0, "btf: missing");
	/* without PDCM the format cannot be read at all */
	hw_fake_set_cpuid(1, 0, 0x000506e3, 0x02100800, 0x7ffafbbf & ~CPUID_1_ECX_PDCM, 0xbfebfbff);
	trace_caps_read(&tc, NULL);
	assert_false(tc.pdcm);
	expect_choice(TV_SOURCE_LBR, TRACE_CAPS_EUNSUPPORTED, 0, "PDCM");
}

static void test_lbr_model_table(void **state)
{
	uint32_t from, to;
	bool sel;

	(void)state;
	assert_int_equal(trace_caps_lbr_model_depth(6, 0x17, &from, &to, &sel), 4);
	assert_int_equal(from, 0x40);
	assert_int_equal(to, 0x60);
	assert_false(sel);
	assert_int_equal(trace_caps_lbr_model_depth(6, 0x4d, &from, &to, &sel), 8);
	assert_int_equal(from, 0x40);
	assert_true(sel);
	assert_int_equal(trace_caps_lbr_model_depth(6, 0x1a, &from, &to, &sel), 16);
	assert_int_equal(from, 0x680);
	assert_int_equal(to, 0x6c0);
	assert_int_equal(trace_caps_lbr_model_depth(6, 0x3c, NULL, NULL, NULL), 16);
	assert_int_equal(trace_caps_lbr_model_depth(6, 0x55, NULL, NULL, NULL), 32);
	assert_int_equal(trace_caps_lbr_model_depth(6, 0x7e, NULL, NULL, NULL), 32);
	assert_int_equal(trace_caps_lbr_model_depth(6, 0x97, &from, &to, &sel), 0);
	assert_int_equal(from, 0);
	assert_false(sel);
	assert_int_equal(trace_caps_lbr_model_depth(0xf, 0x04, NULL, NULL, NULL), 0);
}

static void test_choose_arguments(void **state)
{
	enum tv_source got = TV_SOURCE_NONE;
	char small[8];

	(void)state;
	load_6700k();
	trace_caps_read(&tc, NULL);
	assert_int_equal(trace_choose(&tc, TV_SOURCE_NONE, NULL, why, sizeof(why)), TRACE_CAPS_EINVAL);
	assert_int_equal(trace_choose(NULL, TV_SOURCE_NONE, &got, why, sizeof(why)), TRACE_CAPS_EINVAL);
	assert_int_equal(trace_choose(&tc, (enum tv_source)9, &got, why, sizeof(why)), TRACE_CAPS_EINVAL);
	assert_non_null(strstr(why, "unknown source 9"));
	/* why may be NULL or short: always terminated */
	assert_int_equal(trace_choose(&tc, TV_SOURCE_NONE, &got, NULL, 0), 0);
	assert_int_equal(got, TV_SOURCE_BTS);
	memset(small, 'x', sizeof(small));
	assert_int_equal(trace_choose(&tc, TV_SOURCE_PT, &got, small, sizeof(small)),
			 TRACE_CAPS_EUNSUPPORTED);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_string_equal(trace_caps_source_name(TV_SOURCE_NONE), "auto");
	assert_string_equal(trace_caps_source_name(TV_SOURCE_PT), "pt");
	assert_string_equal(trace_caps_source_name((enum tv_source)42), "?");
}

static void test_describe(void **state)
{
	char line[512];
	int n;

	(void)state;
	load_6700k();
	trace_caps_read(&tc, NULL);
	n = trace_caps_describe(&tc, line, sizeof(line));
	assert_int_equal((size_t)n, strlen(line));
	assert_non_null(strstr(line, "vmx yes (true ctls)"));
	assert_non_null(strstr(line, "pt no (cpuid yes, topa yes, vmx-misc yes, rtit entry/exit no/no)"));
	assert_non_null(strstr(line, "bts yes"));
	assert_non_null(strstr(line, "lbr yes (format 5, depth 32)"));
	assert_non_null(strstr(line, "mtf yes"));
	/* truncation keeps the snprintf contract */
	assert_int_equal(trace_caps_describe(&tc, line, 10), n);
	assert_int_equal(strlen(line), 9);
	assert_int_equal(trace_caps_missing(&tc, TV_SOURCE_BTS, line, sizeof(line)), 0);
	assert_string_equal(line, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_6700k_read, setup),
		cmocka_unit_test_setup(test_6700k_choice, setup),
		cmocka_unit_test_setup(test_6700k_with_rtit_controls_picks_pt, setup),
		cmocka_unit_test_setup(test_6700k_bts_disabled_by_misc_enable, setup),
		cmocka_unit_test_setup(test_core2_x6800, setup),
		cmocka_unit_test_setup(test_bochs_skylake_x_picks_mtf, setup),
		cmocka_unit_test_setup(test_alderlake_arch_lbr, setup),
		cmocka_unit_test_setup(test_amd_has_nothing, setup),
		cmocka_unit_test_setup(test_unknown_legacy_model, setup),
		cmocka_unit_test_setup(test_lbr_model_table, setup),
		cmocka_unit_test_setup(test_choose_arguments, setup),
		cmocka_unit_test_setup(test_describe, setup),
	};

	return cmocka_run_group_tests_name("test_trace_caps", tests, NULL, NULL);
}
