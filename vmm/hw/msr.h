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

/* --- tracing MSRs (SDM 4 Table 2-2; 3B ch. 18 LBR/BTS, ch. 33 Intel PT) --- */

/* IA32_MISC_ENABLE (SDM 4 Table 2-2). */
#define MSR_IA32_MISC_ENABLE     0x000001a0
#define MISC_ENABLE_BTS_UNAVAILABLE  (1ull << 11)   /* RO: 1 = no BTS */
#define MISC_ENABLE_PEBS_UNAVAILABLE (1ull << 12)   /* RO: 1 = no PEBS */

/* IA32_DEBUGCTL bits (SDM 3B 18.4.1, Figure 18-3; 4 Table 2-2). */
#define DEBUGCTL_LBR                   (1ull << 0)
#define DEBUGCTL_BTF                   (1ull << 1)
#define DEBUGCTL_TR                    (1ull << 6)
#define DEBUGCTL_BTS                   (1ull << 7)
#define DEBUGCTL_BTINT                 (1ull << 8)
#define DEBUGCTL_BTS_OFF_OS            (1ull << 9)
#define DEBUGCTL_BTS_OFF_USR           (1ull << 10)
#define DEBUGCTL_FREEZE_LBRS_ON_PMI    (1ull << 11)
#define DEBUGCTL_FREEZE_PERFMON_ON_PMI (1ull << 12)
#define DEBUGCTL_ENABLE_UNCORE_PMI     (1ull << 13)
#define DEBUGCTL_FREEZE_WHILE_SMM      (1ull << 14)
#define DEBUGCTL_RTM_DEBUG             (1ull << 15)

/* Model-specific (legacy) LBR stack (SDM 3B 18.4.8, 4 Table 2-x per model). */
#define MSR_LBR_SELECT           0x000001c8
#define MSR_LASTBRANCH_TOS       0x000001c9
#define MSR_LBR_CORE_FROM_0      0x00000040   /* Core 2, Atom: 4 or 8 entries */
#define MSR_LBR_CORE_TO_0        0x00000060
#define MSR_LBR_NHM_FROM_0       0x00000680   /* Nehalem and later: 16 or 32 */
#define MSR_LBR_NHM_TO_0         0x000006c0
#define MSR_LBR_INFO_0           0x00000dc0   /* Skylake and later (format 5) */

/* Architectural LBRs (SDM 3B ch. 18.1, CPUID leaf 0x1C). */
#define MSR_IA32_LBR_CTL         0x000014ce
#define MSR_IA32_LBR_DEPTH       0x000014cf
#define MSR_IA32_LBR_0_INFO      0x00001200
#define MSR_IA32_LBR_0_FROM_IP   0x00001500
#define MSR_IA32_LBR_0_TO_IP     0x00001600
#define ARCH_LBR_MAX_DEPTH       64

/* Debug store and PEBS (SDM 3B 18.6.8, 20.6.2.4). */
#define MSR_IA32_PEBS_ENABLE     0x000003f1
#define MSR_IA32_DS_AREA         0x00000600

/* Performance monitoring global control (SDM 3B 20.2.2, 20.2.4). */
#define MSR_IA32_PERF_GLOBAL_STATUS   0x0000038e
#define MSR_IA32_PERF_GLOBAL_CTRL     0x0000038f
#define MSR_IA32_PERF_GLOBAL_OVF_CTRL 0x00000390   /* v4: IA32_PERF_GLOBAL_STATUS_RESET */
#define PERF_GLOBAL_STATUS_PERF_METRICS (1ull << 48)
#define PERF_GLOBAL_STATUS_TOPA_PMI   (1ull << 55)
#define PERF_GLOBAL_STATUS_LBR_FRZ    (1ull << 58)
#define PERF_GLOBAL_STATUS_CTR_FRZ    (1ull << 59)
#define PERF_GLOBAL_STATUS_ASCI       (1ull << 60)
#define PERF_GLOBAL_STATUS_OVF_UNCORE (1ull << 61)
#define PERF_GLOBAL_STATUS_OVF_BUFFER (1ull << 62)
#define PERF_GLOBAL_STATUS_COND_CHGD  (1ull << 63)

/* Intel PT (SDM 3C 33.2.8). */
#define MSR_IA32_RTIT_OUTPUT_BASE      0x00000560
#define MSR_IA32_RTIT_OUTPUT_MASK_PTRS 0x00000561
#define MSR_IA32_RTIT_CTL              0x00000570
#define MSR_IA32_RTIT_STATUS           0x00000571
#define MSR_IA32_RTIT_CR3_MATCH        0x00000572
#define MSR_IA32_RTIT_ADDR0_A          0x00000580   /* ADDRn_A = 0x580 + 2n, ADDRn_B = +1 */
#define RTIT_CTL_TRACEEN               (1ull << 0)

#endif /* TV_MSR_H */
