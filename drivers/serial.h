/* SPDX-License-Identifier: MIT */
/*
 * serial.h - polled 16550 UART output (COM1 by default), the first log sink.
 */
#ifndef TV_SERIAL_H
#define TV_SERIAL_H

#include <stddef.h>
#include <stdint.h>

struct serial_port {
	uint16_t base;       /* I/O base, e.g. 0x3f8 */
	uint32_t timeouts;   /* characters given up on: transmitter never ready */
};

/*
 * serial_init - program 115200 8N1, FIFOs on, interrupts off.
 * Returns 0, or -1 when no UART answers at base (scratch register test);
 * the port is then left untouched and serial_write does nothing.
 */
int serial_init(struct serial_port *sp, uint16_t base);

/*
 * serial_attach - use a UART someone already programmed (no register
 * writes: reprogramming clears the FIFO and loses what is in flight).
 */
void serial_attach(struct serial_port *sp, uint16_t base);

/* serial_write - write text, "\n" as "\r\n"; a log_sink_fn (ctx = port). */
void serial_write(void *ctx, const char *text, size_t len);

#endif /* TV_SERIAL_H */
