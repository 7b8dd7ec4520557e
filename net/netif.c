/* SPDX-License-Identifier: MIT */
/*
 * netif.c - lwIP netif over drivers/nic.h (the lwIP contrib shape: init,
 * linkoutput, input fed from the poll loop).
 */
#include "net/netif.h"

#include <string.h>

#include "lwip/dhcp.h"
#include "lwip/etharp.h"
#include "lwip/init.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/sys.h"
#include "lwip/timeouts.h"
#include "lwip/udp.h"
#include "netif/ethernet.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"

/* A full transmit ring is waited out this many times before the frame
 * is dropped (the device drains it at line rate). */
#define NET_TX_RETRIES 100000
#define NET_POLL_BUDGET 64

static struct netif tv_netif;
static struct nic *tv_nic;
static bool tv_up;
static uint32_t link_checked_ms, arp_sent_ms;
static uint32_t logged_ip;
static uint8_t tx_frame[NIC_FRAME_MAX];

static void ip_to_lwip(ip4_addr_t *a, uint32_t host)
{
	ip4_addr_set_u32(a, lwip_htonl(host));
}

static err_t tv_linkoutput(struct netif *netif, struct pbuf *p)
{
	const void *frame = p->payload;
	int rc = NIC_E_FULL;

	(void)netif;
	if (p->tot_len > sizeof(tx_frame))
		return ERR_BUF;
	/* One pbuf (net_udp_send's, ARP's) goes as it is; a chain is joined first. */
	if (p->next) {
		if (pbuf_copy_partial(p, tx_frame, p->tot_len, 0) != p->tot_len)
			return ERR_BUF;
		frame = tx_frame;
	}
	for (int i = 0; i < NET_TX_RETRIES && rc == NIC_E_FULL; i++) {
		rc = nic_tx(tv_nic, frame, p->tot_len);
		if (rc == NIC_E_FULL)
			hw_pause();
	}
	return rc == 0 ? ERR_OK : ERR_IF;
}

static void tv_status_cb(struct netif *netif)
{
	uint32_t ip = lwip_ntohl(ip4_addr_get_u32(netif_ip4_addr(netif)));

	if (ip && ip != logged_ip)
		log_info("net: address %u.%u.%u.%u%s", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255,
			 ip & 255, dhcp_supplied_address(netif) ? " (DHCP)" : "");
	logged_ip = ip;
}

static err_t tv_netif_init(struct netif *netif)
{
	netif->name[0] = 't';
	netif->name[1] = 'v';
	netif->output = etharp_output;
	netif->linkoutput = tv_linkoutput;
	netif->mtu = 1500;
	netif->hwaddr_len = ETH_HWADDR_LEN;
	memcpy(netif->hwaddr, tv_nic->mac, ETH_HWADDR_LEN);
	netif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET;
#if LWIP_NETIF_HOSTNAME
	netif->hostname = "tracevisor";
#endif
	return ERR_OK;
}

int net_if_up(struct nic *nic, const struct net_ipcfg *c)
{
	ip4_addr_t ip, mask, gw;

	if (!nic || !c || !nic->up || (!c->dhcp && (c->prefix < 1 || c->prefix > 32)))
		return NET_E_ARG;
	if (tv_up)
		return NET_E_STATE;
	tv_nic = nic;
	if (c->dhcp) {
		ip4_addr_set_zero(&ip);
		ip4_addr_set_zero(&mask);
		ip4_addr_set_zero(&gw);
	} else {
		ip_to_lwip(&ip, c->ip);
		ip_to_lwip(&mask, c->prefix == 32 ? 0xffffffffu : ~(0xffffffffu >> c->prefix));
		ip_to_lwip(&gw, c->gw);
	}
	if (!netif_add(&tv_netif, &ip, &mask, &gw, NULL, tv_netif_init, ethernet_input))
		return NET_E_LWIP;
	netif_set_status_callback(&tv_netif, tv_status_cb);
	netif_set_default(&tv_netif);
	netif_set_up(&tv_netif);
	if (nic_link_up(nic))
		netif_set_link_up(&tv_netif);
	link_checked_ms = sys_now();
	logged_ip = 0;
	tv_up = true;
	if (!c->dhcp) {
		tv_status_cb(&tv_netif);
		return 0;
	}
	if (dhcp_start(&tv_netif) != ERR_OK) {
		net_if_down();
		return NET_E_LWIP;
	}
	return 0;
}

void net_if_down(void)
{
	if (!tv_up)
		return;
	dhcp_stop(&tv_netif);
	netif_set_down(&tv_netif);
	netif_remove(&tv_netif);
	tv_up = false;
	tv_nic = NULL;
}

uint32_t net_if_address(void)
{
	if (!tv_up)
		return 0;
	return lwip_ntohl(ip4_addr_get_u32(netif_ip4_addr(&tv_netif)));
}

static void tv_input(void *ctx, const void *frame, size_t len)
{
	struct netif *netif = ctx;
	struct pbuf *p = pbuf_alloc(PBUF_RAW, (u16_t)len, PBUF_POOL);

	if (!p) {
		tv_nic->stats.rx_drops++;
		return;
	}
	pbuf_take(p, frame, (u16_t)len);
	if (netif->input(p, netif) != ERR_OK)
		pbuf_free(p);
}

int net_poll(void)
{
	int n;
	uint32_t now;

	if (!tv_up)
		return 0;
	n = nic_poll(tv_nic, tv_input, &tv_netif, NET_POLL_BUDGET);
	now = sys_now();
	if (now - link_checked_ms >= 1000) {
		bool up = nic_link_up(tv_nic);

		link_checked_ms = now;
		if (up && !netif_is_link_up(&tv_netif)) {
			log_info("net: link up");
			netif_set_link_up(&tv_netif);
		} else if (!up && netif_is_link_up(&tv_netif)) {
			log_warn("net: link down");
			netif_set_link_down(&tv_netif);
		}
	}
	sys_check_timeouts();
	return n < 0 ? 0 : n;
}

/* The neighbour a datagram to ip goes to: ip itself, or the gateway when off-link. */
static const ip4_addr_t *next_hop(const ip4_addr_t *ip)
{
	if (!ip4_addr_netcmp(ip, netif_ip4_addr(&tv_netif), netif_ip4_netmask(&tv_netif)) &&
	    !ip4_addr_isany_val(*netif_ip4_gw(&tv_netif)))
		return netif_ip4_gw(&tv_netif);   /* etharp_output's rule */
	return ip;
}

bool net_resolve(uint32_t host_ip)
{
	ip4_addr_t ip;
	const ip4_addr_t *hop, *found_ip;
	struct eth_addr *found_eth;
	uint32_t now = sys_now();

	if (!tv_up)
		return false;
	ip_to_lwip(&ip, host_ip);
	hop = next_hop(&ip);
	if (etharp_find_addr(&tv_netif, hop, &found_eth, &found_ip) >= 0)
		return true;
	if (arp_sent_ms == 0 || now - arp_sent_ms >= 1000) {
		arp_sent_ms = now ? now : 1;
		etharp_request(&tv_netif, hop);
	}
	return false;
}

bool net_neighbor_mac(uint32_t host_ip, uint8_t mac[6])
{
	ip4_addr_t ip;
	const ip4_addr_t *found_ip;
	struct eth_addr *found_eth;

	if (!tv_up)
		return false;
	ip_to_lwip(&ip, host_ip);
	if (etharp_find_addr(&tv_netif, next_hop(&ip), &found_eth, &found_ip) < 0)
		return false;
	memcpy(mac, found_eth->addr, 6);
	return true;
}

int net_udp_open(struct net_udp *u, uint32_t host_ip, uint16_t port)
{
	u->pcb = NULL;
	u->recv = NULL;
	u->recv_ctx = NULL;
	if (!tv_up)
		return NET_E_STATE;
	u->pcb = udp_new();
	if (!u->pcb)
		return NET_E_LWIP;
	u->peer_ip = host_ip;
	u->peer_port = port;
	if (udp_bind(u->pcb, IP_ANY_TYPE, 0) != ERR_OK) {
		net_udp_close(u);
		return NET_E_LWIP;
	}
	/*
	 * No UDP checksum (0: "none", RFC 768): every datagram of the export
	 * protocol carries its own CRC-32 (docs/PROTOCOL.md), and lwIP's
	 * checksum of a full datagram cost more than that CRC: 40% of the
	 * exporter's time per datagram in Bochs (7,400 of 18,300 TSC ticks,
	 * measured), where the export rate is bound by CPU 0's time.
	 */
	udp_setflags(u->pcb, udp_flags(u->pcb) | UDP_FLAGS_NOCHKSUM);
	return 0;
}

int net_udp_send(struct net_udp *u, const void *data, size_t len)
{
	ip_addr_t ip;
	struct pbuf *p;
	err_t err;

	if (!u->pcb || len > 65507)
		return NET_E_ARG;
	p = pbuf_alloc(PBUF_TRANSPORT, (u16_t)len, PBUF_RAM);
	if (!p)
		return NET_E_LWIP;
	memcpy(p->payload, data, len);
	ip_addr_set_ip4_u32(&ip, lwip_htonl(u->peer_ip));
	err = udp_sendto(u->pcb, p, &ip, u->peer_port);
	pbuf_free(p);
	if (err == ERR_IF)
		return NET_E_NIC;
	return err == ERR_OK ? 0 : NET_E_LWIP;
}

static void tv_udp_recv(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr,
			u16_t port)
{
	static uint8_t rx[NET_UDP_RX_MAX];
	struct net_udp *u = arg;

	bool from_peer;

	(void)pcb;
	from_peer = u && addr && IP_IS_V4(addr) &&
		    ip4_addr_get_u32(ip_2_ip4(addr)) == lwip_htonl(u->peer_ip) &&
		    port == u->peer_port;
	if (u && u->recv && p->tot_len <= sizeof(rx) &&
	    pbuf_copy_partial(p, rx, p->tot_len, 0) == p->tot_len)
		u->recv(u->recv_ctx, rx, p->tot_len, from_peer);
	pbuf_free(p);
}

int net_udp_set_recv(struct net_udp *u, net_udp_recv_fn fn, void *ctx)
{
	if (!u || !u->pcb)
		return NET_E_ARG;
	u->recv = fn;
	u->recv_ctx = ctx;
	udp_recv(u->pcb, fn ? tv_udp_recv : NULL, fn ? u : NULL);
	return 0;
}

void net_udp_close(struct net_udp *u)
{
	if (u->pcb)
		udp_remove(u->pcb);
	u->pcb = NULL;
}
