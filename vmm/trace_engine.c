/* SPDX-License-Identifier: MIT */
/*
 * trace_engine.c - see trace_engine.h.
 */
#include <string.h>

#include "vmm/ept.h"
#include "vmm/exit.h"
#include "vmm/exit_ept.h"
#include "vmm/hw.h"
#include "vmm/hypercall.h"
#include "vmm/log.h"
#include "vmm/trace_engine.h"
#include "vmm/trace_read.h"

#define SEG_AR_DB (1u << 14)

static struct trace_setup setup;
static gmem_read_phys_fn phys_reader;
static void *phys_ctx;
static trace_window_fn window_done;
static uint8_t maxphyaddr;

/* The address trigger: armed while its page is not executable. */
static struct ept *trig_ept;
static struct page_pool *trig_pool;
static bool trig_armed;
static unsigned trig_memtype;

const struct trace_setup *trace_engine_setup(void)
{
	return &setup;
}

static int hc_start(struct per_cpu *cpu, uint64_t flags)
{
	if (flags)
		return TV_HC_EINVAL;
	return trace_start(cpu, TV_TRIG_HYPERCALL);
}

static int hc_stop(struct per_cpu *cpu)
{
	return trace_stop(cpu, TV_TRIG_HYPERCALL);
}

static int hc_marker(struct per_cpu *cpu, uint64_t id, const char label[TV_HC_LABEL_LEN])
{
	size_t len = 0;

	if (!cpu->trace.ring)
		return TV_HC_ENOSYS;
	while (len < TV_HC_LABEL_LEN && label[len])
		len++;
	/* A dropped marker (STOP policy, ring full) is counted by the ring. */
	trace_append_marker(cpu->trace.ring, hw_rdtsc(), id, label, len);
	return TV_HC_OK;
}

static const struct hypercall_hooks hooks = {
	.trace_start = hc_start,
	.trace_stop = hc_stop,
	.marker = hc_marker,
};

void trace_engine_init(const struct trace_setup *s, gmem_read_phys_fn read_phys,
		       void *read_ctx, trace_window_fn on_window)
{
	struct hw_cpuid_regs r;

	setup = *s;
	phys_reader = read_phys;
	phys_ctx = read_ctx;
	window_done = on_window;
	trig_ept = NULL;
	trig_pool = NULL;
	trig_armed = false;
	hw_cpuid(0x80000000u, 0, &r);
	maxphyaddr = 36;
	if (r.eax >= 0x80000008u) {
		hw_cpuid(0x80000008u, 0, &r);
		maxphyaddr = (uint8_t)(r.eax & 0xff);
	}
	hypercall_set_hooks(setup.source != TV_SOURCE_NONE ? &hooks : NULL);
}

int trace_cpu_init(struct trace_cpu *t, void *mem, size_t bytes, uint32_t cpu_index,
		   uint32_t apic_id, enum tv_source src, enum tv_overflow policy,
		   uint64_t tsc_hz, uint64_t now_tsc)
{
	int rc;

	memset(t, 0, sizeof(*t));
	rc = trace_ring_init(mem, bytes, cpu_index, apic_id, src, policy, tsc_hz, now_tsc);
	if (rc)
		return rc;
	t->ring = mem;
	trace_ring_cursor_tail(t->ring, &t->exported);
	return 0;
}

/* --- guest state ----------------------------------------------------------- */

static void read_guest(struct mtf_guest *g)
{
	uint64_t cr0 = vmcs_get(VMCS_GUEST_CR0);
	uint32_t cs_ar = (uint32_t)vmcs_get(VMCS_GUEST_CS_AR);

	g->ip = vmcs_get(VMCS_GUEST_RIP);
	g->cs_base = vmcs_get(VMCS_GUEST_CS_BASE);
	g->cr3 = vmcs_get(VMCS_GUEST_CR3);
	if (!(cr0 & CR0_PE)) {
		g->mode = 16;   /* real mode: CPL 0, CS.base = selector << 4 */
		g->cpl = 0;
	} else {
		if ((vmcs_get(VMCS_ENTRY_CTLS) & ENTRY_IA32E_MODE_GUEST) && (cs_ar & SEG_AR_L))
			g->mode = 64;
		else
			g->mode = (cs_ar & SEG_AR_DB) ? 32 : 16;
		g->cpl = (uint8_t)SEG_AR_DPL((uint32_t)vmcs_get(VMCS_GUEST_SS_AR));
	}
	if (g->mode != 64) {
		g->ip &= 0xffffffffull;
		g->cs_base &= 0xffffffffull;
	}
	g->tsc = hw_rdtsc();
}

/* Guest-linear reads for the decoder: through the guest's own page tables. */
static size_t fetch_guest(void *ctx, uint64_t linear, uint8_t *buf, size_t len)
{
	const struct gmem_ctx *g = ctx;
	size_t first = 4096 - (size_t)(linear & 4095);

	if (first > len)
		first = len;
	if (gmem_read(g, linear, buf, first))
		return 0;
	if (first < len && gmem_read(g, linear + first, buf + first, len - first))
		return first;
	return len;
}

static void gmem_from_vmcs(struct gmem_ctx *g)
{
	memset(g, 0, sizeof(*g));
	g->cr0 = vmcs_get(VMCS_GUEST_CR0);
	g->cr3 = vmcs_get(VMCS_GUEST_CR3);
	g->cr4 = vmcs_get(VMCS_GUEST_CR4);
	g->efer = vmcs_get(VMCS_GUEST_IA32_EFER);
	g->maxphyaddr = maxphyaddr;
	g->read_phys = phys_reader;
	g->opaque = phys_ctx;
	if ((g->cr0 & GMEM_CR0_PG) && (g->cr4 & GMEM_CR4_PAE) && !(g->efer & GMEM_EFER_LMA)) {
		/* PAE with EPT: the PDPTEs in use are the VMCS's (SDM 3C 28.4.1). */
		for (unsigned i = 0; i < 4; i++)
			g->pdpte[i] = vmcs_get(VMCS_GUEST_PDPTE(i));
		g->pdpte_valid = true;
	}
}

static void set_mtf(struct per_cpu *cpu, bool on);

/* --- the address trigger ------------------------------------------------- */

/*
 * Under ept_edit_lock: give the trigger page these rights and, in VMX
 * root, flush this CPU's EPT translations (single context, SDM 3C
 * 29.4.3.1).  At arming time no CPU has used the EPT yet and INVEPT would
 * be #UD outside VMX operation.
 */
static int trig_set_rights(unsigned rwx, bool flush)
{
	uint64_t page = setup.start_addr & ~0xfffull;
	int rc = ept_map_4k(trig_ept, trig_pool, page, page, rwx, trig_memtype);

	if (!rc && flush)
		hw_invept(1, trig_ept->eptp);
	return rc;
}

int trace_trigger_arm(struct ept *ept, struct page_pool *pool)
{
	struct ept_leaf leaf;
	int rc;

	if (setup.start != TV_TRIG_ADDRESS || setup.source == TV_SOURCE_NONE)
		return 0;
	rc = ept_lookup(ept, setup.start_addr & ~0xfffull, &leaf);
	if (rc || !(leaf.rwx & EPT_X)) {
		log_err("trace: start address %#llx is not guest memory tracevisor can trap: trigger not armed",
			(unsigned long long)setup.start_addr);
		return rc ? rc : EPT_ERR_RANGE;
	}
	trig_memtype = leaf.memtype;
	trig_ept = ept;
	trig_pool = pool;
	ept_edit_lock();
	rc = trig_set_rights(EPT_R | EPT_W, false);
	if (!rc)
		__atomic_store_n(&trig_armed, true, __ATOMIC_RELEASE);
	ept_edit_unlock();
	if (rc)
		log_err("trace: cannot arm the start address %#llx: %s",
			(unsigned long long)setup.start_addr, ept_strerror(rc));
	else
		log_info("trace: window opens when a CPU executes guest-physical %#llx",
			 (unsigned long long)setup.start_addr);
	return rc;
}

bool trace_trigger_fetch(struct per_cpu *cpu, uint64_t gpa)
{
	bool hit;

	/* Once armed, the page stays ours: a late fault is a stale TLB entry. */
	if (!trig_ept || (gpa & ~0xfffull) != (setup.start_addr & ~0xfffull))
		return false;
	ept_edit_lock();
	if (!trig_armed) {
		/* Another CPU disarmed it: only this CPU's TLB is stale. */
		hw_invept(1, trig_ept->eptp);
		ept_edit_unlock();
		return true;
	}
	hit = gpa == setup.start_addr;
	if (trig_set_rights(EPT_RWX, true)) {
		ept_edit_unlock();
		log_err("trace: cpu %u: cannot restore execute on %#llx", cpu->index,
			(unsigned long long)gpa);
		return false;
	}
	if (hit)
		__atomic_store_n(&trig_armed, false, __ATOMIC_RELEASE);
	ept_edit_unlock();
	if (hit) {
		if (trace_start(cpu, TV_TRIG_ADDRESS) != TV_HC_OK)
			log_warn("trace: cpu %u: start address reached, window could not open",
				 cpu->index);
		return true;
	}
	/* Another instruction in the page: run it alone, then disarm again. */
	cpu->trace.trigger_step = true;
	if (!cpu->trace.active)
		set_mtf(cpu, true);
	return true;
}

/* After one stepped instruction of the trigger page: execute off again. */
static void trigger_step_done(struct per_cpu *cpu)
{
	cpu->trace.trigger_step = false;
	if (!cpu->trace.active)
		set_mtf(cpu, false);
	ept_edit_lock();
	if (trig_armed && trig_set_rights(EPT_R | EPT_W, true))
		log_err("trace: cpu %u: cannot re-arm the start address", cpu->index);
	ept_edit_unlock();
}

/* --- windows --------------------------------------------------------------- */

static bool mtf_offered(const struct per_cpu *cpu)
{
	return ((cpu->caps.proc >> 32) & CPU_MONITOR_TRAP_FLAG) != 0;
}

static void set_mtf(struct per_cpu *cpu, bool on)
{
	if (on)
		cpu->proc |= CPU_MONITOR_TRAP_FLAG;
	else
		cpu->proc &= ~CPU_MONITOR_TRAP_FLAG;
	vmcs_write(VMCS_PROC_BASED_CTLS, cpu->proc);
}

static uint64_t guest_linear_ip(void)
{
	return vmcs_get(VMCS_GUEST_CS_BASE) + vmcs_get(VMCS_GUEST_RIP);
}

int trace_start(struct per_cpu *cpu, enum tv_trigger why)
{
	struct trace_cpu *t = &cpu->trace;

	if (!t->ring || setup.source != TV_SOURCE_MTF || !mtf_offered(cpu))
		return TV_HC_ENOSYS;
	if (t->active)
		return TV_HC_EBUSY;
	t->active = true;
	t->window_branches = 0;
	t->windows++;
	mtf_reset(&t->mtf);
	trace_append_start(t->ring, hw_rdtsc(), why, guest_linear_ip());
	set_mtf(cpu, true);
	log_info("trace: cpu %u: window %llu started (%s) at %#llx", cpu->index,
		 (unsigned long long)t->windows, trace_trigger_name(why),
		 (unsigned long long)guest_linear_ip());
	return TV_HC_OK;
}

int trace_stop(struct per_cpu *cpu, enum tv_trigger why)
{
	struct trace_cpu *t = &cpu->trace;

	if (!t->ring || setup.source != TV_SOURCE_MTF)
		return TV_HC_ENOSYS;
	if (!t->active)
		return TV_HC_EBUSY;
	t->active = false;
	set_mtf(cpu, false);
	trace_append_stop(t->ring, hw_rdtsc(), why, guest_linear_ip());
	log_info("trace: cpu %u: window %llu stopped (%s): %llu branches, %llu events, %llu filtered, %llu dropped, %llu undecodable, %llu steps; ring lost %llu records",
		 cpu->index, (unsigned long long)t->windows, trace_trigger_name(why),
		 (unsigned long long)t->window_branches,
		 (unsigned long long)t->mtf.stats.events,
		 (unsigned long long)t->mtf.stats.filtered,
		 (unsigned long long)t->mtf.stats.dropped,
		 (unsigned long long)t->mtf.stats.decode_errors,
		 (unsigned long long)t->mtf.stats.observations,
		 (unsigned long long)t->ring->lost_records);
	if (window_done)
		window_done(cpu);
	return TV_HC_OK;
}

void trace_before_entry(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	struct gmem_ctx g;
	struct mtf_guest mg;
	int rc;

	if (!t->ring)
		return;
	if (t->trigger_step && vmcs_get(VMCS_EXIT_REASON) != EXIT_REASON_EPT_VIOLATION)
		trigger_step_done(cpu);
	if (!t->boot_started) {
		t->boot_started = true;
		if (setup.start == TV_TRIG_BOOT && trace_start(cpu, TV_TRIG_BOOT) != TV_HC_OK)
			log_warn("trace: cpu %u: could not start at boot", cpu->index);
	}
	if (!t->active)
		return;
	/* A CPU waiting for SIPI runs nothing: its next IP is the SIPI vector. */
	if (cpu->sipi_state == VCPU_WAIT_FOR_SIPI) {
		mtf_reset(&t->mtf);
		return;
	}
	read_guest(&mg);
	gmem_from_vmcs(&g);
	rc = mtf_observe(&t->mtf, t->ring, &setup.filter, &mg, fetch_guest, &g);
	if (rc == 1)
		t->window_branches++;
	if (rc == TRACE_ERR_FULL)
		trace_stop(cpu, TV_TRIG_FULL);
	else if (setup.stop_after && t->window_branches >= setup.stop_after)
		trace_stop(cpu, TV_TRIG_LIMIT);
}

enum exit_action exit_monitor_trap(struct exit_ctx *ctx)
{
	(void)ctx;
	return EXIT_RESUME;
}
