/* SPDX-License-Identifier: MIT */
/*
 * hw.h - the hardware seam.
 *
 * Every privileged instruction tracevisor executes is declared here and
 * nowhere else.  Two implementations exist and are chosen at link time:
 *
 *   vmm/hw/hw_x86.c      the target: inline asm, linked into tracevisor.efi
 *   tests/fakes/hw_fake.c the host fake: CPUID/MSR/VMCS/port tables that
 *                         unit tests seed and inspect
 *
 * Logic above this header never contains asm.  Functions that can fail
 * (the VMX instructions) return 0 or a negative HW_VMX_* code; the rest
 * cannot fail architecturally once their preconditions hold, and their
 * preconditions are the caller's job (e.g. check CPUID.1:ECX.VMX[bit 5]
 * before setting CR4.VMXE: QEMU TCG livelocks instead of raising #GP).
 */
#ifndef TV_HW_H
#define TV_HW_H

#include <stdbool.h>
#include <stdint.h>

struct hw_cpuid_regs {
	uint32_t eax, ebx, ecx, edx;
};

/* Descriptor-table register image as stored by SGDT/SIDT (SDM 2B). */
struct hw_dtr {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

/* --- identification and time -------------------------------------------- */
void hw_cpuid(uint32_t leaf, uint32_t subleaf, struct hw_cpuid_regs *out);
uint64_t hw_rdtsc(void);
/*
 * hw_rdrand64 - RDRAND (SDM 2B): true with a random value in *out when
 * the DRNG had one (CF=1), false when it had none ready (retry a few
 * times).  Only where CPUID.01H:ECX.RDRAND[bit 30] is 1: #UD otherwise.
 */
bool hw_rdrand64(uint64_t *out);

/* --- model-specific registers -------------------------------------------- */
uint64_t hw_rdmsr(uint32_t msr);
void hw_wrmsr(uint32_t msr, uint64_t value);

/* --- control, debug and extended control registers ------------------------ */
uint64_t hw_read_cr0(void);
uint64_t hw_read_cr2(void);
uint64_t hw_read_cr3(void);
uint64_t hw_read_cr4(void);
void hw_write_cr0(uint64_t value);
void hw_write_cr2(uint64_t value);
void hw_write_cr3(uint64_t value);
void hw_write_cr4(uint64_t value);
/*
 * DR6: VMX does not switch it (SDM 3C 28.3.4: a #DB VM exit leaves it
 * unchanged), so in VMX root it holds the guest's value.
 */
uint64_t hw_read_dr6(void);
void hw_write_dr6(uint64_t value);
uint64_t hw_read_dr7(void);
void hw_write_dr7(uint64_t value);
uint64_t hw_read_rflags(void);
uint64_t hw_xgetbv(uint32_t xcr);
void hw_xsetbv(uint32_t xcr, uint64_t value);

/* --- segments and descriptor tables --------------------------------------- */
enum hw_seg { HW_SEG_ES, HW_SEG_CS, HW_SEG_SS, HW_SEG_DS, HW_SEG_FS,
	      HW_SEG_GS, HW_SEG_LDTR, HW_SEG_TR, HW_SEG_COUNT };
uint16_t hw_read_selector(enum hw_seg seg);
void hw_sgdt(struct hw_dtr *out);
void hw_sidt(struct hw_dtr *out);
void hw_lgdt(const struct hw_dtr *in);
/* LTR: loads TR; the descriptor's type must be an available 64-bit TSS. */
void hw_ltr(uint16_t selector);

/* --- port I/O -------------------------------------------------------------- */
void hw_outb(uint16_t port, uint8_t value);
void hw_outw(uint16_t port, uint16_t value);
void hw_outl(uint16_t port, uint32_t value);
uint8_t hw_inb(uint16_t port);
uint16_t hw_inw(uint16_t port);
uint32_t hw_inl(uint16_t port);

/*
 * --- memory-mapped registers ------------------------------------------------
 * One aligned 32-bit access, uncached as the region's memory type makes it
 * (the local APIC page: SDM 3A "Local APIC Register Address Map").  The
 * address is physical; tracevisor runs identity mapped.
 */
uint32_t hw_mmio_read32(uint64_t pa);
void hw_mmio_write32(uint64_t pa, uint32_t value);

/* --- execution ------------------------------------------------------------- */
void hw_pause(void);
void hw_halt(void);               /* HLT with interrupts as they are */
void hw_cli(void);
void hw_wbinvd(void);
/* Stop this CPU for good: interrupts off, HLT in a loop. */
__attribute__((noreturn)) void hw_stop_cpu(void);
/*
 * Leave for good: interrupts off, DF clear, jump to entry with RSI = rsi.
 * The bench's Linux loader uses it for the kernel's 64-bit entry.
 */
__attribute__((noreturn)) void hw_jump_rsi(uint64_t entry, uint64_t rsi);

/* --- VMX instructions (SDM 3C 31.2 conventions) ---------------------------- */
#define HW_VMX_OK            0
#define HW_VMX_FAIL_INVALID (-1)  /* CF=1: no current VMCS / bad pointer */
#define HW_VMX_FAIL_VALID   (-2)  /* ZF=1: error number in VM_INSTRUCTION_ERROR */

int hw_vmxon(uint64_t vmxon_region_pa);
int hw_vmxoff(void);
int hw_vmclear(uint64_t vmcs_pa);
int hw_vmptrld(uint64_t vmcs_pa);
int hw_vmread(uint64_t field, uint64_t *value);
int hw_vmwrite(uint64_t field, uint64_t value);
int hw_invept(uint64_t type, uint64_t eptp);
int hw_invvpid(uint64_t type, uint16_t vpid, uint64_t linear);

/*
 * hw_vmcall - guest side: VMCALL with RAX/RBX/RCX/RDX = in[0..3]; the
 * registers after it return in out[0..3].  Raises #UD without a
 * hypervisor: check CPUID leaf 0x40000000 first.
 */
void hw_vmcall(const uint64_t in[4], uint64_t out[4]);

/*
 * hw_vmx_launch_here - VMLAUNCH the current VMCS so that the guest goes on
 * from this very call (vmx_entry.S writes GUEST_RSP/RIP/RFLAGS for its
 * own frame).  Returns 0 in the guest after a successful launch, or
 * HW_VMX_FAIL_INVALID/HW_VMX_FAIL_VALID in VMX root when VMLAUNCH failed.
 * A VM entry that fails its checks later comes back through
 * hw_vmx_launch_fail_return(), making this return that error instead.
 */
int hw_vmx_launch_here(void);
/* Unwind the launch frame at launch_rsp (the GUEST_RSP) returning err. */
__attribute__((noreturn)) void hw_vmx_launch_fail_return(uint64_t launch_rsp, int err);

/*
 * The guest context a CPU leaves VMX for (hw_vmx_devirt).  Layout fixed:
 * vmx_entry.S reads it by offset (asserted in vmm/exit/devirt.c).
 */
struct hw_devirt_frame {
	uint64_t gpr[16];        /* rax, rcx, rdx, rbx, rsp, rbp, rsi, rdi, r8..r15 */
	uint64_t rip, rflags;    /* 128, 136 */
	uint64_t cs, ss;         /* 144, 152: selectors */
	uint64_t ds, es, fs, gs; /* 160..184 */
	uint64_t fs_base, gs_base; /* 192, 200 */
	uint64_t cr3, cr4;       /* 208, 216: cr4 without VMXE */
	struct hw_dtr gdtr;      /* 224 (10 bytes, packed) */
	uint8_t pad0[6];
	struct hw_dtr idtr;      /* 240 */
	uint8_t pad1[6];
	uint64_t iret[5];        /* 256: scratch for the IRETQ frame */
};

/*
 * hw_vmx_devirt - leave VMX operation for good on this CPU and continue
 * as the guest would have: load the guest's GDTR/IDTR/CR3, VMXOFF, clear
 * CR4.VMXE, load its data segments and FS/GS bases, its GPRs, and IRETQ
 * to CS:RIP with RFLAGS and SS:RSP.  Called in VMX root from the exit
 * handler; the frame must stay mapped in the guest's page tables (it is in
 * tracevisor's identity-mapped memory).  TR keeps tracevisor's TSS until
 * the OS loads its own (UEFI does not use TR).
 */
__attribute__((noreturn)) void hw_vmx_devirt(struct hw_devirt_frame *f);

#endif /* TV_HW_H */
