/* SPDX-License-Identifier: MIT */
/*
 * nic.c - driver table, NIC selection on the PCI bus, and the calls every
 * user of a NIC goes through (state and size checks live here once).
 */
#include "drivers/nic.h"

#include <stdio.h>
#include <string.h>

#include "vmm/lib/log.h"

static const struct nic_driver *const nic_drivers[] = {
	&e1000_driver,
	&virtio_net_driver,
};

const struct nic_driver *nic_find_driver(uint16_t vendor, uint16_t device,
					 const char **model)
{
	for (size_t i = 0; i < sizeof(nic_drivers) / sizeof(nic_drivers[0]); i++) {
		const char *m = nic_drivers[i]->match(vendor, device);

		if (m) {
			if (model)
				*model = m;
			return nic_drivers[i];
		}
	}
	return NULL;
}

int nic_attach(struct nic *nic, const struct pci_cfg *c, const struct pci_dev *d)
{
	struct pci_bar bar;
	const char *model = NULL;
	const struct nic_driver *drv = nic_find_driver(d->vendor, d->device, &model);
	uint16_t cmd;
	int rc;

	memset(nic, 0, sizeof(*nic));
	if (!drv)
		return NIC_E_NODEV;
	nic->drv = drv;
	nic->model = model;
	nic->pci = *d;
	rc = pci_bar_decode(c, d->addr, drv->bar, &bar);
	if (rc || bar.base == 0)
		return NIC_E_BAR;
	if (drv->bar_kind == PCI_BAR_IO) {
		if (bar.kind != PCI_BAR_IO || bar.base > 0xffff)
			return NIC_E_BAR;
		devio_port(&nic->io, (uint16_t)bar.base);
		cmd = PCI_CMD_IO;
	} else {
		if (bar.kind != PCI_BAR_MEM32 && bar.kind != PCI_BAR_MEM64)
			return NIC_E_BAR;
		devio_mmio(&nic->io, bar.base);
		cmd = PCI_CMD_MEMORY;
	}
	/* Polled: legacy INTx off (PCI 3.0, 6.2.2); DMA needs bus mastering. */
	pci_enable(c, d->addr, cmd | PCI_CMD_BUS_MASTER | PCI_CMD_INTX_DISABLE);
	return drv->read_mac(nic);
}

struct nic_select_ctx {
	struct nic *nic;
	const struct pci_cfg *c;
	const struct nic_want *want;
};

static int select_visit(const struct pci_dev *d, void *arg)
{
	struct nic_select_ctx *s = arg;

	if (!nic_find_driver(d->vendor, d->device, NULL))
		return 0;
	if (s->want->kind == NIC_WANT_PCI &&
	    (d->addr.bus != s->want->addr.bus || d->addr.dev != s->want->addr.dev ||
	     d->addr.fn != s->want->addr.fn))
		return 0;
	if (nic_attach(s->nic, s->c, d))
		return 0;
	if (s->want->kind == NIC_WANT_MAC && memcmp(s->nic->mac, s->want->mac, 6))
		return 0;
	return 1;
}

int nic_select(struct nic *nic, const struct pci_cfg *c, const struct nic_want *want)
{
	struct nic_select_ctx s = { nic, c, want };

	if (pci_scan(c, select_visit, &s) == 1)
		return 0;
	memset(nic, 0, sizeof(*nic));
	return NIC_E_NODEV;
}

int nic_init(struct nic *nic, void *dma, size_t len)
{
	int rc;

	if (!nic->drv || !dma || ((uintptr_t)dma & 4095))
		return NIC_E_ARG;
	if (len < NIC_DMA_BYTES)
		return NIC_E_NOMEM;
	nic->dma = dma;
	nic->dma_len = len;
	nic->up = false;
	rc = nic->drv->init(nic);
	if (rc == 0)
		nic->up = true;
	return rc;
}

int nic_tx(struct nic *nic, const void *frame, size_t len)
{
	int rc;

	if (!nic->up)
		return NIC_E_DOWN;
	if (len < NIC_FRAME_MIN || len > NIC_FRAME_MAX)
		return NIC_E_SIZE;
	rc = nic->drv->tx(nic, frame, len);
	if (rc == 0) {
		nic->stats.tx_frames++;
		nic->stats.tx_bytes += len;
	} else if (rc == NIC_E_FULL) {
		nic->stats.tx_drops++;
	}
	return rc;
}

int nic_poll(struct nic *nic, nic_rx_fn fn, void *ctx, unsigned budget)
{
	if (!nic->up)
		return NIC_E_DOWN;
	return nic->drv->poll(nic, fn, ctx, budget);
}

unsigned nic_tx_pending(struct nic *nic)
{
	if (!nic->up)
		return 0;
	return nic->drv->tx_pending(nic);
}

bool nic_link_up(struct nic *nic)
{
	return nic->up && nic->drv->link_up(nic);
}

void nic_stop(struct nic *nic, const struct pci_cfg *c)
{
	if (!nic->drv)
		return;
	nic->drv->stop(nic);
	nic->up = false;
	if (c)
		pci_disable(c, nic->pci.addr, PCI_CMD_BUS_MASTER);
}

const char *nic_strerror(int err)
{
	switch (err) {
	case 0: return "success";
	case NIC_E_ARG: return "bad argument";
	case NIC_E_NODEV: return "no supported NIC";
	case NIC_E_BAR: return "register BAR missing or of the wrong kind";
	case NIC_E_TIMEOUT: return "device did not respond in time";
	case NIC_E_NOMEM: return "DMA block too small";
	case NIC_E_FULL: return "transmit ring full";
	case NIC_E_SIZE: return "bad frame length";
	case NIC_E_DOWN: return "NIC not initialised";
	case NIC_E_DEVICE: return "device refused the setting";
	default: return "unknown NIC error";
	}
}

void nic_format_mac(char *buf, const uint8_t mac[6])
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2],
		 mac[3], mac[4], mac[5]);
}
