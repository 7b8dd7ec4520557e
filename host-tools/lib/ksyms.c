/* SPDX-License-Identifier: MIT */
/*
 * ksyms.c - /proc/kallsyms and System.map (see ksyms.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/ksyms.h"

void tvh_ksyms_init(struct tvh_ksyms *k)
{
	memset(k, 0, sizeof(*k));
}

void tvh_ksyms_free(struct tvh_ksyms *k)
{
	free(k->v);
	free(k->names);
	free(k->path);
	memset(k, 0, sizeof(*k));
}

static int bad_line(struct tvh_ksyms *k, const char *name, uint64_t line,
		    const char *what, const char *text, size_t tlen)
{
	if (tlen > 40)
		tlen = 40;
	snprintf(k->error, sizeof(k->error), "%s:%llu: %s%s%.*s%s", name,
		 (unsigned long long)line, what, text ? " '" : "", (int)tlen,
		 text ? text : "", text ? "'" : "");
	return -TVH_ERR_INVALID;
}

/* Append s[0..n) and a NUL to the names; its offset, or UINT32_MAX. */
static uint32_t add_name(struct tvh_ksyms *k, const char *s, size_t n)
{
	size_t off = k->names_len;

	if (k->names_len + n + 1 > k->names_cap) {
		size_t cap = k->names_cap ? k->names_cap * 2 : 1 << 16;
		char *p;

		while (cap < k->names_len + n + 1)
			cap *= 2;
		if (cap > UINT32_MAX)
			return UINT32_MAX;
		p = realloc(k->names, cap);
		if (!p)
			return UINT32_MAX;
		k->names = p;
		k->names_cap = cap;
	}
	memcpy(k->names + off, s, n);
	k->names[off + n] = 0;
	k->names_len += n + 1;
	return (uint32_t)off;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Text (code) symbols first, then global ones: the name kept at an address. */
static int rank(char t)
{
	return (t == 'T' || t == 't' || t == 'W' || t == 'w' ? 0 : 2) +
	       (t >= 'A' && t <= 'Z' ? 0 : 1);
}

/* Order: address, then rank, then file order (the index in name offsets). */
static int sym_cmp(const void *a, const void *b)
{
	const struct tvh_ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (rank(x->type) != rank(y->type))
		return rank(x->type) - rank(y->type);
	return x->name < y->name ? -1 : x->name > y->name;
}

/* One line, not empty; 1 kept, 0 left out, negative error. */
static int parse_line(struct tvh_ksyms *k, const char *p, const char *end,
		      uint64_t line, const char *fname)
{
	const char *s = p, *nm, *mod = NULL;
	uint64_t addr = 0;
	size_t nlen, mlen = 0;
	unsigned digits = 0;
	char type;

	while (s < end && !is_blank(*s)) {
		int h = hexval(*s);

		if (h < 0 || ++digits > 16)
			return bad_line(k, fname, line, h < 0 ? "bad address" :
					"address longer than 16 hex digits", p,
					(size_t)(end - p));
		addr = addr << 4 | (uint64_t)h;
		s++;
	}
	if (s == end)
		return bad_line(k, fname, line, "missing type and name (want "
				"'ADDR TYPE NAME')", p, (size_t)(end - p));
	while (s < end && is_blank(*s))
		s++;
	if (s == end || (s + 1 < end && !is_blank(s[1])))
		return bad_line(k, fname, line, s == end ? "missing type and name" :
				"bad type (want one letter)", p, (size_t)(end - p));
	type = *s++;
	if (!((type >= 'a' && type <= 'z') || (type >= 'A' && type <= 'Z') ||
	      type == '?' || type == '-'))
		return bad_line(k, fname, line, "bad type (want one letter)", p,
				(size_t)(end - p));
	while (s < end && is_blank(*s))
		s++;
	if (s == end)
		return bad_line(k, fname, line, "missing name", p, (size_t)(end - p));
	nm = s;
	while (s < end && !is_blank(*s))
		s++;
	nlen = (size_t)(s - nm);
	if (nlen > TVH_KSYM_NAME_MAX)
		return bad_line(k, fname, line, "name longer than 511 bytes", nm, 40);
	while (s < end && is_blank(*s))
		s++;
	if (s < end) {
		const char *close;

		if (k->format != TVH_KSYMS_KALLSYMS || *s != '[')
			return bad_line(k, fname, line, k->format == TVH_KSYMS_KALLSYMS ?
					"extra text after the name (want '[module]')" :
					"extra text after the name (a System.map line is "
					"'ADDR TYPE NAME')", p, (size_t)(end - p));
		close = memchr(s, ']', (size_t)(end - s));
		mod = s + 1;
		mlen = close ? (size_t)(close - mod) : 0;
		if (!close || !mlen || mlen > TVH_KSYM_NAME_MAX)
			return bad_line(k, fname, line, "bad module (want '[module]')",
					p, (size_t)(end - p));
		for (s = close + 1; s < end && is_blank(*s); s++)
			;
		if (s < end)
			return bad_line(k, fname, line, "extra text after '[module]'",
					p, (size_t)(end - p));
	}
	k->symbols++;
	if (type == 'A' || type == 'a' || type == 'U' || type == 'N' ||
	    type == 'n' || type == '?' || type == '-') {
		k->skipped_types++;
		return 0;
	}
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 4096;
		struct tvh_ksym *v = realloc(k->v, cap * sizeof(*v));

		if (!v)
			return -TVH_ERR_NOMEM;
		k->v = v;
		k->cap = cap;
	}
	k->v[k->n] = (struct tvh_ksym){ .addr = addr, .type = type,
		.module = UINT32_MAX };
	k->v[k->n].name = add_name(k, nm, nlen);
	if (k->v[k->n].name == UINT32_MAX)
		return -TVH_ERR_NOMEM;
	if (mod) {
		k->v[k->n].module = add_name(k, mod, mlen);
		if (k->v[k->n].module == UINT32_MAX)
			return -TVH_ERR_NOMEM;
	}
	if (k->n && addr < k->v[k->n - 1].addr)
		k->unsorted++;
	k->n++;
	return 1;
}

static const char *name_at(const struct tvh_ksyms *k, uint32_t off)
{
	return k->names + off;
}

uint64_t tvh_ksyms_addr_of(const struct tvh_ksyms *k, const char *name)
{
	for (size_t i = 0; i < k->n; i++)
		if (!strcmp(name_at(k, k->v[i].name), name))
			return k->v[i].addr;
	return 0;
}

/* Sort, fold aliases, drop lower-half per-CPU offsets, set the range. */
static int finish(struct tvh_ksyms *k, const char *fname, bool all_zero)
{
	size_t out = 0, upper = 0;
	uint64_t end_sym = 0;

	if (!k->n)
		return bad_line(k, fname, k->lines, "no symbol (an empty or "
				"non-symbol file)", NULL, 0);
	if (all_zero)
		return bad_line(k, fname, k->lines, "every address is 0: /proc/kallsyms "
				"read without privilege (kptr_restrict) hides them; "
				"read it as root (sudo cat /proc/kallsyms)", NULL, 0);
	qsort(k->v, k->n, sizeof(*k->v), sym_cmp);
	/* Names first: _text and startup_64 share an address (one is folded). */
	end_sym = tvh_ksyms_addr_of(k, "_end");
	k->etext = tvh_ksyms_addr_of(k, "_etext");
	k->startup_64 = tvh_ksyms_addr_of(k, "startup_64");
	k->text = tvh_ksyms_addr_of(k, "_text");
	for (size_t i = 0; i < k->n; i++)
		if (k->v[i].addr >= TVH_KSYM_UPPER)
			upper++;
	for (size_t i = 0; i < k->n; i++) {
		if (upper && k->v[i].addr < TVH_KSYM_UPPER) {
			k->lower_half++;
			continue;
		}
		if (out && k->v[out - 1].addr == k->v[i].addr) {
			k->aliases++;
			continue;
		}
		k->v[out++] = k->v[i];
	}
	k->n = out;
	k->lo = k->v[0].addr;
	k->hi = k->v[k->n - 1].addr + 4096;
	if (k->hi < k->lo)
		k->hi = UINT64_MAX;
	if (end_sym > k->lo && end_sym >= k->v[k->n - 1].addr)
		k->hi = end_sym;
	k->have_text = k->text != 0;
	if (!k->have_text)
		k->text = k->startup_64 ? k->startup_64 : k->lo;
	return (int)(k->n > INT32_MAX ? INT32_MAX : k->n);
}

int tvh_ksyms_parse(struct tvh_ksyms *k, const char *buf, size_t len,
		    enum tvh_ksyms_format fmt, const char *name)
{
	const char *p = buf, *end = buf + len;
	bool all_zero = true;
	int ret = 0;

	k->format = fmt;
	if (!k->path) {
		k->path = strdup(name ? name : "");
		if (!k->path)
			return -TVH_ERR_NOMEM;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *s = p;

		k->lines++;
		while (s < le && is_blank(*s))
			s++;
		if (s < le) {
			if (memchr(s, 0, (size_t)(le - s))) {
				ret = bad_line(k, k->path, k->lines, "NUL byte in the line "
					       "(not a text symbol file)", NULL, 0);
				break;
			}
			ret = parse_line(k, s, le, k->lines, k->path);
			if (ret < 0)
				break;
			if (ret > 0 && k->v[k->n - 1].addr)
				all_zero = false;
		}
		p = nl ? nl + 1 : end;
	}
	if (ret >= 0)
		ret = finish(k, k->path, all_zero);
	if (ret < 0) {
		char err[sizeof(k->error)];
		char *path = k->path;

		memcpy(err, k->error, sizeof(err));
		k->path = NULL;
		tvh_ksyms_free(k);
		k->path = path;
		memcpy(k->error, err, sizeof(err));
		if (ret == -TVH_ERR_NOMEM && !k->error[0])
			snprintf(k->error, sizeof(k->error), "%s: out of memory", path);
	}
	return ret;
}

int tvh_ksyms_load(struct tvh_ksyms *k, const char *path,
		   enum tvh_ksyms_format fmt)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0;
	int ret;

	free(k->path);
	k->path = strdup(path);
	if (!k->path)
		return -TVH_ERR_NOMEM;
	if (!f) {
		snprintf(k->error, sizeof(k->error), "%s: %s", path, strerror(errno));
		return -TVH_ERR_IO;
	}
	/* Read, not stat: /proc/kallsyms has size 0. */
	for (;;) {
		size_t got;

		if (n == cap) {
			char *nb;

			cap = cap ? cap * 2 : 1 << 20;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return -TVH_ERR_NOMEM;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (!got)
			break;
	}
	if (ferror(f)) {
		int e = errno;

		snprintf(k->error, sizeof(k->error), "%s: %s", path, strerror(e));
		free(buf);
		fclose(f);
		errno = e;
		return -TVH_ERR_IO;
	}
	fclose(f);
	ret = tvh_ksyms_parse(k, buf, n, fmt, path);
	free(buf);
	return ret;
}

void tvh_ksyms_relocate(struct tvh_ksyms *k, uint64_t bias)
{
	k->bias = bias;
	k->relocated = true;
}

void tvh_ksyms_phys_alias(struct tvh_ksyms *k, uint64_t phys_text)
{
	uint64_t etext = k->etext;

	k->have_phys = true;
	k->phys_text = phys_text;
	k->phys_len = etext > k->text ? etext - k->text : k->hi - k->text;
}

int tvh_ksyms_lookup(const struct tvh_ksyms *k, uint64_t addr, const char **name,
		     uint64_t *offset, const char **module)
{
	uint64_t a = addr - k->bias;
	size_t lo = 0, hi;

	*name = NULL;
	*offset = 0;
	*module = NULL;
	if (!k->n)
		return -TVH_ERR_NOT_FOUND;
	if (k->have_phys && addr >= k->phys_text && addr - k->phys_text < k->phys_len)
		a = addr - k->phys_text + k->text;
	else if (a < k->lo || a >= k->hi)
		return -TVH_ERR_NOT_FOUND;
	/* The last symbol at or below a: binary search over v[lo..hi). */
	hi = k->n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->v[mid].addr <= a)
			lo = mid;
		else
			hi = mid;
	}
	if (k->v[lo].addr > a)
		return -TVH_ERR_NOT_FOUND;
	*name = name_at(k, k->v[lo].name);
	*offset = a - k->v[lo].addr;
	if (k->v[lo].module != UINT32_MAX)
		*module = name_at(k, k->v[lo].module);
	return 0;
}

int tvh_ksyms_lookup_data(const struct tvh_ksyms *k, uint64_t addr, const char **name,
			  uint64_t *offset, const char **module)
{
	uint64_t a = addr - k->bias;
	size_t lo = 0, hi = k->n;
	char t;

	*name = NULL;
	*offset = 0;
	*module = NULL;
	if (!k->n || a < k->lo || a >= k->hi)
		return -TVH_ERR_NOT_FOUND;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->v[mid].addr <= a)
			lo = mid;
		else
			hi = mid;
	}
	t = k->v[lo].type;
	if (k->v[lo].addr > a || !t || !strchr("dDbBrRgGsSvV", t))
		return -TVH_ERR_NOT_FOUND;
	*name = name_at(k, k->v[lo].name);
	*offset = a - k->v[lo].addr;
	if (k->v[lo].module != UINT32_MAX)
		*module = name_at(k, k->v[lo].module);
	return 0;
}
