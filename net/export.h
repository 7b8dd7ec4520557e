/* SPDX-License-Identifier: MIT */
/*
 * export.h - the sender side of the export protocol (docs/PROTOCOL.md):
 * per-CPU record streams read from the trace rings, a bounded window of
 * unacknowledged datagrams per stream, retransmission on NACK and on ack
 * timeout, LOSS notices for records overwritten before they were acked,
 * HELLO until acknowledged, heartbeats, and authenticated CONTROL
 * messages applied through the hypervisor's callbacks.
 *
 * Pure: no network stack, no clock, no allocation.  Datagrams leave
 * through cfg.send(ctx, buf, len); received ones come in through
 * export_input; time is a TSC value the caller passes in.  The caller
 * owns struct exporter (it is large: put it in reserved memory) and calls
 * everything from one CPU, the one that owns the NIC.  The rings it reads
 * may belong to other CPUs whose producers run at the same time
 * (vmm/trace/ring.h, "Concurrency").
 *
 * Window entries do not hold bytes: each remembers the ring position and
 * sequence number of its first record, its record count and byte size,
 * so a resend reads the ring again.  Under TV_OVERFLOW_STOP the ring's
 * space is released (trace_ring_consume) when the receiver's cumulative
 * ack passes an entry; under OVERWRITE the producer may overwrite records
 * the receiver has not acknowledged yet: the exporter notices (the ring's
 * tail passed them), replaces them in the window by a LOSS entry with the
 * exact sequence range, and sends the LOSS notice until it is acked.
 *
 * PT streams (optional, per CPU: export_attach_pt) read the CPU's PT byte
 * ring (vmm/lib/byte_ring.h, struct byte_ring) the same way: the exporter is
 * its consumer, the traced CPU's drain its producer on another CPU.  New
 * bytes go out as PT datagrams of at most TVP_PT_MAX_PAYLOAD bytes, the
 * window remembers each one's stream offset and length, a resend peeks at
 * the ring again, and the ring's tail moves (byte_ring_consume) only
 * when the receiver's cumulative ack passes bytes: until then they stay,
 * and a producer that runs out of room refuses bytes and counts them (a
 * gap its PT_SYNC records name).  Nothing is ever overwritten, so a PT
 * stream has no LOSS notices.  New PT datagrams share EXPORT_TX_BUDGET
 * with the record streams.
 *
 * Transport (docs/PROTOCOL.md, "Reliability", "Timers"), after TCP:
 *  - full datagrams: a stream sends a datagram shorter than the largest
 *    only when nothing of it is in flight (Nagle) or its unsent data has
 *    waited coalesce_ticks (EXPORT_COALESCE_US), so a byte or record waits
 *    at most that long for company;
 *  - one retransmission timer per stream from the measured round-trip
 *    time (RFC 6298: SRTT, RTTVAR, RTO = SRTT + 4 RTTVAR clamped to
 *    [rto_min, rto_max], Karn's rule: no sample from a resent datagram,
 *    exponential back-off); on expiry only the oldest datagram goes again;
 *  - resends otherwise only on NACK: at once for a datagram never resent,
 *    again only when a round trip has passed since the last resend;
 *  - one congestion window for all streams together (they share the
 *    link; RFC 5681): slow start from EXPORT_CWND_INIT, then +1 datagram
 *    per window acknowledged, halved when more than 1/EXPORT_LOSS_FRAC of
 *    the datagrams sent over a round trip (and at least EXPORT_LOSS_SAMPLE
 *    of them) were lost: random loss below that rate does not shrink it,
 *    so a lossy link converges instead of collapsing; back to
 *    EXPORT_CWND_MIN on a timeout; at most EXPORT_WINDOW_MAX datagrams.
 *    Datagrams the receiver reported holding (beyond a hole) do not
 *    count as in flight (RFC 6675's pipe).
 * Sealed (cfg.data_key; docs/PROTOCOL.md, "With a key"): the HELLO
 * carries cfg.nonce_m and a tag under Kh (the key, the session, nonce_m);
 * nothing else is sent until a HELLO_ACK's tag verifies under the session
 * key Ks derived with its nonce_r; from then on every datagram ends with
 * a packet number and a SipHash-2-4 tag under Ks (net/dauth.h), DATA and
 * PT carry 16 bytes less so that it still fits TVP_MAX_DATAGRAM, and
 * every ACK, HELLO_ACK and CONTROL must carry a right tag and a packet
 * number not seen before (dauth's window), else it is dropped and
 * counted (export_stats).  Without a data key nothing changes: protocol
 * version 1 byte for byte.
 *
 * cfg.fixed_timers selects the first version's transport instead (a fixed
 * window of EXPORT_WINDOW per stream, every entry resent after
 * ack_ticks, partial datagrams at once): the tests written against it
 * keep it.
 *
 * Size: struct exporter is about 2.4 MiB (EXPORT_MAX_CPUS record and PT
 * streams of EXPORT_WINDOW_MAX entries each, 48 and 24 bytes); it lives
 * in the hypervisor's reservation (vmm/layout.c, exporter_bytes).
 *
 * Errors (negative; PROTO_ERR_* from net/proto.h, text from
 * proto_strerror):
 *   PROTO_ERR_INVAL   NULL argument, CPU index out of range or not
 *                     attached, ring not initialised, session 0, key too
 *                     long, no send callback
 *   any proto_decode error: export_input's datagram was malformed (counted
 *                     in ctl_malformed)
 *   PROTO_ERR_AUTH, PROTO_ERR_WRONG_SESSION, PROTO_ERR_REPLAY: a CONTROL
 *                     was refused (counted; nothing changed); sealed, also
 *                     any datagram with a wrong data tag (AUTH) or a
 *                     packet number seen before (REPLAY)
 *   PROTO_ERR_LENGTH  sealed: a datagram without the trailer
 */
#ifndef TV_NET_EXPORT_H
#define TV_NET_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/dauth.h"
#include "net/proto.h"
#include "vmm/lib/byte_ring.h"
#include "vmm/trace/ring.h"

#define EXPORT_MAX_CPUS   128u
#define EXPORT_WINDOW     64u    /* fixed_timers: unacknowledged datagrams per stream */
#define EXPORT_WINDOW_MAX 256u   /* capacity of each stream's window; the congestion
				  * window's bound (<= RECV_POOL: a receiver holds a
				  * whole window out of order) */
#define EXPORT_CWND_INIT  16u    /* congestion window at the start, datagrams */
#define EXPORT_CWND_MIN   2u     /* after a timeout; never below */
#define EXPORT_LOSS_FRAC  8u     /* halve when lost * 8 > sent in a round trip */
#define EXPORT_LOSS_SAMPLE 256u  /* ... counted over at least this many datagrams */
#define EXPORT_KEY_MAX    64u    /* bytes of control key, and of data key */
#define EXPORT_RTX_BURST  8u     /* resends per stream per export_poll on timeout */
#define EXPORT_TX_BUDGET  64u    /* new DATA and PT datagrams per export_poll, all streams */

/*
 * Sealed (a data key): every datagram carries DAUTH_TRAILER_LEN bytes
 * more and still fits TVP_MAX_DATAGRAM, so DATA and PT carry less.
 */
#define EXPORT_SEALED_DATA_MAX ((TVP_DATA_MAX_PAYLOAD - DAUTH_TRAILER_LEN) & ~(size_t)7)
#define EXPORT_SEALED_PT_MAX   (TVP_PT_MAX_PAYLOAD - DAUTH_TRAILER_LEN)
_Static_assert(EXPORT_SEALED_DATA_MAX >= 1024, "the largest record fits a sealed DATA datagram");
_Static_assert(sizeof(struct tvp_hdr) + sizeof(struct tvp_heartbeat) +
	       TVP_HB_MAX_CPUS * sizeof(struct tvp_hb_cpu) + DAUTH_TRAILER_LEN <= TVP_MAX_DATAGRAM,
	       "a full sealed HEARTBEAT fits a datagram");

/* Default timers in milliseconds (docs/PROTOCOL.md, "Timers"). */
#define EXPORT_HELLO_MS     1000u
#define EXPORT_HEARTBEAT_MS 1000u
#define EXPORT_ACK_MS       200u   /* the first RTO, before any sample (fixed_timers: every one) */
#define EXPORT_RTO_MIN_US   50000u /* RTO floor: a receiver descheduled for a while is no loss */
#define EXPORT_RTO_MAX_MS   1000u  /* RTO ceiling, back-off included */
#define EXPORT_COALESCE_US  1000u  /* longest wait of a partial datagram */

/*
 * The hypervisor's handlers for CONTROL ops; NULL: not supported (the
 * reply says TVP_CTL_EUNSUPPORTED).  A handler returns 0 when it applied
 * the op, anything else when it refused it (TVP_CTL_EFAILED).
 */
struct export_ops {
	int (*start)(void *ctx, const struct tvp_ctl_cpus *cpus);
	int (*stop)(void *ctx, const struct tvp_ctl_cpus *cpus);
	int (*filters)(void *ctx, const struct tvp_ctl_filter *f);
	int (*marker)(void *ctx, const struct tvp_ctl_marker *m, const char *label);
	/* MEM_WATCH (arm, remove or label; proto.h): label has w->label_len bytes */
	int (*mem_watch)(void *ctx, const struct tvp_ctl_mem_watch *w, const char *label);
};

/* Returns 0 when the datagram was handed to the network, else non-zero. */
typedef int (*export_send_fn)(void *ctx, const void *buf, size_t len);

struct export_config {
	uint64_t session;            /* random per boot, never 0 */
	uint64_t tsc_hz;             /* for the default timers; non-zero */
	/*
	 * Timer lengths in TSC ticks; 0: the EXPORT_*_MS / _US defaults.
	 * ack_ticks: the first RTO (fixed_timers: the ack timeout).
	 */
	uint64_t hello_ticks, heartbeat_ticks, ack_ticks;
	uint64_t rto_min_ticks, rto_max_ticks, coalesce_ticks;
	bool fixed_timers;           /* the first version's transport (see above) */
	const void *key;             /* control key (copied); keylen 0: no control */
	size_t keylen;
	/*
	 * The authenticated data path (docs/PROTOCOL.md, "With a key"):
	 * data_keylen 0: unsealed (protocol version 1 as it was); else the
	 * pre-shared key K (copied) and this boot's random nonce_m.  Sealed,
	 * the exporter sends HELLO only (sealed under Kh) until a HELLO_ACK
	 * under the session key Ks verifies, then seals every datagram
	 * (packet number + SipHash-2-4 tag) and takes only datagrams whose
	 * tag and packet number pass (an unsealed CONTROL still passes on
	 * its own HMAC, for `tracevisor control`).
	 */
	const void *data_key;
	size_t data_keylen;
	uint8_t nonce_m[DAUTH_NONCE_LEN];
	struct tvp_hello hello;      /* machine metadata; hello_seq is ignored */
	export_send_fn send;
	void *send_ctx;
	const struct export_ops *ops;  /* may be NULL: no op supported */
	void *ops_ctx;
};

/* One unacknowledged datagram. */
struct export_win {
	uint64_t first_seq;
	uint64_t count;              /* records */
	uint64_t pos;                /* DATA: ring position of the first record */
	uint64_t base_to;            /* DATA with has_base: the compact base */
	uint64_t last_tx;            /* TSC of the last (re)send */
	uint32_t bytes;              /* DATA: record bytes */
	uint8_t is_loss;             /* a LOSS entry (no bytes in the ring) */
	uint8_t has_base;
	uint8_t rtx;                 /* resends (saturating; LOSS: 1): Karn's rule */
	uint8_t sacked;              /* the last ACK said the receiver holds it */
};

struct export_stream {
	struct tv_trace_ring *ring;  /* NULL: not attached */
	struct trace_cursor cur;     /* the next record never sent */
	uint64_t start_seq;          /* where the stream began (FIRST) */
	uint64_t base_to;            /* compact base at cur, if has_base */
	bool has_base;
	bool pend;                   /* a partial datagram is held (since pend_since) */
	uint32_t nwin, nsacked;      /* entries; of them held by the receiver */
	struct export_win win[EXPORT_WINDOW_MAX + 4];  /* oldest first; room for a split */
	uint64_t acked;              /* the receiver's cumulative ack */
	uint64_t last_ack_tsc;
	uint64_t rto_at;             /* retransmission timer (TSC), 0: not running */
	uint64_t pend_since;         /* TSC since a partial datagram is held (pend) */
	uint64_t rack_xmit;          /* latest send (TSC) of a datagram sent once and since
				      * acknowledged or held: what was sent before and is
				      * neither is lost (RACK) */
	uint32_t backoff;            /* RTO doublings since the last progress */
	struct tvp_hb_cpu c;         /* counters for the heartbeat */
};

/* One unacknowledged PT datagram: stream bytes off .. off + len - 1. */
struct export_pt_win {
	uint64_t off;
	uint64_t last_tx;            /* TSC of the last (re)send */
	uint32_t len;                /* 1..TVP_PT_MAX_PAYLOAD */
	uint16_t rtx;                /* resends (saturating): Karn's rule */
	uint8_t sacked;              /* the last ACK said the receiver holds it */
	uint8_t pad;
};

/*
 * Counters of a PT stream, in bytes, since it began.  Not on the wire
 * (HEARTBEAT entries are record streams'); the hypervisor logs them.
 */
struct export_pt_counters {
	uint64_t produced;           /* head - start as of the last export_poll */
	uint64_t sent;               /* sent for the first time */
	uint64_t retransmitted;      /* sent again (NACK or ack timeout) */
	uint64_t head;               /* the ring's head as of the last export_poll */
	uint64_t acked;              /* the receiver's cumulative ack */
};

struct export_pt_stream {
	struct byte_ring *ring;   /* NULL: not attached */
	uint64_t start;              /* stream offset where it began (FIRST) */
	uint64_t next;               /* the first byte never sent */
	uint64_t acked;              /* the receiver's cumulative ack (atomic:
				      * other CPUs read it, net_link's waits) */
	uint64_t last_ack_tsc;
	uint64_t rto_at;             /* retransmission timer (TSC), 0: not running */
	uint64_t pend_since;         /* TSC since a partial datagram is held */
	uint64_t rack_xmit;          /* as export_stream's */
	bool pend;                   /* a partial datagram is held */
	uint32_t backoff;            /* RTO doublings since the last progress */
	uint32_t nwin, nsacked;      /* entries; of them held by the receiver */
	struct export_pt_win win[EXPORT_WINDOW_MAX];  /* oldest first, contiguous */
	struct export_pt_counters c;
};

/*
 * Round-trip time and congestion state, one for the link (all streams).
 * Times in TSC ticks; srtt8 and rttvar4 are SRTT * 8 and RTTVAR * 4
 * (RFC 6298's alpha 1/8 and beta 1/4 in integers).
 */
struct export_cc {
	uint64_t srtt8, rttvar4;
	uint64_t rto;                /* SRTT + max(G, 4 RTTVAR), clamped; no back-off */
	uint64_t samples;            /* RTT samples taken */
	uint32_t cwnd, ssthresh;     /* datagrams */
	uint32_t ca_acc;             /* datagrams acked towards the next +1 */
	bool cwnd_full;              /* the last poll stopped at cwnd: growth is tested */
	uint64_t round_start;        /* loss accounting per round trip */
	uint32_t round_sent, round_lost;
	uint64_t next_repair;        /* TSC of the next loss detection by time */
	uint64_t timeouts, decreases;  /* counters, for the logs */
};

/*
 * ctl_bad_auth, ctl_replay and ctl_malformed are the HEARTBEAT's counters
 * (no layout change): sealed, they also count ACKs, HELLO_ACKs and
 * CONTROLs with a wrong data tag (or none, or before the handshake: no
 * key to check it with), a packet number seen already or too old, and
 * datagrams without the trailer; auth_* split them out for the logs.
 */
struct export_stats {
	uint32_t ctl_accepted, ctl_bad_auth, ctl_replay, ctl_bad_session, ctl_malformed;
	uint32_t tx_errors;
	uint64_t datagrams;          /* handed to send, all kinds */
	uint64_t acks, nack_ranges;  /* ACKs received, missing ranges in them */
	uint64_t ignored;            /* well-formed but for another session or stream */
	uint64_t pt_gone;            /* PT resends whose bytes the ring no longer held
				      * (another consumer took them; never expected) */
	uint64_t partial;            /* new datagrams sent shorter than the largest */
	uint64_t auth_bad_tag;       /* sealed: wrong tag, or no Ks yet to check one */
	uint64_t auth_replay;        /* sealed: packet number seen already, 0 or too old */
	uint64_t auth_unsealed;      /* sealed: no trailer (a CONTROL without one excepted) */
};

/* The sealed path's state (export_config.data_key). */
struct export_seal {
	bool on;                     /* a data key: seal and check */
	bool verified;               /* a HELLO_ACK under ks verified: ks is the session key */
	uint8_t key[EXPORT_KEY_MAX];
	size_t keylen;
	uint8_t kh[SIPHASH_KEY_LEN];   /* the HELLO's key (nonce_r zero) */
	uint8_t ks[SIPHASH_KEY_LEN];   /* the session key, once verified */
	uint8_t nonce_r[DAUTH_NONCE_LEN];  /* the receiver's, from the verified HELLO_ACK */
	uint64_t tx_pn;              /* the last packet number sent */
	struct dauth_window rx;      /* the receiver's packet numbers */
	uint32_t data_max, pt_max;   /* record bytes per DATA, bytes per PT */
};

struct exporter {
	struct export_config cfg;
	uint8_t key[EXPORT_KEY_MAX];
	uint32_t ncpus;              /* streams 0..ncpus-1 (attached or not) */
	bool hello_acked;
	uint32_t hello_seq;
	uint64_t next_hello, next_heartbeat;
	uint32_t hb_seq;
	uint32_t rr;                 /* round-robin start for new data */
	uint64_t ctl_last;           /* last accepted counter, 0 = none */
	uint8_t ctl_last_tag[TVP_TAG_LEN];
	struct tvp_control_reply ctl_reply;  /* answer to ctl_last */
	struct export_stats st;
	struct export_cc cc;
	struct export_seal seal;
	struct export_stream s[EXPORT_MAX_CPUS];
	struct export_pt_stream pt[EXPORT_MAX_CPUS];
	uint8_t dgram[TVP_MAX_DATAGRAM + DAUTH_NONCE_LEN];  /* + a HELLO's nonce (sealed) */
	uint8_t recs[TVP_DATA_MAX_RECORDS];
	uint8_t ptbuf[TVP_PT_MAX_PAYLOAD];
	struct export_win tmp[EXPORT_WINDOW_MAX + 4];  /* loss detection scratch */
};

/*
 * export_init - set e up for cfg (copied, key included) with ncpus record
 * streams, none attached yet.  now_tsc starts the timers; the first
 * export_poll sends the HELLO.
 * Errors: PROTO_ERR_INVAL.
 */
int export_init(struct exporter *e, const struct export_config *cfg, uint32_t ncpus,
		uint64_t now_tsc);

/*
 * export_attach - stream cpu reads ring from its tail on: the first record
 * sent (or declared lost) carries FIRST.
 * Errors: PROTO_ERR_INVAL (cpu >= ncpus, already attached, not a ring),
 * TRACE_ERR_BUSY (the ring's tail kept moving; try again).
 */
int export_attach(struct exporter *e, uint32_t cpu, struct tv_trace_ring *ring);

/*
 * export_attach_pt - stream cpu's PT stream (stream id cpu |
 * TVP_STREAM_PT) reads ring from its tail on: the first PT datagram
 * carries FIRST, with that offset.  From then on the exporter is the
 * ring's only consumer (nothing else may read or consume it).  Sets
 * TVP_CAP_PT_STREAM in the HELLO: attach before the first export_poll,
 * or the HELLOs sent before say no PT stream follows.
 * Errors: PROTO_ERR_INVAL (NULL, cpu >= ncpus, already attached, ring
 * not initialised).
 */
int export_attach_pt(struct exporter *e, uint32_t cpu, struct byte_ring *ring);

/*
 * export_poll - everything that depends on time and on the rings: HELLO
 * while unacknowledged, heartbeats, overwritten records turned into LOSS
 * notices, the oldest datagram of each stream whose retransmission timer
 * expired, then new records and PT bytes while the congestion window has
 * room, full datagrams only unless the coalescing rule lets a partial one
 * go (at most EXPORT_TX_BUDGET datagrams, round robin over the CPUs).
 * Returns the number of datagrams handed to send, or PROTO_ERR_INVAL.
 */
int export_poll(struct exporter *e, uint64_t now_tsc);

/*
 * export_input - a datagram from the receiver: HELLO_ACK, ACK of a
 * record or PT stream (releases ring space, resends what the NACK ranges
 * name), CONTROL (verified,
 * applied, answered).  Returns 0 when it was used; a negative error when
 * it was refused (malformed, forged, replayed, wrong session; counted)
 * or ignored (well-formed but not for this session or stream:
 * PROTO_ERR_WRONG_SESSION / PROTO_ERR_STREAM, counted in st.ignored).
 */
int export_input(struct exporter *e, const void *dgram, size_t len, uint64_t now_tsc);

/* Counters of stream cpu (as a heartbeat would send them), or NULL. */
const struct tvp_hb_cpu *export_counters(const struct exporter *e, uint32_t cpu);

/* Counters of cpu's PT stream, or NULL (cpu out of range, not attached). */
const struct export_pt_counters *export_pt_counters(const struct exporter *e, uint32_t cpu);

#endif /* TV_NET_EXPORT_H */
