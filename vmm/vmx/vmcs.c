/* SPDX-License-Identifier: MIT */
/*
 * vmcs.c - VMREAD/VMWRITE with the failure reported, and the VMCS dump
 * the panic paths log.
 *
 * SDM 3C 31.2 conventions: VMfailInvalid (no current VMCS) leaves no
 * error number; VMfailValid stores one in the VM-instruction error field
 * (31.4), which we read and log with its text.
 */
#include <stdio.h>

#include "vmm/exit/exit.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/vmx/vcpu.h"
#include "vmm/vmx/vmx.h"

struct vmcs_field_name {
	uint32_t field;
	const char *name;
};

#define FIELD(f) { VMCS_##f, #f }

/*
 * Every field tracevisor knows, in encoding order within each group (the
 * dump groups them by encoding type, bits 11:10: control, read-only
 * exit information, guest state, host state; SDM 3C B.1).
 */
static const struct vmcs_field_name vmcs_names[] = {
	/* control */
	FIELD(VPID),
	FIELD(IO_BITMAP_A), FIELD(IO_BITMAP_B), FIELD(MSR_BITMAP),
	FIELD(EXIT_MSR_STORE_ADDR), FIELD(EXIT_MSR_LOAD_ADDR), FIELD(ENTRY_MSR_LOAD_ADDR),
	FIELD(TSC_OFFSET), FIELD(EPT_POINTER),
	FIELD(PIN_BASED_CTLS), FIELD(PROC_BASED_CTLS), FIELD(PROC_BASED_CTLS2),
	FIELD(EXIT_CTLS), FIELD(ENTRY_CTLS),
	FIELD(EXCEPTION_BITMAP), FIELD(PF_ERROR_CODE_MASK), FIELD(PF_ERROR_CODE_MATCH),
	FIELD(CR3_TARGET_COUNT), FIELD(EXIT_MSR_STORE_COUNT), FIELD(EXIT_MSR_LOAD_COUNT),
	FIELD(ENTRY_MSR_LOAD_COUNT), FIELD(ENTRY_INTR_INFO), FIELD(ENTRY_EXCEPTION_ERROR_CODE),
	FIELD(ENTRY_INSTRUCTION_LEN), FIELD(TPR_THRESHOLD), FIELD(PLE_GAP), FIELD(PLE_WINDOW),
	FIELD(CR0_GUEST_HOST_MASK), FIELD(CR4_GUEST_HOST_MASK),
	FIELD(CR0_READ_SHADOW), FIELD(CR4_READ_SHADOW),
	/* read-only data: the last exit */
	FIELD(VM_INSTRUCTION_ERROR), FIELD(EXIT_REASON), FIELD(EXIT_QUALIFICATION),
	FIELD(EXIT_INTR_INFO), FIELD(EXIT_INTR_ERROR_CODE),
	FIELD(IDT_VECTORING_INFO), FIELD(IDT_VECTORING_ERROR_CODE),
	FIELD(EXIT_INSTRUCTION_LEN), FIELD(EXIT_INSTRUCTION_INFO),
	FIELD(GUEST_PHYSICAL_ADDRESS), FIELD(GUEST_LINEAR_ADDRESS),
	/* guest state */
	FIELD(GUEST_CR0), FIELD(GUEST_CR3), FIELD(GUEST_CR4), FIELD(GUEST_DR7),
	FIELD(GUEST_RIP), FIELD(GUEST_RSP), FIELD(GUEST_RFLAGS),
	FIELD(GUEST_CS_SELECTOR), FIELD(GUEST_CS_BASE), FIELD(GUEST_CS_LIMIT), FIELD(GUEST_CS_AR),
	FIELD(GUEST_SS_SELECTOR), FIELD(GUEST_SS_BASE), FIELD(GUEST_SS_LIMIT), FIELD(GUEST_SS_AR),
	FIELD(GUEST_DS_SELECTOR), FIELD(GUEST_DS_BASE), FIELD(GUEST_DS_LIMIT), FIELD(GUEST_DS_AR),
	FIELD(GUEST_ES_SELECTOR), FIELD(GUEST_ES_BASE), FIELD(GUEST_ES_LIMIT), FIELD(GUEST_ES_AR),
	FIELD(GUEST_FS_SELECTOR), FIELD(GUEST_FS_BASE), FIELD(GUEST_FS_LIMIT), FIELD(GUEST_FS_AR),
	FIELD(GUEST_GS_SELECTOR), FIELD(GUEST_GS_BASE), FIELD(GUEST_GS_LIMIT), FIELD(GUEST_GS_AR),
	FIELD(GUEST_LDTR_SELECTOR), FIELD(GUEST_LDTR_BASE), FIELD(GUEST_LDTR_LIMIT), FIELD(GUEST_LDTR_AR),
	FIELD(GUEST_TR_SELECTOR), FIELD(GUEST_TR_BASE), FIELD(GUEST_TR_LIMIT), FIELD(GUEST_TR_AR),
	FIELD(GUEST_GDTR_BASE), FIELD(GUEST_GDTR_LIMIT), FIELD(GUEST_IDTR_BASE), FIELD(GUEST_IDTR_LIMIT),
	FIELD(GUEST_IA32_EFER), FIELD(GUEST_IA32_PAT), FIELD(GUEST_IA32_DEBUGCTL),
	FIELD(GUEST_IA32_PERF_GLOBAL_CTRL), FIELD(GUEST_IA32_RTIT_CTL), FIELD(GUEST_IA32_LBR_CTL),
	FIELD(GUEST_IA32_SYSENTER_CS), FIELD(GUEST_IA32_SYSENTER_ESP), FIELD(GUEST_IA32_SYSENTER_EIP),
	FIELD(GUEST_INTERRUPTIBILITY), FIELD(GUEST_ACTIVITY_STATE),
	FIELD(GUEST_PENDING_DBG_EXCEPTIONS), FIELD(GUEST_SMBASE),
	FIELD(VMCS_LINK_POINTER), FIELD(PREEMPTION_TIMER_VALUE),
	{ VMCS_GUEST_PDPTE(0), "GUEST_PDPTE0" }, { VMCS_GUEST_PDPTE(1), "GUEST_PDPTE1" },
	{ VMCS_GUEST_PDPTE(2), "GUEST_PDPTE2" }, { VMCS_GUEST_PDPTE(3), "GUEST_PDPTE3" },
	/* host state */
	FIELD(HOST_CR0), FIELD(HOST_CR3), FIELD(HOST_CR4), FIELD(HOST_RIP), FIELD(HOST_RSP),
	FIELD(HOST_CS_SELECTOR), FIELD(HOST_SS_SELECTOR), FIELD(HOST_DS_SELECTOR),
	FIELD(HOST_ES_SELECTOR), FIELD(HOST_FS_SELECTOR), FIELD(HOST_GS_SELECTOR),
	FIELD(HOST_TR_SELECTOR), FIELD(HOST_FS_BASE), FIELD(HOST_GS_BASE), FIELD(HOST_TR_BASE),
	FIELD(HOST_GDTR_BASE), FIELD(HOST_IDTR_BASE),
	FIELD(HOST_IA32_EFER), FIELD(HOST_IA32_PAT), FIELD(HOST_IA32_PERF_GLOBAL_CTRL),
	FIELD(HOST_IA32_SYSENTER_CS), FIELD(HOST_IA32_SYSENTER_ESP), FIELD(HOST_IA32_SYSENTER_EIP),
};

#undef FIELD

static const char *field_name(uint32_t field)
{
	for (size_t i = 0; i < sizeof(vmcs_names) / sizeof(vmcs_names[0]); i++)
		if (vmcs_names[i].field == field)
			return vmcs_names[i].name;
	return "?";
}

/* Log a failed VMREAD/VMWRITE: field, and for VMfailValid the error (31.4). */
static void report_failure(const char *insn, uint32_t field, int rc)
{
	uint64_t err = 0;

	if (rc == HW_VMX_FAIL_VALID) {
		hw_vmread(VMCS_VM_INSTRUCTION_ERROR, &err);
		log_err("vmcs: %s %s (%#x) failed: VM-instruction error %llu (%s)", insn,
			field_name(field), field, (unsigned long long)err,
			vmx_instruction_error_text((uint32_t)err));
	} else {
		log_err("vmcs: %s %s (%#x) failed: VMfailInvalid (no current VMCS)", insn,
			field_name(field), field);
	}
}

int vmcs_read(uint32_t field, uint64_t *value)
{
	int rc = hw_vmread(field, value);

	if (rc) {
		*value = 0;
		report_failure("VMREAD", field, rc);
	}
	return rc;
}

int vmcs_write(uint32_t field, uint64_t value)
{
	int rc = hw_vmwrite(field, value);

	if (rc)
		report_failure("VMWRITE", field, rc);
	return rc;
}

uint64_t vmcs_get(uint32_t field)
{
	uint64_t v = 0;

	vmcs_read(field, &v);
	return v;
}

static const char *const group_name[4] = { "control", "exit-info", "guest", "host" };

/*
 * vmcs_dump - every field above at err, a few per line, grouped.  Reads
 * with hw_vmread directly: a field this CPU lacks (error 12) prints as
 * "n/a" instead of logging a failure per field.  The VM-instruction error
 * is read first, since each failed VMREAD overwrites it.
 */
void vmcs_dump(void)
{
	char line[LOG_MAX_LINE];
	uint64_t err = 0;
	int rc;

	rc = hw_vmread(VMCS_VM_INSTRUCTION_ERROR, &err);
	if (rc == HW_VMX_FAIL_INVALID) {
		log_err("vmcs dump: no current VMCS");
		return;
	}
	log_err("vmcs dump: VM-instruction error %llu (%s)", (unsigned long long)err,
		err ? vmx_instruction_error_text((uint32_t)err) : "none");

	for (uint32_t group = 0; group < 4; group++) {
		size_t len = 0, in_line = 0;

		for (size_t i = 0; i < sizeof(vmcs_names) / sizeof(vmcs_names[0]); i++) {
			const struct vmcs_field_name *f = &vmcs_names[i];
			uint64_t v = 0;
			int n;

			if (((f->field >> 10) & 3) != group)
				continue;
			if (in_line == 0)
				len = (size_t)snprintf(line, sizeof(line), "vmcs %s:", group_name[group]);
			if (hw_vmread(f->field, &v) == HW_VMX_OK)
				n = snprintf(line + len, sizeof(line) - len, " %s=%#llx", f->name,
					     (unsigned long long)v);
			else
				n = snprintf(line + len, sizeof(line) - len, " %s=n/a", f->name);
			if (n > 0)
				len += (size_t)n;
			if (len >= sizeof(line))
				len = sizeof(line) - 1;
			if (++in_line == 4) {
				log_err("%s", line);
				in_line = 0;
			}
		}
		if (in_line)
			log_err("%s", line);
	}
}
