/* SPDX-License-Identifier: MIT */
/*
 * dauth.h - the authenticated data path's primitives (docs/PROTOCOL.md,
 * "Threat model", "With a key"): the per-session key, the per-datagram
 * tag and the replay window, for both ends (the exporter and `tracevisor
 * record`).  Pure and freestanding: no allocation, no I/O.
 *
 *   Ks  = HMAC-SHA256(K, "tvnp-data-v2" | session (8, LE) | nonce_m (16)
 *                        | nonce_r (16))[0..16]
 *   tag = SipHash-2-4(Ks, datagram | pn (8, LE))
 *
 * A sealed datagram is the datagram followed by the trailer pn (8, LE) |
 * tag (8, LE).  pn counts the datagrams one direction of a session sent,
 * from 1; the receiving side keeps a window of the last DAUTH_WINDOW
 * numbers, so a datagram is taken at most once however the network
 * duplicates or reorders it, and one older than the window is refused.
 *
 * Errors (negative): DAUTH_ERR_SHORT (no room for the trailer, or a
 * sealed datagram shorter than one), DAUTH_ERR_TAG (the tag is wrong:
 * forged, damaged, or another key), DAUTH_ERR_REPLAY (pn seen already, 0,
 * or older than the window).
 */
#ifndef TV_NET_DAUTH_H
#define TV_NET_DAUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/siphash.h"

#define DAUTH_NONCE_LEN   16u
#define DAUTH_TRAILER_LEN 16u        /* pn (8) + tag (8) */
#define DAUTH_WINDOW      1024u      /* packet numbers remembered */

enum {
	DAUTH_ERR_SHORT = -1,
	DAUTH_ERR_TAG = -2,
	DAUTH_ERR_REPLAY = -3,
};

/* The receiving side's memory of packet numbers (zeroed: nothing seen). */
struct dauth_window {
	uint64_t top;                        /* highest pn accepted, 0: none */
	uint64_t bits[DAUTH_WINDOW / 64];    /* bit (pn % DAUTH_WINDOW): pn accepted */
};

/* dauth_derive - the session key from the pre-shared key and both nonces. */
void dauth_derive(const void *psk, size_t psklen, uint64_t session,
		  const uint8_t nonce_m[DAUTH_NONCE_LEN],
		  const uint8_t nonce_r[DAUTH_NONCE_LEN], uint8_t ks[SIPHASH_KEY_LEN]);

/* dauth_tag - the tag of buf[0..len) sent with packet number pn. */
uint64_t dauth_tag(const uint8_t ks[SIPHASH_KEY_LEN], const void *buf, size_t len,
		   uint64_t pn);

/*
 * dauth_seal - append the trailer for pn to buf[0..len) (cap bytes of
 * room).  Returns the sealed length or DAUTH_ERR_SHORT.
 */
int dauth_seal(uint8_t *buf, size_t len, size_t cap, const uint8_t ks[SIPHASH_KEY_LEN],
	       uint64_t pn);

/*
 * dauth_open - check a sealed datagram buf[0..len): its tag (compared in
 * constant time), then its pn against the window, which takes it only
 * when both pass (a forged datagram cannot move the window).  Returns the
 * datagram's length without the trailer (*pn: its number) or an error.
 */
int dauth_open(const uint8_t *buf, size_t len, const uint8_t ks[SIPHASH_KEY_LEN],
	       struct dauth_window *w, uint64_t *pn);

#endif /* TV_NET_DAUTH_H */
