/* SPDX-License-Identifier: MIT */
/*
 * stream.h - iterate the records of one CPU's record stream.
 *
 * THIS IS A STOPGAP SEAM.  vmm/trace_read.[ch] (a validating reader of
 * linear record buffers that also expands compact branches) is being
 * written separately; when it lands, stream.c is replaced by a thin
 * adapter over it and everything above (walk.c, the exporters, the CLI)
 * keeps using only this header.  Nothing outside stream.c knows the
 * wire layout of a record (vmm/trace_format.h is the normative one).
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

#include "host-tools/error.h"
#include "vmm/trace_format.h"

/* One decoded record, host byte order.  Pointers point into the buffer. */
struct tvh_record {
	uint64_t seq;            /* its sequence number in the CPU's stream */
	uint64_t offset;         /* byte offset of the record in the buffer */
	uint8_t type;            /* enum tv_rec_type (raw, may be unknown) */
	uint8_t info;            /* raw tv_rec.info */
	uint16_t size;           /* raw tv_rec.size */
	uint32_t aux;            /* raw tv_rec.aux */
	bool has_tsc;            /* tsc below is valid */
	uint64_t tsc;
	union {
		/* BRANCH, BRANCH_COMPACT (from expanded), LBR */
		struct {
			uint64_t from;
			uint64_t to;
			uint64_t lbr_info;   /* LBR only */
			uint32_t flags;      /* TV_BRF_* (0 for compact) */
			uint8_t kind;        /* enum tv_branch_kind */
			bool compact;
		} branch;
		struct {
			uint64_t cr3;
			uint64_t rip;
		} cr3;
		struct {                     /* START, STOP */
			uint64_t rip;
			uint32_t trigger;    /* enum tv_trigger */
		} startstop;
		struct {
			uint64_t tsc_hz;
			uint64_t unix_ns;
		} time;
		struct {                     /* CONFIG, LOG */
			const char *text;    /* not NUL terminated */
			uint32_t len;
			uint8_t level;       /* LOG only */
		} text;
		struct {
			uint64_t base;
			uint64_t size;
			const char *name;    /* not NUL terminated */
			uint32_t name_len;
			uint8_t kind;        /* enum tv_image_kind */
		} image;
		struct {
			uint64_t records;
		} lost;
		struct {
			uint64_t value;
			const char *label;   /* not NUL terminated */
			uint32_t label_len;
		} marker;
		struct {
			uint64_t pt_offset;
			uint64_t pt_lost;
		} pt_sync;
	} u;
};

struct tvh_stream {
	const uint8_t *buf;
	size_t len;
	size_t pos;
	uint64_t next_seq;       /* sequence number of the record at pos */
	uint64_t prev_to;        /* `to` of the last full or compact branch */
	bool have_prev;
	bool stopped;            /* a fatal error ended the current buffer */
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
int tvh_next_record(struct tvh_stream *s, struct tvh_record *r);

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
