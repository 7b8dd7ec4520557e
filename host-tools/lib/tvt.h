/* SPDX-License-Identifier: MIT */
/*
 * tvt.h - the saved trace file (.tvt): what the network receiver writes
 * and every host tool reads.  docs/TRACEFILE.md is the prose version.
 *
 * Layout (all integers little endian, every structure 8-byte aligned):
 *
 *   file header   64 bytes, then the machine name, zero-padded to 8
 *   chunk         40-byte header, payload, zero padding to 8
 *   chunk         ...
 *
 * A chunk carries one piece of one CPU's stream: linear record bytes
 * (whole records, the ring's wrap already undone), raw Intel PT bytes,
 * or a snapshot of that CPU's ring header (struct tv_trace_ring) for its
 * counters.  Chunks of different CPUs interleave freely; per CPU and
 * kind they appear in stream order.  A gap between the end of one
 * records chunk and the first sequence number of the next one of that
 * CPU is lost records; a gap in PT byte offsets is lost PT bytes.
 *
 * Each chunk has a CRC-32 over its header (crc field zero) and payload,
 * so a reader can skip a damaged chunk and find the next good one.
 */
#ifndef TVH_TVT_H
#define TVH_TVT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/uio.h>

#define TVT_MAGIC          "TVTRACE"      /* 8 bytes with its NUL */
#define TVT_VERSION        1u
#define TVT_FILE_HDR_SIZE  64u
#define TVT_MAX_NAME       4096u          /* machine name bytes */

#define TVT_CHUNK_MAGIC    0x4b435654u    /* "TVCK" little endian */
#define TVT_CHUNK_HDR_SIZE 40u
#define TVT_MAX_PAYLOAD    (1ull << 30)   /* bytes in one chunk */

/* Chunk kinds (tvt_chunk.kind). */
enum tvt_kind {
	TVT_KIND_RECORDS = 1,    /* linear record bytes; first = sequence number */
	TVT_KIND_PT = 2,         /* raw PT bytes; first = PT stream byte offset */
	TVT_KIND_RING = 3,       /* struct tv_trace_ring snapshot; first = 0 */
};

/* Chunk flags. */
#define TVT_CHUNK_F_STREAM_START (1u << 0) /* producer (re)started this
					    * stream: no loss before it */

/* The file header, decoded. */
struct tvt_file_info {
	uint16_t version;        /* TVT_VERSION */
	uint32_t flags;          /* none defined; readers ignore unknown bits */
	uint64_t session_id;     /* chosen by the receiver, e.g. from the hello */
	uint64_t created_unix_ns;/* 0 = unknown */
	uint32_t trace_version;  /* TV_TRACE_VERSION of the records inside */
	const char *machine;     /* free-form UTF-8, NUL terminated here */
};

/* One chunk as read; payload points into the reader's mapping. */
struct tvt_chunk {
	uint64_t file_offset;    /* of the chunk header */
	uint32_t cpu;
	uint16_t kind;           /* enum tvt_kind, or unknown (skip it) */
	uint32_t flags;
	uint64_t first;
	uint64_t length;         /* payload bytes (for a truncated chunk: present) */
	const uint8_t *payload;
	bool truncated;          /* the file ended inside this chunk */
	uint64_t skipped;        /* bytes skipped to resynchronise before it */
};

struct tvt_reader {
	const uint8_t *data;
	uint64_t size;
	uint64_t pos;            /* offset of the next chunk header */
	uint64_t first_chunk;    /* offset of the first chunk */
	struct tvt_file_info info;
	char *machine;           /* owned copy, NUL terminated */
	void *map;               /* mmap of the file, or NULL */
	size_t map_len;
	bool resync;             /* the last header was bad: scan for the next */
	uint64_t skipped_total;  /* bytes skipped by resynchronisation */
	uint64_t released;       /* mapping bytes given back (tvt_reader_release) */
};

/*
 * tvt_reader_open - map `path` read-only and check its file header.
 * tvt_reader_open_mem - the same on caller memory (kept, not copied).
 * Errors: -TVH_ERR_IO (errno set), -TVH_ERR_NOMEM, -TVH_ERR_TRUNCATED
 * (shorter than its header), -TVH_ERR_MAGIC, -TVH_ERR_VERSION,
 * -TVH_ERR_HEADER (hdr_size or name length inconsistent).
 * On error nothing needs closing.
 */
int tvt_reader_open(struct tvt_reader *r, const char *path);
int tvt_reader_open_mem(struct tvt_reader *r, const void *data, uint64_t size);
void tvt_reader_close(struct tvt_reader *r);

/*
 * tvt_resolve_path - the trace file an argument names: arg itself, or
 * arg/trace.tvt when arg is a directory (a capture directory as the
 * receiver writes it: trace.tvt and meta.json).  *path is malloc'ed.
 * Errors: -TVH_ERR_IO (arg does not exist, errno), -TVH_ERR_NOT_FOUND
 * (a directory without trace.tvt), -TVH_ERR_NOMEM.
 */
#define TVT_CAPTURE_FILE "trace.tvt"
int tvt_resolve_path(const char *arg, char **path);

/*
 * tvt_reader_release - the caller is done with file bytes [0, upto) for
 * now: give their pages back (a mapped file only; touching them again
 * reads them from the file again).  Keeps the resident size of a long
 * sequential pass bounded.
 */
void tvt_reader_release(struct tvt_reader *r, uint64_t upto);

/* Back to the first chunk. */
void tvt_reader_rewind(struct tvt_reader *r);

/*
 * tvt_next_chunk - the next chunk.
 * Returns 1 with *c filled, 0 at the end of the file, or:
 *  -TVH_ERR_TRUNCATED  the file ends inside a chunk: *c holds what is
 *                      there (c->truncated, file_offset; payload and
 *                      length when the header was complete); then 0.
 *  -TVH_ERR_CRC        checksum mismatch: *c filled; skip the chunk.
 *  -TVH_ERR_MAGIC, -TVH_ERR_HEADER
 *                      no valid chunk header at c->file_offset; the next
 *                      call scans forward (8-byte steps) for the next
 *                      chunk whose header and CRC check out and reports
 *                      the bytes it skipped in c->skipped.
 * Unknown kinds are returned (length and CRC checked) for the caller to
 * skip.  A records chunk's length must be a multiple of 8 and a ring
 * chunk's at least sizeof(struct tv_trace_ring) (else -TVH_ERR_HEADER).
 */
int tvt_next_chunk(struct tvt_reader *r, struct tvt_chunk *c);

/* Writer: a FILE the caller opened ("wb"); the writer never closes it. */
struct tvt_writer {
	FILE *f;
	uint64_t offset;         /* bytes written */
	int error;               /* first error, sticky */
};

/*
 * tvt_writer_init - write the file header.
 * Errors: -TVH_ERR_INVALID (NULL, machine longer than TVT_MAX_NAME),
 * -TVH_ERR_IO.
 */
int tvt_writer_init(struct tvt_writer *w, FILE *f,
		    const struct tvt_file_info *info);

/*
 * tvt_write_chunkv - one chunk whose payload is the concatenation of
 * iov[0..iovcnt) (a ring's two halves need no copy).  tvt_write_chunk is
 * the one-buffer form.
 * Errors: -TVH_ERR_INVALID (unknown kind, payload > TVT_MAX_PAYLOAD, a
 * records payload not a multiple of 8, a ring payload of the wrong size),
 * -TVH_ERR_IO (also returned by every later call).
 */
int tvt_write_chunkv(struct tvt_writer *w, uint32_t cpu, uint16_t kind,
		     uint32_t flags, uint64_t first, const struct iovec *iov,
		     int iovcnt);
int tvt_write_chunk(struct tvt_writer *w, uint32_t cpu, uint16_t kind,
		    uint32_t flags, uint64_t first, const void *payload,
		    uint64_t len);

/* fflush; returns the sticky error or 0. */
int tvt_writer_finish(struct tvt_writer *w);

/*
 * Header encoders for writers that do their own I/O (the receiver):
 * tvt_encode_file_header fills out[TVT_FILE_HDR_SIZE] (the name follows
 * it, padded, written by the caller) and returns the total header size;
 * tvt_encode_chunk_header fills out[TVT_CHUNK_HDR_SIZE] including the
 * CRC over the header and the payload in iov.
 */
int tvt_encode_file_header(uint8_t *out, const struct tvt_file_info *info);
void tvt_encode_chunk_header(uint8_t *out, uint32_t cpu, uint16_t kind,
			     uint32_t flags, uint64_t first, uint64_t len,
			     const struct iovec *iov, int iovcnt);

/* CRC-32 (IEEE 802.3, reflected 0xEDB88320), zlib convention: start with 0. */
uint32_t tvt_crc32(uint32_t crc, const void *data, size_t len);

const char *tvt_kind_name(unsigned kind);

#endif /* TVH_TVT_H */
