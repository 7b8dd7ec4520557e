/* SPDX-License-Identifier: MIT */
/*
 * test_hw_fake.c - the host fake of the hardware seam models what the
 * code above it relies on: CPUID and MSR tables, port I/O, the TSC, and
 * the SDM 3C ch. 31 VMX instruction rules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "hw_fake.h"

#define CR4_VMXE (1ull << 13)
#define VMCS_GUEST_RIP 0x681eu            /* natural width, guest state */
#define VMCS_GUEST_CS_SELECTOR 0x0802u    /* 16 bit */
#define VMCS_PIN_CTLS 0x4000u             /* 32 bit control */
#define VMCS_EPT_POINTER 0x201au          /* 64 bit control */
#define VMCS_EXIT_REASON 0x4402u          /* 32 bit read-only */
#define VMCS_GUEST_PHYS_ADDR 0x2400u      /* 64 bit read-only */

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	return 0;
}

static int run_in_child(void (*fn)(void))
{
	pid_t pid;
	int st;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The fake's abort() is the expected outcome here: keep it quiet. */
		if (!freopen("/dev/null", "w", stderr))
			_exit(99);
		fn();
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static uint64_t vmcs_err(void)
{
	uint64_t e = 0;

	assert_int_equal(hw_vmread(HW_FAKE_VMCS_VM_INSTRUCTION_ERROR, &e), HW_VMX_OK);
	return e;
}

/* --- reset ----------------------------------------------------------------- */

static void test_power_on_defaults(void **state)
{
	struct hw_dtr d;

	(void)state;
	hw_write_cr4(CR4_VMXE);
	hw_fake_set_msr(0x10, 5);
	hw_fake_set_cpuid(1, 0, 1, 2, 3, 4);
	hw_fake_reset();
	assert_int_equal(hw_read_cr0(), 0x60000010);
	assert_int_equal(hw_read_cr4(), 0);
	assert_int_equal(hw_read_dr7(), 0x400);
	assert_int_equal(hw_read_rflags(), 0x2);
	assert_int_equal(hw_xgetbv(0), 1);
	assert_int_equal(hw_read_selector(HW_SEG_CS), 0xf000);
	assert_int_equal(hw_read_selector(HW_SEG_TR), 0);
	hw_sgdt(&d);
	assert_int_equal(d.limit, 0xffff);
	assert_int_equal(d.base, 0);
	assert_false(hw_fake_has_msr(0x10));
	assert_false(hw_fake_in_vmx());
	assert_int_equal(hw_fake_current_vmcs(), HW_FAKE_NO_VMCS);
	assert_int_equal(hw_rdtsc(), 0);
	assert_int_equal(hw_rdtsc(), 1);
}

/* --- CPUID ---------------------------------------------------------------------- */

static void test_cpuid_table(void **state)
{
	struct hw_cpuid_regs r;

	(void)state;
	hw_fake_set_cpuid(1, 0, 0x906ea, 0x800, 0x7ffafbff, 0xbfebfbff);
	hw_fake_set_cpuid(7, 0, 0, 0x29c6fbf, 0, 0);
	hw_fake_set_cpuid(7, 1, 0x10, 0, 0, 0);
	hw_cpuid(1, 0, &r);
	assert_int_equal(r.eax, 0x906ea);
	assert_int_equal(r.edx, 0xbfebfbff);
	/* leaf 1 ignores ECX */
	hw_cpuid(1, 0x55, &r);
	assert_int_equal(r.eax, 0x906ea);
	/* leaf 7 is indexed: sub-leaf 2 is unseeded */
	hw_cpuid(7, 1, &r);
	assert_int_equal(r.eax, 0x10);
	memset(&r, 0xff, sizeof(r));
	hw_cpuid(7, 2, &r);
	assert_int_equal(r.eax | r.ebx | r.ecx | r.edx, 0);
	/* unseeded leaf: zeros */
	memset(&r, 0xff, sizeof(r));
	hw_cpuid(0x80000008u, 0, &r);
	assert_int_equal(r.eax | r.ebx | r.ecx | r.edx, 0);
	/* re-seeding replaces */
	hw_fake_set_cpuid(1, 0, 0x506e3, 0, 0, 0);
	hw_cpuid(1, 0, &r);
	assert_int_equal(r.eax, 0x506e3);
	assert_int_equal(hw_fake_cpuid_count, 6);
}

static void test_load_cpu_replaces_table(void **state)
{
	static const struct hw_fake_cpuid_entry cpu[] = {
		{ 0, 0, 0xd, 0x68747541, 0x444d4163, 0x69746e65 },
		{ 0xd, 1, 0xf, 0, 0, 0 },
	};
	struct hw_cpuid_regs r;

	(void)state;
	hw_fake_set_cpuid(1, 0, 1, 1, 1, 1);
	hw_fake_load_cpu(cpu, 2);
	hw_cpuid(1, 0, &r);
	assert_int_equal(r.eax, 0);
	hw_cpuid(0, 0, &r);
	assert_int_equal(r.ebx, 0x68747541);
	hw_cpuid(0xd, 1, &r);
	assert_int_equal(r.eax, 0xf);
	hw_cpuid(0xd, 0, &r);
	assert_int_equal(r.eax, 0);
}

/* --- MSRs ------------------------------------------------------------------------- */

static void test_msr_table_and_log(void **state)
{
	const struct hw_fake_msr_write *w;

	(void)state;
	hw_fake_set_msr(0x3a, 5);
	assert_int_equal(hw_rdmsr(0x3a), 5);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);
	assert_int_equal(hw_rdmsr(0x1d9), 0);
	assert_int_equal(hw_fake_unknown_msr_reads, 1);
	assert_int_equal(hw_fake_last_unknown_msr, 0x1d9);
	assert_int_equal(hw_fake_msr_write_count, 0);   /* seeding is not a write */
	assert_null(hw_fake_msr_write_log(0));

	hw_wrmsr(0x1d9, 0x1);
	hw_wrmsr(0x3a, 0x7);
	assert_int_equal(hw_rdmsr(0x1d9), 1);          /* now known */
	assert_int_equal(hw_fake_unknown_msr_reads, 1);
	assert_int_equal(hw_fake_get_msr(0x3a), 7);
	assert_int_equal(hw_fake_msr_write_count, 2);
	w = hw_fake_msr_write_log(0);
	assert_int_equal(w->msr, 0x3a);
	assert_int_equal(w->value, 7);
	w = hw_fake_msr_write_log(1);
	assert_int_equal(w->msr, 0x1d9);
	assert_null(hw_fake_msr_write_log(2));

	hw_fake_clear_msr(0x3a);
	assert_false(hw_fake_has_msr(0x3a));
	assert_int_equal(hw_rdmsr(0x3a), 0);
	assert_int_equal(hw_fake_unknown_msr_reads, 2);
}

static void test_msr_log_keeps_last_n(void **state)
{
	(void)state;
	for (uint32_t i = 0; i < HW_FAKE_MSR_LOG + 10; i++)
		hw_wrmsr(0x200 + (i % 16), i);
	assert_int_equal(hw_fake_msr_write_count, HW_FAKE_MSR_LOG + 10);
	assert_int_equal(hw_fake_msr_write_log(0)->value, HW_FAKE_MSR_LOG + 9);
	assert_int_equal(hw_fake_msr_write_log(HW_FAKE_MSR_LOG - 1)->value, 10);
	assert_null(hw_fake_msr_write_log(HW_FAKE_MSR_LOG));
}

/* --- registers, time, port I/O ------------------------------------------------------ */

static void test_registers(void **state)
{
	struct hw_dtr g = { 0x7f, 0xfffff000 }, d;

	(void)state;
	hw_write_cr3(0x1000);
	hw_write_dr7(0x401);
	assert_int_equal(hw_read_cr3(), 0x1000);
	assert_int_equal(hw_fake_regs()->dr7, 0x401);
	hw_fake_regs()->rflags = 0x202;
	hw_cli();
	assert_int_equal(hw_read_rflags(), 0x2);
	assert_int_equal(hw_fake_cli_count, 1);
	hw_lgdt(&g);
	hw_sgdt(&d);
	assert_int_equal(d.base, 0xfffff000);
	assert_int_equal(d.limit, 0x7f);
	hw_ltr(0x40);
	assert_int_equal(hw_read_selector(HW_SEG_TR), 0x40);
	hw_fake_regs()->sel[HW_SEG_SS] = 0x18;
	assert_int_equal(hw_read_selector(HW_SEG_SS), 0x18);
	hw_xsetbv(0, 0x7);
	assert_int_equal(hw_xgetbv(0), 0x7);
	hw_wbinvd();
	hw_halt();
	hw_pause();
	assert_int_equal(hw_fake_wbinvd_count, 1);
	assert_int_equal(hw_fake_halt_count, 1);
	assert_int_equal(hw_fake_pause_count, 1);
}

static void bad_xsetbv(void)
{
	hw_xsetbv(0, 0x4);  /* AVX without x87/SSE */
}

static void clear_vmxe_in_vmx(void)
{
	hw_write_cr4(CR4_VMXE);
	if (hw_vmxon(0x1000))
		_exit(2);
	hw_write_cr4(0);
}

static void test_gp_rules_abort(void **state)
{
	(void)state;
	assert_int_equal(run_in_child(bad_xsetbv), 128 + 6);        /* SIGABRT */
	assert_int_equal(run_in_child(clear_vmxe_in_vmx), 128 + 6);
}

static void test_tsc(void **state)
{
	(void)state;
	hw_fake_set_tsc(1000);
	assert_int_equal(hw_rdtsc(), 1000);
	assert_int_equal(hw_rdtsc(), 1001);
	hw_fake_set_tsc_step(100);
	hw_fake_advance_tsc(8);
	assert_int_equal(hw_rdtsc(), 1010);
	assert_int_equal(hw_fake_get_tsc(), 1110);
}

static uint32_t io_answer(uint16_t port, int width, void *ctx)
{
	(*(int *)ctx)++;
	return 0xabcd0000u | port | (uint32_t)width << 12;
}

static void test_port_io(void **state)
{
	const struct hw_fake_io *io;
	int calls = 0;

	(void)state;
	assert_int_equal(hw_inb(0x80), 0xff);
	assert_int_equal(hw_inw(0x80), 0xffff);
	assert_int_equal(hw_inl(0xcfc), 0xffffffffu);
	hw_fake_set_io_in(io_answer, &calls);
	assert_int_equal(hw_inb(0x71), 0x71);               /* truncated to the width */
	assert_int_equal(hw_inw(0x71), 0x2071);
	assert_int_equal(hw_inl(0x71), 0xabcd4071u);
	assert_int_equal(calls, 3);
	assert_int_equal(hw_fake_io_in_count, 6);

	hw_outb(0x70, 0x8f);
	hw_outw(0x4004, 0x3400);
	hw_outl(0xcf8, 0x80000000u);
	assert_int_equal(hw_fake_io_out_count, 3);
	io = hw_fake_io_out_log(0);
	assert_int_equal(io->port, 0xcf8);
	assert_int_equal(io->width, 4);
	assert_int_equal(io->value, 0x80000000u);
	io = hw_fake_io_out_log(2);
	assert_int_equal(io->port, 0x70);
	assert_int_equal(io->width, 1);
	assert_int_equal(io->value, 0x8f);
	assert_null(hw_fake_io_out_log(3));
}

static void test_uart_model(void **state)
{
	struct hw_fake_uart *u;

	(void)state;
	u = hw_fake_uart_attach(0x2f8);
	hw_outb(0x2ff, 0x42);
	assert_int_equal(hw_inb(0x2ff), 0x42);      /* scratch holds */
	assert_int_equal(hw_inb(0x2fd), 0x60);      /* THRE | TEMT */
	hw_outb(0x2fb, 0x80);
	hw_outb(0x2f8, 0x0c);                       /* DLL while DLAB */
	hw_outb(0x2f9, 0x00);
	assert_int_equal(hw_inb(0x2f8), 0x0c);
	hw_outb(0x2fb, 0x03);
	hw_outb(0x2f8, 'A');
	assert_int_equal(u->dll, 0x0c);
	assert_string_equal(u->tx, "A");
	u->thre_stuck = true;
	assert_int_equal(hw_inb(0x2fd) & 0x20, 0);
	assert_int_equal(u->lsr_reads, 2);
	/* ports next to it float */
	assert_int_equal(hw_inb(0x2f7), 0xff);
	assert_int_equal(hw_inb(0x300), 0xff);
}

/* --- stopping ------------------------------------------------------------------------ */

static void test_jump_rsi_records_target(void **state)
{
	jmp_buf env;
	volatile int why;

	(void)state;
	hw_fake_regs()->rflags = 0x202;
	hw_fake_expect_stop(env);
	why = setjmp(env);
	if (why == 0) {
		hw_jump_rsi(0x1000200, 0x8a000);
		fail();
	}
	assert_int_equal(why, HW_FAKE_JUMP_RSI);
	assert_int_equal(hw_fake_jump_entry, 0x1000200);
	assert_int_equal(hw_fake_jump_rsi, 0x8a000);
	assert_int_equal(hw_read_rflags() & 0x200, 0);
	assert_int_equal(hw_fake_stop_count, 0);
}

static void test_stop_cpu_longjmps(void **state)
{
	jmp_buf env;
	volatile int reached = 0;

	(void)state;
	hw_fake_regs()->rflags = 0x202;
	hw_fake_expect_stop(env);
	if (setjmp(env) == 0) {
		hw_stop_cpu();
		reached = 1;
	}
	assert_int_equal(reached, 0);
	assert_int_equal(hw_fake_stop_count, 1);
	assert_int_equal(hw_read_rflags() & 0x200, 0);

	hw_fake_expect_stop(env);
	switch (setjmp(env)) {
	case 0:
		hw_vmx_launch_fail_return(0x7000, -3);
		break;
	case HW_FAKE_JUMP_LAUNCH_FAIL:
		reached = 2;
		break;
	default:
		break;
	}
	assert_int_equal(reached, 2);
	assert_int_equal(hw_fake_launch_fail_rsp, 0x7000);
	assert_int_equal(hw_fake_launch_fail_err, -3);
}

static void stop_unarmed(void)
{
	hw_stop_cpu();
}

static void stop_twice(void)
{
	jmp_buf env;

	hw_fake_expect_stop(env);
	if (setjmp(env) == 0)
		hw_stop_cpu();
	hw_stop_cpu();  /* one shot: this one aborts */
}

static void vmcall_without_handler(void)
{
	uint64_t in[4] = { 0 }, out[4];

	hw_vmcall(in, out);
}

static void test_unarmed_stop_aborts(void **state)
{
	(void)state;
	assert_int_equal(run_in_child(stop_unarmed), 128 + 6);
	assert_int_equal(run_in_child(stop_twice), 128 + 6);
	assert_int_equal(run_in_child(vmcall_without_handler), 128 + 6);
}

static void echo_vmcall(const uint64_t in[4], uint64_t out[4], void *ctx)
{
	for (int i = 0; i < 4; i++)
		out[i] = in[i] + (uint64_t)(uintptr_t)ctx;
}

static void test_vmcall_handler(void **state)
{
	uint64_t in[4] = { 1, 2, 3, 4 }, out[4] = { 0 };

	(void)state;
	hw_fake_set_vmcall(echo_vmcall, (void *)(uintptr_t)10);
	hw_vmcall(in, out);
	assert_int_equal(out[0], 11);
	assert_int_equal(out[3], 14);
}

/* --- VMX ------------------------------------------------------------------------------ */

static void test_vmxon_rules(void **state)
{
	(void)state;
	/* CR4.VMXE clear: the CPU raises #UD; the fake answers VMfailInvalid. */
	assert_int_equal(hw_vmxon(0x1000), HW_VMX_FAIL_INVALID);
	assert_false(hw_fake_in_vmx());
	hw_write_cr4(CR4_VMXE);
	/* the VMXON pointer must be 4 KiB aligned */
	assert_int_equal(hw_vmxon(0x1008), HW_VMX_FAIL_INVALID);
	assert_false(hw_fake_in_vmx());
	assert_int_equal(hw_vmxon(0x1000), HW_VMX_OK);
	assert_true(hw_fake_in_vmx());
	assert_int_equal(hw_fake_vmxon_pa(), 0x1000);
	/* in VMX operation without a current VMCS: VMfail -> VMfailInvalid */
	assert_int_equal(hw_vmxon(0x2000), HW_VMX_FAIL_INVALID);
	/* with one: VMfailValid, error 15 */
	assert_int_equal(hw_vmptrld(0x3000), HW_VMX_OK);
	assert_int_equal(hw_vmxon(0x2000), HW_VMX_FAIL_VALID);
	assert_int_equal(vmcs_err(), HW_FAKE_VMERR_VMXON_IN_ROOT);
	assert_int_equal(hw_vmxoff(), HW_VMX_OK);
	assert_false(hw_fake_in_vmx());
	assert_int_equal(hw_fake_current_vmcs(), HW_FAKE_NO_VMCS);
	assert_int_equal(hw_vmxoff(), HW_VMX_FAIL_INVALID);
	hw_write_cr4(0);  /* allowed again outside VMX operation */
}

static void test_vmclear_vmptrld_rules(void **state)
{
	(void)state;
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x1000), HW_VMX_OK);
	/* no current VMCS: every VMfail is VMfailInvalid */
	assert_int_equal(hw_vmptrld(0x1000), HW_VMX_FAIL_INVALID);
	assert_int_equal(hw_vmclear(0x2004), HW_VMX_FAIL_INVALID);
	assert_int_equal(hw_vmptrld(0x2000), HW_VMX_OK);
	assert_int_equal(hw_fake_current_vmcs(), 0x2000);
	/* now VMfailValid with the SDM error numbers */
	assert_int_equal(hw_vmclear(0x3001), HW_VMX_FAIL_VALID);
	assert_int_equal(vmcs_err(), HW_FAKE_VMERR_VMCLEAR_ADDR);
	assert_int_equal(hw_vmclear(0x1000), HW_VMX_FAIL_VALID);
	assert_int_equal(vmcs_err(), HW_FAKE_VMERR_VMCLEAR_VMXON);
	assert_int_equal(hw_vmptrld(0x3800), HW_VMX_FAIL_VALID);
	assert_int_equal(vmcs_err(), HW_FAKE_VMERR_VMPTRLD_ADDR);
	assert_int_equal(hw_vmptrld(0x1000), HW_VMX_FAIL_VALID);
	assert_int_equal(vmcs_err(), HW_FAKE_VMERR_VMPTRLD_VMXON);
	/* beyond the physical-address width (CPUID.80000008H: 39 bits) */
	hw_fake_set_cpuid(0x80000008u, 0, 0x3027, 0, 0, 0);
	assert_int_equal(hw_vmptrld(1ull << 39), HW_VMX_FAIL_VALID);
	assert_int_equal(vmcs_err(), HW_FAKE_VMERR_VMPTRLD_ADDR);
	assert_int_equal(hw_vmptrld((1ull << 39) - 0x1000), HW_VMX_OK);
	/* VMCLEAR of the current VMCS makes it not current */
	assert_int_equal(hw_vmptrld(0x2000), HW_VMX_OK);
	assert_int_equal(hw_vmclear(0x2000), HW_VMX_OK);
	assert_int_equal(hw_fake_current_vmcs(), HW_FAKE_NO_VMCS);
}

static void test_vmread_vmwrite(void **state)
{
	uint64_t v = 0x77;

	(void)state;
	/* without a current VMCS */
	assert_int_equal(hw_vmread(VMCS_GUEST_RIP, &v), HW_VMX_FAIL_INVALID);
	assert_int_equal(v, 0x77);
	assert_int_equal(hw_vmwrite(VMCS_GUEST_RIP, 1), HW_VMX_FAIL_INVALID);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0);

	assert_int_equal(hw_vmptrld(0x10000), HW_VMX_OK);
	assert_int_equal(hw_vmwrite(VMCS_GUEST_RIP, 0xffffffff81000000ull), HW_VMX_OK);
	assert_int_equal(hw_vmread(VMCS_GUEST_RIP, &v), HW_VMX_OK);
	assert_int_equal(v, 0xffffffff81000000ull);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0xffffffff81000000ull);

	/* width truncation: 16 and 32 bit fields */
	assert_int_equal(hw_vmwrite(VMCS_GUEST_CS_SELECTOR, 0x12345678), HW_VMX_OK);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_CS_SELECTOR), 0x5678);
	assert_int_equal(hw_vmwrite(VMCS_PIN_CTLS, 0x1234567816ull), HW_VMX_OK);
	assert_int_equal(hw_fake_vmcs_get(VMCS_PIN_CTLS), 0x34567816);

	/* the high access of a 64-bit field is its upper half */
	assert_int_equal(hw_vmwrite(VMCS_EPT_POINTER, 0x123456789abc001eull), HW_VMX_OK);
	assert_int_equal(hw_vmread(VMCS_EPT_POINTER | 1, &v), HW_VMX_OK);
	assert_int_equal(v, 0x12345678);
	assert_int_equal(hw_vmwrite(VMCS_EPT_POINTER | 1, 0xaabbccdd), HW_VMX_OK);
	assert_int_equal(hw_fake_vmcs_get(VMCS_EPT_POINTER), 0xaabbccdd9abc001eull);

	/* unsupported encodings: VMfailValid, error 12 */
	assert_int_equal(hw_vmread(0x100000000ull | VMCS_GUEST_RIP, &v), HW_VMX_FAIL_VALID);
	assert_int_equal(vmcs_err(), HW_FAKE_VMERR_UNSUPPORTED_FIELD);
	assert_int_equal(hw_vmwrite(VMCS_PIN_CTLS | 1, 0), HW_VMX_FAIL_VALID);

	/* read-only fields: error 13 unless IA32_VMX_MISC[29] */
	assert_int_equal(hw_vmwrite(VMCS_EXIT_REASON, 10), HW_VMX_FAIL_VALID);
	assert_int_equal(vmcs_err(), HW_FAKE_VMERR_READ_ONLY_FIELD);
	assert_int_equal(hw_vmwrite(VMCS_GUEST_PHYS_ADDR, 10), HW_VMX_FAIL_VALID);
	hw_fake_set_msr(0x485, 1ull << 29);
	assert_int_equal(hw_vmwrite(VMCS_EXIT_REASON, 10), HW_VMX_OK);
	/* the backdoor sets read-only fields regardless */
	hw_fake_vmcs_set(VMCS_GUEST_PHYS_ADDR, 0xfee00000);
	assert_int_equal(hw_vmread(VMCS_GUEST_PHYS_ADDR, &v), HW_VMX_OK);
	assert_int_equal(v, 0xfee00000);
	assert_int_equal(hw_fake_msr_write_count, 0);
	assert_int_equal(hw_fake_unknown_msr_reads, 0);  /* the fake's own peek */
}

static void test_vmcs_contents_per_address(void **state)
{
	(void)state;
	assert_int_equal(hw_vmptrld(0x10000), HW_VMX_OK);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 1);
	assert_int_equal(hw_vmptrld(0x11000), HW_VMX_OK);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0);
	hw_fake_vmcs_set(VMCS_GUEST_RIP, 2);
	assert_int_equal(hw_vmclear(0x10000), HW_VMX_OK);  /* keeps its data */
	assert_int_equal(hw_fake_vmcs_get_at(0x10000, VMCS_GUEST_RIP), 1);
	assert_int_equal(hw_vmptrld(0x10000), HW_VMX_OK);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 1);
	assert_int_equal(hw_fake_vmcs_get_at(0x11000, VMCS_GUEST_RIP), 2);
	assert_int_equal(hw_fake_vmcs_get_at(0x99000, VMCS_GUEST_RIP), 0);
}

static void test_error_injection(void **state)
{
	uint64_t v = 5;

	(void)state;
	assert_int_equal(hw_vmptrld(0x10000), HW_VMX_OK);
	hw_fake_fail_vmwrite(VMCS_GUEST_RIP, 12);
	hw_fake_fail_vmread(VMCS_PIN_CTLS, 12);
	assert_int_equal(hw_vmwrite(VMCS_GUEST_RIP, 1), HW_VMX_FAIL_VALID);
	assert_int_equal(hw_fake_vmcs_get(HW_FAKE_VMCS_VM_INSTRUCTION_ERROR), 12);
	assert_int_equal(hw_fake_vmcs_get(VMCS_GUEST_RIP), 0);  /* not written */
	assert_int_equal(hw_vmwrite(VMCS_GUEST_RIP, 1), HW_VMX_FAIL_VALID);  /* persistent */
	assert_int_equal(hw_vmread(VMCS_GUEST_RIP, &v), HW_VMX_OK);  /* reads work */
	assert_int_equal(hw_vmread(VMCS_PIN_CTLS, &v), HW_VMX_FAIL_VALID);
	assert_int_equal(v, 0);                                 /* from the read above */
	assert_int_equal(hw_vmwrite(VMCS_PIN_CTLS, 3), HW_VMX_OK);
	/* with no current VMCS the missing VMCS is reported first */
	assert_int_equal(hw_vmclear(0x10000), HW_VMX_OK);
	assert_int_equal(hw_vmwrite(VMCS_GUEST_RIP, 1), HW_VMX_FAIL_INVALID);
	hw_fake_reset();
	assert_int_equal(hw_vmptrld(0x10000), HW_VMX_OK);
	assert_int_equal(hw_vmwrite(VMCS_GUEST_RIP, 1), HW_VMX_OK);
	assert_int_equal(hw_fake_vmwrite_count, 1);
}

static void test_launch(void **state)
{
	(void)state;
	assert_int_equal(hw_vmptrld(0x10000), HW_VMX_OK);
	/* not in VMX operation */
	assert_int_equal(hw_vmx_launch_here(), HW_VMX_FAIL_INVALID);
	hw_write_cr4(CR4_VMXE);
	assert_int_equal(hw_vmxon(0x1000), HW_VMX_OK);
	/* no current VMCS after VMXON */
	assert_int_equal(hw_vmx_launch_here(), HW_VMX_FAIL_INVALID);
	assert_int_equal(hw_vmclear(0x10000), HW_VMX_OK);
	assert_int_equal(hw_vmptrld(0x10000), HW_VMX_OK);
	/* an injected VM-entry failure of the VMLAUNCH itself */
	hw_fake_set_launch_result(HW_VMX_FAIL_VALID, 7);
	assert_int_equal(hw_vmx_launch_here(), HW_VMX_FAIL_VALID);
	assert_int_equal(vmcs_err(), 7);
	hw_fake_set_launch_result(HW_VMX_OK, 0);
	assert_int_equal(hw_vmx_launch_here(), HW_VMX_OK);
	assert_int_equal(hw_fake_launch_count, 1);
	/* launched: VMLAUNCH again is VMfail(4) until VMCLEAR */
	assert_int_equal(hw_vmx_launch_here(), HW_VMX_FAIL_VALID);
	assert_int_equal(vmcs_err(), HW_FAKE_VMERR_VMLAUNCH_NOT_CLEAR);
	assert_int_equal(hw_vmclear(0x10000), HW_VMX_OK);
	assert_int_equal(hw_vmptrld(0x10000), HW_VMX_OK);
	assert_int_equal(hw_vmx_launch_here(), HW_VMX_OK);
}

static void test_invept_invvpid(void **state)
{
	const struct hw_fake_inv *e;

	(void)state;
	assert_int_equal(hw_invept(1, 0x1234501e), HW_VMX_OK);
	assert_int_equal(hw_invept(2, 0), HW_VMX_OK);
	assert_int_equal(hw_invept(3, 0), HW_VMX_FAIL_INVALID);  /* no VMCS: invalid */
	assert_int_equal(hw_vmptrld(0x10000), HW_VMX_OK);
	assert_int_equal(hw_invept(0, 0), HW_VMX_FAIL_VALID);
	assert_int_equal(vmcs_err(), HW_FAKE_VMERR_INVALID_INV);
	assert_int_equal(hw_invvpid(0, 1, 0xffff800000000000ull), HW_VMX_OK);
	assert_int_equal(hw_invvpid(0, 1, 0x0000800000000000ull), HW_VMX_FAIL_VALID);
	assert_int_equal(hw_invvpid(1, 0, 0), HW_VMX_FAIL_VALID);  /* VPID 0 */
	assert_int_equal(hw_invvpid(2, 0, 0), HW_VMX_OK);
	assert_int_equal(hw_invvpid(3, 5, 0), HW_VMX_OK);
	assert_int_equal(hw_invvpid(4, 5, 0), HW_VMX_FAIL_VALID);
	assert_int_equal(hw_fake_inv_count, 10);
	e = hw_fake_inv_log(0);
	assert_int_equal(e->kind, HW_FAKE_INVVPID);
	assert_int_equal(e->type, 4);
	assert_int_equal(e->vpid, 5);
	assert_int_equal(e->rc, HW_VMX_FAIL_VALID);
	e = hw_fake_inv_log(9);
	assert_int_equal(e->kind, HW_FAKE_INVEPT);
	assert_int_equal(e->type, 1);
	assert_int_equal(e->eptp, 0x1234501e);
	assert_int_equal(e->rc, HW_VMX_OK);
	assert_null(hw_fake_inv_log(10));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_power_on_defaults, setup),
		cmocka_unit_test_setup(test_cpuid_table, setup),
		cmocka_unit_test_setup(test_load_cpu_replaces_table, setup),
		cmocka_unit_test_setup(test_msr_table_and_log, setup),
		cmocka_unit_test_setup(test_msr_log_keeps_last_n, setup),
		cmocka_unit_test_setup(test_registers, setup),
		cmocka_unit_test_setup(test_gp_rules_abort, setup),
		cmocka_unit_test_setup(test_tsc, setup),
		cmocka_unit_test_setup(test_port_io, setup),
		cmocka_unit_test_setup(test_uart_model, setup),
		cmocka_unit_test_setup(test_stop_cpu_longjmps, setup),
		cmocka_unit_test_setup(test_unarmed_stop_aborts, setup),
		cmocka_unit_test_setup(test_vmcall_handler, setup),
		cmocka_unit_test_setup(test_vmxon_rules, setup),
		cmocka_unit_test_setup(test_vmclear_vmptrld_rules, setup),
		cmocka_unit_test_setup(test_vmread_vmwrite, setup),
		cmocka_unit_test_setup(test_vmcs_contents_per_address, setup),
		cmocka_unit_test_setup(test_error_injection, setup),
		cmocka_unit_test_setup(test_launch, setup),
		cmocka_unit_test_setup(test_jump_rsi_records_target, setup),
		cmocka_unit_test_setup(test_invept_invvpid, setup),
	};

	return cmocka_run_group_tests_name("test_hw_fake", tests, NULL, NULL);
}
