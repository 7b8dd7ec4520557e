/* SPDX-License-Identifier: MIT */
/*
 * log.c - levelled logger with sinks and a lossy, counted ring.
 */
#include "vmm/lib/log.h"

#include <stdio.h>
#include <string.h>

#include "vmm/hw/hw.h"

#define LOG_ALIGN(x) (((x) + 7u) & ~(uint64_t)7u)

int log_ring_init(struct log_ring *ring, void *mem, uint64_t size)
{
	if (!mem || size < LOG_RING_MIN || (size & (size - 1)) != 0)
		return -1;
	memset(ring, 0, sizeof(*ring));
	ring->buf = mem;
	ring->size = size;
	return 0;
}

/* Copy in/out of the ring at a running index, wrapping at the end. */
static void ring_copy_in(struct log_ring *r, uint64_t at, const void *src, size_t n)
{
	uint64_t off = at & (r->size - 1);
	size_t first = n;

	if (off + n > r->size)
		first = (size_t)(r->size - off);
	if (n == 0)
		return;
	memcpy(r->buf + off, src, first);
	if (n > first)
		memcpy(r->buf, (const uint8_t *)src + first, n - first);
}

static void ring_copy_out(const struct log_ring *r, uint64_t at, void *dst, size_t n)
{
	uint64_t off = at & (r->size - 1);
	size_t first = n;

	if (n == 0)
		return;

	if (off + n > r->size)
		first = (size_t)(r->size - off);
	memcpy(dst, r->buf + off, first);
	if (n > first)
		memcpy((uint8_t *)dst + first, r->buf, n - first);
}

static uint64_t entry_bytes(uint16_t len)
{
	return sizeof(struct log_entry_hdr) + LOG_ALIGN((uint64_t)len);
}

int log_ring_push(struct log_ring *r, uint64_t tsc, uint8_t level, uint8_t cpu,
		  const char *text, size_t len)
{
	struct log_entry_hdr h;
	uint64_t need;

	if (len > LOG_MAX_LINE)
		len = LOG_MAX_LINE;
	need = entry_bytes((uint16_t)len);
	/* LOG_RING_MIN holds at least one maximal entry (header + LOG_MAX_LINE). */
	while (r->head + need - r->tail > r->size) {
		struct log_entry_hdr old;

		ring_copy_out(r, r->tail, &old, sizeof(old));
		r->tail += entry_bytes(old.len);
		r->lost++;
	}
	h.tsc = tsc;
	h.seq = r->next_seq++;
	h.level = level;
	h.cpu = cpu;
	h.len = (uint16_t)len;
	h.reserved = 0;
	ring_copy_in(r, r->head, &h, sizeof(h));
	ring_copy_in(r, r->head + sizeof(h), text, len);
	r->head += need;
	return 0;
}

int log_ring_pop(struct log_ring *r, struct log_entry_hdr *hdr, char *text, size_t cap)
{
	size_t n;

	if (r->tail == r->head)
		return -1;
	ring_copy_out(r, r->tail, hdr, sizeof(*hdr));
	n = hdr->len;
	if (cap == 0 || !text)
		n = 0;
	else if (n > cap - 1)
		n = cap - 1;
	ring_copy_out(r, r->tail + sizeof(*hdr), text, n);
	if (cap && text)
		text[n] = '\0';
	r->tail += entry_bytes(hdr->len);
	return (int)n;
}

void log_ring_move(struct log_ring *dst, struct log_ring *src)
{
	struct log_entry_hdr h;
	char text[LOG_MAX_LINE + 1];
	int n;

	while ((n = log_ring_pop(src, &h, text, sizeof(text))) >= 0)
		log_ring_push(dst, h.tsc, h.level, h.cpu, text, (size_t)n);
	dst->lost += src->lost;
	src->lost = 0;
}

/* --- global logger -------------------------------------------------------- */

struct log_sink {
	log_sink_fn fn;
	void *ctx;
};

static struct {
	struct log_sink sinks[LOG_MAX_SINKS];
	struct log_ring *ring;
	enum log_level level;
	uint8_t (*cpu_fn)(void);
	int lock;
} g_log = { .level = LOG_INFO };

static const char *const level_names[] = { "err", "warn", "info", "debug" };

const char *log_level_name(enum log_level level)
{
	if ((unsigned)level > LOG_DEBUG)
		return "?";
	return level_names[level];
}

void log_set_ring(struct log_ring *ring) { g_log.ring = ring; }
struct log_ring *log_get_ring(void) { return g_log.ring; }
void log_set_level(enum log_level level) { g_log.level = level; }
enum log_level log_get_level(void) { return g_log.level; }
void log_set_cpu_fn(uint8_t (*cpu_fn)(void)) { g_log.cpu_fn = cpu_fn; }

int log_add_sink(log_sink_fn fn, void *ctx)
{
	for (int i = 0; i < LOG_MAX_SINKS; i++) {
		if (!g_log.sinks[i].fn) {
			g_log.sinks[i].fn = fn;
			g_log.sinks[i].ctx = ctx;
			return 0;
		}
	}
	return -1;
}

void log_clear_sinks(void)
{
	memset(g_log.sinks, 0, sizeof(g_log.sinks));
	g_log.lock = 0;
}

void log_remove_sink(log_sink_fn fn)
{
	for (int i = 0; i < LOG_MAX_SINKS; i++) {
		if (g_log.sinks[i].fn == fn) {
			g_log.sinks[i].fn = NULL;
			g_log.sinks[i].ctx = NULL;
		}
	}
}

static void log_lock(void)
{
	while (__atomic_exchange_n(&g_log.lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&g_log.lock, __ATOMIC_RELAXED))
			hw_pause();
}

void log_break_lock(void)
{
	__atomic_store_n(&g_log.lock, 0, __ATOMIC_RELEASE);
}

static void log_unlock(void)
{
	__atomic_store_n(&g_log.lock, 0, __ATOMIC_RELEASE);
}

void log_write_raw(const char *text, size_t len)
{
	log_lock();
	for (int i = 0; i < LOG_MAX_SINKS; i++)
		if (g_log.sinks[i].fn)
			g_log.sinks[i].fn(g_log.sinks[i].ctx, text, len);
	log_unlock();
}

void tv_vlog(enum log_level level, const char *fmt, va_list ap)
{
	char line[LOG_MAX_LINE + 16];
	char msg[LOG_MAX_LINE + 1];
	int n, m;
	uint8_t cpu;

	if (level > g_log.level)
		return;
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(msg)) {
		n = sizeof(msg) - 1;
		memcpy(msg + n - 3, "...", 3);
	}
	cpu = g_log.cpu_fn ? g_log.cpu_fn() : 0;
	m = snprintf(line, sizeof(line), "[%s] %.*s\n", log_level_name(level), n, msg);
	if (m < 0)
		return;
	if ((size_t)m >= sizeof(line))
		m = sizeof(line) - 1;

	log_lock();
	if (g_log.ring) {
		struct log_ring *r = g_log.ring;

		while (__atomic_exchange_n(&r->lock, 1, __ATOMIC_ACQUIRE))
			hw_pause();
		log_ring_push(r, hw_rdtsc(), (uint8_t)level, cpu, msg, (size_t)n);
		__atomic_store_n(&r->lock, 0, __ATOMIC_RELEASE);
	}
	for (int i = 0; i < LOG_MAX_SINKS; i++)
		if (g_log.sinks[i].fn)
			g_log.sinks[i].fn(g_log.sinks[i].ctx, line, (size_t)m);
	log_unlock();
}

void tv_log(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tv_vlog(level, fmt, ap);
	va_end(ap);
}
