/* SPDX-License-Identifier: MIT */
/*
 * preempt.h - the poll hook: periodic work in VMX root on one CPU (the
 * export NIC's receive/transmit and lwIP timers, net_poll), driven by the
 * VMX-preemption timer so it runs even when the guest never exits.
 *
 * The hook is registered with hv_set_poll_hook() (vmm/hv.h) at boot,
 * before vmx_boot: vmx_boot moves it into the resident copy (a function
 * or context pointer into the loaded image is rebased onto the copy) and
 * gives the CPU it names a period of poll_us (tracevisor.conf).  Only that
 * CPU arms the timer for it (other CPUs arm it only for the heartbeat).
 *
 * The deadline is kept in TSC units (per_cpu.next_poll_tsc).  After every
 * exit the dispatcher's caller runs vcpu_periodic(): if the deadline has
 * passed - at the timer's own exit (reason 52) or at any other exit that
 * comes first, a cheap TSC compare - the hook runs, the deadline moves
 * one period on, and the timer is re-armed for the earliest of this and
 * the heartbeat deadline (timer ticks = TSC >> IA32_VMX_MISC[4:0], SDM 3C
 * 26.5.1, A.6).  Without the pin-based control (IA32_VMX_TRUE_PINBASED_CTLS
 * or IA32_VMX_PINBASED_CTLS allowed-1 bit 6) vmx.c logs it once for that
 * CPU and the hook runs at exits only.
 *
 * "Save VMX-preemption timer value" (exit control bit 22) is not needed:
 * the timer field is rewritten from the TSC deadline before every entry,
 * so nothing depends on the value the CPU would save, and a CPU or
 * emulator without that control keeps the timer.
 */
#ifndef TV_PREEMPT_H
#define TV_PREEMPT_H

#include <stdint.h>

#include "vmm/vmx/vcpu.h"

#define PREEMPT_POLL_US_DEFAULT 1000
#define PREEMPT_POLL_US_MIN 10
#define PREEMPT_POLL_US_MAX 1000000

struct preempt_hook {
	void (*fn)(void *ctx);    /* NULL: no hook */
	void *ctx;
	uint32_t cpu;             /* per_cpu index that runs it */
};

/* The hook as registered in this image (vmx_boot copies it into boot info). */
const struct preempt_hook *preempt_hook_get(void);

/* preempt_hook_install - the resident copy's hook, from boot info (hv_init). */
void preempt_hook_install(const struct preempt_hook *h);

/*
 * preempt_period_tsc - poll_us microseconds in TSC ticks at tsc_hz
 * (integer arithmetic: no floating point in VMX root).  0 when either is
 * 0 or the product overflows.
 */
uint64_t preempt_period_tsc(uint32_t poll_us, uint64_t tsc_hz);

/*
 * preempt_deadline - the earliest TSC deadline this CPU's timer must
 * meet: the heartbeat's (timer_period_tsc != 0) and the poll's
 * (poll_period_tsc != 0); far in the future (2^62 ticks) when neither.
 */
uint64_t preempt_deadline(const struct per_cpu *cpu, uint64_t now);

/*
 * preempt_poll - run the hook if this CPU is the hook's CPU, has a poll
 * period and now is at or past next_poll_tsc; then move the deadline a
 * period on (to now + period when more than one period was missed).
 * cpu->stats.polls counts the calls.
 */
void preempt_poll(struct per_cpu *cpu, uint64_t now);

#endif /* TV_PREEMPT_H */
