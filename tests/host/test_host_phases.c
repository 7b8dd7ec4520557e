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
#include "pt_fixture.h"

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
	/* branch records: instructions unknown, never invented */
	if (!th_contains(out, "           -            -        -            -        -  loader\n") ||
	    !th_contains(out, "instructions per phase: unknown ('-')"))
		fail_msg("instructions:\n%s", out);
	/* the loader's functions by the images' names */
	assert_true(th_contains(out, "# loader: hottest functions (2 functions)\n"));
	if (!th_contains(out, "  linuxload+0x10\n") || !th_contains(out, "  vmlinuz+0x1000\n"))
		fail_msg("loader functions:\n%s", out);
	free(cmd);
	free(out);
	free(err);
	free(path);
}

/* One --phases line of the instructions table: its numbers, by phase name. */
struct insn_row {
	char insns[32], bytes[32], errors[32], skipped[32], decoded[32];
};

static void insn_row(const char *out, const char *phase, struct insn_row *r)
{
	const char *t = strstr(out, "  phase\n");
	char name[32];

	/* the second table's header (the first one's is "blocks  phase") */
	assert_non_null(t);
	assert_non_null(t = strstr(t + 1, "decoded  phase\n"));
	t = strchr(t, '\n') + 1;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(sscanf(t, "%31s %31s %31s %31s %31s %31s", r->insns, r->bytes,
					r->errors, r->skipped, r->decoded, name), 6);
		if (!strcmp(name, phase))
			return;
		t = strchr(t, '\n') + 1;
	}
	fail_msg("no %s line:\n%s", phase, out);
}

/* report --phases; want_rc: its exit status (decode errors: 3, EXIT_DAMAGED). */
/* decoded = insns / (insns + skipped x insns per ptbyte, the phase's else all's). */
static void expect_decoded(const struct insn_row *r, const struct insn_row *other,
			   const char *out)
{
	double insns = strtod(r->insns, NULL), bytes = strtod(r->bytes, NULL);
	double all_i = insns + strtod(other->insns, NULL);
	double all_b = bytes + strtod(other->bytes, NULL);
	double rate = bytes > 0 ? insns / bytes : all_i / all_b;
	char want[32];

	snprintf(want, sizeof(want), "%.2f%%",
		 100.0 * insns / (insns + strtod(r->skipped, NULL) * rate));
	if (strcmp(r->decoded, want))
		fail_msg("decoded %s, want %s:\n%s", r->decoded, want, out);
}

static char *report_phases(const char *path, const char *extra, int want_rc)
{
	char *cmd, *out = NULL, *err = NULL;
	int rc;

	assert_true(asprintf(&cmd, "'%s' report '%s' --phases %s", th_cli(), path, extra) > 0);
	rc = th_run(cmd, &out, &err);
	if (rc != want_rc)
		fail_msg("%s: exit %d: %s", cmd, rc, err);
	free(cmd);
	free(err);
	return out;
}

/*
 * A PT capture of the fixture program (pt_fixture.h) whose `func` (add,
 * ret) is an IMAGE record of kind loader, the rest firmware (lower half
 * before the kernel).  CPU 1: two runs, the first broken at func's ret
 * (a decode error: loader), the second whole.  CPU 2: a run cut short by
 * a loss (PT_SYNC) after its last TNT, then a whole run.  Instructions by
 * construction: a whole run executes fx.flow (20: 6 in func); the broken
 * one i_mov, i_call, then func's two before the error; the cut one all but
 * the last four (i_lea, i_jmp need the TIP that was lost, i_nop, i_jmp2),
 * 10 firmware, 6 in func, of which the last two (i_dec, i_jnz after the
 * last ret) are the run's end, after its last branch.  Both decoders
 * count the same.
 */
static void test_pt_instructions_per_phase(void **state)
{
	struct pt_fixture fx;
	struct recbuf b = { 0 }, rb_cut = { 0 };
	struct th_tvt t;
	struct insn_row fw, ld, kn, us;
	uint8_t pt[1024], pt2[1024];
	size_t len = 0, run1, off[PTF_NPACKETS + 1], len2, cut, resume;
	uint64_t func, in_func = 0;
	char *path, *image, *out, *out_ipt, *want;

	(void)state;
	assert_int_equal(ptf_build(&fx), 0);
	func = ptf_sym(&fx, "func");
	for (unsigned i = 0; i < fx.nflow; i++)
		in_func += fx.flow[i] >= func && fx.flow[i] < func + 4;
	assert_int_equal(fx.nflow, 20);
	assert_int_equal(in_func, 6);
	ptf_encode_at(&fx, pt, sizeof(pt), &len, 0, off);
	run1 = len;
	ptf_encode(&fx, pt, sizeof(pt), &len, 1);
	ptf_encode_cut(&fx, pt2, sizeof(pt2), &len2, &cut, &resume);

	rb_time(&b, 1, 1000000000, 0);
	rb_image(&b, TV_IMG_LOADER, 10, func, 4, "/src/loaderfunc.pdb");
	rb_pt_sync(&rb_cut, 100, cut, 1);
	th_tvt_begin(&t, "lab", 1);
	th_tvt_records(&t, 0, 0, &b);
	th_tvt_chunk(&t, 1, TVT_KIND_PT, 0, 0, pt, len);
	th_tvt_chunk(&t, 2, TVT_KIND_PT, 0, 0, pt2, len2);
	th_tvt_records(&t, 2, 0, &rb_cut);
	th_tvt_end(&t);
	path = th_tvt_save(&t, "phases-pt.tvt");
	th_tvt_free(&t);
	rb_free(&b);
	rb_free(&rb_cut);
	assert_true(asprintf(&image, "--image '%s'", fx.elf) > 0);

	out = report_phases(path, image, 3);
	insn_row(out, "firmware", &fw);
	insn_row(out, "loader", &ld);
	insn_row(out, "kernel", &kn);
	insn_row(out, "user", &us);
	/* firmware: the whole runs' 2 x 14, the broken run's i_mov, i_call, the cut's 10 */
	if (strcmp(fw.insns, "40") || strcmp(fw.errors, "0") || strcmp(fw.skipped, "0") ||
	    strcmp(fw.decoded, "100.00%"))
		fail_msg("firmware:\n%s", out);
	/*
	 * loader: 2 x 6, the cut run's 6, and func's add, ret before the error
	 * (a TNT bit 0 for the compressed ret); skipped: from the TNT (ptfast's
	 * offset: the packet) to the whole run's PSB.
	 */
	if (strcmp(ld.insns, "20") || strcmp(ld.errors, "1"))
		fail_msg("loader:\n%s", out);
	assert_int_equal(strtoull(ld.skipped, NULL, 10), run1 - off[PTF_TNT]);
	expect_decoded(&ld, &fw, out);
	if (strcmp(kn.insns, "0") || strcmp(kn.errors, "0") || strcmp(kn.decoded, "-") ||
	    strcmp(us.insns, "0") || strcmp(us.decoded, "-"))
		fail_msg("kernel, user:\n%s", out);
	assert_true(th_contains(out, "an estimate of the insns in the skipped bytes"));

	/* libipt: the same instructions and errors per phase */
	assert_true(asprintf(&want, "%s --decoder libipt", image) > 0);
	out_ipt = report_phases(path, want, 3);
	{
		struct insn_row fw2, ld2;

		insn_row(out_ipt, "firmware", &fw2);
		insn_row(out_ipt, "loader", &ld2);
		if (strcmp(fw2.insns, fw.insns) || strcmp(ld2.insns, ld.insns) ||
		    strcmp(fw2.errors, fw.errors) || strcmp(ld2.errors, ld.errors))
			fail_msg("fast:\n%s\nlibipt:\n%s", out, out_ipt);
		/* libipt's error offset: after the TNT it failed on */
		assert_int_equal(strtoull(ld2.skipped, NULL, 10), run1 - off[PTF_TNT + 1]);
		expect_decoded(&ld2, &fw2, out_ipt);
	}
	free(want);
	free(out_ipt);
	free(out);
	free(image);
	free(path);
	ptf_free(&fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loader_images_recorded_late),
		cmocka_unit_test(test_pt_instructions_per_phase),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
