/* SPDX-License-Identifier: MIT */
/*
 * test_memwatch.c - memory-access tracing (vmm/trace/memwatch.c) on the
 * fake seam, driven through the exit dispatcher as the hardware would:
 * an EPT violation on a watched page -> the step in the open view (EPTP
 * switched, MTF and STI blocking set), the MTF exit -> the restricted
 * view again and the records in the ring; loads, stores, locked RMW,
 * MOVS, the stack, collateral and page-walk accesses, the window closed,
 * an undecoded instruction, the sharing filter on two CPUs, the open
 * view resynchronised after another EPT edit, the hypercalls (a linear
 * range translated page by page, labels, bad arguments), the stop
 * record, the config keys and the pool the watches ask for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/config.h"
#include "vmm/exit/exit.h"
#include "vmm/exit/exit_ept.h"
#include "vmm/exit/hooks.h"
#include "vmm/exit/hypercall.h"
#include "vmm/hv.h"
#include "vmm/lib/log.h"
#include "vmm/lib/page_pool.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/memwatch.h"
#include "vmm/trace/needs.h"
#include "vmm/vmx/ept.h"
#include "vmm/vmx/mtrr.h"
#include "vmm/vmx/vmx_caps.h"

#define GiB (1ull << 30)
#define PHYS_BITS 39
#define POOL_PA 0x70000000ull
#define POOL_PAGES 256
#define VMCS_A 0x10000ull
#define VMCS_B 0x11000ull

/* Guest memory (64 KiB) and its 4-level page tables: linear 0x200000 + n pages -> pt[n]. */
#define CR3     0x1000ull
#define LIN     0x200000ull
#define BUF     LIN                   /* -> 0x8000, watched [0x8000, 0x8100) */
#define CODE    (LIN + 0x3000)        /* -> 0x5000 */
#define STACK   (LIN + 0x4000)        /* -> 0xa000 */
#define UNMAPPED (LIN + 0x6000)
static const uint64_t pt_map[] = { 0x8000, 0x9000, 0xb000, 0x5000, 0xa000, 0xc000 };

#define QUAL_R    (1ull << 0)
#define QUAL_W    (1ull << 1)
#define QUAL_X    (1ull << 2)
#define QUAL_LIN  ((1ull << 7) | (1ull << 8))
#define QUAL_WALK (1ull << 7)

static struct per_cpu cpu, cpu2;
static struct guest_regs regs;
static void *pool_mem;
static struct page_pool pool;
static struct mtrr_state mtrr;
static struct ept ept;
static uint64_t ring_a[(TRACE_CPU_STATE_BYTES + 4096 + 64 * 1024) / 8] __attribute__((aligned(64)));
static uint64_t ring_b[(TRACE_CPU_STATE_BYTES + 4096 + 64 * 1024) / 8] __attribute__((aligned(64)));
static uint8_t gmem[0x10000];
static char logbuf[16 * 1024];
static size_t loglen;

static int read_phys(void *opaque, uint64_t gpa, void *buf, size_t len)
{
	(void)opaque;
	if (gpa >= sizeof(gmem) || len > sizeof(gmem) - gpa)
		return -1;
	memcpy(buf, gmem + gpa, len);
	return 0;
}

static void capture(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	if (len > sizeof(logbuf) - 1 - loglen)
		len = sizeof(logbuf) - 1 - loglen;
	memcpy(logbuf + loglen, text, len);
	loglen += len;
	logbuf[loglen] = 0;
}

static void put64(uint64_t gpa, uint64_t v)
{
	memcpy(gmem + gpa, &v, 8);
}

static uint64_t get64(uint64_t gpa)
{
	uint64_t v;

	memcpy(&v, gmem + gpa, 8);
	return v;
}

static void guest_state(void)
{
	hw_fake_vmcs_set(VMCS_GUEST_CR0, 0x80000011ull);       /* PG, ET, PE */
	hw_fake_vmcs_set(VMCS_GUEST_CR4, 0x20);                /* PAE */
	hw_fake_vmcs_set(VMCS_GUEST_IA32_EFER, 0x500);         /* LME, LMA */
	hw_fake_vmcs_set(VMCS_GUEST_CR3, CR3);
	hw_fake_vmcs_set(VMCS_GUEST_CS_AR, 0xa09b);            /* L = 1 */
	hw_fake_vmcs_set(VMCS_GUEST_SS_AR, 0xc093);            /* DPL 0 */
	hw_fake_vmcs_set(VMCS_ENTRY_CTLS, ENTRY_IA32E_MODE_GUEST);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, CODE);
	hw_fake_vmcs_set(VMCS_GUEST_RSP, STACK + 0x800);
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x202);            /* IF */
	hw_fake_vmcs_set(VMCS_GUEST_INTERRUPTIBILITY, 0);
	hw_fake_vmcs_set(VMCS_EPT_POINTER, ept.eptp);
	hw_fake_vmcs_set(VMCS_GUEST_FS_BASE, 0);
	hw_fake_vmcs_set(VMCS_GUEST_GS_BASE, 0);
}

/* Config watches of the next setup_with (setup_none: 0). */
static unsigned setup_nwatch = 2;

static struct trace_setup setup_of(uint8_t source, uint8_t filter)
{
	struct trace_setup s;

	memset(&s, 0, sizeof(s));
	s.source = source;
	s.overflow = TV_OVERFLOW_STOP;
	s.start = TV_TRIG_HYPERCALL;
	s.ring_kb = 64;
	s.code_snapshots = TRACE_SNAP_OFF;
	s.mem_filter = filter;
	s.nmem_watch = setup_nwatch;
	s.mem_watch[0] = (struct trace_mem_watch){ 0x8000, 0x8100, TV_MEMW_MODE_RW };
	s.mem_watch[1] = (struct trace_mem_watch){ 0xc000, 0xc010, TV_MEMW_MODE_W };
	trace_filter_all(&s.filter);
	trace_pt_opts_default(&s.pt);
	return s;
}

static int setup_with(uint8_t filter)
{
	struct ept_params p;
	struct trace_setup s;

	hw_fake_reset();
	log_clear_sinks();
	log_add_sink(capture, NULL);
	log_set_level(LOG_INFO);
	loglen = 0;
	logbuf[0] = 0;
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(VMCS_A), 0);
	memset(&cpu, 0, sizeof(cpu));
	memset(&cpu2, 0, sizeof(cpu2));
	memset(&regs, 0, sizeof(regs));
	cpu.index = 0;
	cpu2.index = 1;
	cpu.launched = cpu2.launched = true;
	memset(gmem, 0, sizeof(gmem));
	put64(CR3, 0x2003);
	put64(0x2000, 0x3003);
	put64(0x3000 + 8, 0x4003);                             /* PD[1]: linear 0x200000 */
	for (unsigned i = 0; i < sizeof(pt_map) / sizeof(pt_map[0]); i++)
		put64(0x4000 + 8 * i, pt_map[i] | 3);
	for (unsigned i = 0; i < 0x100; i++)
		gmem[0x8000 + i] = (uint8_t)(0x10 + i);        /* the watched buffer's bytes */
	assert_int_equal(posix_memalign(&pool_mem, 4096, POOL_PAGES * 4096), 0);
	assert_int_equal(page_pool_init_at(&pool, pool_mem, POOL_PA, POOL_PAGES * 4096), 0);
	memset(&mtrr, 0, sizeof(mtrr));
	mtrr.present = true;
	mtrr.phys_addr_bits = PHYS_BITS;
	mtrr.def_type = MTRR_DEF_E | MTRR_TYPE_WB;
	memset(&p, 0, sizeof(p));
	p.top = 4 * GiB;
	p.allow_1g = p.allow_2m = true;
	p.ept_vpid_cap = EPT_CAP_PWL4 | EPT_CAP_MEMTYPE_WB | EPT_CAP_PDE_2MB | EPT_CAP_PDPTE_1GB |
			 EPT_CAP_INVEPT;
	p.mtrr = &mtrr;
	memset(&ept, 0, sizeof(ept));
	assert_int_equal(ept_build(&ept, &pool, &p), 0);
	memset(&hv, 0, sizeof(hv));
	hv.ept = &ept;
	hv.pool = &pool;
	/* the other CPU's VMCS first, then ours stays current */
	assert_int_equal(hw_vmptrld(VMCS_B), 0);
	guest_state();
	assert_int_equal(hw_vmptrld(VMCS_A), 0);
	guest_state();
	s = setup_of(TV_SOURCE_LBR, filter);
	trace_engine_init(&s, read_phys, NULL, NULL);
	assert_int_equal(trace_cpu_init(&cpu, ring_a, sizeof(ring_a), 0, 0, TV_SOURCE_LBR,
					TV_OVERFLOW_STOP, 100000000, 0), 0);
	assert_int_equal(trace_cpu_init(&cpu2, ring_b, sizeof(ring_b), 1, 1, TV_SOURCE_LBR,
					TV_OVERFLOW_STOP, 100000000, 0), 0);
	assert_int_equal(trace_trigger_arm(&ept, &pool), 0);   /* arms the watches too */
	cpu.trace->b.active = true;                             /* windows open */
	cpu2.trace->b.active = true;
	return 0;
}

static int setup(void **state)
{
	(void)state;
	return setup_with(TRACE_MEM_FILTER_NONE);
}

static int setup_sharing(void **state)
{
	(void)state;
	return setup_with(TRACE_MEM_FILTER_SHARING);
}

static int setup_none(void **state)
{
	int ret;

	(void)state;
	setup_nwatch = 0;
	ret = setup_with(TRACE_MEM_FILTER_NONE);
	setup_nwatch = 2;
	return ret;
}

static int teardown(void **state)
{
	(void)state;
	free(pool_mem);
	return 0;
}

static unsigned rights_in(const struct ept *e, uint64_t gpa)
{
	struct ept_leaf l;

	assert_int_equal(ept_lookup(e, gpa, &l), 0);
	return l.rwx;
}

static unsigned rights(uint64_t gpa)
{
	return rights_in(&ept, gpa);
}

/* The open view as a struct ept (its root from the pool) */
static struct ept open_view(void)
{
	struct ept o = ept;

	o.pml4 = (uint64_t *)(uintptr_t)((memwatch_open_eptp() & EPT_ADDR_MASK) + ept.va_minus_pa);
	return o;
}

/* The instruction at CODE (n bytes: where its step ends). */
static size_t code_len;

static void code(const uint8_t *bytes, size_t n)
{
	memcpy(gmem + 0x5000, bytes, n);
	code_len = n;
}

static enum exit_action exit_on(struct per_cpu *c, uint32_t reason, uint64_t gpa, uint64_t qual,
				uint64_t lin)
{
	hw_fake_vmcs_set(VMCS_EXIT_REASON, reason);
	hw_fake_vmcs_set(VMCS_EXIT_QUALIFICATION, qual);
	hw_fake_vmcs_set(VMCS_GUEST_PHYSICAL_ADDRESS, gpa);
	hw_fake_vmcs_set(VMCS_GUEST_LINEAR_ADDRESS, lin);
	return vmx_exit_dispatch(c, &regs);
}

static enum exit_action violation(struct per_cpu *c, uint64_t gpa, uint64_t qual, uint64_t lin)
{
	return exit_on(c, EXIT_REASON_EPT_VIOLATION, gpa, qual, lin);
}

/* The MTF exit after the instruction at CODE ran (RIP past it), then RIP back for the next. */
static enum exit_action mtf_at(struct per_cpu *c, uint64_t rip)
{
	enum exit_action a;

	hw_fake_vmcs_set(VMCS_GUEST_RIP, rip);
	a = exit_on(c, EXIT_REASON_MONITOR_TRAP_FLAG, 0, 0, 0);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, CODE);
	return a;
}

static enum exit_action mtf(struct per_cpu *c)
{
	return mtf_at(c, CODE + code_len);
}

/* The ring's records of type (0: any) from the oldest, copied into out. */
static uint8_t ringbuf[64 * 1024];

static size_t records(struct per_cpu *c, uint8_t type, const uint8_t **out, size_t max)
{
	struct trace_cursor cur;
	size_t len = 0, n = 0;

	assert_int_equal(trace_ring_cursor_tail(c->trace->b.ring, &cur), 0);
	assert_int_equal(trace_ring_peek(c->trace->b.ring, &cur, ringbuf, sizeof(ringbuf), &len), 0);
	for (size_t at = 0; at + sizeof(struct tv_rec) <= len;) {
		const struct tv_rec *h = (const void *)(ringbuf + at);

		assert_true(h->size >= 8 && at + h->size <= len);
		if ((!type || h->type == type) && n < max)
			out[n++] = ringbuf + at;
		at += h->size;
	}
	return n;
}

static const struct tv_rec_mem *mem_rec(const uint8_t *p)
{
	return (const struct tv_rec_mem *)(const void *)p;
}

#define F(x) TV_MEMF_##x
#define AUX(flags, id) ((flags) | (uint32_t)(id) << TV_MEMF_ID_SHIFT)

/* --- arming ------------------------------------------------------------------- */

static void test_config_watches_restrict_the_view(void **state)
{
	struct ept o;

	(void)state;
	assert_true(memwatch_armed());
	assert_int_equal(rights(0x8000), 0);                    /* rw: R, W and X taken */
	assert_int_equal(rights(0xc000), EPT_R | EPT_X);        /* w: W taken */
	assert_int_equal(rights(0x9000), EPT_RWX);              /* the neighbour untouched */
	assert_int_equal(rights(0x200000), EPT_RWX);
	assert_true(memwatch_open_eptp() != 0 && memwatch_open_eptp() != ept.eptp);
	assert_int_equal(memwatch_open_eptp() & 0xfff, ept.eptp & 0xfff);
	if (!strstr(logbuf, "mem: watch 1: 0x8000-0x8100 rw (config)") ||
	    !strstr(logbuf, "mem: watch 2: 0xc000-0xc010 w (config)"))
		fail_msg("log: %s", logbuf);
	/* the open view is built at the first step: then the watched leaves are RWX */
	code((const uint8_t[]){ 0x8b, 0x03 }, 2);               /* mov eax, [rbx] */
	regs.rbx = BUF;
	assert_int_equal(violation(&cpu, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	o = open_view();
	assert_int_equal(rights_in(&o, 0x8000), EPT_RWX);
	assert_int_equal(rights_in(&o, 0xc000), EPT_RWX);
	assert_int_equal(rights_in(&o, 0x9000), EPT_RWX);
	assert_int_equal(rights_in(&o, 0x200000), EPT_RWX);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	/* execute-only support: mode r/rw leaves X */
	assert_int_equal(memwatch_rights_taken(TV_MEMW_MODE_RW, 0), EPT_RWX);
	assert_int_equal(memwatch_rights_taken(TV_MEMW_MODE_R, EPT_CAP_EXEC_ONLY), EPT_R | EPT_W);
	assert_int_equal(memwatch_rights_taken(TV_MEMW_MODE_W, 0), EPT_W);
}

static void test_mtf_source_refused(void **state)
{
	struct trace_setup s = setup_of(TV_SOURCE_MTF, 0);

	(void)state;
	assert_int_equal(memwatch_arm(&ept, &pool, &s), TRACE_ENOSYS);
	assert_false(memwatch_armed());
	if (!strstr(logbuf, "source = mtf owns"))
		fail_msg("log: %s", logbuf);
	s.source = TV_SOURCE_NONE;
	assert_int_equal(memwatch_arm(&ept, &pool, &s), 0);
	assert_false(memwatch_armed());
}

/* --- the step ------------------------------------------------------------------- */

static void test_load_stepped_and_recorded(void **state)
{
	const uint8_t *r[8];
	const struct tv_rec_mem *m;
	const struct hw_fake_inv *inv;

	(void)state;
	code((const uint8_t[]){ 0x8b, 0x03 }, 2);               /* mov eax, [rbx] */
	regs.rbx = BUF + 0x10;
	hw_fake_set_tsc(1000000);
	assert_int_equal(violation(&cpu, 0x8010, QUAL_R | QUAL_LIN, BUF + 0x10), EXIT_RESUME);
	/* the step: this CPU in the open view, MTF on, interrupts blocked */
	assert_true(memwatch_stepping(&cpu));
	assert_int_equal(hw_fake_vmcs_get(VMCS_EPT_POINTER), memwatch_open_eptp());
	assert_true(cpu.proc & CPU_MONITOR_TRAP_FLAG);
	assert_int_equal(hw_fake_vmcs_get(VMCS_PROC_BASED_CTLS) & CPU_MONITOR_TRAP_FLAG,
			 CPU_MONITOR_TRAP_FLAG);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_INTERRUPTIBILITY), INTERRUPTIBILITY_STI);
	inv = hw_fake_inv_log(0);
	assert_non_null(inv);
	assert_int_equal(inv->eptp, memwatch_open_eptp());      /* the open view flushed once */
	/* the other CPU never left the restricted view */
	assert_int_equal(hw_fake_vmcs_get_at(VMCS_B, VMCS_EPT_POINTER), ept.eptp);
	assert_int_equal(records(&cpu, TV_REC_MEM, r, 8), 0);   /* nothing before the step ends */
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	assert_false(memwatch_stepping(&cpu));
	assert_int_equal(hw_fake_vmcs_get(VMCS_EPT_POINTER), ept.eptp);
	assert_false(cpu.proc & CPU_MONITOR_TRAP_FLAG);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_INTERRUPTIBILITY), 0);
	assert_int_equal(records(&cpu, TV_REC_MEM, r, 8), 1);
	m = mem_rec(r[0]);
	assert_int_equal(m->h.info, 4);
	assert_int_equal(m->h.aux, AUX(F(READ) | F(OLD) | F(LINEAR), 1));
	assert_int_equal(m->rip, CODE);
	assert_int_equal(m->cr3, CR3);
	assert_int_equal(m->gla, BUF + 0x10);
	assert_int_equal(m->gpa, 0x8010);
	assert_int_equal(m->gpa2, 0);
	assert_int_equal(m->old, 0x23222120ull);
	assert_true(m->tsc >= 1000000 && m->tsc < 1000100);   /* at the violation */
	assert_int_equal(memwatch_stats_of(&cpu)->steps, 1);
	assert_int_equal(memwatch_stats_of(&cpu)->recorded, 1);
	/* an MTF exit without a step is not the watch's */
	assert_false(memwatch_mtf(&cpu));
}

/* 32-bit protected mode without paging: CS.base + EIP is the record's rip, DS.base added. */
static void test_protected_mode_32(void **state)
{
	const uint8_t *r[8];
	const struct tv_rec_mem *m;

	(void)state;
	hw_fake_vmcs_set(VMCS_GUEST_CR0, 0x11);                /* PE, no paging */
	hw_fake_vmcs_set(VMCS_GUEST_CR4, 0);
	hw_fake_vmcs_set(VMCS_GUEST_IA32_EFER, 0);
	hw_fake_vmcs_set(VMCS_ENTRY_CTLS, 0);
	hw_fake_vmcs_set(VMCS_GUEST_CS_AR, 0xc09b);            /* D = 1 */
	hw_fake_vmcs_set(VMCS_GUEST_SS_AR, 0xc093);
	hw_fake_vmcs_set(VMCS_GUEST_CS_BASE, 0x1000);
	hw_fake_vmcs_set(VMCS_GUEST_DS_BASE, 0x10);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x4000);              /* linear 0x5000 */
	code((const uint8_t[]){ 0x66, 0x89, 0x0b }, 3);        /* mov [ebx], cx */
	regs.rbx = 0x8010;
	regs.rcx = 0xbeef;
	assert_int_equal(violation(&cpu, 0x8020, QUAL_W | QUAL_LIN, 0x8020), EXIT_RESUME);
	gmem[0x8020] = 0xef;
	gmem[0x8021] = 0xbe;
	assert_int_equal(mtf_at(&cpu, 0x4003), EXIT_RESUME);
	assert_int_equal(records(&cpu, TV_REC_MEM, r, 8), 1);
	m = mem_rec(r[0]);
	assert_int_equal(m->rip, 0x5000);
	assert_int_equal(m->gla, 0x8020);
	assert_int_equal(m->gpa, 0x8020);
	assert_int_equal(m->h.info, 2);
	assert_int_equal(m->new_val, 0xbeef);
	assert_int_equal(m->cr3, CR3);
}

static void test_store_and_locked_rmw(void **state)
{
	const uint8_t *r[8];
	const struct tv_rec_mem *m;

	(void)state;
	code((const uint8_t[]){ 0x48, 0x89, 0x0b }, 3);         /* mov [rbx], rcx */
	regs.rbx = BUF + 0x20;
	regs.rcx = 0x1122334455667788ull;
	assert_int_equal(violation(&cpu, 0x8020, QUAL_W | QUAL_LIN, BUF + 0x20), EXIT_RESUME);
	put64(0x8020, regs.rcx);                                /* what the instruction did */
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	code((const uint8_t[]){ 0xf0, 0x0f, 0xc1, 0x03 }, 4);   /* lock xadd [rbx], eax */
	regs.rbx = BUF + 0x40;
	regs.rax = 5;
	assert_int_equal(violation(&cpu, 0x8040, QUAL_R | QUAL_W | QUAL_LIN, BUF + 0x40), EXIT_RESUME);
	gmem[0x8040] += 5;
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	assert_int_equal(records(&cpu, TV_REC_MEM, r, 8), 2);
	m = mem_rec(r[0]);
	assert_int_equal(m->h.info, 8);
	assert_int_equal(m->h.aux, AUX(F(WRITE) | F(NEW) | F(LINEAR), 1));
	assert_int_equal(m->new_val, 0x1122334455667788ull);
	m = mem_rec(r[1]);
	assert_int_equal(m->h.info, 4);
	assert_int_equal(m->h.aux, AUX(F(READ) | F(WRITE) | F(LOCK) | F(OLD) | F(NEW) | F(LINEAR), 1));
	assert_int_equal(m->old, 0x53525150ull);
	assert_int_equal(m->new_val, 0x53525155ull);
}

static void test_movs_two_records_in_order(void **state)
{
	const uint8_t *r[8];

	(void)state;
	code((const uint8_t[]){ 0xf3, 0xa4 }, 2);               /* rep movsb */
	regs.rsi = BUF + 0x80;
	regs.rdi = BUF + 0x81;
	regs.rcx = 3;
	assert_int_equal(violation(&cpu, 0x8080, QUAL_R | QUAL_LIN, BUF + 0x80), EXIT_RESUME);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	assert_int_equal(records(&cpu, TV_REC_MEM, r, 8), 2);
	assert_int_equal(mem_rec(r[0])->gpa, 0x8080);
	assert_int_equal(mem_rec(r[0])->h.aux, AUX(F(READ) | F(OLD) | F(STRING) | F(LINEAR), 1));
	assert_int_equal(mem_rec(r[1])->gpa, 0x8081);
	assert_int_equal(mem_rec(r[1])->h.aux, AUX(F(WRITE) | F(NEW) | F(STRING) | F(LINEAR), 1));
	assert_int_equal(mem_rec(r[1])->h.info, 1);
}

static void test_stack_push_to_watched_page(void **state)
{
	const uint8_t *r[8];
	const struct tv_rec_mem *m;

	(void)state;
	/* push qword [rbx] with the stack in the watched mode-w range 0xc000-0xc010 */
	code((const uint8_t[]){ 0xff, 0x33 }, 2);
	regs.rbx = LIN + 0x1000;                                /* -> 0x9000: not watched */
	hw_fake_vmcs_set(VMCS_GUEST_RSP, LIN + 0x5010);         /* -> 0xc010: the push writes 0xc008 */
	assert_int_equal(violation(&cpu, 0xc008, QUAL_W | QUAL_LIN, LIN + 0x5008), EXIT_RESUME);
	put64(0xc008, get64(0x9000));
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	assert_int_equal(records(&cpu, TV_REC_MEM, r, 8), 1);
	m = mem_rec(r[0]);
	assert_int_equal(m->gpa, 0xc008);
	assert_int_equal(m->gla, LIN + 0x5008);
	assert_int_equal(m->h.aux, AUX(F(WRITE) | F(NEW) | F(IMPLICIT) | F(LINEAR), 2));
}

static void test_page_crossing_load(void **state)
{
	const uint8_t *r[8];
	const struct tv_rec_mem *m;

	(void)state;
	/* 8 bytes from linear 0x200ffc: 0x8ffc..0x8fff and 0x9000..0x9003; the watch covers 0x8000-0x8fff */
	assert_int_equal(memwatch_add(&cpu, 9, 0x8f00, 0x9000, TV_MEMW_MODE_R, TV_MEMW_FROM_CONTROL,
				      0, 0, NULL, 0), 0);
	gmem[0x8ffc] = 0xaa;
	gmem[0x9000] = 0xbb;
	code((const uint8_t[]){ 0x48, 0x8b, 0x03 }, 3);
	regs.rbx = LIN + 0xffc;
	assert_int_equal(violation(&cpu, 0x8ffc, QUAL_R | QUAL_LIN, LIN + 0xffc), EXIT_RESUME);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	assert_int_equal(records(&cpu, TV_REC_MEM, r, 8), 1);
	m = mem_rec(r[0]);
	assert_int_equal(m->gpa, 0x8ffc);
	assert_int_equal(m->gpa2, 0x9000);
	assert_int_equal(m->h.aux, AUX(F(READ) | F(OLD) | F(SPLIT) | F(LINEAR), 9));
	assert_int_equal(m->old & 0xff, 0xaa);
	assert_int_equal((m->old >> 32) & 0xff, 0xbb);
}

static void test_collateral_walk_and_closed_window(void **state)
{
	const uint8_t *r[8];
	const struct memwatch_stats *st = memwatch_stats_of(&cpu);

	(void)state;
	code((const uint8_t[]){ 0x8b, 0x03 }, 2);
	regs.rbx = BUF + 0x200;                                 /* same page, outside the range */
	assert_int_equal(violation(&cpu, 0x8200, QUAL_R | QUAL_LIN, BUF + 0x200), EXIT_RESUME);
	assert_true(memwatch_stepping(&cpu));
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	assert_int_equal(st->collateral, 1);
	/* the guest's page walk sets an A bit in a watched page: stepped, not recorded */
	assert_int_equal(violation(&cpu, 0x8008, QUAL_R | QUAL_W | QUAL_WALK, BUF), EXIT_RESUME);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	assert_int_equal(st->walks, 1);
	assert_int_equal(st->collateral, 2);
	/* the window closed: stepped and counted */
	cpu.trace->b.active = false;
	regs.rbx = BUF;
	assert_int_equal(violation(&cpu, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	assert_int_equal(st->outside_window, 1);
	assert_int_equal(st->steps, 3);
	assert_int_equal(st->recorded, 0);
	assert_int_equal(records(&cpu, TV_REC_MEM, r, 8), 0);
	/* another page: not the watch's */
	assert_false(memwatch_violation(&(struct exit_ctx){ .cpu = &cpu, .regs = &regs,
							    .qualification = QUAL_R }, 0x9000));
}

static void test_undecoded(void **state)
{
	const uint8_t *r[8];
	const struct tv_rec_mem *m;

	(void)state;
	code((const uint8_t[]){ 0xd9, 0x03 }, 2);               /* fld dword [rbx]: x87, not modelled */
	regs.rbx = BUF + 0x30;
	assert_int_equal(violation(&cpu, 0x8030, QUAL_R | QUAL_LIN, BUF + 0x30), EXIT_RESUME);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	assert_int_equal(records(&cpu, TV_REC_MEM, r, 8), 1);
	m = mem_rec(r[0]);
	assert_int_equal(m->h.info, 0);
	assert_int_equal(m->h.aux, AUX(F(READ) | F(UNDECODED) | F(LINEAR), 1));
	assert_int_equal(m->gpa, 0x8030);
	assert_int_equal(m->gla, BUF + 0x30);
	assert_int_equal(memwatch_stats_of(&cpu)->undecoded, 1);
	/* bytes that do not decode at all (FF /7) */
	code((const uint8_t[]){ 0xff, 0xff }, 2);
	assert_int_equal(violation(&cpu, 0x8031, QUAL_W, 0), EXIT_RESUME);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	assert_int_equal(records(&cpu, TV_REC_MEM, r, 8), 2);
	assert_int_equal(mem_rec(r[1])->h.aux, AUX(F(WRITE) | F(UNDECODED), 1));
	assert_int_equal(memwatch_stats_of(&cpu)->undecoded, 2);
}

/* An NMI delivered first, or a fault: the step ends in a handler, nothing was accessed. */
static void test_step_ended_elsewhere(void **state)
{
	const uint8_t *r[8];

	(void)state;
	code((const uint8_t[]){ 0x8b, 0x03 }, 2);
	regs.rbx = BUF;
	assert_int_equal(violation(&cpu, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	assert_int_equal(mtf_at(&cpu, 0xffffffff81000000ull), EXIT_RESUME);
	assert_int_equal(records(&cpu, TV_REC_MEM, r, 8), 0);
	assert_int_equal(memwatch_stats_of(&cpu)->interrupted, 1);
	assert_int_equal(hw_fake_vmcs_get(VMCS_EPT_POINTER), ept.eptp);   /* restricted again */
	/* the handler returns, the instruction faults again and runs */
	assert_int_equal(violation(&cpu, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	assert_int_equal(records(&cpu, TV_REC_MEM, r, 8), 1);
	/* a REP string iteration ends at its own RIP (SDM 3C 25.5.2): recorded */
	code((const uint8_t[]){ 0xf3, 0xaa }, 2);               /* rep stosb */
	regs.rdi = BUF + 0x90;
	regs.rcx = 5;
	assert_int_equal(violation(&cpu, 0x8090, QUAL_W | QUAL_LIN, BUF + 0x90), EXIT_RESUME);
	assert_int_equal(mtf_at(&cpu, CODE), EXIT_RESUME);
	assert_int_equal(records(&cpu, TV_REC_MEM, r, 8), 2);
	assert_int_equal(mem_rec(r[1])->h.aux, AUX(F(WRITE) | F(NEW) | F(STRING) | F(LINEAR), 1));
	assert_int_equal(memwatch_stats_of(&cpu)->interrupted, 1);
}

/* One step at a time: a second CPU waits for the first's MTF exit (bounded). */
static void test_steps_serialised(void **state)
{
	(void)state;
	code((const uint8_t[]){ 0x8b, 0x03 }, 2);
	regs.rbx = BUF;
	assert_int_equal(violation(&cpu, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	/* the lock was released: the other CPU steps at once */
	assert_int_equal(hw_vmptrld(VMCS_B), 0);
	assert_int_equal(violation(&cpu2, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	assert_true(memwatch_stepping(&cpu2));
	assert_int_equal(memwatch_stats_of(&cpu2)->lock_timeouts, 0);
	/* cpu 2 never reaches its MTF exit: cpu's next violation waits, then goes on */
	assert_int_equal(hw_vmptrld(VMCS_A), 0);
	assert_int_equal(violation(&cpu, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	assert_true(memwatch_stepping(&cpu));
	assert_int_equal(memwatch_stats_of(&cpu)->lock_timeouts, 1);
	if (!strstr(logbuf, "another CPU's step did not end"))
		fail_msg("log: %s", logbuf);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	assert_int_equal(records(&cpu, TV_REC_MEM, (const uint8_t *[4]){ 0 }, 4), 2);
}

static void test_sti_blocking_rules(void **state)
{
	(void)state;
	code((const uint8_t[]){ 0x8b, 0x03 }, 2);
	regs.rbx = BUF;
	/* IF = 0: nothing to block, the field untouched */
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x2);
	assert_int_equal(violation(&cpu, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_INTERRUPTIBILITY), 0);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	/* MOV SS blocking present: STI blocking would fail the entry (SDM 3C 26.3.1.5) */
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x202);
	hw_fake_vmcs_set(VMCS_GUEST_INTERRUPTIBILITY, INTERRUPTIBILITY_MOV_SS);
	assert_int_equal(violation(&cpu, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_INTERRUPTIBILITY), INTERRUPTIBILITY_MOV_SS);
	hw_fake_vmcs_set(VMCS_GUEST_INTERRUPTIBILITY, 0);      /* the instruction ran */
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	/* TF = 1: not without BS in the pending debug exceptions */
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x302);
	assert_int_equal(violation(&cpu, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_INTERRUPTIBILITY), 0);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	/* MTF already on for the tracer: left on after the step */
	cpu.trace->trigger_step = true;
	trace_set_mtf(&cpu, true);
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x202);
	assert_int_equal(violation(&cpu, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	assert_true(cpu.proc & CPU_MONITOR_TRAP_FLAG);
	cpu.trace->trigger_step = false;
}

/* Two CPUs writing different words of one line: mtrace's rule keeps each ping and pong. */
static void test_sharing_filter_two_cpus(void **state)
{
	const uint8_t *r[16];
	struct per_cpu *order[] = { &cpu, &cpu, &cpu2, &cpu, &cpu2, &cpu2 };
	const bool logged[] = { true, false, true, true, true, false };
	size_t n0 = 0, n1 = 0;

	(void)state;
	code((const uint8_t[]){ 0x89, 0x0b }, 2);               /* mov [rbx], ecx */
	for (unsigned i = 0; i < 6; i++) {
		struct per_cpu *c = order[i];

		assert_int_equal(hw_vmptrld(c == &cpu ? VMCS_A : VMCS_B), 0);
		regs.rbx = c == &cpu ? BUF + 0xc0 : BUF + 0xe0;  /* line 0x80c0: words 0 and 32 */
		assert_int_equal(violation(c, regs.rbx - LIN + 0x8000, QUAL_W | QUAL_LIN, regs.rbx),
				 EXIT_RESUME);
		assert_int_equal(mtf(c), EXIT_RESUME);
		if (c == &cpu)
			assert_int_equal(records(c, TV_REC_MEM, r, 16), n0 += logged[i]);
		else
			assert_int_equal(records(c, TV_REC_MEM, r, 16), n1 += logged[i]);
	}
	assert_int_equal(memwatch_stats_of(&cpu)->filtered, 1);
	assert_int_equal(memwatch_stats_of(&cpu2)->filtered, 1);
	assert_int_equal(memwatch_stats_of(&cpu)->recorded, 2);
	assert_int_equal(memwatch_stats_of(&cpu2)->recorded, 2);
	assert_int_equal(hw_vmptrld(VMCS_A), 0);
}

static void test_open_view_follows_other_edits(void **state)
{
	struct ept o;

	(void)state;
	code((const uint8_t[]){ 0x8b, 0x03 }, 2);
	regs.rbx = BUF;
	assert_int_equal(violation(&cpu, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	/* another editor (code snapshots, say) takes W from the neighbour page */
	ept_edit_lock();
	assert_int_equal(ept_map_4k(&ept, &pool, 0x9000, 0x9000, EPT_R | EPT_X, MTRR_TYPE_WB), 0);
	ept_edit_unlock();
	o = open_view();
	assert_int_equal(rights_in(&o, 0x9000), EPT_RWX);       /* stale until the next step */
	assert_int_equal(violation(&cpu, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	assert_int_equal(rights_in(&o, 0x9000), EPT_R | EPT_X); /* resynchronised */
	assert_int_equal(rights_in(&o, 0x8000), EPT_RWX);
	assert_int_equal(hw_fake_inv_log(0)->eptp, memwatch_open_eptp());
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	/* an edit while this CPU steps: its next violation in the open view resynchronises */
	assert_int_equal(violation(&cpu, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	assert_true(memwatch_stepping(&cpu));
	ept_edit_lock();
	assert_int_equal(ept_map_4k(&ept, &pool, 0x9000, 0x9000, EPT_R, MTRR_TYPE_WB), 0);
	ept_edit_unlock();
	assert_true(memwatch_violation(&(struct exit_ctx){ .cpu = &cpu, .regs = &regs,
							   .qualification = QUAL_X }, 0x9000));
	assert_int_equal(rights_in(&o, 0x9000), EPT_R);
	assert_int_equal(hw_fake_inv_log(0)->eptp, memwatch_open_eptp());
	/* in sync now: an unwatched page's violation is the other hooks' */
	assert_false(memwatch_violation(&(struct exit_ctx){ .cpu = &cpu, .regs = &regs,
							    .qualification = QUAL_X }, 0x9000));
	assert_true(memwatch_stepping(&cpu));
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	/* an execute on a mode-w page whose X code snapshots took: theirs, not the watch's */
	assert_false(memwatch_violation(&(struct exit_ctx){ .cpu = &cpu, .regs = &regs,
							    .qualification = QUAL_X }, 0xc000));
	assert_false(memwatch_stepping(&cpu));
	/* the other CPU flushes its restricted view at its next entry */
	assert_int_equal(hw_vmptrld(VMCS_B), 0);
	exit_hooks_get()->before_entry(&cpu2, EXIT_REASON_EPT_VIOLATION);
	assert_int_equal(hw_fake_inv_log(0)->eptp, ept.eptp);
	assert_int_equal(hw_vmptrld(VMCS_A), 0);
}

/* --- hypercalls ---------------------------------------------------------------- */

static int64_t vmcall(uint64_t fn, uint64_t a, uint64_t b, uint64_t c, const char *label)
{
	char l[16] = { 0 };

	if (label)
		strncpy(l, label, sizeof(l));
	regs.rax = fn;
	regs.rbx = a;
	regs.rcx = b;
	regs.rdx = c;
	memcpy(&regs.rsi, l, 8);
	memcpy(&regs.rdi, l + 8, 8);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 3);
	assert_int_equal(exit_on(&cpu, EXIT_REASON_VMCALL, 0, 0, 0), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), CODE + 3);   /* VMCALL skipped */
	hw_fake_vmcs_set(VMCS_GUEST_RIP, CODE);
	return (int64_t)regs.rax;
}

static void test_hypercall_linear_range(void **state)
{
	const uint8_t *r[16];
	const struct tv_rec_mem_watch *w;
	int64_t id;

	(void)state;
	/* linear 0x201000-0x203000 -> 0x9000 and 0xb000: two runs, one id, one label */
	id = vmcall(TV_HC_MEM_WATCH, LIN + 0x1000, 0x2000, TV_HC_MEM_READ | TV_HC_MEM_WRITE, "rq_lock");
	assert_true(id > 2);
	assert_int_equal(rights(0x9000), 0);
	assert_int_equal(rights(0xb000), 0);
	assert_int_equal(rights(0xa000), EPT_RWX);
	assert_int_equal(records(&cpu, TV_REC_MEM_WATCH, r, 16), 2);
	w = (const void *)r[0];
	assert_int_equal(w->h.info, TV_MEMW_ARM);
	assert_int_equal(w->h.aux, (uint32_t)id | TV_MEMW_MODE_RW << 16 | TV_MEMW_FROM_HYPERCALL << 24);
	assert_int_equal(w->lo, 0x9000);
	assert_int_equal(w->hi, 0xa000);
	assert_int_equal(w->gla, LIN + 0x1000);
	assert_int_equal(w->cr3, CR3);
	assert_int_equal(w->h.size, 48 + 8);
	assert_memory_equal((const char *)(w + 1), "rq_lock\0", 8);
	w = (const void *)r[1];
	assert_int_equal(w->lo, 0xb000);
	assert_int_equal(w->hi, 0xc000);
	assert_int_equal(w->gla, LIN + 0x2000);
	/* a watched access there is recorded under that id */
	code((const uint8_t[]){ 0x8b, 0x03 }, 2);
	regs.rbx = LIN + 0x2008;
	assert_int_equal(violation(&cpu, 0xb008, QUAL_R | QUAL_LIN, LIN + 0x2008), EXIT_RESUME);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	assert_int_equal(records(&cpu, TV_REC_MEM, r, 16), 1);
	assert_int_equal(mem_rec(r[0])->h.aux >> TV_MEMF_ID_SHIFT, (uint32_t)id);
	/* unwatch: rights back, one REMOVE per range */
	assert_int_equal(vmcall(TV_HC_MEM_UNWATCH, (uint64_t)id, 0, 0, NULL), TV_HC_OK);
	assert_int_equal(rights(0x9000), EPT_RWX);
	assert_int_equal(rights(0xb000), EPT_RWX);
	assert_int_equal(records(&cpu, TV_REC_MEM_WATCH, r, 16), 4);
	assert_int_equal(((const struct tv_rec_mem_watch *)(const void *)r[2])->h.info, TV_MEMW_REMOVE);
	assert_int_equal(vmcall(TV_HC_MEM_UNWATCH, (uint64_t)id, 0, 0, NULL), TV_HC_EINVAL);
	/* guest-physical, write only */
	id = vmcall(TV_HC_MEM_WATCH, 0xd000, 0x10, TV_HC_MEM_WRITE | TV_HC_MEM_PHYS, NULL);
	assert_true(id > 0);
	assert_int_equal(rights(0xd000), EPT_R | EPT_X);
	/* a label names memory, no trap */
	assert_int_equal(vmcall(TV_HC_MEM_LABEL, LIN + 0x4000, 0x40, 0, "stack"), TV_HC_OK);
	assert_int_equal(rights(0xa000), EPT_RWX);
	assert_int_equal(records(&cpu, TV_REC_MEM_WATCH, r, 16), 6);
	w = (const void *)r[5];
	assert_int_equal(w->h.info, TV_MEMW_LABEL);
	assert_int_equal(w->lo, 0xa000);
	assert_int_equal(w->hi, 0xa040);
	assert_memory_equal((const char *)(w + 1), "stack", 5);
}

static void test_hypercall_bad_arguments(void **state)
{
	(void)state;
	assert_int_equal(vmcall(TV_HC_MEM_WATCH, LIN, 0, 3, NULL), TV_HC_EINVAL);      /* length 0 */
	assert_int_equal(vmcall(TV_HC_MEM_WATCH, LIN, 8, 0, NULL), TV_HC_EINVAL);      /* no mode */
	assert_int_equal(vmcall(TV_HC_MEM_WATCH, LIN, 8, 0x13, NULL), TV_HC_EINVAL);   /* bad bits */
	/* one page of the range not mapped: nothing watched */
	assert_int_equal(vmcall(TV_HC_MEM_WATCH, UNMAPPED - 0x1000, 0x2000, 3, NULL), TV_HC_EINVAL);
	assert_int_equal(rights(0xc000), EPT_R | EPT_X);        /* still the config's w watch only */
	assert_int_equal(vmcall(TV_HC_MEM_WATCH, ~0ull - 4, 16, 3 | TV_HC_MEM_PHYS, NULL), TV_HC_EINVAL);
	assert_int_equal(vmcall(TV_HC_MEM_WATCH, 8 * GiB, 16, 3 | TV_HC_MEM_PHYS, NULL), TV_HC_EINVAL);
	assert_int_equal(vmcall(TV_HC_MEM_UNWATCH, 0, 0, 0, NULL), TV_HC_EINVAL);
	assert_int_equal(vmcall(TV_HC_MEM_UNWATCH, 0x10000, 0, 0, NULL), TV_HC_EINVAL);
	assert_int_equal(vmcall(TV_HC_MEM_LABEL, LIN, 8, 0x40, NULL), TV_HC_EINVAL);
	/* the ABI number moved with the new calls */
	assert_int_equal(vmcall(TV_HC_PROBE, 0, 0, 0, NULL), TV_HC_OK);
	assert_int_equal(regs.rcx, 3);
}

/* The receiver's CONTROL MEM_WATCH, as net.c hands it over. */
static void test_control_arm_remove_label(void **state)
{
	const uint8_t *r[8];
	const struct tv_rec_mem_watch *w;
	int id;

	(void)state;
	id = memwatch_control(&cpu, TV_MEMW_ARM, 0, 0xd000, 0xd040, TV_MEMW_MODE_RW, "ctl", 3);
	assert_true(id > 2);
	assert_int_equal(rights(0xd000), 0);
	assert_int_equal(records(&cpu, TV_REC_MEM_WATCH, r, 8), 1);
	w = (const void *)r[0];
	assert_int_equal(w->h.aux, (uint32_t)id | TV_MEMW_MODE_RW << 16 | TV_MEMW_FROM_CONTROL << 24);
	assert_int_equal(memwatch_control(&cpu, TV_MEMW_REMOVE, (uint32_t)id, 0, 0, 0, NULL, 0), 0);
	assert_int_equal(rights(0xd000), EPT_RWX);
	assert_int_equal(memwatch_control(&cpu, TV_MEMW_REMOVE, (uint32_t)id, 0, 0, 0, NULL, 0),
			 TRACE_EINVAL);
	assert_int_equal(memwatch_control(&cpu, TV_MEMW_LABEL, 0, 0x8000, 0x8010, 0, "hdr", 3), 0);
	assert_int_equal(records(&cpu, TV_REC_MEM_WATCH, r, 8), 3);
	assert_int_equal(((const struct tv_rec_mem_watch *)(const void *)r[2])->h.info, TV_MEMW_LABEL);
	assert_int_equal(memwatch_control(&cpu, TV_MEMW_LABEL, 0, 0x8010, 0x8010, 0, NULL, 0), TRACE_EINVAL);
	assert_int_equal(memwatch_control(&cpu, 9, 0, 0x8000, 0x8010, 0, NULL, 0), TRACE_EINVAL);
	assert_int_equal(memwatch_control(&cpu, TV_MEMW_ARM, 0, 0x8000, 0x8010, 0, NULL, 0), TRACE_EINVAL);
}

/* --- window edges ---------------------------------------------------------------- */

static void test_window_start_announces_and_stop_counts(void **state)
{
	const uint8_t *r[8];
	const struct tv_rec_mem_stats *s;
	const struct tv_rec_mem_watch *w;

	(void)state;
	memwatch_window_start(&cpu);
	memwatch_window_start(&cpu);                            /* once per CPU */
	assert_int_equal(records(&cpu, TV_REC_MEM_WATCH, r, 8), 2);
	w = (const void *)r[0];
	assert_int_equal(w->h.aux, 1u | TV_MEMW_MODE_RW << 16 | TV_MEMW_FROM_CONFIG << 24);
	assert_int_equal(w->lo, 0x8000);
	code((const uint8_t[]){ 0x8b, 0x03 }, 2);
	regs.rbx = BUF;
	assert_int_equal(violation(&cpu, 0x8000, QUAL_R | QUAL_LIN, BUF), EXIT_RESUME);
	assert_int_equal(mtf(&cpu), EXIT_RESUME);
	memwatch_window_stop(&cpu);
	assert_int_equal(records(&cpu, TV_REC_MEM_STATS, r, 8), 1);
	s = (const void *)r[0];
	assert_int_equal(s->h.size, 64);
	assert_int_equal(s->recorded, 1);
	assert_int_equal(s->steps, 1);
	assert_int_equal(s->collateral, 0);
	if (!strstr(logbuf, "mem: cpu 0: recorded 1, filtered 0, collateral 0, steps 1, undecoded 0, outside window 0, lost 0, interrupted 0"))
		fail_msg("log: %s", logbuf);
}

/*
 * Armed (source = pt arms for hypercall watches) but no watch ever: the
 * stop still writes its TV_REC_MEM_STATS, zeros, but logs nothing (the
 * line used to come at every window stop of every PT boot).  Once a
 * watch came by hypercall, the line again.
 */
static void test_window_stop_quiet_without_watches(void **state)
{
	const uint8_t *r[8];

	(void)state;
	memwatch_window_start(&cpu);
	assert_int_equal(records(&cpu, TV_REC_MEM_WATCH, r, 8), 0);
	memwatch_window_stop(&cpu);
	assert_int_equal(records(&cpu, TV_REC_MEM_STATS, r, 8), 1);
	assert_int_equal(((const struct tv_rec_mem_stats *)(const void *)r[0])->recorded, 0);
	if (strstr(logbuf, "mem: cpu"))
		fail_msg("log: %s", logbuf);
	assert_int_equal(memwatch_control(&cpu, TV_MEMW_ARM, 0, 0x8000, 0x8010, TV_MEMW_MODE_RW,
					  NULL, 0), 1);             /* its id */
	memwatch_window_stop(&cpu);
	if (!strstr(logbuf, "mem: cpu 0: recorded 0, filtered 0"))
		fail_msg("log: %s", logbuf);
}

/* --- config and needs ------------------------------------------------------------ */

static void test_config_keys(void **state)
{
	struct tv_config cfg;
	struct config_result res;
	const char *good = "source = lbr\nmem_watch = 0x1000-0x1040\nmem_watch = 0x2000-0x3000:w\n"
			   "mem_watch = 0x4000-0x4001:r\nmem_filter = sharing\n";
	char many[2048];
	size_t at = 0;

	(void)state;
	config_defaults(&cfg);
	assert_int_equal(config_parse(&cfg, good, strlen(good), &res), 0);
	assert_int_equal(cfg.nmem_watch, 3);
	assert_int_equal(cfg.mem_watch[0].lo, 0x1000);
	assert_int_equal(cfg.mem_watch[0].hi, 0x1040);
	assert_int_equal(cfg.mem_watch[0].mode, TV_MEMW_MODE_RW);
	assert_int_equal(cfg.mem_watch[1].mode, TV_MEMW_MODE_W);
	assert_int_equal(cfg.mem_watch[2].mode, TV_MEMW_MODE_R);
	assert_int_equal(cfg.mem_filter, TRACE_MEM_FILTER_SHARING);
	static const char *const bad[] = {
		"mem_watch = 0x2000-0x1000\n",           /* empty */
		"mem_watch = 0x1000-0x1000\n",
		"mem_watch = 4096-8192\n",               /* not hexadecimal */
		"mem_watch = 0x1000\n",
		"mem_watch = 0x1000-0x2000:x\n",
		"mem_watch = 0x1000-0x2000:\n",
		"mem_watch = -0x2000\n",
		"mem_watch = 0x1000-0x20000000000000\n", /* beyond 2^52 */
		"mem_filter = mtrace\n",
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		config_defaults(&cfg);
		if (config_parse(&cfg, bad[i], strlen(bad[i]), &res) != 1)
			fail_msg("accepted: %s", bad[i]);
		assert_int_equal(cfg.nmem_watch, 0);
	}
	config_defaults(&cfg);
	assert_int_equal(config_parse(&cfg, "mem_watch = 0x1000-0x2000:x\n", 28, &res), 1);
	if (!strstr(res.errors[0].msg, "mem_watch must be 0xLO-0xHI[:r|w|rw]"))
		fail_msg("%s", res.errors[0].msg);
	/* with source = mtf: refused, the line named */
	config_defaults(&cfg);
	assert_int_equal(config_parse(&cfg, "source = mtf\nmem_watch = 0x1000-0x2000\n", 39, &res), 1);
	assert_int_equal(res.errors[0].line, 2);
	if (!strstr(res.errors[0].msg, "cannot be used with source = mtf"))
		fail_msg("%s", res.errors[0].msg);
	/* 17 lines: the 17th refused */
	for (unsigned i = 0; i <= TRACE_MEM_WATCH_CONFIG_MAX; i++)
		at += (size_t)snprintf(many + at, sizeof(many) - at, "mem_watch = 0x%x-0x%x\n",
				       0x1000 * (i + 1), 0x1000 * (i + 1) + 8);
	config_defaults(&cfg);
	assert_int_equal(config_parse(&cfg, many, at, &res), 1);
	assert_int_equal(res.errors[0].line, TRACE_MEM_WATCH_CONFIG_MAX + 1);
	assert_int_equal(cfg.nmem_watch, TRACE_MEM_WATCH_CONFIG_MAX);
}

static void test_needs_pool(void **state)
{
	struct trace_setup s = setup_of(TV_SOURCE_PT, 0);
	struct trace_needs n;

	(void)state;
	assert_int_equal(trace_engine_needs(&s, &n), 0);
	assert_int_equal(n.pool_bytes, MEMWATCH_POOL_BYTES);
	s.nmem_watch = 0;
	assert_int_equal(trace_engine_needs(&s, &n), 0);
	assert_int_equal(n.pool_bytes, 0);                      /* hypercall watches use the base pool */
	s.mem_filter = TRACE_MEM_FILTER_SHARING;
	assert_int_equal(trace_engine_needs(&s, &n), 0);
	assert_int_equal(n.pool_bytes, MEMWATCH_POOL_BYTES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_config_watches_restrict_the_view, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mtf_source_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_load_stepped_and_recorded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protected_mode_32, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_and_locked_rmw, setup, teardown),
		cmocka_unit_test_setup_teardown(test_movs_two_records_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stack_push_to_watched_page, setup, teardown),
		cmocka_unit_test_setup_teardown(test_page_crossing_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_collateral_walk_and_closed_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_undecoded, setup, teardown),
		cmocka_unit_test_setup_teardown(test_step_ended_elsewhere, setup, teardown),
		cmocka_unit_test_setup_teardown(test_steps_serialised, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sti_blocking_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sharing_filter_two_cpus, setup_sharing, teardown),
		cmocka_unit_test_setup_teardown(test_open_view_follows_other_edits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hypercall_linear_range, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hypercall_bad_arguments, setup, teardown),
		cmocka_unit_test_setup_teardown(test_control_arm_remove_label, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_start_announces_and_stop_counts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_stop_quiet_without_watches, setup_none, teardown),
		cmocka_unit_test(test_config_keys),
		cmocka_unit_test(test_needs_pool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
