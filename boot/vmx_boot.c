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
#include "vmm/layout.h"
#include "vmm/exit/hypercall.h"
#include "vmm/lib/log.h"
#include "vmm/vmx/mtrr.h"
#include "vmm/lib/page_pool.h"
#include "vmm/exit/exit_io.h"
#include "vmm/exit/pci_hide.h"
#include "vmm/exit/preempt.h"
#include "vmm/lib/reloc.h"
#include "vmm/trace/hooks.h"
#include "vmm/trace/needs.h"
#include "vmm/vmx/vmx.h"
#include "vmm/vmx/vmx_check.h"

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

/* --- the reservation ------------------------------------------------------ */

/* Where the layout put everything, as pointers (identity mapped: pa == va). */
struct boot_region {
	struct hv_layout l;
	uint64_t pa;
	uint8_t *base;            /* the reservation; the resident copy at its start */
	struct per_cpu *cpus;
	struct hv_boot_info *bi;
	struct vmx_host_env *envs;
	struct ept *ept;
	struct mtrr_state *mtrr;
	struct page_pool *pool;
	struct log_ring *ring;
	uint8_t *idt, *guest_tss, *io_bitmaps, *ff_page;
};

static bool cpu_traced(const struct vmx_boot_params *p, UINTN i);

/*
 * What to reserve: the sizes only boot knows (the image, the structs of
 * this build, the CPU count, network export) and the tracer's needs, for
 * the CPUs trace_cpus selects.
 */
static void layout_request(const struct vmx_boot_params *p, UINTN ncpu, const struct hv_net *net,
			   const struct trace_needs *needs, struct hv_layout_req *req)
{
	memset(req, 0, sizeof(*req));
	for (UINTN i = 0; i < ncpu; i++)
		req->ntraced += cpu_traced(p, i) ? 1 : 0;
	req->image_bytes = efi_self->ImageSize;
	req->ncpus = (uint32_t)ncpu;
	req->cpu_struct_bytes = sizeof(struct per_cpu);
	/* boot info, host environments, EPT, MTRR, pool and log state */
	req->info_bytes = sizeof(struct hv_boot_info) + ncpu * sizeof(struct vmx_host_env) +
			  sizeof(struct ept) + sizeof(struct mtrr_state) + sizeof(struct page_pool) +
			  sizeof(struct log_ring);
	if (net->enabled) {
		req->nic_dma_bytes = NIC_DMA_BYTES;
		req->exporter_bytes = sizeof(struct exporter);
	}
	req->ring_bytes = needs->ring_bytes;
	req->guest_bytes = needs->guest_bytes;
	req->hidden_bytes = needs->hidden_bytes;
	req->hidden_align = needs->hidden_align;
	req->pool_extra_bytes = needs->pool_bytes;   /* code snapshots: EPT splits, tables */
	if (!req->ntraced) {   /* nothing traces: no trace parts at all */
		req->ntraced = 0;
		req->ring_bytes = req->guest_bytes = req->hidden_bytes = req->hidden_align = 0;
	}
}

/*
 * Reserve req's total, zeroed, and point b's members at their parts.
 * trace (trace_needs_describe) names the config keys behind the trace
 * parts, for the error when the sizes cannot be reserved.
 */
static int reserve(const struct hv_layout_req *req, const char *trace, struct boot_region *b)
{
	EFI_STATUS st;
	int rc;

	rc = hv_layout_compute(req, 0, &b->l);
	if (rc) {
		log_err("vmx: memory layout for %u CPUs (%u traced, %s): %s", req->ncpus,
			req->ntraced, trace, hv_layout_strerror(rc));
		return -1;
	}
	st = efi_bs->AllocatePages(AllocateAnyPages, EfiReservedMemoryType, b->l.total / 4096, &b->pa);
	if (EFI_ERROR(st)) {
		log_err("vmx: cannot reserve %llu KiB for %u CPUs (%u traced, %s): %s; lower those keys in tracevisor.conf",
			(unsigned long long)(b->l.total >> 10), req->ncpus, req->ntraced, trace,
			efi_strerror(st));
		return -1;
	}
	/* Again with the real base: the hidden areas align by physical address. */
	rc = hv_layout_compute(req, b->pa, &b->l);
	if (rc) {
		log_err("vmx: memory layout at %#llx: %s", (unsigned long long)b->pa,
			hv_layout_strerror(rc));
		return -1;
	}
	b->base = (uint8_t *)(uintptr_t)b->pa;
	memset(b->base, 0, b->l.total);
	log_info("vmx: reserved %llu KiB at %#llx (EfiReservedMemoryType) for %u CPUs",
		 (unsigned long long)(b->l.total >> 10), (unsigned long long)b->pa, req->ncpus);
	b->cpus = (struct per_cpu *)(b->base + b->l.cpus_off);
	b->bi = (struct hv_boot_info *)(b->base + b->l.info_off);
	b->envs = (struct vmx_host_env *)(b->bi + 1);
	b->ept = (struct ept *)(b->envs + req->ncpus);
	b->mtrr = (struct mtrr_state *)(b->ept + 1);
	b->pool = (struct page_pool *)(b->mtrr + 1);
	b->ring = (struct log_ring *)(b->pool + 1);
	b->idt = b->base + b->l.idt_off;
	b->guest_tss = b->base + b->l.guest_tss_off;
	b->io_bitmaps = b->base + b->l.io_bitmap_a_off;   /* B follows A */
	b->ff_page = b->base + b->l.ff_page_off;
	return 0;
}

/* The resident copy of this image, relocated to where it now lies. */
static int make_copy(struct boot_region *b)
{
	uint8_t *copy = b->base + b->l.image_off;
	long nrel;

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
	nrel = reloc_image(copy, b->l.image_bytes, (uint64_t)(_DYNAMIC - ImageBase));
	if (nrel < 0) {
		log_err("vmx: relocating the resident copy failed (%ld)", nrel);
		return -1;
	}
	return 0;
}

/* Does the configuration give CPU i a ring (trace_cpus)? */
static bool cpu_traced(const struct vmx_boot_params *p, UINTN i)
{
	return p->trace_cpu_all || (i < 256 && (p->trace_cpus[i / 32] & (1u << (i % 32))));
}

/*
 * Every CPU's own pages and its per_cpu: VMXON, VMCS, MSR bitmap, host
 * GDT+TSS and stack; its timers; and the VMX controls the tracer needs
 * on every CPU (those of traced CPUs only come with their areas).
 */
static void setup_cpus(struct boot_region *b, const struct vmx_boot_params *p,
		       struct tv_mp_services *mp, UINTN ncpu, const struct trace_needs *needs)
{
	bool hide_pci = pci_hide_get()->n != 0;
	/*
	 * I/O bitmaps: the PCI configuration ports while a function is
	 * hidden; with a trace source also the ACPI PM1 control ports, set
	 * by the resident copy once the FADT is found (vmm/exit/exit_io.h),
	 * so that the guest's power-off closes the windows.  Neither: none.
	 */
	bool io_bitmaps = hide_pci || p->trace.source != TV_SOURCE_NONE;

	if (hide_pci)
		io_bitmap_build(b->io_bitmaps, b->io_bitmaps + 4096);
	else
		memset(b->io_bitmaps, 0, 2 * 4096);
	memset(b->ff_page, 0xff, 4096);
	/* This image's tracer hooks: msr_bitmap_build asks its MSR policy. */
	trace_hooks_register();
	for (UINTN i = 0; i < ncpu; i++) {
		struct per_cpu *c = &b->cpus[i];
		uint8_t *pc = b->base + b->l.percpu_off + i * b->l.percpu_bytes;
		uint64_t top;

		c->index = (uint32_t)i;
		c->vpid = (uint16_t)(i + 1);
		c->timer_period_tsc = (uint64_t)p->heartbeat_s * p->tsc_hz;
		if (needs->drain_tick)
			c->drain_period_tsc = preempt_period_tsc(p->pt_drain_us, p->tsc_hz);
		c->trace_pin_ctls = needs->pin_ctls;
		c->trace_entry_ctls = needs->entry_ctls;
		c->trace_exit_ctls = needs->exit_ctls;
		if (io_bitmaps) {
			c->io_bitmap_a_pa = (uint64_t)(uintptr_t)b->io_bitmaps;
			c->io_bitmap_b_pa = (uint64_t)(uintptr_t)b->io_bitmaps + 4096;
		}
		c->vmxon_pa = (uint64_t)(uintptr_t)pc + HV_PERCPU_VMXON;
		c->vmcs_pa = (uint64_t)(uintptr_t)pc + HV_PERCPU_VMCS;
		c->msr_bitmap_pa = (uint64_t)(uintptr_t)pc + HV_PERCPU_MSR_BITMAP;
		msr_bitmap_build(pc + HV_PERCPU_MSR_BITMAP);
		host_build_gdt(pc + HV_PERCPU_GDT, (uint64_t)(uintptr_t)pc + HV_PERCPU_TSS);
		top = (uint64_t)(uintptr_t)pc + b->l.percpu_bytes;
		c->host_stack_top = top;
		/* The exit stub finds its per_cpu at HOST_RSP (vmx_entry.S). */
		*(struct per_cpu **)(uintptr_t)(top - 16) = c;
		if (mp) {
			struct tv_processor_info info;

			memset(&info, 0, sizeof(info));
			if (!EFI_ERROR(mp->get_processor_info(mp, i, &info)))
				c->apic_id = (uint32_t)info.processor_id;
		}
	}
}

/*
 * The trace rings and the backends' areas of the CPUs trace_cpus selects
 * (the others get none and never trace): hidden with the rest of the
 * reservation, never reclaimed; the guest-visible (bts) areas are given
 * back to the guest in EPT later (map_guest_areas).
 */
static int setup_trace(struct boot_region *b, const struct vmx_boot_params *p, UINTN ncpu,
		       const struct trace_needs *needs)
{
	const struct hv_layout *l = &b->l;
	uint64_t k = 0;    /* the traced CPUs' index into the trace parts */
	char text[160];
	int rc;

	for (UINTN i = 0; l->ring_bytes && i < ncpu; i++) {
		struct per_cpu *c = &b->cpus[i];
		struct tv_trace_ring *ring;

		if (!cpu_traced(p, i))
			continue;   /* not selected by trace_cpus: no ring, never traced */
		rc = trace_cpu_init(c, b->base + l->ring_off + k * l->ring_bytes, l->ring_bytes,
				    (uint32_t)i, c->apic_id, (enum tv_source)p->trace.source,
				    (enum tv_overflow)p->trace.overflow, p->tsc_hz, hw_rdtsc());
		if (rc) {
			log_err("vmx: cpu %llu: trace ring setup failed: %s",
				(unsigned long long)i, trace_strerror(rc));
			return -1;
		}
		c->trace_entry_ctls |= needs->entry_ctls_traced;
		c->trace_exit_ctls |= needs->exit_ctls_traced;
		/*
		 * bts: the hardware stores into these through the guest's
		 * paging and EPT, with the guest's linear addresses: under the
		 * firmware's identity map those are the physical ones.
		 */
		if (l->guest_bytes) {
			uint8_t *g = b->base + l->guest_off + k * l->guest_bytes;

			if (trace_cpu_bts_area(c, g, (uint64_t)(uintptr_t)g)) {
				log_err("vmx: cpu %llu: BTS area setup failed", (unsigned long long)i);
				return -1;
			}
		}
		/* pt: written by host-physical address, not through EPT: hidden. */
		if (l->hidden_bytes) {
			uint8_t *h = b->base + l->hidden_off + k * l->hidden_bytes;

			if (trace_cpu_pt_area(c, h, (uint64_t)(uintptr_t)h)) {
				log_err("vmx: cpu %llu: PT area setup failed", (unsigned long long)i);
				return -1;
			}
		}
		/* the sizes in force, for the capture (meta.json, tracevisor info) */
		ring = trace_cpu_ring(c);
		if (ring) {
			size_t n = trace_buffers_text(needs, ring->data_size, p->pt_drain_us, text,
						      sizeof(text));

			trace_append_config(ring, hw_rdtsc(), text, n);
		}
		k++;
	}
	if (l->hidden_bytes)
		log_info("vmx: PT area per CPU: %llu KiB (%u x %llu KiB ToPA regions, %llu KiB stream ring) from %#llx, hidden from the guest",
			 (unsigned long long)(l->hidden_bytes >> 10), needs->out_regions,
			 (unsigned long long)(needs->out_region_bytes >> 10),
			 (unsigned long long)(needs->stream_bytes >> 10),
			 (unsigned long long)(b->pa + l->hidden_off));
	if (l->ring_bytes)
		log_info("vmx: %s", trace_needs_describe(&p->trace, needs, text, sizeof(text)));
	if (l->ring_bytes) {
		struct tv_trace_ring *rings[MAX_CPUS];

		for (UINTN i = 0; i < ncpu; i++)
			rings[i] = trace_cpu_ring(&b->cpus[i]);
		images_record(rings, ncpu, &b->bi->boot_images);
		log_info("vmx: %llu KiB trace ring per CPU (source %u, overflow %s)",
			 (unsigned long long)p->trace.ring_kb, p->trace.source,
			 p->trace.overflow == TV_OVERFLOW_STOP ? "stop" :
			 p->trace.overflow == TV_OVERFLOW_WAIT ? "wait" : "overwrite");
	}
	return 0;
}

/* The host IDT, the MTRRs and EPT: everything mapped but the reservation. */
static int build_ept(struct boot_region *b, const struct vmx_boot_params *p, uint8_t *copy,
		     struct ept_range hidden[2])
{
	struct ept_params eparams;
	struct hw_cpuid_regs r;
	int rc;

	host_build_idt(b->idt, (uint64_t)(uintptr_t)IN_COPY(copy, host_stub_table),
		       *IN_COPY(copy, host_stub_count));
	hw_cpuid(1, 0, &r);
	mtrr_read(b->mtrr, (r.edx & (1u << 12)) != 0, p->phys_addr_bits);
	hidden[0].base = b->pa;
	hidden[0].size = b->l.total;
	hidden[1].base = p->log_ring_pa;
	hidden[1].size = p->log_ring_bytes;
	memset(&eparams, 0, sizeof(eparams));
	eparams.top = p->map_top;
	eparams.allow_1g = true;
	eparams.allow_2m = true;
	eparams.mtrr = b->mtrr;
	eparams.ept_vpid_cap = hw_rdmsr(MSR_IA32_VMX_EPT_VPID_CAP);
	eparams.hidden = hidden;
	eparams.nhidden = 2;
	rc = ept_build(b->ept, b->pool, &eparams);
	if (rc) {
		log_err("vmx: building EPT failed: %s", ept_strerror(rc));
		return -1;
	}
	return 0;
}

/*
 * The guest-visible (bts) areas stay hidden from the guest but for the
 * one thing the hardware needs: stores through EPT while the guest runs.
 * Read and write, never execute; the guest can read and overwrite them
 * (the drain checks the DS fields it relies on, docs/BACKENDS-BTS.md).
 */
static int map_guest_areas(struct boot_region *b, UINTN ncpu)
{
	uint64_t bytes = b->l.guest_bytes;
	int rc;

	for (UINTN i = 0; bytes && i < ncpu; i++) {
		uint64_t pa = b->pa + b->l.guest_off + i * bytes;
		struct ept_leaf leaf;

		if (!trace_cpu_ring(&b->cpus[i]))
			continue;
		for (uint64_t o = 0; o < bytes; o += 4096) {
			rc = ept_lookup(b->ept, pa + o, &leaf);
			if (!rc)
				rc = ept_map_4k(b->ept, b->pool, pa + o, pa + o, EPT_R | EPT_W, leaf.memtype);
			if (rc) {
				log_err("vmx: cpu %llu: cannot map the BTS area at %#llx for the guest: %s",
					(unsigned long long)i, (unsigned long long)(pa + o),
					ept_strerror(rc));
				return -1;
			}
		}
		log_info("vmx: cpu %llu: BTS area at %#llx (%u KiB), guest read/write in EPT",
			 (unsigned long long)i, (unsigned long long)pa, (unsigned)(bytes >> 10));
	}
	return 0;
}

/* The poll hook (the export NIC's, on the boot CPU), moved into the copy. */
static struct preempt_hook setup_poll(struct boot_region *b, const struct vmx_boot_params *p,
				      struct hv_net *net, UINTN ncpu, UINTN bsp, uint8_t *copy)
{
	struct preempt_hook poll;

	if (net->enabled) {
		net->cpu = (uint32_t)bsp;
		hv_set_poll_hook(net_resident_poll, NULL, (uint32_t)bsp);
	}
	/* Only its CPU gets a period. */
	poll = *preempt_hook_get();
	if (poll.fn && poll.cpu >= ncpu) {
		log_err("vmx: poll hook for cpu %u, but there are %llu CPUs: not installed",
			poll.cpu, (unsigned long long)ncpu);
		poll.fn = NULL;
	}
	if (poll.fn) {
		poll.fn = (void (*)(void *))rebase((void *)poll.fn, copy);
		poll.ctx = rebase(poll.ctx, copy);
		b->cpus[poll.cpu].poll_period_tsc = preempt_period_tsc(p->poll_us, p->tsc_hz);
		log_info("vmx: poll hook on cpu %u every %u us (%llu TSC ticks)", poll.cpu,
			 p->poll_us, (unsigned long long)b->cpus[poll.cpu].poll_period_tsc);
	}
	return poll;
}

/* Host page tables and every CPU's host environment. */
static int setup_host(struct boot_region *b, const struct vmx_boot_params *p, UINTN ncpu,
		      uint8_t *copy)
{
	struct hw_cpuid_regs r;
	uint64_t host_cr3;

	hw_cpuid(0x80000001u, 0, &r);
	host_cr3 = host_build_page_tables(b->pool, p->map_top, (r.edx & (1u << 26)) != 0);
	if (!host_cr3) {
		log_err("vmx: page pool exhausted building host page tables");
		return -1;
	}
	for (UINTN i = 0; i < ncpu; i++) {
		b->envs[i].cr3 = host_cr3;
		b->envs[i].gdt_base = b->cpus[i].vmxon_pa + HV_PERCPU_GDT;
		b->envs[i].tss_base = b->cpus[i].vmxon_pa + HV_PERCPU_TSS;
		b->envs[i].idt_base = (uint64_t)(uintptr_t)b->idt;
		b->envs[i].exit_rip = (uint64_t)(uintptr_t)IN_COPY(copy, vmx_exit_entry);
		b->envs[i].eptp = b->ept->eptp;
		b->envs[i].guest_tss_base = (uint64_t)(uintptr_t)b->guest_tss;
	}
	log_info("vmx: EPT built (EPTP %#llx), %llu of %llu pool pages used",
		 (unsigned long long)b->ept->eptp, (unsigned long long)b->pool->used,
		 (unsigned long long)b->pool->npages);
	return 0;
}

/*
 * What the resident copy starts from (hv_init).  The log ring's state
 * moves into reserved memory: the copy must not keep a pointer into this
 * image, which the OS reclaims.  Both images log into it until this CPU
 * becomes a guest.
 */
static void fill_boot_info(struct boot_region *b, const struct vmx_boot_params *p, UINTN ncpu,
			   const struct ept_range hidden[2], const struct pci_ecam *ecam,
			   const struct preempt_hook *poll, const struct hv_net *net, uint8_t *copy)
{
	struct hv_boot_info *bi = b->bi;
	bool hide_pci = pci_hide_get()->n != 0;

	*b->ring = *p->log_ring;
	log_set_ring(b->ring);
	bi->log_ring = b->ring;
	bi->log_level = log_get_level();
	bi->serial_port = p->serial_port;
	bi->serial_ops = p->serial_ops ? rebase((void *)p->serial_ops, copy) : NULL;
	bi->cpus = b->cpus;
	bi->ncpus = (uint32_t)ncpu;
	bi->ept = b->ept;
	bi->pool = b->pool;
	bi->scratch_pa = page_pool_pa(b->pool, page_pool_alloc(b->pool));
	bi->hidden[0] = hidden[0];
	bi->hidden[1] = hidden[1];
	bi->nhidden = 2;
	bi->map_top = p->map_top;
	bi->trace = p->trace;
	bi->pci_hide = *pci_hide_get();
	bi->ecam = *ecam;
	/* The dword register, not the bytes at 0xCF8-0xCFB (PCI 3.0 3.2.2.3.2). */
	bi->pci_latch = hide_pci ? hw_inl(PCI_M1_ADDRESS_PORT) : 0;
	bi->poll = *poll;
	bi->net = *net;
	bi->net_ops = net->enabled ? IN_COPY(copy, net_resident_ops) : NULL;
	bi->efi_system_table = (uint64_t)(uintptr_t)efi_st;   /* identity-mapped */
}

/*
 * Launch: APs first, one at a time, then this CPU.  On any failure every
 * launched CPU leaves VMX again.  Returns 0 (all CPUs are guests) or -1.
 */
static int launch_all(const struct vmx_boot_params *p, struct tv_mp_services *mp, UINTN ncpu,
		      UINTN bsp, struct boot_region *b)
{
	int rc, ok = 1;
	EFI_STATUS st;

	if (p->console_sink)
		log_remove_sink(p->console_sink);  /* ConOut is BSP-only */
	for (UINTN i = 0; i < ncpu && ok; i++) {
		BOOLEAN finished = FALSE;

		if (i == bsp)
			continue;
		slots[i].cpu = &b->cpus[i];
		slots[i].env = &b->envs[i];
		slots[i].rc = -100;
		st = mp->startup_this_ap(mp, ap_entry, i, NULL, AP_TIMEOUT_US, &slots[i], &finished);
		if (EFI_ERROR(st) || slots[i].rc) {
			log_err("vmx: cpu %llu did not launch (%s, rc %d)", (unsigned long long)i,
				efi_strerror(st), slots[i].rc);
			ok = 0;
		} else {
			log_info("vmx: cpu %llu (APIC %u) now runs as a guest", (unsigned long long)i,
				 b->cpus[i].apic_id);
		}
	}
	if (ok) {
		/*
		 * From VMLAUNCH on, this CPU is a guest and reserved memory is
		 * not present: the log ring is the resident copy's alone.
		 */
		log_set_ring(NULL);
		rc = launch_this_cpu(&b->cpus[bsp], &b->envs[bsp]);
		if (rc) {
			log_set_ring(b->ring);
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
				 (unsigned long long)(b->l.total >> 10));
		return -1;
	}
	return 0;
}

/* Boot is over: the boot-time hypercalls are refused from now on. */
static void seal_hypercalls(void)
{
	uint64_t in[4] = { TV_HC_SEAL, 0, 0, 0 }, out[4];

	hw_vmcall(in, out);
	if (out[0] != TV_HC_OK)
		log_err("vmx: sealing the boot-time hypercalls failed (%lld)", (long long)out[0]);
}

int vmx_boot(const struct vmx_boot_params *p)
{
	struct tv_mp_services *mp = find_mp();
	UINTN ncpu = 1, nenabled = 1, bsp = 0;
	struct hv_net net = p->net;
	struct trace_needs needs;
	struct hv_layout_req req;
	char trace_text[160];
	struct boot_region b;
	struct ept_range hidden[2];
	struct pci_ecam ecam;
	struct preempt_hook poll;
	uint8_t *copy;

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

	/* --- one reservation for everything --------------------------------- */
	if (trace_engine_needs(&p->trace, &needs)) {
		/* the config refuses these first (docs/CONFIG.md): a setup built otherwise */
		log_err("vmx: trace buffers: pt_buffer_kb = %llu, pt_topa_kb = %llu, bts_buffer_kb = %llu cannot be laid out for source %u",
			(unsigned long long)(p->trace.pt_ring_bytes >> 10),
			(unsigned long long)(p->trace.pt_topa_bytes >> 10),
			(unsigned long long)(p->trace.bts_buf_bytes >> 10), p->trace.source);
		return -1;
	}
	trace_engine_configure(&p->trace);   /* the sizes setup_trace's areas are laid out with */
	layout_request(p, ncpu, &net, &needs, &req);
	trace_needs_describe(&p->trace, &needs, trace_text, sizeof(trace_text));
	memset(&b, 0, sizeof(b));
	if (reserve(&req, trace_text, &b) || make_copy(&b))
		return -1;
	copy = b.base + b.l.image_off;
	if (net.enabled) {
		net.dma = b.base + b.l.nic_dma_off;      /* page aligned: every offset is */
		net.ex = (struct exporter *)(b.base + b.l.exporter_off);
	}
	setup_cpus(&b, p, mp, ncpu, &needs);
	if (page_pool_init(b.pool, b.base + b.l.pool_off, b.l.pool_bytes)) {
		log_err("vmx: page pool setup failed");
		return -1;
	}
	if (setup_trace(&b, p, ncpu, &needs))
		return -1;

	/* --- host world and EPT --------------------------------------------- */
	if (build_ept(&b, p, copy, hidden) || map_guest_areas(&b, ncpu))
		return -1;
	memset(&ecam, 0, sizeof(ecam));
	if (pci_hide_get()->n)
		hide_pci_setup(b.ept, b.pool, (uint64_t)(uintptr_t)b.ff_page, &ecam);
	poll = setup_poll(&b, p, &net, ncpu, bsp, copy);
	if (setup_host(&b, p, ncpu, copy))
		return -1;
	fill_boot_info(&b, p, ncpu, hidden, &ecam, &poll, &net, copy);
	IN_COPY(copy, hv_init)(b.bi);

	if (launch_all(p, mp, ncpu, bsp, &b))
		return -1;
	log_info("vmx: all %llu CPUs run as guests of tracevisor", (unsigned long long)ncpu);
	seal_hypercalls();
	return 0;
}
