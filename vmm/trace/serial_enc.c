/* SPDX-License-Identifier: MIT */
/*
 * trace_serial.c - the serial trace transport's line encoder and parser
 * (see trace_serial.h, docs/SERIAL-TRANSPORT.md).
 *
 * Freestanding: memcpy/memset only, no allocation, no floating point.
 * Multi-byte values are put into the CRC input byte by byte as little
 * endian, so the same code checks lines on any host.
 */
#include "vmm/trace/serial_enc.h"

#include <string.h>

/* Bytes the CRC covers before the payload: kind, cpu, chunk, first, off, len. */
#define CRC_FIELDS 25u
#define HDR_BYTES  ((uint32_t)sizeof(struct tv_trace_ring))

_Static_assert(TRACE_SERIAL_PAYLOAD_MAX % 24u == 0,
	       "whole base64 groups and whole records per line");
_Static_assert(HDR_BYTES == 2u * TRACE_SERIAL_HDR_PART, "two H lines per header");

/* --- CRC-32 ----------------------------------------------------------------- */

/* Half-byte table: 64 bytes of rodata, fast enough for a 115200-baud line. */
static const uint32_t crc_nibble[16] = {
	0x00000000u, 0x1db71064u, 0x3b6e20c8u, 0x26d930acu,
	0x76dc4190u, 0x6b6b51f4u, 0x4db26158u, 0x5005713cu,
	0xedb88320u, 0xf00f9344u, 0xd6d6a3e8u, 0xcb61b38cu,
	0x9b64c2b0u, 0x86d3d2d4u, 0xa00ae278u, 0xbdbdf21cu,
};

uint32_t trace_serial_crc32(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;

	crc = ~crc;
	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		crc = (crc >> 4) ^ crc_nibble[crc & 15u];
		crc = (crc >> 4) ^ crc_nibble[crc & 15u];
	}
	return ~crc;
}

static void put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

/*
 * Follow the compact-branch base over records about to be sent, as
 * trace_read does: full and compact branches set it, START, LOST and
 * unknown types clear it, the rest keep it.
 */
static void chain_follow(struct trace_serial *ts, const uint8_t *p, size_t len,
			 uint64_t seq)
{
	for (size_t o = 0; o + sizeof(struct tv_rec) <= len; seq++) {
		uint8_t type = p[o];
		uint16_t size = get_le16(p + o + 2);

		if (type == TV_REC_BRANCH && size >= TV_REC_BRANCH_SIZE) {
			ts->chain_to = get_le64(p + o + 16);
			ts->chain_ok = true;
		} else if (type == TV_REC_BRANCH_COMPACT && size >= 16) {
			ts->chain_to = get_le64(p + o + 8);
			ts->chain_ok = true;
		} else if (type == TV_REC_START || type == TV_REC_LOST ||
			   type >= TV_REC_TYPE_MAX) {
			ts->chain_ok = false;
		}
		if (size < sizeof(struct tv_rec))
			break;   /* peek never copies one */
		o += size;
	}
	ts->chain_seq = seq;
}

static uint32_t line_crc(char kind, uint32_t cpu, uint64_t chunk, uint64_t first,
			 uint16_t off, const uint8_t *payload, uint16_t len)
{
	uint8_t f[CRC_FIELDS];

	f[0] = (uint8_t)kind;
	put_le(f + 1, cpu, 4);
	put_le(f + 5, chunk, 8);
	put_le(f + 13, first, 8);
	put_le(f + 21, off, 2);
	put_le(f + 23, len, 2);
	return trace_serial_crc32(trace_serial_crc32(0, f, sizeof(f)), payload, len);
}

/* --- encoding ---------------------------------------------------------------- */

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char hexd[] = "0123456789abcdef";

static unsigned hex_len(uint64_t v)
{
	unsigned n = 1;

	while (v >>= 4)
		n++;
	return n;
}

static size_t b64_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

/* Bytes of a line with these fields, '\n' included. */
static size_t line_len(uint32_t cpu, uint64_t chunk, uint64_t first, uint16_t off,
		       size_t len)
{
	return TRACE_SERIAL_TAG_LEN + hex_len(cpu) + 1 + hex_len(chunk) + 1 + 2 +
	       hex_len(first) + 1 + hex_len(off) + 1 + b64_len(len) + 1 + 8 + 1;
}

static char *put_hex(char *s, uint64_t v)
{
	unsigned n = hex_len(v);

	for (unsigned i = n; i-- > 0; v >>= 4)
		s[i] = hexd[v & 15u];
	return s + n;
}

static char *put_b64(char *s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		*s++ = b64[(v >> 18) & 63u];
		*s++ = b64[(v >> 12) & 63u];
		*s++ = i + 1 < n ? b64[(v >> 6) & 63u] : '=';
		*s++ = i + 2 < n ? b64[v & 63u] : '=';
	}
	return s;
}

/* Format one line into ts->line and write it; len <= TRACE_SERIAL_PAYLOAD_MAX. */
static size_t emit_line(struct trace_serial *ts, char kind, uint64_t first,
			uint16_t off, const uint8_t *payload, uint16_t len)
{
	uint32_t crc = line_crc(kind, ts->cpu, ts->chunk, first, off, payload, len);
	char *s = ts->line;

	memcpy(s, TRACE_SERIAL_TAG, TRACE_SERIAL_TAG_LEN);
	s += TRACE_SERIAL_TAG_LEN;
	s = put_hex(s, ts->cpu);
	*s++ = ' ';
	s = put_hex(s, ts->chunk);
	*s++ = ' ';
	*s++ = kind;
	*s++ = ' ';
	s = put_hex(s, first);
	*s++ = ' ';
	s = put_hex(s, off);
	*s++ = ' ';
	s = put_b64(s, payload, len);
	*s++ = ' ';
	for (int i = 28; i >= 0; i -= 4)
		*s++ = hexd[(crc >> i) & 15u];
	*s++ = '\n';
	ts->chunk++;
	ts->write(ts->ctx, ts->line, (size_t)(s - ts->line));
	return (size_t)(s - ts->line);
}

void trace_serial_init(struct trace_serial *ts, uint32_t cpu,
		       trace_serial_write_fn write, void *ctx)
{
	if (!ts)
		return;
	ts->write = write;
	ts->ctx = ctx;
	ts->cpu = cpu;
	ts->chunk = 0;
	ts->chain_ok = false;
	ts->chain_to = 0;
	ts->chain_seq = 0;
}

/* Room left for records lines: the E line is always kept free. */
static size_t room(size_t budget, const struct trace_serial_result *res)
{
	size_t used = (size_t)res->bytes + TRACE_SERIAL_END_LINE_MAX;

	return budget > used ? budget - used : 0;
}

/* Bytes of the F lines one record of `size` bytes takes. */
static size_t pieces_len(const struct trace_serial *ts, uint64_t seq, size_t size)
{
	size_t total = 0;
	uint64_t chunk = ts->chunk;

	for (size_t off = 0; off < size; off += TRACE_SERIAL_PAYLOAD_MAX) {
		size_t n = size - off < TRACE_SERIAL_PAYLOAD_MAX ? size - off :
			   TRACE_SERIAL_PAYLOAD_MAX;

		total += line_len(ts->cpu, chunk++, seq, (uint16_t)off, n);
	}
	return total;
}

/*
 * The record at *c is larger than a line: copy it alone (a cap of exactly
 * its size takes no second record) and send it as F lines if they fit.
 * Returns 1 sent, 0 no room, or a peek error.
 */
static int emit_big(struct trace_serial *ts, const struct tv_trace_ring *r,
		    struct trace_cursor *c, size_t room_left,
		    struct trace_serial_result *res)
{
	struct trace_cursor t = *c;
	size_t len, size;
	int err;

	err = trace_ring_peek(r, &t, ts->scratch, sizeof(ts->scratch), &len);
	if (err)
		return err;
	size = (size_t)ts->scratch[2] | ((size_t)ts->scratch[3] << 8);
	if (size > len || size <= TRACE_SERIAL_PAYLOAD_MAX)
		return TRACE_ERR_CORRUPT;   /* peek said it did not fit in a line */
	t = *c;
	err = trace_ring_peek(r, &t, ts->scratch, size, &len);
	if (err)
		return err;
	if (pieces_len(ts, c->seq, size) > room_left)
		return 0;
	for (size_t off = 0; off < size; off += TRACE_SERIAL_PAYLOAD_MAX) {
		size_t n = size - off < TRACE_SERIAL_PAYLOAD_MAX ? size - off :
			   TRACE_SERIAL_PAYLOAD_MAX;

		res->bytes += emit_line(ts, TRACE_SERIAL_FRAGMENT, c->seq,
					(uint16_t)off, ts->scratch + off, (uint16_t)n);
		res->lines++;
	}
	chain_follow(ts, ts->scratch, size, c->seq);
	*c = t;
	res->records++;
	return 1;
}

/*
 * The R line at *c opens with a compact branch whose base we know: the
 * payload leads with that base (scratch[0..8)), so the line's first
 * record can be decoded even when the line before it is lost.  Only the
 * whole records that fit in the other 88 bytes stay (copied again with a
 * cap of exactly their size, so *t comes from trace_ring_peek).
 */
static int with_base(struct trace_serial *ts, const struct tv_trace_ring *r,
		     const struct trace_cursor *c, struct trace_cursor *t,
		     size_t *len)
{
	size_t keep = 0;

	put_le(ts->scratch, ts->chain_to, 8);
	if (*len <= TRACE_SERIAL_PAYLOAD_MAX - 8)
		return 0;
	for (;;) {
		size_t size = get_le16(ts->scratch + 8 + keep + 2);

		if (keep + size > TRACE_SERIAL_PAYLOAD_MAX - 8)
			break;
		keep += size;
	}
	*t = *c;
	return trace_ring_peek(r, t, ts->scratch + 8, keep, len);
}

/* Is the cursor usable?  Resynchronises it once when its records are gone. */
static int probe(const struct tv_trace_ring *r, struct trace_cursor *c,
		 struct trace_serial_result *res)
{
	size_t len;
	int err = trace_ring_peek(r, c, NULL, 0, &len);

	if (err == TRACE_ERR_OVERWRITTEN) {
		res->missed += trace_ring_resync(r, c);
		err = trace_ring_peek(r, c, NULL, 0, &len);
	}
	return err == TRACE_ERR_NOSPC ? 0 : err;
}

static void emit_end(struct trace_serial *ts, const struct tv_trace_ring *r,
		     const struct trace_cursor *c, uint64_t first_seq,
		     struct trace_serial_result *res)
{
	uint8_t p[TRACE_SERIAL_END_SIZE];

	put_le(p, res->records, 8);
	put_le(p + 8, res->missed, 8);
	put_le(p + 16, first_seq, 8);
	put_le(p + 24, r->next_seq, 8);
	put_le(p + 32, r->lost_records, 8);
	put_le(p + 40, r->lost_bytes, 8);
	res->bytes += emit_line(ts, TRACE_SERIAL_END, c->seq, 0, p, sizeof(p));
	res->lines++;
}

int64_t trace_serial_emit_ring(struct trace_serial *ts,
			       const struct tv_trace_ring *r,
			       struct trace_cursor *c, size_t max_bytes,
			       struct trace_serial_result *res)
{
	struct trace_serial_result local;
	size_t budget = max_bytes ? max_bytes : SIZE_MAX;
	uint64_t first_seq;
	int err;

	if (!res)
		res = &local;
	memset(res, 0, sizeof(*res));
	if (!ts || !ts->write || !r || !c || r->magic != TV_TRACE_MAGIC ||
	    r->cpu != ts->cpu)
		return TRACE_ERR_INVAL;
	err = probe(r, c, res);
	if (err)
		return err;
	first_seq = c->seq;

	memcpy(ts->scratch, r, HDR_BYTES);
	for (uint16_t off = 0; off < HDR_BYTES; off += TRACE_SERIAL_HDR_PART) {
		res->bytes += emit_line(ts, TRACE_SERIAL_HEADER, 0, off,
					ts->scratch + off, TRACE_SERIAL_HDR_PART);
		res->lines++;
	}

	for (;;) {
		struct trace_cursor t = *c;
		size_t len, start, left = room(budget, res);

		err = trace_ring_peek(r, &t, ts->scratch + 8, TRACE_SERIAL_PAYLOAD_MAX, &len);
		if (err == TRACE_ERR_OVERWRITTEN) {
			uint64_t n = trace_ring_resync(r, c);

			if (!n)
				break;   /* cannot happen: peek and resync disagree */
			res->missed += n;
			continue;
		}
		if (err == TRACE_ERR_NOSPC) {
			err = emit_big(ts, r, c, left, res);
			if (err < 0)
				break;
			if (err == 0) {
				res->more = true;   /* its F lines do not fit */
				break;
			}
			err = 0;
			continue;
		}
		if (err || len == 0)
			break;
		start = 8;
		if (ts->scratch[8] == TV_REC_BRANCH_COMPACT && ts->chain_ok &&
		    ts->chain_seq == c->seq) {
			err = with_base(ts, r, c, &t, &len);
			if (err)
				break;
			start = 0;
		}
		if (line_len(ts->cpu, ts->chunk, c->seq, (uint16_t)(8 - start),
			     len + 8 - start) > left) {
			res->more = true;
			break;
		}
		chain_follow(ts, ts->scratch + 8, len, c->seq);
		res->bytes += emit_line(ts, TRACE_SERIAL_RECORDS, c->seq,
					(uint16_t)(8 - start), ts->scratch + start,
					(uint16_t)(len + 8 - start));
		res->lines++;
		res->records += t.seq - c->seq;
		*c = t;
	}
	emit_end(ts, r, c, first_seq, res);
	return err ? err : (int64_t)res->records;
}

int64_t trace_serial_emit_pt(struct trace_serial *ts, const void *data,
			     size_t len, uint64_t offset, size_t max_bytes)
{
	const uint8_t *p = data;
	size_t budget = max_bytes ? max_bytes : SIZE_MAX, used = 0, sent = 0;

	if (!ts || !ts->write || (!data && len))
		return TRACE_ERR_INVAL;
	while (sent < len) {
		size_t n = len - sent < TRACE_SERIAL_PAYLOAD_MAX ? len - sent :
			   TRACE_SERIAL_PAYLOAD_MAX;
		size_t l = line_len(ts->cpu, ts->chunk, offset + sent, 0, n);

		if (l > budget - used)
			break;
		used += emit_line(ts, TRACE_SERIAL_PT, offset + sent, 0, p + sent,
				  (uint16_t)n);
		sent += n;
	}
	return (int64_t)sent;
}

/* --- parsing ------------------------------------------------------------------ */

static int hex_val(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* A hex field of 1..max_digits digits ended by one space; advances *s. */
static bool get_hex(const char **s, const char *end, unsigned max_digits, uint64_t *v)
{
	const char *p = *s;
	unsigned n = 0;

	*v = 0;
	while (p < end && hex_val(*p) >= 0) {
		if (++n > max_digits)
			return false;
		*v = (*v << 4) | (uint64_t)hex_val(*p++);
	}
	if (!n || p >= end || *p != ' ')
		return false;
	*s = p + 1;
	return true;
}

static int b64_val(char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	return -1;
}

/* Base64 text s[0..n) (n a multiple of 4) into out; returns bytes or -1. */
static int get_b64(const char *s, size_t n, uint8_t *out, size_t cap)
{
	size_t o = 0;

	if (!n || n % 4)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		unsigned pad = 0;

		for (unsigned k = 0; k < 4; k++) {
			v[k] = b64_val(s[i + k]);
			if (s[i + k] == '=' && k >= 2 && i + 4 == n) {
				v[k] = 0;
				pad++;
			} else if (v[k] < 0 || pad) {
				return -1;   /* '=' only at the very end */
			}
		}
		if (o + 3 - pad > cap)
			return -1;
		uint32_t w = ((uint32_t)v[0] << 18) | ((uint32_t)v[1] << 12) |
			     ((uint32_t)v[2] << 6) | (uint32_t)v[3];
		out[o++] = (uint8_t)(w >> 16);
		if (pad < 2)
			out[o++] = (uint8_t)(w >> 8);
		if (pad < 1)
			out[o++] = (uint8_t)w;
	}
	return (int)o;
}

static bool kind_ok(const struct trace_serial_line *l)
{
	switch (l->kind) {
	case TRACE_SERIAL_HEADER:
		return l->first == 0 && (l->off % 8) == 0 && (l->len % 8) == 0 &&
		       (uint32_t)l->off + l->len <= HDR_BYTES;
	case TRACE_SERIAL_RECORDS:
		return (l->off == 0 || l->off == 8) && (l->len % 8) == 0 && l->len > l->off;
	case TRACE_SERIAL_FRAGMENT:
		return (uint32_t)l->off + l->len <= TV_REC_MAX_SIZE;
	case TRACE_SERIAL_PT:
		return l->off == 0;
	case TRACE_SERIAL_END:
		return l->off == 0 && l->len == TRACE_SERIAL_END_SIZE;
	default:
		return true;
	}
}

static bool is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* Parse the line whose tag starts at s; end is the end of the text. */
static int parse_at(const char *s, const char *end, struct trace_serial_line *l)
{
	const char *pl, *pe;
	uint64_t cpu, off, crc;
	int n;

	s += TRACE_SERIAL_TAG_LEN;
	if (!get_hex(&s, end, 8, &cpu) || !get_hex(&s, end, 16, &l->chunk))
		return TRACE_SERIAL_ERR_SYNTAX;
	if (end - s < 2 || s[0] < 'A' || s[0] > 'Z' || s[1] != ' ')
		return TRACE_SERIAL_ERR_SYNTAX;
	l->kind = s[0];
	s += 2;
	if (!get_hex(&s, end, 16, &l->first) || !get_hex(&s, end, 4, &off) ||
	    off > UINT16_MAX)
		return TRACE_SERIAL_ERR_SYNTAX;
	pl = s;
	while (s < end && *s != ' ')
		s++;
	pe = s;
	if (s >= end || end - ++s < 8)
		return TRACE_SERIAL_ERR_SYNTAX;
	crc = 0;
	for (unsigned i = 0; i < 8; i++) {
		int v = hex_val(s[i]);

		if (v < 0)
			return TRACE_SERIAL_ERR_SYNTAX;
		crc = (crc << 4) | (uint64_t)v;
	}
	for (s += 8; s < end; s++)
		if (!is_space(*s))
			return TRACE_SERIAL_ERR_SYNTAX;
	n = get_b64(pl, (size_t)(pe - pl), l->payload, sizeof(l->payload));
	if (n <= 0)
		return TRACE_SERIAL_ERR_SYNTAX;
	l->cpu = (uint32_t)cpu;
	l->off = (uint16_t)off;
	l->len = (uint16_t)n;
	if (line_crc(l->kind, l->cpu, l->chunk, l->first, l->off, l->payload,
		     l->len) != (uint32_t)crc)
		return TRACE_SERIAL_ERR_CRC;
	/* The CRC matched: a field out of its kind's range is a broken emitter. */
	return kind_ok(l) ? 0 : TRACE_SERIAL_ERR_SYNTAX;
}

static const char *find_tag(const char *s, const char *end)
{
	for (; end - s >= (ptrdiff_t)TRACE_SERIAL_TAG_LEN; s++)
		if (!memcmp(s, TRACE_SERIAL_TAG, TRACE_SERIAL_TAG_LEN))
			return s;
	return NULL;
}

int trace_serial_parse(const char *text, size_t n, struct trace_serial_line *out)
{
	const char *end, *s;
	int best = TRACE_SERIAL_ERR_NO_TAG;

	if (!text || !out)
		return TRACE_ERR_INVAL;
	end = text + n;
	for (s = find_tag(text, end); s; s = find_tag(s + 1, end)) {
		int err = parse_at(s, end, out);

		if (!err)
			return 0;
		/* Report the most specific failure: a CRC mismatch over syntax. */
		if (best == TRACE_SERIAL_ERR_NO_TAG || err == TRACE_SERIAL_ERR_CRC)
			best = err;
	}
	return best;
}

void trace_serial_decode_end(const struct trace_serial_line *l,
			     struct trace_serial_end *e)
{
	memset(e, 0, sizeof(*e));
	if (!l || l->len < TRACE_SERIAL_END_SIZE)
		return;
	e->records = get_le64(l->payload);
	e->missed = get_le64(l->payload + 8);
	e->first_seq = get_le64(l->payload + 16);
	e->next_seq = get_le64(l->payload + 24);
	e->lost_records = get_le64(l->payload + 32);
	e->lost_bytes = get_le64(l->payload + 40);
}

const char *trace_serial_strerror(int err)
{
	switch (err) {
	case TRACE_SERIAL_ERR_NO_TAG: return "no TVT1 line";
	case TRACE_SERIAL_ERR_SYNTAX: return "malformed or truncated TVT1 line";
	case TRACE_SERIAL_ERR_CRC: return "TVT1 line CRC mismatch";
	default: return trace_strerror(err);
	}
}
