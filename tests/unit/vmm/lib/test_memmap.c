/* SPDX-License-Identifier: MIT */
/*
 * test_memmap.c - memory-map validation and summary (vmm/lib/memmap.c) on
 * firmware-shaped maps: a descriptor stride larger than the 40 bytes of
 * EFI_MEMORY_DESCRIPTOR, unsorted entries, and every error code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/lib/log.h"
#include "vmm/lib/memmap.h"

#define STRIDE 48          /* what OVMF and most firmware report */
#define MAX_DESC 64
#define PG MM_PAGE_SIZE

/* The raw buffer as GetMemoryMap() fills it: descriptors at a stride. */
static uint8_t map[MAX_DESC * 64];
static size_t map_len;
static size_t stride;

static void map_begin(size_t desc_size)
{
	/* Fill with a pattern: the bytes between descriptors must be ignored. */
	memset(map, 0xcc, sizeof(map));
	map_len = 0;
	stride = desc_size;
}

static void add(uint32_t type, uint64_t start, uint64_t pages)
{
	struct mm_efi_desc d = {
		.type = type, .pad = 0, .phys_start = start, .virt_start = 0,
		.pages = pages, .attr = 0xf,
	};

	assert_true(map_len + stride <= sizeof(map));
	memcpy(map + map_len, &d, sizeof(d));
	map_len += stride;
}

static struct mm_summary sum;
static size_t bad;

static int summarize(void)
{
	bad = 12345;
	return mm_summarize(map, map_len, stride, &sum, &bad);
}

/*
 * A q35 OVMF guest with 2 GiB RAM at ExitBootServices time, shuffled (the
 * spec does not promise sorting).  Pages per type add up as below.
 */
static void ovmf_like_map(size_t desc_size)
{
	map_begin(desc_size);
	add(MM_CONVENTIONAL, 0x0000000000100000, 0x700);        /* 1 MiB: 7 MiB free */
	add(MM_BS_CODE,      0x0000000000000000, 0x1);
	add(MM_MMIO,         0x00000000ffc00000, 0x400);        /* flash */
	add(MM_CONVENTIONAL, 0x0000000000001000, 0x9f);         /* low memory */
	add(MM_ACPI_NVS,     0x0000000000800000, 0x8);
	add(MM_CONVENTIONAL, 0x0000000000808000, 0x3);
	add(MM_ACPI_NVS,     0x000000000080b000, 0x1);
	add(MM_LOADER_CODE,  0x000000007e000000, 0x80);
	add(MM_CONVENTIONAL, 0x0000000001000000, 0x7d000);      /* the big one */
	add(MM_BS_DATA,      0x000000007e080000, 0x1000);
	add(MM_RT_CODE,      0x000000007f080000, 0x100);
	add(MM_RT_DATA,      0x000000007f180000, 0x200);
	add(MM_RESERVED,     0x000000007f380000, 0x80);
	add(MM_ACPI_RECLAIM, 0x000000007f400000, 0x10);
	add(MM_LOADER_DATA,  0x000000007f410000, 0x20);
	add(MM_BS_DATA,      0x000000007f430000, 0xbd0);
	add(MM_MMIO,         0x00000000b0000000, 0x10000);      /* PCIe ECAM */
	add(MM_RESERVED,     0x00000000feffc000, 0x4);
	add(MM_CONVENTIONAL, 0x0000000100000000, 0x40000);      /* 1 GiB above 4 GiB */
	add(MM_MMIO,         0x0000008000000000, 0x800);        /* 64-bit BAR window */
}

/* --- good maps ---------------------------------------------------------------- */

static void check_ovmf_summary(void)
{
	assert_int_equal(summarize(), 0);
	assert_int_equal(sum.ndesc, 20);
	assert_int_equal(sum.unknown_types, 0);
	assert_int_equal(sum.pages[MM_CONVENTIONAL], 0x700 + 0x9f + 0x3 + 0x7d000 + 0x40000);
	assert_int_equal(sum.pages[MM_BS_CODE], 0x1);
	assert_int_equal(sum.pages[MM_BS_DATA], 0x1000 + 0xbd0);
	assert_int_equal(sum.pages[MM_LOADER_CODE], 0x80);
	assert_int_equal(sum.pages[MM_LOADER_DATA], 0x20);
	assert_int_equal(sum.pages[MM_RT_CODE], 0x100);
	assert_int_equal(sum.pages[MM_RT_DATA], 0x200);
	assert_int_equal(sum.pages[MM_ACPI_NVS], 0x9);
	assert_int_equal(sum.pages[MM_ACPI_RECLAIM], 0x10);
	assert_int_equal(sum.pages[MM_RESERVED], 0x84);
	assert_int_equal(sum.pages[MM_MMIO], 0x400 + 0x10000 + 0x800);
	assert_int_equal(sum.pages[MM_UNUSABLE], 0);
	assert_int_equal(sum.free_pages, 0x700 + 0x9f + 0x3 + 0x7d000 + 0x40000);
	/* conventional + loader code/data + boot services code/data */
	assert_int_equal(sum.os_usable_pages,
			 0x700 + 0x9f + 0x3 + 0x7d000 + 0x40000 + 0x80 + 0x20 + 0x1 + 0x1000 + 0xbd0);
	assert_int_equal(sum.largest_free_base, 0x1000000);
	assert_int_equal(sum.largest_free_pages, 0x7d000);
	/* RAM-like tops: 4 GiB + 1 GiB; MMIO above it counts only for top_of_all */
	assert_int_equal(sum.top_of_ram, 0x140000000ull);
	assert_int_equal(sum.top_of_all, 0x8000000000ull + 0x800 * PG);
}

static void test_ovmf_map_stride_48(void **state)
{
	(void)state;
	ovmf_like_map(STRIDE);
	check_ovmf_summary();
}

static void test_ovmf_map_stride_40_and_64(void **state)
{
	(void)state;
	ovmf_like_map(40);
	check_ovmf_summary();
	ovmf_like_map(64);
	check_ovmf_summary();
}

static void test_unaligned_buffer(void **state)
{
	static uint8_t shifted[sizeof(map) + 1];

	(void)state;
	/* The firmware's buffer need not be 8-byte aligned. */
	ovmf_like_map(STRIDE);
	memcpy(shifted + 1, map, map_len);
	assert_int_equal(mm_summarize(shifted + 1, map_len, STRIDE, &sum, &bad), 0);
	assert_int_equal(sum.ndesc, 20);
	assert_int_equal(sum.largest_free_pages, 0x7d000);
}

static void test_empty_map(void **state)
{
	(void)state;
	map_begin(STRIDE);
	memset(&sum, 0xa5, sizeof(sum));
	assert_int_equal(summarize(), 0);
	assert_int_equal(sum.ndesc, 0);
	assert_int_equal(sum.os_usable_pages, 0);
	assert_int_equal(sum.free_pages, 0);
	assert_int_equal(sum.top_of_ram, 0);
	assert_int_equal(sum.top_of_all, 0);
	assert_int_equal(sum.largest_free_pages, 0);
	assert_int_equal(bad, 0);
}

static void test_unknown_types(void **state)
{
	(void)state;
	map_begin(STRIDE);
	add(MM_CONVENTIONAL, 0x100000, 0x10);
	add(MM_TYPE_COUNT, 0x200000, 0x3);            /* 16: past the spec's list */
	add(0x70000001u, 0x300000, 0x5);              /* OEM-defined range */
	add(0x80000000u, 0x400000, 0x7);              /* OS-defined range */
	add(MM_RESERVED, 0x500000, 0x1);
	assert_int_equal(summarize(), 0);
	assert_int_equal(sum.ndesc, 5);
	assert_int_equal(sum.unknown_types, 3);
	assert_int_equal(sum.pages[MM_RESERVED], 0x3 + 0x5 + 0x7 + 0x1);
	/* Neither reserved nor unknown memory raises the top of RAM. */
	assert_int_equal(sum.top_of_ram, 0x110000);
	assert_int_equal(sum.top_of_all, 0x501000);
	assert_string_equal(mm_type_name(0x70000001u), "unknown");
	assert_string_equal(mm_type_name(MM_CONVENTIONAL), "conventional");
	assert_string_equal(mm_type_name(MM_UNACCEPTED), "unaccepted");
}

static void test_largest_free_first_wins_ties(void **state)
{
	(void)state;
	map_begin(STRIDE);
	add(MM_CONVENTIONAL, 0x900000, 0x40);
	add(MM_CONVENTIONAL, 0x100000, 0x40);
	add(MM_BS_DATA, 0x200000, 0x400);          /* bigger, but not free */
	assert_int_equal(summarize(), 0);
	assert_int_equal(sum.largest_free_base, 0x900000);
	assert_int_equal(sum.largest_free_pages, 0x40);
}

static void test_adjacent_ranges_do_not_overlap(void **state)
{
	(void)state;
	map_begin(STRIDE);
	add(MM_CONVENTIONAL, 0x2000, 1);
	add(MM_CONVENTIONAL, 0x1000, 1);
	add(MM_CONVENTIONAL, 0x3000, 1);
	assert_int_equal(summarize(), 0);
}

static void test_range_up_to_top_of_address_space(void **state)
{
	(void)state;
	/* Ends at 2^64 - 4 KiB: the last representable end. */
	map_begin(STRIDE);
	add(MM_MMIO, 0xffffffffffffe000ull, 1);
	assert_int_equal(summarize(), 0);
	assert_int_equal(sum.top_of_all, 0xfffffffffffff000ull);
}

/* --- errors ------------------------------------------------------------------------ */

static void test_desc_size_too_small(void **state)
{
	(void)state;
	ovmf_like_map(STRIDE);
	assert_int_equal(mm_summarize(map, 32 * 4, 32, &sum, &bad), MM_ERR_DESC_SIZE);
	assert_int_equal(mm_summarize(map, 39 * 4, 39, &sum, &bad), MM_ERR_DESC_SIZE);
	assert_int_equal(mm_summarize(map, 0, 0, &sum, &bad), MM_ERR_DESC_SIZE);
	/* >= 40 but not a multiple of 8 */
	assert_int_equal(mm_summarize(map, 44 * 4, 44, &sum, &bad), MM_ERR_DESC_SIZE);
	assert_int_equal(sum.ndesc, 0);
	assert_string_equal(mm_strerror(MM_ERR_DESC_SIZE), "descriptor size below 40 bytes or unaligned");
}

static void test_map_size_not_multiple(void **state)
{
	(void)state;
	ovmf_like_map(STRIDE);
	assert_int_equal(mm_summarize(map, map_len - 8, STRIDE, &sum, &bad), MM_ERR_MAP_SIZE);
	assert_int_equal(mm_summarize(map, 40, STRIDE, &sum, &bad), MM_ERR_MAP_SIZE);
	assert_int_equal(sum.ndesc, 0);
}

static void test_zero_pages(void **state)
{
	(void)state;
	map_begin(STRIDE);
	add(MM_CONVENTIONAL, 0x100000, 0x10);
	add(MM_BS_DATA, 0x200000, 0x10);
	add(MM_LOADER_DATA, 0x300000, 0);
	add(MM_CONVENTIONAL, 0x400000, 0x10);
	assert_int_equal(summarize(), MM_ERR_ZERO_PAGES);
	assert_int_equal(bad, 2);
	/* what was summarized before the bad descriptor */
	assert_int_equal(sum.ndesc, 2);
	assert_int_equal(sum.free_pages, 0x10);
	assert_int_equal(sum.os_usable_pages, 0x20);
}

static void test_unaligned_start(void **state)
{
	(void)state;
	map_begin(STRIDE);
	add(MM_CONVENTIONAL, 0x100000, 0x10);
	add(MM_ACPI_NVS, 0x200800, 0x1);
	assert_int_equal(summarize(), MM_ERR_UNALIGNED);
	assert_int_equal(bad, 1);
	assert_int_equal(sum.ndesc, 1);
}

static void test_overflow(void **state)
{
	(void)state;
	/* Ends exactly at 2^64: wraps to 0. */
	map_begin(STRIDE);
	add(MM_CONVENTIONAL, 0x100000, 1);
	add(MM_MMIO, 0xfffffffffffff000ull, 1);
	assert_int_equal(summarize(), MM_ERR_OVERFLOW);
	assert_int_equal(bad, 1);
	/* pages * 4096 itself overflows */
	map_begin(STRIDE);
	add(MM_CONVENTIONAL, 0, 0x0010000000000000ull);
	assert_int_equal(summarize(), MM_ERR_OVERFLOW);
	assert_int_equal(bad, 0);
	assert_int_equal(sum.ndesc, 0);
	/* a start near the top plus a modest size */
	map_begin(STRIDE);
	add(MM_RESERVED, 0xffffffff00000000ull, 0x100001);
	assert_int_equal(summarize(), MM_ERR_OVERFLOW);
}

static void test_overlap_sorted(void **state)
{
	(void)state;
	map_begin(STRIDE);
	add(MM_CONVENTIONAL, 0x100000, 0x100);   /* 0x100000-0x200000 */
	add(MM_BS_DATA, 0x1ff000, 0x10);         /* last page shared */
	assert_int_equal(summarize(), MM_ERR_OVERLAP);
	assert_int_equal(bad, 1);
}

static void test_overlap_unsorted(void **state)
{
	(void)state;
	/* The later descriptor lies below the earlier one and reaches into it. */
	map_begin(STRIDE);
	add(MM_CONVENTIONAL, 0x800000, 0x100);
	add(MM_RT_DATA, 0x100000, 0x10);
	add(MM_ACPI_NVS, 0x7f0000, 0x20);        /* 0x7f0000-0x810000 */
	add(MM_CONVENTIONAL, 0x900000, 0x10);
	assert_int_equal(summarize(), MM_ERR_OVERLAP);
	assert_int_equal(bad, 2);
	/* and one wholly inside another, listed first */
	map_begin(STRIDE);
	add(MM_BS_CODE, 0x804000, 0x1);
	add(MM_CONVENTIONAL, 0x100000, 0x10);
	add(MM_CONVENTIONAL, 0x800000, 0x100);
	assert_int_equal(summarize(), MM_ERR_OVERLAP);
	assert_int_equal(bad, 2);
}

static void test_duplicate_descriptor(void **state)
{
	(void)state;
	map_begin(STRIDE);
	add(MM_CONVENTIONAL, 0x100000, 0x10);
	add(MM_CONVENTIONAL, 0x100000, 0x10);
	assert_int_equal(summarize(), MM_ERR_OVERLAP);
	assert_int_equal(bad, 1);
}

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(mm_strerror(0), "ok");
	assert_string_equal(mm_strerror(MM_ERR_MAP_SIZE), "map size not a multiple of the descriptor size");
	assert_string_equal(mm_strerror(MM_ERR_ZERO_PAGES), "descriptor with zero pages");
	assert_string_equal(mm_strerror(MM_ERR_UNALIGNED), "descriptor start not page aligned");
	assert_string_equal(mm_strerror(MM_ERR_OVERFLOW), "descriptor end wraps past 2^64");
	assert_string_equal(mm_strerror(MM_ERR_OVERLAP), "descriptors overlap");
	assert_string_equal(mm_strerror(-99), "unknown error");
}

/* --- mm_log ------------------------------------------------------------------------- */

static char logbuf[4096];
static size_t loglen;

static void capture(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	if (len > sizeof(logbuf) - 1 - loglen)
		len = sizeof(logbuf) - 1 - loglen;
	memcpy(logbuf + loglen, text, len);
	loglen += len;
	logbuf[loglen] = '\0';
}

static void test_mm_log(void **state)
{
	(void)state;
	ovmf_like_map(STRIDE);
	assert_int_equal(summarize(), 0);
	loglen = 0;
	log_clear_sinks();
	log_set_level(LOG_DEBUG);
	log_add_sink(capture, NULL);
	mm_log(&sum);
	log_clear_sinks();
	log_set_level(LOG_INFO);
	assert_non_null(strstr(logbuf, "[info] memory: 20 descriptors, "));
	assert_non_null(strstr(logbuf, "RAM top 0x140000000, highest address 0x8000800000"));
	assert_non_null(strstr(logbuf, "largest free range 0x1000000 + 2000 MiB"));
	assert_non_null(strstr(logbuf, "[debug] memory:   conventional"));
	assert_null(strstr(logbuf, "unknown type"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ovmf_map_stride_48),
		cmocka_unit_test(test_ovmf_map_stride_40_and_64),
		cmocka_unit_test(test_unaligned_buffer),
		cmocka_unit_test(test_empty_map),
		cmocka_unit_test(test_unknown_types),
		cmocka_unit_test(test_largest_free_first_wins_ties),
		cmocka_unit_test(test_adjacent_ranges_do_not_overlap),
		cmocka_unit_test(test_range_up_to_top_of_address_space),
		cmocka_unit_test(test_desc_size_too_small),
		cmocka_unit_test(test_map_size_not_multiple),
		cmocka_unit_test(test_zero_pages),
		cmocka_unit_test(test_unaligned_start),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_overlap_sorted),
		cmocka_unit_test(test_overlap_unsorted),
		cmocka_unit_test(test_duplicate_descriptor),
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_mm_log),
	};

	return cmocka_run_group_tests_name("test_memmap", tests, NULL, NULL);
}
