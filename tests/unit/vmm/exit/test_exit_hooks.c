/* SPDX-License-Identifier: MIT */
/*
 * test_exit_hooks.c - the exit path's hook points (vmm/exit/hooks.h):
 * with nothing registered each has its defined outcome; with a recording
 * set registered each hook is reached once, with the right arguments.
 * Also the one read of the exit reason and the one VM-entry failure
 * decoder, for a failed launch and a failed resume.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/exit/exit.h"
#include "vmm/exit/hooks.h"
#include "vmm/hv.h"
#include "vmm/hw/msr.h"
#include "vmm/lib/log.h"

/* --- fixture: one 64-bit guest CPU on the fake seam --------------------- */

static struct per_cpu cpu;
static struct guest_regs regs;
static char logbuf[64 * 1024];
static size_t loglen;

#define GUEST_RIP 0xffffffff81000000ull
#define EXIT_INFO_NMI   (INTR_INFO_VALID | (INTR_TYPE_NMI << INTR_INFO_TYPE_SHIFT) | 2u)
#define EXIT_INFO_DB    (INTR_INFO_VALID | (INTR_TYPE_HW_EXCEPTION << INTR_INFO_TYPE_SHIFT) | VEC_DB)
#define EPT_QUAL_FETCH_BIT (1ull << 2)

static void vm_set(uint32_t field, uint64_t value) { hw_fake_vmcs_set(field, value); }
static uint64_t vm_get(uint32_t field) { return hw_fake_vmcs_get(field); }

static void capture(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	if (len > sizeof(logbuf) - 1 - loglen)
		len = sizeof(logbuf) - 1 - loglen;
	memcpy(logbuf + loglen, text, len);
	loglen += len;
	logbuf[loglen] = 0;
}

/* --- the recording hooks ----------------------------------------------------- */

static struct {
	unsigned before_entry, nmi_exit, owns_db, db_exit, mtf_exit, ept_fetch, guest_reset;
	unsigned msr_intercepts, msr_read, msr_write;
	struct per_cpu *cpu;          /* the last CPU a hook saw */
	uint32_t reason;              /* before_entry's exit reason */
	uint64_t qual;                /* db_exit's ctx->qualification */
	uint64_t gpa, rax;            /* ept_fetch's arguments */
	uint32_t msr;                 /* msr_read/msr_write's MSR */
	uint64_t value;               /* msr_write's value */
	bool owns;                    /* what owns_db answers */
	bool fetch_ours;              /* what ept_fetch answers */
	int msr_rc;                   /* what msr_read/msr_write return */
} rec;

#define HOOKED_MSR MSR_IA32_DEBUGCTL

static void rec_before_entry(struct per_cpu *c, uint32_t reason)
{
	rec.before_entry++;
	rec.cpu = c;
	rec.reason = reason;
}

static enum exit_action rec_nmi_exit(struct exit_ctx *ctx)
{
	rec.nmi_exit++;
	rec.cpu = ctx->cpu;
	return EXIT_RESUME;
}

static bool rec_owns_db(const struct per_cpu *c)
{
	rec.owns_db++;
	rec.cpu = (struct per_cpu *)(uintptr_t)c;
	return rec.owns;
}

static enum exit_action rec_db_exit(struct exit_ctx *ctx)
{
	rec.db_exit++;
	rec.cpu = ctx->cpu;
	rec.qual = ctx->qualification;
	return EXIT_RESUME;
}

static enum exit_action rec_mtf_exit(struct exit_ctx *ctx)
{
	rec.mtf_exit++;
	rec.cpu = ctx->cpu;
	return EXIT_RESUME;
}

static bool rec_ept_fetch(struct per_cpu *c, uint64_t gpa, uint64_t rax)
{
	rec.ept_fetch++;
	rec.cpu = c;
	rec.gpa = gpa;
	rec.rax = rax;
	return rec.fetch_ours;
}

static void rec_guest_reset(struct per_cpu *c)
{
	rec.guest_reset++;
	rec.cpu = c;
}

static bool rec_msr_intercepts(uint32_t msr, bool write)
{
	(void)write;
	rec.msr_intercepts++;
	return msr == HOOKED_MSR;
}

static int rec_msr_read(struct exit_ctx *ctx, uint32_t msr, uint64_t *value)
{
	rec.msr_read++;
	rec.cpu = ctx->cpu;
	rec.msr = msr;
	*value = 0x1122334455667788ull;
	return rec.msr_rc;
}

static int rec_msr_write(struct exit_ctx *ctx, uint32_t msr, uint64_t value)
{
	rec.msr_write++;
	rec.cpu = ctx->cpu;
	rec.msr = msr;
	rec.value = value;
	return rec.msr_rc;
}

static const struct exit_hooks recording = {
	.before_entry = rec_before_entry,
	.nmi_exit = rec_nmi_exit,
	.owns_db = rec_owns_db,
	.db_exit = rec_db_exit,
	.mtf_exit = rec_mtf_exit,
	.ept_fetch = rec_ept_fetch,
	.guest_reset = rec_guest_reset,
	.msr_intercepts = rec_msr_intercepts,
	.msr_read = rec_msr_read,
	.msr_write = rec_msr_write,
};

static unsigned rec_total(void)
{
	return rec.before_entry + rec.nmi_exit + rec.owns_db + rec.db_exit + rec.mtf_exit +
	       rec.ept_fetch + rec.guest_reset + rec.msr_intercepts + rec.msr_read + rec.msr_write;
}

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	log_add_sink(capture, NULL);
	loglen = 0;
	logbuf[0] = 0;
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	memset(&cpu, 0, sizeof(cpu));
	memset(&regs, 0, sizeof(regs));
	memset(&rec, 0, sizeof(rec));
	cpu.index = 2;
	cpu.proc2 = CPU2_ENABLE_EPT | CPU2_UNRESTRICTED_GUEST;
	cpu.entry_ctls = ENTRY_IA32E_MODE_GUEST | ENTRY_LOAD_EFER;
	vm_set(VMCS_ENTRY_CTLS, cpu.entry_ctls);
	vm_set(VMCS_GUEST_CS_AR, 0xa09b);
	vm_set(VMCS_GUEST_SS_AR, 0xc093);
	vm_set(VMCS_GUEST_CR0, 0x80050033);
	vm_set(VMCS_GUEST_RIP, GUEST_RIP);
	vm_set(VMCS_GUEST_RFLAGS, 0x2);
	exit_hooks_set(NULL);
	return 0;
}

static int setup_recording(void **state)
{
	setup(state);
	exit_hooks_set(&recording);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	exit_hooks_set(NULL);
	return 0;
}

static enum exit_action dispatch(uint32_t reason, uint64_t qual, uint32_t len)
{
	vm_set(VMCS_EXIT_REASON, reason);
	vm_set(VMCS_EXIT_QUALIFICATION, qual);
	vm_set(VMCS_EXIT_INSTRUCTION_LEN, len);
	return vmx_exit_dispatch(&cpu, &regs);
}

static enum exit_action exception_exit(uint32_t info, uint64_t qual)
{
	vm_set(VMCS_EXIT_INTR_INFO, info);
	return dispatch(EXIT_REASON_EXCEPTION_NMI, qual, 0);
}

/* --- nothing registered -------------------------------------------------------- */

static void test_none_registered_is_never_null(void **state)
{
	const struct exit_hooks *h = exit_hooks_get();

	(void)state;
	assert_non_null(h);
	assert_null(h->before_entry);
	assert_null(h->nmi_exit);
	assert_null(h->owns_db);
	assert_null(h->db_exit);
	assert_null(h->mtf_exit);
	assert_null(h->ept_fetch);
	assert_null(h->guest_reset);
	assert_null(h->msr_intercepts);
	assert_null(h->msr_read);
	assert_null(h->msr_write);
}

static void test_none_mtf_is_unknown_exit(void **state)
{
	(void)state;
	assert_int_equal(dispatch(EXIT_REASON_MONITOR_TRAP_FLAG, 0, 0), EXIT_STOP_CPU);
	assert_non_null(strstr(logbuf, "unhandled exit reason 37 (monitor trap flag)"));
	assert_non_null(strstr(logbuf, "vmcs guest:"));
}

static void test_none_db_is_unexpected(void **state)
{
	(void)state;
	assert_int_equal(exception_exit(EXIT_INFO_DB, 0x4000), EXIT_STOP_CPU);
	assert_non_null(strstr(logbuf, "unexpected exception exit, interruption info 0x80000301"));
}

static void test_none_nmi_is_unexpected(void **state)
{
	(void)state;
	cpu.pin = PIN_NMI_EXITING;
	assert_int_equal(exception_exit(EXIT_INFO_NMI, 0), EXIT_STOP_CPU);
	assert_non_null(strstr(logbuf, "unexpected exception exit, interruption info 0x80000202"));
}

static void test_none_triple_fault_resets(void **state)
{
	(void)state;
	assert_int_equal(dispatch(EXIT_REASON_TRIPLE_FAULT, 0, 0), EXIT_RESET_MACHINE);
	assert_non_null(strstr(logbuf, "guest triple fault"));
}

static void test_none_msrs_not_intercepted(void **state)
{
	static uint8_t b[4096];

	(void)state;
	msr_bitmap_build(b);
	assert_false(msr_bitmap_test(b, HOOKED_MSR, false));
	assert_false(msr_bitmap_test(b, HOOKED_MSR, true));
	assert_true(msr_bitmap_test(b, MSR_IA32_FEATURE_CONTROL, false));   /* the table's */
	/* an exit for it anyway (a stale bitmap): unexpected, #GP */
	regs.rcx = HOOKED_MSR;
	assert_int_equal(dispatch(EXIT_REASON_RDMSR, 0, 2), EXIT_RESUME);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0x80000b0d);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP);
}

/* No before-entry hook: the resume path runs to its end all the same. */
static void test_none_before_entry_resumes(void **state)
{
	(void)state;
	vm_set(VMCS_EXIT_REASON, EXIT_REASON_INVD);
	vm_set(VMCS_EXIT_INSTRUCTION_LEN, 2);
	vmx_exit_handler(&cpu, &regs);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP + 2);
	assert_int_equal(cpu.exit_reason, EXIT_REASON_INVD);
	assert_false(cpu.stopped);
}

/* --- each hook reached once, with its arguments ------------------------------ */

static void test_before_entry_gets_the_basic_reason(void **state)
{
	(void)state;
	vm_set(VMCS_EXIT_REASON, EXIT_REASON_INVD);
	vm_set(VMCS_EXIT_INSTRUCTION_LEN, 2);
	vmx_exit_handler(&cpu, &regs);
	assert_int_equal(rec.before_entry, 1);
	assert_ptr_equal(rec.cpu, &cpu);
	assert_int_equal(rec.reason, EXIT_REASON_INVD);
	assert_int_equal(rec_total(), 1);
}

/* An exit that does not resume (a stop) gets no before-entry call. */
static void test_before_entry_not_on_stop(void **state)
{
	jmp_buf env;
	volatile int why;

	(void)state;
	hw_fake_expect_stop(env);
	why = setjmp(env);
	if (why == 0) {
		vm_set(VMCS_EXIT_REASON, EXIT_REASON_RDPMC);   /* no row: unknown */
		vmx_exit_handler(&cpu, &regs);
		fail_msg("the CPU did not stop");
	}
	assert_int_equal(why, HW_FAKE_JUMP_STOP);
	assert_int_equal(rec.before_entry, 0);
	assert_true(cpu.stopped);
}

static void test_nmi_hook(void **state)
{
	(void)state;
	cpu.pin = PIN_NMI_EXITING;
	assert_int_equal(exception_exit(EXIT_INFO_NMI, 0), EXIT_RESUME);
	assert_int_equal(rec.nmi_exit, 1);
	assert_ptr_equal(rec.cpu, &cpu);
	assert_int_equal(rec_total(), 1);
	/* without NMI exiting an NMI exit cannot be the tracer's: unexpected */
	cpu.pin = 0;
	assert_int_equal(exception_exit(EXIT_INFO_NMI, 0), EXIT_STOP_CPU);
	assert_int_equal(rec.nmi_exit, 1);
}

static void test_db_hook_only_when_owned(void **state)
{
	(void)state;
	rec.owns = false;
	assert_int_equal(exception_exit(EXIT_INFO_DB, 0x4000), EXIT_STOP_CPU);
	assert_int_equal(rec.owns_db, 1);
	assert_int_equal(rec.db_exit, 0);
	assert_non_null(strstr(logbuf, "unexpected exception exit"));

	rec.owns = true;
	assert_int_equal(exception_exit(EXIT_INFO_DB, 0x4000), EXIT_RESUME);
	assert_int_equal(rec.owns_db, 2);
	assert_int_equal(rec.db_exit, 1);
	assert_ptr_equal(rec.cpu, &cpu);
	assert_int_equal(rec.qual, 0x4000);                 /* the qualification was read */
	assert_int_equal(rec_total(), 3);
}

static void test_mtf_hook(void **state)
{
	(void)state;
	assert_int_equal(dispatch(EXIT_REASON_MONITOR_TRAP_FLAG, 0, 0), EXIT_RESUME);
	assert_int_equal(rec.mtf_exit, 1);
	assert_ptr_equal(rec.cpu, &cpu);
	assert_int_equal(rec_total(), 1);
	assert_null(strstr(logbuf, "unhandled exit reason"));
}

static void test_ept_fetch_hook(void **state)
{
	struct ept *saved_ept = hv.ept;
	struct page_pool *saved_pool = hv.pool;
	static uint8_t stand_in[64];

	(void)state;
	/* EPT state present (never touched: the hook deals with the fetch) */
	hv.ept = (struct ept *)(void *)stand_in;
	hv.pool = (struct page_pool *)(void *)stand_in;
	rec.fetch_ours = true;
	regs.rax = 0x8000000000000002ull;
	vm_set(VMCS_GUEST_PHYSICAL_ADDRESS, 0x1000040);
	assert_int_equal(dispatch(EXIT_REASON_EPT_VIOLATION, EPT_QUAL_FETCH_BIT, 0), EXIT_RESUME);
	hv.ept = saved_ept;
	hv.pool = saved_pool;
	assert_int_equal(rec.ept_fetch, 1);
	assert_ptr_equal(rec.cpu, &cpu);
	assert_int_equal(rec.gpa, 0x1000040);
	assert_int_equal(rec.rax, 0x8000000000000002ull);
	assert_int_equal(rec_total(), 1);
}

static void test_guest_reset_hook(void **state)
{
	(void)state;
	assert_int_equal(dispatch(EXIT_REASON_TRIPLE_FAULT, 0, 0), EXIT_RESET_MACHINE);
	assert_int_equal(rec.guest_reset, 1);
	assert_ptr_equal(rec.cpu, &cpu);
	assert_int_equal(rec_total(), 1);
}

static void test_msr_hooks(void **state)
{
	static uint8_t b[4096];

	(void)state;
	/* the bitmap asks about every MSR of both ranges, both directions */
	msr_bitmap_build(b);
	assert_int_equal(rec.msr_intercepts, 2 * 2 * 0x2000);
	assert_true(msr_bitmap_test(b, HOOKED_MSR, false));
	assert_true(msr_bitmap_test(b, HOOKED_MSR, true));
	assert_false(msr_bitmap_test(b, HOOKED_MSR + 1, false));
	assert_true(msr_bitmap_test(b, MSR_IA32_FEATURE_CONTROL, false));   /* the table's still */
	memset(&rec, 0, sizeof(rec));

	/* RDMSR: the hook's value in EDX:EAX, RIP past the instruction */
	regs.rcx = 0xffffffff00000000ull | HOOKED_MSR;
	assert_int_equal(dispatch(EXIT_REASON_RDMSR, 0, 2), EXIT_RESUME);
	assert_int_equal(rec.msr_read, 1);
	assert_ptr_equal(rec.cpu, &cpu);
	assert_int_equal(rec.msr, HOOKED_MSR);
	assert_int_equal(regs.rax, 0x55667788);
	assert_int_equal(regs.rdx, 0x11223344);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP + 2);

	/* WRMSR: EDX:EAX handed over */
	vm_set(VMCS_GUEST_RIP, GUEST_RIP);
	regs.rax = 0xffffffff00000003ull;      /* RAX[63:32] ignored */
	regs.rdx = 0x9;
	assert_int_equal(dispatch(EXIT_REASON_WRMSR, 0, 2), EXIT_RESUME);
	assert_int_equal(rec.msr_write, 1);
	assert_int_equal(rec.msr, HOOKED_MSR);
	assert_int_equal(rec.value, 0x900000003ull);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP + 2);
	assert_int_equal(rec.msr_intercepts, 2);  /* one question per exit */

	/* a refusal: #GP(0), RIP stays */
	vm_set(VMCS_GUEST_RIP, GUEST_RIP);
	rec.msr_rc = -1;
	assert_int_equal(dispatch(EXIT_REASON_WRMSR, 0, 2), EXIT_RESUME);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0x80000b0d);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP);

	/* an MSR the hook does not take goes to the table: FEATURE_CONTROL */
	vm_set(VMCS_ENTRY_INTR_INFO, 0);
	regs.rcx = MSR_IA32_FEATURE_CONTROL;
	assert_int_equal(dispatch(EXIT_REASON_RDMSR, 0, 2), EXIT_RESUME);
	assert_int_equal(rec.msr_read, 1);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0);
}

/* --- the exit reason read once; entry failures decoded in one place ---------- */

/*
 * The exit-reason field is read once, by the dispatcher: the MTF hook
 * below changes the field under it, and the rest of the path (before
 * entry) still sees the reason of the exit it handled.
 */
static enum exit_action mtf_scribbles_reason(struct exit_ctx *ctx)
{
	rec.mtf_exit++;
	assert_int_equal(ctx->reason, EXIT_REASON_MONITOR_TRAP_FLAG);
	vm_set(VMCS_EXIT_REASON, EXIT_REASON_EPT_VIOLATION);
	return EXIT_RESUME;
}

static void test_exit_reason_read_once(void **state)
{
	struct exit_hooks h = recording;

	(void)state;
	h.mtf_exit = mtf_scribbles_reason;
	exit_hooks_set(&h);
	vm_set(VMCS_EXIT_REASON, EXIT_REASON_MONITOR_TRAP_FLAG);
	vmx_exit_handler(&cpu, &regs);
	exit_hooks_set(NULL);
	assert_int_equal(rec.mtf_exit, 1);
	assert_int_equal(rec.before_entry, 1);
	assert_int_equal(rec.reason, EXIT_REASON_MONITOR_TRAP_FLAG);
	assert_int_equal(cpu.exit_reason, EXIT_REASON_MONITOR_TRAP_FLAG);
	assert_int_equal(cpu.stats.by_reason[EXIT_REASON_MONITOR_TRAP_FLAG], 1);
	assert_int_equal(cpu.stats.by_reason[EXIT_REASON_EPT_VIOLATION], 0);
}

static void test_failed_launch_unwinds(void **state)
{
	jmp_buf env;
	volatile int why;

	(void)state;
	cpu.launching = true;
	vm_set(VMCS_GUEST_RSP, 0x7fe000);
	hw_fake_expect_stop(env);
	why = setjmp(env);
	if (why == 0) {
		vm_set(VMCS_EXIT_REASON, EXIT_REASON_ENTRY_FAILURE | EXIT_REASON_ENTRY_FAIL_GUEST);
		vm_set(VMCS_EXIT_QUALIFICATION, 4);
		vmx_exit_handler(&cpu, &regs);
		fail_msg("the launch was not unwound");
	}
	assert_int_equal(why, HW_FAKE_JUMP_LAUNCH_FAIL);
	assert_int_equal(hw_fake_launch_fail_rsp, 0x7fe000);
	assert_false(cpu.launching);
	assert_false(cpu.launched);
	/* the dispatcher's decoder, once */
	assert_non_null(strstr(logbuf, "exit: cpu 2: VM entry failed: invalid guest state (exit reason 0x80000021, qualification 4: invalid VMCS link pointer)"));
	assert_null(strstr(strstr(logbuf, "VM entry failed") + 1, "VM entry failed"));
	assert_int_equal(rec.before_entry, 0);
}

static void test_failed_resume_stops(void **state)
{
	jmp_buf env;
	volatile int why;

	(void)state;
	cpu.launched = true;
	hw_fake_expect_stop(env);
	why = setjmp(env);
	if (why == 0) {
		vm_set(VMCS_EXIT_REASON, EXIT_REASON_ENTRY_FAILURE | EXIT_REASON_ENTRY_FAIL_MSR);
		vm_set(VMCS_EXIT_QUALIFICATION, 2);
		vmx_exit_handler(&cpu, &regs);
		fail_msg("the CPU did not stop");
	}
	assert_int_equal(why, HW_FAKE_JUMP_STOP);
	assert_true(cpu.stopped);
	assert_non_null(strstr(logbuf, "VM entry failed: MSR loading (exit reason 0x80000022, qualification 2: MSR-load entry)"));
	assert_int_equal(rec.before_entry, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_none_registered_is_never_null, setup, teardown),
		cmocka_unit_test_setup_teardown(test_none_mtf_is_unknown_exit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_none_db_is_unexpected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_none_nmi_is_unexpected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_none_triple_fault_resets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_none_msrs_not_intercepted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_none_before_entry_resumes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_before_entry_gets_the_basic_reason, setup_recording, teardown),
		cmocka_unit_test_setup_teardown(test_before_entry_not_on_stop, setup_recording, teardown),
		cmocka_unit_test_setup_teardown(test_nmi_hook, setup_recording, teardown),
		cmocka_unit_test_setup_teardown(test_db_hook_only_when_owned, setup_recording, teardown),
		cmocka_unit_test_setup_teardown(test_mtf_hook, setup_recording, teardown),
		cmocka_unit_test_setup_teardown(test_ept_fetch_hook, setup_recording, teardown),
		cmocka_unit_test_setup_teardown(test_guest_reset_hook, setup_recording, teardown),
		cmocka_unit_test_setup_teardown(test_msr_hooks, setup_recording, teardown),
		cmocka_unit_test_setup_teardown(test_exit_reason_read_once, setup_recording, teardown),
		cmocka_unit_test_setup_teardown(test_failed_launch_unwinds, setup_recording, teardown),
		cmocka_unit_test_setup_teardown(test_failed_resume_stops, setup_recording, teardown),
	};

	return cmocka_run_group_tests_name("test_exit_hooks", tests, NULL, NULL);
}
