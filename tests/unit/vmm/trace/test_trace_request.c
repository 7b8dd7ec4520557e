/* SPDX-License-Identifier: MIT */
/*
 * test_trace_request.c - requests one CPU makes of another
 * (vmm/trace/request.c; fixture: engine_mtf.h): start, stop, markers and
 * filters queued by trace_request / trace_request_filter and applied by
 * the target before its next entry.
 */
#include "engine_mtf.h"

/*
 * Requests from another CPU (the receiver's CONTROL ops via net/net.c):
 * queued by trace_request, applied by the target at its next entry:
 * START and STOP with trigger receiver, a marker with its label cut to
 * 16 bytes, a second marker refused while the first is pending, START
 * cancelling a STOP not yet applied, a START on an open window counted as
 * refused, bad arguments and a CPU without a ring refused.
 */
static void test_requests_from_another_cpu(void **state)
{
	struct trace_event ev[16];
	struct per_cpu idle;
	size_t n;

	(void)state;
	gmem[0x1000] = 0xeb;                 /* jmp 0x1010 */
	gmem[0x1001] = 0x0e;
	assert_int_equal(trace_request(&cpu, TRACE_REQ_MARKER, 7, "from-the-receiver-label", 23),
			 TRACE_REQ_OK);
	assert_int_equal(trace_request(&cpu, TRACE_REQ_MARKER, 8, "x", 1), TRACE_REQ_EBUSY);
	assert_int_equal(trace_request(&cpu, TRACE_REQ_STOP, 0, NULL, 0), TRACE_REQ_OK);
	assert_int_equal(trace_request(&cpu, TRACE_REQ_START, 0, NULL, 0), TRACE_REQ_OK);
	assert_int_equal(trace_request(&cpu, 0, 0, NULL, 0), TRACE_REQ_EINVAL);
	assert_int_equal(trace_request(&cpu, TRACE_REQ_START | TRACE_REQ_STOP, 0, NULL, 0),
			 TRACE_REQ_EINVAL);
	assert_int_equal(trace_request(&cpu, 1u << 7, 0, NULL, 0), TRACE_REQ_EINVAL);
	memset(&idle, 0, sizeof(idle));
	assert_int_equal(trace_request(&idle, TRACE_REQ_START, 0, NULL, 0), TRACE_REQ_ENOSYS);
	/* Nothing happens until the target's own next entry. */
	assert_false(cpu.trace->b.active);
	assert_false(mtf_in_vmcs());
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));            /* marker, then the START (the STOP was cancelled) */
	assert_true(cpu.trace->b.active);
	assert_true(mtf_in_vmcs());
	assert_int_equal(cpu.trace->req_pending, 0);
	assert_int_equal(cpu.trace->req_applied, 2);
	/* The marker slot is free again. */
	assert_int_equal(trace_request(&cpu, TRACE_REQ_MARKER, 9, "m2", 2), TRACE_REQ_OK);
	assert_int_equal(trace_request(&cpu, TRACE_REQ_START, 0, NULL, 0), TRACE_REQ_OK);
	mtf_exit_at(0x1010);                 /* the jmp; the marker; START refused: open */
	assert_int_equal(cpu.trace->req_refused, 1);
	assert_int_equal(trace_request(&cpu, TRACE_REQ_STOP, 0, NULL, 0), TRACE_REQ_OK);
	mtf_exit_at(0x1011);
	assert_false(cpu.trace->b.active);
	assert_false(mtf_in_vmcs());
	assert_int_equal(windows_done, 1);
	assert_int_equal(cpu.trace->req_applied, 4);

	n = events(ev, 16);
	assert_int_equal(n, 5);
	assert_int_equal(ev[0].type, TV_REC_MARKER);
	assert_int_equal(ev[0].u.marker.value, 7);
	assert_int_equal(ev[0].u.marker.label_len, 16);
	assert_memory_equal(ev[0].u.marker.label, "from-the-receiv", 15);
	assert_int_equal(ev[1].type, TV_REC_START);
	assert_int_equal(ev[1].u.startstop.trigger, TV_TRIG_RECEIVER);
	assert_int_equal(ev[1].u.startstop.rip, 0x1000);
	assert_int_equal(ev[2].type, TV_REC_MARKER);
	assert_int_equal(ev[2].u.marker.value, 9);
	assert_int_equal(ev[3].type, TV_REC_BRANCH);
	assert_int_equal(ev[3].u.branch.from, 0x1000);
	assert_int_equal(ev[3].u.branch.to, 0x1010);
	assert_int_equal(ev[4].type, TV_REC_STOP);
	assert_int_equal(ev[4].u.startstop.trigger, TV_TRIG_RECEIVER);
}

/*
 * A filter from another CPU (the receiver's FILTERS): refused when
 * malformed or while one is pending, used by the target from its next
 * entry on.  The guest runs at CPL 0: a user-only filter drops its jmp,
 * the all filter that replaces it keeps the next one.
 */
static void test_filter_request(void **state)
{
	struct trace_filter f;
	struct trace_event ev[8];

	(void)state;
	for (unsigned a = 0x1000; a < 0x1100; a += 0x10) {   /* jmp $+0x10 */
		gmem[a] = 0xeb;
		gmem[a + 1] = 0x0e;
	}
	trace_filter_all(&f);
	f.cpl = 0;
	assert_int_equal(trace_request_filter(&cpu, &f), TRACE_REQ_EINVAL);
	f.cpl = 1u << 1;
	assert_int_equal(trace_request_filter(&cpu, &f), TRACE_REQ_EINVAL);
	trace_filter_all(&f);
	f.nranges = 1;
	f.ranges[0].lo = 0x2000;
	f.ranges[0].hi = 0x1000;
	assert_int_equal(trace_request_filter(&cpu, &f), TRACE_REQ_EINVAL);
	f.nranges = TRACE_MAX_RANGES + 1;
	assert_int_equal(trace_request_filter(&cpu, &f), TRACE_REQ_EINVAL);
	assert_int_equal(trace_request(&cpu, TRACE_REQ_FILTER, 0, NULL, 0), TRACE_REQ_EINVAL);

	trace_filter_all(&f);
	f.cpl = TRACE_CPL_USER;                /* the guest runs at CPL 0 */
	assert_int_equal(trace_request_filter(&cpu, &f), TRACE_REQ_OK);
	assert_int_equal(trace_request_filter(&cpu, &f), TRACE_REQ_EBUSY);
	assert_false(cpu.trace->filter_set);
	assert_int_equal(trace_request(&cpu, TRACE_REQ_START, 0, NULL, 0), TRACE_REQ_OK);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));              /* filter, then START at 0x1000 */
	assert_true(cpu.trace->filter_set);
	assert_int_equal(cpu.trace->filter.cpl, TRACE_CPL_USER);
	mtf_exit_at(0x1010);                   /* jmp at 0x1000: filtered */
	trace_filter_all(&f);
	assert_int_equal(trace_request_filter(&cpu, &f), TRACE_REQ_OK);
	mtf_exit_at(0x1020);                   /* jmp at 0x1010: recorded */
	assert_int_equal(mtf_unit(&cpu.trace->b)->stats.filtered, 1);
	assert_int_equal(events(ev, 8), 2);
	assert_int_equal(ev[0].type, TV_REC_START);
	assert_int_equal(ev[1].type, TV_REC_BRANCH);
	assert_int_equal(ev[1].u.branch.from, 0x1010);
	assert_int_equal(ev[1].u.branch.to, 0x1020);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_requests_from_another_cpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_filter_request, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
