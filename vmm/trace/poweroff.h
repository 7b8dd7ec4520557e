/* SPDX-License-Identifier: MIT */
/*
 * poweroff.h - the guest's power-off closes every window, and the last
 * bytes reach the receiver before the machine is gone.
 *
 * The exit layer sees the guest's ACPI sleep (a PM1 control write with
 * SLP_EN, vmm/exit/exit_io.c) and calls the guest_sleep exit hook before
 * the write goes out; the tracer's hook (vmm/trace/hooks.c) calls
 * trace_poweroff on that CPU.  The engine keeps per-CPU state in each
 * CPU's trace memory and knows no other CPU by itself: the resident
 * copy's init (vmm/hv.c) hands it the per_cpu array and the exporter's
 * pump with trace_engine_set_cpus.  Implemented in vmm/trace/request.c.
 */
#ifndef TV_TRACE_POWEROFF_H
#define TV_TRACE_POWEROFF_H

#include <stdbool.h>
#include <stdint.h>

struct per_cpu;

/*
 * The request another CPU applies at its next exit (trace_apply_requests,
 * like TRACE_REQ_STOP, engine.h): close the window with trigger
 * guest-power-off.  Set only by trace_poweroff; it wins over a START
 * queued with it.
 */
#define TRACE_REQ_POWEROFF (1u << 4)

/*
 * How long trace_poweroff waits WITHOUT progress (ms of TSC): no window
 * closed and nothing more acknowledged by the receiver in that time.  While
 * the receiver keeps acknowledging, the machine waits (a whole boot's last
 * tens of MB at the link's rate); wait_ms when it is set.
 */
#define TRACE_POWEROFF_WAIT_MS 2000u

/*
 * trace_pump_fn - one step of the exporter from cpu (VMX root): on the
 * CPU that drives the NIC, run it once; elsewhere, a short pause.
 * Returns true when every stream (records and PT bytes of every CPU) is
 * acknowledged by the receiver.
 */
typedef bool (*trace_pump_fn)(struct per_cpu *cpu);

/*
 * trace_engine_set_cpus - all n CPUs (cpus[0..n)), and the pump (NULL:
 * nothing to wait for beyond the window callbacks, e.g. the serial
 * exporter, which exports synchronously).  From the resident copy's init.
 */
void trace_engine_set_cpus(struct per_cpu *cpus, uint32_t n, trace_pump_fn pump);

/*
 * trace_poweroff - the guest on cpu powers off (VMX root, that CPU, its
 * VMCS current): ask every other CPU with an open window to close it
 * (TRACE_REQ_POWEROFF: each does at its next exit, which the VMX-
 * preemption timer brings - the PT drain tick or the heartbeat), close
 * this CPU's (trace_stop with TV_TRIG_GUEST_POWEROFF: its window
 * callback exports it), then wait until no CPU has a window open or a
 * power-off request pending and the pump reports everything acknowledged,
 * pumping meanwhile; the wait ends early only when nothing progressed
 * (a window closed, or the exporter's consumers moved: ring and PT stream
 * tails, which move on acks) for wait_ms (TRACE_POWEROFF_WAIT_MS when
 * unset).  Logs one line per traced CPU.  Returns true when everything was
 * closed and acknowledged, false after the bound (or with no engine).
 */
bool trace_poweroff(struct per_cpu *cpu);

#endif /* TV_TRACE_POWEROFF_H */
