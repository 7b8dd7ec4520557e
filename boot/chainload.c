/* SPDX-License-Identifier: MIT */
/*
 * chainload.c - hand the machine on to what would have booted without us.
 *
 * With `loader=` set, that file on our own volume.  Otherwise the boot
 * options after BootCurrent in BootOrder, tried in order the way the
 * firmware's boot manager would (UEFI 2.x 3.1): inactive, hidden and
 * application-category options are skipped, short-form paths (a bare
 * device, or one starting at a HD() node) are expanded to the removable
 * media default \EFI\BOOT\BOOTX64.EFI, and an option that resolves to
 * tracevisor itself is never started.
 */
#include "boot/chainload.h"

#include <stdio.h>
#include <string.h>

#include "boot/efi_util.h"
#include "boot/load_option.h"
#include "vmm/lib/log.h"

#define DEFAULT_REMOVABLE_PATH "\\EFI\\BOOT\\BOOTX64.EFI"
#define MAX_BOOT_OPTIONS 128

static BOOLEAN is_self(EFI_HANDLE image)
{
	EFI_LOADED_IMAGE_PROTOCOL *li;
	UINTN a, b;

	if (EFI_ERROR(efi_bs->HandleProtocol(image, &efi_guid_loaded_image, (void **)&li)))
		return FALSE;
	if (li->DeviceHandle != efi_self->DeviceHandle || !li->FilePath || !efi_self->FilePath)
		return FALSE;
	a = efi_devpath_size(li->FilePath);
	b = efi_devpath_size(efi_self->FilePath);
	return a == b && memcmp(li->FilePath, efi_self->FilePath, a) == 0;
}

/* Load dp; on success check it is not ourselves.  *image is set on success. */
static EFI_STATUS try_load(EFI_DEVICE_PATH *dp, BOOLEAN boot_policy, EFI_HANDLE *image)
{
	EFI_STATUS st;

	*image = NULL;
	st = efi_bs->LoadImage(boot_policy, efi_image, dp, NULL, 0, image);
	if (EFI_ERROR(st))
		return st;
	if (is_self(*image)) {
		efi_bs->UnloadImage(*image);
		*image = NULL;
		return EFI_ALREADY_STARTED;
	}
	return EFI_SUCCESS;
}

/*
 * Expand a short-form path: try every file system whose device path either
 * starts with dp (a whole-device option) or contains dp's leading HD()
 * node, with the rest of dp or the removable-media default appended.
 */
static EFI_STATUS load_expanded(EFI_DEVICE_PATH *dp, EFI_HANDLE *image)
{
	EFI_HANDLE *handles = NULL;
	UINTN count = 0;
	EFI_STATUS st, last = EFI_NOT_FOUND;
	EFI_DEVICE_PATH *deflt = efi_devpath_file(DEFAULT_REMOVABLE_PATH);
	BOOLEAN hd_short = dp->Type == MEDIA_DEVICE_PATH && dp->SubType == MEDIA_HARDDRIVE_DP;
	UINTN hd_len = (UINTN)dp->Length[0] | ((UINTN)dp->Length[1] << 8);

	if (!deflt)
		return EFI_OUT_OF_RESOURCES;
	st = efi_bs->LocateHandleBuffer(ByProtocol, &efi_guid_simple_fs, NULL, &count, &handles);
	if (EFI_ERROR(st)) {
		efi_bs->FreePool(deflt);
		return st;
	}
	for (UINTN i = 0; i < count; i++) {
		EFI_DEVICE_PATH *fsdp, *full = NULL;
		const EFI_DEVICE_PATH *rest = NULL;

		if (EFI_ERROR(efi_bs->HandleProtocol(handles[i], &efi_guid_device_path, (void **)&fsdp)))
			continue;
		if (hd_short) {
			/* Find dp's HD() node (same partition, signature) in fsdp. */
			const UINT8 *p = (const UINT8 *)fsdp;
			UINTN total = efi_devpath_size(fsdp);

			for (UINTN off = 0; off + 4 <= total;) {
				const EFI_DEVICE_PATH *nd = (const EFI_DEVICE_PATH *)(p + off);
				UINTN nl = (UINTN)nd->Length[0] | ((UINTN)nd->Length[1] << 8);

				if (nl < 4 || nd->Type == END_DEVICE_PATH_TYPE)
					break;
				if (nl == hd_len && memcmp(nd, dp, hd_len) == 0 &&
				    off + nl == total - END_DEVICE_PATH_LENGTH) {
					rest = (const EFI_DEVICE_PATH *)((const UINT8 *)dp + hd_len);
					break;
				}
				off += nl;
			}
			if (!rest)
				continue;
		} else if (efi_devpath_is_prefix(dp, fsdp)) {
			rest = NULL;
		} else {
			continue;
		}
		if (rest && !(rest->Type == END_DEVICE_PATH_TYPE))
			full = efi_devpath_append(fsdp, rest);
		else
			full = efi_devpath_append(fsdp, deflt);
		if (!full)
			continue;
		st = try_load(full, FALSE, image);
		efi_bs->FreePool(full);
		if (!EFI_ERROR(st))
			break;
		last = st;
	}
	if (handles)
		efi_bs->FreePool(handles);
	efi_bs->FreePool(deflt);
	return *image ? EFI_SUCCESS : last;
}

static EFI_STATUS start(EFI_HANDLE image, const char *what, const void *opts, UINTN opts_len)
{
	EFI_LOADED_IMAGE_PROTOCOL *li;
	EFI_STATUS st;
	UINTN exit_size = 0;
	CHAR16 *exit_data = NULL;
	char path[160];

	if (!EFI_ERROR(efi_bs->HandleProtocol(image, &efi_guid_loaded_image, (void **)&li))) {
		if (opts && opts_len) {
			li->LoadOptions = (void *)opts;
			li->LoadOptionsSize = (UINT32)opts_len;
		}
		efi_devpath_text(li->FilePath, path, sizeof(path));
		log_info("chainload: starting %s (%s) at %#llx (%llu bytes), handing over", what, path,
			 (unsigned long long)(uintptr_t)li->ImageBase, (unsigned long long)li->ImageSize);
	}
	st = efi_bs->StartImage(image, &exit_size, &exit_data);
	if (exit_data) {
		char msg[120];

		efi_ucs2_to_ascii(msg, sizeof(msg), exit_data, exit_size / sizeof(CHAR16));
		log_warn("chainload: %s said: %s", what, msg);
		efi_bs->FreePool(exit_data);
	}
	log_warn("chainload: %s returned %s", what, efi_strerror(st));
	return st;
}

static EFI_STATUS chainload_path(const char *path)
{
	EFI_DEVICE_PATH *own, *file, *full;
	EFI_HANDLE image;
	EFI_STATUS st;

	st = efi_bs->HandleProtocol(efi_self->DeviceHandle, &efi_guid_device_path, (void **)&own);
	if (EFI_ERROR(st)) {
		log_err("chainload: own volume has no device path: %s", efi_strerror(st));
		return st;
	}
	file = efi_devpath_file(path);
	if (!file)
		return EFI_OUT_OF_RESOURCES;
	full = efi_devpath_append(own, file);
	efi_bs->FreePool(file);
	if (!full)
		return EFI_OUT_OF_RESOURCES;
	st = try_load(full, FALSE, &image);
	efi_bs->FreePool(full);
	if (st == EFI_ALREADY_STARTED) {
		log_err("chainload: loader=%s is tracevisor itself", path);
		return EFI_INVALID_PARAMETER;
	}
	if (EFI_ERROR(st)) {
		log_err("chainload: cannot load loader=%s from tracevisor's volume: %s",
			path, efi_strerror(st));
		return st;
	}
	return start(image, path, NULL, 0);
}

static EFI_STATUS chainload_boot_order(void)
{
	uint16_t *order = NULL, cand[MAX_BOOT_OPTIONS];
	uint16_t *current = NULL;
	UINTN order_size = 0, cur_size = 0;
	size_t ncand;
	EFI_STATUS st, result = EFI_NOT_FOUND;

	st = efi_get_variable(L"BootOrder", &efi_guid_global_variable, (void **)&order, &order_size);
	if (EFI_ERROR(st)) {
		log_err("chainload: no BootOrder variable (%s): nothing to boot after tracevisor; set loader= in tracevisor.conf",
			efi_strerror(st));
		return st;
	}
	if (EFI_ERROR(efi_get_variable(L"BootCurrent", &efi_guid_global_variable,
				       (void **)&current, &cur_size)) || cur_size != 2) {
		log_warn("chainload: BootCurrent not set; trying every BootOrder entry");
		if (current)
			efi_bs->FreePool(current);
		current = NULL;
	}
	ncand = boot_order_next(order, order_size / 2 > MAX_BOOT_OPTIONS ? MAX_BOOT_OPTIONS : order_size / 2,
				current != NULL, current ? *current : 0, cand);
	log_info("chainload: BootCurrent=%s%04X, %zu BootOrder entries after it",
		 current ? "Boot" : "(none)", current ? *current : 0, ncand);

	for (size_t i = 0; i < ncand; i++) {
		CHAR16 name[16];
		char aname[16];
		uint8_t *var = NULL;
		UINTN var_size = 0;
		struct load_option opt;
		EFI_HANDLE image = NULL;
		EFI_DEVICE_PATH *dp;
		char text[160];
		int rc;

		snprintf(aname, sizeof(aname), "Boot%04X", cand[i]);
		efi_ascii_to_ucs2(name, 16, aname);
		st = efi_get_variable(name, &efi_guid_global_variable, (void **)&var, &var_size);
		if (EFI_ERROR(st)) {
			log_warn("chainload: %s unreadable: %s", aname, efi_strerror(st));
			continue;
		}
		rc = load_option_parse(var, var_size, &opt);
		if (rc) {
			log_warn("chainload: %s malformed (error %d), skipped", aname, rc);
			efi_bs->FreePool(var);
			continue;
		}
		if (!load_option_bootable(opt.attributes)) {
			log_info("chainload: %s \"%s\" skipped (attributes %#x: inactive, hidden or an application)",
				 aname, opt.description, opt.attributes);
			efi_bs->FreePool(var);
			continue;
		}
		dp = (EFI_DEVICE_PATH *)opt.file_path;
		efi_devpath_text(dp, text, sizeof(text));
		log_info("chainload: trying %s \"%s\" %s", aname, opt.description, text);
		st = try_load(dp, TRUE, &image);
		if (EFI_ERROR(st) && st != EFI_ALREADY_STARTED)
			st = load_expanded(dp, &image);
		if (st == EFI_ALREADY_STARTED) {
			log_info("chainload: %s is tracevisor itself, skipped", aname);
		} else if (EFI_ERROR(st)) {
			log_warn("chainload: %s cannot be loaded: %s", aname, efi_strerror(st));
		} else {
			char what[100];

			snprintf(what, sizeof(what), "%s \"%s\"", aname, opt.description);
			/* BDS passes OptionalData as LoadOptions: so do we (UEFI 3.1.3). */
			result = start(image, what, opt.optional_data, opt.optional_data_len);
			efi_bs->FreePool(var);
			goto out;
		}
		efi_bs->FreePool(var);
	}
	log_err("chainload: no boot option after tracevisor could be started");
out:
	efi_bs->FreePool(order);
	if (current)
		efi_bs->FreePool(current);
	return result;
}

EFI_STATUS chainload(const struct tv_config *cfg)
{
	if (cfg->loader[0])
		return chainload_path(cfg->loader);
	return chainload_boot_order();
}
