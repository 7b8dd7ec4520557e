/* SPDX-License-Identifier: MIT */
/*
 * trace_ring.h - one CPU's trace record ring: the producer that appends
 * records (vmm/trace/format.h) and the consumer side the exporter reads
 * them with.  docs/FORMAT.md describes the stream in prose.
 *
 * The ring is one block of memory: a struct tv_trace_ring header, then the
 * data area at offset hdr_size (data_size bytes, a power of two).  head and
 * tail are running byte counts; a record at position pos lives at
 * data[pos & (data_size - 1)] and may wrap around the end of the area.
 * Every record is a multiple of 8 bytes and the area a multiple of 8, so
 * a record's 8-byte tv_rec header never wraps; its payload may.
 *
 * Concurrency: one producer per ring, the CPU that owns it, in VMX root.
 * The consumer (the network exporter) may run on another CPU, the one
 * that owns the NIC, while the producer runs; nothing here takes a lock
 * and neither side ever waits for the other for long:
 *  - record bytes are written before head is stored (release); next_seq
 *    is stored just before head, and a reader that finds next_seq ahead
 *    of head reads both again;
 *  - tail and tail_seq form a seqlock whose sequence count is tail
 *    itself: tail only grows and is always a multiple of 8, so its bit 0
 *    (TRACE_TAIL_BUSY) marks a write in progress.  The one writer of tail
 *    (the producer under OVERWRITE, the consumer under STOP) stores
 *    tail | TRACE_TAIL_BUSY, then tail_seq, then the new tail (release);
 *    a reader takes (tail, tail_seq) as a pair when it saw the same
 *    tail, without the bit, before and after reading tail_seq, and
 *    retries otherwise (at most TRACE_TAIL_TRIES times, then
 *    TRACE_ERR_BUSY).  A header snapshot taken during that write (a dump
 *    from another CPU) can show the bit; trace_ring_validate refuses it;
 *  - the producer moves tail (with the busy bit set first) before it
 *    writes over the bytes behind it, and trace_ring_peek checks tail
 *    again after copying, so a copy that raced with an overwrite is
 *    reported as TRACE_ERR_OVERWRITTEN, never handed out.
 * Sequence numbers compare modulo 2^64 (a stream may begin near the top).
 *
 * Overflow (tv_trace_ring.flags bits 1:0):
 *  TV_OVERFLOW_STOP       keep the oldest: a record that does not fit is
 *                         dropped and counted (lost_records, lost_bytes,
 *                         pending_lost).  Once the consumer has released
 *                         room, the next record that fits is preceded by a
 *                         TV_REC_LOST carrying pending_lost; a branch after
 *                         it is always a full record.
 *  TV_OVERFLOW_OVERWRITE  keep the newest: the producer drops records at
 *                         tail, one by one and counted, plus the compact
 *                         branches that follow the dropped ones, until the
 *                         new record fits; tail_seq follows.
 *
 * Compact branches: see trace_format.h (struct tv_rec_branch_compact) for
 * the exact rule the producer follows.
 *
 * Errors (negative, text from trace_strerror):
 *   TRACE_ERR_INVAL        bad argument (NULL, unknown enum value, unknown
 *                          flag bits, misaligned memory, not a ring)
 *   TRACE_ERR_TOO_SMALL    the block cannot hold the header and 4096 bytes
 *   TRACE_ERR_FULL         STOP policy: the record was dropped (counted)
 *   TRACE_ERR_OVERWRITTEN  the cursor's records were dropped (OVERWRITE) or
 *                          released (STOP) since it was taken
 *   TRACE_ERR_RANGE        cursor outside [tail, head] or inconsistent with
 *                          the ring, or not on a record boundary
 *   TRACE_ERR_NOSPC        the caller's buffer cannot hold the next record
 *   TRACE_ERR_CORRUPT      a record header in the ring is impossible (the
 *                          ring memory was overwritten by someone else)
 *   TRACE_ERR_BAD_HEADER   trace_ring_validate: the header is inconsistent
 *   TRACE_ERR_BUSY         a cross-CPU reader found tail moving on every try
 * and, from the reader (vmm/trace/read.h), TRACE_ERR_REC_SIZE,
 * TRACE_ERR_TRUNCATED, TRACE_ERR_REC_TYPE, TRACE_ERR_REC_FIELD and
 * TRACE_ERR_NO_PREV.
 */
#ifndef TV_TRACE_RING_H
#define TV_TRACE_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/trace/format.h"

#define TRACE_ERR_INVAL        (-1)
#define TRACE_ERR_TOO_SMALL    (-2)
#define TRACE_ERR_FULL         (-3)
#define TRACE_ERR_OVERWRITTEN  (-4)
#define TRACE_ERR_RANGE        (-5)
#define TRACE_ERR_NOSPC        (-6)
#define TRACE_ERR_CORRUPT      (-7)
#define TRACE_ERR_BAD_HEADER   (-8)
#define TRACE_ERR_REC_SIZE     (-9)
#define TRACE_ERR_TRUNCATED    (-10)
#define TRACE_ERR_REC_TYPE     (-11)
#define TRACE_ERR_REC_FIELD    (-12)
#define TRACE_ERR_NO_PREV      (-13)
#define TRACE_ERR_BUSY         (-14)

/* tv_trace_ring.tail bit 0: the tail's writer is moving it (seqlock). */
#define TRACE_TAIL_BUSY  1u
#define TRACE_TAIL_TRIES 4096u

/* Text for a TRACE_ERR_* code (or 0); "unknown error" otherwise. */
const char *trace_strerror(int err);

#define TRACE_RING_MIN_DATA   4096u
/* A full branch at least every data_size >> TRACE_RING_SYNC_SHIFT bytes. */
#define TRACE_RING_SYNC_SHIFT 4
/* Longest text (CONFIG, LOG), name (IMAGE) and label (MARKER) kept. */
#define TRACE_TEXT_MAX   (TV_REC_MAX_SIZE - sizeof(struct tv_rec_text))
#define TRACE_NAME_MAX   (TV_REC_MAX_SIZE - sizeof(struct tv_rec_image))
#define TRACE_LABEL_MAX  (TV_REC_MAX_SIZE - sizeof(struct tv_rec_marker))

/* --- producer ------------------------------------------------------------- */

/*
 * trace_ring_init - make the total_bytes block at r an empty ring: header
 * first, then the largest power-of-two data area that fits (the rest of
 * the block is unused).  The data area is not cleared.  start_tsc and the
 * producer's newest TSC are now_tsc.
 * Errors: TRACE_ERR_INVAL (r NULL or not 8-byte aligned, src or policy
 * unknown), TRACE_ERR_TOO_SMALL (total_bytes < 128 + 4096).
 */
int trace_ring_init(struct tv_trace_ring *r, size_t total_bytes, uint32_t cpu,
		    uint32_t apic_id, enum tv_source src, enum tv_overflow policy,
		    uint64_t tsc_hz, uint64_t now_tsc);

/*
 * The producer's wait (overflow = wait, vmm/trace/stall.h): a STOP ring
 * that cannot take a record of need bytes (its LOST record included)
 * calls fn before dropping it.  fn returns true when it waited and room
 * may have appeared (asked again until there is room), false when it
 * does not wait (the record is dropped and counted as under STOP).  One
 * hook for every ring; NULL (the default): never wait.
 */
typedef bool (*trace_ring_wait_fn)(struct tv_trace_ring *r, uint64_t need);
void trace_ring_set_wait(trace_ring_wait_fn fn);

/* Data area of an initialised ring. */
static inline uint8_t *trace_ring_data(struct tv_trace_ring *r)
{
	return (uint8_t *)r + r->hdr_size;
}

static inline enum tv_overflow trace_ring_policy(const struct tv_trace_ring *r)
{
	return (enum tv_overflow)(r->flags & 3u);
}

/*
 * Appenders.  Each writes one record (under STOP possibly preceded by a
 * TV_REC_LOST) and returns 0, or drops it and returns TRACE_ERR_FULL
 * (STOP policy, counted), or writes nothing and returns TRACE_ERR_INVAL
 * (r is not an initialised ring, or an argument is out of its enum or
 * flag range as noted).  Under OVERWRITE they always succeed on valid
 * arguments.  tsc values also become the ring's newest TSC (for LOST).
 */

/*
 * trace_append_branch - a branch from `from` to `to`.  kind < TV_BR_KIND_MAX,
 * flags only TV_BRF_*; tsc is stored only with TV_BRF_TSC.  Written as a
 * TV_REC_BRANCH_COMPACT when the rule in trace_format.h allows, else as a
 * TV_REC_BRANCH (24 bytes, 32 with TV_BRF_TSC).
 */
int trace_append_branch(struct tv_trace_ring *r, uint64_t from, uint64_t to,
			enum tv_branch_kind kind, uint32_t flags, uint64_t tsc);

/* trace_append_lbr - one LBR entry; kind < TV_BR_KIND_MAX, flags only TV_BRF_* (LBR_FULL included). */
int trace_append_lbr(struct tv_trace_ring *r, uint64_t from, uint64_t to,
		     enum tv_branch_kind kind, uint32_t flags, uint64_t lbr_info);

int trace_append_cr3(struct tv_trace_ring *r, uint64_t tsc, uint64_t cr3,
		     uint64_t rip);

/* START: trigger TV_TRIG_BOOT..TV_TRIG_RECEIVER; STOP: any enum tv_trigger. */
int trace_append_start(struct tv_trace_ring *r, uint64_t tsc,
		       enum tv_trigger trigger, uint64_t rip);
int trace_append_stop(struct tv_trace_ring *r, uint64_t tsc,
		      enum tv_trigger trigger, uint64_t rip);

int trace_append_time(struct tv_trace_ring *r, uint64_t tsc, uint64_t tsc_hz,
		      uint64_t unix_ns);

/*
 * Text records: text[0..len) (no NUL needed; NULL allowed with len 0),
 * cut to TRACE_TEXT_MAX bytes, zero-padded to 8.  LOG: level 0..3
 * (enum log_level).
 */
int trace_append_config(struct tv_trace_ring *r, uint64_t tsc,
			const char *text, size_t len);
int trace_append_log(struct tv_trace_ring *r, uint64_t tsc, uint8_t level,
		     const char *text, size_t len);

/* IMAGE: kind <= TV_IMG_OTHER; name cut to TRACE_NAME_MAX bytes. */
int trace_append_image(struct tv_trace_ring *r, uint64_t tsc,
		       enum tv_image_kind kind, uint64_t base, uint64_t size,
		       const char *name, size_t name_len);

/* MARKER: label cut to TRACE_LABEL_MAX bytes. */
int trace_append_marker(struct tv_trace_ring *r, uint64_t tsc, uint64_t value,
			const char *label, size_t label_len);

int trace_append_pt_sync(struct tv_trace_ring *r, uint64_t tsc,
			 uint64_t pt_offset, uint64_t pt_lost);

/*
 * Code snapshots (vmm/trace/snap.h): CODE names a page executed (info:
 * TV_CODEF_* only; gpa and linear are cut to their page); CODE_DATA
 * carries 512 bytes of its content, chunk 0..TV_CODE_CHUNKS-1 (bytes:
 * TV_CODE_CHUNK of them).  CODE_DATA has no TSC of its own.
 */
int trace_append_code(struct tv_trace_ring *r, uint64_t tsc, uint8_t info, uint64_t gpa,
		      uint64_t linear, uint64_t cr3, uint64_t hash);
int trace_append_code_data(struct tv_trace_ring *r, uint64_t hash, uint32_t chunk,
			   const void *bytes);

/*
 * Memory-access tracing (vmm/trace/memwatch.h): MEM is one access, the
 * caller's record with the header set here (info = min(size, 255), aux
 * as given: TV_MEMF_* | CPL | watch id); MEM_WATCH an arm, remove or
 * label (op enum tv_mem_watch_op; label cut to TRACE_MEM_LABEL_MAX
 * bytes, NUL-padded); MEM_STATS the counters (the caller's record, the
 * header set here).
 */
#define TRACE_MEM_LABEL_MAX 64u
int trace_append_mem(struct tv_trace_ring *r, struct tv_rec_mem *m, uint32_t size, uint32_t aux);
int trace_append_mem_watch(struct tv_trace_ring *r, uint64_t tsc, uint8_t op, uint32_t aux,
			   uint64_t lo, uint64_t hi, uint64_t gla, uint64_t cr3,
			   const char *label, size_t label_len);
int trace_append_mem_stats(struct tv_trace_ring *r, struct tv_rec_mem_stats *s);

/* --- consumer ------------------------------------------------------------- */

/*
 * A consumer's place in the stream: the running byte position of the next
 * record to read and its sequence number.  Only take one from
 * trace_ring_cursor_tail, trace_ring_peek or trace_ring_resync: a position
 * that is not a record boundary cannot be detected in general.
 */
struct trace_cursor {
	uint64_t pos;
	uint64_t seq;
};

/*
 * Set *c to the oldest record held ((tail, tail_seq) read as one pair).
 * Errors: TRACE_ERR_INVAL, TRACE_ERR_BUSY.
 */
int trace_ring_cursor_tail(const struct tv_trace_ring *r, struct trace_cursor *c);

/*
 * trace_ring_peek - copy whole records, oldest first, from *c into
 * buf[0..cap) and advance *c past them; the ring is not changed.  *len is
 * the byte count (0 when no record follows *c); the first record copied
 * has sequence number c->seq as it was on entry.  Records are copied
 * linearly (the ring's wrap undone), ready for trace_reader_feed.
 * Errors (*c unchanged, *len 0):
 *   TRACE_ERR_INVAL        NULL argument (buf may be NULL only with cap 0)
 *   TRACE_ERR_OVERWRITTEN  the records at *c are gone: trace_ring_resync
 *   TRACE_ERR_RANGE        *c beyond head, or its seq does not match
 *   TRACE_ERR_NOSPC        a record follows but is larger than cap (a cap
 *                          of TV_REC_MAX_SIZE or more always makes progress)
 *   TRACE_ERR_CORRUPT      the next record header is impossible
 *   TRACE_ERR_BUSY         tail kept moving (cross-CPU): call again
 */
int trace_ring_peek(const struct tv_trace_ring *r, struct trace_cursor *c,
		    void *buf, size_t cap, size_t *len);

/*
 * trace_ring_resync - when *c's records are gone, move *c to the tail and
 * return how many records were missed (tail_seq - c->seq); 0 and no
 * change otherwise.  The exporter tells the receiver through the first
 * sequence number of what it sends next; no record marks the gap.
 */
uint64_t trace_ring_resync(const struct tv_trace_ring *r, struct trace_cursor *c);

/* Bytes held from *c to head (0 when *c's records are gone or r is NULL). */
uint64_t trace_ring_readable(const struct tv_trace_ring *r,
			     const struct trace_cursor *c);

/*
 * trace_ring_consume - the records before *upto have been delivered.
 * STOP: tail moves to *upto (tail_seq to upto->seq), which makes room for
 * the producer; the walk from tail checks that *upto is a record boundary
 * with the right sequence number.  A cursor at or behind tail (already
 * released) changes nothing.
 * OVERWRITE: nothing is released (the producer alone moves tail; records
 * stay as history until overwritten); returns 0, so the exporter's code is
 * the same for both policies.
 * Errors: TRACE_ERR_INVAL (NULL, not a ring), TRACE_ERR_RANGE (*upto
 * beyond head or not on a boundary or seq mismatch), TRACE_ERR_CORRUPT.
 */
int trace_ring_consume(struct tv_trace_ring *r, const struct trace_cursor *upto);

/*
 * trace_ring_validate - check a header that came from elsewhere (a dump,
 * the network) before using trace_ring_peek on it: magic, version,
 * hdr_size, data_size a power of two >= 4096 fitting in total_bytes,
 * tail <= head <= tail + data_size, tail_seq <= next_seq, a policy.
 * Errors: TRACE_ERR_INVAL (NULL), TRACE_ERR_BAD_HEADER.
 */
int trace_ring_validate(const struct tv_trace_ring *r, size_t total_bytes);

#endif /* TV_TRACE_RING_H */
