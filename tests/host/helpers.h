/* SPDX-License-Identifier: MIT */
/*
 * helpers.h - shared by the host-tools tests: building record streams
 * and .tvt files, a scratch directory, compiling tiny ELF files with the
 * host compiler, running the CLI.
 */
#ifndef TVH_TEST_HELPERS_H
#define TVH_TEST_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host-tools/lib/tvt.h"
#include "vmm/trace/format.h"

/* A growing buffer of records in the wire format (trace_format.h). */
struct recbuf {
	uint8_t *p;
	size_t len, cap;
	uint64_t count;          /* records appended */
};

void rb_free(struct recbuf *b);
void rb_raw(struct recbuf *b, const void *data, size_t n);
/* Header + up to three u64 fields + optional text; size computed. */
void rb_rec(struct recbuf *b, uint8_t type, uint8_t info, uint32_t aux,
	    const uint64_t *fields, unsigned nfields, const char *text, size_t tlen);
void rb_branch(struct recbuf *b, uint8_t kind, uint64_t from, uint64_t to);
void rb_branch_tsc(struct recbuf *b, uint8_t kind, uint64_t from, uint64_t to,
		   uint64_t tsc, uint32_t more_flags);
void rb_compact(struct recbuf *b, uint8_t kind, uint32_t off, uint64_t to);
void rb_lbr(struct recbuf *b, uint8_t kind, uint64_t from, uint64_t to, uint64_t info);
void rb_cr3(struct recbuf *b, uint64_t tsc, uint64_t cr3, uint64_t rip);
void rb_startstop(struct recbuf *b, uint8_t type, uint32_t trigger, uint64_t tsc,
		  uint64_t rip);
void rb_time(struct recbuf *b, uint64_t tsc, uint64_t hz, uint64_t unix_ns);
void rb_text(struct recbuf *b, uint8_t type, uint8_t level, uint64_t tsc,
	     const char *text, size_t len);
void rb_image(struct recbuf *b, uint8_t kind, uint64_t tsc, uint64_t base,
	      uint64_t size, const char *name);
void rb_lost(struct recbuf *b, uint64_t tsc, uint64_t records);
void rb_marker(struct recbuf *b, uint64_t tsc, uint64_t value, const char *label,
	       size_t len);
void rb_pt_sync(struct recbuf *b, uint64_t tsc, uint64_t off, uint64_t lost);
void rb_pad(struct recbuf *b, uint16_t size);
/* Code snapshots (TV_REC_CODE, TV_REC_CODE_DATA): the record, one chunk,
 * and a snapshot as the hypervisor writes it (CODE with TV_CODEF_LINEAR,
 * and the eight chunks when flags has TV_CODEF_NEW). */
void rb_code(struct recbuf *b, uint8_t flags, uint64_t tsc, uint64_t gpa, uint64_t linear,
	     uint64_t cr3, uint64_t hash);
void rb_chunk(struct recbuf *b, uint64_t hash, unsigned chunk, const uint8_t *page);
void rb_snap(struct recbuf *b, uint8_t flags, uint64_t tsc, uint64_t gpa, uint64_t linear,
	     uint64_t cr3, const uint8_t *page);

/* A ring header snapshot (little endian bytes) for TVT_KIND_RING. */
void th_ring(uint8_t out[128], uint32_t cpu, uint32_t source, uint32_t flags,
	     uint64_t next_seq, uint64_t lost_records, uint64_t tsc_hz);

/* The scratch directory (created once, removed at exit) and a path in it. */
const char *th_dir(void);
char *th_path(const char *name);        /* malloc'ed */

/* In-memory .tvt writing: open_memstream underneath. */
struct th_tvt {
	char *buf;
	size_t len;
	void *f;                 /* FILE * */
	struct tvt_writer w;
};
void th_tvt_begin(struct th_tvt *t, const char *machine, uint64_t session);
void th_tvt_chunk(struct th_tvt *t, uint32_t cpu, uint16_t kind, uint32_t flags,
		  uint64_t first, const void *payload, size_t len);
void th_tvt_records(struct th_tvt *t, uint32_t cpu, uint64_t first,
		    const struct recbuf *b);
/* Finishes and returns the bytes (t->buf, t->len); free with th_tvt_free. */
void th_tvt_end(struct th_tvt *t);
void th_tvt_free(struct th_tvt *t);
/* Writes t's bytes to a file in th_dir(); returns its malloc'ed path. */
char *th_tvt_save(const struct th_tvt *t, const char *name);

/* Files. */
void th_write_file(const char *path, const void *data, size_t len);
void *th_read_file(const char *path, size_t *len);   /* NUL appended */

/*
 * th_compile - write src to th_dir()/NAME.EXT and run
 * "$TVH_TEST_CC (default gcc) FLAGS -o th_dir()/NAME SRC".  Returns the
 * output path (malloc'ed) or NULL when the compiler failed.
 */
char *th_compile(const char *name, const char *ext, const char *src,
		 const char *flags);

/* The value of symbol `sym` in an ELF file (any symbol table); aborts the test if missing. */
uint64_t th_elf_sym(const char *path, const char *sym);

/*
 * th_run - run a shell command line; stdout and stderr go to files whose
 * contents are returned (malloc'ed, NUL terminated; pass NULL to ignore).
 * Returns the exit status (128 + signal when killed).
 */
int th_run(const char *cmd, char **out, char **err);

/* Absolute path of the sanitized CLI built next to the test binary. */
const char *th_cli(void);

/* Whether haystack contains needle (for output checks). */
bool th_contains(const char *haystack, const char *needle);

#endif /* TVH_TEST_HELPERS_H */
