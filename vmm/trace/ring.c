/* SPDX-License-Identifier: MIT */
/*
 * trace_ring.c - per-CPU trace record ring: producer and consumer side
 * (see trace_ring.h for the contract, trace_format.h for the records).
 *
 * Freestanding: only memcpy/memset from the C library, no allocation, no
 * floating point.
 */
#include "vmm/trace/ring.h"

#include <string.h>

#define RING_HDR_SIZE   ((uint16_t)sizeof(struct tv_trace_ring))
#define BRF_ALL         (TV_BRF_TSC | TV_BRF_MISPRED | TV_BRF_IN_TSX | TV_BRF_TSX_ABORT)
#define LOG_LEVEL_MAX   3u   /* enum log_level: err, warn, info, debug */

static const uint8_t zeros[8];

/*
 * OVERWRITE never drops the full branch that opened the chain a compact
 * record is about to extend: with that branch at tail the free room would
 * be more than data_size minus one sync interval (plus the last compact
 * record), which already holds the largest record, so make_room stops
 * before it.  Hence a compact record's base is always held.
 */
#define CHAIN_FITS(ds) ((ds) - ((ds) >> TRACE_RING_SYNC_SHIFT) - \
			sizeof(struct tv_rec_branch_compact) >= TV_REC_MAX_SIZE)
_Static_assert(CHAIN_FITS((uint64_t)TRACE_RING_MIN_DATA), "sync interval too long for the ring");

const char *trace_strerror(int err)
{
	switch (err) {
	case 0: return "ok";
	case TRACE_ERR_INVAL: return "invalid argument";
	case TRACE_ERR_TOO_SMALL: return "memory block too small for a ring";
	case TRACE_ERR_FULL: return "ring full, record dropped";
	case TRACE_ERR_OVERWRITTEN: return "records at the cursor are gone";
	case TRACE_ERR_RANGE: return "cursor outside the ring or not on a record";
	case TRACE_ERR_NOSPC: return "buffer too small for the next record";
	case TRACE_ERR_CORRUPT: return "impossible record header in the ring";
	case TRACE_ERR_BAD_HEADER: return "inconsistent ring header";
	case TRACE_ERR_REC_SIZE: return "record size below 8, unaligned or above the maximum";
	case TRACE_ERR_TRUNCATED: return "record runs past the end of the buffer";
	case TRACE_ERR_REC_TYPE: return "unknown record type";
	case TRACE_ERR_REC_FIELD: return "record size or fields do not match its type";
	case TRACE_ERR_NO_PREV: return "compact branch without a preceding branch";
	case TRACE_ERR_BUSY: return "ring tail kept moving; try again";
	default: return "unknown error";
	}
}

/* --- ring memory ------------------------------------------------------------- */

/*
 * head is read by the consumer, tail by the producer: the acquire/release
 * pairs are what a reader on another CPU would need (trace_ring.h).  On
 * one CPU they only keep the compiler from reordering.
 */
static uint64_t load_acquire(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store_release(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static bool is_ring(const struct tv_trace_ring *r)
{
	return r && r->magic == TV_TRACE_MAGIC;
}

static const uint8_t *ring_data_const(const struct tv_trace_ring *r)
{
	return (const uint8_t *)r + r->hdr_size;
}

/* Copy into the data area at running position at, wrapping at its end. */
static void ring_copy_in(struct tv_trace_ring *r, uint64_t at, const void *src, size_t n)
{
	uint8_t *data = trace_ring_data(r);
	uint64_t off = at & (r->data_size - 1);
	size_t first = n;

	if (n == 0)
		return;
	if (off + n > r->data_size)
		first = (size_t)(r->data_size - off);
	memcpy(data + off, src, first);
	if (n > first)
		memcpy(data, (const uint8_t *)src + first, n - first);
}

static void ring_copy_out(const struct tv_trace_ring *r, uint64_t at, void *dst, size_t n)
{
	const uint8_t *data = ring_data_const(r);
	uint64_t off = at & (r->data_size - 1);
	size_t first = n;

	if (n == 0)
		return;
	if (off + n > r->data_size)
		first = (size_t)(r->data_size - off);
	memcpy(dst, data + off, first);
	if (n > first)
		memcpy((uint8_t *)dst + first, data, n - first);
}

/* A record size the producer can have written. */
static bool rec_size_ok(uint16_t size)
{
	return size >= sizeof(struct tv_rec) && (size & 7u) == 0 && size <= TV_REC_MAX_SIZE;
}

/* The header of the record at running position at (held in the ring). */
static struct tv_rec rec_at(const struct tv_trace_ring *r, uint64_t at)
{
	struct tv_rec h;

	/* Positions are multiples of 8 and so is data_size: never wraps. */
	ring_copy_out(r, at, &h, sizeof(h));
	return h;
}

/*
 * tail without the seqlock's busy bit (TRACE_TAIL_BUSY, trace_ring.h): the
 * producer only ever needs where tail is or is about to be, and a moving
 * tail is never behind its old value.
 */
static uint64_t tail_now(const struct tv_trace_ring *r)
{
	return load_acquire(&r->tail) & ~(uint64_t)TRACE_TAIL_BUSY;
}

static uint64_t ring_room(const struct tv_trace_ring *r)
{
	return r->data_size - (r->head - tail_now(r));
}

/* --- init ------------------------------------------------------------------------ */

/* Largest power of two <= n (n > 0). */
static uint64_t pow2_floor(uint64_t n)
{
	uint64_t p = 1;

	while (p <= n / 2)
		p <<= 1;
	return p;
}

int trace_ring_init(struct tv_trace_ring *r, size_t total_bytes, uint32_t cpu,
		    uint32_t apic_id, enum tv_source src, enum tv_overflow policy,
		    uint64_t tsc_hz, uint64_t now_tsc)
{
	if (!r || ((uintptr_t)r & 7u) != 0)
		return TRACE_ERR_INVAL;
	if ((unsigned)src > TV_SOURCE_MAX ||
	    (policy != TV_OVERFLOW_STOP && policy != TV_OVERFLOW_OVERWRITE))
		return TRACE_ERR_INVAL;
	if (total_bytes < (size_t)RING_HDR_SIZE + TRACE_RING_MIN_DATA)
		return TRACE_ERR_TOO_SMALL;

	memset(r, 0, sizeof(*r));
	r->version = TV_TRACE_VERSION;
	r->hdr_size = RING_HDR_SIZE;
	r->cpu = cpu;
	r->apic_id = apic_id;
	r->source = (uint32_t)src;
	r->flags = (uint32_t)policy;
	r->data_size = pow2_floor((uint64_t)total_bytes - RING_HDR_SIZE);
	r->tsc_hz = tsc_hz;
	r->start_tsc = now_tsc;
	r->chain_pos = TV_CHAIN_NONE;
	r->last_tsc = now_tsc;
	/* Magic last: a half-initialised header is not a ring. */
	__atomic_store_n(&r->magic, TV_TRACE_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

/* --- producer ------------------------------------------------------------------- */

/*
 * A record to write: a fixed part, an optional variable part (text) and
 * zero padding up to size.
 */
struct rec_out {
	const void *fixed;
	size_t fixed_len;
	const void *var;
	size_t var_len;
	uint16_t size;
};

static struct tv_rec rec_hdr(uint8_t type, uint8_t info, uint16_t size, uint32_t aux)
{
	struct tv_rec h = { .type = type, .info = info, .size = size, .aux = aux };

	return h;
}

static struct rec_out fixed_out(const void *rec, uint16_t size)
{
	struct rec_out o = { .fixed = rec, .fixed_len = size, .size = size };

	return o;
}

/* Append o at head; head is published after the bytes (release). */
static void ring_write(struct tv_trace_ring *r, const struct rec_out *o)
{
	uint64_t at = r->head;
	size_t used = o->fixed_len + o->var_len;

	ring_copy_in(r, at, o->fixed, o->fixed_len);
	ring_copy_in(r, at + o->fixed_len, o->var, o->var_len);
	ring_copy_in(r, at + used, zeros, o->size - used);
	__atomic_store_n(&r->next_seq, r->next_seq + 1, __ATOMIC_RELAXED);
	store_release(&r->head, at + o->size);
}

static void count_lost(struct tv_trace_ring *r, uint64_t records, uint64_t bytes)
{
	r->lost_records += records;
	r->lost_bytes += bytes;
}

/*
 * Move tail (and tail_seq with it) forward, as a seqlock write whose
 * sequence count is tail itself (trace_ring.h, "Cross-CPU readers"):
 * tail | TRACE_TAIL_BUSY first, then tail_seq, then the new tail.  The
 * caller is tail's only writer (the producer under OVERWRITE, the
 * consumer under STOP).  The release stores also make the new tail
 * visible before the producer writes over the bytes behind it.
 */
static void set_tail(struct tv_trace_ring *r, uint64_t tail, uint64_t tail_seq)
{
	uint64_t old = r->tail & ~(uint64_t)TRACE_TAIL_BUSY;

	__atomic_store_n(&r->tail, old | TRACE_TAIL_BUSY, __ATOMIC_RELAXED);
	/* busy is visible before tail_seq changes (pairs with snapshot's acquire fence) */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&r->tail_seq, tail_seq, __ATOMIC_RELAXED);
	store_release(&r->tail, tail);
}

/* OVERWRITE: drop the record at tail (a non-empty ring). */
static void drop_tail_record(struct tv_trace_ring *r)
{
	struct tv_rec h = rec_at(r, r->tail);

	if (!rec_size_ok(h.size) || h.size > r->head - r->tail) {
		/* Someone wrote over our ring: nothing in it can be trusted. */
		count_lost(r, r->next_seq - r->tail_seq, r->head - r->tail);
		set_tail(r, r->head, r->next_seq);
		return;
	}
	count_lost(r, 1, h.size);
	set_tail(r, r->tail + h.size, r->tail_seq + 1);
}

/*
 * OVERWRITE: drop records at tail until need bytes are free.  After each
 * dropped record the compact branches that follow go too (their base is
 * gone), so tail never rests on a compact record.
 */
static void make_room(struct tv_trace_ring *r, uint16_t need)
{
	while (ring_room(r) < need) {
		drop_tail_record(r);
		while (r->tail != r->head &&
		       rec_at(r, r->tail).type == TV_REC_BRANCH_COMPACT)
			drop_tail_record(r);
		/* The new tail is visible before the bytes behind it are overwritten. */
		__atomic_thread_fence(__ATOMIC_RELEASE);
	}
}

/* STOP: report the drops since the last LOST record, right before a record. */
static void write_lost(struct tv_trace_ring *r)
{
	struct tv_rec_lost l = {
		.h = rec_hdr(TV_REC_LOST, 0, sizeof(l), 0),
		.tsc = r->last_tsc,
		.records = r->pending_lost,
	};
	struct rec_out o = fixed_out(&l, sizeof(l));

	ring_write(r, &o);
	r->pending_lost = 0;
	r->chain_pos = TV_CHAIN_NONE;
}

static trace_ring_wait_fn ring_wait;

void trace_ring_set_wait(trace_ring_wait_fn fn)
{
	__atomic_store_n(&ring_wait, fn, __ATOMIC_RELEASE);
}

/*
 * Room for the next record under STOP, with its LOST record if one is
 * owed.  Before dropping, the wait hook (overflow = wait) may hold the
 * producer until the consumer has released room; it says false when it
 * will not (not its ring, the receiver gone), and the record is dropped.
 */
static int stop_reserve(struct tv_trace_ring *r, uint16_t size)
{
	trace_ring_wait_fn wait = __atomic_load_n(&ring_wait, __ATOMIC_ACQUIRE);
	uint64_t need = size;

	if (r->pending_lost)
		need += sizeof(struct tv_rec_lost);
	while (ring_room(r) < need) {
		if (!wait || !wait(r, need))
			break;
	}
	if (ring_room(r) >= need)
		return 0;
	/* Drop: counted at the size it would have had; the chain is broken. */
	count_lost(r, 1, size);
	r->pending_lost++;
	r->chain_pos = TV_CHAIN_NONE;
	return TRACE_ERR_FULL;
}

/* What a record does to the compact chain. */
enum chain_effect {
	CHAIN_CLOSE,    /* any non-branch record */
	CHAIN_OPEN,     /* a full branch */
	CHAIN_EXTEND,   /* a compact branch */
};

/*
 * Write one record (under STOP preceded by the LOST record owed, or
 * dropped).  A compact record is only ever passed when the chain is open,
 * and under STOP an owed LOST record means the chain is closed, so the
 * LOST record never separates a compact record from its base.
 */
static int ring_put(struct tv_trace_ring *r, const struct rec_out *o,
		    enum chain_effect effect, uint64_t to)
{
	uint64_t pos;

	if (trace_ring_policy(r) == TV_OVERFLOW_STOP) {
		if (stop_reserve(r, o->size))
			return TRACE_ERR_FULL;
		if (r->pending_lost)
			write_lost(r);
	} else {
		/* A compact record's base survives this: see CHAIN_FITS above. */
		make_room(r, o->size);
	}
	pos = r->head;
	ring_write(r, o);
	if (effect == CHAIN_CLOSE) {
		r->chain_pos = TV_CHAIN_NONE;
	} else {
		if (effect == CHAIN_OPEN)
			r->chain_pos = pos;
		r->chain_to = to;
	}
	return 0;
}

static int put_fixed(struct tv_trace_ring *r, const void *rec, uint16_t size)
{
	struct rec_out o = fixed_out(rec, size);

	return ring_put(r, &o, CHAIN_CLOSE, 0);
}

/* A record with a fixed part and text (cut to max, padded to 8). */
static int put_var(struct tv_trace_ring *r, const void *fixed, size_t fixed_len,
		   const char *var, size_t var_len)
{
	struct rec_out o = {
		.fixed = fixed, .fixed_len = fixed_len,
		.var = var, .var_len = var_len,
		.size = (uint16_t)TV_REC_ALIGN(fixed_len + var_len),
	};

	return ring_put(r, &o, CHAIN_CLOSE, 0);
}

static void note_tsc(struct tv_trace_ring *r, uint64_t tsc)
{
	r->last_tsc = tsc;
}

/*
 * The compact rule (trace_format.h): only flag-less branches, right after
 * a branch of an open chain opened less than data_size/16 bytes ago, with
 * 0 <= from - prev_to < 2^32.
 */
static bool compact_allowed(const struct tv_trace_ring *r, uint64_t from, uint32_t flags)
{
	if (flags != 0 || r->chain_pos == TV_CHAIN_NONE)
		return false;
	if (r->head - r->chain_pos >= (r->data_size >> TRACE_RING_SYNC_SHIFT))
		return false;
	return from >= r->chain_to && from - r->chain_to <= UINT32_MAX;
}

int trace_append_branch(struct tv_trace_ring *r, uint64_t from, uint64_t to,
			enum tv_branch_kind kind, uint32_t flags, uint64_t tsc)
{
	struct tv_rec_branch b;
	struct tv_rec_branch_compact c;
	struct rec_out o;
	uint16_t size;

	if (!is_ring(r) || (unsigned)kind >= TV_BR_KIND_MAX || (flags & ~BRF_ALL))
		return TRACE_ERR_INVAL;
	if (compact_allowed(r, from, flags)) {
		c.h = rec_hdr(TV_REC_BRANCH_COMPACT, (uint8_t)kind, sizeof(c),
			      (uint32_t)(from - r->chain_to));
		c.to = to;
		o = fixed_out(&c, sizeof(c));
		return ring_put(r, &o, CHAIN_EXTEND, to);
	}
	size = (flags & TV_BRF_TSC) ? TV_REC_BRANCH_TSC_SIZE : TV_REC_BRANCH_SIZE;
	if (flags & TV_BRF_TSC)
		note_tsc(r, tsc);
	b.h = rec_hdr(TV_REC_BRANCH, (uint8_t)kind, size, flags);
	b.from = from;
	b.to = to;
	b.tsc = tsc;
	o = fixed_out(&b, size);
	return ring_put(r, &o, CHAIN_OPEN, to);
}

int trace_append_lbr(struct tv_trace_ring *r, uint64_t from, uint64_t to,
		     enum tv_branch_kind kind, uint32_t flags, uint64_t lbr_info)
{
	struct tv_rec_lbr l;

	if (!is_ring(r) || (unsigned)kind >= TV_BR_KIND_MAX ||
	    (flags & ~(BRF_ALL | TV_BRF_LBR_FULL)))
		return TRACE_ERR_INVAL;
	l.h = rec_hdr(TV_REC_LBR, (uint8_t)kind, sizeof(l), flags);
	l.from = from;
	l.to = to;
	l.lbr_info = lbr_info;
	return put_fixed(r, &l, sizeof(l));
}

int trace_append_cr3(struct tv_trace_ring *r, uint64_t tsc, uint64_t cr3, uint64_t rip)
{
	struct tv_rec_cr3 c;

	if (!is_ring(r))
		return TRACE_ERR_INVAL;
	note_tsc(r, tsc);
	c.h = rec_hdr(TV_REC_CR3, 0, sizeof(c), 0);
	c.tsc = tsc;
	c.cr3 = cr3;
	c.rip = rip;
	return put_fixed(r, &c, sizeof(c));
}

static int put_startstop(struct tv_trace_ring *r, uint8_t type, uint64_t tsc,
			 enum tv_trigger trigger, uint64_t rip)
{
	struct tv_rec_startstop s;

	note_tsc(r, tsc);
	s.h = rec_hdr(type, 0, sizeof(s), (uint32_t)trigger);
	s.tsc = tsc;
	s.rip = rip;
	return put_fixed(r, &s, sizeof(s));
}

int trace_append_start(struct tv_trace_ring *r, uint64_t tsc,
		       enum tv_trigger trigger, uint64_t rip)
{
	/* FULL and LIMIT are reasons to stop, never to start. */
	if (!is_ring(r) || (unsigned)trigger > TV_TRIG_RECEIVER)
		return TRACE_ERR_INVAL;
	return put_startstop(r, TV_REC_START, tsc, trigger, rip);
}

int trace_append_stop(struct tv_trace_ring *r, uint64_t tsc,
		      enum tv_trigger trigger, uint64_t rip)
{
	if (!is_ring(r) || (unsigned)trigger > TV_TRIG_MAX)
		return TRACE_ERR_INVAL;
	return put_startstop(r, TV_REC_STOP, tsc, trigger, rip);
}

int trace_append_time(struct tv_trace_ring *r, uint64_t tsc, uint64_t tsc_hz,
		      uint64_t unix_ns)
{
	struct tv_rec_time t;

	if (!is_ring(r))
		return TRACE_ERR_INVAL;
	note_tsc(r, tsc);
	t.h = rec_hdr(TV_REC_TIME, 0, sizeof(t), 0);
	t.tsc = tsc;
	t.tsc_hz = tsc_hz;
	t.unix_ns = unix_ns;
	return put_fixed(r, &t, sizeof(t));
}

static size_t cut(size_t len, size_t max)
{
	return len > max ? max : len;
}

static int put_text(struct tv_trace_ring *r, uint8_t type, uint8_t info,
		    uint64_t tsc, const char *text, size_t len)
{
	struct tv_rec_text t;

	len = cut(len, TRACE_TEXT_MAX);
	note_tsc(r, tsc);
	t.h = rec_hdr(type, info, (uint16_t)TV_REC_ALIGN(sizeof(t) + len), (uint32_t)len);
	t.tsc = tsc;
	return put_var(r, &t, sizeof(t), text, len);
}

int trace_append_config(struct tv_trace_ring *r, uint64_t tsc,
			const char *text, size_t len)
{
	if (!is_ring(r) || (!text && len))
		return TRACE_ERR_INVAL;
	return put_text(r, TV_REC_CONFIG, 0, tsc, text, len);
}

int trace_append_log(struct tv_trace_ring *r, uint64_t tsc, uint8_t level,
		     const char *text, size_t len)
{
	if (!is_ring(r) || (!text && len) || level > LOG_LEVEL_MAX)
		return TRACE_ERR_INVAL;
	return put_text(r, TV_REC_LOG, level, tsc, text, len);
}

int trace_append_image(struct tv_trace_ring *r, uint64_t tsc,
		       enum tv_image_kind kind, uint64_t base, uint64_t size,
		       const char *name, size_t name_len)
{
	struct tv_rec_image im;

	if (!is_ring(r) || (!name && name_len) || (unsigned)kind > TV_IMG_OTHER)
		return TRACE_ERR_INVAL;
	name_len = cut(name_len, TRACE_NAME_MAX);
	note_tsc(r, tsc);
	im.h = rec_hdr(TV_REC_IMAGE, (uint8_t)kind,
		       (uint16_t)TV_REC_ALIGN(sizeof(im) + name_len), (uint32_t)name_len);
	im.tsc = tsc;
	im.base = base;
	im.size = size;
	return put_var(r, &im, sizeof(im), name, name_len);
}

int trace_append_marker(struct tv_trace_ring *r, uint64_t tsc, uint64_t value,
			const char *label, size_t label_len)
{
	struct tv_rec_marker m;

	if (!is_ring(r) || (!label && label_len))
		return TRACE_ERR_INVAL;
	label_len = cut(label_len, TRACE_LABEL_MAX);
	note_tsc(r, tsc);
	m.h = rec_hdr(TV_REC_MARKER, 0, (uint16_t)TV_REC_ALIGN(sizeof(m) + label_len),
		      (uint32_t)label_len);
	m.tsc = tsc;
	m.value = value;
	return put_var(r, &m, sizeof(m), label, label_len);
}

int trace_append_pt_sync(struct tv_trace_ring *r, uint64_t tsc,
			 uint64_t pt_offset, uint64_t pt_lost)
{
	struct tv_rec_pt_sync p;

	if (!is_ring(r))
		return TRACE_ERR_INVAL;
	note_tsc(r, tsc);
	p.h = rec_hdr(TV_REC_PT_SYNC, 0, sizeof(p), 0);
	p.tsc = tsc;
	p.pt_offset = pt_offset;
	p.pt_lost = pt_lost;
	return put_fixed(r, &p, sizeof(p));
}

int trace_append_code(struct tv_trace_ring *r, uint64_t tsc, uint8_t info, uint64_t gpa,
		      uint64_t linear, uint64_t cr3, uint64_t hash)
{
	struct tv_rec_code c;

	if (!is_ring(r) || (info & ~(unsigned)TV_CODEF_ALL))
		return TRACE_ERR_INVAL;
	note_tsc(r, tsc);
	c.h = rec_hdr(TV_REC_CODE, info, sizeof(c), 0);
	c.tsc = tsc;
	c.gpa = gpa & ~(uint64_t)(TV_CODE_PAGE - 1);
	c.linear = linear & ~(uint64_t)(TV_CODE_PAGE - 1);
	c.cr3 = cr3;
	c.hash = hash;
	return put_fixed(r, &c, sizeof(c));
}

int trace_append_code_data(struct tv_trace_ring *r, uint64_t hash, uint32_t chunk,
			   const void *bytes)
{
	struct {
		struct tv_rec h;
		uint64_t hash;
	} head;

	if (!is_ring(r) || chunk >= TV_CODE_CHUNKS || !bytes)
		return TRACE_ERR_INVAL;
	head.h = rec_hdr(TV_REC_CODE_DATA, 0, sizeof(struct tv_rec_code_data), chunk);
	head.hash = hash;
	/* The 512 bytes straight from the caller's page: no copy on the stack. */
	return put_var(r, &head, sizeof(head), (const char *)bytes, TV_CODE_CHUNK);
}

int trace_append_mem(struct tv_trace_ring *r, struct tv_rec_mem *m, uint32_t size, uint32_t aux)
{
	if (!is_ring(r) || !m)
		return TRACE_ERR_INVAL;
	note_tsc(r, m->tsc);
	m->h = rec_hdr(TV_REC_MEM, (uint8_t)(size > 255 ? 255 : size), sizeof(*m), aux);
	return put_fixed(r, m, sizeof(*m));
}

int trace_append_mem_watch(struct tv_trace_ring *r, uint64_t tsc, uint8_t op, uint32_t aux,
			   uint64_t lo, uint64_t hi, uint64_t gla, uint64_t cr3,
			   const char *label, size_t label_len)
{
	struct tv_rec_mem_watch w;

	if (!is_ring(r) || (!label && label_len) || op < TV_MEMW_ARM || op > TV_MEMW_LABEL)
		return TRACE_ERR_INVAL;
	label_len = cut(label_len, TRACE_MEM_LABEL_MAX);
	note_tsc(r, tsc);
	w.h = rec_hdr(TV_REC_MEM_WATCH, op, (uint16_t)TV_REC_ALIGN(sizeof(w) + label_len), aux);
	w.tsc = tsc;
	w.lo = lo;
	w.hi = hi;
	w.gla = gla;
	w.cr3 = cr3;
	return put_var(r, &w, sizeof(w), label, label_len);
}

int trace_append_mem_stats(struct tv_trace_ring *r, struct tv_rec_mem_stats *s)
{
	if (!is_ring(r) || !s)
		return TRACE_ERR_INVAL;
	note_tsc(r, s->tsc);
	s->h = rec_hdr(TV_REC_MEM_STATS, 0, sizeof(*s), 0);
	return put_fixed(r, s, sizeof(*s));
}

/* --- consumer ---------------------------------------------------------------------- */

/* Sequence numbers compare modulo 2^64 (a stream may start anywhere). */
static bool seq_before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

/*
 * The seqlock read: (tail, tail_seq) as one pair.  A tail with the busy
 * bit, or one that changed while tail_seq was read, means the writer was
 * in the middle: try again.  tail only grows, so an unchanged tail means
 * no write began in between (no ABA).
 */
static int tail_snapshot(const struct tv_trace_ring *r, struct trace_cursor *t)
{
	for (unsigned i = 0; i < TRACE_TAIL_TRIES; i++) {
		uint64_t t1 = load_acquire(&r->tail), t2, s;

		if (t1 & TRACE_TAIL_BUSY) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();   /* SDM 2B PAUSE: spin-wait hint */
#endif
			continue;
		}
		s = __atomic_load_n(&r->tail_seq, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		t2 = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
		if (t1 == t2) {
			t->pos = t1;
			t->seq = s;
			return 0;
		}
	}
	return TRACE_ERR_BUSY;
}

int trace_ring_cursor_tail(const struct tv_trace_ring *r, struct trace_cursor *c)
{
	if (!is_ring(r) || !c)
		return TRACE_ERR_INVAL;
	return tail_snapshot(r, c);
}

/*
 * Where *c stands: 0 inside [tail, head], else the error peek reports.
 * head was read (acquire) before next_seq, and the producer stores
 * next_seq just before head, so next_seq is at least head's sequence
 * number, one more while the producer is between the two stores.  A
 * cursor exactly at head whose seq is not next_seq is therefore only
 * wrong if head stays where it is: wait a little for it to move.
 */
static int cursor_check(const struct tv_trace_ring *r, const struct trace_cursor *c,
			const struct trace_cursor *tail, uint64_t head)
{
	uint64_t next = __atomic_load_n(&r->next_seq, __ATOMIC_ACQUIRE);

	if (c->pos < tail->pos)
		return TRACE_ERR_OVERWRITTEN;
	if (c->pos > head || seq_before(c->seq, tail->seq) || seq_before(next, c->seq))
		return TRACE_ERR_RANGE;
	if (c->pos == tail->pos && c->seq != tail->seq)
		return TRACE_ERR_RANGE;
	if (c->pos == head && c->seq != next) {
		for (unsigned i = 0; i < TRACE_TAIL_TRIES; i++)
			if (load_acquire(&r->head) != head)
				return 0;
		return TRACE_ERR_RANGE;
	}
	return 0;
}

int trace_ring_peek(const struct tv_trace_ring *r, struct trace_cursor *c,
		    void *buf, size_t cap, size_t *len)
{
	struct trace_cursor tail;
	uint64_t head, pos, seq;
	size_t out = 0;
	int err;

	if (len)
		*len = 0;
	if (!is_ring(r) || !c || !len || (!buf && cap))
		return TRACE_ERR_INVAL;
	err = tail_snapshot(r, &tail);
	if (err)
		return err;
	head = load_acquire(&r->head);
	err = cursor_check(r, c, &tail, head);
	if (err)
		return err;
	pos = c->pos;
	seq = c->seq;
	while (pos < head) {
		struct tv_rec h = rec_at(r, pos);

		if (!rec_size_ok(h.size) || h.size > head - pos) {
			if (out)
				break;   /* hand out the good ones; the next call fails */
			/* A producer on another CPU overwrote it while we looked? */
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (c->pos < load_acquire(&r->tail))
				return TRACE_ERR_OVERWRITTEN;
			return TRACE_ERR_CORRUPT;
		}
		if (h.size > cap - out)
			break;
		ring_copy_out(r, pos, (uint8_t *)buf + out, h.size);
		out += h.size;
		pos += h.size;
		seq++;
	}
	if (out == 0 && pos < head)
		return TRACE_ERR_NOSPC;
	/*
	 * A producer on another CPU may have overwritten what was copied: it
	 * sets tail (or its busy bit, which makes it larger) before it writes
	 * over any byte, so a tail still at or before c->pos means the copy is
	 * good.
	 */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (c->pos < load_acquire(&r->tail))
		return TRACE_ERR_OVERWRITTEN;
	c->pos = pos;
	c->seq = seq;
	*len = out;
	return 0;
}

uint64_t trace_ring_resync(const struct tv_trace_ring *r, struct trace_cursor *c)
{
	struct trace_cursor t;
	uint64_t missed;

	if (!is_ring(r) || !c || trace_ring_cursor_tail(r, &t) || c->pos >= t.pos)
		return 0;
	/* A cursor taken from this ring is behind tail_seq when behind tail. */
	missed = seq_before(c->seq, t.seq) ? t.seq - c->seq : 0;
	*c = t;
	return missed;
}

uint64_t trace_ring_readable(const struct tv_trace_ring *r, const struct trace_cursor *c)
{
	uint64_t head;

	if (!is_ring(r) || !c || c->pos < tail_now(r))
		return 0;
	head = load_acquire(&r->head);
	return c->pos <= head ? head - c->pos : 0;
}

int trace_ring_consume(struct tv_trace_ring *r, const struct trace_cursor *upto)
{
	uint64_t pos, seq, head;

	if (!is_ring(r) || !upto)
		return TRACE_ERR_INVAL;
	if (trace_ring_policy(r) != TV_OVERFLOW_STOP)
		return 0;
	/* Under STOP the consumer is tail's only writer: no snapshot needed. */
	head = load_acquire(&r->head);
	pos = r->tail;
	seq = r->tail_seq;
	if (upto->pos <= pos && !seq_before(seq, upto->seq))
		return 0;   /* released already */
	if (upto->pos < pos || upto->pos > head)
		return TRACE_ERR_RANGE;
	/* Walk the records to be released: *upto must be a record boundary. */
	while (pos < upto->pos) {
		struct tv_rec h = rec_at(r, pos);

		if (!rec_size_ok(h.size) || h.size > head - pos)
			return TRACE_ERR_CORRUPT;
		pos += h.size;
		seq++;
	}
	if (pos != upto->pos || seq != upto->seq)
		return TRACE_ERR_RANGE;
	/* The bytes were copied out before tail lets the producer reuse them. */
	set_tail(r, pos, seq);
	return 0;
}

int trace_ring_validate(const struct tv_trace_ring *r, size_t total_bytes)
{
	uint64_t ds;

	if (!r)
		return TRACE_ERR_INVAL;
	ds = r->data_size;
	if (r->magic != TV_TRACE_MAGIC || r->version != TV_TRACE_VERSION)
		return TRACE_ERR_BAD_HEADER;
	if (r->hdr_size < sizeof(*r) || (r->hdr_size & 7u) || (r->flags & 3u) > TV_OVERFLOW_OVERWRITE)
		return TRACE_ERR_BAD_HEADER;
	if (ds < TRACE_RING_MIN_DATA || (ds & (ds - 1)) || total_bytes < r->hdr_size ||
	    ds > (uint64_t)total_bytes - r->hdr_size)
		return TRACE_ERR_BAD_HEADER;
	if (r->tail > r->head || r->head - r->tail > ds || ((r->head | r->tail) & 7u))
		return TRACE_ERR_BAD_HEADER;
	/* Every record is at least 8 bytes. */
	if (r->next_seq - r->tail_seq > (r->head - r->tail) / 8)
		return TRACE_ERR_BAD_HEADER;
	return 0;
}
