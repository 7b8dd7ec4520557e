/* SPDX-License-Identifier: MIT */
/*
 * test_trace_btf.c - the BTF backend (vmm/trace/backend/btf.c): DR6 and exit
 * qualification bits, TF/BTF bookkeeping around VM entries, the
 * STI/MOV-SS pending-BS rule, our branch steps (byte-exact records with
 * the kind decoded from guest memory) against the guest's own #DBs
 * (hardware breakpoints, general detect, single-steps before tracing),
 * stray TF after a window, filters and the DEBUGCTL shadow.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/trace/backend/btf.h"
#include "vmm/trace/ring.h"
#include "vmm/lib/x86_decode.h"

#define Q(v) (uint8_t)((v) >> 0), (uint8_t)((v) >> 8), (uint8_t)((v) >> 16), \
	(uint8_t)((v) >> 24), (uint8_t)((v) >> 32), (uint8_t)((v) >> 40),    \
	(uint8_t)((v) >> 48), (uint8_t)((v) >> 56)
#define D(v) (uint8_t)((v) >> 0), (uint8_t)((v) >> 8), (uint8_t)((v) >> 16), \
	(uint8_t)((v) >> 24)

#define HDR 128u
#define DS  4096u
static uint64_t arena[(HDR + DS) / 8];
static struct tv_trace_ring *r = (struct tv_trace_ring *)arena;
static struct btf_state st;

/* Guest memory: a page of code at CODE. */
#define CODE 0x400000ull
static uint8_t code[4096];

static size_t fetch(void *ctx, uint64_t linear, uint8_t *buf, size_t len)
{
	(void)ctx;
	if (linear < CODE || linear >= CODE + sizeof(code))
		return 0;
	if (len > CODE + sizeof(code) - linear)
		len = (size_t)(CODE + sizeof(code) - linear);
	memcpy(buf, code + (linear - CODE), len);
	return len;
}

static int setup(void **state)
{
	(void)state;
	memset(arena, 0xee, sizeof(arena));
	memset(code, 0x90, sizeof(code));   /* NOPs */
	btf_init(&st, 0);
	assert_int_equal(trace_ring_init(r, sizeof(arena), 0, 0, TV_SOURCE_BTF,
					 TV_OVERFLOW_STOP, 0, 0), 0);
	return 0;
}

static void assert_bytes(uint64_t pos, const uint8_t *want, size_t n)
{
	assert_true(pos + n <= r->head);
	assert_memory_equal(trace_ring_data(r) + pos, want, n);
}

/* Arm: start and run one entry with plain state; returns the entry's RFLAGS. */
static uint64_t arm(void)
{
	struct btf_entry e = { .rflags = 0x202 };

	assert_int_equal(btf_start(&st, 0x202), 0);
	btf_prepare_entry(&st, &e);
	assert_int_equal(e.rflags, 0x302);
	return e.rflags;
}

static struct btf_db step(uint64_t from, uint64_t to)
{
	struct btf_db in = {
		.qual = BTF_DR6_BS, .dr6 = BTF_DR6_INIT, .rip = to, .rflags = 0x302,
		.cpl = 0, .mode = X86_MODE_64, .lbr_valid = true, .lbr_from = from, .lbr_to = to,
	};
	return in;
}

static void test_bits(void **state)
{
	(void)state;
	assert_int_equal(BTF_RFLAGS_TF, 0x100);
	assert_int_equal(BTF_DEBUGCTL_LBR, 0x1);
	assert_int_equal(BTF_DEBUGCTL_BTF, 0x2);
	assert_int_equal(BTF_DR6_B0_B3, 0xf);
	assert_int_equal(BTF_DR6_BLD, 0x800);
	assert_int_equal(BTF_DR6_BD, 0x2000);
	assert_int_equal(BTF_DR6_BS, 0x4000);
	assert_int_equal(BTF_DR6_BT, 0x8000);
	assert_int_equal(BTF_DR6_RTM, 0x10000);
	assert_int_equal(BTF_DR6_INIT, 0xffff0ff0);
	assert_int_equal(BTF_DR7_GD, 0x2000);
	assert_int_equal(BTF_PENDING_DBG_BS, 0x4000);
	assert_int_equal(BTF_INTR_STI, 1);
	assert_int_equal(BTF_INTR_MOV_SS, 2);
	assert_int_equal(BTF_DB_VECTOR, 1);
}

static void test_guest_dr6(void **state)
{
	(void)state;
	assert_int_equal(btf_guest_dr6(BTF_DR6_INIT, BTF_DR6_BS, false), 0xffff4ff0);
	assert_int_equal(btf_guest_dr6(BTF_DR6_INIT, 0x2, false), 0xffff0ff2);
	assert_int_equal(btf_guest_dr6(BTF_DR6_INIT, BTF_DR6_BD | 0x1, false), 0xffff2ff1);
	/* RTM and BLD are active low in DR6. */
	assert_int_equal(btf_guest_dr6(BTF_DR6_INIT, BTF_DR6_RTM | BTF_DR6_BS, false), 0xfffe4ff0);
	assert_int_equal(btf_guest_dr6(BTF_DR6_INIT, BTF_DR6_BLD, false), 0xffff07f0);
	/* Our single-step part stripped. */
	assert_int_equal(btf_guest_dr6(BTF_DR6_INIT, BTF_DR6_BS | 0x4, true), 0xffff0ff4);
	/* B3-B0 replaced; BS left from before stays (the CPU never clears it). */
	assert_int_equal(btf_guest_dr6(0xffff4ff1, 0x4, false), 0xffff4ff4);
	/* Reserved bits forced: 10:4 and 31:17 one, 12 and 63:32 zero. */
	assert_int_equal(btf_guest_dr6(0xffffffff00001000ull, 0, false), 0xffff0ff0);
}

static void test_entry_bookkeeping(void **state)
{
	struct btf_entry e = { .rflags = 0x202 };

	(void)state;
	btf_debugctl_write(&st, 0x40);
	/* Not tracing: nothing changes. */
	btf_prepare_entry(&st, &e);
	assert_int_equal(e.rflags, 0x202);
	assert_int_equal(e.debugctl, 0x40);
	assert_false(btf_intercept_db(&st));
	/* Tracing: TF, BTF and LBR. */
	assert_int_equal(btf_start(&st, 0x202), 0);
	assert_true(btf_intercept_db(&st));
	btf_prepare_entry(&st, &e);
	assert_int_equal(e.rflags, 0x302);
	assert_int_equal(e.debugctl, 0x43);
	assert_true(st.tf_armed);
	/* The guest reads its own DEBUGCTL back. */
	assert_int_equal(btf_debugctl_read(&st), 0x40);
	/* Stop: our TF goes, the shadow stays; #DB stays intercepted (lingering TF). */
	btf_stop(&st);
	btf_prepare_entry(&st, &e);
	assert_int_equal(e.rflags, 0x202);
	assert_int_equal(e.debugctl, 0x40);
	assert_false(st.tf_armed);
	assert_true(btf_intercept_db(&st));
	/* A TF we did not set is left alone when not tracing. */
	e.rflags = 0x302;
	btf_prepare_entry(&st, &e);
	assert_int_equal(e.rflags, 0x302);
}

static void test_start_refusals(void **state)
{
	(void)state;
	assert_int_equal(btf_start(NULL, 0), BTF_ERR_INVAL);
	assert_int_equal(btf_start(&st, 0x302), BTF_ERR_GUEST_TF);
	btf_debugctl_write(&st, BTF_DEBUGCTL_BTF);
	assert_int_equal(btf_start(&st, 0x202), BTF_ERR_GUEST_TF);
	btf_debugctl_write(&st, 0);
	assert_int_equal(btf_start(&st, 0x202), 0);
	assert_int_equal(btf_start(&st, 0x202), BTF_ERR_BUSY);
	assert_string_equal(btf_strerror(BTF_ERR_GUEST_TF),
			    "the guest single-steps itself (RFLAGS.TF or DEBUGCTL.BTF)");
	assert_string_equal(btf_strerror(BTF_ERR_BUSY), "BTF tracing already on");
	assert_string_equal(btf_strerror(BTF_ERR_INVAL), "invalid argument");
	assert_string_equal(btf_strerror(0), "success");
	assert_string_equal(btf_strerror(7), "unknown error");
}

/* SDM 3C 27.3.1.5: pending BS with STI/MOV-SS blocking or HLT. */
static void test_pending_bs_rule(void **state)
{
	struct btf_entry e;

	(void)state;
	/* Tracing (TF = BTF = 1) with STI blocking: BS must be 0. */
	assert_int_equal(btf_start(&st, 0x202), 0);
	e = (struct btf_entry){ .rflags = 0x202, .pending_dbg = BTF_PENDING_DBG_BS | 0x1,
				.interruptibility = BTF_INTR_STI };
	btf_prepare_entry(&st, &e);
	assert_int_equal(e.pending_dbg, 0x1);
	/* Without blocking the field is left alone. */
	e = (struct btf_entry){ .rflags = 0x202, .pending_dbg = BTF_PENDING_DBG_BS };
	btf_prepare_entry(&st, &e);
	assert_int_equal(e.pending_dbg, BTF_PENDING_DBG_BS);
	/* Not tracing, the guest's own TF (BTF 0) with MOV-SS blocking: BS must be 1. */
	btf_stop(&st);
	st.tf_armed = false;
	e = (struct btf_entry){ .rflags = 0x302, .interruptibility = BTF_INTR_MOV_SS };
	btf_prepare_entry(&st, &e);
	assert_int_equal(e.pending_dbg, BTF_PENDING_DBG_BS);
	/* HLT counts as blocking; TF 0: BS 0. */
	e = (struct btf_entry){ .rflags = 0x202, .pending_dbg = BTF_PENDING_DBG_BS,
				.activity = BTF_ACTIVITY_HLT };
	btf_prepare_entry(&st, &e);
	assert_int_equal(e.pending_dbg, 0);
}

/* Two branch steps: a full record, then a compact one; kinds from the code. */
static void test_our_steps_byte_exact(void **state)
{
	struct btf_db_result out;
	struct btf_db in;

	(void)state;
	/* 0x400ff0: call rel32 -> 0x401000; 0x401020: jmp rel8 -> 0x401040. */
	code[0xff0] = 0xe8;
	code[0xff1] = 0x0b; code[0xff2] = 0; code[0xff3] = 0; code[0xff4] = 0;
	arm();
	in = step(0x400ff0, 0x401000);
	assert_int_equal(btf_on_db(&st, r, NULL, &in, fetch, NULL, &out), 0);
	assert_int_equal(out.action, BTF_RESUME);
	assert_true(out.recorded);
	assert_int_equal(out.rflags, 0x302);   /* TF stays for the next branch */
	const uint8_t want1[24] = {
		TV_REC_BRANCH, TV_BR_CALL, 24, 0, D(0), Q(0x400ff0ull), Q(0x401000ull),
	};
	assert_bytes(0, want1, sizeof(want1));

	memset(code, 0x90, sizeof(code));
	in = step(0x401020, 0x401040);
	assert_int_equal(btf_on_db(&st, r, NULL, &in, NULL, NULL, &out), 0);
	/* No fetch: kind unknown; from - prev to = 0x20 fits a compact record. */
	const uint8_t want2[16] = {
		TV_REC_BRANCH_COMPACT, TV_BR_UNKNOWN, 16, 0, D(0x20), Q(0x401040ull),
	};
	assert_bytes(24, want2, sizeof(want2));
	assert_int_equal(r->head, 40);
	assert_int_equal(st.stats.steps, 2);
	assert_int_equal(st.stats.recorded, 2);
	assert_int_equal(st.stats.reflected, 0);
}

static void test_lbr_mismatch_records_unknown_from(void **state)
{
	struct btf_db_result out;
	struct btf_db in;

	(void)state;
	arm();
	in = step(0x400100, 0x400200);
	in.rip = 0x400300;                 /* the LBR top ends elsewhere: stale */
	assert_int_equal(btf_on_db(&st, r, NULL, &in, fetch, NULL, &out), 0);
	const uint8_t want[24] = {
		TV_REC_BRANCH, TV_BR_UNKNOWN, 24, 0, D(0), Q(0ull), Q(0x400300ull),
	};
	assert_bytes(0, want, sizeof(want));
	assert_int_equal(st.stats.from_unknown, 1);
	/* Outside 64-bit mode `to` is linear: CS base + EIP. */
	in = step(0x10100, 0x10200);
	in.mode = X86_MODE_32;
	in.cs_base = 0x10000;
	in.rip = 0x200;
	assert_int_equal(btf_on_db(&st, r, NULL, &in, NULL, NULL, &out), 0);
	assert_int_equal(st.stats.from_unknown, 1);
	assert_int_equal(st.stats.recorded, 2);
}

/* A hardware breakpoint while tracing: the guest's, TF hidden from its frame. */
static void test_hw_breakpoint_reflected(void **state)
{
	struct btf_db_result out;
	struct btf_entry e;
	struct btf_db in;

	(void)state;
	arm();
	in = step(0, 0x400500);
	in.qual = 0x1;                     /* B0, no BS */
	assert_int_equal(btf_on_db(&st, r, NULL, &in, NULL, NULL, &out), 0);
	assert_int_equal(out.action, BTF_REFLECT);
	assert_int_equal(out.dr6, 0xffff0ff1);
	assert_int_equal(out.rflags, 0x202);
	assert_false(out.clear_dr7_gd);
	assert_false(out.recorded);
	assert_int_equal(r->head, 0);
	/* The injecting entry does not arm TF; the one after does. */
	e = (struct btf_entry){ .rflags = out.rflags };
	btf_prepare_entry(&st, &e);
	assert_int_equal(e.rflags, 0x202);
	assert_int_equal(e.debugctl, 0x3);
	btf_prepare_entry(&st, &e);
	assert_int_equal(e.rflags, 0x302);
	assert_int_equal(st.stats.reflected, 1);
}

/* A branch that also hit a breakpoint: recorded, and reflected without BS. */
static void test_branch_and_breakpoint(void **state)
{
	struct btf_db_result out;
	struct btf_db in;

	(void)state;
	arm();
	in = step(0x400010, 0x400020);
	in.qual = BTF_DR6_BS | 0x2;
	assert_int_equal(btf_on_db(&st, r, NULL, &in, NULL, NULL, &out), 0);
	assert_int_equal(out.action, BTF_REFLECT);
	assert_true(out.recorded);
	assert_int_equal(out.dr6, 0xffff0ff2);
	assert_int_equal(out.rflags, 0x202);
	assert_int_equal(st.stats.steps, 1);
}

static void test_general_detect(void **state)
{
	struct btf_db_result out;
	struct btf_db in;

	(void)state;
	arm();
	in = step(0, 0x400020);
	in.qual = BTF_DR6_BD;
	in.lbr_valid = false;
	assert_int_equal(btf_on_db(&st, r, NULL, &in, NULL, NULL, &out), 0);
	assert_int_equal(out.action, BTF_REFLECT);
	assert_true(out.clear_dr7_gd);
	assert_int_equal(out.dr6, 0xffff2ff0);
}

/* Before any tracing a single-step is the guest's own: reflected with BS. */
static void test_guest_single_step_before_tracing(void **state)
{
	struct btf_db_result out;
	struct btf_db in = step(0, 0x400020);

	(void)state;
	assert_int_equal(btf_on_db(&st, r, NULL, &in, NULL, NULL, &out), 0);
	assert_int_equal(out.action, BTF_REFLECT);
	assert_int_equal(out.dr6, 0xffff4ff0);
	assert_int_equal(out.rflags, 0x302);   /* the guest's TF is the guest's */
	assert_int_equal(r->head, 0);
	assert_int_equal(st.stats.steps, 0);
}

/* After a window: TF restored from a frame pushed while armed is swallowed. */
static void test_stray_after_stop(void **state)
{
	struct btf_entry e = { .rflags = 0x302 };
	struct btf_db_result out;
	struct btf_db in;

	(void)state;
	arm();
	btf_stop(&st);
	btf_prepare_entry(&st, &e);
	assert_int_equal(e.rflags, 0x202);
	in = step(0x400000, 0x400040);     /* an IRET put TF back */
	assert_int_equal(btf_on_db(&st, r, NULL, &in, NULL, NULL, &out), 0);
	assert_int_equal(out.action, BTF_RESUME);
	assert_int_equal(out.rflags, 0x202);
	assert_false(out.recorded);
	assert_int_equal(st.stats.stray, 1);
	assert_int_equal(r->head, 0);
	/* A breakpoint then is still the guest's. */
	in.qual = 0x8;
	assert_int_equal(btf_on_db(&st, r, NULL, &in, NULL, NULL, &out), 0);
	assert_int_equal(out.action, BTF_REFLECT);
	assert_int_equal(out.dr6, 0xffff0ff8);
}

static void test_filters(void **state)
{
	struct btf_db_result out;
	struct trace_filter f;
	struct btf_db in;

	(void)state;
	trace_filter_all(&f);
	f.cpl = TRACE_CPL_KERNEL;
	arm();
	in = step(0x400010, 0x400020);
	in.cpl = 3;
	assert_int_equal(btf_on_db(&st, r, &f, &in, NULL, NULL, &out), 0);
	assert_false(out.recorded);
	assert_int_equal(out.action, BTF_RESUME);
	assert_int_equal(st.stats.filtered, 1);
	f.cpl = TRACE_CPL_ALL;
	f.cr3 = 0x5000;
	in.cr3 = 0x6000;
	assert_int_equal(btf_on_db(&st, r, &f, &in, NULL, NULL, &out), 0);
	assert_int_equal(st.stats.filtered, 2);
	in.cr3 = 0x5018;                   /* PCID / flag bits ignored */
	f.nranges = 1;
	f.ranges[0].lo = 0x400020;
	f.ranges[0].hi = 0x400020;
	assert_int_equal(btf_on_db(&st, r, &f, &in, NULL, NULL, &out), 0);
	assert_true(out.recorded);
	assert_int_equal(r->head, 24);
	assert_int_equal(btf_on_db(NULL, r, &f, &in, NULL, NULL, &out), BTF_ERR_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_bits, setup),
		cmocka_unit_test_setup(test_guest_dr6, setup),
		cmocka_unit_test_setup(test_entry_bookkeeping, setup),
		cmocka_unit_test_setup(test_start_refusals, setup),
		cmocka_unit_test_setup(test_pending_bs_rule, setup),
		cmocka_unit_test_setup(test_our_steps_byte_exact, setup),
		cmocka_unit_test_setup(test_lbr_mismatch_records_unknown_from, setup),
		cmocka_unit_test_setup(test_hw_breakpoint_reflected, setup),
		cmocka_unit_test_setup(test_branch_and_breakpoint, setup),
		cmocka_unit_test_setup(test_general_detect, setup),
		cmocka_unit_test_setup(test_guest_single_step_before_tracing, setup),
		cmocka_unit_test_setup(test_stray_after_stop, setup),
		cmocka_unit_test_setup(test_filters, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
