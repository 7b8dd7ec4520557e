/* SPDX-License-Identifier: MIT */
/*
 * guest.c - the guest state the engine and its backends read at an exit
 * (through the VMCS and the guest's own page tables), and the entry view
 * (struct trace_view, vmm/trace/backend.h): the VM-entry fields a backend
 * reads and sets, loaded from the VMCS on first use and written back when
 * its op returns.
 */
#include <string.h>

#include "vmm/exit/exit.h"
#include "vmm/hw/hw.h"
#include "vmm/trace/cpu.h"
#include "vmm/vmx/vcpu.h"
#include "vmm/vmx/vmx.h"

#define SEG_AR_DB (1u << 14)

static gmem_read_phys_fn phys_reader;
static void *phys_ctx;
static uint8_t maxphyaddr;

void trace_guest_reset(void)
{
	struct hw_cpuid_regs r;

	hw_cpuid(0x80000000u, 0, &r);
	maxphyaddr = 36;
	if (r.eax >= 0x80000008u) {
		hw_cpuid(0x80000008u, 0, &r);
		maxphyaddr = (uint8_t)(r.eax & 0xff);
	}
}

void trace_guest_set_reader(gmem_read_phys_fn read_phys, void *ctx)
{
	phys_reader = read_phys;
	phys_ctx = ctx;
}

int trace_guest_read_phys(uint64_t gpa, void *buf, size_t len)
{
	return phys_reader ? phys_reader(phys_ctx, gpa, buf, len) : -1;
}

uint64_t trace_guest_ip(void)
{
	return vmcs_get(VMCS_GUEST_CS_BASE) + vmcs_get(VMCS_GUEST_RIP);
}

uint64_t trace_guest_rsp(void)
{
	return vmcs_get(VMCS_GUEST_RSP);
}

uint64_t trace_guest_cr0(void)
{
	return vmcs_get(VMCS_GUEST_CR0);
}

uint64_t trace_guest_cr3(void)
{
	return vmcs_get(VMCS_GUEST_CR3);
}

void trace_guest_read(struct trace_guest *g)
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

/* Guest-linear reads for the decoders: through the guest's own page tables. */
size_t trace_guest_fetch(void *ctx, uint64_t linear, uint8_t *buf, size_t len)
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

void trace_guest_mem(struct gmem_ctx *g)
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

/* --- the MTF control --------------------------------------------------------- */

void trace_set_mtf(struct per_cpu *cpu, bool on)
{
	if (on)
		cpu->proc |= CPU_MONITOR_TRAP_FLAG;
	else
		cpu->proc &= ~CPU_MONITOR_TRAP_FLAG;
	vmcs_write(VMCS_PROC_BASED_CTLS, cpu->proc);
}

/* --- the entry view ---------------------------------------------------------- */

/* The VMCS field of each view field (0: not a plain field). */
static const uint32_t view_field[TRACE_VIEW_FIELDS] = {
	[TRACE_VIEW_DEBUGCTL] = VMCS_GUEST_IA32_DEBUGCTL,
	[TRACE_VIEW_RFLAGS] = VMCS_GUEST_RFLAGS,
	[TRACE_VIEW_PENDING_DBG] = VMCS_GUEST_PENDING_DBG_EXCEPTIONS,
	[TRACE_VIEW_INTERRUPTIBILITY] = VMCS_GUEST_INTERRUPTIBILITY,
	[TRACE_VIEW_ACTIVITY] = VMCS_GUEST_ACTIVITY_STATE,
	[TRACE_VIEW_RTIT_CTL] = VMCS_GUEST_IA32_RTIT_CTL,
	[TRACE_VIEW_LBR_CTL] = VMCS_GUEST_IA32_LBR_CTL,
	[TRACE_VIEW_PERF_GLOBAL_CTRL] = VMCS_GUEST_IA32_PERF_GLOBAL_CTRL,
	[TRACE_VIEW_EXC_BITMAP] = VMCS_EXCEPTION_BITMAP,
	[TRACE_VIEW_DR7] = VMCS_GUEST_DR7,
};

void trace_view_begin(struct trace_view *v, struct per_cpu *cpu)
{
	v->ctx = cpu;
	v->loaded = 0;
	v->dirty = 0;
	v->reflect_db = false;
}

uint64_t trace_view_get(struct trace_view *v, enum trace_view_field f)
{
	struct per_cpu *cpu = v->ctx;

	if ((unsigned)f >= TRACE_VIEW_FIELDS)
		return 0;
	if (!(v->loaded & (1u << f))) {
		if (f == TRACE_VIEW_MTF)
			v->val[f] = (cpu->proc & CPU_MONITOR_TRAP_FLAG) != 0;
		else
			v->val[f] = vmcs_get(view_field[f]);
		v->loaded |= 1u << f;
	}
	return v->val[f];
}

void trace_view_set(struct trace_view *v, enum trace_view_field f, uint64_t value)
{
	if ((unsigned)f >= TRACE_VIEW_FIELDS)
		return;
	v->val[f] = value;
	v->loaded |= 1u << f;
	v->dirty |= 1u << f;
}

void trace_view_flush(struct trace_view *v)
{
	struct per_cpu *cpu = v->ctx;

	for (unsigned f = 0; v->dirty && f < TRACE_VIEW_FIELDS; f++) {
		if (!(v->dirty & (1u << f)))
			continue;
		v->dirty &= ~(1u << f);
		if (f == TRACE_VIEW_MTF)
			trace_set_mtf(cpu, v->val[f] != 0);
		else
			vmcs_write(view_field[f], v->val[f]);
	}
}
