/* SPDX-License-Identifier: MIT */
/*
 * pmctest.c - guest program for the Bochs performance-counter model test
 * (tests/bochs/pmc-model.sh, docs/BOCHS-MODEL.md).  A UEFI application
 * started directly by OVMF (no tracevisor), in ring 0 with interrupts off:
 * it counts the 13 known branch instructions of pmc_code.S's sequence with
 * the model's general-purpose counters under several settings, lets the
 * counter-overflow PMI freeze the LBR stack or the counters, enters a VMX
 * guest with the "load IA32_PERF_GLOBAL_CTRL" controls, and prints on COM1
 * what the modelled hardware did, one line per fact:
 *
 *   PMCTEST base pmct_run 0xADDR          where the image was loaded
 *   PMCTEST cpuid 0ah eax 0xA perfcap 0xP gctl-reset 0xG
 *                                         CPUID.0AH:EAX, IA32_PERF_CAPABILITIES,
 *                                         IA32_PERF_GLOBAL_CTRL as found
 *   PMCTEST run NAME gctl 0xG pmc 0xA 0xB 0xC 0xD status 0xS pending N tos N debugctl 0xD
 *       one pmct_run with IA32_PERF_GLOBAL_CTRL = G: the four counters,
 *       IA32_PERF_GLOBAL_STATUS and whether the PMI vector is pending in
 *       the local APIC's IRR right after it, MSR_LASTBRANCH_TOS, and
 *       IA32_DEBUGCTL as the run left it (before pmct_run clears it)
 *   PMCTEST lbr NAME I 0xFROM 0xTO        LBR entry I (0 = oldest) of that run
 *   PMCTEST pmi NAME count N rip 0xR lvt 0xL status 0xS tos N
 *       after an STI window: PMIs taken, where, the LVT performance
 *       monitoring entry after it, IA32_PERF_GLOBAL_STATUS, TOS
 *   PMCTEST status set 0xS reset 0xS     IA32_PERF_GLOBAL_STATUS after writing
 *                                         0x391, then 0x390, with the same bits
 *   PMCTEST msr legacy 0xA 0xB full 0xC gp N
 *       IA32_PMC0 after legacy writes of 0x80000000 and 0x7fffffff, after a
 *       full-width write; #GPs of the six invalid writes
 *   PMCTEST rdpmc 0xV msr 0xV fixed 0xF gp N
 *   PMCTEST vmx NAME launch RC reason 0xR err N pmc0 0xV gctl-after 0xG field 0xF
 *       one VM entry and exit; see vmx_check
 *   PMCTEST vmx caps entry13 N exit12 N exit30 N
 *   PMCTEST done
 */
#include <efi.h>
#include <stdint.h>

#include "vmm/hw.h"
#include "vmm/vmx_defs.h"
#include "tests/payload/guest_idt.h"
#include "tests/payload/guest_out.h"

#define MSR_APIC_BASE 0x1b
#define MSR_PMC0 0xc1
#define MSR_PERFEVTSEL0 0x186
#define MSR_LBR_SELECT 0x1c8
#define MSR_LASTBRANCH_TOS 0x1c9
#define MSR_DEBUGCTL 0x1d9
#define MSR_PERF_CAPABILITIES 0x345
#define MSR_PERF_GLOBAL_STATUS 0x38e
#define MSR_PERF_GLOBAL_CTRL 0x38f
#define MSR_PERF_GLOBAL_STATUS_RESET 0x390
#define MSR_PERF_GLOBAL_STATUS_SET 0x391
#define MSR_A_PMC0 0x4c1
#define MSR_LBR_FROM_0 0x680
#define MSR_LBR_TO_0 0x6c0
#define MSR_LBR_INFO_0 0xdc0
#define MSR_X2APIC_EOI 0x80b
#define MSR_X2APIC_IRR0 0x820
#define MSR_X2APIC_LVT_PMI 0x834
#define LBR_DEPTH 32

/* IA32_PERFEVTSELx (SDM 3B "Architectural Performance Monitoring Version 1") */
#define EVT(event, umask) ((uint64_t)(event) | ((uint64_t)(umask) << 8))
#define EVT_USR (1ull << 16)
#define EVT_OS (1ull << 17)
#define EVT_INT (1ull << 20)
#define EVT_EN (1ull << 22)
#define EVT_INV (1ull << 23)
#define EVT_CMASK(n) ((uint64_t)(n) << 24)
#define BR_ALL EVT(0xc4, 0x00)        /* branch instructions retired */
#define BR_NEAR_TAKEN EVT(0xc4, 0x20) /* near taken branches retired */

#define DEBUGCTL_LBR (1ull << 0)
#define DEBUGCTL_FREEZE_LBRS_ON_PMI (1ull << 11)
#define DEBUGCTL_FREEZE_PERFMON_ON_PMI (1ull << 12)
#define STATUS_LBR_FRZ (1ull << 58)
#define STATUS_CTR_FRZ (1ull << 59)

/* VM-exit control "save IA32_PERF_GLOBAL_CTRL" (not in vmm/vmx_defs.h) */
#define EXIT_SAVE_PERF_GLOBAL_CTRL (1u << 30)

#define PMI_VECTOR 0xe5
#define INT_VECTOR 0xe6 /* pmc_code.S: PMCT_INT_VECTOR */

void pmct_run(uint64_t global_ctrl, uint64_t debugctl);
void pmct_int_handler(void);
void pmct_sti_window(void);
void pmct_pmi(void);
void pmct_gp(void);
void pmct_wrmsr(uint32_t msr, uint64_t value);
uint64_t pmct_rdpmc(uint32_t ecx);
int pmct_vmx_launch(void);
void pmct_guest(void);
extern uint64_t pmct_pmi_count, pmct_pmi_rip, pmct_gp_count, pmct_debugctl_after;

static int x2apic;

static void say(const char *s)
{
	com1_puts(s);
	com1_puts("\r\n");
}

/* ---- local APIC: the LVT performance monitoring entry, IRR, EOI ---- */

static volatile uint32_t *lapic_reg(uint32_t off)
{
	uint64_t base = hw_rdmsr(MSR_APIC_BASE) & ~0xfffull;

	return (volatile uint32_t *)(uintptr_t)(base + off);
}

static uint32_t lvt_pmi_read(void)
{
	return x2apic ? (uint32_t)hw_rdmsr(MSR_X2APIC_LVT_PMI) : *lapic_reg(0x340);
}

static void lvt_pmi_write(uint32_t v)
{
	if (x2apic)
		hw_wrmsr(MSR_X2APIC_LVT_PMI, v);
	else
		*lapic_reg(0x340) = v;
}

/* Is vector v requested in the IRR (SDM 3A "Interrupt Request Register")? */
static int lapic_irr(unsigned v)
{
	uint32_t w = x2apic ? (uint32_t)hw_rdmsr(MSR_X2APIC_IRR0 + v / 32) : *lapic_reg(0x200 + 0x10 * (v / 32));

	return (w >> (v % 32)) & 1;
}

static void lapic_eoi(void)
{
	if (x2apic)
		hw_wrmsr(MSR_X2APIC_EOI, 0);
	else
		*lapic_reg(0xb0) = 0;
}

/* ---- counters and LBR ---- */

/* All four counters: event selects and initial values. */
static void pmc_program(const uint64_t sel[4], const uint64_t init[4])
{
	for (uint32_t n = 0; n < 4; n++) {
		hw_wrmsr(MSR_PERFEVTSEL0 + n, sel[n]);
		hw_wrmsr(MSR_A_PMC0 + n, init[n]);
	}
}

static void lbr_clear(void)
{
	for (uint32_t i = 0; i < LBR_DEPTH; i++) {
		hw_wrmsr(MSR_LBR_FROM_0 + i, 0);
		hw_wrmsr(MSR_LBR_TO_0 + i, 0);
		hw_wrmsr(MSR_LBR_INFO_0 + i, 0);
	}
	hw_wrmsr(MSR_LASTBRANCH_TOS, 0);
	hw_wrmsr(MSR_LBR_SELECT, 0);
}

/* The whole stack, oldest first (entry TOS + 1 .. TOS). */
static void lbr_dump(const char *name)
{
	char line[160], *p;
	uint64_t tos = hw_rdmsr(MSR_LASTBRANCH_TOS);

	for (uint32_t i = 0; i < LBR_DEPTH; i++) {
		uint32_t n = (uint32_t)(tos + 1 + i) % LBR_DEPTH;

		p = append(line, "PMCTEST lbr ");
		p = append(p, name);
		p = append(p, " ");
		p = dec(p, i);
		p = append(p, " ");
		p = hex(p, hw_rdmsr(MSR_LBR_FROM_0 + n));
		p = append(p, " ");
		hex(p, hw_rdmsr(MSR_LBR_TO_0 + n));
		say(line);
	}
}

/* One pmct_run and its line (above); the LBR stack with dump. */
static void run(const char *name, uint64_t gctl, uint64_t debugctl, int dump)
{
	char line[240], *p;
	uint64_t status;
	int pending;

	pmct_run(gctl, debugctl);
	status = hw_rdmsr(MSR_PERF_GLOBAL_STATUS);
	pending = lapic_irr(PMI_VECTOR);
	p = append(line, "PMCTEST run ");
	p = append(p, name);
	p = append(p, " gctl ");
	p = hex(p, gctl);
	p = append(p, " pmc");
	for (uint32_t n = 0; n < 4; n++) {
		p = append(p, " ");
		p = hex(p, hw_rdmsr(MSR_PMC0 + n));
	}
	p = append(p, " status ");
	p = hex(p, status);
	p = append(p, " pending ");
	p = dec(p, (uint64_t)pending);
	p = append(p, " tos ");
	p = dec(p, hw_rdmsr(MSR_LASTBRANCH_TOS));
	p = append(p, " debugctl ");
	hex(p, pmct_debugctl_after);
	say(line);
	if (dump)
		lbr_dump(name);
}

/* An STI window for a pending PMI, its line, EOI and the LVT unmasked. */
static void take_pmi(const char *name)
{
	char line[240], *p;
	uint32_t lvt;

	pmct_pmi_count = 0;
	pmct_pmi_rip = 0;
	pmct_sti_window();
	if (pmct_pmi_count)
		lapic_eoi();
	lvt = lvt_pmi_read();
	p = append(line, "PMCTEST pmi ");
	p = append(p, name);
	p = append(p, " count ");
	p = dec(p, pmct_pmi_count);
	p = append(p, " rip ");
	p = hex(p, pmct_pmi_rip);
	p = append(p, " lvt ");
	p = hex(p, lvt);
	p = append(p, " status ");
	p = hex(p, hw_rdmsr(MSR_PERF_GLOBAL_STATUS));
	p = append(p, " tos ");
	dec(p, hw_rdmsr(MSR_LASTBRANCH_TOS));
	say(line);
	lvt_pmi_write(PMI_VECTOR); /* fixed delivery, unmasked, for the next one */
}

static void counting_checks(void)
{
	const uint64_t zero[4] = { 0, 0, 0, 0 };
	const uint64_t os_usr = EVT_OS | EVT_USR | EVT_EN;

	/* 1: C4/00 on PMC0, C4/20 on PMC1, C4/00 with INV and CMASK (kept,
	 * ignored) on PMC2, an unmodelled unit mask of C4 on PMC3. */
	{
		const uint64_t sel[4] = { BR_ALL | os_usr, BR_NEAR_TAKEN | os_usr,
					  BR_ALL | os_usr | EVT_INV | EVT_CMASK(1), EVT(0xc4, 0x01) | os_usr };
		pmc_program(sel, zero);
		run("all", 0xf, 0, 0);
	}
	/* 2: CPL qualification (all of it is ring 0), EN, another event. */
	{
		const uint64_t sel[4] = { BR_ALL | EVT_USR | EVT_EN, BR_ALL | EVT_OS | EVT_EN,
					  BR_ALL | EVT_OS | EVT_USR, EVT(0xc0, 0x00) | os_usr };
		pmc_program(sel, zero);
		run("sel", 0xf, 0, 0);
	}
	/* 3: IA32_PERF_GLOBAL_CTRL bit 0 clear: PMC0 stops, the others count. */
	{
		const uint64_t sel[4] = { BR_ALL | os_usr, BR_ALL | os_usr, BR_ALL | os_usr, BR_ALL | os_usr };
		pmc_program(sel, zero);
		run("gctl", 0xe, 0, 0);
	}
}

static void overflow_checks(void)
{
	const uint64_t os_usr = EVT_OS | EVT_USR | EVT_EN;
	char line[160], *p;

	/* 4: overflow with INT = 0, preset 2^48 - 5 (full width): status bit
	 * 0, no PMI, and with FREEZE_LBRS_ON_PMI no freeze either (no PMI
	 * was requested): the 12 records of the sequence. */
	{
		const uint64_t sel[4] = { BR_ALL | os_usr, 0, 0, 0 };
		const uint64_t init[4] = { 0xfffffffffffbull, 0, 0, 0 };
		pmc_program(sel, init);
		lbr_clear();
		run("poll", 0x1, DEBUGCTL_LBR | DEBUGCTL_FREEZE_LBRS_ON_PMI, 1);
		hw_wrmsr(MSR_PERF_GLOBAL_STATUS_RESET, 1);
	}

	/* 5: overflow with INT = 1 on the 7th branch (legacy write of -7,
	 * sign-extended) and FREEZE_LBRS_ON_PMI: PMI requested, LBR_Frz set,
	 * the stack frozen with the first 6 taken branches, DEBUGCTL.LBR
	 * still 1; the PMI is taken in an STI window; a second run with the
	 * stack still frozen changes nothing; after 0x390 clears bit 58 (and
	 * bit 0) a third run records again. */
	{
		const uint64_t sel[4] = { BR_ALL | os_usr | EVT_INT, 0, 0, 0 };
		const uint64_t zero[4] = { 0, 0, 0, 0 };
		pmc_program(sel, zero);
		hw_wrmsr(MSR_PMC0, 0xfffffff9ull); /* -7 in bits 31:0 */
		lbr_clear();
		run("freeze", 0x1, DEBUGCTL_LBR | DEBUGCTL_FREEZE_LBRS_ON_PMI, 1);
		take_pmi("freeze");
		pmc_program(sel, zero);
		run("frozen", 0x1, DEBUGCTL_LBR | DEBUGCTL_FREEZE_LBRS_ON_PMI, 1);
		hw_wrmsr(MSR_PERF_GLOBAL_STATUS_RESET, STATUS_LBR_FRZ | 1);
		pmc_program(sel, zero);
		run("thawed", 0x1, DEBUGCTL_LBR | DEBUGCTL_FREEZE_LBRS_ON_PMI, 1);
	}

	/* 6: FREEZE_PERFMON_ON_PMI: PMC0 overflows on the 7th branch with
	 * INT, PMC1 counts along: CTR_Frz stops both (PMC0 at 0, PMC1 at 7);
	 * after 0x390 clears bit 59 they count again. */
	{
		const uint64_t sel[4] = { BR_ALL | os_usr | EVT_INT, BR_ALL | os_usr, 0, 0 };
		const uint64_t init[4] = { 0xfffffffffff9ull, 0, 0, 0 };
		const uint64_t sel2[4] = { BR_ALL | os_usr, BR_ALL | os_usr, 0, 0 };
		const uint64_t zero[4] = { 0, 0, 0, 0 };
		pmc_program(sel, init);
		lbr_clear();
		run("ctrfrz", 0x3, DEBUGCTL_FREEZE_PERFMON_ON_PMI, 0);
		take_pmi("ctrfrz");
		hw_wrmsr(MSR_PERF_GLOBAL_STATUS_RESET, STATUS_CTR_FRZ | 1);
		pmc_program(sel2, zero);
		run("ctrthaw", 0x3, DEBUGCTL_FREEZE_PERFMON_ON_PMI, 0);
	}

	/* 7: IA32_PERF_GLOBAL_STATUS_SET / _RESET with the model's bits. */
	{
		const uint64_t bits = 0xfull | STATUS_LBR_FRZ | STATUS_CTR_FRZ;
		uint64_t set, reset;

		hw_wrmsr(MSR_PERF_GLOBAL_STATUS_SET, bits);
		set = hw_rdmsr(MSR_PERF_GLOBAL_STATUS);
		hw_wrmsr(MSR_PERF_GLOBAL_STATUS_RESET, bits);
		reset = hw_rdmsr(MSR_PERF_GLOBAL_STATUS);
		p = append(line, "PMCTEST status set ");
		p = hex(p, set);
		p = append(p, " reset ");
		hex(p, reset);
		say(line);
	}
}

/* Counter writes and reads, #GP on invalid ones, RDPMC. */
static void msr_checks(void)
{
	uint64_t saved[2], a, b, c, v, m, f;
	char line[200], *p;

	hw_wrmsr(MSR_PERFEVTSEL0, 0);
	hw_wrmsr(MSR_PMC0, 0x80000000ull);
	a = hw_rdmsr(MSR_PMC0);
	hw_wrmsr(MSR_PMC0, 0x7fffffffull);
	b = hw_rdmsr(MSR_PMC0);
	hw_wrmsr(MSR_A_PMC0, 0x123456789abcull);
	c = hw_rdmsr(MSR_PMC0);

	set_gate(13, pmct_gp, saved);
	pmct_gp_count = 0;
	pmct_wrmsr(MSR_PERFEVTSEL0, 1ull << 32);         /* reserved */
	pmct_wrmsr(MSR_PERF_GLOBAL_CTRL, 1ull << 4);     /* no PMC4 */
	pmct_wrmsr(MSR_PERF_GLOBAL_CTRL, 1ull << 35);    /* no FIXED_CTR3 */
	pmct_wrmsr(MSR_A_PMC0, 1ull << 48);              /* beyond 48 bits */
	pmct_wrmsr(MSR_PERF_GLOBAL_STATUS, 1);           /* read-only */
	pmct_wrmsr(MSR_PERF_CAPABILITIES, 0);            /* read-only */
	p = append(line, "PMCTEST msr legacy ");
	p = hex(p, a);
	p = append(p, " ");
	p = hex(p, b);
	p = append(p, " full ");
	p = hex(p, c);
	p = append(p, " gp ");
	dec(p, pmct_gp_count);
	say(line);

	pmct_gp_count = 0;
	v = pmct_rdpmc(0);
	m = hw_rdmsr(MSR_PMC0);
	f = pmct_rdpmc(0x40000000);                      /* fixed counter 0: 0 */
	pmct_rdpmc(4);                                   /* no PMC4: #GP */
	restore_gate(13, saved);
	p = append(line, "PMCTEST rdpmc ");
	p = hex(p, v);
	p = append(p, " msr ");
	p = hex(p, m);
	p = append(p, " fixed ");
	p = hex(p, f);
	p = append(p, " gp ");
	dec(p, pmct_gp_count);
	say(line);
}

/* ---- VMX: "load IA32_PERF_GLOBAL_CTRL" (entry 13, exit 12), save (exit 30) ---- */

/* The allowed settings of a VMX control from its capability MSR (SDM 3D
 * "VMX Capability Reporting Facility"). */
static uint32_t vmx_adjust(uint32_t want, uint32_t msr)
{
	uint64_t cap = hw_rdmsr(msr);

	return (want | (uint32_t)cap) & (uint32_t)(cap >> 32);
}

static int vmx_true_ctls(void)
{
	return (hw_rdmsr(MSR_IA32_VMX_BASIC) & VMX_BASIC_TRUE_CTLS) != 0;
}

struct vmx_segment {
	uint16_t sel;
	uint32_t ar, limit;
	uint64_t base;
};

/* A GDT segment as the VMCS guest-state area wants it (access rights,
 * byte-granular limit, base; "unusable" for a null selector). */
static struct vmx_segment vmx_seg(const struct hw_dtr *gdt, uint16_t sel)
{
	struct vmx_segment s = { sel, 0x10000, 0, 0 };
	uint64_t d;

	if (!(sel & ~7u))
		return s;
	d = *(const uint64_t *)(uintptr_t)(gdt->base + (sel & ~7u));
	s.ar = (uint32_t)(d >> 40) & 0xf0ff;
	if (s.ar & 0x10)
		s.ar |= 1;
	s.limit = (uint32_t)(d & 0xffff) | ((uint32_t)(d >> 32) & 0xf0000);
	if (s.ar & 0x8000)
		s.limit = (s.limit << 12) | 0xfff;
	s.base = ((d >> 16) & 0xffffff) | ((d >> 56) << 24);
	return s;
}

static int vmcs_w(uint32_t field, uint64_t v)
{
	return hw_vmwrite(field, v) ? 1 : 0;
}

static uint64_t vmcs_r(uint32_t field)
{
	uint64_t v = 0;

	return hw_vmread(field, &v) ? ~0ull : v;
}

/* The current VMCS for a guest that runs pmct_guest in this very address
 * space on the stack below guest_sp and exits back into pmct_vmx_launch,
 * with the given entry and exit controls.  Returns the failed VMWRITEs. */
static int vmcs_setup(uint32_t entry, uint32_t exit_ctls, uint64_t guest_sp)
{
	int t = vmx_true_ctls(), bad = 0;
	struct hw_dtr gdt, idt;
	uint16_t tr = hw_read_selector(HW_SEG_TR);
	uint64_t fs_base = hw_rdmsr(0xc0000100), gs_base = hw_rdmsr(0xc0000101), tr_base = 0;

	hw_sgdt(&gdt);
	hw_sidt(&idt);
	if (tr)
		tr_base = vmx_seg(&gdt, tr).base |
			  (*(const uint64_t *)(uintptr_t)(gdt.base + (tr & ~7u) + 8) << 32);
	bad += vmcs_w(VMCS_PIN_BASED_CTLS,
		      vmx_adjust(0, t ? MSR_IA32_VMX_TRUE_PINBASED_CTLS : MSR_IA32_VMX_PINBASED_CTLS));
	bad += vmcs_w(VMCS_PROC_BASED_CTLS,
		      vmx_adjust(0, t ? MSR_IA32_VMX_TRUE_PROCBASED_CTLS : MSR_IA32_VMX_PROCBASED_CTLS));
	bad += vmcs_w(VMCS_EXIT_CTLS, vmx_adjust(EXIT_HOST_ADDRESS_SPACE_SIZE | exit_ctls,
						 t ? MSR_IA32_VMX_TRUE_EXIT_CTLS : MSR_IA32_VMX_EXIT_CTLS));
	bad += vmcs_w(VMCS_ENTRY_CTLS, vmx_adjust(ENTRY_IA32E_MODE_GUEST | entry,
						  t ? MSR_IA32_VMX_TRUE_ENTRY_CTLS : MSR_IA32_VMX_ENTRY_CTLS));
	bad += vmcs_w(VMCS_EXCEPTION_BITMAP, 0);
	bad += vmcs_w(VMCS_CR3_TARGET_COUNT, 0);
	bad += vmcs_w(VMCS_EXIT_MSR_STORE_COUNT, 0);
	bad += vmcs_w(VMCS_EXIT_MSR_LOAD_COUNT, 0);
	bad += vmcs_w(VMCS_ENTRY_MSR_LOAD_COUNT, 0);
	bad += vmcs_w(VMCS_ENTRY_INTR_INFO, 0);
	bad += vmcs_w(VMCS_VMCS_LINK_POINTER, ~0ull);

	/* host: now.  TR must not be 0 for VM entry: without one (OVMF),
	 * CS's selector stands in (the exit loads TR's base and limit from
	 * the VMCS, not from the GDT) */
	bad += vmcs_w(VMCS_HOST_CR0, hw_read_cr0());
	bad += vmcs_w(VMCS_HOST_CR3, hw_read_cr3());
	bad += vmcs_w(VMCS_HOST_CR4, hw_read_cr4());
	bad += vmcs_w(VMCS_HOST_ES_SELECTOR, hw_read_selector(HW_SEG_ES) & ~7u);
	bad += vmcs_w(VMCS_HOST_CS_SELECTOR, hw_read_selector(HW_SEG_CS) & ~7u);
	bad += vmcs_w(VMCS_HOST_SS_SELECTOR, hw_read_selector(HW_SEG_SS) & ~7u);
	bad += vmcs_w(VMCS_HOST_DS_SELECTOR, hw_read_selector(HW_SEG_DS) & ~7u);
	bad += vmcs_w(VMCS_HOST_FS_SELECTOR, hw_read_selector(HW_SEG_FS) & ~7u);
	bad += vmcs_w(VMCS_HOST_GS_SELECTOR, hw_read_selector(HW_SEG_GS) & ~7u);
	bad += vmcs_w(VMCS_HOST_TR_SELECTOR, tr ? tr : hw_read_selector(HW_SEG_CS) & ~7u);
	bad += vmcs_w(VMCS_HOST_FS_BASE, fs_base);
	bad += vmcs_w(VMCS_HOST_GS_BASE, gs_base);
	bad += vmcs_w(VMCS_HOST_TR_BASE, tr_base);
	bad += vmcs_w(VMCS_HOST_GDTR_BASE, gdt.base);
	bad += vmcs_w(VMCS_HOST_IDTR_BASE, idt.base);
	bad += vmcs_w(VMCS_HOST_IA32_SYSENTER_CS, 0);
	bad += vmcs_w(VMCS_HOST_IA32_SYSENTER_ESP, 0);
	bad += vmcs_w(VMCS_HOST_IA32_SYSENTER_EIP, 0);

	/* guest: the same machine state, at pmct_guest */
	bad += vmcs_w(VMCS_GUEST_CR0, hw_read_cr0());
	bad += vmcs_w(VMCS_GUEST_CR3, hw_read_cr3());
	bad += vmcs_w(VMCS_GUEST_CR4, hw_read_cr4());
	bad += vmcs_w(VMCS_GUEST_DR7, 0x400);
	bad += vmcs_w(VMCS_GUEST_IA32_DEBUGCTL, 0);
	for (int i = 0; i < 6; i++) { /* ES, CS, SS, DS, FS, GS: encodings 2 apart */
		struct vmx_segment s = vmx_seg(&gdt, hw_read_selector((enum hw_seg)i));

		bad += vmcs_w(VMCS_GUEST_ES_SELECTOR + 2 * i, s.sel);
		bad += vmcs_w(VMCS_GUEST_ES_AR + 2 * i, s.ar);
		bad += vmcs_w(VMCS_GUEST_ES_LIMIT + 2 * i, s.limit);
		bad += vmcs_w(VMCS_GUEST_ES_BASE + 2 * i,
			      i == HW_SEG_FS ? fs_base : i == HW_SEG_GS ? gs_base : s.base);
	}
	bad += vmcs_w(VMCS_GUEST_LDTR_SELECTOR, 0);
	bad += vmcs_w(VMCS_GUEST_LDTR_AR, 0x10000);
	bad += vmcs_w(VMCS_GUEST_LDTR_LIMIT, 0);
	bad += vmcs_w(VMCS_GUEST_LDTR_BASE, 0);
	bad += vmcs_w(VMCS_GUEST_TR_SELECTOR, 0);
	bad += vmcs_w(VMCS_GUEST_TR_AR, 0x8b);
	bad += vmcs_w(VMCS_GUEST_TR_LIMIT, 0x67);
	bad += vmcs_w(VMCS_GUEST_TR_BASE, 0);
	bad += vmcs_w(VMCS_GUEST_GDTR_BASE, gdt.base);
	bad += vmcs_w(VMCS_GUEST_GDTR_LIMIT, gdt.limit);
	bad += vmcs_w(VMCS_GUEST_IDTR_BASE, idt.base);
	bad += vmcs_w(VMCS_GUEST_IDTR_LIMIT, idt.limit);
	bad += vmcs_w(VMCS_GUEST_RSP, guest_sp);
	bad += vmcs_w(VMCS_GUEST_RIP, (uint64_t)(uintptr_t)pmct_guest);
	bad += vmcs_w(VMCS_GUEST_RFLAGS, 0x2);
	bad += vmcs_w(VMCS_GUEST_INTERRUPTIBILITY, 0);
	bad += vmcs_w(VMCS_GUEST_ACTIVITY_STATE, ACTIVITY_ACTIVE);
	bad += vmcs_w(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, 0);
	bad += vmcs_w(VMCS_GUEST_IA32_SYSENTER_CS, 0);
	bad += vmcs_w(VMCS_GUEST_IA32_SYSENTER_ESP, 0);
	bad += vmcs_w(VMCS_GUEST_IA32_SYSENTER_EIP, 0);
	return bad;
}

/*
 * One VM entry to pmct_guest (3 branch instructions, then VMCALL) with
 * PMC0 counting C4/00 from 0 and IA32_PERF_GLOBAL_CTRL = 0 in VMX root
 * up to the VMLAUNCH (nothing counts there), GUEST_ and
 * HOST_IA32_PERF_GLOBAL_CTRL = guest_gctl and host_gctl.  Prints
 *   PMCTEST vmx NAME launch RC reason 0xR err N pmc0 0xV gctl-after 0xG field 0xF
 * (RC 1: VMLAUNCH failed with VM-instruction error N; the exit reason,
 * PMC0, IA32_PERF_GLOBAL_CTRL and the guest field after the exit).
 */
static void vmx_run(const char *name, uint32_t *vmcs, uint64_t guest_sp, uint32_t entry,
		    uint32_t exit_ctls, uint64_t guest_gctl, uint64_t host_gctl)
{
	uint64_t pa = (uint64_t)(uintptr_t)vmcs, reason = ~0ull, field = ~0ull, err = 0, pmc0, gctl;
	char line[240], *p;
	int rc = -1;

	vmcs[0] = VMX_BASIC_REVISION(hw_rdmsr(MSR_IA32_VMX_BASIC));
	hw_wrmsr(MSR_PERFEVTSEL0, BR_ALL | EVT_OS | EVT_USR | EVT_EN);
	hw_wrmsr(MSR_A_PMC0, 0);
	if (hw_vmclear(pa) == 0 && hw_vmptrld(pa) == 0 &&
	    vmcs_setup(entry, exit_ctls, guest_sp) == 0 &&
	    vmcs_w(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL, guest_gctl) == 0 &&
	    vmcs_w(VMCS_HOST_IA32_PERF_GLOBAL_CTRL, host_gctl) == 0) {
		hw_wrmsr(MSR_PERF_GLOBAL_CTRL, 0);
		rc = pmct_vmx_launch();
		gctl = hw_rdmsr(MSR_PERF_GLOBAL_CTRL);
		hw_wrmsr(MSR_PERF_GLOBAL_CTRL, 0);
		if (rc == 1)
			err = vmcs_r(VMCS_VM_INSTRUCTION_ERROR);
		else
			reason = vmcs_r(VMCS_EXIT_REASON);
		field = vmcs_r(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL);
	} else {
		gctl = hw_rdmsr(MSR_PERF_GLOBAL_CTRL);
	}
	pmc0 = hw_rdmsr(MSR_PMC0);
	hw_wrmsr(MSR_PERFEVTSEL0, 0);
	p = append(line, "PMCTEST vmx ");
	p = append(p, name);
	p = append(p, " launch ");
	p = dec(p, (uint64_t)rc);
	p = append(p, " reason ");
	p = hex(p, reason);
	p = append(p, " err ");
	p = dec(p, err);
	p = append(p, " pmc0 ");
	p = hex(p, pmc0);
	p = append(p, " gctl-after ");
	p = hex(p, gctl);
	p = append(p, " field ");
	hex(p, field);
	say(line);
}

/*
 * The VM-entry control "load IA32_PERF_GLOBAL_CTRL" (13) and the VM-exit
 * controls "load IA32_PERF_GLOBAL_CTRL" (12) and "save
 * IA32_PERF_GLOBAL_CTRL" (30): allowed-1; then five VM entries (vmx_run):
 * both load controls (the guest counts with its value, the host's is
 * loaded at the exit); save alone (root's 0 saved over the field); none
 * (nothing loaded or saved); a guest field with a reserved bit (the entry
 * fails, the exit loads the host's value); a host field with a reserved
 * bit (VMLAUNCH fails, error 8).  pages: 3 free 4 KiB pages.
 */
static void vmx_check(uint8_t *pages)
{
	uint32_t *vmxon_page = (uint32_t *)(uintptr_t)pages;
	uint32_t *vmcs = (uint32_t *)(uintptr_t)(pages + 0x1000);
	uint64_t guest_sp = (uint64_t)(uintptr_t)(pages + 0x3000);
	const uint32_t load_e = ENTRY_LOAD_PERF_GLOBAL_CTRL;
	const uint32_t load_x = EXIT_LOAD_PERF_GLOBAL_CTRL, save_x = EXIT_SAVE_PERF_GLOBAL_CTRL;
	struct hw_cpuid_regs r1;
	uint64_t cr0, cr4, fc, entry, exit_ctls;
	char line[200], *p;
	int t;

	hw_cpuid(1, 0, &r1);
	if (!(r1.ecx & (1u << 5))) {
		say("PMCTEST vmx absent");
		return;
	}
	fc = hw_rdmsr(0x3a); /* IA32_FEATURE_CONTROL */
	if (!(fc & 1))
		hw_wrmsr(0x3a, fc | 5); /* lock, VMXON outside SMX */
	t = vmx_true_ctls();
	entry = hw_rdmsr(t ? MSR_IA32_VMX_TRUE_ENTRY_CTLS : MSR_IA32_VMX_ENTRY_CTLS);
	exit_ctls = hw_rdmsr(t ? MSR_IA32_VMX_TRUE_EXIT_CTLS : MSR_IA32_VMX_EXIT_CTLS);
	p = append(line, "PMCTEST vmx caps entry13 ");
	p = dec(p, (entry >> (32 + 13)) & 1);
	p = append(p, " exit12 ");
	p = dec(p, (exit_ctls >> (32 + 12)) & 1);
	p = append(p, " exit30 ");
	dec(p, (exit_ctls >> (32 + 30)) & 1);
	say(line);

	cr0 = hw_read_cr0();
	cr4 = hw_read_cr4();
	hw_write_cr0((cr0 | hw_rdmsr(MSR_IA32_VMX_CR0_FIXED0)) & hw_rdmsr(MSR_IA32_VMX_CR0_FIXED1));
	hw_write_cr4((cr4 | hw_rdmsr(MSR_IA32_VMX_CR4_FIXED0) | (1ull << 13)) &
		     hw_rdmsr(MSR_IA32_VMX_CR4_FIXED1));
	vmxon_page[0] = VMX_BASIC_REVISION(hw_rdmsr(MSR_IA32_VMX_BASIC));
	if (hw_vmxon((uint64_t)(uintptr_t)vmxon_page) == 0) {
		vmx_run("load", vmcs, guest_sp, load_e, load_x | save_x, 0x1, 0x2);
		vmx_run("save", vmcs, guest_sp, 0, save_x, 0x5, 0x2);
		vmx_run("none", vmcs, guest_sp, 0, 0, 0x1, 0x2);
		vmx_run("badguest", vmcs, guest_sp, load_e, load_x, 0x10, 0x2);
		vmx_run("badhost", vmcs, guest_sp, load_e, load_x, 0x1, 1ull << 48);
		hw_vmclear((uint64_t)(uintptr_t)vmcs);
		hw_vmxoff();
	} else {
		say("PMCTEST vmx vmxon failed");
	}
	hw_write_cr4(cr4);
	hw_write_cr0(cr0);
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab);

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	struct hw_cpuid_regs r;
	EFI_PHYSICAL_ADDRESS pages = 0;
	uint64_t saved_pmi[2], saved_int[2], gctl_reset;
	uint32_t saved_lvt;
	char line[200], *p;

	(void)image;
	p = append(line, "PMCTEST base pmct_run ");
	hex(p, (uint64_t)(uintptr_t)pmct_run);
	say(line);
	/* At RESET the general-purpose enables are 1: off until each run. */
	gctl_reset = hw_rdmsr(MSR_PERF_GLOBAL_CTRL);
	hw_wrmsr(MSR_PERF_GLOBAL_CTRL, 0);
	hw_cpuid(0xa, 0, &r);
	p = append(line, "PMCTEST cpuid 0ah eax ");
	p = hex(p, r.eax);
	p = append(p, " perfcap ");
	p = hex(p, hw_rdmsr(MSR_PERF_CAPABILITIES));
	p = append(p, " gctl-reset ");
	hex(p, gctl_reset);
	say(line);
	if (systab->BootServices->AllocatePages(AllocateAnyPages, EfiLoaderData, 3, &pages) != EFI_SUCCESS) {
		say("PMCTEST error no pages");
		goto out;
	}
	for (uint32_t i = 0; i < 3 * 4096 / 8; i++)
		((uint64_t *)(uintptr_t)pages)[i] = 0;
	x2apic = (hw_rdmsr(MSR_APIC_BASE) >> 10) & 1;

	/* No interrupt but our own may land in the runs: its branches would
	 * count and its delivery would be recorded. */
	hw_cli();
	set_gate(INT_VECTOR, pmct_int_handler, saved_int);
	set_gate(PMI_VECTOR, pmct_pmi, saved_pmi);
	saved_lvt = lvt_pmi_read();
	lvt_pmi_write(PMI_VECTOR); /* fixed delivery, unmasked */
	hw_wrmsr(MSR_PERF_GLOBAL_STATUS_RESET, ~0ull);

	counting_checks();
	overflow_checks();
	msr_checks();
	vmx_check((uint8_t *)(uintptr_t)pages);

	for (uint32_t n = 0; n < 4; n++)
		hw_wrmsr(MSR_PERFEVTSEL0 + n, 0);
	hw_wrmsr(MSR_PERF_GLOBAL_CTRL, 0xf);
	hw_wrmsr(MSR_DEBUGCTL, 0);
	lvt_pmi_write(saved_lvt);
	restore_gate(PMI_VECTOR, saved_pmi);
	restore_gate(INT_VECTOR, saved_int);
	systab->BootServices->FreePages(pages, 3);
	say("PMCTEST done");
out:
	systab->RuntimeServices->ResetSystem(EfiResetShutdown, EFI_SUCCESS, 0, NULL);
	for (const char *s = "Shutdown"; *s; s++)
		hw_outb(0x8900, (uint8_t)*s);
	for (;;)
		hw_halt();
}
