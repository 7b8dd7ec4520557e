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
