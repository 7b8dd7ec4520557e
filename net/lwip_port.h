/* SPDX-License-Identifier: MIT */
/*
 * lwip_port.h - the platform hooks lwIP's arch/cc.h refers to.
 */
#ifndef TV_LWIP_PORT_H
#define TV_LWIP_PORT_H

#include <stdint.h>

/* lwip_port_set_clock - sys_now() counts milliseconds of this TSC rate. */
void lwip_port_set_clock(uint64_t tsc_hz);

#endif /* TV_LWIP_PORT_H */
