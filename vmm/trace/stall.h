/* SPDX-License-Identifier: MIT */
/*
 * stall.h - back-pressure (overflow = wait, docs/BACKPRESSURE.md): a CPU
 * whose buffer cannot take what its trace hardware produced stays in VMX
 * root until the exporter has freed room, then its guest goes on.
 *
 * Who frees room: the network exporter, which runs on one CPU (the one
 * that owns the NIC) from its poll hook.  The exporter registers two
 * functions (trace_stall_set_ops, from net/net.c): pump, one export pass
 * for a waiting CPU (on the NIC's CPU it runs the exporter itself; on any
 * other CPU it does nothing and the wait pauses, while the NIC's CPU
 * keeps exporting from its own exits), and heard, when the receiver last
 * said something.
 *
 * The bound: a wait ends without room when the room has not grown for
 * wait_ms (struct trace_setup).  The receiver is then taken as gone, for
 * every CPU: from then on nothing waits, what does not fit is dropped and
 * counted as under overflow = stop (records: LOST records and the ring's
 * lost_records; PT: the refused bytes in PT_SYNC's pt_lost), and the
 * window goes on.  Once the receiver is heard from again (a datagram
 * after the moment it was given up), waiting resumes: lossless again.
 *
 * Time: the guest of a waiting CPU does not run, but its clocks do (TSC,
 * LAPIC timer, HPET, PIT, ACPI PM timer).  stall_tsc = hide subtracts the
 * waited TSC ticks from that CPU's VMCS TSC offset (vmx_tsc_hide); keep
 * (the default) leaves every clock as it is.  docs/BACKPRESSURE.md says
 * why keep is the default.
 *
 * Runs in VMX root on the producing CPU (its VMCS current), from inside
 * a drain: nothing here takes a lock.
 */
#ifndef TV_TRACE_STALL_H
#define TV_TRACE_STALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/lib/byte_ring.h"
#include "vmm/trace/backend.h"

struct per_cpu;

/* stall_tsc (struct trace_setup): what a stall does to the guest's TSC. */
enum trace_stall_tsc {
	TRACE_STALL_TSC_KEEP = 0,    /* the TSC runs on through a stall (the default) */
	TRACE_STALL_TSC_HIDE = 1,    /* the stalled ticks leave this CPU's TSC offset */
};

/* The default bound of one wait, milliseconds (wait_ms). */
#define TRACE_WAIT_MS_DEFAULT 2000u

struct trace_stall_ops {
	/*
	 * pump - one export pass on behalf of CPU cpu (per_cpu index),
	 * which waits for room: the exporter's poll when cpu owns the NIC,
	 * else nothing (the caller pauses).
	 */
	void (*pump)(void *ctx, uint32_t cpu);
	/* heard - TSC of the last datagram from the receiver; 0: none yet. */
	uint64_t (*heard)(void *ctx);
	void *ctx;
	/* The CPUs whose record rings may wait (their trace state), ncpus of them. */
	struct per_cpu *cpus;
	uint32_t ncpus;
};

/* Per CPU (struct trace_cpu), since boot and for the window. */
struct trace_stall_stats {
	uint64_t waits;            /* times the CPU waited for room */
	uint64_t ticks;            /* TSC ticks spent waiting */
	uint64_t longest;          /* the longest wait, ticks */
	uint64_t gave_up;          /* waits that ended at wait_ms: the receiver gone */
	uint64_t hidden;           /* ticks taken out of the guest's TSC (stall_tsc = hide) */
	uint64_t win_waits, win_ticks; /* the same, this window (reset at its start) */
};

/*
 * trace_stall_set_ops - the exporter's functions (copied; NULL: none,
 * nothing waits).  Also installs the record rings' wait hook
 * (trace_ring_set_wait) and forgets a receiver given up.  Init time.
 */
void trace_stall_set_ops(const struct trace_stall_ops *ops);

/*
 * trace_stall_bytes - b's backend cannot put need more bytes into its
 * byte ring r (its PT stream): wait until r has that much room.  true:
 * room; false: no wait (policy not wait, no exporter, the receiver
 * gone) or the bound passed.
 */
bool trace_stall_bytes(struct trace_bcpu *b, const struct byte_ring *r, size_t need);

/* Whether the receiver is taken as gone now (a wait hit wait_ms). */
bool trace_stall_receiver_gone(void);

/* The CPU's counters (NULL when b is not the engine's). */
const struct trace_stall_stats *trace_stall_stats_of(const struct trace_bcpu *b);

#endif /* TV_TRACE_STALL_H */
