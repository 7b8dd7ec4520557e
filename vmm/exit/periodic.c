/* SPDX-License-Identifier: MIT */
/*
 * periodic.c - work tracevisor does on a clock, in VMX root.
 *
 * The VMX-preemption timer (SDM 3C 26.5.1) counts down while the guest
 * runs, at the TSC rate divided by 2^IA32_VMX_MISC[4:0], and causes a VM
 * exit (reason 52) at zero, whatever the guest does: interrupts off,
 * spinning, halted.  Without "save VMX-preemption timer value" every VM
 * entry reloads it from the VMCS, so after each exit the remaining time to
 * the next due point is written anew; the deadline itself lives in TSC
 * units in per_cpu, so frequent exits neither postpone nor hasten it.
 *
 * Today's work is the heartbeat: one line per CPU with what the guest is
 * doing (where, in which address space, which exits since the last
 * line), which is what you want when a guest "hangs".  At log_level debug
 * each beat is followed by "hbsum:" lines with the CPU's TSC and its
 * cumulative exit counts for every reason seen so far (tests/bench/ sums
 * them into a profile; docs/BENCHMARKS.md).
 */
#include <stdio.h>

#include "vmm/exit/exit.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/exit/preempt.h"

enum exit_action exit_preemption_timer(struct exit_ctx *ctx)
{
	(void)ctx;
	return EXIT_RESUME;
}

uint32_t vcpu_timer_value(const struct per_cpu *cpu, uint64_t now)
{
	uint64_t left, due = preempt_deadline(cpu, now);

	if ((int64_t)(due - now) <= 0)
		return 0;
	left = (due - now) >> cpu->timer_shift;
	return left > 0xffffffffull ? 0xffffffffu : (uint32_t)left;
}

/* The three reasons with the most exits since the last heartbeat. */
static void top_reasons(const struct per_cpu *cpu, char *buf, size_t len)
{
	uint32_t best[3] = { 0, 0, 0 };
	uint64_t bestn[3] = { 0, 0, 0 };
	size_t n = 0;

	for (uint32_t r = 0; r < EXIT_REASON_MAX; r++) {
		uint64_t d = cpu->stats.by_reason[r] - cpu->beat_by_reason[r];

		for (int k = 0; k < 3; k++) {
			if (d > bestn[k]) {
				for (int j = 2; j > k; j--) {
					bestn[j] = bestn[j - 1];
					best[j] = best[j - 1];
				}
				bestn[k] = d;
				best[k] = r;
				break;
			}
		}
	}
	buf[0] = '\0';
	for (int k = 0; k < 3 && bestn[k]; k++) {
		int w = snprintf(buf + n, len - n, "%s%s %llu", k ? ", " : "",
				 vmx_exit_reason_name(best[k]), (unsigned long long)bestn[k]);

		if (w < 0 || (size_t)w >= len - n)
			break;
		n += (size_t)w;
	}
	if (!n)
		snprintf(buf, len, "none");
}

/*
 * Cumulative exits by reason, every reason with a count, as
 * "hbsum: cpu C: tsc T exits E: R=N R=N ..." (R the basic exit reason
 * number).  When the pairs do not fit in one log line the rest follow in
 * more lines with the same header.  Only at log_level debug: the
 * heartbeat line itself stays one line.
 */
static void heartbeat_totals(const struct per_cpu *cpu, uint64_t now)
{
	char buf[LOG_MAX_LINE + 1];
	size_t hdr, n;
	bool any = false;

	if (log_get_level() < LOG_DEBUG)
		return;
	n = hdr = (size_t)snprintf(buf, sizeof(buf), "hbsum: cpu %u: tsc %llu exits %llu:",
				   cpu->index, (unsigned long long)now,
				   (unsigned long long)cpu->stats.exits);
	if (hdr >= sizeof(buf))
		return;
	for (uint32_t r = 0; r < EXIT_REASON_MAX; r++) {
		int w;

		if (!cpu->stats.by_reason[r])
			continue;
		w = snprintf(buf + n, sizeof(buf) - n, " %u=%llu", r,
			     (unsigned long long)cpu->stats.by_reason[r]);
		if (w < 0 || (size_t)w >= sizeof(buf) - n) {
			buf[n] = '\0';
			log_debug("%s", buf);
			n = hdr;
			buf[n] = '\0';
			w = snprintf(buf + n, sizeof(buf) - n, " %u=%llu", r,
				     (unsigned long long)cpu->stats.by_reason[r]);
			if (w < 0 || (size_t)w >= sizeof(buf) - n)
				return;
		}
		n += (size_t)w;
		any = true;
	}
	if (n > hdr || !any)
		log_debug("%s", buf);
}

static void heartbeat(struct per_cpu *cpu, uint64_t now)
{
	char top[160];

	top_reasons(cpu, top, sizeof(top));
	log_info("hb: cpu %u: %llu exits (+%llu: %s), %llu NMIs in root, guest RIP %#llx CS %#llx CR3 %#llx RFLAGS %#llx activity %llu",
		 cpu->index, (unsigned long long)cpu->stats.exits,
		 (unsigned long long)(cpu->stats.exits - cpu->beat_exits), top,
		 (unsigned long long)cpu->stats.nmis_in_root,
		 (unsigned long long)vmcs_get(VMCS_GUEST_RIP),
		 (unsigned long long)vmcs_get(VMCS_GUEST_CS_SELECTOR),
		 (unsigned long long)vmcs_get(VMCS_GUEST_CR3),
		 (unsigned long long)vmcs_get(VMCS_GUEST_RFLAGS),
		 (unsigned long long)vmcs_get(VMCS_GUEST_ACTIVITY_STATE));
	heartbeat_totals(cpu, now);
	cpu->beat_exits = cpu->stats.exits;
	for (uint32_t r = 0; r < EXIT_REASON_MAX; r++)
		cpu->beat_by_reason[r] = cpu->stats.by_reason[r];
}

void vcpu_periodic(struct per_cpu *cpu)
{
	bool timer = (cpu->pin & PIN_PREEMPTION_TIMER) != 0;
	uint64_t now;

	if (!cpu->poll_period_tsc && (!timer || (!cpu->timer_period_tsc && !cpu->drain_period_tsc)))
		return;
	now = hw_rdtsc();
	preempt_poll(cpu, now);
	if (!timer)
		return;
	if (cpu->timer_period_tsc && (int64_t)(now - cpu->next_beat_tsc) >= 0) {
		heartbeat(cpu, now);
		cpu->next_beat_tsc += cpu->timer_period_tsc;
		/* Far behind (a long stop): skip the missed beats. */
		if ((int64_t)(now - cpu->next_beat_tsc) >= 0)
			cpu->next_beat_tsc = now + cpu->timer_period_tsc;
	}
	/* The drain tick: this exit was the point (trace_before_entry drains). */
	if (cpu->drain_period_tsc && (int64_t)(now - cpu->next_drain_tsc) >= 0) {
		cpu->next_drain_tsc += cpu->drain_period_tsc;
		if ((int64_t)(now - cpu->next_drain_tsc) >= 0)
			cpu->next_drain_tsc = now + cpu->drain_period_tsc;
	}
	vmcs_write(VMCS_PREEMPTION_TIMER_VALUE, vcpu_timer_value(cpu, now));
}

bool vcpu_deliver_nmi(struct per_cpu *cpu)
{
	uint64_t intr, info, act;

	if (!__atomic_load_n(&cpu->nmi_pending, __ATOMIC_ACQUIRE))
		return false;
	info = vmcs_get(VMCS_ENTRY_INTR_INFO);
	intr = vmcs_get(VMCS_GUEST_INTERRUPTIBILITY);
	act = vmcs_get(VMCS_GUEST_ACTIVITY_STATE);
	/*
	 * SDM 3C 27.3.1.5: no NMI injection while another event is being
	 * injected, under MOV-SS blocking, under blocking by NMI (virtual
	 * NMIs are off), or into wait-for-SIPI / shutdown.  Then it stays
	 * pending for the next exit, as a held-off NMI would on bare metal.
	 */
	if ((info & INTR_INFO_VALID) ||
	    (intr & (INTERRUPTIBILITY_MOV_SS | INTERRUPTIBILITY_NMI)) ||
	    (act != ACTIVITY_ACTIVE && act != ACTIVITY_HLT))
		return false;
	vmcs_write(VMCS_ENTRY_INTR_INFO,
		   2u | (INTR_TYPE_NMI << INTR_INFO_TYPE_SHIFT) | INTR_INFO_VALID);
	__atomic_fetch_sub(&cpu->nmi_pending, 1, __ATOMIC_ACQ_REL);
	cpu->stats.nmis_reflected++;
	return true;
}
