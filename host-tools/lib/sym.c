/* SPDX-License-Identifier: MIT */
/*
 * sym.c - ELF modules and libdwfl symbolization (see sym.h).
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/ksyms.h"
#include "host-tools/lib/pe.h"
#include "host-tools/lib/sym.h"

/* Cached lookups: open addressing on the address, cleared when full. */
struct tvh_sym_cache_entry {
	uint64_t addr;
	bool used;
	int module;
	const char *func;
	uint64_t func_offset;
	const char *file;
	int line;
};

#define CACHE_MIN 4096u
#define CACHE_MAX (1u << 22)

static char *debuginfo_path;
static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &debuginfo_path,
};

void tvh_symtab_init(struct tvh_symtab *st)
{
	memset(st, 0, sizeof(*st));
	elf_version(EV_CURRENT);
}

static void module_free(struct tvh_module *m)
{
	if (m->dwfl)
		dwfl_end(m->dwfl);
	if (m->elf)
		elf_end(m->elf);
	if (m->fd >= 0)
		close(m->fd);
	if (m->pe) {
		tvh_pe_free(m->pe);
		free(m->pe);
	}
	if (m->map)
		munmap(m->map, m->map_len);
	free(m->segs);
	free(m->path);
}

void tvh_symtab_free(struct tvh_symtab *st)
{
	for (unsigned i = 0; i < st->nmods; i++)
		module_free(&st->mods[i]);
	free(st->mods);
	free(st->cache);
	memset(st, 0, sizeof(*st));
}

int tvh_parse_elf_spec(const char *spec, bool require_base, char **path,
		       uint64_t *base, bool *has_base)
{
	const char *at = spec ? strrchr(spec, '@') : NULL;
	size_t plen;

	*path = NULL;
	*base = 0;
	*has_base = false;
	if (!spec || !*spec)
		return -TVH_ERR_INVALID;
	plen = strlen(spec);
	if (at) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(at + 1, &end, 0);
		if (at[1] && !*end && !errno && at[1] != '-') {
			*base = v;
			*has_base = true;
			plen = (size_t)(at - spec);
		}
	}
	if (require_base && !*has_base)
		return -TVH_ERR_INVALID;
	if (!plen)
		return -TVH_ERR_INVALID;
	*path = strndup(spec, plen);
	return *path ? 0 : -TVH_ERR_NOMEM;
}

static int fail(struct tvh_symtab *st, int err, const char *fmt, const char *a,
		const char *b)
{
	snprintf(st->error, sizeof(st->error), fmt, a, b);
	return err;
}

static int load_segments(struct tvh_module *m, Elf *elf)
{
	size_t n;
	uint64_t lo = UINT64_MAX, hi = 0;

	if (elf_getphdrnum(elf, &n))
		return -TVH_ERR_ELF;
	m->segs = calloc(n ? n : 1, sizeof(*m->segs));
	if (!m->segs)
		return -TVH_ERR_NOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_offset > m->image_size ||
		    ph.p_filesz > m->image_size - ph.p_offset ||
		    ph.p_memsz < ph.p_filesz || ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			return -TVH_ERR_ELF;
		m->segs[m->nsegs++] = (struct tvh_segment){
			.vaddr = ph.p_vaddr, .memsz = ph.p_memsz,
			.offset = ph.p_offset, .filesz = ph.p_filesz,
			.flags = ph.p_flags,
		};
		if (ph.p_vaddr < lo)
			lo = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_memsz > hi)
			hi = ph.p_vaddr + ph.p_memsz;
	}
	if (!m->nsegs)
		return -TVH_ERR_ELF;
	if (!m->has_base)
		m->base = lo;
	m->bias = m->base - lo;
	m->end = hi + m->bias;
	return 0;
}

/* A PE/COFF image: sections as segments, names from pe.c. */
static int load_pe(struct tvh_symtab *st, struct tvh_module *m)
{
	struct stat sb;
	struct tvh_pe *pe;
	int err;

	if (fstat(m->fd, &sb) || sb.st_size <= 0)
		return fail(st, -TVH_ERR_IO, "%s: %s", m->path, strerror(errno));
	m->map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, m->fd, 0);
	if (m->map == MAP_FAILED) {
		m->map = NULL;
		return fail(st, -TVH_ERR_IO, "%s: %s", m->path, strerror(errno));
	}
	m->map_len = (size_t)sb.st_size;
	pe = calloc(1, sizeof(*pe));
	if (!pe)
		return fail(st, -TVH_ERR_NOMEM, "%s%s", "out of memory", "");
	err = tvh_pe_parse(m->map, m->map_len, pe);
	if (err) {
		free(pe);
		return fail(st, err == -TVH_ERR_NOMEM ? err : -TVH_ERR_ELF,
			    "%s: bad PE/COFF image: %s", m->path, tvh_errstr(err));
	}
	m->pe = pe;
	m->machine = pe->machine;
	m->image = m->map;
	m->image_size = m->map_len;
	m->segs = calloc(pe->nsegs, sizeof(*m->segs));
	if (!m->segs)
		return fail(st, -TVH_ERR_NOMEM, "%s%s", "out of memory", "");
	memcpy(m->segs, pe->segs, pe->nsegs * sizeof(*m->segs));
	m->nsegs = pe->nsegs;
	if (!m->has_base)
		m->base = pe->image_base;
	m->bias = m->base - pe->image_base;
	m->end = m->base + pe->size_of_image;
	m->entry = m->base + pe->entry_rva;
	return 0;
}

static int push_module(struct tvh_symtab *st, struct tvh_module *m)
{
	struct tvh_module *mods = realloc(st->mods, (st->nmods + 1) * sizeof(*mods));

	if (!mods)
		return fail(st, -TVH_ERR_NOMEM, "%s%s", "out of memory", "");
	st->mods = mods;
	/* m->name points into m->path's heap string: moving m is fine. */
	st->mods[st->nmods] = *m;
	return (int)st->nmods++;
}

int tvh_symtab_add(struct tvh_symtab *st, const char *spec)
{
	char *path;
	uint64_t base;
	bool has_base;
	int err;

	st->error[0] = 0;
	err = tvh_parse_elf_spec(spec, false, &path, &base, &has_base);
	if (err)
		return fail(st, err, "bad module spec '%s'%s (want PATH[@BASE])",
			    spec ? spec : "", "");
	err = tvh_symtab_add_at(st, path, has_base, base);
	free(path);
	return err;
}

int tvh_symtab_clone(struct tvh_symtab *dst, const struct tvh_symtab *src)
{
	dst->ksyms = src->ksyms;
	dst->regions = src->regions;
	for (unsigned i = 0; i < src->nmods; i++) {
		int err = tvh_symtab_add_at(dst, src->mods[i].path, true,
					    src->mods[i].base);

		if (err < 0)
			return err;
	}
	return 0;
}

int tvh_symtab_add_at(struct tvh_symtab *st, const char *path, bool has_base,
		      uint64_t base)
{
	struct tvh_module m;
	GElf_Ehdr eh;
	GElf_Addr dbias = 0;
	uint8_t magic[2] = { 0, 0 };
	Elf *elf;
	const char *slash;
	int err;

	memset(&m, 0, sizeof(m));
	m.fd = -1;
	st->error[0] = 0;
	m.path = path && *path ? strdup(path) : NULL;
	if (!m.path)
		return fail(st, path && *path ? -TVH_ERR_NOMEM : -TVH_ERR_INVALID,
			    "bad module path '%s'%s", path ? path : "", "");
	m.base = base;
	m.has_base = has_base;
	slash = strrchr(m.path, '/');
	m.name = slash ? slash + 1 : m.path;
	m.fd = open(m.path, O_RDONLY | O_CLOEXEC);
	if (m.fd < 0) {
		err = fail(st, -TVH_ERR_IO, "%s: %s", m.path, strerror(errno));
		goto out;
	}
	if (pread(m.fd, magic, 2, 0) == 2 && tvh_pe_is_pe(magic, 2)) {
		err = load_pe(st, &m);
		if (err)
			goto out;
		err = push_module(st, &m);
		if (err < 0)
			goto out;
		return err;
	}
	elf = elf_begin(m.fd, ELF_C_READ_MMAP, NULL);
	m.elf = elf;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		err = fail(st, -TVH_ERR_ELF, "%s: %s", m.path,
			   "not an ELF file nor a PE/COFF image");
		goto out;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		err = fail(st, -TVH_ERR_ELF, "%s: %s", m.path,
			   "not an executable or shared object (ET_EXEC/ET_DYN)");
		goto out;
	}
	m.machine = eh.e_machine;
	m.image = (const uint8_t *)elf_rawfile(elf, &m.image_size);
	if (!m.image) {
		err = fail(st, -TVH_ERR_ELF, "%s: %s", m.path, elf_errmsg(-1));
		goto out;
	}
	err = load_segments(&m, elf);
	if (err) {
		err = fail(st, err, "%s: %s", m.path,
			   err == -TVH_ERR_NOMEM ? "out of memory" :
			   "no usable PT_LOAD program headers");
		goto out;
	}
	m.entry = eh.e_entry + m.bias;

	/* Symbols and lines: best effort, a module without them still maps. */
	m.dwfl = dwfl_begin(&dwfl_callbacks);
	if (m.dwfl) {
		dwfl_report_begin(m.dwfl);
		m.dwmod = dwfl_report_elf(m.dwfl, m.name, m.path, -1, 0, false);
		dwfl_report_end(m.dwfl, NULL, NULL);
		if (m.dwmod && dwfl_module_getelf(m.dwmod, &dbias))
			m.dwfl_bias = dbias;
		else
			m.dwmod = NULL;
	}

	err = push_module(st, &m);
	if (err >= 0)
		return err;
out:
	module_free(&m);
	return err;
}

int tvh_symtab_find(const struct tvh_symtab *st, uint64_t addr)
{
	for (unsigned i = 0; i < st->nmods; i++)
		if (addr >= st->mods[i].base && addr < st->mods[i].end)
			return (int)i;
	return -1;
}

bool tvh_module_exec_span(const struct tvh_module *m, uint64_t *lo, uint64_t *hi)
{
	bool any = false;

	*lo = UINT64_MAX;
	*hi = 0;
	for (unsigned i = 0; i < m->nsegs; i++) {
		const struct tvh_segment *s = &m->segs[i];

		if (!(s->flags & PF_X) || !s->memsz)
			continue;
		if (s->vaddr + m->bias < *lo)
			*lo = s->vaddr + m->bias;
		if (s->vaddr + s->memsz + m->bias > *hi)
			*hi = s->vaddr + s->memsz + m->bias;
		any = true;
	}
	return any;
}

int tvh_symtab_find_exec(const struct tvh_symtab *st, uint64_t addr)
{
	for (unsigned i = 0; i < st->nmods; i++) {
		const struct tvh_module *m = &st->mods[i];
		uint64_t link = addr - m->bias;

		/* Segments, not [base, end): a module may wrap (sym.h). */
		for (unsigned k = 0; k < m->nsegs; k++) {
			const struct tvh_segment *s = &m->segs[k];

			if ((s->flags & PF_X) && link >= s->vaddr &&
			    link - s->vaddr < s->memsz)
				return (int)i;
		}
	}
	return -1;
}

bool tvh_symtab_usable(const struct tvh_symtab *st)
{
	return st->nmods || (st->ksyms && st->ksyms->n) ||
	       (st->regions && st->regions->n);
}

int tvh_regions_add(struct tvh_regions *r, uint64_t base, uint64_t size,
		    const char *name, size_t len, uint8_t kind)
{
	char *copy;

	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct tvh_region *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return -TVH_ERR_NOMEM;
		r->v = v;
		r->cap = cap;
	}
	copy = strndup(name, len);
	if (!copy)
		return -TVH_ERR_NOMEM;
	r->v[r->n++] = (struct tvh_region){ .base = base,
		.end = base + size < base ? UINT64_MAX : base + size,
		.name = copy, .kind = kind };
	return 0;
}

static int region_cmp(const void *a, const void *b)
{
	const struct tvh_region *x = a, *y = b;

	return x->base < y->base ? -1 : x->base > y->base;
}

void tvh_regions_sort(struct tvh_regions *r)
{
	if (r->n)
		qsort(r->v, r->n, sizeof(*r->v), region_cmp);
}

void tvh_regions_free(struct tvh_regions *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].name);
	free(r->v);
	memset(r, 0, sizeof(*r));
}

const struct tvh_region *tvh_regions_find(const struct tvh_regions *r,
					  uint64_t addr)
{
	size_t lo = 0, hi = r->n;

	/* The last region starting at or below addr, then backwards for nesting. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->v[mid].base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo--)
		if (addr < r->v[lo].end)
			return &r->v[lo];
	return NULL;
}

/* Kernel symbols, then regions, for an address no module names. */
static int lookup_fallback(struct tvh_symtab *st, uint64_t addr,
			   struct tvh_sym *out)
{
	const struct tvh_region *rg;
	const char *name, *mod;
	uint64_t off;

	if (st->ksyms && !tvh_ksyms_lookup(st->ksyms, addr, &name, &off, &mod)) {
		out->func = name;
		out->func_offset = off;
		out->ksym = true;
		out->module_name = mod ? mod : "kernel";
		out->module_offset = addr - (st->ksyms->text + st->ksyms->bias);
		return 0;
	}
	if (st->regions && (rg = tvh_regions_find(st->regions, addr)) != NULL) {
		out->module_name = rg->name;
		out->module_offset = addr - rg->base;
		return 0;
	}
	return -TVH_ERR_NOT_FOUND;
}

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static struct tvh_sym_cache_entry *cache_slot(struct tvh_symtab *st, uint64_t addr)
{
	size_t mask, i;

	if (!st->cache || st->cache_used * 2 >= st->cache_cap) {
		size_t cap = st->cache_cap ? st->cache_cap * 2 : CACHE_MIN;
		struct tvh_sym_cache_entry *old = st->cache;
		size_t old_cap = st->cache_cap;

		if (cap > CACHE_MAX) {
			/* Huge working set: start over rather than grow. */
			memset(st->cache, 0, st->cache_cap * sizeof(*st->cache));
			st->cache_used = 0;
		} else {
			struct tvh_sym_cache_entry *n = calloc(cap, sizeof(*n));

			if (!n)
				return NULL;
			st->cache = n;
			st->cache_cap = cap;
			st->cache_used = 0;
			for (size_t k = 0; k < old_cap; k++) {
				if (!old[k].used)
					continue;
				i = hash64(old[k].addr) & (cap - 1);
				while (n[i].used)
					i = (i + 1) & (cap - 1);
				n[i] = old[k];
				st->cache_used++;
			}
			free(old);
		}
	}
	mask = st->cache_cap - 1;
	i = hash64(addr) & mask;
	while (st->cache[i].used && st->cache[i].addr != addr)
		i = (i + 1) & mask;
	return &st->cache[i];
}

/*
 * The module holding addr: the one whose code holds it, else by [base,
 * end).  Code first: vmlinux@0's [base, end) runs from its per-CPU
 * segment at 0 to the kernel's top and so holds every physical address
 * too, where a copy placed at the physical text (vmlinux@BASE with the
 * text landing there; its span then wraps past 2^64) has the code.
 */
static int find_module(const struct tvh_symtab *st, uint64_t addr)
{
	int idx = tvh_symtab_find_exec(st, addr);

	return idx >= 0 ? idx : tvh_symtab_find(st, addr);
}

int tvh_sym_lookup(struct tvh_symtab *st, uint64_t addr, struct tvh_sym *out)
{
	struct tvh_sym_cache_entry *e;
	int idx = find_module(st, addr);
	struct tvh_module *m;

	memset(out, 0, sizeof(*out));
	out->module = -1;
	if (idx < 0)
		return lookup_fallback(st, addr, out);
	m = &st->mods[idx];
	out->module = idx;
	out->module_name = m->name;
	out->module_offset = addr - m->base;
	st->lookups++;
	e = cache_slot(st, addr);
	if (e && e->used) {
		st->cache_hits++;
	} else {
		struct tvh_sym_cache_entry tmp = { .addr = addr, .used = true,
						   .module = idx };

		if (m->pe) {
			uint32_t off = 0;

			tmp.func = tvh_pe_func(m->pe, (uint32_t)(addr - m->base), &off);
			tmp.func_offset = off;
		} else if (m->dwmod) {
			Dwfl_Module *dm = m->dwmod;
			GElf_Addr a = addr - m->bias + m->dwfl_bias;
			GElf_Off off = 0;
			GElf_Sym sym;
			Dwfl_Line *line;

			tmp.func = dwfl_module_addrinfo(dm, a, &off, &sym, NULL,
							NULL, NULL);
			tmp.func_offset = off;
			line = dwfl_module_getsrc(dm, a);
			if (line)
				tmp.file = dwfl_lineinfo(line, NULL, &tmp.line,
							 NULL, NULL, NULL);
		}
		if (!e)
			e = &tmp;
		else
			st->cache_used++;
		*e = tmp;
	}
	out->func = e->func;
	out->func_offset = e->func_offset;
	out->file = e->file;
	out->line = e->line;
	if (!out->func && st->ksyms) {
		const char *name, *mod;
		uint64_t off;

		/* A vmlinux without a symbol table: the map names its code. */
		if (!tvh_ksyms_lookup(st->ksyms, addr, &name, &off, &mod)) {
			out->func = name;
			out->func_offset = off;
			out->ksym = true;
		}
	}
	return 0;
}

int tvh_sym_format(struct tvh_symtab *st, uint64_t addr, char *buf, size_t n)
{
	struct tvh_sym s;
	int len;

	if (!n)
		return 0;
	buf[0] = 0;
	if (tvh_sym_lookup(st, addr, &s))
		return 0;
	if (s.func)
		len = snprintf(buf, n, "%s+0x%" PRIx64, s.func, s.func_offset);
	else
		len = snprintf(buf, n, "%s+0x%" PRIx64, s.module_name, s.module_offset);
	if (len >= 0 && (size_t)len < n && s.file)
		len += snprintf(buf + len, n - (size_t)len, " (%s:%d)", s.file, s.line);
	if (len < 0)
		len = 0;
	return (size_t)len >= n ? (int)n - 1 : len;
}

size_t tvh_sym_read(const struct tvh_symtab *st, uint64_t addr, void *buf,
		    size_t n)
{
	int idx = find_module(st, addr);
	const struct tvh_module *m;

	if (idx < 0)
		return 0;
	m = &st->mods[idx];
	for (unsigned i = 0; i < m->nsegs; i++) {
		const struct tvh_segment *s = &m->segs[i];
		uint64_t link = addr - m->bias, off;

		if (link < s->vaddr || link - s->vaddr >= s->filesz)
			continue;
		off = link - s->vaddr;
		if (n > s->filesz - off)
			n = (size_t)(s->filesz - off);
		memcpy(buf, m->image + s->offset + off, n);
		return n;
	}
	return 0;
}
