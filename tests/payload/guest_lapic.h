/* SPDX-License-Identifier: MIT */
/*
 * guest_lapic.h - local APIC helpers shared by the bench's guest programs
 * that take or mask the performance-monitoring interrupt
 * (tests/payload/pmctest.c, archlbrtest.c, btstest.c, pttest.c): the LVT
 * performance monitoring counters entry, the IRR and EOI, in xAPIC (MMIO
 * at IA32_APIC_BASE) or x2APIC (MSR) mode, whichever the firmware left on.
 * Each program includes it once.
 */
#ifndef TV_GUEST_LAPIC_H
#define TV_GUEST_LAPIC_H

#include <stdint.h>

#include "vmm/hw/hw.h"

#define MSR_APIC_BASE 0x1b
#define MSR_X2APIC_EOI 0x80b
#define MSR_X2APIC_IRR0 0x820
#define MSR_X2APIC_LVT_PMI 0x834

/* IA32_APIC_BASE.EXTD (bit 10): x2APIC mode (SDM 3A "x2APIC Mode"). */
static inline int lapic_x2apic(void)
{
	return (hw_rdmsr(MSR_APIC_BASE) >> 10) & 1;
}

/* An xAPIC register at its offset in the 4 KiB MMIO page. */
static inline volatile uint32_t *lapic_reg(uint32_t off)
{
	uint64_t base = hw_rdmsr(MSR_APIC_BASE) & ~0xfffull;

	return (volatile uint32_t *)(uintptr_t)(base + off);
}

/* The LVT performance monitoring counters entry (xAPIC 0x340). */
static inline uint32_t lvt_pmi_read(void)
{
	return lapic_x2apic() ? (uint32_t)hw_rdmsr(MSR_X2APIC_LVT_PMI) : *lapic_reg(0x340);
}

static inline void lvt_pmi_write(uint32_t v)
{
	if (lapic_x2apic())
		hw_wrmsr(MSR_X2APIC_LVT_PMI, v);
	else
		*lapic_reg(0x340) = v;
}

/* Is vector v requested in the IRR (SDM 3A "Interrupt Request Register")? */
static inline int lapic_irr(unsigned v)
{
	uint32_t w = lapic_x2apic() ? (uint32_t)hw_rdmsr(MSR_X2APIC_IRR0 + v / 32)
				    : *lapic_reg(0x200 + 0x10 * (v / 32));

	return (w >> (v % 32)) & 1;
}

static inline void lapic_eoi(void)
{
	if (lapic_x2apic())
		hw_wrmsr(MSR_X2APIC_EOI, 0);
	else
		*lapic_reg(0xb0) = 0;
}

#endif /* TV_GUEST_LAPIC_H */
