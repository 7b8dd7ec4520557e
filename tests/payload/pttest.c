/* SPDX-License-Identifier: MIT */
/*
 * pttest.c - guest program for the Bochs Intel PT model test
 * (tests/bochs/pt-model.sh, docs/BOCHS-MODEL.md).  A UEFI application
 * started directly by OVMF (no tracevisor): it runs the known code of
 * pt_code.S with Intel PT on, in ring 0 with interrupts off, under
 * several configurations, and dumps what the modelled hardware wrote,
 * for the host to decode with libipt (build/pt-flow):
 *
 *   PTTEST base ptt_run 0xADDR              where the image was loaded
 *   PTTEST cpuid pt N max 0xM ebx 0xB ecx 0xC ranges N
 *                                           CPUID.(7,0):EBX[25], (14H,0), (14H,1)
 *   PTTEST cr3 0xCR3                        CR3 while tracing (PIP, CR3 filter)
 *   PTTEST alias 0xOFFSET                   where ptt_far is called (its alias)
 *   PTTEST gp NAME N                        #GPs raised by one MSR access
 *   PTTEST run NAME ctl 0xC status 0xS mask 0xM bytes N [pmi N lvt 0xL gstat 0xG]
 *   PTTEST data NAME 0xOFFSET HEX...        the run's output, 32 bytes a line
 *   PTTEST vmxrun NAME launch RC setup N reason 0xR ctl-after 0xC field 0xF bytes N
 *                                           one VM entry and exit (vmx_run), then
 *                                           its output as "PTTEST data NAME" lines
 *   PTTEST vmx misc14 N entry-load-rtit N exit-clear-rtit N vmxon RC
 *        ctl-after-vmxon 0xC ctl-in-root 0xC field 0xF field-hi 0xH
 *                                           VMX_MISC[14], the RTIT_CTL controls,
 *                                           RTIT_CTL after VMXON and set in root,
 *                                           GUEST_IA32_RTIT_CTL read back
 *   PTTEST done
 *
 * Without PT (CPUID.(7,0):EBX[25] = 0) only the cpuid line and done.
 * The VMX entry (VMCS, VMLAUNCH, the guest) is guest_vmx.h's and
 * guest_helpers.S's, as in pmctest.c.
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

#define MSR_PERF_GLOBAL_STATUS   0x38e
#define MSR_PERF_GLOBAL_OVF_CTRL 0x390
#define MSR_RTIT_OUTPUT_BASE     0x560
#define MSR_RTIT_OUTPUT_MASK     0x561
#define MSR_RTIT_CTL             0x570
#define MSR_RTIT_STATUS          0x571
#define MSR_RTIT_CR3_MATCH       0x572
#define MSR_RTIT_ADDR0_A         0x580
#define MSR_RTIT_ADDR0_B         0x581

#define CTL_TRACEEN   (1ull << 0)
#define CTL_OS        (1ull << 2)
#define CTL_USER      (1ull << 3)
#define CTL_CR3FILTER (1ull << 7)
#define CTL_TOPA      (1ull << 8)
#define CTL_TSCEN     (1ull << 10)
#define CTL_DISRETC   (1ull << 11)
#define CTL_BRANCHEN  (1ull << 13)
#define CTL_ADDR0_CFG(v) ((uint64_t)(v) << 32)

#define TOPA_END  (1ull << 0)
#define TOPA_INT  (1ull << 2)
#define TOPA_STOP (1ull << 4)

#define PMI_VECTOR 0xee

#define SR_SIZE   0x10000ull   /* single-range buffer: 64 KiB, aligned to its size */
#define TOPA_REGION 0x1000ull  /* each ToPA region: 4 KiB (Size 0) */

void ptt_run(void);
void ptt_pmi(void);
void ptt_ud(void);
void ptt_far(void);
void ptt_leaf(void);
void ptt_leaf_end(void);
extern uint64_t ptt_ctl, ptt_pmi_count, ptt_far_target;
extern uint32_t ptt_iters;

static void say(const char *s)
{
	com1_puts(s);
	com1_puts("\r\n");
}

static void dump(const char *name, const uint8_t *buf, uint64_t n, uint64_t at)
{
	static const char digits[] = "0123456789abcdef";
	char line[200], *p;

	for (uint64_t off = 0; off < n; off += 32) {
		p = append(line, "PTTEST data ");
		p = append(p, name);
		p = append(p, " ");
		p = hex(p, at + off);
		p = append(p, " ");
		for (uint64_t k = off; k < n && k < off + 32; k++) {
			*p++ = digits[buf[k] >> 4];
			*p++ = digits[buf[k] & 15];
		}
		*p = '\0';
		say(line);
	}
}

static void report(const char *name, uint64_t ctl, uint64_t bytes, int pmi)
{
	char line[240], *p;

	p = append(line, "PTTEST run ");
	p = append(p, name);
	p = append(p, " ctl ");
	p = hex(p, ctl);
	p = append(p, " status ");
	p = hex(p, hw_rdmsr(MSR_RTIT_STATUS));
	p = append(p, " mask ");
	p = hex(p, hw_rdmsr(MSR_RTIT_OUTPUT_MASK));
	p = append(p, " bytes ");
	p = dec(p, bytes);
	if (pmi) {
		p = append(p, " pmi ");
		p = dec(p, ptt_pmi_count);
		p = append(p, " lvt ");
		p = hex(p, lvt_pmi_read());
		p = append(p, " gstat ");
		p = hex(p, hw_rdmsr(MSR_PERF_GLOBAL_STATUS));
	}
	say(line);
}

/* One single-range run: the whole of ptt_run's output at buf. */
static void run_single(const char *name, uint8_t *buf, uint64_t ctl, uint32_t iters)
{
	uint64_t bytes;

	hw_wrmsr(MSR_RTIT_STATUS, 0);	/* PacketByteCnt 0: a PSB+ on enable */
	hw_wrmsr(MSR_RTIT_OUTPUT_BASE, (uint64_t)(uintptr_t)buf);
	hw_wrmsr(MSR_RTIT_OUTPUT_MASK, SR_SIZE - 1);	/* offset 0, size 64 KiB */
	ptt_ctl = ctl | CTL_TRACEEN | CTL_BRANCHEN;
	ptt_iters = iters;
	ptt_run();
	bytes = hw_rdmsr(MSR_RTIT_OUTPUT_MASK) >> 32;
	report(name, ptt_ctl, bytes, 0);
	dump(name, buf, bytes, 0);
}

/*
 * ToPA: region 0 (4 KiB, INT), region 1 (4 KiB, STOP), END back to the
 * table.  The run writes more than 8 KiB, so region 0 fills (one PMI,
 * pending until interrupts are on again) and region 1 fills (Stopped).
 */
static void run_topa(const char *name, uint64_t *table, uint8_t *r0, uint8_t *r1,
		     uint64_t ctl, uint32_t iters, int bad)
{
	uint64_t saved[2], mask, idx, off, bytes;

	table[0] = (uint64_t)(uintptr_t)r0 | TOPA_INT | (bad ? 2 : 0);	/* bit 1 reserved */
	table[1] = (uint64_t)(uintptr_t)r1 | TOPA_STOP;
	table[2] = (uint64_t)(uintptr_t)table | TOPA_END;
	hw_wrmsr(MSR_RTIT_STATUS, 0);
	hw_wrmsr(MSR_RTIT_OUTPUT_BASE, (uint64_t)(uintptr_t)table);
	hw_wrmsr(MSR_RTIT_OUTPUT_MASK, 0x7f);	/* entry 0, offset 0 */
	set_gate(PMI_VECTOR, ptt_pmi, saved);
	ptt_pmi_count = 0;
	lvt_pmi_write(PMI_VECTOR);	/* fixed, unmasked */
	ptt_ctl = ctl | CTL_TRACEEN | CTL_BRANCHEN | CTL_TOPA;
	ptt_iters = iters;
	ptt_run();
	/* the PMI was made pending with IF = 0: take it now */
	__asm__ volatile("sti; nop; nop; cli" ::: "memory");
	mask = hw_rdmsr(MSR_RTIT_OUTPUT_MASK);
	idx = (mask & 0xffffffffu) >> 7;
	off = mask >> 32;
	bytes = idx * TOPA_REGION + off;
	report(name, ptt_ctl, bytes, 1);
	lvt_pmi_write(0x10000);	/* masked again */
	restore_gate(PMI_VECTOR, saved);
	dump(name, r0, idx ? TOPA_REGION : off, 0);
	if (idx)
		dump(name, r1, off, TOPA_REGION);
	/* clear Trace_ToPA_PMI and show it cleared */
	hw_wrmsr(MSR_PERF_GLOBAL_OVF_CTRL, 1ull << 55);
	{
		char line[80], *p = append(line, "PTTEST gstat-after-clear ");

		p = append(p, name);
		p = append(p, " ");
		hex(p, hw_rdmsr(MSR_PERF_GLOBAL_STATUS));
		say(line);
	}
}

/*
 * An alias of the low 512 GiB (OVMF's identity map, PML4 entry 0) at
 * 0xffff800000000000 (PML4 entry 256), so that code can run at an
 * upper-half address and TIPs need the sign-extended 48-bit form.
 * Returns the alias offset, 0 when entry 256 is in use.
 */
#define ALIAS_BASE 0xffff800000000000ull
static uint64_t alias_map(int on)
{
	uint64_t *pml4 = (uint64_t *)(uintptr_t)(hw_read_cr3() & 0x000ffffffffff000ull);
	uint64_t cr0 = hw_read_cr0();

	if (on && pml4[256])
		return 0;
	hw_write_cr0(cr0 & ~(1ull << 16));	/* WP off: OVMF may map its page tables read-only */
	pml4[256] = on ? pml4[0] : 0;
	hw_write_cr0(cr0);
	hw_write_cr3(hw_read_cr3());		/* flush */
	return on ? ALIAS_BASE : 0;
}

/* One MSR access expected to #GP or not: prints how many #GPs it raised. */
static void gp_check(const char *name, int write, uint32_t msr, uint64_t v)
{
	char line[80], *p;

	guest_gp_count = 0;
	if (write)
		hw_wrmsr(msr, v);
	else
		(void)hw_rdmsr(msr);
	p = append(line, "PTTEST gp ");
	p = append(p, name);
	p = append(p, " ");
	dec(p, guest_gp_count);
	say(line);
}

static void msr_checks(uint8_t *buf)
{
	uint64_t saved[2];

	set_gate(13, guest_gp, saved);
	gp_check("ctl-valid", 1, MSR_RTIT_CTL, CTL_OS | CTL_BRANCHEN);
	gp_check("ctl-cycen", 1, MSR_RTIT_CTL, CTL_OS | CTL_BRANCHEN | (1ull << 1));
	gp_check("ctl-mtcen", 1, MSR_RTIT_CTL, CTL_OS | CTL_BRANCHEN | (1ull << 9));
	gp_check("ctl-psbfreq", 1, MSR_RTIT_CTL, CTL_OS | CTL_BRANCHEN | (1ull << 24));
	gp_check("ctl-addr0-cfg3", 1, MSR_RTIT_CTL, CTL_OS | CTL_BRANCHEN | CTL_ADDR0_CFG(3));
	gp_check("ctl-addr2-cfg1", 1, MSR_RTIT_CTL, CTL_OS | CTL_BRANCHEN | (1ull << 40));
	gp_check("ctl-branchen0", 1, MSR_RTIT_CTL, CTL_OS | CTL_TRACEEN);
	gp_check("status-reserved", 1, MSR_RTIT_STATUS, 1ull << 3);
	gp_check("cr3-match-low", 1, MSR_RTIT_CR3_MATCH, 0x10);
	gp_check("base-low", 1, MSR_RTIT_OUTPUT_BASE, 0x40);
	gp_check("addr0-noncanonical", 1, MSR_RTIT_ADDR0_A, 0x0000800000000000ull);
	gp_check("addr0-valid", 1, MSR_RTIT_ADDR0_A, 0xffff800000000000ull);
	gp_check("global-status-write", 1, MSR_PERF_GLOBAL_STATUS, 0);
	/* with TraceEn = 1 (PT on, output into buf): the locked MSRs */
	hw_wrmsr(MSR_RTIT_STATUS, 0);
	hw_wrmsr(MSR_RTIT_OUTPUT_BASE, (uint64_t)(uintptr_t)buf);
	hw_wrmsr(MSR_RTIT_OUTPUT_MASK, SR_SIZE - 1);
	hw_wrmsr(MSR_RTIT_CTL, CTL_TRACEEN | CTL_OS | CTL_BRANCHEN);
	gp_check("on-ctl-same", 1, MSR_RTIT_CTL, CTL_TRACEEN | CTL_OS | CTL_BRANCHEN);
	gp_check("on-ctl-change", 1, MSR_RTIT_CTL, CTL_TRACEEN | CTL_OS | CTL_USER | CTL_BRANCHEN);
	gp_check("on-base", 1, MSR_RTIT_OUTPUT_BASE, (uint64_t)(uintptr_t)buf);
	gp_check("on-mask", 1, MSR_RTIT_OUTPUT_MASK, SR_SIZE - 1);
	gp_check("on-status", 1, MSR_RTIT_STATUS, 0);
	gp_check("on-cr3-match", 1, MSR_RTIT_CR3_MATCH, 0);
	gp_check("on-addr0", 1, MSR_RTIT_ADDR0_A, 0);
	gp_check("on-read-ctl", 0, MSR_RTIT_CTL, 0);
	gp_check("off-ctl", 1, MSR_RTIT_CTL, CTL_OS | CTL_BRANCHEN);	/* clears TraceEn */
	gp_check("off-base", 1, MSR_RTIT_OUTPUT_BASE, (uint64_t)(uintptr_t)buf);
	hw_wrmsr(MSR_RTIT_CTL, 0);
	hw_wrmsr(MSR_RTIT_ADDR0_A, 0);
	restore_gate(13, saved);
}

/* ---- VMX (patch 0004: IA32_VMX_MISC[14] = 1 and the RTIT_CTL controls) ---- */

/*
 * One VM entry to guest_vmx_guest and its VM exit (VMCALL, or the failed
 * entry), PT output into buf from offset 0 with PacketByteCnt 0:
 * GUEST_IA32_RTIT_CTL = guest_ctl, IA32_RTIT_CTL = host_ctl from just
 * before the VMLAUNCH (0: not traced); with ctls, VM-entry "load
 * IA32_RTIT_CTL" and VM-exit "clear IA32_RTIT_CTL".  Prints
 *   PTTEST vmxrun NAME launch RC setup N reason 0xR ctl-after 0xC field 0xF bytes N
 * (the exit reason, IA32_RTIT_CTL and GUEST_IA32_RTIT_CTL after the exit)
 * and the output as "PTTEST data NAME" lines.
 */
static void vmx_run(const char *name, uint8_t *buf, uint32_t *vmcs, uint64_t guest_sp,
		    uint64_t guest_ctl, uint64_t host_ctl, int ctls)
{
	uint64_t reason = ~0ull, field = ~0ull, ctl_after, bytes;
	char line[240], *p;
	int rc = -1, bad = -1;

	hw_wrmsr(MSR_RTIT_STATUS, 0);
	hw_wrmsr(MSR_RTIT_OUTPUT_BASE, (uint64_t)(uintptr_t)buf);
	hw_wrmsr(MSR_RTIT_OUTPUT_MASK, SR_SIZE - 1);
	if (vmcs_load(vmcs) == 0) {
		bad = vmcs_setup(ctls ? ENTRY_LOAD_RTIT_CTL : 0, ctls ? EXIT_CLEAR_RTIT_CTL : 0, guest_sp,
				 (uint64_t)(uintptr_t)guest_vmx_guest);
		bad += vmcs_w(VMCS_GUEST_IA32_RTIT_CTL, guest_ctl);
		rc = host_ctl ? guest_vmx_launch_wrmsr(MSR_RTIT_CTL, host_ctl) : guest_vmx_launch();
		reason = vmcs_r(VMCS_EXIT_REASON);
		field = vmcs_r(VMCS_GUEST_IA32_RTIT_CTL);
	}
	ctl_after = hw_rdmsr(MSR_RTIT_CTL);
	hw_wrmsr(MSR_RTIT_CTL, 0);
	bytes = hw_rdmsr(MSR_RTIT_OUTPUT_MASK) >> 32;
	p = append(line, "PTTEST vmxrun ");
	p = append(p, name);
	p = append(p, " launch ");
	p = dec(p, (uint64_t)rc);
	p = append(p, " setup ");
	p = dec(p, (uint64_t)bad);
	p = append(p, " reason ");
	p = hex(p, reason);
	p = append(p, " ctl-after ");
	p = hex(p, ctl_after);
	p = append(p, " field ");
	p = hex(p, field);
	p = append(p, " bytes ");
	dec(p, bytes);
	say(line);
	dump(name, buf, bytes, 0);
}

/*
 * With pt=1 IA32_VMX_MISC[14] = 1 (PT usable in VMX operation): VMXON
 * keeps TraceEn, WRMSR setting it in VMX root does not #GP; the VM-entry
 * control "load IA32_RTIT_CTL" (18) and VM-exit control "clear
 * IA32_RTIT_CTL" (25) may be 1 (the TRUE MSRs when IA32_VMX_BASIC[55]);
 * GUEST_IA32_RTIT_CTL (0x2814, high half 0x2815) reads back what was
 * written.  Then four VM entries (vmx_run): with both controls, the guest
 * traced; the same with the host tracing VMX root up to the VMLAUNCH;
 * a GUEST_IA32_RTIT_CTL with a reserved bit (CYCEn): the entry fails;
 * without the controls: nothing traced.  pages: 3 free 4 KiB pages
 * (VMXON region, VMCS, guest stack).
 */
static void vmx_check(uint8_t *buf, uint8_t *pages)
{
	const uint64_t on = CTL_TRACEEN | CTL_OS | CTL_BRANCHEN;
	uint32_t *vmxon_page = (uint32_t *)(uintptr_t)pages;
	uint32_t *vmcs = (uint32_t *)(uintptr_t)(pages + 0x1000);
	uint64_t guest_sp = (uint64_t)(uintptr_t)(pages + 0x3000);
	uint64_t saved[2], saved_cr[2], misc, ctl_after = 0, root_ctl = 0;
	uint64_t rt = ~0ull, rt_hi = ~0ull;
	uint32_t entry, exit_ctls;
	char line[240], *p;
	int rc = -1;

	if (!vmx_available()) {
		say("PTTEST vmx absent");
		return;
	}
	misc = hw_rdmsr(MSR_IA32_VMX_MISC);
	entry = vmx_entry_allowed1();
	exit_ctls = vmx_exit_allowed1();
	vmx_set_cr(saved_cr);

	hw_wrmsr(MSR_RTIT_STATUS, 0);
	hw_wrmsr(MSR_RTIT_OUTPUT_BASE, (uint64_t)(uintptr_t)buf);
	hw_wrmsr(MSR_RTIT_OUTPUT_MASK, SR_SIZE - 1);
	hw_wrmsr(MSR_RTIT_CTL, on);
	rc = vmx_on(vmxon_page);
	if (rc == 0) {
		ctl_after = hw_rdmsr(MSR_RTIT_CTL);
		hw_wrmsr(MSR_RTIT_CTL, 0);
		set_gate(13, guest_gp, saved);
		gp_check("vmx-root-traceen", 1, MSR_RTIT_CTL, on);
		restore_gate(13, saved);
		root_ctl = hw_rdmsr(MSR_RTIT_CTL);
		hw_wrmsr(MSR_RTIT_CTL, 0);
		if (vmcs_load(vmcs) == 0 && hw_vmwrite(VMCS_GUEST_IA32_RTIT_CTL, CTL_ADDR0_CFG(2) | on) == 0) {
			rt = vmcs_r(VMCS_GUEST_IA32_RTIT_CTL);
			rt_hi = vmcs_r(VMCS_GUEST_IA32_RTIT_CTL + 1);
		}
		vmx_run("vmentry", buf, vmcs, guest_sp, on, 0, 1);
		vmx_run("vmroot", buf, vmcs, guest_sp, on, on, 1);
		vmx_run("vmbad", buf, vmcs, guest_sp, on | (1ull << 1), 0, 1);
		vmx_run("vmnoctl", buf, vmcs, guest_sp, on, 0, 0);
	}
	vmx_leave(vmcs, rc == 0, saved_cr);
	set_gate(13, guest_gp, saved);
	gp_check("after-vmxoff-traceen", 1, MSR_RTIT_CTL, on);
	restore_gate(13, saved);
	hw_wrmsr(MSR_RTIT_CTL, 0);
	p = append(line, "PTTEST vmx misc14 ");
	p = dec(p, (misc >> 14) & 1);
	p = append(p, " entry-load-rtit ");
	p = dec(p, (entry >> 18) & 1);
	p = append(p, " exit-clear-rtit ");
	p = dec(p, (exit_ctls >> 25) & 1);
	p = append(p, " vmxon ");
	p = dec(p, (uint64_t)rc);
	p = append(p, " ctl-after-vmxon ");
	p = hex(p, ctl_after);
	p = append(p, " ctl-in-root ");
	p = hex(p, root_ctl);
	p = append(p, " field ");
	p = hex(p, rt);
	p = append(p, " field-hi ");
	hex(p, rt_hi);
	say(line);
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	struct hw_cpuid_regs r7, r14, r14b;
	EFI_PHYSICAL_ADDRESS mem = 0;
	char line[200], *p;
	int pt;

	(void)image;
	com1_say_hex("PTTEST base ptt_run ", (uint64_t)(uintptr_t)ptt_run);
	hw_cpuid(7, 0, &r7);
	hw_cpuid(0x14, 0, &r14);
	hw_cpuid(0x14, 1, &r14b);
	pt = (r7.ebx >> 25) & 1;
	p = append(line, "PTTEST cpuid pt ");
	p = dec(p, pt);
	p = append(p, " max ");
	p = hex(p, r14.eax);
	p = append(p, " ebx ");
	p = hex(p, r14.ebx);
	p = append(p, " ecx ");
	p = hex(p, r14.ecx);
	p = append(p, " ranges ");
	dec(p, r14b.eax & 7);
	say(line);

	/* 64 KiB single-range buffer aligned to its size, a ToPA table, two
	 * 4 KiB regions and 3 pages for VMX: 48 pages of boot-services
	 * memory, physical = virtual under OVMF's identity map */
	if (pt && guest_alloc_pages(systab, 48, &mem) == 0) {
		uint8_t *sr = (uint8_t *)(uintptr_t)((mem + SR_SIZE - 1) & ~(SR_SIZE - 1));
		uint8_t *after = sr + SR_SIZE;
		uint64_t *table = (uint64_t *)(uintptr_t)after;
		uint8_t *r0 = after + 0x1000, *r1 = after + 0x2000;
		uint64_t cr3 = hw_read_cr3(), ud_saved[2], alias;

		com1_say_hex("PTTEST cr3 ", cr3);
		hw_cli();
		msr_checks(sr);
		set_gate(6, ptt_ud, ud_saved);	/* ptt_run's UD2 */
		alias = alias_map(1);
		ptt_far_target = (uint64_t)(uintptr_t)ptt_far + alias;
		com1_say_hex("PTTEST alias ", alias);
		/* the runs, in the order the debugger script counts them */
		run_single("sr", sr, CTL_OS | CTL_TSCEN, 1500);		/* 1, traced */
		run_single("noretc", sr, CTL_OS | CTL_DISRETC, 1500);	/* 2 */
		run_topa("topa", table, r0, r1, CTL_OS | CTL_DISRETC, 1500, 0); /* 3 */
		run_topa("topabad", table, r0, r1, CTL_OS | CTL_DISRETC, 8, 1);  /* 4 */
		hw_wrmsr(MSR_RTIT_CR3_MATCH, cr3 & ~0xfffull);
		run_single("cr3hit", sr, CTL_OS | CTL_CR3FILTER, 8);	/* 5 */
		hw_wrmsr(MSR_RTIT_CR3_MATCH, (cr3 & ~0xfffull) ^ 0x1000);
		run_single("cr3miss", sr, CTL_OS | CTL_CR3FILTER, 8);	/* 6 */
		hw_wrmsr(MSR_RTIT_CR3_MATCH, 0);
		run_single("user", sr, CTL_USER, 8);			/* 7 */
		hw_wrmsr(MSR_RTIT_ADDR0_A, (uint64_t)(uintptr_t)ptt_leaf);
		hw_wrmsr(MSR_RTIT_ADDR0_B, (uint64_t)(uintptr_t)ptt_leaf_end - 1);
		run_single("ipf", sr, CTL_OS | CTL_ADDR0_CFG(1), 64);	/* 8, traced */
		run_single("tstop", sr, CTL_OS | CTL_ADDR0_CFG(2), 8);	/* 9: TraceStop at ptt_leaf */
		hw_wrmsr(MSR_RTIT_ADDR0_A, 0);
		hw_wrmsr(MSR_RTIT_ADDR0_B, 0);
		restore_gate(6, ud_saved);
		if (alias)
			alias_map(0);
		vmx_check(sr, after + 0x3000);
		systab->BootServices->FreePages(mem, 48);
	}
	say("PTTEST done");
	guest_shutdown(systab);
}
