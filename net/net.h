/* SPDX-License-Identifier: MIT */
/*
 * net.h - tracevisor's network side: lwIP (NO_SYS=1, raw API) driven from
 * the hypervisor's own loop, and the export link that carries the trace
 * rings to the receiver (docs/PROTOCOL.md) over it.
 *
 * The export link is the exporter of net/export.h (pure) bound to one UDP
 * socket of net/netif.h: it waits for an address and for ARP to resolve
 * the next hop to the receiver, then every net_link_step() runs net_poll()
 * (received datagrams go to export_input) and export_poll().  Two users:
 * the boot-time self-test (boot/net_boot.c, in the firmware-loaded image)
 * and the resident copy in VMX root (net_resident_ops, poll hook).
 *
 * Errors (negative): NET_E_* of net/netif.h, or PROTO_ERR_* / TRACE_ERR_*
 * from export_init / export_attach.
 */
#ifndef TV_NET_H
#define TV_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "net/export.h"
#include "net/netif.h"
#include "vmm/hv.h"

/*
 * net_init - initialise lwIP once per image.  tsc_hz is the TSC frequency
 * used for lwIP's millisecond clock (sys_now); it must be non-zero.
 * Returns 0, or -1 if called twice or with tsc_hz == 0.
 */
int net_init(uint64_t tsc_hz);

/* --- the export link ------------------------------------------------------ */

enum net_link_state { NET_LINK_WAIT_ADDR, NET_LINK_WAIT_ARP, NET_LINK_UP };

struct net_link {
	struct exporter *ex;          /* owned by the caller (large) */
	struct net_udp udp;
	enum net_link_state state;
	uint32_t receiver_ip;
	uint16_t receiver_port;
	struct tv_trace_ring *rings[EXPORT_MAX_CPUS];
	uint32_t nrings;
	uint64_t session;
	uint32_t open_errors;         /* UDP socket could not be opened */
	uint64_t last_rx_tsc;         /* TSC of the last datagram from the receiver, 0: none
				       * (atomic: the stalled CPUs read it, overflow = wait) */
};

/* What the HELLO says about this machine, besides what CPUID tells. */
struct net_link_cfg {
	uint32_t receiver_ip;
	uint16_t receiver_port;
	const uint8_t *key;           /* control key, keylen 0: none */
	size_t keylen;
	const uint8_t *data_key;      /* the data path's key, data_keylen 0: unsealed */
	size_t data_keylen;
	const char *machine;
	uint32_t caps;                /* TVP_CAP_SOURCE bits (TVP_CAP_CONTROL added with a key) */
	uint8_t source, overflow;     /* of the rings */
	uint64_t tsc_hz;
	const struct export_ops *ops; /* CONTROL handlers; NULL: every op but NOP
				       * is answered "unsupported" */
	void *ops_ctx;
};

/*
 * net_link_start - export_init over rings[0..nrings) (NULL entries: CPUs
 * that do not trace, their streams stay unattached), HELLO from CPUID
 * (vendor, family, model, stepping), c and the rings' size; a random
 * session id and, sealed (c->data_key), a random nonce_m (RDRAND where
 * CPUID says so, else TSC jitter).  Logs whether the data path is sealed.  The interface must be up (net_if_up).  now is the TSC.
 * Returns 0, PROTO_ERR_INVAL (no rings, too many) or export_attach's error.
 */
int net_link_start(struct net_link *l, struct exporter *ex, const struct net_link_cfg *c,
		   struct tv_trace_ring *const *rings, uint32_t nrings, uint64_t now);

/*
 * net_link_step - one round: net_poll(), then (once there is an address
 * and the receiver's next hop is resolved) export_poll(now).
 */
void net_link_step(struct net_link *l, uint64_t now);

/*
 * net_link_drained - has the receiver acknowledged every record ring cpu
 * has produced so far?  Reads the exporter's state without writing it:
 * any CPU may ask while the link's own CPU steps.
 */
bool net_link_drained(const struct net_link *l, uint32_t cpu);

/* net_link_stop - close the socket (the exporter's state stays readable). */
void net_link_stop(struct net_link *l);

/* --- the resident copy ---------------------------------------------------- */

/* hv_boot_info.net_ops of the copy (vmm/hv.h). */
extern const struct hv_net_ops net_resident_ops;

/*
 * net_resident_poll - the poll hook (hv_set_poll_hook, on the NIC's CPU):
 * net_link_step, loss and status lines.  Does nothing until start ran.
 */
void net_resident_poll(void *ctx);

#endif /* TV_NET_H */
