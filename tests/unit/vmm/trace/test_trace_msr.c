/* SPDX-License-Identifier: MIT */
/*
 * test_trace_msr.c - the guest MSR policy for tracing MSRs
 * (vmm/trace/msr_policy.c, docs/TRACE-MSR-POLICY.md).  The CPUs are the
 * capability sets test_trace_caps.c decodes from recorded values:
 * i7-6700K (legacy LBR format 5, 32 deep, PT with 2 address ranges, PMU
 * v4 with 4+3 counters per its CPUID.0AH), Core 2 X6800 (4-deep LBR at
 * 0x40, no PT, PMU v2) and an arch-LBR part (depths 8/16/32).
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
#include "vmm/trace/msr_policy.h"
#include "vmm/vmx/vcpu.h"

static struct trace_caps tc;
static struct trace_msr_state st;

static void caps_6700k(struct trace_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->intel = true;
	c->family = 6;
	c->model = 0x5e;
	c->vmx = c->true_ctls = c->entry_load_debug = c->exit_save_debug = c->mtf = true;
	c->pt_cpuid = c->pt_topa = c->pt_topa_multi = c->pt_single_range = true;
	c->pt_cr3_filter = c->pt_ip_filter = c->pt_mtc = c->pt_psb_cyc = true;
	c->pt_addr_ranges = 2;
	c->pt_vmx = true;
	c->ds = c->dtes64 = c->ds_cpl = c->debugctl_works = c->bts = true;
	c->pdcm = true;
	c->perf_capabilities = 0x33c5;
	c->lbr_format = LBR_FORMAT_INFO;
	c->lbr_depth = 32;
	c->lbr_select = c->lbr_info = true;
	c->lbr_from0 = MSR_LBR_NHM_FROM_0;
	c->lbr_to0 = MSR_LBR_NHM_TO_0;
	c->lbr = c->btf = true;
	c->pmu_version = 4;
	c->pmu_gp_counters = 4;
	c->pmu_fixed_counters = 3;
}

static void caps_core2(struct trace_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->intel = true;
	c->family = 6;
	c->model = 0x0f;
	c->vmx = c->entry_load_debug = c->exit_save_debug = true;
	c->ds = c->dtes64 = c->debugctl_works = c->bts = true;
	c->pdcm = true;
	c->perf_capabilities = 0x82;
	c->lbr_format = LBR_FORMAT_EIP;
	c->lbr_depth = 4;
	c->lbr_from0 = MSR_LBR_CORE_FROM_0;
	c->lbr_to0 = MSR_LBR_CORE_TO_0;
	c->lbr = c->btf = true;
	c->pmu_version = 2;
	c->pmu_gp_counters = 2;
	c->pmu_fixed_counters = 3;
}

static void caps_arch_lbr(struct trace_caps *c)
{
	caps_6700k(c);
	c->model = 0x97;
	c->arch_lbr = true;
	c->lbr_format = LBR_FORMAT_ARCH;
	c->arch_lbr_depth_mask = 0x0b;
	c->lbr_depth = 32;
	c->lbr_select = false;
	c->lbr_from0 = MSR_IA32_LBR_0_FROM_IP;
	c->lbr_to0 = MSR_IA32_LBR_0_TO_IP;
}

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	assert_int_equal(trace_msr_configure(TV_SOURCE_NONE), 0);
	return 0;
}

static uint64_t rd(uint32_t msr, enum trace_msr_action want)
{
	uint64_t v = 0xdeadbeef;

	assert_int_equal(trace_msr_read(&st, msr, &v), want);
	return v;
}

static void wr(uint32_t msr, uint64_t v, enum trace_msr_action want)
{
	enum trace_msr_action a = trace_msr_write(&st, msr, v);

	if (a != want)
		fail_msg("WRMSR %#x <- %#llx: action %d, want %d", msr, (unsigned long long)v, a, want);
}

/* --- the MSR set and what is intercepted ------------------------------------ */

static void test_is_virtualized(void **state)
{
	static const uint32_t yes[] = {
		0x1d9, 0x1c8, 0x1c9, 0x40, 0x47, 0x60, 0x67, 0x680, 0x69f, 0x6c0, 0x6df,
		0xdc0, 0xddf, 0x14ce, 0x14cf, 0x1200, 0x123f, 0x1500, 0x153f, 0x1600, 0x163f,
		0x600, 0x3f1, 0x560, 0x561, 0x570, 0x571, 0x572, 0x580, 0x587,
		0x38e, 0x38f, 0x390,
	};
	static const uint32_t no[] = {
		0x3a, 0x1d8, 0x1da, 0x1c7, 0x48, 0x68, 0x6a0, 0x6e0, 0xde0, 0x1240, 0x1540,
		0x1640, 0x14cd, 0x14d0, 0x601, 0x3f2, 0x562, 0x573, 0x588, 0x38d, 0x391,
		0xc0000080,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!trace_msr_is_virtualized(yes[i]))
			fail_msg("%#x should be virtualized", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (trace_msr_is_virtualized(no[i]))
			fail_msg("%#x should not be virtualized", no[i]);
}

static void test_intercepts_follow_backend(void **state)
{
	(void)state;
	/* none and MTF: nothing exits */
	for (int b = TV_SOURCE_NONE; b <= TV_SOURCE_MTF; b++) {
		assert_int_equal(trace_msr_configure((enum tv_source)b), 0);
		for (uint32_t m = 0; m < 0x2000; m++) {
			assert_false(trace_msr_intercepts(m, false));
			assert_false(trace_msr_intercepts(m, true));
		}
	}
	assert_int_equal(trace_msr_configure(TV_SOURCE_BTS), 0);
	assert_true(trace_msr_intercepts(MSR_IA32_DEBUGCTL, false));
	assert_true(trace_msr_intercepts(MSR_IA32_DEBUGCTL, true));
	assert_true(trace_msr_intercepts(MSR_IA32_DS_AREA, true));
	assert_true(trace_msr_intercepts(MSR_IA32_PEBS_ENABLE, false));
	assert_true(trace_msr_intercepts(MSR_IA32_PERF_GLOBAL_STATUS, false));
	assert_false(trace_msr_intercepts(MSR_IA32_PERF_GLOBAL_STATUS, true));
	assert_false(trace_msr_intercepts(MSR_IA32_PERF_GLOBAL_OVF_CTRL, false));
	assert_true(trace_msr_intercepts(MSR_IA32_PERF_GLOBAL_OVF_CTRL, true));
	assert_false(trace_msr_intercepts(MSR_IA32_PERF_GLOBAL_CTRL, true));
	assert_false(trace_msr_intercepts(MSR_LBR_NHM_FROM_0, false));
	assert_false(trace_msr_intercepts(MSR_IA32_RTIT_CTL, true));

	assert_int_equal(trace_msr_configure(TV_SOURCE_PT), 0);
	assert_false(trace_msr_intercepts(MSR_IA32_DEBUGCTL, true));
	assert_true(trace_msr_intercepts(MSR_IA32_RTIT_CTL, true));
	assert_true(trace_msr_intercepts(MSR_IA32_RTIT_ADDR0_A + 7, false));
	assert_true(trace_msr_intercepts(MSR_IA32_PERF_GLOBAL_STATUS, false));

	assert_int_equal(trace_msr_configure(TV_SOURCE_BTF), 0);
	assert_true(trace_msr_intercepts(MSR_IA32_DEBUGCTL, true));
	assert_true(trace_msr_intercepts(MSR_LASTBRANCH_TOS, false));
	assert_true(trace_msr_intercepts(MSR_IA32_LBR_0_INFO + 63, true));
	assert_false(trace_msr_intercepts(MSR_IA32_DS_AREA, true));

	assert_int_equal(trace_msr_configure((enum tv_source)77), TRACE_MSR_EINVAL);
	assert_int_equal(trace_msr_owned_by(TV_SOURCE_BTF), TRACE_OWN_LBR | TRACE_OWN_BTF);
	assert_int_equal(trace_msr_owned_by(TV_SOURCE_MTF), 0);
}

/* --- BTS owned ---------------------------------------------------------------------- */

static void test_bts_debugctl_merge(void **state)
{
	const uint64_t ours = DEBUGCTL_TR | DEBUGCTL_BTS | DEBUGCTL_BTINT;  /* 0x1c0 */

	(void)state;
	caps_6700k(&tc);
	assert_int_equal(trace_msr_init(&st, &tc, TV_SOURCE_BTS), 0);
	assert_int_equal(trace_msr_owned_mask(&st, MSR_IA32_DEBUGCTL), 0x7c0);
	/* the guest switches LBR on and tries to switch BTS off / on */
	wr(MSR_IA32_DEBUGCTL, DEBUGCTL_LBR, TRACE_MSR_PASS);
	assert_int_equal(trace_msr_hw_value(&st, MSR_IA32_DEBUGCTL, ours), ours | DEBUGCTL_LBR);
	wr(MSR_IA32_DEBUGCTL, DEBUGCTL_LBR | DEBUGCTL_TR | DEBUGCTL_BTS_OFF_OS, TRACE_MSR_PASS);
	assert_int_equal(trace_msr_hw_value(&st, MSR_IA32_DEBUGCTL, ours), ours | DEBUGCTL_LBR);
	/* reads show the guest its own value, never ours */
	assert_int_equal(rd(MSR_IA32_DEBUGCTL, TRACE_MSR_PASS), 0);
	assert_int_equal(trace_msr_guest_view(&st, MSR_IA32_DEBUGCTL, ours | DEBUGCTL_LBR),
			 DEBUGCTL_LBR | DEBUGCTL_TR | DEBUGCTL_BTS_OFF_OS);
	/* a hardware-side change of a guest bit shows (LBR cleared on #DB) */
	assert_int_equal(trace_msr_guest_view(&st, MSR_IA32_DEBUGCTL, ours),
			 DEBUGCTL_TR | DEBUGCTL_BTS_OFF_OS);
	/* reserved bits: #GP, shadow unchanged */
	wr(MSR_IA32_DEBUGCTL, 1ull << 2, TRACE_MSR_GP);
	wr(MSR_IA32_DEBUGCTL, 1ull << 16, TRACE_MSR_GP);
	wr(MSR_IA32_DEBUGCTL, 1ull << 63, TRACE_MSR_GP);
	assert_int_equal(st.debugctl, DEBUGCTL_LBR | DEBUGCTL_TR | DEBUGCTL_BTS_OFF_OS);
	/* bits 13-15 exist from Nehalem on; FREEZE_WHILE_SMM needs PERF_CAPABILITIES[12] */
	wr(MSR_IA32_DEBUGCTL, DEBUGCTL_RTM_DEBUG | DEBUGCTL_FREEZE_WHILE_SMM, TRACE_MSR_PASS);
	assert_int_equal(st.stats.gp, 3);
}

static void test_bts_ds_area_pebs_shadowed(void **state)
{
	(void)state;
	caps_6700k(&tc);
	trace_msr_init(&st, &tc, TV_SOURCE_BTS);
	assert_int_equal(rd(MSR_IA32_DS_AREA, TRACE_MSR_HANDLED), 0);
	wr(MSR_IA32_DS_AREA, 0xffff888012340000ull, TRACE_MSR_HANDLED);
	assert_int_equal(rd(MSR_IA32_DS_AREA, TRACE_MSR_HANDLED), 0xffff888012340000ull);
	wr(MSR_IA32_DS_AREA, 0x0000800000000000ull, TRACE_MSR_GP);  /* non-canonical */
	assert_int_equal(rd(MSR_IA32_DS_AREA, TRACE_MSR_HANDLED), 0xffff888012340000ull);
	wr(MSR_IA32_PEBS_ENABLE, 0xf0000000full, TRACE_MSR_HANDLED);
	assert_int_equal(rd(MSR_IA32_PEBS_ENABLE, TRACE_MSR_HANDLED), 0xf0000000full);
	wr(MSR_IA32_PEBS_ENABLE, 1ull << 4, TRACE_MSR_GP);  /* 4 counters: bit 4 reserved */
	assert_int_equal(st.stats.shadowed, 2);
	/* PEBS unavailable: the MSR does not exist */
	tc.pebs_unavailable = true;
	trace_msr_init(&st, &tc, TV_SOURCE_BTS);
	rd(MSR_IA32_PEBS_ENABLE, TRACE_MSR_GP);
	/* RTIT is not ours under BTS: checked, then to the hardware */
	wr(MSR_IA32_RTIT_CTL, (1ull << 13) | (1ull << 8) | (1ull << 2), TRACE_MSR_PASS);
	wr(MSR_IA32_RTIT_CTL, 1ull << 6, TRACE_MSR_GP);
	assert_int_equal(trace_msr_hw_value(&st, MSR_IA32_RTIT_CTL, 0), (1ull << 13) | (1ull << 8) | (1ull << 2));
}

static void test_perf_global_status_bits(void **state)
{
	const uint64_t hw = PERF_GLOBAL_STATUS_OVF_BUFFER | PERF_GLOBAL_STATUS_TOPA_PMI | 0x5;

	(void)state;
	caps_6700k(&tc);
	trace_msr_init(&st, &tc, TV_SOURCE_BTS);
	rd(MSR_IA32_PERF_GLOBAL_STATUS, TRACE_MSR_PASS);
	/* our buffer overflow is hidden, PT's bit is not ours under BTS */
	assert_int_equal(trace_msr_guest_view(&st, MSR_IA32_PERF_GLOBAL_STATUS, hw),
			 PERF_GLOBAL_STATUS_TOPA_PMI | 0x5);
	wr(MSR_IA32_PERF_GLOBAL_STATUS, 0, TRACE_MSR_GP);  /* read-only */
	/* the guest acknowledges everything it may: ours stays set */
	wr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, hw, TRACE_MSR_PASS);
	assert_int_equal(trace_msr_hw_value(&st, MSR_IA32_PERF_GLOBAL_OVF_CTRL, 0),
			 PERF_GLOBAL_STATUS_TOPA_PMI | 0x5);
	wr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1ull << 20, TRACE_MSR_GP);   /* no such counter */
	wr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1ull << 35, TRACE_MSR_GP);   /* 3 fixed counters */
	wr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 1ull << 34, TRACE_MSR_PASS);
	/* GLOBAL_CTRL is never ours */
	wr(MSR_IA32_PERF_GLOBAL_CTRL, 0x70000000full, TRACE_MSR_PASS);
	assert_int_equal(trace_msr_owned_mask(&st, MSR_IA32_PERF_GLOBAL_CTRL), 0);
	assert_int_equal(trace_msr_hw_value(&st, MSR_IA32_PERF_GLOBAL_CTRL, 0), 0x70000000full);
	wr(MSR_IA32_PERF_GLOBAL_CTRL, 1ull << 48, TRACE_MSR_GP);        /* no perf metrics */
	/* PT owned: bit 55 hidden instead */
	trace_msr_init(&st, &tc, TV_SOURCE_PT);
	assert_int_equal(trace_msr_guest_view(&st, MSR_IA32_PERF_GLOBAL_STATUS, hw),
			 PERF_GLOBAL_STATUS_OVF_BUFFER | 0x5);
	/* a PMU before version 2 has no global MSRs */
	tc.pmu_version = 1;
	trace_msr_init(&st, &tc, TV_SOURCE_PT);
	rd(MSR_IA32_PERF_GLOBAL_STATUS, TRACE_MSR_GP);
	wr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, 0, TRACE_MSR_GP);
}

/* --- LBR owned ------------------------------------------------------------------------- */

static void test_legacy_lbr_owned(void **state)
{
	(void)state;
	caps_6700k(&tc);
	trace_msr_init(&st, &tc, TV_SOURCE_BTF);
	assert_int_equal(trace_msr_owned_mask(&st, MSR_IA32_DEBUGCTL),
			 DEBUGCTL_LBR | DEBUGCTL_BTF | DEBUGCTL_FREEZE_LBRS_ON_PMI);
	/* perf's reset: zeroes to FROM/TO/INFO, absorbed; reads stay 0 */
	wr(MSR_LBR_NHM_FROM_0, 0xffffffff81000000ull, TRACE_MSR_HANDLED);
	assert_int_equal(rd(MSR_LBR_NHM_FROM_0, TRACE_MSR_HANDLED), 0);
	assert_int_equal(rd(MSR_LBR_NHM_TO_0 + 31, TRACE_MSR_HANDLED), 0);
	assert_int_equal(rd(MSR_LBR_INFO_0 + 5, TRACE_MSR_HANDLED), 0);
	rd(MSR_LBR_CORE_FROM_0, TRACE_MSR_GP);   /* not on Skylake */
	/* LBR_SELECT bits 9:0, TOS 4:0 */
	wr(MSR_LBR_SELECT, 0x3ff, TRACE_MSR_HANDLED);
	assert_int_equal(rd(MSR_LBR_SELECT, TRACE_MSR_HANDLED), 0x3ff);
	wr(MSR_LBR_SELECT, 0x400, TRACE_MSR_GP);
	wr(MSR_LASTBRANCH_TOS, 31, TRACE_MSR_HANDLED);
	assert_int_equal(rd(MSR_LASTBRANCH_TOS, TRACE_MSR_HANDLED), 31);
	wr(MSR_LASTBRANCH_TOS, 32, TRACE_MSR_GP);
	/* DEBUGCTL: the guest's LBR and BTF never reach the VMCS */
	wr(MSR_IA32_DEBUGCTL, DEBUGCTL_LBR | DEBUGCTL_BTF | DEBUGCTL_FREEZE_PERFMON_ON_PMI, TRACE_MSR_PASS);
	assert_int_equal(trace_msr_hw_value(&st, MSR_IA32_DEBUGCTL, DEBUGCTL_LBR),
			 DEBUGCTL_LBR | DEBUGCTL_FREEZE_PERFMON_ON_PMI);
	assert_int_equal(trace_msr_hw_value(&st, MSR_IA32_DEBUGCTL, 0), DEBUGCTL_FREEZE_PERFMON_ON_PMI);
	/* VMCS holds our BTF alone (the guest's FREEZE_PERFMON too): the guest
	 * reads its LBR and BTF from the shadow, FREEZE_PERFMON from the VMCS */
	assert_int_equal(trace_msr_guest_view(&st, MSR_IA32_DEBUGCTL,
					      DEBUGCTL_BTF | DEBUGCTL_FREEZE_PERFMON_ON_PMI),
			 DEBUGCTL_LBR | DEBUGCTL_BTF | DEBUGCTL_FREEZE_PERFMON_ON_PMI);
	assert_int_equal(trace_msr_guest_view(&st, MSR_IA32_DEBUGCTL, DEBUGCTL_BTF),
			 DEBUGCTL_LBR | DEBUGCTL_BTF);
	/* DS_AREA is not ours: straight to the hardware after the check */
	wr(MSR_IA32_DS_AREA, 0x1000, TRACE_MSR_PASS);
	rd(MSR_IA32_DS_AREA, TRACE_MSR_PASS);
}

static void test_core2_lbr_and_debugctl(void **state)
{
	(void)state;
	caps_core2(&tc);
	trace_msr_init(&st, &tc, TV_SOURCE_LBR);
	rd(MSR_LBR_CORE_FROM_0 + 3, TRACE_MSR_HANDLED);
	rd(MSR_LBR_CORE_FROM_0 + 4, TRACE_MSR_GP);    /* 4 deep */
	rd(MSR_LBR_CORE_TO_0, TRACE_MSR_HANDLED);
	rd(MSR_LBR_NHM_FROM_0, TRACE_MSR_GP);
	rd(MSR_LBR_SELECT, TRACE_MSR_GP);              /* none before Nehalem */
	rd(MSR_LBR_INFO_0, TRACE_MSR_GP);
	wr(MSR_LASTBRANCH_TOS, 3, TRACE_MSR_HANDLED);
	wr(MSR_LASTBRANCH_TOS, 4, TRACE_MSR_GP);
	/* recorded Core 2 DEBUGCTL write mask 0xffffffffffffe03c: 13-15 reserved */
	wr(MSR_IA32_DEBUGCTL, DEBUGCTL_ENABLE_UNCORE_PMI, TRACE_MSR_GP);
	wr(MSR_IA32_DEBUGCTL, DEBUGCTL_FREEZE_PERFMON_ON_PMI | DEBUGCTL_BTS_OFF_USR, TRACE_MSR_PASS);
	/* no PT on this CPU: RTIT MSRs do not exist */
	rd(MSR_IA32_RTIT_CTL, TRACE_MSR_GP);
	wr(MSR_IA32_RTIT_STATUS, 0, TRACE_MSR_GP);
}

static void test_arch_lbr_owned(void **state)
{
	(void)state;
	caps_arch_lbr(&tc);
	trace_msr_init(&st, &tc, TV_SOURCE_LBR);
	assert_int_equal(rd(MSR_IA32_LBR_DEPTH, TRACE_MSR_HANDLED), 32);  /* reset: max */
	rd(MSR_IA32_LBR_0_FROM_IP + 31, TRACE_MSR_HANDLED);
	rd(MSR_IA32_LBR_0_FROM_IP + 32, TRACE_MSR_GP);
	wr(MSR_IA32_LBR_DEPTH, 16, TRACE_MSR_HANDLED);
	rd(MSR_IA32_LBR_0_TO_IP + 15, TRACE_MSR_HANDLED);
	rd(MSR_IA32_LBR_0_INFO + 16, TRACE_MSR_GP);    /* past the depth now */
	wr(MSR_IA32_LBR_DEPTH, 24, TRACE_MSR_GP);       /* depth mask 8/16/32 */
	wr(MSR_IA32_LBR_DEPTH, 0, TRACE_MSR_GP);
	wr(MSR_IA32_LBR_DEPTH, 64, TRACE_MSR_GP);
	wr(MSR_IA32_LBR_CTL, 0x7f000f, TRACE_MSR_HANDLED);
	assert_int_equal(rd(MSR_IA32_LBR_CTL, TRACE_MSR_HANDLED), 0x7f000f);
	wr(MSR_IA32_LBR_CTL, 1ull << 4, TRACE_MSR_GP);
	/* no legacy stack next to arch LBR */
	rd(MSR_LASTBRANCH_TOS, TRACE_MSR_GP);
	rd(MSR_LBR_NHM_FROM_0, TRACE_MSR_GP);
	rd(MSR_LBR_SELECT, TRACE_MSR_GP);
}

/* --- PT owned ----------------------------------------------------------------------------- */

static void test_pt_owned(void **state)
{
	const uint64_t on = RTIT_CTL_TRACEEN | (1ull << 8) | (1ull << 13) | (1ull << 2) | (1ull << 3);

	(void)state;
	caps_6700k(&tc);
	trace_msr_init(&st, &tc, TV_SOURCE_PT);
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK_PTRS, TRACE_MSR_HANDLED), 0x7f);
	wr(MSR_IA32_RTIT_OUTPUT_BASE, 0x12345000, TRACE_MSR_HANDLED);
	wr(MSR_IA32_RTIT_OUTPUT_BASE, 0x12345001, TRACE_MSR_GP);
	wr(MSR_IA32_RTIT_OUTPUT_MASK_PTRS, 0x100, TRACE_MSR_HANDLED);
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_MASK_PTRS, TRACE_MSR_HANDLED), 0x17f);
	wr(MSR_IA32_RTIT_CR3_MATCH, 0x1a2b000, TRACE_MSR_HANDLED);
	wr(MSR_IA32_RTIT_CR3_MATCH, 0x1a2b001, TRACE_MSR_GP);
	wr(MSR_IA32_RTIT_ADDR0_A, 0xffffffff81000000ull, TRACE_MSR_HANDLED);
	wr(MSR_IA32_RTIT_ADDR0_A + 3, 0x00007fffffffffffull, TRACE_MSR_HANDLED);  /* ADDR1_B */
	wr(MSR_IA32_RTIT_ADDR0_A + 1, 0x0000800000000000ull, TRACE_MSR_GP);       /* non-canonical */
	rd(MSR_IA32_RTIT_ADDR0_A + 4, TRACE_MSR_GP);   /* 2 ranges: no ADDR2 */
	/* ADDR0_CFG = 1 fine, ADDR1_CFG = 3 reserved, ADDR2_CFG not offered */
	wr(MSR_IA32_RTIT_CTL, on | (1ull << 32), TRACE_MSR_HANDLED);
	assert_int_equal(rd(MSR_IA32_RTIT_CTL, TRACE_MSR_HANDLED), on | (1ull << 32));
	/* while the guest's TraceEn is 1 the other MSRs are locked */
	wr(MSR_IA32_RTIT_OUTPUT_BASE, 0x20000, TRACE_MSR_GP);
	wr(MSR_IA32_RTIT_STATUS, 0, TRACE_MSR_GP);
	wr(MSR_IA32_RTIT_CTL, on | (3ull << 36), TRACE_MSR_GP);
	wr(MSR_IA32_RTIT_CTL, on | (1ull << 40), TRACE_MSR_GP);
	wr(MSR_IA32_RTIT_CTL, 0, TRACE_MSR_HANDLED);
	wr(MSR_IA32_RTIT_STATUS, (1ull << 5) | (0x1234ull << 32), TRACE_MSR_HANDLED);
	wr(MSR_IA32_RTIT_STATUS, 1ull << 3, TRACE_MSR_GP);
	assert_int_equal(rd(MSR_IA32_RTIT_OUTPUT_BASE, TRACE_MSR_HANDLED), 0x12345000);
	/* nothing of this reached the hardware: the policy is pure */
	assert_int_equal(hw_fake_msr_write_count, 0);
	/* DEBUGCTL is not PT's */
	assert_int_equal(trace_msr_owned_mask(&st, MSR_IA32_DEBUGCTL), 0);
	rd(MSR_IA32_DEBUGCTL, TRACE_MSR_PASS);
	assert_int_equal(trace_msr_guest_view(&st, MSR_IA32_DEBUGCTL, 0x41), 0x41);
}

/* --- no backend, state slots, arguments ---------------------------------------------------- */

static void test_nothing_owned_passes(void **state)
{
	(void)state;
	caps_6700k(&tc);
	trace_msr_init(&st, &tc, TV_SOURCE_MTF);
	rd(MSR_IA32_DS_AREA, TRACE_MSR_PASS);
	wr(MSR_IA32_DS_AREA, 0xffff888000000000ull, TRACE_MSR_PASS);
	wr(MSR_IA32_DS_AREA, 0x8000000000000000ull, TRACE_MSR_GP);  /* checked even so */
	rd(MSR_LBR_NHM_FROM_0, TRACE_MSR_PASS);
	assert_int_equal(trace_msr_guest_view(&st, MSR_IA32_PERF_GLOBAL_STATUS, ~0ull), ~0ull);
	assert_int_equal(st.stats.shadowed, 0);
	/* not one of ours */
	rd(0x3a, TRACE_MSR_GP);
	assert_int_equal(trace_msr_init(NULL, &tc, TV_SOURCE_PT), TRACE_MSR_EINVAL);
	assert_int_equal(trace_msr_init(&st, &tc, (enum tv_source)(TV_SOURCE_MAX + 1)), TRACE_MSR_EINVAL);
}

static void test_state_of(void **state)
{
	struct per_cpu cpu;
	struct trace_msr_state *s;

	(void)state;
	memset(&cpu, 0, sizeof(cpu));
	cpu.index = TRACE_MSR_MAX_CPUS;
	assert_null(trace_msr_state_of(&cpu));
	assert_null(trace_msr_state_of(NULL));
	/* lazily initialised from this CPU: the fake has no CPUID, so not Intel */
	cpu.index = 200;
	s = trace_msr_state_of(&cpu);
	assert_non_null(s);
	assert_true(s->ready);
	assert_false(s->intel);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
	/* the same slot every time; a re-init sticks */
	caps_6700k(&tc);
	trace_msr_init(s, &tc, TV_SOURCE_BTS);
	assert_ptr_equal(trace_msr_state_of(&cpu), s);
	assert_true(s->intel);
	cpu.index = 201;
	assert_true(trace_msr_state_of(&cpu) != s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_is_virtualized, setup),
		cmocka_unit_test_setup(test_intercepts_follow_backend, setup),
		cmocka_unit_test_setup(test_bts_debugctl_merge, setup),
		cmocka_unit_test_setup(test_bts_ds_area_pebs_shadowed, setup),
		cmocka_unit_test_setup(test_perf_global_status_bits, setup),
		cmocka_unit_test_setup(test_legacy_lbr_owned, setup),
		cmocka_unit_test_setup(test_core2_lbr_and_debugctl, setup),
		cmocka_unit_test_setup(test_arch_lbr_owned, setup),
		cmocka_unit_test_setup(test_pt_owned, setup),
		cmocka_unit_test_setup(test_nothing_owned_passes, setup),
		cmocka_unit_test_setup(test_state_of, setup),
	};

	return cmocka_run_group_tests_name("test_trace_msr", tests, NULL, NULL);
}
