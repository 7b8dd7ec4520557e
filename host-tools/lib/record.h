/* SPDX-License-Identifier: MIT */
/*
 * record.h - `tracevisor record`, the host receiver of the export
 * protocol (docs/PROTOCOL.md, docs/RECEIVER.md), and `tracevisor control`,
 * which sends one authenticated CONTROL to a traced machine.
 *
 * The receiver is a poll loop around one UDP socket: every datagram is
 * given to the session its (source address, session id) names, where the
 * receiver state machine (net/recv.c) puts records in order and answers
 * with ACK/NACK datagrams, and the capture (host-tools/lib/capture.c) writes
 * what it delivers into <outdir>/<machine>-<session>/.  Nothing a datagram
 * holds can make it stop: bad datagrams are counted by kind and dropped.
 *
 * The entry points return a process exit status (0 ok, 1 error, 2 usage),
 * like the other commands of host-tools/cli/main.c.  The parsers below are
 * pure and return 0 or -TVH_ERR_INVALID.
 */
#ifndef TVH_RECORD_H
#define TVH_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>

#include "net/proto.h"

#define REC_DEFAULT_PORT TVP_PORT     /* 6543, the hypervisor's `receiver =` default */
#define REC_KEY_MAX      256u         /* bytes of control key */

int tvh_cmd_record(int argc, char **argv);
void tvh_record_usage(FILE *f);
int tvh_cmd_control(int argc, char **argv);
void tvh_control_usage(FILE *f);

/*
 * rec_parse_addr - "ADDR:PORT", "ADDR" (default_port) or ":PORT" /
 * "PORT" (ADDR 0.0.0.0), IPv4 dotted quad or "localhost".
 */
int rec_parse_addr(const char *s, uint16_t default_port, struct sockaddr_in *out);

/*
 * rec_parse_key_hex - an even number of hex digits (whitespace and a
 * leading "0x" allowed) into key[0..REC_KEY_MAX); *len gets the bytes.
 * An empty key is refused.
 */
int rec_parse_key_hex(const char *s, uint8_t *key, size_t *len);

/*
 * rec_load_key - --key FILE: a file holding hex digits (as above) is
 * decoded, any other file is the key's raw bytes (up to REC_KEY_MAX).
 * Returns 0, -TVH_ERR_IO (errno kept) or -TVH_ERR_INVALID (empty, too long).
 */
int rec_load_key(const char *path, uint8_t *key, size_t *len);

/* rec_parse_cpus - "all", "3", "0-3,8" into a 1024-bit mask (16 words). */
int rec_parse_cpus(const char *s, uint64_t mask[16]);

/* rec_human - "12.3 M" style (1000-based) for the progress line. */
void rec_human(char *out, size_t cap, double v);

#endif /* TVH_RECORD_H */
