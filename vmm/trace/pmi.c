/* SPDX-License-Identifier: MIT */
/*
 * pmi.c - PMIs (pmi = on, docs/CONFIG.md): the LVT performance-counter
 * entry held as NMI delivery while windows of a PMI backend are open, the
 * NMI exits sorted into ours and the guest's, PMIs taken in VMX root
 * claimed, and the general-purpose counter the lbr backend overflows on.
 * See engine.h ("PMIs").
 */
#include <string.h>

#include "vmm/hw/hw.h"
#include "vmm/hw/msr.h"
#include "vmm/lib/lapic.h"
#include "vmm/lib/log.h"
#include "vmm/trace/cpu.h"

/* The LVT performance-counter entry while we hold it: NMI delivery, unmasked. */
#define PMI_LVT LAPIC_LVT_DM_NMI

bool trace_engine_wants_nmi_exiting(void)
{
	return trace_cfg.pmi && trace_be && tv_source_takes_pmi(trace_cfg.source);
}

/*
 * A window of a PMI source opens: the LVT entry becomes NMI delivery,
 * unmasked, whatever the guest had there (docs/CONFIG.md `pmi`: the
 * entry is the tracer's from the first window on).  0, or TRACE_ENOSYS
 * with the reason logged: no NMI exiting, or no enabled local APIC.
 */
int trace_pmi_take_lvt(struct per_cpu *cpu, struct trace_cpu *t)
{
	uint32_t v;

	if (!trace_engine_wants_nmi_exiting())
		return 0;
	if (!(t->b.pin_ctls & PIN_NMI_EXITING)) {
		log_err("trace: cpu %u: pmi: NMI exiting is off in the VMCS: window not opened",
			t->b.index);
		return TRACE_ENOSYS;
	}
	if (!lapic_enabled()) {
		log_err("trace: cpu %u: pmi: the local APIC is disabled (IA32_APIC_BASE[11]): window not opened",
			t->b.index);
		return TRACE_ENOSYS;
	}
	(void)cpu;
	v = lapic_read(LAPIC_LVT_PERFMON);
	if (v != PMI_LVT)
		lapic_write(LAPIC_LVT_PERFMON, PMI_LVT);
	if (!t->b.pmi_lvt_held && t->b.windows == 0)
		log_info("trace: cpu %u: pmi: LVT performance-counter entry %#x -> %#x (NMI), NMIs exit",
			 t->b.index, v, PMI_LVT);
	t->b.pmi_lvt_held = true;
	return 0;
}

void trace_pmi_window_reset(struct trace_cpu *t)
{
	memset(&t->pmi, 0, sizeof(t->pmi));
	t->pmi_expect = 0;
}

/*
 * After our PMI: its delivery set the entry's mask bit (SDM 3A "Local
 * Vector Table"); clear it.  Anything else there means the guest wrote
 * the entry: written again, counted (the tracer holds it while pmi is on).
 */
static void pmi_rearm_lvt(struct trace_cpu *t)
{
	uint32_t v = lapic_read(LAPIC_LVT_PERFMON);

	if (v == PMI_LVT)
		return;
	if (v != (PMI_LVT | LAPIC_LVT_MASKED)) {
		if (!t->pmi.lvt_retaken++)
			log_warn("trace: cpu %u: pmi: the guest changed the LVT performance-counter entry to %#x: written back to %#x",
				 t->b.index, v, PMI_LVT);
	}
	lapic_write(LAPIC_LVT_PERFMON, PMI_LVT);
}

/*
 * One exit's drain found our PMI condition (the BTS index at its
 * threshold, the ToPA PMI status bit): the NMI for it is taken in VMX
 * root during this exit, or exits at once after the entry.  The claim
 * lives for this exit and the next.
 */
void trace_pmi_expect(struct trace_cpu *t)
{
	if (t->b.pmi_lvt_held)
		t->pmi_expect = 2;
}

/* End of an exit: an NMI taken in root for an expected PMI is ours. */
void trace_pmi_claim_root(struct per_cpu *cpu, struct trace_cpu *t)
{
	if (!t->pmi_expect)
		return;
	if (__atomic_load_n(&cpu->nmi_pending, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_sub(&cpu->nmi_pending, 1, __ATOMIC_ACQ_REL);
		t->pmi_expect = 0;
		t->pmi.nmis++;
		t->pmi.ours++;
		t->pmi.root_claimed++;
		pmi_rearm_lvt(t);
		return;
	}
	t->pmi_expect--;
}

void trace_pmi_log(struct trace_cpu *t)
{
	if (!t->b.pmi_lvt_held)
		return;
	log_info("trace: cpu %u: window %llu PMIs: %llu ours (%llu taken in VMX root), %llu NMIs reflected to the guest, LVT retaken %llu times",
		 t->b.index, (unsigned long long)t->b.windows, (unsigned long long)t->pmi.ours,
		 (unsigned long long)t->pmi.root_claimed, (unsigned long long)t->pmi.reflected,
		 (unsigned long long)t->pmi.lvt_retaken);
}

/* The guest gets the NMI (vcpu_deliver_nmi injects what is pending). */
static void pmi_reflect(struct per_cpu *cpu, struct trace_cpu *t)
{
	if (t)
		t->pmi.reflected++;
	__atomic_fetch_add(&cpu->nmi_pending, 1, __ATOMIC_ACQ_REL);
}

enum exit_action trace_nmi_exit(struct exit_ctx *ctx)
{
	struct per_cpu *cpu = ctx->cpu;
	struct trace_cpu *t = trace_cpu_sync(cpu);
	struct trace_view v;
	uint32_t r = 0;
	uint64_t other = 0;
	bool ours;

	if (!t) {
		pmi_reflect(cpu, NULL);   /* an untraced CPU: the guest's NMI */
		return EXIT_RESUME;
	}
	t->pmi.nmis++;
	if (!t->b.active || !t->b.pmi_lvt_held) {
		pmi_reflect(cpu, t);
		return EXIT_RESUME;
	}
	if (trace_be->pmi_check) {
		trace_view_begin(&v, cpu);
		r = trace_be->pmi_check(&t->b, &v, &other);
		trace_view_flush(&v);
	}
	ours = (r & TRACE_DO_PMI_OURS) != 0;
	if (!ours && t->pmi_expect) {
		ours = true;           /* its condition was drained earlier in this or the last exit */
		t->pmi_expect = 0;
	}
	if (ours) {
		t->pmi.ours++;
		pmi_rearm_lvt(t);
	}
	if (!ours || other)
		pmi_reflect(cpu, t);
	if ((r & TRACE_DO_STOP_FULL) && trace_full_stops())
		trace_stop(cpu, TV_TRIG_FULL);
	return EXIT_RESUME;
}

/* --- the general-purpose counter (lbr with pmi) ---------------------------- */

/*
 * The last general-purpose counter counts the architectural event
 * "branch instructions retired" (C4H, umask 0: taken or not, so it
 * overflows no later than the LBR stack, which keeps taken branches
 * only, could fill) with USR, OS and INT, from -pmc_period; overflow
 * raises the PMI, and DEBUGCTL.FREEZE_LBRS_ON_PMI freezes the stack until
 * the NMI exit has read it (SDM 3B "Architectural Performance
 * Monitoring", "Freezing LBR and Performance Counters on PMI").  Its
 * enable bit is set only in the VMCS field loaded on entry (the exit
 * loads 0), so it counts the guest's branches, never the hypervisor's.
 */
#define PMC_EVTSEL(i)       (0x186u + (i))
#define PMC_COUNTER(i)      (0xc1u + (i))
#define PMC_EVENT_BRANCHES  0xc4u
#define PMC_USR             (1ull << 16)
#define PMC_OS              (1ull << 17)
#define PMC_INT             (1ull << 20)
#define PMC_EN              (1ull << 22)
/* IA32_PERF_GLOBAL_OVF_CTRL: the counter's overflow and LBR_Frz (bit 58) cleared */
#define PMC_OVF_LBR_FRZ     (1ull << 58)

/* The counter from -period (a legacy write: bits 31:0, sign-extended). */
void trace_pmc_reload(struct trace_bcpu *b)
{
	hw_wrmsr(PMC_COUNTER(b->pmc_idx), (uint64_t)(uint32_t)-(int32_t)b->pmc_period);
}

int trace_pmc_arm(struct trace_bcpu *b, struct trace_view *v, uint32_t depth)
{
	struct hw_cpuid_regs r;
	uint32_t ver, ngp;

	hw_cpuid(0xa, 0, &r);
	ver = r.eax & 0xff;
	ngp = (r.eax >> 8) & 0xff;
	if (ver < 2 || ngp < 1 || ngp > 8 || ((r.eax >> 24) & 0xff) < 6 || (r.ebx & (1u << 5))) {
		log_err("trace: cpu %u: lbr window not opened: pmi needs perfmon v2+ with the branch-instructions-retired event (CPUID.0AH: EAX %#x EBX %#x)",
			b->index, r.eax, r.ebx);
		return TRACE_ENOSYS;
	}
	if (!(b->entry_ctls & ENTRY_LOAD_PERF_GLOBAL_CTRL) ||
	    !(b->exit_ctls & EXIT_LOAD_PERF_GLOBAL_CTRL)) {
		log_err("trace: cpu %u: lbr window not opened: pmi needs the VM-entry and VM-exit controls that load IA32_PERF_GLOBAL_CTRL",
			b->index);
		return TRACE_ENOSYS;
	}
	b->pmc_idx = ngp - 1;
	b->pmc_period = b->setup->pmi_every ? b->setup->pmi_every : depth - depth / 4;
	if (!b->pmc_period || b->pmc_period > depth) {
		log_err("trace: cpu %u: lbr window not opened: pmi_every = %u must be at most the stack's %u entries",
			b->index, b->pmc_period, depth);
		return TRACE_ENOSYS;
	}
	hw_wrmsr(PMC_EVTSEL(b->pmc_idx), 0);
	trace_pmc_reload(b);
	hw_wrmsr(PMC_EVTSEL(b->pmc_idx), PMC_EVENT_BRANCHES | PMC_USR | PMC_OS | PMC_INT | PMC_EN);
	hw_wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, (1ull << b->pmc_idx) | PMC_OVF_LBR_FRZ);
	trace_view_set(v, TRACE_VIEW_PERF_GLOBAL_CTRL,
		       trace_view_get(v, TRACE_VIEW_PERF_GLOBAL_CTRL) | 1ull << b->pmc_idx);
	b->pmc_on = true;
	return 0;
}

void trace_pmc_disarm(struct trace_bcpu *b, struct trace_view *v)
{
	if (!b->pmc_on)
		return;
	hw_wrmsr(PMC_EVTSEL(b->pmc_idx), 0);
	hw_wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, (1ull << b->pmc_idx) | PMC_OVF_LBR_FRZ);
	trace_view_set(v, TRACE_VIEW_PERF_GLOBAL_CTRL,
		       trace_view_get(v, TRACE_VIEW_PERF_GLOBAL_CTRL) & ~(1ull << b->pmc_idx));
	b->pmc_on = false;
}
