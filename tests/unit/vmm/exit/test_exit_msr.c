/* SPDX-License-Identifier: MIT */
/*
 * test_exit_msr.c - the MSR bitmap and RDMSR/WRMSR exits
 * (vmm/exit/exit_msr.c), and the exception-injection encoding (vmm/exit/exit.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/exit/exit.h"
#include "vmm/lib/log.h"
#include "vmm/hw/msr.h"
#include "vmm/trace/hooks.h"
#include "vmm/trace/msr_policy.h"

#define MSR_FEATURE_CONTROL 0x3a
#define MSR_DEBUGCTL 0x1d9
#define MSR_EFER 0xc0000080u

/* --- fixture: one 64-bit guest CPU on the fake seam --------------------- */

static struct per_cpu cpu;
static struct guest_regs regs;
static char logbuf[8192];
static size_t loglen;

#define GUEST_RIP 0xffffffff81000000ull

/* The fake's API, used only in these wrappers. */
static void vm_set(uint32_t field, uint64_t value) { hw_fake_vmcs_set(field, value); }
static uint64_t vm_get(uint32_t field) { return hw_fake_vmcs_get(field); }
static void seed_msr(uint32_t msr, uint64_t value) { hw_fake_set_msr(msr, value); }

static void capture(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	if (len > sizeof(logbuf) - 1 - loglen)
		len = sizeof(logbuf) - 1 - loglen;
	memcpy(logbuf + loglen, text, len);
	loglen += len;
	logbuf[loglen] = 0;
}

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	log_add_sink(capture, NULL);
	loglen = 0;
	logbuf[0] = 0;
	/* VMX on with a current VMCS, so that VMREAD/VMWRITE work */
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	memset(&cpu, 0, sizeof(cpu));
	memset(&regs, 0, sizeof(regs));
	cpu.proc2 = CPU2_ENABLE_EPT | CPU2_UNRESTRICTED_GUEST;
	cpu.entry_ctls = ENTRY_IA32E_MODE_GUEST | ENTRY_LOAD_EFER;
	vm_set(VMCS_ENTRY_CTLS, cpu.entry_ctls);
	vm_set(VMCS_GUEST_CS_AR, 0xa09b);
	vm_set(VMCS_GUEST_SS_AR, 0xc093);
	vm_set(VMCS_GUEST_CR0, 0x80050033);
	vm_set(VMCS_CR0_READ_SHADOW, 0x80050033);
	vm_set(VMCS_GUEST_RIP, GUEST_RIP);
	vm_set(VMCS_GUEST_RFLAGS, 0x2);
	/* no tracing backend: no trace MSR is intercepted */
	assert_int_equal(trace_msr_configure(TV_SOURCE_NONE), 0);
	/* the tracer's MSR policy reaches the exits through its hooks */
	trace_hooks_register();
	return 0;
}

static enum exit_action msr_exit(uint32_t reason, uint32_t msr, uint64_t rax, uint64_t rdx)
{
	regs.rcx = 0xffffffff00000000ull | msr;  /* RCX[63:32] ignored */
	regs.rax = rax;
	regs.rdx = rdx;
	vm_set(VMCS_EXIT_REASON, reason);
	vm_set(VMCS_EXIT_INSTRUCTION_LEN, 2);
	return vmx_exit_dispatch(&cpu, &regs);
}

static void assert_gp_injected(void)
{
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0x80000b0d);
	assert_int_equal(vm_get(VMCS_ENTRY_EXCEPTION_ERROR_CODE), 0);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP);  /* a fault: RIP stays */
}

/* --- the bitmap -------------------------------------------------------------- */

static int bit(const uint8_t *b, size_t byte_base, uint32_t index)
{
	return (b[byte_base + index / 8] >> (index % 8)) & 1;
}

static void test_bitmap_exact_bits(void **state)
{
	uint8_t b[4096];
	size_t set = 0;

	(void)state;
	memset(b, 0xa5, sizeof(b));
	msr_bitmap_build(b);
	for (size_t i = 0; i < sizeof(b); i++)
		set += (size_t)__builtin_popcount(b[i]);
	/* FEATURE_CONTROL + 18 VMX capability MSRs, read and write */
	assert_int_equal(set, 2 * (1 + 18));

	/* read-low at 0, write-low at 2048 (SDM 3C 25.6.9) */
	assert_true(bit(b, 0, MSR_FEATURE_CONTROL));
	assert_true(bit(b, 2048, MSR_FEATURE_CONTROL));
	for (uint32_t m = 0x480; m <= 0x491; m++) {
		assert_true(bit(b, 0, m));
		assert_true(bit(b, 2048, m));
	}
	assert_false(bit(b, 0, 0x47f));
	assert_false(bit(b, 0, 0x492));
	assert_false(bit(b, 0, 0x39));
	assert_false(bit(b, 0, 0x3b));
	/* byte-level: 0x3a is byte 7 bit 2; 0x480..0x487 is byte 0x90 */
	assert_int_equal(b[7], 0x04);
	assert_int_equal(b[0x90], 0xff);
	assert_int_equal(b[0x91], 0xff);
	assert_int_equal(b[0x92], 0x03);
	assert_int_equal(b[2048 + 0x92], 0x03);

	/* untouched: DEBUGCTL, EFER (read-high at 1024, write-high at 3072) */
	assert_false(bit(b, 0, MSR_DEBUGCTL));
	assert_false(bit(b, 2048, MSR_DEBUGCTL));
	for (size_t i = 1024; i < 2048; i++)
		assert_int_equal(b[i], 0);
	for (size_t i = 3072; i < 4096; i++)
		assert_int_equal(b[i], 0);
}

static void test_bitmap_test_helper(void **state)
{
	uint8_t b[4096];

	(void)state;
	msr_bitmap_build(b);
	assert_true(msr_bitmap_test(b, MSR_FEATURE_CONTROL, false));
	assert_true(msr_bitmap_test(b, MSR_FEATURE_CONTROL, true));
	assert_true(msr_bitmap_test(b, 0x491, true));
	assert_false(msr_bitmap_test(b, MSR_DEBUGCTL, false));
	assert_false(msr_bitmap_test(b, MSR_DEBUGCTL, true));
	assert_false(msr_bitmap_test(b, MSR_EFER, false));
	assert_false(msr_bitmap_test(b, MSR_EFER, true));
	/* outside both ranges: always exits */
	assert_true(msr_bitmap_test(b, 0x40000000, false));
	assert_true(msr_bitmap_test(b, 0x2000, true));
}

static void test_bitmap_matches_table(void **state)
{
	uint8_t b[4096];

	(void)state;
	msr_bitmap_build(b);
	for (size_t i = 0; i < msr_emul_count; i++) {
		const struct msr_emul *e = &msr_emul_table[i];

		for (uint32_t m = e->first; m <= e->last; m++) {
			assert_int_equal(msr_bitmap_test(b, m, false), e->read != NULL);
			assert_int_equal(msr_bitmap_test(b, m, true), e->write != NULL);
		}
	}
}

/* --- RDMSR/WRMSR -------------------------------------------------------------- */

static void test_feature_control_read(void **state)
{
	(void)state;
	/* firmware: locked, VMX outside SMX, SENTER enables, LMCE (bit 20) */
	seed_msr(MSR_FEATURE_CONTROL, 0x0010ff07ull);
	assert_int_equal(msr_exit(EXIT_REASON_RDMSR, MSR_FEATURE_CONTROL, ~0ull, ~0ull), EXIT_RESUME);
	/* lock set, bits 2:1 and 15:8 clear, the rest as is; zero-extended */
	assert_int_equal(regs.rax, 0x00100001);
	assert_int_equal(regs.rdx, 0);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP + 2);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0);

	/* an unlocked one reads as locked too */
	seed_msr(MSR_FEATURE_CONTROL, 0);
	msr_exit(EXIT_REASON_RDMSR, MSR_FEATURE_CONTROL, 0, 0);
	assert_int_equal(regs.rax, 1);  /* lock */
}

static void test_feature_control_write_gp(void **state)
{
	(void)state;
	seed_msr(MSR_FEATURE_CONTROL, 5);
	assert_int_equal(msr_exit(EXIT_REASON_WRMSR, MSR_FEATURE_CONTROL, 5, 0), EXIT_RESUME);
	assert_gp_injected();
	assert_int_equal(hw_rdmsr(MSR_FEATURE_CONTROL), 5);
	assert_int_equal(cpu.stats.injected_gp, 1);
}

static void test_vmx_capability_msrs_gp(void **state)
{
	(void)state;
	seed_msr(0x480, 0xda040000000004ull);
	regs.rbx = 0x1234;
	assert_int_equal(msr_exit(EXIT_REASON_RDMSR, 0x480, 0x77, 0x88), EXIT_RESUME);
	assert_gp_injected();
	/* nothing written back on a fault */
	assert_int_equal(regs.rax, 0x77);
	assert_int_equal(regs.rdx, 0x88);

	setup(NULL);
	msr_exit(EXIT_REASON_RDMSR, 0x491, 0, 0);
	assert_gp_injected();
	setup(NULL);
	msr_exit(EXIT_REASON_WRMSR, 0x485, 1, 0);
	assert_gp_injected();
}

static void test_unexpected_msr_gp_logged_once(void **state)
{
	(void)state;
	/* DEBUGCTL is not intercepted; if it arrives anyway: #GP, one warning */
	msr_exit(EXIT_REASON_RDMSR, MSR_DEBUGCTL, 0, 0);
	assert_gp_injected();
	assert_non_null(strstr(logbuf, "unexpected RDMSR of MSR 0x1d9"));
	setup(NULL);  /* clears the captured log */
	msr_exit(EXIT_REASON_WRMSR, 0x40000000, 0, 0);
	assert_gp_injected();
	assert_null(strstr(logbuf, "unexpected"));
}

/* A test-only row would need a mutable table; check the split on the one
 * MSR whose read succeeds instead: EDX:EAX from a 64-bit value. */
static void test_rdmsr_splits_edx_eax(void **state)
{
	(void)state;
	seed_msr(MSR_FEATURE_CONTROL, 0xabcd000000000001ull);
	msr_exit(EXIT_REASON_RDMSR, MSR_FEATURE_CONTROL, 0xffffffffffffffffull, 0xffffffffffffffffull);
	assert_int_equal(regs.rax, 0x00000001);
	assert_int_equal(regs.rdx, 0xabcd0000);
}

static void test_gp_in_real_mode_has_no_error_code(void **state)
{
	(void)state;
	/* unrestricted guest with CR0.PE = 0: deliver-error-code must be 0
	 * (SDM 3C 27.2.1.3) */
	vm_set(VMCS_GUEST_CR0, 0x60000030);
	vm_set(VMCS_ENTRY_CTLS, ENTRY_LOAD_EFER);
	vm_set(VMCS_GUEST_CS_AR, 0x9b);
	vm_set(VMCS_GUEST_RIP, 0x1000);
	vm_set(VMCS_ENTRY_EXCEPTION_ERROR_CODE, 0x5555);
	msr_exit(EXIT_REASON_WRMSR, MSR_FEATURE_CONTROL, 0, 0);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0x8000030d);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), 0x1000);
}

static void test_inject_encoding(void **state)
{
	struct exit_ctx ctx = { .cpu = &cpu, .regs = &regs };

	(void)state;
	exit_inject_exception(&ctx, VEC_GP, true, 0x18);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0x80000b0d);
	assert_int_equal(vm_get(VMCS_ENTRY_EXCEPTION_ERROR_CODE), 0x18);
	exit_inject_exception(&ctx, VEC_UD, false, 0);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0x80000306);
	/* #UD never has an error code, whatever the caller says */
	exit_inject_exception(&ctx, VEC_UD, true, 0);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0x80000306);
	assert_int_equal(intr_info_hw_exception(14, true), 0x80000b0e);
	assert_int_equal(cpu.stats.injected_ud, 2);
	assert_int_equal(cpu.stats.injected_gp, 1);
}


/* --- tracing MSRs (vmm/trace/msr_policy.c) ---------------------------------------------- */

/* The i7-6700K as test_trace_caps.c decodes it (recorded VirtualBox values). */
static void caps_6700k(struct trace_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->intel = true;
	c->family = 6;
	c->model = 0x5e;
	c->vmx = c->entry_load_debug = c->exit_save_debug = c->mtf = true;
	c->pt_cpuid = c->pt_topa = c->pt_ip_filter = c->pt_cr3_filter = true;
	c->pt_addr_ranges = 2;
	c->ds = c->dtes64 = c->debugctl_works = c->bts = true;
	c->pdcm = true;
	c->perf_capabilities = 0x33c5;
	c->lbr_format = 5;
	c->lbr_depth = 32;
	c->lbr_select = c->lbr_info = true;
	c->lbr_from0 = 0x680;
	c->lbr_to0 = 0x6c0;
	c->lbr = c->btf = true;
	c->pmu_version = 4;
	c->pmu_gp_counters = 4;
	c->pmu_fixed_counters = 3;
}

static struct trace_msr_state *trace_setup_backend(enum tv_source b)
{
	struct trace_caps c;
	struct trace_msr_state *s;

	caps_6700k(&c);
	assert_int_equal(trace_msr_configure(b), 0);
	s = trace_msr_state_of(&cpu);
	assert_non_null(s);
	assert_int_equal(trace_msr_init(s, &c, b), 0);
	return s;
}

static void test_bitmap_bts_backend(void **state)
{
	uint8_t b[4096];
	size_t set = 0;

	(void)state;
	assert_int_equal(trace_msr_configure(TV_SOURCE_BTS), 0);
	msr_bitmap_build(b);
	for (size_t i = 0; i < sizeof(b); i++)
		set += (size_t)__builtin_popcount(b[i]);
	/* + DEBUGCTL, DS_AREA, PEBS_ENABLE both ways, STATUS read, OVF_CTRL write */
	assert_int_equal(set, 2 * (1 + 18) + 8);
	assert_true(msr_bitmap_test(b, MSR_DEBUGCTL, false));
	assert_true(msr_bitmap_test(b, MSR_DEBUGCTL, true));
	assert_true(msr_bitmap_test(b, 0x600, true));
	assert_true(msr_bitmap_test(b, 0x3f1, false));
	assert_true(msr_bitmap_test(b, 0x38e, false));
	assert_false(msr_bitmap_test(b, 0x38e, true));
	assert_false(msr_bitmap_test(b, 0x390, false));
	assert_true(msr_bitmap_test(b, 0x390, true));
	assert_false(msr_bitmap_test(b, 0x38f, true));
	assert_false(msr_bitmap_test(b, 0x570, true));
	assert_false(msr_bitmap_test(b, 0x680, false));
	/* the table's rows are unchanged */
	assert_true(msr_bitmap_test(b, MSR_FEATURE_CONTROL, true));

	assert_int_equal(trace_msr_configure(TV_SOURCE_PT), 0);
	msr_bitmap_build(b);
	assert_false(msr_bitmap_test(b, MSR_DEBUGCTL, true));
	for (uint32_t m = 0x580; m <= 0x587; m++)
		assert_true(msr_bitmap_test(b, m, false));
	assert_true(msr_bitmap_test(b, 0x570, true));

	assert_int_equal(trace_msr_configure(TV_SOURCE_LBR), 0);
	msr_bitmap_build(b);
	for (uint32_t m = 0x1500; m <= 0x153f; m++)
		assert_true(msr_bitmap_test(b, m, true));
	assert_true(msr_bitmap_test(b, 0x6df, false));
	assert_true(msr_bitmap_test(b, 0x14ce, true));
	assert_false(msr_bitmap_test(b, 0x6e0, false));
}

static void test_debugctl_write_keeps_our_bits(void **state)
{
	(void)state;
	trace_setup_backend(TV_SOURCE_BTS);
	/* the BTS backend has TR|BTS|BTINT on in the guest's DEBUGCTL */
	vm_set(VMCS_GUEST_IA32_DEBUGCTL, 0x1c0);
	/* Linux perf switches LBR on and BTS off */
	assert_int_equal(msr_exit(EXIT_REASON_WRMSR, MSR_DEBUGCTL, 0x1, 0), EXIT_RESUME);
	assert_int_equal(vm_get(VMCS_GUEST_IA32_DEBUGCTL), 0x1c1);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP + 2);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0);
	/* no WRMSR in VMX root: DEBUGCTL lives in the VMCS */
	assert_int_equal(hw_fake_msr_write_count, 0);
	/* and reads back what it wrote */
	vm_set(VMCS_GUEST_RIP, GUEST_RIP);
	msr_exit(EXIT_REASON_RDMSR, MSR_DEBUGCTL, ~0ull, ~0ull);
	assert_int_equal(regs.rax, 0x1);
	assert_int_equal(regs.rdx, 0);
}

static void test_debugctl_reserved_gp(void **state)
{
	(void)state;
	trace_setup_backend(TV_SOURCE_BTS);
	vm_set(VMCS_GUEST_IA32_DEBUGCTL, 0x1c0);
	msr_exit(EXIT_REASON_WRMSR, MSR_DEBUGCTL, 0x4, 0);
	assert_gp_injected();
	assert_int_equal(vm_get(VMCS_GUEST_IA32_DEBUGCTL), 0x1c0);
	setup(NULL);
	trace_setup_backend(TV_SOURCE_BTS);
	msr_exit(EXIT_REASON_WRMSR, MSR_DEBUGCTL, 0, 1);  /* bit 32 */
	assert_gp_injected();
	assert_int_equal(cpu.stats.injected_gp, 1);
}

static void test_ds_area_and_status_through_exits(void **state)
{
	const uint64_t writes = hw_fake_msr_write_count;

	(void)state;
	trace_setup_backend(TV_SOURCE_BTS);
	seed_msr(0x600, 0xfffffe0000001000ull);   /* ours */
	msr_exit(EXIT_REASON_WRMSR, 0x600, 0x12340000, 0xffff8880);
	assert_int_equal(hw_fake_get_msr(0x600), 0xfffffe0000001000ull);
	assert_int_equal(hw_fake_msr_write_count, writes);
	vm_set(VMCS_GUEST_RIP, GUEST_RIP);
	msr_exit(EXIT_REASON_RDMSR, 0x600, 0, 0);
	assert_int_equal(regs.rax, 0x12340000);
	assert_int_equal(regs.rdx, 0xffff8880);
	/* our DS buffer overflow is hidden from the guest's status */
	seed_msr(0x38e, (1ull << 62) | 0x3);
	vm_set(VMCS_GUEST_RIP, GUEST_RIP);
	msr_exit(EXIT_REASON_RDMSR, 0x38e, 0, 0);
	assert_int_equal(regs.rax, 0x3);
	assert_int_equal(regs.rdx, 0);
	/* and its acknowledgement cannot clear it */
	vm_set(VMCS_GUEST_RIP, GUEST_RIP);
	msr_exit(EXIT_REASON_WRMSR, 0x390, 0x3, 1u << 30);
	assert_int_equal(hw_fake_msr_write_log(0)->msr, 0x390);
	assert_int_equal(hw_fake_msr_write_log(0)->value, 0x3);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP + 2);
}

static void test_pt_msrs_absent_gp(void **state)
{
	struct trace_msr_state *s;

	(void)state;
	s = trace_setup_backend(TV_SOURCE_PT);
	s->has_pt = false;   /* a CPU (an E-core, say) without PT */
	msr_exit(EXIT_REASON_RDMSR, 0x570, 0x55, 0x66);
	assert_gp_injected();
	assert_int_equal(regs.rax, 0x55);
	assert_int_equal(regs.rdx, 0x66);
	assert_null(strstr(logbuf, "unexpected"));
}

static void test_trace_msr_not_intercepted_is_unexpected(void **state)
{
	(void)state;
	/* configured for PT, DEBUGCTL must not exit; if it does: as before */
	trace_setup_backend(TV_SOURCE_PT);
	msr_exit(EXIT_REASON_WRMSR, MSR_DEBUGCTL, 1, 0);
	assert_gp_injected();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_bitmap_exact_bits, setup),
		cmocka_unit_test_setup(test_bitmap_test_helper, setup),
		cmocka_unit_test_setup(test_bitmap_matches_table, setup),
		cmocka_unit_test_setup(test_feature_control_read, setup),
		cmocka_unit_test_setup(test_feature_control_write_gp, setup),
		cmocka_unit_test_setup(test_vmx_capability_msrs_gp, setup),
		cmocka_unit_test_setup(test_unexpected_msr_gp_logged_once, setup),
		cmocka_unit_test_setup(test_rdmsr_splits_edx_eax, setup),
		cmocka_unit_test_setup(test_gp_in_real_mode_has_no_error_code, setup),
		cmocka_unit_test_setup(test_inject_encoding, setup),
		cmocka_unit_test_setup(test_bitmap_bts_backend, setup),
		cmocka_unit_test_setup(test_debugctl_write_keeps_our_bits, setup),
		cmocka_unit_test_setup(test_debugctl_reserved_gp, setup),
		cmocka_unit_test_setup(test_ds_area_and_status_through_exits, setup),
		cmocka_unit_test_setup(test_pt_msrs_absent_gp, setup),
		cmocka_unit_test_setup(test_trace_msr_not_intercepted_is_unexpected, setup),
	};

	return cmocka_run_group_tests_name("test_exit_msr", tests, NULL, NULL);
}
