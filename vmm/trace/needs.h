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
};

void trace_engine_needs(const struct trace_setup *s, struct trace_needs *n);

#endif /* TV_TRACE_NEEDS_H */
