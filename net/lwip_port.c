/* SPDX-License-Identifier: MIT */
/*
 * lwip_port.c - lwIP's platform layer for NO_SYS=1 on bare metal:
 * a millisecond clock from the TSC, diagnostics into the logger, a PRNG
 * for ports and ISNs.
 */
#include "net/lwip_port.h"

#include <stdarg.h>

#include "lwip/arch.h"
#include "lwip/sys.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"

static uint64_t tsc_per_ms;
static uint64_t tsc_base;
static uint64_t rand_state;

void lwip_port_set_clock(uint64_t tsc_hz)
{
	tsc_per_ms = tsc_hz / 1000 ? tsc_hz / 1000 : 1;
	tsc_base = hw_rdtsc();
	rand_state = tsc_base | 1;
}

u32_t sys_now(void)
{
	if (!tsc_per_ms)
		return 0;
	return (u32_t)((hw_rdtsc() - tsc_base) / tsc_per_ms);
}

uint32_t tv_rand32(void)
{
	/* xorshift64*: good enough for ephemeral ports and TCP ISNs. */
	rand_state ^= rand_state >> 12;
	rand_state ^= rand_state << 25;
	rand_state ^= rand_state >> 27;
	return (uint32_t)((rand_state * 0x2545f4914f6cdd1dull) >> 32);
}

void tv_lwip_diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tv_vlog(LOG_DEBUG, fmt, ap);
	va_end(ap);
}

void tv_lwip_assert(const char *msg, const char *file, int line)
{
	log_err("lwip: assertion \"%s\" failed at %s:%d", msg, file, line);
	hw_stop_cpu();
}
