/* SPDX-License-Identifier: MIT */
/*
 * json_check.h - a small strict JSON parser (RFC 8259) for checking the
 * chrome exporter's output: rejects trailing commas, bad escapes, raw
 * control characters, invalid UTF-8, leading zeros, trailing garbage.
 */
#ifndef TVH_JSON_CHECK_H
#define TVH_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype t;
	bool b;
	double num;
	char *str;               /* J_STR: decoded UTF-8, NUL terminated */
	size_t len;              /* J_STR bytes; J_ARR/J_OBJ members */
	struct jval *items;      /* J_ARR, J_OBJ values */
	char **keys;             /* J_OBJ keys */
};

/* NULL on a syntax error (err gets "offset N: what"). */
struct jval *json_parse(const char *text, size_t len, char *err, size_t errlen);
void json_free(struct jval *v);

/* Member of an object, or NULL. */
const struct jval *json_get(const struct jval *obj, const char *key);
/* String member or NULL. */
const char *json_get_str(const struct jval *obj, const char *key);

#endif /* TVH_JSON_CHECK_H */
