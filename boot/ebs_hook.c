/* SPDX-License-Identifier: MIT */
/*
 * ebs_hook.c - the ExitBootServices event, installed whenever a trace
 * source is set: it opens the window for trace_start =
 * exit_boot_services, arms the trap for kernel_entry, and (any start)
 * lets the resident copy read the ACPI tables once they are final, for
 * the power-off port (vmm/exit/exit_io.h: an OS loader may install them
 * only just before this call).
 *
 * The OS loader (Linux's EFI stub, Windows' winload) calls
 * gBS->ExitBootServices once it has the final memory map; that is the
 * moment the firmware's world ends and the OS's begins.  Before handing
 * over, tracevisor (already a guest of itself) replaces the table entry
 * by a 23-byte thunk: VMCALL TV_HC_EVENT, then a jump to the firmware's
 * function, so the loader's call goes on exactly as before (RCX, RDX and
 * the stack as the caller left them; RAX is volatile in the UEFI calling
 * convention, RBX is saved around the call).  A window the event opens
 * opens on the VMCALL's exit; its first branch is the thunk's jump into
 * the firmware.
 * The thunk lives in EfiLoaderCode, which the OS may reuse only after
 * ExitBootServices returned, when the thunk is no longer on any path.
 * UEFI 2.x, 4.4 "Boot Services Table": a changed table gets its header's
 * CRC32 recomputed (with the field 0 while computing).
 */
#include "boot/ebs_hook.h"

#include <efi.h>
#include <string.h>

#include "boot/efi_util.h"
#include "vmm/exit/hypercall.h"
#include "vmm/lib/log.h"

static const uint8_t thunk_code[] = {
	0x53,                                     /* push rbx */
	0xb8, TV_HC_EVENT, 0, 0, 0,               /* mov eax, TV_HC_EVENT */
	0xbb, TV_HC_EVENT_EXIT_BOOT_SERVICES, 0, 0, 0,  /* mov ebx, event */
	0x0f, 0x01, 0xc1,                         /* vmcall */
	0x5b,                                     /* pop rbx */
	0xff, 0x25, 0, 0, 0, 0,                   /* jmp [rip + 0]: the 8 bytes below */
};
_Static_assert(sizeof(thunk_code) == EBS_THUNK_JMP_OFFSET + 6, "thunk layout");

int ebs_hook_install(void)
{
	EFI_PHYSICAL_ADDRESS page;
	EFI_STATUS st;
	EFI_TPL tpl;
	uint8_t *p;
	uint64_t orig;
	UINT32 crc = 0;

	st = efi_bs->AllocatePages(AllocateAnyPages, EfiLoaderCode, 1, &page);
	if (EFI_ERROR(st)) {
		log_err("trace: no page for the ExitBootServices hook: %s; windows open by hypercall only",
			efi_strerror(st));
		return -1;
	}
	p = (uint8_t *)(uintptr_t)page;
	memset(p, 0xcc, 4096);   /* int3 around the thunk */
	orig = (uint64_t)(uintptr_t)efi_bs->ExitBootServices;
	memcpy(p, thunk_code, sizeof(thunk_code));
	memcpy(p + sizeof(thunk_code), &orig, sizeof(orig));

	tpl = efi_bs->RaiseTPL(TPL_HIGH_LEVEL);
	efi_bs->ExitBootServices = (EFI_EXIT_BOOT_SERVICES)(uintptr_t)page;
	efi_bs->Hdr.CRC32 = 0;
	st = efi_bs->CalculateCrc32(efi_bs, efi_bs->Hdr.HeaderSize, &crc);
	efi_bs->Hdr.CRC32 = EFI_ERROR(st) ? 0 : crc;
	efi_bs->RestoreTPL(tpl);
	log_info("trace: ExitBootServices hooked: thunk at %#llx (jump at %#llx), the firmware's at %#llx",
		 (unsigned long long)page, (unsigned long long)(page + EBS_THUNK_JMP_OFFSET),
		 (unsigned long long)orig);
	return 0;
}
