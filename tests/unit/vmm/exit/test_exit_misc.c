/* SPDX-License-Identifier: MIT */
/*
 * test_exit_misc.c - the dispatcher's edges (unknown reasons, VM-entry
 * failures, the VMCS dump, failed VMREAD/VMWRITE reports) and the small
 * exits: XSETBV, INVD, GETSEC, the VMX instructions, triple fault.
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

/* --- fixture: one 64-bit guest CPU on the fake seam --------------------- */

static struct per_cpu cpu;
static struct guest_regs regs;
static char logbuf[64 * 1024];
static size_t loglen;

#define GUEST_RIP 0xffffffff81000000ull
/* x87 SSE AVX BNDREGS BNDCSR AVX-512 (3) PKRU XTILECFG XTILEDATA */
#define XCR0_SUPPORTED 0x602ffull

/* The fake's API, used only in these wrappers. */
static void vm_set(uint32_t field, uint64_t value) { hw_fake_vmcs_set(field, value); }
static uint64_t vm_get(uint32_t field) { return hw_fake_vmcs_get(field); }
static void seed_cpuid(uint32_t leaf, uint32_t sub, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	hw_fake_set_cpuid(leaf, sub, a, b, c, d);
}
static int wbinvd_calls(void) { return hw_fake_wbinvd_count; }
static void fail_vmwrite(uint32_t field, uint32_t err) { hw_fake_fail_vmwrite(field, err); }

static void capture(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	if (len > sizeof(logbuf) - 1 - loglen)
		len = sizeof(logbuf) - 1 - loglen;
	memcpy(logbuf + loglen, text, len);
	loglen += len;
	logbuf[loglen] = 0;
}

static void fresh_fake(void)
{
	hw_fake_reset();
	log_clear_sinks();
	log_add_sink(capture, NULL);
	loglen = 0;
	logbuf[0] = 0;
}

static int setup(void **state)
{
	(void)state;
	fresh_fake();
	/* VMX on with a current VMCS, so that VMREAD/VMWRITE work */
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	memset(&cpu, 0, sizeof(cpu));
	memset(&regs, 0, sizeof(regs));
	cpu.index = 3;
	cpu.proc2 = CPU2_ENABLE_EPT | CPU2_UNRESTRICTED_GUEST;
	cpu.entry_ctls = ENTRY_IA32E_MODE_GUEST | ENTRY_LOAD_EFER;
	cpu.cr0_mask = CR0_NE;
	cpu.cr4_mask = CR4_VMXE;
	vm_set(VMCS_ENTRY_CTLS, cpu.entry_ctls);
	vm_set(VMCS_GUEST_CS_AR, 0xa09b);
	vm_set(VMCS_GUEST_SS_AR, 0xc093);
	vm_set(VMCS_GUEST_CR0, 0x80050033);
	vm_set(VMCS_CR0_READ_SHADOW, 0x80050033);
	vm_set(VMCS_GUEST_CR3, 0x1c0e000);
	vm_set(VMCS_GUEST_CR4, 0x426a0);
	vm_set(VMCS_CR4_READ_SHADOW, 0x406a0);
	vm_set(VMCS_GUEST_RIP, GUEST_RIP);
	vm_set(VMCS_GUEST_RFLAGS, 0x2);
	seed_cpuid(0xd, 0, (uint32_t)XCR0_SUPPORTED, 0x2b00, 0x2b00, 0);
	return 0;
}

static enum exit_action dispatch(uint32_t reason, uint64_t qual, uint32_t len)
{
	vm_set(VMCS_EXIT_REASON, reason);
	vm_set(VMCS_EXIT_QUALIFICATION, qual);
	vm_set(VMCS_EXIT_INSTRUCTION_LEN, len);
	return vmx_exit_dispatch(&cpu, &regs);
}

static void assert_exception(uint32_t info)
{
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), info);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP);
}

/* --- XSETBV ------------------------------------------------------------------- */

static void test_xcr0_rules(void **state)
{
	(void)state;
	assert_true(xsetbv_xcr0_valid(0x1, XCR0_SUPPORTED));
	assert_true(xsetbv_xcr0_valid(0x7, XCR0_SUPPORTED));
	assert_true(xsetbv_xcr0_valid(0x1f, XCR0_SUPPORTED));
	assert_true(xsetbv_xcr0_valid(0x2e7, XCR0_SUPPORTED));
	assert_true(xsetbv_xcr0_valid(0x602e7, XCR0_SUPPORTED));
	assert_false(xsetbv_xcr0_valid(0x6, XCR0_SUPPORTED));       /* x87 clear */
	assert_false(xsetbv_xcr0_valid(0x5, XCR0_SUPPORTED));       /* AVX without SSE */
	assert_false(xsetbv_xcr0_valid(0xf, XCR0_SUPPORTED));       /* BNDREGS alone */
	assert_false(xsetbv_xcr0_valid(0x17, XCR0_SUPPORTED));      /* BNDCSR alone */
	assert_false(xsetbv_xcr0_valid(0x67, XCR0_SUPPORTED));      /* AVX-512 partial */
	assert_false(xsetbv_xcr0_valid(0xe3, XCR0_SUPPORTED));      /* AVX-512 without AVX */
	assert_false(xsetbv_xcr0_valid(0x20007, XCR0_SUPPORTED));   /* XTILECFG alone */
	assert_false(xsetbv_xcr0_valid(0x40007, XCR0_SUPPORTED));   /* XTILEDATA alone */
	assert_false(xsetbv_xcr0_valid(0x107, XCR0_SUPPORTED));     /* bit 8 (PT, supervisor) */
	assert_false(xsetbv_xcr0_valid(0x7 | (1ull << 40), XCR0_SUPPORTED)); /* unsupported */
	assert_false(xsetbv_xcr0_valid(0x7, 0x3));
}

static enum exit_action xsetbv(uint64_t rcx, uint64_t rdx, uint64_t rax)
{
	regs.rcx = rcx;
	regs.rdx = rdx;
	regs.rax = rax;
	return dispatch(EXIT_REASON_XSETBV, 0, 3);
}

static void test_xsetbv_good_path(void **state)
{
	(void)state;
	hw_write_cr4(CR4_VMXE);  /* the firmware's CR4: OSXSAVE clear */
	/* upper halves of RAX/RDX/RCX are ignored */
	assert_int_equal(xsetbv(0xffffffff00000000ull, 0xffffffff00000000ull, 0xffffffff000000e7ull),
			 EXIT_RESUME);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0);
	assert_int_equal(hw_xgetbv(0), 0xe7);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP + 3);
	assert_int_equal(hw_read_cr4(), CR4_VMXE);  /* host CR4 as it was */
}

static void test_xsetbv_gp_classes(void **state)
{
	static const struct { uint32_t ecx; uint64_t value; } bad[] = {
		{ 1, 0x7 },          /* XCR1 is not writable */
		{ 0, 0x6 },          /* x87 clear */
		{ 0, 0x5 },          /* AVX without SSE */
		{ 0, 0xb },          /* BNDREGS without BNDCSR */
		{ 0, 0xa7 },         /* AVX-512 partial */
		{ 0, 0xe3 },         /* AVX-512 without AVX */
		{ 0, 0x20007 },      /* AMX partial */
		{ 0, 0x100007 },     /* not in CPUID.(0DH,0) */
		{ 0, 1ull << 32 | 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t xcr0;

		setup(NULL);
		xcr0 = hw_xgetbv(0);
		xsetbv(bad[i].ecx, bad[i].value >> 32, (uint32_t)bad[i].value);
		assert_exception(0x80000b0d);
		assert_int_equal(vm_get(VMCS_ENTRY_EXCEPTION_ERROR_CODE), 0);
		assert_int_equal(hw_xgetbv(0), xcr0);  /* untouched */
	}
}

static void test_xsetbv_cpl3_gp(void **state)
{
	(void)state;
	uint64_t xcr0 = hw_xgetbv(0);

	vm_set(VMCS_GUEST_SS_AR, 0xc0f3);  /* DPL 3 */
	xsetbv(0, 0, 0x7);
	assert_exception(0x80000b0d);
	assert_int_equal(hw_xgetbv(0), xcr0);
}

/* --- INVD, GETSEC, VMX instructions, triple fault ------------------------------ */

static void test_invd_becomes_wbinvd(void **state)
{
	(void)state;
	assert_int_equal(dispatch(EXIT_REASON_INVD, 0, 2), EXIT_RESUME);
	assert_int_equal(wbinvd_calls(), 1);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP + 2);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0);
}

static void test_getsec_ud(void **state)
{
	(void)state;
	assert_int_equal(dispatch(EXIT_REASON_GETSEC, 0, 3), EXIT_RESUME);
	assert_exception(0x80000306);
	assert_int_equal(cpu.stats.injected_ud, 1);
}

static void test_vmx_instructions_ud(void **state)
{
	static const uint32_t reasons[] = {
		EXIT_REASON_VMCLEAR, EXIT_REASON_VMLAUNCH, EXIT_REASON_VMPTRLD,
		EXIT_REASON_VMPTRST, EXIT_REASON_VMREAD, EXIT_REASON_VMRESUME,
		EXIT_REASON_VMWRITE, EXIT_REASON_VMXOFF, EXIT_REASON_VMXON,
		EXIT_REASON_INVEPT, EXIT_REASON_INVVPID, EXIT_REASON_VMFUNC,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
		vm_set(VMCS_ENTRY_INTR_INFO, 0);
		assert_int_equal(dispatch(reasons[i], 0, 3), EXIT_RESUME);
		assert_exception(0x80000306);
		assert_int_equal(cpu.stats.by_reason[reasons[i]], 1);
	}
	assert_int_equal(cpu.stats.injected_ud, 12);
}

static void test_triple_fault_resets(void **state)
{
	(void)state;
	assert_int_equal(dispatch(EXIT_REASON_TRIPLE_FAULT, 0, 0), EXIT_RESET_MACHINE);
	assert_non_null(strstr(logbuf, "triple fault"));
	assert_non_null(strstr(logbuf, "RIP 0xffffffff81000000"));
	assert_non_null(strstr(logbuf, "CR3 0x1c0e000"));
}

/* --- dispatcher edges -------------------------------------------------------------- */

static void test_unknown_reason_dumps_and_stops(void **state)
{
	(void)state;
	assert_int_equal(dispatch(EXIT_REASON_HLT, 0, 1), EXIT_STOP_CPU);
	assert_non_null(strstr(logbuf, "unhandled exit reason 12 (HLT)"));
	assert_non_null(strstr(logbuf, "vmcs dump"));
	assert_non_null(strstr(logbuf, "vmcs guest:"));
	assert_non_null(strstr(logbuf, "GUEST_RIP=0xffffffff81000000"));
	assert_non_null(strstr(logbuf, "vmcs host:"));
	assert_non_null(strstr(logbuf, "vmcs control:"));
	assert_int_equal(cpu.stats.by_reason[EXIT_REASON_HLT], 1);

	/* beyond the table */
	setup(NULL);
	assert_int_equal(dispatch(75, 0, 0), EXIT_STOP_CPU);
	assert_non_null(strstr(logbuf, "unhandled exit reason 75"));
}

static void test_entry_failure_reported(void **state)
{
	(void)state;
	assert_int_equal(dispatch(EXIT_REASON_ENTRY_FAILURE | EXIT_REASON_ENTRY_FAIL_GUEST, 0, 0),
			 EXIT_STOP_CPU);
	assert_non_null(strstr(logbuf, "VM entry failed: invalid guest state"));
	assert_non_null(strstr(logbuf, "exit reason 0x80000021"));
	assert_non_null(strstr(logbuf, "vmcs guest:"));

	setup(NULL);
	dispatch(EXIT_REASON_ENTRY_FAILURE | EXIT_REASON_ENTRY_FAIL_GUEST, 4, 0);
	assert_non_null(strstr(logbuf, "qualification 4: invalid VMCS link pointer"));

	setup(NULL);
	assert_int_equal(dispatch(EXIT_REASON_ENTRY_FAILURE | EXIT_REASON_ENTRY_FAIL_MSR, 2, 0),
			 EXIT_STOP_CPU);
	assert_non_null(strstr(logbuf, "VM entry failed: MSR loading"));
	assert_non_null(strstr(logbuf, "qualification 2"));

	setup(NULL);
	assert_int_equal(dispatch(EXIT_REASON_ENTRY_FAILURE | EXIT_REASON_ENTRY_FAIL_MCE, 0, 0),
			 EXIT_STOP_CPU);
	assert_non_null(strstr(logbuf, "VM entry failed: machine check"));
}

static void test_vmwrite_failure_names_field_and_error(void **state)
{
	(void)state;
	fail_vmwrite(VMCS_GUEST_RIP, 12);
	assert_int_equal(vmcs_write(VMCS_GUEST_RIP, 1), HW_VMX_FAIL_VALID);
	assert_non_null(strstr(logbuf, "VMWRITE GUEST_RIP (0x681e) failed"));
	assert_non_null(strstr(logbuf, "VM-instruction error 12 (VMREAD/VMWRITE from/to unsupported VMCS component)"));
}

static void test_vmread_without_vmcs(void **state)
{
	uint64_t v = 77;

	(void)state;
	fresh_fake();  /* no VMPTRLD */
	assert_int_equal(vmcs_read(VMCS_GUEST_CR0, &v), HW_VMX_FAIL_INVALID);
	assert_int_equal(v, 0);
	assert_int_equal(vmcs_get(VMCS_GUEST_CR0), 0);
	assert_non_null(strstr(logbuf, "VMREAD GUEST_CR0 (0x6800) failed: VMfailInvalid"));
	loglen = 0;
	vmcs_dump();
	assert_non_null(strstr(logbuf, "no current VMCS"));
}

static void test_reason_names(void **state)
{
	(void)state;
	assert_string_equal(vmx_exit_reason_name(EXIT_REASON_CPUID), "CPUID");
	assert_string_equal(vmx_exit_reason_name(EXIT_REASON_EPT_VIOLATION), "EPT violation");
	assert_string_equal(vmx_exit_reason_name(35), "unknown");
	assert_string_equal(vmx_exit_reason_name(1000), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_xcr0_rules, setup),
		cmocka_unit_test_setup(test_xsetbv_good_path, setup),
		cmocka_unit_test_setup(test_xsetbv_gp_classes, setup),
		cmocka_unit_test_setup(test_xsetbv_cpl3_gp, setup),
		cmocka_unit_test_setup(test_invd_becomes_wbinvd, setup),
		cmocka_unit_test_setup(test_getsec_ud, setup),
		cmocka_unit_test_setup(test_vmx_instructions_ud, setup),
		cmocka_unit_test_setup(test_triple_fault_resets, setup),
		cmocka_unit_test_setup(test_unknown_reason_dumps_and_stops, setup),
		cmocka_unit_test_setup(test_entry_failure_reported, setup),
		cmocka_unit_test_setup(test_vmwrite_failure_names_field_and_error, setup),
		cmocka_unit_test_setup(test_vmread_without_vmcs, setup),
		cmocka_unit_test_setup(test_reason_names, setup),
	};

	return cmocka_run_group_tests_name("test_exit_misc", tests, NULL, NULL);
}
