/* SPDX-License-Identifier: MIT */
/*
 * preempt.c - the poll hook on its CPU (contract in preempt.h).
 */
#include "vmm/exit/preempt.h"

#include "vmm/hv.h"

static struct preempt_hook hook;

int hv_set_poll_hook(void (*fn)(void *ctx), void *ctx, uint32_t cpu)
{
	hook.fn = fn;
	hook.ctx = ctx;
	hook.cpu = cpu;
	return 0;
}

const struct preempt_hook *preempt_hook_get(void)
{
	return &hook;
}

void preempt_hook_install(const struct preempt_hook *h)
{
	if (h)
		hook = *h;
	else
		hook = (struct preempt_hook){ 0 };
}

uint64_t preempt_period_tsc(uint32_t poll_us, uint64_t tsc_hz)
{
	if (!poll_us || !tsc_hz || tsc_hz > UINT64_MAX / poll_us)
		return 0;
	return (uint64_t)poll_us * tsc_hz / 1000000u;
}

uint64_t preempt_deadline(const struct per_cpu *cpu, uint64_t now)
{
	uint64_t due = now + (1ull << 62);

	if (cpu->timer_period_tsc && (int64_t)(cpu->next_beat_tsc - due) < 0)
		due = cpu->next_beat_tsc;
	if (cpu->poll_period_tsc && (int64_t)(cpu->next_poll_tsc - due) < 0)
		due = cpu->next_poll_tsc;
	if (cpu->drain_period_tsc && cpu->drain_armed &&
	    (int64_t)(cpu->next_drain_tsc - due) < 0)
		due = cpu->next_drain_tsc;
	return due;
}

void preempt_poll(struct per_cpu *cpu, uint64_t now)
{
	if (!cpu->poll_period_tsc || !hook.fn || cpu->index != hook.cpu)
		return;
	if ((int64_t)(now - cpu->next_poll_tsc) < 0)
		return;
	cpu->stats.polls++;
	hook.fn(hook.ctx);
	cpu->next_poll_tsc += cpu->poll_period_tsc;
	if ((int64_t)(now - cpu->next_poll_tsc) >= 0)
		cpu->next_poll_tsc = now + cpu->poll_period_tsc;
}
