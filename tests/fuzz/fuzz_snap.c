/* SPDX-License-Identifier: MIT */
/*
 * fuzz_snap.c - libFuzzer target: a .tvt's code snapshots (TV_REC_CODE,
 * TV_REC_CODE_DATA) through the snapshot store (snap.c: pages assembled
 * from chunks, hashes checked, lifetimes per guest-physical page) and
 * read back by lookup, span, read and a cursor at the addresses the
 * records name, as `tracevisor` decoders read code from a capture.
 * The same input is loaded a second time with a bound of 0 to 2 pages
 * (the input's size picks it), so that contents go to the spill file
 * (snap.c): every answer must be the one of the store in memory.
 */
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/snap.h"
#include "host-tools/lib/tvt.h"
#include "vmm/trace/format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t page[2 * TV_CODE_PAGE], page2[2 * TV_CODE_PAGE];
	struct tvh_snap_opts mem = { .spill_bytes = UINT64_MAX, .dir = "/tmp" };
	struct tvh_snap_opts so;
	struct tvt_reader r;
	struct tvh_snap *s = NULL, *f = NULL;
	struct tvh_snap_stats st, fst;
	struct tvh_snap_cursor cur;

	if (tvt_reader_open_mem(&r, data, size))
		return 0;
	if (tvh_snap_load_opts(&r, NULL, &mem, &s) || !s) {
		tvt_reader_close(&r);
		return 0;
	}
	tvh_snap_get_stats(s, &st);
	tvh_snap_opts_default(&so);
	so.spill_bytes = (uint64_t)(size % 3) * TV_CODE_PAGE;
	tvt_reader_rewind(&r);
	/* A spill file that cannot be made (full disk) is an error, never a drop. */
	if (tvh_snap_load_opts(&r, NULL, &so, &f) && f)
		abort();
	if (f) {
		tvh_snap_get_stats(f, &fst);
		if (fst.bytes != st.bytes || fst.mem_bytes > so.spill_bytes ||
		    fst.mem_bytes + fst.spilled_bytes != fst.bytes || st.spilled_bytes)
			abort();
		fst.mem_bytes = st.mem_bytes;
		fst.spilled_bytes = st.spilled_bytes;
		if (memcmp(&fst, &st, sizeof(st)))
			abort();
	}
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
		if (f) {
			struct tvh_snap_hit fh;
			uint64_t flo, fhi;
			int ret = tvh_snap_lookup(s, cr3, ip, tsc, &hit);

			if (tvh_snap_lookup(f, cr3, ip, tsc, &fh) != ret ||
			    (!ret && (fh.start != hit.start || fh.end != hit.end ||
				      fh.hash != hit.hash ||
				      memcmp(fh.page, hit.page, TV_CODE_PAGE))))
				abort();
			tvh_snap_span(f, ip, tsc, &flo, &fhi);
			if (flo != lo || fhi != hi)
				abort();
			if (tvh_snap_read(f, cr3, ip, tsc, page2, sizeof(page2)) != n ||
			    memcmp(page, page2, n))
				abort();
		}
	}
	tvh_snap_free(f);
	tvh_snap_free(s);
	tvt_reader_close(&r);
	return 0;
}
