/* SPDX-License-Identifier: MIT */
/*
 * test_trace_engine.c - the tracing engine in the hypervisor
 * (vmm/trace/engine.c) on the fake seam: windows opened and closed by
 * hypercall, the monitor trap flag in the VMCS, per-exit MTF recording
 * from VMCS guest state and guest memory, limits, the boot trigger.
 */
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

static void test_window_by_hypercall(void **state)
{
	struct trace_event ev[8];

	(void)state;
	/* 0x1003: jmp 0x1010 (eb 0b); 0x1010: ret? no - a plain call: e8 rel32 */
	gmem[0x1003] = 0xeb;
	gmem[0x1004] = 0x0b;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_true(mtf_in_vmcs());
	assert_true(cpu.proc & CPU_MONITOR_TRAP_FLAG);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0x1003);  /* VMCALL skipped */
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));            /* remembers the jmp at 0x1003 */
	mtf_exit_at(0x1010);                 /* it went to its target */
	mtf_exit_at(0x1011);                 /* a nop */
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_EBUSY);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_false(mtf_in_vmcs());
	assert_int_equal(windows_done, 1);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_EBUSY);

	assert_int_equal(events(ev, 8), 3);
	assert_int_equal(ev[0].type, TV_REC_START);
	assert_int_equal(ev[0].u.startstop.trigger, TV_TRIG_HYPERCALL);
	assert_int_equal(ev[0].u.startstop.rip, 0x1000);
	assert_int_equal(ev[1].type, TV_REC_BRANCH);
	assert_int_equal(ev[1].u.branch.from, 0x1003);
	assert_int_equal(ev[1].u.branch.to, 0x1010);
	assert_int_equal(ev[1].u.branch.kind, TV_BR_JMP);
	assert_int_equal(ev[2].type, TV_REC_STOP);
	assert_int_equal(cpu.trace->b.window_branches, 1);
}

/* A guest that triple-faults mid-window: the window is closed (STOP with
 * trigger guest-reset, MTF off) and exported before the machine resets. */
static void test_triple_fault_closes_and_exports(void **state)
{
	struct trace_event ev[8];

	(void)state;
	gmem[0x1003] = 0xeb;                 /* jmp 0x1010 */
	gmem[0x1004] = 0x0b;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	mtf_exit_at(0x1010);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x1011);
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_TRIPLE_FAULT);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESET_MACHINE);
	assert_false(cpu.trace->b.active);
	assert_false(mtf_in_vmcs());
	assert_int_equal(windows_done, 1);
	assert_int_equal(events(ev, 8), 3);
	assert_int_equal(ev[1].type, TV_REC_BRANCH);
	assert_int_equal(ev[1].u.branch.to, 0x1010);
	assert_int_equal(ev[2].type, TV_REC_STOP);
	assert_int_equal(ev[2].u.startstop.trigger, TV_TRIG_GUEST_RESET);
	assert_int_equal(ev[2].u.startstop.rip, 0x1011);
	assert_string_equal(trace_trigger_name(TV_TRIG_GUEST_RESET), "guest-reset");

	/* no window open: a triple fault still resets, nothing is exported */
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_TRIPLE_FAULT);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESET_MACHINE);
	assert_int_equal(windows_done, 1);
}

static void test_emulated_exit_is_not_a_branch(void **state)
{
	struct trace_event ev[8];

	(void)state;
	/* 0x1003: cpuid (0f a2), emulated by the hypervisor: RIP += 2. */
	gmem[0x1003] = 0x0f;
	gmem[0x1004] = 0xa2;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_CPUID);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 2);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0x1005);
	mtf_exit_at(0x1006);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(events(ev, 8), 2);   /* START, STOP: no branch */
}

static void test_marker_and_limits(void **state)
{
	struct trace_event ev[16];
	size_t n;

	(void)state;
	engine(TV_SOURCE_MTF, TV_TRIG_HYPERCALL, 2);
	/* jmp $+0x10 at 0x1003, 0x1013, 0x1023 ... */
	for (unsigned a = 0x1003; a < 0x1100; a += 0x10) {
		gmem[a] = 0xeb;
		gmem[a + 1] = 0x0e;
	}
	regs.rcx = 0;
	regs.rdx = 0;
	memcpy(&regs.rcx, "ph1", 3);   /* 32-bit guest: label bytes 0..3 in ECX */
	regs.rax = TV_HC_MARKER;
	regs.rbx = 42;
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_VMCALL);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 3);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	assert_int_equal(regs.rax, TV_HC_OK);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x1000);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	mtf_exit_at(0x1013);
	assert_true(cpu.trace->b.active);
	mtf_exit_at(0x1023);                  /* the second branch: limit reached */
	assert_false(cpu.trace->b.active);
	assert_false(mtf_in_vmcs());
	assert_int_equal(windows_done, 1);
	n = events(ev, 16);
	assert_int_equal(n, 5);
	assert_int_equal(ev[0].type, TV_REC_MARKER);
	assert_int_equal(ev[0].u.marker.value, 42);
	assert_int_equal(ev[0].u.marker.label_len, 3);
	assert_memory_equal(ev[0].u.marker.label, "ph1", 3);
	assert_int_equal(ev[4].type, TV_REC_STOP);
	assert_int_equal(ev[4].u.startstop.trigger, TV_TRIG_LIMIT);
}

static void test_refusals(void **state)
{
	(void)state;
	/* No MTF control on this CPU. */
	cpu.caps.proc = 0;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_false(mtf_in_vmcs());
	/* Unknown start flags. */
	regs.rax = TV_HC_TRACE_START;
	regs.rbx = 0x80;
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_VMCALL);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	assert_int_equal((int32_t)regs.rax, TV_HC_EINVAL);
	/* A backend that is not wired in yet. */
	cpu.caps.proc = (uint64_t)CPU_MONITOR_TRAP_FLAG << 32;
	engine(TV_SOURCE_PT, TV_TRIG_HYPERCALL, 0);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	/* No tracing configured: no hooks at all. */
	engine(TV_SOURCE_NONE, TV_TRIG_HYPERCALL, 0);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	/* No ring on this CPU. */
	engine(TV_SOURCE_MTF, TV_TRIG_HYPERCALL, 0);
	cpu.trace = NULL;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_int_equal(vmcall(TV_HC_MARKER), TV_HC_ENOSYS);
}

static void test_boot_trigger(void **state)
{
	struct trace_event ev[4];

	(void)state;
	engine(TV_SOURCE_MTF, TV_TRIG_BOOT, 0);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	assert_true(cpu.trace->b.active);
	assert_true(mtf_in_vmcs());
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));             /* once only */
	assert_int_equal(cpu.trace->b.windows, 1);
	assert_int_equal(events(ev, 4), 1);
	assert_int_equal(ev[0].type, TV_REC_START);
	assert_int_equal(ev[0].u.startstop.trigger, TV_TRIG_BOOT);
}

/*
 * trace_start = exit_boot_services: the thunk's TV_HC_EVENT opens the
 * window (trigger exit-boot-services) and MTF steps from the next
 * instruction; with another trace_start the event only logs; an unknown
 * event is refused.
 */
static void test_exit_boot_services_trigger(void **state)
{
	struct trace_event ev[4];

	(void)state;
	engine(TV_SOURCE_MTF, TV_TRIG_HYPERCALL, 0);
	regs.rbx = TV_HC_EVENT_EXIT_BOOT_SERVICES;
	regs.rax = TV_HC_EVENT;
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_VMCALL);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 3);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	assert_int_equal((int32_t)regs.rax, TV_HC_OK);
	assert_false(cpu.trace->b.active);

	engine(TV_SOURCE_MTF, TV_TRIG_EXIT_BOOT_SERVICES, 0);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x1000);
	regs.rbx = TV_HC_EVENT_EXIT_BOOT_SERVICES;
	regs.rax = TV_HC_EVENT;
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	assert_int_equal((int32_t)regs.rax, TV_HC_OK);
	assert_true(cpu.trace->b.active);
	assert_true(mtf_in_vmcs());
	assert_int_equal(events(ev, 4), 1);
	assert_int_equal(ev[0].type, TV_REC_START);
	assert_int_equal(ev[0].u.startstop.trigger, TV_TRIG_EXIT_BOOT_SERVICES);
	assert_int_equal(ev[0].u.startstop.rip, 0x1000);
	/* a second call (a stale map key makes loaders retry): the window stays */
	regs.rbx = TV_HC_EVENT_EXIT_BOOT_SERVICES;
	regs.rax = TV_HC_EVENT;
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	assert_int_equal((int32_t)regs.rax, TV_HC_EBUSY);
	assert_int_equal(cpu.trace->b.windows, 1);
	regs.rbx = 9;
	regs.rax = TV_HC_EVENT;
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	assert_int_equal((int32_t)regs.rax, TV_HC_EINVAL);
}

static void test_wait_for_sipi_records_nothing(void **state)
{
	struct trace_event ev[4];

	(void)state;
	gmem[0x1003] = 0xeb;
	gmem[0x1004] = 0x0b;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	cpu.sipi_state = VCPU_WAIT_FOR_SIPI;
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	cpu.sipi_state = VCPU_RUNNING;
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x9000);  /* the SIPI vector */
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	assert_int_equal(events(ev, 4), 1);       /* START only */
}

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
		cmocka_unit_test_setup_teardown(test_window_by_hypercall, setup, teardown),
		cmocka_unit_test_setup_teardown(test_triple_fault_closes_and_exports, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emulated_exit_is_not_a_branch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_marker_and_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_boot_trigger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exit_boot_services_trigger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_for_sipi_records_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_requests_from_another_cpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_filter_request, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
