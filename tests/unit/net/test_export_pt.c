/* SPDX-License-Identifier: MIT */
/*
 * test_export_pt.c - PT streams of the export protocol: net/export.c
 * reading a CPU's PT byte ring (vmm/lib/byte_ring.h) and net/recv.c putting
 * the bytes back in order.  The exporter alone against a capturing send
 * callback: PT datagrams in order with their stream offsets, FIRST only
 * on the first, HELLO caps bit 17, the ring's tail moved by acks and by
 * nothing else, resends on NACK (rate-limited) and on ack timeout, the
 * window bound; the receiver alone: out-of-order bytes held and delivered
 * once, duplicates counted, ACK/NACK ranges in bytes, a stream whose
 * FIRST is missing acknowledged only once it comes, gaps at close; the
 * PT flags on the wire; and both back to back over a lossy link (drops,
 * duplicates, reordering, the first PT datagram lost, offsets wrapping
 * past 2^64) with records and PT bytes at once.
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
#include "vmm/trace/format.h"
#include "vmm/lib/byte_ring.h"
#include "vmm/trace/ring.h"

#define NCPU      2u
#define HZ        1000u          /* 1 tick = 1 ms: ack timeout 200 ticks */
#define SESSION   0x5eed00000000017aull
#define ADDR_TV   0x0a000002u
#define RING_DATA (16u * 1024u)  /* record ring */
#define PT_RING   (128u * 1024u) /* PT byte ring: more than a window of datagrams */
#define PT_STREAM(cpu) ((uint16_t)((cpu) | TVP_STREAM_PT))

/* The byte at stream offset o of cpu's PT stream. */
static uint8_t pat(uint32_t cpu, uint64_t o)
{
	return (uint8_t)((o * 7 + o / 251 + cpu * 13) & 0xff);
}

/* --- PRNG ------------------------------------------------------------------------- */

static uint64_t rs;
static uint64_t rnd(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 0x2545f4914f6cdd1dull;
}

static bool chance(unsigned pct)
{
	return rnd() % 100 < pct;
}

/* --- the world ------------------------------------------------------------------------ */

struct pkt {
	uint64_t due;
	int to_recv;
	size_t len;
	uint8_t b[TVP_MAX_DATAGRAM];
};

#define LINK_MAX 4096
#define CAP_MAX  512

static struct world {
	/* the link (back to back) or a capture of what the exporter sent */
	bool capture;
	unsigned drop, dup, max_delay;
	unsigned drop_first_pt;      /* PT datagrams with FIRST still to drop */
	struct pkt *q;
	unsigned n;
	uint64_t now;
	struct pkt *cap;             /* capture mode: what left the exporter */
	unsigned ncap;
	/* the machine */
	uint64_t *ring_mem[NCPU];
	struct tv_trace_ring *ring[NCPU];
	uint8_t *pt_mem[NCPU];
	struct byte_ring pt[NCPU];
	uint64_t pt_refused[NCPU];   /* bytes the full byte ring refused */
	struct exporter *ex;
	struct receiver *rx;
	/* what the receiver delivered */
	uint64_t pt_next[NCPU];      /* next offset expected at ops.pt */
	uint64_t pt_delivered[NCPU], pt_calls[NCPU];
	uint64_t pt_missing[NCPU];
	uint64_t rec_next[NCPU], rec_delivered[NCPU];
} W;

static void link_put(int to_recv, const void *buf, size_t len)
{
	unsigned copies = 1;
	struct proto_msg m;

	assert_true(len <= TVP_MAX_DATAGRAM);
	if (W.capture) {
		assert_true(W.ncap < CAP_MAX);
		W.cap[W.ncap].len = len;
		memcpy(W.cap[W.ncap].b, buf, len);
		W.ncap++;
		return;
	}
	if (to_recv && W.drop_first_pt && proto_decode(buf, len, &m) == 0 &&
	    m.type == TVP_PT && (m.flags & TVP_PT_F_FIRST)) {
		W.drop_first_pt--;
		return;
	}
	if (chance(W.drop))
		return;
	if (chance(W.dup))
		copies = 2;
	while (copies-- && W.n < LINK_MAX) {
		struct pkt *p = &W.q[W.n++];

		p->due = W.now + (W.max_delay ? rnd() % (W.max_delay + 1) : 0);
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
	assert_int_equal(session, SESSION);
	assert_true(cpu < NCPU);
	assert_true(len > 0);
	/* In order and exactly once: each call continues where the last ended. */
	assert_int_equal(offset, W.pt_next[cpu]);
	for (size_t i = 0; i < len; i++)
		if (bytes[i] != pat(cpu, offset + i))
			fail_msg("cpu %u: PT byte at %llu is %#x, not %#x", cpu,
				 (unsigned long long)(offset + i), bytes[i], pat(cpu, offset + i));
	W.pt_next[cpu] += len;
	W.pt_delivered[cpu] += len;
	W.pt_calls[cpu]++;
}

static void on_pt_missing(void *ctx, uint64_t session, uint32_t cpu, uint64_t offset,
			  uint64_t count)
{
	(void)ctx;
	(void)session;
	assert_int_equal(offset, W.pt_next[cpu]);
	W.pt_next[cpu] += count;
	W.pt_missing[cpu] += count;
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
	assert_int_equal(first_seq, W.rec_next[cpu]);
	W.rec_next[cpu] += count;
	W.rec_delivered[cpu] += count;
}

static const struct recv_ops RX_OPS = {
	.records = on_records, .pt = on_pt, .pt_missing = on_pt_missing, .send = rx_send,
};

/*
 * cpus with a record ring and, from pt_mask, a PT ring whose stream
 * begins at pt_start (the tail where the exporter finds it).
 */
static void world_init(unsigned pt_mask, uint64_t pt_start, bool capture, uint64_t seed)
{
	struct export_config cfg;

	memset(&W, 0, sizeof(W));
	W.capture = capture;
	W.q = calloc(LINK_MAX, sizeof(*W.q));
	W.cap = calloc(CAP_MAX, sizeof(*W.cap));
	assert_non_null(W.q);
	assert_non_null(W.cap);
	rs = seed;
	W.ex = calloc(1, sizeof(*W.ex));
	W.rx = calloc(1, sizeof(*W.rx));
	assert_non_null(W.ex);
	assert_non_null(W.rx);
	memset(&cfg, 0, sizeof(cfg));
	cfg.session = SESSION;
	cfg.tsc_hz = HZ;
	cfg.send = tv_send;
	cfg.hello.source = TV_SOURCE_PT;
	cfg.hello.tsc_hz = HZ;
	strcpy(cfg.hello.machine, "ptbox");
	/* These tests pin the first version's transport (test_export_cc.c the new one). */
	cfg.fixed_timers = true;
	assert_int_equal(export_init(W.ex, &cfg, NCPU, 0), 0);
	for (unsigned c = 0; c < NCPU; c++) {
		size_t bytes = sizeof(struct tv_trace_ring) + RING_DATA;

		W.ring_mem[c] = calloc(1, bytes);
		W.ring[c] = (struct tv_trace_ring *)W.ring_mem[c];
		assert_int_equal(trace_ring_init(W.ring[c], bytes, c, c, TV_SOURCE_PT,
						 TV_OVERFLOW_STOP, HZ, 0), 0);
		assert_int_equal(export_attach(W.ex, c, W.ring[c]), 0);
		W.pt_mem[c] = calloc(1, PT_RING);
		assert_int_equal(byte_ring_init(&W.pt[c], W.pt_mem[c], PT_RING), 0);
		/* A stream that does not begin at 0: the ring was used before. */
		W.pt[c].head = W.pt[c].tail = pt_start;
		W.pt_next[c] = pt_start;
		if (pt_mask >> c & 1)
			assert_int_equal(export_attach_pt(W.ex, c, &W.pt[c]), 0);
	}
	recv_init(W.rx, &RX_OPS, NULL, 1000);
}

static void world_free(void)
{
	for (unsigned c = 0; c < NCPU; c++) {
		free(W.ring_mem[c]);
		free(W.pt_mem[c]);
	}
	free(W.ex);
	free(W.rx);
	free(W.q);
	free(W.cap);
}

/* The traced CPU's drain: n more bytes of the pattern, as many as fit. */
static size_t produce_pt(unsigned c, size_t n)
{
	static uint8_t buf[8192];
	uint64_t head = W.pt[c].head;
	size_t took;

	assert_true(n <= sizeof(buf));
	for (size_t i = 0; i < n; i++)
		buf[i] = pat(c, head + i);
	took = byte_ring_write(&W.pt[c], buf, n);
	W.pt_refused[c] += n - took;
	return took;
}

/* Capture mode: decode the i-th datagram the exporter sent. */
static void cap_msg(unsigned i, struct proto_msg *m)
{
	assert_true(i < W.ncap);
	assert_int_equal(proto_decode(W.cap[i].b, W.cap[i].len, m), 0);
}

/* Capture mode: the PT datagrams among [from, W.ncap), in m[], their count. */
static unsigned cap_pts(unsigned from, struct proto_msg *m, unsigned max)
{
	unsigned n = 0;

	for (unsigned i = from; i < W.ncap; i++) {
		cap_msg(i, &m[n]);
		if (m[n].type == TVP_PT) {
			assert_true(n < max);
			n++;
		}
	}
	return n;
}

/* An ACK of cpu's PT stream from the receiver to the exporter. */
static int ack_pt(unsigned cpu, uint64_t cum, uint64_t highest,
		  const struct tvp_range *ranges, uint16_t nranges, uint64_t now)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	struct tvp_ack a = { .cum = cum, .highest = highest, .nranges = nranges };
	int n = proto_encode_ack(b, sizeof(b), SESSION, PT_STREAM(cpu), &a, ranges);

	assert_true(n > 0);
	return export_input(W.ex, b, (size_t)n, now);
}

/* A PT datagram of cpu as the exporter would send it (pattern bytes). */
static int mk_pt(uint8_t *b, unsigned cpu, uint64_t off, size_t len, uint16_t flags)
{
	uint8_t bytes[TVP_PT_MAX_PAYLOAD];

	for (size_t i = 0; i < len; i++)
		bytes[i] = pat(cpu, off + i);
	return proto_encode_pt_flags(b, TVP_MAX_DATAGRAM, SESSION, (uint16_t)cpu, flags, off,
				     bytes, len);
}

static int feed(const uint8_t *b, int n)
{
	assert_true(n > 0);
	return recv_feed(W.rx, b, (size_t)n, ADDR_TV);
}

/* The last datagram the receiver sent: an ACK of stream. */
static void last_ack(uint16_t stream, struct proto_msg *m)
{
	assert_true(W.n > 0);
	assert_int_equal(proto_decode(W.q[W.n - 1].b, W.q[W.n - 1].len, m), 0);
	assert_int_equal(m->type, TVP_ACK);
	assert_int_equal(m->stream, stream);
}

/* --- the exporter alone ---------------------------------------------------------------- */

/* New bytes go out in order, offsets = stream offsets, FIRST only on the first. */
static void test_pt_sent_in_order(void **state)
{
	struct proto_msg m[64], h;
	uint64_t off = 5000;
	unsigned n;

	(void)state;
	world_init(1u << 1, 5000, true, 1);
	assert_int_equal(produce_pt(1, 4000), 4000);
	assert_true(export_poll(W.ex, 1) > 0);
	/* The HELLO goes first and says PT streams follow. */
	cap_msg(0, &h);
	assert_int_equal(h.type, TVP_HELLO);
	assert_true(h.u.hello.caps & TVP_CAP_PT_STREAM);
	n = cap_pts(0, m, 64);
	assert_int_equal(n, 3);                       /* 1412 + 1412 + 1176 */
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(m[i].stream, PT_STREAM(1));
		assert_int_equal(m[i].u.pt.p.offset, off);
		assert_int_equal(m[i].flags, i == 0 ? TVP_PT_F_FIRST : 0);
		assert_int_equal(m[i].u.pt.len, i < 2 ? TVP_PT_MAX_PAYLOAD : 4000 - 2 * TVP_PT_MAX_PAYLOAD);
		for (size_t k = 0; k < m[i].u.pt.len; k++)
			assert_int_equal(m[i].u.pt.bytes[k], pat(1, off + k));
		off += m[i].u.pt.len;
	}
	/* More bytes later continue the stream, without FIRST. */
	W.ncap = 0;
	assert_int_equal(produce_pt(1, 10), 10);
	assert_int_equal(export_poll(W.ex, 2), 1);
	n = cap_pts(0, m, 64);
	assert_int_equal(n, 1);
	assert_int_equal(m[0].u.pt.p.offset, 9000);
	assert_int_equal(m[0].u.pt.len, 10);
	assert_int_equal(m[0].flags, 0);
	/* Nothing new: nothing sent; CPU 0 has no PT stream at all. */
	W.ncap = 0;
	assert_int_equal(export_poll(W.ex, 3), 0);
	assert_int_equal(W.ex->pt[1].c.sent, 4010);
	assert_int_equal(export_pt_counters(W.ex, 1)->produced, 4010);
	assert_null(export_pt_counters(W.ex, 0));
	/* Sending released nothing: the bytes wait for the ack. */
	assert_int_equal(byte_ring_tail(&W.pt[1]), 5000);
	world_free();
}

/* The tail moves only when a cumulative ack passes bytes, exactly to it. */
static void test_pt_tail_only_by_acks(void **state)
{
	struct proto_msg m[EXPORT_WINDOW];
	const uint64_t sent = EXPORT_WINDOW * TVP_PT_MAX_PAYLOAD;
	size_t first_round;

	(void)state;
	world_init(1u << 0, 0, true, 2);
	/* Fill the ring: what does not fit is refused (kept oldest). */
	first_round = 0;
	for (int k = 0; k < 20; k++)
		first_round += produce_pt(0, 8000);
	assert_int_equal(first_round, PT_RING);
	assert_int_equal(W.pt_refused[0], 160000 - PT_RING);
	assert_true(export_poll(W.ex, 1) > 0);
	/* A window's worth went out (64 datagrams, also the poll's budget). */
	assert_int_equal(cap_pts(0, m, EXPORT_WINDOW), EXPORT_WINDOW);
	assert_int_equal(W.ex->pt[0].next, sent);
	/* Polls and time without an ack (resends) release nothing. */
	for (uint64_t t = 2; t < 2000; t += 50)
		export_poll(W.ex, t);
	assert_int_equal(byte_ring_tail(&W.pt[0]), 0);
	assert_int_equal(produce_pt(0, 1), 0);
	/* An ack beyond what was sent, or before the stream: ignored, nothing moves. */
	assert_int_equal(ack_pt(0, sent + 1, sent + 1, NULL, 0, 2000), 0);
	assert_int_equal(W.ex->st.ignored, 1);
	assert_int_equal(byte_ring_tail(&W.pt[0]), 0);
	/* An ack of the record stream does not touch the PT ring. */
	{
		uint8_t b[TVP_MAX_DATAGRAM];
		struct tvp_ack a = { 0, 0, 0, 0, 0 };
		int n = proto_encode_ack(b, sizeof(b), SESSION, 0, &a, NULL);

		assert_int_equal(export_input(W.ex, b, (size_t)n, 2000), 0);
		assert_int_equal(byte_ring_tail(&W.pt[0]), 0);
	}
	/* Two datagrams acked: exactly their bytes go back to the producer. */
	assert_int_equal(ack_pt(0, 2 * TVP_PT_MAX_PAYLOAD, 2 * TVP_PT_MAX_PAYLOAD, NULL, 0, 2001), 0);
	assert_int_equal(byte_ring_tail(&W.pt[0]), 2 * TVP_PT_MAX_PAYLOAD);
	assert_int_equal(W.ex->pt[0].acked, 2 * TVP_PT_MAX_PAYLOAD);
	assert_int_equal(W.ex->pt[0].nwin, EXPORT_WINDOW - 2);
	assert_int_equal(produce_pt(0, 8000), 2 * TVP_PT_MAX_PAYLOAD);
	/* An old ack again changes nothing. */
	assert_int_equal(ack_pt(0, TVP_PT_MAX_PAYLOAD, TVP_PT_MAX_PAYLOAD, NULL, 0, 2002), 0);
	assert_int_equal(byte_ring_tail(&W.pt[0]), 2 * TVP_PT_MAX_PAYLOAD);
	/* A cum inside a datagram releases up to it; the rest stays in the window. */
	assert_int_equal(ack_pt(0, 3 * TVP_PT_MAX_PAYLOAD - 12, 3 * TVP_PT_MAX_PAYLOAD - 12, NULL, 0, 2003), 0);
	assert_int_equal(byte_ring_tail(&W.pt[0]), 3 * TVP_PT_MAX_PAYLOAD - 12);
	assert_int_equal(W.ex->pt[0].win[0].off, 3 * TVP_PT_MAX_PAYLOAD - 12);
	assert_int_equal(W.ex->pt[0].win[0].len, 12);
	/* Everything sent acked: the window is empty, the tail at what was sent. */
	W.ncap = 0;
	assert_int_equal(ack_pt(0, sent, sent, NULL, 0, 2004), 0);
	assert_int_equal(W.ex->pt[0].nwin, 0);
	assert_int_equal(byte_ring_tail(&W.pt[0]), sent);
	assert_int_equal(W.ncap, 0);                     /* an ack sends nothing by itself */
	/* The rest follows at the next poll, from where the window stopped. */
	export_poll(W.ex, 2005);
	assert_int_equal(cap_pts(0, m, EXPORT_WINDOW), 31);   /* 43528 bytes */
	assert_int_equal(m[0].u.pt.p.offset, sent);
	assert_int_equal(W.ex->pt[0].next, PT_RING + 2 * TVP_PT_MAX_PAYLOAD);
	world_free();
}

/* A NACK range resends the datagrams it touches, at most once per quarter timeout. */
static void test_pt_resend_on_nack(void **state)
{
	struct proto_msg m[64];
	struct tvp_range r[2];
	unsigned n;

	(void)state;
	world_init(1u << 0, 0, true, 3);
	produce_pt(0, 5 * TVP_PT_MAX_PAYLOAD);
	assert_true(export_poll(W.ex, 10) > 0);
	assert_int_equal(cap_pts(0, m, 64), 5);
	/* Datagram 1 missing (a range starting inside it), 0 and 2..4 arrived. */
	W.ncap = 0;
	r[0] = (struct tvp_range){ TVP_PT_MAX_PAYLOAD + 100, 2 * TVP_PT_MAX_PAYLOAD };
	assert_int_equal(ack_pt(0, TVP_PT_MAX_PAYLOAD + 100, 5 * TVP_PT_MAX_PAYLOAD, r, 1, 100), 0);
	n = cap_pts(0, m, 64);
	assert_int_equal(n, 1);
	assert_int_equal(m[0].u.pt.p.offset, TVP_PT_MAX_PAYLOAD + 100);   /* the rest of it */
	assert_int_equal(m[0].u.pt.len, TVP_PT_MAX_PAYLOAD - 100);
	assert_int_equal(m[0].flags, TVP_PT_F_RETRANSMIT);
	assert_int_equal(m[0].u.pt.bytes[0], pat(0, TVP_PT_MAX_PAYLOAD + 100));
	assert_int_equal(W.ex->pt[0].c.retransmitted, TVP_PT_MAX_PAYLOAD - 100);
	/* The same NACK at once (the receiver repeats it per datagram): not again. */
	W.ncap = 0;
	assert_int_equal(ack_pt(0, TVP_PT_MAX_PAYLOAD + 100, 5 * TVP_PT_MAX_PAYLOAD, r, 1, 110), 0);
	assert_int_equal(cap_pts(0, m, 64), 0);
	/* A quarter of the ack timeout later it is. */
	assert_int_equal(ack_pt(0, TVP_PT_MAX_PAYLOAD + 100, 5 * TVP_PT_MAX_PAYLOAD, r, 1, 150), 0);
	assert_int_equal(cap_pts(0, m, 64), 1);
	/* Two ranges, over datagrams 2 and 4: both, and not 3. */
	W.ncap = 0;
	r[0] = (struct tvp_range){ 2 * TVP_PT_MAX_PAYLOAD, 3 * TVP_PT_MAX_PAYLOAD };
	r[1] = (struct tvp_range){ 4 * TVP_PT_MAX_PAYLOAD, 4 * TVP_PT_MAX_PAYLOAD + 1 };
	assert_int_equal(ack_pt(0, 2 * TVP_PT_MAX_PAYLOAD, 5 * TVP_PT_MAX_PAYLOAD, r, 2, 200), 0);
	n = cap_pts(0, m, 64);
	assert_int_equal(n, 2);
	assert_int_equal(m[0].u.pt.p.offset, 2 * TVP_PT_MAX_PAYLOAD);
	assert_int_equal(m[1].u.pt.p.offset, 4 * TVP_PT_MAX_PAYLOAD);
	assert_int_equal(byte_ring_tail(&W.pt[0]), 2 * TVP_PT_MAX_PAYLOAD);
	assert_int_equal(W.ex->st.nack_ranges, 5);
	world_free();
}

/* No ack within the ack timeout: the unacknowledged datagrams go again, oldest first. */
static void test_pt_resend_on_timeout(void **state)
{
	struct proto_msg m[64];
	unsigned n;

	(void)state;
	world_init(1u << 0, 0, true, 4);
	produce_pt(0, 3 * TVP_PT_MAX_PAYLOAD);
	assert_true(export_poll(W.ex, 0) > 0);
	W.ncap = 0;
	/* Just before the timeout (200 ticks): nothing. */
	export_poll(W.ex, 199);
	assert_int_equal(cap_pts(0, m, 64), 0);
	export_poll(W.ex, 200);
	n = cap_pts(0, m, 64);
	assert_int_equal(n, 3);
	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(m[i].u.pt.p.offset, i * TVP_PT_MAX_PAYLOAD);
		/* The first one keeps FIRST: it may be the one the receiver never saw. */
		assert_int_equal(m[i].flags, TVP_PT_F_RETRANSMIT | (i == 0 ? TVP_PT_F_FIRST : 0));
	}
	/* Acked in part: only the rest times out next. */
	assert_int_equal(ack_pt(0, 2 * TVP_PT_MAX_PAYLOAD, 2 * TVP_PT_MAX_PAYLOAD, NULL, 0, 250), 0);
	W.ncap = 0;
	export_poll(W.ex, 399);
	assert_int_equal(cap_pts(0, m, 64), 0);
	export_poll(W.ex, 400);
	assert_int_equal(cap_pts(0, m, 64), 1);
	assert_int_equal(m[0].u.pt.p.offset, 2 * TVP_PT_MAX_PAYLOAD);
	assert_int_equal(W.ex->pt[0].c.retransmitted, 4 * TVP_PT_MAX_PAYLOAD);
	world_free();
}

/* At most EXPORT_WINDOW PT datagrams in flight; the budget is shared with records. */
static void test_pt_window_and_budget(void **state)
{
	struct proto_msg m[CAP_MAX];
	unsigned npt = 0, ndata = 0;

	(void)state;
	world_init(1u << 0, 0, true, 5);
	/* CPU 0's two streams have more than one poll's budget waiting. */
	for (int k = 0; k < 12; k++)
		produce_pt(0, 8000);
	for (unsigned i = 0; i < 400; i++)   /* 24-byte markers: 7 DATA datagrams */
		assert_int_equal(trace_append_marker(W.ring[0], 1, i, NULL, 0), 0);
	export_poll(W.ex, 1);
	for (unsigned i = 0; i < W.ncap; i++) {
		cap_msg(i, &m[0]);
		npt += m[0].type == TVP_PT;
		ndata += m[0].type == TVP_DATA;
	}
	assert_int_equal(ndata, 7);
	assert_int_equal(npt, EXPORT_TX_BUDGET - 7);
	for (uint64_t t = 2; t < 10; t++)
		export_poll(W.ex, t);
	/* Without acks PT stops at the window, with bytes still waiting. */
	assert_int_equal(W.ex->pt[0].nwin, EXPORT_WINDOW);
	assert_int_equal(W.ex->pt[0].next, EXPORT_WINDOW * TVP_PT_MAX_PAYLOAD);
	assert_true(byte_ring_head(&W.pt[0]) > W.ex->pt[0].next);
	/* An ack opens the window again: new bytes follow from where they stopped. */
	W.ncap = 0;
	assert_int_equal(ack_pt(0, 10 * TVP_PT_MAX_PAYLOAD, 10 * TVP_PT_MAX_PAYLOAD, NULL, 0, 11), 0);
	produce_pt(0, 8000);
	export_poll(W.ex, 12);
	npt = cap_pts(0, m, CAP_MAX);
	assert_int_equal(npt, 10);
	assert_int_equal(m[0].u.pt.p.offset, EXPORT_WINDOW * TVP_PT_MAX_PAYLOAD);
	world_free();
}

/* Argument checks, and ACKs for PT streams that are not there. */
static void test_pt_attach_edges(void **state)
{
	struct byte_ring bad = { 0 };

	(void)state;
	world_init(1u << 0, 0, true, 6);
	assert_int_equal(export_attach_pt(NULL, 1, &W.pt[1]), PROTO_ERR_INVAL);
	assert_int_equal(export_attach_pt(W.ex, NCPU, &W.pt[1]), PROTO_ERR_INVAL);
	assert_int_equal(export_attach_pt(W.ex, 0, &W.pt[1]), PROTO_ERR_INVAL);   /* twice */
	assert_int_equal(export_attach_pt(W.ex, 1, &bad), PROTO_ERR_INVAL);
	assert_int_equal(export_attach_pt(W.ex, 1, NULL), PROTO_ERR_INVAL);
	/* PT flags: RETRANSMIT and FIRST only (bit 0, DATA's BASE, is refused). */
	{
		uint8_t d[TVP_MAX_DATAGRAM];
		struct proto_msg m;
		int n;

		assert_int_equal(proto_encode_pt_flags(d, sizeof(d), SESSION, 1, 1, 0, "x", 1),
				 PROTO_ERR_INVAL);
		n = proto_encode_pt_flags(d, sizeof(d), SESSION, 1, TVP_PT_F_KNOWN, 9, "x", 1);
		assert_true(n > 0);
		assert_int_equal(proto_decode(d, (size_t)n, &m), 0);
		assert_int_equal(m.flags, TVP_PT_F_RETRANSMIT | TVP_PT_F_FIRST);
		d[18] |= 1;
		d[20] = d[21] = d[22] = d[23] = 0;
		{
			uint32_t crc = proto_crc32(0, d, (size_t)n);

			for (int i = 0; i < 4; i++)
				d[20 + i] = (uint8_t)(crc >> (8 * i));
		}
		assert_int_equal(proto_decode(d, (size_t)n, &m), PROTO_ERR_FLAGS);
	}
	/* CPU 1 has no PT stream: its ACK is ignored, counted. */
	assert_int_equal(ack_pt(1, 0, 0, NULL, 0, 1), PROTO_ERR_STREAM);
	assert_int_equal(W.ex->st.ignored, 1);
	world_free();
}

/* --- the receiver alone ----------------------------------------------------------------- */

/* Out-of-order bytes are held and delivered once, in order; duplicates counted. */
static void test_pt_receiver_order_and_dups(void **state)
{
	uint8_t b0[TVP_MAX_DATAGRAM], b1[TVP_MAX_DATAGRAM], b2[TVP_MAX_DATAGRAM];
	uint8_t b3[TVP_MAX_DATAGRAM];
	const struct recv_session *s;
	struct proto_msg m;
	int n0, n1, n2, n3;

	(void)state;
	world_init(0, 100, false, 7);
	n0 = mk_pt(b0, 1, 100, 1000, TVP_PT_F_FIRST);
	n1 = mk_pt(b1, 1, 1100, 1412, 0);
	n2 = mk_pt(b2, 1, 2512, 500, 0);
	n3 = mk_pt(b3, 1, 3012, 88, 0);
	/* 0 (FIRST) in order: delivered and acked. */
	assert_int_equal(feed(b0, n0), 0);
	assert_int_equal(W.pt_delivered[1], 1000);
	last_ack(PT_STREAM(1), &m);
	assert_int_equal(m.u.ack.a.cum, 1100);
	assert_int_equal(m.u.ack.a.highest, 1100);
	assert_int_equal(m.u.ack.a.nranges, 0);
	/* 3, then 2: held; the ACK names the missing bytes. */
	assert_int_equal(feed(b3, n3), 0);
	assert_int_equal(feed(b2, n2), 0);
	assert_int_equal(W.pt_delivered[1], 1000);
	last_ack(PT_STREAM(1), &m);
	assert_int_equal(m.u.ack.a.cum, 1100);
	assert_int_equal(m.u.ack.a.highest, 3100);
	assert_int_equal(m.u.ack.a.nranges, 1);
	assert_int_equal(m.u.ack.ranges[0].first, 1100);
	assert_int_equal(m.u.ack.ranges[0].end, 2512);
	/* A held one again: a duplicate, still held once. */
	assert_int_equal(feed(b2, n2), 0);
	s = recv_session_get(W.rx, SESSION);
	assert_int_equal(s->pt[1].dups, 1);
	/* 1 fills the gap: 1, 2, 3 delivered in order. */
	assert_int_equal(feed(b1, n1), 0);
	assert_int_equal(W.pt_delivered[1], 3000);
	assert_int_equal(W.pt_next[1], 3100);
	last_ack(PT_STREAM(1), &m);
	assert_int_equal(m.u.ack.a.cum, 3100);
	assert_int_equal(m.u.ack.a.highest, 3100);
	/* Delivered ones again (a lost ACK): dropped, counted, acked again. */
	W.n = 0;
	assert_int_equal(feed(b0, n0), 0);
	assert_int_equal(feed(b3, n3), 0);
	assert_int_equal(W.n, 2);
	assert_int_equal(W.pt_delivered[1], 3000);
	assert_int_equal(s->pt[1].dups, 3);
	assert_int_equal(s->pt[1].records, 3000);
	assert_int_equal(s->pt_bytes, 3000);
	/* A datagram overlapping what was delivered gives only its new bytes. */
	n0 = mk_pt(b0, 1, 3000, 300, TVP_PT_F_RETRANSMIT);
	assert_int_equal(feed(b0, n0), 0);
	assert_int_equal(W.pt_next[1], 3300);
	assert_int_equal(W.pt_delivered[1], 3200);
	/* The record stream of the same CPU is a different stream. */
	assert_int_equal(s->s[1].dups, 0);
	assert_false(s->s[1].known);
	world_free();
}

/* Before its FIRST nothing of a PT stream is delivered or acked; then all of it. */
static void test_pt_receiver_first_missing(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	struct proto_msg m;

	(void)state;
	world_init(0, 0, false, 8);
	for (unsigned i = 1; i < 4; i++)
		assert_int_equal(feed(b, mk_pt(b, 0, i * 1000ull, 1000, 0)), 0);
	assert_int_equal(W.pt_delivered[0], 0);
	assert_int_equal(W.n, 0);                         /* no ACK at all */
	assert_int_equal(feed(b, mk_pt(b, 0, 0, 1000, TVP_PT_F_FIRST | TVP_PT_F_RETRANSMIT)), 0);
	assert_int_equal(W.pt_delivered[0], 4000);
	assert_int_equal(W.n, 1);
	last_ack(PT_STREAM(0), &m);
	assert_int_equal(m.u.ack.a.cum, 4000);
	/* A gap left at close is missing, not delivered, and the rest still comes. */
	assert_int_equal(feed(b, mk_pt(b, 0, 5000, 1000, 0)), 0);
	assert_int_equal(recv_close(W.rx, SESSION), 0);
	assert_int_equal(W.pt_missing[0], 1000);
	assert_int_equal(W.pt_delivered[0], 5000);
	assert_int_equal(W.pt_next[0], 6000);
	world_free();
}

/* --- back to back ---------------------------------------------------------------------- */

static void step(void)
{
	W.now++;
	for (unsigned i = 0; i < W.n;) {
		struct pkt p;

		if (W.q[i].due > W.now) {
			i++;
			continue;
		}
		p = W.q[i];
		W.q[i] = W.q[--W.n];
		if (p.to_recv)
			assert_int_equal(recv_feed(W.rx, p.b, p.len, ADDR_TV), 0);
		else
			(void)export_input(W.ex, p.b, p.len, W.now);
	}
	assert_true(export_poll(W.ex, W.now) >= 0);
}

static bool pt_all_acked(uint64_t total)
{
	for (unsigned c = 0; c < NCPU; c++)
		if (W.ex->pt[c].acked != total || W.ex->s[c].acked != W.ring[c]->next_seq)
			return false;
	return true;
}

/*
 * Both CPUs produce records and total PT bytes (drains of random size
 * that must wait for room) over a link with drop% loss, duplicates and
 * reordering; everything arrives once and in order, and at the end each
 * ring's tail is exactly where the acks are.
 */
static void lossy_pt(unsigned drop, unsigned first_lost, uint64_t start, uint64_t seed)
{
	const uint64_t total = 300000;
	uint64_t records[NCPU] = { 0 };
	unsigned steps = 0;

	world_init((1u << NCPU) - 1, start, false, seed);
	W.drop = drop;
	W.dup = drop ? 5 : 0;
	W.max_delay = drop ? 30 : 0;
	W.drop_first_pt = first_lost;
	for (;;) {
		bool producing = false;

		for (unsigned c = 0; c < NCPU; c++) {
			uint64_t made = W.pt[c].head - start;

			if (made < total) {
				size_t want = 1 + (size_t)(rnd() % 6000);

				if (want > total - made)
					want = (size_t)(total - made);
				produce_pt(c, want);
				producing = true;
			}
			/* Records only where they fit: a STOP ring must not drop here. */
			if (records[c] < 2000 &&
			    W.ring[c]->data_size - (W.ring[c]->head - (W.ring[c]->tail & ~1ull)) >= 64) {
				assert_int_equal(trace_append_marker(W.ring[c], 1, records[c], NULL, 0), 0);
				records[c]++;
			}
			producing |= records[c] < 2000;
			/* The exporter is the ring's only consumer: never past the acks. */
			assert_false(tvp_seq_before(W.ex->pt[c].acked, byte_ring_tail(&W.pt[c])));
		}
		step();
		if (!producing && W.n == 0 && pt_all_acked(start + total))
			break;
		assert_true(++steps < 200000);
	}
	for (unsigned c = 0; c < NCPU; c++) {
		const struct recv_session *s = recv_session_get(W.rx, SESSION);

		assert_int_equal(W.pt_delivered[c], total);
		assert_int_equal(W.pt_next[c], start + total);
		assert_int_equal(s->pt[c].records, total);
		assert_int_equal(s->pt[c].start, start);
		assert_int_equal(byte_ring_tail(&W.pt[c]), start + total);
		assert_int_equal(W.rec_delivered[c], 2000);
		assert_int_equal(W.ex->pt[c].c.sent, total);
		if (drop)
			assert_true(W.ex->pt[c].c.retransmitted > 0);
	}
	if (drop)
		assert_true(recv_session_get(W.rx, SESSION)->dups > 0);
	assert_int_equal(W.drop_first_pt, 0);
	assert_int_equal(W.ex->st.pt_gone, 0);
	assert_int_equal(W.rx->st.malformed, 0);
	world_free();
}

static void test_pt_clean_link(void **state)
{
	(void)state;
	lossy_pt(0, 0, 0, 11);
}

static void test_pt_drop10(void **state)
{
	(void)state;
	lossy_pt(10, 0, 0, 12);
}

static void test_pt_drop30(void **state)
{
	(void)state;
	lossy_pt(30, 0, 1ull << 40, 13);
}

/* The first PT datagram of both streams lost (twice for one): the timeout brings it. */
static void test_pt_first_lost(void **state)
{
	(void)state;
	lossy_pt(0, 3, 77, 14);
}

/* A stream that wraps around 2^64 on its way. */
static void test_pt_wrap(void **state)
{
	(void)state;
	lossy_pt(5, 0, UINT64_MAX - 100000, 15);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pt_sent_in_order),
		cmocka_unit_test(test_pt_tail_only_by_acks),
		cmocka_unit_test(test_pt_resend_on_nack),
		cmocka_unit_test(test_pt_resend_on_timeout),
		cmocka_unit_test(test_pt_window_and_budget),
		cmocka_unit_test(test_pt_attach_edges),
		cmocka_unit_test(test_pt_receiver_order_and_dups),
		cmocka_unit_test(test_pt_receiver_first_missing),
		cmocka_unit_test(test_pt_clean_link),
		cmocka_unit_test(test_pt_drop10),
		cmocka_unit_test(test_pt_drop30),
		cmocka_unit_test(test_pt_first_lost),
		cmocka_unit_test(test_pt_wrap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
