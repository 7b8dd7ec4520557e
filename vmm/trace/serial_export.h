/* SPDX-License-Identifier: MIT */
/*
 * serial_export.h - the serial exporter (docs/SERIAL-TRANSPORT.md): when a
 * trace window closes, the CPU's records since the last export and then
 * its PT stream go out as TVT1 lines (vmm/trace/serial_enc.h) through a
 * line sink.  The fallback when no NIC carries the trace.
 *
 * It sees a CPU only through the engine's exporter accessors
 * (trace_cpu_ring, trace_cpu_exported, trace_cpu_pt_stream,
 * trace_pt_take in vmm/trace/engine.h) and knows nothing of the UART: the
 * line sink is given by the caller (vmm/hv.c writes lines through the
 * logger, whose serial sink boot/ registered), so vmm/ never includes
 * drivers/.
 *
 * One emitter per CPU (its chunk numbers run over every window), indexed
 * by per_cpu index, for SERIAL_EXPORT_CPUS CPUs.  Each CPU exports only
 * its own windows, in VMX root on that CPU: the emitters need no lock.
 * The sink must write each line whole (hv.c's takes the logger's lock so
 * that a line never lands inside a log line or another CPU's line).
 *
 * Errors (negative): TRACE_ERR_* and TRACE_SERIAL_ERR_* from
 * trace_serial_emit_ring / trace_serial_emit_pt, and
 *   SERIAL_EXPORT_ERR_OFF  no line sink (serial = off): nothing sent, the
 *                          window's records stay in memory
 *   SERIAL_EXPORT_ERR_CPU  the CPU's index is SERIAL_EXPORT_CPUS or more
 * serial_export_strerror() names every code.
 */
#ifndef TV_TRACE_SERIAL_EXPORT_H
#define TV_TRACE_SERIAL_EXPORT_H

#include <stdint.h>

#include "vmm/trace/serial_enc.h"

struct per_cpu;

#define SERIAL_EXPORT_CPUS 64u

/* Beyond serial_enc.h's TRACE_SERIAL_ERR_* range on purpose. */
#define SERIAL_EXPORT_ERR_OFF (-80)
#define SERIAL_EXPORT_ERR_CPU (-81)

/*
 * serial_export_init - lines go to line(ctx, s, n) from now on; line
 * NULL: no serial line.  Forgets every CPU's emitter (chunk numbers
 * start again at 0).  Call before any CPU exports (hv_init).
 */
void serial_export_init(trace_serial_write_fn line, void *ctx);

/*
 * serial_export_window - a trace window closed on cpu (VMX root, that
 * CPU): send the ring's header and its records since the last export,
 * release them (trace_ring_consume: under overflow = stop the next window
 * gets the whole ring again), then send and release the PT stream's bytes
 * (P lines; a line the UART loses is a gap the receiver sees in the
 * offsets).  The guest waits while the UART drains: ~90 bytes of line per
 * 16-byte branch record, ~8 ms per 1,000 records at 115200 baud.  Logs
 * what it did or why not.
 *
 * Returns the records sent (>= 0; also 0 for a CPU that does not trace),
 * or SERIAL_EXPORT_ERR_OFF, SERIAL_EXPORT_ERR_CPU, or a
 * trace_serial_emit_ring error (nothing released) or a
 * trace_serial_emit_pt error (the records went out; the PT bytes taken
 * for that call are lost, a gap in the offsets).
 */
int64_t serial_export_window(struct per_cpu *cpu);

/* Text for a SERIAL_EXPORT_ERR_*, TRACE_SERIAL_ERR_* or TRACE_ERR_* code. */
const char *serial_export_strerror(int err);

#endif /* TV_TRACE_SERIAL_EXPORT_H */
