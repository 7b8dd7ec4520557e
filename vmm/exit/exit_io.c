/* SPDX-License-Identifier: MIT */
/*
 * exit_io.c - I/O-instruction exits (reason 30).
 *
 * "Use I/O bitmaps" is on while some PCI function is hidden or a trace
 * source is set (boot/vmx_boot.c).  The bitmaps select the eight
 * configuration ports (only while something is hidden: pci_hide.c decides
 * what the guest sees through configuration mechanism #1) and the ACPI
 * PM1 control ports once known (io_sleep_*: a write with SLP_EN set is
 * the guest entering a sleep state, S5 being the power-off, and the
 * tracer closes its windows before the write goes out).  String forms are
 * refused rather than emulated: they would need the guest's segmentation,
 * paging and REP count for a way of reaching these registers no OS or
 * firmware uses (ACPICA and Linux write PM1_CNT with OUT).
 */
#include "vmm/exit/exit_io.h"

#include <string.h>

#include "vmm/exit/exit.h"
#include "vmm/exit/hooks.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/acpi.h"
#include "vmm/lib/log.h"
#include "vmm/exit/pci_hide.h"

#define LOG_FIRST 16

static uint64_t logged;

void io_bitmap_set_port(uint8_t a[4096], uint8_t b[4096], uint16_t port)
{
	uint8_t *m = port < 0x8000 ? a : b;
	uint32_t bit = port & 0x7fffu;

	/* Atomic: the late ports are set while other CPUs' exits read the bitmap. */
	__atomic_fetch_or(&m[bit / 8], (uint8_t)(1u << (bit % 8)), __ATOMIC_RELEASE);
}

void io_bitmap_build(uint8_t a[4096], uint8_t b[4096])
{
	memset(a, 0, 4096);
	memset(b, 0, 4096);
	for (uint32_t port = IO_EXIT_FIRST; port <= IO_EXIT_LAST; port++)
		io_bitmap_set_port(a, b, (uint16_t)port);
}

bool io_bitmap_test(const uint8_t a[4096], const uint8_t b[4096], uint16_t port)
{
	const uint8_t *m = port < 0x8000 ? a : b;
	uint32_t bit = port & 0x7fffu;

	return (m[bit / 8] >> (bit % 8)) & 1;
}

/* --- the ACPI PM1 control ports ---------------------------------------- */

static struct {
	uint8_t *a, *b;               /* the shared bitmaps (NULL: none) */
	uint64_t efi_st;              /* EFI system table, physical */
	gmem_read_phys_fn rd;
	void *rd_ctx;
	uint16_t port[2];             /* PM1a_CNT, PM1b_CNT; 0: none (atomic) */
} sl;

void io_sleep_init(uint8_t *a, uint8_t *b, uint64_t efi_st, gmem_read_phys_fn rd, void *rd_ctx)
{
	memset(&sl, 0, sizeof(sl));
	sl.a = a;
	sl.b = b;
	sl.efi_st = efi_st;
	sl.rd = rd;
	sl.rd_ctx = rd_ctx;
}

int io_sleep_arm(uint16_t pm1a, uint16_t pm1b)
{
	const uint16_t want[2] = { pm1a, pm1b };
	int n = 0;

	if (!sl.a || !sl.b)
		return -1;
	for (int i = 0; i < 2; i++) {
		uint16_t p = want[i];

		/* Port 0 is "none"; 0xffff would wrap (a register is 2 bytes). */
		if (!p || p == 0xffff)
			continue;
		/*
		 * Both bytes of the 16-bit register (SLP_EN is bit 5 of the
		 * second): an access exits when the bit of any byte it touches
		 * is set (SDM 3C 25.6.4).  Bits are only ever added while CPUs
		 * run; SDM 3C 25.11.4 asks that structures a VMCS points to be
		 * changed only while no CPU using them is in VMX non-root
		 * operation, so a CPU may not see the new bits at once (see
		 * docs/PCI-HIDE.md, "ACPI power-off").
		 */
		io_bitmap_set_port(sl.a, sl.b, p);
		io_bitmap_set_port(sl.a, sl.b, (uint16_t)(p + 1));
		__atomic_store_n(&sl.port[i], p, __ATOMIC_RELEASE);
		n++;
	}
	return n;
}

void io_sleep_ports(uint16_t out[2])
{
	out[0] = __atomic_load_n(&sl.port[0], __ATOMIC_ACQUIRE);
	out[1] = __atomic_load_n(&sl.port[1], __ATOMIC_ACQUIRE);
}

int io_sleep_learn(const char *when)
{
	struct acpi_pm1 pm;
	uint64_t rsdp = 0;
	int rc;

	if (!sl.a || !sl.rd || !sl.efi_st)
		return ACPI_ERR_ARG;
	rc = acpi_efi_rsdp(sl.rd, sl.rd_ctx, sl.efi_st, &rsdp);
	if (!rc)
		rc = acpi_find_pm1(sl.rd, sl.rd_ctx, rsdp, &pm);
	if (rc) {
		log_info("io: ACPI power-off not seen (at %s): %s%s", when,
			 rc == ACPI_ERR_NOT_FOUND ? "no FADT with a PM1 control port in I/O space: " : "",
			 acpi_err_text(rc));
		return rc;
	}
	if (pm.pm1a_not_io || pm.pm1b_not_io)
		log_warn("io: the FADT puts PM1%s_CNT outside I/O space: a power-off through it is not seen",
			 pm.pm1a_not_io ? "a" : "b");
	rc = io_sleep_arm(pm.pm1a_cnt, pm.pm1b_cnt);
	log_info("io: ACPI PM1a_CNT at port %#x, PM1b_CNT at %#x (FADT at %#llx), learned at %s: a write with SLP_EN exits",
		 pm.pm1a_cnt, pm.pm1b_cnt, (unsigned long long)pm.fadt_pa, when);
	return rc;
}

/*
 * Does an access of size bytes at port touch a PM1 control register?
 * *slp_en: a write of value sets SLP_EN (bit 13: bit 5 of the byte at
 * register + 1) in one of them.
 */
static bool sleep_touch(uint16_t port, unsigned size, uint32_t value, bool *slp_en)
{
	bool hit = false;

	*slp_en = false;
	for (int i = 0; i < 2; i++) {
		uint32_t reg = __atomic_load_n(&sl.port[i], __ATOMIC_ACQUIRE);

		if (!reg || port > reg + 1 || (uint32_t)port + size <= reg)
			continue;
		hit = true;
		if (reg + 1 >= port && reg + 1 < (uint32_t)port + size &&
		    ((value >> (8 * (reg + 1 - port))) & (ACPI_PM1_SLP_EN >> 8)))
			*slp_en = true;
	}
	return hit;
}

/*
 * An access to a PM1 control register: performed on the real port exactly
 * as asked (the chipset must see it: it is the sleep itself), after the
 * guest_sleep hook when the write sets SLP_EN.
 */
static void sleep_io(struct exit_ctx *ctx, uint16_t port, unsigned size, bool in, bool slp_en)
{
	uint32_t v = (uint32_t)ctx->regs->rax;
	const struct exit_hooks *h = exit_hooks_get();

	if (in) {
		uint64_t rax = ctx->regs->rax;

		if (size == 1)
			rax = (rax & ~0xffull) | hw_inb(port);
		else if (size == 2)
			rax = (rax & ~0xffffull) | hw_inw(port);
		else
			rax = hw_inl(port);   /* zero-extends (SDM 1 3.4.1.1) */
		ctx->regs->rax = rax;
		return;
	}
	if (slp_en) {
		log_info("io: cpu %u: ACPI sleep: OUT %#x (%u bytes) to port %#x sets SLP_EN, RIP %#llx",
			 ctx->cpu->index, v, size, port,
			 (unsigned long long)vmcs_get(VMCS_GUEST_RIP));
		if (h->guest_sleep)
			h->guest_sleep(ctx->cpu, port, v);
	}
	if (size == 1)
		hw_outb(port, (uint8_t)v);
	else if (size == 2)
		hw_outw(port, (uint16_t)v);
	else
		hw_outl(port, v);
}

static void log_some(const char *fmt, uint32_t cpu, uint16_t port, unsigned size,
		     uint32_t latch, uint64_t rip)
{
	if (__atomic_fetch_add(&logged, 1, __ATOMIC_RELAXED) >= LOG_FIRST)
		return;
	log_warn(fmt, cpu, port, size, PCI_CA_BUS(latch), PCI_CA_DEV(latch), PCI_CA_FN(latch),
		 (unsigned long long)rip);
}

enum exit_action exit_io_instruction(struct exit_ctx *ctx)
{
	uint64_t q = ctx->qualification;
	struct per_cpu *cpu = ctx->cpu;
	unsigned size = io_qual_size(q);
	uint16_t port = io_qual_port(q);
	bool in = io_qual_in(q);
	enum pci_io_outcome outcome;
	bool sleep, slp_en;
	uint32_t value;

	if (size != 1 && size != 2 && size != 4) {
		log_err("io: cpu %u: I/O exit with undefined access size (qualification %#llx)",
			cpu->index, (unsigned long long)q);
		return EXIT_STOP_CPU;
	}
	sleep = sleep_touch(port, size, in ? 0 : (uint32_t)ctx->regs->rax, &slp_en);
	if (io_qual_string(q)) {
		cpu->stats.io_string_refused++;
		if (__atomic_fetch_add(&logged, 1, __ATOMIC_RELAXED) < LOG_FIRST)
			log_warn("io: cpu %u: %s%s at port %#x (%u bytes) refused with #GP(0): string I/O to the %s ports is not emulated, RIP %#llx",
				 cpu->index, io_qual_rep(q) ? "REP " : "", in ? "INS" : "OUTS",
				 port, size, sleep ? "ACPI PM1 control" : "PCI configuration",
				 (unsigned long long)vmcs_get(VMCS_GUEST_RIP));
		exit_inject_exception(ctx, VEC_GP, true, 0);
		return EXIT_RESUME;
	}
	if (sleep) {
		sleep_io(ctx, port, size, in, slp_en);
		exit_skip_instruction(ctx);
		return EXIT_RESUME;
	}
	value = in ? 0 : (uint32_t)ctx->regs->rax;
	outcome = pci_cfg_io(port, size, in, &value);
	switch (outcome) {
	case PCI_IO_HIDDEN_READ:
		cpu->stats.pci_hidden_reads++;
		break;
	case PCI_IO_HIDDEN_WRITE:
		cpu->stats.pci_dropped_writes++;
		log_some("io: cpu %u: config write at port %#x (%u bytes) to hidden function %02x:%02x.%x dropped, RIP %#llx",
			 cpu->index, port, size, pci_cfg_latch(), vmcs_get(VMCS_GUEST_RIP));
		break;
	default:
		break;
	}
	if (in) {
		uint64_t rax = ctx->regs->rax;

		if (size == 1)
			rax = (rax & ~0xffull) | (value & 0xffu);
		else if (size == 2)
			rax = (rax & ~0xffffull) | (value & 0xffffu);
		else
			rax = value;  /* a 32-bit destination zero-extends (SDM 1 3.4.1.1) */
		ctx->regs->rax = rax;
	}
	exit_skip_instruction(ctx);
	return EXIT_RESUME;
}
