/* SPDX-License-Identifier: MIT */
/*
 * net_boot.c - NIC selection, firmware disconnect and the link self-test,
 * run by the firmware-loaded image before the blue pill.
 *
 * Everything set up here lives in loader and boot-services memory that
 * the OS reclaims, so the NIC is reset before returning: the resident
 * copy sets it up again in reserved memory (docs/NET.md).
 */
#include "boot/net_boot.h"

#include <efi.h>
#include <efipciio.h>
#include <stdio.h>
#include <string.h>

#include "boot/efi_util.h"
#include "drivers/nic.h"
#include "drivers/pci.h"
#include "lwip/sys.h"
#include "net/netif.h"
#include "net/selftest.h"
#include "vmm/log.h"

#define NET_ADDR_TIMEOUT_MS 15000   /* link and DHCP */
#define NET_ARP_TIMEOUT_MS  5000
#define NET_SEND_TIMEOUT_MS 30000   /* the whole stream */

static EFI_GUID pci_io_guid = EFI_PCI_IO_PROTOCOL_GUID;
static struct nic boot_nic;

static void ip_text(char *buf, size_t len, uint32_t ip)
{
	snprintf(buf, len, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 255, (ip >> 8) & 255, ip & 255);
}

/*
 * Detach every firmware driver (OVMF's VirtioNetDxe, an option ROM's
 * UNDI, SNP/MNP above them) from the PCI I/O handle of the NIC: while
 * they are bound the firmware polls the NIC and steals received frames.
 */
static void disconnect_firmware(const struct pci_addr *a)
{
	EFI_HANDLE *handles = NULL;
	UINTN count = 0;
	EFI_STATUS st;

	st = efi_bs->LocateHandleBuffer(ByProtocol, &pci_io_guid, NULL, &count, &handles);
	if (EFI_ERROR(st)) {
		log_warn("net: no PCI I/O handles (%s); firmware drivers not disconnected",
			 efi_strerror(st));
		return;
	}
	for (UINTN i = 0; i < count; i++) {
		EFI_PCI_IO_PROTOCOL *io;
		UINTN seg, bus, dev, fn;

		if (EFI_ERROR(efi_bs->HandleProtocol(handles[i], &pci_io_guid, (void **)&io)))
			continue;
		if (EFI_ERROR(io->GetLocation(io, &seg, &bus, &dev, &fn)))
			continue;
		if (seg != 0 || bus != a->bus || dev != a->dev || fn != a->fn)
			continue;
		st = efi_bs->DisconnectController(handles[i], NULL, NULL);
		if (EFI_ERROR(st) && st != EFI_NOT_FOUND)
			log_warn("net: DisconnectController on the NIC: %s", efi_strerror(st));
		else
			log_info("net: firmware drivers disconnected from %02x:%02x.%u",
				 a->bus, a->dev, a->fn);
		break;
	}
	efi_bs->FreePool(handles);
}

/* Poll until cond(arg) holds or ms pass; returns whether it held. */
static bool poll_until(bool (*cond)(uint32_t), uint32_t arg, uint32_t ms)
{
	uint32_t t0 = sys_now();

	while (!cond(arg)) {
		if (sys_now() - t0 >= ms)
			return false;
		net_poll();
	}
	return true;
}

static bool has_address(uint32_t unused)
{
	(void)unused;
	return net_if_address() != 0;
}

static bool resolved(uint32_t ip)
{
	return net_resolve(ip);
}

/* Send one datagram, waiting out a full ring (ARP and TX reclaim run in net_poll). */
static int send_retry(struct net_udp *u, const void *d, size_t len, uint32_t deadline_ms)
{
	int rc;

	for (;;) {
		rc = net_udp_send(u, d, len);
		if (rc == 0 || (int32_t)(sys_now() - deadline_ms) >= 0)
			return rc;
		net_poll();
	}
}

static void selftest(const struct tv_config *cfg)
{
	static uint8_t dgram[SELFTEST_HDR_BYTES + SELFTEST_PER_DGRAM * SELFTEST_REC_BYTES];
	struct net_udp u;
	uint32_t total = cfg->net_selftest, sent = 0, nd = 0;
	uint32_t session = tv_rand32(), t0, deadline;
	char rx[20];
	int rc = 0;

	ip_text(rx, sizeof(rx), cfg->receiver_ip);
	if (!poll_until(resolved, cfg->receiver_ip, NET_ARP_TIMEOUT_MS)) {
		log_err("net: self-test FAILED: no ARP reply for the next hop to %s", rx);
		return;
	}
	if (net_udp_open(&u, cfg->receiver_ip, cfg->receiver_port)) {
		log_err("net: self-test FAILED: cannot open a UDP socket");
		return;
	}
	t0 = sys_now();
	deadline = t0 + NET_SEND_TIMEOUT_MS;
	while (sent < total) {
		uint32_t n = total - sent < SELFTEST_PER_DGRAM ? total - sent : SELFTEST_PER_DGRAM;
		size_t len = selftest_datagram(dgram, sizeof(dgram), session, sent, n, total);

		rc = send_retry(&u, dgram, len, deadline);
		if (rc)
			break;
		sent += n;
		nd++;
		net_poll();
	}
	if (rc == 0) {
		/* The end marker, three times: the receiver counts one. */
		size_t len = selftest_datagram(dgram, sizeof(dgram), session, sent, 0, total);

		for (int i = 0; i < 3 && rc == 0; i++)
			rc = send_retry(&u, dgram, len, deadline);
	}
	/* Let the last frames leave before the NIC is reset. */
	for (uint32_t t = sys_now(); sys_now() - t < 100;)
		net_poll();
	net_udp_close(&u);
	if (rc) {
		log_err("net: self-test FAILED after %u of %u records: send error %d (tx drops %llu)",
			sent, total, rc, (unsigned long long)boot_nic.stats.tx_drops);
		return;
	}
	log_info("net: self-test ok: %u records in %u datagrams to %s:%u, session %08x, %u ms; tx %llu frames, rx %llu, drops %llu/%llu, errors %llu",
		 total, nd, rx, cfg->receiver_port, session, sys_now() - t0,
		 (unsigned long long)boot_nic.stats.tx_frames,
		 (unsigned long long)boot_nic.stats.rx_frames,
		 (unsigned long long)boot_nic.stats.tx_drops,
		 (unsigned long long)boot_nic.stats.rx_drops,
		 (unsigned long long)boot_nic.stats.errors);
}

static void bring_up_and_test(const struct tv_config *cfg)
{
	EFI_PHYSICAL_ADDRESS dma = 0xffffffffu;   /* below 4 GiB: any device can reach it */
	UINTN pages = NIC_DMA_BYTES / 4096;
	struct net_ipcfg ipc = { cfg->net_dhcp, cfg->net_ip, cfg->net_prefix, cfg->net_gw };
	char mac[18];
	EFI_STATUS st;
	int rc;

	st = efi_bs->AllocatePages(AllocateMaxAddress, EfiBootServicesData, pages, &dma);
	if (EFI_ERROR(st)) {
		log_err("net: no memory for the NIC's rings: %s", efi_strerror(st));
		return;
	}
	rc = nic_init(&boot_nic, (void *)(uintptr_t)dma, NIC_DMA_BYTES);
	if (rc) {
		log_err("net: %s init failed: %s", boot_nic.model, nic_strerror(rc));
		goto out;
	}
	nic_format_mac(mac, boot_nic.mac);
	log_info("net: %s up, MAC %s, link %s", boot_nic.model, mac,
		 nic_link_up(&boot_nic) ? "up" : "down (waiting)");
	rc = net_if_up(&boot_nic, &ipc);
	if (rc) {
		log_err("net: lwIP interface not added (%d)", rc);
		goto out;
	}
	if (!poll_until(has_address, 0, NET_ADDR_TIMEOUT_MS)) {
		log_err("net: self-test FAILED: no %s within %u s (link %s)",
			cfg->net_dhcp ? "DHCP lease" : "address", NET_ADDR_TIMEOUT_MS / 1000,
			nic_link_up(&boot_nic) ? "up" : "down");
	} else {
		selftest(cfg);
	}
	net_if_down();
out:
	/* Quiesce before handover: this memory goes back to the OS. */
	nic_stop(&boot_nic, &pci_cfg_ports);
	log_info("net: %s quiesced (reset, bus mastering off); rx %llu frames, tx %llu",
		 boot_nic.model, (unsigned long long)boot_nic.stats.rx_frames,
		 (unsigned long long)boot_nic.stats.tx_frames);
	efi_bs->FreePages(dma, pages);
}

void net_boot(const struct tv_config *cfg)
{
	struct nic_want want;
	struct pci_dev d;
	char mac[18];
	int rc;

	if (cfg->nic == CONFIG_NIC_OFF) {
		log_info("net: nic=off");
		return;
	}
	memset(&want, 0, sizeof(want));
	want.kind = cfg->nic == CONFIG_NIC_PCI ? NIC_WANT_PCI :
		    cfg->nic == CONFIG_NIC_MAC ? NIC_WANT_MAC : NIC_WANT_AUTO;
	want.addr.bus = cfg->nic_pci[0];
	want.addr.dev = cfg->nic_pci[1];
	want.addr.fn = cfg->nic_pci[2];
	memcpy(want.mac, cfg->nic_mac, 6);
	rc = nic_select(&boot_nic, &pci_cfg_ports, &want);
	if (rc) {
		if (want.kind == NIC_WANT_AUTO)
			log_info("net: no supported NIC (e1000 family, virtio-net); network off");
		else
			log_err("net: the NIC named by nic= is not there or not supported; network off");
		return;
	}
	d = boot_nic.pci;
	nic_format_mac(mac, boot_nic.mac);
	log_info("net: %s (%04x:%04x) at %02x:%02x.%u, driver %s, MAC %s", boot_nic.model,
		 d.vendor, d.device, d.addr.bus, d.addr.dev, d.addr.fn, boot_nic.drv->name, mac);
	disconnect_firmware(&d.addr);
	/* The firmware's driver may have restored the command register on
	 * its way out: attach again (memory/I/O decoding, bus mastering). */
	rc = nic_attach(&boot_nic, &pci_cfg_ports, &d);
	if (rc) {
		log_err("net: %s lost after the firmware let go: %s", d.vendor == 0x1af4 ?
			"virtio-net" : "NIC", nic_strerror(rc));
		return;
	}
	if (!cfg->net_selftest) {
		log_info("net: self-test off (net_selftest)");
		return;
	}
	bring_up_and_test(cfg);
}
