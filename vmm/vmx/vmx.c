/* SPDX-License-Identifier: MIT */
/*
 * vmx.c - VMX on for one CPU: snapshot, controls, VMCS, VMXON.
 */
#include "vmm/vmx/vmx.h"

#include <stdio.h>
#include <string.h>

#include "vmm/exit/exit.h"
#include "vmm/exit/hooks.h"
#include "vmm/lib/log.h"
#include "vmm/hw/msr.h"
#include "vmm/lib/segment.h"

void vmx_snapshot(struct cpu_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->cr0 = hw_read_cr0();
	s->cr3 = hw_read_cr3();
	s->cr4 = hw_read_cr4();
	s->dr7 = hw_read_dr7();
	s->rflags = hw_read_rflags();
	hw_sgdt(&s->gdtr);
	hw_sidt(&s->idtr);
	for (int i = 0; i < HW_SEG_COUNT; i++)
		s->sel[i] = hw_read_selector((enum hw_seg)i);
	s->efer = hw_rdmsr(MSR_IA32_EFER);
	s->pat = hw_rdmsr(MSR_IA32_PAT);
	s->debugctl = hw_rdmsr(MSR_IA32_DEBUGCTL);
	s->sysenter_cs = hw_rdmsr(MSR_IA32_SYSENTER_CS);
	s->sysenter_esp = hw_rdmsr(MSR_IA32_SYSENTER_ESP);
	s->sysenter_eip = hw_rdmsr(MSR_IA32_SYSENTER_EIP);
	s->fs_base = hw_rdmsr(MSR_IA32_FS_BASE);
	s->gs_base = hw_rdmsr(MSR_IA32_GS_BASE);
}

/* IA32_PERF_GLOBAL_CTRL exists from architectural perfmon v2 (SDM 3B 20.2.2). */
static bool has_perf_global_ctrl(void)
{
	struct hw_cpuid_regs r;

	hw_cpuid(0, 0, &r);
	if (r.eax < 0xa)
		return false;
	hw_cpuid(0xa, 0, &r);
	return (r.eax & 0xff) >= 2;
}

int vmx_compute_controls(struct per_cpu *cpu, bool guest_long_mode, char *why, size_t whylen)
{
	const struct vmx_caps *c = &cpu->caps;
	uint32_t missing;

	if ((cpu->trace_entry_ctls & ENTRY_LOAD_PERF_GLOBAL_CTRL) && !has_perf_global_ctrl()) {
		log_err("vmx: cpu %u: no IA32_PERF_GLOBAL_CTRL (perfmon before v2): lbr pmi windows will not open",
			cpu->index);
		cpu->trace_entry_ctls &= ~ENTRY_LOAD_PERF_GLOBAL_CTRL;
		cpu->trace_exit_ctls &= ~EXIT_LOAD_PERF_GLOBAL_CTRL;
	}
	uint32_t want2 = CPU2_ENABLE_EPT | CPU2_UNRESTRICTED_GUEST | CPU2_ENABLE_VPID;

	cpu->pin = vmx_adjust_controls(c->pin, ((cpu->timer_period_tsc || cpu->poll_period_tsc ||
						cpu->drain_period_tsc) ? PIN_PREEMPTION_TIMER : 0) |
				       cpu->trace_pin_ctls, &missing);
	if (missing & PIN_NMI_EXITING)
		log_err("vmx: cpu %u: NMI exiting not allowed: pmi windows will not open", cpu->index);
	if (missing & PIN_PREEMPTION_TIMER) {
		/* The poll keeps its period: it then runs at exits only (preempt.c). */
		log_warn("vmx: cpu %u: no VMX-preemption timer: periodic work (%s) only on exits",
			 cpu->index, cpu->poll_period_tsc ? "poll hook" :
			 cpu->drain_period_tsc ? "pt drain" : "heartbeat");
		cpu->timer_period_tsc = 0;
		cpu->drain_period_tsc = 0;
	}
	/*
	 * I/O bitmaps only while a PCI function is hidden or a trace source
	 * is set (boot sets the bitmap addresses then): they select
	 * 0xCF8-0xCFF and the ACPI PM1 control ports (exit_io.c).
	 */
	/*
	 * "Use TSC offsetting" with offset 0 (vmx_write_vmcs) changes nothing
	 * the guest sees until vmx_tsc_hide takes a stall out of its TSC
	 * (stall_tsc = hide); a CPU without it simply cannot hide (missing
	 * is not an error).
	 */
	cpu->proc = vmx_adjust_controls(c->proc, CPU_USE_MSR_BITMAPS | CPU_ACTIVATE_SECONDARY_CONTROLS |
					CPU_USE_TSC_OFFSETTING |
					(cpu->io_bitmap_a_pa ? CPU_USE_IO_BITMAPS : 0),
					&missing);
	if (missing & CPU_ACTIVATE_SECONDARY_CONTROLS) {
		snprintf(why, whylen, "no secondary processor-based controls (needed for EPT)");
		return -1;
	}
	if (missing & CPU_USE_IO_BITMAPS) {
		snprintf(why, whylen, "no I/O bitmaps: cannot hide PCI functions from the guest or see its ACPI power-off");
		return -1;
	}
	/*
	 * An instruction whose enable control is 0 raises #UD in the guest
	 * (SDM 3C 26.3): offer the guest every one the CPU has.
	 */
	want2 |= CPU2_ENABLE_RDTSCP | CPU2_ENABLE_INVPCID | CPU2_ENABLE_XSAVES |
		 CPU2_ENABLE_USER_WAIT_PAUSE;
	want2 &= (uint32_t)(c->proc2 >> 32) | CPU2_ENABLE_EPT | CPU2_UNRESTRICTED_GUEST;
	cpu->proc2 = vmx_adjust_controls(c->proc2, want2, &missing);
	if (missing & CPU2_ENABLE_EPT) {
		snprintf(why, whylen, "EPT not offered (IA32_VMX_PROCBASED_CTLS2 = %#llx)",
			 (unsigned long long)c->proc2);
		return -1;
	}
	if (missing & CPU2_UNRESTRICTED_GUEST) {
		snprintf(why, whylen, "unrestricted guest not offered (needed to start APs in real mode)");
		return -1;
	}
	/*
	 * The tracer's controls (cpu->trace_*_ctls, from its needs): e.g.
	 * for pt TraceEn loaded from the VMCS on entry and cleared on exit,
	 * so PT runs only in VMX non-root.  The engine refuses windows when
	 * the CPU lacks one of its controls.
	 */
	cpu->exit_ctls = vmx_adjust_controls(c->exit,
					     EXIT_HOST_ADDRESS_SPACE_SIZE | EXIT_SAVE_DEBUG_CONTROLS |
					     EXIT_SAVE_EFER | EXIT_LOAD_EFER | EXIT_SAVE_PAT | EXIT_LOAD_PAT |
					     cpu->trace_exit_ctls,
					     &missing);
	if (missing & (EXIT_HOST_ADDRESS_SPACE_SIZE | EXIT_LOAD_EFER | EXIT_SAVE_EFER)) {
		snprintf(why, whylen, "VM-exit controls lack 64-bit host or EFER save/load (%#x)", missing);
		return -1;
	}
	cpu->entry_ctls = vmx_adjust_controls(c->entry,
					      (guest_long_mode ? ENTRY_IA32E_MODE_GUEST : 0) |
					      ENTRY_LOAD_DEBUG_CONTROLS | ENTRY_LOAD_EFER | ENTRY_LOAD_PAT |
					      cpu->trace_entry_ctls,
					      &missing);
	if (missing & (ENTRY_IA32E_MODE_GUEST | ENTRY_LOAD_EFER)) {
		snprintf(why, whylen, "VM-entry controls lack IA-32e guest or EFER load (%#x)", missing);
		return -1;
	}
	/* Loading TraceEn without clearing it at exit would trace VMX root. */
	if (!(cpu->entry_ctls & ENTRY_LOAD_RTIT_CTL) != !(cpu->exit_ctls & EXIT_CLEAR_RTIT_CTL)) {
		cpu->entry_ctls &= ~ENTRY_LOAD_RTIT_CTL;
		cpu->exit_ctls &= ~EXIT_CLEAR_RTIT_CTL;
	}
	/* Arch LBR: both or neither (the engine refuses arch LBR windows then). */
	if (!(cpu->entry_ctls & ENTRY_LOAD_LBR_CTL) != !(cpu->exit_ctls & EXIT_CLEAR_LBR_CTL)) {
		cpu->entry_ctls &= ~ENTRY_LOAD_LBR_CTL;
		cpu->exit_ctls &= ~EXIT_CLEAR_LBR_CTL;
	}
	/* The same for the counters: both or neither (the engine refuses lbr pmi then). */
	if (!(cpu->entry_ctls & ENTRY_LOAD_PERF_GLOBAL_CTRL) !=
	    !(cpu->exit_ctls & EXIT_LOAD_PERF_GLOBAL_CTRL)) {
		cpu->entry_ctls &= ~ENTRY_LOAD_PERF_GLOBAL_CTRL;
		cpu->exit_ctls &= ~EXIT_LOAD_PERF_GLOBAL_CTRL;
	}
	return 0;
}

/* Write one field; remember the first failure. */
#define W(field, value)                                          \
	do {                                                     \
		int w_rc_ = vmcs_write((field), (value));         \
		if (w_rc_ && !rc)                                 \
			rc = w_rc_;                               \
	} while (0)

static const struct {
	enum hw_seg seg;
	uint32_t sel, base, limit, ar;
} guest_segs[] = {
	{ HW_SEG_ES, VMCS_GUEST_ES_SELECTOR, VMCS_GUEST_ES_BASE, VMCS_GUEST_ES_LIMIT, VMCS_GUEST_ES_AR },
	{ HW_SEG_CS, VMCS_GUEST_CS_SELECTOR, VMCS_GUEST_CS_BASE, VMCS_GUEST_CS_LIMIT, VMCS_GUEST_CS_AR },
	{ HW_SEG_SS, VMCS_GUEST_SS_SELECTOR, VMCS_GUEST_SS_BASE, VMCS_GUEST_SS_LIMIT, VMCS_GUEST_SS_AR },
	{ HW_SEG_DS, VMCS_GUEST_DS_SELECTOR, VMCS_GUEST_DS_BASE, VMCS_GUEST_DS_LIMIT, VMCS_GUEST_DS_AR },
	{ HW_SEG_FS, VMCS_GUEST_FS_SELECTOR, VMCS_GUEST_FS_BASE, VMCS_GUEST_FS_LIMIT, VMCS_GUEST_FS_AR },
	{ HW_SEG_GS, VMCS_GUEST_GS_SELECTOR, VMCS_GUEST_GS_BASE, VMCS_GUEST_GS_LIMIT, VMCS_GUEST_GS_AR },
	{ HW_SEG_LDTR, VMCS_GUEST_LDTR_SELECTOR, VMCS_GUEST_LDTR_BASE, VMCS_GUEST_LDTR_LIMIT, VMCS_GUEST_LDTR_AR },
	{ HW_SEG_TR, VMCS_GUEST_TR_SELECTOR, VMCS_GUEST_TR_BASE, VMCS_GUEST_TR_LIMIT, VMCS_GUEST_TR_AR },
};

int vmx_tsc_hide(struct per_cpu *cpu, uint64_t ticks)
{
	uint64_t off;

	if (!(cpu->proc & CPU_USE_TSC_OFFSETTING))
		return -1;
	/* two's complement: the offset is added to the TSC modulo 2^64 */
	off = cpu->tsc_offset - ticks;
	if (vmcs_write(VMCS_TSC_OFFSET, off))
		return -1;
	cpu->tsc_offset = off;
	return 0;
}

int vmx_write_vmcs(struct per_cpu *cpu, const struct cpu_snapshot *s,
		   const struct vmx_host_env *h)
{
	const uint8_t *gdt = (const uint8_t *)(uintptr_t)s->gdtr.base;
	bool unrestricted = cpu->proc2 & CPU2_UNRESTRICTED_GUEST;
	uint64_t guest_cr0, guest_cr4;
	int rc = 0;

	/* --- controls --- */
	W(VMCS_PIN_BASED_CTLS, cpu->pin);
	W(VMCS_PROC_BASED_CTLS, cpu->proc);
	W(VMCS_PROC_BASED_CTLS2, cpu->proc2);
	W(VMCS_EXIT_CTLS, cpu->exit_ctls);
	W(VMCS_ENTRY_CTLS, cpu->entry_ctls);
	W(VMCS_EXCEPTION_BITMAP, 0);
	W(VMCS_PF_ERROR_CODE_MASK, 0);
	W(VMCS_PF_ERROR_CODE_MATCH, 0);
	W(VMCS_CR3_TARGET_COUNT, 0);
	W(VMCS_EXIT_MSR_STORE_COUNT, 0);
	W(VMCS_EXIT_MSR_LOAD_COUNT, 0);
	W(VMCS_ENTRY_MSR_LOAD_COUNT, 0);
	W(VMCS_ENTRY_INTR_INFO, 0);
	W(VMCS_MSR_BITMAP, cpu->msr_bitmap_pa);
	if (cpu->proc & CPU_USE_IO_BITMAPS) {
		W(VMCS_IO_BITMAP_A, cpu->io_bitmap_a_pa);
		W(VMCS_IO_BITMAP_B, cpu->io_bitmap_b_pa);
	}
	W(VMCS_EPT_POINTER, h->eptp);
	if (cpu->proc & CPU_USE_TSC_OFFSETTING) {
		cpu->tsc_offset = 0;
		W(VMCS_TSC_OFFSET, 0);
	}
	if (cpu->pin & PIN_PREEMPTION_TIMER) {
		uint64_t now = hw_rdtsc();

		cpu->timer_shift = VMX_MISC_PREEMPT_SHIFT(cpu->caps.misc);
		cpu->next_beat_tsc = now + cpu->timer_period_tsc;
		cpu->next_poll_tsc = now + cpu->poll_period_tsc;
		cpu->next_drain_tsc = now + cpu->drain_period_tsc;
		W(VMCS_PREEMPTION_TIMER_VALUE, vcpu_timer_value(cpu, now));
	}
	if (cpu->proc2 & CPU2_ENABLE_VPID)
		W(VMCS_VPID, cpu->vpid);
	/*
	 * CR0/CR4 bits the VMX fixed MSRs force (CR4.VMXE, CR0.NE) are owned
	 * by the host: the guest reads its own view from the shadows.
	 */
	cpu->cr0_mask = cpu->caps.cr0_fixed0 & ~(unrestricted ? (CR0_PE | CR0_PG) : 0);
	cpu->cr0_mask |= ~cpu->caps.cr0_fixed1 & 0xffffffffull;
	cpu->cr4_mask = cpu->caps.cr4_fixed0 | (~cpu->caps.cr4_fixed1 & 0xffffffffull);
	W(VMCS_CR0_GUEST_HOST_MASK, cpu->cr0_mask);
	W(VMCS_CR4_GUEST_HOST_MASK, cpu->cr4_mask);
	W(VMCS_CR0_READ_SHADOW, s->cr0);
	W(VMCS_CR4_READ_SHADOW, s->cr4 & ~CR4_VMXE);

	/* --- guest state: the live firmware state of this CPU --- */
	guest_cr0 = vmx_fix_cr0(&cpu->caps, s->cr0, unrestricted);
	guest_cr4 = vmx_fix_cr4(&cpu->caps, s->cr4 | CR4_VMXE);
	W(VMCS_GUEST_CR0, guest_cr0);
	W(VMCS_GUEST_CR3, s->cr3);
	W(VMCS_GUEST_CR4, guest_cr4);
	W(VMCS_GUEST_DR7, s->dr7);
	for (size_t i = 0; i < sizeof(guest_segs) / sizeof(guest_segs[0]); i++) {
		struct seg_state seg;
		uint16_t sel = s->sel[guest_segs[i].seg];

		seg_from_gdt(gdt, s->gdtr.limit, sel, &seg);
		if (guest_segs[i].seg == HW_SEG_TR && (seg.ar & SEG_AR_UNUSABLE)) {
			/* UEFI runs with TR = 0; a usable TR is required (27.3.1.2). */
			seg_fake_tr(h->guest_tss_base, &seg);
		} else if (!(seg.ar & SEG_AR_UNUSABLE) && (seg.ar & (1u << 4))) {
			/* Code/data: the CPU sets "accessed" on load (27.3.1.2). */
			seg.ar |= 1;
		}
		if (guest_segs[i].seg == HW_SEG_FS)
			seg.base = s->fs_base;
		if (guest_segs[i].seg == HW_SEG_GS)
			seg.base = s->gs_base;
		W(guest_segs[i].sel, seg.selector);
		W(guest_segs[i].base, seg.base);
		W(guest_segs[i].limit, seg.limit);
		W(guest_segs[i].ar, seg.ar);
	}
	W(VMCS_GUEST_GDTR_BASE, s->gdtr.base);
	W(VMCS_GUEST_GDTR_LIMIT, s->gdtr.limit);
	W(VMCS_GUEST_IDTR_BASE, s->idtr.base);
	W(VMCS_GUEST_IDTR_LIMIT, s->idtr.limit);
	W(VMCS_GUEST_IA32_DEBUGCTL, s->debugctl);
	if (cpu->entry_ctls & ENTRY_LOAD_RTIT_CTL)
		W(VMCS_GUEST_IA32_RTIT_CTL, 0);   /* TraceEn only in a pt window */
	if (cpu->entry_ctls & ENTRY_LOAD_LBR_CTL)
		W(VMCS_GUEST_IA32_LBR_CTL, 0);    /* LBREn only in an lbr/btf window */
	if (cpu->entry_ctls & ENTRY_LOAD_PERF_GLOBAL_CTRL) {
		/* the guest's counters as the firmware left them; none in root */
		W(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL, hw_rdmsr(MSR_IA32_PERF_GLOBAL_CTRL));
		W(VMCS_HOST_IA32_PERF_GLOBAL_CTRL, 0);
	}
	W(VMCS_GUEST_IA32_PAT, s->pat);
	W(VMCS_GUEST_IA32_EFER, s->efer);
	W(VMCS_GUEST_IA32_SYSENTER_CS, s->sysenter_cs);
	W(VMCS_GUEST_IA32_SYSENTER_ESP, s->sysenter_esp);
	W(VMCS_GUEST_IA32_SYSENTER_EIP, s->sysenter_eip);
	W(VMCS_GUEST_INTERRUPTIBILITY, 0);
	W(VMCS_GUEST_ACTIVITY_STATE, ACTIVITY_ACTIVE);
	W(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, 0);
	W(VMCS_VMCS_LINK_POINTER, ~0ull);
	/* hw_vmx_launch_here rewrites it at the launch; set for the checks. */
	W(VMCS_GUEST_RFLAGS, s->rflags);

	/* --- host state: tracevisor's own tables in reserved memory --- */
	W(VMCS_HOST_CR0, hw_read_cr0());
	W(VMCS_HOST_CR3, h->cr3);
	W(VMCS_HOST_CR4, hw_read_cr4());
	W(VMCS_HOST_CS_SELECTOR, HOST_SEL_CODE);
	W(VMCS_HOST_SS_SELECTOR, HOST_SEL_DATA);
	W(VMCS_HOST_DS_SELECTOR, HOST_SEL_DATA);
	W(VMCS_HOST_ES_SELECTOR, HOST_SEL_DATA);
	W(VMCS_HOST_FS_SELECTOR, HOST_SEL_DATA);
	W(VMCS_HOST_GS_SELECTOR, HOST_SEL_DATA);
	W(VMCS_HOST_TR_SELECTOR, HOST_SEL_TSS);
	W(VMCS_HOST_FS_BASE, 0);
	W(VMCS_HOST_GS_BASE, 0);
	W(VMCS_HOST_TR_BASE, h->tss_base);
	W(VMCS_HOST_GDTR_BASE, h->gdt_base);
	W(VMCS_HOST_IDTR_BASE, h->idt_base);
	W(VMCS_HOST_IA32_SYSENTER_CS, 0);
	W(VMCS_HOST_IA32_SYSENTER_ESP, 0);
	W(VMCS_HOST_IA32_SYSENTER_EIP, 0);
	W(VMCS_HOST_IA32_EFER, s->efer);
	W(VMCS_HOST_IA32_PAT, s->pat);
	W(VMCS_HOST_RSP, cpu->host_stack_top - 16);
	W(VMCS_HOST_RIP, h->exit_rip);
#ifdef TV_FAULT_VMCS_FIELD
	/* Fault injection for the bench: break one field on purpose (on one
	 * CPU only with TV_FAULT_CPU, e.g. 0: the boot CPU, launched last). */
#ifdef TV_FAULT_CPU
	if (cpu->index == TV_FAULT_CPU)
#endif
		W(TV_FAULT_VMCS_FIELD, TV_FAULT_VMCS_VALUE);
#endif
	return rc;
}

int vmx_cpu_enable(struct per_cpu *cpu)
{
	struct hw_cpuid_regs r;
	uint64_t fc, cr0, cr4;
	uint32_t rev;
	int rc;

	hw_cpuid(1, 0, &r);
	if (!(r.ecx & (1u << 5))) {
		/* QEMU TCG livelocks on CR4.VMXE without VMX: never try. */
		log_err("vmx: cpu %u: CPUID.1:ECX.VMX is 0", cpu->index);
		return -1;
	}
	fc = hw_rdmsr(MSR_IA32_FEATURE_CONTROL);
	if (!(fc & FEATURE_CONTROL_LOCK)) {
		fc |= FEATURE_CONTROL_LOCK | FEATURE_CONTROL_VMXON_OUTSIDE_SMX;
		hw_wrmsr(MSR_IA32_FEATURE_CONTROL, fc);
	} else if (!(fc & FEATURE_CONTROL_VMXON_OUTSIDE_SMX)) {
		log_err("vmx: cpu %u: IA32_FEATURE_CONTROL locked with VMX off (0x%llx): enable VT-x in the firmware setup",
			cpu->index, (unsigned long long)fc);
		return -1;
	}
	vmx_caps_read(&cpu->caps);
	/* SDM 3C 24.8: CR0/CR4 must honour the fixed bits before VMXON. */
	cr0 = hw_read_cr0();
	cr4 = hw_read_cr4() | CR4_VMXE;
	if (vmx_fix_cr0(&cpu->caps, cr0, false) != cr0)
		hw_write_cr0(vmx_fix_cr0(&cpu->caps, cr0, false));
	hw_write_cr4(vmx_fix_cr4(&cpu->caps, cr4));

	rev = VMX_BASIC_REVISION(cpu->caps.basic);
	memcpy((void *)(uintptr_t)cpu->vmxon_pa, &rev, 4);
	memcpy((void *)(uintptr_t)cpu->vmcs_pa, &rev, 4);
	rc = hw_vmxon(cpu->vmxon_pa);
	if (rc) {
		log_err("vmx: cpu %u: VMXON failed (%s)", cpu->index,
			rc == HW_VMX_FAIL_INVALID ? "VMfailInvalid: bad region or revision" :
						    "VMfailValid: already in VMX operation");
		hw_write_cr4(hw_read_cr4() & ~CR4_VMXE);
		return -1;
	}
	if (hw_vmclear(cpu->vmcs_pa) || hw_vmptrld(cpu->vmcs_pa)) {
		uint64_t err = 0;

		hw_vmread(VMCS_VM_INSTRUCTION_ERROR, &err);
		log_err("vmx: cpu %u: VMCLEAR/VMPTRLD failed: %s", cpu->index,
			vmx_instruction_error_text((uint32_t)err));
		vmx_cpu_disable(cpu);
		return -1;
	}
	return 0;
}

void vmx_cpu_disable(struct per_cpu *cpu)
{
	(void)cpu;
	hw_vmxoff();
	hw_write_cr4(hw_read_cr4() & ~CR4_VMXE);
}

void vmx_exit_handler(struct per_cpu *cpu, struct guest_regs *regs)
{
	const struct exit_hooks *hooks;
	bool first = cpu->launching;
	enum exit_action act;

	cpu->launching = false;
	act = vmx_exit_dispatch(cpu, regs);
	if (first) {
		if (cpu->exit_reason & EXIT_REASON_ENTRY_FAILURE) {
			/* Logged by the dispatcher.  GUEST_RSP is the launch frame
			 * vmx_launch_here left: back to the launch, which fails. */
			hw_vmread(VMCS_GUEST_RSP, &cpu->launch_rsp);
			hw_vmx_launch_fail_return(cpu->launch_rsp, VMX_ERR_ENTRY_FAILED);
		}
		cpu->launched = true;
	}
	switch (act) {
	case EXIT_RESUME:
		vcpu_periodic(cpu);
		hooks = exit_hooks_get();
		if (hooks->before_entry)
			hooks->before_entry(cpu, cpu->exit_reason & 0xffffu);
		vcpu_deliver_nmi(cpu);
		return;
	case EXIT_DEVIRT:
		cpu->launched = false;
		hw_vmx_devirt(&cpu->devirt);
	case EXIT_RESET_MACHINE:
		log_err("vmx: cpu %u: resetting the machine", cpu->index);
		hw_outb(0xcf9, 0x02);
		hw_outb(0xcf9, 0x06);  /* PIIX/ICH reset control: hard reset */
		hw_stop_cpu();
	case EXIT_STOP_CPU:
	default:
		log_err("vmx: cpu %u: stopped", cpu->index);
		cpu->stopped = true;
		hw_stop_cpu();
	}
}

void vmx_resume_failed(struct per_cpu *cpu)
{
	uint64_t err = 0;

	hw_vmread(VMCS_VM_INSTRUCTION_ERROR, &err);
	log_err("vmx: cpu %u: VMRESUME failed: error %llu (%s)", cpu->index,
		(unsigned long long)err, vmx_instruction_error_text((uint32_t)err));
	vmcs_dump();
	cpu->stopped = true;
	hw_stop_cpu();
}

void host_exception(uint64_t vector, const uint64_t *frame)
{
	log_break_lock();
	log_err("vmx: exception %llu in tracevisor (VMX root): error %#llx rip %#llx cs %#llx rflags %#llx rsp %#llx",
		(unsigned long long)vector, (unsigned long long)frame[0],
		(unsigned long long)frame[1], (unsigned long long)frame[2],
		(unsigned long long)frame[3], (unsigned long long)frame[4]);
	hw_stop_cpu();
}
