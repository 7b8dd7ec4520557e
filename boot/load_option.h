/* SPDX-License-Identifier: MIT */
/*
 * load_option.h - EFI_LOAD_OPTION (Boot####) parsing and the choice of
 * what to boot after tracevisor.  Pure byte handling without efi.h, so
 * the host unit tests feed it malformed variables.
 */
#ifndef TV_LOAD_OPTION_H
#define TV_LOAD_OPTION_H

#include <stddef.h>
#include <stdint.h>

/* UEFI 2.x 3.1.3 load option attributes. */
#define LOAD_OPT_ACTIVE        0x00000001u
#define LOAD_OPT_FORCE_RECONNECT 0x00000002u
#define LOAD_OPT_HIDDEN        0x00000008u
#define LOAD_OPT_CATEGORY_MASK 0x00001f00u
#define LOAD_OPT_CATEGORY_BOOT 0x00000000u
#define LOAD_OPT_CATEGORY_APP  0x00000100u

struct load_option {
	uint32_t attributes;
	char description[80];          /* ASCII rendering, cut if longer */
	const uint8_t *file_path;      /* first device path of the list */
	size_t file_path_len;          /* bytes up to and including its end node */
	const uint8_t *optional_data;  /* what BDS passes as LoadOptions */
	size_t optional_data_len;
};

#define LOAD_OPT_ERR_SHORT     (-1)  /* shorter than the fixed header */
#define LOAD_OPT_ERR_DESC      (-2)  /* description has no NUL terminator */
#define LOAD_OPT_ERR_PATH_LEN  (-3)  /* FilePathListLength past the end */
#define LOAD_OPT_ERR_PATH      (-4)  /* a node length < 4 or past the list */

/*
 * load_option_parse - split a Boot#### variable.  Pointers in *out point
 * into buf.  Returns 0 or a LOAD_OPT_ERR_* code.
 */
int load_option_parse(const uint8_t *buf, size_t len, struct load_option *out);

/*
 * load_option_bootable - 1 if BDS itself would consider starting it:
 * active, not hidden, category boot.
 */
int load_option_bootable(uint32_t attributes);

/*
 * boot_order_next - the options to try after the running one, in order:
 * those after current in order[], each once, never current itself.  If
 * current is not in order[] (started via BootNext or a shell), all of
 * order[] except current.  Returns how many were written to out (at most
 * n).
 */
size_t boot_order_next(const uint16_t *order, size_t n, int have_current,
		       uint16_t current, uint16_t *out);

#endif /* TV_LOAD_OPTION_H */
