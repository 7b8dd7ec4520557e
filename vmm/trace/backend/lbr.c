/* SPDX-License-Identifier: MIT */
/*
 * trace_lbr.c - see trace_lbr.h and docs/BACKENDS-LBR.md.
 */
#include <stddef.h>
#include <string.h>

#include "vmm/hw/hw.h"
#include "vmm/hw/msr.h"
#include "vmm/lib/log.h"
#include "vmm/trace/backend.h"
#include "vmm/trace/caps.h"
#include "vmm/trace/msr_policy.h"
#include "vmm/trace/backend/lbr.h"
#include "vmm/vmx/vmx_defs.h"

const char *lbr_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case LBR_ERR_INVAL:
		return "invalid argument or LBR not started";
	case LBR_ERR_UNSUPPORTED:
		return "no usable LBR on this CPU";
	default:
		return "unknown error";
	}
}

/*
 * Legacy LBR stacks of family 6 (SDM 3B 18.4.8.1 and the per-family
 * sections 18.5-18.13; SDM Vol. 4 lists the MSRs per model).  The TOS MSR
 * is MSR_LASTBRANCH_TOS (0x1C9) on all of them.  Depth 8 at 0x40/0x60:
 * Silvermont-class Atoms; 16 at 0x680/0x6C0: Nehalem to Broadwell;
 * 32 at 0x680/0x6C0 with MSR_LBR_INFO_x at 0xDC0: Skylake and later
 * cores, Goldmont Plus, Tremont.  Goldmont (format 6) keeps its cycle
 * count in TO and has no INFO MSRs; Knights Landing/Mill have 8 entries
 * at 0x680.  Later cores (Alder Lake, Sapphire Rapids, ...) have
 * architectural LBR and do not need this table.
 */
#define ATOM8(m, n)  { m, 8, LBR_MSR_ATOM_FROM_0, LBR_MSR_ATOM_TO_0, 0, n }
#define NHM16(m, n)  { m, 16, LBR_MSR_NHM_FROM_0, LBR_MSR_NHM_TO_0, 0, n }
#define SKL32(m, n)  { m, 32, LBR_MSR_NHM_FROM_0, LBR_MSR_NHM_TO_0, LBR_MSR_INFO_0, n }
#define GLM32(m, n)  { m, 32, LBR_MSR_NHM_FROM_0, LBR_MSR_NHM_TO_0, 0, n }
#define KNL8(m, n)   { m, 8, LBR_MSR_NHM_FROM_0, LBR_MSR_NHM_TO_0, 0, n }

static const struct lbr_model lbr_models[] = {
	NHM16(0x1a, "Nehalem-EP"), NHM16(0x1e, "Nehalem"), NHM16(0x1f, "Nehalem"),
	NHM16(0x2e, "Nehalem-EX"),
	NHM16(0x25, "Westmere"), NHM16(0x2c, "Westmere-EP"), NHM16(0x2f, "Westmere-EX"),
	NHM16(0x2a, "Sandy Bridge"), NHM16(0x2d, "Sandy Bridge-EP"),
	NHM16(0x3a, "Ivy Bridge"), NHM16(0x3e, "Ivy Bridge-EP"),
	NHM16(0x3c, "Haswell"), NHM16(0x3f, "Haswell-EP"), NHM16(0x45, "Haswell-ULT"),
	NHM16(0x46, "Haswell-GT3e"),
	NHM16(0x3d, "Broadwell"), NHM16(0x47, "Broadwell-GT3e"), NHM16(0x4f, "Broadwell-EP"),
	NHM16(0x56, "Broadwell-DE"),
	SKL32(0x4e, "Skylake-U/Y"), SKL32(0x5e, "Skylake-S/H"),
	SKL32(0x55, "Skylake-SP/Cascade Lake/Cooper Lake"),
	SKL32(0x8e, "Kaby/Amber/Whiskey/Comet Lake-U"), SKL32(0x9e, "Kaby/Coffee Lake"),
	SKL32(0xa5, "Comet Lake-S/H"), SKL32(0xa6, "Comet Lake-U"),
	SKL32(0x66, "Cannon Lake"),
	SKL32(0x7d, "Ice Lake-Y"), SKL32(0x7e, "Ice Lake-U"),
	SKL32(0x6a, "Ice Lake-SP"), SKL32(0x6c, "Ice Lake-D"),
	SKL32(0x8c, "Tiger Lake-U"), SKL32(0x8d, "Tiger Lake-H"), SKL32(0xa7, "Rocket Lake"),
	ATOM8(0x37, "Silvermont"), ATOM8(0x4a, "Silvermont"), ATOM8(0x4d, "Silvermont (Avoton)"),
	ATOM8(0x5a, "Silvermont (Anniedale)"), ATOM8(0x5d, "Silvermont (SoFIA)"),
	ATOM8(0x4c, "Airmont"), ATOM8(0x75, "Airmont"),
	GLM32(0x5c, "Goldmont"), GLM32(0x5f, "Goldmont (Denverton)"),
	SKL32(0x7a, "Goldmont Plus"),
	SKL32(0x86, "Tremont (Jacobsville)"), SKL32(0x96, "Tremont (Elkhart Lake)"),
	SKL32(0x9c, "Tremont (Jasper Lake)"),
	KNL8(0x57, "Knights Landing"), KNL8(0x85, "Knights Mill"),
};

const struct lbr_model *lbr_model_lookup(uint32_t family, uint32_t model)
{
	if (family != 6)
		return NULL;
	for (size_t i = 0; i < sizeof(lbr_models) / sizeof(lbr_models[0]); i++)
		if (lbr_models[i].model == model)
			return &lbr_models[i];
	return NULL;
}

void lbr_caps_decode(const struct cpu_caps *cpu, uint64_t perf_capabilities,
		     uint32_t perfmon_version, struct lbr_caps *out)
{
	const struct lbr_model *m;
	uint8_t fmt;

	memset(out, 0, sizeof(*out));
	out->family = cpu->family;
	out->model = cpu->model;
	if (cpu->vendor_id != CPU_VENDOR_INTEL) {
		out->reason = "not an Intel CPU";
		return;
	}
	if (cpu->arch_lbr) {
		/* SDM 3B ch. 19: leaf 0x1C describes everything; entry 0 is newest. */
		if (!cpu->arch_lbr_max_depth || cpu->arch_lbr_max_depth > LBR_MAX_DEPTH) {
			out->reason = "arch LBR: CPUID.1CH:EAX reports no usable depth";
			return;
		}
		out->supported = true;
		out->arch = true;
		out->format = LBR_FMT_ARCH;
		out->depth = (uint8_t)cpu->arch_lbr_max_depth;
		out->has_info = true;
		out->streamlined_freeze = true;
		out->cpl_filter = cpu->arch_lbr_cpl_filter;
		out->branch_filter = cpu->arch_lbr_branch_filter;
		out->mispred = cpu->arch_lbr_mispredict;
		out->timed = cpu->arch_lbr_timed;
		out->branch_type = cpu->arch_lbr_branch_type;
		out->from_0 = LBR_MSR_ARCH_FROM_0;
		out->to_0 = LBR_MSR_ARCH_TO_0;
		out->info_0 = LBR_MSR_ARCH_INFO_0;
		out->name = "architectural";
		return;
	}
	if (cpu->family != 6) {
		out->reason = "no LBR model table for this CPU family";
		return;
	}
	if (!cpu->pdcm) {
		out->reason = "no PDCM: IA32_PERF_CAPABILITIES (the LBR format) is not enumerated";
		return;
	}
	fmt = (uint8_t)(perf_capabilities & LBR_PERF_CAP_FORMAT_MASK);
	if (fmt > LBR_FMT_MAX_KNOWN) {
		out->reason = "IA32_PERF_CAPABILITIES reports an unknown LBR format";
		return;
	}
	m = lbr_model_lookup(cpu->family, cpu->model);
	if (!m) {
		out->reason = "CPU model not in the LBR table";
		return;
	}
	out->supported = true;
	out->format = fmt;
	out->depth = m->depth;
	out->tos_msr = LBR_MSR_TOS;
	out->from_0 = m->from_0;
	out->to_0 = m->to_0;
	out->has_info = fmt == LBR_FMT_EIP_INFO || fmt == LBR_FMT_LIP_INFO;
	out->info_0 = out->has_info ? LBR_MSR_INFO_0 : 0;
	/* Every model in the table is Nehalem-class or later: LBR_SELECT exists. */
	out->has_select = true;
	out->cpl_filter = true;
	out->branch_filter = true;
	out->mispred = fmt >= LBR_FMT_EIP_FLAGS;
	out->timed = fmt >= LBR_FMT_EIP_INFO;
	/* SDM 3B 18.10.2: perfmon v4 replaces the legacy freeze (DEBUGCTL.LBR cleared). */
	out->streamlined_freeze = perfmon_version >= 4;
	out->name = m->name;
}

void lbr_probe(struct lbr_caps *out)
{
	struct hw_cpuid_regs r;
	struct cpu_caps cpu;
	uint64_t perf = 0;
	uint32_t version = 0;

	caps_read(&cpu);
	if (cpu.vendor_id == CPU_VENDOR_INTEL && cpu.pdcm)
		perf = hw_rdmsr(LBR_MSR_PERF_CAPABILITIES);
	if (cpu.max_leaf >= 0xa) {
		hw_cpuid(0xa, 0, &r);
		version = r.eax & 0xff;
	}
	lbr_caps_decode(&cpu, perf, version, out);
}

/* --- filters -------------------------------------------------------------- */

#define FAR_KINDS (LBR_KIND(TV_BR_FAR) | LBR_KIND(TV_BR_SYSCALL) | LBR_KIND(TV_BR_SYSRET) | \
		   LBR_KIND(TV_BR_EXCEPTION) | LBR_KIND(TV_BR_INTERRUPT))

uint64_t lbr_select_bits(const struct trace_filter *f, uint32_t kinds)
{
	uint32_t cpl = f ? f->cpl : TRACE_CPL_ALL;
	uint64_t sel = 0;

	if (!(cpl & TRACE_CPL_KERNEL))
		sel |= LBR_SEL_CPL_EQ_0;
	if (!(cpl & TRACE_CPL_USER))
		sel |= LBR_SEL_CPL_NEQ_0;
	if (kinds == LBR_KINDS_ALL)
		return sel;
	if (!(kinds & LBR_KIND(TV_BR_JCC)))
		sel |= LBR_SEL_JCC;
	if (!(kinds & LBR_KIND(TV_BR_CALL)))
		sel |= LBR_SEL_NEAR_REL_CALL;
	if (!(kinds & LBR_KIND(TV_BR_CALL_IND)))
		sel |= LBR_SEL_NEAR_IND_CALL;
	if (!(kinds & LBR_KIND(TV_BR_RET)))
		sel |= LBR_SEL_NEAR_RET;
	if (!(kinds & LBR_KIND(TV_BR_JMP_IND)))
		sel |= LBR_SEL_NEAR_IND_JMP;
	if (!(kinds & LBR_KIND(TV_BR_JMP)))
		sel |= LBR_SEL_NEAR_REL_JMP;
	if (!(kinds & FAR_KINDS))
		sel |= LBR_SEL_FAR_BRANCH;
	return sel;
}

uint64_t lbr_arch_ctl_bits(const struct lbr_caps *caps, const struct trace_filter *f,
			   uint32_t kinds)
{
	uint32_t cpl = f ? f->cpl : TRACE_CPL_ALL;
	uint64_t ctl = LBR_CTL_LBREN;

	/* Bits not enumerated by leaf 0x1C are left 0 (reserved there). */
	if (caps && caps->cpl_filter) {
		if (cpl & TRACE_CPL_KERNEL)
			ctl |= LBR_CTL_OS;
		if (cpl & TRACE_CPL_USER)
			ctl |= LBR_CTL_USR;
	}
	if (!caps || !caps->branch_filter)
		return ctl;
	if (kinds == LBR_KINDS_ALL)
		return ctl | LBR_CTL_TYPES;
	if (kinds & LBR_KIND(TV_BR_JCC))
		ctl |= LBR_CTL_COND;
	if (kinds & LBR_KIND(TV_BR_JMP))
		ctl |= LBR_CTL_NEAR_REL_JMP;
	if (kinds & LBR_KIND(TV_BR_JMP_IND))
		ctl |= LBR_CTL_NEAR_IND_JMP;
	if (kinds & LBR_KIND(TV_BR_CALL))
		ctl |= LBR_CTL_NEAR_REL_CALL;
	if (kinds & LBR_KIND(TV_BR_CALL_IND))
		ctl |= LBR_CTL_NEAR_IND_CALL;
	if (kinds & LBR_KIND(TV_BR_RET))
		ctl |= LBR_CTL_NEAR_RET;
	if (kinds & FAR_KINDS)
		ctl |= LBR_CTL_OTHER_BRANCH;
	return ctl;
}

void lbr_vmx_controls(const struct lbr_caps *caps, uint32_t *entry, uint32_t *exit)
{
	*entry = ENTRY_LOAD_DEBUG_CONTROLS;
	*exit = EXIT_SAVE_DEBUG_CONTROLS;
	if (caps && caps->arch) {
		*entry |= ENTRY_LOAD_LBR_CTL;
		*exit |= EXIT_CLEAR_LBR_CTL;
	}
}

/* --- decoding ---------------------------------------------------------------- */

/* v's low `bits` bits, sign-extended from bit bits-1. */
static uint64_t sext(uint64_t v, unsigned bits)
{
	uint64_t sign = 1ull << (bits - 1);
	uint64_t low = bits == 64 ? v : v & ((sign << 1) - 1);

	return (low ^ sign) - sign;
}

uint8_t lbr_arch_br_type_kind(uint32_t br_type)
{
	/* SDM 3B ch. 19, IA32_LBR_x_INFO.BR_TYPE. */
	switch (br_type) {
	case 0: return TV_BR_JCC;
	case 1: return TV_BR_JMP_IND;
	case 2: return TV_BR_JMP;
	case 3: return TV_BR_CALL_IND;
	case 4: return TV_BR_CALL;
	case 5: return TV_BR_RET;
	default: return TV_BR_UNKNOWN;   /* other branches: far, interrupts, ... */
	}
}

/* Flags, cycles and kind from an LBR_INFO value (formats 5, 7, arch). */
static void decode_info(const struct lbr_caps *caps, uint64_t info, struct lbr_entry *e)
{
	e->info = info;
	if (info & LBR_INFO_MISPRED)
		e->flags |= TV_BRF_MISPRED;
	/* Format 7 has no TSX: bits 62:61 are reserved there. */
	if (caps->format != LBR_FMT_LIP_INFO) {
		if (info & LBR_INFO_IN_TSX)
			e->flags |= TV_BRF_IN_TSX;
		if (info & LBR_INFO_TSX_ABORT)
			e->flags |= TV_BRF_TSX_ABORT;
	}
	e->cycles = (uint16_t)(info & LBR_INFO_CYC_CNT_MASK);
	if (caps->arch) {
		e->cycles_valid = caps->timed && (info & LBR_INFO_CYC_CNT_VALID);
		if (caps->branch_type)
			e->kind = lbr_arch_br_type_kind((uint32_t)((info & LBR_INFO_BR_TYPE_MASK) >>
								   LBR_INFO_BR_TYPE_SHIFT));
	} else {
		e->cycles_valid = true;
	}
}

bool lbr_decode(const struct lbr_caps *caps, uint64_t from_raw, uint64_t to_raw,
		uint64_t info_raw, struct lbr_entry *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = TV_BR_UNKNOWN;
	if (caps->format == LBR_FMT_32)
		to_raw = 0;
	if (!from_raw && !to_raw)
		return false;

	switch (caps->format) {
	case LBR_FMT_32:
		/* One MSR: from in 31:0, to in 63:32 (SDM 3B 18.4.8.1). */
		out->from = from_raw & 0xffffffffull;
		out->to = from_raw >> 32;
		break;
	case LBR_FMT_EIP_FLAGS:
		if (from_raw & LBR_FROM_MISPRED)
			out->flags |= TV_BRF_MISPRED;
		out->from = sext(from_raw, 63);
		out->to = to_raw;
		break;
	case LBR_FMT_EIP_FLAGS_TSX:
		/*
		 * With TSX off some parts read bits 62:61 as 0 (not as sign
		 * extension): taking the address from 60:0 covers both.
		 */
		if (from_raw & LBR_FROM_MISPRED)
			out->flags |= TV_BRF_MISPRED;
		if (from_raw & LBR_FROM_IN_TSX)
			out->flags |= TV_BRF_IN_TSX;
		if (from_raw & LBR_FROM_TSX_ABORT)
			out->flags |= TV_BRF_TSX_ABORT;
		out->from = sext(from_raw, 61);
		out->to = to_raw;
		break;
	case LBR_FMT_LIP_CYCLES:
		if (from_raw & LBR_FROM_MISPRED)
			out->flags |= TV_BRF_MISPRED;
		out->from = sext(from_raw, 63);
		out->cycles = (uint16_t)(to_raw >> 48);
		out->cycles_valid = true;
		out->to = sext(to_raw, 48);
		break;
	case LBR_FMT_EIP_INFO:
	case LBR_FMT_LIP_INFO:
	case LBR_FMT_ARCH:
		out->from = from_raw;
		out->to = to_raw;
		decode_info(caps, info_raw, out);
		break;
	default:   /* LIP, EIP: plain 64-bit addresses */
		out->from = from_raw;
		out->to = to_raw;
		break;
	}
	return true;
}

/* --- the backend -------------------------------------------------------------- */

/* Raw MSRs of slot idx into *e; false when the slot is empty. */
static bool read_slot(const struct lbr_caps *c, uint32_t idx, struct lbr_entry *e)
{
	uint64_t from = hw_rdmsr(c->from_0 + idx), to = 0, info = 0;

	if (c->format != LBR_FMT_32)
		to = hw_rdmsr(c->to_0 + idx);
	if (!from && !to)
		return lbr_decode(c, 0, 0, 0, e);
	if (c->has_info)
		info = hw_rdmsr(c->info_0 + idx);
	return lbr_decode(c, from, to, info, e);
}

/* Legacy: the slot holding the i-th newest record. */
static uint32_t legacy_slot(const struct lbr_caps *c, uint64_t tos, uint32_t i)
{
	return (uint32_t)((tos + c->depth - (i % c->depth)) % c->depth);
}

static void clear_stack(const struct lbr_state *s, uint64_t tos, uint32_t n)
{
	const struct lbr_caps *c = &s->caps;

	if (c->arch) {
		/* A write to IA32_LBR_DEPTH resets every entry (SDM 3B ch. 19). */
		hw_wrmsr(LBR_MSR_ARCH_DEPTH, c->depth);
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t slot = legacy_slot(c, tos, i);

		hw_wrmsr(c->from_0 + slot, 0);
		if (c->format != LBR_FMT_32)
			hw_wrmsr(c->to_0 + slot, 0);
	}
}

int lbr_start(struct lbr_state *s, const struct lbr_caps *caps,
	      const struct trace_filter *f, uint32_t kinds, uint64_t pmi_ovf_mask)
{
	if (!s || !caps)
		return LBR_ERR_INVAL;
	if (!caps->supported || !caps->depth || caps->depth > LBR_MAX_DEPTH)
		return LBR_ERR_UNSUPPORTED;
	memset(s, 0, sizeof(*s));
	s->caps = *caps;
	s->pmi_ovf_mask = pmi_ovf_mask;
	if (caps->arch) {
		s->ctl = lbr_arch_ctl_bits(caps, f, kinds);
		hw_wrmsr(LBR_MSR_ARCH_DEPTH, caps->depth);   /* also empties the stack */
	} else {
		s->ctl = caps->has_select ? lbr_select_bits(f, kinds) : 0;
		if (caps->has_select)
			hw_wrmsr(LBR_MSR_SELECT, s->ctl);
		clear_stack(s, 0, caps->depth);
	}
	s->started = true;
	return 0;
}

void lbr_stop(struct lbr_state *s)
{
	if (s)
		s->started = false;
}

uint64_t lbr_guest_debugctl(const struct lbr_state *s, uint64_t guest_debugctl)
{
	if (!s || !s->started)
		return guest_debugctl;
	if (!s->caps.arch)
		guest_debugctl |= LBR_DEBUGCTL_LBR;
	if (s->pmi_ovf_mask)
		guest_debugctl |= LBR_DEBUGCTL_FREEZE_LBRS_ON_PMI;
	return guest_debugctl;
}

bool lbr_top(const struct lbr_state *s, struct lbr_entry *out)
{
	uint32_t slot = 0;

	if (!s || !s->started || !out)
		return false;
	if (!s->caps.arch)
		slot = legacy_slot(&s->caps, hw_rdmsr(s->caps.tos_msr), 0);
	return read_slot(&s->caps, slot, out);
}

int lbr_read(struct lbr_state *s, struct tv_trace_ring *ring, const struct trace_filter *f)
{
	const struct lbr_caps *c;
	uint64_t tos = 0;
	uint32_t n = 0, full = 0;
	int written = 0;

	if (!s || !ring || !s->started)
		return LBR_ERR_INVAL;
	c = &s->caps;
	s->stats.reads++;
	if (!c->arch)
		tos = hw_rdmsr(c->tos_msr) % c->depth;
	/* Newest first until an empty slot: everything older was read before. */
	while (n < c->depth) {
		uint32_t slot = c->arch ? n : legacy_slot(c, tos, n);

		if (!read_slot(c, slot, &s->scratch[n]))
			break;
		n++;
	}
	s->stats.entries += n;
	if (n == c->depth) {
		s->stats.full_reads++;
		full = TV_BRF_LBR_FULL;
	}
	for (uint32_t i = n; i-- > 0;) {
		const struct lbr_entry *e = &s->scratch[i];
		uint32_t flags = e->flags | full;

		if (f && !trace_filter_ip(f, e->from, e->to)) {
			s->stats.filtered++;
			continue;
		}
		/* The gap, if any, is before the oldest record that goes out. */
		full = 0;
		if (trace_append_lbr(ring, e->from, e->to, (enum tv_branch_kind)e->kind,
				     flags, e->info) == 0) {
			s->stats.recorded++;
			written++;
		} else {
			s->stats.dropped++;
		}
	}
	if (n)
		clear_stack(s, tos, n);
	return written;
}

int lbr_pmi(struct lbr_state *s, struct tv_trace_ring *ring, const struct trace_filter *f,
	    uint64_t *guest_debugctl)
{
	uint64_t status, ours, ack;
	int rc;

	if (!s || !ring || !guest_debugctl || !s->started)
		return LBR_ERR_INVAL;
	s->stats.pmis++;
	status = hw_rdmsr(LBR_MSR_PERF_GLOBAL_STATUS);
	ours = status & s->pmi_ovf_mask;
	/* Frozen whoever's counter overflowed: the records are the guest's either way. */
	rc = lbr_read(s, ring, f);
	if (rc < 0)
		return rc;
	ack = ours;
	if (s->caps.streamlined_freeze) {
		/* SDM 3B 18.10.2: LBR_FRZ stays set until software clears it. */
		if (status & LBR_GLOBAL_STATUS_LBR_FRZ)
			ack |= LBR_GLOBAL_STATUS_LBR_FRZ;
	} else if (!s->caps.arch) {
		/* SDM 3B 18.4.7: the legacy freeze cleared DEBUGCTL.LBR. */
		*guest_debugctl |= LBR_DEBUGCTL_LBR;
	}
	if (ack)
		hw_wrmsr(LBR_MSR_PERF_GLOBAL_STATUS_RESET, ack);
	if (!ours)
		return LBR_PMI_NOT_OURS;
	s->stats.pmis_ours++;
	return LBR_PMI_OURS;
}

static bool in_range(uint32_t msr, uint32_t base, uint32_t n)
{
	return base && msr >= base && msr < base + n;
}

bool lbr_msr_owned(const struct lbr_caps *c, uint32_t msr)
{
	if (!c || !c->supported)
		return false;
	if (c->arch) {
		if (msr == LBR_MSR_ARCH_CTL || msr == LBR_MSR_ARCH_DEPTH)
			return true;
	} else {
		if (msr == c->tos_msr || (c->has_select && msr == LBR_MSR_SELECT))
			return true;
	}
	return in_range(msr, c->from_0, c->depth) ||
	       (c->format != LBR_FMT_32 && in_range(msr, c->to_0, c->depth)) ||
	       (c->has_info && in_range(msr, c->info_0, c->depth));
}

/* --- the unit ---------------------------------------------------------------- */

#define LBR_DEBUGCTL_OWNED (DEBUGCTL_LBR | DEBUGCTL_FREEZE_LBRS_ON_PMI)

struct lbr_unit *lbr_unit(struct trace_bcpu *b)
{
	return b->priv;
}

/*
 * The LBR stack of this CPU, probed once (in VMX root: CPUID and
 * IA32_PERF_CAPABILITIES), and the VMX controls that switch the guest's
 * DEBUGCTL (SDM 3C 27.3.1, 28.3.1): without "load debug controls" the
 * guest would run with the host's DEBUGCTL (0), without "save debug
 * controls" its own writes would be lost at the next exit.  Arch LBR also
 * needs IA32_LBR_CTL loaded on entry and cleared on exit.
 */
bool lbr_unit_usable(struct trace_bcpu *b)
{
	struct lbr_unit *u = lbr_unit(b);
	bool arch_ctls = (b->entry_ctls & ENTRY_LOAD_LBR_CTL) && (b->exit_ctls & EXIT_CLEAR_LBR_CTL);
	bool dbg_ctls = (b->entry_ctls & ENTRY_LOAD_DEBUG_CONTROLS) &&
			(b->exit_ctls & EXIT_SAVE_DEBUG_CONTROLS);

	if (!u->probed) {
		const char *src = tv_source_name(b->setup->source);

		u->probed = true;
		lbr_probe(&u->caps);
		if (!u->caps.supported)
			log_err("trace: cpu %u: no usable LBR stack: %s", b->index,
				u->caps.reason ? u->caps.reason : "?");
		else if (u->caps.arch && !arch_ctls)
			log_err("trace: cpu %u: architectural LBR, %u deep, but the VMCS does not load and clear IA32_LBR_CTL (entry %#x, exit %#x): %s refused",
				b->index, u->caps.depth, b->entry_ctls, b->exit_ctls,
				src ? src : "?");
		else if (u->caps.arch)
			log_info("trace: cpu %u: architectural LBR, %u deep%s%s%s%s", b->index,
				 u->caps.depth, u->caps.cpl_filter ? ", CPL filter" : "",
				 u->caps.branch_filter ? ", branch filter" : "",
				 u->caps.mispred ? ", mispredict" : "",
				 u->caps.branch_type ? ", branch type" : "");
		else
			log_info("trace: cpu %u: LBR %s, format %u, %u deep", b->index,
				 u->caps.name ? u->caps.name : "?", u->caps.format, u->caps.depth);
		if (!dbg_ctls)
			log_err("trace: cpu %u: the VMCS does not load and save the guest's DEBUGCTL (entry %#x, exit %#x)",
				b->index, b->entry_ctls, b->exit_ctls);
	}
	return u->caps.supported && (!u->caps.arch || arch_ctls) && dbg_ctls;
}

/*
 * Architectural LBR: GUEST_IA32_LBR_CTL holds the window's IA32_LBR_CTL
 * (LBREn, the filter) while `on`, else 0; the exit clears the MSR, so
 * VMX root is never recorded.  Written only when it changes (the guest's
 * own LBR_CTL writes are shadowed, vmm/trace/msr_policy.c).
 */
void lbr_unit_set_ctl(struct trace_bcpu *b, struct trace_view *v, bool on)
{
	struct lbr_unit *u = lbr_unit(b);
	uint64_t want = on ? u->lbr.ctl : 0;

	if (!u->caps.arch || !(b->entry_ctls & ENTRY_LOAD_LBR_CTL))
		return;
	if (want != u->vmcs_ctl) {
		trace_view_set(v, TRACE_VIEW_LBR_CTL, want);
		u->vmcs_ctl = want;
	}
}

/*
 * Move what the stack holds into the ring.  Returns true when the ring
 * refused records (the window closes, TV_TRIG_FULL).
 */
static bool lbr_unit_drain(struct trace_bcpu *b)
{
	struct lbr_unit *u = lbr_unit(b);
	uint64_t dropped = u->lbr.stats.dropped;
	int n = lbr_read(&u->lbr, b->ring, b->filter);

	if (n > 0)
		b->window_branches += (uint64_t)n;
	return u->lbr.stats.dropped != dropped;
}

/*
 * The counter overflowed (the PMI's NMI exit, or found at another exit):
 * read the frozen stack, unfreeze, acknowledge, reload the counter.
 * *other receives the guest's status bits.  TRACE_DO_PMI_OURS when it
 * was ours, TRACE_DO_STOP_FULL when the ring refused records.
 */
static uint32_t lbr_pmi_now(struct trace_bcpu *b, struct trace_view *v, uint64_t *other)
{
	struct lbr_unit *u = lbr_unit(b);
	uint64_t dbg = trace_view_get(v, TRACE_VIEW_DEBUGCTL), d = dbg;
	uint64_t rec = u->lbr.stats.recorded, dropped = u->lbr.stats.dropped;
	uint64_t st = hw_rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
	int rc = lbr_pmi(&u->lbr, b->ring, b->filter, &d);
	uint32_t r = 0;

	*other = st & TRACE_PMI_GUEST_STATUS & ~(1ull << b->pmc_idx);
	b->window_branches += u->lbr.stats.recorded - rec;
	if (u->lbr.stats.dropped != dropped)
		r |= TRACE_DO_STOP_FULL;
	if (d != dbg)
		trace_view_set(v, TRACE_VIEW_DEBUGCTL, d);
	if (rc != LBR_PMI_OURS)
		return r;
	trace_pmc_reload(b);
	return r | TRACE_DO_PMI_OURS;
}

static int lbr_open(struct trace_bcpu *b, struct trace_view *v)
{
	struct lbr_unit *u = lbr_unit(b);

	if (b->setup->pmi && trace_pmc_arm(b, v, u->caps.depth))
		return TRACE_ENOSYS;
	/* Empties the stack: nothing older than the window is recorded. */
	lbr_start(&u->lbr, &u->caps, b->filter, LBR_KINDS_ALL,
		  b->pmc_on ? 1ull << b->pmc_idx : 0);
	return 0;
}

static void lbr_close(struct trace_bcpu *b, struct trace_view *v)
{
	struct lbr_unit *u = lbr_unit(b);

	/* The branches since the last exit, before the STOP record. */
	lbr_unit_drain(b);
	lbr_stop(&u->lbr);
	trace_pmc_disarm(b, v);
}

/*
 * Every exit of a window drains: without a PMI these are the only read
 * points (the exit cleared DEBUGCTL, the stack is as the guest left it).
 */
static uint32_t lbr_exit_drain(struct trace_bcpu *b, struct trace_view *v)
{
	if (b->pmc_on &&
	    (hw_rdmsr(MSR_IA32_PERF_GLOBAL_STATUS) & ((1ull << b->pmc_idx) | LBR_GLOBAL_STATUS_LBR_FRZ))) {
		/* overflowed before this exit: its PMI is on the way or was taken in root */
		uint64_t other;
		uint32_t r = lbr_pmi_now(b, v, &other);

		return (r & TRACE_DO_STOP_FULL) | ((r & TRACE_DO_PMI_OURS) ? TRACE_DO_PMI_SEEN : 0);
	}
	return lbr_unit_drain(b) ? TRACE_DO_STOP_FULL : TRACE_DO_LIMIT;
}

/* Before every entry: DEBUGCTL.LBR while a window is open, else off. */
static uint32_t lbr_prepare(struct trace_bcpu *b, struct trace_view *v)
{
	struct lbr_unit *u = lbr_unit(b);
	uint64_t dbg = trace_view_get(v, TRACE_VIEW_DEBUGCTL);
	uint64_t want = dbg & ~LBR_DEBUGCTL_OWNED;

	if (b->active)
		want = lbr_guest_debugctl(&u->lbr, want);
	if (want != dbg)
		trace_view_set(v, TRACE_VIEW_DEBUGCTL, want);
	lbr_unit_set_ctl(b, v, b->active);
	return 0;
}

static uint32_t lbr_pmi_check(struct trace_bcpu *b, struct trace_view *v, uint64_t *guest)
{
	if (!b->pmc_on)
		return 0;
	return lbr_pmi_now(b, v, guest);
}

static void lbr_log_stop(struct trace_bcpu *b, const char *trig)
{
	struct lbr_unit *u = lbr_unit(b);

	log_info("trace: cpu %u: window %llu stopped (%s): %llu branches, %llu filtered, %llu dropped, %llu reads, %llu full reads (older branches lost); ring lost %llu records",
		 b->index, (unsigned long long)b->windows, trig,
		 (unsigned long long)b->window_branches,
		 (unsigned long long)u->lbr.stats.filtered,
		 (unsigned long long)u->lbr.stats.dropped,
		 (unsigned long long)u->lbr.stats.reads,
		 (unsigned long long)u->lbr.stats.full_reads,
		 (unsigned long long)b->ring->lost_records);
}

/* The machine can (trace_caps, decoded at boot from the boot CPU). */
static bool lbr_caps_ok(const struct trace_caps *tc)
{
	return tc->lbr;
}

const struct trace_backend trace_backend_LBR = {
	.name = "lbr",
	.source = TV_SOURCE_LBR,
	.debugctl_owned = LBR_DEBUGCTL_OWNED,
	.state_bytes = sizeof(struct lbr_unit),
	.msr_owned = TRACE_OWN_LBR,
	/* arch LBR: IA32_LBR_CTL loaded on entry, cleared on exit */
	.entry_ctls = ENTRY_LOAD_LBR_CTL,
	.exit_ctls = EXIT_CLEAR_LBR_CTL,
	/* the counter counts guest branches only */
	.pmi_entry_ctls = ENTRY_LOAD_PERF_GLOBAL_CTRL,
	.pmi_exit_ctls = EXIT_LOAD_PERF_GLOBAL_CTRL,
	.caps_ok = lbr_caps_ok,
	.usable = lbr_unit_usable,
	.open = lbr_open,
	.close = lbr_close,
	.drain = lbr_exit_drain,
	.prepare = lbr_prepare,
	.pmi_check = lbr_pmi_check,
	.log_stop = lbr_log_stop,
};
