/* SPDX-License-Identifier: MIT */
/*
 * efi_util.h - the little of UEFI that tracevisor uses, without libefi.
 *
 * gnu-efi's libefi.a is not linked: it uses SSE (Print, string helpers)
 * and would bring xmm state into code that later runs in VMX root.  Only
 * its headers and libgnuefi.a's self-relocation are used.
 */
#ifndef TV_EFI_UTIL_H
#define TV_EFI_UTIL_H

#include <efi.h>
#include <stddef.h>

extern EFI_HANDLE efi_image;
extern EFI_SYSTEM_TABLE *efi_st;
extern EFI_BOOT_SERVICES *efi_bs;
extern EFI_LOADED_IMAGE_PROTOCOL *efi_self;   /* our own loaded image */

extern EFI_GUID efi_guid_loaded_image;
extern EFI_GUID efi_guid_device_path;
extern EFI_GUID efi_guid_simple_fs;
extern EFI_GUID efi_guid_block_io;
extern EFI_GUID efi_guid_global_variable;
extern EFI_GUID efi_guid_devpath_to_text;

/* efi_util_init - record the image handle and tables; look up our image. */
EFI_STATUS efi_util_init(EFI_HANDLE image, EFI_SYSTEM_TABLE *st);

/* Text for an EFI_STATUS ("EFI_NOT_FOUND"), or "EFI status 0x..." */
const char *efi_strerror(EFI_STATUS st);

/* log_sink_fn writing to ConOut (ctx unused), ASCII to UCS-2, "\n" as CRLF. */
void efi_console_sink(void *ctx, const char *text, size_t len);

/*
 * efi_read_file - read path (ASCII, '\' separated) from the volume on
 * device into a pool buffer of at most max bytes, NUL-appended.  Returns
 * EFI_SUCCESS, EFI_NOT_FOUND when the file is absent, EFI_BAD_BUFFER_SIZE
 * when it is larger than max, or the firmware's error.
 */
EFI_STATUS efi_read_file(EFI_HANDLE device, const char *path, char **buf,
			 UINTN *len, UINTN max);

/* efi_get_variable - read a variable into a pool buffer (caller frees). */
EFI_STATUS efi_get_variable(const CHAR16 *name, EFI_GUID *guid, void **buf,
			    UINTN *size);

/* Device-path helpers.  Sizes include the end node. */
UINTN efi_devpath_size(const EFI_DEVICE_PATH *dp);
/* Concatenate a (without its end node) and b; pool-allocated. */
EFI_DEVICE_PATH *efi_devpath_append(const EFI_DEVICE_PATH *a, const EFI_DEVICE_PATH *b);
/* A one-node MEDIA file path for an ASCII path, plus end node; pool-allocated. */
EFI_DEVICE_PATH *efi_devpath_file(const char *path);
/* True if every node of prefix (minus its end) starts path. */
BOOLEAN efi_devpath_is_prefix(const EFI_DEVICE_PATH *prefix, const EFI_DEVICE_PATH *path);
/* Render a device path as ASCII into buf (firmware's DevicePathToText when present). */
void efi_devpath_text(const EFI_DEVICE_PATH *dp, char *buf, size_t len);

/* ASCII <-> UCS-2 (non-ASCII becomes '?'). */
void efi_ascii_to_ucs2(CHAR16 *dst, size_t cap, const char *src);
void efi_ucs2_to_ascii(char *dst, size_t cap, const CHAR16 *src, size_t max_chars);

#endif /* TV_EFI_UTIL_H */
