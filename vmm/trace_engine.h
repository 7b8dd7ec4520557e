/* SPDX-License-Identifier: MIT */
/*
 * trace_engine.h - tracing in the running hypervisor: one record ring per
 * CPU in reserved memory, start/stop/marker from hypercalls and triggers,
 * and the backend's work on every VM exit.
 *
 * The engine is the glue between the VMX layer and the backends: it reads
 * guest state from the VMCS, sets the controls a backend needs, writes
 * START/STOP/MARKER sideband records and hands finished windows to the
 * exporter.  Backends keep their logic pure (vmm/trace_mtf.h,
 * vmm/trace_btf.h, vmm/trace_lbr.h).
 *
 * Backends driven end to end (docs/BACKENDS-MTF.md, docs/BACKENDS-LBR.md):
 *  - mtf: the monitor trap flag while a window is open; every exit of the
 *    window is one observed instruction (trace_before_entry).
 *  - btf: RFLAGS.TF with IA32_DEBUGCTL.BTF|LBR in GUEST_IA32_DEBUGCTL,
 *    armed by btf_prepare_entry before every VM entry; #DB intercepted
 *    (exception bitmap bit 1, from the first window on, for good); each
 *    #DB exit goes to exit_debug_exception: one TV_REC_BRANCH from the
 *    LBR top (MSR_LASTBRANCH_TOS and its FROM/TO, which a VM exit does not
 *    clear) to the guest's RIP, or a #DB reflected to the guest.
 *  - lbr (legacy stack only): DEBUGCTL.LBR in GUEST_IA32_DEBUGCTL and the
 *    filter in MSR_LBR_SELECT while a window is open; the stack is
 *    drained (lbr_read, TV_REC_LBR) on every VM exit of the window and at
 *    its stop.  No PMI is used: more than depth branches between two
 *    exits lose the older ones, which the drain flags (TV_BRF_LBR_FULL on
 *    the oldest record of a full read) and counts (the stop line's "full
 *    reads").  Architectural LBR is refused (TV_HC_ENOSYS, logged).
 * For btf and lbr the guest's IA32_DEBUGCTL bits the backend owns
 * (LBR, FREEZE_LBRS_ON_PMI, and BTF for btf: docs/TRACE-MSR-POLICY.md)
 * are the engine's in the VMCS on every entry, windows open or not; the
 * guest's own bits in the field are kept (vmm/exit_msr.c merges them).
 * BTS and PT have their logic and unit vectors in vmm/trace_<name>.c and
 * are refused here with TV_HC_ENOSYS until they are wired in.
 *
 * Concurrency: each CPU only ever touches its own struct trace_cpu and
 * ring (in VMX root, on its own exits); the setup is written once at boot.
 */
#ifndef TV_TRACE_ENGINE_H
#define TV_TRACE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/guest_mem.h"
#include "vmm/trace.h"
#include "vmm/trace_btf.h"
#include "vmm/trace_lbr.h"
#include "vmm/trace_mtf.h"

struct per_cpu;

#define TRACE_REQ_LABEL_MAX 16       /* = TV_HC_LABEL_LEN (vmm/hypercall.h) */
struct exit_ctx;
struct ept;
struct page_pool;

/* What to trace, from the configuration; the same for every CPU. */
struct trace_setup {
	uint8_t source;           /* enum tv_source; TV_SOURCE_NONE = no tracing */
	uint8_t overflow;         /* enum tv_overflow */
	uint8_t start;            /* TV_TRIG_BOOT, TV_TRIG_HYPERCALL or TV_TRIG_ADDRESS */
	uint8_t reserved;
	uint32_t ring_kb;         /* per CPU */
	uint64_t stop_after;      /* branch records per window, 0 = no limit */
	uint64_t start_addr;      /* TV_TRIG_ADDRESS: guest-physical address */
	struct trace_filter filter;
};

/* Per-CPU engine state, inside struct per_cpu. */
struct trace_cpu {
	struct tv_trace_ring *ring;   /* NULL: this CPU does not trace */
	bool active;                  /* a window is open */
	bool boot_started;            /* TV_TRIG_BOOT handled */
	uint64_t window_branches;     /* branch records since START */
	uint64_t windows;             /* START records written */
	bool trigger_step;            /* stepping one instruction in the trigger page */
	struct trace_cursor exported; /* the exporter's place in the ring */
	struct mtf_state mtf;
	/* btf and lbr */
	bool lbr_probed;              /* lbr_probe ran on this CPU */
	bool db_intercepted;          /* exception bitmap bit 1 set */
	struct lbr_caps lbr_caps;
	struct btf_state btf;         /* btf: TF/BTF arming, #DB policy */
	struct lbr_state lbr;         /* lbr: the drains; btf: the stack's top */
	/* Requests from another CPU (trace_request), applied by this one. */
	uint32_t req_pending;         /* TRACE_REQ_* bits, atomic */
	uint64_t req_marker_id;       /* TRACE_REQ_MARKER: written before the bit */
	uint8_t req_label_len;
	char req_label[TRACE_REQ_LABEL_MAX];
	uint64_t req_applied;         /* requests that did what they asked */
	uint64_t req_refused;         /* START while open, STOP while closed, ... */
};

/*
 * Requests one CPU makes of another: the receiver's CONTROL messages
 * (docs/PROTOCOL.md) arrive on the network's CPU but open, close or mark
 * any CPU's window.  trace_request only sets bits (and, for a marker, the
 * label) in the target's struct trace_cpu; the target applies them itself
 * in trace_before_entry, before its next VM entry, so every ring still
 * has exactly one writer.  A CPU that does not exit applies them at its
 * next timer exit (heartbeat_s, or poll_us on the network's CPU).  START
 * cancels a STOP not yet applied and the other way round; windows opened
 * or closed this way carry TV_TRIG_RECEIVER.
 */
#define TRACE_REQ_START   (1u << 0)
#define TRACE_REQ_STOP    (1u << 1)
#define TRACE_REQ_MARKER  (1u << 2)

#define TRACE_REQ_OK      0
#define TRACE_REQ_ENOSYS  (-1)   /* this CPU does not trace (no ring, no source) */
#define TRACE_REQ_EBUSY   (-2)   /* a marker for this CPU is still pending */
#define TRACE_REQ_EINVAL  (-3)   /* no request bit, or an unknown one */

/*
 * trace_request - ask cpu to do req (one TRACE_REQ_* bit) at its next
 * entry; marker_id and label[0..len) for TRACE_REQ_MARKER (len is cut to
 * TRACE_REQ_LABEL_MAX, the hypercall marker's TV_HC_LABEL_LEN).  Safe from any CPU.  Returns TRACE_REQ_OK (queued)
 * or a TRACE_REQ_E* code.
 */
int trace_request(struct per_cpu *cpu, uint32_t req, uint64_t marker_id,
		  const char *label, size_t len);

/*
 * Called at the end of a window (STOP written) with the CPU's ring, from
 * VMX root on that CPU: the exporter (serial today, network later).
 */
typedef void (*trace_window_fn)(struct per_cpu *cpu);

/*
 * trace_engine_init - adopt setup, register the hypercall hooks (when a
 * source is set), and read guest-physical memory through read_phys
 * (NULL: guest memory cannot be read, every MTF instruction counts as a
 * decode error).  on_window may be NULL.
 */
void trace_engine_init(const struct trace_setup *setup, gmem_read_phys_fn read_phys,
		       void *read_ctx, trace_window_fn on_window);

/* The setup in effect (what trace_engine_init was given). */
const struct trace_setup *trace_engine_setup(void);

/*
 * trace_cpu_init - make mem[0..bytes) the CPU's ring (boot, before the CPU
 * launches).  Returns 0 or a TRACE_ERR_* code (TRACE_ERR_TOO_SMALL, ...).
 */
int trace_cpu_init(struct trace_cpu *t, void *mem, size_t bytes, uint32_t cpu_index,
		   uint32_t apic_id, enum tv_source src, enum tv_overflow policy,
		   uint64_t tsc_hz, uint64_t now_tsc);

/*
 * trace_start / trace_stop - open or close this CPU's window (VMX root,
 * current VMCS = the CPU's).  Return TV_HC_OK, TV_HC_ENOSYS (no ring; mtf
 * without the MTF control; btf/lbr without a usable legacy LBR stack or
 * without the load/save debug controls; a backend not wired in),
 * TV_HC_EBUSY (start while tracing, stop while not; btf: start while the
 * guest single-steps itself, RFLAGS.TF set).  A stop drains the LBR
 * stack first (lbr) and logs the window's counts.
 */
int trace_start(struct per_cpu *cpu, enum tv_trigger why);
int trace_stop(struct per_cpu *cpu, enum tv_trigger why);

/*
 * trace_before_entry - the last thing before VMRESUME: the boot trigger,
 * then the backend's per-exit work: mtf records the transfer since the
 * last exit; btf arms (or disarms) TF and DEBUGCTL and keeps #DB
 * intercepted; lbr drains the stack and sets DEBUGCTL.LBR.
 */
void trace_before_entry(struct per_cpu *cpu);

/*
 * The address trigger (start = TV_TRIG_ADDRESS): the 4 KiB page holding
 * start_addr is made non-executable in EPT; the first instruction fetch at
 * start_addr itself, on any CPU, opens that CPU's window right there and
 * makes the page executable again for good.  Fetches of other
 * instructions in the page are stepped over one at a time (execute
 * allowed, MTF for one instruction, execute removed again).
 *
 * trace_trigger_arm - take execute away (once, at boot, before any CPU
 *   uses the EPT: it does no INVEPT): 0, or an EPT_ERR_* code (logged).
 * trace_trigger_fetch - from the EPT-violation handler, for a fetch at
 *   gpa: true when it was the trigger's page and has been dealt with.
 */
int trace_trigger_arm(struct ept *ept, struct page_pool *pool);
bool trace_trigger_fetch(struct per_cpu *cpu, uint64_t gpa);

/* Exit reason 37: the work happens in trace_before_entry. */
enum exit_action exit_monitor_trap(struct exit_ctx *ctx);

/*
 * trace_owns_db - whether #DB exits of this CPU are the engine's (source
 * btf, interception on).  exit_debug_exception - one exception exit with
 * vector 1 (ctx->qualification read): a hardware #DB goes to btf_on_db
 * (a branch record, a stray step swallowed, or a #DB reflected with the
 * guest's DR6); an INT1 (privileged software exception) is re-injected
 * as it was.
 */
bool trace_owns_db(const struct per_cpu *cpu);
enum exit_action exit_debug_exception(struct exit_ctx *ctx);

#endif /* TV_TRACE_ENGINE_H */
