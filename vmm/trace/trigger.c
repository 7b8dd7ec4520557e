/* SPDX-License-Identifier: MIT */
/*
 * trigger.c - what opens a window other than a hypercall or a request:
 * the boot trigger (start = boot: at the CPU's first entry), the
 * ExitBootServices event (start = exit_boot_services), the address
 * trigger (start = address: an execute-disabled EPT page) and
 * kernel_entry (the loader's return from ExitBootServices trapped, then
 * stepped with MTF out of its image).  See engine.h.
 */
#include <string.h>

#include "vmm/exit/exit.h"
#include "vmm/exit/exit_ept.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/lib/pe_debug.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/memwatch.h"
#include "vmm/vmx/ept.h"

/* The address trigger: armed while its page is not executable. */
static struct ept *trig_ept;
static struct page_pool *trig_pool;
static bool trig_armed;
static unsigned trig_memtype;
static uint64_t trig_addr;        /* the armed address: start_addr, or the EBS return */
/* kernel_entry: the OS loader's image, which the kernel's entry leaves */
static uint64_t kentry_lo, kentry_hi;
static bool kentry_return;        /* the trap is the loader's return from ExitBootServices */
static int kentry_arm(struct per_cpu *cpu);

void trace_trigger_reset(void)
{
	trig_ept = NULL;
	trig_pool = NULL;
	trig_armed = false;
	trig_addr = 0;
	kentry_lo = kentry_hi = 0;
	kentry_return = false;
}

/*
 * A boot event from tracevisor's own hook in the firmware (boot/ebs_hook.c):
 * the window opens here when trace_start names the event.  Any CPL 0 code
 * could make the call; the worst it can do is open a window early, which
 * TV_HC_TRACE_START allows anyway.
 */
int trace_event_ebs(struct per_cpu *cpu)
{
	struct gmem_ctx g;
	uint64_t ret = 0;

	/* The thunk pushed RBX: the loader's return address is at RSP+8. */
	trace_guest_mem(&g);
	if (trace_guest_fetch(&g, trace_guest_rsp() + 8, (uint8_t *)&ret, 8) != 8)
		ret = 0;
	log_info("trace: cpu %u: ExitBootServices called at %#llx, returns to %#llx", cpu->index,
		 (unsigned long long)trace_guest_ip(), (unsigned long long)ret);
	if (trace_cfg.start == TV_TRIG_KERNEL_ENTRY)
		return kentry_arm(cpu) ? TRACE_ENOSYS : TRACE_EOK;
	if (trace_cfg.start != TV_TRIG_EXIT_BOOT_SERVICES)
		return TRACE_EOK;
	return trace_start(cpu, TV_TRIG_EXIT_BOOT_SERVICES);
}

/*
 * Under ept_edit_lock: give the trigger page these rights and, in VMX
 * root, flush this CPU's EPT translations (single context, SDM 3C
 * 29.4.3.1).  At arming time no CPU has used the EPT yet and INVEPT would
 * be #UD outside VMX operation.
 */
static int trig_set_rights(unsigned rwx, bool flush)
{
	uint64_t page = trig_addr & ~0xfffull;
	int rc = ept_map_4k(trig_ept, trig_pool, page, page, rwx, trig_memtype);

	if (!rc && flush)
		hw_invept(1, trig_ept->eptp);
	return rc;
}

int trace_trigger_arm(struct ept *ept, struct page_pool *pool)
{
	struct ept_leaf leaf;
	int rc;

	/* Memory watches first (vmm/trace/memwatch.h): the same EPT, at the same time. */
	(void)memwatch_arm(ept, pool, &trace_cfg);
	if (trace_cfg.source == TV_SOURCE_NONE)
		return 0;
	if (trace_cfg.start == TV_TRIG_KERNEL_ENTRY) {
		/* armed later, at the ExitBootServices event (kentry_arm) */
		trig_ept = ept;
		trig_pool = pool;
		log_info("trace: window opens at the kernel's entry: the first instruction outside the OS loader's image after ExitBootServices returns");
		return 0;
	}
	if (trace_cfg.start != TV_TRIG_ADDRESS)
		return 0;
	trig_addr = trace_cfg.start_addr;
	rc = ept_lookup(ept, trace_cfg.start_addr & ~0xfffull, &leaf);
	if (rc || !(leaf.rwx & EPT_X)) {
		log_err("trace: start address %#llx is not guest memory tracevisor can trap: trigger not armed",
			(unsigned long long)trace_cfg.start_addr);
		return rc ? rc : EPT_ERR_RANGE;
	}
	trig_memtype = leaf.memtype;
	trig_ept = ept;
	trig_pool = pool;
	ept_edit_lock();
	rc = trig_set_rights(EPT_R | EPT_W, false);
	if (!rc)
		__atomic_store_n(&trig_armed, true, __ATOMIC_RELEASE);
	ept_edit_unlock();
	if (rc)
		log_err("trace: cannot arm the start address %#llx: %s",
			(unsigned long long)trace_cfg.start_addr, ept_strerror(rc));
	else
		log_info("trace: window opens when a CPU executes guest-physical %#llx",
			 (unsigned long long)trace_cfg.start_addr);
	return rc;
}

bool trace_trigger_fetch(struct per_cpu *cpu, uint64_t gpa, uint64_t guest_rax)
{
	bool hit;

	/* Once armed, the page stays ours: a late fault is a stale TLB entry. */
	if (!trig_ept || !trig_addr || (gpa & ~0xfffull) != (trig_addr & ~0xfffull))
		return false;
	ept_edit_lock();
	if (!trig_armed) {
		/* Another CPU disarmed it: only this CPU's TLB is stale. */
		hw_invept(1, trig_ept->eptp);
		ept_edit_unlock();
		return true;
	}
	hit = gpa == trig_addr;
	if (trig_set_rights(EPT_RWX, true)) {
		ept_edit_unlock();
		log_err("trace: cpu %u: cannot restore execute on %#llx", cpu->index,
			(unsigned long long)gpa);
		return false;
	}
	if (hit)
		__atomic_store_n(&trig_armed, false, __ATOMIC_RELEASE);
	ept_edit_unlock();
	if (hit && kentry_return && guest_rax) {
		/*
		 * It failed (an EFI status, e.g. a stale map key): the loader
		 * gets the map again and calls it again, which arms anew.
		 */
		log_info("trace: cpu %u: ExitBootServices returned %#llx (failed): waiting for the next call",
			 cpu->index, (unsigned long long)guest_rax);
		trig_addr = 0;
		kentry_return = false;
		return true;
	}
	if (hit && kentry_return) {
		/* ExitBootServices returned: step until the loader's image is left */
		log_info("trace: cpu %u: ExitBootServices returned to %#llx: stepping to the kernel's entry",
			 cpu->index, (unsigned long long)gpa);
		if (!cpu->trace)
			return true;   /* not traced: nothing to step for (no window can open) */
		cpu->trace->kentry_step = true;
		cpu->trace->kentry_steps = 0;
		if (!trace_mtf_window(cpu->trace))
			trace_set_mtf(cpu, true);
		return true;
	}
	if (hit) {
		if (trace_start(cpu, TV_TRIG_ADDRESS) != TRACE_EOK)
			log_warn("trace: cpu %u: start address reached, window could not open",
				 cpu->index);
		return true;
	}
	/*
	 * Another instruction in the page: run it alone, then disarm again.
	 * A CPU that does not trace has no state to step with: the page stays
	 * executable (as it did before, when its stepping never ended).
	 */
	if (!cpu->trace)
		return true;
	cpu->trace->trigger_step = true;
	if (!trace_mtf_window(cpu->trace))
		trace_set_mtf(cpu, true);
	return true;
}

/*
 * kernel_entry, at the ExitBootServices event (the thunk's VMCALL, after
 * its push rbx: the loader's return address is at RSP + 8).  The image
 * holding that address is the OS loader: its headers are found below it
 * (MZ at a page boundary, within 64 MiB, whose SizeOfImage covers it).
 * The return address becomes the execute trap; when it is hit,
 * ExitBootServices has returned and the CPU is stepped (MTF) until it
 * executes outside [kentry_lo, kentry_hi): that instruction is the
 * kernel's entry.  Firmware code and the loader run identity-mapped at
 * this point (UEFI 2.x 2.3.4): a return address that is not is refused.
 * 0, or -1 with the reason logged (the window then never opens).
 */
#define KENTRY_SCAN_BYTES (64ull << 20)
#define KENTRY_MAX_STEPS  100000000ull

static int kentry_arm(struct per_cpu *cpu)
{
	struct gmem_ctx g;
	struct gmem_walk w;
	struct ept_leaf leaf;
	uint8_t hdr[1024];
	uint64_t ret = 0, base;
	uint32_t size = 0;
	int rc;

	if (!trig_ept || trig_addr) {
		log_err("trace: cpu %u: kernel_entry: %s", cpu->index,
			trig_addr ? "ExitBootServices called again: the first call's trap stays" :
				    "no EPT to trap with");
		return -1;
	}
	trace_guest_mem(&g);
	if (trace_guest_fetch(&g, trace_guest_rsp() + 8, (uint8_t *)&ret, 8) != 8 ||
	    gmem_walk(&g, ret, &w) || w.gpa != ret) {
		log_err("trace: cpu %u: kernel_entry: the loader's return address %#llx is not identity-mapped memory: no trap",
			cpu->index, (unsigned long long)ret);
		return -1;
	}
	for (base = ret & ~0xfffull; ret - base < KENTRY_SCAN_BYTES && base; base -= 4096) {
		if (trace_guest_fetch(&g, base, hdr, 2) != 2 || hdr[0] != 'M' || hdr[1] != 'Z')
			continue;
		if (trace_guest_fetch(&g, base, hdr, sizeof(hdr)) == sizeof(hdr) &&
		    pe_image_size(hdr, sizeof(hdr), &size) == 0 && ret < base + size)
			break;
		size = 0;
	}
	if (!size) {
		log_err("trace: cpu %u: kernel_entry: no PE image holds the loader's return address %#llx: no trap",
			cpu->index, (unsigned long long)ret);
		return -1;
	}
	rc = ept_lookup(trig_ept, ret & ~0xfffull, &leaf);
	/* Readable guest memory: code snapshots may have taken X already (snap.h). */
	if (rc || !(leaf.rwx & EPT_R)) {
		log_err("trace: cpu %u: kernel_entry: %#llx cannot be trapped", cpu->index,
			(unsigned long long)ret);
		return -1;
	}
	kentry_lo = base;
	kentry_hi = base + size;
	trig_memtype = leaf.memtype;
	trig_addr = ret;
	kentry_return = true;
	ept_edit_lock();
	rc = trig_set_rights(EPT_R | EPT_W, true);
	if (!rc)
		__atomic_store_n(&trig_armed, true, __ATOMIC_RELEASE);
	ept_edit_unlock();
	if (rc) {
		log_err("trace: cpu %u: kernel_entry: cannot trap %#llx: %s", cpu->index,
			(unsigned long long)ret, ept_strerror(rc));
		return -1;
	}
	log_info("trace: cpu %u: kernel_entry: the OS loader's image is %#llx-%#llx, ExitBootServices returns to %#llx",
		 cpu->index, (unsigned long long)kentry_lo, (unsigned long long)kentry_hi - 1,
		 (unsigned long long)ret);
	return 0;
}

/* kernel_entry, before each entry while stepping out of the loader. */
static void kentry_step(struct per_cpu *cpu, struct trace_cpu *t)
{
	uint64_t ip = trace_guest_ip();

	if (ip >= kentry_lo && ip < kentry_hi) {
		if (++t->kentry_steps < KENTRY_MAX_STEPS)
			return;
		log_err("trace: cpu %u: kernel_entry: still in the loader's image after %llu steps: given up",
			cpu->index, (unsigned long long)t->kentry_steps);
		t->kentry_step = false;
		if (!trace_mtf_window(cpu->trace))
			trace_set_mtf(cpu, false);
		return;
	}
	t->kentry_step = false;
	if (!trace_mtf_window(cpu->trace))
		trace_set_mtf(cpu, false);
	log_info("trace: cpu %u: kernel_entry: left the loader's image at %#llx after %llu steps",
		 cpu->index, (unsigned long long)ip, (unsigned long long)t->kentry_steps);
	if (trace_start(cpu, TV_TRIG_KERNEL_ENTRY) != TRACE_EOK)
		log_warn("trace: cpu %u: kernel's entry reached, window could not open", cpu->index);
}

/* After one stepped instruction of the trigger page: execute off again. */
static void trigger_step_done(struct per_cpu *cpu)
{
	cpu->trace->trigger_step = false;
	if (!trace_mtf_window(cpu->trace))
		trace_set_mtf(cpu, false);
	ept_edit_lock();
	if (trig_armed && trig_set_rights(EPT_R | EPT_W, true))
		log_err("trace: cpu %u: cannot re-arm the start address", cpu->index);
	ept_edit_unlock();
}

/*
 * Before every entry of a traced CPU: a trigger step done (the exit after
 * it is not the trigger page's own EPT violation), kernel_entry stepping,
 * and the boot trigger at the CPU's first entry.
 */
void trace_trigger_before_entry(struct per_cpu *cpu, struct trace_cpu *t, uint32_t exit_reason)
{
	if (t->trigger_step && exit_reason != EXIT_REASON_EPT_VIOLATION)
		trigger_step_done(cpu);
	if (t->kentry_step && exit_reason != EXIT_REASON_EPT_VIOLATION)
		kentry_step(cpu, t);
	if (!t->boot_started) {
		t->boot_started = true;
		if (trace_cfg.start == TV_TRIG_BOOT && trace_start(cpu, TV_TRIG_BOOT) != TRACE_EOK)
			log_warn("trace: cpu %u: could not start at boot", cpu->index);
	}
}
