/* SPDX-License-Identifier: MIT */
/*
 * hw_x86.c - the target implementation of vmm/hw/hw.h.
 *
 * The only C file in tracevisor with inline asm.  Each function is one
 * instruction plus the flag decoding the SDM prescribes; anything smarter
 * belongs above the seam where it can be tested.
 */
#include "vmm/hw/hw.h"

void hw_cpuid(uint32_t leaf, uint32_t subleaf, struct hw_cpuid_regs *out)
{
	__asm__ volatile("cpuid"
			 : "=a"(out->eax), "=b"(out->ebx), "=c"(out->ecx), "=d"(out->edx)
			 : "a"(leaf), "c"(subleaf));
}

uint64_t hw_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

bool hw_rdrand64(uint64_t *out)
{
	uint64_t v;
	uint8_t ok;

	/* SDM 2B RDRAND: CF=1 when the value is valid, else the register is 0. */
	__asm__ volatile("rdrand %0; setc %1" : "=r"(v), "=qm"(ok) : : "cc");
	*out = v;
	return ok != 0;
}

uint64_t hw_rdmsr(uint32_t msr)
{
	uint32_t lo, hi;

	__asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

void hw_wrmsr(uint32_t msr, uint64_t value)
{
	__asm__ volatile("wrmsr"
			 :
			 : "c"(msr), "a"((uint32_t)value), "d"((uint32_t)(value >> 32))
			 : "memory");
}

#define HW_READ_CR(n)                                              \
	uint64_t hw_read_cr##n(void)                               \
	{                                                          \
		uint64_t v;                                        \
		__asm__ volatile("mov %%cr" #n ", %0" : "=r"(v));  \
		return v;                                          \
	}
#define HW_WRITE_CR(n)                                                     \
	void hw_write_cr##n(uint64_t value)                                \
	{                                                                  \
		__asm__ volatile("mov %0, %%cr" #n : : "r"(value) : "memory"); \
	}
HW_READ_CR(0)
HW_READ_CR(2)
HW_READ_CR(3)
HW_READ_CR(4)
HW_WRITE_CR(0)
HW_WRITE_CR(2)
HW_WRITE_CR(3)
HW_WRITE_CR(4)

uint32_t hw_mmio_read32(uint64_t pa)
{
	return *(volatile uint32_t *)(uintptr_t)pa;
}

void hw_mmio_write32(uint64_t pa, uint32_t value)
{
	*(volatile uint32_t *)(uintptr_t)pa = value;
}

uint64_t hw_read_dr6(void)
{
	uint64_t v;

	__asm__ volatile("mov %%dr6, %0" : "=r"(v));
	return v;
}

void hw_write_dr6(uint64_t value)
{
	__asm__ volatile("mov %0, %%dr6" : : "r"(value));
}

uint64_t hw_read_dr7(void)
{
	uint64_t v;

	__asm__ volatile("mov %%dr7, %0" : "=r"(v));
	return v;
}

void hw_write_dr7(uint64_t value)
{
	__asm__ volatile("mov %0, %%dr7" : : "r"(value));
}

uint64_t hw_read_rflags(void)
{
	uint64_t v;

	__asm__ volatile("pushfq; popq %0" : "=r"(v));
	return v;
}

uint64_t hw_xgetbv(uint32_t xcr)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(xcr));
	return ((uint64_t)hi << 32) | lo;
}

void hw_xsetbv(uint32_t xcr, uint64_t value)
{
	__asm__ volatile("xsetbv"
			 :
			 : "c"(xcr), "a"((uint32_t)value), "d"((uint32_t)(value >> 32)));
}

uint16_t hw_read_selector(enum hw_seg seg)
{
	uint16_t v = 0;

	switch (seg) {
	case HW_SEG_ES: __asm__ volatile("mov %%es, %0" : "=r"(v)); break;
	case HW_SEG_CS: __asm__ volatile("mov %%cs, %0" : "=r"(v)); break;
	case HW_SEG_SS: __asm__ volatile("mov %%ss, %0" : "=r"(v)); break;
	case HW_SEG_DS: __asm__ volatile("mov %%ds, %0" : "=r"(v)); break;
	case HW_SEG_FS: __asm__ volatile("mov %%fs, %0" : "=r"(v)); break;
	case HW_SEG_GS: __asm__ volatile("mov %%gs, %0" : "=r"(v)); break;
	case HW_SEG_LDTR: __asm__ volatile("sldt %0" : "=r"(v)); break;
	case HW_SEG_TR: __asm__ volatile("str %0" : "=r"(v)); break;
	case HW_SEG_COUNT: break;
	}
	return v;
}

void hw_sgdt(struct hw_dtr *out)
{
	__asm__ volatile("sgdt %0" : "=m"(*out));
}

void hw_sidt(struct hw_dtr *out)
{
	__asm__ volatile("sidt %0" : "=m"(*out));
}

void hw_lgdt(const struct hw_dtr *in)
{
	__asm__ volatile("lgdt %0" : : "m"(*in) : "memory");
}

void hw_ltr(uint16_t selector)
{
	__asm__ volatile("ltr %0" : : "r"(selector) : "memory");
}

void hw_outb(uint16_t port, uint8_t value)
{
	__asm__ volatile("outb %0, %1" : : "a"(value), "Nd"(port));
}

void hw_outw(uint16_t port, uint16_t value)
{
	__asm__ volatile("outw %0, %1" : : "a"(value), "Nd"(port));
}

void hw_outl(uint16_t port, uint32_t value)
{
	__asm__ volatile("outl %0, %1" : : "a"(value), "Nd"(port));
}

uint8_t hw_inb(uint16_t port)
{
	uint8_t v;

	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

uint16_t hw_inw(uint16_t port)
{
	uint16_t v;

	__asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

uint32_t hw_inl(uint16_t port)
{
	uint32_t v;

	__asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

void hw_pause(void)
{
	__asm__ volatile("pause");
}

void hw_halt(void)
{
	__asm__ volatile("hlt");
}

void hw_cli(void)
{
	__asm__ volatile("cli" : : : "memory");
}

void hw_wbinvd(void)
{
	__asm__ volatile("wbinvd" : : : "memory");
}

void hw_stop_cpu(void)
{
	for (;;)
		__asm__ volatile("cli; hlt");
}

void hw_jump_rsi(uint64_t entry, uint64_t rsi)
{
	__asm__ volatile("cli\n\tcld\n\tjmp *%0" : : "r"(entry), "S"(rsi) : "memory");
	__builtin_unreachable();
}

/*
 * VMX instructions report through RFLAGS (SDM 3C 31.2): CF=1 is
 * VMfailInvalid, ZF=1 is VMfailValid, both clear is VMsucceed.
 */
static int hw_vmx_status(uint8_t cf, uint8_t zf)
{
	if (cf)
		return HW_VMX_FAIL_INVALID;
	if (zf)
		return HW_VMX_FAIL_VALID;
	return HW_VMX_OK;
}

int hw_vmxon(uint64_t pa)
{
	uint8_t cf, zf;

	__asm__ volatile("vmxon %2; setc %0; setz %1"
			 : "=qm"(cf), "=qm"(zf) : "m"(pa) : "cc", "memory");
	return hw_vmx_status(cf, zf);
}

int hw_vmxoff(void)
{
	uint8_t cf, zf;

	__asm__ volatile("vmxoff; setc %0; setz %1"
			 : "=qm"(cf), "=qm"(zf) : : "cc", "memory");
	return hw_vmx_status(cf, zf);
}

int hw_vmclear(uint64_t pa)
{
	uint8_t cf, zf;

	__asm__ volatile("vmclear %2; setc %0; setz %1"
			 : "=qm"(cf), "=qm"(zf) : "m"(pa) : "cc", "memory");
	return hw_vmx_status(cf, zf);
}

int hw_vmptrld(uint64_t pa)
{
	uint8_t cf, zf;

	__asm__ volatile("vmptrld %2; setc %0; setz %1"
			 : "=qm"(cf), "=qm"(zf) : "m"(pa) : "cc", "memory");
	return hw_vmx_status(cf, zf);
}

int hw_vmread(uint64_t field, uint64_t *value)
{
	uint8_t cf, zf;
	uint64_t v;

	__asm__ volatile("vmread %3, %2; setc %0; setz %1"
			 : "=qm"(cf), "=qm"(zf), "=rm"(v) : "r"(field) : "cc");
	*value = v;
	return hw_vmx_status(cf, zf);
}

int hw_vmwrite(uint64_t field, uint64_t value)
{
	uint8_t cf, zf;

	__asm__ volatile("vmwrite %3, %2; setc %0; setz %1"
			 : "=qm"(cf), "=qm"(zf) : "r"(field), "rm"(value) : "cc");
	return hw_vmx_status(cf, zf);
}

/* INVEPT/INVVPID take a 128-bit descriptor in memory (SDM 3C 31.3). */
int hw_invept(uint64_t type, uint64_t eptp)
{
	struct { uint64_t eptp, reserved; } desc = { eptp, 0 };
	uint8_t cf, zf;

	__asm__ volatile("invept %2, %3; setc %0; setz %1"
			 : "=qm"(cf), "=qm"(zf) : "m"(desc), "r"(type) : "cc", "memory");
	return hw_vmx_status(cf, zf);
}

int hw_invvpid(uint64_t type, uint16_t vpid, uint64_t linear)
{
	struct { uint64_t vpid, linear; } desc = { vpid, linear };
	uint8_t cf, zf;

	__asm__ volatile("invvpid %2, %3; setc %0; setz %1"
			 : "=qm"(cf), "=qm"(zf) : "m"(desc), "r"(type) : "cc", "memory");
	return hw_vmx_status(cf, zf);
}

void hw_vmcall(const uint64_t in[4], uint64_t out[4])
{
	uint64_t a = in[0], b = in[1], c = in[2], d = in[3];

	__asm__ volatile("vmcall" : "+a"(a), "+b"(b), "+c"(c), "+d"(d) : : "memory");
	out[0] = a;
	out[1] = b;
	out[2] = c;
	out[3] = d;
}
