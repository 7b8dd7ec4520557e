/* SPDX-License-Identifier: MIT */
/*
 * test_trace_stall.c - overflow = wait (vmm/trace/stall.c) on the fake
 * seam with the MTF backend (fixture: engine_mtf.h): a full record ring
 * makes the CPU wait until the exporter (the test's pump) has freed room,
 * whether the exporter runs in the wait (the NIC's CPU) or elsewhere; the
 * wait_ms bound, then exact loss counting without waiting and the window
 * going on; waiting again once the receiver is heard from; the stalled
 * ticks taken out of TSC_OFFSET with stall_tsc = hide; the stall line.
 */
#include "engine_mtf.h"

#include "vmm/trace/ring.h"
#include "vmm/trace/stall.h"
#include "vmm/vmx/vmx.h"

/* --- a fake exporter ---------------------------------------------------------- */

#define NIC_CPU 0u                 /* the exporter's CPU; the fixture's CPU is 1 */

enum pump_mode {
	PUMP_EXPORT,     /* every call exports: the waiting CPU owns the NIC */
	PUMP_ELSEWHERE,  /* the call does nothing; every 50th call stands for the NIC CPU's poll */
	PUMP_DEAD,       /* nothing ever frees room: the receiver is gone */
	PUMP_TRICKLE,    /* (bytes) each call frees 5 bytes: slow but alive */
};

static struct {
	enum pump_mode mode;
	uint32_t calls, exports;
	uint32_t last_cpu;
	uint64_t heard;
	struct trace_cursor cur;       /* the exporter's place */
	uint64_t records;              /* records it took (all acknowledged) */
} fx;

static uint64_t fx_lost_before;   /* records the ring lost before branch_until_wait */
static char logbuf[16384];
static size_t loglen;

static void log_sink(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	if (len > sizeof(logbuf) - 1 - loglen)
		len = sizeof(logbuf) - 1 - loglen;
	memcpy(logbuf + loglen, text, len);
	loglen += len;
	logbuf[loglen] = '\0';
}

/* Take everything from the cursor on and release it: the receiver acknowledged. */
static void export_all(void)
{
	static uint8_t buf[16384];
	struct tv_trace_ring *r = cpu.trace->b.ring;
	struct trace_cursor c = fx.cur;
	size_t len = 0;

	assert_int_equal(trace_ring_peek(r, &c, buf, sizeof(buf), &len), 0);
	fx.records += c.seq - fx.cur.seq;
	fx.cur = c;
	assert_int_equal(trace_ring_consume(r, &fx.cur), 0);
	fx.exports++;
}

static void pump(void *ctx, uint32_t c)
{
	assert_ptr_equal(ctx, &fx);
	fx.calls++;
	fx.last_cpu = c;
	if (fx.mode == PUMP_EXPORT || (fx.mode == PUMP_ELSEWHERE && fx.calls % 50 == 0))
		export_all();
}

static uint64_t heard(void *ctx)
{
	(void)ctx;
	return fx.heard;
}

/*
 * The fixture's CPU again, with overflow = policy, wait_ms and
 * stall_tsc; the exporter registered (ops) or not.
 */
static void wait_engine(enum tv_overflow policy, uint32_t wait_ms, uint8_t stall_tsc, bool ops)
{
	struct trace_setup s;
	struct trace_stall_ops so = { pump, heard, &fx, &cpu, 1 };

	memset(&fx, 0, sizeof(fx));
	fx_lost_before = 0;
	loglen = 0;
	logbuf[0] = '\0';
	log_add_sink(log_sink, NULL);
	assert_int_equal(trace_cpu_init(&cpu, ring_mem, sizeof(ring_mem), 1, 7,
					TV_SOURCE_MTF, policy, 100000000, 0), 0);
	memset(&s, 0, sizeof(s));
	s.source = TV_SOURCE_MTF;
	s.overflow = (uint8_t)policy;
	s.start = TV_TRIG_HYPERCALL;
	s.ring_kb = 16;
	s.wait_ms = wait_ms;
	s.stall_tsc = stall_tsc;
	trace_filter_all(&s.filter);
	trace_pt_opts_default(&s.pt);
	trace_engine_init(&s, read_phys, NULL, on_window);
	trace_stall_set_ops(ops ? &so : NULL);
	assert_int_equal(trace_ring_cursor_tail(cpu.trace->b.ring, &fx.cur), 0);
}

static int teardown_stall(void **state)
{
	trace_stall_set_ops(NULL);
	log_remove_sink(log_sink);
	return teardown(state);
}

/* Branches: the guest jumps between two places, one MTF exit each. */
static uint64_t branch_no;

static void branch(void)
{
	mtf_exit_at((branch_no++ & 1) ? 0x3000 : 0x1000);
}

/*
 * Branch (the exporter idle: nothing takes records until the ring is
 * full) until a branch did not fit and the CPU waited: the pump ran.
 * Records are mostly compact (16 bytes, a full one every data_size/16),
 * so the ring is full when the next one does not fit, whichever it is.
 */
static void branch_until_wait(void)
{
	uint32_t calls = fx.calls;

	for (int i = 0; i < 5000 && fx.calls == calls; i++) {
		assert_int_equal(cpu.trace->b.ring->lost_records, fx_lost_before);
		branch();
	}
	assert_true(fx.calls > calls);
}

/* Open a window, branch until the ring is full and the CPU waited. */
static void fill_ring(void)
{
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	branch_no = 0;
	branch_until_wait();
}

static uint64_t produced(void)
{
	const struct tv_trace_ring *r = cpu.trace->b.ring;

	return r->next_seq - fx.cur.seq + fx.records;
}

/* --- tests ------------------------------------------------------------------------ */

/*
 * The NIC's CPU: its full ring makes it run the exporter in the wait
 * (the pump gets its own index); the branch then goes in, nothing is
 * lost, the window stays open, and the stall is counted.
 */
static void test_wait_runs_the_exporter(void **state)
{
	const struct trace_stall_stats *st;

	(void)state;
	wait_engine(TV_OVERFLOW_WAIT, 2000, TRACE_STALL_TSC_KEEP, true);
	assert_int_equal(trace_ring_policy(cpu.trace->b.ring), TV_OVERFLOW_STOP);
	fx.mode = PUMP_EXPORT;
	fill_ring();
	for (int i = 0; i < 10; i++)
		branch();
	assert_int_equal(fx.calls, 1);              /* one pass freed the whole ring */
	assert_int_equal(fx.exports, 1);
	assert_int_equal(fx.last_cpu, 1);
	assert_int_equal(cpu.trace->b.ring->lost_records, 0);
	assert_true(trace_cpu_active(&cpu));
	st = trace_stall_stats_of(&cpu.trace->b);
	assert_int_equal(st->waits, 1);
	assert_true(st->ticks > 0);
	assert_int_equal(st->gave_up, 0);
	assert_false(trace_stall_receiver_gone());
	export_all();
	assert_int_equal(produced(), cpu.trace->b.ring->next_seq);
	assert_int_equal(fx.cur.seq, cpu.trace->b.ring->next_seq);
	/* the stop line's companion: the stall counters */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_non_null(strstr(logbuf, "trace: cpu 1: window 1 stalled 1 times for "));
	assert_non_null(strstr(logbuf, "us waiting for the exporter; since boot 1 times"));
	assert_non_null(strstr(logbuf, "receiver given up 0 times, 0 us hidden from the TSC"));
}

/*
 * Another CPU owns the NIC: the wait only pauses until the exporting CPU
 * (every 50th pump call here) has freed room; nothing lost.
 */
static void test_wait_for_the_exporting_cpu(void **state)
{
	uint32_t pauses;

	(void)state;
	wait_engine(TV_OVERFLOW_WAIT, 2000, TRACE_STALL_TSC_KEEP, true);
	fx.mode = PUMP_ELSEWHERE;
	pauses = hw_fake_pause_count;
	fill_ring();
	assert_int_equal(fx.calls, 50);
	assert_int_equal(fx.exports, 1);
	assert_true(hw_fake_pause_count - pauses >= 49);
	assert_int_equal(cpu.trace->b.ring->lost_records, 0);
	assert_true(trace_cpu_active(&cpu));
	export_all();
	assert_int_equal(fx.records, cpu.trace->b.ring->next_seq);
}

/*
 * No room for wait_ms: the receiver is taken as gone (logged once); the
 * record is dropped and counted as under stop, the window goes on; from
 * then on nothing waits (the pump is not called) and every drop is
 * counted; once room comes back the LOST record says exactly how many.
 */
static void test_bound_then_exact_loss(void **state)
{
	const struct trace_stall_stats *st;
	struct trace_event ev[8];
	struct trace_cursor c;
	uint64_t lost;

	(void)state;
	wait_engine(TV_OVERFLOW_WAIT, 10, TRACE_STALL_TSC_KEEP, true);
	fx.mode = PUMP_DEAD;
	hw_fake_set_tsc_step(10000);               /* 10 ms = 1e6 ticks: ~100 rounds */
	fill_ring();
	hw_fake_set_tsc_step(1);
	st = trace_stall_stats_of(&cpu.trace->b);
	assert_true(fx.calls >= 50 && fx.calls <= 200);
	assert_int_equal(st->gave_up, 1);
	assert_true(st->ticks >= 1000000);
	assert_true(trace_stall_receiver_gone());
	assert_int_equal(cpu.trace->b.ring->lost_records, 1);
	assert_true(trace_cpu_active(&cpu));       /* wait never closes the window */
	assert_non_null(strstr(logbuf, "trace: cpu 1: no room for 10 ms (wait_ms 10): the receiver is taken as gone"));
	/* gone: no wait at all, each drop counted */
	fx.calls = 0;
	for (int i = 0; i < 7; i++)
		branch();
	assert_int_equal(fx.calls, 0);
	assert_int_equal(st->waits, 1);
	lost = cpu.trace->b.ring->lost_records;
	assert_int_equal(lost, 8);
	assert_true(trace_cpu_active(&cpu));
	/* the exporter frees the ring (say, acknowledged late): the next record follows a LOST of 8 */
	export_all();
	c = fx.cur;
	branch();
	fx.cur = c;
	assert_int_equal(trace_ring_cursor_tail(cpu.trace->b.ring, &c), 0);
	{
		static uint8_t buf[256];
		struct trace_reader rd;
		size_t len = 0;
		size_t n = 0;

		assert_int_equal(trace_ring_peek(cpu.trace->b.ring, &c, buf, sizeof(buf), &len), 0);
		trace_reader_init(&rd);
		trace_reader_feed(&rd, buf, len, fx.cur.seq, false);
		while (n < 8 && trace_reader_next(&rd, &ev[n]) == 1)
			n++;
		assert_int_equal(n, 2);
		assert_int_equal(ev[0].type, TV_REC_LOST);
		assert_int_equal(ev[0].u.lost.records, 8);
		assert_int_equal(ev[1].type, TV_REC_BRANCH);
	}
	assert_int_equal(lost, cpu.trace->b.ring->lost_records);
}

/*
 * Given up, then heard from again (a datagram after the moment it was
 * given up): the next full ring waits again and nothing more is lost.
 */
static void test_resume_after_acks(void **state)
{
	(void)state;
	wait_engine(TV_OVERFLOW_WAIT, 10, TRACE_STALL_TSC_KEEP, true);
	fx.mode = PUMP_DEAD;
	hw_fake_set_tsc_step(10000);
	fill_ring();
	hw_fake_set_tsc_step(1);
	assert_true(trace_stall_receiver_gone());
	fx.heard = 5;                               /* an old datagram: still gone */
	assert_true(trace_stall_receiver_gone());
	fx.heard = hw_fake_get_tsc() + 1;           /* an ACK now */
	assert_false(trace_stall_receiver_gone());
	assert_non_null(strstr(logbuf, "trace: the receiver answers again"));
	fx.mode = PUMP_EXPORT;
	fx.calls = 0;
	fx_lost_before = 1;
	branch_until_wait();                        /* waits again */
	for (int i = 0; i < 5; i++)
		branch();
	assert_int_equal(fx.calls, 1);
	assert_int_equal(cpu.trace->b.ring->lost_records, 1);   /* only the one before */
	assert_int_equal(trace_stall_stats_of(&cpu.trace->b)->waits, 2);
}

/* Without an exporter (serial, or the network failed) wait drops as stop, the window goes on. */
static void test_no_exporter_drops_and_goes_on(void **state)
{
	(void)state;
	wait_engine(TV_OVERFLOW_WAIT, 2000, TRACE_STALL_TSC_KEEP, false);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (int i = 0; i < 3000; i++)
		branch();
	assert_true(cpu.trace->b.ring->lost_records > 0);
	assert_int_equal(trace_stall_stats_of(&cpu.trace->b)->waits, 0);
	assert_true(trace_cpu_active(&cpu));
	assert_int_equal(windows_done, 0);
}

/* stop keeps its documented behaviour: a full ring closes the window (full). */
static void test_stop_still_closes(void **state)
{
	(void)state;
	wait_engine(TV_OVERFLOW_STOP, 2000, TRACE_STALL_TSC_KEEP, true);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (int i = 0; i < 3000 && trace_cpu_active(&cpu); i++)
		branch();
	assert_int_equal(fx.calls, 0);              /* stop never waits */
	assert_true(cpu.trace->b.ring->lost_records >= 1);   /* the branch (and the STOP record) */
	assert_false(trace_cpu_active(&cpu));
	assert_int_equal(windows_done, 1);
}

/* overwrite: a full ring drops the oldest, counted; the window never closes for it. */
static void test_overwrite_never_closes(void **state)
{
	(void)state;
	wait_engine(TV_OVERFLOW_OVERWRITE, 2000, TRACE_STALL_TSC_KEEP, true);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (int i = 0; i < 3000; i++)
		branch();
	assert_true(cpu.trace->b.ring->lost_records > 0);
	assert_int_equal(fx.calls, 0);
	assert_true(trace_cpu_active(&cpu));
	assert_int_equal(windows_done, 0);
}

/*
 * stall_tsc = hide: the waited ticks leave TSC_OFFSET (the guest's TSC
 * = TSC + offset, SDM 3C 26.6.5); keep leaves it; without the control
 * nothing is hidden.
 */
static void stall_once(uint8_t how, bool control)
{
	wait_engine(TV_OVERFLOW_WAIT, 2000, how, true);
	if (control)
		cpu.proc |= CPU_USE_TSC_OFFSETTING;
	else
		cpu.proc &= ~CPU_USE_TSC_OFFSETTING;
	cpu.tsc_offset = 0;
	hw_fake_vmcs_set(VMCS_TSC_OFFSET, 0);
	fx.mode = PUMP_ELSEWHERE;
	hw_fake_set_tsc_step(1000);
	fill_ring();
	hw_fake_set_tsc_step(1);
}

static void test_tsc_offset_hides_the_stall(void **state)
{
	const struct trace_stall_stats *st;

	(void)state;
	stall_once(TRACE_STALL_TSC_HIDE, true);
	st = trace_stall_stats_of(&cpu.trace->b);
	assert_true(st->ticks >= 50 * 1000);
	assert_int_equal(st->hidden, st->ticks);
	assert_int_equal(hw_fake_vmcs_get(VMCS_TSC_OFFSET), (uint64_t)0 - st->ticks);
	assert_int_equal(cpu.tsc_offset, (uint64_t)0 - st->ticks);
	/* a second stall adds to it */
	fx.calls = 0;
	hw_fake_set_tsc_step(1000);
	branch_until_wait();
	hw_fake_set_tsc_step(1);
	assert_int_equal(st->waits, 2);
	assert_int_equal(hw_fake_vmcs_get(VMCS_TSC_OFFSET), (uint64_t)0 - st->ticks);

	stall_once(TRACE_STALL_TSC_KEEP, true);
	st = trace_stall_stats_of(&cpu.trace->b);
	assert_true(st->ticks > 0);
	assert_int_equal(st->hidden, 0);
	assert_int_equal(hw_fake_vmcs_get(VMCS_TSC_OFFSET), 0);

	stall_once(TRACE_STALL_TSC_HIDE, false);
	st = trace_stall_stats_of(&cpu.trace->b);
	assert_true(st->ticks > 0);
	assert_int_equal(st->hidden, 0);
	assert_int_equal(hw_fake_vmcs_get(VMCS_TSC_OFFSET), 0);
}

/* vmx_tsc_hide alone: offsets accumulate modulo 2^64, refused without the control. */
static void test_vmx_tsc_hide(void **state)
{
	struct per_cpu c;

	(void)state;
	memset(&c, 0, sizeof(c));
	assert_int_equal(vmx_tsc_hide(&c, 100), -1);
	c.proc = CPU_USE_TSC_OFFSETTING;
	assert_int_equal(vmx_tsc_hide(&c, 100), 0);
	assert_int_equal(vmx_tsc_hide(&c, 23), 0);
	assert_int_equal(c.tsc_offset, (uint64_t)-123);
	assert_int_equal(hw_fake_vmcs_get(VMCS_TSC_OFFSET), (uint64_t)-123);
}

/* A byte ring (the PT stream) waits the same way: the pump frees bytes. */
static uint8_t bytes_mem[4096];
static struct byte_ring bytes;

static void pump_bytes(void *ctx, uint32_t c)
{
	(void)ctx;
	(void)c;
	fx.calls++;
	if (fx.mode == PUMP_TRICKLE)
		assert_int_equal(byte_ring_consume(&bytes, byte_ring_tail(&bytes) + 5), 0);
	else if (fx.mode != PUMP_DEAD && fx.calls % 3 == 0)
		assert_int_equal(byte_ring_consume(&bytes, byte_ring_head(&bytes)), 0);
}

static void test_byte_ring_waits(void **state)
{
	struct trace_stall_ops so = { pump_bytes, heard, &fx, &cpu, 1 };
	static uint8_t junk[4096];

	(void)state;
	wait_engine(TV_OVERFLOW_WAIT, 10, TRACE_STALL_TSC_KEEP, true);
	trace_stall_set_ops(&so);
	assert_int_equal(byte_ring_init(&bytes, bytes_mem, sizeof(bytes_mem)), 0);
	assert_int_equal(byte_ring_write(&bytes, junk, 4000), 4000);
	fx.mode = PUMP_EXPORT;
	assert_true(trace_stall_bytes(&cpu.trace->b, &bytes, 1000));
	assert_int_equal(fx.calls, 3);
	assert_int_equal(byte_ring_write(&bytes, junk, 1000), 1000);
	/*
	 * A slow receiver: room grows 5 bytes a round, 200 rounds of
	 * 10000 ticks for 1000 bytes, more than wait_ms (1e6 ticks) in
	 * all: the bound counts from the last progress, so it waits on.
	 */
	assert_int_equal(byte_ring_write(&bytes, junk, 3096), 3096);   /* full */
	fx.mode = PUMP_TRICKLE;
	fx.calls = 0;
	hw_fake_set_tsc_step(10000);
	assert_true(trace_stall_bytes(&cpu.trace->b, &bytes, 1000));
	hw_fake_set_tsc_step(1);
	assert_int_equal(fx.calls, 200);
	assert_true(trace_stall_stats_of(&cpu.trace->b)->longest > 1000000);
	assert_false(trace_stall_receiver_gone());
	assert_int_equal(byte_ring_write(&bytes, junk, 1000), 1000);
	assert_int_equal(byte_ring_consume(&bytes, byte_ring_head(&bytes)), 0);
	fx.mode = PUMP_EXPORT;
	/* more than the ring can ever hold: no wait */
	fx.calls = 0;
	assert_false(trace_stall_bytes(&cpu.trace->b, &bytes, 5000));
	assert_int_equal(fx.calls, 0);
	assert_false(trace_stall_receiver_gone());
	/* the bound */
	fx.mode = PUMP_DEAD;
	assert_int_equal(byte_ring_write(&bytes, junk, 4096), 4096);
	hw_fake_set_tsc_step(10000);
	assert_false(trace_stall_bytes(&cpu.trace->b, &bytes, 1000));
	hw_fake_set_tsc_step(1);
	assert_true(trace_stall_receiver_gone());
	fx.calls = 0;
	assert_false(trace_stall_bytes(&cpu.trace->b, &bytes, 1000));
	assert_int_equal(fx.calls, 0);
	/* overwrite and stop never wait */
	trace_stall_set_ops(&so);                  /* forgets the receiver given up */
	assert_false(trace_stall_receiver_gone());
	wait_engine(TV_OVERFLOW_OVERWRITE, 10, TRACE_STALL_TSC_KEEP, true);
	trace_stall_set_ops(&so);
	assert_false(trace_stall_bytes(&cpu.trace->b, &bytes, 1000));
	assert_int_equal(fx.calls, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_wait_runs_the_exporter, setup, teardown_stall),
		cmocka_unit_test_setup_teardown(test_wait_for_the_exporting_cpu, setup, teardown_stall),
		cmocka_unit_test_setup_teardown(test_bound_then_exact_loss, setup, teardown_stall),
		cmocka_unit_test_setup_teardown(test_resume_after_acks, setup, teardown_stall),
		cmocka_unit_test_setup_teardown(test_no_exporter_drops_and_goes_on, setup, teardown_stall),
		cmocka_unit_test_setup_teardown(test_stop_still_closes, setup, teardown_stall),
		cmocka_unit_test_setup_teardown(test_overwrite_never_closes, setup, teardown_stall),
		cmocka_unit_test_setup_teardown(test_tsc_offset_hides_the_stall, setup, teardown_stall),
		cmocka_unit_test_setup_teardown(test_vmx_tsc_hide, setup, teardown_stall),
		cmocka_unit_test_setup_teardown(test_byte_ring_waits, setup, teardown_stall),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
