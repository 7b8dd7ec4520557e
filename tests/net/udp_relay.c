/* SPDX-License-Identifier: MIT */
/*
 * udp_relay.c - a user-space network impairment for the receiver tests
 * (tests/build/net-*.sh): a UDP relay between the fake traced machine and
 * `tracevisor record` that drops, duplicates and reorders datagrams with a
 * seeded PRNG, in both directions, and can write every datagram it
 * delivers to a pcap file (for the Wireshark dissector test).  It stands
 * in for netem where the sch_netem qdisc is not available.
 *
 *   udp_relay -l 127.0.0.1:PORT -t 127.0.0.1:PORT [--drop PCT] [--dup PCT]
 *             [--reorder PCT] [--seed N] [--pcap FILE] [--stats FILE]
 *             [--duration S]
 *
 * Senders send to -l; each sender gets its own socket towards -t, so the
 * receiver sees one source address per sender and its answers find the
 * way back.  A reordered datagram is held until HOLD_AFTER more datagrams
 * went the same way or HOLD_MS passed.  SIGINT/SIGTERM: write the stats
 * ("fwd N drop N dup N reorder N" per direction) and exit 0.
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

#define MAX_PEERS  16
#define MAX_HELD   64
#define HOLD_AFTER 3
#define HOLD_MS    20
#define MAX_DGRAM  65536

enum { UP = 0, DOWN = 1 };   /* UP: sender -> receiver */

struct held {
	bool used;
	int dir;
	int peer;
	uint64_t due_ns;
	unsigned after;          /* forwarded datagrams left before release */
	size_t len;
	uint8_t buf[1500];
};

struct peer {
	struct sockaddr_in addr; /* the sender */
	int fd;                  /* towards the receiver */
	struct sockaddr_in local;
};

static volatile sig_atomic_t stop;
static int front;                      /* the -l socket */
static struct sockaddr_in listen_addr, target;
static struct peer peers[MAX_PEERS];
static int npeers;
static struct held held[MAX_HELD];
static unsigned drop_pm, dup_pm, reorder_pm;   /* per 10000 */
static uint64_t rng;
static FILE *pcap;
static uint64_t st_fwd[2], st_drop[2], st_dup[2], st_reorder[2];

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

/* xorshift64*: deterministic for a seed. */
static unsigned rnd10000(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (unsigned)((rng * 0x2545f4914f6cdd1dull) >> 32) % 10000u;
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
	if (*end || port > 65535)
		return -1;
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -1;
}

static unsigned parse_pct(const char *s)
{
	double v = strtod(s, NULL);

	if (v < 0 || v > 100) {
		fprintf(stderr, "udp_relay: bad percentage %s\n", s);
		exit(2);
	}
	return (unsigned)(v * 100 + 0.5);
}

/* ---- pcap (LINKTYPE_RAW: IPv4 packets) ------------------------------------ */

static void put16be(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

static uint16_t ip_csum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static void pcap_open(const char *path)
{
	uint32_t gh[6] = { 0xa1b2c3d4u, 2 | (4u << 16), 0, 0, 65535, 101 };

	pcap = fopen(path, "wb");
	if (!pcap) {
		perror(path);
		exit(1);
	}
	fwrite(gh, sizeof(gh), 1, pcap);   /* host order: readers take either */
}

static void pcap_write(const struct sockaddr_in *src, const struct sockaddr_in *dst,
		       const uint8_t *data, size_t len)
{
	uint8_t hdr[28];
	struct timespec ts;
	uint32_t rh[4];
	static uint16_t ip_id;

	if (!pcap)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(hdr, 0, sizeof(hdr));
	hdr[0] = 0x45;
	put16be(hdr + 2, (uint16_t)(28 + len));
	put16be(hdr + 4, ip_id++);
	hdr[8] = 64;
	hdr[9] = 17;                                   /* UDP */
	memcpy(hdr + 12, &src->sin_addr, 4);
	memcpy(hdr + 16, &dst->sin_addr, 4);
	put16be(hdr + 10, ip_csum(hdr, 20));
	memcpy(hdr + 20, &src->sin_port, 2);
	memcpy(hdr + 22, &dst->sin_port, 2);
	put16be(hdr + 24, (uint16_t)(8 + len));       /* UDP checksum 0: none (IPv4) */
	rh[0] = (uint32_t)ts.tv_sec;
	rh[1] = (uint32_t)(ts.tv_nsec / 1000);
	rh[2] = rh[3] = (uint32_t)(28 + len);
	fwrite(rh, sizeof(rh), 1, pcap);
	fwrite(hdr, sizeof(hdr), 1, pcap);
	fwrite(data, 1, len, pcap);
}

/* ---- forwarding ----------------------------------------------------------- */

static void deliver(int dir, int peer, const uint8_t *buf, size_t len)
{
	struct peer *p = &peers[peer];

	if (dir == UP) {
		sendto(p->fd, buf, len, 0, (const struct sockaddr *)&target, sizeof(target));
		pcap_write(&p->addr, &target, buf, len);
	} else {
		sendto(front, buf, len, 0, (const struct sockaddr *)&p->addr, sizeof(p->addr));
		pcap_write(&target, &p->addr, buf, len);
	}
	st_fwd[dir]++;
	/* Held datagrams of this direction move one step closer to release. */
	for (int i = 0; i < MAX_HELD; i++)
		if (held[i].used && held[i].dir == dir && held[i].after)
			held[i].after--;
}

static void release_due(bool all)
{
	uint64_t now = now_ns();

	for (int i = 0; i < MAX_HELD; i++) {
		struct held *h = &held[i];

		if (h->used && (all || !h->after || now >= h->due_ns)) {
			h->used = false;
			deliver(h->dir, h->peer, h->buf, h->len);
		}
	}
}

static void impair(int dir, int peer, const uint8_t *buf, size_t len)
{
	unsigned copies = 1;

	if (rnd10000() < drop_pm) {
		st_drop[dir]++;
		return;
	}
	if (rnd10000() < dup_pm) {
		copies = 2;
		st_dup[dir]++;
	}
	while (copies--) {
		if (len <= sizeof(held[0].buf) && rnd10000() < reorder_pm) {
			for (int i = 0; i < MAX_HELD; i++) {
				if (held[i].used)
					continue;
				held[i].used = true;
				held[i].dir = dir;
				held[i].peer = peer;
				held[i].after = HOLD_AFTER;
				held[i].due_ns = now_ns() + HOLD_MS * 1000000ull;
				held[i].len = len;
				memcpy(held[i].buf, buf, len);
				st_reorder[dir]++;
				goto next;
			}
		}
		deliver(dir, peer, buf, len);
next:;
	}
}

static int peer_for(const struct sockaddr_in *from)
{
	socklen_t sl = sizeof(peers[0].local);

	for (int i = 0; i < npeers; i++)
		if (peers[i].addr.sin_port == from->sin_port &&
		    peers[i].addr.sin_addr.s_addr == from->sin_addr.s_addr)
			return i;
	if (npeers == MAX_PEERS)
		return -1;
	peers[npeers].addr = *from;
	peers[npeers].fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (peers[npeers].fd < 0) {
		perror("socket");
		exit(1);
	}
	{
		int sz = 4 << 20;

		setsockopt(peers[npeers].fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	}
	/* Bind on the target's address so the receiver sees a loopback source. */
	{
		struct sockaddr_in b = { .sin_family = AF_INET, .sin_addr = listen_addr.sin_addr };

		if (bind(peers[npeers].fd, (struct sockaddr *)&b, sizeof(b))) {
			perror("bind");
			exit(1);
		}
	}
	getsockname(peers[npeers].fd, (struct sockaddr *)&peers[npeers].local, &sl);
	return npeers++;
}

static void usage(void)
{
	fputs("usage: udp_relay -l ADDR:PORT -t ADDR:PORT [--drop PCT] [--dup PCT]\n"
	      "                 [--reorder PCT] [--seed N] [--pcap FILE] [--stats FILE]\n"
	      "                 [--duration S] [--up-only]\n", stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "to", required_argument, NULL, 't' },
		{ "drop", required_argument, NULL, 'd' },
		{ "dup", required_argument, NULL, 'u' },
		{ "reorder", required_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 's' },
		{ "pcap", required_argument, NULL, 'p' },
		{ "stats", required_argument, NULL, 'S' },
		{ "duration", required_argument, NULL, 'D' },
		{ "up-only", no_argument, NULL, 'U' },
		{ NULL, 0, NULL, 0 },
	};
	const char *stats_path = NULL;
	double duration = 0;
	bool up_only = false, have_l = false, have_t = false;
	uint64_t t_end;
	static uint8_t buf[MAX_DGRAM];
	struct sigaction sa;
	int o, sz = 4 << 20;

	rng = 0x9e3779b97f4a7c15ull;
	while ((o = getopt_long(argc, argv, "l:t:", lo, NULL)) != -1) {
		switch (o) {
		case 'l': have_l = !parse_addr(optarg, &listen_addr); if (!have_l) usage(); break;
		case 't': have_t = !parse_addr(optarg, &target); if (!have_t) usage(); break;
		case 'd': drop_pm = parse_pct(optarg); break;
		case 'u': dup_pm = parse_pct(optarg); break;
		case 'r': reorder_pm = parse_pct(optarg); break;
		case 's': rng = strtoull(optarg, NULL, 0) * 0x9e3779b97f4a7c15ull | 1; break;
		case 'p': pcap_open(optarg); break;
		case 'S': stats_path = optarg; break;
		case 'D': duration = strtod(optarg, NULL); break;
		case 'U': up_only = true; break;
		default: usage();
		}
	}
	if (!have_l || !have_t)
		usage();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	front = socket(AF_INET, SOCK_DGRAM, 0);
	setsockopt(front, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (front < 0 || bind(front, (struct sockaddr *)&listen_addr, sizeof(listen_addr))) {
		perror("udp_relay: bind");
		return 1;
	}
	t_end = duration > 0 ? now_ns() + (uint64_t)(duration * 1e9) : UINT64_MAX;
	while (!stop && now_ns() < t_end) {
		struct pollfd pf[1 + MAX_PEERS];
		int n = 1;

		pf[0] = (struct pollfd){ .fd = front, .events = POLLIN };
		for (int i = 0; i < npeers; i++)
			pf[n++] = (struct pollfd){ .fd = peers[i].fd, .events = POLLIN };
		if (poll(pf, (nfds_t)n, 5) < 0 && errno != EINTR)
			break;
		if (pf[0].revents & POLLIN) {
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			ssize_t len = recvfrom(front, buf, sizeof(buf), MSG_DONTWAIT,
					       (struct sockaddr *)&from, &fl);
			int p;

			if (len >= 0 && (p = peer_for(&from)) >= 0)
				impair(UP, p, buf, (size_t)len);
		}
		for (int i = 1; i < n; i++) {
			if (!(pf[i].revents & POLLIN))
				continue;
			ssize_t len = recv(pf[i].fd, buf, sizeof(buf), MSG_DONTWAIT);

			if (len < 0)
				continue;
			if (up_only)
				deliver(DOWN, i - 1, buf, (size_t)len);
			else
				impair(DOWN, i - 1, buf, (size_t)len);
		}
		release_due(false);
	}
	release_due(true);
	if (pcap)
		fclose(pcap);
	if (stats_path) {
		FILE *f = fopen(stats_path, "w");

		if (f) {
			for (int d = 0; d < 2; d++)
				fprintf(f, "%s fwd %" PRIu64 " drop %" PRIu64 " dup %" PRIu64
					" reorder %" PRIu64 "\n", d == UP ? "up" : "down",
					st_fwd[d], st_drop[d], st_dup[d], st_reorder[d]);
			fclose(f);
		}
	}
	return 0;
}
