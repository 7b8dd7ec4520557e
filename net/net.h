/* SPDX-License-Identifier: MIT */
/*
 * net.h - tracevisor's network side: lwIP (NO_SYS=1, raw API) driven from
 * the hypervisor's own loop.  The NIC drivers and the export protocol
 * build on this.
 */
#ifndef TV_NET_H
#define TV_NET_H

#include <stdint.h>

/*
 * net_init - initialise lwIP once.  tsc_hz is the TSC frequency used for
 * lwIP's millisecond clock (sys_now); it must be non-zero.
 * Returns 0, or -1 if called twice or with tsc_hz == 0.
 */
int net_init(uint64_t tsc_hz);

#endif /* TV_NET_H */
