/* SPDX-License-Identifier: MIT */
/*
 * test_layout.c - the reservation's layout (vmm/layout.c): totals, page
 * alignment, no overlap, the hidden (pt) areas aligned to their region
 * size by physical address, the guest-visible (bts) range, and no trace
 * bytes without tracing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/layout.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define REGION (64 * KiB)                 /* a ToPA region (pt) */
#define PT_AREA (1408 * KiB)              /* 4 regions + table + 1 MiB ring, region multiple */
#define BTS_AREA (4 * KiB + 64 * KiB)

static struct hv_layout_req base_req(uint32_t ncpus)
{
	struct hv_layout_req r;

	memset(&r, 0, sizeof(r));
	r.image_bytes = 1234567;              /* not a page multiple: rounded */
	r.ncpus = ncpus;
	r.cpu_struct_bytes = 3000;
	r.info_bytes = 9000;
	return r;
}

/* Today's formula in boot/vmx_boot.c, before the layout moved out. */
static uint64_t old_total(const struct hv_layout_req *r)
{
	uint64_t pg = 4095, n = r->ncpus;
	uint64_t image = (r->image_bytes + pg) & ~pg;
	uint64_t cpus = (n * r->cpu_struct_bytes + pg) & ~pg;
	uint64_t info = (r->info_bytes + pg) & ~pg;
	uint64_t ex = (r->exporter_bytes + pg) & ~pg;

	return image + n * (4 * 4096 + 64 * KiB) + cpus + info + 2 * 4096 + 3 * 4096 +
	       8 * MiB + n * r->ring_bytes + n * r->guest_bytes + r->nic_dma_bytes + ex +
	       (r->hidden_bytes ? n * r->hidden_bytes + r->hidden_align : 0);
}

struct part {
	uint64_t off, bytes;
	const char *name;
};

/* Every part page aligned, inside the total, and disjoint from the others (nt traced CPUs). */
static void assert_sane_nt(const struct hv_layout *l, uint32_t n, uint32_t nt)
{
	struct part p[] = {
		{ l->image_off, l->image_bytes, "image" },
		{ l->cpus_off, l->cpus_bytes, "cpus" },
		{ l->info_off, l->info_bytes, "info" },
		{ l->idt_off, 4096, "idt" },
		{ l->guest_tss_off, 4096, "guest tss" },
		{ l->io_bitmap_a_off, 4096, "io a" },
		{ l->io_bitmap_b_off, 4096, "io b" },
		{ l->ff_page_off, 4096, "ff page" },
		{ l->nic_dma_off, l->nic_dma_bytes, "nic dma" },
		{ l->exporter_off, l->exporter_bytes, "exporter" },
		{ l->percpu_off, n * l->percpu_bytes, "per-cpu pages" },
		{ l->pool_off, l->pool_bytes, "pool" },
		{ l->ring_off, nt * l->ring_bytes, "rings" },
		{ l->guest_off, nt * l->guest_bytes, "guest areas" },
		{ l->hidden_off, nt * l->hidden_bytes, "hidden areas" },
	};
	size_t np = sizeof(p) / sizeof(p[0]);

	assert_int_equal(l->total % 4096, 0);
	for (size_t i = 0; i < np; i++) {
		if (!p[i].bytes)
			continue;
		if (p[i].off % 4096 || p[i].bytes % 4096 || p[i].off + p[i].bytes > l->total)
			fail_msg("%s at %#llx+%#llx: unaligned or past the total %#llx", p[i].name,
				 (unsigned long long)p[i].off, (unsigned long long)p[i].bytes,
				 (unsigned long long)l->total);
		for (size_t j = 0; j < i; j++) {
			if (p[j].bytes && p[i].off < p[j].off + p[j].bytes && p[j].off < p[i].off + p[i].bytes)
				fail_msg("%s overlaps %s", p[i].name, p[j].name);
		}
	}
}

static void assert_sane(const struct hv_layout *l, uint32_t n)
{
	assert_sane_nt(l, n, n);
}

static void test_no_trace_no_trace_bytes(void **state)
{
	struct hv_layout_req r = base_req(4);
	struct hv_layout l;

	(void)state;
	assert_int_equal(hv_layout_compute(&r, 0x7e000000, &l), 0);
	assert_int_equal(l.ring_bytes, 0);
	assert_int_equal(l.guest_bytes, 0);
	assert_int_equal(l.hidden_bytes, 0);
	assert_int_equal(l.nic_dma_bytes, 0);
	assert_int_equal(l.exporter_bytes, 0);
	assert_int_equal(l.total, old_total(&r));
	/* nothing after the pool */
	assert_int_equal(l.total, l.pool_off + 8 * MiB);
	assert_int_equal(l.image_off, 0);
	assert_int_equal(l.image_bytes, 1236992);
	assert_int_equal(l.cpus_bytes, 12288);
	assert_int_equal(l.percpu_bytes, HV_PERCPU_BYTES);
	assert_sane(&l, 4);
}

/* The order of today's boot code, offset by offset. */
static void test_order_as_before(void **state)
{
	struct hv_layout_req r = base_req(2);
	struct hv_layout l;
	uint64_t o;

	(void)state;
	r.nic_dma_bytes = 256 * KiB;
	r.exporter_bytes = 5000;
	r.ring_bytes = 64 * KiB + 4096;
	r.guest_bytes = BTS_AREA;
	assert_int_equal(hv_layout_compute(&r, 0, &l), 0);
	o = l.image_bytes;
	assert_int_equal(l.cpus_off, o);
	o += l.cpus_bytes;
	assert_int_equal(l.info_off, o);
	o += l.info_bytes;
	assert_int_equal(l.idt_off, o);
	assert_int_equal(l.guest_tss_off, o + 4096);
	assert_int_equal(l.io_bitmap_a_off, o + 2 * 4096);
	assert_int_equal(l.io_bitmap_b_off, o + 3 * 4096);
	assert_int_equal(l.ff_page_off, o + 4 * 4096);
	o += 5 * 4096;
	assert_int_equal(l.nic_dma_off, o);
	o += 256 * KiB;
	assert_int_equal(l.exporter_off, o);
	assert_int_equal(l.exporter_bytes, 8192);
	o += 8192;
	assert_int_equal(l.percpu_off, o);
	o += 2 * HV_PERCPU_BYTES;
	assert_int_equal(l.pool_off, o);
	o += HV_POOL_BYTES;
	assert_int_equal(l.ring_off, o);
	o += 2 * r.ring_bytes;
	assert_int_equal(l.guest_off, o);
	o += 2 * BTS_AREA;
	assert_int_equal(l.total, o);
	assert_int_equal(l.total, old_total(&r));
	assert_sane(&l, 2);
}

/* bts: the guest-visible range is exactly the CPUs' areas, after the rings. */
static void test_bts_visible_range(void **state)
{
	struct hv_layout_req r = base_req(3);
	struct hv_layout l;

	(void)state;
	r.ring_bytes = 16 * KiB + 4096;
	r.guest_bytes = BTS_AREA;
	assert_int_equal(hv_layout_compute(&r, 0x40000000, &l), 0);
	assert_int_equal(l.guest_bytes, BTS_AREA);
	assert_int_equal(l.guest_off, l.ring_off + 3 * r.ring_bytes);
	assert_int_equal(l.guest_off + 3 * BTS_AREA, l.total);   /* nothing hidden after it */
	assert_int_equal(l.hidden_bytes, 0);
	assert_int_equal(l.total, old_total(&r));
	assert_sane(&l, 3);
}

/* pt: aligned to the region size by physical address, for any base. */
static void test_pt_areas_region_aligned(void **state)
{
	static const uint64_t bases[] = {
		0, 0x1000, 0x7ee01000, 0x7ee0f000, 0x100000000ull - 0x3000, 0x80010000,
	};
	struct hv_layout_req r = base_req(5);
	uint64_t total0 = 0;

	(void)state;
	r.ring_bytes = 64 * KiB + 4096;
	r.hidden_bytes = PT_AREA;
	r.hidden_align = REGION;
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		struct hv_layout l;

		assert_int_equal(hv_layout_compute(&r, bases[i], &l), 0);
		assert_int_equal((bases[i] + l.hidden_off) % REGION, 0);
		for (uint32_t c = 0; c < 5; c++)
			assert_int_equal((bases[i] + l.hidden_off + c * l.hidden_bytes) % REGION, 0);
		assert_true(l.hidden_off >= l.guest_off + 5 * l.guest_bytes);
		assert_true(l.hidden_off - (l.guest_off + 5 * l.guest_bytes) < REGION);
		assert_true(l.hidden_off + 5 * PT_AREA <= l.total);
		/* the total does not depend on where the reservation landed */
		if (i == 0)
			total0 = l.total;
		assert_int_equal(l.total, total0);
		assert_int_equal(l.total, old_total(&r));
		assert_sane(&l, 5);
	}
}

static void test_errors(void **state)
{
	struct hv_layout_req r = base_req(1);
	struct hv_layout l;

	(void)state;
	r.ncpus = 0;
	assert_int_equal(hv_layout_compute(&r, 0, &l), HV_LAYOUT_EINVAL);
	assert_int_equal(l.total, 0);
	r = base_req(1);
	assert_int_equal(hv_layout_compute(&r, 0x123, &l), HV_LAYOUT_EINVAL);   /* base */
	r.ring_bytes = 100;
	assert_int_equal(hv_layout_compute(&r, 0, &l), HV_LAYOUT_EINVAL);
	r = base_req(1);
	r.hidden_bytes = PT_AREA;
	r.hidden_align = 0;
	assert_int_equal(hv_layout_compute(&r, 0, &l), HV_LAYOUT_EINVAL);
	r.hidden_align = 3 * 4096;                                            /* not a power of two */
	assert_int_equal(hv_layout_compute(&r, 0, &l), HV_LAYOUT_EINVAL);
	r.hidden_align = 1024 * KiB;                                          /* area not a multiple */
	assert_int_equal(hv_layout_compute(&r, 0, &l), HV_LAYOUT_EINVAL);
	r = base_req(1);
	r.image_bytes = UINT64_MAX - 10;
	assert_int_equal(hv_layout_compute(&r, 0, &l), HV_LAYOUT_EOVERFLOW);
	assert_int_equal(l.total, 0);
	r = base_req(64);
	r.ring_bytes = 1ull << 60;
	assert_int_equal(hv_layout_compute(&r, 0, &l), HV_LAYOUT_EOVERFLOW);
	assert_non_null(strstr(hv_layout_strerror(HV_LAYOUT_EOVERFLOW), "overflow"));
	assert_non_null(strstr(hv_layout_strerror(HV_LAYOUT_EINVAL), "invalid"));
	assert_string_equal(hv_layout_strerror(-99), "unknown error");
}

/*
 * Buffers of hundreds of MiB per CPU (trace_buffer_kb = pt_buffer_kb =
 * 1 GiB, pt_topa_kb = 256 MiB: 64 regions of 4 MiB, vmm/trace/needs.c)
 * on 2..256 CPUs: exact totals in 64 bits, every CPU's PT area aligned to
 * its region size by physical address, nothing overlapping.
 */
static void test_big_buffers_many_cpus(void **state)
{
	static const uint32_t counts[] = { 2, 3, 16, 64, 255, 256 };
	static const uint64_t bases[] = { 0x1000, 0x7ee01000, 0x100000000ull - 0x3000, 0x4000000000ull };
	const uint64_t ring = 8 * KiB + 4 * KiB + 1024 * MiB;            /* state, header, 1 GiB */
	const uint64_t region = 4 * MiB, area = 1024 * MiB + 256 * MiB + 4 * MiB;

	(void)state;
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		struct hv_layout_req r = base_req(counts[i]);

		r.ring_bytes = ring;
		r.hidden_bytes = area;
		r.hidden_align = region;
		for (size_t j = 0; j < sizeof(bases) / sizeof(bases[0]); j++) {
			struct hv_layout l;

			assert_int_equal(hv_layout_compute(&r, bases[j], &l), 0);
			assert_int_equal(l.total, old_total(&r));
			assert_true(l.total > (uint64_t)counts[i] * (ring + area));  /* past 2^32 at once */
			assert_int_equal(l.ntraced, counts[i]);
			for (uint32_t c = 0; c < counts[i]; c++)
				assert_int_equal((bases[j] + l.hidden_off + c * l.hidden_bytes) % region, 0);
			assert_true(l.hidden_off + counts[i] * area <= l.total);
			assert_sane(&l, counts[i]);
		}
	}
}

/* Only the CPUs trace_cpus selects get the trace parts. */
static void test_trace_parts_for_traced_cpus(void **state)
{
	struct hv_layout_req r = base_req(8);
	struct hv_layout all, two;

	(void)state;
	r.ring_bytes = 64 * MiB;
	r.hidden_bytes = PT_AREA;
	r.hidden_align = REGION;
	assert_int_equal(hv_layout_compute(&r, 0x80000000ull, &all), 0);
	assert_int_equal(all.ntraced, 8);                                  /* 0: all of them */
	r.ntraced = 2;
	assert_int_equal(hv_layout_compute(&r, 0x80000000ull, &two), 0);
	assert_int_equal(two.ntraced, 2);
	assert_int_equal(all.total - two.total, 6 * (64 * MiB + PT_AREA));
	assert_int_equal((0x80000000ull + two.hidden_off + PT_AREA) % REGION, 0);
	assert_sane_nt(&two, 8, 2);
	r.ntraced = 9;
	assert_int_equal(hv_layout_compute(&r, 0, &two), HV_LAYOUT_EINVAL);
	assert_int_equal(two.total, 0);
}

/* Sizes whose sum passes 2^64 are an error, never a wrapped small total. */
static void test_huge_sizes_overflow(void **state)
{
	struct hv_layout_req r = base_req(256);
	struct hv_layout l;

	(void)state;
	r.ring_bytes = 1ull << 56;                       /* 256 x 2^56 = 2^64 */
	assert_int_equal(hv_layout_compute(&r, 0, &l), HV_LAYOUT_EOVERFLOW);
	assert_int_equal(l.total, 0);
	r.ring_bytes = 0;
	r.hidden_bytes = 1ull << 57;                     /* 256 x 2^57 = 2^65 */
	r.hidden_align = 1ull << 22;
	assert_int_equal(hv_layout_compute(&r, 0, &l), HV_LAYOUT_EOVERFLOW);
	r.ntraced = 1;                                   /* one CPU's 2^57 fits */
	assert_int_equal(hv_layout_compute(&r, 0, &l), 0);
	assert_int_equal(l.hidden_off % (1ull << 22), 0);
	r.hidden_bytes = 1ull << 20;
	r.hidden_align = 1ull << 20;
	assert_int_equal(hv_layout_compute(&r, UINT64_MAX - 0xfff, &l), HV_LAYOUT_EOVERFLOW);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_big_buffers_many_cpus),
		cmocka_unit_test(test_trace_parts_for_traced_cpus),
		cmocka_unit_test(test_huge_sizes_overflow),
		cmocka_unit_test(test_no_trace_no_trace_bytes),
		cmocka_unit_test(test_order_as_before),
		cmocka_unit_test(test_bts_visible_range),
		cmocka_unit_test(test_pt_areas_region_aligned),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests_name("test_layout", tests, NULL, NULL);
}
