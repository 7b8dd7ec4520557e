/* SPDX-License-Identifier: MIT */
/*
 * stream.c - the record iterator of the host tools: vmm/trace_read with
 * the host tools' error codes (see stream.h).
 */
#include "host-tools/lib/stream.h"

void tvh_stream_init(struct tvh_stream *s)
{
	trace_reader_init(&s->rd);
}

void tvh_stream_feed(struct tvh_stream *s, const void *buf, size_t len,
		     uint64_t first_seq, bool contiguous)
{
	trace_reader_feed(&s->rd, buf, len, first_seq, contiguous);
}

static int tvh_err(int err)
{
	switch (err) {
	case TRACE_ERR_REC_TYPE: return -TVH_ERR_REC_TYPE;
	case TRACE_ERR_REC_FIELD: return -TVH_ERR_REC_FIELD;
	case TRACE_ERR_NO_PREV: return -TVH_ERR_REC_NO_PREV;
	case TRACE_ERR_REC_SIZE: return -TVH_ERR_REC_SIZE;
	case TRACE_ERR_TRUNCATED: return -TVH_ERR_TRUNCATED;
	default: return -TVH_ERR_INVALID;   /* trace_read returns no other */
	}
}

int tvh_next_record(struct tvh_stream *s, struct trace_event *r)
{
	int ret = trace_reader_next(&s->rd, r);

	return ret < 0 ? tvh_err(ret) : ret;
}

static const char *name_of(const char *const *names, unsigned n, unsigned i)
{
	return i < n && names[i] ? names[i] : "?";
}

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

const char *tvh_rec_type_name(unsigned type)
{
	return trace_rec_type_name(type);
}

const char *tvh_branch_kind_name(unsigned kind)
{
	return trace_branch_kind_name(kind);
}

const char *tvh_trigger_name(unsigned trigger)
{
	return trace_trigger_name(trigger);
}

const char *tvh_image_kind_name(unsigned kind)
{
	static const char *const names[] = {
		[TV_IMG_FIRMWARE] = "firmware", [TV_IMG_LOADER] = "loader",
		[TV_IMG_KERNEL] = "kernel", [TV_IMG_OTHER] = "other",
	};

	return name_of(names, ARRAY_LEN(names), kind);
}

const char *tvh_source_name(unsigned source)
{
	const char *name = tv_source_name(source);

	if (source == TV_SOURCE_NONE)
		return "none";
	return name ? name : "?";
}
