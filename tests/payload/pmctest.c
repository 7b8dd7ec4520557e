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

#include "vmm/hw/hw.h"
#include "vmm/vmx/vmx_defs.h"
#include "tests/payload/guest_efi.h"
#include "tests/payload/guest_helpers.h"
#include "tests/payload/guest_idt.h"
#include "tests/payload/guest_lapic.h"
#include "tests/payload/guest_out.h"
#include "tests/payload/guest_vmx.h"

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

/* VM-exit control "save IA32_PERF_GLOBAL_CTRL" (not in vmm/vmx/vmx_defs.h) */
#define EXIT_SAVE_PERF_GLOBAL_CTRL (1u << 30)

#define PMI_VECTOR 0xe5
#define INT_VECTOR 0xe6 /* pmc_code.S: PMCT_INT_VECTOR */

void pmct_run(uint64_t global_ctrl, uint64_t debugctl);
void pmct_int_handler(void);
void pmct_sti_window(void);
void pmct_pmi(void);
uint64_t pmct_rdpmc(uint32_t ecx);
extern uint64_t pmct_pmi_count, pmct_pmi_rip, pmct_debugctl_after;

static void say(const char *s)
{
	com1_puts(s);
	com1_puts("\r\n");
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

	set_gate(13, guest_gp, saved);
	guest_gp_count = 0;
	guest_wrmsr(MSR_PERFEVTSEL0, 1ull << 32);         /* reserved */
	guest_wrmsr(MSR_PERF_GLOBAL_CTRL, 1ull << 4);     /* no PMC4 */
	guest_wrmsr(MSR_PERF_GLOBAL_CTRL, 1ull << 35);    /* no FIXED_CTR3 */
	guest_wrmsr(MSR_A_PMC0, 1ull << 48);              /* beyond 48 bits */
	guest_wrmsr(MSR_PERF_GLOBAL_STATUS, 1);           /* read-only */
	guest_wrmsr(MSR_PERF_CAPABILITIES, 0);            /* read-only */
	p = append(line, "PMCTEST msr legacy ");
	p = hex(p, a);
	p = append(p, " ");
	p = hex(p, b);
	p = append(p, " full ");
	p = hex(p, c);
	p = append(p, " gp ");
	dec(p, guest_gp_count);
	say(line);

	guest_gp_count = 0;
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
	dec(p, guest_gp_count);
	say(line);
}

/* ---- VMX: "load IA32_PERF_GLOBAL_CTRL" (entry 13, exit 12), save (exit 30) ---- */

/*
 * One VM entry to guest_vmx_guest (3 branch instructions, then VMCALL) with
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
	uint64_t reason = ~0ull, field = ~0ull, err = 0, pmc0, gctl;
	char line[240], *p;
	int rc = -1;

	hw_wrmsr(MSR_PERFEVTSEL0, BR_ALL | EVT_OS | EVT_USR | EVT_EN);
	hw_wrmsr(MSR_A_PMC0, 0);
	if (vmcs_load(vmcs) == 0 &&
	    vmcs_setup(entry, exit_ctls, guest_sp, (uint64_t)(uintptr_t)guest_vmx_guest) == 0 &&
	    vmcs_w(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL, guest_gctl) == 0 &&
	    vmcs_w(VMCS_HOST_IA32_PERF_GLOBAL_CTRL, host_gctl) == 0) {
		hw_wrmsr(MSR_PERF_GLOBAL_CTRL, 0);
		rc = guest_vmx_launch();
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
	uint32_t entry, exit_ctls;
	uint64_t saved_cr[2];
	char line[200], *p;
	int on;

	if (!vmx_available()) {
		say("PMCTEST vmx absent");
		return;
	}
	entry = vmx_entry_allowed1();
	exit_ctls = vmx_exit_allowed1();
	p = append(line, "PMCTEST vmx caps entry13 ");
	p = dec(p, (entry >> 13) & 1);
	p = append(p, " exit12 ");
	p = dec(p, (exit_ctls >> 12) & 1);
	p = append(p, " exit30 ");
	dec(p, (exit_ctls >> 30) & 1);
	say(line);

	on = vmx_enter(vmxon_page, saved_cr) == 0;
	if (on) {
		vmx_run("load", vmcs, guest_sp, load_e, load_x | save_x, 0x1, 0x2);
		vmx_run("save", vmcs, guest_sp, 0, save_x, 0x5, 0x2);
		vmx_run("none", vmcs, guest_sp, 0, 0, 0x1, 0x2);
		vmx_run("badguest", vmcs, guest_sp, load_e, load_x, 0x10, 0x2);
		vmx_run("badhost", vmcs, guest_sp, load_e, load_x, 0x1, 1ull << 48);
	} else {
		say("PMCTEST vmx vmxon failed");
	}
	vmx_leave(vmcs, on, saved_cr);
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	struct hw_cpuid_regs r;
	EFI_PHYSICAL_ADDRESS pages = 0;
	uint64_t saved_pmi[2], saved_int[2], gctl_reset;
	uint32_t saved_lvt;
	char line[200], *p;

	(void)image;
	com1_say_hex("PMCTEST base pmct_run ", (uint64_t)(uintptr_t)pmct_run);
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
	if (guest_alloc_pages(systab, 3, &pages)) {
		say("PMCTEST error no pages");
		goto out;
	}
	
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
	guest_shutdown(systab);
}
