/* SPDX-License-Identifier: MIT */
/*
 * lapic.c - local APIC register access in xAPIC or x2APIC mode (lapic.h).
 */
#include "vmm/lib/lapic.h"

#include "vmm/hw/hw.h"

/* IA32_APIC_BASE[51:12]: the page, whatever MAXPHYADDR (higher bits are 0). */
#define APIC_BASE_PAGE 0x000ffffffffff000ull

bool lapic_enabled(void)
{
	return (hw_rdmsr(MSR_IA32_APIC_BASE) & APIC_BASE_EN) != 0;
}

uint32_t lapic_read(uint32_t reg)
{
	uint64_t base = hw_rdmsr(MSR_IA32_APIC_BASE);

	if (!(base & APIC_BASE_EN))
		return 0;
	if (base & APIC_BASE_EXTD)
		return (uint32_t)hw_rdmsr(X2APIC_MSR_BASE + (reg >> 4));
	return hw_mmio_read32((base & APIC_BASE_PAGE) + reg);
}

void lapic_write(uint32_t reg, uint32_t value)
{
	uint64_t base = hw_rdmsr(MSR_IA32_APIC_BASE);

	if (!(base & APIC_BASE_EN))
		return;
	if (base & APIC_BASE_EXTD)
		hw_wrmsr(X2APIC_MSR_BASE + (reg >> 4), value);
	else
		hw_mmio_write32((base & APIC_BASE_PAGE) + reg, value);
}
