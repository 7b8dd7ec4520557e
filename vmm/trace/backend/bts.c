/* SPDX-License-Identifier: MIT */
/*
 * trace_bts.c - Branch Trace Store backend logic (see trace_bts.h,
 * docs/BACKENDS-BTS.md).
 *
 * SDM references (Vol. 3B ch. 18, by title; ch. 17 before 2022):
 *  - CPUID.1:EDX[21] DS, ECX[2] DTES64, ECX[4] DS-CPL: Vol. 2A CPUID;
 *    IA32_MISC_ENABLE[11] "BTS unavailable": Vol. 4 Table 2-2;
 *  - IA32_DEBUGCTL TR/BTS/BTINT/BTS_OFF_OS/BTS_OFF_USR: "IA32_DEBUGCTL
 *    MSR", "Branch Trace Store (BTS)", "CPL-Qualified Branch Trace
 *    Mechanism";
 *  - the DS save area, 64-bit layout for all modes with DTES64, 24-byte
 *    records with "branch predicted" in bit 4 of the third qword, the
 *    buffer fields, circular buffer with BTINT clear: "BTS and DS Save
 *    Area", "64 Bit Format of the DS Save Area", "Setting Up the BTS
 *    Buffer";
 *  - VM exits clear IA32_DEBUGCTL: Vol. 3C 28.5.1.
 */
#include "vmm/trace/backend/bts.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/hw/msr.h"
#include "vmm/trace/backend.h"
#include "vmm/trace/caps.h"
#include "vmm/trace/msr_policy.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/ring.h"
#include "vmm/vmx/vmx_defs.h"

_Static_assert(BTS_DEBUGCTL_MASK == (BTS_DEBUGCTL_TR | BTS_DEBUGCTL_BTS | BTS_DEBUGCTL_BTINT |
				     BTS_DEBUGCTL_BTS_OFF_OS | BTS_DEBUGCTL_BTS_OFF_USR),
	       "DEBUGCTL bits 10:6");
_Static_assert(BTS_DS_ALIGN >= sizeof(struct bts_ds_area) && 4096 % BTS_DS_ALIGN == 0,
	       "an aligned DS area never crosses a page");

const char *bts_strerror(int err)
{
	switch (err) {
	case 0:                   return "ok";
	case BTS_ERR_INVAL:       return "invalid argument or BTS not set up";
	case BTS_ERR_UNSUPPORTED: return "not supported by this CPU";
	case BTS_ERR_ALIGN:       return "misaligned DS area or BTS buffer";
	case BTS_ERR_SIZE:        return "DS area or BTS buffer too small, or bad margin";
	case BTS_ERR_CORRUPT:     return "DS save area changed under the hardware";
	default:                  return "unknown error";
	}
}

/* Set why (when given) and return err. */
__attribute__((format(printf, 4, 5)))
static int refuse(int err, char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why && whylen) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* --- capabilities ---------------------------------------------------------- */

void bts_caps_decode(const struct cpu_caps *cpu, uint64_t misc_enable, uint32_t linear_bits,
		     uint32_t pmu_version, struct bts_caps *out)
{
	memset(out, 0, sizeof(*out));
	/* 48 (4-level) or 57 (LA57); the sentinel must stay non-canonical, so never 64 */
	out->linear_bits = linear_bits >= 32 && linear_bits <= 57 ? linear_bits : 48;
	out->pmu_version = pmu_version;
	if (!cpu) {
		out->reason = "no capability values";
		return;
	}
	out->ds = cpu->ds;
	out->dtes64 = cpu->dtes64;
	out->ds_cpl = cpu->ds_cpl;
	if (cpu->vendor_id != CPU_VENDOR_INTEL) {
		out->reason = "not an Intel CPU";
		return;
	}
	if (!cpu->ds) {
		out->reason = "no debug store (CPUID.1:EDX[21] DS = 0)";
		return;
	}
	/* 32-bit layout otherwise, switching with the guest's mode (AP start-up, firmware). */
	if (!cpu->dtes64) {
		out->reason = "no 64-bit DS area (CPUID.1:ECX[2] DTES64 = 0)";
		return;
	}
	out->bts_unavailable = misc_enable & BTS_MISC_ENABLE_BTS_UNAVAILABLE;
	if (out->bts_unavailable) {
		out->reason = "IA32_MISC_ENABLE[11] says BTS unavailable";
		return;
	}
	out->supported = true;
}

void bts_probe(struct bts_caps *out)
{
	struct hw_cpuid_regs r;
	struct cpu_caps cpu;
	uint64_t misc = 0;
	uint32_t bits = 0, version = 0;

	caps_read(&cpu);
	/* IA32_MISC_ENABLE exists on every Intel CPU that has DS (Pentium 4 on). */
	if (cpu.vendor_id == CPU_VENDOR_INTEL && cpu.ds)
		misc = hw_rdmsr(BTS_MSR_MISC_ENABLE);
	if (cpu.max_ext_leaf >= 0x80000008u) {
		hw_cpuid(0x80000008u, 0, &r);
		bits = (r.eax >> 8) & 0xff;
	}
	if (cpu.max_leaf >= 0xa) {
		hw_cpuid(0xa, 0, &r);
		version = r.eax & 0xff;
	}
	bts_caps_decode(&cpu, misc, bits, version, out);
}

void bts_vmx_controls(uint32_t *entry, uint32_t *exit)
{
	if (entry)
		*entry = ENTRY_LOAD_DEBUG_CONTROLS;
	if (exit)
		*exit = EXIT_SAVE_DEBUG_CONTROLS;
}

/* --- setup ------------------------------------------------------------------- */

int bts_debugctl_bits(const struct bts_caps *caps, const struct trace_filter *f,
		      enum bts_mode mode, uint64_t *out, char *why, size_t whylen)
{
	uint32_t cpl = f ? f->cpl : TRACE_CPL_ALL;
	bool kernel = cpl & TRACE_CPL_KERNEL, user = cpl & TRACE_CPL_USER;
	uint64_t bits = BTS_DEBUGCTL_TR | BTS_DEBUGCTL_BTS;

	if (why && whylen)
		why[0] = '\0';
	if (!caps || !out)
		return refuse(BTS_ERR_INVAL, why, whylen, "bts: NULL argument");
	if (mode != BTS_MODE_CIRCULAR && mode != BTS_MODE_INT)
		return refuse(BTS_ERR_INVAL, why, whylen, "bts: unknown buffer mode %d", (int)mode);
	if (cpl & ~0xfu)
		return refuse(BTS_ERR_INVAL, why, whylen, "bts: cpl filter %#x has unknown bits", cpl);
	if ((cpl & 0x6u) && !user)
		return refuse(BTS_ERR_UNSUPPORTED, why, whylen,
			      "bts: cpl filter %#x: BTS_OFF_USR skips CPL 1-3 together", cpl);
	if (!kernel && !user)
		return refuse(BTS_ERR_INVAL, why, whylen, "bts: cpl filter selects no privilege level");
	if ((!kernel || !user) && !caps->ds_cpl)
		return refuse(BTS_ERR_UNSUPPORTED, why, whylen,
			      "bts: a CPL filter needs CPL-qualified BTS (CPUID.1:ECX[4] DS-CPL)");
	if (mode == BTS_MODE_INT)
		bits |= BTS_DEBUGCTL_BTINT;
	if (!kernel)
		bits |= BTS_DEBUGCTL_BTS_OFF_OS;
	if (!user)
		bits |= BTS_DEBUGCTL_BTS_OFF_USR;
	*out = bits;
	return 0;
}

/* a, sign-extended from bit bits-1, is a itself. */
static bool canonical(uint64_t a, uint32_t bits)
{
	uint64_t top;

	if (bits >= 64)
		return true;
	top = a >> (bits - 1);
	return top == 0 || top == (UINT64_MAX >> (bits - 1));
}

/* [lo, lo + len) fits below 2^64 and every byte of it is canonical. */
static bool range_ok(uint64_t lo, uint64_t len, uint32_t bits)
{
	if (len == 0 || lo + len - 1 < lo)
		return false;
	/* the two canonical halves are contiguous only across the 2^64 wrap */
	return canonical(lo, bits) && canonical(lo + len - 1, bits) &&
	       (lo >> 63) == ((lo + len - 1) >> 63);
}

static bool overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

bool bts_slot_valid(uint64_t from, uint64_t to, uint32_t linear_bits)
{
	if (!from && !to)
		return false;
	return canonical(from, linear_bits) && canonical(to, linear_bits);
}

/* Checks of bts_area_init that need no filter; *nrec on success. */
static int check_regions(const struct bts_caps *caps, const struct bts_mem *ds,
			 const struct bts_mem *buf, uint32_t *nrec, char *why, size_t whylen)
{
	uint64_t slots, len;

	if (!ds->va || !buf->va)
		return refuse(BTS_ERR_INVAL, why, whylen, "bts: NULL region");
	if (ds->size < sizeof(struct bts_ds_area))
		return refuse(BTS_ERR_SIZE, why, whylen, "bts: DS area of %llu bytes, need %zu",
			      (unsigned long long)ds->size, sizeof(struct bts_ds_area));
	if ((((uintptr_t)ds->va) | ds->lin) & (BTS_DS_ALIGN - 1))
		return refuse(BTS_ERR_ALIGN, why, whylen, "bts: DS area not %u-byte aligned",
			      BTS_DS_ALIGN);
	if ((((uintptr_t)buf->va) | buf->lin) & (BTS_BUF_ALIGN - 1))
		return refuse(BTS_ERR_ALIGN, why, whylen, "bts: BTS buffer not %u-byte aligned",
			      BTS_BUF_ALIGN);
	slots = buf->size / BTS_RECORD_SIZE;
	if (slots < BTS_MIN_RECORDS)
		return refuse(BTS_ERR_SIZE, why, whylen, "bts: BTS buffer holds %llu records, need %u",
			      (unsigned long long)slots, BTS_MIN_RECORDS);
	if (slots > UINT32_MAX)
		slots = UINT32_MAX;
	len = slots * BTS_RECORD_SIZE;
	/* + one record: the circular threshold lies one record past the end */
	if (buf->lin + len + BTS_RECORD_SIZE < buf->lin ||
	    (uintptr_t)buf->va + len < (uintptr_t)buf->va ||
	    (uintptr_t)ds->va + sizeof(struct bts_ds_area) < (uintptr_t)ds->va)
		return refuse(BTS_ERR_SIZE, why, whylen, "bts: region runs past the address space");
	if (!range_ok(ds->lin, sizeof(struct bts_ds_area), caps->linear_bits) ||
	    !range_ok(buf->lin, len, caps->linear_bits))
		return refuse(BTS_ERR_INVAL, why, whylen,
			      "bts: region not canonical for %u-bit linear addresses",
			      caps->linear_bits);
	if (overlap(ds->lin, sizeof(struct bts_ds_area), buf->lin, len) ||
	    overlap((uintptr_t)ds->va, sizeof(struct bts_ds_area), (uintptr_t)buf->va, len))
		return refuse(BTS_ERR_INVAL, why, whylen, "bts: DS area and BTS buffer overlap");
	*nrec = (uint32_t)slots;
	return 0;
}

static struct bts_record *slot_ptr(const struct bts_state *s, uint32_t i)
{
	return (struct bts_record *)(s->buf + (uint64_t)i * BTS_RECORD_SIZE);
}

static void put_sentinel(const struct bts_state *s)
{
	struct bts_record *last = slot_ptr(s, s->nrec - 1);

	last->from = BTS_SENTINEL_FROM;
	last->to = BTS_SENTINEL_TO;
	last->flags = BTS_SENTINEL_FLAGS;
}

static bool sentinel_intact(const struct bts_state *s)
{
	const struct bts_record *last = slot_ptr(s, s->nrec - 1);

	return last->from == BTS_SENTINEL_FROM && last->to == BTS_SENTINEL_TO &&
	       last->flags == BTS_SENTINEL_FLAGS;
}

/* The whole DS buffer management area as bts_area_init lays it out. */
static void write_ds(const struct bts_state *s)
{
	struct bts_ds_area *ds = s->ds;

	memset(ds, 0, sizeof(*ds));
	ds->bts_buffer_base = s->base;
	ds->bts_index = s->base;
	ds->bts_absolute_maximum = s->abs_max;
	ds->bts_interrupt_threshold = s->threshold;
	put_sentinel(s);
}

int bts_area_init(struct bts_state *s, const struct bts_caps *caps,
		  const struct trace_filter *f, const struct bts_mem *ds,
		  const struct bts_mem *buf, enum bts_mode mode, uint32_t margin,
		  struct bts_setup *out, char *why, size_t whylen)
{
	uint64_t debugctl;
	uint32_t nrec = 0;
	int rc;

	if (why && whylen)
		why[0] = '\0';
	if (!s || !caps || !ds || !buf)
		return refuse(BTS_ERR_INVAL, why, whylen, "bts: NULL argument");
	if (!caps->supported)
		return refuse(BTS_ERR_UNSUPPORTED, why, whylen, "bts: %s",
			      caps->reason ? caps->reason : "not supported");
	rc = bts_debugctl_bits(caps, f, mode, &debugctl, why, whylen);
	if (rc)
		return rc;
	rc = check_regions(caps, ds, buf, &nrec, why, whylen);
	if (rc)
		return rc;
	if (mode == BTS_MODE_INT && (margin == 0 || margin >= nrec))
		return refuse(BTS_ERR_SIZE, why, whylen,
			      "bts: margin %u must be 1..%u for %u records", margin, nrec - 1, nrec);

	memset(s, 0, sizeof(*s));
	s->mode = mode;
	s->linear_bits = caps->linear_bits;
	s->pmu_version = caps->pmu_version;
	s->ds = ds->va;
	s->buf = buf->va;
	s->ds_lin = ds->lin;
	s->nrec = nrec;
	s->base = buf->lin;
	s->abs_max = buf->lin + (uint64_t)nrec * BTS_RECORD_SIZE;
	s->threshold = mode == BTS_MODE_INT
		? s->base + (uint64_t)(nrec - margin) * BTS_RECORD_SIZE
		: s->abs_max + BTS_RECORD_SIZE;
	s->debugctl = debugctl;
	write_ds(s);
	s->ready = true;
	if (out) {
		out->ds_area = s->ds_lin;
		out->debugctl = s->debugctl;
		out->records = s->nrec;
		out->threshold = s->threshold;
	}
	return 0;
}

uint64_t bts_guest_debugctl(const struct bts_state *s, uint64_t guest_debugctl, bool on)
{
	guest_debugctl &= ~BTS_DEBUGCTL_MASK;
	if (on && s && s->ready)
		guest_debugctl |= s->debugctl;
	return guest_debugctl;
}

/* --- draining ------------------------------------------------------------------ */

/* The hardware writes the DS area while the guest runs: read it once, fresh. */
static uint64_t ds_load(const uint64_t *p)
{
	return *(const volatile uint64_t *)p;
}

static void note(struct bts_state *s, struct tv_trace_ring *ring, uint64_t tsc, const char *text)
{
	if (trace_append_log(ring, tsc, LOG_WARN, text, strlen(text)) == 0)
		s->stats.notes++;
	else
		s->stats.notes_dropped++;
}

/* What a drain needs besides the state. */
struct drain_ctx {
	struct tv_trace_ring *ring;
	const struct trace_filter *f;
	bool cr3_ok;
	int written;
};

static void emit_slot(struct bts_state *s, struct drain_ctx *d, uint32_t i)
{
	const struct bts_record *rec = slot_ptr(s, i);
	uint64_t from = rec->from, to = rec->to, flags = rec->flags;
	uint32_t brf = 0;

	s->stats.slots++;
	if (!bts_slot_valid(from, to, s->linear_bits)) {
		s->stats.bad++;
		return;
	}
	if (!d->cr3_ok) {
		s->stats.filtered_cr3++;
		return;
	}
	if (d->f && !trace_filter_ip(d->f, from, to)) {
		s->stats.filtered++;
		return;
	}
	if (s->report_mispred && !(flags & BTS_RECORD_PREDICTED))
		brf |= TV_BRF_MISPRED;
	if (trace_append_branch(d->ring, from, to, TV_BR_UNKNOWN, brf, 0) == 0) {
		s->stats.recorded++;
		d->written++;
	} else {
		s->stats.dropped++;
	}
}

static void emit_range(struct bts_state *s, struct drain_ctx *d, uint32_t lo, uint32_t hi)
{
	for (uint32_t i = lo; i < hi; i++)
		emit_slot(s, d, i);
}

/* The DS fields still hold what bts_area_init wrote, and the index is a record boundary. */
static bool ds_sane(const struct bts_state *s, uint64_t index)
{
	const struct bts_ds_area *ds = s->ds;

	if (ds_load(&ds->bts_buffer_base) != s->base ||
	    ds_load(&ds->bts_absolute_maximum) != s->abs_max ||
	    ds_load(&ds->bts_interrupt_threshold) != s->threshold)
		return false;
	return index >= s->base && index <= s->abs_max &&
	       (index - s->base) % BTS_RECORD_SIZE == 0;
}

/* The hardware went round: the gap first, then the oldest left, then the newest. */
static void drain_wrapped(struct bts_state *s, struct drain_ctx *d, uint32_t i, uint64_t tsc)
{
	char text[96];

	s->stats.wraps++;
	s->stats.lost_min += i;
	if (i)
		snprintf(text, sizeof(text),
			 "bts: buffer went round: at least %u older records written over", i);
	else
		snprintf(text, sizeof(text),
			 "bts: buffer filled or went round: older records may be written over");
	note(s, d->ring, tsc, text);
	emit_range(s, d, i, s->nrec);
	emit_range(s, d, 0, i);
}

int bts_drain(struct bts_state *s, struct tv_trace_ring *ring, const struct trace_filter *f,
	      uint64_t guest_cr3, uint64_t tsc)
{
	struct drain_ctx d = { .ring = ring, .f = f, .cr3_ok = true, .written = 0 };
	uint64_t index;
	uint32_t i;

	if (!s || !ring || !s->ready)
		return BTS_ERR_INVAL;
	s->stats.drains++;
	index = ds_load(&s->ds->bts_index);
	if (!ds_sane(s, index)) {
		s->stats.corrupt++;
		write_ds(s);
		note(s, ring, tsc, "bts: DS save area changed under the hardware: buffer dropped, "
			"records lost (count unknown)");
		return BTS_ERR_CORRUPT;
	}
	if (f && f->cr3 && (guest_cr3 & ~0xfffull) != (f->cr3 & ~0xfffull))
		d.cr3_ok = false;
	i = (uint32_t)((index - s->base) / BTS_RECORD_SIZE);
	/* Circular: at the maximum the next store goes to the base; same position. */
	if (s->mode == BTS_MODE_CIRCULAR && i == s->nrec)
		i = 0;

	if (i == s->nrec) {
		/* BTINT: full; nothing says whether branches came after the last slot. */
		emit_range(s, &d, 0, s->nrec);
		s->stats.full++;
		note(s, ring, tsc, "bts: buffer full at the absolute maximum: later branches "
			"may be lost (count unknown)");
	} else if (!sentinel_intact(s)) {
		drain_wrapped(s, &d, i, tsc);
	} else {
		emit_range(s, &d, 0, i);
	}

	/* Rewind: the whole buffer is free again at the next VM entry. */
	s->ds->bts_index = s->base;
	put_sentinel(s);
	return d.written;
}

int bts_on_pmi(struct bts_state *s, struct tv_trace_ring *ring, const struct trace_filter *f,
	       uint64_t guest_cr3, uint64_t tsc)
{
	uint64_t status;
	bool ours;
	int rc;

	if (!s || !ring || !s->ready)
		return BTS_ERR_INVAL;
	s->stats.pmis++;
	ours = s->mode == BTS_MODE_INT && ds_load(&s->ds->bts_index) >= s->threshold;
	if (s->pmu_version >= 2) {
		status = hw_rdmsr(BTS_MSR_PERF_GLOBAL_STATUS);
		if (status & BTS_GLOBAL_STATUS_OVF_BUFFER)
			hw_wrmsr(BTS_MSR_PERF_GLOBAL_OVF_CTRL, BTS_GLOBAL_STATUS_OVF_BUFFER);
	}
	if (!ours)
		return BTS_PMI_NOT_OURS;
	s->stats.pmis_ours++;
	rc = bts_drain(s, ring, f, guest_cr3, tsc);
	return rc < 0 ? rc : BTS_PMI_OURS;
}

/* --- the unit ---------------------------------------------------------------- */

struct bts_unit *bts_unit(struct trace_bcpu *b)
{
	return b->priv;
}

/* The BTS buffer of setup s (bts_buffer_kb; 0: the default, 64 KiB). */
static uint64_t bts_buf_bytes(const struct trace_setup *s)
{
	return s && s->bts_buf_bytes ? s->bts_buf_bytes : TRACE_BTS_BUF_BYTES_DEFAULT;
}

/* Per CPU: the DS save area page, then the buffer (guest RW at its address). */
static void bts_mem(const struct trace_setup *s, struct trace_needs *n)
{
	uint64_t buf = bts_buf_bytes(s);

	if ((buf & 4095) || buf > TRACE_BTS_BUF_BYTES_MAX)
		return;   /* 0 bytes: trace_engine_needs reports the bad size */
	n->guest_bytes = 4096 + buf;
	n->out_bytes = buf;
	n->out_regions = 1;
	n->out_region_bytes = buf;
	n->out_key = "bts_buffer_kb";
}

/*
 * BTS on this CPU, probed once (CPUID, IA32_MISC_ENABLE), its memory
 * (trace_cpu_bts_area) and the load/save debug controls.
 */
static bool bts_usable(struct trace_bcpu *b)
{
	struct bts_unit *u = bts_unit(b);
	bool dbg_ctls = (b->entry_ctls & ENTRY_LOAD_DEBUG_CONTROLS) &&
			(b->exit_ctls & EXIT_SAVE_DEBUG_CONTROLS);

	if (!u->probed) {
		u->probed = true;
		bts_probe(&u->caps);
		if (!u->caps.supported)
			log_err("trace: cpu %u: no usable BTS: %s", b->index,
				u->caps.reason ? u->caps.reason : "?");
		else
			log_info("trace: cpu %u: BTS, 64-bit DS area%s, %u-bit linear addresses, DS at %#llx, %llu-byte buffer (bts_buffer_kb)",
				 b->index, u->caps.ds_cpl ? ", DS-CPL" : "",
				 u->caps.linear_bits, (unsigned long long)b->guest_lin,
				 (unsigned long long)bts_buf_bytes(b->setup));
		if (!b->guest_mem)
			log_err("trace: cpu %u: no BTS buffer reserved", b->index);
		if (!dbg_ctls)
			log_err("trace: cpu %u: the VMCS does not load and save the guest's DEBUGCTL (entry %#x, exit %#x)",
				b->index, b->entry_ctls, b->exit_ctls);
	}
	return u->caps.supported && b->guest_mem && dbg_ctls;
}

/*
 * Lay out the DS area and the buffer for a window and point IA32_DS_AREA
 * at it (VMX root: the MSR is not switched by entries or exits, and the
 * guest's own DS_AREA lives in vmm/trace/msr_policy.c's shadow).  Without
 * pmi, circular mode: BTINT 0, the threshold past the end, so no DS
 * interrupt ever reaches the guest's LVT; a wrap is found and counted by
 * the drain.  With pmi, BTINT 1 and the threshold at pmi_every: the DS
 * interrupt is an NMI that exits (the engine's NMI exit, bts_pmi_check).
 * An empty buffer: nothing older than the window is recorded.
 * 0, or TRACE_ENOSYS with the reason logged.
 */
static int bts_open(struct trace_bcpu *b, struct trace_view *v)
{
	struct bts_unit *u = bts_unit(b);
	struct bts_mem ds, buf;
	struct bts_setup out;
	enum bts_mode mode = BTS_MODE_CIRCULAR;
	uint32_t margin = 0;
	char why[120];
	int rc;

	(void)v;
	ds.va = b->guest_mem;
	ds.lin = b->guest_lin;
	ds.size = 4096;
	buf.va = b->guest_mem + 4096;
	buf.lin = b->guest_lin + 4096;
	buf.size = bts_buf_bytes(b->setup);
	if (b->setup->pmi) {
		/*
		 * BTINT: the DS interrupt when the index reaches the threshold,
		 * pmi_every records in (default: 7/8 of the buffer; the rest is
		 * headroom for the PMI to arrive).
		 */
		uint32_t slots = (uint32_t)(buf.size / BTS_RECORD_SIZE);
		uint32_t every = b->setup->pmi_every ? b->setup->pmi_every : slots - slots / 8;

		if (every >= slots) {
			log_err("trace: cpu %u: bts window not opened: pmi_every = %u must be below the buffer's %u records",
				b->index, every, slots);
			return TRACE_ENOSYS;
		}
		mode = BTS_MODE_INT;
		margin = slots - every;
	}
	rc = bts_area_init(&u->bts, &u->caps, b->filter, &ds, &buf, mode, margin, &out, why,
			   sizeof(why));
	if (rc) {
		log_err("trace: cpu %u: bts window not opened: %s%s%s", b->index,
			bts_strerror(rc), why[0] ? ": " : "", why);
		return TRACE_ENOSYS;
	}
	hw_wrmsr(BTS_MSR_DS_AREA, out.ds_area);
	u->map_known = false;
	u->unmapped = 0;
	return 0;
}

/*
 * Does the guest's current paging map every page of the DS area and
 * buffer at its own (identity) address, writable?  Walked again only
 * when CR3 or CR0 changed since the last walk.  Page-table edits without
 * a CR3 load are not seen (docs/BACKENDS-BTS.md).
 */
static bool bts_mapped(struct trace_bcpu *b)
{
	struct bts_unit *u = bts_unit(b);
	uint64_t cr3 = trace_guest_cr3(), cr0 = trace_guest_cr0();
	struct gmem_ctx g;
	struct gmem_walk w;

	if (u->map_known && u->map_cr3 == cr3 && u->map_cr0 == cr0)
		return u->map_ok;
	trace_guest_mem(&g);
	u->map_ok = true;
	for (uint64_t o = 0; o < 4096 + bts_buf_bytes(b->setup); o += 4096) {
		uint64_t lin = b->guest_lin + o;

		if (gmem_walk(&g, lin, &w) || w.gpa != lin ||
		    (w.leaf && !(w.leaf & 2u /* R/W */))) {
			u->map_ok = false;
			break;
		}
	}
	u->map_known = true;
	u->map_cr3 = cr3;
	u->map_cr0 = cr0;
	return u->map_ok;
}

/* Before every entry: TR|BTS while a window is open (and mapped), else off. */
static uint32_t bts_prepare(struct trace_bcpu *b, struct trace_view *v)
{
	struct bts_unit *u = bts_unit(b);
	uint64_t dbg = trace_view_get(v, TRACE_VIEW_DEBUGCTL);
	bool on = b->active && bts_mapped(b);
	uint64_t want = bts_guest_debugctl(&u->bts, dbg & ~BTS_DEBUGCTL_MASK, on);
	static const char note[] = "bts: buffer not mapped writable at its address in the guest's paging: BTS off until it is (branches lost)";

	if (b->active && !on) {
		/* One note per stretch of unmapped entries. */
		if (!u->unmapped++ || (dbg & BTS_DEBUGCTL_BTS))
			trace_append_log(b->ring, hw_rdtsc(), LOG_WARN, note, sizeof(note) - 1);
	}
	if (want != dbg)
		trace_view_set(v, TRACE_VIEW_DEBUGCTL, want);
	return 0;
}

/*
 * Move what the hardware stored since the last drain into the ring (with
 * the guest stopped: DEBUGCTL is 0 in VMX root).  Returns true when the
 * ring refused records (the window closes, TV_TRIG_FULL).
 */
static bool bts_drain_now(struct trace_bcpu *b)
{
	struct bts_unit *u = bts_unit(b);
	uint64_t dropped = u->bts.stats.dropped;
	int n = bts_drain(&u->bts, b->ring, b->filter, trace_guest_cr3(), hw_rdtsc());

	if (n > 0)
		b->window_branches += (uint64_t)n;
	return u->bts.stats.dropped != dropped;
}

static void bts_close(struct trace_bcpu *b, struct trace_view *v)
{
	/* The branches since the last exit, before the STOP record. */
	bts_drain_now(b);
	bts_prepare(b, v);   /* off now, whoever stopped the window */
}

/*
 * The same read points as lbr; with pmi also the DS interrupt (the NMI
 * exit).  An index at the threshold here means that interrupt is on its
 * way or was taken in VMX root.
 */
static uint32_t bts_exit_drain(struct trace_bcpu *b, struct trace_view *v)
{
	struct bts_unit *u = bts_unit(b);
	uint32_t r = 0;

	(void)v;
	if (u->bts.ready && u->bts.mode == BTS_MODE_INT &&
	    __atomic_load_n(&u->bts.ds->bts_index, __ATOMIC_RELAXED) >= u->bts.threshold)
		r |= TRACE_DO_PMI_SEEN;
	return r | (bts_drain_now(b) ? TRACE_DO_STOP_FULL : TRACE_DO_LIMIT);
}

static uint32_t bts_pmi_check(struct trace_bcpu *b, struct trace_view *v, uint64_t *guest)
{
	struct bts_unit *u = bts_unit(b);
	uint64_t rec = u->bts.stats.recorded, dropped = u->bts.stats.dropped;
	int rc = bts_on_pmi(&u->bts, b->ring, b->filter, trace_guest_cr3(), hw_rdtsc());
	uint32_t r = 0;

	(void)v;
	/* A drain error (corrupt DS fields) was still our PMI: counted, noted. */
	if (rc == BTS_PMI_OURS || (rc < 0 && rc != BTS_ERR_INVAL))
		r |= TRACE_DO_PMI_OURS;
	b->window_branches += u->bts.stats.recorded - rec;
	if (u->bts.stats.dropped != dropped)
		r |= TRACE_DO_STOP_FULL;
	/* bts_on_pmi cleared OvfBuffer; what is left is the guest's */
	if (u->caps.pmu_version >= 2)
		*guest = hw_rdmsr(MSR_IA32_PERF_GLOBAL_STATUS) & TRACE_PMI_GUEST_STATUS;
	return r;
}

static void bts_log_stop(struct trace_bcpu *b, const char *trig)
{
	struct bts_unit *u = bts_unit(b);

	log_info("trace: cpu %u: window %llu stopped (%s): %llu branches, %llu filtered, %llu dropped, %llu drains, %llu wraps (at least %llu branches lost), %llu bad, %llu corrupt, %llu entries unmapped; ring lost %llu records",
		 b->index, (unsigned long long)b->windows, trig,
		 (unsigned long long)b->window_branches,
		 (unsigned long long)(u->bts.stats.filtered + u->bts.stats.filtered_cr3),
		 (unsigned long long)u->bts.stats.dropped,
		 (unsigned long long)u->bts.stats.drains,
		 (unsigned long long)u->bts.stats.wraps,
		 (unsigned long long)u->bts.stats.lost_min,
		 (unsigned long long)u->bts.stats.bad,
		 (unsigned long long)u->bts.stats.corrupt,
		 (unsigned long long)u->unmapped,
		 (unsigned long long)b->ring->lost_records);
}

/* The machine can (trace_caps, decoded at boot from the boot CPU). */
static bool bts_caps_ok(const struct trace_caps *tc)
{
	return tc->bts;
}

const struct trace_backend trace_backend_BTS = {
	.name = "bts",
	.source = TV_SOURCE_BTS,
	.debugctl_owned = BTS_DEBUGCTL_MASK,
	.state_bytes = sizeof(struct bts_unit),
	.msr_owned = TRACE_OWN_BTS,
	.mem = bts_mem,
	.caps_ok = bts_caps_ok,
	.usable = bts_usable,
	.open = bts_open,
	.close = bts_close,
	.drain = bts_exit_drain,
	.prepare = bts_prepare,
	.pmi_check = bts_pmi_check,
	.log_stop = bts_log_stop,
};
