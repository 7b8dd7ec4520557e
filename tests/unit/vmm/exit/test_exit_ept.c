/* SPDX-License-Identifier: MIT */
/*
 * test_exit_ept.c - EPT violations (vmm/exit/exit_ept.c): hidden pages go to
 * the scratch page for every kind of access, unmapped addresses get an
 * identity UC page, and a violation the tables already allow stops the
 * CPU instead of repeating for ever.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/vmx/ept.h"
#include "vmm/exit/exit.h"
#include "vmm/exit/exit_ept.h"
#include "vmm/hv.h"
#include "vmm/lib/log.h"
#include "vmm/vmx/mtrr.h"
#include "vmm/lib/page_pool.h"
#include "vmm/exit/hypercall.h"
#include "vmm/trace/cpu.h"
#include "vmm/trace/engine.h"
#include "vmm/vmx/vmx_caps.h"

#define GiB (1ull << 30)
#define POOL_PA 0x70000000ull
#define POOL_PAGES 64
#define HIDDEN 0x7ee00000ull
#define SCRATCH 0x7ee10000ull

static struct per_cpu cpu;
static struct guest_regs regs;
static void *pool_mem;
static struct page_pool pool;
static struct mtrr_state mtrr;
static struct ept ept;
static struct ept_range hidden[1];
static char logbuf[16 * 1024];
static size_t loglen;

static void capture(void *ctx, const char *text, size_t len)
{
	(void)ctx;
	if (len > sizeof(logbuf) - 1 - loglen)
		len = sizeof(logbuf) - 1 - loglen;
	memcpy(logbuf + loglen, text, len);
	loglen += len;
	logbuf[loglen] = 0;
}

static int setup(void **state)
{
	struct ept_params p;
	struct hv_boot_info bi;

	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	log_add_sink(capture, NULL);
	loglen = 0;
	logbuf[0] = 0;
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	memset(&cpu, 0, sizeof(cpu));
	cpu.index = 0;
	assert_int_equal(posix_memalign(&pool_mem, 4096, POOL_PAGES * 4096), 0);
	assert_int_equal(page_pool_init_at(&pool, pool_mem, POOL_PA, POOL_PAGES * 4096), 0);
	memset(&mtrr, 0, sizeof(mtrr));   /* no MTRRs: everything UC */
	hidden[0].base = HIDDEN;
	hidden[0].size = 0x3000;
	memset(&p, 0, sizeof(p));
	p.top = 4 * GiB;
	p.allow_1g = p.allow_2m = true;
	p.ept_vpid_cap = EPT_CAP_PWL4 | EPT_CAP_MEMTYPE_UC | EPT_CAP_MEMTYPE_WB |
			 EPT_CAP_PDE_2MB | EPT_CAP_PDPTE_1GB | EPT_CAP_INVEPT;
	p.mtrr = &mtrr;
	p.hidden = hidden;
	p.nhidden = 1;
	memset(&ept, 0, sizeof(ept));
	assert_int_equal(ept_build(&ept, &pool, &p), 0);
	memset(&bi, 0, sizeof(bi));
	bi.ept = &ept;
	bi.pool = &pool;
	bi.scratch_pa = SCRATCH;
	bi.hidden[0] = hidden[0];
	bi.nhidden = 1;
	bi.log_level = LOG_INFO;
	hv_init(&bi);
	log_clear_sinks();               /* hv_init adds no serial: port 0 */
	log_add_sink(capture, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(pool_mem);
	return 0;
}

static enum exit_action violation(uint64_t gpa, uint64_t qual)
{
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_EPT_VIOLATION);
	hw_fake_vmcs_set(VMCS_EXIT_QUALIFICATION, qual);
	hw_fake_vmcs_set(VMCS_GUEST_PHYSICAL_ADDRESS, gpa);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x401000);
	return vmx_exit_dispatch(&cpu, &regs);
}

static void test_hidden_fetch_lands_on_scratch_rwx(void **state)
{
	struct ept_leaf l;

	(void)state;
	assert_int_equal(ept_lookup(&ept, HIDDEN + 0x1234, &l), 0);
	assert_int_equal(l.rwx, 0);
	/* an instruction fetch (qualification bit 2) from a hidden page */
	assert_int_equal(violation(HIDDEN + 0x1234, 1u << 2), EXIT_RESUME);
	assert_int_equal(ept_lookup(&ept, HIDDEN + 0x1234, &l), 0);
	assert_int_equal(l.hpa, SCRATCH + 0x234);
	assert_int_equal(l.rwx, EPT_RWX);   /* the retried fetch succeeds */
	assert_int_equal(cpu.stats.hidden_memory_accesses, 1);
	if (!strstr(logbuf, "fetch from hidden (tracevisor) page 0x7ee01000"))
		fail_msg("log: %s", logbuf);
	/* the other hidden pages stay hidden */
	assert_int_equal(ept_lookup(&ept, HIDDEN + 0x2000, &l), 0);
	assert_int_equal(l.rwx, 0);
}

static void test_hidden_write_then_read(void **state)
{
	struct ept_leaf l;

	(void)state;
	assert_int_equal(violation(HIDDEN, 1u << 1), EXIT_RESUME);
	assert_int_equal(violation(HIDDEN + 0x2008, 1u << 0), EXIT_RESUME);
	assert_int_equal(ept_lookup(&ept, HIDDEN + 0x2008, &l), 0);
	assert_int_equal(l.hpa, SCRATCH + 8);
	assert_int_equal(cpu.stats.hidden_memory_accesses, 2);
}

/*
 * The guest was receiving an event when it touched a hidden page (say its
 * stack frame went there): the exit came during delivery, and the event
 * must be delivered again on the next entry, or it is lost.
 */
static void test_event_reinjected_after_exit_during_delivery(void **state)
{
	const uint64_t pf = INTR_INFO_VALID | INTR_INFO_DELIVER_ERROR |
			    (INTR_TYPE_HW_EXCEPTION << INTR_INFO_TYPE_SHIFT) | 14;

	(void)state;
	/* an external interrupt, vector 0x30 */
	hw_fake_vmcs_set(VMCS_IDT_VECTORING_INFO, INTR_INFO_VALID | 0x30);
	hw_fake_vmcs_set(VMCS_ENTRY_INTR_INFO, 0);
	assert_int_equal(violation(HIDDEN, 1u << 1), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_INTR_INFO), INTR_INFO_VALID | 0x30);
	/* #PF with its error code; bit 12 (undefined in the vectoring field)
	 * is not copied into the entry field, where it is reserved */
	hw_fake_vmcs_set(VMCS_IDT_VECTORING_INFO, pf | (1u << 12));
	hw_fake_vmcs_set(VMCS_IDT_VECTORING_ERROR_CODE, 2);
	hw_fake_vmcs_set(VMCS_ENTRY_INTR_INFO, 0);
	assert_int_equal(violation(HIDDEN + 0x1000, 1u << 1), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_INTR_INFO), pf);
	assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_EXCEPTION_ERROR_CODE), 2);
	/* INT 0x80 (2 bytes): a software interrupt needs its length */
	hw_fake_vmcs_set(VMCS_IDT_VECTORING_INFO,
			 INTR_INFO_VALID | (INTR_TYPE_SW_INTERRUPT << INTR_INFO_TYPE_SHIFT) | 0x80);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 2);
	hw_fake_vmcs_set(VMCS_ENTRY_INTR_INFO, 0);
	hw_fake_vmcs_set(VMCS_ENTRY_INSTRUCTION_LEN, 0);
	assert_int_equal(violation(HIDDEN + 0x2000, 1u << 1), EXIT_RESUME);
	assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_INTR_INFO),
			 INTR_INFO_VALID | (INTR_TYPE_SW_INTERRUPT << INTR_INFO_TYPE_SHIFT) | 0x80);
	assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_INSTRUCTION_LEN), 2);
	assert_int_equal(cpu.stats.reinjected, 3);
	/* not during delivery (valid bit clear): nothing is injected */
	hw_fake_vmcs_set(VMCS_IDT_VECTORING_INFO, 0x30);
	hw_fake_vmcs_set(VMCS_ENTRY_INTR_INFO, 0);
	assert_int_equal(violation(0x100000, 1u << 0), EXIT_RESUME);   /* unmapped: identity */
	assert_int_equal(hw_fake_vmcs_get(VMCS_ENTRY_INTR_INFO), 0);
	assert_int_equal(cpu.stats.reinjected, 3);
}

static void test_unmapped_gets_identity_uc(void **state)
{
	struct ept_leaf l;

	(void)state;
	assert_int_equal(violation(6 * GiB + 0x5000, 1u << 0), EXIT_RESUME);
	assert_int_equal(ept_lookup(&ept, 6 * GiB + 0x5010, &l), 0);
	assert_int_equal(l.hpa, 6 * GiB + 0x5010);
	assert_int_equal(l.memtype, MTRR_TYPE_UC);
	assert_int_equal(cpu.stats.hidden_memory_accesses, 0);
	assert_non_null(strstr(logbuf, "identity-mapped UC"));
}

static void test_denied_access_on_present_leaf_stops(void **state)
{
	(void)state;
	/* a present leaf that denies the access: remapping cannot help */
	assert_int_equal(ept_map_4k(&ept, &pool, 0x9000, 0x9000, EPT_R, MTRR_TYPE_UC), 0);
	assert_int_equal(violation(0x9000, 1u << 1), EXIT_STOP_CPU);
	assert_non_null(strstr(logbuf, "it would repeat for ever"));
}

static void test_stale_tlb_on_mapped_page_resumes(void **state)
{
	struct ept_leaf l;

	(void)state;
	/* another CPU mapped the hidden page already: only INVEPT is needed */
	assert_int_equal(violation(HIDDEN, 1u << 0), EXIT_RESUME);
	assert_int_equal(violation(HIDDEN, 1u << 0 | 1u << 1), EXIT_RESUME);
	assert_int_equal(ept_lookup(&ept, HIDDEN, &l), 0);
	assert_int_equal(l.hpa, SCRATCH);
	assert_int_equal(cpu.stats.hidden_memory_accesses, 2);
}

/* --- the tracer's address trigger (vmm/trace/engine.c) ------------------- */

#define TRIGGER 0x1000040ull
static uint64_t trig_ring[(TRACE_CPU_STATE_BYTES + 4096 + 8192) / 8] __attribute__((aligned(64)));

/* source = mtf with trigger start (at addr), guest memory through reader. */
static void arm_start(uint8_t start, uint64_t addr, gmem_read_phys_fn reader)
{
	struct trace_setup ts;

	memset(&ts, 0, sizeof(ts));
	ts.source = TV_SOURCE_MTF;
	ts.overflow = TV_OVERFLOW_STOP;
	ts.start = start;
	ts.start_addr = addr;
	trace_filter_all(&ts.filter);
	trace_engine_init(&ts, reader, NULL, NULL);
	cpu.caps.proc = (uint64_t)CPU_MONITOR_TRAP_FLAG << 32;
	assert_int_equal(trace_cpu_init(&cpu, trig_ring, sizeof(trig_ring), 0, 0,
					TV_SOURCE_MTF, TV_OVERFLOW_STOP, 0, 0), 0);
	assert_int_equal(trace_trigger_arm(&ept, &pool), 0);
}

static void arm_trigger(void)
{
	arm_start(TV_TRIG_ADDRESS, TRIGGER, NULL);
}

static unsigned rights(uint64_t gpa)
{
	struct ept_leaf l;

	assert_int_equal(ept_lookup(&ept, gpa, &l), 0);
	return l.rwx;
}

static void test_address_trigger(void **state)
{
	(void)state;
	arm_trigger();
	assert_int_equal(rights(TRIGGER), EPT_R | EPT_W);
	assert_int_equal(rights(TRIGGER + 0x1000), EPT_RWX);   /* only that page */
	assert_int_equal(rights(TRIGGER - 0x1000), EPT_RWX);

	/* Another instruction of the page: stepped with execute allowed. */
	assert_int_equal(violation(TRIGGER + 0x100, 1u << 2), EXIT_RESUME);
	assert_int_equal(rights(TRIGGER), EPT_RWX);
	assert_true(cpu.trace->trigger_step);
	assert_true(hw_fake_vmcs_get(VMCS_PROC_BASED_CTLS) & CPU_MONITOR_TRAP_FLAG);
	assert_false(cpu.trace->b.active);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));            /* same exit: still stepping */
	assert_true(cpu.trace->trigger_step);
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_MONITOR_TRAP_FLAG);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));            /* one instruction later */
	assert_false(cpu.trace->trigger_step);
	assert_false(hw_fake_vmcs_get(VMCS_PROC_BASED_CTLS) & CPU_MONITOR_TRAP_FLAG);
	assert_int_equal(rights(TRIGGER), EPT_R | EPT_W);

	/* A data access is not ours (the page is readable): nothing changes. */
	assert_false(trace_trigger_fetch(&cpu, TRIGGER + 0x2000, 0));

	/* The address itself: the window opens, execute comes back for good. */
	hw_fake_vmcs_set(VMCS_GUEST_CS_BASE, 0);
	assert_int_equal(violation(TRIGGER, 1u << 2), EXIT_RESUME);
	assert_true(cpu.trace->b.active);
	assert_int_equal(rights(TRIGGER), EPT_RWX);
	assert_true(hw_fake_vmcs_get(VMCS_PROC_BASED_CTLS) & CPU_MONITOR_TRAP_FLAG);
	/* A stale TLB entry elsewhere faults once more: flushed, resumed. */
	assert_int_equal(violation(TRIGGER + 8, 1u << 2), EXIT_RESUME);
	assert_int_equal(rights(TRIGGER), EPT_RWX);
	assert_int_equal(cpu.trace->b.windows, 1);
	assert_int_equal(trace_stop(&cpu, TV_TRIG_HYPERCALL), TV_HC_OK);
}

/*
 * A CPU that does not trace (trace_cpus leaves it out: no trace state)
 * fetching in the trigger page: execute comes back, it is not stepped
 * (nothing to step with) and no window can open at the address.
 */
static void test_address_trigger_untraced_cpu(void **state)
{
	(void)state;
	arm_trigger();
	cpu.trace = NULL;
	assert_int_equal(violation(TRIGGER + 0x100, 1u << 2), EXIT_RESUME);
	assert_int_equal(rights(TRIGGER), EPT_RWX);
	assert_false(hw_fake_vmcs_get(VMCS_PROC_BASED_CTLS) & CPU_MONITOR_TRAP_FLAG);
	arm_trigger();
	cpu.trace = NULL;
	assert_int_equal(violation(TRIGGER, 1u << 2), EXIT_RESUME);
	assert_int_equal(rights(TRIGGER), EPT_RWX);
	assert_false(trace_cpu_active(&cpu));
	assert_non_null(strstr(logbuf, "start address reached, window could not open"));
}

static void test_address_trigger_refuses_hidden(void **state)
{
	struct trace_setup ts;

	(void)state;
	memset(&ts, 0, sizeof(ts));
	ts.source = TV_SOURCE_MTF;
	ts.start = TV_TRIG_ADDRESS;
	ts.start_addr = HIDDEN + 0x10;
	trace_engine_init(&ts, NULL, NULL, NULL);
	assert_true(trace_trigger_arm(&ept, &pool) < 0);
	if (!strstr(logbuf, "not guest memory tracevisor can trap"))
		fail_msg("log: %s", logbuf);
	assert_false(trace_trigger_fetch(&cpu, HIDDEN + 0x10, 0));
}

/* --- kernel_entry: trapped at the loader's return from ExitBootServices ---------- */

#define KE_IMAGE 0x2000000ull          /* the loader's PE image, 2 MiB */
#define KE_RET   0x2001234ull          /* where ExitBootServices returns */
#define KE_STACK 0x100000ull           /* the thunk's RSP at its VMCALL */
#define KE_ENTRY 0x1000200ull          /* the first instruction outside */

/* Guest-physical memory: the image's headers and the stack; zeros elsewhere. */
static int ke_read(void *opaque, uint64_t gpa, void *buf, size_t len)
{
	static const uint64_t ret = KE_RET;
	uint8_t *b = buf;

	(void)opaque;
	memset(buf, 0, len);
	for (size_t i = 0; i < len; i++) {
		uint64_t a = gpa + i;

		if (a >= KE_IMAGE && a < KE_IMAGE + 0x400) {
			uint64_t o = a - KE_IMAGE;
			static uint8_t hdr[0x400];

			if (!hdr[0]) {
				hdr[0] = 'M';
				hdr[1] = 'Z';
				hdr[0x3c] = 0x80;
				memcpy(hdr + 0x80, "PE\0\0", 4);
				hdr[0x98] = 0x0b;               /* PE32+ magic 0x20b */
				hdr[0x99] = 0x02;
				hdr[0x98 + 56 + 2] = 0x20;      /* SizeOfImage 0x200000 */
			}
			b[i] = hdr[o];
		} else if (a >= KE_STACK + 8 && a < KE_STACK + 16) {
			b[i] = ((const uint8_t *)&ret)[a - KE_STACK - 8];
		}
	}
	return 0;
}

/* The thunk's VMCALL TV_HC_EVENT with RSP = rsp (the return address at rsp + 8). */
static void ke_event_at(uint64_t rsp)
{
	regs.rax = TV_HC_EVENT;
	regs.rbx = TV_HC_EVENT_EXIT_BOOT_SERVICES;
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_VMCALL);
	hw_fake_vmcs_set(VMCS_EXIT_INSTRUCTION_LEN, 3);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 0x7f000b);
	hw_fake_vmcs_set(VMCS_GUEST_RSP, rsp);
	hw_fake_vmcs_set(VMCS_GUEST_CR0, 0x11);       /* no paging: linear = physical */
	hw_fake_vmcs_set(VMCS_GUEST_CS_BASE, 0);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
}

static void ke_event(void)
{
	ke_event_at(KE_STACK);
}

static void test_kernel_entry_trigger(void **state)
{
	(void)state;
	arm_start(TV_TRIG_KERNEL_ENTRY, 0, ke_read);
	assert_int_equal(rights(KE_RET), EPT_RWX);              /* nothing until the event */

	ke_event();
	assert_int_equal(regs.rax, TV_HC_OK);
	assert_int_equal(rights(KE_RET), EPT_R | EPT_W);
	assert_int_equal(rights(KE_RET + 0x1000), EPT_RWX);
	assert_non_null(strstr(logbuf, "kernel_entry: the OS loader's image is 0x2000000-0x21fffff, ExitBootServices returns to 0x2001234"));
	assert_false(cpu.trace->b.active);

	/* ExitBootServices fails (a stale map key): no stepping, armed again by the next call */
	regs.rax = 0x8000000000000002ull;                        /* EFI_INVALID_PARAMETER */
	assert_int_equal(violation(KE_RET, 1u << 2), EXIT_RESUME);
	assert_false(cpu.trace->kentry_step);
	assert_int_equal(rights(KE_RET), EPT_RWX);
	assert_non_null(strstr(logbuf, "ExitBootServices returned 0x8000000000000002 (failed): waiting for the next call"));
	ke_event();
	assert_int_equal(regs.rax, TV_HC_OK);
	assert_int_equal(rights(KE_RET), EPT_R | EPT_W);

	/* ExitBootServices returns EFI_SUCCESS: stepping, execute back */
	regs.rax = 0;
	assert_int_equal(violation(KE_RET, 1u << 2), EXIT_RESUME);
	assert_true(cpu.trace->kentry_step);
	assert_int_equal(rights(KE_RET), EPT_RWX);
	assert_true(hw_fake_vmcs_get(VMCS_PROC_BASED_CTLS) & CPU_MONITOR_TRAP_FLAG);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));                                /* the violation's own exit */
	assert_true(cpu.trace->kentry_step);
	hw_fake_vmcs_set(VMCS_EXIT_REASON, EXIT_REASON_MONITOR_TRAP_FLAG);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, KE_RET + 5);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));                                /* still in the loader */
	assert_true(cpu.trace->kentry_step);
	assert_false(cpu.trace->b.active);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, KE_ENTRY);
	trace_before_entry(&cpu, (uint32_t)vmcs_get(VMCS_EXIT_REASON));                                /* left it: the entry */
	assert_false(cpu.trace->kentry_step);
	assert_true(cpu.trace->b.active);
	assert_non_null(strstr(logbuf, "kernel_entry: left the loader's image at 0x1000200 after 1 steps"));
	assert_non_null(strstr(logbuf, "window 1 started (kernel-entry) at 0x1000200"));
	assert_true(hw_fake_vmcs_get(VMCS_PROC_BASED_CTLS) & CPU_MONITOR_TRAP_FLAG);  /* the mtf window */
	/* a second ExitBootServices call: refused, the trap stays the first one's */
	ke_event();
	assert_int_equal((int32_t)regs.rax, TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "ExitBootServices called again"));
	assert_int_equal(trace_stop(&cpu, TV_TRIG_HYPERCALL), TV_HC_OK);
}

/* No PE image around the return address: said, no trap, no window. */
static void test_kernel_entry_no_image(void **state)
{
	(void)state;
	arm_start(TV_TRIG_KERNEL_ENTRY, 0, ke_read);
	ke_event_at(KE_STACK + 0x1000);                        /* return address 0 */
	assert_int_equal((int32_t)regs.rax, TV_HC_ENOSYS);
	assert_non_null(strstr(logbuf, "no PE image holds the loader's return address 0: no trap"));
	assert_false(trace_trigger_fetch(&cpu, 0, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hidden_fetch_lands_on_scratch_rwx, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hidden_write_then_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_event_reinjected_after_exit_during_delivery, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unmapped_gets_identity_uc, setup, teardown),
		cmocka_unit_test_setup_teardown(test_denied_access_on_present_leaf_stops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_tlb_on_mapped_page_resumes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_address_trigger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_address_trigger_untraced_cpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_address_trigger_refuses_hidden, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kernel_entry_trigger, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kernel_entry_no_image, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
