/* SPDX-License-Identifier: MIT */
/*
 * serial_export.c - the serial exporter (see serial_export.h,
 * docs/SERIAL-TRANSPORT.md).
 */
#include "vmm/trace/serial_export.h"

#include <stdbool.h>

#include "vmm/lib/log.h"
#include "vmm/trace/engine.h"
#include "vmm/vmx/vcpu.h"

static trace_serial_write_fn sx_line;
static void *sx_ctx;
static struct trace_serial sx_emit[SERIAL_EXPORT_CPUS];
static bool sx_ready[SERIAL_EXPORT_CPUS];

void serial_export_init(trace_serial_write_fn line, void *ctx)
{
	sx_line = line;
	sx_ctx = ctx;
	for (uint32_t i = 0; i < SERIAL_EXPORT_CPUS; i++)
		sx_ready[i] = false;
}

/*
 * The CPU's PT stream since the last export as P lines; the bytes leave
 * the byte ring as they are taken.  Returns 0 or trace_serial_emit_pt's
 * error.
 */
static int export_pt(struct per_cpu *cpu, struct trace_serial *ts)
{
	uint8_t buf[960];   /* ten full P lines; on this CPU's stack (CPUs export at once) */
	uint64_t off, first = 0, total = 0;
	size_t n;

	while ((n = trace_pt_take(cpu, buf, sizeof(buf), &off)) > 0) {
		int64_t sent = trace_serial_emit_pt(ts, buf, n, off, 0);

		if (sent < 0) {
			log_err("trace: cpu %u: serial PT export failed at offset %llu: %s", cpu->index,
				(unsigned long long)off, trace_serial_strerror((int)sent));
			return (int)sent;
		}
		if (!total)
			first = off;
		total += n;
	}
	log_info("trace: cpu %u: exported %llu PT bytes over serial (stream offsets %llu..%llu)",
		 cpu->index, (unsigned long long)total, (unsigned long long)first,
		 (unsigned long long)(first + total));
	return 0;
}

int64_t serial_export_window(struct per_cpu *cpu)
{
	struct tv_trace_ring *ring = trace_cpu_ring(cpu);
	struct trace_cursor *exported = trace_cpu_exported(cpu);
	struct trace_serial_result res;
	struct trace_serial *ts;
	int64_t n;
	int rc;

	if (!ring || !exported)
		return 0;
	if (!sx_line) {
		log_warn("trace: cpu %u: no exporter (serial = off): the window's records stay in memory",
			 cpu->index);
		return SERIAL_EXPORT_ERR_OFF;
	}
	if (cpu->index >= SERIAL_EXPORT_CPUS) {
		log_warn("trace: cpu %u: beyond the serial exporter's %u CPUs: not exported",
			 cpu->index, SERIAL_EXPORT_CPUS);
		return SERIAL_EXPORT_ERR_CPU;
	}
	ts = &sx_emit[cpu->index];
	if (!sx_ready[cpu->index]) {
		trace_serial_init(ts, ring->cpu, sx_line, sx_ctx);
		sx_ready[cpu->index] = true;
	}
	n = trace_serial_emit_ring(ts, ring, exported, 0, &res);
	if (n < 0) {
		log_err("trace: cpu %u: serial export failed: %s", cpu->index,
			trace_serial_strerror((int)n));
		return n;
	}
	trace_ring_consume(ring, exported);
	log_info("trace: cpu %u: exported %llu records over serial (%llu lines, %llu bytes), %llu gone before export",
		 cpu->index, (unsigned long long)res.records, (unsigned long long)res.lines,
		 (unsigned long long)res.bytes, (unsigned long long)res.missed);
	if (trace_cpu_pt_stream(cpu)) {
		rc = export_pt(cpu, ts);
		if (rc < 0)
			return rc;
	}
	return n;
}

const char *serial_export_strerror(int err)
{
	switch (err) {
	case SERIAL_EXPORT_ERR_OFF:
		return "no serial line (serial = off)";
	case SERIAL_EXPORT_ERR_CPU:
		return "CPU index beyond the serial exporter's table";
	default:
		return trace_serial_strerror(err);
	}
}
