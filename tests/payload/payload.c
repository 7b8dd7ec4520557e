/* SPDX-License-Identifier: MIT */
/*
 * payload.c - a stand-in OS loader for the emulator tiers.
 *
 * Started by tracevisor's chainload, it proves three things the tests
 * check on the serial log: it ran ("TRACEVISOR-PAYLOAD-OK"), who started
 * it (its parent image handle, which must equal the handle tracevisor
 * logged), and that the machine then powers off cleanly.
 */
#include <efi.h>
#include <stdint.h>

#include "boot/mp_services.h"
#include "vmm/hw/hw.h"
#include "tests/payload/guest_out.h"
#include "vmm/exit/hypercall.h"

static EFI_SYSTEM_TABLE *st;
static int have_tracevisor;  /* tracevisor answered the probe hypercall */

static void say(const char *s)
{
	CHAR16 w[160];
	int n = 0;

	com1_puts(s);
	com1_puts("\r\n");
	for (; *s && n < 156; s++)
		w[n++] = (CHAR16)*s;
	w[n++] = '\r';
	w[n++] = '\n';
	w[n] = 0;
	st->ConOut->OutputString(st->ConOut, w);
}

/*
 * Report the hypervisor as a guest sees it: the CPUID leaf, the VMX bit
 * (tracevisor hides it), and - only with tracevisor's signature, since
 * VMCALL faults otherwise - the probe hypercall.
 */
static void probe_hypervisor(void)
{
	struct hw_cpuid_regs r;
	char line[160], sig[13], *p;
	uint64_t in[4] = { TV_HC_PROBE, 0, 0, 0 }, out[4];

	hw_cpuid(1, 0, &r);
	p = append(line, "TRACEVISOR-PAYLOAD: CPUID.1:ECX.VMX=");
	p = append(p, (r.ecx & (1u << 5)) ? "1" : "0");
	say(line);
	hw_cpuid(TV_CPUID_LEAF_SIGNATURE, 0, &r);
	for (int i = 0; i < 4; i++) {
		sig[i] = (char)(r.ebx >> (8 * i));
		sig[4 + i] = (char)(r.ecx >> (8 * i));
		sig[8 + i] = (char)(r.edx >> (8 * i));
	}
	sig[12] = '\0';
	for (int i = 0; i < 12; i++)
		if (sig[i] && (sig[i] < 0x20 || sig[i] > 0x7e))
			sig[i] = '?';
	if (sig[0] != 't' || sig[1] != 'r' || sig[9] != 'r' || sig[10] != '\0') {
		say("TRACEVISOR-PAYLOAD: hypervisor: none");
		return;
	}
	p = append(line, "TRACEVISOR-PAYLOAD: hypervisor leaf: ");
	p = append(p, sig);
	p = append(p, " max ");
	hex(p, r.eax);
	say(line);
	hw_vmcall(in, out);
	have_tracevisor = 1;
	p = append(line, "TRACEVISOR-PAYLOAD: vmcall probe: status ");
	p = hex(p, out[0]);
	p = append(p, " magic ");
	p = hex(p, out[1]);
	p = append(p, " abi ");
	hex(p, out[2]);
	say(line);
}

/* tests/payload/traced.S: a window of known branches, traced by tracevisor. */
uint64_t tv_traced(uint64_t iterations);
#define TRACED_ITERATIONS 64
/*
 * How long the BSP waits for an AP's probe: tracevisor sends the AP's
 * window over the serial port (~23 KB, ~2 s at 115200 baud) before the AP
 * returns, and OVMF resets an AP that overruns its timeout.
 */
#define AP_TIMEOUT_US 30000000

/*
 * Timings for make bench (tests/bench/bench.sh), in TSC ticks: under Bochs
 * the TSC advances one tick per instruction on a one-CPU machine, so these
 * count instructions, the hypervisor's included.
 * "TRACEVISOR-PAYLOAD: timing: 1000 cpuid: T ticks"
 */
#define TIMED_CPUIDS 1000
static void cpuid_timing(void)
{
	struct hw_cpuid_regs r;
	char line[160], *p;
	uint64_t t0 = hw_rdtsc();

	for (int i = 0; i < TIMED_CPUIDS; i++)
		hw_cpuid(0, 0, &r);
	t0 = hw_rdtsc() - t0;
	p = append(line, "TRACEVISOR-PAYLOAD: timing: 1000 cpuid: ");
	p = dec(p, t0);
	append(p, " ticks");
	say(line);
}

/* "TRACEVISOR-PAYLOAD: cpu N: traced window at A, K iterations: status S" */
static void traced_line(char *line, UINTN cpu, uint64_t status)
{
	char *p = append(line, "TRACEVISOR-PAYLOAD: cpu ");

	p = dec(p, cpu);
	p = append(p, ": traced window at ");
	p = hex(p, (uint64_t)(uintptr_t)tv_traced);
	p = append(p, ", ");
	p = dec(p, TRACED_ITERATIONS);
	p = append(p, " iterations: status ");
	hex(p, status);
}

/* What one CPU sees: run on every AP through the MP services. */
struct cpu_view {
	uint32_t leaf1_ecx;
	uint32_t sig_ebx;
	uint64_t traced_status;
};

static void EFIAPI ap_probe(void *arg)
{
	struct cpu_view *v = arg;
	struct hw_cpuid_regs r;

	hw_cpuid(1, 0, &r);
	v->leaf1_ecx = r.ecx;
	hw_cpuid(TV_CPUID_LEAF_SIGNATURE, 0, &r);
	v->sig_ebx = r.ebx;
	/* VMCALL only where tracevisor answers it (it faults on bare metal). */
	if (v->sig_ebx == 0x63617274u)
		v->traced_status = tv_traced(TRACED_ITERATIONS);
}

/* One line per AP: "cpu N: VMX=b hypervisor=tracevisor|none". */
static void probe_aps(void)
{
	EFI_GUID guid = TV_MP_SERVICES_GUID;
	struct tv_mp_services *mp = NULL;
	UINTN n = 0, enabled = 0, self = 0;
	char line[160], *p;

	if (EFI_ERROR(st->BootServices->LocateProtocol(&guid, NULL, (void **)&mp)) || !mp) {
		say("TRACEVISOR-PAYLOAD: no MP services");
		return;
	}
	mp->get_number_of_processors(mp, &n, &enabled);
	mp->who_am_i(mp, &self);
	for (UINTN i = 0; i < n; i++) {
		struct cpu_view v = { 0, 0, ~0ull };
		BOOLEAN finished = FALSE;

		if (i == self)
			continue;
		p = append(line, "TRACEVISOR-PAYLOAD: cpu ");
		p = dec(p, i);
		if (EFI_ERROR(mp->startup_this_ap(mp, ap_probe, i, NULL, AP_TIMEOUT_US, &v, &finished))) {
			append(p, ": did not run");
			say(line);
			continue;
		}
		p = append(p, ": VMX=");
		p = append(p, (v.leaf1_ecx & (1u << 5)) ? "1" : "0");
		p = append(p, " hypervisor=");
		/* "trac" of "tracevisor" */
		append(p, v.sig_ebx == 0x63617274u ? "tracevisor" : "none");
		say(line);
		if (v.sig_ebx == 0x63617274u) {
			traced_line(line, i, v.traced_status);
			say(line);
		}
	}
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab);

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	EFI_GUID li_guid = EFI_LOADED_IMAGE_PROTOCOL_GUID;
	EFI_LOADED_IMAGE_PROTOCOL *li = NULL;
	char line[160], *p;

	st = systab;
	p = append(line, "TRACEVISOR-PAYLOAD: image ");
	p = hex(p, (uint64_t)(uintptr_t)image);
	p = append(p, " parent ");
	if (!EFI_ERROR(st->BootServices->HandleProtocol(image, &li_guid, (void **)&li)) && li)
		p = hex(p, (uint64_t)(uintptr_t)li->ParentHandle);
	else
		p = append(p, "unknown");
	say(line);
	probe_hypervisor();
	cpuid_timing();
	if (have_tracevisor) {
		UINTN self = 0;
		EFI_GUID guid = TV_MP_SERVICES_GUID;
		struct tv_mp_services *mp = NULL;

		if (!EFI_ERROR(st->BootServices->LocateProtocol(&guid, NULL, (void **)&mp)) && mp)
			mp->who_am_i(mp, &self);
		uint64_t t0 = hw_rdtsc(), status = tv_traced(TRACED_ITERATIONS);

		t0 = hw_rdtsc() - t0;
		traced_line(line, self, status);
		say(line);
		/* "TRACEVISOR-PAYLOAD: timing: traced window: T ticks" (with the
		 * export over serial when tracevisor's serial log is on) */
		p = append(line, "TRACEVISOR-PAYLOAD: timing: traced window: ");
		p = dec(p, t0);
		append(p, " ticks");
		say(line);
	}
	probe_aps();
	say("TRACEVISOR-PAYLOAD-OK");

	/* Give the UART a moment to drain before the power goes. */
	st->BootServices->Stall(20000);
	st->RuntimeServices->ResetSystem(EfiResetShutdown, EFI_SUCCESS, 0, NULL);
	/* Bochs: its shutdown port, in case the firmware's reset did not stop it. */
	for (const char *s = "Shutdown"; *s; s++)
		hw_outb(0x8900, (uint8_t)*s);
	say("TRACEVISOR-PAYLOAD: power-off failed");
	return EFI_DEVICE_ERROR;
}
