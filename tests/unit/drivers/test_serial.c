/* SPDX-License-Identifier: MIT */
/*
 * test_serial.c - the polled 16550 driver (drivers/serial.c) against the
 * fake UART of tests/fakes/hw_fake, and against no UART at all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "drivers/serial.h"
#include "hw_fake.h"
#include "vmm/lib/log.h"

static struct serial_port sp;

static int setup(void **state)
{
	(void)state;
	hw_fake_reset();
	log_clear_sinks();
	log_set_ring(NULL);
	log_set_level(LOG_INFO);
	memset(&sp, 0xa5, sizeof(sp));
	return 0;
}

/* The back-th most recent OUT must be (port, value), one byte wide. */
static void assert_out(size_t back, uint16_t port, uint8_t value)
{
	const struct hw_fake_io *io = hw_fake_io_out_log(back);

	assert_non_null(io);
	if (io->port != port || io->value != value || io->width != 1)
		fail_msg("OUT #-%zu: port %#x value %#x width %u, want port %#x value %#x",
			 back, io->port, io->value, io->width, port, value);
}

static void test_init_programs_115200_8n1(void **state)
{
	struct hw_fake_uart *u;

	(void)state;
	u = hw_fake_uart_attach(0x3f8);
	assert_int_equal(serial_init(&sp, 0x3f8), 0);
	assert_int_equal(sp.base, 0x3f8);
	assert_int_equal(sp.timeouts, 0);

	/* The register file the UART ended with. */
	assert_int_equal(u->dll, 1);           /* divisor 1: 115200 baud */
	assert_int_equal(u->dlm, 0);
	assert_int_equal(u->lcr, 0x03);        /* 8N1, DLAB clear again */
	assert_int_equal(u->ier, 0);           /* interrupts off */
	assert_int_equal(u->fcr, 0x07);        /* FIFOs on and cleared */
	assert_int_equal(u->mcr, 0x03);        /* DTR, RTS */
	assert_int_equal(u->tx_total, 0);      /* the divisor did not go out as data */

	/* And the order: probe, IER, DLAB, divisor, 8N1, FCR, MCR. */
	assert_int_equal(hw_fake_io_out_count, 8);
	assert_out(7, 0x3ff, 0x5a);
	assert_out(6, 0x3f9, 0x00);
	assert_out(5, 0x3fb, 0x80);
	assert_out(4, 0x3f8, 0x01);
	assert_out(3, 0x3f9, 0x00);
	assert_out(2, 0x3fb, 0x03);
	assert_out(1, 0x3fa, 0x07);
	assert_out(0, 0x3fc, 0x03);
}

static void test_init_other_base(void **state)
{
	struct hw_fake_uart *u1, *u2;

	(void)state;
	u1 = hw_fake_uart_attach(0x3f8);
	u2 = hw_fake_uart_attach(0x2f8);
	assert_int_equal(serial_init(&sp, 0x2f8), 0);
	assert_int_equal(sp.base, 0x2f8);
	assert_int_equal(u2->lcr, 0x03);
	assert_int_equal(u2->dll, 1);
	assert_int_equal(u1->lcr, 0);          /* COM1 untouched */
	serial_write(&sp, "2", 1);
	assert_string_equal(u2->tx, "2");
	assert_int_equal(u1->tx_total, 0);
}

static void test_init_without_uart(void **state)
{
	uint64_t outs;

	(void)state;
	hw_fake_uart_attach(0x3f8);  /* a UART elsewhere */
	assert_int_equal(serial_init(&sp, 0x2e8), -1);
	assert_int_equal(sp.base, 0);
	assert_int_equal(sp.timeouts, 0);
	/* Only the scratch probe went out. */
	assert_int_equal(hw_fake_io_out_count, 1);
	assert_out(0, 0x2ef, 0x5a);

	outs = hw_fake_io_out_count;
	serial_write(&sp, "lost\n", 5);
	assert_int_equal(hw_fake_io_out_count, outs);
	assert_int_equal(sp.timeouts, 0);
}

/* A device whose offset 7 reads back something else (here: always 0). */
static uint32_t not_a_uart(uint16_t port, int width, void *ctx)
{
	(void)port;
	(void)width;
	(void)ctx;
	return 0;
}

static void test_init_scratch_mismatch(void **state)
{
	(void)state;
	hw_fake_set_io_in(not_a_uart, NULL);
	assert_int_equal(serial_init(&sp, 0x3f8), -1);
	assert_int_equal(sp.base, 0);
	assert_int_equal(hw_fake_io_out_count, 1);
}

static void test_newline_becomes_crlf(void **state)
{
	struct hw_fake_uart *u;

	(void)state;
	u = hw_fake_uart_attach(0x3f8);
	assert_int_equal(serial_init(&sp, 0x3f8), 0);
	serial_write(&sp, "a\nb\n\n", 5);
	assert_string_equal(u->tx, "a\r\nb\r\n\r\n");
	assert_int_equal(u->tx_total, 8);
	/* an existing CR is passed through, so CRLF becomes CR CR LF */
	serial_write(&sp, "c\r\n", 3);
	assert_string_equal(u->tx, "a\r\nb\r\n\r\nc\r\r\n");
	assert_int_equal(sp.timeouts, 0);
}

static void test_write_uses_len_not_nul(void **state)
{
	struct hw_fake_uart *u;

	(void)state;
	u = hw_fake_uart_attach(0x3f8);
	assert_int_equal(serial_init(&sp, 0x3f8), 0);
	serial_write(&sp, "ab\0cd", 5);
	assert_int_equal(u->tx_len, 5);
	assert_memory_equal(u->tx, "ab\0cd", 5);
	serial_write(&sp, "xyz", 0);
	assert_int_equal(u->tx_len, 5);
	/* no port: nothing, no crash */
	serial_write(NULL, "x", 1);
	assert_int_equal(u->tx_len, 5);
}

static void test_thre_never_set_times_out(void **state)
{
	struct hw_fake_uart *u;

	(void)state;
	u = hw_fake_uart_attach(0x3f8);
	assert_int_equal(serial_init(&sp, 0x3f8), 0);
	u->thre_stuck = true;
	serial_write(&sp, "x\n", 2);  /* 'x', '\r', '\n': three characters */
	assert_int_equal(sp.timeouts, 3);
	assert_int_equal(u->tx_total, 0);
	/* Bounded polling: the same number of LSR reads and PAUSEs per character. */
	assert_true(u->lsr_reads >= 3 * 1000);
	assert_true(u->lsr_reads <= 3 * 1000000);
	assert_int_equal(u->lsr_reads % 3, 0);
	assert_int_equal(hw_fake_pause_count, u->lsr_reads);

	/* The transmitter recovers: writes work again, the count stays. */
	u->thre_stuck = false;
	serial_write(&sp, "ok", 2);
	assert_string_equal(u->tx, "ok");
	assert_int_equal(sp.timeouts, 3);
}

static void test_attach_writes_no_registers(void **state)
{
	struct hw_fake_uart *u;

	(void)state;
	u = hw_fake_uart_attach(0x3f8);
	u->lcr = 0x03;  /* programmed by the firmware */
	u->dll = 12;    /* 9600 baud */
	serial_attach(&sp, 0x3f8);
	assert_int_equal(sp.base, 0x3f8);
	assert_int_equal(sp.timeouts, 0);
	assert_int_equal(hw_fake_io_out_count, 0);
	serial_write(&sp, "hi", 2);
	assert_string_equal(u->tx, "hi");
	assert_int_equal(u->dll, 12);
	assert_int_equal(u->lcr, 0x03);
}

static void test_as_log_sink(void **state)
{
	struct hw_fake_uart *u;

	(void)state;
	u = hw_fake_uart_attach(0x3f8);
	assert_int_equal(serial_init(&sp, 0x3f8), 0);
	assert_int_equal(log_add_sink(serial_write, &sp), 0);
	log_info("serial %s", "up");
	log_debug("not shown");
	log_clear_sinks();
	assert_string_equal(u->tx, "[info] serial up\r\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_init_programs_115200_8n1, setup),
		cmocka_unit_test_setup(test_init_other_base, setup),
		cmocka_unit_test_setup(test_init_without_uart, setup),
		cmocka_unit_test_setup(test_init_scratch_mismatch, setup),
		cmocka_unit_test_setup(test_newline_becomes_crlf, setup),
		cmocka_unit_test_setup(test_write_uses_len_not_nul, setup),
		cmocka_unit_test_setup(test_thre_never_set_times_out, setup),
		cmocka_unit_test_setup(test_attach_writes_no_registers, setup),
		cmocka_unit_test_setup(test_as_log_sink, setup),
	};

	return cmocka_run_group_tests_name("test_serial", tests, NULL, NULL);
}
