/* SPDX-License-Identifier: MIT */
/*
 * capture.h - the capture directory `tracevisor record` writes for one
 * session (one boot of one traced machine); docs/CAPTURE.md is the prose
 * version.
 *
 *   <outdir>/<machine>-<session id, 16 hex digits>/
 *     trace.tvt    records chunks per CPU (with their first sequence
 *                  number), PT chunks per CPU, a ring snapshot per CPU at
 *                  close (docs/TRACEFILE.md); what every host tool reads
 *     cpuN.pt      raw Intel PT bytes of CPU N, when PT data arrived
 *     meta.json    session, machine, CPU model, trace source, TSC Hz, times
 *     losses.json  per CPU: received, duplicates, retransmit requests,
 *                  records declared lost by the sender (exact ranges),
 *                  still missing at close
 *     losses.txt   the same for people
 *
 * The capture only writes what it is given, in the order given: the
 * receiver state machine (net/recv.c) has already put records in order
 * and dropped duplicates.  Records of a CPU are gathered into runs and a
 * run becomes one chunk when it reaches CAP_RUN_BYTES, when the next
 * records do not follow it, on cap_flush and on cap_close; every chunk is
 * flushed to the file at once, so a crash loses at most the unflushed runs.
 * meta.json is written when the capture opens and again at close;
 * losses.* at close (written to a temporary name, then renamed).
 *
 * The directory's name needs the HELLO: records that come before it are
 * held in memory (cap_init), PT bytes are not (cap_pt begins the capture).
 * A capture begun without a HELLO is "unknown-<session>" until the HELLO
 * arrives; cap_set_hello then renames the directory to the machine's
 * name, so the name is right whenever the HELLO comes before cap_close.
 * trace.tvt's file header keeps the (empty) machine name it was begun
 * with; meta.json has the HELLO's.
 *
 * Errors (negative enum tvh_error, text from tvh_errstr):
 *   -TVH_ERR_INVALID  NULL argument, CPU index >= TVP_MAX_CPUS, a records
 *                     payload that is not whole records, a capture that
 *                     is not open
 *   -TVH_ERR_NOMEM    allocation failed
 *   -TVH_ERR_IO       creating the directory or a file, or writing, failed
 *                     (errno kept); sticky: later writes return it too
 */
#ifndef TVH_CAPTURE_H
#define TVH_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "host-tools/lib/info.h"
#include "host-tools/lib/tvt.h"
#include "net/proto.h"

#define CAP_RUN_BYTES     (64u << 10)  /* a records run becomes a chunk */
#define CAP_DIR_MAX       4096u
#define CAP_MACHINE_DIR   64u          /* bytes of the machine name in the dir name */
#define CAP_PT_OPEN_MAX   16u          /* cpuN.pt files open at once (least recently
				        * written closed first, reopened to append) */

struct cap_range {
	uint64_t first;          /* first record */
	uint64_t end;            /* one past the last */
};

/*
 * What the receiver knows about one CPU's stream and the capture does not
 * see itself (net/recv.c counts them); given with cap_set_stream before
 * cap_close.
 */
struct cap_stream_stats {
	uint64_t duplicates;       /* records received again after delivery or while held */
	uint64_t retransmit_reqs;  /* NACK ranges sent (ACKs with missing ranges) */
	uint64_t nacked_records;   /* records asked for again, summed over those ranges */
	uint64_t dropped_ahead;    /* out-of-order datagrams dropped, reorder pool full */
	uint64_t datagrams;        /* DATA datagrams received for the stream */
	const struct cap_range *missing;  /* still missing at close, ascending */
	size_t nmissing;
};

/* One CPU of the capture. */
struct cap_cpu {
	uint32_t cpu;
	/* records */
	bool have_seq;
	uint64_t first_seq;      /* of the first record written */
	uint64_t next_seq;       /* one past the last record written */
	uint64_t records;        /* records written, each once */
	uint64_t bytes;
	uint64_t lost_in_stream; /* sum of TV_REC_LOST.records seen (STOP drops) */
	uint64_t expanded;       /* compact branches written as full ones */
	bool start_known;        /* the sender said where the stream begins (FIRST) */
	uint64_t start_seq;
	uint8_t *run;            /* records not yet in a chunk */
	size_t run_len, run_cap;
	uint64_t run_first;
	uint64_t run_records;
	uint32_t run_flags;
	uint64_t chunks;
	/* declared lost by the sender (LOSS notices), ascending, merged */
	struct cap_range *loss;
	size_t nloss, loss_cap;
	uint64_t lost;           /* records in loss[] */
	/* PT */
	FILE *pt;                /* cpuN.pt while open (CAP_PT_OPEN_MAX), or NULL */
	uint64_t pt_stamp;       /* c->pt_clock at its last write */
	bool have_pt;
	uint64_t pt_first, pt_next;  /* stream offsets */
	uint64_t pt_bytes;       /* received */
	uint64_t pt_gap_bytes;   /* offsets skipped between chunks */
	/* from the receiver and the sender */
	bool have_stats;
	struct cap_stream_stats st;  /* missing copied into missing[] */
	struct cap_range *missing;
	bool have_hb;
	struct tvp_hb_cpu hb;    /* the sender's last heartbeat entry */
};

struct cap {
	char outdir[CAP_DIR_MAX];
	char dir[CAP_DIR_MAX];   /* the session directory ("" until cap_begin) */
	bool dir_named;          /* dir has its final name (made or renamed after a HELLO) */
	char peer[64];           /* "a.b.c.d:port" the datagrams came from */
	uint64_t session;
	bool have_hello;
	struct tvp_hello hello;
	uint64_t start_ns, end_ns;   /* receiver's clock, ns since 1970 */
	FILE *f;                 /* trace.tvt */
	struct tvt_writer w;
	int error;               /* first error, sticky */
	int saved_errno;
	struct cap_cpu *cpus[TVP_MAX_CPUS];
	uint32_t ncpus;          /* one past the highest CPU seen */
	uint64_t records, bytes, lost, pt_bytes;  /* totals */
	uint64_t pending;        /* record bytes held in memory before cap_begin */
	unsigned pt_open;        /* cpuN.pt files open */
	uint64_t pt_clock;
	bool closed;
	bool have_buffers;       /* the first CONFIG "buffers" record (meta.json "buffers") */
	struct tvh_buffers buffers;
};

/*
 * cap_init - a capture of session for outdir, in memory only: records
 * given before cap_begin are held (c->pending bytes), so the directory
 * can wait for the machine's name in its HELLO.  peer may be NULL.
 */
int cap_init(struct cap *c, const char *outdir, uint64_t session, const char *peer,
	     uint64_t now_ns);

/*
 * cap_begin - make the session directory under outdir (created if
 * missing, like mkdir -p) and start trace.tvt and meta.json in it; what
 * was held in memory follows.  The directory is <machine>-<session
 * %016x>, the machine name from the HELLO (none yet: "unknown") reduced
 * to [A-Za-z0-9._-]; when it exists already, ".1", ".2", ... is appended.
 * Does nothing when already begun.  cap_set_hello, cap_pt and cap_close
 * call it.
 */
int cap_begin(struct cap *c);

/* cap_open - cap_init, the HELLO if not NULL, cap_begin. */
int cap_open(struct cap *c, const char *outdir, uint64_t session,
	     const struct tvp_hello *hello, const char *peer, uint64_t now_ns);

/*
 * cap_set_hello - the machine's HELLO: begins the capture, or redoes
 * meta.json; a capture begun without a HELLO ("unknown-<session>") is
 * first renamed to <machine>-<session> (".1", ... when taken; the open
 * files move with the directory).  A failed rename is not an error: the
 * directory keeps its name.
 */
int cap_set_hello(struct cap *c, const struct tvp_hello *hello);

/*
 * cap_records - records[0..len) of CPU cpu, whole records, the first with
 * sequence number first_seq, in stream order after what came before.
 * has_base/base_to: DATA's BASE flag; a leading compact branch that does
 * not continue the records written before is written as the full branch
 * it stands for (same sequence number), so the file never holds a chain
 * without its base.
 */
int cap_records(struct cap *c, uint32_t cpu, uint64_t first_seq,
		const void *records, size_t len, bool has_base, uint64_t base_to);

/*
 * cap_stream_start - the stream of cpu begins at seq (the sender's FIRST
 * flag): the chunk that starts there gets TVT_CHUNK_F_STREAM_START.
 */
int cap_stream_start(struct cap *c, uint32_t cpu, uint64_t seq);

/*
 * cap_pt - PT bytes of CPU cpu from stream offset `offset`, in order.
 * Written at once (not held): begins the capture if needed, so PT before
 * the HELLO opens "unknown-<session>" until cap_set_hello renames it.
 */
int cap_pt(struct cap *c, uint32_t cpu, uint64_t offset, const void *bytes,
	   size_t len);

/*
 * cap_loss - the sender declared records first .. first + count - 1 of
 * CPU cpu lost (overwritten before acknowledged).  Ranges are merged;
 * one already counted is not counted twice.
 */
int cap_loss(struct cap *c, uint32_t cpu, uint64_t first, uint64_t count);

/* cap_heartbeat - the sender's counters for one CPU (the last one wins). */
int cap_heartbeat(struct cap *c, const struct tvp_hb_cpu *e);

/* cap_set_stream - the receiver's counters for one CPU (copied). */
int cap_set_stream(struct cap *c, uint32_t cpu, const struct cap_stream_stats *st);

/* cap_flush - every pending run becomes a chunk; the file is flushed. */
int cap_flush(struct cap *c);

/*
 * cap_close - flush, write a ring snapshot chunk per CPU the sender's
 * heartbeat described, meta.json with the end time, losses.json and
 * losses.txt; close every file.  The struct keeps its counters (for a
 * summary) until cap_free.  Returns the first error of the capture's life.
 */
int cap_close(struct cap *c, uint64_t now_ns);

/* cap_free - release memory (closes first if still open, ignoring errors). */
void cap_free(struct cap *c);

/* cap_summary - the losses.txt text: one line per CPU and a total. */
void cap_summary(const struct cap *c, FILE *f);

/* Names for the metadata (never NULL). */
const char *cap_source_name(unsigned source);
const char *cap_vendor_name(unsigned vendor_id);

/*
 * cap_dir_name - the directory name for a machine name and session id
 * into out[0..cap) (see cap_open, without the suffix).  Returns its
 * length or -TVH_ERR_INVALID when it does not fit.
 */
int cap_dir_name(char *out, size_t cap, const char *machine, size_t machine_len,
		 uint64_t session);

#endif /* TVH_CAPTURE_H */
