/* SPDX-License-Identifier: MIT */
/*
 * virtio_net.h - virtio-net through the legacy interface of a PCI
 * transitional device (1af4:1000, QEMU's virtio-net-pci on a root bus),
 * polled.
 *
 * Source: "Virtual I/O Device (VIRTIO) Version 1.0" (OASIS), the legacy
 * notes: 4.1.4.8 (register layout of I/O BAR 0), 2.4.2 (virtqueue layout),
 * 5.1.6 (struct virtio_net_hdr, 10 bytes without MRG_RXBUF).  Why legacy:
 * one I/O BAR and a fixed layout, no capability walk and no 64-bit BAR
 * mapping; QEMU exposes it on every virtio-net-pci not behind a PCIe port.
 * The modern-only 1af4:1041 is not taken (docs/NET.md).
 *
 * Each packet uses two chained descriptors, header then data, the framing
 * legacy devices without VIRTIO_F_ANY_LAYOUT expect (2.6.4.1).  The
 * driver suppresses interrupts (VRING_AVAIL_F_NO_INTERRUPT) and polls the
 * used rings.
 */
#ifndef TV_VIRTIO_NET_H
#define TV_VIRTIO_NET_H

#include <stdint.h>

#include "drivers/nic.h"

/* Legacy I/O BAR 0 registers (virtio 1.0, 4.1.4.8), MSI-X off. */
#define VIRTIO_PCI_HOST_FEATURES  0x00   /* 32 */
#define VIRTIO_PCI_GUEST_FEATURES 0x04   /* 32 */
#define VIRTIO_PCI_QUEUE_PFN      0x08   /* 32: queue address >> 12 */
#define VIRTIO_PCI_QUEUE_NUM      0x0c   /* 16, read-only in legacy */
#define VIRTIO_PCI_QUEUE_SEL      0x0e   /* 16 */
#define VIRTIO_PCI_QUEUE_NOTIFY   0x10   /* 16 */
#define VIRTIO_PCI_STATUS         0x12   /* 8 */
#define VIRTIO_PCI_ISR            0x13   /* 8 */
#define VIRTIO_PCI_CONFIG         0x14   /* device-specific configuration */
#define VIRTIO_NET_CFG_MAC        (VIRTIO_PCI_CONFIG + 0)
#define VIRTIO_NET_CFG_STATUS     (VIRTIO_PCI_CONFIG + 6)

/* Device status (virtio 1.0, 2.1). */
#define VIRTIO_STATUS_ACKNOWLEDGE 1u
#define VIRTIO_STATUS_DRIVER      2u
#define VIRTIO_STATUS_DRIVER_OK   4u
#define VIRTIO_STATUS_FAILED      0x80u

/* Feature bits (virtio 1.0, 5.1.3). */
#define VIRTIO_NET_F_MAC    (1u << 5)
#define VIRTIO_NET_F_STATUS (1u << 16)
#define VIRTIO_NET_S_LINK_UP 1u

#define VIRTIO_NET_RXQ 0
#define VIRTIO_NET_TXQ 1
#define VIRTIO_QUEUE_MAX 1024     /* largest queue size this driver lays out */
#define VIRTIO_LEGACY_ALIGN 4096  /* legacy used-ring alignment (2.4.2) */

struct virtq_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};
_Static_assert(sizeof(struct virtq_desc) == 16, "virtq descriptor is 16 bytes (2.4.5)");
#define VIRTQ_DESC_F_NEXT  1u
#define VIRTQ_DESC_F_WRITE 2u

#define VIRTQ_AVAIL_F_NO_INTERRUPT 1u

struct virtq_used_elem {
	uint32_t id;
	uint32_t len;
};
_Static_assert(sizeof(struct virtq_used_elem) == 8, "used element is 8 bytes (2.4.8)");

struct virtio_net_hdr {
	uint8_t flags;
	uint8_t gso_type;
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
};
_Static_assert(sizeof(struct virtio_net_hdr) == 10, "legacy virtio_net_hdr is 10 bytes (5.1.6)");

/* Byte offsets of a legacy virtqueue of size n (2.4.2): descriptors, the
 * available ring, then the used ring on the next 4 KiB boundary. */
static inline uint32_t virtq_avail_off(uint32_t n)
{
	return 16 * n;
}

static inline uint32_t virtq_used_off(uint32_t n)
{
	return (16 * n + 6 + 2 * n + VIRTIO_LEGACY_ALIGN - 1) & ~(uint32_t)(VIRTIO_LEGACY_ALIGN - 1);
}

static inline uint32_t virtq_bytes(uint32_t n)
{
	return virtq_used_off(n) +
	       ((6 + 8 * n + VIRTIO_LEGACY_ALIGN - 1) & ~(uint32_t)(VIRTIO_LEGACY_ALIGN - 1));
}

#endif /* TV_VIRTIO_NET_H */
