/* SPDX-License-Identifier: MIT */
/*
 * recv.h - the receiver side of the export protocol (docs/PROTOCOL.md),
 * pure: no sockets, no clock, no allocation.  `tracevisor record` feeds
 * it every datagram with an opaque token for the address it came from;
 * it keeps one state per session id (a boot of one machine), puts each
 * CPU's records and PT bytes back in order with a bounded out-of-order
 * pool (shared by all streams of the session), drops and counts
 * duplicates, and hands out, through callbacks:
 *  - records of CPU n in order, as runs starting at sequence number s
 *    (with the compact base when the run's predecessor was not delivered
 *    in the same call chain);
 *  - PT bytes of CPU n in stream order, each byte exactly once, with the
 *    stream offset of the first (PT streams are acknowledged and NACKed
 *    like record streams, in bytes);
 *  - HELLO metadata (once per session), heartbeat counters, control
 *    replies, LOSS ranges (in stream order, each sequence number at most
 *    once), and at recv_close what is still missing;
 *  - the ACK datagrams to send back, through ops.send.
 * It also builds authenticated CONTROL messages (recv_control).
 *
 * ACK policy (docs/PROTOCOL.md, "ACK"): by default every datagram of a
 * stream is answered with an ACK.  recv_set_ack_every(r, n) lets in-order
 * datagrams wait: a stream is acknowledged at its n-th unanswered one,
 * and at once for anything else (a datagram that opens a hole or fills
 * one, a duplicate, FIRST, LOSS, a datagram shorter than the largest: the
 * sender had no more; one that only continues the data held beyond a
 * hole counts like an in-order one);
 * the caller then calls recv_flush whenever no datagram is waiting
 * (after each batch it read), which answers what is left.
 *
 * Loss accounting is exact: lost counts only sequence numbers the sender
 * declared overwritten (LOSS) and that never arrived; missing_at_close
 * counts the gaps still open at recv_close, separately.  PT streams have
 * no LOSS (the sender never overwrites unacknowledged PT bytes): their
 * only shortfall is missing_at_close.
 *
 * Errors (negative, PROTO_ERR_*, text from proto_strerror):
 *   PROTO_ERR_INVAL    NULL argument, no session with that id, key too long
 *   any proto_decode error: the datagram was malformed (counted)
 *   PROTO_ERR_TYPE     a type only the receiver sends (counted as malformed)
 *   PROTO_ERR_NOSPC    recv_control's buffer is too small
 * A new session when all RECV_MAX_SESSIONS are in use closes the one
 * least recently heard from first (recv_close, counted in evicted).
 */
#ifndef TV_NET_RECV_H
#define TV_NET_RECV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/proto.h"

#define RECV_MAX_SESSIONS 8u
#define RECV_MAX_CPUS     256u
#define RECV_POOL         512u   /* out-of-order datagrams held per session (at
				  * least net/export.h's EXPORT_WINDOW_MAX) */
#define RECV_ACK_EVERY_MAX 64u   /* recv_set_ack_every's bound */
/* A pool slot holds a DATA's records or a PT datagram's bytes. */
#define RECV_SLOT_BYTES \
	(TVP_DATA_MAX_RECORDS > TVP_PT_MAX_PAYLOAD ? TVP_DATA_MAX_RECORDS : TVP_PT_MAX_PAYLOAD)

struct recv_ops {
	/* records[0..len) are count whole records, sequence numbers first_seq.. */
	void (*records)(void *ctx, uint64_t session, uint32_t cpu, uint64_t first_seq,
			const uint8_t *records, size_t len, uint32_t count,
			bool has_base, uint64_t base_to);
	/* bytes[0..len) of cpu's PT stream from offset, in order, each once */
	void (*pt)(void *ctx, uint64_t session, uint32_t cpu, uint64_t offset,
		   const uint8_t *bytes, size_t len);
	void (*hello)(void *ctx, uint64_t session, uint64_t addr, const struct tvp_hello *h);
	/* count records from first_seq were overwritten before they arrived */
	void (*loss)(void *ctx, uint64_t session, uint32_t cpu, uint64_t first_seq,
		     uint64_t count);
	/* recv_close: count records from first_seq never came */
	void (*missing)(void *ctx, uint64_t session, uint32_t cpu, uint64_t first_seq,
			uint64_t count);
	/* recv_close: count PT bytes of cpu from offset never came */
	void (*pt_missing)(void *ctx, uint64_t session, uint32_t cpu, uint64_t offset,
			   uint64_t count);
	void (*heartbeat)(void *ctx, uint64_t session, const struct tvp_heartbeat *h,
			  const struct tvp_hb_cpu *cpus);
	void (*reply)(void *ctx, uint64_t session, const struct tvp_control_reply *r);
	/* Send buf[0..len) to addr; the return value is ignored (UDP). */
	int (*send)(void *ctx, uint64_t addr, const void *buf, size_t len);
};

/* A record stream (sequence numbers count records) or a PT stream (bytes). */
struct recv_stream {
	bool known;                  /* the FIRST datagram arrived */
	uint64_t next;               /* next sequence number (PT: offset) to deliver */
	uint64_t start;              /* where the stream began */
	uint64_t records;            /* delivered: records, or PT bytes */
	uint64_t lost;               /* declared lost by LOSS (records only) */
	uint64_t dups;               /* datagrams dropped as duplicates */
	uint64_t missing_at_close;   /* records or PT bytes */
	uint32_t held;               /* its datagrams in the pool */
	uint32_t unacked;            /* in-order datagrams not acknowledged yet */
	uint16_t head;               /* its pool slots in order of first_seq: index + 1 of
				      * the first, 0: none */
};

/*
 * A datagram that arrived ahead of its turn; its bytes are in the
 * session's slot_data at the same index (apart, so that scanning the
 * slots reads 40 bytes each, not 1.4 KiB).
 */
struct recv_slot {
	bool used;
	bool is_loss;
	bool first;                  /* carried FIRST */
	bool has_base;
	uint16_t stream;             /* its header's stream: cpu, or cpu | TVP_STREAM_PT */
	uint16_t next;               /* index + 1 of the next slot in its stream's list, or
				      * in the free list; 0: the last */
	uint64_t first_seq, count, base_to;   /* PT: offset, bytes, 0 */
	uint32_t len;
};

struct recv_session {
	bool used;
	bool have_hello;
	uint64_t id;
	uint64_t addr;               /* where its datagrams last came from */
	uint64_t last_active;        /* recv_feed call count, for eviction */
	uint64_t ctl_counter;        /* last CONTROL counter built */
	struct tvp_hello hello;
	uint64_t datagrams, dups, pool_full, acks_sent;
	uint64_t pt_bytes;           /* PT bytes delivered, all CPUs */
	uint32_t held;               /* used pool slots */
	uint16_t free_head;          /* free pool slots: index + 1 of the first, 0: none */
	uint32_t unacked;            /* streams with unacked in-order datagrams */
	uint32_t ncpus;              /* 1 + the highest CPU index of a stream touched */
	struct recv_stream s[RECV_MAX_CPUS];    /* record streams */
	struct recv_stream pt[RECV_MAX_CPUS];   /* PT streams */
	struct recv_slot pool[RECV_POOL];
	uint8_t slot_data[RECV_POOL][RECV_SLOT_BYTES];
};

struct recv_stats {
	uint64_t datagrams, malformed, evicted;
	uint64_t by_error[PROTO_ERR_COUNT];   /* index -err */
};

struct receiver {
	struct recv_ops ops;
	void *ctx;
	uint64_t clock;              /* recv_feed calls */
	uint64_t ctl_base;           /* first CONTROL counter - 1 for new sessions */
	uint32_t ack_every;          /* recv_set_ack_every; 1: every datagram */
	struct recv_stats st;
	struct recv_session sess[RECV_MAX_SESSIONS];
	uint8_t out[TVP_MAX_DATAGRAM];
};

/*
 * recv_init - an empty receiver.  ctl_base: CONTROL counters of every
 * session start above it; pass something that grows across runs of the
 * receiver (wall-clock nanoseconds), or the sender refuses a restarted
 * receiver's commands as replays.  r is large (allocate it).
 */
void recv_init(struct receiver *r, const struct recv_ops *ops, void *ctx,
	       uint64_t ctl_base);

/*
 * recv_feed - one datagram from addr.  Returns 0 when it was used
 * (duplicates included: they are counted), or a negative error.
 */
int recv_feed(struct receiver *r, const void *dgram, size_t len, uint64_t addr);

/*
 * recv_set_ack_every - acknowledge in-order datagrams of a stream every n
 * (1..RECV_ACK_EVERY_MAX; 1, the default, answers each one), and the rest
 * at recv_flush.  Errors: PROTO_ERR_INVAL (NULL, n out of range).
 */
int recv_set_ack_every(struct receiver *r, uint32_t n);

/*
 * recv_flush - send the ACKs that recv_set_ack_every let wait.  Call it
 * when no datagram is waiting to be fed.  Returns the ACKs sent.
 */
unsigned recv_flush(struct receiver *r);

/* The session with this id, or NULL. */
const struct recv_session *recv_session_get(const struct receiver *r, uint64_t session);

/*
 * recv_close - end session: deliver what the pool holds in order,
 * reporting each gap before it through ops.missing (PT: ops.pt_missing;
 * counted in missing_at_close), then forget the session.
 * Errors: PROTO_ERR_INVAL.
 */
int recv_close(struct receiver *r, uint64_t session);

/*
 * recv_control - build an authenticated CONTROL for session into
 * buf[0..cap) with the next counter: op, arg_len bytes of args as
 * proto_encode_control takes them, key[0..keylen).  Returns its length
 * or a negative error (PROTO_ERR_INVAL: no such session; encoder errors).
 * The caller sends it to the session's addr.
 */
int recv_control(struct receiver *r, uint64_t session, uint16_t op, const void *args,
		 uint16_t arg_len, const void *key, size_t keylen, void *buf, size_t cap);

#endif /* TV_NET_RECV_H */
