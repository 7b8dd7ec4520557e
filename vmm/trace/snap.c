/* SPDX-License-Identifier: MIT */
/*
 * snap.c - code snapshots through EPT execute permission.  Contract in
 * snap.h; the user's view, costs and limits in docs/SNAPSHOTS.md.
 */
#include "vmm/trace/snap.h"

#include <stdio.h>
#include <string.h>

#include "vmm/exit/exit_ept.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/lib/page_pool.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/memwatch.h"
#include "vmm/vmx/ept.h"
#include "vmm/vmx/vcpu.h"

/* EPT violation exit qualification (SDM 3C 28.2.1, Table 28-7). */
#define QUAL_LINEAR_VALID   (1ull << 7)   /* guest-linear address field valid */
#define QUAL_TRANSLATED     (1ull << 8)   /* the access was to the translated address */
/* SS access rights bits 6:5: DPL, which is the CPL (SDM 3C 25.4.1). */
#define SS_AR_DPL(ar)       (((ar) >> 5) & 3u)

#define SLOTS_PER_PAGE      (PAGE_POOL_PAGE_SIZE / 8u)
#define HASH_PAGES          (TRACE_SNAP_HASH_SLOTS / SLOTS_PER_PAGE)
#define PAGE_PAGES          (TRACE_SNAP_PAGE_SLOTS / SLOTS_PER_PAGE)
_Static_assert(TRACE_SNAP_HASH_SLOTS % SLOTS_PER_PAGE == 0 &&
	       (TRACE_SNAP_HASH_SLOTS & (TRACE_SNAP_HASH_SLOTS - 1)) == 0,
	       "the hash set is whole pages, a power of two of slots");
_Static_assert(TRACE_SNAP_PAGE_SLOTS % SLOTS_PER_PAGE == 0 &&
	       (TRACE_SNAP_PAGE_SLOTS & (TRACE_SNAP_PAGE_SLOTS - 1)) == 0,
	       "the page table is whole pages, a power of two of slots");

/*
 * Hash set slots: 0 empty, HASH_GONE a content whose data records were
 * lost (probes go on past it; never reused).  Hashes 0 and 1 are never
 * stored: their contents are always sent.
 */
#define HASH_GONE           1ull
/*
 * Page table slots: the guest-physical page | its re-arm count << 1 | 1
 * (bit 0: used, so page 0 is not "empty"); the count fits bits 11:1.
 */
#define PAGE_USED           1ull
#define PAGE_COUNT_SHIFT    1
#define PAGE_COUNT_MAX      0x7ffull
_Static_assert(TRACE_SNAP_REARM_MAX < PAGE_COUNT_MAX, "re-arm counts fit the slot");

struct snap_cpu {
	uint64_t gen_seen;          /* the generation this CPU's EPT TLB reflects */
	uint64_t last_write_page;   /* the page its last write exit re-armed, | 1 */
	uint64_t last_write_rip;    /* ... at this guest RIP */
	/* A self-writing instruction stepped with MTF (self_step, trace_snap_mtf). */
	bool stepping;
	struct trace_step step;     /* blocking by STI and MTF for the step */
	uint64_t step_page;
	uint64_t step_rip;          /* the instruction stepped */
	uint64_t step_linear;       /* the fetch's linear page | 1; 0: none */
	struct trace_snap_stats st;
};

static struct {
	struct ept *ept;
	struct page_pool *pool;
	uint64_t *hash[HASH_PAGES];
	uint64_t *pages[PAGE_PAGES];
	struct trace_snap_global g;
	uint32_t logged;            /* SNAP_LOG_* bits: each reason logged once */
	/*
	 * Pages left R+W+X because an instruction on them writes them (a
	 * decompressor moving itself over its own code), under
	 * ept_edit_lock: re-armed at the next fetch exit of another page,
	 * so what executes there later (the kernel it decompressed) is
	 * snapshotted again instead of decoding from the stale content.
	 */
	uint64_t self[TRACE_SNAP_SELF_MAX];
	uint32_t nself;
	uint32_t self_logged;
	struct snap_cpu cpus[TRACE_SNAP_MAX_CPUS];
} snap;

#define SNAP_LOG_POOL   (1u << 0)
#define SNAP_LOG_REARM  (1u << 1)
#define SNAP_LOG_SELF   (1u << 2)
#define SNAP_LOG_FULL   (1u << 3)
#define SNAP_LOG_RING   (1u << 4)

/* true the first time bit is logged */
static bool log_first(uint32_t bit)
{
	return !(__atomic_fetch_or(&snap.logged, bit, __ATOMIC_RELAXED) & bit);
}

static void count(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

static struct snap_cpu *snap_cpu_of(const struct per_cpu *cpu)
{
	return cpu && cpu->index < TRACE_SNAP_MAX_CPUS ? &snap.cpus[cpu->index] : NULL;
}

void trace_snap_reset(void)
{
	memset(&snap, 0, sizeof(snap));
}

const struct trace_snap_global *trace_snap_global(void)
{
	return &snap.g;
}

const struct trace_snap_stats *trace_snap_stats_of(const struct per_cpu *cpu)
{
	const struct snap_cpu *sc = snap_cpu_of(cpu);

	return snap.g.armed && sc ? &sc->st : NULL;
}

/* --- the tables ---------------------------------------------------------------- */

/* Fibonacci hashing: the top bits of key * 2^64 / phi. */
static uint32_t slot_start(uint64_t key, uint32_t slots)
{
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (slots - 1);
}

static uint64_t *hash_slot(uint32_t i)
{
	return &snap.hash[i / SLOTS_PER_PAGE][i % SLOTS_PER_PAGE];
}

static uint64_t *page_slot_at(uint32_t i)
{
	return &snap.pages[i / SLOTS_PER_PAGE][i % SLOTS_PER_PAGE];
}

/*
 * Claim h in the hash set, lock-free: 1 new (the caller sends the
 * content), 0 sent already (by any CPU), -1 no slot within the probes
 * (the caller sends it anyway, counted).
 */
static int hash_claim(uint64_t h)
{
	uint32_t start;

	if (h <= HASH_GONE)
		return -1;
	start = slot_start(h, TRACE_SNAP_HASH_SLOTS);
	for (uint32_t k = 0; k < TRACE_SNAP_PROBES; k++) {
		uint64_t *s = hash_slot((start + k) & (TRACE_SNAP_HASH_SLOTS - 1));
		uint64_t v = __atomic_load_n(s, __ATOMIC_ACQUIRE);

		if (v == h)
			return 0;
		if (v)
			continue;
		if (__atomic_compare_exchange_n(s, &v, h, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			count(&snap.g.contents, 1);
			return 1;
		}
		if (v == h)
			return 0;   /* another CPU claimed it just now */
	}
	return -1;
}

/*
 * The content's data records were lost: the next page with this content
 * sends it again (the slot cannot be emptied: later keys may have probed
 * past it).
 */
static void hash_forget(uint64_t h)
{
	uint32_t start;

	if (h <= HASH_GONE)
		return;
	start = slot_start(h, TRACE_SNAP_HASH_SLOTS);
	for (uint32_t k = 0; k < TRACE_SNAP_PROBES; k++) {
		uint64_t *s = hash_slot((start + k) & (TRACE_SNAP_HASH_SLOTS - 1));
		uint64_t v = h;

		if (__atomic_compare_exchange_n(s, &v, HASH_GONE, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return;
		if (!v)
			return;
	}
}

/*
 * The page table slot of page (under ept_edit_lock), claimed when absent
 * (*fresh then true).  NULL: no slot within the probes.
 */
static uint64_t *page_find(uint64_t page, bool *fresh)
{
	uint32_t start = slot_start(page >> 12, TRACE_SNAP_PAGE_SLOTS);

	*fresh = false;
	for (uint32_t k = 0; k < TRACE_SNAP_PROBES; k++) {
		uint64_t *s = page_slot_at((start + k) & (TRACE_SNAP_PAGE_SLOTS - 1));

		if (*s && (*s & ~0xfffull) == page)
			return s;
		if (!*s) {
			*s = page | PAGE_USED;
			*fresh = true;
			snap.g.pages++;
			return s;
		}
	}
	return NULL;
}

static uint64_t page_count(uint64_t slot)
{
	return (slot >> PAGE_COUNT_SHIFT) & PAGE_COUNT_MAX;
}

/* --- arming -------------------------------------------------------------------- */

/* A leaf the tracker takes execute from: present, readable, guest RAM (WB). */
static bool trackable(const struct ept_leaf *l)
{
	return (l->rwx & EPT_R) && l->memtype == MTRR_TYPE_WB;
}

static int take_tables(struct page_pool *pool)
{
	if (page_pool_avail(pool) < HASH_PAGES + PAGE_PAGES)
		return EPT_ERR_NOMEM;
	for (unsigned i = 0; i < HASH_PAGES; i++)
		if (!(snap.hash[i] = page_pool_alloc(pool)))
			return EPT_ERR_NOMEM;
	for (unsigned i = 0; i < PAGE_PAGES; i++)
		if (!(snap.pages[i] = page_pool_alloc(pool)))
			return EPT_ERR_NOMEM;
	return 0;
}

int trace_snap_arm(struct ept *ept, struct page_pool *pool)
{
	uint64_t gpa, next, leaves = 0;
	struct ept_leaf leaf;

	trace_snap_reset();
	if (!trace_snap_wanted(&trace_cfg)) {
		if (trace_cfg.source != TV_SOURCE_NONE)
			log_info("snap: code snapshots off (code_snapshots = %s)",
				 trace_cfg.code_snapshots == TRACE_SNAP_OFF ? "off" : "auto, source is not pt");
		return 0;
	}
	if (!ept || !pool || !ept->pml4)
		return EPT_ERR_INVAL;
	if (take_tables(pool)) {
		log_err("snap: the page pool cannot hold the snapshot tables (%u pages, %llu left): code snapshots off",
			HASH_PAGES + PAGE_PAGES, (unsigned long long)page_pool_avail(pool));
		trace_snap_reset();
		return EPT_ERR_NOMEM;
	}
	snap.ept = ept;
	snap.pool = pool;
	/*
	 * Every leaf in [0, top), each once: a large leaf stays large (one
	 * store), so arming needs no pool page.  ept_build maps all of
	 * [0, top); a missing table is stepped over a page at a time.
	 */
	for (gpa = 0; gpa < ept->top; gpa = next) {
		if (ept_lookup(ept, gpa, &leaf)) {
			next = gpa + EPT_PAGE_4K;
			continue;
		}
		next = (gpa & ~(leaf.page_size - 1)) + leaf.page_size;
		if (!trackable(&leaf) || !(leaf.rwx & EPT_X))
			continue;
		if (ept_set_rights(ept, gpa, leaf.rwx & ~(unsigned)EPT_X, NULL) == 0) {
			snap.g.armed_bytes += leaf.page_size;
			leaves++;
		}
	}
	snap.g.armed = true;
	log_info("snap: code snapshots on: execute taken from %llu MiB of guest RAM (memory type WB) in %llu EPT leaves; %llu pool pages left for splits",
		 (unsigned long long)(snap.g.armed_bytes >> 20), (unsigned long long)leaves,
		 (unsigned long long)page_pool_avail(pool));
	return 0;
}

/* --- the exits ----------------------------------------------------------------- */

/* Under ept_edit_lock: rights changed; this CPU's TLB is flushed now, the others' at their entry. */
static void changed(struct snap_cpu *sc)
{
	uint64_t gen = __atomic_add_fetch(&snap.g.generation, 1, __ATOMIC_ACQ_REL);

	hw_invept(1, snap.ept->eptp);
	if (sc)
		sc->gen_seen = gen;
}

/* Under ept_edit_lock: page (in leaf) executes and is written freely from now on. */
static void untrack_page(struct snap_cpu *sc, uint64_t page, const struct ept_leaf *leaf)
{
	if (ept_map_4k(snap.ept, snap.pool, page, leaf->hpa & ~0xfffull, EPT_RWX, leaf->memtype))
		ept_set_rights(snap.ept, page, EPT_RWX, NULL);   /* no pool: the whole leaf */
	if (sc)
		sc->st.untracked++;
}

/*
 * The snapshot itself (no lock held): copy the page, hash, and write the
 * CODE record (and the content when new) into cpu's ring.
 */
static void snapshot(struct per_cpu *cpu, struct snap_cpu *sc, uint64_t page, uint8_t info,
		     uint64_t linear_tag)
{
	uint8_t buf[TV_CODE_PAGE];
	struct tv_trace_ring *r = trace_cpu_ring(cpu);
	uint64_t linear = 0, hash;
	int claim;
	bool sent = true;

	if (!r) {
		count(&snap.g.no_ring, 1);
		if (log_first(SNAP_LOG_RING))
			log_warn("snap: cpu %u executes guest code but does not trace (trace_cpus): its first executions are not recorded",
				 cpu->index);
		return;
	}
	/* One copy: what is hashed is what is sent, even if a stale TLB lets a write in. */
	if (trace_guest_read_phys(page, buf, sizeof(buf))) {
		count(&snap.g.unreadable, 1);
		return;
	}
	hash = tv_code_hash(buf);
	claim = hash_claim(hash);
	if (claim < 0)
		count(&snap.g.hash_full, 1);
	if (claim != 0)
		info |= TV_CODEF_NEW;
	if (linear_tag & 1) {
		linear = linear_tag & ~0xfffull;
		info |= TV_CODEF_LINEAR;
	}
	if (SS_AR_DPL(vmcs_get(VMCS_GUEST_SS_AR)) == 3)
		info |= TV_CODEF_USER;
	if (trace_append_code(r, hw_rdtsc(), info, page, linear, vmcs_get(VMCS_GUEST_CR3), hash)) {
		if (sc)
			sc->st.lost++;
		sent = false;
	} else if (sc) {
		sc->st.snapshots++;
		sc->st.bytes += sizeof(struct tv_rec_code);
		if (info & TV_CODEF_REARM)
			sc->st.rearms++;
	}
	if (!(info & TV_CODEF_NEW))
		return;
	for (uint32_t c = 0; c < TV_CODE_CHUNKS; c++) {
		if (trace_append_code_data(r, hash, c, buf + c * TV_CODE_CHUNK)) {
			if (sc)
				sc->st.lost++;
			sent = false;
		} else if (sc) {
			sc->st.bytes += sizeof(struct tv_rec_code_data);
		}
	}
	if (sent && sc)
		sc->st.new_contents++;
	if (!sent && claim == 1)
		hash_forget(hash);
}

/*
 * Under ept_edit_lock: take execute away again from the self-writing
 * pages (snap.self) other than except, so their next fetch takes a new
 * snapshot.  Each such snapshot counts as a re-arm of its page, so a page
 * that keeps writing itself reaches TRACE_SNAP_REARM_MAX and stays
 * untracked for good.  true when rights changed (the caller flushes).
 */
static bool retrack_self(uint64_t except)
{
	uint32_t keep = 0;
	bool any = false;

	for (uint32_t i = 0; i < snap.nself; i++) {
		uint64_t p = snap.self[i];
		struct ept_leaf l;

		if (p == except) {
			snap.self[keep++] = p;
			continue;
		}
		if (ept_lookup(snap.ept, p, &l) || l.level != EPT_LEVEL_PT || l.rwx != EPT_RWX)
			continue;   /* changed since: nothing to undo */
		if (ept_map_4k(snap.ept, snap.pool, p, l.hpa & ~0xfffull, EPT_R | EPT_W, l.memtype) == 0) {
			snap.g.retracked++;
			any = true;
		}
	}
	snap.nself = keep;
	return any;
}

/* The linear page of this EPT violation's access | 1, or 0 when the exit gives none. */
static uint64_t exit_linear_tag(void)
{
	uint64_t qual = vmcs_get(VMCS_EXIT_QUALIFICATION);

	if (!(qual & QUAL_LINEAR_VALID) || !(qual & QUAL_TRANSLATED))
		return 0;
	return (vmcs_get(VMCS_GUEST_LINEAR_ADDRESS) & ~0xfffull) | 1;
}

/*
 * Under ept_edit_lock, at the fetch exit of an instruction that writes
 * the page it runs from (its write exit re-armed the page, its retry
 * faults on the fetch): let that one instruction run with the page
 * R+W+X, stepped with the monitor trap flag; at the MTF exit
 * (trace_snap_mtf) the page goes back to R+X and is snapshotted with
 * what the instruction wrote, at that time, so the code that runs there
 * next decodes from the content it has.  Linux's alternatives patch
 * pv_native_irq_enable's page with the memcpy that lives on it: left
 * R+W+X until a fetch elsewhere (below), the page executed patched code
 * against its unpatched snapshot ("bad compressed return" at
 * pv_native_irq_enable+1).  No interrupt between the entry and the
 * instruction: blocking by STI as memwatch's step sets it.  Not while a
 * memory watch steps this CPU; one that begins during this step (a
 * watched access by the same instruction) ends at the same MTF exit, and
 * MTF goes off only when neither needs it.  At most TRACE_SNAP_STEP_MAX
 * times per page (counted as re-arms): a
 * decompressor moving itself over its own code falls back to the list.
 * true: stepping.
 */
static bool self_step(struct per_cpu *cpu, struct snap_cpu *sc, uint64_t page,
		      const struct ept_leaf *leaf)
{
	uint64_t *slot;
	bool fresh;

	if (!sc || sc->stepping || memwatch_stepping(cpu))
		return false;
	slot = page_find(page, &fresh);
	if (!slot || page_count(*slot) >= TRACE_SNAP_STEP_MAX)
		return false;
	if (ept_map_4k(snap.ept, snap.pool, page, leaf->hpa & ~0xfffull, EPT_RWX, leaf->memtype))
		return false;
	*slot += 1ull << PAGE_COUNT_SHIFT;
	changed(sc);
	sc->step_linear = exit_linear_tag();
	trace_step_begin(cpu, &sc->step);
	sc->stepping = true;
	sc->step_page = page;
	sc->step_rip = vmcs_get(VMCS_GUEST_RIP);
	sc->last_write_page = 0;
	sc->st.self_steps++;
	return true;
}

bool trace_snap_mtf(struct per_cpu *cpu)
{
	struct snap_cpu *sc = snap_cpu_of(cpu);
	struct ept_leaf leaf;
	bool back = false;

	if (!sc || !sc->stepping)
		return false;
	sc->stepping = false;
	trace_step_end(cpu, &sc->step, memwatch_stepping(cpu));
	ept_edit_lock();
	if (vmcs_get(VMCS_GUEST_RIP) == sc->step_rip) {
		/*
		 * It ends where it began: a REP string iteration (a bulk copy
		 * over its own code) or an event first.  No more steps here.
		 */
		bool fresh;
		uint64_t *slot = page_find(sc->step_page, &fresh);

		if (slot && page_count(*slot) < TRACE_SNAP_STEP_MAX)
			*slot = (*slot & ~(PAGE_COUNT_MAX << PAGE_COUNT_SHIFT)) |
				((uint64_t)TRACE_SNAP_STEP_MAX << PAGE_COUNT_SHIFT);
	}
	if (!ept_lookup(snap.ept, sc->step_page, &leaf) && leaf.level == EPT_LEVEL_PT &&
	    leaf.rwx == EPT_RWX &&
	    ept_map_4k(snap.ept, snap.pool, sc->step_page, leaf.hpa & ~0xfffull, EPT_R | EPT_X,
		       leaf.memtype) == 0) {
		changed(sc);
		back = true;
	}
	ept_edit_unlock();
	if (back)
		snapshot(cpu, sc, sc->step_page, TV_CODEF_REARM, sc->step_linear);
	return true;
}

void trace_snap_sipi(struct per_cpu *cpu)
{
	uint64_t base;

	if (!__atomic_load_n(&snap.g.armed, __ATOMIC_ACQUIRE))
		return;
	base = vmcs_get(VMCS_GUEST_CS_BASE);
	if (base & 0xfff)
		return;   /* not what a SIPI sets (vector << 12) */
	snapshot(cpu, snap_cpu_of(cpu), base, TV_CODEF_PTIP, 0 | 1);
}

bool trace_snap_fetch(struct per_cpu *cpu, uint64_t gpa)
{
	struct snap_cpu *sc = snap_cpu_of(cpu);
	uint64_t page = gpa & ~0xfffull, rip, *slot;
	struct ept_leaf leaf;
	uint8_t info = 0;
	bool fresh;
	int rc;

	if (!__atomic_load_n(&snap.g.armed, __ATOMIC_ACQUIRE))
		return false;
	ept_edit_lock();
	if (snap.nself && retrack_self(page))
		changed(sc);
	if (ept_lookup(snap.ept, page, &leaf) || !trackable(&leaf)) {
		ept_edit_unlock();
		return false;   /* not guest RAM the tracker took execute from */
	}
	if (sc)
		sc->st.fetch_exits++;
	if (leaf.rwx & EPT_X) {
		/* Another CPU made it executable: only this CPU's TLB is stale. */
		hw_invept(1, snap.ept->eptp);
		ept_edit_unlock();
		return true;
	}
	rip = vmcs_get(VMCS_GUEST_RIP);
	if (sc && sc->last_write_page == (page | 1) && sc->last_write_rip == rip) {
		/*
		 * The instruction at rip writes the page it runs from (or
		 * spans): write and fetch exits would alternate for ever.
		 */
		bool listed = false, logit;

		if (self_step(cpu, sc, page, &leaf)) {
			ept_edit_unlock();
			return true;
		}
		untrack_page(sc, page, &leaf);
		if (snap.nself < TRACE_SNAP_SELF_MAX) {
			snap.self[snap.nself++] = page;
			listed = true;
		} else {
			snap.g.self_full++;
		}
		changed(sc);
		logit = snap.self_logged < TRACE_SNAP_SELF_LOG;
		if (logit)
			snap.self_logged++;
		ept_edit_unlock();
		if (logit)
			log_info("snap: cpu %u: the instruction at %#llx writes the page %#llx it executes from: executable and writable until the next fetch exit elsewhere%s",
				 cpu->index, (unsigned long long)rip, (unsigned long long)page,
				 listed ? "" : " (list full: for good)");
		return true;
	}
	slot = page_find(page, &fresh);
	if (!slot) {
		snap.g.page_full++;
		if (log_first(SNAP_LOG_FULL))
			log_warn("snap: page table full (%u slots): later snapshots carry no REARM flag",
				 TRACE_SNAP_PAGE_SLOTS);
	} else if (!fresh) {
		if (page_count(*slot) >= TRACE_SNAP_REARM_MAX) {
			untrack_page(sc, page, &leaf);
			changed(sc);
			ept_edit_unlock();
			if (log_first(SNAP_LOG_REARM))
				log_warn("snap: cpu %u: page %#llx re-armed %u times: left executable and writable (untracked); later pages alike are not logged",
					 cpu->index, (unsigned long long)page, TRACE_SNAP_REARM_MAX);
			return true;
		}
		info |= TV_CODEF_REARM;
	}
	rc = ept_map_4k(snap.ept, snap.pool, page, leaf.hpa & ~0xfffull, EPT_R | EPT_X, leaf.memtype);
	if (rc == EPT_ERR_NOMEM) {
		/* No page table for the split: the whole leaf executes, untracked. */
		if (slot && fresh) {
			*slot = 0;   /* nothing probed past it yet: still empty */
			snap.g.pages--;
		}
		ept_set_rights(snap.ept, page, leaf.rwx | EPT_X, NULL);
		if (sc)
			sc->st.untracked++;
		changed(sc);
		ept_edit_unlock();
		if (log_first(SNAP_LOG_POOL))
			log_warn("snap: cpu %u: page pool exhausted splitting the %llu KiB leaf at %#llx: it executes untracked (later ones are counted, not logged)",
				 cpu->index, (unsigned long long)(leaf.page_size >> 10),
				 (unsigned long long)(page & ~(leaf.page_size - 1)));
		return true;
	}
	if (rc) {
		ept_edit_unlock();
		log_err("snap: cpu %u: cannot map %#llx R+X: %s", cpu->index,
			(unsigned long long)page, ept_strerror(rc));
		return false;
	}
	if (slot && !fresh)
		*slot += 1ull << PAGE_COUNT_SHIFT;
	/* W went away: another CPU's TLB may still allow it (docs/SNAPSHOTS.md). */
	changed(sc);
	ept_edit_unlock();
	snapshot(cpu, sc, page, info, exit_linear_tag());
	return true;
}

bool trace_snap_write(struct per_cpu *cpu, uint64_t gpa)
{
	struct snap_cpu *sc = snap_cpu_of(cpu);
	uint64_t page = gpa & ~0xfffull;
	struct ept_leaf leaf;
	int rc;

	if (!__atomic_load_n(&snap.g.armed, __ATOMIC_ACQUIRE))
		return false;
	ept_edit_lock();
	if (ept_lookup(snap.ept, page, &leaf) || !trackable(&leaf)) {
		ept_edit_unlock();
		return false;
	}
	if (leaf.rwx & EPT_W) {
		/* Re-armed by another CPU: only this CPU's TLB is stale. */
		hw_invept(1, snap.ept->eptp);
		ept_edit_unlock();
		if (sc)
			sc->st.write_exits++;
		return true;
	}
	/* Only what the fetch path made: a 4 KiB leaf, R+X. */
	if (leaf.level != EPT_LEVEL_PT || leaf.rwx != (EPT_R | EPT_X)) {
		ept_edit_unlock();
		return false;
	}
	rc = ept_map_4k(snap.ept, snap.pool, page, leaf.hpa & ~0xfffull, EPT_R | EPT_W, leaf.memtype);
	if (rc) {
		ept_edit_unlock();
		log_err("snap: cpu %u: cannot re-arm %#llx: %s", cpu->index,
			(unsigned long long)page, ept_strerror(rc));
		return false;
	}
	/* X went away: another CPU's TLB may still allow it. */
	changed(sc);
	ept_edit_unlock();
	if (sc) {
		sc->st.write_exits++;
		sc->last_write_page = page | 1;
		sc->last_write_rip = vmcs_get(VMCS_GUEST_RIP);
	}
	return true;
}

void trace_snap_before_entry(struct per_cpu *cpu)
{
	struct snap_cpu *sc;
	uint64_t gen;

	if (!__atomic_load_n(&snap.g.armed, __ATOMIC_ACQUIRE))
		return;
	sc = snap_cpu_of(cpu);
	gen = __atomic_load_n(&snap.g.generation, __ATOMIC_ACQUIRE);
	if (!sc || sc->gen_seen == gen)
		return;
	/* Rights changed on another CPU since this one last flushed (SDM 3C 29.4.3.1). */
	sc->gen_seen = gen;
	hw_invept(1, snap.ept->eptp);
}

/* --- the counters -------------------------------------------------------------- */

size_t trace_snap_stats_text(const struct per_cpu *cpu, char *buf, size_t len)
{
	const struct snap_cpu *sc = snap_cpu_of(cpu);
	struct trace_snap_stats none;
	const struct trace_snap_stats *s;
	int k;

	if (!len)
		return 0;
	memset(&none, 0, sizeof(none));
	s = sc ? &sc->st : &none;
	k = snprintf(buf, len,
		     "snap: cpu %u: snapshots %llu, new %llu, rearms %llu, fetch exits %llu, write exits %llu, bytes %llu, untracked %llu, lost %llu, self-write steps %llu",
		     cpu ? cpu->index : 0u, (unsigned long long)s->snapshots,
		     (unsigned long long)s->new_contents, (unsigned long long)s->rearms,
		     (unsigned long long)s->fetch_exits, (unsigned long long)s->write_exits,
		     (unsigned long long)s->bytes, (unsigned long long)s->untracked,
		     (unsigned long long)s->lost, (unsigned long long)s->self_steps);
	if (k < 0)
		return 0;
	return (size_t)k < len ? (size_t)k : len - 1;
}

void trace_snap_window_stop(struct per_cpu *cpu)
{
	struct tv_trace_ring *r = trace_cpu_ring(cpu);
	const struct trace_snap_global *g = &snap.g;
	char line[256];
	size_t n;

	if (!g->armed)
		return;
	n = trace_snap_stats_text(cpu, line, sizeof(line));
	if (r)
		(void)trace_append_log(r, hw_rdtsc(), LOG_INFO, line, n);
	log_info("%s", line);
	log_info("snap: contents %llu of %u slots (sent again for want of a slot %llu), pages %llu of %u (no slot %llu), not recorded: %llu on CPUs without a ring, %llu unreadable; self-writing pages re-tracked %llu, left for good %llu; %llu pool pages left",
		 (unsigned long long)g->contents, TRACE_SNAP_HASH_SLOTS,
		 (unsigned long long)g->hash_full, (unsigned long long)g->pages,
		 TRACE_SNAP_PAGE_SLOTS, (unsigned long long)g->page_full,
		 (unsigned long long)g->no_ring, (unsigned long long)g->unreadable,
		 (unsigned long long)g->retracked, (unsigned long long)g->self_full,
		 (unsigned long long)(snap.pool ? page_pool_avail(snap.pool) : 0));
}
