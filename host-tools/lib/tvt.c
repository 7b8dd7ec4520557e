/* SPDX-License-Identifier: MIT */
/*
 * tvt.c - .tvt reader and writer (format in tvt.h and docs/TRACEFILE.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/le.h"
#include "host-tools/lib/tvt.h"
#include "net/proto.h"
#include "vmm/trace/format.h"

#define ALIGN8(n) (((n) + 7u) & ~(uint64_t)7u)

/* File header field offsets. */
enum {
	FH_MAGIC = 0, FH_VERSION = 8, FH_HDR_SIZE = 10, FH_FLAGS = 12,
	FH_SESSION = 16, FH_CREATED = 24, FH_TRACE_VERSION = 32,
	FH_NAME_LEN = 36,
};

/* Chunk header field offsets. */
enum {
	CH_MAGIC = 0, CH_CPU = 4, CH_KIND = 8, CH_HDR_SIZE = 10, CH_FLAGS = 12,
	CH_FIRST = 16, CH_LENGTH = 24, CH_CRC = 32,
};

static const uint8_t zero_pad[8];

/* The protocol's CRC-32 (same polynomial and convention), 8 bytes a step. */
uint32_t tvt_crc32(uint32_t crc, const void *data, size_t len)
{
	return proto_crc32(crc, data, len);
}

const char *tvt_kind_name(unsigned kind)
{
	switch (kind) {
	case TVT_KIND_RECORDS:
		return "records";
	case TVT_KIND_PT:
		return "pt";
	case TVT_KIND_RING:
		return "ring";
	default:
		return "unknown";
	}
}

/* ---- reader ------------------------------------------------------------ */

static int parse_file_header(struct tvt_reader *r)
{
	const uint8_t *p = r->data;
	uint16_t hdr_size, name_len;

	if (r->size < TVT_FILE_HDR_SIZE)
		return r->size >= 8 && memcmp(p, TVT_MAGIC, 8) ?
			-TVH_ERR_MAGIC : -TVH_ERR_TRUNCATED;
	if (memcmp(p + FH_MAGIC, TVT_MAGIC, 8))
		return -TVH_ERR_MAGIC;
	r->info.version = tvh_le16(p + FH_VERSION);
	if (r->info.version != TVT_VERSION)
		return -TVH_ERR_VERSION;
	hdr_size = tvh_le16(p + FH_HDR_SIZE);
	name_len = tvh_le16(p + FH_NAME_LEN);
	if (name_len > TVT_MAX_NAME || (hdr_size & 7) ||
	    hdr_size < TVT_FILE_HDR_SIZE + ALIGN8(name_len))
		return -TVH_ERR_HEADER;
	if (hdr_size > r->size)
		return -TVH_ERR_TRUNCATED;
	r->info.flags = tvh_le32(p + FH_FLAGS);
	r->info.session_id = tvh_le64(p + FH_SESSION);
	r->info.created_unix_ns = tvh_le64(p + FH_CREATED);
	r->info.trace_version = tvh_le32(p + FH_TRACE_VERSION);
	r->machine = malloc((size_t)name_len + 1);
	if (!r->machine)
		return -TVH_ERR_NOMEM;
	memcpy(r->machine, p + TVT_FILE_HDR_SIZE, name_len);
	r->machine[name_len] = 0;
	r->info.machine = r->machine;
	r->first_chunk = hdr_size;
	r->pos = hdr_size;
	return 0;
}

int tvt_reader_open_mem(struct tvt_reader *r, const void *data, uint64_t size)
{
	int err;

	memset(r, 0, sizeof(*r));
	if (!data && size)
		return -TVH_ERR_INVALID;
	r->data = data;
	r->size = size;
	err = parse_file_header(r);
	if (err) {
		free(r->machine);
		memset(r, 0, sizeof(*r));
	}
	return err;
}

int tvt_reader_open(struct tvt_reader *r, const char *path)
{
	struct stat st;
	void *map = NULL;
	int fd, err, saved;

	memset(r, 0, sizeof(*r));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -TVH_ERR_IO;
	if (fstat(fd, &st) < 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return -TVH_ERR_IO;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		return -TVH_ERR_IO;
	}
	if (st.st_size > 0) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			saved = errno;
			close(fd);
			errno = saved;
			return -TVH_ERR_IO;
		}
		madvise(map, (size_t)st.st_size, MADV_SEQUENTIAL);
	}
	close(fd);
	err = tvt_reader_open_mem(r, map, (uint64_t)st.st_size);
	if (err) {
		if (map)
			munmap(map, (size_t)st.st_size);
		return err;
	}
	r->map = map;
	r->map_len = (size_t)st.st_size;
	return 0;
}

int tvt_resolve_path(const char *arg, char **path)
{
	struct stat st;
	size_t n = strlen(arg);

	*path = NULL;
	if (stat(arg, &st))
		return -TVH_ERR_IO;
	if (!S_ISDIR(st.st_mode)) {
		*path = strdup(arg);
		return *path ? 0 : -TVH_ERR_NOMEM;
	}
	*path = malloc(n + 1 + sizeof(TVT_CAPTURE_FILE));
	if (!*path)
		return -TVH_ERR_NOMEM;
	snprintf(*path, n + 1 + sizeof(TVT_CAPTURE_FILE), "%s%s%s", arg,
		 n && arg[n - 1] == '/' ? "" : "/", TVT_CAPTURE_FILE);
	if (stat(*path, &st)) {
		free(*path);
		*path = NULL;
		return -TVH_ERR_NOT_FOUND;
	}
	return 0;
}

void tvt_reader_release(struct tvt_reader *r, uint64_t upto)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t end;

	if (!r->map || page <= 0)
		return;
	end = upto < r->map_len ? upto : r->map_len;
	end &= ~((uint64_t)page - 1);
	if (end <= r->released)
		return;
	/* A private read-only file mapping: dropped pages fault back in from the file. */
	madvise((uint8_t *)r->map + r->released, (size_t)(end - r->released),
		MADV_DONTNEED);
	r->released = end;
}

void tvt_reader_close(struct tvt_reader *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	free(r->machine);
	memset(r, 0, sizeof(*r));
}

void tvt_reader_rewind(struct tvt_reader *r)
{
	r->pos = r->first_chunk;
	r->resync = false;
	r->skipped_total = 0;
	r->released = 0;
}

/*
 * Decode and check the chunk header at off (which has >= header bytes).
 * Returns 0, -TVH_ERR_MAGIC, -TVH_ERR_HEADER.
 */
static int parse_chunk_header(const uint8_t *p, uint64_t off, struct tvt_chunk *c)
{
	memset(c, 0, sizeof(*c));
	c->file_offset = off;
	if (tvh_le32(p + CH_MAGIC) != TVT_CHUNK_MAGIC)
		return -TVH_ERR_MAGIC;
	c->cpu = tvh_le32(p + CH_CPU);
	c->kind = tvh_le16(p + CH_KIND);
	c->flags = tvh_le32(p + CH_FLAGS);
	c->first = tvh_le64(p + CH_FIRST);
	c->length = tvh_le64(p + CH_LENGTH);
	if (tvh_le16(p + CH_HDR_SIZE) != TVT_CHUNK_HDR_SIZE ||
	    c->length > TVT_MAX_PAYLOAD)
		return -TVH_ERR_HEADER;
	if (c->kind == TVT_KIND_RECORDS && (c->length & 7))
		return -TVH_ERR_HEADER;
	if (c->kind == TVT_KIND_RING && c->length < sizeof(struct tv_trace_ring))
		return -TVH_ERR_HEADER;
	return 0;
}

static uint32_t chunk_crc(const uint8_t *hdr, const uint8_t *payload, uint64_t len)
{
	uint8_t h[TVT_CHUNK_HDR_SIZE];
	uint32_t crc;

	memcpy(h, hdr, sizeof(h));
	tvh_put_le32(h + CH_CRC, 0);
	crc = tvt_crc32(0, h, sizeof(h));
	return tvt_crc32(crc, payload, (size_t)len);
}

/* A complete chunk at off with a good header and CRC? */
static bool chunk_ok_at(const struct tvt_reader *r, uint64_t off)
{
	struct tvt_chunk c;
	const uint8_t *p = r->data + off;

	if (r->size - off < TVT_CHUNK_HDR_SIZE || parse_chunk_header(p, off, &c))
		return false;
	if (c.length > r->size - off - TVT_CHUNK_HDR_SIZE)
		return false;
	return chunk_crc(p, p + TVT_CHUNK_HDR_SIZE, c.length) == tvh_le32(p + CH_CRC);
}

int tvt_next_chunk(struct tvt_reader *r, struct tvt_chunk *c)
{
	uint64_t off = r->pos, skipped = 0, avail;
	const uint8_t *p;
	int err;

	memset(c, 0, sizeof(*c));
	if (r->resync) {
		r->resync = false;
		while (off < r->size && !chunk_ok_at(r, off)) {
			off += 8;
			skipped += 8;
		}
		if (off >= r->size) {
			skipped -= off - r->size;
			r->skipped_total += skipped;
			r->pos = r->size;
			return 0;
		}
		r->skipped_total += skipped;
	}
	if (off >= r->size)
		return 0;
	avail = r->size - off;
	p = r->data + off;
	if (avail < TVT_CHUNK_HDR_SIZE) {
		c->file_offset = off;
		c->truncated = true;
		c->skipped = skipped;
		r->pos = r->size;
		return -TVH_ERR_TRUNCATED;
	}
	err = parse_chunk_header(p, off, c);
	c->skipped = skipped;
	if (err) {
		r->pos = off + 8;
		r->resync = true;
		return err;
	}
	c->payload = p + TVT_CHUNK_HDR_SIZE;
	if (c->length > avail - TVT_CHUNK_HDR_SIZE) {
		c->length = avail - TVT_CHUNK_HDR_SIZE;
		c->truncated = true;
		r->pos = r->size;
		return -TVH_ERR_TRUNCATED;
	}
	r->pos = off + TVT_CHUNK_HDR_SIZE + ALIGN8(c->length);
	if (r->pos > r->size)
		r->pos = r->size;  /* missing final padding is harmless */
	if (chunk_crc(p, c->payload, c->length) != tvh_le32(p + CH_CRC)) {
		/* The length may be the damaged field: find the next good chunk. */
		r->pos = off + 8;
		r->resync = true;
		return -TVH_ERR_CRC;
	}
	return 1;
}

/* ---- writer ------------------------------------------------------------ */

int tvt_encode_file_header(uint8_t *out, const struct tvt_file_info *info)
{
	size_t name_len = info->machine ? strlen(info->machine) : 0;

	if (name_len > TVT_MAX_NAME)
		return -TVH_ERR_INVALID;
	memset(out, 0, TVT_FILE_HDR_SIZE);
	memcpy(out + FH_MAGIC, TVT_MAGIC, 8);
	tvh_put_le16(out + FH_VERSION, TVT_VERSION);
	tvh_put_le16(out + FH_HDR_SIZE, (uint16_t)(TVT_FILE_HDR_SIZE + ALIGN8(name_len)));
	tvh_put_le32(out + FH_FLAGS, info->flags);
	tvh_put_le64(out + FH_SESSION, info->session_id);
	tvh_put_le64(out + FH_CREATED, info->created_unix_ns);
	tvh_put_le32(out + FH_TRACE_VERSION, info->trace_version);
	tvh_put_le16(out + FH_NAME_LEN, (uint16_t)name_len);
	return (int)(TVT_FILE_HDR_SIZE + ALIGN8(name_len));
}

void tvt_encode_chunk_header(uint8_t *out, uint32_t cpu, uint16_t kind,
			     uint32_t flags, uint64_t first, uint64_t len,
			     const struct iovec *iov, int iovcnt)
{
	uint32_t crc;

	memset(out, 0, TVT_CHUNK_HDR_SIZE);
	tvh_put_le32(out + CH_MAGIC, TVT_CHUNK_MAGIC);
	tvh_put_le32(out + CH_CPU, cpu);
	tvh_put_le16(out + CH_KIND, kind);
	tvh_put_le16(out + CH_HDR_SIZE, TVT_CHUNK_HDR_SIZE);
	tvh_put_le32(out + CH_FLAGS, flags);
	tvh_put_le64(out + CH_FIRST, first);
	tvh_put_le64(out + CH_LENGTH, len);
	crc = tvt_crc32(0, out, TVT_CHUNK_HDR_SIZE);
	for (int i = 0; i < iovcnt; i++)
		crc = tvt_crc32(crc, iov[i].iov_base, iov[i].iov_len);
	tvh_put_le32(out + CH_CRC, crc);
}

static int w_put(struct tvt_writer *w, const void *p, size_t n)
{
	if (w->error)
		return w->error;
	if (n && fwrite(p, 1, n, w->f) != n) {
		w->error = -TVH_ERR_IO;
		return w->error;
	}
	w->offset += n;
	return 0;
}

int tvt_writer_init(struct tvt_writer *w, FILE *f, const struct tvt_file_info *info)
{
	uint8_t hdr[TVT_FILE_HDR_SIZE];
	size_t name_len;
	int size, err;

	if (!w || !f || !info)
		return -TVH_ERR_INVALID;
	memset(w, 0, sizeof(*w));
	w->f = f;
	size = tvt_encode_file_header(hdr, info);
	if (size < 0)
		return size;
	name_len = info->machine ? strlen(info->machine) : 0;
	err = w_put(w, hdr, sizeof(hdr));
	if (!err)
		err = w_put(w, info->machine, name_len);
	if (!err)
		err = w_put(w, zero_pad, (size_t)(ALIGN8(name_len) - name_len));
	return err;
}

int tvt_write_chunkv(struct tvt_writer *w, uint32_t cpu, uint16_t kind,
		     uint32_t flags, uint64_t first, const struct iovec *iov,
		     int iovcnt)
{
	uint8_t hdr[TVT_CHUNK_HDR_SIZE];
	uint64_t len = 0;
	int err;

	if (!w || iovcnt < 0 || (iovcnt && !iov))
		return -TVH_ERR_INVALID;
	if (w->error)
		return w->error;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len && !iov[i].iov_base)
			return -TVH_ERR_INVALID;
		len += iov[i].iov_len;
	}
	if (len > TVT_MAX_PAYLOAD)
		return -TVH_ERR_INVALID;
	switch (kind) {
	case TVT_KIND_RECORDS:
		if (len & 7)
			return -TVH_ERR_INVALID;
		break;
	case TVT_KIND_PT:
		break;
	case TVT_KIND_RING:
		if (len != sizeof(struct tv_trace_ring))
			return -TVH_ERR_INVALID;
		break;
	default:
		return -TVH_ERR_INVALID;
	}
	tvt_encode_chunk_header(hdr, cpu, kind, flags, first, len, iov, iovcnt);
	err = w_put(w, hdr, sizeof(hdr));
	for (int i = 0; !err && i < iovcnt; i++)
		err = w_put(w, iov[i].iov_base, iov[i].iov_len);
	if (!err)
		err = w_put(w, zero_pad, (size_t)(ALIGN8(len) - len));
	return err;
}

int tvt_write_chunk(struct tvt_writer *w, uint32_t cpu, uint16_t kind,
		    uint32_t flags, uint64_t first, const void *payload,
		    uint64_t len)
{
	struct iovec iov = { (void *)payload, (size_t)len };

	return tvt_write_chunkv(w, cpu, kind, flags, first, &iov, len ? 1 : 0);
}

int tvt_writer_finish(struct tvt_writer *w)
{
	if (!w)
		return -TVH_ERR_INVALID;
	if (!w->error && fflush(w->f))
		w->error = -TVH_ERR_IO;
	return w->error;
}
