/* SPDX-License-Identifier: MIT */
/*
 * devirt.h - capture the guest context of a CPU that leaves VMX (boot-time
 * fallback when not every CPU could be virtualized; vmm/exit/devirt.c).
 */
#ifndef TV_DEVIRT_H
#define TV_DEVIRT_H

#include "vmm/hw/hw.h"
#include "vmm/vmx/vcpu.h"

/*
 * devirt_capture - fill f from the current VMCS and ctx->regs for a
 * return to the instruction after the exiting one (ctx->instr_len).
 * Returns 0, or -1 when the guest is not in 64-bit mode with paging (the
 * only state hw_vmx_devirt() can restore).
 */
int devirt_capture(const struct exit_ctx *ctx, struct hw_devirt_frame *f);

#endif /* TV_DEVIRT_H */
