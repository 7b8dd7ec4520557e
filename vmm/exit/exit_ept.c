/* SPDX-License-Identifier: MIT */
/*
 * exit_ept.c - EPT violations (exit reason 48).
 *
 * EPT maps all of guest-physical memory one to one except tracevisor's
 * own (hidden: not present).  A guest access to a hidden page - a bug or
 * an attack - has one defined outcome: it is counted, the first few are
 * logged with the guest RIP, and that 4 KiB page is remapped (RWX) onto a
 * single scratch page, so the access completes without a fault and
 * without reaching tracevisor's memory: reads see whatever the guest put
 * in the scratch page, writes land there.  Any other violation (an
 * address above the mapped range) gets an identity 4 KiB UC mapping.
 * The faulting instruction is retried, never skipped.
 *
 * One exception: the ECAM page of a hidden PCI function (pci_hide.h) is
 * mapped read+execute-only onto a page of 0xFF bytes at boot, so reads
 * see "no device".  A write to it is dropped: the instruction is skipped,
 * its length decoded from guest memory (x86_decode.c), since the VM-exit
 * instruction length is not defined for EPT violations (SDM 3C 28.2.5).
 * Only the memory write is left out: what else the instruction would
 * have done (the flags of a read-modify-write, a string instruction's
 * pointer and count updates) is not done either.  An instruction that
 * cannot be fetched or decoded gets #GP(0) instead, which is how a write
 * the platform refuses looks to the guest.
 */
#include <stdbool.h>
#include <string.h>

#include "vmm/exit/exit.h"
#include "vmm/exit/exit_ept.h"
#include "vmm/exit/hooks.h"
#include "vmm/lib/guest_mem.h"
#include "vmm/hv.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/exit/pci_hide.h"
#include "vmm/lib/x86_decode.h"

#define EPT_QUAL_READ  (1ull << 0)
#define EPT_QUAL_WRITE (1ull << 1)
#define EPT_QUAL_FETCH (1ull << 2)
#define EPT_QUAL_ACCESS (EPT_QUAL_READ | EPT_QUAL_WRITE | EPT_QUAL_FETCH)
#define LOG_FIRST 16

static int ept_lock;
static uint64_t logged;

void ept_edit_lock(void)
{
	while (__atomic_exchange_n(&ept_lock, 1, __ATOMIC_ACQUIRE))
		hw_pause();
}

void ept_edit_unlock(void)
{
	__atomic_store_n(&ept_lock, 0, __ATOMIC_RELEASE);
}

static bool is_hidden(uint64_t gpa)
{
	for (uint32_t i = 0; i < hv.nhidden; i++)
		if (gpa >= hv.hidden[i].base && gpa - hv.hidden[i].base < hv.hidden[i].size)
			return true;
	return false;
}

#define CS_AR_DB   (1u << 14)   /* SDM 3C 25.4.1: D/B of the access rights */
#define RFLAGS_VM  (1ull << 17)
#define ECAM_ERR_FETCH 100       /* guest_insn_len: the bytes cannot be read */

static uint64_t ecam_logged;

static int guest_phys(void *opaque, uint64_t gpa, void *buf, size_t len)
{
	(void)opaque;
	return exit_guest_read(gpa, buf, len);
}

/*
 * The length of the instruction at the guest's CS:RIP, read through the
 * guest's paging (guest_mem.c) and decoded in the mode the guest is in:
 * 16-bit in real and virtual-8086 mode, 64-bit with IA-32e mode and
 * CS.L, else CS.D.  Returns 1..15, -X86_ERR_* or -ECAM_ERR_FETCH.
 */
static int guest_insn_len(void)
{
	uint64_t cr0 = vmcs_get(VMCS_GUEST_CR0);
	uint64_t rip = vmcs_get(VMCS_GUEST_RIP), linear;
	uint32_t cs_ar = (uint32_t)vmcs_get(VMCS_GUEST_CS_AR);
	uint8_t bytes[X86_MAX_INSN_LEN];
	enum x86_mode mode;
	struct x86_insn insn;
	struct gmem_ctx g;
	size_t first;
	int rc;

	if (!(cr0 & CR0_PE) || (vmcs_get(VMCS_GUEST_RFLAGS) & RFLAGS_VM))
		mode = X86_MODE_16;
	else if (exit_guest_64bit())
		mode = X86_MODE_64;
	else
		mode = (cs_ar & CS_AR_DB) ? X86_MODE_32 : X86_MODE_16;
	/* In 64-bit mode the CS base is treated as 0 (SDM 3A 3.4.4). */
	if (mode == X86_MODE_64)
		linear = rip;
	else
		linear = (vmcs_get(VMCS_GUEST_CS_BASE) + (rip & 0xffffffffull)) & 0xffffffffull;
	memset(&g, 0, sizeof(g));
	g.cr0 = cr0;
	g.cr3 = vmcs_get(VMCS_GUEST_CR3);
	g.cr4 = vmcs_get(VMCS_GUEST_CR4);
	g.efer = vmcs_get(VMCS_GUEST_IA32_EFER);
	g.maxphyaddr = (uint8_t)exit_maxphyaddr();
	g.read_phys = guest_phys;
	if ((cr0 & GMEM_CR0_PG) && (g.cr4 & GMEM_CR4_PAE) && !(g.efer & GMEM_EFER_LMA)) {
		/* PAE with EPT: the PDPTEs in use are the VMCS's (SDM 3C 28.4.1). */
		for (unsigned i = 0; i < 4; i++)
			g.pdpte[i] = vmcs_get(VMCS_GUEST_PDPTE(i));
		g.pdpte_valid = true;
	}
	/* Up to the page end first: the next page may be absent and unneeded. */
	first = 4096 - (size_t)(linear & 4095);
	if (first > sizeof(bytes))
		first = sizeof(bytes);
	if (gmem_read(&g, linear, bytes, first))
		return -ECAM_ERR_FETCH;
	rc = x86_decode(bytes, first, mode, &insn);
	if (rc == -X86_ERR_TRUNCATED && first < sizeof(bytes)) {
		if (gmem_read(&g, linear + first, bytes + first, sizeof(bytes) - first))
			return -ECAM_ERR_FETCH;
		rc = x86_decode(bytes, sizeof(bytes), mode, &insn);
	}
	return rc;
}

/* A violation on the ECAM page of a hidden function: see the top. */
static enum exit_action ecam_violation(struct exit_ctx *ctx, uint64_t gpa)
{
	uint64_t rip = vmcs_get(VMCS_GUEST_RIP);
	int len;

	if (!(ctx->qualification & EPT_QUAL_WRITE)) {
		/* R and X are allowed: only a stale translation gets here. */
		if (hv.ept)
			hw_invept(1, hv.ept->eptp);
		return EXIT_RESUME;
	}
	len = guest_insn_len();
	if (len < 0) {
		log_err("ept: cpu %u: write to the ECAM page of a hidden PCI function at %#llx, RIP %#llx: instruction not decodable (%s): #GP(0)",
			ctx->cpu->index, (unsigned long long)gpa, (unsigned long long)rip,
			len == -ECAM_ERR_FETCH ? "guest memory not readable" : x86_strerror(len));
		exit_inject_exception(ctx, VEC_GP, true, 0);
		return EXIT_RESUME;
	}
	ctx->instr_len = (uint32_t)len;
	exit_skip_instruction(ctx);
	ctx->cpu->stats.ecam_dropped_writes++;
	if (__atomic_fetch_add(&ecam_logged, 1, __ATOMIC_RELAXED) < LOG_FIRST)
		log_warn("ept: cpu %u: write to the ECAM page of a hidden PCI function at %#llx dropped, RIP %#llx (+%d)",
			 ctx->cpu->index, (unsigned long long)gpa, (unsigned long long)rip, len);
	return EXIT_RESUME;
}

enum exit_action exit_ept_violation(struct exit_ctx *ctx)
{
	const struct exit_hooks *hooks = exit_hooks_get();
	uint64_t gpa = vmcs_get(VMCS_GUEST_PHYSICAL_ADDRESS);
	uint64_t page = gpa & ~0xfffull;
	bool hidden = is_hidden(gpa);
	struct ept_leaf leaf;
	int rc = 0;

	if (pci_hide_ecam_hit(gpa))
		return ecam_violation(ctx, gpa);
	if (!hv.ept || !hv.pool) {
		log_err("ept: violation at %#llx before EPT state is known", (unsigned long long)gpa);
		return EXIT_STOP_CPU;
	}
	/* A tracer's watched page, or its single step (memory-access tracing). */
	if (hooks->ept_access && hooks->ept_access(ctx, gpa))
		return EXIT_RESUME;
	/* A tracer's trigger: an execute-disabled page (vmm/exit/hooks.h). */
	if ((ctx->qualification & EPT_QUAL_FETCH) && hooks->ept_fetch &&
	    hooks->ept_fetch(ctx->cpu, gpa, ctx->regs->rax))
		return EXIT_RESUME;
	/* A tracer's write-protected page (code snapshots: re-armed). */
	if ((ctx->qualification & EPT_QUAL_WRITE) && hooks->ept_write &&
	    hooks->ept_write(ctx->cpu, gpa))
		return EXIT_RESUME;
	ept_edit_lock();
	/*
	 * Another CPU may have mapped it already: then only our TLB is stale.
	 * The scratch page is RWX so every kind of access completes (a fetch
	 * runs whatever the guest wrote there: its own bytes, never ours).
	 * A present leaf that does not allow this access would fault again
	 * for ever: that is a bug in the tables, stop rather than spin.
	 */
	if (ept_lookup(hv.ept, gpa, &leaf) != 0 || leaf.rwx == 0) {
		if (hidden)
			rc = ept_map_4k(hv.ept, hv.pool, page, hv.scratch_pa, EPT_RWX, 6);
		else
			rc = ept_map_4k(hv.ept, hv.pool, page, page, EPT_RWX, 0);
	} else if ((ctx->qualification & EPT_QUAL_ACCESS) & ~(uint64_t)leaf.rwx) {
		ept_edit_unlock();
		log_err("ept: cpu %u: violation at %#llx (qualification %#llx) on a leaf that allows rwx=%u at RIP %#llx: stopping, it would repeat for ever",
			ctx->cpu->index, (unsigned long long)gpa,
			(unsigned long long)ctx->qualification, (unsigned)leaf.rwx,
			(unsigned long long)vmcs_get(VMCS_GUEST_RIP));
		return EXIT_STOP_CPU;
	}
	ept_edit_unlock();

	if (hidden)
		ctx->cpu->stats.hidden_memory_accesses++;
	if (__atomic_fetch_add(&logged, 1, __ATOMIC_RELAXED) < LOG_FIRST)
		log_warn("ept: cpu %u: guest %s %s page %#llx at RIP %#llx: %s",
			 ctx->cpu->index,
			 (ctx->qualification & EPT_QUAL_FETCH) ? "fetch from" :
			 (ctx->qualification & EPT_QUAL_WRITE) ? "write to" : "read of",
			 hidden ? "hidden (tracevisor)" : "unmapped", (unsigned long long)page,
			 (unsigned long long)vmcs_get(VMCS_GUEST_RIP),
			 hidden ? "redirected to the scratch page" : "identity-mapped UC");
	if (rc) {
		log_err("ept: cannot remap %#llx: %s", (unsigned long long)page, ept_strerror(rc));
		return EXIT_STOP_CPU;
	}
	/* Single-context INVEPT for this EPTP (SDM 3C 29.4.3.1). */
	hw_invept(1, hv.ept->eptp);
	return EXIT_RESUME;
}
