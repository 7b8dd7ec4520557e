/* SPDX-License-Identifier: MIT */
/*
 * trace_msr.h - what the guest sees of the MSRs tracing uses.
 *
 * The guest (Linux perf, a debugger) must neither switch off nor read the
 * hypervisor's tracing.  Each trace feature the configured backend uses
 * is *owned* by the hypervisor on every CPU for the whole boot (not only
 * while a trace window is open, so the guest never sees a feature change
 * under it):
 *
 *   TRACE_OWN_LBR  LBR and BTF backends: the LBR stack (legacy FROM/TO/
 *                  INFO, TOS, LBR_SELECT; arch IA32_LBR_CTL/DEPTH and the
 *                  IA32_LBR_x_* MSRs), DEBUGCTL.LBR and FREEZE_LBRS_ON_PMI,
 *                  PERF_GLOBAL_STATUS.LBR_FRZ (58)
 *   TRACE_OWN_BTF  BTF backend: DEBUGCTL.BTF
 *   TRACE_OWN_BTS  BTS backend: IA32_DS_AREA, IA32_PEBS_ENABLE (PEBS would
 *                  write through our DS area), DEBUGCTL.TR/BTS/BTINT/
 *                  BTS_OFF_OS/BTS_OFF_USR, PERF_GLOBAL_STATUS.OvfBuffer (62)
 *   TRACE_OWN_PT   PT backend: every IA32_RTIT_* MSR,
 *                  PERF_GLOBAL_STATUS.Trace_ToPA_PMI (55)
 *
 * An owned MSR is shadowed: the guest reads what it last wrote (or the
 * reset value), writes are checked for reserved bits like the hardware
 * does (#GP) and stored, never reaching the hardware.  An MSR with owned
 * *bits* (DEBUGCTL, PERF_GLOBAL_STATUS, PERF_GLOBAL_OVF_CTRL) goes to the
 * hardware for the guest's bits and to the shadow for the owned ones.
 * docs/TRACE-MSR-POLICY.md has the full table with SDM references.
 *
 * Only owned MSRs are intercepted (trace_msr_intercepts()): with no
 * backend, or MTF (which uses no MSR), the guest reaches every one of
 * these MSRs directly, with no exit.
 *
 * Pure code: the caller does the hardware side of TRACE_MSR_PASS.  For
 * IA32_DEBUGCTL "hardware" is the VMCS guest field GUEST_IA32_DEBUGCTL
 * (loaded on VM entry, saved on VM exit: SDM 3C 27.3.1, 28.3.1), for the
 * others RDMSR/WRMSR in VMX root.  The policy returns PASS only after the
 * value passed the reserved-bit check, so a guest WRMSR never raises #GP
 * in VMX root.
 */
#ifndef TV_TRACE_MSR_H
#define TV_TRACE_MSR_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/trace/caps.h"
#include "vmm/trace/format.h"

struct per_cpu;

#define TRACE_OWN_LBR (1u << 0)
#define TRACE_OWN_BTF (1u << 1)
#define TRACE_OWN_BTS (1u << 2)
#define TRACE_OWN_PT  (1u << 3)
/*
 * TRACE_OWN_PMC  lbr with pmi = on: the last general-purpose counter
 *                (IA32_PERFEVTSELx, IA32_PMCx, IA32_A_PMCx), its enable
 *                bit in IA32_PERF_GLOBAL_CTRL (whose hardware side is the
 *                VMCS field GUEST_IA32_PERF_GLOBAL_CTRL, loaded on entry)
 *                and its overflow bit in PERF_GLOBAL_STATUS
 */
#define TRACE_OWN_PMC (1u << 4)

/* Per-CPU slots behind trace_msr_state_of() (CPU index 0..255). */
#define TRACE_MSR_MAX_CPUS 256

/* Errors (negative returns). */
#define TRACE_MSR_EINVAL (-1)

enum trace_msr_action {
	TRACE_MSR_HANDLED = 0,    /* done: a read's value is in *val, a write is absorbed */
	TRACE_MSR_GP = 1,         /* inject #GP(0), RIP stays on the instruction */
	TRACE_MSR_PASS = 2,       /* the hardware does it: see trace_msr_guest_view / _hw_value */
};

struct trace_msr_stats {
	uint64_t reads, writes;   /* intercepted accesses seen by the policy */
	uint64_t gp;              /* answered with #GP */
	uint64_t shadowed;        /* writes kept from the hardware (all or some bits) */
};

/* One CPU's view: what exists, what is owned, and the guest's shadows. */
struct trace_msr_state {
	bool ready;               /* trace_msr_init ran */
	bool intel;
	uint32_t owned;           /* TRACE_OWN_* */

	/* what exists on this CPU (from struct trace_caps) */
	bool has_ds, has_pebs, has_pt, has_pt_cr3;
	uint32_t pt_addr_ranges;
	bool lbr_arch;
	uint32_t lbr_depth;       /* legacy: stack size; arch: max depth */
	uint32_t lbr_from0, lbr_to0;
	bool lbr_select_exists, lbr_info_exists;
	uint32_t arch_lbr_depth_mask;
	uint32_t pmu_version;

	/* writable bits (reserved = the rest) */
	uint64_t debugctl_valid, lbr_select_valid, arch_lbr_ctl_valid;
	uint64_t pebs_valid, rtit_ctl_valid, global_ctrl_valid, global_status_valid;

	/* the guest's values */
	uint64_t debugctl;
	uint64_t lbr_select, lbr_tos;
	uint64_t arch_lbr_ctl, arch_lbr_depth;
	uint64_t ds_area, pebs_enable;
	uint64_t rtit_ctl, rtit_status, rtit_output_base, rtit_output_mask, rtit_cr3_match;
	uint64_t rtit_addr[8];
	uint64_t global_ctrl, global_ovf_ctrl;
	/* TRACE_OWN_PMC: which counter, and the guest's view of it */
	uint32_t pmc_idx, pmu_gp_counters;
	bool pmc_full_width;      /* IA32_A_PMCx exist (PERF_CAPABILITIES[13]) */
	uint64_t pmc_evtsel, pmc_count;

	struct trace_msr_stats stats;
};

/* The TRACE_OWN_* set a backend takes: PT, BTS, LBR, BTF(+LBR); 0 for MTF/none. */
uint32_t trace_msr_owned_by(enum tv_source backend);

/*
 * trace_msr_configure - the backend every CPU traces with (boot, before
 * the MSR bitmaps are built and before any CPU is launched).  Decides
 * what trace_msr_intercepts() answers and what a lazily initialised slot
 * owns.  Default: TV_SOURCE_NONE (nothing owned, nothing intercepted).
 * Returns 0 or TRACE_MSR_EINVAL for a value outside enum tv_source.
 */
int trace_msr_configure(enum tv_source backend);
/*
 * trace_msr_configure_pmc - after trace_msr_configure(TV_SOURCE_LBR):
 * with on, general-purpose counter `counter` is the tracer's as well
 * (TRACE_OWN_PMC).  TRACE_MSR_EINVAL for another backend or counter >= 8.
 */
int trace_msr_configure_pmc(bool on, uint32_t counter);

/*
 * trace_msr_init - set up one CPU's state from its capabilities: what
 * exists, the reserved-bit masks, and the shadows at their reset values
 * (0; IA32_LBR_DEPTH = the maximum depth; RTIT_OUTPUT_MASK_PTRS = 0x7f).
 * Returns 0 or TRACE_MSR_EINVAL (NULL, unknown backend).
 */
int trace_msr_init(struct trace_msr_state *s, const struct trace_caps *tc,
		   enum tv_source backend);

/* trace_msr_is_virtualized - is msr one of the trace MSRs this policy knows? */
bool trace_msr_is_virtualized(uint32_t msr);

/*
 * trace_msr_intercepts - should the MSR bitmap make this access exit,
 * given the configured backend?  (Owned MSRs both ways; PERF_GLOBAL_STATUS
 * reads and PERF_GLOBAL_OVF_CTRL writes when the backend owns a status
 * bit; nothing else.)
 */
bool trace_msr_intercepts(uint32_t msr, bool write);

/*
 * trace_msr_read - the guest's RDMSR.  HANDLED: *val is what it reads.
 * GP: the MSR does not exist on this CPU.  PASS: read the hardware value
 * h (for IA32_DEBUGCTL: VMCS GUEST_IA32_DEBUGCTL) and give the guest
 * trace_msr_guest_view(s, msr, h).
 */
enum trace_msr_action trace_msr_read(struct trace_msr_state *s, uint32_t msr, uint64_t *val);

/*
 * trace_msr_write - the guest's WRMSR of val.  HANDLED: absorbed into the
 * shadow.  GP: a reserved bit, a value the hardware refuses, a read-only
 * or absent MSR.  PASS: write trace_msr_hw_value(s, msr, h) to the
 * hardware, h being its current value (for IA32_DEBUGCTL: the VMCS guest
 * field; h is ignored when trace_msr_owned_mask() is 0).
 */
enum trace_msr_action trace_msr_write(struct trace_msr_state *s, uint32_t msr, uint64_t val);

/* The bits of msr the hypervisor owns on this CPU (~0: all of it). */
uint64_t trace_msr_owned_mask(const struct trace_msr_state *s, uint32_t msr);

/* PASS read: hardware bits the guest owns, shadow bits for the owned ones. */
uint64_t trace_msr_guest_view(const struct trace_msr_state *s, uint32_t msr, uint64_t hw);

/*
 * PASS write: what the hardware gets: the guest's written bits where it
 * owns them, hw_now's where the hypervisor does.  For
 * IA32_PERF_GLOBAL_OVF_CTRL (write 1 to clear) the owned bits are simply
 * 0, so the guest never clears the hypervisor's status.
 */
uint64_t trace_msr_hw_value(const struct trace_msr_state *s, uint32_t msr, uint64_t hw_now);

/*
 * trace_msr_state_of - the CPU's slot (static array indexed by
 * cpu->index; NULL when index >= TRACE_MSR_MAX_CPUS).  A slot nobody
 * initialised is initialised on first use, on the calling CPU (which must
 * be cpu: exit handlers run there), with trace_caps_read() and the
 * configured backend.  To move into struct per_cpu later.
 */
struct trace_msr_state *trace_msr_state_of(struct per_cpu *cpu);

#endif /* TV_TRACE_MSR_H */
