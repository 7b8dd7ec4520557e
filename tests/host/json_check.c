/* SPDX-License-Identifier: MIT */
/*
 * json_check.c - strict JSON parser for tests (see json_check.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/text.h"
#include "tests/host/json_check.h"

struct jp {
	const char *s;
	size_t n, i;
	char *err;
	size_t errlen;
	int depth;
};

static bool jfail(struct jp *p, const char *what)
{
	if (p->err && !p->err[0])
		snprintf(p->err, p->errlen, "offset %zu: %s", p->i, what);
	return false;
}

static void ws(struct jp *p)
{
	while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' ||
			       p->s[p->i] == '\n' || p->s[p->i] == '\r'))
		p->i++;
}

static bool lit(struct jp *p, const char *w)
{
	size_t l = strlen(w);

	if (p->n - p->i < l || memcmp(p->s + p->i, w, l))
		return jfail(p, "bad literal");
	p->i += l;
	return true;
}

static int hex4(struct jp *p, uint32_t *v)
{
	*v = 0;
	if (p->n - p->i < 4)
		return 0;
	for (int k = 0; k < 4; k++) {
		char c = p->s[p->i++];

		*v <<= 4;
		if (c >= '0' && c <= '9')
			*v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			*v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			*v |= (uint32_t)(c - 'A' + 10);
		else
			return 0;
	}
	return 1;
}

static void put_utf8(char *o, size_t *k, uint32_t cp)
{
	if (cp < 0x80) {
		o[(*k)++] = (char)cp;
	} else if (cp < 0x800) {
		o[(*k)++] = (char)(0xc0 | cp >> 6);
		o[(*k)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		o[(*k)++] = (char)(0xe0 | cp >> 12);
		o[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[(*k)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		o[(*k)++] = (char)(0xf0 | cp >> 18);
		o[(*k)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		o[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[(*k)++] = (char)(0x80 | (cp & 0x3f));
	}
}

static bool str(struct jp *p, char **out, size_t *outlen)
{
	char *o;
	size_t k = 0;

	if (p->i >= p->n || p->s[p->i] != '"')
		return jfail(p, "string expected");
	p->i++;
	o = malloc(p->n - p->i + 1);
	if (!o)
		return jfail(p, "oom");
	for (;;) {
		unsigned char c;

		if (p->i >= p->n) {
			free(o);
			return jfail(p, "unterminated string");
		}
		c = (unsigned char)p->s[p->i];
		if (c == '"') {
			p->i++;
			break;
		}
		if (c < 0x20) {
			free(o);
			return jfail(p, "raw control character in string");
		}
		if (c == '\\') {
			char e;
			uint32_t cp;

			p->i++;
			if (p->i >= p->n) {
				free(o);
				return jfail(p, "bad escape");
			}
			e = p->s[p->i++];
			switch (e) {
			case '"': o[k++] = '"'; break;
			case '\\': o[k++] = '\\'; break;
			case '/': o[k++] = '/'; break;
			case 'b': o[k++] = '\b'; break;
			case 'f': o[k++] = '\f'; break;
			case 'n': o[k++] = '\n'; break;
			case 'r': o[k++] = '\r'; break;
			case 't': o[k++] = '\t'; break;
			case 'u':
				if (!hex4(p, &cp)) {
					free(o);
					return jfail(p, "bad \\u escape");
				}
				if (cp >= 0xd800 && cp <= 0xdbff) {
					uint32_t lo;

					if (p->n - p->i < 6 || p->s[p->i] != '\\' ||
					    p->s[p->i + 1] != 'u') {
						free(o);
						return jfail(p, "lone surrogate");
					}
					p->i += 2;
					if (!hex4(p, &lo) || lo < 0xdc00 || lo > 0xdfff) {
						free(o);
						return jfail(p, "bad surrogate pair");
					}
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				} else if (cp >= 0xdc00 && cp <= 0xdfff) {
					free(o);
					return jfail(p, "lone surrogate");
				}
				put_utf8(o, &k, cp);
				break;
			default:
				free(o);
				return jfail(p, "bad escape");
			}
			continue;
		}
		{
			unsigned l = tvh_utf8_len((const uint8_t *)p->s + p->i, p->n - p->i);

			if (!l) {
				free(o);
				return jfail(p, "invalid UTF-8");
			}
			memcpy(o + k, p->s + p->i, l);
			k += l;
			p->i += l;
		}
	}
	o[k] = 0;
	*out = o;
	*outlen = k;
	return true;
}

static bool num(struct jp *p, double *v)
{
	size_t st = p->i;
	char *buf, *end;

	if (p->i < p->n && p->s[p->i] == '-')
		p->i++;
	if (p->i >= p->n)
		return jfail(p, "bad number");
	if (p->s[p->i] == '0') {
		p->i++;
	} else if (p->s[p->i] >= '1' && p->s[p->i] <= '9') {
		while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
			p->i++;
	} else {
		return jfail(p, "bad number");
	}
	if (p->i < p->n && p->s[p->i] == '.') {
		p->i++;
		if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9')
			return jfail(p, "bad fraction");
		while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
			p->i++;
	}
	if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
		p->i++;
		if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-'))
			p->i++;
		if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9')
			return jfail(p, "bad exponent");
		while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
			p->i++;
	}
	buf = strndup(p->s + st, p->i - st);
	if (!buf)
		return jfail(p, "oom");
	*v = strtod(buf, &end);
	free(buf);
	return true;
}

static bool value(struct jp *p, struct jval *v);
static void free_members(struct jval *v);

static bool push(struct jval *v, struct jval *item, char *key)
{
	struct jval *items = realloc(v->items, (v->len + 1) * sizeof(*items));

	if (!items)
		return false;
	v->items = items;
	if (v->t == J_OBJ) {
		char **keys = realloc(v->keys, (v->len + 1) * sizeof(*keys));

		if (!keys)
			return false;
		v->keys = keys;
		v->keys[v->len] = key;
	}
	v->items[v->len++] = *item;
	return true;
}

static bool value(struct jp *p, struct jval *v)
{
	memset(v, 0, sizeof(*v));
	ws(p);
	if (p->i >= p->n)
		return jfail(p, "value expected");
	if (++p->depth > 200)
		return jfail(p, "too deep");
	switch (p->s[p->i]) {
	case 'n':
		v->t = J_NULL;
		if (!lit(p, "null"))
			return false;
		break;
	case 't':
		v->t = J_BOOL;
		v->b = true;
		if (!lit(p, "true"))
			return false;
		break;
	case 'f':
		v->t = J_BOOL;
		if (!lit(p, "false"))
			return false;
		break;
	case '"':
		v->t = J_STR;
		if (!str(p, &v->str, &v->len))
			return false;
		break;
	case '[':
		v->t = J_ARR;
		p->i++;
		ws(p);
		if (p->i < p->n && p->s[p->i] == ']') {
			p->i++;
			break;
		}
		for (;;) {
			struct jval item;

			if (!value(p, &item)) {
				free_members(&item);
				return false;
			}
			if (!push(v, &item, NULL))
				return jfail(p, "oom");
			ws(p);
			if (p->i < p->n && p->s[p->i] == ',') {
				p->i++;
				continue;
			}
			if (p->i < p->n && p->s[p->i] == ']') {
				p->i++;
				break;
			}
			return jfail(p, "',' or ']' expected");
		}
		break;
	case '{':
		v->t = J_OBJ;
		p->i++;
		ws(p);
		if (p->i < p->n && p->s[p->i] == '}') {
			p->i++;
			break;
		}
		for (;;) {
			struct jval item;
			char *key;
			size_t klen;

			ws(p);
			if (!str(p, &key, &klen))
				return false;
			ws(p);
			if (p->i >= p->n || p->s[p->i] != ':') {
				free(key);
				return jfail(p, "':' expected");
			}
			p->i++;
			if (!value(p, &item)) {
				free(key);
				free_members(&item);
				return false;
			}
			if (!push(v, &item, key))
				return jfail(p, "oom");
			ws(p);
			if (p->i < p->n && p->s[p->i] == ',') {
				p->i++;
				continue;
			}
			if (p->i < p->n && p->s[p->i] == '}') {
				p->i++;
				break;
			}
			return jfail(p, "',' or '}' expected");
		}
		break;
	default:
		v->t = J_NUM;
		if (!num(p, &v->num))
			return false;
		break;
	}
	p->depth--;
	return true;
}

static void free_members(struct jval *v)
{
	for (size_t i = 0; i < v->len && v->items; i++) {
		free_members(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	if (v->t == J_STR)
		free(v->str);
	else
		free(v->items);
	free(v->keys);
	memset(v, 0, sizeof(*v));
}

struct jval *json_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct jp p = { .s = text, .n = len, .err = err, .errlen = errlen };
	struct jval *v = malloc(sizeof(*v));

	if (err && errlen)
		err[0] = 0;
	if (!v)
		return NULL;
	if (!value(&p, v)) {
		json_free(v);
		return NULL;
	}
	ws(&p);
	if (p.i != p.n) {
		jfail(&p, "trailing characters");
		json_free(v);
		return NULL;
	}
	return v;
}

void json_free(struct jval *v)
{
	if (!v)
		return;
	free_members(v);
	free(v);
}

const struct jval *json_get(const struct jval *obj, const char *key)
{
	if (!obj || obj->t != J_OBJ)
		return NULL;
	for (size_t i = 0; i < obj->len; i++)
		if (!strcmp(obj->keys[i], key))
			return &obj->items[i];
	return NULL;
}

const char *json_get_str(const struct jval *obj, const char *key)
{
	const struct jval *v = json_get(obj, key);

	return v && v->t == J_STR ? v->str : NULL;
}
