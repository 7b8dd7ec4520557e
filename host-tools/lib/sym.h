/* SPDX-License-Identifier: MIT */
/*
 * sym.h - ELF modules at their run-time addresses, and symbolization
 * (function+offset, file:line) through elfutils libdwfl.
 *
 * A module is given as PATH[@BASE].  BASE is the run-time address of the
 * module's lowest PT_LOAD segment; every address of the module moves by
 * bias = BASE - (lowest PT_LOAD p_vaddr).  Without @BASE the module is
 * where its program headers say (bias 0): right for a non-relocated
 * vmlinux or a fixed-address ELF.  Examples:
 *   vmlinux@0xffffffff9a000000   (KASLR: the run-time address of _text's
 *                                 segment, e.g. from /proc/kallsyms)
 *   build/tracevisor.so@0x7e3c1000  (gnu-efi: the PE is objcopy'd from it;
 *                                 BASE = ImageBase the firmware chose)
 * ELF (ET_EXEC, ET_DYN) is read through elfutils; separate debug info is
 * found the standard elfutils way (build-id, .gnu_debuglink,
 * /usr/lib/debug).  PE/COFF images (UEFI drivers; pe.h) are recognised
 * by their "MZ": BASE is then the run-time ImageBase (where the image's
 * first byte, its headers, sit: what the trace's IMAGE records give),
 * function names come from the export table and COFF symbols when the
 * image has them, else addresses show as module+offset; no line numbers.
 */
#ifndef TVH_SYM_H
#define TVH_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tvh_segment {
	uint64_t vaddr;          /* link-time */
	uint64_t memsz;
	uint64_t offset;         /* in the file */
	uint64_t filesz;
	uint32_t flags;          /* PF_X | PF_W | PF_R */
};

struct tvh_module {
	char *path;
	const char *name;        /* basename of path */
	uint64_t base;           /* run-time address of the lowest PT_LOAD */
	uint64_t end;            /* run-time end of the highest PT_LOAD */
	uint64_t entry;          /* run-time e_entry */
	uint64_t bias;           /* run-time = link-time + bias (mod 2^64) */
	bool has_base;
	uint16_t machine;        /* e_machine */
	struct tvh_segment *segs;
	unsigned nsegs;
	/* private */
	int fd;
	void *elf;               /* Elf * */
	const uint8_t *image;    /* the file's bytes (libelf's mapping) */
	size_t image_size;
	void *dwfl;              /* Dwfl * */
	void *dwmod;             /* Dwfl_Module * */
	uint64_t dwfl_bias;      /* dwfl address = link-time + dwfl_bias */
	void *pe;                /* struct tvh_pe * for a PE/COFF image, else NULL */
	void *map;               /* the PE file's mapping */
	size_t map_len;
};

/*
 * Named address ranges with no file behind them: the trace's IMAGE
 * records (a firmware driver by its CodeView name or FvFile GUID, the OS
 * loader), so that addresses in them print as NAME+0xoff when nothing
 * better names them.  Sorted by base after tvh_regions_sort.
 */
struct tvh_region {
	uint64_t base, end;
	char *name;
	uint8_t kind;            /* enum tv_image_kind */
};

struct tvh_regions {
	struct tvh_region *v;
	size_t n, cap;
};

/* Add [base, base + size) named name[0..len); -TVH_ERR_NOMEM or 0. */
int tvh_regions_add(struct tvh_regions *r, uint64_t base, uint64_t size,
		    const char *name, size_t len, uint8_t kind);
void tvh_regions_sort(struct tvh_regions *r);
void tvh_regions_free(struct tvh_regions *r);
/* The region holding addr (the innermost: highest base), or NULL. */
const struct tvh_region *tvh_regions_find(const struct tvh_regions *r,
					  uint64_t addr);

/* A symbolized address; strings are owned by the symtab. */
struct tvh_sym {
	int module;              /* index, or -1: in no module */
	const char *module_name;
	uint64_t module_offset;  /* addr - module base */
	const char *func;        /* NULL: no symbol covers it */
	uint64_t func_offset;
	const char *file;        /* NULL: no line information */
	int line;
	bool ksym;               /* func came from the kernel symbol file */
};

struct tvh_sym_cache_entry;
struct tvh_ksyms;

struct tvh_symtab {
	struct tvh_module *mods;
	unsigned nmods;
	char error[256];         /* detail of the last failed add */
	struct tvh_sym_cache_entry *cache;
	size_t cache_cap, cache_used;
	uint64_t lookups, cache_hits;
	/*
	 * Borrowed (the caller keeps them alive while st and its clones
	 * live; set them before cloning), may be NULL:
	 *  ksyms    kernel symbols (ksyms.h: --kallsyms, --system-map): name
	 *           an address a module holds without a symbol for it (a
	 *           vmlinux with no symbol table), or in no module at all
	 *           (then module is -1, module_name "kernel" or the kallsyms
	 *           module, module_offset from the kernel's run-time _text);
	 *  regions  IMAGE records' names for addresses in no module and no
	 *           kernel symbol (module -1, module_name the region's name,
	 *           module_offset from its base).
	 */
	const struct tvh_ksyms *ksyms;
	const struct tvh_regions *regions;
};

void tvh_symtab_init(struct tvh_symtab *st);
void tvh_symtab_free(struct tvh_symtab *st);

/*
 * tvh_parse_elf_spec - split "PATH[@BASE]" (BASE: C integer syntax).  The
 * last '@' followed by a number starts BASE; a path may contain '@'.
 * *path is malloc'ed.  Errors: -TVH_ERR_INVALID (empty path, "@" with no
 * valid number after the last '@' when require_base), -TVH_ERR_NOMEM.
 */
int tvh_parse_elf_spec(const char *spec, bool require_base, char **path,
		       uint64_t *base, bool *has_base);

/*
 * tvh_symtab_add - load the module named by spec.  Returns its index or
 * -TVH_ERR_INVALID (spec), -TVH_ERR_IO (open, errno), -TVH_ERR_ELF (not
 * ELF nor PE, ET_REL/ET_CORE, no PT_LOAD, a broken PE header),
 * -TVH_ERR_NOMEM; st->error says more.  A module overlapping an earlier
 * one at run time is accepted; lookups take the first that holds the
 * address.
 * tvh_symtab_add_at - the same with the path and base apart (a path
 * holding '@' needs no quoting).
 */
int tvh_symtab_add(struct tvh_symtab *st, const char *spec);
int tvh_symtab_add_at(struct tvh_symtab *st, const char *path, bool has_base,
		      uint64_t base);

/*
 * tvh_symtab_clone - load every module of src again into dst (a fresh
 * symtab): symbolization caches are per symtab and libdwfl is not
 * thread-safe, so each thread symbolizes with its own clone.
 * Errors as tvh_symtab_add's; on error dst holds what loaded (free it).
 */
int tvh_symtab_clone(struct tvh_symtab *dst, const struct tvh_symtab *src);

/* Index of the module holding run-time address addr, or -1. */
int tvh_symtab_find(const struct tvh_symtab *st, uint64_t addr);

/*
 * Executable extents (coverage): the module whose executable segment
 * (PF_X PT_LOAD, PE code section) holds addr, or -1.  A vmlinux's lowest
 * PT_LOAD is its per-CPU data at 0, so its [base, end) spans from 0 to
 * the kernel's top; its code is only the text segments.
 * tvh_module_exec_span - the run-time [lo, hi) from the lowest
 * executable segment's start to the highest's end; false if none.
 */
int tvh_symtab_find_exec(const struct tvh_symtab *st, uint64_t addr);
bool tvh_module_exec_span(const struct tvh_module *m, uint64_t *lo, uint64_t *hi);

/* True when st can name anything: modules, kernel symbols or regions. */
bool tvh_symtab_usable(const struct tvh_symtab *st);

/*
 * tvh_sym_lookup - symbolize addr (results cached).  Returns 0 when a
 * module, the kernel symbols or a region holds it (func/file may still be
 * NULL; module is -1 for the last two), -TVH_ERR_NOT_FOUND.
 */
int tvh_sym_lookup(struct tvh_symtab *st, uint64_t addr, struct tvh_sym *out);

/*
 * tvh_sym_format - "func+0x1c (file.c:12)", "func+0x1c", "module+0x1c",
 * or "" when no module holds addr; always NUL terminated.  Returns the
 * length written.
 */
int tvh_sym_format(struct tvh_symtab *st, uint64_t addr, char *buf, size_t n);

/*
 * tvh_sym_read - copy up to n bytes of the file-backed image at run-time
 * address addr (stops at the end of its segment).  Returns the count,
 * 0 when addr is not file-backed in any module.
 */
size_t tvh_sym_read(const struct tvh_symtab *st, uint64_t addr, void *buf,
		    size_t n);

#endif /* TVH_SYM_H */
