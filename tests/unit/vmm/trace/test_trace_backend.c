/* SPDX-License-Identifier: MIT */
/*
 * test_trace_backend.c - the backend table (vmm/trace/backend.h): every
 * source of TV_SOURCE_LIST has a backend with the mandatory ops, found by
 * its value and naming itself as the list does; what each declares
 * (state size, DEBUGCTL bits, exit events, needs) against the engine's
 * and the MSR policy's view; the entry view's load-once / write-back rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/hw/msr.h"
#include "vmm/trace/backend.h"
#include "vmm/trace/backend/bts.h"
#include "vmm/trace/caps.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/msr_policy.h"
#include "vmm/trace/needs.h"
#include "vmm/vmx/vcpu.h"
#include "vmm/vmx/vmx.h"

static void test_every_source_has_a_backend(void **state)
{
	unsigned n = 0;

	(void)state;
	assert_null(trace_backend_of(TV_SOURCE_NONE));
	assert_null(trace_backend_of(TV_SOURCE_MAX + 1));
	assert_null(trace_backend_of(~0u));
#define CHECK_(id, value, nm, takes_pmi, desc)                                      \
	do {                                                                    \
		const struct trace_backend *be = trace_backend_of(value);       \
		assert_non_null(be);                                            \
		assert_int_equal(be->source, TV_SOURCE_##id);                   \
		assert_string_equal(be->name, nm);                            \
		assert_non_null(be->usable);                                    \
		assert_non_null(be->open);                                      \
		assert_non_null(be->close);                                     \
		assert_non_null(be->log_stop);                                  \
		assert_true(be->state_bytes > 0);                               \
		assert_true(be->state_bytes <= TRACE_BACKEND_STATE_MAX);        \
		/* a PMI source says how its PMI is checked */                  \
		if (takes_pmi)                                                  \
			assert_non_null(be->pmi_check);                         \
		n++;                                                            \
	} while (0);
	TV_SOURCE_LIST(CHECK_)
#undef CHECK_
	assert_int_equal(n, TV_SOURCE_MAX);
}

static void test_state_fits(void **state)
{
	(void)state;
	assert_true(TRACE_CPU_PRIV_OFF + TRACE_BACKEND_STATE_MAX <= TRACE_CPU_STATE_BYTES);
	assert_int_equal(TRACE_CPU_STATE_BYTES % 4096, 0);
}

/* What each backend declares is what the rest of tracevisor assumes of it. */
static void test_declarations(void **state)
{
	const struct trace_backend *mtf = trace_backend_of(TV_SOURCE_MTF);
	const struct trace_backend *btf = trace_backend_of(TV_SOURCE_BTF);
	const struct trace_backend *lbr = trace_backend_of(TV_SOURCE_LBR);
	const struct trace_backend *bts = trace_backend_of(TV_SOURCE_BTS);
	const struct trace_backend *pt = trace_backend_of(TV_SOURCE_PT);

	(void)state;
	/* exit events: MTF steps, BTF takes #DB, nobody else */
	assert_int_equal(mtf->events, TRACE_EV_MTF);
	assert_int_equal(btf->events, TRACE_EV_DB);
	assert_int_equal(lbr->events | bts->events | pt->events, 0);
	assert_non_null(btf->on_db);
	assert_null(mtf->on_db);
	/* the DEBUGCTL bits each owns (docs/TRACE-MSR-POLICY.md) */
	assert_int_equal(mtf->debugctl_owned, 0);
	assert_int_equal(btf->debugctl_owned, DEBUGCTL_LBR | DEBUGCTL_BTF | DEBUGCTL_FREEZE_LBRS_ON_PMI);
	assert_int_equal(lbr->debugctl_owned, DEBUGCTL_LBR | DEBUGCTL_FREEZE_LBRS_ON_PMI);
	assert_int_equal(bts->debugctl_owned, BTS_DEBUGCTL_MASK);
	assert_int_equal(pt->debugctl_owned, 0);
	/* the MSRs each owns (the MSR policy asks the backend) */
	assert_int_equal(mtf->msr_owned, 0);
	assert_int_equal(btf->msr_owned, TRACE_OWN_LBR | TRACE_OWN_BTF);
	assert_int_equal(lbr->msr_owned, TRACE_OWN_LBR);
	assert_int_equal(bts->msr_owned, TRACE_OWN_BTS);
	assert_int_equal(pt->msr_owned, TRACE_OWN_PT);
	for (unsigned s = 0; s <= TV_SOURCE_MAX; s++)
		assert_int_equal(trace_msr_owned_by((enum tv_source)s),
				 s ? trace_backend_of(s)->msr_owned : 0);
	/* memory: bts guest-visible, pt hidden; a byte stream only for pt */
	{
		/* sized from the setup (0: the defaults, 64 KiB and 1 MiB + 256 KiB) */
		struct trace_setup su;
		struct trace_needs n;

		memset(&su, 0, sizeof(su));
		assert_null(mtf->mem);
		assert_null(btf->mem);
		assert_null(lbr->mem);
		memset(&n, 0, sizeof(n));
		bts->mem(&su, &n);
		assert_int_equal(n.guest_bytes, 4096 + 64 * 1024);
		assert_int_equal(n.hidden_bytes, 0);
		memset(&n, 0, sizeof(n));
		pt->mem(&su, &n);
		assert_int_equal(n.hidden_bytes, 1344 * 1024);
		assert_int_equal(n.hidden_align, 64 * 1024);
		assert_int_equal(n.guest_bytes, 0);
	}
	assert_non_null(pt->stream);
	assert_null(bts->stream);
	assert_true(pt->drain_tick);
	assert_false(lbr->drain_tick || bts->drain_tick || mtf->drain_tick || btf->drain_tick);
	/* per-exit work where the unit must be switched on and off */
	assert_non_null(mtf->drain);
	assert_null(btf->drain);
	assert_non_null(btf->prepare);
	assert_non_null(lbr->drain);
	assert_non_null(lbr->prepare);
	assert_non_null(bts->drain);
	assert_non_null(bts->prepare);
	assert_non_null(pt->drain);
	assert_non_null(pt->prepare);
}

/* What the machine must offer is each backend's say (trace_choose asks it). */
static void test_caps_ok(void **state)
{
	struct trace_caps tc;

	(void)state;
	static const unsigned hw[] = { TV_SOURCE_MTF, TV_SOURCE_BTF, TV_SOURCE_LBR, TV_SOURCE_BTS,
				       TV_SOURCE_PT };

	memset(&tc, 0, sizeof(tc));
	for (unsigned i = 0; i < sizeof(hw) / sizeof(hw[0]); i++) {
		assert_non_null(trace_backend_of(hw[i])->caps_ok);
		assert_false(trace_backend_of(hw[i])->caps_ok(&tc));
	}
	tc.vmx = true;
	tc.mtf = true;
	assert_true(trace_backend_of(TV_SOURCE_MTF)->caps_ok(&tc));
	assert_false(trace_backend_of(TV_SOURCE_BTF)->caps_ok(&tc));
	tc.btf = tc.lbr = tc.bts = tc.pt = true;
	for (unsigned i = 0; i < sizeof(hw) / sizeof(hw[0]); i++)
		assert_true(trace_backend_of(hw[i])->caps_ok(&tc));
}

/* needs follows the backend's declaration for every source, with and without pmi. */
static void test_needs_follow_backend(void **state)
{
	(void)state;
	for (unsigned src = 1; src <= TV_SOURCE_MAX; src++) {
		const struct trace_backend *be = trace_backend_of(src);

		for (uint8_t pmi = 0; pmi < 2; pmi++) {
			struct trace_setup s;
			struct trace_needs n;
			bool p = pmi && tv_source_takes_pmi(src);

			memset(&s, 0, sizeof(s));
			s.source = (uint8_t)src;
			s.pmi = pmi;
			s.ring_kb = 16;
			assert_int_equal(trace_engine_needs(&s, &n), 0);
			assert_int_equal(n.ring_bytes, TRACE_CPU_STATE_BYTES + 4096 + 16384);
			assert_int_equal(n.entry_ctls, be->entry_ctls | (p ? be->pmi_entry_ctls : 0));
			assert_int_equal(n.exit_ctls, be->exit_ctls | (p ? be->pmi_exit_ctls : 0));
			assert_int_equal(n.pin_ctls, p ? PIN_NMI_EXITING : 0);
			assert_int_equal(n.entry_ctls_traced, be->entry_ctls_traced);
			assert_int_equal(n.exit_ctls_traced, be->exit_ctls_traced);
			assert_int_equal(n.drain_tick, be->drain_tick);
			{
				/* the memory is the backend's mem op's, for this setup */
				struct trace_needs m;

				memset(&m, 0, sizeof(m));
				if (be->mem)
					be->mem(&s, &m);
				assert_int_equal(n.hidden_bytes, m.hidden_bytes);
				assert_int_equal(n.hidden_align, m.hidden_align);
				assert_int_equal(n.guest_bytes, m.guest_bytes);
			}
		}
	}
}

/* The entry view reads a field once, writes back only what was set. */
static void test_view_load_once_write_back(void **state)
{
	struct per_cpu cpu;
	struct trace_view v;

	(void)state;
	hw_fake_reset();
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	memset(&cpu, 0, sizeof(cpu));
	hw_fake_vmcs_set(VMCS_GUEST_IA32_DEBUGCTL, 0x1000);
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x2);
	hw_fake_vmcs_set(VMCS_PROC_BASED_CTLS, 0);
	trace_view_begin(&v, &cpu);
	assert_int_equal(trace_view_get(&v, TRACE_VIEW_DEBUGCTL), 0x1000);
	hw_fake_vmcs_set(VMCS_GUEST_IA32_DEBUGCTL, 0x2000);      /* not read again */
	assert_int_equal(trace_view_get(&v, TRACE_VIEW_DEBUGCTL), 0x1000);
	trace_view_set(&v, TRACE_VIEW_RFLAGS, 0x102);
	trace_view_set(&v, TRACE_VIEW_MTF, 1);
	assert_int_equal(trace_view_get(&v, TRACE_VIEW_RFLAGS), 0x102);
	assert_int_equal(trace_view_get(&v, TRACE_VIEW_FIELDS), 0);  /* out of range */
	trace_view_flush(&v);
	assert_int_equal(vmcs_get(VMCS_GUEST_RFLAGS), 0x102);
	assert_int_equal(vmcs_get(VMCS_GUEST_IA32_DEBUGCTL), 0x2000);  /* never set: untouched */
	assert_true(cpu.proc & CPU_MONITOR_TRAP_FLAG);
	assert_int_equal(vmcs_get(VMCS_PROC_BASED_CTLS) & CPU_MONITOR_TRAP_FLAG, CPU_MONITOR_TRAP_FLAG);
	assert_int_equal(v.dirty, 0);
}

/* A traced CPU's state is in its memory; an untraced one has none. */
static void test_cpu_state_in_trace_memory(void **state)
{
	static uint64_t mem[(TRACE_CPU_STATE_BYTES + 4096 + 16384) / 8] __attribute__((aligned(64)));
	struct per_cpu cpu;

	(void)state;
	memset(&cpu, 0, sizeof(cpu));
	assert_null(trace_cpu_ring(&cpu));
	assert_false(trace_cpu_active(&cpu));
	assert_null(trace_cpu_exported(&cpu));
	assert_null(trace_cpu_pt_stream(&cpu));
	assert_int_equal(trace_cpu_init(&cpu, (uint8_t *)mem + 8, sizeof(mem) - 8, 0, 0,
					TV_SOURCE_LBR, TV_OVERFLOW_STOP, 1000, 0), TRACE_ERR_INVAL);
	assert_int_equal(trace_cpu_init(&cpu, mem, TRACE_CPU_STATE_BYTES - 64, 0, 0,
					TV_SOURCE_LBR, TV_OVERFLOW_STOP, 1000, 0), TRACE_ERR_TOO_SMALL);
	assert_null(cpu.trace);
	assert_int_equal(trace_cpu_init(&cpu, mem, sizeof(mem), 0, 0, TV_SOURCE_LBR,
					TV_OVERFLOW_STOP, 1000, 0), 0);
	assert_ptr_equal(cpu.trace, (void *)mem);
	assert_ptr_equal(trace_cpu_ring(&cpu), (uint8_t *)mem + TRACE_CPU_STATE_BYTES);
	assert_ptr_equal(cpu.trace->b.priv, (uint8_t *)mem + TRACE_CPU_PRIV_OFF);
	assert_non_null(trace_cpu_exported(&cpu));
	/* lbr has no hidden area: a PT area is refused */
	assert_int_equal(trace_cpu_pt_area(&cpu, mem, 0), TRACE_ERR_INVAL);
	assert_null(trace_cpu_pt_stream(&cpu));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_source_has_a_backend),
		cmocka_unit_test(test_state_fits),
		cmocka_unit_test(test_declarations),
		cmocka_unit_test(test_caps_ok),
		cmocka_unit_test(test_needs_follow_backend),
		cmocka_unit_test(test_view_load_once_write_back),
		cmocka_unit_test(test_cpu_state_in_trace_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
