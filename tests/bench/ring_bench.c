/* SPDX-License-Identifier: MIT */
/*
 * ring_bench.c - host micro-benchmark of the trace ring's producer
 * (vmm/trace/ring.c): how many branch records per second
 * trace_append_branch appends, compact and full, against a plain memcpy
 * of 24-byte records into a buffer of the same size as the baseline.
 * Not a test: tests/bench/bench.sh builds it with -O2 into build/bench/
 * and prints its lines; docs/BENCHMARKS.md says what the numbers mean.
 *
 *   ring_bench [APPENDS [ROUNDS]]     defaults 8000000 appends, best of 5
 *
 * Every case appends the same APPENDS branches, taken round-robin from
 * precomputed address arrays (so address generation costs the same
 * everywhere), into a 1 MiB ring (trace_buffer_kb's default) under
 * TV_OVERFLOW_OVERWRITE: the ring wraps hundreds of times, so the time
 * includes dropping the oldest records, the producer's steady state in a
 * long capture.  The -nowrap cases start a fresh ring before it would
 * wrap (nothing dropped: the cost of a ring the exporter keeps drained).
 * The best round counts (the machine may be busy).
 *
 * Output, one line per case:
 *   ring: CASE appends N ns/rec X Mrec/s Y bytes/rec B vs-memcpy R
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vmm/trace/ring.h"

#define RING_BYTES (1u << 20)
#define NADDR      (1u << 16)   /* precomputed branches, reused round-robin */

static uint64_t from_c[NADDR], to_c[NADDR];   /* compact-friendly */
static uint64_t from_f[NADDR], to_f[NADDR];   /* forces full records */
static _Alignas(64) uint8_t ring_mem[RING_BYTES + 128];
static _Alignas(64) uint8_t flat[RING_BYTES];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Compact-friendly: each branch's source lies a little after the previous
 * target (straight-line code, then a branch), as MTF single-stepping sees
 * it.  Full: each source lies before the previous target, which the
 * compact form cannot express.
 */
static void make_addresses(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull, prev = 0xffffffff81000000ull;

	for (uint32_t i = 0; i < NADDR; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		from_c[i] = prev + 2 + (x & 63);
		to_c[i] = 0xffffffff81000000ull + ((x >> 8) & 0xffffff);
		prev = to_c[i];
	}
	/* wrap-around pair stays compact-friendly too */
	from_c[0] = to_c[NADDR - 1] + 5;
	for (uint32_t i = 0; i < NADDR; i++) {
		to_f[i] = 0xffffffff81000000ull + (uint64_t)i * 64 + 0x1000;
		from_f[i] = 0xffffffff81000000ull;   /* below every target */
	}
}

static struct tv_trace_ring *fresh_ring(void)
{
	struct tv_trace_ring *r = (struct tv_trace_ring *)ring_mem;

	if (trace_ring_init(r, sizeof(ring_mem), 0, 0, TV_SOURCE_MTF,
			    TV_OVERFLOW_OVERWRITE, 100000000ull, 0)) {
		fprintf(stderr, "ring_bench: trace_ring_init failed\n");
		exit(1);
	}
	return r;
}

enum bcase { C_MEMCPY, C_COMPACT, C_FULL, C_FULL_TSC, C_COMPACT_NOWRAP, C_FULL_NOWRAP, C_MAX };
static const char *const case_name[C_MAX] = {
	"memcpy24", "compact", "full", "full+tsc", "compact-nowrap", "full-nowrap",
};

/* One round; returns seconds, *bytes the bytes the ring grew by. */
static double run_case(enum bcase c, uint64_t n, uint64_t *bytes)
{
	struct tv_trace_ring *r = fresh_ring();
	bool compact = c == C_COMPACT || c == C_COMPACT_NOWRAP;
	const uint64_t *from = compact ? from_c : from_f;
	const uint64_t *to = compact ? to_c : to_f;
	uint32_t flags = c == C_FULL_TSC ? TV_BRF_TSC : 0;
	uint64_t head0 = r->head, errs = 0;
	double t0, t1;

	t0 = now_s();
	if (c == C_MEMCPY) {
		/* 24-byte records (header, from, to) laid end to end. */
		const size_t nrec = RING_BYTES / 24;
		size_t slot = 0;

		for (uint64_t i = 0; i < n; i++) {
			uint64_t rec[3];
			uint32_t k = (uint32_t)i & (NADDR - 1);

			rec[0] = 0x0000001801ull | ((uint64_t)TV_BR_JCC << 8);
			rec[1] = from[k];
			rec[2] = to[k];
			memcpy(flat + slot * 24, rec, 24);
			if (++slot == nrec)
				slot = 0;
			__asm__ volatile("" ::: "memory");
		}
		*bytes = n * 24;
	} else if (c == C_COMPACT_NOWRAP || c == C_FULL_NOWRAP) {
		/* Never full: a fresh ring before it would wrap (nothing dropped). */
		const uint64_t chunk = RING_BYTES / 32 - 64;

		*bytes = 0;
		for (uint64_t i = 0; i < n;) {
			uint64_t end = i + chunk < n ? i + chunk : n;

			r = fresh_ring();
			head0 = r->head;
			for (; i < end; i++) {
				uint32_t k = (uint32_t)i & (NADDR - 1);

				errs += trace_append_branch(r, from[k], to[k], TV_BR_JCC, 0, i) != 0;
			}
			*bytes += r->head - head0;
		}
	} else {
		for (uint64_t i = 0; i < n; i++) {
			uint32_t k = (uint32_t)i & (NADDR - 1);

			errs += trace_append_branch(r, from[k], to[k], TV_BR_JCC, flags, i) != 0;
		}
		*bytes = r->head - head0;
	}
	t1 = now_s();
	if (errs) {
		fprintf(stderr, "ring_bench: %s: %llu appends failed\n", case_name[c],
			(unsigned long long)errs);
		exit(1);
	}
	return t1 - t0;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : 8000000ull;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	double best[C_MAX];
	uint64_t bytes[C_MAX];

	if (!n || rounds < 1) {
		fprintf(stderr, "usage: ring_bench [APPENDS [ROUNDS]]\n");
		return 2;
	}
	make_addresses();
	for (int c = 0; c < C_MAX; c++)
		best[c] = 1e30;
	/* Interleave the cases round by round: load changes hit them alike. */
	for (int k = 0; k < rounds; k++)
		for (int c = 0; c < C_MAX; c++) {
			double s = run_case((enum bcase)c, n, &bytes[c]);

			if (s < best[c])
				best[c] = s;
		}
	for (int c = 0; c < C_MAX; c++)
		printf("ring: %s appends %llu ns/rec %.2f Mrec/s %.1f bytes/rec %.2f vs-memcpy %.2f\n",
		       case_name[c], (unsigned long long)n, best[c] * 1e9 / (double)n,
		       (double)n / best[c] / 1e6, (double)bytes[c] / (double)n,
		       best[c] / best[C_MEMCPY]);
	return 0;
}
