/* SPDX-License-Identifier: MIT */
/*
 * kallsyms_img.h - a kernel's own symbol table, recovered from the image.
 *
 * Every Linux image built with CONFIG_KALLSYMS carries the table that
 * /proc/kallsyms prints, in .rodata, even when the ELF file has no
 * symbols (Debian's vmlinuz, and the vmlinux extracted from it).  This
 * finds it by its content and decodes it, so a user with only the kernel
 * image gets the names /proc/kallsyms would show (with --kallsyms or
 * --system-map given the image itself, or `tracevisor ksyms IMAGE`).
 *
 * The tables (scripts/kallsyms.c, Linux 6.1, 64-bit, each label aligned
 * to 8 bytes and padded with zeros):
 *   kallsyms_offsets       s32[num_syms]   (CONFIG_KALLSYMS_BASE_RELATIVE)
 *   kallsyms_relative_base u64
 *   kallsyms_num_syms      u32
 *   kallsyms_names         per symbol: its compressed length (ULEB128, one
 *                          or two bytes), then that many token codes;
 *                          expanded, the first byte is the type letter
 *   kallsyms_markers       u32[(num_syms + 255) / 256]: the offset in
 *                          kallsyms_names of every 256th symbol
 *   kallsyms_token_table   256 NUL-terminated strings, the expansion of
 *                          each code (unused codes: empty)
 *   kallsyms_token_index   u16[256]: where each string starts
 * Linux 6.2 and 6.3 add kallsyms_seqs_of_names (3 bytes big-endian per
 * symbol: the symbols' indices in name order) between the markers and
 * the token table; so do stable kernels that took that change, Debian
 * 12's 6.1.1xx among them (its fixture kernel 6.1.192 has it).  Linux
 * 6.4 and later emit num_syms, names, markers, token table and index
 * first, then the offsets, the relative base and the seqs (u32).  All
 * three orders are accepted; kernels without BASE_RELATIVE (absolute
 * addresses, CONFIG_KALLSYMS_BASE_RELATIVE=n) are not.
 *
 * Addresses: relative_base + (u32)offset; with CONFIG_KALLSYMS_ABSOLUTE_
 * PERCPU (x86-64 SMP) an offset >= 0 is the absolute value (per-CPU
 * variables, offsets from 0) and a negative one means relative_base - 1 -
 * offset.  Which rule holds is read from the table: the absolute-percpu
 * encoding stores nearly every offset negative, the other never does.
 *
 * Finding it: the token index is 256 strictly increasing u16 starting
 * at 0 whose values are exactly where the 256 strings of the table just
 * before it start; the markers end just before the table (walked back to
 * markers[0] = 0); kallsyms_names and num_syms are found by walking back
 * from the markers until a u32 num_syms that fits the markers' count
 * sits right before names that decode: every name expands (type letter
 * plus 1..511 printable bytes, no empty token), every 256th starts at
 * its marker, the last ends where the markers begin.  The addresses must
 * then be sorted (scripts/kallsyms.c sorts them) and, in an ELF file,
 * the relative base must lie in a PT_LOAD segment.
 *
 * Input: an ELF64 vmlinux (alignment from its PT_LOAD segments' virtual
 * addresses; sections are not needed) or a raw image (alignment from
 * file offsets).  A compressed bzImage is refused with a message naming
 * the way out (the vmlinux the fixture script extracts).
 */
#ifndef TVH_KALLSYMS_IMG_H
#define TVH_KALLSYMS_IMG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host-tools/lib/ksyms.h"

enum tvh_kallsyms_layout {
	TVH_KALLSYMS_6_1,        /* offsets, relative_base, num_syms, names... */
	TVH_KALLSYMS_6_2,        /* 6.1's, 3-byte seqs_of_names before the tokens */
	TVH_KALLSYMS_6_4,        /* num_syms, names, ..., index, offsets, base */
};

/* Where the tables are in the buffer (byte offsets) and what they say. */
struct tvh_kallsyms_img {
	const uint8_t *buf;      /* the image (not owned) */
	size_t len;
	uint32_t num_syms;
	size_t offsets;          /* s32[num_syms] */
	size_t relative_base_at;
	size_t names, names_end; /* [names, names_end) */
	size_t markers;          /* u32[(num_syms + 255) / 256] */
	size_t seqs;             /* 6.2 layout: kallsyms_seqs_of_names */
	size_t token_table, token_index;
	uint64_t relative_base;
	bool abs_percpu;         /* the negative-offset rule (see above) */
	bool uleb_len;           /* two-byte lengths (0x80 set: ULEB128) */
	enum tvh_kallsyms_layout layout;
	uint16_t tok_off[256];   /* into token_table */
	uint8_t tok_len[256];
	uint32_t tok_nonempty;
	char error[256];         /* why the last call failed */
};

/* One decoded symbol. */
struct tvh_kallsyms_sym {
	uint64_t addr;
	char type;
	char name[TVH_KSYM_NAME_MAX + 1];
};

/* A walk over the symbols in table (address) order. */
struct tvh_kallsyms_iter {
	uint32_t i;
	size_t off;              /* in buf: the next symbol's length byte */
};

/*
 * tvh_kallsyms_img_find - the tables in buf[0..len) (an ELF64 file or a
 * raw image).  Returns 0, or -TVH_ERR_NOT_FOUND (no table that passes
 * every check; t->error says what was seen), -TVH_ERR_INVALID (a
 * compressed bzImage, a malformed ELF header).  Bounded: every read is
 * checked against len; the search is linear in len.
 */
int tvh_kallsyms_img_find(struct tvh_kallsyms_img *t, const uint8_t *buf,
			  size_t len);

void tvh_kallsyms_iter_init(struct tvh_kallsyms_iter *it,
			    const struct tvh_kallsyms_img *t);

/*
 * tvh_kallsyms_img_next - the next symbol into *s.  Returns 1 (one
 * symbol), 0 (the end) or -TVH_ERR_INVALID (a name that does not decode;
 * not after a successful find).
 */
int tvh_kallsyms_img_next(const struct tvh_kallsyms_img *t,
			  struct tvh_kallsyms_iter *it, struct tvh_kallsyms_sym *s);

/*
 * tvh_ksyms_from_image - the table of buf as a struct tvh_ksyms, exactly
 * as tvh_ksyms_parse would build it from the /proc/kallsyms this kernel
 * prints (format TVH_KSYMS_KALLSYMS; name: for messages).  Returns the
 * number of symbols kept, -TVH_ERR_NOT_FOUND / -TVH_ERR_INVALID (k->error
 * says why), -TVH_ERR_NOMEM.
 */
int tvh_ksyms_from_image(struct tvh_ksyms *k, const uint8_t *buf, size_t len,
			 const char *name);

/* A kernel image rather than a text symbol file: ELF magic or a NUL byte. */
bool tvh_kallsyms_is_image(const uint8_t *buf, size_t len);

/*
 * tvh_ksyms_load_any - a /proc/kallsyms or System.map file (fmt), or a
 * kernel image (vmlinux) whose own table is recovered: told apart by
 * tvh_kallsyms_is_image.  Returns as tvh_ksyms_load / tvh_ksyms_from_image.
 */
int tvh_ksyms_load_any(struct tvh_ksyms *k, const char *path,
		       enum tvh_ksyms_format fmt);

#endif /* TVH_KALLSYMS_IMG_H */
