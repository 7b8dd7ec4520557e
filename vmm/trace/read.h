/* SPDX-License-Identifier: MIT */
/*
 * trace_read.h - a validating reader of record streams (trace_format.h):
 * linear buffers of whole records, as trace_ring_peek copies them out of a
 * ring or as they arrive over the network.  Used by the host tools too:
 * plain C, no allocation, explicit little-endian loads, and it never
 * trusts its input: every length is checked against the buffer before a
 * byte is read, and every byte fed is accounted as decoded or malformed.
 *
 * A buffer is fed with the sequence number of its first record; the reader
 * keeps across buffers what decoding needs (the previous branch's `to`,
 * for compact branches) as long as the new buffer continues the previous
 * one.  Sizes are exact in version 1 (fixed-size records have their size,
 * text records align(fixed part + length)); a newer layout would come with
 * a new TV_TRACE_VERSION.
 *
 * Errors of trace_reader_next (negative, text from trace_strerror):
 *  skippable: the record's header is sound, so its end is known; ev holds
 *  seq, offset, type, info, size, aux; the record used up its sequence
 *  number and the next call goes on after it:
 *   TRACE_ERR_REC_TYPE    unknown type (it also breaks the branch chain)
 *   TRACE_ERR_REC_FIELD   size does not match the type, or a field is out
 *                         of its enum (branch kind, trigger, log level,
 *                         image kind, memory watch op/mode/origin; a MEM
 *                         record with neither read nor write, a new value
 *                         without write, a size with UNDECODED, an
 *                         unaligned SPLIT page; a watch with lo >= hi)
 *   TRACE_ERR_NO_PREV     compact branch with no branch before it since the
 *                         start, a non-contiguous feed, a fatal error,
 *                         START or LOST: ev has `to` and the offset, `from`
 *                         is 0; the chain goes on from this `to`
 *  fatal: the record's end is unknown, so the rest of the buffer is
 *  reported as one malformed run of len - ev->offset bytes (ev->offset and
 *  ev->seq say where; type, info, size, aux are the raw header when its 8
 *  bytes are there, else 0) and the next call returns 0:
 *   TRACE_ERR_REC_SIZE    size < 8, not a multiple of 8, > TV_REC_MAX_SIZE
 *   TRACE_ERR_TRUNCATED   the record (or its 8-byte header) runs past the
 *                         end of the buffer
 */
#ifndef TV_TRACE_READ_H
#define TV_TRACE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/trace/format.h"
#include "vmm/trace/ring.h"   /* TRACE_ERR_*, trace_strerror */

/* One decoded record.  Text pointers point into the fed buffer. */
struct trace_event {
	uint64_t seq;            /* its sequence number in the CPU's stream */
	uint64_t offset;         /* byte offset of the record in the buffer */
	uint8_t type;            /* enum tv_rec_type (raw, may be unknown) */
	uint8_t info;            /* raw tv_rec.info */
	uint16_t size;           /* raw tv_rec.size */
	uint32_t aux;            /* raw tv_rec.aux */
	bool has_tsc;            /* tsc is valid */
	uint64_t tsc;
	union {
		/* BRANCH, BRANCH_COMPACT (from expanded), LBR */
		struct {
			uint64_t from;
			uint64_t to;
			uint64_t lbr_info;   /* LBR only */
			uint32_t flags;      /* TV_BRF_* (0 for compact) */
			uint8_t kind;        /* enum tv_branch_kind */
			bool compact;        /* was a TV_REC_BRANCH_COMPACT */
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
		struct {                     /* CODE; flags = info (TV_CODEF_*) */
			uint64_t gpa;
			uint64_t linear;
			uint64_t cr3;
			uint64_t hash;
		} code;
		struct {                     /* CODE_DATA (no TSC); chunk = aux */
			uint64_t hash;
			const uint8_t *bytes;  /* TV_CODE_CHUNK of them, in the fed buffer */
			uint32_t chunk;
		} code_data;
		struct {                     /* MEM: one access to watched memory */
			uint64_t rip, cr3, gla, gpa, gpa2, old, new_val;
			uint32_t flags;      /* TV_MEMF_* (aux bits 11:0) */
			uint16_t id;         /* watch id (aux bits 31:16) */
			uint8_t size;        /* bytes (info), 0: unknown */
			uint8_t cpl;         /* aux bits 13:12 */
		} mem;
		struct {                     /* MEM_WATCH; op = info */
			uint64_t lo, hi, gla, cr3;
			const char *label;   /* not NUL terminated, up to the padding */
			uint32_t label_len;
			uint16_t id;
			uint8_t mode, origin, op;
		} mem_watch;
		struct {                     /* MEM_STATS */
			uint64_t recorded, filtered, collateral, steps, undecoded,
				 outside_window;
		} mem_stats;
	} u;
};

/* Totals since trace_reader_init; bytes + bad_bytes = every byte fed. */
struct trace_read_stats {
	uint64_t records;        /* decoded (returned 1) */
	uint64_t bytes;
	uint64_t bad_records;    /* reported with an error (a fatal run counts 1) */
	uint64_t bad_bytes;
	uint64_t missed;         /* sequence numbers skipped between feeds */
	uint64_t lost;           /* sum of TV_REC_LOST.records */
};

struct trace_reader {
	const uint8_t *buf;
	size_t len;
	size_t pos;              /* offset of the next record in buf */
	uint64_t next_seq;       /* sequence number of the record at pos */
	uint64_t prev_to;        /* `to` of the last full or compact branch */
	bool have_prev;
	bool stopped;            /* a fatal error ended the current buffer */
	bool fed;                /* a buffer was fed since init */
	struct trace_read_stats stats;
};

/* An empty reader: trace_reader_next returns 0 until fed. */
void trace_reader_init(struct trace_reader *rd);

/*
 * trace_reader_feed - continue with buf[0..len), whose first record has
 * sequence number first_seq (the position of the previous buffer is
 * dropped, read or not).  contiguous: the buffer directly follows what
 * was fed before in the producer's stream; it is taken as such only if
 * first_seq is also the next sequence number expected and the previous
 * buffer did not end in a fatal error; otherwise the compact-branch state
 * is dropped.  A first_seq above the expected one adds the difference to
 * stats.missed (from 0 for the first feed: the records before it).
 * A NULL buf is an empty buffer.
 */
void trace_reader_feed(struct trace_reader *rd, const void *buf, size_t len,
		       uint64_t first_seq, bool contiguous);

/*
 * trace_reader_next - decode the next record into *ev.
 * Returns 1 with *ev filled, 0 at the end of the buffer, or a negative
 * error as listed at the top of this file (skippable ones: call again).
 */
int trace_reader_next(struct trace_reader *rd, struct trace_event *ev);

/* True for the errors after which trace_reader_next can go on. */
static inline bool trace_read_error_is_skippable(int err)
{
	return err != TRACE_ERR_REC_SIZE && err != TRACE_ERR_TRUNCATED;
}

/* Names for printing: "BRANCH", "call"; "?" when unknown. */
const char *trace_rec_type_name(unsigned type);
const char *trace_branch_kind_name(unsigned kind);
/* Name of an enum tv_trigger ("hypercall", "guest-reset", ...; "?" if unknown). */
const char *trace_trigger_name(unsigned trigger);

#endif /* TV_TRACE_READ_H */
