/* SPDX-License-Identifier: MIT */
/*
 * hw_fake.h - the host fake of vmm/hw/hw.h: seeding and inspection API.
 *
 * tests/fakes/hw_fake.c implements every function of vmm/hw/hw.h with plain
 * C state instead of instructions, so everything above the seam runs in a
 * host process under ASan/UBSan.  Call hw_fake_reset() in each test's
 * setup; every table, log, counter and register then holds its power-on
 * value (SDM 3A 10.1.1, Table 10-1) and nothing is attached.
 *
 * What is modelled, and how far:
 *  - CPUID: a table of (leaf, sub-leaf) the test seeds.  An unseeded leaf
 *    reads as zeros (like a leaf above the maximum).  Leaves that take no
 *    sub-leaf ignore ECX as the hardware does: cpuid(1, 5) returns the
 *    seeded (1, 0) entry; leaves that are sub-leaf indexed (4, 7, 0xB,
 *    0xD, 0xF, 0x10, 0x12, 0x14, 0x17, 0x18, 0x1B, 0x1D, 0x1E, 0x1F, 0x20,
 *    0x23, 0x24, 0x8000001D, 0x80000020, 0x80000026: SDM 2A CPUID) match
 *    exactly.
 *  - MSRs: a table.  RDMSR of an MSR never seeded nor written returns 0
 *    and counts in hw_fake_unknown_msr_reads (real hardware would #GP:
 *    a non-zero count in a test means the code read an MSR without
 *    checking it exists).  WRMSR stores and is logged; a write to
 *    IA32_PERF_GLOBAL_OVF_CTRL (0x390) also clears its 1 bits in a seeded
 *    IA32_PERF_GLOBAL_STATUS (0x38E), and one to IA32_LBR_DEPTH (0x14CF)
 *    zeroes the seeded arch LBR entries, as the hardware does.
 *  - Registers: plain variables behind hw_fake_regs().  Two #GP rules
 *    are enforced because breaking them would crash the real host: CR4.VMXE
 *    cannot be cleared in VMX operation (SDM 3C 24.8), and XSETBV checks
 *    XCR0 (SDM 2B XSETBV; 3A 13.3).  A #GP in the fake prints the rule
 *    and abort()s.
 *  - Port I/O: OUT is logged; IN goes to an attached fake 16550, then to a
 *    test callback, else reads a floating bus (all ones).
 *  - TSC: a counter; each hw_rdtsc() returns it, then adds the step.
 *  - VMX (SDM 3C 31.2-31.4): VMXON needs CR4.VMXE (the fake answers
 *    HW_VMX_FAIL_INVALID where the CPU would raise #UD) and a 4 KiB aligned
 *    pointer; VMXON in VMX operation is VMfail(15); VMCLEAR/VMPTRLD check
 *    alignment, the physical-address width and the VMXON pointer (errors
 *    2/3, 9/10); VMREAD/VMWRITE fail invalid without a current VMCS, fail
 *    valid (12) for encodings with bits 63:32 set or an access-type high
 *    (bit 0) on a non-64-bit field, and VMWRITE to a read-only field
 *    (type bits 11:10 == 1) fails valid (13) unless IA32_VMX_MISC[29] is
 *    seeded.  Values are truncated to the field width (bits 14:13), and
 *    the high access of a 64-bit field reads/writes its upper half.
 *    VMfail(n) writes n to VM_INSTRUCTION_ERROR (0x4400) of the current
 *    VMCS and returns HW_VMX_FAIL_VALID, or returns HW_VMX_FAIL_INVALID
 *    when there is no current VMCS (SDM 3C 31.2).  Every VMCS lives at its
 *    physical address and keeps its contents across VMCLEAR/VMPTRLD.
 *    Not modelled: #UD outside VMX operation for VMCLEAR, VMPTRLD, VMREAD,
 *    VMWRITE, INVEPT, INVVPID (exit-handler tests VMPTRLD without VMXON),
 *    the revision identifier (the fake has no memory behind addresses),
 *    IA32_FEATURE_CONTROL checks in VMXON, INVEPT/INVVPID capability bits.
 *  - hw_stop_cpu() and hw_vmx_launch_fail_return() do not return: they
 *    longjmp to the jmp_buf armed with hw_fake_expect_stop() and abort()
 *    when none is armed.
 */
#ifndef TV_HW_FAKE_H
#define TV_HW_FAKE_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/hw/hw.h"

/* --- reset --------------------------------------------------------------- */

/* Everything back to power-on defaults; detaches UARTs and callbacks. */
void hw_fake_reset(void);

/* --- CPUID ---------------------------------------------------------------- */

#define HW_FAKE_CPUID_MAX 256  /* table entries */

struct hw_fake_cpuid_entry {
	uint32_t leaf, subleaf;
	uint32_t eax, ebx, ecx, edx;
};

/* Seed (or replace) one leaf.  abort()s when the table is full. */
void hw_fake_set_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t eax,
		       uint32_t ebx, uint32_t ecx, uint32_t edx);
/* Replace the whole CPUID table with a recorded CPU's leaves. */
void hw_fake_load_cpu(const struct hw_fake_cpuid_entry *entries, size_t n);
/* How many hw_cpuid() calls were made since reset. */
extern uint64_t hw_fake_cpuid_count;

/* --- MSRs ------------------------------------------------------------------ */

#define HW_FAKE_MSR_MAX 512      /* table entries */
#define HW_FAKE_MSR_LOG 64       /* WRMSRs kept in the log */

struct hw_fake_msr_write {
	uint32_t msr;
	uint64_t value;
};

/* Seed (or overwrite) an MSR; not logged as a write.  abort()s when full. */
void hw_fake_set_msr(uint32_t msr, uint64_t value);
/* The MSR's value without counting an unknown read; 0 when absent. */
uint64_t hw_fake_get_msr(uint32_t msr);
/* Whether the MSR was seeded or written since reset. */
bool hw_fake_has_msr(uint32_t msr);
/* Forget an MSR: reads count as unknown again. */
void hw_fake_clear_msr(uint32_t msr);

/* Every hw_wrmsr() since reset. */
extern uint64_t hw_fake_msr_write_count;
/*
 * hw_fake_msr_write_log - the back-th most recent WRMSR (0 = the last),
 * or NULL when back >= the number kept (min(count, HW_FAKE_MSR_LOG)).
 */
const struct hw_fake_msr_write *hw_fake_msr_write_log(size_t back);
/* RDMSRs of MSRs never seeded nor written, and the last such MSR. */
extern uint64_t hw_fake_unknown_msr_reads;
extern uint32_t hw_fake_last_unknown_msr;

/* --- registers ------------------------------------------------------------- */

struct hw_fake_regs {
	uint64_t cr0, cr2, cr3, cr4;
	uint64_t dr6, dr7;
	uint64_t rflags;
	uint64_t xcr0;
	uint64_t xinuse;                 /* XGETBV(1) (XINUSE) */
	uint16_t sel[HW_SEG_COUNT];      /* HW_SEG_TR is TR's selector */
	struct hw_dtr gdtr, idtr;
};

/*
 * hw_fake_regs - the live register file: read it to see what the code
 * under test wrote, write it to set up a state (no rule is checked on
 * this path).  Power-on values: CR0 0x60000010, DR6 0xffff0ff0, DR7 0x400, RFLAGS 0x2,
 * XCR0 1, CS 0xf000, GDTR/IDTR limit 0xffff; the rest 0.
 */
struct hw_fake_regs *hw_fake_regs(void);

extern uint64_t hw_fake_lgdt_count, hw_fake_ltr_count;

/*
 * --- memory-mapped registers ------------------------------------------------
 * A table of 32-bit registers by physical address.  A read of an address
 * never seeded nor written returns all ones (nothing decodes it); unaligned
 * accesses abort().  Writes store.
 */
#define HW_FAKE_MMIO_MAX 64
void hw_fake_set_mmio(uint64_t pa, uint32_t value);
/* The register's value; false when the address was never seeded nor written. */
bool hw_fake_get_mmio(uint64_t pa, uint32_t *value);
extern uint64_t hw_fake_mmio_read_count, hw_fake_mmio_write_count;

/* --- port I/O ---------------------------------------------------------------- */

#define HW_FAKE_IO_LOG 256  /* OUTs kept in the log */

struct hw_fake_io {
	uint16_t port;
	uint8_t width;    /* 1, 2 or 4 bytes */
	uint32_t value;
};

typedef uint32_t (*hw_fake_io_in_fn)(uint16_t port, int width, void *ctx);

/*
 * Answer IN from ports no fake UART claims (NULL: floating bus, 0xff /
 * 0xffff / 0xffffffff).  The result is truncated to the width.
 */
void hw_fake_set_io_in(hw_fake_io_in_fn fn, void *ctx);

/* Every OUT since reset (UART registers included), and every IN. */
extern uint64_t hw_fake_io_out_count, hw_fake_io_in_count;
/* The back-th most recent OUT (0 = the last), or NULL past what is kept. */
const struct hw_fake_io *hw_fake_io_out_log(size_t back);

/* --- fake 16550 UART ------------------------------------------------------------ */

#define HW_FAKE_UART_MAX 4
#define HW_FAKE_UART_TX_MAX 4096

/*
 * A 16550 at base..base+7: the scratch register holds what is written,
 * LSR reads THRE|TEMT (0x60) unless thre_stuck, DLAB (LCR bit 7) switches
 * offsets 0/1 to the divisor latch, and bytes written to THR are captured
 * in tx[] (tx_total keeps counting past HW_FAKE_UART_TX_MAX).  The test
 * reads and may change every field.
 */
struct hw_fake_uart {
	uint16_t base;
	bool thre_stuck;       /* the transmitter never becomes ready */
	uint8_t ier, lcr, mcr, fcr, scr, dll, dlm;
	char tx[HW_FAKE_UART_TX_MAX + 1];  /* NUL-terminated */
	size_t tx_len;         /* bytes stored in tx */
	uint64_t tx_total;     /* bytes written to THR */
	uint64_t lsr_reads;
};

/* Attach a fresh UART at base; abort()s if more than HW_FAKE_UART_MAX. */
struct hw_fake_uart *hw_fake_uart_attach(uint16_t base);

/* --- time ------------------------------------------------------------------------- */

/* Next hw_rdtsc() returns value; each read then adds the step (default 1). */
void hw_fake_set_tsc(uint64_t value);
void hw_fake_advance_tsc(uint64_t delta);
void hw_fake_set_tsc_step(uint64_t step);
uint64_t hw_fake_get_tsc(void);

/* --- execution ----------------------------------------------------------------------- */

extern uint64_t hw_fake_pause_count, hw_fake_halt_count, hw_fake_cli_count,
	hw_fake_wbinvd_count, hw_fake_stop_count;

/* Values setjmp returns after hw_stop_cpu / hw_vmx_launch_fail_return. */
#define HW_FAKE_JUMP_STOP        1
#define HW_FAKE_JUMP_LAUNCH_FAIL 2
#define HW_FAKE_JUMP_RSI         3   /* hw_jump_rsi: see hw_fake_jump_entry/_rsi */
#define HW_FAKE_JUMP_DEVIRT      4   /* hw_vmx_devirt: see hw_fake_devirt_frame */

extern struct hw_devirt_frame *hw_fake_devirt_frame;

extern uint64_t hw_fake_jump_entry, hw_fake_jump_rsi;

/*
 * hw_fake_expect_stop - the next hw_stop_cpu() or
 * hw_vmx_launch_fail_return() longjmps to env (one shot).  Use:
 *
 *	jmp_buf env;
 *	hw_fake_expect_stop(env);
 *	if (setjmp(env) == 0) {
 *		code_that_stops();
 *		fail();
 *	}
 *	assert_int_equal(hw_fake_stop_count, 1);
 *
 * Locals changed between setjmp and the jump must be volatile.  Arming
 * again replaces the earlier env; hw_fake_reset() disarms.
 */
void hw_fake_expect_stop(jmp_buf env);
/* What the last hw_vmx_launch_fail_return() was given. */
extern uint64_t hw_fake_launch_fail_rsp;
extern int hw_fake_launch_fail_err;

/*
 * VMCALL (guest side): answered by fn; without one the fake abort()s,
 * standing for the #UD a CPU without a hypervisor raises.
 */
typedef void (*hw_fake_vmcall_fn)(const uint64_t in[4], uint64_t out[4], void *ctx);
void hw_fake_set_vmcall(hw_fake_vmcall_fn fn, void *ctx);

/* --- VMX --------------------------------------------------------------------------------- */

#define HW_FAKE_VMCS_MAX 8         /* distinct VMCS addresses */
#define HW_FAKE_VMCS_FIELDS 512    /* fields per VMCS */
#define HW_FAKE_INV_LOG 64
#define HW_FAKE_VMCS_VM_INSTRUCTION_ERROR 0x4400u
#define HW_FAKE_NO_VMCS UINT64_MAX /* the invalid current-VMCS pointer */

/* VM-instruction error numbers the fake produces (SDM 3C 31.4). */
#define HW_FAKE_VMERR_VMCLEAR_ADDR       2
#define HW_FAKE_VMERR_VMCLEAR_VMXON      3
#define HW_FAKE_VMERR_VMLAUNCH_NOT_CLEAR 4
#define HW_FAKE_VMERR_VMPTRLD_ADDR       9
#define HW_FAKE_VMERR_VMPTRLD_VMXON      10
#define HW_FAKE_VMERR_UNSUPPORTED_FIELD  12
#define HW_FAKE_VMERR_READ_ONLY_FIELD    13
#define HW_FAKE_VMERR_VMXON_IN_ROOT      15
#define HW_FAKE_VMERR_INVALID_INV        28

/* VMX operation state (read-only for tests; changed by the instructions). */
bool hw_fake_in_vmx(void);
uint64_t hw_fake_vmxon_pa(void);
uint64_t hw_fake_current_vmcs(void);  /* HW_FAKE_NO_VMCS when none */

/*
 * Backdoor to the current VMCS: as VMREAD/VMWRITE would (width
 * truncation, high access) but never failing or logging, read-only fields
 * included.  get returns 0 without a current VMCS; set abort()s then.
 */
uint64_t hw_fake_vmcs_get(uint32_t field);
void hw_fake_vmcs_set(uint32_t field, uint64_t value);
/* The same on the VMCS at pa, current or not (0 if it never existed). */
uint64_t hw_fake_vmcs_get_at(uint64_t pa, uint32_t field);

/*
 * Error injection, until reset: every VMWRITE (VMREAD) of field then
 * VMfails with vm_instruction_error (e.g. 12, unsupported component).
 */
void hw_fake_fail_vmwrite(uint32_t field, uint32_t vm_instruction_error);
void hw_fake_fail_vmread(uint32_t field, uint32_t vm_instruction_error);

/*
 * hw_vmx_launch_here: VMfailInvalid outside VMX operation or without a
 * current VMCS, VMfail(4) on a launched VMCS; otherwise it returns rc
 * as set here (default 0: the guest goes on), marking the VMCS launched
 * when rc is 0 and doing VMfail(err) when rc is HW_VMX_FAIL_VALID.
 */
void hw_fake_set_launch_result(int rc, uint32_t vm_instruction_error);
extern uint64_t hw_fake_launch_count;

extern uint64_t hw_fake_vmread_count, hw_fake_vmwrite_count;

enum hw_fake_inv_kind { HW_FAKE_INVEPT, HW_FAKE_INVVPID };

struct hw_fake_inv {
	enum hw_fake_inv_kind kind;
	uint64_t type;
	uint64_t eptp;     /* INVEPT */
	uint16_t vpid;     /* INVVPID */
	uint64_t linear;   /* INVVPID */
	int rc;            /* what the instruction returned */
};

extern uint64_t hw_fake_inv_count;
/* The back-th most recent INVEPT/INVVPID (0 = the last), or NULL. */
const struct hw_fake_inv *hw_fake_inv_log(size_t back);

#endif /* TV_HW_FAKE_H */
