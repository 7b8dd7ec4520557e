/* SPDX-License-Identifier: MIT */
/*
 * needs.c - see needs.h: what the source's backend declares
 * (vmm/trace/backend.h), plus the engine's own per-CPU memory.
 */
#include <stdio.h>
#include <string.h>

#include "vmm/trace/backend.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/memwatch.h"
#include "vmm/trace/needs.h"
#include "vmm/trace/snap.h"
#include "vmm/vmx/vmx_defs.h"

int trace_engine_needs(const struct trace_setup *s, struct trace_needs *n)
{
	const struct trace_backend *be = s ? trace_backend_of(s->source) : NULL;

	memset(n, 0, sizeof(*n));
	if (!be)
		return 0;
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
	if (be->mem) {
		be->mem(s, n);
		if (!n->hidden_bytes && !n->guest_bytes) {
			/* sizes the backend cannot lay out: reserve nothing, say so */
			memset(n, 0, sizeof(*n));
			return TRACE_EINVAL;
		}
	}
	if (!n->hidden_bytes)
		n->hidden_align = 0;
	if (trace_snap_wanted(s))
		n->pool_bytes = TRACE_SNAP_POOL_BYTES;
	/* memory watches from the config: the open view, the filter, splits (memwatch.h) */
	if (s->source != TV_SOURCE_MTF && (s->nmem_watch || s->mem_filter))
		n->pool_bytes += MEMWATCH_POOL_BYTES;
	return 0;
}

/* bytes as "N KiB" or "N MiB" when whole; "N bytes" otherwise */
static int put_size(char *buf, size_t len, uint64_t b)
{
	if (b && !(b & ((1ull << 20) - 1)))
		return snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
	if (!(b & 1023))
		return snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
	return snprintf(buf, len, "%llu bytes", (unsigned long long)b);
}

/* appends at *at within buf[0..len): snprintf's count, clamped */
static void advance(size_t *at, size_t len, int n)
{
	if (n > 0)
		*at = *at + (size_t)n < len ? *at + (size_t)n : (len ? len - 1 : 0);
}

char *trace_needs_describe(const struct trace_setup *s, const struct trace_needs *n,
			   char *buf, size_t len)
{
	size_t at = 0;
	uint64_t total = n->ring_bytes + n->hidden_bytes + n->guest_bytes;

	if (!len)
		return buf;
	buf[0] = '\0';
	advance(&at, len, snprintf(buf + at, len - at, "per traced CPU "));
	advance(&at, len, put_size(buf + at, len - at, total));
	advance(&at, len, snprintf(buf + at, len - at, ": trace_buffer_kb = %u",
				   s ? s->ring_kb : 0u));
	if (n->stream_key)
		advance(&at, len, snprintf(buf + at, len - at, ", %s = %llu", n->stream_key,
					   (unsigned long long)(n->stream_bytes >> 10)));
	if (n->out_key) {
		advance(&at, len, snprintf(buf + at, len - at, ", %s = %llu", n->out_key,
					   (unsigned long long)(n->out_bytes >> 10)));
		if (n->out_regions > 1) {
			advance(&at, len, snprintf(buf + at, len - at, " (%u x ", n->out_regions));
			advance(&at, len, put_size(buf + at, len - at, n->out_region_bytes));
			advance(&at, len, snprintf(buf + at, len - at, " regions)"));
		}
	}
	return buf;
}

size_t trace_buffers_text(const struct trace_needs *n, uint64_t ring_data_bytes,
			  uint32_t drain_us, char *buf, size_t len)
{
	int k;

	if (!len)
		return 0;
	k = snprintf(buf, len,
		     "buffers ring_bytes=%llu stream_bytes=%llu output_bytes=%llu output_regions=%u output_region_bytes=%llu drain_us=%u",
		     (unsigned long long)ring_data_bytes, (unsigned long long)n->stream_bytes,
		     (unsigned long long)n->out_bytes, n->out_regions,
		     (unsigned long long)n->out_region_bytes, n->drain_tick ? drain_us : 0u);
	if (k < 0)
		return 0;
	return (size_t)k < len ? (size_t)k : len - 1;
}
