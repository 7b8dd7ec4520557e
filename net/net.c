/* SPDX-License-Identifier: MIT */
/*
 * net.c - lwIP bring-up.
 */
#include "net/net.h"

#include "lwip/init.h"
#include "net/lwip_port.h"
#include "vmm/log.h"

static int net_ready;

int net_init(uint64_t tsc_hz)
{
	if (net_ready || tsc_hz == 0)
		return -1;
	lwip_port_set_clock(tsc_hz);
	lwip_init();
	net_ready = 1;
	log_info("net: lwIP %s initialised (NO_SYS, raw API)", LWIP_VERSION_STRING);
	return 0;
}
