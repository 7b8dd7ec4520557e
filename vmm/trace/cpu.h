/* SPDX-License-Identifier: MIT */
/*
 * cpu.h - the engine's per-CPU state and its internal interface, shared
 * by the engine's files (engine.c: windows; trigger.c; pmi.c; request.c;
 * guest.c: guest state and the entry view; hcall.c).  Not for the VMX
 * core, the exit handlers or the exporters: they see struct trace_cpu as
 * an opaque pointer (struct per_cpu.trace) and use vmm/trace/engine.h.
 *
 * Memory: struct trace_cpu and its backend's state live at the start of
 * the CPU's trace memory (trace_cpu_init), TRACE_CPU_STATE_BYTES before
 * the record ring, in the region the boot code reserved and EPT hides.
 * Not a static array: the boot code runs in the loaded image and the
 * hypervisor in its resident copy, so only the reserved region is the
 * same memory for both.
 */
#ifndef TV_TRACE_CPU_H
#define TV_TRACE_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/trace/backend.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/stall.h"
#include "vmm/vmx/vcpu.h"

struct trace_pmi_stats {
	uint64_t nmis;            /* NMI exits and root NMIs looked at */
	uint64_t ours;            /* ... that were the backend's PMI */
	uint64_t reflected;       /* ... given to the guest */
	uint64_t root_claimed;    /* ours, taken in VMX root (during an exit) */
	uint64_t lvt_retaken;     /* the LVT found changed and written again */
};

struct trace_cpu {
	struct trace_bcpu b;          /* what the backend sees (ring, window, priv) */
	struct per_cpu *cpu;          /* the CPU this state belongs to */
	uint8_t source;               /* trace_cpu_init's: picks the backend of the areas */
	bool boot_started;            /* TV_TRIG_BOOT handled */
	bool trigger_step;            /* stepping one instruction in the trigger page */
	bool kentry_step;             /* kernel_entry: stepping out of the loader's image */
	uint64_t kentry_steps;
	struct trace_cursor exported; /* the exporter's place in the ring */
	/*
	 * pmi (setup.pmi): the LVT performance-counter entry delivers NMIs,
	 * which exit (pin-based NMI exiting); trace_nmi_exit sorts ours
	 * from the guest's.
	 */
	uint8_t pmi_expect;           /* exits left in which an NMI is our PMI (a drain saw it) */
	struct trace_pmi_stats pmi;
	/* Requests from another CPU (trace_request), applied by this one. */
	uint32_t req_pending;         /* TRACE_REQ_* bits, atomic */
	uint64_t req_marker_id;       /* TRACE_REQ_MARKER: written before the bit */
	uint8_t req_label_len;
	char req_label[TRACE_REQ_LABEL_MAX];
	struct trace_filter req_filter; /* TRACE_REQ_FILTER: written before the bit */
	bool filter_set;              /* filter replaces the setup's (a request) */
	struct trace_filter filter;   /* this CPU's filter once filter_set */
	uint64_t req_applied;         /* requests that did what they asked */
	uint64_t req_refused;         /* START while open, STOP while closed, ... */
	struct trace_stall_stats stall; /* overflow = wait: time in VMX root waiting (stall.c) */
};

/*
 * Per CPU: struct trace_cpu, then the backend's state (64-byte aligned),
 * rounded to pages; the ring follows.
 */
#define TRACE_CPU_PRIV_OFF   ((sizeof(struct trace_cpu) + 63) & ~(size_t)63)
_Static_assert(TRACE_CPU_PRIV_OFF + TRACE_BACKEND_STATE_MAX <= TRACE_CPU_STATE_BYTES,
	       "engine and backend state fit TRACE_CPU_STATE_BYTES");

/* engine.c */
extern struct trace_setup trace_cfg;               /* trace_engine_init's copy */
extern const struct trace_backend *trace_be;      /* its backend; NULL: none */
/* The state of cpu, its backend view refreshed (VMX controls, filter); NULL: not traced. */
struct trace_cpu *trace_cpu_sync(struct per_cpu *cpu);
/* A refused record or byte closes the window (TV_TRIG_FULL): overflow = stop only. */
bool trace_full_stops(void);
/* The MTF control stays on for an open window of this CPU (an MTF backend). */
bool trace_mtf_window(const struct trace_cpu *t);
/*
 * trace_wants_mtf - the tracer's own MTF users on cpu: the address
 * trigger's and kernel_entry's steps, an MTF window.  A step of another
 * user (a memory watch, a code snapshot) ends by turning MTF off only
 * when this is false and MTF was off when it began.
 */
bool trace_wants_mtf(const struct per_cpu *cpu);

/*
 * One guest instruction stepped with the monitor trap flag by a tracer
 * part (a memory watch, a self-writing code page).  trace_step_begin: no
 * interrupt between the entry and the instruction (blocking by STI,
 * allowed only with RFLAGS.IF = 1 and neither STI nor MOV SS blocking
 * already there; with TF = 1 it would need the pending debug exceptions'
 * BS bit, SDM 3C 26.3.1.5, so not then), and MTF on.  trace_step_end (at
 * the MTF exit): blocking by STI taken back when the step set it, MTF
 * off when it was off before and neither the tracer (trace_wants_mtf)
 * nor another_step needs it.
 */
struct trace_step {
	bool set_sti;
	bool mtf_was;
};
void trace_step_begin(struct per_cpu *cpu, struct trace_step *s);
void trace_step_end(struct per_cpu *cpu, struct trace_step *s, bool another_step);

/* guest.c: guest state, the entry view */
void trace_guest_reset(void);                      /* MAXPHYADDR, at init */
void trace_guest_set_reader(gmem_read_phys_fn read_phys, void *ctx);
uint64_t trace_guest_ip(void);                     /* CS.base + RIP */
/* Guest-physical bytes through the engine's reader: 0, or -1 (none, or not readable). */
int trace_guest_read_phys(uint64_t gpa, void *buf, size_t len);
uint64_t trace_guest_rsp(void);
void trace_view_begin(struct trace_view *v, struct per_cpu *cpu);
void trace_view_flush(struct trace_view *v);       /* write back what was set */
void trace_set_mtf(struct per_cpu *cpu, bool on);

/* trigger.c */
void trace_trigger_reset(void);
void trace_trigger_before_entry(struct per_cpu *cpu, struct trace_cpu *t, uint32_t exit_reason);
/* The ExitBootServices event (TV_HC_EVENT): TRACE_EOK, TRACE_ENOSYS, TRACE_EINVAL. */
int trace_event_ebs(struct per_cpu *cpu);

/* pmi.c */
int trace_pmi_take_lvt(struct per_cpu *cpu, struct trace_cpu *t);
void trace_pmi_window_reset(struct trace_cpu *t);
void trace_pmi_expect(struct trace_cpu *t);
void trace_pmi_claim_root(struct per_cpu *cpu, struct trace_cpu *t);
void trace_pmi_log(struct trace_cpu *t);

/* request.c */
void trace_apply_requests(struct per_cpu *cpu, struct trace_cpu *t);

/*
 * The exit events the hooks (vmm/trace/hooks.c) hand to the engine:
 * exit_monitor_trap - exit reason 37 (the work is in trace_before_entry).
 * trace_owns_db / exit_debug_exception - #DB exits of this CPU are the
 *   engine's (its backend wants TRACE_EV_DB and set exception bitmap bit
 *   1); one exception exit with vector 1 (ctx->qualification read): a
 *   hardware #DB goes to the backend's on_db; an INT1 (privileged
 *   software exception) is re-injected as it was.
 * trace_nmi_exit - an NMI exit (pmi.c; see trace_engine_wants_nmi_exiting).
 */
enum exit_action exit_monitor_trap(struct exit_ctx *ctx);
bool trace_owns_db(const struct per_cpu *cpu);
enum exit_action exit_debug_exception(struct exit_ctx *ctx);
enum exit_action trace_nmi_exit(struct exit_ctx *ctx);

/* stall.c: the stall counters' line after a window's stop line */
void trace_stall_log(const struct trace_cpu *t);

/* hcall.c */
void trace_hcall_register(bool on);

#endif /* TV_TRACE_CPU_H */
