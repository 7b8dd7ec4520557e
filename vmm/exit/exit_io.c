/* SPDX-License-Identifier: MIT */
/*
 * exit_io.c - I/O-instruction exits (reason 30).
 *
 * "Use I/O bitmaps" is on only while some PCI function is hidden, and the
 * bitmaps select the eight configuration ports alone, so every exit here
 * is the guest talking to configuration mechanism #1; pci_hide.c decides
 * what it sees.  String forms are refused rather than emulated: they
 * would need the guest's segmentation, paging and REP count for a way of
 * reaching configuration space no OS or firmware uses.
 */
#include "vmm/exit/exit_io.h"

#include <string.h>

#include "vmm/exit/exit.h"
#include "vmm/lib/log.h"
#include "vmm/exit/pci_hide.h"

#define LOG_FIRST 16

static uint64_t logged;

void io_bitmap_build(uint8_t a[4096], uint8_t b[4096])
{
	memset(a, 0, 4096);
	memset(b, 0, 4096);
	for (uint32_t port = IO_EXIT_FIRST; port <= IO_EXIT_LAST; port++) {
		uint8_t *m = port < 0x8000 ? a : b;
		uint32_t bit = port & 0x7fff;

		m[bit / 8] |= (uint8_t)(1u << (bit % 8));
	}
}

bool io_bitmap_test(const uint8_t a[4096], const uint8_t b[4096], uint16_t port)
{
	const uint8_t *m = port < 0x8000 ? a : b;
	uint32_t bit = port & 0x7fffu;

	return (m[bit / 8] >> (bit % 8)) & 1;
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
	uint32_t value;

	if (size != 1 && size != 2 && size != 4) {
		log_err("io: cpu %u: I/O exit with undefined access size (qualification %#llx)",
			cpu->index, (unsigned long long)q);
		return EXIT_STOP_CPU;
	}
	if (io_qual_string(q)) {
		cpu->stats.io_string_refused++;
		if (__atomic_fetch_add(&logged, 1, __ATOMIC_RELAXED) < LOG_FIRST)
			log_warn("io: cpu %u: %s%s at port %#x (%u bytes) refused with #GP(0): string I/O to the PCI configuration ports is not emulated, RIP %#llx",
				 cpu->index, io_qual_rep(q) ? "REP " : "", in ? "INS" : "OUTS",
				 port, size, (unsigned long long)vmcs_get(VMCS_GUEST_RIP));
		exit_inject_exception(ctx, VEC_GP, true, 0);
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
