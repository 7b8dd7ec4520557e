/* SPDX-License-Identifier: MIT */
/*
 * export.c - the export protocol's sender (net/export.h is the contract,
 * docs/PROTOCOL.md the protocol).  Freestanding: no allocation, no
 * floating point, only string.h.
 */
#include "net/export.h"

#include <string.h>

/* --- small helpers ----------------------------------------------------------------- */

static bool seq_before(uint64_t a, uint64_t b)
{
	return tvp_seq_before(a, b);
}

static uint64_t win_end(const struct export_win *w)
{
	return w->first_seq + w->count;
}

/* ms milliseconds in TSC ticks, integer only and without overflow for sane hz. */
static uint64_t ms_ticks(uint64_t hz, uint64_t ms)
{
	return hz / 1000u * ms + hz % 1000u * ms / 1000u;
}

/* us microseconds in TSC ticks. */
static uint64_t us_ticks(uint64_t hz, uint64_t us)
{
	return hz / 1000000u * us + hz % 1000000u * us / 1000000u;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * Sealed (docs/PROTOCOL.md, "With a key"): the encoded datagram in
 * e->dgram[0..len) gets the trailer, a HELLO its nonce first and the tag
 * under Kh, everything else the tag under Ks.  Returns the sealed length,
 * or PROTO_ERR_NOSPC (cannot happen: every payload was cut to fit).
 */
static int seal(struct exporter *e, size_t len)
{
	struct export_seal *a = &e->seal;
	const uint8_t *key = a->ks;
	int n;

	if (e->dgram[5] == TVP_HELLO) {
		if (len + DAUTH_NONCE_LEN > sizeof(e->dgram))
			return PROTO_ERR_NOSPC;
		memcpy(e->dgram + len, e->cfg.nonce_m, DAUTH_NONCE_LEN);
		len += DAUTH_NONCE_LEN;
		key = a->kh;
	}
	if (len + DAUTH_TRAILER_LEN > TVP_MAX_DATAGRAM)
		return PROTO_ERR_NOSPC;
	n = dauth_seal(e->dgram, len, sizeof(e->dgram), key, ++a->tx_pn);
	return n > 0 ? n : PROTO_ERR_NOSPC;
}

static int tx(struct exporter *e, int len)
{
	if (len <= 0)
		return len ? len : PROTO_ERR_INVAL;
	if (e->seal.on) {
		len = seal(e, (size_t)len);
		if (len < 0) {
			e->st.tx_errors++;
			return len;
		}
	}
	e->st.datagrams++;
	if (e->cfg.send(e->cfg.send_ctx, e->dgram, (size_t)len)) {
		/*
		 * Counted; the datagram is treated as sent and lost: a NACK or
		 * the timer resends it, and it counts as a loss of this round
		 * trip (a full transmit ring is congestion too).
		 */
		e->st.tx_errors++;
		e->cc.round_lost++;
	}
	return 0;
}

/* --- round-trip time, retransmission timer, congestion window ------------------------ */

/*
 * RFC 6298 2.2/2.3 with alpha 1/8, beta 1/4, kept scaled (srtt8 = 8 SRTT,
 * rttvar4 = 4 RTTVAR) so that small tick counts keep their precision;
 * RTO = SRTT + max(G, 4 RTTVAR) with G one tick, clamped (2.4, 2.5).
 * Only datagrams sent once give samples (Karn's rule, section 3).
 */
static void rtt_sample(struct exporter *e, uint64_t r)
{
	struct export_cc *k = &e->cc;
	uint64_t rto;

	if (!k->samples) {
		k->srtt8 = r * 8;
		k->rttvar4 = r * 2;
	} else {
		uint64_t srtt = k->srtt8 >> 3;
		uint64_t d = srtt > r ? srtt - r : r - srtt;

		k->srtt8 = k->srtt8 - srtt + r;
		k->rttvar4 = k->rttvar4 - (k->rttvar4 >> 2) + d;
	}
	k->samples++;
	rto = (k->srtt8 >> 3) + (k->rttvar4 ? k->rttvar4 : 1);
	if (rto < e->cfg.rto_min_ticks)
		rto = e->cfg.rto_min_ticks;
	if (rto > e->cfg.rto_max_ticks)
		rto = e->cfg.rto_max_ticks;
	k->rto = rto;
}

/* A stream's RTO after backoff doublings (RFC 6298 5.5), at most rto_max. */
static uint64_t stream_rto(const struct exporter *e, uint32_t backoff)
{
	uint64_t t = e->cc.rto;

	for (uint32_t i = 0; i < backoff && t < e->cfg.rto_max_ticks; i++)
		t *= 2;
	return t < e->cfg.rto_max_ticks ? t : e->cfg.rto_max_ticks;
}

/*
 * Datagrams in flight, all streams (LOSS notices included): those the
 * receiver has not reported holding (the "pipe" of RFC 6675), so that
 * a hole being repaired does not stop new data, whose ACKs carry the
 * NACKs that find a lost resend.
 */
static uint32_t inflight(const struct exporter *e)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < e->ncpus; i++)
		n += e->s[i].nwin - e->s[i].nsacked + e->pt[i].nwin - e->pt[i].nsacked;
	return n;
}

/*
 * The ACK's missing ranges along a window's entries, both ascending and
 * apart (one merge walk, not entries x ranges): *k is the first range
 * that ends after first.  Does [first, end) touch a missing range?
 */
static bool ack_named(const struct proto_msg *m, uint16_t *k, uint64_t first, uint64_t end)
{
	const struct tvp_range *r = m->u.ack.ranges;
	uint16_t n = m->u.ack.a.nranges;

	while (*k < n && !seq_before(first, r[*k].end))
		(*k)++;
	return *k < n && seq_before(r[*k].first, end);
}

/*
 * Does the receiver hold [first, end)?  Yes when it lies below what the
 * ACK's ranges cover (highest, or the end of the last range when the
 * list was cut at TVP_ACK_MAX_RANGES) and touches no missing range.
 */
static bool ack_holds(const struct proto_msg *m, uint16_t *k, uint64_t first, uint64_t end)
{
	const struct tvp_ack *a = &m->u.ack.a;
	uint64_t limit = a->nranges >= TVP_ACK_MAX_RANGES ? m->u.ack.ranges[a->nranges - 1].end
							  : a->highest;

	return !ack_named(m, k, first, end) && !seq_before(limit, end);
}

/*
 * End of a round trip: halve the window when more than 1/EXPORT_LOSS_FRAC
 * of what was sent in it was lost (RFC 5681 3.1's multiplicative
 * decrease, at most once per round trip).  A link that drops a few
 * percent at random keeps its window; an overrun buffer, which drops
 * everything beyond its size, crosses the threshold at once.
 */
static void cc_round(struct exporter *e, uint64_t now)
{
	struct export_cc *k = &e->cc;
	uint64_t len = k->samples ? k->srtt8 >> 3 : e->cfg.ack_ticks;

	if (e->cfg.fixed_timers || now - k->round_start < (len ? len : 1))
		return;
	/*
	 * A rate from fewer than EXPORT_LOSS_SAMPLE datagrams is noise (3 of
	 * 20 is no 15% loss; 9 of 64 happens to a 5% link every 60 rounds):
	 * keep counting over more round trips, unless the losses alone
	 * already say more than 1/EXPORT_LOSS_FRAC of such a sample (an
	 * overrun buffer: react within the round trip).
	 */
	if (k->round_sent < EXPORT_LOSS_SAMPLE && k->round_lost < EXPORT_LOSS_SAMPLE / EXPORT_LOSS_FRAC)
		return;
	if ((uint64_t)k->round_lost * EXPORT_LOSS_FRAC > k->round_sent) {
		k->ssthresh = k->cwnd / 2 > EXPORT_CWND_MIN ? k->cwnd / 2 : EXPORT_CWND_MIN;
		k->cwnd = k->ssthresh;
		k->ca_acc = 0;
		k->decreases++;
	}
	k->round_start = now;
	k->round_sent = k->round_lost = 0;
}

/* n datagrams newly acknowledged: slow start, then +1 per window (RFC 5681 3.1). */
static void cc_acked(struct exporter *e, uint32_t n)
{
	struct export_cc *k = &e->cc;

	/* Application-limited: the window was not tested, do not grow it (RFC 7661). */
	if (e->cfg.fixed_timers || !n || !k->cwnd_full)
		return;
	if (k->cwnd < k->ssthresh) {
		k->cwnd += n;
	} else {
		k->ca_acc += n;
		while (k->ca_acc >= k->cwnd) {
			k->ca_acc -= k->cwnd;
			k->cwnd++;
		}
	}
	if (k->cwnd > EXPORT_WINDOW_MAX)
		k->cwnd = EXPORT_WINDOW_MAX;
}

/* A retransmission timer expired (RFC 5681 3.1, equation 4; cwnd to the minimum). */
static void cc_timeout(struct exporter *e, uint64_t now)
{
	struct export_cc *k = &e->cc;
	uint32_t half = inflight(e) / 2;

	k->timeouts++;
	(void)now;
	k->ssthresh = half > EXPORT_CWND_MIN ? half : EXPORT_CWND_MIN;
	k->cwnd = EXPORT_CWND_MIN;
	k->ca_acc = 0;
	k->round_lost++;
}

/* Acknowledged progress on a stream: the timer restarts (RFC 6298 5.3), back-off ends. */
static void timer_progress(const struct exporter *e, uint64_t *rto_at, uint32_t *backoff,
			   uint32_t nwin, uint64_t now)
{
	*backoff = 0;
	*rto_at = 0;
	if (nwin)
		*rto_at = now + stream_rto(e, 0) ?: 1;   /* never 0: 0 is "not running" */
}

/* A datagram went out: the stream's timer runs if it did not (RFC 6298 5.1). */
static void timer_arm(const struct exporter *e, uint64_t *rto_at, uint32_t backoff, uint64_t now)
{
	if (!*rto_at)
		*rto_at = now + stream_rto(e, backoff) ?: 1;   /* never 0: 0 is "not running" */
}

/*
 * The coalescing rule for a stream with fewer unsent bytes than fill a
 * datagram: send them now when nothing of the stream is in flight (as
 * Nagle's algorithm, RFC 896: the receiver answers at once) or when they
 * have waited coalesce_ticks; else hold them for more to come.
 */
static bool partial_ok(const struct exporter *e, uint32_t nwin, bool *pend, uint64_t *since,
		       uint64_t now)
{
	if (e->cfg.fixed_timers || nwin == 0)
		return true;
	if (!*pend) {
		*pend = true;
		*since = now;
	}
	return now - *since >= e->cfg.coalesce_ticks;
}

static uint32_t win_cap(const struct exporter *e)
{
	return e->cfg.fixed_timers ? EXPORT_WINDOW : EXPORT_WINDOW_MAX;
}

static uint64_t ring_next_seq(const struct tv_trace_ring *r)
{
	return __atomic_load_n(&r->next_seq, __ATOMIC_ACQUIRE);
}

/* --- init --------------------------------------------------------------------------- */

int export_init(struct exporter *e, const struct export_config *cfg, uint32_t ncpus,
		uint64_t now_tsc)
{
	if (!e || !cfg || !cfg->send || cfg->session == 0 || cfg->tsc_hz == 0 ||
	    ncpus == 0 || ncpus > EXPORT_MAX_CPUS || cfg->keylen > EXPORT_KEY_MAX ||
	    (!cfg->key && cfg->keylen) || cfg->data_keylen > EXPORT_KEY_MAX ||
	    (!cfg->data_key && cfg->data_keylen))
		return PROTO_ERR_INVAL;
	memset(e, 0, sizeof(*e));
	e->cfg = *cfg;
	if (cfg->keylen)
		memcpy(e->key, cfg->key, cfg->keylen);
	e->cfg.key = e->key;
	e->seal.data_max = TVP_DATA_MAX_RECORDS;
	e->seal.pt_max = TVP_PT_MAX_PAYLOAD;
	if (cfg->data_keylen) {
		static const uint8_t zero[DAUTH_NONCE_LEN];

		e->seal.on = true;
		memcpy(e->seal.key, cfg->data_key, cfg->data_keylen);
		e->seal.keylen = cfg->data_keylen;
		/* The HELLO's key: the receiver's nonce is not known yet (zero). */
		dauth_derive(e->seal.key, e->seal.keylen, cfg->session, cfg->nonce_m, zero,
			     e->seal.kh);
		e->seal.data_max = EXPORT_SEALED_DATA_MAX;
		e->seal.pt_max = EXPORT_SEALED_PT_MAX;
	}
	e->cfg.data_key = e->seal.key;
	if (!e->cfg.hello_ticks)
		e->cfg.hello_ticks = ms_ticks(cfg->tsc_hz, EXPORT_HELLO_MS);
	if (!e->cfg.heartbeat_ticks)
		e->cfg.heartbeat_ticks = ms_ticks(cfg->tsc_hz, EXPORT_HEARTBEAT_MS);
	if (!e->cfg.ack_ticks)
		e->cfg.ack_ticks = ms_ticks(cfg->tsc_hz, EXPORT_ACK_MS);
	if (!e->cfg.rto_min_ticks)
		e->cfg.rto_min_ticks = us_ticks(cfg->tsc_hz, EXPORT_RTO_MIN_US);
	if (!e->cfg.rto_min_ticks)
		e->cfg.rto_min_ticks = 1;
	if (!e->cfg.rto_max_ticks)
		e->cfg.rto_max_ticks = ms_ticks(cfg->tsc_hz, EXPORT_RTO_MAX_MS);
	if (e->cfg.rto_max_ticks < e->cfg.rto_min_ticks)
		e->cfg.rto_max_ticks = e->cfg.rto_min_ticks;
	if (!e->cfg.coalesce_ticks)
		e->cfg.coalesce_ticks = us_ticks(cfg->tsc_hz, EXPORT_COALESCE_US);
	e->cc.rto = e->cfg.ack_ticks;
	e->cc.cwnd = EXPORT_CWND_INIT;
	e->cc.ssthresh = EXPORT_WINDOW_MAX;
	e->cc.round_start = now_tsc;
	e->cfg.hello.cpu_count = (uint16_t)ncpus;
	if (cfg->keylen)
		e->cfg.hello.caps |= TVP_CAP_CONTROL;
	e->ncpus = ncpus;
	e->next_hello = now_tsc;
	e->next_heartbeat = now_tsc + e->cfg.heartbeat_ticks;
	for (uint32_t i = 0; i < EXPORT_MAX_CPUS; i++)
		e->s[i].c.cpu = i;
	return 0;
}

int export_attach(struct exporter *e, uint32_t cpu, struct tv_trace_ring *ring)
{
	struct export_stream *s;
	int err;

	if (!e || !ring || cpu >= e->ncpus || e->s[cpu].ring ||
	    trace_ring_validate(ring, (size_t)ring->hdr_size + ring->data_size))
		return PROTO_ERR_INVAL;
	s = &e->s[cpu];
	err = trace_ring_cursor_tail(ring, &s->cur);
	if (err)
		return err;
	s->ring = ring;
	s->start_seq = s->cur.seq;
	s->acked = s->cur.seq;
	s->has_base = false;
	return 0;
}

int export_attach_pt(struct exporter *e, uint32_t cpu, struct byte_ring *ring)
{
	struct export_pt_stream *p;

	if (!e || !ring || !ring->data || !ring->size || (ring->size & (ring->size - 1)) ||
	    cpu >= e->ncpus || e->pt[cpu].ring)
		return PROTO_ERR_INVAL;
	p = &e->pt[cpu];
	memset(p, 0, sizeof(*p));
	/* The tail only moves when we consume: it is where the stream begins. */
	p->start = p->next = byte_ring_tail(ring);
	__atomic_store_n(&p->acked, p->start, __ATOMIC_RELEASE);
	p->c.acked = p->c.head = p->start;
	p->ring = ring;
	e->cfg.hello.caps |= TVP_CAP_PT_STREAM;
	return 0;
}

const struct tvp_hb_cpu *export_counters(const struct exporter *e, uint32_t cpu)
{
	if (!e || cpu >= e->ncpus)
		return NULL;
	return &e->s[cpu].c;
}

const struct export_pt_counters *export_pt_counters(const struct exporter *e, uint32_t cpu)
{
	if (!e || cpu >= e->ncpus || !e->pt[cpu].ring)
		return NULL;
	return &e->pt[cpu].c;
}

/* --- sending window entries ---------------------------------------------------------- */

/* Compact base after records r[0..len): the `to` of a trailing branch. */
static void scan_base(const uint8_t *r, size_t len, bool *has, uint64_t *to)
{
	size_t off = 0;

	while (off + sizeof(struct tv_rec) <= len) {
		uint16_t size = (uint16_t)(r[off + 2] | r[off + 3] << 8);

		if (size < sizeof(struct tv_rec) || size > len - off)
			break;   /* cannot happen: peek hands out whole records */
		if (r[off] == TV_REC_BRANCH && size >= TV_REC_BRANCH_SIZE) {
			*has = true;
			*to = le64(r + off + 16);
		} else if (r[off] == TV_REC_BRANCH_COMPACT && size >= 16) {
			*has = true;
			*to = le64(r + off + 8);
		} else {
			*has = false;
		}
		off += size;
	}
}

static int send_loss(struct exporter *e, uint32_t cpu, struct export_win *w, uint64_t now)
{
	struct export_stream *s = &e->s[cpu];
	struct tvp_loss l = {
		.first_seq = w->first_seq,
		.count = w->count,
		.total = s->c.lost_overwrite,
	};
	uint16_t flags = w->first_seq == s->start_seq ? TVP_LOSS_F_FIRST : 0;

	w->last_tx = now;
	timer_arm(e, &s->rto_at, s->backoff, now);
	return tx(e, proto_encode_loss(e->dgram, sizeof(e->dgram), e->cfg.session,
				       (uint16_t)cpu, flags, &l));
}

/*
 * (Re)send one entry.  DATA is read from the ring again.  Returns 0, 1
 * when its records were overwritten meanwhile (the caller runs loss
 * detection), or a negative error (ring busy or inconsistent: try later).
 */
static int send_entry(struct exporter *e, uint32_t cpu, struct export_win *w,
		      uint64_t now, bool again)
{
	struct export_stream *s = &e->s[cpu];
	struct trace_cursor c = { .pos = w->pos, .seq = w->first_seq };
	struct tvp_data d;
	uint16_t flags = 0;
	size_t len;
	int err;

	if (w->is_loss)
		return send_loss(e, cpu, w, now);
	err = trace_ring_peek(s->ring, &c, e->recs, w->bytes, &len);
	if (err == TRACE_ERR_OVERWRITTEN)
		return 1;
	if (err)
		return err;
	if (len != w->bytes || c.seq - w->first_seq != w->count)
		return TRACE_ERR_RANGE;
	d.first_seq = w->first_seq;
	d.base_to = w->has_base ? w->base_to : 0;
	d.count = (uint16_t)w->count;
	if (w->has_base)
		flags |= TVP_DATA_F_BASE;
	if (w->first_seq == s->start_seq)
		flags |= TVP_DATA_F_FIRST;
	if (again) {
		flags |= TVP_DATA_F_RETRANSMIT;
		s->c.retransmitted += w->count;
		if (w->rtx < UINT8_MAX)
			w->rtx++;
	}
	w->last_tx = now;
	timer_arm(e, &s->rto_at, s->backoff, now);
	return tx(e, proto_encode_data(e->dgram, sizeof(e->dgram), e->cfg.session,
				       (uint16_t)cpu, flags, &d, e->recs, len));
}

/* --- loss detection ------------------------------------------------------------------ */

/* Append a LOSS range to tmp[], merged with a LOSS entry it continues. */
static void add_loss(struct export_win *tmp, uint32_t *n, uint64_t first, uint64_t count)
{
	struct export_win *prev = *n ? &tmp[*n - 1] : NULL;

	if (prev && prev->is_loss && win_end(prev) == first) {
		prev->count += count;
		prev->last_tx = 0;   /* grown: announce again */
		return;
	}
	memset(&tmp[*n], 0, sizeof(tmp[*n]));
	tmp[*n].is_loss = 1;
	tmp[*n].rtx = 1;   /* no RTT sample from a notice */
	tmp[*n].first_seq = first;
	tmp[*n].count = count;
	(*n)++;
}

/*
 * The ring's tail has passed records that were not acknowledged: replace
 * them in the window by LOSS entries (exact ranges), keep what is still
 * in the ring of a partly overwritten datagram as a new DATA entry, and
 * count the cursor's unread records that went too.  New and grown LOSS
 * entries and the split DATA entry are sent at once.
 */
static void detect_loss(struct exporter *e, uint32_t cpu, uint64_t now)
{
	struct export_stream *s = &e->s[cpu];
	struct export_win *tmp = e->tmp;
	struct trace_cursor t;
	uint32_t n = 0;
	bool changed = false;

	if (trace_ring_cursor_tail(s->ring, &t))
		return;   /* busy: next time */
	for (uint32_t i = 0; i < s->nwin; i++) {
		struct export_win *w = &s->win[i];
		uint64_t lost;

		if (w->is_loss) {
			if (n && tmp[n - 1].is_loss && win_end(&tmp[n - 1]) == w->first_seq) {
				tmp[n - 1].count += w->count;
				tmp[n - 1].last_tx = 0;
			} else {
				tmp[n++] = *w;
			}
			continue;
		}
		if (!seq_before(w->first_seq, t.seq)) {
			tmp[n++] = *w;
			continue;
		}
		changed = true;
		lost = seq_before(t.seq, win_end(w)) ? t.seq - w->first_seq : w->count;
		s->c.lost_overwrite += lost;
		add_loss(tmp, &n, w->first_seq, lost);
		if (lost < w->count) {
			/* The rest starts at the tail, never on a compact record. */
			struct export_win *d = &tmp[n++];

			memset(d, 0, sizeof(*d));
			d->first_seq = t.seq;
			d->count = w->count - lost;
			d->pos = t.pos;
			d->bytes = (uint32_t)(w->pos + w->bytes - t.pos);
		}
	}
	if (seq_before(s->cur.seq, t.seq)) {
		uint64_t lost = t.seq - s->cur.seq;

		changed = true;
		s->c.lost_overwrite += lost;
		add_loss(tmp, &n, s->cur.seq, lost);
		s->cur = t;
		s->has_base = false;
	}
	if (!changed)
		return;
	memcpy(s->win, tmp, n * sizeof(tmp[0]));
	s->nwin = n;
	s->nsacked = 0;
	for (uint32_t i = 0; i < n; i++)
		s->nsacked += s->win[i].sacked;
	for (uint32_t i = 0; i < s->nwin; i++)
		if (s->win[i].last_tx == 0 && send_entry(e, cpu, &s->win[i], now, true) == 1)
			s->win[i].last_tx = 0;   /* raced again: next poll */
}

/* --- new data ------------------------------------------------------------------------ */

/* One new DATA datagram from stream cpu: 1 sent, 0 nothing to send, < 0 try later. */
static int send_new(struct exporter *e, uint32_t cpu, uint64_t now)
{
	struct export_stream *s = &e->s[cpu];
	struct trace_cursor c = s->cur;
	struct export_win *w;
	size_t len;
	int err;

	if (s->nwin >= win_cap(e))
		return 0;   /* window full: the ring holds the rest */
	if (!e->cfg.fixed_timers) {
		/* Under OVERWRITE head - pos may exceed the ring: the peek finds out. */
		uint64_t avail = __atomic_load_n(&s->ring->head, __ATOMIC_ACQUIRE) - s->cur.pos;

		if (!avail) {
			s->pend = false;
			return 0;
		}
		if (avail < e->seal.data_max &&
		    !partial_ok(e, s->nwin, &s->pend, &s->pend_since, now))
			return 0;
	}
	err = trace_ring_peek(s->ring, &c, e->recs, e->seal.data_max, &len);
	if (err == TRACE_ERR_OVERWRITTEN) {
		detect_loss(e, cpu, now);
		return -1;
	}
	if (err || len == 0)
		return err ? err : 0;
	s->pend = false;
	if (c.seq == ring_next_seq(s->ring))
		e->st.partial++;   /* all there was */
	w = &s->win[s->nwin++];
	memset(w, 0, sizeof(*w));
	w->first_seq = s->cur.seq;
	w->count = c.seq - s->cur.seq;
	w->pos = s->cur.pos;
	w->bytes = (uint32_t)len;
	w->has_base = s->has_base;
	w->base_to = s->base_to;
	scan_base(e->recs, len, &s->has_base, &s->base_to);
	s->cur = c;
	s->c.sent += w->count;
	/* The bytes are in e->recs already: encode without reading again. */
	{
		struct tvp_data d = {
			.first_seq = w->first_seq,
			.base_to = w->has_base ? w->base_to : 0,
			.count = (uint16_t)w->count,
		};
		uint16_t flags = (w->has_base ? TVP_DATA_F_BASE : 0) |
				 (w->first_seq == s->start_seq ? TVP_DATA_F_FIRST : 0);

		w->last_tx = now;
		timer_arm(e, &s->rto_at, s->backoff, now);
		tx(e, proto_encode_data(e->dgram, sizeof(e->dgram), e->cfg.session,
					(uint16_t)cpu, flags, &d, e->recs, len));
	}
	return 1;
}

/* --- PT streams ----------------------------------------------------------------------- */

static uint64_t pt_win_end(const struct export_pt_win *w)
{
	return w->off + w->len;
}

/*
 * (Re)send one PT entry, read from the ring again.  The bytes cannot be
 * gone: only an ack past them releases them, and the ack removed the
 * entry first.  Returns 0, or TRACE_ERR_RANGE when the ring no longer
 * holds them (another consumer took them: a bug; counted in pt_gone).
 */
static int send_pt_entry(struct exporter *e, uint32_t cpu, struct export_pt_win *w,
			 uint64_t now, bool again)
{
	struct export_pt_stream *p = &e->pt[cpu];
	uint16_t flags = 0;
	size_t n;

	n = byte_ring_peek(p->ring, w->off, e->ptbuf, w->len);
	w->last_tx = now;
	if (n != w->len) {
		e->st.pt_gone++;
		return TRACE_ERR_RANGE;
	}
	if (w->off == p->start)
		flags |= TVP_PT_F_FIRST;
	if (again) {
		flags |= TVP_PT_F_RETRANSMIT;
		p->c.retransmitted += w->len;
		if (w->rtx < UINT16_MAX)
			w->rtx++;
	}
	timer_arm(e, &p->rto_at, p->backoff, now);
	return tx(e, proto_encode_pt_flags(e->dgram, sizeof(e->dgram), e->cfg.session,
					   (uint16_t)cpu, flags, w->off, e->ptbuf, n));
}

/* One new PT datagram from cpu's PT stream: 1 sent, 0 nothing to send. */
static int send_new_pt(struct exporter *e, uint32_t cpu, uint64_t now)
{
	struct export_pt_stream *p = &e->pt[cpu];
	struct export_pt_win *w;
	uint16_t flags;
	size_t n;

	if (p->nwin >= win_cap(e))
		return 0;   /* window full: the ring holds the rest, then refuses */
	if (!e->cfg.fixed_timers) {
		uint64_t avail = byte_ring_head(p->ring) - p->next;

		if (!avail) {
			p->pend = false;
			return 0;
		}
		if (avail < e->seal.pt_max &&
		    !partial_ok(e, p->nwin, &p->pend, &p->pend_since, now))
			return 0;
	}
	n = byte_ring_peek(p->ring, p->next, e->ptbuf, e->seal.pt_max);
	if (!n)
		return 0;
	p->pend = false;
	if (n < e->seal.pt_max)
		e->st.partial++;
	w = &p->win[p->nwin++];
	w->off = p->next;
	w->len = (uint32_t)n;
	w->rtx = 0;
	w->pad = 0;
	w->last_tx = now;
	timer_arm(e, &p->rto_at, p->backoff, now);
	p->next += n;
	p->c.sent += n;
	flags = w->off == p->start ? TVP_PT_F_FIRST : 0;
	tx(e, proto_encode_pt_flags(e->dgram, sizeof(e->dgram), e->cfg.session,
				    (uint16_t)cpu, flags, w->off, e->ptbuf, n));
	return 1;
}

/* Resend PT entries whose ack is overdue, oldest first, a few per call. */
static void resend_overdue_pt(struct exporter *e, uint32_t cpu, uint64_t now)
{
	struct export_pt_stream *p = &e->pt[cpu];
	unsigned sent = 0;

	for (uint32_t i = 0; i < p->nwin && sent < EXPORT_RTX_BURST; i++) {
		if (now - p->win[i].last_tx < e->cfg.ack_ticks)
			continue;
		sent++;
		send_pt_entry(e, cpu, &p->win[i], now, true);
	}
}

static void fill_pt_counters(struct export_pt_stream *p)
{
	p->c.head = byte_ring_head(p->ring);
	p->c.produced = p->c.head - p->start;
	p->c.acked = p->acked;
}

/*
 * An ACK of cpu's PT stream: entries before cum leave the window and
 * their bytes go back to the producer; a partly acknowledged entry keeps
 * its rest; NACK ranges resend the entries they touch.
 */
static void on_ack_pt(struct exporter *e, uint32_t cpu, const struct proto_msg *m,
		      uint64_t now)
{
	struct export_pt_stream *p = &e->pt[cpu];
	const struct tvp_ack *a = &m->u.ack.a;
	uint32_t pop = 0, lost = 0;
	uint16_t k = 0;
	uint64_t sample = 0;
	bool have = false, held_any;

	/* Beyond what was ever sent, or before the stream: not our receiver's state. */
	if (seq_before(p->next, a->cum) || seq_before(a->cum, p->start)) {
		e->st.ignored++;
		return;
	}
	e->st.acks++;
	p->last_ack_tsc = now;
	if (seq_before(p->acked, a->cum)) {
		__atomic_store_n(&p->acked, a->cum, __ATOMIC_RELEASE);
		p->c.acked = a->cum;
		/* The only consumer: the tail is at or before acked; never fails. */
		(void)byte_ring_consume(p->ring, a->cum);
	}
	while (pop < p->nwin && !seq_before(p->acked, pt_win_end(&p->win[pop]))) {
		const struct export_pt_win *w = &p->win[pop];

		/*
		 * Karn: only from datagrams sent once; and not from one an
		 * earlier ACK already reported held (its time since then is
		 * the hole's, not the path's).
		 */
		if (!w->rtx && !w->sacked) {
			sample = now - w->last_tx;
			have = true;
		}
		if (!w->rtx && seq_before(p->rack_xmit, w->last_tx))
			p->rack_xmit = w->last_tx;
		pop++;
	}
	if (pop) {
		memmove(p->win, p->win + pop, (p->nwin - pop) * sizeof(p->win[0]));
		p->nwin -= pop;
	}
	if (p->nwin && seq_before(p->win[0].off, p->acked)) {
		/* Released bytes cannot be read again: keep the rest only. */
		p->win[0].len -= (uint32_t)(p->acked - p->win[0].off);
		p->win[0].off = p->acked;
	}
	/* Nothing held beyond cum (the usual ACK): nothing to mark, unless marks were left. */
	held_any = a->nranges || seq_before(a->cum, a->highest);
	if (!held_any && p->nsacked)
		for (uint32_t i = 0; i < p->nwin; i++)
			p->win[i].sacked = 0;
	p->nsacked = 0;
	for (uint32_t i = 0; held_any && i < p->nwin; i++) {
		struct export_pt_win *w = &p->win[i];
		uint8_t held = ack_holds(m, &k, w->off, pt_win_end(w));

		if (held && !w->sacked && !w->rtx) {   /* first reported now: a sample */
			sample = now - w->last_tx;
			have = true;
		}
		if (held && !w->rtx && seq_before(p->rack_xmit, w->last_tx))
			p->rack_xmit = w->last_tx;
		w->sacked = held;
		p->nsacked += held;
	}
	if (!e->cfg.fixed_timers) {
		if (have)
			rtt_sample(e, sample);
		if (pop) {
			timer_progress(e, &p->rto_at, &p->backoff, p->nwin, now);
			cc_acked(e, pop);
		}
	}
	if (!a->nranges)
		return;
	e->st.nack_ranges += a->nranges;
	k = 0;
	for (uint32_t i = 0; i < p->nwin; i++) {
		struct export_pt_win *w = &p->win[i];

		if (!ack_named(m, &k, w->off, pt_win_end(w)))
			continue;
		if (e->cfg.fixed_timers) {
			/* At most once per quarter ack timeout: every ACK repeats its ranges. */
			if (now - w->last_tx >= e->cfg.ack_ticks / 4)
				send_pt_entry(e, cpu, w, now, true);
			continue;
		}
		/* First NACK: at once; a resend lost too is repair()'s. */
		if (w->rtx)
			continue;
		lost++;
		send_pt_entry(e, cpu, w, now, true);
	}
	e->cc.round_lost += lost;
	e->cc.round_sent += lost;
	cc_round(e, now);
}

/* --- HELLO, heartbeat ------------------------------------------------------------------ */

static void send_hello(struct exporter *e, uint64_t now)
{
	struct tvp_hello h = e->cfg.hello;

	h.hello_seq = e->hello_seq++;
	tx(e, proto_encode_hello(e->dgram, sizeof(e->dgram), e->cfg.session, &h));
	e->next_hello = now + e->cfg.hello_ticks;
}

static void fill_counters(struct export_stream *s)
{
	if (!s->ring)
		return;
	s->c.head_seq = ring_next_seq(s->ring);
	s->c.produced = s->c.head_seq - s->start_seq;
	s->c.acked = s->acked;
	s->c.ring_dropped = __atomic_load_n(&s->ring->lost_records, __ATOMIC_RELAXED);
}

static void send_heartbeat(struct exporter *e, uint64_t now)
{
	struct tvp_hb_cpu cpus[TVP_HB_MAX_CPUS];
	struct tvp_heartbeat h = {
		.tsc = now,
		.ctl_accepted = e->st.ctl_accepted,
		.ctl_bad_auth = e->st.ctl_bad_auth,
		.ctl_replay = e->st.ctl_replay,
		.ctl_bad_session = e->st.ctl_bad_session,
		.ctl_malformed = e->st.ctl_malformed,
		.tx_errors = e->st.tx_errors,
	};

	for (uint32_t first = 0; first < e->ncpus; first += TVP_HB_MAX_CPUS) {
		uint32_t n = e->ncpus - first;

		if (n > TVP_HB_MAX_CPUS)
			n = TVP_HB_MAX_CPUS;
		for (uint32_t i = 0; i < n; i++) {
			fill_counters(&e->s[first + i]);
			cpus[i] = e->s[first + i].c;
		}
		h.hb_seq = e->hb_seq++;
		h.first_cpu = (uint16_t)first;
		h.ncpus = (uint16_t)n;
		tx(e, proto_encode_heartbeat(e->dgram, sizeof(e->dgram), e->cfg.session, &h, cpus));
	}
	e->next_heartbeat = now + e->cfg.heartbeat_ticks;
}

/* --- poll ------------------------------------------------------------------------------ */

/* Resend entries whose ack is overdue, oldest first, a few per call. */
static void resend_overdue(struct exporter *e, uint32_t cpu, uint64_t now)
{
	struct export_stream *s = &e->s[cpu];
	unsigned sent = 0;

	for (uint32_t i = 0; i < s->nwin && sent < EXPORT_RTX_BURST; i++) {
		struct export_win *w = &s->win[i];

		if (now - w->last_tx < e->cfg.ack_ticks)
			continue;
		sent++;
		if (send_entry(e, cpu, w, now, true) == 1) {
			detect_loss(e, cpu, now);
			return;   /* the window changed under i */
		}
	}
}

/*
 * Stream cpu's retransmission timer (RFC 6298 5.4-5.6): on expiry the
 * oldest datagram (records, LOSS notice or PT) goes again, the timer
 * backs off and the congestion window drops to the minimum.
 */
static void expire(struct exporter *e, uint32_t cpu, uint64_t now)
{
	struct export_stream *s = &e->s[cpu];
	struct export_pt_stream *p = &e->pt[cpu];

	if (s->ring && s->rto_at && !seq_before(now, s->rto_at)) {
		s->rto_at = 0;
		if (s->nwin) {
			if (s->backoff < 16)
				s->backoff++;
			cc_timeout(e, now);
			if (send_entry(e, cpu, &s->win[0], now, true) == 1)
				detect_loss(e, cpu, now);
			s->rto_at = 0;
			timer_arm(e, &s->rto_at, s->backoff, now);
		}
	}
	if (p->ring && p->rto_at && !seq_before(now, p->rto_at)) {
		p->rto_at = 0;
		if (p->nwin) {
			if (p->backoff < 16)
				p->backoff++;
			cc_timeout(e, now);
			send_pt_entry(e, cpu, &p->win[0], now, true);
			p->rto_at = 0;
			timer_arm(e, &p->rto_at, p->backoff, now);
		}
	}
}

/*
 * Time-based loss detection (RACK, RFC 8985): a datagram not reported
 * held, sent before one that was (rack_xmit) and at least a round trip
 * plus a quarter (the reordering allowance) ago, is lost; one whose
 * resend has gone unanswered for two round trips and their variation is
 * lost again (a probe, as RFC 8985's TLP, for a window that is full of
 * datagrams held beyond the hole, so that no later send brings news).
 * Each goes again, up to EXPORT_RTX_BURST per stream and poll.  The
 * first NACK of a datagram resends it at once (on_ack).
 */
static bool rack_lost(const struct exporter *e, uint64_t rack_xmit, uint64_t last_tx,
		      uint16_t rtx, uint64_t now)
{
	uint64_t srtt = e->cc.srtt8 >> 3;

	if (!e->cc.samples)
		return false;
	if (seq_before(last_tx, rack_xmit) && now - last_tx >= srtt + srtt / 4 + 1)
		return true;
	return rtx && now - last_tx >= 2 * srtt + e->cc.rttvar4 + 1;
}

static void repair(struct exporter *e, uint32_t cpu, uint64_t now)
{
	struct export_stream *s = &e->s[cpu];
	struct export_pt_stream *p = &e->pt[cpu];
	uint32_t lost = 0, sent = 0;

	for (uint32_t i = 0; p->ring && p->nsacked && i < p->nwin && sent < EXPORT_RTX_BURST; i++) {
		struct export_pt_win *w = &p->win[i];

		if (w->sacked || !rack_lost(e, p->rack_xmit, w->last_tx, w->rtx, now))
			continue;
		sent++;
		send_pt_entry(e, cpu, w, now, true);
	}
	lost += sent;
	sent = 0;
	for (uint32_t i = 0; s->ring && s->nsacked && i < s->nwin && sent < EXPORT_RTX_BURST; i++) {
		struct export_win *w = &s->win[i];

		if (w->sacked || !rack_lost(e, s->rack_xmit, w->last_tx, w->rtx, now))
			continue;
		sent++;
		if (send_entry(e, cpu, w, now, true) == 1) {
			detect_loss(e, cpu, now);
			break;
		}
	}
	lost += sent;
	e->cc.round_lost += lost;
	e->cc.round_sent += lost;
}

int export_poll(struct exporter *e, uint64_t now_tsc)
{
	uint64_t before;
	uint32_t budget = EXPORT_TX_BUDGET, flight = 0;
	bool progress = true, at_cwnd = false, repair_now;

	if (!e)
		return PROTO_ERR_INVAL;
	before = e->st.datagrams;
	/*
	 * Sealed: HELLO only until a HELLO_ACK proves the receiver has the key
	 * and gives the session key; nothing else could be sealed before.
	 */
	if (e->seal.on && !e->seal.verified) {
		if (!seq_before(now_tsc, e->next_hello))
			send_hello(e, now_tsc);
		return (int)(e->st.datagrams - before);
	}
	/* Loss detection by time needs no finer grain than an eighth of a round trip. */
	repair_now = !e->cfg.fixed_timers && e->cc.samples &&
		     !seq_before(now_tsc, e->cc.next_repair);
	if (repair_now)
		e->cc.next_repair = now_tsc + (e->cc.srtt8 >> 6) + 1;
	if (!e->hello_acked && !seq_before(now_tsc, e->next_hello))
		send_hello(e, now_tsc);
	if (!seq_before(now_tsc, e->next_heartbeat))
		send_heartbeat(e, now_tsc);
	for (uint32_t cpu = 0; cpu < e->ncpus; cpu++) {
		if (e->pt[cpu].ring) {
			fill_pt_counters(&e->pt[cpu]);
			if (e->cfg.fixed_timers)
				resend_overdue_pt(e, cpu, now_tsc);
		}
		if (e->s[cpu].ring) {
			detect_loss(e, cpu, now_tsc);
			if (e->cfg.fixed_timers)
				resend_overdue(e, cpu, now_tsc);
		}
		if (repair_now)
			repair(e, cpu, now_tsc);
		if (!e->cfg.fixed_timers)
			expire(e, cpu, now_tsc);
	}
	cc_round(e, now_tsc);
	if (!e->cfg.fixed_timers)
		flight = inflight(e);
	/*
	 * New data, round robin so one busy CPU cannot starve the others; a
	 * CPU's record stream, then its PT stream, from one budget and, but
	 * under fixed_timers, the one congestion window.
	 */
	while (budget && progress && !at_cwnd) {
		progress = false;
		for (uint32_t k = 0; k < e->ncpus && budget; k++) {
			uint32_t cpu = (e->rr + k) % e->ncpus;

			if (!e->cfg.fixed_timers && flight >= e->cc.cwnd) {
				at_cwnd = true;
				break;
			}
			if (e->s[cpu].ring && send_new(e, cpu, now_tsc) > 0) {
				budget--;
				flight++;
				e->cc.round_sent++;
				progress = true;
			}
			if (!e->cfg.fixed_timers && flight >= e->cc.cwnd) {
				at_cwnd = true;
				break;
			}
			if (budget && e->pt[cpu].ring && send_new_pt(e, cpu, now_tsc) > 0) {
				budget--;
				flight++;
				e->cc.round_sent++;
				progress = true;
			}
		}
		e->rr = (e->rr + 1) % e->ncpus;
	}
	/* Whether acks may grow the window: only while it limits (RFC 7661). */
	if (at_cwnd)
		e->cc.cwnd_full = true;
	else if (!progress && flight < e->cc.cwnd / 2)
		e->cc.cwnd_full = false;
	return (int)(e->st.datagrams - before);
}

/* --- input ------------------------------------------------------------------------------ */

static void on_ack(struct exporter *e, uint32_t cpu, const struct proto_msg *m, uint64_t now)
{
	struct export_stream *s = &e->s[cpu];
	const struct tvp_ack *a = &m->u.ack.a;
	uint32_t pop = 0, lost = 0;
	uint16_t k = 0;
	uint64_t sample = 0;
	bool have = false, held_any;

	/* An ack beyond what was ever sent is not from our receiver's state. */
	if (seq_before(s->cur.seq, a->cum) || seq_before(a->cum, s->start_seq)) {
		e->st.ignored++;
		return;
	}
	e->st.acks++;
	s->last_ack_tsc = now;
	if (seq_before(s->acked, a->cum))
		s->acked = a->cum;
	while (pop < s->nwin && !seq_before(a->cum, win_end(&s->win[pop]))) {
		const struct export_win *w = &s->win[pop];

		if (!w->is_loss) {
			struct trace_cursor upto = { .pos = w->pos + w->bytes, .seq = win_end(w) };

			/* STOP: room for the producer; OVERWRITE: nothing to do. */
			(void)trace_ring_consume(s->ring, &upto);
		}
		/* Karn: sent once (never LOSS), and not reported held before (see on_ack_pt). */
		if (!w->rtx && !w->sacked) {
			sample = now - w->last_tx;
			have = true;
		}
		if (!w->rtx && seq_before(s->rack_xmit, w->last_tx))
			s->rack_xmit = w->last_tx;
		pop++;
	}
	if (pop) {
		memmove(s->win, s->win + pop, (s->nwin - pop) * sizeof(s->win[0]));
		s->nwin -= pop;
	}
	held_any = a->nranges || seq_before(a->cum, a->highest);
	if (!held_any && s->nsacked)
		for (uint32_t i = 0; i < s->nwin; i++)
			s->win[i].sacked = 0;
	s->nsacked = 0;
	for (uint32_t i = 0; held_any && i < s->nwin; i++) {
		struct export_win *w = &s->win[i];
		uint8_t held = ack_holds(m, &k, w->first_seq, win_end(w));

		if (held && !w->sacked && !w->rtx) {
			sample = now - w->last_tx;
			have = true;
		}
		if (held && !w->rtx && seq_before(s->rack_xmit, w->last_tx))
			s->rack_xmit = w->last_tx;
		w->sacked = held;
		s->nsacked += held;
	}
	if (!e->cfg.fixed_timers) {
		if (have)
			rtt_sample(e, sample);
		if (pop) {
			timer_progress(e, &s->rto_at, &s->backoff, s->nwin, now);
			cc_acked(e, pop);
		}
	}
	if (!m->u.ack.a.nranges)
		return;
	e->st.nack_ranges += a->nranges;
	detect_loss(e, cpu, now);
	k = 0;
	for (uint32_t i = 0; i < s->nwin; i++) {
		struct export_win *w = &s->win[i];

		if (!ack_named(m, &k, w->first_seq, win_end(w)))
			continue;
		if (e->cfg.fixed_timers) {
			/* At most once per quarter ack timeout: every ACK repeats its ranges. */
			if (now - w->last_tx < e->cfg.ack_ticks / 4)
				continue;
		} else if (w->rtx) {
			continue;   /* resent already: if lost too, repair() finds out */
		}
		lost++;
		if (send_entry(e, cpu, w, now, true) == 1) {
			detect_loss(e, cpu, now);
			break;
		}
	}
	if (!e->cfg.fixed_timers) {
		e->cc.round_lost += lost;
		e->cc.round_sent += lost;
		cc_round(e, now);
	}
}

static int on_control(struct exporter *e, const void *dgram, size_t len,
		      const struct proto_msg *m)
{
	const struct tvp_control *c = &m->u.control.c;
	const struct export_ops *ops = e->cfg.ops;
	struct tvp_control_reply r = { .counter = c->counter, .op = c->op };
	int st = TVP_CTL_EUNSUPPORTED;

	if (proto_control_verify(dgram, len, e->key, e->cfg.keylen)) {
		e->st.ctl_bad_auth++;
		return PROTO_ERR_AUTH;
	}
	if (m->session != e->cfg.session) {
		e->st.ctl_bad_session++;
		return PROTO_ERR_WRONG_SESSION;
	}
	/* Plain comparison: a 64-bit counter from 1 never wraps. */
	if (c->counter <= e->ctl_last) {
		e->st.ctl_replay++;
		/* The receiver missed our reply to exactly this message: say it again. */
		if (c->counter == e->ctl_last &&
		    !memcmp(m->u.control.tag, e->ctl_last_tag, TVP_TAG_LEN))
			tx(e, proto_encode_control_reply(e->dgram, sizeof(e->dgram),
							 e->cfg.session, &e->ctl_reply));
		return PROTO_ERR_REPLAY;
	}
	switch (c->op) {
	case TVP_CTL_NOP:
		st = 0;
		break;
	case TVP_CTL_START:
		if (ops && ops->start)
			st = ops->start(e->cfg.ops_ctx, &m->u.control.arg.cpus) ? TVP_CTL_EFAILED : 0;
		break;
	case TVP_CTL_STOP:
		if (ops && ops->stop)
			st = ops->stop(e->cfg.ops_ctx, &m->u.control.arg.cpus) ? TVP_CTL_EFAILED : 0;
		break;
	case TVP_CTL_FILTERS:
		if (ops && ops->filters)
			st = ops->filters(e->cfg.ops_ctx, &m->u.control.arg.filter) ? TVP_CTL_EFAILED : 0;
		break;
	case TVP_CTL_MARKER:
		if (ops && ops->marker)
			st = ops->marker(e->cfg.ops_ctx, &m->u.control.arg.marker,
					 m->u.control.label) ? TVP_CTL_EFAILED : 0;
		break;
	case TVP_CTL_MEM_WATCH:
		if (ops && ops->mem_watch)
			st = ops->mem_watch(e->cfg.ops_ctx, &m->u.control.arg.mem_watch,
					    m->u.control.label) ? TVP_CTL_EFAILED : 0;
		break;
	default:
		break;
	}
	e->st.ctl_accepted++;
	e->ctl_last = c->counter;
	memcpy(e->ctl_last_tag, m->u.control.tag, TVP_TAG_LEN);
	r.status = st;
	e->ctl_reply = r;
	tx(e, proto_encode_control_reply(e->dgram, sizeof(e->dgram), e->cfg.session, &r));
	return 0;
}

/*
 * Sealed: check the trailer of p[0..len) (docs/PROTOCOL.md, "With a
 * key").  Returns the length of the datagram inside, or an error, counted
 * in the heartbeat's counters (ctl_malformed: no trailer; ctl_bad_auth: a
 * wrong tag, or none to check with before the handshake; ctl_replay: a
 * packet number seen already or too old).  The first HELLO_ACK whose tag
 * verifies under the key derived with its nonce_r makes that the session
 * key.  A CONTROL without a trailer goes on: `tracevisor control` has no
 * session key, and the CONTROL's own HMAC and counter are its check.
 */
static int seal_open(struct exporter *e, const uint8_t *p, size_t len)
{
	struct export_seal *a = &e->seal;
	size_t hl, want;
	int n;

	if (len < sizeof(struct tvp_hdr))
		goto unsealed;
	hl = (size_t)p[6] | (size_t)p[7] << 8;
	if (p[5] == TVP_CONTROL && len == hl)
		return (int)len;
	want = hl + DAUTH_TRAILER_LEN + (p[5] == TVP_HELLO_ACK ? DAUTH_NONCE_LEN : 0);
	if (hl < sizeof(struct tvp_hdr) || hl > TVP_MAX_DATAGRAM || len != want)
		goto unsealed;
	if (p[5] == TVP_HELLO_ACK && !a->verified) {
		uint8_t ks[SIPHASH_KEY_LEN];

		/* One HMAC per candidate: only for this session's id. */
		if (le64(p + 8) != e->cfg.session) {
			e->st.ignored++;
			return PROTO_ERR_WRONG_SESSION;
		}
		dauth_derive(a->key, a->keylen, e->cfg.session, e->cfg.nonce_m, p + hl, ks);
		n = dauth_open(p, len, ks, &a->rx, NULL);
		if (n >= 0) {
			memcpy(a->ks, ks, sizeof(a->ks));
			memcpy(a->nonce_r, p + hl, DAUTH_NONCE_LEN);
			a->verified = true;
		}
	} else if (!a->verified) {
		n = DAUTH_ERR_TAG;   /* no session key yet: nothing can be checked */
	} else {
		n = dauth_open(p, len, a->ks, &a->rx, NULL);
	}
	if (n == DAUTH_ERR_REPLAY) {
		e->st.auth_replay++;
		e->st.ctl_replay++;
		return PROTO_ERR_REPLAY;
	}
	if (n < 0) {
		e->st.auth_bad_tag++;
		e->st.ctl_bad_auth++;
		return PROTO_ERR_AUTH;
	}
	return (int)hl;
unsealed:
	e->st.auth_unsealed++;
	e->st.ctl_malformed++;
	return PROTO_ERR_LENGTH;
}

int export_input(struct exporter *e, const void *dgram, size_t len, uint64_t now_tsc)
{
	struct proto_msg m;
	int err;

	if (!e || !dgram)
		return PROTO_ERR_INVAL;
	if (e->seal.on) {
		err = seal_open(e, dgram, len);
		if (err < 0)
			return err;
		len = (size_t)err;
	}
	err = proto_decode(dgram, len, &m);
	if (err) {
		e->st.ctl_malformed++;
		return err;
	}
	switch (m.type) {
	case TVP_CONTROL:
		return on_control(e, dgram, len, &m);
	case TVP_HELLO_ACK:
		if (m.session != e->cfg.session) {
			e->st.ignored++;
			return PROTO_ERR_WRONG_SESSION;
		}
		e->hello_acked = true;
		return 0;
	case TVP_ACK: {
		uint32_t cpu = m.stream & TVP_STREAM_CPU_MASK;

		if (m.session != e->cfg.session) {
			e->st.ignored++;
			return PROTO_ERR_WRONG_SESSION;
		}
		if (m.stream & TVP_STREAM_PT) {
			if (cpu >= e->ncpus || !e->pt[cpu].ring) {
				e->st.ignored++;
				return PROTO_ERR_STREAM;
			}
			on_ack_pt(e, cpu, &m, now_tsc);
			return 0;
		}
		if (cpu >= e->ncpus || !e->s[cpu].ring) {
			e->st.ignored++;
			return PROTO_ERR_STREAM;
		}
		on_ack(e, cpu, &m, now_tsc);
		return 0;
	}
	default:
		/* Only tracevisor sends the other types: not from a receiver. */
		e->st.ctl_malformed++;
		return PROTO_ERR_TYPE;
	}
}
