/* SPDX-License-Identifier: MIT */
/*
 * test_host_kallsyms_img.c - a kernel image's own symbol table
 * (kallsyms_img.c): synthetic images this test lays out as
 * scripts/kallsyms.c does (Linux 6.1, 6.2/6.3 with 3-byte seqs_of_names,
 * 6.4+), token-compressed, raw and as ELF with a segment at an odd file
 * offset; every symbol decoded back; the struct tvh_ksyms it gives; and
 * malformed, truncated and randomly damaged tables: an error, no crash.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/kallsyms_img.h"
#include "host-tools/lib/ksyms.h"

#define KBASE 0xffffffff81000000ull
#define NGEN 600                 /* generated symbols: 3 markers */
#define LONG_NAME_LEN 300        /* compressed > 127 bytes: a 2-byte length */

enum layout { L61, L62, L64 };

struct tsym {
	uint64_t addr;
	char type;
	char name[TVH_KSYM_NAME_MAX + 1];
};

struct opts {
	enum layout layout;
	bool abs_percpu;
	bool elf;
	size_t seg_off;          /* ELF: the segment's file offset */
};

/* Where the builder put each table (file offsets), for damaging them. */
struct where {
	size_t offsets, relbase, num_syms, names, names_end, markers, seqs,
	       token_table, token_index, end;
};

static struct tsym *syms;
static uint32_t nsyms;

/* ---- the symbols ------------------------------------------------------------ */

static void add(uint64_t a, char t, const char *n)
{
	syms[nsyms].addr = a;
	syms[nsyms].type = t;
	snprintf(syms[nsyms].name, sizeof(syms[nsyms].name), "%s", n);
	nsyms++;
}

/* Sorted by address, as scripts/kallsyms.c emits them. */
static void make_syms(bool percpu)
{
	static const char types[] = "TtDdbBrR";
	char n[TVH_KSYM_NAME_MAX + 1];

	syms = calloc(NGEN + 16, sizeof(*syms));
	nsyms = 0;
	if (percpu) {
		/* Per-CPU variables: type 'A', offsets from 0 (absolute). */
		add(0, 'A', "fixed_percpu_data");
		add(0x1000, 'A', "cpu_debug_store");
	}
	add(KBASE, 'T', "_text");
	add(KBASE, 'T', "startup_64");
	add(KBASE + 0x70, 'T', "secondary_startup_64");
	add(KBASE + 0xfb980, 't', "do_idle");
	for (unsigned i = 0; i < NGEN; i++) {
		snprintf(n, sizeof(n), "sym_%04u_init", i);
		add(KBASE + 0x100000 + i * 0x40ull, types[i % 8], n);
	}
	memset(n, 'q', LONG_NAME_LEN);
	n[LONG_NAME_LEN] = 0;
	add(KBASE + 0x200000, 't', n);
	add(KBASE + 0x2079e46, 'T', "start_kernel");
	add(KBASE + 0x2100000, 'T', "_etext");
	add(KBASE + 0x3000000, 'B', "_end");
}

/* ---- the tables ------------------------------------------------------------- */

static const char *const multi[] = {
	"start", "_kernel", "do_", "init", "sym_", "Tsym_", "tsym_", "__",
	"secondary", "_64", "qqqq", "percpu", NULL,
};

static char tokens[256][16];

static void make_tokens(void)
{
	memset(tokens, 0, sizeof(tokens));
	for (int ch = 0x21; ch < 0x7f; ch++)
		tokens[ch][0] = (char)ch;
	for (int i = 0; multi[i]; i++)
		snprintf(tokens[0x80 + i], sizeof(tokens[0]), "%s", multi[i]);
}

/* Greedy longest-token compression of type + name into out; its length. */
static size_t compress(const struct tsym *s, uint8_t *out)
{
	char full[TVH_KSYM_NAME_MAX + 2];
	size_t n = 0, len;

	snprintf(full, sizeof(full), "%c%s", s->type, s->name);
	len = strlen(full);
	for (size_t p = 0; p < len;) {
		int best = -1;
		size_t bl = 0;

		for (int c = 0; c < 256; c++) {
			size_t l = strlen(tokens[c]);

			if (l > bl && l <= len - p && !memcmp(full + p, tokens[c], l)) {
				best = c;
				bl = l;
			}
		}
		assert_true(best >= 0);
		out[n++] = (uint8_t)best;
		p += bl;
	}
	return n;
}

struct buf {
	uint8_t *b;
	size_t len, cap;
	size_t base;             /* file offset of the segment start */
};

static void put(struct buf *b, const void *p, size_t n)
{
	assert_true(b->len + n <= b->cap);
	memcpy(b->b + b->len, p, n);
	b->len += n;
}

static void put32(struct buf *b, uint32_t v)
{
	uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
			 (uint8_t)(v >> 24) };
	put(b, x, 4);
}

static void put64(struct buf *b, uint64_t v)
{
	put32(b, (uint32_t)v);
	put32(b, (uint32_t)(v >> 32));
}

/* .balign 8 of the address: the segment starts 8-aligned. */
static void align8(struct buf *b)
{
	while ((b->len - b->base) & 7)
		b->b[b->len++] = 0;
}

static void emit_offsets(struct buf *b, const struct opts *o, uint64_t rb,
			 struct where *w)
{
	align8(b);
	w->offsets = b->len;
	for (uint32_t i = 0; i < nsyms; i++) {
		int64_t v;

		if (o->abs_percpu && syms[i].type == 'A')
			v = (int64_t)syms[i].addr;
		else if (o->abs_percpu)
			v = (int64_t)(rb - syms[i].addr) - 1;
		else
			v = (int64_t)(syms[i].addr - rb);
		put32(b, (uint32_t)v);
	}
	align8(b);
	w->relbase = b->len;
	put64(b, rb);
}

static void emit_names(struct buf *b, struct where *w)
{
	uint32_t *markers = calloc((nsyms + 255) / 256, 4);
	uint8_t code[TVH_KSYM_NAME_MAX + 2];

	align8(b);
	w->num_syms = b->len;
	put32(b, nsyms);
	align8(b);
	w->names = b->len;
	for (uint32_t i = 0; i < nsyms; i++) {
		size_t n = compress(&syms[i], code);

		if ((i & 0xff) == 0)
			markers[i >> 8] = (uint32_t)(b->len - w->names);
		if (n <= 0x7f) {
			uint8_t l = (uint8_t)n;

			put(b, &l, 1);
		} else {
			uint8_t l[2] = { (uint8_t)((n & 0x7f) | 0x80), (uint8_t)(n >> 7) };

			put(b, l, 2);
		}
		put(b, code, n);
	}
	w->names_end = b->len;
	align8(b);
	w->markers = b->len;
	for (uint32_t i = 0; i < (nsyms + 255) / 256; i++)
		put32(b, markers[i]);
	free(markers);
}

/* The symbols' indices in name order (any permutation is what is checked). */
static void emit_seqs(struct buf *b, bool three, struct where *w)
{
	align8(b);
	w->seqs = b->len;
	for (uint32_t i = 0; i < nsyms; i++) {
		uint32_t s = nsyms - 1 - i;

		if (three) {
			uint8_t x[3] = { (uint8_t)(s >> 16), (uint8_t)(s >> 8), (uint8_t)s };

			put(b, x, 3);
		} else {
			put32(b, s);
		}
	}
}

static void emit_tokens(struct buf *b, struct where *w)
{
	uint16_t idx[256];

	align8(b);
	w->token_table = b->len;
	for (int i = 0; i < 256; i++) {
		idx[i] = (uint16_t)(b->len - w->token_table);
		put(b, tokens[i], strlen(tokens[i]) + 1);
	}
	align8(b);
	w->token_index = b->len;
	for (int i = 0; i < 256; i++) {
		uint8_t x[2] = { (uint8_t)idx[i], (uint8_t)(idx[i] >> 8) };

		put(b, x, 2);
	}
}

/* The image: junk, the tables in o's layout, junk.  Its length. */
static size_t build(uint8_t **out, const struct opts *o, struct where *w)
{
	struct buf b = { .cap = 1 << 20 };
	uint64_t rb = 0;

	memset(w, 0, sizeof(*w));
	make_tokens();
	b.b = calloc(1, b.cap);
	assert_non_null(b.b);
	if (o->elf) {
		b.len = o->seg_off;
		b.base = o->seg_off;
	}
	for (int i = 0; i < 100; i++)            /* some code before .rodata */
		b.b[b.len++] = (uint8_t)(0xc3 + i * 7);
	for (uint32_t i = 0; i < nsyms && !rb; i++)
		if (!(o->abs_percpu && syms[i].type == 'A'))
			rb = syms[i].addr;
	if (o->layout != L64)
		emit_offsets(&b, o, rb, w);
	emit_names(&b, w);
	if (o->layout == L62)
		emit_seqs(&b, true, w);
	emit_tokens(&b, w);
	if (o->layout == L64) {
		emit_offsets(&b, o, rb, w);
		emit_seqs(&b, false, w);
	}
	for (int i = 0; i < 64; i++)
		b.b[b.len++] = (uint8_t)(0x90 ^ i);
	w->end = b.len;
	if (o->elf) {
		uint8_t *e = b.b;
		uint64_t filesz = b.len - o->seg_off;

		memset(e, 0, 120);
		memcpy(e, "\177ELF\2\1\1", 7);
		e[16] = 2;                        /* ET_EXEC */
		e[18] = 62;                       /* EM_X86_64 */
		e[32] = 64;                       /* e_phoff */
		e[52] = 64;                       /* e_ehsize */
		e[54] = 56;                       /* e_phentsize */
		e[56] = 1;                        /* e_phnum */
		e[64] = 1;                        /* PT_LOAD */
		e[68] = 5;                        /* R E */
		for (int i = 0; i < 8; i++) {
			e[72 + i] = (uint8_t)((uint64_t)o->seg_off >> (8 * i));
			e[80 + i] = (uint8_t)(KBASE >> (8 * i));
			e[96 + i] = (uint8_t)(filesz >> (8 * i));
			e[104 + i] = (uint8_t)(0x4000000ull >> (8 * i));
		}
	}
	*out = b.b;
	return b.len;
}

/* ---- checks ----------------------------------------------------------------- */

static void decodes_all(const struct tvh_kallsyms_img *t)
{
	struct tvh_kallsyms_iter it;
	struct tvh_kallsyms_sym s;
	uint32_t i = 0;
	int r;

	tvh_kallsyms_iter_init(&it, t);
	while ((r = tvh_kallsyms_img_next(t, &it, &s)) > 0) {
		assert_true(i < nsyms);
		assert_string_equal(s.name, syms[i].name);
		assert_int_equal(s.type, syms[i].type);
		assert_int_equal(s.addr, syms[i].addr);
		i++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(i, nsyms);
}

static void finds(const struct opts *o, enum tvh_kallsyms_layout want)
{
	struct tvh_kallsyms_img t;
	struct where w;
	uint8_t *img;
	size_t len = build(&img, o, &w);

	assert_int_equal(tvh_kallsyms_img_find(&t, img, len), 0);
	assert_int_equal(t.num_syms, nsyms);
	assert_int_equal(t.layout, want);
	assert_int_equal(t.abs_percpu, o->abs_percpu);
	assert_true(t.uleb_len);
	assert_int_equal(t.names, w.names);
	assert_int_equal(t.markers, w.markers);
	assert_int_equal(t.token_table, w.token_table);
	assert_int_equal(t.offsets, w.offsets);
	assert_int_equal(t.relative_base, KBASE);
	decodes_all(&t);
	free(img);
}

static void test_layouts(void **state)
{
	(void)state;
	make_syms(true);
	finds(&(struct opts){ .layout = L61, .abs_percpu = true }, TVH_KALLSYMS_6_1);
	finds(&(struct opts){ .layout = L62, .abs_percpu = true }, TVH_KALLSYMS_6_2);
	finds(&(struct opts){ .layout = L64, .abs_percpu = true }, TVH_KALLSYMS_6_4);
	/* ELF, the segment at an odd file offset: alignment is of addresses. */
	finds(&(struct opts){ .layout = L61, .abs_percpu = true, .elf = true,
			      .seg_off = 0x7b }, TVH_KALLSYMS_6_1);
	finds(&(struct opts){ .layout = L62, .abs_percpu = true, .elf = true,
			      .seg_off = 0x7b }, TVH_KALLSYMS_6_2);
	finds(&(struct opts){ .layout = L64, .abs_percpu = true, .elf = true,
			      .seg_off = 0x1235 }, TVH_KALLSYMS_6_4);
	free(syms);
	/* No per-CPU symbols, plain relative offsets (ABSOLUTE_PERCPU=n). */
	make_syms(false);
	finds(&(struct opts){ .layout = L61 }, TVH_KALLSYMS_6_1);
	finds(&(struct opts){ .layout = L62, .elf = true, .seg_off = 0x78 },
	      TVH_KALLSYMS_6_2);
	finds(&(struct opts){ .layout = L64 }, TVH_KALLSYMS_6_4);
	free(syms);
}

/* As tvh_ksyms_parse of the /proc/kallsyms this kernel would print. */
static void test_ksyms(void **state)
{
	struct tvh_ksyms k, ref;
	struct where w;
	uint8_t *img;
	size_t len;
	const char *n, *m;
	uint64_t off;
	char *text = malloc(1 << 20), *p = text;
	int ret;

	(void)state;
	assert_non_null(text);
	make_syms(true);
	for (uint32_t i = 0; i < nsyms; i++)
		p += sprintf(p, "%016llx %c %s\n", (unsigned long long)syms[i].addr,
			     syms[i].type, syms[i].name);
	len = build(&img, &(struct opts){ .layout = L62, .abs_percpu = true,
					   .elf = true, .seg_off = 0x7b }, &w);
	tvh_ksyms_init(&k);
	tvh_ksyms_init(&ref);
	ret = tvh_ksyms_parse(&ref, text, (size_t)(p - text), TVH_KSYMS_KALLSYMS, "ref");
	assert_int_equal(ret, (int)ref.n);
	ret = tvh_ksyms_from_image(&k, img, len, "vmlinux");
	assert_int_equal(ret, (int)ref.n);
	assert_int_equal(k.n, ref.n);
	assert_int_equal(k.lower_half, 0);       /* 'A' per-CPU ones skipped */
	assert_int_equal(k.skipped_types, 2);
	assert_int_equal(k.aliases, 1);          /* _text = startup_64 */
	for (size_t i = 0; i < k.n; i++) {
		assert_int_equal(k.v[i].addr, ref.v[i].addr);
		assert_int_equal(k.v[i].type, ref.v[i].type);
		assert_string_equal(k.names + k.v[i].name, ref.names + ref.v[i].name);
	}
	assert_int_equal(k.text, KBASE);
	assert_int_equal(k.hi, KBASE + 0x3000000);
	assert_int_equal(tvh_ksyms_lookup(&k, KBASE + 0x2079e50, &n, &off, &m), 0);
	assert_string_equal(n, "start_kernel");
	assert_int_equal(off, 0xa);
	assert_int_equal(tvh_ksyms_lookup(&k, KBASE + 0xfb990, &n, &off, &m), 0);
	assert_string_equal(n, "do_idle");
	assert_int_equal(tvh_ksyms_addr_of(&k, "secondary_startup_64"), KBASE + 0x70);
	tvh_ksyms_free(&k);
	tvh_ksyms_free(&ref);
	free(text);
	free(img);
	free(syms);
}

/* tvh_ksyms_load_any: an image file read as one, a text file as text. */
static void test_load_any(void **state)
{
	char dir[] = "/tmp/tv-kallsyms-XXXXXX", path[64], map[64];
	struct tvh_ksyms k;
	struct where w;
	uint8_t *img;
	size_t len;
	FILE *f;

	(void)state;
	make_syms(true);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/vmlinux", dir);
	snprintf(map, sizeof(map), "%s/System.map", dir);
	len = build(&img, &(struct opts){ .layout = L61, .abs_percpu = true,
					   .elf = true, .seg_off = 0x100 }, &w);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(img, 1, len, f), len);
	fclose(f);
	f = fopen(map, "w");
	assert_non_null(f);
	fputs("ffffffff81000000 T _text\nffffffff81002000 T start_kernel\n", f);
	fclose(f);
	tvh_ksyms_init(&k);
	assert_true(tvh_ksyms_load_any(&k, path, TVH_KSYMS_SYSTEM_MAP) > 600);
	assert_int_equal(tvh_ksyms_addr_of(&k, "start_kernel"), KBASE + 0x2079e46);
	tvh_ksyms_free(&k);
	tvh_ksyms_init(&k);
	assert_int_equal(tvh_ksyms_load_any(&k, map, TVH_KSYMS_SYSTEM_MAP), 2);
	assert_int_equal(tvh_ksyms_addr_of(&k, "start_kernel"), KBASE + 0x2000);
	tvh_ksyms_free(&k);
	tvh_ksyms_init(&k);
	assert_int_equal(tvh_ksyms_load_any(&k, "/nonexistent/vmlinux",
					    TVH_KSYMS_SYSTEM_MAP), -TVH_ERR_IO);
	assert_non_null(strstr(k.error, "/nonexistent/vmlinux"));
	tvh_ksyms_free(&k);
	unlink(path);
	unlink(map);
	rmdir(dir);
	free(img);
	free(syms);
}

/* ---- damage ----------------------------------------------------------------- */

/* Found: every name decodes (damaged ones may differ from the originals). */
static int find_in(const uint8_t *img, size_t len, struct tvh_kallsyms_img *t)
{
	int r = tvh_kallsyms_img_find(t, img, len);

	if (r == 0) {
		struct tvh_kallsyms_iter it;
		struct tvh_kallsyms_sym s;
		uint32_t i = 0;

		tvh_kallsyms_iter_init(&it, t);
		while (tvh_kallsyms_img_next(t, &it, &s) > 0)
			i++;
		assert_int_equal(i, t->num_syms);
	} else {
		assert_true(t->error[0]);
	}
	return r;
}

/* Where code c's string starts in the token table. */
static size_t tok_pos(int c)
{
	size_t p = 0;

	for (int i = 0; i < c; i++)
		p += strlen(tokens[i]) + 1;
	return p;
}

static void damaged(uint8_t *img, size_t len, size_t at, uint8_t v,
		    const char *what)
{
	struct tvh_kallsyms_img t;
	uint8_t old = img[at];

	img[at] = v;
	if (tvh_kallsyms_img_find(&t, img, len) != -TVH_ERR_NOT_FOUND)
		fail_msg("%s: found anyway", what);
	assert_non_null(strstr(t.error, "no kallsyms table found"));
	img[at] = old;
}

static void test_malformed(void **state)
{
	struct tvh_kallsyms_img t;
	struct where w;
	uint8_t *img, *z;
	size_t len;
	uint32_t n;

	(void)state;
	make_syms(true);
	len = build(&img, &(struct opts){ .layout = L61, .abs_percpu = true }, &w);
	assert_int_equal(find_in(img, len, &t), 0);

	damaged(img, len, w.markers + 4, 0x77, "a marker off");
	damaged(img, len, w.num_syms, (uint8_t)(nsyms + 1), "num_syms + 1");
	damaged(img, len, w.num_syms, (uint8_t)(nsyms - 1), "num_syms - 1");
	damaged(img, len, w.names, 0, "a zero length");
	damaged(img, len, w.names + 1, 0x01, "a name using an empty token");
	damaged(img, len, w.token_index + 2 * 7, 0xff, "index not increasing");
	damaged(img, len, w.token_table + tok_pos(0x80), 0x01,
		"a control byte in the token table");
	/* Addresses out of order: the second kernel symbol below the first. */
	damaged(img, len, w.offsets + 4 * 4 + 3, 0x7f, "addresses unsorted");
	/* The relative base outside every segment (ELF only): see below. */

	/* Truncated anywhere: inside the index, the table, names, offsets. */
	{
		const size_t cuts[] = { w.token_index + 511, w.token_index + 256,
					w.token_table + 100, w.markers + 2, w.names + 3000,
					w.names, w.offsets + 40, 1, 0 };

		for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
			assert_int_equal(tvh_kallsyms_img_find(&t, img, cuts[i]),
					 -TVH_ERR_NOT_FOUND);
	}
	free(img);

	/* The relative base outside the ELF's segments. */
	len = build(&img, &(struct opts){ .layout = L61, .abs_percpu = true,
					   .elf = true, .seg_off = 0x80 }, &w);
	assert_int_equal(find_in(img, len, &t), 0);
	damaged(img, len, w.relbase + 4, 0x00, "relative base outside the segments");
	/* An ELF whose program headers run off the end. */
	img[39] = 0x7f;
	assert_int_equal(tvh_kallsyms_img_find(&t, img, len), -TVH_ERR_INVALID);
	assert_non_null(strstr(t.error, "program headers"));
	free(img);

	/* Nothing at all, zeros, a bzImage. */
	assert_int_equal(tvh_kallsyms_img_find(&t, NULL, 0), -TVH_ERR_NOT_FOUND);
	z = calloc(1, 1 << 18);
	assert_int_equal(tvh_kallsyms_img_find(&t, z, 1 << 18), -TVH_ERR_NOT_FOUND);
	/* 256 empty tokens (all zeros before an index 0, 1, 2, ...): refused. */
	for (n = 0; n < 256; n++) {
		z[4096 + 2 * n] = (uint8_t)n;
		z[4096 + 2 * n + 1] = 0;
	}
	assert_int_equal(tvh_kallsyms_img_find(&t, z, 1 << 18), -TVH_ERR_NOT_FOUND);
	z[0x1fe] = 0x55;
	z[0x1ff] = 0xaa;
	memcpy(z + 0x202, "HdrS", 4);
	assert_int_equal(tvh_kallsyms_img_find(&t, z, 1 << 18), -TVH_ERR_INVALID);
	assert_non_null(strstr(t.error, "bzImage"));
	free(z);
	free(syms);
}

/* Random damage to the tables: found (and then every name decodes) or not. */
static void test_random_damage(void **state)
{
	static const enum layout ls[] = { L61, L62, L64 };
	struct tvh_kallsyms_img t;
	struct where w;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned found = 0, total = 0;

	(void)state;
	make_syms(true);
	for (unsigned l = 0; l < 3; l++) {
		uint8_t *img;
		size_t len = build(&img, &(struct opts){ .layout = ls[l],
				.abs_percpu = true }, &w);
		size_t lo = ls[l] == L64 ? w.num_syms : w.offsets;

		for (unsigned i = 0; i < 400; i++) {
			size_t at, cut;
			uint8_t old;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			at = lo + x % (w.end - lo);
			old = img[at];
			img[at] = (uint8_t)(x >> 32);
			cut = i % 4 == 0 ? lo + (x >> 40) % (len - lo) : len;
			found += find_in(img, cut, &t) == 0;
			total++;
			img[at] = old;
		}
		free(img);
	}
	/* Most single-byte changes are caught; none crashes or misdecodes. */
	print_message("random damage: %u of %u images still gave a table\n",
		      found, total);
	free(syms);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layouts),
		cmocka_unit_test(test_ksyms),
		cmocka_unit_test(test_load_any),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_random_damage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
