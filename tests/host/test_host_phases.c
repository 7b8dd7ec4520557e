/* SPDX-License-Identifier: MIT */
/*
 * test_host_phases.c - `tracevisor report --phases` on a synthetic
 * whole-boot capture shaped as the hypervisor writes it: the firmware's
 * IMAGE records at boot, branches into the OS loader (linuxload.efi) and
 * into the kernel's EFI stub while they run, and only then, at the
 * loader's ExitBootServices, their IMAGE records of kind loader
 * (vmm/trace/images.h), then the kernel.  The loader phase must count the
 * branches that came before its records, by the images' names.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "helpers.h"

static void test_loader_images_recorded_late(void **state)
{
	struct recbuf b = { 0 };
	struct th_tvt t;
	char *path, *cmd, *out = NULL, *err = NULL;
	uint8_t ring[128];

	(void)state;
	rb_time(&b, 1, 1000000000, 0);
	rb_image(&b, TV_IMG_FIRMWARE, 10, 0x7e000000, 0x10000,
		 "/build/OvmfX64/DEBUG_GCC5/X64/DxeCore.dll");
	rb_startstop(&b, TV_REC_START, TV_TRIG_BOOT, 20, 0xfff0);
	rb_branch(&b, TV_BR_CALL, 0x7e000010, 0x7e000100);      /* firmware */
	rb_branch(&b, TV_BR_CALL, 0x7e000010, 0x7e000100);
	rb_branch(&b, TV_BR_CALL, 0x7e000100, 0x7c000010);      /* linuxload.efi */
	rb_branch(&b, TV_BR_JMP, 0x7c000010, 0x7c000010);
	rb_branch(&b, TV_BR_JMP, 0x7c000010, 0x7c000010);
	rb_branch(&b, TV_BR_CALL, 0x7c000010, 0x7b001000);      /* the EFI stub */
	rb_branch(&b, TV_BR_JMP, 0x7b001000, 0x7b001000);
	/* ExitBootServices: the rescan's records */
	rb_image(&b, TV_IMG_LOADER, 500, 0x7c000000, 0x8000, "/src/tests/linux/linuxload.pdb");
	rb_image(&b, TV_IMG_LOADER, 500, 0x7b000000, 0xa00000, "\\EFI\\linux\\vmlinuz");
	rb_branch(&b, TV_BR_JMP, 0x7b001000, 0xffffffff81000000ull);   /* the kernel */
	th_ring(ring, 0, TV_SOURCE_MTF, 0, b.count, 0, 1000000000);
	th_tvt_begin(&t, "lab", 1);
	th_tvt_chunk(&t, 0, TVT_KIND_RING, 0, 0, ring, sizeof(ring));
	th_tvt_records(&t, 0, 0, &b);
	th_tvt_end(&t);
	path = th_tvt_save(&t, "phases.tvt");
	th_tvt_free(&t);
	rb_free(&b);

	assert_true(asprintf(&cmd, "'%s' report '%s' --phases", th_cli(), path) > 0);
	if (th_run(cmd, &out, &err) != 0)
		fail_msg("%s: %s", cmd, err);
	/* 8 branches: 2 firmware, 5 loader (3 loader, 2 stub), 1 kernel */
	if (!th_contains(out, "           2   25.00%        1  firmware\n") ||
	    !th_contains(out, "           5   62.50%        2  loader\n") ||
	    !th_contains(out, "           1   12.50%        1  kernel\n") ||
	    !th_contains(out, "           0    0.00%        0  user\n"))
		fail_msg("phases:\n%s", out);
	/* the loader's functions by the images' names */
	assert_true(th_contains(out, "# loader: hottest functions (2 functions)\n"));
	if (!th_contains(out, "  linuxload+0x10\n") || !th_contains(out, "  vmlinuz+0x1000\n"))
		fail_msg("loader functions:\n%s", out);
	free(cmd);
	free(out);
	free(err);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loader_images_recorded_late),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
