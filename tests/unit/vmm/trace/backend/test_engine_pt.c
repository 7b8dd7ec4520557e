/* SPDX-License-Identifier: MIT */
/*
 * test_engine_pt.c - the engine driving the PT backend on the fake seam
 * (fixture: ../engine_hw.h): the ToPA table and RTIT MSRs of a window,
 * GUEST_IA32_RTIT_CTL with TraceEn only inside it, the bytes the fake
 * "hardware" writes drained once each into the stream the exporter
 * takes, gaps counted; pmi = on (the ToPA PMI's NMI exits).
 */
#include <stdlib.h>

#include "../engine_hw.h"

/* --- PT ----------------------------------------------------------------------- */

#define PT_PA      0x1000000ull    /* where the fake "hardware" sees pt_area */
#define PT_CTL_WANT 0x250dull      /* TraceEn OS User ToPA TSCEn BranchEn */
#define RTIT_OUT_BASE 0x560u
#define RTIT_MASK     0x561u
#define RTIT_CTL      0x570u
#define RTIT_STATUS   0x571u
#define GLOBAL_STATUS 0x38eu

/*
 * The area at the default sizes (pt_buffer_kb 1024, pt_topa_kb 256):
 * 4 regions of 64 KiB, the table after them, the 1 MiB ring after the
 * table, 1344 KiB in all (test_pt_default_layout checks pt_unit_layout).
 */
#define DEF_PT_REGION_BYTES (64u * 1024)
#define DEF_PT_REGIONS      4u
#define DEF_PT_OUT_BYTES    (DEF_PT_REGIONS * DEF_PT_REGION_BYTES)
#define DEF_PT_TABLE_OFF    DEF_PT_OUT_BYTES
#define DEF_PT_RING_BYTES   (1024u * 1024)
#define DEF_PT_AREA_BYTES   (1344u * 1024)

static uint8_t pt_area[DEF_PT_AREA_BYTES] __attribute__((aligned(65536)));

/*
 * source = pt on a Kaby Lake R (the CPUID of tests/unit/vmm/trace/backend/test_trace_pt.c)
 * whose VMX has PT in VMX operation and both RTIT_CTL controls; the
 * VMCS uses them unless ctls is false.
 */
static void pt_engine_at(bool ctls, uint8_t *area, size_t bytes)
{
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
	if (ctls) {
		cpu.entry_ctls |= ENTRY_LOAD_RTIT_CTL;
		cpu.exit_ctls |= EXIT_CLEAR_RTIT_CTL;
	}
	assert_int_equal(trace_cpu_init(&cpu, ring_mem, sizeof(ring_mem), 1, 7,
					TV_SOURCE_PT, TV_OVERFLOW_STOP, 100000000, 0), 0);
	memset(area, 0xcc, bytes);
	assert_int_equal(trace_cpu_pt_area(&cpu, area, PT_PA), 0);
	engine(TV_SOURCE_PT, TV_TRIG_HYPERCALL, 0, TRACE_CPL_ALL);
}

static void pt_engine(bool ctls)
{
	pt_engine_at(ctls, pt_area, sizeof(pt_area));
}

/* The byte the "hardware" writes at running output position p of burst k. */
static uint8_t pt_byte(uint64_t p, unsigned k)
{
	return (uint8_t)(p * 7 + k * 13 + 1);
}

/*
 * The guest ran and PT wrote n bytes from the start of the output (the
 * drains rewind it): into the regions in order, the pointer left after
 * them (ToPA STOP on the last region: at most all of them).
 */
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

/* What trace_pt_take hands the exporter equals bursts (n[i], i) in order. */
static void assert_pt_stream(const uint64_t *n, unsigned bursts, uint64_t first_off)
{
	static uint8_t got[DEF_PT_RING_BYTES];
	uint64_t off = ~0ull, want = 0, at = 0;
	size_t len;

	for (unsigned k = 0; k < bursts; k++)
		want += n[k];
	len = trace_pt_take(&cpu, got, sizeof(got), &off);
	assert_int_equal(len, want);
	assert_int_equal(off, first_off);
	for (unsigned k = 0; k < bursts; k++)
		for (uint64_t p = 0; p < n[k]; p++, at++)
			if (got[at] != pt_byte(p, k))
				fail_msg("stream byte %llu (burst %u, position %llu): %#x, want %#x",
					 (unsigned long long)at, k, (unsigned long long)p, got[at],
					 pt_byte(p, k));
	assert_int_equal(trace_pt_take(&cpu, got, sizeof(got), &off), 0);
}

/*
 * A window: the ToPA table (4 regions, STOP on the last, END back to the
 * table), the RTIT MSRs armed in VMX root, GUEST_IA32_RTIT_CTL with
 * TraceEn for the window's entries only; the bytes of each stretch of
 * guest execution drained once at its exit, in order, with a PT_SYNC
 * record each; off again after the stop.
 */
static void test_pt_window_drains(void **state)
{
	const uint64_t *table = (const uint64_t *)(const void *)(pt_area + DEF_PT_TABLE_OFF);
	const uint64_t bursts[3] = { 100, 70000, 3 };
	struct trace_event ev[16];
	size_t n;

	(void)state;
	pt_engine(true);
	cpuid_exit(0x1100);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_RTIT_CTL), 0);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_RTIT_CTL), PT_CTL_WANT);
	assert_int_equal(hw_fake_get_msr(RTIT_OUT_BASE), PT_PA + DEF_PT_TABLE_OFF);
	assert_int_equal(hw_fake_get_msr(RTIT_MASK), 0x7f);
	assert_int_equal(hw_fake_get_msr(RTIT_STATUS), 0);   /* PacketByteCnt 0: PSB+ first */
	for (unsigned i = 0; i < DEF_PT_REGIONS; i++)
		assert_int_equal(table[i], (PT_PA + i * DEF_PT_REGION_BYTES) | 4u << 6 |
					   (i == DEF_PT_REGIONS - 1 ? 0x10u : 0));
	assert_int_equal(table[DEF_PT_REGIONS], (PT_PA + DEF_PT_TABLE_OFF) | 1u);
	assert_non_null(strstr(logbuf, "trace: cpu 1: Intel PT, ToPA multi-entry, 2 address ranges, CR3 filter yes, PT area at 0x1000000"));

	pt_hw_write(bursts[0], 0);
	cpuid_exit(0x1200);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_RTIT_CTL), PT_CTL_WANT);
	cpuid_exit(0x1202);                           /* nothing new: nothing twice */
	pt_hw_write(bursts[1], 1);                    /* across two regions */
	cpuid_exit(0x1204);
	pt_hw_write(bursts[2], 2);                    /* between the last exit and STOP */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_RTIT_CTL), 0);
	assert_int_equal(windows_done, 1);
	assert_pt_stream(bursts, 3, 0);
	/* START, three PT_SYNCs at the running offsets with nothing lost, STOP */
	n = events(ev, 16);
	assert_int_equal(n, 5);
	assert_int_equal(ev[0].type, TV_REC_START);
	for (unsigned i = 1; i <= 3; i++) {
		assert_int_equal(ev[i].type, TV_REC_PT_SYNC);
		assert_int_equal(ev[i].u.pt_sync.pt_lost, 0);
	}
	assert_int_equal(ev[1].u.pt_sync.pt_offset, 100);
	assert_int_equal(ev[2].u.pt_sync.pt_offset, 70100);
	assert_int_equal(ev[3].u.pt_sync.pt_offset, 70103);
	assert_int_equal(ev[4].type, TV_REC_STOP);
	assert_non_null(strstr(logbuf, "window 1 stopped (hypercall): 70103 PT bytes (stream at 70103), 5 drains, 0 stops, 0 errors, 0 bad pointers, 0 bytes refused, 0 drain failures, PT lost 0; ring lost 0 records"));
	/* Outside a window TraceEn stays off; a second window goes on from 70103. */
	cpuid_exit(0x1206);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_RTIT_CTL), 0);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	pt_hw_write(5, 0);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_pt_stream((const uint64_t[]){ 5 }, 1, 70103);
}

/* The output filled up (ToPA STOP): the bytes kept, a counted gap, STATUS reset. */
static void test_pt_stopped_counted(void **state)
{
	struct trace_event ev[16];

	(void)state;
	pt_engine(true);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	pt_hw_write(DEF_PT_OUT_BYTES, 0);
	hw_fake_set_msr(RTIT_STATUS, 1ull << 5);      /* Stopped */
	cpuid_exit(0x1200);
	assert_int_equal(hw_fake_get_msr(RTIT_STATUS), 0);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_pt_stream((const uint64_t[]){ DEF_PT_OUT_BYTES }, 1, 0);
	assert_true(events(ev, 16) >= 3);
	assert_non_null(strstr(logbuf, "262144 PT bytes (stream at 262144), 3 drains, 1 stops, 0 errors, 0 bad pointers, 0 bytes refused, 0 drain failures, PT lost 1;"));
}

/* More than the byte ring holds before an export: counted, the window closes (full). */
static void test_pt_byte_ring_full(void **state)
{
	uint64_t bursts[5];

	(void)state;
	pt_engine(true);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (unsigned k = 0; k < 5; k++) {
		bursts[k] = 250000;
		pt_hw_write(bursts[k], k);
		cpuid_exit(0x1200 + 2 * k);
	}
	assert_int_equal(windows_done, 1);             /* closed by the fifth drain */
	assert_int_equal(vmcs(VMCS_GUEST_IA32_RTIT_CTL), 0);
	bursts[4] = DEF_PT_RING_BYTES - 4 * 250000;
	assert_pt_stream(bursts, 5, 0);
	assert_non_null(strstr(logbuf, "window 1 stopped (full): 1048576 PT bytes (stream at 1048576), 7 drains, 0 stops, 0 errors, 0 bad pointers, 201424 bytes refused, 0 drain failures, PT lost 201424;"));
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_EBUSY);
}

/* Without the RTIT_CTL controls (or without PT) no window opens: it would trace VMX root. */
static void test_pt_refused_without_controls(void **state)
{
	(void)state;
	pt_engine(false);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "trace: cpu 1: the VMCS does not load and clear IA32_RTIT_CTL"));
	assert_int_equal(hw_fake_get_msr(RTIT_OUT_BASE), 0);
	cpuid_exit(0x1200);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_RTIT_CTL), 0);
}

/* A CPL filter PT cannot express (CPL 1 without 3) is refused, not widened. */
static void test_pt_filter_refused(void **state)
{
	(void)state;
	pt_engine(true);
	engine(TV_SOURCE_PT, TV_TRIG_HYPERCALL, 0, 1u << 1);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "trace: cpu 1: pt window not opened:"));
	engine(TV_SOURCE_PT, TV_TRIG_HYPERCALL, 0, TRACE_CPL_KERNEL);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_RTIT_CTL), PT_CTL_WANT & ~(1ull << 3));   /* OS only */
}

/* A window arms the drain tick: the preemption timer counts to it from the start. */
static void test_pt_drain_tick_armed(void **state)
{
	(void)state;
	pt_engine(true);
	cpu.pin |= PIN_PREEMPTION_TIMER;
	cpu.timer_shift = 0;
	cpu.drain_period_tsc = 100000;
	hw_fake_vmcs_set(VMCS_PREEMPTION_TIMER_VALUE, 0xffffffffu);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_true(vmcs(VMCS_PREEMPTION_TIMER_VALUE) <= 100000);
	assert_true(vmcs(VMCS_PREEMPTION_TIMER_VALUE) > 0);
	assert_true(cpu.next_drain_tsc - hw_rdtsc() <= 100000);
}

/* pt_options reach IA32_RTIT_CTL exactly, and what leaf 14H lacks is refused. */
static void test_pt_options(void **state)
{
	struct trace_setup s;

	(void)state;
	pt_engine(true);
	memset(&s, 0, sizeof(s));
	s.source = TV_SOURCE_PT;
	s.overflow = TV_OVERFLOW_STOP;
	s.start = TV_TRIG_HYPERCALL;
	s.ring_kb = 16;
	trace_filter_all(&s.filter);
	/* Kaby Lake R: MTC periods 0x249 (0, 3, 6, 9), CYC 0x3fff, PSB 0x3f */
	s.pt = (struct trace_pt_opts){ .tsc = 0, .dis_retc = 1, .mtc = 1, .mtc_freq = 3,
				       .cyc = 1, .cyc_thresh = 2, .psb_freq = 5 };
	trace_engine_init(&s, read_phys, NULL, on_window);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_RTIT_CTL),
			 (PT_CTL_WANT & ~(1ull << 10)) | 1ull << 11 | 1ull << 9 | 3ull << 14 |
			 1ull << 1 | 2ull << 19 | 5ull << 24);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	s.pt.mtc_freq = 1;
	trace_engine_init(&s, read_phys, NULL, on_window);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "pt window not opened: "));
	assert_non_null(strstr(logbuf, "mtc_freq 1"));
}


/*
 * pt, pmi = on: INT on the ToPA entry before the last (STOP stays on the
 * last); Trace_ToPA_PMI's NMI exit drains, clears the bit, unmasks the
 * LVT and is not given to the guest.
 */
static void test_pt_pmi_drains_on_nmi(void **state)
{
	const uint64_t *table = (const uint64_t *)(const void *)(pt_area + DEF_PT_TABLE_OFF);
	const uint64_t bursts[2] = { 3 * DEF_PT_REGION_BYTES - 5, 40 };

	(void)state;
	eng_pmi = 1;
	cpu.pin |= PIN_NMI_EXITING;
	pmi_apic();
	pt_engine(true);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (unsigned i = 0; i < DEF_PT_REGIONS; i++)
		assert_int_equal(table[i], (PT_PA + i * DEF_PT_REGION_BYTES) | 4u << 6 |
					   (i == DEF_PT_REGIONS - 1 ? 0x10u : 0) |
					   (i == DEF_PT_REGIONS - 2 ? 0x04u : 0));
	assert_int_equal(lvtpc(), LVT_NMI);
	pt_hw_write(bursts[0], 0);             /* past the INT region's end */
	hw_fake_set_msr(GLOBAL_STATUS, 1ull << 55);
	pmi_delivered();
	nmi_exit(0x1200);
	assert_int_equal(hw_fake_get_msr(RTIT_MASK), 0x7f);     /* drained, rewound */
	assert_int_equal(cpu.nmi_pending, 0);
	assert_int_equal(lvtpc(), LVT_NMI);
	assert_int_equal(pt_unit(&cpu.trace->b)->pt.stats.pmis_ours, 1);
	pt_hw_write(bursts[1], 1);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_pt_stream(bursts, 2, 0);
	assert_non_null(strstr(logbuf, "window 1 PMIs: 1 ours (0 taken in VMX root), 0 NMIs reflected"));
	/* A ToPA PMI with a guest counter's bit: ours and the guest's. */
	cpu.nmi_pending = 0;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	hw_fake_set_msr(GLOBAL_STATUS, 1ull << 55 | 1ull << 32);
	nmi_exit(0x1202);
	assert_int_equal(cpu.nmi_pending, 1);
	assert_int_equal(cpu.trace->pmi.ours, 1);
}

/* Without pmi nothing of this happens: no INT entry, the LVT untouched. */
static void test_pt_no_pmi_lvt_untouched(void **state)
{
	const uint64_t *table = (const uint64_t *)(const void *)(pt_area + DEF_PT_TABLE_OFF);

	(void)state;
	pmi_apic();
	pt_engine(true);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (unsigned i = 0; i < DEF_PT_REGIONS; i++)
		assert_int_equal(table[i] & 0x04u, 0);
	assert_int_equal(lvtpc(), LVT_MASKED);
	assert_int_equal(hw_fake_mmio_write_count, 0);
	assert_null(strstr(logbuf, "PMIs:"));
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_null(strstr(logbuf, "PMIs:"));
}

/* The defaults lay out today's area; the PMI's region ends at 3/4 of the output. */
static void test_pt_default_layout(void **state)
{
	struct pt_area_layout l;

	(void)state;
	assert_int_equal(pt_unit_layout(NULL, &l), 0);
	assert_int_equal(l.regions, DEF_PT_REGIONS);
	assert_int_equal(l.region_bytes, DEF_PT_REGION_BYTES);
	assert_int_equal(l.topa_bytes, DEF_PT_OUT_BYTES);
	assert_int_equal(l.table_off, DEF_PT_TABLE_OFF);
	assert_int_equal(l.ring_off, DEF_PT_TABLE_OFF + 4096);
	assert_int_equal(l.ring_bytes, DEF_PT_RING_BYTES);
	assert_int_equal(l.area_bytes, DEF_PT_AREA_BYTES);
	assert_int_equal(l.int_entry, 2);
	/* 16 KiB: 4 x 4 KiB; 32 MiB: 8 x 4 MiB, INT on the 6th; 256 MiB: 64, INT on the 48th */
	assert_int_equal(pt_area_layout(16 << 10, 16 << 10, &l), 0);
	assert_int_equal(l.regions, 4);
	assert_int_equal(l.region_bytes, 4096);
	assert_int_equal(l.area_bytes, 36 << 10);
	assert_int_equal(pt_area_layout(32 << 20, 32 << 20, &l), 0);
	assert_int_equal(l.regions, 8);
	assert_int_equal(l.int_entry, 5);
	assert_int_equal(l.area_bytes, (32 + 32 + 4) << 20);
	assert_int_equal(pt_area_layout(256 << 20, 1ull << 30, &l), 0);
	assert_int_equal(l.regions, 64);
	assert_int_equal(l.int_entry, 47);
	/* refused: a ring smaller than the output, no power of two, out of bounds */
	assert_int_equal(pt_area_layout(1 << 20, 512 << 10, &l), PT_ERR_INVAL);
	assert_int_equal(l.area_bytes, 0);
	assert_int_equal(pt_area_layout(48 << 10, 1 << 20, &l), PT_ERR_INVAL);
	assert_int_equal(pt_area_layout(8 << 10, 1 << 20, &l), PT_ERR_INVAL);
	assert_int_equal(pt_area_layout(512 << 20, 1ull << 30, &l), PT_ERR_INVAL);
}

/*
 * pt_topa_kb = 32768, pt_buffer_kb = 32768, pmi = on: the ToPA table has
 * 8 regions of 4 MiB (size code 10), INT on the 6th (3/4), STOP on the
 * last, END back to the table after them; the stream ring is 32 MiB; a
 * burst across three regions is drained whole.
 */
static void test_pt_topa_from_setup(void **state)
{
	const uint64_t region = 4ull << 20, topa = 32ull << 20, ring = 32ull << 20;
	const uint64_t area_bytes = topa + ring + region;
	uint8_t *area = aligned_alloc(region, area_bytes);
	const uint64_t *table;
	struct byte_ring *br;
	uint64_t n = 2 * region + 12345, off = ~0ull;
	uint8_t *got = malloc(n);

	(void)state;
	assert_non_null(area);
	assert_non_null(got);
	table = (const uint64_t *)(const void *)(area + topa);
	eng_pt_topa = topa;
	eng_pt_ring = ring;
	eng_pmi = 1;
	cpu.pin |= PIN_NMI_EXITING;
	pmi_apic();
	engine(TV_SOURCE_PT, TV_TRIG_HYPERCALL, 0, TRACE_CPL_ALL);   /* the sizes, before the area */
	pt_engine_at(true, area, area_bytes);
	br = trace_cpu_pt_stream(&cpu);
	assert_non_null(br);
	assert_int_equal(br->size, ring);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(hw_fake_get_msr(RTIT_OUT_BASE), PT_PA + topa);
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(table[i], (PT_PA + i * region) | 10u << 6 |
					   (i == 7 ? 0x10u : 0) | (i == 5 ? 0x04u : 0));
	assert_int_equal(table[8], (PT_PA + topa) | 1u);
	assert_non_null(strstr(logbuf, "output 8 x 4096 KiB (pt_topa_kb), stream ring 32768 KiB (pt_buffer_kb)"));
	for (uint64_t p = 0; p < n; p++)
		area[p] = pt_byte(p, 3);
	hw_fake_set_msr(RTIT_MASK, 0x7f | 2ull << 7 | 12345ull << 32);
	cpuid_exit(0x1200);
	assert_int_equal(hw_fake_get_msr(RTIT_MASK), 0x7f);
	assert_int_equal(trace_pt_take(&cpu, got, n, &off), n);
	assert_int_equal(off, 0);
	for (uint64_t p = 0; p < n; p++)
		if (got[p] != pt_byte(p, 3))
			fail_msg("stream byte %llu: %#x", (unsigned long long)p, got[p]);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	free(got);
	free(area);
}

/* A CPU without multiple-entry ToPA: region 0 only, STOP on it, then END. */
static void test_pt_single_entry_topa(void **state)
{
	const uint64_t *table = (const uint64_t *)(const void *)(pt_area + DEF_PT_TABLE_OFF);

	(void)state;
	pt_engine(true);
	hw_fake_set_cpuid(0x14, 0, 0x00000001, 0x0000000f, 0x00000005, 0x00000000);  /* ECX[1] = 0 */
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(table[0], PT_PA | 4u << 6 | 0x10u);
	assert_int_equal(table[1], (PT_PA + DEF_PT_TABLE_OFF) | 1u);
	assert_non_null(strstr(logbuf, "ToPA single-entry"));
	assert_non_null(strstr(logbuf, "output 1 x 64 KiB (pt_topa_kb)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pt_default_layout),
		cmocka_unit_test_setup_teardown(test_pt_topa_from_setup, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pt_single_entry_topa, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pt_pmi_drains_on_nmi, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pt_no_pmi_lvt_untouched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pt_window_drains, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pt_stopped_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pt_byte_ring_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pt_refused_without_controls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pt_filter_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pt_options, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pt_drain_tick_armed, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
