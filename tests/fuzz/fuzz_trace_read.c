/* SPDX-License-Identifier: MIT */
/*
 * fuzz_trace_read.c - libFuzzer target: vmm/trace_read, the record-stream
 * reader shared with the hypervisor, over arbitrary bytes fed as one or
 * two buffers (the second contiguous or not: compact-branch state).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/trace/read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace_reader rd;
	struct trace_event ev;
	size_t split;
	int ret;

	if (size < 2)
		return 0;
	/* The first byte picks the split point and contiguity. */
	split = (size_t)(data[0] & 0x7f) * 8;
	data++;
	size--;
	if (split > size)
		split = size;
	trace_reader_init(&rd);
	trace_reader_feed(&rd, data, split, 0, false);
	while ((ret = trace_reader_next(&rd, &ev)) != 0)
		if (ret < 0 && !trace_read_error_is_skippable(ret))
			break;
	trace_reader_feed(&rd, data + split, size - split, 1000, (data[-1] & 0x80) != 0);
	while ((ret = trace_reader_next(&rd, &ev)) != 0)
		if (ret < 0 && !trace_read_error_is_skippable(ret))
			break;
	return 0;
}
