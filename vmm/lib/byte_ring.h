/* SPDX-License-Identifier: MIT */
/*
 * byte_ring.h - a single-producer, single-consumer byte ring.
 *
 * data[size] (a power of two), head and tail running byte counts (head -
 * tail <= size).  Keeps the oldest: byte_ring_write accepts what fits and
 * never writes over a byte the consumer has not released, so bytes between
 * tail and head stay where they are until tail passes them.  head is also
 * the stream offset after the last byte written (the PT backend's drain
 * uses it as the PT stream offset of its TV_REC_PT_SYNC records).
 *
 * Concurrency: one producer (byte_ring_write; for the PT stream the traced
 * CPU's drain) and one consumer (byte_ring_read, or _peek + _consume; the
 * serial exporter on the same CPU, or the network exporter on the NIC's
 * CPU), on the same CPU or on two.  No lock:
 *  - the producer copies bytes in, then stores head (release); the
 *    consumer loads head (acquire) before it reads bytes below it;
 *  - the consumer reads bytes, then stores tail (release); the producer
 *    loads tail (acquire) before it writes into the room above it.
 * Only the producer writes head and only the consumer writes tail.
 *
 * Errors: BYTE_RING_ERR_INVAL (NULL argument, size not a power of two, an
 * offset outside [tail, head]).
 */
#ifndef TV_BYTE_RING_H
#define TV_BYTE_RING_H

#include <stddef.h>
#include <stdint.h>

#define BYTE_RING_ERR_INVAL (-1)

struct byte_ring {
	uint8_t *data;
	uint64_t size;
	uint64_t head, tail;    /* atomic: see above */
};

/* byte_ring_init - 0, or BYTE_RING_ERR_INVAL when data is NULL or size not a power of two. */
int byte_ring_init(struct byte_ring *r, uint8_t *data, uint64_t size);
/*
 * byte_ring_write - producer: append up to len bytes, as many as fit;
 * returns the count.  ctx is the struct byte_ring, so that it can serve
 * as a sink callback (the PT backend's pt_sink_fn).
 */
size_t byte_ring_write(void *ctx, const uint8_t *data, size_t len);
/* byte_ring_read - consumer: take up to cap bytes, oldest first; returns the count. */
size_t byte_ring_read(struct byte_ring *r, uint8_t *buf, size_t cap);

/*
 * The consumer side the network exporter uses.  Inline, so that a user
 * of the byte ring (net/export.c, also built into host tools) links
 * nothing for it.
 */

/*
 * byte_ring_head / _tail - the stream offset after the newest byte
 * (acquire: the bytes below it are readable) and of the oldest byte not
 * yet released.  0 for NULL.
 */
static inline uint64_t byte_ring_head(const struct byte_ring *r)
{
	return r ? __atomic_load_n(&r->head, __ATOMIC_ACQUIRE) : 0;
}

static inline uint64_t byte_ring_tail(const struct byte_ring *r)
{
	return r ? __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) : 0;
}

/*
 * byte_ring_peek - copy up to cap bytes starting at stream offset off
 * into buf without releasing them; returns the count, 0 when off is not
 * in [tail, head) (already released, or not written yet).  The bytes
 * stay valid until byte_ring_consume passes them.
 */
static inline size_t byte_ring_peek(const struct byte_ring *r, uint64_t off,
				    uint8_t *buf, size_t cap)
{
	uint64_t tail, head, pos;
	size_t n, first;

	if (!r || !r->data || !buf || !cap)
		return 0;
	tail = byte_ring_tail(r);
	head = byte_ring_head(r);
	if (off - tail >= head - tail)   /* modulo 2^64: off not in [tail, head) */
		return 0;
	n = cap < head - off ? cap : (size_t)(head - off);
	pos = off & (r->size - 1);
	first = r->size - pos < n ? (size_t)(r->size - pos) : n;
	__builtin_memcpy(buf, r->data + pos, first);
	__builtin_memcpy(buf + first, r->data, n - first);
	return n;
}

/*
 * byte_ring_consume - release every byte before stream offset upto
 * (tail = upto, release: the producer may write over them).  upto ==
 * tail releases nothing.  Returns 0, or BYTE_RING_ERR_INVAL (NULL, upto
 * before tail or after head: nothing changed).
 */
static inline int byte_ring_consume(struct byte_ring *r, uint64_t upto)
{
	uint64_t tail;

	if (!r || !r->data)
		return BYTE_RING_ERR_INVAL;
	tail = r->tail;                  /* only the consumer writes it */
	if (upto - tail > byte_ring_head(r) - tail)
		return BYTE_RING_ERR_INVAL;
	__atomic_store_n(&r->tail, upto, __ATOMIC_RELEASE);
	return 0;
}

#endif /* TV_BYTE_RING_H */
