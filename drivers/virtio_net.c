/* SPDX-License-Identifier: MIT */
/*
 * virtio_net.c - polled virtio-net over the legacy PCI interface.
 */
#include "drivers/virtio_net.h"

#include <string.h>

#include "vmm/lib/log.h"

#define VNET_SLOTS 64            /* packet buffers per direction (at most) */
#define VNET_BUF 2048
#define VNET_HDR_STRIDE 16       /* one header per slot, 16-byte spaced */

struct vnet_queue {
	uint32_t n;                  /* queue size, from the device */
	uint8_t *mem;
	struct virtq_desc *desc;
	volatile uint16_t *avail;    /* flags, idx, ring[n], used_event */
	volatile uint16_t *used;     /* flags, idx, then elements */
	uint16_t avail_idx;          /* our copy of avail->idx */
	uint16_t last_used;          /* used entries consumed */
	uint32_t slots;              /* packet slots: descriptors 2k, 2k+1 */
	uint8_t *hdrs, *bufs;
};

struct vnet_priv {
	uint32_t features;
	struct vnet_queue q[2];
	bool tx_busy[VNET_SLOTS];
	uint32_t tx_next;            /* where the search for a free slot starts */
};
_Static_assert(sizeof(struct vnet_priv) <= 4096, "virtio-net state fits its page");

static inline uint64_t dev_addr(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static inline volatile struct virtq_used_elem *used_elem(struct vnet_queue *q, uint32_t i)
{
	return (volatile struct virtq_used_elem *)((volatile uint8_t *)q->used + 4) + i;
}

static const char *vnet_match(uint16_t vendor, uint16_t device)
{
	/* Transitional virtio-net (virtio 1.0, 4.1.2.3); 0x1041 is modern-only. */
	return vendor == 0x1af4 && device == 0x1000 ? "virtio-net (legacy)" : NULL;
}

static int vnet_read_mac(struct nic *nic)
{
	uint32_t feat = devio_read32(&nic->io, VIRTIO_PCI_HOST_FEATURES);

	if (!(feat & VIRTIO_NET_F_MAC)) {
		log_err("virtio-net: device offers no MAC (features %#x)", feat);
		return NIC_E_DEVICE;
	}
	for (int i = 0; i < 6; i++)
		nic->mac[i] = devio_read8(&nic->io, VIRTIO_NET_CFG_MAC + (uint32_t)i);
	return 0;
}

static void vnet_set_status(struct nic *nic, uint8_t bits)
{
	uint8_t st = devio_read8(&nic->io, VIRTIO_PCI_STATUS);

	devio_write8(&nic->io, VIRTIO_PCI_STATUS, (uint8_t)(st | bits));
}

/* Lay out queue qi at *mem and hand it to the device (4.1.5.1.3, legacy). */
static int vnet_setup_queue(struct nic *nic, struct vnet_priv *p, int qi, uint8_t **mem,
			    uint8_t *end)
{
	struct vnet_queue *q = &p->q[qi];
	uint32_t n;

	devio_write16(&nic->io, VIRTIO_PCI_QUEUE_SEL, (uint16_t)qi);
	n = devio_read16(&nic->io, VIRTIO_PCI_QUEUE_NUM);
	if (n < 2 || n > VIRTIO_QUEUE_MAX || (n & (n - 1))) {
		log_err("virtio-net: queue %d has size %u (want a power of two 2..%u)", qi, n,
			VIRTIO_QUEUE_MAX);
		return NIC_E_DEVICE;
	}
	if (devio_read32(&nic->io, VIRTIO_PCI_QUEUE_PFN) != 0) {
		log_err("virtio-net: queue %d already in use after reset", qi);
		return NIC_E_DEVICE;
	}
	q->n = n;
	q->slots = n / 2 < VNET_SLOTS ? n / 2 : VNET_SLOTS;
	q->mem = *mem;
	*mem += virtq_bytes(n);
	q->hdrs = *mem;
	*mem += (VNET_SLOTS * VNET_HDR_STRIDE + 4095) & ~4095u;
	q->bufs = *mem;
	*mem += VNET_SLOTS * VNET_BUF;
	if (*mem > end)
		return NIC_E_NOMEM;
	/* QUEUE_PFN is 32 bits of a 4 KiB frame number: below 16 TiB. */
	if (dev_addr(q->mem) >> 44)
		return NIC_E_NOMEM;
	memset(q->mem, 0, virtq_bytes(n));
	q->desc = (struct virtq_desc *)q->mem;
	q->avail = (volatile uint16_t *)(q->mem + virtq_avail_off(n));
	q->used = (volatile uint16_t *)(q->mem + virtq_used_off(n));
	q->avail_idx = 0;
	q->last_used = 0;
	/* Polled: the device need not interrupt (2.4.7). */
	q->avail[0] = VIRTQ_AVAIL_F_NO_INTERRUPT;
	for (uint32_t k = 0; k < q->slots; k++) {
		struct virtq_desc *h = &q->desc[2 * k], *d = &q->desc[2 * k + 1];
		uint16_t w = qi == VIRTIO_NET_RXQ ? VIRTQ_DESC_F_WRITE : 0;

		h->addr = dev_addr(q->hdrs + k * VNET_HDR_STRIDE);
		h->len = sizeof(struct virtio_net_hdr);
		h->flags = (uint16_t)(VIRTQ_DESC_F_NEXT | w);
		h->next = (uint16_t)(2 * k + 1);
		d->addr = dev_addr(q->bufs + k * VNET_BUF);
		d->len = qi == VIRTIO_NET_RXQ ? VNET_BUF : 0;
		d->flags = w;
		d->next = 0;
	}
	devio_write32(&nic->io, VIRTIO_PCI_QUEUE_PFN, (uint32_t)(dev_addr(q->mem) >> 12));
	return 0;
}

/* Make slot head 2k available (ring entry, then the index: 2.6.13). */
static void vnet_post(struct vnet_queue *q, uint32_t k)
{
	q->avail[2 + q->avail_idx % q->n] = (uint16_t)(2 * k);
	q->avail_idx++;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	q->avail[1] = q->avail_idx;
}

static void vnet_notify(struct nic *nic, int qi)
{
	/* The index store is visible before the device is told (2.6.13.6). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	devio_write16(&nic->io, VIRTIO_PCI_QUEUE_NOTIFY, (uint16_t)qi);
}

static int vnet_init(struct nic *nic)
{
	struct vnet_priv *p;
	uint8_t *mem, *end = nic->dma + nic->dma_len;
	uint32_t host;
	int rc;

	/* Reset, then ACKNOWLEDGE and DRIVER (3.1.1; legacy: no FEATURES_OK). */
	devio_write8(&nic->io, VIRTIO_PCI_STATUS, 0);
	if (devio_read8(&nic->io, VIRTIO_PCI_STATUS) != 0)
		return NIC_E_TIMEOUT;
	vnet_set_status(nic, VIRTIO_STATUS_ACKNOWLEDGE);
	vnet_set_status(nic, VIRTIO_STATUS_DRIVER);
	rc = vnet_read_mac(nic);
	if (rc)
		goto fail;
	memset(nic->dma, 0, 4096);
	p = (struct vnet_priv *)nic->dma;
	nic->priv = p;
	host = devio_read32(&nic->io, VIRTIO_PCI_HOST_FEATURES);
	p->features = host & (VIRTIO_NET_F_MAC | VIRTIO_NET_F_STATUS);
	devio_write32(&nic->io, VIRTIO_PCI_GUEST_FEATURES, p->features);

	mem = nic->dma + 4096;
	rc = vnet_setup_queue(nic, p, VIRTIO_NET_RXQ, &mem, end);
	if (!rc)
		rc = vnet_setup_queue(nic, p, VIRTIO_NET_TXQ, &mem, end);
	if (rc)
		goto fail;
	for (uint32_t k = 0; k < p->q[VIRTIO_NET_RXQ].slots; k++)
		vnet_post(&p->q[VIRTIO_NET_RXQ], k);
	vnet_set_status(nic, VIRTIO_STATUS_DRIVER_OK);
	vnet_notify(nic, VIRTIO_NET_RXQ);
	return 0;
fail:
	vnet_set_status(nic, VIRTIO_STATUS_FAILED);
	return rc;
}

static void vnet_tx_reclaim(struct vnet_priv *p)
{
	struct vnet_queue *q = &p->q[VIRTIO_NET_TXQ];

	while (q->last_used != q->used[1]) {
		uint32_t id;

		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		id = used_elem(q, q->last_used % q->n)->id;
		if (id / 2 < q->slots)
			p->tx_busy[id / 2] = false;
		q->last_used++;
	}
}

static unsigned vnet_tx_pending(struct nic *nic)
{
	struct vnet_priv *p = nic->priv;
	unsigned n = 0;

	vnet_tx_reclaim(p);
	for (uint32_t k = 0; k < p->q[VIRTIO_NET_TXQ].slots; k++)
		n += p->tx_busy[k];
	return n;
}

static int vnet_tx(struct nic *nic, const void *frame, size_t len)
{
	struct vnet_priv *p = nic->priv;
	struct vnet_queue *q = &p->q[VIRTIO_NET_TXQ];
	uint32_t k;

	vnet_tx_reclaim(p);
	for (k = 0; k < q->slots; k++)
		if (!p->tx_busy[(p->tx_next + k) % q->slots])
			break;
	if (k == q->slots)
		return NIC_E_FULL;
	k = (p->tx_next + k) % q->slots;
	p->tx_next = (k + 1) % q->slots;
	p->tx_busy[k] = true;
	/* No offloads: an all-zero header (flags 0, GSO_NONE). */
	memset(q->hdrs + k * VNET_HDR_STRIDE, 0, sizeof(struct virtio_net_hdr));
	memcpy(q->bufs + k * VNET_BUF, frame, len);
	q->desc[2 * k + 1].len = (uint32_t)len;
	vnet_post(q, k);
	vnet_notify(nic, VIRTIO_NET_TXQ);
	return 0;
}

static int vnet_poll(struct nic *nic, nic_rx_fn fn, void *ctx, unsigned budget)
{
	struct vnet_priv *p = nic->priv;
	struct vnet_queue *q = &p->q[VIRTIO_NET_RXQ];
	const uint32_t hl = sizeof(struct virtio_net_hdr);
	int n = 0, posted = 0;

	while ((unsigned)n < budget && q->last_used != q->used[1]) {
		volatile struct virtq_used_elem *e;
		uint32_t id, len, k;

		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		e = used_elem(q, q->last_used % q->n);
		id = e->id;
		len = e->len;
		q->last_used++;
		k = id / 2;
		if ((id & 1) || k >= q->slots) {
			/* Not a head we posted: nothing to give back. */
			nic->stats.errors++;
			continue;
		}
		if (len < hl + NIC_FRAME_MIN || len > hl + VNET_BUF) {
			nic->stats.rx_drops++;
		} else {
			nic->stats.rx_frames++;
			nic->stats.rx_bytes += len - hl;
			n++;
			fn(ctx, q->bufs + k * VNET_BUF, len - hl);
		}
		vnet_post(q, k);
		posted++;
	}
	if (posted)
		vnet_notify(nic, VIRTIO_NET_RXQ);
	return n;
}

static bool vnet_link_up(struct nic *nic)
{
	struct vnet_priv *p = nic->priv;

	/* Without VIRTIO_NET_F_STATUS the link is always up (5.1.4). */
	if (!p || !(p->features & VIRTIO_NET_F_STATUS))
		return true;
	return (devio_read16(&nic->io, VIRTIO_NET_CFG_STATUS) & VIRTIO_NET_S_LINK_UP) != 0;
}

static void vnet_stop(struct nic *nic)
{
	/* A reset makes the device forget its queues (4.1.4.8: QUEUE_PFN 0). */
	devio_write8(&nic->io, VIRTIO_PCI_STATUS, 0);
}

const struct nic_driver virtio_net_driver = {
	.name = "virtio-net",
	.match = vnet_match,
	.bar = 0,
	.bar_kind = PCI_BAR_IO,
	.read_mac = vnet_read_mac,
	.init = vnet_init,
	.tx = vnet_tx,
	.tx_pending = vnet_tx_pending,
	.poll = vnet_poll,
	.link_up = vnet_link_up,
	.stop = vnet_stop,
};
