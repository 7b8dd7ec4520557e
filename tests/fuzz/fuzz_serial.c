/* SPDX-License-Identifier: MIT */
/*
 * fuzz_serial.c - libFuzzer target: a serial log (TVT1 lines among other
 * text) through the receiver's line parser into a .tvt in memory, then
 * the .tvt read back.
 */
#include <stdio.h>
#include <stdlib.h>

#include "host-tools/lib/serial_in.h"
#include "host-tools/lib/tvt.h"
#include "host-tools/lib/walk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tvt_file_info info = { .trace_version = TV_TRACE_VERSION, .machine = "fuzz" };
	struct tvh_serial_in in;
	struct tvt_writer w;
	struct tvt_reader r;
	struct tvh_stats s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return 0;
	if (tvt_writer_init(&w, f, &info) == 0) {
		tvh_serial_in_init(&in, &w);
		if (!tvh_serial_in_text(&in, (const char *)data, size))
			tvh_serial_in_finish(&in);
		tvt_writer_finish(&w);
		tvh_serial_in_free(&in);
	}
	fclose(f);
	if (!tvt_reader_open_mem(&r, buf, len)) {
		tvh_walk(&r, NULL, NULL, NULL, &s);
		tvh_stats_free(&s);
		tvt_reader_close(&r);
	}
	free(buf);
	return 0;
}
