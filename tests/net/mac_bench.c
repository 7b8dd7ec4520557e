/* SPDX-License-Identifier: MIT */
/*
 * mac_bench.c - what a per-datagram MAC costs (docs/PROTOCOL.md, "Threat
 * model"): MB/s on one core for SipHash-2-4 (net/siphash.c), HMAC-SHA256
 * (net/sha256.c) and the CRC-32 every datagram already carries
 * (net/proto.c), over full 1452-byte datagrams.  Built twice to compare
 * the hypervisor's code generation (no SSE: the MAC sources compiled with
 * the EFI build's -mgeneral-regs-only -mno-red-zone) with the receiver's:
 *
 *   S="net/siphash.c net/sha256.c net/proto.c vmm/trace/serial_enc.c"
 *   F="-std=gnu11 -O2 -ffunction-sections -Wl,--gc-sections -I."
 *   gcc $F -mgeneral-regs-only -mno-red-zone -c $S      # no SSE
 *   gcc $F tests/net/mac_bench.c *.o -o mac_bench_nosse
 *   gcc $F tests/net/mac_bench.c $S -o mac_bench
 *
 * Not part of `make test` (a figure, not a check).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "net/proto.h"
#include "net/sha256.h"
#include "net/siphash.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
	static uint8_t d[TVP_MAX_DATAGRAM];
	uint8_t key[32], out[32];
	uint64_t sink = 0;
	const unsigned n = 200000;
	double t;

	for (unsigned i = 0; i < sizeof(d); i++)
		d[i] = (uint8_t)(i * 7);
	for (unsigned i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)i;
	t = now();
	for (unsigned i = 0; i < n; i++) {
		d[0] = (uint8_t)i;
		sink += siphash24(key, d, sizeof(d));
	}
	t = now() - t;
	printf("siphash-2-4   %7.1f MB/s  %6.0f ns per datagram\n", n * sizeof(d) / t / 1e6, t / n * 1e9);
	t = now();
	for (unsigned i = 0; i < n / 4; i++) {
		d[0] = (uint8_t)i;
		hmac_sha256(key, sizeof(key), d, sizeof(d), out);
		sink += out[0];
	}
	t = now() - t;
	printf("hmac-sha256   %7.1f MB/s  %6.0f ns per datagram\n", n / 4 * sizeof(d) / t / 1e6, t / (n / 4) * 1e9);
	t = now();
	for (unsigned i = 0; i < n; i++) {
		d[0] = (uint8_t)i;
		sink += proto_crc32(0, d, sizeof(d));
	}
	t = now() - t;
	printf("crc-32        %7.1f MB/s  %6.0f ns per datagram\n", n * sizeof(d) / t / 1e6, t / n * 1e9);
	return (int)(sink & 0);
}
