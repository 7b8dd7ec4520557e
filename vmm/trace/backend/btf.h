/* SPDX-License-Identifier: MIT */
/*
 * trace_btf.h - the BTF backend's logic: single-step the guest on
 * branches and record each one.
 *
 * With IA32_DEBUGCTL.BTF (bit 1) and RFLAGS.TF both set, the CPU raises a
 * single-step #DB after the next taken branch instead of after the next
 * instruction (SDM 3B 18.4.3); the #DB is a trap, so the guest's RIP is
 * the branch target, and the branch itself is the newest LBR record (LBR
 * records branches, not the #DB: SDM 3B 18.4.2).  The hypervisor
 * intercepts #DB (exception-bitmap bit 1), so the exception becomes a VM
 * exit with the DR6-style cause bits in the exit qualification (SDM 3C
 * 28.2.1: B3-B0 in 3:0, BLD 11, BD 13, BS 14, RTM 16) and DR6 untouched;
 * the exit also saves the pending-debug-exceptions field as clear (SDM 3C
 * 28.3.4).  btf_on_db turns one such exit into one branch record and an
 * action; btf_prepare_entry sets up TF, DEBUGCTL and the pending-debug
 * field before every VM entry.
 *
 * Policy (docs/BACKENDS-LBR.md):
 *  - every BS #DB while our TF is armed is ours; the guest's own
 *    single-stepping is not supported while tracing (btf_start refuses a
 *    guest that has TF or DEBUGCTL.BTF set);
 *  - hardware breakpoints (B0-B3), general detect (BD) and bus-lock
 *    (BLD) #DBs are the guest's: reflected, with BS stripped when the
 *    single-step part was ours, and RFLAGS.TF cleared so that the frame
 *    the guest's handler sees holds its own TF (0);
 *  - after tracing stops, TF may linger in frames the guest pushed while
 *    it was armed (interrupts, exceptions, SYSCALL's R11); #DB stays
 *    intercepted (btf_intercept_db) and such stray single-steps are
 *    swallowed, TF cleared;
 *  - the guest's DEBUGCTL is shadowed: it reads what it wrote, the VMCS
 *    holds that plus LBR and BTF while tracing;
 *  - PUSHF, interrupt frames and SYSCALL's R11 show TF = 1 to the guest
 *    while tracing: a limitation, not hidden.
 *
 * Pure code: VMCS fields come in and go out through the structs; guest
 * memory only through the fetch callback; records go to a tv_trace_ring.
 *
 * Errors (negative, text from btf_strerror):
 *   BTF_ERR_INVAL     NULL argument
 *   BTF_ERR_BUSY      btf_start while tracing
 *   BTF_ERR_GUEST_TF  btf_start while the guest single-steps itself
 *                     (RFLAGS.TF or its DEBUGCTL.BTF set)
 */
#ifndef TV_TRACE_BTF_H
#define TV_TRACE_BTF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/trace/trace.h"
#include "vmm/trace/backend/lbr.h"

#define BTF_ERR_INVAL     (-1)
#define BTF_ERR_BUSY      (-2)
#define BTF_ERR_GUEST_TF  (-3)

/* Text for a BTF_ERR_* code (or 0); "unknown error" otherwise. */
const char *btf_strerror(int err);

#define BTF_RFLAGS_TF       (1ull << 8)
#define BTF_DEBUGCTL_LBR    (1ull << 0)
#define BTF_DEBUGCTL_BTF    (1ull << 1)
#define BTF_DB_VECTOR       1u             /* #DB; exception-bitmap bit 1 */

/* DR6 and the #DB exit qualification (same positions, SDM 3B 18.2.3, 3C 28.2.1). */
#define BTF_DR6_B0_B3       0xfull
#define BTF_DR6_BLD         (1ull << 11)   /* DR6: active low; qualification: 1 = bus lock */
#define BTF_DR6_BD          (1ull << 13)
#define BTF_DR6_BS          (1ull << 14)
#define BTF_DR6_BT          (1ull << 15)
#define BTF_DR6_RTM         (1ull << 16)   /* DR6: active low; qualification: 1 = in RTM */
#define BTF_DR6_INIT        0xffff0ff0ull  /* DR6 with no condition recorded */
#define BTF_DR7_GD          (1ull << 13)

/* Guest non-register state (SDM 3C 25.4.2). */
#define BTF_PENDING_DBG_BS  (1ull << 14)
#define BTF_INTR_STI        (1u << 0)
#define BTF_INTR_MOV_SS     (1u << 1)
#define BTF_ACTIVITY_HLT    1u

/* Read up to len bytes of guest memory at a linear address; return the count. */
typedef size_t (*btf_fetch_fn)(void *ctx, uint64_t linear, uint8_t *buf, size_t len);

struct btf_stats {
	uint64_t db_exits;        /* btf_on_db calls */
	uint64_t steps;           /* branch steps that were ours */
	uint64_t recorded;        /* branch records written */
	uint64_t filtered;        /* steps the filter dropped */
	uint64_t dropped;         /* the ring refused (STOP policy, full) */
	uint64_t from_unknown;    /* the LBR top did not end at RIP: from recorded as 0 */
	uint64_t decode_errors;   /* the branch instruction could not be read or decoded */
	uint64_t reflected;       /* #DBs handed to the guest */
	uint64_t stray;           /* BS #DBs from a lingering TF, swallowed */
};

/* One CPU's BTF state.  btf_init before use. */
struct btf_state {
	bool tracing;             /* a window is open */
	bool tf_armed;            /* we set RFLAGS.TF for the current guest run */
	bool ever_armed;          /* TF may linger in guest frames: keep #DB intercepted */
	bool reflect_pending;     /* the next entry injects a reflected #DB: do not arm */
	uint64_t guest_debugctl;  /* the guest's own IA32_DEBUGCTL (shadow) */
	struct btf_stats stats;
};

/* btf_init - not tracing; the guest's DEBUGCTL is guest_debugctl. */
void btf_init(struct btf_state *s, uint64_t guest_debugctl);

/*
 * btf_start - open a window; TF is armed at the next btf_prepare_entry.
 * guest_rflags is the guest's RFLAGS now.
 * Errors: BTF_ERR_INVAL, BTF_ERR_BUSY, BTF_ERR_GUEST_TF.
 */
int btf_start(struct btf_state *s, uint64_t guest_rflags);

/* btf_stop - close the window; TF is disarmed at the next btf_prepare_entry. */
void btf_stop(struct btf_state *s);

/* btf_intercept_db - whether #DB must be in the exception bitmap. */
bool btf_intercept_db(const struct btf_state *s);

/* The guest's DEBUGCTL accesses (the MSR exit handler calls these). */
uint64_t btf_debugctl_read(const struct btf_state *s);
void btf_debugctl_write(struct btf_state *s, uint64_t value);

/* VMCS fields around one VM entry. */
struct btf_entry {
	uint64_t rflags;          /* in: GUEST_RFLAGS; out: write back */
	uint64_t debugctl;        /* out: GUEST_IA32_DEBUGCTL */
	uint64_t pending_dbg;     /* in/out: GUEST_PENDING_DBG_EXCEPTIONS */
	uint32_t interruptibility; /* in: GUEST_INTERRUPTIBILITY */
	uint32_t activity;        /* in: GUEST_ACTIVITY_STATE */
};

/*
 * btf_prepare_entry - the last thing before VM entry.  Tracing: TF set
 * (unless a reflected #DB is being injected: its frame must hold the
 * guest's TF), DEBUGCTL = shadow | BTF | LBR.  Not tracing: a TF we
 * armed is cleared, DEBUGCTL = shadow.  Then the VM-entry check of SDM
 * 3C 27.3.1.5 is met: with STI or MOV-SS blocking or in HLT, pending BS
 * must be 1 exactly when TF = 1 and BTF = 0.
 */
void btf_prepare_entry(struct btf_state *s, struct btf_entry *e);

/* One #DB VM exit. */
struct btf_db {
	uint64_t qual;            /* exit qualification */
	uint64_t dr6;             /* the live DR6 (VMX does not switch it: the guest's) */
	uint64_t rip;             /* GUEST_RIP: the branch target for a branch step */
	uint64_t cs_base;         /* added to rip outside 64-bit mode */
	uint64_t rflags;          /* GUEST_RFLAGS */
	uint64_t cr3;
	uint8_t cpl;
	uint8_t mode;             /* enum x86_mode (16/32/64), to decode the branch */
	bool lbr_valid;           /* lbr_from/lbr_to are the newest LBR record */
	uint64_t lbr_from, lbr_to;
};

enum btf_action {
	BTF_RESUME = 0,           /* resume the guest (after btf_prepare_entry) */
	BTF_REFLECT = 1,          /* inject #DB (vector 1, hardware exception, no error
				   * code) with DR6 = result.dr6 loaded first */
};

struct btf_db_result {
	enum btf_action action;
	uint64_t rflags;          /* GUEST_RFLAGS to write back */
	uint64_t dr6;             /* BTF_REFLECT: what the guest's handler reads in DR6 */
	bool clear_dr7_gd;        /* BTF_REFLECT with BD: clear GUEST_DR7.GD as delivery would */
	bool recorded;            /* a branch record was written */
};

/*
 * btf_guest_dr6 - the DR6 a #DB with exit qualification qual leaves, from
 * the DR6 before it (cur): B3-B0 replaced, BD/BS added (never cleared, as
 * the CPU does), BLD and RTM active low, reserved bits at their fixed
 * values.  strip_bs drops BS from qual first.
 */
uint64_t btf_guest_dr6(uint64_t cur, uint64_t qual, bool strip_bs);

/*
 * btf_on_db - handle one #DB exit.  A branch step of ours is recorded as
 * a TV_REC_BRANCH from the LBR top's `from` to the guest's linear RIP
 * (from 0 when the LBR top does not end there), its kind decoded from
 * the instruction at `from` when fetch is given, and filtered by f (CPL
 * after the branch, CR3, IP ranges; NULL: all).  out says what to do.
 * Returns 0, or BTF_ERR_INVAL (out untouched).  A full ring counts in
 * stats.dropped and still returns 0.
 */
int btf_on_db(struct btf_state *s, struct tv_trace_ring *ring, const struct trace_filter *f,
	      const struct btf_db *in, btf_fetch_fn fetch, void *fetch_ctx,
	      struct btf_db_result *out);

/*
 * The unit (trace_backend_BTF, vmm/trace/backend.h): RFLAGS.TF with
 * IA32_DEBUGCTL.BTF|LBR in GUEST_IA32_DEBUGCTL, armed by
 * btf_prepare_entry before every VM entry; #DB intercepted (exception
 * bitmap bit 1, from the first window on, for good); each #DB exit is one
 * TV_REC_BRANCH from the LBR top (which a VM exit does not clear) to the
 * guest's RIP, or a #DB reflected to the guest.  Per-CPU state: the LBR
 * unit's (first: the stack's top) and the BTF state.
 */
struct btf_unit {
	struct lbr_unit lbr;      /* first: lbr_unit(b) works on it */
	struct btf_state btf;     /* TF/BTF arming, #DB policy */
};
struct trace_bcpu;
struct btf_unit *btf_unit(struct trace_bcpu *b);

#endif /* TV_TRACE_BTF_H */
