/* SPDX-License-Identifier: MIT */
/*
 * needs.h - what a trace setup needs from every CPU, from VMX and from
 * the boot code's memory reservation, so that the VMX core and the boot
 * layout never switch on the source themselves.
 *
 * trace_engine_needs(s, n) is pure (no hardware access): the boot code
 * calls it once with the configured setup and
 *  - ORs n->entry_ctls / exit_ctls / pin_ctls into every CPU's wanted
 *    VMX controls, and n->entry_ctls_traced / exit_ctls_traced into those
 *    of the CPUs that trace (have a ring: trace_cpus); the VMX core drops
 *    the ones the CPU does not offer as it does for any wanted control,
 *    and the engine refuses windows that lack one (with the reason);
 *  - arms the drain tick (pt_drain_us) on traced CPUs when n->drain_tick;
 *  - reserves per traced CPU: n->ring_bytes (page aligned, trace_cpu_init),
 *    n->hidden_bytes aligned to n->hidden_align (never mapped for the
 *    guest: trace_cpu_pt_area), n->guest_bytes page aligned (given back
 *    to the guest read/write in EPT at its own address:
 *    trace_cpu_bts_area).  0 bytes: nothing to reserve.
 * A source of TV_SOURCE_NONE (or one without a backend) needs nothing:
 * every field 0.
 */
#ifndef TV_TRACE_NEEDS_H
#define TV_TRACE_NEEDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct trace_setup;

struct trace_needs {
	uint32_t entry_ctls;        /* VM-entry controls, every CPU (ENTRY_LOAD_*) */
	uint32_t exit_ctls;         /* VM-exit controls, every CPU (EXIT_*) */
	uint32_t pin_ctls;          /* pin-based controls, every CPU (PIN_NMI_EXITING) */
	uint32_t entry_ctls_traced; /* VM-entry controls, CPUs with a ring only */
	uint32_t exit_ctls_traced;  /* VM-exit controls, CPUs with a ring only */
	bool drain_tick;            /* an exit every pt_drain_us while a window is open */
	uint64_t ring_bytes;        /* per traced CPU: engine state + ring header + ring_kb */
	uint64_t hidden_bytes;      /* per traced CPU: backend memory the guest never sees */
	uint64_t hidden_align;      /* ... aligned to this (a power of two; 0 if none) */
	uint64_t guest_bytes;       /* per traced CPU: backend memory the guest's EPT maps RW */
	/*
	 * Once, not per CPU: page-pool bytes beyond the boot's own
	 * (HV_POOL_BYTES), for code snapshots (vmm/trace/snap.h,
	 * TRACE_SNAP_POOL_BYTES: its tables and the EPT splits); 0: none.
	 */
	uint64_t pool_bytes;
	/*
	 * What that memory holds, for the log and the capture (the backend's
	 * mem op; 0 / NULL: none): the byte stream ring the exporter takes
	 * (pt: pt_buffer_kb) and the trace hardware's output buffer (pt: the
	 * ToPA regions, pt_topa_kb; bts: the BTS buffer, bts_buffer_kb), in
	 * out_regions regions of out_region_bytes.  *_key: their config keys.
	 */
	uint64_t stream_bytes;
	uint64_t out_bytes;
	uint64_t out_region_bytes;
	uint32_t out_regions;
	const char *stream_key, *out_key;
};

/*
 * trace_engine_needs - fill n for s.  Returns 0, or TRACE_EINVAL when
 * the backend cannot lay out the buffer sizes s asks for (a size not a
 * power of two or out of its bounds, a PT ring smaller than the ToPA
 * output: the config refuses those first, docs/CONFIG.md); n is then
 * zeroed.  The sizes are 64-bit: hundreds of MiB per CPU are fine; what
 * the machine can reserve for all CPUs is the boot code's question.
 */
int trace_engine_needs(const struct trace_setup *s, struct trace_needs *n);

/*
 * trace_needs_describe - one line naming the config keys behind n's
 * per-CPU sizes and their values in force, e.g.
 * "per traced CPU 2369 KiB: trace_buffer_kb = 1024 (+ 12 KiB state),
 *  pt_buffer_kb = 1024, pt_topa_kb = 256 (4 x 64 KiB regions, + table and
 *  alignment)", for the boot's error when the reservation fails and its
 * info line.  Writes at most len bytes (NUL included); returns buf.
 */
char *trace_needs_describe(const struct trace_setup *s, const struct trace_needs *n,
			   char *buf, size_t len);

/*
 * trace_buffers_text - the TV_REC_CONFIG line that tells the capture the
 * buffer sizes in force (docs/CAPTURE.md, "Buffer sizes"):
 * "buffers ring_bytes=R stream_bytes=S output_bytes=O output_regions=N
 * output_region_bytes=G drain_us=D", sizes in bytes, 0 for a buffer the
 * source does not have; R is the record ring's data area
 * (tv_trace_ring.data_size), D the drain tick (0: off or no tick).
 * Returns the length (without the NUL; cut to len - 1).
 */
size_t trace_buffers_text(const struct trace_needs *n, uint64_t ring_data_bytes,
			  uint32_t drain_us, char *buf, size_t len);

#endif /* TV_TRACE_NEEDS_H */
