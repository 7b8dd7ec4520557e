/* SPDX-License-Identifier: MIT */
/*
 * test_snap.c - code snapshots (vmm/trace/snap.c, docs/SNAPSHOTS.md) on
 * the fake seam, driven through the EPT-violation exit
 * (vmm/exit/exit_ept.c -> the exit hooks -> snap.c): execute taken from
 * guest RAM (WB leaves, large ones staying large) at arm time, a fetch
 * -> CODE + 8 CODE_DATA and the page R+X, the same content again -> one
 * CODE without NEW, a write -> R+W without X and the next fetch -> a
 * REARM snapshot with the new hash, pool exhaustion -> the leaf executes
 * untracked, hidden memory and MMIO never snapshotted, other CPUs' TLBs
 * (generation), the self-writing instruction, the stop line, and the
 * config key, the pool it asks for and the layout that gives it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/config.h"
#include "vmm/exit/exit.h"
#include "vmm/exit/hooks.h"
#include "vmm/hv.h"
#include "vmm/layout.h"
#include "vmm/lib/log.h"
#include "vmm/lib/page_pool.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/needs.h"
#include "vmm/trace/read.h"
#include "vmm/trace/snap.h"
#include "vmm/trace/stall.h"
#include "vmm/vmx/ept.h"
#include "vmm/vmx/mtrr.h"
#include "vmm/vmx/vmx_caps.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)
#define GiB (1ull << 30)
#define PHYS_BITS 39
#define POOL_PA 0x70000000ull
#define POOL_PAGES 512              /* the EPT, the 256 table pages, splits */
#define HIDDEN 0x7ee00000ull
#define SCRATCH 0x7ee10000ull
#define MMIO 0xfee00000ull          /* in the UC variable range */
#define BIG 0x80000000ull           /* a 1 GiB WB leaf */

#define QUAL_R   (1ull << 0)
#define QUAL_W   (1ull << 1)
#define QUAL_X   (1ull << 2)
#define QUAL_LIN ((1ull << 7) | (1ull << 8))

static struct per_cpu cpu, cpu2;
static struct guest_regs regs;
static void *pool_mem;
static struct page_pool pool;
static struct mtrr_state mtrr;
static struct ept ept;
static struct ept_range hidden[1];
static uint64_t ring_mem[(TRACE_CPU_STATE_BYTES + 4096 + 256 * 1024) / 8] __attribute__((aligned(64)));
static char logbuf[16 * 1024];
static size_t loglen;

/* Guest memory: the first 64 KiB as written by the test, any other page a pattern of its address. */
static uint8_t gmem[0x10000];

static int read_phys(void *opaque, uint64_t gpa, void *buf, size_t len)
{
	(void)opaque;
	if (gpa < sizeof(gmem)) {
		if (len > sizeof(gmem) - gpa)
			return -1;
		memcpy(buf, gmem + gpa, len);
		return 0;
	}
	for (size_t i = 0; i < len; i++)
		((uint8_t *)buf)[i] = (uint8_t)(((gpa + i) >> 12) * 7 + i);
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

#define ALL8(t) (0x0101010101010101ull * (uint64_t)(t))

/* OVMF's MTRRs: WB by default, the VGA window and [3 GiB, 4 GiB) UC. */
static void ovmf_mtrrs(struct mtrr_state *s)
{
	memset(s, 0, sizeof(*s));
	s->present = true;
	s->phys_addr_bits = PHYS_BITS;
	s->cap = 0x508;
	s->def_type = MTRR_DEF_E | MTRR_DEF_FE | MTRR_TYPE_WB;
	s->fixed[0] = ALL8(MTRR_TYPE_WB);
	s->fixed[1] = ALL8(MTRR_TYPE_WB);
	s->fixed[2] = ALL8(MTRR_TYPE_UC);
	for (int i = 3; i < MTRR_NUM_FIXED; i++)
		s->fixed[i] = ALL8(MTRR_TYPE_WB);
	s->var_count = 1;
	s->var[0].base = 0xc0000000ull | MTRR_TYPE_UC;
	s->var[0].mask = (~(GiB - 1) & (((1ull << PHYS_BITS) - 1) & ~0xfffull)) | MTRR_PHYSMASK_VALID;
}

/* The ring's size and overflow policy (setup_wait: the smallest ring, overflow = wait). */
static size_t ring_bytes = sizeof(ring_mem);
static enum tv_overflow policy = TV_OVERFLOW_STOP;
static uint8_t trig_start = TV_TRIG_HYPERCALL;
static uint64_t trig_addr;

static void engine(uint8_t snapshots)
{
	struct trace_setup s;

	memset(&s, 0, sizeof(s));
	s.source = TV_SOURCE_MTF;
	s.overflow = (uint8_t)policy;
	s.start = trig_start;
	s.start_addr = trig_addr;
	s.ring_kb = 64;
	s.code_snapshots = snapshots;
	trace_filter_all(&s.filter);
	trace_pt_opts_default(&s.pt);
	trace_engine_init(&s, read_phys, NULL, NULL);
}

static int setup_mode(uint8_t snapshots)
{
	struct ept_params p;

	hw_fake_reset();
	log_clear_sinks();
	log_add_sink(capture, NULL);
	log_set_level(LOG_INFO);
	loglen = 0;
	logbuf[0] = 0;
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	memset(&cpu, 0, sizeof(cpu));
	memset(&cpu2, 0, sizeof(cpu2));
	memset(&regs, 0, sizeof(regs));
	cpu.index = 1;
	cpu2.index = 2;
	cpu.caps.proc = (uint64_t)CPU_MONITOR_TRAP_FLAG << 32;
	memset(gmem, 0x90, sizeof(gmem));
	hw_fake_vmcs_set(VMCS_GUEST_CR0, 0x11);
	hw_fake_vmcs_set(VMCS_GUEST_CS_AR, 0xc09b);
	hw_fake_vmcs_set(VMCS_GUEST_SS_AR, 0xc093);     /* DPL 0 */
	hw_fake_vmcs_set(VMCS_GUEST_CR3, 0x5000);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x2010);
	assert_int_equal(posix_memalign(&pool_mem, 4096, POOL_PAGES * 4096), 0);
	assert_int_equal(page_pool_init_at(&pool, pool_mem, POOL_PA, POOL_PAGES * 4096), 0);
	ovmf_mtrrs(&mtrr);
	hidden[0].base = HIDDEN;
	hidden[0].size = 0x3000;
	memset(&p, 0, sizeof(p));
	p.top = 4 * GiB;
	p.allow_1g = p.allow_2m = true;
	p.ept_vpid_cap = EPT_CAP_PWL4 | EPT_CAP_MEMTYPE_UC | EPT_CAP_MEMTYPE_WB |
			 EPT_CAP_PDE_2MB | EPT_CAP_PDPTE_1GB | EPT_CAP_INVEPT;
	p.mtrr = &mtrr;
	p.hidden = hidden;
	p.nhidden = 1;
	memset(&ept, 0, sizeof(ept));
	assert_int_equal(ept_build(&ept, &pool, &p), 0);
	/* What the generic EPT path needs of the resident state. */
	memset(&hv, 0, sizeof(hv));
	hv.ept = &ept;
	hv.pool = &pool;
	hv.scratch_pa = SCRATCH;
	hv.hidden[0] = hidden[0];
	hv.nhidden = 1;
	engine(snapshots);
	assert_int_equal(trace_cpu_init(&cpu, ring_mem, ring_bytes, 1, 1, TV_SOURCE_MTF,
					policy, 100000000, 0), 0);
	if (trig_start == TV_TRIG_ADDRESS)
		assert_int_equal(trace_trigger_arm(&ept, &pool), 0);
	assert_int_equal(trace_snap_arm(&ept, &pool), 0);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	ring_bytes = sizeof(ring_mem);
	policy = TV_OVERFLOW_STOP;
	trig_start = TV_TRIG_HYPERCALL;
	return setup_mode(TRACE_SNAP_ON);
}

/* The smallest ring (4 KiB of records: a new content, 4,272 bytes, does not fit at once), overflow = wait. */
static int setup_wait(void **state)
{
	(void)state;
	ring_bytes = TRACE_CPU_STATE_BYTES + 4096 + 4096;
	policy = TV_OVERFLOW_WAIT;
	trig_start = TV_TRIG_HYPERCALL;
	return setup_mode(TRACE_SNAP_ON);
}

/* The address trigger in page 0x8000 as well. */
static int setup_trigger(void **state)
{
	(void)state;
	ring_bytes = sizeof(ring_mem);
	policy = TV_OVERFLOW_STOP;
	trig_start = TV_TRIG_ADDRESS;
	trig_addr = 0x8040;
	return setup_mode(TRACE_SNAP_ON);
}

static int setup_off(void **state)
{
	(void)state;
	ring_bytes = sizeof(ring_mem);
	policy = TV_OVERFLOW_STOP;
	trig_start = TV_TRIG_HYPERCALL;
	return setup_mode(TRACE_SNAP_OFF);
}

static int teardown(void **state)
{
	(void)state;
	trace_stall_set_ops(NULL);
	free(pool_mem);
	return 0;
}

/* One EPT violation on c at gpa (linear lin when qual says so), then the entry hook. */
static enum exit_action violation_on(struct per_cpu *c, uint64_t gpa, uint64_t qual, uint64_t lin)
{
	enum exit_action a;

	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_EPT_VIOLATION);
	hw_fake_vmcs_set(VMCS_EXIT_QUALIFICATION, qual);
	hw_fake_vmcs_set(VMCS_GUEST_PHYSICAL_ADDRESS, gpa);
	hw_fake_vmcs_set(VMCS_GUEST_LINEAR_ADDRESS, lin);
	a = vmx_exit_dispatch(c, &regs);
	if (a == EXIT_RESUME)
		exit_hooks_get()->before_entry(c, EXIT_REASON_EPT_VIOLATION);
	return a;
}

static enum exit_action fetch(uint64_t gpa)
{
	return violation_on(&cpu, gpa, QUAL_X | QUAL_LIN, 0x7fff0000ull + (gpa & 0xffff));
}

static unsigned rights(uint64_t gpa)
{
	struct ept_leaf l;

	assert_int_equal(ept_lookup(&ept, gpa, &l), 0);
	return l.rwx;
}

static uint64_t leaf_size(uint64_t gpa)
{
	struct ept_leaf l;

	assert_int_equal(ept_lookup(&ept, gpa, &l), 0);
	return l.page_size;
}

/* The ring's records from the oldest. */
static size_t events(struct trace_event *ev, size_t max)
{
	static uint8_t buf[64 * 1024];
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
	assert_int_equal(rd.stats.bad_records, 0);
	return n;
}

static void page_of(uint64_t gpa, uint8_t *page)
{
	assert_int_equal(read_phys(NULL, gpa & ~0xfffull, page, 4096), 0);
}

/* ev[0] a CODE for page with info, ev[1..8] its content when NEW. */
static void assert_snapshot(const struct trace_event *ev, uint64_t gpa, uint8_t info)
{
	uint8_t page[4096];

	page_of(gpa, page);
	assert_int_equal(ev[0].type, TV_REC_CODE);
	assert_int_equal(ev[0].info, info);
	assert_int_equal(ev[0].u.code.gpa, gpa & ~0xfffull);
	assert_int_equal(ev[0].u.code.hash, tv_code_hash(page));
	assert_int_equal(ev[0].u.code.cr3, 0x5000);
	assert_true(ev[0].has_tsc);
	if (!(info & TV_CODEF_NEW))
		return;
	for (unsigned c = 0; c < TV_CODE_CHUNKS; c++) {
		assert_int_equal(ev[1 + c].type, TV_REC_CODE_DATA);
		assert_int_equal(ev[1 + c].u.code_data.chunk, c);
		assert_int_equal(ev[1 + c].u.code_data.hash, tv_code_hash(page));
		assert_memory_equal(ev[1 + c].u.code_data.bytes, page + c * TV_CODE_CHUNK, TV_CODE_CHUNK);
	}
}

/* --- arming ------------------------------------------------------------------ */

static void test_arm_takes_execute_from_ram(void **state)
{
	(void)state;
	assert_true(trace_snap_global()->armed);
	assert_int_equal(rights(0x2000), EPT_R | EPT_W);        /* 4 KiB leaf below 1 MiB */
	assert_int_equal(rights(BIG), EPT_R | EPT_W);           /* a 1 GiB leaf ... */
	assert_int_equal(leaf_size(BIG), GiB);                  /* ... stays one */
	assert_int_equal(rights(0xa0000), EPT_RWX);             /* VGA window: UC */
	assert_int_equal(rights(MMIO), EPT_RWX);                /* MMIO: UC */
	assert_int_equal(rights(HIDDEN), 0);                    /* hidden: untouched */
	assert_int_equal(rights(HIDDEN + 0x3000), EPT_R | EPT_W);
	/* RAM below 3 GiB minus the VGA window and the hidden pages */
	assert_int_equal(trace_snap_global()->armed_bytes, 3 * GiB - 128 * KiB - 0x3000);
	if (!strstr(logbuf, "snap: code snapshots on: execute taken from"))
		fail_msg("log: %s", logbuf);
}

static void test_off_leaves_ept_alone(void **state)
{
	struct trace_event ev[2];

	(void)state;
	assert_false(trace_snap_global()->armed);
	assert_int_equal(rights(0x2000), EPT_RWX);
	assert_int_equal(rights(BIG), EPT_RWX);
	assert_false(trace_snap_fetch(&cpu, 0x2000));
	assert_false(trace_snap_write(&cpu, 0x2000));
	assert_null(trace_snap_stats_of(&cpu));
	assert_int_equal(events(ev, 2), 0);
	if (!strstr(logbuf, "snap: code snapshots off (code_snapshots = off)"))
		fail_msg("log: %s", logbuf);
}

/* --- fetch, dedup, write, re-arm ---------------------------------------------- */

static void test_fetch_snapshots_page(void **state)
{
	struct trace_event ev[12];
	const struct trace_snap_stats *st;
	const struct hw_fake_inv *inv;

	(void)state;
	for (unsigned i = 0; i < 4096; i++)
		gmem[0x2000 + i] = (uint8_t)(i * 13);
	hw_fake_vmcs_set(VMCS_GUEST_SS_AR, 0xc0f3);             /* DPL 3: user */
	assert_int_equal(fetch(0x2010), EXIT_RESUME);
	assert_int_equal(rights(0x2000), EPT_R | EPT_X);        /* executes, write-protected */
	assert_int_equal(rights(0x3000), EPT_R | EPT_W);        /* the neighbour still armed */
	inv = hw_fake_inv_log(0);
	assert_non_null(inv);
	assert_int_equal(inv->kind, HW_FAKE_INVEPT);
	assert_int_equal(inv->type, 1);
	assert_int_equal(inv->eptp, ept.eptp);
	assert_int_equal(events(ev, 12), 9);
	assert_snapshot(ev, 0x2000, TV_CODEF_NEW | TV_CODEF_LINEAR | TV_CODEF_USER);
	assert_int_equal(ev[0].u.code.linear, 0x7fff2000);
	st = trace_snap_stats_of(&cpu);
	assert_non_null(st);
	assert_int_equal(st->snapshots, 1);
	assert_int_equal(st->new_contents, 1);
	assert_int_equal(st->fetch_exits, 1);
	assert_int_equal(st->bytes, 48 + 8 * 528);
	assert_int_equal(st->rearms, 0);
}

static void test_same_content_one_record(void **state)
{
	struct trace_event ev[16];

	(void)state;
	memset(gmem + 0x2000, 0xcc, 0x2000);                    /* 0x2000 and 0x3000 alike */
	assert_int_equal(fetch(0x2000), EXIT_RESUME);
	/* no linear address in the qualification this time: none in the record */
	assert_int_equal(violation_on(&cpu, 0x3ffc, QUAL_X, 0), EXIT_RESUME);
	assert_int_equal(rights(0x3000), EPT_R | EPT_X);
	assert_int_equal(events(ev, 16), 10);
	assert_snapshot(ev, 0x2000, TV_CODEF_NEW | TV_CODEF_LINEAR);
	assert_snapshot(ev + 9, 0x3000, 0);
	assert_int_equal(ev[9].u.code.linear, 0);
	assert_int_equal(ev[9].u.code.hash, ev[0].u.code.hash);
	assert_int_equal(trace_snap_stats_of(&cpu)->new_contents, 1);
	assert_int_equal(trace_snap_stats_of(&cpu)->snapshots, 2);
	assert_int_equal(trace_snap_global()->contents, 1);
}

static void test_write_rearms_then_new_snapshot(void **state)
{
	struct trace_event ev[24];
	uint64_t first;

	(void)state;
	assert_int_equal(fetch(0x2000), EXIT_RESUME);
	/* a write (text patching): write allowed again, execute taken away */
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x9000);
	assert_int_equal(violation_on(&cpu, 0x2100, QUAL_W | QUAL_LIN, 0x7fff2100), EXIT_RESUME);
	assert_int_equal(rights(0x2000), EPT_R | EPT_W);
	assert_int_equal(trace_snap_stats_of(&cpu)->write_exits, 1);
	gmem[0x2100] = 0xc3;
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x2010);
	assert_int_equal(fetch(0x2010), EXIT_RESUME);
	assert_int_equal(rights(0x2000), EPT_R | EPT_X);
	assert_int_equal(events(ev, 24), 18);
	first = ev[0].u.code.hash;
	assert_snapshot(ev + 9, 0x2000, TV_CODEF_NEW | TV_CODEF_REARM | TV_CODEF_LINEAR);
	assert_true(ev[9].u.code.hash != first);
	assert_int_equal(trace_snap_stats_of(&cpu)->rearms, 1);
	/* a write exit for a page that is not the tracker's goes the generic way */
	assert_false(trace_snap_write(&cpu, MMIO));
	/* a write exit on a page whose leaf allows it: a stale TLB, flushed */
	assert_true(trace_snap_write(&cpu, 0x5000));
	assert_int_equal(hw_fake_inv_log(0)->kind, HW_FAKE_INVEPT);
	assert_int_equal(trace_snap_stats_of(&cpu)->write_exits, 2);
}

static void test_large_leaf_split_to_4k(void **state)
{
	struct trace_event ev[12];

	(void)state;
	assert_int_equal(fetch(BIG + 0x1234), EXIT_RESUME);
	assert_int_equal(leaf_size(BIG + 0x1000), 4 * KiB);
	assert_int_equal(rights(BIG + 0x1000), EPT_R | EPT_X);
	assert_int_equal(rights(BIG), EPT_R | EPT_W);           /* split: the rest keeps R+W */
	assert_int_equal(leaf_size(BIG + 2 * MiB), 2 * MiB);
	assert_int_equal(rights(BIG + 2 * MiB), EPT_R | EPT_W);
	assert_int_equal(events(ev, 12), 9);
	assert_snapshot(ev, BIG + 0x1000, TV_CODEF_NEW | TV_CODEF_LINEAR);
}

/* --- what is not tracked --------------------------------------------------------- */

static void test_pool_exhausted_leaf_untracked(void **state)
{
	struct trace_event ev[2];

	(void)state;
	while (page_pool_alloc(&pool))
		;
	assert_int_equal(fetch(BIG + 0x5000), EXIT_RESUME);
	assert_int_equal(leaf_size(BIG + 0x5000), GiB);         /* not split ... */
	assert_int_equal(rights(BIG + 0x5000), EPT_RWX);        /* ... executes, untracked */
	assert_int_equal(trace_snap_stats_of(&cpu)->untracked, 1);
	assert_int_equal(events(ev, 2), 0);
	if (!strstr(logbuf, "page pool exhausted splitting the 1048576 KiB leaf at 0x80000000"))
		fail_msg("log: %s", logbuf);
	/* a 4 KiB leaf needs no pool */
	assert_int_equal(fetch(0x2000), EXIT_RESUME);
	assert_int_equal(rights(0x2000), EPT_R | EPT_X);
	assert_int_equal(events(ev, 2), 2);
}

static void test_hidden_and_mmio_never_snapshotted(void **state)
{
	struct trace_event ev[2];
	struct ept_leaf l;

	(void)state;
	assert_int_equal(fetch(HIDDEN + 0x10), EXIT_RESUME);    /* the generic path: scratch */
	assert_int_equal(ept_lookup(&ept, HIDDEN, &l), 0);
	assert_int_equal(l.hpa, SCRATCH);
	assert_int_equal(cpu.stats.hidden_memory_accesses, 1);
	assert_false(trace_snap_fetch(&cpu, HIDDEN + 0x1000));
	assert_false(trace_snap_fetch(&cpu, MMIO));
	assert_int_equal(events(ev, 2), 0);
	assert_int_equal(trace_snap_stats_of(&cpu)->snapshots, 0);
}

/* --- other CPUs ------------------------------------------------------------------ */

static void test_other_cpu_flushes_at_its_entry(void **state)
{
	struct trace_event ev[12];
	uint64_t n;

	(void)state;
	assert_int_equal(fetch(0x2000), EXIT_RESUME);
	/* cpu2 (no ring) enters: the rights changed since it last flushed */
	n = hw_fake_inv_count;
	exit_hooks_get()->before_entry(&cpu2, EXIT_REASON_CPUID);
	assert_int_equal(hw_fake_inv_count, n + 1);
	exit_hooks_get()->before_entry(&cpu2, EXIT_REASON_CPUID);
	assert_int_equal(hw_fake_inv_count, n + 1);             /* once */
	exit_hooks_get()->before_entry(&cpu, EXIT_REASON_CPUID);
	assert_int_equal(hw_fake_inv_count, n + 1);             /* the changer flushed already */
	/* a stale fetch on cpu2: the page executes already, no second snapshot */
	assert_int_equal(violation_on(&cpu2, 0x2000, QUAL_X, 0), EXIT_RESUME);
	assert_int_equal(hw_fake_inv_count, n + 2);
	assert_int_equal(trace_snap_stats_of(&cpu2)->fetch_exits, 1);
	assert_int_equal(trace_snap_stats_of(&cpu2)->snapshots, 0);
	/* a page first executed on cpu2, which has no ring: executes, not recorded */
	assert_int_equal(violation_on(&cpu2, 0x6000, QUAL_X, 0), EXIT_RESUME);
	assert_int_equal(rights(0x6000), EPT_R | EPT_X);
	assert_int_equal(trace_snap_global()->no_ring, 1);
	assert_int_equal(events(ev, 12), 9);
}

/*
 * A CPU started by a SIPI runs 16-bit code at CS.base = vector << 12, IP
 * 0, and Intel PT (without LIP) reports IP 0: the page is recorded at
 * linear 0 with TV_CODEF_PTIP, whatever its own first fetch records later.
 */
static void test_sipi_page_at_pt_ip(void **state)
{
	struct trace_event ev[16];
	size_t n;

	(void)state;
	memset(gmem + 0x9000, 0xfa, 4096);
	hw_fake_vmcs_set(VMCS_GUEST_CS_BASE, 0x9000);
	hw_fake_vmcs_set(VMCS_GUEST_CR3, 0);
	exit_hooks_get()->before_entry(&cpu, EXIT_REASON_SIPI);
	n = events(ev, 16);
	assert_int_equal(n, 9);
	hw_fake_vmcs_set(VMCS_GUEST_CR3, 0x5000);   /* what assert_snapshot expects */
	assert_int_equal(ev[0].u.code.cr3, 0);
	ev[0].u.code.cr3 = 0x5000;
	assert_snapshot(ev, 0x9000, TV_CODEF_NEW | TV_CODEF_LINEAR | TV_CODEF_PTIP);
	assert_int_equal(ev[0].u.code.linear, 0);
	/* EPT rights untouched: the page's first fetch is still a snapshot of its own */
	assert_int_equal(rights(0x9000), EPT_R | EPT_W);
	/* another exit reason records nothing */
	exit_hooks_get()->before_entry(&cpu, EXIT_REASON_EPT_VIOLATION);
	assert_int_equal(events(ev, 16), 9);
}

/* An MTF exit on cpu, then the entry hook. */
static enum exit_action mtf_exit(void)
{
	enum exit_action a;

	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_MONITOR_TRAP_FLAG);
	hw_fake_vmcs_set(VMCS_EXIT_QUALIFICATION, 0);
	a = vmx_exit_dispatch(&cpu, &regs);
	if (a == EXIT_RESUME)
		exit_hooks_get()->before_entry(&cpu, EXIT_REASON_MONITOR_TRAP_FLAG);
	return a;
}

/* The instruction at 0x2ff0 writes its own page: its write exit re-arms it, its retry faults on the fetch. */
static void self_write_fault(void)
{
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x2ff0);
	assert_int_equal(violation_on(&cpu, 0x2800, QUAL_W, 0), EXIT_RESUME);
	assert_int_equal(rights(0x2000), EPT_R | EPT_W);
	assert_int_equal(fetch(0x2ff0), EXIT_RESUME);
}

/*
 * Linux's alternatives patch a page with the memcpy that runs from it:
 * that one instruction runs with the page R+W+X under MTF (no interrupt
 * first: blocking by STI), and at the MTF exit the page is R+X again and
 * snapshotted with what it wrote, at its linear address, as a re-arm.
 */
static void test_self_writing_instruction_stepped(void **state)
{
	struct trace_event ev[32];
	size_t n0, n;

	(void)state;
	hw_fake_vmcs_set(VMCS_GUEST_RFLAGS, 0x202);
	hw_fake_vmcs_set(VMCS_GUEST_INTERRUPTIBILITY, 0);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x2ff0);
	assert_int_equal(fetch(0x2ff0), EXIT_RESUME);
	n0 = events(ev, 32);
	self_write_fault();
	assert_int_equal(rights(0x2000), EPT_RWX);
	assert_true(cpu.proc & CPU_MONITOR_TRAP_FLAG);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_INTERRUPTIBILITY), INTERRUPTIBILITY_STI);
	assert_int_equal(trace_snap_stats_of(&cpu)->self_steps, 1);
	assert_int_equal(trace_snap_stats_of(&cpu)->untracked, 0);
	/* the instruction runs: it patches its page */
	memset(gmem + 0x2800, 0x0f, 16);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x2ff4);
	assert_int_equal(mtf_exit(), EXIT_RESUME);
	assert_int_equal(rights(0x2000), EPT_R | EPT_X);
	assert_false(cpu.proc & CPU_MONITOR_TRAP_FLAG);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_INTERRUPTIBILITY), 0);
	n = events(ev, 32);
	assert_int_equal(n, n0 + 9);
	assert_snapshot(&ev[n0], 0x2000, TV_CODEF_NEW | TV_CODEF_REARM | TV_CODEF_LINEAR);
	assert_int_equal(ev[n0].u.code.linear, 0x7fff2000ull);
	/* a later MTF exit is not the step's */
	assert_false(trace_snap_mtf(&cpu));
}

/* A REP string instruction copying over its own page: one iteration per step, so no more steps there. */
static void test_self_writing_rep_string_not_stepped_again(void **state)
{
	(void)state;
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x2ff0);
	assert_int_equal(fetch(0x2ff0), EXIT_RESUME);
	self_write_fault();
	assert_int_equal(rights(0x2000), EPT_RWX);
	gmem[0x2800] ^= 0xff;
	assert_int_equal(mtf_exit(), EXIT_RESUME);          /* RIP still 0x2ff0 */
	assert_int_equal(rights(0x2000), EPT_R | EPT_X);
	assert_false(cpu.proc & CPU_MONITOR_TRAP_FLAG);
	self_write_fault();
	assert_int_equal(rights(0x2000), EPT_RWX);
	assert_false(cpu.proc & CPU_MONITOR_TRAP_FLAG);
	assert_int_equal(trace_snap_stats_of(&cpu)->self_steps, 1);
	assert_int_equal(trace_snap_stats_of(&cpu)->untracked, 1);
}

/*
 * A decompressor moves itself over its own code: past
 * TRACE_SNAP_STEP_MAX steps the page is left R+W+X (untracked) and
 * listed; at the next fetch exit of another page it loses execute again,
 * and its next execution is snapshotted again (with the content written
 * meanwhile) instead of decoding from the stale one.
 */
static void test_self_writing_page_retracked(void **state)
{
	struct trace_event ev[32];
	uint64_t snaps;

	(void)state;
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x2ff0);
	assert_int_equal(fetch(0x2ff0), EXIT_RESUME);
	for (unsigned i = 0; i < TRACE_SNAP_STEP_MAX; i++) {
		self_write_fault();
		assert_int_equal(rights(0x2000), EPT_RWX);
		/* the same bytes written again: 512 CODE records without content fit the ring */
		hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x2ff4);
		assert_int_equal(mtf_exit(), EXIT_RESUME);
		assert_int_equal(rights(0x2000), EPT_R | EPT_X);
	}
	assert_int_equal(trace_snap_stats_of(&cpu)->self_steps, TRACE_SNAP_STEP_MAX);
	self_write_fault();
	assert_int_equal(rights(0x2000), EPT_RWX);
	assert_int_equal(trace_snap_stats_of(&cpu)->self_steps, TRACE_SNAP_STEP_MAX);
	assert_int_equal(trace_snap_stats_of(&cpu)->untracked, 1);
	if (!strstr(logbuf, "writes the page 0x2000 it executes from"))
		fail_msg("log: %s", logbuf);
	snaps = trace_snap_stats_of(&cpu)->snapshots;
	/* another page's first fetch: 0x2000 loses execute again, keeps write */
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x6010);
	assert_int_equal(fetch(0x6010), EXIT_RESUME);
	assert_int_equal(rights(0x2000), EPT_R | EPT_W);
	assert_int_equal(trace_snap_global()->retracked, 1);
	/* the new code at 0x2000 runs: a new snapshot, flagged as a re-arm */
	gmem[0x2100] = 0xc3;
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x2100);
	assert_int_equal(fetch(0x2100), EXIT_RESUME);
	assert_int_equal(rights(0x2000), EPT_R | EPT_X);
	assert_int_equal(trace_snap_stats_of(&cpu)->snapshots, snaps + 2);
	assert_int_equal(trace_snap_stats_of(&cpu)->lost, 0);
	assert_true(events(ev, 32) > 0);
	assert_int_equal(trace_snap_global()->retracked, 1);
	assert_int_equal(trace_snap_global()->self_full, 0);
}

static void test_rearm_limit(void **state)
{
	(void)state;
	for (unsigned i = 0; i <= TRACE_SNAP_REARM_MAX; i++) {
		hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x2010);
		assert_int_equal(fetch(0x2010), EXIT_RESUME);
		hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x9000);
		assert_int_equal(violation_on(&cpu, 0x2100, QUAL_W, 0), EXIT_RESUME);
	}
	/* one fetch more: re-armed TRACE_SNAP_REARM_MAX times already */
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x2010);
	assert_int_equal(rights(0x2000), EPT_R | EPT_W);
	assert_int_equal(fetch(0x2010), EXIT_RESUME);
	assert_int_equal(rights(0x2000), EPT_RWX);
	assert_int_equal(trace_snap_stats_of(&cpu)->rearms, TRACE_SNAP_REARM_MAX);
	assert_int_equal(trace_snap_stats_of(&cpu)->untracked, 1);
}

/* --- the stop line ---------------------------------------------------------------- */

static void test_window_stop_line(void **state)
{
	struct trace_event ev[16];
	const char *want = "snap: cpu 1: snapshots 1, new 1, rearms 0, fetch exits 1, write exits 0, bytes 4272, untracked 0, lost 0, self-write steps 0";
	size_t n;

	(void)state;
	assert_int_equal(trace_start(&cpu, TV_TRIG_HYPERCALL), TRACE_EOK);
	assert_int_equal(fetch(0x2000), EXIT_RESUME);
	assert_int_equal(trace_stop(&cpu, TV_TRIG_HYPERCALL), TRACE_EOK);
	n = events(ev, 16);
	assert_int_equal(n, 12);                                  /* START, 9, LOG, STOP */
	assert_int_equal(ev[10].type, TV_REC_LOG);
	assert_int_equal(ev[10].u.text.len, strlen(want));
	assert_memory_equal(ev[10].u.text.text, want, strlen(want));
	assert_int_equal(ev[11].type, TV_REC_STOP);
	if (!strstr(logbuf, want))
		fail_msg("log: %s", logbuf);
}

/* --- overflow = wait: nine records in a row from the exit path ------------------ */

static struct {
	struct trace_cursor cur;
	uint32_t calls;
	uint32_t code, data;          /* records the exporter took, by kind */
	uint32_t next_chunk;
} ex;

/* The exporter: take every record, check the order, release them. */
static void export_pump(void *ctx, uint32_t c)
{
	static uint8_t buf[8192];
	struct tv_trace_ring *r = cpu.trace->b.ring;
	struct trace_reader rd;
	struct trace_event ev;
	uint64_t first = ex.cur.seq;
	size_t len = 0;

	(void)ctx;
	assert_int_equal(c, cpu.index);
	ex.calls++;
	assert_int_equal(trace_ring_peek(r, &ex.cur, buf, sizeof(buf), &len), 0);
	trace_reader_init(&rd);
	trace_reader_feed(&rd, buf, len, first, false);
	while (trace_reader_next(&rd, &ev) == 1) {
		if (ev.type == TV_REC_CODE) {
			ex.code++;
			ex.next_chunk = 0;    /* its content, if any, follows in order */
		} else if (ev.type == TV_REC_CODE_DATA) {
			assert_int_equal(ev.u.code_data.chunk, ex.next_chunk);
			ex.next_chunk++;
			ex.data++;
		}
	}
	assert_int_equal(rd.stats.bad_records, 0);
	assert_int_equal(trace_ring_consume(r, &ex.cur), 0);
}

static uint64_t never_heard(void *ctx)
{
	(void)ctx;
	return 0;
}

static void test_wait_ring_takes_nine_records(void **state)
{
	struct trace_stall_ops so = { export_pump, never_heard, NULL, &cpu, 1 };

	(void)state;
	memset(&ex, 0, sizeof(ex));
	assert_int_equal(cpu.trace->b.ring->data_size, 4096);
	trace_stall_set_ops(&so);
	assert_int_equal(trace_ring_cursor_tail(cpu.trace->b.ring, &ex.cur), 0);
	assert_int_equal(fetch(0x2000), EXIT_RESUME);
	assert_true(ex.calls >= 1);                               /* the producer waited ... */
	export_pump(NULL, cpu.index);                             /* ... then the rest goes out */
	assert_int_equal(cpu.trace->b.ring->lost_records, 0);    /* ... and lost nothing */
	assert_int_equal(ex.code, 1);
	assert_int_equal(ex.data, TV_CODE_CHUNKS);
	assert_int_equal(trace_snap_stats_of(&cpu)->lost, 0);
	assert_int_equal(trace_snap_stats_of(&cpu)->new_contents, 1);
	/* without an exporter the ring drops what does not fit: counted */
	trace_stall_set_ops(NULL);
	memset(gmem + 0x3000, 0x11, 4096);
	assert_int_equal(fetch(0x3000), EXIT_RESUME);
	assert_int_equal(rights(0x3000), EPT_R | EPT_X);
	assert_true(trace_snap_stats_of(&cpu)->lost > 0);
	assert_true(cpu.trace->b.ring->lost_records > 0);
	assert_int_equal(trace_snap_stats_of(&cpu)->new_contents, 1);
	/* its content was not sent whole: the next page with it sends it again */
	memset(gmem + 0x4000, 0x11, 4096);
	trace_stall_set_ops(&so);
	assert_int_equal(fetch(0x4000), EXIT_RESUME);
	export_pump(NULL, cpu.index);
	assert_int_equal(trace_snap_stats_of(&cpu)->new_contents, 2);
}

/* --- the address trigger's page stays the trigger's ------------------------------ */

static void test_trigger_page_is_the_triggers(void **state)
{
	struct trace_event ev[16];

	(void)state;
	assert_int_equal(rights(0x8000), EPT_R | EPT_W);
	assert_int_equal(fetch(0x8040), EXIT_RESUME);             /* the trigger fires */
	assert_true(cpu.trace->b.active);
	assert_int_equal(rights(0x8000), EPT_RWX);
	assert_int_equal(fetch(0x2000), EXIT_RESUME);             /* other pages: snapshots */
	assert_int_equal(events(ev, 16), 10);
	assert_int_equal(ev[0].type, TV_REC_START);
	assert_snapshot(ev + 1, 0x2000, TV_CODEF_NEW | TV_CODEF_LINEAR);
}

/* --- config, needs, layout ---------------------------------------------------------- */

static void test_config_key(void **state)
{
	static const struct { const char *text; uint32_t errors; uint8_t want; } cases[] = {
		{ "", 0, TRACE_SNAP_AUTO },
		{ "code_snapshots = auto\n", 0, TRACE_SNAP_AUTO },
		{ "code_snapshots = on\n", 0, TRACE_SNAP_ON },
		{ "code_snapshots = off\n", 0, TRACE_SNAP_OFF },
		{ "code_snapshots = yes\n", 1, TRACE_SNAP_AUTO },
		{ "code_snapshots = ON\n", 1, TRACE_SNAP_AUTO },
	};
	struct tv_config cfg;
	struct config_result res;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		config_defaults(&cfg);
		assert_int_equal(config_parse(&cfg, cases[i].text, strlen(cases[i].text), &res),
				 cases[i].errors);
		assert_int_equal(cfg.code_snapshots, cases[i].want);
		if (cases[i].errors && !strstr(res.errors[0].msg, "code_snapshots must be auto, on or off"))
			fail_msg("error: %s", res.errors[0].msg);
	}
}

static void test_wanted_and_pool_needs(void **state)
{
	struct trace_setup s;
	struct trace_needs n;

	(void)state;
	memset(&s, 0, sizeof(s));
	s.ring_kb = 64;
	s.source = TV_SOURCE_PT;
	assert_true(trace_snap_wanted(&s));                      /* auto with pt */
	assert_int_equal(trace_engine_needs(&s, &n), 0);
	assert_int_equal(n.pool_bytes, TRACE_SNAP_POOL_BYTES);
	s.code_snapshots = TRACE_SNAP_OFF;
	assert_false(trace_snap_wanted(&s));
	assert_int_equal(trace_engine_needs(&s, &n), 0);
	assert_int_equal(n.pool_bytes, 0);
	s.source = TV_SOURCE_MTF;
	s.code_snapshots = TRACE_SNAP_AUTO;
	assert_false(trace_snap_wanted(&s));                     /* auto without pt */
	s.code_snapshots = TRACE_SNAP_ON;
	assert_true(trace_snap_wanted(&s));
	assert_int_equal(trace_engine_needs(&s, &n), 0);
	assert_int_equal(n.pool_bytes, TRACE_SNAP_POOL_BYTES);
	s.source = TV_SOURCE_NONE;
	assert_false(trace_snap_wanted(&s));                     /* never without a source */
	assert_int_equal(trace_engine_needs(&s, &n), 0);
	assert_int_equal(n.pool_bytes, 0);
	assert_false(trace_snap_wanted(NULL));
}

static void test_layout_grows_pool(void **state)
{
	struct hv_layout_req req;
	struct hv_layout a, b;

	(void)state;
	memset(&req, 0, sizeof(req));
	req.image_bytes = 1 * MiB;
	req.ncpus = 2;
	req.cpu_struct_bytes = 4096;
	req.info_bytes = 4096;
	assert_int_equal(hv_layout_compute(&req, 0, &a), 0);
	assert_int_equal(a.pool_bytes, HV_POOL_BYTES);
	req.pool_extra_bytes = TRACE_SNAP_POOL_BYTES;
	assert_int_equal(hv_layout_compute(&req, 0, &b), 0);
	assert_int_equal(b.pool_bytes, HV_POOL_BYTES + TRACE_SNAP_POOL_BYTES);
	assert_int_equal(b.total, a.total + TRACE_SNAP_POOL_BYTES);
	req.pool_extra_bytes = 100;                              /* not whole pages */
	assert_int_equal(hv_layout_compute(&req, 0, &b), HV_LAYOUT_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_arm_takes_execute_from_ram, setup, teardown),
		cmocka_unit_test_setup_teardown(test_off_leaves_ept_alone, setup_off, teardown),
		cmocka_unit_test_setup_teardown(test_fetch_snapshots_page, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_content_one_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_rearms_then_new_snapshot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_large_leaf_split_to_4k, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_exhausted_leaf_untracked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hidden_and_mmio_never_snapshotted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_cpu_flushes_at_its_entry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sipi_page_at_pt_ip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_self_writing_instruction_stepped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_self_writing_rep_string_not_stepped_again, setup, teardown),
		cmocka_unit_test_setup_teardown(test_self_writing_page_retracked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rearm_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_stop_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_ring_takes_nine_records, setup_wait, teardown),
		cmocka_unit_test_setup_teardown(test_trigger_page_is_the_triggers, setup_trigger, teardown),
		cmocka_unit_test(test_config_key),
		cmocka_unit_test(test_wanted_and_pool_needs),
		cmocka_unit_test(test_layout_grows_pool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
