/* SPDX-License-Identifier: MIT */
/*
 * text.h - writing untrusted strings (guest log lines, labels, image
 * names, machine names) safely: quoted, escaped, valid UTF-8 out.
 */
#ifndef TVH_TEXT_H
#define TVH_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * a + b, or UINT64_MAX when that does not fit: counts read from a file
 * (LOST records, ring counters) are the file's word, and a sum of them
 * must not wrap into a small number.
 */
static inline uint64_t tvh_sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* Length of the valid UTF-8 sequence at p[0..n) (1-4), 0 if invalid. */
unsigned tvh_utf8_len(const uint8_t *p, size_t n);

/* A JSON string literal with quotes; invalid UTF-8 bytes become U+FFFD. */
void tvh_json_string(FILE *f, const char *s, size_t len);

/* "..." for text output: \" \\ \n \r \t, other controls and invalid
 * UTF-8 bytes as \xNN; valid UTF-8 is kept. */
void tvh_quoted(FILE *f, const char *s, size_t len);

#endif /* TVH_TEXT_H */
