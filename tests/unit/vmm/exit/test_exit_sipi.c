/* SPDX-License-Identifier: MIT */
/*
 * test_exit_sipi.c - the INIT -> wait-for-SIPI -> SIPI state machine
 * (vmm/exit/exit_sipi.c): an AP that was running 64-bit firmware code gets
 * INIT, waits, and starts in real mode at the SIPI vector.
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
#include "vmm/vmx/vmx_check.h"

/* --- fixture: an AP in 64-bit mode (as the firmware left it) ------------- */

static struct per_cpu cpu;
static struct guest_regs regs;

#define CPU_SIGNATURE 0x000906eau

/* The fake's API, used only in these wrappers. */
static void vm_set(uint32_t field, uint64_t value) { hw_fake_vmcs_set(field, value); }
static uint64_t vm_get(uint32_t field) { return hw_fake_vmcs_get(field); }
static void seed_cpuid(uint32_t leaf, uint32_t sub, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	hw_fake_set_cpuid(leaf, sub, a, b, c, d);
}
static void fail_vmwrite(uint32_t field, uint32_t err) { hw_fake_fail_vmwrite(field, err); }

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	/* VMX on with a current VMCS, so that VMREAD/VMWRITE work */
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	memset(&cpu, 0, sizeof(cpu));
	cpu.index = 1;
	cpu.proc2 = CPU2_ENABLE_EPT | CPU2_UNRESTRICTED_GUEST;
	cpu.entry_ctls = ENTRY_IA32E_MODE_GUEST | ENTRY_LOAD_EFER | ENTRY_LOAD_DEBUG_CONTROLS;
	cpu.caps.misc = VMX_MISC_ACT_HLT | VMX_MISC_ACT_SHUTDOWN | VMX_MISC_ACT_WAIT_SIPI;
	cpu.caps.cr0_fixed0 = 0x80000021;
	cpu.caps.cr0_fixed1 = 0xffffffff;
	cpu.caps.cr4_fixed0 = CR4_VMXE;
	cpu.caps.cr4_fixed1 = 0x3767ff;
	cpu.cr0_mask = CR0_NE;
	cpu.cr4_mask = CR4_VMXE;
	for (size_t i = 0; i < sizeof(regs) / sizeof(uint64_t); i++)
		((uint64_t *)&regs)[i] = 0x1111111111111111ull * (i + 1);

	vm_set(VMCS_ENTRY_CTLS, cpu.entry_ctls);
	vm_set(VMCS_GUEST_CS_SELECTOR, 0x38);
	vm_set(VMCS_GUEST_CS_AR, 0xa09b);
	vm_set(VMCS_GUEST_SS_AR, 0xc093);
	vm_set(VMCS_GUEST_TR_AR, 0x8b);
	vm_set(VMCS_GUEST_LDTR_AR, 0x10000);
	vm_set(VMCS_GUEST_CR0, 0x80010033);
	vm_set(VMCS_CR0_READ_SHADOW, 0x80010033);
	vm_set(VMCS_GUEST_CR3, 0x7f801000);
	vm_set(VMCS_GUEST_CR4, 0x2668);
	vm_set(VMCS_CR4_READ_SHADOW, 0x0668);
	vm_set(VMCS_GUEST_IA32_EFER, 0x500);
	vm_set(VMCS_GUEST_RIP, 0x7e5f1234);
	vm_set(VMCS_GUEST_RSP, 0x7e000ff0);
	vm_set(VMCS_GUEST_RFLAGS, 0x246);
	vm_set(VMCS_GUEST_DR7, 0x401);
	vm_set(VMCS_GUEST_INTERRUPTIBILITY, INTERRUPTIBILITY_STI);
	vm_set(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, PENDING_DBG_BS);
	seed_cpuid(1, 0, CPU_SIGNATURE, 0x00100800, 0x7ffafbff, 0xbfebfbff);
	hw_write_cr2(0xdead000);
	return 0;
}

static enum exit_action dispatch(uint32_t reason, uint64_t qual)
{
	vm_set(VMCS_EXIT_REASON, reason);
	vm_set(VMCS_EXIT_QUALIFICATION, qual);
	return vmx_exit_dispatch(&cpu, &regs);
}

/* --- tests ----------------------------------------------------------------------- */

static void test_sipi_ignored_when_not_waiting(void **state)
{
	(void)state;
	assert_int_equal(dispatch(EXIT_REASON_SIPI, 0x9a), EXIT_RESUME);
	assert_int_equal(cpu.sipi_state, VCPU_RUNNING);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), 0x7e5f1234);
	assert_int_equal(vm_get(VMCS_GUEST_CS_SELECTOR), 0x38);
	assert_true(vm_get(VMCS_ENTRY_CTLS) & ENTRY_IA32E_MODE_GUEST);
	assert_int_equal(regs.rax, 0x1111111111111111ull);
}

static void test_init_parks_in_wait_for_sipi(void **state)
{
	(void)state;
	assert_int_equal(dispatch(EXIT_REASON_INIT, 0), EXIT_RESUME);
	assert_int_equal(cpu.sipi_state, VCPU_WAIT_FOR_SIPI);
	assert_int_equal(vm_get(VMCS_GUEST_ACTIVITY_STATE), ACTIVITY_WAIT_SIPI);
	/* wait-for-SIPI needs no STI/MOV-SS blocking and no injection (27.3.1.5) */
	assert_int_equal(vm_get(VMCS_GUEST_INTERRUPTIBILITY), 0);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0);
	/* nothing else reset yet */
	assert_int_equal(vm_get(VMCS_GUEST_RIP), 0x7e5f1234);
	assert_int_equal(vm_get(VMCS_GUEST_CR0), 0x80010033);
	assert_int_equal(cpu.stats.by_reason[EXIT_REASON_INIT], 1);
}

static void test_init_without_wait_for_sipi_support_stops(void **state)
{
	(void)state;
	cpu.caps.misc = VMX_MISC_ACT_HLT;
	assert_int_equal(dispatch(EXIT_REASON_INIT, 0), EXIT_STOP_CPU);
	assert_int_equal(cpu.sipi_state, VCPU_RUNNING);
}

static void check_segment(uint32_t sel, uint32_t base, uint32_t limit, uint32_t ar,
			  uint64_t want_sel, uint64_t want_base, uint64_t want_ar)
{
	assert_int_equal(vm_get(sel), want_sel);
	assert_int_equal(vm_get(base), want_base);
	assert_int_equal(vm_get(limit), 0xffff);
	assert_int_equal(vm_get(ar), want_ar);
}

static void test_sipi_loads_real_mode_state(void **state)
{
	(void)state;
	dispatch(EXIT_REASON_INIT, 0);
	assert_int_equal(dispatch(EXIT_REASON_SIPI, 0x9a), EXIT_RESUME);

	check_segment(VMCS_GUEST_CS_SELECTOR, VMCS_GUEST_CS_BASE, VMCS_GUEST_CS_LIMIT,
		      VMCS_GUEST_CS_AR, 0x9a00, 0x9a000, 0x9b);
	check_segment(VMCS_GUEST_DS_SELECTOR, VMCS_GUEST_DS_BASE, VMCS_GUEST_DS_LIMIT,
		      VMCS_GUEST_DS_AR, 0, 0, 0x93);
	check_segment(VMCS_GUEST_ES_SELECTOR, VMCS_GUEST_ES_BASE, VMCS_GUEST_ES_LIMIT,
		      VMCS_GUEST_ES_AR, 0, 0, 0x93);
	check_segment(VMCS_GUEST_FS_SELECTOR, VMCS_GUEST_FS_BASE, VMCS_GUEST_FS_LIMIT,
		      VMCS_GUEST_FS_AR, 0, 0, 0x93);
	check_segment(VMCS_GUEST_GS_SELECTOR, VMCS_GUEST_GS_BASE, VMCS_GUEST_GS_LIMIT,
		      VMCS_GUEST_GS_AR, 0, 0, 0x93);
	check_segment(VMCS_GUEST_SS_SELECTOR, VMCS_GUEST_SS_BASE, VMCS_GUEST_SS_LIMIT,
		      VMCS_GUEST_SS_AR, 0, 0, 0x93);
	check_segment(VMCS_GUEST_LDTR_SELECTOR, VMCS_GUEST_LDTR_BASE, VMCS_GUEST_LDTR_LIMIT,
		      VMCS_GUEST_LDTR_AR, 0, 0, 0x82);
	check_segment(VMCS_GUEST_TR_SELECTOR, VMCS_GUEST_TR_BASE, VMCS_GUEST_TR_LIMIT,
		      VMCS_GUEST_TR_AR, 0, 0, 0x8b);
	assert_int_equal(vm_get(VMCS_GUEST_GDTR_BASE), 0);
	assert_int_equal(vm_get(VMCS_GUEST_GDTR_LIMIT), 0xffff);
	assert_int_equal(vm_get(VMCS_GUEST_IDTR_BASE), 0);
	assert_int_equal(vm_get(VMCS_GUEST_IDTR_LIMIT), 0xffff);

	assert_int_equal(vm_get(VMCS_GUEST_RIP), 0);
	assert_int_equal(vm_get(VMCS_GUEST_RSP), 0);
	assert_int_equal(vm_get(VMCS_GUEST_RFLAGS), 0x2);
	/* CR0: CD NW ET, plus NE forced by CR0_FIXED0 (PE/PG exempt: unrestricted) */
	assert_int_equal(vm_get(VMCS_GUEST_CR0), 0x60000030);
	assert_int_equal(vm_get(VMCS_CR0_READ_SHADOW), 0x60000010);
	assert_int_equal(vm_get(VMCS_GUEST_CR3), 0);
	assert_int_equal(vm_get(VMCS_GUEST_CR4), CR4_VMXE);
	assert_int_equal(vm_get(VMCS_CR4_READ_SHADOW), 0);
	assert_int_equal(vm_get(VMCS_GUEST_DR7), 0x400);
	assert_int_equal(vm_get(VMCS_GUEST_IA32_EFER), 0);
	assert_int_equal(vm_get(VMCS_GUEST_INTERRUPTIBILITY), 0);
	assert_int_equal(vm_get(VMCS_GUEST_PENDING_DBG_EXCEPTIONS), 0);
	assert_int_equal(vm_get(VMCS_GUEST_ACTIVITY_STATE), ACTIVITY_ACTIVE);
	assert_int_equal(hw_read_cr2(), 0);

	/* IA-32e mode guest cleared, the rest of the entry controls kept, in sync */
	assert_int_equal(vm_get(VMCS_ENTRY_CTLS), ENTRY_LOAD_EFER | ENTRY_LOAD_DEBUG_CONTROLS);
	assert_int_equal(cpu.entry_ctls, ENTRY_LOAD_EFER | ENTRY_LOAD_DEBUG_CONTROLS);

	/* GPRs: 0, RDX = the CPU signature */
	assert_int_equal(regs.rax, 0);
	assert_int_equal(regs.rbx, 0);
	assert_int_equal(regs.rcx, 0);
	assert_int_equal(regs.rdx, CPU_SIGNATURE);
	assert_int_equal(regs.rsi, 0);
	assert_int_equal(regs.rdi, 0);
	assert_int_equal(regs.rbp, 0);
	assert_int_equal(regs.r8, 0);
	assert_int_equal(regs.r15, 0);

	assert_int_equal(cpu.sipi_state, VCPU_RUNNING);

	/* a second SIPI (the OS sends two) is ignored */
	vm_set(VMCS_GUEST_RIP, 0x20);
	dispatch(EXIT_REASON_SIPI, 0x10);
	assert_int_equal(vm_get(VMCS_GUEST_CS_SELECTOR), 0x9a00);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), 0x20);
}

static void test_sipi_vector_from_low_byte(void **state)
{
	(void)state;
	dispatch(EXIT_REASON_INIT, 0);
	dispatch(EXIT_REASON_SIPI, 0x01);
	assert_int_equal(vm_get(VMCS_GUEST_CS_SELECTOR), 0x0100);
	assert_int_equal(vm_get(VMCS_GUEST_CS_BASE), 0x1000);
	dispatch(EXIT_REASON_INIT, 0);
	dispatch(EXIT_REASON_SIPI, 0xff);
	assert_int_equal(vm_get(VMCS_GUEST_CS_SELECTOR), 0xff00);
	assert_int_equal(vm_get(VMCS_GUEST_CS_BASE), 0xff000);
}

static void test_sipi_without_unrestricted_guest_stops(void **state)
{
	(void)state;
	cpu.proc2 = CPU2_ENABLE_EPT;
	dispatch(EXIT_REASON_INIT, 0);
	assert_int_equal(dispatch(EXIT_REASON_SIPI, 0x9a), EXIT_STOP_CPU);
}

static void test_sipi_vmwrite_failure_stops(void **state)
{
	(void)state;
	dispatch(EXIT_REASON_INIT, 0);
	fail_vmwrite(VMCS_GUEST_TR_AR, 12);
	assert_int_equal(dispatch(EXIT_REASON_SIPI, 0x9a), EXIT_STOP_CPU);
}

/*
 * The state after SIPI passes vmx_check.c's software VM-entry checks
 * (SDM 3C 27.2-27.3) in a VMCS whose controls and host state are as
 * vmx.c writes them, and so does the parked wait-for-SIPI state.
 */
static void test_sipi_state_passes_entry_checks(void **state)
{
	char why[200] = "";

	(void)state;
	cpu.caps.pin = cpu.caps.proc = cpu.caps.proc2 = 0xffffffff00000000ull;
	cpu.caps.exit = cpu.caps.entry = 0xffffffff00000000ull;
	cpu.caps.ept_vpid = EPT_CAP_PWL4 | EPT_CAP_MEMTYPE_WB;
	vm_set(VMCS_PROC_BASED_CTLS, CPU_ACTIVATE_SECONDARY_CONTROLS | CPU_USE_MSR_BITMAPS);
	vm_set(VMCS_PROC_BASED_CTLS2, cpu.proc2);
	vm_set(VMCS_EXIT_CTLS, EXIT_HOST_ADDRESS_SPACE_SIZE | EXIT_LOAD_EFER | EXIT_SAVE_EFER);
	vm_set(VMCS_MSR_BITMAP, 0x7f000000);
	vm_set(VMCS_EPT_POINTER, 0x7f001000 | 0x1e);
	vm_set(VMCS_HOST_CR0, 0x80000033);
	vm_set(VMCS_HOST_CR4, 0x2020);
	vm_set(VMCS_HOST_CS_SELECTOR, 0x08);
	vm_set(VMCS_HOST_SS_SELECTOR, 0x10);
	vm_set(VMCS_HOST_DS_SELECTOR, 0x10);
	vm_set(VMCS_HOST_ES_SELECTOR, 0x10);
	vm_set(VMCS_HOST_TR_SELECTOR, 0x18);
	vm_set(VMCS_HOST_IA32_EFER, 0x500);
	vm_set(VMCS_HOST_RIP, 0x7f100000);
	vm_set(VMCS_VMCS_LINK_POINTER, ~0ull);
	/* the firmware AP state of setup(), completed */
	vm_set(VMCS_GUEST_CS_LIMIT, 0xffffffff);
	vm_set(VMCS_GUEST_CS_AR, 0xa09b);
	vm_set(VMCS_GUEST_SS_LIMIT, 0xffffffff);
	vm_set(VMCS_GUEST_TR_AR, 0x8b);
	vm_set(VMCS_GUEST_TR_LIMIT, 0x67);
	vm_set(VMCS_GUEST_DS_AR, 0x10000);
	vm_set(VMCS_GUEST_ES_AR, 0x10000);
	vm_set(VMCS_GUEST_FS_AR, 0x10000);
	vm_set(VMCS_GUEST_GS_AR, 0x10000);
	vm_set(VMCS_GUEST_CR4, 0x2668 | CR4_PAE);
	vm_set(VMCS_GUEST_RFLAGS, 0x2);
	vm_set(VMCS_GUEST_INTERRUPTIBILITY, 0);
	vm_set(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, 0);
	assert_int_equal(vmx_check_vmcs(&cpu.caps, why, sizeof(why)), 0);

	dispatch(EXIT_REASON_INIT, 0);
	if (vmx_check_vmcs(&cpu.caps, why, sizeof(why)))
		fail_msg("after INIT: %s", why);
	dispatch(EXIT_REASON_SIPI, 0x9a);
	if (vmx_check_vmcs(&cpu.caps, why, sizeof(why)))
		fail_msg("after SIPI: %s", why);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_sipi_ignored_when_not_waiting, setup),
		cmocka_unit_test_setup(test_init_parks_in_wait_for_sipi, setup),
		cmocka_unit_test_setup(test_init_without_wait_for_sipi_support_stops, setup),
		cmocka_unit_test_setup(test_sipi_loads_real_mode_state, setup),
		cmocka_unit_test_setup(test_sipi_vector_from_low_byte, setup),
		cmocka_unit_test_setup(test_sipi_without_unrestricted_guest_stops, setup),
		cmocka_unit_test_setup(test_sipi_vmwrite_failure_stops, setup),
		cmocka_unit_test_setup(test_sipi_state_passes_entry_checks, setup),
	};

	return cmocka_run_group_tests_name("test_exit_sipi", tests, NULL, NULL);
}
