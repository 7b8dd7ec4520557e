/* SPDX-License-Identifier: MIT */
/*
 * vmx_defs.h - VMX architectural constants, declared once.
 *
 * VMCS field encodings: SDM Vol. 3C Appendix B.  Control bits: SDM 3C
 * 25.6 (execution), 25.7 (exit), 25.8 (entry).  Exit reasons: Appendix C.
 * Capability MSRs: Appendix A.  Names follow the SDM.
 */
#ifndef TV_VMX_DEFS_H
#define TV_VMX_DEFS_H

#include <stdint.h>

/* --- capability MSRs (Appendix A) ---------------------------------------- */
#define MSR_IA32_VMX_BASIC               0x480
#define MSR_IA32_VMX_PINBASED_CTLS       0x481
#define MSR_IA32_VMX_PROCBASED_CTLS      0x482
#define MSR_IA32_VMX_EXIT_CTLS           0x483
#define MSR_IA32_VMX_ENTRY_CTLS          0x484
#define MSR_IA32_VMX_MISC                0x485
#define MSR_IA32_VMX_CR0_FIXED0          0x486
#define MSR_IA32_VMX_CR0_FIXED1          0x487
#define MSR_IA32_VMX_CR4_FIXED0          0x488
#define MSR_IA32_VMX_CR4_FIXED1          0x489
#define MSR_IA32_VMX_VMCS_ENUM           0x48a
#define MSR_IA32_VMX_PROCBASED_CTLS2     0x48b
#define MSR_IA32_VMX_EPT_VPID_CAP        0x48c
#define MSR_IA32_VMX_TRUE_PINBASED_CTLS  0x48d
#define MSR_IA32_VMX_TRUE_PROCBASED_CTLS 0x48e
#define MSR_IA32_VMX_TRUE_EXIT_CTLS      0x48f
#define MSR_IA32_VMX_TRUE_ENTRY_CTLS     0x490
#define MSR_IA32_VMX_VMFUNC              0x491

/* IA32_VMX_BASIC (A.1) */
#define VMX_BASIC_REVISION(v)     ((uint32_t)((v) & 0x7fffffff))
#define VMX_BASIC_REGION_SIZE(v)  ((uint32_t)(((v) >> 32) & 0x1fff))
#define VMX_BASIC_32BIT_ADDR      (1ull << 48)
#define VMX_BASIC_MEMTYPE(v)      ((uint32_t)(((v) >> 50) & 0xf))
#define VMX_BASIC_INS_OUTS_INFO   (1ull << 54)
#define VMX_BASIC_TRUE_CTLS       (1ull << 55)

/* IA32_VMX_MISC (A.6) */
#define VMX_MISC_PREEMPT_SHIFT(v) ((uint32_t)((v) & 0x1f))
#define VMX_MISC_EXIT_SAVES_LMA   (1ull << 5)
#define VMX_MISC_ACT_HLT          (1ull << 6)
#define VMX_MISC_ACT_SHUTDOWN     (1ull << 7)
#define VMX_MISC_ACT_WAIT_SIPI    (1ull << 8)
#define VMX_MISC_PT_IN_VMX        (1ull << 14)
#define VMX_MISC_RDMSR_SMBASE     (1ull << 15)
#define VMX_MISC_CR3_TARGETS(v)   ((uint32_t)(((v) >> 16) & 0x1ff))
#define VMX_MISC_VMWRITE_ANY      (1ull << 29)

/* --- pin-based controls (25.6.1) ------------------------------------------ */
#define PIN_EXTERNAL_INTERRUPT_EXITING  (1u << 0)
#define PIN_NMI_EXITING                 (1u << 3)
#define PIN_VIRTUAL_NMIS                (1u << 5)
#define PIN_PREEMPTION_TIMER            (1u << 6)
#define PIN_POSTED_INTERRUPTS           (1u << 7)

/* --- primary processor-based controls (25.6.2) ----------------------------- */
#define CPU_INTERRUPT_WINDOW_EXITING    (1u << 2)
#define CPU_USE_TSC_OFFSETTING          (1u << 3)
#define CPU_HLT_EXITING                 (1u << 7)
#define CPU_INVLPG_EXITING              (1u << 9)
#define CPU_MWAIT_EXITING               (1u << 10)
#define CPU_RDPMC_EXITING               (1u << 11)
#define CPU_RDTSC_EXITING               (1u << 12)
#define CPU_CR3_LOAD_EXITING            (1u << 15)
#define CPU_CR3_STORE_EXITING           (1u << 16)
#define CPU_ACTIVATE_TERTIARY_CONTROLS  (1u << 17)
#define CPU_CR8_LOAD_EXITING            (1u << 19)
#define CPU_CR8_STORE_EXITING           (1u << 20)
#define CPU_USE_TPR_SHADOW              (1u << 21)
#define CPU_NMI_WINDOW_EXITING          (1u << 22)
#define CPU_MOV_DR_EXITING              (1u << 23)
#define CPU_UNCONDITIONAL_IO_EXITING    (1u << 24)
#define CPU_USE_IO_BITMAPS              (1u << 25)
#define CPU_MONITOR_TRAP_FLAG           (1u << 27)
#define CPU_USE_MSR_BITMAPS             (1u << 28)
#define CPU_MONITOR_EXITING             (1u << 29)
#define CPU_PAUSE_EXITING               (1u << 30)
#define CPU_ACTIVATE_SECONDARY_CONTROLS (1u << 31)

/* --- secondary processor-based controls (25.6.2) --------------------------- */
#define CPU2_VIRTUALIZE_APIC_ACCESSES   (1u << 0)
#define CPU2_ENABLE_EPT                 (1u << 1)
#define CPU2_DESCRIPTOR_TABLE_EXITING   (1u << 2)
#define CPU2_ENABLE_RDTSCP              (1u << 3)
#define CPU2_VIRTUALIZE_X2APIC          (1u << 4)
#define CPU2_ENABLE_VPID                (1u << 5)
#define CPU2_WBINVD_EXITING             (1u << 6)
#define CPU2_UNRESTRICTED_GUEST         (1u << 7)
#define CPU2_APIC_REGISTER_VIRT         (1u << 8)
#define CPU2_VIRTUAL_INTERRUPT_DELIVERY (1u << 9)
#define CPU2_PAUSE_LOOP_EXITING         (1u << 10)
#define CPU2_RDRAND_EXITING             (1u << 11)
#define CPU2_ENABLE_INVPCID             (1u << 12)
#define CPU2_ENABLE_VMFUNC              (1u << 13)
#define CPU2_VMCS_SHADOWING             (1u << 14)
#define CPU2_ENCLS_EXITING              (1u << 15)
#define CPU2_RDSEED_EXITING             (1u << 16)
#define CPU2_ENABLE_PML                 (1u << 17)
#define CPU2_EPT_VIOLATION_VE           (1u << 18)
#define CPU2_CONCEAL_VMX_FROM_PT        (1u << 19)
#define CPU2_ENABLE_XSAVES              (1u << 20)
#define CPU2_MODE_BASED_EPT_EXEC        (1u << 22)
#define CPU2_SUBPAGE_WRITE_PERM         (1u << 23)
#define CPU2_PT_USES_GUEST_PHYS         (1u << 24)
#define CPU2_USE_TSC_SCALING            (1u << 25)
#define CPU2_ENABLE_USER_WAIT_PAUSE     (1u << 26)
#define CPU2_ENABLE_ENCLV_EXITING       (1u << 28)

/* --- VM-exit controls (25.7.1) --------------------------------------------- */
#define EXIT_SAVE_DEBUG_CONTROLS        (1u << 2)
#define EXIT_HOST_ADDRESS_SPACE_SIZE    (1u << 9)
#define EXIT_LOAD_PERF_GLOBAL_CTRL      (1u << 12)
#define EXIT_ACK_INTERRUPT_ON_EXIT      (1u << 15)
#define EXIT_SAVE_PAT                   (1u << 18)
#define EXIT_LOAD_PAT                   (1u << 19)
#define EXIT_SAVE_EFER                  (1u << 20)
#define EXIT_LOAD_EFER                  (1u << 21)
#define EXIT_SAVE_PREEMPTION_TIMER      (1u << 22)
#define EXIT_CLEAR_BNDCFGS              (1u << 23)
#define EXIT_CONCEAL_VMX_FROM_PT        (1u << 24)
#define EXIT_CLEAR_RTIT_CTL             (1u << 25)
#define EXIT_CLEAR_LBR_CTL              (1u << 26)
#define EXIT_LOAD_CET_STATE             (1u << 28)

/* --- VM-entry controls (25.8.1) -------------------------------------------- */
#define ENTRY_LOAD_DEBUG_CONTROLS       (1u << 2)
#define ENTRY_IA32E_MODE_GUEST          (1u << 9)
#define ENTRY_SMM                       (1u << 10)
#define ENTRY_DEACTIVATE_DUAL_MONITOR   (1u << 11)
#define ENTRY_LOAD_PERF_GLOBAL_CTRL     (1u << 13)
#define ENTRY_LOAD_PAT                  (1u << 14)
#define ENTRY_LOAD_EFER                 (1u << 15)
#define ENTRY_LOAD_BNDCFGS              (1u << 16)
#define ENTRY_CONCEAL_VMX_FROM_PT       (1u << 17)
#define ENTRY_LOAD_RTIT_CTL             (1u << 18)
#define ENTRY_LOAD_CET_STATE            (1u << 20)
#define ENTRY_LOAD_LBR_CTL              (1u << 21)

/* --- VMCS field encodings (Appendix B) -------------------------------------- */
enum vmcs_field {
	/* 16-bit control */
	VMCS_VPID                       = 0x00000000,
	/* 16-bit guest state */
	VMCS_GUEST_ES_SELECTOR          = 0x00000800,
	VMCS_GUEST_CS_SELECTOR          = 0x00000802,
	VMCS_GUEST_SS_SELECTOR          = 0x00000804,
	VMCS_GUEST_DS_SELECTOR          = 0x00000806,
	VMCS_GUEST_FS_SELECTOR          = 0x00000808,
	VMCS_GUEST_GS_SELECTOR          = 0x0000080a,
	VMCS_GUEST_LDTR_SELECTOR        = 0x0000080c,
	VMCS_GUEST_TR_SELECTOR          = 0x0000080e,
	/* 16-bit host state */
	VMCS_HOST_ES_SELECTOR           = 0x00000c00,
	VMCS_HOST_CS_SELECTOR           = 0x00000c02,
	VMCS_HOST_SS_SELECTOR           = 0x00000c04,
	VMCS_HOST_DS_SELECTOR           = 0x00000c06,
	VMCS_HOST_FS_SELECTOR           = 0x00000c08,
	VMCS_HOST_GS_SELECTOR           = 0x00000c0a,
	VMCS_HOST_TR_SELECTOR           = 0x00000c0c,
	/* 64-bit control */
	VMCS_IO_BITMAP_A                = 0x00002000,
	VMCS_IO_BITMAP_B                = 0x00002002,
	VMCS_MSR_BITMAP                 = 0x00002004,
	VMCS_EXIT_MSR_STORE_ADDR        = 0x00002006,
	VMCS_EXIT_MSR_LOAD_ADDR         = 0x00002008,
	VMCS_ENTRY_MSR_LOAD_ADDR        = 0x0000200a,
	VMCS_TSC_OFFSET                 = 0x00002010,
	VMCS_EPT_POINTER                = 0x0000201a,
	/* 64-bit read-only data */
	VMCS_GUEST_PHYSICAL_ADDRESS     = 0x00002400,
	/* 64-bit guest state */
	VMCS_VMCS_LINK_POINTER          = 0x00002800,
	VMCS_GUEST_IA32_DEBUGCTL        = 0x00002802,
	VMCS_GUEST_IA32_PAT             = 0x00002804,
	VMCS_GUEST_IA32_EFER            = 0x00002806,
	VMCS_GUEST_IA32_PERF_GLOBAL_CTRL = 0x00002808,
	VMCS_GUEST_PDPTE0               = 0x0000280a,
	VMCS_GUEST_IA32_RTIT_CTL        = 0x00002814,
	VMCS_GUEST_IA32_LBR_CTL         = 0x00002816,
	/* 64-bit host state */
	VMCS_HOST_IA32_PAT              = 0x00002c00,
	VMCS_HOST_IA32_EFER             = 0x00002c02,
	VMCS_HOST_IA32_PERF_GLOBAL_CTRL = 0x00002c04,
	/* 32-bit control */
	VMCS_PIN_BASED_CTLS             = 0x00004000,
	VMCS_PROC_BASED_CTLS            = 0x00004002,
	VMCS_EXCEPTION_BITMAP           = 0x00004004,
	VMCS_PF_ERROR_CODE_MASK         = 0x00004006,
	VMCS_PF_ERROR_CODE_MATCH        = 0x00004008,
	VMCS_CR3_TARGET_COUNT           = 0x0000400a,
	VMCS_EXIT_CTLS                  = 0x0000400c,
	VMCS_EXIT_MSR_STORE_COUNT       = 0x0000400e,
	VMCS_EXIT_MSR_LOAD_COUNT        = 0x00004010,
	VMCS_ENTRY_CTLS                 = 0x00004012,
	VMCS_ENTRY_MSR_LOAD_COUNT       = 0x00004014,
	VMCS_ENTRY_INTR_INFO            = 0x00004016,
	VMCS_ENTRY_EXCEPTION_ERROR_CODE = 0x00004018,
	VMCS_ENTRY_INSTRUCTION_LEN      = 0x0000401a,
	VMCS_TPR_THRESHOLD              = 0x0000401c,
	VMCS_PROC_BASED_CTLS2           = 0x0000401e,
	VMCS_PLE_GAP                    = 0x00004020,
	VMCS_PLE_WINDOW                 = 0x00004022,
	/* 32-bit read-only data */
	VMCS_VM_INSTRUCTION_ERROR       = 0x00004400,
	VMCS_EXIT_REASON                = 0x00004402,
	VMCS_EXIT_INTR_INFO             = 0x00004404,
	VMCS_EXIT_INTR_ERROR_CODE       = 0x00004406,
	VMCS_IDT_VECTORING_INFO         = 0x00004408,
	VMCS_IDT_VECTORING_ERROR_CODE   = 0x0000440a,
	VMCS_EXIT_INSTRUCTION_LEN       = 0x0000440c,
	VMCS_EXIT_INSTRUCTION_INFO      = 0x0000440e,
	/* 32-bit guest state */
	VMCS_GUEST_ES_LIMIT             = 0x00004800,
	VMCS_GUEST_CS_LIMIT             = 0x00004802,
	VMCS_GUEST_SS_LIMIT             = 0x00004804,
	VMCS_GUEST_DS_LIMIT             = 0x00004806,
	VMCS_GUEST_FS_LIMIT             = 0x00004808,
	VMCS_GUEST_GS_LIMIT             = 0x0000480a,
	VMCS_GUEST_LDTR_LIMIT           = 0x0000480c,
	VMCS_GUEST_TR_LIMIT             = 0x0000480e,
	VMCS_GUEST_GDTR_LIMIT           = 0x00004810,
	VMCS_GUEST_IDTR_LIMIT           = 0x00004812,
	VMCS_GUEST_ES_AR                = 0x00004814,
	VMCS_GUEST_CS_AR                = 0x00004816,
	VMCS_GUEST_SS_AR                = 0x00004818,
	VMCS_GUEST_DS_AR                = 0x0000481a,
	VMCS_GUEST_FS_AR                = 0x0000481c,
	VMCS_GUEST_GS_AR                = 0x0000481e,
	VMCS_GUEST_LDTR_AR              = 0x00004820,
	VMCS_GUEST_TR_AR                = 0x00004822,
	VMCS_GUEST_INTERRUPTIBILITY     = 0x00004824,
	VMCS_GUEST_ACTIVITY_STATE       = 0x00004826,
	VMCS_GUEST_SMBASE               = 0x00004828,
	VMCS_GUEST_IA32_SYSENTER_CS     = 0x0000482a,
	VMCS_PREEMPTION_TIMER_VALUE     = 0x0000482e,
	/* 32-bit host state */
	VMCS_HOST_IA32_SYSENTER_CS      = 0x00004c00,
	/* natural-width control */
	VMCS_CR0_GUEST_HOST_MASK        = 0x00006000,
	VMCS_CR4_GUEST_HOST_MASK        = 0x00006002,
	VMCS_CR0_READ_SHADOW            = 0x00006004,
	VMCS_CR4_READ_SHADOW            = 0x00006006,
	/* natural-width read-only data */
	VMCS_EXIT_QUALIFICATION         = 0x00006400,
	VMCS_GUEST_LINEAR_ADDRESS       = 0x0000640a,
	/* natural-width guest state */
	VMCS_GUEST_CR0                  = 0x00006800,
	VMCS_GUEST_CR3                  = 0x00006802,
	VMCS_GUEST_CR4                  = 0x00006804,
	VMCS_GUEST_ES_BASE              = 0x00006806,
	VMCS_GUEST_CS_BASE              = 0x00006808,
	VMCS_GUEST_SS_BASE              = 0x0000680a,
	VMCS_GUEST_DS_BASE              = 0x0000680c,
	VMCS_GUEST_FS_BASE              = 0x0000680e,
	VMCS_GUEST_GS_BASE              = 0x00006810,
	VMCS_GUEST_LDTR_BASE            = 0x00006812,
	VMCS_GUEST_TR_BASE              = 0x00006814,
	VMCS_GUEST_GDTR_BASE            = 0x00006816,
	VMCS_GUEST_IDTR_BASE            = 0x00006818,
	VMCS_GUEST_DR7                  = 0x0000681a,
	VMCS_GUEST_RSP                  = 0x0000681c,
	VMCS_GUEST_RIP                  = 0x0000681e,
	VMCS_GUEST_RFLAGS               = 0x00006820,
	VMCS_GUEST_PENDING_DBG_EXCEPTIONS = 0x00006822,
	VMCS_GUEST_IA32_SYSENTER_ESP    = 0x00006824,
	VMCS_GUEST_IA32_SYSENTER_EIP    = 0x00006826,
	/* natural-width host state */
	VMCS_HOST_CR0                   = 0x00006c00,
	VMCS_HOST_CR3                   = 0x00006c02,
	VMCS_HOST_CR4                   = 0x00006c04,
	VMCS_HOST_FS_BASE               = 0x00006c06,
	VMCS_HOST_GS_BASE               = 0x00006c08,
	VMCS_HOST_TR_BASE               = 0x00006c0a,
	VMCS_HOST_GDTR_BASE             = 0x00006c0c,
	VMCS_HOST_IDTR_BASE             = 0x00006c0e,
	VMCS_HOST_IA32_SYSENTER_ESP     = 0x00006c10,
	VMCS_HOST_IA32_SYSENTER_EIP     = 0x00006c12,
	VMCS_HOST_RSP                   = 0x00006c14,
	VMCS_HOST_RIP                   = 0x00006c16,
};

/* Width of a field from its encoding, bits 14:13 (B.1). */
enum vmcs_width { VMCS_W16 = 0, VMCS_W64 = 1, VMCS_W32 = 2, VMCS_WNAT = 3 };
static inline enum vmcs_width vmcs_field_width(uint32_t field)
{
	return (enum vmcs_width)((field >> 13) & 3);
}
/* Bit 0 selects the high half of a 64-bit field (access type). */
static inline int vmcs_field_is_high(uint32_t field)
{
	return vmcs_field_width(field) == VMCS_W64 && (field & 1);
}

/* --- basic exit reasons (Appendix C) ------------------------------------------ */
enum vmx_exit_reason {
	EXIT_REASON_EXCEPTION_NMI       = 0,
	EXIT_REASON_EXTERNAL_INTERRUPT  = 1,
	EXIT_REASON_TRIPLE_FAULT        = 2,
	EXIT_REASON_INIT                = 3,
	EXIT_REASON_SIPI                = 4,
	EXIT_REASON_IO_SMI              = 5,
	EXIT_REASON_OTHER_SMI           = 6,
	EXIT_REASON_INTERRUPT_WINDOW    = 7,
	EXIT_REASON_NMI_WINDOW          = 8,
	EXIT_REASON_TASK_SWITCH         = 9,
	EXIT_REASON_CPUID               = 10,
	EXIT_REASON_GETSEC              = 11,
	EXIT_REASON_HLT                 = 12,
	EXIT_REASON_INVD                = 13,
	EXIT_REASON_INVLPG              = 14,
	EXIT_REASON_RDPMC               = 15,
	EXIT_REASON_RDTSC               = 16,
	EXIT_REASON_RSM                 = 17,
	EXIT_REASON_VMCALL              = 18,
	EXIT_REASON_VMCLEAR             = 19,
	EXIT_REASON_VMLAUNCH            = 20,
	EXIT_REASON_VMPTRLD             = 21,
	EXIT_REASON_VMPTRST             = 22,
	EXIT_REASON_VMREAD              = 23,
	EXIT_REASON_VMRESUME            = 24,
	EXIT_REASON_VMWRITE             = 25,
	EXIT_REASON_VMXOFF              = 26,
	EXIT_REASON_VMXON               = 27,
	EXIT_REASON_CR_ACCESS           = 28,
	EXIT_REASON_DR_ACCESS           = 29,
	EXIT_REASON_IO_INSTRUCTION      = 30,
	EXIT_REASON_RDMSR               = 31,
	EXIT_REASON_WRMSR               = 32,
	EXIT_REASON_ENTRY_FAIL_GUEST    = 33,
	EXIT_REASON_ENTRY_FAIL_MSR      = 34,
	EXIT_REASON_MWAIT               = 36,
	EXIT_REASON_MONITOR_TRAP_FLAG   = 37,
	EXIT_REASON_MONITOR             = 39,
	EXIT_REASON_PAUSE               = 40,
	EXIT_REASON_ENTRY_FAIL_MCE      = 41,
	EXIT_REASON_TPR_BELOW_THRESHOLD = 43,
	EXIT_REASON_APIC_ACCESS         = 44,
	EXIT_REASON_VIRTUALIZED_EOI     = 45,
	EXIT_REASON_GDTR_IDTR           = 46,
	EXIT_REASON_LDTR_TR             = 47,
	EXIT_REASON_EPT_VIOLATION       = 48,
	EXIT_REASON_EPT_MISCONFIG       = 49,
	EXIT_REASON_INVEPT              = 50,
	EXIT_REASON_RDTSCP              = 51,
	EXIT_REASON_PREEMPTION_TIMER    = 52,
	EXIT_REASON_INVVPID             = 53,
	EXIT_REASON_WBINVD              = 54,
	EXIT_REASON_XSETBV              = 55,
	EXIT_REASON_APIC_WRITE          = 56,
	EXIT_REASON_RDRAND              = 57,
	EXIT_REASON_INVPCID             = 58,
	EXIT_REASON_VMFUNC              = 59,
	EXIT_REASON_ENCLS               = 60,
	EXIT_REASON_RDSEED              = 61,
	EXIT_REASON_PML_FULL            = 62,
	EXIT_REASON_XSAVES              = 63,
	EXIT_REASON_XRSTORS             = 64,
	EXIT_REASON_MAX                 = 80,
};
/* Bit 31 of the exit-reason field: the VM entry failed (26.8). */
#define EXIT_REASON_ENTRY_FAILURE (1u << 31)

/* Guest activity states (25.4.2). */
enum vmx_activity { ACTIVITY_ACTIVE = 0, ACTIVITY_HLT = 1, ACTIVITY_SHUTDOWN = 2,
		    ACTIVITY_WAIT_SIPI = 3 };

#endif /* TV_VMX_DEFS_H */
