/* SPDX-License-Identifier: MIT */
/*
 * guest_efi.h - the UEFI frame shared by the bench's guest programs that
 * OVMF starts directly (tests/payload/pttest.c, btstest.c, pmctest.c,
 * archlbrtest.c): efi_main's prototype, zeroed boot-services pages, and
 * the end (EFI shutdown, else Bochs's shutdown port).  Each program
 * includes it once.
 */
#ifndef TV_GUEST_EFI_H
#define TV_GUEST_EFI_H

#include <efi.h>
#include <stdint.h>

#include "vmm/hw/hw.h"

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab);

/* n pages of boot-services memory (physical = virtual under OVMF's
 * identity map), zeroed, at *pages.  0, or 1 when there are none. */
static inline int guest_alloc_pages(EFI_SYSTEM_TABLE *systab, UINTN n, EFI_PHYSICAL_ADDRESS *pages)
{
	*pages = 0;
	if (systab->BootServices->AllocatePages(AllocateAnyPages, EfiLoaderData, n, pages) != EFI_SUCCESS)
		return 1;
	for (uint64_t i = 0; i < n * 4096 / 8; i++)
		((uint64_t *)(uintptr_t)*pages)[i] = 0;
	return 0;
}

/* The end of the program: EFI ResetSystem (shutdown); should it come
 * back, Bochs's shutdown port (0x8900), then halt for good. */
static inline __attribute__((noreturn)) void guest_shutdown(EFI_SYSTEM_TABLE *systab)
{
	systab->RuntimeServices->ResetSystem(EfiResetShutdown, EFI_SUCCESS, 0, NULL);
	for (const char *s = "Shutdown"; *s; s++)
		hw_outb(0x8900, (uint8_t)*s);
	for (;;)
		hw_halt();
}

#endif /* TV_GUEST_EFI_H */
