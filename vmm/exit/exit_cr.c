/* SPDX-License-Identifier: MIT */
/*
 * exit_cr.c - control-register accesses (exit reason 28).
 *
 * Which accesses exit (SDM 3C 26.1.3): MOV to CR0/CR4 and CLTS/LMSW when
 * they would change a bit that is set in the guest/host mask to a value
 * other than its read-shadow bit; MOV to/from CR3 and CR8 only with their
 * exiting controls (vmx.c sets none).  The host owns exactly the bits the
 * VMX fixed MSRs pin (CR0.NE, CR4.VMXE, ...: cpu->cr0_mask/cr4_mask); the
 * guest sees its own value of those in the read shadows.
 *
 * Such a MOV exits before the processor checks its operand, so the
 * instruction's #GP conditions (SDM 2B MOV CR; 3A 2.5) are ours to apply;
 * an emulated MOV also has to do the side effects the hardware would
 * have done: IA-32e mode (de)activation, loading the PAE PDPTEs (SDM 3A
 * 4.4.1), and the TLB invalidations (4.10.4.1).
 *
 * CR4.VMXE: tracevisor keeps it set in the real CR4 (VMX operation needs
 * it) and the guest, told by CPUID that there is no VMX, may not set it:
 * on such hardware CR4.VMXE is reserved, so MOV to CR4 with VMXE = 1
 * raises #GP(0).  The shadow holds the guest's value, VMXE clear.
 */
#include <string.h>

#include "vmm/exit/exit.h"
#include "vmm/lib/log.h"

static int default_guest_read(uint64_t gpa, void *dst, size_t len)
{
	memcpy(dst, (const void *)(uintptr_t)gpa, len);
	return 0;
}

int (*exit_guest_read)(uint64_t gpa, void *dst, size_t len) = default_guest_read;

/* IA-32e mode active: the entry control the processor saves as EFER.LMA. */
static bool guest_lma(void)
{
	return (vmcs_get(VMCS_ENTRY_CTLS) & ENTRY_IA32E_MODE_GUEST) != 0;
}

/*
 * PAE paging: the PDPTE registers are loaded from CR3 by the MOV (SDM 3A
 * 4.4.1); with EPT, VM entry loads them from the VMCS instead (27.3.2.4),
 * so the emulation writes them there.  A present PDPTE with reserved
 * bits (2:1, 8:5, 63:MAXPHYADDR) makes the MOV raise #GP(0).
 */
static int load_pdptes(uint64_t cr3)
{
	uint32_t maxphy = exit_maxphyaddr();
	uint64_t rsvd = 0x1e6ull | (maxphy < 64 ? ~0ull << maxphy : 0);
	uint64_t pdpte[4];

	if (exit_guest_read(cr3 & 0xffffffe0ull, pdpte, sizeof(pdpte)))
		return -1;
	for (int i = 0; i < 4; i++)
		if ((pdpte[i] & 1) && (pdpte[i] & rsvd))
			return -1;
	for (int i = 0; i < 4; i++)
		vmcs_write(VMCS_GUEST_PDPTE(i), pdpte[i]);
	return 0;
}

static bool pae_paging(uint64_t cr0, uint64_t cr4, bool lma)
{
	return (cr0 & CR0_PG) && (cr4 & CR4_PAE) && !lma;
}

/* MOV to CR0 (also CLTS and LMSW, which land here with the new value). */
static int cr0_write(struct exit_ctx *ctx, uint64_t val)
{
	struct per_cpu *cpu = ctx->cpu;
	uint64_t old = exit_guest_cr0(ctx);
	uint64_t cr4 = exit_guest_cr4(ctx);
	uint64_t efer = vmcs_get(VMCS_GUEST_IA32_EFER);
	uint64_t entry = vmcs_get(VMCS_ENTRY_CTLS);
	bool unrestricted = (cpu->proc2 & CPU2_UNRESTRICTED_GUEST) != 0;
	uint64_t new_efer = efer, new_entry = entry;

	/* 3A 2.5: bits 63:32 must be 0; other undefined bits are ignored; ET is
	 * hardwired to 1 on every processor with VMX. */
	if (val >> 32)
		return -1;
	val = (val & CR0_DEFINED) | CR0_ET;
	if ((val & CR0_PG) && !(val & CR0_PE))
		return -1;
	if ((val & CR0_NW) && !(val & CR0_CD))
		return -1;
	if (!(val & CR0_WP) && (cr4 & CR4_CET))
		return -1;

	if ((val & CR0_PG) && !(old & CR0_PG) && (efer & EFER_LME)) {
		/* Activating IA-32e mode needs PAE (SDM 3A "Initializing IA-32e Mode"). */
		if (!(cr4 & CR4_PAE))
			return -1;
		new_efer |= EFER_LMA;
		new_entry |= ENTRY_IA32E_MODE_GUEST;
	} else if (!(val & CR0_PG) && (old & CR0_PG)) {
		/* Paging cannot be turned off in 64-bit mode, nor with PCIDs on. */
		if (exit_guest_64bit() || (cr4 & CR4_PCIDE))
			return -1;
		new_efer &= ~EFER_LMA;
		new_entry &= ~(uint64_t)ENTRY_IA32E_MODE_GUEST;
	}
	if (pae_paging(val, cr4, new_efer & EFER_LMA) &&
	    ((val ^ old) & (CR0_PG | CR0_CD | CR0_NW)) &&
	    load_pdptes(vmcs_get(VMCS_GUEST_CR3)))
		return -1;

	vmcs_write(VMCS_GUEST_CR0, vmx_fix_cr0(&cpu->caps, val, unrestricted));
	vmcs_write(VMCS_CR0_READ_SHADOW, val);
	if (new_efer != efer)
		vmcs_write(VMCS_GUEST_IA32_EFER, new_efer);
	if (new_entry != entry) {
		vmcs_write(VMCS_ENTRY_CTLS, new_entry);
		cpu->entry_ctls = (uint32_t)new_entry;
	}
	if ((val ^ old) & (CR0_PE | CR0_PG | CR0_WP | CR0_CD))
		exit_flush_guest_tlb(ctx, false);
	return 0;
}

static int cr4_write(struct exit_ctx *ctx, uint64_t val)
{
	struct per_cpu *cpu = ctx->cpu;
	uint64_t old = exit_guest_cr4(ctx);
	uint64_t cr0 = exit_guest_cr0(ctx);
	bool lma = guest_lma();

	/* VMX hidden: VMXE is a reserved bit for this guest (see the top). */
	if (val & CR4_VMXE)
		return -1;
	/* So is SMXE: CPUID hides SMX (exit_cpuid.c). */
	if (val & CR4_SMXE)
		return -1;
	/* Reserved bits: 63:32, and whatever this CPU does not implement
	 * (IA32_VMX_CR4_FIXED1 clear, SDM 3C A.8). */
	if ((val >> 32) || (val & ~cpu->caps.cr4_fixed1))
		return -1;
	if (lma && !(val & CR4_PAE))
		return -1;  /* leaving IA-32e mode by clearing PAE */
	if (lma && ((val ^ old) & CR4_LA57))
		return -1;  /* LA57 changes only outside IA-32e mode */
	if ((val & CR4_PCIDE) && !(old & CR4_PCIDE) &&
	    (!lma || (vmcs_get(VMCS_GUEST_CR3) & 0xfff)))
		return -1;  /* PCIDE needs IA-32e mode and CR3[11:0] = 0 */
	if ((val & CR4_CET) && !(cr0 & CR0_WP))
		return -1;
	if (pae_paging(cr0, val, lma) && ((val ^ old) & (CR4_PAE | CR4_PGE | CR4_PSE | CR4_SMEP)) &&
	    load_pdptes(vmcs_get(VMCS_GUEST_CR3)))
		return -1;

	vmcs_write(VMCS_GUEST_CR4, vmx_fix_cr4(&cpu->caps, val | CR4_VMXE));
	vmcs_write(VMCS_CR4_READ_SHADOW, val);
	if ((val ^ old) & (CR4_PSE | CR4_PAE | CR4_PGE | CR4_LA57 | CR4_PCIDE | CR4_SMEP |
			   CR4_SMAP | CR4_PKE))
		exit_flush_guest_tlb(ctx, false);
	return 0;
}

static int cr3_write(struct exit_ctx *ctx, uint64_t val)
{
	uint64_t cr4 = exit_guest_cr4(ctx);
	bool lma = guest_lma();
	bool noflush = false;

	/* With PCIDs, bit 63 asks not to flush and is not stored (3A 4.10.4.1). */
	if (cr4 & CR4_PCIDE) {
		noflush = (val >> 63) != 0;
		val &= ~(1ull << 63);
	}
	if (lma && exit_maxphyaddr() < 64 && (val >> exit_maxphyaddr()))
		return -1;
	if (pae_paging(exit_guest_cr0(ctx), cr4, lma) && load_pdptes(val))
		return -1;
	vmcs_write(VMCS_GUEST_CR3, val);
	if (!noflush)
		exit_flush_guest_tlb(ctx, true);
	return 0;
}

static enum exit_action cr_unexpected(struct exit_ctx *ctx)
{
	log_err("cr: cpu %u: unexpected control-register access, qualification %#llx (CR%u, type %u)",
		ctx->cpu->index, (unsigned long long)ctx->qualification,
		cr_qual_cr(ctx->qualification), (unsigned)cr_qual_type(ctx->qualification));
	vmcs_dump();
	return EXIT_STOP_CPU;
}

enum exit_action exit_cr_access(struct exit_ctx *ctx)
{
	uint64_t q = ctx->qualification;
	uint32_t cr = cr_qual_cr(q);
	/* Outside 64-bit mode the operand is 32 bits (SDM 2B MOV CR). */
	uint64_t opmask = exit_guest_64bit() ? ~0ull : 0xffffffffull;
	uint64_t v, cur;
	int rc;

	switch (cr_qual_type(q)) {
	case CR_ACCESS_MOV_TO:
		v = exit_gpr_read(ctx, cr_qual_gpr(q)) & opmask;
		if (cr == 0)
			rc = cr0_write(ctx, v);
		else if (cr == 3)
			rc = cr3_write(ctx, v);
		else if (cr == 4)
			rc = cr4_write(ctx, v);
		else
			return cr_unexpected(ctx);
		break;
	case CR_ACCESS_MOV_FROM:
		/* CR0/CR4 reads never exit (they read the shadows); CR8 exiting is off. */
		if (cr != 3)
			return cr_unexpected(ctx);
		exit_gpr_write(ctx, cr_qual_gpr(q), vmcs_get(VMCS_GUEST_CR3) & opmask);
		rc = 0;
		break;
	case CR_ACCESS_CLTS:
		rc = cr0_write(ctx, exit_guest_cr0(ctx) & ~CR0_TS);
		break;
	case CR_ACCESS_LMSW:
	default:
		/* LMSW loads CR0[3:0] (PE, MP, EM, TS) and cannot clear PE (SDM 2A LMSW). */
		cur = exit_guest_cr0(ctx);
		rc = cr0_write(ctx, (cur & ~0xfull) | (cr_qual_lmsw_data(q) & 0xfu) | (cur & CR0_PE));
		break;
	}
	if (rc) {
		exit_inject_exception(ctx, VEC_GP, true, 0);
		return EXIT_RESUME;
	}
	exit_skip_instruction(ctx);
	return EXIT_RESUME;
}
