/* SPDX-License-Identifier: MIT */
/*
 * guest_helpers.h - the assembly helpers of tests/payload/guest_helpers.S,
 * shared by the bench's guest programs that probe for #GP or enter a VMX
 * guest (tests/payload/pmctest.c, archlbrtest.c, pttest.c, btstest.c).
 */
#ifndef TV_GUEST_HELPERS_H
#define TV_GUEST_HELPERS_H

#include <stdint.h>

/*
 * #GP probes: install guest_gp as the vector 13 gate (guest_idt.h
 * set_gate), then each guest_wrmsr/guest_rdmsr that faults adds one to
 * guest_gp_count and goes on after the 2-byte WRMSR/RDMSR (guest_rdmsr
 * then returns 0).  guest_gp skips any 2-byte faulting instruction, so a
 * program's own probes (RDPMC) may use it too.
 */
void guest_gp(void);
extern uint64_t guest_gp_count;
void guest_wrmsr(uint32_t msr, uint64_t value);
uint64_t guest_rdmsr(uint32_t msr);

/*
 * guest_vmx_launch: VMLAUNCH of the current VMCS, whose fields the caller
 * wrote except HOST_RSP and HOST_RIP (written here: the VM exit comes back
 * into this function).  Returns 0 after the VM exit (the guest's, or a
 * failed entry's), 1 when VMLAUNCH itself failed (no exit).  GDTR and IDTR
 * are reloaded after the exit (it leaves their limits at 0xFFFF).
 */
int guest_vmx_launch(void);

/*
 * guest_vmx_launch_wrmsr: the same, with a WRMSR of value to msr right
 * before the VMLAUNCH (at guest_vmx_wrmsr_vmlaunch, the WRMSR's next IP):
 * e.g. IA32_RTIT_CTL, so that the host traces VMX root up to the entry.
 */
int guest_vmx_launch_wrmsr(uint32_t msr, uint64_t value);

/*
 * guest_vmx_guest: a VMX guest for GUEST_RIP (same address space, GDT and
 * IDT as the host): three branch instructions, all taken -- a CALL to
 * guest_vmx_guest_leaf, its RET to guest_vmx_guest_ret, a JZ from
 * guest_vmx_guest_jz to guest_vmx_guest_exit -- then VMCALL (at
 * guest_vmx_guest_exit), which exits; never resumed.  For Intel PT: one
 * compressible RET and one Jcc (two TNT bits).
 */
void guest_vmx_guest(void);

#endif /* TV_GUEST_HELPERS_H */
