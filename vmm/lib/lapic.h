/* SPDX-License-Identifier: MIT */
/*
 * lapic.h - this CPU's local APIC registers, as far as the tracer needs
 * them: the LVT performance-monitoring entry through which PMIs arrive.
 *
 * xAPIC mode: 32-bit registers in the 4 KiB page at IA32_APIC_BASE[51:12]
 * (SDM 3A "Local APIC Register Address Map"); x2APIC mode
 * (IA32_APIC_BASE.EXTD, bit 10): MSR 0x800 + offset / 16 (SDM 3A
 * "x2APIC Register Address Space").  Both go through vmm/hw/hw.h.  The
 * registers are this CPU's own: call on the CPU concerned, in VMX root.
 */
#ifndef TV_LAPIC_H
#define TV_LAPIC_H

#include <stdbool.h>
#include <stdint.h>

#define MSR_IA32_APIC_BASE        0x1bu
#define APIC_BASE_EXTD            (1ull << 10)   /* x2APIC mode */
#define APIC_BASE_EN              (1ull << 11)   /* APIC global enable */
#define X2APIC_MSR_BASE           0x800u

#define LAPIC_LVT_PERFMON         0x340u
#define LAPIC_LVT_MASKED          (1u << 16)
#define LAPIC_LVT_DM_MASK         (7u << 8)
#define LAPIC_LVT_DM_FIXED        (0u << 8)
#define LAPIC_LVT_DM_NMI          (4u << 8)

/* Whether this CPU's APIC is globally enabled (IA32_APIC_BASE[11]). */
bool lapic_enabled(void);
/* Register at xAPIC offset reg (16-byte aligned, < 0x400); 0 when disabled. */
uint32_t lapic_read(uint32_t reg);
/* Write it; nothing when the APIC is disabled. */
void lapic_write(uint32_t reg, uint32_t value);

#endif /* TV_LAPIC_H */
