/* SPDX-License-Identifier: MIT */
/*
 * devio.c - the real register accessors behind drivers/devio.h.
 */
#include "drivers/devio.h"

#include "vmm/hw/hw.h"

static uint32_t mmio_read(void *ctx, uint64_t base, uint32_t off, int width)
{
	uintptr_t a = (uintptr_t)(base + off);

	(void)ctx;
	switch (width) {
	case 1: return *(volatile uint8_t *)a;
	case 2: return *(volatile uint16_t *)a;
	default: return *(volatile uint32_t *)a;
	}
}

static void mmio_write(void *ctx, uint64_t base, uint32_t off, int width, uint32_t v)
{
	uintptr_t a = (uintptr_t)(base + off);

	(void)ctx;
	switch (width) {
	case 1: *(volatile uint8_t *)a = (uint8_t)v; break;
	case 2: *(volatile uint16_t *)a = (uint16_t)v; break;
	default: *(volatile uint32_t *)a = v; break;
	}
}

static uint32_t port_read(void *ctx, uint64_t base, uint32_t off, int width)
{
	uint16_t p = (uint16_t)(base + off);

	(void)ctx;
	switch (width) {
	case 1: return hw_inb(p);
	case 2: return hw_inw(p);
	default: return hw_inl(p);
	}
}

static void port_write(void *ctx, uint64_t base, uint32_t off, int width, uint32_t v)
{
	uint16_t p = (uint16_t)(base + off);

	(void)ctx;
	switch (width) {
	case 1: hw_outb(p, (uint8_t)v); break;
	case 2: hw_outw(p, (uint16_t)v); break;
	default: hw_outl(p, v); break;
	}
}

void devio_mmio(struct devio *io, uint64_t base)
{
	io->base = base;
	io->read = mmio_read;
	io->write = mmio_write;
	io->ctx = 0;
}

void devio_port(struct devio *io, uint16_t base)
{
	io->base = base;
	io->read = port_read;
	io->write = port_write;
	io->ctx = 0;
}
