/* SPDX-License-Identifier: MIT */
/*
 * exit_ept.h - the EPT-violation handler (exit reason 48): the defined
 * outcome of a guest touching tracevisor's hidden memory.
 */
#ifndef TV_EXIT_EPT_H
#define TV_EXIT_EPT_H

#include "vmm/vmx/vcpu.h"

/*
 * ept_edit_lock / ept_edit_unlock - serialize changes to the shared EPT
 * (violation handling, the tracer's address trigger) across CPUs.
 */
void ept_edit_lock(void);
void ept_edit_unlock(void);

/* Needs ctx->qualification (read/write/fetch bits). */
enum exit_action exit_ept_violation(struct exit_ctx *ctx);

#endif /* TV_EXIT_EPT_H */
