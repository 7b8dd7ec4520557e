/* SPDX-License-Identifier: MIT */
/*
 * proto.h - the export protocol: the UDP datagrams between tracevisor (the
 * sender, net/export.[ch]) and the receiver (net/recv.[ch], `tracevisor
 * record`).  docs/PROTOCOL.md is the prose version; this header is the
 * normative one: where they disagree, this header wins.
 *
 * Every datagram is one message: a 24-byte struct tvp_hdr, then the
 * message's fixed body, then its variable part.  All integers are little
 * endian; every field is naturally aligned in the datagram, so the structs
 * below have no padding and their sizes are asserted.  The encoder and the
 * decoder read and write byte by byte (any host byte order, any buffer
 * alignment); the structs describe the layout and carry the decoded values
 * in host order.
 *
 * Pure and freestanding: no allocation, no floating point, only string.h.
 *
 * Errors (negative, text from proto_strerror); proto_decode returns a
 * distinct one per malformed class, in the order it checks them:
 *   PROTO_ERR_INVAL      NULL argument, or a value the encoder refuses
 *   PROTO_ERR_SHORT      shorter than the header, or than the type's body
 *   PROTO_ERR_MAGIC      not TVP_MAGIC
 *   PROTO_ERR_VERSION    not TVP_VERSION
 *   PROTO_ERR_TYPE       unknown message type
 *   PROTO_ERR_LENGTH     header length != datagram length, above
 *                        TVP_MAX_DATAGRAM, or not what the body implies
 *   PROTO_ERR_CRC        CRC-32 mismatch
 *   PROTO_ERR_SESSION    session id 0
 *   PROTO_ERR_STREAM     stream id not allowed for the type
 *   PROTO_ERR_FLAGS      unknown flag bits, or a reserved field not 0
 *   PROTO_ERR_FIELD      a field out of its range (count 0, too many ranges,
 *                        ranges out of order, unknown op or enum value,
 *                        text length over its maximum, ...)
 *   PROTO_ERR_RECORDS    DATA: the records do not tile the payload (a
 *                        record size < 8, not a multiple of 8, over 1024,
 *                        running past the end) or their number != count
 *   PROTO_ERR_NOSPC      encode: the buffer, or the datagram, is too small
 * and, from control verification (proto_control_verify, export.c):
 *   PROTO_ERR_AUTH       HMAC-SHA256 tag mismatch
 *   PROTO_ERR_REPLAY     counter not above the last accepted one
 *   PROTO_ERR_WRONG_SESSION control message for another session (boot)
 */
#ifndef TV_NET_PROTO_H
#define TV_NET_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmm/trace/format.h"   /* TV_SOURCE_LIST: the source caps bits */

#define PROTO_ERR_INVAL          (-1)
#define PROTO_ERR_SHORT          (-2)
#define PROTO_ERR_MAGIC          (-3)
#define PROTO_ERR_VERSION        (-4)
#define PROTO_ERR_TYPE           (-5)
#define PROTO_ERR_LENGTH         (-6)
#define PROTO_ERR_CRC            (-7)
#define PROTO_ERR_SESSION        (-8)
#define PROTO_ERR_STREAM         (-9)
#define PROTO_ERR_FLAGS          (-10)
#define PROTO_ERR_FIELD          (-11)
#define PROTO_ERR_RECORDS        (-12)
#define PROTO_ERR_NOSPC          (-13)
#define PROTO_ERR_AUTH           (-14)
#define PROTO_ERR_REPLAY         (-15)
#define PROTO_ERR_WRONG_SESSION  (-16)
#define PROTO_ERR_COUNT          17   /* 0 and the 16 codes above */

/* Text for a PROTO_ERR_* code (or 0); "unknown error" otherwise. */
const char *proto_strerror(int err);

/* --- constants ------------------------------------------------------------- */

#define TVP_MAGIC    0x504e5654u   /* the bytes "TVNP" */
#define TVP_VERSION  1u
#define TVP_PORT     6543u         /* default UDP port of the receiver (record, receiver=) */

/*
 * Largest datagram: 1500-byte Ethernet MTU - 40 (IPv6 header, the larger
 * of IPv4's 20 and IPv6's 40) - 8 (UDP header), so no datagram is ever
 * fragmented on a 1500-byte path with either IP version.
 */
#define TVP_MAX_DATAGRAM 1452u

/* Message types (tvp_hdr.type).  S: tracevisor sends it, R: the receiver. */
enum tvp_type {
	TVP_HELLO = 1,          /* S: session start, machine metadata; repeated until HELLO_ACK */
	TVP_HELLO_ACK = 2,      /* R: the HELLO of this session arrived */
	TVP_DATA = 3,           /* S: whole trace records of one CPU */
	TVP_PT = 4,             /* S: raw Intel PT bytes of one CPU */
	TVP_ACK = 5,            /* R: cumulative ack + missing ranges (NACK) of one stream */
	TVP_HEARTBEAT = 6,      /* S: per-CPU counters */
	TVP_LOSS = 7,           /* S: records overwritten before they were acked */
	TVP_CONTROL = 8,        /* R: start/stop/filters/marker, HMAC-SHA256 authenticated */
	TVP_CONTROL_REPLY = 9,  /* S: what became of an authenticated CONTROL */
	TVP_TYPE_MAX
};

/*
 * Stream ids (tvp_hdr.stream): a CPU's record stream is its logical CPU
 * index (tv_trace_ring.cpu); its PT byte stream is the index | TVP_STREAM_PT.
 * Sideband (CR3, images, config, time, log lines, markers, PT_SYNC) travels
 * as records in the record streams: it already is record types
 * (vmm/trace/format.h), and so it is ordered with the branches, sequenced,
 * acknowledged and retransmitted like them.  Messages that are about the
 * whole session (HELLO, HELLO_ACK, HEARTBEAT, CONTROL, CONTROL_REPLY) have
 * stream 0.
 */
#define TVP_STREAM_PT       0x8000u
#define TVP_STREAM_CPU_MASK 0x7fffu
#define TVP_MAX_CPUS        1024u    /* CPU indexes 0..1023 on the wire */

/* --- header ----------------------------------------------------------------- */

struct tvp_hdr {
	uint32_t magic;         /* TVP_MAGIC */
	uint8_t version;        /* TVP_VERSION */
	uint8_t type;           /* enum tvp_type */
	uint16_t length;        /* bytes of the whole datagram, header included */
	uint64_t session;       /* session id: random per boot, never 0 */
	uint16_t stream;        /* see TVP_STREAM_*; 0 for session-wide types */
	uint16_t flags;         /* per type (TVP_*_F_*); unknown bits must be 0 */
	uint32_t crc;           /* CRC-32 (IEEE 802.3, zlib crc32()) over the whole
				 * datagram with this field taken as 0 */
};
_Static_assert(sizeof(struct tvp_hdr) == 24, "tvp_hdr layout");
#define TVP_HDR_CRC_OFFSET 20u

/* --- HELLO (S -> R) ------------------------------------------------------------ */

/* Trace sources this machine can run (tvp_hello.caps), bit n = enum tv_source n:
 * bits 1..TV_SOURCE_MAX (TV_SOURCE_LIST), room up to bit 15. */
#define TVP_CAP_SOURCE(s)   (1u << (s))
#define TVP_CAP_SOURCES     ((1u << TV_SOURCE_COUNT) - 2u)
#define TVP_CAP_CONTROL     (1u << 16)   /* a control key is configured */
#define TVP_CAP_PT_STREAM   (1u << 17)   /* PT byte streams may follow */
#define TVP_CAP_KNOWN       (TVP_CAP_SOURCES | TVP_CAP_CONTROL | TVP_CAP_PT_STREAM)
_Static_assert(TV_SOURCE_COUNT <= 16, "source caps bits 1..15 end below TVP_CAP_CONTROL");

#define TVP_VENDOR_LEN   12u
#define TVP_SWVER_LEN    28u
#define TVP_MACHINE_LEN  64u

enum tvp_vendor {
	TVP_VENDOR_OTHER = 0,
	TVP_VENDOR_INTEL = 1,
	TVP_VENDOR_AMD = 2,
};

struct tvp_hello {
	uint32_t hello_seq;     /* 0, 1, 2, ... each repetition in this session */
	uint16_t cpu_count;     /* record streams 0..cpu_count-1; 1..TVP_MAX_CPUS */
	uint8_t source;         /* enum tv_source in use (tv_trace_ring.source) */
	uint8_t overflow;       /* enum tv_overflow of the rings */
	uint8_t vendor_id;      /* enum tvp_vendor */
	uint8_t stepping;       /* CPUID.01H display values (SDM 2A, CPUID) */
	uint16_t family;
	uint16_t model;
	uint16_t reserved0;     /* 0 */
	uint32_t caps;          /* TVP_CAP_* */
	uint32_t reserved1;     /* 0 */
	uint64_t tsc_hz;        /* TSC ticks per second, 0 if unknown */
	uint64_t boot_tsc;      /* TSC when the session began */
	uint64_t ring_bytes;    /* data_size of each CPU's record ring */
	uint64_t unix_ns;       /* wall clock at boot_tsc, ns since 1970, 0 unknown */
	char vendor[TVP_VENDOR_LEN];    /* CPUID.0 vendor string, e.g. "GenuineIntel" */
	char sw_version[TVP_SWVER_LEN]; /* tracevisor version (git describe), NUL-padded */
	char machine[TVP_MACHINE_LEN];  /* machine name from the config, NUL-padded */
};
_Static_assert(sizeof(struct tvp_hello) == 160, "tvp_hello layout");

/* --- HELLO_ACK (R -> S) ----------------------------------------------------------- */

struct tvp_hello_ack {
	uint32_t hello_seq;     /* the hello_seq acknowledged */
	uint32_t reserved;      /* 0 */
};
_Static_assert(sizeof(struct tvp_hello_ack) == 8, "tvp_hello_ack layout");

/* --- DATA (S -> R) --------------------------------------------------------------------- */

/*
 * Records of one CPU: count whole records (docs/FORMAT.md), sequence
 * numbers first_seq .. first_seq + count - 1 (mod 2^64), exactly tiling
 * the rest of the datagram.
 */
#define TVP_DATA_F_BASE        (1u << 0)  /* base_to is valid */
#define TVP_DATA_F_RETRANSMIT  (1u << 1)  /* sent before (informational) */
#define TVP_DATA_F_FIRST       (1u << 2)  /* first_seq is where the stream begins */
#define TVP_DATA_F_KNOWN       (TVP_DATA_F_BASE | TVP_DATA_F_RETRANSMIT | TVP_DATA_F_FIRST)

struct tvp_data {
	uint64_t first_seq;     /* sequence number of the first record */
	uint64_t base_to;       /* with TVP_DATA_F_BASE: `to` of the branch record
				 * right before first_seq, so a leading compact branch
				 * decodes even if the datagram before never arrives;
				 * 0 without the flag */
	uint16_t count;         /* records, >= 1 */
	uint16_t reserved0;     /* 0 */
	uint32_t reserved1;     /* 0 */
};
_Static_assert(sizeof(struct tvp_data) == 24, "tvp_data layout");
#define TVP_DATA_MAX_PAYLOAD (TVP_MAX_DATAGRAM - sizeof(struct tvp_hdr) - sizeof(struct tvp_data))
/* Records are multiples of 8: this many bytes of them fit in one DATA. */
#define TVP_DATA_MAX_RECORDS (TVP_DATA_MAX_PAYLOAD & ~(size_t)7)
_Static_assert(TVP_DATA_MAX_RECORDS >= 1024, "the largest record fits a DATA datagram");

/* --- PT (S -> R) --------------------------------------------------------------------------- */

/*
 * Raw PT bytes of one CPU (stream has TVP_STREAM_PT), at least 1, the
 * stream's bytes offset .. offset + len - 1.  The flags mean what DATA's
 * bits 1 and 2 mean; bit 0 (DATA's BASE) has no use here and stays 0.
 */
#define TVP_PT_F_RETRANSMIT  (1u << 1)  /* sent before (informational) */
#define TVP_PT_F_FIRST       (1u << 2)  /* offset is where the stream begins */
#define TVP_PT_F_KNOWN       (TVP_PT_F_RETRANSMIT | TVP_PT_F_FIRST)

struct tvp_pt {
	uint64_t offset;        /* running byte offset of the first byte in the CPU's
				 * PT stream (the unit of PT sequence numbers) */
	uint64_t reserved;      /* 0 */
};
_Static_assert(sizeof(struct tvp_pt) == 16, "tvp_pt layout");
#define TVP_PT_MAX_PAYLOAD (TVP_MAX_DATAGRAM - sizeof(struct tvp_hdr) - sizeof(struct tvp_pt))

/* --- ACK (R -> S) ------------------------------------------------------------------------------- */

/*
 * Acknowledgement of one stream.  Sequence numbers are record sequence
 * numbers for record streams and byte offsets for PT streams.  cum: every
 * number before it has been received or declared lost (LOSS); the sender
 * may forget it.  The ranges name what is missing between cum and highest
 * (the receiver has something beyond them): they are NACKs, and the sender
 * resends them at once.  All comparisons are modulo 2^64 (serial number
 * arithmetic, RFC 1982): a - b is taken as a signed 64-bit value.
 */
#define TVP_ACK_MAX_RANGES 32u

struct tvp_range {
	uint64_t first;         /* first missing */
	uint64_t end;           /* one past the last missing */
};
_Static_assert(sizeof(struct tvp_range) == 16, "tvp_range layout");

struct tvp_ack {
	uint64_t cum;           /* all before this received or declared lost */
	uint64_t highest;       /* one past the highest received; == cum when
				 * nothing is held out of order */
	uint16_t nranges;       /* struct tvp_range that follow, 0..TVP_ACK_MAX_RANGES;
				 * cum <= first < end <= highest, ascending, with a
				 * gap between neighbours */
	uint16_t reserved0;     /* 0 */
	uint32_t reserved1;     /* 0 */
};
_Static_assert(sizeof(struct tvp_ack) == 24, "tvp_ack layout");

/* --- HEARTBEAT (S -> R) ----------------------------------------------------------------------------- */

/* Counters of one CPU's record stream, all since the session began. */
struct tvp_hb_cpu {
	uint32_t cpu;           /* CPU index */
	uint32_t reserved;      /* 0 */
	uint64_t produced;      /* records the producer wrote (next_seq - first seq) */
	uint64_t sent;          /* records sent for the first time */
	uint64_t retransmitted; /* records sent again (NACK or ack timeout) */
	uint64_t lost_overwrite;/* records overwritten before acked (sum of LOSS) */
	uint64_t head_seq;      /* the ring's next_seq */
	uint64_t acked;         /* the receiver's cumulative ack as last received */
	uint64_t ring_dropped;  /* the ring's lost_records (STOP drops too) */
};
_Static_assert(sizeof(struct tvp_hb_cpu) == 64, "tvp_hb_cpu layout");

struct tvp_heartbeat {
	uint64_t tsc;           /* sender's TSC */
	uint32_t hb_seq;        /* 0, 1, 2, ... per heartbeat datagram */
	uint16_t first_cpu;     /* entries describe CPUs first_cpu .. */
	uint16_t ncpus;         /* struct tvp_hb_cpu that follow, 0..TVP_HB_MAX_CPUS */
	uint32_t ctl_accepted;  /* authenticated CONTROL messages applied */
	uint32_t ctl_bad_auth;  /* tag mismatch */
	uint32_t ctl_replay;    /* counter not above the last accepted */
	uint32_t ctl_bad_session; /* for another session */
	uint32_t ctl_malformed; /* failed proto_decode (any message from the receiver) */
	uint32_t tx_errors;     /* send callback failures */
};
_Static_assert(sizeof(struct tvp_heartbeat) == 40, "tvp_heartbeat layout");
#define TVP_HB_MAX_CPUS \
	((TVP_MAX_DATAGRAM - sizeof(struct tvp_hdr) - sizeof(struct tvp_heartbeat)) / \
	 sizeof(struct tvp_hb_cpu))
_Static_assert(TVP_HB_MAX_CPUS == 21, "heartbeat CPUs per datagram");

/* --- LOSS (S -> R) -------------------------------------------------------------------------------------- */

/*
 * Records first_seq .. first_seq + count - 1 of the stream were
 * overwritten in the ring (TV_OVERFLOW_OVERWRITE) before the receiver
 * acknowledged them: they will never come.  The receiver counts them as
 * lost and moves its cumulative ack past them.  Resent whenever the
 * receiver NACKs any of them.  flags: TVP_LOSS_F_FIRST.
 */
#define TVP_LOSS_F_FIRST (1u << 0)  /* first_seq is where the stream begins */

struct tvp_loss {
	uint64_t first_seq;
	uint64_t count;         /* >= 1 */
	uint64_t total;         /* records lost by overwrite on this stream so far,
				 * this notice included (informational) */
};
_Static_assert(sizeof(struct tvp_loss) == 24, "tvp_loss layout");

/* --- CONTROL (R -> S) ----------------------------------------------------------------------------------------- */

enum tvp_ctl_op {
	TVP_CTL_NOP = 0,        /* no arguments: checks key and session */
	TVP_CTL_START = 1,      /* struct tvp_ctl_cpus: open a window on these CPUs */
	TVP_CTL_STOP = 2,       /* struct tvp_ctl_cpus: close it */
	TVP_CTL_FILTERS = 3,    /* struct tvp_ctl_filter: replace the trace filter */
	TVP_CTL_MARKER = 4,     /* struct tvp_ctl_marker + label: a MARKER record */
	TVP_CTL_MEM_WATCH = 5,  /* struct tvp_ctl_mem_watch + label: arm, remove or
				 * label a memory watch (docs/MEMTRACE.md) */
	TVP_CTL_OP_MAX
};

#define TVP_CTL_CPU_WORDS 16u   /* 1024 CPUs */
struct tvp_ctl_cpus {
	uint64_t mask[TVP_CTL_CPU_WORDS]; /* bit n of word n/64: CPU n */
};
_Static_assert(sizeof(struct tvp_ctl_cpus) == 128, "tvp_ctl_cpus layout");

#define TVP_CTL_RANGES 4u       /* = TRACE_MAX_RANGES (vmm/trace/trace.h) */
struct tvp_ctl_filter {
	uint32_t cpl;           /* TRACE_CPL_* bits (vmm/trace/trace.h), non-zero */
	uint32_t nranges;       /* 0..TVP_CTL_RANGES: ranges used */
	uint64_t cr3;           /* 0 = any address space */
	struct {
		uint64_t lo, hi;    /* inclusive guest linear addresses, lo <= hi */
	} ranges[TVP_CTL_RANGES];  /* unused ones 0 */
};
_Static_assert(sizeof(struct tvp_ctl_filter) == 80, "tvp_ctl_filter layout");

#define TVP_CPU_ALL 0xffffffffu
#define TVP_LABEL_MAX 256u
struct tvp_ctl_marker {
	uint64_t value;
	uint32_t cpu;           /* CPU whose ring gets it, or TVP_CPU_ALL */
	uint32_t label_len;     /* bytes of label after this struct, <= TVP_LABEL_MAX */
};
_Static_assert(sizeof(struct tvp_ctl_marker) == 16, "tvp_ctl_marker layout");

/*
 * MEM_WATCH: op is enum tv_mem_watch_op (vmm/trace/format.h), mode
 * TV_MEMW_MODE_*; the watch's records say origin TV_MEMW_FROM_CONTROL.
 *   ARM     watch guest-physical [lo, hi), lo < hi, mode 1..3, id 0 (the
 *           hypervisor picks it; its TV_REC_MEM_WATCH record names it)
 *   REMOVE  remove watch id (!= 0); lo, hi, mode, label_len 0
 *   LABEL   name [lo, hi), lo < hi, without watching it; mode 0, id 0
 */
struct tvp_ctl_mem_watch {
	uint64_t lo, hi;
	uint8_t op;
	uint8_t mode;
	uint16_t id;
	uint32_t label_len;     /* bytes of label after this struct, <= TVP_LABEL_MAX */
};
_Static_assert(sizeof(struct tvp_ctl_mem_watch) == 24, "tvp_ctl_mem_watch layout");

/*
 * After the header: struct tvp_control, arg_len bytes of arguments (the
 * op's struct, exactly its size; MARKER: 16 + label_len), zero padding to
 * a multiple of 8, then the 32-byte tag:
 *   tag = HMAC-SHA256(key, datagram[0 .. length - 32)) with the header's
 *         crc field taken as 0.
 * The key is the pre-shared control key of the config.  The session id in
 * the header binds the message to one boot; counter must be strictly above
 * the last counter the sender accepted in this session (replay protection).
 * The CRC covers the whole datagram, tag included.
 */
#define TVP_TAG_LEN 32u
struct tvp_control {
	uint64_t counter;       /* >= 1, strictly increasing per session */
	uint16_t op;            /* enum tvp_ctl_op */
	uint16_t arg_len;       /* bytes of arguments */
	uint32_t reserved;      /* 0 */
};
_Static_assert(sizeof(struct tvp_control) == 16, "tvp_control layout");
#define TVP_CTL_ARGS_MAX (sizeof(struct tvp_ctl_mem_watch) + TVP_LABEL_MAX)

/* --- CONTROL_REPLY (S -> R) -------------------------------------------------------------------------------------- */

/*
 * The answer to an authenticated CONTROL (forged, replayed or malformed
 * ones get none: they are only counted, see the heartbeat).  status 0: the
 * op was applied; otherwise a negative TVP_CTL_E*.  An exact repeat of the
 * last accepted message (same counter, valid tag) is answered again with
 * the stored reply and applied no second time.
 */
#define TVP_CTL_EUNSUPPORTED (-1)   /* the hypervisor has no handler for op */
#define TVP_CTL_EFAILED      (-2)   /* the handler refused the arguments */

struct tvp_control_reply {
	uint64_t counter;       /* of the CONTROL answered */
	uint16_t op;
	uint16_t reserved;      /* 0 */
	int32_t status;
};
_Static_assert(sizeof(struct tvp_control_reply) == 16, "tvp_control_reply layout");

/* --- decoded messages ---------------------------------------------------------------------------------------------- */

/*
 * A decoded datagram.  Fixed parts are copied in host byte order; the
 * variable parts point into the datagram that was decoded (valid as long
 * as it is).
 */
struct proto_msg {
	uint8_t type;           /* enum tvp_type */
	uint16_t length;
	uint16_t stream;
	uint16_t flags;
	uint64_t session;
	union {
		struct tvp_hello hello;
		struct tvp_hello_ack hello_ack;
		struct {
			struct tvp_data d;
			const uint8_t *records;  /* count whole records */
			size_t bytes;
		} data;
		struct {
			struct tvp_pt p;
			const uint8_t *bytes;
			size_t len;
		} pt;
		struct {
			struct tvp_ack a;
			struct tvp_range ranges[TVP_ACK_MAX_RANGES];
		} ack;
		struct {
			struct tvp_heartbeat h;
			struct tvp_hb_cpu cpus[TVP_HB_MAX_CPUS];
		} hb;
		struct tvp_loss loss;
		struct {
			struct tvp_control c;
			union {
				struct tvp_ctl_cpus cpus;
				struct tvp_ctl_filter filter;
				struct tvp_ctl_marker marker;
				struct tvp_ctl_mem_watch mem_watch;
			} arg;
			const char *label;       /* MARKER, MEM_WATCH: label_len bytes */
			const uint8_t *tag;      /* TVP_TAG_LEN bytes */
		} control;
		struct tvp_control_reply reply;
	} u;
};

/*
 * proto_decode - check buf[0..len) and decode it into *m.  Checks, in this
 * order: length >= header (SHORT), magic, version, type, header length ==
 * len and <= TVP_MAX_DATAGRAM (LENGTH), CRC, session != 0, stream allowed
 * for the type, then the body: its fixed part present (SHORT), the length
 * the body implies (LENGTH), flags and reserved fields (FLAGS), field
 * ranges (FIELD), DATA records (RECORDS).  A CONTROL's tag is not checked
 * here (proto_control_verify does, with the key).
 * Returns 0 or any PROTO_ERR_* above but NOSPC/AUTH/REPLAY/WRONG_SESSION;
 * on error *m is unspecified.
 */
int proto_decode(const void *buf, size_t len, struct proto_msg *m);

/* --- encoders ----------------------------------------------------------------------------------------------------- */

/*
 * Each encoder writes one complete datagram (header, body, CRC) into
 * buf[0..cap) and returns its length (> 0), or a negative error:
 *   PROTO_ERR_INVAL   NULL argument, session 0, a stream or field the
 *                     decoder would refuse
 *   PROTO_ERR_NOSPC   cap too small, or the message over TVP_MAX_DATAGRAM
 * Reserved fields are written as 0 whatever the struct holds.
 */
int proto_encode_hello(void *buf, size_t cap, uint64_t session,
		       const struct tvp_hello *h);
int proto_encode_hello_ack(void *buf, size_t cap, uint64_t session,
			   uint32_t hello_seq);
/* DATA: records[0..bytes) must hold exactly d->count whole records. */
int proto_encode_data(void *buf, size_t cap, uint64_t session, uint16_t cpu,
		      uint16_t flags, const struct tvp_data *d,
		      const void *records, size_t bytes);
/* PT: flags are TVP_PT_F_*; proto_encode_pt is proto_encode_pt_flags with 0. */
int proto_encode_pt(void *buf, size_t cap, uint64_t session, uint16_t cpu,
		    uint64_t offset, const void *bytes, size_t len);
int proto_encode_pt_flags(void *buf, size_t cap, uint64_t session, uint16_t cpu,
			  uint16_t flags, uint64_t offset, const void *bytes, size_t len);
int proto_encode_ack(void *buf, size_t cap, uint64_t session, uint16_t stream,
		     const struct tvp_ack *a, const struct tvp_range *ranges);
int proto_encode_heartbeat(void *buf, size_t cap, uint64_t session,
			   const struct tvp_heartbeat *h,
			   const struct tvp_hb_cpu *cpus);
int proto_encode_loss(void *buf, size_t cap, uint64_t session, uint16_t cpu,
		      uint16_t flags, const struct tvp_loss *l);
int proto_encode_control_reply(void *buf, size_t cap, uint64_t session,
			       const struct tvp_control_reply *r);

/*
 * proto_encode_control - an authenticated CONTROL: c->arg_len bytes of
 * args (the op's struct in host order as in struct proto_msg; for MARKER
 * a struct tvp_ctl_marker followed by its label, for MEM_WATCH a struct
 * tvp_ctl_mem_watch followed by its label), tag from key[0..keylen).
 * arg_len must be what the op needs (see proto_decode).
 */
int proto_encode_control(void *buf, size_t cap, uint64_t session,
			 const struct tvp_control *c, const void *args,
			 const void *key, size_t keylen);

/*
 * proto_control_verify - the tag of a CONTROL datagram buf[0..len) that
 * proto_decode accepted, recomputed with key and compared in constant
 * time.  Returns 0, PROTO_ERR_AUTH (mismatch, or no key: keylen 0) or
 * PROTO_ERR_INVAL.
 */
int proto_control_verify(const void *buf, size_t len, const void *key,
			 size_t keylen);

/* --- helpers ------------------------------------------------------------------------------------------------------- */

/* CRC-32 (IEEE 802.3, reflected 0xEDB88320), zlib convention: start with 0. */
uint32_t proto_crc32(uint32_t crc, const void *data, size_t len);

/* Serial number comparison (RFC 1982 style, 64 bits): a before b. */
static inline bool tvp_seq_before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

/* Record or byte count from a to b (b at or after a). */
static inline uint64_t tvp_seq_diff(uint64_t b, uint64_t a)
{
	return b - a;
}

#endif /* TV_NET_PROTO_H */
