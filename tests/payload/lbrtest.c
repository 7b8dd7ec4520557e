/* SPDX-License-Identifier: MIT */
/*
 * lbrtest.c - guest program for the Bochs trace-hardware model test
 * (tests/bochs/lbr-model.sh, docs/BOCHS-MODEL.md).  A UEFI application
 * started directly by OVMF (no tracevisor): it runs the known branches of
 * lbr_branches.S with the model's LBR and BTF on and prints what the
 * hardware recorded on COM1, one line per fact, for the script to compare
 * with the branches the code must take:
 *
 *   LBRTEST base lbrt_run 0xADDR             where the image was loaded
 *   LBRTEST cpuid pdcm N perfcap 0xV         CPUID.1:ECX.PDCM, IA32_PERF_CAPABILITIES
 *   LBRTEST run NAME select 0xS tos N        one run of lbrt_run with LBR_SELECT = S
 *   LBRTEST lbr NAME I 0xFROM 0xTO 0xINFO    entry I (0 = newest) of that run
 *   LBRTEST btf count N                      #DBs seen by btft_db
 *   LBRTEST btf I 0xRIP 0xFROM 0xDEBUGCTL    #DB I: interrupted RIP, newest LBR FROM, DEBUGCTL in the handler
 *   LBRTEST done
 */
#include <efi.h>
#include <stdint.h>

#include "vmm/hw/hw.h"
#include "tests/payload/guest_out.h"

#define LBR_DEPTH 32
#define MSR_LBR_SELECT 0x1c8
#define MSR_LASTBRANCH_TOS 0x1c9
#define MSR_DEBUGCTL 0x1d9
#define MSR_PERF_CAPABILITIES 0x345
#define MSR_FROM_0 0x680
#define MSR_TO_0 0x6c0
#define MSR_INFO_0 0xdc0

void lbrt_run(void);
void btft_run(void);
void btft_db(void);
extern uint64_t btft_count, btft_rip[64], btft_from[64], btft_ctl[64];

static void say(const char *s)
{
	com1_puts(s);
	com1_puts("\r\n");
}

/* Empty the stack so that entries the run did not write read as 0. */
static void lbr_clear(void)
{
	for (uint32_t i = 0; i < LBR_DEPTH; i++) {
		hw_wrmsr(MSR_FROM_0 + i, 0);
		hw_wrmsr(MSR_TO_0 + i, 0);
		hw_wrmsr(MSR_INFO_0 + i, 0);
	}
	hw_wrmsr(MSR_LASTBRANCH_TOS, 0);
}

static void lbr_run(const char *name, uint64_t select)
{
	char line[160], *p;
	uint64_t tos;

	lbr_clear();
	hw_wrmsr(MSR_LBR_SELECT, select);
	lbrt_run();
	tos = hw_rdmsr(MSR_LASTBRANCH_TOS);
	p = append(line, "LBRTEST run ");
	p = append(p, name);
	p = append(p, " select ");
	p = hex(p, select);
	p = append(p, " tos ");
	dec(p, tos);
	say(line);
	for (uint32_t i = 0; i < LBR_DEPTH; i++) {
		uint32_t n = (uint32_t)(tos - i) % LBR_DEPTH;

		p = append(line, "LBRTEST lbr ");
		p = append(p, name);
		p = append(p, " ");
		p = dec(p, i);
		p = append(p, " ");
		p = hex(p, hw_rdmsr(MSR_FROM_0 + n));
		p = append(p, " ");
		p = hex(p, hw_rdmsr(MSR_TO_0 + n));
		p = append(p, " ");
		hex(p, hw_rdmsr(MSR_INFO_0 + n));
		say(line);
	}
}

/* An IDT interrupt gate for vector 1 pointing at btft_db (SDM 3A 6.14.1). */
static void btf_run(void)
{
	struct hw_dtr idtr;
	uint64_t *gate, saved[2], h = (uint64_t)(uintptr_t)btft_db;
	char line[160], *p;

	hw_sidt(&idtr);
	gate = (uint64_t *)(uintptr_t)(idtr.base + 16);
	saved[0] = gate[0];
	saved[1] = gate[1];
	gate[0] = (h & 0xffff) | ((uint64_t)hw_read_selector(HW_SEG_CS) << 16) |
		  ((uint64_t)0x8e << 40) | (((h >> 16) & 0xffff) << 48);
	gate[1] = h >> 32;
	lbr_clear();
	hw_wrmsr(MSR_LBR_SELECT, 0);
	btft_run();
	gate[0] = saved[0];
	gate[1] = saved[1];

	p = append(line, "LBRTEST btf count ");
	dec(p, btft_count);
	say(line);
	for (uint64_t i = 0; i < btft_count && i < 64; i++) {
		p = append(line, "LBRTEST btf ");
		p = dec(p, i);
		p = append(p, " ");
		p = hex(p, btft_rip[i]);
		p = append(p, " ");
		p = hex(p, btft_from[i]);
		p = append(p, " ");
		hex(p, btft_ctl[i]);
		say(line);
	}
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab);

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	struct hw_cpuid_regs r;
	char line[160], *p;

	(void)image;
	p = append(line, "LBRTEST base lbrt_run ");
	hex(p, (uint64_t)(uintptr_t)lbrt_run);
	say(line);
	hw_cpuid(1, 0, &r);
	p = append(line, "LBRTEST cpuid pdcm ");
	p = dec(p, (r.ecx >> 15) & 1);
	p = append(p, " perfcap ");
	hex(p, hw_rdmsr(MSR_PERF_CAPABILITIES));
	say(line);

	/* No interrupt may land in the runs: their records would be in the stack. */
	hw_cli();
	lbr_run("all", 0);
	lbr_run("nojcc", 1u << 2);         /* JCC suppressed */
	lbr_run("notring0", 1u << 0);      /* CPL_EQ_0: nothing here ends in ring 3 */
	lbr_run("notuser", 1u << 1);       /* CPL_NEQ_0: everything here is ring 0 */
	btf_run();
	hw_wrmsr(MSR_DEBUGCTL, 0);
	say("LBRTEST done");

	systab->RuntimeServices->ResetSystem(EfiResetShutdown, EFI_SUCCESS, 0, NULL);
	for (const char *s = "Shutdown"; *s; s++)
		hw_outb(0x8900, (uint8_t)*s);
	for (;;)
		hw_halt();
}
