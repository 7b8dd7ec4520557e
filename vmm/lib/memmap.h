/* SPDX-License-Identifier: MIT */
/*
 * memmap.h - the firmware memory map, without efi.h.
 *
 * boot/ hands over the raw buffer GetMemoryMap() filled; this module walks
 * it with the firmware's descriptor stride (UEFI 2.x section 7.2: the size
 * may grow, never shrink below the 40 bytes declared here) and checks it
 * before anything trusts it.
 */
#ifndef TV_MEMMAP_H
#define TV_MEMMAP_H

#include <stddef.h>
#include <stdint.h>

#define MM_PAGE_SIZE 4096ull

/* UEFI memory types (UEFI 2.x, EFI_MEMORY_TYPE). */
enum mm_type {
	MM_RESERVED = 0,
	MM_LOADER_CODE = 1,
	MM_LOADER_DATA = 2,
	MM_BS_CODE = 3,
	MM_BS_DATA = 4,
	MM_RT_CODE = 5,
	MM_RT_DATA = 6,
	MM_CONVENTIONAL = 7,
	MM_UNUSABLE = 8,
	MM_ACPI_RECLAIM = 9,
	MM_ACPI_NVS = 10,
	MM_MMIO = 11,
	MM_MMIO_PORT = 12,
	MM_PAL_CODE = 13,
	MM_PERSISTENT = 14,
	MM_UNACCEPTED = 15,
	MM_TYPE_COUNT = 16,
};

/* The layout of EFI_MEMORY_DESCRIPTOR (version 1). */
struct mm_efi_desc {
	uint32_t type;
	uint32_t pad;
	uint64_t phys_start;
	uint64_t virt_start;
	uint64_t pages;
	uint64_t attr;
};
_Static_assert(sizeof(struct mm_efi_desc) == 40, "EFI_MEMORY_DESCRIPTOR is 40 bytes");
_Static_assert(offsetof(struct mm_efi_desc, phys_start) == 8, "PhysicalStart at 8");
_Static_assert(offsetof(struct mm_efi_desc, pages) == 24, "NumberOfPages at 24");

struct mm_summary {
	uint32_t ndesc;
	uint64_t pages[MM_TYPE_COUNT];  /* pages per type; unknown types in [MM_RESERVED] */
	uint32_t unknown_types;         /* descriptors with a type >= MM_TYPE_COUNT */
	uint64_t os_usable_pages;       /* conventional + loader + boot services */
	uint64_t free_pages;            /* conventional only */
	uint64_t largest_free_base, largest_free_pages;
	uint64_t top_of_ram;            /* end of the highest RAM-like range */
	uint64_t top_of_all;            /* end of the highest range of any type */
};

#define MM_ERR_DESC_SIZE  (-1)  /* desc_size < 40 or not a multiple of 8 */
#define MM_ERR_MAP_SIZE   (-2)  /* map_size not a multiple of desc_size */
#define MM_ERR_ZERO_PAGES (-3)  /* a descriptor with NumberOfPages == 0 */
#define MM_ERR_UNALIGNED  (-4)  /* PhysicalStart not 4 KiB aligned */
#define MM_ERR_OVERFLOW   (-5)  /* start + pages * 4096 wraps past 2^64 */
#define MM_ERR_OVERLAP    (-6)  /* two descriptors cover the same page */

/*
 * mm_summarize - check and summarize a memory map.
 * Descriptors may come in any order (the spec does not promise sorting);
 * the overlap check sorts indices in a caller-free way (O(n^2) on the
 * small maps firmware produces, n <= a few hundred).
 * Returns 0, or one of the MM_ERR_* codes; on error *out holds what was
 * summarized so far and *bad_index the offending descriptor.
 */
int mm_summarize(const void *map, size_t map_size, size_t desc_size,
		 struct mm_summary *out, size_t *bad_index);

/* Human name of a type ("conventional", "mmio", ...). */
const char *mm_type_name(uint32_t type);
/* Text for an MM_ERR_* code. */
const char *mm_strerror(int err);

/* mm_log - the memory-map part of the banner, at info. */
void mm_log(const struct mm_summary *s);

#endif /* TV_MEMMAP_H */
