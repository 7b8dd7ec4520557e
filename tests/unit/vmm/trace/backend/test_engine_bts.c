/* SPDX-License-Identifier: MIT */
/*
 * test_engine_bts.c - the engine driving the BTS backend on the fake seam
 * (fixture: ../engine_hw.h): IA32_DS_AREA and TR|BTS in
 * GUEST_IA32_DEBUGCTL for a window, the records the fake "hardware"
 * stores in the buffer drained once each at exits and at stop, a wrapped
 * buffer counted, DEBUGCTL cleared at stop, BTS held off while the buffer
 * is not mapped; pmi = on (BTINT, the DS interrupt's NMI exits).
 */
#include "../engine_hw.h"

static void test_bts_window_vmcs(void **state)
{
	uint64_t lin = BTS_LIN;

	(void)state;
	bts_engine(0, TRACE_CPL_ALL, false);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_TR | DBG_BTS);
	assert_int_equal(hw_fake_get_msr(DS_AREA), lin);
	assert_int_equal(*ds_field(0), lin + 4096);                       /* base */
	assert_int_equal(*ds_field(1), lin + 4096);                       /* index */
	assert_int_equal(*ds_field(2), lin + 4096 + BTS_SLOTS * 24);      /* absolute maximum */
	assert_true(*ds_field(3) > *ds_field(2));                         /* threshold never reached */
	assert_int_equal(*ds_field(4), 0);                                /* no PEBS */
	assert_int_equal(vmcs(VMCS_GUEST_RFLAGS), 0x2);                   /* no TF */
	assert_int_equal(vmcs(VMCS_EXCEPTION_BITMAP), 0);                 /* no #DB */
	cpuid_exit(0x1200);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_TR | DBG_BTS);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(windows_done, 1);
	/* Outside a window the bits stay off. */
	cpuid_exit(0x1202);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_non_null(strstr(logbuf, "trace: cpu 1: BTS, 64-bit DS area, DS-CPL"));
}

/* The filter's CPLs become BTS_OFF_OS / BTS_OFF_USR. */
static void test_bts_cpl_filter(void **state)
{
	(void)state;
	bts_engine(0, TRACE_CPL_KERNEL, false);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_TR | DBG_BTS | DBG_OFF_USR);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
}

static void test_bts_drains_at_exits_once(void **state)
{
	struct trace_event ev[16];
	uint64_t base;

	(void)state;
	bts_engine(0, TRACE_CPL_ALL, false);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	base = *ds_field(0);
	bts_store(0x1001, 0x1101);
	bts_store(0x1002, 0x1102);
	bts_store(0x1003, 0x1103);
	cpuid_exit(0x1200);                   /* drains 3, rewinds */
	assert_int_equal(*ds_field(1), base);
	cpuid_exit(0x1202);                   /* nothing new: nothing twice */
	bts_store(0x1004, 0x1104);
	bts_store(0x1005, 0x1105);
	cpuid_exit(0x1204);                   /* drains 2 */
	bts_store(0x1006, 0x1106);            /* between the last exit and STOP */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);

	assert_int_equal(events(ev, 16), 8);
	assert_int_equal(ev[0].type, TV_REC_START);
	for (unsigned i = 1; i <= 6; i++) {
		assert_true(ev[i].type == TV_REC_BRANCH || ev[i].type == TV_REC_BRANCH_COMPACT);
		assert_int_equal(ev[i].u.branch.from, 0x1000 + i);
		assert_int_equal(ev[i].u.branch.to, 0x1100 + i);
	}
	assert_int_equal(ev[7].type, TV_REC_STOP);
	assert_int_equal(cpu.trace->b.window_branches, 6);
	/* Drains: the VMCALL that started, three CPUID exits, the stop. */
	assert_non_null(strstr(logbuf, "window 1 stopped (hypercall): 6 branches, 0 filtered, 0 dropped, 5 drains, 0 wraps (at least 0 branches lost), 0 bad, 0 corrupt, 0 entries unmapped; ring lost 0 records"));
	/* Not drained outside a window (DEBUGCTL is off; whatever is there stays). */
	cpuid_exit(0x1300);
	assert_int_equal(events(ev, 16), 8);
}

/* More branches between two exits than the buffer holds: counted, noted. */
static void test_bts_wrap_counted(void **state)
{
	static struct trace_event ev[BTS_SLOTS + 16];
	size_t n, i, first;
	const unsigned extra = 5, total = BTS_SLOTS + extra;
	char note[160];

	(void)state;
	bts_engine(0, TRACE_CPL_ALL, true);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (i = 0; i < total; i++)
		bts_store(0x100000 + i, 0x200000 + i);
	cpuid_exit(0x1200);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	n = events(ev, BTS_SLOTS + 16);
	/* START, the loss note, then the newest BTS_SLOTS branches, STOP. */
	assert_int_equal(ev[0].type, TV_REC_START);
	assert_int_equal(ev[1].type, TV_REC_LOG);
	assert_true(ev[1].u.text.len < sizeof(note));
	memcpy(note, ev[1].u.text.text, ev[1].u.text.len);
	note[ev[1].u.text.len] = '\0';
	assert_non_null(strstr(note, "at least 5 older records written over"));
	first = 2;
	assert_int_equal(n, first + BTS_SLOTS + 1);
	for (i = 0; i < BTS_SLOTS; i++) {
		assert_int_equal(ev[first + i].u.branch.from, 0x100000 + extra + i);
		assert_int_equal(ev[first + i].u.branch.to, 0x200000 + extra + i);
	}
	assert_int_equal(ev[n - 1].type, TV_REC_STOP);
	assert_int_equal(bts_unit(&cpu.trace->b)->bts.stats.wraps, 1);
	assert_int_equal(bts_unit(&cpu.trace->b)->bts.stats.lost_min, extra);
	assert_non_null(strstr(logbuf, ": 2730 branches, 0 filtered, 0 dropped, 3 drains, 1 wraps (at least 5 branches lost), 0 bad, 0 corrupt, 0 entries unmapped; ring lost 0 records"));
}

/* The ring fills: the window closes at that drain (full), stop_after too. */
static void test_bts_stop_after_and_full_ring(void **state)
{
	struct trace_event ev[8];

	(void)state;
	bts_engine(2, TRACE_CPL_ALL, false);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	bts_store(0x1001, 0x1101);
	cpuid_exit(0x1200);
	assert_true(cpu.trace->b.active);
	bts_store(0x1002, 0x1102);
	bts_store(0x1003, 0x1103);
	cpuid_exit(0x1202);                   /* 3 >= 2: closed at this drain */
	assert_false(cpu.trace->b.active);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(events(ev, 8), 5);
	assert_int_equal(ev[4].u.startstop.trigger, TV_TRIG_LIMIT);

	/* 16 KiB of ring cannot take a full buffer: refused records stop it. */
	bts_engine(0, TRACE_CPL_ALL, false);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (unsigned i = 0; i < 2000; i++)
		bts_store(0x100000 + i * 0x1000, 0x900000 + i * 0x1000);
	cpuid_exit(0x1200);
	assert_false(cpu.trace->b.active);
	assert_true(bts_unit(&cpu.trace->b)->bts.stats.dropped > 0);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
}

/* The guest's IA32_DS_AREA is its shadow, never the MSR. */
static void test_bts_guest_ds_area_shadowed(void **state)
{
	uint64_t lin = BTS_LIN;

	struct trace_caps tc;

	(void)state;
	bts_engine(0, TRACE_CPL_ALL, false);
	/* This CPU's MSR slot as the hypervisor sets it up for this CPU and source. */
	trace_caps_read(&tc, NULL);
	assert_int_equal(trace_msr_init(trace_msr_state_of(&cpu), &tc, TV_SOURCE_BTS), 0);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	regs.rcx = DS_AREA;
	regs.rax = 0x5000;
	regs.rdx = 0;
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 2);
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(hw_fake_get_msr(DS_AREA), lin);
	regs.rcx = DS_AREA;
	regs.rax = regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_RDMSR), EXIT_RESUME);
	assert_int_equal(regs.rax, 0x5000);
	/* The guest turning TR|BTS off does not stop our window. */
	regs.rcx = 0x1d9;
	regs.rax = DBG_GUEST;
	regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_TR | DBG_BTS);
}

/*
 * The guest's paging does not map the buffer at its address (here: 32-bit
 * paging with a page directory of not-present entries): BTS stays off,
 * the gap is noted in the ring and counted, never a store through it.
 */
static void test_bts_unmapped_held_off(void **state)
{
	struct trace_event ev[8];
	char note[160];

	(void)state;
	bts_engine(0, TRACE_CPL_ALL, false);
	hw_fake_vmcs_set(VMCS_GUEST_CR0, 0x80000011);   /* PG, PE, ET */
	hw_fake_vmcs_set(VMCS_GUEST_CR4, 0);
	hw_fake_vmcs_set(VMCS_GUEST_CR3, 0x2000);        /* gmem: 0x90 bytes, not present */
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	cpuid_exit(0x1200);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	/* Paging off again: identity, BTS on. */
	hw_fake_vmcs_set(VMCS_GUEST_CR0, 0x11);
	cpuid_exit(0x1202);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_TR | DBG_BTS);
	bts_store(0x1001, 0x1101);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(events(ev, 8), 4);
	assert_int_equal(ev[1].type, TV_REC_LOG);
	assert_true(ev[1].u.text.len < sizeof(note));
	memcpy(note, ev[1].u.text.text, ev[1].u.text.len);
	note[ev[1].u.text.len] = '\0';
	assert_non_null(strstr(note, "bts: buffer not mapped writable"));
	assert_int_equal(ev[2].u.branch.from, 0x1001);
	assert_non_null(strstr(logbuf, ": 1 branches, 0 filtered, 0 dropped, 4 drains, 0 wraps (at least 0 branches lost), 0 bad, 0 corrupt, 2 entries unmapped; ring lost 0 records"));
}

/* No DS on the CPU (stock Bochs's MISC_ENABLE says BTS unavailable): refused. */
static void test_bts_unsupported_refused(void **state)
{
	(void)state;
	bts_engine(0, TRACE_CPL_ALL, false);
	hw_fake_set_msr(MISC, (1ull << 11) | (1ull << 12));
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "trace: cpu 1: no usable BTS: IA32_MISC_ENABLE[11] says BTS unavailable"));
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(hw_fake_get_msr(DS_AREA), 0);
}

/*
 * bts, pmi = on: BTINT with the threshold pmi_every records in; the LVT
 * entry NMI delivery; the DS interrupt's NMI exit drains, acknowledges
 * OvfBuffer, unmasks the LVT and is not given to the guest.
 */
static void test_bts_pmi_drains_on_nmi(void **state)
{
	struct trace_event ev[16];
	uint64_t base;

	(void)state;
	bts_pmi_engine(4);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_TR | DBG_BTS | DBG_BTINT);
	base = *ds_field(0);
	assert_int_equal(*ds_field(3), base + 4 * 24);                    /* threshold */
	assert_int_equal(*ds_field(2), base + BTS_SLOTS * 24);            /* absolute maximum */
	assert_int_equal(lvtpc(), LVT_NMI);
	assert_non_null(strstr(logbuf, "pmi: LVT performance-counter entry 0x10000 -> 0x400 (NMI), NMIs exit"));

	for (unsigned i = 1; i <= 4; i++)
		bts_store_int(0x1000 + i, 0x1100 + i);
	pmi_delivered();
	nmi_exit(0x1200);
	assert_int_equal(*ds_field(1), base);                             /* drained, rewound */
	assert_int_equal(hw_fake_get_msr(GLOBAL_STATUS) & 1ull << 62, 0);
	assert_int_equal(hw_fake_msr_write_log(0)->msr, OVF_CTRL);        /* acknowledged */
	assert_int_equal(hw_fake_msr_write_log(0)->value, 1ull << 62);
	assert_int_equal(lvtpc(), LVT_NMI);                               /* unmasked */
	assert_int_equal(cpu.nmi_pending, 0);                             /* not the guest's */
	assert_int_equal(cpu.trace->b.window_branches, 4);
	bts_store_int(0x1005, 0x1105);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(events(ev, 16), 7);
	for (unsigned i = 1; i <= 5; i++)
		assert_int_equal(ev[i].u.branch.from, 0x1000 + i);
	assert_non_null(strstr(logbuf, "window 1 PMIs: 1 ours (0 taken in VMX root), 0 NMIs reflected to the guest, LVT retaken 0 times"));
	assert_int_equal(bts_unit(&cpu.trace->b)->bts.stats.pmis_ours, 1);
}

/*
 * NMIs that are not the DS interrupt go to the guest: below the
 * threshold; and a PMI that also shows a guest counter's overflow is
 * ours and the guest's.
 */
static void test_bts_pmi_foreign_nmis_reflected(void **state)
{
	(void)state;
	bts_pmi_engine(4);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	bts_store_int(0x1001, 0x1101);
	nmi_exit(0x1200);                                  /* an NMI of its own */
	assert_int_equal(cpu.nmi_pending, 1);
	assert_int_equal(cpu.trace->pmi.reflected, 1);
	assert_int_equal(cpu.trace->pmi.ours, 0);
	assert_int_equal(cpu.trace->b.window_branches, 1);    /* drained as at any exit */
	cpu.nmi_pending = 0;                               /* vcpu_deliver_nmi injected it */

	for (unsigned i = 2; i <= 5; i++)
		bts_store_int(0x1000 + i, 0x1100 + i);
	hw_fake_set_msr(GLOBAL_STATUS, hw_fake_get_msr(GLOBAL_STATUS) | 1u);  /* PMC0 too */
	pmi_delivered();
	nmi_exit(0x1202);
	assert_int_equal(cpu.trace->b.window_branches, 5);
	assert_int_equal(cpu.nmi_pending, 1);
	assert_int_equal(cpu.trace->pmi.ours, 1);
	assert_int_equal(cpu.trace->pmi.reflected, 2);
	assert_int_equal(hw_fake_get_msr(GLOBAL_STATUS), 1u);   /* the guest's bit is left */
	assert_int_equal(lvtpc(), LVT_NMI);
	/* Outside a window every NMI is the guest's. */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	cpu.nmi_pending = 0;
	nmi_exit(0x1204);
	assert_int_equal(cpu.nmi_pending, 1);
}

/*
 * The DS interrupt arrives while the CPU is in VMX root for another exit
 * (host_nmi counts it pending): that exit's drain sees the threshold and
 * claims it; an expectation nobody meets lapses after the next exit.
 */
static void test_bts_pmi_taken_in_root(void **state)
{
	(void)state;
	bts_pmi_engine(4);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (unsigned i = 1; i <= 4; i++)
		bts_store_int(0x1000 + i, 0x1100 + i);
	pmi_delivered();
	cpu.nmi_pending = 1;                   /* host_nmi during the CPUID exit */
	cpuid_exit(0x1200);
	assert_int_equal(cpu.trace->b.window_branches, 4);
	assert_int_equal(cpu.nmi_pending, 0);
	assert_int_equal(cpu.trace->pmi.root_claimed, 1);
	assert_int_equal(lvtpc(), LVT_NMI);

	/* Threshold seen at an exit, its NMI exits right after the entry. */
	for (unsigned i = 5; i <= 8; i++)
		bts_store_int(0x1000 + i, 0x1100 + i);
	cpuid_exit(0x1202);
	pmi_delivered();
	nmi_exit(0x1204);
	assert_int_equal(cpu.nmi_pending, 0);
	assert_int_equal(cpu.trace->pmi.ours, 2);
	assert_int_equal(lvtpc(), LVT_NMI);

	/* Seen, but no NMI in this exit nor the next: a later NMI is the guest's. */
	for (unsigned i = 9; i <= 12; i++)
		bts_store_int(0x1000 + i, 0x1100 + i);
	cpuid_exit(0x1206);
	cpuid_exit(0x1208);
	nmi_exit(0x120a);
	assert_int_equal(cpu.nmi_pending, 1);
	assert_int_equal(cpu.trace->pmi.ours, 2);
	assert_int_equal(cpu.trace->b.window_branches, 12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bts_pmi_drains_on_nmi, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_pmi_foreign_nmis_reflected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_pmi_taken_in_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_window_vmcs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_cpl_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_drains_at_exits_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_wrap_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_stop_after_and_full_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_guest_ds_area_shadowed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_unsupported_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_unmapped_held_off, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
