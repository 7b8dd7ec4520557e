/* SPDX-License-Identifier: MIT */
/*
 * memwatch.h - memory-access tracing: every guest access to watched
 * guest-physical memory becomes a TV_REC_MEM (vmm/trace/format.h) in the
 * accessing CPU's ring, with the instruction that made it.  The user's
 * view, costs and what only hardware shows: docs/MEMTRACE.md.
 *
 * Mechanism:
 *  - The guest's EPT (the "restricted view", every CPU's EPTP) takes
 *    from each watched 4 KiB page the rights its watches name: mode r or
 *    rw takes R and W (and X unless the CPU supports execute-only
 *    translations, SDM 3C 29.3.3.1: X without R is otherwise a
 *    misconfiguration), mode w takes W.  Large leaves are split.
 *  - A second EPT root, the "open view", shares every table with the
 *    restricted view except the paths to watched pages, whose private
 *    copies give those leaves RWX.  It is resynchronised from the
 *    restricted view (under ept_edit_lock) at a step's start whenever
 *    any EPT edit happened since (struct ept.edits), so code snapshots
 *    and other editors of the restricted view are never undone.
 *  - At a violation on a watched page the instruction at guest RIP is
 *    decoded (vmm/lib/x86_access.h), each memory operand's linear and
 *    guest-physical address computed, the records prepared (old values
 *    read), and the CPU alone runs the one instruction in the open view:
 *    its EPTP is switched, the monitor trap flag set, interrupts blocked
 *    for the step ("blocking by STI" when RFLAGS.IF = 1, no blocking
 *    present and RFLAGS.TF = 0: SDM 3C 26.3.1.5).  Every other CPU stays
 *    in the restricted view, so none of their accesses is missed.
 *  - At the MTF exit (memwatch_mtf): the restricted view again, MTF off
 *    unless the tracer wants it, the written values read, the sharing
 *    filter applied, the records appended.
 *
 * Records are written only while the CPU's window is open; a violation
 * with the window closed is stepped and counted (outside_window).
 * Accesses to a watched page outside every watched range (or of a mode
 * not watched) are stepped and counted (collateral), not recorded.
 *
 * Concurrency: the watch table, the page set and the open view change
 * under ept_edit_lock (vmm/exit/exit_ept.h); each CPU's step state is its
 * own.  Steps are serialised machine-wide by a step lock held from the
 * violation to the MTF exit (bounded wait), so an old value read at the
 * violation is what the instruction reads, and records' TSCs and the
 * sharing filter follow the order of the watched accesses.  Arming or removing a watch changes the restricted view: each CPU
 * flushes its EPT translations (INVEPT single-context) before its next
 * entry when struct ept.edits moved since it last did (memwatch_before_
 * entry); a CPU that does not exit meanwhile may use a stale translation
 * until its next exit (docs/MEMTRACE.md).
 */
#ifndef TV_MEMWATCH_H
#define TV_MEMWATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/lib/page_pool.h"
#include "vmm/trace/format.h"
#include "vmm/trace/trace.h"
#include "vmm/vmx/ept.h"
#include "vmm/vmx/vcpu.h"

#define MEMWATCH_MAX_WATCHES  64u    /* ranges (a linear hypercall range may take several) */
#define MEMWATCH_MAX_PAGES    256u   /* distinct watched 4 KiB pages */
#define MEMWATCH_MAX_TABLES   64u    /* the open view's private tables, its root included */
#define MEMWATCH_MAX_CPUS     64u    /* boot/vmx_boot.c brings up at most 64 */
#define MEMWATCH_MAX_OPS      4u     /* records one step carries */
#define MEMWATCH_SHARE_SLOTS  4096u  /* cache lines the sharing filter keeps state for */
/* Pool pages: the open view's tables, the filter's keys and states, splits of the restricted view. */
#define MEMWATCH_POOL_BYTES   ((uint64_t)(MEMWATCH_MAX_TABLES + 2u * MEMWATCH_SHARE_SLOTS * 8u / 4096u + 64u) * 4096u)

/* Errors (negative, the engine's codes: vmm/trace/trace.h) */
/*   TRACE_ENOSYS  not armed (no source, source = mtf, or arming failed) */
/*   TRACE_EINVAL  bad range, mode, id; memory that is not guest RAM or MMIO tracevisor maps */
/*   TRACE_EBUSY   the watch, page or table limits above are reached, or the pool is empty */

/* Counters of one CPU since boot (TV_REC_MEM_STATS carries the first six). */
struct memwatch_stats {
	uint64_t recorded;        /* TV_REC_MEM the ring took */
	uint64_t filtered;        /* left out by mem_filter = sharing */
	uint64_t collateral;      /* steps with no access to a watched range */
	uint64_t steps;           /* single steps in all */
	uint64_t undecoded;       /* instructions not read or not modelled (one UNDECODED record) */
	uint64_t outside_window;  /* violations with this CPU's window closed */
	uint64_t lost;            /* TV_REC_MEM the ring refused (also counted by the ring as LOST) */
	uint64_t unfiltered;      /* logged by the filter for want of state (table full, CPU >= 32) */
	uint64_t walks;           /* violations by the guest's page walk (its tables are watched) */
	uint64_t interrupted;     /* steps that ended elsewhere (an event first, a fault): records dropped */
	uint64_t lock_timeouts;   /* steps taken without the step lock (another CPU's never ended) */
};

/* memwatch_reset - forget everything (tests; trace_engine_init). */
void memwatch_reset(void);

/*
 * memwatch_arm - at boot, before any CPU uses the EPT (trace_trigger_arm
 * calls it): keep ept and pool, make the open view's root, the sharing
 * filter's state (mem_filter = sharing) and arm the config's watches
 * (origin TV_MEMW_FROM_CONFIG, ids 1..n).  Nothing with source = none;
 * refused with source = mtf (MTF is the step).  A watch that cannot be
 * armed is logged and skipped.  Returns 0 or TRACE_ENOSYS/TRACE_EBUSY.
 */
int memwatch_arm(struct ept *ept, struct page_pool *pool, const struct trace_setup *s);

/* memwatch_armed - hypercall watches can be armed. */
bool memwatch_armed(void);

/*
 * memwatch_add - watch guest-physical [lo, hi) with mode (TV_MEMW_MODE_*)
 * under id (1..65535: one id may name several ranges), from origin.  The
 * TV_REC_MEM_WATCH ARM record goes to cpu's ring (cpu may be NULL: no
 * record), with gla/cr3 as given and label[0..label_len).  Returns 0 or
 * an error above.
 */
int memwatch_add(struct per_cpu *cpu, uint32_t id, uint64_t lo, uint64_t hi, unsigned mode,
		 uint8_t origin, uint64_t gla, uint64_t cr3, const char *label, size_t label_len);

/* memwatch_new_id - a fresh id for memwatch_add (never 0). */
uint32_t memwatch_new_id(void);

/*
 * memwatch_remove - remove every range of id; the REMOVE record goes to
 * cpu's ring.  Returns 0 or TRACE_EINVAL (no such id) / TRACE_ENOSYS.
 */
int memwatch_remove(struct per_cpu *cpu, uint32_t id);

/*
 * The hypercalls (vmm/exit/hypercall.h TV_HC_MEM_*): addr, len and mode
 * as the guest passed them (mode bits 1:0 r/w, bit 8 addr is
 * guest-physical, else linear and translated through the guest's page
 * tables now, page by page, one range per physically contiguous run).
 * memwatch_hc_watch returns the id (> 0) or an error; memwatch_hc_label
 * names the memory (LABEL records) without watching it: 0 or an error.
 */
#define MEMWATCH_HC_PHYS (1u << 8)
int memwatch_hc_watch(struct per_cpu *cpu, uint64_t addr, uint64_t len, uint64_t mode,
		      const char *label, size_t label_len);
int memwatch_hc_label(struct per_cpu *cpu, uint64_t addr, uint64_t len, uint64_t mode,
		      const char *label, size_t label_len);

/*
 * memwatch_control - the receiver's CONTROL MEM_WATCH (net/proto.h struct
 * tvp_ctl_mem_watch), on whichever CPU serves it (records go to cpu's
 * ring; cpu may be NULL): op TV_MEMW_ARM watches guest-physical [lo, hi)
 * with mode under a new id (returned, > 0), origin TV_MEMW_FROM_CONTROL;
 * TV_MEMW_REMOVE removes id (0 returned); TV_MEMW_LABEL writes a LABEL
 * record for [lo, hi) (0 returned).  Errors as memwatch_add /
 * memwatch_remove, TRACE_EINVAL for another op.
 */
int memwatch_control(struct per_cpu *cpu, uint8_t op, uint32_t id, uint64_t lo, uint64_t hi,
		     unsigned mode, const char *label, size_t label_len);

/*
 * memwatch_violation - the exit hook (vmm/exit/hooks.h ept_access): an
 * EPT violation at gpa with ctx->qualification.  true when gpa is on a
 * watched page and the exit is dealt with (a step started, or a stale
 * translation flushed); false for any other page.
 */
bool memwatch_violation(struct exit_ctx *ctx, uint64_t gpa);

/* memwatch_mtf - at an MTF exit: true when it ended this CPU's step (records appended). */
bool memwatch_mtf(struct per_cpu *cpu);

/* memwatch_stepping - cpu is inside a step (between the violation and its MTF exit). */
bool memwatch_stepping(const struct per_cpu *cpu);

/* memwatch_before_entry - INVEPT when the restricted view changed since this CPU last flushed. */
void memwatch_before_entry(struct per_cpu *cpu);

/*
 * memwatch_window_start / _stop - the engine's window edges: at a CPU's
 * first window start the config's watches are announced in its ring
 * (ARM records); at every stop a TV_REC_MEM_STATS and, once any watch
 * existed on this boot, the log line "mem: cpu N: recorded ...".
 * Nothing when not armed.
 */
void memwatch_window_start(struct per_cpu *cpu);
void memwatch_window_stop(struct per_cpu *cpu);

/* memwatch_stats_of - cpu's counters (NULL for a CPU beyond MEMWATCH_MAX_CPUS). */
const struct memwatch_stats *memwatch_stats_of(const struct per_cpu *cpu);

/* memwatch_open_eptp - the open view's EPTP (0: none yet); for tests and logs. */
uint64_t memwatch_open_eptp(void);

/*
 * memwatch_rights - the rights mode takes from a page: R|W|X (or R|W with
 * execute-only support, cap = IA32_VMX_EPT_VPID_CAP) for r and rw, W for w.
 */
unsigned memwatch_rights_taken(unsigned mode, uint64_t cap);

#endif /* TV_MEMWATCH_H */
