/* SPDX-License-Identifier: MIT */
/*
 * test_host_hostile.c - issue 20's findings, one test each (docs/RECEIVER.md
 * "Hostile input"): the receiver loop (tvh_record_run on 127.0.0.1, driven
 * by datagrams built from docs/PROTOCOL.md as an attacker on the LAN would
 * build them), the capture (capture.h) and the readers.  The network
 * scenario with the real sender is tests/build/net-hostile.sh.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <cmocka.h>

#include "host-tools/lib/capture.h"
#include "host-tools/lib/dump.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/info.h"
#include "host-tools/lib/le.h"
#include "host-tools/lib/receiver.h"
#include "host-tools/lib/record.h"
#include "host-tools/lib/walk.h"
#include "net/dauth.h"
#include "net/proto.h"
#include "net/recv.h"
#include "tests/host/helpers.h"
#include "tests/host/json_check.h"

static const uint8_t test_key[] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77 };

/* ---- helpers ----------------------------------------------------------------- */

static int udp_local(struct sockaddr_in *a)
{
	socklen_t al = sizeof(*a);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)a, sizeof(*a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)a, &al), 0);
	return fd;
}

static ssize_t recv_wait(int fd, void *buf, size_t cap, int ms)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	if (poll(&pf, 1, ms) != 1)
		return -1;
	return recv(fd, buf, cap, 0);
}

/* Every byte that arrives at fd within ms (one datagram at a time). */
static size_t drain_bytes(int fd, int ms, unsigned *types)
{
	uint8_t buf[2048];
	size_t total = 0;
	ssize_t n;

	while ((n = recv_wait(fd, buf, sizeof(buf), ms)) > 0) {
		total += (size_t)n;
		if (types && n >= 6 && buf[5] < 16)
			types[buf[5]]++;
	}
	return total;
}

static void hello_fill(struct tvp_hello *h, const char *machine)
{
	memset(h, 0, sizeof(*h));
	h->cpu_count = 1;
	h->source = TV_SOURCE_MTF;
	h->overflow = TV_OVERFLOW_OVERWRITE;
	h->vendor_id = TVP_VENDOR_INTEL;
	h->family = 6;
	h->caps = TVP_CAP_SOURCE(TV_SOURCE_MTF) | TVP_CAP_CONTROL;
	h->tsc_hz = 2100000000ull;
	h->ring_bytes = 1u << 20;
	memcpy(h->vendor, "GenuineIntel", 12);
	strncpy(h->machine, machine, sizeof(h->machine));
}

static void send_hello(int fd, const struct sockaddr_in *to, uint64_t session,
		       const char *machine)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	struct tvp_hello h;
	int n;

	hello_fill(&h, machine);
	n = proto_encode_hello(b, sizeof(b), session, &h);
	assert_true(n > 0);
	sendto(fd, b, (size_t)n, 0, (const struct sockaddr *)to, sizeof(*to));
}

static size_t send_heartbeat(int fd, const struct sockaddr_in *to, uint64_t session)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	struct tvp_heartbeat h = { .tsc = 1, .hb_seq = 1 };
	int n = proto_encode_heartbeat(b, sizeof(b), session, &h, NULL);

	assert_true(n > 0);
	sendto(fd, b, (size_t)n, 0, (const struct sockaddr *)to, sizeof(*to));
	return (size_t)n;
}

/* One 24-byte branch record at seq, flags as given: a 72-byte DATA. */
static size_t send_data(int fd, const struct sockaddr_in *to, uint64_t session, uint16_t cpu,
			uint16_t flags, uint64_t seq)
{
	uint8_t b[TVP_MAX_DATAGRAM], rec[24];
	struct tvp_data d = { .first_seq = seq, .count = 1 };
	int n;

	memset(rec, 0, sizeof(rec));
	rec[0] = TV_REC_BRANCH;
	rec[1] = TV_BR_JMP;
	tvh_put_le16(rec + 2, 24);
	tvh_put_le64(rec + 8, 0x1000 + seq);
	tvh_put_le64(rec + 16, 0x2000 + seq);
	n = proto_encode_data(b, sizeof(b), session, cpu, flags, &d, rec, sizeof(rec));
	assert_true(n > 0);
	sendto(fd, b, (size_t)n, 0, (const struct sockaddr *)to, sizeof(*to));
	return (size_t)n;
}

static size_t send_loss(int fd, const struct sockaddr_in *to, uint64_t session, uint64_t first,
			uint64_t count)
{
	uint8_t b[TVP_MAX_DATAGRAM];
	struct tvp_loss l = { .first_seq = first, .count = count, .total = count };
	int n = proto_encode_loss(b, sizeof(b), session, 0, 0, &l);

	assert_true(n > 0);
	sendto(fd, b, (size_t)n, 0, (const struct sockaddr *)to, sizeof(*to));
	return (size_t)n;
}

/* Entries of dir (not . or ..). */
static unsigned dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static bool dir_has(const char *dir, const char *name)
{
	char p[4400];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &st) == 0;
}

/* The receiver in a thread. */
struct run_arg {
	struct tvh_record_opts o;
	int ret;
	volatile int done;
};

static void *run_thread(void *p)
{
	struct run_arg *a = p;

	a->ret = tvh_record_run(&a->o);
	a->done = 1;
	return NULL;
}

/* The options of a run on a free port of 127.0.0.1 (*rx); the caller adds its own. */
static void run_init(struct run_arg *ra, struct sockaddr_in *rx, const char *out)
{
	int fd = udp_local(rx);

	close(fd);               /* a free port for the receiver */
	memset(ra, 0, sizeof(*ra));
	tvh_record_opts_init(&ra->o);
	ra->o.listen = *rx;
	ra->o.outdir = out;
	ra->o.quiet = true;
	ra->o.duration = 20;
}

static void run_go(struct run_arg *ra, pthread_t *t)
{
	assert_int_equal(pthread_create(t, NULL, run_thread, ra), 0);
	usleep(100000);          /* bound and listening */
}

/* HELLO from fd until its HELLO_ACK comes (the receiver may not listen yet). */
static bool hello_until_acked(int fd, const struct sockaddr_in *rx, uint64_t session,
			      const char *machine)
{
	uint8_t buf[2048];

	for (int i = 0; i < 100; i++) {
		ssize_t n;

		send_hello(fd, rx, session, machine);
		while ((n = recv_wait(fd, buf, sizeof(buf), 30)) > 0)
			if (n >= 6 && buf[5] == TVP_HELLO_ACK && tvh_le64(buf + 8) == session)
				return true;
	}
	return false;
}

static void stop_run(struct run_arg *ra, pthread_t t)
{
	/* duration ends it; SIGINT would stop the test process's other threads too */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(ra->ret, 0);
}

/* ---- 1: lock-out ----------------------------------------------------------------- */

/*
 * Eight HEARTBEATs with new session ids, refreshed, fill every slot with
 * sessions that never said HELLO; a real machine's HELLO still gets in
 * (one of them gives way), and with --machines 1 the forged ones do not
 * count: the run ends when the real machine's session closes, not before.
 */
static void test_lockout(void **state)
{
	static struct run_arg ra;
	struct sockaddr_in rx, a, b;
	pthread_t t;
	char *out = th_path("hostile-lockout");
	int fa, fb;
	bool acked;

	(void)state;
	fa = udp_local(&a);
	fb = udp_local(&b);
	run_init(&ra, &rx, out);
	ra.o.machines = 1;
	ra.o.idle = 0.4;
	run_go(&ra, &t);
	for (int round = 0; round < 3; round++) {
		for (uint64_t id = 1; id <= 8; id++)
			send_heartbeat(fa, &rx, 0xbad0000 + id);
		usleep(20000);
	}
	acked = hello_until_acked(fb, &rx, 0x5eed1, "real");
	/* keep the forged ones fresh while the real machine sends a record */
	for (uint64_t id = 1; id <= 8; id++)
		send_heartbeat(fa, &rx, 0xbad0000 + id);
	send_data(fb, &rx, 0x5eed1, 0, TVP_DATA_F_FIRST, 0);
	assert_true(acked);
	/* the forged sessions going idle does not end a --machines 1 run */
	usleep(200000);
	assert_false(ra.done);
	stop_run(&ra, t);
	assert_true(dir_has(out, "real-000000000005eed1"));
	/* sessions that never said HELLO and delivered nothing leave nothing behind */
	assert_int_equal(dir_entries(out), 1);
	close(fa);
	close(fb);
	free(out);
}

/* ---- 2: rejected datagrams open nothing -------------------------------------------- */

/* DATA for CPU 300 (decodes: the wire allows 0..1023) is refused before any session. */
static void test_rejected_stream(void **state)
{
	static struct run_arg ra;
	struct sockaddr_in rx, a;
	pthread_t t;
	char *out = th_path("hostile-stream");
	int fa = udp_local(&a);
	struct receiver *r = calloc(1, sizeof(*r));
	uint8_t b[TVP_MAX_DATAGRAM], rec[24] = { TV_REC_BRANCH, TV_BR_JMP, 24 };
	struct tvp_data d = { .first_seq = 0, .count = 1 };
	int n;

	(void)state;
	/* net/recv.c alone: no session for it */
	assert_non_null(r);
	recv_init(r, NULL, NULL, 0);
	n = proto_encode_data(b, sizeof(b), 0x77, 300, TVP_DATA_F_FIRST, &d, rec, sizeof(rec));
	assert_true(n > 0);
	assert_int_equal(recv_feed(r, b, (size_t)n, 1), PROTO_ERR_STREAM);
	assert_null(recv_session_get(r, 0x77));
	free(r);
	/* the receiver: no directory, even after its 3 s "no HELLO" rule and the close */
	run_init(&ra, &rx, out);
	ra.o.duration = 3.6;
	run_go(&ra, &t);
	for (int i = 0; i < 20; i++) {
		send_data(fa, &rx, 0x77 + (uint64_t)i, (uint16_t)(256 + i * 37), TVP_DATA_F_FIRST, 0);
		usleep(2000);
	}
	stop_run(&ra, t);
	assert_int_equal(dir_entries(out), 0);
	close(fa);
	free(out);
}

/* ---- 5: CONTROL_REPLY only from the peer, for our counter ---------------------------- */

/*
 * --start: the START is resent until its reply comes.  A forged reply for
 * the right counter from another port stops nothing (the START comes
 * again); the machine's own reply from its address stops the resends.
 */
static void test_forged_reply(void **state)
{
	static struct run_arg ra;
	struct sockaddr_in rx, a, m;
	pthread_t t;
	char *out = th_path("hostile-reply");
	int fm = udp_local(&m), fa = udp_local(&a);
	uint8_t buf[2048], rb[TVP_MAX_DATAGRAM];
	struct proto_msg pm;
	uint64_t counter = 0;
	unsigned starts_after = 0;
	ssize_t n;
	int len;

	(void)state;
	run_init(&ra, &rx, out);
	ra.o.duration = 2.5;
	ra.o.start = true;
	memcpy(ra.o.key, test_key, sizeof(test_key));
	ra.o.keylen = sizeof(test_key);
	assert_int_equal(rec_parse_cpus("0", ra.o.start_cpus.mask), 0);
	run_go(&ra, &t);
	/* the machine: HELLO, and data to earn the resends' budget */
	for (int i = 0; i < 50 && !counter; i++) {
		send_hello(fm, &rx, 0x5eed2, "ctl");
		while ((n = recv_wait(fm, buf, sizeof(buf), 30)) > 0)
			if (!proto_decode(buf, (size_t)n, &pm) && pm.type == TVP_CONTROL)
				counter = pm.u.control.c.counter;
	}
	assert_true(counter != 0);
	/* the forged reply: right session and counter, wrong port */
	{
		struct tvp_control_reply rep = { .counter = counter, .op = TVP_CTL_START };

		len = proto_encode_control_reply(rb, sizeof(rb), 0x5eed2, &rep);
		assert_true(len > 0);
		sendto(fa, rb, (size_t)len, 0, (struct sockaddr *)&rx, sizeof(rx));
	}
	for (int i = 0; i < 20; i++) {
		send_heartbeat(fm, &rx, 0x5eed2);     /* budget for the resends */
		send_data(fm, &rx, 0x5eed2, 0, TVP_DATA_F_FIRST, 0);
		while ((n = recv_wait(fm, buf, sizeof(buf), 40)) > 0)
			if (!proto_decode(buf, (size_t)n, &pm) && pm.type == TVP_CONTROL)
				starts_after++;
	}
	assert_true(starts_after >= 1);
	assert_int_equal(drain_bytes(fa, 50, NULL), 0);   /* the forger hears nothing */
	stop_run(&ra, t);
	close(fa);
	close(fm);
	free(out);
}

/* ---- 6: no amplification --------------------------------------------------------------- */

/*
 * From a spoofable source: DATA of one record each, every other sequence
 * number, so that each ACK names more holes (up to 560 bytes for 72);
 * and a HELLO to a receiver with --start (a 200-byte START, resent).
 * What comes back is at most 3 times what was sent.
 */
static void test_amplification(void **state)
{
	static struct run_arg ra;
	struct sockaddr_in rx, a, h;
	pthread_t t;
	char *out = th_path("hostile-amp");
	int fa = udp_local(&a), fh = udp_local(&h);
	size_t sent = 0, back = 0, hsent, hback;
	unsigned types[16] = { 0 };

	(void)state;
	run_init(&ra, &rx, out);
	ra.o.duration = 3;
	ra.o.start = true;
	memcpy(ra.o.key, test_key, sizeof(test_key));
	ra.o.keylen = sizeof(test_key);
	assert_int_equal(rec_parse_cpus("all", ra.o.start_cpus.mask), 0);
	run_go(&ra, &t);
	sent += send_data(fa, &rx, 0xa3, 0, TVP_DATA_F_FIRST, 0);
	for (uint64_t k = 1; k <= 60; k++)
		sent += send_data(fa, &rx, 0xa3, 0, 0, 2 * k);
	back = drain_bytes(fa, 200, types);
	assert_true(types[TVP_ACK] > 0);
	if (back > 3 * sent)
		fail_msg("%zu bytes back for %zu sent", back, sent);
	/* one HELLO, then silence for 1.5 s: the START's resends wait for the machine */
	send_hello(fh, &rx, 0xa4, "amp");
	hsent = 184;
	hback = drain_bytes(fh, 1500, NULL);
	assert_true(hback >= 32);                  /* the HELLO_ACK at least */
	if (hback > 3 * hsent)
		fail_msg("%zu bytes back for one %zu-byte HELLO", hback, hsent);
	stop_run(&ra, t);
	close(fa);
	close(fh);
	free(out);
}

/* ---- 7: poisoning with the session id ------------------------------------------------ */

/*
 * A machine says HELLO and sends records; from another port, a HELLO
 * with its session id and another name and a LOSS of 2^40 records.  The
 * capture keeps the machine's name and source, declares nothing lost,
 * and the forger gets nothing back.
 */
static void test_poison(void **state)
{
	static struct run_arg ra;
	struct sockaddr_in rx, a, m;
	pthread_t t;
	char *out = th_path("hostile-poison"), dir[4400];
	int fm = udp_local(&m), fa = udp_local(&a);
	struct jval *v;
	char text[1 << 16], err[128];
	FILE *f;
	size_t len;

	(void)state;
	run_init(&ra, &rx, out);
	ra.o.duration = 1.5;
	run_go(&ra, &t);
	assert_true(hello_until_acked(fm, &rx, 0x5eed7, "good"));
	send_data(fm, &rx, 0x5eed7, 0, TVP_DATA_F_FIRST, 0);
	send_hello(fa, &rx, 0x5eed7, "evil");
	send_loss(fa, &rx, 0x5eed7, 1, 1ull << 40);
	send_data(fm, &rx, 0x5eed7, 0, 0, 1);
	send_data(fm, &rx, 0x5eed7, 0, 0, 2);
	assert_int_equal(drain_bytes(fa, 100, NULL), 0);
	stop_run(&ra, t);
	snprintf(dir, sizeof(dir), "%s/good-000000000005eed7/losses.json", out);
	f = fopen(dir, "r");
	assert_non_null(f);
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	v = json_parse(text, len, err, sizeof(err));
	assert_non_null(v);
	assert_int_equal((uint64_t)json_get(json_get(v, "total"), "declared_lost")->num, 0);
	assert_int_equal((uint64_t)json_get(json_get(v, "total"), "records")->num, 3);
	json_free(v);
	assert_int_equal(dir_entries(out), 1);
	close(fa);
	close(fm);
	free(out);
}

/* ---- the authenticated data path (record --auth) ------------------------------------ */

/* buf[0..len) (+ nonce for a HELLO) sealed with ks and pn, sent from fd. */
static void send_sealed(int fd, const struct sockaddr_in *to, uint8_t *buf, size_t len,
			const uint8_t *nonce, const uint8_t *ks, uint64_t pn)
{
	int n;

	if (nonce) {
		memcpy(buf + len, nonce, DAUTH_NONCE_LEN);
		len += DAUTH_NONCE_LEN;
	}
	n = dauth_seal(buf, len, TVP_MAX_DATAGRAM + 64, ks, pn);
	assert_true(n > 0);
	sendto(fd, buf, (size_t)n, 0, (const struct sockaddr *)to, sizeof(*to));
}

static size_t data_dgram(uint8_t *b, uint64_t session, uint64_t seq, uint16_t flags)
{
	uint8_t rec[24] = { TV_REC_BRANCH, TV_BR_JMP, 24 };
	struct tvp_data d = { .first_seq = seq, .count = 1 };
	int n;

	tvh_put_le64(rec + 8, 0x1000 + seq);
	tvh_put_le64(rec + 16, 0x2000 + seq);
	n = proto_encode_data(b, TVP_MAX_DATAGRAM, session, 0, flags, &d, rec, sizeof(rec));
	assert_true(n > 0);
	return (size_t)n;
}

/*
 * --auth: a machine that has the key opens a session with a sealed HELLO,
 * gets our nonce in a sealed HELLO_ACK, and its sealed DATA is taken (the
 * ACKs come back sealed under the same session key); a forged HELLO (wrong
 * key), unsealed, forged and replayed DATA change nothing.
 */
static void test_auth_path(void **state)
{
	static struct run_arg ra;
	static const uint8_t zero[DAUTH_NONCE_LEN];
	struct sockaddr_in rx, m, a;
	pthread_t t;
	char *out = th_path("hostile-auth"), p[4400];
	int fm = udp_local(&m), fa = udp_local(&a);
	uint8_t b[TVP_MAX_DATAGRAM + 64], got[2048], replay[TVP_MAX_DATAGRAM + 64];
	uint8_t nonce_m[DAUTH_NONCE_LEN] = { 7, 7, 7 }, kh[SIPHASH_KEY_LEN], ks[SIPHASH_KEY_LEN];
	uint8_t wrong[SIPHASH_KEY_LEN] = { 1 };
	struct dauth_window w;
	struct tvp_hello h;
	bool acked = false;
	unsigned acks = 0;
	ssize_t n;
	size_t len;
	int hl;
	struct jval *v;
	char text[1 << 16], err[128];
	FILE *f;

	(void)state;
	run_init(&ra, &rx, out);
	ra.o.duration = 2;
	ra.o.auth = true;
	memcpy(ra.o.key, test_key, sizeof(test_key));
	ra.o.keylen = sizeof(test_key);
	run_go(&ra, &t);
	hello_fill(&h, "auth");
	dauth_derive(test_key, sizeof(test_key), 0xa17, nonce_m, zero, kh);
	/* a HELLO sealed with another key, and an unsealed one: no session */
	hl = proto_encode_hello(b, sizeof(b), 0xa18, &h);
	send_sealed(fa, &rx, b, (size_t)hl, nonce_m, wrong, 1);
	hl = proto_encode_hello(b, sizeof(b), 0xa19, &h);
	sendto(fa, b, (size_t)hl, 0, (struct sockaddr *)&rx, sizeof(rx));
	for (int i = 0; i < 50 && !acked; i++) {
		hl = proto_encode_hello(b, sizeof(b), 0xa17, &h);
		send_sealed(fm, &rx, b, (size_t)hl, nonce_m, kh, 1);
		while ((n = recv_wait(fm, got, sizeof(got), 30)) > 0) {
			if (n != 32 + DAUTH_NONCE_LEN + DAUTH_TRAILER_LEN || got[5] != TVP_HELLO_ACK)
				fail_msg("a %zd-byte reply to the HELLO", n);
			dauth_derive(test_key, sizeof(test_key), 0xa17, nonce_m, got + 32, ks);
			memset(&w, 0, sizeof(w));
			assert_int_equal(dauth_open(got, (size_t)n, ks, &w, NULL), 32 + DAUTH_NONCE_LEN);
			acked = true;
		}
	}
	assert_true(acked);
	assert_int_equal(drain_bytes(fa, 50, NULL), 0);      /* the forger heard nothing */
	/* sealed DATA 0 and 1: taken, ACKs sealed with ks */
	memset(&w, 0, sizeof(w));
	len = data_dgram(b, 0xa17, 0, TVP_DATA_F_FIRST);
	send_sealed(fm, &rx, b, len, NULL, ks, 2);
	len = data_dgram(b, 0xa17, 1, 0);
	send_sealed(fm, &rx, b, len, NULL, ks, 3);
	memcpy(replay, b, len + DAUTH_TRAILER_LEN);
	while ((n = recv_wait(fm, got, sizeof(got), 100)) > 0) {
		assert_true(dauth_open(got, (size_t)n, ks, &w, NULL) > 0);
		assert_int_equal(got[5], TVP_ACK);
		acks++;
	}
	assert_true(acks >= 1);
	/* forged (another key), unsealed, and replayed with a new record: none taken */
	len = data_dgram(b, 0xa17, 2, 0);
	send_sealed(fa, &rx, b, len, NULL, wrong, 4);
	len = data_dgram(b, 0xa17, 3, 0);
	sendto(fa, b, len, 0, (struct sockaddr *)&rx, sizeof(rx));
	len = data_dgram(replay, 0xa17, 2, 0);     /* pn 3 again, over other bytes */
	send_sealed(fa, &rx, replay, len, NULL, ks, 3);
	assert_int_equal(drain_bytes(fa, 100, NULL), 0);
	stop_run(&ra, t);
	snprintf(p, sizeof(p), "%s/auth-0000000000000a17/losses.json", out);
	f = fopen(p, "r");
	assert_non_null(f);
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	v = json_parse(text, len, err, sizeof(err));
	assert_non_null(v);
	assert_int_equal((uint64_t)json_get(json_get(v, "total"), "records")->num, 2);
	json_free(v);
	assert_int_equal(dir_entries(out), 1);
	close(fa);
	close(fm);
	free(out);
}

/* ---- 3: memory held before the HELLO is freed at close ------------------------------- */

static void test_prehello_freed(void **state)
{
	struct cap c;
	struct recbuf b = { 0 };
	char *out = th_path("hostile-mem");

	(void)state;
	for (int i = 0; i < 4096; i++)
		rb_branch(&b, TV_BR_JMP, 0x1000 + (uint64_t)i, 0x2000);
	assert_int_equal(cap_init(&c, out, 0x99, "1.2.3.4:5", 1), 0);
	assert_int_equal(cap_records(&c, 0, 0, b.p, b.len, false, 0), 0);
	assert_true(c.cpus[0]->run_cap >= b.len);    /* held: no HELLO, no directory */
	assert_int_equal(cap_close(&c, 2), 0);
	assert_null(c.cpus[0]->run);
	assert_int_equal(c.cpus[0]->run_cap, 0);
	assert_int_equal(c.records, 4096);            /* the counters stay for the summary */
	cap_free(&c);
	rb_free(&b);
	free(out);
}

/* ---- 4: file descriptors bounded ---------------------------------------------------- */

static unsigned open_fds(void)
{
	return dir_entries("/proc/self/fd");
}

/*
 * PT bytes for 256 CPUs keep at most CAP_PT_OPEN_MAX files open, and a
 * CPU written again after its file was closed appends to it.
 */
static void test_pt_fds(void **state)
{
	struct cap c;
	struct tvp_hello h;
	char *out = th_path("hostile-fds"), p[4400];
	unsigned before;
	uint8_t bytes[4] = { 1, 2, 3, 4 }, got[16];
	FILE *f;

	(void)state;
	hello_fill(&h, "fds");
	before = open_fds();
	assert_int_equal(cap_open(&c, out, 0x42, &h, NULL, 1), 0);
	for (uint32_t cpu = 0; cpu < 256; cpu++)
		assert_int_equal(cap_pt(&c, cpu, 0, bytes, 2), 0);
	assert_int_equal(cap_pt(&c, 0, 2, bytes + 2, 2), 0);   /* reopened, appended */
	if (open_fds() > before + 1 + CAP_PT_OPEN_MAX)
		fail_msg("%u descriptors open for 256 PT streams (bound %u)", open_fds() - before,
			 1 + CAP_PT_OPEN_MAX);
	assert_int_equal(cap_close(&c, 2), 0);
	assert_int_equal(open_fds(), before);
	snprintf(p, sizeof(p), "%s/cpu0.pt", c.dir);
	f = fopen(p, "rb");
	assert_non_null(f);
	assert_int_equal(fread(got, 1, sizeof(got), f), 4);
	fclose(f);
	assert_memory_equal(got, bytes, 4);
	assert_int_equal(c.pt_bytes, 256 * 2 + 2);
	cap_free(&c);
	free(out);
}

/* ---- 8: LOSS bookkeeping O(log n) ---------------------------------------------------- */

/*
 * 100,000 one-record LOSS notices that never merge (every other sequence
 * number), in order, then a few out of order and overlapping: exact
 * counts, and well under a second (a linear scan per notice is 5e9
 * steps).
 */
static void test_loss_fast(void **state)
{
	struct cap c;
	char *out = th_path("hostile-loss");
	clock_t t0;
	double s;

	(void)state;
	assert_int_equal(cap_init(&c, out, 0x43, NULL, 1), 0);
	t0 = clock();
	for (uint64_t k = 0; k < 100000; k++)
		assert_int_equal(cap_loss(&c, 0, 2 * k, 1), 0);
	s = (double)(clock() - t0) / CLOCKS_PER_SEC;
	assert_int_equal(c.cpus[0]->nloss, 100000);
	assert_int_equal(c.lost, 100000);
	/* fills two holes and overlaps: 1 and 3 are new, 0..4 merge */
	assert_int_equal(cap_loss(&c, 0, 0, 5), 0);
	assert_int_equal(c.lost, 100002);
	assert_int_equal(c.cpus[0]->nloss, 100000 - 2);
	assert_int_equal(c.cpus[0]->loss[0].first, 0);
	assert_int_equal(c.cpus[0]->loss[0].end, 5);
	/* again: nothing new */
	assert_int_equal(cap_loss(&c, 0, 2, 2), 0);
	assert_int_equal(c.lost, 100002);
	/* in the middle, touching both neighbours: 399 (and 397..401 merge) */
	assert_int_equal(cap_loss(&c, 0, 399, 1), 0);
	assert_int_equal(c.lost, 100003);
	if (s > 1.0)
		fail_msg("100000 LOSS notices took %.2f s", s);
	cap_free(&c);
	free(out);
}

/* ---- 9: names escaped --------------------------------------------------------------- */

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((*s > 0 && *s < 0x20 && *s != '\n') || *s == 0x7f)
			return true;
	return false;
}

/* record's summary and losses.txt (cap_summary), and info's image lines. */
static void test_names_escaped(void **state)
{
	struct cap c;
	struct tvp_hello h;
	char *out = th_path("hostile-names"), *text = NULL, p[4400];
	size_t len = 0;
	FILE *f;
	static const char evil[] = "ev\033[2J\033]0;pwn\007il\rX";
	struct recbuf b = { 0 };
	struct th_tvt t;
	struct tvt_reader r;
	struct tvh_walk_opts wo = { .cpu = -1 };
	struct tvh_stats s;
	struct tvh_info in;
	char *path;

	(void)state;
	hello_fill(&h, evil);
	assert_int_equal(cap_open(&c, out, 0x44, &h, NULL, 1), 0);
	assert_int_equal(cap_close(&c, 2), 0);
	f = open_memstream(&text, &len);
	cap_summary(&c, f);
	fclose(f);
	if (has_control(text) || !strstr(text, "\\x1b[2J"))
		fail_msg("summary: %s", text);
	free(text);
	snprintf(p, sizeof(p), "%s/losses.txt", c.dir);
	f = fopen(p, "r");
	assert_non_null(f);
	text = calloc(1, 8192);
	assert_true(fread(text, 1, 8191, f) > 0);
	fclose(f);
	if (has_control(text))
		fail_msg("losses.txt: %s", text);
	free(text);
	cap_free(&c);
	/* info: an IMAGE record's name */
	rb_image(&b, TV_IMG_KERNEL, 1, 0x1000, 0x1000, evil);
	th_tvt_begin(&t, "m", 9);
	th_tvt_records(&t, 0, 0, &b);
	th_tvt_end(&t);
	path = th_tvt_save(&t, "hostile-names.tvt");
	assert_int_equal(tvt_reader_open(&r, path), 0);
	tvh_info_init(&in);
	assert_int_equal(tvh_walk(&r, &wo, tvh_info_event, &in, &s), 0);
	text = NULL;
	f = open_memstream(&text, &len);
	assert_int_equal(tvh_info_write(&in, &r, &s, path, f), 0);
	fclose(f);
	if (has_control(text) || !strstr(text, "\\x1b]0;pwn\\x07il\\rX"))
		fail_msg("info: %s", text);
	free(text);
	tvh_info_free(&in);
	tvh_stats_free(&s);
	tvt_reader_close(&r);
	th_tvt_free(&t);
	rb_free(&b);
	free(path);
	free(out);
}

/* ---- 10: readers bounded by content --------------------------------------------------- */

/* One branch record on each of ncpus CPUs (CPU indexes spread up to 65535). */
static char *many_cpus(unsigned ncpus, const char *name)
{
	struct recbuf b = { 0 };
	struct th_tvt t;
	char *path;

	rb_branch(&b, TV_BR_JMP, 0x1000, 0x2000);
	th_tvt_begin(&t, "m", 9);
	for (unsigned c = 0; c < ncpus; c++)
		th_tvt_records(&t, ncpus > 1024 ? c * 63 : c, 0, &b);
	th_tvt_end(&t);
	path = th_tvt_save(&t, name);
	th_tvt_free(&t);
	rb_free(&b);
	return path;
}

/*
 * A file of one record on each of 1,025 CPUs is refused by every walk
 * (TVH_MAX_CPUS_SEEN) and by the CLI with exit 3 and a clear message,
 * before any per-CPU state is made for them; 1,024 CPUs are read.
 */
static void test_readers_cpu_limit(void **state)
{
	char *ok = many_cpus(TVH_MAX_CPUS_SEEN, "hostile-1024cpus.tvt");
	char *bad = many_cpus(TVH_MAX_CPUS_SEEN + 1, "hostile-1025cpus.tvt");
	struct tvt_reader r;
	struct tvh_walk_opts wo = { .cpu = -1 };
	struct tvh_stats s;
	static const char *const cmds[] = { "info", "dump", "script", "report", "timeline -o /dev/null" };
	char cmd[9000], *out = NULL, *err = NULL;

	(void)state;
	assert_int_equal(tvt_reader_open(&r, ok), 0);
	assert_int_equal(tvh_walk(&r, &wo, NULL, NULL, &s), 0);
	assert_int_equal(s.ncpus, TVH_MAX_CPUS_SEEN);
	tvh_stats_free(&s);
	tvt_reader_close(&r);
	assert_int_equal(tvt_reader_open(&r, bad), 0);
	assert_int_equal(tvh_walk(&r, &wo, NULL, NULL, &s), -TVH_ERR_LIMIT);
	tvh_stats_free(&s);
	tvt_reader_close(&r);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		int rc;

		snprintf(cmd, sizeof(cmd), "%s %s %s", th_cli(), cmds[i], bad);
		rc = th_run(cmd, &out, &err);
		if (rc != 3 || !strstr(err, "more than 1024 distinct CPUs"))
			fail_msg("%s: exit %d, stderr: %s", cmds[i], rc, err);
		free(out);
		free(err);
		out = err = NULL;
	}
	free(ok);
	free(bad);
}

/* ---- 11: LOST sums do not wrap --------------------------------------------------------- */

static void test_lost_saturates(void **state)
{
	struct recbuf b = { 0 };
	struct th_tvt t;
	struct tvt_reader r;
	struct tvh_walk_opts wo = { .cpu = -1 };
	struct tvh_stats s;
	char *path, *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	rb_lost(&b, 1, UINT64_MAX);
	rb_lost(&b, 2, UINT64_MAX);
	th_tvt_begin(&t, "m", 9);
	th_tvt_records(&t, 0, 0, &b);
	th_tvt_records(&t, 1, 0, &b);
	th_tvt_end(&t);
	path = th_tvt_save(&t, "hostile-lost.tvt");
	assert_int_equal(tvt_reader_open(&r, path), 0);
	assert_int_equal(tvh_walk(&r, &wo, NULL, NULL, &s), 0);
	assert_int_equal(tvh_stats_lost(&s), UINT64_MAX);
	f = open_memstream(&text, &len);
	tvh_dump_summary(f, &s);
	fclose(f);
	if (!strstr(text, "lost records: 18446744073709551615 ") ||
	    !strstr(text, "cpu0: 2 records, seq 0..1, lost 18446744073709551615 "))
		fail_msg("dump summary:\n%s", text);
	free(text);
	tvh_stats_free(&s);
	tvt_reader_close(&r);
	th_tvt_free(&t);
	rb_free(&b);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lockout),
		cmocka_unit_test(test_rejected_stream),
		cmocka_unit_test(test_forged_reply),
		cmocka_unit_test(test_amplification),
		cmocka_unit_test(test_poison),
		cmocka_unit_test(test_auth_path),
		cmocka_unit_test(test_prehello_freed),
		cmocka_unit_test(test_pt_fds),
		cmocka_unit_test(test_loss_fast),
		cmocka_unit_test(test_names_escaped),
		cmocka_unit_test(test_readers_cpu_limit),
		cmocka_unit_test(test_lost_saturates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
