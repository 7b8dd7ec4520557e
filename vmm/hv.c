/* SPDX-License-Identifier: MIT */
/*
 * hv.c - initialisation of the resident copy.
 */
#include "vmm/hv.h"

#include "drivers/serial.h"

static struct serial_port hv_com;
struct hv_boot_info hv;

void hv_init(const struct hv_boot_info *bi)
{
	/* Sinks copied from the original point into the original: drop them. */
	hv = *bi;
	log_clear_sinks();
	log_set_ring(bi->log_ring);
	log_set_level(bi->log_level);
	if (bi->serial_port) {
		/* Programmed by boot already: attach, do not reset its FIFO. */
		serial_attach(&hv_com, bi->serial_port);
		log_add_sink(serial_write, &hv_com);
	}
	log_info("hv: resident copy initialised, %u CPUs", bi->ncpus);
}
