/* SPDX-License-Identifier: MIT */
/*
 * hw_fake.c - the host implementation of vmm/hw/hw.h for unit tests.
 *
 * Plain state, no asm.  See hw_fake.h for what is modelled and the SDM
 * rules each part follows.
 */
#include "hw_fake.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */

static void fake_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

static void fake_die(const char *fmt, ...)
{
	va_list ap;

	fputs("hw_fake: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* --- state ------------------------------------------------------------------ */

struct vmcs_field {
	uint32_t enc;      /* encoding with the access-type bit clear */
	bool used;
	uint64_t value;
};

struct vmcs_slot {
	bool used;
	uint64_t pa;
	bool launched;     /* launch state (SDM 3C 25.11.3) */
	struct vmcs_field fields[HW_FAKE_VMCS_FIELDS];
};

struct vmx_inject {
	uint32_t field;
	uint32_t err;
};

#define INJECT_MAX 16
#define UNKNOWN_VMCS_FIELD_MAX HW_FAKE_VMCS_FIELDS

static struct {
	struct hw_fake_cpuid_entry cpuid[HW_FAKE_CPUID_MAX];
	size_t ncpuid;

	struct { uint32_t msr; uint64_t value; } msr[HW_FAKE_MSR_MAX];
	size_t nmsr;
	struct hw_fake_msr_write msr_log[HW_FAKE_MSR_LOG];

	struct hw_fake_regs regs;

	struct { uint64_t pa; uint32_t value; } mmio[HW_FAKE_MMIO_MAX];
	size_t nmmio;

	struct hw_fake_io io_log[HW_FAKE_IO_LOG];
	hw_fake_io_in_fn io_in;
	void *io_in_ctx;
	struct hw_fake_uart uart[HW_FAKE_UART_MAX];
	size_t nuart;

	uint64_t tsc, tsc_step;

	jmp_buf *stop_env;
	hw_fake_vmcall_fn vmcall;
	void *vmcall_ctx;

	bool in_vmx;
	uint64_t vmxon_pa;
	uint64_t current;              /* physical address or HW_FAKE_NO_VMCS */
	struct vmcs_slot vmcs[HW_FAKE_VMCS_MAX];
	struct vmx_inject fail_write[INJECT_MAX], fail_read[INJECT_MAX];
	size_t nfail_write, nfail_read;
	int launch_rc;
	uint32_t launch_err;
	struct hw_fake_inv inv_log[HW_FAKE_INV_LOG];
} fk;

uint64_t hw_fake_cpuid_count;
uint64_t hw_fake_mmio_read_count, hw_fake_mmio_write_count;
uint64_t hw_fake_msr_write_count;
uint64_t hw_fake_unknown_msr_reads;
uint32_t hw_fake_last_unknown_msr;
uint64_t hw_fake_lgdt_count, hw_fake_ltr_count;
uint64_t hw_fake_io_out_count, hw_fake_io_in_count;
uint64_t hw_fake_pause_count, hw_fake_halt_count, hw_fake_cli_count,
	hw_fake_wbinvd_count, hw_fake_stop_count;
uint64_t hw_fake_launch_fail_rsp;
int hw_fake_launch_fail_err;
uint64_t hw_fake_launch_count;
uint64_t hw_fake_vmread_count, hw_fake_vmwrite_count;
uint64_t hw_fake_inv_count;

uint64_t hw_fake_jump_entry, hw_fake_jump_rsi;

void hw_fake_reset(void)
{
	memset(&fk, 0, sizeof(fk));
	/* SDM 3A Table 10-1: register state after power-up. */
	fk.regs.cr0 = 0x60000010;          /* CD, NW, ET */
	fk.regs.dr6 = 0xffff0ff0;          /* SDM 3A Table 10-1 */
	fk.regs.dr7 = 0x400;
	fk.regs.rflags = 0x2;
	fk.regs.xcr0 = 1;                  /* x87 */
	fk.regs.sel[HW_SEG_CS] = 0xf000;
	fk.regs.gdtr.limit = 0xffff;
	fk.regs.idtr.limit = 0xffff;
	fk.tsc_step = 1;
	fk.current = HW_FAKE_NO_VMCS;

	hw_fake_cpuid_count = 0;
	hw_fake_mmio_read_count = hw_fake_mmio_write_count = 0;
	hw_fake_msr_write_count = 0;
	hw_fake_unknown_msr_reads = 0;
	hw_fake_last_unknown_msr = 0;
	hw_fake_lgdt_count = hw_fake_ltr_count = 0;
	hw_fake_io_out_count = hw_fake_io_in_count = 0;
	hw_fake_pause_count = hw_fake_halt_count = hw_fake_cli_count = 0;
	hw_fake_wbinvd_count = hw_fake_stop_count = 0;
	hw_fake_jump_entry = hw_fake_jump_rsi = 0;
	hw_fake_devirt_frame = NULL;
	hw_fake_launch_fail_rsp = 0;
	hw_fake_launch_fail_err = 0;
	hw_fake_launch_count = 0;
	hw_fake_vmread_count = hw_fake_vmwrite_count = 0;
	hw_fake_inv_count = 0;
}

/* --- CPUID ----------------------------------------------------------------------- */

/* Leaves whose output depends on ECX (SDM 2A CPUID, Table 3-8; AMD APM 3). */
static bool leaf_has_subleaves(uint32_t leaf)
{
	static const uint32_t indexed[] = {
		0x4, 0x7, 0xb, 0xd, 0xf, 0x10, 0x12, 0x14, 0x17, 0x18, 0x1b,
		0x1d, 0x1e, 0x1f, 0x20, 0x23, 0x24,
		0x8000001du, 0x80000020u, 0x80000026u,
	};

	for (size_t i = 0; i < sizeof(indexed) / sizeof(indexed[0]); i++)
		if (indexed[i] == leaf)
			return true;
	return false;
}

static struct hw_fake_cpuid_entry *cpuid_find(uint32_t leaf, uint32_t subleaf)
{
	for (size_t i = 0; i < fk.ncpuid; i++)
		if (fk.cpuid[i].leaf == leaf && fk.cpuid[i].subleaf == subleaf)
			return &fk.cpuid[i];
	return NULL;
}

void hw_fake_set_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t eax,
		       uint32_t ebx, uint32_t ecx, uint32_t edx)
{
	struct hw_fake_cpuid_entry *e = cpuid_find(leaf, subleaf);

	if (!e) {
		if (fk.ncpuid == HW_FAKE_CPUID_MAX)
			fake_die("CPUID table full (%d entries)", HW_FAKE_CPUID_MAX);
		e = &fk.cpuid[fk.ncpuid++];
	}
	*e = (struct hw_fake_cpuid_entry){ leaf, subleaf, eax, ebx, ecx, edx };
}

void hw_fake_load_cpu(const struct hw_fake_cpuid_entry *entries, size_t n)
{
	memset(fk.cpuid, 0, sizeof(fk.cpuid));
	fk.ncpuid = 0;
	for (size_t i = 0; i < n; i++)
		hw_fake_set_cpuid(entries[i].leaf, entries[i].subleaf, entries[i].eax,
				  entries[i].ebx, entries[i].ecx, entries[i].edx);
}

void hw_cpuid(uint32_t leaf, uint32_t subleaf, struct hw_cpuid_regs *out)
{
	const struct hw_fake_cpuid_entry *e;

	hw_fake_cpuid_count++;
	e = cpuid_find(leaf, subleaf);
	if (!e && !leaf_has_subleaves(leaf))
		e = cpuid_find(leaf, 0);
	if (!e) {
		memset(out, 0, sizeof(*out));
		return;
	}
	out->eax = e->eax;
	out->ebx = e->ebx;
	out->ecx = e->ecx;
	out->edx = e->edx;
}

/* Physical-address width: CPUID.80000008H:EAX[7:0] when seeded, else 52. */
static unsigned maxphyaddr(void)
{
	const struct hw_fake_cpuid_entry *e = cpuid_find(0x80000008u, 0);

	if (e && (e->eax & 0xff) >= 32 && (e->eax & 0xff) <= 52)
		return e->eax & 0xff;
	return 52;
}

/* --- time ------------------------------------------------------------------------- */

uint64_t hw_rdtsc(void)
{
	uint64_t v = fk.tsc;

	fk.tsc += fk.tsc_step;
	return v;
}

/* No DRNG on the host fake: callers take their fallback (and the fake stays deterministic). */
bool hw_rdrand64(uint64_t *out)
{
	*out = 0;
	return false;
}

void hw_fake_set_tsc(uint64_t value) { fk.tsc = value; }
void hw_fake_advance_tsc(uint64_t delta) { fk.tsc += delta; }
void hw_fake_set_tsc_step(uint64_t step) { fk.tsc_step = step; }
uint64_t hw_fake_get_tsc(void) { return fk.tsc; }

/* --- MSRs ---------------------------------------------------------------------------- */

static int msr_index(uint32_t msr)
{
	for (size_t i = 0; i < fk.nmsr; i++)
		if (fk.msr[i].msr == msr)
			return (int)i;
	return -1;
}

void hw_fake_set_msr(uint32_t msr, uint64_t value)
{
	int i = msr_index(msr);

	if (i < 0) {
		if (fk.nmsr == HW_FAKE_MSR_MAX)
			fake_die("MSR table full (%d entries)", HW_FAKE_MSR_MAX);
		i = (int)fk.nmsr++;
		fk.msr[i].msr = msr;
	}
	fk.msr[i].value = value;
}

uint64_t hw_fake_get_msr(uint32_t msr)
{
	int i = msr_index(msr);

	return i < 0 ? 0 : fk.msr[i].value;
}

bool hw_fake_has_msr(uint32_t msr)
{
	return msr_index(msr) >= 0;
}

void hw_fake_clear_msr(uint32_t msr)
{
	int i = msr_index(msr);

	if (i < 0)
		return;
	fk.msr[i] = fk.msr[fk.nmsr - 1];
	fk.nmsr--;
}

uint64_t hw_rdmsr(uint32_t msr)
{
	int i = msr_index(msr);

	if (i < 0) {
		hw_fake_unknown_msr_reads++;
		hw_fake_last_unknown_msr = msr;
		return 0;
	}
	return fk.msr[i].value;
}

void hw_wrmsr(uint32_t msr, uint64_t value)
{
	fk.msr_log[hw_fake_msr_write_count % HW_FAKE_MSR_LOG] =
		(struct hw_fake_msr_write){ msr, value };
	hw_fake_msr_write_count++;
	hw_fake_set_msr(msr, value);
	/*
	 * IA32_PERF_GLOBAL_OVF_CTRL / _STATUS_RESET (0x390) clears the bits
	 * written as 1 in IA32_PERF_GLOBAL_STATUS (0x38E), when the test
	 * seeded that MSR (SDM 3B "Global Counter Control Facilities").
	 */
	if (msr == 0x390u && hw_fake_has_msr(0x38eu))
		hw_fake_set_msr(0x38eu, hw_fake_get_msr(0x38eu) & ~value);
	/*
	 * IA32_LBR_DEPTH (0x14CF) resets every architectural LBR entry
	 * (IA32_LBR_x_FROM_IP/TO_IP/INFO) the test seeded (SDM 3B "Last Branch
	 * Records", LBR depth).
	 */
	if (msr == 0x14cfu)
		for (uint32_t i = 0; i < 64; i++) {
			const uint32_t base[3] = { 0x1500u, 0x1600u, 0x1200u };

			for (unsigned k = 0; k < 3; k++)
				if (hw_fake_has_msr(base[k] + i))
					hw_fake_set_msr(base[k] + i, 0);
		}
}

const struct hw_fake_msr_write *hw_fake_msr_write_log(size_t back)
{
	if (back >= hw_fake_msr_write_count || back >= HW_FAKE_MSR_LOG)
		return NULL;
	return &fk.msr_log[(hw_fake_msr_write_count - 1 - back) % HW_FAKE_MSR_LOG];
}

/* --- registers -------------------------------------------------------------------------- */

#define CR4_VMXE (1ull << 13)
#define RFLAGS_IF (1ull << 9)

struct hw_fake_regs *hw_fake_regs(void) { return &fk.regs; }

uint64_t hw_read_cr0(void) { return fk.regs.cr0; }
uint64_t hw_read_cr2(void) { return fk.regs.cr2; }
uint64_t hw_read_cr3(void) { return fk.regs.cr3; }
uint64_t hw_read_cr4(void) { return fk.regs.cr4; }
void hw_write_cr0(uint64_t value) { fk.regs.cr0 = value; }
void hw_write_cr2(uint64_t value) { fk.regs.cr2 = value; }
void hw_write_cr3(uint64_t value) { fk.regs.cr3 = value; }

void hw_write_cr4(uint64_t value)
{
	/* SDM 3C 24.8: clearing CR4.VMXE in VMX operation raises #GP. */
	if (fk.in_vmx && !(value & CR4_VMXE))
		fake_die("#GP: MOV CR4 clearing VMXE in VMX operation (value %#llx)",
			 (unsigned long long)value);
	fk.regs.cr4 = value;
}

/* --- memory-mapped registers --- */

static int mmio_find(uint64_t pa)
{
	for (size_t i = 0; i < fk.nmmio; i++)
		if (fk.mmio[i].pa == pa)
			return (int)i;
	return -1;
}

void hw_fake_set_mmio(uint64_t pa, uint32_t value)
{
	int i = mmio_find(pa);

	if (i < 0) {
		if (fk.nmmio >= HW_FAKE_MMIO_MAX) {
			fprintf(stderr, "hw_fake: MMIO table full\n");
			abort();
		}
		i = (int)fk.nmmio++;
		fk.mmio[i].pa = pa;
	}
	fk.mmio[i].value = value;
}

bool hw_fake_get_mmio(uint64_t pa, uint32_t *value)
{
	int i = mmio_find(pa);

	if (i < 0)
		return false;
	*value = fk.mmio[i].value;
	return true;
}

uint32_t hw_mmio_read32(uint64_t pa)
{
	int i = mmio_find(pa);

	if (pa & 3) {
		fprintf(stderr, "hw_fake: unaligned MMIO read at %#llx\n", (unsigned long long)pa);
		abort();
	}
	hw_fake_mmio_read_count++;
	return i < 0 ? 0xffffffffu : fk.mmio[i].value;   /* nothing there: all ones */
}

void hw_mmio_write32(uint64_t pa, uint32_t value)
{
	if (pa & 3) {
		fprintf(stderr, "hw_fake: unaligned MMIO write at %#llx\n", (unsigned long long)pa);
		abort();
	}
	hw_fake_mmio_write_count++;
	hw_fake_set_mmio(pa, value);
}

uint64_t hw_read_dr6(void) { return fk.regs.dr6; }
void hw_write_dr6(uint64_t value) { fk.regs.dr6 = value; }
uint64_t hw_read_dr7(void) { return fk.regs.dr7; }
void hw_write_dr7(uint64_t value) { fk.regs.dr7 = value; }
uint64_t hw_read_rflags(void) { return fk.regs.rflags; }

uint64_t hw_xgetbv(uint32_t xcr)
{
	if (xcr == 0)
		return fk.regs.xcr0;
	if (xcr == 1)
		return fk.regs.xinuse;
	fake_die("#GP: XGETBV of XCR%u", xcr);
}

void hw_xsetbv(uint32_t xcr, uint64_t v)
{
	const struct hw_fake_cpuid_entry *d = cpuid_find(0xd, 0);
	uint64_t avx512 = 7ull << 5;

	/* SDM 2B XSETBV and 3A 13.3: the checks that raise #GP. */
	if (xcr != 0)
		fake_die("#GP: XSETBV of XCR%u", xcr);
	if (!(v & 1))
		fake_die("#GP: XSETBV clearing XCR0.X87 (%#llx)", (unsigned long long)v);
	if ((v & 4) && !(v & 2))
		fake_die("#GP: XSETBV with AVX but not SSE (%#llx)", (unsigned long long)v);
	if (!!(v & 8) != !!(v & 16))
		fake_die("#GP: XSETBV with BNDREGS != BNDCSR (%#llx)", (unsigned long long)v);
	if ((v & avx512) && ((v & avx512) != avx512 || !(v & 4)))
		fake_die("#GP: XSETBV with partial AVX-512 state or no AVX (%#llx)",
			 (unsigned long long)v);
	if (!!(v & (1ull << 17)) != !!(v & (1ull << 18)))
		fake_die("#GP: XSETBV with XTILECFG != XTILEDATA (%#llx)", (unsigned long long)v);
	if (d && (v & ~(((uint64_t)d->edx << 32) | d->eax)))
		fake_die("#GP: XSETBV with bits CPUID.(0DH,0) does not support (%#llx)",
			 (unsigned long long)v);
	fk.regs.xcr0 = v;
}

uint16_t hw_read_selector(enum hw_seg seg)
{
	if ((unsigned)seg >= HW_SEG_COUNT)
		return 0;
	return fk.regs.sel[seg];
}

void hw_sgdt(struct hw_dtr *out) { *out = fk.regs.gdtr; }
void hw_sidt(struct hw_dtr *out) { *out = fk.regs.idtr; }

void hw_lgdt(const struct hw_dtr *in)
{
	fk.regs.gdtr = *in;
	hw_fake_lgdt_count++;
}

void hw_ltr(uint16_t selector)
{
	fk.regs.sel[HW_SEG_TR] = selector;
	hw_fake_ltr_count++;
}

/* --- port I/O and the fake 16550 ------------------------------------------------------------ */

#define UART_LSR_THRE 0x20
#define UART_LSR_TEMT 0x40
#define UART_LCR_DLAB 0x80

void hw_fake_set_io_in(hw_fake_io_in_fn fn, void *ctx)
{
	fk.io_in = fn;
	fk.io_in_ctx = ctx;
}

const struct hw_fake_io *hw_fake_io_out_log(size_t back)
{
	if (back >= hw_fake_io_out_count || back >= HW_FAKE_IO_LOG)
		return NULL;
	return &fk.io_log[(hw_fake_io_out_count - 1 - back) % HW_FAKE_IO_LOG];
}

struct hw_fake_uart *hw_fake_uart_attach(uint16_t base)
{
	struct hw_fake_uart *u;

	if (fk.nuart == HW_FAKE_UART_MAX)
		fake_die("more than %d fake UARTs", HW_FAKE_UART_MAX);
	u = &fk.uart[fk.nuart++];
	memset(u, 0, sizeof(*u));
	u->base = base;
	return u;
}

static struct hw_fake_uart *uart_at(uint16_t port)
{
	for (size_t i = 0; i < fk.nuart; i++)
		if (port >= fk.uart[i].base && port - fk.uart[i].base < 8)
			return &fk.uart[i];
	return NULL;
}

/* 16550D register map: THR/RBR 0, IER 1, IIR/FCR 2, LCR 3, MCR 4, LSR 5, MSR 6, SCR 7. */
static void uart_out(struct hw_fake_uart *u, unsigned reg, uint8_t v)
{
	bool dlab = u->lcr & UART_LCR_DLAB;

	switch (reg) {
	case 0:
		if (dlab) {
			u->dll = v;
			break;
		}
		if (u->tx_len < HW_FAKE_UART_TX_MAX) {
			u->tx[u->tx_len++] = (char)v;
			u->tx[u->tx_len] = '\0';
		}
		u->tx_total++;
		break;
	case 1:
		if (dlab)
			u->dlm = v;
		else
			u->ier = v & 0x0f;
		break;
	case 2: u->fcr = v; break;
	case 3: u->lcr = v; break;
	case 4: u->mcr = v & 0x1f; break;
	case 7: u->scr = v; break;
	default: break;  /* LSR and MSR writes have no documented effect */
	}
}

static uint8_t uart_in(struct hw_fake_uart *u, unsigned reg)
{
	bool dlab = u->lcr & UART_LCR_DLAB;

	switch (reg) {
	case 0: return dlab ? u->dll : 0;               /* RBR: nothing received */
	case 1: return dlab ? u->dlm : u->ier;
	case 2: return (u->fcr & 1) ? 0xc1 : 0x01;      /* IIR: no interrupt pending */
	case 3: return u->lcr;
	case 4: return u->mcr;
	case 5:
		u->lsr_reads++;
		return u->thre_stuck ? 0 : UART_LSR_THRE | UART_LSR_TEMT;
	case 6: return 0;                               /* MSR: no modem lines */
	default: return u->scr;
	}
}

static void io_out(uint16_t port, int width, uint32_t value)
{
	struct hw_fake_uart *u = uart_at(port);

	fk.io_log[hw_fake_io_out_count % HW_FAKE_IO_LOG] =
		(struct hw_fake_io){ port, (uint8_t)width, value };
	hw_fake_io_out_count++;
	if (u && width == 1)
		uart_out(u, (unsigned)(port - u->base), (uint8_t)value);
}

static uint32_t io_in(uint16_t port, int width)
{
	uint32_t mask = width == 1 ? 0xffu : width == 2 ? 0xffffu : 0xffffffffu;
	struct hw_fake_uart *u = uart_at(port);

	hw_fake_io_in_count++;
	if (u && width == 1)
		return uart_in(u, (unsigned)(port - u->base));
	if (fk.io_in)
		return fk.io_in(port, width, fk.io_in_ctx) & mask;
	return mask;  /* floating bus */
}

void hw_outb(uint16_t port, uint8_t value) { io_out(port, 1, value); }
void hw_outw(uint16_t port, uint16_t value) { io_out(port, 2, value); }
void hw_outl(uint16_t port, uint32_t value) { io_out(port, 4, value); }
uint8_t hw_inb(uint16_t port) { return (uint8_t)io_in(port, 1); }
uint16_t hw_inw(uint16_t port) { return (uint16_t)io_in(port, 2); }
uint32_t hw_inl(uint16_t port) { return io_in(port, 4); }

/* --- execution ------------------------------------------------------------------------------------ */

void hw_pause(void) { hw_fake_pause_count++; }
void hw_halt(void) { hw_fake_halt_count++; }

void hw_cli(void)
{
	fk.regs.rflags &= ~RFLAGS_IF;
	hw_fake_cli_count++;
}

void hw_wbinvd(void) { hw_fake_wbinvd_count++; }

void hw_fake_expect_stop(jmp_buf env)
{
	fk.stop_env = (jmp_buf *)env;
}

static void __attribute__((noreturn)) jump_out(int why, const char *what)
{
	jmp_buf *env = fk.stop_env;

	if (!env)
		fake_die("%s with no hw_fake_expect_stop() armed", what);
	fk.stop_env = NULL;
	longjmp(*env, why);
}

void hw_stop_cpu(void)
{
	fk.regs.rflags &= ~RFLAGS_IF;
	hw_fake_stop_count++;
	jump_out(HW_FAKE_JUMP_STOP, "hw_stop_cpu()");
}

void hw_jump_rsi(uint64_t entry, uint64_t rsi)
{
	fk.regs.rflags &= ~RFLAGS_IF;
	hw_fake_jump_entry = entry;
	hw_fake_jump_rsi = rsi;
	jump_out(HW_FAKE_JUMP_RSI, "hw_jump_rsi()");
}

struct hw_devirt_frame *hw_fake_devirt_frame;

void hw_vmx_devirt(struct hw_devirt_frame *f)
{
	hw_fake_devirt_frame = f;
	fk.in_vmx = false;
	fk.regs.cr4 = f->cr4;
	jump_out(HW_FAKE_JUMP_DEVIRT, "hw_vmx_devirt()");
}

void hw_vmx_launch_fail_return(uint64_t launch_rsp, int err)
{
	hw_fake_launch_fail_rsp = launch_rsp;
	hw_fake_launch_fail_err = err;
	jump_out(HW_FAKE_JUMP_LAUNCH_FAIL, "hw_vmx_launch_fail_return()");
}

void hw_fake_set_vmcall(hw_fake_vmcall_fn fn, void *ctx)
{
	fk.vmcall = fn;
	fk.vmcall_ctx = ctx;
}

void hw_vmcall(const uint64_t in[4], uint64_t out[4])
{
	if (!fk.vmcall)
		fake_die("#UD: VMCALL without a hypervisor (no hw_fake_set_vmcall handler)");
	fk.vmcall(in, out, fk.vmcall_ctx);
}

/* --- VMX ------------------------------------------------------------------------------------------- */

/* VMCS component encoding (SDM 3C 25.11.2 / Appendix B). */
#define ENC_ACCESS_HIGH   1u
#define ENC_TYPE(e)       (((e) >> 10) & 3u)
#define ENC_WIDTH(e)      (((e) >> 13) & 3u)
#define ENC_TYPE_RO       1u
#define ENC_WIDTH_16      0u
#define ENC_WIDTH_64      1u
#define ENC_WIDTH_32      2u
#define MSR_IA32_VMX_MISC 0x485u
#define VMX_MISC_VMWRITE_ANY (1ull << 29)

bool hw_fake_in_vmx(void) { return fk.in_vmx; }
uint64_t hw_fake_vmxon_pa(void) { return fk.vmxon_pa; }
uint64_t hw_fake_current_vmcs(void) { return fk.current; }

static struct vmcs_slot *vmcs_slot(uint64_t pa, bool create)
{
	struct vmcs_slot *free_slot = NULL;

	for (size_t i = 0; i < HW_FAKE_VMCS_MAX; i++) {
		if (fk.vmcs[i].used && fk.vmcs[i].pa == pa)
			return &fk.vmcs[i];
		if (!fk.vmcs[i].used && !free_slot)
			free_slot = &fk.vmcs[i];
	}
	if (!create)
		return NULL;
	if (!free_slot)
		fake_die("more than %d VMCS addresses", HW_FAKE_VMCS_MAX);
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = true;
	free_slot->pa = pa;
	return free_slot;
}

static struct vmcs_slot *current_slot(void)
{
	return fk.current == HW_FAKE_NO_VMCS ? NULL : vmcs_slot(fk.current, true);
}

static struct vmcs_field *field_find(struct vmcs_slot *s, uint32_t enc, bool create)
{
	size_t h = (enc * 2654435761u) % HW_FAKE_VMCS_FIELDS;

	for (size_t n = 0; n < HW_FAKE_VMCS_FIELDS; n++) {
		struct vmcs_field *f = &s->fields[(h + n) % HW_FAKE_VMCS_FIELDS];

		if (f->used && f->enc == enc)
			return f;
		if (!f->used) {
			if (!create)
				return NULL;
			f->used = true;
			f->enc = enc;
			f->value = 0;
			return f;
		}
	}
	if (create)
		fake_die("more than %d fields in one VMCS", HW_FAKE_VMCS_FIELDS);
	return NULL;
}

/* Whether VMREAD/VMWRITE accept the encoding at all (error 12 otherwise). */
static bool enc_valid(uint64_t field)
{
	if (field >> 32)
		return false;  /* SDM 3C 31.3 VMREAD: bits 63:32 must be 0 */
	if ((field & ENC_ACCESS_HIGH) && ENC_WIDTH((uint32_t)field) != ENC_WIDTH_64)
		return false;  /* high access exists only for 64-bit fields */
	return true;
}

static uint64_t slot_read(struct vmcs_slot *s, uint32_t enc)
{
	struct vmcs_field *f = field_find(s, enc & ~ENC_ACCESS_HIGH, false);
	uint64_t v = f ? f->value : 0;

	if (enc & ENC_ACCESS_HIGH)
		return v >> 32;
	return v;
}

static void slot_write(struct vmcs_slot *s, uint32_t enc, uint64_t v)
{
	struct vmcs_field *f = field_find(s, enc & ~ENC_ACCESS_HIGH, true);

	if (enc & ENC_ACCESS_HIGH) {
		f->value = (f->value & 0xffffffffull) | (v << 32);
		return;
	}
	switch (ENC_WIDTH(enc)) {
	case ENC_WIDTH_16: f->value = v & 0xffff; break;
	case ENC_WIDTH_32: f->value = v & 0xffffffffull; break;
	default: f->value = v; break;
	}
}

/* VMfail(err) (SDM 3C 31.2). */
static int vmfail(uint32_t err)
{
	struct vmcs_slot *s = current_slot();

	if (!s)
		return HW_VMX_FAIL_INVALID;
	slot_write(s, HW_FAKE_VMCS_VM_INSTRUCTION_ERROR, err);
	return HW_VMX_FAIL_VALID;
}

static bool pa_valid(uint64_t pa)
{
	return !(pa & 0xfff) && !(pa >> maxphyaddr());
}

int hw_vmxon(uint64_t pa)
{
	if (!(fk.regs.cr4 & CR4_VMXE))
		return HW_VMX_FAIL_INVALID;  /* the CPU raises #UD */
	if (fk.in_vmx)
		return vmfail(HW_FAKE_VMERR_VMXON_IN_ROOT);
	if (!pa_valid(pa))
		return HW_VMX_FAIL_INVALID;
	fk.in_vmx = true;
	fk.vmxon_pa = pa;
	fk.current = HW_FAKE_NO_VMCS;
	return HW_VMX_OK;
}

int hw_vmxoff(void)
{
	if (!fk.in_vmx)
		return HW_VMX_FAIL_INVALID;  /* the CPU raises #UD */
	fk.in_vmx = false;
	fk.vmxon_pa = 0;
	fk.current = HW_FAKE_NO_VMCS;
	return HW_VMX_OK;
}

int hw_vmclear(uint64_t pa)
{
	if (!pa_valid(pa))
		return vmfail(HW_FAKE_VMERR_VMCLEAR_ADDR);
	if (fk.in_vmx && pa == fk.vmxon_pa)
		return vmfail(HW_FAKE_VMERR_VMCLEAR_VMXON);
	vmcs_slot(pa, true)->launched = false;
	if (pa == fk.current)
		fk.current = HW_FAKE_NO_VMCS;
	return HW_VMX_OK;
}

int hw_vmptrld(uint64_t pa)
{
	if (!pa_valid(pa))
		return vmfail(HW_FAKE_VMERR_VMPTRLD_ADDR);
	if (fk.in_vmx && pa == fk.vmxon_pa)
		return vmfail(HW_FAKE_VMERR_VMPTRLD_VMXON);
	vmcs_slot(pa, true);
	fk.current = pa;
	return HW_VMX_OK;
}

static const struct vmx_inject *inject_find(const struct vmx_inject *t, size_t n, uint64_t field)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].field == field)
			return &t[i];
	return NULL;
}

int hw_vmread(uint64_t field, uint64_t *value)
{
	struct vmcs_slot *s = current_slot();
	const struct vmx_inject *inj;

	hw_fake_vmread_count++;
	/* A failed VMREAD leaves the destination unchanged (SDM 3C 31.3). */
	if (!s)
		return HW_VMX_FAIL_INVALID;
	if (!enc_valid(field))
		return vmfail(HW_FAKE_VMERR_UNSUPPORTED_FIELD);
	inj = inject_find(fk.fail_read, fk.nfail_read, field);
	if (inj)
		return vmfail(inj->err);
	*value = slot_read(s, (uint32_t)field);
	return HW_VMX_OK;
}

int hw_vmwrite(uint64_t field, uint64_t value)
{
	struct vmcs_slot *s = current_slot();
	const struct vmx_inject *inj;

	hw_fake_vmwrite_count++;
	if (!s)
		return HW_VMX_FAIL_INVALID;
	if (!enc_valid(field))
		return vmfail(HW_FAKE_VMERR_UNSUPPORTED_FIELD);
	inj = inject_find(fk.fail_write, fk.nfail_write, field);
	if (inj)
		return vmfail(inj->err);
	if (ENC_TYPE((uint32_t)field) == ENC_TYPE_RO &&
	    !(hw_fake_get_msr(MSR_IA32_VMX_MISC) & VMX_MISC_VMWRITE_ANY))
		return vmfail(HW_FAKE_VMERR_READ_ONLY_FIELD);
	slot_write(s, (uint32_t)field, value);
	return HW_VMX_OK;
}

uint64_t hw_fake_vmcs_get(uint32_t field)
{
	struct vmcs_slot *s = current_slot();

	return s ? slot_read(s, field) : 0;
}

void hw_fake_vmcs_set(uint32_t field, uint64_t value)
{
	struct vmcs_slot *s = current_slot();

	if (!s)
		fake_die("hw_fake_vmcs_set(%#x) without a current VMCS (hw_vmptrld first)", field);
	slot_write(s, field, value);
}

uint64_t hw_fake_vmcs_get_at(uint64_t pa, uint32_t field)
{
	struct vmcs_slot *s = vmcs_slot(pa, false);

	return s ? slot_read(s, field) : 0;
}

static void inject_add(struct vmx_inject *t, size_t *n, uint32_t field, uint32_t err)
{
	for (size_t i = 0; i < *n; i++) {
		if (t[i].field == field) {
			t[i].err = err;
			return;
		}
	}
	if (*n == INJECT_MAX)
		fake_die("more than %d injected VMX failures", INJECT_MAX);
	t[(*n)++] = (struct vmx_inject){ field, err };
}

void hw_fake_fail_vmwrite(uint32_t field, uint32_t vm_instruction_error)
{
	inject_add(fk.fail_write, &fk.nfail_write, field, vm_instruction_error);
}

void hw_fake_fail_vmread(uint32_t field, uint32_t vm_instruction_error)
{
	inject_add(fk.fail_read, &fk.nfail_read, field, vm_instruction_error);
}

void hw_fake_set_launch_result(int rc, uint32_t vm_instruction_error)
{
	fk.launch_rc = rc;
	fk.launch_err = vm_instruction_error;
}

int hw_vmx_launch_here(void)
{
	struct vmcs_slot *s = current_slot();

	if (!fk.in_vmx || !s)
		return HW_VMX_FAIL_INVALID;
	if (s->launched)
		return vmfail(HW_FAKE_VMERR_VMLAUNCH_NOT_CLEAR);
	if (fk.launch_rc == HW_VMX_FAIL_VALID)
		return vmfail(fk.launch_err);
	if (fk.launch_rc)
		return fk.launch_rc;
	s->launched = true;
	hw_fake_launch_count++;
	return HW_VMX_OK;
}

static int inv_log(struct hw_fake_inv e)
{
	fk.inv_log[hw_fake_inv_count % HW_FAKE_INV_LOG] = e;
	hw_fake_inv_count++;
	return e.rc;
}

const struct hw_fake_inv *hw_fake_inv_log(size_t back)
{
	if (back >= hw_fake_inv_count || back >= HW_FAKE_INV_LOG)
		return NULL;
	return &fk.inv_log[(hw_fake_inv_count - 1 - back) % HW_FAKE_INV_LOG];
}

/* SDM 3C 31.3 INVEPT: type 1 single-context, 2 global; others VMfail(28). */
int hw_invept(uint64_t type, uint64_t eptp)
{
	struct hw_fake_inv e = { .kind = HW_FAKE_INVEPT, .type = type, .eptp = eptp };

	e.rc = type == 1 || type == 2 ? HW_VMX_OK : vmfail(HW_FAKE_VMERR_INVALID_INV);
	return inv_log(e);
}

/*
 * SDM 3C 31.3 INVVPID: type 0 individual-address (VPID != 0, canonical
 * address), 1 single-context (VPID != 0), 2 all-context, 3 single-context
 * retaining globals (VPID != 0); anything else VMfail(28).
 */
int hw_invvpid(uint64_t type, uint16_t vpid, uint64_t linear)
{
	struct hw_fake_inv e = { .kind = HW_FAKE_INVVPID, .type = type, .vpid = vpid,
				 .linear = linear };
	bool canonical = (uint64_t)(((int64_t)(linear << 16)) >> 16) == linear;
	bool ok;

	switch (type) {
	case 0: ok = vpid != 0 && canonical; break;
	case 1: case 3: ok = vpid != 0; break;
	case 2: ok = true; break;
	default: ok = false; break;
	}
	e.rc = ok ? HW_VMX_OK : vmfail(HW_FAKE_VMERR_INVALID_INV);
	return inv_log(e);
}
