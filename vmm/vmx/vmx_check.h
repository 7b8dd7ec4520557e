/* SPDX-License-Identifier: MIT */
/*
 * vmx_check.h - the VM-entry checks of SDM 3C 27.2-27.3, in software.
 *
 * When a VM entry fails its checks the CPU says only "invalid control
 * field", "invalid host state" or "invalid guest state".  Running the
 * same checks before VMLAUNCH names the exact rule and field, so a field
 * failure can be diagnosed from the log alone.  This is a subset: the
 * checks a blue pill of live 64-bit firmware state can plausibly break.
 * A pass does not prove the hardware will accept the VMCS; a failure
 * is always a real violation.
 */
#ifndef TV_VMX_CHECK_H
#define TV_VMX_CHECK_H

#include <stddef.h>

#include "vmm/vmx/vmx_caps.h"

/*
 * vmx_check_vmcs - read the current VMCS (vmcs_read) and check it.
 * Returns 0, or -1 with "SDM section: rule (field = value)" in why.
 */
int vmx_check_vmcs(const struct vmx_caps *caps, char *why, size_t whylen);

#endif /* TV_VMX_CHECK_H */
