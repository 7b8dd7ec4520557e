/* SPDX-License-Identifier: MIT */
/*
 * guest_idt.h - IDT helpers shared by the bench's guest programs that
 * take their own interrupts (tests/payload/btstest.c, pttest.c): install
 * a 64-bit interrupt gate for a vector in the firmware's IDT and put the
 * old one back.  Each program includes it once.
 */
#ifndef TV_GUEST_IDT_H
#define TV_GUEST_IDT_H

#include <stdint.h>

#include "vmm/hw/hw.h"

/* An interrupt gate (type 0xE, DPL 0, present) for vector v pointing at
 * fn in the current CS (SDM 3A "IDT Descriptors", 64-bit layout); the old
 * 16 bytes go to saved. */
static inline void set_gate(unsigned v, void (*fn)(void), uint64_t saved[2])
{
	struct hw_dtr idtr;
	uint64_t *gate, h = (uint64_t)(uintptr_t)fn;

	hw_sidt(&idtr);
	gate = (uint64_t *)(uintptr_t)(idtr.base + 16 * v);
	saved[0] = gate[0];
	saved[1] = gate[1];
	gate[0] = (h & 0xffff) | ((uint64_t)hw_read_selector(HW_SEG_CS) << 16) |
		  ((uint64_t)0x8e << 40) | (((h >> 16) & 0xffff) << 48);
	gate[1] = h >> 32;
}

/* Put back the gate set_gate saved. */
static inline void restore_gate(unsigned v, const uint64_t saved[2])
{
	struct hw_dtr idtr;
	uint64_t *gate;

	hw_sidt(&idtr);
	gate = (uint64_t *)(uintptr_t)(idtr.base + 16 * v);
	gate[0] = saved[0];
	gate[1] = saved[1];
}

#endif /* TV_GUEST_IDT_H */
