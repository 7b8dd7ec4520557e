/* SPDX-License-Identifier: MIT */
/*
 * test_trace_engine_hw.c - the tracing engine (vmm/trace/engine.c) driving
 * the BTF+LBR and LBR backends on the fake seam: what a window writes to
 * the VMCS (RFLAGS.TF, GUEST_IA32_DEBUGCTL, exception bitmap bit 1, the
 * pending-debug BS rule), #DB exits turned into branch records from the
 * LBR top or reflected to the guest, the LBR stack drained at exits and at
 * stop without duplicates, full stacks flagged and counted, the guest's
 * DEBUGCTL accesses kept away from the engine's bits; and the BTS backend:
 * IA32_DS_AREA and TR|BTS in GUEST_IA32_DEBUGCTL for a window, the records
 * the fake "hardware" stores in the buffer drained once each at exits and
 * at stop, a wrapped buffer counted, DEBUGCTL cleared at stop; and the PT
 * backend: the ToPA table and RTIT MSRs of a window, GUEST_IA32_RTIT_CTL
 * with TraceEn only inside it, the bytes the fake "hardware" writes
 * drained once each into the stream the exporter takes, gaps counted.
 *
 * The CPU is a Skylake-SP as Bochs's corei7_skylake_x reports it (family 6
 * model 0x55, PDCM, IA32_PERF_CAPABILITIES format 5: a 32-entry stack at
 * 0x680/0x6C0 with LBR_INFO at 0xDC0); the guest runs 32-bit, paging off.
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

/* --- BTF ---------------------------------------------------------------------- */

static void test_btf_window_vmcs(void **state)
{
	struct trace_event ev[4];

	(void)state;
	/* No window yet: nothing of the engine's in the guest. */
	cpuid_exit(0x0ffe);
	assert_int_equal(vmcs(VMCS_GUEST_RFLAGS), 0x2);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(vmcs(VMCS_EXCEPTION_BITMAP), 0);

	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_true(cpu.trace->b.active);
	/* Armed for the entry that resumes the guest after the VMCALL. */
	assert_int_equal(vmcs(VMCS_GUEST_RFLAGS), 0x2 | TF);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_BTF | DBG_LBR);
	assert_int_equal(vmcs(VMCS_EXCEPTION_BITMAP), 1u << 1);
	/* LBR_SELECT 0 (every branch: the top must be the step's), stack emptied. */
	assert_true(hw_fake_has_msr(SELECT));
	assert_int_equal(hw_fake_get_msr(SELECT), 0);
	/* MTF is not used. */
	assert_false(vmcs(VMCS_PROC_BASED_CTLS) & CPU_MONITOR_TRAP_FLAG);

	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_EBUSY);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_false(cpu.trace->b.active);
	assert_int_equal(windows_done, 1);
	/* Disarmed: our TF and our DEBUGCTL bits gone, the guest's bit kept. */
	assert_int_equal(vmcs(VMCS_GUEST_RFLAGS), 0x2);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	/* #DB stays intercepted: TF may linger in frames the guest saved. */
	assert_int_equal(vmcs(VMCS_EXCEPTION_BITMAP), 1u << 1);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_EBUSY);

	assert_int_equal(events(ev, 4), 2);
	assert_int_equal(ev[0].type, TV_REC_START);
	assert_int_equal(ev[1].type, TV_REC_STOP);
	assert_non_null(strstr(logbuf, "window 1 stopped (hypercall): 0 branches, 0 filtered, 0 dropped, 0 undecodable, 0 from unknown, 0 #DB exits, 0 reflected, 0 stray; ring lost 0 records"));
}

/* SDM 3C 27.3.1.5: with STI/MOV-SS blocking or HLT, BS = TF && !BTF. */
static void test_btf_pending_bs_rule(void **state)
{
	(void)state;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	/*
	 * TF and BTF on, STI blocking (an exit whose handler does not skip
	 * an instruction, e.g. an EPT violation): a pending BS would fail
	 * the entry.
	 */
	hw_fake_vmcs_set(VMCS_GUEST_INTERRUPTIBILITY, INTERRUPTIBILITY_STI);
	hw_fake_vmcs_set(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, PENDING_DBG_BS | 0x1);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	assert_int_equal(vmcs(VMCS_GUEST_PENDING_DBG_EXCEPTIONS), 0x1);
	assert_true(vmcs(VMCS_GUEST_RFLAGS) & TF);
	/* The same in HLT. */
	hw_fake_vmcs_set(VMCS_GUEST_INTERRUPTIBILITY, 0);
	hw_fake_vmcs_set(VMCS_GUEST_ACTIVITY_STATE, ACTIVITY_HLT);
	hw_fake_vmcs_set(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, PENDING_DBG_BS);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	assert_int_equal(vmcs(VMCS_GUEST_PENDING_DBG_EXCEPTIONS), 0);
	/* No blocking, active: the field is left as the exit saved it. */
	hw_fake_vmcs_set(VMCS_GUEST_ACTIVITY_STATE, ACTIVITY_ACTIVE);
	hw_fake_vmcs_set(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, 0x2);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	assert_int_equal(vmcs(VMCS_GUEST_PENDING_DBG_EXCEPTIONS), 0x2);
	/*
	 * After the window, in a MOV-SS shadow: TF comes off, and with it
	 * any BS (TF = 0 needs BS = 0).
	 */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x2 | TF);
	hw_fake_vmcs_set(VMCS_GUEST_IA32_DEBUGCTL, DBG_GUEST | DBG_BTF | DBG_LBR);
	btf_unit(&cpu.trace->b)->btf.tf_armed = true;    /* as left by a window that just ended */
	hw_fake_vmcs_set(VMCS_GUEST_INTERRUPTIBILITY, INTERRUPTIBILITY_MOV_SS);
	hw_fake_vmcs_set(VMCS_GUEST_PENDING_DBG_EXCEPTIONS, PENDING_DBG_BS);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));
	assert_int_equal(vmcs(VMCS_GUEST_RFLAGS), 0x2);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(vmcs(VMCS_GUEST_PENDING_DBG_EXCEPTIONS), 0);
}

static void test_btf_db_exit_records_lbr_top(void **state)
{
	struct trace_event ev[8];

	(void)state;
	gmem[0x1003] = 0xeb;              /* 0x1003: jmp 0x1010 */
	gmem[0x1004] = 0x0b;
	gmem[0x1010] = 0xe8;              /* 0x1010: call 0x1100 */
	memcpy(&gmem[0x1011], "\xeb\x00\x00\x00", 4);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	/* An older record below the top must not be taken. */
	lbr_push(0x0f00, 0x0f10);
	lbr_push(0x1003, 0x1010);
	db_exit(QUAL_BS, 0x1010);
	assert_int_equal(vmcs(VMCS_ENTRY_INTR_INFO), 0);          /* nothing injected */
	assert_true(vmcs(VMCS_GUEST_RFLAGS) & TF);                 /* still armed */
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_BTF | DBG_LBR);
	lbr_push(0x1010, 0x1100);
	db_exit(QUAL_BS, 0x1100);
	/* A step whose top does not end at RIP: from unknown (0). */
	db_exit(QUAL_BS, 0x1200);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);

	assert_int_equal(events(ev, 8), 5);
	assert_int_equal(ev[1].type, TV_REC_BRANCH);
	assert_int_equal(ev[1].u.branch.from, 0x1003);
	assert_int_equal(ev[1].u.branch.to, 0x1010);
	assert_int_equal(ev[1].u.branch.kind, TV_BR_JMP);
	assert_int_equal(ev[2].u.branch.from, 0x1010);
	assert_int_equal(ev[2].u.branch.to, 0x1100);
	assert_int_equal(ev[2].u.branch.kind, TV_BR_CALL);
	assert_int_equal(ev[3].u.branch.from, 0);
	assert_int_equal(ev[3].u.branch.to, 0x1200);
	assert_int_equal(ev[4].type, TV_REC_STOP);
	assert_int_equal(cpu.trace->b.window_branches, 3);
	/* The LBR stack is read, never emptied, by BTF. */
	assert_int_equal(hw_fake_get_msr(FROM(3)), 0x1010);
	assert_non_null(strstr(logbuf, ": 3 branches, 0 filtered, 0 dropped, 0 undecodable, 1 from unknown, 3 #DB exits, 0 reflected, 0 stray;"));
}

static void test_btf_guest_breakpoint_reflected(void **state)
{
	struct trace_event ev[4];

	(void)state;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	hw_write_dr6(0xffff0ff0);
	/* A data breakpoint (B0) of the guest's, no single step. */
	db_exit(QUAL_B0, 0x1008);
	assert_int_equal(vmcs(VMCS_ENTRY_INTR_INFO), DB_HW_EXC);   /* #DB injected */
	assert_int_equal(hw_read_dr6(), 0xffff0ff1);                /* B0, as delivery writes */
	/* The handler's frame holds the guest's TF (0): not armed on this entry. */
	assert_false(vmcs(VMCS_GUEST_RFLAGS) & TF);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_BTF | DBG_LBR);
	/* The next exit (in the guest's handler) arms again. */
	cpuid_exit(0x3000);
	assert_true(vmcs(VMCS_GUEST_RFLAGS) & TF);
	/* General detect: DR7.GD cleared as delivery would. */
	hw_fake_vmcs_set(VMCS_GUEST_DR7, 0x400 | (1u << 13));
	db_exit(QUAL_BD, 0x3004);
	assert_int_equal(vmcs(VMCS_ENTRY_INTR_INFO), DB_HW_EXC);
	assert_int_equal(vmcs(VMCS_GUEST_DR7), 0x400);
	assert_true(hw_read_dr6() & (1u << 13));
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(events(ev, 4), 2);                         /* no branch */
	assert_int_equal(btf_unit(&cpu.trace->b)->btf.stats.reflected, 2);
}

/* INT1 (ICEBP) is the guest's: delivered as it came, with its length. */
static void test_btf_int1_passed_through(void **state)
{
	uint32_t info = INTR_INFO_VALID | (INTR_TYPE_PRIV_SW_EXC << INTR_INFO_TYPE_SHIFT) | 1u;

	(void)state;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x1004);
	hw_fake_vmcs_set(VMCS_EXIT_INTR_INFO, info);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 1);
	hw_fake_vmcs_set(VMCS_EXIT_QUALIFICATION, 0);
	assert_int_equal(exit_and_entry(EXIT_REASON_EXCEPTION_NMI), EXIT_RESUME);
	assert_int_equal(vmcs(VMCS_ENTRY_INTR_INFO), info);
	assert_int_equal(vmcs(VMCS_ENTRY_INSTRUCTION_LEN), 1);
	assert_int_equal(btf_unit(&cpu.trace->b)->btf.stats.db_exits, 0);
}

/* After the window: a single step from a TF left in a guest frame is swallowed. */
static void test_btf_stray_step_after_window(void **state)
{
	(void)state;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x2 | TF);   /* IRET restored our TF */
	db_exit(QUAL_BS, 0x5000);
	assert_int_equal(vmcs(VMCS_ENTRY_INTR_INFO), 0);
	assert_false(vmcs(VMCS_GUEST_RFLAGS) & TF);
	assert_int_equal(btf_unit(&cpu.trace->b)->btf.stats.stray, 1);
}

static void test_btf_limits_and_refusals(void **state)
{
	struct trace_event ev[8];

	(void)state;
	engine(TV_SOURCE_BTF, TV_TRIG_HYPERCALL, 2, TRACE_CPL_ALL);
	/* The guest single-steps itself: no window. */
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x2 | TF);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_EBUSY);
	assert_false(cpu.trace->b.active);
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x2);
	/* stop_after 2: the second recorded branch closes the window. */
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	lbr_push(0x1003, 0x1010);
	db_exit(QUAL_BS, 0x1010);
	assert_true(cpu.trace->b.active);
	lbr_push(0x1012, 0x1020);
	db_exit(QUAL_BS, 0x1020);
	assert_false(cpu.trace->b.active);
	assert_false(vmcs(VMCS_GUEST_RFLAGS) & TF);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(events(ev, 8), 4);
	assert_int_equal(ev[3].type, TV_REC_STOP);
	assert_int_equal(ev[3].u.startstop.trigger, TV_TRIG_LIMIT);

	/* No PDCM: no LBR format, no btf. */
	memset(&lbr_unit(&cpu.trace->b)->caps, 0, sizeof(lbr_unit(&cpu.trace->b)->caps));
	lbr_unit(&cpu.trace->b)->probed = false;
	hw_fake_set_cpuid(1, 0, 0x00050654, 0, 0, 0);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "no usable LBR stack"));
	/* LBR there, but the VMCS does not switch DEBUGCTL. */
	hw_fake_set_cpuid(1, 0, 0x00050654, 0, 1u << 15, 0);
	lbr_unit(&cpu.trace->b)->probed = false;
	cpu.entry_ctls = 0;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_false(cpu.trace->b.active);
}

/* The boot trigger opens a btf window at the first exit, armed on its entry. */
static void test_btf_boot_trigger(void **state)
{
	(void)state;
	engine(TV_SOURCE_BTF, TV_TRIG_BOOT, 0, TRACE_CPL_ALL);
	cpuid_exit(0x1000);
	assert_true(cpu.trace->b.active);
	assert_true(vmcs(VMCS_GUEST_RFLAGS) & TF);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_BTF | DBG_LBR);
}

/*
 * The guest's RDMSR/WRMSR of IA32_DEBUGCTL during a window: it reads its
 * own value, cannot switch BTF/LBR off, and its own bits reach the field.
 */
static void test_btf_guest_debugctl_access(void **state)
{
	(void)state;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	regs.rcx = MSR_IA32_DEBUGCTL;
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 2);
	assert_int_equal(exit_and_entry(EXIT_REASON_RDMSR), EXIT_RESUME);
	assert_int_equal(regs.rax, DBG_GUEST);
	assert_int_equal(regs.rdx, 0);
	/* The guest clears everything, then sets LBR itself. */
	regs.rcx = MSR_IA32_DEBUGCTL;
	regs.rax = 0;
	regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_BTF | DBG_LBR);
	regs.rcx = MSR_IA32_DEBUGCTL;
	regs.rax = DBG_LBR;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	regs.rcx = MSR_IA32_DEBUGCTL;
	assert_int_equal(exit_and_entry(EXIT_REASON_RDMSR), EXIT_RESUME);
	assert_int_equal(regs.rax, DBG_LBR);                 /* what it wrote */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	/* Its LBR bit is a shadow: never in the hardware, not even now. */
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), 0);
}

/* --- LBR ------------------------------------------------------------------------ */

static void lbr_engine(uint64_t stop_after, uint32_t cpl)
{
	engine(TV_SOURCE_LBR, TV_TRIG_HYPERCALL, stop_after, cpl);
}

static void test_lbr_window_vmcs(void **state)
{
	(void)state;
	lbr_engine(0, TRACE_CPL_KERNEL);
	hw_fake_set_msr(FROM(5), 0x777);       /* older than the window */
	hw_fake_set_msr(TO(5), 0x888);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_LBR);
	assert_int_equal(vmcs(VMCS_GUEST_RFLAGS), 0x2);              /* no TF */
	assert_int_equal(vmcs(VMCS_EXCEPTION_BITMAP), 0);             /* no #DB */
	assert_int_equal(hw_fake_get_msr(SELECT), 1u << 1);           /* CPL_NEQ_0 suppressed */
	assert_int_equal(hw_fake_get_msr(FROM(5)), 0);                /* emptied */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(windows_done, 1);
}

static void test_lbr_drains_at_exits_once(void **state)
{
	struct trace_event ev[16];

	(void)state;
	lbr_engine(0, TRACE_CPL_ALL);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	lbr_push(0x1001, 0x1101);
	lbr_push(0x1002, 0x1102);
	lbr_push(0x1003, 0x1103);
	cpuid_exit(0x1200);                   /* drains 3 */
	assert_int_equal(hw_fake_get_msr(FROM(1)), 0);
	cpuid_exit(0x1202);                   /* nothing new: nothing twice */
	lbr_push(0x1004, 0x1104);
	lbr_push(0x1005, 0x1105);
	cpuid_exit(0x1204);                   /* drains 2 */
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_LBR);
	lbr_push(0x1006, 0x1106);             /* between the last exit and STOP */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);

	assert_int_equal(events(ev, 16), 8);
	assert_int_equal(ev[0].type, TV_REC_START);
	for (unsigned i = 1; i <= 6; i++) {
		assert_int_equal(ev[i].type, TV_REC_LBR);
		assert_int_equal(ev[i].u.branch.from, 0x1000 + i);
		assert_int_equal(ev[i].u.branch.to, 0x1100 + i);
		assert_int_equal(ev[i].u.branch.lbr_info, 3);
		assert_false(ev[i].u.branch.flags & TV_BRF_LBR_FULL);
	}
	assert_int_equal(ev[7].type, TV_REC_STOP);
	assert_int_equal(cpu.trace->b.window_branches, 6);
	/* Reads: the VMCALL that started, three CPUID exits, the stop. */
	assert_non_null(strstr(logbuf, "window 1 stopped (hypercall): 6 branches, 0 filtered, 0 dropped, 5 reads, 0 full reads (older branches lost); ring lost 0 records"));
	/* Not drained outside a window. */
	lbr_push(0x1007, 0x1107);
	cpuid_exit(0x1300);
	assert_int_equal(hw_fake_get_msr(FROM(7)), 0x1007);
	assert_int_equal(events(ev, 16), 8);
}

/* More branches than the stack holds between two exits: flagged and counted. */
static void test_lbr_full_stack(void **state)
{
	struct trace_event ev[48];
	size_t n;

	(void)state;
	lbr_engine(0, TRACE_CPL_ALL);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (unsigned i = 0; i < 40; i++)     /* 40 branches, 32 kept */
		lbr_push(0x2000 + i, 0x3000 + i);
	cpuid_exit(0x1200);
	lbr_push(0x4000, 0x5000);
	cpuid_exit(0x1202);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	n = events(ev, 48);
	assert_int_equal(n, 1 + 32 + 1 + 1);
	for (unsigned k = 0; k < 32; k++) {
		assert_int_equal(ev[1 + k].u.branch.from, 0x2000 + 8 + k);   /* the newest 32 */
		assert_int_equal(!!(ev[1 + k].u.branch.flags & TV_BRF_LBR_FULL), k == 0);
	}
	assert_int_equal(ev[33].u.branch.from, 0x4000);
	assert_false(ev[33].u.branch.flags & TV_BRF_LBR_FULL);
	assert_int_equal(lbr_unit(&cpu.trace->b)->lbr.stats.full_reads, 1);
	assert_non_null(strstr(logbuf, ": 33 branches, 0 filtered, 0 dropped, 4 reads, 1 full reads (older branches lost);"));
}

static void test_lbr_stop_after_and_full_ring(void **state)
{
	struct trace_event ev[8];

	(void)state;
	lbr_engine(2, TRACE_CPL_ALL);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	lbr_push(0x1001, 0x1101);
	cpuid_exit(0x1200);
	assert_true(cpu.trace->b.active);
	lbr_push(0x1002, 0x1102);
	lbr_push(0x1003, 0x1103);
	cpuid_exit(0x1202);                   /* 3 >= 2: closed at this drain */
	assert_false(cpu.trace->b.active);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(events(ev, 8), 5);
	assert_int_equal(ev[4].u.startstop.trigger, TV_TRIG_LIMIT);
}

/* Architectural LBR is not driven: refused, said so. */
/* An arch LBR CPU (CPUID.(7,0):EDX[19], leaf 1CH: depths 8-32, all filters). */
static void arch_lbr_cpu(void)
{
	hw_fake_set_cpuid(0, 0, 0x1c, 0x756e6547, 0x6c65746e, 0x49656e69);
	hw_fake_set_cpuid(7, 0, 0, 0, 0, 1u << 19);
	hw_fake_set_cpuid(0x1c, 0, 0xf, 0x7, 0x7, 0);
	hw_fake_set_msr(0x14ce, 0);
	hw_fake_set_msr(0x14cf, 32);
	for (uint32_t i = 0; i < 32; i++) {
		hw_fake_set_msr(0x1500 + i, 0);
		hw_fake_set_msr(0x1600 + i, 0);
		hw_fake_set_msr(0x1200 + i, 0);
	}
}

/* Arch LBR records one more branch: entry 0 is the newest, the rest shift. */
static void arch_push(uint64_t from, uint64_t to, uint32_t br_type)
{
	for (uint32_t i = 31; i > 0; i--) {
		hw_fake_set_msr(0x1500 + i, hw_fake_get_msr(0x1500 + i - 1));
		hw_fake_set_msr(0x1600 + i, hw_fake_get_msr(0x1600 + i - 1));
		hw_fake_set_msr(0x1200 + i, hw_fake_get_msr(0x1200 + i - 1));
	}
	hw_fake_set_msr(0x1500, from);
	hw_fake_set_msr(0x1600, to);
	hw_fake_set_msr(0x1200, (uint64_t)br_type << 56 | 7);
}

/* Without the VMX LBR_CTL controls an arch LBR window is refused, saying why. */
static void test_lbr_arch_refused(void **state)
{
	(void)state;
	lbr_engine(0, TRACE_CPL_ALL);
	arch_lbr_cpu();
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "architectural LBR, 32 deep, but the VMCS does not load and clear IA32_LBR_CTL"));
}

/*
 * Arch LBR: IA32_LBR_DEPTH written at the start (empties the array),
 * GUEST_IA32_LBR_CTL = LBREn, OS, USR and every branch type for the
 * window's entries only, DEBUGCTL.LBR never; the entries (0 newest) read
 * at exits oldest first with their BR_TYPE kinds, each once.
 */
static void test_lbr_arch_window(void **state)
{
	struct trace_event ev[16];

	(void)state;
	cpu.entry_ctls |= ENTRY_LOAD_LBR_CTL;
	cpu.exit_ctls |= EXIT_CLEAR_LBR_CTL;
	lbr_engine(0, TRACE_CPL_ALL);
	arch_lbr_cpu();
	hw_fake_vmcs_set(VMCS_GUEST_IA32_LBR_CTL, 0);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_non_null(strstr(logbuf, "architectural LBR, 32 deep, CPL filter, branch filter, mispredict, branch type"));
	assert_int_equal(hw_fake_get_msr(0x14cf), 32);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_LBR_CTL), 0x7f0007);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	arch_push(0x3001, 0x3101, 0);       /* jcc */
	arch_push(0x3002, 0x3102, 4);       /* call */
	arch_push(0x3003, 0x3103, 5);       /* ret */
	cpuid_exit(0x1200);
	arch_push(0x3004, 0x3104, 1);       /* jmp-ind */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	cpuid_exit(0x1202);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_LBR_CTL), 0);
	assert_int_equal(events(ev, 16), 6);
	assert_int_equal(ev[1].u.branch.from, 0x3001);
	assert_int_equal(ev[1].u.branch.kind, TV_BR_JCC);
	assert_int_equal(ev[2].u.branch.kind, TV_BR_CALL);
	assert_int_equal(ev[3].u.branch.kind, TV_BR_RET);
	assert_int_equal(ev[4].u.branch.from, 0x3004);
	assert_int_equal(ev[4].u.branch.kind, TV_BR_JMP_IND);
	assert_int_equal(ev[5].type, TV_REC_STOP);
}

/* A kernel-only filter: LBR_CTL.OS without USR. */
static void test_lbr_arch_cpl_filter(void **state)
{
	(void)state;
	cpu.entry_ctls |= ENTRY_LOAD_LBR_CTL;
	cpu.exit_ctls |= EXIT_CLEAR_LBR_CTL;
	lbr_engine(0, TRACE_CPL_KERNEL);
	arch_lbr_cpu();
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_LBR_CTL), 0x7f0003);
}

/* A #DB exit the engine does not own (mtf source): unexpected, the CPU stops. */
static void test_db_exit_not_ours_stops(void **state)
{
	(void)state;
	engine(TV_SOURCE_MTF, TV_TRIG_HYPERCALL, 0, TRACE_CPL_ALL);
	hw_fake_vmcs_set(VMCS_EXIT_INTR_INFO, DB_HW_EXC);
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_EXCEPTION_NMI);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_STOP_CPU);
}

/* --- BTS -------------------------------------------------------------------- */

#define DS_AREA   0x600u
#define MISC      0x1a0u
#define DBG_TR    (1ull << 6)
#define DBG_BTS   (1ull << 7)
#define DBG_BTINT (1ull << 8)
#define DBG_OFF_OS  (1ull << 9)
#define DBG_OFF_USR (1ull << 10)
#define BTS_SLOTS (TRACE_BTS_BUF_BYTES / 24)

static uint8_t bts_mem[TRACE_BTS_AREA_BYTES] __attribute__((aligned(4096)));
/* Where the guest (32-bit, paging off) sees bts_mem: linear = physical. */
#define BTS_LIN   0x400000ull

/* The host pointer behind a linear address in the BTS area. */
static uint64_t *bts_host(uint64_t lin)
{
	assert_true(lin >= BTS_LIN && lin < BTS_LIN + TRACE_BTS_AREA_BYTES);
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

static void test_bts_window_vmcs(void **state)
{
	uint64_t lin = BTS_LIN;

	(void)state;
	bts_engine(0, TRACE_CPL_ALL, false);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_TR | DBG_BTS);
	assert_int_equal(hw_fake_get_msr(DS_AREA), lin);
	assert_int_equal(*ds_field(0), lin + 4096);                       /* base */
	assert_int_equal(*ds_field(1), lin + 4096);                       /* index */
	assert_int_equal(*ds_field(2), lin + 4096 + BTS_SLOTS * 24);      /* absolute maximum */
	assert_true(*ds_field(3) > *ds_field(2));                         /* threshold never reached */
	assert_int_equal(*ds_field(4), 0);                                /* no PEBS */
	assert_int_equal(vmcs(VMCS_GUEST_RFLAGS), 0x2);                   /* no TF */
	assert_int_equal(vmcs(VMCS_EXCEPTION_BITMAP), 0);                 /* no #DB */
	cpuid_exit(0x1200);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_TR | DBG_BTS);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(windows_done, 1);
	/* Outside a window the bits stay off. */
	cpuid_exit(0x1202);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_non_null(strstr(logbuf, "trace: cpu 1: BTS, 64-bit DS area, DS-CPL"));
}

/* The filter's CPLs become BTS_OFF_OS / BTS_OFF_USR. */
static void test_bts_cpl_filter(void **state)
{
	(void)state;
	bts_engine(0, TRACE_CPL_KERNEL, false);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_TR | DBG_BTS | DBG_OFF_USR);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
}

static void test_bts_drains_at_exits_once(void **state)
{
	struct trace_event ev[16];
	uint64_t base;

	(void)state;
	bts_engine(0, TRACE_CPL_ALL, false);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	base = *ds_field(0);
	bts_store(0x1001, 0x1101);
	bts_store(0x1002, 0x1102);
	bts_store(0x1003, 0x1103);
	cpuid_exit(0x1200);                   /* drains 3, rewinds */
	assert_int_equal(*ds_field(1), base);
	cpuid_exit(0x1202);                   /* nothing new: nothing twice */
	bts_store(0x1004, 0x1104);
	bts_store(0x1005, 0x1105);
	cpuid_exit(0x1204);                   /* drains 2 */
	bts_store(0x1006, 0x1106);            /* between the last exit and STOP */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);

	assert_int_equal(events(ev, 16), 8);
	assert_int_equal(ev[0].type, TV_REC_START);
	for (unsigned i = 1; i <= 6; i++) {
		assert_true(ev[i].type == TV_REC_BRANCH || ev[i].type == TV_REC_BRANCH_COMPACT);
		assert_int_equal(ev[i].u.branch.from, 0x1000 + i);
		assert_int_equal(ev[i].u.branch.to, 0x1100 + i);
	}
	assert_int_equal(ev[7].type, TV_REC_STOP);
	assert_int_equal(cpu.trace->b.window_branches, 6);
	/* Drains: the VMCALL that started, three CPUID exits, the stop. */
	assert_non_null(strstr(logbuf, "window 1 stopped (hypercall): 6 branches, 0 filtered, 0 dropped, 5 drains, 0 wraps (at least 0 branches lost), 0 bad, 0 corrupt, 0 entries unmapped; ring lost 0 records"));
	/* Not drained outside a window (DEBUGCTL is off; whatever is there stays). */
	cpuid_exit(0x1300);
	assert_int_equal(events(ev, 16), 8);
}

/* More branches between two exits than the buffer holds: counted, noted. */
static void test_bts_wrap_counted(void **state)
{
	static struct trace_event ev[BTS_SLOTS + 16];
	size_t n, i, first;
	const unsigned extra = 5, total = BTS_SLOTS + extra;
	char note[160];

	(void)state;
	bts_engine(0, TRACE_CPL_ALL, true);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (i = 0; i < total; i++)
		bts_store(0x100000 + i, 0x200000 + i);
	cpuid_exit(0x1200);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	n = events(ev, BTS_SLOTS + 16);
	/* START, the loss note, then the newest BTS_SLOTS branches, STOP. */
	assert_int_equal(ev[0].type, TV_REC_START);
	assert_int_equal(ev[1].type, TV_REC_LOG);
	assert_true(ev[1].u.text.len < sizeof(note));
	memcpy(note, ev[1].u.text.text, ev[1].u.text.len);
	note[ev[1].u.text.len] = '\0';
	assert_non_null(strstr(note, "at least 5 older records written over"));
	first = 2;
	assert_int_equal(n, first + BTS_SLOTS + 1);
	for (i = 0; i < BTS_SLOTS; i++) {
		assert_int_equal(ev[first + i].u.branch.from, 0x100000 + extra + i);
		assert_int_equal(ev[first + i].u.branch.to, 0x200000 + extra + i);
	}
	assert_int_equal(ev[n - 1].type, TV_REC_STOP);
	assert_int_equal(bts_unit(&cpu.trace->b)->bts.stats.wraps, 1);
	assert_int_equal(bts_unit(&cpu.trace->b)->bts.stats.lost_min, extra);
	assert_non_null(strstr(logbuf, ": 2730 branches, 0 filtered, 0 dropped, 3 drains, 1 wraps (at least 5 branches lost), 0 bad, 0 corrupt, 0 entries unmapped; ring lost 0 records"));
}

/* The ring fills: the window closes at that drain (full), stop_after too. */
static void test_bts_stop_after_and_full_ring(void **state)
{
	struct trace_event ev[8];

	(void)state;
	bts_engine(2, TRACE_CPL_ALL, false);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	bts_store(0x1001, 0x1101);
	cpuid_exit(0x1200);
	assert_true(cpu.trace->b.active);
	bts_store(0x1002, 0x1102);
	bts_store(0x1003, 0x1103);
	cpuid_exit(0x1202);                   /* 3 >= 2: closed at this drain */
	assert_false(cpu.trace->b.active);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(events(ev, 8), 5);
	assert_int_equal(ev[4].u.startstop.trigger, TV_TRIG_LIMIT);

	/* 16 KiB of ring cannot take a full buffer: refused records stop it. */
	bts_engine(0, TRACE_CPL_ALL, false);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (unsigned i = 0; i < 2000; i++)
		bts_store(0x100000 + i * 0x1000, 0x900000 + i * 0x1000);
	cpuid_exit(0x1200);
	assert_false(cpu.trace->b.active);
	assert_true(bts_unit(&cpu.trace->b)->bts.stats.dropped > 0);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
}

/* The guest's IA32_DS_AREA is its shadow, never the MSR. */
static void test_bts_guest_ds_area_shadowed(void **state)
{
	uint64_t lin = BTS_LIN;

	struct trace_caps tc;

	(void)state;
	bts_engine(0, TRACE_CPL_ALL, false);
	/* This CPU's MSR slot as the hypervisor sets it up for this CPU and source. */
	trace_caps_read(&tc, NULL);
	assert_int_equal(trace_msr_init(trace_msr_state_of(&cpu), &tc, TV_SOURCE_BTS), 0);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	regs.rcx = DS_AREA;
	regs.rax = 0x5000;
	regs.rdx = 0;
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 2);
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(hw_fake_get_msr(DS_AREA), lin);
	regs.rcx = DS_AREA;
	regs.rax = regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_RDMSR), EXIT_RESUME);
	assert_int_equal(regs.rax, 0x5000);
	/* The guest turning TR|BTS off does not stop our window. */
	regs.rcx = 0x1d9;
	regs.rax = DBG_GUEST;
	regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_TR | DBG_BTS);
}

/*
 * The guest's paging does not map the buffer at its address (here: 32-bit
 * paging with a page directory of not-present entries): BTS stays off,
 * the gap is noted in the ring and counted, never a store through it.
 */
static void test_bts_unmapped_held_off(void **state)
{
	struct trace_event ev[8];
	char note[160];

	(void)state;
	bts_engine(0, TRACE_CPL_ALL, false);
	hw_fake_vmcs_set(VMCS_GUEST_CR0, 0x80000011);   /* PG, PE, ET */
	hw_fake_vmcs_set(VMCS_GUEST_CR4, 0);
	hw_fake_vmcs_set(VMCS_GUEST_CR3, 0x2000);        /* gmem: 0x90 bytes, not present */
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	cpuid_exit(0x1200);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	/* Paging off again: identity, BTS on. */
	hw_fake_vmcs_set(VMCS_GUEST_CR0, 0x11);
	cpuid_exit(0x1202);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_TR | DBG_BTS);
	bts_store(0x1001, 0x1101);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(events(ev, 8), 4);
	assert_int_equal(ev[1].type, TV_REC_LOG);
	assert_true(ev[1].u.text.len < sizeof(note));
	memcpy(note, ev[1].u.text.text, ev[1].u.text.len);
	note[ev[1].u.text.len] = '\0';
	assert_non_null(strstr(note, "bts: buffer not mapped writable"));
	assert_int_equal(ev[2].u.branch.from, 0x1001);
	assert_non_null(strstr(logbuf, ": 1 branches, 0 filtered, 0 dropped, 4 drains, 0 wraps (at least 0 branches lost), 0 bad, 0 corrupt, 2 entries unmapped; ring lost 0 records"));
}

/* No DS on the CPU (stock Bochs's MISC_ENABLE says BTS unavailable): refused. */
static void test_bts_unsupported_refused(void **state)
{
	(void)state;
	bts_engine(0, TRACE_CPL_ALL, false);
	hw_fake_set_msr(MISC, (1ull << 11) | (1ull << 12));
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "trace: cpu 1: no usable BTS: IA32_MISC_ENABLE[11] says BTS unavailable"));
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(hw_fake_get_msr(DS_AREA), 0);
}

/* --- PT ----------------------------------------------------------------------- */

#define PT_PA      0x1000000ull    /* where the fake "hardware" sees pt_area */
#define PT_CTL_WANT 0x250dull      /* TraceEn OS User ToPA TSCEn BranchEn */
#define RTIT_OUT_BASE 0x560u
#define RTIT_MASK     0x561u
#define RTIT_CTL      0x570u
#define RTIT_STATUS   0x571u
#define GLOBAL_STATUS 0x38eu

static uint8_t pt_area[TRACE_PT_AREA_BYTES] __attribute__((aligned(65536)));

/*
 * source = pt on a Kaby Lake R (the CPUID of tests/unit/vmm/trace/backend/test_trace_pt.c)
 * whose VMX has PT in VMX operation and both RTIT_CTL controls; the
 * VMCS uses them unless ctls is false.
 */
static void pt_engine(bool ctls)
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
	memset(pt_area, 0xcc, sizeof(pt_area));
	assert_int_equal(trace_cpu_pt_area(&cpu, pt_area, PT_PA), 0);
	engine(TV_SOURCE_PT, TV_TRIG_HYPERCALL, 0, TRACE_CPL_ALL);
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

	assert_true(n <= TRACE_PT_OUT_BYTES);
	assert_int_equal(hw_fake_get_msr(RTIT_MASK), 0x7f);   /* rewound */
	for (uint64_t p = 0; p < n; p++)
		pt_area[p] = pt_byte(p, k);
	idx = n / TRACE_PT_REGION_BYTES;
	off = n % TRACE_PT_REGION_BYTES;
	if (idx == TRACE_PT_REGIONS) {
		idx--;
		off = TRACE_PT_REGION_BYTES;
	}
	hw_fake_set_msr(RTIT_MASK, 0x7f | idx << 7 | off << 32);
}

/* What trace_pt_take hands the exporter equals bursts (n[i], i) in order. */
static void assert_pt_stream(const uint64_t *n, unsigned bursts, uint64_t first_off)
{
	static uint8_t got[TRACE_PT_RING_BYTES];
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
	const uint64_t *table = (const uint64_t *)(const void *)(pt_area + TRACE_PT_TABLE_OFF);
	const uint64_t bursts[3] = { 100, 70000, 3 };
	struct trace_event ev[16];
	size_t n;

	(void)state;
	pt_engine(true);
	cpuid_exit(0x1100);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_RTIT_CTL), 0);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_RTIT_CTL), PT_CTL_WANT);
	assert_int_equal(hw_fake_get_msr(RTIT_OUT_BASE), PT_PA + TRACE_PT_TABLE_OFF);
	assert_int_equal(hw_fake_get_msr(RTIT_MASK), 0x7f);
	assert_int_equal(hw_fake_get_msr(RTIT_STATUS), 0);   /* PacketByteCnt 0: PSB+ first */
	for (unsigned i = 0; i < TRACE_PT_REGIONS; i++)
		assert_int_equal(table[i], (PT_PA + i * TRACE_PT_REGION_BYTES) | 4u << 6 |
					   (i == TRACE_PT_REGIONS - 1 ? 0x10u : 0));
	assert_int_equal(table[TRACE_PT_REGIONS], (PT_PA + TRACE_PT_TABLE_OFF) | 1u);
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
	pt_hw_write(TRACE_PT_OUT_BYTES, 0);
	hw_fake_set_msr(RTIT_STATUS, 1ull << 5);      /* Stopped */
	cpuid_exit(0x1200);
	assert_int_equal(hw_fake_get_msr(RTIT_STATUS), 0);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_pt_stream((const uint64_t[]){ TRACE_PT_OUT_BYTES }, 1, 0);
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
	bursts[4] = TRACE_PT_RING_BYTES - 4 * 250000;
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

/*
 * bts, pmi = on: BTINT with the threshold pmi_every records in; the LVT
 * entry NMI delivery; the DS interrupt's NMI exit drains, acknowledges
 * OvfBuffer, unmasks the LVT and is not given to the guest.
 */
static void test_bts_pmi_drains_on_nmi(void **state)
{
	struct trace_event ev[16];
	uint64_t base;

	(void)state;
	bts_pmi_engine(4);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_TR | DBG_BTS | DBG_BTINT);
	base = *ds_field(0);
	assert_int_equal(*ds_field(3), base + 4 * 24);                    /* threshold */
	assert_int_equal(*ds_field(2), base + BTS_SLOTS * 24);            /* absolute maximum */
	assert_int_equal(lvtpc(), LVT_NMI);
	assert_non_null(strstr(logbuf, "pmi: LVT performance-counter entry 0x10000 -> 0x400 (NMI), NMIs exit"));

	for (unsigned i = 1; i <= 4; i++)
		bts_store_int(0x1000 + i, 0x1100 + i);
	pmi_delivered();
	nmi_exit(0x1200);
	assert_int_equal(*ds_field(1), base);                             /* drained, rewound */
	assert_int_equal(hw_fake_get_msr(GLOBAL_STATUS) & 1ull << 62, 0);
	assert_int_equal(hw_fake_msr_write_log(0)->msr, OVF_CTRL);        /* acknowledged */
	assert_int_equal(hw_fake_msr_write_log(0)->value, 1ull << 62);
	assert_int_equal(lvtpc(), LVT_NMI);                               /* unmasked */
	assert_int_equal(cpu.nmi_pending, 0);                             /* not the guest's */
	assert_int_equal(cpu.trace->b.window_branches, 4);
	bts_store_int(0x1005, 0x1105);
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(events(ev, 16), 7);
	for (unsigned i = 1; i <= 5; i++)
		assert_int_equal(ev[i].u.branch.from, 0x1000 + i);
	assert_non_null(strstr(logbuf, "window 1 PMIs: 1 ours (0 taken in VMX root), 0 NMIs reflected to the guest, LVT retaken 0 times"));
	assert_int_equal(bts_unit(&cpu.trace->b)->bts.stats.pmis_ours, 1);
}

/*
 * NMIs that are not the DS interrupt go to the guest: below the
 * threshold; and a PMI that also shows a guest counter's overflow is
 * ours and the guest's.
 */
static void test_bts_pmi_foreign_nmis_reflected(void **state)
{
	(void)state;
	bts_pmi_engine(4);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	bts_store_int(0x1001, 0x1101);
	nmi_exit(0x1200);                                  /* an NMI of its own */
	assert_int_equal(cpu.nmi_pending, 1);
	assert_int_equal(cpu.trace->pmi.reflected, 1);
	assert_int_equal(cpu.trace->pmi.ours, 0);
	assert_int_equal(cpu.trace->b.window_branches, 1);    /* drained as at any exit */
	cpu.nmi_pending = 0;                               /* vcpu_deliver_nmi injected it */

	for (unsigned i = 2; i <= 5; i++)
		bts_store_int(0x1000 + i, 0x1100 + i);
	hw_fake_set_msr(GLOBAL_STATUS, hw_fake_get_msr(GLOBAL_STATUS) | 1u);  /* PMC0 too */
	pmi_delivered();
	nmi_exit(0x1202);
	assert_int_equal(cpu.trace->b.window_branches, 5);
	assert_int_equal(cpu.nmi_pending, 1);
	assert_int_equal(cpu.trace->pmi.ours, 1);
	assert_int_equal(cpu.trace->pmi.reflected, 2);
	assert_int_equal(hw_fake_get_msr(GLOBAL_STATUS), 1u);   /* the guest's bit is left */
	assert_int_equal(lvtpc(), LVT_NMI);
	/* Outside a window every NMI is the guest's. */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	cpu.nmi_pending = 0;
	nmi_exit(0x1204);
	assert_int_equal(cpu.nmi_pending, 1);
}

/*
 * The DS interrupt arrives while the CPU is in VMX root for another exit
 * (host_nmi counts it pending): that exit's drain sees the threshold and
 * claims it; an expectation nobody meets lapses after the next exit.
 */
static void test_bts_pmi_taken_in_root(void **state)
{
	(void)state;
	bts_pmi_engine(4);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (unsigned i = 1; i <= 4; i++)
		bts_store_int(0x1000 + i, 0x1100 + i);
	pmi_delivered();
	cpu.nmi_pending = 1;                   /* host_nmi during the CPUID exit */
	cpuid_exit(0x1200);
	assert_int_equal(cpu.trace->b.window_branches, 4);
	assert_int_equal(cpu.nmi_pending, 0);
	assert_int_equal(cpu.trace->pmi.root_claimed, 1);
	assert_int_equal(lvtpc(), LVT_NMI);

	/* Threshold seen at an exit, its NMI exits right after the entry. */
	for (unsigned i = 5; i <= 8; i++)
		bts_store_int(0x1000 + i, 0x1100 + i);
	cpuid_exit(0x1202);
	pmi_delivered();
	nmi_exit(0x1204);
	assert_int_equal(cpu.nmi_pending, 0);
	assert_int_equal(cpu.trace->pmi.ours, 2);
	assert_int_equal(lvtpc(), LVT_NMI);

	/* Seen, but no NMI in this exit nor the next: a later NMI is the guest's. */
	for (unsigned i = 9; i <= 12; i++)
		bts_store_int(0x1000 + i, 0x1100 + i);
	cpuid_exit(0x1206);
	cpuid_exit(0x1208);
	nmi_exit(0x120a);
	assert_int_equal(cpu.nmi_pending, 1);
	assert_int_equal(cpu.trace->pmi.ours, 2);
	assert_int_equal(cpu.trace->b.window_branches, 12);
}

/* The guest rewrote the LVT entry: written back at our next PMI, counted. */
static void test_pmi_lvt_retaken(void **state)
{
	(void)state;
	bts_pmi_engine(2);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	hw_fake_set_mmio(LVTPC_MMIO, 0xfe);    /* the guest: fixed delivery, vector 0xfe */
	bts_store_int(0x1001, 0x1101);
	bts_store_int(0x1002, 0x1102);
	nmi_exit(0x1200);                      /* (the PMI came as the guest's vector; a later NMI) */
	assert_int_equal(lvtpc(), LVT_NMI);
	assert_int_equal(cpu.trace->pmi.lvt_retaken, 1);
	assert_non_null(strstr(logbuf, "the guest changed the LVT performance-counter entry to 0xfe: written back to 0x400"));
	/* a second window takes it at its start as well */
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	hw_fake_set_mmio(LVTPC_MMIO, 0xfe);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(lvtpc(), LVT_NMI);
}

/* Impossible requests are refused with the reason, nothing opened. */
static void test_pmi_refusals(void **state)
{
	char want[96];

	(void)state;
	/* pmi_every at or past the buffer */
	bts_pmi_engine(BTS_SLOTS);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	snprintf(want, sizeof(want), "pmi_every = %u must be below the buffer's %u records",
		 (unsigned)BTS_SLOTS, (unsigned)BTS_SLOTS);
	assert_non_null(strstr(logbuf, want));
	assert_false(cpu.trace->b.active);
	/* NMI exiting off in the VMCS */
	bts_pmi_engine(4);
	cpu.pin &= ~PIN_NMI_EXITING;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "pmi: NMI exiting is off in the VMCS: window not opened"));
	/* the APIC disabled */
	bts_pmi_engine(4);
	hw_fake_set_msr(APIC_BASE_MSR, APIC_PAGE);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "pmi: the local APIC is disabled"));
	assert_false(cpu.trace->b.active);
	assert_int_equal(lvtpc(), LVT_MASKED);
}

/* x2APIC mode: the LVT entry is MSR 0x834, no MMIO. */
static void test_pmi_x2apic(void **state)
{
	(void)state;
	bts_pmi_engine(4);
	hw_fake_set_msr(APIC_BASE_MSR, APIC_PAGE | 1u << 11 | 1u << 10);
	hw_fake_set_msr(0x834, LVT_MASKED);
	hw_fake_set_mmio(LVTPC_MMIO, 0x12345);   /* must stay untouched */
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(hw_fake_get_msr(0x834), LVT_NMI);
	for (unsigned i = 1; i <= 4; i++)
		bts_store_int(0x1000 + i, 0x1100 + i);
	hw_fake_set_msr(0x834, LVT_NMI | LVT_MASKED);
	nmi_exit(0x1200);
	assert_int_equal(hw_fake_get_msr(0x834), LVT_NMI);
	assert_int_equal(lvtpc(), 0x12345);
	assert_int_equal(cpu.trace->pmi.lvt_retaken, 0);
}

/*
 * pt, pmi = on: INT on the ToPA entry before the last (STOP stays on the
 * last); Trace_ToPA_PMI's NMI exit drains, clears the bit, unmasks the
 * LVT and is not given to the guest.
 */
static void test_pt_pmi_drains_on_nmi(void **state)
{
	const uint64_t *table = (const uint64_t *)(const void *)(pt_area + TRACE_PT_TABLE_OFF);
	const uint64_t bursts[2] = { 3 * TRACE_PT_REGION_BYTES - 5, 40 };

	(void)state;
	eng_pmi = 1;
	cpu.pin |= PIN_NMI_EXITING;
	pmi_apic();
	pt_engine(true);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (unsigned i = 0; i < TRACE_PT_REGIONS; i++)
		assert_int_equal(table[i], (PT_PA + i * TRACE_PT_REGION_BYTES) | 4u << 6 |
					   (i == TRACE_PT_REGIONS - 1 ? 0x10u : 0) |
					   (i == TRACE_PT_REGIONS - 2 ? 0x04u : 0));
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
	const uint64_t *table = (const uint64_t *)(const void *)(pt_area + TRACE_PT_TABLE_OFF);

	(void)state;
	pmi_apic();
	pt_engine(true);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	for (unsigned i = 0; i < TRACE_PT_REGIONS; i++)
		assert_int_equal(table[i] & 0x04u, 0);
	assert_int_equal(lvtpc(), LVT_MASKED);
	assert_int_equal(hw_fake_mmio_write_count, 0);
	assert_null(strstr(logbuf, "PMIs:"));
	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_null(strstr(logbuf, "PMIs:"));
}

/* --- lbr with pmi: the counter, the frozen stack, the guest's PMU view ----------- */

#define EVTSEL3      0x189u
#define PMC3         0xc4u
#define GLOBAL_CTRL  0x38fu
#define PMC3_EVTSEL  0x5300c4ull     /* C4H umask 0, USR OS INT EN */
#define DBG_LBR      (1ull << 0)
#define DBG_FREEZE   (1ull << 11)

static void lbr_pmi_engine(uint32_t every)
{
	struct trace_caps tc;

	eng_pmi = 1;
	eng_pmi_every = every;
	cpu.pin |= PIN_NMI_EXITING;
	cpu.entry_ctls |= ENTRY_LOAD_PERF_GLOBAL_CTRL;
	cpu.exit_ctls |= EXIT_LOAD_PERF_GLOBAL_CTRL;
	pmi_apic();
	hw_fake_set_msr(GLOBAL_STATUS, 0);
	hw_fake_set_msr(EVTSEL3, 0);
	hw_fake_set_msr(PMC3, 0);
	hw_fake_vmcs_set(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL, 0x3);   /* the guest's PMC0, PMC1 */
	lbr_engine(0, TRACE_CPL_ALL);
	assert_int_equal(trace_msr_configure_pmc(true, 3), 0);
	trace_caps_read(&tc, NULL);
	assert_int_equal(trace_msr_init(trace_msr_state_of(&cpu), &tc, TV_SOURCE_LBR), 0);
}

/*
 * The window arms PMC3 with "branch instructions retired" from -period,
 * enables it in the VMCS field only, and sets FREEZE_LBRS_ON_PMI; the
 * overflow's NMI exit reads the frozen stack, unfreezes, reloads.
 */
static void test_lbr_pmi_counter_and_freeze(void **state)
{
	struct trace_event ev[32];

	(void)state;
	lbr_pmi_engine(8);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	assert_int_equal(hw_fake_get_msr(EVTSEL3), PMC3_EVTSEL);
	assert_int_equal(hw_fake_get_msr(PMC3), 0xfffffff8u);          /* -8, legacy write */
	assert_int_equal(vmcs(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL), 0xb);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST | DBG_LBR | DBG_FREEZE);
	assert_int_equal(lvtpc(), LVT_NMI);

	for (unsigned i = 1; i <= 6; i++)
		lbr_push(0x2000 + i, 0x2100 + i);
	hw_fake_set_msr(GLOBAL_STATUS, 1ull << 3 | 1ull << 58);         /* PMC3 overflow, LBR_Frz */
	hw_fake_set_msr(PMC3, 1);
	pmi_delivered();
	nmi_exit(0x1200);
	assert_int_equal(cpu.trace->b.window_branches, 6);
	assert_int_equal(hw_fake_get_msr(GLOBAL_STATUS), 0);             /* acknowledged */
	assert_int_equal(hw_fake_get_msr(PMC3), 0xfffffff8u);          /* reloaded */
	assert_int_equal(cpu.nmi_pending, 0);
	assert_int_equal(lvtpc(), LVT_NMI);
	assert_int_equal(lbr_unit(&cpu.trace->b)->lbr.stats.pmis_ours, 1);

	/* an NMI that is not the counter's: the guest's */
	nmi_exit(0x1202);
	assert_int_equal(cpu.nmi_pending, 1);
	cpu.nmi_pending = 0;

	/* overflowed just before another exit: found there, claimed if its NMI came in root */
	lbr_push(0x2007, 0x2107);
	hw_fake_set_msr(GLOBAL_STATUS, 1ull << 3 | 1ull << 58);
	cpu.nmi_pending = 1;
	cpuid_exit(0x1204);
	assert_int_equal(cpu.nmi_pending, 0);
	assert_int_equal(cpu.trace->pmi.root_claimed, 1);
	assert_int_equal(cpu.trace->b.window_branches, 7);

	assert_int_equal(vmcall(TV_HC_TRACE_STOP), TV_HC_OK);
	assert_int_equal(hw_fake_get_msr(EVTSEL3), 0);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL), 0x3);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_DEBUGCTL), DBG_GUEST);
	assert_int_equal(events(ev, 32), 9);
	for (unsigned i = 1; i <= 7; i++) {
		assert_int_equal(ev[i].u.branch.from, 0x2000 + i);
		assert_false(ev[i].u.branch.flags & TV_BRF_LBR_FULL);
	}
	assert_non_null(strstr(logbuf, "window 1 PMIs: 2 ours (1 taken in VMX root), 1 NMIs reflected"));
}

/* The guest sees its own PMU: our counter and its enable bit shadowed. */
static void test_lbr_pmi_guest_pmu_view(void **state)
{
	(void)state;
	lbr_pmi_engine(8);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_OK);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 2);
	/* IA32_PERF_GLOBAL_CTRL = 0x5: the field keeps our bit 3 */
	regs.rcx = GLOBAL_CTRL;
	regs.rax = 0x5;
	regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL), 0xd);
	regs.rcx = GLOBAL_CTRL;
	regs.rax = regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_RDMSR), EXIT_RESUME);
	assert_int_equal(regs.rax, 0x5);
	/* switching everything off leaves ours on */
	regs.rcx = GLOBAL_CTRL;
	regs.rax = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL), 0x8);
	/* PERFEVTSEL3 and PMC3: shadowed */
	regs.rcx = EVTSEL3;
	regs.rax = 0x4300c0;
	regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(hw_fake_get_msr(EVTSEL3), PMC3_EVTSEL);
	regs.rcx = EVTSEL3;
	regs.rax = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_RDMSR), EXIT_RESUME);
	assert_int_equal(regs.rax, 0x4300c0);
	regs.rcx = PMC3;
	regs.rax = 0x80000000u;
	regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(hw_fake_get_msr(PMC3), 0xfffffff8u);
	regs.rcx = PMC3;
	regs.rax = regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_RDMSR), EXIT_RESUME);
	assert_int_equal(regs.rax, 0x80000000u);                 /* sign-extended to 48 bits */
	assert_int_equal(regs.rdx, 0xffff);
	/* STATUS hides our overflow; OVF_CTRL cannot clear it */
	hw_fake_set_msr(GLOBAL_STATUS, 1ull << 3 | 1ull << 0);
	regs.rcx = GLOBAL_STATUS;
	regs.rax = regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_RDMSR), EXIT_RESUME);
	assert_int_equal(regs.rax, 1);
	regs.rcx = OVF_CTRL;
	regs.rax = 0xf;
	regs.rdx = 0;
	assert_int_equal(exit_and_entry(EXIT_REASON_WRMSR), EXIT_RESUME);
	assert_int_equal(hw_fake_msr_write_log(0)->value, 0x7);
	/* PERFEVTSEL0 is the guest's: not intercepted */
	assert_false(trace_msr_intercepts(0x186, true));
	assert_true(trace_msr_intercepts(EVTSEL3, true));
	assert_true(trace_msr_intercepts(GLOBAL_CTRL, false));
}

/* lbr pmi refused: no load-PERF_GLOBAL_CTRL controls; a period past the stack. */
static void test_lbr_pmi_refusals(void **state)
{
	(void)state;
	lbr_pmi_engine(8);
	cpu.entry_ctls &= ~ENTRY_LOAD_PERF_GLOBAL_CTRL;
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "pmi needs the VM-entry and VM-exit controls that load IA32_PERF_GLOBAL_CTRL"));
	lbr_pmi_engine(33);
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "pmi_every = 33 must be at most the stack's 32 entries"));
	lbr_pmi_engine(8);
	hw_fake_set_cpuid(0xa, 0, 0x07300404, 1u << 5, 0, 0);   /* no branch event */
	assert_int_equal(vmcall(TV_HC_TRACE_START), TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "branch-instructions-retired event"));
	assert_false(cpu.trace->b.active);
	assert_int_equal(vmcs(VMCS_GUEST_IA32_PERF_GLOBAL_CTRL), 0x3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_lbr_pmi_counter_and_freeze, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_pmi_guest_pmu_view, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_pmi_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_pmi_drains_on_nmi, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_pmi_foreign_nmis_reflected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_pmi_taken_in_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pmi_lvt_retaken, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pmi_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pmi_x2apic, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pt_pmi_drains_on_nmi, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pt_no_pmi_lvt_untouched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_window_vmcs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_pending_bs_rule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_db_exit_records_lbr_top, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_guest_breakpoint_reflected, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_int1_passed_through, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_stray_step_after_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_limits_and_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_boot_trigger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btf_guest_debugctl_access, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_window_vmcs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_drains_at_exits_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_full_stack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_stop_after_and_full_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_arch_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_arch_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lbr_arch_cpl_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_db_exit_not_ours_stops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_window_vmcs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_cpl_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_drains_at_exits_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_wrap_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_stop_after_and_full_ring, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_guest_ds_area_shadowed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_unsupported_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bts_unmapped_held_off, setup, teardown),
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
