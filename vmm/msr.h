/* SPDX-License-Identifier: MIT */
/*
 * msr.h - architectural MSR numbers and bits, SDM Vol. 4 names.
 */
#ifndef TV_MSR_H
#define TV_MSR_H

#define MSR_IA32_FEATURE_CONTROL 0x0000003a
#define FEATURE_CONTROL_LOCK                (1ull << 0)
#define FEATURE_CONTROL_VMXON_INSIDE_SMX    (1ull << 1)
#define FEATURE_CONTROL_VMXON_OUTSIDE_SMX   (1ull << 2)

#define MSR_IA32_DEBUGCTL        0x000001d9
#define MSR_IA32_PERF_CAPABILITIES 0x00000345

/* IA32_FEATURE_CONTROL: SENTER local function enables (14:8), global enable (15). */
#define FEATURE_CONTROL_SENTER_LOCAL_MASK   (0x7full << 8)
#define FEATURE_CONTROL_SENTER_GLOBAL       (1ull << 15)

#endif /* TV_MSR_H */
