/* SPDX-License-Identifier: MIT */
/*
 * recv.c - the export protocol's receiver (net/recv.h is the contract,
 * docs/PROTOCOL.md the protocol).  Pure: no allocation, no I/O but the
 * callbacks.
 */
#include "net/recv.h"

#include <stddef.h>
#include <string.h>

#include "vmm/trace/format.h"

static bool before(uint64_t a, uint64_t b)
{
	return tvp_seq_before(a, b);
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* An incoming DATA, LOSS or PT (first_seq: offset, count: bytes), or one held in the pool. */
struct item {
	bool is_loss, first, has_base;
	uint64_t first_seq, count, base_to;
	const uint8_t *data;
	size_t len;
};

/* Streams are named by their header's stream id: cpu, or cpu | TVP_STREAM_PT. */
static bool is_pt(uint16_t stream)
{
	return (stream & TVP_STREAM_PT) != 0;
}

static uint32_t cpu_of(uint16_t stream)
{
	return stream & TVP_STREAM_CPU_MASK;
}

static struct recv_stream *stream_of(struct recv_session *s, uint16_t stream)
{
	if (cpu_of(stream) >= s->ncpus)
		s->ncpus = cpu_of(stream) + 1;   /* close and ACK walk only these */
	return is_pt(stream) ? &s->pt[cpu_of(stream)] : &s->s[cpu_of(stream)];
}

void recv_init(struct receiver *r, const struct recv_ops *ops, void *ctx, uint64_t ctl_base)
{
	if (!r)
		return;
	/* Everything but the sessions' slot bytes, written before they are read. */
	memset(r, 0, offsetof(struct receiver, sess));
	for (unsigned i = 0; i < RECV_MAX_SESSIONS; i++)
		memset(&r->sess[i], 0, offsetof(struct recv_session, slot_data));
	if (ops)
		r->ops = *ops;
	r->ctx = ctx;
	r->ctl_base = ctl_base;
	r->ack_every = 1;
}

int recv_set_ack_every(struct receiver *r, uint32_t n)
{
	if (!r || n == 0 || n > RECV_ACK_EVERY_MAX)
		return PROTO_ERR_INVAL;
	r->ack_every = n;
	return 0;
}

static struct recv_session *find(struct receiver *r, uint64_t id)
{
	for (unsigned i = 0; i < RECV_MAX_SESSIONS; i++)
		if (r->sess[i].used && r->sess[i].id == id)
			return &r->sess[i];
	return NULL;
}

const struct recv_session *recv_session_get(const struct receiver *r, uint64_t session)
{
	return r ? find((struct receiver *)r, session) : NULL;
}

static struct recv_session *find_or_create(struct receiver *r, uint64_t id)
{
	struct recv_session *s = find(r, id), *lru = NULL;

	if (s)
		return s;
	for (unsigned i = 0; i < RECV_MAX_SESSIONS; i++) {
		if (!r->sess[i].used) {
			s = &r->sess[i];
			break;
		}
		if (!lru || r->sess[i].last_active < lru->last_active)
			lru = &r->sess[i];
	}
	if (!s) {
		r->st.evicted++;
		recv_close(r, lru->id);
		s = lru;
	}
	memset(s, 0, offsetof(struct recv_session, slot_data));   /* slot bytes: written first */
	s->used = true;
	s->id = id;
	s->ctl_counter = r->ctl_base;
	for (unsigned i = 0; i < RECV_POOL; i++)
		s->pool[i].next = (uint16_t)(i + 2 <= RECV_POOL ? i + 2 : 0);
	s->free_head = 1;
	return s;
}

/* --- delivery ----------------------------------------------------------------------- */

/*
 * Deliver the part of it at or after st->next (its start is at or before
 * next): records skipped are walked over for the compact base, PT bytes
 * skipped are left out.
 */
static void deliver(struct receiver *r, struct recv_session *s, uint16_t stream,
		    const struct item *it)
{
	struct recv_stream *st = stream_of(s, stream);
	uint32_t cpu = cpu_of(stream);
	uint64_t skip = st->next - it->first_seq, end = it->first_seq + it->count;
	const uint8_t *p = it->data;
	size_t len = it->len;
	bool has_base = it->has_base;
	uint64_t base = it->base_to;

	if (is_pt(stream)) {
		st->records += end - st->next;
		s->pt_bytes += end - st->next;
		if (r->ops.pt)
			r->ops.pt(r->ctx, s->id, cpu, st->next, p + skip, (size_t)(end - st->next));
		st->next = end;
		return;
	}
	if (it->is_loss) {
		st->lost += end - st->next;
		if (r->ops.loss)
			r->ops.loss(r->ctx, s->id, cpu, st->next, end - st->next);
		st->next = end;
		return;
	}
	for (uint64_t k = 0; k < skip; k++) {
		uint16_t size = (uint16_t)(p[2] | p[3] << 8);

		/* proto_decode checked that the records tile the payload */
		if (p[0] == TV_REC_BRANCH && size >= TV_REC_BRANCH_SIZE) {
			has_base = true;
			base = le64(p + 16);
		} else if (p[0] == TV_REC_BRANCH_COMPACT && size >= 16) {
			has_base = true;
			base = le64(p + 8);
		} else {
			has_base = false;
		}
		p += size;
		len -= size;
	}
	st->records += end - st->next;
	if (r->ops.records)
		r->ops.records(r->ctx, s->id, cpu, st->next, p, len, (uint32_t)(end - st->next),
			       has_base, has_base ? base : 0);
	st->next = end;
}

/* Take the first slot off stream's list and put it on the free list. */
static struct recv_slot *unlink_first(struct recv_session *s, struct recv_stream *st)
{
	unsigned i = st->head - 1u;
	struct recv_slot *sl = &s->pool[i];

	st->head = sl->next;
	sl->next = s->free_head;
	s->free_head = (uint16_t)(i + 1);
	sl->used = false;
	st->held--;
	s->held--;
	return sl;
}

/*
 * Deliver held items that are now in turn; drop those already covered.
 * The list is in order of first_seq: only its head can be in turn.
 */
static void drain(struct receiver *r, struct recv_session *s, uint16_t stream)
{
	struct recv_stream *st = stream_of(s, stream);

	while (st->head && !before(st->next, s->pool[st->head - 1].first_seq)) {
		unsigned i = st->head - 1u;
		struct recv_slot *sl = unlink_first(s, st);
		struct item it;

		if (!before(st->next, sl->first_seq + sl->count)) {
			st->dups++;
			s->dups++;
			continue;
		}
		/* The slot is free now but nothing reuses it before deliver returns. */
		it = (struct item){ .is_loss = sl->is_loss, .has_base = sl->has_base,
				    .first_seq = sl->first_seq, .count = sl->count,
				    .base_to = sl->base_to, .data = s->slot_data[i], .len = sl->len };
		deliver(r, s, stream, &it);
	}
}

/*
 * Hold it in stream's ordered list.  Returns true when it continued the
 * last held run exactly (appended, starting where that one ends): the
 * holes the sender has heard of are unchanged, so its ACK may wait.
 */
static bool hold(struct recv_session *s, uint16_t stream, const struct item *it)
{
	struct recv_stream *st = stream_of(s, stream);
	struct recv_slot *sl;
	uint16_t *link = &st->head;
	uint64_t prev_end = 0;
	bool have_prev = false;
	unsigned fi;

	/* Walk to the insertion point (ordered by first_seq), checking for a duplicate. */
	while (*link) {
		const struct recv_slot *o = &s->pool[*link - 1];

		if (o->first_seq == it->first_seq && o->is_loss == it->is_loss &&
		    o->count >= it->count) {
			s->dups++;
			st->dups++;
			return false;
		}
		if (before(it->first_seq, o->first_seq))
			break;
		prev_end = o->first_seq + o->count;
		have_prev = true;
		link = &s->pool[*link - 1].next;
	}
	if (!s->free_head) {
		s->pool_full++;   /* the sender resends it after our NACK */
		return false;
	}
	fi = s->free_head - 1u;
	sl = &s->pool[fi];
	s->free_head = sl->next;
	sl->used = true;
	sl->is_loss = it->is_loss;
	sl->first = it->first;
	sl->has_base = it->has_base;
	sl->stream = stream;
	sl->first_seq = it->first_seq;
	sl->count = it->count;
	sl->base_to = it->base_to;
	sl->len = (uint32_t)it->len;
	if (it->len)
		memcpy(s->slot_data[fi], it->data, it->len);
	sl->next = *link;
	*link = (uint16_t)(fi + 1);
	st->held++;
	s->held++;
	return !sl->next && have_prev && prev_end == it->first_seq;
}

/* --- acknowledgements --------------------------------------------------------------------- */

static void send_ack(struct receiver *r, struct recv_session *s, uint16_t stream)
{
	struct recv_stream *st = stream_of(s, stream);
	struct tvp_range ranges[TVP_ACK_MAX_RANGES];
	struct tvp_ack a = { .cum = st->next };
	uint64_t at = st->next;
	int len;

	if (st->unacked) {
		st->unacked = 0;
		s->unacked--;
	}
	/* The stream's held slots are in order of first sequence number. */
	for (uint16_t i = st->head; i; i = s->pool[i - 1].next) {
		const struct recv_slot *sl = &s->pool[i - 1];
		uint64_t end = sl->first_seq + sl->count;

		if (before(at, sl->first_seq) && a.nranges < TVP_ACK_MAX_RANGES)
			ranges[a.nranges++] = (struct tvp_range){ at, sl->first_seq };
		if (before(at, end))
			at = end;
	}
	a.highest = at;
	len = proto_encode_ack(r->out, sizeof(r->out), s->id, stream, &a, ranges);
	if (len > 0 && r->ops.send) {
		s->acks_sent++;
		r->ops.send(r->ctx, s->addr, r->out, (size_t)len);
	}
}

/*
 * A DATA datagram with at least this many record bytes counts as full:
 * the sender stopped because the next record did not fit (most records
 * are far below 64 bytes); a shorter one was all the sender had.
 */
#define RECV_DATA_FULL (TVP_DATA_MAX_RECORDS - 64u)

/*
 * A PT datagram of at least this many bytes counts as full: the largest
 * a sealed sender sends (its 16-byte trailer, net/export.h
 * EXPORT_SEALED_PT_MAX) or more.
 */
#define RECV_PT_FULL (TVP_PT_MAX_PAYLOAD - 16u)

/*
 * May the ACK for this in-order datagram wait (recv_set_ack_every)?
 * Not for FIRST or LOSS, not when held data was involved (it filled a
 * hole: the sender is recovering and waits for this news), not for a
 * datagram shorter than the largest (the sender had no more: it waits
 * for this ACK).
 */
static bool ack_may_wait(const struct receiver *r, uint16_t stream, const struct item *it,
			 bool held_before)
{
	if (r->ack_every <= 1 || it->first || it->is_loss || held_before)
		return false;
	return is_pt(stream) ? it->len >= RECV_PT_FULL : it->len >= RECV_DATA_FULL;
}

/* A DATA or LOSS for a record stream, or a PT datagram for a PT stream. */
static void take(struct receiver *r, struct recv_session *s, uint16_t stream,
		 const struct item *it)
{
	struct recv_stream *st = stream_of(s, stream);
	uint64_t end = it->first_seq + it->count;
	bool held_before = st->held != 0;

	if (!st->known) {
		if (!it->first) {
			(void)hold(s, stream, it);   /* its turn is not known yet: no ack */
			return;
		}
		st->known = true;
		st->next = st->start = it->first_seq;
	}
	if (!before(st->next, end)) {
		st->dups++;
		s->dups++;
	} else if (!before(st->next, it->first_seq)) {
		deliver(r, s, stream, it);
		drain(r, s, stream);
		if (ack_may_wait(r, stream, it, held_before)) {
			if (st->unacked++ == 0)
				s->unacked++;
			if (st->unacked < r->ack_every)
				return;   /* recv_flush or a later datagram answers it */
		}
	} else if (hold(s, stream, it) && r->ack_every > 1 && !it->is_loss) {
		/* Beyond a hole the sender knows of: its ranges are unchanged, this may wait. */
		if (st->unacked++ == 0)
			s->unacked++;
		if (st->unacked < r->ack_every)
			return;
	}
	/*
	 * Every other datagram of a stream is answered, duplicates too (the
	 * sender did not hear the last ACK), out-of-order ones that open a
	 * new hole at once (the ranges are the sender's NACK).
	 */
	send_ack(r, s, stream);
}

unsigned recv_flush(struct receiver *r)
{
	unsigned n = 0;

	if (!r)
		return 0;
	for (unsigned i = 0; i < RECV_MAX_SESSIONS; i++) {
		struct recv_session *s = &r->sess[i];

		for (uint32_t cpu = 0; s->used && s->unacked && cpu < s->ncpus; cpu++) {
			if (s->s[cpu].unacked) {
				send_ack(r, s, (uint16_t)cpu);
				n++;
			}
			if (s->pt[cpu].unacked) {
				send_ack(r, s, (uint16_t)(cpu | TVP_STREAM_PT));
				n++;
			}
		}
	}
	return n;
}

/* --- feed ----------------------------------------------------------------------------------- */

int recv_feed(struct receiver *r, const void *dgram, size_t len, uint64_t addr)
{
	struct proto_msg m;
	struct recv_session *s;
	struct item it;
	uint32_t cpu;
	int err;

	if (!r || !dgram)
		return PROTO_ERR_INVAL;
	r->clock++;
	r->st.datagrams++;
	err = proto_decode(dgram, len, &m);
	if (!err && (m.type == TVP_HELLO_ACK || m.type == TVP_ACK || m.type == TVP_CONTROL))
		err = PROTO_ERR_TYPE;   /* only a receiver sends these */
	if (err) {
		r->st.malformed++;
		r->st.by_error[-err]++;
		return err;
	}
	cpu = m.stream & TVP_STREAM_CPU_MASK;
	/* A stream beyond our table is refused before it can open (or evict) a session. */
	if ((m.type == TVP_DATA || m.type == TVP_PT || m.type == TVP_LOSS) && cpu >= RECV_MAX_CPUS) {
		r->st.malformed++;
		r->st.by_error[-PROTO_ERR_STREAM]++;
		return PROTO_ERR_STREAM;
	}
	s = find_or_create(r, m.session);
	s->addr = addr;
	s->last_active = r->clock;
	s->datagrams++;
	switch (m.type) {
	case TVP_HELLO:
		if (!s->have_hello) {
			s->have_hello = true;
			s->hello = m.u.hello;
			if (r->ops.hello)
				r->ops.hello(r->ctx, s->id, addr, &s->hello);
		}
		err = proto_encode_hello_ack(r->out, sizeof(r->out), s->id, m.u.hello.hello_seq);
		if (err > 0 && r->ops.send)
			r->ops.send(r->ctx, addr, r->out, (size_t)err);
		return 0;
	case TVP_HEARTBEAT:
		if (r->ops.heartbeat)
			r->ops.heartbeat(r->ctx, s->id, &m.u.hb.h, m.u.hb.cpus);
		return 0;
	case TVP_CONTROL_REPLY:
		if (r->ops.reply)
			r->ops.reply(r->ctx, s->id, &m.u.reply);
		return 0;
	case TVP_PT:
		if (cpu >= RECV_MAX_CPUS)
			return PROTO_ERR_STREAM;
		it = (struct item){
			.first = (m.flags & TVP_PT_F_FIRST) != 0,
			.first_seq = m.u.pt.p.offset,
			.count = m.u.pt.len,
			.data = m.u.pt.bytes,
			.len = m.u.pt.len,
		};
		take(r, s, (uint16_t)(cpu | TVP_STREAM_PT), &it);
		return 0;
	case TVP_DATA:
		if (cpu >= RECV_MAX_CPUS)
			return PROTO_ERR_STREAM;
		it = (struct item){
			.first = (m.flags & TVP_DATA_F_FIRST) != 0,
			.has_base = (m.flags & TVP_DATA_F_BASE) != 0,
			.first_seq = m.u.data.d.first_seq,
			.count = m.u.data.d.count,
			.base_to = m.u.data.d.base_to,
			.data = m.u.data.records,
			.len = m.u.data.bytes,
		};
		take(r, s, (uint16_t)cpu, &it);
		return 0;
	case TVP_LOSS:
		if (cpu >= RECV_MAX_CPUS)
			return PROTO_ERR_STREAM;
		it = (struct item){
			.is_loss = true,
			.first = (m.flags & TVP_LOSS_F_FIRST) != 0,
			.first_seq = m.u.loss.first_seq,
			.count = m.u.loss.count,
		};
		take(r, s, (uint16_t)cpu, &it);
		return 0;
	default:
		return PROTO_ERR_TYPE;
	}
}

/* recv_close for one stream: what the pool holds, in order, gaps reported. */
static void close_stream(struct receiver *r, struct recv_session *s, uint16_t stream)
{
	struct recv_stream *st = stream_of(s, stream);
	uint32_t cpu = cpu_of(stream);

	while (st->head) {
		struct recv_slot *lo = &s->pool[st->head - 1];

		if (!st->known) {
			/* The FIRST datagram never came: where it began is unknown. */
			st->known = true;
			st->next = st->start = lo->first_seq;
		}
		if (before(st->next, lo->first_seq)) {
			uint64_t gap = lo->first_seq - st->next;

			st->missing_at_close += gap;
			if (is_pt(stream) && r->ops.pt_missing)
				r->ops.pt_missing(r->ctx, s->id, cpu, st->next, gap);
			else if (!is_pt(stream) && r->ops.missing)
				r->ops.missing(r->ctx, s->id, cpu, st->next, gap);
			st->next = lo->first_seq;
		}
		drain(r, s, stream);
	}
}

int recv_close(struct receiver *r, uint64_t session)
{
	struct recv_session *s = r ? find(r, session) : NULL;

	if (!s)
		return PROTO_ERR_INVAL;
	for (uint32_t cpu = 0; cpu < s->ncpus; cpu++) {
		close_stream(r, s, (uint16_t)cpu);
		close_stream(r, s, (uint16_t)(cpu | TVP_STREAM_PT));
	}
	s->used = false;
	return 0;
}

int recv_control(struct receiver *r, uint64_t session, uint16_t op, const void *args,
		 uint16_t arg_len, const void *key, size_t keylen, void *buf, size_t cap)
{
	struct recv_session *s = r ? find(r, session) : NULL;
	struct tvp_control c = { .op = op, .arg_len = arg_len };
	int len;

	if (!s)
		return PROTO_ERR_INVAL;
	c.counter = s->ctl_counter + 1;
	len = proto_encode_control(buf, cap, session, &c, args, key, keylen);
	if (len > 0)
		s->ctl_counter = c.counter;
	return len;
}
