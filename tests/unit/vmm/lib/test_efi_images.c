/* SPDX-License-Identifier: MIT */
/*
 * test_efi_images.c - vmm/lib/efi_images.c on a fake physical memory
 * (efi_images_fake.h): the system table -> the debug image info table ->
 * each loaded image, named by its CodeView path, its FvFile GUID or its
 * file path; then a table a hostile guest wrote (absurd TableSize,
 * unreadable and wrapping addresses, sizes 0 and huge, device paths that
 * never end, headers pointing outside the image): skipped and counted,
 * never a fault or an unbounded walk; and the set of images seen at boot.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/lib/efi_images.h"
#include "efi_images_fake.h"

#define MEM_BYTES 0x40000u
#define PATH_CV "/build/OvmfX64/DEBUG_GCC5/X64/MdeModulePkg/Core/Dxe/DxeMain/DEBUG/DxeCore.dll"

static uint8_t mem[MEM_BYTES];
static const struct efi_img_reader rd = { efi_fake_read, NULL };
static const uint8_t fv_guid[16] = { 0x78, 0x56, 0x34, 0x12, 0xbc, 0x9a, 0xf0, 0xde,
				     0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef };

/* What the callback saw. */
#define SEEN_MAX 8
static struct efi_img seen[SEEN_MAX];
static unsigned nseen;

static int collect(void *ctx, const struct efi_img *img)
{
	(void)ctx;
	assert_true(img->name_len <= EFI_IMG_NAME_MAX);
	assert_int_equal(strlen(img->name), img->name_len);
	if (nseen < SEEN_MAX)
		seen[nseen] = *img;
	nseen++;
	return 0;
}

static int setup(void **state)
{
	(void)state;
	nseen = 0;
	memset(seen, 0, sizeof(seen));
	return 0;
}

/* Three images, each named its own way, and an unloaded one's NULL slot. */
static void test_walk_names(void **state)
{
	struct efi_img_stats st;

	(void)state;
	efi_fake_init(mem, sizeof(mem), 4);
	efi_fake_image(0, 0x10000, 0x3000, PATH_CV, "\\ignored.efi", NULL);
	/* slot 1 stays NULL: an image unloaded since */
	efi_fake_image(2, 0x20000, 0x1000, NULL, NULL, fv_guid);
	efi_fake_image(3, 0x7d8a1000, 0xa00000, NULL, "\\EFI\\linux\\vmlinuz", NULL);
	assert_int_equal(efi_images_walk(&rd, EFI_FAKE_ST, collect, NULL, &st), 0);
	assert_int_equal(nseen, 3);
	assert_int_equal(st.table_size, 4);
	assert_int_equal(st.slots, 4);
	assert_int_equal(st.images, 3);
	assert_int_equal(st.named, 1);
	assert_int_equal(st.empty, 1);
	assert_int_equal(st.skipped, 0);
	assert_false(st.truncated);

	assert_int_equal(seen[0].base, 0x10000);
	assert_int_equal(seen[0].size, 0x3000);
	assert_int_equal(seen[0].slot, 0);
	assert_true(seen[0].debug_path);
	assert_string_equal(seen[0].name, PATH_CV);

	assert_int_equal(seen[1].slot, 2);
	assert_false(seen[1].debug_path);
	assert_string_equal(seen[1].name, "FvFile(12345678-9abc-def0-0123-456789abcdef)");

	/* the kernel's EFI stub: its image outside this memory, named by its file */
	assert_int_equal(seen[2].base, 0x7d8a1000);
	assert_false(seen[2].debug_path);
	assert_string_equal(seen[2].name, "\\EFI\\linux\\vmlinuz");
	assert_int_equal(efi_fake_crossings, 0);
}

/* The callback's nonzero return ends the walk and is returned. */
static int stop_at_first(void *ctx, const struct efi_img *img)
{
	(void)img;
	++*(int *)ctx;
	return 7;
}

static void test_callback_stops(void **state)
{
	int calls = 0;

	(void)state;
	efi_fake_init(mem, sizeof(mem), 2);
	efi_fake_image(0, 0x10000, 0x1000, NULL, "\\a.efi", NULL);
	efi_fake_image(1, 0x11000, 0x1000, NULL, "\\b.efi", NULL);
	assert_int_equal(efi_images_walk(&rd, EFI_FAKE_ST, stop_at_first, &calls, NULL), 7);
	assert_int_equal(calls, 1);
}

/* No table to walk: bad arguments, no signature, no GUID, no array. */
static void test_no_table(void **state)
{
	struct efi_img_stats st;
	struct efi_img_reader none = { NULL, NULL };

	(void)state;
	efi_fake_init(mem, sizeof(mem), 1);
	efi_fake_image(0, 0x10000, 0x1000, NULL, "\\a.efi", NULL);
	assert_int_equal(efi_images_walk(NULL, EFI_FAKE_ST, collect, NULL, &st), EFI_IMG_ERR_ARG);
	assert_int_equal(efi_images_walk(&none, EFI_FAKE_ST, collect, NULL, &st), EFI_IMG_ERR_ARG);
	assert_int_equal(efi_images_walk(&rd, EFI_FAKE_ST, NULL, NULL, &st), EFI_IMG_ERR_ARG);
	assert_int_equal(efi_images_walk(&rd, 0, collect, NULL, &st), EFI_IMG_ERR_ARG);
	/* not a system table: elsewhere, or its signature wrong */
	assert_int_equal(efi_images_walk(&rd, EFI_FAKE_ST + 8, collect, NULL, &st),
			 EFI_IMG_ERR_NO_TABLE);
	efi_fake_w(EFI_FAKE_ST, 0x5453595320494248ull, 8);
	assert_int_equal(efi_images_walk(&rd, EFI_FAKE_ST, collect, NULL, &st),
			 EFI_IMG_ERR_NO_TABLE);
	efi_fake_w(EFI_FAKE_ST, 0x5453595320494249ull, 8);
	assert_int_equal(efi_images_walk(&rd, EFI_FAKE_ST, collect, NULL, &st), 0);
	assert_int_equal(nseen, 1);
	nseen = 0;
	/* a system table beyond memory */
	assert_int_equal(efi_images_walk(&rd, MEM_BYTES + 0x1000, collect, NULL, &st),
			 EFI_IMG_ERR_NO_TABLE);
	/* no EFI_DEBUG_IMAGE_INFO_TABLE_GUID entry (only the ACPI one) */
	efi_fake_w(EFI_FAKE_ST + 104, 1, 8);
	assert_int_equal(efi_images_walk(&rd, EFI_FAKE_ST, collect, NULL, &st),
			 EFI_IMG_ERR_NO_TABLE);
	/* a header without an array */
	efi_fake_w(EFI_FAKE_ST + 104, 2, 8);
	efi_fake_w(EFI_FAKE_HDR + 8, 0, 8);
	assert_int_equal(efi_images_walk(&rd, EFI_FAKE_ST, collect, NULL, &st),
			 EFI_IMG_ERR_NO_TABLE);
	assert_int_equal(nseen, 0);
}

/*
 * A hostile table: every broken slot is skipped and counted, the good
 * ones still come through, reads stay bounded and inside pages.
 */
static void test_hostile_slots(void **state)
{
	struct efi_img_stats st;

	(void)state;
	efi_fake_init(mem, sizeof(mem), 10);
	efi_fake_image(0, 0x10000, 0, NULL, "\\size0.efi", NULL);                 /* ImageSize 0 */
	efi_fake_image(1, 0x10000, EFI_IMG_SIZE_MAX + 1, NULL, "\\huge.efi", NULL); /* huge */
	efi_fake_image(2, 0, 0x1000, NULL, "\\base0.efi", NULL);                  /* ImageBase 0 */
	efi_fake_image(3, 0xfffffffffffff000ull, 0x2000, NULL, "\\wrap.efi", NULL); /* wraps */
	efi_fake_w(EFI_FAKE_SLOTS + 8 * 4, 0x7fff0000ull, 8);                     /* unreadable entry */
	efi_fake_image(5, 0x10000, 0x1000, NULL, "\\type.efi", NULL);
	efi_fake_w(EFI_FAKE_ENTRY(5), 2, 4);                                       /* not NORMAL */
	efi_fake_image(6, 0x10000, 0x1000, NULL, "\\li.efi", NULL);
	efi_fake_w(EFI_FAKE_ENTRY(6) + 8, 0xfffffffffffffff8ull, 8);               /* protocol wraps */
	efi_fake_image(7, 0x10000, 0x1000, NULL, "\\li0.efi", NULL);
	efi_fake_w(EFI_FAKE_ENTRY(7) + 8, 0, 8);                                   /* no protocol */
	efi_fake_image(8, 0x30000, 0x1000, NULL, "\\good.efi", NULL);
	efi_fake_w(EFI_FAKE_SLOTS + 8 * 9, EFI_FAKE_ENTRY(8), 8);                  /* same entry twice */
	assert_int_equal(efi_images_walk(&rd, EFI_FAKE_ST, collect, NULL, &st), 0);
	assert_int_equal(st.slots, 10);
	assert_int_equal(st.skipped, 8);
	assert_int_equal(st.images, 2);
	assert_int_equal(nseen, 2);
	assert_string_equal(seen[0].name, "\\good.efi");
	assert_string_equal(seen[1].name, "\\good.efi");
	assert_int_equal(efi_fake_crossings, 0);
}

/* TableSize 0xffffffff over an array that ends where memory ends. */
static void test_absurd_table_size(void **state)
{
	struct efi_img_stats st;

	(void)state;
	efi_fake_init(mem, sizeof(mem), 0xffffffffu);
	efi_fake_image(0, 0x30000, 0x1000, NULL, "\\first.efi", NULL);
	/* the array at the memory's last 1 KiB: 128 slots readable, then nothing */
	efi_fake_w(EFI_FAKE_HDR + 8, MEM_BYTES - 1024, 8);
	efi_fake_w(MEM_BYTES - 1024, EFI_FAKE_ENTRY(0), 8);
	assert_int_equal(efi_images_walk(&rd, EFI_FAKE_ST, collect, NULL, &st), 0);
	assert_true(st.truncated);
	assert_int_equal(st.table_size, 0xffffffffu);
	assert_int_equal(st.slots, EFI_IMG_TABLE_MAX);
	assert_int_equal(st.images, 1);
	assert_int_equal(st.empty, 127);
	assert_int_equal(st.skipped, EFI_IMG_TABLE_MAX - 128);
	/* one read per chunk of 64 unreadable slots, not one per slot */
	assert_true(efi_fake_reads < 300);
	/* an array whose slots wrap the address space: all skipped */
	efi_fake_w(EFI_FAKE_HDR + 4, 8, 4);
	efi_fake_w(EFI_FAKE_HDR + 8, 0xfffffffffffffff0ull, 8);
	nseen = 0;
	assert_int_equal(efi_images_walk(&rd, EFI_FAKE_ST, collect, NULL, &st), 0);
	assert_int_equal(st.skipped, 8);
	assert_int_equal(nseen, 0);
	assert_int_equal(efi_fake_crossings, 0);
}

/*
 * Names from memory the guest wrote: a device path that never ends (nodes
 * of 4 bytes forever), one with a node length under 4, an unreadable one,
 * a file path longer than the name bound; PE headers whose debug
 * directory, entries or record lie outside the image or are unterminated.
 * Each image still comes through, with the fallback name or none.
 */
static void test_hostile_names(void **state)
{
	struct efi_img_stats st;
	char longname[EFI_IMG_NAME_MAX + 40];

	(void)state;
	efi_fake_init(mem, sizeof(mem), 8);
	/* 0: device path of 300 vendor nodes of 4 bytes, then a file node: past the bound */
	efi_fake_image(0, 0x30000, 0x1000, NULL, NULL, NULL);
	efi_fake_w(EFI_FAKE_ENTRY(0) + 0x20 + 32, 0x8000, 8);
	for (unsigned i = 0; i < 300; i++) {
		efi_fake_w(0x8000 + 4 * i, 0x0101, 2);
		efi_fake_w(0x8000 + 4 * i + 2, 4, 2);
	}
	efi_fake_w(0x8000 + 4 * 300, 0x0404, 2);
	efi_fake_w(0x8000 + 4 * 300 + 2, 8, 2);
	efi_fake_w(0x8000 + 4 * 300 + 4, 'x', 2);
	/* 1: a node of length 0 (a walk that would never advance) */
	efi_fake_image(1, 0x31000, 0x1000, NULL, NULL, NULL);
	efi_fake_w(EFI_FAKE_ENTRY(1) + 0x20 + 32, 0x9000, 8);
	efi_fake_w(0x9000, 0x0101, 2);
	/* 2: a device path beyond memory */
	efi_fake_image(2, 0x32000, 0x1000, NULL, NULL, NULL);
	efi_fake_w(EFI_FAKE_ENTRY(2) + 0x20 + 32, 0x7ff00000, 8);
	/* 3: a file path longer than the bound (cut), its node length 0xffff */
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	efi_fake_image(3, 0x33000, 0x1000, NULL, NULL, NULL);
	efi_fake_w(EFI_FAKE_ENTRY(3) + 0x20 + 32, 0xa000, 8);
	efi_fake_w(0xa000, 0x0404, 2);
	efi_fake_w(0xa002, 0xffff, 2);
	for (size_t i = 0; i < sizeof(longname); i++)
		efi_fake_w(0xa004 + 2 * i, (uint8_t)longname[i], 2);
	/* 4: a CodeView record with no terminator inside it: the file path instead */
	efi_fake_image(4, 0x34000, 0x1000, "\\unterminated.dll", "\\four.efi", NULL);
	efi_fake_w(0x34000 + 0x200 + 28 + 16, 24 + 4, 4);   /* SizeOfData cuts the path */
	/* 5: a debug directory beyond SizeOfImage */
	efi_fake_image(5, 0x35000, 0x1000, "\\five.dll", "\\five.efi", NULL);
	efi_fake_w(0x35000 + 0x80 + 24 + 112 + 8 * 6, 0x2000, 4);
	/* 6: e_lfanew far outside the copied headers */
	efi_fake_image(6, 0x36000, 0x1000, "\\six.dll", "\\six.efi", NULL);
	efi_fake_w(0x36000 + 0x3c, 0x7ffffff0, 4);
	/* 7: a record larger than the bound, with its path longer than a name */
	efi_fake_image(7, 0x37000, 0x2000, "\\seven.dll", "\\seven.efi", NULL);
	efi_fake_w(0x37000 + 0x200 + 28 + 16, 0x1000, 4);
	memset(mem + 0x37000 + 0x240 + 24, 'p', 0x1000 - 24 - 1);
	assert_int_equal(efi_images_walk(&rd, EFI_FAKE_ST, collect, NULL, &st), 0);
	assert_int_equal(st.images, 8);
	assert_int_equal(st.skipped, 0);
	assert_int_equal(st.named, 0);
	assert_int_equal(nseen, 8);
	assert_string_equal(seen[0].name, "");
	assert_string_equal(seen[1].name, "");
	assert_string_equal(seen[2].name, "");
	assert_int_equal(seen[3].name_len, EFI_IMG_NAME_MAX);
	assert_int_equal(seen[3].name[0], 'a');
	assert_string_equal(seen[4].name, "\\four.efi");
	assert_string_equal(seen[5].name, "\\five.efi");
	assert_string_equal(seen[6].name, "\\six.efi");
	assert_string_equal(seen[7].name, "\\seven.efi");
	assert_int_equal(efi_fake_crossings, 0);
}

/* An image whose headers cannot be read is still listed, by its file. */
static void test_unreadable_image(void **state)
{
	struct efi_img_stats st;

	(void)state;
	efi_fake_init(mem, sizeof(mem), 1);
	efi_fake_image(0, 0x30000, 0x1000, "\\hidden.dll", "\\hidden.efi", NULL);
	efi_fake_deny_lo = 0x30000;
	efi_fake_deny_hi = 0x31000;
	assert_int_equal(efi_images_walk(&rd, EFI_FAKE_ST, collect, NULL, &st), 0);
	assert_int_equal(nseen, 1);
	assert_false(seen[0].debug_path);
	assert_string_equal(seen[0].name, "\\hidden.efi");
}

/* The set of images kept from boot. */
static void test_seen_set(void **state)
{
	static struct efi_img_seen s;

	(void)state;
	memset(&s, 0, sizeof(s));
	assert_false(efi_img_seen_has(&s, 0x1000, 0x1000));
	assert_int_equal(efi_img_seen_add(&s, 0x1000, 0x1000), 0);
	assert_int_equal(efi_img_seen_add(&s, 0x1000, 0x1000), 1);
	assert_true(efi_img_seen_has(&s, 0x1000, 0x1000));
	/* same base, another size: another image (one unloaded, another loaded there) */
	assert_false(efi_img_seen_has(&s, 0x1000, 0x2000));
	for (uint32_t i = 1; i < EFI_IMG_SEEN_MAX; i++)
		assert_int_equal(efi_img_seen_add(&s, 0x100000 + i * 0x1000ull, 0x1000), 0);
	assert_int_equal(s.n, EFI_IMG_SEEN_MAX);
	assert_int_equal(efi_img_seen_add(&s, 0x900000, 0x1000), -1);
	assert_int_equal(s.refused, 1);
	assert_false(efi_img_seen_has(&s, 0x900000, 0x1000));
	assert_true(efi_img_seen_has(&s, 0x100000 + (EFI_IMG_SEEN_MAX - 1) * 0x1000ull, 0x1000));
	/* a count corrupted past the array is not followed */
	s.n = 0xffffffffu;
	assert_false(efi_img_seen_has(&s, 0x900000, 0x1000));
}

/* Boot's reader: memory where it lies. */
static void test_read_direct(void **state)
{
	static const char src[] = "direct";
	char out[sizeof(src)];

	(void)state;
	assert_int_equal(efi_img_read_direct(NULL, (uint64_t)(uintptr_t)src, out, sizeof(src)), 0);
	assert_string_equal(out, "direct");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_walk_names, setup),
		cmocka_unit_test_setup(test_callback_stops, setup),
		cmocka_unit_test_setup(test_no_table, setup),
		cmocka_unit_test_setup(test_hostile_slots, setup),
		cmocka_unit_test_setup(test_absurd_table_size, setup),
		cmocka_unit_test_setup(test_hostile_names, setup),
		cmocka_unit_test_setup(test_unreadable_image, setup),
		cmocka_unit_test_setup(test_seen_set, setup),
		cmocka_unit_test_setup(test_read_direct, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
