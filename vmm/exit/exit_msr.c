/* SPDX-License-Identifier: MIT */
/*
 * exit_msr.c - RDMSR/WRMSR (exit reasons 31/32) and the MSR bitmap.
 *
 * Only the MSRs in msr_emul_table exit (the bitmap says so); every other
 * MSR in the two bitmap ranges goes to the hardware untouched.  MSRs
 * outside both ranges always exit (SDM 3C 25.6.9); none exists on the
 * CPUs we run on, so they get #GP as on bare metal.
 *
 * VMX is hidden from the guest (CPUID.1:ECX.VMX = 0), so:
 *  - IA32_FEATURE_CONTROL reads as the real value with VMX and SMX
 *    switched off and locked: lock (bit 0) = 1, VMXON inside/outside SMX
 *    (bits 2:1) = 0, SENTER enables (bits 15:8) = 0.  What an OS reads on
 *    a machine whose firmware disabled VT-x.  Writes raise #GP, as WRMSR
 *    to a locked FEATURE_CONTROL does.
 *  - the capability MSRs IA32_VMX_BASIC..IA32_VMX_VMFUNC (0x480-0x491)
 *    do not exist for the guest: reads and writes raise #GP, as on a CPU
 *    without VMX (SDM 4: they exist only if CPUID.1:ECX.VMX = 1).
 *
 * Tracing MSRs (IA32_DEBUGCTL, the LBR stack, IA32_DS_AREA,
 * IA32_PEBS_ENABLE, IA32_RTIT_*, IA32_PERF_GLOBAL_*) are the tracer's:
 * through the MSR hooks of vmm/exit/hooks.h it says which accesses exit
 * (its policy, vmm/trace/msr_policy.h, docs/TRACE-MSR-POLICY.md) and
 * answers them.  Where a guest MSR's value lives is this file's to say
 * (exit_msr_guest_read/_write): the guest's IA32_DEBUGCTL is in the VMCS
 * (load/save debug controls), so its "hardware" is GUEST_IA32_DEBUGCTL,
 * never a WRMSR in VMX root.
 */
#include <string.h>

#include "vmm/exit/exit.h"
#include "vmm/exit/hooks.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/hw/msr.h"

static int feature_control_read(struct exit_ctx *ctx, uint32_t msr, uint64_t *value)
{
	uint64_t v = hw_rdmsr(MSR_IA32_FEATURE_CONTROL);

	(void)ctx;
	(void)msr;
	v &= ~(FEATURE_CONTROL_VMXON_INSIDE_SMX | FEATURE_CONTROL_VMXON_OUTSIDE_SMX |
	       FEATURE_CONTROL_SENTER_LOCAL_MASK | FEATURE_CONTROL_SENTER_GLOBAL);
	*value = v | FEATURE_CONTROL_LOCK;
	return 0;
}

/* WRMSR to a locked IA32_FEATURE_CONTROL raises #GP (SDM 3C 24.7). */
static int feature_control_write(struct exit_ctx *ctx, uint32_t msr, uint64_t value)
{
	(void)ctx;
	(void)msr;
	(void)value;
	return -1;
}

/* An MSR that does not exist for the guest: #GP either way. */
static int absent_read(struct exit_ctx *ctx, uint32_t msr, uint64_t *value)
{
	(void)ctx;
	(void)msr;
	*value = 0;
	return -1;
}

static int absent_write(struct exit_ctx *ctx, uint32_t msr, uint64_t value)
{
	(void)ctx;
	(void)msr;
	(void)value;
	return -1;
}

const struct msr_emul msr_emul_table[] = {
	{ MSR_IA32_FEATURE_CONTROL, MSR_IA32_FEATURE_CONTROL, feature_control_read, feature_control_write },
	{ MSR_IA32_VMX_BASIC, MSR_IA32_VMX_VMFUNC, absent_read, absent_write },
	/*
	 * The tracing MSRs are not rows here: which of them exit is the
	 * tracer's to say (the msr_intercepts hook), and exit_rdmsr /
	 * exit_wrmsr hand them to its msr_read/msr_write before this table.
	 */
};
const size_t msr_emul_count = sizeof(msr_emul_table) / sizeof(msr_emul_table[0]);

/* Byte offset (of the read half) and bit of msr in the bitmap, or false. */
static bool bitmap_pos(uint32_t msr, size_t *byte, uint8_t *bit)
{
	uint32_t base;

	if (msr <= 0x1fffu)
		base = 0;
	else if (msr >= 0xc0000000u && msr <= 0xc0001fffu)
		base = 1024;
	else
		return false;
	msr &= 0x1fffu;
	*byte = base + msr / 8;
	*bit = (uint8_t)(1u << (msr % 8));
	return true;
}

/* The two ranges the bitmap covers (SDM 3C 25.6.9). */
static const uint32_t bitmap_range_first[2] = { 0, 0xc0000000u };
#define BITMAP_RANGE_MSRS 0x2000u

void msr_bitmap_build(uint8_t bitmap[4096])
{
	const struct exit_hooks *h = exit_hooks_get();

	memset(bitmap, 0, 4096);
	/* The tracer's MSRs: every MSR of both ranges asked (boot, per CPU). */
	for (size_t r = 0; h->msr_intercepts && r < 2; r++) {
		for (uint32_t i = 0; i < BITMAP_RANGE_MSRS; i++) {
			uint32_t msr = bitmap_range_first[r] + i;
			size_t byte;
			uint8_t bit;

			if (!bitmap_pos(msr, &byte, &bit))
				continue;
			if (h->msr_intercepts(msr, false))
				bitmap[byte] |= bit;
			if (h->msr_intercepts(msr, true))
				bitmap[2048 + byte] |= bit;
		}
	}
	for (size_t i = 0; i < msr_emul_count; i++) {
		const struct msr_emul *e = &msr_emul_table[i];

		for (uint32_t msr = e->first; msr <= e->last; msr++) {
			size_t byte;
			uint8_t bit;

			if (!bitmap_pos(msr, &byte, &bit))
				break;  /* out of both ranges: always exits anyway */
			if (e->read)
				bitmap[byte] |= bit;
			if (e->write)
				bitmap[2048 + byte] |= bit;
		}
	}
}

bool msr_bitmap_test(const uint8_t bitmap[4096], uint32_t msr, bool write)
{
	size_t byte;
	uint8_t bit;

	if (!bitmap_pos(msr, &byte, &bit))
		return true;
	return (bitmap[(write ? 2048 : 0) + byte] & bit) != 0;
}

static const struct msr_emul *find_emul(uint32_t msr)
{
	for (size_t i = 0; i < msr_emul_count; i++)
		if (msr >= msr_emul_table[i].first && msr <= msr_emul_table[i].last)
			return &msr_emul_table[i];
	return NULL;
}

/* An MSR the bitmap does not intercept, or one outside its ranges. */
static void unexpected_msr(struct exit_ctx *ctx, uint32_t msr, bool write)
{
	static bool warned;

	if (!__atomic_exchange_n(&warned, true, __ATOMIC_RELAXED))
		log_warn("msr: cpu %u: unexpected %s of MSR %#x at RIP %#llx: #GP (logged once)",
			 ctx->cpu->index, write ? "WRMSR" : "RDMSR", msr,
			 (unsigned long long)vmcs_get(VMCS_GUEST_RIP));
	exit_inject_exception(ctx, VEC_GP, true, 0);
}

/*
 * Where the guest's value of msr lives while it runs: IA32_DEBUGCTL in
 * the VMCS guest field (loaded on entry, saved on exit: SDM 3C 27.3.1,
 * 28.3.1); IA32_PERF_GLOBAL_CTRL likewise while it is loaded on entry;
 * every other MSR in the hardware.
 */
uint64_t exit_msr_guest_read(const struct per_cpu *cpu, uint32_t msr)
{
	if (msr == MSR_IA32_DEBUGCTL)
		return vmcs_get(VMCS_GUEST_IA32_DEBUGCTL);
	if (msr == MSR_IA32_PERF_GLOBAL_CTRL && (cpu->entry_ctls & ENTRY_LOAD_PERF_GLOBAL_CTRL))
		return vmcs_get(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL);
	return hw_rdmsr(msr);
}

void exit_msr_guest_write(const struct per_cpu *cpu, uint32_t msr, uint64_t value)
{
	if (msr == MSR_IA32_DEBUGCTL)
		vmcs_write(VMCS_GUEST_IA32_DEBUGCTL, value);
	else if (msr == MSR_IA32_PERF_GLOBAL_CTRL && (cpu->entry_ctls & ENTRY_LOAD_PERF_GLOBAL_CTRL))
		vmcs_write(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL, value);
	else
		hw_wrmsr(msr, value);
}

/* An access the tracer intercepts: its hook, or #GP when it has none. */
static int hooked_access(struct exit_ctx *ctx, const struct exit_hooks *h, uint32_t msr,
			 bool write, uint64_t *value)
{
	if (write)
		return h->msr_write ? h->msr_write(ctx, msr, *value) : -1;
	return h->msr_read ? h->msr_read(ctx, msr, value) : -1;
}

enum exit_action exit_rdmsr(struct exit_ctx *ctx)
{
	const struct exit_hooks *h = exit_hooks_get();
	struct guest_regs *regs = ctx->regs;
	uint32_t msr = (uint32_t)regs->rcx;
	const struct msr_emul *e;
	uint64_t value = 0;

	if (h->msr_intercepts && h->msr_intercepts(msr, false)) {
		if (hooked_access(ctx, h, msr, false, &value) < 0) {
			exit_inject_exception(ctx, VEC_GP, true, 0);
			return EXIT_RESUME;
		}
		regs->rax = (uint32_t)value;
		regs->rdx = value >> 32;
		exit_skip_instruction(ctx);
		return EXIT_RESUME;
	}
	e = find_emul(msr);
	if (!e || !e->read) {
		unexpected_msr(ctx, msr, false);
		return EXIT_RESUME;
	}
	if (e->read(ctx, msr, &value) < 0) {
		exit_inject_exception(ctx, VEC_GP, true, 0);
		return EXIT_RESUME;
	}
	/* RDMSR loads EDX:EAX and clears bits 63:32 of RAX and RDX (SDM 2B). */
	regs->rax = (uint32_t)value;
	regs->rdx = value >> 32;
	exit_skip_instruction(ctx);
	return EXIT_RESUME;
}

enum exit_action exit_wrmsr(struct exit_ctx *ctx)
{
	const struct exit_hooks *h = exit_hooks_get();
	struct guest_regs *regs = ctx->regs;
	uint32_t msr = (uint32_t)regs->rcx;
	const struct msr_emul *e;
	uint64_t value = (regs->rdx << 32) | (uint32_t)regs->rax;

	if (h->msr_intercepts && h->msr_intercepts(msr, true)) {
		if (hooked_access(ctx, h, msr, true, &value) < 0) {
			exit_inject_exception(ctx, VEC_GP, true, 0);
			return EXIT_RESUME;
		}
		exit_skip_instruction(ctx);
		return EXIT_RESUME;
	}
	e = find_emul(msr);
	if (!e || !e->write) {
		unexpected_msr(ctx, msr, true);
		return EXIT_RESUME;
	}
	if (e->write(ctx, msr, value) < 0) {
		exit_inject_exception(ctx, VEC_GP, true, 0);
		return EXIT_RESUME;
	}
	exit_skip_instruction(ctx);
	return EXIT_RESUME;
}
