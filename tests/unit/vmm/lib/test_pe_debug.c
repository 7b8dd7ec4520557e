/* SPDX-License-Identifier: MIT */
/*
 * test_pe_debug.c - CodeView debug paths of PE images (vmm/lib/pe_debug.c):
 * a PE32+ image laid out by hand as the PE/COFF specification describes
 * it, then damaged in every field the parser relies on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "vmm/lib/pe_debug.h"

#define PE_OFF   0x80
#define OPT_OFF  (PE_OFF + 24)
#define DIRS_OFF (OPT_OFF + 112)
#define DBG_OFF  0x200
#define CV_OFF   0x240
#define PATH     "c:\\build\\OvmfX64\\DEBUG_GCC5\\X64\\MdeModulePkg\\Core\\Dxe\\DxeMain\\DEBUG\\DxeCore.dll"

static uint8_t img[0x400];

static void w16(size_t off, uint32_t v) { img[off] = (uint8_t)v; img[off + 1] = (uint8_t)(v >> 8); }
static void w32(size_t off, uint32_t v) { w16(off, v & 0xffff); w16(off + 2, v >> 16); }

static int build(void **state)
{
	(void)state;
	memset(img, 0, sizeof(img));
	img[0] = 'M';
	img[1] = 'Z';
	w32(0x3c, PE_OFF);
	memcpy(img + PE_OFF, "PE\0\0", 4);
	w16(PE_OFF + 4, 0x8664);              /* machine */
	w16(PE_OFF + 20, 112 + 16 * 8);       /* SizeOfOptionalHeader */
	w16(OPT_OFF, 0x20b);                  /* PE32+ */
	w32(DIRS_OFF - 4, 16);                /* NumberOfRvaAndSizes */
	w32(DIRS_OFF + 8 * 6, DBG_OFF);       /* debug directory */
	w32(DIRS_OFF + 8 * 6 + 4, 2 * 28);
	/* entry 0: some other type; entry 1: CodeView RSDS */
	w32(DBG_OFF + 12, 16);                /* IMAGE_DEBUG_TYPE_REPRO */
	w32(DBG_OFF + 28 + 12, 2);
	w32(DBG_OFF + 28 + 16, 24 + sizeof(PATH));
	w32(DBG_OFF + 28 + 20, CV_OFF);
	memcpy(img + CV_OFF, "RSDS", 4);
	memcpy(img + CV_OFF + 24, PATH, sizeof(PATH));
	return 0;
}

static void test_rsds_path(void **state)
{
	const char *p, *b;
	size_t n, bn;

	(void)state;
	assert_int_equal(pe_codeview_path(img, sizeof(img), &p, &n), 0);
	assert_int_equal(n, strlen(PATH));
	assert_memory_equal(p, PATH, n);
	b = pe_basename(p, n, &bn);
	assert_int_equal(bn, strlen("DxeCore.dll"));
	assert_memory_equal(b, "DxeCore.dll", bn);
	b = pe_basename("/a/b/x.efi", 10, &bn);
	assert_int_equal(bn, 5);
	b = pe_basename("noslash", 7, &bn);
	assert_int_equal(bn, 7);
	(void)b;
}

static void test_nb10_and_pe32(void **state)
{
	const char *p;
	size_t n;

	(void)state;
	/* PE32: directories 16 bytes earlier */
	w16(OPT_OFF, 0x10b);
	memmove(img + OPT_OFF + 96 - 4, img + DIRS_OFF - 4, 4 + 16 * 8);
	memcpy(img + CV_OFF, "NB10", 4);
	memmove(img + CV_OFF + 16, img + CV_OFF + 24, sizeof(PATH));
	w32(DBG_OFF + 28 + 16, 16 + sizeof(PATH));
	assert_int_equal(pe_codeview_path(img, sizeof(img), &p, &n), 0);
	assert_memory_equal(p, PATH, n);
}

/* SizeOfImage at offset 56 of the optional header, PE32+ and PE32 alike. */
static void test_image_size(void **state)
{
	uint32_t size = 0;

	(void)state;
	w32(OPT_OFF + 56, 0x123000);
	assert_int_equal(pe_image_size(img, sizeof(img), &size), 0);
	assert_int_equal(size, 0x123000);
	w16(OPT_OFF, 0x10b);
	assert_int_equal(pe_image_size(img, sizeof(img), &size), 0);
	assert_int_equal(size, 0x123000);
	w32(OPT_OFF + 56, 0);
	assert_int_equal(pe_image_size(img, sizeof(img), &size), PE_ERR_FORMAT);
	w32(OPT_OFF + 56, 0x1000);
	assert_int_equal(pe_image_size(img, OPT_OFF + 58, &size), PE_ERR_FORMAT);  /* cut short */
	w16(OPT_OFF, 0x107);                                                       /* ROM image */
	assert_int_equal(pe_image_size(img, sizeof(img), &size), PE_ERR_FORMAT);
	w16(OPT_OFF, 0x20b);
	img[0] = 'X';
	assert_int_equal(pe_image_size(img, sizeof(img), &size), PE_ERR_FORMAT);
	assert_int_equal(pe_image_size(NULL, sizeof(img), &size), PE_ERR_ARG);
}

static void test_damage(void **state)
{
	const char *p = NULL;
	size_t n = 0;

	(void)state;
	assert_int_equal(pe_codeview_path(NULL, 0, &p, &n), PE_ERR_ARG);
	assert_int_equal(pe_codeview_path(img, sizeof(img), NULL, &n), PE_ERR_ARG);
	assert_int_equal(pe_codeview_path(img, 0x30, &p, &n), PE_ERR_FORMAT);
	/* the record must be NUL-terminated within SizeOfData */
	w32(DBG_OFF + 28 + 16, 24 + 10);
	assert_int_equal(pe_codeview_path(img, sizeof(img), &p, &n), PE_ERR_NONE);
	build(NULL);
	/* raw data beyond the image */
	w32(DBG_OFF + 28 + 20, 0x3f0);
	assert_int_equal(pe_codeview_path(img, sizeof(img), &p, &n), PE_ERR_NONE);
	build(NULL);
	/* unknown CodeView signature */
	memcpy(img + CV_OFF, "XXXX", 4);
	assert_int_equal(pe_codeview_path(img, sizeof(img), &p, &n), PE_ERR_NONE);
	build(NULL);
	/* debug directory outside the image */
	w32(DIRS_OFF + 8 * 6, 0x3f0);
	assert_int_equal(pe_codeview_path(img, sizeof(img), &p, &n), PE_ERR_FORMAT);
	build(NULL);
	/* too few data directories */
	w32(DIRS_OFF - 4, 6);
	assert_int_equal(pe_codeview_path(img, sizeof(img), &p, &n), PE_ERR_NONE);
	build(NULL);
	/* e_lfanew past the end, bad signatures */
	w32(0x3c, 0x7fffffff);
	assert_int_equal(pe_codeview_path(img, sizeof(img), &p, &n), PE_ERR_FORMAT);
	build(NULL);
	img[PE_OFF + 1] = 'X';
	assert_int_equal(pe_codeview_path(img, sizeof(img), &p, &n), PE_ERR_FORMAT);
	build(NULL);
	w16(OPT_OFF, 0x107);
	assert_int_equal(pe_codeview_path(img, sizeof(img), &p, &n), PE_ERR_FORMAT);
	build(NULL);
	img[0] = 'Z';
	assert_int_equal(pe_codeview_path(img, sizeof(img), &p, &n), PE_ERR_FORMAT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_rsds_path, build),
		cmocka_unit_test_setup(test_nb10_and_pe32, build),
		cmocka_unit_test_setup(test_image_size, build),
		cmocka_unit_test_setup(test_damage, build),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
