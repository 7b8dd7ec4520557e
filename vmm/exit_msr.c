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
 */
#include <string.h>

#include "vmm/exit.h"
#include "vmm/hw.h"
#include "vmm/log.h"
#include "vmm/msr.h"

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
	 * Tracing adds its rows here: IA32_DEBUGCTL (0x1d9), the LBR stack,
	 * IA32_DS_AREA (0x600), IA32_RTIT_* (0x560-0x58x), and
	 * IA32_PERF_GLOBAL_* (0x38d-0x390), each with the read/write
	 * functions that virtualize it.
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

void msr_bitmap_build(uint8_t bitmap[4096])
{
	memset(bitmap, 0, 4096);
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

enum exit_action exit_rdmsr(struct exit_ctx *ctx)
{
	struct guest_regs *regs = ctx->regs;
	uint32_t msr = (uint32_t)regs->rcx;
	const struct msr_emul *e = find_emul(msr);
	uint64_t value = 0;

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
	struct guest_regs *regs = ctx->regs;
	uint32_t msr = (uint32_t)regs->rcx;
	const struct msr_emul *e = find_emul(msr);
	uint64_t value = (regs->rdx << 32) | (uint32_t)regs->rax;

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
