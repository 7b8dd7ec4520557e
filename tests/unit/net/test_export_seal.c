/* SPDX-License-Identifier: MIT */
/*
 * test_export_seal.c - the exporter's authenticated data path
 * (docs/PROTOCOL.md, "With a key"; net/export.c with a data key): without
 * a key every datagram is the version-1 datagram byte for byte; with one
 * the HELLO carries nonce_m and a tag under Kh, nothing but HELLO leaves
 * until a HELLO_ACK verifies under Ks, then every datagram carries an
 * increasing packet number and a tag under Ks and fits 1452 bytes; back
 * to back with net/recv.c behind a sealing shim (what `tracevisor record
 * --auth` does around it) every record and PT byte arrives once, in
 * order; replayed, forged, unsealed and wrong-key datagrams from the
 * receiver's side change nothing and are counted, in the HEARTBEAT too;
 * CONTROL sealed under Ks, or unsealed with its own HMAC, is applied.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/dauth.h"
#include "net/export.h"
#include "net/proto.h"
#include "net/recv.h"
#include "vmm/lib/byte_ring.h"
#include "vmm/trace/format.h"
#include "vmm/trace/ring.h"

#define NCPU      2u
#define HZ        1000u           /* 1 tick = 1 ms */
#define SESSION   0x5ea1ed0012345678ull
#define ADDR_TV   0x0a000002u
#define RING_DATA (512u * 1024u)
#define PT_RING   (16u * 1024u)
#define PT_BYTES  50000u
#define QMAX      8192u

static const char CTL_KEY[] = "control-key-0123";
static const uint8_t DATA_KEY[32] = "data-key-of-the-sealed-path-0001";
static const uint8_t NONCE_M[DAUTH_NONCE_LEN] = "machine-nonce-01";
static const uint8_t NONCE_R[DAUTH_NONCE_LEN] = "receiver-nonce-1";

struct pkt {
	size_t len;
	uint8_t b[TVP_MAX_DATAGRAM + 64];
};

static struct world {
	uint64_t *ring_mem[NCPU];
	struct tv_trace_ring *ring[NCPU];
	struct byte_ring pt;
	uint8_t pt_mem[PT_RING];
	uint64_t pt_produced, pt_got;
	struct exporter *ex;
	struct receiver *rx;
	/* the sealing shim on the receiver's side */
	bool shim_on, have_ks;
	uint8_t ks[SIPHASH_KEY_LEN];
	uint64_t rx_pn;               /* last packet number the shim sent */
	struct dauth_window win;      /* the machine's packet numbers */
	uint64_t shim_bad;            /* the machine's datagrams the shim refused */
	uint64_t last_pn;             /* the machine's last packet number */
	uint64_t full_pt, full_data;  /* sealed PT / DATA datagrams of the largest size */
	/* the link: both directions, synchronous */
	struct pkt *fwd, *back;
	unsigned nfwd, nback;
	struct pkt last_back[16];     /* the receiver's recent datagrams, for replays */
	unsigned nlast;
	uint64_t sent, hellos_sent, delivered[NCPU], next[NCPU];
	unsigned heartbeats, replies, markers;
	struct tvp_heartbeat hb;
	struct tvp_control_reply reply;
} W;

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void put64(uint8_t *p, uint64_t v)
{
	for (unsigned i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The machine's datagrams: checked on the wire, queued for the receiver. */
static int tv_send(void *ctx, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	(void)ctx;
	assert_true(len <= TVP_MAX_DATAGRAM);
	assert_true(W.nfwd < QMAX);
	W.sent++;
	if (p[5] == TVP_HELLO)
		W.hellos_sent++;
	if (W.shim_on) {
		/* The header's length is the inner datagram; the trailer follows. */
		size_t hl = get16(p + 6);
		uint64_t pn;

		assert_int_equal(len, hl + DAUTH_TRAILER_LEN + (p[5] == TVP_HELLO ? DAUTH_NONCE_LEN : 0));
		pn = get64(p + len - DAUTH_TRAILER_LEN);
		if (p[5] == TVP_PT && hl == 24 + 16 + EXPORT_SEALED_PT_MAX)
			W.full_pt++;
		if (p[5] == TVP_DATA && hl > 24 + 24 + EXPORT_SEALED_DATA_MAX - 200)
			W.full_data++;
		assert_true(pn > W.last_pn);   /* strictly increasing, from 1 */
		W.last_pn = pn;
	} else {
		assert_int_equal(len, get16(p + 6));
	}
	W.fwd[W.nfwd].len = len;
	memcpy(W.fwd[W.nfwd].b, buf, len);
	W.nfwd++;
	return 0;
}

/* recv.c's replies: sealed by the shim (a HELLO_ACK with nonce_r), queued back. */
static int rx_send(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	struct pkt *q;

	(void)ctx;
	assert_int_equal(addr, ADDR_TV);
	assert_true(W.nback < QMAX);
	q = &W.back[W.nback++];
	memcpy(q->b, buf, len);
	q->len = len;
	if (W.shim_on) {
		int n;

		assert_true(W.have_ks);
		if (q->b[5] == TVP_HELLO_ACK) {
			memcpy(q->b + len, NONCE_R, DAUTH_NONCE_LEN);
			q->len += DAUTH_NONCE_LEN;
		}
		n = dauth_seal(q->b, q->len, sizeof(q->b), W.ks, ++W.rx_pn);
		assert_true(n > 0);
		q->len = (size_t)n;
	}
	W.last_back[W.nlast++ % 16] = *q;
	return 0;
}

/* The receiver's side of the shim: what record --auth checks before recv.c. */
static void shim_feed(const uint8_t *p, size_t len)
{
	size_t hl = get16(p + 6);

	if (!W.shim_on) {
		assert_int_equal(recv_feed(W.rx, p, len, ADDR_TV), 0);
		return;
	}
	if (p[5] == TVP_HELLO) {
		static const uint8_t zero[DAUTH_NONCE_LEN];
		uint8_t kh[SIPHASH_KEY_LEN];
		struct dauth_window w;

		memset(&w, 0, sizeof(w));
		assert_memory_equal(p + hl, NONCE_M, DAUTH_NONCE_LEN);
		dauth_derive(DATA_KEY, sizeof(DATA_KEY), SESSION, p + hl, zero, kh);
		assert_true(dauth_open(p, len, kh, &w, NULL) == (int)(hl + DAUTH_NONCE_LEN));
		if (!W.have_ks) {
			dauth_derive(DATA_KEY, sizeof(DATA_KEY), SESSION, p + hl, NONCE_R, W.ks);
			W.have_ks = true;
		}
	} else if (dauth_open(p, len, W.ks, &W.win, NULL) != (int)hl) {
		W.shim_bad++;
		return;
	}
	assert_int_equal(recv_feed(W.rx, p, hl, ADDR_TV), 0);
}

static void on_records(void *ctx, uint64_t session, uint32_t cpu, uint64_t first_seq,
		       const uint8_t *rec, size_t len, uint32_t count, bool has_base,
		       uint64_t base_to)
{
	(void)ctx;
	(void)rec;
	(void)has_base;
	(void)base_to;
	assert_int_equal(session, SESSION);
	assert_true(cpu < NCPU);
	assert_int_equal(first_seq, W.next[cpu]);
	assert_true(len <= (W.shim_on ? EXPORT_SEALED_DATA_MAX : TVP_DATA_MAX_RECORDS));
	W.next[cpu] += count;
	W.delivered[cpu] += count;
}

static void on_pt(void *ctx, uint64_t session, uint32_t cpu, uint64_t offset,
		  const uint8_t *bytes, size_t len)
{
	(void)ctx;
	(void)session;
	assert_int_equal(cpu, 0);
	assert_int_equal(offset, W.pt_got);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(bytes[i], (uint8_t)((offset + i) * 7));
	W.pt_got += len;
}

static void on_heartbeat(void *ctx, uint64_t session, const struct tvp_heartbeat *h,
			 const struct tvp_hb_cpu *cpus)
{
	(void)ctx;
	(void)session;
	(void)cpus;
	W.hb = *h;
	W.heartbeats++;
}

static void on_reply(void *ctx, uint64_t session, const struct tvp_control_reply *r)
{
	(void)ctx;
	(void)session;
	W.reply = *r;
	W.replies++;
}

static const struct recv_ops RX_OPS = {
	.records = on_records, .pt = on_pt, .heartbeat = on_heartbeat, .reply = on_reply,
	.send = rx_send,
};

static int op_marker(void *ctx, const struct tvp_ctl_marker *m, const char *label)
{
	(void)ctx;
	(void)m;
	(void)label;
	W.markers++;
	return 0;
}

static const struct export_ops EX_OPS = { .marker = op_marker };

static void world_init(bool sealed)
{
	struct export_config cfg;

	memset(&W, 0, sizeof(W));
	W.fwd = calloc(QMAX, sizeof(*W.fwd));
	W.back = calloc(QMAX, sizeof(*W.back));
	W.ex = calloc(1, sizeof(*W.ex));
	W.rx = calloc(1, sizeof(*W.rx));
	assert_non_null(W.fwd);
	assert_non_null(W.back);
	assert_non_null(W.ex);
	assert_non_null(W.rx);
	for (unsigned c = 0; c < NCPU; c++) {
		size_t bytes = sizeof(struct tv_trace_ring) + RING_DATA;

		W.ring_mem[c] = calloc(1, bytes);
		W.ring[c] = (struct tv_trace_ring *)W.ring_mem[c];
		assert_int_equal(trace_ring_init(W.ring[c], bytes, c, c, TV_SOURCE_MTF,
						 TV_OVERFLOW_STOP, HZ, 0), 0);
	}
	assert_int_equal(byte_ring_init(&W.pt, W.pt_mem, PT_RING), 0);
	memset(&cfg, 0, sizeof(cfg));
	cfg.session = SESSION;
	cfg.tsc_hz = HZ;
	cfg.key = CTL_KEY;
	cfg.keylen = strlen(CTL_KEY);
	cfg.send = tv_send;
	cfg.ops = &EX_OPS;
	cfg.hello.source = TV_SOURCE_MTF;
	cfg.hello.tsc_hz = HZ;
	strcpy(cfg.hello.machine, "sealbox");
	if (sealed) {
		cfg.data_key = DATA_KEY;
		cfg.data_keylen = sizeof(DATA_KEY);
		memcpy(cfg.nonce_m, NONCE_M, DAUTH_NONCE_LEN);
	}
	W.shim_on = sealed;
	assert_int_equal(export_init(W.ex, &cfg, NCPU, 0), 0);
	for (unsigned c = 0; c < NCPU; c++)
		assert_int_equal(export_attach(W.ex, c, W.ring[c]), 0);
	assert_int_equal(export_attach_pt(W.ex, 0, &W.pt), 0);
	recv_init(W.rx, &RX_OPS, NULL, 1000);
}

static void world_free(void)
{
	for (unsigned c = 0; c < NCPU; c++)
		free(W.ring_mem[c]);
	free(W.fwd);
	free(W.back);
	free(W.ex);
	free(W.rx);
}

/* n records on each CPU, markers of varied length (so datagrams fill up). */
static void produce(unsigned n)
{
	for (unsigned c = 0; c < NCPU; c++)
		for (unsigned i = 0; i < n; i++) {
			char label[200];
			uint64_t seq = W.ring[c]->next_seq;

			memset(label, 'a' + (int)(seq % 26), sizeof(label));
			assert_int_equal(trace_append_marker(W.ring[c], 1, seq, label,
							     (size_t)(seq * 37 % sizeof(label))), 0);
		}
}

static void produce_pt(void)
{
	while (W.pt_produced < PT_BYTES) {
		uint8_t b = (uint8_t)(W.pt_produced * 7);

		if (byte_ring_write(&W.pt, &b, 1) != 1)
			break;
		W.pt_produced++;
	}
}

/* One tick: the machine polls, the receiver takes everything, the machine takes the replies. */
static void step(uint64_t now)
{
	unsigned nf, nb;

	produce_pt();
	assert_true(export_poll(W.ex, now) >= 0);
	nf = W.nfwd;
	W.nfwd = 0;
	for (unsigned i = 0; i < nf; i++)
		shim_feed(W.fwd[i].b, W.fwd[i].len);
	nb = W.nback;
	W.nback = 0;
	for (unsigned i = 0; i < nb; i++)
		(void)export_input(W.ex, W.back[i].b, W.back[i].len, now);
}

static bool all_acked(void)
{
	for (unsigned c = 0; c < NCPU; c++)
		if (W.ex->s[c].acked != W.ring[c]->next_seq)
			return false;
	return W.pt_produced == PT_BYTES && W.ex->pt[0].acked == PT_BYTES;
}

/* --- tests --------------------------------------------------------------------------- */

/* Without a data key: the version-1 datagrams exactly as proto.c encodes them. */
static void test_unsealed_is_version_1(void **state)
{
	uint8_t want[TVP_MAX_DATAGRAM];
	struct tvp_hello h;
	int n;

	(void)state;
	world_init(false);
	assert_false(W.ex->seal.on);
	assert_int_equal(W.ex->seal.data_max, TVP_DATA_MAX_RECORDS);
	assert_int_equal(W.ex->seal.pt_max, TVP_PT_MAX_PAYLOAD);
	produce(400);
	assert_true(export_poll(W.ex, 0) > 1);   /* HELLO and data at once */
	h = W.ex->cfg.hello;
	h.hello_seq = 0;
	n = proto_encode_hello(want, sizeof(want), SESSION, &h);
	assert_int_equal(n, 184);
	assert_int_equal(W.fwd[0].len, 184);
	assert_memory_equal(W.fwd[0].b, want, 184);
	assert_int_equal(W.fwd[0].b[4], TVP_VERSION);
	assert_true(W.nfwd > 2);
	assert_int_equal(W.fwd[1].b[5], TVP_DATA);
	/* Full DATA as before: 1400 bytes of records fit. */
	for (unsigned t = 1; t < 200 && !all_acked(); t++)
		step(t);
	assert_true(all_acked());
	assert_int_equal(W.delivered[0], 400);
	assert_int_equal(W.pt_got, PT_BYTES);
	world_free();
}

/* Sealed: HELLO only until a HELLO_ACK verifies; wrong keys, no trailer, early ACKs refused. */
static void test_handshake(void **state)
{
	static const uint8_t zero[DAUTH_NONCE_LEN];
	uint8_t kh[SIPHASH_KEY_LEN], bad_ks[SIPHASH_KEY_LEN], b[TVP_MAX_DATAGRAM + 64];
	struct dauth_window w;
	struct proto_msg m;
	struct tvp_ack ack = { 0 };
	uint8_t other[32];
	int n;

	(void)state;
	world_init(true);
	produce(50);
	assert_int_equal(export_poll(W.ex, 0), 1);
	assert_int_equal(W.nfwd, 1);
	/* The HELLO: the version-1 HELLO, nonce_m, pn 1, the tag under Kh. */
	assert_int_equal(W.fwd[0].len, 184 + DAUTH_NONCE_LEN + DAUTH_TRAILER_LEN);
	assert_int_equal(proto_decode(W.fwd[0].b, 184, &m), 0);
	assert_int_equal(m.type, TVP_HELLO);
	assert_memory_equal(W.fwd[0].b + 184, NONCE_M, DAUTH_NONCE_LEN);
	assert_int_equal(get64(W.fwd[0].b + 200), 1);
	dauth_derive(DATA_KEY, sizeof(DATA_KEY), SESSION, NONCE_M, zero, kh);
	memset(&w, 0, sizeof(w));
	assert_int_equal(dauth_open(W.fwd[0].b, W.fwd[0].len, kh, &w, NULL), 184 + DAUTH_NONCE_LEN);
	memset(other, 7, sizeof(other));
	dauth_derive(other, sizeof(other), SESSION, NONCE_M, zero, kh);
	memset(&w, 0, sizeof(w));
	assert_int_equal(dauth_open(W.fwd[0].b, W.fwd[0].len, kh, &w, NULL), DAUTH_ERR_TAG);

	/* Ten seconds without an answer: HELLOs only, no DATA, no HEARTBEAT. */
	W.nfwd = 0;
	for (uint64_t t = 1; t <= 10 * HZ; t++)
		assert_true(export_poll(W.ex, t) >= 0);
	assert_int_equal(W.nfwd, 10);
	for (unsigned i = 0; i < W.nfwd; i++)
		assert_int_equal(W.fwd[i].b[5], TVP_HELLO);

	/* An ACK before the handshake: no key to check it with. */
	n = proto_encode_ack(b, sizeof(b), SESSION, 0, &ack, NULL);
	assert_true(n > 0);
	assert_int_equal(export_input(W.ex, b, (size_t)n, 10 * HZ), PROTO_ERR_LENGTH);
	assert_int_equal(W.ex->st.auth_unsealed, 1);
	n = dauth_seal(b, (size_t)n, sizeof(b), zero, 1);
	assert_int_equal(export_input(W.ex, b, (size_t)n, 10 * HZ), PROTO_ERR_AUTH);
	assert_int_equal(W.ex->st.auth_bad_tag, 1);
	/* A HELLO_ACK under a key derived from another pre-shared key. */
	n = proto_encode_hello_ack(b, sizeof(b), SESSION, 0);
	assert_int_equal(n, 32);
	memcpy(b + n, NONCE_R, DAUTH_NONCE_LEN);
	dauth_derive(other, sizeof(other), SESSION, NONCE_M, NONCE_R, bad_ks);
	n = dauth_seal(b, 32 + DAUTH_NONCE_LEN, sizeof(b), bad_ks, 1);
	assert_int_equal(export_input(W.ex, b, (size_t)n, 10 * HZ), PROTO_ERR_AUTH);
	/* ... and an unsealed one. */
	assert_int_equal(export_input(W.ex, b, 32, 10 * HZ), PROTO_ERR_LENGTH);
	assert_false(W.ex->seal.verified);
	assert_false(W.ex->hello_acked);
	assert_int_equal(W.ex->st.ctl_bad_auth, 2);
	assert_int_equal(W.ex->st.ctl_malformed, 2);
	W.nfwd = 0;
	assert_int_equal(export_poll(W.ex, 10 * HZ + 1), 0);
	assert_int_equal(W.nfwd, 0);

	/* The receiver's HELLO_ACK: verified, Ks derived, data flows sealed. */
	step(11 * HZ);   /* a HELLO goes, the shim answers */
	step(11 * HZ);
	step(11 * HZ + 1);
	assert_true(W.ex->seal.verified);
	assert_true(W.ex->hello_acked);
	assert_memory_equal(W.ex->seal.ks, W.ks, SIPHASH_KEY_LEN);
	assert_memory_equal(W.ex->seal.nonce_r, NONCE_R, DAUTH_NONCE_LEN);
	for (uint64_t t = 11 * HZ + 2; t < 13 * HZ && !all_acked(); t++)
		step(t);
	assert_true(all_acked());
	assert_int_equal(W.delivered[0], 50);
	assert_int_equal(W.delivered[1], 50);
	assert_int_equal(W.shim_bad, 0);
	world_free();
}

/*
 * Back to back through the shim: everything arrives; then the receiver's
 * datagrams replayed, forged (a byte changed, the CRC made right again:
 * only the tag can tell), unsealed and under the wrong key change nothing
 * and are counted, in the HEARTBEAT too.
 */
static void test_sealed_stream_and_forgeries(void **state)
{
	struct pkt q;
	struct proto_msg m;
	uint64_t t = 0, acked[NCPU], sent;
	uint32_t crc;
	size_t hl;

	(void)state;
	world_init(true);
	produce(2000);
	for (t = 0; t < 20 * HZ && !all_acked(); t++)
		step(t);
	assert_true(all_acked());
	assert_int_equal(W.delivered[0], 2000);
	assert_int_equal(W.delivered[1], 2000);
	assert_int_equal(W.pt_got, PT_BYTES);
	assert_int_equal(W.shim_bad, 0);
	/* Sealed datagrams carry 16 bytes less payload, so there were full ones of that size. */
	assert_int_equal(W.ex->seal.data_max, EXPORT_SEALED_DATA_MAX);
	assert_int_equal(W.ex->seal.pt_max, EXPORT_SEALED_PT_MAX);
	assert_int_equal(W.ex->st.auth_bad_tag + W.ex->st.auth_replay + W.ex->st.auth_unsealed, 0);
	assert_true(W.full_pt > 10);
	assert_true(W.full_data > 10);

	/* Replays: every recent datagram of the receiver again. */
	for (unsigned c = 0; c < NCPU; c++)
		acked[c] = W.ex->s[c].acked;
	sent = W.sent;
	for (unsigned i = 0; i < 16 && i < W.nlast; i++) {
		q = W.last_back[i];
		assert_int_equal(export_input(W.ex, q.b, q.len, t), PROTO_ERR_REPLAY);
	}
	assert_int_equal(W.ex->st.auth_replay, 16);
	assert_int_equal(W.ex->st.ctl_replay, 16);

	/* A forged ACK: the last one with cum moved back, CRC right, tag as it was. */
	q = W.last_back[(W.nlast - 1) % 16];
	assert_int_equal(q.b[5], TVP_ACK);
	hl = get16(q.b + 6);
	q.b[24] ^= 0x40;
	memset(q.b + 20, 0, 4);
	crc = proto_crc32(0, q.b, hl);
	memcpy(q.b + 20, &crc, 4);
	assert_int_equal(proto_decode(q.b, hl, &m), 0);
	/* Its packet number moved on too: no replay, only the tag can tell. */
	put64(q.b + hl, W.rx_pn + 1);
	assert_int_equal(export_input(W.ex, q.b, q.len, t), PROTO_ERR_AUTH);
	/* The same, unsealed: a valid version-1 ACK. */
	assert_int_equal(export_input(W.ex, q.b, hl, t), PROTO_ERR_LENGTH);
	/* Truncated: shorter than a header. */
	assert_int_equal(export_input(W.ex, q.b, 10, t), PROTO_ERR_LENGTH);
	assert_int_equal(W.ex->st.auth_bad_tag, 1);
	assert_int_equal(W.ex->st.auth_unsealed, 2);
	for (unsigned c = 0; c < NCPU; c++)
		assert_int_equal(W.ex->s[c].acked, acked[c]);
	assert_int_equal(W.sent, sent);   /* nothing answered, nothing resent */

	/* The next HEARTBEAT says so (its counters, no new layout). */
	W.heartbeats = 0;
	for (uint64_t end = t + 2 * HZ; t < end; t++)
		step(t);
	assert_true(W.heartbeats >= 1);
	assert_int_equal(W.hb.ctl_bad_auth, 1);
	assert_int_equal(W.hb.ctl_replay, 16);
	assert_int_equal(W.hb.ctl_malformed, 2);
	assert_int_equal(W.shim_bad, 0);
	world_free();
}

/* CONTROL: sealed under Ks (record --start) or unsealed with its HMAC (tracevisor control). */
static void test_sealed_control(void **state)
{
	struct tvp_ctl_marker mk = { .value = 1, .cpu = 0, .label_len = 0 };
	uint8_t c[TVP_MAX_DATAGRAM];
	uint8_t b[TVP_MAX_DATAGRAM + 64];
	uint64_t t;
	int n;

	(void)state;
	world_init(true);
	produce(10);
	for (t = 0; t < 5 * HZ && !all_acked(); t++)
		step(t);
	assert_true(all_acked());
	/* Sealed by the shim, from recv_control: applied and answered (sealed). */
	n = recv_control(W.rx, SESSION, TVP_CTL_MARKER, &mk, sizeof(mk), CTL_KEY, strlen(CTL_KEY),
			 c, sizeof(c));
	assert_true(n > 0);
	W.nback = 0;
	rx_send(NULL, ADDR_TV, c, (size_t)n);   /* the shim seals it */
	assert_int_equal(W.back[0].len, (size_t)n + DAUTH_TRAILER_LEN);
	memcpy(b, W.back[0].b, W.back[0].len);
	assert_int_equal(export_input(W.ex, b, W.back[0].len, t), 0);
	W.nback = 0;
	assert_int_equal(W.markers, 1);
	step(t++);
	assert_int_equal(W.replies, 1);
	assert_int_equal(W.reply.status, 0);
	/* Unsealed, as `tracevisor control` sends it: its own HMAC is the check. */
	n = recv_control(W.rx, SESSION, TVP_CTL_MARKER, &mk, sizeof(mk), CTL_KEY, strlen(CTL_KEY),
			 b, sizeof(b));
	assert_true(n > 0);
	assert_int_equal(export_input(W.ex, b, (size_t)n, t), 0);
	assert_int_equal(W.markers, 2);
	step(t++);
	assert_int_equal(W.replies, 2);
	/* Unsealed with a wrong HMAC key: refused (ctl_bad_auth), not applied. */
	n = recv_control(W.rx, SESSION, TVP_CTL_MARKER, &mk, sizeof(mk), "wrong", 5, b, sizeof(b));
	assert_int_equal(export_input(W.ex, b, (size_t)n, t), PROTO_ERR_AUTH);
	/* Sealed under a wrong session key: refused at the tag, not applied. */
	n = recv_control(W.rx, SESSION, TVP_CTL_MARKER, &mk, sizeof(mk), CTL_KEY, strlen(CTL_KEY),
			 b, sizeof(b));
	{
		uint8_t wrong[SIPHASH_KEY_LEN] = { 1 };

		n = dauth_seal(b, (size_t)n, sizeof(b), wrong, W.rx_pn + 5);
	}
	assert_int_equal(export_input(W.ex, b, (size_t)n, t), PROTO_ERR_AUTH);
	assert_int_equal(W.markers, 2);
	assert_int_equal(W.ex->st.auth_bad_tag, 1);
	assert_int_equal(W.ex->st.ctl_bad_auth, 2);
	world_free();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unsealed_is_version_1),
		cmocka_unit_test(test_handshake),
		cmocka_unit_test(test_sealed_stream_and_forgeries),
		cmocka_unit_test(test_sealed_control),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
