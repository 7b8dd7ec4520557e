/* SPDX-License-Identifier: MIT */
/*
 * test_serial_export.c - the serial exporter (vmm/trace/serial_export.c)
 * against a fake line sink: a window's records go out as H, R and E lines
 * and are released from the ring, the next window's lines go on with the
 * chunk numbers, the PT stream follows as P lines with contiguous offsets
 * and leaves the byte ring, and a CPU that does not trace, a missing line
 * sink or a CPU beyond the table send nothing and release nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/lib/byte_ring.h"
#include "vmm/lib/log.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/ring.h"
#include "vmm/trace/serial_enc.h"
#include "vmm/trace/serial_export.h"
#include "vmm/vmx/vcpu.h"

#define MAX_LINES 512

static struct per_cpu cpu;
static uint64_t ring_mem[(TRACE_CPU_STATE_BYTES + 4096 + 16384) / 8] __attribute__((aligned(64)));
static uint8_t *pt_mem;

/* The fake line sink: every line parsed and kept; each write one whole line. */
static struct trace_serial_line lines[MAX_LINES];
static unsigned nlines;
static int sink_ctx_seen;

static char logbuf[8192];
static size_t loglen;

static void line_sink(void *ctx, const char *s, size_t n)
{
	assert_ptr_equal(ctx, &sink_ctx_seen);
	assert_true(n > 0 && n <= TRACE_SERIAL_LINE_MAX);
	assert_int_equal(s[n - 1], '\n');
	assert_null(memchr(s, '\n', n - 1));
	assert_true(nlines < MAX_LINES);
	assert_int_equal(trace_serial_parse(s, n, &lines[nlines]), 0);
	nlines++;
}

static void log_sink(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	if (len > sizeof(logbuf) - 1 - loglen)
		len = sizeof(logbuf) - 1 - loglen;
	memcpy(logbuf + loglen, text, len);
	loglen += len;
	logbuf[loglen] = '\0';
}

static int group_setup(void **state)
{
	(void)state;
	pt_mem = aligned_alloc(64 * 1024, 1344 * 1024);   /* the default PT area: 4 x 64 KiB, table, 1 MiB ring */
	return pt_mem ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	free(pt_mem);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	memset(&cpu, 0, sizeof(cpu));
	memset(lines, 0, sizeof(lines));
	nlines = 0;
	loglen = 0;
	logbuf[0] = '\0';
	log_clear_sinks();
	log_add_sink(log_sink, NULL);
	cpu.index = 2;
	assert_int_equal(trace_cpu_init(&cpu, ring_mem, sizeof(ring_mem), cpu.index, 7,
					TV_SOURCE_MTF, TV_OVERFLOW_STOP, 1000, 0), 0);
	serial_export_init(line_sink, &sink_ctx_seen);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	log_clear_sinks();
	return 0;
}

static void append_branches(unsigned n, uint64_t base)
{
	struct tv_trace_ring *r = trace_cpu_ring(&cpu);

	for (unsigned i = 0; i < n; i++)
		assert_int_equal(trace_append_branch(r, base + 16 * i, base + 16 * i + 0x100,
						     TV_BR_JCC, 0, 0), 0);
}

/* The lines of one emission from index *at: two H, R lines, one E; returns the E's counts. */
static struct trace_serial_end expect_emission(unsigned *at, uint64_t first_chunk)
{
	struct trace_serial_end end;
	unsigned i = *at;

	assert_true(nlines >= i + 3);
	assert_int_equal(lines[i].kind, 'H');
	assert_int_equal(lines[i + 1].kind, 'H');
	for (unsigned k = i; k < nlines; k++) {
		assert_int_equal(lines[k].cpu, cpu.index);
		assert_int_equal(lines[k].chunk, first_chunk + (k - i));
	}
	i += 2;
	while (i < nlines && lines[i].kind == 'R')
		i++;
	assert_true(i < nlines);
	assert_int_equal(lines[i].kind, 'E');
	trace_serial_decode_end(&lines[i], &end);
	*at = i + 1;
	return end;
}

/* A window's records go out whole and are released; the next window continues the chunks. */
static void test_records_then_released(void **state)
{
	struct tv_trace_ring *r = trace_cpu_ring(&cpu);
	struct trace_serial_end end;
	struct trace_cursor tail;
	unsigned at = 0, first_lines;

	(void)state;
	append_branches(40, 0x401000);
	assert_int_equal(serial_export_window(&cpu), 40);
	end = expect_emission(&at, 0);
	assert_int_equal(at, nlines);
	assert_int_equal(end.records, 40);
	assert_int_equal(end.missed, 0);
	assert_int_equal(end.first_seq, 0);
	assert_int_equal(end.next_seq, 40);
	/* Released: the ring's tail is where the exporter's cursor is. */
	assert_int_equal(trace_ring_cursor_tail(r, &tail), 0);
	assert_int_equal(tail.seq, 40);
	assert_int_equal(trace_cpu_exported(&cpu)->seq, 40);
	assert_non_null(strstr(logbuf, "trace: cpu 2: exported 40 records over serial ("));
	assert_non_null(strstr(logbuf, "), 0 gone before export"));
	assert_null(strstr(logbuf, "PT bytes"));          /* no PT stream: no PT line */

	/* Second window: only the new records, chunk numbers go on. */
	first_lines = nlines;
	append_branches(3, 0x402000);
	assert_int_equal(serial_export_window(&cpu), 3);
	end = expect_emission(&at, first_lines);
	assert_int_equal(at, nlines);
	assert_int_equal(end.records, 3);
	assert_int_equal(end.first_seq, 40);
	assert_int_equal(end.next_seq, 43);

	/* A new init forgets the emitters: chunk numbers start again. */
	serial_export_init(line_sink, &sink_ctx_seen);
	at = nlines;
	assert_int_equal(serial_export_window(&cpu), 0);
	end = expect_emission(&at, 0);
	assert_int_equal(end.records, 0);
	assert_int_equal(end.first_seq, 43);
}

/* The PT stream follows the records as P lines and leaves the byte ring. */
static void test_pt_stream(void **state)
{
	static uint8_t bytes[2500];
	static uint8_t got[sizeof(bytes)];
	struct byte_ring *pt;
	uint64_t next = 0;
	unsigned at = 0;

	(void)state;
	assert_null(trace_cpu_pt_stream(&cpu));
	/* A PT area belongs to the pt backend: this CPU traces pt. */
	assert_int_equal(trace_cpu_init(&cpu, ring_mem, sizeof(ring_mem), cpu.index, 7,
					TV_SOURCE_PT, TV_OVERFLOW_STOP, 1000, 0), 0);
	assert_null(trace_cpu_pt_stream(&cpu));
	assert_int_equal(trace_cpu_pt_area(&cpu, pt_mem, (uint64_t)(uintptr_t)pt_mem), 0);
	pt = trace_cpu_pt_stream(&cpu);
	assert_non_null(pt);
	for (size_t i = 0; i < sizeof(bytes); i++)
		bytes[i] = (uint8_t)(i * 13 + 5);
	assert_int_equal(byte_ring_write(pt, bytes, sizeof(bytes)), sizeof(bytes));
	append_branches(2, 0x401000);

	assert_int_equal(serial_export_window(&cpu), 2);
	(void)expect_emission(&at, 0);
	assert_true(at < nlines);
	for (; at < nlines; at++) {
		assert_int_equal(lines[at].kind, 'P');
		assert_int_equal(lines[at].first, next);     /* contiguous offsets */
		assert_true(next + lines[at].len <= sizeof(got));
		memcpy(got + next, lines[at].payload, lines[at].len);
		next += lines[at].len;
	}
	assert_int_equal(next, sizeof(bytes));
	assert_memory_equal(got, bytes, sizeof(bytes));
	assert_int_equal(byte_ring_tail(pt), sizeof(bytes));
	assert_int_equal(byte_ring_head(pt), sizeof(bytes));
	assert_non_null(strstr(logbuf, "trace: cpu 2: exported 2500 PT bytes over serial (stream offsets 0..2500)"));

	/* The next window's P lines start where these ended. */
	assert_int_equal(byte_ring_write(pt, bytes, 10), 10);
	next = lines[nlines - 1].chunk + 1;
	at = nlines;
	assert_int_equal(serial_export_window(&cpu), 0);
	(void)expect_emission(&at, next);
	assert_int_equal(nlines - at, 1);
	assert_int_equal(lines[at].kind, 'P');
	assert_int_equal(lines[at].first, sizeof(bytes));
	assert_int_equal(lines[at].len, 10);
}

/* A CPU that does not trace: nothing to do, nothing sent. */
static void test_not_traced(void **state)
{
	struct per_cpu idle;

	(void)state;
	memset(&idle, 0, sizeof(idle));
	idle.index = 5;
	assert_int_equal(serial_export_window(&idle), 0);
	assert_int_equal(nlines, 0);
	assert_int_equal(loglen, 0);
}

/* No line sink (serial = off): refused, the records stay in the ring. */
static void test_no_sink(void **state)
{
	struct trace_cursor tail;

	(void)state;
	serial_export_init(NULL, NULL);
	append_branches(5, 0x401000);
	assert_int_equal(serial_export_window(&cpu), SERIAL_EXPORT_ERR_OFF);
	assert_int_equal(nlines, 0);
	assert_int_equal(trace_ring_cursor_tail(trace_cpu_ring(&cpu), &tail), 0);
	assert_int_equal(tail.seq, 0);
	assert_int_equal(trace_cpu_exported(&cpu)->seq, 0);
	assert_non_null(strstr(logbuf, "trace: cpu 2: no exporter (serial = off): the window's records stay in memory"));
	/* A sink later: everything held goes out. */
	serial_export_init(line_sink, &sink_ctx_seen);
	assert_int_equal(serial_export_window(&cpu), 5);
}

/* A CPU beyond the emitter table: refused, nothing released. */
static void test_cpu_beyond_table(void **state)
{
	(void)state;
	cpu.index = SERIAL_EXPORT_CPUS;
	append_branches(1, 0x401000);
	assert_int_equal(serial_export_window(&cpu), SERIAL_EXPORT_ERR_CPU);
	assert_int_equal(nlines, 0);
	assert_int_equal(trace_cpu_exported(&cpu)->seq, 0);
	assert_non_null(strstr(logbuf, "trace: cpu 64: beyond the serial exporter's 64 CPUs: not exported"));
}

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(serial_export_strerror(SERIAL_EXPORT_ERR_OFF), "no serial line (serial = off)");
	assert_string_equal(serial_export_strerror(SERIAL_EXPORT_ERR_CPU),
			    "CPU index beyond the serial exporter's table");
	assert_string_equal(serial_export_strerror(TRACE_SERIAL_ERR_CRC),
			    trace_serial_strerror(TRACE_SERIAL_ERR_CRC));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_records_then_released, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pt_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_traced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_sink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cpu_beyond_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strerror, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
