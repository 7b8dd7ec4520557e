/* SPDX-License-Identifier: MIT */
/*
 * receiver.c - the receiver loop behind `tracevisor record` (receiver.h,
 * docs/RECEIVER.md): one UDP socket, net/recv.c's sessions, a capture
 * directory per session (capture.c).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "host-tools/lib/capture.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/le.h"
#include "host-tools/lib/receiver.h"
#include "host-tools/lib/record.h"
#include "net/dauth.h"
#include "net/proto.h"
#include "net/recv.h"
#include "vmm/trace/format.h"

#define REC_BATCH          64       /* datagrams per recvmmsg */
#define REC_TICK_MS        100      /* poll timeout: flush, progress, idle */
#define REC_FLUSH_NS       200000000ull
#define REC_BEGIN_NS       3000000000ull   /* no HELLO this long: write as "unknown" */
#define REC_BEGIN_BYTES    (64u << 20)     /* or this much held in memory */
#define REC_CTL_RETRY_NS   500000000ull
#define REC_CTL_TRIES      10
#define REC_RCVBUF         (8 << 20)
/*
 * Hostile input (docs/PROTOCOL.md, "Threat model"):
 * - a session is bound to the address and port of its first datagram;
 *   datagrams with its id from anywhere else are dropped ("foreign"),
 *   except that a HELLO from elsewhere replaces a session that never sent
 *   one (unverified state gives way to a machine that says who it is);
 * - every reply to a session is bounded by REC_AMPLIFY times the bytes its
 *   address sent us (QUIC's anti-amplification rule, RFC 9000 8.1), so a
 *   spoofed source gets back at most that;
 * - a verified session (HELLO seen and answered) is never evicted for an
 *   unverified one; unverified sessions give way, least recently heard
 *   first, and one silent for REC_STALE_NS gives way to a new HELLO.
 */
#define REC_AMPLIFY        3u
#define REC_STALE_NS       30000000000ull
/*
 * Delayed ACKs (recv_set_ack_every) go out when no datagram waits, but
 * not more often than every REC_ACK_GAP_NS: an emulator's user network
 * may hand the machine one datagram per socket per tick (Bochs's slirp:
 * one recvfrom per 1 ms of emulated time), and more ACKs than that queue
 * up in its socket, turning each ACK stale by the queue's length (200 ms
 * measured: a full 212 KB socket buffer).  The n-th in-order datagram,
 * holes, FIRST, LOSS and duplicates are still answered at once.
 */
#define REC_ACK_EVERY      64u
#define REC_ACK_GAP_NS     2000000ull

/* ---- the receiver ----------------------------------------------------------- */

static volatile sig_atomic_t rec_stop;

static void rec_on_signal(int sig)
{
	(void)sig;
	rec_stop = 1;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* What record.c counts per CPU itself (net/recv.c counts the rest). */
struct rec_cpu {
	bool started;             /* first delivery seen (STREAM_START decided) */
	uint64_t datagrams;       /* DATA datagrams fed */
	uint64_t nack_reqs;       /* ACKs we sent that named missing ranges */
	uint64_t nacked;          /* records those ranges named */
	struct cap_range *missing;/* recv_close: never came */
	size_t nmissing, missing_cap;
	/* the CPU's PT stream (counted apart: its numbers are bytes) */
	uint64_t pt_datagrams;    /* PT datagrams fed */
	uint64_t pt_nack_reqs;    /* ACKs of the PT stream that named missing ranges */
	uint64_t pt_nacked;       /* bytes those ranges named */
	uint64_t pt_missing;      /* bytes never came (recv_close) */
	bool pt_sync;             /* a PT_SYNC record arrived: the two below are set */
	uint64_t pt_sync_offset;  /* the last one's pt_offset */
	uint64_t pt_sync_lost;    /* and pt_lost: lost at the source (drain, ToPA) */
};

struct rec_session {
	bool used;
	bool closed;
	bool verified;            /* its HELLO came from peer and was answered */
	struct sockaddr_in peer;  /* where its first datagram came from: the only source taken */
	uint64_t rx_peer;         /* bytes received from peer (REC_AMPLIFY budget) */
	uint64_t tx_peer;         /* bytes sent to peer */
	/* --auth: the session key from the key, the HELLO's nonce and ours */
	uint8_t nonce_m[DAUTH_NONCE_LEN], nonce_r[DAUTH_NONCE_LEN];
	uint8_t ks[SIPHASH_KEY_LEN];
	struct dauth_window win;  /* the machine's packet numbers */
	uint64_t tx_pn;           /* ours */
	uint64_t addr;            /* recv.c's token for the last source */
	uint64_t id;
	struct cap cap;
	int cap_err;              /* first capture error (reported at close) */
	uint64_t created_ns, last_rx_ns;
	uint64_t datagrams, bytes;
	struct rec_cpu cpu[RECV_MAX_CPUS];
	/* --start: the START command until its reply arrives */
	uint8_t ctl[TVP_MAX_DATAGRAM];
	int ctl_len;
	uint64_t ctl_counter, ctl_next_ns;
	unsigned ctl_tries;
	uint64_t replies;
};

struct rec {
	struct tvh_record_opts o;
	int fd;
	struct receiver *rx;      /* net/recv.c: every session */
	struct rec_session s[REC_MAX_SESSIONS];
	struct rec_session *cur;  /* the session a callback is about */
	unsigned nsessions, nclosed;
	/* whole receiver */
	uint64_t datagrams, bytes;
	uint64_t rejected[PROTO_ERR_COUNT];   /* by -PROTO_ERR_*: failed proto_decode */
	uint64_t wrong_direction;  /* receiver-to-machine types sent at us */
	uint64_t over_limit;       /* sessions beyond --machines / RECV_MAX_SESSIONS */
	uint64_t late;             /* datagrams of sessions already closed */
	uint64_t foreign;          /* a session's id from another address or port */
	uint64_t evicted;          /* unverified sessions dropped for a newer one */
	uint64_t amp_limited;      /* replies cut or held back by REC_AMPLIFY */
	uint64_t unsealed;         /* --auth: datagrams without the trailer */
	uint64_t bad_tag;          /* --auth: a wrong tag, or no session to check it with */
	uint64_t replayed;         /* --auth: a packet number seen already or too old */
	uint64_t send_errors;
	unsigned nverified;        /* sessions whose HELLO came (what --machines counts) */
	/* progress */
	bool tty;
	uint64_t t0, last_status, last_flush;
	uint64_t last_ack_ns;      /* REC_ACK_GAP_NS: the last recv_flush */
	bool ack_due;              /* datagrams since that flush */
	uint64_t prev_records, prev_bytes, prev_t;
	bool drawn;
};

/* --- callbacks from net/recv.c ------------------------------------------------ */

static uint64_t addr_token(const struct sockaddr_in *a)
{
	return (uint64_t)ntohl(a->sin_addr.s_addr) << 16 | ntohs(a->sin_port);
}

static struct sockaddr_in token_addr(uint64_t t)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl((uint32_t)(t >> 16));
	a.sin_port = htons((uint16_t)t);
	return a;
}

/* The open session with this id (the one being fed, usually). */
static struct rec_session *open_session(struct rec *r, uint64_t id)
{
	if (r->cur && r->cur->id == id && !r->cur->closed)
		return r->cur;
	for (unsigned i = 0; i < REC_MAX_SESSIONS; i++)
		if (r->s[i].used && !r->s[i].closed && r->s[i].id == id)
			return &r->s[i];
	return NULL;
}

static void cap_result(struct rec_session *s, int err)
{
	if (err && !s->cap_err)
		s->cap_err = err;
}

static void cb_records(void *ctx, uint64_t session, uint32_t cpu, uint64_t first_seq,
		       const uint8_t *records, size_t len, uint32_t count, bool has_base,
		       uint64_t base_to)
{
	struct rec *r = ctx;
	struct rec_session *s = open_session(r, session);

	(void)count;
	if (!s || cpu >= RECV_MAX_CPUS)
		return;
	/* The stream's own account of its PT bytes: the last PT_SYNC record. */
	for (size_t off = 0; off + sizeof(struct tv_rec) <= len;) {
		uint16_t size = tvh_le16(records + off + 2);

		if (size < sizeof(struct tv_rec) || size > len - off)
			break;   /* recv.c hands out whole records */
		if (records[off] == TV_REC_PT_SYNC && size >= sizeof(struct tv_rec_pt_sync)) {
			s->cpu[cpu].pt_sync = true;
			s->cpu[cpu].pt_sync_offset = tvh_le64(records + off + 16);
			s->cpu[cpu].pt_sync_lost = tvh_le64(records + off + 24);
		}
		off += size;
	}
	if (!s->cpu[cpu].started) {
		const struct recv_session *rs = recv_session_get(r->rx, session);

		s->cpu[cpu].started = true;
		if (rs && rs->s[cpu].known && rs->s[cpu].start == first_seq)
			cap_stream_start(&s->cap, cpu, first_seq);
	}
	cap_result(s, cap_records(&s->cap, cpu, first_seq, records, len, has_base, base_to));
}

static void cb_pt(void *ctx, uint64_t session, uint32_t cpu, uint64_t offset,
		  const uint8_t *bytes, size_t len)
{
	struct rec *r = ctx;
	struct rec_session *s = open_session(r, session);

	if (s)
		cap_result(s, cap_pt(&s->cap, cpu, offset, bytes, len));
}

/* recv_close: PT bytes of cpu that never came (cap_pt sees the jump as a gap). */
static void cb_pt_missing(void *ctx, uint64_t session, uint32_t cpu, uint64_t offset,
			  uint64_t count)
{
	struct rec *r = ctx;
	struct rec_session *s = open_session(r, session);

	(void)offset;
	if (s && cpu < RECV_MAX_CPUS)
		s->cpu[cpu].pt_missing += count;
}

static void send_to(struct rec *r, uint64_t addr, const void *buf, size_t len)
{
	struct sockaddr_in a = token_addr(addr);

	if (sendto(r->fd, buf, len, 0, (const struct sockaddr *)&a, sizeof(a)) != (ssize_t)len)
		r->send_errors++;
}

/* May we send len more bytes to s's peer (REC_AMPLIFY)? */
static bool amp_ok(const struct rec_session *s, size_t len)
{
	return s->tx_peer + len <= REC_AMPLIFY * s->rx_peer;
}

/*
 * --auth: buf[0..len) sealed for s into out (a HELLO_ACK also carries our
 * nonce before the trailer); its length, or 0.  Without --auth, a copy.
 */
static size_t rec_seal(const struct rec *r, struct rec_session *s, const uint8_t *buf,
		       size_t len, uint8_t *out, size_t cap)
{
	int n;

	if (len > cap)
		return 0;
	memcpy(out, buf, len);
	if (!r->o.auth)
		return len;
	if (len >= 6 && buf[5] == TVP_HELLO_ACK) {
		if (len + DAUTH_NONCE_LEN > cap)
			return 0;
		memcpy(out + len, s->nonce_r, DAUTH_NONCE_LEN);
		len += DAUTH_NONCE_LEN;
	}
	n = dauth_seal(out, len, cap, s->ks, ++s->tx_pn);
	return n > 0 ? (size_t)n : 0;
}

static void ctl_send(struct rec *r, struct rec_session *s, uint64_t now)
{
	if (s->ctl_len <= 0 || s->ctl_tries >= REC_CTL_TRIES)
		return;
	if (!amp_ok(s, (size_t)s->ctl_len)) {
		/* Wait for the machine to send more: a spoofed HELLO gets one START. */
		r->amp_limited++;
		s->ctl_next_ns = now + REC_CTL_RETRY_NS;
		return;
	}
	{
		uint8_t sealed[TVP_MAX_DATAGRAM + DAUTH_NONCE_LEN + DAUTH_TRAILER_LEN];
		size_t n = rec_seal(r, s, s->ctl, (size_t)s->ctl_len, sealed, sizeof(sealed));

		s->tx_peer += n;
		if (n)
			send_to(r, s->addr, sealed, n);
	}
	s->ctl_tries++;
	s->ctl_next_ns = now + REC_CTL_RETRY_NS;
}

static void cb_hello(void *ctx, uint64_t session, uint64_t addr, const struct tvp_hello *h)
{
	struct rec *r = ctx;
	struct rec_session *s = open_session(r, session);

	if (!s)
		return;
	cap_result(s, cap_set_hello(&s->cap, h));
	if (r->o.start) {
		s->addr = addr;
		s->ctl_len = recv_control(r->rx, session, TVP_CTL_START, &r->o.start_cpus,
					  sizeof(r->o.start_cpus), r->o.key, r->o.keylen, s->ctl,
					  sizeof(s->ctl));
		if (s->ctl_len > 0) {
			s->ctl_counter = tvh_le64(s->ctl + sizeof(struct tvp_hdr));
			ctl_send(r, s, mono_ns());
		}
	}
}

static void cb_loss(void *ctx, uint64_t session, uint32_t cpu, uint64_t first_seq,
		    uint64_t count)
{
	struct rec *r = ctx;
	struct rec_session *s = open_session(r, session);

	if (s)
		cap_result(s, cap_loss(&s->cap, cpu, first_seq, count));
}

static void cb_missing(void *ctx, uint64_t session, uint32_t cpu, uint64_t first_seq,
		      uint64_t count)
{
	struct rec *r = ctx;
	struct rec_session *s = open_session(r, session);
	struct rec_cpu *c;

	if (!s || cpu >= RECV_MAX_CPUS || !count)
		return;
	c = &s->cpu[cpu];
	if (c->nmissing && c->missing[c->nmissing - 1].end == first_seq) {
		c->missing[c->nmissing - 1].end += count;
		return;
	}
	if (c->nmissing == c->missing_cap) {
		size_t n = c->missing_cap ? c->missing_cap * 2 : 8;
		struct cap_range *m = realloc(c->missing, n * sizeof(*m));

		if (!m)
			return;
		c->missing = m;
		c->missing_cap = n;
	}
	c->missing[c->nmissing++] = (struct cap_range){ first_seq, first_seq + count };
}

static void cb_heartbeat(void *ctx, uint64_t session, const struct tvp_heartbeat *h,
			 const struct tvp_hb_cpu *cpus)
{
	struct rec *r = ctx;
	struct rec_session *s = open_session(r, session);

	if (!s)
		return;
	for (unsigned i = 0; i < h->ncpus && i < TVP_HB_MAX_CPUS; i++)
		cap_heartbeat(&s->cap, &cpus[i]);
}

static void cb_reply(void *ctx, uint64_t session, const struct tvp_control_reply *rep)
{
	struct rec *r = ctx;
	struct rec_session *s = open_session(r, session);
	static const char *const ops[] = { "nop", "start", "stop", "filters", "marker",
					   "mem-watch" };

	bool ours;

	if (!s)
		return;
	/*
	 * Only the session's peer gets here (on_datagram drops other sources).
	 * Our own command's retries stop only for its counter and op; a reply
	 * to a command from elsewhere (tracevisor control) is only printed.
	 */
	ours = s->ctl_counter && rep->counter == s->ctl_counter && rep->op == TVP_CTL_START;
	s->replies++;
	if (ours)
		s->ctl_len = 0;          /* answered: no more resends */
	if (!r->o.quiet) {
		if (r->drawn)
			fputs("\r\033[K", stderr);
		r->drawn = false;
		fprintf(stderr, "tracevisor record: session %016" PRIx64 ": control %s (counter %"
			PRIu64 ") %s%s\n", session, rep->op < sizeof(ops) / sizeof(ops[0]) ? ops[rep->op] : "?",
			rep->counter,
			rep->status == 0 ? "applied" : rep->status == TVP_CTL_EUNSUPPORTED ?
			"not supported by the machine" : "refused by the machine",
			ours ? "" : " (a command not sent by this receiver)");
	}
}

/*
 * An ACK cut to the ranges that fit in room bytes (ranges beyond those
 * sent are asked for in a later ACK anyway, docs/PROTOCOL.md "ACK"), into
 * out; its length, or 0 when not even the bare ACK fits.
 */
static size_t ack_trim(const uint8_t *p, size_t len, size_t room, uint8_t *out, size_t cap)
{
	struct proto_msg m;
	size_t bare = sizeof(struct tvp_hdr) + sizeof(struct tvp_ack);
	int n;

	if (room < bare || proto_decode(p, len, &m) || m.type != TVP_ACK)
		return 0;
	if (m.u.ack.a.nranges > (room - bare) / sizeof(struct tvp_range))
		m.u.ack.a.nranges = (uint16_t)((room - bare) / sizeof(struct tvp_range));
	n = proto_encode_ack(out, cap, m.session, m.stream, &m.u.ack.a, m.u.ack.ranges);
	return n > 0 ? (size_t)n : 0;
}

/* Everything we send goes through here: count the NACKs as they leave. */
static int cb_send(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	struct rec *r = ctx;
	const uint8_t *p = buf;
	struct rec_session *as = len >= sizeof(struct tvp_hdr) ? open_session(r, tvh_le64(p + 8)) : NULL;
	uint8_t cut[TVP_MAX_DATAGRAM], sealed[TVP_MAX_DATAGRAM + DAUTH_NONCE_LEN + DAUTH_TRAILER_LEN];
	size_t extra = r->o.auth ? DAUTH_TRAILER_LEN + (p[5] == TVP_HELLO_ACK ? DAUTH_NONCE_LEN : 0) : 0;

	if (r->o.auth && !as)
		return 0;                 /* nothing leaves unsealed */
	if (as && !amp_ok(as, len + extra)) {
		uint64_t room = REC_AMPLIFY * as->rx_peer - as->tx_peer;

		r->amp_limited++;
		if (as->tx_peer > REC_AMPLIFY * as->rx_peer || p[5] != TVP_ACK)
			return 0;
		room = room > extra ? room - extra : 0;
		len = ack_trim(p, len, room > sizeof(cut) ? sizeof(cut) : (size_t)room, cut,
			       sizeof(cut));
		if (!len)
			return 0;
		p = cut;
	}
	if (as) {
		size_t n = rec_seal(r, as, p, len, sealed, sizeof(sealed));

		as->tx_peer += n;
		if (n)
			send_to(r, addr, sealed, n);
	} else {
		send_to(r, addr, p, len);
	}
	if (len >= sizeof(struct tvp_hdr) + sizeof(struct tvp_ack) && p[5] == TVP_ACK) {
		struct rec_session *s = open_session(r, tvh_le64(p + 8));
		uint16_t stream = tvh_le16(p + 16);
		uint32_t cpu = stream & TVP_STREAM_CPU_MASK;
		unsigned n = tvh_le16(p + 24 + 16);

		if (s && cpu < RECV_MAX_CPUS && n) {
			struct rec_cpu *c = &s->cpu[cpu];
			uint64_t named = 0;

			for (unsigned i = 0; i < n && 48 + 16 * (i + 1) <= len; i++)
				named += tvh_le64(p + 48 + 16 * i + 8) - tvh_le64(p + 48 + 16 * i);
			if (stream & TVP_STREAM_PT) {
				c->pt_nack_reqs++;
				c->pt_nacked += named;
			} else {
				c->nack_reqs++;
				c->nacked += named;
			}
		}
	}
	return 0;
}

static const struct recv_ops rec_recv_ops = {
	.records = cb_records, .pt = cb_pt, .hello = cb_hello, .loss = cb_loss,
	.missing = cb_missing, .pt_missing = cb_pt_missing, .heartbeat = cb_heartbeat,
	.reply = cb_reply, .send = cb_send,
};

/* --- sessions ---------------------------------------------------------------- */

static unsigned open_sessions(const struct rec *r)
{
	unsigned n = 0;

	for (unsigned i = 0; i < REC_MAX_SESSIONS; i++)
		n += r->s[i].used && !r->s[i].closed;
	return n;
}

/*
 * The PT streams of a closed session, one line per CPU that sent PT bytes
 * or PT_SYNC records (rs: net/recv.c's state, still readable after
 * recv_close; NULL when it was evicted).  Bytes are delivered in order,
 * each once; "missing" never came before the close, "lost at the source"
 * is the last PT_SYNC's pt_lost (bytes the drains could not keep).
 */
static void pt_summary(const struct rec_session *s, const struct recv_session *rs, FILE *f)
{
	for (uint32_t cpu = 0; cpu < RECV_MAX_CPUS; cpu++) {
		const struct rec_cpu *c = &s->cpu[cpu];
		const struct recv_stream *st = rs ? &rs->pt[cpu] : NULL;

		if (!c->pt_datagrams && !c->pt_sync)
			continue;
		fprintf(f, "cpu%-2u pt: %" PRIu64 " bytes in order", cpu, st ? st->records : 0);
		if (st && st->known)
			fprintf(f, " (offsets %" PRIu64 "..%" PRIu64 ")", st->start, st->next);
		fprintf(f, ", %" PRIu64 " datagrams, %" PRIu64 " dups, %" PRIu64
			" nack-reqs (%" PRIu64 " bytes), %" PRIu64 " missing-close",
			c->pt_datagrams, st ? st->dups : 0, c->pt_nack_reqs, c->pt_nacked,
			c->pt_missing);
		if (c->pt_sync)
			fprintf(f, ", lost at the source %" PRIu64 " (PT_SYNC at %" PRIu64 ")",
				c->pt_sync_lost, c->pt_sync_offset);
		fputc('\n', f);
	}
}

static void session_finish(struct rec *r, struct rec_session *s, bool report)
{
	const struct recv_session *rs;
	int err;

	if (!s->used || s->closed)
		return;
	r->cur = s;
	/* recv_close delivers what the pool holds and reports what never came. */
	rs = recv_session_get(r->rx, s->id);
	recv_close(r->rx, s->id);
	for (uint32_t cpu = 0; cpu < RECV_MAX_CPUS; cpu++) {
		struct rec_cpu *c = &s->cpu[cpu];
		struct cap_stream_stats st;

		if (cpu >= s->cap.ncpus && !c->datagrams && !c->nmissing)
			continue;
		memset(&st, 0, sizeof(st));
		st.duplicates = rs ? rs->s[cpu].dups : 0;   /* still readable after close */
		st.retransmit_reqs = c->nack_reqs;
		st.nacked_records = c->nacked;
		st.datagrams = c->datagrams;
		st.dropped_ahead = cpu == 0 && rs ? rs->pool_full : 0;
		st.missing = c->missing;
		st.nmissing = c->nmissing;
		cap_result(s, cap_set_stream(&s->cap, cpu, &st));
	}
	err = cap_close(&s->cap, rec_wall_ns());
	cap_result(s, err);
	s->closed = true;
	if (s->verified)
		r->nclosed++;     /* --machines counts machines that said HELLO */
	r->cur = NULL;
	if (report) {
		if (r->drawn) {
			fputs("\r\033[K", stderr);
			r->drawn = false;
		}
		if (!r->o.quiet) {
			cap_summary(&s->cap, stdout);
			pt_summary(s, rs, stdout);
		}
		printf("capture: %s\n", s->cap.dir);
		if (s->cap_err)
			printf("capture write error: %s%s%s\n", tvh_errstr(s->cap_err),
			       s->cap_err == -TVH_ERR_IO ? ": " : "",
			       s->cap_err == -TVH_ERR_IO ? strerror(s->cap.saved_errno) : "");
		fflush(stdout);
	}
}

static void session_free(struct rec_session *s)
{
	for (unsigned i = 0; i < RECV_MAX_CPUS; i++)
		free(s->cpu[i].missing);
	cap_free(&s->cap);
	memset(s, 0, sizeof(*s));
}

static bool receiver_only(uint8_t type)
{
	return type == TVP_HELLO_ACK || type == TVP_ACK || type == TVP_CONTROL;
}

static bool same_addr(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
	return a->sin_addr.s_addr == b->sin_addr.s_addr && a->sin_port == b->sin_port;
}

/*
 * Forget an unverified session (no HELLO): what it held goes, and so does
 * its slot, so that its id is not "late" if the machine comes back.  A
 * capture it had begun on disk (PT bytes, or 3 s of records) is closed
 * as usual; nothing is created for it otherwise.
 */
static void session_discard(struct rec *r, struct rec_session *s)
{
	if (s->cap.f) {
		session_finish(r, s, true);
	} else {
		s->closed = true;     /* callbacks from recv_close find no session */
		recv_close(r->rx, s->id);
	}
	session_free(s);
	r->nsessions--;
	r->evicted++;
}

/* A session that delivered nothing and never said HELLO: no directory for it. */
static bool session_empty(const struct rec_session *s)
{
	return !s->verified && !s->cap.f && !s->cap.records && !s->cap.lost && !s->cap.pt_bytes;
}

static unsigned open_verified(const struct rec *r)
{
	unsigned n = 0;

	for (unsigned i = 0; i < REC_MAX_SESSIONS; i++)
		n += r->s[i].used && !r->s[i].closed && r->s[i].verified;
	return n;
}

/*
 * Room in net/recv.c's table (RECV_MAX_SESSIONS) for a new session: the
 * unverified session heard from least recently gives way; for a HELLO,
 * failing that, a verified one silent for REC_STALE_NS.  Returns false
 * when every open session is verified and alive (over-limit).
 */
static bool make_room(struct rec *r, bool hello, uint64_t now)
{
	struct rec_session *v = NULL;

	if (open_sessions(r) < RECV_MAX_SESSIONS)
		return true;
	for (unsigned i = 0; i < REC_MAX_SESSIONS; i++) {
		struct rec_session *s = &r->s[i];

		if (s->used && !s->closed && !s->verified &&
		    (!v || s->last_rx_ns < v->last_rx_ns))
			v = s;
	}
	if (v) {
		session_discard(r, v);
		return true;
	}
	for (unsigned i = 0; hello && i < REC_MAX_SESSIONS; i++) {
		struct rec_session *s = &r->s[i];

		if (s->used && !s->closed && now - s->last_rx_ns >= REC_STALE_NS &&
		    (!v || s->last_rx_ns < v->last_rx_ns))
			v = s;
	}
	if (!v)
		return false;
	session_finish(r, v, true);
	return true;
}

/* A datagram of an unknown session id: open one for it if it deserves it. */
static struct rec_session *session_new(struct rec *r, const uint8_t *buf, size_t len,
				       uint64_t id, const struct sockaddr_in *from, uint64_t now)
{
	struct proto_msg m;
	struct rec_session *s;
	unsigned slot;
	char peer[64];
	int err;

	/* Only a datagram that decodes, and that net/recv.c will take, opens a session. */
	err = proto_decode(buf, len, &m);
	if (err) {
		r->rejected[err < 0 && err > -PROTO_ERR_COUNT ? -err : 0]++;
		return NULL;
	}
	if (receiver_only(m.type)) {
		r->wrong_direction++;
		return NULL;
	}
	if ((m.type == TVP_DATA || m.type == TVP_PT || m.type == TVP_LOSS) &&
	    (m.stream & TVP_STREAM_CPU_MASK) >= RECV_MAX_CPUS) {
		r->rejected[-PROTO_ERR_STREAM]++;
		return NULL;
	}
	for (slot = 0; slot < REC_MAX_SESSIONS; slot++)
		if (r->s[slot].used && r->s[slot].closed && r->s[slot].id == id) {
			r->late++;
			return NULL;
		}
	/* --machines N: N machines said HELLO; nobody else gets in. */
	if ((r->o.machines && r->nverified >= r->o.machines) ||
	    (m.type == TVP_HELLO && r->o.machines && open_verified(r) >= r->o.machines) ||
	    !make_room(r, m.type == TVP_HELLO, now)) {
		r->over_limit++;
		return NULL;
	}
	for (slot = 0; slot < REC_MAX_SESSIONS && r->s[slot].used; slot++)
		;
	if (slot == REC_MAX_SESSIONS) {
		/* The table keeps closed sessions for their summary: reuse the oldest. */
		for (unsigned i = 0; i < REC_MAX_SESSIONS; i++)
			if (r->s[i].closed && (slot == REC_MAX_SESSIONS ||
					       r->s[i].created_ns < r->s[slot].created_ns))
				slot = i;
		if (slot == REC_MAX_SESSIONS) {
			r->over_limit++;
			return NULL;
		}
		session_free(&r->s[slot]);
	}
	s = &r->s[slot];
	memset(s, 0, sizeof(*s));
	rec_addr_str(from, peer, sizeof(peer));
	if (cap_init(&s->cap, r->o.outdir, id, peer, rec_wall_ns())) {
		r->over_limit++;
		return NULL;
	}
	s->used = true;
	s->peer = *from;
	s->id = id;
	s->created_ns = now;
	s->last_rx_ns = now;
	r->nsessions++;
	if (!r->o.quiet) {
		if (r->drawn)
			fputs("\r\033[K", stderr);
		r->drawn = false;
		fprintf(stderr, "tracevisor record: new session %016" PRIx64 " from %s\n", id, peer);
	}
	return s;
}

static bool session_feed(struct rec *r, struct rec_session *s, const uint8_t *buf, size_t len,
			 const struct sockaddr_in *from);
static void session_count(struct rec_session *s, const uint8_t *buf, size_t len, uint64_t now);

/*
 * --auth (docs/PROTOCOL.md, "With a key"): every datagram is the protocol
 * v1 datagram, then (HELLO only) the machine's nonce, then the trailer
 * (dauth.h).  A HELLO's tag is under the key derived with a zero receiver
 * nonce: only a HELLO that carries it opens a session, which then draws
 * its own nonce and session key; every other datagram must carry a tag
 * under that session key and a packet number not seen before.  A session
 * is verified at its first such datagram (the machine proved it has the
 * key and got our HELLO_ACK), so a replayed HELLO holds an evictable slot
 * only.  The tag, not the source address, says who sent it: a verified
 * session follows its machine to a new address.
 */
static void auth_datagram(struct rec *r, const uint8_t *buf, size_t len,
			  const struct sockaddr_in *from, uint64_t now, struct rec_session *s)
{
	static const uint8_t zero[DAUTH_NONCE_LEN];
	bool hello = buf[5] == TVP_HELLO;
	size_t hl = tvh_le16(buf + 6);
	uint64_t id = tvh_le64(buf + 8);

	if (hl < sizeof(struct tvp_hdr) || hl > TVP_MAX_DATAGRAM ||
	    len != hl + (hello ? DAUTH_NONCE_LEN : 0) + DAUTH_TRAILER_LEN) {
		r->unsealed++;
		return;
	}
	if (hello) {
		uint8_t kh[SIPHASH_KEY_LEN];
		struct dauth_window w;

		memset(&w, 0, sizeof(w));
		dauth_derive(r->o.key, r->o.keylen, id, buf + hl, zero, kh);
		if (dauth_open(buf, len, kh, &w, NULL) < 0) {
			r->bad_tag++;
			return;
		}
		if (s && memcmp(s->nonce_m, buf + hl, DAUTH_NONCE_LEN)) {
			r->foreign++;        /* another HELLO for this id: not this boot's */
			return;
		}
		if (!s) {
			s = session_new(r, buf, hl, id, from, now);
			if (!s)
				return;
			memcpy(s->nonce_m, buf + hl, DAUTH_NONCE_LEN);
			if (getrandom(s->nonce_r, sizeof(s->nonce_r), 0) != (ssize_t)sizeof(s->nonce_r))
				for (unsigned i = 0; i < DAUTH_NONCE_LEN; i++)   /* no entropy source */
					s->nonce_r[i] = (uint8_t)(mono_ns() >> (8 * (i % 8))) ^ (uint8_t)i;
			dauth_derive(r->o.key, r->o.keylen, id, s->nonce_m, s->nonce_r, s->ks);
		}
	} else {
		int e = s ? dauth_open(buf, len, s->ks, &s->win, NULL) : DAUTH_ERR_TAG;

		if (e < 0) {
			if (e == DAUTH_ERR_REPLAY)
				r->replayed++;
			else
				r->bad_tag++;
			return;
		}
		s->peer = *from;             /* authentic: wherever the machine is now */
	}
	s->rx_peer += len;
	if (!session_feed(r, s, buf, hl, from))
		return;
	if (!hello && !s->verified) {
		s->verified = true;
		r->nverified++;
	}
	session_count(s, buf, hl, now);
}

/* A datagram from the network: never trusted. */
static void on_datagram(struct rec *r, const uint8_t *buf, size_t len,
			const struct sockaddr_in *from, uint64_t now)
{
	struct rec_session *s;
	uint64_t id;

	r->datagrams++;
	r->bytes += len;
	if (len < sizeof(struct tvp_hdr) || tvh_le32(buf) != TVP_MAGIC) {
		r->rejected[len < sizeof(struct tvp_hdr) ? -PROTO_ERR_SHORT : -PROTO_ERR_MAGIC]++;
		return;
	}
	id = tvh_le64(buf + 8);
	s = id ? open_session(r, id) : NULL;
	if (r->o.auth) {
		auth_datagram(r, buf, len, from, now, s);
		return;
	}
	if (s && !same_addr(&s->peer, from)) {
		struct proto_msg m;

		/*
		 * The id travels in clear: another source may only replace a
		 * session that never said HELLO, and only with a HELLO.  A
		 * verified session is never renamed or retargeted.
		 */
		if (s->verified || buf[5] != TVP_HELLO || proto_decode(buf, len, &m)) {
			r->foreign++;
			return;
		}
		session_discard(r, s);
		s = NULL;
	}
	if (!s) {
		s = session_new(r, buf, len, id, from, now);
		if (!s)
			return;
	}
	s->rx_peer += len;
	if (!session_feed(r, s, buf, len, from))
		return;
	if (buf[5] == TVP_HELLO && !s->verified) {
		s->verified = true;   /* answered with a HELLO_ACK to this address */
		r->nverified++;
	}
	session_count(s, buf, len, now);
}

/* recv_feed for s; false when it refused the datagram (counted). */
static bool session_feed(struct rec *r, struct rec_session *s, const uint8_t *buf, size_t len,
			 const struct sockaddr_in *from)
{
	int err;

	s->addr = addr_token(from);
	r->cur = s;
	err = recv_feed(r->rx, buf, len, s->addr);
	r->cur = NULL;
	if (err == PROTO_ERR_TYPE) {
		r->wrong_direction++;
		return false;
	}
	if (err) {
		r->rejected[err < 0 && err > -PROTO_ERR_COUNT ? -err : 0]++;
		return false;
	}
	return true;
}

static void session_count(struct rec_session *s, const uint8_t *buf, size_t len, uint64_t now)
{
	s->last_rx_ns = now;
	s->datagrams++;
	s->bytes += len;
	if (buf[5] == TVP_DATA || buf[5] == TVP_PT) {
		uint32_t cpu = tvh_le16(buf + 16) & TVP_STREAM_CPU_MASK;

		if (cpu < RECV_MAX_CPUS && buf[5] == TVP_DATA)
			s->cpu[cpu].datagrams++;
		else if (cpu < RECV_MAX_CPUS)
			s->cpu[cpu].pt_datagrams++;
	}
}

static uint64_t session_nacks(const struct rec_session *s)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < RECV_MAX_CPUS; i++)
		n += s->cpu[i].nack_reqs;
	return n;
}

/* ---- progress ------------------------------------------------------------------ */

static void totals(const struct rec *r, uint64_t *records, uint64_t *lost, uint64_t *nacks)
{
	*records = *lost = *nacks = 0;
	for (unsigned i = 0; i < REC_MAX_SESSIONS; i++) {
		const struct rec_session *s = &r->s[i];

		if (!s->used)
			continue;
		*records += s->cap.records;
		*lost += s->cap.lost;
		*nacks += session_nacks(s);
	}
}

static uint64_t rejected_total(const struct rec *r)
{
	uint64_t t = r->wrong_direction;

	for (int i = 0; i < PROTO_ERR_COUNT; i++)
		t += r->rejected[i];
	return t;
}

static void progress(struct rec *r, uint64_t now, bool force)
{
	uint64_t records, lost, nacks, dt;
	double rps, mbps;
	char a[16], b[16];

	if (r->o.quiet)
		return;
	if (r->tty ? now - r->last_status < 500000000ull && !force
		   : now - r->last_status < (uint64_t)(r->o.status_every * 1e9) && !force)
		return;
	totals(r, &records, &lost, &nacks);
	dt = now - r->prev_t;
	rps = dt ? (double)(records - r->prev_records) * 1e9 / (double)dt : 0;
	mbps = dt ? (double)(r->bytes - r->prev_bytes) * 1e3 / (double)dt : 0;
	rec_human(a, sizeof(a), (double)records);
	rec_human(b, sizeof(b), rps);
	if (r->tty)
		fputs("\r\033[K", stderr);
	fprintf(stderr, "recording: %u session%s, %s records (%s/s), %.1f MB (%.2f MB/s), "
		"%" PRIu64 " retransmit requests, %" PRIu64 " lost, %" PRIu64 " rejected",
		open_sessions(r), open_sessions(r) == 1 ? "" : "s", a, b, (double)r->bytes / 1e6,
		mbps, nacks, lost, rejected_total(r));
	if (!r->tty)
		fputc('\n', stderr);
	r->drawn = r->tty;
	fflush(stderr);
	r->last_status = now;
	r->prev_t = now;
	r->prev_records = records;
	r->prev_bytes = r->bytes;
}

static void print_receiver_summary(const struct rec *r, FILE *f, uint64_t elapsed_ns)
{
	static const char *const names[PROTO_ERR_COUNT] = {
		[0] = "other", [-PROTO_ERR_SHORT] = "short", [-PROTO_ERR_MAGIC] = "magic",
		[-PROTO_ERR_VERSION] = "version", [-PROTO_ERR_TYPE] = "type",
		[-PROTO_ERR_LENGTH] = "length", [-PROTO_ERR_CRC] = "crc",
		[-PROTO_ERR_SESSION] = "session", [-PROTO_ERR_STREAM] = "stream",
		[-PROTO_ERR_FLAGS] = "flags", [-PROTO_ERR_FIELD] = "field",
		[-PROTO_ERR_RECORDS] = "records",
	};
	struct rusage ru;
	double cpu = 0;

	if (!getrusage(RUSAGE_SELF, &ru))
		cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		      (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	fprintf(f, "receiver: %" PRIu64 " datagrams, %" PRIu64 " bytes in %.1f s, "
		"%u session%s, cpu %.2f s (%.3f s/MB)\n", r->datagrams, r->bytes,
		(double)elapsed_ns / 1e9, r->nsessions, r->nsessions == 1 ? "" : "s", cpu,
		r->bytes ? cpu / ((double)r->bytes / 1e6) : 0.0);
	fprintf(f, "rejected: %" PRIu64, rejected_total(r));
	for (int i = 0; i < PROTO_ERR_COUNT; i++)
		if (r->rejected[i])
			fprintf(f, " %s=%" PRIu64, names[i] ? names[i] : "?", r->rejected[i]);
	fprintf(f, " wrong-direction=%" PRIu64 "; not taken: over-limit=%" PRIu64 " late=%" PRIu64
		" foreign=%" PRIu64 " evicted=%" PRIu64 "; amplification-limited=%" PRIu64
		"; send-errors=%" PRIu64 "\n", r->wrong_direction, r->over_limit, r->late,
		r->foreign, r->evicted, r->amp_limited, r->send_errors);
	if (r->o.auth)
		fprintf(f, "authenticated data path: unsealed=%" PRIu64 " bad-tag=%" PRIu64
			" replayed=%" PRIu64 "\n", r->unsealed, r->bad_tag, r->replayed);
}

/* ---- main loop ----------------------------------------------------------------- */

static int rec_socket(struct rec *r)
{
	int one = 1, sz = r->o.rcvbuf;
	char a[64];

	r->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (r->fd < 0) {
		fprintf(stderr, "tracevisor record: socket: %s\n", strerror(errno));
		return -TVH_ERR_IO;
	}
	setsockopt(r->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* Bursts of a fast sender: a large buffer; SO_RCVBUFFORCE needs root. */
	if (setsockopt(r->fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (bind(r->fd, (const struct sockaddr *)&r->o.listen, sizeof(r->o.listen))) {
		rec_addr_str(&r->o.listen, a, sizeof(a));
		fprintf(stderr, "tracevisor record: bind %s: %s\n", a, strerror(errno));
		close(r->fd);
		return -TVH_ERR_IO;
	}
	return 0;
}

/* recv_flush, at most every REC_ACK_GAP_NS; the main loop comes back for the rest. */
static void rec_ack(struct rec *r, uint64_t now)
{
	if (now - r->last_ack_ns < REC_ACK_GAP_NS) {
		r->ack_due = true;
		return;
	}
	recv_flush(r->rx);
	r->last_ack_ns = now;
	r->ack_due = false;
}

static void rec_drain(struct rec *r, uint64_t now)
{
	static uint8_t bufs[REC_BATCH][TVP_MAX_DATAGRAM + 64];
	struct mmsghdr mh[REC_BATCH];
	struct iovec iov[REC_BATCH];
	struct sockaddr_in from[REC_BATCH];

	for (int rounds = 0; rounds < 64; rounds++) {
		int n;

		for (int i = 0; i < REC_BATCH; i++) {
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = sizeof(bufs[i]);
			memset(&mh[i], 0, sizeof(mh[i]));
			mh[i].msg_hdr.msg_iov = &iov[i];
			mh[i].msg_hdr.msg_iovlen = 1;
			mh[i].msg_hdr.msg_name = &from[i];
			mh[i].msg_hdr.msg_namelen = sizeof(from[i]);
		}
		n = recvmmsg(r->fd, mh, REC_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0) {
			rec_ack(r, now);
			return;
		}
		for (int i = 0; i < n; i++) {
			if (mh[i].msg_hdr.msg_namelen != sizeof(struct sockaddr_in) ||
			    from[i].sin_family != AF_INET)
				continue;
			/* MSG_TRUNC: longer than any datagram of ours, let decode refuse it. */
			on_datagram(r, bufs[i], mh[i].msg_len > sizeof(bufs[i]) ? sizeof(bufs[i]) :
				    mh[i].msg_len, &from[i], now);
		}
		if (n < REC_BATCH) {
			rec_ack(r, now);
			return;
		}
	}
	rec_ack(r, now);
}

static void rec_periodic(struct rec *r, uint64_t now)
{
	bool flush = now - r->last_flush >= REC_FLUSH_NS;

	for (unsigned i = 0; i < REC_MAX_SESSIONS; i++) {
		struct rec_session *s = &r->s[i];

		if (!s->used || s->closed)
			continue;
		if (s->ctl_len > 0 && now >= s->ctl_next_ns)
			ctl_send(r, s, now);
		if (!s->cap.f && !s->cap.closed &&
		    (now - s->created_ns >= REC_BEGIN_NS || s->cap.pending >= REC_BEGIN_BYTES))
			cap_result(s, cap_begin(&s->cap));
		if (flush) {
			int err = cap_flush(&s->cap);

			if (err && !s->cap_err)
				s->cap_err = err;
		}
		if (r->o.idle > 0 && now - s->last_rx_ns >= (uint64_t)(r->o.idle * 1e9)) {
			if (session_empty(s))
				session_discard(r, s);
			else
				session_finish(r, s, true);
		}
	}
	if (flush)
		r->last_flush = now;
	progress(r, now, false);
}

static int rec_run(struct rec *r)
{
	struct sigaction sa, old_int, old_term;
	void (*old_pipe)(int);
	uint64_t end;
	char a[64];
	int ret;

	r->rx = calloc(1, sizeof(*r->rx));
	if (!r->rx) {
		fprintf(stderr, "tracevisor record: out of memory\n");
		return -TVH_ERR_NOMEM;
	}
	/* CONTROL counters above any earlier run's: wall-clock nanoseconds. */
	recv_init(r->rx, &rec_recv_ops, r, rec_wall_ns());
	recv_set_ack_every(r->rx, REC_ACK_EVERY);
	ret = rec_socket(r);
	if (ret) {
		free(r->rx);
		return ret;
	}
	rec_stop = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = rec_on_signal;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	old_pipe = signal(SIGPIPE, SIG_IGN);
	r->tty = isatty(STDERR_FILENO);
	r->t0 = r->last_status = r->last_flush = r->prev_t = mono_ns();
	end = r->o.duration > 0 ? r->t0 + (uint64_t)(r->o.duration * 1e9) : UINT64_MAX;
	if (!r->o.quiet) {
		rec_addr_str(&r->o.listen, a, sizeof(a));
		fprintf(stderr, "tracevisor record: listening on udp %s, captures in %s/\n", a,
			r->o.outdir);
	}
	while (!rec_stop) {
		struct pollfd pf = { .fd = r->fd, .events = POLLIN };
		uint64_t now;

		if (poll(&pf, 1, r->ack_due ? 1 : REC_TICK_MS) < 0 && errno != EINTR) {
			fprintf(stderr, "tracevisor record: poll: %s\n", strerror(errno));
			ret = -TVH_ERR_IO;
			break;
		}
		now = mono_ns();
		if (pf.revents & POLLIN)
			rec_drain(r, now);
		else if (r->ack_due)
			rec_ack(r, now);
		rec_periodic(r, now);
		if (now >= end)
			break;
		if (r->o.machines && r->nclosed >= r->o.machines)
			break;
	}
	/* Everything received goes to disk before we say where it is. */
	rec_drain(r, mono_ns());
	if (r->drawn)
		fputs("\r\033[K", stderr);
	r->drawn = false;
	for (unsigned i = 0; i < REC_MAX_SESSIONS; i++) {
		if (r->s[i].used && !r->s[i].closed && session_empty(&r->s[i]))
			session_discard(r, &r->s[i]);
		session_finish(r, &r->s[i], true);
		if (r->s[i].cap_err && !ret)
			ret = r->s[i].cap_err;
	}
	if (!r->o.quiet || ret)
		print_receiver_summary(r, stdout, mono_ns() - r->t0);
	if (!r->nsessions && !r->o.quiet)
		printf("no session: nothing written\n");
	for (unsigned i = 0; i < REC_MAX_SESSIONS; i++)
		if (r->s[i].used)
			session_free(&r->s[i]);
	close(r->fd);
	free(r->rx);
	/* A library call: the caller's signal dispositions come back. */
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	signal(SIGPIPE, old_pipe);
	return ret;
}

void tvh_record_opts_init(struct tvh_record_opts *o)
{
	memset(o, 0, sizeof(*o));
	rec_parse_addr("0.0.0.0", REC_DEFAULT_PORT, &o->listen);
	o->outdir = ".";
	o->status_every = 10;
	o->rcvbuf = REC_RCVBUF;
}

int tvh_record_run(const struct tvh_record_opts *o)
{
	struct rec *r = calloc(1, sizeof(*r));   /* large: not on the stack */
	int ret;

	if (!r) {
		fprintf(stderr, "tracevisor record: out of memory\n");
		return -TVH_ERR_NOMEM;
	}
	r->o = *o;
	ret = rec_run(r);
	free(r);
	return ret;
}
