/* SPDX-License-Identifier: MIT */
/*
 * mp_services.h - EFI_MP_SERVICES_PROTOCOL (UEFI PI specification, volume
 * 2, "MP Services Protocol"); gnu-efi does not declare it.  Used by
 * tracevisor to run code on every CPU and by the test payload.
 */
#ifndef TV_MP_SERVICES_H
#define TV_MP_SERVICES_H

#include <efi.h>

#define TV_MP_SERVICES_GUID \
	{ 0x3fdda605, 0xa76e, 0x4f46, { 0xad, 0x29, 0x12, 0xf4, 0x53, 0x1b, 0x3d, 0x08 } }
struct tv_mp_services;
typedef void(EFIAPI *tv_ap_procedure)(void *arg);
struct tv_processor_info {
	UINT64 processor_id;
	UINT32 status_flag;
	UINT32 package, core, thread;
	UINT8 extended[24];       /* PI 1.7 ExtendedInformation, unused */
};
struct tv_mp_services {
	EFI_STATUS(EFIAPI *get_number_of_processors)(struct tv_mp_services *self, UINTN *n, UINTN *enabled);
	EFI_STATUS(EFIAPI *get_processor_info)(struct tv_mp_services *self, UINTN cpu,
					       struct tv_processor_info *info);
	EFI_STATUS(EFIAPI *startup_all_aps)(struct tv_mp_services *self, tv_ap_procedure proc,
					    BOOLEAN single, EFI_EVENT ev, UINTN timeout, void *arg,
					    UINTN **failed);
	EFI_STATUS(EFIAPI *startup_this_ap)(struct tv_mp_services *self, tv_ap_procedure proc,
					    UINTN cpu, EFI_EVENT ev, UINTN timeout, void *arg,
					    BOOLEAN *finished);
	EFI_STATUS(EFIAPI *switch_bsp)(struct tv_mp_services *self, UINTN cpu, BOOLEAN enable_old);
	EFI_STATUS(EFIAPI *enable_disable_ap)(struct tv_mp_services *self, UINTN cpu, BOOLEAN enable,
					      UINT32 *health);
	EFI_STATUS(EFIAPI *who_am_i)(struct tv_mp_services *self, UINTN *cpu);
};
#define PROCESSOR_AS_BSP_BIT 0x1
#define PROCESSOR_ENABLED_BIT 0x2

#endif /* TV_MP_SERVICES_H */
