/* SPDX-License-Identifier: MIT */
/*
 * record.h - the export protocol's host side (docs/PROTOCOL.md), apart
 * from the receiver loop (receiver.h): the pure parsers of addresses,
 * keys and CPU sets the commands `record` and `control` take, the
 * machine a capture directory came from, and sending a CONTROL datagram.
 *
 * The parsers are pure and return 0 or -TVH_ERR_INVALID.  Option parsing
 * and messages are the CLI's (host-tools/cli/cmd_record.c, cmd_control.c).
 */
#ifndef TVH_RECORD_H
#define TVH_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "net/proto.h"

#define REC_DEFAULT_PORT TVP_PORT     /* 6543, the hypervisor's `receiver =` default */
#define REC_KEY_MAX      256u         /* bytes of control key */

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

/* rec_addr_str - "A.B.C.D:PORT". */
void rec_addr_str(const struct sockaddr_in *a, char *out, size_t cap);

/* rec_wall_ns - CLOCK_REALTIME in ns: above any earlier run's CONTROL counter. */
uint64_t rec_wall_ns(void);

/*
 * rec_capture_target - the machine a capture directory (what the receiver
 * wrote) came from: DIR/meta.json's session_id and peer.  Returns 0,
 * -TVH_ERR_IO (cannot read DIR/meta.json, errno kept) or -TVH_ERR_INVALID
 * (no nonzero session_id, or no peer address in it).
 */
int rec_capture_target(const char *dir, uint64_t *session, struct sockaddr_in *to);

/*
 * rec_send_repeat - send the datagram buf[0..len) to `to` repeat times,
 * 100 ms apart, from a new UDP socket (a CONTROL from proto_encode_control:
 * the same counter each time, so the machine applies it once).  Returns 0,
 * or -TVH_ERR_IO with errno kept and *failed naming the call that failed
 * ("socket" or "send"); *failed is NULL on success.
 */
int rec_send_repeat(const struct sockaddr_in *to, const void *buf, size_t len,
		    uint64_t repeat, const char **failed);

#endif /* TVH_RECORD_H */
