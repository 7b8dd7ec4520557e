/* SPDX-License-Identifier: MIT */
/*
 * text.c - escaping untrusted strings (see text.h).
 */
#include "host-tools/lib/text.h"

unsigned tvh_utf8_len(const uint8_t *p, size_t n)
{
	unsigned len;
	uint32_t cp, min;

	if (!n)
		return 0;
	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2; cp = p[0] & 0x1f; min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3; cp = p[0] & 0x0f; min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4; cp = p[0] & 0x07; min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (unsigned i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

void tvh_json_string(FILE *f, const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0;

	fputc('"', f);
	while (i < len) {
		uint8_t c = p[i];
		unsigned n;

		switch (c) {
		case '"': fputs("\\\"", f); i++; continue;
		case '\\': fputs("\\\\", f); i++; continue;
		case '\n': fputs("\\n", f); i++; continue;
		case '\r': fputs("\\r", f); i++; continue;
		case '\t': fputs("\\t", f); i++; continue;
		default: break;
		}
		if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			i++;
			continue;
		}
		n = tvh_utf8_len(p + i, len - i);
		if (!n) {
			fputs("\\ufffd", f);
			i++;
			continue;
		}
		fwrite(p + i, 1, n, f);
		i += n;
	}
	fputc('"', f);
}

void tvh_quoted(FILE *f, const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t i = 0;

	fputc('"', f);
	while (i < len) {
		uint8_t c = p[i];
		unsigned n;

		switch (c) {
		case '"': fputs("\\\"", f); i++; continue;
		case '\\': fputs("\\\\", f); i++; continue;
		case '\n': fputs("\\n", f); i++; continue;
		case '\r': fputs("\\r", f); i++; continue;
		case '\t': fputs("\\t", f); i++; continue;
		default: break;
		}
		n = (c < 0x20 || c == 0x7f) ? 0 : tvh_utf8_len(p + i, len - i);
		if (!n) {
			fprintf(f, "\\x%02x", c);
			i++;
			continue;
		}
		fwrite(p + i, 1, n, f);
		i += n;
	}
	fputc('"', f);
}
