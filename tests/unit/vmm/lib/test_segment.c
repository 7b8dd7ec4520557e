/* SPDX-License-Identifier: MIT */
/*
 * test_segment.c - GDT descriptors to VMCS segment fields (vmm/lib/segment.c).
 * Descriptor values are the ones OVMF and Linux use for their flat
 * 64-bit code and data segments.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/vmx/host.h"
#include "vmm/lib/segment.h"
#include "vmm/vmx/vmx.h"

static uint8_t gdt[8 * 8];

static void set_desc(int i, uint64_t d)
{
	memcpy(gdt + i * 8, &d, 8);
}

static void setup_gdt(void)
{
	memset(gdt, 0, sizeof(gdt));
	set_desc(1, 0x00cf93000000ffffull);  /* flat data, 4 GiB, accessed */
	set_desc(2, 0x00af9b000000ffffull);  /* 64-bit code, L=1, accessed */
	set_desc(3, 0x00cf9a000000ffffull);  /* 32-bit code, not accessed */
	/* 64-bit busy TSS at 0xfffffe00_12345678, limit 0x67. */
	set_desc(4, 0x12008b3456780067ull);
	set_desc(5, 0x00000000fffffe00ull);
	set_desc(6, 0x00cf13000000ffffull);  /* not present */
}

static void test_flat_code_and_data(void **state)
{
	struct seg_state s;

	(void)state;
	setup_gdt();
	assert_true(seg_from_gdt(gdt, sizeof(gdt) - 1, 0x10, &s));
	assert_int_equal(s.selector, 0x10);
	assert_int_equal(s.ar, 0xa09b);
	assert_int_equal(s.base, 0);
	assert_int_equal(s.limit, 0xffffffffu);
	assert_true(seg_from_gdt(gdt, sizeof(gdt) - 1, 0x08, &s));
	assert_int_equal(s.ar, 0xc093);
	assert_true(seg_from_gdt(gdt, sizeof(gdt) - 1, 0x18, &s));
	assert_int_equal(s.ar, 0xc09a);
}

static void test_system_descriptor_is_16_bytes(void **state)
{
	struct seg_state s;

	(void)state;
	setup_gdt();
	assert_true(seg_from_gdt(gdt, sizeof(gdt) - 1, 0x20, &s));
	assert_int_equal(s.ar, 0x008b);
	assert_int_equal(s.limit, 0x67);
	assert_int_equal(s.base, 0xfffffe0012345678ull);
}

static void test_unusable_cases(void **state)
{
	struct seg_state s;

	(void)state;
	setup_gdt();
	assert_false(seg_from_gdt(gdt, sizeof(gdt) - 1, 0, &s));   /* null */
	assert_int_equal(s.ar, SEG_AR_UNUSABLE);
	assert_false(seg_from_gdt(gdt, sizeof(gdt) - 1, 3, &s));   /* null with RPL */
	assert_false(seg_from_gdt(gdt, sizeof(gdt) - 1, 0x0c, &s)); /* TI=1: LDT */
	assert_int_equal(s.selector, 0x0c);
	assert_false(seg_from_gdt(gdt, 0x17, 0x18, &s));           /* past the limit */
	assert_false(seg_from_gdt(gdt, sizeof(gdt) - 1, 0x30, &s)); /* not present */
	assert_int_equal(s.ar, SEG_AR_UNUSABLE);
}

static void test_fake_tr(void **state)
{
	struct seg_state s;

	(void)state;
	seg_fake_tr(0x7000, &s);
	assert_int_equal(s.selector, 0);
	assert_int_equal(s.base, 0x7000);
	assert_int_equal(s.limit, 0x67);
	assert_int_equal(s.ar & 0xf, 11);        /* 64-bit busy TSS */
	assert_int_equal(s.ar & (1u << 4), 0);   /* system descriptor */
	assert_int_equal(s.ar & (1u << 7), 0x80); /* present */
	assert_int_equal(s.ar & SEG_AR_UNUSABLE, 0);
}

static void test_encode_roundtrip(void **state)
{
	struct seg_state s;

	(void)state;
	memset(gdt, 0, sizeof(gdt));
	set_desc(1, seg_encode_descriptor(0x12345678, 0xabcde, 0xc093));
	assert_true(seg_from_gdt(gdt, sizeof(gdt) - 1, 0x08, &s));
	assert_int_equal(s.base, 0x12345678);
	assert_int_equal(s.limit, 0xabcdefff);  /* G=1 */
	assert_int_equal(s.ar, 0xc093);
	assert_int_equal(seg_encode_descriptor(0, 0xfffff, 0xa09b), 0x00af9b000000ffffull);
}

/* The host GDT: code, data, and a TSS above any firmware GDT's limit. */
static void test_host_gdt_layout(void **state)
{
	uint8_t host[HOST_GDT_BYTES + 16];
	struct seg_state s;

	(void)state;
	memset(host, 0xee, sizeof(host));
	host_build_gdt(host, 0x12345678abcull);
	assert_int_equal(host[HOST_GDT_BYTES], 0xee);       /* nothing past it */
	assert_true(seg_from_gdt(host, HOST_GDT_BYTES - 1, HOST_SEL_CODE, &s));
	assert_int_equal(s.ar, 0xa09b);
	assert_true(seg_from_gdt(host, HOST_GDT_BYTES - 1, HOST_SEL_DATA, &s));
	assert_int_equal(s.ar, 0xc093);
	assert_true(seg_from_gdt(host, HOST_GDT_BYTES - 1, HOST_SEL_TSS, &s));
	assert_int_equal(s.base, 0x12345678abcull);
	assert_int_equal(s.limit, 0x67);
	assert_int_equal(s.ar & 0x1f, 0x09);                 /* available 64-bit TSS */
	/* OVMF's GDT limit is 0x47: TR must point beyond it (vmm/vmx/vmx.h) */
	assert_true(HOST_SEL_TSS > 0x47);
	/* everything between data and TSS is empty (not present) */
	for (unsigned sel = HOST_SEL_DATA + 8; sel < HOST_SEL_TSS; sel += 8)
		assert_false(seg_from_gdt(host, HOST_GDT_BYTES - 1, (uint16_t)sel, &s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flat_code_and_data),
		cmocka_unit_test(test_system_descriptor_is_16_bytes),
		cmocka_unit_test(test_unusable_cases),
		cmocka_unit_test(test_fake_tr),
		cmocka_unit_test(test_encode_roundtrip),
		cmocka_unit_test(test_host_gdt_layout),
	};

	return cmocka_run_group_tests_name("test_segment", tests, NULL, NULL);
}
