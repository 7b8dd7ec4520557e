/* SPDX-License-Identifier: MIT */
/*
 * test_exit_cr.c - control-register access exits (vmm/exit/exit_cr.c): the
 * qualification decoders, the host-owned bits and their read shadows,
 * the #GP rules an exiting MOV has to apply, IA-32e mode switching and
 * the PAE PDPTEs.
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

#define GUEST_RIP 0xffffffff81000000ull
#define CR0_LINUX 0x80050033ull       /* PG AM WP NE ET MP PE */
#define CR4_LINUX 0x000406a0ull       /* OSXSAVE OSXMMEXCPT OSFXSR PGE PAE */
#define EFER_LINUX 0xd01ull           /* NXE LMA LME SCE */
#define CR3_LINUX 0x1c0e000ull

/* The fake's API, used only in these wrappers. */
static void vm_set(uint32_t field, uint64_t value) { hw_fake_vmcs_set(field, value); }
static uint64_t vm_get(uint32_t field) { return hw_fake_vmcs_get(field); }
static void seed_cpuid(uint32_t leaf, uint32_t sub, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	hw_fake_set_cpuid(leaf, sub, a, b, c, d);
}

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
	memset(&regs, 0, sizeof(regs));
	cpu.proc2 = CPU2_ENABLE_EPT | CPU2_UNRESTRICTED_GUEST;
	cpu.entry_ctls = ENTRY_IA32E_MODE_GUEST | ENTRY_LOAD_EFER;
	cpu.caps.cr0_fixed0 = 0x80000021;
	cpu.caps.cr0_fixed1 = 0xffffffff;
	cpu.caps.cr4_fixed0 = CR4_VMXE;
	cpu.caps.cr4_fixed1 = 0x7777ff;  /* ... LA57 (12), SMXE (14), PKE (22) */
	/* as vmx.c computes them with unrestricted guest */
	cpu.cr0_mask = CR0_NE;
	cpu.cr4_mask = CR4_VMXE;

	vm_set(VMCS_ENTRY_CTLS, cpu.entry_ctls);
	vm_set(VMCS_GUEST_CS_AR, 0xa09b);
	vm_set(VMCS_GUEST_SS_AR, 0xc093);
	vm_set(VMCS_GUEST_CR0, CR0_LINUX);
	vm_set(VMCS_CR0_READ_SHADOW, CR0_LINUX);
	vm_set(VMCS_GUEST_CR4, CR4_LINUX | CR4_VMXE);
	vm_set(VMCS_CR4_READ_SHADOW, CR4_LINUX);
	vm_set(VMCS_GUEST_CR3, CR3_LINUX);
	vm_set(VMCS_GUEST_IA32_EFER, EFER_LINUX);
	vm_set(VMCS_GUEST_RIP, GUEST_RIP);
	vm_set(VMCS_GUEST_RFLAGS, 0x2);
	seed_cpuid(0x80000000, 0, 0x80000008, 0, 0, 0);
	seed_cpuid(0x80000008, 0, 0x3027, 0, 0, 0);  /* MAXPHYADDR 39 */
	return 0;
}

/* A 32-bit protected-mode guest, paging off (an AP on its way to long mode). */
static void protected_mode_guest(uint64_t cr0, uint64_t cr4, uint64_t efer)
{
	cpu.entry_ctls = ENTRY_LOAD_EFER;
	vm_set(VMCS_ENTRY_CTLS, cpu.entry_ctls);
	vm_set(VMCS_GUEST_CS_AR, 0xc09b);
	vm_set(VMCS_GUEST_CR0, vmx_fix_cr0(&cpu.caps, cr0, true));
	vm_set(VMCS_CR0_READ_SHADOW, cr0);
	vm_set(VMCS_GUEST_CR4, cr4 | CR4_VMXE);
	vm_set(VMCS_CR4_READ_SHADOW, cr4);
	vm_set(VMCS_GUEST_IA32_EFER, efer);
	vm_set(VMCS_GUEST_RIP, 0x9000);
}

static uint64_t qual(uint32_t cr, enum cr_access_type type, uint32_t gpr, uint16_t lmsw)
{
	return (uint64_t)cr | ((uint64_t)type << 4) | ((uint64_t)gpr << 8) | ((uint64_t)lmsw << 16);
}

static enum exit_action cr_exit(uint64_t q)
{
	vm_set(VMCS_EXIT_REASON, EXIT_REASON_CR_ACCESS);
	vm_set(VMCS_EXIT_QUALIFICATION, q);
	vm_set(VMCS_EXIT_INSTRUCTION_LEN, 3);
	return vmx_exit_dispatch(&cpu, &regs);
}

static void assert_gp(uint64_t rip)
{
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0x80000b0d);
	assert_int_equal(vm_get(VMCS_ENTRY_EXCEPTION_ERROR_CODE), 0);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), rip);
}

static void assert_done(uint64_t rip)
{
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), rip + 3);
}

/* --- decoders ------------------------------------------------------------------ */

static void test_qualification_decoders(void **state)
{
	(void)state;
	/* MOV CR4, RSP */
	assert_int_equal(cr_qual_cr(0x404), 4);
	assert_int_equal(cr_qual_type(0x404), CR_ACCESS_MOV_TO);
	assert_int_equal(cr_qual_gpr(0x404), 4);
	/* MOV R13, CR3 */
	assert_int_equal(cr_qual_type(0xd13), CR_ACCESS_MOV_FROM);
	assert_int_equal(cr_qual_gpr(0xd13), 13);
	assert_int_equal(cr_qual_cr(0xd13), 3);
	/* LMSW [mem] with source 0x0001 */
	assert_int_equal(cr_qual_type(0x10070), CR_ACCESS_LMSW);
	assert_true(cr_qual_lmsw_memory(0x10070));
	assert_int_equal(cr_qual_lmsw_data(0x10070), 1);
	assert_int_equal(cr_qual_type(0x20), CR_ACCESS_CLTS);
}

/* --- CR4 ------------------------------------------------------------------------ */

static void test_cr4_write_keeps_vmxe_in_real_cr4_only(void **state)
{
	(void)state;
	regs.rax = CR4_LINUX | CR4_SMEP;
	assert_int_equal(cr_exit(qual(4, CR_ACCESS_MOV_TO, 0, 0)), EXIT_RESUME);
	assert_done(GUEST_RIP);
	assert_int_equal(vm_get(VMCS_GUEST_CR4), CR4_LINUX | CR4_SMEP | CR4_VMXE);
	assert_int_equal(vm_get(VMCS_CR4_READ_SHADOW), CR4_LINUX | CR4_SMEP);
}

static void test_cr4_write_applies_fixed_bits(void **state)
{
	(void)state;
	cpu.caps.cr4_fixed0 = CR4_VMXE | CR4_PAE;  /* a CPU that pinned PAE too */
	regs.rax = CR4_LINUX;
	cr_exit(qual(4, CR_ACCESS_MOV_TO, 0, 0));
	assert_done(GUEST_RIP);
	assert_int_equal(vm_get(VMCS_GUEST_CR4), vmx_fix_cr4(&cpu.caps, CR4_LINUX | CR4_VMXE));
}

static void test_cr4_set_vmxe_gp(void **state)
{
	(void)state;
	regs.rax = CR4_LINUX | CR4_VMXE;
	assert_int_equal(cr_exit(qual(4, CR_ACCESS_MOV_TO, 0, 0)), EXIT_RESUME);
	assert_gp(GUEST_RIP);
	assert_int_equal(vm_get(VMCS_GUEST_CR4), CR4_LINUX | CR4_VMXE);
	assert_int_equal(vm_get(VMCS_CR4_READ_SHADOW), CR4_LINUX);
	assert_int_equal(cpu.stats.injected_gp, 1);
}

static void test_cr4_from_rsp_reads_vmcs(void **state)
{
	(void)state;
	/* the stub's rsp slot is stale; a value from it would #GP (VMXE) */
	regs.rsp_unused = CR4_LINUX | CR4_VMXE;
	vm_set(VMCS_GUEST_RSP, CR4_LINUX | CR4_SMAP);
	cr_exit(qual(4, CR_ACCESS_MOV_TO, 4, 0));
	assert_done(GUEST_RIP);
	assert_int_equal(vm_get(VMCS_CR4_READ_SHADOW), CR4_LINUX | CR4_SMAP);
	/* and from R15 */
	regs.r15 = CR4_LINUX;
	cr_exit(qual(4, CR_ACCESS_MOV_TO, 15, 0));
	assert_int_equal(vm_get(VMCS_CR4_READ_SHADOW), CR4_LINUX);
}

static void test_cr4_reserved_bits_gp(void **state)
{
	(void)state;
	regs.rax = CR4_LINUX | (1ull << 31);  /* not in CR4_FIXED1 */
	cr_exit(qual(4, CR_ACCESS_MOV_TO, 0, 0));
	assert_gp(GUEST_RIP);
	setup(NULL);
	regs.rax = CR4_LINUX | (1ull << 32);  /* 63:32 reserved */
	cr_exit(qual(4, CR_ACCESS_MOV_TO, 0, 0));
	assert_gp(GUEST_RIP);
	setup(NULL);
	regs.rax = CR4_LINUX | CR4_SMXE;      /* SMX hidden like VMX */
	cr_exit(qual(4, CR_ACCESS_MOV_TO, 0, 0));
	assert_gp(GUEST_RIP);
}

static void test_cr4_long_mode_rules(void **state)
{
	(void)state;
	regs.rax = CR4_LINUX & ~CR4_PAE;      /* leaving IA-32e mode via PAE */
	cr_exit(qual(4, CR_ACCESS_MOV_TO, 0, 0));
	assert_gp(GUEST_RIP);

	setup(NULL);
	regs.rax = CR4_LINUX | CR4_LA57;      /* LA57 fixed in IA-32e mode */
	cr_exit(qual(4, CR_ACCESS_MOV_TO, 0, 0));
	assert_gp(GUEST_RIP);

	setup(NULL);
	vm_set(VMCS_GUEST_CR3, CR3_LINUX | 0x5);
	regs.rax = CR4_LINUX | CR4_PCIDE;     /* PCIDE with CR3[11:0] != 0 */
	cr_exit(qual(4, CR_ACCESS_MOV_TO, 0, 0));
	assert_gp(GUEST_RIP);

	setup(NULL);
	regs.rax = CR4_LINUX | CR4_PCIDE;     /* fine with CR3[11:0] = 0 */
	cr_exit(qual(4, CR_ACCESS_MOV_TO, 0, 0));
	assert_done(GUEST_RIP);
	assert_int_equal(vm_get(VMCS_CR4_READ_SHADOW), CR4_LINUX | CR4_PCIDE);

	setup(NULL);
	vm_set(VMCS_GUEST_CR0, CR0_LINUX & ~CR0_WP);
	vm_set(VMCS_CR0_READ_SHADOW, CR0_LINUX & ~CR0_WP);
	regs.rax = CR4_LINUX | CR4_CET;       /* CET needs CR0.WP */
	cr_exit(qual(4, CR_ACCESS_MOV_TO, 0, 0));
	assert_gp(GUEST_RIP);
}

/* --- CR0 ------------------------------------------------------------------------ */

static void test_cr0_ne_owned_by_host(void **state)
{
	(void)state;
	regs.rbx = CR0_LINUX & ~CR0_NE;
	cr_exit(qual(0, CR_ACCESS_MOV_TO, 3, 0));
	assert_done(GUEST_RIP);
	assert_int_equal(vm_get(VMCS_GUEST_CR0), CR0_LINUX);             /* NE forced */
	assert_int_equal(vm_get(VMCS_CR0_READ_SHADOW), CR0_LINUX & ~CR0_NE);
	/* the guest's view: shadow for NE */
	{
		struct exit_ctx ctx = { .cpu = &cpu, .regs = &regs };

		assert_int_equal(exit_guest_cr0(&ctx), CR0_LINUX & ~CR0_NE);
	}
}

static void test_cr0_invalid_combinations_gp(void **state)
{
	(void)state;
	regs.rax = CR0_LINUX | CR0_NW;           /* NW without CD */
	cr_exit(qual(0, CR_ACCESS_MOV_TO, 0, 0));
	assert_gp(GUEST_RIP);

	setup(NULL);
	regs.rax = CR0_LINUX | (1ull << 40);     /* 63:32 reserved */
	cr_exit(qual(0, CR_ACCESS_MOV_TO, 0, 0));
	assert_gp(GUEST_RIP);

	setup(NULL);
	regs.rax = CR0_LINUX & ~CR0_PG;          /* paging off in 64-bit mode */
	cr_exit(qual(0, CR_ACCESS_MOV_TO, 0, 0));
	assert_gp(GUEST_RIP);

	setup(NULL);
	protected_mode_guest(0x60000011, 0, 0);
	regs.rax = CR0_PG | CR0_ET;              /* PG without PE */
	cr_exit(qual(0, CR_ACCESS_MOV_TO, 0, 0));
	assert_gp(0x9000);
	assert_int_equal(vm_get(VMCS_CR0_READ_SHADOW), 0x60000011);
}

static void test_cr0_operand_is_32bit_outside_64bit_mode(void **state)
{
	(void)state;
	protected_mode_guest(0x00000011, 0, 0);
	regs.rax = 0xffffffff00000031ull;        /* upper half not part of the operand */
	cr_exit(qual(0, CR_ACCESS_MOV_TO, 0, 0));
	assert_done(0x9000);
	assert_int_equal(vm_get(VMCS_CR0_READ_SHADOW), 0x31);
	assert_int_equal(vm_get(VMCS_GUEST_CR0), 0x31);
}

static void test_cr0_activates_ia32e_mode(void **state)
{
	(void)state;
	protected_mode_guest(0x00000011, CR4_PAE, EFER_LME);
	regs.rax = 0x80000011 | CR0_NE;
	cr_exit(qual(0, CR_ACCESS_MOV_TO, 0, 0));
	assert_done(0x9000);
	assert_int_equal(vm_get(VMCS_GUEST_IA32_EFER), EFER_LME | EFER_LMA);
	assert_true(vm_get(VMCS_ENTRY_CTLS) & ENTRY_IA32E_MODE_GUEST);
	assert_true(cpu.entry_ctls & ENTRY_IA32E_MODE_GUEST);
	assert_int_equal(vm_get(VMCS_GUEST_CR0), 0x80000031);

	/* without PAE: #GP, nothing changes */
	setup(NULL);
	protected_mode_guest(0x00000011, 0, EFER_LME);
	regs.rax = 0x80000031;
	cr_exit(qual(0, CR_ACCESS_MOV_TO, 0, 0));
	assert_gp(0x9000);
	assert_int_equal(vm_get(VMCS_GUEST_IA32_EFER), EFER_LME);
	assert_false(vm_get(VMCS_ENTRY_CTLS) & ENTRY_IA32E_MODE_GUEST);
}

static uint64_t pdpt[4];
static uint64_t pdpt_read_at;

static int fake_guest_read(uint64_t gpa, void *dst, size_t len)
{
	pdpt_read_at = gpa;
	assert_int_equal(len, sizeof(pdpt));
	memcpy(dst, pdpt, len);
	return 0;
}

static void test_cr0_pae_paging_loads_pdptes(void **state)
{
	int (*saved)(uint64_t, void *, size_t) = exit_guest_read;

	(void)state;
	exit_guest_read = fake_guest_read;
	pdpt[0] = 0x1001;
	pdpt[1] = 0x2001;
	pdpt[2] = 0;
	pdpt[3] = 0x3000001;
	protected_mode_guest(0x00000011, CR4_PAE, 0);
	vm_set(VMCS_GUEST_CR3, 0x5fe0);
	regs.rax = 0x80000031;
	cr_exit(qual(0, CR_ACCESS_MOV_TO, 0, 0));
	assert_done(0x9000);
	assert_int_equal(pdpt_read_at, 0x5fe0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(vm_get(VMCS_GUEST_PDPTE(i)), pdpt[i]);
	assert_false(vm_get(VMCS_ENTRY_CTLS) & ENTRY_IA32E_MODE_GUEST);

	/* a present PDPTE with a reserved bit (bit 5): #GP, nothing loaded */
	setup(NULL);
	pdpt[1] = 0x2021;
	protected_mode_guest(0x00000011, CR4_PAE, 0);
	vm_set(VMCS_GUEST_CR3, 0x5fe0);
	regs.rax = 0x80000031;
	cr_exit(qual(0, CR_ACCESS_MOV_TO, 0, 0));
	assert_gp(0x9000);
	assert_int_equal(vm_get(VMCS_GUEST_PDPTE(0)), 0);
	assert_int_equal(vm_get(VMCS_CR0_READ_SHADOW), 0x11);

	/* beyond MAXPHYADDR (39) */
	setup(NULL);
	pdpt[1] = 0x2001 | (1ull << 45);
	protected_mode_guest(0x00000011, CR4_PAE, 0);
	regs.rax = 0x80000031;
	cr_exit(qual(0, CR_ACCESS_MOV_TO, 0, 0));
	assert_gp(0x9000);
	exit_guest_read = saved;
}

static void test_lmsw_sets_pe_cannot_clear_it(void **state)
{
	(void)state;
	protected_mode_guest(0x60000010, 0, 0);  /* real mode, as after SIPI */
	vm_set(VMCS_GUEST_CS_AR, 0x9b);
	cr_exit(qual(0, CR_ACCESS_LMSW, 0, 0x0001));
	assert_done(0x9000);
	assert_int_equal(vm_get(VMCS_CR0_READ_SHADOW), 0x60000011);

	/* LMSW 0 with PE set: MP/EM/TS cleared, PE stays */
	vm_set(VMCS_CR0_READ_SHADOW, 0x6000001f);
	vm_set(VMCS_GUEST_CR0, 0x6000003f);
	cr_exit(qual(0, CR_ACCESS_LMSW, 0, 0x0000));
	assert_int_equal(vm_get(VMCS_CR0_READ_SHADOW), 0x60000011);
}

static void test_clts(void **state)
{
	(void)state;
	vm_set(VMCS_GUEST_CR0, CR0_LINUX | CR0_TS);
	vm_set(VMCS_CR0_READ_SHADOW, CR0_LINUX | CR0_TS);
	cr_exit(qual(0, CR_ACCESS_CLTS, 0, 0));
	assert_done(GUEST_RIP);
	assert_int_equal(vm_get(VMCS_GUEST_CR0), CR0_LINUX);
	assert_int_equal(vm_get(VMCS_CR0_READ_SHADOW), CR0_LINUX);
}

/* --- CR3, CR8 ---------------------------------------------------------------------- */

static void test_cr3_moves(void **state)
{
	(void)state;
	regs.r13 = 0x1234;
	cr_exit(qual(3, CR_ACCESS_MOV_FROM, 13, 0));
	assert_done(GUEST_RIP);
	assert_int_equal(regs.r13, CR3_LINUX);

	regs.rdx = 0x7000;
	cr_exit(qual(3, CR_ACCESS_MOV_TO, 2, 0));
	assert_int_equal(vm_get(VMCS_GUEST_CR3), 0x7000);

	/* bits above MAXPHYADDR in IA-32e mode */
	setup(NULL);
	regs.rdx = 1ull << 50;
	cr_exit(qual(3, CR_ACCESS_MOV_TO, 2, 0));
	assert_gp(GUEST_RIP);

	/* with PCIDs, bit 63 (no flush) is not stored */
	setup(NULL);
	vm_set(VMCS_GUEST_CR4, CR4_LINUX | CR4_PCIDE | CR4_VMXE);
	vm_set(VMCS_CR4_READ_SHADOW, CR4_LINUX | CR4_PCIDE);
	regs.rdx = (1ull << 63) | 0x7003;
	cr_exit(qual(3, CR_ACCESS_MOV_TO, 2, 0));
	assert_done(GUEST_RIP);
	assert_int_equal(vm_get(VMCS_GUEST_CR3), 0x7003);
}

static void test_cr8_is_unexpected(void **state)
{
	(void)state;
	assert_int_equal(cr_exit(qual(8, CR_ACCESS_MOV_TO, 0, 0)), EXIT_STOP_CPU);
	assert_int_equal(cr_exit(qual(0, CR_ACCESS_MOV_FROM, 0, 0)), EXIT_STOP_CPU);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_qualification_decoders, setup),
		cmocka_unit_test_setup(test_cr4_write_keeps_vmxe_in_real_cr4_only, setup),
		cmocka_unit_test_setup(test_cr4_write_applies_fixed_bits, setup),
		cmocka_unit_test_setup(test_cr4_set_vmxe_gp, setup),
		cmocka_unit_test_setup(test_cr4_from_rsp_reads_vmcs, setup),
		cmocka_unit_test_setup(test_cr4_reserved_bits_gp, setup),
		cmocka_unit_test_setup(test_cr4_long_mode_rules, setup),
		cmocka_unit_test_setup(test_cr0_ne_owned_by_host, setup),
		cmocka_unit_test_setup(test_cr0_invalid_combinations_gp, setup),
		cmocka_unit_test_setup(test_cr0_operand_is_32bit_outside_64bit_mode, setup),
		cmocka_unit_test_setup(test_cr0_activates_ia32e_mode, setup),
		cmocka_unit_test_setup(test_cr0_pae_paging_loads_pdptes, setup),
		cmocka_unit_test_setup(test_lmsw_sets_pe_cannot_clear_it, setup),
		cmocka_unit_test_setup(test_clts, setup),
		cmocka_unit_test_setup(test_cr3_moves, setup),
		cmocka_unit_test_setup(test_cr8_is_unexpected, setup),
	};

	return cmocka_run_group_tests_name("test_exit_cr", tests, NULL, NULL);
}
