/* SPDX-License-Identifier: MIT */
/*
 * vmx_boot.c - the blue pill: reserve memory, copy tracevisor into it,
 * build the host world and EPT, then launch every CPU into VMX non-root
 * operation with its live firmware state.
 *
 * Memory: one EfiReservedMemoryType allocation holds everything the
 * hypervisor will ever use (resident image copy, per-CPU VMXON/VMCS/MSR
 * bitmap/GDT/TSS/stack, IDT, page pool for host page tables and EPT).
 * Reserved memory is never reported to the OS as usable RAM and is not
 * mapped for runtime services (unlike EfiRuntimeServices*, which
 * SetVirtualAddressMap would relocate), and EPT makes it non-present for
 * the guest.  After this, nothing is allocated.
 */
#include "boot/images.h"
#include "boot/vmx_boot.h"

#include <stdio.h>
#include <string.h>

#include "boot/acpi.h"
#include "boot/efi_util.h"
#include "boot/mp_services.h"
#include "drivers/nic.h"
#include "net/export.h"
#include "net/net.h"
#include "vmm/vmx/ept.h"
#include "vmm/exit/exit.h"
#include "vmm/vmx/host.h"
#include "vmm/hv.h"
#include "vmm/exit/hypercall.h"
#include "vmm/lib/log.h"
#include "vmm/vmx/mtrr.h"
#include "vmm/lib/page_pool.h"
#include "vmm/exit/exit_io.h"
#include "vmm/exit/pci_hide.h"
#include "vmm/exit/preempt.h"
#include "vmm/lib/reloc.h"
#include "vmm/trace/hooks.h"
#include "vmm/vmx/vmx.h"
#include "vmm/vmx/vmx_check.h"

#define HOST_STACK_BYTES (64 * 1024)
#define POOL_BYTES (8ull * 1024 * 1024)
#define MAX_CPUS 64
#define AP_TIMEOUT_US 5000000


/* Symbols of the image (linker.ld, gnu-efi crt0). */
extern char ImageBase[];
extern char _DYNAMIC[];
extern char vmx_exit_entry[];
extern char host_stub_table[];
extern const uint32_t host_stub_count;
extern char _net_state_start[], _net_state_end[];

static void *net_pristine;       /* loader memory: the range at efi_main entry */

void vmx_boot_save_net_state(void)
{
	size_t n = (size_t)(_net_state_end - _net_state_start);

	if (EFI_ERROR(efi_bs->AllocatePool(EfiLoaderData, n, &net_pristine))) {
		net_pristine = NULL;
		return;
	}
	memcpy(net_pristine, _net_state_start, n);
}

struct launch_slot {
	struct per_cpu *cpu;
	const struct vmx_host_env *env;
	int rc;                   /* guest-side result, in the original image */
};

static struct launch_slot slots[MAX_CPUS];

/* Runs on the target CPU, from the firmware-loaded original image. */
static int launch_this_cpu(struct per_cpu *cpu, const struct vmx_host_env *env)
{
	struct cpu_snapshot snap;
	char why[120];
	int rc;

	rc = vmx_cpu_enable(cpu);
	if (rc)
		return rc;
	vmx_snapshot(&snap);
	if (vmx_compute_controls(cpu, (snap.efer & EFER_LMA) != 0, why, sizeof(why))) {
		log_err("vmx: cpu %u: %s", cpu->index, why);
		vmx_cpu_disable(cpu);
		return -1;
	}
	if (vmx_write_vmcs(cpu, &snap, env)) {
		vmx_cpu_disable(cpu);
		return -1;
	}
#ifndef TV_FAULT_SKIP_CHECK
	if (vmx_check_vmcs(&cpu->caps, why, sizeof(why))) {
		log_err("vmx: cpu %u: VMCS check failed, not launching: %s", cpu->index, why);
		vmx_cpu_disable(cpu);
		return -1;
	}
#endif
	cpu->launching = true;
	rc = hw_vmx_launch_here();
	/* rc == 0: we are the guest now; cpu (hidden memory) is off limits. */
	if (rc == 0)
		return 0;
	if (rc != VMX_ERR_ENTRY_FAILED) {
		uint64_t err = 0;

		hw_vmread(VMCS_VM_INSTRUCTION_ERROR, &err);
		log_err("vmx: cpu %u: VMLAUNCH failed: VM-instruction error %llu (%s)", cpu->index,
			(unsigned long long)err, vmx_instruction_error_text((uint32_t)err));
		vmcs_dump();
	}
	cpu->launching = false;
	vmx_cpu_disable(cpu);
	return rc;
}

static void EFIAPI ap_entry(void *arg)
{
	struct launch_slot *s = arg;

	s->rc = launch_this_cpu(s->cpu, s->env);
}

/* Runs on a launched AP when another CPU failed: back out of VMX. */
static void EFIAPI ap_devirt(void *arg)
{
	struct launch_slot *s = arg;
	uint64_t in[4] = { TV_HC_DEVIRT, 0, 0, 0 }, out[4];

	hw_vmcall(in, out);
	s->rc = (int)(int64_t)out[0];
}

/*
 * Not every CPU could be launched: take the launched ones out of VMX so
 * the machine boots entirely unvirtualized.  Returns how many remain
 * virtualized (0 on success).
 */
static int devirtualize_aps(struct tv_mp_services *mp, UINTN ncpu, UINTN bsp)
{
	int left = 0;

	for (UINTN i = 0; i < ncpu; i++) {
		BOOLEAN finished = FALSE;
		EFI_STATUS st;

		if (i == bsp || slots[i].rc != 0 || !slots[i].cpu)
			continue;
		slots[i].rc = -100;
		st = mp->startup_this_ap(mp, ap_devirt, i, NULL, AP_TIMEOUT_US, &slots[i], &finished);
		if (EFI_ERROR(st) || slots[i].rc) {
			log_err("vmx: cpu %llu could not leave VMX (%s, status %d): it stays virtualized",
				(unsigned long long)i, efi_strerror(st), slots[i].rc);
			slots[i].rc = 0;
			left++;
		} else {
			log_info("vmx: cpu %llu left VMX", (unsigned long long)i);
			slots[i].rc = -1;
		}
	}
	return left;
}

static struct tv_mp_services *find_mp(void)
{
	EFI_GUID guid = TV_MP_SERVICES_GUID;
	struct tv_mp_services *mp = NULL;

	if (EFI_ERROR(efi_bs->LocateProtocol(&guid, NULL, (void **)&mp)))
		return NULL;
	return mp;
}

/* Call fn in the resident copy: same offset from the copy's base. */
#define IN_COPY(copy, sym) ((__typeof__(&(sym)))(void *)((copy) + ((char *)&(sym) - ImageBase)))

/* A pointer into the loaded image, moved to the same place in the copy. */
static void *rebase(void *p, uint8_t *copy)
{
	char *c = p;

	if (c >= ImageBase && c < ImageBase + efi_self->ImageSize)
		return copy + (c - ImageBase);
	return p;
}

/* The ACPI 2.0 RSDP from the EFI configuration table (UEFI 2.10 4.6), or NULL. */
static const void *find_rsdp(void)
{
	EFI_GUID acpi20 = ACPI_20_TABLE_GUID;

	for (UINTN i = 0; i < efi_st->NumberOfTableEntries; i++)
		if (!memcmp(&efi_st->ConfigurationTable[i].VendorGuid, &acpi20, sizeof(acpi20)))
			return efi_st->ConfigurationTable[i].VendorTable;
	return NULL;
}

/*
 * Hidden PCI functions: the ECAM base from MCFG (segment 0), and each
 * hidden function's ECAM page read-only onto the 0xFF page.  Without an
 * MCFG (Bochs's i440FX, whose OVMF publishes no ACPI tables), hiding is
 * through 0xCF8/0xCFC alone, which is all such a chipset has.
 */
static void hide_pci_setup(struct ept *ept, struct page_pool *pool, uint64_t ff_pa,
			   struct pci_ecam *ecam)
{
	const struct pci_hide_list *l = pci_hide_get();
	const void *rsdp = find_rsdp();
	int rc;

	memset(ecam, 0, sizeof(*ecam));
	for (uint32_t i = 0; i < l->n; i++)
		log_info("pci: %02x:%02x.%x hidden from the guest", l->f[i].bus, l->f[i].dev,
			 l->f[i].fn);
	rc = rsdp ? acpi_find_ecam(rsdp, ecam) : ACPI_ERR_RSDP;
	if (rc) {
		log_info("pci: no ECAM (%s%s): hidden through 0xCF8/0xCFC only",
			 rsdp ? "" : "no ACPI 2.0 table: ", acpi_strerror(rc));
		return;
	}
	log_info("pci: ECAM of segment 0 at %#llx, buses %02x-%02x (ACPI MCFG)",
		 (unsigned long long)ecam->base, ecam->start_bus, ecam->end_bus);
	pci_hide_init(l, ecam);   /* this image's view, for the mapping below */
	rc = pci_hide_map_ecam(ept, pool, ff_pa);
	if (rc < 0)
		log_err("pci: mapping the hidden ECAM pages failed: %s: ECAM still shows them",
			ept_strerror(rc));
	else
		log_info("pci: %d ECAM page(s) read-only onto all ones", rc);
}

int vmx_boot(const struct vmx_boot_params *p)
{
	struct tv_mp_services *mp = find_mp();
	UINTN ncpu = 1, nenabled = 1, bsp = 0;
	uint64_t image_bytes, percpu_bytes, trace_bytes, bts_bytes, bts_off = 0, cpus_bytes, info_bytes, total, region_pa, off;
	uint64_t pt_bytes, pt_off = 0;
	uint64_t net_bytes = 0, ex_bytes = 0;
	struct hv_net net = p->net;
	uint8_t *region, *copy;
	struct per_cpu *cpus;
	struct page_pool *pool;
	struct vmx_host_env *envs;
	struct hv_boot_info *bi;
	struct log_ring *ring;
	struct mtrr_state *mtrr;
	struct ept *ept;
	struct ept_params eparams;
	struct ept_range hidden[2];
	struct hw_cpuid_regs r;
	uint8_t *idt, *guest_tss, *io_bitmaps, *ff_page;
	struct pci_ecam ecam;
	struct preempt_hook poll;
	bool hide_pci = pci_hide_get()->n != 0;
	uint64_t host_cr3;
	long nrel;
	int rc, ok = 1;
	EFI_STATUS st;

	if (mp) {
		mp->get_number_of_processors(mp, &ncpu, &nenabled);
		mp->who_am_i(mp, &bsp);
	} else {
		log_warn("vmx: no MP services protocol: virtualizing the boot CPU only");
	}
	if (ncpu > MAX_CPUS) {
		log_err("vmx: %llu CPUs, at most %d supported: not virtualizing",
			(unsigned long long)ncpu, MAX_CPUS);
		return -1;
	}

	if (net.enabled && !net_pristine) {
		log_err("vmx: no snapshot of the network state (no memory at entry): network export off");
		net.enabled = false;
	}
	if (net.enabled && p->trace.source == TV_SOURCE_NONE)
		net.enabled = false;   /* nothing to export */
	if (net.enabled) {
		net_bytes = NIC_DMA_BYTES;
		ex_bytes = (sizeof(struct exporter) + 4095) & ~4095ull;
	}

	/* --- one reservation for everything --------------------------------- */
	image_bytes = (efi_self->ImageSize + 4095) & ~4095ull;
	percpu_bytes = 4 * 4096 + HOST_STACK_BYTES;  /* VMXON, VMCS, MSR bitmap, GDT+TSS, stack */
	cpus_bytes = (ncpu * sizeof(struct per_cpu) + 4095) & ~4095ull;
	/* boot info, host environments, EPT, MTRR and pool state */
	info_bytes = (sizeof(*bi) + ncpu * sizeof(*envs) + sizeof(*ept) + sizeof(*mtrr) +
		      sizeof(*pool) + sizeof(*ring) + 4095) & ~4095ull;
	/* A header page, then ring_kb of record data (a power of two). */
	trace_bytes = p->trace.source != TV_SOURCE_NONE ? ((uint64_t)p->trace.ring_kb << 10) + 4096 : 0;
	/* source = bts: a DS save area page and the BTS buffer per CPU. */
	bts_bytes = p->trace.source == TV_SOURCE_BTS ? TRACE_BTS_AREA_BYTES : 0;
	/*
	 * source = pt: ToPA regions, table and byte ring per CPU, aligned to
	 * the region size (one region's worth of slack for that).
	 */
	pt_bytes = p->trace.source == TV_SOURCE_PT ? TRACE_PT_AREA_BYTES : 0;
	total = image_bytes + ncpu * percpu_bytes + cpus_bytes + info_bytes +
		2 * 4096 /* IDT, guest TSS */ + 3 * 4096 /* I/O bitmaps A, B, 0xFF page */ +
		POOL_BYTES + ncpu * trace_bytes + ncpu * bts_bytes + net_bytes + ex_bytes +
		(pt_bytes ? ncpu * pt_bytes + TRACE_PT_REGION_BYTES : 0);
	st = efi_bs->AllocatePages(AllocateAnyPages, EfiReservedMemoryType, total / 4096, &region_pa);
	if (EFI_ERROR(st)) {
		log_err("vmx: cannot reserve %llu KiB: %s", (unsigned long long)(total >> 10),
			efi_strerror(st));
		return -1;
	}
	region = (uint8_t *)(uintptr_t)region_pa;
	memset(region, 0, total);
	log_info("vmx: reserved %llu KiB at %#llx (EfiReservedMemoryType) for %llu CPUs",
		 (unsigned long long)(total >> 10), (unsigned long long)region_pa,
		 (unsigned long long)ncpu);

	/* --- the resident copy ---------------------------------------------- */
	copy = region;
	memcpy(copy, ImageBase, efi_self->ImageSize);
	/*
	 * The copy's network state starts pristine: the original may have run
	 * lwIP already (net_boot's self-test), and its netif list, timeouts,
	 * ARP table, PCBs and pools point into the original.  Pointers in the
	 * range are relocatable words, so reloc_image below fixes them for
	 * the copy like any other (RELA: base + addend).
	 */
	if (net_pristine)
		memcpy(copy + (_net_state_start - ImageBase), net_pristine,
		       (size_t)(_net_state_end - _net_state_start));
	nrel = reloc_image(copy, image_bytes, (uint64_t)(_DYNAMIC - ImageBase));
	if (nrel < 0) {
		log_err("vmx: relocating the resident copy failed (%ld)", nrel);
		return -1;
	}
	off = image_bytes;
	cpus = (struct per_cpu *)(region + off);
	off += cpus_bytes;
	bi = (struct hv_boot_info *)(region + off);
	envs = (struct vmx_host_env *)(bi + 1);
	ept = (struct ept *)(envs + ncpu);
	mtrr = (struct mtrr_state *)(ept + 1);
	pool = (struct page_pool *)(mtrr + 1);
	ring = (struct log_ring *)(pool + 1);
	off += info_bytes;
	idt = region + off;
	off += 4096;
	guest_tss = region + off;
	off += 4096;
	/* Shared by all CPUs: the CPU only reads them (SDM 3C 25.6.4). */
	io_bitmaps = region + off;
	io_bitmap_build(io_bitmaps, io_bitmaps + 4096);
	off += 2 * 4096;
	ff_page = region + off;
	memset(ff_page, 0xff, 4096);
	off += 4096;
	if (net.enabled) {
		net.dma = region + off;      /* page aligned: every offset here is */
		off += net_bytes;
		net.ex = (struct exporter *)(region + off);
		off += ex_bytes;
	}
	/* This image's tracer hooks: msr_bitmap_build asks its MSR policy. */
	trace_hooks_register();
	for (UINTN i = 0; i < ncpu; i++) {
		uint8_t *pc = region + off + i * percpu_bytes;
		uint64_t top;

		cpus[i].index = (uint32_t)i;
		cpus[i].vpid = (uint16_t)(i + 1);
		cpus[i].timer_period_tsc = (uint64_t)p->heartbeat_s * p->tsc_hz;
		if (p->trace.source == TV_SOURCE_PT)
			cpus[i].drain_period_tsc = preempt_period_tsc(p->pt_drain_us, p->tsc_hz);
		cpus[i].pmc_switch = p->trace.pmi && p->trace.source == TV_SOURCE_LBR;
		cpus[i].lbr_ctl_switch = p->trace.source == TV_SOURCE_LBR ||
					 p->trace.source == TV_SOURCE_BTF;
		cpus[i].nmi_exiting = p->trace.pmi && (p->trace.source == TV_SOURCE_LBR ||
						       p->trace.source == TV_SOURCE_BTS ||
						       p->trace.source == TV_SOURCE_PT);
		if (hide_pci) {
			cpus[i].io_bitmap_a_pa = (uint64_t)(uintptr_t)io_bitmaps;
			cpus[i].io_bitmap_b_pa = (uint64_t)(uintptr_t)io_bitmaps + 4096;
		}
		cpus[i].vmxon_pa = (uint64_t)(uintptr_t)pc;
		cpus[i].vmcs_pa = (uint64_t)(uintptr_t)pc + 4096;
		cpus[i].msr_bitmap_pa = (uint64_t)(uintptr_t)pc + 2 * 4096;
		msr_bitmap_build(pc + 2 * 4096);
		host_build_gdt(pc + 3 * 4096, (uint64_t)(uintptr_t)pc + 3 * 4096 + 256);
		top = (uint64_t)(uintptr_t)pc + percpu_bytes;
		cpus[i].host_stack_top = top;
		/* The exit stub finds its per_cpu at HOST_RSP (vmx_entry.S). */
		*(struct per_cpu **)(uintptr_t)(top - 16) = &cpus[i];
		if (mp) {
			struct tv_processor_info info;

			memset(&info, 0, sizeof(info));
			if (!EFI_ERROR(mp->get_processor_info(mp, i, &info)))
				cpus[i].apic_id = (uint32_t)info.processor_id;
		}
	}
	off += ncpu * percpu_bytes;
	if (page_pool_init(pool, region + off, POOL_BYTES)) {
		log_err("vmx: page pool setup failed");
		return -1;
	}
	off += POOL_BYTES;
	/* Trace rings: hidden with the rest of the region, never reclaimed. */
	for (UINTN i = 0; trace_bytes && i < ncpu; i++) {
		if (!p->trace_cpu_all && (i >= 256 || !(p->trace_cpus[i / 32] & (1u << (i % 32)))))
			continue;   /* not selected by trace_cpus: no ring, never traced */
		rc = trace_cpu_init(&cpus[i].trace, region + off + i * trace_bytes, trace_bytes,
				    (uint32_t)i, cpus[i].apic_id, (enum tv_source)p->trace.source,
				    (enum tv_overflow)p->trace.overflow, p->tsc_hz, hw_rdtsc());
		if (rc) {
			log_err("vmx: cpu %llu: trace ring setup failed: %s",
				(unsigned long long)i, trace_strerror(rc));
			return -1;
		}
	}
	off += ncpu * trace_bytes;
	/*
	 * BTS areas after the rings.  The hardware stores into them through
	 * the guest's paging and EPT, with the guest's linear addresses: under
	 * the firmware's identity map those are the physical ones.  EPT gives
	 * exactly these pages back to the guest, read/write (below).
	 */
	bts_off = off;
	for (UINTN i = 0; bts_bytes && i < ncpu; i++) {
		uint8_t *b = region + bts_off + i * bts_bytes;

		if (cpus[i].trace.ring &&
		    trace_cpu_bts_area(&cpus[i].trace, b, (uint64_t)(uintptr_t)b)) {
			log_err("vmx: cpu %llu: BTS area setup failed", (unsigned long long)i);
			return -1;
		}
	}
	off += ncpu * bts_bytes;
	/*
	 * PT areas: hidden from the guest like the rest of the region (the
	 * hardware writes them by host-physical address, not through EPT).
	 */
	if (pt_bytes) {
		pt_off = ((region_pa + off + TRACE_PT_REGION_BYTES - 1) & ~(uint64_t)(TRACE_PT_REGION_BYTES - 1)) -
			 region_pa;
		for (UINTN i = 0; i < ncpu; i++) {
			uint8_t *b = region + pt_off + i * pt_bytes;

			if (cpus[i].trace.ring &&
			    trace_cpu_pt_area(&cpus[i].trace, b, (uint64_t)(uintptr_t)b)) {
				log_err("vmx: cpu %llu: PT area setup failed", (unsigned long long)i);
				return -1;
			}
			cpus[i].rtit_ctl_switch = cpus[i].trace.ring != NULL;
		}
		log_info("vmx: PT area per CPU: %u KiB (%u x %u KiB ToPA regions, %u KiB stream ring) from %#llx, hidden from the guest",
			 (unsigned)(pt_bytes >> 10), TRACE_PT_REGIONS, TRACE_PT_REGION_BYTES >> 10,
			 TRACE_PT_RING_BYTES >> 10, (unsigned long long)(region_pa + pt_off));
		off = pt_off + ncpu * pt_bytes;
	}
	if (trace_bytes) {
		struct tv_trace_ring *rings[MAX_CPUS];

		for (UINTN i = 0; i < ncpu; i++)
			rings[i] = cpus[i].trace.ring;
		images_record(rings, ncpu);
	}
	if (trace_bytes)
		log_info("vmx: %llu KiB trace ring per CPU (source %u, overflow %s)",
			 (unsigned long long)p->trace.ring_kb, p->trace.source,
			 p->trace.overflow == TV_OVERFLOW_STOP ? "stop" : "overwrite");

	/* --- host world and EPT --------------------------------------------- */
	host_build_idt(idt, (uint64_t)(uintptr_t)IN_COPY(copy, host_stub_table),
		       *IN_COPY(copy, host_stub_count));
	hw_cpuid(1, 0, &r);
	mtrr_read(mtrr, (r.edx & (1u << 12)) != 0, p->phys_addr_bits);
	hidden[0].base = region_pa;
	hidden[0].size = total;
	hidden[1].base = p->log_ring_pa;
	hidden[1].size = p->log_ring_bytes;
	memset(&eparams, 0, sizeof(eparams));
	eparams.top = p->map_top;
	eparams.allow_1g = true;
	eparams.allow_2m = true;
	eparams.mtrr = mtrr;
	eparams.ept_vpid_cap = hw_rdmsr(MSR_IA32_VMX_EPT_VPID_CAP);
	eparams.hidden = hidden;
	eparams.nhidden = 2;
	rc = ept_build(ept, pool, &eparams);
	if (rc) {
		log_err("vmx: building EPT failed: %s", ept_strerror(rc));
		return -1;
	}
	/*
	 * The BTS areas stay hidden from the guest but for the one thing the
	 * hardware needs: stores through EPT while the guest runs.  Read and
	 * write, never execute; the guest can read and overwrite them (the
	 * drain checks the DS fields it relies on, docs/BACKENDS-BTS.md).
	 */
	for (UINTN i = 0; bts_bytes && i < ncpu; i++) {
		uint64_t pa = region_pa + bts_off + i * bts_bytes;
		struct ept_leaf leaf;

		if (!cpus[i].trace.ring)
			continue;
		for (uint64_t o = 0; o < bts_bytes; o += 4096) {
			rc = ept_lookup(ept, pa + o, &leaf);
			if (!rc)
				rc = ept_map_4k(ept, pool, pa + o, pa + o, EPT_R | EPT_W, leaf.memtype);
			if (rc) {
				log_err("vmx: cpu %llu: cannot map the BTS area at %#llx for the guest: %s",
					(unsigned long long)i, (unsigned long long)(pa + o),
					ept_strerror(rc));
				return -1;
			}
		}
		log_info("vmx: cpu %llu: BTS area at %#llx (%u KiB), guest read/write in EPT",
			 (unsigned long long)i, (unsigned long long)pa,
			 (unsigned)(bts_bytes >> 10));
	}
	memset(&ecam, 0, sizeof(ecam));
	if (hide_pci)
		hide_pci_setup(ept, pool, (uint64_t)(uintptr_t)ff_page, &ecam);

	/* The export NIC is polled from VMX root on the boot CPU. */
	if (net.enabled) {
		net.cpu = (uint32_t)bsp;
		hv_set_poll_hook(net_resident_poll, NULL, (uint32_t)bsp);
	}
	/* The poll hook, moved into the copy; only its CPU gets a period. */
	poll = *preempt_hook_get();
	if (poll.fn && poll.cpu >= ncpu) {
		log_err("vmx: poll hook for cpu %u, but there are %llu CPUs: not installed",
			poll.cpu, (unsigned long long)ncpu);
		poll.fn = NULL;
	}
	if (poll.fn) {
		poll.fn = (void (*)(void *))rebase((void *)poll.fn, copy);
		poll.ctx = rebase(poll.ctx, copy);
		cpus[poll.cpu].poll_period_tsc = preempt_period_tsc(p->poll_us, p->tsc_hz);
		log_info("vmx: poll hook on cpu %u every %u us (%llu TSC ticks)", poll.cpu,
			 p->poll_us, (unsigned long long)cpus[poll.cpu].poll_period_tsc);
	}
	hw_cpuid(0x80000001u, 0, &r);
	host_cr3 = host_build_page_tables(pool, p->map_top, (r.edx & (1u << 26)) != 0);
	if (!host_cr3) {
		log_err("vmx: page pool exhausted building host page tables");
		return -1;
	}
	for (UINTN i = 0; i < ncpu; i++) {
		envs[i].cr3 = host_cr3;
		envs[i].gdt_base = cpus[i].vmxon_pa + 3 * 4096;
		envs[i].tss_base = envs[i].gdt_base + 256;
		envs[i].idt_base = (uint64_t)(uintptr_t)idt;
		envs[i].exit_rip = (uint64_t)(uintptr_t)IN_COPY(copy, vmx_exit_entry);
		envs[i].eptp = ept->eptp;
		envs[i].guest_tss_base = (uint64_t)(uintptr_t)guest_tss;
	}
	log_info("vmx: EPT built (EPTP %#llx), %llu of %llu pool pages used",
		 (unsigned long long)ept->eptp, (unsigned long long)pool->used,
		 (unsigned long long)pool->npages);

	/*
	 * The ring's state moves into reserved memory: the resident copy must
	 * not keep a pointer into this image, which the OS reclaims.  Both
	 * images log into it until this CPU becomes a guest.
	 */
	*ring = *p->log_ring;
	log_set_ring(ring);
	bi->log_ring = ring;
	bi->log_level = log_get_level();
	bi->serial_port = p->serial_port;
	bi->serial_ops = p->serial_ops ? rebase((void *)p->serial_ops, copy) : NULL;
	bi->cpus = cpus;
	bi->ncpus = (uint32_t)ncpu;
	bi->ept = ept;
	bi->pool = pool;
	bi->scratch_pa = page_pool_pa(pool, page_pool_alloc(pool));
	bi->hidden[0] = hidden[0];
	bi->hidden[1] = hidden[1];
	bi->nhidden = 2;
	bi->map_top = p->map_top;
	bi->trace = p->trace;
	bi->pci_hide = *pci_hide_get();
	bi->ecam = ecam;
	/* The dword register, not the bytes at 0xCF8-0xCFB (PCI 3.0 3.2.2.3.2). */
	bi->pci_latch = hide_pci ? hw_inl(PCI_M1_ADDRESS_PORT) : 0;
	bi->poll = poll;
	bi->net = net;
	bi->net_ops = net.enabled ? IN_COPY(copy, net_resident_ops) : NULL;
	IN_COPY(copy, hv_init)(bi);

	/* --- launch: APs first, one at a time, then this CPU ----------------- */
	if (p->console_sink)
		log_remove_sink(p->console_sink);  /* ConOut is BSP-only */
	for (UINTN i = 0; i < ncpu && ok; i++) {
		BOOLEAN finished = FALSE;

		if (i == bsp)
			continue;
		slots[i].cpu = &cpus[i];
		slots[i].env = &envs[i];
		slots[i].rc = -100;
		st = mp->startup_this_ap(mp, ap_entry, i, NULL, AP_TIMEOUT_US, &slots[i], &finished);
		if (EFI_ERROR(st) || slots[i].rc) {
			log_err("vmx: cpu %llu did not launch (%s, rc %d)", (unsigned long long)i,
				efi_strerror(st), slots[i].rc);
			ok = 0;
		} else {
			log_info("vmx: cpu %llu (APIC %u) now runs as a guest", (unsigned long long)i,
				 cpus[i].apic_id);
		}
	}
	if (ok) {
		/*
		 * From VMLAUNCH on, this CPU is a guest and reserved memory is
		 * not present: the log ring is the resident copy's alone.
		 */
		log_set_ring(NULL);
		rc = launch_this_cpu(&cpus[bsp], &envs[bsp]);
		if (rc) {
			log_set_ring(ring);
			log_err("vmx: boot CPU did not launch (rc %d)", rc);
			ok = 0;
		}
	}
	if (p->console_sink)
		log_add_sink(p->console_sink, NULL);
	if (!ok) {
		log_err("vmx: not every CPU could be virtualized: turning VMX off on all of them");
		if (mp && devirtualize_aps(mp, ncpu, bsp) == 0)
			log_warn("vmx: every CPU is unvirtualized again (%llu KiB stay reserved)",
				 (unsigned long long)(total >> 10));
		return -1;
	}
	log_info("vmx: all %llu CPUs run as guests of tracevisor", (unsigned long long)ncpu);
	{
		uint64_t in[4] = { TV_HC_SEAL, 0, 0, 0 }, out[4];

		hw_vmcall(in, out);
		if (out[0] != TV_HC_OK)
			log_err("vmx: sealing the boot-time hypercalls failed (%lld)", (long long)out[0]);
	}
	return 0;
}
