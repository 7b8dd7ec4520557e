/* SPDX-License-Identifier: MIT */
/*
 * test_load_option.c - EFI_LOAD_OPTION (Boot####) parsing and the choice
 * of what to boot next (boot/load_option.c).  The variables are built
 * byte by byte as UEFI 2.x 3.1.3 and 10.3 lay them out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "boot/load_option.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* --- a byte builder --------------------------------------------------------------- */

static uint8_t var[1024];
static size_t vlen;

static void put8(uint8_t v)
{
	assert_true(vlen < sizeof(var));
	var[vlen++] = v;
}

static void put16(uint16_t v)
{
	put8((uint8_t)v);
	put8((uint8_t)(v >> 8));
}

static void put32(uint32_t v)
{
	put16((uint16_t)v);
	put16((uint16_t)(v >> 16));
}

static void put64(uint64_t v)
{
	put32((uint32_t)v);
	put32((uint32_t)(v >> 32));
}

static void put_ucs2(const char *s)
{
	while (*s)
		put16((uint8_t)*s++);
	put16(0);
}

static void node_hdr(uint8_t type, uint8_t subtype, uint16_t len)
{
	put8(type);
	put8(subtype);
	put16(len);
}

/*
 * PciRoot(0x0)/Pci(0x1,0x1)/HD(1,GPT,<guid>,0x800,0x100000)/
 * \EFI\debian\shimx64.efi, then End Entire: what efibootmgr shows for a
 * Debian entry on a q35 guest.  Returns its length.
 */
static const char shim_path[] = "\\EFI\\debian\\shimx64.efi";

static size_t put_debian_path(void)
{
	size_t start = vlen;
	size_t file_len = 4 + 2 * (sizeof(shim_path));

	node_hdr(0x02, 0x01, 12);          /* ACPI, _HID/_UID */
	put32(0x0a0341d0);                  /* EISA PNP0A03 */
	put32(0);
	node_hdr(0x01, 0x01, 6);           /* Hardware, PCI */
	put8(1);                            /* function */
	put8(1);                            /* device */
	node_hdr(0x04, 0x01, 42);          /* Media, hard drive */
	put32(1);                           /* partition number */
	put64(0x800);                       /* start LBA */
	put64(0x100000);                    /* size in LBAs */
	for (int i = 0; i < 16; i++)        /* partition GUID */
		put8((uint8_t)(0x10 + i));
	put8(2);                            /* GPT */
	put8(2);                            /* signature is a GUID */
	node_hdr(0x04, 0x04, (uint16_t)file_len);  /* Media, file path */
	put_ucs2(shim_path);
	node_hdr(0x7f, 0xff, 4);           /* End Entire */
	return vlen - start;
}

#define DEBIAN_PATH_LEN (12 + 6 + 42 + 4 + 2 * sizeof(shim_path) + 4)

/* Boot#### with the given attributes, description, path and optional data. */
static void build(uint32_t attr, const char *desc, const uint8_t *opt, size_t optlen)
{
	size_t fpl_at, path_len;

	vlen = 0;
	put32(attr);
	fpl_at = vlen;
	put16(0);
	put_ucs2(desc);
	path_len = put_debian_path();
	var[fpl_at] = (uint8_t)path_len;
	var[fpl_at + 1] = (uint8_t)(path_len >> 8);
	for (size_t i = 0; i < optlen; i++)
		put8(opt[i]);
}

static struct load_option lo;

/* --- load_option_parse ----------------------------------------------------------- */

static void test_parse_debian_entry(void **state)
{
	static const uint8_t opt[] = { 'R', 'C', 0, 0, 0x34, 0x12 };
	const size_t path_off = 6 + 2 * (6 + 1);  /* after "debian" and its NUL */

	(void)state;
	build(LOAD_OPT_ACTIVE, "debian", opt, sizeof(opt));
	memset(&lo, 0xa5, sizeof(lo));
	assert_int_equal(load_option_parse(var, vlen, &lo), 0);
	assert_int_equal(lo.attributes, LOAD_OPT_ACTIVE);
	assert_string_equal(lo.description, "debian");
	assert_ptr_equal(lo.file_path, var + path_off);
	assert_int_equal(lo.file_path_len, DEBIAN_PATH_LEN);
	/* the path starts with the ACPI node and ends with End Entire */
	assert_int_equal(lo.file_path[0], 0x02);
	assert_memory_equal(lo.file_path + lo.file_path_len - 4, "\x7f\xff\x04\x00", 4);
	assert_ptr_equal(lo.optional_data, var + path_off + DEBIAN_PATH_LEN);
	assert_int_equal(lo.optional_data_len, sizeof(opt));
	assert_memory_equal(lo.optional_data, opt, sizeof(opt));
}

static void test_parse_without_optional_data(void **state)
{
	(void)state;
	build(LOAD_OPT_ACTIVE | LOAD_OPT_FORCE_RECONNECT, "UEFI QEMU HARDDISK QM00001", NULL, 0);
	assert_int_equal(load_option_parse(var, vlen, &lo), 0);
	assert_int_equal(lo.attributes, LOAD_OPT_ACTIVE | LOAD_OPT_FORCE_RECONNECT);
	assert_string_equal(lo.description, "UEFI QEMU HARDDISK QM00001");
	assert_null(lo.optional_data);
	assert_int_equal(lo.optional_data_len, 0);
}

static void test_parse_empty_description(void **state)
{
	(void)state;
	build(0, "", NULL, 0);
	assert_int_equal(load_option_parse(var, vlen, &lo), 0);
	assert_string_equal(lo.description, "");
	assert_ptr_equal(lo.file_path, var + 8);
}

static void test_description_non_ascii_and_long(void **state)
{
	char longdesc[120];

	(void)state;
	/* U+00E9 and U+4E2D render as '?'; control characters too. */
	vlen = 0;
	put32(LOAD_OPT_ACTIVE);
	put16((uint16_t)DEBIAN_PATH_LEN);
	put16('C');
	put16(0x00e9);
	put16(0x4e2d);
	put16('\t');
	put16('~');
	put16(0);
	put_debian_path();
	assert_int_equal(load_option_parse(var, vlen, &lo), 0);
	assert_string_equal(lo.description, "C???~");

	/* 100 characters: cut to the 79 that fit, path still found. */
	memset(longdesc, 'd', 100);
	longdesc[100] = '\0';
	build(LOAD_OPT_ACTIVE, longdesc, (const uint8_t *)"xy", 2);
	assert_int_equal(load_option_parse(var, vlen, &lo), 0);
	assert_int_equal(strlen(lo.description), sizeof(lo.description) - 1);
	assert_int_equal(lo.file_path_len, DEBIAN_PATH_LEN);
	assert_int_equal(lo.optional_data_len, 2);
}

static void test_second_path_in_list_not_included(void **state)
{
	size_t fpl_at, first;

	(void)state;
	/* FilePathList holds two paths; file_path_len covers the first only. */
	vlen = 0;
	put32(LOAD_OPT_ACTIVE);
	fpl_at = vlen;
	put16(0);
	put_ucs2("two paths");
	first = put_debian_path();
	node_hdr(0x04, 0x04, 4 + 2 * 4);
	put_ucs2("\\x1");
	node_hdr(0x7f, 0xff, 4);
	var[fpl_at] = (uint8_t)(first + 12 + 4);
	var[fpl_at + 1] = 0;
	put8(0x42);  /* optional data after the whole list */
	assert_int_equal(load_option_parse(var, vlen, &lo), 0);
	assert_int_equal(lo.file_path_len, first);
	assert_int_equal(lo.optional_data_len, 1);
	assert_int_equal(lo.optional_data[0], 0x42);
}

static void test_end_instance_node_is_not_the_end(void **state)
{
	(void)state;
	/* A multi-instance path: End Instance (7F/01) then End Entire (7F/FF). */
	vlen = 0;
	put32(LOAD_OPT_ACTIVE);
	put16(4 + 6 + 4 + 4);
	put_ucs2("multi");
	node_hdr(0x7f, 0x01, 4);
	node_hdr(0x01, 0x01, 6);
	put8(0);
	put8(2);
	node_hdr(0x7f, 0x01, 4);
	node_hdr(0x7f, 0xff, 4);
	assert_int_equal(load_option_parse(var, vlen, &lo), 0);
	assert_int_equal(lo.file_path_len, 18);
}

static void test_err_short(void **state)
{
	(void)state;
	build(LOAD_OPT_ACTIVE, "debian", NULL, 0);
	for (size_t len = 0; len < 8; len++) {
		memset(&lo, 0xa5, sizeof(lo));
		assert_int_equal(load_option_parse(var, len, &lo), LOAD_OPT_ERR_SHORT);
		assert_null(lo.file_path);  /* *out cleared */
		assert_int_equal(lo.description[0], '\0');
	}
}

static void test_err_desc(void **state)
{
	(void)state;
	build(LOAD_OPT_ACTIVE, "debian", NULL, 0);
	/* cut inside the description: no terminator within len */
	assert_int_equal(load_option_parse(var, 6 + 2 * 6, &lo), LOAD_OPT_ERR_DESC);
	/* only the first byte of the NUL CHAR16 */
	assert_int_equal(load_option_parse(var, 6 + 2 * 6 + 1, &lo), LOAD_OPT_ERR_DESC);
	assert_int_equal(load_option_parse(var, 9, &lo), LOAD_OPT_ERR_DESC);
	/* an odd length: the last CHAR16 is incomplete */
	assert_int_equal(load_option_parse(var, 6 + 2 * 3 + 1, &lo), LOAD_OPT_ERR_DESC);
}

static void test_err_path_len(void **state)
{
	(void)state;
	/* FilePathListLength larger than what follows the description */
	build(LOAD_OPT_ACTIVE, "debian", NULL, 0);
	var[4] = (uint8_t)(DEBIAN_PATH_LEN + 1);
	assert_int_equal(load_option_parse(var, vlen, &lo), LOAD_OPT_ERR_PATH_LEN);
	/* variable cut inside the path */
	build(LOAD_OPT_ACTIVE, "debian", NULL, 0);
	assert_int_equal(load_option_parse(var, vlen - 1, &lo), LOAD_OPT_ERR_PATH_LEN);
	/* a list shorter than one node header */
	for (uint16_t fpl = 0; fpl < 4; fpl++) {
		build(LOAD_OPT_ACTIVE, "debian", NULL, 0);
		var[4] = (uint8_t)fpl;
		var[5] = 0;
		assert_int_equal(load_option_parse(var, vlen, &lo), LOAD_OPT_ERR_PATH_LEN);
	}
	/* ends right after the description */
	build(LOAD_OPT_ACTIVE, "debian", NULL, 0);
	assert_int_equal(load_option_parse(var, 6 + 2 * 7, &lo), LOAD_OPT_ERR_PATH_LEN);
}

static void test_err_path(void **state)
{
	const size_t path_off = 6 + 2 * 7;

	(void)state;
	/* a node of length < 4 (here the PCI node claims 3) */
	build(LOAD_OPT_ACTIVE, "debian", NULL, 0);
	var[path_off + 12 + 2] = 3;
	assert_int_equal(load_option_parse(var, vlen, &lo), LOAD_OPT_ERR_PATH);
	/* a 3-byte node even where the bytes after it would walk to an end node */
	vlen = 0;
	put32(LOAD_OPT_ACTIVE);
	put16(11);
	put_ucs2("x");
	node_hdr(0x01, 0x01, 3);   /* bytes 0-3; a 3-byte node would end at 3 */
	put8(0x00);                /* byte 4 */
	put16(4);                  /* bytes 5-6: a 4-byte node at 3 */
	node_hdr(0x7f, 0xff, 4);   /* bytes 7-10: End Entire */
	assert_int_equal(load_option_parse(var, vlen, &lo), LOAD_OPT_ERR_PATH);
	/* a zero-length node would loop forever if accepted */
	build(LOAD_OPT_ACTIVE, "debian", NULL, 0);
	var[path_off + 2] = 0;
	var[path_off + 3] = 0;
	assert_int_equal(load_option_parse(var, vlen, &lo), LOAD_OPT_ERR_PATH);
	/* a node running past FilePathListLength (but inside the variable) */
	build(LOAD_OPT_ACTIVE, "debian", (const uint8_t *)"optional data", 13);
	var[path_off + 12 + 6 + 42 + 2] += 8;  /* the file node grows by 8 */
	assert_int_equal(load_option_parse(var, vlen, &lo), LOAD_OPT_ERR_PATH);
	/* the list ends without an End Entire node */
	build(LOAD_OPT_ACTIVE, "debian", NULL, 0);
	var[vlen - 3] = 0x01;  /* End Entire becomes End Instance */
	assert_int_equal(load_option_parse(var, vlen, &lo), LOAD_OPT_ERR_PATH);
	/* FilePathListLength cuts the last node: 2 bytes of End left */
	build(LOAD_OPT_ACTIVE, "debian", (const uint8_t *)"zz", 2);
	var[4] = (uint8_t)(DEBIAN_PATH_LEN - 2);
	assert_int_equal(load_option_parse(var, vlen, &lo), LOAD_OPT_ERR_PATH);
}

static void test_every_truncation_is_an_error(void **state)
{
	(void)state;
	build(LOAD_OPT_ACTIVE, "debian", NULL, 0);
	/* No prefix of a valid variable without optional data parses. */
	for (size_t len = 0; len < vlen; len++) {
		int rc = load_option_parse(var, len, &lo);

		assert_true(rc == LOAD_OPT_ERR_SHORT || rc == LOAD_OPT_ERR_DESC ||
			    rc == LOAD_OPT_ERR_PATH_LEN);
	}
	assert_int_equal(load_option_parse(var, vlen, &lo), 0);
}

/* --- load_option_bootable ---------------------------------------------------------- */

static void test_bootable_truth_table(void **state)
{
	static const struct { uint32_t attr; int bootable; } t[] = {
		{ 0, 0 },
		{ LOAD_OPT_ACTIVE, 1 },
		{ LOAD_OPT_ACTIVE | LOAD_OPT_FORCE_RECONNECT, 1 },
		{ LOAD_OPT_ACTIVE | LOAD_OPT_HIDDEN, 0 },
		{ LOAD_OPT_HIDDEN, 0 },
		{ LOAD_OPT_ACTIVE | LOAD_OPT_CATEGORY_APP, 0 },
		{ LOAD_OPT_CATEGORY_APP, 0 },
		{ LOAD_OPT_ACTIVE | 0x00000200u, 0 },           /* a reserved category */
		{ LOAD_OPT_ACTIVE | 0x00001f00u, 0 },
		{ LOAD_OPT_ACTIVE | 0x00000004u, 1 },           /* bit 2: not a category */
		{ LOAD_OPT_ACTIVE | 0x80000000u, 1 },
		{ LOAD_OPT_ACTIVE | LOAD_OPT_HIDDEN | LOAD_OPT_CATEGORY_APP, 0 },
	};

	(void)state;
	for (size_t i = 0; i < N(t); i++)
		if (!!load_option_bootable(t[i].attr) != t[i].bootable)
			fail_msg("attributes %#x: bootable %d, want %d", t[i].attr,
				 load_option_bootable(t[i].attr), t[i].bootable);
}

/* --- boot_order_next ---------------------------------------------------------------- */

static void check_next(const uint16_t *order, size_t n, int have, uint16_t cur,
		       const uint16_t *want, size_t nwant)
{
	uint16_t out[16];
	size_t k;

	for (size_t i = 0; i < N(out); i++)
		out[i] = 0xdead;
	k = boot_order_next(order, n, have, cur, out);
	assert_int_equal(k, nwant);
	if (nwant)
		assert_memory_equal(out, want, nwant * sizeof(uint16_t));
	for (size_t i = k; i < N(out); i++)
		assert_int_equal(out[i], 0xdead);  /* nothing past what is returned */
}

static void test_boot_order_current_in_middle(void **state)
{
	static const uint16_t order[] = { 0x0003, 0x0001, 0x0000, 0x0002, 0x0005 };
	static const uint16_t want[] = { 0x0002, 0x0005 };

	(void)state;
	check_next(order, N(order), 1, 0x0000, want, N(want));
}

static void test_boot_order_current_first_and_last(void **state)
{
	static const uint16_t order[] = { 0x0007, 0x0001, 0x0002 };
	static const uint16_t want_first[] = { 0x0001, 0x0002 };

	(void)state;
	check_next(order, N(order), 1, 0x0007, want_first, N(want_first));
	check_next(order, N(order), 1, 0x0002, NULL, 0);  /* at the end: nothing left */
}

static void test_boot_order_current_absent(void **state)
{
	static const uint16_t order[] = { 0x0004, 0x0001, 0x0003 };

	(void)state;
	/* Started via BootNext or a shell: everything, in order. */
	check_next(order, N(order), 1, 0x0009, order, N(order));
	/* no current at all */
	check_next(order, N(order), 0, 0x0001, order, N(order));
}

static void test_boot_order_duplicates(void **state)
{
	static const uint16_t order[] = { 0x0000, 0x0002, 0x0001, 0x0002, 0x0003, 0x0001 };
	static const uint16_t want[] = { 0x0002, 0x0001, 0x0003 };
	static const uint16_t want_all[] = { 0x0000, 0x0002, 0x0001, 0x0003 };

	(void)state;
	check_next(order, N(order), 1, 0x0000, want, N(want));
	check_next(order, N(order), 0, 0, want_all, N(want_all));
}

static void test_boot_order_current_listed_twice(void **state)
{
	static const uint16_t order[] = { 0x0001, 0x0005, 0x0002, 0x0005, 0x0003 };
	static const uint16_t want[] = { 0x0002, 0x0003 };
	static const uint16_t want_absent[] = { 0x0001, 0x0002, 0x0003 };

	(void)state;
	/* after its first occurrence; the second is skipped, never returned */
	check_next(order, N(order), 1, 0x0005, want, N(want));
	/* current first, listed again later: the later copy is skipped too */
	check_next(order + 1, N(order) - 1, 1, 0x0005, want_absent + 1, 2);
	/* current absent: all of order[] */
	check_next((const uint16_t[]){ 0x0001, 0x0002, 0x0003 }, 3, 1, 0x0005,
		   want_absent, N(want_absent));
}

static void test_boot_order_empty(void **state)
{
	(void)state;
	check_next(NULL, 0, 1, 0x0001, NULL, 0);
	check_next((const uint16_t[]){ 0x0001 }, 1, 1, 0x0001, NULL, 0);
	check_next((const uint16_t[]){ 0x0001, 0x0001 }, 2, 1, 0x0001, NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_debian_entry),
		cmocka_unit_test(test_parse_without_optional_data),
		cmocka_unit_test(test_parse_empty_description),
		cmocka_unit_test(test_description_non_ascii_and_long),
		cmocka_unit_test(test_second_path_in_list_not_included),
		cmocka_unit_test(test_end_instance_node_is_not_the_end),
		cmocka_unit_test(test_err_short),
		cmocka_unit_test(test_err_desc),
		cmocka_unit_test(test_err_path_len),
		cmocka_unit_test(test_err_path),
		cmocka_unit_test(test_every_truncation_is_an_error),
		cmocka_unit_test(test_bootable_truth_table),
		cmocka_unit_test(test_boot_order_current_in_middle),
		cmocka_unit_test(test_boot_order_current_first_and_last),
		cmocka_unit_test(test_boot_order_current_absent),
		cmocka_unit_test(test_boot_order_duplicates),
		cmocka_unit_test(test_boot_order_current_listed_twice),
		cmocka_unit_test(test_boot_order_empty),
	};

	return cmocka_run_group_tests_name("test_load_option", tests, NULL, NULL);
}
