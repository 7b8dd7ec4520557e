/* SPDX-License-Identifier: MIT */
/*
 * archlbrtest.c - guest program for the Bochs architectural-LBR model test
 * (tests/bochs/arch-lbr-model.sh, docs/BOCHS-MODEL.md).  A UEFI
 * application started directly by OVMF (no tracevisor), in ring 0 with
 * interrupts off: it records the 12 known taken branches of
 * archlbr_code.S's sequence with IA32_LBR_CTL under several settings,
 * lets a counter-overflow PMI freeze the records (with cpu: pmc=1), probes
 * the MSRs for #GP, enters a VMX guest with the IA32_LBR_CTL controls, and
 * prints on COM1 what the modelled hardware did, one line per fact:
 *
 *   ALBTEST base albt_run 0xADDR          where the image was loaded
 *   ALBTEST cpuid max 0xM edx7 0xD 1c 0xA 0xB 0xC 0xD pdcm N perfcap 0xP
 *       CPUID.0:EAX, CPUID.(7,0):EDX, CPUID.(1CH,0), CPUID.1:ECX.PDCM,
 *       IA32_PERF_CAPABILITIES
 *   ALBTEST reset ctl 0xC depth N         IA32_LBR_CTL and _DEPTH as found
 *   ALBTEST run NAME ctl 0xC depth N n N status 0xS debugctl 0xD
 *       one albt_run with IA32_LBR_CTL = C at depth N: the number of
 *       non-empty records below the depth, IA32_PERF_GLOBAL_STATUS after
 *       it, IA32_DEBUGCTL as the run left it
 *   ALBTEST lbr NAME I 0xFROM 0xTO 0xINFO record I (0 = newest), non-empty ones
 *   ALBTEST depthreset before N after N   non-empty records before and after
 *                                         a write of IA32_LBR_DEPTH
 *   ALBTEST legacy tos 0xT select 0xS from0 0xF debugctl 0xD
 *       the legacy LBR MSRs and IA32_DEBUGCTL.LBR after writing them
 *   ALBTEST gp NAME N                     1: that access raised #GP
 *   ALBTEST msr depth 0xD info15 0xI      reads after valid writes
 *   ALBTEST vmx caps entry21 N exit26 N   allowed-1 VMX controls
 *   ALBTEST vmx NAME launch RC reason 0xR wr N ctl-after 0xC field 0xF
 *       one VM entry and exit (vmx_run), then its records as lbr lines
 *   ALBTEST done
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

/* Architectural LBR MSRs (SDM Vol. 4) */
#define MSR_LBR_INFO_0 0x1200
#define MSR_LBR_CTL 0x14ce
#define MSR_LBR_DEPTH 0x14cf
#define MSR_LBR_FROM_0 0x1500
#define MSR_LBR_TO_0 0x1600
#define LBR_MAX_DEPTH 32
/* legacy (model-specific) LBR MSRs of Skylake, absent with arch LBR */
#define MSR_LBR_SELECT 0x1c8
#define MSR_LASTBRANCH_TOS 0x1c9
#define MSR_LASTBRANCH_0_FROM 0x680
#define MSR_DEBUGCTL 0x1d9
#define MSR_PERF_CAPABILITIES 0x345
/* performance counters (patch 0005, cpu: pmc=1) */
#define MSR_PMC0 0xc1
#define MSR_PERFEVTSEL0 0x186
#define MSR_PERF_GLOBAL_STATUS 0x38e
#define MSR_PERF_GLOBAL_CTRL 0x38f
#define MSR_PERF_GLOBAL_STATUS_RESET 0x390

/* IA32_LBR_CTL (SDM 3B "Last Branch Records") */
#define CTL_LBREN (1ull << 0)
#define CTL_OS (1ull << 1)
#define CTL_USR (1ull << 2)
#define CTL_CALL_STACK (1ull << 3)
#define CTL_JCC (1ull << 16)
#define CTL_NEAR_REL_JMP (1ull << 17)
#define CTL_NEAR_IND_JMP (1ull << 18)
#define CTL_NEAR_REL_CALL (1ull << 19)
#define CTL_NEAR_IND_CALL (1ull << 20)
#define CTL_NEAR_RET (1ull << 21)
#define CTL_OTHER_BRANCH (1ull << 22)
#define CTL_TYPES (0x7full << 16)
#define CTL_ALL (CTL_LBREN | CTL_OS | CTL_USR | CTL_TYPES)

#define DEBUGCTL_LBR (1ull << 0)
#define DEBUGCTL_FREEZE_LBRS_ON_PMI (1ull << 11)
#define STATUS_LBR_FRZ (1ull << 58)
#define EVT_BR_ALL 0xc4ull /* C4H/00H branch instructions retired */
#define EVT_USR (1ull << 16)
#define EVT_OS (1ull << 17)
#define EVT_INT (1ull << 20)
#define EVT_EN (1ull << 22)

#define PMI_VECTOR 0xe5
#define INT_VECTOR 0xe7 /* archlbr_code.S: ALBT_INT_VECTOR */

void albt_run(uint64_t lbr_ctl, uint64_t debugctl, uint64_t global_ctrl);
void albt_int_handler(void);
extern uint64_t albt_debugctl_after;

static void say(const char *s)
{
	com1_puts(s);
	com1_puts("\r\n");
}

/* The non-empty records below depth as "ALBTEST lbr NAME I ..." lines;
 * returns their number. */
static uint64_t lbr_dump(const char *name, uint32_t depth, int print)
{
	char line[200], *p;
	uint64_t n = 0;

	for (uint32_t i = 0; i < depth && i < LBR_MAX_DEPTH; i++) {
		uint64_t from = hw_rdmsr(MSR_LBR_FROM_0 + i), to = hw_rdmsr(MSR_LBR_TO_0 + i);
		uint64_t info = hw_rdmsr(MSR_LBR_INFO_0 + i);

		if (!from && !to && !info)
			continue;
		n++;
		if (!print)
			continue;
		p = append(line, "ALBTEST lbr ");
		p = append(p, name);
		p = append(p, " ");
		p = dec(p, i);
		p = append(p, " ");
		p = hex(p, from);
		p = append(p, " ");
		p = hex(p, to);
		p = append(p, " ");
		hex(p, info);
		say(line);
	}
	return n;
}

/*
 * One albt_run with IA32_LBR_CTL = ctl; with depth != 0 IA32_LBR_DEPTH is
 * written first (which empties every record), with depth 0 the records of
 * the runs before stay.  Prints the run line and its records.
 */
static void run(const char *name, uint64_t ctl, uint32_t depth, uint64_t debugctl, uint64_t gctl)
{
	char line[240], *p;
	uint64_t status, n, cur;

	if (depth)
		hw_wrmsr(MSR_LBR_DEPTH, depth);
	cur = hw_rdmsr(MSR_LBR_DEPTH);
	albt_run(ctl, debugctl, gctl);
	status = hw_rdmsr(MSR_PERF_GLOBAL_STATUS);
	/* depth 0: no IA32_LBR_DEPTH (stock): look at all 32 anyway */
	if (!cur)
		cur = LBR_MAX_DEPTH;
	n = lbr_dump(name, (uint32_t)cur, 0);
	p = append(line, "ALBTEST run ");
	p = append(p, name);
	p = append(p, " ctl ");
	p = hex(p, ctl);
	p = append(p, " depth ");
	p = dec(p, hw_rdmsr(MSR_LBR_DEPTH));
	p = append(p, " n ");
	p = dec(p, n);
	p = append(p, " status ");
	p = hex(p, status);
	p = append(p, " debugctl ");
	hex(p, albt_debugctl_after);
	say(line);
	lbr_dump(name, (uint32_t)cur, 1);
}

static void say_cpuid(void)
{
	struct hw_cpuid_regs r0, r1, r7, r1c;
	char line[240], *p;

	hw_cpuid(0, 0, &r0);
	hw_cpuid(1, 0, &r1);
	hw_cpuid(7, 0, &r7);
	hw_cpuid(0x1c, 0, &r1c);
	p = append(line, "ALBTEST cpuid max ");
	p = hex(p, r0.eax);
	p = append(p, " edx7 ");
	p = hex(p, r7.edx);
	p = append(p, " 1c ");
	p = hex(p, r1c.eax);
	p = append(p, " ");
	p = hex(p, r1c.ebx);
	p = append(p, " ");
	p = hex(p, r1c.ecx);
	p = append(p, " ");
	p = hex(p, r1c.edx);
	p = append(p, " pdcm ");
	p = dec(p, (r1.ecx >> 15) & 1);
	p = append(p, " perfcap ");
	hex(p, hw_rdmsr(MSR_PERF_CAPABILITIES));
	say(line);
}

static void record_checks(void)
{
	char line[200], *p;
	uint64_t before, after;

	/* First: the run Bochs's debugger traces (arch-lbr-model.sh). */
	run("all", CTL_ALL, 32, 0, 0);
	/* The same again on top: entries 12-23 the first run's. */
	run("twice", CTL_ALL, 0, 0, 0);
	/* IA32_LBR_DEPTH write: every record back to 0. */
	before = lbr_dump("x", LBR_MAX_DEPTH, 0);
	hw_wrmsr(MSR_LBR_DEPTH, 32);
	after = lbr_dump("x", LBR_MAX_DEPTH, 0);
	p = append(line, "ALBTEST depthreset before ");
	p = dec(p, before);
	p = append(p, " after ");
	dec(p, after);
	say(line);
	/* Depth 8: the 8 newest, the 4 oldest dropped. */
	run("depth8", CTL_ALL, 8, 0, 0);
	/* Branch-type filter, one type at a time. */
	run("jcc", CTL_LBREN | CTL_OS | CTL_USR | CTL_JCC, 16, 0, 0);
	run("reljmp", CTL_LBREN | CTL_OS | CTL_USR | CTL_NEAR_REL_JMP, 16, 0, 0);
	run("indjmp", CTL_LBREN | CTL_OS | CTL_USR | CTL_NEAR_IND_JMP, 16, 0, 0);
	run("relcall", CTL_LBREN | CTL_OS | CTL_USR | CTL_NEAR_REL_CALL, 16, 0, 0);
	run("indcall", CTL_LBREN | CTL_OS | CTL_USR | CTL_NEAR_IND_CALL, 16, 0, 0);
	run("ret", CTL_LBREN | CTL_OS | CTL_USR | CTL_NEAR_RET, 16, 0, 0);
	run("other", CTL_LBREN | CTL_OS | CTL_USR | CTL_OTHER_BRANCH, 16, 0, 0);
	run("nojcc", CTL_ALL & ~CTL_JCC, 16, 0, 0);
	/* CPL filter (all of it is ring 0), LBREn, DEBUGCTL.LBR. */
	run("osonly", CTL_ALL & ~CTL_USR, 32, 0, 0);
	run("usronly", CTL_ALL & ~CTL_OS, 32, 0, 0);
	run("nocpl", CTL_ALL & ~(CTL_OS | CTL_USR), 32, 0, 0);
	run("off", CTL_ALL & ~CTL_LBREN, 32, 0, 0);
	run("debugctl", 0, 32, DEBUGCTL_LBR, 0);
}

/*
 * Freeze (with cpu: pmc=1): PMC0 counts branch instructions from -7 with
 * INT, FREEZE_LBRS_ON_PMI: the 7th (the CALL) overflows it, the PMI
 * request sets LBR_Frz and nothing more is recorded until 0x390 clears
 * it.  The LVT entry is masked: the PMI itself is dropped (pmc-model.sh
 * takes it), the freeze happens at the request.
 */
static void freeze_checks(void)
{
	uint32_t saved_lvt = lvt_pmi_read();

	lvt_pmi_write(0x10000 | PMI_VECTOR);
	hw_wrmsr(MSR_PERF_GLOBAL_STATUS_RESET, ~0ull);
	hw_wrmsr(MSR_PERFEVTSEL0, EVT_BR_ALL | EVT_OS | EVT_USR | EVT_INT | EVT_EN);
	hw_wrmsr(MSR_PMC0, 0xfffffff9ull); /* -7 in bits 31:0, sign-extended */
	run("freeze", CTL_ALL, 32, DEBUGCTL_FREEZE_LBRS_ON_PMI, 1);
	run("frozen", CTL_ALL, 0, DEBUGCTL_FREEZE_LBRS_ON_PMI, 1);
	hw_wrmsr(MSR_PERF_GLOBAL_STATUS_RESET, STATUS_LBR_FRZ | 1);
	run("thawed", CTL_ALL, 0, DEBUGCTL_FREEZE_LBRS_ON_PMI, 1);
	hw_wrmsr(MSR_PERFEVTSEL0, 0);
	hw_wrmsr(MSR_PMC0, 0);
	hw_wrmsr(MSR_PERF_GLOBAL_STATUS_RESET, ~0ull);
	lvt_pmi_write(saved_lvt);
}

/* One probe line: did the access #GP? */
static void probe(const char *name, int write, uint32_t msr, uint64_t v)
{
	char line[120], *p;
	uint64_t before = guest_gp_count;

	if (write)
		guest_wrmsr(msr, v);
	else
		(void)guest_rdmsr(msr);
	p = append(line, "ALBTEST gp ");
	p = append(p, name);
	p = append(p, " ");
	dec(p, guest_gp_count - before);
	say(line);
}

static void msr_checks(void)
{
	uint64_t saved[2], tos, select, from0, debugctl, depth, info;
	char line[240], *p;

	/* The legacy LBR MSRs do not exist (stock unknown-MSR path: writes
	 * dropped, reads 0 with ignore_bad_msrs); DEBUGCTL.LBR has no
	 * meaning and reads 0. */
	hw_wrmsr(MSR_LASTBRANCH_TOS, 5);
	hw_wrmsr(MSR_LBR_SELECT, 3);
	tos = hw_rdmsr(MSR_LASTBRANCH_TOS);
	select = hw_rdmsr(MSR_LBR_SELECT);
	from0 = hw_rdmsr(MSR_LASTBRANCH_0_FROM);
	hw_wrmsr(MSR_DEBUGCTL, DEBUGCTL_LBR | DEBUGCTL_FREEZE_LBRS_ON_PMI);
	debugctl = hw_rdmsr(MSR_DEBUGCTL);
	hw_wrmsr(MSR_DEBUGCTL, 0);
	hw_wrmsr(MSR_LASTBRANCH_TOS, 0);
	hw_wrmsr(MSR_LBR_SELECT, 0);
	p = append(line, "ALBTEST legacy tos ");
	p = hex(p, tos);
	p = append(p, " select ");
	p = hex(p, select);
	p = append(p, " from0 ");
	p = hex(p, from0);
	p = append(p, " debugctl ");
	hex(p, debugctl);
	say(line);

	set_gate(13, guest_gp, saved);
	hw_wrmsr(MSR_LBR_DEPTH, 16);
	probe("ctl-callstack", 1, MSR_LBR_CTL, CTL_CALL_STACK); /* CPUID.1CH:EBX[2] = 0 */
	probe("ctl-bit4", 1, MSR_LBR_CTL, 1ull << 4);
	probe("ctl-bit15", 1, MSR_LBR_CTL, 1ull << 15);
	probe("ctl-bit23", 1, MSR_LBR_CTL, 1ull << 23);
	probe("ctl-bit63", 1, MSR_LBR_CTL, 1ull << 63);
	probe("ctl-valid", 1, MSR_LBR_CTL, CTL_ALL & ~CTL_LBREN);
	hw_wrmsr(MSR_LBR_CTL, 0);
	probe("depth-0", 1, MSR_LBR_DEPTH, 0);
	probe("depth-7", 1, MSR_LBR_DEPTH, 7);
	probe("depth-40", 1, MSR_LBR_DEPTH, 40);
	probe("depth-64", 1, MSR_LBR_DEPTH, 64);
	probe("depth-24", 1, MSR_LBR_DEPTH, 24);
	depth = hw_rdmsr(MSR_LBR_DEPTH);
	hw_wrmsr(MSR_LBR_DEPTH, 16);
	probe("rd-from-15", 0, MSR_LBR_FROM_0 + 15, 0);
	probe("wr-info-15", 1, MSR_LBR_INFO_0 + 15, 0x123);
	info = hw_rdmsr(MSR_LBR_INFO_0 + 15);
	probe("rd-from-16", 0, MSR_LBR_FROM_0 + 16, 0);
	probe("wr-to-16", 1, MSR_LBR_TO_0 + 16, 1);
	probe("rd-info-31", 0, MSR_LBR_INFO_0 + 31, 0);
	restore_gate(13, saved);
	hw_wrmsr(MSR_LBR_DEPTH, 32);
	p = append(line, "ALBTEST msr depth ");
	p = hex(p, depth);
	p = append(p, " info15 ");
	hex(p, info);
	say(line);
}

/* ---- VMX: "load guest IA32_LBR_CTL" (entry 21), "clear IA32_LBR_CTL" (exit 26) ---- */

/* IA32_LBR_CTL with everything but LBREn: records nothing, so the branches
 * of VMX root up to VMLAUNCH leave no record, yet it is not 0. */
#define ROOT_CTL (CTL_ALL & ~CTL_LBREN)

/*
 * One VM entry to guest_vmx_guest (CALL, RET, taken JZ, VMCALL) with the
 * given controls, GUEST_IA32_LBR_CTL = field and IA32_LBR_CTL = ROOT_CTL
 * in VMX root up to the VMLAUNCH, all records emptied before.  Prints
 *   ALBTEST vmx NAME launch RC reason 0xR wr N ctl-after 0xC field 0xF
 * (RC 1: VMLAUNCH failed; wr 1: the VMWRITE of GUEST_IA32_LBR_CTL
 * failed; IA32_LBR_CTL right after the exit; the field after the exit)
 * and the records as "ALBTEST lbr vmx-NAME ..." lines.
 */
static void vmx_run(const char *name, uint32_t *vmcs, uint64_t guest_sp, uint32_t entry,
		    uint32_t exit_ctls, uint64_t field)
{
	uint64_t reason = ~0ull, after = ~0ull, ctl = ~0ull;
	char line[240], *p, rec[40];
	int rc = -1, wr = 1;

	hw_wrmsr(MSR_LBR_DEPTH, 32);
	if (vmcs_load(vmcs) == 0 &&
	    vmcs_setup(entry, exit_ctls, guest_sp, (uint64_t)(uintptr_t)guest_vmx_guest) == 0) {
		wr = vmcs_w(VMCS_GUEST_IA32_LBR_CTL, field);
		hw_wrmsr(MSR_LBR_CTL, ROOT_CTL);
		rc = guest_vmx_launch();
		ctl = hw_rdmsr(MSR_LBR_CTL);
		hw_wrmsr(MSR_LBR_CTL, 0);
		if (rc == 0)
			reason = vmcs_r(VMCS_EXIT_REASON);
		after = vmcs_r(VMCS_GUEST_IA32_LBR_CTL);
	}
	p = append(line, "ALBTEST vmx ");
	p = append(p, name);
	p = append(p, " launch ");
	p = dec(p, (uint64_t)rc);
	p = append(p, " reason ");
	p = hex(p, reason);
	p = append(p, " wr ");
	p = dec(p, (uint64_t)wr);
	p = append(p, " ctl-after ");
	p = hex(p, ctl);
	p = append(p, " field ");
	hex(p, after);
	say(line);
	p = append(rec, "vmx-");
	append(p, name);
	lbr_dump(rec, LBR_MAX_DEPTH, 1);
}

/*
 * The controls allowed-1, then five VM entries: both controls (the guest
 * records its 3 branches under the field's value, the exit saves it into
 * the field and clears the MSR: nothing of VMX root after it); load
 * without clear (the guest's value stays on: VMX root's branches after
 * the exit are recorded on top); neither (nothing loaded, the exit saves
 * root's value into the field); clear alone (saved, then cleared); a
 * reserved bit (CALL_STACK) in the field (the entry fails, nothing saved,
 * the exit clears the MSR).  pages: 3 free 4 KiB pages.
 */
static void vmx_check(uint8_t *pages)
{
	uint32_t *vmxon_page = (uint32_t *)(uintptr_t)pages;
	uint32_t *vmcs = (uint32_t *)(uintptr_t)(pages + 0x1000);
	uint64_t guest_sp = (uint64_t)(uintptr_t)(pages + 0x3000), saved_cr[2];
	char line[200], *p;
	int on;

	if (!vmx_available()) {
		say("ALBTEST vmx absent");
		return;
	}
	p = append(line, "ALBTEST vmx caps entry21 ");
	p = dec(p, (vmx_entry_allowed1() >> 21) & 1);
	p = append(p, " exit26 ");
	dec(p, (vmx_exit_allowed1() >> 26) & 1);
	say(line);

	on = vmx_enter(vmxon_page, saved_cr) == 0;
	if (on) {
		vmx_run("load", vmcs, guest_sp, ENTRY_LOAD_LBR_CTL, EXIT_CLEAR_LBR_CTL, CTL_ALL);
		vmx_run("noclear", vmcs, guest_sp, ENTRY_LOAD_LBR_CTL, 0, CTL_ALL);
		vmx_run("none", vmcs, guest_sp, 0, 0, CTL_ALL);
		vmx_run("clear", vmcs, guest_sp, 0, EXIT_CLEAR_LBR_CTL, CTL_ALL);
		vmx_run("badguest", vmcs, guest_sp, ENTRY_LOAD_LBR_CTL, EXIT_CLEAR_LBR_CTL,
			CTL_ALL | CTL_CALL_STACK);
	} else {
		say("ALBTEST vmx vmxon failed");
	}
	vmx_leave(vmcs, on, saved_cr);
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	EFI_PHYSICAL_ADDRESS pages = 0;
	uint64_t saved_int[2];
	char line[200], *p;

	(void)image;
	com1_say_hex("ALBTEST base albt_run ", (uint64_t)(uintptr_t)albt_run);
	say_cpuid();
	p = append(line, "ALBTEST reset ctl ");
	p = hex(p, hw_rdmsr(MSR_LBR_CTL));
	p = append(p, " depth ");
	dec(p, hw_rdmsr(MSR_LBR_DEPTH));
	say(line);
	/* IA32_PERF_GLOBAL_CTRL is 0xF after RESET (patch 0005): off but in
	 * the freeze runs, so no counter counts the branches around them. */
	hw_wrmsr(MSR_PERF_GLOBAL_CTRL, 0);
	if (guest_alloc_pages(systab, 3, &pages)) {
		say("ALBTEST error no pages");
		goto out;
	}

	/* No interrupt but our own may land in the runs: its delivery would be
	 * recorded. */
	hw_cli();
	set_gate(INT_VECTOR, albt_int_handler, saved_int);

	record_checks();
	freeze_checks();
	msr_checks();
	vmx_check((uint8_t *)(uintptr_t)pages);

	hw_wrmsr(MSR_LBR_CTL, 0);
	hw_wrmsr(MSR_PERF_GLOBAL_CTRL, 0xf);
	restore_gate(INT_VECTOR, saved_int);
	systab->BootServices->FreePages(pages, 3);
	say("ALBTEST done");
out:
	guest_shutdown(systab);
}
