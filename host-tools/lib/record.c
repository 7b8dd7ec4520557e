/* SPDX-License-Identifier: MIT */
/*
 * record.c - the export protocol's host side that is not the receiver
 * loop (record.h): value parsers, the capture's peer, sending a CONTROL.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/record.h"
#include "net/proto.h"

/* ---- small parsers (pure) --------------------------------------------------- */

int rec_parse_addr(const char *s, uint16_t default_port, struct sockaddr_in *out)
{
	char host[64];
	const char *colon;
	unsigned long port = default_port;
	size_t hl;

	if (!s || !out || !*s)
		return -TVH_ERR_INVALID;
	colon = strrchr(s, ':');
	if (!colon && strspn(s, "0123456789") == strlen(s))
		colon = s - 1;                       /* "PORT" */
	if (colon) {
		char *end;

		errno = 0;
		port = strtoul(colon + 1, &end, 10);
		if (!colon[1] || *end || errno || port == 0 || port > 65535)
			return -TVH_ERR_INVALID;
		hl = colon >= s ? (size_t)(colon - s) : 0;
	} else {
		hl = strlen(s);
	}
	if (hl >= sizeof(host))
		return -TVH_ERR_INVALID;
	memcpy(host, s, hl);
	host[hl] = '\0';
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_port = htons((uint16_t)port);
	if (!hl || !strcmp(host, "*"))
		out->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (!strcmp(host, "localhost"))
		out->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &out->sin_addr) != 1)
		return -TVH_ERR_INVALID;
	return 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int rec_parse_key_hex(const char *s, uint8_t *key, size_t *len)
{
	size_t n = 0;
	int hi = -1;

	if (!s || !key || !len)
		return -TVH_ERR_INVALID;
	while (isspace((unsigned char)*s))
		s++;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; *s; s++) {
		int v;

		if (isspace((unsigned char)*s))
			continue;
		v = hexval((unsigned char)*s);
		if (v < 0)
			return -TVH_ERR_INVALID;
		if (hi < 0) {
			hi = v;
			continue;
		}
		if (n == REC_KEY_MAX)
			return -TVH_ERR_INVALID;
		key[n++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	if (hi >= 0 || !n)
		return -TVH_ERR_INVALID;
	*len = n;
	return 0;
}

int rec_load_key(const char *path, uint8_t *key, size_t *len)
{
	char buf[2 * REC_KEY_MAX + 64];
	ssize_t n;
	int fd;
	bool hex = true;

	if (!path || !key || !len)
		return -TVH_ERR_INVALID;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -TVH_ERR_IO;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -TVH_ERR_IO;
	if (n == 0 || n == (ssize_t)sizeof(buf) - 1)
		return -TVH_ERR_INVALID;
	buf[n] = '\0';
	for (ssize_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)buf[i]) && !isspace((unsigned char)buf[i]) &&
		    !(i == 1 && buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X')))
			hex = false;
	if (hex && !rec_parse_key_hex(buf, key, len))
		return 0;
	if ((size_t)n > REC_KEY_MAX)
		return -TVH_ERR_INVALID;
	memcpy(key, buf, (size_t)n);
	*len = (size_t)n;
	return 0;
}

int rec_parse_cpus(const char *s, uint64_t mask[16])
{
	if (!s || !mask || !*s)
		return -TVH_ERR_INVALID;
	memset(mask, 0, 16 * sizeof(uint64_t));
	if (!strcmp(s, "all")) {
		memset(mask, 0xff, 16 * sizeof(uint64_t));
		return 0;
	}
	while (*s) {
		char *end;
		unsigned long a, b;

		if (!isdigit((unsigned char)*s))
			return -TVH_ERR_INVALID;
		a = strtoul(s, &end, 10);
		b = a;
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				return -TVH_ERR_INVALID;
			b = strtoul(end + 1, &end, 10);
		}
		if (a > b || b >= TVP_MAX_CPUS)
			return -TVH_ERR_INVALID;
		for (unsigned long c = a; c <= b; c++)
			mask[c / 64] |= 1ull << (c % 64);
		if (*end == ',' && end[1])
			end++;
		else if (*end)
			return -TVH_ERR_INVALID;
		s = end;
	}
	return 0;
}

void rec_human(char *out, size_t cap, double v)
{
	static const char units[] = " kMGTP";
	unsigned u = 0;

	while (v >= 999.95 && u + 1 < sizeof(units) - 1) {
		v /= 1000;
		u++;
	}
	if (u == 0)
		snprintf(out, cap, "%.0f", v);
	else
		snprintf(out, cap, "%.1f%c", v, units[u]);
}

void rec_addr_str(const struct sockaddr_in *a, char *out, size_t cap)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(out, cap, "%s:%u", ip, ntohs(a->sin_port));
}

uint64_t rec_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the capture's machine -------------------------------------------------- */

/* "key": "value" from a meta.json we wrote (no escapes in these values). */
static int meta_value(const char *text, const char *key, char *out, size_t cap)
{
	char pat[64];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "\"%s\": \"", key);
	p = strstr(text, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	e = strchr(p, '"');
	if (!e || (size_t)(e - p) >= cap)
		return -1;
	memcpy(out, p, (size_t)(e - p));
	out[e - p] = '\0';
	return 0;
}

int rec_capture_target(const char *dir, uint64_t *session, struct sockaddr_in *to)
{
	char path[4200], text[8192], v[64];
	FILE *f;
	size_t n;

	if (!dir || !session || !to)
		return -TVH_ERR_INVALID;
	snprintf(path, sizeof(path), "%s/meta.json", dir);
	f = fopen(path, "r");
	if (!f)
		return -TVH_ERR_IO;
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	if (meta_value(text, "session_id", v, sizeof(v)) ||
	    !(*session = strtoull(v, NULL, 16)) ||
	    meta_value(text, "peer", v, sizeof(v)) ||
	    rec_parse_addr(v, REC_DEFAULT_PORT, to))
		return -TVH_ERR_INVALID;
	return 0;
}

/* ---- sending a CONTROL -------------------------------------------------------- */

int rec_send_repeat(const struct sockaddr_in *to, const void *buf, size_t len,
		    uint64_t repeat, const char **failed)
{
	int fd;

	*failed = "socket";
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -TVH_ERR_IO;
	for (uint64_t i = 0; i < repeat; i++) {
		if (sendto(fd, buf, len, 0, (const struct sockaddr *)to, sizeof(*to)) !=
		    (ssize_t)len) {
			int e = errno;

			*failed = "send";
			close(fd);
			errno = e;
			return -TVH_ERR_IO;
		}
		if (i + 1 < repeat)
			usleep(100000);
	}
	close(fd);
	*failed = NULL;
	return 0;
}
