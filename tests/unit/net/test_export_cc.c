/* SPDX-License-Identifier: MIT */
/*
 * test_export_cc.c - the export protocol's transport (net/export.h,
 * "Transport"; docs/PROTOCOL.md, "Reliability") on a fake clock: the
 * retransmission timer from measured round trips (RFC 6298: SRTT, RTTVAR,
 * RTO, Karn's rule, back-off, only the oldest datagram on expiry), the
 * congestion window (slow start, +1 per window, halved on a loss rate
 * above 1/8, not on 5% random loss, the minimum after a timeout, held
 * datagrams not in flight), loss detection by time for a lost resend,
 * the coalescing rule (full datagrams, Nagle, the coalescing delay, for
 * PT and records), the receiver's delayed ACKs (recv_set_ack_every,
 * recv_flush), the CRC, and sender and receiver back to back over a
 * lossy link with delayed ACKs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/export.h"
#include "net/proto.h"
#include "net/recv.h"
#include "vmm/lib/byte_ring.h"
#include "vmm/trace/ring.h"
#include "vmm/trace/serial_enc.h"

#define HZ        1000000u       /* 1 tick = 1 us */
#define SESSION   0x5eed0000000000ccull
#define ADDR_TV   0x0a000002u
#define PT_RING   (1u << 20)
#define REC_RING  (64u * 1024u)
#define MAXP      TVP_PT_MAX_PAYLOAD
#define PT_STREAM ((uint16_t)TVP_STREAM_PT)
#define CAP_MAX   1024
#define LINK_MAX  8192

static uint64_t rs;
static uint64_t rnd(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 0x2545f4914f6cdd1dull;
}

static uint8_t pat(uint64_t o)
{
	return (uint8_t)((o * 13 + o / 253) & 0xff);
}

struct pkt {
	uint64_t due;
	int to_recv;
	size_t len;
	uint8_t b[TVP_MAX_DATAGRAM];
};

static struct {
	bool capture;                /* else: the link to the receiver */
	struct pkt *cap;
	unsigned ncap;
	struct pkt *q;               /* the link */
	unsigned n;
	unsigned drop, dup, max_delay;
	uint64_t now;
	struct exporter *ex;
	struct receiver *rx;
	uint8_t *pt_mem;
	struct byte_ring pt;
	uint64_t *rec_mem;
	struct tv_trace_ring *ring;
	uint64_t pt_next, pt_delivered, rec_next;
} W;

static void link_put(int to_recv, const void *buf, size_t len)
{
	unsigned copies = 1;

	if (W.capture && to_recv) {
		assert_true(W.ncap < CAP_MAX);
		W.cap[W.ncap].len = len;
		memcpy(W.cap[W.ncap].b, buf, len);
		W.ncap++;
		return;
	}
	if (rnd() % 100 < W.drop)
		return;
	if (rnd() % 100 < W.dup)
		copies = 2;
	while (copies-- && W.n < LINK_MAX) {
		struct pkt *p = &W.q[W.n++];

		p->due = W.now + 1 + (W.max_delay ? rnd() % (W.max_delay + 1) : 0);
		p->to_recv = to_recv;
		p->len = len;
		memcpy(p->b, buf, len);
	}
}

static int tv_send(void *ctx, const void *buf, size_t len)
{
	(void)ctx;
	link_put(1, buf, len);
	return 0;
}

static int rx_send(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	(void)ctx;
	assert_int_equal(addr, ADDR_TV);
	link_put(0, buf, len);
	return 0;
}

static void on_pt(void *ctx, uint64_t session, uint32_t cpu, uint64_t offset,
		  const uint8_t *bytes, size_t len)
{
	(void)ctx;
	(void)session;
	assert_int_equal(cpu, 0);
	assert_int_equal(offset, W.pt_next);
	for (size_t i = 0; i < len; i++)
		if (bytes[i] != pat(offset + i))
			fail_msg("PT byte %llu wrong", (unsigned long long)(offset + i));
	W.pt_next += len;
	W.pt_delivered += len;
}

static void on_records(void *ctx, uint64_t session, uint32_t cpu, uint64_t first_seq,
		       const uint8_t *rec, size_t len, uint32_t count, bool has_base,
		       uint64_t base_to)
{
	(void)ctx;
	(void)session;
	(void)rec;
	(void)len;
	(void)has_base;
	(void)base_to;
	assert_int_equal(cpu, 0);
	assert_int_equal(first_seq, W.rec_next);
	W.rec_next += count;
}

static const struct recv_ops RX_OPS = { .records = on_records, .pt = on_pt, .send = rx_send };

/* One CPU: a PT stream and, with records, a record stream; the congestion-controlled transport. */
static void world_init(bool capture, bool records)
{
	struct export_config cfg;

	memset(&W, 0, sizeof(W));
	W.capture = capture;
	W.cap = calloc(CAP_MAX, sizeof(*W.cap));
	W.q = calloc(LINK_MAX, sizeof(*W.q));
	W.ex = calloc(1, sizeof(*W.ex));
	W.rx = calloc(1, sizeof(*W.rx));
	W.pt_mem = calloc(1, PT_RING);
	assert_non_null(W.cap);
	assert_non_null(W.q);
	assert_non_null(W.ex);
	assert_non_null(W.rx);
	assert_non_null(W.pt_mem);
	memset(&cfg, 0, sizeof(cfg));
	cfg.session = SESSION;
	cfg.tsc_hz = HZ;
	cfg.send = tv_send;
	cfg.hello.source = TV_SOURCE_PT;
	cfg.hello.tsc_hz = HZ;
	cfg.heartbeat_ticks = 1000u * HZ;   /* out of the way */
	cfg.hello_ticks = 1000u * HZ;
	assert_int_equal(export_init(W.ex, &cfg, 1, 0), 0);
	W.ex->hello_acked = true;          /* no HELLO in the captures */
	assert_int_equal(byte_ring_init(&W.pt, W.pt_mem, PT_RING), 0);
	assert_int_equal(export_attach_pt(W.ex, 0, &W.pt), 0);
	if (records) {
		size_t bytes = sizeof(struct tv_trace_ring) + REC_RING;

		W.rec_mem = calloc(1, bytes);
		W.ring = (struct tv_trace_ring *)W.rec_mem;
		assert_int_equal(trace_ring_init(W.ring, bytes, 0, 0, TV_SOURCE_PT,
						 TV_OVERFLOW_STOP, HZ, 0), 0);
		assert_int_equal(export_attach(W.ex, 0, W.ring), 0);
	}
	recv_init(W.rx, &RX_OPS, NULL, 1000);
}

static void world_free(void)
{
	free(W.cap);
	free(W.q);
	free(W.ex);
	free(W.rx);
	free(W.pt_mem);
	free(W.rec_mem);
}

static void produce(size_t n)
{
	static uint8_t buf[8192];

	while (n) {
		size_t k = n < sizeof(buf) ? n : sizeof(buf);
		uint64_t head = byte_ring_head(&W.pt);

		for (size_t i = 0; i < k; i++)
			buf[i] = pat(head + i);
		assert_int_equal(byte_ring_write(&W.pt, buf, k), k);
		n -= k;
	}
}

/* Capture mode: PT datagrams sent since `from`: their count, offsets and lengths. */
static unsigned cap_pt(unsigned from, uint64_t *off, uint32_t *len, uint16_t *flags)
{
	unsigned n = 0;

	for (unsigned i = from; i < W.ncap; i++) {
		struct proto_msg m;

		assert_int_equal(proto_decode(W.cap[i].b, W.cap[i].len, &m), 0);
		if (m.type != TVP_PT)
			continue;
		if (off)
			off[n] = m.u.pt.p.offset;
		if (len)
			len[n] = (uint32_t)m.u.pt.len;
		if (flags)
			flags[n] = m.flags;
		n++;
	}
	return n;
}

static void ack_pt(uint64_t cum, uint64_t highest, const struct tvp_range *r, uint16_t nr,
		   uint64_t now)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	struct tvp_ack a = { .cum = cum, .highest = highest, .nranges = nr };
	int n = proto_encode_ack(b, sizeof(b), SESSION, PT_STREAM, &a, r);

	assert_true(n > 0);
	assert_int_equal(export_input(W.ex, b, (size_t)n, now), 0);
}

/* --- the retransmission timer -------------------------------------------------------- */

/* RFC 6298 2.2/2.3 on exact numbers, the timer, Karn's rule and the back-off. */
static void test_rto_estimator(void **state)
{
	uint64_t off[64];
	uint32_t len[64];
	uint16_t fl[64];
	const uint64_t r1 = 40000, r2 = 80000;   /* 40 ms, 80 ms */
	uint64_t srtt, var, rto;

	(void)state;
	world_init(true, false);
	/* Before any sample: the first RTO is the ack timeout (200 ms). */
	assert_int_equal(W.ex->cc.rto, 200000);
	produce(MAXP);
	assert_int_equal(export_poll(W.ex, 1000), 1);
	/* First sample R: SRTT = R, RTTVAR = R/2, RTO = SRTT + 4 RTTVAR = 3R. */
	ack_pt(MAXP, MAXP, NULL, 0, 1000 + r1);
	assert_int_equal(W.ex->cc.samples, 1);
	assert_int_equal(W.ex->cc.srtt8 >> 3, r1);
	assert_int_equal(W.ex->cc.rttvar4 >> 2, r1 / 2);
	assert_int_equal(W.ex->cc.rto, 3 * r1);
	/* Second sample: RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|, SRTT = 7/8 SRTT + 1/8 R. */
	produce(MAXP);
	assert_int_equal(export_poll(W.ex, 100000), 1);
	ack_pt(2 * MAXP, 2 * MAXP, NULL, 0, 100000 + r2);
	var = r1 / 2 * 3 / 4 + (r2 - r1) / 4;
	srtt = r1 * 7 / 8 + r2 / 8;
	rto = srtt + 4 * var;
	assert_int_equal(W.ex->cc.srtt8 >> 3, srtt);
	assert_int_equal(W.ex->cc.rttvar4 >> 2, var);
	assert_int_equal(W.ex->cc.rto, rto);
	/* Three datagrams, no ack: nothing before the RTO, then only the oldest. */
	produce(3 * MAXP);
	W.ncap = 0;
	assert_int_equal(export_poll(W.ex, 300000), 3);
	export_poll(W.ex, 300000 + rto - 1);
	assert_int_equal(cap_pt(3, NULL, NULL, NULL), 0);
	export_poll(W.ex, 300000 + rto);
	assert_int_equal(cap_pt(3, off, len, fl), 1);
	assert_int_equal(off[0], 2 * MAXP);
	assert_int_equal(fl[0], TVP_PT_F_RETRANSMIT);
	assert_int_equal(W.ex->cc.timeouts, 1);
	/* Backed off: the next expiry after twice the RTO, not once. */
	export_poll(W.ex, 300000 + rto + 2 * rto - 1);
	assert_int_equal(cap_pt(3, NULL, NULL, NULL), 1);
	export_poll(W.ex, 300000 + rto + 2 * rto);
	assert_int_equal(cap_pt(3, off, NULL, NULL), 2);
	assert_int_equal(off[1], 2 * MAXP);
	assert_int_equal(W.ex->pt[0].backoff, 2);
	/* Karn: acking the resent datagram gives no sample; progress ends the back-off. */
	ack_pt(3 * MAXP, 3 * MAXP, NULL, 0, 300000 + 3 * rto + 5);
	assert_int_equal(W.ex->cc.samples, 2);
	assert_int_equal(W.ex->cc.rto, rto);
	assert_int_equal(W.ex->pt[0].backoff, 0);
	ack_pt(5 * MAXP, 5 * MAXP, NULL, 0, 300000 + 3 * rto + 6);
	/* Short round trips: the RTO stays at its floor (50 ms), not below. */
	for (uint64_t i = 0, t = 2000000; i < 40; i++, t += 1000) {
		uint64_t next = W.ex->pt[0].next;

		produce(MAXP);
		assert_int_equal(export_poll(W.ex, t), 1);
		ack_pt(next + MAXP, next + MAXP, NULL, 0, t + 100);
	}
	assert_int_equal(W.ex->cc.srtt8 >> 3 < 1000, 1);
	assert_int_equal(W.ex->cc.rto, 50000);
	world_free();
}

/* --- the congestion window ------------------------------------------------------------- */

static void test_cwnd_slow_start_and_avoidance(void **state)
{
	uint64_t acked = 0, t = 10;
	unsigned sent;

	(void)state;
	world_init(true, false);
	produce(PT_RING);
	/* Slow start from 16 datagrams: the window, not the budget (64), limits. */
	assert_int_equal(export_poll(W.ex, t), EXPORT_CWND_INIT);
	assert_int_equal(export_poll(W.ex, t), 0);
	assert_true(W.ex->cc.cwnd_full);
	/* Each datagram acked opens the window by one: doubling per round trip. */
	acked += 16 * MAXP;
	t += 100;
	ack_pt(acked, acked, NULL, 0, t);
	assert_int_equal(W.ex->cc.cwnd, 32);
	assert_int_equal(export_poll(W.ex, t), 32);
	acked += 32 * MAXP;
	t += 100;
	ack_pt(acked, acked, NULL, 0, t);
	assert_int_equal(W.ex->cc.cwnd, 64);
	/* Congestion avoidance above ssthresh: +1 per window acknowledged. */
	W.ex->cc.ssthresh = 64;
	sent = (unsigned)export_poll(W.ex, t);
	assert_int_equal(sent, 64);
	acked += 32 * MAXP;
	t += 100;
	ack_pt(acked, acked, NULL, 0, t);
	assert_int_equal(W.ex->cc.cwnd, 64);
	acked += 32 * MAXP;
	t += 100;
	ack_pt(acked, acked, NULL, 0, t);
	assert_int_equal(W.ex->cc.cwnd, 65);
	/* Application-limited (nothing to send): acks do not grow the window. */
	W.ncap = 0;
	while (byte_ring_head(&W.pt) != W.ex->pt[0].next) {
		export_poll(W.ex, t);
		acked = W.ex->pt[0].next;
		t += 100;
		ack_pt(acked, acked, NULL, 0, t);
	}
	export_poll(W.ex, t);
	{
		uint32_t cw = W.ex->cc.cwnd;

		assert_false(W.ex->cc.cwnd_full);
		t += 100;
		ack_pt(acked, acked, NULL, 0, t);
		assert_int_equal(W.ex->cc.cwnd, cw);
	}
	world_free();
}

/*
 * Send `rounds` windows of 32, the receiver missing the datagrams that
 * lose() picks (NACKed, resent, then acked); returns the decreases.
 */
static uint64_t lossy_rounds(unsigned rounds, bool (*lose)(unsigned i), uint64_t *t)
{
	uint64_t base = W.ex->pt[0].next;

	for (unsigned r = 0; r < rounds; r++) {
		struct tvp_range rg[TVP_ACK_MAX_RANGES];
		uint16_t nr = 0;
		uint64_t end;

		W.ex->cc.cwnd = 32;
		W.ex->cc.ssthresh = 32;
		W.ex->cc.cwnd_full = false;
		produce(32 * MAXP);
		W.ncap = 0;
		export_poll(W.ex, *t);
		end = W.ex->pt[0].next;
		for (uint64_t o = base; o < end; o += MAXP)
			if (lose((unsigned)((o / MAXP) % 1000)) && nr < TVP_ACK_MAX_RANGES)
				rg[nr++] = (struct tvp_range){ o, o + MAXP };
		*t += 1000;
		if (nr)
			ack_pt(rg[0].first, end, rg, nr, *t);   /* NACK: the holes go again */
		*t += 1000;
		ack_pt(end, end, NULL, 0, *t);
		base = end;
	}
	return W.ex->cc.decreases;
}

static bool lose_5pct(unsigned i)
{
	return i % 20 == 7;
}

static bool lose_25pct(unsigned i)
{
	return i % 4 == 1;
}

/* A link that drops 5% keeps its window; one that drops 25% (an overrun buffer) halves it. */
static void test_cwnd_loss_response(void **state)
{
	uint64_t t = 10;

	(void)state;
	world_init(true, false);
	assert_int_equal(lossy_rounds(24, lose_5pct, &t), 0);
	assert_true(W.ex->pt[0].c.retransmitted > 0);
	assert_true(lossy_rounds(24, lose_25pct, &t) > 0);
	world_free();
}

/* A timeout: the window goes to the minimum, ssthresh to half of what was in flight. */
static void test_cwnd_timeout(void **state)
{
	(void)state;
	world_init(true, false);
	produce(PT_RING);
	assert_int_equal(export_poll(W.ex, 10), EXPORT_CWND_INIT);
	export_poll(W.ex, 10 + W.ex->cc.rto);
	assert_int_equal(W.ex->cc.timeouts, 1);
	assert_int_equal(W.ex->cc.cwnd, EXPORT_CWND_MIN);
	assert_int_equal(W.ex->cc.ssthresh, EXPORT_CWND_INIT / 2);
	/* Sixteen in flight, window 2: nothing new. */
	W.ncap = 0;
	assert_int_equal(export_poll(W.ex, 11 + W.ex->cc.rto), 0);
	world_free();
}

/* Datagrams the receiver holds beyond a hole are not in flight; a lost resend goes again. */
static void test_held_and_lost_resend(void **state)
{
	struct tvp_range hole = { MAXP, 2 * MAXP };
	uint64_t off[64];
	uint64_t t = 10;
	unsigned n;

	(void)state;
	world_init(true, false);
	produce(PT_RING);
	assert_int_equal(export_poll(W.ex, t), 16);
	/* A sample first (datagram 0, 10 ms), then datagram 1 missing, 2..15 held. */
	t += 10000;
	ack_pt(MAXP, MAXP, NULL, 0, t);
	W.ncap = 0;
	t += 10;
	ack_pt(MAXP, 16 * MAXP, &hole, 1, t);
	assert_int_equal(W.ex->pt[0].nsacked, 14);
	n = cap_pt(0, off, NULL, NULL);
	assert_int_equal(n, 1);                      /* the first NACK: at once */
	assert_int_equal(off[0], MAXP);
	/* Held ones are not in flight: the window (17 after the ack) has room for 16. */
	assert_int_equal(export_poll(W.ex, t), 16);
	/* The same NACK again soon: not again. */
	W.ncap = 0;
	t += 10;
	ack_pt(MAXP, 16 * MAXP, &hole, 1, t);
	assert_int_equal(cap_pt(0, NULL, NULL, NULL), 0);
	/* The resend is lost too: after two round trips it goes again by itself. */
	export_poll(W.ex, t + 2 * (W.ex->cc.srtt8 >> 3) + W.ex->cc.rttvar4 + 2);
	n = cap_pt(0, off, NULL, NULL);
	assert_int_equal(n, 1);
	assert_int_equal(off[0], MAXP);
	assert_int_equal(W.ex->cc.timeouts, 0);
	world_free();
}

/* --- coalescing ---------------------------------------------------------------------------- */

static void test_coalescing_pt(void **state)
{
	uint32_t len[64];
	uint64_t co;

	(void)state;
	world_init(true, false);
	co = W.ex->cfg.coalesce_ticks;
	assert_int_equal(co, 1000);                  /* EXPORT_COALESCE_US at 1 MHz */
	/* Nothing in flight: a partial datagram goes at once (Nagle). */
	produce(100);
	assert_int_equal(export_poll(W.ex, 10), 1);
	/* One in flight: more small data waits... */
	produce(200);
	assert_int_equal(export_poll(W.ex, 20), 0);
	assert_int_equal(export_poll(W.ex, 20 + co - 1), 0);
	/* ...at most the coalescing delay. */
	W.ncap = 0;
	assert_int_equal(export_poll(W.ex, 20 + co), 1);
	assert_int_equal(cap_pt(0, NULL, len, NULL), 1);
	assert_int_equal(len[0], 200);
	/* A full datagram's worth goes at once, the rest waits. */
	W.ncap = 0;
	produce(2 * MAXP + 50);
	assert_int_equal(export_poll(W.ex, 2000), 2);
	assert_int_equal(cap_pt(0, NULL, len, NULL), 2);
	assert_int_equal(len[0], MAXP);
	assert_int_equal(len[1], MAXP);
	/* Data that grows to a full datagram meanwhile goes full. */
	produce(MAXP);
	assert_int_equal(export_poll(W.ex, 2001), 1);
	assert_int_equal(cap_pt(0, NULL, len, NULL), 3);
	assert_int_equal(len[2], MAXP);
	/* Everything acknowledged: the 50 left go at once. */
	ack_pt(W.ex->pt[0].next, W.ex->pt[0].next, NULL, 0, 2100);
	assert_int_equal(export_poll(W.ex, 2101), 1);
	assert_int_equal(cap_pt(0, NULL, len, NULL), 4);
	assert_int_equal(len[3], 50);
	assert_int_equal(W.ex->st.partial, 3);
	world_free();
}

static unsigned cap_data(unsigned from)
{
	unsigned n = 0;

	for (unsigned i = from; i < W.ncap; i++) {
		struct proto_msg m;

		assert_int_equal(proto_decode(W.cap[i].b, W.cap[i].len, &m), 0);
		n += m.type == TVP_DATA;
	}
	return n;
}

static void test_coalescing_records(void **state)
{
	uint64_t co;

	(void)state;
	world_init(true, true);
	co = W.ex->cfg.coalesce_ticks;
	assert_int_equal(trace_append_marker(W.ring, 1, 1, "a", 1), 0);
	assert_int_equal(export_poll(W.ex, 10), 1);       /* nothing in flight */
	for (unsigned i = 0; i < 10; i++)
		assert_int_equal(trace_append_marker(W.ring, 1, i, "b", 1), 0);
	assert_int_equal(export_poll(W.ex, 11), 0);       /* one in flight: wait */
	assert_int_equal(export_poll(W.ex, 11 + co), 1);
	/* Enough records for two full datagrams and some: two at once. */
	W.ncap = 0;
	for (unsigned i = 0; i < 150; i++)
		assert_int_equal(trace_append_marker(W.ring, 1, i, NULL, 0), 0);
	assert_int_equal(export_poll(W.ex, 12 + co), 2);
	assert_int_equal(cap_data(0), 2);
	world_free();
}

/* --- the receiver's delayed ACKs -------------------------------------------------------------- */

static int mk_pt(uint8_t *b, uint64_t off, size_t len, uint16_t flags)
{
	uint8_t bytes[MAXP];

	for (size_t i = 0; i < len; i++)
		bytes[i] = pat(off + i);
	return proto_encode_pt_flags(b, TVP_MAX_DATAGRAM, SESSION, 0, flags, off, bytes, len);
}

static unsigned acks_sent(void)
{
	const struct recv_session *s = recv_session_get(W.rx, SESSION);

	return s ? (unsigned)s->acks_sent : 0;
}

static void feed_pt(uint64_t off, size_t len, uint16_t flags)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	int n = mk_pt(b, off, len, flags);

	assert_true(n > 0);
	assert_int_equal(recv_feed(W.rx, b, (size_t)n, ADDR_TV), 0);
}

static void test_receiver_ack_every(void **state)
{
	struct proto_msg m;

	(void)state;
	world_init(false, false);
	assert_int_equal(recv_set_ack_every(W.rx, 0), PROTO_ERR_INVAL);
	assert_int_equal(recv_set_ack_every(W.rx, RECV_ACK_EVERY_MAX + 1), PROTO_ERR_INVAL);
	assert_int_equal(recv_set_ack_every(W.rx, 4), 0);
	feed_pt(0, MAXP, TVP_PT_F_FIRST);             /* FIRST: at once */
	assert_int_equal(acks_sent(), 1);
	for (unsigned i = 1; i < 4; i++)               /* full, in order: wait */
		feed_pt(i * MAXP, MAXP, 0);
	assert_int_equal(acks_sent(), 1);
	feed_pt(4 * MAXP, MAXP, 0);                    /* the 4th unanswered one */
	assert_int_equal(acks_sent(), 2);
	assert_int_equal(proto_decode(W.q[W.n - 1].b, W.q[W.n - 1].len, &m), 0);
	assert_int_equal(m.u.ack.a.cum, 5 * MAXP);
	feed_pt(5 * MAXP, MAXP, 0);
	assert_int_equal(acks_sent(), 2);
	/* recv_flush answers what waits, once. */
	assert_int_equal(recv_flush(W.rx), 1);
	assert_int_equal(acks_sent(), 3);
	assert_int_equal(recv_flush(W.rx), 0);
	/* A short datagram (the sender had no more): at once. */
	feed_pt(6 * MAXP, 10, 0);
	assert_int_equal(acks_sent(), 4);
	/* Out of order, opening a hole: at once, with the hole. */
	feed_pt(7 * MAXP + 10, MAXP, 0);
	assert_int_equal(acks_sent(), 5);
	assert_int_equal(proto_decode(W.q[W.n - 1].b, W.q[W.n - 1].len, &m), 0);
	assert_int_equal(m.u.ack.a.nranges, 1);
	assert_int_equal(m.u.ack.ranges[0].first, 6 * MAXP + 10);
	/* Continuing the held run: the hole is known, this waits... */
	feed_pt(8 * MAXP + 10, MAXP, 0);
	assert_int_equal(acks_sent(), 5);
	/* ...a second hole does not. */
	feed_pt(10 * MAXP + 10, MAXP, 0);
	assert_int_equal(acks_sent(), 6);
	assert_int_equal(proto_decode(W.q[W.n - 1].b, W.q[W.n - 1].len, &m), 0);
	assert_int_equal(m.u.ack.a.nranges, 2);
	assert_int_equal(m.u.ack.a.highest, 11 * MAXP + 10);
	feed_pt(6 * MAXP + 10, MAXP, 0);               /* fills the first */
	assert_int_equal(acks_sent(), 7);
	assert_int_equal(proto_decode(W.q[W.n - 1].b, W.q[W.n - 1].len, &m), 0);
	assert_int_equal(m.u.ack.a.cum, 9 * MAXP + 10);
	feed_pt(9 * MAXP + 10, MAXP, 0);               /* and the second */
	assert_int_equal(acks_sent(), 8);
	assert_int_equal(proto_decode(W.q[W.n - 1].b, W.q[W.n - 1].len, &m), 0);
	assert_int_equal(m.u.ack.a.cum, 11 * MAXP + 10);
	/* A duplicate: at once. */
	feed_pt(0, MAXP, TVP_PT_F_FIRST);
	assert_int_equal(acks_sent(), 9);
	assert_int_equal(W.pt_delivered, 11 * MAXP + 10);
	world_free();
}

/* --- CRC --------------------------------------------------------------------------------------- */

static void test_crc_slicing(void **state)
{
	static uint8_t buf[4096];

	(void)state;
	assert_int_equal(proto_crc32(0, "123456789", 9), 0xcbf43926u);
	rs = 99;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	for (unsigned k = 0; k < 300; k++) {
		size_t off = rnd() % 64, len = rnd() % (sizeof(buf) - 64);
		uint32_t seed = (uint32_t)rnd();

		assert_int_equal(proto_crc32(seed, buf + off, len),
				 trace_serial_crc32(seed, buf + off, len));
	}
}

/* --- back to back --------------------------------------------------------------------------------- */

static void step(void)
{
	static struct pkt due[LINK_MAX];
	unsigned nd = 0, keep = 0;

	W.now += 100;    /* 100 us a step */
	/* In the order sent (FIFO), but for the random delays. */
	for (unsigned i = 0; i < W.n; i++) {
		if (W.q[i].due > W.now)
			W.q[keep++] = W.q[i];
		else
			due[nd++] = W.q[i];
	}
	W.n = keep;
	for (unsigned i = 0; i < nd; i++) {
		if (due[i].to_recv)
			assert_int_equal(recv_feed(W.rx, due[i].b, due[i].len, ADDR_TV), 0);
		else
			(void)export_input(W.ex, due[i].b, due[i].len, W.now);
	}
	recv_flush(W.rx);   /* the receiver's batch is done */
	assert_true(export_poll(W.ex, W.now) >= 0);
}

static void back_to_back(unsigned drop, unsigned dup, unsigned delay, uint64_t seed)
{
	const uint64_t total = 3000000;
	uint64_t made = 0, steps = 0, recs = 0;

	world_init(false, true);
	rs = seed;
	W.drop = drop;
	W.dup = dup;
	W.max_delay = delay;
	assert_int_equal(recv_set_ack_every(W.rx, 8), 0);
	while (W.pt_delivered < total || W.rec_next < recs || W.ex->pt[0].nwin || W.ex->s[0].nwin) {
		if (made < total) {
			uint64_t room = PT_RING - (byte_ring_head(&W.pt) - byte_ring_tail(&W.pt));
			uint64_t k = total - made < 7000 ? total - made : 7000;

			k = k < room ? k : room;
			produce(k);
			made += k;
			for (unsigned i = 0; i < 5 && recs < 20000; i++, recs++)
				assert_int_equal(trace_append_marker(W.ring, 1, recs, NULL, 0), 0);
		}
		step();
		assert_true(++steps < 2000000);
	}
	assert_int_equal(W.pt_delivered, total);
	assert_int_equal(W.rec_next, recs);
	assert_int_equal(W.ex->pt[0].c.acked, total);
	if (!drop) {
		/* Nothing lost: nothing re-sent, and far fewer ACKs than datagrams. */
		assert_int_equal(W.ex->pt[0].c.retransmitted, 0);
		assert_true(W.ex->st.acks * 3 < W.ex->st.datagrams);
	} else {
		/* What was re-sent stays near what was dropped. */
		assert_true(W.ex->pt[0].c.retransmitted * 100 < W.ex->pt[0].c.sent * (drop * 3));
	}
	world_free();
}

static void test_back_to_back_clean(void **state)
{
	(void)state;
	back_to_back(0, 0, 0, 1);
}

static void test_back_to_back_lossy(void **state)
{
	(void)state;
	back_to_back(5, 2, 3, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rto_estimator),
		cmocka_unit_test(test_cwnd_slow_start_and_avoidance),
		cmocka_unit_test(test_cwnd_loss_response),
		cmocka_unit_test(test_cwnd_timeout),
		cmocka_unit_test(test_held_and_lost_resend),
		cmocka_unit_test(test_coalescing_pt),
		cmocka_unit_test(test_coalescing_records),
		cmocka_unit_test(test_receiver_ack_every),
		cmocka_unit_test(test_crc_slicing),
		cmocka_unit_test(test_back_to_back_clean),
		cmocka_unit_test(test_back_to_back_lossy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
