/* SPDX-License-Identifier: MIT */
/*
 * chainload.h - start the OS loader that would have run without tracevisor.
 */
#ifndef TV_CHAINLOAD_H
#define TV_CHAINLOAD_H

#include <efi.h>

#include "vmm/config.h"

/*
 * chainload - load and start cfg->loader from our own volume, or else the
 * next bootable BootOrder entry after BootCurrent.  Returns only when
 * nothing could be started (EFI_NOT_FOUND or the last load error, each
 * attempt logged with its reason) or when the started image returned
 * (its status).
 */
EFI_STATUS chainload(const struct tv_config *cfg);

#endif /* TV_CHAINLOAD_H */
