/* SPDX-License-Identifier: MIT */
/*
 * efi_images.h - the images the firmware has loaded, from the EFI debug
 * image info table (UEFI 2.10 18.4 "EFI Debug Support Table": the
 * configuration table entry EFI_DEBUG_IMAGE_INFO_TABLE_GUID points at a
 * header {UpdateStatus, TableSize, EfiDebugImageInfoTable}; each slot of
 * that array points at an EFI_DEBUG_IMAGE_INFO_NORMAL {ImageInfoType,
 * LoadedImageProtocolInstance, ImageHandle}, NULL for an unloaded image;
 * 9.1 EFI_LOADED_IMAGE_PROTOCOL gives FilePath, ImageBase and ImageSize).
 *
 * One walk, two users: boot/images.c at boot (memory read where it lies,
 * efi_img_read_direct) and vmm/trace/images.c in VMX root at the OS
 * loader's ExitBootServices (guest-physical reads through the engine's
 * reader; firmware memory is identity-mapped, so every pointer in these
 * structures is a guest-physical address).  The second time the memory
 * is the guest's: nothing read is trusted.  Every read goes through
 * rd->read_phys (never across a 4 KiB boundary, never a wrapping range);
 * every count is bounded (the constants below); an unreadable slot or
 * structure is skipped and counted, never followed further.  The name of
 * an image is its CodeView debug path (vmm/lib/pe_debug.h), parsed from
 * bytes copied through the reader (the headers, up to EFI_IMG_DEBUG_ENTRIES
 * debug directory entries, one record), else the name in its device path
 * (a firmware-volume file GUID "FvFile(...)" or the first file path node,
 * UTF-16 kept as ASCII), else empty.  A debug path longer than
 * EFI_IMG_NAME_MAX falls back to the device path.
 *
 * Pure code: no allocation, no globals; the stack holds one struct efi_img
 * and one header copy (about 2 KiB).
 */
#ifndef TV_LIB_EFI_IMAGES_H
#define TV_LIB_EFI_IMAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/lib/guest_mem.h"

#define EFI_IMG_ERR_ARG       (-1)   /* NULL reader or callback, system table 0 */
#define EFI_IMG_ERR_NO_TABLE  (-2)   /* no system table signature, no debug
                                        image info table, or its header unreadable */

/* Bounds against a table that is corrupt or hostile. */
#define EFI_IMG_CONFIG_MAX    1024u          /* configuration table entries looked at */
#define EFI_IMG_TABLE_MAX     4096u          /* debug image info slots looked at */
#define EFI_IMG_SIZE_MAX      (1ull << 30)   /* a larger ImageSize is not believed */
#define EFI_IMG_NAME_MAX      511u           /* bytes of a name (NUL not counted) */
#define EFI_IMG_HDR_BYTES     1024u          /* of the PE headers copied */
#define EFI_IMG_DEBUG_ENTRIES 16u            /* debug directory entries looked at */
#define EFI_IMG_DEVPATH_NODES 64u            /* device path nodes looked at */

/* How the walk reads memory: vmm/lib/guest_mem.h's reader and its opaque. */
struct efi_img_reader {
	gmem_read_phys_fn read_phys;
	void *opaque;
};

/* One image as the callback sees it; name is NUL terminated. */
struct efi_img {
	uint64_t base;           /* ImageBase */
	uint64_t size;           /* ImageSize, in (0, EFI_IMG_SIZE_MAX] */
	uint32_t slot;           /* index in the table */
	bool debug_path;         /* name is the CodeView path */
	size_t name_len;         /* <= EFI_IMG_NAME_MAX; 0: no name */
	char name[EFI_IMG_NAME_MAX + 1];
};

/* What a walk saw. */
struct efi_img_stats {
	uint32_t table_size;     /* TableSize as read */
	uint32_t slots;          /* slots looked at: min(TableSize, EFI_IMG_TABLE_MAX) */
	uint32_t images;         /* handed to the callback */
	uint32_t named;          /* of those, with a CodeView path */
	uint32_t empty;          /* NULL slots (unloaded images) */
	uint32_t skipped;        /* unreadable slot, entry or protocol; not NORMAL;
	                            ImageBase or ImageSize 0; size over the bound; wrapping */
	bool truncated;          /* TableSize > EFI_IMG_TABLE_MAX */
	bool updating;           /* UpdateStatus had EFI_DEBUG_IMAGE_INFO_UPDATE_IN_PROGRESS */
};

/* Called once per image; a nonzero return ends the walk (returned by it). */
typedef int (*efi_img_fn)(void *ctx, const struct efi_img *img);

/*
 * efi_images_walk - find the debug image info table through the EFI
 * system table at st_pa (its signature, NumberOfTableEntries and
 * ConfigurationTable; UEFI 2.10 4.3, 4.6) and call fn for every loaded
 * image in slot order.  stats (may be NULL) is zeroed first.
 * Returns 0, fn's nonzero return, EFI_IMG_ERR_ARG or EFI_IMG_ERR_NO_TABLE.
 */
int efi_images_walk(const struct efi_img_reader *rd, uint64_t st_pa, efi_img_fn fn, void *ctx,
		    struct efi_img_stats *stats);

/* efi_img_read_direct - a reader for memory mapped where it lies (boot): memcpy. */
int efi_img_read_direct(void *opaque, uint64_t pa, void *buf, size_t len);

/*
 * A bounded set of images by (base, size): those seen at boot, so that a
 * later walk can tell the images loaded since.  Linear: a few hundred.
 */
#define EFI_IMG_SEEN_MAX 512u

struct efi_img_seen {
	uint32_t n;
	uint32_t refused;        /* adds past EFI_IMG_SEEN_MAX */
	struct {
		uint64_t base, size;
	} v[EFI_IMG_SEEN_MAX];
};

bool efi_img_seen_has(const struct efi_img_seen *s, uint64_t base, uint64_t size);

/* efi_img_seen_add - 0 added, 1 already there, -1 full (counted in refused). */
int efi_img_seen_add(struct efi_img_seen *s, uint64_t base, uint64_t size);

#endif /* TV_LIB_EFI_IMAGES_H */
