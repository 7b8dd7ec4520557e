/* SPDX-License-Identifier: MIT */
/*
 * test_host_receiver.c - the library entry points behind `tracevisor
 * record` and `tracevisor control`, called without the CLI:
 * tvh_record_opts_init / tvh_record_run (receiver.h) on a loopback
 * socket, and record.h's rec_send_repeat, rec_capture_target and
 * rec_addr_str.  The CLI around them is test_host_cli.c's and
 * tests/build/net-*.sh's.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <cmocka.h>

#include "host-tools/lib/capture.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/receiver.h"
#include "host-tools/lib/record.h"
#include "net/proto.h"
#include "tests/host/helpers.h"
#include "tests/host/json_check.h"

static const uint8_t test_key[] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77 };

/* A UDP socket on 127.0.0.1, an ephemeral port; *a gets its address. */
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

/* One datagram within ms milliseconds: its length, or -1. */
static ssize_t recv_wait(int fd, void *buf, size_t cap, int ms)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	if (poll(&pf, 1, ms) != 1)
		return -1;
	return recv(fd, buf, cap, 0);
}

static void test_opts_defaults(void **state)
{
	struct tvh_record_opts o;

	(void)state;
	memset(&o, 0xa5, sizeof(o));
	tvh_record_opts_init(&o);
	assert_int_equal(o.listen.sin_family, AF_INET);
	assert_int_equal(ntohs(o.listen.sin_port), REC_DEFAULT_PORT);
	assert_int_equal(o.listen.sin_addr.s_addr, htonl(INADDR_ANY));
	assert_string_equal(o.outdir, ".");
	assert_true(o.status_every == 10);
	assert_int_equal(o.rcvbuf, 8 << 20);
	assert_int_equal(o.machines, 0);
	assert_true(o.duration == 0 && o.idle == 0);
	assert_false(o.quiet);
	assert_false(o.start);
	assert_int_equal(o.keylen, 0);
}

/* Nothing arrives: the run ends at --duration, writes nothing, returns 0. */
static void test_run_duration_nothing(void **state)
{
	struct tvh_record_opts o;
	char *out = th_path("recv-nothing");
	struct stat sb;

	(void)state;
	tvh_record_opts_init(&o);
	assert_int_equal(rec_parse_addr("127.0.0.1:0", 0, &o.listen), -TVH_ERR_INVALID);
	o.listen.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	o.listen.sin_port = 0;
	o.outdir = out;
	o.duration = 0.2;
	o.quiet = true;
	assert_int_equal(tvh_record_run(&o), 0);
	assert_int_not_equal(stat(out, &sb), 0);
	/* A second run in the same process works the same (no state left). */
	assert_int_equal(tvh_record_run(&o), 0);
	free(out);
}

/* bind fails (an address that is not this host's): -TVH_ERR_IO. */
static void test_run_bind_fails(void **state)
{
	struct tvh_record_opts o;

	(void)state;
	tvh_record_opts_init(&o);
	assert_int_equal(rec_parse_addr("192.0.2.1:6543", 0, &o.listen), 0);
	o.duration = 0.1;
	o.quiet = true;
	assert_int_equal(tvh_record_run(&o), -TVH_ERR_IO);
}

struct run_arg {
	struct tvh_record_opts o;
	int ret;
};

static void *run_thread(void *p)
{
	struct run_arg *a = p;

	a->ret = tvh_record_run(&a->o);
	return NULL;
}

static void hello_fill(struct tvp_hello *h)
{
	memset(h, 0, sizeof(*h));
	h->cpu_count = 1;
	h->source = TV_SOURCE_MTF;
	h->overflow = TV_OVERFLOW_OVERWRITE;
	h->vendor_id = TVP_VENDOR_INTEL;
	h->family = 6;
	h->model = 0x55;
	h->caps = TVP_CAP_SOURCE(TV_SOURCE_MTF) | TVP_CAP_CONTROL;
	h->tsc_hz = 2100000000ull;
	h->ring_bytes = 1u << 20;
	h->unix_ns = 1700000000000000000ull;
	memcpy(h->vendor, "GenuineIntel", 12);
	strncpy(h->sw_version, "v-test", sizeof(h->sw_version));
	strncpy(h->machine, "libtest", sizeof(h->machine));
}

/*
 * A whole session through the library: a HELLO is acknowledged, the
 * START that `start` asks for arrives authenticated with the key, the
 * session closes after `idle`, the run ends after `machines` = 1, and the
 * capture directory names the machine; rec_capture_target reads it back.
 */
static void test_run_one_session(void **state)
{
	static struct run_arg ra;
	struct sockaddr_in me, rx, peer;
	uint8_t buf[TVP_MAX_DATAGRAM], hello[TVP_MAX_DATAGRAM];
	struct tvp_hello h;
	struct proto_msg m;
	pthread_t t;
	int fd, hl;
	bool acked = false, started = false;
	uint64_t session = 0;
	char dir[4200], *out = th_path("recv-one");

	(void)state;
	/* A free port for the receiver: take one, give it back. */
	fd = udp_local(&rx);
	close(fd);
	fd = udp_local(&me);
	memset(&ra, 0, sizeof(ra));
	tvh_record_opts_init(&ra.o);
	ra.o.listen = rx;
	ra.o.outdir = out;
	ra.o.machines = 1;
	ra.o.idle = 0.3;
	ra.o.duration = 20;
	ra.o.quiet = true;
	ra.o.start = true;
	memcpy(ra.o.key, test_key, sizeof(test_key));
	ra.o.keylen = sizeof(test_key);
	assert_int_equal(rec_parse_cpus("0", ra.o.start_cpus.mask), 0);
	assert_int_equal(pthread_create(&t, NULL, run_thread, &ra), 0);

	hello_fill(&h);
	hl = proto_encode_hello(hello, sizeof(hello), 0x5eed, &h);
	assert_true(hl > 0);
	/* The receiver may not be listening yet: HELLO again until answered. */
	for (int i = 0; i < 100 && !(acked && started); i++) {
		ssize_t n;

		if (!acked)
			sendto(fd, hello, (size_t)hl, 0, (struct sockaddr *)&rx, sizeof(rx));
		while ((n = recv_wait(fd, buf, sizeof(buf), 50)) > 0) {
			assert_int_equal(proto_decode(buf, (size_t)n, &m), 0);
			if (m.type == TVP_HELLO_ACK) {
				acked = true;
			} else if (m.type == TVP_CONTROL) {
				assert_int_equal(proto_control_verify(buf, (size_t)n, test_key,
								      sizeof(test_key)), 0);
				assert_int_equal(m.u.control.c.op, TVP_CTL_START);
				assert_true(m.u.control.arg.cpus.mask[0] & 1);
				started = true;
			}
		}
	}
	assert_true(acked);
	assert_true(started);
	/* Silence: the session closes after 0.3 s and the run ends. */
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(ra.ret, 0);
	snprintf(dir, sizeof(dir), "%s/libtest-0000000000005eed", out);
	assert_int_equal(rec_capture_target(dir, &session, &peer), 0);
	assert_int_equal(session, 0x5eed);
	assert_int_equal(peer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	assert_int_equal(peer.sin_port, me.sin_port);
	close(fd);
	free(out);
}

static void test_capture_target(void **state)
{
	struct sockaddr_in to;
	uint64_t session = 0;
	char *out = th_path("recv-target"), path[4200];
	struct cap c;
	FILE *f;

	(void)state;
	/* A capture without a HELLO still has its peer and session. */
	assert_int_equal(cap_init(&c, out, 0xabc, "10.1.2.3:4567", 1), 0);
	assert_int_equal(cap_close(&c, 2), 0);
	assert_int_equal(rec_capture_target(c.dir, &session, &to), 0);
	assert_int_equal(session, 0xabc);
	assert_int_equal(to.sin_addr.s_addr, inet_addr("10.1.2.3"));
	assert_int_equal(ntohs(to.sin_port), 4567);
	cap_free(&c);
	/* No such directory: -TVH_ERR_IO with errno; no peer: -TVH_ERR_INVALID. */
	errno = 0;
	assert_int_equal(rec_capture_target("/nonexistent/cap", &session, &to), -TVH_ERR_IO);
	assert_int_equal(errno, ENOENT);
	mkdir(out, 0755);
	snprintf(path, sizeof(path), "%s/meta.json", out);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"session_id\": \"00000000000000ab\"}\n", f);
	fclose(f);
	assert_int_equal(rec_capture_target(out, &session, &to), -TVH_ERR_INVALID);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"session_id\": \"0\", \"peer\": \"127.0.0.1:1\"}\n", f);
	fclose(f);
	assert_int_equal(rec_capture_target(out, &session, &to), -TVH_ERR_INVALID);
	assert_int_equal(rec_capture_target(NULL, &session, &to), -TVH_ERR_INVALID);
	free(out);
}

/* A CONTROL from proto_encode_control, sent twice, arrives twice intact. */
static void test_send_repeat(void **state)
{
	struct sockaddr_in to;
	struct tvp_control c = { .op = TVP_CTL_NOP, .counter = 7 };
	uint8_t msg[TVP_MAX_DATAGRAM], got[TVP_MAX_DATAGRAM];
	static uint8_t big[70000];
	const char *failed = "x";
	int fd = udp_local(&to), len;

	(void)state;
	len = proto_encode_control(msg, sizeof(msg), 0x99, &c, NULL, test_key, sizeof(test_key));
	assert_true(len > 0);
	assert_int_equal(rec_send_repeat(&to, msg, (size_t)len, 2, &failed), 0);
	assert_null(failed);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(recv_wait(fd, got, sizeof(got), 2000), len);
		assert_memory_equal(got, msg, (size_t)len);
		assert_int_equal(proto_control_verify(got, (size_t)len, test_key,
						      sizeof(test_key)), 0);
	}
	/* Too long for a UDP datagram: sendto fails, and says so. */
	assert_int_equal(rec_send_repeat(&to, big, sizeof(big), 1, &failed), -TVH_ERR_IO);
	assert_string_equal(failed, "send");
	assert_int_equal(errno, EMSGSIZE);
	close(fd);
}

static void test_addr_str(void **state)
{
	struct sockaddr_in a;
	char s[64];

	(void)state;
	assert_int_equal(rec_parse_addr("10.0.0.1:65535", 6543, &a), 0);
	rec_addr_str(&a, s, sizeof(s));
	assert_string_equal(s, "10.0.0.1:65535");
	assert_int_equal(rec_parse_addr("localhost", 6543, &a), 0);
	rec_addr_str(&a, s, sizeof(s));
	assert_string_equal(s, "127.0.0.1:6543");
	assert_true(rec_wall_ns() > 1500000000ull * 1000000000ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opts_defaults),
		cmocka_unit_test(test_run_duration_nothing),
		cmocka_unit_test(test_run_bind_fails),
		cmocka_unit_test(test_run_one_session),
		cmocka_unit_test(test_capture_target),
		cmocka_unit_test(test_send_repeat),
		cmocka_unit_test(test_addr_str),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
