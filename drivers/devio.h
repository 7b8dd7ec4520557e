/* SPDX-License-Identifier: MIT */
/*
 * devio.h - register access for device drivers: one accessor per device
 * window (a memory-mapped BAR or an I/O-port BAR).
 *
 * Drivers never dereference a BAR or execute IN/OUT themselves: they call
 * devio_read/devio_write, which go to the window's read/write functions.
 * devio_mmio() and devio_port() fill those with the real accessors
 * (volatile loads and stores; hw_in and hw_out of the seam vmm/hw/hw.h); a unit
 * test fills them with a device model of its own and so sees every
 * register access the driver makes, in order.
 *
 * MMIO windows are used through their physical address: tracevisor runs
 * identity mapped both under the firmware and in VMX root.
 */
#ifndef TV_DEVIO_H
#define TV_DEVIO_H

#include <stdint.h>

struct devio {
	uint64_t base;  /* MMIO address or first I/O port of the window */
	/* width is 1, 2 or 4 bytes; off is relative to base. */
	uint32_t (*read)(void *ctx, uint64_t base, uint32_t off, int width);
	void (*write)(void *ctx, uint64_t base, uint32_t off, int width, uint32_t value);
	void *ctx;
};

/* devio_mmio / devio_port - an accessor for a real memory or I/O window. */
void devio_mmio(struct devio *io, uint64_t base);
void devio_port(struct devio *io, uint16_t base);

static inline uint32_t devio_read32(const struct devio *io, uint32_t off)
{
	return io->read(io->ctx, io->base, off, 4);
}

static inline uint16_t devio_read16(const struct devio *io, uint32_t off)
{
	return (uint16_t)io->read(io->ctx, io->base, off, 2);
}

static inline uint8_t devio_read8(const struct devio *io, uint32_t off)
{
	return (uint8_t)io->read(io->ctx, io->base, off, 1);
}

static inline void devio_write32(const struct devio *io, uint32_t off, uint32_t v)
{
	io->write(io->ctx, io->base, off, 4, v);
}

static inline void devio_write16(const struct devio *io, uint32_t off, uint16_t v)
{
	io->write(io->ctx, io->base, off, 2, v);
}

static inline void devio_write8(const struct devio *io, uint32_t off, uint8_t v)
{
	io->write(io->ctx, io->base, off, 1, v);
}

#endif /* TV_DEVIO_H */
