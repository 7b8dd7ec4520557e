/* SPDX-License-Identifier: MIT */
/*
 * test_trace_images.c - the ExitBootServices rescan (vmm/trace/images.c)
 * through the real hypercall path: the thunk's TV_HC_EVENT on a CPU whose
 * guest memory (the engine's reader, fixture engine_mtf.h) holds an EFI
 * debug image info table (tests/unit/vmm/lib/efi_images_fake.h) with one
 * image boot saw and two loaded since (the OS loader, named by its
 * CodeView path; the kernel's EFI stub, by its file path, its headers
 * outside guest memory).  The two new ones become TV_IMG_LOADER records
 * in the calling CPU's ring, before the window the event opens; a second
 * call records nothing again; the log says what happened.
 */
#include "engine_mtf.h"
#include "tests/unit/vmm/lib/efi_images_fake.h"
#include "vmm/trace/images.h"

static struct efi_img_seen known;
static char logbuf[4096];
static size_t loglen;

static void capture(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	if (len > sizeof(logbuf) - 1 - loglen)
		len = sizeof(logbuf) - 1 - loglen;
	memcpy(logbuf + loglen, text, len);
	loglen += len;
	logbuf[loglen] = 0;
}

/* Boot saw \fw.efi; linuxload.efi and the stub were loaded after it. */
static void table(void)
{
	efi_fake_init(gmem, sizeof(gmem), 3);
	efi_fake_image(0, 0x8000, 0x1000, NULL, "\\fw.efi", NULL);
	efi_fake_image(1, 0xa000, 0x2000, "/src/tests/linux/linuxload.pdb", "\\l.efi", NULL);
	efi_fake_image(2, 0x7d8a1000, 0xa00000, NULL, "\\EFI\\linux\\vmlinuz", NULL);
	memset(&known, 0, sizeof(known));
	assert_int_equal(efi_img_seen_add(&known, 0x8000, 0x1000), 0);
	trace_images_init(&known, EFI_FAKE_ST);
	loglen = 0;
	logbuf[0] = 0;
	log_add_sink(capture, NULL);
}

static int64_t ebs_event(void)
{
	regs.rbx = TV_HC_EVENT_EXIT_BOOT_SERVICES;
	regs.rax = TV_HC_EVENT;
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_VMCALL);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 3);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	return (int32_t)regs.rax;
}

static void test_rescan_records_loader_images(void **state)
{
	struct trace_event ev[8];

	(void)state;
	engine(TV_SOURCE_MTF, TV_TRIG_EXIT_BOOT_SERVICES, 0);
	table();
	assert_int_equal(ebs_event(), TV_HC_OK);
	assert_int_equal(events(ev, 8), 3);
	assert_int_equal(ev[0].type, TV_REC_IMAGE);
	assert_int_equal(ev[0].u.image.kind, TV_IMG_LOADER);
	assert_int_equal(ev[0].u.image.base, 0xa000);
	assert_int_equal(ev[0].u.image.size, 0x2000);
	assert_int_equal(ev[0].u.image.name_len, strlen("/src/tests/linux/linuxload.pdb"));
	assert_memory_equal(ev[0].u.image.name, "/src/tests/linux/linuxload.pdb",
			    ev[0].u.image.name_len);
	assert_int_equal(ev[1].type, TV_REC_IMAGE);
	assert_int_equal(ev[1].u.image.kind, TV_IMG_LOADER);
	assert_int_equal(ev[1].u.image.base, 0x7d8a1000);
	assert_int_equal(ev[1].u.image.size, 0xa00000);
	assert_int_equal(ev[1].u.image.name_len, strlen("\\EFI\\linux\\vmlinuz"));
	assert_memory_equal(ev[1].u.image.name, "\\EFI\\linux\\vmlinuz", ev[1].u.image.name_len);
	/* the window the event opens comes after them */
	assert_int_equal(ev[2].type, TV_REC_START);
	assert_int_equal(ev[2].u.startstop.trigger, TV_TRIG_EXIT_BOOT_SERVICES);
	assert_int_equal(known.n, 3);
	assert_non_null(strstr(logbuf, "images: cpu 1: ExitBootServices: 2 images loaded after boot "
				       "recorded as loader (1 with a debug path; 1 known; 0 skipped)"));
	assert_non_null(strstr(logbuf, "images: loader image \\EFI\\linux\\vmlinuz at 0x7d8a1000 "
				       "(10485760 bytes)"));

	/* the loader retries ExitBootServices: nothing recorded twice */
	loglen = 0;
	assert_int_equal(ebs_event(), TV_HC_EBUSY);   /* the window is open already */
	assert_int_equal(events(ev, 8), 3);
	assert_non_null(strstr(logbuf, ": 0 images loaded after boot recorded as loader "
				       "(0 with a debug path; 3 known; 0 skipped)"));
	log_remove_sink(capture);
}

/* Another trace_start: the images are recorded all the same, without a window. */
static void test_rescan_without_window(void **state)
{
	struct trace_event ev[4];

	(void)state;
	table();
	assert_int_equal(ebs_event(), TV_HC_OK);
	assert_false(cpu.trace->b.active);
	assert_int_equal(events(ev, 4), 2);
	assert_int_equal(ev[0].u.image.kind, TV_IMG_LOADER);
	assert_int_equal(ev[1].u.image.kind, TV_IMG_LOADER);
	log_remove_sink(capture);
}

/* Nothing kept at boot (no table then, or no CPU traced): no rescan, no records. */
static void test_no_rescan_without_boot_set(void **state)
{
	struct trace_event ev[4];

	(void)state;
	table();
	memset(&known, 0, sizeof(known));
	assert_int_equal(ebs_event(), TV_HC_OK);
	assert_int_equal(events(ev, 4), 0);
	assert_int_equal(known.n, 0);
	assert_int_equal(trace_images_ebs(&cpu), 0);
	trace_images_init(NULL, EFI_FAKE_ST);
	assert_int_equal(trace_images_ebs(&cpu), 0);
	log_remove_sink(capture);
}

/* The table gone from guest memory: logged, nothing recorded, no fault. */
static void test_table_unreadable(void **state)
{
	struct trace_event ev[4];

	(void)state;
	table();
	efi_fake_w(EFI_FAKE_CONFIG + 24 + 16, 0x7fff0000, 8);   /* header outside guest memory */
	assert_int_equal(ebs_event(), TV_HC_OK);
	assert_int_equal(events(ev, 4), 0);
	assert_non_null(strstr(logbuf, "no debug image info table readable"));
	log_remove_sink(capture);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rescan_records_loader_images, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rescan_without_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_rescan_without_boot_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_unreadable, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
