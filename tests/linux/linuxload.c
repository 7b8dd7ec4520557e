/* SPDX-License-Identifier: MIT */
/*
 * linuxload.c - the test bench's Linux loader (an EFI application; not
 * part of tracevisor).  tracevisor chainloads it (loader = ...) and it
 * starts Debian's kernel through the kernel's EFI stub:
 *
 *   1. ACPI.  OVMF under QEMU publishes ACPI tables (from fw_cfg); OVMF
 *      under Bochs publishes none, and Linux then finds neither the second
 *      CPU nor a way to power off.  Without an ACPI 2.0 configuration
 *      table this loader builds a minimal set for the i440fx/PIIX4 machine
 *      Bochs emulates: RSDP (rev 2) -> XSDT (and RSDT) -> FADT -> FACS,
 *      DSDT (only \_S5, so ACPI power-off works) and MADT (one local APIC
 *      per CPU from the EFI MP services, one I/O APIC, IRQ0 -> GSI2 and the
 *      SCI as interrupt source overrides), and installs the RSDP with
 *      InstallConfigurationTable(ACPI_20_TABLE_GUID).  Layouts: ACPI 6.4,
 *      section 5.2 (checked below with static asserts).
 *   2. Linux, one of two ways:
 *      - EFI stub (the baseline): LoadImage(\EFI\linux\vmlinuz) from this
 *        loader's own volume (a file device path, so the stub finds
 *        initrd= on the same volume), LoadOptions = \EFI\linux\cmdline.txt
 *        as UCS-2 (or a built-in default), StartImage.
 *      - direct (when \EFI\linux\vmlinux exists): the uncompressed kernel
 *        ELF (packed by tests/linux/elfpack.c), started through the 64-bit
 *        boot protocol (Documentation/x86/boot.rst, zero-page.rst):
 *        PT_LOAD segments at a 2 MiB aligned physical base (the kernel
 *        fixes up its own page tables for any such base), the initrd named
 *        by initrd= and the command line below 4 GiB, boot_params with an
 *        e820 map made from the EFI memory map and acpi_rsdp_addr, then
 *        ExitBootServices and a jump to the ELF entry (startup_64) with
 *        RSI = boot_params.  Linux then boots as on a BIOS machine (no EFI
 *        runtime services).  Under Bochs this skips the ~20 s the stub's
 *        xz decompression takes.
 *
 * Everything it does is reported as "linuxload: ..." lines on COM1 and the
 * firmware console.  If Linux cannot be started it says why and powers
 * the machine off.
 */
#include <efi.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vmm/hw/hw.h"

#define COM1 0x3f8
#define MAX_CPUS 64

#define KERNEL_PATH u"\\EFI\\linux\\vmlinuz"
#define VMLINUX_PATH u"\\EFI\\linux\\vmlinux"
#define CMDLINE_PATH u"\\EFI\\linux\\cmdline.txt"
#define DEFAULT_CMDLINE                                                          \
	"console=ttyS0,115200 initrd=\\EFI\\linux\\initrd.img quiet idle=halt "  \
	"mitigations=off cryptomgr.notests init_on_alloc=0 audit=0 8250.nr_uarts=1"
#define CMDLINE_MAX 1024

static EFI_SYSTEM_TABLE *st;
static EFI_BOOT_SERVICES *bs;

/* --- output ------------------------------------------------------------------ */

static void com1_puts(const char *s)
{
	for (; *s; s++) {
		for (int i = 0; i < 100000 && !(hw_inb(COM1 + 5) & 0x20); i++)
			hw_pause();
		hw_outb(COM1, (uint8_t)*s);
	}
}

/* One line on COM1 and on ConOut, prefixed "linuxload: ". */
static void say(const char *s)
{
	CHAR16 w[200];
	const char *prefix = "linuxload: ";
	int n = 0;

	com1_puts(prefix);
	com1_puts(s);
	com1_puts("\r\n");
	for (const char *p = prefix; *p; p++)
		w[n++] = (CHAR16)*p;
	for (; *s && n < 196; s++)
		w[n++] = (CHAR16)*s;
	w[n++] = '\r';
	w[n++] = '\n';
	w[n] = 0;
	st->ConOut->OutputString(st->ConOut, w);
}

/* After ExitBootServices: COM1 only. */
static void say_com1(const char *s)
{
	com1_puts("linuxload: ");
	com1_puts(s);
	com1_puts("\r\n");
}

/* A tiny line builder: no printf in a freestanding image. */
struct line {
	char buf[200];
	size_t len;
};

static struct line *l_str(struct line *l, const char *s)
{
	while (*s && l->len + 1 < sizeof(l->buf))
		l->buf[l->len++] = *s++;
	l->buf[l->len] = '\0';
	return l;
}

static struct line *l_hex(struct line *l, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[19];
	int n = 0, sh = 60;

	while (sh > 0 && !((v >> sh) & 0xf))
		sh -= 4;
	tmp[n++] = '0';
	tmp[n++] = 'x';
	for (; sh >= 0; sh -= 4)
		tmp[n++] = digits[(v >> sh) & 0xf];
	tmp[n] = '\0';
	return l_str(l, tmp);
}

static struct line *l_dec(struct line *l, uint64_t v)
{
	char tmp[21];
	int n = sizeof(tmp) - 1;

	tmp[n] = '\0';
	do {
		tmp[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return l_str(l, tmp + n);
}

static struct line *l_w(struct line *l, const CHAR16 *s)
{
	char c[2] = { 0, 0 };

	for (; s && *s; s++) {
		c[0] = (*s < 0x80 && *s >= 0x20) ? (char)*s : '?';
		l_str(l, c);
	}
	return l;
}

static void l_say(struct line *l)
{
	say(l->buf);
	l->len = 0;
	l->buf[0] = '\0';
}

static void l_status(struct line *l, EFI_STATUS s)
{
	l_str(l, " (EFI status ");
	l_hex(l, (uint64_t)s & ~(1ULL << 63));
	l_str(l, (s >> 63) ? " error)" : ")");
}

static __attribute__((noreturn)) void power_off(void)
{
	bs->Stall(20000);
	st->RuntimeServices->ResetSystem(EfiResetShutdown, EFI_SUCCESS, 0, NULL);
	/* Bochs: its shutdown port, in case the firmware's reset did not stop it. */
	for (const char *s = "Shutdown"; *s; s++)
		hw_outb(0x8900, (uint8_t)*s);
	say("power-off failed, halting");
	hw_stop_cpu();
}

/* --- ACPI tables (ACPI 6.4, chapter 5.2) ----------------------------------------- */

struct acpi_rsdp {                 /* 5.2.5.3 */
	char signature[8];         /* "RSD PTR " */
	uint8_t checksum;          /* bytes 0..19 sum to 0 */
	char oem_id[6];
	uint8_t revision;          /* 2: ACPI 2.0+, XSDT valid */
	uint32_t rsdt_address;
	uint32_t length;           /* 36 */
	uint64_t xsdt_address;
	uint8_t extended_checksum; /* all 36 bytes sum to 0 */
	uint8_t reserved[3];
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_rsdp) == 36, "RSDP");
_Static_assert(offsetof(struct acpi_rsdp, xsdt_address) == 24, "RSDP.XsdtAddress");

struct acpi_header {               /* 5.2.6 */
	char signature[4];
	uint32_t length;
	uint8_t revision;
	uint8_t checksum;          /* whole table sums to 0 */
	char oem_id[6];
	char oem_table_id[8];
	uint32_t oem_revision;
	char creator_id[4];
	uint32_t creator_revision;
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_header) == 36, "SDT header");

struct acpi_gas {                  /* 5.2.3.2 Generic Address Structure */
	uint8_t space_id;          /* 1: system I/O */
	uint8_t bit_width;
	uint8_t bit_offset;
	uint8_t access_size;       /* 1 byte, 2 word, 3 dword, 4 qword */
	uint64_t address;
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_gas) == 12, "GAS");

struct acpi_fadt {                 /* 5.2.9, revision 6 */
	struct acpi_header h;
	uint32_t firmware_ctrl;
	uint32_t dsdt;
	uint8_t reserved0;
	uint8_t preferred_pm_profile;
	uint16_t sci_int;
	uint32_t smi_cmd;
	uint8_t acpi_enable;
	uint8_t acpi_disable;
	uint8_t s4bios_req;
	uint8_t pstate_cnt;
	uint32_t pm1a_evt_blk;
	uint32_t pm1b_evt_blk;
	uint32_t pm1a_cnt_blk;
	uint32_t pm1b_cnt_blk;
	uint32_t pm2_cnt_blk;
	uint32_t pm_tmr_blk;
	uint32_t gpe0_blk;
	uint32_t gpe1_blk;
	uint8_t pm1_evt_len;
	uint8_t pm1_cnt_len;
	uint8_t pm2_cnt_len;
	uint8_t pm_tmr_len;
	uint8_t gpe0_blk_len;
	uint8_t gpe1_blk_len;
	uint8_t gpe1_base;
	uint8_t cst_cnt;
	uint16_t p_lvl2_lat;
	uint16_t p_lvl3_lat;
	uint16_t flush_size;
	uint16_t flush_stride;
	uint8_t duty_offset;
	uint8_t duty_width;
	uint8_t day_alrm;
	uint8_t mon_alrm;
	uint8_t century;
	uint16_t iapc_boot_arch;
	uint8_t reserved1;
	uint32_t flags;
	struct acpi_gas reset_reg;
	uint8_t reset_value;
	uint16_t arm_boot_arch;
	uint8_t minor_version;
	uint64_t x_firmware_ctrl;
	uint64_t x_dsdt;
	struct acpi_gas x_pm1a_evt_blk;
	struct acpi_gas x_pm1b_evt_blk;
	struct acpi_gas x_pm1a_cnt_blk;
	struct acpi_gas x_pm1b_cnt_blk;
	struct acpi_gas x_pm2_cnt_blk;
	struct acpi_gas x_pm_tmr_blk;
	struct acpi_gas x_gpe0_blk;
	struct acpi_gas x_gpe1_blk;
	struct acpi_gas sleep_control_reg;
	struct acpi_gas sleep_status_reg;
	uint64_t hypervisor_vendor_id;
} __attribute__((packed));
_Static_assert(offsetof(struct acpi_fadt, sci_int) == 46, "FADT.SCI_INT");
_Static_assert(offsetof(struct acpi_fadt, pm1a_evt_blk) == 56, "FADT.PM1a_EVT_BLK");
_Static_assert(offsetof(struct acpi_fadt, pm1_evt_len) == 88, "FADT.PM1_EVT_LEN");
_Static_assert(offsetof(struct acpi_fadt, iapc_boot_arch) == 109, "FADT.IAPC_BOOT_ARCH");
_Static_assert(offsetof(struct acpi_fadt, flags) == 112, "FADT.Flags");
_Static_assert(offsetof(struct acpi_fadt, reset_reg) == 116, "FADT.RESET_REG");
_Static_assert(offsetof(struct acpi_fadt, x_firmware_ctrl) == 132, "FADT.X_FIRMWARE_CTRL");
_Static_assert(offsetof(struct acpi_fadt, x_pm1a_evt_blk) == 148, "FADT.X_PM1a_EVT_BLK");
_Static_assert(offsetof(struct acpi_fadt, sleep_control_reg) == 244, "FADT.SLEEP_CONTROL_REG");
_Static_assert(sizeof(struct acpi_fadt) == 276, "FADT revision 6");

#define FADT_WBINVD       (1u << 0)
#define FADT_PROC_C1      (1u << 2)
#define FADT_PWR_BUTTON   (1u << 4)  /* no fixed power button */
#define FADT_SLP_BUTTON   (1u << 5)  /* no fixed sleep button */
#define FADT_RESET_REG_SUP (1u << 10)
#define FADT_BOOT_LEGACY_DEVICES (1u << 0)
#define FADT_BOOT_8042    (1u << 1)

struct acpi_facs {                 /* 5.2.10 */
	char signature[4];         /* "FACS" */
	uint32_t length;           /* 64 */
	uint32_t hardware_signature;
	uint32_t firmware_waking_vector;
	uint32_t global_lock;
	uint32_t flags;
	uint64_t x_firmware_waking_vector;
	uint8_t version;           /* 2 */
	uint8_t reserved0[3];
	uint32_t ospm_flags;
	uint8_t reserved1[24];
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_facs) == 64, "FACS");

struct acpi_madt {                 /* 5.2.12 */
	struct acpi_header h;
	uint32_t local_apic_address;
	uint32_t flags;            /* bit 0 PCAT_COMPAT: dual 8259 present */
} __attribute__((packed));
_Static_assert(sizeof(struct acpi_madt) == 44, "MADT");

struct madt_local_apic {           /* 5.2.12.2, type 0 */
	uint8_t type, length;
	uint8_t processor_uid;
	uint8_t apic_id;
	uint32_t flags;            /* bit 0 Enabled */
} __attribute__((packed));
_Static_assert(sizeof(struct madt_local_apic) == 8, "MADT local APIC");

struct madt_io_apic {              /* 5.2.12.3, type 1 */
	uint8_t type, length;
	uint8_t io_apic_id;
	uint8_t reserved;
	uint32_t address;
	uint32_t gsi_base;
} __attribute__((packed));
_Static_assert(sizeof(struct madt_io_apic) == 12, "MADT I/O APIC");

struct madt_iso {                  /* 5.2.12.5, type 2 */
	uint8_t type, length;
	uint8_t bus;               /* 0: ISA */
	uint8_t source;            /* ISA IRQ */
	uint32_t gsi;
	uint16_t flags;            /* MPS INTI flags */
} __attribute__((packed));
_Static_assert(sizeof(struct madt_iso) == 10, "MADT interrupt source override");

struct madt_local_apic_nmi {       /* 5.2.12.7, type 4 */
	uint8_t type, length;
	uint8_t processor_uid;     /* 0xff: all */
	uint16_t flags;
	uint8_t lint;
} __attribute__((packed));
_Static_assert(sizeof(struct madt_local_apic_nmi) == 6, "MADT local APIC NMI");

/* MPS INTI flags: polarity bits 1:0, trigger mode bits 3:2. */
#define INTI_CONFORMING   0x0000
#define INTI_ACTIVE_HIGH  0x0001
#define INTI_LEVEL        0x000c

#define LAPIC_BASE  0xfee00000u
#define IOAPIC_BASE 0xfec00000u

/*
 * DSDT body: Name (\_S5, Package (4) { 0, 0, 0, 0 }) in AML (ACPI 6.4
 * 20.2.5.1 NameOp, 20.2.5.4 PackageOp): SLP_TYP 0 is the PIIX4's soft-off
 * (Bochs: iodev/acpi.cc "soft power off").
 */
static const uint8_t dsdt_aml[] = {
	0x08, '\\', '_', 'S', '5', '_',  /* NameOp \_S5_ */
	0x12, 0x06, 0x04,                /* PackageOp, PkgLength 6, 4 elements */
	0x00, 0x00, 0x00, 0x00,          /* ZeroOp x 4 */
};

static uint8_t acpi_sum(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint8_t s = 0;

	while (n--)
		s = (uint8_t)(s + *b++);
	return s;
}

static void acpi_header_init(struct acpi_header *h, const char *sig, uint32_t len, uint8_t rev)
{
	memcpy(h->signature, sig, 4);
	h->length = len;
	h->revision = rev;
	memcpy(h->oem_id, "TVBNCH", 6);
	memcpy(h->oem_table_id, "LINUXLD ", 8);
	h->oem_revision = 1;
	memcpy(h->creator_id, "TVLL", 4);
	h->creator_revision = 1;
}

static void acpi_header_finish(struct acpi_header *h)
{
	h->checksum = 0;
	h->checksum = (uint8_t)-acpi_sum(h, h->length);
}

static struct acpi_gas gas_io(uint16_t port, uint8_t bits, uint8_t access)
{
	struct acpi_gas g = { .space_id = 1, .bit_width = bits, .access_size = access,
			      .address = port };

	return g;
}

/* --- machine facts: PCI config (mechanism 1), I/O APIC, CPUs --------------------- */

static uint32_t pci_read32(uint8_t dev, uint8_t fn, uint8_t reg)
{
	hw_outl(0xcf8, 0x80000000u | ((uint32_t)dev << 11) | ((uint32_t)fn << 8) | (reg & 0xfcu));
	return hw_inl(0xcfc);
}

static void pci_write32(uint8_t dev, uint8_t fn, uint8_t reg, uint32_t v)
{
	hw_outl(0xcf8, 0x80000000u | ((uint32_t)dev << 11) | ((uint32_t)fn << 8) | (reg & 0xfcu));
	hw_outl(0xcfc, v);
}

struct platform {
	uint16_t pm_base;
	uint8_t sci;
	uint8_t io_apic_id;
	unsigned ncpus;
	uint8_t apic_ids[MAX_CPUS];
};

/*
 * PIIX4 power management (function 3 of the south bridge, 8086:7113):
 * PMBA (0x40) holds the PM I/O base, PMREGMISC (0x80) bit 0 enables it,
 * 0x3c the interrupt line the firmware routed the SCI to.  OVMF programs
 * PMBA = 0xb000 on i440fx; the fallbacks are TESTBENCH.md's values.
 */
static void find_pm(struct platform *pf)
{
	struct line l = { .len = 0 };
	uint32_t host = pci_read32(0, 0, 0), id = pci_read32(1, 3, 0);
	uint32_t pmba, misc, intr;

	pf->pm_base = 0xb000;
	pf->sci = 10;
	if (id != 0x71138086u) {
		l_str(&l, "no PIIX4 PM at 00:01.3 (host bridge ");
		l_hex(&l, host);
		l_str(&l, "): assuming PM base 0xb000, SCI 10");
		l_say(&l);
		return;
	}
	pmba = pci_read32(1, 3, 0x40);
	misc = pci_read32(1, 3, 0x80);
	intr = pci_read32(1, 3, 0x3c);
	if ((pmba & 0xffc0u) == 0 || !(misc & 1)) {
		/* Nobody enabled the PM registers: do it at the usual place. */
		pci_write32(1, 3, 0x40, 0xb000u | 1u);
		pci_write32(1, 3, 0x80, misc | 1u);
		pmba = pci_read32(1, 3, 0x40);
		say("PIIX4 PM I/O was off: enabled at 0xb000");
	}
	pf->pm_base = (uint16_t)(pmba & 0xffc0u);
	if ((intr & 0xff) >= 1 && (intr & 0xff) <= 15)
		pf->sci = (uint8_t)(intr & 0xff);
	l_str(&l, "PIIX4 PM: base ");
	l_hex(&l, pf->pm_base);
	l_str(&l, ", interrupt line ");
	l_dec(&l, intr & 0xff);
	l_str(&l, " -> SCI ");
	l_dec(&l, pf->sci);
	l_say(&l);
}

static uint8_t io_apic_id(void)
{
	volatile uint32_t *regsel = (volatile uint32_t *)(uintptr_t)IOAPIC_BASE;
	volatile uint32_t *win = (volatile uint32_t *)(uintptr_t)(IOAPIC_BASE + 0x10);

	*regsel = 0;               /* IOAPICID */
	return (uint8_t)((*win >> 24) & 0x0f);
}

/* EFI_MP_SERVICES_PROTOCOL (UEFI PI spec 1.7, volume 2, 13.4). */
#define MP_SERVICES_GUID \
	{ 0x3fdda605, 0xa76e, 0x4f46, { 0xad, 0x29, 0x12, 0xf4, 0x53, 0x1b, 0x3d, 0x08 } }
struct mp_processor_info {
	UINT64 processor_id;       /* the local APIC ID */
	UINT32 status_flag;        /* bit 1: enabled */
	UINT32 package, core, thread;
	UINT8 extended[24];
};
struct mp_services {
	EFI_STATUS (EFIAPI *get_number_of_processors)(struct mp_services *self, UINTN *n,
						      UINTN *enabled);
	EFI_STATUS (EFIAPI *get_processor_info)(struct mp_services *self, UINTN cpu,
						struct mp_processor_info *info);
};

static void find_cpus(struct platform *pf)
{
	EFI_GUID guid = MP_SERVICES_GUID;
	struct mp_services *mp = NULL;
	struct line l = { .len = 0 };
	struct hw_cpuid_regs r;
	UINTN n = 0, enabled = 0;

	pf->ncpus = 0;
	if (!EFI_ERROR(bs->LocateProtocol(&guid, NULL, (void **)&mp)) && mp &&
	    !EFI_ERROR(mp->get_number_of_processors(mp, &n, &enabled))) {
		for (UINTN i = 0; i < n && pf->ncpus < MAX_CPUS; i++) {
			struct mp_processor_info info;

			if (EFI_ERROR(mp->get_processor_info(mp, i, &info)) || !(info.status_flag & 2))
				continue;
			pf->apic_ids[pf->ncpus++] = (uint8_t)info.processor_id;
		}
	}
	if (pf->ncpus == 0) {
		hw_cpuid(1, 0, &r);
		pf->apic_ids[0] = (uint8_t)(r.ebx >> 24);
		pf->ncpus = 1;
		say("no EFI MP services: 1 CPU (this one)");
	}
	l_str(&l, "CPUs: ");
	l_dec(&l, pf->ncpus);
	l_str(&l, " (EFI MP services: ");
	l_dec(&l, n);
	l_str(&l, " present, ");
	l_dec(&l, enabled);
	l_str(&l, " enabled), APIC IDs");
	for (unsigned i = 0; i < pf->ncpus; i++) {
		l_str(&l, " ");
		l_dec(&l, pf->apic_ids[i]);
	}
	l_say(&l);
}

/* Zeroed pages below 4 GiB (ACPI 1.0 pointers are 32-bit); NULL when none. */
static void *alloc_below_4g(EFI_MEMORY_TYPE type, UINTN pages)
{
	EFI_PHYSICAL_ADDRESS pa = 0xffffffffu;

	if (EFI_ERROR(bs->AllocatePages(AllocateMaxAddress, type, pages, &pa)))
		return NULL;
	memset((void *)(uintptr_t)pa, 0, pages * 4096);
	return (void *)(uintptr_t)pa;
}

/* Build and install the tables; returns 0 or -1 (said why). */
static int install_acpi(const struct platform *pf)
{
	EFI_GUID acpi20 = ACPI_20_TABLE_GUID;
	struct line l = { .len = 0 };
	uint8_t *base, *p;
	struct acpi_facs *facs;
	struct acpi_rsdp *rsdp;
	struct acpi_header *xsdt, *rsdt, *dsdt;
	struct acpi_fadt *fadt;
	struct acpi_madt *madt;
	uint64_t *xent;
	uint32_t *rent;
	EFI_STATUS s;

	/* FACS in ACPI NVS (5.2.10: firmware memory, 64-byte aligned); the rest is reclaimable. */
	facs = alloc_below_4g(EfiACPIMemoryNVS, 1);
	base = alloc_below_4g(EfiACPIReclaimMemory, 2);
	if (!facs || !base) {
		say("ACPI: cannot allocate memory below 4 GiB, installing nothing");
		return -1;
	}
	memcpy(facs->signature, "FACS", 4);
	facs->length = sizeof(*facs);
	facs->version = 2;

	p = base;
	rsdp = (struct acpi_rsdp *)p;
	p += 64;
	xsdt = (struct acpi_header *)p;
	p += 64;
	rsdt = (struct acpi_header *)p;
	p += 64;
	dsdt = (struct acpi_header *)p;
	p += 64;
	fadt = (struct acpi_fadt *)p;
	p += 320;
	madt = (struct acpi_madt *)p;

	/* DSDT */
	acpi_header_init(dsdt, "DSDT", sizeof(*dsdt) + sizeof(dsdt_aml), 2);
	memcpy(dsdt + 1, dsdt_aml, sizeof(dsdt_aml));
	acpi_header_finish(dsdt);

	/* FADT: PIIX4 PM1a event (4 bytes), control (2) and timer (4, 24-bit) blocks. */
	acpi_header_init(&fadt->h, "FACP", sizeof(*fadt), 6);
	fadt->minor_version = 4;
	/* 32-bit FACS pointer only: with both set, Linux maps the FACS twice. */
	fadt->firmware_ctrl = (uint32_t)(uintptr_t)facs;
	fadt->dsdt = (uint32_t)(uintptr_t)dsdt;
	fadt->x_dsdt = (uint64_t)(uintptr_t)dsdt;
	fadt->sci_int = pf->sci;
	/* SMI_CMD 0: no SMI handshake, the machine is in ACPI mode already. */
	fadt->smi_cmd = 0;
	fadt->pm1a_evt_blk = pf->pm_base;
	fadt->pm1a_cnt_blk = pf->pm_base + 4u;
	fadt->pm_tmr_blk = pf->pm_base + 8u;
	fadt->pm1_evt_len = 4;
	fadt->pm1_cnt_len = 2;
	fadt->pm_tmr_len = 4;
	fadt->x_pm1a_evt_blk = gas_io(pf->pm_base, 32, 2);
	fadt->x_pm1a_cnt_blk = gas_io((uint16_t)(pf->pm_base + 4u), 16, 2);
	fadt->x_pm_tmr_blk = gas_io((uint16_t)(pf->pm_base + 8u), 32, 3);
	/* No C2/C3 (latencies above 100/1000 us say "not supported"). */
	fadt->p_lvl2_lat = 0x0fff;
	fadt->p_lvl3_lat = 0x0fff;
	fadt->century = 0x32;      /* CMOS century byte */
	fadt->iapc_boot_arch = FADT_BOOT_LEGACY_DEVICES | FADT_BOOT_8042;
	fadt->flags = FADT_WBINVD | FADT_PROC_C1 | FADT_PWR_BUTTON | FADT_SLP_BUTTON |
		      FADT_RESET_REG_SUP;
	/* Reset through the PIIX reset control register 0xcf9 (hard reset + reset). */
	fadt->reset_reg = gas_io(0xcf9, 8, 1);
	fadt->reset_value = 0x06;
	acpi_header_finish(&fadt->h);

	/* MADT */
	acpi_header_init(&madt->h, "APIC", sizeof(*madt), 5);
	madt->local_apic_address = LAPIC_BASE;
	madt->flags = 1;
	p = (uint8_t *)(madt + 1);
	for (unsigned i = 0; i < pf->ncpus; i++) {
		struct madt_local_apic *e = (struct madt_local_apic *)p;

		e->type = 0;
		e->length = sizeof(*e);
		e->processor_uid = (uint8_t)i;
		e->apic_id = pf->apic_ids[i];
		e->flags = 1;
		p += sizeof(*e);
	}
	{
		struct madt_io_apic *e = (struct madt_io_apic *)p;

		e->type = 1;
		e->length = sizeof(*e);
		e->io_apic_id = pf->io_apic_id;
		e->address = IOAPIC_BASE;
		e->gsi_base = 0;
		p += sizeof(*e);
	}
	{
		/* The PIT's IRQ0 is wired to I/O APIC pin 2. */
		struct madt_iso *e = (struct madt_iso *)p;

		e->type = 2;
		e->length = sizeof(*e);
		e->source = 0;
		e->gsi = 2;
		e->flags = INTI_CONFORMING;
		p += sizeof(*e);
	}
	{
		/* The SCI: level triggered, active high on this chipset's I/O APIC input. */
		struct madt_iso *e = (struct madt_iso *)p;

		e->type = 2;
		e->length = sizeof(*e);
		e->source = pf->sci;
		e->gsi = pf->sci;
		e->flags = INTI_ACTIVE_HIGH | INTI_LEVEL;
		p += sizeof(*e);
	}
	{
		/* LINT1 of every local APIC is NMI. */
		struct madt_local_apic_nmi *e = (struct madt_local_apic_nmi *)p;

		e->type = 4;
		e->length = sizeof(*e);
		e->processor_uid = 0xff;
		e->flags = INTI_CONFORMING;
		e->lint = 1;
		p += sizeof(*e);
	}
	madt->h.length = (uint32_t)(p - (uint8_t *)madt);
	acpi_header_finish(&madt->h);

	/* XSDT and RSDT: FADT, MADT. */
	acpi_header_init(xsdt, "XSDT", sizeof(*xsdt) + 2 * 8, 1);
	xent = (uint64_t *)(void *)(xsdt + 1);
	xent[0] = (uint64_t)(uintptr_t)fadt;
	xent[1] = (uint64_t)(uintptr_t)madt;
	acpi_header_finish(xsdt);
	acpi_header_init(rsdt, "RSDT", sizeof(*rsdt) + 2 * 4, 1);
	rent = (uint32_t *)(void *)(rsdt + 1);
	rent[0] = (uint32_t)(uintptr_t)fadt;
	rent[1] = (uint32_t)(uintptr_t)madt;
	acpi_header_finish(rsdt);

	/* RSDP: first checksum over the ACPI 1.0 part (20 bytes), then the whole. */
	memcpy(rsdp->signature, "RSD PTR ", 8);
	memcpy(rsdp->oem_id, "TVBNCH", 6);
	rsdp->revision = 2;
	rsdp->rsdt_address = (uint32_t)(uintptr_t)rsdt;
	rsdp->length = sizeof(*rsdp);
	rsdp->xsdt_address = (uint64_t)(uintptr_t)xsdt;
	rsdp->checksum = (uint8_t)-acpi_sum(rsdp, 20);
	rsdp->extended_checksum = (uint8_t)-acpi_sum(rsdp, sizeof(*rsdp));

	s = bs->InstallConfigurationTable(&acpi20, rsdp);
	if (EFI_ERROR(s)) {
		l_str(&l, "ACPI: InstallConfigurationTable failed");
		l_status(&l, s);
		l_say(&l);
		return -1;
	}
	l_str(&l, "ACPI: installed RSDP at ");
	l_hex(&l, (uint64_t)(uintptr_t)rsdp);
	l_str(&l, ": XSDT, FADT (PM base ");
	l_hex(&l, pf->pm_base);
	l_str(&l, ", SCI ");
	l_dec(&l, pf->sci);
	l_str(&l, "), FACS, DSDT (\\_S5), MADT (");
	l_dec(&l, pf->ncpus);
	l_str(&l, " local APICs, I/O APIC id ");
	l_dec(&l, pf->io_apic_id);
	l_str(&l, ")");
	l_say(&l);
	return 0;
}

/* --- files on this loader's volume ------------------------------------------------ */

/* Open path on the volume of device for reading; NULL when missing. */
static EFI_FILE_HANDLE open_file(EFI_HANDLE device, const CHAR16 *path)
{
	EFI_GUID sfs_guid = SIMPLE_FILE_SYSTEM_PROTOCOL;
	EFI_SIMPLE_FILE_SYSTEM_PROTOCOL *sfs = NULL;
	EFI_FILE_HANDLE root = NULL, f = NULL;

	if (EFI_ERROR(bs->HandleProtocol(device, &sfs_guid, (void **)&sfs)) ||
	    EFI_ERROR(sfs->OpenVolume(sfs, &root)))
		return NULL;
	if (EFI_ERROR(root->Open(root, &f, (CHAR16 *)path, EFI_FILE_MODE_READ, 0)))
		f = NULL;
	root->Close(root);
	return f;
}

static int file_size(EFI_FILE_HANDLE f, UINT64 *size)
{
	if (EFI_ERROR(f->SetPosition(f, 0xffffffffffffffffULL)) || EFI_ERROR(f->GetPosition(f, size)) ||
	    EFI_ERROR(f->SetPosition(f, 0)))
		return -1;
	return 0;
}

/* Read exactly len bytes at offset into dst; 0 or -1. */
static int read_at(EFI_FILE_HANDLE f, UINT64 offset, void *dst, UINT64 len)
{
	UINTN n = (UINTN)len;

	if (EFI_ERROR(f->SetPosition(f, offset)) || EFI_ERROR(f->Read(f, &n, dst)) || n != (UINTN)len)
		return -1;
	return 0;
}

/* Read a whole file into pool memory (NUL-terminated); NULL when missing. */
static void *read_file(EFI_HANDLE device, const CHAR16 *path, UINTN *size)
{
	EFI_FILE_HANDLE f = open_file(device, path);
	UINT64 end = 0;
	void *buf = NULL;

	*size = 0;
	if (!f)
		return NULL;
	if (file_size(f, &end) == 0 &&
	    !EFI_ERROR(bs->AllocatePool(EfiLoaderData, (UINTN)end + 1, &buf))) {
		if (read_at(f, 0, buf, end) == 0) {
			((char *)buf)[end] = '\0';
			*size = (UINTN)end;
		} else {
			bs->FreePool(buf);
			buf = NULL;
		}
	}
	f->Close(f);
	return buf;
}

/* The volume's device path with a file path node for path appended. */
static EFI_DEVICE_PATH *file_device_path(EFI_HANDLE device, const CHAR16 *path)
{
	EFI_GUID dp_guid = DEVICE_PATH_PROTOCOL;
	EFI_DEVICE_PATH *dev = NULL, *n, *out = NULL;
	size_t dev_len = 0, path_bytes = 0, node_len;
	uint8_t *p;

	if (EFI_ERROR(bs->HandleProtocol(device, &dp_guid, (void **)&dev)) || !dev)
		return NULL;
	for (n = dev; !IsDevicePathEndType(n); n = NextDevicePathNode(n))
		dev_len += DevicePathNodeLength(n);
	while (path[path_bytes / 2])
		path_bytes += 2;
	path_bytes += 2;
	node_len = 4 + path_bytes;
	if (EFI_ERROR(bs->AllocatePool(EfiLoaderData, dev_len + node_len + 4, (void **)&out)))
		return NULL;
	p = (uint8_t *)out;
	memcpy(p, dev, dev_len);
	p += dev_len;
	p[0] = MEDIA_DEVICE_PATH;
	p[1] = MEDIA_FILEPATH_DP;
	p[2] = (uint8_t)node_len;
	p[3] = (uint8_t)(node_len >> 8);
	memcpy(p + 4, path, path_bytes);
	p += node_len;
	p[0] = END_DEVICE_PATH_TYPE;
	p[1] = END_ENTIRE_DEVICE_PATH_SUBTYPE;
	p[2] = 4;
	p[3] = 0;
	return out;
}

/*
 * The kernel command line: the file's first line, else the default; as
 * UCS-2 (returned, for the stub) and as ASCII in ascii[CMDLINE_MAX].
 */
static CHAR16 *command_line(EFI_HANDLE device, UINT32 *bytes, char *ascii)
{
	static CHAR16 w[CMDLINE_MAX];
	struct line l = { .len = 0 };
	UINTN size = 0;
	char *text = read_file(device, CMDLINE_PATH, &size);
	const char *src = text ? text : DEFAULT_CMDLINE;
	size_t n = 0;

	for (; *src && *src != '\r' && *src != '\n' && n + 1 < CMDLINE_MAX; src++) {
		ascii[n] = *src;
		w[n++] = (CHAR16)(uint8_t)*src;
	}
	while (n > 0 && w[n - 1] == ' ')
		n--;
	w[n] = 0;
	ascii[n] = '\0';
	*bytes = (UINT32)((n + 1) * sizeof(CHAR16));
	if (text)
		bs->FreePool(text);
	l_str(&l, text ? "cmdline (\\EFI\\linux\\cmdline.txt): " : "cmdline (built-in): ");
	l_w(&l, w);
	l_say(&l);
	return w;
}

/* --- direct boot of the uncompressed kernel (64-bit boot protocol) ------------------ */

/*
 * struct boot_params ("zero page"), Documentation/x86/zero-page.rst, and
 * its setup header at 0x1f1, Documentation/x86/boot.rst.  Only the fields
 * this loader writes; everything else stays zero (no EFI information:
 * Linux boots as on a BIOS machine).
 */
#define BP_ACPI_RSDP_ADDR     0x070  /* u64, protocol 2.14 */
#define BP_EXT_RAMDISK_IMAGE  0x0c0  /* u32 */
#define BP_EXT_RAMDISK_SIZE   0x0c4  /* u32 */
#define BP_EXT_CMD_LINE_PTR   0x0c8  /* u32 */
#define BP_E820_ENTRIES       0x1e8  /* u8 */
#define BP_BOOT_FLAG          0x1fe  /* u16 0xaa55 */
#define BP_HEADER             0x202  /* u32 "HdrS" */
#define BP_VERSION            0x206  /* u16 */
#define BP_TYPE_OF_LOADER     0x210  /* u8, 0xff: undefined */
#define BP_LOADFLAGS          0x211  /* u8 */
#define BP_RAMDISK_IMAGE      0x218  /* u32 */
#define BP_RAMDISK_SIZE       0x21c  /* u32 */
#define BP_CMD_LINE_PTR       0x228  /* u32 */
#define BP_KERNEL_ALIGNMENT   0x230  /* u32 */
#define BP_CMDLINE_SIZE       0x238  /* u32 */
#define BP_E820_TABLE         0x2d0  /* struct boot_e820_entry[128] */
#define BP_E820_MAX           128
#define BP_LOADED_HIGH        0x01

struct boot_e820_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
} __attribute__((packed));
_Static_assert(sizeof(struct boot_e820_entry) == 20, "boot_e820_entry");
_Static_assert(BP_E820_TABLE + BP_E820_MAX * sizeof(struct boot_e820_entry) <= 4096, "zero page");

#define E820_RAM      1
#define E820_RESERVED 2
#define E820_ACPI     3
#define E820_NVS      4
#define E820_UNUSABLE 5
#define E820_PMEM     7

/* ELF64 (System V gABI): only what a loader of an executable reads. */
struct elf64_ehdr {
	uint8_t ident[16];
	uint16_t type, machine;
	uint32_t version;
	uint64_t entry, phoff, shoff;
	uint32_t flags;
	uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
} __attribute__((packed));
_Static_assert(sizeof(struct elf64_ehdr) == 64, "Elf64_Ehdr");

struct elf64_phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, paddr, filesz, memsz, align;
} __attribute__((packed));
_Static_assert(sizeof(struct elf64_phdr) == 56, "Elf64_Phdr");

#define PT_LOAD 1
#define ELF_MAX_PHDRS 16
#define KERNEL_ALIGN 0x200000ull  /* CONFIG_PHYSICAL_ALIGN */

static void put8(uint8_t *bp, unsigned off, uint8_t v) { bp[off] = v; }
static void put16(uint8_t *bp, unsigned off, uint16_t v) { memcpy(bp + off, &v, 2); }
static void put32(uint8_t *bp, unsigned off, uint32_t v) { memcpy(bp + off, &v, 4); }
static void put64(uint8_t *bp, unsigned off, uint64_t v) { memcpy(bp + off, &v, 8); }

static uint32_t e820_type(UINT32 efi_type)
{
	switch (efi_type) {
	case EfiLoaderCode:
	case EfiLoaderData:
	case EfiBootServicesCode:
	case EfiBootServicesData:
	case EfiConventionalMemory:
		return E820_RAM;
	case EfiACPIReclaimMemory:
		return E820_ACPI;
	case EfiACPIMemoryNVS:
		return E820_NVS;
	case EfiUnusableMemory:
		return E820_UNUSABLE;
	case 14:                   /* EfiPersistentMemory (UEFI 2.5) */
		return E820_PMEM;
	default:                   /* runtime services, reserved, MMIO */
		return E820_RESERVED;
	}
}

/* The e820 table in bp from the final EFI memory map; returns its length. */
static unsigned build_e820(uint8_t *bp, const uint8_t *map, UINTN map_size, UINTN desc_size)
{
	struct boot_e820_entry *t = (struct boot_e820_entry *)(void *)(bp + BP_E820_TABLE);
	unsigned n = 0;

	for (UINTN off = 0; off + desc_size <= map_size; off += desc_size) {
		const EFI_MEMORY_DESCRIPTOR *d = (const EFI_MEMORY_DESCRIPTOR *)(const void *)(map + off);
		uint64_t start = d->PhysicalStart, size = d->NumberOfPages * 4096ull;
		uint32_t type = e820_type(d->Type);

		if (n > 0 && t[n - 1].type == type && t[n - 1].addr + t[n - 1].size == start) {
			t[n - 1].size += size;
			continue;
		}
		if (n == BP_E820_MAX)
			break;             /* reported by the caller */
		t[n].addr = start;
		t[n].size = size;
		t[n].type = type;
		n++;
	}
	put8(bp, BP_E820_ENTRIES, (uint8_t)n);
	return n;
}

/* Zeroed pages below 4 GiB for bytes; their physical address, 0 when none. */
static uint64_t alloc_pages_low(EFI_MEMORY_TYPE type, uint64_t bytes)
{
	return (uint64_t)(uintptr_t)alloc_below_4g(type, (UINTN)((bytes + 4095) / 4096));
}

/* The value of initrd= in cmdline as a path (backslashes), in out[len]; 0 or -1. */
static int initrd_path(const char *cmdline, CHAR16 *out, size_t len)
{
	const char *p = cmdline;
	size_t n = 0;

	while (*p) {
		if ((p == cmdline || p[-1] == ' ') && !strncmp(p, "initrd=", 7))
			break;
		p++;
	}
	if (!*p)
		return -1;
	for (p += 7; *p && *p != ' ' && n + 1 < len; p++)
		out[n++] = (CHAR16)(*p == '/' ? '\\' : *p);
	out[n] = 0;
	return n ? 0 : -1;
}

static __attribute__((noreturn)) void enter_kernel(uint64_t entry, uint64_t boot_params)
{
	/*
	 * The 64-bit entry (startup_64) wants: long mode, paging with the
	 * kernel identity mapped (the firmware's page tables map all memory 1:1),
	 * interrupts off, RSI = boot_params.  It loads its own GDT, IDT, stack
	 * and page tables.
	 */
	hw_jump_rsi(entry, boot_params);
}

/*
 * Boot \EFI\linux\vmlinux directly.  Returns 1 when the file is absent
 * (the caller takes the stub path), -1 after a failure it reported before
 * ExitBootServices; does not return once the firmware is gone.
 */
static int direct_boot(EFI_HANDLE image, EFI_HANDLE device, const char *cmdline, uint64_t rsdp)
{
	struct line l = { .len = 0 };
	EFI_FILE_HANDLE f = open_file(device, VMLINUX_PATH);
	struct elf64_ehdr eh;
	struct elf64_phdr ph[ELF_MAX_PHDRS];
	uint64_t lo = ~0ull, hi = 0, base = 0, entry = 0, loaded = 0;
	uint64_t initrd = 0, initrd_size = 0, bp_pa, cmd_pa;
	CHAR16 ipath[128];
	uint8_t *bp, *map = NULL;
	UINTN map_size = 0, map_key = 0, desc_size = 0, map_alloc;
	UINT32 desc_ver = 0;
	unsigned ne;
	size_t cmd_len = strlen(cmdline);
	EFI_STATUS s = EFI_SUCCESS;

	if (!f)
		return 1;
	say("\\EFI\\linux\\vmlinux present: direct boot of the uncompressed kernel");
	if (read_at(f, 0, &eh, sizeof(eh)) != 0 || memcmp(eh.ident, "\177ELF\2\1", 6) != 0 ||
	    eh.machine != 62 || eh.phentsize != sizeof(struct elf64_phdr) || eh.phnum == 0 ||
	    eh.phnum > ELF_MAX_PHDRS ||
	    read_at(f, eh.phoff, ph, (uint64_t)eh.phnum * sizeof(ph[0])) != 0) {
		say("vmlinux: not an ELF64 x86-64 executable (or unreadable)");
		goto fail;
	}
	for (unsigned i = 0; i < eh.phnum; i++) {
		if (ph[i].type != PT_LOAD)
			continue;
		if (ph[i].paddr < lo)
			lo = ph[i].paddr;
		if (ph[i].paddr + ph[i].memsz > hi)
			hi = ph[i].paddr + ph[i].memsz;
	}
	if (hi <= lo || (lo & (KERNEL_ALIGN - 1))) {
		say("vmlinux: no PT_LOAD segments, or not 2 MiB aligned");
		goto fail;
	}
	/* Where it was linked if that is free, else any 2 MiB aligned base below 4 GiB. */
	base = lo;
	if (EFI_ERROR(bs->AllocatePages(AllocateAddress, EfiLoaderCode, (hi - lo + 4095) / 4096,
					&base))) {
		uint64_t pa = alloc_pages_low(EfiLoaderCode, hi - lo + KERNEL_ALIGN);

		if (!pa) {
			say("vmlinux: no room for the kernel below 4 GiB");
			goto fail;
		}
		base = (pa + KERNEL_ALIGN - 1) & ~(KERNEL_ALIGN - 1);
	}
	for (unsigned i = 0; i < eh.phnum; i++) {
		uint8_t *dst = (uint8_t *)(uintptr_t)(base + (ph[i].paddr - lo));

		if (ph[i].type != PT_LOAD)
			continue;
		if (ph[i].filesz > ph[i].memsz || read_at(f, ph[i].offset, dst, ph[i].filesz) != 0) {
			say("vmlinux: reading a segment failed");
			goto fail;
		}
		memset(dst + ph[i].filesz, 0, ph[i].memsz - ph[i].filesz);
		loaded += ph[i].filesz;
		/* The entry point is a physical address inside a segment (or a virtual one). */
		if (eh.entry >= ph[i].paddr && eh.entry < ph[i].paddr + ph[i].memsz)
			entry = base + (eh.entry - lo);
		else if (eh.entry >= ph[i].vaddr && eh.entry < ph[i].vaddr + ph[i].memsz)
			entry = base + (ph[i].paddr - lo) + (eh.entry - ph[i].vaddr);
	}
	f->Close(f);
	f = NULL;
	if (!entry) {
		say("vmlinux: the entry point is in no PT_LOAD segment");
		goto fail;
	}
	l_str(&l, "vmlinux: ");
	l_dec(&l, loaded);
	l_str(&l, " bytes loaded, image ");
	l_hex(&l, base);
	l_str(&l, "-");
	l_hex(&l, base + (hi - lo) - 1);
	l_str(&l, base == lo ? " (where linked)" : " (moved)");
	l_str(&l, ", entry ");
	l_hex(&l, entry);
	l_say(&l);

	if (initrd_path(cmdline, ipath, sizeof(ipath) / sizeof(ipath[0])) == 0) {
		f = open_file(device, ipath);
		if (!f || file_size(f, &initrd_size) != 0 ||
		    !(initrd = alloc_pages_low(EfiLoaderData, initrd_size)) ||
		    read_at(f, 0, (void *)(uintptr_t)initrd, initrd_size) != 0) {
			l_str(&l, "initrd ");
			l_w(&l, ipath);
			l_str(&l, ": cannot read it");
			l_say(&l);
			goto fail;
		}
		f->Close(f);
		f = NULL;
		l_str(&l, "initrd ");
		l_w(&l, ipath);
		l_str(&l, ": ");
		l_dec(&l, initrd_size);
		l_str(&l, " bytes at ");
		l_hex(&l, initrd);
		l_say(&l);
	}

	bp_pa = alloc_pages_low(EfiLoaderData, 4096);
	cmd_pa = alloc_pages_low(EfiLoaderData, cmd_len + 1);
	if (!bp_pa || !cmd_pa) {
		say("no memory for boot_params");
		goto fail;
	}
	bp = (uint8_t *)(uintptr_t)bp_pa;
	memset(bp, 0, 4096);
	memcpy((void *)(uintptr_t)cmd_pa, cmdline, cmd_len + 1);
	put64(bp, BP_ACPI_RSDP_ADDR, rsdp);
	put16(bp, BP_BOOT_FLAG, 0xaa55);
	put32(bp, BP_HEADER, 0x53726448u);   /* "HdrS" */
	put16(bp, BP_VERSION, 0x020f);
	put8(bp, BP_TYPE_OF_LOADER, 0xff);
	put8(bp, BP_LOADFLAGS, BP_LOADED_HIGH);
	put32(bp, BP_RAMDISK_IMAGE, (uint32_t)initrd);
	put32(bp, BP_RAMDISK_SIZE, (uint32_t)initrd_size);
	put32(bp, BP_EXT_RAMDISK_IMAGE, (uint32_t)(initrd >> 32));
	put32(bp, BP_EXT_RAMDISK_SIZE, (uint32_t)(initrd_size >> 32));
	put32(bp, BP_CMD_LINE_PTR, (uint32_t)cmd_pa);
	put32(bp, BP_EXT_CMD_LINE_PTR, (uint32_t)(cmd_pa >> 32));
	put32(bp, BP_CMDLINE_SIZE, CMDLINE_MAX - 1);
	put32(bp, BP_KERNEL_ALIGNMENT, (uint32_t)KERNEL_ALIGN);
	l_str(&l, "boot_params at ");
	l_hex(&l, bp_pa);
	l_str(&l, ", ACPI RSDP ");
	l_hex(&l, rsdp);
	l_str(&l, "; ExitBootServices and jump");
	l_say(&l);

	/* The final memory map: no allocation between GetMemoryMap and ExitBootServices. */
	bs->GetMemoryMap(&map_size, NULL, &map_key, &desc_size, &desc_ver);
	map_alloc = map_size + 16 * (desc_size ? desc_size : 48);
	if (EFI_ERROR(bs->AllocatePool(EfiLoaderData, map_alloc, (void **)&map))) {
		say("no memory for the memory map");
		goto fail;
	}
	for (int tries = 0; tries < 3; tries++) {
		map_size = map_alloc;
		s = bs->GetMemoryMap(&map_size, (EFI_MEMORY_DESCRIPTOR *)(void *)map, &map_key,
				     &desc_size, &desc_ver);
		if (EFI_ERROR(s))
			break;
		s = bs->ExitBootServices(image, map_key);
		if (!EFI_ERROR(s))
			break;
	}
	if (EFI_ERROR(s)) {
		l_str(&l, "ExitBootServices failed");
		l_status(&l, s);
		l_say(&l);
		goto fail;
	}

	/* The firmware is gone: COM1 only from here. */
	ne = build_e820(bp, map, map_size, desc_size);
	l_str(&l, "e820: ");
	l_dec(&l, ne);
	l_str(&l, ne == BP_E820_MAX ? " entries (TRUNCATED), starting Linux" : " entries, starting Linux");
	say_com1(l.buf);
	enter_kernel(entry, bp_pa);

fail:
	if (f)
		f->Close(f);
	return -1;
}

static uint64_t find_rsdp(void)
{
	EFI_GUID acpi20 = ACPI_20_TABLE_GUID;

	for (UINTN i = 0; i < st->NumberOfTableEntries; i++)
		if (!memcmp(&st->ConfigurationTable[i].VendorGuid, &acpi20, sizeof(acpi20)))
			return (uint64_t)(uintptr_t)st->ConfigurationTable[i].VendorTable;
	return 0;
}

/* --- main ---------------------------------------------------------------------------- */

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab);

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	EFI_GUID li_guid = LOADED_IMAGE_PROTOCOL;
	EFI_LOADED_IMAGE *li = NULL, *kli = NULL;
	EFI_DEVICE_PATH *kdp;
	EFI_HANDLE kernel = NULL;
	struct platform pf;
	struct line l = { .len = 0 };
	CHAR16 *cmdline;
	static char cmdline_ascii[CMDLINE_MAX];
	UINT32 cmdline_bytes = 0;
	UINTN exit_size = 0;
	CHAR16 *exit_data = NULL;
	EFI_STATUS s;

	st = systab;
	bs = systab->BootServices;
	/*
	 * No boot watchdog (UEFI 3.1.2: 5 minutes, armed by the boot manager):
	 * an emulated boot that stays in boot services that long must fail
	 * by its own timeout, not by a surprise reset.
	 */
	bs->SetWatchdogTimer(0, 0, 0, NULL);

	l_str(&l, "started (firmware ");
	l_w(&l, st->FirmwareVendor);
	l_str(&l, " rev ");
	l_hex(&l, st->FirmwareRevision);
	l_str(&l, ")");
	l_say(&l);

	if (EFI_ERROR(bs->HandleProtocol(image, &li_guid, (void **)&li)) || !li) {
		say("no EFI_LOADED_IMAGE_PROTOCOL on my own handle");
		power_off();
	}

	memset(&pf, 0, sizeof(pf));
	find_cpus(&pf);
	if (find_rsdp()) {
		say("ACPI: firmware publishes ACPI 2.0 tables, installing none");
	} else {
		say("ACPI: firmware publishes no ACPI 2.0 table, building RSDP/XSDT/FADT/FACS/DSDT/MADT");
		find_pm(&pf);
		pf.io_apic_id = io_apic_id();
		install_acpi(&pf);
	}

	cmdline = command_line(li->DeviceHandle, &cmdline_bytes, cmdline_ascii);
	if (direct_boot(image, li->DeviceHandle, cmdline_ascii, find_rsdp()) < 0)
		say("direct boot failed, trying the EFI stub (\\EFI\\linux\\vmlinuz)");

	kdp = file_device_path(li->DeviceHandle, KERNEL_PATH);
	if (!kdp) {
		say("no device path for my own volume");
		power_off();
	}
	s = bs->LoadImage(FALSE, image, kdp, NULL, 0, &kernel);
	if (EFI_ERROR(s)) {
		l_str(&l, "LoadImage(\\EFI\\linux\\vmlinuz) failed");
		l_status(&l, s);
		l_say(&l);
		power_off();
	}
	if (EFI_ERROR(bs->HandleProtocol(kernel, &li_guid, (void **)&kli)) || !kli) {
		say("the kernel image has no EFI_LOADED_IMAGE_PROTOCOL");
		power_off();
	}
	kli->LoadOptions = cmdline;
	kli->LoadOptionsSize = cmdline_bytes;

	l_str(&l, "starting \\EFI\\linux\\vmlinuz through its EFI stub (");
	l_dec(&l, kli->ImageSize);
	l_str(&l, " bytes at ");
	l_hex(&l, (uint64_t)(uintptr_t)kli->ImageBase);
	l_str(&l, ")");
	l_say(&l);
	s = bs->StartImage(kernel, &exit_size, &exit_data);
	l_str(&l, "the kernel returned");
	l_status(&l, s);
	if (exit_data) {
		l_str(&l, ": ");
		l_w(&l, exit_data);
	}
	l_say(&l);
	power_off();
}
