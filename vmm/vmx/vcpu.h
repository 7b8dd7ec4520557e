/* SPDX-License-Identifier: MIT */
/*
 * vcpu.h - what one logical CPU owns, and the interface every VM-exit
 * handler sees.
 *
 * One struct per_cpu per logical CPU, in memory reserved from the firmware
 * (never returned, never touched by the OS: EPT hides it).  The VM-exit
 * stub saves the guest's general-purpose registers into struct guest_regs
 * on the host stack and calls vmx_exit_dispatch(); handlers read and write
 * the VMCS through vmcs_read()/vmcs_write(), which log the field and the
 * VM-instruction error when the hardware refuses.
 */
#ifndef TV_VCPU_H
#define TV_VCPU_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/hw/hw.h"
#include "vmm/vmx/vmx_caps.h"
#include "vmm/vmx/vmx_defs.h"

struct trace_cpu;

/* Guest GPRs as the exit stub pushes them (order fixed: see vmx_entry.S). */
struct guest_regs {
	uint64_t rax, rcx, rdx, rbx, rsp_unused, rbp, rsi, rdi;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
};
_Static_assert(sizeof(struct guest_regs) == 16 * 8, "guest_regs is 16 GPRs");

/* State of the wait-for-SIPI emulation (SDM 3C 26.4 activity states). */
enum vcpu_sipi_state {
	VCPU_RUNNING = 0,         /* normal guest execution */
	VCPU_WAIT_FOR_SIPI,       /* INIT received, waiting for a SIPI */
};

struct vcpu_stats {
	uint64_t exits;
	uint64_t by_reason[EXIT_REASON_MAX];
	uint64_t injected_ud, injected_gp;
	uint64_t hidden_memory_accesses;  /* EPT violations on hypervisor memory */
	uint64_t nmis_in_root;            /* NMIs taken while in VMX root */
	uint64_t nmis_reflected;          /* ... and injected into the guest */
	uint64_t reinjected;              /* events whose delivery an exit interrupted */
	/* hidden PCI functions (vmm/exit/pci_hide.h) */
	uint64_t pci_hidden_reads;        /* 0xCFC-0xCFF reads answered all ones */
	uint64_t pci_dropped_writes;      /* 0xCFC-0xCFF writes dropped */
	uint64_t io_string_refused;       /* INS/OUTS at 0xCF8-0xCFF: #GP(0) */
	uint64_t ecam_dropped_writes;     /* ECAM page writes dropped (EPT violation) */
	uint64_t polls;                   /* poll hook calls (vmm/exit/preempt.c) */
};

struct per_cpu {
	uint32_t index;           /* 0 = the bootstrap processor */
	uint32_t apic_id;
	uint16_t vpid;            /* index + 1: VPID 0 is the host's */

	/* physical (== virtual: identity mapped) addresses */
	uint64_t vmxon_pa, vmcs_pa, msr_bitmap_pa;
	uint64_t io_bitmap_a_pa, io_bitmap_b_pa;  /* 0: no I/O bitmaps (nothing hidden) */
	uint64_t host_stack_top;

	struct vmx_caps caps;     /* this CPU's capability MSRs */
	uint32_t pin, proc, proc2, exit_ctls, entry_ctls;  /* as written */
	uint64_t cr0_mask, cr4_mask;

	enum vcpu_sipi_state sipi_state;
	bool launching;           /* VMLAUNCH issued, no exit seen yet */
	uint64_t launch_rsp;      /* GUEST_RSP of the launch, to unwind a failed entry */
	bool launched;
	bool stopped;             /* the panic path halted this CPU */
	/*
	 * The exit-reason field of the exit being handled, read once by
	 * vmx_exit_dispatch: basic reason in bits 15:0, bit 31 a failed VM
	 * entry (SDM 3C 25.9.1).  0 when the read failed.
	 */
	uint32_t exit_reason;
	struct vcpu_stats stats;

	/*
	 * Periodic work in VMX root, driven by the VMX-preemption timer so it
	 * runs even when the guest never exits (vmm/exit/periodic.c).  A period of
	 * 0 leaves the timer off.
	 */
	uint64_t timer_period_tsc;
	uint32_t timer_shift;     /* IA32_VMX_MISC[4:0]: timer ticks = TSC >> shift */
	uint64_t next_beat_tsc;
	uint64_t beat_exits, beat_by_reason[EXIT_REASON_MAX];  /* at the last heartbeat */
	/*
	 * The poll hook (hv_set_poll_hook, vmm/exit/preempt.c): only the CPU it
	 * names has a period; it runs when next_poll_tsc has passed, at the
	 * preemption-timer exit or at any other exit before.
	 */
	uint64_t poll_period_tsc;
	uint64_t next_poll_tsc;
	/*
	 * source = pt: while this CPU's window is open, an exit at least
	 * every drain_period_tsc (pt_drain_us), so the ToPA regions are
	 * drained before a guest that rarely exits fills them (the exit
	 * itself is the work: trace_before_entry drains).  0: off.
	 */
	uint64_t drain_period_tsc;
	uint64_t next_drain_tsc;
	bool drain_armed;         /* the tracer's window wants the drain tick now (set by the tracer) */
	/*
	 * TSC_OFFSET (0x2010) as last written, with "use TSC offsetting"
	 * on when the CPU allows it (vmx_compute_controls): 0 unless
	 * vmx_tsc_hide took stalled ticks out of the guest's TSC.
	 */
	uint64_t tsc_offset;
	/*
	 * The VMX controls the tracer needs on this CPU, from
	 * trace_engine_needs() (boot/vmx_boot.c fills them; the traced-only
	 * ones when the CPU gets its ring): vmx_compute_controls ORs them
	 * into what it asks for, so the VMX core never looks at the tracer.
	 * Today: PIN_NMI_EXITING (pmi = on: the PMI, an NMI, must exit);
	 * IA32_PERF_GLOBAL_CTRL loaded on entry and exit (lbr with pmi: the
	 * counter counts guest branches only); IA32_LBR_CTL loaded on entry
	 * and cleared on exit (lbr, btf: arch LBR records guest branches
	 * only); IA32_RTIT_CTL loaded on entry and cleared on exit (pt: PT
	 * runs only in VMX non-root).  SDM 3C 25.6.1, 25.7.1, 25.8.1.
	 */
	uint32_t trace_pin_ctls, trace_entry_ctls, trace_exit_ctls;

	struct hw_devirt_frame devirt;  /* filled by TV_HC_DEVIRT */
	uint32_t nmi_pending;     /* NMIs taken in VMX root, not yet injected */

	/*
	 * This CPU's tracing state (vmm/trace/cpu.h), opaque here: NULL when
	 * the CPU does not trace.  Outside vmm/trace only the accessors of
	 * vmm/trace/engine.h (trace_cpu_ring, trace_cpu_active, ...) read it.
	 */
	struct trace_cpu *trace;
};

/*
 * vmcs_read / vmcs_write - VMREAD/VMWRITE with the failure reported:
 * on VMfailValid the field encoding and the VM-instruction error text are
 * logged at err.  Return 0 or the HW_VMX_* code.  vmcs_read leaves *value
 * 0 on failure.
 */
int vmcs_read(uint32_t field, uint64_t *value);
int vmcs_write(uint32_t field, uint64_t value);
/* Convenience: the value or 0 (failure logged). */
uint64_t vmcs_get(uint32_t field);

/* --- exit dispatch -------------------------------------------------------- */

/* What the dispatcher does after a handler. */
enum exit_action {
	EXIT_RESUME = 0,          /* VMRESUME the guest */
	EXIT_STOP_CPU,            /* unrecoverable: dump state, halt this CPU */
	EXIT_RESET_MACHINE,       /* e.g. guest triple fault: log, then reset */
	EXIT_DEVIRT,              /* leave VMX, continue as cpu->devirt (boot only) */
};

struct exit_ctx {
	struct per_cpu *cpu;
	struct guest_regs *regs;
	uint32_t reason;          /* basic exit reason, bits 15:0 */
	uint64_t qualification;   /* read once by the dispatcher when needed */
	uint32_t instr_len;       /* VM-exit instruction length, when defined */
};

typedef enum exit_action (*exit_handler_fn)(struct exit_ctx *ctx);

struct exit_handler {
	exit_handler_fn fn;
	bool need_qualification;  /* dispatcher reads EXIT_QUALIFICATION */
	bool need_instr_len;      /* dispatcher reads EXIT_INSTRUCTION_LEN */
};

/* Advance guest RIP past the exiting instruction (ctx->instr_len). */
void exit_skip_instruction(struct exit_ctx *ctx);
/* Inject a hardware exception on the next VM entry (SDM 3C 27.6). */
void exit_inject_exception(struct exit_ctx *ctx, uint8_t vector, bool has_error, uint32_t error);
#define VEC_UD 6
#define VEC_GP 13
#define VEC_DB 1

#endif /* TV_VCPU_H */
