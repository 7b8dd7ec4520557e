/* SPDX-License-Identifier: MIT */
/*
 * fake_sender.c - a fake traced machine for the receiver tests
 * (tests/build/net-*.sh) and the ingest benchmark (tests/bench/recv_bench.sh).
 *
 *   fake_sender send    --to ADDR:PORT [options]   produce and export
 *   fake_sender verify  --tvt FILE [options]       check a capture
 *   fake_sender garbage --to ADDR:PORT [--count N] [--seed S]
 *   fake_sender blast   --to ADDR:PORT --datagrams N [--rate DPS]
 *   fake_sender pt-pattern --pt N              the PT bytes send --pt N produces
 *
 * send: N CPUs, each with its own struct tv_trace_ring (vmm/trace/ring.c)
 * of --ring-bytes and --overflow policy, filled with a deterministic
 * pattern (branches that make compact and full records, CR3 and MARKER
 * records) from --seed, in bursts of --burst records per CPU between two
 * rounds of the real sender state machine (net/export.c) over a UDP
 * socket.  A burst larger than the ring under OVERWRITE makes the ring
 * overwrite records before they are acknowledged.  At the end it prints,
 * per CPU, what the exporter counted ("cpu N produced P sent S
 * retransmitted R lost_overwrite L") and "done" once every record was
 * acknowledged or declared lost.
 *
 * --pt N: CPU 0 also has a PT stream.  A struct byte_ring
 * (vmm/lib/byte_ring.h) of --pt-ring-bytes (a power of two, default 64 KiB)
 * is attached with export_attach_pt, so the exporter is its consumer: it
 * sends the bytes in PT datagrams (FIRST on the one at offset 0), resends
 * on NACK and ack timeout, and releases ring space only when the
 * receiver acknowledges it.  The fake is the producer (the traced CPU's
 * drain): as CPU 0's records are produced it writes the pattern byte
 * pt_pattern(o) at stream offset o, N bytes spread evenly over the
 * records, as much as the ring has room for (the rest waits for acks; a
 * real drain would refuse and count it, the fake keeps the pattern
 * whole).  The producer side is this file's own (pt_produce, the ring's
 * producer contract from vmm/lib/byte_ring.h), so that it can write the
 * pattern in place instead of through byte_ring_write.
 * "done" then also needs every PT byte acknowledged; "pt cpu 0 ..." gives
 * the exporter's PT counters.
 *
 * verify: generates the same pattern again (same --seed, --cpus,
 * --records, --ring-bytes) and compares every record of a .tvt file with
 * the record of the same sequence number, byte for byte (a compact branch
 * written out as the full branch it stands for is accepted).  Prints per
 * CPU "cpu N records R dup D bad B missing M [ranges]" and the missing
 * ranges as "missing cpu N first F count C"; exit 0 when no record is bad.
 * With --pt N it also checks CPU 0's PT chunks against pt_pattern at
 * their offsets ("pt cpu 0 bytes B dup D bad X missing M"): exit 0 only
 * when every byte 0..N-1 came once, right, and nothing beyond.
 *
 * Transport figures (tests/bench/export_bench.sh): --drop P drops P% of
 * the datagrams in each direction (seeded by --seed, before the socket:
 * an impairment with no relay in the way), --fixed-timers runs the
 * exporter's first-version transport (fixed window and ack timeout,
 * partial datagrams at once) instead of the congestion-controlled one,
 * and the line "transport: goodput ..." gives payload bytes acknowledged
 * per second (start to the last ack), bytes of DATA and PT payload sent
 * and re-sent, and the exporter's RTT and window state.
 *
 * pt-pattern: the N bytes of the PT pattern (what cpu0.pt must hold).
 *
 * garbage: datagrams a receiver must refuse, of every kind (random bytes,
 * short, bad magic, bad CRC, wrong version, truncated, oversized, session
 * 0, receiver-only types, a forged CONTROL); prints how many were sent.
 *
 * hostile --attack NAME: an attacker on the LAN (issue 20, tests/build/
 * net-hostile.sh), with datagrams built as docs/PROTOCOL.md says:
 *   lockout  HEARTBEATs of 8 made-up sessions, refreshed every 0.25 s for
 *            --timeout seconds (they must not fill the receiver's slots)
 *   poison   from a port of its own, with --session (the real machine's
 *            id, which travels in clear): a HELLO naming machine "evil",
 *            a LOSS of 2^40 records on CPU 0, a CONTROL_REPLY "stop
 *            applied" for counter 12345; three times
 *   reflect  61 DATA of one record (every other sequence number: each ACK
 *            names more holes), then one HELLO of a new session; prints
 *            the bytes sent and the bytes that came back for each
 *   ptfd     4 new sessions x 256 CPUs, one small PT datagram each (a
 *            receiver that keeps every cpuN.pt open runs out of fds)
 *
 * blast: valid HELLO + DATA datagrams (consecutive sequence numbers, one
 * CPU) at a fixed rate, ACKs ignored: an offered load for the benchmark
 * that does not depend on the receiver answering.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "host-tools/lib/tvt.h"
#include "tests/host/json_check.h"
#include "host-tools/lib/le.h"
#include "net/export.h"
#include "net/proto.h"
#include "vmm/lib/byte_ring.h"
#include "vmm/trace/ring.h"

#define MAX_CPUS 64

static struct {
	struct sockaddr_in to;
	unsigned cpus;
	uint64_t records;         /* per CPU */
	size_t ring_bytes;
	enum tv_overflow overflow;
	uint64_t seed;
	uint64_t session;
	const char *machine;
	const char *attack;       /* hostile */
	unsigned burst;
	double timeout;
	double rate;              /* records per second per CPU, 0: as fast as possible */
	const char *tvt;
	const char *losses;       /* verify: losses.json to compare the gaps with */
	unsigned count;
	uint64_t datagrams;
	double pause_ms;          /* pause between bursts */
	uint8_t key[EXPORT_KEY_MAX];
	size_t keylen;
	uint8_t data_key[EXPORT_KEY_MAX];   /* send: seal the data path (--data-key-hex) */
	size_t data_keylen;
	unsigned tamper;          /* send: every Nth datagram each way also replayed, forged, unsealed */
	uint64_t pt_bytes;        /* send, verify: PT bytes of CPU 0 (its PT stream) */
	uint64_t pt_ring_bytes;   /* send: CPU 0's PT byte ring */
	double linger;            /* send: seconds to go on after the last ack */
	unsigned drop;            /* send: percent of datagrams dropped each way */
	bool fixed_timers;        /* send: the exporter's first-version transport */
} opt = {
	.cpus = 2, .records = 10000, .ring_bytes = 1u << 20, .overflow = TV_OVERFLOW_STOP,
	.seed = 1, .session = 0x5eed000000000001ull, .machine = "fake", .burst = 64,
	.timeout = 60, .count = 100, .linger = 0.3, .pt_ring_bytes = 1u << 16,
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "fake_sender: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int parse_addr(const char *s, struct sockaddr_in *a)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	unsigned long port;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	port = strtoul(colon + 1, &end, 10);
	if (*end || port == 0 || port > 65535)
		return -1;
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -1;
}

/* ---- the pattern ------------------------------------------------------------ */

struct gen {
	uint64_t rng;
	uint64_t i;               /* appends so far */
	uint64_t pc;              /* the `to` of the last branch */
	uint64_t tsc;
};

static uint64_t gen_rand(struct gen *g)
{
	g->rng ^= g->rng >> 12;
	g->rng ^= g->rng << 25;
	g->rng ^= g->rng >> 27;
	return g->rng * 0x2545f4914f6cdd1dull;
}

static void gen_init(struct gen *g, unsigned cpu)
{
	memset(g, 0, sizeof(*g));
	g->rng = (opt.seed * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)(cpu + 1) << 32) ^ 0x1234567ull;
	if (!g->rng)
		g->rng = 1;
	g->pc = 0xffffffff81000000ull + ((uint64_t)cpu << 24);
	g->tsc = 1000000;
}

/* One append: mostly branches that the ring writes as compact records. */
static int gen_step(struct gen *g, struct tv_trace_ring *r)
{
	uint64_t x = gen_rand(g);
	int ret;

	g->tsc += 100 + (x & 0xff);
	g->i++;
	if (g->i % 997 == 0) {
		char label[32];
		int n = snprintf(label, sizeof(label), "m%" PRIu64, g->i);

		return trace_append_marker(r, g->tsc, g->i, label, (size_t)n);
	}
	if (g->i % 211 == 0)
		return trace_append_cr3(r, g->tsc, 0x1000 * (x & 0xfff), g->pc);
	{
		uint64_t from, to;
		uint32_t flags = 0;

		if ((x >> 8) % 13 == 0)
			from = g->pc - 0x100;                    /* backwards: full record */
		else
			from = g->pc + ((x >> 16) & 0x3ff);      /* forward: compact */
		if ((x >> 8) % 31 == 0)
			flags = TV_BRF_TSC;
		to = 0xffffffff81000000ull + ((x >> 24) & 0xffffff);
		ret = trace_append_branch(r, from, to, (enum tv_branch_kind)(1 + (x >> 40) % 6),
					  flags, g->tsc);
		g->pc = to;
		return ret;
	}
}

static struct tv_trace_ring *ring_new(unsigned cpu)
{
	size_t total = opt.ring_bytes + sizeof(struct tv_trace_ring);
	struct tv_trace_ring *r = aligned_alloc(64, (total + 63) & ~(size_t)63);

	if (!r || trace_ring_init(r, total, cpu, cpu, TV_SOURCE_MTF, opt.overflow,
				  1000000000ull, 0)) {
		fprintf(stderr, "fake_sender: ring init failed (--ring-bytes >= 4096?)\n");
		exit(1);
	}
	return r;
}

/* ---- send: the real exporter over a UDP socket ------------------------------ */

static struct tv_trace_ring *rings[MAX_CPUS];
static uint64_t ctl_applied;
/* Per CPU: which sequence numbers ever left in a DATA datagram. */
static uint8_t *tx_seen[MAX_CPUS];
static uint64_t tx_cap;

static void note_tx(const uint8_t *p, size_t len)
{
	uint32_t cpu;
	uint64_t first, count;

	if (len < 48 || p[5] != TVP_DATA)
		return;
	cpu = tvh_le16(p + 16) & TVP_STREAM_CPU_MASK;
	first = tvh_le64(p + 24);
	count = tvh_le16(p + 24 + 16);
	if (cpu >= opt.cpus || !tx_seen[cpu])
		return;
	for (uint64_t s = first; s < first + count && s < tx_cap; s++)
		tx_seen[cpu][s / 8] |= (uint8_t)(1u << (s % 8));
}

/* Records never sent at all: on a path that loses nothing, exactly the lost ones. */
static uint64_t unsent(unsigned cpu)
{
	uint64_t n = 0, end = rings[cpu]->next_seq;

	for (uint64_t s = 0; s < end && s < tx_cap; s++)
		n += !(tx_seen[cpu][s / 8] >> (s % 8) & 1);
	return n;
}

/* --drop: a seeded coin, separate from the pattern's generator. */
static uint64_t drop_rng;

static bool drop_now(void)
{
	if (!opt.drop)
		return false;
	drop_rng ^= drop_rng << 13;
	drop_rng ^= drop_rng >> 7;
	drop_rng ^= drop_rng << 17;
	return drop_rng % 100 < opt.drop;
}

/* Payload bytes of DATA and PT datagrams handed over, and of those flagged RETRANSMIT. */
static uint64_t tx_payload, tx_resent, tx_dropped, rx_dropped;

/* --tamper: what an attacker on the path added, each way (the counts to expect). */
static struct {
	uint64_t n;                        /* datagrams seen, this way */
	uint64_t tries;                    /* datagrams tampered with */
	uint64_t replayed, forged, unsealed;   /* in: of them refused as such */
} tamper_tx, tamper_rx;

static void raw_send(int fd, const void *buf, size_t len);

/*
 * --tamper N, sealed, every Nth datagram but a HELLO: the same bytes again
 * (a replay), a copy with a byte of its body changed and the CRC made
 * right again (only the tag can tell), and the datagram without its
 * trailer.  A receiver with the key must take none of them.
 */
static void tamper_send(int fd, const uint8_t *p, size_t len)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	size_t hl;
	uint32_t crc;

	if (!opt.tamper || !opt.data_keylen || p[5] == TVP_HELLO || ++tamper_tx.n % opt.tamper ||
	    len > sizeof(b))
		return;
	hl = tvh_le16(p + 6);
	raw_send(fd, p, len);
	tamper_tx.replayed++;
	memcpy(b, p, len);
	b[hl - 1] ^= 0x5a;
	memset(b + 20, 0, 4);
	crc = proto_crc32(0, b, hl);
	memcpy(b + 20, &crc, 4);
	raw_send(fd, b, len);
	tamper_tx.forged++;
	raw_send(fd, p, hl);
	tamper_tx.unsealed++;
}

static int net_send(void *ctx, const void *buf, size_t len)
{
	int fd = *(const int *)ctx;
	const uint8_t *p = buf;

	note_tx(buf, len);
	if (len >= 48 && (p[5] == TVP_DATA || p[5] == TVP_PT)) {
		/* DATA: 24 bytes of its own header; PT: 16 (docs/PROTOCOL.md); sealed: the trailer. */
		uint64_t pay = len - 24 - (p[5] == TVP_DATA ? 24 : 16) -
			       (opt.data_keylen ? DAUTH_TRAILER_LEN : 0);

		tx_payload += pay;
		if (tvh_le16(p + 18) & TVP_DATA_F_RETRANSMIT)
			tx_resent += pay;
	}
	if (drop_now()) {
		tx_dropped++;
		return 0;   /* lost on the way: the exporter does not know */
	}
	/* Loopback only refuses when its buffer is full: wait for room, as a NIC ring does. */
	while (sendto(fd, buf, len, 0, (const struct sockaddr *)&opt.to, sizeof(opt.to)) != (ssize_t)len) {
		if (errno != EAGAIN && errno != ENOBUFS)
			return -1;
		struct pollfd pf = { .fd = fd, .events = POLLOUT };

		poll(&pf, 1, 10);
	}
	tamper_send(fd, p, len);
	return 0;
}

static void raw_send(int fd, const void *buf, size_t len)
{
	while (sendto(fd, buf, len, 0, (const struct sockaddr *)&opt.to, sizeof(opt.to)) != (ssize_t)len) {
		struct pollfd pf = { .fd = fd, .events = POLLOUT };

		if (errno != EAGAIN && errno != ENOBUFS)
			return;
		poll(&pf, 1, 10);
	}
}

/*
 * --tamper N on the way in: every Nth datagram from the receiver is also
 * fed replayed, forged and unsealed (after the real one); the exporter
 * must refuse and count each.
 */
static void tamper_input(struct exporter *ex, const uint8_t *p, size_t len)
{
	uint8_t b[TVP_MAX_DATAGRAM + 64];
	size_t hl;
	uint32_t crc;

	if (!opt.tamper || !ex->seal.verified || len < 24 || len > sizeof(b) ||
	    ++tamper_rx.n % opt.tamper)
		return;
	hl = tvh_le16(p + 6);
	if (hl < 24 || hl >= len)
		return;
	tamper_rx.tries++;
	if (export_input(ex, p, len, now_ns()) == PROTO_ERR_REPLAY)
		tamper_rx.replayed++;
	memcpy(b, p, len);
	b[hl - 1] ^= 0x5a;
	memset(b + 20, 0, 4);
	crc = proto_crc32(0, b, hl);
	memcpy(b + 20, &crc, 4);
	if (export_input(ex, b, len, now_ns()) == PROTO_ERR_AUTH)
		tamper_rx.forged++;
	if (export_input(ex, p, hl, now_ns()) < 0)
		tamper_rx.unsealed++;
}

static int op_startstop(void *ctx, const struct tvp_ctl_cpus *cpus)
{
	(void)ctx;
	(void)cpus;
	ctl_applied++;
	return 0;
}

static int op_filters(void *ctx, const struct tvp_ctl_filter *f)
{
	(void)ctx;
	(void)f;
	ctl_applied++;
	return 0;
}

/* A MARKER from the receiver goes into the chosen rings, like the hypervisor's. */
static int op_marker(void *ctx, const struct tvp_ctl_marker *m, const char *label)
{
	(void)ctx;
	for (unsigned c = 0; c < opt.cpus; c++)
		if (m->cpu == TVP_CPU_ALL || m->cpu == c)
			trace_append_marker(rings[c], now_ns(), m->value, label, m->label_len);
	ctl_applied++;
	return 0;
}

/*
 * A MEM_WATCH from the receiver: CPU 0's ring gets the record the
 * hypervisor would write (origin CONTROL; ARM under the next id).
 */
static int op_mem_watch(void *ctx, const struct tvp_ctl_mem_watch *w, const char *label)
{
	static uint32_t next_id;
	uint32_t id = w->op == TV_MEMW_ARM ? ++next_id : w->id;
	uint32_t aux = id | (uint32_t)w->mode << 16 | (uint32_t)TV_MEMW_FROM_CONTROL << 24;

	(void)ctx;
	trace_append_mem_watch(rings[0], now_ns(), w->op, aux, w->lo, w->hi, 0, 0, label,
			       w->label_len);
	ctl_applied++;
	return 0;
}

/* ---- PT: the pattern and the producer of CPU 0's PT byte ring ---------------- */

/* The PT byte at stream offset off (not a valid PT packet stream: raw bytes). */
static uint8_t pt_pattern(uint64_t off)
{
	return (uint8_t)((off * 7 + off / 251) & 0xff);
}

static struct byte_ring pt_ring;

/*
 * The producer side of pt_ring (as byte_ring_write): write the pattern
 * up to stream offset upto, as far as the room the consumer left allows;
 * bytes first, then head with release.  Returns the new head.
 */
static uint64_t pt_produce(struct byte_ring *r, uint64_t upto)
{
	uint64_t head = r->head;      /* only the producer writes it */
	uint64_t room = r->size - (head - byte_ring_tail(r));
	uint64_t n = upto - head < room ? upto - head : room;

	/* pt_pattern(o) = o * 7 + o / 251, with the quotient carried (no division per byte). */
	uint64_t q = head / 251, rem = head % 251;

	for (uint64_t i = 0; i < n; i++) {
		r->data[(head + i) & (r->size - 1)] = (uint8_t)(((head + i) * 7 + q) & 0xff);
		if (++rem == 251) {
			rem = 0;
			q++;
		}
	}
	__atomic_store_n(&r->head, head + n, __ATOMIC_RELEASE);
	return head + n;
}

/* PT bytes due once CPU 0 has produced `records` records: spread evenly. */
static uint64_t pt_due(uint64_t records)
{
	if (!opt.records || records >= opt.records)
		return opt.pt_bytes;
	return (uint64_t)((unsigned __int128)opt.pt_bytes * records / opt.records);
}

static int cmd_send(void)
{
	static const struct export_ops ops = {
		.start = op_startstop, .stop = op_startstop, .filters = op_filters,
		.marker = op_marker, .mem_watch = op_mem_watch,
	};
	static struct exporter ex;
	static struct gen g[MAX_CPUS];
	static uint8_t buf[65536];
	struct export_config cfg;
	uint64_t t0 = now_ns(), deadline, produced[MAX_CPUS] = { 0 }, done_at = 0, pt_head = 0;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0), err;
	bool done = false;
	int sz = 4 << 20;

	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	memset(&cfg, 0, sizeof(cfg));
	cfg.session = opt.session;
	cfg.tsc_hz = 1000000000ull;              /* our "TSC" is CLOCK_MONOTONIC in ns */
	cfg.heartbeat_ticks = 100000000ull;      /* 100 ms: final counters reach the receiver */
	cfg.key = opt.keylen ? opt.key : NULL;
	cfg.keylen = opt.keylen;
	if (opt.data_keylen) {
		uint64_t a = now_ns() ^ opt.session, b = opt.seed * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();

		cfg.data_key = opt.data_key;
		cfg.data_keylen = opt.data_keylen;
		memcpy(cfg.nonce_m, &a, 8);
		memcpy(cfg.nonce_m + 8, &b, 8);
	}
	cfg.hello.cpu_count = (uint16_t)opt.cpus;
	cfg.hello.source = TV_SOURCE_MTF;
	cfg.hello.overflow = (uint8_t)opt.overflow;
	cfg.hello.vendor_id = TVP_VENDOR_INTEL;
	cfg.hello.family = 6;
	cfg.hello.model = 0x55;
	cfg.hello.stepping = 7;
	cfg.hello.caps = TVP_CAP_SOURCE(TV_SOURCE_MTF) | (opt.keylen ? TVP_CAP_CONTROL : 0);
	cfg.hello.tsc_hz = 1000000000ull;
	cfg.hello.boot_tsc = t0;
	cfg.hello.ring_bytes = opt.ring_bytes;
	memcpy(cfg.hello.vendor, "GenuineIntel", TVP_VENDOR_LEN);
	snprintf(cfg.hello.sw_version, sizeof(cfg.hello.sw_version), "fake_sender");
	snprintf(cfg.hello.machine, sizeof(cfg.hello.machine), "%s", opt.machine);
	cfg.send = net_send;
	cfg.send_ctx = &fd;
	cfg.ops = &ops;
	cfg.fixed_timers = opt.fixed_timers;
	drop_rng = opt.seed * 0x9e3779b97f4a7c15ull | 1;
	err = export_init(&ex, &cfg, opt.cpus, t0);
	if (err) {
		fprintf(stderr, "fake_sender: export_init: %s\n", proto_strerror(err));
		return 1;
	}
	tx_cap = opt.records * 2 + 65536;     /* markers from CONTROL add a few */
	for (unsigned c = 0; c < opt.cpus; c++) {
		tx_seen[c] = calloc(tx_cap / 8 + 1, 1);
		if (!tx_seen[c])
			die("calloc");
		rings[c] = ring_new(c);
		gen_init(&g[c], c);
		err = export_attach(&ex, c, rings[c]);
		if (err) {
			fprintf(stderr, "fake_sender: export_attach: %d\n", err);
			return 1;
		}
	}
	if (opt.pt_bytes) {
		/* Before the first export_poll: the HELLO says a PT stream follows. */
		uint8_t *mem = malloc(opt.pt_ring_bytes ? opt.pt_ring_bytes : 1);

		if (!mem)
			die("malloc");
		memset(&pt_ring, 0, sizeof(pt_ring));
		pt_ring.data = mem;
		pt_ring.size = opt.pt_ring_bytes;
		err = export_attach_pt(&ex, 0, &pt_ring);
		if (err) {
			fprintf(stderr, "fake_sender: export_attach_pt: %s (--pt-ring-bytes a power "
				"of two?)\n", proto_strerror(err));
			return 1;
		}
	}
	deadline = t0 + (uint64_t)(opt.timeout * 1e9);
	while (!stop) {
		uint64_t now = now_ns();
		bool all = true;
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (now >= deadline)
			break;
		/* Produce: a burst per CPU, paced by --rate and --pause-ms. */
		for (unsigned c = 0; c < opt.cpus; c++) {
			uint64_t want = produced[c] + opt.burst;

			if (opt.rate > 0) {
				uint64_t allowed = (uint64_t)((double)(now - t0) / 1e9 * opt.rate);

				if (want > allowed)
					want = allowed;
			}
			if (want > opt.records)
				want = opt.records;
			while (produced[c] < want) {
				gen_step(&g[c], rings[c]);
				produced[c]++;
			}
		}
		/* Send and receive until the pause is over (at least once). */
		{
			uint64_t until = now + (uint64_t)(opt.pause_ms * 1e6);

			do {
				/* CPU 0's PT bytes follow its records; a full ring waits for acks. */
				if (opt.pt_bytes)
					pt_head = pt_produce(&pt_ring, pt_due(produced[0]));
				export_poll(&ex, now_ns());
				while ((n = recv(fd, buf, sizeof(buf), 0)) >= 0) {
					if (drop_now()) {
						rx_dropped++;
						continue;
					}
					export_input(&ex, buf, (size_t)n, now_ns());
					tamper_input(&ex, buf, (size_t)n);
				}
				pf.revents = 0;
				poll(&pf, 1, opt.pause_ms > 0 || done_at ? 1 : 0);
			} while (now_ns() < until && !stop);
		}
		for (unsigned c = 0; c < opt.cpus; c++) {
			const struct tvp_hb_cpu *k = export_counters(&ex, c);

			if (produced[c] < opt.records || !k || k->acked != rings[c]->next_seq)
				all = false;
		}
		if (opt.pt_bytes) {
			const struct export_pt_counters *k = export_pt_counters(&ex, 0);

			if (pt_head < opt.pt_bytes || !k || k->acked != opt.pt_bytes)
				all = false;
		}
		if (all && !done_at)
			done_at = now_ns();
		/*
		 * Linger (--linger, 0.3 s): the last heartbeat carries the final
		 * counters, and a CONTROL resent by the receiver still gets its
		 * reply.
		 */
		if (done_at && now_ns() - done_at > (uint64_t)(opt.linger * 1e9)) {
			done = true;
			break;
		}
	}
	for (unsigned c = 0; c < opt.cpus; c++) {
		const struct tvp_hb_cpu *k = export_counters(&ex, c);

		printf("cpu %u produced %" PRIu64 " sent %" PRIu64 " retransmitted %" PRIu64
		       " lost_overwrite %" PRIu64 " acked %" PRIu64 " head %" PRIu64
		       " ring_dropped %" PRIu64 " unsent %" PRIu64 "\n", c, k->produced, k->sent,
		       k->retransmitted, k->lost_overwrite, k->acked, rings[c]->next_seq,
		       rings[c]->lost_records, unsent(c));
	}
	if (opt.pt_bytes) {
		const struct export_pt_counters *k = export_pt_counters(&ex, 0);

		printf("pt cpu 0 produced %" PRIu64 " sent %" PRIu64 " retransmitted %" PRIu64
		       " acked %" PRIu64 " head %" PRIu64 " tail %" PRIu64 " gone %" PRIu64 "\n",
		       pt_head, k->sent, k->retransmitted, k->acked, byte_ring_head(&pt_ring),
		       byte_ring_tail(&pt_ring), ex.st.pt_gone);
	}
	printf("datagrams %" PRIu64 " acks %" PRIu64 " nack_ranges %" PRIu64
	       " control_applied %" PRIu64 " ctl_bad_auth %u\n", ex.st.datagrams, ex.st.acks,
	       ex.st.nack_ranges, ctl_applied, ex.st.ctl_bad_auth);
	if (opt.data_keylen)
		printf("sealed: verified %d bad_tag %" PRIu64 " replay %" PRIu64 " unsealed %" PRIu64
		       "; tampered out replayed %" PRIu64 " forged %" PRIu64 " unsealed %" PRIu64
		       "; tampered in %" PRIu64 ": refused replayed %" PRIu64 " forged %" PRIu64
		       " unsealed %" PRIu64 "\n",
		       ex.seal.verified, ex.st.auth_bad_tag, ex.st.auth_replay, ex.st.auth_unsealed,
		       tamper_tx.replayed, tamper_tx.forged, tamper_tx.unsealed, tamper_rx.tries,
		       tamper_rx.replayed,
		       tamper_rx.forged, tamper_rx.unsealed);
	{
		/* Payload delivered: every record byte and PT byte produced (all acked when done). */
		uint64_t bytes = opt.pt_bytes ? pt_head : 0;
		double secs = (double)((done_at ? done_at : now_ns()) - t0) / 1e9;

		for (unsigned c = 0; c < opt.cpus; c++)
			bytes += rings[c]->head;
		printf("transport: %s goodput %.1f MB/s payload %" PRIu64 " bytes in %.3f s; sent %"
		       PRIu64 " resent %" PRIu64 " bytes (%.2f%%); dropped %" PRIu64 " out %" PRIu64
		       " in; partial %" PRIu64 "; cwnd %u srtt %.1f us rto %.1f us samples %" PRIu64
		       " timeouts %" PRIu64 " decreases %" PRIu64 "\n",
		       opt.fixed_timers ? "fixed" : "cc", secs > 0 ? (double)bytes / secs / 1e6 : 0.0,
		       bytes, secs, tx_payload, tx_resent,
		       tx_payload ? 100.0 * (double)tx_resent / (double)tx_payload : 0.0, tx_dropped,
		       rx_dropped, ex.st.partial, ex.cc.cwnd, (double)(ex.cc.srtt8 >> 3) / 1e3,
		       (double)ex.cc.rto / 1e3, ex.cc.samples, ex.cc.timeouts,
		       ex.cc.decreases);
	}
	printf("%s after %.2f s\n", done ? "done" : stop ? "stopped" : "timeout",
	       (double)(now_ns() - t0) / 1e9);
	close(fd);
	for (unsigned c = 0; c < opt.cpus; c++) {
		free(rings[c]);
		free(tx_seen[c]);
	}
	free(pt_ring.data);
	return done ? 0 : 1;
}

/* ---- verify ---------------------------------------------------------------- */

struct expect {
	uint8_t *bytes;           /* every record in sequence order */
	uint64_t *off;            /* offset of record seq in bytes[], n + 1 entries */
	uint64_t n;
	uint64_t seen_next;       /* for duplicate detection: highest seen + 1 */
	uint8_t *seen;            /* per seq: received */
	uint64_t got, dup, bad, expanded;
	uint64_t next;            /* one past the last record of the previous chunk */
	uint64_t order;           /* chunks that start before the previous one ended */
};

/* The same production, read out after every append (nothing dropped). */
static void expect_build(struct expect *e, unsigned cpu)
{
	struct tv_trace_ring *r;
	struct trace_cursor c;
	struct gen g;
	size_t cap = 1 << 20, len = 0;
	uint64_t ncap = 1024;
	uint8_t buf[TV_REC_MAX_SIZE * 4];

	memset(e, 0, sizeof(*e));
	enum tv_overflow keep = opt.overflow;

	opt.overflow = TV_OVERFLOW_OVERWRITE;
	r = ring_new(cpu);
	opt.overflow = keep;
	gen_init(&g, cpu);
	trace_ring_cursor_tail(r, &c);
	e->bytes = malloc(cap);
	e->off = malloc(ncap * sizeof(*e->off));
	for (uint64_t i = 0; i < opt.records && !stop; i++) {
		size_t got;

		gen_step(&g, r);
		for (;;) {
			if (trace_ring_peek(r, &c, buf, sizeof(buf), &got) || !got)
				break;
			for (size_t o = 0; o < got;) {
				size_t sz = tvh_le16(buf + o + 2);

				if (len + sz > cap)
					e->bytes = realloc(e->bytes, cap *= 2);
				if (e->n + 2 > ncap)
					e->off = realloc(e->off, (ncap *= 2) * sizeof(*e->off));
				e->off[e->n++] = len;
				memcpy(e->bytes + len, buf + o, sz);
				len += sz;
				o += sz;
			}
		}
	}
	e->off[e->n] = len;
	e->seen = calloc(e->n + 1, 1);
	free(r);
}

static bool expanded_match(const uint8_t *exp, size_t esz, const uint8_t *got, size_t gsz)
{
	/* A compact branch (16) written as its full branch (24): same kind and to. */
	return exp[0] == TV_REC_BRANCH_COMPACT && esz == 16 && got[0] == TV_REC_BRANCH &&
	       gsz == 24 && got[1] == exp[1] && tvh_le64(got + 16) == tvh_le64(exp + 8);
}

/*
 * The capture's own account (losses.json: declared_lost_ranges and
 * missing_at_close_ranges of each CPU) must name exactly the records the
 * file lacks: mark them, then every record must be marked exactly once.
 */
static int check_losses(struct expect *e)
{
	FILE *f = fopen(opt.losses, "r");
	static char text[4 << 20];
	char err[128];
	size_t len;
	struct jval *v;
	const struct jval *cpus;
	int bad = 0;

	if (!f) {
		fprintf(stderr, "fake_sender: %s: %s\n", opt.losses, strerror(errno));
		return 1;
	}
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	v = json_parse(text, len, err, sizeof(err));
	cpus = v ? json_get(v, "cpus") : NULL;
	if (!cpus || cpus->t != J_ARR) {
		printf("losses: %s unreadable (%s)\n", opt.losses, v ? "no cpus" : err);
		json_free(v);
		return 1;
	}
	for (size_t i = 0; i < cpus->len; i++) {
		const struct jval *c = &cpus->items[i];
		const struct jval *cpu = json_get(c, "cpu");
		static const char *const keys[] = { "declared_lost_ranges", "missing_at_close_ranges" };

		if (!cpu || cpu->t != J_NUM || cpu->num >= opt.cpus)
			continue;
		for (int k = 0; k < 2; k++) {
			const struct jval *r = json_get(c, keys[k]);

			for (size_t j = 0; r && j < r->len && !stop; j++) {
				const struct jval *jf = json_get(&r->items[j], "first");
				const struct jval *jc = json_get(&r->items[j], "count");
				uint64_t first, count, end;
				struct expect *x = &e[(unsigned)cpu->num];

				if (!jf || !jc || jf->t != J_NUM || jc->t != J_NUM) {
					bad++;
					continue;
				}
				first = (uint64_t)jf->num;
				count = (uint64_t)jc->num;
				/*
				 * Bounded by what was produced, not by what the file
				 * claims (a forged LOSS can name 2^40 records): the
				 * part beyond is one finding, not 2^40 steps.
				 */
				end = first + count < first || first + count > x->n ? x->n : first + count;
				if (first + count != end) {
					if (bad++ < 5)
						printf("losses: cpu %u range %" PRIu64 "+%" PRIu64 " %s\n",
						       (unsigned)cpu->num, first, count,
						       "goes beyond what was produced");
				}
				for (uint64_t s = first; s < end; s++) {
					if (s >= x->n || x->seen[s]) {
						if (bad++ < 5)
							printf("losses: cpu %u seq %" PRIu64 " in %s but %s\n",
							       (unsigned)cpu->num, s, keys[k],
							       s >= x->n ? "never produced" : "received or listed twice");
						continue;
					}
					x->seen[s] = 2;
				}
			}
		}
	}
	if (stop) {
		printf("losses: interrupted\n");
		bad++;
	}
	for (unsigned c = 0; c < opt.cpus; c++)
		for (uint64_t s = 0; s < e[c].n; s++)
			if (!e[c].seen[s] && bad++ < 10)
				printf("losses: cpu %u seq %" PRIu64 " neither received nor reported lost\n", c, s);
	printf("losses %s\n", bad ? "MISMATCH" : "match");
	json_free(v);
	return bad ? 1 : 0;
}

/* CPU 0's PT stream as the capture's PT chunks hold it (verify --pt N). */
struct pt_expect {
	uint8_t *seen;            /* per offset 0..N-1: came */
	uint64_t got, dup, bad;
};

/* A PT chunk: each byte must be pt_pattern at its offset, below N, once. */
static void pt_check_chunk(struct pt_expect *x, const struct tvt_chunk *ch)
{
	for (uint64_t i = 0; i < ch->length; i++) {
		uint64_t off = ch->first + i;

		if (ch->cpu != 0 || off >= opt.pt_bytes || ch->payload[i] != pt_pattern(off)) {
			if (x->bad++ < 5)
				printf("pt cpu %u offset %" PRIu64 ": byte differs or not produced\n",
				       ch->cpu, off);
		} else if (x->seen[off]) {
			x->dup++;
		} else {
			x->seen[off] = 1;
			x->got++;
		}
	}
}

/* Prints "pt cpu 0 bytes B dup D bad X missing M"; returns the bad count. */
static uint64_t pt_report(const struct pt_expect *x)
{
	uint64_t missing = 0;

	for (uint64_t o = 0; o < opt.pt_bytes;) {
		uint64_t t = o;

		if (x->seen[o]) {
			o++;
			continue;
		}
		while (t < opt.pt_bytes && !x->seen[t])
			t++;
		printf("missing pt cpu 0 offset %" PRIu64 " count %" PRIu64 "\n", o, t - o);
		missing += t - o;
		o = t;
	}
	printf("pt cpu 0 bytes %" PRIu64 " dup %" PRIu64 " bad %" PRIu64 " missing %" PRIu64 "\n",
	       x->got, x->dup, x->bad, missing);
	return x->bad + x->dup + missing;
}

static int cmd_verify(void)
{
	static struct expect e[MAX_CPUS];
	struct pt_expect pt = { 0 };
	struct tvt_reader rd;
	struct tvt_chunk ch;
	int got, bad_chunks = 0;
	uint64_t total_bad = 0;

	if (tvt_reader_open(&rd, opt.tvt)) {
		fprintf(stderr, "fake_sender: cannot read %s\n", opt.tvt);
		return 1;
	}
	for (unsigned c = 0; c < opt.cpus && !stop; c++)
		expect_build(&e[c], c);
	if (opt.pt_bytes && !(pt.seen = calloc(opt.pt_bytes, 1)))
		die("calloc");
	while (!stop && (got = tvt_next_chunk(&rd, &ch)) != 0) {
		uint64_t seq;

		if (got < 0) {
			bad_chunks++;
			continue;
		}
		if (ch.kind == TVT_KIND_PT && opt.pt_bytes) {
			pt_check_chunk(&pt, &ch);
			continue;
		}
		if (ch.kind != TVT_KIND_RECORDS)
			continue;
		if (ch.cpu >= opt.cpus) {
			printf("unexpected cpu %u\n", ch.cpu);
			total_bad++;
			continue;
		}
		seq = ch.first;
		if (seq < e[ch.cpu].next)
			e[ch.cpu].order++;
		for (uint64_t o = 0; o + 8 <= ch.length; seq++) {
			struct expect *x = &e[ch.cpu];
			size_t sz = tvh_le16(ch.payload + o + 2);

			if (sz < 8 || o + sz > ch.length)
				break;
			if (seq >= x->n) {
				x->bad++;
			} else {
				size_t esz = (size_t)(x->off[seq + 1] - x->off[seq]);
				const uint8_t *ep = x->bytes + x->off[seq];

				if (x->seen[seq]) {
					x->dup++;
				} else if ((esz == sz && !memcmp(ep, ch.payload + o, sz)) ||
					   expanded_match(ep, esz, ch.payload + o, sz)) {
					x->seen[seq] = 1;
					x->got++;
					x->expanded += esz != sz;
				} else {
					if (x->bad < 5)
						printf("cpu %u seq %" PRIu64 ": record differs\n", ch.cpu, seq);
					x->bad++;
				}
			}
			o += sz;
		}
		e[ch.cpu].next = seq;
	}
	for (unsigned c = 0; c < opt.cpus; c++) {
		struct expect *x = &e[c];
		uint64_t missing = 0;

		for (uint64_t s = 0; s < x->n;) {
			uint64_t t = s;

			if (x->seen[s]) {
				s++;
				continue;
			}
			while (t < x->n && !x->seen[t])
				t++;
			printf("missing cpu %u first %" PRIu64 " count %" PRIu64 "\n", c, s, t - s);
			missing += t - s;
			s = t;
		}
		printf("cpu %u produced %" PRIu64 " records %" PRIu64 " dup %" PRIu64 " bad %" PRIu64
		       " missing %" PRIu64 " expanded %" PRIu64 " order %" PRIu64 "\n", c, x->n, x->got,
		       x->dup, x->bad, missing, x->expanded, x->order);
		total_bad += x->bad + x->order;
	}
	/* PT: every byte once and right (the receiver delivers each once). */
	if (opt.pt_bytes)
		total_bad += pt_report(&pt);
	free(pt.seen);
	printf("damaged chunks %d\n", bad_chunks);
	tvt_reader_close(&rd);
	if (!stop && opt.losses && check_losses(e))
		total_bad++;
	if (stop) {
		printf("verify: interrupted (SIGINT/SIGTERM)\n");
		return 1;
	}
	return total_bad || bad_chunks ? 1 : 0;
}

/* ---- garbage ---------------------------------------------------------------- */

static int cmd_garbage(void)
{
	static const char *const kinds[] = {
		"random", "short", "magic", "crc", "version", "truncated", "oversized",
		"session0", "ack", "control", "hello_ack", "records",
	};
	enum { NK = sizeof(kinds) / sizeof(kinds[0]) };
	uint64_t sent[NK] = { 0 };
	struct gen g;
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	uint8_t rec[24], buf[2100];
	struct tvp_data d = { .first_seq = 0, .count = 1 };

	if (fd < 0)
		die("socket");
	gen_init(&g, 77);
	memset(rec, 0, sizeof(rec));
	rec[0] = TV_REC_BRANCH;
	rec[1] = TV_BR_JMP;
	tvh_put_le16(rec + 2, 24);
	for (unsigned i = 0; i < opt.count; i++) {
		unsigned k = i % NK;
		uint64_t x = gen_rand(&g);
		int len = proto_encode_data(buf, sizeof(buf), opt.session ^ 0xbad, 0, 0, &d, rec,
					    sizeof(rec));

		switch (k) {
		case 0:                       /* random bytes, random length */
			len = (int)(x % 1500);
			for (int j = 0; j < len; j++)
				buf[j] = (uint8_t)gen_rand(&g);
			break;
		case 1:                       /* shorter than a header */
			len = (int)(x % 24);
			break;
		case 2:
			buf[0] ^= 0xff;
			break;
		case 3:                       /* one bit flipped after the CRC */
			buf[24 + x % (uint64_t)(len - 24)] ^= (uint8_t)(1u << (x >> 32) % 8);
			break;
		case 4:                       /* version 2, CRC made right */
			buf[4] = 2;
			tvh_put_le32(buf + TVP_HDR_CRC_OFFSET, 0);
			tvh_put_le32(buf + TVP_HDR_CRC_OFFSET, proto_crc32(0, buf, (size_t)len));
			break;
		case 5:                       /* cut short: header length disagrees */
			len -= 1 + (int)(x % 20);
			break;
		case 6: {                     /* longer than TVP_MAX_DATAGRAM, CRC right */
			memset(buf + len, 0, sizeof(buf) - (size_t)len);
			len = 2000;
			tvh_put_le16(buf + 6, (uint16_t)len);
			tvh_put_le32(buf + TVP_HDR_CRC_OFFSET, 0);
			tvh_put_le32(buf + TVP_HDR_CRC_OFFSET, proto_crc32(0, buf, (size_t)len));
			break;
		}
		case 7:                       /* session 0, CRC right */
			memset(buf + 8, 0, 8);
			tvh_put_le32(buf + TVP_HDR_CRC_OFFSET, 0);
			tvh_put_le32(buf + TVP_HDR_CRC_OFFSET, proto_crc32(0, buf, (size_t)len));
			break;
		case 8: {                     /* an ACK: only a receiver sends those */
			struct tvp_ack a = { .cum = 5, .highest = 5 };

			len = proto_encode_ack(buf, sizeof(buf), opt.session ^ 0xbad, 0, &a, NULL);
			break;
		}
		case 9: {                     /* a CONTROL with a made-up key */
			struct tvp_control c = { .counter = i + 1, .op = TVP_CTL_NOP };

			len = proto_encode_control(buf, sizeof(buf), opt.session ^ 0xbad, &c, NULL,
						   "guess", 5);
			break;
		}
		case 10:
			len = proto_encode_hello_ack(buf, sizeof(buf), opt.session ^ 0xbad, 1);
			break;
		case 11:                      /* a record size that does not tile, CRC right */
			tvh_put_le16(buf + 24 + 24 + 2, 16);
			tvh_put_le32(buf + TVP_HDR_CRC_OFFSET, 0);
			tvh_put_le32(buf + TVP_HDR_CRC_OFFSET, proto_crc32(0, buf, (size_t)len));
			break;
		}
		if (len < 0) {
			fprintf(stderr, "fake_sender: encoder failed for %s: %d\n", kinds[k], len);
			return 1;
		}
		if (sendto(fd, buf, (size_t)len, 0, (struct sockaddr *)&opt.to, sizeof(opt.to)) < 0)
			die("sendto");
		sent[k]++;
		if (i % 32 == 31)
			usleep(1000);      /* not a load test: let the receiver keep up */
	}
	printf("garbage sent %u:", opt.count);
	for (unsigned k = 0; k < NK; k++)
		printf(" %s=%" PRIu64, kinds[k], sent[k]);
	printf("\n");
	close(fd);
	return 0;
}

/* ---- hostile ------------------------------------------------------------------ */

static int udp_socket(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		die("socket");
	return fd;
}

static size_t tx(int fd, const uint8_t *b, int len)
{
	if (len <= 0) {
		fprintf(stderr, "fake_sender: encoder failed: %d\n", len);
		exit(1);
	}
	if (sendto(fd, b, (size_t)len, 0, (struct sockaddr *)&opt.to, sizeof(opt.to)) < 0)
		die("sendto");
	return (size_t)len;
}

/* Bytes that arrive at fd until ms of silence. */
static size_t rx_bytes(int fd, int ms)
{
	uint8_t buf[2048];
	size_t total = 0;

	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (stop || poll(&pf, 1, ms) != 1)
			return total;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n > 0)
			total += (size_t)n;
	}
}

static size_t data_one(int fd, uint64_t session, uint16_t cpu, uint16_t flags, uint64_t seq)
{
	uint8_t b[TVP_MAX_DATAGRAM], rec[24];
	struct tvp_data d = { .first_seq = seq, .count = 1 };

	memset(rec, 0, sizeof(rec));
	rec[0] = TV_REC_BRANCH;
	rec[1] = TV_BR_JMP;
	tvh_put_le16(rec + 2, 24);
	tvh_put_le64(rec + 8, 0x1000 + seq);
	tvh_put_le64(rec + 16, 0x2000 + seq);
	return tx(fd, b, proto_encode_data(b, sizeof(b), session, cpu, flags, &d, rec, sizeof(rec)));
}

static size_t hello_as(int fd, uint64_t session, const char *machine, uint8_t source)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	struct tvp_hello h;

	memset(&h, 0, sizeof(h));
	h.cpu_count = 1;
	h.source = source;
	h.overflow = TV_OVERFLOW_STOP;
	h.vendor_id = TVP_VENDOR_OTHER;
	h.tsc_hz = 1000000000ull;
	h.ring_bytes = 1u << 20;
	snprintf(h.machine, sizeof(h.machine), "%s", machine);
	return tx(fd, b, proto_encode_hello(b, sizeof(b), session, &h));
}

static int cmd_hostile(void)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	int fd = udp_socket();
	uint64_t n = 0;

	if (!strcmp(opt.attack, "lockout")) {
		uint64_t end = now_ns() + (uint64_t)(opt.timeout * 1e9);

		while (!stop && now_ns() < end) {
			for (uint64_t id = 1; id <= 8; id++) {
				struct tvp_heartbeat h = { .tsc = n, .hb_seq = (uint32_t)n };

				tx(fd, b, proto_encode_heartbeat(b, sizeof(b), 0xbad0000 + id, &h, NULL));
				n++;
			}
			usleep(250000);
		}
		printf("lockout heartbeats %" PRIu64 "\n", n);
	} else if (!strcmp(opt.attack, "poison")) {
		for (int i = 0; i < 3 && !stop; i++) {
			struct tvp_loss l = { .first_seq = 0, .count = 1ull << 40, .total = 1ull << 40 };
			struct tvp_control_reply rep = { .counter = 12345, .op = TVP_CTL_STOP };

			hello_as(fd, opt.session, "evil", TV_SOURCE_BTS);
			tx(fd, b, proto_encode_loss(b, sizeof(b), opt.session, 0, 0, &l));
			tx(fd, b, proto_encode_control_reply(b, sizeof(b), opt.session, &rep));
			n += 3;
			usleep(300000);
		}
		printf("poison sent %" PRIu64 " back %zu\n", n, rx_bytes(fd, 300));
	} else if (!strcmp(opt.attack, "reflect")) {
		int fh = udp_socket();
		size_t sent = 0, back, hsent, hback;

		sent += data_one(fd, opt.session, 0, TVP_DATA_F_FIRST, 0);
		for (uint64_t k = 1; k <= 60; k++)
			sent += data_one(fd, opt.session, 0, 0, 2 * k);
		back = rx_bytes(fd, 300);
		hsent = hello_as(fh, opt.session + 1, "reflect", TV_SOURCE_MTF);
		hback = rx_bytes(fh, 1500);
		printf("reflect data sent %zu back %zu hello sent %zu back %zu\n", sent, back, hsent,
		       hback);
		close(fh);
	} else if (!strcmp(opt.attack, "ptfd")) {
		uint8_t bytes[16];

		memset(bytes, 0x55, sizeof(bytes));
		for (uint64_t sess = 0; sess < 4 && !stop; sess++)
			for (uint16_t cpu = 0; cpu < 256; cpu++) {
				tx(fd, b, proto_encode_pt_flags(b, sizeof(b), 0xfd0000 + sess, cpu,
								 TVP_PT_F_FIRST, 0, bytes, sizeof(bytes)));
				if (++n % 32 == 0)
					usleep(1000);
			}
		printf("ptfd datagrams %" PRIu64 "\n", n);
	} else {
		fprintf(stderr, "fake_sender: unknown attack '%s'\n", opt.attack);
		close(fd);
		return 2;
	}
	close(fd);
	return 0;
}

/* ---- blast ------------------------------------------------------------------- */

static int cmd_blast(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct tvp_hello h;
	uint8_t recs[TVP_DATA_MAX_PAYLOAD], buf[TVP_MAX_DATAGRAM];
	size_t rlen = 0;
	unsigned per = 0;
	uint64_t seq = 0, t0, sent_bytes = 0;
	int len;

	if (fd < 0)
		die("socket");
	/* 58 branch records of 24 bytes: 1392 bytes, a nearly full datagram. */
	while (rlen + 24 <= sizeof(recs)) {
		memset(recs + rlen, 0, 24);
		recs[rlen] = TV_REC_BRANCH;
		recs[rlen + 1] = TV_BR_JMP;
		tvh_put_le16(recs + rlen + 2, 24);
		tvh_put_le64(recs + rlen + 8, 0x1000 + rlen);
		tvh_put_le64(recs + rlen + 16, 0x2000 + rlen);
		rlen += 24;
		per++;
	}
	memset(&h, 0, sizeof(h));
	h.cpu_count = 1;
	h.source = TV_SOURCE_MTF;
	h.overflow = TV_OVERFLOW_STOP;
	h.vendor_id = TVP_VENDOR_OTHER;
	h.tsc_hz = 1000000000ull;
	h.ring_bytes = 1u << 20;
	snprintf(h.machine, sizeof(h.machine), "%s", opt.machine);
	len = proto_encode_hello(buf, sizeof(buf), opt.session, &h);
	if (len < 0 || sendto(fd, buf, (size_t)len, 0, (struct sockaddr *)&opt.to, sizeof(opt.to)) < 0)
		die("hello");
	usleep(20000);
	t0 = now_ns();
	for (uint64_t i = 0; i < opt.datagrams && !stop; i++) {
		struct tvp_data d = { .first_seq = seq, .count = (uint16_t)per };

		len = proto_encode_data(buf, sizeof(buf), opt.session, 0, i ? 0 : TVP_DATA_F_FIRST, &d,
					 recs, rlen);
		if (len < 0) {
			fprintf(stderr, "fake_sender: encode %d\n", len);
			return 1;
		}
		while (sendto(fd, buf, (size_t)len, 0, (struct sockaddr *)&opt.to, sizeof(opt.to)) < 0) {
			if (errno != ENOBUFS && errno != EAGAIN)
				die("sendto");
		}
		sent_bytes += (uint64_t)len;
		seq += per;
		if (opt.rate > 0) {
			uint64_t due = t0 + (uint64_t)((double)(i + 1) * 1e9 / opt.rate);

			while (now_ns() < due)
				;
		}
	}
	{
		double s = (double)(now_ns() - t0) / 1e9;

		printf("blast datagrams %" PRIu64 " records %" PRIu64 " bytes %" PRIu64
		       " seconds %.3f rate %.0f dgram/s %.1f MB/s\n", opt.datagrams, seq, sent_bytes,
		       s, (double)opt.datagrams / s, (double)sent_bytes / s / 1e6);
	}
	close(fd);
	return 0;
}

static void usage(void)
{
	fputs("usage: fake_sender send|verify|garbage|blast|pt-pattern|hostile [--to ADDR:PORT]\n"
	      "         [--cpus N] [--records N] [--ring-bytes B] [--overflow stop|overwrite]\n"
	      "         [--seed S] [--session HEX] [--machine NAME] [--burst N] [--rate R]\n"
	      "         [--timeout S] [--pause-ms MS] [--key-hex HEX] [--pt N]\n"
	      "         [--data-key-hex HEX] [--tamper N]\n"
	      "         [--pt-ring-bytes B] [--linger S] [--drop PCT] [--fixed-timers]\n"
	      "         [--tvt FILE] [--losses FILE] [--count N] [--datagrams N]\n"
	      "         [--attack lockout|poison|reflect|ptfd]\n", stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "to", required_argument, NULL, 't' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "records", required_argument, NULL, 'n' },
		{ "ring-bytes", required_argument, NULL, 'r' },
		{ "overflow", required_argument, NULL, 'O' },
		{ "seed", required_argument, NULL, 's' },
		{ "session", required_argument, NULL, 'S' },
		{ "machine", required_argument, NULL, 'm' },
		{ "burst", required_argument, NULL, 'b' },
		{ "rate", required_argument, NULL, 'R' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "tvt", required_argument, NULL, 'f' },
		{ "losses", required_argument, NULL, 'L' },
		{ "count", required_argument, NULL, 'N' },
		{ "datagrams", required_argument, NULL, 'D' },
		{ "pause-ms", required_argument, NULL, 'P' },
		{ "key-hex", required_argument, NULL, 'K' },
		{ "pt", required_argument, NULL, 'p' },
		{ "pt-ring-bytes", required_argument, NULL, 'B' },
		{ "linger", required_argument, NULL, 'l' },
		{ "drop", required_argument, NULL, 'X' },
		{ "fixed-timers", no_argument, NULL, 'F' },
		{ "attack", required_argument, NULL, 'A' },
		{ "data-key-hex", required_argument, NULL, 'd' },
		{ "tamper", required_argument, NULL, 'x' },
		{ NULL, 0, NULL, 0 },
	};
	const char *cmd;
	struct sigaction sa;
	int o;

	if (argc < 2)
		usage();
	cmd = argv[1];
	optind = 2;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 't': if (parse_addr(optarg, &opt.to)) usage(); break;
		case 'c': opt.cpus = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'n': opt.records = strtoull(optarg, NULL, 0); break;
		case 'r': opt.ring_bytes = strtoull(optarg, NULL, 0); break;
		case 'O':
			if (!strcmp(optarg, "stop"))
				opt.overflow = TV_OVERFLOW_STOP;
			else if (!strcmp(optarg, "overwrite"))
				opt.overflow = TV_OVERFLOW_OVERWRITE;
			else
				usage();
			break;
		case 's': opt.seed = strtoull(optarg, NULL, 0); break;
		case 'S': opt.session = strtoull(optarg, NULL, 16); break;
		case 'm': opt.machine = optarg; break;
		case 'b': opt.burst = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'R': opt.rate = strtod(optarg, NULL); break;
		case 'T': opt.timeout = strtod(optarg, NULL); break;
		case 'f': opt.tvt = optarg; break;
		case 'L': opt.losses = optarg; break;
		case 'N': opt.count = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'D': opt.datagrams = strtoull(optarg, NULL, 0); break;
		case 'P': opt.pause_ms = strtod(optarg, NULL); break;
		case 'p': opt.pt_bytes = strtoull(optarg, NULL, 0); break;
		case 'B': opt.pt_ring_bytes = strtoull(optarg, NULL, 0); break;
		case 'l': opt.linger = strtod(optarg, NULL); break;
		case 'X': opt.drop = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'F': opt.fixed_timers = true; break;
		case 'A': opt.attack = optarg; break;
		case 'x': opt.tamper = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'd':
			for (opt.data_keylen = 0; optarg[2 * opt.data_keylen] &&
			     optarg[2 * opt.data_keylen + 1] && opt.data_keylen < sizeof(opt.data_key);
			     opt.data_keylen++) {
				unsigned v;

				if (sscanf(optarg + 2 * opt.data_keylen, "%2x", &v) != 1)
					usage();
				opt.data_key[opt.data_keylen] = (uint8_t)v;
			}
			break;
		case 'K':
			for (opt.keylen = 0; optarg[2 * opt.keylen] && optarg[2 * opt.keylen + 1] &&
			     opt.keylen < sizeof(opt.key); opt.keylen++) {
				unsigned v;

				if (sscanf(optarg + 2 * opt.keylen, "%2x", &v) != 1)
					usage();
				opt.key[opt.keylen] = (uint8_t)v;
			}
			break;
		default: usage();
		}
	}
	if (!opt.cpus || opt.cpus > MAX_CPUS || !opt.burst || !opt.session)
		usage();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!strcmp(cmd, "pt-pattern")) {     /* the --pt bytes, to compare cpu0.pt with */
		for (uint64_t off = 0; off < opt.pt_bytes; off++)
			putchar(pt_pattern(off));
		return 0;
	}
	if (!strcmp(cmd, "verify")) {
		if (!opt.tvt)
			usage();
		return cmd_verify();
	}
	if (!opt.to.sin_family)
		usage();
	if (!strcmp(cmd, "send"))
		return cmd_send();
	if (!strcmp(cmd, "garbage"))
		return cmd_garbage();
	if (!strcmp(cmd, "blast"))
		return cmd_blast();
	if (!strcmp(cmd, "hostile") && opt.attack)
		return cmd_hostile();
	usage();
	return 2;
}
