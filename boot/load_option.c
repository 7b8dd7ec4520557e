/* SPDX-License-Identifier: MIT */
/*
 * load_option.c - EFI_LOAD_OPTION parsing (UEFI 2.x 3.1.3).
 *
 * Layout: UINT32 Attributes; UINT16 FilePathListLength;
 * CHAR16 Description[] (NUL-terminated); EFI_DEVICE_PATH FilePathList[]
 * (FilePathListLength bytes); UINT8 OptionalData[] (the rest).
 */
#include "boot/load_option.h"

#include <string.h>

int load_option_parse(const uint8_t *buf, size_t len, struct load_option *out)
{
	size_t pos = 6, d = 0, path_len, first_len = 0;
	uint16_t fpl;

	memset(out, 0, sizeof(*out));
	if (len < 6 + 2)
		return LOAD_OPT_ERR_SHORT;
	memcpy(&out->attributes, buf, 4);
	memcpy(&fpl, buf + 4, 2);

	for (;;) {
		uint16_t c;

		if (pos + 2 > len)
			return LOAD_OPT_ERR_DESC;
		memcpy(&c, buf + pos, 2);
		pos += 2;
		if (c == 0)
			break;
		if (d + 1 < sizeof(out->description))
			out->description[d++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	out->description[d] = '\0';

	path_len = fpl;
	if (path_len < 4 || pos + path_len > len)
		return LOAD_OPT_ERR_PATH_LEN;
	/* Walk the first path to its end-entire node; all nodes inside the list. */
	for (;;) {
		const uint8_t *n = buf + pos + first_len;
		size_t nl;

		if (first_len + 4 > path_len)
			return LOAD_OPT_ERR_PATH;  /* list ended without an end node */
		nl = (size_t)n[2] | ((size_t)n[3] << 8);
		if (nl < 4 || first_len + nl > path_len)
			return LOAD_OPT_ERR_PATH;
		first_len += nl;
		if (n[0] == 0x7f && n[1] == 0xff)
			break;
	}
	out->file_path = buf + pos;
	out->file_path_len = first_len;
	pos += path_len;
	out->optional_data = len > pos ? buf + pos : NULL;
	out->optional_data_len = len - pos;
	return 0;
}

int load_option_bootable(uint32_t attributes)
{
	return (attributes & LOAD_OPT_ACTIVE) && !(attributes & LOAD_OPT_HIDDEN) &&
	       (attributes & LOAD_OPT_CATEGORY_MASK) == LOAD_OPT_CATEGORY_BOOT;
}

size_t boot_order_next(const uint16_t *order, size_t n, int have_current,
		       uint16_t current, uint16_t *out)
{
	size_t start = 0, k = 0;

	if (have_current) {
		for (size_t i = 0; i < n; i++) {
			if (order[i] == current) {
				start = i + 1;
				break;
			}
		}
	}
	for (size_t i = start; i < n; i++) {
		int dup = 0;

		if (have_current && order[i] == current)
			continue;
		for (size_t j = 0; j < k; j++)
			dup |= out[j] == order[i];
		if (!dup)
			out[k++] = order[i];
	}
	return k;
}
