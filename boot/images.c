/* SPDX-License-Identifier: MIT */
/*
 * images.c - see images.h.
 */
#include <efi.h>
#include <efidebug.h>
#include <stdio.h>
#include <string.h>

#include "boot/efi_util.h"
#include "boot/images.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/lib/pe_debug.h"
#include "vmm/trace/ring.h"

static void *find_table(void)
{
	EFI_GUID guid = EFI_DEBUG_IMAGE_INFO_TABLE_GUID;

	for (UINTN i = 0; i < efi_st->NumberOfTableEntries; i++) {
		EFI_CONFIGURATION_TABLE *t = &efi_st->ConfigurationTable[i];

		if (!memcmp(&t->VendorGuid, &guid, sizeof(guid)))
			return t->VendorTable;
	}
	return NULL;
}

/*
 * A name from the image's device path when it has no debug path: the
 * firmware-volume file GUID (media node 4/6, how EDK2 names its drivers)
 * or a file path (4/4, UTF-16, kept as ASCII).
 */
static size_t devpath_name(const EFI_DEVICE_PATH *dp, char *buf, size_t cap)
{
	for (int guard = 0; dp && guard < 64; guard++) {
		const uint8_t *n = (const uint8_t *)dp;
		uint16_t len = (uint16_t)(n[2] | n[3] << 8);

		if (n[0] == 0x7f || len < 4)
			break;
		if (n[0] == 4 && n[1] == 6 && len >= 20) {
			const uint8_t *g = n + 4;

			return (size_t)snprintf(buf, cap,
				"FvFile(%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x)",
				g[3], g[2], g[1], g[0], g[5], g[4], g[7], g[6], g[8], g[9],
				g[10], g[11], g[12], g[13], g[14], g[15]);
		}
		if (n[0] == 4 && n[1] == 4) {
			size_t k = 0;

			for (size_t i = 4; i + 1 < len && k + 1 < cap; i += 2) {
				uint16_t ch = (uint16_t)(n[i] | n[i + 1] << 8);

				if (!ch)
					break;
				buf[k++] = ch < 0x80 && ch >= 0x20 ? (char)ch : '?';
			}
			buf[k] = 0;
			return k;
		}
		dp = (const EFI_DEVICE_PATH *)(n + len);
	}
	return 0;
}

size_t images_record(struct tv_trace_ring *const *rings, size_t n)
{
	EFI_DEBUG_IMAGE_INFO_TABLE_HEADER *hdr = find_table();
	size_t found = 0, named = 0;
	uint64_t tsc = hw_rdtsc();

	if (!hdr || !hdr->EfiDebugImageInfoTable) {
		log_info("images: the firmware publishes no debug image info table");
		return 0;
	}
	for (UINT32 i = 0; i < hdr->TableSize; i++) {
		EFI_DEBUG_IMAGE_INFO_NORMAL *e = hdr->EfiDebugImageInfoTable[i].NormalImage;
		EFI_LOADED_IMAGE_PROTOCOL *li;
		const char *path = "";
		size_t len = 0;
		char name[96];

		/* Unloaded images leave NULL slots (the table only grows). */
		if (!e || e->ImageInfoType != EFI_DEBUG_IMAGE_INFO_TYPE_NORMAL)
			continue;
		li = e->LoadedImageProtocolInstance;
		if (!li || !li->ImageBase || !li->ImageSize)
			continue;
		if (pe_codeview_path(li->ImageBase, (size_t)li->ImageSize, &path, &len) == 0) {
			named++;
		} else {
			len = devpath_name(li->FilePath, name, sizeof(name));
			if (len >= sizeof(name))
				len = sizeof(name) - 1;
			path = name;
		}
		for (size_t c = 0; c < n; c++)
			if (rings[c])
				trace_append_image(rings[c], tsc, TV_IMG_FIRMWARE,
						   (uint64_t)(uintptr_t)li->ImageBase,
						   li->ImageSize, path, len);
		found++;
	}
	log_info("images: %llu firmware images recorded (%llu with a debug path)",
		 (unsigned long long)found, (unsigned long long)named);
	return found;
}
