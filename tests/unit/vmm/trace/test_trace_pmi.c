/* SPDX-License-Identifier: MIT */
/*
 * test_trace_pmi.c - the engine's PMI handling (vmm/trace/pmi.c) on the
 * fake seam (fixture: engine_hw.h), driven through the BTS backend: the
 * LVT entry taken back after the guest rewrote it, the refusals (no NMI
 * exiting, no enabled APIC, pmi_every too large), x2APIC.
 */
#include "engine_hw.h"

/* The guest rewrote the LVT entry: written back at our next PMI, counted. */
static void test_pmi_lvt_retaken(void **state)
{
	(void)state;
	bts_pmi_engine(2);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	hw_fake_set_mmio(LVTPC_MMIO, 0xfe);    /* the guest: fixed delivery, vector 0xfe */
	bts_store_int(0x1001, 0x1101);
	bts_store_int(0x1002, 0x1102);
	nmi_exit(0x1200);                      /* (the PMI came as the guest's vector; a later NMI) */
	assert_int_equal(lvtpc(), LVT_NMI);
	assert_int_equal(cpu.trace->pmi.lvt_retaken, 1);
	assert_non_null(strstr(logbuf, "the guest changed the LVT performance-counter entry to 0xfe: written back to 0x400"));
	/* a second window takes it at its start as well */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	hw_fake_set_mmio(LVTPC_MMIO, 0xfe);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(lvtpc(), LVT_NMI);
}

/* Impossible requests are refused with the reason, nothing opened. */
static void test_pmi_refusals(void **state)
{
	char want[96];

	(void)state;
	/* pmi_every at or past the buffer */
	bts_pmi_engine(BTS_SLOTS);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	snprintf(want, sizeof(want), "pmi_every = %u must be below the buffer's %u records",
		 (unsigned)BTS_SLOTS, (unsigned)BTS_SLOTS);
	assert_non_null(strstr(logbuf, want));
	assert_false(cpu.trace->b.active);
	/* NMI exiting off in the VMCS */
	bts_pmi_engine(4);
	cpu.pin &= ~PIN_NMI_EXITING;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "pmi: NMI exiting is off in the VMCS: window not opened"));
	/* the APIC disabled */
	bts_pmi_engine(4);
	hw_fake_set_msr(APIC_BASE_MSR, APIC_PAGE);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "pmi: the local APIC is disabled"));
	assert_false(cpu.trace->b.active);
	assert_int_equal(lvtpc(), LVT_MASKED);
}

/* x2APIC mode: the LVT entry is MSR 0x834, no MMIO. */
static void test_pmi_x2apic(void **state)
{
	(void)state;
	bts_pmi_engine(4);
	hw_fake_set_msr(APIC_BASE_MSR, APIC_PAGE | 1u << 11 | 1u << 10);
	hw_fake_set_msr(0x834, LVT_MASKED);
	hw_fake_set_mmio(LVTPC_MMIO, 0x12345);   /* must stay untouched */
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(hw_fake_get_msr(0x834), LVT_NMI);
	for (unsigned i = 1; i <= 4; i++)
		bts_store_int(0x1000 + i, 0x1100 + i);
	hw_fake_set_msr(0x834, LVT_NMI | LVT_MASKED);
	nmi_exit(0x1200);
	assert_int_equal(hw_fake_get_msr(0x834), LVT_NMI);
	assert_int_equal(lvtpc(), 0x12345);
	assert_int_equal(cpu.trace->pmi.lvt_retaken, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pmi_lvt_retaken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pmi_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pmi_x2apic, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
