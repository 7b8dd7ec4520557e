/* SPDX-License-Identifier: MIT */
/*
 * test_pci_hide.c - the hidden-function list (vmm/exit/pci_hide.c), the ECAM
 * side: the MCFG walk (boot/acpi.c), the read-only 0xFF page in EPT and
 * the dropped writes (vmm/exit/exit_ept.c) with RIP advanced by the decoded
 * instruction length; the I/O-bitmap control (vmm/vmx/vmx.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "boot/acpi.h"
#include "hw_fake.h"
#include "vmm/vmx/ept.h"
#include "vmm/exit/exit.h"
#include "vmm/hv.h"
#include "vmm/lib/log.h"
#include "vmm/vmx/mtrr.h"
#include "vmm/lib/page_pool.h"
#include "vmm/exit/pci_hide.h"
#include "vmm/vmx/vmx_caps.h"

#define GiB (1ull << 30)
#define POOL_PA 0x70000000ull
#define POOL_PAGES 64
#define ECAM_BASE 0xe0000000ull
#define FF_PAGE 0x7ee20000ull

/* --- the list and its text form ------------------------------------------- */

static int reset(void **state)
{
	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	pci_hide_reset();
	return 0;
}

static void test_add_validates_and_dedups(void **state)
{
	(void)state;
	assert_int_equal(pci_hide_add(0, 3, 0), 0);
	assert_int_equal(pci_hide_add(0, 3, 0), 0);
	assert_int_equal(pci_hide_get()->n, 1);
	assert_true(pci_hide_is_hidden(0, 3, 0));
	assert_false(pci_hide_is_hidden(0, 3, 1));
	assert_false(pci_hide_is_hidden(1, 3, 0));
	assert_int_equal(pci_hide_add(256, 0, 0), PCI_HIDE_ERR_INVAL);
	assert_int_equal(pci_hide_add(0, 32, 0), PCI_HIDE_ERR_INVAL);
	assert_int_equal(pci_hide_add(0, 0, 8), PCI_HIDE_ERR_INVAL);
	assert_int_equal(pci_hide_add(255, 31, 7), 0);
	for (uint32_t i = 2; i < PCI_HIDE_MAX; i++)
		assert_int_equal(pci_hide_add(1, i, 0), 0);
	assert_int_equal(pci_hide_get()->n, PCI_HIDE_MAX);
	assert_int_equal(pci_hide_add(2, 0, 0), PCI_HIDE_ERR_FULL);
	assert_int_equal(pci_hide_add(0, 3, 0), 0);   /* already there: fine */
}

static void test_init_replaces_the_list(void **state)
{
	struct pci_hide_list l = { .n = 1, .f = { { 0x12, 0x1f, 7 } } };
	struct pci_ecam e = { .base = ECAM_BASE, .start_bus = 0, .end_bus = 0x3f };

	(void)state;
	assert_int_equal(pci_hide_add(0, 3, 0), 0);
	pci_hide_init(&l, &e);
	assert_false(pci_hide_is_hidden(0, 3, 0));
	assert_true(pci_hide_is_hidden(0x12, 0x1f, 7));
	assert_int_equal(pci_hide_ecam()->base, ECAM_BASE);
	pci_hide_init(NULL, NULL);
	assert_int_equal(pci_hide_get()->n, 0);
	assert_int_equal(pci_hide_ecam()->base, 0);
}

static void test_bdf_parse(void **state)
{
	struct pci_bdf b;

	(void)state;
	assert_int_equal(pci_bdf_parse("00:03.0", &b), 0);
	assert_int_equal(b.bus, 0);
	assert_int_equal(b.dev, 3);
	assert_int_equal(b.fn, 0);
	assert_int_equal(pci_bdf_parse("ff:1F.7", &b), 0);
	assert_int_equal(b.bus, 0xff);
	assert_int_equal(b.dev, 0x1f);
	assert_int_equal(b.fn, 7);
	assert_int_equal(pci_bdf_parse("0000:3a:00.1", &b), 0);
	assert_int_equal(b.bus, 0x3a);
	assert_int_equal(b.fn, 1);
	static const char *const bad[] = {
		"0:3.0", "00:20.0", "00:03.8", "00:03", "00-03.0", "00:03.0 ", "0001:00:03.0",
		"g0:03.0", "", "00:03.00",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(pci_bdf_parse(bad[i], &b), PCI_HIDE_ERR_INVAL);
	assert_int_equal(pci_bdf_parse(NULL, &b), PCI_HIDE_ERR_INVAL);
}

static void test_ecam_pages(void **state)
{
	struct pci_ecam e = { .base = ECAM_BASE, .start_bus = 1, .end_bus = 0x10 };
	uint64_t gpa;

	(void)state;
	/* PCIe 7.2.2: bus << 20 | device << 15 | function << 12 */
	assert_int_equal(pci_ecam_offset(0x12, 0x1f, 7), 0x12ull << 20 | 0x1full << 15 | 7ull << 12);
	assert_int_equal(pci_hide_add(2, 3, 1), 0);
	assert_int_equal(pci_hide_add(0, 3, 0), 0);     /* below start_bus */
	assert_int_equal(pci_hide_add(0x11, 0, 0), 0);  /* above end_bus */
	assert_false(pci_hide_ecam_page(0, &gpa));      /* no allocation yet */
	pci_hide_init(pci_hide_get(), &e);
	assert_true(pci_hide_ecam_page(0, &gpa));
	/* the base is bus 0's even with start_bus 1 (PCI Firmware 3.2 4.1.2) */
	assert_int_equal(gpa, ECAM_BASE + (2ull << 20) + (3ull << 15) + (1ull << 12));
	assert_false(pci_hide_ecam_page(1, &gpa));
	assert_false(pci_hide_ecam_page(2, &gpa));
	assert_false(pci_hide_ecam_page(3, &gpa));
	assert_true(pci_hide_ecam_hit(ECAM_BASE + 0x219000 + 0xffc));
	assert_false(pci_hide_ecam_hit(ECAM_BASE + 0x218000));   /* function 0 */
	assert_false(pci_hide_ecam_hit(ECAM_BASE + 0x21a000));   /* function 2 */
}

/* --- MCFG ------------------------------------------------------------------ */

static uint8_t acpi_mem[3][256] __attribute__((aligned(16)));

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static void fix_checksum(uint8_t *t, size_t len, size_t at)
{
	uint8_t s = 0;

	t[at] = 0;
	for (size_t i = 0; i < len; i++)
		s = (uint8_t)(s + t[i]);
	t[at] = (uint8_t)(0x100 - s);
}

static void sdt(uint8_t *t, const char *sig, uint32_t len)
{
	memcpy(t, sig, 4);
	put32(t + 4, len);
	t[8] = 1;
	memcpy(t + 10, "TVTEST", 6);
}

/* RSDP -> XSDT (a FACP-like table first, then MCFG) -> MCFG with n allocations. */
static const uint8_t *build_acpi(const uint64_t *bases, const uint16_t *segs, unsigned n)
{
	uint8_t *rsdp = acpi_mem[0], *xsdt = acpi_mem[1], *mcfg = acpi_mem[2];
	static uint8_t other[36];
	uint32_t mlen = 44 + 16 * n;

	memset(acpi_mem, 0, sizeof(acpi_mem));
	memset(other, 0, sizeof(other));
	sdt(other, "FACP", 36);
	fix_checksum(other, 36, 9);
	sdt(mcfg, "MCFG", mlen);
	for (unsigned i = 0; i < n; i++) {
		put64(mcfg + 44 + 16 * i, bases[i]);
		mcfg[44 + 16 * i + 8] = (uint8_t)segs[i];
		mcfg[44 + 16 * i + 10] = 0;     /* start bus */
		mcfg[44 + 16 * i + 11] = 0xff;  /* end bus */
	}
	fix_checksum(mcfg, mlen, 9);
	sdt(xsdt, "XSDT", 36 + 16);
	put64(xsdt + 36, (uint64_t)(uintptr_t)other);
	put64(xsdt + 44, (uint64_t)(uintptr_t)mcfg);
	fix_checksum(xsdt, 52, 9);
	memcpy(rsdp, "RSD PTR ", 8);
	rsdp[15] = 2;
	put32(rsdp + 20, 36);
	put64(rsdp + 24, (uint64_t)(uintptr_t)xsdt);
	fix_checksum(rsdp, 20, 8);
	fix_checksum(rsdp, 36, 32);
	return rsdp;
}

static void test_mcfg_segment0(void **state)
{
	const uint64_t bases[2] = { 0x1000000000ull, ECAM_BASE };
	const uint16_t segs[2] = { 1, 0 };
	struct pci_ecam e;

	(void)state;
	assert_int_equal(acpi_find_ecam(build_acpi(bases, segs, 2), &e), 0);
	assert_int_equal(e.base, ECAM_BASE);      /* segment 1's is skipped */
	assert_int_equal(e.segment, 0);
	assert_int_equal(e.start_bus, 0);
	assert_int_equal(e.end_bus, 0xff);
	/* only another segment: not found */
	assert_int_equal(acpi_find_ecam(build_acpi(bases, segs, 1), &e), ACPI_ERR_NOT_FOUND);
	assert_int_equal(e.base, 0);
}

static void test_mcfg_rejects_bad_tables(void **state)
{
	const uint64_t bases[1] = { ECAM_BASE };
	const uint16_t segs[1] = { 0 };
	struct pci_ecam e;
	uint8_t *rsdp;

	(void)state;
	assert_int_equal(acpi_find_ecam(NULL, &e), ACPI_ERR_ARG);
	rsdp = (uint8_t *)build_acpi(bases, segs, 1);
	rsdp[15] = 0;          /* ACPI 1.0: no XSDT */
	fix_checksum(rsdp, 20, 8);
	fix_checksum(rsdp, 36, 32);
	assert_int_equal(acpi_find_ecam(rsdp, &e), ACPI_ERR_RSDP);
	rsdp = (uint8_t *)build_acpi(bases, segs, 1);
	rsdp[9] ^= 1;          /* OEM ID changed: checksum wrong */
	assert_int_equal(acpi_find_ecam(rsdp, &e), ACPI_ERR_RSDP);
	build_acpi(bases, segs, 1);
	acpi_mem[2][44] ^= 0x10;   /* MCFG body changed: checksum wrong */
	assert_int_equal(acpi_find_ecam(acpi_mem[0], &e), ACPI_ERR_TABLE);
	build_acpi(bases, segs, 1);
	memcpy(acpi_mem[1], "RSDT", 4);
	assert_int_equal(acpi_find_ecam(acpi_mem[0], &e), ACPI_ERR_TABLE);
	/* no MCFG in the XSDT */
	build_acpi(bases, segs, 1);
	memcpy(acpi_mem[2], "SSDT", 4);
	assert_int_equal(acpi_find_ecam(acpi_mem[0], &e), ACPI_ERR_NOT_FOUND);
	assert_string_equal(acpi_strerror(ACPI_ERR_NOT_FOUND), "no MCFG allocation for PCI segment 0");
}

/* --- EPT: the 0xFF page and dropped writes ----------------------------------- */

static struct per_cpu cpu;
static struct guest_regs regs;
static void *pool_mem;
static struct page_pool pool;
static struct mtrr_state mtrr;
static struct ept ept;
static uint8_t guest_ram[0x10000];   /* guest-physical 0 .. 64 KiB */
static int (*saved_read)(uint64_t, void *, size_t);

static int fake_guest_read(uint64_t gpa, void *dst, size_t len)
{
	if (gpa > sizeof(guest_ram) || len > sizeof(guest_ram) - gpa)
		return -1;
	memcpy(dst, guest_ram + gpa, len);
	return 0;
}

static int setup_ept(void **state)
{
	struct ept_params p;
	struct hv_boot_info bi;
	struct pci_hide_list l = { .n = 1, .f = { { 0, 3, 0 } } };

	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	memset(&cpu, 0, sizeof(cpu));
	memset(&regs, 0, sizeof(regs));
	assert_int_equal(posix_memalign(&pool_mem, 4096, POOL_PAGES * 4096), 0);
	assert_int_equal(page_pool_init_at(&pool, pool_mem, POOL_PA, POOL_PAGES * 4096), 0);
	memset(&mtrr, 0, sizeof(mtrr));
	memset(&p, 0, sizeof(p));
	p.top = 4 * GiB;
	p.allow_1g = p.allow_2m = true;
	p.ept_vpid_cap = EPT_CAP_PWL4 | EPT_CAP_MEMTYPE_UC | EPT_CAP_MEMTYPE_WB |
			 EPT_CAP_PDE_2MB | EPT_CAP_PDPTE_1GB | EPT_CAP_INVEPT;
	p.mtrr = &mtrr;
	memset(&ept, 0, sizeof(ept));
	assert_int_equal(ept_build(&ept, &pool, &p), 0);
	memset(&bi, 0, sizeof(bi));
	bi.ept = &ept;
	bi.pool = &pool;
	bi.scratch_pa = 0x7ee10000ull;
	bi.pci_hide = l;
	bi.ecam.base = ECAM_BASE;
	bi.ecam.end_bus = 0xff;
	hv_init(&bi);
	log_clear_sinks();
	assert_int_equal(pci_hide_map_ecam(&ept, &pool, FF_PAGE), 1);
	memset(guest_ram, 0, sizeof(guest_ram));
	saved_read = exit_guest_read;
	exit_guest_read = fake_guest_read;
	return 0;
}

static int teardown_ept(void **state)
{
	(void)state;
	exit_guest_read = saved_read;
	free(pool_mem);
	return 0;
}

static void test_ecam_page_maps_read_only_onto_ff(void **state)
{
	struct ept_leaf l;

	(void)state;
	assert_int_equal(ept_lookup(&ept, ECAM_BASE + 0x18000 + 0x10, &l), 0);
	assert_int_equal(l.hpa, FF_PAGE + 0x10);
	assert_int_equal(l.rwx, EPT_R | EPT_X);
	assert_int_equal(l.memtype, MTRR_TYPE_UC);
	/* the neighbours are the real configuration space, read-write */
	assert_int_equal(ept_lookup(&ept, ECAM_BASE + 0x17000, &l), 0);
	assert_int_equal(l.hpa, ECAM_BASE + 0x17000);
	assert_int_equal(l.rwx, EPT_RWX);
	assert_int_equal(ept_lookup(&ept, ECAM_BASE + 0x19000, &l), 0);
	assert_int_equal(l.hpa, ECAM_BASE + 0x19000);
	assert_int_equal(l.rwx, EPT_RWX);
}

/* A write violation on gpa with the guest at rip. */
static enum exit_action write_violation(uint64_t gpa, uint64_t rip)
{
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_EPT_VIOLATION);
	hw_fake_vmcs_set(VMCS_EXIT_QUALIFICATION, 1u << 1);
	hw_fake_vmcs_set(VMCS_GUEST_PHYSICAL_ADDRESS, gpa);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, rip);
	/* an exit length that would be wrong: it is undefined for EPT violations */
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 1);
	return vmx_exit_dispatch(&cpu, &regs);
}

/* 64-bit guest, 4-level paging: PML4 at 0x1000, one 1-GiB identity page. */
static void long_mode_guest(void)
{
	uint64_t pml4e = 0x2000 | 3, pdpte = 0 | 3 | (1ull << 7);

	memcpy(guest_ram + 0x1000, &pml4e, 8);
	memcpy(guest_ram + 0x2000, &pdpte, 8);
	hw_fake_vmcs_set(VMCS_GUEST_CR0, CR0_PE | CR0_PG);
	hw_fake_vmcs_set(VMCS_GUEST_CR3, 0x1000);
	hw_fake_vmcs_set(VMCS_GUEST_CR4, 1u << 5);           /* PAE */
	hw_fake_vmcs_set(VMCS_GUEST_IA32_EFER, EFER_LME | EFER_LMA);
	hw_fake_vmcs_set(VMCS_ENTRY_CTLS, ENTRY_IA32E_MODE_GUEST);
	hw_fake_vmcs_set(VMCS_GUEST_CS_AR, 0xa09b);          /* L = 1 */
	hw_fake_vmcs_set(VMCS_GUEST_CS_BASE, 0);
}

static void test_ecam_write_dropped_rip_by_decoded_length(void **state)
{
	/* mov dword [rax+0x10], 0x12345678: c7 40 10 78 56 34 12 (7 bytes) */
	static const uint8_t movl[] = { 0xc7, 0x40, 0x10, 0x78, 0x56, 0x34, 0x12 };
	/* mov [rdx], ax with 66 and REX.B: 66 41 89 02 (4 bytes) */
	static const uint8_t movw[] = { 0x66, 0x41, 0x89, 0x02 };
	struct ept_leaf l;

	(void)state;
	long_mode_guest();
	memcpy(guest_ram + 0x5000, movl, sizeof(movl));
	memcpy(guest_ram + 0x5100, movw, sizeof(movw));
	assert_int_equal(write_violation(ECAM_BASE + 0x18010, 0x5000), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0x5007);
	assert_int_equal(write_violation(ECAM_BASE + 0x18004, 0x5100), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0x5104);
	assert_int_equal(cpu.stats.ecam_dropped_writes, 2);
	assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_INTR_INFO), 0);
	/* the page stays read-only on the 0xFF page: the next write faults too */
	assert_int_equal(ept_lookup(&ept, ECAM_BASE + 0x18000, &l), 0);
	assert_int_equal(l.hpa, FF_PAGE);
	assert_int_equal(l.rwx, EPT_R | EPT_X);
	assert_int_equal(cpu.stats.hidden_memory_accesses, 0);
}

static void test_ecam_write_from_real_mode_and_page_straddle(void **state)
{
	/* real mode, CS base 0x3000: mov [bx], eax = 66 89 07 (3 bytes) at IP 0x0ffe,
	 * linear 0x3ffe: the instruction straddles into the next page */
	static const uint8_t movd[] = { 0x66, 0x89, 0x07 };

	(void)state;
	hw_fake_vmcs_set(VMCS_GUEST_CR0, 0);
	hw_fake_vmcs_set(VMCS_ENTRY_CTLS, 0);
	hw_fake_vmcs_set(VMCS_GUEST_CS_BASE, 0x3000);
	hw_fake_vmcs_set(VMCS_GUEST_CS_AR, 0x93);
	memcpy(guest_ram + 0x3ffe, movd, sizeof(movd));
	assert_int_equal(write_violation(ECAM_BASE + 0x18000, 0x0ffe), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0x1001);
	assert_int_equal(cpu.stats.ecam_dropped_writes, 1);
}

static void test_ecam_write_undecodable_gets_gp(void **state)
{
	(void)state;
	long_mode_guest();
	guest_ram[0x6000] = 0xff;   /* FF /7: undefined */
	guest_ram[0x6001] = 0x3f;
	assert_int_equal(write_violation(ECAM_BASE + 0x18000, 0x6000), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0x6000);
	assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_INTR_INFO), intr_info_hw_exception(VEC_GP, true));
	assert_int_equal(cpu.stats.ecam_dropped_writes, 0);
	/* RIP outside readable guest memory: #GP too, never a skip */
	hw_fake_vmcs_set(VMCS_ENTRY_INTR_INFO, 0);
	assert_int_equal(write_violation(ECAM_BASE + 0x18000, 0x20000000), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0x20000000);
	assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_INTR_INFO), intr_info_hw_exception(VEC_GP, true));
}

static void test_ecam_write_to_a_visible_function_is_not_ours(void **state)
{
	struct ept_leaf l;

	(void)state;
	/* an ordinary violation path (here: above the map, identity UC) */
	long_mode_guest();
	assert_int_equal(write_violation(5 * GiB, 0x5000), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0x5000);   /* retried, not skipped */
	assert_int_equal(ept_lookup(&ept, 5 * GiB, &l), 0);
	assert_int_equal(l.hpa, 5 * GiB);
	assert_int_equal(cpu.stats.ecam_dropped_writes, 0);
}

/* --- the I/O-bitmap control ------------------------------------------------- */

static void test_io_bitmaps_only_when_something_is_hidden(void **state)
{
	char why[120];

	(void)state;
	memset(&cpu, 0, sizeof(cpu));
	cpu.caps.pin = 0xffffffff00000016ull;
	cpu.caps.proc = 0xffffffff0401e172ull;
	cpu.caps.proc2 = 0xffffffff00000000ull;
	cpu.caps.exit = 0xffffffff00036dffull;
	cpu.caps.entry = 0xffffffff000011ffull;
	assert_int_equal(vmx_compute_controls(&cpu, true, why, sizeof(why)), 0);
	assert_int_equal(cpu.proc & CPU_USE_IO_BITMAPS, 0);
	cpu.io_bitmap_a_pa = 0x30000;
	cpu.io_bitmap_b_pa = 0x31000;
	assert_int_equal(vmx_compute_controls(&cpu, true, why, sizeof(why)), 0);
	assert_int_equal(cpu.proc & CPU_USE_IO_BITMAPS, CPU_USE_IO_BITMAPS);
	assert_int_equal(cpu.proc & CPU_UNCONDITIONAL_IO_EXITING, 0);
	/* a CPU that cannot have them: refused, with the reason */
	cpu.caps.proc &= ~((uint64_t)CPU_USE_IO_BITMAPS << 32);
	assert_int_equal(vmx_compute_controls(&cpu, true, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "I/O bitmaps"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_add_validates_and_dedups, reset),
		cmocka_unit_test_setup(test_init_replaces_the_list, reset),
		cmocka_unit_test_setup(test_bdf_parse, reset),
		cmocka_unit_test_setup(test_ecam_pages, reset),
		cmocka_unit_test_setup(test_mcfg_segment0, reset),
		cmocka_unit_test_setup(test_mcfg_rejects_bad_tables, reset),
		cmocka_unit_test_setup_teardown(test_ecam_page_maps_read_only_onto_ff, setup_ept, teardown_ept),
		cmocka_unit_test_setup_teardown(test_ecam_write_dropped_rip_by_decoded_length, setup_ept, teardown_ept),
		cmocka_unit_test_setup_teardown(test_ecam_write_from_real_mode_and_page_straddle, setup_ept, teardown_ept),
		cmocka_unit_test_setup_teardown(test_ecam_write_undecodable_gets_gp, setup_ept, teardown_ept),
		cmocka_unit_test_setup_teardown(test_ecam_write_to_a_visible_function_is_not_ours, setup_ept, teardown_ept),
		cmocka_unit_test_setup(test_io_bitmaps_only_when_something_is_hidden, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
