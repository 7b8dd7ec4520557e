/* SPDX-License-Identifier: MIT */
/*
 * engine.h - tracing in the running hypervisor: one record ring per
 * CPU in reserved memory, start/stop/marker from hypercalls and triggers,
 * and the backend's work on every VM exit.
 *
 * The engine is the window lifecycle: it opens and closes windows (from
 * hypercalls, triggers: vmm/trace/trigger.c, and other CPUs' requests:
 * vmm/trace/request.c), writes START/STOP/MARKER sideband records, takes
 * the PMI's NMIs (vmm/trace/pmi.c) and hands finished windows to the
 * exporter.  Each trace unit is a backend behind one ops table
 * (vmm/trace/backend.h); the engine finds it once from the source and
 * gives it a view of the VM-entry state (vmm/trace/guest.c), never the
 * VMCS or struct per_cpu.  The VMX core and the exit handlers reach the
 * engine only through the exit hooks (vmm/trace/hooks.c); struct per_cpu
 * holds an opaque pointer to its state (vmm/trace/cpu.h).
 *
 * The backends (docs/BACKENDS-*.md) are described where they live:
 * vmm/trace/backend/mtf.h, btf.h, lbr.h, bts.h and pt.h ("The unit").
 * For btf, lbr and bts the guest's IA32_DEBUGCTL bits the backend owns
 * (trace_backend.debugctl_owned, docs/TRACE-MSR-POLICY.md) are the
 * engine's in the VMCS on every entry, windows open or not; the guest's
 * own bits in the field are kept (vmm/exit/exit_msr.c merges them).
 *
 * Files: engine.c (setup, per-CPU state, windows, before-entry, #DB and
 * MTF exits), trigger.c, pmi.c, request.c, guest.c, hcall.c (the
 * hypercalls; TRACE_E* -> TV_HC_*), hooks.c (the exit hooks), needs.c.
 *
 * Concurrency: each CPU only ever touches its own struct trace_cpu and
 * ring (in VMX root, on its own exits); the setup is written once at boot.
 */
#ifndef TV_TRACE_ENGINE_H
#define TV_TRACE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/lib/guest_mem.h"
#include "vmm/trace/needs.h"
#include "vmm/trace/trace.h"

struct per_cpu;
struct exit_ctx;
struct ept;
struct page_pool;
struct byte_ring;

#define TRACE_REQ_LABEL_MAX 16       /* = TV_HC_LABEL_LEN (vmm/exit/hypercall.h) */

/*
 * Per traced CPU, the engine's and its backend's state take the first
 * TRACE_CPU_STATE_BYTES of the memory given to trace_cpu_init; the record
 * ring (a header page and ring_kb) follows.  trace_engine_needs counts it
 * in ring_bytes.
 */
#define TRACE_CPU_STATE_BYTES 8192u

/*
 * Requests one CPU makes of another: the receiver's CONTROL messages
 * (docs/PROTOCOL.md) arrive on the network's CPU but open, close or mark
 * any CPU's window.  trace_request only sets bits (and, for a marker, the
 * label) in the target's struct trace_cpu; the target applies them itself
 * in trace_before_entry, before its next VM entry, so every ring still
 * has exactly one writer.  A CPU that does not exit applies them at its
 * next timer exit (heartbeat_s, or poll_us on the network's CPU).  START
 * cancels a STOP not yet applied and the other way round; windows opened
 * or closed this way carry TV_TRIG_RECEIVER.  A new filter (CPL, CR3, IP
 * ranges) replaces the setup's for that CPU from its next entry: the
 * software filters (MTF, BTF, the LBR and BTS drains) use it at once, the
 * hardware ones derived from it (LBR_SELECT, BTS_OFF_OS/USR) from the next
 * window.
 */
#define TRACE_REQ_START   (1u << 0)
#define TRACE_REQ_STOP    (1u << 1)
#define TRACE_REQ_MARKER  (1u << 2)
#define TRACE_REQ_FILTER  (1u << 3)   /* trace_request_filter */

#define TRACE_REQ_OK      TRACE_EOK
#define TRACE_REQ_ENOSYS  TRACE_ENOSYS   /* this CPU does not trace (no ring, no source) */
#define TRACE_REQ_EBUSY   TRACE_EBUSY    /* a marker for this CPU is still pending */
#define TRACE_REQ_EINVAL  TRACE_EINVAL   /* no request bit, or an unknown one */

/*
 * trace_request - ask cpu to do req (one TRACE_REQ_* bit) at its next
 * entry; marker_id and label[0..len) for TRACE_REQ_MARKER (len is cut to
 * TRACE_REQ_LABEL_MAX, the hypercall marker's TV_HC_LABEL_LEN).  Safe from any CPU.  Returns TRACE_REQ_OK (queued)
 * or a TRACE_REQ_E* code.
 */
int trace_request(struct per_cpu *cpu, uint32_t req, uint64_t marker_id,
		  const char *label, size_t len);

/*
 * trace_request_filter - ask cpu to use f from its next entry.  Returns
 * TRACE_REQ_OK, TRACE_REQ_ENOSYS, TRACE_REQ_EBUSY (a filter for this CPU
 * is still pending) or TRACE_REQ_EINVAL (no CPL bit or a CPL bit other
 * than TRACE_CPL_KERNEL/USER, more than TRACE_MAX_RANGES ranges, a range
 * with lo > hi).
 */
int trace_request_filter(struct per_cpu *cpu, const struct trace_filter *f);

/*
 * PMIs (pmi = on, docs/CONFIG.md): while a window of lbr, bts or pt is
 * open the CPU's LVT performance-counter entry is NMI delivery, unmasked;
 * NMIs cause VM exits (pin-based "NMI exiting", SDM 3C 25.6.1), and an NMI
 * exit goes to trace_nmi_exit.  There the backend says whether its
 * condition raised it (bts: the DS index at the threshold; pt:
 * Trace_ToPA_PMI; lbr: its counter's overflow bit), drains, and the LVT's
 * mask bit (set by the delivery, SDM 3A "Local Vector Table") is cleared
 * again.  An NMI that is not ours, or a PMI that also reports the guest's
 * counters (IA32_PERF_GLOBAL_STATUS bits 0-48), is injected into the
 * guest as an NMI.  A PMI that reaches VMX root during another exit
 * (vmm/hv.c host_nmi counts it pending) is claimed in
 * trace_before_entry when that exit's drain found our condition.
 */
bool trace_engine_wants_nmi_exiting(void);

/*
 * Called at the end of a window (STOP written) with the CPU's ring, from
 * VMX root on that CPU: the exporter (serial today, network later).
 */
typedef void (*trace_window_fn)(struct per_cpu *cpu);

/*
 * trace_engine_init - adopt setup, register the hypercall hooks (when a
 * source is set), and read guest-physical memory through read_phys
 * (NULL: guest memory cannot be read, every MTF instruction counts as a
 * decode error).  on_window may be NULL.
 */
void trace_engine_init(const struct trace_setup *setup, gmem_read_phys_fn read_phys,
		       void *read_ctx, trace_window_fn on_window);

/*
 * trace_engine_configure - adopt setup only, no hooks: the boot image
 * calls it before trace_cpu_init so that trace_cpu_pt_area and
 * trace_cpu_bts_area lay the areas out with the setup's buffer sizes
 * (the resident copy's trace_engine_init adopts the same setup).
 */
void trace_engine_configure(const struct trace_setup *setup);

/* The setup in effect (what trace_engine_init was given). */
const struct trace_setup *trace_engine_setup(void);

/*
 * trace_cpu_init - make mem[0..bytes) the CPU's trace memory (boot, before
 * the CPU launches): its state (TRACE_CPU_STATE_BYTES), then its ring;
 * cpu->trace points at it.  mem must be 64-byte aligned.  Returns 0 or a
 * TRACE_ERR_* code (TRACE_ERR_INVAL, TRACE_ERR_TOO_SMALL, ...).
 */
int trace_cpu_init(struct per_cpu *cpu, void *mem, size_t bytes, uint32_t cpu_index,
		   uint32_t apic_id, enum tv_source src, enum tv_overflow policy,
		   uint64_t tsc_hz, uint64_t now_tsc);

/*
 * Per CPU memory beyond the ring, sized from the setup (struct
 * trace_setup's pt_ring_bytes, pt_topa_bytes, bts_buf_bytes; docs/CONFIG.md)
 * and counted by trace_engine_needs:
 * bts: one 4 KiB page for the DS save area followed by the BTS buffer
 * (bts_buf_bytes: 64 KiB by default, 2730 records of 24 bytes, the last
 * the drain's sentinel).
 * pt: the area of vmm/trace/backend/pt.h (struct pt_area_layout): the
 * ToPA output regions, the table page and the stream ring, aligned to a
 * region's size (SDM 3C 33.2.7.2).
 */
/*
 * trace_cpu_bts_area - give the CPU (after trace_cpu_init) its BTS memory
 * (the backend's guest_bytes, struct trace_needs):
 * mem[0..guest_bytes), page aligned, which the guest's current
 * paging maps at linear address lin (and its EPT read/write: the caller's
 * job).  Returns 0 or TRACE_ERR_INVAL (NULL, not page aligned).
 */
int trace_cpu_bts_area(struct per_cpu *cpu, void *mem, uint64_t lin);

/*
 * trace_cpu_pt_area - give the CPU (after trace_cpu_init) its PT memory
 * (the backend's hidden_bytes, struct trace_needs):
 * mem[0..hidden_bytes) at physical address pa, both hidden_align
 * aligned, hidden from the guest.  Returns 0 or TRACE_ERR_INVAL (NULL,
 * misaligned, sizes the backend cannot lay out).
 */
int trace_cpu_pt_area(struct per_cpu *cpu, void *mem, uint64_t pa);

/*
 * trace_pt_take - for the exporter: up to cap bytes of the CPU's PT
 * stream, oldest first, taken out of its byte ring; *offset receives the
 * stream offset of buf[0].  Returns the count (0: nothing waiting).
 */
size_t trace_pt_take(struct per_cpu *cpu, uint8_t *buf, size_t cap, uint64_t *offset);

/*
 * What the exporters (vmm/trace/serial_export.c, net/net.c) see of a
 * CPU's tracing, so they never reach into the engine's per-CPU state:
 *  trace_cpu_ring      - the record ring; NULL: this CPU does not trace.
 *  trace_cpu_exported  - the exporter's cursor in that ring (NULL likewise).
 *  trace_cpu_pt_stream - the PT byte stream the drains fill; NULL: none
 *                        (not traced, or the source is not pt).
 *  trace_cpu_active    - a window is open.
 */
struct tv_trace_ring *trace_cpu_ring(struct per_cpu *cpu);
struct trace_cursor *trace_cpu_exported(struct per_cpu *cpu);
struct byte_ring *trace_cpu_pt_stream(struct per_cpu *cpu);
bool trace_cpu_active(const struct per_cpu *cpu);

/*
 * trace_start / trace_stop - open or close this CPU's window (VMX root,
 * current VMCS = the CPU's).  Return TRACE_EOK, TRACE_ENOSYS (no ring; mtf
 * without the MTF control; btf/lbr without a usable legacy LBR stack or
 * without the load/save debug controls; a backend not wired in),
 * TRACE_EBUSY (start while tracing, stop while not; btf: start while the
 * guest single-steps itself, RFLAGS.TF set); bts: TRACE_ENOSYS also
 * without BTS on the CPU, without its memory, or for a filter the
 * hardware cannot apply (a CPL filter without DS-CPL); pt: TRACE_ENOSYS
 * without usable PT (caps, memory, the RTIT_CTL entry and exit controls)
 * or for a filter PT cannot apply.  A stop drains the LBR stack (lbr),
 * the BTS buffer (bts) or the PT output (pt) first and logs the window's
 * counts.
 */
int trace_start(struct per_cpu *cpu, enum tv_trigger why);
int trace_stop(struct per_cpu *cpu, enum tv_trigger why);

/*
 * trace_before_entry - the last thing before VMRESUME (exit_reason: the
 * basic reason of the exit just handled): requests, triggers, the boot trigger,
 * then the backend's per-exit work: mtf records the transfer since the
 * last exit; btf arms (or disarms) TF and DEBUGCTL and keeps #DB
 * intercepted; lbr drains the stack and sets DEBUGCTL.LBR; bts drains
 * the buffer and sets DEBUGCTL.TR|BTS; pt drains the output regions and
 * writes GUEST_IA32_RTIT_CTL (TraceEn only while a window is open).
 */
void trace_before_entry(struct per_cpu *cpu, uint32_t exit_reason);

/*
 * The address trigger (start = TV_TRIG_ADDRESS): the 4 KiB page holding
 * start_addr is made non-executable in EPT; the first instruction fetch at
 * start_addr itself, on any CPU, opens that CPU's window right there and
 * makes the page executable again for good.  Fetches of other
 * instructions in the page are stepped over one at a time (execute
 * allowed, MTF for one instruction, execute removed again).
 *
 * trace_trigger_arm - take execute away (once, at boot, before any CPU
 *   uses the EPT: it does no INVEPT): 0, or an EPT_ERR_* code (logged).
 * trace_trigger_fetch - from the EPT-violation handler, for a fetch at
 *   gpa (guest_rax: the guest's RAX, which for kernel_entry's trap is the
 *   status ExitBootServices returned): true when it was the trigger's
 *   page and has been dealt with.
 */
int trace_trigger_arm(struct ept *ept, struct page_pool *pool);
bool trace_trigger_fetch(struct per_cpu *cpu, uint64_t gpa, uint64_t guest_rax);

/* The exit-shaped entry points (#DB, NMI, MTF exits) are in vmm/trace/cpu.h, for the hooks. */

#endif /* TV_TRACE_ENGINE_H */
