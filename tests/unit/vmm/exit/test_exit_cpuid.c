/* SPDX-License-Identifier: MIT */
/*
 * test_exit_cpuid.c - CPUID exits (vmm/exit/exit_cpuid.c) through the
 * dispatcher (vmm/exit/exit.c), and exit_skip_instruction's side effects.
 *
 * The guest is a 64-bit kernel on a seeded CPU that has VMX and SMX;
 * every exit goes through vmx_exit_dispatch() as on the target.
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
#include "vmm/exit/exit.h"
#include "vmm/exit/hypercall.h"
#include "vmm/lib/log.h"
#include "vmm/version.h"

/* --- fixture: one 64-bit guest CPU on the fake seam --------------------- */

static struct per_cpu cpu;
static struct guest_regs regs;

#define GUEST_RIP 0xffffffff81000000ull
#define GUEST_CR4 0x000406a0ull       /* PAE PGE OSFXSR OSXMMEXCPT OSXSAVE */

/* The fake's API, used only in these wrappers. */
static void vm_set(uint32_t field, uint64_t value) { hw_fake_vmcs_set(field, value); }
static uint64_t vm_get(uint32_t field) { return hw_fake_vmcs_get(field); }

static void seed_cpuid(uint32_t leaf, uint32_t sub, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	hw_fake_set_cpuid(leaf, sub, a, b, c, d);
}

static void setup_cpu(uint32_t leaf1_ecx)
{
	hw_fake_reset();
	log_clear_sinks();
	/* VMX on with a current VMCS, so that VMREAD/VMWRITE work */
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	memset(&cpu, 0, sizeof(cpu));
	memset(&regs, 0, sizeof(regs));
	cpu.proc2 = CPU2_ENABLE_EPT | CPU2_UNRESTRICTED_GUEST | CPU2_ENABLE_VPID;
	cpu.entry_ctls = ENTRY_IA32E_MODE_GUEST | ENTRY_LOAD_EFER;
	cpu.caps.cr0_fixed0 = 0x80000021;
	cpu.caps.cr0_fixed1 = 0xffffffff;
	cpu.caps.cr4_fixed0 = CR4_VMXE;
	cpu.caps.cr4_fixed1 = 0x7767ff;
	cpu.cr0_mask = CR0_NE;
	cpu.cr4_mask = CR4_VMXE;

	vm_set(VMCS_ENTRY_CTLS, cpu.entry_ctls);
	vm_set(VMCS_GUEST_CS_AR, 0xa09b);  /* 64-bit code */
	vm_set(VMCS_GUEST_SS_AR, 0xc093);  /* DPL 0 */
	vm_set(VMCS_GUEST_CR0, 0x80050033);
	vm_set(VMCS_CR0_READ_SHADOW, 0x80050033);
	vm_set(VMCS_GUEST_CR4, GUEST_CR4 | CR4_VMXE);
	vm_set(VMCS_CR4_READ_SHADOW, GUEST_CR4);
	vm_set(VMCS_GUEST_RIP, GUEST_RIP);
	vm_set(VMCS_GUEST_RFLAGS, 0x2);

	/* A CPU with VMX and SMX, XSAVE, PKU. */
	seed_cpuid(0, 0, 0x16, 0x756e6547, 0x6c65746e, 0x49656e69);
	seed_cpuid(1, 0, 0x000906ea, 0x00100800, leaf1_ecx, 0xbfebfbff);
	seed_cpuid(7, 0, 0, 0x029c6fbf, 0x40000018, 0xbc000400);
}

/* Leaf 1 ECX as on a Kaby Lake: VMX, SMX, XSAVE, and OSXSAVE (the host's CR4). */
#define LEAF1_ECX 0x7ffafbffu

static int setup(void **state)
{
	(void)state;
	setup_cpu(LEAF1_ECX);
	return 0;
}

static enum exit_action dispatch(uint32_t reason, uint32_t instr_len)
{
	vm_set(VMCS_EXIT_REASON, reason);
	vm_set(VMCS_EXIT_INSTRUCTION_LEN, instr_len);
	return vmx_exit_dispatch(&cpu, &regs);
}

static void do_cpuid(uint64_t rax, uint64_t rcx)
{
	regs.rax = rax;
	regs.rcx = rcx;
	regs.rbx = 0xdeadbeefcafef00dull;
	regs.rdx = 0xfeedfacefeedfaceull;
	assert_int_equal(dispatch(EXIT_REASON_CPUID, 2), EXIT_RESUME);
}

/* --- tests ------------------------------------------------------------------ */

static void test_leaf0_passthrough_zero_extended(void **state)
{
	(void)state;
	do_cpuid(0xffffffff00000000ull, 0x1234567800000000ull);  /* upper halves ignored */
	assert_int_equal(regs.rax, 0x16);
	assert_int_equal(regs.rbx, 0x756e6547);
	assert_int_equal(regs.rcx, 0x6c65746e);
	assert_int_equal(regs.rdx, 0x49656e69);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP + 2);
}

static void test_leaf1_hides_vmx_and_smx(void **state)
{
	(void)state;
	do_cpuid(1, 0);
	assert_int_equal(regs.rax, 0x000906ea);
	assert_int_equal(regs.rbx, 0x00100800);
	assert_int_equal(regs.rcx & CPUID_1_ECX_VMX, 0);
	assert_int_equal(regs.rcx & CPUID_1_ECX_SMX, 0);
	/* every other bit as the hardware has it (OSXSAVE: guest CR4 has it) */
	assert_int_equal(regs.rcx, LEAF1_ECX & ~(CPUID_1_ECX_VMX | CPUID_1_ECX_SMX));
	assert_int_equal(regs.rdx, 0xbfebfbff);
	assert_int_equal(regs.rcx >> 32, 0);
}

static void test_leaf1_osxsave_follows_guest_cr4(void **state)
{
	(void)state;
	/* the host's CR4 has OSXSAVE (hardware CPUID says 1), the guest's not */
	vm_set(VMCS_GUEST_CR4, (GUEST_CR4 & ~CR4_OSXSAVE) | CR4_VMXE);
	vm_set(VMCS_CR4_READ_SHADOW, GUEST_CR4 & ~CR4_OSXSAVE);
	do_cpuid(1, 0);
	assert_int_equal(regs.rcx & CPUID_1_ECX_OSXSAVE, 0);
	assert_int_equal(regs.rcx & CPUID_1_ECX_XSAVE, CPUID_1_ECX_XSAVE);

	/* and the other way round */
	setup_cpu(LEAF1_ECX & ~CPUID_1_ECX_OSXSAVE);
	do_cpuid(1, 0);
	assert_int_equal(regs.rcx & CPUID_1_ECX_OSXSAVE, CPUID_1_ECX_OSXSAVE);
}

static void test_leaf7_ospke_follows_guest_cr4(void **state)
{
	(void)state;
	do_cpuid(7, 0);  /* hardware ECX has OSPKE (bit 4) set, guest CR4.PKE = 0 */
	assert_int_equal(regs.rcx, 0x40000018u & ~CPUID_7_ECX_OSPKE);
	assert_int_equal(regs.rbx, 0x029c6fbf);

	vm_set(VMCS_GUEST_CR4, GUEST_CR4 | CR4_PKE | CR4_VMXE);
	vm_set(VMCS_CR4_READ_SHADOW, GUEST_CR4 | CR4_PKE);
	do_cpuid(7, 0);
	assert_int_equal(regs.rcx, 0x40000018u);
}

static void test_signature_leaf(void **state)
{
	char sig[12];
	uint32_t w[3];

	(void)state;
	do_cpuid(0x40000000, 0);
	assert_int_equal(regs.rax, 0x40000001);
	w[0] = (uint32_t)regs.rbx;
	w[1] = (uint32_t)regs.rcx;
	w[2] = (uint32_t)regs.rdx;
	memcpy(sig, w, sizeof(sig));
	assert_memory_equal(sig, "trac" "evis" "or\0\0", 12);
	assert_int_equal(regs.rbx, 0x63617274);  /* "trac" */
	assert_int_equal(regs.rcx, 0x73697665);  /* "evis" */
	assert_int_equal(regs.rdx, 0x0000726f);  /* "or\0\0" */
}

static void test_version_leaf(void **state)
{
	(void)state;
	do_cpuid(0x40000001, 0);
	assert_int_equal(regs.rax, (TV_VERSION_MAJOR << 16) | (TV_VERSION_MINOR << 8) | TV_VERSION_PATCH);
	assert_int_equal(regs.rax, TV_VERSION_CODE);
	assert_int_equal(regs.rbx, TV_HC_ABI_VERSION);
	assert_int_equal(regs.rcx, 0);
	assert_int_equal(regs.rdx, 0);
}

static void test_version_macros_match_string(void **state)
{
	char s[32];

	(void)state;
	snprintf(s, sizeof(s), "%d.%d.%d", TV_VERSION_MAJOR, TV_VERSION_MINOR, TV_VERSION_PATCH);
	assert_string_equal(s, TV_VERSION);
}

static void test_other_hypervisor_leaves_zero(void **state)
{
	(void)state;
	seed_cpuid(0x40000002, 0, 1, 2, 3, 4);  /* must not leak through */
	do_cpuid(0x40000002, 0);
	assert_int_equal(regs.rax | regs.rbx | regs.rcx | regs.rdx, 0);
	do_cpuid(0x4fffffff, 0);
	assert_int_equal(regs.rax | regs.rbx | regs.rcx | regs.rdx, 0);
}

static void test_rip_wraps_outside_64bit_mode(void **state)
{
	(void)state;
	vm_set(VMCS_GUEST_CS_AR, 0xc09b);  /* 32-bit code, L = 0 */
	vm_set(VMCS_ENTRY_CTLS, ENTRY_LOAD_EFER);
	vm_set(VMCS_GUEST_RIP, 0xffffffffull);
	do_cpuid(0, 0);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), 1);
}

static void test_skip_ends_sti_shadow(void **state)
{
	(void)state;
	vm_set(VMCS_GUEST_INTERRUPTIBILITY, INTERRUPTIBILITY_STI | 4 /* NMI blocking */);
	do_cpuid(0, 0);
	assert_int_equal(vm_get(VMCS_GUEST_INTERRUPTIBILITY), 4);
}

static void test_skip_single_step_pends_db(void **state)
{
	(void)state;
	vm_set(VMCS_GUEST_RFLAGS, 0x2 | RFLAGS_TF);
	do_cpuid(0, 0);
	assert_int_equal(vm_get(VMCS_GUEST_PENDING_DBG_EXCEPTIONS) & PENDING_DBG_BS, PENDING_DBG_BS);

	/* DEBUGCTL.BTF: single-step on branches only, CPUID is none */
	setup_cpu(LEAF1_ECX);
	vm_set(VMCS_GUEST_RFLAGS, 0x2 | RFLAGS_TF);
	vm_set(VMCS_GUEST_IA32_DEBUGCTL, DEBUGCTL_BTF);
	do_cpuid(0, 0);
	assert_int_equal(vm_get(VMCS_GUEST_PENDING_DBG_EXCEPTIONS), 0);
}

static void test_exit_counted_by_reason(void **state)
{
	(void)state;
	do_cpuid(0, 0);
	do_cpuid(1, 0);
	assert_int_equal(cpu.stats.exits, 2);
	assert_int_equal(cpu.stats.by_reason[EXIT_REASON_CPUID], 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_leaf0_passthrough_zero_extended, setup),
		cmocka_unit_test_setup(test_leaf1_hides_vmx_and_smx, setup),
		cmocka_unit_test_setup(test_leaf1_osxsave_follows_guest_cr4, setup),
		cmocka_unit_test_setup(test_leaf7_ospke_follows_guest_cr4, setup),
		cmocka_unit_test_setup(test_signature_leaf, setup),
		cmocka_unit_test_setup(test_version_leaf, setup),
		cmocka_unit_test_setup(test_version_macros_match_string, setup),
		cmocka_unit_test_setup(test_other_hypervisor_leaves_zero, setup),
		cmocka_unit_test_setup(test_rip_wraps_outside_64bit_mode, setup),
		cmocka_unit_test_setup(test_skip_ends_sti_shadow, setup),
		cmocka_unit_test_setup(test_skip_single_step_pends_db, setup),
		cmocka_unit_test_setup(test_exit_counted_by_reason, setup),
	};

	return cmocka_run_group_tests_name("test_exit_cpuid", tests, NULL, NULL);
}
