/* SPDX-License-Identifier: MIT */
/*
 * test_rawframe.c - the raw benchmark frame (net/rawframe.c): the RFC 1071
 * checksum against a published IPv4 header, every header field of a built
 * frame read back at its RFC 791 / RFC 768 offset, the header checksum
 * verifying to zero for every sequence number tried, rawframe_set_seq
 * changing only the sequence, identification and checksum, and the size
 * limits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "net/rawframe.h"

static unsigned be16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)be16(p) << 16 | be16(p + 2);
}

static const struct rawframe_addr addr = {
	{ 0x52, 0x55, 0x0a, 0x00, 0x02, 0x02 }, { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 },
	0x0a00020f, 0x0a000202, 40000, 6544,
};

/* The example header of the Wikipedia "IPv4 header checksum" article:
 * 4500 0073 0000 4000 4011 b861 c0a8 0001 c0a8 00c7. */
static void test_checksum_vector(void **state)
{
	uint8_t h[20] = { 0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
			  0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7 };

	(void)state;
	assert_int_equal(rawframe_ip_checksum(h, sizeof(h)), 0xb861);
	h[10] = 0xb8;
	h[11] = 0x61;
	assert_int_equal(rawframe_ip_checksum(h, sizeof(h)), 0);
	/* Odd length: the last byte is the high half of a zero-padded word. */
	assert_int_equal(rawframe_ip_checksum((const uint8_t *)"\x01", 1), 0xfeff);
	assert_int_equal(rawframe_ip_checksum(NULL, 0), 0xffff);
}

static void test_fields(void **state)
{
	uint8_t f[1600];
	size_t len = rawframe_build(f, sizeof(f), &addr, 0x01020304, 1472);
	const uint8_t *ip = f + 14, *udp = ip + 20, *data = udp + 8;

	(void)state;
	assert_int_equal(len, 1514);
	assert_memory_equal(f, addr.dst_mac, 6);
	assert_memory_equal(f + 6, addr.src_mac, 6);
	assert_int_equal(be16(f + 12), 0x0800);
	assert_int_equal(ip[0], 0x45);
	assert_int_equal(ip[1], 0);
	assert_int_equal(be16(ip + 2), 1500);
	assert_int_equal(be16(ip + 4), 0x0304);
	assert_int_equal(be16(ip + 6), 0x4000);
	assert_int_equal(ip[8], 64);
	assert_int_equal(ip[9], 17);
	assert_int_equal(be32(ip + 12), 0x0a00020f);
	assert_int_equal(be32(ip + 16), 0x0a000202);
	assert_int_equal(rawframe_ip_checksum(ip, 20), 0);
	assert_int_equal(be16(udp), 40000);
	assert_int_equal(be16(udp + 2), 6544);
	assert_int_equal(be16(udp + 4), 1480);
	assert_int_equal(be16(udp + 6), 0);
	assert_int_equal(be32(data), 0x01020304);
	for (size_t i = 4; i < 1472; i++)
		assert_int_equal(data[i], i & 0xff);
}

static void test_set_seq(void **state)
{
	uint8_t a[1600], b[1600];
	size_t len = rawframe_build(a, sizeof(a), &addr, 0, 1000);

	(void)state;
	assert_int_equal(len, 1042);
	for (uint32_t seq = 1; seq < 200000; seq += 997) {
		memcpy(b, a, len);
		rawframe_set_seq(b, seq);
		assert_int_equal(rawframe_ip_checksum(b + 14, 20), 0);
		assert_int_equal(be32(b + 42), seq);
		assert_int_equal(be16(b + 18), seq & 0xffff);
		/* Everything but identification (18-19), checksum (24-25) and
		 * the sequence (42-45) is unchanged. */
		assert_memory_equal(a, b, 18);
		assert_memory_equal(a + 20, b + 20, 4);
		assert_memory_equal(a + 26, b + 26, 16);
		assert_memory_equal(a + 46, b + 46, len - 46);
	}
}

static void test_limits(void **state)
{
	uint8_t f[1600];

	(void)state;
	assert_int_equal(rawframe_build(f, sizeof(f), &addr, 0, 3), 0);
	assert_int_equal(rawframe_build(f, sizeof(f), &addr, 0, 4), 46);
	assert_int_equal(rawframe_build(f, sizeof(f), &addr, 0, 1473), 0);
	assert_int_equal(rawframe_build(f, 1513, &addr, 0, 1472), 0);
	assert_int_equal(rawframe_build(f, 1514, &addr, 0, 1472), 1514);
	assert_int_equal(rawframe_build(NULL, 1514, &addr, 0, 1472), 0);
	assert_int_equal(rawframe_build(f, 1514, NULL, 0, 1472), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checksum_vector),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_set_seq),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
