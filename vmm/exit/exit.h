/* SPDX-License-Identifier: MIT */
/*
 * exit.h - what the VM-exit handlers share: the handlers themselves (one
 * file per area: exit_cpuid.c, exit_msr.c, exit_cr.c, exit_misc.c,
 * exit_sipi.c, hypercall.c), pure decoders of exit qualifications and
 * VMCS formats, and the guest-state helpers they all use.
 *
 * The dispatcher (exit.c, vmx_exit_dispatch() declared in vmm/vmx/vmx.h)
 * reads the exit reason, counts it, fills a struct exit_ctx and calls the
 * handler from a table indexed by basic exit reason.  A handler returns
 * EXIT_RESUME to re-enter the guest, EXIT_STOP_CPU for an unrecoverable
 * state (it has logged why), EXIT_RESET_MACHINE for a guest reset.
 * Instruction-emulating handlers advance RIP with exit_skip_instruction()
 * on success, and on a guest fault inject it with exit_inject_exception()
 * and leave RIP on the faulting instruction (faults, SDM 3A 6.5).
 */
#ifndef TV_EXIT_H
#define TV_EXIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/vmx/vcpu.h"
#include "vmm/vmx/vmx.h"       /* vmx_exit_dispatch, vmcs_dump, CR0_PE/NE/PG, CR4_VMXE, EFER_* */
#include "vmm/vmx/vmx_defs.h"

/* --- architectural bits not declared elsewhere (SDM 3A 2.5, 2.3) -------- */
#define CR0_MP  (1ull << 1)
#define CR0_EM  (1ull << 2)
#define CR0_TS  (1ull << 3)
#define CR0_ET  (1ull << 4)
#define CR0_WP  (1ull << 16)
#define CR0_AM  (1ull << 18)
#define CR0_NW  (1ull << 29)
#define CR0_CD  (1ull << 30)
/* Bits of CR0[31:0] that exist; setting the others is ignored (3A 2.5). */
#define CR0_DEFINED (CR0_PE | CR0_MP | CR0_EM | CR0_TS | CR0_ET | CR0_NE | CR0_WP | \
		     CR0_AM | CR0_NW | CR0_CD | CR0_PG)

#define CR4_PSE     (1ull << 4)
#define CR4_PAE     (1ull << 5)
#define CR4_PGE     (1ull << 7)
#define CR4_LA57    (1ull << 12)
#define CR4_SMXE    (1ull << 14)
#define CR4_PCIDE   (1ull << 17)
#define CR4_OSXSAVE (1ull << 18)
#define CR4_SMEP    (1ull << 20)
#define CR4_SMAP    (1ull << 21)
#define CR4_PKE     (1ull << 22)
#define CR4_CET     (1ull << 23)

#define RFLAGS_TF (1ull << 8)
#define RFLAGS_IF (1ull << 9)
#define DEBUGCTL_BTF (1ull << 1)

/* CPUID feature bits the handlers touch (SDM 2A CPUID). */
#define CPUID_1_ECX_VMX     (1u << 5)
#define CPUID_1_ECX_SMX     (1u << 6)
#define CPUID_1_ECX_XSAVE   (1u << 26)
#define CPUID_1_ECX_OSXSAVE (1u << 27)
#define CPUID_7_ECX_OSPKE   (1u << 4)

/* XCR0 state components (SDM 1 13.1). */
#define XCR0_X87       (1ull << 0)
#define XCR0_SSE       (1ull << 1)
#define XCR0_AVX       (1ull << 2)
#define XCR0_BNDREGS   (1ull << 3)
#define XCR0_BNDCSR    (1ull << 4)
#define XCR0_AVX512    (7ull << 5)   /* opmask, ZMM_Hi256, Hi16_ZMM */
#define XCR0_XTILECFG  (1ull << 17)
#define XCR0_XTILEDATA (1ull << 18)

/* --- VMCS formats ------------------------------------------------------ */

/* Guest PDPTE0..3 are consecutive 64-bit fields (SDM 3C B.2.3). */
#define VMCS_GUEST_PDPTE(n) ((uint32_t)VMCS_GUEST_PDPTE0 + 2u * (uint32_t)(n))

/* VM-entry interruption-information field (SDM 3C 25.8.3). */
#define INTR_INFO_VECTOR_MASK     0xffu
#define INTR_INFO_TYPE_SHIFT      8
#define INTR_TYPE_EXT_INTERRUPT   0u
#define INTR_TYPE_NMI             2u
#define INTR_TYPE_HW_EXCEPTION    3u
#define INTR_TYPE_SW_INTERRUPT    4u
#define INTR_TYPE_PRIV_SW_EXC     5u
#define INTR_TYPE_SW_EXCEPTION    6u
#define INTR_TYPE_OTHER           7u
#define INTR_INFO_DELIVER_ERROR   (1u << 11)
#define INTR_INFO_VALID           (1u << 31)

static inline uint32_t intr_info_hw_exception(uint8_t vector, bool deliver_error)
{
	return (uint32_t)vector | (INTR_TYPE_HW_EXCEPTION << INTR_INFO_TYPE_SHIFT) |
	       (deliver_error ? INTR_INFO_DELIVER_ERROR : 0) | INTR_INFO_VALID;
}

/* Guest interruptibility state (SDM 3C 25.4.2). */
#define INTERRUPTIBILITY_STI    (1u << 0)
#define INTERRUPTIBILITY_MOV_SS (1u << 1)
#define INTERRUPTIBILITY_SMI    (1u << 2)
#define INTERRUPTIBILITY_NMI    (1u << 3)
/* Pending debug exceptions: BS, a single-step trap is pending (25.4.2). */
#define PENDING_DBG_BS (1ull << 14)

/* Segment access rights (SDM 3C 25.4.1). */
#define SEG_AR_DPL(ar)   (((ar) >> 5) & 3u)
#define SEG_AR_L         (1u << 13)

/* INVVPID types (SDM 3C 31.3 INVVPID) and the one capability bit vmx_caps.h lacks. */
#define INVVPID_INDIVIDUAL_ADDRESS     0
#define INVVPID_SINGLE_CONTEXT         1
#define INVVPID_ALL_CONTEXT            2
#define INVVPID_SINGLE_CONTEXT_GLOBALS 3
#define VPID_CAP_INVVPID_SINGLE_GLOBALS (1ull << 43)

/*
 * Exit qualification for control-register accesses (SDM 3C 28.2.1,
 * Table 28-3): bits 3:0 CR number, 5:4 access type, 6 LMSW operand type
 * (1 = memory), 11:8 GPR of MOV CR (0 RAX ... 4 RSP ... 15 R15), 31:16 the
 * LMSW source data.
 */
enum cr_access_type {
	CR_ACCESS_MOV_TO = 0,
	CR_ACCESS_MOV_FROM = 1,
	CR_ACCESS_CLTS = 2,
	CR_ACCESS_LMSW = 3,
};
static inline uint32_t cr_qual_cr(uint64_t q)          { return (uint32_t)(q & 0xf); }
static inline enum cr_access_type cr_qual_type(uint64_t q) { return (enum cr_access_type)((q >> 4) & 3); }
static inline bool cr_qual_lmsw_memory(uint64_t q)     { return (q >> 6) & 1; }
static inline uint32_t cr_qual_gpr(uint64_t q)         { return (uint32_t)((q >> 8) & 0xf); }
static inline uint16_t cr_qual_lmsw_data(uint64_t q)   { return (uint16_t)(q >> 16); }

/* Exit qualification of a SIPI exit: bits 7:0 the vector, 63:8 zero (28.2.1). */
static inline uint8_t sipi_qual_vector(uint64_t q)     { return (uint8_t)(q & 0xff); }

/* --- exit-handling helpers (exit.c) --------------------------------------- */

/* Name of a basic exit reason ("CPUID", ...), or "unknown". */
const char *vmx_exit_reason_name(uint32_t basic_reason);

/* General-purpose register by its SDM encoding (0 RAX ... 15 R15);
 * 4 (RSP) is VMCS_GUEST_RSP, the exit stub's rsp_unused is not live. */
uint64_t exit_gpr_read(const struct exit_ctx *ctx, uint32_t index);
void exit_gpr_write(struct exit_ctx *ctx, uint32_t index, uint64_t value);

/* CPL of the guest: SS.DPL (SDM 3C 25.4.1: SS.DPL is always the CPL). */
uint32_t exit_guest_cpl(void);

/* Is the guest in 64-bit mode (IA-32e mode guest entry control and CS.L)? */
bool exit_guest_64bit(void);

/*
 * The guest's view of CR0/CR4: host-owned bits (set in the guest/host
 * mask) from the read shadow, the rest from the real register (SDM 3C
 * 25.6.6).  Masks from cpu->cr0_mask/cr4_mask as vmx.c wrote them.
 */
uint64_t exit_guest_cr0(const struct exit_ctx *ctx);
uint64_t exit_guest_cr4(const struct exit_ctx *ctx);

/* MAXPHYADDR from CPUID 0x80000008 (36 when the leaf is absent). */
uint32_t exit_maxphyaddr(void);

/*
 * exit_flush_guest_tlb - invalidate the guest's linear and combined
 * mappings (INVVPID on cpu->vpid) after an emulated change that the
 * hardware would have flushed on its own.  keep_globals: a MOV to CR3
 * keeps global translations (SDM 3A 4.10.4.1).  No-op without VPID:
 * every VM entry then flushes VPID 0 already.
 */
void exit_flush_guest_tlb(struct exit_ctx *ctx, bool keep_globals);

/*
 * exit_guest_read - read len bytes of guest-physical memory at gpa into
 * dst; returns 0 or -1.  EPT identity-maps the guest and tracevisor
 * identity-maps all memory, so the default reads the address directly;
 * unit tests point it at a buffer.  Used for the PAE PDPTEs (exit_cr.c).
 */
extern int (*exit_guest_read)(uint64_t gpa, void *dst, size_t len);

/* --- handlers, one file per area ------------------------------------------ */

/* exit_cpuid.c */
enum exit_action exit_cpuid(struct exit_ctx *ctx);

/* exit_msr.c */
enum exit_action exit_rdmsr(struct exit_ctx *ctx);
enum exit_action exit_wrmsr(struct exit_ctx *ctx);

/*
 * The MSRs tracevisor intercepts and how: the extension point for the
 * tracing work (DEBUGCTL, LBR, DS_AREA, RTIT_*, PERF_GLOBAL_* go here).
 * MSRs first..last, inclusive, within one bitmap range (0-0x1fff or
 * 0xc0000000-0xc0001fff).  A NULL read or write means that direction is
 * not intercepted (the guest reaches the hardware).  The functions return
 * 0, or a negative value to raise #GP(0) in the guest.
 */
struct msr_emul {
	uint32_t first, last;
	int (*read)(struct exit_ctx *ctx, uint32_t msr, uint64_t *value);
	int (*write)(struct exit_ctx *ctx, uint32_t msr, uint64_t value);
};
extern const struct msr_emul msr_emul_table[];
extern const size_t msr_emul_count;

/*
 * msr_bitmap_build - the 4-KiB MSR bitmap (SDM 3C 25.6.9): read-low at
 * byte 0 (MSRs 0-0x1fff), read-high at 1024 (0xc0000000-0xc0001fff),
 * write-low at 2048, write-high at 3072; a set bit makes RDMSR/WRMSR of
 * that MSR exit.  Sets exactly the bits msr_emul_table and the registered
 * msr_intercepts hook (vmm/exit/hooks.h) ask for.
 */
void msr_bitmap_build(uint8_t bitmap[4096]);

/*
 * exit_msr_guest_read / exit_msr_guest_write - the guest's own value of
 * msr, where it lives while the guest runs: IA32_DEBUGCTL in
 * GUEST_IA32_DEBUGCTL, IA32_PERF_GLOBAL_CTRL in its guest field while
 * "load IA32_PERF_GLOBAL_CTRL" is on, every other MSR in the hardware
 * (RDMSR/WRMSR in VMX root: the caller checked the value).  For a
 * tracer's MSR hooks.
 */
uint64_t exit_msr_guest_read(const struct per_cpu *cpu, uint32_t msr);
void exit_msr_guest_write(const struct per_cpu *cpu, uint32_t msr, uint64_t value);

/* msr_bitmap_test - does the bitmap intercept this access?  MSRs outside
 * both ranges always exit (25.6.9), so they answer true. */
bool msr_bitmap_test(const uint8_t bitmap[4096], uint32_t msr, bool write);

/* exit_cr.c */
enum exit_action exit_cr_access(struct exit_ctx *ctx);

/* exit_misc.c */
/*
 * xsetbv_xcr0_valid - may XSETBV load value into XCR0 (SDM 1 13.3)?
 * supported = CPUID.(EAX=0DH,ECX=0):EDX:EAX.  False when: a bit outside
 * supported, x87 clear, AVX without SSE, BNDREGS != BNDCSR, AVX-512
 * bits not all-or-none or set without AVX, XTILECFG != XTILEDATA.
 */
bool xsetbv_xcr0_valid(uint64_t value, uint64_t supported);
enum exit_action exit_xsetbv(struct exit_ctx *ctx);
enum exit_action exit_invd(struct exit_ctx *ctx);
enum exit_action exit_getsec(struct exit_ctx *ctx);
enum exit_action exit_vmx_instruction(struct exit_ctx *ctx);
/*
 * NMIs that arrive while a CPU is in VMX root (host_nmi, from the host
 * IDT) belong to the guest: they are counted in cpu->nmi_pending and
 * injected before the next VM entry by vcpu_deliver_nmi() (SDM 3C 27.6:
 * event injection; "NMI exiting" is 0, so NMIs in non-root operation
 * reach the guest directly).  Returns true when one was injected.
 */
bool vcpu_deliver_nmi(struct per_cpu *cpu);

/* exit_preemption_timer - reason 52: the periodic work runs on resume. */
enum exit_action exit_preemption_timer(struct exit_ctx *ctx);

/*
 * vcpu_periodic - after every handled exit: when the heartbeat is due, log
 * this CPU's status line; then re-arm the VMX-preemption timer for the
 * next due time.  No-op when the timer is off.
 */
void vcpu_periodic(struct per_cpu *cpu);
/* vcpu_timer_value - preemption-timer ticks from now until next_beat_tsc. */
uint32_t vcpu_timer_value(const struct per_cpu *cpu, uint64_t now);
enum exit_action exit_triple_fault(struct exit_ctx *ctx);

/* exit_sipi.c */
enum exit_action exit_init_signal(struct exit_ctx *ctx);
enum exit_action exit_sipi(struct exit_ctx *ctx);

/* hypercall.c */
enum exit_action exit_vmcall(struct exit_ctx *ctx);

#endif /* TV_EXIT_H */
