/* SPDX-License-Identifier: MIT */
/*
 * helpers.c - see helpers.h.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "host-tools/lib/le.h"
#include "tests/host/helpers.h"

static void rb_reserve(struct recbuf *b, size_t n)
{
	if (b->len + n <= b->cap)
		return;
	b->cap = (b->len + n) * 2 + 64;
	b->p = realloc(b->p, b->cap);
	assert_non_null(b->p);
}

void rb_free(struct recbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void rb_raw(struct recbuf *b, const void *data, size_t n)
{
	rb_reserve(b, n);
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

void rb_rec(struct recbuf *b, uint8_t type, uint8_t info, uint32_t aux,
	    const uint64_t *fields, unsigned nfields, const char *text, size_t tlen)
{
	size_t size = 8 + 8 * (size_t)nfields + tlen;
	size_t padded = (size + 7) & ~(size_t)7;
	uint8_t *p;

	rb_reserve(b, padded);
	p = b->p + b->len;
	memset(p, 0, padded);
	p[0] = type;
	p[1] = info;
	tvh_put_le16(p + 2, (uint16_t)padded);
	tvh_put_le32(p + 4, aux);
	for (unsigned i = 0; i < nfields; i++)
		tvh_put_le64(p + 8 + 8 * i, fields[i]);
	if (tlen)
		memcpy(p + 8 + 8 * nfields, text, tlen);
	b->len += padded;
	b->count++;
}

void rb_branch(struct recbuf *b, uint8_t kind, uint64_t from, uint64_t to)
{
	uint64_t f[] = { from, to };

	rb_rec(b, TV_REC_BRANCH, kind, 0, f, 2, NULL, 0);
}

void rb_branch_tsc(struct recbuf *b, uint8_t kind, uint64_t from, uint64_t to,
		   uint64_t tsc, uint32_t more_flags)
{
	uint64_t f[] = { from, to, tsc };

	rb_rec(b, TV_REC_BRANCH, kind, TV_BRF_TSC | more_flags, f, 3, NULL, 0);
}

void rb_compact(struct recbuf *b, uint8_t kind, uint32_t off, uint64_t to)
{
	rb_rec(b, TV_REC_BRANCH_COMPACT, kind, off, &to, 1, NULL, 0);
}

void rb_lbr(struct recbuf *b, uint8_t kind, uint64_t from, uint64_t to, uint64_t info)
{
	uint64_t f[] = { from, to, info };

	rb_rec(b, TV_REC_LBR, kind, 0, f, 3, NULL, 0);
}

void rb_cr3(struct recbuf *b, uint64_t tsc, uint64_t cr3, uint64_t rip)
{
	uint64_t f[] = { tsc, cr3, rip };

	rb_rec(b, TV_REC_CR3, 0, 0, f, 3, NULL, 0);
}

void rb_startstop(struct recbuf *b, uint8_t type, uint32_t trigger, uint64_t tsc,
		  uint64_t rip)
{
	uint64_t f[] = { tsc, rip };

	rb_rec(b, type, 0, trigger, f, 2, NULL, 0);
}

void rb_time(struct recbuf *b, uint64_t tsc, uint64_t hz, uint64_t unix_ns)
{
	uint64_t f[] = { tsc, hz, unix_ns };

	rb_rec(b, TV_REC_TIME, 0, 0, f, 3, NULL, 0);
}

void rb_text(struct recbuf *b, uint8_t type, uint8_t level, uint64_t tsc,
	     const char *text, size_t len)
{
	rb_rec(b, type, level, (uint32_t)len, &tsc, 1, text, len);
}

void rb_image(struct recbuf *b, uint8_t kind, uint64_t tsc, uint64_t base,
	      uint64_t size, const char *name)
{
	uint64_t f[] = { tsc, base, size };

	rb_rec(b, TV_REC_IMAGE, kind, (uint32_t)strlen(name), f, 3, name, strlen(name));
}

void rb_lost(struct recbuf *b, uint64_t tsc, uint64_t records)
{
	uint64_t f[] = { tsc, records };

	rb_rec(b, TV_REC_LOST, 0, 0, f, 2, NULL, 0);
}

void rb_marker(struct recbuf *b, uint64_t tsc, uint64_t value, const char *label,
	       size_t len)
{
	uint64_t f[] = { tsc, value };

	rb_rec(b, TV_REC_MARKER, 0, (uint32_t)len, f, 2, label, len);
}

void rb_code(struct recbuf *b, uint8_t flags, uint64_t tsc, uint64_t gpa,
	     uint64_t linear, uint64_t cr3, uint64_t hash)
{
	struct tv_rec_code r;

	memset(&r, 0, sizeof(r));
	r.h.type = TV_REC_CODE;
	r.h.info = flags;
	r.h.size = sizeof(r);
	r.tsc = tsc;
	r.gpa = gpa;
	r.linear = linear;
	r.cr3 = cr3;
	r.hash = hash;
	rb_raw(b, &r, sizeof(r));
	b->count++;
}

void rb_chunk(struct recbuf *b, uint64_t hash, unsigned chunk, const uint8_t *page)
{
	struct tv_rec_code_data r;

	memset(&r, 0, sizeof(r));
	r.h.type = TV_REC_CODE_DATA;
	r.h.size = sizeof(r);
	r.h.aux = chunk;
	r.hash = hash;
	memcpy(r.bytes, page + (size_t)chunk * TV_CODE_CHUNK, TV_CODE_CHUNK);
	rb_raw(b, &r, sizeof(r));
	b->count++;
}

/* A snapshot as the hypervisor writes it: CODE, and the chunks when new. */
void rb_snap(struct recbuf *b, uint8_t flags, uint64_t tsc, uint64_t gpa,
	     uint64_t linear, uint64_t cr3, const uint8_t *page)
{
	uint64_t h = tv_code_hash(page);

	rb_code(b, flags | TV_CODEF_LINEAR, tsc, gpa, linear, cr3, h);
	if (flags & TV_CODEF_NEW)
		for (unsigned k = 0; k < TV_CODE_CHUNKS; k++)
			rb_chunk(b, h, k, page);
}

void rb_pt_sync(struct recbuf *b, uint64_t tsc, uint64_t off, uint64_t lost)
{
	uint64_t f[] = { tsc, off, lost };

	rb_rec(b, TV_REC_PT_SYNC, 0, 0, f, 3, NULL, 0);
}

void rb_pad(struct recbuf *b, uint16_t size)
{
	uint8_t *p;

	rb_reserve(b, size);
	p = b->p + b->len;
	memset(p, 0, size);
	tvh_put_le16(p + 2, size);
	b->len += size;
	b->count++;
}

void th_ring(uint8_t out[128], uint32_t cpu, uint32_t source, uint32_t flags,
	     uint64_t next_seq, uint64_t lost_records, uint64_t tsc_hz)
{
	memset(out, 0, 128);
	tvh_put_le32(out + 0, TV_TRACE_MAGIC);
	tvh_put_le16(out + 4, TV_TRACE_VERSION);
	tvh_put_le16(out + 6, 128);
	tvh_put_le32(out + 8, cpu);
	tvh_put_le32(out + 16, source);
	tvh_put_le32(out + 20, flags);
	tvh_put_le64(out + 24, 1 << 20);
	tvh_put_le64(out + 56, next_seq);
	tvh_put_le64(out + 64, lost_records);
	tvh_put_le64(out + 80, tsc_hz);
}

/* ---- scratch directory ---------------------------------------------------- */

static char scratch[256];

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static void scratch_cleanup(void)
{
	if (scratch[0] && !getenv("TVH_TEST_KEEP"))
		nftw(scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

const char *th_dir(void)
{
	if (!scratch[0]) {
		const char *tmp = getenv("TMPDIR");

		snprintf(scratch, sizeof(scratch), "%s/tvh-test-XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		assert_non_null(mkdtemp(scratch));
		atexit(scratch_cleanup);
	}
	return scratch;
}

char *th_path(const char *name)
{
	char *p;

	assert_true(asprintf(&p, "%s/%s", th_dir(), name) > 0);
	return p;
}

/* ---- .tvt in memory ------------------------------------------------------- */

void th_tvt_begin(struct th_tvt *t, const char *machine, uint64_t session)
{
	struct tvt_file_info info = {
		.session_id = session, .trace_version = TV_TRACE_VERSION,
		.created_unix_ns = 1700000000123456789ull, .machine = machine,
	};

	memset(t, 0, sizeof(*t));
	t->f = open_memstream(&t->buf, &t->len);
	assert_non_null(t->f);
	assert_int_equal(tvt_writer_init(&t->w, t->f, &info), 0);
}

void th_tvt_chunk(struct th_tvt *t, uint32_t cpu, uint16_t kind, uint32_t flags,
		  uint64_t first, const void *payload, size_t len)
{
	assert_int_equal(tvt_write_chunk(&t->w, cpu, kind, flags, first, payload, len), 0);
}

void th_tvt_records(struct th_tvt *t, uint32_t cpu, uint64_t first,
		    const struct recbuf *b)
{
	th_tvt_chunk(t, cpu, TVT_KIND_RECORDS, 0, first, b->p, b->len);
}

void th_tvt_end(struct th_tvt *t)
{
	assert_int_equal(tvt_writer_finish(&t->w), 0);
	fclose(t->f);
	t->f = NULL;
}

void th_tvt_free(struct th_tvt *t)
{
	if (t->f)
		fclose(t->f);
	free(t->buf);
	memset(t, 0, sizeof(*t));
}

char *th_tvt_save(const struct th_tvt *t, const char *name)
{
	char *p = th_path(name);

	th_write_file(p, t->buf, t->len);
	return p;
}

/* ---- files and processes ---------------------------------------------------- */

void th_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

void *th_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

char *th_compile(const char *name, const char *ext, const char *src,
		 const char *flags)
{
	const char *cc = getenv("TVH_TEST_CC");
	char *srcname, *srcpath, *out, *cmd, *err = NULL;
	int rc;

	assert_true(asprintf(&srcname, "%s.%s", name, ext) > 0);
	srcpath = th_path(srcname);
	out = th_path(name);
	th_write_file(srcpath, src, strlen(src));
	assert_true(asprintf(&cmd, "%s %s -o '%s' '%s'", cc && *cc ? cc : "gcc",
			     flags, out, srcpath) > 0);
	rc = th_run(cmd, NULL, &err);
	if (rc) {
		print_error("compile failed (%d): %s\n%s\n", rc, cmd, err ? err : "");
		free(out);
		out = NULL;
	}
	free(err);
	free(cmd);
	free(srcpath);
	free(srcname);
	return out;
}

uint64_t th_elf_sym(const char *path, const char *sym)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	bool found = false;
	uint64_t value = 0;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(d, (int)i, &s))
				continue;
			n = elf_strptr(elf, sh.sh_link, s.st_name);
			if (n && !strcmp(n, sym)) {
				value = s.st_value;
				found = true;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	if (!found)
		fail_msg("symbol %s not in %s", sym, path);
	return value;
}

int th_run(const char *cmd, char **out, char **err)
{
	char *o = th_path("run.stdout"), *e = th_path("run.stderr"), *full;
	int st;

	assert_true(asprintf(&full, "(%s) >'%s' 2>'%s' </dev/null", cmd, o, e) > 0);
	st = system(full);
	free(full);
	if (out)
		*out = th_read_file(o, NULL);
	if (err)
		*err = th_read_file(e, NULL);
	free(o);
	free(e);
	if (st == -1)
		return -1;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

const char *th_cli(void)
{
	static char path[4096];

	if (!path[0]) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
		char *slash;

		assert_true(n > 0);
		path[n] = 0;
		slash = strrchr(path, '/');
		assert_non_null(slash);
		strcpy(slash + 1, "tracevisor-asan");
		if (access(path, X_OK))
			fail_msg("%s missing: build it with the host-tool-tests target", path);
	}
	return path;
}

bool th_contains(const char *haystack, const char *needle)
{
	if (haystack && strstr(haystack, needle))
		return true;
	print_error("expected to find: %s\nin:\n%s\n", needle, haystack ? haystack : "(null)");
	return false;
}
