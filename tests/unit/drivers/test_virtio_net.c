/* SPDX-License-Identifier: MIT */
/*
 * test_virtio_net.c - drivers/virtio_net.c against a legacy virtio-net
 * device model written here: the I/O BAR register file (each register at
 * its width), the status handshake, queue size and PFN, and virtqueue
 * processing on notify (TX chains are read and marked used) or when the
 * test delivers a frame (RX buffers are filled and marked used).  Queue
 * memory is mapped below 4 GiB so that its 32-bit PFN is exact.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "drivers/nic.h"
#include "drivers/virtio_net.h"
#include "hw_fake.h"
#include "vmm/lib/log.h"

#define IOBASE 0xc040
#define MAX_FRAMES 128

struct vq {
	uint32_t pfn;
	uint16_t last_avail;
};

struct model {
	uint32_t host_features, guest_features;
	uint16_t qnum[2], qsel;
	struct vq q[2];
	uint8_t status;
	uint8_t status_log[8];
	int nstatus;
	uint8_t mac[6];
	uint16_t net_status;
	int notifies[2];
	bool tx_stalled;
	uint8_t frames[MAX_FRAMES][2048];
	uint32_t frame_len[MAX_FRAMES];
	int nframes;
	int bad_header;
};

static struct model m;
static struct nic nic;
static uint8_t *dma;

static uint8_t *qmem(int qi)
{
	return (uint8_t *)(uintptr_t)((uint64_t)m.q[qi].pfn << 12);
}

static struct virtq_desc *qdesc(int qi)
{
	return (struct virtq_desc *)qmem(qi);
}

static uint16_t *qavail(int qi)
{
	return (uint16_t *)(qmem(qi) + virtq_avail_off(m.qnum[qi]));
}

static uint16_t *qused(int qi)
{
	return (uint16_t *)(qmem(qi) + virtq_used_off(m.qnum[qi]));
}

static void push_used(int qi, uint32_t id, uint32_t len)
{
	uint16_t *u = qused(qi);
	struct virtq_used_elem *e = (struct virtq_used_elem *)(u + 2);

	e[u[1] % m.qnum[qi]].id = id;
	e[u[1] % m.qnum[qi]].len = len;
	u[1]++;
}

/* TX: each chain is a 10-byte zero header, then the frame. */
static void model_tx(void)
{
	const int qi = VIRTIO_NET_TXQ;
	uint16_t *a = qavail(qi);

	if (m.tx_stalled)
		return;
	while (m.q[qi].last_avail != a[1]) {
		uint16_t head = a[2 + m.q[qi].last_avail % m.qnum[qi]];
		struct virtq_desc *h = &qdesc(qi)[head], *d;
		static const uint8_t zero[10];

		m.q[qi].last_avail++;
		assert_true(h->flags & VIRTQ_DESC_F_NEXT);
		assert_false(h->flags & VIRTQ_DESC_F_WRITE);
		if (h->len != 10 || memcmp((void *)(uintptr_t)h->addr, zero, 10))
			m.bad_header++;
		d = &qdesc(qi)[h->next];
		assert_false(d->flags & (VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE));
		assert_true(m.nframes < MAX_FRAMES && d->len <= 2048);
		memcpy(m.frames[m.nframes], (void *)(uintptr_t)d->addr, d->len);
		m.frame_len[m.nframes++] = d->len;
		push_used(qi, head, 0);
	}
}

/* RX: fill the next available chain; false when the driver posted none. */
static bool model_rx(const void *frame, uint32_t len)
{
	const int qi = VIRTIO_NET_RXQ;
	uint16_t *a = qavail(qi);
	uint16_t head;
	struct virtq_desc *h, *d;

	if (m.q[qi].last_avail == a[1])
		return false;
	head = a[2 + m.q[qi].last_avail % m.qnum[qi]];
	m.q[qi].last_avail++;
	h = &qdesc(qi)[head];
	assert_int_equal(h->flags, VIRTQ_DESC_F_NEXT | VIRTQ_DESC_F_WRITE);
	assert_int_equal(h->len, 10);
	memset((void *)(uintptr_t)h->addr, 0, 10);
	d = &qdesc(qi)[h->next];
	assert_int_equal(d->flags, VIRTQ_DESC_F_WRITE);
	assert_true(d->len >= len);
	memcpy((void *)(uintptr_t)d->addr, frame, len);
	push_used(qi, head, 10 + len);
	return true;
}

static uint32_t mread(void *ctx, uint64_t base, uint32_t off, int width)
{
	(void)ctx;
	assert_int_equal(base, IOBASE);
	switch (off) {
	case VIRTIO_PCI_HOST_FEATURES: assert_int_equal(width, 4); return m.host_features;
	case VIRTIO_PCI_GUEST_FEATURES: assert_int_equal(width, 4); return m.guest_features;
	case VIRTIO_PCI_QUEUE_PFN: assert_int_equal(width, 4); return m.q[m.qsel].pfn;
	case VIRTIO_PCI_QUEUE_NUM: assert_int_equal(width, 2); return m.qnum[m.qsel];
	case VIRTIO_PCI_QUEUE_SEL: assert_int_equal(width, 2); return m.qsel;
	case VIRTIO_PCI_STATUS: assert_int_equal(width, 1); return m.status;
	case VIRTIO_NET_CFG_STATUS: assert_int_equal(width, 2); return m.net_status;
	default:
		if (off >= VIRTIO_NET_CFG_MAC && off < VIRTIO_NET_CFG_MAC + 6) {
			assert_int_equal(width, 1);
			return m.mac[off - VIRTIO_NET_CFG_MAC];
		}
		fail_msg("read of unmodelled register %#x", off);
		return 0;
	}
}

static void mwrite(void *ctx, uint64_t base, uint32_t off, int width, uint32_t v)
{
	(void)ctx;
	assert_int_equal(base, IOBASE);
	switch (off) {
	case VIRTIO_PCI_GUEST_FEATURES:
		assert_int_equal(width, 4);
		m.guest_features = v;
		break;
	case VIRTIO_PCI_QUEUE_PFN:
		assert_int_equal(width, 4);
		m.q[m.qsel].pfn = v;
		m.q[m.qsel].last_avail = 0;
		break;
	case VIRTIO_PCI_QUEUE_SEL:
		assert_int_equal(width, 2);
		assert_true(v < 2);
		m.qsel = (uint16_t)v;
		break;
	case VIRTIO_PCI_QUEUE_NOTIFY:
		assert_int_equal(width, 2);
		assert_true(v < 2);
		assert_true(m.status & VIRTIO_STATUS_DRIVER_OK);
		m.notifies[v]++;
		if (v == VIRTIO_NET_TXQ)
			model_tx();
		break;
	case VIRTIO_PCI_STATUS:
		assert_int_equal(width, 1);
		if (m.nstatus < 8)
			m.status_log[m.nstatus++] = (uint8_t)v;
		m.status = (uint8_t)v;
		if (v == 0) {   /* reset: the queues are forgotten */
			m.q[0].pfn = m.q[1].pfn = 0;
			m.guest_features = 0;
		}
		break;
	default:
		fail_msg("write of %#x to unmodelled register %#x", v, off);
	}
}

static const uint8_t qemu_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	log_set_ring(NULL);
	memset(&m, 0, sizeof(m));
	/* MAC, STATUS, plus bits the driver must not take (ANY_LAYOUT, CSUM). */
	m.host_features = VIRTIO_NET_F_MAC | VIRTIO_NET_F_STATUS | (1u << 27) | 1u;
	m.qnum[0] = m.qnum[1] = 256;
	memcpy(m.mac, qemu_mac, 6);
	m.net_status = VIRTIO_NET_S_LINK_UP;
	dma = mmap((void *)0x40000000, NIC_DMA_BYTES, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	assert_true(dma == (uint8_t *)0x40000000);
	memset(&nic, 0, sizeof(nic));
	nic.drv = nic_find_driver(0x1af4, 0x1000, &nic.model);
	assert_ptr_equal(nic.drv, &virtio_net_driver);
	nic.io.base = IOBASE;
	nic.io.read = mread;
	nic.io.write = mwrite;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	munmap(dma, NIC_DMA_BYTES);
	return 0;
}

static void frame(uint8_t *f, size_t len, uint32_t tag)
{
	for (size_t i = 0; i < len; i++)
		f[i] = (uint8_t)(tag * 13 + i * 3);
}

static void test_init_handshake_and_queues(void **state)
{
	(void)state;
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	assert_memory_equal(nic.mac, qemu_mac, 6);
	/* Reset, ACKNOWLEDGE, DRIVER, DRIVER_OK (virtio 1.0, 3.1.1). */
	assert_int_equal(m.nstatus, 4);
	assert_int_equal(m.status_log[0], 0);
	assert_int_equal(m.status_log[1], VIRTIO_STATUS_ACKNOWLEDGE);
	assert_int_equal(m.status_log[2], VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER);
	assert_int_equal(m.status_log[3], VIRTIO_STATUS_ACKNOWLEDGE | VIRTIO_STATUS_DRIVER |
			 VIRTIO_STATUS_DRIVER_OK);
	assert_int_equal(m.guest_features, VIRTIO_NET_F_MAC | VIRTIO_NET_F_STATUS);
	for (int qi = 0; qi < 2; qi++) {
		assert_int_not_equal(m.q[qi].pfn, 0);
		assert_true(qmem(qi) >= dma && qmem(qi) + virtq_bytes(256) <= dma + NIC_DMA_BYTES);
		assert_int_equal(qavail(qi)[0], VIRTQ_AVAIL_F_NO_INTERRUPT);
	}
	assert_true(m.q[1].pfn >= m.q[0].pfn + virtq_bytes(256) / 4096);
	/* 64 receive buffers posted, and the device told. */
	assert_int_equal(qavail(VIRTIO_NET_RXQ)[1], 64);
	assert_int_equal(m.notifies[VIRTIO_NET_RXQ], 1);
	assert_int_equal(qavail(VIRTIO_NET_TXQ)[1], 0);
	assert_true(nic_link_up(&nic));
	m.net_status = 0;
	assert_false(nic_link_up(&nic));
}

static void test_legacy_layout_offsets(void **state)
{
	(void)state;
	/* virtio 1.0, 2.4.2: used ring on the 4 KiB boundary after avail. */
	assert_int_equal(virtq_avail_off(256), 4096);
	assert_int_equal(virtq_used_off(256), 8192);
	assert_int_equal(virtq_bytes(256), 12288);
	assert_int_equal(virtq_used_off(1024), 20480);
	assert_int_equal(virtq_bytes(1024), 32768);
	assert_int_equal(virtq_used_off(8), 4096);
}

static void test_no_mac_feature_fails(void **state)
{
	(void)state;
	m.host_features = VIRTIO_NET_F_STATUS;
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), NIC_E_DEVICE);
	assert_true(m.status & VIRTIO_STATUS_FAILED);
	assert_false(nic.up);
}

static void test_bad_queue_sizes_fail(void **state)
{
	(void)state;
	m.qnum[VIRTIO_NET_TXQ] = 0;
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), NIC_E_DEVICE);
	m.qnum[VIRTIO_NET_TXQ] = 2048;
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), NIC_E_DEVICE);
	m.qnum[VIRTIO_NET_TXQ] = 1024;
	m.qnum[VIRTIO_NET_RXQ] = 1024;
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
}

static void test_without_status_feature_link_is_up(void **state)
{
	(void)state;
	m.host_features = VIRTIO_NET_F_MAC;
	m.net_status = 0;
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	assert_int_equal(m.guest_features, VIRTIO_NET_F_MAC);
	assert_true(nic_link_up(&nic));
}

static void test_tx_with_header_then_ring_full(void **state)
{
	uint8_t f[1514];
	int i;

	(void)state;
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	frame(f, sizeof(f), 1);
	assert_int_equal(nic_tx(&nic, f, sizeof(f)), 0);
	frame(f, 60, 2);
	assert_int_equal(nic_tx(&nic, f, 60), 0);
	assert_int_equal(m.nframes, 2);
	assert_int_equal(m.bad_header, 0);
	assert_int_equal(m.frame_len[0], 1514);
	frame(f, sizeof(f), 1);
	assert_memory_equal(m.frames[0], f, 1514);
	frame(f, 60, 2);
	assert_memory_equal(m.frames[1], f, 60);
	assert_int_equal(m.notifies[VIRTIO_NET_TXQ], 2);

	/* The device stops taking frames: 64 slots, then full. */
	m.tx_stalled = true;
	for (i = 0; i < 64; i++)
		assert_int_equal(nic_tx(&nic, f, 60), 0);
	assert_int_equal(nic_tx(&nic, f, 60), NIC_E_FULL);
	assert_int_equal(nic.stats.tx_drops, 1);
	assert_int_equal(nic_tx_pending(&nic), 64);
	m.tx_stalled = false;
	model_tx();
	assert_int_equal(m.nframes, 66);
	assert_int_equal(nic_tx_pending(&nic), 0);
	/* Used entries give the slots back; the avail index runs past 16 bits. */
	for (i = 0; i < 70000; i++) {
		frame(f, 64, (uint32_t)i);
		assert_int_equal(nic_tx(&nic, f, 64), 0);
		if (m.nframes == MAX_FRAMES)
			m.nframes = 0;
	}
	assert_memory_equal(m.frames[m.nframes - 1], f, 64);
	assert_int_equal(nic.stats.tx_frames, 2 + 64 + 70000);
	assert_int_equal(m.bad_header, 0);
}

struct rx_log {
	uint32_t n;
	uint32_t bad;
	uint32_t next_tag;
};

static void on_rx(void *ctx, const void *f, size_t len)
{
	struct rx_log *l = ctx;
	uint8_t want[200];

	frame(want, len, l->next_tag);
	if (len != 60 + l->next_tag % 100 || memcmp(f, want, len))
		l->bad++;
	l->next_tag++;
	l->n++;
}

static void test_rx_in_order_reposted_and_wrapping(void **state)
{
	struct rx_log log = { 0, 0, 0 };
	uint8_t f[200];
	uint32_t sent = 0;

	(void)state;
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	assert_int_equal(nic_poll(&nic, on_rx, &log, 64), 0);
	for (int i = 0; i < 5; i++, sent++) {
		frame(f, 60 + sent % 100, sent);
		assert_true(model_rx(f, 60 + sent % 100));
	}
	assert_int_equal(nic_poll(&nic, on_rx, &log, 3), 3);
	assert_int_equal(nic_poll(&nic, on_rx, &log, 64), 2);
	assert_int_equal(log.n, 5);
	assert_int_equal(log.bad, 0);
	/* Every buffer went back: 64 + 5 posted, one notify per non-empty poll. */
	assert_int_equal(qavail(VIRTIO_NET_RXQ)[1], 69);
	assert_int_equal(m.notifies[VIRTIO_NET_RXQ], 3);

	/* 70000 frames in bursts of 50: indexes wrap at 65536. */
	while (sent < 70005) {
		for (int i = 0; i < 50; i++, sent++) {
			frame(f, 60 + sent % 100, sent);
			assert_true(model_rx(f, 60 + sent % 100));
		}
		assert_int_equal(nic_poll(&nic, on_rx, &log, 64), 50);
	}
	assert_int_equal(log.n, sent);
	assert_int_equal(log.bad, 0);
	assert_int_equal(nic.stats.rx_frames, sent);
	/* With no poll the 64 buffers run out. */
	for (int i = 0; i < 64; i++)
		assert_true(model_rx(f, 60));
	assert_false(model_rx(f, 60));
}

static void test_rx_short_completion_dropped(void **state)
{
	struct rx_log log = { 0, 0, 0 };
	uint8_t f[60];

	(void)state;
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	assert_true(model_rx(f, 4));    /* shorter than an Ethernet header */
	frame(f, 60, 0);
	assert_true(model_rx(f, 60));
	assert_int_equal(nic_poll(&nic, on_rx, &log, 64), 1);
	assert_int_equal(log.bad, 0);
	assert_int_equal(nic.stats.rx_drops, 1);
	assert_int_equal(qavail(VIRTIO_NET_RXQ)[1], 66);   /* both reposted */
}

static void test_stop_resets(void **state)
{
	(void)state;
	assert_int_equal(nic_init(&nic, dma, NIC_DMA_BYTES), 0);
	nic_stop(&nic, NULL);
	assert_int_equal(m.status, 0);
	assert_int_equal(m.q[0].pfn, 0);
	assert_false(nic.up);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_init_handshake_and_queues, setup, teardown),
		cmocka_unit_test_setup_teardown(test_legacy_layout_offsets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_mac_feature_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_queue_sizes_fail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_without_status_feature_link_is_up, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx_with_header_then_ring_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_in_order_reposted_and_wrapping, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_short_completion_dropped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_resets, setup, teardown),
	};

	return cmocka_run_group_tests_name("test_virtio_net", tests, NULL, NULL);
}
