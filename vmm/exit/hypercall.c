/* SPDX-License-Identifier: MIT */
/*
 * hypercall.c - VMCALL (exit reason 18), the guest ABI of vmm/exit/hypercall.h.
 *
 * VMCALL exits unconditionally in VMX non-root operation, at any CPL
 * (SDM 3C 26.1.2; 31.3 VMCALL: there is no CPL check before the exit),
 * so the privilege check is ours: CPL > 0 gets #UD, what VMCALL raises
 * outside VMX operation, and nothing else changes.
 */
#include <string.h>

#include "vmm/exit/devirt.h"
#include "vmm/exit/exit.h"
#include "vmm/exit/hypercall.h"
#include "vmm/lib/log.h"
#include "vmm/version.h"

static const struct hypercall_hooks *registered;
static bool sealed;

bool hypercall_sealed(void)
{
	return __atomic_load_n(&sealed, __ATOMIC_ACQUIRE);
}

void hypercall_reset_seal(void)
{
	__atomic_store_n(&sealed, false, __ATOMIC_RELEASE);
}

void hypercall_set_hooks(const struct hypercall_hooks *hooks)
{
	__atomic_store_n(&registered, hooks, __ATOMIC_RELEASE);
}

const char *tv_hc_strerror(int64_t status)
{
	switch (status) {
	case TV_HC_OK: return "ok";
	case TV_HC_EBUSY: return "busy";
	case TV_HC_EINVAL: return "unknown function";
	case TV_HC_ENOSYS: return "no tracing backend configured";
	default: return "unknown status";
	}
}

enum exit_action exit_vmcall(struct exit_ctx *ctx)
{
	struct guest_regs *regs = ctx->regs;
	const struct hypercall_hooks *hooks;
	uint64_t mask, fn, rbx, rcx, rdx;
	char label[TV_HC_LABEL_LEN];
	int64_t status;

	if (exit_guest_cpl() != 0) {
		exit_inject_exception(ctx, VEC_UD, false, 0);
		return EXIT_RESUME;
	}
	/* Outside 64-bit mode only the low halves are the caller's. */
	mask = exit_guest_64bit() ? ~0ull : 0xffffffffull;
	fn = regs->rax & mask;
	rbx = regs->rbx & mask;
	rcx = regs->rcx & mask;
	rdx = regs->rdx & mask;
	hooks = __atomic_load_n(&registered, __ATOMIC_ACQUIRE);

	switch (fn) {
	case TV_HC_PROBE:
		status = TV_HC_OK;
		regs->rbx = TV_HC_PROBE_MAGIC;
		regs->rcx = TV_HC_ABI_VERSION;
		regs->rdx = TV_VERSION_CODE;
		break;
	case TV_HC_TRACE_START:
		status = hooks && hooks->trace_start ? hooks->trace_start(ctx->cpu, rbx) : TV_HC_ENOSYS;
		break;
	case TV_HC_TRACE_STOP:
		status = hooks && hooks->trace_stop ? hooks->trace_stop(ctx->cpu) : TV_HC_ENOSYS;
		break;
	case TV_HC_MARKER:
		memcpy(label, &rcx, 8);
		memcpy(label + 8, &rdx, 8);
		status = hooks && hooks->marker ? hooks->marker(ctx->cpu, rbx, label) : TV_HC_ENOSYS;
		break;
	case TV_HC_EVENT:
		status = hooks && hooks->event ? hooks->event(ctx->cpu, rbx) : TV_HC_ENOSYS;
		break;
	case TV_HC_MEM_WATCH:
	case TV_HC_MEM_UNWATCH:
	case TV_HC_MEM_LABEL: {
		uint64_t rsi = regs->rsi & mask, rdi = regs->rdi & mask;

		memcpy(label, &rsi, 8);
		memcpy(label + 8, &rdi, 8);
		status = hooks && hooks->mem ? hooks->mem(ctx->cpu, fn, rbx, rcx, rdx, label) : TV_HC_ENOSYS;
		break;
	}
	case TV_HC_SEAL:
		if (hypercall_sealed()) {
			status = TV_HC_EINVAL;
			break;
		}
		__atomic_store_n(&sealed, true, __ATOMIC_RELEASE);
		log_info("hypercall: sealed by cpu %u: boot-time calls refused from now on",
			 ctx->cpu->index);
		status = TV_HC_OK;
		break;
	case TV_HC_DEVIRT:
		if (hypercall_sealed()) {
			status = TV_HC_EINVAL;
			break;
		}
		regs->rax = TV_HC_OK;
		if (devirt_capture(ctx, &ctx->cpu->devirt)) {
			status = TV_HC_EBUSY;
			break;
		}
		log_info("hypercall: cpu %u leaves VMX (devirtualized)", ctx->cpu->index);
		return EXIT_DEVIRT;
	default:
		status = TV_HC_EINVAL;
		break;
	}
	regs->rax = (uint64_t)status & mask;
	exit_skip_instruction(ctx);
	return EXIT_RESUME;
}
