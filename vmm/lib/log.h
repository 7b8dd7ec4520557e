/* SPDX-License-Identifier: MIT */
/*
 * log.h - the one levelled logger.
 *
 * Every message goes to the registered sinks (COM1, the firmware console
 * while boot services exist) and into an in-memory ring that is exported
 * with the trace, so a failure in the field can be diagnosed from the
 * capture alone.  The ring never blocks: when full it drops the oldest
 * entries and counts them (log_ring_lost()).
 *
 * Safe to call from any CPU: a spinlock (atomic builtins, no asm) orders
 * writers; sinks are called under it, so lines never interleave.
 */
#ifndef TV_LOG_H
#define TV_LOG_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

enum log_level {
	LOG_ERR = 0,
	LOG_WARN = 1,
	LOG_INFO = 2,
	LOG_DEBUG = 3,
};

#define LOG_MAX_LINE 240  /* longer messages are cut and end in "..." */
#define LOG_RING_MIN 512  /* smallest ring: holds one header + LOG_MAX_LINE */
#define LOG_MAX_SINKS 4

typedef void (*log_sink_fn)(void *ctx, const char *text, size_t len);

/*
 * A ring of variable-length entries in caller-provided memory.  Each entry
 * is a struct log_entry_hdr followed by len bytes of text (no NUL), padded
 * to 8 bytes.  Indices grow without bound; the buffer offset is
 * index & (size - 1), so size must be a power of two.
 */
struct log_entry_hdr {
	uint64_t tsc;
	uint64_t seq;
	uint8_t level;
	uint8_t cpu;
	uint16_t len;
	uint32_t reserved;
};
_Static_assert(sizeof(struct log_entry_hdr) == 24, "log entry header is 24 bytes");

struct log_ring {
	uint8_t *buf;
	uint64_t size;     /* power of two, >= LOG_RING_MIN */
	uint64_t head;     /* next byte to write */
	uint64_t tail;     /* oldest entry */
	uint64_t next_seq; /* sequence number of the next entry */
	uint64_t lost;     /* entries dropped to make room */
	/*
	 * Taken around every push by tv_vlog.  It lives with the ring, not in
	 * the logger: the firmware-loaded image and tracevisor's resident copy
	 * each have a logger of their own but share this ring while CPUs are
	 * being launched.
	 */
	uint32_t lock;
	uint32_t reserved;
};

/*
 * log_ring_init - use mem[0..size) as an empty ring.
 * Returns 0, or -1 if size is not a power of two >= LOG_RING_MIN or mem is NULL.
 */
int log_ring_init(struct log_ring *ring, void *mem, uint64_t size);

/*
 * log_ring_push - append one entry, dropping the oldest as needed.
 * Text longer than LOG_MAX_LINE is cut.  Returns 0.
 */
int log_ring_push(struct log_ring *ring, uint64_t tsc, uint8_t level,
		  uint8_t cpu, const char *text, size_t len);

/*
 * log_ring_pop - remove the oldest entry.  Copies its header to *hdr and up
 * to cap-1 bytes of text plus a NUL to text.  Returns the text length,
 * or -1 when the ring is empty.
 */
int log_ring_pop(struct log_ring *ring, struct log_entry_hdr *hdr,
		 char *text, size_t cap);

/*
 * log_ring_move - pop every entry of src and push it into dst, keeping
 * timestamps, levels and CPUs (dst numbers them anew); src's lost count is
 * added to dst's.  Used to move the boot-time ring into the sized one.
 */
void log_ring_move(struct log_ring *dst, struct log_ring *src);

/* --- the global logger -------------------------------------------------- */

/* Route entries into ring (may be NULL for none).  Not thread-safe: boot only. */
void log_set_ring(struct log_ring *ring);
struct log_ring *log_get_ring(void);
/* Register a sink; returns 0 or -1 when all LOG_MAX_SINKS are taken. */
int log_add_sink(log_sink_fn fn, void *ctx);
/*
 * log_break_lock - release the logger's lock whoever holds it: for the
 * panic path (an exception in tracevisor may have hit while this CPU held
 * it).  Lines may interleave afterwards; nothing deadlocks.
 */
void log_break_lock(void);
/*
 * log_write_raw - text[0..len) to every sink as it is, under the logger's
 * lock (so it never lands inside a log line), not into the ring: for
 * machine-read lines such as the serial trace transport's.
 */
void log_write_raw(const char *text, size_t len);
/* Forget every sink (a relocated copy of tracevisor starts afresh). */
void log_clear_sinks(void);
/* Remove every sink registered with fn (e.g. the console at handover). */
void log_remove_sink(log_sink_fn fn);
/* Messages above this level are dropped everywhere (default LOG_INFO). */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* Per-CPU index recorded with each entry; the caller supplies it. */
void log_set_cpu_fn(uint8_t (*cpu_fn)(void));
/* Name of a level ("err", "warn", "info", "debug"). */
const char *log_level_name(enum log_level level);

void tv_log(enum log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void tv_vlog(enum log_level level, const char *fmt, va_list ap);

#define log_err(...)   tv_log(LOG_ERR, __VA_ARGS__)
#define log_warn(...)  tv_log(LOG_WARN, __VA_ARGS__)
#define log_info(...)  tv_log(LOG_INFO, __VA_ARGS__)
#define log_debug(...) tv_log(LOG_DEBUG, __VA_ARGS__)

#endif /* TV_LOG_H */
