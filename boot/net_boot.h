/* SPDX-License-Identifier: MIT */
/*
 * net_boot.h - the network at boot: find the configured NIC, take it away
 * from the firmware, and (net_selftest = N) prove the link end to end
 * before the OS starts.
 */
#ifndef TV_NET_BOOT_H
#define TV_NET_BOOT_H

#include <stdint.h>

#include "drivers/pci.h"
#include "vmm/config.h"

/*
 * net_boot - with lwIP initialised (net_init): select the NIC per nic=,
 * disconnect the firmware's drivers from it, and when net_selftest = N is
 * set bring it up (DHCP or static address) and prove the link through the
 * export protocol: N deterministic branch records in a ring of their own
 * (docs/NET.md, "Link self-test"), exported with net/export.c until the
 * receiver at receiver= has acknowledged every one (or a timeout), then
 * "net: self-test ok ..." or "net: self-test FAILED ..."; the NIC is then
 * quiesced (reset, bus mastering off) so that nothing DMAs into the
 * loader memory the OS takes back.  tsc_hz: the measured TSC rate.
 * Returns 0 with *nic set when a NIC was selected (the resident copy can
 * take it over), -1 when there is none (nic = off, none found, lost).
 * Never fails the boot: problems are logged.
 */
int net_boot(const struct tv_config *cfg, uint64_t tsc_hz, struct pci_dev *nic);

#endif /* TV_NET_BOOT_H */
