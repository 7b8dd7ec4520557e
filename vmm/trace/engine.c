/* SPDX-License-Identifier: MIT */
/*
 * engine.c - the window lifecycle: the engine's setup, each CPU's trace
 * state, windows opened and closed through the backend's ops, the work
 * before every entry, and the exit events a backend asked for (#DB, MTF).
 * Triggers are in trigger.c, PMIs in pmi.c, cross-CPU requests in
 * request.c, guest state and the entry view in guest.c.  See engine.h.
 */
#include <string.h>

#include "vmm/exit/exit.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/byte_ring.h"
#include "vmm/lib/log.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/hooks.h"
#include "vmm/trace/memwatch.h"
#include "vmm/trace/read.h"
#include "vmm/trace/snap.h"
#include "vmm/vmx/vcpu.h"

struct trace_setup trace_cfg;
const struct trace_backend *trace_be;
static trace_window_fn window_done;

const struct trace_setup *trace_engine_setup(void)
{
	return &trace_cfg;
}

void trace_engine_init(const struct trace_setup *s, gmem_read_phys_fn read_phys,
		       void *read_ctx, trace_window_fn on_window)
{
	trace_cfg = *s;
	trace_be = trace_backend_of(trace_cfg.source);
	window_done = on_window;
	trace_guest_set_reader(read_phys, read_ctx);
	trace_trigger_reset();
	trace_snap_reset();
	memwatch_reset();
	trace_guest_reset();
	trace_hcall_register(trace_cfg.source != TV_SOURCE_NONE);
	trace_hooks_register();
}

void trace_engine_configure(const struct trace_setup *s)
{
	trace_cfg = *s;
	trace_be = trace_backend_of(trace_cfg.source);
}

/* --- per-CPU state ------------------------------------------------------------ */

int trace_cpu_init(struct per_cpu *cpu, void *mem, size_t bytes, uint32_t cpu_index,
		   uint32_t apic_id, enum tv_source src, enum tv_overflow policy,
		   uint64_t tsc_hz, uint64_t now_tsc)
{
	struct trace_cpu *t = mem;
	const struct trace_backend *be = trace_backend_of(src);
	uint8_t *ring;
	int rc;

	if (!cpu || !mem || ((uintptr_t)mem & 63))
		return TRACE_ERR_INVAL;
	cpu->trace = NULL;
	if (bytes < TRACE_CPU_STATE_BYTES || (be && be->state_bytes > TRACE_BACKEND_STATE_MAX))
		return TRACE_ERR_TOO_SMALL;
	ring = (uint8_t *)mem + TRACE_CPU_STATE_BYTES;
	/* wait is a STOP ring whose producer stalls before it drops (stall.c) */
	if (policy == TV_OVERFLOW_WAIT)
		policy = TV_OVERFLOW_STOP;
	rc = trace_ring_init((struct tv_trace_ring *)(void *)ring, bytes - TRACE_CPU_STATE_BYTES, cpu_index, apic_id, src, policy,
			     tsc_hz, now_tsc);
	if (rc)
		return rc;
	memset(t, 0, TRACE_CPU_STATE_BYTES);
	t->cpu = cpu;
	t->source = (uint8_t)src;
	t->b.priv = (uint8_t *)mem + TRACE_CPU_PRIV_OFF;
	t->b.ring = (struct tv_trace_ring *)(void *)ring;
	t->b.index = cpu_index;
	t->b.setup = &trace_cfg;   /* the buffer sizes trace_cpu_*_area lay out from */
	trace_ring_cursor_tail(t->b.ring, &t->exported);
	cpu->trace = t;
	return 0;
}

int trace_cpu_bts_area(struct per_cpu *cpu, void *mem, uint64_t lin)
{
	struct trace_cpu *t = cpu ? cpu->trace : NULL;
	const struct trace_backend *be;

	if (!t || !mem || ((uintptr_t)mem & 4095) || (lin & 4095))
		return TRACE_ERR_INVAL;
	t->b.guest_mem = mem;
	t->b.guest_lin = lin;
	be = trace_backend_of(t->source);
	return be && be->area ? be->area(&t->b) : 0;
}

int trace_cpu_pt_area(struct per_cpu *cpu, void *mem, uint64_t pa)
{
	struct trace_cpu *t = cpu ? cpu->trace : NULL;
	const struct trace_backend *be = t ? trace_backend_of(t->source) : NULL;
	struct trace_setup s;
	struct trace_needs n;
	uint64_t align;

	if (!t || !be)
		return TRACE_ERR_INVAL;
	/* the area's size and alignment: the setup's buffer sizes, this CPU's source (needs.c) */
	s = *t->b.setup;
	s.source = t->source;
	if (trace_engine_needs(&s, &n) || !n.hidden_bytes)
		return TRACE_ERR_INVAL;
	align = n.hidden_align ? n.hidden_align : 4096;
	if (!mem || ((uintptr_t)mem & (align - 1)) || (pa & (align - 1)))
		return TRACE_ERR_INVAL;
	t->b.hidden_mem = mem;
	t->b.hidden_pa = pa;
	if (be->area && be->area(&t->b)) {
		t->b.hidden_mem = NULL;
		return TRACE_ERR_INVAL;
	}
	return 0;
}

/* The exporter's view: the backend's byte stream, if it has one. */
struct byte_ring *trace_cpu_pt_stream(struct per_cpu *cpu)
{
	struct trace_cpu *t = cpu ? cpu->trace : NULL;
	const struct trace_backend *be = t ? trace_backend_of(t->source) : NULL;

	return be && be->stream ? be->stream(&t->b) : NULL;
}

size_t trace_pt_take(struct per_cpu *cpu, uint8_t *buf, size_t cap, uint64_t *offset)
{
	struct byte_ring *r = trace_cpu_pt_stream(cpu);

	if (!r || !buf)
		return 0;
	/* Every byte the drains delivered went into the ring: tail = offset. */
	if (offset)
		*offset = r->tail;
	return byte_ring_read(r, buf, cap);
}

struct tv_trace_ring *trace_cpu_ring(struct per_cpu *cpu)
{
	return cpu && cpu->trace ? cpu->trace->b.ring : NULL;
}

struct trace_cursor *trace_cpu_exported(struct per_cpu *cpu)
{
	return cpu && cpu->trace ? &cpu->trace->exported : NULL;
}

bool trace_cpu_active(const struct per_cpu *cpu)
{
	return cpu && cpu->trace && cpu->trace->b.active;
}

/*
 * The state of cpu with what its backend sees brought up to date: the
 * setup and filter in force (this image's: the boot image initialised
 * the memory, the resident copy runs) and the VMX controls as written.
 */
struct trace_cpu *trace_cpu_sync(struct per_cpu *cpu)
{
	struct trace_cpu *t = cpu->trace;

	if (!t)
		return NULL;
	t->b.setup = &trace_cfg;
	t->b.filter = t->filter_set ? &t->filter : &trace_cfg.filter;
	t->b.entry_ctls = cpu->entry_ctls;
	t->b.exit_ctls = cpu->exit_ctls;
	t->b.pin_ctls = cpu->pin;
	t->b.proc_allowed1 = (uint32_t)(cpu->caps.proc >> 32);
	t->b.waiting_sipi = cpu->sipi_state == VCPU_WAIT_FOR_SIPI;
	return t;
}

bool trace_mtf_window(const struct trace_cpu *t)
{
	return t && t->b.active && trace_be && (trace_be->events & TRACE_EV_MTF);
}

bool trace_wants_mtf(const struct per_cpu *cpu)
{
	const struct trace_cpu *t = cpu ? cpu->trace : NULL;

	return t && (t->trigger_step || t->kentry_step || trace_mtf_window(t));
}

void trace_step_begin(struct per_cpu *cpu, struct trace_step *s)
{
	uint64_t intr = vmcs_get(VMCS_GUEST_INTERRUPTIBILITY);
	uint64_t rflags = vmcs_get(VMCS_GUEST_RFLAGS);

	s->set_sti = false;
	if ((rflags & RFLAGS_IF) && !(rflags & RFLAGS_TF) &&
	    !(intr & (INTERRUPTIBILITY_STI | INTERRUPTIBILITY_MOV_SS))) {
		vmcs_write(VMCS_GUEST_INTERRUPTIBILITY, intr | INTERRUPTIBILITY_STI);
		s->set_sti = true;
	}
	s->mtf_was = (cpu->proc & CPU_MONITOR_TRAP_FLAG) != 0;
	if (!s->mtf_was)
		trace_set_mtf(cpu, true);
}

void trace_step_end(struct per_cpu *cpu, struct trace_step *s, bool another_step)
{
	if (!s->mtf_was && !another_step && !trace_wants_mtf(cpu))
		trace_set_mtf(cpu, false);
	if (s->set_sti) {
		uint64_t intr = vmcs_get(VMCS_GUEST_INTERRUPTIBILITY);

		if (intr & INTERRUPTIBILITY_STI)
			vmcs_write(VMCS_GUEST_INTERRUPTIBILITY, intr & ~(uint64_t)INTERRUPTIBILITY_STI);
		s->set_sti = false;
	}
}

/* --- windows ------------------------------------------------------------------ */

int trace_start(struct per_cpu *cpu, enum tv_trigger why)
{
	struct trace_cpu *t = trace_cpu_sync(cpu);
	struct trace_view v;
	int rc;

	if (!t || !trace_be || !trace_be->usable(&t->b))
		return TRACE_ENOSYS;
	if (t->b.active)
		return TRACE_EBUSY;
	if (trace_pmi_take_lvt(cpu, t))
		return TRACE_ENOSYS;
	trace_pmi_window_reset(t);
	trace_view_begin(&v, cpu);
	rc = trace_be->open(&t->b, &v);
	trace_view_flush(&v);
	if (rc)
		return rc;
	t->b.active = true;
	t->b.window_branches = 0;
	t->stall.win_waits = 0;
	t->stall.win_ticks = 0;
	cpu->drain_armed = trace_be->drain_tick;
	/* The drain tick counts from the window's start (vmm/exit/periodic.c). */
	if (trace_be->drain_tick && cpu->drain_period_tsc && (cpu->pin & PIN_PREEMPTION_TIMER)) {
		uint64_t now = hw_rdtsc();

		cpu->next_drain_tsc = now + cpu->drain_period_tsc;
		vmcs_write(VMCS_PREEMPTION_TIMER_VALUE, vcpu_timer_value(cpu, now));
	}
	t->b.windows++;
	trace_append_start(t->b.ring, hw_rdtsc(), why, trace_guest_ip());
	memwatch_window_start(cpu);   /* the config's watches, at this CPU's first window */
	/* Backends that arm at entries do so in trace_before_entry, before this exit's entry. */
	log_info("trace: cpu %u: window %llu started (%s) at %#llx", cpu->index,
		 (unsigned long long)t->b.windows, trace_trigger_name(why),
		 (unsigned long long)trace_guest_ip());
	return TRACE_EOK;
}

int trace_stop(struct per_cpu *cpu, enum tv_trigger why)
{
	struct trace_cpu *t = trace_cpu_sync(cpu);
	struct trace_view v;

	if (!t || !trace_be)
		return TRACE_ENOSYS;
	if (!t->b.active)
		return TRACE_EBUSY;
	t->b.active = false;
	cpu->drain_armed = false;
	trace_view_begin(&v, cpu);
	trace_be->close(&t->b, &v);
	trace_view_flush(&v);
	trace_snap_window_stop(cpu);   /* its LOG record inside the window */
	memwatch_window_stop(cpu);     /* TV_REC_MEM_STATS and its LOG line, inside too */
	trace_append_stop(t->b.ring, hw_rdtsc(), why, trace_guest_ip());
	trace_be->log_stop(&t->b, trace_trigger_name(why));
	trace_stall_log(t);
	trace_pmi_log(t);
	if (window_done)
		window_done(cpu);
	return TRACE_EOK;
}

/*
 * A buffer that refused what the hardware produced closes the window only
 * under overflow = stop (TV_TRIG_FULL).  Under overwrite and wait (the
 * receiver given up) it is a counted gap and the window goes on: a window
 * ends by its trigger, its limit, CONTROL or the guest's reset.
 */
bool trace_full_stops(void)
{
	return trace_cfg.overflow == TV_OVERFLOW_STOP;
}

/* What a backend's drain or exit handler asked for. */
static void trace_after(struct per_cpu *cpu, struct trace_cpu *t, uint32_t r)
{
	if (r & TRACE_DO_PMI_SEEN)
		trace_pmi_expect(t);
	if (!t->b.active)
		return;
	if ((r & TRACE_DO_STOP_FULL) && trace_full_stops())
		trace_stop(cpu, TV_TRIG_FULL);
	else if ((r & TRACE_DO_LIMIT) && trace_cfg.stop_after &&
		 t->b.window_branches >= trace_cfg.stop_after)
		trace_stop(cpu, TV_TRIG_LIMIT);
}

void trace_before_entry(struct per_cpu *cpu, uint32_t exit_reason)
{
	struct trace_cpu *t = trace_cpu_sync(cpu);
	struct trace_view v;
	uint32_t r;

	if (!t)
		return;
	trace_apply_requests(cpu, t);
	trace_trigger_before_entry(cpu, t, exit_reason);
	if (!trace_be)
		return;
	/*
	 * Every exit of a window is a read point: the exit stopped the unit.
	 * One re-sync after the requests (a FILTER request changes the
	 * filter the backend sees); nothing between drain and prepare does.
	 */
	trace_cpu_sync(cpu);
	if (t->b.active && trace_be->drain) {
		trace_view_begin(&v, cpu);
		r = trace_be->drain(&t->b, &v);
		trace_view_flush(&v);
		trace_after(cpu, t, r);
	}
	/* Then the unit on (window open) or off for the entry. */
	if (trace_be->prepare) {
		trace_view_begin(&v, cpu);
		r = trace_be->prepare(&t->b, &v);
		trace_view_flush(&v);
		if (r & TRACE_DO_PMI_SEEN)
			trace_pmi_expect(t);
	}
	if (trace_engine_wants_nmi_exiting())
		trace_pmi_claim_root(cpu, t);
}

/* Exit reason 37: the work happens in trace_before_entry. */
enum exit_action exit_monitor_trap(struct exit_ctx *ctx)
{
	(void)ctx;
	return EXIT_RESUME;
}

/* --- #DB exits ---------------------------------------------------------------- */

bool trace_owns_db(const struct per_cpu *cpu)
{
	return trace_be && (trace_be->events & TRACE_EV_DB) && cpu->trace &&
	       cpu->trace->b.db_intercepted;
}

enum exit_action exit_debug_exception(struct exit_ctx *ctx)
{
	struct per_cpu *cpu = ctx->cpu;
	struct trace_cpu *t = trace_cpu_sync(cpu);
	uint64_t info = vmcs_get(VMCS_EXIT_INTR_INFO);
	uint32_t type = (uint32_t)(info >> INTR_INFO_TYPE_SHIFT) & 7u;
	struct trace_view v;
	uint32_t r;

	if (type == INTR_TYPE_PRIV_SW_EXC || !t || !trace_be || !trace_be->on_db) {
		/*
		 * INT1 (ICEBP) exits through bit 1 too; it is the guest's,
		 * delivered as it was: type 5 with its length (SDM 3C 27.6.1.1).
		 */
		vmcs_write(VMCS_ENTRY_INSTRUCTION_LEN, vmcs_get(VMCS_EXIT_INSTRUCTION_LEN));
		vmcs_write(VMCS_ENTRY_INTR_INFO, info & (INTR_INFO_VALID | 0x7ffu));
		return EXIT_RESUME;
	}
	trace_view_begin(&v, cpu);
	r = trace_be->on_db(&t->b, &v, ctx->qualification);
	trace_view_flush(&v);
	if (v.reflect_db)
		exit_inject_exception(ctx, VEC_DB, false, 0);
	trace_after(cpu, t, r);
	return EXIT_RESUME;
}
