/* SPDX-License-Identifier: MIT */
/*
 * net_boot.h - the network at boot: find the configured NIC, take it away
 * from the firmware, and (net_selftest = N) prove the link end to end
 * before the OS starts.
 */
#ifndef TV_NET_BOOT_H
#define TV_NET_BOOT_H

#include "vmm/config.h"

/*
 * net_boot - with lwIP initialised (net_init): select the NIC per nic=,
 * disconnect the firmware's drivers from it, and when net_selftest is set
 * bring it up (DHCP or static address), stream the self-test records to
 * receiver=, log "net: self-test ok ..." or "net: self-test FAILED ...",
 * and quiesce the NIC (reset, bus mastering off) so that nothing DMAs
 * into the loader memory the OS takes back.  Never fails the boot:
 * problems are logged.
 */
void net_boot(const struct tv_config *cfg);

#endif /* TV_NET_BOOT_H */
