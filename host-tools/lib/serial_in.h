/* SPDX-License-Identifier: MIT */
/*
 * serial_in.h - the receiving side of the serial trace transport
 * (vmm/trace/serial_enc.h, docs/SERIAL-TRANSPORT.md): scan a serial log for
 * TVT1 lines, check their CRCs, put each CPU's records, PT bytes and ring
 * header snapshots back together and write them as a .tvt (tvt.h).
 *
 * Nothing missing goes unnoticed; per CPU it counts:
 *  - chunk numbers never seen (lines lost, damaged beyond recognition, or
 *    cut short), from 0: an emitter numbers its lines from 0 at boot;
 *  - records missing, from sequence numbers: between received records
 *    (gap), before the first received one back to where the sender said
 *    it started (head, from E lines), after the last received one up to
 *    where the sender said it stopped (tail, from E lines); of those, the
 *    ones the sender never sent because the ring dropped them first
 *    (E lines' `missed`) are counted apart;
 *  - F pieces that did not make a whole record, PT bytes missing.
 * A compact branch right after lost records cannot be decoded on its own;
 * when its R line carries its base (off 8) it is written to the file as
 * the full branch it stands for (same sequence number), counted in
 * `expanded`, so the chain has no hole.
 * One log is one boot: a CPU's chunk numbers going back (a reboot, or a
 * line repeated) are counted as `chunk_back` and records already held
 * are dropped as duplicates.
 *
 * Errors (negative enum tvh_error): -TVH_ERR_INVALID (NULL),
 * -TVH_ERR_NOMEM, -TVH_ERR_IO (from the .tvt writer; sticky).
 */
#ifndef TVH_SERIAL_IN_H
#define TVH_SERIAL_IN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host-tools/lib/cputab.h"
#include "host-tools/lib/tvt.h"
#include "vmm/trace/format.h"
#include "vmm/trace/serial_enc.h"

struct tvh_serial_cpu_stats {
	uint32_t cpu;
	uint64_t lines;            /* accepted lines of this CPU */
	uint64_t chunks_missing;   /* chunk numbers never seen */
	uint64_t chunk_back;       /* lines whose chunk number went back */
	uint64_t records;          /* records received (each once) */
	uint64_t dup_records;      /* received again, dropped */
	bool have_seq;
	uint64_t first_seq;        /* of the first record received */
	uint64_t next_seq;         /* one past the last record received */
	uint64_t rec_gap;          /* missing between received records */
	uint64_t rec_head;         /* missing before the first received one */
	uint64_t rec_tail;         /* missing after the last received one */
	uint64_t rec_missed;       /* of all missing: never sent (E `missed`) */
	uint64_t pieces_dropped;   /* F lines whose record stayed incomplete */
	uint64_t expanded;         /* compact branches after a loss written as
				    * full ones, from their line's base */
	uint64_t headers;          /* whole ring header snapshots */
	uint64_t ends;             /* E lines */
	bool have_end;
	uint64_t end_start;        /* lowest E first_seq: where sending began */
	uint64_t end_next;         /* highest E `first`: where sending stopped */
	bool have_ring;
	struct tv_trace_ring ring; /* the last whole snapshot */
	uint64_t pt_bytes;         /* PT bytes received */
	uint64_t pt_missing;       /* PT bytes in offset gaps */
};

/* Records missing for any reason (gap + head + tail). */
static inline uint64_t tvh_serial_missing(const struct tvh_serial_cpu_stats *c)
{
	return c->rec_gap + c->rec_head + c->rec_tail;
}

struct tvh_serial_stats {
	uint64_t lines;            /* text lines scanned */
	uint64_t tagged;           /* lines holding the tag */
	uint64_t accepted;         /* lines that parsed with a good CRC */
	uint64_t bad_crc;          /* well-formed, CRC mismatch */
	uint64_t malformed;        /* tag, but not a whole line (cut short,
				    * damaged), fields out of range, or a CPU
				    * index above TVH_MAX_CPU;
				    * tagged = accepted + bad_crc + malformed */
	uint64_t unknown_kind;     /* of accepted: a kind this reader skips */
	uint64_t bad_content;      /* of accepted: content impossible (a header
				    * snapshot of another CPU or without the
				    * ring magic, a bad record size) */
	/* Sums over the CPUs, after tvh_serial_in_finish: */
	uint64_t records;
	uint64_t chunks_missing;
	uint64_t rec_missing;      /* gap + head + tail */
	uint64_t rec_missed;
	uint64_t pieces_dropped;
	uint64_t pt_bytes;
	uint64_t pt_missing;
	uint32_t cpus;             /* CPUs with at least one accepted line */
};

struct tvh_serial_in {
	struct tvt_writer *w;      /* NULL: count only */
	struct tvh_cputab cpus;    /* struct serial_cpu (serial_in.c) */
	struct tvh_serial_stats st;
	int error;                 /* first error, sticky */
	bool finished;
};

/*
 * tvh_serial_in_init - a receiver writing chunks to w (already past
 * tvt_writer_init), or only counting when w is NULL.
 */
void tvh_serial_in_init(struct tvh_serial_in *s, struct tvt_writer *w);

/*
 * tvh_serial_in_line - one line of the log (its '\n' optional).  Returns
 * 0 (the line counted, whatever it held) or the sticky error.
 */
int tvh_serial_in_line(struct tvh_serial_in *s, const char *line, size_t n);

/* tvh_serial_in_text - text[0..n) split at '\n' (a last line without one too). */
int tvh_serial_in_text(struct tvh_serial_in *s, const char *text, size_t n);

/*
 * tvh_serial_in_finish - write what is still held (records and PT runs,
 * the last ring snapshot of each CPU), work out the head and tail losses
 * and fill the sums in s->st.  Returns 0 or the sticky error.
 */
int tvh_serial_in_finish(struct tvh_serial_in *s);

/* The stats of CPU cpu, NULL if no line of it was accepted. */
const struct tvh_serial_cpu_stats *tvh_serial_in_cpu(const struct tvh_serial_in *s,
						     uint32_t cpu);

/* One past the highest CPU index that may have stats. */
uint32_t tvh_serial_in_cpu_limit(const struct tvh_serial_in *s);

void tvh_serial_in_free(struct tvh_serial_in *s);

#endif /* TVH_SERIAL_IN_H */
