/* SPDX-License-Identifier: MIT */
/*
 * memtest.c - the guest of the memory-access tracing scenario
 * (tests/bochs/mem-watch.sh), started by tracevisor's chainload.
 *
 * It asks tracevisor, by hypercall, to watch the first 256 bytes of a
 * page-aligned buffer (a linear range: tracevisor translates it through
 * the firmware's page tables) under the label "tvm_buf", then runs
 * mem_code.S's tvm_run on the BSP and on one AP at the same time: phase A
 * concurrently (false sharing on line 0, a locked counter on line 1, a
 * collateral store outside the watched range on the same page), phase B
 * turn by turn (a fixed order of accesses over both CPUs).  It prints
 * what the scenario needs to compute every expected access:
 *   "TVM: watch id N status S buf 0xB"
 *   "TVM: cpu C: run at 0xR status S"   (C: 0 BSP, 1 AP)
 *   "TVM: counter N" (the XADD counter at the end: 2 * A)
 *   "TVM-OK"
 * and powers the machine off.
 */
#include <efi.h>
#include <stdint.h>

#include "boot/mp_services.h"
#include "vmm/hw/hw.h"
#include "tests/payload/guest_out.h"
#include "vmm/exit/hypercall.h"

#define TVM_A_ITERS 32
#define TVM_B_STEPS 8
#define TVM_WATCH_BYTES 256
#define AP_TIMEOUT_US 60000000

uint64_t tvm_run(uint64_t *buf, uint64_t cpu, volatile uint64_t *turn,
		 uint64_t a_iters, uint64_t b_steps);
int64_t tvm_hcall(uint64_t fn, uint64_t rbx, uint64_t rcx, uint64_t rdx, const char label[16]);

static uint64_t tvm_buf[1024] __attribute__((aligned(4096)));
/* The turn word of phase B, on a page of its own (never watched). */
static volatile uint64_t tvm_turn[512] __attribute__((aligned(4096)));
static volatile uint64_t ap_status = ~0ull, ap_done;

static EFI_SYSTEM_TABLE *st;

static void say(const char *s)
{
	com1_puts(s);
	com1_puts("\r\n");
}

static void EFIAPI ap_run(void *arg)
{
	(void)arg;
	ap_status = tvm_run(tvm_buf, 1, tvm_turn, TVM_A_ITERS, TVM_B_STEPS);
	__atomic_store_n(&ap_done, 1, __ATOMIC_RELEASE);
}

static void EFIAPI no_notify(EFI_EVENT ev, void *ctx)
{
	(void)ev;
	(void)ctx;
}

static void run_line(uint64_t cpu, uint64_t status)
{
	char line[120], *p = append(line, "TVM: cpu ");

	p = dec(p, cpu);
	p = append(p, ": run at ");
	p = hex(p, (uint64_t)(uintptr_t)tvm_run);
	p = append(p, " status ");
	hex(p, status);
	say(line);
}

static void power_off(void)
{
	st->BootServices->Stall(20000);
	st->RuntimeServices->ResetSystem(EfiResetShutdown, EFI_SUCCESS, 0, NULL);
	for (const char *s = "Shutdown"; *s; s++)
		hw_outb(0x8900, (uint8_t)*s);
	say("TVM: power-off failed");
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab);

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	static const char label[16] = "tvm_buf";
	EFI_GUID guid = TV_MP_SERVICES_GUID;
	struct tv_mp_services *mp = NULL;
	struct hw_cpuid_regs r;
	EFI_EVENT ev = NULL;
	char line[120], *p;
	uint64_t bsp_status, t0;
	int64_t id;
	UINTN n = 0, enabled = 0, self = 0, ap = 0;

	(void)image;
	st = systab;
	hw_cpuid(TV_CPUID_LEAF_SIGNATURE, 0, &r);
	if (r.ebx != 0x63617274u) {   /* "trac" */
		say("TVM: no tracevisor");
		power_off();
		return EFI_UNSUPPORTED;
	}
	if (EFI_ERROR(st->BootServices->LocateProtocol(&guid, NULL, (void **)&mp)) || !mp) {
		say("TVM: no MP services");
		power_off();
		return EFI_UNSUPPORTED;
	}
	mp->get_number_of_processors(mp, &n, &enabled);
	mp->who_am_i(mp, &self);
	ap = self == 0 ? 1 : 0;
	tvm_turn[0] = 0;
	id = tvm_hcall(TV_HC_MEM_WATCH, (uint64_t)(uintptr_t)tvm_buf, TVM_WATCH_BYTES,
		       TV_HC_MEM_READ | TV_HC_MEM_WRITE, label);
	p = append(line, "TVM: watch id ");
	p = dec(p, id < 0 ? 0 : (uint64_t)id);
	p = append(p, " status ");
	p = hex(p, (uint64_t)id);
	p = append(p, " buf ");
	hex(p, (uint64_t)(uintptr_t)tvm_buf);
	say(line);

	/* The AP first (it waits for its turn in phase B), then the BSP. */
	if (n < 2 ||
	    EFI_ERROR(st->BootServices->CreateEvent(EVT_NOTIFY_SIGNAL, TPL_CALLBACK, no_notify, NULL, &ev)) ||
	    EFI_ERROR(mp->startup_this_ap(mp, ap_run, ap, ev, AP_TIMEOUT_US, NULL, NULL))) {
		say("TVM: the AP did not start");
		power_off();
		return EFI_DEVICE_ERROR;
	}
	bsp_status = tvm_run(tvm_buf, 0, tvm_turn, TVM_A_ITERS, TVM_B_STEPS);
	t0 = hw_rdtsc();
	while (!__atomic_load_n(&ap_done, __ATOMIC_ACQUIRE) && hw_rdtsc() - t0 < (1ull << 36))
		hw_pause();
	run_line(0, bsp_status);
	run_line(1, __atomic_load_n(&ap_done, __ATOMIC_ACQUIRE) ? ap_status : ~0ull);
	p = append(line, "TVM: counter ");
	dec(p, tvm_buf[8]);
	say(line);
	say("TVM-OK");
	power_off();
	return EFI_SUCCESS;
}
