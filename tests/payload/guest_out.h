/* SPDX-License-Identifier: MIT */
/*
 * guest_out.h - output helpers shared by the bench's guest programs
 * (tests/payload/payload.c, lbrtest.c and the model tests' programs):
 * polled COM1 and number formatting without a libc.  Each program
 * includes it once.
 */
#ifndef TV_GUEST_OUT_H
#define TV_GUEST_OUT_H

#include <stdint.h>

#include "vmm/hw/hw.h"

#define COM1 0x3f8

/* Write s to COM1, waiting (bounded) for the transmitter each byte. */
static void com1_puts(const char *s)
{
	for (; *s; s++) {
		for (int i = 0; i < 100000 && !(hw_inb(COM1 + 5) & 0x20); i++)
			hw_pause();
		hw_outb(COM1, (uint8_t)*s);
	}
}

/* Each writes at p, NUL-terminates, and returns the new end. */
static char *hex(char *p, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";

	*p++ = '0';
	*p++ = 'x';
	for (int sh = 60; sh >= 0; sh -= 4)
		*p++ = digits[(v >> sh) & 0xf];
	*p = '\0';
	return p;
}

static char *dec(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	*p = '\0';
	return p;
}

static char *append(char *p, const char *s)
{
	while (*s)
		*p++ = *s++;
	*p = '\0';
	return p;
}

/* One COM1 line: text, v as hex() writes it, CR LF. */
static inline void com1_say_hex(const char *text, uint64_t v)
{
	char num[24];

	hex(num, v);
	com1_puts(text);
	com1_puts(num);
	com1_puts("\r\n");
}

#endif /* TV_GUEST_OUT_H */
