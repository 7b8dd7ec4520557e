/* SPDX-License-Identifier: MIT */
/*
 * test_exit_hypercall.c - VMCALL (vmm/exit/hypercall.c): the privilege check,
 * the ABI of vmm/exit/hypercall.h / docs/HYPERCALLS.md, and the backend hooks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "hw_fake.h"
#include "vmm/exit/exit.h"
#include "vmm/exit/hypercall.h"
#include "vmm/lib/log.h"
#include "vmm/version.h"

/* --- fixture: one 64-bit guest CPU on the fake seam --------------------- */

static struct per_cpu cpu;
static struct guest_regs regs;

#define GUEST_RIP 0xffffffffc0001000ull

/* The fake's API, used only in these wrappers. */
static void vm_set(uint32_t field, uint64_t value) { hw_fake_vmcs_set(field, value); }
static uint64_t vm_get(uint32_t field) { return hw_fake_vmcs_get(field); }

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	hypercall_set_hooks(NULL);
	hypercall_reset_seal();
	/* VMX on with a current VMCS, so that VMREAD/VMWRITE work */
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x20000), 0);
	assert_int_equal(hw_vmptrld(0x10000), 0);
	memset(&cpu, 0, sizeof(cpu));
	memset(&regs, 0, sizeof(regs));
	cpu.index = 2;
	cpu.proc2 = CPU2_ENABLE_EPT | CPU2_UNRESTRICTED_GUEST;
	cpu.entry_ctls = ENTRY_IA32E_MODE_GUEST | ENTRY_LOAD_EFER;
	vm_set(VMCS_ENTRY_CTLS, cpu.entry_ctls);
	vm_set(VMCS_GUEST_CS_AR, 0xa09b);
	vm_set(VMCS_GUEST_SS_AR, 0xc093);
	vm_set(VMCS_GUEST_CR0, 0x80050033);
	vm_set(VMCS_GUEST_RIP, GUEST_RIP);
	vm_set(VMCS_GUEST_RFLAGS, 0x2);
	return 0;
}

static enum exit_action vmcall(uint64_t rax, uint64_t rbx, uint64_t rcx, uint64_t rdx)
{
	regs.rax = rax;
	regs.rbx = rbx;
	regs.rcx = rcx;
	regs.rdx = rdx;
	vm_set(VMCS_EXIT_REASON, EXIT_REASON_VMCALL);
	vm_set(VMCS_EXIT_INSTRUCTION_LEN, 3);
	return vmx_exit_dispatch(&cpu, &regs);
}

/* --- hooks that record their arguments ---------------------------------------- */

static struct {
	int starts, stops, markers, events;
	struct per_cpu *cpu;
	uint64_t flags, id, event;
	char label[TV_HC_LABEL_LEN];
	int ret;
} rec;

static int rec_start(struct per_cpu *c, uint64_t flags)
{
	rec.starts++;
	rec.cpu = c;
	rec.flags = flags;
	return rec.ret;
}

static int rec_stop(struct per_cpu *c)
{
	rec.stops++;
	rec.cpu = c;
	return rec.ret;
}

static int rec_marker(struct per_cpu *c, uint64_t id, const char label[TV_HC_LABEL_LEN])
{
	rec.markers++;
	rec.cpu = c;
	rec.id = id;
	memcpy(rec.label, label, TV_HC_LABEL_LEN);
	return rec.ret;
}

static int rec_event(struct per_cpu *c, uint64_t event)
{
	rec.events++;
	rec.cpu = c;
	rec.event = event;
	return rec.ret;
}

static const struct hypercall_hooks rec_hooks = {
	.trace_start = rec_start,
	.trace_stop = rec_stop,
	.marker = rec_marker,
	.event = rec_event,
};

/* --- tests ------------------------------------------------------------------------ */

static void test_cpl3_gets_ud_and_nothing_else(void **state)
{
	struct guest_regs before;

	(void)state;
	hypercall_set_hooks(&rec_hooks);
	memset(&rec, 0, sizeof(rec));
	vm_set(VMCS_GUEST_SS_AR, 0xc0f3);  /* DPL 3 */
	regs.rsi = 0x5151;
	regs.r11 = 0x246;
	regs.rax = TV_HC_TRACE_START;
	regs.rbx = 1;
	before = regs;
	vm_set(VMCS_EXIT_REASON, EXIT_REASON_VMCALL);
	vm_set(VMCS_EXIT_INSTRUCTION_LEN, 3);
	assert_int_equal(vmx_exit_dispatch(&cpu, &regs), EXIT_RESUME);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0x80000306);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP);
	assert_memory_equal(&regs, &before, sizeof(regs));
	assert_int_equal(rec.starts, 0);
	assert_int_equal(cpu.stats.injected_ud, 1);

	/* CPL 1 as well */
	setup(NULL);
	vm_set(VMCS_GUEST_SS_AR, 0xc0b3);
	vmcall(TV_HC_PROBE, 0, 0, 0);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0x80000306);
	assert_int_equal(regs.rax, TV_HC_PROBE);
}

static void test_probe(void **state)
{
	(void)state;
	regs.rsi = 0x5151;
	assert_int_equal(vmcall(TV_HC_PROBE, 0x1, 0x2, 0x3), EXIT_RESUME);
	assert_int_equal(regs.rax, TV_HC_OK);
	assert_int_equal(regs.rbx, 0x53565254);  /* "TRVS" */
	assert_memory_equal(&regs.rbx, "TRVS", 4);
	assert_int_equal(regs.rcx, TV_HC_ABI_VERSION);
	assert_int_equal(regs.rdx, TV_VERSION_CODE);
	assert_int_equal(regs.rsi, 0x5151);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP + 3);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO), 0);
	assert_int_equal(cpu.stats.by_reason[EXIT_REASON_VMCALL], 1);
}

static void test_no_backend_enosys(void **state)
{
	(void)state;
	vmcall(TV_HC_TRACE_START, 0, 0x77, 0x88);
	assert_int_equal((int64_t)regs.rax, TV_HC_ENOSYS);
	assert_int_equal(regs.rax, 0xffffffffffffffdaull);  /* -38, 64 bits */
	assert_int_equal(regs.rcx, 0x77);                    /* not a result: kept */
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP + 3);
	vmcall(TV_HC_TRACE_STOP, 0, 0, 0);
	assert_int_equal((int64_t)regs.rax, TV_HC_ENOSYS);
	vmcall(TV_HC_MARKER, 5, 0, 0);
	assert_int_equal((int64_t)regs.rax, TV_HC_ENOSYS);
	assert_string_equal(tv_hc_strerror(TV_HC_ENOSYS), "no tracing backend configured");

	/* a backend with only some hooks */
	{
		static const struct hypercall_hooks only_stop = { .trace_stop = rec_stop };

		memset(&rec, 0, sizeof(rec));
		hypercall_set_hooks(&only_stop);
		vmcall(TV_HC_TRACE_START, 0, 0, 0);
		assert_int_equal((int64_t)regs.rax, TV_HC_ENOSYS);
		vmcall(TV_HC_TRACE_STOP, 0, 0, 0);
		assert_int_equal(regs.rax, 0);
		assert_int_equal(rec.stops, 1);
	}
}

static void test_hooks_called_with_arguments(void **state)
{
	(void)state;
	memset(&rec, 0, sizeof(rec));
	hypercall_set_hooks(&rec_hooks);

	vmcall(TV_HC_TRACE_START, 0xf00d, 0, 0);
	assert_int_equal(rec.starts, 1);
	assert_ptr_equal(rec.cpu, &cpu);
	assert_int_equal(rec.flags, 0xf00d);
	assert_int_equal(regs.rax, 0);

	rec.ret = TV_HC_EBUSY;
	vmcall(TV_HC_TRACE_START, 0, 0, 0);
	assert_int_equal((int64_t)regs.rax, TV_HC_EBUSY);
	rec.ret = 0;

	vmcall(TV_HC_TRACE_STOP, 0, 0, 0);
	assert_int_equal(rec.stops, 1);
	assert_int_equal(regs.rax, 0);

	/* label bytes 0-7 from RCX, 8-15 from RDX, little-endian */
	vmcall(TV_HC_MARKER, 0x123456789abcdef0ull, 0x6867666564636261ull, 0x706f6e6d6c6b6a69ull);
	assert_int_equal(rec.markers, 1);
	assert_int_equal(rec.id, 0x123456789abcdef0ull);
	assert_memory_equal(rec.label, "abcdefghijklmnop", 16);
	assert_int_equal(regs.rax, 0);
	assert_int_equal(regs.rbx, 0x123456789abcdef0ull);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP + 4 * 3);
}

/*
 * TV_HC_EVENT (the ExitBootServices thunk): the event in RBX reaches the
 * hook, and RCX/RDX (the firmware call's arguments) are left alone.
 */
static void test_event_keeps_arguments(void **state)
{
	(void)state;
	memset(&rec, 0, sizeof(rec));
	hypercall_set_hooks(&rec_hooks);
	vmcall(TV_HC_EVENT, TV_HC_EVENT_EXIT_BOOT_SERVICES, 0x1111222233334444ull, 0x5555666677778888ull);
	assert_int_equal(rec.events, 1);
	assert_ptr_equal(rec.cpu, &cpu);
	assert_int_equal(rec.event, TV_HC_EVENT_EXIT_BOOT_SERVICES);
	assert_int_equal(regs.rax, 0);
	assert_int_equal(regs.rbx, TV_HC_EVENT_EXIT_BOOT_SERVICES);
	assert_int_equal(regs.rcx, 0x1111222233334444ull);
	assert_int_equal(regs.rdx, 0x5555666677778888ull);
	rec.ret = TV_HC_EINVAL;
	vmcall(TV_HC_EVENT, 77, 0, 0);
	assert_int_equal((int64_t)regs.rax, TV_HC_EINVAL);
	hypercall_set_hooks(NULL);
	vmcall(TV_HC_EVENT, TV_HC_EVENT_EXIT_BOOT_SERVICES, 0, 0);
	assert_int_equal((int64_t)regs.rax, TV_HC_ENOSYS);
}

static void test_unknown_function_einval(void **state)
{
	(void)state;
	hypercall_set_hooks(&rec_hooks);
	vmcall(8, 0, 0, 0);                /* 5..7 are the memory calls since ABI 3 */
	assert_int_equal((int64_t)regs.rax, TV_HC_EINVAL);
	vmcall(TV_HC_MEM_WATCH, 0, 0, 0);  /* a known function no hook serves */
	assert_int_equal((int64_t)regs.rax, TV_HC_ENOSYS);
	vmcall(0x100000000ull, 0, 0, 0);  /* in 64-bit mode all of RAX counts */
	assert_int_equal((int64_t)regs.rax, TV_HC_EINVAL);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), GUEST_RIP + 9);
}

static void test_32bit_caller(void **state)
{
	(void)state;
	memset(&rec, 0, sizeof(rec));
	hypercall_set_hooks(&rec_hooks);
	vm_set(VMCS_ENTRY_CTLS, ENTRY_LOAD_EFER);
	vm_set(VMCS_GUEST_CS_AR, 0xc09b);
	vm_set(VMCS_GUEST_RIP, 0x8000);

	/* upper halves are not the caller's: function 0x1_00000002 is STOP */
	vmcall(0xdead000100000002ull, 0, 0, 0);
	assert_int_equal(rec.stops, 1);
	vmcall(0xffffffff00000001ull, 0xffffffff0000beefull, 0, 0);
	assert_int_equal(rec.flags, 0xbeef);
	vmcall(TV_HC_MARKER, 9, 0xffffffff64636261ull, 0xffffffff6c6b6a69ull);
	assert_memory_equal(rec.label, "abcd\0\0\0\0ijkl\0\0\0\0", 16);

	hypercall_set_hooks(NULL);
	vmcall(TV_HC_TRACE_STOP, 0, 0, 0);
	assert_int_equal(regs.rax, 0xffffffdaull);  /* EAX = -38, zero-extended */
	vmcall(TV_HC_PROBE, 0, 0, 0);
	assert_int_equal(regs.rax, 0);
	assert_int_equal(regs.rbx, TV_HC_PROBE_MAGIC);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), 0x8000 + 5 * 3);
}

static void test_real_mode_caller_is_cpl0(void **state)
{
	(void)state;
	/* after SIPI: real mode, SS.DPL = 0 */
	vm_set(VMCS_ENTRY_CTLS, ENTRY_LOAD_EFER);
	vm_set(VMCS_GUEST_CR0, 0x60000030);
	vm_set(VMCS_GUEST_CS_AR, 0x9b);
	vm_set(VMCS_GUEST_SS_AR, 0x93);
	vm_set(VMCS_GUEST_RIP, 0x100);
	vmcall(TV_HC_PROBE, 0, 0, 0);
	assert_int_equal(regs.rbx, TV_HC_PROBE_MAGIC);
	assert_int_equal(vm_get(VMCS_GUEST_RIP), 0x103);
}

static void test_strerror(void **state)
{
	(void)state;
	assert_string_equal(tv_hc_strerror(TV_HC_OK), "ok");
	assert_string_equal(tv_hc_strerror(TV_HC_EINVAL), "unknown function");
	assert_string_equal(tv_hc_strerror(TV_HC_EBUSY), "busy");
	assert_string_equal(tv_hc_strerror(-1), "unknown status");
}

/* --- boot-time calls: DEVIRT and SEAL ------------------------------------------ */

static void set_firmware_state(void)
{
	vm_set(VMCS_GUEST_CR0, 0x80010033);      /* PG PE WP ET MP NE */
	vm_set(VMCS_CR0_READ_SHADOW, 0x80010033);
	vm_set(VMCS_GUEST_CR3, 0x3fc01000);
	vm_set(VMCS_GUEST_CR4, 0x2668);          /* VMXE OSXMMEXCPT OSFXSR PAE DE */
	vm_set(VMCS_CR4_READ_SHADOW, 0x0668);
	cpu.cr4_mask = CR4_VMXE;
	vm_set(VMCS_GUEST_RSP, 0x3fe8f000);
	vm_set(VMCS_GUEST_RFLAGS, 0x246);
	vm_set(VMCS_GUEST_CS_SELECTOR, 0x38);
	vm_set(VMCS_GUEST_SS_SELECTOR, 0x30);
	vm_set(VMCS_GUEST_DS_SELECTOR, 0x30);
	vm_set(VMCS_GUEST_ES_SELECTOR, 0x30);
	vm_set(VMCS_GUEST_FS_SELECTOR, 0x30);
	vm_set(VMCS_GUEST_GS_SELECTOR, 0x30);
	vm_set(VMCS_GUEST_FS_BASE, 0x1111);
	vm_set(VMCS_GUEST_GS_BASE, 0x2222);
	vm_set(VMCS_GUEST_GDTR_BASE, 0x3f9dc000);
	vm_set(VMCS_GUEST_GDTR_LIMIT, 0x47);
	vm_set(VMCS_GUEST_IDTR_BASE, 0x3f4b1018);
	vm_set(VMCS_GUEST_IDTR_LIMIT, 0xfff);
}

static void test_devirt_captures_guest_and_leaves(void **state)
{
	jmp_buf env;
	volatile int why;

	(void)state;
	set_firmware_state();
	regs.rbp = 0xb0b0;
	regs.r15 = 0xf15f15;
	hw_fake_expect_stop(env);
	why = setjmp(env);
	if (why == 0) {
		/* vmx_exit_handler acts on EXIT_DEVIRT: this is the whole path */
		regs.rax = TV_HC_DEVIRT;
		vm_set(VMCS_EXIT_REASON, EXIT_REASON_VMCALL);
		vm_set(VMCS_EXIT_INSTRUCTION_LEN, 3);
		vmx_exit_handler(&cpu, &regs);
		fail_msg("hw_vmx_devirt did not run");
	}
	assert_int_equal(why, HW_FAKE_JUMP_DEVIRT);
	assert_ptr_equal(hw_fake_devirt_frame, &cpu.devirt);
	assert_int_equal(cpu.devirt.gpr[0], TV_HC_OK);    /* RAX: the status */
	assert_int_equal(cpu.devirt.gpr[4], 0x3fe8f000); /* RSP from the VMCS */
	assert_int_equal(cpu.devirt.gpr[5], 0xb0b0);
	assert_int_equal(cpu.devirt.gpr[15], 0xf15f15);
	assert_int_equal(cpu.devirt.rip, GUEST_RIP + 3);  /* after the VMCALL */
	assert_int_equal(cpu.devirt.rflags, 0x246);
	assert_int_equal(cpu.devirt.cs, 0x38);
	assert_int_equal(cpu.devirt.ss, 0x30);
	assert_int_equal(cpu.devirt.fs_base, 0x1111);
	assert_int_equal(cpu.devirt.gs_base, 0x2222);
	assert_int_equal(cpu.devirt.cr3, 0x3fc01000);
	assert_int_equal(cpu.devirt.cr4, 0x0668);         /* the guest view, no VMXE */
	assert_int_equal(cpu.devirt.gdtr.base, 0x3f9dc000);
	assert_int_equal(cpu.devirt.gdtr.limit, 0x47);
	assert_int_equal(cpu.devirt.idtr.limit, 0xfff);
	assert_false(hw_fake_in_vmx());
	assert_false(cpu.launched);
}

static void test_devirt_refused_outside_64bit(void **state)
{
	(void)state;
	set_firmware_state();
	vm_set(VMCS_GUEST_CS_AR, 0xc09b);  /* 32-bit code segment */
	assert_int_equal(vmcall(TV_HC_DEVIRT, 0, 0, 0), EXIT_RESUME);
	assert_int_equal((uint32_t)regs.rax, (uint32_t)TV_HC_EBUSY);
	/* outside 64-bit mode EIP wraps at 32 bits */
	assert_int_equal(vm_get(VMCS_GUEST_RIP), (GUEST_RIP + 3) & 0xffffffffull);
	assert_true(hw_fake_in_vmx());
}

static void test_seal_refuses_boot_calls(void **state)
{
	(void)state;
	set_firmware_state();
	assert_false(hypercall_sealed());
	assert_int_equal(vmcall(TV_HC_SEAL, 0, 0, 0), EXIT_RESUME);
	assert_int_equal(regs.rax, TV_HC_OK);
	assert_true(hypercall_sealed());
	/* the OS can neither leave VMX nor seal again */
	assert_int_equal(vmcall(TV_HC_DEVIRT, 0, 0, 0), EXIT_RESUME);
	assert_int_equal(regs.rax, (uint64_t)(int64_t)TV_HC_EINVAL);
	assert_int_equal(vmcall(TV_HC_SEAL, 0, 0, 0), EXIT_RESUME);
	assert_int_equal(regs.rax, (uint64_t)(int64_t)TV_HC_EINVAL);
	assert_true(hw_fake_in_vmx());
	/* and from CPL 3 both are #UD like every other call */
	vm_set(VMCS_GUEST_SS_AR, 0xc0f3);
	assert_int_equal(vmcall(TV_HC_DEVIRT, 0, 0, 0), EXIT_RESUME);
	assert_int_equal(vm_get(VMCS_ENTRY_INTR_INFO) & 0xff, VEC_UD);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_cpl3_gets_ud_and_nothing_else, setup),
		cmocka_unit_test_setup(test_probe, setup),
		cmocka_unit_test_setup(test_no_backend_enosys, setup),
		cmocka_unit_test_setup(test_hooks_called_with_arguments, setup),
		cmocka_unit_test_setup(test_event_keeps_arguments, setup),
		cmocka_unit_test_setup(test_unknown_function_einval, setup),
		cmocka_unit_test_setup(test_32bit_caller, setup),
		cmocka_unit_test_setup(test_real_mode_caller_is_cpl0, setup),
		cmocka_unit_test_setup(test_strerror, setup),
		cmocka_unit_test_setup(test_devirt_captures_guest_and_leaves, setup),
		cmocka_unit_test_setup(test_devirt_refused_outside_64bit, setup),
		cmocka_unit_test_setup(test_seal_refuses_boot_calls, setup),
	};

	return cmocka_run_group_tests_name("test_exit_hypercall", tests, NULL, NULL);
}
