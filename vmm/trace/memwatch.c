/* SPDX-License-Identifier: MIT */
/*
 * memwatch.c - memory-access tracing through EPT: watches, the open
 * view, the single step and the records.  Contract in memwatch.h; the
 * user's view in docs/MEMTRACE.md.
 */
#include "vmm/trace/memwatch.h"

#include <stdio.h>
#include <string.h>

#include "vmm/exit/exit.h"
#include "vmm/exit/exit_ept.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/guest_mem.h"
#include "vmm/lib/log.h"
#include "vmm/lib/x86_access.h"
#include "vmm/lib/x86_decode.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/memshare.h"
#include "vmm/vmx/vmx_caps.h"

/* EPT violation exit qualification (SDM 3C 28.2.1, Table 28-7). */
#define QUAL_READ           (1ull << 0)
#define QUAL_WRITE          (1ull << 1)
#define QUAL_FETCH          (1ull << 2)
#define QUAL_LINEAR_VALID   (1ull << 7)
#define QUAL_TRANSLATED     (1ull << 8)   /* else: an access of the guest's page walk */

#define SEG_AR_B            (1u << 14)    /* SS.B: 32-bit stack (SDM 3A 3.4.5) */
#define PAGE                4096ull
#define PAGE_MASK           (~(PAGE - 1))

struct mw_watch {
	bool used;
	uint8_t mode;               /* TV_MEMW_MODE_* */
	uint8_t origin;             /* enum tv_mem_watch_origin */
	uint32_t id;
	uint64_t lo, hi;            /* guest-physical [lo, hi) */
};

struct mw_page {
	uint64_t gpa;               /* page address; 0 with nwatch 0: free */
	unsigned base;              /* the leaf's rights before the first watch */
	unsigned taken;             /* rights taken away in the restricted view */
	uint32_t nwatch;            /* watches overlapping the page */
};

/* A private table of the open view: a copy of the restricted one at (level, region). */
struct mw_table {
	uint64_t *va;
	uint64_t pa;
	uint8_t level;              /* enum ept_level */
	bool used;                  /* on a watched page's path at the last sync */
	uint64_t region;            /* the first gpa it maps */
};

/* One operand of the instruction being stepped. */
struct mw_op {
	struct tv_rec_mem rec;
	uint32_t size;
	uint32_t aux;               /* TV_MEMF_* | cpl | id */
	bool record;                /* in a watched range of a matching mode, window open */
};

struct mw_cpu {
	bool stepping;
	struct trace_step step;     /* blocking by STI and MTF for the step */
	bool announced;             /* the config's watches are in this CPU's ring */
	bool holds_lock;            /* this CPU's step holds mw.step_lock */
	uint32_t nops;
	/*
	 * Where the step should end: an event delivered before the
	 * instruction (an NMI, which STI blocking need not hold off) or a
	 * fault it raised ends the step elsewhere, with nothing accessed
	 * (SDM 3C 25.5.2: the MTF exit then follows the delivery).
	 */
	bool check_end;             /* the instruction was decoded and is no branch */
	bool rep;                   /* a REP string instruction: may end at its own RIP */
	uint64_t start_rip, next_rip;
	uint64_t edits_seen;        /* struct ept.edits at this CPU's last INVEPT */
	uint32_t open_seen;         /* the open view's version this CPU flushed */
	struct mw_op ops[MEMWATCH_MAX_OPS];
	struct memwatch_stats st;
};

static struct {
	bool armed;
	struct ept *ept;
	struct page_pool *pool;
	uint32_t next_id;
	uint32_t nconfig;           /* ids 1..nconfig are the config's */
	struct mw_watch watches[MEMWATCH_MAX_WATCHES];
	struct mw_page pages[MEMWATCH_MAX_PAGES];
	struct mw_table tabs[MEMWATCH_MAX_TABLES];
	uint32_t ntabs;
	uint64_t open_eptp;
	uint64_t open_edits;        /* struct ept.edits at the last sync */
	bool open_valid;
	uint32_t open_version;      /* bumped at each sync: CPUs INVEPT the open view */
	bool filter;                /* mem_filter = sharing */
	uint32_t step_lock;         /* 1: a CPU is between its violation and its MTF exit */
	struct memshare share;
	uint32_t logged;
	struct mw_cpu cpus[MEMWATCH_MAX_CPUS];
} mw;

#define MW_LOG_SYNC  (1u << 0)
#define MW_LOG_UNDEC (1u << 1)
#define MW_LOG_CPU   (1u << 2)
#define MW_LOG_LOCK  (1u << 3)

static bool log_first(uint32_t bit)
{
	return !(__atomic_fetch_or(&mw.logged, bit, __ATOMIC_RELAXED) & bit);
}

static struct mw_cpu *mw_cpu_of(const struct per_cpu *cpu)
{
	return cpu && cpu->index < MEMWATCH_MAX_CPUS ? &mw.cpus[cpu->index] : NULL;
}

void memwatch_reset(void)
{
	memset(&mw, 0, sizeof(mw));
}

bool memwatch_armed(void)
{
	return __atomic_load_n(&mw.armed, __ATOMIC_ACQUIRE);
}

const struct memwatch_stats *memwatch_stats_of(const struct per_cpu *cpu)
{
	const struct mw_cpu *mc = mw_cpu_of(cpu);

	return mc ? &mc->st : NULL;
}

uint64_t memwatch_open_eptp(void)
{
	return mw.open_eptp;
}

bool memwatch_stepping(const struct per_cpu *cpu)
{
	const struct mw_cpu *mc = mw_cpu_of(cpu);

	return mc && mc->stepping;
}

unsigned memwatch_rights_taken(unsigned mode, uint64_t cap)
{
	if (mode & TV_MEMW_MODE_R)
		/* SDM 3C 29.3.3.1: X alone needs execute-only support. */
		return (cap & EPT_CAP_EXEC_ONLY) ? (unsigned)(EPT_R | EPT_W) : (unsigned)EPT_RWX;
	return (mode & TV_MEMW_MODE_W) ? (unsigned)EPT_W : 0u;
}

/* --- pages and rights (under ept_edit_lock) ----------------------------------------- */

static struct mw_page *page_find(uint64_t page)
{
	for (uint32_t i = 0; i < MEMWATCH_MAX_PAGES; i++)
		if (mw.pages[i].nwatch && mw.pages[i].gpa == page)
			return &mw.pages[i];
	return NULL;
}

static unsigned page_taken(uint64_t page)
{
	unsigned t = 0;

	for (uint32_t i = 0; i < MEMWATCH_MAX_WATCHES; i++) {
		const struct mw_watch *w = &mw.watches[i];

		if (w->used && w->lo < page + PAGE && page < w->hi)
			t |= memwatch_rights_taken(w->mode, mw.ept->cap);
	}
	return t;
}

/* Give page the rights its watches leave (a 4 KiB leaf, split if needed). */
static int page_apply(struct mw_page *p)
{
	struct ept_leaf leaf;
	unsigned taken = page_taken(p->gpa), cur, want;

	if (ept_lookup(mw.ept, p->gpa, &leaf))
		return TRACE_EINVAL;
	cur = leaf.rwx;
	/* rights taken before and given back now: the base's */
	want = (cur | (p->base & p->taken)) & ~taken;
	p->taken = taken;
	if (leaf.level == EPT_LEVEL_PT && cur == want)
		return 0;
	if (ept_map_4k(mw.ept, mw.pool, p->gpa, leaf.hpa & PAGE_MASK, want, leaf.memtype))
		return TRACE_EBUSY;
	return 0;
}

/* The page set after a watch [lo, hi) came (+1) or went (-1). */
static int pages_update(uint64_t lo, uint64_t hi, int delta)
{
	int rc = 0;

	for (uint64_t pg = lo & PAGE_MASK; pg < hi; pg += PAGE) {
		struct mw_page *p = page_find(pg);

		if (!p && delta > 0) {
			struct ept_leaf leaf;

			for (uint32_t i = 0; i < MEMWATCH_MAX_PAGES && !p; i++)
				if (!mw.pages[i].nwatch)
					p = &mw.pages[i];
			if (!p)
				return TRACE_EBUSY;
			if (ept_lookup(mw.ept, pg, &leaf) || !leaf.rwx)
				return TRACE_EINVAL;    /* hidden or unmapped: not the guest's */
			memset(p, 0, sizeof(*p));
			p->gpa = pg;
			p->base = leaf.rwx;
		}
		if (!p)
			continue;
		if (delta > 0)
			p->nwatch++;
		else if (p->nwatch)
			p->nwatch--;
		if (page_apply(p) && !rc)
			rc = TRACE_EBUSY;
		if (!p->nwatch)
			memset(p, 0, sizeof(*p));
	}
	return rc;
}

/* Can [lo, hi) be watched: pages that exist and are the guest's, room in the page set? */
static int range_check(uint64_t lo, uint64_t hi)
{
	uint32_t need = 0, free_pages = 0;

	if (lo >= hi || hi > mw.ept->top)
		return TRACE_EINVAL;
	for (uint64_t pg = lo & PAGE_MASK; pg < hi; pg += PAGE) {
		struct ept_leaf leaf;

		if (page_find(pg))
			continue;
		if (ept_lookup(mw.ept, pg, &leaf) || !leaf.rwx)
			return TRACE_EINVAL;
		if (++need > MEMWATCH_MAX_PAGES)
			return TRACE_EBUSY;
	}
	for (uint32_t i = 0; i < MEMWATCH_MAX_PAGES; i++)
		free_pages += !mw.pages[i].nwatch;
	return need <= free_pages ? 0 : TRACE_EBUSY;
}

/* --- the open view (under ept_edit_lock) ------------------------------------------------ */

static unsigned level_shift(unsigned level)
{
	return 12 + 9 * level;
}

static struct mw_table *tab_find(unsigned level, uint64_t region, bool used_only)
{
	for (uint32_t i = 0; i < mw.ntabs; i++) {
		struct mw_table *t = &mw.tabs[i];

		if (t->level == level && t->region == region && (!used_only || t->used))
			return t;
	}
	return NULL;
}

/* The private table for (level, region), reused or taken from the pool. */
static struct mw_table *tab_get(unsigned level, uint64_t region)
{
	struct mw_table *t = tab_find(level, region, false);
	uint64_t *va;

	if (t)
		return t;
	for (uint32_t i = 1; i < mw.ntabs; i++) {
		t = &mw.tabs[i];
		if (!t->used) {
			/* off every path since the last sync: no parent entry points to it */
			t->level = (uint8_t)level;
			t->region = region;
			return t;
		}
	}
	if (mw.ntabs >= MEMWATCH_MAX_TABLES || !(va = page_pool_alloc(mw.pool)))
		return NULL;
	t = &mw.tabs[mw.ntabs++];
	t->va = va;
	t->pa = page_pool_pa(mw.pool, va);
	t->level = (uint8_t)level;
	t->region = region;
	return t;
}

/*
 * Copy the restricted view's entries into every private table, each
 * entry stored once and only when it changes (a CPU may be stepping in
 * the open view meanwhile): children on a watched page's path point to
 * the private copy, watched leaves get RWX.
 */
static int open_sync(void)
{
	uint64_t edits = mw.ept->edits;

	for (uint32_t i = 1; i < mw.ntabs; i++)
		mw.tabs[i].used = false;
	mw.tabs[0].used = true;
	for (uint32_t i = 0; i < MEMWATCH_MAX_PAGES; i++) {
		const struct mw_page *p = &mw.pages[i];

		if (!p->nwatch)
			continue;
		for (unsigned level = EPT_LEVEL_PDPT;; level--) {
			uint64_t region = p->gpa & ~((1ull << level_shift(level + 1)) - 1);
			struct mw_table *t = tab_get(level, region);

			if (!t)
				return TRACE_EBUSY;
			t->used = true;
			if (level == EPT_LEVEL_PT)
				break;
		}
	}
	for (uint32_t i = 0; i < mw.ntabs; i++) {
		struct mw_table *t = &mw.tabs[i];
		const uint64_t *r;

		if (!t->used)
			continue;
		r = ept_table(mw.ept, t->region, (enum ept_level)t->level);
		if (!r)
			return TRACE_EINVAL;   /* the restricted path is not split down to here */
		for (unsigned j = 0; j < EPT_ENTRIES; j++) {
			uint64_t v = __atomic_load_n(&r[j], __ATOMIC_ACQUIRE);
			uint64_t at = t->region + ((uint64_t)j << level_shift(t->level));

			if (t->level == EPT_LEVEL_PT) {
				if (page_find(at))
					v |= EPT_RWX;
			} else if ((v & EPT_RWX) && !(t->level != EPT_LEVEL_PML4 && (v & EPT_LARGE))) {
				const struct mw_table *c = tab_find(t->level - 1u, at, true);

				if (c)
					v = (v & ~EPT_ADDR_MASK) | c->pa;
			}
			if (t->va[j] != v)
				__atomic_store_n(&t->va[j], v, __ATOMIC_RELEASE);
		}
	}
	mw.open_edits = edits;
	mw.open_valid = true;
	mw.open_version++;
	return 0;
}

/* --- arming ---------------------------------------------------------------------------- */

uint32_t memwatch_new_id(void)
{
	uint32_t id = __atomic_add_fetch(&mw.next_id, 1, __ATOMIC_RELAXED) & 0xffffu;

	return id ? id : memwatch_new_id();
}

static uint32_t watch_aux(uint32_t id, unsigned mode, uint8_t origin)
{
	return (id & 0xffffu) | (uint32_t)mode << 16 | (uint32_t)origin << 24;
}

static void record_watch(struct per_cpu *cpu, uint8_t op, uint32_t aux, uint64_t lo, uint64_t hi,
			 uint64_t gla, uint64_t cr3, const char *label, size_t label_len)
{
	struct tv_trace_ring *r = trace_cpu_ring(cpu);

	if (r)
		(void)trace_append_mem_watch(r, hw_rdtsc(), op, aux, lo, hi, gla, cr3, label, label_len);
}

int memwatch_add(struct per_cpu *cpu, uint32_t id, uint64_t lo, uint64_t hi, unsigned mode,
		 uint8_t origin, uint64_t gla, uint64_t cr3, const char *label, size_t label_len)
{
	struct mw_watch *w = NULL;
	int rc;

	if (!memwatch_armed())
		return TRACE_ENOSYS;
	if (!id || id > 0xffffu || mode < TV_MEMW_MODE_R || mode > TV_MEMW_MODE_RW)
		return TRACE_EINVAL;
	ept_edit_lock();
	rc = range_check(lo, hi);
	for (uint32_t i = 0; !rc && i < MEMWATCH_MAX_WATCHES && !w; i++)
		if (!mw.watches[i].used)
			w = &mw.watches[i];
	if (!rc && !w)
		rc = TRACE_EBUSY;
	if (rc) {
		ept_edit_unlock();
		return rc;
	}
	*w = (struct mw_watch){ .used = true, .mode = (uint8_t)mode, .origin = origin,
				.id = id, .lo = lo, .hi = hi };
	rc = pages_update(lo, hi, +1);
	if (rc) {
		w->used = false;
		(void)pages_update(lo, hi, -1);
	}
	ept_edit_unlock();
	if (rc)
		return rc;
	/* This CPU now; the others before their next entry (memwatch_before_entry). */
	if (cpu && cpu->launched) {
		struct mw_cpu *mc = mw_cpu_of(cpu);

		hw_invept(1, mw.ept->eptp);
		if (mc)
			mc->edits_seen = mw.ept->edits;
	}
	record_watch(cpu, TV_MEMW_ARM, watch_aux(id, mode, origin), lo, hi, gla, cr3, label, label_len);
	log_info("mem: watch %u: %#llx-%#llx %s%s (%s)", id, (unsigned long long)lo,
		 (unsigned long long)hi, mode & TV_MEMW_MODE_R ? "r" : "", mode & TV_MEMW_MODE_W ? "w" : "",
		 origin == TV_MEMW_FROM_CONFIG ? "config" : origin == TV_MEMW_FROM_HYPERCALL ? "hypercall" : "control");
	return 0;
}

int memwatch_remove(struct per_cpu *cpu, uint32_t id)
{
	bool found = false;

	if (!memwatch_armed())
		return TRACE_ENOSYS;
	ept_edit_lock();
	for (uint32_t i = 0; i < MEMWATCH_MAX_WATCHES; i++) {
		struct mw_watch *w = &mw.watches[i];

		if (!w->used || w->id != id)
			continue;
		w->used = false;
		(void)pages_update(w->lo, w->hi, -1);
		record_watch(cpu, TV_MEMW_REMOVE, watch_aux(id, w->mode, w->origin), w->lo, w->hi, 0, 0, NULL, 0);
		found = true;
	}
	ept_edit_unlock();
	if (!found)
		return TRACE_EINVAL;
	if (cpu && cpu->launched) {
		struct mw_cpu *mc = mw_cpu_of(cpu);

		hw_invept(1, mw.ept->eptp);
		if (mc)
			mc->edits_seen = mw.ept->edits;
	}
	log_info("mem: watch %u removed", id);
	return 0;
}

int memwatch_arm(struct ept *ept, struct page_pool *pool, const struct trace_setup *s)
{
	uint64_t *root, *keys, *state;
	/* the filter's keys, then its states: each MEMWATCH_SHARE_SLOTS words */
	unsigned npages = 2u * (MEMWATCH_SHARE_SLOTS * 8u / 4096u);

	memwatch_reset();
	if (!s || s->source == TV_SOURCE_NONE)
		return 0;
	if (s->source == TV_SOURCE_MTF) {
		if (s->nmem_watch)
			log_err("mem: memory watches need the monitor trap flag, which source = mtf owns: not armed");
		return TRACE_ENOSYS;
	}
	if (!ept || !pool || !ept->pml4)
		return TRACE_ENOSYS;
	root = page_pool_alloc(pool);
	if (!root) {
		log_err("mem: no pool page for the open view: memory watches off");
		return TRACE_EBUSY;
	}
	mw.ept = ept;
	mw.pool = pool;
	mw.tabs[0].va = root;
	mw.tabs[0].pa = page_pool_pa(pool, root);
	mw.tabs[0].level = EPT_LEVEL_PML4;
	mw.tabs[0].used = true;
	mw.ntabs = 1;
	/* SDM 3C 25.6.11: the same memory type and walk length as the restricted view */
	mw.open_eptp = mw.tabs[0].pa | (ept->eptp & 0xfffull);
	if (s->mem_filter == TRACE_MEM_FILTER_SHARING) {
		if (page_pool_avail(pool) < npages) {
			log_err("mem: the page pool cannot hold the sharing filter (%u pages): mem_filter = sharing off",
				npages);
		} else {
			keys = page_pool_alloc(pool);
			for (unsigned i = 1; i < npages / 2; i++)
				(void)page_pool_alloc(pool);   /* consecutive pages of a bump allocator */
			state = page_pool_alloc(pool);
			for (unsigned i = 1; i < npages / 2; i++)
				(void)page_pool_alloc(pool);
			mw.filter = memshare_init(&mw.share, keys, state, MEMWATCH_SHARE_SLOTS) == 0;
		}
	}
	__atomic_store_n(&mw.armed, true, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < s->nmem_watch && i < TRACE_MEM_WATCH_CONFIG_MAX; i++) {
		const struct trace_mem_watch *w = &s->mem_watch[i];
		uint32_t id = memwatch_new_id();
		int rc = memwatch_add(NULL, id, w->lo, w->hi, w->mode, TV_MEMW_FROM_CONFIG, 0, 0, NULL, 0);

		if (rc)
			log_err("mem: mem_watch %#llx-%#llx not armed: %s", (unsigned long long)w->lo,
				(unsigned long long)w->hi,
				rc == TRACE_EBUSY ? "too many watched pages or the page pool is empty" :
				"not guest memory (hidden, unmapped or beyond the EPT)");
		mw.nconfig = id;
	}
	log_info("mem: memory watches armed (open view eptp %#llx, filter %s), %llu pool pages left",
		 (unsigned long long)mw.open_eptp, mw.filter ? "sharing" : "none",
		 (unsigned long long)page_pool_avail(pool));
	return 0;
}

/* --- hypercalls ----------------------------------------------------------------------- */

/*
 * Walk [addr, addr + len): physical ranges in order, each physically
 * contiguous run once, to fn.  Linear addresses go through the guest's
 * paging now.  0, TRACE_EINVAL (a page not mapped), or fn's error.
 */
typedef int (*run_fn)(struct per_cpu *cpu, uint64_t lo, uint64_t hi, uint64_t gla, void *arg);

static int for_runs(struct per_cpu *cpu, uint64_t addr, uint64_t len, bool phys, run_fn fn, void *arg)
{
	struct gmem_ctx g;
	uint64_t end = addr + len, lin = addr, run_lo = 0, run_hi = 0, run_gla = addr;
	int rc;

	if (!len || end < addr)
		return TRACE_EINVAL;
	if (phys)
		return fn(cpu, addr, end, 0, arg);
	trace_guest_mem(&g);
	while (lin < end) {
		uint64_t next = (lin & PAGE_MASK) + PAGE, gpa;

		if (next > end || next < lin)
			next = end;
		if (gmem_translate(&g, lin, &gpa))
			return TRACE_EINVAL;
		if (run_hi && gpa == run_hi) {
			run_hi += next - lin;
		} else {
			if (run_hi && (rc = fn(cpu, run_lo, run_hi, run_gla, arg)))
				return rc;
			run_lo = gpa;
			run_hi = gpa + (next - lin);
			run_gla = lin;
		}
		lin = next;
	}
	return run_hi ? fn(cpu, run_lo, run_hi, run_gla, arg) : 0;
}

struct hc_arg {
	uint32_t id;
	unsigned mode;
	const char *label;
	size_t label_len;
	uint32_t runs;
};

static int run_check(struct per_cpu *cpu, uint64_t lo, uint64_t hi, uint64_t gla, void *arg)
{
	int rc;

	(void)cpu;
	(void)gla;
	ept_edit_lock();
	rc = range_check(lo, hi);
	ept_edit_unlock();
	((struct hc_arg *)arg)->runs++;
	return rc;
}

static int run_watch(struct per_cpu *cpu, uint64_t lo, uint64_t hi, uint64_t gla, void *arg)
{
	struct hc_arg *a = arg;

	return memwatch_add(cpu, a->id, lo, hi, a->mode, TV_MEMW_FROM_HYPERCALL, gla,
			    vmcs_get(VMCS_GUEST_CR3), a->label, a->label_len);
}

static int run_label(struct per_cpu *cpu, uint64_t lo, uint64_t hi, uint64_t gla, void *arg)
{
	struct hc_arg *a = arg;

	record_watch(cpu, TV_MEMW_LABEL, watch_aux(0, a->mode, TV_MEMW_FROM_HYPERCALL), lo, hi, gla,
		     gla ? vmcs_get(VMCS_GUEST_CR3) : 0, a->label, a->label_len);
	return 0;
}

static size_t label_len_of(const char *label, size_t max)
{
	size_t n = 0;

	while (label && n < max && label[n])
		n++;
	return n;
}

int memwatch_hc_watch(struct per_cpu *cpu, uint64_t addr, uint64_t len, uint64_t mode,
		      const char *label, size_t label_len)
{
	struct hc_arg a = { .mode = (unsigned)(mode & 3), .label = label,
			    .label_len = label_len_of(label, label_len) };
	bool phys = (mode & MEMWATCH_HC_PHYS) != 0;
	int rc;

	if (!memwatch_armed())
		return TRACE_ENOSYS;
	if ((mode & ~(uint64_t)(3 | MEMWATCH_HC_PHYS)) || !a.mode)
		return TRACE_EINVAL;
	/* every run checked first: all of the range is watched, or none of it */
	rc = for_runs(cpu, addr, len, phys, run_check, &a);
	if (rc)
		return rc;
	a.id = memwatch_new_id();
	rc = for_runs(cpu, addr, len, phys, run_watch, &a);
	if (rc) {
		(void)memwatch_remove(cpu, a.id);
		return rc;
	}
	return (int)a.id;
}

int memwatch_hc_label(struct per_cpu *cpu, uint64_t addr, uint64_t len, uint64_t mode,
		      const char *label, size_t label_len)
{
	struct hc_arg a = { .mode = (unsigned)(mode & 3), .label = label,
			    .label_len = label_len_of(label, label_len) };

	if (!trace_cpu_ring(cpu))
		return TRACE_ENOSYS;
	if (mode & ~(uint64_t)(3 | MEMWATCH_HC_PHYS))
		return TRACE_EINVAL;
	return for_runs(cpu, addr, len, (mode & MEMWATCH_HC_PHYS) != 0, run_label, &a);
}

int memwatch_control(struct per_cpu *cpu, uint8_t op, uint32_t id, uint64_t lo, uint64_t hi,
		     unsigned mode, const char *label, size_t label_len)
{
	int rc;

	if (!memwatch_armed())
		return TRACE_ENOSYS;
	switch (op) {
	case TV_MEMW_ARM:
		id = memwatch_new_id();
		rc = memwatch_add(cpu, id, lo, hi, mode, TV_MEMW_FROM_CONTROL, 0, 0, label, label_len);
		return rc ? rc : (int)id;
	case TV_MEMW_REMOVE:
		return id && id <= 0xffffu ? memwatch_remove(cpu, id) : TRACE_EINVAL;
	case TV_MEMW_LABEL:
		if (lo >= hi)
			return TRACE_EINVAL;
		record_watch(cpu, TV_MEMW_LABEL, watch_aux(0, mode & 3u, TV_MEMW_FROM_CONTROL), lo, hi,
			     0, 0, label, label_len);
		return 0;
	default:
		return TRACE_EINVAL;
	}
}

/* --- the step ------------------------------------------------------------------------- */

/* The first watch (in table order) with the mode that covers part of [gpa, gpa + size); 0 none. */
static uint32_t watch_hit(uint64_t gpa, uint64_t size, uint32_t memf)
{
	for (uint32_t i = 0; i < MEMWATCH_MAX_WATCHES; i++) {
		const struct mw_watch *w = &mw.watches[i];

		if (!w->used || !(w->lo < gpa + size && gpa < w->hi))
			continue;
		if (((memf & TV_MEMF_READ) && (w->mode & TV_MEMW_MODE_R)) ||
		    ((memf & TV_MEMF_WRITE) && (w->mode & TV_MEMW_MODE_W)))
			return w->id;
	}
	return 0;
}

/* Up to 8 bytes of the operand at gpa (the rest of the page) and gpa2 (its next page). */
static uint64_t read_value(uint64_t gpa, uint64_t gpa2, uint32_t size)
{
	uint8_t b[8] = { 0 };
	uint32_t n = size < 8 ? size : 8, first = (uint32_t)(PAGE - (gpa & (PAGE - 1)));
	uint64_t v = 0;

	if (first > n)
		first = n;
	if (trace_guest_read_phys(gpa, b, first) ||
	    (first < n && trace_guest_read_phys(gpa2, b + first, n - first)))
		return 0;
	for (uint32_t i = 0; i < n; i++)
		v |= (uint64_t)b[i] << (8 * i);
	return v;
}

static uint32_t memf_of(uint8_t acc)
{
	uint32_t f = 0;

	if (acc & X86_ACC_READ)
		f |= TV_MEMF_READ;
	if (acc & X86_ACC_WRITE)
		f |= TV_MEMF_WRITE;
	if (acc & X86_ACC_LOCK)
		f |= TV_MEMF_LOCK;
	if (acc & X86_ACC_STRING)
		f |= TV_MEMF_STRING;
	if (acc & X86_ACC_IMPLICIT)
		f |= TV_MEMF_IMPLICIT;
	return f;
}

/* The register file of the guest at this exit. */
static void guest_regs_of(const struct guest_regs *g, struct x86_regs *r, const struct trace_guest *tg)
{
	static const uint32_t seg_field[X86_SEG_COUNT] = {
		VMCS_GUEST_ES_BASE, VMCS_GUEST_CS_BASE, VMCS_GUEST_SS_BASE,
		VMCS_GUEST_DS_BASE, VMCS_GUEST_FS_BASE, VMCS_GUEST_GS_BASE,
	};

	memset(r, 0, sizeof(*r));
	r->gpr[0] = g->rax; r->gpr[1] = g->rcx; r->gpr[2] = g->rdx; r->gpr[3] = g->rbx;
	r->gpr[4] = vmcs_get(VMCS_GUEST_RSP);
	r->gpr[5] = g->rbp; r->gpr[6] = g->rsi; r->gpr[7] = g->rdi;
	r->gpr[8] = g->r8; r->gpr[9] = g->r9; r->gpr[10] = g->r10; r->gpr[11] = g->r11;
	r->gpr[12] = g->r12; r->gpr[13] = g->r13; r->gpr[14] = g->r14; r->gpr[15] = g->r15;
	r->rip = tg->ip;
	for (unsigned s = 0; s < X86_SEG_COUNT; s++)
		r->seg_base[s] = vmcs_get(seg_field[s]);
	if (tg->mode == 64)
		r->stack_size = 64;
	else
		r->stack_size = (vmcs_get(VMCS_GUEST_SS_AR) & SEG_AR_B) ? 32 : 16;
}

/* The instruction at the guest's CS:RIP: its length, or a negative value. */
static int fetch_insn(const struct trace_guest *tg, struct gmem_ctx *g, struct x86_insn *insn)
{
	uint8_t bytes[X86_MAX_INSN_LEN];
	uint64_t linear = tg->mode == 64 ? tg->ip : (tg->cs_base + tg->ip) & 0xffffffffull;
	size_t first = (size_t)(PAGE - (linear & (PAGE - 1))), got;
	int rc;

	if (first > sizeof(bytes))
		first = sizeof(bytes);
	got = trace_guest_fetch(g, linear, bytes, first);
	if (got != first)
		return -X86_ERR_TRUNCATED;
	rc = x86_decode(bytes, first, (enum x86_mode)tg->mode, insn);
	if (rc == -X86_ERR_TRUNCATED && first < sizeof(bytes)) {
		if (trace_guest_fetch(g, linear + first, bytes + first, sizeof(bytes) - first) !=
		    sizeof(bytes) - first)
			return rc;
		rc = x86_decode(bytes, sizeof(bytes), (enum x86_mode)tg->mode, insn);
	}
	return rc;
}

/* The record's rip: linear (CS.base + EIP outside 64-bit mode, as the branch records). */
static uint64_t rip_linear(const struct trace_guest *tg)
{
	return tg->mode == 64 ? tg->ip : (tg->cs_base + tg->ip) & 0xffffffffull;
}

/* A record the violation alone describes (the decoder could not say, or missed it). */
static void add_fact(struct mw_cpu *mc, const struct trace_guest *tg, uint64_t gpa, uint64_t qual,
		     uint64_t gla, bool window)
{
	struct mw_op *o;
	uint32_t memf = TV_MEMF_UNDECODED, id;

	if (qual & QUAL_READ)
		memf |= TV_MEMF_READ;
	if (qual & QUAL_WRITE)
		memf |= TV_MEMF_WRITE;
	id = watch_hit(gpa, 1, memf);
	if (!id || !window || mc->nops >= MEMWATCH_MAX_OPS)
		return;
	if (qual & QUAL_LINEAR_VALID)
		memf |= TV_MEMF_LINEAR;
	o = &mc->ops[mc->nops++];
	memset(o, 0, sizeof(*o));
	o->rec.tsc = tg->tsc;
	o->rec.rip = rip_linear(tg);
	o->rec.cr3 = tg->cr3;
	o->rec.gla = (qual & QUAL_LINEAR_VALID) ? gla : 0;
	o->rec.gpa = gpa;
	o->size = 0;
	o->aux = memf | (uint32_t)tg->cpl << TV_MEMF_CPL_SHIFT | id << TV_MEMF_ID_SHIFT;
	o->record = true;
}

/*
 * The records of the instruction at the violation (under ept_edit_lock:
 * the watches do not move).  Returns true when the instruction was
 * decoded and its operands computed.
 */
static bool prepare(struct exit_ctx *ctx, struct mw_cpu *mc, uint64_t gpa, bool window)
{
	uint64_t qual = ctx->qualification, gla = vmcs_get(VMCS_GUEST_LINEAR_ADDRESS);
	struct trace_guest tg;
	struct gmem_ctx g;
	struct x86_insn insn;
	struct x86_accesses acc;
	struct x86_regs regs;
	bool covered = false;

	mc->nops = 0;
	mc->check_end = false;
	trace_guest_read(&tg);
	trace_guest_mem(&g);
	if (fetch_insn(&tg, &g, &insn) < 0 || x86_access_decode(&insn, &acc) < 0) {
		add_fact(mc, &tg, gpa, qual, gla, window);
		return false;
	}
	mc->check_end = insn.branch == X86_BR_NONE;
	mc->rep = (insn.flags & (X86_F_REP | X86_F_REPNE)) && acc.n && (acc.op[0].flags & X86_ACC_STRING);
	mc->start_rip = tg.ip;
	mc->next_rip = tg.ip + insn.len;
	if (tg.mode != 64)
		mc->next_rip &= tg.mode == 16 ? 0xffffull : 0xffffffffull;
	guest_regs_of(ctx->regs, &regs, &tg);
	for (uint32_t i = 0; i < acc.n && mc->nops < MEMWATCH_MAX_OPS; i++) {
		const struct x86_access *a = &acc.op[i];
		uint64_t lin, pa, pa2 = 0, last;
		uint32_t memf = memf_of(a->flags) | TV_MEMF_LINEAR, id;
		struct mw_op *o;

		if (x86_access_address(&insn, a, &regs, &lin) || gmem_translate(&g, lin, &pa))
			continue;   /* not mapped: the instruction faults in the guest, nothing is accessed */
		last = lin + a->size - 1;
		if ((last & PAGE_MASK) != (lin & PAGE_MASK)) {
			if (gmem_translate(&g, last & PAGE_MASK, &pa2))
				pa2 = 0;
			else
				memf |= TV_MEMF_SPLIT;
		}
		if ((gpa >= pa && gpa - pa < a->size) ||
		    (pa2 && gpa >= pa2 && gpa < pa2 + ((last & (PAGE - 1)) + 1)))
			covered = true;
		id = watch_hit(pa, (memf & TV_MEMF_SPLIT) ? PAGE - (pa & (PAGE - 1)) : a->size, memf);
		if (!id && pa2)
			id = watch_hit(pa2, (last & (PAGE - 1)) + 1, memf);
		if (!id || !window)
			continue;
		o = &mc->ops[mc->nops++];
		memset(o, 0, sizeof(*o));
		o->rec.tsc = tg.tsc;
		o->rec.rip = rip_linear(&tg);
		o->rec.cr3 = tg.cr3;
		o->rec.gla = lin;
		o->rec.gpa = pa;
		o->rec.gpa2 = pa2;
		o->size = a->size;
		if (memf & TV_MEMF_READ) {
			o->rec.old = read_value(pa, pa2, a->size);
			memf |= TV_MEMF_OLD;
		}
		o->aux = memf | (uint32_t)tg.cpl << TV_MEMF_CPL_SHIFT | id << TV_MEMF_ID_SHIFT;
		o->record = true;
	}
	if (!covered && !(qual & QUAL_FETCH)) {
		/* the decoder's operands miss the fault (an access it does not model) */
		mc->st.undecoded++;
		add_fact(mc, &tg, gpa, qual, gla, window);
	}
	return true;
}

/* Switch cpu into the open view for one instruction (under ept_edit_lock). */
static int step_start(struct per_cpu *cpu, struct mw_cpu *mc)
{
	if (!mw.open_valid || mw.open_edits != mw.ept->edits) {
		int rc = open_sync();

		if (rc)
			return rc;
	}
	if (mc->open_seen != mw.open_version) {
		/* entries of the open view changed since this CPU last used it */
		hw_invept(1, mw.open_eptp);
		mc->open_seen = mw.open_version;
	}
	vmcs_write(VMCS_EPT_POINTER, mw.open_eptp);
	/* No interrupt between the violation and the instruction. */
	trace_step_begin(cpu, &mc->step);
	mc->stepping = true;
	mc->st.steps++;
	return 0;
}

/* Is the violation the watch's: a watched page, and not an execute it left to code snapshots (mode w)? */
static bool claims(const struct mw_page *p, uint64_t qual)
{
	return p && ((qual & (QUAL_READ | QUAL_WRITE)) || (p->taken & EPT_X));
}

/*
 * The machine-wide step lock (test and test-and-set).  Bounded: a CPU
 * whose step never ends (stopped by the panic path, the machine reset)
 * cannot hang the others; past the bound a CPU steps without it (counted,
 * logged once).
 */
#define MW_STEP_SPINS (1u << 26)

static void step_lock_take(const struct per_cpu *cpu, struct mw_cpu *mc)
{
	for (uint32_t n = 0;; n++) {
		if (!__atomic_load_n(&mw.step_lock, __ATOMIC_RELAXED) &&
		    !__atomic_exchange_n(&mw.step_lock, 1, __ATOMIC_ACQUIRE)) {
			mc->holds_lock = true;
			return;
		}
		if (n == MW_STEP_SPINS) {
			mc->holds_lock = false;
			mc->st.lock_timeouts++;
			if (log_first(MW_LOG_LOCK))
				log_err("mem: cpu %u: another CPU's step did not end: stepping without the step lock (old values and order may be off; later ones counted)",
					cpu->index);
			return;
		}
		hw_pause();
	}
}

static void step_lock_release(struct mw_cpu *mc)
{
	if (!mc->holds_lock)
		return;
	mc->holds_lock = false;
	__atomic_store_n(&mw.step_lock, 0, __ATOMIC_RELEASE);
}

bool memwatch_violation(struct exit_ctx *ctx, uint64_t gpa)
{
	struct per_cpu *cpu = ctx->cpu;
	struct mw_cpu *mc = mw_cpu_of(cpu);
	uint64_t qual = ctx->qualification;
	const struct mw_page *p;
	bool window, decoded;
	int rc;

	if (!memwatch_armed())
		return false;
	ept_edit_lock();
	p = page_find(gpa & PAGE_MASK);
	if (mc && mc->stepping) {
		/*
		 * In the open view: another editor changed the restricted view
		 * (a snapshot re-armed, a page mapped) or this CPU's open-view
		 * translations are stale.  Resynchronise and retry; anything
		 * else is for the other hooks (they edit the restricted view,
		 * and the retry comes back here).
		 */
		bool stale = !mw.open_valid || mw.open_edits != mw.ept->edits ||
			     mc->open_seen != mw.open_version || p;

		rc = stale && (!mw.open_valid || mw.open_edits != mw.ept->edits || p) ? open_sync() : 0;
		if (stale && !rc) {
			hw_invept(1, mw.open_eptp);
			mc->open_seen = mw.open_version;
		}
		ept_edit_unlock();
		return stale && rc == 0;
	}
	if (!claims(p, qual)) {
		ept_edit_unlock();
		return false;
	}
	if (!mc) {
		ept_edit_unlock();
		if (log_first(MW_LOG_CPU))
			log_err("mem: cpu %u is beyond the %u CPUs memory watches step: it stops at a watched page",
				cpu->index, MEMWATCH_MAX_CPUS);
		return false;
	}
	/*
	 * One step at a time, machine-wide: the old values read now are the
	 * ones the instruction sees, the records' TSCs and the sharing
	 * filter follow the order of the watched accesses.  Taken without
	 * ept_edit_lock (the stepping CPU may need it for other exits).
	 */
	ept_edit_unlock();
	step_lock_take(cpu, mc);
	ept_edit_lock();
	p = page_find(gpa & PAGE_MASK);
	if (!claims(p, qual)) {
		/* unwatched meanwhile: its rights are back, only this CPU's TLB may be stale */
		if (!p)
			hw_invept(1, mw.ept->eptp);
		ept_edit_unlock();
		step_lock_release(mc);
		return !p;
	}
	window = trace_cpu_active(cpu);
	if ((qual & QUAL_LINEAR_VALID) && !(qual & QUAL_TRANSLATED)) {
		/* the guest's page walk reads or sets A/D bits in a watched page */
		mc->nops = 0;
		mc->check_end = false;
		mc->st.walks++;
		decoded = true;
	} else {
		decoded = prepare(ctx, mc, gpa, window);
	}
	if (!decoded) {
		mc->st.undecoded++;
		if (log_first(MW_LOG_UNDEC))
			log_warn("mem: cpu %u: the instruction at %#llx is not decoded: its access to %#llx is recorded from the violation alone (later ones counted)",
				 cpu->index, (unsigned long long)vmcs_get(VMCS_GUEST_RIP),
				 (unsigned long long)gpa);
	}
	if (!window)
		mc->st.outside_window++;
	else if (!mc->nops)
		mc->st.collateral++;
	rc = step_start(cpu, mc);
	ept_edit_unlock();
	if (rc)
		step_lock_release(mc);
	if (rc) {
		if (log_first(MW_LOG_SYNC))
			log_err("mem: cpu %u: the open view cannot be built (%s): watched accesses stop this CPU",
				cpu->index, rc == TRACE_EBUSY ? "no pool page" : "restricted view not split");
		return false;
	}
	return true;
}

bool memwatch_mtf(struct per_cpu *cpu)
{
	struct mw_cpu *mc = mw_cpu_of(cpu);
	struct tv_trace_ring *r;

	if (!mc || !mc->stepping)
		return false;
	mc->stepping = false;
	vmcs_write(VMCS_EPT_POINTER, mw.ept->eptp);
	trace_step_end(cpu, &mc->step, false);
	if (mc->check_end && mc->nops) {
		uint64_t rip = vmcs_get(VMCS_GUEST_RIP);

		if (rip != mc->next_rip && !(mc->rep && rip == mc->start_rip)) {
			/* an event came first, or the instruction faulted: it runs (and faults) again */
			mc->st.interrupted++;
			mc->nops = 0;
		}
	}
	/* new values and the filter in the order of the accesses: under the step lock */
	for (uint32_t i = 0; i < mc->nops; i++) {
		struct mw_op *o = &mc->ops[i];
		int answer;

		if (!o->record)
			continue;
		if ((o->aux & TV_MEMF_WRITE) && !(o->aux & TV_MEMF_UNDECODED)) {
			o->rec.new_val = read_value(o->rec.gpa, o->rec.gpa2, o->size);
			o->aux |= TV_MEMF_NEW;
		}
		if (!mw.filter)
			continue;
		answer = memshare_access(&mw.share, cpu->index, o->rec.gpa,
					 (o->aux & TV_MEMF_READ) != 0, (o->aux & TV_MEMF_WRITE) != 0);
		if (!memshare_logs(answer)) {
			mc->st.filtered++;
			o->record = false;
		} else if (answer != MEMSHARE_LOG) {
			mc->st.unfiltered++;
		}
	}
	step_lock_release(mc);
	/* the ring may wait for the receiver (overflow = wait): not under the lock */
	r = trace_cpu_ring(cpu);
	for (uint32_t i = 0; i < mc->nops; i++) {
		struct mw_op *o = &mc->ops[i];

		if (!o->record)
			continue;
		if (r && trace_append_mem(r, &o->rec, o->size, o->aux) == 0)
			mc->st.recorded++;
		else
			mc->st.lost++;
	}
	mc->nops = 0;
	return true;
}

void memwatch_before_entry(struct per_cpu *cpu)
{
	struct mw_cpu *mc;
	uint64_t edits;

	if (!memwatch_armed())
		return;
	mc = mw_cpu_of(cpu);
	edits = __atomic_load_n(&mw.ept->edits, __ATOMIC_ACQUIRE);
	if (!mc || mc->edits_seen == edits)
		return;
	/* Rights changed (a watch, a snapshot, any EPT edit) since this CPU last flushed (SDM 3C 29.4.3.1). */
	mc->edits_seen = edits;
	hw_invept(1, mw.ept->eptp);
}

/* --- windows ------------------------------------------------------------------------ */

void memwatch_window_start(struct per_cpu *cpu)
{
	struct mw_cpu *mc = mw_cpu_of(cpu);

	if (!memwatch_armed() || !mc || mc->announced)
		return;
	mc->announced = true;
	ept_edit_lock();
	for (uint32_t i = 0; i < MEMWATCH_MAX_WATCHES; i++) {
		const struct mw_watch *w = &mw.watches[i];

		if (w->used && w->origin == TV_MEMW_FROM_CONFIG)
			record_watch(cpu, TV_MEMW_ARM, watch_aux(w->id, w->mode, w->origin), w->lo, w->hi,
				     0, 0, NULL, 0);
	}
	ept_edit_unlock();
}

void memwatch_window_stop(struct per_cpu *cpu)
{
	struct mw_cpu *mc = mw_cpu_of(cpu);
	struct tv_trace_ring *r = trace_cpu_ring(cpu);
	struct tv_rec_mem_stats s;
	char line[200];
	int n;

	if (!memwatch_armed() || !mc)
		return;
	memset(&s, 0, sizeof(s));
	s.tsc = hw_rdtsc();
	s.recorded = mc->st.recorded;
	s.filtered = mc->st.filtered;
	s.collateral = mc->st.collateral;
	s.steps = mc->st.steps;
	s.undecoded = mc->st.undecoded;
	s.outside_window = mc->st.outside_window;
	if (r)
		(void)trace_append_mem_stats(r, &s);
	/* The line only once a watch existed (config or hypercall): armed alone is every PT boot. */
	if (!__atomic_load_n(&mw.next_id, __ATOMIC_RELAXED))
		return;
	n = snprintf(line, sizeof(line),
		     "mem: cpu %u: recorded %llu, filtered %llu, collateral %llu, steps %llu, undecoded %llu, outside window %llu, lost %llu, interrupted %llu",
		     cpu->index, (unsigned long long)s.recorded, (unsigned long long)s.filtered,
		     (unsigned long long)s.collateral, (unsigned long long)s.steps,
		     (unsigned long long)s.undecoded, (unsigned long long)s.outside_window,
		     (unsigned long long)mc->st.lost, (unsigned long long)mc->st.interrupted);
	if (n < 0)
		return;
	if (r)
		(void)trace_append_log(r, hw_rdtsc(), LOG_INFO, line,
				       (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	log_info("%s", line);
}
