/* SPDX-License-Identifier: MIT */
/*
 * kallsyms_img.c - a kernel's kallsyms tables found in its image and
 * decoded (see kallsyms_img.h for the layout and the checks).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/kallsyms_img.h"

#define MAX_REGIONS 32
/* A name is at most KSYM_NAME_LEN - 1 bytes plus its type: compressed, no longer. */
#define NAME_BYTES_MAX (TVH_KSYM_NAME_MAX + 1)
#define SYMS_MAX (1u << 24)      /* far above any kernel (~200k) */

/*
 * The alignment scripts/kallsyms.c asks for (.balign 8) is of addresses,
 * not file offsets: a PT_LOAD segment maps [off, off + filesz) at vaddr,
 * so an offset p in it is 8-aligned when (p + delta) % 8 == 0 with
 * delta = vaddr - off.  A raw image is one region with delta 0.
 */
struct region {
	size_t off, size;
	uint64_t vaddr, memsz;
};

struct ctx {
	const uint8_t *b;
	size_t len;
	struct region r[MAX_REGIONS];
	unsigned nr;
	bool elf;
};

static uint16_t rd16(const struct ctx *c, size_t p)
{
	return (uint16_t)(c->b[p] | c->b[p + 1] << 8);
}

static uint32_t rd32(const struct ctx *c, size_t p)
{
	return (uint32_t)c->b[p] | (uint32_t)c->b[p + 1] << 8 |
	       (uint32_t)c->b[p + 2] << 16 | (uint32_t)c->b[p + 3] << 24;
}

static uint64_t rd64(const struct ctx *c, size_t p)
{
	return (uint64_t)rd32(c, p) | (uint64_t)rd32(c, p + 4) << 32;
}

static void set_error(struct tvh_kallsyms_img *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void set_error(struct tvh_kallsyms_img *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->error, sizeof(t->error), fmt, ap);
	va_end(ap);
}

static const struct region *region_of(const struct ctx *c, size_t p)
{
	for (unsigned i = 0; i < c->nr; i++)
		if (p >= c->r[i].off && p - c->r[i].off < c->r[i].size)
			return &c->r[i];
	return NULL;
}

static bool aligned8(const struct ctx *c, size_t p)
{
	const struct region *r = region_of(c, p);

	return r && ((r->vaddr + (p - r->off)) & 7) == 0;
}

/* The first 8-aligned offset >= p (in p's region), or SIZE_MAX. */
static size_t align_up8(const struct ctx *c, size_t p)
{
	const struct region *r = region_of(c, p);
	uint64_t mis;

	if (!r)
		return SIZE_MAX;
	mis = (8 - ((r->vaddr + (p - r->off)) & 7)) & 7;
	return p + mis;
}

static bool zeros(const struct ctx *c, size_t from, size_t to)
{
	for (size_t p = from; p < to; p++)
		if (c->b[p])
			return false;
	return true;
}

/* ---- the image's shape ---------------------------------------------------- */

/* ELF64 little-endian: its PT_LOAD segments.  0, 1 (not ELF64 LE), or error. */
static int read_elf(struct ctx *c, struct tvh_kallsyms_img *t)
{
	uint64_t phoff;
	uint16_t phentsize, phnum;

	if (c->len < 64 || memcmp(c->b, "\177ELF", 4))
		return 1;
	if (c->b[4] != 2 || c->b[5] != 1)
		return 1;               /* not ELF64 LE: searched as raw bytes */
	phoff = rd64(c, 32);
	phentsize = rd16(c, 54);
	phnum = rd16(c, 56);
	if (phentsize < 56 || phoff > c->len || phnum > (c->len - phoff) / phentsize) {
		set_error(t, "ELF program headers out of the file (phoff %#llx, "
			  "%u x %u bytes)", (unsigned long long)phoff, phnum, phentsize);
		return -TVH_ERR_INVALID;
	}
	c->elf = true;
	for (unsigned i = 0; i < phnum && c->nr < MAX_REGIONS; i++) {
		size_t ph = (size_t)phoff + (size_t)i * phentsize;
		uint64_t off = rd64(c, ph + 8), filesz = rd64(c, ph + 32);

		if (rd32(c, ph) != 1 /* PT_LOAD */ || !filesz)
			continue;
		if (off > c->len)
			continue;
		if (filesz > c->len - off)
			filesz = c->len - off;
		c->r[c->nr++] = (struct region){ .off = (size_t)off, .size = (size_t)filesz,
			.vaddr = rd64(c, ph + 16), .memsz = rd64(c, ph + 40) };
	}
	if (!c->nr) {
		set_error(t, "ELF file with no PT_LOAD segment");
		return -TVH_ERR_INVALID;
	}
	return 0;
}

/* A bzImage: the boot sector's 0x55aa and the setup header's "HdrS". */
static bool is_bzimage(const struct ctx *c)
{
	return c->len > 0x206 && c->b[0x1fe] == 0x55 && c->b[0x1ff] == 0xaa &&
	       !memcmp(c->b + 0x202, "HdrS", 4);
}

/* ---- the token table and index -------------------------------------------- */

static bool token_byte(uint8_t ch)
{
	return ch > 0x20 && ch < 0x7f;
}

/*
 * The token table ending (padding aside) at index p, whose u16 index is
 * at p and already read into idx: fills t->token_table, tok_off/len.
 */
static bool try_token_table(const struct ctx *c, size_t p, const uint16_t *idx,
			    struct tvh_kallsyms_img *t)
{
	for (size_t pad = 0; pad < 8 && pad + 2 <= p; pad++) {
		size_t e = p - pad, q, s, tt;
		uint32_t nonempty = 0;
		bool ok = true;

		if (c->b[e - 1] || !zeros(c, e, p))
			continue;
		/* String 255 runs from after the NUL before e - 1 to e - 1. */
		q = e - 1;
		while (q > 0 && q + NAME_BYTES_MAX > e && c->b[q - 1])
			q--;
		if (q == 0 || q + NAME_BYTES_MAX <= e)
			continue;
		s = q;
		if (s < idx[255])
			continue;
		tt = s - idx[255];
		if (!aligned8(c, tt))
			continue;
		for (unsigned i = 0; i < 256 && ok; i++) {
			size_t a = tt + idx[i], z = i < 255 ? tt + idx[i + 1] - 1 : e - 1;

			if (c->b[z])
				ok = false;
			for (size_t k = a; k < z && ok; k++)
				ok = token_byte(c->b[k]);
			if (z - a > 255)
				ok = false;
			if (ok) {
				t->tok_off[i] = idx[i];
				t->tok_len[i] = (uint8_t)(z - a);
				nonempty += z > a;
			}
		}
		if (!ok || nonempty < 16)
			continue;
		t->token_table = tt;
		t->token_index = p;
		t->tok_nonempty = nonempty;
		return true;
	}
	return false;
}

/* A token index at p: 256 strictly increasing u16 from 0. */
static bool index_at(const struct ctx *c, size_t p, uint16_t *idx)
{
	if (p + 512 > c->len || rd16(c, p) != 0)
		return false;
	idx[0] = 0;
	for (unsigned i = 1; i < 256; i++) {
		idx[i] = rd16(c, p + 2 * i);
		if (idx[i] <= idx[i - 1])
			return false;
	}
	return true;
}

/* ---- names, markers, num_syms --------------------------------------------- */

/*
 * Expand the symbol whose codes are buf[p..p+n) into s (type + name).
 * 0, or -1 (an empty token, a name too long or short, a bad type).
 */
static int expand(const struct tvh_kallsyms_img *t, size_t p, size_t n,
		  struct tvh_kallsyms_sym *s)
{
	char tmp[NAME_BYTES_MAX + 1];
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		uint8_t code = t->buf[p + i];
		size_t l = t->tok_len[code];

		if (!l || k + l > NAME_BYTES_MAX)
			return -1;
		memcpy(tmp + k, t->buf + t->token_table + t->tok_off[code], l);
		k += l;
	}
	if (k < 2)
		return -1;
	if (!((tmp[0] >= 'a' && tmp[0] <= 'z') || (tmp[0] >= 'A' && tmp[0] <= 'Z') ||
	      tmp[0] == '?'))
		return -1;
	if (s) {
		s->type = tmp[0];
		memcpy(s->name, tmp + 1, k - 1);
		s->name[k - 1] = 0;
	}
	return 0;
}

/* One symbol's length at *off (< lim): its code count, *off past it; 0: bad. */
static size_t read_len(const struct tvh_kallsyms_img *t, size_t *off, size_t lim,
		       bool uleb)
{
	size_t n;

	if (*off >= lim)
		return 0;
	n = t->buf[(*off)++];
	if (uleb && (n & 0x80)) {
		if (*off >= lim || (t->buf[*off] & 0x80))
			return 0;
		n = (n & 0x7f) | (size_t)t->buf[(*off)++] << 7;
	}
	if (n > NAME_BYTES_MAX || n > lim - *off)
		return 0;
	return n;
}

/*
 * N names from ns must decode, every 256th start at its marker, and end
 * where the markers begin (padding aside).  1 when they do.
 */
static bool names_ok(const struct ctx *c, struct tvh_kallsyms_img *t, size_t ns,
		     uint32_t n, size_t ms, bool uleb)
{
	size_t off = ns;

	for (uint32_t i = 0; i < n; i++) {
		size_t l;

		if ((i & 0xff) == 0 && off - ns != rd32(c, ms + (i >> 8) * 4))
			return false;
		l = read_len(t, &off, ms, uleb);
		if (!l || expand(t, off, l, NULL))
			return false;
		off += l;
	}
	if (align_up8(c, off) != ms || !zeros(c, off, ms))
		return false;
	t->names = ns;
	t->names_end = off;
	t->num_syms = n;
	t->uleb_len = uleb;
	return true;
}

/* The markers ending at me (4 zero bytes of padding or none before tt). */
static bool markers_at(const struct ctx *c, size_t me, size_t *ms, uint32_t *m)
{
	size_t p;
	uint32_t v, count = 1;

	if (me < 4)
		return false;
	p = me - 4;
	v = rd32(c, p);
	while (v) {
		uint32_t nv;

		if (p < 4)
			return false;
		p -= 4;
		nv = rd32(c, p);
		if (nv >= v)
			return false;
		v = nv;
		count++;
	}
	if (!aligned8(c, p))
		return false;
	*ms = p;
	*m = count;
	return true;
}

/*
 * num_syms and the names before the markers at ms (m of them); want: the
 * num_syms the layout implies, 0 when any that fits m will do.
 */
static bool find_names(const struct ctx *c, struct tvh_kallsyms_img *t, size_t ms,
		       uint32_t m, uint32_t want)
{
	uint32_t last = rd32(c, ms + (size_t)(m - 1) * 4);
	uint64_t nmin = want ? want : (uint64_t)(m - 1) * 256 + 1;
	uint64_t nmax = want ? want : (uint64_t)m * 256;
	size_t span = 256 * (NAME_BYTES_MAX + 2) + 16, hi, lo;

	if ((uint64_t)m * 256 > SYMS_MAX || ms < (size_t)last + 2 + 8)
		return false;
	hi = ms - last - 2;
	lo = hi > span ? hi - span : 8;
	if (lo < 8)
		lo = 8;
	for (size_t ns = hi; ns >= lo && ns <= hi; ns--) {
		uint32_t n;

		if (!aligned8(c, ns))
			continue;
		n = rd32(c, ns - 8);
		if (n < nmin || n > nmax || rd32(c, ns - 4))
			continue;
		if (names_ok(c, t, ns, n, ms, true) || names_ok(c, t, ns, n, ms, false)) {
			t->markers = ms;
			return true;
		}
	}
	return false;
}

/* ---- addresses ------------------------------------------------------------ */

static uint64_t sym_addr(const struct tvh_kallsyms_img *t, uint32_t i)
{
	const uint8_t *o = t->buf + t->offsets + (size_t)i * 4;
	int32_t v = (int32_t)((uint32_t)o[0] | (uint32_t)o[1] << 8 |
			      (uint32_t)o[2] << 16 | (uint32_t)o[3] << 24);

	if (!t->abs_percpu)
		return t->relative_base + (uint32_t)v;
	/* ABSOLUTE_PERCPU: >= 0 absolute; < 0 relative to base - 1, negated. */
	if (v >= 0)
		return (uint64_t)v;
	return t->relative_base - 1 - (uint64_t)(int64_t)v;
}

/* The offsets at os and the base at rb: plausible and sorted.  1 if so. */
static bool offsets_ok(const struct ctx *c, struct tvh_kallsyms_img *t, size_t os,
		       size_t rb)
{
	uint64_t prev = 0;
	uint32_t neg = 0;
	bool in_seg = !c->elf;

	if (os > c->len || rb > c->len - 8 || (size_t)t->num_syms > (c->len - os) / 4 ||
	    !aligned8(c, os) || !aligned8(c, rb))
		return false;
	if (os + (size_t)t->num_syms * 4 > rb || !zeros(c, os + (size_t)t->num_syms * 4, rb))
		return false;
	t->offsets = os;
	t->relative_base_at = rb;
	t->relative_base = rd64(c, rb);
	for (unsigned i = 0; i < c->nr && !in_seg; i++)
		in_seg = c->r[i].vaddr && t->relative_base >= c->r[i].vaddr &&
			 t->relative_base - c->r[i].vaddr < c->r[i].memsz;
	if (!in_seg || !t->relative_base)
		return false;
	for (uint32_t i = 0; i < t->num_syms; i++)
		neg += (c->b[os + (size_t)i * 4 + 3] & 0x80) != 0;
	t->abs_percpu = neg != 0;
	for (uint32_t i = 0; i < t->num_syms; i++) {
		uint64_t a = sym_addr(t, i);

		if (a < prev)
			return false;
		prev = a;
	}
	return true;
}

static bool find_offsets(const struct ctx *c, struct tvh_kallsyms_img *t)
{
	size_t span = ((size_t)t->num_syms * 4 + 7) & ~(size_t)7, os, rb;

	/* 6.1: offsets, relative_base, num_syms (8 bytes before the names). */
	if (t->names >= 16 + span) {
		rb = t->names - 16;
		os = rb - span;
		t->layout = TVH_KALLSYMS_6_1;
		if (offsets_ok(c, t, os, rb))
			return true;
	}
	/* 6.4 and later: after the token index. */
	os = align_up8(c, t->token_index + 512);
	if (os != SIZE_MAX && os <= c->len && span <= c->len - os) {
		rb = os + span;
		t->layout = TVH_KALLSYMS_6_4;
		if (offsets_ok(c, t, os, rb))
			return true;
	}
	return false;
}

/* ---- the search ----------------------------------------------------------- */

/*
 * Linux 6.2 and 6.3 (and stable kernels that took the change, such as
 * Debian 12's 6.1.1xx) put kallsyms_seqs_of_names between the markers
 * and the token table: for each symbol in name order its index, 3 bytes
 * big-endian.  Its length, 3 * num_syms, fixes where the markers end:
 * each num_syms that puts an 8-aligned markers[0] = 0 there is tried.
 */
static bool find_with_seqs(const struct ctx *c, struct tvh_kallsyms_img *t,
			   unsigned *stage)
{
	size_t tt = t->token_table;

	const struct region *r = region_of(c, tt);

	if (!r)
		return false;
	for (size_t pad = 0; pad < 8 && pad < tt - r->off; pad++) {
		size_t e = tt - pad;
		/* offset, name, seq: >= 9 bytes each, all in tt's segment */
		uint64_t nmax = (e - r->off) / 9;
		/* sq = e - 3n 8-aligned: n = 3 (e + delta) mod 8 (3 * 3 = 1 mod 8) */
		uint32_t n0 = (uint32_t)((3 * (r->vaddr + (e - r->off))) & 7);

		if (pad && c->b[e])
			break;           /* the padding is zeros */
		if (nmax > SYMS_MAX)
			nmax = SYMS_MAX;
		for (uint32_t n = n0 ? n0 : 8; n <= nmax; n += 8) {
			size_t sq = e - (size_t)n * 3, me, ms;
			uint32_t m = (n + 255) / 256, first;
			bool ok = true;

			first = (uint32_t)c->b[sq] << 16 | (uint32_t)c->b[sq + 1] << 8 |
				c->b[sq + 2];
			if (first >= n)
				continue;
			for (unsigned back = 0; back <= 4; back += 4) {
				me = sq - back;
				if (me < (size_t)m * 4 + 16 || !zeros(c, me, sq))
					continue;
				ms = me - (size_t)m * 4;
				if (rd32(c, ms) || !aligned8(c, ms))
					continue;
				for (uint32_t i = 1; i < m && ok; i++)
					ok = rd32(c, ms + (size_t)i * 4) >
					     rd32(c, ms + (size_t)(i - 1) * 4);
				for (uint32_t i = 0; i < n && ok; i++)
					ok = ((uint32_t)c->b[sq + 3 * i] << 16 |
					      (uint32_t)c->b[sq + 3 * i + 1] << 8 |
					      c->b[sq + 3 * i + 2]) < n;
				if (!ok)
					break;
				if (*stage < 2)
					*stage = 2;
				if (find_names(c, t, ms, m, n)) {
					t->seqs = sq;
					return true;
				}
			}
		}
	}
	return false;
}

/* Everything from a token index at p; 1 found, 0 not this one. */
static bool try_at(const struct ctx *c, struct tvh_kallsyms_img *t, size_t p,
		   unsigned *stage)
{
	uint16_t idx[256];
	size_t ms;
	uint32_t m;
	bool found = false;

	if (!index_at(c, p, idx) || !try_token_table(c, p, idx, t))
		return false;
	if (*stage < 1)
		*stage = 1;
	/* The markers end at the table or 4 bytes of padding before it. */
	for (unsigned back = 0; back <= 4 && !found; back += 4) {
		size_t me = t->token_table - back;

		if (t->token_table < back || !zeros(c, me, t->token_table) ||
		    !markers_at(c, me, &ms, &m))
			continue;
		if (*stage < 2)
			*stage = 2;
		found = find_names(c, t, ms, m, 0);
	}
	if (!found)
		found = find_with_seqs(c, t, stage);
	if (!found)
		return false;
	if (*stage < 3)
		*stage = 3;
	if (!find_offsets(c, t))
		return false;
	if (t->seqs && t->layout == TVH_KALLSYMS_6_1)
		t->layout = TVH_KALLSYMS_6_2;
	return true;
}

int tvh_kallsyms_img_find(struct tvh_kallsyms_img *t, const uint8_t *buf,
			  size_t len)
{
	static const char *const seen[] = {
		"no token table and index (256 strings, 256 increasing offsets)",
		"a token table, but no kallsyms_markers before it",
		"a token table and markers, but no kallsyms_names and num_syms "
		"that decode and match them",
		"names that decode, but no kallsyms_offsets and relative_base "
		"(sorted, in the image) beside them",
	};
	struct ctx *c;
	unsigned stage = 0;
	int ret;

	memset(t, 0, sizeof(*t));
	t->buf = buf;
	t->len = len;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -TVH_ERR_NOMEM;
	c->b = buf;
	c->len = len;
	ret = read_elf(c, t);
	if (ret < 0)
		goto out;
	if (ret > 0) {
		if (is_bzimage(c)) {
			set_error(t, "a compressed bzImage (vmlinuz): give its vmlinux "
				  "(scripts/linux-fixture.sh extracts it; or the kernel "
				  "tree's scripts/extract-vmlinux)");
			ret = -TVH_ERR_INVALID;
			goto out;
		}
		c->nr = 1;
		c->r[0] = (struct region){ .off = 0, .size = len };
	}
	ret = -TVH_ERR_NOT_FOUND;
	for (unsigned i = 0; i < c->nr && ret; i++) {
		const struct region *r = &c->r[i];
		size_t p = r->off + ((8 - ((r->vaddr) & 7)) & 7);

		for (; p + 512 <= r->off + r->size && ret; p += 8)
			if (buf[p] == 0 && buf[p + 1] == 0 && try_at(c, t, p, &stage))
				ret = 0;
	}
	if (ret) {
		const uint8_t *b = t->buf;
		size_t l = t->len;
		char why[sizeof(t->error)];

		snprintf(why, sizeof(why), "no kallsyms table found (%s; the kernel "
			 "may lack CONFIG_KALLSYMS, or lay it out as other than 6.1, "
			 "6.2 or 6.4+)", seen[stage]);
		memset(t, 0, sizeof(*t));
		t->buf = b;
		t->len = l;
		memcpy(t->error, why, sizeof(why));
	}
out:
	free(c);
	return ret;
}

void tvh_kallsyms_iter_init(struct tvh_kallsyms_iter *it,
			    const struct tvh_kallsyms_img *t)
{
	it->i = 0;
	it->off = t->names;
}

int tvh_kallsyms_img_next(const struct tvh_kallsyms_img *t,
			  struct tvh_kallsyms_iter *it, struct tvh_kallsyms_sym *s)
{
	size_t l;

	if (it->i >= t->num_syms)
		return 0;
	l = read_len(t, &it->off, t->names_end, t->uleb_len);
	if (!l || expand(t, it->off, l, s))
		return -TVH_ERR_INVALID;
	it->off += l;
	s->addr = sym_addr(t, it->i);
	it->i++;
	return 1;
}

/* ---- into struct tvh_ksyms ------------------------------------------------ */

bool tvh_kallsyms_is_image(const uint8_t *buf, size_t len)
{
	size_t n = len < 4096 ? len : 4096;

	if (len >= 4 && !memcmp(buf, "\177ELF", 4))
		return true;
	return memchr(buf, 0, n) != NULL;
}

int tvh_ksyms_from_image(struct tvh_ksyms *k, const uint8_t *buf, size_t len,
			 const char *name)
{
	struct tvh_kallsyms_img *t = calloc(1, sizeof(*t));
	struct tvh_kallsyms_sym *s = calloc(1, sizeof(*s));
	struct tvh_kallsyms_iter it;
	char *text = NULL;
	size_t tlen = 0, tcap = 0;
	int ret;

	if (!t || !s) {
		ret = -TVH_ERR_NOMEM;
		goto out;
	}
	ret = tvh_kallsyms_img_find(t, buf, len);
	if (ret) {
		snprintf(k->error, sizeof(k->error), "%s: %s", name, t->error);
		goto out;
	}
	/*
	 * The lines /proc/kallsyms would print, through the text parser: one
	 * table, built one way, whatever the source.
	 */
	tvh_kallsyms_iter_init(&it, t);
	while ((ret = tvh_kallsyms_img_next(t, &it, s)) > 0) {
		int n;

		if (tcap - tlen < NAME_BYTES_MAX + 32) {
			size_t cap = tcap ? tcap * 2 : (size_t)t->num_syms * 48 + 4096;
			char *p = realloc(text, cap);

			if (!p) {
				ret = -TVH_ERR_NOMEM;
				goto out;
			}
			text = p;
			tcap = cap;
		}
		n = snprintf(text + tlen, tcap - tlen, "%016llx %c %s\n",
			     (unsigned long long)s->addr, s->type, s->name);
		tlen += (size_t)n;
	}
	if (ret < 0) {
		snprintf(k->error, sizeof(k->error), "%s: symbol %u does not decode",
			 name, it.i);
		goto out;
	}
	ret = tvh_ksyms_parse(k, text, tlen, TVH_KSYMS_KALLSYMS, name);
out:
	if (ret == -TVH_ERR_NOMEM && !k->error[0])
		snprintf(k->error, sizeof(k->error), "%s: out of memory", name);
	free(text);
	free(s);
	free(t);
	return ret;
}

int tvh_ksyms_load_any(struct tvh_ksyms *k, const char *path,
		       enum tvh_ksyms_format fmt)
{
	uint8_t head[4096], *buf = NULL;
	size_t n, len = 0, cap = 0;
	FILE *f = fopen(path, "rb");
	int ret;

	if (!f) {
		snprintf(k->error, sizeof(k->error), "%s: %s", path, strerror(errno));
		return -TVH_ERR_IO;
	}
	n = fread(head, 1, sizeof(head), f);
	if (!tvh_kallsyms_is_image(head, n)) {
		fclose(f);
		return tvh_ksyms_load(k, path, fmt);
	}
	/* A kernel image: all of it (tens of MiB), then its own table. */
	rewind(f);
	for (;;) {
		size_t got;

		if (len == cap) {
			uint8_t *nb;

			cap = cap ? cap * 2 : 64u << 20;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				snprintf(k->error, sizeof(k->error), "%s: out of memory", path);
				return -TVH_ERR_NOMEM;
			}
			buf = nb;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (!got)
			break;
	}
	if (ferror(f)) {
		snprintf(k->error, sizeof(k->error), "%s: %s", path, strerror(errno));
		free(buf);
		fclose(f);
		return -TVH_ERR_IO;
	}
	fclose(f);
	ret = tvh_ksyms_from_image(k, buf, len, path);
	free(buf);
	return ret;
}
