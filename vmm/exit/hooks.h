/* SPDX-License-Identifier: MIT */
/*
 * hooks.h - how a tracer hooks into the exit path without the VMX core or
 * the exit handlers knowing it (ACRN's profiler and Jailhouse's units do
 * the same: the loop calls out, the unit registers).
 *
 * One struct of function pointers, registered once at init (vmm/trace/
 * hooks.c: trace_hooks_register, from hv_init and, for the MSR bitmaps,
 * from boot).  Every member may be NULL; each call point then has a fixed
 * outcome, written next to the member.  An event nobody registered for is
 * one the controls vmx.c programs cannot produce, so it goes to the
 * unknown-exit path (log, VMCS dump, CPU stopped) rather than being
 * guessed at.
 *
 * All hooks run in VMX root on the CPU that exited, with its VMCS current.
 */
#ifndef TV_EXIT_HOOKS_H
#define TV_EXIT_HOOKS_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/vmx/vcpu.h"

struct exit_hooks {
	/*
	 * before_entry - the last work before VMRESUME, after an exit whose
	 * handler returned EXIT_RESUME (after vcpu_periodic, before
	 * vcpu_deliver_nmi).  exit_reason: the basic reason (bits 15:0) of
	 * the exit just handled, as vmx_exit_dispatch read it.
	 * NULL: nothing.
	 */
	void (*before_entry)(struct per_cpu *cpu, uint32_t exit_reason);
	/*
	 * nmi_exit - an exception-or-NMI exit of interruption type NMI while
	 * pin-based NMI exiting is on (only the tracer asks for it).
	 * NULL: unexpected (logged, VMCS dumped, CPU stopped).
	 */
	enum exit_action (*nmi_exit)(struct exit_ctx *ctx);
	/*
	 * owns_db / db_exit - an exception exit with vector 1 (#DB or INT1)
	 * is handed to db_exit (ctx->qualification read) when owns_db says
	 * the CPU's #DB interception is the tracer's.
	 * NULL or false: unexpected (logged, VMCS dumped, CPU stopped).
	 */
	bool (*owns_db)(const struct per_cpu *cpu);
	enum exit_action (*db_exit)(struct exit_ctx *ctx);
	/*
	 * mtf_exit - exit reason 37 (monitor trap flag).
	 * NULL: the unknown-exit path (logged, VMCS dumped, CPU stopped).
	 */
	enum exit_action (*mtf_exit)(struct exit_ctx *ctx);
	/*
	 * ept_fetch - an EPT violation caused by an instruction fetch at gpa
	 * (guest_rax: the guest's RAX): true when the page was the tracer's
	 * (a trigger) and the exit is dealt with; the guest resumes.
	 * NULL: false (the violation is handled as any other).
	 */
	bool (*ept_fetch)(struct per_cpu *cpu, uint64_t gpa, uint64_t guest_rax);
	/*
	 * ept_access - any EPT violation at gpa (ctx->qualification read),
	 * asked first, before ept_fetch and ept_write: true when gpa is on a
	 * page the tracer watches (memory-access tracing, vmm/trace/
	 * memwatch.h) or the CPU is in the tracer's single step in another
	 * EPT view that must be brought up to date, and the exit is dealt
	 * with (the instruction is retried).  First so that a CPU stepping
	 * in that view never loops on other hooks' "stale TLB" answers,
	 * which flush only the guest's own EPTP.
	 * NULL: false (the violation goes on as before).
	 */
	bool (*ept_access)(struct exit_ctx *ctx, uint64_t gpa);
	/*
	 * ept_write - an EPT violation caused by a data write at gpa (exit
	 * qualification bit 1, SDM 3C 28.2.1), asked before the generic
	 * path: true when the page was write-protected by the tracer (code
	 * snapshots: vmm/trace/snap.h) and the exit is dealt with; the
	 * instruction is retried.
	 * NULL: false (the violation is handled as any other).
	 */
	bool (*ept_write)(struct per_cpu *cpu, uint64_t gpa);
	/*
	 * guest_reset - the guest reset the machine (triple fault), just
	 * before the reset: the last chance to close and export a window.
	 * NULL: nothing.
	 */
	void (*guest_reset)(struct per_cpu *cpu);
	/*
	 * guest_sleep - the guest writes value (as its OUT gave it) to port,
	 * an ACPI PM1 control register, with SLP_EN set (vmm/exit/exit_io.c):
	 * it enters a sleep state, S5 being the power-off, and the machine
	 * may be gone when the write completes.  Called before the write goes
	 * to the hardware: the last chance to close and export windows.
	 * NULL: nothing (the write goes out).
	 */
	void (*guest_sleep)(struct per_cpu *cpu, uint16_t port, uint32_t value);
	/*
	 * msr_intercepts - should RDMSR (write false) / WRMSR (true) of msr
	 * exit?  Asked by msr_bitmap_build for every MSR of both bitmap
	 * ranges, and by exit_rdmsr/exit_wrmsr, which give the access to
	 * msr_read/msr_write when it answers true (before msr_emul_table).
	 * NULL: false.
	 *
	 * msr_read / msr_write - the access, with struct msr_emul's
	 * contract: 0 (a read's value in *value), or a negative value to
	 * raise #GP(0).  NULL (with msr_intercepts true): #GP(0).
	 */
	bool (*msr_intercepts)(uint32_t msr, bool write);
	int (*msr_read)(struct exit_ctx *ctx, uint32_t msr, uint64_t *value);
	int (*msr_write)(struct exit_ctx *ctx, uint32_t msr, uint64_t value);
};

/*
 * exit_hooks_set - register h (NULL: none).  The struct is used in place,
 * not copied: it must outlive the registration.  An atomic pointer store,
 * but meant for init, before any CPU is launched.
 */
void exit_hooks_set(const struct exit_hooks *h);

/* exit_hooks_get - what is registered; never NULL (no hooks: all NULL). */
const struct exit_hooks *exit_hooks_get(void);

#endif /* TV_EXIT_HOOKS_H */
