/* SPDX-License-Identifier: MIT */
/*
 * test_trace_needs.c - trace_engine_needs: what each source asks of VMX,
 * of the drain tick and of the boot code's per-CPU memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/trace/engine.h"
#include "vmm/trace/needs.h"
#include "vmm/vmx/vmx_defs.h"

static void needs_of(uint8_t source, uint8_t pmi, struct trace_needs *n)
{
	struct trace_setup s;

	memset(&s, 0, sizeof(s));
	s.source = source;
	s.pmi = pmi;
	s.ring_kb = 64;
	trace_engine_needs(&s, n);
}

static void test_none_needs_nothing(void **state)
{
	struct trace_needs n, zero;

	(void)state;
	memset(&zero, 0, sizeof(zero));
	needs_of(TV_SOURCE_NONE, 1, &n);
	assert_memory_equal(&n, &zero, sizeof(n));
	trace_engine_needs(NULL, &n);
	assert_memory_equal(&n, &zero, sizeof(n));
}

static void test_ring_bytes_every_source(void **state)
{
	struct trace_needs n;

	(void)state;
	for (uint8_t s = TV_SOURCE_MTF; s <= TV_SOURCE_PT; s++) {
		needs_of(s, 0, &n);
		assert_true(n.ring_bytes >= (64u << 10) + 4096);
		assert_int_equal(n.ring_bytes & 4095, 0);
	}
}

static void test_controls_per_source(void **state)
{
	struct trace_needs n;

	(void)state;
	needs_of(TV_SOURCE_MTF, 1, &n);
	assert_int_equal(n.entry_ctls | n.exit_ctls | n.pin_ctls, 0);
	assert_false(n.drain_tick);
	assert_int_equal(n.hidden_bytes + n.guest_bytes, 0);

	needs_of(TV_SOURCE_BTF, 0, &n);
	assert_int_equal(n.entry_ctls, ENTRY_LOAD_LBR_CTL);
	assert_int_equal(n.exit_ctls, EXIT_CLEAR_LBR_CTL);
	assert_int_equal(n.pin_ctls, 0);

	needs_of(TV_SOURCE_LBR, 0, &n);
	assert_int_equal(n.entry_ctls, ENTRY_LOAD_LBR_CTL);
	assert_int_equal(n.exit_ctls, EXIT_CLEAR_LBR_CTL);
	assert_int_equal(n.pin_ctls, 0);
	needs_of(TV_SOURCE_LBR, 1, &n);
	assert_int_equal(n.entry_ctls, ENTRY_LOAD_LBR_CTL | ENTRY_LOAD_PERF_GLOBAL_CTRL);
	assert_int_equal(n.exit_ctls, EXIT_CLEAR_LBR_CTL | EXIT_LOAD_PERF_GLOBAL_CTRL);
	assert_int_equal(n.pin_ctls, PIN_NMI_EXITING);

	needs_of(TV_SOURCE_BTS, 0, &n);
	assert_int_equal(n.entry_ctls | n.exit_ctls | n.pin_ctls, 0);
	assert_int_equal(n.guest_bytes, 4096 + 64 * 1024);   /* DS page + bts_buffer_kb 64 */
	assert_int_equal(n.hidden_bytes, 0);
	needs_of(TV_SOURCE_BTS, 1, &n);
	assert_int_equal(n.pin_ctls, PIN_NMI_EXITING);

	needs_of(TV_SOURCE_PT, 0, &n);
	assert_int_equal(n.entry_ctls | n.exit_ctls | n.pin_ctls, 0);
	assert_int_equal(n.entry_ctls_traced, ENTRY_LOAD_RTIT_CTL);
	assert_int_equal(n.exit_ctls_traced, EXIT_CLEAR_RTIT_CTL);
	assert_true(n.drain_tick);
	assert_int_equal(n.hidden_bytes, 1344 * 1024);   /* 4 x 64 KiB, table, 1 MiB ring, padded */
	assert_int_equal(n.hidden_align, 64 * 1024);
	assert_int_equal(n.guest_bytes, 0);
	needs_of(TV_SOURCE_PT, 1, &n);
	assert_int_equal(n.pin_ctls, PIN_NMI_EXITING);
}

static int sized(uint8_t source, uint32_t ring_kb, uint64_t pt_ring, uint64_t topa, uint64_t bts,
		 struct trace_needs *n)
{
	struct trace_setup s;

	memset(&s, 0, sizeof(s));
	s.source = source;
	s.ring_kb = ring_kb;
	s.pt_ring_bytes = pt_ring;
	s.pt_topa_bytes = topa;
	s.bts_buf_bytes = bts;
	return trace_engine_needs(&s, n);
}

/* Every PT size from the setup: regions, alignment, area; 64-bit sizes. */
static void test_pt_sizes_from_setup(void **state)
{
	struct trace_needs n;

	(void)state;
	/* the defaults spelled out equal the zeros */
	assert_int_equal(sized(TV_SOURCE_PT, 1024, 1ull << 20, 256ull << 10, 0, &n), 0);
	assert_int_equal(n.hidden_bytes, 1344 * 1024);
	assert_int_equal(n.stream_bytes, 1ull << 20);
	assert_int_equal(n.out_bytes, 256 << 10);
	assert_int_equal(n.out_regions, 4);
	assert_int_equal(n.out_region_bytes, 64 << 10);
	assert_string_equal(n.stream_key, "pt_buffer_kb");
	assert_string_equal(n.out_key, "pt_topa_kb");
	/* 64 MiB ring, 16 MiB output: 4 regions of 4 MiB, padding under one region */
	assert_int_equal(sized(TV_SOURCE_PT, 65536, 64ull << 20, 16ull << 20, 0, &n), 0);
	assert_int_equal(n.out_regions, 4);
	assert_int_equal(n.hidden_align, 4ull << 20);
	assert_int_equal(n.hidden_bytes, (16ull + 64 + 4) << 20);
	assert_int_equal(n.ring_bytes, TRACE_CPU_STATE_BYTES + 4096 + (64ull << 20));
	/* 1 GiB ring, 256 MiB output: 64 regions of 4 MiB (the table holds them) */
	assert_int_equal(sized(TV_SOURCE_PT, 1024, 1ull << 30, 256ull << 20, 0, &n), 0);
	assert_int_equal(n.out_regions, 64);
	assert_int_equal(n.out_region_bytes, 4ull << 20);
	assert_int_equal(n.hidden_bytes, (256ull + 1024 + 4) << 20);
	assert_int_equal(n.hidden_bytes % n.hidden_align, 0);
	/* 4 GiB ring: past 32 bits */
	assert_int_equal(sized(TV_SOURCE_PT, 1024, 4ull << 30, 256ull << 20, 0, &n), 0);
	assert_int_equal(n.hidden_bytes, (4096ull + 256 + 4) << 20);
	/* the smallest: 16 KiB of output (4 x 4 KiB), 16 KiB ring */
	assert_int_equal(sized(TV_SOURCE_PT, 8, 16 << 10, 16 << 10, 0, &n), 0);
	assert_int_equal(n.out_region_bytes, 4096);
	assert_int_equal(n.hidden_bytes, 36 << 10);
}

/* Sizes a backend cannot lay out: TRACE_EINVAL, nothing to reserve. */
static void test_bad_sizes_refused(void **state)
{
	struct trace_needs n, zero;

	(void)state;
	memset(&zero, 0, sizeof(zero));
	/* the ring must hold a whole drain of the output */
	assert_int_equal(sized(TV_SOURCE_PT, 1024, 256 << 10, 1 << 20, 0, &n), TRACE_EINVAL);
	assert_memory_equal(&n, &zero, sizeof(n));
	/* powers of two only */
	assert_int_equal(sized(TV_SOURCE_PT, 1024, 3 << 20, 256 << 10, 0, &n), TRACE_EINVAL);
	assert_int_equal(sized(TV_SOURCE_PT, 1024, 1 << 20, 96 << 10, 0, &n), TRACE_EINVAL);
	/* the output's bounds: 16 KiB .. 256 MiB (64 regions of 4 MiB) */
	assert_int_equal(sized(TV_SOURCE_PT, 1024, 1 << 20, 8 << 10, 0, &n), TRACE_EINVAL);
	assert_int_equal(sized(TV_SOURCE_PT, 1024, 1ull << 40, 512ull << 20, 0, &n), TRACE_EINVAL);
	/* the ring's: at most 4 TiB */
	assert_int_equal(sized(TV_SOURCE_PT, 1024, 1ull << 43, 256 << 10, 0, &n), TRACE_EINVAL);
	/* bts: page multiples up to 4 MiB */
	assert_int_equal(sized(TV_SOURCE_BTS, 1024, 0, 0, 8ull << 20, &n), TRACE_EINVAL);
	assert_int_equal(sized(TV_SOURCE_BTS, 1024, 0, 0, 6000, &n), TRACE_EINVAL);
	/* sizes of other backends do not matter */
	assert_int_equal(sized(TV_SOURCE_MTF, 1024, 3, 5, 7, &n), 0);
	assert_int_equal(sized(TV_SOURCE_BTS, 1024, 3, 5, 1 << 20, &n), 0);
	assert_int_equal(n.guest_bytes, 4096 + (1 << 20));
	assert_int_equal(n.out_bytes, 1 << 20);
	assert_string_equal(n.out_key, "bts_buffer_kb");
	assert_null(n.stream_key);
}

/* The boot's line names the keys and the sizes in force. */
static void test_describe_names_keys(void **state)
{
	struct trace_setup s;
	struct trace_needs n;
	char buf[160], tiny[8];

	(void)state;
	memset(&s, 0, sizeof(s));
	s.source = TV_SOURCE_PT;
	s.ring_kb = 65536;
	s.pt_ring_bytes = 64ull << 20;
	s.pt_topa_bytes = 16ull << 20;
	assert_int_equal(trace_engine_needs(&s, &n), 0);
	assert_string_equal(trace_needs_describe(&s, &n, buf, sizeof(buf)),
			    "per traced CPU 151564 KiB: trace_buffer_kb = 65536, pt_buffer_kb = 65536, pt_topa_kb = 16384 (4 x 4 MiB regions)");
	s.source = TV_SOURCE_BTS;
	s.ring_kb = 1024;
	assert_int_equal(trace_engine_needs(&s, &n), 0);
	assert_string_equal(trace_needs_describe(&s, &n, buf, sizeof(buf)),
			    "per traced CPU 1104 KiB: trace_buffer_kb = 1024, bts_buffer_kb = 64");
	s.source = TV_SOURCE_MTF;
	assert_int_equal(trace_engine_needs(&s, &n), 0);
	assert_string_equal(trace_needs_describe(&s, &n, buf, sizeof(buf)),
			    "per traced CPU 1036 KiB: trace_buffer_kb = 1024");
	/* cut, never past the buffer */
	trace_needs_describe(&s, &n, tiny, sizeof(tiny));
	assert_string_equal(tiny, "per tra");
}

/* The CONFIG record's text: exact, and the drain only with a tick. */
static void test_buffers_text(void **state)
{
	struct trace_setup s;
	struct trace_needs n;
	char buf[200];
	size_t len;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.source = TV_SOURCE_PT;
	s.ring_kb = 1024;
	assert_int_equal(trace_engine_needs(&s, &n), 0);
	len = trace_buffers_text(&n, (1 << 20) - 128, 1000, buf, sizeof(buf));
	assert_string_equal(buf, "buffers ring_bytes=1048448 stream_bytes=1048576 output_bytes=262144 output_regions=4 output_region_bytes=65536 drain_us=1000");
	assert_int_equal(len, strlen(buf));
	s.source = TV_SOURCE_LBR;
	assert_int_equal(trace_engine_needs(&s, &n), 0);
	trace_buffers_text(&n, 4096, 1000, buf, sizeof(buf));
	assert_string_equal(buf, "buffers ring_bytes=4096 stream_bytes=0 output_bytes=0 output_regions=0 output_region_bytes=0 drain_us=0");
	assert_int_equal(trace_buffers_text(&n, 4096, 1000, buf, 10), 9);
	assert_string_equal(buf, "buffers r");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none_needs_nothing),
		cmocka_unit_test(test_ring_bytes_every_source),
		cmocka_unit_test(test_controls_per_source),
		cmocka_unit_test(test_pt_sizes_from_setup),
		cmocka_unit_test(test_bad_sizes_refused),
		cmocka_unit_test(test_describe_names_keys),
		cmocka_unit_test(test_buffers_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
