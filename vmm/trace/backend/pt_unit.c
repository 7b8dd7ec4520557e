/* SPDX-License-Identifier: MIT */
/*
 * pt_unit.c - the Intel PT unit (trace_backend_PT): pt.c's ToPA, RTIT and
 * drain logic driven through the engine's ops (vmm/trace/backend.h).
 * A file of its own so that pt.c stays the pure logic.  See pt.h.
 */
#include <string.h>

#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/trace/backend.h"
#include "vmm/trace/caps.h"
#include "vmm/trace/msr_policy.h"
#include "vmm/trace/backend/pt.h"
#include "vmm/trace/engine.h"
#include "vmm/trace/stall.h"
#include "vmm/vmx/vmx_defs.h"

struct pt_unit *pt_unit(struct trace_bcpu *b)
{
	return b->priv;
}

int pt_unit_layout(const struct trace_setup *s, struct pt_area_layout *l)
{
	uint64_t topa = s && s->pt_topa_bytes ? s->pt_topa_bytes : TRACE_PT_TOPA_BYTES_DEFAULT;
	uint64_t ring = s && s->pt_ring_bytes ? s->pt_ring_bytes : TRACE_PT_RING_BYTES_DEFAULT;

	return pt_area_layout(topa, ring, l);
}

/* The memory every traced CPU needs: one area, aligned to its regions. */
static void pt_mem(const struct trace_setup *s, struct trace_needs *n)
{
	struct pt_area_layout l;

	if (pt_unit_layout(s, &l))
		return;   /* 0 bytes: trace_engine_needs reports the bad sizes */
	n->hidden_bytes = l.area_bytes;
	n->hidden_align = l.region_bytes;
	n->stream_bytes = l.ring_bytes;
	n->stream_key = "pt_buffer_kb";
	n->out_bytes = l.topa_bytes;
	n->out_regions = l.regions;
	n->out_region_bytes = l.region_bytes;
	n->out_key = "pt_topa_kb";
}

/* The area was given: its layout, and the byte ring after the regions and the table. */
static int pt_area(struct trace_bcpu *b)
{
	struct pt_unit *u = pt_unit(b);

	if (pt_unit_layout(b->setup, &u->lay) ||
	    byte_ring_init(&u->ring, b->hidden_mem + u->lay.ring_off, u->lay.ring_bytes))
		return TRACE_EINVAL;
	return 0;
}

static struct byte_ring *pt_stream(struct trace_bcpu *b)
{
	return b->hidden_mem ? &pt_unit(b)->ring : NULL;
}

/*
 * PT on this CPU, probed once (CPUID leaf 14H, the VMX capability MSRs),
 * its memory (trace_cpu_pt_area) and the two controls that keep TraceEn
 * to VMX non-root: "load IA32_RTIT_CTL" on entry, "clear IA32_RTIT_CTL"
 * on exit (SDM 3C 25.7.1, 25.8.1).
 */
static bool pt_usable(struct trace_bcpu *b)
{
	struct pt_unit *u = pt_unit(b);
	bool ctls = (b->entry_ctls & ENTRY_LOAD_RTIT_CTL) && (b->exit_ctls & EXIT_CLEAR_RTIT_CTL);

	if (!u->probed) {
		u->probed = true;
		pt_caps_read(&u->caps, NULL);
		if (!u->caps.usable)
			log_err("trace: cpu %u: no usable Intel PT: %s", b->index,
				u->caps.reason ? u->caps.reason : "?");
		else
			log_info("trace: cpu %u: Intel PT, ToPA %s, %u address ranges, CR3 filter %s, PT area at %#llx: output %u x %llu KiB (pt_topa_kb), stream ring %llu KiB (pt_buffer_kb)",
				 b->index, u->caps.topa_multi ? "multi-entry" : "single-entry",
				 u->caps.addr_ranges, u->caps.cr3_filter ? "yes" : "no",
				 (unsigned long long)b->hidden_pa,
				 u->caps.topa_multi ? u->lay.regions : 1u,
				 (unsigned long long)(u->lay.region_bytes >> 10),
				 (unsigned long long)(u->lay.ring_bytes >> 10));
		if (!b->hidden_mem)
			log_err("trace: cpu %u: no PT area reserved", b->index);
		if (!ctls)
			log_err("trace: cpu %u: the VMCS does not load and clear IA32_RTIT_CTL (entry %#x, exit %#x)",
				b->index, b->entry_ctls, b->exit_ctls);
	}
	return u->caps.usable && b->hidden_mem && ctls;
}

/*
 * Which ToPA entry raises the PMI.  Without pmi none (the regions are
 * drained at exits and by the drain tick; STOP on the last).  With pmi
 * the one that ends at 3/4 of the output (pt_area_layout: the third of
 * 4), so the PMI comes while a quarter is still free for the packets
 * generated until it arrives (it is not precise, SDM 3C "ToPA PMI");
 * region 0 with a single-entry ToPA.
 */
static uint32_t pt_int_entry(const struct trace_bcpu *b, uint32_t n)
{
	if (!b->setup->pmi)
		return PT_TOPA_NO_INT;
	const struct pt_unit *u = b->priv;

	return n == u->lay.regions ? u->lay.int_entry : 0;
}

/*
 * A window: the ToPA table (once per CPU: the stream offset runs on over
 * windows), then the RTIT MSRs for this window's filter; PSB+ at the
 * first entry, so the stream can be decoded from here.  0, or
 * TRACE_ENOSYS with the reason logged.
 */
static int pt_open(struct trace_bcpu *b, struct trace_view *v)
{
	struct pt_unit *u = pt_unit(b);
	const struct pt_area_layout *l = &u->lay;
	struct pt_region reg[PT_TOPA_MAX_REGIONS];
	struct pt_options o;
	struct pt_rtit rtit;
	uint32_t n = u->caps.topa_multi ? l->regions : 1;
	char why[160];
	int rc;

	(void)v;
	if (!u->pt.built) {
		for (uint32_t i = 0; i < n; i++) {
			reg[i].pa = b->hidden_pa + (uint64_t)i * l->region_bytes;
			reg[i].va = b->hidden_mem + (size_t)i * l->region_bytes;
			reg[i].size = l->region_bytes;
		}
		rc = pt_topa_build(&u->pt, &u->caps, (uint64_t *)(void *)(b->hidden_mem + l->table_off),
				   4096 / 8, b->hidden_pa + l->table_off, reg, n, PT_MODE_STOP,
				   pt_int_entry(b, n));
		if (rc) {
			log_err("trace: cpu %u: pt window not opened: ToPA: %s", b->index,
				pt_strerror(rc));
			return TRACE_ENOSYS;
		}
	}
	pt_options_default(&o);
	o.filter = *b->filter;
	o.tsc_en = b->setup->pt.tsc;
	o.dis_retc = b->setup->pt.dis_retc;
	o.mtc_en = b->setup->pt.mtc;
	o.mtc_freq = b->setup->pt.mtc_freq;
	o.cyc_en = b->setup->pt.cyc;
	o.cyc_thresh = b->setup->pt.cyc_thresh;
	o.psb_freq = b->setup->pt.psb_freq;
	rc = pt_rtit_ctl(&u->caps, &o, &rtit, why, sizeof(why));
	if (!rc)
		rc = pt_arm(&u->pt, &rtit, &u->guest_ctl);
	if (rc) {
		log_err("trace: cpu %u: pt window not opened: %s%s%s", b->index, pt_strerror(rc),
			why[0] && rc != PT_ERR_BUSY ? ": " : "", rc != PT_ERR_BUSY ? why : "");
		return TRACE_ENOSYS;
	}
	memset(&u->pt.stats, 0, sizeof(u->pt.stats));
	if (b->setup->stop_after && b->windows == 0)
		log_warn("trace: cpu %u: stop_after does not apply to pt (the hypervisor does not decode PT)",
			 b->index);
	return 0;
}

/* A pt_drain (or pt_on_pmi) error: counted, logged (TraceEn in root once). */
static void pt_drain_failed(struct trace_bcpu *b, int rc)
{
	struct pt_unit *u = pt_unit(b);

	u->drain_errors++;
	if (rc == PT_ERR_BUSY) {
		if (!u->busy_logged)
			log_err("trace: cpu %u: IA32_RTIT_CTL.TraceEn set in VMX root: nothing drained",
				b->index);
		u->busy_logged = true;
	} else {
		log_warn("trace: cpu %u: pt drain: %s (gap counted)", b->index, pt_strerror(rc));
	}
}

/*
 * The drains' sink: the byte ring, and under overflow = wait the CPU
 * waits in VMX root for the exporter to free room for what does not fit
 * (trace_stall_bytes) instead of refusing it.  What is refused all the
 * same (no exporter, the receiver given up) is counted by pt_drain as a
 * gap (pt_lost in the next PT_SYNC).
 */
struct pt_wait_sink {
	struct trace_bcpu *b;
	struct byte_ring *ring;
};

static size_t pt_sink_write(void *ctx, const uint8_t *data, size_t len)
{
	struct pt_wait_sink *w = ctx;
	size_t done = byte_ring_write(w->ring, data, len);

	while (done < len) {
		size_t want = len - done;

		if (want > w->ring->size)
			want = (size_t)w->ring->size;
		if (!trace_stall_bytes(w->b, w->ring, want))
			break;
		done += byte_ring_write(w->ring, data + done, len - done);
	}
	return done;
}

/*
 * Move what the hardware wrote since the last exit into the byte ring
 * (VMX root: the exit cleared TraceEn).  Returns true when the byte ring
 * or the record ring refused something (under overflow = stop the window
 * closes, TV_TRIG_FULL; otherwise it goes on); the loss is counted in
 * the stream already.
 */
static bool pt_drain_now(struct trace_bcpu *b)
{
	struct pt_unit *u = pt_unit(b);
	struct pt_wait_sink ws = { b, &u->ring };
	struct pt_sink sink = { pt_sink_write, &ws };
	uint64_t refused = u->pt.stats.sink_dropped + u->pt.stats.syncs_dropped;
	int rc = pt_drain(&u->pt, &sink, b->ring, hw_rdtsc());

	if (rc)
		pt_drain_failed(b, rc);
	return u->pt.stats.sink_dropped + u->pt.stats.syncs_dropped != refused;
}

/*
 * GUEST_IA32_RTIT_CTL holds ctl|TraceEn while a window is open, else 0.
 * Written only when that changes: an exit that saves the MSR into the
 * field saves what the entry loaded (the guest's RTIT_CTL writes are
 * shadowed, docs/TRACE-MSR-POLICY.md), so the field still holds vmcs_ctl.
 */
static void pt_set_ctl(struct trace_bcpu *b, struct trace_view *v)
{
	struct pt_unit *u = pt_unit(b);
	uint64_t want = b->active ? u->guest_ctl : 0;

	if ((b->entry_ctls & ENTRY_LOAD_RTIT_CTL) && want != u->vmcs_ctl) {
		trace_view_set(v, TRACE_VIEW_RTIT_CTL, want);
		u->vmcs_ctl = want;
	}
}

static void pt_close(struct trace_bcpu *b, struct trace_view *v)
{
	/* The bytes since the last exit, before the STOP record. */
	pt_drain_now(b);
	pt_set_ctl(b, v);         /* TraceEn off from the next entry on */
}

/* Every exit of a window drains: the regions are free again. */
static uint32_t pt_exit_drain(struct trace_bcpu *b, struct trace_view *v)
{
	(void)v;
	return pt_drain_now(b) ? TRACE_DO_STOP_FULL : 0;
}

static uint32_t pt_prepare(struct trace_bcpu *b, struct trace_view *v)
{
	struct pt_unit *u = pt_unit(b);
	uint32_t r = 0;

	if (u->pt.pmi_taken) {
		/* the drain consumed Trace_ToPA_PMI: its NMI is ours */
		u->pt.pmi_taken = false;
		r = TRACE_DO_PMI_SEEN;
	}
	pt_set_ctl(b, v);
	return r;
}

static uint32_t pt_pmi_check(struct trace_bcpu *b, struct trace_view *v, uint64_t *guest)
{
	struct pt_unit *u = pt_unit(b);
	struct pt_wait_sink ws = { b, &u->ring };
	struct pt_sink sink = { pt_sink_write, &ws };
	uint64_t refused = u->pt.stats.sink_dropped + u->pt.stats.syncs_dropped;
	int rc = pt_on_pmi(&u->pt, &sink, b->ring, hw_rdtsc(), guest);
	uint32_t r = 0;

	(void)v;
	if (rc == PT_PMI_OURS || (rc < 0 && rc != PT_ERR_INVAL))
		r |= TRACE_DO_PMI_OURS;
	if (rc < 0)
		pt_drain_failed(b, rc);
	*guest &= TRACE_PMI_GUEST_STATUS;
	if (u->pt.stats.sink_dropped + u->pt.stats.syncs_dropped != refused)
		r |= TRACE_DO_STOP_FULL;
	return r;
}

static void pt_log_stop(struct trace_bcpu *b, const char *trig)
{
	struct pt_unit *u = pt_unit(b);

	log_info("trace: cpu %u: window %llu stopped (%s): %llu PT bytes (stream at %llu), %llu drains, %llu stops, %llu errors, %llu bad pointers, %llu bytes refused, %llu drain failures, PT lost %llu; ring lost %llu records",
		 b->index, (unsigned long long)b->windows, trig,
		 (unsigned long long)u->pt.stats.bytes,
		 (unsigned long long)u->pt.stream_bytes,
		 (unsigned long long)u->pt.stats.drains,
		 (unsigned long long)u->pt.stats.stops,
		 (unsigned long long)u->pt.stats.errors,
		 (unsigned long long)u->pt.stats.bad_pointers,
		 (unsigned long long)u->pt.stats.sink_dropped,
		 (unsigned long long)u->drain_errors,
		 (unsigned long long)u->pt.lost,
		 (unsigned long long)b->ring->lost_records);
}

/* The machine can (trace_caps, decoded at boot from the boot CPU). */
static bool pt_caps_ok(const struct trace_caps *tc)
{
	return tc->pt;
}

const struct trace_backend trace_backend_PT = {
	.name = "pt",
	.source = TV_SOURCE_PT,
	.state_bytes = sizeof(struct pt_unit),
	.msr_owned = TRACE_OWN_PT,
	/* TraceEn loaded on entry, cleared on exit: PT runs in VMX non-root only */
	.entry_ctls_traced = ENTRY_LOAD_RTIT_CTL,
	.exit_ctls_traced = EXIT_CLEAR_RTIT_CTL,
	.drain_tick = true,
	.mem = pt_mem,
	.area = pt_area,
	.caps_ok = pt_caps_ok,
	.usable = pt_usable,
	.open = pt_open,
	.close = pt_close,
	.drain = pt_exit_drain,
	.prepare = pt_prepare,
	.pmi_check = pt_pmi_check,
	.log_stop = pt_log_stop,
	.stream = pt_stream,
};
