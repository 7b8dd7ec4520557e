/* SPDX-License-Identifier: MIT */
/*
 * efi_util.c - console, files, variables and device paths over raw UEFI.
 */
#include "boot/efi_util.h"

#include <stdio.h>
#include <string.h>

EFI_HANDLE efi_image;
EFI_SYSTEM_TABLE *efi_st;
EFI_BOOT_SERVICES *efi_bs;
EFI_LOADED_IMAGE_PROTOCOL *efi_self;

EFI_GUID efi_guid_loaded_image = EFI_LOADED_IMAGE_PROTOCOL_GUID;
EFI_GUID efi_guid_device_path = EFI_DEVICE_PATH_PROTOCOL_GUID;
EFI_GUID efi_guid_simple_fs = EFI_SIMPLE_FILE_SYSTEM_PROTOCOL_GUID;
EFI_GUID efi_guid_block_io = EFI_BLOCK_IO_PROTOCOL_GUID;
EFI_GUID efi_guid_global_variable = EFI_GLOBAL_VARIABLE;
EFI_GUID efi_guid_devpath_to_text = EFI_DEVICE_PATH_TO_TEXT_PROTOCOL_GUID;

EFI_STATUS efi_util_init(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	efi_image = image;
	efi_st = st;
	efi_bs = st->BootServices;
	return efi_bs->HandleProtocol(image, &efi_guid_loaded_image, (void **)&efi_self);
}

const char *efi_strerror(EFI_STATUS st)
{
	static char other[32];

	switch (st) {
	case EFI_SUCCESS: return "EFI_SUCCESS";
	case EFI_LOAD_ERROR: return "EFI_LOAD_ERROR";
	case EFI_INVALID_PARAMETER: return "EFI_INVALID_PARAMETER";
	case EFI_UNSUPPORTED: return "EFI_UNSUPPORTED";
	case EFI_BAD_BUFFER_SIZE: return "EFI_BAD_BUFFER_SIZE";
	case EFI_BUFFER_TOO_SMALL: return "EFI_BUFFER_TOO_SMALL";
	case EFI_NOT_READY: return "EFI_NOT_READY";
	case EFI_DEVICE_ERROR: return "EFI_DEVICE_ERROR";
	case EFI_WRITE_PROTECTED: return "EFI_WRITE_PROTECTED";
	case EFI_OUT_OF_RESOURCES: return "EFI_OUT_OF_RESOURCES";
	case EFI_VOLUME_CORRUPTED: return "EFI_VOLUME_CORRUPTED";
	case EFI_NO_MEDIA: return "EFI_NO_MEDIA";
	case EFI_NOT_FOUND: return "EFI_NOT_FOUND";
	case EFI_ACCESS_DENIED: return "EFI_ACCESS_DENIED";
	case EFI_SECURITY_VIOLATION: return "EFI_SECURITY_VIOLATION";
	case EFI_ABORTED: return "EFI_ABORTED";
	default:
		snprintf(other, sizeof(other), "EFI status %#llx", (unsigned long long)st);
		return other;
	}
}

void efi_ascii_to_ucs2(CHAR16 *dst, size_t cap, const char *src)
{
	size_t i = 0;

	if (!cap)
		return;
	for (; src[i] && i + 1 < cap; i++)
		dst[i] = (uint8_t)src[i] < 0x80 ? (CHAR16)src[i] : '?';
	dst[i] = 0;
}

void efi_ucs2_to_ascii(char *dst, size_t cap, const CHAR16 *src, size_t max_chars)
{
	size_t i = 0;

	if (!cap)
		return;
	for (; i < max_chars && src[i] && i + 1 < cap; i++)
		dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? (char)src[i] : '?';
	dst[i] = '\0';
}

void efi_console_sink(void *ctx, const char *text, size_t len)
{
	CHAR16 buf[130];
	size_t n = 0;

	(void)ctx;
	if (!efi_st || !efi_st->ConOut)
		return;
	for (size_t i = 0; i < len; i++) {
		if (n + 3 >= sizeof(buf) / sizeof(buf[0])) {
			buf[n] = 0;
			efi_st->ConOut->OutputString(efi_st->ConOut, buf);
			n = 0;
		}
		if (text[i] == '\n')
			buf[n++] = '\r';
		buf[n++] = (uint8_t)text[i] < 0x80 ? (CHAR16)text[i] : '?';
	}
	buf[n] = 0;
	if (n)
		efi_st->ConOut->OutputString(efi_st->ConOut, buf);
}

EFI_STATUS efi_get_variable(const CHAR16 *name, EFI_GUID *guid, void **buf, UINTN *size)
{
	EFI_RUNTIME_SERVICES *rt = efi_st->RuntimeServices;
	EFI_STATUS st;
	UINTN sz = 0;

	*buf = NULL;
	st = rt->GetVariable((CHAR16 *)name, guid, NULL, &sz, NULL);
	if (st != EFI_BUFFER_TOO_SMALL)
		return st == EFI_SUCCESS ? EFI_NOT_FOUND : st;
	st = efi_bs->AllocatePool(EfiLoaderData, sz, buf);
	if (EFI_ERROR(st))
		return st;
	st = rt->GetVariable((CHAR16 *)name, guid, NULL, &sz, *buf);
	if (EFI_ERROR(st)) {
		efi_bs->FreePool(*buf);
		*buf = NULL;
		return st;
	}
	*size = sz;
	return EFI_SUCCESS;
}

EFI_STATUS efi_read_file(EFI_HANDLE device, const char *path, char **buf,
			 UINTN *len, UINTN max)
{
	EFI_SIMPLE_FILE_SYSTEM_PROTOCOL *fs;
	EFI_FILE_HANDLE root = NULL, file = NULL;
	CHAR16 wpath[260];
	EFI_STATUS st;
	UINTN got;

	*buf = NULL;
	*len = 0;
	if (strlen(path) >= sizeof(wpath) / sizeof(wpath[0]))
		return EFI_INVALID_PARAMETER;
	st = efi_bs->HandleProtocol(device, &efi_guid_simple_fs, (void **)&fs);
	if (EFI_ERROR(st))
		return st;
	st = fs->OpenVolume(fs, &root);
	if (EFI_ERROR(st))
		return st;
	efi_ascii_to_ucs2(wpath, sizeof(wpath) / sizeof(wpath[0]), path);
	st = root->Open(root, &file, wpath, EFI_FILE_MODE_READ, 0);
	if (EFI_ERROR(st))
		goto out;
	st = efi_bs->AllocatePool(EfiLoaderData, max + 1, (void **)buf);
	if (EFI_ERROR(st))
		goto out;
	/* Read one byte more than allowed to tell "exactly max" from "larger". */
	got = max + 1;
	st = file->Read(file, &got, *buf);
	if (EFI_ERROR(st))
		goto out;
	if (got > max) {
		st = EFI_BAD_BUFFER_SIZE;
		goto out;
	}
	(*buf)[got] = '\0';
	*len = got;
out:
	if (EFI_ERROR(st) && *buf) {
		efi_bs->FreePool(*buf);
		*buf = NULL;
	}
	if (file)
		file->Close(file);
	root->Close(root);
	return st;
}

/* --- device paths --------------------------------------------------------- */

static UINTN node_len(const EFI_DEVICE_PATH *n)
{
	return (UINTN)n->Length[0] | ((UINTN)n->Length[1] << 8);
}

static BOOLEAN node_is_end(const EFI_DEVICE_PATH *n)
{
	return n->Type == END_DEVICE_PATH_TYPE && n->SubType == END_ENTIRE_DEVICE_PATH_SUBTYPE;
}

static const EFI_DEVICE_PATH *node_next(const EFI_DEVICE_PATH *n)
{
	return (const EFI_DEVICE_PATH *)((const UINT8 *)n + node_len(n));
}

UINTN efi_devpath_size(const EFI_DEVICE_PATH *dp)
{
	const EFI_DEVICE_PATH *n = dp;

	/* A node shorter than its own header would loop forever: stop there. */
	while (!node_is_end(n) && node_len(n) >= 4)
		n = node_next(n);
	return (UINTN)((const UINT8 *)n - (const UINT8 *)dp) + END_DEVICE_PATH_LENGTH;
}

EFI_DEVICE_PATH *efi_devpath_append(const EFI_DEVICE_PATH *a, const EFI_DEVICE_PATH *b)
{
	UINTN la = efi_devpath_size(a) - END_DEVICE_PATH_LENGTH;
	UINTN lb = efi_devpath_size(b);
	UINT8 *p;

	if (EFI_ERROR(efi_bs->AllocatePool(EfiLoaderData, la + lb, (void **)&p)))
		return NULL;
	memcpy(p, a, la);
	memcpy(p + la, b, lb);
	return (EFI_DEVICE_PATH *)p;
}

EFI_DEVICE_PATH *efi_devpath_file(const char *path)
{
	UINTN chars = strlen(path) + 1;
	UINTN flen = 4 + chars * sizeof(CHAR16);
	UINT8 *p;
	EFI_DEVICE_PATH *end;

	if (flen > 0xffff)
		return NULL;
	if (EFI_ERROR(efi_bs->AllocatePool(EfiLoaderData, flen + END_DEVICE_PATH_LENGTH, (void **)&p)))
		return NULL;
	p[0] = MEDIA_DEVICE_PATH;
	p[1] = MEDIA_FILEPATH_DP;
	p[2] = (UINT8)(flen & 0xff);
	p[3] = (UINT8)(flen >> 8);
	for (UINTN i = 0; i < chars; i++) {
		CHAR16 c = (CHAR16)(uint8_t)path[i];

		memcpy(p + 4 + i * 2, &c, 2);
	}
	end = (EFI_DEVICE_PATH *)(p + flen);
	end->Type = END_DEVICE_PATH_TYPE;
	end->SubType = END_ENTIRE_DEVICE_PATH_SUBTYPE;
	end->Length[0] = END_DEVICE_PATH_LENGTH;
	end->Length[1] = 0;
	return (EFI_DEVICE_PATH *)p;
}

BOOLEAN efi_devpath_is_prefix(const EFI_DEVICE_PATH *prefix, const EFI_DEVICE_PATH *path)
{
	UINTN lp = efi_devpath_size(prefix) - END_DEVICE_PATH_LENGTH;
	UINTN lq = efi_devpath_size(path) - END_DEVICE_PATH_LENGTH;

	return lp <= lq && memcmp(prefix, path, lp) == 0;
}

void efi_devpath_text(const EFI_DEVICE_PATH *dp, char *buf, size_t len)
{
	EFI_DEVICE_PATH_TO_TEXT_PROTOCOL *tt;
	CHAR16 *text;

	if (!len)
		return;
	if (!dp) {
		snprintf(buf, len, "(none)");
		return;
	}
	if (!EFI_ERROR(efi_bs->LocateProtocol(&efi_guid_devpath_to_text, NULL, (void **)&tt))) {
		text = tt->ConvertDevicePathToText((EFI_DEVICE_PATH *)dp, FALSE, FALSE);
		if (text) {
			efi_ucs2_to_ascii(buf, len, text, len);
			efi_bs->FreePool(text);
			return;
		}
	}
	snprintf(buf, len, "(device path, %llu bytes)",
		 (unsigned long long)efi_devpath_size(dp));
}
