/* SPDX-License-Identifier: MIT */
/*
 * request.c - requests one CPU makes of another (trace_request,
 * trace_request_filter: the receiver's CONTROL messages), applied by the
 * target itself before its next entry.  See engine.h.
 */
#include <string.h>

#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/poweroff.h"
#include "vmm/vmx/vcpu.h"

_Static_assert(!(TRACE_REQ_POWEROFF & (TRACE_REQ_START | TRACE_REQ_STOP | TRACE_REQ_MARKER |
				       TRACE_REQ_FILTER)), "one bit per request");

/* Every CPU, for the power-off (trace_engine_set_cpus; the resident copy's). */
static struct per_cpu *all_cpus;
static uint32_t all_n;
static trace_pump_fn pump_fn;

int trace_request_filter(struct per_cpu *cpu, const struct trace_filter *f)
{
	struct trace_cpu *t = cpu->trace;

	if (!f || !f->cpl || (f->cpl & ~TRACE_CPL_ALL) || f->nranges > TRACE_MAX_RANGES)
		return TRACE_REQ_EINVAL;
	for (uint32_t i = 0; i < f->nranges; i++)
		if (f->ranges[i].lo > f->ranges[i].hi)
			return TRACE_REQ_EINVAL;
	if (!t || !trace_be)
		return TRACE_REQ_ENOSYS;
	/* The slot is ours to write only while no filter is pending. */
	if (__atomic_load_n(&t->req_pending, __ATOMIC_ACQUIRE) & TRACE_REQ_FILTER)
		return TRACE_REQ_EBUSY;
	t->req_filter = *f;
	__atomic_fetch_or(&t->req_pending, TRACE_REQ_FILTER, __ATOMIC_RELEASE);
	return TRACE_REQ_OK;
}

int trace_request(struct per_cpu *cpu, uint32_t req, uint64_t marker_id,
		  const char *label, size_t len)
{
	struct trace_cpu *t = cpu->trace;

	if (!req || (req & (req - 1)) || (req & ~(TRACE_REQ_START | TRACE_REQ_STOP | TRACE_REQ_MARKER)))
		return TRACE_REQ_EINVAL;
	if (!t || !trace_be)
		return TRACE_REQ_ENOSYS;
	switch (req) {
	case TRACE_REQ_MARKER:
		/* The label is ours to write only while no marker is pending. */
		if (__atomic_load_n(&t->req_pending, __ATOMIC_ACQUIRE) & TRACE_REQ_MARKER)
			return TRACE_REQ_EBUSY;
		if (len > TRACE_REQ_LABEL_MAX)
			len = TRACE_REQ_LABEL_MAX;
		t->req_marker_id = marker_id;
		t->req_label_len = (uint8_t)len;
		if (len)
			memcpy(t->req_label, label, len);
		break;
	case TRACE_REQ_START:
		__atomic_fetch_and(&t->req_pending, ~TRACE_REQ_STOP, __ATOMIC_RELAXED);
		break;
	default:
		__atomic_fetch_and(&t->req_pending, ~TRACE_REQ_START, __ATOMIC_RELAXED);
		break;
	}
	__atomic_fetch_or(&t->req_pending, req, __ATOMIC_RELEASE);
	return TRACE_REQ_OK;
}

/* The requests other CPUs queued for this one (trace_request). */
void trace_apply_requests(struct per_cpu *cpu, struct trace_cpu *t)
{
	uint32_t req = __atomic_load_n(&t->req_pending, __ATOMIC_ACQUIRE);

	if (!req)
		return;
	if (req & TRACE_REQ_FILTER) {
		t->filter = t->req_filter;
		t->filter_set = true;
		__atomic_fetch_and(&t->req_pending, ~TRACE_REQ_FILTER, __ATOMIC_RELEASE);
		t->req_applied++;
	}
	if (req & TRACE_REQ_MARKER) {
		/* Read the label before giving the slot back. */
		uint64_t id = t->req_marker_id;
		uint8_t len = t->req_label_len;
		char label[TRACE_REQ_LABEL_MAX];

		memcpy(label, t->req_label, len);
		__atomic_fetch_and(&t->req_pending, ~TRACE_REQ_MARKER, __ATOMIC_RELEASE);
		/* A dropped marker (STOP policy, ring full) is counted by the ring. */
		trace_append_marker(t->b.ring, hw_rdtsc(), id, label, len);
		t->req_applied++;
	}
	if (req & TRACE_REQ_POWEROFF) {
		/*
		 * The guest powers off: a queued START or STOP no longer
		 * matters.  The bit is cleared only once the window is closed
		 * and handed to the exporter, so that the CPU waiting in
		 * trace_poweroff never sees this one done too early.
		 */
		__atomic_fetch_and(&t->req_pending, ~(TRACE_REQ_START | TRACE_REQ_STOP),
				   __ATOMIC_ACQ_REL);
		if (t->b.active && trace_stop(cpu, TV_TRIG_GUEST_POWEROFF) == TRACE_EOK)
			t->req_applied++;
		__atomic_fetch_and(&t->req_pending, ~TRACE_REQ_POWEROFF, __ATOMIC_RELEASE);
		return;
	}
	req = __atomic_fetch_and(&t->req_pending, ~(TRACE_REQ_START | TRACE_REQ_STOP),
				 __ATOMIC_ACQ_REL) & (TRACE_REQ_START | TRACE_REQ_STOP);
	if (req & TRACE_REQ_START) {
		if (trace_start(cpu, TV_TRIG_RECEIVER) == TRACE_EOK)
			t->req_applied++;
		else
			t->req_refused++;
	} else if (req & TRACE_REQ_STOP) {
		if (trace_stop(cpu, TV_TRIG_RECEIVER) == TRACE_EOK)
			t->req_applied++;
		else
			t->req_refused++;
	}
}


/* --- the guest's power-off ----------------------------------------------- */

void trace_engine_set_cpus(struct per_cpu *cpus, uint32_t n, trace_pump_fn pump)
{
	all_cpus = cpus;
	all_n = cpus ? n : 0;
	pump_fn = pump;
}

/* cpu's window is closed and no power-off request of it is pending. */
static bool poweroff_done(const struct per_cpu *c)
{
	const struct trace_cpu *t = c->trace;

	if (!t)
		return true;
	return !__atomic_load_n(&t->b.active, __ATOMIC_ACQUIRE) &&
	       !(__atomic_load_n(&t->req_pending, __ATOMIC_ACQUIRE) & TRACE_REQ_POWEROFF);
}

/* Any traced CPU's TSC rate (boot gives every ring the same); 0 if none. */
static uint64_t poweroff_tsc_hz(const struct per_cpu *self)
{
	if (self->trace && self->trace->b.ring && self->trace->b.ring->tsc_hz)
		return self->trace->b.ring->tsc_hz;
	for (uint32_t i = 0; i < all_n; i++) {
		const struct trace_cpu *t = all_cpus[i].trace;

		if (t && t->b.ring && t->b.ring->tsc_hz)
			return t->b.ring->tsc_hz;
	}
	return 0;
}

/*
 * Progress towards a finished power-off: windows closed, plus what the
 * exporter has released (record ring and PT stream tails: under wait and
 * stop they move only when the receiver acknowledged).
 */
static uint64_t poweroff_progress(void)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < all_n; i++) {
		struct trace_cpu *t = all_cpus[i].trace;
		struct byte_ring *pt;

		if (!t)
			continue;
		sum += poweroff_done(&all_cpus[i]);
		if (t->b.ring)
			sum += __atomic_load_n(&t->b.ring->tail, __ATOMIC_ACQUIRE);
		pt = trace_cpu_pt_stream(&all_cpus[i]);
		if (pt)
			sum += __atomic_load_n(&pt->tail, __ATOMIC_ACQUIRE);
	}
	return sum;
}

bool trace_poweroff(struct per_cpu *cpu)
{
	/* Without a known TSC rate: as if 4 GHz (longer anywhere slower). */
	uint64_t hz = poweroff_tsc_hz(cpu), t0 = hw_rdtsc(), now = t0, deadline, bound, seen;
	uint32_t wait_ms = trace_cfg.wait_ms ? trace_cfg.wait_ms : TRACE_POWEROFF_WAIT_MS;
	bool closed = false, acked = false;

	if (!trace_be)
		return false;
	bound = (hz ? hz : 4000000000ull) / 1000 * wait_ms;
	deadline = t0 + bound;
	/* The others first: they close while this CPU exports its own window. */
	for (uint32_t i = 0; i < all_n; i++) {
		struct trace_cpu *t = all_cpus[i].trace;

		if (&all_cpus[i] == cpu || !t || !__atomic_load_n(&t->b.active, __ATOMIC_ACQUIRE))
			continue;
		__atomic_fetch_and(&t->req_pending, ~TRACE_REQ_START, __ATOMIC_RELAXED);
		__atomic_fetch_or(&t->req_pending, TRACE_REQ_POWEROFF, __ATOMIC_RELEASE);
	}
	if (trace_cpu_active(cpu))
		trace_stop(cpu, TV_TRIG_GUEST_POWEROFF);   /* its window callback exports it */
	seen = poweroff_progress();
	for (;;) {
		uint64_t p;

		closed = true;
		for (uint32_t i = 0; i < all_n && closed; i++)
			closed = poweroff_done(&all_cpus[i]);
		if (pump_fn)
			acked = pump_fn(cpu);
		else
			acked = true;
		if (closed && acked)
			break;
		if (!pump_fn)
			hw_pause();
		now = hw_rdtsc();
		p = poweroff_progress();
		if (p != seen) {
			seen = p;
			deadline = now + bound;   /* the receiver is alive: keep waiting */
		}
		if ((int64_t)(now - deadline) >= 0)
			break;
	}
	for (uint32_t i = 0; i < all_n; i++) {
		const struct trace_cpu *t = all_cpus[i].trace;

		if (!t)
			continue;
		if (poweroff_done(&all_cpus[i]))
			log_info("trace: cpu %u: power-off: window closed, %llu window(s) in all",
				 all_cpus[i].index, (unsigned long long)t->b.windows);
		else
			log_warn("trace: cpu %u: power-off: window STILL OPEN after %u ms without progress (the CPU did not exit): its last bytes are lost",
				 all_cpus[i].index, wait_ms);
	}
	if (closed && acked)
		log_info("trace: power-off on cpu %u: every window closed, everything acknowledged after %llu ms",
			 cpu->index, (unsigned long long)(hz ? (now - t0) / (hz / 1000 ? hz / 1000 : 1) : 0));
	else
		log_warn("trace: power-off on cpu %u: %s after %u ms without progress (%llu ms in all): the machine goes down anyway",
			 cpu->index, !closed ? "windows still open" : "NOT everything acknowledged by the receiver",
			 wait_ms, (unsigned long long)(hz ? (now - t0) / (hz / 1000 ? hz / 1000 : 1) : 0));
	return closed && acked;
}
