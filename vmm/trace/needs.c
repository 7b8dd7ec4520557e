/* SPDX-License-Identifier: MIT */
/*
 * needs.c - see needs.h: what the source's backend declares
 * (vmm/trace/backend.h), plus the engine's own per-CPU memory.
 */
#include <string.h>

#include "vmm/trace/backend.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/needs.h"
#include "vmm/vmx/vmx_defs.h"

void trace_engine_needs(const struct trace_setup *s, struct trace_needs *n)
{
	const struct trace_backend *be = s ? trace_backend_of(s->source) : NULL;

	memset(n, 0, sizeof(*n));
	if (!be)
		return;
	/* The engine's and backend's state, a header page, then ring_kb of records. */
	n->ring_bytes = TRACE_CPU_STATE_BYTES + 4096 + ((uint64_t)s->ring_kb << 10);
	n->entry_ctls = be->entry_ctls;
	n->exit_ctls = be->exit_ctls;
	n->entry_ctls_traced = be->entry_ctls_traced;
	n->exit_ctls_traced = be->exit_ctls_traced;
	if (s->pmi && tv_source_takes_pmi(s->source)) {
		/* the PMI is an NMI through the LVT: it must exit (SDM 3C 25.6.1) */
		n->pin_ctls |= PIN_NMI_EXITING;
		n->entry_ctls |= be->pmi_entry_ctls;
		n->exit_ctls |= be->pmi_exit_ctls;
	}
	n->drain_tick = be->drain_tick;
	n->hidden_bytes = be->hidden_bytes;
	n->hidden_align = be->hidden_bytes ? be->hidden_align : 0;
	n->guest_bytes = be->guest_bytes;
}
