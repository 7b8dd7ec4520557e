/* SPDX-License-Identifier: MIT */
/*
 * test_reloc.c - re-relocation of the image copy (vmm/lib/reloc.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/lib/reloc.h"

#define IMG 4096
#define DYN 0x100
#define RELA 0x200

static uint8_t img[IMG] __attribute__((aligned(16)));

static void put_dyn(int i, int64_t tag, uint64_t val)
{
	struct elf64_dyn d = { tag, val };

	memcpy(img + DYN + i * sizeof(d), &d, sizeof(d));
}

static void put_rela(int i, uint64_t off, uint32_t type, int64_t addend)
{
	struct elf64_rela r = { off, type, addend };

	memcpy(img + RELA + i * sizeof(r), &r, sizeof(r));
}

static uint64_t get64(uint64_t off)
{
	uint64_t v;

	memcpy(&v, img + off, 8);
	return v;
}

/* An image with three RELATIVE entries and one NONE. */
static void make_image(void)
{
	memset(img, 0xee, sizeof(img));
	put_dyn(0, ELF_DT_RELA, RELA);
	put_dyn(1, ELF_DT_RELASZ, 4 * sizeof(struct elf64_rela));
	put_dyn(2, ELF_DT_RELAENT, sizeof(struct elf64_rela));
	put_dyn(3, ELF_DT_NULL, 0);
	put_rela(0, 0x800, ELF_R_X86_64_RELATIVE, 0x1234);
	put_rela(1, 0x808, ELF_R_X86_64_RELATIVE, 0);
	put_rela(2, 0x900, ELF_R_X86_64_NONE, 0x55);
	put_rela(3, IMG - 8, ELF_R_X86_64_RELATIVE, 0x10);
}

static void test_applies_relative(void **state)
{
	(void)state;
	make_image();
	/* Stale values from an earlier base must not matter (RELA, not REL). */
	memset(img + 0x800, 0x77, 16);
	assert_int_equal(reloc_image(img, IMG, DYN), 3);
	assert_int_equal(get64(0x800), (uint64_t)(uintptr_t)img + 0x1234);
	assert_int_equal(get64(0x808), (uint64_t)(uintptr_t)img);
	assert_int_equal(get64(IMG - 8), (uint64_t)(uintptr_t)img + 0x10);
	assert_int_equal(get64(0x900), 0xeeeeeeeeeeeeeeeeull);  /* NONE untouched */
	/* Applying twice gives the same result. */
	assert_int_equal(reloc_image(img, IMG, DYN), 3);
	assert_int_equal(get64(0x800), (uint64_t)(uintptr_t)img + 0x1234);
}

static void test_rejects_other_types(void **state)
{
	(void)state;
	make_image();
	put_rela(1, 0x808, 1 /* R_X86_64_64 */, 0);
	assert_int_equal(reloc_image(img, IMG, DYN), RELOC_ERR_TYPE);
}

static void test_rejects_out_of_range(void **state)
{
	(void)state;
	make_image();
	put_rela(0, IMG - 7, ELF_R_X86_64_RELATIVE, 0);
	assert_int_equal(reloc_image(img, IMG, DYN), RELOC_ERR_RANGE);
	make_image();
	put_dyn(1, ELF_DT_RELASZ, IMG);  /* table runs past the image */
	assert_int_equal(reloc_image(img, IMG, DYN), RELOC_ERR_RANGE);
	make_image();
	assert_int_equal(reloc_image(img, IMG, IMG - 8), RELOC_ERR_RANGE); /* no DT_NULL inside */
}

static void test_rejects_bad_entsize_and_missing(void **state)
{
	(void)state;
	make_image();
	put_dyn(2, ELF_DT_RELAENT, 16);
	assert_int_equal(reloc_image(img, IMG, DYN), RELOC_ERR_ENTSIZE);
	make_image();
	put_dyn(1, ELF_DT_NULL, 0);  /* RELA without RELASZ */
	assert_int_equal(reloc_image(img, IMG, DYN), RELOC_ERR_NO_RELA);
	make_image();
	put_dyn(0, ELF_DT_NULL, 0);  /* no relocations at all */
	assert_int_equal(reloc_image(img, IMG, DYN), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_applies_relative),
		cmocka_unit_test(test_rejects_other_types),
		cmocka_unit_test(test_rejects_out_of_range),
		cmocka_unit_test(test_rejects_bad_entsize_and_missing),
	};

	return cmocka_run_group_tests_name("test_reloc", tests, NULL, NULL);
}
