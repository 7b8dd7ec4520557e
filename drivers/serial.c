/* SPDX-License-Identifier: MIT */
/*
 * serial.c - 16550 UART, polled.  Register offsets per the 16550D data
 * sheet: THR/RBR 0, IER 1, FCR 2, LCR 3, MCR 4, LSR 5, SCR 7; DLL/DLM at
 * 0/1 while LCR.DLAB is set.
 */
#include "drivers/serial.h"

#include "vmm/hw/hw.h"

#define UART_THR 0
#define UART_IER 1
#define UART_FCR 2
#define UART_LCR 3
#define UART_MCR 4
#define UART_LSR 5
#define UART_SCR 7
#define UART_LSR_THRE 0x20
#define UART_LCR_DLAB 0x80
#define UART_LCR_8N1 0x03

/* 115200 baud: divisor 1 from the 1.8432 MHz clock / 16. */
#define UART_DIVISOR 1
/* ~1 ms of polling at worst per character before giving up on it. */
#define UART_SPIN_LIMIT 100000

int serial_init(struct serial_port *sp, uint16_t base)
{
	sp->base = 0;
	sp->timeouts = 0;
	/* The scratch register holds what is written only if a UART is there. */
	hw_outb(base + UART_SCR, 0x5a);
	if (hw_inb(base + UART_SCR) != 0x5a)
		return -1;
	hw_outb(base + UART_IER, 0x00);
	hw_outb(base + UART_LCR, UART_LCR_DLAB);
	hw_outb(base + 0, UART_DIVISOR & 0xff);
	hw_outb(base + 1, UART_DIVISOR >> 8);
	hw_outb(base + UART_LCR, UART_LCR_8N1);
	hw_outb(base + UART_FCR, 0x07);  /* enable and clear FIFOs */
	hw_outb(base + UART_MCR, 0x03);  /* DTR, RTS */
	sp->base = base;
	return 0;
}

void serial_attach(struct serial_port *sp, uint16_t base)
{
	sp->base = base;
	sp->timeouts = 0;
}

static void serial_putc(struct serial_port *sp, char c)
{
	for (int i = 0; i < UART_SPIN_LIMIT; i++) {
		if (hw_inb(sp->base + UART_LSR) & UART_LSR_THRE) {
			hw_outb(sp->base + UART_THR, (uint8_t)c);
			return;
		}
		hw_pause();
	}
	sp->timeouts++;
}

void serial_write(void *ctx, const char *text, size_t len)
{
	struct serial_port *sp = ctx;

	if (!sp || !sp->base)
		return;
	for (size_t i = 0; i < len; i++) {
		if (text[i] == '\n')
			serial_putc(sp, '\r');
		serial_putc(sp, text[i]);
	}
}
