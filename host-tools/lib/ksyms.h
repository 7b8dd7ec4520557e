/* SPDX-License-Identifier: MIT */
/*
 * ksyms.h - kernel symbols as users have them: a traced machine's
 * /proc/kallsyms, or the System.map a distribution ships in /boot
 * (Debian: /boot/System.map-VERSION), the way perf's --kallsyms names
 * kernel addresses when no vmlinux with symbols is at hand.
 *
 * Line formats (nm's output; one symbol a line):
 *   System.map:  "ffffffff81000000 T _text"
 *   kallsyms:    "ffffffff81000000 T _text" or
 *                "ffffffffc0a01000 t foo_init\t[foo]"   (a module's symbol)
 * ADDR is 1..16 hex digits, TYPE one letter, NAME 1..TVH_KSYM_NAME_MAX
 * bytes with no blank; a kallsyms line may end in "[module]".  Empty
 * lines are skipped.  Any other line is an error naming the file and the
 * line number.  Types A/a (absolute), U (undefined), N/n (debugging) and
 * '?' name no code and are left out.
 *
 * The table is sorted by address (input in any order is accepted;
 * unsorted lines are counted).  At one address the first symbol of the
 * best kind is kept: text (t/T/w/W) over others, global over local, then
 * file order; the rest are aliases (counted as duplicates).  Lookup is a
 * binary search: the greatest address <= the one asked, within the
 * kernel's range.
 *
 * The kernel's range: the file's symbols in the upper half (>=
 * 0xffff800000000000; the lower-half ones of a 64-bit map are per-CPU
 * offsets such as fixed_percpu_data at 0, which must not name user or
 * firmware code) from the lowest to _end (else the highest + 4 KiB).  A
 * file with no upper-half symbol keeps all of them.
 *
 * A file read unprivileged from /proc/kallsyms (kptr_restrict) has every
 * address 0: that is refused with -TVH_ERR_INVALID and a message saying
 * so.
 *
 * Relocation (KASLR): addresses in the file are link-time (System.map) or
 * of the boot that wrote it (kallsyms).  tvh_ksyms_relocate moves them by
 * bias = run-time _text - the file's _text; tvh_ksyms_phys_alias adds the
 * physical alias of the kernel's text (where startup_64 runs before
 * paging moves the kernel to its virtual address).
 */
#ifndef TVH_KSYMS_H
#define TVH_KSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TVH_KSYM_NAME_MAX 511u            /* KSYM_NAME_LEN 512, NUL included */
#define TVH_KSYM_UPPER 0xffff800000000000ull

enum tvh_ksyms_format {
	TVH_KSYMS_KALLSYMS,      /* /proc/kallsyms: "[module]" allowed */
	TVH_KSYMS_SYSTEM_MAP,    /* System.map: three fields only */
};

struct tvh_ksym {
	uint64_t addr;           /* as in the file */
	uint32_t name;           /* offset in names */
	uint32_t module;         /* offset in names, or UINT32_MAX: the kernel */
	char type;
};

struct tvh_ksyms {
	struct tvh_ksym *v;      /* sorted by addr, one per address */
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	char *path;              /* the file, for messages */
	enum tvh_ksyms_format format;
	uint64_t lo, hi;         /* the kernel's range, file addresses [lo, hi) */
	bool have_text;
	uint64_t text;           /* the file's _text (or startup_64's, else lo) */
	uint64_t startup_64;     /* the file's startup_64, 0 when absent */
	uint64_t etext;          /* the file's _etext, 0 when absent */
	uint64_t bias;           /* run-time = file + bias (mod 2^64) */
	bool relocated;          /* tvh_ksyms_relocate was called */
	bool have_phys;          /* physical alias of the text, see above */
	uint64_t phys_text, phys_len;
	/* what the parse saw */
	uint64_t lines, symbols, skipped_types, lower_half, aliases, unsorted;
	char error[320];         /* the last error: "FILE:LINE: what" */
};

void tvh_ksyms_init(struct tvh_ksyms *k);
void tvh_ksyms_free(struct tvh_ksyms *k);

/*
 * tvh_ksyms_parse - the lines of buf[0..len) (name: for messages).
 * Returns the number of symbols kept, or -TVH_ERR_INVALID (a malformed
 * line, k->error names it; a file whose addresses are all 0; no symbol
 * at all), -TVH_ERR_NOMEM.  On error k holds nothing usable.
 */
int tvh_ksyms_parse(struct tvh_ksyms *k, const char *buf, size_t len,
		    enum tvh_ksyms_format fmt, const char *name);

/* tvh_ksyms_load - tvh_ksyms_parse of a file; -TVH_ERR_IO (errno) too. */
int tvh_ksyms_load(struct tvh_ksyms *k, const char *path,
		   enum tvh_ksyms_format fmt);

/* The file address of a kept symbol by name (first in address order), or 0. */
uint64_t tvh_ksyms_addr_of(const struct tvh_ksyms *k, const char *name);

/* Move every run-time address by bias (run-time = file + bias). */
void tvh_ksyms_relocate(struct tvh_ksyms *k, uint64_t bias);

/*
 * tvh_ksyms_phys_alias - the kernel's text also runs at physical address
 * phys_text (where the file's _text is; before paging moves it): lookups
 * in [phys_text, phys_text + text size) name the same symbols.
 */
void tvh_ksyms_phys_alias(struct tvh_ksyms *k, uint64_t phys_text);

/*
 * tvh_ksyms_lookup - the symbol covering run-time address addr: its name,
 * addr's offset from it and its module (NULL: the kernel itself).
 * Returns 0 or -TVH_ERR_NOT_FOUND (outside the kernel's range).
 */
int tvh_ksyms_lookup(const struct tvh_ksyms *k, uint64_t addr, const char **name,
		     uint64_t *offset, const char **module);

/*
 * tvh_ksyms_lookup_data - the data symbol covering run-time address addr
 * (memory tracing names the data an access touched): as tvh_ksyms_lookup,
 * but only when the last symbol at or below addr is data (types d/D,
 * b/B, r/R, g/G, s/S, v/V: initialised, bss, read-only, small, weak
 * object), and without the text's physical alias.  An address past a
 * function's start is in that function, not in the data before it.
 * Returns 0 or -TVH_ERR_NOT_FOUND.
 */
int tvh_ksyms_lookup_data(const struct tvh_ksyms *k, uint64_t addr, const char **name,
			  uint64_t *offset, const char **module);

#endif /* TVH_KSYMS_H */
