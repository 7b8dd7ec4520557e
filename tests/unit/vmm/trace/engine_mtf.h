/* SPDX-License-Identifier: MIT */
/*
 * engine_mtf.h - the fixture of the engine tests on the fake seam with
 * the MTF backend (test_trace_engine.c, test_trace_trigger.c,
 * test_trace_request.c): one CPU with the MTF control, a 16 KiB ring,
 * guest memory read through read_phys, windows counted by on_window.
 * Included once per test file: its helpers are static, each file uses
 * some of them.
 */
#ifndef TV_TEST_ENGINE_MTF_H
#define TV_TEST_ENGINE_MTF_H

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
#include "vmm/trace/backend/mtf.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/read.h"

static struct per_cpu cpu;
static struct guest_regs regs;
static uint64_t ring_mem[(TRACE_CPU_STATE_BYTES + 4096 + 16384) / 8] __attribute__((aligned(64)));

/* Guest-physical memory 0..64 KiB; the guest runs 32-bit, paging off. */
static uint8_t gmem[0x10000];
static int windows_done;

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

static void engine(uint8_t source, uint8_t start, uint64_t stop_after)
{
	struct trace_setup s;

	memset(&s, 0, sizeof(s));
	s.source = source;
	s.overflow = TV_OVERFLOW_STOP;
	s.start = start;
	s.ring_kb = 16;
	s.stop_after = stop_after;
	trace_filter_all(&s.filter);
	trace_pt_opts_default(&s.pt);
	trace_engine_init(&s, read_phys, NULL, on_window);
}

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	hypercall_set_hooks(NULL);
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	memset(&cpu, 0, sizeof(cpu));
	memset(&regs, 0, sizeof(regs));
	memset(gmem, 0x90, sizeof(gmem));
	windows_done = 0;
	cpu.index = 1;
	cpu.caps.proc = (uint64_t)(CPU_MONITOR_TRAP_FLAG | CPU_USE_MSR_BITMAPS |
				   CPU_ACTIVATE_SECONDARY_CONTROLS) << 32;
	cpu.proc = CPU_USE_MSR_BITMAPS | CPU_ACTIVATE_SECONDARY_CONTROLS;
	hw_fake_vmcs_set(VMCS_PROC_BASED_CTLS, cpu.proc);
	hw_fake_vmcs_set(VMCS_ENTRY_CTLS, 0);
	hw_fake_vmcs_set(VMCS_GUEST_CR0, 0x11);          /* PE, ET: no paging */
	hw_fake_vmcs_set(VMCS_GUEST_CS_AR, 0xc09b);      /* 32-bit code, DPL 0 */
	hw_fake_vmcs_set(VMCS_GUEST_SS_AR, 0xc093);
	hw_fake_vmcs_set(VMCS_GUEST_CS_BASE, 0);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x1000);
	assert_int_equal(trace_cpu_init(&cpu, ring_mem, sizeof(ring_mem), 1, 7,
					TV_SOURCE_MTF, TV_OVERFLOW_STOP, 100000000, 0), 0);
	engine(TV_SOURCE_MTF, TV_TRIG_HYPERCALL, 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hypercall_set_hooks(NULL);
	return 0;
}

static int64_t vmcall(uint64_t fn)
{
	regs.rax = fn;
	regs.rbx = 0;
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_VMCALL);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 3);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	return (int32_t)regs.rax;   /* a 32-bit guest: status in EAX */
}

/* One MTF exit with the guest now at rip, then the engine's work. */
static void mtf_exit_at(uint64_t rip)
{
	hw_fake_vmcs_set(VMCS_GUEST_RIP, rip);
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_MONITOR_TRAP_FLAG);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
}

static size_t events(struct trace_event *ev, size_t max)
{
	static uint8_t buf[16384];
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

static bool mtf_in_vmcs(void)
{
	return (hw_fake_vmcs_get(VMCS_PROC_BASED_CTLS) & CPU_MONITOR_TRAP_FLAG) != 0;
}

#endif /* TV_TEST_ENGINE_MTF_H */
