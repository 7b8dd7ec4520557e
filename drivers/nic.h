/* SPDX-License-Identifier: MIT */
/*
 * nic.h - the NIC driver interface: what lwIP's netif (net/netif.c) and
 * the link self-test use, whichever device is underneath.
 *
 * Drivers are polled: no interrupt is ever enabled on the device (the
 * hypervisor takes no guest interrupts), received frames are collected by
 * nic_poll() from the VMX-root loop or a boot-time loop.
 *
 * Memory: the caller hands nic_setup() one block of NIC_DMA_BYTES, 4 KiB
 * aligned, in which the driver places its state, descriptor rings and
 * packet buffers.  Device addresses are the block's own addresses:
 * tracevisor runs identity mapped (virtual == physical) under the
 * firmware and in VMX root.  Memory the NIC keeps using after the OS boots
 * must be reserved memory, and the driver (function pointers included)
 * must be set up again by the image that runs there (docs/NET.md).
 *
 * Errors (negative): NIC_E_ARG, NIC_E_NODEV (no supported NIC / not this
 * one), NIC_E_BAR (the register window is missing or of the wrong kind),
 * NIC_E_TIMEOUT (the device did not finish a reset or NVM read),
 * NIC_E_NOMEM (DMA block too small), NIC_E_FULL (transmit ring full:
 * frame dropped), NIC_E_SIZE (frame longer than NIC_FRAME_MAX or shorter
 * than 14 bytes), NIC_E_DOWN (not initialised), NIC_E_DEVICE (the device
 * refused a setting: virtio feature or queue).
 */
#ifndef TV_NIC_H
#define TV_NIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "drivers/devio.h"
#include "drivers/pci.h"

#define NIC_E_ARG     (-1)
#define NIC_E_NODEV   (-2)
#define NIC_E_BAR     (-3)
#define NIC_E_TIMEOUT (-4)
#define NIC_E_NOMEM   (-5)
#define NIC_E_FULL    (-6)
#define NIC_E_SIZE    (-7)
#define NIC_E_DOWN    (-8)
#define NIC_E_DEVICE  (-9)

/* Ethernet frame without FCS: 14-byte header + 1500-byte payload. */
#define NIC_FRAME_MAX 1514
#define NIC_FRAME_MIN 14
/* One block for any driver's state, rings and buffers. */
#define NIC_DMA_BYTES (1024u * 1024)   /* e1000: 64 RX + 256 TX buffers of 2 KiB */

struct nic_stats {
	uint64_t tx_frames, tx_bytes;
	uint64_t rx_frames, rx_bytes;
	uint64_t tx_drops;    /* transmit ring full, frame not sent */
	uint64_t rx_drops;    /* received but not delivered (bad length, no EOP) */
	uint64_t errors;      /* receive errors reported by the device */
};

/* A received frame: valid only during the call. */
typedef void (*nic_rx_fn)(void *ctx, const void *frame, size_t len);

struct nic;

struct nic_driver {
	const char *name;
	/* Model name for vendor:device, or NULL if the driver does not take it. */
	const char *(*match)(uint16_t vendor, uint16_t device);
	int bar;                      /* register window: BAR index ... */
	enum pci_bar_kind bar_kind;   /* ... and kind (PCI_BAR_MEM32 = any memory BAR) */
	/* Read the station address into nic->mac without resetting anything. */
	int (*read_mac)(struct nic *nic);
	/* Reset, read the MAC, set up rings in nic->dma, enable RX/TX. */
	int (*init)(struct nic *nic);
	int (*tx)(struct nic *nic, const void *frame, size_t len);
	/* Frames handed to tx that the device has not finished sending. */
	unsigned (*tx_pending)(struct nic *nic);
	/* Deliver up to budget frames; returns how many, or an error. */
	int (*poll)(struct nic *nic, nic_rx_fn fn, void *ctx, unsigned budget);
	bool (*link_up)(struct nic *nic);
	/* Stop DMA for good: the rings' memory may be reused after this. */
	void (*stop)(struct nic *nic);
};

struct nic {
	const struct nic_driver *drv;
	const char *model;
	struct pci_dev pci;
	struct devio io;          /* the register window */
	uint8_t mac[6];
	struct nic_stats stats;
	uint8_t *dma;             /* identity mapped: also the device address */
	size_t dma_len;
	void *priv;               /* driver state, inside dma */
	bool up;
};

extern const struct nic_driver e1000_driver;
extern const struct nic_driver virtio_net_driver;

/* nic_find_driver - the driver for vendor:device (model set), or NULL. */
const struct nic_driver *nic_find_driver(uint16_t vendor, uint16_t device,
					 const char **model);

/* What nic_select looks for (config key nic=, docs/CONFIG.md). */
enum nic_want_kind { NIC_WANT_AUTO, NIC_WANT_PCI, NIC_WANT_MAC };
struct nic_want {
	enum nic_want_kind kind;
	struct pci_addr addr;     /* NIC_WANT_PCI */
	uint8_t mac[6];           /* NIC_WANT_MAC */
};

/*
 * nic_attach - bind nic to the function d: driver by ID, register window
 * from its BAR, PCI memory or I/O decoding and bus mastering on, INTx off,
 * MAC read.  No reset, no DMA yet.  Returns 0, NIC_E_NODEV, NIC_E_BAR or
 * the driver's read_mac error.
 */
int nic_attach(struct nic *nic, const struct pci_cfg *c, const struct pci_dev *d);

/*
 * nic_select - scan the bus for the NIC want names and attach it to nic:
 * the first supported one (AUTO), the one at that address (PCI), the one
 * with that MAC (MAC).  Returns 0 or NIC_E_NODEV.
 */
int nic_select(struct nic *nic, const struct pci_cfg *c, const struct nic_want *want);

/*
 * nic_init - bring an attached NIC up using dma[0..len) (4 KiB aligned,
 * at least NIC_DMA_BYTES).  Returns 0, NIC_E_ARG, NIC_E_NOMEM or the
 * driver's error.
 */
int nic_init(struct nic *nic, void *dma, size_t len);

/*
 * nic_tx_pending - frames nic_tx accepted that the device has not yet
 * reported sent (descriptors reclaimed on the way); 0 when down.
 */
unsigned nic_tx_pending(struct nic *nic);

/* nic_tx - send one frame (copied). 0, NIC_E_DOWN, NIC_E_SIZE, NIC_E_FULL. */
int nic_tx(struct nic *nic, const void *frame, size_t len);
/* nic_poll - receive up to budget frames. Count delivered, or NIC_E_DOWN. */
int nic_poll(struct nic *nic, nic_rx_fn fn, void *ctx, unsigned budget);
bool nic_link_up(struct nic *nic);
/* nic_stop - quiesce: no DMA afterwards, bus mastering off. */
void nic_stop(struct nic *nic, const struct pci_cfg *c);

const char *nic_strerror(int err);
/* "52:54:00:12:34:56" into buf (at least 18 bytes). */
void nic_format_mac(char *buf, const uint8_t mac[6]);

#endif /* TV_NIC_H */
