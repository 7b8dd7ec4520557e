/* SPDX-License-Identifier: MIT */
/*
 * test_engine_pt_wait.c - the PT backend's full byte ring under each
 * overflow policy (fixture: ../engine_hw.h, the PT part as in
 * test_engine_pt.c): wait holds the CPU until the exporter (the test's
 * pump) has taken bytes, so the whole stream arrives; after wait_ms
 * without room the refused bytes are a counted gap and the window goes
 * on; overwrite never closes the window on a full ring either.
 */
#include "../engine_hw.h"

#include "vmm/trace/stall.h"

#define PT_PA      0x1000000ull
#define RTIT_MASK     0x561u
#define RTIT_CTL      0x570u
#define RTIT_STATUS   0x571u
#define GLOBAL_STATUS 0x38eu

/* The default PT area (pt_buffer_kb and pt_topa_kb unset). */
#define DEF_PT_REGION_BYTES (64u * 1024)
#define DEF_PT_REGIONS      4u
#define DEF_PT_OUT_BYTES    (DEF_PT_REGIONS * DEF_PT_REGION_BYTES)
#define DEF_PT_RING_BYTES   (1024u * 1024)
#define DEF_PT_AREA_BYTES   (1344u * 1024)

static uint8_t pt_area[DEF_PT_AREA_BYTES] __attribute__((aligned(65536)));

/* source = pt on the Kaby Lake R of test_engine_pt.c, overflow = policy. */
static void pt_engine_policy(uint8_t policy, uint32_t wait_ms)
{
	struct trace_setup s;

	hw_fake_set_cpuid(0, 0, 0x16, 0x756e6547, 0x6c65746e, 0x49656e69);
	hw_fake_set_cpuid(1, 0, 0x000806ea, 0x00100800, 0x7ffafbff, 0xbfebfbff);
	hw_fake_set_cpuid(7, 0, 0x00000000, 0x029c67af, 0x00000000, 0xbc002e00);
	hw_fake_set_cpuid(0x14, 0, 0x00000001, 0x0000000f, 0x00000007, 0x00000000);
	hw_fake_set_cpuid(0x14, 1, 0x02490002, 0x003f3fff, 0x00000000, 0x00000000);
	hw_fake_set_cpuid(0x80000000u, 0, 0x80000008u, 0, 0, 0);
	hw_fake_set_cpuid(0x80000008u, 0, 0x00003027, 0, 0, 0);
	hw_fake_set_msr(MSR_IA32_VMX_BASIC, VMX_BASIC_TRUE_CTLS);
	hw_fake_set_msr(MSR_IA32_VMX_MISC, 1ull << 14);
	hw_fake_set_msr(MSR_IA32_VMX_TRUE_ENTRY_CTLS, (uint64_t)ENTRY_LOAD_RTIT_CTL << 32);
	hw_fake_set_msr(MSR_IA32_VMX_TRUE_EXIT_CTLS, (uint64_t)EXIT_CLEAR_RTIT_CTL << 32);
	hw_fake_set_msr(RTIT_CTL, 0);
	hw_fake_set_msr(RTIT_STATUS, 0);
	hw_fake_set_msr(RTIT_MASK, 0x7f);
	hw_fake_set_msr(GLOBAL_STATUS, 0);
	cpu.entry_ctls |= ENTRY_LOAD_RTIT_CTL;
	cpu.exit_ctls |= EXIT_CLEAR_RTIT_CTL;
	assert_int_equal(trace_cpu_init(&cpu, ring_mem, sizeof(ring_mem), 1, 7,
					TV_SOURCE_PT, (enum tv_overflow)policy, 100000000, 0), 0);
	memset(pt_area, 0xcc, sizeof(pt_area));
	assert_int_equal(trace_cpu_pt_area(&cpu, pt_area, PT_PA), 0);
	engine(TV_SOURCE_PT, TV_TRIG_HYPERCALL, 0, TRACE_CPL_ALL);
	s = *trace_engine_setup();
	s.overflow = policy;
	s.wait_ms = wait_ms;
	trace_engine_init(&s, read_phys, NULL, on_window);
}

static uint8_t pt_byte(uint64_t p, unsigned k)
{
	return (uint8_t)(p * 7 + k * 13 + 1);
}

/* The guest ran and PT wrote n bytes from the start of the output (test_engine_pt.c). */
static void pt_hw_write(uint64_t n, unsigned k)
{
	uint64_t idx, off;

	assert_true(n <= DEF_PT_OUT_BYTES);
	assert_int_equal(hw_fake_get_msr(RTIT_MASK), 0x7f);   /* rewound */
	for (uint64_t p = 0; p < n; p++)
		pt_area[p] = pt_byte(p, k);
	idx = n / DEF_PT_REGION_BYTES;
	off = n % DEF_PT_REGION_BYTES;
	if (idx == DEF_PT_REGIONS) {
		idx--;
		off = DEF_PT_REGION_BYTES;
	}
	hw_fake_set_msr(RTIT_MASK, 0x7f | idx << 7 | off << 32);
}

/* --- the exporter: takes the whole PT stream into got[] --------------------------- */

#define BURST   250000u
#define BURSTS  6u

static uint8_t got[BURSTS * BURST];
static struct {
	bool dead;
	uint32_t calls;
	uint64_t taken;
	uint64_t heard;
} ex;

static void take_all(void)
{
	uint64_t off = ~0ull;
	size_t n = trace_pt_take(&cpu, got + ex.taken, sizeof(got) - ex.taken, &off);

	if (n)
		assert_int_equal(off, ex.taken);
	ex.taken += n;
}

static void pump(void *ctx, uint32_t c)
{
	(void)ctx;
	assert_int_equal(c, 1);
	ex.calls++;
	if (!ex.dead)
		take_all();
}

static uint64_t heard(void *ctx)
{
	(void)ctx;
	return ex.heard;
}

static void exporter(bool dead)
{
	struct trace_stall_ops so = { pump, heard, NULL, &cpu, 1 };

	memset(&ex, 0, sizeof(ex));
	ex.dead = dead;
	trace_stall_set_ops(&so);
}

static int teardown_wait(void **state)
{
	trace_stall_set_ops(NULL);
	return teardown(state);
}

/* bursts of BURST bytes, one exit each */
static void run_bursts(unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		pt_hw_write(BURST, k);
		cpuid_exit(0x1200 + 2 * k);
	}
}

static void assert_stream_intact(unsigned bursts)
{
	assert_int_equal(ex.taken, (uint64_t)bursts * BURST);
	for (unsigned k = 0; k < bursts; k++)
		for (uint64_t p = 0; p < BURST; p++)
			if (got[k * BURST + p] != pt_byte(p, k))
				fail_msg("stream byte %llu: %#x, want %#x",
					 (unsigned long long)(k * BURST + p), got[k * BURST + p],
					 pt_byte(p, k));
}

/*
 * wait: more than the byte ring holds (6 x 250000 > 1 MiB) without an
 * export in between: the drain that does not fit waits, the exporter
 * takes the bytes, every byte arrives in order, nothing is lost, the
 * window stays open until the guest stops it.
 */
static void test_pt_wait_loses_nothing(void **state)
{
	(void)state;
	pt_engine_policy(TV_OVERFLOW_WAIT, 2000);
	exporter(false);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	run_bursts(BURSTS);
	assert_true(ex.calls >= 1);
	assert_int_equal(windows_done, 0);
	assert_true(trace_cpu_active(&cpu));
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	take_all();
	assert_stream_intact(BURSTS);
	assert_non_null(strstr(logbuf, "window 1 stopped (hypercall): 1500000 PT bytes (stream at 1500000), 8 drains, 0 stops, 0 errors, 0 bad pointers, 0 bytes refused, 0 drain failures, PT lost 0;"));
	assert_non_null(strstr(logbuf, "trace: cpu 1: window 1 stalled 1 times for "));
}

/*
 * wait with the receiver gone: after wait_ms the refused bytes are a
 * counted gap (PT lost), the window goes on; the next full drain does
 * not wait and is counted too.
 */
static void test_pt_wait_bound_counts_the_gap(void **state)
{
	(void)state;
	pt_engine_policy(TV_OVERFLOW_WAIT, 10);
	exporter(true);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	hw_fake_set_tsc_step(10000);
	run_bursts(5);                              /* the fifth: 201424 bytes refused */
	hw_fake_set_tsc_step(1);
	assert_true(ex.calls > 0);
	assert_true(trace_stall_receiver_gone());
	assert_true(trace_cpu_active(&cpu));
	assert_int_equal(windows_done, 0);
	ex.calls = 0;
	pt_hw_write(1000, 9);
	cpuid_exit(0x1300);
	assert_int_equal(ex.calls, 0);               /* gone: no wait */
	assert_true(trace_cpu_active(&cpu));
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_non_null(strstr(logbuf, "window 1 stopped (hypercall): 1048576 PT bytes (stream at 1048576), 8 drains, 0 stops, 0 errors, 0 bad pointers, 202424 bytes refused, 0 drain failures, PT lost 202424;"));
	assert_non_null(strstr(logbuf, "receiver given up 1 times"));
}

/* overwrite: a full byte ring is a counted gap, the window goes on. */
static void test_pt_overwrite_never_closes(void **state)
{
	(void)state;
	pt_engine_policy(TV_OVERFLOW_OVERWRITE, 2000);
	exporter(false);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	run_bursts(5);
	assert_int_equal(ex.calls, 0);               /* overwrite never waits */
	assert_int_equal(windows_done, 0);
	assert_true(trace_cpu_active(&cpu));
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_non_null(strstr(logbuf, "window 1 stopped (hypercall): 1048576 PT bytes (stream at 1048576), 7 drains, 0 stops, 0 errors, 0 bad pointers, 201424 bytes refused, 0 drain failures, PT lost 201424;"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pt_wait_loses_nothing, setup, teardown_wait),
		cmocka_unit_test_setup_teardown(test_pt_wait_bound_counts_the_gap, setup, teardown_wait),
		cmocka_unit_test_setup_teardown(test_pt_overwrite_never_closes, setup, teardown_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
