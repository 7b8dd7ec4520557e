/* SPDX-License-Identifier: MIT */
/*
 * efi_main.c - tracevisor's entry from the firmware.
 *
 * Order: logger up (COM1 + console + a boot-time ring), banner with the
 * CPU's tracing capabilities, configuration, memory map, then chainload
 * of the OS loader.  Nothing here may stop the machine from booting: every
 * problem is reported and the boot goes on without tracevisor's part.
 */
#include <efi.h>
#include <string.h>

#include "boot/chainload.h"
#include "boot/ebs_hook.h"
#include "boot/efi_util.h"
#include "boot/vmx_boot.h"
#include "boot/libc_glue.h"
#include "boot/net_boot.h"
#include "drivers/serial.h"
#include "vmm/lib/caps.h"
#include "vmm/config.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/lib/memmap.h"
#include "vmm/hw/msr.h"
#include "vmm/exit/pci_hide.h"
#include "vmm/trace/backend.h"
#include "vmm/trace/caps.h"
#include "vmm/trace/msr_policy.h"
#include "vmm/version.h"
#include "net/net.h"

#define CONFIG_FILE "\\EFI\\tracevisor\\tracevisor.conf"
#define CONFIG_MAX_BYTES (64 * 1024)
#define HEAP_BYTES (1024 * 1024)

static struct serial_port com;
/* The resident copy's own (this global in the copy): hv_serial_ops.attach. */
static struct serial_port resident_com;
static uint8_t boot_ring_mem[8192] __attribute__((aligned(8)));
static struct log_ring boot_ring;
static struct log_ring main_ring;

static void report_vmx(const struct cpu_caps *caps)
{
	uint64_t fc;

	if (!caps->vmx) {
		log_warn("VT-x not available: CPUID.1:ECX.VMX[bit 5] is 0%s; the OS will boot untraced",
			 caps->hypervisor ? " (running under a hypervisor that does not expose VMX)" : "");
		return;
	}
	/* IA32_FEATURE_CONTROL exists whenever CPUID reports VMX or SMX (SDM 4 2.1). */
	fc = hw_rdmsr(MSR_IA32_FEATURE_CONTROL);
	if ((fc & FEATURE_CONTROL_LOCK) && !(fc & FEATURE_CONTROL_VMXON_OUTSIDE_SMX)) {
		log_warn("VT-x disabled by firmware: IA32_FEATURE_CONTROL=0x%llx is locked without VMXON outside SMX; enable VT-x in the firmware setup",
			 (unsigned long long)fc);
		return;
	}
	log_info("VT-x available: CPUID.1:ECX.VMX=1, IA32_FEATURE_CONTROL=0x%llx (%s)",
		 (unsigned long long)fc,
		 (fc & FEATURE_CONTROL_LOCK) ? "locked, VMXON outside SMX allowed"
					     : "unlocked: tracevisor will lock it");
}

static void load_config(struct tv_config *cfg)
{
	struct config_result res;
	char *text;
	UINTN len;
	EFI_STATUS st;

	config_defaults(cfg);
	st = efi_read_file(efi_self->DeviceHandle, CONFIG_FILE, &text, &len, CONFIG_MAX_BYTES);
	if (st == EFI_NOT_FOUND) {
		log_info("config: no %s on tracevisor's volume, using defaults", CONFIG_FILE);
		return;
	}
	if (EFI_ERROR(st)) {
		log_err("config: cannot read %s: %s%s; using defaults", CONFIG_FILE,
			efi_strerror(st), st == EFI_BAD_BUFFER_SIZE ? " (larger than 64 KiB)" : "");
		return;
	}
	log_info("config: read %s (%llu bytes)", CONFIG_FILE, (unsigned long long)len);
	config_parse(cfg, text, len, &res);
	for (uint32_t i = 0; i < res.nerrors && i < CONFIG_MAX_ERRORS; i++)
		log_err("config: %s:%u: %s", CONFIG_FILE, res.errors[i].line, res.errors[i].msg);
	if (res.nerrors > CONFIG_MAX_ERRORS)
		log_err("config: %u more errors not shown", res.nerrors - CONFIG_MAX_ERRORS);
	if (res.nerrors)
		log_err("config: %u error(s); those lines were ignored and their keys keep their defaults",
			res.nerrors);
	efi_bs->FreePool(text);
}

static void apply_config(const struct tv_config *cfg)
{
	EFI_PHYSICAL_ADDRESS pa;
	UINTN pages = (UINTN)cfg->log_ring_kb / 4;
	EFI_STATUS st;

	log_set_level(cfg->log_level);
	if (cfg->serial_port != com.base) {
		log_remove_sink(serial_write);
		if (cfg->serial_port) {
			if (serial_init(&com, cfg->serial_port) == 0)
				log_add_sink(serial_write, &com);
			else
				log_warn("serial: no UART at %#x", cfg->serial_port);
		} else {
			com.base = 0;
		}
	}
	if (!cfg->console)
		log_remove_sink(efi_console_sink);

	/*
	 * The log ring outlives the firmware: EfiReservedMemoryType is never
	 * handed to the OS as RAM nor mapped by it for runtime services.
	 */
	st = efi_bs->AllocatePages(AllocateAnyPages, EfiReservedMemoryType, pages, &pa);
	if (EFI_ERROR(st) || log_ring_init(&main_ring, (void *)(uintptr_t)pa,
					   (uint64_t)cfg->log_ring_kb * 1024)) {
		log_err("log: cannot reserve a %u KiB log ring (%s); keeping the 8 KiB boot ring",
			cfg->log_ring_kb, efi_strerror(st));
		return;
	}
	memset((void *)(uintptr_t)pa, 0, (size_t)pages * 4096);
	log_set_ring(NULL);
	log_ring_move(&main_ring, &boot_ring);
	log_set_ring(&main_ring);
	log_info("log: %u KiB ring at %#llx (reserved memory)", cfg->log_ring_kb,
		 (unsigned long long)pa);
}

static int report_memory_map(struct mm_summary *sum)
{
	UINTN size = 0, key, dsize;
	UINT32 dver;
	void *map = NULL;
	size_t bad;
	EFI_STATUS st;
	int rc = -1;

	st = efi_bs->GetMemoryMap(&size, NULL, &key, &dsize, &dver);
	if (st != EFI_BUFFER_TOO_SMALL) {
		log_err("memory: GetMemoryMap failed: %s", efi_strerror(st));
		return -1;
	}
	/* The pool allocation itself may add descriptors: leave room. */
	size += 8 * dsize;
	if (EFI_ERROR(efi_bs->AllocatePool(EfiLoaderData, size, &map)))
		return -1;
	st = efi_bs->GetMemoryMap(&size, map, &key, &dsize, &dver);
	if (EFI_ERROR(st)) {
		log_err("memory: GetMemoryMap failed: %s", efi_strerror(st));
		goto out;
	}
	rc = mm_summarize(map, size, dsize, sum, &bad);
	if (rc) {
		log_err("memory: firmware map rejected at descriptor %zu: %s", bad, mm_strerror(rc));
		goto out;
	}
	mm_log(sum);
out:
	efi_bs->FreePool(map);
	return rc;
}

/* Backends the engine drives (vmm/trace/backend.h: every listed source has one). */
static bool backend_wired(enum tv_source s)
{
	return trace_backend_of(s) != NULL;
}

/*
 * What auto may take: not bts, whose buffer is stored through the guest's
 * paging at its physical address, which holds only while the guest
 * identity-maps it (docs/BACKENDS-BTS.md); bts must be asked for.
 */
static bool auto_takes(enum tv_source s)
{
	return backend_wired(s) && s != TV_SOURCE_BTS;
}

/*
 * The trace source for this machine, from the boot CPU's capabilities and
 * source= (docs/CONFIG.md): an explicit request the CPU or this build
 * cannot serve is an error and tracing stays off; auto takes the best
 * source the engine can drive.
 */
static void trace_setup_from_config(struct vmx_boot_params *p, const struct tv_config *cfg)
{
	struct trace_caps tc;
	char miss[160];
	enum tv_source chosen = TV_SOURCE_NONE, req = (enum tv_source)cfg->trace_source;
	char why[200];

	trace_caps_read(&tc, NULL);
	trace_caps_describe(&tc, why, sizeof(why));
	log_info("trace: caps: %s", why);
	/* The sources this CPU offers, for the export HELLO (TVP_CAP_SOURCE). */
	p->net.caps = 0;
	for (unsigned s = TV_SOURCE_MTF; s <= TV_SOURCE_PT; s++)
		if (trace_caps_missing(&tc, (enum tv_source)s, miss, sizeof(miss)) == 0)
			p->net.caps |= 1u << s;
	if (trace_choose(&tc, req, &chosen, why, sizeof(why))) {
		log_err("trace: source=%s not possible on this CPU: %s; tracing off",
			trace_caps_source_name(req), why);
		chosen = TV_SOURCE_NONE;
	} else if (req != TV_SOURCE_NONE ? !backend_wired(chosen) : !auto_takes(chosen)) {
		if (req != TV_SOURCE_NONE) {
			log_err("trace: source=%s: the CPU has it but this build cannot drive it; tracing off",
				trace_caps_source_name(req));
			chosen = TV_SOURCE_NONE;
		} else if (trace_choose(&tc, TV_SOURCE_BTF, &chosen, why, sizeof(why)) == 0) {
			log_warn("trace: auto: the CPU offers better sources, but auto takes pt, btf, lbr or mtf (bts on request): btf");
		} else if (trace_choose(&tc, TV_SOURCE_MTF, &chosen, why, sizeof(why))) {
			log_err("trace: auto: no source this build can drive (%s); tracing off", why);
			chosen = TV_SOURCE_NONE;
		} else {
			log_warn("trace: auto: the CPU offers better sources, but auto takes pt, btf, lbr or mtf (bts on request): mtf");
		}
	}
	if (chosen != TV_SOURCE_NONE)
		log_info("trace: source %s", trace_caps_source_name(chosen));
	trace_msr_configure(chosen);
	p->trace.source = (uint8_t)chosen;
	/* lbr with pmi: the last general-purpose counter is the tracer's */
	if (cfg->trace_pmi && chosen == TV_SOURCE_LBR && tc.pmu_version >= 2 &&
	    tc.pmu_gp_counters >= 1 && tc.pmu_gp_counters <= 8)
		trace_msr_configure_pmc(true, tc.pmu_gp_counters - 1);
	p->trace.overflow = cfg->trace_overflow;
	p->trace.ring_kb = cfg->trace_buffer_kb;
	/* every per-CPU buffer from the config, in bytes (docs/CONFIG.md) */
	p->trace.pt_ring_bytes = (uint64_t)config_pt_buffer_kb(cfg) << 10;
	p->trace.pt_topa_bytes = (uint64_t)config_pt_topa_kb(cfg) << 10;
	p->trace.bts_buf_bytes = (uint64_t)cfg->bts_buffer_kb << 10;
	p->trace.stop_after = cfg->trace_stop_after;
	p->trace.filter = cfg->trace_filter;
	p->trace.pt = cfg->trace_pt;
	p->trace.pmi = cfg->trace_pmi;
	p->trace.pmi_every = cfg->trace_pmi_every;
	p->trace.wait_ms = cfg->trace_wait_ms;
	p->trace.stall_tsc = cfg->trace_stall_tsc;
	p->trace.code_snapshots = cfg->code_snapshots;
	/* memory-access tracing (docs/MEMTRACE.md) */
	p->trace.mem_filter = cfg->mem_filter;
	p->trace.nmem_watch = cfg->nmem_watch;
	memcpy(p->trace.mem_watch, cfg->mem_watch, sizeof(p->trace.mem_watch));
	if (cfg->trace_pmi && chosen != TV_SOURCE_LBR && chosen != TV_SOURCE_BTS &&
	    chosen != TV_SOURCE_PT) {
		/* only source = auto gets here (config_parse refuses mtf/btf) */
		log_warn("trace: pmi = on: source %s takes no PMI: off", trace_caps_source_name(chosen));
		p->trace.pmi = 0;
	} else if (cfg->trace_pmi_every && chosen == TV_SOURCE_PT) {
		log_warn("trace: pmi_every: pt's PMI comes at a ToPA region's end: ignored");
		p->trace.pmi_every = 0;
	}
	p->trace.start_addr = cfg->trace_start_address;
	switch (cfg->trace_start) {
	case TV_TRIG_BOOT:
	case TV_TRIG_HYPERCALL:
	case TV_TRIG_ADDRESS:
	case TV_TRIG_EXIT_BOOT_SERVICES:
	case TV_TRIG_KERNEL_ENTRY:
		p->trace.start = cfg->trace_start;
		break;
	default:
		log_err("trace: trace_start %u unknown; windows open by hypercall", cfg->trace_start);
		p->trace.start = TV_TRIG_HYPERCALL;
		break;
	}
	p->trace_cpu_all = cfg->trace_all_cpus;
	memcpy(p->trace_cpus, cfg->trace_cpus, sizeof(p->trace_cpus));
}

/*
 * The serial line for the resident copy (struct hv_serial_ops): vmx_boot
 * hands the copy's table to hv_init, which attaches resident_com to the
 * UART programmed here and makes it a log sink.
 */
static void *resident_serial_attach(uint16_t port)
{
	serial_attach(&resident_com, port);
	return &resident_com;
}

static const struct hv_serial_ops serial_resident_ops = { resident_serial_attach, serial_write };

/* The blue pill, when VT-x is there and the config allows it. */
/*
 * The export network for the resident copy: the NIC net_boot chose,
 * hidden from the guest from now on (before vmx_boot copies the list),
 * and the net config.  Only when something is traced.
 */
static void net_for_resident(struct vmx_boot_params *p, const struct tv_config *cfg,
			     const struct pci_dev *nic, uint64_t tsc_hz)
{
	struct hv_net *n = &p->net;
	int rc;

	n->enabled = false;
	if (!nic)
		return;
	if (p->trace.source == TV_SOURCE_NONE) {
		log_info("net: nothing is traced: the NIC stays with the OS, no network export");
		return;
	}
	/*
	 * Taking the NIC away from the OS needs a reason: a receiver that
	 * someone configured.  The default (slirp's host) means nothing on a
	 * real network, and a machine booted with defaults keeps its NIC.
	 */
	if (!cfg->receiver_set) {
		log_info("net: no receiver= in tracevisor.conf: the NIC stays with the OS, trace windows go over serial");
		return;
	}
	rc = pci_hide_add(nic->addr.bus, nic->addr.dev, nic->addr.fn);
	if (rc) {
		log_err("net: cannot hide the export NIC %02x:%02x.%u from the guest (list full): no network export",
			nic->addr.bus, nic->addr.dev, nic->addr.fn);
		return;
	}
	n->nic = (struct hv_nic_id){ { nic->addr.bus, nic->addr.dev, nic->addr.fn },
				     nic->vendor, nic->device };
	n->dhcp = cfg->net_dhcp;
	n->ip = cfg->net_ip;
	n->prefix = cfg->net_prefix;
	n->gw = cfg->net_gw;
	n->receiver_ip = cfg->receiver_ip;
	n->receiver_port = cfg->receiver_port;
	n->keylen = cfg->control_key_len;
	memcpy(n->key, cfg->control_key, sizeof(n->key));
	{
		const uint8_t *dk;

		n->data_keylen = (uint8_t)config_data_key(cfg, &dk);
		memcpy(n->data_key, dk, n->data_keylen);
	}
	memcpy(n->machine, cfg->machine, sizeof(n->machine));
	n->tsc_hz = tsc_hz;
	n->heartbeat_s = cfg->heartbeat_s;
	n->enabled = true;
	log_info("net: %02x:%02x.%u is the export NIC: hidden from the guest, driven from VMX root",
		 nic->addr.bus, nic->addr.dev, nic->addr.fn);
}

static void virtualize(const struct cpu_caps *caps, const struct tv_config *cfg,
		       const struct mm_summary *sum, int map_ok, uint64_t tsc_hz,
		       const struct pci_dev *nic)
{
	struct vmx_boot_params p;
	struct hw_cpuid_regs r;
	uint64_t top;

	if (!caps->vmx)
		return;  /* reported in the banner */
	if (!cfg->vmx) {
		log_info("vmx: off in tracevisor.conf; booting unvirtualized");
		return;
	}
	if (map_ok) {
		log_err("vmx: no usable memory map; booting unvirtualized");
		return;
	}
	memset(&p, 0, sizeof(p));
	hw_cpuid(0x80000000u, 0, &r);
	p.phys_addr_bits = 36;
	if (r.eax >= 0x80000008u) {
		hw_cpuid(0x80000008u, 0, &r);
		p.phys_addr_bits = r.eax & 0xff;
	}
	/* All RAM and MMIO the firmware knows, and at least the 4 GiB below. */
	top = sum->top_of_all > (4ull << 30) ? sum->top_of_all : (4ull << 30);
	p.map_top = (top + (1ull << 30) - 1) & ~((1ull << 30) - 1);
	p.log_ring = log_get_ring();
	p.log_ring_pa = (uint64_t)(uintptr_t)main_ring.buf;
	p.log_ring_bytes = main_ring.size;
	p.serial_port = com.base;
	p.serial_ops = com.base ? &serial_resident_ops : NULL;
	p.console_sink = cfg->console ? efi_console_sink : NULL;
	p.tsc_hz = tsc_hz;
	p.heartbeat_s = cfg->heartbeat_s;
	p.poll_us = cfg->poll_us;
	p.pt_drain_us = config_pt_drain_us(cfg);   /* auto: from pt_topa_kb */
	for (uint32_t i = 0; i < cfg->npci_hide; i++)
		if (pci_hide_add(cfg->pci_hide[i].bus, cfg->pci_hide[i].dev, cfg->pci_hide[i].fn))
			log_err("pci: cannot hide %02x:%02x.%x: list full", cfg->pci_hide[i].bus,
				cfg->pci_hide[i].dev, cfg->pci_hide[i].fn);
	trace_setup_from_config(&p, cfg);
	net_for_resident(&p, cfg, nic, tsc_hz);
	if (vmx_boot(&p))
		log_warn("vmx: booting unvirtualized");
	else if (p.trace.source != TV_SOURCE_NONE)
		ebs_hook_install();   /* the event: windows (docs/HYPERCALLS.md), the ACPI power-off port */
}

/* The TSC rate, measured against the firmware's Stall() (20 ms). */
static uint64_t calibrate_tsc(void)
{
	uint64_t t0 = hw_rdtsc(), t1;

	efi_bs->Stall(20000);
	t1 = hw_rdtsc();
	return (t1 - t0) * 50;
}

/* Called by gnu-efi's crt0 with the SysV ABI after self-relocation. */
EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st);

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	struct cpu_caps caps;
	struct tv_config cfg;
	EFI_STATUS st;
	EFI_PHYSICAL_ADDRESS heap;
	char vendor[48];
	uint64_t tsc_hz;
	struct mm_summary sum;
	struct pci_dev nic;
	bool have_nic = false;
	int map_rc;

	st = efi_util_init(image, systab);
	/* Before anything touches the network: its pristine state, for the copy. */
	if (!EFI_ERROR(st))
		vmx_boot_save_net_state();
	log_ring_init(&boot_ring, boot_ring_mem, sizeof(boot_ring_mem));
	log_set_ring(&boot_ring);
	if (serial_init(&com, 0x3f8) == 0)
		log_add_sink(serial_write, &com);
	log_add_sink(efi_console_sink, NULL);
	if (EFI_ERROR(st)) {
		log_err("tracevisor: no loaded-image protocol for our own image: %s", efi_strerror(st));
		return st;
	}
	/* newlib's malloc (used by nothing on the hot paths) draws from here. */
	if (!EFI_ERROR(efi_bs->AllocatePages(AllocateAnyPages, EfiLoaderData,
					     HEAP_BYTES / 4096, &heap)))
		libc_glue_set_heap((void *)(uintptr_t)heap, HEAP_BYTES);

	efi_ucs2_to_ascii(vendor, sizeof(vendor), systab->FirmwareVendor, sizeof(vendor));
	log_info("tracevisor %s (%s) - branch tracing hypervisor", TV_VERSION, TV_GIT);
	log_info("image handle %p, loaded at %p, %llu bytes; firmware \"%s\" rev %#x, UEFI %u.%u",
		 (void *)image, efi_self->ImageBase, (unsigned long long)efi_self->ImageSize,
		 vendor, systab->FirmwareRevision, systab->Hdr.Revision >> 16,
		 (systab->Hdr.Revision & 0xffff) / 10);

	caps_read(&caps);
	caps_log(&caps);
	report_vmx(&caps);

	load_config(&cfg);
	apply_config(&cfg);
	config_log(&cfg);
	map_rc = report_memory_map(&sum);

	tsc_hz = calibrate_tsc();
	log_info("tsc: %llu.%03llu MHz (measured over 20 ms of firmware Stall)",
		 (unsigned long long)(tsc_hz / 1000000),
		 (unsigned long long)(tsc_hz / 1000 % 1000));
	if (net_init(tsc_hz))
		log_warn("net: lwIP not initialised");
	else
		have_nic = net_boot(&cfg, tsc_hz, &nic) == 0;

	virtualize(&caps, &cfg, &sum, map_rc, tsc_hz, have_nic ? &nic : NULL);

	st = chainload(&cfg);
	log_err("tracevisor: returning to the firmware (%s)", efi_strerror(st));
	return st;
}
