/* SPDX-License-Identifier: MIT */
/*
 * fuzz_recv.c - libFuzzer target: a sequence of datagrams from several
 * sources through the receiver state machine (net/recv.c: reordering,
 * duplicates, LOSS, ACK building, eviction, close) into captures held in
 * memory (capture.c: runs, loss ranges, escaped summary), as `tracevisor
 * record` feeds them.  Input: records of [source (1), length (2, LE),
 * bytes]; source bits 0-1 pick one of 4 addresses, bit 2 makes the
 * header's length and CRC right (so mutations reach the state machine).  Nothing is written to disk
 * (cap_begin is never reached: no HELLO or PT goes to the capture).
 */
#include <stdio.h>
#include <string.h>

#include "host-tools/lib/capture.h"
#include "host-tools/lib/le.h"
#include "net/proto.h"
#include "net/recv.h"

#define FZ_CAPS 4

struct fz {
	struct cap cap[FZ_CAPS];
	uint64_t sent;
};

static struct cap *cap_of(struct fz *z, uint64_t session)
{
	struct cap *c = &z->cap[session % FZ_CAPS];

	if (c->session != session) {
		cap_free(c);
		if (cap_init(c, "/nonexistent-fuzz", session, "fuzz", 1))
			return NULL;
	}
	return c;
}

static void fz_records(void *ctx, uint64_t session, uint32_t cpu, uint64_t first_seq,
		       const uint8_t *records, size_t len, uint32_t count, bool has_base,
		       uint64_t base_to)
{
	struct cap *c = cap_of(ctx, session);

	(void)count;
	if (c && c->pending < (1u << 20))
		cap_records(c, cpu, first_seq, records, len, has_base, base_to);
}

static void fz_loss(void *ctx, uint64_t session, uint32_t cpu, uint64_t first_seq,
		    uint64_t count)
{
	struct cap *c = cap_of(ctx, session);

	if (c)
		cap_loss(c, cpu, first_seq, count);
}

static void fz_hb(void *ctx, uint64_t session, const struct tvp_heartbeat *h,
		  const struct tvp_hb_cpu *cpus)
{
	struct cap *c = cap_of(ctx, session);

	for (unsigned i = 0; c && i < h->ncpus && i < TVP_HB_MAX_CPUS; i++)
		cap_heartbeat(c, &cpus[i]);
}

static int fz_send(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	struct fz *z = ctx;
	struct proto_msg m;

	(void)addr;
	/* Everything the receiver builds must decode. */
	if (proto_decode(buf, len, &m))
		__builtin_trap();
	z->sent += len;
	return 0;
}

static const struct recv_ops fz_ops = {
	.records = fz_records, .loss = fz_loss, .heartbeat = fz_hb, .send = fz_send,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct receiver r;
	static struct fz z;
	static FILE *null;
	size_t off = 0;

	if (!null)
		null = fopen("/dev/null", "w");
	memset(&z, 0, sizeof(z));
	recv_init(&r, &fz_ops, &z, 1000);
	recv_set_ack_every(&r, 1 + (size ? data[0] % RECV_ACK_EVERY_MAX : 0));
	while (off + 3 <= size) {
		uint64_t addr = data[off] & 3;
		size_t len = tvh_le16(data + off + 1);

		off += 3;
		if (len > size - off)
			len = size - off;
		if ((data[off - 3] & 4) && len >= sizeof(struct tvp_hdr) && len <= TVP_MAX_DATAGRAM) {
			/* Mutations break the CRC and length: make them right, to get past decoding. */
			static uint8_t fix[TVP_MAX_DATAGRAM];

			memcpy(fix, data + off, len);
			tvh_put_le16(fix + 6, (uint16_t)len);
			tvh_put_le32(fix + TVP_HDR_CRC_OFFSET, 0);
			tvh_put_le32(fix + TVP_HDR_CRC_OFFSET, proto_crc32(0, fix, len));
			recv_feed(&r, fix, len, addr);
		} else {
			recv_feed(&r, data + off, len, addr);
		}
		off += len;
		if (addr == 3)
			recv_flush(&r);
	}
	for (unsigned i = 0; i < RECV_MAX_SESSIONS; i++)
		if (r.sess[i].used)
			recv_close(&r, r.sess[i].id);
	for (unsigned i = 0; i < FZ_CAPS; i++) {
		if (z.cap[i].session) {
			cap_summary(&z.cap[i], null);
			cap_free(&z.cap[i]);
		}
	}
	return 0;
}
