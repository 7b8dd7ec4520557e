/* SPDX-License-Identifier: MIT */
/*
 * receiver.h - the host receiver of the export protocol (docs/PROTOCOL.md,
 * docs/RECEIVER.md): the loop behind `tracevisor record`.
 *
 * A poll loop around one UDP socket: every datagram is given to the
 * session its (source address, session id) names, where the receiver
 * state machine (net/recv.c) puts records in order and answers with
 * ACK/NACK datagrams, and the capture (capture.c) writes what it delivers
 * into <outdir>/<machine>-<session>/.  Nothing a datagram holds can make
 * it stop: bad datagrams are counted by kind and dropped.
 *
 * The loop reports as it goes, like the command it serves: progress and
 * session lines on stderr ("tracevisor record: ..."), each closed
 * session's summary and capture directory on stdout (docs/RECEIVER.md).
 */
#ifndef TVH_RECEIVER_H
#define TVH_RECEIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "host-tools/lib/record.h"
#include "net/proto.h"

#define REC_MAX_SESSIONS 64u   /* sessions kept for the summary (--machines at most) */

struct tvh_record_opts {
	struct sockaddr_in listen;
	const char *outdir;       /* where session directories go */
	uint8_t key[REC_KEY_MAX]; /* control key (start) */
	size_t keylen;
	unsigned machines;        /* accept this many sessions, exit once all closed; 0 never */
	double duration;          /* seconds; 0 forever */
	double idle;              /* close a session after this many silent seconds; 0 never */
	double status_every;      /* plain status line period (not a terminal) */
	int rcvbuf;               /* socket receive buffer bytes */
	bool quiet;               /* no progress and no summary (errors only) */
	bool start;               /* send START for start_cpus to each new session (needs key) */
	bool auth;                /* the authenticated data path with key (docs/PROTOCOL.md,
				   * "With a key"): only sealed datagrams are taken */
	struct tvp_ctl_cpus start_cpus;
};

/*
 * tvh_record_opts_init - the defaults: listen on 0.0.0.0:REC_DEFAULT_PORT,
 * outdir ".", a status line every 10 s, an 8 MiB receive buffer, no
 * limits.
 */
void tvh_record_opts_init(struct tvh_record_opts *o);

/*
 * tvh_record_run - receive until o->duration passes, o->machines sessions
 * have closed, or SIGINT/SIGTERM (handlers installed for the run, the
 * caller's restored after it), then close every session and write its
 * capture.  Returns 0, -TVH_ERR_NOMEM, -TVH_ERR_IO (socket, bind or poll
 * failed: said on stderr), or the first capture write error of a session
 * (said on stdout with its capture).
 */
int tvh_record_run(const struct tvh_record_opts *o);

#endif /* TVH_RECEIVER_H */
