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
 */
#include <stdbool.h>

#include "vmm/exit.h"
#include "vmm/exit_ept.h"
#include "vmm/hv.h"
#include "vmm/hw.h"
#include "vmm/log.h"

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

enum exit_action exit_ept_violation(struct exit_ctx *ctx)
{
	uint64_t gpa = vmcs_get(VMCS_GUEST_PHYSICAL_ADDRESS);
	uint64_t page = gpa & ~0xfffull;
	bool hidden = is_hidden(gpa);
	struct ept_leaf leaf;
	int rc = 0;

	if (!hv.ept || !hv.pool) {
		log_err("ept: violation at %#llx before EPT state is known", (unsigned long long)gpa);
		return EXIT_STOP_CPU;
	}
	/* The tracer's address trigger: an execute-disabled page. */
	if ((ctx->qualification & EPT_QUAL_FETCH) && trace_trigger_fetch(ctx->cpu, gpa))
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
