/* SPDX-License-Identifier: MIT */
/*
 * trace_serial.h - the serial trace transport: a CPU's record stream (and
 * PT bytes) as text lines in a shared, noisy serial log.  The fallback
 * until the network exporter exists and for machines without a supported
 * NIC; also how the Bochs ground-truth test gets its trace out.
 * docs/SERIAL-TRANSPORT.md is the prose version of the line format.
 *
 * One line (every number lowercase hex without 0x, crc exactly 8 digits):
 *
 *   TVT1 <cpu> <chunk> <kind> <first> <off> <payload> <crc>\n
 *
 *   cpu      logical CPU index (tv_trace_ring.cpu)
 *   chunk    running line number of this CPU's emitter, from 0: a gap is a
 *            lost (or damaged) line
 *   kind     H ring header snapshot  first 0, off = byte offset in the
 *                                    128-byte header (0, 64): two lines
 *            R records               first = sequence number of the first
 *                                    record; whole records only, from
 *                                    payload byte off (0 or 8); off 8: the
 *                                    first record is a compact branch and
 *                                    payload[0..8) is its base (le64, the
 *                                    `to` of the branch before it), so a
 *                                    lost line before it costs no `from`
 *            F piece of one record   first = its sequence number, off =
 *              larger than a line    byte offset in the record
 *            P PT bytes              first = PT stream byte offset, off 0
 *            E end of one emission   first = sequence number of the next
 *                                    record to send, off 0, payload the
 *                                    counts in struct trace_serial_end
 *   payload  RFC 4648 base64 with '=' padding, 1..96 decoded bytes
 *   crc      CRC-32 (IEEE, the zlib crc32()) over the decoded fields:
 *            kind (1 byte, the ASCII letter), cpu (le32), chunk (le64),
 *            first (le64), off (le16), payload length (le16), payload
 *
 * A line is at most TRACE_SERIAL_LINE_MAX bytes with its '\n'.  Records
 * never straddle R lines, so a lost line costs the whole records it held,
 * and the receiver counts them from the sequence numbers; a record too
 * large for one line goes out as consecutive F lines (all or none).
 *
 * Pure and freestanding: no hardware access, no allocation; output goes
 * through the caller's write callback (the serial driver on the machine,
 * a buffer in tests).  The ring is only read (trace_ring_peek).
 *
 * Errors (negative): TRACE_ERR_* from trace_ring.h and
 *   TRACE_SERIAL_ERR_NO_TAG  trace_serial_parse: no "TVT1 " in the text
 *   TRACE_SERIAL_ERR_SYNTAX  a tag, but not a whole well-formed line after
 *                            it (truncated, damaged, bad field)
 *   TRACE_SERIAL_ERR_CRC     a well-formed line whose CRC does not match
 * trace_serial_strerror() names every code.
 */
#ifndef TV_TRACE_SERIAL_H
#define TV_TRACE_SERIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/trace/format.h"
#include "vmm/trace/ring.h"

#define TRACE_SERIAL_TAG         "TVT1 "
#define TRACE_SERIAL_TAG_LEN     5u
#define TRACE_SERIAL_LINE_MAX    200u  /* bytes of a line, '\n' included */
#define TRACE_SERIAL_PAYLOAD_MAX 96u   /* decoded payload bytes in a line */
#define TRACE_SERIAL_HDR_PART    64u   /* header snapshot bytes per H line */
/* Longest E line (all fields at their widest), for budgets. */
#define TRACE_SERIAL_END_LINE_MAX 126u

/* Beyond trace_ring.h's TRACE_ERR_* range on purpose. */
#define TRACE_SERIAL_ERR_NO_TAG  (-64)
#define TRACE_SERIAL_ERR_SYNTAX  (-65)
#define TRACE_SERIAL_ERR_CRC     (-66)

enum trace_serial_kind {
	TRACE_SERIAL_HEADER = 'H',
	TRACE_SERIAL_RECORDS = 'R',
	TRACE_SERIAL_FRAGMENT = 'F',
	TRACE_SERIAL_PT = 'P',
	TRACE_SERIAL_END = 'E',
};

/* The E line's payload: six le64 in this order (48 bytes). */
struct trace_serial_end {
	uint64_t records;        /* records sent by this emission */
	uint64_t missed;         /* records gone from the ring before they could
				  * be sent (cursor resynchronised): no line held them */
	uint64_t first_seq;      /* sequence number the emission started at */
	uint64_t next_seq;       /* the ring's next_seq: records written so far */
	uint64_t lost_records;   /* the ring's lost_records (producer drops) */
	uint64_t lost_bytes;     /* the ring's lost_bytes */
};
#define TRACE_SERIAL_END_SIZE 48u

/* Where lines go: s[0..n) is one whole line, '\n' included. */
typedef void (*trace_serial_write_fn)(void *ctx, const char *s, size_t n);

/*
 * One CPU's emitter.  The chunk counter runs over every line this CPU
 * sends (rings and PT alike); the buffers keep the big ones off the
 * VMX-root stack.
 */
struct trace_serial {
	trace_serial_write_fn write;
	void *ctx;
	uint32_t cpu;
	uint64_t chunk;                      /* number of the next line */
	/* The compact-branch base after the last record sent (trace_read's
	 * rule), valid for a cursor at chain_seq. */
	bool chain_ok;
	uint64_t chain_to;
	uint64_t chain_seq;
	char line[TRACE_SERIAL_LINE_MAX];
	uint8_t scratch[TV_REC_MAX_SIZE + 8];
};

/* What one emission did. */
struct trace_serial_result {
	uint64_t records;        /* records sent (whole, in R or F lines) */
	uint64_t missed;         /* records skipped by resynchronising the cursor */
	uint64_t lines;          /* lines written, H and E included */
	uint64_t bytes;          /* bytes written */
	bool more;               /* records remain after the cursor: the budget
				  * ran out (call again later) */
};

/* trace_serial_init - emitter of CPU cpu's lines, chunk numbers from 0. */
void trace_serial_init(struct trace_serial *ts, uint32_t cpu,
		       trace_serial_write_fn write, void *ctx);

/*
 * trace_serial_emit_ring - send the ring's header snapshot (two H lines),
 * then its records from *c on (R lines, F lines for records larger than
 * TRACE_SERIAL_PAYLOAD_MAX), then an E line; *c moves past what was sent
 * (the caller may then trace_ring_consume up to it).  The ring is never
 * modified.  When the records at *c are gone (TRACE_ERR_OVERWRITTEN), *c
 * is resynchronised to the tail and the skipped records are counted in
 * res->missed and the E line.
 *
 * max_bytes bounds what one call writes (serial time in VMX root); 0 is
 * no bound.  The H and E lines always go out (under 400 bytes together);
 * records go out while the whole call stays within max_bytes, and a
 * record's F lines all or none.  res may be NULL.
 *
 * Returns the records sent (>= 0) or, with nothing written,
 *   TRACE_ERR_INVAL   NULL ts/r/c, no write callback, not a ring, or a
 *                     ring of another CPU than ts->cpu
 *   TRACE_ERR_RANGE   *c is beyond head or inconsistent with the ring
 *   TRACE_ERR_CORRUPT the record at *c has an impossible header
 * A TRACE_ERR_CORRUPT met after some records were sent ends the records
 * there; the E line is still written and the error returned (*c and res
 * count what was sent).
 */
int64_t trace_serial_emit_ring(struct trace_serial *ts,
			       const struct tv_trace_ring *r,
			       struct trace_cursor *c, size_t max_bytes,
			       struct trace_serial_result *res);

/*
 * trace_serial_emit_pt - send PT bytes data[0..len), the first of which is
 * at PT stream byte offset `offset`, as P lines; max_bytes as above (0: no
 * bound), no H or E line.  Returns the PT bytes sent (the caller goes on
 * from offset + that), or TRACE_ERR_INVAL.
 */
int64_t trace_serial_emit_pt(struct trace_serial *ts, const void *data,
			     size_t len, uint64_t offset, size_t max_bytes);

/* --- the receiving side ----------------------------------------------------- */

/* One line as parsed (the CRC checked). */
struct trace_serial_line {
	uint32_t cpu;
	uint64_t chunk;
	char kind;               /* enum trace_serial_kind, or unknown */
	uint64_t first;
	uint16_t off;
	uint16_t len;            /* payload bytes */
	uint8_t payload[TRACE_SERIAL_PAYLOAD_MAX];
};

/*
 * trace_serial_parse - find a line in text[0..n) (one line of a log, with
 * or without its line end; anything may precede the tag, only whitespace
 * may follow the crc) and decode it into *out.  When the text holds the
 * tag more than once (a line cut short, then another), each is tried in
 * turn.  Kind-specific rules are checked for the known kinds (H: off + len
 * <= 128, off and len multiples of 8; R: off 0 or 8, len a multiple of 8
 * and above off;
 * F: off + len <= TV_REC_MAX_SIZE; P: off 0; E: len 48, off 0);
 * unknown kinds are returned for the caller to skip.
 * Returns 0, TRACE_SERIAL_ERR_NO_TAG, TRACE_SERIAL_ERR_SYNTAX,
 * TRACE_SERIAL_ERR_CRC or TRACE_ERR_INVAL (NULL).
 */
int trace_serial_parse(const char *text, size_t n, struct trace_serial_line *out);

/* The E payload of a parsed E line (len must be TRACE_SERIAL_END_SIZE). */
void trace_serial_decode_end(const struct trace_serial_line *l,
			     struct trace_serial_end *end);

/* CRC-32 (IEEE 802.3, reflected 0xEDB88320), zlib convention: start with 0. */
uint32_t trace_serial_crc32(uint32_t crc, const void *data, size_t len);

/* Text for a TRACE_SERIAL_ERR_* or TRACE_ERR_* code. */
const char *trace_serial_strerror(int err);

#endif /* TV_TRACE_SERIAL_H */
