/* SPDX-License-Identifier: MIT */
/*
 * fuzz_proto.c - libFuzzer target: one datagram through proto_decode, the
 * export protocol's decoder shared by the hypervisor and the receiver,
 * for every type (HELLO, HELLO_ACK, DATA, PT, ACK, HEARTBEAT, LOSS,
 * CONTROL with each op incl. MEM_WATCH, CONTROL_REPLY), and a decoded
 * CONTROL's tag through proto_control_verify (the check the machine runs
 * before it applies one).  fuzz_recv reaches the decoder only behind the
 * receiver's session logic; here every body is reached directly.
 * Input: one flag byte (bit 0: make the header's length and CRC right,
 * so that mutations get past them to the body checks), the datagram.
 * A decoded message must stay inside the datagram: its variable parts
 * (records, PT bytes, label, tag) are checked against the buffer.
 * Flag bit 1 instead drives the sealed data path (net/dauth.c): the bytes
 * opened as a sealed datagram as they are, then a sequence of packet
 * numbers taken from them, each sealed, maybe damaged, and opened
 * against one replay window, checked against a model of the window
 * (taken once, never 0, never older than DAUTH_WINDOW below the top; a
 * damaged one refused without moving the window).
 */
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/le.h"
#include "net/dauth.h"
#include "net/proto.h"

static void inside(const void *p, size_t n, const uint8_t *buf, size_t len)
{
	const uint8_t *q = p;

	if (n && (!q || q < buf || q + n > buf + len))
		abort();
}

/*
 * What the decoder accepted, encoded again with a key, decodes to the
 * same op and arguments and verifies with that key (and not with
 * another): the machine's decoder and the receiver's encoder agree.
 */
static void control_round_trip(const struct proto_msg *m, const uint8_t *buf, size_t len,
			       const uint8_t *key, size_t keylen)
{
	static uint8_t args[TVP_CTL_ARGS_MAX], out[TVP_MAX_DATAGRAM];
	const struct tvp_control *c = &m->u.control.c;
	struct proto_msg m2;
	size_t fixed = 0, label = 0;
	int n;

	switch (c->op) {
	case TVP_CTL_START:
	case TVP_CTL_STOP:
		fixed = sizeof(struct tvp_ctl_cpus);
		break;
	case TVP_CTL_FILTERS:
		fixed = sizeof(struct tvp_ctl_filter);
		break;
	case TVP_CTL_MARKER:
		fixed = sizeof(struct tvp_ctl_marker);
		label = m->u.control.arg.marker.label_len;
		break;
	case TVP_CTL_MEM_WATCH:
		fixed = sizeof(struct tvp_ctl_mem_watch);
		label = m->u.control.arg.mem_watch.label_len;
		break;
	default:
		break;
	}
	if (fixed + label != c->arg_len || label > TVP_LABEL_MAX)
		abort();
	if (label)
		inside(m->u.control.label, label, buf, len);
	memcpy(args, &m->u.control.arg, fixed);
	if (label)
		memcpy(args + fixed, m->u.control.label, label);
	n = proto_encode_control(out, sizeof(out), m->session, c, args, key, keylen);
	if (n <= 0 || proto_decode(out, (size_t)n, &m2))
		abort();
	if (m2.type != TVP_CONTROL || m2.session != m->session ||
	    m2.u.control.c.counter != c->counter || m2.u.control.c.op != c->op ||
	    m2.u.control.c.arg_len != c->arg_len ||
	    memcmp(&m2.u.control.arg, &m->u.control.arg, fixed) ||
	    (label && memcmp(m2.u.control.label, m->u.control.label, label)))
		abort();
	if (proto_control_verify(out, (size_t)n, key, keylen) != 0)
		abort();
	if (proto_control_verify(out, (size_t)n, key, keylen - 1) == 0)
		abort();
}

/* The window's model: the packet numbers taken, and the highest. */
struct fz_model {
	uint64_t taken[512];
	unsigned n;
	uint64_t top;
};

static bool model_taken(const struct fz_model *md, uint64_t pn)
{
	for (unsigned i = 0; i < md->n; i++)
		if (md->taken[i] == pn)
			return true;
	return false;
}

static void sealed_path(const uint8_t *data, size_t size)
{
	static const uint8_t ks[SIPHASH_KEY_LEN] = "fuzz-session-ks";
	static uint8_t sealed[64 + DAUTH_TRAILER_LEN];
	static struct fz_model md;
	struct dauth_window w = { 0 }, before;
	size_t body = size < 64 ? size : 64;
	uint64_t pn;

	/* As they are: any bytes, any length (a forgery is refused, 2^-64 aside). */
	dauth_open(data, size, ks, &w, &pn);
	memset(&w, 0, sizeof(w));
	md.n = 0;
	md.top = 0;
	for (size_t off = 0; off + 3 <= size && md.n < 512; off += 3) {
		uint8_t op = data[off];
		uint16_t v = tvh_le16(data + off + 1);
		bool want;
		int n;

		if (op & 0x40)
			pn = (uint64_t)v << 40;                  /* a jump past the window */
		else if (op & 0x80)
			pn = v;                                  /* absolute, small */
		else
			pn = md.top + (uint64_t)(int64_t)(int16_t)v; /* near the top */
		memcpy(sealed, data, body);
		n = dauth_seal(sealed, body, sizeof(sealed), ks, pn);
		if (n != (int)(body + DAUTH_TRAILER_LEN))
			abort();
		if (op & 0x20) {
			/* Damaged: refused as a forgery, the window untouched. */
			sealed[op % (size_t)n] ^= (uint8_t)(1u << (op & 7)) | 1;
			before = w;
			if (dauth_open(sealed, (size_t)n, ks, &w, NULL) != DAUTH_ERR_TAG ||
			    memcmp(&before, &w, sizeof(w)))
				abort();
			continue;
		}
		want = pn != 0 && !(md.top >= DAUTH_WINDOW && pn <= md.top - DAUTH_WINDOW) &&
		       !model_taken(&md, pn);
		{
			uint64_t got_pn = 0;
			int r = dauth_open(sealed, (size_t)n, ks, &w, &got_pn);

			if (want ? r != (int)body || got_pn != pn : r != DAUTH_ERR_REPLAY)
				abort();
		}
		if (want) {
			md.taken[md.n++] = pn;
			if (pn > md.top)
				md.top = pn;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t buf[TVP_MAX_DATAGRAM];
	static const uint8_t key[] = "fuzz-key-0123456789abcdef";
	struct proto_msg m;
	size_t len;

	if (size < 1)
		return 0;
	if (data[0] & 2) {
		sealed_path(data + 1, size - 1);
		return 0;
	}
	len = size - 1;
	if (len > sizeof(buf))
		len = sizeof(buf);
	memcpy(buf, data + 1, len);
	if ((data[0] & 1) && len >= sizeof(struct tvp_hdr)) {
		tvh_put_le16(buf + 6, (uint16_t)len);
		tvh_put_le32(buf + TVP_HDR_CRC_OFFSET, 0);
		tvh_put_le32(buf + TVP_HDR_CRC_OFFSET, proto_crc32(0, buf, len));
	}
	if (proto_decode(buf, len, &m))
		return 0;
	if (m.length != len)
		abort();
	switch (m.type) {
	case TVP_DATA:
		inside(m.u.data.records, m.u.data.bytes, buf, len);
		break;
	case TVP_PT:
		inside(m.u.pt.bytes, m.u.pt.len, buf, len);
		break;
	case TVP_CONTROL:
		inside(m.u.control.tag, TVP_TAG_LEN, buf, len);
		/* With no key nothing verifies. */
		if (proto_control_verify(buf, len, key, 0) == 0)
			abort();
		control_round_trip(&m, buf, len, key, sizeof(key) - 1);
		break;
	default:
		break;
	}
	return 0;
}
