/* SPDX-License-Identifier: MIT */
/*
 * trace_engine.c - see trace_engine.h.
 */
#include <string.h>

#include "vmm/vmx/ept.h"
#include "vmm/exit/exit.h"
#include "vmm/exit/exit_ept.h"
#include "vmm/hw/hw.h"
#include "vmm/exit/hypercall.h"
#include "vmm/lib/lapic.h"
#include "vmm/lib/log.h"
#include "vmm/hw/msr.h"
#include "vmm/lib/pe_debug.h"
#include "vmm/trace/caps.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/hooks.h"
#include "vmm/trace/read.h"

#define SEG_AR_DB (1u << 14)

_Static_assert(TRACE_REQ_LABEL_MAX == TV_HC_LABEL_LEN, "marker labels: one length");

static struct trace_setup setup;

/* The filter this CPU applies: the setup's until a request replaced it. */
static const struct trace_filter *cpu_filter(const struct trace_cpu *t)
{
	return t->filter_set ? &t->filter : &setup.filter;
}
static gmem_read_phys_fn phys_reader;
static void *phys_ctx;
static trace_window_fn window_done;
static uint8_t maxphyaddr;

/* The address trigger: armed while its page is not executable. */
static struct ept *trig_ept;
static struct page_pool *trig_pool;
static bool trig_armed;
static unsigned trig_memtype;
static uint64_t trig_addr;        /* the armed address: start_addr, or the EBS return */
/* kernel_entry: the OS loader's image, which the kernel's entry leaves */
static uint64_t kentry_lo, kentry_hi;
static bool kentry_return;        /* the trap is the loader's return from ExitBootServices */
static int kentry_arm(struct per_cpu *cpu);

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

/*
 * A boot event from tracevisor's own hook in the firmware (boot/ebs_hook.c):
 * the window opens here when trace_start names the event.  Any CPL 0 code
 * could make the call; the worst it can do is open a window early, which
 * TV_HC_TRACE_START allows anyway.
 */
static uint64_t guest_linear_ip(void);

static int hc_event(struct per_cpu *cpu, uint64_t event)
{
	if (event != TV_HC_EVENT_EXIT_BOOT_SERVICES)
		return TV_HC_EINVAL;
	log_info("trace: cpu %u: ExitBootServices called at %#llx", cpu->index,
		 (unsigned long long)guest_linear_ip());
	if (setup.start == TV_TRIG_KERNEL_ENTRY)
		return kentry_arm(cpu) ? TV_HC_ENOSYS : TV_HC_OK;
	if (setup.start != TV_TRIG_EXIT_BOOT_SERVICES)
		return TV_HC_OK;
	return trace_start(cpu, TV_TRIG_EXIT_BOOT_SERVICES);
}

static const struct hypercall_hooks hooks = {
	.trace_start = hc_start,
	.trace_stop = hc_stop,
	.marker = hc_marker,
	.event = hc_event,
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
	trig_addr = 0;
	kentry_lo = kentry_hi = 0;
	kentry_return = false;
	hw_cpuid(0x80000000u, 0, &r);
	maxphyaddr = 36;
	if (r.eax >= 0x80000008u) {
		hw_cpuid(0x80000008u, 0, &r);
		maxphyaddr = (uint8_t)(r.eax & 0xff);
	}
	hypercall_set_hooks(setup.source != TV_SOURCE_NONE ? &hooks : NULL);
	trace_hooks_register();
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

int trace_cpu_bts_area(struct trace_cpu *t, void *mem, uint64_t lin)
{
	if (!t || !mem || ((uintptr_t)mem & 4095) || (lin & 4095))
		return TRACE_ERR_INVAL;
	t->bts_mem = mem;
	t->bts_lin = lin;
	return 0;
}

int trace_cpu_pt_area(struct trace_cpu *t, void *mem, uint64_t pa)
{
	if (!t || !mem || ((uintptr_t)mem & (TRACE_PT_REGION_BYTES - 1)) ||
	    (pa & (TRACE_PT_REGION_BYTES - 1)))
		return TRACE_ERR_INVAL;
	if (byte_ring_init(&t->pt_ring, (uint8_t *)mem + TRACE_PT_RING_OFF, TRACE_PT_RING_BYTES))
		return TRACE_ERR_INVAL;
	t->pt_mem = mem;
	t->pt_pa = pa;
	return 0;
}

size_t trace_pt_take(struct per_cpu *cpu, uint8_t *buf, size_t cap, uint64_t *offset)
{
	struct trace_cpu *t = cpu ? &cpu->trace : NULL;

	if (!t || !t->pt_mem || !buf)
		return 0;
	/* Every byte the drains delivered went into the ring: tail = offset. */
	if (offset)
		*offset = t->pt_ring.tail;
	return byte_ring_read(&t->pt_ring, buf, cap);
}

struct tv_trace_ring *trace_cpu_ring(struct per_cpu *cpu)
{
	return cpu ? cpu->trace.ring : NULL;
}

struct trace_cursor *trace_cpu_exported(struct per_cpu *cpu)
{
	return cpu && cpu->trace.ring ? &cpu->trace.exported : NULL;
}

struct byte_ring *trace_cpu_pt_stream(struct per_cpu *cpu)
{
	return cpu && cpu->trace.ring && cpu->trace.pt_mem ? &cpu->trace.pt_ring : NULL;
}

bool trace_cpu_active(const struct per_cpu *cpu)
{
	return cpu && cpu->trace.active;
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

/* An MTF window is open on this CPU (the control stays on for it). */
static bool mtf_window(const struct per_cpu *cpu)
{
	return cpu->trace.active && setup.source == TV_SOURCE_MTF;
}

/* --- the address trigger ------------------------------------------------- */

/*
 * Under ept_edit_lock: give the trigger page these rights and, in VMX
 * root, flush this CPU's EPT translations (single context, SDM 3C
 * 29.4.3.1).  At arming time no CPU has used the EPT yet and INVEPT would
 * be #UD outside VMX operation.
 */
static int trig_set_rights(unsigned rwx, bool flush)
{
	uint64_t page = trig_addr & ~0xfffull;
	int rc = ept_map_4k(trig_ept, trig_pool, page, page, rwx, trig_memtype);

	if (!rc && flush)
		hw_invept(1, trig_ept->eptp);
	return rc;
}

int trace_trigger_arm(struct ept *ept, struct page_pool *pool)
{
	struct ept_leaf leaf;
	int rc;

	if (setup.source == TV_SOURCE_NONE)
		return 0;
	if (setup.start == TV_TRIG_KERNEL_ENTRY) {
		/* armed later, at the ExitBootServices event (kentry_arm) */
		trig_ept = ept;
		trig_pool = pool;
		log_info("trace: window opens at the kernel's entry: the first instruction outside the OS loader's image after ExitBootServices returns");
		return 0;
	}
	if (setup.start != TV_TRIG_ADDRESS)
		return 0;
	trig_addr = setup.start_addr;
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

bool trace_trigger_fetch(struct per_cpu *cpu, uint64_t gpa, uint64_t guest_rax)
{
	bool hit;

	/* Once armed, the page stays ours: a late fault is a stale TLB entry. */
	if (!trig_ept || !trig_addr || (gpa & ~0xfffull) != (trig_addr & ~0xfffull))
		return false;
	ept_edit_lock();
	if (!trig_armed) {
		/* Another CPU disarmed it: only this CPU's TLB is stale. */
		hw_invept(1, trig_ept->eptp);
		ept_edit_unlock();
		return true;
	}
	hit = gpa == trig_addr;
	if (trig_set_rights(EPT_RWX, true)) {
		ept_edit_unlock();
		log_err("trace: cpu %u: cannot restore execute on %#llx", cpu->index,
			(unsigned long long)gpa);
		return false;
	}
	if (hit)
		__atomic_store_n(&trig_armed, false, __ATOMIC_RELEASE);
	ept_edit_unlock();
	if (hit && kentry_return && guest_rax) {
		/*
		 * It failed (an EFI status, e.g. a stale map key): the loader
		 * gets the map again and calls it again, which arms anew.
		 */
		log_info("trace: cpu %u: ExitBootServices returned %#llx (failed): waiting for the next call",
			 cpu->index, (unsigned long long)guest_rax);
		trig_addr = 0;
		kentry_return = false;
		return true;
	}
	if (hit && kentry_return) {
		/* ExitBootServices returned: step until the loader's image is left */
		log_info("trace: cpu %u: ExitBootServices returned to %#llx: stepping to the kernel's entry",
			 cpu->index, (unsigned long long)gpa);
		cpu->trace.kentry_step = true;
		cpu->trace.kentry_steps = 0;
		if (!mtf_window(cpu))
			set_mtf(cpu, true);
		return true;
	}
	if (hit) {
		if (trace_start(cpu, TV_TRIG_ADDRESS) != TV_HC_OK)
			log_warn("trace: cpu %u: start address reached, window could not open",
				 cpu->index);
		return true;
	}
	/* Another instruction in the page: run it alone, then disarm again. */
	cpu->trace.trigger_step = true;
	if (!mtf_window(cpu))
		set_mtf(cpu, true);
	return true;
}

/*
 * kernel_entry, at the ExitBootServices event (the thunk's VMCALL, after
 * its push rbx: the loader's return address is at RSP + 8).  The image
 * holding that address is the OS loader: its headers are found below it
 * (MZ at a page boundary, within 64 MiB, whose SizeOfImage covers it).
 * The return address becomes the execute trap; when it is hit,
 * ExitBootServices has returned and the CPU is stepped (MTF) until it
 * executes outside [kentry_lo, kentry_hi): that instruction is the
 * kernel's entry.  Firmware code and the loader run identity-mapped at
 * this point (UEFI 2.x 2.3.4): a return address that is not is refused.
 * 0, or -1 with the reason logged (the window then never opens).
 */
#define KENTRY_SCAN_BYTES (64ull << 20)
#define KENTRY_MAX_STEPS  100000000ull

static int kentry_arm(struct per_cpu *cpu)
{
	struct gmem_ctx g;
	struct gmem_walk w;
	struct ept_leaf leaf;
	uint8_t hdr[1024];
	uint64_t ret = 0, base;
	uint32_t size = 0;
	int rc;

	if (!trig_ept || trig_addr) {
		log_err("trace: cpu %u: kernel_entry: %s", cpu->index,
			trig_addr ? "ExitBootServices called again: the first call's trap stays" :
				    "no EPT to trap with");
		return -1;
	}
	gmem_from_vmcs(&g);
	if (fetch_guest(&g, vmcs_get(VMCS_GUEST_RSP) + 8, (uint8_t *)&ret, 8) != 8 ||
	    gmem_walk(&g, ret, &w) || w.gpa != ret) {
		log_err("trace: cpu %u: kernel_entry: the loader's return address %#llx is not identity-mapped memory: no trap",
			cpu->index, (unsigned long long)ret);
		return -1;
	}
	for (base = ret & ~0xfffull; ret - base < KENTRY_SCAN_BYTES && base; base -= 4096) {
		if (fetch_guest(&g, base, hdr, 2) != 2 || hdr[0] != 'M' || hdr[1] != 'Z')
			continue;
		if (fetch_guest(&g, base, hdr, sizeof(hdr)) == sizeof(hdr) &&
		    pe_image_size(hdr, sizeof(hdr), &size) == 0 && ret < base + size)
			break;
		size = 0;
	}
	if (!size) {
		log_err("trace: cpu %u: kernel_entry: no PE image holds the loader's return address %#llx: no trap",
			cpu->index, (unsigned long long)ret);
		return -1;
	}
	rc = ept_lookup(trig_ept, ret & ~0xfffull, &leaf);
	if (rc || !(leaf.rwx & EPT_X)) {
		log_err("trace: cpu %u: kernel_entry: %#llx cannot be trapped", cpu->index,
			(unsigned long long)ret);
		return -1;
	}
	kentry_lo = base;
	kentry_hi = base + size;
	trig_memtype = leaf.memtype;
	trig_addr = ret;
	kentry_return = true;
	ept_edit_lock();
	rc = trig_set_rights(EPT_R | EPT_W, true);
	if (!rc)
		__atomic_store_n(&trig_armed, true, __ATOMIC_RELEASE);
	ept_edit_unlock();
	if (rc) {
		log_err("trace: cpu %u: kernel_entry: cannot trap %#llx: %s", cpu->index,
			(unsigned long long)ret, ept_strerror(rc));
		return -1;
	}
	log_info("trace: cpu %u: kernel_entry: the OS loader's image is %#llx-%#llx, ExitBootServices returns to %#llx",
		 cpu->index, (unsigned long long)kentry_lo, (unsigned long long)kentry_hi - 1,
		 (unsigned long long)ret);
	return 0;
}

/* kernel_entry, before each entry while stepping out of the loader. */
static void kentry_step(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	uint64_t ip = guest_linear_ip();

	if (ip >= kentry_lo && ip < kentry_hi) {
		if (++t->kentry_steps < KENTRY_MAX_STEPS)
			return;
		log_err("trace: cpu %u: kernel_entry: still in the loader's image after %llu steps: given up",
			cpu->index, (unsigned long long)t->kentry_steps);
		t->kentry_step = false;
		if (!mtf_window(cpu))
			set_mtf(cpu, false);
		return;
	}
	t->kentry_step = false;
	if (!mtf_window(cpu))
		set_mtf(cpu, false);
	log_info("trace: cpu %u: kernel_entry: left the loader's image at %#llx after %llu steps",
		 cpu->index, (unsigned long long)ip, (unsigned long long)t->kentry_steps);
	if (trace_start(cpu, TV_TRIG_KERNEL_ENTRY) != TV_HC_OK)
		log_warn("trace: cpu %u: kernel's entry reached, window could not open", cpu->index);
}

/* After one stepped instruction of the trigger page: execute off again. */
static void trigger_step_done(struct per_cpu *cpu)
{
	cpu->trace.trigger_step = false;
	if (!mtf_window(cpu))
		set_mtf(cpu, false);
	ept_edit_lock();
	if (trig_armed && trig_set_rights(EPT_R | EPT_W, true))
		log_err("trace: cpu %u: cannot re-arm the start address", cpu->index);
	ept_edit_unlock();
}

/* --- btf and lbr: the hardware around them --------------------------------- */

static bool hw_source(void)
{
	return setup.source == TV_SOURCE_BTF || setup.source == TV_SOURCE_LBR ||
	       setup.source == TV_SOURCE_BTS || setup.source == TV_SOURCE_PT;
}

/*
 * The IA32_DEBUGCTL bits the backend owns (docs/TRACE-MSR-POLICY.md, the
 * same set as vmm/trace/msr_policy.c's): never the guest's in the VMCS field.
 */
static uint64_t debugctl_owned(void)
{
	switch (setup.source) {
	case TV_SOURCE_BTF:
		return DEBUGCTL_LBR | DEBUGCTL_BTF | DEBUGCTL_FREEZE_LBRS_ON_PMI;
	case TV_SOURCE_LBR:
		return DEBUGCTL_LBR | DEBUGCTL_FREEZE_LBRS_ON_PMI;
	case TV_SOURCE_BTS:
		return BTS_DEBUGCTL_MASK;
	default:
		return 0;
	}
}

/*
 * The legacy LBR stack of this CPU, probed once (in VMX root: CPUID and
 * IA32_PERF_CAPABILITIES), and the VMX controls that switch the guest's
 * DEBUGCTL (SDM 3C 27.3.1, 28.3.1): without "load debug controls" the
 * guest would run with the host's DEBUGCTL (0), without "save debug
 * controls" its own writes would be lost at the next exit.
 */
static bool lbr_usable(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;

	if (!t->lbr_probed) {
		t->lbr_probed = true;
		lbr_probe(&t->lbr_caps);
		if (!t->lbr_caps.supported)
			log_err("trace: cpu %u: no usable LBR stack: %s", cpu->index,
				t->lbr_caps.reason ? t->lbr_caps.reason : "?");
		else if (t->lbr_caps.arch && (!(cpu->entry_ctls & ENTRY_LOAD_LBR_CTL) ||
					      !(cpu->exit_ctls & EXIT_CLEAR_LBR_CTL)))
			log_err("trace: cpu %u: architectural LBR, %u deep, but the VMCS does not load and clear IA32_LBR_CTL (entry %#x, exit %#x): %s refused",
				cpu->index, t->lbr_caps.depth, cpu->entry_ctls, cpu->exit_ctls,
				trace_caps_source_name((enum tv_source)setup.source));
		else if (t->lbr_caps.arch)
			log_info("trace: cpu %u: architectural LBR, %u deep%s%s%s%s", cpu->index,
				 t->lbr_caps.depth, t->lbr_caps.cpl_filter ? ", CPL filter" : "",
				 t->lbr_caps.branch_filter ? ", branch filter" : "",
				 t->lbr_caps.mispred ? ", mispredict" : "",
				 t->lbr_caps.branch_type ? ", branch type" : "");
		else
			log_info("trace: cpu %u: LBR %s, format %u, %u deep", cpu->index,
				 t->lbr_caps.name ? t->lbr_caps.name : "?", t->lbr_caps.format,
				 t->lbr_caps.depth);
		if (!(cpu->entry_ctls & ENTRY_LOAD_DEBUG_CONTROLS) ||
		    !(cpu->exit_ctls & EXIT_SAVE_DEBUG_CONTROLS))
			log_err("trace: cpu %u: the VMCS does not load and save the guest's DEBUGCTL (entry %#x, exit %#x)",
				cpu->index, cpu->entry_ctls, cpu->exit_ctls);
	}
	return t->lbr_caps.supported &&
	       (!t->lbr_caps.arch || ((cpu->entry_ctls & ENTRY_LOAD_LBR_CTL) &&
				      (cpu->exit_ctls & EXIT_CLEAR_LBR_CTL))) &&
	       (cpu->entry_ctls & ENTRY_LOAD_DEBUG_CONTROLS) &&
	       (cpu->exit_ctls & EXIT_SAVE_DEBUG_CONTROLS);
}

/*
 * BTS on this CPU, probed once (CPUID, IA32_MISC_ENABLE), its memory
 * (trace_cpu_bts_area) and the load/save debug controls.
 */
static bool bts_usable(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;

	if (!t->bts_probed) {
		t->bts_probed = true;
		bts_probe(&t->bts_caps);
		if (!t->bts_caps.supported)
			log_err("trace: cpu %u: no usable BTS: %s", cpu->index,
				t->bts_caps.reason ? t->bts_caps.reason : "?");
		else
			log_info("trace: cpu %u: BTS, 64-bit DS area%s, %u-bit linear addresses, DS at %#llx, %u-byte buffer",
				 cpu->index, t->bts_caps.ds_cpl ? ", DS-CPL" : "",
				 t->bts_caps.linear_bits, (unsigned long long)t->bts_lin,
				 TRACE_BTS_BUF_BYTES);
		if (!t->bts_mem)
			log_err("trace: cpu %u: no BTS buffer reserved", cpu->index);
		if (!(cpu->entry_ctls & ENTRY_LOAD_DEBUG_CONTROLS) ||
		    !(cpu->exit_ctls & EXIT_SAVE_DEBUG_CONTROLS))
			log_err("trace: cpu %u: the VMCS does not load and save the guest's DEBUGCTL (entry %#x, exit %#x)",
				cpu->index, cpu->entry_ctls, cpu->exit_ctls);
	}
	return t->bts_caps.supported && t->bts_mem &&
	       (cpu->entry_ctls & ENTRY_LOAD_DEBUG_CONTROLS) &&
	       (cpu->exit_ctls & EXIT_SAVE_DEBUG_CONTROLS);
}

/*
 * bts: lay out the DS area and the buffer for a window and point
 * IA32_DS_AREA at it (VMX root: the MSR is not switched by entries or
 * exits, and the guest's own DS_AREA lives in vmm/trace/msr_policy.c's shadow).
 * Without pmi, circular mode: BTINT 0, the threshold past the end, so no
 * DS interrupt ever reaches the guest's LVT; a wrap is found and counted
 * by the drain.  With pmi, BTINT 1 and the threshold at pmi_every: the DS
 * interrupt is an NMI that exits (trace_nmi_exit).
 * 0, or TV_HC_ENOSYS with the reason logged.
 */
static int bts_window_setup(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	struct bts_mem ds, buf;
	struct bts_setup out;
	enum bts_mode mode = BTS_MODE_CIRCULAR;
	uint32_t margin = 0;
	char why[120];
	int rc;

	ds.va = t->bts_mem;
	ds.lin = t->bts_lin;
	ds.size = 4096;
	buf.va = t->bts_mem + 4096;
	buf.lin = t->bts_lin + 4096;
	buf.size = TRACE_BTS_BUF_BYTES;
	if (setup.pmi) {
		/*
		 * BTINT: the DS interrupt when the index reaches the threshold,
		 * pmi_every records in (default: 7/8 of the buffer; the rest is
		 * headroom for the PMI to arrive).
		 */
		uint32_t slots = TRACE_BTS_BUF_BYTES / BTS_RECORD_SIZE;
		uint32_t every = setup.pmi_every ? setup.pmi_every : slots - slots / 8;

		if (every >= slots) {
			log_err("trace: cpu %u: bts window not opened: pmi_every = %u must be below the buffer's %u records",
				cpu->index, every, slots);
			return TV_HC_ENOSYS;
		}
		mode = BTS_MODE_INT;
		margin = slots - every;
	}
	rc = bts_area_init(&t->bts, &t->bts_caps, cpu_filter(t), &ds, &buf, mode,
			   margin, &out, why, sizeof(why));
	if (rc) {
		log_err("trace: cpu %u: bts window not opened: %s%s%s", cpu->index,
			bts_strerror(rc), why[0] ? ": " : "", why);
		return TV_HC_ENOSYS;
	}
	hw_wrmsr(BTS_MSR_DS_AREA, out.ds_area);
	return 0;
}

/*
 * bts: does the guest's current paging map every page of the DS area and
 * buffer at its own (identity) address, writable?  Walked again only when
 * CR3 or CR0 changed since the last walk.  Page-table edits without a CR3
 * load are not seen (docs/BACKENDS-BTS.md).
 */
static bool bts_mapped(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	uint64_t cr3 = vmcs_get(VMCS_GUEST_CR3), cr0 = vmcs_get(VMCS_GUEST_CR0);
	struct gmem_ctx g;
	struct gmem_walk w;

	if (t->bts_map_known && t->bts_map_cr3 == cr3 && t->bts_map_cr0 == cr0)
		return t->bts_map_ok;
	gmem_from_vmcs(&g);
	t->bts_map_ok = true;
	for (uint64_t o = 0; o < TRACE_BTS_AREA_BYTES; o += 4096) {
		uint64_t lin = t->bts_lin + o;

		if (gmem_walk(&g, lin, &w) || w.gpa != lin ||
		    (w.leaf && !(w.leaf & 2u /* R/W */))) {
			t->bts_map_ok = false;
			break;
		}
	}
	t->bts_map_known = true;
	t->bts_map_cr3 = cr3;
	t->bts_map_cr0 = cr0;
	return t->bts_map_ok;
}

/* bts, before every entry: TR|BTS while a window is open, else off. */
static void bts_set_debugctl(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	uint64_t dbg = vmcs_get(VMCS_GUEST_IA32_DEBUGCTL);
	bool on = t->active && bts_mapped(cpu);
	uint64_t want = bts_guest_debugctl(&t->bts, dbg & ~debugctl_owned(), on);
	static const char note[] = "bts: buffer not mapped writable at its address in the guest's paging: BTS off until it is (branches lost)";

	if (t->active && !on) {
		/* One note per stretch of unmapped entries. */
		if (!t->bts_unmapped++ || (dbg & BTS_DEBUGCTL_BTS))
			trace_append_log(t->ring, hw_rdtsc(), LOG_WARN, note, sizeof(note) - 1);
	}

	if (want != dbg)
		vmcs_write(VMCS_GUEST_IA32_DEBUGCTL, want);
}

/*
 * bts: move what the hardware stored since the last drain into the ring
 * (with the guest stopped: DEBUGCTL is 0 in VMX root).  Returns true when
 * the ring refused records (the caller closes the window, TV_TRIG_FULL).
 */
static bool bts_drain_now(struct trace_cpu *t)
{
	uint64_t dropped = t->bts.stats.dropped;
	int n = bts_drain(&t->bts, t->ring, cpu_filter(t), vmcs_get(VMCS_GUEST_CR3), hw_rdtsc());

	if (n > 0)
		t->window_branches += (uint64_t)n;
	return t->bts.stats.dropped != dropped;
}

/*
 * pt on this CPU, probed once (CPUID leaf 14H, the VMX capability MSRs),
 * its memory (trace_cpu_pt_area) and the two controls that keep TraceEn
 * to VMX non-root: "load IA32_RTIT_CTL" on entry, "clear IA32_RTIT_CTL"
 * on exit (SDM 3C 25.7.1, 25.8.1).
 */
static bool pt_usable(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	bool ctls = (cpu->entry_ctls & ENTRY_LOAD_RTIT_CTL) && (cpu->exit_ctls & EXIT_CLEAR_RTIT_CTL);

	if (!t->pt_probed) {
		t->pt_probed = true;
		pt_caps_read(&t->pt_caps, NULL);
		if (!t->pt_caps.usable)
			log_err("trace: cpu %u: no usable Intel PT: %s", cpu->index,
				t->pt_caps.reason ? t->pt_caps.reason : "?");
		else
			log_info("trace: cpu %u: Intel PT, ToPA %s, %u address ranges, CR3 filter %s, PT area at %#llx",
				 cpu->index, t->pt_caps.topa_multi ? "multi-entry" : "single-entry",
				 t->pt_caps.addr_ranges, t->pt_caps.cr3_filter ? "yes" : "no",
				 (unsigned long long)t->pt_pa);
		if (!t->pt_mem)
			log_err("trace: cpu %u: no PT area reserved", cpu->index);
		if (!ctls)
			log_err("trace: cpu %u: the VMCS does not load and clear IA32_RTIT_CTL (entry %#x, exit %#x)",
				cpu->index, cpu->entry_ctls, cpu->exit_ctls);
	}
	return t->pt_caps.usable && t->pt_mem && ctls;
}

/*
 * pt: which ToPA entry raises the PMI.  Without pmi none (the regions
 * are drained at exits and by the drain tick; STOP on the last).  With
 * pmi the one before the last, so the PMI comes while a region is still
 * free for the packets generated until it arrives (it is not precise,
 * SDM 3C "ToPA PMI").
 */
static uint32_t pt_int_entry(uint32_t n)
{
	if (!setup.pmi)
		return PT_TOPA_NO_INT;
	return n >= 2 ? n - 2 : 0;
}

/*
 * pt: the ToPA table (once per CPU: the stream offset runs on over
 * windows), then the RTIT MSRs for this window's filter.  0, or
 * TV_HC_ENOSYS with the reason logged.
 */
static int pt_window_setup(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	struct pt_region reg[TRACE_PT_REGIONS];
	struct pt_options o;
	struct pt_rtit rtit;
	uint32_t n = t->pt_caps.topa_multi ? TRACE_PT_REGIONS : 1;
	char why[160];
	int rc;

	if (!t->pt.built) {
		for (uint32_t i = 0; i < n; i++) {
			reg[i].pa = t->pt_pa + (uint64_t)i * TRACE_PT_REGION_BYTES;
			reg[i].va = t->pt_mem + (size_t)i * TRACE_PT_REGION_BYTES;
			reg[i].size = TRACE_PT_REGION_BYTES;
		}
		rc = pt_topa_build(&t->pt, &t->pt_caps, (uint64_t *)(void *)(t->pt_mem + TRACE_PT_TABLE_OFF),
				   4096 / 8, t->pt_pa + TRACE_PT_TABLE_OFF, reg, n, PT_MODE_STOP,
				   pt_int_entry(n));
		if (rc) {
			log_err("trace: cpu %u: pt window not opened: ToPA: %s", cpu->index,
				pt_strerror(rc));
			return TV_HC_ENOSYS;
		}
	}
	pt_options_default(&o);
	o.filter = *cpu_filter(t);
	o.tsc_en = setup.pt.tsc;
	o.dis_retc = setup.pt.dis_retc;
	o.mtc_en = setup.pt.mtc;
	o.mtc_freq = setup.pt.mtc_freq;
	o.cyc_en = setup.pt.cyc;
	o.cyc_thresh = setup.pt.cyc_thresh;
	o.psb_freq = setup.pt.psb_freq;
	rc = pt_rtit_ctl(&t->pt_caps, &o, &rtit, why, sizeof(why));
	if (!rc)
		rc = pt_arm(&t->pt, &rtit, &t->pt_guest_ctl);
	if (rc) {
		log_err("trace: cpu %u: pt window not opened: %s%s%s", cpu->index, pt_strerror(rc),
			why[0] && rc != PT_ERR_BUSY ? ": " : "", rc != PT_ERR_BUSY ? why : "");
		return TV_HC_ENOSYS;
	}
	return 0;
}

/*
 * pt: move what the hardware wrote since the last exit into the byte
 * ring (VMX root: the exit cleared TraceEn).  Returns true when the byte
 * ring or the record ring refused something (the caller closes the
 * window, TV_TRIG_FULL); the loss is counted in the stream already.
 */
/* A pt_drain (or pt_on_pmi) error: counted, logged (TraceEn in root once). */
static void pt_drain_failed(struct per_cpu *cpu, int rc)
{
	struct trace_cpu *t = &cpu->trace;

	t->pt_drain_errors++;
	if (rc == PT_ERR_BUSY) {
		if (!t->pt_busy_logged)
			log_err("trace: cpu %u: IA32_RTIT_CTL.TraceEn set in VMX root: nothing drained",
				cpu->index);
		t->pt_busy_logged = true;
	} else {
		log_warn("trace: cpu %u: pt drain: %s (gap counted)", cpu->index, pt_strerror(rc));
	}
}

static bool pt_drain_now(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	struct pt_sink sink = { byte_ring_write, &t->pt_ring };
	uint64_t refused = t->pt.stats.sink_dropped + t->pt.stats.syncs_dropped;
	int rc = pt_drain(&t->pt, &sink, t->ring, hw_rdtsc());

	if (rc)
		pt_drain_failed(cpu, rc);
	return t->pt.stats.sink_dropped + t->pt.stats.syncs_dropped != refused;
}

/*
 * pt, before every entry: GUEST_IA32_RTIT_CTL holds ctl|TraceEn while a
 * window is open, else 0.  Written only when that changes: an exit that
 * saves the MSR into the field saves what the entry loaded (the guest's
 * RTIT_CTL writes are shadowed, docs/TRACE-MSR-POLICY.md), so the field
 * still holds pt_vmcs_ctl.
 */
static void pt_set_ctl(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	uint64_t want = t->active ? t->pt_guest_ctl : 0;

	if ((cpu->entry_ctls & ENTRY_LOAD_RTIT_CTL) && want != t->pt_vmcs_ctl) {
		vmcs_write(VMCS_GUEST_IA32_RTIT_CTL, want);
		t->pt_vmcs_ctl = want;
	}
}

static void lbr_set_ctl(struct per_cpu *cpu, bool on);

/* Intercept #DB from now on (exception bitmap bit 1, SDM 3C 25.6.3). */
static void intercept_db(struct per_cpu *cpu)
{
	if (cpu->trace.db_intercepted)
		return;
	vmcs_write(VMCS_EXCEPTION_BITMAP,
		   vmcs_get(VMCS_EXCEPTION_BITMAP) | (1ull << BTF_DB_VECTOR));
	cpu->trace.db_intercepted = true;
}

/*
 * btf, before every entry: TF and DEBUGCTL from btf_prepare_entry, with
 * the guest's own DEBUGCTL bits (what the field holds without ours) as
 * the shadow it merges.  Nothing to do while no window was ever opened
 * and the field holds nothing of ours.
 */
static void btf_before_entry(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	uint64_t dbg = vmcs_get(VMCS_GUEST_IA32_DEBUGCTL);
	struct btf_entry e;
	uint64_t rflags, pending;

	if (!t->btf.tracing && !t->btf.tf_armed && !t->btf.reflect_pending &&
	    !(dbg & debugctl_owned()))
		return;
	btf_debugctl_write(&t->btf, dbg & ~debugctl_owned());
	memset(&e, 0, sizeof(e));
	e.rflags = rflags = vmcs_get(VMCS_GUEST_RFLAGS);
	e.pending_dbg = pending = vmcs_get(VMCS_GUEST_PENDING_DBG_EXCEPTIONS);
	e.interruptibility = (uint32_t)vmcs_get(VMCS_GUEST_INTERRUPTIBILITY);
	e.activity = (uint32_t)vmcs_get(VMCS_GUEST_ACTIVITY_STATE);
	btf_prepare_entry(&t->btf, &e);
	if (e.rflags != rflags)
		vmcs_write(VMCS_GUEST_RFLAGS, e.rflags);
	if (e.debugctl != dbg)
		vmcs_write(VMCS_GUEST_IA32_DEBUGCTL, e.debugctl);
	if (e.pending_dbg != pending)
		vmcs_write(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, e.pending_dbg);
	if (btf_intercept_db(&t->btf))
		intercept_db(cpu);
	lbr_set_ctl(cpu, t->btf.tracing);
}

/*
 * Architectural LBR: GUEST_IA32_LBR_CTL holds the window's IA32_LBR_CTL
 * (LBREn, the filter) while `on`, else 0; the exit clears the MSR, so
 * VMX root is never recorded.  Written only when it changes (the guest's
 * own LBR_CTL writes are shadowed, vmm/trace/msr_policy.c).
 */
static void lbr_set_ctl(struct per_cpu *cpu, bool on)
{
	struct trace_cpu *t = &cpu->trace;
	uint64_t want = on ? t->lbr.ctl : 0;

	if (!t->lbr_caps.arch || !(cpu->entry_ctls & ENTRY_LOAD_LBR_CTL))
		return;
	if (want != t->lbr_vmcs_ctl) {
		vmcs_write(VMCS_GUEST_IA32_LBR_CTL, want);
		t->lbr_vmcs_ctl = want;
	}
}

/* lbr, before every entry: DEBUGCTL.LBR while a window is open, else off. */
static void lbr_set_debugctl(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	uint64_t dbg = vmcs_get(VMCS_GUEST_IA32_DEBUGCTL);
	uint64_t want = dbg & ~debugctl_owned();

	if (t->active)
		want = lbr_guest_debugctl(&t->lbr, want);
	if (want != dbg)
		vmcs_write(VMCS_GUEST_IA32_DEBUGCTL, want);
	lbr_set_ctl(cpu, t->active);
}

/*
 * lbr: move what the stack holds into the ring.  Returns true when the
 * ring refused records (the caller closes the window, TV_TRIG_FULL).
 */
static bool lbr_drain(struct trace_cpu *t)
{
	uint64_t dropped = t->lbr.stats.dropped;
	int n = lbr_read(&t->lbr, t->ring, cpu_filter(t));

	if (n > 0)
		t->window_branches += (uint64_t)n;
	return t->lbr.stats.dropped != dropped;
}

/* --- PMIs (pmi = on) --------------------------------------------------------- */

/* The LVT performance-counter entry while we hold it: NMI delivery, unmasked. */
#define PMI_LVT LAPIC_LVT_DM_NMI

/*
 * IA32_PERF_GLOBAL_STATUS bits that are the guest's counters (GP 0-31,
 * fixed 32-47, PERF_METRICS 48): a PMI that shows one of them is the
 * guest's as well.  55 (ToPA), 58 (LBR_Frz) and 62 (OvfBuffer) are the
 * backends' (docs/TRACE-MSR-POLICY.md); 63 (CondChgd) raises no PMI.
 */
#define PMI_GUEST_STATUS 0x0001ffffffffffffull

static bool pmi_source(void)
{
	return setup.source == TV_SOURCE_LBR || setup.source == TV_SOURCE_BTS ||
	       setup.source == TV_SOURCE_PT;
}

bool trace_engine_wants_nmi_exiting(void)
{
	return setup.pmi && pmi_source();
}

/*
 * A window of a PMI source opens: the LVT entry becomes NMI delivery,
 * unmasked, whatever the guest had there (docs/CONFIG.md `pmi`: the
 * entry is the tracer's from the first window on).  0, or TV_HC_ENOSYS
 * with the reason logged: no NMI exiting, or no enabled local APIC.
 */
static int pmi_take_lvt(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	uint32_t v;

	if (!trace_engine_wants_nmi_exiting())
		return 0;
	if (!(cpu->pin & PIN_NMI_EXITING)) {
		log_err("trace: cpu %u: pmi: NMI exiting is off in the VMCS: window not opened",
			cpu->index);
		return TV_HC_ENOSYS;
	}
	if (!lapic_enabled()) {
		log_err("trace: cpu %u: pmi: the local APIC is disabled (IA32_APIC_BASE[11]): window not opened",
			cpu->index);
		return TV_HC_ENOSYS;
	}
	v = lapic_read(LAPIC_LVT_PERFMON);
	if (v != PMI_LVT)
		lapic_write(LAPIC_LVT_PERFMON, PMI_LVT);
	if (!t->pmi_lvt_held && t->windows == 0)
		log_info("trace: cpu %u: pmi: LVT performance-counter entry %#x -> %#x (NMI), NMIs exit",
			 cpu->index, v, PMI_LVT);
	t->pmi_lvt_held = true;
	return 0;
}

/*
 * After our PMI: its delivery set the entry's mask bit (SDM 3A "Local
 * Vector Table"); clear it.  Anything else there means the guest wrote
 * the entry: written again, counted (the tracer holds it while pmi is on).
 */
static void pmi_rearm_lvt(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	uint32_t v = lapic_read(LAPIC_LVT_PERFMON);

	if (v == PMI_LVT)
		return;
	if (v != (PMI_LVT | LAPIC_LVT_MASKED)) {
		if (!t->pmi.lvt_retaken++)
			log_warn("trace: cpu %u: pmi: the guest changed the LVT performance-counter entry to %#x: written back to %#x",
				 cpu->index, v, PMI_LVT);
	}
	lapic_write(LAPIC_LVT_PERFMON, PMI_LVT);
}

/*
 * One exit's drain found our PMI condition (the BTS index at its
 * threshold, the ToPA PMI status bit): the NMI for it is taken in VMX
 * root during this exit, or exits at once after the entry.  The claim
 * lives for this exit and the next.
 */
static void pmi_expect(struct trace_cpu *t)
{
	if (t->pmi_lvt_held)
		t->pmi_expect = 2;
}

/* End of an exit: an NMI taken in root for an expected PMI is ours. */
static void pmi_claim_root(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;

	if (!t->pmi_expect)
		return;
	if (__atomic_load_n(&cpu->nmi_pending, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_sub(&cpu->nmi_pending, 1, __ATOMIC_ACQ_REL);
		t->pmi_expect = 0;
		t->pmi.nmis++;
		t->pmi.ours++;
		t->pmi.root_claimed++;
		pmi_rearm_lvt(cpu);
		return;
	}
	t->pmi_expect--;
}

static void pmi_log(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;

	if (!t->pmi_lvt_held)
		return;
	log_info("trace: cpu %u: window %llu PMIs: %llu ours (%llu taken in VMX root), %llu NMIs reflected to the guest, LVT retaken %llu times",
		 cpu->index, (unsigned long long)t->windows, (unsigned long long)t->pmi.ours,
		 (unsigned long long)t->pmi.root_claimed, (unsigned long long)t->pmi.reflected,
		 (unsigned long long)t->pmi.lvt_retaken);
}

/*
 * lbr with pmi: the last general-purpose counter counts the architectural
 * event "branch instructions retired" (C4H, umask 0: taken or not, so it
 * overflows no later than the stack, which keeps taken branches only,
 * could fill) with USR, OS and INT, from -pmc_period; overflow raises the
 * PMI, and DEBUGCTL.FREEZE_LBRS_ON_PMI freezes the stack until the NMI
 * exit has read it (SDM 3B "Architectural Performance Monitoring",
 * "Freezing LBR and Performance Counters on PMI").  Its enable bit is
 * set only in the VMCS field loaded on entry (the exit loads 0), so it
 * counts the guest's branches, never the hypervisor's.
 */
#define PMC_EVTSEL(i)       (0x186u + (i))
#define PMC_COUNTER(i)      (0xc1u + (i))
#define PMC_EVENT_BRANCHES  0xc4u
#define PMC_USR             (1ull << 16)
#define PMC_OS              (1ull << 17)
#define PMC_INT             (1ull << 20)
#define PMC_EN              (1ull << 22)

/* The counter from -period (a legacy write: bits 31:0, sign-extended). */
static void pmc_load(struct trace_cpu *t)
{
	hw_wrmsr(PMC_COUNTER(t->pmc_idx), (uint64_t)(uint32_t)-(int32_t)t->pmc_period);
}

/* 0, or TV_HC_ENOSYS with the reason logged. */
static int pmc_arm(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	struct hw_cpuid_regs r;
	uint32_t ver, ngp, depth = t->lbr_caps.depth;

	hw_cpuid(0xa, 0, &r);
	ver = r.eax & 0xff;
	ngp = (r.eax >> 8) & 0xff;
	if (ver < 2 || ngp < 1 || ngp > 8 || ((r.eax >> 24) & 0xff) < 6 || (r.ebx & (1u << 5))) {
		log_err("trace: cpu %u: lbr window not opened: pmi needs perfmon v2+ with the branch-instructions-retired event (CPUID.0AH: EAX %#x EBX %#x)",
			cpu->index, r.eax, r.ebx);
		return TV_HC_ENOSYS;
	}
	if (!(cpu->entry_ctls & ENTRY_LOAD_PERF_GLOBAL_CTRL) ||
	    !(cpu->exit_ctls & EXIT_LOAD_PERF_GLOBAL_CTRL)) {
		log_err("trace: cpu %u: lbr window not opened: pmi needs the VM-entry and VM-exit controls that load IA32_PERF_GLOBAL_CTRL",
			cpu->index);
		return TV_HC_ENOSYS;
	}
	t->pmc_idx = ngp - 1;
	t->pmc_period = setup.pmi_every ? setup.pmi_every : depth - depth / 4;
	if (!t->pmc_period || t->pmc_period > depth) {
		log_err("trace: cpu %u: lbr window not opened: pmi_every = %u must be at most the stack's %u entries",
			cpu->index, t->pmc_period, depth);
		return TV_HC_ENOSYS;
	}
	hw_wrmsr(PMC_EVTSEL(t->pmc_idx), 0);
	pmc_load(t);
	hw_wrmsr(PMC_EVTSEL(t->pmc_idx), PMC_EVENT_BRANCHES | PMC_USR | PMC_OS | PMC_INT | PMC_EN);
	hw_wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, (1ull << t->pmc_idx) | LBR_GLOBAL_STATUS_LBR_FRZ);
	vmcs_write(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL,
		   vmcs_get(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL) | 1ull << t->pmc_idx);
	t->pmc_on = true;
	return 0;
}

static void pmc_disarm(struct trace_cpu *t)
{
	if (!t->pmc_on)
		return;
	hw_wrmsr(PMC_EVTSEL(t->pmc_idx), 0);
	hw_wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, (1ull << t->pmc_idx) | LBR_GLOBAL_STATUS_LBR_FRZ);
	vmcs_write(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL,
		   vmcs_get(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL) & ~(1ull << t->pmc_idx));
	t->pmc_on = false;
}

/*
 * lbr: the counter overflowed (the PMI's NMI exit, or found at another
 * exit): read the frozen stack, unfreeze, acknowledge, reload the
 * counter.  *other receives the guest's status bits.  Returns true when
 * it was ours; *full when the ring refused records.
 */
static bool lbr_pmi_now(struct per_cpu *cpu, uint64_t *other, bool *full)
{
	struct trace_cpu *t = &cpu->trace;
	uint64_t dbg = vmcs_get(VMCS_GUEST_IA32_DEBUGCTL), d = dbg;
	uint64_t rec = t->lbr.stats.recorded, dropped = t->lbr.stats.dropped;
	uint64_t st = hw_rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
	int rc = lbr_pmi(&t->lbr, t->ring, cpu_filter(t), &d);

	*other = st & PMI_GUEST_STATUS & ~(1ull << t->pmc_idx);
	t->window_branches += t->lbr.stats.recorded - rec;
	*full = t->lbr.stats.dropped != dropped;
	if (d != dbg)
		vmcs_write(VMCS_GUEST_IA32_DEBUGCTL, d);
	if (rc != LBR_PMI_OURS)
		return false;
	pmc_load(t);
	return true;
}

static void pmi_reflect(struct per_cpu *cpu)
{
	cpu->trace.pmi.reflected++;
	__atomic_fetch_add(&cpu->nmi_pending, 1, __ATOMIC_ACQ_REL);
}

enum exit_action trace_nmi_exit(struct exit_ctx *ctx)
{
	struct per_cpu *cpu = ctx->cpu;
	struct trace_cpu *t = &cpu->trace;
	bool ours = false, full = false;
	uint64_t other = 0;

	t->pmi.nmis++;
	if (!t->ring || !t->active || !t->pmi_lvt_held) {
		pmi_reflect(cpu);
		return EXIT_RESUME;
	}
	switch (setup.source) {
	case TV_SOURCE_BTS: {
		uint64_t rec = t->bts.stats.recorded, dropped = t->bts.stats.dropped;
		int rc = bts_on_pmi(&t->bts, t->ring, cpu_filter(t), vmcs_get(VMCS_GUEST_CR3),
				    hw_rdtsc());

		/* A drain error (corrupt DS fields) was still our PMI: counted, noted. */
		ours = rc == BTS_PMI_OURS || (rc < 0 && rc != BTS_ERR_INVAL);
		t->window_branches += t->bts.stats.recorded - rec;
		full = t->bts.stats.dropped != dropped;
		/* bts_on_pmi cleared OvfBuffer; what is left is the guest's */
		if (t->bts_caps.pmu_version >= 2)
			other = hw_rdmsr(MSR_IA32_PERF_GLOBAL_STATUS) & PMI_GUEST_STATUS;
		break;
	}
	case TV_SOURCE_LBR:
		if (t->pmc_on)
			ours = lbr_pmi_now(cpu, &other, &full);
		break;
	case TV_SOURCE_PT: {
		struct pt_sink sink = { byte_ring_write, &t->pt_ring };
		uint64_t refused = t->pt.stats.sink_dropped + t->pt.stats.syncs_dropped;
		int rc = pt_on_pmi(&t->pt, &sink, t->ring, hw_rdtsc(), &other);

		ours = rc == PT_PMI_OURS || (rc < 0 && rc != PT_ERR_INVAL);
		if (rc < 0)
			pt_drain_failed(cpu, rc);
		other &= PMI_GUEST_STATUS;
		full = t->pt.stats.sink_dropped + t->pt.stats.syncs_dropped != refused;
		break;
	}
	default:
		break;
	}
	if (!ours && t->pmi_expect) {
		ours = true;           /* its condition was drained earlier in this or the last exit */
		t->pmi_expect = 0;
	}
	if (ours) {
		t->pmi.ours++;
		pmi_rearm_lvt(cpu);
	}
	if (!ours || other)
		pmi_reflect(cpu);
	if (full)
		trace_stop(cpu, TV_TRIG_FULL);
	return EXIT_RESUME;
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

/* Can this CPU open a window of the configured source?  0 or TV_HC_ENOSYS. */
static int source_usable(struct per_cpu *cpu)
{
	switch (setup.source) {
	case TV_SOURCE_MTF:
		return mtf_offered(cpu) ? 0 : TV_HC_ENOSYS;
	case TV_SOURCE_BTF:
	case TV_SOURCE_LBR:
		return lbr_usable(cpu) ? 0 : TV_HC_ENOSYS;
	case TV_SOURCE_BTS:
		return bts_usable(cpu) ? 0 : TV_HC_ENOSYS;
	case TV_SOURCE_PT:
		return pt_usable(cpu) ? 0 : TV_HC_ENOSYS;
	default:
		return TV_HC_ENOSYS;
	}
}

int trace_start(struct per_cpu *cpu, enum tv_trigger why)
{
	struct trace_cpu *t = &cpu->trace;
	int rc;

	if (!t->ring || source_usable(cpu))
		return TV_HC_ENOSYS;
	if (t->active)
		return TV_HC_EBUSY;
	if (pmi_take_lvt(cpu))
		return TV_HC_ENOSYS;
	memset(&t->pmi, 0, sizeof(t->pmi));
	t->pmi_expect = 0;
	switch (setup.source) {
	case TV_SOURCE_BTF:
		/* The shadow btf_start checks: the guest's bits, ours stripped. */
		btf_debugctl_write(&t->btf, vmcs_get(VMCS_GUEST_IA32_DEBUGCTL) & ~debugctl_owned());
		rc = btf_start(&t->btf, vmcs_get(VMCS_GUEST_RFLAGS));
		if (rc) {
			log_warn("trace: cpu %u: btf window not opened: %s", cpu->index,
				 btf_strerror(rc));
			return TV_HC_EBUSY;
		}
		memset(&t->btf.stats, 0, sizeof(t->btf.stats));
		/*
		 * LBR_SELECT 0: the top of the stack must be the branch that
		 * stepped, whatever it is; btf_on_db filters in software.
		 */
		lbr_start(&t->lbr, &t->lbr_caps, NULL, LBR_KINDS_ALL, 0);
		break;
	case TV_SOURCE_LBR:
		if (setup.pmi && pmc_arm(cpu))
			return TV_HC_ENOSYS;
		/* Empties the stack: nothing older than the window is recorded. */
		lbr_start(&t->lbr, &t->lbr_caps, cpu_filter(t), LBR_KINDS_ALL,
			  t->pmc_on ? 1ull << t->pmc_idx : 0);
		break;
	case TV_SOURCE_BTS:
		/* An empty buffer: nothing older than the window is recorded. */
		if (bts_window_setup(cpu))
			return TV_HC_ENOSYS;
		t->bts_map_known = false;
		t->bts_unmapped = 0;
		break;
	case TV_SOURCE_PT:
		/* PSB+ at the first entry: the stream can be decoded from here. */
		if (pt_window_setup(cpu))
			return TV_HC_ENOSYS;
		memset(&t->pt.stats, 0, sizeof(t->pt.stats));

		if (setup.stop_after && t->windows == 0)
			log_warn("trace: cpu %u: stop_after does not apply to pt (the hypervisor does not decode PT)",
				 cpu->index);
		break;
	default:
		mtf_reset(&t->mtf);
		break;
	}
	t->active = true;
	t->window_branches = 0;
	/* pt: the drain tick counts from the window's start (vmm/exit/periodic.c). */
	if (setup.source == TV_SOURCE_PT && cpu->drain_period_tsc &&
	    (cpu->pin & PIN_PREEMPTION_TIMER)) {
		uint64_t now = hw_rdtsc();

		cpu->next_drain_tsc = now + cpu->drain_period_tsc;
		vmcs_write(VMCS_PREEMPTION_TIMER_VALUE, vcpu_timer_value(cpu, now));
	}
	t->windows++;
	trace_append_start(t->ring, hw_rdtsc(), why, guest_linear_ip());
	if (setup.source == TV_SOURCE_MTF)
		set_mtf(cpu, true);
	/* btf, lbr, bts and pt arm in trace_before_entry, before this exit's VM entry. */
	log_info("trace: cpu %u: window %llu started (%s) at %#llx", cpu->index,
		 (unsigned long long)t->windows, trace_trigger_name(why),
		 (unsigned long long)guest_linear_ip());
	return TV_HC_OK;
}

static void log_stop(struct per_cpu *cpu, enum tv_trigger why)
{
	struct trace_cpu *t = &cpu->trace;
	const char *trig = trace_trigger_name(why);
	unsigned long long w = t->windows, b = t->window_branches, lost = t->ring->lost_records;

	switch (setup.source) {
	case TV_SOURCE_BTF:
		log_info("trace: cpu %u: window %llu stopped (%s): %llu branches, %llu filtered, %llu dropped, %llu undecodable, %llu from unknown, %llu #DB exits, %llu reflected, %llu stray; ring lost %llu records",
			 cpu->index, w, trig, b, (unsigned long long)t->btf.stats.filtered,
			 (unsigned long long)t->btf.stats.dropped,
			 (unsigned long long)t->btf.stats.decode_errors,
			 (unsigned long long)t->btf.stats.from_unknown,
			 (unsigned long long)t->btf.stats.db_exits,
			 (unsigned long long)t->btf.stats.reflected,
			 (unsigned long long)t->btf.stats.stray, lost);
		break;
	case TV_SOURCE_LBR:
		log_info("trace: cpu %u: window %llu stopped (%s): %llu branches, %llu filtered, %llu dropped, %llu reads, %llu full reads (older branches lost); ring lost %llu records",
			 cpu->index, w, trig, b, (unsigned long long)t->lbr.stats.filtered,
			 (unsigned long long)t->lbr.stats.dropped,
			 (unsigned long long)t->lbr.stats.reads,
			 (unsigned long long)t->lbr.stats.full_reads, lost);
		break;
	case TV_SOURCE_BTS:
		log_info("trace: cpu %u: window %llu stopped (%s): %llu branches, %llu filtered, %llu dropped, %llu drains, %llu wraps (at least %llu branches lost), %llu bad, %llu corrupt, %llu entries unmapped; ring lost %llu records",
			 cpu->index, w, trig, b,
			 (unsigned long long)(t->bts.stats.filtered + t->bts.stats.filtered_cr3),
			 (unsigned long long)t->bts.stats.dropped,
			 (unsigned long long)t->bts.stats.drains,
			 (unsigned long long)t->bts.stats.wraps,
			 (unsigned long long)t->bts.stats.lost_min,
			 (unsigned long long)t->bts.stats.bad,
			 (unsigned long long)t->bts.stats.corrupt,
			 (unsigned long long)t->bts_unmapped, lost);
		break;
	case TV_SOURCE_PT:
		log_info("trace: cpu %u: window %llu stopped (%s): %llu PT bytes (stream at %llu), %llu drains, %llu stops, %llu errors, %llu bad pointers, %llu bytes refused, %llu drain failures, PT lost %llu; ring lost %llu records",
			 cpu->index, w, trig, (unsigned long long)t->pt.stats.bytes,
			 (unsigned long long)t->pt.stream_bytes,
			 (unsigned long long)t->pt.stats.drains,
			 (unsigned long long)t->pt.stats.stops,
			 (unsigned long long)t->pt.stats.errors,
			 (unsigned long long)t->pt.stats.bad_pointers,
			 (unsigned long long)t->pt.stats.sink_dropped,
			 (unsigned long long)t->pt_drain_errors,
			 (unsigned long long)t->pt.lost, lost);
		break;
	default:
		log_info("trace: cpu %u: window %llu stopped (%s): %llu branches, %llu events, %llu filtered, %llu dropped, %llu undecodable, %llu steps; ring lost %llu records",
			 cpu->index, w, trig, b, (unsigned long long)t->mtf.stats.events,
			 (unsigned long long)t->mtf.stats.filtered,
			 (unsigned long long)t->mtf.stats.dropped,
			 (unsigned long long)t->mtf.stats.decode_errors,
			 (unsigned long long)t->mtf.stats.observations, lost);
		break;
	}
}

int trace_stop(struct per_cpu *cpu, enum tv_trigger why)
{
	struct trace_cpu *t = &cpu->trace;

	if (!t->ring || (setup.source != TV_SOURCE_MTF && !hw_source()))
		return TV_HC_ENOSYS;
	if (!t->active)
		return TV_HC_EBUSY;
	t->active = false;
	switch (setup.source) {
	case TV_SOURCE_BTF:
		/* TF and DEBUGCTL come off in trace_before_entry (btf_prepare_entry). */
		btf_stop(&t->btf);
		lbr_stop(&t->lbr);
		break;
	case TV_SOURCE_LBR:
		/* The branches since the last exit, before the STOP record. */
		lbr_drain(t);
		lbr_stop(&t->lbr);
		pmc_disarm(t);
		break;
	case TV_SOURCE_BTS:
		/* The branches since the last exit, before the STOP record. */
		bts_drain_now(t);
		bts_set_debugctl(cpu);   /* off now, whoever stopped the window */
		break;
	case TV_SOURCE_PT:
		/* The bytes since the last exit, before the STOP record. */
		pt_drain_now(cpu);
		pt_set_ctl(cpu);         /* TraceEn off from the next entry on */
		break;
	default:
		set_mtf(cpu, false);
		break;
	}
	trace_append_stop(t->ring, hw_rdtsc(), why, guest_linear_ip());
	log_stop(cpu, why);
	pmi_log(cpu);
	if (window_done)
		window_done(cpu);
	return TV_HC_OK;
}

/* mtf: record the transfer since the last exit. */
static void mtf_before_entry(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	struct gmem_ctx g;
	struct mtf_guest mg;
	int rc;

	/* A CPU waiting for SIPI runs nothing: its next IP is the SIPI vector. */
	if (cpu->sipi_state == VCPU_WAIT_FOR_SIPI) {
		mtf_reset(&t->mtf);
		return;
	}
	read_guest(&mg);
	gmem_from_vmcs(&g);
	rc = mtf_observe(&t->mtf, t->ring, cpu_filter(t), &mg, fetch_guest, &g);
	if (rc == 1)
		t->window_branches++;
	if (rc == TRACE_ERR_FULL)
		trace_stop(cpu, TV_TRIG_FULL);
	else if (setup.stop_after && t->window_branches >= setup.stop_after)
		trace_stop(cpu, TV_TRIG_LIMIT);
}

int trace_request_filter(struct per_cpu *cpu, const struct trace_filter *f)
{
	struct trace_cpu *t = &cpu->trace;

	if (!f || !f->cpl || (f->cpl & ~TRACE_CPL_ALL) || f->nranges > TRACE_MAX_RANGES)
		return TRACE_REQ_EINVAL;
	for (uint32_t i = 0; i < f->nranges; i++)
		if (f->ranges[i].lo > f->ranges[i].hi)
			return TRACE_REQ_EINVAL;
	if (!t->ring || setup.source == TV_SOURCE_NONE)
		return TRACE_REQ_ENOSYS;
	/* The slot is ours to write only while no filter is pending. */
	if (__atomic_load_n(&t->req_pending, __ATOMIC_ACQUIRE) & TRACE_REQ_FILTER)
		return TRACE_REQ_EBUSY;
	t->req_filter = *f;
	__atomic_fetch_or(&t->req_pending, TRACE_REQ_FILTER, __ATOMIC_RELEASE);
	return TRACE_REQ_OK;
}

int trace_request(struct per_cpu *cpu, uint32_t req, uint64_t marker_id,
		  const char *label, size_t len)
{
	struct trace_cpu *t = &cpu->trace;

	if (!req || (req & (req - 1)) || (req & ~(TRACE_REQ_START | TRACE_REQ_STOP | TRACE_REQ_MARKER)))
		return TRACE_REQ_EINVAL;
	if (!t->ring || setup.source == TV_SOURCE_NONE)
		return TRACE_REQ_ENOSYS;
	switch (req) {
	case TRACE_REQ_MARKER:
		/* The label is ours to write only while no marker is pending. */
		if (__atomic_load_n(&t->req_pending, __ATOMIC_ACQUIRE) & TRACE_REQ_MARKER)
			return TRACE_REQ_EBUSY;
		if (len > TRACE_REQ_LABEL_MAX)
			len = TRACE_REQ_LABEL_MAX;
		t->req_marker_id = marker_id;
		t->req_label_len = (uint8_t)len;
		if (len)
			memcpy(t->req_label, label, len);
		break;
	case TRACE_REQ_START:
		__atomic_fetch_and(&t->req_pending, ~TRACE_REQ_STOP, __ATOMIC_RELAXED);
		break;
	default:
		__atomic_fetch_and(&t->req_pending, ~TRACE_REQ_START, __ATOMIC_RELAXED);
		break;
	}
	__atomic_fetch_or(&t->req_pending, req, __ATOMIC_RELEASE);
	return TRACE_REQ_OK;
}

/* The requests other CPUs queued for this one (trace_request). */
static void apply_requests(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;
	uint32_t req = __atomic_load_n(&t->req_pending, __ATOMIC_ACQUIRE);

	if (!req)
		return;
	if (req & TRACE_REQ_FILTER) {
		t->filter = t->req_filter;
		t->filter_set = true;
		__atomic_fetch_and(&t->req_pending, ~TRACE_REQ_FILTER, __ATOMIC_RELEASE);
		t->req_applied++;
	}
	if (req & TRACE_REQ_MARKER) {
		/* Read the label before giving the slot back. */
		uint64_t id = t->req_marker_id;
		uint8_t len = t->req_label_len;
		char label[TRACE_REQ_LABEL_MAX];

		memcpy(label, t->req_label, len);
		__atomic_fetch_and(&t->req_pending, ~TRACE_REQ_MARKER, __ATOMIC_RELEASE);
		/* A dropped marker (STOP policy, ring full) is counted by the ring. */
		trace_append_marker(t->ring, hw_rdtsc(), id, label, len);
		t->req_applied++;
	}
	req = __atomic_fetch_and(&t->req_pending, ~(TRACE_REQ_START | TRACE_REQ_STOP),
				 __ATOMIC_ACQ_REL) & (TRACE_REQ_START | TRACE_REQ_STOP);
	if (req & TRACE_REQ_START) {
		if (trace_start(cpu, TV_TRIG_RECEIVER) == TV_HC_OK)
			t->req_applied++;
		else
			t->req_refused++;
	} else if (req & TRACE_REQ_STOP) {
		if (trace_stop(cpu, TV_TRIG_RECEIVER) == TV_HC_OK)
			t->req_applied++;
		else
			t->req_refused++;
	}
}

void trace_before_entry(struct per_cpu *cpu)
{
	struct trace_cpu *t = &cpu->trace;

	if (!t->ring)
		return;
	apply_requests(cpu);
	if (t->trigger_step && vmcs_get(VMCS_EXIT_REASON) != EXIT_REASON_EPT_VIOLATION)
		trigger_step_done(cpu);
	if (t->kentry_step && vmcs_get(VMCS_EXIT_REASON) != EXIT_REASON_EPT_VIOLATION)
		kentry_step(cpu);
	if (!t->boot_started) {
		t->boot_started = true;
		if (setup.start == TV_TRIG_BOOT && trace_start(cpu, TV_TRIG_BOOT) != TV_HC_OK)
			log_warn("trace: cpu %u: could not start at boot", cpu->index);
	}
	switch (setup.source) {
	case TV_SOURCE_MTF:
		if (t->active)
			mtf_before_entry(cpu);
		break;
	case TV_SOURCE_BTF:
		/* Also after a window: a TF we armed must come off. */
		btf_before_entry(cpu);
		break;
	case TV_SOURCE_LBR:
		/*
		 * Every exit of a window drains: without a PMI these are the
		 * only read points (the exit cleared DEBUGCTL, the stack is
		 * as the guest left it).
		 */
		if (t->active && t->pmc_on &&
		    (hw_rdmsr(MSR_IA32_PERF_GLOBAL_STATUS) & ((1ull << t->pmc_idx) | LBR_GLOBAL_STATUS_LBR_FRZ))) {
			/* overflowed before this exit: its PMI is on the way or was taken in root */
			uint64_t other;
			bool full;

			if (lbr_pmi_now(cpu, &other, &full))
				pmi_expect(t);
			if (full)
				trace_stop(cpu, TV_TRIG_FULL);
		} else if (t->active && lbr_drain(t))
			trace_stop(cpu, TV_TRIG_FULL);
		else if (t->active && setup.stop_after && t->window_branches >= setup.stop_after)
			trace_stop(cpu, TV_TRIG_LIMIT);
		lbr_set_debugctl(cpu);
		break;
	case TV_SOURCE_BTS:
		/*
		 * The same read points as lbr; with pmi also the DS interrupt
		 * (trace_nmi_exit).  An index at the threshold here means that
		 * interrupt is on its way or was taken in VMX root.
		 */
		if (t->active && t->bts.ready && t->bts.mode == BTS_MODE_INT &&
		    __atomic_load_n(&t->bts.ds->bts_index, __ATOMIC_RELAXED) >= t->bts.threshold)
			pmi_expect(t);
		if (t->active && bts_drain_now(t))
			trace_stop(cpu, TV_TRIG_FULL);
		else if (t->active && setup.stop_after && t->window_branches >= setup.stop_after)
			trace_stop(cpu, TV_TRIG_LIMIT);
		bts_set_debugctl(cpu);
		break;
	case TV_SOURCE_PT:
		/* Every exit of a window drains: the regions are free again. */
		if (t->active && pt_drain_now(cpu))
			trace_stop(cpu, TV_TRIG_FULL);
		if (t->pt.pmi_taken) {
			/* the drain consumed Trace_ToPA_PMI: its NMI is ours */
			t->pt.pmi_taken = false;
			pmi_expect(t);
		}
		pt_set_ctl(cpu);
		break;
	default:
		break;
	}
	if (trace_engine_wants_nmi_exiting())
		pmi_claim_root(cpu);
}

enum exit_action exit_monitor_trap(struct exit_ctx *ctx)
{
	(void)ctx;
	return EXIT_RESUME;
}

/* --- #DB exits (btf) ----------------------------------------------------------- */

bool trace_owns_db(const struct per_cpu *cpu)
{
	return setup.source == TV_SOURCE_BTF && cpu->trace.ring && cpu->trace.db_intercepted;
}

enum exit_action exit_debug_exception(struct exit_ctx *ctx)
{
	struct per_cpu *cpu = ctx->cpu;
	struct trace_cpu *t = &cpu->trace;
	uint64_t info = vmcs_get(VMCS_EXIT_INTR_INFO);
	uint32_t type = (uint32_t)(info >> INTR_INFO_TYPE_SHIFT) & 7u;
	struct btf_db in;
	struct btf_db_result out;
	struct mtf_guest g;
	struct gmem_ctx gm;
	struct lbr_entry top;
	uint64_t dropped = t->btf.stats.dropped;

	if (type == INTR_TYPE_PRIV_SW_EXC) {
		/*
		 * INT1 (ICEBP) exits through bit 1 too; it is the guest's,
		 * delivered as it was: type 5 with its length (SDM 3C 27.6.1.1).
		 */
		vmcs_write(VMCS_ENTRY_INSTRUCTION_LEN, vmcs_get(VMCS_EXIT_INSTRUCTION_LEN));
		vmcs_write(VMCS_ENTRY_INTR_INFO, info & (INTR_INFO_VALID | 0x7ffu));
		return EXIT_RESUME;
	}
	read_guest(&g);
	memset(&in, 0, sizeof(in));
	in.qual = ctx->qualification;
	in.dr6 = hw_read_dr6();   /* VMX does not switch DR6: the guest's */
	in.rip = g.ip;
	in.cs_base = g.cs_base;
	in.rflags = vmcs_get(VMCS_GUEST_RFLAGS);
	in.cr3 = g.cr3;
	in.cpl = g.cpl;
	in.mode = g.mode;
	/* The exit cleared DEBUGCTL, not the stack: its top is the branch. */
	if (lbr_top(&t->lbr, &top)) {
		in.lbr_valid = true;
		in.lbr_from = top.from;
		in.lbr_to = top.to;
	}
	gmem_from_vmcs(&gm);
	btf_on_db(&t->btf, t->ring, cpu_filter(t), &in, fetch_guest, &gm, &out);
	if (out.recorded)
		t->window_branches++;
	if (out.rflags != in.rflags)
		vmcs_write(VMCS_GUEST_RFLAGS, out.rflags);
	if (out.action == BTF_REFLECT) {
		/* Delivery would have written DR6 (and cleared DR7.GD for BD). */
		hw_write_dr6(out.dr6);
		if (out.clear_dr7_gd)
			vmcs_write(VMCS_GUEST_DR7, vmcs_get(VMCS_GUEST_DR7) & ~BTF_DR7_GD);
		exit_inject_exception(ctx, VEC_DB, false, 0);
	}
	if (t->active && t->btf.stats.dropped != dropped)
		trace_stop(cpu, TV_TRIG_FULL);
	else if (t->active && setup.stop_after && t->window_branches >= setup.stop_after)
		trace_stop(cpu, TV_TRIG_LIMIT);
	return EXIT_RESUME;
}
