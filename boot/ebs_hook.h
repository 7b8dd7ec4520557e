/* SPDX-License-Identifier: MIT */
/*
 * ebs_hook.h - tracevisor's hook on the firmware's ExitBootServices,
 * whenever a trace source is set (docs/CONFIG.md, docs/HYPERCALLS.md).
 */
#ifndef TV_BOOT_EBS_HOOK_H
#define TV_BOOT_EBS_HOOK_H

#include <stdint.h>

/* Offset of the thunk's `jmp [rip]` to the firmware's ExitBootServices. */
#define EBS_THUNK_JMP_OFFSET 15u

/*
 * ebs_hook_install - point the boot services table's ExitBootServices at
 * a thunk in a page of EfiLoaderCode that makes TV_HC_EVENT
 * (TV_HC_EVENT_EXIT_BOOT_SERVICES) and jumps on to the firmware's own
 * function with every argument register as it was, and recompute the
 * table's CRC32.  Call only while this CPU runs as tracevisor's guest
 * (VMCALL raises #UD otherwise).  Returns 0, or -1 (logged) when no page
 * could be had; the firmware's table is then untouched.
 */
int ebs_hook_install(void);

#endif /* TV_BOOT_EBS_HOOK_H */
