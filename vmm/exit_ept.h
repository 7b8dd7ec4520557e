/* SPDX-License-Identifier: MIT */
/*
 * exit_ept.h - the EPT-violation handler (exit reason 48): the defined
 * outcome of a guest touching tracevisor's hidden memory.
 */
#ifndef TV_EXIT_EPT_H
#define TV_EXIT_EPT_H

#include "vmm/vcpu.h"

/* Needs ctx->qualification (read/write/fetch bits). */
enum exit_action exit_ept_violation(struct exit_ctx *ctx);

#endif /* TV_EXIT_EPT_H */
