/* SPDX-License-Identifier: MIT */
/*
 * needs.c - see needs.h.
 */
#include <string.h>

#include "vmm/trace/engine.h"
#include "vmm/trace/needs.h"
#include "vmm/vmx/vmx_defs.h"

void trace_engine_needs(const struct trace_setup *s, struct trace_needs *n)
{
	memset(n, 0, sizeof(*n));
	if (!s || s->source == TV_SOURCE_NONE)
		return;
	/* A header page, then ring_kb of record data (a power of two). */
	n->ring_bytes = ((uint64_t)s->ring_kb << 10) + 4096;
	switch (s->source) {
	case TV_SOURCE_BTF:
		/* arch LBR: IA32_LBR_CTL loaded on entry, cleared on exit */
		n->entry_ctls |= ENTRY_LOAD_LBR_CTL;
		n->exit_ctls |= EXIT_CLEAR_LBR_CTL;
		break;
	case TV_SOURCE_LBR:
		n->entry_ctls |= ENTRY_LOAD_LBR_CTL;
		n->exit_ctls |= EXIT_CLEAR_LBR_CTL;
		if (s->pmi) {
			/* the tracer's counter counts guest branches only */
			n->entry_ctls |= ENTRY_LOAD_PERF_GLOBAL_CTRL;
			n->exit_ctls |= EXIT_LOAD_PERF_GLOBAL_CTRL;
			n->pin_ctls |= PIN_NMI_EXITING;
		}
		break;
	case TV_SOURCE_BTS:
		if (s->pmi)
			n->pin_ctls |= PIN_NMI_EXITING;
		n->guest_bytes = TRACE_BTS_AREA_BYTES;
		break;
	case TV_SOURCE_PT:
		/* TraceEn loaded on entry, cleared on exit: PT runs in non-root only */
		n->entry_ctls_traced |= ENTRY_LOAD_RTIT_CTL;
		n->exit_ctls_traced |= EXIT_CLEAR_RTIT_CTL;
		if (s->pmi)
			n->pin_ctls |= PIN_NMI_EXITING;
		n->drain_tick = true;
		n->hidden_bytes = TRACE_PT_AREA_BYTES;
		n->hidden_align = TRACE_PT_REGION_BYTES;
		break;
	default:
		break;
	}
}
