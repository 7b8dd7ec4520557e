/* SPDX-License-Identifier: MIT */
/*
 * test_proto.c - the export protocol's datagrams (net/proto.c): byte
 * layout of the header and of each message at its documented offsets,
 * encode/decode round trips of every type, the HMAC tag of CONTROL, and
 * every malformed class: short, magic, version, type, length, CRC (every
 * single-bit flip, every truncation), session, stream, flags and reserved
 * fields, out-of-range fields per type, DATA records that do not tile,
 * plus a seeded fuzz of well-framed garbage.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/proto.h"
#include "net/sha256.h"
#include "vmm/trace/format.h"

#define SESSION 0x1122334455667788ull
static const char KEY[] = "correct horse battery staple";

/* --- helpers ---------------------------------------------------------------- */

/* Bitwise CRC-32 (reflected 0xEDB88320), independent of the code under test. */
static uint32_t ref_crc(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
	}
	return ~c;
}

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void put(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Length field := len, CRC recomputed: a mutation reaches the check after CRC. */
static void fix(uint8_t *p, size_t len)
{
	put(p + 6, len, 2);
	put(p + 20, 0, 4);
	put(p + 20, ref_crc(p, len), 4);
}

static int dec(const uint8_t *p, size_t len)
{
	struct proto_msg m;

	return proto_decode(p, len, &m);
}

/* Two records: a 24-byte branch and a 16-byte compact one. */
static size_t two_records(uint8_t *r)
{
	memset(r, 0, 40);
	r[0] = TV_REC_BRANCH;
	r[1] = TV_BR_JMP;
	put(r + 2, 24, 2);
	put(r + 8, 0x1000, 8);
	put(r + 16, 0x2000, 8);
	r[24] = TV_REC_BRANCH_COMPACT;
	r[25] = TV_BR_RET;
	put(r + 26, 16, 2);
	put(r + 28, 0x10, 4);
	put(r + 32, 0x3000, 8);
	return 40;
}

static int make_data(uint8_t *buf)
{
	uint8_t rec[40];
	struct tvp_data d = { .first_seq = 100, .base_to = 0xabc, .count = 2 };

	two_records(rec);
	return proto_encode_data(buf, TVP_MAX_DATAGRAM, SESSION, 3, TVP_DATA_F_BASE,
				 &d, rec, sizeof(rec));
}

static struct tvp_hello sample_hello(void)
{
	struct tvp_hello h;

	memset(&h, 0, sizeof(h));
	h.hello_seq = 7;
	h.cpu_count = 4;
	h.source = TV_SOURCE_MTF;
	h.overflow = TV_OVERFLOW_OVERWRITE;
	h.vendor_id = TVP_VENDOR_INTEL;
	h.stepping = 10;
	h.family = 6;
	h.model = 0x9e;
	h.caps = TVP_CAP_SOURCE(TV_SOURCE_MTF) | TVP_CAP_SOURCE(TV_SOURCE_LBR) | TVP_CAP_CONTROL;
	h.tsc_hz = 2900000000ull;
	h.boot_tsc = 123456789;
	h.ring_bytes = 1u << 20;
	h.unix_ns = 1700000000000000000ull;
	memcpy(h.vendor, "GenuineIntel", 12);
	strcpy(h.sw_version, "v0.1-42-gdeadbee");
	strcpy(h.machine, "lab-nuc-3");
	return h;
}

/* --- header and layouts ------------------------------------------------------- */

static void test_header_layout(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	int n;

	(void)state;
	n = make_data(b);
	assert_int_equal(n, 24 + 24 + 40);
	assert_memory_equal(b, "TVNP", 4);
	assert_int_equal(b[4], 1);
	assert_int_equal(b[5], TVP_DATA);
	assert_int_equal(le(b + 6, 2), 88);
	assert_int_equal(le(b + 8, 8), SESSION);
	assert_int_equal(le(b + 16, 2), 3);
	assert_int_equal(le(b + 18, 2), TVP_DATA_F_BASE);
	/* CRC over the datagram with the field as 0. */
	{
		uint8_t c[88];

		memcpy(c, b, 88);
		memset(c + 20, 0, 4);
		assert_int_equal(le(b + 20, 4), ref_crc(c, 88));
	}
	assert_int_equal(le(b + 24, 8), 100);
	assert_int_equal(le(b + 32, 8), 0xabc);
	assert_int_equal(le(b + 40, 2), 2);
	assert_int_equal(b[48], TV_REC_BRANCH);
	assert_int_equal(b[72], TV_REC_BRANCH_COMPACT);
}

static void test_hello_round_trip(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	struct tvp_hello h = sample_hello();
	struct proto_msg m;
	int n;

	(void)state;
	n = proto_encode_hello(b, sizeof(b), SESSION, &h);
	assert_int_equal(n, 184);
	/* Documented offsets (docs/PROTOCOL.md, HELLO). */
	assert_int_equal(le(b + 24 + 4, 2), 4);
	assert_int_equal(b[24 + 6], TV_SOURCE_MTF);
	assert_int_equal(le(b + 24 + 24, 8), 2900000000ull);
	assert_memory_equal(b + 24 + 56, "GenuineIntel", 12);
	assert_memory_equal(b + 24 + 96, "lab-nuc-3", 9);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_int_equal(m.type, TVP_HELLO);
	assert_int_equal(m.session, SESSION);
	assert_memory_equal(&m.u.hello, &h, sizeof(h));
	/* Encoder refuses what the decoder would. */
	h.cpu_count = 0;
	assert_int_equal(proto_encode_hello(b, sizeof(b), SESSION, &h), PROTO_ERR_INVAL);
	h = sample_hello();
	assert_int_equal(proto_encode_hello(b, sizeof(b), 0, &h), PROTO_ERR_INVAL);
	assert_int_equal(proto_encode_hello(b, 183, SESSION, &h), PROTO_ERR_NOSPC);
	assert_int_equal(proto_encode_hello(NULL, 200, SESSION, &h), PROTO_ERR_INVAL);
}

static void test_small_types_round_trip(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	struct proto_msg m;
	struct tvp_loss l = { .first_seq = UINT64_MAX - 2, .count = 5, .total = 9 };
	struct tvp_control_reply r = { .counter = 77, .op = TVP_CTL_MARKER,
				       .status = TVP_CTL_EFAILED };
	int n;

	(void)state;
	n = proto_encode_hello_ack(b, sizeof(b), SESSION, 3);
	assert_int_equal(n, 32);
	assert_int_equal(proto_decode(b, 32, &m), 0);
	assert_int_equal(m.u.hello_ack.hello_seq, 3);

	n = proto_encode_loss(b, sizeof(b), SESSION, 5, TVP_LOSS_F_FIRST, &l);
	assert_int_equal(n, 48);
	assert_int_equal(proto_decode(b, 48, &m), 0);
	assert_int_equal(m.stream, 5);
	assert_int_equal(m.flags, TVP_LOSS_F_FIRST);
	assert_memory_equal(&m.u.loss, &l, sizeof(l));

	n = proto_encode_control_reply(b, sizeof(b), SESSION, &r);
	assert_int_equal(n, 40);
	assert_int_equal(proto_decode(b, 40, &m), 0);
	assert_int_equal(m.u.reply.counter, 77);
	assert_int_equal(m.u.reply.status, TVP_CTL_EFAILED);
	assert_int_equal(le(b + 36, 4), (uint32_t)-2);

	n = proto_encode_pt(b, sizeof(b), SESSION, 2, 4096, "\x02\x82\x02\x82", 4);
	assert_int_equal(n, 44);
	assert_int_equal(proto_decode(b, 44, &m), 0);
	assert_int_equal(m.stream, 2 | TVP_STREAM_PT);
	assert_int_equal(m.u.pt.p.offset, 4096);
	assert_int_equal(m.u.pt.len, 4);
	assert_memory_equal(m.u.pt.bytes, "\x02\x82\x02\x82", 4);
	{
		static uint8_t src[TVP_PT_MAX_PAYLOAD + 1];

		assert_int_equal(proto_encode_pt(b, sizeof(b), SESSION, 2, 0, src, 0),
				 PROTO_ERR_INVAL);
		assert_int_equal(proto_encode_pt(b, sizeof(b), SESSION, 2, 0, src,
						 TVP_PT_MAX_PAYLOAD + 1), PROTO_ERR_NOSPC);
		assert_int_equal(proto_encode_pt(b, sizeof(b), SESSION, 2, 0, src,
						 TVP_PT_MAX_PAYLOAD), (int)TVP_MAX_DATAGRAM);
	}
}

static void test_data_round_trip(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM + 8], big[TVP_DATA_MAX_PAYLOAD + 8];
	struct tvp_data d = { .first_seq = 1, .count = 1 };
	struct proto_msg m;
	int n;

	(void)state;
	n = make_data(b);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_int_equal(m.u.data.d.first_seq, 100);
	assert_int_equal(m.u.data.d.count, 2);
	assert_int_equal(m.u.data.d.base_to, 0xabc);
	assert_int_equal(m.u.data.bytes, 40);
	assert_ptr_equal(m.u.data.records, b + 48);

	/* Largest payload: padding records up to exactly TVP_DATA_MAX_PAYLOAD. */
	memset(big, 0, sizeof(big));
	{
		size_t off = 0;
		uint16_t cnt = 0;

		/* Records are multiples of 8: 1400 of the 1404 bytes can be used. */
		while (off < TVP_DATA_MAX_RECORDS) {
			size_t sz = TVP_DATA_MAX_RECORDS - off > 1024 ? 1024 : TVP_DATA_MAX_RECORDS - off;

			big[off] = TV_REC_PAD;
			put(big + off + 2, sz, 2);
			off += sz;
			cnt++;
		}
		d.count = cnt;
		n = proto_encode_data(b, sizeof(b), SESSION, 0, 0, &d, big, TVP_DATA_MAX_RECORDS);
		assert_int_equal(n, (int)TVP_MAX_DATAGRAM - 4);
		assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
		assert_int_equal(proto_encode_data(b, sizeof(b), SESSION, 0, 0, &d, big,
						   TVP_DATA_MAX_PAYLOAD + 8), PROTO_ERR_NOSPC);
	}
	/* Records that do not tile, or a wrong count: refused by the encoder. */
	d.count = 3;
	two_records(big);
	assert_int_equal(proto_encode_data(b, sizeof(b), SESSION, 0, 0, &d, big, 40), PROTO_ERR_INVAL);
	d.count = 2;
	assert_int_equal(proto_encode_data(b, sizeof(b), SESSION, 0, 0, &d, big, 32), PROTO_ERR_INVAL);
	assert_int_equal(proto_encode_data(b, sizeof(b), SESSION, TVP_MAX_CPUS, 0, &d, big, 40),
			 PROTO_ERR_INVAL);
	assert_int_equal(proto_encode_data(b, 80, SESSION, 0, 0, &d, big, 40), PROTO_ERR_NOSPC);
	/* base_to is not sent without the flag. */
	d.base_to = 55;
	n = proto_encode_data(b, sizeof(b), SESSION, 0, 0, &d, big, 40);
	assert_true(n > 0);
	assert_int_equal(le(b + 32, 8), 0);
}

static void test_ack_round_trip(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	struct tvp_range r[TVP_ACK_MAX_RANGES + 1];
	struct tvp_ack a = { .cum = UINT64_MAX - 10, .highest = 20, .nranges = 3 };
	struct proto_msg m;
	int n;

	(void)state;
	/* Across the 2^64 wrap: cum near the top, highest past zero. */
	r[0] = (struct tvp_range){ UINT64_MAX - 10, UINT64_MAX - 5 };
	r[1] = (struct tvp_range){ UINT64_MAX, 3 };
	r[2] = (struct tvp_range){ 10, 20 };
	n = proto_encode_ack(b, sizeof(b), SESSION, 1 | TVP_STREAM_PT, &a, r);
	assert_int_equal(n, 24 + 24 + 48);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_int_equal(m.u.ack.a.nranges, 3);
	assert_memory_equal(m.u.ack.ranges, r, 3 * sizeof(r[0]));

	/* The maximum number of ranges; one more is refused. */
	a.cum = 0;
	a.nranges = TVP_ACK_MAX_RANGES;
	for (unsigned i = 0; i <= TVP_ACK_MAX_RANGES; i++)
		r[i] = (struct tvp_range){ 10 * i, 10 * i + 5 };
	a.highest = 10 * TVP_ACK_MAX_RANGES;
	n = proto_encode_ack(b, sizeof(b), SESSION, 0, &a, r);
	assert_true(n > 0);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	a.nranges = TVP_ACK_MAX_RANGES + 1;
	assert_int_equal(proto_encode_ack(b, sizeof(b), SESSION, 0, &a, r), PROTO_ERR_INVAL);

	/* Encoder refuses ranges the decoder would. */
	a.nranges = 2;
	r[1].first = r[0].end;   /* no gap */
	assert_int_equal(proto_encode_ack(b, sizeof(b), SESSION, 0, &a, r), PROTO_ERR_INVAL);
}

static void test_heartbeat_round_trip(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM + 64];
	struct tvp_hb_cpu c[TVP_HB_MAX_CPUS + 1];
	struct tvp_heartbeat h = { .tsc = 99, .hb_seq = 4, .first_cpu = 10,
				   .ncpus = TVP_HB_MAX_CPUS, .ctl_bad_auth = 2,
				   .tx_errors = 1 };
	struct proto_msg m;
	int n;

	(void)state;
	memset(c, 0, sizeof(c));
	for (unsigned i = 0; i <= TVP_HB_MAX_CPUS; i++) {
		c[i].cpu = 10 + i;
		c[i].produced = 1000 + i;
		c[i].ring_dropped = i;
	}
	n = proto_encode_heartbeat(b, sizeof(b), SESSION, &h, c);
	assert_int_equal(n, 24 + 40 + 64 * 21);
	assert_true(n <= (int)TVP_MAX_DATAGRAM);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_memory_equal(&m.u.hb.h, &h, sizeof(h));
	assert_memory_equal(m.u.hb.cpus, c, TVP_HB_MAX_CPUS * sizeof(c[0]));
	h.ncpus++;
	assert_int_equal(proto_encode_heartbeat(b, sizeof(b), SESSION, &h, c), PROTO_ERR_INVAL);
	h.ncpus = 2;
	c[1].cpu = 12;   /* not consecutive */
	assert_int_equal(proto_encode_heartbeat(b, sizeof(b), SESSION, &h, c), PROTO_ERR_INVAL);
}

static int enc_control(uint8_t *b, uint64_t counter, uint16_t op, uint16_t arg_len,
		       const void *args)
{
	struct tvp_control c = { .counter = counter, .op = op, .arg_len = arg_len };

	return proto_encode_control(b, TVP_MAX_DATAGRAM, SESSION, &c, args, KEY, strlen(KEY));
}

static void test_control_round_trip_and_tag(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM], raw[TVP_MAX_DATAGRAM], tag[32];
	struct tvp_ctl_cpus cpus;
	struct tvp_ctl_filter f;
	struct { struct tvp_ctl_marker mk; char label[5]; } mk;
	struct proto_msg m;
	int n;

	(void)state;
	/* NOP: header + 16 + tag. */
	n = enc_control(b, 1, TVP_CTL_NOP, 0, NULL);
	assert_int_equal(n, 24 + 16 + 32);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_int_equal(proto_control_verify(b, (size_t)n, KEY, strlen(KEY)), 0);
	/* The tag is HMAC-SHA256 over the bytes before it, crc as 0. */
	memcpy(raw, b, (size_t)n);
	memset(raw + 20, 0, 4);
	hmac_sha256(KEY, strlen(KEY), raw, (size_t)n - 32, tag);
	assert_memory_equal(tag, b + n - 32, 32);
	assert_ptr_equal(m.u.control.tag, b + n - 32);

	memset(&cpus, 0, sizeof(cpus));
	cpus.mask[0] = 0x5;
	cpus.mask[15] = 1ull << 63;
	n = enc_control(b, 2, TVP_CTL_START, sizeof(cpus), &cpus);
	assert_int_equal(n, 24 + 16 + 128 + 32);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_int_equal(m.u.control.c.op, TVP_CTL_START);
	assert_memory_equal(&m.u.control.arg.cpus, &cpus, sizeof(cpus));

	memset(&f, 0, sizeof(f));
	f.cpl = 1;
	f.nranges = 2;
	f.cr3 = 0x1000;
	f.ranges[0].lo = 0x400000;
	f.ranges[0].hi = 0x4fffff;
	f.ranges[1].lo = f.ranges[1].hi = 0xffffffff81000000ull;
	n = enc_control(b, 3, TVP_CTL_FILTERS, sizeof(f), &f);
	assert_true(n > 0);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_memory_equal(&m.u.control.arg.filter, &f, sizeof(f));

	memset(&mk, 0, sizeof(mk));
	mk.mk.value = 0xfeed;
	mk.mk.cpu = TVP_CPU_ALL;
	mk.mk.label_len = 5;
	memcpy(mk.label, "hello", 5);
	n = enc_control(b, 4, TVP_CTL_MARKER, 21, &mk);
	assert_int_equal(n, 24 + 16 + 24 + 32);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_int_equal(m.u.control.arg.marker.value, 0xfeed);
	assert_memory_equal(m.u.control.label, "hello", 5);
	assert_int_equal(proto_control_verify(b, (size_t)n, KEY, strlen(KEY)), 0);

	/* Wrong key, no key, any changed byte (CRC made right again). */
	assert_int_equal(proto_control_verify(b, (size_t)n, "wrong", 5), PROTO_ERR_AUTH);
	assert_int_equal(proto_control_verify(b, (size_t)n, NULL, 0), PROTO_ERR_AUTH);
	for (int i = 0; i < n; i++) {
		if ((i >= 20 && i < 24) || i == 6 || i == 7)
			continue;   /* crc: outside the tag; length: fix() rewrites it */
		memcpy(raw, b, (size_t)n);
		raw[i] ^= 0x01;
		fix(raw, (size_t)n);
		assert_int_equal(proto_control_verify(raw, (size_t)n, KEY, strlen(KEY)),
				 PROTO_ERR_AUTH);
	}
	/* Encoder refusals. */
	assert_int_equal(enc_control(b, 5, TVP_CTL_START, 8, &cpus), PROTO_ERR_INVAL);
	assert_int_equal(enc_control(b, 5, TVP_CTL_OP_MAX, 0, NULL), PROTO_ERR_INVAL);
	assert_int_equal(enc_control(b, 0, TVP_CTL_NOP, 0, NULL), PROTO_ERR_INVAL);
	mk.mk.label_len = 4;
	assert_int_equal(enc_control(b, 5, TVP_CTL_MARKER, 21, &mk), PROTO_ERR_INVAL);
	f.cpl = 0;
	assert_int_equal(enc_control(b, 5, TVP_CTL_FILTERS, sizeof(f), &f), PROTO_ERR_INVAL);
}

/* MEM_WATCH: arm with a label, remove, label; every field rule refused by the decoder. */
static void test_control_mem_watch(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM], raw[TVP_MAX_DATAGRAM];
	struct { struct tvp_ctl_mem_watch w; char label[TVP_LABEL_MAX + 8]; } a;
	struct proto_msg m;
	/* arguments start after the header (24) and struct tvp_control (16) */
	const size_t at = 24 + 16;
	static const struct { size_t off; uint8_t v; } bad[] = {
		{ 16, 0 }, { 16, 4 },          /* op */
		{ 17, 0 }, { 17, 4 },          /* ARM's mode */
		{ 18, 1 },                     /* ARM with an id */
		{ 10, 0 },                     /* hi (0x1000) below lo */
		{ 20, 6 },                     /* label_len beyond arg_len */
	};
	int n;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.w.lo = 0x10000;
	a.w.hi = 0x11000;
	a.w.op = TV_MEMW_ARM;
	a.w.mode = TV_MEMW_MODE_RW;
	a.w.label_len = 5;
	memcpy(a.label, "ring0", 5);
	n = enc_control(b, 7, TVP_CTL_MEM_WATCH, sizeof(a.w) + 5, &a);
	assert_int_equal(n, 24 + 16 + 32 + 32);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_int_equal(proto_control_verify(b, (size_t)n, KEY, strlen(KEY)), 0);
	assert_int_equal(m.u.control.c.op, TVP_CTL_MEM_WATCH);
	assert_int_equal(m.u.control.arg.mem_watch.lo, 0x10000);
	assert_int_equal(m.u.control.arg.mem_watch.hi, 0x11000);
	assert_int_equal(m.u.control.arg.mem_watch.op, TV_MEMW_ARM);
	assert_int_equal(m.u.control.arg.mem_watch.mode, TV_MEMW_MODE_RW);
	assert_int_equal(m.u.control.arg.mem_watch.id, 0);
	assert_int_equal(m.u.control.arg.mem_watch.label_len, 5);
	assert_memory_equal(m.u.control.label, "ring0", 5);
	/* the wire bytes: lo, hi, op, mode, id, label_len, label */
	assert_int_equal(b[at], 0x00);
	assert_int_equal(b[at + 2], 0x01);
	assert_int_equal(b[at + 10], 0x01);
	assert_int_equal(b[at + 16], TV_MEMW_ARM);
	assert_int_equal(b[at + 17], TV_MEMW_MODE_RW);
	assert_int_equal(b[at + 20], 5);
	assert_memory_equal(b + at + 24, "ring0", 5);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(raw, b, (size_t)n);
		raw[at + bad[i].off] = bad[i].v;
		fix(raw, (size_t)n);
		if (dec(raw, (size_t)n) != PROTO_ERR_FIELD)
			fail_msg("bad field %zu: %d", i, dec(raw, (size_t)n));
	}

	/* REMOVE: an id, nothing else */
	memset(&a, 0, sizeof(a));
	a.w.op = TV_MEMW_REMOVE;
	a.w.id = 9;
	n = enc_control(b, 8, TVP_CTL_MEM_WATCH, sizeof(a.w), &a);
	assert_true(n > 0);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_int_equal(m.u.control.arg.mem_watch.id, 9);
	memcpy(raw, b, (size_t)n);
	raw[at + 18] = 0;                      /* REMOVE of id 0 */
	fix(raw, (size_t)n);
	assert_int_equal(dec(raw, (size_t)n), PROTO_ERR_FIELD);
	memcpy(raw, b, (size_t)n);
	raw[at + 17] = 1;                      /* REMOVE with a mode */
	fix(raw, (size_t)n);
	assert_int_equal(dec(raw, (size_t)n), PROTO_ERR_FIELD);

	/* LABEL: a range, no mode */
	memset(&a, 0, sizeof(a));
	a.w.op = TV_MEMW_LABEL;
	a.w.lo = 0x2000;
	a.w.hi = 0x2010;
	a.w.label_len = TVP_LABEL_MAX;
	memset(a.label, 'x', TVP_LABEL_MAX);
	n = enc_control(b, 9, TVP_CTL_MEM_WATCH, (uint16_t)(sizeof(a.w) + TVP_LABEL_MAX), &a);
	assert_true(n > 0);
	assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
	assert_int_equal(m.u.control.arg.mem_watch.label_len, TVP_LABEL_MAX);

	/* encoder refusals: label too long, label_len not arg_len's, bad fields */
	a.w.label_len = TVP_LABEL_MAX + 1;
	assert_int_equal(enc_control(b, 10, TVP_CTL_MEM_WATCH,
				     (uint16_t)(sizeof(a.w) + TVP_LABEL_MAX + 1), &a), PROTO_ERR_INVAL);
	a.w.label_len = 3;
	assert_int_equal(enc_control(b, 10, TVP_CTL_MEM_WATCH, sizeof(a.w) + 4, &a),
			 PROTO_ERR_INVAL);
	assert_int_equal(enc_control(b, 10, TVP_CTL_MEM_WATCH, 8, &a), PROTO_ERR_INVAL);
	a.w.mode = TV_MEMW_MODE_R;             /* LABEL with a mode */
	assert_int_equal(enc_control(b, 10, TVP_CTL_MEM_WATCH, sizeof(a.w) + 3, &a),
			 PROTO_ERR_INVAL);
}

/* --- malformed classes ------------------------------------------------------------ */

static void test_malformed_framing(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM + 16], c[TVP_MAX_DATAGRAM + 16];
	int n;

	(void)state;
	n = make_data(b);
	assert_int_equal(dec(b, (size_t)n), 0);
	assert_int_equal(proto_decode(NULL, 10, NULL), PROTO_ERR_INVAL);
	for (size_t len = 0; len < 24; len++)
		assert_int_equal(dec(b, len), PROTO_ERR_SHORT);

	memcpy(c, b, (size_t)n);
	c[0] ^= 1;
	assert_int_equal(dec(c, (size_t)n), PROTO_ERR_MAGIC);
	memcpy(c, b, (size_t)n);
	c[4] = 2;
	assert_int_equal(dec(c, (size_t)n), PROTO_ERR_VERSION);
	c[4] = 0;
	assert_int_equal(dec(c, (size_t)n), PROTO_ERR_VERSION);
	for (unsigned t = 0; t < 256; t++) {
		if (t >= 1 && t < TVP_TYPE_MAX)
			continue;
		memcpy(c, b, (size_t)n);
		c[5] = (uint8_t)t;
		assert_int_equal(dec(c, (size_t)n), PROTO_ERR_TYPE);
	}
	/* Length field disagreeing with the datagram, either way. */
	memcpy(c, b, (size_t)n);
	put(c + 6, (uint64_t)n + 8, 2);
	assert_int_equal(dec(c, (size_t)n), PROTO_ERR_LENGTH);
	assert_int_equal(dec(b, (size_t)n - 8), PROTO_ERR_LENGTH);
	/* Over the maximum datagram, self-consistent. */
	memset(c, 0, sizeof(c));
	memcpy(c, b, (size_t)n);
	fix(c, TVP_MAX_DATAGRAM + 8);
	assert_int_equal(dec(c, TVP_MAX_DATAGRAM + 8), PROTO_ERR_LENGTH);
	/* CRC. */
	memcpy(c, b, (size_t)n);
	c[20] ^= 0x80;
	assert_int_equal(dec(c, (size_t)n), PROTO_ERR_CRC);
	/* Every single-bit error is caught (CRC-32 detects all of them). */
	for (int i = 0; i < n; i++) {
		for (int bit = 0; bit < 8; bit++) {
			memcpy(c, b, (size_t)n);
			c[i] ^= (uint8_t)(1u << bit);
			assert_true(dec(c, (size_t)n) < 0);
		}
	}
	/* Every truncation is refused. */
	for (int len = 0; len < n; len++)
		assert_true(dec(b, (size_t)len) < 0);
	/* Session 0. */
	memcpy(c, b, (size_t)n);
	put(c + 8, 0, 8);
	fix(c, (size_t)n);
	assert_int_equal(dec(c, (size_t)n), PROTO_ERR_SESSION);
}

static void expect_mut(const uint8_t *b, size_t n, size_t off, uint64_t v, unsigned w, int err)
{
	uint8_t c[TVP_MAX_DATAGRAM];

	memcpy(c, b, n);
	put(c + off, v, w);
	fix(c, n);
	assert_int_equal(dec(c, n), err);
}

static void test_malformed_stream(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	struct tvp_hello h = sample_hello();
	struct tvp_loss l = { .first_seq = 1, .count = 1, .total = 1 };
	int n;

	(void)state;
	n = make_data(b);
	expect_mut(b, (size_t)n, 16, TVP_STREAM_PT | 3, 2, PROTO_ERR_STREAM);
	expect_mut(b, (size_t)n, 16, TVP_MAX_CPUS, 2, PROTO_ERR_STREAM);
	expect_mut(b, (size_t)n, 16, TVP_MAX_CPUS - 1, 2, 0);
	n = proto_encode_hello(b, sizeof(b), SESSION, &h);
	expect_mut(b, (size_t)n, 16, 1, 2, PROTO_ERR_STREAM);
	n = proto_encode_pt(b, sizeof(b), SESSION, 1, 0, "x", 1);
	expect_mut(b, (size_t)n, 16, 1, 2, PROTO_ERR_STREAM);
	n = proto_encode_loss(b, sizeof(b), SESSION, 1, 0, &l);
	expect_mut(b, (size_t)n, 16, TVP_STREAM_PT | 1, 2, PROTO_ERR_STREAM);
	n = enc_control(b, 1, TVP_CTL_NOP, 0, NULL);
	expect_mut(b, (size_t)n, 16, 2, 2, PROTO_ERR_STREAM);
}

static void test_malformed_bodies(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	struct tvp_hello h = sample_hello();
	struct tvp_range r[2] = { { 10, 12 }, { 14, 15 } };
	struct tvp_ack a = { .cum = 10, .highest = 20, .nranges = 2 };
	struct tvp_loss l = { .first_seq = 1, .count = 2, .total = 2 };
	struct tvp_control_reply rep = { .counter = 1, .op = TVP_CTL_NOP };
	struct tvp_hb_cpu c = { .cpu = 0 };
	struct tvp_heartbeat hb = { .ncpus = 1 };
	size_t n;

	(void)state;
	/* HELLO: short body, long body, flags, reserved, caps, enums. */
	n = (size_t)proto_encode_hello(b, sizeof(b), SESSION, &h);
	{
		uint8_t c2[TVP_MAX_DATAGRAM];

		memcpy(c2, b, n);
		fix(c2, n - 60);
		assert_int_equal(dec(c2, n - 60), PROTO_ERR_SHORT);
		memset(c2 + n, 0, 8);
		memcpy(c2, b, n);
		fix(c2, n + 8);
		assert_int_equal(dec(c2, n + 8), PROTO_ERR_LENGTH);
	}
	expect_mut(b, n, 18, 1, 2, PROTO_ERR_FLAGS);
	expect_mut(b, n, 24 + 14, 1, 2, PROTO_ERR_FLAGS);
	expect_mut(b, n, 24 + 20, 1, 4, PROTO_ERR_FLAGS);
	expect_mut(b, n, 24 + 16, 1u << 20, 4, PROTO_ERR_FLAGS);
	expect_mut(b, n, 24 + 4, 0, 2, PROTO_ERR_FIELD);
	expect_mut(b, n, 24 + 4, TVP_MAX_CPUS + 1, 2, PROTO_ERR_FIELD);
	expect_mut(b, n, 24 + 6, TV_SOURCE_MAX + 1, 1, PROTO_ERR_FIELD);
	expect_mut(b, n, 24 + 7, 2, 1, PROTO_ERR_FIELD);
	expect_mut(b, n, 24 + 8, 3, 1, PROTO_ERR_FIELD);

	/* HELLO_ACK. */
	n = (size_t)proto_encode_hello_ack(b, sizeof(b), SESSION, 1);
	expect_mut(b, n, 24 + 4, 1, 4, PROTO_ERR_FLAGS);
	expect_mut(b, n, 18, 1, 2, PROTO_ERR_FLAGS);

	/* DATA: flags, reserved, count, base without flag, records. */
	n = (size_t)make_data(b);
	expect_mut(b, n, 18, 1u << 5, 2, PROTO_ERR_FLAGS);
	expect_mut(b, n, 24 + 18, 1, 2, PROTO_ERR_FLAGS);
	expect_mut(b, n, 24 + 20, 1, 4, PROTO_ERR_FLAGS);
	expect_mut(b, n, 24 + 16, 0, 2, PROTO_ERR_FIELD);
	expect_mut(b, n, 18, 0, 2, PROTO_ERR_FIELD);           /* base_to 0xabc, no flag */
	expect_mut(b, n, 24 + 16, 3, 2, PROTO_ERR_RECORDS);    /* count mismatch */
	expect_mut(b, n, 24 + 16, 1, 2, PROTO_ERR_RECORDS);
	expect_mut(b, n, 48 + 2, 0, 2, PROTO_ERR_RECORDS);     /* size 0 */
	expect_mut(b, n, 48 + 2, 12, 2, PROTO_ERR_RECORDS);    /* not a multiple of 8 */
	expect_mut(b, n, 48 + 2, 2048, 2, PROTO_ERR_RECORDS);  /* above 1024 */
	expect_mut(b, n, 48 + 2, 48, 2, PROTO_ERR_RECORDS);    /* runs past the end */
	expect_mut(b, n, 72 + 2, 8, 2, PROTO_ERR_RECORDS);     /* leaves a partial header */
	{
		uint8_t c2[TVP_MAX_DATAGRAM];

		/* Body without a record: 0 records and count 0 -> FIELD. */
		memcpy(c2, b, n);
		put(c2 + 24 + 16, 0, 2);
		fix(c2, 48);
		assert_int_equal(dec(c2, 48), PROTO_ERR_FIELD);
		fix(c2, 40);
		assert_int_equal(dec(c2, 40), PROTO_ERR_SHORT);
	}

	/* PT: no bytes, reserved, flags. */
	n = (size_t)proto_encode_pt(b, sizeof(b), SESSION, 0, 0, "abcd", 4);
	{
		uint8_t c2[TVP_MAX_DATAGRAM];

		memcpy(c2, b, n);
		fix(c2, 40);
		assert_int_equal(dec(c2, 40), PROTO_ERR_LENGTH);
		fix(c2, 30);
		assert_int_equal(dec(c2, 30), PROTO_ERR_SHORT);
	}
	expect_mut(b, n, 24 + 8, 1, 8, PROTO_ERR_FLAGS);
	expect_mut(b, n, 18, 1, 2, PROTO_ERR_FLAGS);

	/* ACK: nranges vs length, too many, order, gaps, bounds, reserved. */
	n = (size_t)proto_encode_ack(b, sizeof(b), SESSION, 0, &a, r);
	assert_int_equal(dec(b, n), 0);
	expect_mut(b, n, 24 + 16, 3, 2, PROTO_ERR_LENGTH);
	expect_mut(b, n, 24 + 18, 1, 2, PROTO_ERR_FLAGS);
	expect_mut(b, n, 24 + 8, 9, 8, PROTO_ERR_FIELD);       /* highest before cum */
	expect_mut(b, n, 48, 11, 8, PROTO_ERR_FIELD);          /* first range not at cum */
	expect_mut(b, n, 48 + 8, 10, 8, PROTO_ERR_FIELD);      /* empty range */
	expect_mut(b, n, 64, 12, 8, PROTO_ERR_FIELD);          /* no gap */
	expect_mut(b, n, 64, 11, 8, PROTO_ERR_FIELD);          /* overlap */
	expect_mut(b, n, 64 + 8, 21, 8, PROTO_ERR_FIELD);      /* beyond highest */
	{
		/* 33 ranges with a matching length: FIELD. */
		uint8_t c2[TVP_MAX_DATAGRAM];
		size_t len = 48 + 33 * 16;

		memset(c2, 0, sizeof(c2));
		memcpy(c2, b, 48);
		put(c2 + 24 + 8, 1000, 8);
		put(c2 + 24 + 16, 33, 2);
		for (unsigned i = 0; i < 33; i++) {
			put(c2 + 48 + 16 * i, 10 + 20 * i, 8);
			put(c2 + 56 + 16 * i, 15 + 20 * i, 8);
		}
		put(c2 + 24, 10, 8);
		fix(c2, len);
		assert_int_equal(dec(c2, len), PROTO_ERR_FIELD);
		put(c2 + 24 + 16, 32, 2);
		fix(c2, len - 16);
		assert_int_equal(dec(c2, len - 16), 0);
	}

	/* HEARTBEAT: entry reserved, CPU numbering, range. */
	n = (size_t)proto_encode_heartbeat(b, sizeof(b), SESSION, &hb, &c);
	assert_int_equal(dec(b, n), 0);
	expect_mut(b, n, 64 + 4, 1, 4, PROTO_ERR_FLAGS);
	expect_mut(b, n, 64, 1, 4, PROTO_ERR_FIELD);
	expect_mut(b, n, 24 + 12, TVP_MAX_CPUS, 2, PROTO_ERR_FIELD);
	expect_mut(b, n, 24 + 14, 2, 2, PROTO_ERR_LENGTH);

	/* LOSS. */
	n = (size_t)proto_encode_loss(b, sizeof(b), SESSION, 0, 0, &l);
	expect_mut(b, n, 24 + 8, 0, 8, PROTO_ERR_FIELD);
	expect_mut(b, n, 24 + 16, 1, 8, PROTO_ERR_FIELD);      /* total below count */
	expect_mut(b, n, 18, 2, 2, PROTO_ERR_FLAGS);
	expect_mut(b, n, 18, TVP_LOSS_F_FIRST, 2, 0);

	/* CONTROL_REPLY. */
	n = (size_t)proto_encode_control_reply(b, sizeof(b), SESSION, &rep);
	expect_mut(b, n, 24 + 12, (uint32_t)-3, 4, PROTO_ERR_FIELD);
	expect_mut(b, n, 24 + 8, TVP_CTL_OP_MAX, 2, PROTO_ERR_FIELD);
	expect_mut(b, n, 24, 0, 8, PROTO_ERR_FIELD);
	expect_mut(b, n, 24 + 10, 1, 2, PROTO_ERR_FLAGS);
}

static void test_malformed_control(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	struct tvp_ctl_filter f = { .cpl = 8, .nranges = 1 };
	struct { struct tvp_ctl_marker mk; char label[3]; } mk = {
		.mk = { .value = 1, .cpu = 2, .label_len = 3 }, .label = "abc" };
	size_t n;

	(void)state;
	f.ranges[0].lo = 10;
	f.ranges[0].hi = 20;
	n = (size_t)enc_control(b, 9, TVP_CTL_FILTERS, sizeof(f), &f);
	assert_int_equal(dec(b, n), 0);
	expect_mut(b, n, 24, 0, 8, PROTO_ERR_FIELD);            /* counter 0 */
	expect_mut(b, n, 24 + 8, TVP_CTL_OP_MAX, 2, PROTO_ERR_FIELD);
	expect_mut(b, n, 24 + 8, TVP_CTL_START, 2, PROTO_ERR_FIELD); /* arg_len wrong for op */
	expect_mut(b, n, 24 + 10, 72, 2, PROTO_ERR_LENGTH);
	expect_mut(b, n, 24 + 12, 1, 4, PROTO_ERR_FLAGS);
	expect_mut(b, n, 18, 1, 2, PROTO_ERR_FLAGS);
	expect_mut(b, n, 40, 0, 4, PROTO_ERR_FIELD);            /* cpl 0 */
	expect_mut(b, n, 40, 2, 4, PROTO_ERR_FIELD);            /* cpl unknown bit */
	expect_mut(b, n, 44, 5, 4, PROTO_ERR_FIELD);            /* nranges 5 */
	expect_mut(b, n, 56, 30, 8, PROTO_ERR_FIELD);           /* lo > hi */
	expect_mut(b, n, 72, 1, 8, PROTO_ERR_FIELD);            /* unused range not 0 */
	{
		uint8_t c2[TVP_MAX_DATAGRAM];

		memcpy(c2, b, n);
		fix(c2, 24 + 16 + 31);
		assert_int_equal(dec(c2, 24 + 16 + 31), PROTO_ERR_SHORT);
	}
	n = (size_t)enc_control(b, 9, TVP_CTL_MARKER, 19, &mk);
	assert_int_equal(dec(b, n), 0);
	expect_mut(b, n, 40 + 16 + 3, 1, 1, PROTO_ERR_FLAGS);   /* padding not 0 */
	expect_mut(b, n, 40 + 12, 2, 4, PROTO_ERR_FIELD);       /* label_len != arg_len - 16 */
	expect_mut(b, n, 40 + 8, TVP_MAX_CPUS, 4, PROTO_ERR_FIELD);
	expect_mut(b, n, 40 + 8, TVP_CPU_ALL, 4, 0);
	expect_mut(b, n, 24 + 10, 15, 2, PROTO_ERR_LENGTH);     /* padded args shrink */
	expect_mut(b, n, 24 + 10, 20, 2, PROTO_ERR_FIELD);      /* same padding, wrong arg_len */
}

/* xorshift64*: seeded, the same garbage every run. */
static uint64_t rs = 0x243f6a8885a308d3ull;
static uint64_t rnd(void)
{
	rs ^= rs >> 12;
	rs ^= rs << 25;
	rs ^= rs >> 27;
	return rs * 0x2545f4914f6cdd1dull;
}

static void test_fuzz_well_framed(void **state)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	unsigned ok = 0, seen[PROTO_ERR_COUNT] = { 0 };

	(void)state;
	for (int i = 0; i < 20000; i++) {
		size_t len = 24 + (size_t)(rnd() % (TVP_MAX_DATAGRAM - 23));
		int err;

		for (size_t k = 0; k < len; k++)
			b[k] = (uint8_t)rnd();
		put(b, TVP_MAGIC, 4);
		b[4] = TVP_VERSION;
		b[5] = (uint8_t)(1 + rnd() % (TVP_TYPE_MAX - 1));
		if (rnd() & 1)
			put(b + 16, 0, 2);
		if (rnd() & 1)
			put(b + 18, 0, 2);
		if (b[5] == TVP_ACK || b[5] == TVP_HEARTBEAT) {
			len = 48 + (rnd() % 4) * (b[5] == TVP_ACK ? 16 : 64);
			if (b[5] == TVP_HEARTBEAT)
				len -= 8;
		}
		fix(b, len);
		err = dec(b, len);
		assert_true(err <= 0 && err > -PROTO_ERR_COUNT);
		if (err == 0)
			ok++;
		seen[-err]++;
	}
	/* Garbage got past framing into the per-type checks. */
	assert_true(seen[-PROTO_ERR_FLAGS] > 0);
	assert_true(seen[-PROTO_ERR_LENGTH] > 0);
	assert_int_equal(seen[-PROTO_ERR_CRC], 0);
	(void)ok;
}

static void test_strerror(void **state)
{
	(void)state;
	for (int e = 0; e > -PROTO_ERR_COUNT; e--) {
		assert_string_not_equal(proto_strerror(e), "unknown error");
		for (int f = e - 1; f > -PROTO_ERR_COUNT; f--)
			assert_string_not_equal(proto_strerror(e), proto_strerror(f));
	}
	assert_string_equal(proto_strerror(-PROTO_ERR_COUNT), "unknown error");
	assert_string_equal(proto_strerror(1), "unknown error");
}

static void test_seq_compare(void **state)
{
	(void)state;
	assert_true(tvp_seq_before(1, 2));
	assert_false(tvp_seq_before(2, 2));
	assert_true(tvp_seq_before(UINT64_MAX, 0));
	assert_false(tvp_seq_before(0, UINT64_MAX));
	assert_int_equal(tvp_seq_diff(3, UINT64_MAX - 1), 5);
}

/*
 * PT flags: DATA's RETRANSMIT (bit 1) and FIRST (bit 2) in the header's
 * flags, round trip alone and together; bit 0 (DATA's BASE) and unknown
 * bits refused by the encoder (INVAL) and by the decoder (FLAGS).
 */
static void test_pt_flags(void **state)
{
	static const uint16_t good[] = {
		0, TVP_PT_F_RETRANSMIT, TVP_PT_F_FIRST, TVP_PT_F_RETRANSMIT | TVP_PT_F_FIRST,
	};
	static const uint16_t bad[] = { 1u << 0, (1u << 0) | TVP_PT_F_FIRST, 1u << 3, 0x8000 };
	uint8_t b[TVP_MAX_DATAGRAM], plain[TVP_MAX_DATAGRAM];
	struct proto_msg m;
	int n;

	(void)state;
	assert_int_equal(TVP_PT_F_RETRANSMIT, TVP_DATA_F_RETRANSMIT);
	assert_int_equal(TVP_PT_F_FIRST, TVP_DATA_F_FIRST);
	for (unsigned i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		n = proto_encode_pt_flags(b, sizeof(b), SESSION, 3, good[i], 1ull << 40, "pt!", 3);
		assert_int_equal(n, 24 + 16 + 3);
		assert_int_equal(le(b + 18, 2), good[i]);
		assert_int_equal(proto_decode(b, (size_t)n, &m), 0);
		assert_int_equal(m.type, TVP_PT);
		assert_int_equal(m.flags, good[i]);
		assert_int_equal(m.stream, 3 | TVP_STREAM_PT);
		assert_int_equal(m.u.pt.p.offset, 1ull << 40);
		assert_int_equal(m.u.pt.len, 3);
		assert_memory_equal(m.u.pt.bytes, "pt!", 3);
	}
	/* proto_encode_pt is the same with flags 0, byte for byte. */
	n = proto_encode_pt(plain, sizeof(plain), SESSION, 3, 1ull << 40, "pt!", 3);
	assert_int_equal(n, 43);
	assert_int_equal(proto_encode_pt_flags(b, sizeof(b), SESSION, 3, 0, 1ull << 40, "pt!", 3), 43);
	assert_memory_equal(b, plain, 43);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(proto_encode_pt_flags(b, sizeof(b), SESSION, 3, bad[i], 0, "x", 1),
				 PROTO_ERR_INVAL);
		/* The same flags put on the wire by hand (CRC right): refused. */
		expect_mut(plain, 43, 18, bad[i], 2, PROTO_ERR_FLAGS);
	}
	expect_mut(plain, 43, 18, TVP_PT_F_RETRANSMIT | TVP_PT_F_FIRST, 2, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_layout),
		cmocka_unit_test(test_hello_round_trip),
		cmocka_unit_test(test_small_types_round_trip),
		cmocka_unit_test(test_data_round_trip),
		cmocka_unit_test(test_ack_round_trip),
		cmocka_unit_test(test_heartbeat_round_trip),
		cmocka_unit_test(test_control_round_trip_and_tag),
		cmocka_unit_test(test_control_mem_watch),
		cmocka_unit_test(test_malformed_framing),
		cmocka_unit_test(test_malformed_stream),
		cmocka_unit_test(test_malformed_bodies),
		cmocka_unit_test(test_malformed_control),
		cmocka_unit_test(test_pt_flags),
		cmocka_unit_test(test_fuzz_well_framed),
		cmocka_unit_test(test_strerror),
		cmocka_unit_test(test_seq_compare),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
