/* SPDX-License-Identifier: MIT */
/*
 * test_caps.c - CPUID decoding (vmm/lib/caps.c) on recorded CPUID dumps of
 * real CPUs, loaded into the fake seam.  docs/CPUS.md lists each dump, its
 * source, and what the decode must give.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/lib/caps.h"
#include "vmm/lib/log.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Intel Core i7-6700K (Skylake-S, 06_5EH stepping 3).  VirtualBox CPU
 * database, src/VBox/VMM/VMMR3/cpus/Intel_Core_i7_6700K.h ("Generated at
 * 2015-11-04T14:22:26Z by VBoxCpuReport v5.0.51r103906 on win.amd64").
 * The leaves caps_read() looks at, verbatim.
 */
static const struct hw_fake_cpuid_entry skylake_6700k[] = {
	{ 0x00000000, 0, 0x00000016, 0x756e6547, 0x6c65746e, 0x49656e69 },
	{ 0x00000001, 0, 0x000506e3, 0x02100800, 0x7ffafbbf, 0xbfebfbff },
	{ 0x00000007, 0, 0x00000000, 0x029c6fbf, 0x00000000, 0x00000000 },
	{ 0x00000007, 1, 0x00000000, 0x00000000, 0x00000000, 0x00000000 },
	{ 0x00000014, 0, 0x00000001, 0x0000000f, 0x00000007, 0x00000000 },
	{ 0x00000014, 1, 0x02490002, 0x003f3fff, 0x00000000, 0x00000000 },
	{ 0x00000014, 2, 0x00000000, 0x00000000, 0x00000000, 0x00000000 },
	{ 0x80000000, 0, 0x80000008, 0x00000000, 0x00000000, 0x00000000 },
	{ 0x80000001, 0, 0x00000000, 0x00000000, 0x00000121, 0x2c100800 },
	{ 0x80000002, 0, 0x65746e49, 0x2952286c, 0x726f4320, 0x4d542865 },
	{ 0x80000003, 0, 0x37692029, 0x3037362d, 0x43204b30, 0x40205550 },
	{ 0x80000004, 0, 0x302e3420, 0x7a484730, 0x00000000, 0x00000000 },
	{ 0x80000007, 0, 0x00000000, 0x00000000, 0x00000000, 0x00000100 },
	{ 0x80000008, 0, 0x00003027, 0x00000000, 0x00000000, 0x00000000 },
};

/*
 * Intel Core i9-12900K (Alder Lake-S, 06_97H stepping 2), logical CPU #0
 * (a P-core).  AIDA64-format dump in libcpuid,
 * tests/intel/core_12th_gen/alder-lake-s-i9.test.
 */
static const struct hw_fake_cpuid_entry alderlake_12900k[] = {
	{ 0x00000000, 0, 0x00000020, 0x756E6547, 0x6C65746E, 0x49656E69 },
	{ 0x00000001, 0, 0x00090672, 0x00800800, 0x7FFAFBFF, 0xBFEBFBFF },
	{ 0x00000007, 0, 0x00000001, 0x239CA7EB, 0x98C027AC, 0xFC1CC410 },
	{ 0x00000007, 1, 0x00400810, 0x00000000, 0x00000000, 0x00000000 },
	{ 0x00000014, 0, 0x00000001, 0x0000005F, 0x00000007, 0x00000000 },
	{ 0x00000014, 1, 0x02490002, 0x003F003F, 0x00000000, 0x00000000 },
	{ 0x0000001C, 0, 0x4000000B, 0x00000007, 0x00000007, 0x00000000 },
	{ 0x80000000, 0, 0x80000008, 0x00000000, 0x00000000, 0x00000000 },
	{ 0x80000001, 0, 0x00000000, 0x00000000, 0x00000121, 0x2C100000 },
	{ 0x80000002, 0, 0x68743231, 0x6E654720, 0x746E4920, 0x52286C65 },
	{ 0x80000003, 0, 0x6F432029, 0x54286572, 0x6920294D, 0x32312D39 },
	{ 0x80000004, 0, 0x4B303039, 0x00000000, 0x00000000, 0x00000000 },
	{ 0x80000007, 0, 0x00000000, 0x00000000, 0x00000000, 0x00000100 },
	{ 0x80000008, 0, 0x0000302E, 0x00000000, 0x00000000, 0x00000000 },
};

/*
 * AMD Ryzen 7 1800X (Zen, family 17h model 01h stepping 1).  VirtualBox
 * CPU database, src/VBox/VMM/VMMR3/cpus/AMD_Ryzen_7_1800X_Eight_Core.h
 * ("Generated at 2020-07-15T16:30:16Z by VBoxCpuReport v6.1.97r139174 on
 * linux.amd64").
 */
static const struct hw_fake_cpuid_entry zen_1800x[] = {
	{ 0x00000000, 0, 0x0000000d, 0x68747541, 0x444d4163, 0x69746e65 },
	{ 0x00000001, 0, 0x00800f11, 0x02100800, 0x7ed8320b, 0x178bfbff },
	{ 0x00000007, 0, 0x00000000, 0x209c01a9, 0x00000000, 0x00000000 },
	{ 0x00000007, 1, 0x00000000, 0x00000000, 0x00000000, 0x00000000 },
	{ 0x80000000, 0, 0x8000001f, 0x68747541, 0x444d4163, 0x69746e65 },
	{ 0x80000001, 0, 0x00800f11, 0x20000000, 0x35c233ff, 0x2fd3fbff },
	{ 0x80000002, 0, 0x20444d41, 0x657a7952, 0x2037206e, 0x30303831 },
	{ 0x80000003, 0, 0x69452058, 0x2d746867, 0x65726f43, 0x6f725020 },
	{ 0x80000004, 0, 0x73736563, 0x2020726f, 0x20202020, 0x00202020 },
	{ 0x80000007, 0, 0x00000000, 0x0000001b, 0x00000000, 0x00006599 },
	{ 0x80000008, 0, 0x00003030, 0x00001007, 0x0000400f, 0x00000000 },
};

/*
 * AMD Ryzen 9 5950X (Zen 3, family 19h model 21h stepping 0), CPU#000.
 * AIDA64-format dump in libcpuid,
 * tests/amd/zen3/amd-ryzen-9-5950x-16-core-processor.test.
 */
static const struct hw_fake_cpuid_entry zen3_5950x[] = {
	{ 0x00000000, 0, 0x00000010, 0x68747541, 0x444D4163, 0x69746E65 },
	{ 0x00000001, 0, 0x00A20F10, 0x00200800, 0x7ED8320B, 0x178BFBFF },
	{ 0x00000007, 0, 0x00000000, 0x219C97A9, 0x0040068C, 0x00000010 },
	{ 0x80000000, 0, 0x80000023, 0x68747541, 0x444D4163, 0x69746E65 },
	{ 0x80000001, 0, 0x00A20F10, 0x20000000, 0x75C237FF, 0x2FD3FBFF },
	{ 0x80000002, 0, 0x20444D41, 0x657A7952, 0x2039206E, 0x30353935 },
	{ 0x80000003, 0, 0x36312058, 0x726F432D, 0x72502065, 0x7365636F },
	{ 0x80000004, 0, 0x20726F73, 0x20202020, 0x20202020, 0x00202020 },
	{ 0x80000007, 0, 0x00000000, 0x0000003B, 0x00000000, 0x00006799 },
	{ 0x80000008, 0, 0x00003030, 0x111EF657, 0x0000501F, 0x00010000 },
};

/*
 * Intel Pentium 4 3.00GHz (NetBurst, family 0Fh model 4 stepping 3; max
 * basic leaf 5, so no leaf 7).  VirtualBox CPU database,
 * src/VBox/VMM/VMMR3/cpus/Intel_Pentium_4_3_00GHz.h.  The brand string is
 * right-justified with 14 leading spaces.
 */
static const struct hw_fake_cpuid_entry p4_prescott[] = {
	{ 0x00000000, 0, 0x00000005, 0x756e6547, 0x6c65746e, 0x49656e69 },
	{ 0x00000001, 0, 0x00000f43, 0x00020800, 0x0000649d, 0xbfebfbff },
	{ 0x80000000, 0, 0x80000008, 0x00000000, 0x00000000, 0x00000000 },
	{ 0x80000001, 0, 0x00000000, 0x00000000, 0x00000000, 0x20100800 },
	{ 0x80000002, 0, 0x20202020, 0x20202020, 0x20202020, 0x6e492020 },
	{ 0x80000003, 0, 0x286c6574, 0x50202952, 0x69746e65, 0x52286d75 },
	{ 0x80000004, 0, 0x20342029, 0x20555043, 0x30302e33, 0x007a4847 },
	{ 0x80000007, 0, 0x00000000, 0x00000000, 0x00000000, 0x00000000 },
	{ 0x80000008, 0, 0x00003024, 0x00000000, 0x00000000, 0x00000000 },
};

static struct cpu_caps caps;

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	log_set_ring(NULL);
	log_set_level(LOG_INFO);
	memset(&caps, 0xa5, sizeof(caps));  /* caps_read must set every field */
	return 0;
}

static void load(const struct hw_fake_cpuid_entry *e, size_t n)
{
	hw_fake_load_cpu(e, n);
	caps_read(&caps);
}

/* Replace one register of one loaded leaf. */
static void patch(uint32_t leaf, uint32_t sub, int reg, uint32_t value)
{
	struct hw_cpuid_regs r;

	hw_cpuid(leaf, sub, &r);
	switch (reg) {
	case 0: r.eax = value; break;
	case 1: r.ebx = value; break;
	case 2: r.ecx = value; break;
	default: r.edx = value; break;
	}
	hw_fake_set_cpuid(leaf, sub, r.eax, r.ebx, r.ecx, r.edx);
}

/* --- caps_decode_signature ---------------------------------------------------- */

static void check_sig(uint32_t eax, enum cpu_vendor v, uint32_t family, uint32_t model,
		      uint32_t stepping)
{
	uint32_t f = 99, m = 99, s = 99;

	caps_decode_signature(eax, v, &f, &m, &s);
	if (f != family || m != model || s != stepping)
		fail_msg("signature %#x: family %#x model %#x stepping %u, want %#x %#x %u",
			 eax, f, m, s, family, model, stepping);
}

static void test_signature_intel_family6(void **state)
{
	(void)state;
	check_sig(0x000506e3, CPU_VENDOR_INTEL, 6, 0x5e, 3);    /* Skylake-S */
	check_sig(0x00050654, CPU_VENDOR_INTEL, 6, 0x55, 4);    /* Skylake-SP */
	check_sig(0x000906ea, CPU_VENDOR_INTEL, 6, 0x9e, 10);   /* Coffee Lake */
	check_sig(0x00090672, CPU_VENDOR_INTEL, 6, 0x97, 2);    /* Alder Lake-S */
	check_sig(0x000806f8, CPU_VENDOR_INTEL, 6, 0x8f, 8);    /* Sapphire Rapids */
	check_sig(0x000a06a4, CPU_VENDOR_INTEL, 6, 0xaa, 4);    /* Meteor Lake */
	check_sig(0x000006f6, CPU_VENDOR_INTEL, 6, 0x0f, 6);    /* Core 2 (Merom) */
	check_sig(0x00000695, CPU_VENDOR_INTEL, 6, 0x09, 5);    /* Pentium M */
	/* Extended model also applies with the vendor unknown (e.g. a VM). */
	check_sig(0x000506e3, CPU_VENDOR_OTHER, 6, 0x5e, 3);
}

static void test_signature_family_f(void **state)
{
	(void)state;
	check_sig(0x00000f43, CPU_VENDOR_INTEL, 0xf, 0x4, 3);   /* Pentium 4 Prescott */
	check_sig(0x00000f29, CPU_VENDOR_INTEL, 0xf, 0x2, 9);   /* Pentium 4 Northwood */
	check_sig(0x00020f32, CPU_VENDOR_AMD, 0xf, 0x23, 2);    /* Athlon 64 X2 (K8) */
	check_sig(0x00100f42, CPU_VENDOR_AMD, 0x10, 0x4, 2);    /* Phenom II (K10) */
}

static void test_signature_amd_ext_family(void **state)
{
	(void)state;
	check_sig(0x00800f11, CPU_VENDOR_AMD, 0x17, 0x01, 1);   /* Zen: Ryzen 7 1800X */
	check_sig(0x00830f10, CPU_VENDOR_AMD, 0x17, 0x31, 0);   /* Zen 2: EPYC Rome */
	check_sig(0x00a20f10, CPU_VENDOR_AMD, 0x19, 0x21, 0);   /* Zen 3: Ryzen 9 5950X */
	check_sig(0x00a50f00, CPU_VENDOR_AMD, 0x19, 0x50, 0);   /* Zen 3: Cezanne */
	check_sig(0x00a60f12, CPU_VENDOR_AMD, 0x19, 0x61, 2);   /* Zen 4: Raphael */
}

static void test_signature_amd_family6_no_ext_model(void **state)
{
	(void)state;
	/* AMD's APM applies the extended model for base family 0Fh only. */
	check_sig(0x000106a2, CPU_VENDOR_AMD, 6, 0x0a, 2);
	check_sig(0x000106a2, CPU_VENDOR_INTEL, 6, 0x1a, 2);
	/* Extended family is ignored below base family 0Fh, for every vendor. */
	check_sig(0x00100f00 & ~0xf00u, CPU_VENDOR_INTEL, 0, 0, 0);
	check_sig(0x00200665, CPU_VENDOR_INTEL, 6, 0x06, 5);
}

/* --- caps_read on recorded CPUs ---------------------------------------------------- */

static void test_skylake_6700k(void **state)
{
	(void)state;
	load(skylake_6700k, N(skylake_6700k));
	assert_string_equal(caps.vendor, "GenuineIntel");
	assert_int_equal(caps.vendor_id, CPU_VENDOR_INTEL);
	assert_string_equal(caps.brand, "Intel(R) Core(TM) i7-6700K CPU @ 4.00GHz");
	assert_int_equal(caps.max_leaf, 0x16);
	assert_int_equal(caps.max_ext_leaf, 0x80000008);
	assert_int_equal(caps.signature, 0x000506e3);
	assert_int_equal(caps.family, 6);
	assert_int_equal(caps.model, 0x5e);
	assert_int_equal(caps.stepping, 3);

	assert_true(caps.vmx);
	assert_false(caps.smx);              /* K parts have no TXT: ECX[6] clear */
	assert_false(caps.svm);
	assert_false(caps.hypervisor);
	assert_true(caps.invariant_tsc);
	assert_true(caps.ds);
	assert_true(caps.dtes64);
	assert_true(caps.ds_cpl);
	assert_true(caps.pdcm);

	assert_false(caps.arch_lbr);         /* Skylake: model-specific LBRs */
	assert_int_equal(caps.arch_lbr_max_depth, 0);
	assert_int_equal(caps.arch_lbr_depth_mask, 0);

	assert_true(caps.pt);
	assert_int_equal(caps.pt_ebx, 0x0f);  /* CR3 filter, PSB/CYC, IP filter, MTC */
	assert_int_equal(caps.pt_ecx, 0x07);  /* ToPA, multi-entry ToPA, single-range */
	assert_int_equal(caps.pt_addr_ranges, 2);
	assert_int_equal(caps.pt_mtc_periods, 0x0249);
	assert_int_equal(caps.pt_cyc_thresholds, 0x3fff);
	assert_int_equal(caps.pt_psb_freqs, 0x003f);
}

static void test_alderlake_12900k(void **state)
{
	(void)state;
	load(alderlake_12900k, N(alderlake_12900k));
	assert_string_equal(caps.vendor, "GenuineIntel");
	assert_int_equal(caps.vendor_id, CPU_VENDOR_INTEL);
	assert_string_equal(caps.brand, "12th Gen Intel(R) Core(TM) i9-12900K");
	assert_int_equal(caps.max_leaf, 0x20);
	assert_int_equal(caps.family, 6);
	assert_int_equal(caps.model, 0x97);
	assert_int_equal(caps.stepping, 2);

	assert_true(caps.vmx);
	assert_true(caps.smx);
	assert_false(caps.svm);
	assert_false(caps.hypervisor);
	assert_true(caps.invariant_tsc);
	assert_true(caps.ds);
	assert_true(caps.dtes64);
	assert_true(caps.ds_cpl);
	assert_true(caps.pdcm);

	assert_true(caps.arch_lbr);
	assert_int_equal(caps.arch_lbr_depth_mask, 0x0b);  /* depths 8, 16, 32 */
	assert_int_equal(caps.arch_lbr_max_depth, 32);
	assert_true(caps.arch_lbr_cpl_filter);
	assert_true(caps.arch_lbr_branch_filter);
	assert_true(caps.arch_lbr_call_stack);
	assert_true(caps.arch_lbr_mispredict);
	assert_true(caps.arch_lbr_timed);
	assert_true(caps.arch_lbr_branch_type);

	assert_true(caps.pt);
	assert_int_equal(caps.pt_ebx, 0x5f);
	assert_int_equal(caps.pt_ecx, 0x07);
	assert_int_equal(caps.pt_addr_ranges, 2);
	assert_int_equal(caps.pt_mtc_periods, 0x0249);
	assert_int_equal(caps.pt_cyc_thresholds, 0x003f);
	assert_int_equal(caps.pt_psb_freqs, 0x003f);
}

static void test_zen_1800x(void **state)
{
	(void)state;
	load(zen_1800x, N(zen_1800x));
	assert_string_equal(caps.vendor, "AuthenticAMD");
	assert_int_equal(caps.vendor_id, CPU_VENDOR_AMD);
	/* caps_read strips leading blanks only; AMD pads on the right. */
	assert_string_equal(caps.brand, "AMD Ryzen 7 1800X Eight-Core Processor         ");
	assert_int_equal(caps.max_leaf, 0xd);
	assert_int_equal(caps.max_ext_leaf, 0x8000001f);
	assert_int_equal(caps.family, 0x17);
	assert_int_equal(caps.model, 0x01);
	assert_int_equal(caps.stepping, 1);

	assert_true(caps.svm);
	assert_true(caps.invariant_tsc);
	assert_false(caps.vmx);
	assert_false(caps.smx);
	assert_false(caps.hypervisor);
	assert_false(caps.ds);
	assert_false(caps.dtes64);
	assert_false(caps.ds_cpl);
	assert_false(caps.pdcm);
	assert_false(caps.pt);
	assert_false(caps.arch_lbr);
	assert_int_equal(caps.pt_addr_ranges, 0);
}

static void test_zen3_5950x(void **state)
{
	(void)state;
	load(zen3_5950x, N(zen3_5950x));
	assert_int_equal(caps.vendor_id, CPU_VENDOR_AMD);
	assert_string_equal(caps.brand, "AMD Ryzen 9 5950X 16-Core Processor            ");
	assert_int_equal(caps.max_leaf, 0x10);
	assert_int_equal(caps.max_ext_leaf, 0x80000023);
	assert_int_equal(caps.family, 0x19);
	assert_int_equal(caps.model, 0x21);
	assert_int_equal(caps.stepping, 0);
	assert_true(caps.svm);
	assert_true(caps.invariant_tsc);
	assert_false(caps.vmx);
	assert_false(caps.ds);
	assert_false(caps.pdcm);
	assert_false(caps.pt);
	assert_false(caps.arch_lbr);
}

static void test_pentium4_max_leaf_5(void **state)
{
	(void)state;
	load(p4_prescott, N(p4_prescott));
	assert_string_equal(caps.vendor, "GenuineIntel");
	assert_string_equal(caps.brand, "Intel(R) Pentium(R) 4 CPU 3.00GHz");
	assert_int_equal(caps.max_leaf, 5);
	assert_int_equal(caps.family, 0xf);
	assert_int_equal(caps.model, 4);
	assert_int_equal(caps.stepping, 3);
	assert_true(caps.ds);
	assert_true(caps.dtes64);
	assert_true(caps.ds_cpl);
	assert_false(caps.pdcm);
	assert_false(caps.vmx);
	assert_false(caps.pt);
	assert_false(caps.arch_lbr);
	assert_false(caps.invariant_tsc);
}

/* --- edge cases ------------------------------------------------------------------------ */

static void test_leaf7_not_read_above_max_leaf(void **state)
{
	uint64_t before;

	(void)state;
	/* Alder Lake with max leaf cut to 6: leaf 7 still answers, but must not be used. */
	hw_fake_load_cpu(alderlake_12900k, N(alderlake_12900k));
	patch(0, 0, 0, 6);
	before = hw_fake_cpuid_count;
	caps_read(&caps);
	assert_true(hw_fake_cpuid_count > before);
	assert_false(caps.pt);
	assert_false(caps.arch_lbr);
	assert_int_equal(caps.pt_ebx, 0);
	assert_int_equal(caps.pt_addr_ranges, 0);
	assert_int_equal(caps.arch_lbr_max_depth, 0);
	assert_true(caps.vmx);  /* leaf 1 is still in range */
}

static void test_pt_bit_without_leaf_0x14(void **state)
{
	(void)state;
	/* Max leaf 0x13: CPUID.7:EBX.PT set but its leaf is out of range. */
	hw_fake_load_cpu(skylake_6700k, N(skylake_6700k));
	patch(0, 0, 0, 0x13);
	caps_read(&caps);
	assert_false(caps.pt);
	assert_int_equal(caps.pt_ebx, 0);
	assert_int_equal(caps.pt_ecx, 0);
	assert_int_equal(caps.pt_addr_ranges, 0);
}

static void test_pt_leaf_without_subleaf1(void **state)
{
	(void)state;
	/* Leaf 0x14 reporting max sub-leaf 0: sub-leaf 1 must not be used. */
	hw_fake_load_cpu(skylake_6700k, N(skylake_6700k));
	patch(0x14, 0, 0, 0);
	caps_read(&caps);
	assert_true(caps.pt);
	assert_int_equal(caps.pt_ebx, 0x0f);
	assert_int_equal(caps.pt_addr_ranges, 0);
	assert_int_equal(caps.pt_mtc_periods, 0);
	assert_int_equal(caps.pt_psb_freqs, 0);
}

static void test_arch_lbr_bit_without_leaf_0x1c(void **state)
{
	(void)state;
	hw_fake_load_cpu(alderlake_12900k, N(alderlake_12900k));
	patch(0, 0, 0, 0x1b);
	caps_read(&caps);
	assert_false(caps.arch_lbr);
	assert_int_equal(caps.arch_lbr_max_depth, 0);
	assert_true(caps.pt);  /* 0x14 is still in range */
}

static void test_arch_lbr_depths(void **state)
{
	static const struct { uint32_t mask, max; } t[] = {
		{ 0x01, 8 }, { 0x80, 64 }, { 0xff, 64 }, { 0x04, 24 }, { 0x00, 0 },
		{ 0x1ff, 64 },  /* only EAX[7:0] are depth bits */
	};

	(void)state;
	for (size_t i = 0; i < N(t); i++) {
		hw_fake_load_cpu(alderlake_12900k, N(alderlake_12900k));
		patch(0x1c, 0, 0, t[i].mask);
		caps_read(&caps);
		assert_true(caps.arch_lbr);
		assert_int_equal(caps.arch_lbr_depth_mask, t[i].mask & 0xff);
		assert_int_equal(caps.arch_lbr_max_depth, t[i].max);
	}
}

static void test_hypervisor_bit_and_unknown_vendor(void **state)
{
	(void)state;
	hw_fake_load_cpu(skylake_6700k, N(skylake_6700k));
	patch(1, 0, 2, 0x7ffafbbfu | CPUID_1_ECX_HYPERVISOR);
	patch(0, 0, 1, 0x756e6547 ^ 1);  /* "FenuineIntel" */
	caps_read(&caps);
	assert_true(caps.hypervisor);
	assert_int_equal(caps.vendor_id, CPU_VENDOR_OTHER);
	assert_string_equal(caps.vendor, "FenuineIntel");
}

static void test_no_extended_leaves(void **state)
{
	(void)state;
	/* Garbage in 0x80000000 (a leaf above max on old Intel returns basic data). */
	hw_fake_load_cpu(skylake_6700k, N(skylake_6700k));
	patch(0x80000000u, 0, 0, 0x00000016);
	caps_read(&caps);
	assert_int_equal(caps.max_ext_leaf, 0);
	assert_string_equal(caps.brand, "");
	assert_false(caps.invariant_tsc);
	assert_false(caps.svm);
	/* ... and 0x8000ffff is out of the plausible range too */
	patch(0x80000000u, 0, 0, 0x8000ffffu);
	caps_read(&caps);
	assert_int_equal(caps.max_ext_leaf, 0);
}

static void test_brand_needs_0x80000004(void **state)
{
	(void)state;
	hw_fake_load_cpu(skylake_6700k, N(skylake_6700k));
	patch(0x80000000u, 0, 0, 0x80000003u);
	caps_read(&caps);
	assert_int_equal(caps.max_ext_leaf, 0x80000003u);
	assert_string_equal(caps.brand, "");
	assert_false(caps.invariant_tsc);
}

static void test_brand_all_48_bytes(void **state)
{
	(void)state;
	/* A brand string with no NUL in its 48 bytes stays terminated. */
	hw_fake_load_cpu(skylake_6700k, N(skylake_6700k));
	for (uint32_t l = 0x80000002u; l <= 0x80000004u; l++)
		hw_fake_set_cpuid(l, 0, 0x41414141, 0x41414141, 0x41414141, 0x41414141);
	caps_read(&caps);
	assert_int_equal(strlen(caps.brand), 48);
	/* All blanks: the result is empty, not out of bounds. */
	for (uint32_t l = 0x80000002u; l <= 0x80000004u; l++)
		hw_fake_set_cpuid(l, 0, 0x20202020, 0x20202020, 0x20202020, 0x20202020);
	caps_read(&caps);
	assert_string_equal(caps.brand, "");
}

static void test_all_zero_cpu(void **state)
{
	(void)state;
	caps_read(&caps);  /* nothing seeded: every leaf reads 0 */
	assert_string_equal(caps.vendor, "");
	assert_int_equal(caps.vendor_id, CPU_VENDOR_OTHER);
	assert_int_equal(caps.max_leaf, 0);
	assert_int_equal(caps.signature, 0);
	assert_false(caps.vmx);
	assert_false(caps.pt);
	assert_false(caps.arch_lbr);
	assert_string_equal(caps.brand, "");
}

/* --- caps_describe_pt --------------------------------------------------------------------- */

#define SKL_PT "yes (2 address ranges, ToPA, ToPA multi-entry, single-range, CR3 filter, IP filter, MTC, PSB/CYC)"

static void test_describe_pt(void **state)
{
	char buf[200];

	(void)state;
	load(skylake_6700k, N(skylake_6700k));
	assert_int_equal(caps_describe_pt(&caps, buf, sizeof(buf)), (int)strlen(SKL_PT));
	assert_string_equal(buf, SKL_PT);

	load(alderlake_12900k, N(alderlake_12900k));
	caps_describe_pt(&caps, buf, sizeof(buf));
	assert_string_equal(buf, "yes (2 address ranges, ToPA, ToPA multi-entry, single-range, "
			    "CR3 filter, IP filter, MTC, PSB/CYC, PTWRITE)");

	load(zen_1800x, N(zen_1800x));
	assert_int_equal(caps_describe_pt(&caps, buf, sizeof(buf)), 2);
	assert_string_equal(buf, "no");
}

static void test_describe_pt_every_feature(void **state)
{
	char buf[300];

	(void)state;
	memset(&caps, 0, sizeof(caps));
	caps.pt = true;
	caps.pt_addr_ranges = 4;
	caps.pt_ebx = 0x3f;
	caps.pt_ecx = PT_ECX_TOPA | PT_ECX_TOPA_MULTI | PT_ECX_SINGLE_RANGE |
		      PT_ECX_TRANSPORT | PT_ECX_LIP;
	caps_describe_pt(&caps, buf, sizeof(buf));
	assert_string_equal(buf, "yes (4 address ranges, ToPA, ToPA multi-entry, single-range, "
			    "transport, CR3 filter, IP filter, MTC, PSB/CYC, PTWRITE, "
			    "power events, LIP)");
	caps.pt_ebx = 0;
	caps.pt_ecx = 0;
	caps_describe_pt(&caps, buf, sizeof(buf));
	assert_string_equal(buf, "yes (4 address ranges)");
}

static void test_describe_pt_tiny_buffers(void **state)
{
	const size_t full = strlen(SKL_PT);
	char buf[160];

	(void)state;
	load(skylake_6700k, N(skylake_6700k));
	/* Every size from 0 to past the end: snprintf semantics, no overrun. */
	for (size_t len = 0; len <= full + 2; len++) {
		int n;

		memset(buf, '#', sizeof(buf));
		n = caps_describe_pt(&caps, buf, len);
		assert_int_equal(n, (int)full);
		if (len) {
			size_t kept = len - 1 < full ? len - 1 : full;

			assert_memory_equal(buf, SKL_PT, kept);
			assert_int_equal(buf[kept], '\0');
		}
		for (size_t i = len; i < sizeof(buf); i++)
			if (buf[i] != '#')
				fail_msg("len %zu: byte %zu written", len, i);
	}
	/* "no" into small buffers too */
	load(zen_1800x, N(zen_1800x));
	memset(buf, '#', sizeof(buf));
	assert_int_equal(caps_describe_pt(&caps, buf, 2), 2);
	assert_string_equal(buf, "n");
	assert_int_equal(buf[2], '#');
}

static void describe_pt_null(void)
{
	struct cpu_caps c;

	hw_fake_load_cpu(skylake_6700k, N(skylake_6700k));
	caps_read(&c);
	if (caps_describe_pt(&c, NULL, 0) != (int)strlen(SKL_PT))
		_exit(3);
}

/* Run fn in a child process: returns its exit status (sanitizer reports exit non-zero). */
static int run_in_child(void (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_describe_pt_null_buffer(void **state)
{
	(void)state;
	/* snprintf(NULL, 0, ...) is the standard way to size a buffer. */
	assert_int_equal(run_in_child(describe_pt_null), 0);
}

/* --- caps_log ------------------------------------------------------------------------------ */

static char logbuf[4096];
static size_t loglen;

static void capture(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	if (len > sizeof(logbuf) - 1 - loglen)
		len = sizeof(logbuf) - 1 - loglen;
	memcpy(logbuf + loglen, text, len);
	loglen += len;
	logbuf[loglen] = '\0';
}

static void test_caps_log(void **state)
{
	(void)state;
	loglen = 0;
	logbuf[0] = '\0';
	log_add_sink(capture, NULL);
	load(alderlake_12900k, N(alderlake_12900k));
	caps_log(&caps);
	log_clear_sinks();
	assert_non_null(strstr(logbuf, "[info] cpu: GenuineIntel family 6 (0x6) model 151 (0x97) stepping 2 \"12th Gen Intel(R) Core(TM) i9-12900K\"\n"));
	assert_non_null(strstr(logbuf, "caps: VMX yes, SMX yes, DS/BTS yes"));
	assert_non_null(strstr(logbuf, "caps: arch LBR yes (max depth 32,"));
	assert_non_null(strstr(logbuf, "caps: Intel PT yes (2 address ranges"));
	assert_non_null(strstr(logbuf, "caps: SVM no, invariant TSC yes"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_signature_intel_family6, setup),
		cmocka_unit_test_setup(test_signature_family_f, setup),
		cmocka_unit_test_setup(test_signature_amd_ext_family, setup),
		cmocka_unit_test_setup(test_signature_amd_family6_no_ext_model, setup),
		cmocka_unit_test_setup(test_skylake_6700k, setup),
		cmocka_unit_test_setup(test_alderlake_12900k, setup),
		cmocka_unit_test_setup(test_zen_1800x, setup),
		cmocka_unit_test_setup(test_zen3_5950x, setup),
		cmocka_unit_test_setup(test_pentium4_max_leaf_5, setup),
		cmocka_unit_test_setup(test_leaf7_not_read_above_max_leaf, setup),
		cmocka_unit_test_setup(test_pt_bit_without_leaf_0x14, setup),
		cmocka_unit_test_setup(test_pt_leaf_without_subleaf1, setup),
		cmocka_unit_test_setup(test_arch_lbr_bit_without_leaf_0x1c, setup),
		cmocka_unit_test_setup(test_arch_lbr_depths, setup),
		cmocka_unit_test_setup(test_hypervisor_bit_and_unknown_vendor, setup),
		cmocka_unit_test_setup(test_no_extended_leaves, setup),
		cmocka_unit_test_setup(test_brand_needs_0x80000004, setup),
		cmocka_unit_test_setup(test_brand_all_48_bytes, setup),
		cmocka_unit_test_setup(test_all_zero_cpu, setup),
		cmocka_unit_test_setup(test_describe_pt, setup),
		cmocka_unit_test_setup(test_describe_pt_every_feature, setup),
		cmocka_unit_test_setup(test_describe_pt_tiny_buffers, setup),
		cmocka_unit_test_setup(test_describe_pt_null_buffer, setup),
		cmocka_unit_test_setup(test_caps_log, setup),
	};

	return cmocka_run_group_tests_name("test_caps", tests, NULL, NULL);
}
