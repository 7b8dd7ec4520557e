/* SPDX-License-Identifier: MIT */
/*
 * netif.h - lwIP's network interface over a NIC of drivers/nic.h, the
 * poll loop step, and a UDP sender.
 *
 * NO_SYS=1: everything runs from one loop that calls net_poll(), which
 * collects received frames from the NIC (no interrupts), feeds them to
 * lwIP, and runs lwIP's timers (sys_check_timeouts, clocked by sys_now()
 * from the TSC).  At boot that loop is net_boot's; in VMX root it will be
 * the hypervisor's periodic hook.  One interface at a time.
 *
 * Addresses are IPv4 in host order (a.b.c.d = a << 24 | b << 16 | ...).
 *
 * Errors (negative): NET_E_ARG, NET_E_STATE (already up / not up),
 * NET_E_LWIP (lwIP refused: out of memory, no route, ...), NET_E_NIC
 * (the driver failed the frame).
 */
#ifndef TV_NETIF_H
#define TV_NETIF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drivers/nic.h"

#define NET_E_ARG   (-1)
#define NET_E_STATE (-2)
#define NET_E_LWIP  (-3)
#define NET_E_NIC   (-4)

struct net_ipcfg {
	bool dhcp;
	uint32_t ip;        /* static only */
	uint8_t prefix;     /* static only, 1..32 */
	uint32_t gw;        /* static only, 0 = none */
};

/*
 * net_if_up - add nic (initialised, link may still be down) as lwIP's
 * default interface and start DHCP or set the static address.  lwIP must
 * be initialised (net_init).  Returns 0, NET_E_ARG, NET_E_STATE or
 * NET_E_LWIP.
 */
int net_if_up(struct nic *nic, const struct net_ipcfg *c);

/* net_if_down - stop DHCP, remove the interface.  The NIC is left as is. */
void net_if_down(void);

/* net_if_address - the interface's IPv4 address, 0 while it has none. */
uint32_t net_if_address(void);

/*
 * net_poll - one step of the network loop: up to 64 received frames into
 * lwIP, expired lwIP timers, link state every second.  Cheap when idle
 * (one descriptor read).  Returns the number of frames received.
 */
int net_poll(void);

/*
 * net_resolve - has ARP resolved the next hop to ip?  Sends an ARP
 * request when not (at most once a second); call with net_poll() in a
 * loop.  Returns true once the hardware address is known.
 */
bool net_resolve(uint32_t ip);

/*
 * net_neighbor_mac - the Ethernet address frames to host_ip go to (host_ip
 * itself on-link, else the gateway), from lwIP's ARP table: true and mac
 * filled once net_resolve(host_ip) has answered true, false otherwise.
 */
bool net_neighbor_mac(uint32_t host_ip, uint8_t mac[6]);

struct udp_pcb;

/* A received datagram: valid only during the call. */
/* from_peer: the datagram came from the address and port the socket sends to. */
typedef void (*net_udp_recv_fn)(void *ctx, const void *data, size_t len, bool from_peer);

struct net_udp {
	struct udp_pcb *pcb;
	uint32_t peer_ip;        /* host order */
	uint16_t peer_port;
	net_udp_recv_fn recv;
	void *recv_ctx;
};

/*
 * net_udp_open - a UDP socket bound to an ephemeral port that sends to
 * ip:port.  Not connected: a connected lwIP pcb takes datagrams only from
 * its peer's port, and `tracevisor control` sends its CONTROL from a port
 * of its own (receivers see the machine as its address and this port).
 * The receive callback says which datagrams came from the peer.  Returns 0, NET_E_STATE (interface not up) or NET_E_LWIP.
 */
int net_udp_open(struct net_udp *u, uint32_t ip, uint16_t port);

/*
 * net_udp_send - one datagram of len bytes (at most 65507; more than
 * 1472 is fragmented by lwIP).  Returns 0, NET_E_ARG, NET_E_LWIP (no pbuf,
 * ARP queue full) or NET_E_NIC (transmit ring full: try again after
 * net_poll).
 */
int net_udp_send(struct net_udp *u, const void *data, size_t len);

void net_udp_close(struct net_udp *u);

/*
 * net_udp_set_recv - datagrams to the socket's port, from any address,
 * are handed to fn during net_poll() with from_peer set when they came
 * from the peer's address and port (the caller decides what a datagram
 * from elsewhere may do: only an authenticated CONTROL); longer ones
 * than NET_UDP_RX_MAX bytes are dropped.  fn NULL stops delivery.
 * Returns 0 or NET_E_ARG (socket not open).
 */
#define NET_UDP_RX_MAX 1500
int net_udp_set_recv(struct net_udp *u, net_udp_recv_fn fn, void *ctx);

#endif /* TV_NETIF_H */
