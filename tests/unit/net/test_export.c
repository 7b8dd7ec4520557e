/* SPDX-License-Identifier: MIT */
/*
 * test_export.c - the export protocol's sender (net/export.c) and receiver
 * (net/recv.c) wired back to back through a fake link that drops,
 * duplicates, reorders and delays datagrams (seeded PRNG, simulated TSC):
 * every record arrives exactly once and in order at 0%, 5% and 30% drop;
 * sequence numbers wrapping past 2^64; an OVERWRITE ring that overwrites
 * unacknowledged records reports exactly those as lost; a full window
 * stops reading the ring; HELLO until acknowledged; heartbeats; control
 * messages (applied once, forged, replayed, old counter, other session,
 * malformed: counted, nothing changes); receiver-only cases (data before
 * HELLO, duplicates, missing at close, eviction).
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
#include "vmm/trace/ring.h"

#define NCPU      3u
#define HZ        1000u          /* 1 tick = 1 ms */
#define SESSION   0xc0ffee0012345678ull
#define ADDR_TV   0x0a000002u    /* the traced machine's address token */
#define RING_DATA (16u * 1024u)
static const char KEY[] = "0123456789abcdef0123456789abcdef";

/* --- PRNG ------------------------------------------------------------------------- */

static uint64_t rs;
static uint64_t rnd(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 0x2545f4914f6cdd1dull;
}

/* percent chance */
static bool chance(unsigned pct)
{
	return rnd() % 100 < pct;
}

/* --- the fake link -------------------------------------------------------------------- */

struct pkt {
	uint64_t due;
	int to_recv;                 /* 1: tracevisor -> receiver, 0: back */
	size_t len;
	uint8_t b[TVP_MAX_DATAGRAM];
};

#define LINK_MAX 4096
struct link {
	unsigned drop, dup, max_delay;   /* percent, percent, ticks */
	bool down_fwd, down_back;        /* drop everything in that direction */
	struct pkt *q;
	unsigned n;
	uint64_t now;
	uint64_t sent_fwd, sent_back, dropped;
};

static struct link L;

static void link_put(int to_recv, const void *buf, size_t len)
{
	unsigned copies = 1;

	if (to_recv)
		L.sent_fwd++;
	else
		L.sent_back++;
	if ((to_recv && L.down_fwd) || (!to_recv && L.down_back) || chance(L.drop)) {
		L.dropped++;
		return;
	}
	if (chance(L.dup))
		copies = 2;
	while (copies-- && L.n < LINK_MAX) {
		struct pkt *p = &L.q[L.n++];

		p->due = L.now + (L.max_delay ? rnd() % (L.max_delay + 1) : 0);
		p->to_recv = to_recv;
		p->len = len;
		memcpy(p->b, buf, len);
	}
}

static int tv_send(void *ctx, const void *buf, size_t len)
{
	(void)ctx;
	assert_true(len <= TVP_MAX_DATAGRAM);
	link_put(1, buf, len);
	return 0;
}

/* --- the world: rings, exporter, receiver, what arrived ------------------------------------ */

struct cpu_truth {
	uint64_t start;              /* first sequence number of the stream */
	uint64_t next;               /* next expected at the receiver's output */
	uint64_t delivered, lost, missing;
	uint64_t runs_with_base;
};

static struct world {
	uint64_t *ring_mem[NCPU];
	struct tv_trace_ring *ring[NCPU];
	struct exporter *ex;
	struct receiver *rx;
	struct cpu_truth t[NCPU];
	uint64_t prev_to[NCPU];
	unsigned hellos, heartbeats, replies;
	struct tvp_control_reply last_reply;
	struct tvp_hb_cpu hb[NCPU];
	unsigned ops_start, ops_stop, ops_marker, ops_mem_watch;
	uint64_t marker_value;
	struct tvp_ctl_mem_watch mem_watch;   /* the last MEM_WATCH handed over */
	char mem_label[8];
} W;

static uint64_t to_of(uint64_t seq)
{
	return 0x100000ull + (seq << 4);
}

/* Each record says which sequence number it was given. */
static void check_record(uint32_t cpu, uint64_t seq, const uint8_t *p, uint16_t size)
{
	uint64_t v;

	switch (p[0]) {
	case TV_REC_MARKER:
		memcpy(&v, p + 16, 8);
		assert_int_equal(v, seq);
		break;
	case TV_REC_BRANCH:
		memcpy(&v, p + 16, 8);
		assert_int_equal(v, to_of(seq));
		break;
	case TV_REC_BRANCH_COMPACT:
		memcpy(&v, p + 8, 8);
		assert_int_equal(v, to_of(seq));
		break;
	case TV_REC_CR3:
		memcpy(&v, p + 16, 8);
		assert_int_equal(v, seq);
		break;
	case TV_REC_LOST:
		break;
	default:
		fail_msg("cpu %u seq %llu: unexpected record type %u", cpu,
			 (unsigned long long)seq, p[0]);
	}
	(void)size;
}

static void on_records(void *ctx, uint64_t session, uint32_t cpu, uint64_t first_seq,
		       const uint8_t *rec, size_t len, uint32_t count, bool has_base,
		       uint64_t base_to)
{
	struct cpu_truth *t = &W.t[cpu];
	size_t off = 0;

	(void)ctx;
	assert_int_equal(session, SESSION);
	assert_true(cpu < NCPU);
	/* In order, exactly once: each run continues where the last ended. */
	assert_int_equal(first_seq, t->next);
	for (uint32_t i = 0; i < count; i++) {
		uint16_t size;

		assert_true(off + 8 <= len);
		size = (uint16_t)(rec[off + 2] | rec[off + 3] << 8);
		assert_true(size >= 8 && off + size <= len);
		/* A leading compact branch comes with its base: the previous to. */
		if (i == 0 && rec[off] == TV_REC_BRANCH_COMPACT) {
			assert_true(has_base);
			assert_int_equal(base_to, to_of(first_seq - 1));
		}
		check_record(cpu, first_seq + i, rec + off, size);
		off += size;
	}
	assert_int_equal(off, len);
	if (has_base)
		t->runs_with_base++;
	t->next += count;
	t->delivered += count;
}

static void on_loss(void *ctx, uint64_t session, uint32_t cpu, uint64_t first, uint64_t count)
{
	(void)ctx;
	(void)session;
	assert_int_equal(first, W.t[cpu].next);
	W.t[cpu].next += count;
	W.t[cpu].lost += count;
}

static void on_missing(void *ctx, uint64_t session, uint32_t cpu, uint64_t first,
		       uint64_t count)
{
	(void)ctx;
	(void)session;
	assert_int_equal(first, W.t[cpu].next);
	W.t[cpu].next += count;
	W.t[cpu].missing += count;
}

static void on_hello(void *ctx, uint64_t session, uint64_t addr, const struct tvp_hello *h)
{
	(void)ctx;
	W.hellos++;
	if (session != SESSION)
		return;   /* test_receiver_sessions */
	assert_int_equal(addr, ADDR_TV);
	assert_int_equal(h->cpu_count, NCPU);
	assert_string_equal(h->machine, "testbox");
}

static void on_heartbeat(void *ctx, uint64_t session, const struct tvp_heartbeat *h,
			 const struct tvp_hb_cpu *cpus)
{
	(void)ctx;
	(void)session;
	assert_int_equal(h->first_cpu, 0);
	assert_int_equal(h->ncpus, NCPU);
	memcpy(W.hb, cpus, sizeof(W.hb));
	W.heartbeats++;
}

static void on_reply(void *ctx, uint64_t session, const struct tvp_control_reply *r)
{
	(void)ctx;
	(void)session;
	W.last_reply = *r;
	W.replies++;
}

static int rx_send(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	(void)ctx;
	assert_int_equal(addr, ADDR_TV);
	link_put(0, buf, len);
	return 0;
}

static const struct recv_ops RX_OPS = {
	.records = on_records, .loss = on_loss, .missing = on_missing, .hello = on_hello,
	.heartbeat = on_heartbeat, .reply = on_reply, .send = rx_send,
};

static int op_start(void *ctx, const struct tvp_ctl_cpus *c)
{
	(void)ctx;
	assert_int_equal(c->mask[0], 0x5);
	W.ops_start++;
	return 0;
}

static int op_stop(void *ctx, const struct tvp_ctl_cpus *c)
{
	(void)ctx;
	(void)c;
	W.ops_stop++;
	return -1;   /* refused: the reply says EFAILED */
}

static int op_marker(void *ctx, const struct tvp_ctl_marker *m, const char *label)
{
	(void)ctx;
	assert_int_equal(m->label_len, 4);
	assert_memory_equal(label, "mark", 4);
	W.marker_value = m->value;
	W.ops_marker++;
	return 0;
}

/* Arms and labels what it is given; refuses to remove watch 13. */
static int op_mem_watch(void *ctx, const struct tvp_ctl_mem_watch *w, const char *label)
{
	(void)ctx;
	W.mem_watch = *w;
	memset(W.mem_label, 0, sizeof(W.mem_label));
	memcpy(W.mem_label, label, w->label_len < 7 ? w->label_len : 7);
	W.ops_mem_watch++;
	return w->op == TV_MEMW_REMOVE && w->id == 13 ? -1 : 0;
}

static const struct export_ops EX_OPS = {
	.start = op_start, .stop = op_stop, .marker = op_marker,   /* no filters */
	.mem_watch = op_mem_watch,
};

static void world_init(enum tv_overflow policy, uint64_t start_seq, uint64_t seed)
{
	struct export_config cfg;

	memset(&W, 0, sizeof(W));
	memset(&L, 0, sizeof(L));
	L.q = calloc(LINK_MAX, sizeof(*L.q));
	assert_non_null(L.q);
	rs = seed;
	for (unsigned c = 0; c < NCPU; c++) {
		size_t bytes = sizeof(struct tv_trace_ring) + RING_DATA;

		W.ring_mem[c] = calloc(1, bytes);
		W.ring[c] = (struct tv_trace_ring *)W.ring_mem[c];
		assert_int_equal(trace_ring_init(W.ring[c], bytes, c, c, TV_SOURCE_MTF,
						 policy, HZ, 0), 0);
		W.ring[c]->tail_seq = W.ring[c]->next_seq = start_seq;
		W.t[c].start = W.t[c].next = start_seq;
	}
	W.ex = calloc(1, sizeof(*W.ex));
	W.rx = calloc(1, sizeof(*W.rx));
	assert_non_null(W.ex);
	assert_non_null(W.rx);
	memset(&cfg, 0, sizeof(cfg));
	cfg.session = SESSION;
	cfg.tsc_hz = HZ;
	cfg.key = KEY;
	cfg.keylen = strlen(KEY);
	cfg.send = tv_send;
	cfg.ops = &EX_OPS;
	cfg.hello.source = TV_SOURCE_MTF;
	cfg.hello.overflow = (uint8_t)policy;
	cfg.hello.tsc_hz = HZ;
	strcpy(cfg.hello.machine, "testbox");
	/* These tests pin the first version's transport (test_export_cc.c the new one). */
	cfg.fixed_timers = true;
	assert_int_equal(export_init(W.ex, &cfg, NCPU, 0), 0);
	for (unsigned c = 0; c < NCPU; c++)
		assert_int_equal(export_attach(W.ex, c, W.ring[c]), 0);
	recv_init(W.rx, &RX_OPS, NULL, 1000);
}

static void world_free(void)
{
	for (unsigned c = 0; c < NCPU; c++)
		free(W.ring_mem[c]);
	free(W.ex);
	free(W.rx);
	free(L.q);
}

/* One record on cpu, its content derived from the sequence number it gets. */
static int produce_one(unsigned c)
{
	struct tv_trace_ring *r = W.ring[c];
	/* Under STOP a LOST record owed for earlier drops comes first. */
	uint64_t seq = r->next_seq + (r->pending_lost ? 1 : 0);
	unsigned kind = (unsigned)(rnd() % 8);

	if (kind < 5)   /* branch chains: mostly compact */
		return trace_append_branch(r, W.prev_to[c] + 4, to_of(seq), TV_BR_JMP, 0, 0)
			?: (W.prev_to[c] = to_of(seq), 0);
	W.prev_to[c] = 0;
	if (kind < 7) {
		char label[40];
		size_t n = (size_t)(rnd() % sizeof(label));

		memset(label, 'a' + (int)(seq % 26), n);
		return trace_append_marker(r, 1, seq, label, n);
	}
	return trace_append_cr3(r, 1, seq, 0);
}

/* Room for a record of any kind we write (STOP rings must never drop here). */
static bool has_room(unsigned c)
{
	struct tv_trace_ring *r = W.ring[c];

	return r->data_size - (r->head - (r->tail & ~(uint64_t)1)) >= 128;
}

/* Advance one tick: deliver what is due, then let the exporter run. */
static void step(void)
{
	L.now++;
	for (unsigned i = 0; i < L.n;) {
		if (L.q[i].due > L.now) {
			i++;
			continue;
		}
		/* Copy out first: feeding may queue more. */
		{
			struct pkt p = L.q[i];

			L.q[i] = L.q[--L.n];
			if (p.to_recv)
				assert_true(recv_feed(W.rx, p.b, p.len, ADDR_TV) == 0);
			else
				(void)export_input(W.ex, p.b, p.len, L.now);
		}
	}
	assert_true(export_poll(W.ex, L.now) >= 0);
}

static bool all_acked(void)
{
	for (unsigned c = 0; c < NCPU; c++) {
		const struct export_stream *s = &W.ex->s[c];

		if (s->nwin || s->cur.seq != W.ring[c]->next_seq)
			return false;
	}
	return true;
}

/* Produce n records per CPU while the link runs, then run until all is acked. */
static void run(unsigned n, bool only_with_room)
{
	unsigned made[NCPU] = { 0 };
	unsigned steps = 0;

	for (;;) {
		bool producing = false;

		for (unsigned c = 0; c < NCPU; c++) {
			for (unsigned k = 0; k < 6 && made[c] < n; k++) {
				if (only_with_room && !has_room(c))
					break;
				assert_int_equal(produce_one(c), 0);
				made[c]++;
			}
			producing |= made[c] < n;
		}
		step();
		if (!producing && all_acked() && L.n == 0 && W.ex->hello_acked)
			break;
		assert_true(++steps < 400000);
	}
}

static void check_complete(void)
{
	for (unsigned c = 0; c < NCPU; c++) {
		const struct recv_session *s = recv_session_get(W.rx, SESSION);

		assert_non_null(s);
		assert_int_equal(W.t[c].next, W.ring[c]->next_seq);
		assert_int_equal(W.t[c].delivered + W.t[c].lost, W.ring[c]->next_seq - W.t[c].start);
		assert_int_equal(s->s[c].records, W.t[c].delivered);
		assert_int_equal(s->s[c].lost, W.t[c].lost);
	}
}

/* --- end to end -------------------------------------------------------------------------- */

static void lossy_run(unsigned drop, unsigned dup, uint64_t start, uint64_t seed)
{
	world_init(TV_OVERFLOW_STOP, start, seed);
	L.drop = drop;
	L.dup = dup;
	L.max_delay = 40;
	run(3000, true);
	check_complete();
	for (unsigned c = 0; c < NCPU; c++) {
		assert_int_equal(W.t[c].lost, 0);
		assert_int_equal(W.t[c].delivered, 3000);
		assert_int_equal(W.ex->s[c].c.lost_overwrite, 0);
		assert_true(W.t[c].runs_with_base > 0);
		if (drop)
			assert_true(W.ex->s[c].c.retransmitted > 0);
	}
	assert_int_equal(W.hellos, 1);
	assert_true(W.ex->hello_acked);
	if (dup)
		assert_true(recv_session_get(W.rx, SESSION)->dups > 0);
	assert_int_equal(W.rx->st.malformed, 0);
	world_free();
}

static void test_clean_link(void **state)
{
	(void)state;
	lossy_run(0, 0, 0, 1);
}

static void test_drop5_dup_reorder(void **state)
{
	(void)state;
	lossy_run(5, 5, 0, 2);
}

static void test_drop30_dup_reorder(void **state)
{
	(void)state;
	lossy_run(30, 10, 0, 3);
}

/* Sequence numbers run through 2^64 - 1 and on past 0. */
static void test_wrap_around(void **state)
{
	(void)state;
	lossy_run(10, 5, UINT64_MAX - 1500, 4);
}

/*
 * OVERWRITE: everything acked, then the link goes down while the
 * producer writes more than the ring holds.  Exactly the records the ring
 * overwrote before they were acked are reported lost, nothing else.
 */
static void test_overwrite_loss_is_exact(void **state)
{
	uint64_t a_end[NCPU], tail_b[NCPU];

	(void)state;
	world_init(TV_OVERFLOW_OVERWRITE, 100, 5);
	L.max_delay = 5;
	run(200, false);
	for (unsigned c = 0; c < NCPU; c++)
		a_end[c] = W.ring[c]->next_seq;
	L.down_fwd = true;
	/* Bursts: datagrams of many records, which the tail then cuts through. */
	for (unsigned k = 0; k < 3000; k++) {
		for (unsigned c = 0; c < NCPU && k % 20 == 0; c++)
			for (unsigned i = 0; i < 30; i++)
				assert_int_equal(produce_one(c), 0);
		step();
	}
	/* More than the ring holds between two polls: records never read go too. */
	for (unsigned c = 0; c < NCPU; c++)
		for (unsigned i = 0; i < 1500; i++)
			assert_int_equal(produce_one(c), 0);
	step();
	for (unsigned c = 0; c < NCPU; c++) {
		tail_b[c] = W.ring[c]->tail_seq;
		assert_true(tail_b[c] > a_end[c]);   /* unacked records were overwritten */
	}
	L.down_fwd = false;
	L.drop = 10;
	run(0, false);
	check_complete();
	for (unsigned c = 0; c < NCPU; c++) {
		uint64_t expect = tail_b[c] - a_end[c];

		assert_int_equal(W.t[c].lost, expect);
		assert_int_equal(W.ex->s[c].c.lost_overwrite, expect);
		assert_int_equal(W.t[c].delivered, W.ring[c]->next_seq - 100 - expect);
	}
	world_free();
}

/* Loss ranges arrive even when the ring also overwrites during a lossy link. */
static void test_overwrite_under_lossy_link(void **state)
{
	(void)state;
	world_init(TV_OVERFLOW_OVERWRITE, 0, 6);
	L.drop = 30;
	L.dup = 5;
	L.max_delay = 60;
	run(20000, false);   /* faster than a 30% link drains: some loss */
	check_complete();
	for (unsigned c = 0; c < NCPU; c++) {
		/*
		 * The sender declares lost what was overwritten before it was
		 * acked; the receiver counts only what it did not get (a
		 * datagram may arrive while its ACK is lost).
		 */
		assert_true(W.t[c].lost > 0);
		assert_true(W.t[c].lost <= W.ex->s[c].c.lost_overwrite);
		assert_true(W.t[c].delivered > 0);
	}
	world_free();
}

/*
 * Window full: with nothing acknowledged, the exporter sends
 * EXPORT_WINDOW datagrams per stream and then only resends; the STOP ring
 * fills and drops, counted, and a LOST record reports the drops in the
 * stream once the link is back.
 */
static void test_window_full(void **state)
{
	uint64_t sent;
	unsigned full = 0;

	(void)state;
	world_init(TV_OVERFLOW_STOP, 0, 7);
	L.down_fwd = true;
	for (unsigned k = 0; k < 4000; k++) {
		for (unsigned c = 0; c < NCPU; c++)
			if (produce_one(c) == TRACE_ERR_FULL)
				full++;
		step();
	}
	assert_true(full > 0);
	sent = W.ex->s[0].c.sent;
	for (unsigned c = 0; c < NCPU; c++) {
		assert_int_equal(W.ex->s[c].nwin, EXPORT_WINDOW);
		assert_true(W.ex->s[c].c.retransmitted > 0);
		assert_true(W.ring[c]->lost_records > 0);
	}
	for (unsigned k = 0; k < 500; k++)
		step();
	assert_int_equal(W.ex->s[0].c.sent, sent);   /* nothing new while full */
	L.down_fwd = false;
	/* One more record per CPU after room is made writes the LOST record. */
	run(0, false);
	for (unsigned c = 0; c < NCPU; c++)
		assert_int_equal(produce_one(c), 0);
	run(0, false);
	check_complete();
	for (unsigned c = 0; c < NCPU; c++)
		assert_int_equal(W.t[c].lost, 0);
	world_free();
}

static void test_hello_until_acked_and_heartbeat(void **state)
{
	unsigned hellos_before;

	(void)state;
	world_init(TV_OVERFLOW_STOP, 0, 8);
	L.down_back = true;   /* the receiver hears us; we hear nothing */
	for (unsigned k = 0; k < 3500; k++)
		step();
	assert_false(W.ex->hello_acked);
	assert_int_equal(W.ex->hello_seq, 4);   /* at 0, 1000, 2000, 3000 ticks */
	assert_int_equal(W.hellos, 1);          /* delivered once per session */
	L.down_back = false;
	for (unsigned k = 0; k < 1000; k++)
		step();
	assert_true(W.ex->hello_acked);
	hellos_before = W.ex->hello_seq;
	for (unsigned k = 0; k < 3000; k++)
		step();
	assert_int_equal(W.ex->hello_seq, hellos_before);
	/* Heartbeats every second carry the exporter's counters. */
	assert_true(W.heartbeats >= 7);
	run(100, true);
	for (unsigned k = 0; k < 1100; k++)
		step();
	for (unsigned c = 0; c < NCPU; c++) {
		assert_int_equal(W.hb[c].cpu, c);
		assert_int_equal(W.hb[c].produced, 100);
		assert_int_equal(W.hb[c].head_seq, 100);
		assert_int_equal(W.hb[c].sent, 100);
		assert_int_equal(W.hb[c].acked, 100);
		assert_int_equal(W.hb[c].lost_overwrite, 0);
	}
	world_free();
}

/* --- control ----------------------------------------------------------------------------------- */

static int build(uint64_t session, uint16_t op, const void *args, uint16_t arg_len,
		 const char *key, uint8_t *buf)
{
	return recv_control(W.rx, session, op, args, arg_len, key, strlen(key), buf,
			    TVP_MAX_DATAGRAM);
}

#define deliver_back(b, n) deliver_back_at(b, n, __LINE__)
static void deliver_back_at(const uint8_t *b, int n, int line)
{
	if (n <= 0)
		fail_msg("line %d: no datagram: %s", line, proto_strerror(n));
	link_put(0, b, (size_t)n);
	for (unsigned k = 0; k < 50; k++)
		step();
}

static void test_control(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM], keep[TVP_MAX_DATAGRAM], forged[TVP_MAX_DATAGRAM];
	struct tvp_ctl_cpus cpus;
	struct { struct tvp_ctl_marker m; char label[4]; } mk;
	struct tvp_ctl_filter f = { .cpl = 1 };
	struct tvp_control c;
	int n, kn;

	(void)state;
	world_init(TV_OVERFLOW_STOP, 0, 9);
	for (unsigned k = 0; k < 20; k++)
		step();   /* HELLO creates the session at the receiver */
	memset(&cpus, 0, sizeof(cpus));
	cpus.mask[0] = 0x5;

	/* Valid START: applied once, answered. */
	kn = build(SESSION, TVP_CTL_START, &cpus, sizeof(cpus), KEY, keep);
	memcpy(b, keep, (size_t)kn);
	deliver_back(b, kn);
	assert_int_equal(W.ops_start, 1);
	assert_int_equal(W.replies, 1);
	assert_int_equal(W.last_reply.status, 0);
	assert_int_equal(W.last_reply.op, TVP_CTL_START);
	assert_int_equal(W.ex->st.ctl_accepted, 1);

	/* The same datagram again: not applied, counted, the reply repeated. */
	deliver_back(keep, kn);
	assert_int_equal(W.ops_start, 1);
	assert_int_equal(W.ex->st.ctl_replay, 1);
	assert_int_equal(W.replies, 2);

	/* Wrong key: not applied, no reply. */
	n = build(SESSION, TVP_CTL_START, &cpus, sizeof(cpus), "not the key", forged);
	deliver_back(forged, n);
	assert_int_equal(W.ops_start, 1);
	assert_int_equal(W.ex->st.ctl_bad_auth, 1);
	assert_int_equal(W.replies, 2);

	/* A tag forged by changing a byte of a valid message (CRC fixed up). */
	n = build(SESSION, TVP_CTL_START, &cpus, sizeof(cpus), KEY, forged);
	forged[40] ^= 0x2;   /* cpu mask bit 1 */
	{
		uint32_t crc;

		memset(forged + 20, 0, 4);
		crc = proto_crc32(0, forged, (size_t)n);
		for (int i = 0; i < 4; i++)
			forged[20 + i] = (uint8_t)(crc >> (8 * i));
	}
	deliver_back(forged, n);
	assert_int_equal(W.ops_start, 1);
	assert_int_equal(W.ex->st.ctl_bad_auth, 2);

	/* An older counter with a valid tag: a replay. */
	c = (struct tvp_control){ .counter = 1, .op = TVP_CTL_START, .arg_len = sizeof(cpus) };
	n = proto_encode_control(b, sizeof(b), SESSION, &c, &cpus, KEY, strlen(KEY));
	deliver_back(b, n);
	assert_int_equal(W.ops_start, 1);
	assert_int_equal(W.ex->st.ctl_replay, 2);

	/* Valid tag, another boot's session id: refused. */
	c.counter = UINT64_MAX;
	n = proto_encode_control(b, sizeof(b), SESSION + 1, &c, &cpus, KEY, strlen(KEY));
	assert_true(n > 0);
	assert_int_equal(export_input(W.ex, b, (size_t)n, L.now), PROTO_ERR_WRONG_SESSION);
	assert_int_equal(W.ops_start, 1);
	assert_int_equal(W.ex->st.ctl_bad_session, 1);

	/* Malformed: truncated, bit-flipped, wrong direction. */
	n = build(SESSION, TVP_CTL_START, &cpus, sizeof(cpus), KEY, b);
	assert_true(export_input(W.ex, b, (size_t)n - 1, L.now) < 0);
	b[30] ^= 1;
	assert_int_equal(export_input(W.ex, b, (size_t)n, L.now), PROTO_ERR_CRC);
	n = proto_encode_hello(b, sizeof(b), SESSION, &W.ex->cfg.hello);
	assert_int_equal(export_input(W.ex, b, (size_t)n, L.now), PROTO_ERR_TYPE);
	assert_int_equal(W.ex->st.ctl_malformed, 3);
	assert_int_equal(W.ops_start, 1);
	assert_int_equal(W.ex->ctl_last, 1001);   /* ctl_base 1000 + 1 */

	/* The counter the forged/malformed ones would have used still works. */
	memset(&mk, 0, sizeof(mk));
	mk.m.value = 0xabcdef;
	mk.m.cpu = TVP_CPU_ALL;
	mk.m.label_len = 4;
	memcpy(mk.label, "mark", 4);
	n = build(SESSION, TVP_CTL_MARKER, &mk, (uint16_t)(sizeof(mk.m) + 4), KEY, b);
	deliver_back(b, n);
	assert_int_equal(W.ops_marker, 1);
	assert_int_equal(W.marker_value, 0xabcdef);
	assert_int_equal(W.last_reply.status, 0);

	/* A refusing handler, and an op without a handler. */
	n = build(SESSION, TVP_CTL_STOP, &cpus, sizeof(cpus), KEY, b);
	deliver_back(b, n);
	assert_int_equal(W.ops_stop, 1);
	assert_int_equal(W.last_reply.status, TVP_CTL_EFAILED);
	n = build(SESSION, TVP_CTL_FILTERS, &f, sizeof(f), KEY, b);
	deliver_back(b, n);
	assert_int_equal(W.last_reply.status, TVP_CTL_EUNSUPPORTED);
	assert_int_equal(W.ex->st.ctl_accepted, 4);
	assert_int_equal(W.replies, 5);

	/* No key configured: nothing is authentic. */
	W.ex->cfg.keylen = 0;
	n = build(SESSION, TVP_CTL_START, &cpus, sizeof(cpus), KEY, b);
	deliver_back(b, n);
	assert_int_equal(W.ops_start, 1);
	assert_int_equal(W.ex->st.ctl_bad_auth, 3);

	/* Rejections are reported in the heartbeat. */
	for (unsigned k = 0; k < 1100; k++)
		step();
	world_free();
}

/* MEM_WATCH reaches the handler with its fields and label; refusals and no handler. */
static void test_control_mem_watch(void **state)
{
	static const struct export_ops no_mem = { .start = op_start };
	struct { struct tvp_ctl_mem_watch w; char label[4]; } a;
	uint8_t b[TVP_MAX_DATAGRAM];
	int n;

	(void)state;
	world_init(TV_OVERFLOW_STOP, 0, 11);
	for (unsigned k = 0; k < 20; k++)
		step();
	memset(&a, 0, sizeof(a));
	a.w = (struct tvp_ctl_mem_watch){ .lo = 0x10000, .hi = 0x10040, .op = TV_MEMW_ARM,
					  .mode = TV_MEMW_MODE_W, .label_len = 4 };
	memcpy(a.label, "jifs", 4);
	n = build(SESSION, TVP_CTL_MEM_WATCH, &a, sizeof(a.w) + 4, KEY, b);
	deliver_back(b, n);
	assert_int_equal(W.ops_mem_watch, 1);
	assert_int_equal(W.mem_watch.lo, 0x10000);
	assert_int_equal(W.mem_watch.hi, 0x10040);
	assert_int_equal(W.mem_watch.op, TV_MEMW_ARM);
	assert_int_equal(W.mem_watch.mode, TV_MEMW_MODE_W);
	assert_string_equal(W.mem_label, "jifs");
	assert_int_equal(W.last_reply.op, TVP_CTL_MEM_WATCH);
	assert_int_equal(W.last_reply.status, 0);

	a.w = (struct tvp_ctl_mem_watch){ .op = TV_MEMW_REMOVE, .id = 13 };
	n = build(SESSION, TVP_CTL_MEM_WATCH, &a, sizeof(a.w), KEY, b);
	deliver_back(b, n);
	assert_int_equal(W.ops_mem_watch, 2);
	assert_int_equal(W.mem_watch.id, 13);
	assert_int_equal(W.last_reply.status, TVP_CTL_EFAILED);

	W.ex->cfg.ops = &no_mem;
	a.w.id = 14;
	n = build(SESSION, TVP_CTL_MEM_WATCH, &a, sizeof(a.w), KEY, b);
	deliver_back(b, n);
	assert_int_equal(W.ops_mem_watch, 2);
	assert_int_equal(W.last_reply.status, TVP_CTL_EUNSUPPORTED);
	assert_int_equal(W.ex->st.ctl_accepted, 3);
	W.ex->cfg.ops = &EX_OPS;
	world_free();
}

/* --- receiver alone ---------------------------------------------------------------------------- */

static int mk_data(uint8_t *b, uint64_t first, uint16_t count, uint16_t flags)
{
	uint8_t rec[TVP_DATA_MAX_RECORDS];
	struct tvp_data d = { .first_seq = first, .count = count };

	memset(rec, 0, sizeof(rec));
	for (uint16_t i = 0; i < count; i++) {
		uint8_t *p = rec + 24u * i;
		uint64_t v = first + i;

		p[0] = TV_REC_MARKER;
		p[2] = 24;
		memcpy(p + 16, &v, 8);
	}
	return proto_encode_data(b, TVP_MAX_DATAGRAM, SESSION, 1, flags, &d, rec, 24u * count);
}

static void test_receiver_alone(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	const struct recv_session *s;
	struct tvp_loss l = { .first_seq = 30, .count = 5, .total = 5 };
	int n;

	(void)state;
	world_init(TV_OVERFLOW_STOP, 10, 10);
	/* Data before HELLO, and before the stream's FIRST: held, no ack. */
	n = mk_data(b, 20, 5, 0);
	assert_int_equal(recv_feed(W.rx, b, (size_t)n, ADDR_TV), 0);
	assert_int_equal(L.n, 0);
	assert_int_equal(W.t[1].delivered, 0);
	n = mk_data(b, 10, 10, TVP_DATA_F_FIRST);
	assert_int_equal(recv_feed(W.rx, b, (size_t)n, ADDR_TV), 0);
	assert_int_equal(W.t[1].delivered, 15);
	assert_int_equal(L.n, 1);           /* one ACK */
	/* A duplicate is counted and acked again. */
	assert_int_equal(recv_feed(W.rx, b, (size_t)n, ADDR_TV), 0);
	s = recv_session_get(W.rx, SESSION);
	assert_int_equal(s->s[1].dups, 1);
	assert_int_equal(L.n, 2);
	/* A gap [25,30), a LOSS [30,35), data [35,40): held; the ACK NACKs the gap. */
	assert_int_equal(proto_encode_loss(b, sizeof(b), SESSION, 1, 0, &l), 48);
	assert_int_equal(recv_feed(W.rx, b, 48, ADDR_TV), 0);
	n = mk_data(b, 35, 5, 0);
	assert_int_equal(recv_feed(W.rx, b, (size_t)n, ADDR_TV), 0);
	{
		struct proto_msg m;
		const struct pkt *p = &L.q[L.n - 1];

		assert_int_equal(proto_decode(p->b, p->len, &m), 0);
		assert_int_equal(m.type, TVP_ACK);
		assert_int_equal(m.u.ack.a.cum, 25);
		assert_int_equal(m.u.ack.a.highest, 40);
		assert_int_equal(m.u.ack.a.nranges, 1);
		assert_int_equal(m.u.ack.ranges[0].first, 25);
		assert_int_equal(m.u.ack.ranges[0].end, 30);
	}
	/* Closing: the gap is missing (not lost), the LOSS is lost, the rest delivered. */
	assert_int_equal(recv_close(W.rx, SESSION), 0);
	assert_int_equal(W.t[1].missing, 5);
	assert_int_equal(W.t[1].lost, 5);
	assert_int_equal(W.t[1].delivered, 20);
	assert_null(recv_session_get(W.rx, SESSION));
	assert_int_equal(recv_close(W.rx, SESSION), PROTO_ERR_INVAL);
	/* Malformed and wrong-direction datagrams are counted by class. */
	n = mk_data(b, 10, 1, TVP_DATA_F_FIRST);
	b[0] ^= 1;
	assert_int_equal(recv_feed(W.rx, b, (size_t)n, ADDR_TV), PROTO_ERR_MAGIC);
	n = proto_encode_hello_ack(b, sizeof(b), SESSION, 0);
	assert_int_equal(recv_feed(W.rx, b, (size_t)n, ADDR_TV), PROTO_ERR_TYPE);
	assert_int_equal(W.rx->st.malformed, 2);
	assert_int_equal(W.rx->st.by_error[-PROTO_ERR_MAGIC], 1);
	world_free();
}

/* Sessions are kept apart and the least recently heard one makes room. */
static void test_receiver_sessions(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	struct tvp_hello h;
	int n;

	(void)state;
	world_init(TV_OVERFLOW_STOP, 0, 11);
	memset(&h, 0, sizeof(h));
	h.cpu_count = 1;
	for (uint64_t id = 1; id <= RECV_MAX_SESSIONS + 1; id++) {
		n = proto_encode_hello(b, sizeof(b), id, &h);
		assert_int_equal(recv_feed(W.rx, b, (size_t)n, ADDR_TV), 0);
	}
	assert_int_equal(W.rx->st.evicted, 1);
	assert_null(recv_session_get(W.rx, 1));
	assert_non_null(recv_session_get(W.rx, 2));
	assert_non_null(recv_session_get(W.rx, RECV_MAX_SESSIONS + 1));
	assert_int_equal(recv_control(W.rx, 1, TVP_CTL_NOP, NULL, 0, KEY, 3, b, sizeof(b)),
			 PROTO_ERR_INVAL);
	world_free();
}

static int count_send(void *ctx, const void *buf, size_t len)
{
	struct proto_msg m;

	assert_int_equal(proto_decode(buf, len, &m), 0);
	if (m.type == TVP_HEARTBEAT) {
		unsigned *n = ctx;

		assert_int_equal(m.u.hb.h.first_cpu, *n * TVP_HB_MAX_CPUS);
		(*n)++;
	}
	return 1;   /* the network refused it: counted as a tx error */
}

/* Argument checks, heartbeats split over datagrams, acks that cannot be ours. */
static void test_exporter_edges(void **state)
{
	static struct exporter ex;
	static uint64_t mem[(128 + 4096) / 8];
	struct tv_trace_ring *r = (struct tv_trace_ring *)mem;
	struct export_config cfg = { .session = 7, .tsc_hz = HZ, .send = count_send };
	uint8_t b[TVP_MAX_DATAGRAM];
	struct tvp_ack a = { .cum = 1000, .highest = 1000 };
	unsigned hb = 0;
	int n;

	(void)state;
	cfg.send_ctx = &hb;
	assert_int_equal(export_init(NULL, &cfg, 1, 0), PROTO_ERR_INVAL);
	assert_int_equal(export_init(&ex, &cfg, 0, 0), PROTO_ERR_INVAL);
	assert_int_equal(export_init(&ex, &cfg, EXPORT_MAX_CPUS + 1, 0), PROTO_ERR_INVAL);
	cfg.keylen = EXPORT_KEY_MAX + 1;
	cfg.key = KEY;
	assert_int_equal(export_init(&ex, &cfg, 1, 0), PROTO_ERR_INVAL);
	cfg.keylen = 0;
	cfg.session = 0;
	assert_int_equal(export_init(&ex, &cfg, 1, 0), PROTO_ERR_INVAL);
	cfg.session = 7;
	assert_int_equal(export_init(&ex, &cfg, 50, 0), 0);
	assert_int_equal(trace_ring_init(r, sizeof(mem), 0, 0, TV_SOURCE_MTF, TV_OVERFLOW_STOP, HZ, 0), 0);
	assert_int_equal(export_attach(&ex, 50, r), PROTO_ERR_INVAL);
	assert_int_equal(export_attach(&ex, 0, r), 0);
	assert_int_equal(export_attach(&ex, 0, r), PROTO_ERR_INVAL);   /* twice */
	assert_null(export_counters(&ex, 50));

	/* 50 CPUs: three heartbeat datagrams, 21 + 21 + 8. */
	assert_true(export_poll(&ex, HZ) > 0);
	assert_int_equal(hb, 3);
	assert_true(ex.st.tx_errors > 0);

	/* Records in flight, then an ACK beyond anything sent: ignored. */
	for (int i = 0; i < 10; i++)
		assert_int_equal(trace_append_marker(r, 1, (uint64_t)i, NULL, 0), 0);
	assert_int_equal(export_poll(&ex, HZ + 1), 1);
	assert_int_equal(ex.s[0].nwin, 1);
	n = proto_encode_ack(b, sizeof(b), 7, 0, &a, NULL);
	assert_int_equal(export_input(&ex, b, (size_t)n, HZ + 2), 0);
	assert_int_equal(ex.st.ignored, 1);
	assert_int_equal(ex.s[0].nwin, 1);
	assert_int_equal(r->tail, 0);
	/* ACK for another session or an unattached stream: ignored too. */
	a.cum = a.highest = 10;
	n = proto_encode_ack(b, sizeof(b), 8, 0, &a, NULL);
	assert_int_equal(export_input(&ex, b, (size_t)n, HZ + 2), PROTO_ERR_WRONG_SESSION);
	n = proto_encode_ack(b, sizeof(b), 7, 1, &a, NULL);
	assert_int_equal(export_input(&ex, b, (size_t)n, HZ + 2), PROTO_ERR_STREAM);
	/* The right one releases STOP ring space. */
	n = proto_encode_ack(b, sizeof(b), 7, 0, &a, NULL);
	assert_int_equal(export_input(&ex, b, (size_t)n, HZ + 2), 0);
	assert_int_equal(ex.s[0].nwin, 0);
	assert_int_equal(r->tail, 240);
	assert_int_equal(r->tail_seq, 10);
	assert_int_equal(ex.s[0].c.sent, 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean_link),
		cmocka_unit_test(test_drop5_dup_reorder),
		cmocka_unit_test(test_drop30_dup_reorder),
		cmocka_unit_test(test_wrap_around),
		cmocka_unit_test(test_overwrite_loss_is_exact),
		cmocka_unit_test(test_overwrite_under_lossy_link),
		cmocka_unit_test(test_window_full),
		cmocka_unit_test(test_hello_until_acked_and_heartbeat),
		cmocka_unit_test(test_control),
		cmocka_unit_test(test_control_mem_watch),
		cmocka_unit_test(test_receiver_alone),
		cmocka_unit_test(test_receiver_sessions),
		cmocka_unit_test(test_exporter_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
