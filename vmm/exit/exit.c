/* SPDX-License-Identifier: MIT */
/*
 * exit.c - VM-exit dispatch and the helpers every handler shares.
 *
 * One table, indexed by basic exit reason, built with designated
 * initializers; the dispatcher reads only the VMCS fields a handler asks
 * for.  Reasons without a row go to one handler that names the reason,
 * dumps the VMCS and stops the CPU: with the controls vmx.c programs they
 * are not expected, and guessing would hide a bug.
 */
#include <stddef.h>
#include <string.h>

#include "vmm/exit/exit.h"
#include "vmm/exit/exit_ept.h"
#include "vmm/exit/exit_io.h"
#include "vmm/exit/hooks.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/vmx/vmx.h"

static enum exit_action exit_exception_nmi(struct exit_ctx *ctx);
static enum exit_action exit_monitor_trap_flag(struct exit_ctx *ctx);

static const struct exit_handler exit_table[EXIT_REASON_MAX] = {
	[EXIT_REASON_EXCEPTION_NMI] = { exit_exception_nmi,  true,  false },
	[EXIT_REASON_TRIPLE_FAULT] = { exit_triple_fault,    false, false },
	[EXIT_REASON_INIT]         = { exit_init_signal,     false, false },
	[EXIT_REASON_SIPI]         = { exit_sipi,            true,  false },
	[EXIT_REASON_CPUID]        = { exit_cpuid,           false, true },
	[EXIT_REASON_GETSEC]       = { exit_getsec,          false, false },
	[EXIT_REASON_INVD]         = { exit_invd,            false, true },
	[EXIT_REASON_VMCALL]       = { exit_vmcall,          false, true },
	[EXIT_REASON_VMCLEAR]      = { exit_vmx_instruction, false, false },
	[EXIT_REASON_VMLAUNCH]     = { exit_vmx_instruction, false, false },
	[EXIT_REASON_VMPTRLD]      = { exit_vmx_instruction, false, false },
	[EXIT_REASON_VMPTRST]      = { exit_vmx_instruction, false, false },
	[EXIT_REASON_VMREAD]       = { exit_vmx_instruction, false, false },
	[EXIT_REASON_VMRESUME]     = { exit_vmx_instruction, false, false },
	[EXIT_REASON_VMWRITE]      = { exit_vmx_instruction, false, false },
	[EXIT_REASON_VMXOFF]       = { exit_vmx_instruction, false, false },
	[EXIT_REASON_VMXON]        = { exit_vmx_instruction, false, false },
	[EXIT_REASON_CR_ACCESS]    = { exit_cr_access,       true,  true },
	[EXIT_REASON_IO_INSTRUCTION] = { exit_io_instruction, true,  true },
	[EXIT_REASON_RDMSR]        = { exit_rdmsr,           false, true },
	[EXIT_REASON_WRMSR]        = { exit_wrmsr,           false, true },
	[EXIT_REASON_EPT_VIOLATION] = { exit_ept_violation,  true,  false },
	[EXIT_REASON_INVEPT]       = { exit_vmx_instruction, false, false },
	[EXIT_REASON_INVVPID]      = { exit_vmx_instruction, false, false },
	[EXIT_REASON_XSETBV]       = { exit_xsetbv,          false, true },
	[EXIT_REASON_VMFUNC]       = { exit_vmx_instruction, false, false },
	[EXIT_REASON_PREEMPTION_TIMER] = { exit_preemption_timer, false, false },
	[EXIT_REASON_MONITOR_TRAP_FLAG] = { exit_monitor_trap_flag, false, false },
	/* EPT misconfiguration (a bug in ept.c: dump and stop) and PMIs
	 * (the LBR backend's PMI-driven reads) get rows when they are wired in. */
};

static const char *const exit_reason_names[] = {
	[EXIT_REASON_EXCEPTION_NMI] = "exception or NMI",
	[EXIT_REASON_EXTERNAL_INTERRUPT] = "external interrupt",
	[EXIT_REASON_TRIPLE_FAULT] = "triple fault",
	[EXIT_REASON_INIT] = "INIT signal",
	[EXIT_REASON_SIPI] = "start-up IPI",
	[EXIT_REASON_IO_SMI] = "I/O SMI",
	[EXIT_REASON_OTHER_SMI] = "other SMI",
	[EXIT_REASON_INTERRUPT_WINDOW] = "interrupt window",
	[EXIT_REASON_NMI_WINDOW] = "NMI window",
	[EXIT_REASON_TASK_SWITCH] = "task switch",
	[EXIT_REASON_CPUID] = "CPUID",
	[EXIT_REASON_GETSEC] = "GETSEC",
	[EXIT_REASON_HLT] = "HLT",
	[EXIT_REASON_INVD] = "INVD",
	[EXIT_REASON_INVLPG] = "INVLPG",
	[EXIT_REASON_RDPMC] = "RDPMC",
	[EXIT_REASON_RDTSC] = "RDTSC",
	[EXIT_REASON_RSM] = "RSM",
	[EXIT_REASON_VMCALL] = "VMCALL",
	[EXIT_REASON_VMCLEAR] = "VMCLEAR",
	[EXIT_REASON_VMLAUNCH] = "VMLAUNCH",
	[EXIT_REASON_VMPTRLD] = "VMPTRLD",
	[EXIT_REASON_VMPTRST] = "VMPTRST",
	[EXIT_REASON_VMREAD] = "VMREAD",
	[EXIT_REASON_VMRESUME] = "VMRESUME",
	[EXIT_REASON_VMWRITE] = "VMWRITE",
	[EXIT_REASON_VMXOFF] = "VMXOFF",
	[EXIT_REASON_VMXON] = "VMXON",
	[EXIT_REASON_CR_ACCESS] = "control-register access",
	[EXIT_REASON_DR_ACCESS] = "MOV DR",
	[EXIT_REASON_IO_INSTRUCTION] = "I/O instruction",
	[EXIT_REASON_RDMSR] = "RDMSR",
	[EXIT_REASON_WRMSR] = "WRMSR",
	[EXIT_REASON_ENTRY_FAIL_GUEST] = "VM-entry failure: invalid guest state",
	[EXIT_REASON_ENTRY_FAIL_MSR] = "VM-entry failure: MSR loading",
	[EXIT_REASON_MWAIT] = "MWAIT",
	[EXIT_REASON_MONITOR_TRAP_FLAG] = "monitor trap flag",
	[EXIT_REASON_MONITOR] = "MONITOR",
	[EXIT_REASON_PAUSE] = "PAUSE",
	[EXIT_REASON_ENTRY_FAIL_MCE] = "VM-entry failure: machine check",
	[EXIT_REASON_TPR_BELOW_THRESHOLD] = "TPR below threshold",
	[EXIT_REASON_APIC_ACCESS] = "APIC access",
	[EXIT_REASON_VIRTUALIZED_EOI] = "virtualized EOI",
	[EXIT_REASON_GDTR_IDTR] = "access to GDTR or IDTR",
	[EXIT_REASON_LDTR_TR] = "access to LDTR or TR",
	[EXIT_REASON_EPT_VIOLATION] = "EPT violation",
	[EXIT_REASON_EPT_MISCONFIG] = "EPT misconfiguration",
	[EXIT_REASON_INVEPT] = "INVEPT",
	[EXIT_REASON_RDTSCP] = "RDTSCP",
	[EXIT_REASON_PREEMPTION_TIMER] = "VMX-preemption timer expired",
	[EXIT_REASON_INVVPID] = "INVVPID",
	[EXIT_REASON_WBINVD] = "WBINVD",
	[EXIT_REASON_XSETBV] = "XSETBV",
	[EXIT_REASON_APIC_WRITE] = "APIC write",
	[EXIT_REASON_RDRAND] = "RDRAND",
	[EXIT_REASON_INVPCID] = "INVPCID",
	[EXIT_REASON_VMFUNC] = "VMFUNC",
	[EXIT_REASON_ENCLS] = "ENCLS",
	[EXIT_REASON_RDSEED] = "RDSEED",
	[EXIT_REASON_PML_FULL] = "page-modification log full",
	[EXIT_REASON_XSAVES] = "XSAVES",
	[EXIT_REASON_XRSTORS] = "XRSTORS",
};

const char *vmx_exit_reason_name(uint32_t basic_reason)
{
	if (basic_reason < sizeof(exit_reason_names) / sizeof(exit_reason_names[0]) &&
	    exit_reason_names[basic_reason])
		return exit_reason_names[basic_reason];
	return "unknown";
}

/* --- hooks ------------------------------------------------------------------ */

static const struct exit_hooks no_hooks;
static const struct exit_hooks *hooks = &no_hooks;

void exit_hooks_set(const struct exit_hooks *h)
{
	__atomic_store_n(&hooks, h ? h : &no_hooks, __ATOMIC_RELEASE);
}

const struct exit_hooks *exit_hooks_get(void)
{
	return __atomic_load_n(&hooks, __ATOMIC_ACQUIRE);
}

/* --- helpers ---------------------------------------------------------------- */

/* guest_regs in the SDM's GPR encoding order (28.2.1, Table 28-3). */
static const size_t gpr_offset[16] = {
	offsetof(struct guest_regs, rax), offsetof(struct guest_regs, rcx),
	offsetof(struct guest_regs, rdx), offsetof(struct guest_regs, rbx),
	offsetof(struct guest_regs, rsp_unused), offsetof(struct guest_regs, rbp),
	offsetof(struct guest_regs, rsi), offsetof(struct guest_regs, rdi),
	offsetof(struct guest_regs, r8), offsetof(struct guest_regs, r9),
	offsetof(struct guest_regs, r10), offsetof(struct guest_regs, r11),
	offsetof(struct guest_regs, r12), offsetof(struct guest_regs, r13),
	offsetof(struct guest_regs, r14), offsetof(struct guest_regs, r15),
};

uint64_t exit_gpr_read(const struct exit_ctx *ctx, uint32_t index)
{
	uint64_t v;

	index &= 15;
	if (index == 4)
		return vmcs_get(VMCS_GUEST_RSP);
	memcpy(&v, (const char *)ctx->regs + gpr_offset[index], sizeof(v));
	return v;
}

void exit_gpr_write(struct exit_ctx *ctx, uint32_t index, uint64_t value)
{
	index &= 15;
	if (index == 4) {
		vmcs_write(VMCS_GUEST_RSP, value);
		return;
	}
	memcpy((char *)ctx->regs + gpr_offset[index], &value, sizeof(value));
}

uint32_t exit_guest_cpl(void)
{
	return SEG_AR_DPL((uint32_t)vmcs_get(VMCS_GUEST_SS_AR));
}

bool exit_guest_64bit(void)
{
	/* 64-bit mode = IA-32e mode (the entry control mirrors EFER.LMA on
	 * every exit, SDM 3C 28.3) and CS.L = 1 (SDM 3A 5.2.1). */
	if (!(vmcs_get(VMCS_ENTRY_CTLS) & ENTRY_IA32E_MODE_GUEST))
		return false;
	return (vmcs_get(VMCS_GUEST_CS_AR) & SEG_AR_L) != 0;
}

uint64_t exit_guest_cr0(const struct exit_ctx *ctx)
{
	uint64_t mask = ctx->cpu->cr0_mask;

	return (vmcs_get(VMCS_GUEST_CR0) & ~mask) | (vmcs_get(VMCS_CR0_READ_SHADOW) & mask);
}

uint64_t exit_guest_cr4(const struct exit_ctx *ctx)
{
	uint64_t mask = ctx->cpu->cr4_mask;

	return (vmcs_get(VMCS_GUEST_CR4) & ~mask) | (vmcs_get(VMCS_CR4_READ_SHADOW) & mask);
}

uint32_t exit_maxphyaddr(void)
{
	struct hw_cpuid_regs r;

	hw_cpuid(0x80000000u, 0, &r);
	if (r.eax < 0x80000008u)
		return 36;
	hw_cpuid(0x80000008u, 0, &r);
	return r.eax & 0xff;
}

void exit_flush_guest_tlb(struct exit_ctx *ctx, bool keep_globals)
{
	const struct per_cpu *cpu = ctx->cpu;
	uint64_t cap = cpu->caps.ept_vpid;
	int rc;

	if (!(cpu->proc2 & CPU2_ENABLE_VPID) || !(cap & VPID_CAP_INVVPID))
		return;
	if (keep_globals && (cap & VPID_CAP_INVVPID_SINGLE_GLOBALS))
		rc = hw_invvpid(INVVPID_SINGLE_CONTEXT_GLOBALS, cpu->vpid, 0);
	else if (cap & VPID_CAP_INVVPID_SINGLE)
		rc = hw_invvpid(INVVPID_SINGLE_CONTEXT, cpu->vpid, 0);
	else
		rc = hw_invvpid(INVVPID_ALL_CONTEXT, 0, 0);
	if (rc)
		log_err("exit: cpu %u: INVVPID failed (%d)", cpu->index, rc);
}

void exit_skip_instruction(struct exit_ctx *ctx)
{
	uint64_t rip = vmcs_get(VMCS_GUEST_RIP) + ctx->instr_len;
	uint64_t intr = vmcs_get(VMCS_GUEST_INTERRUPTIBILITY);
	uint64_t rflags = vmcs_get(VMCS_GUEST_RFLAGS);

	/* Outside 64-bit mode EIP wraps at 32 bits (SDM 3A 3.5). */
	if (!exit_guest_64bit())
		rip &= 0xffffffffull;
	vmcs_write(VMCS_GUEST_RIP, rip);
	/*
	 * The emulated instruction completed, so the one-instruction shadow
	 * of a preceding STI or MOV SS is over (SDM 3C 25.4.2).
	 */
	if (intr & (INTERRUPTIBILITY_STI | INTERRUPTIBILITY_MOV_SS))
		vmcs_write(VMCS_GUEST_INTERRUPTIBILITY,
			   intr & ~(uint64_t)(INTERRUPTIBILITY_STI | INTERRUPTIBILITY_MOV_SS));
	/*
	 * With RFLAGS.TF set (and not branch-only stepping, DEBUGCTL.BTF) the
	 * instruction ends in a single-step #DB: make it pending, as the BS
	 * bit of the pending-debug-exceptions field delivers (25.4.2, 27.7.3).
	 */
	if ((rflags & RFLAGS_TF) && !(vmcs_get(VMCS_GUEST_IA32_DEBUGCTL) & DEBUGCTL_BTF))
		vmcs_write(VMCS_GUEST_PENDING_DBG_EXCEPTIONS,
			   vmcs_get(VMCS_GUEST_PENDING_DBG_EXCEPTIONS) | PENDING_DBG_BS);
}

/* Exceptions that push an error code (SDM 3A 6.3.1, Table 6-1). */
static bool vector_has_error_code(uint8_t vector)
{
	switch (vector) {
	case 8: case 10: case 11: case 12: case 13: case 14: case 17: case 21:
		return true;
	default:
		return false;
	}
}

void exit_inject_exception(struct exit_ctx *ctx, uint8_t vector, bool has_error, uint32_t error)
{
	struct per_cpu *cpu = ctx->cpu;
	bool deliver = has_error && vector_has_error_code(vector);

	/*
	 * SDM 3C 27.2.1.3: deliver-error-code must be 1 exactly when the
	 * vector pushes one and the guest is not in real mode under
	 * "unrestricted guest" (CR0.PE = 0): real-mode exceptions push no
	 * error code, and a mismatch fails the VM entry.
	 */
	if (deliver && (cpu->proc2 & CPU2_UNRESTRICTED_GUEST) &&
	    !(vmcs_get(VMCS_GUEST_CR0) & CR0_PE))
		deliver = false;
	if (deliver)
		vmcs_write(VMCS_ENTRY_EXCEPTION_ERROR_CODE, error);
	vmcs_write(VMCS_ENTRY_INTR_INFO, intr_info_hw_exception(vector, deliver));
	if (vector == VEC_UD)
		cpu->stats.injected_ud++;
	else if (vector == VEC_GP)
		cpu->stats.injected_gp++;
}

/* --- dispatch ---------------------------------------------------------------- */

/*
 * An exit during event delivery (SDM 3C, VM Exits, "Information for VM
 * Exits During Event Delivery"): the IDT-vectoring
 * information field is valid and the event (an interrupt, NMI or
 * exception the guest was receiving when, say, its stack page needed an
 * EPT fix-up) was not delivered.  Unless the handler already injected an
 * event of its own, it is injected again on this entry, with its error
 * code, and for software interrupts and exceptions the instruction length
 * (SDM 3C, VM Entries, "Event Injection").  Bits 30:12 are reserved in the
 * entry field (bit 12 of the vectoring field is undefined): not copied.  A hardware exception that is
 * injected anew is re-evaluated by the CPU, so a #DF or triple fault comes
 * out as it would have on bare metal.
 */
static void reinject_vectoring(struct exit_ctx *ctx)
{
	uint64_t idt = vmcs_get(VMCS_IDT_VECTORING_INFO);
	uint32_t type = (uint32_t)(idt >> INTR_INFO_TYPE_SHIFT) & 7u;

	if (!(idt & INTR_INFO_VALID) || (vmcs_get(VMCS_ENTRY_INTR_INFO) & INTR_INFO_VALID))
		return;
	if (idt & INTR_INFO_DELIVER_ERROR)
		vmcs_write(VMCS_ENTRY_EXCEPTION_ERROR_CODE, vmcs_get(VMCS_IDT_VECTORING_ERROR_CODE));
	if (type == INTR_TYPE_SW_INTERRUPT || type == INTR_TYPE_PRIV_SW_EXC ||
	    type == INTR_TYPE_SW_EXCEPTION)
		vmcs_write(VMCS_ENTRY_INSTRUCTION_LEN, vmcs_get(VMCS_EXIT_INSTRUCTION_LEN));
	vmcs_write(VMCS_ENTRY_INTR_INFO, idt & (INTR_INFO_VALID | 0xfffu));
	ctx->cpu->stats.reinjected++;
}

static enum exit_action exit_unknown(struct exit_ctx *ctx)
{
	log_err("exit: cpu %u: unhandled exit reason %u (%s), qualification %#llx, guest RIP %#llx",
		ctx->cpu->index, ctx->reason, vmx_exit_reason_name(ctx->reason),
		(unsigned long long)vmcs_get(VMCS_EXIT_QUALIFICATION),
		(unsigned long long)vmcs_get(VMCS_GUEST_RIP));
	vmcs_dump();
	return EXIT_STOP_CPU;
}

/*
 * Exception or NMI (reason 0).  The exception bitmap is 0 except bit 1
 * (#DB), which a tracer may set (the BTF backend does, from its first
 * window on); NMI exiting is on only when the tracer asked for it (pmi =
 * on), and then an NMI (interruption type 2) goes to its hook, which
 * reflects what is not its PMI.  Anything else, or an event with no hook
 * registered for it, is unexpected.
 */
static enum exit_action exit_exception_nmi(struct exit_ctx *ctx)
{
	const struct exit_hooks *h = exit_hooks_get();
	uint64_t info = vmcs_get(VMCS_EXIT_INTR_INFO);

	if ((info & INTR_INFO_VALID) &&
	    ((info >> INTR_INFO_TYPE_SHIFT) & 7u) == INTR_TYPE_NMI &&
	    (ctx->cpu->pin & PIN_NMI_EXITING) && h->nmi_exit)
		return h->nmi_exit(ctx);
	if ((info & INTR_INFO_VALID) && (info & INTR_INFO_VECTOR_MASK) == VEC_DB &&
	    h->owns_db && h->db_exit && h->owns_db(ctx->cpu))
		return h->db_exit(ctx);
	log_err("exit: cpu %u: unexpected exception exit, interruption info %#llx",
		ctx->cpu->index, (unsigned long long)info);
	return exit_unknown(ctx);
}

/* Monitor trap flag (37): only a tracer sets the control. */
static enum exit_action exit_monitor_trap_flag(struct exit_ctx *ctx)
{
	const struct exit_hooks *h = exit_hooks_get();

	if (h->mtf_exit)
		return h->mtf_exit(ctx);
	return exit_unknown(ctx);
}

/* Exit qualification of a failed VM entry for invalid guest state (28.8). */
static const char *entry_fail_guest_qual(uint64_t q)
{
	switch (q) {
	case 2: return "failure loading PDPTEs";
	case 3: return "NMI injection would be blocked by a pending NMI";
	case 4: return "invalid VMCS link pointer";
	default: return "see the guest-state checks, SDM 3C 27.3.1";
	}
}

/*
 * entry_failure_log - the one decoder of a failed VM entry (exit reason
 * bit 31, SDM 3C 27.8): the checks of the controls and host state passed,
 * the processor loaded host state as for an exit, and basic reason 33,
 * 34 or 41 says why.  For 34 the qualification is the failing MSR-load
 * entry (1-based).  Used for VMLAUNCH and VMRESUME alike: the CPU stops,
 * or for a failed launch vmx_exit_handler unwinds to the launch.
 */
static void entry_failure_log(const struct per_cpu *cpu, uint64_t raw, uint32_t reason)
{
	uint64_t qual = vmcs_get(VMCS_EXIT_QUALIFICATION);

	switch (reason) {
	case EXIT_REASON_ENTRY_FAIL_GUEST:
		log_err("exit: cpu %u: VM entry failed: invalid guest state (exit reason %#llx, qualification %llu: %s)",
			cpu->index, (unsigned long long)raw, (unsigned long long)qual,
			entry_fail_guest_qual(qual));
		break;
	case EXIT_REASON_ENTRY_FAIL_MSR:
		log_err("exit: cpu %u: VM entry failed: MSR loading (exit reason %#llx, qualification %llu: MSR-load entry)",
			cpu->index, (unsigned long long)raw, (unsigned long long)qual);
		break;
	case EXIT_REASON_ENTRY_FAIL_MCE:
		log_err("exit: cpu %u: VM entry failed: machine check (exit reason %#llx, qualification %llu)",
			cpu->index, (unsigned long long)raw, (unsigned long long)qual);
		break;
	default:
		log_err("exit: cpu %u: VM entry failed: reason %u (%s) (exit reason %#llx, qualification %llu)",
			cpu->index, reason, vmx_exit_reason_name(reason),
			(unsigned long long)raw, (unsigned long long)qual);
		break;
	}
	vmcs_dump();
}

enum exit_action vmx_exit_dispatch(struct per_cpu *cpu, struct guest_regs *regs)
{
	struct exit_ctx ctx = { .cpu = cpu, .regs = regs };
	const struct exit_handler *h = NULL;
	enum exit_action action;
	uint64_t raw;

	cpu->stats.exits++;
	/* The one read of the exit reason: cpu->exit_reason serves the rest. */
	if (vmcs_read(VMCS_EXIT_REASON, &raw)) {
		cpu->exit_reason = 0;
		vmcs_dump();
		return EXIT_STOP_CPU;
	}
	cpu->exit_reason = (uint32_t)raw;
	ctx.reason = (uint32_t)(raw & 0xffff);
	if (ctx.reason < EXIT_REASON_MAX)
		cpu->stats.by_reason[ctx.reason]++;
	if (raw & EXIT_REASON_ENTRY_FAILURE) {
		entry_failure_log(cpu, raw, ctx.reason);
		return EXIT_STOP_CPU;
	}

	if (ctx.reason < EXIT_REASON_MAX && exit_table[ctx.reason].fn)
		h = &exit_table[ctx.reason];
	if (!h)
		return exit_unknown(&ctx);
	if (h->need_qualification)
		ctx.qualification = vmcs_get(VMCS_EXIT_QUALIFICATION);
	if (h->need_instr_len)
		ctx.instr_len = (uint32_t)vmcs_get(VMCS_EXIT_INSTRUCTION_LEN);
	action = h->fn(&ctx);
	if (action == EXIT_RESUME)
		reinject_vectoring(&ctx);
	return action;
}
