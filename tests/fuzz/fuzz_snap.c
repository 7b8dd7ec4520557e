/* SPDX-License-Identifier: MIT */
/*
 * fuzz_snap.c - libFuzzer target: a .tvt's code snapshots (TV_REC_CODE,
 * TV_REC_CODE_DATA) through the snapshot store (snap.c: pages assembled
 * from chunks, hashes checked, lifetimes per guest-physical page) and
 * read back by lookup, span, read and a cursor at the addresses the
 * records name, as `tracevisor` decoders read code from a capture.
 */
#include <stdlib.h>

#include "host-tools/lib/snap.h"
#include "host-tools/lib/tvt.h"
#include "vmm/trace/format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t page[2 * TV_CODE_PAGE];
	struct tvt_reader r;
	struct tvh_snap *s = NULL;
	struct tvh_snap_stats st;
	struct tvh_snap_cursor cur;

	if (tvt_reader_open_mem(&r, data, size))
		return 0;
	if (tvh_snap_load(&r, NULL, &s) || !s) {
		tvt_reader_close(&r);
		return 0;
	}
	tvh_snap_get_stats(s, &st);
	tvh_snap_cursor_init(&cur, s);
	/* Probe at addresses and times taken from the input's tail: the
	 * records' own values show up there in the seeds' shape. */
	for (size_t off = size >= 256 ? size - 256 : 0; off + 24 <= size; off += 24) {
		struct tvh_snap_hit hit;
		uint64_t cr3 = 0, ip = 0, tsc = 0, lo, hi;
		size_t n;

		for (unsigned b = 0; b < 8; b++) {
			cr3 |= (uint64_t)data[off + b] << (8 * b);
			ip |= (uint64_t)data[off + 8 + b] << (8 * b);
			tsc |= (uint64_t)data[off + 16 + b] << (8 * b);
		}
		if (tvh_snap_lookup(s, cr3, ip, tsc, &hit) == 0 && !hit.page)
			abort();
		tvh_snap_span(s, ip, tsc, &lo, &hi);
		if (lo > tsc || (hi <= tsc && hi != UINT64_MAX))
			abort();
		n = tvh_snap_read(s, cr3, ip, tsc, page, sizeof(page));
		if (n > sizeof(page))
			abort();
		/* The cursor is a cache: it never changes an answer. */
		if (tvh_snap_cursor_read(&cur, cr3, ip, tsc, page, sizeof(page)) != n)
			abort();
	}
	tvh_snap_free(s);
	tvt_reader_close(&r);
	return 0;
}
