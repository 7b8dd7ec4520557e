/* SPDX-License-Identifier: MIT */
/*
 * stream.h - iterate the records of one CPU's record stream.
 *
 * A thin adapter over vmm/trace_read.[ch], the validating reader shared
 * with the hypervisor (it also expands compact branches): walk.c, the
 * exporters and the CLI use only this header, with the host tools' error
 * codes (enum tvh_error).  vmm/trace/format.h is the normative layout.
 *
 * The caller feeds linear buffers of whole records (the payload of one
 * .tvt records chunk) one after another with the sequence number of the
 * first record; the stream keeps what it needs across buffers (the
 * previous branch's `to` for compact branches) when told the new buffer
 * continues the previous one.
 */
#ifndef TVH_STREAM_H
#define TVH_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host-tools/lib/error.h"
#include "vmm/trace/format.h"
#include "vmm/trace/read.h"

/*
 * Records come out as vmm/trace/read.h's struct trace_event (seq, offset,
 * raw header fields, tsc, the per-type union; pointers point into the
 * buffer fed).
 */
struct tvh_stream {
	struct trace_reader rd;
};

/* An empty stream: tvh_next_record() returns 0 until fed. */
void tvh_stream_init(struct tvh_stream *s);

/*
 * tvh_stream_feed - continue with buf[0..len), whose first record has
 * sequence number first_seq.  contiguous: the buffer directly follows
 * the previous one in the producer's stream (no record missing between
 * them); when false the compact-branch state is dropped.
 */
void tvh_stream_feed(struct tvh_stream *s, const void *buf, size_t len,
		     uint64_t first_seq, bool contiguous);

/*
 * tvh_next_record - decode the next record into *r.
 *
 * Returns 1 with *r filled, 0 at the end of the buffer, or a negative
 * enum tvh_error:
 *  skippable (r->seq, offset, type, info, size, aux are filled, the
 *  record consumed its sequence number, the next call goes on after it):
 *   -TVH_ERR_REC_TYPE      unknown type
 *   -TVH_ERR_REC_FIELD     size or fields do not match the type
 *   -TVH_ERR_REC_NO_PREV   compact branch with no branch before it since
 *                          the start, a non-contiguous feed, a fatal error,
 *                          START, LOST, an unknown type or a branch of the
 *                          wrong size: `from` is 0, `to` is set and the
 *                          chain goes on from it
 *  fatal (r->offset and r->seq say where; the rest of the buffer is not
 *  parsed and the next call returns 0):
 *   -TVH_ERR_REC_SIZE      size < 8, not a multiple of 8, > TV_REC_MAX_SIZE
 *   -TVH_ERR_TRUNCATED     the record runs past the end of the buffer
 * PAD records are returned like any other record (they hold a sequence
 * number: the stream is a sequence of records, see trace_format.h).
 */
int tvh_next_record(struct tvh_stream *s, struct trace_event *r);

/* True for the errors after which tvh_next_record() can go on. */
static inline bool tvh_record_error_is_skippable(int err)
{
	return err != -TVH_ERR_REC_SIZE && err != -TVH_ERR_TRUNCATED;
}

/* Names for printing: "BRANCH", "call", "boot", ...; "?" when unknown. */
const char *tvh_rec_type_name(unsigned type);
const char *tvh_branch_kind_name(unsigned kind);
const char *tvh_trigger_name(unsigned trigger);
const char *tvh_image_kind_name(unsigned kind);
const char *tvh_source_name(unsigned source);

#endif /* TVH_STREAM_H */
