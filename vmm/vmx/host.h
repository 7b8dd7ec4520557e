/* SPDX-License-Identifier: MIT */
/*
 * host.h - the world tracevisor runs in after a VM exit: its own page
 * tables, GDT, TSS and IDT, all in reserved memory, so nothing the
 * firmware frees or the OS rewrites is ever used in VMX root.
 */
#ifndef TV_HOST_H
#define TV_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/lib/page_pool.h"

/*
 * host_build_page_tables - an identity map of [0, top) (top rounded up to
 * 1 GiB), write-back by PAT index 0 with the MTRRs deciding MMIO types,
 * using 1 GiB pages when gb_pages (CPUID.80000001H:EDX[26]) else 2 MiB.
 * Returns the CR3 value, or 0 when the pool ran out.
 */
uint64_t host_build_page_tables(struct page_pool *pool, uint64_t top, bool gb_pages);

/*
 * host_build_gdt - this CPU's GDT (null, 64-bit code 0x08, data 0x10,
 * 64-bit TSS HOST_SEL_TSS over tss) into gdt (HOST_GDT_BYTES).
 */
void host_build_gdt(uint8_t *gdt, uint64_t tss_base);

/*
 * host_build_idt - 256 interrupt gates (16 bytes each) for code selector
 * 0x08: vectors below stub_count go to stub_base + 16 * vector, the rest
 * to the stub of vector 13 (any unexpected interrupt is a fault in VMX
 * root: maskable interrupts stay off there).
 */
void host_build_idt(uint8_t *idt, uint64_t stub_base, uint32_t stub_count);

#endif /* TV_HOST_H */
