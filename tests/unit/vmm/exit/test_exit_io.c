/* SPDX-License-Identifier: MIT */
/*
 * test_exit_io.c - I/O exits at the PCI configuration ports
 * (vmm/exit/exit_io.c over vmm/exit/pci_hide.c): the CONFIG_ADDRESS latch, every
 * width and offset at 0xCFC-0xCFF for hidden and visible functions, the
 * enable bit, the string forms, and the I/O bitmaps; the ACPI PM1 control
 * ports (learned from fake EFI/ACPI tables, armed in the bitmaps, an
 * SLP_EN write calling the guest_sleep hook before it goes out).
 *
 * The "hardware" behind the fake's ports is a small chipset model: its
 * own CONFIG_ADDRESS is the last dword OUT to 0xCF8 in the fake's log,
 * and its configuration space answers vendor/device IDs for two
 * functions, 00:00.0 (8086:1237) and 00:03.0 (8086:100e).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "acpi_fake.h"
#include "hw_fake.h"
#include "vmm/exit/exit.h"
#include "vmm/exit/exit_io.h"
#include "vmm/exit/hooks.h"
#include "vmm/lib/acpi.h"
#include "vmm/lib/log.h"
#include "vmm/exit/pci_hide.h"

#define RIP0 0x7000ull
#define NIC  0x80001800u    /* enable, 00:03.0, register 0 */
#define HOST 0x80000000u    /* enable, 00:00.0, register 0 */
#define ORDINARY_IO 0x5a5a5a5au   /* what the ports read with enable clear */

static struct per_cpu cpu;
static struct guest_regs regs;

static uint32_t hw_latch(void)
{
	for (size_t back = 0;; back++) {
		const struct hw_fake_io *o = hw_fake_io_out_log(back);

		if (!o)
			return 0;
		if (o->port == 0xcf8 && o->width == 4)
			return o->value;
	}
}

static uint32_t config_dword(uint32_t addr)
{
	uint32_t bdf = addr & 0x00ffff00u, reg = addr & 0xfc;

	if (bdf == 0x000000 && reg == 0)
		return 0x12378086u;
	if (bdf == 0x001800 && reg == 0)
		return 0x100e8086u;
	if (bdf == 0x001800 && reg == 4)
		return 0x02300007u;
	return 0xffffffffu;      /* absent function or register: all ones */
}

static uint32_t chipset_in(uint16_t port, int width, void *ctx)
{
	uint32_t latch = hw_latch();

	(void)ctx;
	if (port == 0xcf8 && width == 4)
		return latch;
	if (port >= 0xcfc && port <= 0xcff) {
		if (!(latch & 0x80000000u))
			return ORDINARY_IO;
		return config_dword(latch) >> (8 * (port & 3));
	}
	if (port == 0xcf9)
		return 0x00;     /* reset control register */
	return 0xffffffffu;
}

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	hw_fake_set_io_in(chipset_in, NULL);
	memset(&cpu, 0, sizeof(cpu));
	memset(&regs, 0, sizeof(regs));
	cpu.index = 0;
	pci_hide_reset();
	assert_int_equal(pci_hide_add(0, 3, 0), 0);
	return 0;
}

/* One I/O exit: IN or OUT (string and REP as given), instruction length 1. */
static enum exit_action io(uint16_t port, unsigned size, bool in, bool string, bool rep,
			   uint64_t rax)
{
	uint64_t q = (uint64_t)(size - 1) | (in ? 1u << 3 : 0) | (string ? 1u << 4 : 0) |
		     (rep ? 1u << 5 : 0) | ((uint64_t)port << 16);

	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_IO_INSTRUCTION);
	hw_fake_vmcs_set(VMCS_EXIT_QUALIFICATION, q);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, string ? 2 : 1);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, RIP0);
	hw_fake_vmcs_set(VMCS_ENTRY_INTR_INFO, 0);
	regs.rax = rax;
	return vmx_exit_dispatch(&cpu, &regs);
}

static void out32(uint16_t port, uint32_t v)
{
	assert_int_equal(io(port, 4, false, false, false, v), EXIT_RESUME);
}

/* IN of size bytes at port with RAX preset to all ones: the new RAX. */
static uint64_t in_rax(uint16_t port, unsigned size)
{
	assert_int_equal(io(port, size, true, false, false, ~0ull), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), RIP0 + 1);
	return regs.rax;
}

static void test_qualification_decoders(void **state)
{
	/* SDM 3C Table 28-5: "in dx, eax" and "out 0x80, al" */
	uint64_t in_dx_eax = 3 | (1u << 3) | (0xcfcull << 16);
	uint64_t rep_outsb_imm = 0 | (1u << 4) | (1u << 5) | (1u << 6) | (0x80ull << 16);

	(void)state;
	assert_int_equal(io_qual_size(in_dx_eax), 4);
	assert_true(io_qual_in(in_dx_eax));
	assert_false(io_qual_string(in_dx_eax));
	assert_false(io_qual_imm(in_dx_eax));
	assert_int_equal(io_qual_port(in_dx_eax), 0xcfc);
	assert_int_equal(io_qual_size(rep_outsb_imm), 1);
	assert_false(io_qual_in(rep_outsb_imm));
	assert_true(io_qual_string(rep_outsb_imm));
	assert_true(io_qual_rep(rep_outsb_imm));
	assert_true(io_qual_imm(rep_outsb_imm));
	assert_int_equal(io_qual_port(rep_outsb_imm), 0x80);
}

static void test_bitmaps_select_only_the_config_ports(void **state)
{
	static uint8_t a[4096], b[4096];
	unsigned set = 0;

	(void)state;
	memset(a, 0xaa, sizeof(a));
	memset(b, 0xaa, sizeof(b));
	io_bitmap_build(a, b);
	for (uint32_t port = 0; port <= 0xffff; port++)
		if (io_bitmap_test(a, b, (uint16_t)port))
			set++;
	assert_int_equal(set, 8);
	for (uint16_t port = 0xcf8; port <= 0xcff; port++)
		assert_true(io_bitmap_test(a, b, port));
	assert_false(io_bitmap_test(a, b, 0xcf7));
	assert_false(io_bitmap_test(a, b, 0xd00));
	/* SDM 3C 25.6.4: bitmap A is ports 0-0x7fff, one bit each, LSB first */
	assert_int_equal(a[0xcf8 / 8], 0xff);
	for (size_t i = 0; i < sizeof(b); i++)
		assert_int_equal(b[i], 0);
}

static void test_latch_write_is_kept_and_forwarded(void **state)
{
	(void)state;
	out32(0xcf8, NIC | 0x43);     /* bits 1:0 are read-only 0 */
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), RIP0 + 1);
	assert_int_equal(pci_cfg_latch(), NIC | 0x40);
	/* the hardware got the write, so its own latch is coherent */
	assert_int_equal(hw_fake_io_out_log(0)->port, 0xcf8);
	assert_int_equal(hw_fake_io_out_log(0)->width, 4);
	assert_int_equal(hw_fake_io_out_log(0)->value, NIC | 0x43);
	/* a dword read returns the latch (zero-extended into RAX) without asking the hardware */
	assert_int_equal(in_rax(0xcf8, 4), NIC | 0x40);
	assert_int_equal(hw_fake_io_in_count, 0);
}

static void test_hidden_function_reads_all_ones_at_every_width_and_offset(void **state)
{
	(void)state;
	out32(0xcf8, NIC);
	for (uint16_t port = 0xcfc; port <= 0xcff; port++)
		assert_int_equal(in_rax(port, 1), ~0ull);        /* AL = 0xff, rest kept */
	for (uint16_t port = 0xcfc; port <= 0xcfe; port++)
		assert_int_equal(in_rax(port, 2), ~0ull);
	assert_int_equal(in_rax(0xcfc, 4), 0xffffffffull); /* EAX zero-extends */
	/* with a clean RAX the width shows */
	assert_int_equal(io(0xcfe, 1, true, false, false, 0x1234000000000000ull), EXIT_RESUME);
	assert_int_equal(regs.rax, 0x12340000000000ffull);
	assert_int_equal(io(0xcfc, 2, true, false, false, 0), EXIT_RESUME);
	assert_int_equal(regs.rax, 0xffff);
	/* every register of the function, not only the IDs */
	out32(0xcf8, NIC | 0x04);
	assert_int_equal(in_rax(0xcfc, 4), 0xffffffffull);
	assert_int_equal(hw_fake_io_in_count, 0);  /* nothing reached the device */
	assert_int_equal(cpu.stats.pci_hidden_reads, 4 + 3 + 1 + 2 + 1);
	assert_int_equal(cpu.stats.by_reason[EXIT_REASON_IO_INSTRUCTION], 4 + 3 + 1 + 2 + 1 + 2);
}

static void test_visible_function_reads_the_hardware(void **state)
{
	(void)state;
	pci_hide_reset();             /* nothing hidden: 00:03.0 shows */
	out32(0xcf8, NIC);
	assert_int_equal(in_rax(0xcfc, 4), 0x100e8086u);
	assert_int_equal(in_rax(0xcfc, 2), 0xffffffffffff8086ull);
	assert_int_equal(in_rax(0xcfe, 2), 0xffffffffffff100eull);
	assert_int_equal(in_rax(0xcfd, 1), 0xffffffffffffff80ull);
	assert_int_equal(in_rax(0xcff, 1), 0xffffffffffffff10ull);
	assert_int_equal(cpu.stats.pci_hidden_reads, 0);

	/* with 00:03.0 hidden, 00:00.0 still answers */
	assert_int_equal(pci_hide_add(0, 3, 0), 0);
	out32(0xcf8, HOST);
	assert_int_equal(in_rax(0xcfc, 4), 0x12378086u);
	assert_int_equal(in_rax(0xcfe, 2), 0xffffffffffff1237ull);
	out32(0xcf8, NIC);
	assert_int_equal(in_rax(0xcfc, 4), 0xffffffffu);
}

static void test_enable_bit_clear_is_ordinary_io(void **state)
{
	(void)state;
	/* the latch names the hidden function, but without the enable bit
	 * 0xCFC-0xCFF are ordinary I/O ports (PCI 3.0 3.2.2.3.2) */
	out32(0xcf8, NIC & ~PCI_CA_ENABLE);
	assert_int_equal(in_rax(0xcfc, 4), ORDINARY_IO);
	assert_int_equal(in_rax(0xcfd, 1), 0xffffffffffffff5aull);
	assert_int_equal(io(0xcfc, 4, false, false, false, 0x11223344), EXIT_RESUME);
	assert_int_equal(hw_fake_io_out_log(0)->port, 0xcfc);
	assert_int_equal(hw_fake_io_out_log(0)->value, 0x11223344);
	assert_int_equal(cpu.stats.pci_hidden_reads, 0);
	assert_int_equal(cpu.stats.pci_dropped_writes, 0);
}

static void test_writes_to_hidden_dropped_visible_forwarded(void **state)
{
	uint64_t outs;

	(void)state;
	out32(0xcf8, NIC | 0x04);
	outs = hw_fake_io_out_count;
	assert_int_equal(io(0xcfc, 2, false, false, false, 0x0007), EXIT_RESUME);  /* COMMAND */
	assert_int_equal(io(0xcfd, 1, false, false, false, 0x01), EXIT_RESUME);
	assert_int_equal(io(0xcfc, 4, false, false, false, 0xffffffff), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), RIP0 + 1);
	assert_int_equal(hw_fake_io_out_count, outs);   /* nothing reached the bus */
	assert_int_equal(cpu.stats.pci_dropped_writes, 3);

	/* a visible function: the write goes out with its width and value */
	out32(0xcf8, HOST | 0x04);
	assert_int_equal(io(0xcfe, 2, false, false, false, 0xabcd1234), EXIT_RESUME);
	assert_int_equal(hw_fake_io_out_log(0)->port, 0xcfe);
	assert_int_equal(hw_fake_io_out_log(0)->width, 2);
	assert_int_equal(hw_fake_io_out_log(0)->value, 0x1234);
	assert_int_equal(io(0xcff, 1, false, false, false, 0x77), EXIT_RESUME);
	assert_int_equal(hw_fake_io_out_log(0)->port, 0xcff);
	assert_int_equal(hw_fake_io_out_log(0)->width, 1);
	assert_int_equal(hw_fake_io_out_log(0)->value, 0x77);
	assert_int_equal(cpu.stats.pci_dropped_writes, 3);
}

static void test_byte_and_word_at_cf8_are_not_the_latch(void **state)
{
	(void)state;
	out32(0xcf8, NIC);
	/* the reset control register: a byte at 0xCF9 goes to the hardware */
	assert_int_equal(io(0xcf9, 1, false, false, false, 0x02), EXIT_RESUME);
	assert_int_equal(hw_fake_io_out_log(0)->port, 0xcf9);
	assert_int_equal(hw_fake_io_out_log(0)->value, 0x02);
	assert_int_equal(pci_cfg_latch(), NIC);
	assert_int_equal(in_rax(0xcf9, 1), 0xffffffffffffff00ull);
	assert_int_equal(io(0xcf8, 2, false, false, false, 0x1234), EXIT_RESUME);
	assert_int_equal(pci_cfg_latch(), NIC);
}

static void test_own_accesses_restore_the_guest_latch(void **state)
{
	(void)state;
	pci_hide_reset();
	out32(0xcf8, NIC);
	/* tracevisor reads 00:00.0 in VMX root between the guest's two steps */
	assert_int_equal(pci_cfg_read32(0, 0, 0, 0), 0x12378086u);
	assert_int_equal(hw_latch(), HOST);
	/* the guest's data access gets its own function, not ours */
	assert_int_equal(in_rax(0xcfc, 4), 0x100e8086u);
	assert_int_equal(hw_latch(), NIC);
	/* and the latch it reads back is its own */
	assert_int_equal(in_rax(0xcf8, 4), NIC);
}

static void test_latch_starts_from_the_hardware(void **state)
{
	(void)state;
	/* the firmware left 00:00.0 register 0x40 latched */
	pci_cfg_latch_init(HOST | 0x40);
	assert_int_equal(in_rax(0xcf8, 4), HOST | 0x40);
	assert_int_equal(hw_fake_io_out_count, 0);   /* nothing to restore */
}

static void test_string_forms_are_refused_with_gp(void **state)
{
	static const struct { bool in, rep; } cases[] = {
		{ true, false }, { false, false }, { true, true }, { false, true },
	};

	(void)state;
	out32(0xcf8, HOST);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t outs = hw_fake_io_out_count, ins = hw_fake_io_in_count;

		hw_fake_vmcs_set(VMCS_GUEST_CR0, CR0_PE);
		assert_int_equal(io(0xcfc, 4, cases[i].in, true, cases[i].rep, 0), EXIT_RESUME);
		/* #GP(0) injected on the instruction, which does not retire */
		assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_INTR_INFO),
				 intr_info_hw_exception(VEC_GP, true));
		assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_EXCEPTION_ERROR_CODE), 0);
		assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), RIP0);
		assert_int_equal(hw_fake_io_out_count, outs);
		assert_int_equal(hw_fake_io_in_count, ins);
	}
	assert_int_equal(cpu.stats.io_string_refused, 4);
	assert_int_equal(cpu.stats.injected_gp, 4);
}

static void test_undefined_size_stops(void **state)
{
	(void)state;
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_IO_INSTRUCTION);
	hw_fake_vmcs_set(VMCS_EXIT_QUALIFICATION, 2 | (0xcfcull << 16));  /* "3 bytes" */
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_STOP_CPU);
}

/* --- the ACPI PM1 control ports ------------------------------------------ */

#define PM1A 0xb004u
#define PM1B 0xb104u

static uint8_t bm[2][4096];
static struct {
	unsigned calls;
	uint16_t port;
	uint32_t value;
	uint64_t outs_before;      /* port writes done when the hook ran */
} slept;

static void rec_sleep(struct per_cpu *c, uint16_t port, uint32_t value)
{
	assert_ptr_equal(c, &cpu);
	slept.calls++;
	slept.port = port;
	slept.value = value;
	slept.outs_before = hw_fake_io_out_count;
}

static const struct exit_hooks sleep_hooks = { .guest_sleep = rec_sleep };

static int setup_sleep(void **state)
{
	setup(state);
	memset(&slept, 0, sizeof(slept));
	memset(bm, 0xaa, sizeof(bm));
	io_bitmap_build(bm[0], bm[1]);
	io_sleep_init(bm[0], bm[1], ACPI_FAKE_EFI_ST, acpi_fake_read, NULL);
	exit_hooks_set(&sleep_hooks);
	return 0;
}

static int teardown_sleep(void **state)
{
	(void)state;
	exit_hooks_set(NULL);
	io_sleep_init(NULL, NULL, 0, NULL, NULL);
	return 0;
}

static void test_bitmaps_hold_the_pm1_ports(void **state)
{
	uint16_t ports[2];
	unsigned set = 0;

	(void)state;
	assert_int_equal(io_sleep_arm(PM1A, PM1B), 2);
	for (uint32_t port = 0; port <= 0xffff; port++)
		if (io_bitmap_test(bm[0], bm[1], (uint16_t)port))
			set++;
	assert_int_equal(set, 8 + 2 + 2);     /* 0xCF8-0xCFF and both bytes of each register */
	assert_true(io_bitmap_test(bm[0], bm[1], PM1A));
	assert_true(io_bitmap_test(bm[0], bm[1], PM1A + 1));
	assert_false(io_bitmap_test(bm[0], bm[1], PM1A - 4));   /* PM1a_EVT: no */
	assert_false(io_bitmap_test(bm[0], bm[1], PM1A + 2));
	assert_true(io_bitmap_test(bm[0], bm[1], PM1B + 1));
	/* 0xB004 is in bitmap B (ports 0x8000-0xFFFF), bit 0x3004 */
	assert_int_equal(bm[1][0x3004 / 8], 0x30);
	io_sleep_ports(ports);
	assert_int_equal(ports[0], PM1A);
	assert_int_equal(ports[1], PM1B);
	/* port 0 is "none"; without bitmaps nothing is armed */
	assert_int_equal(io_sleep_arm(0, 0), 0);
	io_sleep_init(NULL, NULL, 0, NULL, NULL);
	assert_int_equal(io_sleep_arm(PM1A, 0), -1);
}

static void test_pm1_port_learned_from_the_efi_tables(void **state)
{
	uint16_t ports[2];

	(void)state;
	/* the firmware published nothing yet: nothing armed */
	acpi_fake_build(PM1A, 0, NULL, NULL);
	acpi_fake_mem[ACPI_FAKE_CONFIG + 24] ^= 0xff;
	assert_int_equal(io_sleep_learn("boot"), ACPI_ERR_RSDP);
	io_sleep_ports(ports);
	assert_int_equal(ports[0], 0);
	assert_false(io_bitmap_test(bm[0], bm[1], PM1A));
	/* the loader installed them (ExitBootServices) */
	acpi_fake_mem[ACPI_FAKE_CONFIG + 24] ^= 0xff;
	assert_int_equal(io_sleep_learn("ExitBootServices"), 1);
	io_sleep_ports(ports);
	assert_int_equal(ports[0], PM1A);
	assert_int_equal(ports[1], 0);
	assert_true(io_bitmap_test(bm[0], bm[1], PM1A + 1));
}

static void test_slp_en_write_calls_the_hook_then_the_port(void **state)
{
	(void)state;
	assert_int_equal(io_sleep_arm(PM1A, 0), 1);
	/* Linux's acpi_hw_legacy_sleep: SLP_TYP first, then SLP_TYP | SLP_EN */
	assert_int_equal(io(PM1A, 2, false, false, false, 0x1401), EXIT_RESUME);  /* S5 type 5, SCI_EN */
	assert_int_equal(slept.calls, 0);
	assert_int_equal(hw_fake_io_out_log(0)->port, PM1A);
	assert_int_equal(hw_fake_io_out_log(0)->width, 2);
	assert_int_equal(hw_fake_io_out_log(0)->value, 0x1401);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), RIP0 + 1);
	assert_int_equal(io(PM1A, 2, false, false, false, 0xffff00003401ull), EXIT_RESUME);
	assert_int_equal(slept.calls, 1);
	assert_int_equal(slept.port, PM1A);
	assert_int_equal(slept.value, 0x00003401);
	/* the hook ran before the write, and the write went out as asked */
	assert_int_equal(slept.outs_before, hw_fake_io_out_count - 1);
	assert_int_equal(hw_fake_io_out_log(0)->port, PM1A);
	assert_int_equal(hw_fake_io_out_log(0)->width, 2);
	assert_int_equal(hw_fake_io_out_log(0)->value, 0x3401);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), RIP0 + 1);
	/* a byte write to the high half (SLP_EN is its bit 5) */
	assert_int_equal(io(PM1A + 1, 1, false, false, false, 0x34), EXIT_RESUME);
	assert_int_equal(slept.calls, 2);
	assert_int_equal(hw_fake_io_out_log(0)->port, PM1A + 1);
	assert_int_equal(hw_fake_io_out_log(0)->width, 1);
	assert_int_equal(hw_fake_io_out_log(0)->value, 0x34);
	/* a dword write at PM1A - 3 reaching the register's low byte only: bit 5 there is not SLP_EN */
	assert_int_equal(io(PM1A - 3, 4, false, false, false, 0x20000000u), EXIT_RESUME);
	assert_int_equal(slept.calls, 2);
	/* ... and one at PM1A - 1 whose last byte is the high half, SLP_EN set */
	assert_int_equal(io(PM1A - 1, 4, false, false, false, 0x00200000u), EXIT_RESUME);
	assert_int_equal(slept.calls, 3);
	assert_int_equal(hw_fake_io_out_log(0)->width, 4);
	assert_int_equal(hw_fake_io_out_log(0)->value, 0x00200000u);
	/* nothing to do with PCI */
	assert_int_equal(cpu.stats.pci_dropped_writes, 0);
}

static uint32_t pm_in(uint16_t port, int width, void *ctx)
{
	(void)ctx;
	return port == PM1A ? 0x00000001u : 0xffffffffu;   /* SCI_EN */
}

static void test_other_accesses_pass_through_without_the_hook(void **state)
{
	(void)state;
	assert_int_equal(io_sleep_arm(PM1A, PM1B), 2);
	hw_fake_set_io_in(pm_in, NULL);
	/* reads come from the port */
	assert_int_equal(io(PM1A, 2, true, false, false, ~0ull), EXIT_RESUME);
	assert_int_equal(regs.rax, 0xffffffffffff0001ull);
	assert_int_equal(io(PM1A, 4, true, false, false, ~0ull), EXIT_RESUME);
	assert_int_equal(regs.rax, 0x00000001ull);
	assert_int_equal(hw_fake_io_in_count, 2);
	/* writes without SLP_EN go out, no hook */
	assert_int_equal(io(PM1B, 2, false, false, false, 0x1c01), EXIT_RESUME);
	assert_int_equal(io(PM1A, 1, false, false, false, 0xff), EXIT_RESUME);   /* low byte only */
	assert_int_equal(slept.calls, 0);
	assert_int_equal(hw_fake_io_out_log(1)->port, PM1B);
	assert_int_equal(hw_fake_io_out_log(1)->value, 0x1c01);
	assert_int_equal(hw_fake_io_out_log(0)->port, PM1A);
	assert_int_equal(hw_fake_io_out_log(0)->value, 0xff);
	/* PM1b with SLP_EN: the hook, with that port */
	assert_int_equal(io(PM1B, 2, false, false, false, 0x3c01), EXIT_RESUME);
	assert_int_equal(slept.calls, 1);
	assert_int_equal(slept.port, PM1B);
	/* with no hook registered the write still goes out */
	exit_hooks_set(NULL);
	assert_int_equal(io(PM1A, 2, false, false, false, 0x3401), EXIT_RESUME);
	assert_int_equal(slept.calls, 1);
	assert_int_equal(hw_fake_io_out_log(0)->value, 0x3401);
	/* string forms: refused like the PCI ports' */
	hw_fake_vmcs_set(VMCS_GUEST_CR0, CR0_PE);
	assert_int_equal(io(PM1A, 2, false, true, true, 0x3401), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_INTR_INFO), intr_info_hw_exception(VEC_GP, true));
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), RIP0);
	assert_int_equal(cpu.stats.io_string_refused, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_qualification_decoders, setup),
		cmocka_unit_test_setup(test_bitmaps_select_only_the_config_ports, setup),
		cmocka_unit_test_setup(test_latch_write_is_kept_and_forwarded, setup),
		cmocka_unit_test_setup(test_hidden_function_reads_all_ones_at_every_width_and_offset, setup),
		cmocka_unit_test_setup(test_visible_function_reads_the_hardware, setup),
		cmocka_unit_test_setup(test_enable_bit_clear_is_ordinary_io, setup),
		cmocka_unit_test_setup(test_writes_to_hidden_dropped_visible_forwarded, setup),
		cmocka_unit_test_setup(test_byte_and_word_at_cf8_are_not_the_latch, setup),
		cmocka_unit_test_setup(test_own_accesses_restore_the_guest_latch, setup),
		cmocka_unit_test_setup(test_latch_starts_from_the_hardware, setup),
		cmocka_unit_test_setup(test_string_forms_are_refused_with_gp, setup),
		cmocka_unit_test_setup(test_undefined_size_stops, setup),
		cmocka_unit_test_setup_teardown(test_bitmaps_hold_the_pm1_ports, setup_sleep, teardown_sleep),
		cmocka_unit_test_setup_teardown(test_pm1_port_learned_from_the_efi_tables, setup_sleep, teardown_sleep),
		cmocka_unit_test_setup_teardown(test_slp_en_write_calls_the_hook_then_the_port, setup_sleep, teardown_sleep),
		cmocka_unit_test_setup_teardown(test_other_accesses_pass_through_without_the_hook, setup_sleep, teardown_sleep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
