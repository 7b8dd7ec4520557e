/* SPDX-License-Identifier: MIT */
/*
 * backend.h - the trace-backend interface: one ops table per trace unit
 * (mtf, btf, lbr, bts, pt: vmm/trace/backend/), in the spirit of perf's
 * auxtrace backends and Jailhouse's units.  The engine (window lifecycle,
 * triggers, PMI, requests: vmm/trace/engine.c and its neighbours) calls a
 * backend only through its struct trace_backend, found once from the
 * configured source (trace_backend_of).
 *
 * A backend never sees struct per_cpu, the VMCS or an exit handler:
 *  - struct trace_bcpu is what it sees of one CPU (its ring, filter,
 *    window counters, the VMX controls in force, its own per-CPU state
 *    `priv`, the memory the boot code reserved for it);
 *  - struct trace_view is the VM-entry state it may read and change
 *    (DEBUGCTL, RFLAGS.TF, pending debug exceptions, RTIT_CTL, LBR_CTL,
 *    PERF_GLOBAL_CTRL, the exception bitmap, DR7, the MTF control): the
 *    engine reads a field from the VMCS the first time the backend asks
 *    (trace_view_get), and writes back what the backend set
 *    (trace_view_set) when the op returns, so the VMCS is touched
 *    exactly where the backend's logic says;
 *  - guest state it reads through the engine's services below
 *    (trace_guest_*), hardware through vmm/hw/hw.h.
 *
 * Adding a backend: one file under vmm/trace/backend/ defining
 * `const struct trace_backend trace_backend_<ID>`, one line in
 * TV_SOURCE_LIST (vmm/trace/format.h), and its tests.  The table
 * (vmm/trace/backend.c) is generated from the list: a source without a
 * backend does not link.
 */
#ifndef TV_TRACE_BACKEND_H
#define TV_TRACE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/lib/guest_mem.h"
#include "vmm/trace/trace.h"

/* --- the entry view -------------------------------------------------------- */

enum trace_view_field {
	TRACE_VIEW_DEBUGCTL = 0,     /* GUEST_IA32_DEBUGCTL */
	TRACE_VIEW_RFLAGS,           /* GUEST_RFLAGS (TF) */
	TRACE_VIEW_PENDING_DBG,      /* GUEST_PENDING_DBG_EXCEPTIONS */
	TRACE_VIEW_INTERRUPTIBILITY, /* GUEST_INTERRUPTIBILITY (read only) */
	TRACE_VIEW_ACTIVITY,         /* GUEST_ACTIVITY_STATE (read only) */
	TRACE_VIEW_RTIT_CTL,         /* GUEST_IA32_RTIT_CTL */
	TRACE_VIEW_LBR_CTL,          /* GUEST_IA32_LBR_CTL */
	TRACE_VIEW_PERF_GLOBAL_CTRL, /* GUEST_IA32_PERF_GLOBAL_CTRL */
	TRACE_VIEW_EXC_BITMAP,       /* the exception bitmap */
	TRACE_VIEW_DR7,              /* GUEST_DR7 */
	TRACE_VIEW_MTF,              /* the monitor-trap-flag control: 0 or 1 */
	TRACE_VIEW_FIELDS
};

/*
 * One op's view of the VM-entry state.  ctx is the engine's (the CPU);
 * loaded/dirty are bit masks of enum trace_view_field.  A backend uses
 * only trace_view_get/trace_view_set; `reflect_db` asks the engine to
 * inject a #DB into the guest (a #DB exit that was the guest's).
 */
struct trace_view {
	void *ctx;
	uint32_t loaded;
	uint32_t dirty;
	uint64_t val[TRACE_VIEW_FIELDS];
	bool reflect_db;
};

/* The field's value (read from the VMCS on first use in this view). */
uint64_t trace_view_get(struct trace_view *v, enum trace_view_field f);
/* Set the field; the engine writes it when the op returns. */
void trace_view_set(struct trace_view *v, enum trace_view_field f, uint64_t value);

/* --- one CPU as a backend sees it ------------------------------------------ */

struct trace_setup;
struct trace_caps;
struct trace_needs;
struct byte_ring;

struct trace_bcpu {
	void *priv;                       /* the backend's per-CPU state (state_bytes, zeroed) */
	struct tv_trace_ring *ring;
	const struct trace_setup *setup;  /* the configuration, same on every CPU */
	const struct trace_filter *filter; /* this CPU's: the setup's or a request's */
	uint32_t index;                   /* CPU index, for the log */
	/* the VMX controls as written in this CPU's VMCS (refreshed before each op) */
	uint32_t entry_ctls, exit_ctls, pin_ctls;
	uint32_t proc_allowed1;           /* IA32_VMX_PROCBASED_CTLS allowed-1 bits */
	bool waiting_sipi;                /* the CPU waits for SIPI: it runs nothing */
	/* the window */
	bool active;                      /* open */
	uint64_t windows;                 /* START records written (this one included once open) */
	uint64_t window_branches;         /* branch records since START */
	bool db_intercepted;              /* exception bitmap bit 1 set, for good */
	bool pmi_lvt_held;                /* pmi: the LVT delivers NMIs for us */
	/* memory the boot code reserved (struct trace_needs) */
	uint8_t *hidden_mem;              /* hidden_bytes; NULL: none */
	uint64_t hidden_pa;
	uint8_t *guest_mem;               /* guest_bytes; NULL: none */
	uint64_t guest_lin;               /* its guest-linear address */
	/* the engine's general-purpose counter (trace_pmc_arm) */
	bool pmc_on;
	uint32_t pmc_idx;
	uint32_t pmc_period;
};

/* What drain, pmi and on_db tell the engine (bit mask). */
#define TRACE_DO_STOP_FULL  (1u << 0)  /* the ring refused records: stop, TV_TRIG_FULL */
#define TRACE_DO_LIMIT      (1u << 1)  /* check stop_after (stop, TV_TRIG_LIMIT) */
#define TRACE_DO_PMI_SEEN   (1u << 2)  /* our PMI condition was drained: its NMI is ours */
#define TRACE_DO_PMI_OURS   (1u << 3)  /* pmi: this NMI was ours */

/* Exit events a backend wants (trace_backend.events). */
#define TRACE_EV_DB   (1u << 0)   /* #DB exits (on_db) once it intercepts #DB */
#define TRACE_EV_MTF  (1u << 1)   /* MTF exits: the control stays on while a window is open */

/*
 * IA32_PERF_GLOBAL_STATUS bits that are the guest's counters (GP 0-31,
 * fixed 32-47, PERF_METRICS 48): a PMI that shows one of them is the
 * guest's as well.  55 (ToPA), 58 (LBR_Frz) and 62 (OvfBuffer) are the
 * backends' (docs/TRACE-MSR-POLICY.md); 63 (CondChgd) raises no PMI.
 */
#define TRACE_PMI_GUEST_STATUS 0x0001ffffffffffffull

struct trace_backend {
	const char *name;
	uint8_t source;                 /* enum tv_source */
	uint32_t events;                /* TRACE_EV_* */
	uint64_t debugctl_owned;        /* IA32_DEBUGCTL bits that are never the guest's */
	uint32_t msr_owned;             /* TRACE_OWN_* (vmm/trace/msr_policy.h): the MSRs it owns */
	size_t state_bytes;             /* priv, per CPU (at most TRACE_BACKEND_STATE_MAX) */
	/* needs (trace_engine_needs): VMX controls, memory, the drain tick */
	uint32_t entry_ctls, exit_ctls;               /* every CPU */
	uint32_t entry_ctls_traced, exit_ctls_traced; /* CPUs with a ring */
	uint32_t pmi_entry_ctls, pmi_exit_ctls;       /* also, with pmi = on (TV_SOURCE_LIST's pmi column) */
	bool drain_tick;                /* an exit every pt_drain_us while open */
	/*
	 * Per-CPU memory for setup s, sized from its buffer sizes (struct
	 * trace_setup): sets n->hidden_bytes (never the guest's) with
	 * n->hidden_align, and n->guest_bytes (page aligned, guest RW at its
	 * address); leaves them 0 for sizes it cannot lay out (then
	 * trace_engine_needs fails).  NULL: the backend needs no memory.
	 */
	void (*mem)(const struct trace_setup *s, struct trace_needs *n);

	/*
	 * Boot, before any CPU is virtualized: can this machine (the boot
	 * CPU's struct trace_caps, vmm/trace/caps.h) run the unit at all?
	 * NULL: VMX is enough.  trace_choose refuses an explicit source that
	 * cannot, naming what is missing (trace_caps_missing).
	 */
	bool (*caps_ok)(const struct trace_caps *tc);
	/* Boot: the areas above were given (b->hidden_mem / guest_mem set). 0 or TRACE_EINVAL. */
	int (*area)(struct trace_bcpu *b);
	/* Can this CPU open a window?  The reason is logged once (mandatory). */
	bool (*usable)(struct trace_bcpu *b);
	/* Open a window (before b->active is set): 0, TRACE_ENOSYS or TRACE_EBUSY (mandatory). */
	int (*open)(struct trace_bcpu *b, struct trace_view *v);
	/* Close it (b->active already false): the last drain, the unit off (mandatory). */
	void (*close)(struct trace_bcpu *b, struct trace_view *v);
	/* At every exit of an open window, before the entry: TRACE_DO_*. */
	uint32_t (*drain)(struct trace_bcpu *b, struct trace_view *v);
	/* Before every entry, window open or not (after drain and a stop): TRACE_DO_PMI_SEEN or 0. */
	uint32_t (*prepare)(struct trace_bcpu *b, struct trace_view *v);
	/* An NMI exit of an open window (pmi): TRACE_DO_PMI_OURS|STOP_FULL; *guest: the guest's status bits. */
	uint32_t (*pmi_check)(struct trace_bcpu *b, struct trace_view *v, uint64_t *guest);
	/* A hardware #DB exit (events & TRACE_EV_DB): TRACE_DO_*; v->reflect_db to give it to the guest. */
	uint32_t (*on_db)(struct trace_bcpu *b, struct trace_view *v, uint64_t qual);
	/* The window's stop line (mandatory). */
	void (*log_stop)(struct trace_bcpu *b, const char *trig);
	/* The raw byte stream the exporter takes (pt); NULL: none. */
	struct byte_ring *(*stream)(struct trace_bcpu *b);
};

/* Room for a backend's per-CPU state (checked by test_trace_backend). */
#define TRACE_BACKEND_STATE_MAX 6144u

/* The backend of source s; NULL for TV_SOURCE_NONE or an unknown value. */
const struct trace_backend *trace_backend_of(unsigned s);

/* --- engine services for backends ------------------------------------------ */

/* The guest's state at this exit (read from the VMCS). */
struct trace_guest {
	uint64_t ip;          /* RIP (32 bits outside 64-bit mode) */
	uint64_t cs_base;
	uint64_t cr3;
	uint8_t cpl;
	uint8_t mode;         /* 16, 32 or 64 */
	uint64_t tsc;
};
void trace_guest_read(struct trace_guest *g);
uint64_t trace_guest_cr0(void);
uint64_t trace_guest_cr3(void);
/* The guest's paging (for gmem_walk / trace_guest_fetch). */
void trace_guest_mem(struct gmem_ctx *g);
/* Guest-linear bytes through g: the count read (stops at the first unreadable page). */
size_t trace_guest_fetch(void *g, uint64_t linear, uint8_t *buf, size_t len);

/*
 * The general-purpose counter (lbr with pmi): the last GP counter counts
 * "branch instructions retired" from -period with USR|OS|INT; its enable
 * is in GUEST_IA32_PERF_GLOBAL_CTRL (v), so it counts guest branches only.
 * trace_pmc_arm: 0, or TRACE_ENOSYS with the reason logged (depth: the
 * period's bound and default).  trace_pmc_reload: from -period again.
 */
int trace_pmc_arm(struct trace_bcpu *b, struct trace_view *v, uint32_t depth);
void trace_pmc_disarm(struct trace_bcpu *b, struct trace_view *v);
void trace_pmc_reload(struct trace_bcpu *b);

#endif /* TV_TRACE_BACKEND_H */
