/* SPDX-License-Identifier: MIT */
/*
 * proto.c - encode, decode and validate the export protocol's datagrams
 * (net/proto.h is the contract, docs/PROTOCOL.md the prose).
 *
 * Every field is read and written byte by byte as little endian, so the
 * code works on any host byte order and any buffer alignment.  Each
 * encoder checks its result with the decoder before returning it (all
 * but the CRC it has just computed): what tracevisor sends is exactly
 * what a receiver accepts.
 */
#include "net/proto.h"

#include <string.h>

#include "net/sha256.h"
#include "vmm/trace/format.h"
#include "vmm/trace/serial_enc.h"

#define HDR_LEN   ((size_t)sizeof(struct tvp_hdr))
#define CPL_KNOWN ((1u << 0) | (1u << 3))   /* TRACE_CPL_KERNEL | TRACE_CPL_USER */

const char *proto_strerror(int err)
{
	switch (err) {
	case 0: return "ok";
	case PROTO_ERR_INVAL: return "invalid argument";
	case PROTO_ERR_SHORT: return "datagram shorter than its header or body";
	case PROTO_ERR_MAGIC: return "bad magic";
	case PROTO_ERR_VERSION: return "unsupported protocol version";
	case PROTO_ERR_TYPE: return "unknown message type";
	case PROTO_ERR_LENGTH: return "length field does not match the datagram";
	case PROTO_ERR_CRC: return "CRC mismatch";
	case PROTO_ERR_SESSION: return "session id 0";
	case PROTO_ERR_STREAM: return "stream id not allowed for the message type";
	case PROTO_ERR_FLAGS: return "unknown flag bits or reserved field not zero";
	case PROTO_ERR_FIELD: return "field out of range";
	case PROTO_ERR_RECORDS: return "records do not tile the DATA payload";
	case PROTO_ERR_NOSPC: return "buffer or datagram too small";
	case PROTO_ERR_AUTH: return "control message authentication failed";
	case PROTO_ERR_REPLAY: return "control counter not above the last accepted";
	case PROTO_ERR_WRONG_SESSION: return "control message for another session";
	default: return "unknown error";
	}
}

/*
 * CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) eight bytes at a
 * time: table t maps a byte to its CRC after t more zero bytes, so the
 * eight lookups of one step are independent (the "slicing-by-8" method
 * of Kounavis and Berry).  Same values as trace_serial_crc32, the serial
 * transport's nibble-table CRC, which the export protocol used before:
 * at a datagram per 1452 bytes that one cost more than the rest of the
 * sender and receiver together.  The 8 KiB of tables are built on first
 * use by whoever gets there first; anyone else meanwhile takes the slow
 * path, so no caller ever reads a half-built table.
 */
static uint32_t crc_tab[8][256];
static int crc_state;   /* 0 not built, 1 being built, 2 ready */

static bool crc_ready(void)
{
	int expect = 0;

	if (__atomic_load_n(&crc_state, __ATOMIC_ACQUIRE) == 2)
		return true;
	if (!__atomic_compare_exchange_n(&crc_state, &expect, 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return false;
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (unsigned t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xffu];
	__atomic_store_n(&crc_state, 2, __ATOMIC_RELEASE);
	return true;
}

uint32_t proto_crc32(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;

	if (!crc_ready())
		return trace_serial_crc32(crc, data, len);
	crc = ~crc;
	for (; len >= 8; len -= 8, p += 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
			      (uint32_t)p[7] << 24;

		crc = crc_tab[7][lo & 0xffu] ^ crc_tab[6][(lo >> 8) & 0xffu] ^
		      crc_tab[5][(lo >> 16) & 0xffu] ^ crc_tab[4][lo >> 24] ^
		      crc_tab[3][hi & 0xffu] ^ crc_tab[2][(hi >> 8) & 0xffu] ^
		      crc_tab[1][(hi >> 16) & 0xffu] ^ crc_tab[0][hi >> 24];
	}
	while (len--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xffu];
	return ~crc;
}

/* --- little-endian access ------------------------------------------------------ */

static uint64_t get_le(const uint8_t *p, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void put_le(uint8_t *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

#define GET16(p) ((uint16_t)get_le((p), 2))
#define GET32(p) ((uint32_t)get_le((p), 4))
#define GET64(p) get_le((p), 8)

static bool all_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;

	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return acc == 0;
}

/* CRC of buf[0..len) with the header's crc field taken as 0. */
static uint32_t datagram_crc(const uint8_t *p, size_t len)
{
	static const uint8_t zero4[4];
	uint32_t crc = proto_crc32(0, p, TVP_HDR_CRC_OFFSET);

	crc = proto_crc32(crc, zero4, 4);
	return proto_crc32(crc, p + HDR_LEN, len - HDR_LEN);
}

static size_t align8(size_t n)
{
	return (n + 7u) & ~(size_t)7u;
}

/* --- decoding ------------------------------------------------------------------------ */

static int stream_ok(uint8_t type, uint16_t stream)
{
	uint16_t cpu = stream & TVP_STREAM_CPU_MASK;
	bool pt = (stream & TVP_STREAM_PT) != 0;

	switch (type) {
	case TVP_DATA:
	case TVP_LOSS:
		return !pt && cpu < TVP_MAX_CPUS;
	case TVP_PT:
		return pt && cpu < TVP_MAX_CPUS;
	case TVP_ACK:
		return cpu < TVP_MAX_CPUS;
	default:
		return stream == 0;
	}
}

static int decode_hello(const uint8_t *b, size_t blen, struct tvp_hello *h, uint16_t flags)
{
	if (blen < sizeof(*h))
		return PROTO_ERR_SHORT;
	if (blen != sizeof(*h))
		return PROTO_ERR_LENGTH;
	h->hello_seq = GET32(b + 0);
	h->cpu_count = GET16(b + 4);
	h->source = b[6];
	h->overflow = b[7];
	h->vendor_id = b[8];
	h->stepping = b[9];
	h->family = GET16(b + 10);
	h->model = GET16(b + 12);
	h->reserved0 = GET16(b + 14);
	h->caps = GET32(b + 16);
	h->reserved1 = GET32(b + 20);
	h->tsc_hz = GET64(b + 24);
	h->boot_tsc = GET64(b + 32);
	h->ring_bytes = GET64(b + 40);
	h->unix_ns = GET64(b + 48);
	memcpy(h->vendor, b + 56, TVP_VENDOR_LEN);
	memcpy(h->sw_version, b + 68, TVP_SWVER_LEN);
	memcpy(h->machine, b + 96, TVP_MACHINE_LEN);
	if (flags || h->reserved0 || h->reserved1 || (h->caps & ~TVP_CAP_KNOWN))
		return PROTO_ERR_FLAGS;
	if (h->cpu_count == 0 || h->cpu_count > TVP_MAX_CPUS ||
	    h->source > TV_SOURCE_MAX || h->overflow > TV_OVERFLOW_OVERWRITE ||
	    h->vendor_id > TVP_VENDOR_AMD)
		return PROTO_ERR_FIELD;
	return 0;
}

static int decode_hello_ack(const uint8_t *b, size_t blen, struct tvp_hello_ack *a,
			    uint16_t flags)
{
	if (blen < sizeof(*a))
		return PROTO_ERR_SHORT;
	if (blen != sizeof(*a))
		return PROTO_ERR_LENGTH;
	a->hello_seq = GET32(b);
	a->reserved = GET32(b + 4);
	if (flags || a->reserved)
		return PROTO_ERR_FLAGS;
	return 0;
}

/* The records in r[0..n) tile it exactly and number count. */
static int records_tile(const uint8_t *r, size_t n, uint16_t count)
{
	size_t off = 0;
	uint32_t seen = 0;

	while (off < n) {
		uint16_t size;

		if (n - off < sizeof(struct tv_rec))
			return PROTO_ERR_RECORDS;
		size = GET16(r + off + 2);
		if (size < sizeof(struct tv_rec) || (size & 7u) || size > TV_REC_MAX_SIZE ||
		    size > n - off)
			return PROTO_ERR_RECORDS;
		off += size;
		seen++;
	}
	return seen == count ? 0 : PROTO_ERR_RECORDS;
}

static int decode_data(const uint8_t *b, size_t blen, struct proto_msg *m)
{
	struct tvp_data *d = &m->u.data.d;

	if (blen < sizeof(*d))
		return PROTO_ERR_SHORT;
	d->first_seq = GET64(b);
	d->base_to = GET64(b + 8);
	d->count = GET16(b + 16);
	d->reserved0 = GET16(b + 18);
	d->reserved1 = GET32(b + 20);
	m->u.data.records = b + sizeof(*d);
	m->u.data.bytes = blen - sizeof(*d);
	if ((m->flags & ~TVP_DATA_F_KNOWN) || d->reserved0 || d->reserved1)
		return PROTO_ERR_FLAGS;
	if (d->count == 0 || (!(m->flags & TVP_DATA_F_BASE) && d->base_to))
		return PROTO_ERR_FIELD;
	return records_tile(m->u.data.records, m->u.data.bytes, d->count);
}

static int decode_pt(const uint8_t *b, size_t blen, struct proto_msg *m)
{
	struct tvp_pt *p = &m->u.pt.p;

	if (blen < sizeof(*p))
		return PROTO_ERR_SHORT;
	if (blen == sizeof(*p))
		return PROTO_ERR_LENGTH;   /* at least one byte */
	p->offset = GET64(b);
	p->reserved = GET64(b + 8);
	m->u.pt.bytes = b + sizeof(*p);
	m->u.pt.len = blen - sizeof(*p);
	if ((m->flags & ~TVP_PT_F_KNOWN) || p->reserved)
		return PROTO_ERR_FLAGS;
	return 0;
}

static int decode_ack(const uint8_t *b, size_t blen, struct proto_msg *m)
{
	struct tvp_ack *a = &m->u.ack.a;
	uint64_t prev_end;

	if (blen < sizeof(*a))
		return PROTO_ERR_SHORT;
	a->cum = GET64(b);
	a->highest = GET64(b + 8);
	a->nranges = GET16(b + 16);
	a->reserved0 = GET16(b + 18);
	a->reserved1 = GET32(b + 20);
	if (blen != sizeof(*a) + (size_t)a->nranges * sizeof(struct tvp_range))
		return PROTO_ERR_LENGTH;
	if (m->flags || a->reserved0 || a->reserved1)
		return PROTO_ERR_FLAGS;
	if (a->nranges > TVP_ACK_MAX_RANGES || tvp_seq_before(a->highest, a->cum))
		return PROTO_ERR_FIELD;
	prev_end = a->cum;
	for (uint16_t i = 0; i < a->nranges; i++) {
		const uint8_t *r = b + sizeof(*a) + (size_t)i * sizeof(struct tvp_range);
		struct tvp_range *o = &m->u.ack.ranges[i];

		o->first = GET64(r);
		o->end = GET64(r + 8);
		/* the first starts at cum, the others after a gap; first < end <= highest */
		if (tvp_seq_before(o->first, prev_end) || (i == 0) != (o->first == prev_end) ||
		    !tvp_seq_before(o->first, o->end) || tvp_seq_before(a->highest, o->end))
			return PROTO_ERR_FIELD;
		prev_end = o->end;
	}
	return 0;
}

static int decode_heartbeat(const uint8_t *b, size_t blen, struct proto_msg *m)
{
	struct tvp_heartbeat *h = &m->u.hb.h;
	bool reserved = false;

	if (blen < sizeof(*h))
		return PROTO_ERR_SHORT;
	h->tsc = GET64(b);
	h->hb_seq = GET32(b + 8);
	h->first_cpu = GET16(b + 12);
	h->ncpus = GET16(b + 14);
	h->ctl_accepted = GET32(b + 16);
	h->ctl_bad_auth = GET32(b + 20);
	h->ctl_replay = GET32(b + 24);
	h->ctl_bad_session = GET32(b + 28);
	h->ctl_malformed = GET32(b + 32);
	h->tx_errors = GET32(b + 36);
	if (blen != sizeof(*h) + (size_t)h->ncpus * sizeof(struct tvp_hb_cpu))
		return PROTO_ERR_LENGTH;
	if (h->ncpus > TVP_HB_MAX_CPUS)
		return PROTO_ERR_FIELD;
	for (uint16_t i = 0; i < h->ncpus; i++) {
		const uint8_t *e = b + sizeof(*h) + (size_t)i * sizeof(struct tvp_hb_cpu);
		struct tvp_hb_cpu *o = &m->u.hb.cpus[i];

		o->cpu = GET32(e);
		o->reserved = GET32(e + 4);
		o->produced = GET64(e + 8);
		o->sent = GET64(e + 16);
		o->retransmitted = GET64(e + 24);
		o->lost_overwrite = GET64(e + 32);
		o->head_seq = GET64(e + 40);
		o->acked = GET64(e + 48);
		o->ring_dropped = GET64(e + 56);
		reserved |= o->reserved != 0;
	}
	if (m->flags || reserved)
		return PROTO_ERR_FLAGS;
	if ((uint32_t)h->first_cpu + h->ncpus > TVP_MAX_CPUS)
		return PROTO_ERR_FIELD;
	for (uint16_t i = 0; i < h->ncpus; i++)
		if (m->u.hb.cpus[i].cpu != (uint32_t)h->first_cpu + i)
			return PROTO_ERR_FIELD;
	return 0;
}

static int decode_loss(const uint8_t *b, size_t blen, struct proto_msg *m)
{
	struct tvp_loss *l = &m->u.loss;

	if (blen < sizeof(*l))
		return PROTO_ERR_SHORT;
	if (blen != sizeof(*l))
		return PROTO_ERR_LENGTH;
	l->first_seq = GET64(b);
	l->count = GET64(b + 8);
	l->total = GET64(b + 16);
	if (m->flags & ~TVP_LOSS_F_FIRST)
		return PROTO_ERR_FLAGS;
	if (l->count == 0 || l->total < l->count)
		return PROTO_ERR_FIELD;
	return 0;
}

/* Argument bytes each op takes (MARKER: its fixed part, label_len more). */
static size_t ctl_arg_size(uint16_t op)
{
	switch (op) {
	case TVP_CTL_START:
	case TVP_CTL_STOP:
		return sizeof(struct tvp_ctl_cpus);
	case TVP_CTL_FILTERS:
		return sizeof(struct tvp_ctl_filter);
	case TVP_CTL_MARKER:
		return sizeof(struct tvp_ctl_marker);
	case TVP_CTL_MEM_WATCH:
		return sizeof(struct tvp_ctl_mem_watch);
	default:
		return 0;
	}
}

/* Ops whose fixed part is followed by label_len bytes of label. */
static bool ctl_has_label(uint16_t op)
{
	return op == TVP_CTL_MARKER || op == TVP_CTL_MEM_WATCH;
}

/* MEM_WATCH's fields by op (proto.h); arg_len is checked by the caller. */
static int check_mem_watch(const struct tvp_ctl_mem_watch *w)
{
	if (w->label_len > TVP_LABEL_MAX)
		return PROTO_ERR_FIELD;
	switch (w->op) {
	case TV_MEMW_ARM:
		return w->lo < w->hi && w->mode >= TV_MEMW_MODE_R && w->mode <= TV_MEMW_MODE_RW &&
		       !w->id ? 0 : PROTO_ERR_FIELD;
	case TV_MEMW_REMOVE:
		return w->id && !(w->lo | w->hi) && !w->mode && !w->label_len ? 0 : PROTO_ERR_FIELD;
	case TV_MEMW_LABEL:
		return w->lo < w->hi && !w->mode && !w->id ? 0 : PROTO_ERR_FIELD;
	default:
		return PROTO_ERR_FIELD;
	}
}

static int decode_filter(const uint8_t *a, struct tvp_ctl_filter *f)
{
	f->cpl = GET32(a);
	f->nranges = GET32(a + 4);
	f->cr3 = GET64(a + 8);
	for (unsigned i = 0; i < TVP_CTL_RANGES; i++) {
		f->ranges[i].lo = GET64(a + 16 + 16 * i);
		f->ranges[i].hi = GET64(a + 24 + 16 * i);
	}
	if (f->cpl == 0 || (f->cpl & ~CPL_KNOWN) || f->nranges > TVP_CTL_RANGES)
		return PROTO_ERR_FIELD;
	for (unsigned i = 0; i < TVP_CTL_RANGES; i++) {
		if (i < f->nranges ? f->ranges[i].lo > f->ranges[i].hi
				   : (f->ranges[i].lo | f->ranges[i].hi) != 0)
			return PROTO_ERR_FIELD;
	}
	return 0;
}

static int decode_control(const uint8_t *b, size_t blen, struct proto_msg *m)
{
	struct tvp_control *c = &m->u.control.c;
	const uint8_t *a = b + sizeof(*c);
	size_t padded;

	if (blen < sizeof(*c) + TVP_TAG_LEN)
		return PROTO_ERR_SHORT;
	c->counter = GET64(b);
	c->op = GET16(b + 8);
	c->arg_len = GET16(b + 10);
	c->reserved = GET32(b + 12);
	padded = align8(c->arg_len);
	if (blen != sizeof(*c) + padded + TVP_TAG_LEN)
		return PROTO_ERR_LENGTH;
	m->u.control.tag = a + padded;
	m->u.control.label = NULL;
	if (m->flags || c->reserved || !all_zero(a + c->arg_len, padded - c->arg_len))
		return PROTO_ERR_FLAGS;
	if (c->counter == 0 || c->op >= TVP_CTL_OP_MAX)
		return PROTO_ERR_FIELD;
	if (ctl_has_label(c->op) ? c->arg_len < ctl_arg_size(c->op)
				 : c->arg_len != ctl_arg_size(c->op))
		return PROTO_ERR_FIELD;
	memset(&m->u.control.arg, 0, sizeof(m->u.control.arg));
	switch (c->op) {
	case TVP_CTL_START:
	case TVP_CTL_STOP:
		for (unsigned i = 0; i < TVP_CTL_CPU_WORDS; i++)
			m->u.control.arg.cpus.mask[i] = GET64(a + 8 * i);
		return 0;
	case TVP_CTL_FILTERS:
		return decode_filter(a, &m->u.control.arg.filter);
	case TVP_CTL_MARKER: {
		struct tvp_ctl_marker *mk = &m->u.control.arg.marker;

		mk->value = GET64(a);
		mk->cpu = GET32(a + 8);
		mk->label_len = GET32(a + 12);
		if (mk->label_len > TVP_LABEL_MAX ||
		    c->arg_len != sizeof(*mk) + mk->label_len ||
		    (mk->cpu >= TVP_MAX_CPUS && mk->cpu != TVP_CPU_ALL))
			return PROTO_ERR_FIELD;
		m->u.control.label = (const char *)a + sizeof(*mk);
		return 0;
	}
	case TVP_CTL_MEM_WATCH: {
		struct tvp_ctl_mem_watch *w = &m->u.control.arg.mem_watch;

		w->lo = GET64(a);
		w->hi = GET64(a + 8);
		w->op = a[16];
		w->mode = a[17];
		w->id = GET16(a + 18);
		w->label_len = GET32(a + 20);
		if (check_mem_watch(w) || c->arg_len != sizeof(*w) + w->label_len)
			return PROTO_ERR_FIELD;
		m->u.control.label = (const char *)a + sizeof(*w);
		return 0;
	}
	default:
		return 0;
	}
}

static int decode_reply(const uint8_t *b, size_t blen, struct proto_msg *m)
{
	struct tvp_control_reply *r = &m->u.reply;

	if (blen < sizeof(*r))
		return PROTO_ERR_SHORT;
	if (blen != sizeof(*r))
		return PROTO_ERR_LENGTH;
	r->counter = GET64(b);
	r->op = GET16(b + 8);
	r->reserved = GET16(b + 10);
	r->status = (int32_t)GET32(b + 12);
	if (m->flags || r->reserved)
		return PROTO_ERR_FLAGS;
	if (r->counter == 0 || r->op >= TVP_CTL_OP_MAX ||
	    (r->status != 0 && r->status != TVP_CTL_EUNSUPPORTED &&
	     r->status != TVP_CTL_EFAILED))
		return PROTO_ERR_FIELD;
	return 0;
}

/*
 * proto_decode's checks; check_crc false: the caller computed the CRC
 * itself a moment ago (finish), which need not be done twice.
 */
static int decode(const void *buf, size_t len, struct proto_msg *m, bool check_crc)
{
	const uint8_t *p = buf;
	const uint8_t *body;
	size_t blen;

	if (!buf || !m)
		return PROTO_ERR_INVAL;
	if (len < HDR_LEN)
		return PROTO_ERR_SHORT;
	if (GET32(p) != TVP_MAGIC)
		return PROTO_ERR_MAGIC;
	if (p[4] != TVP_VERSION)
		return PROTO_ERR_VERSION;
	if (p[5] == 0 || p[5] >= TVP_TYPE_MAX)
		return PROTO_ERR_TYPE;
	if (GET16(p + 6) != len || len > TVP_MAX_DATAGRAM)
		return PROTO_ERR_LENGTH;
	if (check_crc && GET32(p + TVP_HDR_CRC_OFFSET) != datagram_crc(p, len))
		return PROTO_ERR_CRC;
	memset(m, 0, sizeof(*m));
	m->type = p[5];
	m->length = (uint16_t)len;
	m->session = GET64(p + 8);
	m->stream = GET16(p + 16);
	m->flags = GET16(p + 18);
	if (m->session == 0)
		return PROTO_ERR_SESSION;
	if (!stream_ok(m->type, m->stream))
		return PROTO_ERR_STREAM;
	body = p + HDR_LEN;
	blen = len - HDR_LEN;
	switch (m->type) {
	case TVP_HELLO: return decode_hello(body, blen, &m->u.hello, m->flags);
	case TVP_HELLO_ACK: return decode_hello_ack(body, blen, &m->u.hello_ack, m->flags);
	case TVP_DATA: return decode_data(body, blen, m);
	case TVP_PT: return decode_pt(body, blen, m);
	case TVP_ACK: return decode_ack(body, blen, m);
	case TVP_HEARTBEAT: return decode_heartbeat(body, blen, m);
	case TVP_LOSS: return decode_loss(body, blen, m);
	case TVP_CONTROL: return decode_control(body, blen, m);
	default: return decode_reply(body, blen, m);
	}
}

int proto_decode(const void *buf, size_t len, struct proto_msg *m)
{
	return decode(buf, len, m, true);
}

/* --- encoding ---------------------------------------------------------------------- */

/* Room for a body_len-byte body: the datagram is at most TVP_MAX_DATAGRAM. */
static int begin(uint8_t *p, size_t cap, uint8_t type, uint64_t session,
		 uint16_t stream, uint16_t flags, size_t body_len)
{
	size_t len = HDR_LEN + body_len;

	if (body_len > TVP_MAX_DATAGRAM - HDR_LEN || len > cap)
		return PROTO_ERR_NOSPC;
	put_le(p, TVP_MAGIC, 4);
	p[4] = TVP_VERSION;
	p[5] = type;
	put_le(p + 6, len, 2);
	put_le(p + 8, session, 8);
	put_le(p + 16, stream, 2);
	put_le(p + 18, flags, 2);
	put_le(p + 20, 0, 4);
	return 0;
}

/* CRC in, then the decoder's verdict: a datagram it refuses is never returned. */
static int finish(uint8_t *p, size_t len)
{
	struct proto_msg m;

	put_le(p + TVP_HDR_CRC_OFFSET, datagram_crc(p, len), 4);
	if (decode(p, len, &m, false))
		return PROTO_ERR_INVAL;
	return (int)len;
}

int proto_encode_hello(void *buf, size_t cap, uint64_t session, const struct tvp_hello *h)
{
	uint8_t *p = buf, *b;
	int err;

	if (!buf || !h)
		return PROTO_ERR_INVAL;
	err = begin(p, cap, TVP_HELLO, session, 0, 0, sizeof(*h));
	if (err)
		return err;
	b = p + HDR_LEN;
	memset(b, 0, sizeof(*h));
	put_le(b + 0, h->hello_seq, 4);
	put_le(b + 4, h->cpu_count, 2);
	b[6] = h->source;
	b[7] = h->overflow;
	b[8] = h->vendor_id;
	b[9] = h->stepping;
	put_le(b + 10, h->family, 2);
	put_le(b + 12, h->model, 2);
	put_le(b + 16, h->caps, 4);
	put_le(b + 24, h->tsc_hz, 8);
	put_le(b + 32, h->boot_tsc, 8);
	put_le(b + 40, h->ring_bytes, 8);
	put_le(b + 48, h->unix_ns, 8);
	memcpy(b + 56, h->vendor, TVP_VENDOR_LEN);
	memcpy(b + 68, h->sw_version, TVP_SWVER_LEN);
	memcpy(b + 96, h->machine, TVP_MACHINE_LEN);
	return finish(p, HDR_LEN + sizeof(*h));
}

int proto_encode_hello_ack(void *buf, size_t cap, uint64_t session, uint32_t hello_seq)
{
	uint8_t *p = buf;
	int err;

	if (!buf)
		return PROTO_ERR_INVAL;
	err = begin(p, cap, TVP_HELLO_ACK, session, 0, 0, sizeof(struct tvp_hello_ack));
	if (err)
		return err;
	put_le(p + HDR_LEN, hello_seq, 4);
	put_le(p + HDR_LEN + 4, 0, 4);
	return finish(p, HDR_LEN + sizeof(struct tvp_hello_ack));
}

int proto_encode_data(void *buf, size_t cap, uint64_t session, uint16_t cpu,
		      uint16_t flags, const struct tvp_data *d,
		      const void *records, size_t bytes)
{
	uint8_t *p = buf, *b;
	int err;

	if (!buf || !d || (!records && bytes))
		return PROTO_ERR_INVAL;
	if (bytes > TVP_DATA_MAX_PAYLOAD)
		return PROTO_ERR_NOSPC;
	err = begin(p, cap, TVP_DATA, session, cpu, flags, sizeof(*d) + bytes);
	if (err)
		return err;
	b = p + HDR_LEN;
	put_le(b, d->first_seq, 8);
	put_le(b + 8, (flags & TVP_DATA_F_BASE) ? d->base_to : 0, 8);
	put_le(b + 16, d->count, 2);
	put_le(b + 18, 0, 6);
	if (bytes)
		memcpy(b + sizeof(*d), records, bytes);
	return finish(p, HDR_LEN + sizeof(*d) + bytes);
}

int proto_encode_pt(void *buf, size_t cap, uint64_t session, uint16_t cpu,
		    uint64_t offset, const void *bytes, size_t len)
{
	return proto_encode_pt_flags(buf, cap, session, cpu, 0, offset, bytes, len);
}

int proto_encode_pt_flags(void *buf, size_t cap, uint64_t session, uint16_t cpu,
			  uint16_t flags, uint64_t offset, const void *bytes, size_t len)
{
	uint8_t *p = buf, *b;
	int err;

	if (!buf || (!bytes && len) || cpu >= TVP_MAX_CPUS || (flags & ~TVP_PT_F_KNOWN))
		return PROTO_ERR_INVAL;
	if (len > TVP_PT_MAX_PAYLOAD)
		return PROTO_ERR_NOSPC;
	err = begin(p, cap, TVP_PT, session, (uint16_t)(cpu | TVP_STREAM_PT), flags,
		    sizeof(struct tvp_pt) + len);
	if (err)
		return err;
	b = p + HDR_LEN;
	put_le(b, offset, 8);
	put_le(b + 8, 0, 8);
	if (len)
		memcpy(b + sizeof(struct tvp_pt), bytes, len);
	return finish(p, HDR_LEN + sizeof(struct tvp_pt) + len);
}

int proto_encode_ack(void *buf, size_t cap, uint64_t session, uint16_t stream,
		     const struct tvp_ack *a, const struct tvp_range *ranges)
{
	uint8_t *p = buf, *b;
	int err;

	if (!buf || !a || (!ranges && a->nranges) || a->nranges > TVP_ACK_MAX_RANGES)
		return PROTO_ERR_INVAL;
	err = begin(p, cap, TVP_ACK, session, stream, 0,
		    sizeof(*a) + (size_t)a->nranges * sizeof(struct tvp_range));
	if (err)
		return err;
	b = p + HDR_LEN;
	put_le(b, a->cum, 8);
	put_le(b + 8, a->highest, 8);
	put_le(b + 16, a->nranges, 2);
	put_le(b + 18, 0, 6);
	for (uint16_t i = 0; i < a->nranges; i++) {
		put_le(b + sizeof(*a) + 16u * i, ranges[i].first, 8);
		put_le(b + sizeof(*a) + 16u * i + 8, ranges[i].end, 8);
	}
	return finish(p, HDR_LEN + sizeof(*a) + (size_t)a->nranges * sizeof(struct tvp_range));
}

int proto_encode_heartbeat(void *buf, size_t cap, uint64_t session,
			   const struct tvp_heartbeat *h, const struct tvp_hb_cpu *cpus)
{
	uint8_t *p = buf, *b;
	int err;

	if (!buf || !h || (!cpus && h->ncpus) || h->ncpus > TVP_HB_MAX_CPUS)
		return PROTO_ERR_INVAL;
	err = begin(p, cap, TVP_HEARTBEAT, session, 0, 0,
		    sizeof(*h) + (size_t)h->ncpus * sizeof(struct tvp_hb_cpu));
	if (err)
		return err;
	b = p + HDR_LEN;
	put_le(b, h->tsc, 8);
	put_le(b + 8, h->hb_seq, 4);
	put_le(b + 12, h->first_cpu, 2);
	put_le(b + 14, h->ncpus, 2);
	put_le(b + 16, h->ctl_accepted, 4);
	put_le(b + 20, h->ctl_bad_auth, 4);
	put_le(b + 24, h->ctl_replay, 4);
	put_le(b + 28, h->ctl_bad_session, 4);
	put_le(b + 32, h->ctl_malformed, 4);
	put_le(b + 36, h->tx_errors, 4);
	for (uint16_t i = 0; i < h->ncpus; i++) {
		uint8_t *e = b + sizeof(*h) + (size_t)i * sizeof(struct tvp_hb_cpu);

		put_le(e, cpus[i].cpu, 4);
		put_le(e + 4, 0, 4);
		put_le(e + 8, cpus[i].produced, 8);
		put_le(e + 16, cpus[i].sent, 8);
		put_le(e + 24, cpus[i].retransmitted, 8);
		put_le(e + 32, cpus[i].lost_overwrite, 8);
		put_le(e + 40, cpus[i].head_seq, 8);
		put_le(e + 48, cpus[i].acked, 8);
		put_le(e + 56, cpus[i].ring_dropped, 8);
	}
	return finish(p, HDR_LEN + sizeof(*h) + (size_t)h->ncpus * sizeof(struct tvp_hb_cpu));
}

int proto_encode_loss(void *buf, size_t cap, uint64_t session, uint16_t cpu,
		      uint16_t flags, const struct tvp_loss *l)
{
	uint8_t *p = buf, *b;
	int err;

	if (!buf || !l)
		return PROTO_ERR_INVAL;
	err = begin(p, cap, TVP_LOSS, session, cpu, flags, sizeof(*l));
	if (err)
		return err;
	b = p + HDR_LEN;
	put_le(b, l->first_seq, 8);
	put_le(b + 8, l->count, 8);
	put_le(b + 16, l->total, 8);
	return finish(p, HDR_LEN + sizeof(*l));
}

int proto_encode_control_reply(void *buf, size_t cap, uint64_t session,
			       const struct tvp_control_reply *r)
{
	uint8_t *p = buf, *b;
	int err;

	if (!buf || !r)
		return PROTO_ERR_INVAL;
	err = begin(p, cap, TVP_CONTROL_REPLY, session, 0, 0, sizeof(*r));
	if (err)
		return err;
	b = p + HDR_LEN;
	put_le(b, r->counter, 8);
	put_le(b + 8, r->op, 2);
	put_le(b + 10, 0, 2);
	put_le(b + 12, (uint32_t)r->status, 4);
	return finish(p, HDR_LEN + sizeof(*r));
}

/* HMAC over everything before the tag, the crc field as 0. */
static void control_tag(const uint8_t *p, size_t len, const void *key, size_t keylen,
			uint8_t tag[TVP_TAG_LEN])
{
	static const uint8_t zero4[4];
	struct hmac_sha256_ctx h;

	hmac_sha256_init(&h, key, keylen);
	hmac_sha256_update(&h, p, TVP_HDR_CRC_OFFSET);
	hmac_sha256_update(&h, zero4, 4);
	hmac_sha256_update(&h, p + HDR_LEN, len - HDR_LEN - TVP_TAG_LEN);
	hmac_sha256_final(&h, tag);
}

/* Host-order arguments to wire bytes; returns 0 or PROTO_ERR_INVAL. */
static int put_ctl_args(uint8_t *a, uint16_t op, uint16_t arg_len, const void *args)
{
	switch (op) {
	case TVP_CTL_START:
	case TVP_CTL_STOP: {
		const struct tvp_ctl_cpus *c = args;

		for (unsigned i = 0; i < TVP_CTL_CPU_WORDS; i++)
			put_le(a + 8 * i, c->mask[i], 8);
		return 0;
	}
	case TVP_CTL_FILTERS: {
		const struct tvp_ctl_filter *f = args;

		put_le(a, f->cpl, 4);
		put_le(a + 4, f->nranges, 4);
		put_le(a + 8, f->cr3, 8);
		for (unsigned i = 0; i < TVP_CTL_RANGES; i++) {
			put_le(a + 16 + 16 * i, f->ranges[i].lo, 8);
			put_le(a + 24 + 16 * i, f->ranges[i].hi, 8);
		}
		return 0;
	}
	case TVP_CTL_MARKER: {
		const struct tvp_ctl_marker *mk = args;

		if (arg_len < sizeof(*mk) || mk->label_len != arg_len - sizeof(*mk))
			return PROTO_ERR_INVAL;
		put_le(a, mk->value, 8);
		put_le(a + 8, mk->cpu, 4);
		put_le(a + 12, mk->label_len, 4);
		memcpy(a + sizeof(*mk), (const uint8_t *)args + sizeof(*mk), mk->label_len);
		return 0;
	}
	case TVP_CTL_MEM_WATCH: {
		const struct tvp_ctl_mem_watch *w = args;

		if (arg_len < sizeof(*w) || w->label_len != arg_len - sizeof(*w) ||
		    check_mem_watch(w))
			return PROTO_ERR_INVAL;
		put_le(a, w->lo, 8);
		put_le(a + 8, w->hi, 8);
		a[16] = w->op;
		a[17] = w->mode;
		put_le(a + 18, w->id, 2);
		put_le(a + 20, w->label_len, 4);
		memcpy(a + sizeof(*w), (const uint8_t *)args + sizeof(*w), w->label_len);
		return 0;
	}
	default:
		return 0;
	}
}

int proto_encode_control(void *buf, size_t cap, uint64_t session,
			 const struct tvp_control *c, const void *args,
			 const void *key, size_t keylen)
{
	uint8_t *p = buf, *b, tag[TVP_TAG_LEN];
	size_t padded, len;
	int err;

	if (!buf || !c || (!args && c->arg_len) || (!key && keylen) ||
	    c->op >= TVP_CTL_OP_MAX || c->arg_len > TVP_CTL_ARGS_MAX)
		return PROTO_ERR_INVAL;
	if (!ctl_has_label(c->op) && c->arg_len != ctl_arg_size(c->op))
		return PROTO_ERR_INVAL;
	padded = align8(c->arg_len);
	len = HDR_LEN + sizeof(*c) + padded + TVP_TAG_LEN;
	err = begin(p, cap, TVP_CONTROL, session, 0, 0, len - HDR_LEN);
	if (err)
		return err;
	b = p + HDR_LEN;
	put_le(b, c->counter, 8);
	put_le(b + 8, c->op, 2);
	put_le(b + 10, c->arg_len, 2);
	put_le(b + 12, 0, 4);
	memset(b + sizeof(*c), 0, padded);
	err = put_ctl_args(b + sizeof(*c), c->op, c->arg_len, args);
	if (err)
		return err;
	control_tag(p, len, key, keylen, tag);
	memcpy(p + len - TVP_TAG_LEN, tag, TVP_TAG_LEN);
	return finish(p, len);
}

int proto_control_verify(const void *buf, size_t len, const void *key, size_t keylen)
{
	const uint8_t *p = buf;
	uint8_t tag[TVP_TAG_LEN];
	bool ok;

	if (!buf || (!key && keylen) || len < HDR_LEN + sizeof(struct tvp_control) + TVP_TAG_LEN)
		return PROTO_ERR_INVAL;
	if (keylen == 0)
		return PROTO_ERR_AUTH;   /* no key configured: nothing is authentic */
	control_tag(p, len, key, keylen, tag);
	ok = tv_ct_equal(tag, p + len - TVP_TAG_LEN, TVP_TAG_LEN);
	memset(tag, 0, sizeof(tag));
	return ok ? 0 : PROTO_ERR_AUTH;
}
