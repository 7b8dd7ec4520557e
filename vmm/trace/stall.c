/* SPDX-License-Identifier: MIT */
/*
 * stall.c - back-pressure: the producer waits in VMX root for the
 * exporter (overflow = wait).  Contract in stall.h; the user's view in
 * docs/BACKPRESSURE.md.
 */
#include "vmm/trace/stall.h"

#include <string.h>

#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/ring.h"
#include "vmm/vmx/vmx.h"

static struct {
	struct trace_stall_ops ops;
	bool on;
	uint64_t gone_tsc;        /* when the receiver was given up; 0: it is not */
} stall;

/* What one wait waits for: room in the record ring or in a byte ring. */
struct stall_room {
	const struct tv_trace_ring *ring;
	const struct byte_ring *bytes;
	uint64_t need;
};

static uint64_t room_now(const struct stall_room *w)
{
	uint64_t tail;

	if (w->bytes)
		return w->bytes->size - (byte_ring_head(w->bytes) - byte_ring_tail(w->bytes));
	/* The consumer moves tail (STOP ring): bit 0 is its seqlock busy bit. */
	tail = __atomic_load_n(&w->ring->tail, __ATOMIC_ACQUIRE) & ~(uint64_t)TRACE_TAIL_BUSY;
	return w->ring->data_size - (w->ring->head - tail);
}

static struct trace_cpu *cpu_of_bcpu(struct trace_bcpu *b)
{
	/* struct trace_bcpu is struct trace_cpu's first member */
	return (struct trace_cpu *)(void *)b;
}

/* The engine's CPU whose record ring is r, if any (the exporter's table). */
static struct trace_cpu *cpu_of_ring(const struct tv_trace_ring *r)
{
	for (uint32_t i = 0; i < stall.ops.ncpus; i++) {
		struct trace_cpu *t = stall.ops.cpus[i].trace;

		if (t && t->b.ring == r)
			return t;
	}
	return NULL;
}

static uint64_t ticks_per_ms(const struct trace_cpu *t)
{
	uint64_t hz = t->b.ring ? t->b.ring->tsc_hz : 0;

	/* An unknown TSC rate: 1 GHz, the order of every TSC tracevisor meets. */
	return hz >= 1000 ? hz / 1000 : 1000000;
}

bool trace_stall_receiver_gone(void)
{
	uint64_t gone = __atomic_load_n(&stall.gone_tsc, __ATOMIC_ACQUIRE);
	uint64_t heard;

	if (!gone)
		return false;
	heard = stall.ops.heard ? stall.ops.heard(stall.ops.ctx) : 0;
	if (!heard || (int64_t)(heard - gone) <= 0)
		return true;
	/* Heard from after it was given up: lossless again (one CPU logs it). */
	if (__atomic_compare_exchange_n(&stall.gone_tsc, &gone, 0, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE))
		log_info("trace: the receiver answers again: overflow = wait waits again (nothing lost from now on)");
	return false;
}

static void give_up(struct trace_cpu *t, uint64_t now, uint64_t waited_ms)
{
	uint64_t none = 0;

	t->stall.gave_up++;
	/* Several CPUs may give up at once: the first one marks and logs. */
	if (__atomic_compare_exchange_n(&stall.gone_tsc, &none, now ? now : 1, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		log_warn("trace: cpu %u: no room for %llu ms (wait_ms %u): the receiver is taken as gone; what does not fit is dropped and counted until it answers again",
			 t->b.index, (unsigned long long)waited_ms, trace_cfg.wait_ms);
}

/*
 * The wait: pump the exporter (or pause) until w has room, or until the
 * room has not grown for wait_ms.  Accounts the time; with stall_tsc =
 * hide takes it out of the guest's TSC.
 */
static bool stall_wait(struct trace_cpu *t, const struct stall_room *w)
{
	uint64_t per_ms = ticks_per_ms(t);
	uint64_t bound = (uint64_t)(trace_cfg.wait_ms ? trace_cfg.wait_ms : TRACE_WAIT_MS_DEFAULT) * per_ms;
	uint64_t t0 = hw_rdtsc(), progress = t0, now = t0, room = room_now(w), ticks;
	bool ok = true;

	while (room < w->need) {
		if (now - progress >= bound) {
			give_up(t, now, (now - t0) / per_ms);
			ok = false;
			break;
		}
		stall.ops.pump(stall.ops.ctx, t->b.index);
		hw_pause();
		now = hw_rdtsc();
		if (room_now(w) > room) {
			room = room_now(w);
			progress = now;
		}
	}
	ticks = now - t0;
	t->stall.waits++;
	t->stall.win_waits++;
	t->stall.ticks += ticks;
	t->stall.win_ticks += ticks;
	if (ticks > t->stall.longest)
		t->stall.longest = ticks;
	if (trace_cfg.stall_tsc == TRACE_STALL_TSC_HIDE && t->cpu &&
	    vmx_tsc_hide(t->cpu, ticks) == 0)
		t->stall.hidden += ticks;
	return ok;
}

/* Should t wait at all?  Policy wait, an exporter, a receiver not given up. */
static bool may_wait(const struct trace_cpu *t)
{
	return t && stall.on && trace_cfg.overflow == TV_OVERFLOW_WAIT && !trace_stall_receiver_gone();
}

/* The record rings' hook (ring.h): a STOP ring of a waiting CPU. */
static bool ring_wait(struct tv_trace_ring *r, uint64_t need)
{
	struct trace_cpu *t;
	struct stall_room w = { .ring = r, .need = need };

	if (!stall.on || trace_cfg.overflow != TV_OVERFLOW_WAIT || need > r->data_size)
		return false;
	t = cpu_of_ring(r);
	if (!may_wait(t))
		return false;
	return stall_wait(t, &w);
}

bool trace_stall_bytes(struct trace_bcpu *b, const struct byte_ring *r, size_t need)
{
	struct trace_cpu *t = b ? cpu_of_bcpu(b) : NULL;
	struct stall_room w = { .bytes = r, .need = need };

	if (!r || !need || need > r->size || !may_wait(t))
		return false;
	return stall_wait(t, &w);
}

void trace_stall_set_ops(const struct trace_stall_ops *ops)
{
	memset(&stall.ops, 0, sizeof(stall.ops));
	stall.on = ops && ops->pump && ops->cpus;
	if (stall.on)
		stall.ops = *ops;
	__atomic_store_n(&stall.gone_tsc, 0, __ATOMIC_RELEASE);
	trace_ring_set_wait(stall.on ? ring_wait : NULL);
}

const struct trace_stall_stats *trace_stall_stats_of(const struct trace_bcpu *b)
{
	return b ? &((const struct trace_cpu *)(const void *)b)->stall : NULL;
}

void trace_stall_log(const struct trace_cpu *t)
{
	uint64_t per_us = ticks_per_ms(t) / 1000 ? ticks_per_ms(t) / 1000 : 1;

	if (trace_cfg.overflow != TV_OVERFLOW_WAIT && !t->stall.waits)
		return;
	log_info("trace: cpu %u: window %llu stalled %llu times for %llu us waiting for the exporter; since boot %llu times, %llu us (longest %llu us), receiver given up %llu times, %llu us hidden from the TSC",
		 t->b.index, (unsigned long long)t->b.windows,
		 (unsigned long long)t->stall.win_waits,
		 (unsigned long long)(t->stall.win_ticks / per_us),
		 (unsigned long long)t->stall.waits, (unsigned long long)(t->stall.ticks / per_us),
		 (unsigned long long)(t->stall.longest / per_us),
		 (unsigned long long)t->stall.gave_up,
		 (unsigned long long)(t->stall.hidden / per_us));
}
