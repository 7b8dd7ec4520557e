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
 * IA32_PEBS_ENABLE, IA32_RTIT_*, IA32_PERF_GLOBAL_*) follow the policy of
 * vmm/trace/msr_policy.h (docs/TRACE-MSR-POLICY.md): the bitmap intercepts those
 * the configured backend owns, the policy answers from its per-CPU shadow
 * or says which hardware access to make.  The guest's IA32_DEBUGCTL lives
 * in the VMCS (load/save debug controls), so its "hardware" is
 * GUEST_IA32_DEBUGCTL, never a WRMSR in VMX root.
 */
#include <string.h>

#include "vmm/exit/exit.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/hw/msr.h"
#include "vmm/trace/msr_policy.h"

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
	 * The tracing MSRs are not rows here: which of them exit depends on
	 * the configured backend (trace_msr_intercepts()), and exit_rdmsr /
	 * exit_wrmsr hand them to vmm/trace/msr_policy.c before this table.
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

/* Every MSR number the trace policy knows, as [first, last] ranges. */
static const struct { uint32_t first, last; } trace_ranges[] = {
	{ 0x040, 0x047 }, { 0x060, 0x067 },          /* Core 2 / Atom LBR stack */
	{ 0x0c1, 0x0c8 }, { 0x186, 0x18d }, { 0x4c1, 0x4c8 }, /* PMCx, PERFEVTSELx, A_PMCx */
	{ 0x1c8, 0x1c9 }, { 0x1d9, 0x1d9 },          /* LBR_SELECT, TOS, DEBUGCTL */
	{ 0x38e, 0x390 }, { 0x3f1, 0x3f1 },          /* PERF_GLOBAL_*, PEBS_ENABLE */
	{ 0x560, 0x561 }, { 0x570, 0x572 }, { 0x580, 0x587 }, /* RTIT_* */
	{ 0x600, 0x600 },                            /* DS_AREA */
	{ 0x680, 0x69f }, { 0x6c0, 0x6df }, { 0xdc0, 0xddf }, /* LBR FROM/TO/INFO */
	{ 0x1200, 0x123f }, { 0x14ce, 0x14cf }, { 0x1500, 0x153f }, { 0x1600, 0x163f }, /* arch LBR */
};

void msr_bitmap_build(uint8_t bitmap[4096])
{
	memset(bitmap, 0, 4096);
	for (size_t i = 0; i < sizeof(trace_ranges) / sizeof(trace_ranges[0]); i++) {
		for (uint32_t msr = trace_ranges[i].first; msr <= trace_ranges[i].last; msr++) {
			size_t byte;
			uint8_t bit;

			if (!bitmap_pos(msr, &byte, &bit))
				continue;
			if (trace_msr_intercepts(msr, false))
				bitmap[byte] |= bit;
			if (trace_msr_intercepts(msr, true))
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
 * The hardware side of a TRACE_MSR_PASS: IA32_DEBUGCTL is the guest's
 * VMCS field; every other MSR the real one (the policy checked the value).
 */
static uint64_t trace_hw_read(const struct per_cpu *cpu, uint32_t msr)
{
	if (msr == MSR_IA32_DEBUGCTL)
		return vmcs_get(VMCS_GUEST_IA32_DEBUGCTL);
	/* loaded on entry (lbr with pmi): the guest's value is the field */
	if (msr == MSR_IA32_PERF_GLOBAL_CTRL && (cpu->entry_ctls & ENTRY_LOAD_PERF_GLOBAL_CTRL))
		return vmcs_get(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL);
	return hw_rdmsr(msr);
}

static void trace_hw_write(const struct per_cpu *cpu, uint32_t msr, uint64_t value)
{
	if (msr == MSR_IA32_DEBUGCTL)
		vmcs_write(VMCS_GUEST_IA32_DEBUGCTL, value);
	else if (msr == MSR_IA32_PERF_GLOBAL_CTRL && (cpu->entry_ctls & ENTRY_LOAD_PERF_GLOBAL_CTRL))
		vmcs_write(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL, value);
	else
		hw_wrmsr(msr, value);
}

/* A tracing MSR: 0 = done (value in *value for reads), -1 = #GP. */
static int trace_access(struct exit_ctx *ctx, uint32_t msr, bool write, uint64_t *value)
{
	struct trace_msr_state *s = trace_msr_state_of(ctx->cpu);
	enum trace_msr_action a;

	if (!s)
		return -1;
	if (!write) {
		a = trace_msr_read(s, msr, value);
		if (a == TRACE_MSR_PASS)
			*value = trace_msr_guest_view(s, msr, trace_hw_read(ctx->cpu, msr));
		return a == TRACE_MSR_GP ? -1 : 0;
	}
	a = trace_msr_write(s, msr, *value);
	if (a == TRACE_MSR_PASS) {
		uint64_t now = trace_msr_owned_mask(s, msr) ? trace_hw_read(ctx->cpu, msr) : 0;

		trace_hw_write(ctx->cpu, msr, trace_msr_hw_value(s, msr, now));
	}
	return a == TRACE_MSR_GP ? -1 : 0;
}

enum exit_action exit_rdmsr(struct exit_ctx *ctx)
{
	struct guest_regs *regs = ctx->regs;
	uint32_t msr = (uint32_t)regs->rcx;
	const struct msr_emul *e;
	uint64_t value = 0;

	if (trace_msr_is_virtualized(msr) && trace_msr_intercepts(msr, false)) {
		if (trace_access(ctx, msr, false, &value) < 0) {
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
	struct guest_regs *regs = ctx->regs;
	uint32_t msr = (uint32_t)regs->rcx;
	const struct msr_emul *e;
	uint64_t value = (regs->rdx << 32) | (uint32_t)regs->rax;

	if (trace_msr_is_virtualized(msr) && trace_msr_intercepts(msr, true)) {
		if (trace_access(ctx, msr, true, &value) < 0) {
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
