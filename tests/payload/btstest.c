/* SPDX-License-Identifier: MIT */
/*
 * btstest.c - guest program for the Bochs BTS model test
 * (tests/bochs/bts-model.sh, docs/BOCHS-MODEL.md).  A UEFI application
 * started directly by OVMF (no tracevisor): it runs the known branches of
 * lbr_branches.S (as btst_*, bts_branches.S) with the Branch Trace Store
 * pointed at a DS save area of its own, under several IA32_DEBUGCTL
 * settings and buffer shapes, and prints on COM1 what the modelled
 * hardware stored, one line per fact:
 *
 *   BTSTEST base btst_run 0xADDR                  where the image was loaded
 *   BTSTEST cpuid ds N dtes64 N dscpl N misc 0xV  CPUID.1 DS/DTES64/DS-CPL, IA32_MISC_ENABLE
 *   BTSTEST dsarea 0xV gp N                       IA32_DS_AREA after a non-canonical write, #GPs
 *   BTSTEST run NAME ctl 0xC slots N base 0xB index 0xI pending N pmi N status 0xS
 *       one run: DEBUGCTL C, a buffer of N records; the BTS index after
 *       it, the PMI vector pending in the local APIC's IRR (interrupts are
 *       off), PMIs taken in an STI window after it (BTINT runs only: the
 *       firmware's interrupts it lets in would train the indirect-branch
 *       predictor with their own branches), IA32_PERF_GLOBAL_STATUS
 *   BTSTEST rec NAME I 0xFROM 0xTO 0xFLAGS        slot I of that buffer (2 past its end)
 *   BTSTEST pmi rip 0xR status 0xS after-reset 0xS lvt 0xL
 *       where the PMI landed, IA32_PERF_GLOBAL_STATUS before and after
 *       writing ClrOvfBuffer, the LVT performance monitoring entry after
 *       the PMI (delivery sets its mask bit)
 *   BTSTEST done
 *
 * Buffer slots are filled with FILL before every run: a slot that still
 * holds it was not written.
 */
#include <efi.h>
#include <stdint.h>

#include "vmm/hw/hw.h"
#include "tests/payload/guest_efi.h"
#include "tests/payload/guest_helpers.h"
#include "tests/payload/guest_idt.h"
#include "tests/payload/guest_lapic.h"
#include "tests/payload/guest_out.h"

#define MSR_MISC_ENABLE 0x1a0
#define MSR_DEBUGCTL 0x1d9
#define MSR_PERF_GLOBAL_STATUS 0x38e
#define MSR_PERF_GLOBAL_STATUS_RESET 0x390
#define MSR_DS_AREA 0x600

#define DEBUGCTL_TR (1u << 6)
#define DEBUGCTL_BTS (1u << 7)
#define DEBUGCTL_BTINT (1u << 8)
#define DEBUGCTL_BTS_OFF_OS (1u << 9)
#define DEBUGCTL_BTS_OFF_USR (1u << 10)
#define OVF_BUFFER (1ull << 62)

#define PMI_VECTOR 0xe5
#define FILL 0x5a5a5a5a5a5a5a5aull
#define MAX_SLOTS 32
#define GUARD_SLOTS 2

/* SDM 3B "BTS and DS Save Area": 64-bit DS buffer management area and
 * 64-bit branch record. */
struct ds_area {
	uint64_t bts_buffer_base;
	uint64_t bts_index;
	uint64_t bts_absolute_maximum;
	uint64_t bts_interrupt_threshold;
	uint64_t pebs[6];
};
_Static_assert(sizeof(struct ds_area) == 0x50, "DS management area, 64-bit layout");

struct bts_record {
	uint64_t from;
	uint64_t to;
	uint64_t flags; /* bit 4: predicted */
};
_Static_assert(sizeof(struct bts_record) == 24, "64-bit BTS record");

void btst_run(uint64_t debugctl);
void btst_sti_window(void);
void btst_pmi(void);
extern uint64_t btst_pmi_count, btst_pmi_rip;

static struct ds_area *ds;
static struct bts_record *buf;

static void say(const char *s)
{
	com1_puts(s);
	com1_puts("\r\n");
}

/* One run: a buffer of 'slots' records (threshold at record 'thr'), the
 * sequence under 'ctl', then an STI window for a pending PMI. */
static void bts_run(const char *name, uint64_t ctl, uint32_t slots, uint32_t thr)
{
	char line[200], *p;
	uint64_t status;
	int pending;

	for (uint32_t i = 0; i < MAX_SLOTS + GUARD_SLOTS; i++)
		buf[i].from = buf[i].to = buf[i].flags = FILL;
	ds->bts_buffer_base = (uint64_t)(uintptr_t)buf;
	ds->bts_index = ds->bts_buffer_base;
	ds->bts_absolute_maximum = ds->bts_buffer_base + slots * sizeof(struct bts_record);
	ds->bts_interrupt_threshold = ds->bts_buffer_base + thr * sizeof(struct bts_record);
	hw_wrmsr(MSR_DS_AREA, (uint64_t)(uintptr_t)ds);
	hw_wrmsr(MSR_PERF_GLOBAL_STATUS_RESET, OVF_BUFFER);
	btst_pmi_count = 0;

	btst_run(ctl);
	status = hw_rdmsr(MSR_PERF_GLOBAL_STATUS);
	pending = lapic_irr(PMI_VECTOR);
	if (ctl & DEBUGCTL_BTINT) {
		btst_sti_window();
		if (btst_pmi_count)
			lapic_eoi();
	}

	p = append(line, "BTSTEST run ");
	p = append(p, name);
	p = append(p, " ctl ");
	p = hex(p, ctl);
	p = append(p, " slots ");
	p = dec(p, slots);
	p = append(p, " base ");
	p = hex(p, ds->bts_buffer_base);
	p = append(p, " index ");
	p = hex(p, ds->bts_index);
	p = append(p, " pending ");
	p = dec(p, (uint64_t)pending);
	p = append(p, " pmi ");
	p = dec(p, btst_pmi_count);
	p = append(p, " status ");
	hex(p, status);
	say(line);
	for (uint32_t i = 0; i < slots + GUARD_SLOTS; i++) {
		p = append(line, "BTSTEST rec ");
		p = append(p, name);
		p = append(p, " ");
		p = dec(p, i);
		p = append(p, " ");
		p = hex(p, buf[i].from);
		p = append(p, " ");
		p = hex(p, buf[i].to);
		p = append(p, " ");
		hex(p, buf[i].flags);
		say(line);
	}
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	struct hw_cpuid_regs r;
	EFI_PHYSICAL_ADDRESS page = 0;
	uint64_t saved_pmi[2], saved_gp[2], status;
	uint32_t saved_lvt;
	char line[200], *p;

	(void)image;
	com1_say_hex("BTSTEST base btst_run ", (uint64_t)(uintptr_t)btst_run);

	/* One page of its own (zeroed) for the DS save area and the buffer:
	 * present, writable, not shared with code (SDM 3B "Setting Up the DS
	 * Save Area"). */
	if (guest_alloc_pages(systab, 1, &page)) {
		say("BTSTEST error no page");
		goto out;
	}
	ds = (struct ds_area *)(uintptr_t)page;
	buf = (struct bts_record *)(uintptr_t)(page + 0x100);

	hw_cpuid(1, 0, &r);
	p = append(line, "BTSTEST cpuid ds ");
	p = dec(p, (r.edx >> 21) & 1);
	p = append(p, " dtes64 ");
	p = dec(p, (r.ecx >> 2) & 1);
	p = append(p, " dscpl ");
	p = dec(p, (r.ecx >> 4) & 1);
	p = append(p, " misc ");
	hex(p, hw_rdmsr(MSR_MISC_ENABLE));
	say(line);

	/* No interrupt may land in the runs: its records would be in the buffer. */
	hw_cli();
	set_gate(13, guest_gp, saved_gp);
	hw_wrmsr(MSR_DS_AREA, 0x1000);
	guest_wrmsr(MSR_DS_AREA, 0x0000800000000000ull); /* non-canonical: #GP */
	p = append(line, "BTSTEST dsarea ");
	p = hex(p, hw_rdmsr(MSR_DS_AREA));
	p = append(p, " gp ");
	dec(p, guest_gp_count);
	say(line);
	restore_gate(13, saved_gp);

	set_gate(PMI_VECTOR, btst_pmi, saved_pmi);
	saved_lvt = lvt_pmi_read();
	lvt_pmi_write(PMI_VECTOR); /* fixed delivery, unmasked */

	bts_run("all", DEBUGCTL_TR | DEBUGCTL_BTS, MAX_SLOTS, MAX_SLOTS + 1);
	bts_run("tronly", DEBUGCTL_TR, MAX_SLOTS, MAX_SLOTS + 1);
	bts_run("btsonly", DEBUGCTL_BTS, MAX_SLOTS, MAX_SLOTS + 1);
	bts_run("offos", DEBUGCTL_TR | DEBUGCTL_BTS | DEBUGCTL_BTS_OFF_OS, MAX_SLOTS, MAX_SLOTS + 1);
	bts_run("offusr", DEBUGCTL_TR | DEBUGCTL_BTS | DEBUGCTL_BTS_OFF_USR, MAX_SLOTS, MAX_SLOTS + 1);
	/* circular: 4 records, a threshold inside the buffer that BTINT=0 ignores */
	bts_run("circ", DEBUGCTL_TR | DEBUGCTL_BTS, 4, 2);
	/* BTINT: 6 records, PMI at the 3rd, nothing stored past the 6th */
	bts_run("int", DEBUGCTL_TR | DEBUGCTL_BTS | DEBUGCTL_BTINT, 6, 3);

	status = hw_rdmsr(MSR_PERF_GLOBAL_STATUS);
	hw_wrmsr(MSR_PERF_GLOBAL_STATUS_RESET, OVF_BUFFER);
	p = append(line, "BTSTEST pmi rip ");
	p = hex(p, btst_pmi_rip);
	p = append(p, " status ");
	p = hex(p, status);
	p = append(p, " after-reset ");
	p = hex(p, hw_rdmsr(MSR_PERF_GLOBAL_STATUS));
	p = append(p, " lvt ");
	hex(p, lvt_pmi_read());
	say(line);

	lvt_pmi_write(saved_lvt);
	restore_gate(PMI_VECTOR, saved_pmi);
	hw_wrmsr(MSR_DS_AREA, 0);
	hw_wrmsr(MSR_DEBUGCTL, 0);
	systab->BootServices->FreePages(page, 1);
	say("BTSTEST done");
out:
	guest_shutdown(systab);
}
