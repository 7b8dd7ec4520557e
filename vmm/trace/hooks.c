/* SPDX-License-Identifier: MIT */
/*
 * hooks.c - the tracer hooked into the exit path (vmm/exit/hooks.h).
 *
 * The exit handlers and the VMX core know nothing of tracing: they call
 * these through struct exit_hooks.  Each hook is a thin adapter onto the
 * engine (vmm/trace/engine.h) or the MSR policy (vmm/trace/msr_policy.h).
 */
#include "vmm/trace/hooks.h"

#include "vmm/exit/exit.h"
#include "vmm/exit/hooks.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/memwatch.h"
#include "vmm/trace/msr_policy.h"
#include "vmm/trace/poweroff.h"
#include "vmm/trace/snap.h"

/*
 * Before every entry: a CPU whose EPT TLB may hold rights that code
 * snapshots changed on another CPU flushes it first (snap.h), then the
 * engine's work.
 */
static void hook_before_entry(struct per_cpu *cpu, uint32_t exit_reason)
{
	if (exit_reason == EXIT_REASON_SIPI)
		trace_snap_sipi(cpu);
	trace_snap_before_entry(cpu);
	memwatch_before_entry(cpu);
	trace_before_entry(cpu, exit_reason);
}

/* An execute violation: the address trigger's page first, then code snapshots. */
static bool hook_ept_fetch(struct per_cpu *cpu, uint64_t gpa, uint64_t guest_rax)
{
	if (trace_trigger_fetch(cpu, gpa, guest_rax))
		return true;
	return trace_snap_fetch(cpu, gpa);
}

/*
 * Exit reason 37: a memory watch's step ends here (its records go to the
 * ring), or a self-writing instruction's (code snapshots); then the
 * engine's MTF work (in trace_before_entry).
 */
static enum exit_action hook_mtf_exit(struct exit_ctx *ctx)
{
	(void)memwatch_mtf(ctx->cpu);
	(void)trace_snap_mtf(ctx->cpu);
	return exit_monitor_trap(ctx);
}

/* The guest resets the machine: close the window, which exports it. */
static void hook_guest_reset(struct per_cpu *cpu)
{
	if (trace_cpu_active(cpu))
		trace_stop(cpu, TV_TRIG_GUEST_RESET);
}

/*
 * The guest enters an ACPI sleep state (SLP_EN; S5 is the power-off),
 * the write still to go out: close every CPU's window and wait (bounded)
 * until the receiver has everything.  Without a trace source: nothing.
 */
static void hook_guest_sleep(struct per_cpu *cpu, uint16_t port, uint32_t value)
{
	(void)port;
	(void)value;
	if (trace_engine_setup()->source == TV_SOURCE_NONE)
		return;
	trace_poweroff(cpu);
}

/*
 * A tracing MSR the policy intercepts.  For TRACE_MSR_PASS the policy
 * has checked the value; the guest's "hardware" is where exit_msr.c says
 * it lives (the VMCS for IA32_DEBUGCTL).  0 = done, -1 = #GP(0).
 */
static int hook_msr_read(struct exit_ctx *ctx, uint32_t msr, uint64_t *value)
{
	struct trace_msr_state *s = trace_msr_state_of(ctx->cpu);
	enum trace_msr_action a;

	if (!s)
		return -1;
	a = trace_msr_read(s, msr, value);
	if (a == TRACE_MSR_PASS)
		*value = trace_msr_guest_view(s, msr, exit_msr_guest_read(ctx->cpu, msr));
	return a == TRACE_MSR_GP ? -1 : 0;
}

static int hook_msr_write(struct exit_ctx *ctx, uint32_t msr, uint64_t value)
{
	struct trace_msr_state *s = trace_msr_state_of(ctx->cpu);
	enum trace_msr_action a;

	if (!s)
		return -1;
	a = trace_msr_write(s, msr, value);
	if (a == TRACE_MSR_PASS) {
		uint64_t now = trace_msr_owned_mask(s, msr) ? exit_msr_guest_read(ctx->cpu, msr) : 0;

		exit_msr_guest_write(ctx->cpu, msr, trace_msr_hw_value(s, msr, now));
	}
	return a == TRACE_MSR_GP ? -1 : 0;
}

static const struct exit_hooks trace_exit_hooks = {
	.before_entry = hook_before_entry,
	.nmi_exit = trace_nmi_exit,
	.owns_db = trace_owns_db,
	.db_exit = exit_debug_exception,
	.mtf_exit = hook_mtf_exit,
	.ept_fetch = hook_ept_fetch,
	.ept_access = memwatch_violation,
	.ept_write = trace_snap_write,
	.guest_reset = hook_guest_reset,
	.guest_sleep = hook_guest_sleep,
	.msr_intercepts = trace_msr_intercepts,
	.msr_read = hook_msr_read,
	.msr_write = hook_msr_write,
};

void trace_hooks_register(void)
{
	exit_hooks_set(&trace_exit_hooks);
}
