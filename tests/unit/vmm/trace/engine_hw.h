/* SPDX-License-Identifier: MIT */
/*
 * engine_hw.h - the fixture of the engine-with-hardware tests
 * (tests/unit/vmm/trace/backend/test_engine_*.c, test_trace_pmi.c): the
 * engine (vmm/trace/engine.c) driving the BTF+LBR, LBR, BTS and PT
 * backends on the fake seam, one VM exit at a time.
 *
 * The CPU is a Skylake-SP as Bochs's corei7_skylake_x reports it (family 6
 * model 0x55, PDCM, IA32_PERF_CAPABILITIES format 5: a 32-entry stack at
 * 0x680/0x6C0 with LBR_INFO at 0xDC0); the guest runs 32-bit, paging off.
 * Included once per test file: its helpers are static, each file uses
 * some of them.
 */
#ifndef TV_TEST_ENGINE_HW_H
#define TV_TEST_ENGINE_HW_H

#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/exit/exit.h"
#include "vmm/exit/hypercall.h"
#include "vmm/lib/log.h"
#include "vmm/hw/msr.h"
#include "vmm/trace/caps.h"
#include "vmm/trace/backend/btf.h"
#include "vmm/trace/backend/bts.h"
#include "vmm/trace/backend/lbr.h"
#include "vmm/trace/backend/pt.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/msr_policy.h"
#include "vmm/trace/read.h"

#define TOS     0x1c9u
#define SELECT  0x1c8u
#define FROM(n) (0x680u + (n))
#define TO(n)   (0x6c0u + (n))
#define INFO(n) (0xdc0u + (n))

#define DBG_LBR    (1ull << 0)
#define DBG_BTF    (1ull << 1)
#define DBG_GUEST  (1ull << 12)   /* FREEZE_PERFMON_ON_PMI: a bit the guest keeps */
#define TF         (1ull << 8)
#define QUAL_B0    0x1ull
#define QUAL_BD    (1ull << 13)
#define QUAL_BS    (1ull << 14)
#define DB_HW_EXC  (INTR_INFO_VALID | (INTR_TYPE_HW_EXCEPTION << INTR_INFO_TYPE_SHIFT) | 1u)

static struct per_cpu cpu;
static struct guest_regs regs;
static uint64_t ring_mem[(TRACE_CPU_STATE_BYTES + 4096 + 16384) / 8] __attribute__((aligned(64)));
static uint8_t gmem[0x10000];
static int windows_done;
static char logbuf[8192];
static size_t loglen;
static uint8_t eng_pmi;          /* trace_setup.pmi for engine() */
static uint32_t eng_pmi_every;   /* trace_setup.pmi_every */
static uint64_t eng_pt_ring, eng_pt_topa;   /* trace_setup.pt_ring_bytes, pt_topa_bytes (0: defaults) */

static int read_phys(void *opaque, uint64_t gpa, void *buf, size_t len)
{
	(void)opaque;
	if (gpa >= sizeof(gmem) || len > sizeof(gmem) - gpa)
		return -1;
	memcpy(buf, gmem + gpa, len);
	return 0;
}

static void on_window(struct per_cpu *c)
{
	assert_ptr_equal(c, &cpu);
	windows_done++;
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

static void engine(uint8_t source, uint8_t start, uint64_t stop_after, uint32_t cpl)
{
	struct trace_setup s;

	memset(&s, 0, sizeof(s));
	s.source = source;
	s.overflow = TV_OVERFLOW_STOP;
	s.start = start;
	s.ring_kb = 16;
	s.stop_after = stop_after;
	trace_filter_all(&s.filter);
	s.filter.cpl = cpl;
	trace_pt_opts_default(&s.pt);
	s.pmi = eng_pmi;
	s.pmi_every = eng_pmi_every;
	s.pt_ring_bytes = eng_pt_ring;
	s.pt_topa_bytes = eng_pt_topa;
	trace_engine_init(&s, read_phys, NULL, on_window);
	trace_msr_configure((enum tv_source)source);
}

/* Bochs corei7_skylake_x with the trace-hardware model (docs/BOCHS-MODEL.md). */
static void skylake(void)
{
	hw_fake_set_cpuid(0, 0, 0x16, 0x756e6547, 0x6c65746e, 0x49656e69);  /* GenuineIntel */
	hw_fake_set_cpuid(1, 0, 0x00050654, 0, 1u << 15, 0);                 /* PDCM */
	hw_fake_set_cpuid(0xa, 0, 0x07300404, 0, 0, 0);
	hw_fake_set_msr(0x345, 5);                                           /* format 5 */
	hw_fake_set_msr(TOS, 0);
	hw_fake_set_msr(SELECT, 0);
	for (uint32_t i = 0; i < 32; i++) {
		hw_fake_set_msr(FROM(i), 0);
		hw_fake_set_msr(TO(i), 0);
		hw_fake_set_msr(INFO(i), 0);
	}
}

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	loglen = 0;
	logbuf[0] = '\0';
	log_add_sink(log_sink, NULL);
	hypercall_set_hooks(NULL);
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	memset(&cpu, 0, sizeof(cpu));
	memset(&regs, 0, sizeof(regs));
	memset(gmem, 0x90, sizeof(gmem));
	windows_done = 0;
	eng_pmi = 0;
	eng_pmi_every = 0;
	eng_pt_ring = eng_pt_topa = 0;
	skylake();
	cpu.index = 1;
	cpu.caps.proc = (uint64_t)(CPU_MONITOR_TRAP_FLAG | CPU_USE_MSR_BITMAPS |
				   CPU_ACTIVATE_SECONDARY_CONTROLS) << 32;
	cpu.proc = CPU_USE_MSR_BITMAPS | CPU_ACTIVATE_SECONDARY_CONTROLS;
	cpu.entry_ctls = ENTRY_LOAD_DEBUG_CONTROLS;
	cpu.exit_ctls = EXIT_SAVE_DEBUG_CONTROLS;
	hw_fake_vmcs_set(VMCS_PROC_BASED_CTLS, cpu.proc);
	hw_fake_vmcs_set(VMCS_ENTRY_CTLS, cpu.entry_ctls);
	hw_fake_vmcs_set(VMCS_EXCEPTION_BITMAP, 0);
	hw_fake_vmcs_set(VMCS_GUEST_CR0, 0x11);          /* PE, ET: no paging */
	hw_fake_vmcs_set(VMCS_GUEST_CS_AR, 0xc09b);      /* 32-bit code, DPL 0 */
	hw_fake_vmcs_set(VMCS_GUEST_SS_AR, 0xc093);
	hw_fake_vmcs_set(VMCS_GUEST_CS_BASE, 0);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x1000);
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x2);
	hw_fake_vmcs_set(VMCS_GUEST_IA32_DEBUGCTL, DBG_GUEST);
	hw_fake_vmcs_set(VMCS_GUEST_DR7, 0x400);
	assert_int_equal(trace_cpu_init(&cpu, ring_mem, sizeof(ring_mem), 1, 7,
					TV_SOURCE_BTF, TV_OVERFLOW_STOP, 100000000, 0), 0);
	engine(TV_SOURCE_BTF, TV_TRIG_HYPERCALL, 0, TRACE_CPL_ALL);
	return 0;
}

static int teardown(void **state)
{
	struct trace_msr_state *ms = trace_msr_state_of(&cpu);

	(void)state;
	if (ms)
		ms->ready = false;   /* the next test's first MSR exit sets it up again */
	hypercall_set_hooks(NULL);
	log_clear_sinks();
	trace_msr_configure(TV_SOURCE_NONE);
	return 0;
}

/* One VM exit as vmx.c handles it: dispatch, then trace_before_entry. */
static enum exit_action exit_and_entry(uint32_t reason)
{
	enum exit_action a;

	hw_fake_vmcs_set(VMCS_EXIT_REASON, reason);
	hw_fake_vmcs_set(VMCS_ENTRY_INTR_INFO, 0);   /* the CPU clears it on entry */
	a = vmx_exit_dispatch(&cpu, &regs);
	if (a == EXIT_RESUME)
		trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	return a;
}

static int64_t vmcall(uint64_t fn)
{
	regs.rax = fn;
	regs.rbx = 0;
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 3);
	assert_int_equal(exit_and_entry(EXIT_REASON_VMCALL), EXIT_RESUME);
	return (int32_t)regs.rax;
}

/* A #DB exit with qualification qual, the guest at rip (TF as it is). */
static void db_exit(uint64_t qual, uint64_t rip)
{
	hw_fake_vmcs_set(VMCS_GUEST_RIP, rip);
	hw_fake_vmcs_set(VMCS_EXIT_INTR_INFO, DB_HW_EXC);
	hw_fake_vmcs_set(VMCS_EXIT_QUALIFICATION, qual);
	assert_int_equal(exit_and_entry(EXIT_REASON_EXCEPTION_NMI), EXIT_RESUME);
}

/* An exit that has nothing to do with tracing (CPUID at rip, emulated). */
static void cpuid_exit(uint64_t rip)
{
	hw_fake_vmcs_set(VMCS_GUEST_RIP, rip);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 2);
	regs.rax = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_CPUID), EXIT_RESUME);
}

/* The hardware recorded a branch: it becomes the LBR top. */
static void lbr_push(uint64_t from, uint64_t to)
{
	uint32_t tos = (uint32_t)((hw_fake_get_msr(TOS) + 1) % 32);

	hw_fake_set_msr(TOS, tos);
	hw_fake_set_msr(FROM(tos), from);
	hw_fake_set_msr(TO(tos), to);
	hw_fake_set_msr(INFO(tos), 3);   /* cycle count 3 */
}

static size_t events(struct trace_event *ev, size_t max)
{
	static uint8_t buf[256 * 1024];
	struct trace_cursor c;
	struct trace_reader rd;
	size_t len = 0, n = 0;
	uint64_t first;

	assert_int_equal(trace_ring_cursor_tail(cpu.trace->b.ring, &c), 0);
	first = c.seq;
	assert_int_equal(trace_ring_peek(cpu.trace->b.ring, &c, buf, sizeof(buf), &len), 0);
	trace_reader_init(&rd);
	trace_reader_feed(&rd, buf, len, first, false);
	while (n < max && trace_reader_next(&rd, &ev[n]) == 1)
		n++;
	return n;
}

static uint64_t vmcs(uint32_t field)
{
	return hw_fake_vmcs_get(field);
}


#define GLOBAL_STATUS 0x38eu   /* IA32_PERF_GLOBAL_STATUS */

/* --- BTS -------------------------------------------------------------------- */

#define DS_AREA   0x600u
#define MISC      0x1a0u
#define DBG_TR    (1ull << 6)
#define DBG_BTS   (1ull << 7)
#define DBG_BTINT (1ull << 8)
#define DBG_OFF_OS  (1ull << 9)
#define DBG_OFF_USR (1ull << 10)
#define BTS_SLOTS (TRACE_BTS_BUF_BYTES_DEFAULT / 24)   /* bts_buffer_kb 64 */
#define BTS_AREA_BYTES (4096 + TRACE_BTS_BUF_BYTES_DEFAULT)

static uint8_t bts_mem[BTS_AREA_BYTES] __attribute__((aligned(4096)));
/* Where the guest (32-bit, paging off) sees bts_mem: linear = physical. */
#define BTS_LIN   0x400000ull

/* The host pointer behind a linear address in the BTS area. */
static uint64_t *bts_host(uint64_t lin)
{
	assert_true(lin >= BTS_LIN && lin < BTS_LIN + BTS_AREA_BYTES);
	return (uint64_t *)(void *)(bts_mem + (lin - BTS_LIN));
}
static uint64_t big_ring[(TRACE_CPU_STATE_BYTES + 4096 + 256 * 1024) / 8] __attribute__((aligned(64)));

/*
 * source = bts on the Skylake with `cpu: bts=1` (DS, DTES64, DS-CPL,
 * IA32_MISC_ENABLE with BTS available), the BTS memory at BTS_LIN.
 */
static void bts_engine(uint64_t stop_after, uint32_t cpl, bool big)
{
	hw_fake_set_cpuid(1, 0, 0x00050654, 0, (1u << 15) | (1u << 2) | (1u << 4), 1u << 21);
	hw_fake_set_msr(MISC, 1ull << 12);            /* PEBS unavailable, BTS available */
	hw_fake_set_msr(DS_AREA, 0);
	if (big)
		assert_int_equal(trace_cpu_init(&cpu, big_ring, sizeof(big_ring), 1, 7,
						TV_SOURCE_BTS, TV_OVERFLOW_STOP, 100000000, 0), 0);
	else
		assert_int_equal(trace_cpu_init(&cpu, ring_mem, sizeof(ring_mem), 1, 7,
						TV_SOURCE_BTS, TV_OVERFLOW_STOP, 100000000, 0), 0);
	memset(bts_mem, 0xcc, sizeof(bts_mem));
	assert_int_equal(trace_cpu_bts_area(&cpu, bts_mem, BTS_LIN), 0);
	engine(TV_SOURCE_BTS, TV_TRIG_HYPERCALL, stop_after, cpl);
}

static uint64_t *ds_field(unsigned i)
{
	return (uint64_t *)(void *)bts_mem + i;
}

/*
 * The hardware stores one branch while the guest runs with TR|BTS: at the
 * index the DS area (found through IA32_DS_AREA) holds, then the index
 * advances; circular (BTINT 0): past the end it starts at the base again.
 */
static void bts_store(uint64_t from, uint64_t to)
{
	uint64_t *ds = bts_host(hw_fake_get_msr(DS_AREA));
	uint64_t *rec;

	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL) & (DBG_TR | DBG_BTS | DBG_BTINT),
			 DBG_TR | DBG_BTS);
	if (ds[1] + 24 > ds[2])
		ds[1] = ds[0];
	rec = bts_host(ds[1]);
	rec[0] = from;
	rec[1] = to;
	rec[2] = 0;
	ds[1] += 24;
}

/* --- PMIs (pmi = on) ------------------------------------------------------------ */

#define APIC_BASE_MSR 0x1bu
#define APIC_PAGE     0xfee00000ull
#define LVTPC_MMIO    (APIC_PAGE + 0x340)
#define LVT_NMI       0x400u
#define LVT_MASKED    0x10000u
#define OVF_CTRL      0x390u
#define NMI_INFO      (0x80000000u | 2u << 8 | 2u)   /* valid, type NMI, vector 2 */

/* An xAPIC at 0xfee00000 whose LVT performance-counter entry is masked. */
static void pmi_apic(void)
{
	hw_fake_set_msr(APIC_BASE_MSR, APIC_PAGE | 1u << 11 | 1u << 8);
	hw_fake_set_mmio(LVTPC_MMIO, LVT_MASKED);
}

static uint32_t lvtpc(void)
{
	uint32_t v = 0;

	assert_true(hw_fake_get_mmio(LVTPC_MMIO, &v));
	return v;
}

/* The guest runs into an NMI (NMI exiting on): reason 0, type 2. */
static void nmi_exit(uint64_t rip)
{
	hw_fake_vmcs_set(VMCS_GUEST_RIP, rip);
	hw_fake_vmcs_set(VMCS_EXIT_INTR_INFO, NMI_INFO);
	hw_fake_vmcs_set(VMCS_IDT_VECTORING_INFO, 0);
	assert_int_equal(exit_and_entry(EXIT_REASON_EXCEPTION_NMI), EXIT_RESUME);
}

/* The PMI's delivery: the LVT's mask bit, set by the hardware. */
static void pmi_delivered(void)
{
	hw_fake_set_mmio(LVTPC_MMIO, lvtpc() | LVT_MASKED);
}

/* bts with BTINT: store one record as the hardware does (no wrap with BTINT). */
static void bts_store_int(uint64_t from, uint64_t to)
{
	uint64_t *ds = bts_host(hw_fake_get_msr(DS_AREA));
	uint64_t *rec;

	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL) & (DBG_TR | DBG_BTS | DBG_BTINT),
			 DBG_TR | DBG_BTS | DBG_BTINT);
	assert_true(ds[1] + 24 <= ds[2]);
	rec = bts_host(ds[1]);
	rec[0] = from;
	rec[1] = to;
	rec[2] = 0;
	ds[1] += 24;
	if (ds[1] >= ds[3])
		hw_fake_set_msr(GLOBAL_STATUS, hw_fake_get_msr(GLOBAL_STATUS) | 1ull << 62);
}

static void bts_pmi_engine(uint32_t every)
{
	eng_pmi = 1;
	eng_pmi_every = every;
	cpu.pin |= PIN_NMI_EXITING;
	pmi_apic();
	hw_fake_set_msr(GLOBAL_STATUS, 0);
	bts_engine(0, TRACE_CPL_ALL, false);
}

#endif /* TV_TEST_ENGINE_HW_H */
