/* SPDX-License-Identifier: MIT */
/*
 * vmx_check.c - software VM-entry checks (SDM 3C 27.2 controls and host
 * state, 27.3.1 guest state, 27.3.1.5 VMCS link pointer).
 */
#include "vmm/vmx/vmx_check.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "vmm/lib/segment.h"
#include "vmm/vmx/vcpu.h"
#include "vmm/vmx/vmx.h"

#define FAIL(...)                                 \
	do {                                      \
		snprintf(why, whylen, __VA_ARGS__);  \
		return -1;                        \
	} while (0)

static uint64_t rd(uint32_t field)
{
	uint64_t v = 0;

	vmcs_read(field, &v);
	return v;
}

static bool canonical(uint64_t a)
{
	return ((int64_t)(a << 16) >> 16) == (int64_t)a;
}

/* Controls must have the must-be-1 bits set and no bit outside may-be-1. */
static int check_ctl(const char *name, uint64_t cap, uint64_t value, char *why, size_t whylen)
{
	uint32_t must1 = (uint32_t)cap, may1 = (uint32_t)(cap >> 32);
	uint32_t v = (uint32_t)value;

	if ((v & must1) != must1)
		FAIL("SDM 27.2.1.1: %s = %#x lacks required bits %#x", name, v, must1 & ~v);
	if (v & ~may1)
		FAIL("SDM 27.2.1.1: %s = %#x sets unsupported bits %#x", name, v, v & ~may1);
	return 0;
}

static int check_controls(const struct vmx_caps *c, char *why, size_t whylen)
{
	uint64_t proc = rd(VMCS_PROC_BASED_CTLS), proc2 = 0, eptp;

	if (check_ctl("pin-based controls", c->pin, rd(VMCS_PIN_BASED_CTLS), why, whylen) ||
	    check_ctl("primary processor-based controls", c->proc, proc, why, whylen) ||
	    check_ctl("VM-exit controls", c->exit, rd(VMCS_EXIT_CTLS), why, whylen) ||
	    check_ctl("VM-entry controls", c->entry, rd(VMCS_ENTRY_CTLS), why, whylen))
		return -1;
	if (proc & CPU_ACTIVATE_SECONDARY_CONTROLS) {
		proc2 = rd(VMCS_PROC_BASED_CTLS2);
		if (check_ctl("secondary processor-based controls", c->proc2, proc2, why, whylen))
			return -1;
	}
	if (rd(VMCS_CR3_TARGET_COUNT) > VMX_MISC_CR3_TARGETS(c->misc))
		FAIL("SDM 27.2.1.1: CR3-target count above IA32_VMX_MISC's %u",
		     VMX_MISC_CR3_TARGETS(c->misc));
	if ((proc & CPU_USE_MSR_BITMAPS) && (rd(VMCS_MSR_BITMAP) & 0xfff))
		FAIL("SDM 27.2.1.1: MSR-bitmap address %#llx not 4 KiB aligned",
		     (unsigned long long)rd(VMCS_MSR_BITMAP));
	if ((proc2 & CPU2_UNRESTRICTED_GUEST) && !(proc2 & CPU2_ENABLE_EPT))
		FAIL("SDM 27.2.1.1: unrestricted guest requires enable EPT");
	if ((proc2 & CPU2_ENABLE_VPID) && rd(VMCS_VPID) == 0)
		FAIL("SDM 27.2.1.1: VPID is 0 with enable VPID set");
	if (proc2 & CPU2_ENABLE_EPT) {
		eptp = rd(VMCS_EPT_POINTER);
		if ((eptp & 7) == 0 && !(c->ept_vpid & EPT_CAP_MEMTYPE_UC))
			FAIL("SDM 27.2.1.1: EPTP memory type UC not supported");
		if ((eptp & 7) == 6 && !(c->ept_vpid & EPT_CAP_MEMTYPE_WB))
			FAIL("SDM 27.2.1.1: EPTP memory type WB not supported");
		if ((eptp & 7) != 0 && (eptp & 7) != 6)
			FAIL("SDM 27.2.1.1: EPTP memory type %llu is neither UC nor WB",
			     (unsigned long long)(eptp & 7));
		if (((eptp >> 3) & 7) != 3)
			FAIL("SDM 27.2.1.1: EPTP page-walk length field %llu, 4-level walk needs 3",
			     (unsigned long long)((eptp >> 3) & 7));
		if (eptp & 0xf80)
			FAIL("SDM 27.2.1.1: EPTP reserved bits 11:7 set (%#llx)", (unsigned long long)eptp);
	}
	return 0;
}

static int check_host(const struct vmx_caps *c, char *why, size_t whylen)
{
	uint64_t cr0 = rd(VMCS_HOST_CR0), cr4 = rd(VMCS_HOST_CR4);
	bool host64 = rd(VMCS_EXIT_CTLS) & EXIT_HOST_ADDRESS_SPACE_SIZE;
	uint64_t efer = rd(VMCS_HOST_IA32_EFER);
	static const uint32_t sels[] = { VMCS_HOST_ES_SELECTOR, VMCS_HOST_CS_SELECTOR,
					 VMCS_HOST_SS_SELECTOR, VMCS_HOST_DS_SELECTOR,
					 VMCS_HOST_FS_SELECTOR, VMCS_HOST_GS_SELECTOR,
					 VMCS_HOST_TR_SELECTOR };
	static const uint32_t bases[] = { VMCS_HOST_FS_BASE, VMCS_HOST_GS_BASE, VMCS_HOST_TR_BASE,
					  VMCS_HOST_GDTR_BASE, VMCS_HOST_IDTR_BASE, VMCS_HOST_RIP };

	if ((cr0 & c->cr0_fixed0) != c->cr0_fixed0 || (cr0 & ~c->cr0_fixed1))
		FAIL("SDM 27.2.2: host CR0 %#llx violates IA32_VMX_CR0_FIXED0/1", (unsigned long long)cr0);
	if ((cr4 & c->cr4_fixed0) != c->cr4_fixed0 || (cr4 & ~c->cr4_fixed1))
		FAIL("SDM 27.2.2: host CR4 %#llx violates IA32_VMX_CR4_FIXED0/1", (unsigned long long)cr4);
	if (host64 && !(cr4 & (1ull << 5)))
		FAIL("SDM 27.2.2: host CR4.PAE must be 1 with host address-space size");
	for (size_t i = 0; i < sizeof(sels) / sizeof(sels[0]); i++)
		if (rd(sels[i]) & 7)
			FAIL("SDM 27.2.3: host selector field %#x = %#llx has RPL or TI set", sels[i],
			     (unsigned long long)rd(sels[i]));
	if (rd(VMCS_HOST_CS_SELECTOR) == 0)
		FAIL("SDM 27.2.3: host CS selector is 0");
	if (rd(VMCS_HOST_TR_SELECTOR) == 0)
		FAIL("SDM 27.2.3: host TR selector is 0");
	if (!host64 && rd(VMCS_HOST_SS_SELECTOR) == 0)
		FAIL("SDM 27.2.3: host SS selector is 0 without host address-space size");
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++)
		if (!canonical(rd(bases[i])))
			FAIL("SDM 27.2.3: host field %#x = %#llx not canonical", bases[i],
			     (unsigned long long)rd(bases[i]));
	if ((rd(VMCS_EXIT_CTLS) & EXIT_LOAD_EFER) &&
	    (!!(efer & EFER_LMA) != host64 || !!(efer & EFER_LME) != host64))
		FAIL("SDM 27.2.2: host EFER %#llx LMA/LME disagree with host address-space size",
		     (unsigned long long)efer);
	return 0;
}

static const struct {
	const char *name;
	uint32_t sel, base, limit, ar;
} gsegs[] = {
	{ "ES", VMCS_GUEST_ES_SELECTOR, VMCS_GUEST_ES_BASE, VMCS_GUEST_ES_LIMIT, VMCS_GUEST_ES_AR },
	{ "CS", VMCS_GUEST_CS_SELECTOR, VMCS_GUEST_CS_BASE, VMCS_GUEST_CS_LIMIT, VMCS_GUEST_CS_AR },
	{ "SS", VMCS_GUEST_SS_SELECTOR, VMCS_GUEST_SS_BASE, VMCS_GUEST_SS_LIMIT, VMCS_GUEST_SS_AR },
	{ "DS", VMCS_GUEST_DS_SELECTOR, VMCS_GUEST_DS_BASE, VMCS_GUEST_DS_LIMIT, VMCS_GUEST_DS_AR },
	{ "FS", VMCS_GUEST_FS_SELECTOR, VMCS_GUEST_FS_BASE, VMCS_GUEST_FS_LIMIT, VMCS_GUEST_FS_AR },
	{ "GS", VMCS_GUEST_GS_SELECTOR, VMCS_GUEST_GS_BASE, VMCS_GUEST_GS_LIMIT, VMCS_GUEST_GS_AR },
};

/* Limit and granularity agree (27.3.1.2, last items for every segment). */
static bool limit_matches_g(uint32_t limit, uint32_t ar)
{
	bool g = ar & (1u << 15);

	if ((limit & 0xfff) != 0xfff && g)
		return false;
	if ((limit & 0xfff00000u) && !g)
		return false;
	return true;
}

static int check_guest_segments(bool ia32e, bool unrestricted, char *why, size_t whylen)
{
	uint32_t tr_ar = (uint32_t)rd(VMCS_GUEST_TR_AR), ldtr_ar = (uint32_t)rd(VMCS_GUEST_LDTR_AR);

	for (size_t i = 0; i < sizeof(gsegs) / sizeof(gsegs[0]); i++) {
		uint32_t ar = (uint32_t)rd(gsegs[i].ar), type = ar & 0xf;
		uint32_t limit = (uint32_t)rd(gsegs[i].limit);
		bool is_cs = gsegs[i].sel == VMCS_GUEST_CS_SELECTOR;
		bool is_ss = gsegs[i].sel == VMCS_GUEST_SS_SELECTOR;

		if ((ar & SEG_AR_UNUSABLE) && !is_cs)
			continue;
		if (ar & 0xfffe0f00u)
			FAIL("SDM 27.3.1.2: guest %s access rights %#x: reserved bits set", gsegs[i].name, ar);
		if (!(type & 1))
			FAIL("SDM 27.3.1.2: guest %s access rights %#x: type %u not accessed", gsegs[i].name, ar, type);
		if (!(ar & (1u << 4)))
			FAIL("SDM 27.3.1.2: guest %s access rights %#x: S must be 1", gsegs[i].name, ar);
		if (!(ar & (1u << 7)))
			FAIL("SDM 27.3.1.2: guest %s access rights %#x: not present", gsegs[i].name, ar);
		if (is_cs && !(type == 9 || type == 11 || type == 13 || type == 15 ||
			       (unrestricted && type == 3)))
			FAIL("SDM 27.3.1.2: guest CS type %u must be 9, 11, 13, 15 (or 3 unrestricted)", type);
		if (is_ss && type != 3 && type != 7)
			FAIL("SDM 27.3.1.2: guest SS type %u must be 3 or 7", type);
		if (!is_cs && !is_ss && (type & 8) && !(type & 2))
			FAIL("SDM 27.3.1.2: guest %s is an execute-only code segment (type %u)", gsegs[i].name, type);
		if (!limit_matches_g(limit, ar))
			FAIL("SDM 27.3.1.2: guest %s limit %#x disagrees with G in %#x", gsegs[i].name, limit, ar);
		if (is_cs && ia32e && (ar & (1u << 13)) && (ar & (1u << 14)))
			FAIL("SDM 27.3.1.2: guest CS has both L and D/B set in IA-32e mode");
	}
	if (tr_ar & SEG_AR_UNUSABLE)
		FAIL("SDM 27.3.1.2: guest TR must be usable");
	if (rd(VMCS_GUEST_TR_SELECTOR) & 4)
		FAIL("SDM 27.3.1.2: guest TR selector has TI set");
	if (ia32e ? (tr_ar & 0xf) != 11 : ((tr_ar & 0xf) != 3 && (tr_ar & 0xf) != 11))
		FAIL("SDM 27.3.1.2: guest TR type %u must be 11%s", tr_ar & 0xf, ia32e ? " in IA-32e mode" : " or 3");
	if ((tr_ar & (1u << 4)) || !(tr_ar & (1u << 7)))
		FAIL("SDM 27.3.1.2: guest TR access rights %#x: must be a present system descriptor", tr_ar);
	if (!limit_matches_g((uint32_t)rd(VMCS_GUEST_TR_LIMIT), tr_ar))
		FAIL("SDM 27.3.1.2: guest TR limit disagrees with G");
	if (!(ldtr_ar & SEG_AR_UNUSABLE) && ((ldtr_ar & 0xf) != 2 || (ldtr_ar & (1u << 4)) ||
					     !(ldtr_ar & (1u << 7))))
		FAIL("SDM 27.3.1.2: usable guest LDTR access rights %#x: must be a present LDT", ldtr_ar);
	return 0;
}

static int check_guest(const struct vmx_caps *c, char *why, size_t whylen)
{
	uint64_t entry = rd(VMCS_ENTRY_CTLS);
	uint64_t proc2 = (rd(VMCS_PROC_BASED_CTLS) & CPU_ACTIVATE_SECONDARY_CONTROLS) ?
				 rd(VMCS_PROC_BASED_CTLS2) : 0;
	bool unrestricted = proc2 & CPU2_UNRESTRICTED_GUEST;
	bool ia32e = entry & ENTRY_IA32E_MODE_GUEST;
	uint64_t cr0 = rd(VMCS_GUEST_CR0), cr4 = rd(VMCS_GUEST_CR4);
	uint64_t fixed0 = c->cr0_fixed0 & ~(unrestricted ? (CR0_PE | CR0_PG) : 0);
	uint64_t rflags = rd(VMCS_GUEST_RFLAGS), efer = rd(VMCS_GUEST_IA32_EFER);

	if ((cr0 & fixed0) != fixed0 || (cr0 & ~c->cr0_fixed1))
		FAIL("SDM 27.3.1.1: guest CR0 %#llx violates IA32_VMX_CR0_FIXED0/1", (unsigned long long)cr0);
	if ((cr0 & CR0_PG) && !(cr0 & CR0_PE))
		FAIL("SDM 27.3.1.1: guest CR0.PG set without CR0.PE");
	if ((cr4 & c->cr4_fixed0) != c->cr4_fixed0 || (cr4 & ~c->cr4_fixed1))
		FAIL("SDM 27.3.1.1: guest CR4 %#llx violates IA32_VMX_CR4_FIXED0/1", (unsigned long long)cr4);
	if (ia32e && (!(cr0 & CR0_PG) || !(cr4 & (1ull << 5))))
		FAIL("SDM 27.3.1.1: IA-32e mode guest needs CR0.PG and CR4.PAE");
	if ((entry & ENTRY_LOAD_DEBUG_CONTROLS) && (rd(VMCS_GUEST_DR7) >> 32))
		FAIL("SDM 27.3.1.1: guest DR7 bits 63:32 must be 0");
	if (entry & ENTRY_LOAD_EFER) {
		if (!!(efer & EFER_LMA) != ia32e)
			FAIL("SDM 27.3.1.1: guest EFER.LMA (%#llx) differs from the IA-32e mode guest control",
			     (unsigned long long)efer);
		if ((cr0 & CR0_PG) && !!(efer & EFER_LME) != !!(efer & EFER_LMA))
			FAIL("SDM 27.3.1.1: guest EFER.LME differs from LMA with paging on");
	}
	if (!(rflags & 2) || (rflags & ((1ull << 3) | (1ull << 5) | (1ull << 15) | ~0x3fffffull)))
		FAIL("SDM 27.3.1.4: guest RFLAGS %#llx: bit 1 must be 1, bits 3, 5, 15, 63:22 must be 0",
		     (unsigned long long)rflags);
	if (ia32e && (rflags & (1ull << 17)))
		FAIL("SDM 27.3.1.4: guest RFLAGS.VM set in IA-32e mode");
	if (!canonical(rd(VMCS_GUEST_GDTR_BASE)) || !canonical(rd(VMCS_GUEST_IDTR_BASE)))
		FAIL("SDM 27.3.1.3: guest GDTR/IDTR base not canonical");
	if ((rd(VMCS_GUEST_GDTR_LIMIT) | rd(VMCS_GUEST_IDTR_LIMIT)) >> 16)
		FAIL("SDM 27.3.1.3: guest GDTR/IDTR limit above 0xffff");
	if (rd(VMCS_GUEST_ACTIVITY_STATE) > ACTIVITY_WAIT_SIPI)
		FAIL("SDM 27.3.1.5: guest activity state %llu invalid",
		     (unsigned long long)rd(VMCS_GUEST_ACTIVITY_STATE));
	if (rd(VMCS_GUEST_INTERRUPTIBILITY) & ~0x1full)
		FAIL("SDM 27.3.1.5: guest interruptibility reserved bits set");
	if (rd(VMCS_VMCS_LINK_POINTER) != ~0ull)
		FAIL("SDM 27.3.1.5: VMCS link pointer must be FFFFFFFF_FFFFFFFFH without shadowing");
	return check_guest_segments(ia32e, unrestricted, why, whylen);
}

int vmx_check_vmcs(const struct vmx_caps *caps, char *why, size_t whylen)
{
	if (check_controls(caps, why, whylen) || check_host(caps, why, whylen) ||
	    check_guest(caps, why, whylen))
		return -1;
	return 0;
}
