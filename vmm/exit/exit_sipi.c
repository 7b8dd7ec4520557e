/* SPDX-License-Identifier: MIT */
/*
 * exit_sipi.c - INIT (exit reason 3) and SIPI (4): the wait-for-SIPI
 * emulation that lets the OS start its application processors.
 *
 * Under tracevisor every CPU is already in VMX non-root operation when
 * the OS sends INIT-SIPI-SIPI.  An INIT always exits (SDM 3C 26.2); the
 * guest CPU is parked in the wait-for-SIPI activity state (25.4.2), in
 * which a SIPI causes a SIPI exit carrying the vector (28.2.1).  The SIPI
 * handler then loads the architectural state after INIT (SDM 3A
 * "Initialization Overview", table of register state after INIT) with
 * CS:IP = vector << 8 : 0 and resumes the guest in real mode, which
 * needs "unrestricted guest".
 *
 * Choices (all pass the VM-entry guest-state checks, SDM 3C 27.3.1.2,
 * with unrestricted guest and CR0.PE = 0):
 *  - LDTR: the INIT state itself, usable: selector 0, base 0, limit
 *    0xffff, AR 0x82 (present, type 2 = LDT).  Entry requires a usable
 *    LDTR to be type 2, S = 0, present, with a limit consistent with G:
 *    it is.  (Unusable, AR bit 16, would pass as well; the INIT value
 *    is what the OS would find on bare metal.)
 *  - TR: AR 0x8b (present, 32-bit busy TSS), base 0, limit 0xffff: the
 *    INIT state's limit, with the busy type entry demands (3 or 11).
 *  - RDX = the CPU signature (CPUID.1:EAX), as after INIT; other GPRs 0.
 *  - CR2 = 0: CR2 is not in the VMCS, the guest's CR2 is the live one.
 *  - Not reset: DR0-DR3/DR6 (not in the VMCS, no seam access), XCR0,
 *    and the MSRs INIT leaves alone (PAT, SYSENTER, DEBUGCTL as saved).
 */
#include "vmm/exit/exit.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"

#define SIPI_CR0        0x60000010ull  /* CD, NW, ET */
#define AR_CODE_16      0x9bu          /* present, DPL 0, code exec/read, accessed */
#define AR_DATA_16      0x93u          /* present, DPL 0, data read/write, accessed */
#define AR_LDT          0x82u          /* present, LDT */
#define AR_TSS_BUSY_32  0x8bu          /* present, 32-bit busy TSS */

enum exit_action exit_init_signal(struct exit_ctx *ctx)
{
	struct per_cpu *cpu = ctx->cpu;
	int rc = 0;

	if (!(cpu->caps.misc & VMX_MISC_ACT_WAIT_SIPI)) {
		log_err("sipi: cpu %u: INIT received but the CPU has no wait-for-SIPI activity state (IA32_VMX_MISC[8] = 0): cannot start this CPU for the OS",
			cpu->index);
		return EXIT_STOP_CPU;
	}
	/*
	 * 27.3.1.5: wait-for-SIPI requires no STI/MOV-SS blocking and no
	 * event being injected.  Pending events die with the INIT anyway.
	 */
	rc |= vmcs_write(VMCS_GUEST_INTERRUPTIBILITY, 0);
	rc |= vmcs_write(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, 0);
	rc |= vmcs_write(VMCS_ENTRY_INTR_INFO, 0);
	rc |= vmcs_write(VMCS_GUEST_ACTIVITY_STATE, ACTIVITY_WAIT_SIPI);
	if (rc)
		return EXIT_STOP_CPU;  /* vmcs_write logged the field */
	cpu->sipi_state = VCPU_WAIT_FOR_SIPI;
	/*
	 * No logging here: a SIPI that arrives while this CPU is still in VMX
	 * root is dropped (it is not in wait-for-SIPI yet), and Linux sends
	 * its SIPIs ~10 us after the INIT.  A line to a 115200-baud UART takes
	 * milliseconds; the INIT is counted in stats.by_reason instead and the
	 * SIPI handler logs both.
	 */
	return EXIT_RESUME;
}

struct vmcs_value {
	uint32_t field;
	uint64_t value;
};

enum exit_action exit_sipi(struct exit_ctx *ctx)
{
	struct per_cpu *cpu = ctx->cpu;
	uint8_t vector = sipi_qual_vector(ctx->qualification);
	struct hw_cpuid_regs sig;
	uint64_t entry;

	if (cpu->sipi_state != VCPU_WAIT_FOR_SIPI) {
		/* Outside wait-for-SIPI a SIPI is ignored, as on bare metal. */
		log_debug("sipi: cpu %u: SIPI %#x ignored, not waiting for one", cpu->index, vector);
		return EXIT_RESUME;
	}
	if (!(cpu->proc2 & CPU2_UNRESTRICTED_GUEST)) {
		log_err("sipi: cpu %u: SIPI needs unrestricted guest for real mode: cannot start this CPU",
			cpu->index);
		return EXIT_STOP_CPU;
	}

	const struct vmcs_value state[] = {
		{ VMCS_GUEST_CS_SELECTOR, (uint64_t)vector << 8 },
		{ VMCS_GUEST_CS_BASE, (uint64_t)vector << 12 },
		{ VMCS_GUEST_CS_LIMIT, 0xffff },
		{ VMCS_GUEST_CS_AR, AR_CODE_16 },
		{ VMCS_GUEST_DS_SELECTOR, 0 }, { VMCS_GUEST_DS_BASE, 0 },
		{ VMCS_GUEST_DS_LIMIT, 0xffff }, { VMCS_GUEST_DS_AR, AR_DATA_16 },
		{ VMCS_GUEST_ES_SELECTOR, 0 }, { VMCS_GUEST_ES_BASE, 0 },
		{ VMCS_GUEST_ES_LIMIT, 0xffff }, { VMCS_GUEST_ES_AR, AR_DATA_16 },
		{ VMCS_GUEST_FS_SELECTOR, 0 }, { VMCS_GUEST_FS_BASE, 0 },
		{ VMCS_GUEST_FS_LIMIT, 0xffff }, { VMCS_GUEST_FS_AR, AR_DATA_16 },
		{ VMCS_GUEST_GS_SELECTOR, 0 }, { VMCS_GUEST_GS_BASE, 0 },
		{ VMCS_GUEST_GS_LIMIT, 0xffff }, { VMCS_GUEST_GS_AR, AR_DATA_16 },
		{ VMCS_GUEST_SS_SELECTOR, 0 }, { VMCS_GUEST_SS_BASE, 0 },
		{ VMCS_GUEST_SS_LIMIT, 0xffff }, { VMCS_GUEST_SS_AR, AR_DATA_16 },
		{ VMCS_GUEST_LDTR_SELECTOR, 0 }, { VMCS_GUEST_LDTR_BASE, 0 },
		{ VMCS_GUEST_LDTR_LIMIT, 0xffff }, { VMCS_GUEST_LDTR_AR, AR_LDT },
		{ VMCS_GUEST_TR_SELECTOR, 0 }, { VMCS_GUEST_TR_BASE, 0 },
		{ VMCS_GUEST_TR_LIMIT, 0xffff }, { VMCS_GUEST_TR_AR, AR_TSS_BUSY_32 },
		{ VMCS_GUEST_GDTR_BASE, 0 }, { VMCS_GUEST_GDTR_LIMIT, 0xffff },
		{ VMCS_GUEST_IDTR_BASE, 0 }, { VMCS_GUEST_IDTR_LIMIT, 0xffff },
		{ VMCS_GUEST_RIP, 0 },
		{ VMCS_GUEST_RSP, 0 },
		{ VMCS_GUEST_RFLAGS, 0x2 },
		{ VMCS_GUEST_CR0, vmx_fix_cr0(&cpu->caps, SIPI_CR0, true) },
		{ VMCS_CR0_READ_SHADOW, SIPI_CR0 },
		{ VMCS_GUEST_CR3, 0 },
		{ VMCS_GUEST_CR4, vmx_fix_cr4(&cpu->caps, 0) },
		{ VMCS_CR4_READ_SHADOW, 0 },
		{ VMCS_GUEST_DR7, 0x400 },
		{ VMCS_GUEST_IA32_EFER, 0 },
		{ VMCS_GUEST_INTERRUPTIBILITY, 0 },
		{ VMCS_GUEST_PENDING_DBG_EXCEPTIONS, 0 },
		{ VMCS_ENTRY_INTR_INFO, 0 },
		{ VMCS_GUEST_ACTIVITY_STATE, ACTIVITY_ACTIVE },
	};
	for (size_t i = 0; i < sizeof(state) / sizeof(state[0]); i++)
		if (vmcs_write(state[i].field, state[i].value))
			return EXIT_STOP_CPU;  /* vmcs_write logged the field */

	/* Real mode is not IA-32e mode: with "load IA32_EFER" the entry
	 * control must equal EFER.LMA (27.3.1.1). */
	if (vmcs_read(VMCS_ENTRY_CTLS, &entry))
		return EXIT_STOP_CPU;
	entry &= ~(uint64_t)ENTRY_IA32E_MODE_GUEST;
	if (vmcs_write(VMCS_ENTRY_CTLS, entry))
		return EXIT_STOP_CPU;
	cpu->entry_ctls = (uint32_t)entry;

	hw_cpuid(1, 0, &sig);
	*ctx->regs = (struct guest_regs){ .rdx = sig.eax };
	hw_write_cr2(0);
	/* INIT flushes the TLBs; VPID-tagged entries would otherwise survive. */
	exit_flush_guest_tlb(ctx, false);
	cpu->sipi_state = VCPU_RUNNING;
	log_debug("sipi: cpu %u: INIT and SIPI vector %#x, starting at %04x:0000 (%llu INITs so far)",
		  cpu->index, vector, (unsigned)vector << 8,
		  (unsigned long long)cpu->stats.by_reason[EXIT_REASON_INIT]);
	return EXIT_RESUME;
}
