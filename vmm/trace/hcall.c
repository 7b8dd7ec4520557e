/* SPDX-License-Identifier: MIT */
/*
 * hcall.c - the tracing hypercalls (vmm/exit/hypercall.h's hooks): start,
 * stop, marker and the boot event (which also learns the ACPI power-off
 * port, vmm/exit/exit_io.h), onto the engine, with the engine's
 * TRACE_E* codes turned into the guest ABI's TV_HC_* ones here only.
 */
#include "vmm/exit/exit_io.h"
#include "vmm/exit/hypercall.h"
#include "vmm/hw/hw.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/images.h"
#include "vmm/trace/memwatch.h"
#include "vmm/vmx/vcpu.h"

_Static_assert(TRACE_REQ_LABEL_MAX == TV_HC_LABEL_LEN, "marker labels: one length");

/* TRACE_E* -> TV_HC_* (docs/HYPERCALLS.md). */
static int hc_status(int rc)
{
	switch (rc) {
	case TRACE_EOK:
		return TV_HC_OK;
	case TRACE_EBUSY:
		return TV_HC_EBUSY;
	case TRACE_EINVAL:
		return TV_HC_EINVAL;
	default:
		return TV_HC_ENOSYS;
	}
}

static int hc_start(struct per_cpu *cpu, uint64_t flags)
{
	if (flags)
		return TV_HC_EINVAL;
	return hc_status(trace_start(cpu, TV_TRIG_HYPERCALL));
}

static int hc_stop(struct per_cpu *cpu)
{
	return hc_status(trace_stop(cpu, TV_TRIG_HYPERCALL));
}

static int hc_marker(struct per_cpu *cpu, uint64_t id, const char label[TV_HC_LABEL_LEN])
{
	size_t len = 0;

	if (!cpu->trace)
		return TV_HC_ENOSYS;
	while (len < TV_HC_LABEL_LEN && label[len])
		len++;
	/* A dropped marker (STOP policy, ring full) is counted by the ring. */
	trace_append_marker(cpu->trace->b.ring, hw_rdtsc(), id, label, len);
	return TV_HC_OK;
}

static int hc_event(struct per_cpu *cpu, uint64_t event)
{
	if (event != TV_HC_EVENT_EXIT_BOOT_SERVICES)
		return TV_HC_EINVAL;
	/*
	 * The ACPI tables are final now (an OS loader may have installed
	 * them just before): learn the power-off port for the windows' end.
	 */
	(void)io_sleep_learn("ExitBootServices");
	/*
	 * The images loaded since boot (the OS loader, what it loaded) are in
	 * the firmware's table now: their IMAGE records go first, before a
	 * window this event opens (vmm/trace/images.h).
	 */
	(void)trace_images_ebs(cpu);
	return hc_status(trace_event_ebs(cpu));
}

/* TV_HC_MEM_*: memory watches (vmm/trace/memwatch.h); an id in RAX for WATCH. */
static int64_t hc_mem(struct per_cpu *cpu, uint64_t fn, uint64_t a, uint64_t b, uint64_t c,
		      const char label[TV_HC_LABEL_LEN])
{
	int rc;

	switch (fn) {
	case TV_HC_MEM_WATCH:
		rc = memwatch_hc_watch(cpu, a, b, c, label, TV_HC_LABEL_LEN);
		return rc > 0 ? rc : hc_status(rc);
	case TV_HC_MEM_UNWATCH:
		if (!a || a > 0xffffu)
			return TV_HC_EINVAL;
		return hc_status(memwatch_remove(cpu, (uint32_t)a));
	case TV_HC_MEM_LABEL:
		return hc_status(memwatch_hc_label(cpu, a, b, c, label, TV_HC_LABEL_LEN));
	default:
		return TV_HC_EINVAL;
	}
}

static const struct hypercall_hooks hooks = {
	.trace_start = hc_start,
	.trace_stop = hc_stop,
	.marker = hc_marker,
	.event = hc_event,
	.mem = hc_mem,
};

void trace_hcall_register(bool on)
{
	hypercall_set_hooks(on ? &hooks : NULL);
}
