/* SPDX-License-Identifier: MIT */
/*
 * pe.c - PE/COFF image files for the symbolizer (see pe.h).
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/le.h"
#include "host-tools/lib/pe.h"

#define SCN_CNT_CODE     0x00000020u
#define SCN_MEM_EXECUTE  0x20000000u
#define SCN_MEM_READ     0x40000000u
#define SCN_MEM_WRITE    0x80000000u
#define SYM_SIZE         18u
#define SYM_CLASS_EXTERNAL 2
#define SYM_CLASS_STATIC   3
#define SYM_CLASS_LABEL    6
#define SYM_TYPE_FUNCTION  0x20u     /* complex type DT_FUNCTION << 4 */

static bool fits(size_t size, uint64_t off, uint64_t n)
{
	return off <= size && n <= size - off;
}

int tvh_pe_is_pe(const uint8_t *img, size_t size)
{
	return size >= 2 && img[0] == 'M' && img[1] == 'Z';
}

void tvh_pe_free(struct tvh_pe *pe)
{
	free(pe->segs);
	free(pe->syms);
	free(pe->names);
	memset(pe, 0, sizeof(*pe));
}

/* Executable section holding rva, or NULL. */
static const struct tvh_segment *exec_seg(const struct tvh_pe *pe, uint32_t rva)
{
	uint64_t a = pe->image_base + rva;

	for (unsigned i = 0; i < pe->nsegs; i++) {
		const struct tvh_segment *s = &pe->segs[i];

		if ((s->flags & PF_X) && a >= s->vaddr && a - s->vaddr < s->memsz)
			return s;
	}
	return NULL;
}

/* File offset of rva through the section table; false if not file-backed. */
static bool rva_to_off(const struct tvh_pe *pe, uint32_t rva, uint64_t *off)
{
	uint64_t a = pe->image_base + rva;

	for (unsigned i = 0; i < pe->nsegs; i++) {
		const struct tvh_segment *s = &pe->segs[i];

		if (a >= s->vaddr && a - s->vaddr < s->filesz) {
			*off = s->offset + (a - s->vaddr);
			return true;
		}
	}
	return false;
}

struct names {
	struct tvh_pe_sym *v;
	size_t n, cap;
	char *buf;
	size_t len, bcap;
};

/* Queue a name (copied, so its offset is stored until the buffer settles). */
static int add_name(struct names *nm, uint32_t rva, const char *s, size_t len)
{
	if (!len)
		return 0;
	if (nm->n == nm->cap) {
		size_t cap = nm->cap ? nm->cap * 2 : 64;
		struct tvh_pe_sym *v = realloc(nm->v, cap * sizeof(*v));

		if (!v)
			return -TVH_ERR_NOMEM;
		nm->v = v;
		nm->cap = cap;
	}
	if (nm->len + len + 1 > nm->bcap) {
		size_t cap = nm->bcap ? nm->bcap : 1024;
		char *b;

		while (cap < nm->len + len + 1)
			cap *= 2;
		b = realloc(nm->buf, cap);
		if (!b)
			return -TVH_ERR_NOMEM;
		nm->buf = b;
		nm->bcap = cap;
	}
	memcpy(nm->buf + nm->len, s, len);
	nm->buf[nm->len + len] = 0;
	/* The offset for now; made a pointer once the buffer stops moving. */
	nm->v[nm->n].rva = rva;
	nm->v[nm->n].name = (const char *)(uintptr_t)nm->len;
	nm->n++;
	nm->len += len + 1;
	return 0;
}

/* A NUL-terminated string at file offset off, at most max bytes; its length or -1. */
static long cstr(const uint8_t *img, size_t size, uint64_t off, size_t max)
{
	for (size_t i = 0; i < max && off + i < size; i++)
		if (!img[off + i])
			return (long)i;
	return -1;
}

/* PE Format, "The .edata Section": names -> ordinals -> function RVAs. */
static int read_exports(const uint8_t *img, size_t size, struct tvh_pe *pe,
			uint32_t dir_rva, uint32_t dir_size, struct names *nm)
{
	uint64_t d, fo, no, oo;
	uint32_t nfuncs, nnames;

	if (!dir_rva || !rva_to_off(pe, dir_rva, &d) || !fits(size, d, 40))
		return 0;
	nfuncs = tvh_le32(img + d + 20);
	nnames = tvh_le32(img + d + 24);
	if (!rva_to_off(pe, tvh_le32(img + d + 28), &fo) ||
	    !rva_to_off(pe, tvh_le32(img + d + 32), &no) ||
	    !rva_to_off(pe, tvh_le32(img + d + 36), &oo) ||
	    !fits(size, fo, (uint64_t)nfuncs * 4) ||
	    !fits(size, no, (uint64_t)nnames * 4) ||
	    !fits(size, oo, (uint64_t)nnames * 2))
		return 0;
	for (uint32_t i = 0; i < nnames; i++) {
		uint32_t ord = tvh_le16(img + oo + 2 * i), frva, nrva;
		uint64_t noff;
		long len;
		int err;

		if (ord >= nfuncs)
			continue;
		frva = tvh_le32(img + fo + 4 * ord);
		/* A forwarder points inside the export directory: not code. */
		if (frva >= dir_rva && frva - dir_rva < dir_size)
			continue;
		nrva = tvh_le32(img + no + 4 * i);
		if (!exec_seg(pe, frva) || !rva_to_off(pe, nrva, &noff))
			continue;
		len = cstr(img, size, noff, 512);
		if (len <= 0)
			continue;
		err = add_name(nm, frva, (const char *)img + noff, (size_t)len);
		if (err)
			return err;
	}
	return 0;
}

/* PE Format, "COFF Symbol Table": functions and labels in code sections. */
static int read_coff_syms(const uint8_t *img, size_t size, struct tvh_pe *pe,
			  uint32_t ptr, uint32_t count, const uint8_t *sec_tab,
			  unsigned nsec, struct names *nm)
{
	uint64_t strtab;
	uint32_t strsize = 0;

	if (!ptr || !count || !fits(size, ptr, (uint64_t)count * SYM_SIZE))
		return 0;
	strtab = ptr + (uint64_t)count * SYM_SIZE;
	if (fits(size, strtab, 4))
		strsize = tvh_le32(img + strtab);
	if (!fits(size, strtab, strsize))
		strsize = 0;
	for (uint32_t i = 0; i < count; i++) {
		const uint8_t *s = img + ptr + (uint64_t)i * SYM_SIZE;
		int16_t secno = (int16_t)tvh_le16(s + 12);
		uint16_t type = tvh_le16(s + 14);
		uint8_t cls = s[16], naux = s[17];
		uint32_t value = tvh_le32(s + 8), rva;
		const char *name;
		size_t len;
		int err;

		i += naux;
		if (secno <= 0 || (unsigned)secno > nsec)
			continue;
		if (cls != SYM_CLASS_EXTERNAL && cls != SYM_CLASS_STATIC &&
		    cls != SYM_CLASS_LABEL)
			continue;
		/* A static with aux records and no function type: a section name. */
		if (cls == SYM_CLASS_STATIC && naux && !(type & SYM_TYPE_FUNCTION))
			continue;
		rva = tvh_le32(sec_tab + 40 * (secno - 1) + 12) + value;
		if (!exec_seg(pe, rva))
			continue;
		if (tvh_le32(s)) {
			name = (const char *)s;
			len = strnlen(name, 8);
		} else {
			uint32_t o = tvh_le32(s + 4);
			long l;

			if (o < 4 || o >= strsize)
				continue;
			l = cstr(img, strtab + strsize, strtab + o, 512);
			if (l <= 0)
				continue;
			name = (const char *)img + strtab + o;
			len = (size_t)l;
		}
		if (name[0] == '.')      /* .text, .L labels: not functions */
			continue;
		err = add_name(nm, rva, name, len);
		if (err)
			return err;
	}
	return 0;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct tvh_pe_sym *x = a, *y = b;

	if (x->rva != y->rva)
		return x->rva < y->rva ? -1 : 1;
	/* Same address: the earlier-added (exports first) name wins. */
	return (uintptr_t)x->name < (uintptr_t)y->name ? -1 :
	       (uintptr_t)x->name > (uintptr_t)y->name;
}

int tvh_pe_parse(const uint8_t *img, size_t size, struct tvh_pe *pe)
{
	uint64_t peo, opt, sec;
	uint16_t nsec, optsize, magic;
	uint32_t nrva, hdrs, exp_rva = 0, exp_size = 0;
	struct names nm = { 0 };
	int err;

	memset(pe, 0, sizeof(*pe));
	if (!tvh_pe_is_pe(img, size) || !fits(size, 0x3c, 4))
		return -TVH_ERR_MAGIC;
	peo = tvh_le32(img + 0x3c);
	if (!fits(size, peo, 24))
		return -TVH_ERR_TRUNCATED;
	if (memcmp(img + peo, "PE\0\0", 4))
		return -TVH_ERR_MAGIC;
	pe->machine = tvh_le16(img + peo + 4);
	nsec = tvh_le16(img + peo + 6);
	optsize = tvh_le16(img + peo + 20);
	opt = peo + 24;
	if (!fits(size, opt, optsize) || optsize < 2)
		return -TVH_ERR_TRUNCATED;
	magic = tvh_le16(img + opt);
	if (magic == 0x10b && optsize >= 96) {
		pe->image_base = tvh_le32(img + opt + 28);
		nrva = tvh_le32(img + opt + 92);
		if (nrva >= 1 && optsize >= 96 + 8) {
			exp_rva = tvh_le32(img + opt + 96);
			exp_size = tvh_le32(img + opt + 100);
		}
	} else if (magic == 0x20b && optsize >= 112) {
		pe->image_base = tvh_le64(img + opt + 24);
		nrva = tvh_le32(img + opt + 108);
		if (nrva >= 1 && optsize >= 112 + 8) {
			exp_rva = tvh_le32(img + opt + 112);
			exp_size = tvh_le32(img + opt + 116);
		}
	} else {
		return -TVH_ERR_HEADER;
	}
	pe->entry_rva = tvh_le32(img + opt + 16);
	pe->size_of_image = tvh_le32(img + opt + 56);
	hdrs = tvh_le32(img + opt + 60);
	if (nsec > TVH_PE_MAX_SECTIONS)
		return -TVH_ERR_HEADER;
	sec = opt + optsize;
	if (!fits(size, sec, (uint64_t)nsec * 40))
		return -TVH_ERR_TRUNCATED;
	pe->segs = calloc((size_t)nsec + 1, sizeof(*pe->segs));
	if (!pe->segs)
		return -TVH_ERR_NOMEM;
	/* The headers are mapped at ImageBase too (read-only data). */
	pe->segs[pe->nsegs++] = (struct tvh_segment){
		.vaddr = pe->image_base, .memsz = hdrs, .offset = 0,
		.filesz = hdrs < size ? hdrs : size, .flags = PF_R,
	};
	for (unsigned i = 0; i < nsec; i++) {
		const uint8_t *s = img + sec + 40 * i;
		uint32_t vsize = tvh_le32(s + 8), va = tvh_le32(s + 12);
		uint32_t raw = tvh_le32(s + 16), ptr = tvh_le32(s + 20);
		uint32_t ch = tvh_le32(s + 36);
		uint32_t memsz = vsize ? vsize : raw;
		uint32_t filesz = raw < memsz ? raw : memsz;

		if ((uint64_t)va + memsz > pe->size_of_image || !fits(size, ptr, filesz)) {
			tvh_pe_free(pe);
			return -TVH_ERR_HEADER;
		}
		if (!memsz)
			continue;
		pe->segs[pe->nsegs++] = (struct tvh_segment){
			.vaddr = pe->image_base + va, .memsz = memsz,
			.offset = ptr, .filesz = filesz,
			.flags = ((ch & (SCN_MEM_EXECUTE | SCN_CNT_CODE)) ? PF_X : 0) |
				 ((ch & SCN_MEM_READ) ? PF_R : 0) |
				 ((ch & SCN_MEM_WRITE) ? PF_W : 0),
		};
	}
	err = read_exports(img, size, pe, exp_rva, exp_size, &nm);
	if (!err)
		err = read_coff_syms(img, size, pe, tvh_le32(img + peo + 12),
				     tvh_le32(img + peo + 16), img + sec, nsec, &nm);
	if (err) {
		free(nm.v);
		free(nm.buf);
		tvh_pe_free(pe);
		return err;
	}
	if (nm.n)
		qsort(nm.v, nm.n, sizeof(*nm.v), cmp_sym);
	pe->syms = nm.v;
	pe->names = nm.buf;
	for (size_t i = 0; i < nm.n; i++) {
		if (pe->nsyms && pe->syms[pe->nsyms - 1].rva == nm.v[i].rva)
			continue;
		pe->syms[pe->nsyms] = nm.v[i];
		pe->syms[pe->nsyms].name = nm.buf + (uintptr_t)nm.v[i].name;
		pe->nsyms++;
	}
	return 0;
}

const char *tvh_pe_func(const struct tvh_pe *pe, uint32_t rva, uint32_t *off)
{
	size_t lo = 0, hi = pe->nsyms;
	const struct tvh_segment *s = exec_seg(pe, rva), *fs;

	if (!s)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pe->syms[mid].rva <= rva)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	/* A symbol in another section does not cover this address. */
	fs = exec_seg(pe, pe->syms[lo - 1].rva);
	if (fs != s)
		return NULL;
	*off = rva - pe->syms[lo - 1].rva;
	return pe->syms[lo - 1].name;
}
