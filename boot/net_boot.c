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
#include "net/net.h"
#include "net/netif.h"
#include "net/rawframe.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/trace/ring.h"

#define NET_ADDR_TIMEOUT_MS 15000   /* link and DHCP */
#define NET_SEND_TIMEOUT_MS 30000   /* ARP and the whole stream, acknowledged */

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

/*
 * The self-test's record pattern (docs/NET.md, "Link self-test";
 * tests/qemu/net.sh computes the same): record i is a branch from
 * 0x100000 + 64 i to from + 16 + 8 (i mod 5), of kind jcc, jmp, call, ret
 * for i mod 4 = 0..3, without TSC.
 */
static const enum tv_branch_kind selftest_kinds[4] = {
	TV_BR_JCC, TV_BR_JMP, TV_BR_CALL, TV_BR_RET
};

static int selftest_fill(struct tv_trace_ring *r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t from = 0x100000ull + 64ull * i;
		int rc = trace_append_branch(r, from, from + 16 + 8 * (i % 5), selftest_kinds[i % 4],
					     0, 0);

		if (rc)
			return rc;
	}
	return 0;
}

/* What the self-test measured, for the raw transmit benchmark's ratio. */
struct selftest_result {
	bool ok;
	uint64_t record_bytes;    /* ring bytes acknowledged */
	uint64_t ticks;           /* TSC from the ring's start to the last ACK */
};

static void selftest(const struct tv_config *cfg, uint64_t tsc_hz, struct selftest_result *res)
{
	static struct net_link link;
	struct net_link_cfg lc;
	struct exporter *ex = NULL;
	struct tv_trace_ring *ring = NULL;
	uint32_t total = cfg->net_selftest;
	uint64_t data = 4096, t0, deadline, now, t_stream = 0;
	char rx[20];
	bool done = false;
	int rc;

	ip_text(rx, sizeof(rx), cfg->receiver_ip);
	/* Records are 8 to 24 bytes; the ring never wraps (overflow = stop). */
	while (data < (uint64_t)total * 32)
		data <<= 1;
	if (EFI_ERROR(efi_bs->AllocatePool(EfiLoaderData, sizeof(*ex), (void **)&ex)) ||
	    EFI_ERROR(efi_bs->AllocatePool(EfiLoaderData, data + 4096, (void **)&ring))) {
		log_err("net: self-test FAILED: no memory for the exporter and a %llu KiB ring",
			(unsigned long long)(data >> 10));
		goto out;
	}
	t0 = hw_rdtsc();
	rc = trace_ring_init(ring, data + 4096, 0, 0, TV_SOURCE_NONE, TV_OVERFLOW_STOP, tsc_hz, t0);
	if (rc == 0)
		rc = selftest_fill(ring, total);
	if (rc) {
		log_err("net: self-test FAILED: filling the ring: %s", trace_strerror(rc));
		goto out;
	}
	memset(&lc, 0, sizeof(lc));
	lc.receiver_ip = cfg->receiver_ip;
	lc.receiver_port = cfg->receiver_port;
	lc.key = cfg->control_key;
	lc.keylen = cfg->control_key_len;
	lc.data_keylen = config_data_key(cfg, &lc.data_key);
	lc.machine = cfg->machine;
	lc.source = TV_SOURCE_NONE;
	lc.overflow = TV_OVERFLOW_STOP;
	lc.tsc_hz = tsc_hz;
	rc = net_link_start(&link, ex, &lc, &ring, 1, t0);
	if (rc) {
		log_err("net: self-test FAILED: exporter: %s", proto_strerror(rc));
		goto out;
	}
	deadline = t0 + tsc_hz / 1000 * NET_SEND_TIMEOUT_MS;
	for (now = t0; (int64_t)(now - deadline) < 0; now = hw_rdtsc()) {
		net_link_step(&link, now);
		/* Goodput counts from the HELLO's ACK: ARP and the handshake are not streaming. */
		if (!t_stream && link.state == NET_LINK_UP && ex->hello_acked)
			t_stream = now;
		if (link.state == NET_LINK_UP && net_link_drained(&link, 0)) {
			done = true;
			break;
		}
	}
	/* A few more rounds: answer what is still in flight before the reset. */
	for (uint64_t end = hw_rdtsc() + tsc_hz / 10; (int64_t)(hw_rdtsc() - end) < 0;)
		net_link_step(&link, hw_rdtsc());
	net_link_stop(&link);
	if (!done) {
		log_err("net: self-test FAILED: %llu of %u records acknowledged by %s:%u within %u s (link %s, hello %s, %llu datagrams, %u send errors, tx drops %llu)",
			(unsigned long long)ex->s[0].acked, total, rx, cfg->receiver_port,
			NET_SEND_TIMEOUT_MS / 1000,
			link.state == NET_LINK_UP ? "up" : link.state == NET_LINK_WAIT_ARP ?
			"no ARP reply" : "no address", ex->hello_acked ? "acked" : "not acked",
			(unsigned long long)ex->st.datagrams, ex->st.tx_errors,
			(unsigned long long)boot_nic.stats.tx_drops);
		goto out;
	}
	log_info("net: self-test ok: %u records acknowledged by %s:%u, session %016llx, %llu ms; %llu datagrams, %llu resent records, %llu acks, %llu nack ranges; tx %llu frames, rx %llu, drops %llu/%llu, errors %llu",
		 total, rx, cfg->receiver_port, (unsigned long long)link.session,
		 (unsigned long long)((now - t0) / (tsc_hz / 1000 ? tsc_hz / 1000 : 1)),
		 (unsigned long long)ex->st.datagrams,
		 (unsigned long long)ex->s[0].c.retransmitted, (unsigned long long)ex->st.acks,
		 (unsigned long long)ex->st.nack_ranges,
		 (unsigned long long)boot_nic.stats.tx_frames,
		 (unsigned long long)boot_nic.stats.rx_frames,
		 (unsigned long long)boot_nic.stats.tx_drops,
		 (unsigned long long)boot_nic.stats.rx_drops,
		 (unsigned long long)boot_nic.stats.errors);
	res->ok = true;
	res->record_bytes = ring->head;
	res->ticks = now - (t_stream ? t_stream : t0);
out:
	if (ring)
		efi_bs->FreePool(ring);
	if (ex)
		efi_bs->FreePool(ex);
}

/*
 * The raw transmit benchmark (net_bench = N, docs/NET.md "Raw transmit
 * rate"): right after a successful self-test, the same driver sends N
 * full-size UDP frames (1472-byte payload) built once by hand to the
 * receiver's port + 1, with no lwIP and no protocol, as fast as the
 * transmit ring takes them (a full ring is waited on, not dropped), the
 * clock stopped when the device has reported the last one sent.  The
 * rate is the device's (the emulator's) ceiling; the self-test's goodput
 * is logged beside it, so the ratio comes from one boot.
 */
static void raw_bench(const struct tv_config *cfg, uint64_t tsc_hz, const struct selftest_result *st)
{
	static uint8_t frame[NIC_FRAME_MAX];
	struct rawframe_addr a;
	uint64_t t0, t1, waits = 0, mhz = tsc_hz / 1000000 ? tsc_hz / 1000000 : 1;
	uint64_t raw_kbs, good_kbs, payload_bytes;
	uint32_t n = cfg->net_bench, sent = 0;
	size_t len;
	int rc = 0;
	char rx[20];

	ip_text(rx, sizeof(rx), cfg->receiver_ip);
	memset(&a, 0, sizeof(a));
	if (!net_neighbor_mac(cfg->receiver_ip, a.dst_mac)) {
		log_err("net: raw transmit benchmark not run: no ARP entry for %s", rx);
		return;
	}
	memcpy(a.src_mac, boot_nic.mac, 6);
	a.src_ip = net_if_address();
	a.dst_ip = cfg->receiver_ip;
	a.src_port = 40000;
	a.dst_port = (uint16_t)(cfg->receiver_port + 1);
	len = rawframe_build(frame, sizeof(frame), &a, 0, RAWFRAME_PAYLOAD_MAX);
	t0 = hw_rdtsc();
	while (sent < n) {
		uint64_t give_up = hw_rdtsc() + tsc_hz;   /* 1 s for one descriptor */

		rawframe_set_seq(frame, sent);
		while ((rc = boot_nic.drv->tx(&boot_nic, frame, len)) == NIC_E_FULL &&
		       (int64_t)(hw_rdtsc() - give_up) < 0)
			waits++;
		if (rc)
			break;
		boot_nic.stats.tx_frames++;
		boot_nic.stats.tx_bytes += len;
		sent++;
	}
	/* The clock stops when the device reports the last frame sent. */
	for (uint64_t give_up = hw_rdtsc() + 5 * tsc_hz;
	     !rc && nic_tx_pending(&boot_nic) && (int64_t)(hw_rdtsc() - give_up) < 0;)
		hw_pause();
	t1 = hw_rdtsc();
	if (rc) {
		log_err("net: raw transmit benchmark stopped after %u of %u frames: %s", sent, n,
			nic_strerror(rc));
		return;
	}
	/* Let the last frames leave before the reset that follows. */
	for (uint64_t end = hw_rdtsc() + tsc_hz / 10; (int64_t)(hw_rdtsc() - end) < 0;)
		net_poll();
	payload_bytes = (uint64_t)sent * RAWFRAME_PAYLOAD_MAX;
	/* KB/s = bytes * MHz * 1000 / us-ticks, in integers (no FPU in the hypervisor). */
	raw_kbs = t1 > t0 ? payload_bytes * mhz * 1000 / ((t1 - t0) ? (t1 - t0) : 1) : 0;
	good_kbs = st->ticks ? st->record_bytes * mhz * 1000 / st->ticks : 0;
	log_info("net: raw transmit: %u frames of %u payload bytes to %s:%u in %llu us: %llu KB/s, %llu frames/s, %llu ring-full waits",
		 sent, RAWFRAME_PAYLOAD_MAX, rx, a.dst_port,
		 (unsigned long long)((t1 - t0) / mhz), (unsigned long long)raw_kbs,
		 (unsigned long long)(t1 > t0 ? (uint64_t)sent * tsc_hz / (t1 - t0) : 0),
		 (unsigned long long)waits);
	log_info("net: export goodput: %llu record bytes in %llu us from the HELLO's ACK to the last ACK: %llu KB/s; goodput/raw %llu.%03llu",
		 (unsigned long long)st->record_bytes, (unsigned long long)(st->ticks / mhz),
		 (unsigned long long)good_kbs, (unsigned long long)(raw_kbs ? good_kbs / raw_kbs : 0),
		 (unsigned long long)(raw_kbs ? good_kbs * 1000 / raw_kbs % 1000 : 0));
}

static void bring_up_and_test(const struct tv_config *cfg, uint64_t tsc_hz)
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
		struct selftest_result res = { false, 0, 0 };

		selftest(cfg, tsc_hz, &res);
		if (res.ok && cfg->net_bench)
			raw_bench(cfg, tsc_hz, &res);
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

int net_boot(const struct tv_config *cfg, uint64_t tsc_hz, struct pci_dev *nic)
{
	struct nic_want want;
	struct pci_dev d;
	char mac[18];
	int rc;

	if (cfg->nic == CONFIG_NIC_OFF) {
		log_info("net: nic=off");
		return -1;
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
		return -1;
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
		return -1;
	}
	*nic = d;
	if (!cfg->net_selftest) {
		log_info("net: self-test off (net_selftest)");
		return 0;
	}
	bring_up_and_test(cfg, tsc_hz);
	return 0;
}
