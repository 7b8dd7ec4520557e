/* SPDX-License-Identifier: MIT */
/*
 * trace_pt.c - Intel PT backend logic (see trace_pt.h, docs/BACKENDS-PT.md).
 *
 * SDM references (Vol. 3C ch. 33 unless noted):
 *  - CPUID leaf 14H: 33.3.1 and Vol. 2A CPUID;
 *  - IA32_RTIT_CTL bits: 33.2.8.2; IA32_RTIT_STATUS: 33.2.8.4;
 *    ADDRn_A/B: 33.2.8.5 (sign-extended or #GP); CR3_MATCH: 33.2.8.6
 *    (bits 4:0 reserved); OUTPUT_BASE / OUTPUT_MASK_PTRS: 33.2.8.7-8
 *    (writable only with TraceEn 0, stable only with TraceEn 0);
 *  - ToPA: 33.2.7.2 (entry layout, END/INT/STOP, single-entry tables,
 *    "ToPA Errors", "ToPA STOP", "ToPA PMI");
 *  - VMX: IA32_VMX_MISC[14] (3D A.6), entry control 18 and exit control
 *    25 (3C 25.8.1, 25.7.1), GUEST_IA32_RTIT_CTL 0x2814 (Appendix B).
 */
#include "vmm/trace/backend/pt.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/trace/ring.h"

_Static_assert(PT_MSR_ADDR_A(3) == 0x586u && PT_MSR_ADDR_B(3) == 0x587u, "ADDRn MSRs");
_Static_assert(PT_CTL_ADDR_CFG_SHIFT(3) == 44, "ADDR3_CFG at 47:44");
_Static_assert(PT_TOPA_MAX_SIZE == (PT_TOPA_MIN_SIZE << 15), "ToPA size codes 0..15");

const char *pt_strerror(int err)
{
	switch (err) {
	case 0:                  return "ok";
	case PT_ERR_INVAL:       return "invalid argument";
	case PT_ERR_UNSUPPORTED: return "not supported by this CPU";
	case PT_ERR_ALIGN:       return "misaligned ToPA table or region, or bad region size";
	case PT_ERR_PHYS:        return "physical address beyond MAXPHYADDR";
	case PT_ERR_BUSY:        return "IA32_RTIT_CTL.TraceEn is set";
	case PT_ERR_HW:          return "impossible output pointer";
	default:                 return "unknown error";
	}
}

/* --- capabilities ---------------------------------------------------------- */

#define CPUID_VENDOR_EBX 0x756e6547u   /* "Genu" */
#define CPUID_VENDOR_EDX 0x49656e69u   /* "ineI" */
#define CPUID_VENDOR_ECX 0x6c65746eu   /* "ntel" */
#define CPUID_1_ECX_VMX  (1u << 5)
#define CPUID_7_EBX_PT   (1u << 25)

void pt_caps_decode(const struct pt_caps_raw *raw, struct pt_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->maxphyaddr = 36;   /* SDM 3A 4.1.4: without leaf 80000008H */
	c->linear_bits = 48;
	if (!raw) {
		c->reason = "no capability values";
		return;
	}
	c->intel = raw->vendor_ebx == CPUID_VENDOR_EBX && raw->vendor_edx == CPUID_VENDOR_EDX &&
		   raw->vendor_ecx == CPUID_VENDOR_ECX;
	if (raw->ext_max >= 0x80000008u && (raw->leaf80000008_eax & 0xffu)) {
		c->maxphyaddr = raw->leaf80000008_eax & 0xffu;
		if ((raw->leaf80000008_eax >> 8) & 0xffu)
			c->linear_bits = (raw->leaf80000008_eax >> 8) & 0xffu;
	}
	c->vmx = c->intel && raw->leaf0_eax >= 1 && (raw->leaf1_ecx & CPUID_1_ECX_VMX);
	c->pt = c->intel && raw->leaf0_eax >= 0x14 && (raw->leaf7_ebx & CPUID_7_EBX_PT);
	if (c->pt) {
		const uint32_t *l0 = raw->leaf14[0], *l1 = raw->leaf14[1];

		c->max_subleaf = l0[0];
		c->cr3_filter = l0[1] & (1u << 0);
		c->psb_cyc = l0[1] & (1u << 1);
		c->ip_filter = l0[1] & (1u << 2);
		c->mtc = l0[1] & (1u << 3);
		c->ptwrite = l0[1] & (1u << 4);
		c->power_event = l0[1] & (1u << 5);
		c->topa = l0[2] & (1u << 0);
		c->topa_multi = l0[2] & (1u << 1);
		c->single_range = l0[2] & (1u << 2);
		c->transport = l0[2] & (1u << 3);
		c->lip = l0[2] & (1u << 31);
		if (c->max_subleaf >= 1) {
			c->addr_ranges = l1[0] & 0x7u;
			c->mtc_periods = (uint16_t)(l1[0] >> 16);
			c->cyc_thresholds = (uint16_t)(l1[1] & 0xffffu);
			c->psb_freqs = (uint16_t)(l1[1] >> 16);
		}
	}
	if (c->vmx) {
		c->vmx_pt = raw->vmx_misc & PT_VMX_MISC_PT;
		/* allowed-1 settings: bits 63:32 of the capability MSR (3D A.4, A.5) */
		c->entry_load_rtit = (raw->vmx_entry_ctls >> 32) & PT_VMX_ENTRY_LOAD_RTIT_CTL;
		c->exit_clear_rtit = (raw->vmx_exit_ctls >> 32) & PT_VMX_EXIT_CLEAR_RTIT_CTL;
	}

	if (!c->intel)
		c->reason = "not an Intel CPU";
	else if (!c->pt)
		c->reason = "no Intel PT (CPUID.(7,0):EBX[25] with leaf 14H)";
	else if (!c->topa)
		c->reason = "no ToPA output (CPUID.(14H,0):ECX[0])";
	else if (!c->vmx)
		c->reason = "no VMX (CPUID.1:ECX[5])";
	else if (!c->vmx_pt)
		c->reason = "PT not usable in VMX operation (IA32_VMX_MISC[14])";
	else if (!c->entry_load_rtit)
		c->reason = "no VM-entry control 'load IA32_RTIT_CTL' (bit 18)";
	else if (!c->exit_clear_rtit)
		c->reason = "no VM-exit control 'clear IA32_RTIT_CTL' (bit 25)";
	c->usable = c->reason == NULL;
}

void pt_caps_read(struct pt_caps *out, struct pt_caps_raw *raw_out)
{
	struct pt_caps_raw raw;
	struct hw_cpuid_regs q;

	memset(&raw, 0, sizeof(raw));
	hw_cpuid(0, 0, &q);
	raw.leaf0_eax = q.eax;
	raw.vendor_ebx = q.ebx;
	raw.vendor_ecx = q.ecx;
	raw.vendor_edx = q.edx;
	if (raw.leaf0_eax >= 1) {
		hw_cpuid(1, 0, &q);
		raw.leaf1_ecx = q.ecx;
	}
	if (raw.leaf0_eax >= 7) {
		hw_cpuid(7, 0, &q);
		raw.leaf7_ebx = q.ebx;
	}
	if (raw.leaf0_eax >= 0x14 && (raw.leaf7_ebx & CPUID_7_EBX_PT)) {
		hw_cpuid(0x14, 0, &q);
		raw.leaf14[0][0] = q.eax;
		raw.leaf14[0][1] = q.ebx;
		raw.leaf14[0][2] = q.ecx;
		raw.leaf14[0][3] = q.edx;
		if (q.eax >= 1) {
			hw_cpuid(0x14, 1, &q);
			raw.leaf14[1][0] = q.eax;
			raw.leaf14[1][1] = q.ebx;
			raw.leaf14[1][2] = q.ecx;
			raw.leaf14[1][3] = q.edx;
		}
	}
	hw_cpuid(0x80000000u, 0, &q);
	raw.ext_max = q.eax;
	if (raw.ext_max >= 0x80000008u && raw.ext_max <= 0x8000ffffu) {
		hw_cpuid(0x80000008u, 0, &q);
		raw.leaf80000008_eax = q.eax;
	}
	/* VMX capability MSRs exist only with CPUID.1:ECX.VMX (else #GP) */
	if (raw.vendor_ebx == CPUID_VENDOR_EBX && (raw.leaf1_ecx & CPUID_1_ECX_VMX)) {
		raw.vmx_basic = hw_rdmsr(0x480);                 /* IA32_VMX_BASIC */
		raw.vmx_misc = hw_rdmsr(0x485);                  /* IA32_VMX_MISC */
		if (raw.vmx_basic & (1ull << 55)) {              /* TRUE controls exist */
			raw.vmx_entry_ctls = hw_rdmsr(0x490);    /* IA32_VMX_TRUE_ENTRY_CTLS */
			raw.vmx_exit_ctls = hw_rdmsr(0x48f);     /* IA32_VMX_TRUE_EXIT_CTLS */
		} else {
			raw.vmx_entry_ctls = hw_rdmsr(0x484);    /* IA32_VMX_ENTRY_CTLS */
			raw.vmx_exit_ctls = hw_rdmsr(0x483);     /* IA32_VMX_EXIT_CTLS */
		}
	}
	if (raw_out)
		*raw_out = raw;
	pt_caps_decode(&raw, out);
}

/* --- IA32_RTIT_CTL ------------------------------------------------------------ */

void pt_options_default(struct pt_options *o)
{
	memset(o, 0, sizeof(*o));
	o->branch_en = true;
	o->tsc_en = true;
	trace_filter_all(&o->filter);
}

__attribute__((format(printf, 4, 5)))
static int refuse(int err, char *why, size_t whylen, const char *fmt, ...)
{
	if (why && whylen) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* Bits 63:(bits-1) all equal: the address is canonical (SDM 3A 3.3.7.1). */
static bool canonical(uint64_t a, uint32_t bits)
{
	if (bits < 32 || bits > 64)
		bits = 48;
	if (bits == 64)
		return true;
	int64_t top = (int64_t)a >> (bits - 1);

	return top == 0 || top == -1;
}

static int rtit_ctl(const struct pt_caps *c, const struct pt_options *o, struct pt_rtit *r,
		    char *why, size_t whylen)
{
	const struct trace_filter *f = &o->filter;
	uint64_t ctl = PT_CTL_TOPA;

	if (!c->pt || !c->topa)
		return refuse(PT_ERR_UNSUPPORTED, why, whylen,
			      "pt: needs Intel PT with ToPA output (CPUID.(14H,0):ECX[0])");

	/* packet enables */
	if (o->branch_en)
		ctl |= PT_CTL_BRANCHEN;
	else if (!c->mtc)   /* BranchEn=0 with TraceEn=1 #GPs without COFI suppression */
		return refuse(PT_ERR_UNSUPPORTED, why, whylen,
			      "pt: branch_en=0 needs COFI suppression (CPUID.(14H,0):EBX[3])");
	if (o->tsc_en)
		ctl |= PT_CTL_TSCEN;
	if (o->dis_retc)
		ctl |= PT_CTL_DISRETC;

	if (o->mtc_freq > 15 || o->cyc_thresh > 15 || o->psb_freq > 15)
		return refuse(PT_ERR_INVAL, why, whylen,
			      "pt: mtc_freq %u, cyc_thresh %u, psb_freq %u: encodings are 0..15",
			      o->mtc_freq, o->cyc_thresh, o->psb_freq);
	if (o->mtc_en) {
		if (!c->mtc)
			return refuse(PT_ERR_UNSUPPORTED, why, whylen,
				      "pt: mtc needs CPUID.(14H,0):EBX[3]");
		if (!(c->mtc_periods & (1u << o->mtc_freq)))
			return refuse(PT_ERR_UNSUPPORTED, why, whylen,
				      "pt: mtc_freq %u not in CPUID.(14H,1):EAX[31:16] = %#x",
				      o->mtc_freq, c->mtc_periods);
		ctl |= PT_CTL_MTCEN | (uint64_t)o->mtc_freq << PT_CTL_MTCFREQ_SHIFT;
	} else if (o->mtc_freq) {
		return refuse(PT_ERR_INVAL, why, whylen, "pt: mtc_freq %u without mtc_en",
			      o->mtc_freq);
	}
	if (o->cyc_en) {
		if (!c->psb_cyc)
			return refuse(PT_ERR_UNSUPPORTED, why, whylen,
				      "pt: cyc needs CPUID.(14H,0):EBX[1]");
		if (!(c->cyc_thresholds & (1u << o->cyc_thresh)))
			return refuse(PT_ERR_UNSUPPORTED, why, whylen,
				      "pt: cyc_thresh %u not in CPUID.(14H,1):EBX[15:0] = %#x",
				      o->cyc_thresh, c->cyc_thresholds);
		ctl |= PT_CTL_CYCEN | (uint64_t)o->cyc_thresh << PT_CTL_CYCTHRESH_SHIFT;
	} else if (o->cyc_thresh) {
		return refuse(PT_ERR_INVAL, why, whylen, "pt: cyc_thresh %u without cyc_en",
			      o->cyc_thresh);
	}
	if (o->psb_freq) {   /* 0 is the reset value of the field */
		if (!c->psb_cyc)
			return refuse(PT_ERR_UNSUPPORTED, why, whylen,
				      "pt: psb_freq needs CPUID.(14H,0):EBX[1]");
		if (!(c->psb_freqs & (1u << o->psb_freq)))
			return refuse(PT_ERR_UNSUPPORTED, why, whylen,
				      "pt: psb_freq %u not in CPUID.(14H,1):EBX[31:16] = %#x",
				      o->psb_freq, c->psb_freqs);
		ctl |= (uint64_t)o->psb_freq << PT_CTL_PSBFREQ_SHIFT;
	}
	if (o->ptw_en || o->fup_on_ptw) {
		if (!c->ptwrite)
			return refuse(PT_ERR_UNSUPPORTED, why, whylen,
				      "pt: ptwrite needs CPUID.(14H,0):EBX[4]");
		if (o->ptw_en)
			ctl |= PT_CTL_PTWEN;
		if (o->fup_on_ptw)
			ctl |= PT_CTL_FUPONPTW;
	}
	if (o->pwr_evt_en) {
		if (!c->power_event)
			return refuse(PT_ERR_UNSUPPORTED, why, whylen,
				      "pt: power events need CPUID.(14H,0):EBX[5]");
		ctl |= PT_CTL_PWREVTEN;
	}

	/* CPL: OS = CPL 0, User = CPL > 0 (33.2.4.1) */
	if (f->cpl & ~0xfu)
		return refuse(PT_ERR_INVAL, why, whylen, "pt: cpl filter %#x has unknown bits",
			      f->cpl);
	if (f->cpl & TRACE_CPL_KERNEL)
		ctl |= PT_CTL_OS;
	if (f->cpl & 0xeu) {
		if (!(f->cpl & TRACE_CPL_USER))
			return refuse(PT_ERR_UNSUPPORTED, why, whylen,
				      "pt: cpl filter %#x: PT's User bit traces CPL 1-3 together",
				      f->cpl);
		ctl |= PT_CTL_USER;
	}
	if (!(ctl & (PT_CTL_OS | PT_CTL_USER)))
		return refuse(PT_ERR_INVAL, why, whylen, "pt: cpl filter selects no privilege level");

	/* CR3 (33.2.4.2, 33.2.8.6) */
	if (f->cr3) {
		if (!c->cr3_filter)
			return refuse(PT_ERR_UNSUPPORTED, why, whylen,
				      "pt: cr3 filter needs CPUID.(14H,0):EBX[0]");
		if (f->cr3 & 0x1full)
			return refuse(PT_ERR_INVAL, why, whylen,
				      "pt: cr3 %#llx: IA32_RTIT_CR3_MATCH bits 4:0 are reserved",
				      (unsigned long long)f->cr3);
		ctl |= PT_CTL_CR3FILTER;
		r->cr3_match = f->cr3;
	}

	/* IP ranges (33.2.4.3, 33.2.8.5) */
	if (f->nranges > TRACE_MAX_RANGES)
		return refuse(PT_ERR_INVAL, why, whylen, "pt: %u IP ranges (at most %u)",
			      f->nranges, TRACE_MAX_RANGES);
	if (f->nranges) {
		if (!c->ip_filter || f->nranges > c->addr_ranges)
			return refuse(PT_ERR_UNSUPPORTED, why, whylen,
				      "pt: %u IP ranges, the CPU has %u (CPUID.(14H,0):EBX[2], (14H,1):EAX[2:0])",
				      f->nranges, c->ip_filter ? c->addr_ranges : 0);
		for (uint32_t n = 0; n < f->nranges; n++) {
			const struct trace_range *t = &f->ranges[n];

			if (t->lo > t->hi || !canonical(t->lo, c->linear_bits) ||
			    !canonical(t->hi, c->linear_bits))
				return refuse(PT_ERR_INVAL, why, whylen,
					      "pt: IP range %u [%#llx, %#llx] is empty or not canonical",
					      n, (unsigned long long)t->lo, (unsigned long long)t->hi);
			ctl |= (uint64_t)PT_ADDR_CFG_FILTER << PT_CTL_ADDR_CFG_SHIFT(n);
			r->addr_a[n] = t->lo;
			r->addr_b[n] = t->hi;
		}
		r->nranges = f->nranges;
	}
	r->ctl = ctl;
	return 0;
}

int pt_rtit_ctl(const struct pt_caps *caps, const struct pt_options *o,
		struct pt_rtit *out, char *why, size_t whylen)
{
	int rc;

	if (why && whylen)
		why[0] = '\0';
	if (!caps || !o || !out)
		return refuse(PT_ERR_INVAL, why, whylen, "pt: NULL argument");
	memset(out, 0, sizeof(*out));
	rc = rtit_ctl(caps, o, out, why, whylen);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}

/* --- ToPA ----------------------------------------------------------------------- */

int pt_topa_size_code(uint64_t size)
{
	for (int code = 0; code <= 15; code++)
		if (size == (PT_TOPA_MIN_SIZE << code))
			return code;
	return -1;
}

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int pt_area_layout(uint64_t topa, uint64_t ring, struct pt_area_layout *l)
{
	memset(l, 0, sizeof(*l));
	if (!pow2(topa) || topa < PT_AREA_TOPA_MIN || topa > PT_AREA_TOPA_MAX ||
	    !pow2(ring) || ring < topa || ring > PT_AREA_RING_MAX)
		return PT_ERR_INVAL;
	l->topa_bytes = topa;
	l->region_bytes = topa / 4 <= PT_AREA_REGION_MAX ? topa / 4 : PT_AREA_REGION_MAX;
	l->regions = (uint32_t)(topa / l->region_bytes);
	/* the region that ends at 3/4 of the output: 2 of 4 (as before), 47 of 64 */
	l->int_entry = l->regions * 3 / 4 ? l->regions * 3 / 4 - 1 : 0;
	l->table_off = topa;
	l->ring_off = topa + PT_TOPA_MIN_SIZE;
	l->ring_bytes = ring;
	/* no overflow: topa <= 256 MiB, ring <= 4 TiB */
	l->area_bytes = (l->ring_off + ring + l->region_bytes - 1) & ~(l->region_bytes - 1);
	return 0;
}

int pt_topa_build(struct pt_state *s, const struct pt_caps *caps,
		  uint64_t *table, size_t table_entries, uint64_t table_pa,
		  const struct pt_region *regions, uint32_t n,
		  enum pt_topa_mode mode, uint32_t int_entry)
{
	uint32_t phys_bits;
	uint64_t limit, total = 0;

	if (!s || !caps || !table || !regions)
		return PT_ERR_INVAL;
	if (mode != PT_MODE_STOP && mode != PT_MODE_WRAP)
		return PT_ERR_INVAL;
	if (n == 0 || n > PT_TOPA_MAX_REGIONS || (size_t)n + 1 > table_entries)
		return PT_ERR_INVAL;
	if (int_entry != PT_TOPA_NO_INT && int_entry >= n)
		return PT_ERR_INVAL;
	if (!caps->pt || !caps->topa)
		return PT_ERR_UNSUPPORTED;
	if (n > 1 && !caps->topa_multi)
		return PT_ERR_UNSUPPORTED;   /* one output entry, then END (33.2.7.2) */
	if (mode == PT_MODE_WRAP && !caps->topa_multi)
		return PT_ERR_UNSUPPORTED;
	if (((uintptr_t)table & 7u) || (table_pa & 0xfffu))
		return PT_ERR_ALIGN;

	phys_bits = caps->maxphyaddr;
	if (phys_bits < 32 || phys_bits > 52)
		phys_bits = 36;
	limit = 1ull << phys_bits;
	if (table_pa >= limit || ((size_t)n + 1) * 8u > limit - table_pa)
		return PT_ERR_PHYS;
	for (uint32_t i = 0; i < n; i++) {
		const struct pt_region *g = &regions[i];

		if (!g->va)
			return PT_ERR_INVAL;
		if (pt_topa_size_code(g->size) < 0 || (g->pa & (g->size - 1)))
			return PT_ERR_ALIGN;
		if (g->pa >= limit || g->size > limit - g->pa)
			return PT_ERR_PHYS;
		total += g->size;
	}

	memset(s, 0, sizeof(*s));
	for (uint32_t i = 0; i < n; i++) {
		uint64_t flags = 0;

		if (i == int_entry)
			flags |= PT_TOPA_INT;
		if (i == n - 1)
			flags |= mode == PT_MODE_STOP ? PT_TOPA_STOP : PT_TOPA_INT;
		table[i] = pt_topa_entry(regions[i].pa, (uint32_t)pt_topa_size_code(regions[i].size),
					 flags);
		s->regions[i] = regions[i];
	}
	/* END: never with INT or STOP, never entry 0 (33.2.7.2 "ToPA Errors") */
	table[n] = pt_topa_entry(table_pa, 0, PT_TOPA_END);

	s->built = true;
	s->mode = mode;
	s->nregions = n;
	s->int_entry = int_entry;
	s->table = table;
	s->table_pa = table_pa;
	s->total = total;
	return 0;
}

/* --- arming ---------------------------------------------------------------------- */

int pt_arm(struct pt_state *s, const struct pt_rtit *rtit, uint64_t *guest_rtit_ctl)
{
	if (!s || !rtit || !guest_rtit_ctl || !s->built)
		return PT_ERR_INVAL;
	if ((rtit->ctl & PT_CTL_TRACEEN) || !(rtit->ctl & PT_CTL_TOPA) ||
	    rtit->nranges > PT_MAX_RANGES)
		return PT_ERR_INVAL;
	/* every MSR below #GPs while TraceEn is 1 (33.2.8) */
	if (hw_rdmsr(PT_MSR_CTL) & PT_CTL_TRACEEN)
		return PT_ERR_BUSY;

	hw_wrmsr(PT_MSR_OUTPUT_BASE, s->table_pa);
	hw_wrmsr(PT_MSR_OUTPUT_MASK_PTRS, PT_MASK_PTRS_LOWER);   /* entry 0, offset 0 */
	hw_wrmsr(PT_MSR_STATUS, 0);
	if (rtit->ctl & PT_CTL_CR3FILTER)
		hw_wrmsr(PT_MSR_CR3_MATCH, rtit->cr3_match);
	for (uint32_t n = 0; n < rtit->nranges; n++) {
		hw_wrmsr(PT_MSR_ADDR_A(n), rtit->addr_a[n]);
		hw_wrmsr(PT_MSR_ADDR_B(n), rtit->addr_b[n]);
	}
	/* a stale ToPA PMI status would read as a wrap at the first drain */
	hw_wrmsr(PT_MSR_PERF_GLOBAL_OVF_CTRL, PT_GLOBAL_STATUS_TOPA_PMI);

	s->rtit = *rtit;
	s->armed = true;
	s->hw_bytes = 0;
	s->pmi_taken = false;
	*guest_rtit_ctl = rtit->ctl | PT_CTL_TRACEEN;
	return 0;
}

/* --- output position ------------------------------------------------------------- */

int pt_output_linear(const struct pt_state *s, uint64_t mask_ptrs, uint64_t *lin)
{
	uint64_t idx, off, start = 0;

	if (!s || !lin || !s->built)
		return PT_ERR_INVAL;
	idx = (mask_ptrs >> PT_MASK_PTRS_IDX_SHIFT) & PT_MASK_PTRS_IDX_MASK;
	off = mask_ptrs >> PT_MASK_PTRS_OFF_SHIFT;
	if (idx == s->nregions && off == 0) {
		*lin = s->total;
		return 0;
	}
	if (idx >= s->nregions || off > s->regions[idx].size)
		return PT_ERR_HW;
	for (uint64_t i = 0; i < idx; i++)
		start += s->regions[i].size;
	*lin = start + off;
	return 0;
}

int pt_output_pos(const struct pt_state *s, uint64_t *pos)
{
	uint64_t lin;
	int rc;

	if (!s || !pos || !s->built)
		return PT_ERR_INVAL;
	rc = pt_output_linear(s, hw_rdmsr(PT_MSR_OUTPUT_MASK_PTRS), &lin);
	if (rc)
		return rc;
	*pos = s->hw_bytes + lin;
	return 0;
}

/* --- draining -------------------------------------------------------------------- */

/* Does an INT region end in (0, lin]?  Then a ToPA PMI is explained without a wrap. */
static bool int_boundary_within(const struct pt_state *s, uint64_t lin)
{
	uint64_t end = 0;

	for (uint32_t i = 0; i < s->nregions; i++) {
		end += s->regions[i].size;
		if (end > lin)
			break;
		if (i == s->int_entry || i == s->nregions - 1)   /* the last has INT in WRAP */
			return true;
	}
	return false;
}

/*
 * Copy len bytes from buffer offset from (wrapping at total) to the sink,
 * region by region, stopping at the first refusal.  Returns bytes taken.
 */
static uint64_t deliver(struct pt_state *s, const struct pt_sink *sink, uint64_t from,
			uint64_t len)
{
	uint64_t done = 0, start = 0;
	uint32_t i = 0;

	if (!len)
		return 0;
	from %= s->total;
	while (start + s->regions[i].size <= from) {
		start += s->regions[i].size;
		i++;
	}
	while (done < len) {
		const struct pt_region *g = &s->regions[i];
		uint64_t off = from - start;
		uint64_t chunk = g->size - off;
		size_t took;

		if (chunk > len - done)
			chunk = len - done;
		took = sink->write(sink->ctx, g->va + off, (size_t)chunk);
		if (took > chunk)
			took = (size_t)chunk;
		done += took;
		if (took < chunk)
			break;
		from += chunk;
		if (++i == s->nregions) {
			i = 0;
			start = 0;
			from = 0;
		} else {
			start += g->size;
		}
	}
	return done;
}

static void put_sync(struct pt_state *s, struct tv_trace_ring *ring, uint64_t tsc)
{
	if (trace_append_pt_sync(ring, tsc, s->stream_bytes, s->lost) == 0)
		s->stats.syncs++;
	else
		s->stats.syncs_dropped++;
}

/* Deliver and account: refused bytes are a gap right after what was taken. */
static void copy_out(struct pt_state *s, const struct pt_sink *sink, uint64_t from, uint64_t len)
{
	uint64_t took = deliver(s, sink, from, len);

	s->stream_bytes += took;
	s->stats.bytes += took;
	if (took < len) {
		s->lost += len - took;
		s->stats.sink_dropped += len - took;
	}
}

int pt_drain(struct pt_state *s, const struct pt_sink *sink,
	     struct tv_trace_ring *ring, uint64_t tsc)
{
	uint64_t status, mask_ptrs, global, lin = 0;
	uint64_t stream_before, lost_before;
	const char *note = NULL;
	bool pmi, stopped, error, rewind = false, reset = false;
	int ptr_rc, rc = 0;

	if (!s || !sink || !sink->write || !ring || !s->armed)
		return PT_ERR_INVAL;
	/* the pointer MSRs are stable, and writable, only with TraceEn 0 (33.2.8.8) */
	if (hw_rdmsr(PT_MSR_CTL) & PT_CTL_TRACEEN)
		return PT_ERR_BUSY;
	s->stats.drains++;
	stream_before = s->stream_bytes;
	lost_before = s->lost;

	status = hw_rdmsr(PT_MSR_STATUS);
	mask_ptrs = hw_rdmsr(PT_MSR_OUTPUT_MASK_PTRS);
	global = hw_rdmsr(PT_MSR_PERF_GLOBAL_STATUS);
	pmi = global & PT_GLOBAL_STATUS_TOPA_PMI;
	if (pmi) {
		/* consumed here; its interrupt may still be on the way (pt_on_pmi) */
		hw_wrmsr(PT_MSR_PERF_GLOBAL_OVF_CTRL, PT_GLOBAL_STATUS_TOPA_PMI);
		s->pmi_taken = true;
	}
	stopped = status & PT_STATUS_STOPPED;
	error = status & PT_STATUS_ERROR;
	ptr_rc = pt_output_linear(s, mask_ptrs, &lin);

	if (stopped && !error && s->mode == PT_MODE_STOP) {
		/* the STOP region (the last) is full: all of it, then a gap (33.2.7.2) */
		copy_out(s, sink, 0, s->total);
		s->hw_bytes += s->total;
		s->lost += 1;
		s->stats.stops++;
		note = "pt: ToPA STOP reached, buffer full: trace cut here, bytes lost unknown";
		reset = true;
	} else if (ptr_rc) {
		s->lost += 1;
		s->stats.bad_pointers++;
		if (error || stopped)
			s->stats.errors++;
		note = "pt: impossible IA32_RTIT_OUTPUT_MASK_PTRS: buffer dropped, bytes lost unknown";
		reset = true;
		rc = PT_ERR_HW;
	} else if (error || stopped) {
		copy_out(s, sink, 0, lin);
		s->hw_bytes += lin;
		s->lost += 1;
		s->stats.errors++;
		note = "pt: operational error (IA32_RTIT_STATUS.Error): trace cut here, bytes lost unknown";
		reset = true;
	} else if (s->mode == PT_MODE_WRAP && pmi && !int_boundary_within(s, lin)) {
		/* went round at least once: the lin oldest bytes were written over */
		s->lost += lin;
		s->stats.wraps++;
		s->stats.wrapped_bytes += lin;
		if (lin)
			put_sync(s, ring, tsc);       /* the gap, before the bytes */
		copy_out(s, sink, lin, s->total);
		s->hw_bytes += s->total + lin;
		rewind = true;
	} else {
		copy_out(s, sink, 0, lin);
		s->hw_bytes += lin;
	}

	if (lin || rewind || reset)
		hw_wrmsr(PT_MSR_OUTPUT_MASK_PTRS, PT_MASK_PTRS_LOWER);
	if (reset) {
		/* clear Stopped/Error and PacketByteCnt: the next enable emits PSB+ (33.2.8.3) */
		hw_wrmsr(PT_MSR_OUTPUT_BASE, s->table_pa);
		hw_wrmsr(PT_MSR_STATUS, 0);
	}
	if (s->stream_bytes != stream_before || s->lost != lost_before)
		put_sync(s, ring, tsc);
	if (note)
		trace_append_log(ring, tsc, LOG_WARN, note, strlen(note));
	return rc;
}

int pt_on_pmi(struct pt_state *s, const struct pt_sink *sink,
	      struct tv_trace_ring *ring, uint64_t tsc, uint64_t *other_status)
{
	uint64_t global;
	int rc;

	if (!s || !sink || !ring)
		return PT_ERR_INVAL;
	if (other_status)
		*other_status = 0;
	s->stats.pmis++;
	if (!s->armed)
		return PT_PMI_NOT_OURS;
	global = hw_rdmsr(PT_MSR_PERF_GLOBAL_STATUS);
	if (other_status)
		*other_status = global & ~PT_GLOBAL_STATUS_TOPA_PMI;
	if (!(global & PT_GLOBAL_STATUS_TOPA_PMI) && !s->pmi_taken)
		return PT_PMI_NOT_OURS;
	rc = pt_drain(s, sink, ring, tsc);   /* clears bit 55 when set */
	if (rc == PT_ERR_BUSY)
		return rc;
	s->pmi_taken = false;
	s->stats.pmis_ours++;
	return rc < 0 ? rc : PT_PMI_OURS;
}
