/* SPDX-License-Identifier: MIT */
/*
 * vmx.h - turning VMX on for one CPU and launching the live firmware
 * state as its guest.
 *
 * Split so that everything but the two-way launch runs on the host
 * against the fake seam: snapshot of the live CPU state, control
 * computation from the capability MSRs, VMCS contents, VMXON/VMCLEAR/
 * VMPTRLD with FEATURE_CONTROL and CR0/CR4 fixed-bit handling.
 */
#ifndef TV_VMX_H
#define TV_VMX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/hw/hw.h"
#include "vmm/vmx/vcpu.h"

#define MSR_IA32_SYSENTER_CS  0x174
#define MSR_IA32_SYSENTER_ESP 0x175
#define MSR_IA32_SYSENTER_EIP 0x176
#define MSR_IA32_PAT          0x277
#define MSR_IA32_EFER         0xc0000080
#define MSR_IA32_FS_BASE      0xc0000100
#define MSR_IA32_GS_BASE      0xc0000101
#define EFER_LME (1ull << 8)
#define EFER_LMA (1ull << 10)
#define CR0_PE (1ull << 0)
#define CR0_NE (1ull << 5)
#define CR0_PG (1ull << 31)
#define CR4_VMXE (1ull << 13)

/* The live state of a CPU that becomes its guest state. */
struct cpu_snapshot {
	uint64_t cr0, cr3, cr4, dr7, rflags;
	struct hw_dtr gdtr, idtr;
	uint16_t sel[HW_SEG_COUNT];
	uint64_t efer, pat, debugctl;
	uint64_t sysenter_cs, sysenter_esp, sysenter_eip;
	uint64_t fs_base, gs_base;
};

/* What the host side runs on (all in reserved memory, identity mapped). */
struct vmx_host_env {
	uint64_t cr3;             /* tracevisor's own page tables */
	uint64_t gdt_base;        /* this CPU's host GDT */
	uint64_t idt_base;        /* the host IDT (exception stubs) */
	uint64_t tss_base;        /* this CPU's host TSS */
	uint64_t exit_rip;        /* vmx_exit_entry in the resident copy */
	uint64_t eptp;
	uint64_t guest_tss_base;  /* a zeroed TSS for a guest with TR = 0 */
};

/*
 * Host GDT layout (tracevisor's own).  The TSS sits at the top of a
 * 256-byte table, above where firmware GDTs end: a CPU that leaves VMX
 * (vmm/exit/devirt.c) keeps this TR, and EDK II's MP code reloads the TR it
 * saved when the selector is inside the firmware GDT (clearing the busy
 * bit of whatever descriptor is there first).  0xf0 is past any firmware
 * GDT we know of (OVMF's limit is 0x47).
 */
#define HOST_SEL_CODE 0x08
#define HOST_SEL_DATA 0x10
#define HOST_SEL_TSS  0xf0
#define HOST_GDT_BYTES 256

/* vmx_snapshot - read the calling CPU's state through the hw seam. */
void vmx_snapshot(struct cpu_snapshot *s);

/*
 * vmx_compute_controls - choose pin/proc/proc2/exit/entry controls from
 * cpu->caps (TRUE_* MSRs when offered) and store them in *cpu.  Wanted:
 * MSR bitmaps, secondary controls with EPT, VPID, unrestricted guest and
 * the instruction-enable bits (RDTSCP, INVPCID, XSAVES, user wait) the
 * CPU offers so the guest keeps them; 64-bit host; EFER/PAT/debug
 * controls saved and loaded.  Returns 0, or -1 with the missing
 * requirement named in why (EPT, unrestricted guest and the secondary
 * controls are required).
 */
int vmx_compute_controls(struct per_cpu *cpu, bool guest_long_mode, char *why, size_t whylen);

/*
 * vmx_tsc_hide - take ticks out of the guest's TSC on cpu (the current
 * VMCS is cpu's): TSC_OFFSET -= ticks, so RDTSC, RDTSCP and RDMSR of
 * IA32_TSC in the guest return TSC + offset (SDM 3C 26.6.5, 25.6.5)
 * without the ticks the CPU spent stalled in VMX root.  Returns 0, -1
 * when the CPU has no "use TSC offsetting" (nothing changed) or the
 * VMWRITE failed.
 */
int vmx_tsc_hide(struct per_cpu *cpu, uint64_t ticks);

/*
 * vmx_write_vmcs - every VMCS field of the current VMCS except guest
 * RSP/RIP/RFLAGS (vmx_launch_here writes those).  Returns 0, or the
 * first failing vmcs_write's code (the field is logged by vmcs_write).
 */
int vmx_write_vmcs(struct per_cpu *cpu, const struct cpu_snapshot *s,
		   const struct vmx_host_env *h);

/*
 * vmx_cpu_enable - on the calling CPU: lock IA32_FEATURE_CONTROL with
 * VMXON-outside-SMX if unlocked (refuse if locked without it), apply the
 * CR0/CR4 fixed bits, VMXON, VMCLEAR + VMPTRLD of cpu's VMCS.  Returns 0
 * or a negative code with the reason logged; on failure VMX is left off.
 */
int vmx_cpu_enable(struct per_cpu *cpu);

/* vmx_cpu_disable - VMXOFF and clear CR4.VMXE (after a failed launch). */
void vmx_cpu_disable(struct per_cpu *cpu);

/* Called from vmx_entry.S. */
void vmx_exit_handler(struct per_cpu *cpu, struct guest_regs *regs);
__attribute__((noreturn)) void vmx_resume_failed(struct per_cpu *cpu);
__attribute__((noreturn)) void host_exception(uint64_t vector, const uint64_t *frame);

/* Status of the last failed VM entry on this CPU (read by the launcher). */
#define VMX_ERR_ENTRY_FAILED (-3)

/* Dispatch (vmm/exit/exit.c). */
enum exit_action vmx_exit_dispatch(struct per_cpu *cpu, struct guest_regs *regs);
void vmcs_dump(void);

#endif /* TV_VMX_H */
