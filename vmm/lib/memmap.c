/* SPDX-License-Identifier: MIT */
/*
 * memmap.c - memory-map validation and summary.
 */
#include "vmm/lib/memmap.h"

#include <string.h>

#include "vmm/lib/log.h"

static const char *const type_names[MM_TYPE_COUNT] = {
	"reserved", "loader-code", "loader-data", "bs-code", "bs-data",
	"rt-code", "rt-data", "conventional", "unusable", "acpi-reclaim",
	"acpi-nvs", "mmio", "mmio-port", "pal-code", "persistent", "unaccepted",
};

const char *mm_type_name(uint32_t type)
{
	return type < MM_TYPE_COUNT ? type_names[type] : "unknown";
}

const char *mm_strerror(int err)
{
	switch (err) {
	case 0: return "ok";
	case MM_ERR_DESC_SIZE: return "descriptor size below 40 bytes or unaligned";
	case MM_ERR_MAP_SIZE: return "map size not a multiple of the descriptor size";
	case MM_ERR_ZERO_PAGES: return "descriptor with zero pages";
	case MM_ERR_UNALIGNED: return "descriptor start not page aligned";
	case MM_ERR_OVERFLOW: return "descriptor end wraps past 2^64";
	case MM_ERR_OVERLAP: return "descriptors overlap";
	default: return "unknown error";
	}
}

static struct mm_efi_desc desc_at(const void *map, size_t desc_size, size_t i)
{
	struct mm_efi_desc d;

	/* memcpy: the firmware's buffer need not be aligned for 64-bit loads. */
	memcpy(&d, (const uint8_t *)map + i * desc_size, sizeof(d));
	return d;
}

/* RAM the OS will see as memory (as opposed to MMIO or holes). */
static int is_ram_like(uint32_t type)
{
	switch (type) {
	case MM_LOADER_CODE: case MM_LOADER_DATA: case MM_BS_CODE: case MM_BS_DATA:
	case MM_RT_CODE: case MM_RT_DATA: case MM_CONVENTIONAL: case MM_ACPI_RECLAIM:
	case MM_ACPI_NVS: case MM_PERSISTENT: case MM_UNACCEPTED: case MM_RESERVED:
		return 1;
	default:
		return 0;
	}
}

int mm_summarize(const void *map, size_t map_size, size_t desc_size,
		 struct mm_summary *out, size_t *bad_index)
{
	size_t n;

	memset(out, 0, sizeof(*out));
	*bad_index = 0;
	if (desc_size < sizeof(struct mm_efi_desc) || (desc_size & 7))
		return MM_ERR_DESC_SIZE;
	if (map_size % desc_size)
		return MM_ERR_MAP_SIZE;
	n = map_size / desc_size;

	for (size_t i = 0; i < n; i++) {
		struct mm_efi_desc d = desc_at(map, desc_size, i);
		uint64_t end;

		*bad_index = i;
		if (d.pages == 0)
			return MM_ERR_ZERO_PAGES;
		if (d.phys_start & (MM_PAGE_SIZE - 1))
			return MM_ERR_UNALIGNED;
		/* end must be representable: start + pages * 4 KiB <= 2^64 - 4 KiB */
		if (d.pages > (UINT64_MAX - d.phys_start) / MM_PAGE_SIZE)
			return MM_ERR_OVERFLOW;
		end = d.phys_start + d.pages * MM_PAGE_SIZE;

		out->ndesc++;
		if (d.type < MM_TYPE_COUNT) {
			out->pages[d.type] += d.pages;
		} else {
			out->unknown_types++;
			out->pages[MM_RESERVED] += d.pages;
		}
		switch (d.type) {
		case MM_CONVENTIONAL:
			out->free_pages += d.pages;
			if (d.pages > out->largest_free_pages) {
				out->largest_free_pages = d.pages;
				out->largest_free_base = d.phys_start;
			}
			/* fall through */
		case MM_LOADER_CODE: case MM_LOADER_DATA: case MM_BS_CODE: case MM_BS_DATA:
			out->os_usable_pages += d.pages;
			break;
		default:
			break;
		}
		if (d.type < MM_TYPE_COUNT && is_ram_like(d.type) && d.type != MM_RESERVED &&
		    end > out->top_of_ram)
			out->top_of_ram = end;
		if (end > out->top_of_all)
			out->top_of_all = end;

		for (size_t j = 0; j < i; j++) {
			struct mm_efi_desc e = desc_at(map, desc_size, j);
			uint64_t e_end = e.phys_start + e.pages * MM_PAGE_SIZE;

			if (d.phys_start < e_end && e.phys_start < end)
				return MM_ERR_OVERLAP;
		}
	}
	return 0;
}

void mm_log(const struct mm_summary *s)
{
	log_info("memory: %u descriptors, %llu MiB usable by the OS (%llu MiB free), RAM top %#llx, highest address %#llx",
		 s->ndesc, (unsigned long long)(s->os_usable_pages >> 8),
		 (unsigned long long)(s->free_pages >> 8),
		 (unsigned long long)s->top_of_ram, (unsigned long long)s->top_of_all);
	log_info("memory: largest free range %#llx + %llu MiB",
		 (unsigned long long)s->largest_free_base,
		 (unsigned long long)(s->largest_free_pages >> 8));
	for (uint32_t t = 0; t < MM_TYPE_COUNT; t++)
		if (s->pages[t])
			log_debug("memory:   %-13s %8llu pages (%llu KiB)", mm_type_name(t),
				  (unsigned long long)s->pages[t],
				  (unsigned long long)(s->pages[t] * 4));
	if (s->unknown_types)
		log_warn("memory: %u descriptors of unknown type counted as reserved",
			 s->unknown_types);
}
