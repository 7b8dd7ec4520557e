/* SPDX-License-Identifier: MIT */
/*
 * request.c - requests one CPU makes of another (trace_request,
 * trace_request_filter: the receiver's CONTROL messages), applied by the
 * target itself before its next entry.  See engine.h.
 */
#include <string.h>

#include "vmm/hw/hw.h"
#include "vmm/trace/cpu.h"
#include "vmm/vmx/vcpu.h"

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

