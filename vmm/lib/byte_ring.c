/* SPDX-License-Identifier: MIT */
/*
 * byte_ring.c - the single-producer, single-consumer byte ring
 * (vmm/lib/byte_ring.h has the contract and the memory ordering).
 */
#include "vmm/lib/byte_ring.h"

#include <string.h>

/*
 * One producer, one consumer: each side loads the other's index with
 * acquire and stores its own with release, as vmm/trace/ring.c does for
 * the record ring.
 */
static uint64_t load_acq(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store_rel(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

int byte_ring_init(struct byte_ring *r, uint8_t *data, uint64_t size)
{
	if (!r || !data || size == 0 || (size & (size - 1)))
		return BYTE_RING_ERR_INVAL;
	r->data = data;
	r->size = size;
	store_rel(&r->head, 0);
	store_rel(&r->tail, 0);
	return 0;
}

size_t byte_ring_write(void *ctx, const uint8_t *data, size_t len)
{
	struct byte_ring *r = ctx;
	uint64_t head, room, pos;
	size_t n, first;

	if (!r || !r->data || (!data && len))
		return 0;
	head = r->head;             /* only this side writes it */
	room = r->size - (head - load_acq(&r->tail));
	n = len < room ? len : (size_t)room;
	if (!n)
		return 0;
	pos = head & (r->size - 1);
	first = r->size - pos < n ? (size_t)(r->size - pos) : n;
	memcpy(r->data + pos, data, first);
	memcpy(r->data, data + first, n - first);
	store_rel(&r->head, head + n);
	return n;
}

/* Copy n bytes from stream offset off (the caller checked they are held). */
static void ring_copy(const struct byte_ring *r, uint64_t off, uint8_t *buf, size_t n)
{
	uint64_t pos = off & (r->size - 1);
	size_t first = r->size - pos < n ? (size_t)(r->size - pos) : n;

	memcpy(buf, r->data + pos, first);
	memcpy(buf + first, r->data, n - first);
}

size_t byte_ring_read(struct byte_ring *r, uint8_t *buf, size_t cap)
{
	uint64_t tail, have;
	size_t n;

	if (!r || !r->data || (!buf && cap))
		return 0;
	tail = r->tail;             /* only this side writes it */
	have = load_acq(&r->head) - tail;
	n = cap < have ? cap : (size_t)have;
	if (!n)
		return 0;
	ring_copy(r, tail, buf, n);
	store_rel(&r->tail, tail + n);
	return n;
}
