/* SPDX-License-Identifier: MIT */
/*
 * recv.c - the export protocol's receiver (net/recv.h is the contract,
 * docs/PROTOCOL.md the protocol).  Pure: no allocation, no I/O but the
 * callbacks.
 */
#include "net/recv.h"

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
	return is_pt(stream) ? &s->pt[cpu_of(stream)] : &s->s[cpu_of(stream)];
}

void recv_init(struct receiver *r, const struct recv_ops *ops, void *ctx, uint64_t ctl_base)
{
	if (!r)
		return;
	memset(r, 0, sizeof(*r));
	if (ops)
		r->ops = *ops;
	r->ctx = ctx;
	r->ctl_base = ctl_base;
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
	memset(s, 0, sizeof(*s));
	s->used = true;
	s->id = id;
	s->ctl_counter = r->ctl_base;
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

/* Deliver held items that are now in turn; drop those already covered. */
static void drain(struct receiver *r, struct recv_session *s, uint16_t stream)
{
	struct recv_stream *st = stream_of(s, stream);
	bool found = true;

	while (found) {
		found = false;
		for (unsigned i = 0; i < RECV_POOL; i++) {
			struct recv_slot *sl = &s->pool[i];
			struct item it;

			if (!sl->used || sl->stream != stream || before(st->next, sl->first_seq))
				continue;
			found = true;
			sl->used = false;
			if (!before(st->next, sl->first_seq + sl->count)) {
				st->dups++;
				s->dups++;
				continue;
			}
			it = (struct item){ .is_loss = sl->is_loss, .has_base = sl->has_base,
					    .first_seq = sl->first_seq, .count = sl->count,
					    .base_to = sl->base_to, .data = sl->data, .len = sl->len };
			deliver(r, s, stream, &it);
		}
	}
}

static void hold(struct recv_session *s, uint16_t stream, const struct item *it)
{
	struct recv_slot *free_slot = NULL;

	for (unsigned i = 0; i < RECV_POOL; i++) {
		struct recv_slot *sl = &s->pool[i];

		if (!sl->used) {
			if (!free_slot)
				free_slot = sl;
			continue;
		}
		if (sl->stream == stream && sl->first_seq == it->first_seq &&
		    sl->is_loss == it->is_loss && sl->count >= it->count) {
			s->dups++;
			stream_of(s, stream)->dups++;
			return;
		}
	}
	if (!free_slot) {
		s->pool_full++;   /* the sender resends it after our NACK */
		return;
	}
	free_slot->used = true;
	free_slot->is_loss = it->is_loss;
	free_slot->first = it->first;
	free_slot->has_base = it->has_base;
	free_slot->stream = stream;
	free_slot->first_seq = it->first_seq;
	free_slot->count = it->count;
	free_slot->base_to = it->base_to;
	free_slot->len = (uint32_t)it->len;
	if (it->len)
		memcpy(free_slot->data, it->data, it->len);
}

/* --- acknowledgements --------------------------------------------------------------------- */

static void send_ack(struct receiver *r, struct recv_session *s, uint16_t stream)
{
	struct recv_stream *st = stream_of(s, stream);
	struct tvp_range held[RECV_POOL], ranges[TVP_ACK_MAX_RANGES];
	struct tvp_ack a = { .cum = st->next };
	unsigned n = 0;
	uint64_t at = st->next;
	int len;

	for (unsigned i = 0; i < RECV_POOL; i++) {
		const struct recv_slot *sl = &s->pool[i];
		unsigned k;

		if (!sl->used || sl->stream != stream)
			continue;
		/* insertion sort by first sequence number */
		for (k = n; k > 0 && before(sl->first_seq, held[k - 1].first); k--)
			held[k] = held[k - 1];
		held[k] = (struct tvp_range){ sl->first_seq, sl->first_seq + sl->count };
		n++;
	}
	for (unsigned i = 0; i < n; i++) {
		if (before(at, held[i].first) && a.nranges < TVP_ACK_MAX_RANGES)
			ranges[a.nranges++] = (struct tvp_range){ at, held[i].first };
		if (before(at, held[i].end))
			at = held[i].end;
	}
	a.highest = at;
	len = proto_encode_ack(r->out, sizeof(r->out), s->id, stream, &a, ranges);
	if (len > 0 && r->ops.send) {
		s->acks_sent++;
		r->ops.send(r->ctx, s->addr, r->out, (size_t)len);
	}
}

/* A DATA or LOSS for a record stream, or a PT datagram for a PT stream. */
static void take(struct receiver *r, struct recv_session *s, uint16_t stream,
		 const struct item *it)
{
	struct recv_stream *st = stream_of(s, stream);
	uint64_t end = it->first_seq + it->count;

	if (!st->known) {
		if (!it->first) {
			hold(s, stream, it);   /* its turn is not known yet: no ack */
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
	} else {
		hold(s, stream, it);
	}
	/* Every datagram of a stream is answered, duplicates too (lost ACK). */
	send_ack(r, s, stream);
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
	s = find_or_create(r, m.session);
	s->addr = addr;
	s->last_active = r->clock;
	s->datagrams++;
	cpu = m.stream & TVP_STREAM_CPU_MASK;
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

	for (;;) {
		struct recv_slot *lo = NULL;

		for (unsigned i = 0; i < RECV_POOL; i++) {
			struct recv_slot *sl = &s->pool[i];

			if (sl->used && sl->stream == stream &&
			    (!lo || before(sl->first_seq, lo->first_seq)))
				lo = sl;
		}
		if (!lo)
			break;
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
	for (uint32_t cpu = 0; cpu < RECV_MAX_CPUS; cpu++) {
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
