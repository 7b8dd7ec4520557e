/* SPDX-License-Identifier: MIT */
/*
 * segment.h - segment descriptors to VMCS segment fields.
 *
 * The guest state of a blue pill is the live state of the CPU, and the
 * CPU does not let software read the hidden part of a segment register:
 * base, limit and access rights come from the descriptor the selector
 * names in the GDT (SDM 3A 3.4.5), converted to the VMCS access-rights
 * format (SDM 3C 25.4.1, Table "Format of Access Rights").
 */
#ifndef TV_SEGMENT_H
#define TV_SEGMENT_H

#include <stdbool.h>
#include <stdint.h>

#define SEG_AR_UNUSABLE (1u << 16)

struct seg_state {
	uint16_t selector;
	uint64_t base;
	uint32_t limit;   /* in bytes - 1, granularity applied */
	uint32_t ar;      /* VMCS access-rights format */
};

/*
 * seg_from_gdt - decode selector sel from the GDT at gdt (limit = GDTR
 * limit).  A null selector (index 0), an LDT selector (TI=1: tracevisor
 * does not follow LDTs), or one past the GDT limit gives an unusable
 * segment (AR bit 16).  System descriptors (S=0: TSS, LDT) are 16 bytes
 * in IA-32e mode and take base bits 63:32 from the second half.
 * Returns true when the segment is usable.
 */
bool seg_from_gdt(const uint8_t *gdt, uint32_t gdt_limit, uint16_t sel,
		  struct seg_state *out);

/*
 * seg_fake_tr - a usable TR for a guest whose TR is 0 (UEFI firmware):
 * a 64-bit busy TSS (type 11) at base, limit 0x67 (SDM 3C 27.3.1.2
 * requires TR usable with type 11 for an IA-32e mode guest).
 */
void seg_fake_tr(uint64_t tss_base, struct seg_state *out);

/*
 * seg_encode_descriptor - the 8-byte GDT descriptor for base/limit/ar
 * (ar in VMCS format, G applied by the caller's limit).  For building
 * tracevisor's own host GDT.
 */
uint64_t seg_encode_descriptor(uint32_t base, uint32_t limit_field, uint32_t ar);

#endif /* TV_SEGMENT_H */
