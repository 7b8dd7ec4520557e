/* SPDX-License-Identifier: MIT */
/*
 * images.c - IMAGE records to modules (see images.h).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/images.h"
#include "host-tools/lib/walk.h"
#include "vmm/lib/pe_debug.h"

void tvh_images_free(struct tvh_images *im)
{
	for (size_t i = 0; i < im->n; i++)
		free(im->v[i].name);
	free(im->v);
	memset(im, 0, sizeof(*im));
}

int tvh_images_add(struct tvh_images *im, uint32_t cpu, uint8_t kind,
		   uint64_t base, uint64_t size, uint64_t tsc, const char *name,
		   size_t len)
{
	char *copy;

	/* Every CPU reports the same firmware images: keep one of each. */
	for (size_t i = 0; i < im->n; i++)
		if (im->v[i].base == base && strlen(im->v[i].name) == len &&
		    !memcmp(im->v[i].name, name, len))
			return 0;
	if (im->n == im->cap) {
		size_t cap = im->cap ? im->cap * 2 : 64;
		struct tvh_image *v = realloc(im->v, cap * sizeof(*v));

		if (!v)
			return -TVH_ERR_NOMEM;
		im->v = v;
		im->cap = cap;
	}
	copy = strndup(name, len);
	if (!copy)
		return -TVH_ERR_NOMEM;
	im->v[im->n++] = (struct tvh_image){ .cpu = cpu, .kind = kind,
		.base = base, .size = size, .tsc = tsc, .name = copy };
	return 1;
}

static int collect_event(void *ctx, const struct tvh_event *ev)
{
	const struct trace_event *r = ev->rec;
	int ret;

	if (ev->kind != TVH_EV_RECORD || r->type != TV_REC_IMAGE)
		return 0;
	ret = tvh_images_add(ctx, ev->cpu, r->u.image.kind, r->u.image.base,
			     r->u.image.size, r->tsc, r->u.image.name,
			     r->u.image.name_len);
	return ret < 0 ? ret : 0;
}

int tvh_images_collect(struct tvt_reader *r, struct tvh_images *out)
{
	struct tvh_stats s;
	int ret;

	memset(out, 0, sizeof(*out));
	ret = tvh_walk(r, NULL, collect_event, out, &s);
	tvh_stats_free(&s);
	return ret;
}

/* Stem of the IMAGE name: the GUID of FvFile(GUID), else the last component. */
static void name_parts(const char *name, char *base, size_t bn, char *stem,
		       size_t sn)
{
	size_t len = strlen(name), blen;
	const char *b;
	char *dot;

	if (len > 8 && !strncmp(name, "FvFile(", 7) && name[len - 1] == ')') {
		snprintf(base, bn, "%.*s", (int)(len - 8), name + 7);
		snprintf(stem, sn, "%s", base);
		return;
	}
	b = pe_basename(name, len, &blen);
	snprintf(base, bn, "%.*s", (int)blen, b);
	snprintf(stem, sn, "%s", base);
	dot = strrchr(stem, '.');
	if (dot && dot != stem)
		*dot = 0;
}

int tvh_image_find(const char *dir, const char *name, char **path)
{
	static const char *const ext[] = { ".debug", ".efi", ".dll", ".so", ".elf", "" };
	char base[256], stem[256], cand[8][300];
	unsigned ncand = 0, best = ~0u;
	char *hit = NULL;
	struct dirent *de;
	DIR *d;

	*path = NULL;
	name_parts(name, base, sizeof(base), stem, sizeof(stem));
	if (!base[0])
		return -TVH_ERR_NOT_FOUND;
	snprintf(cand[ncand++], sizeof(cand[0]), "%s", base);
	for (unsigned i = 0; i < sizeof(ext) / sizeof(ext[0]); i++)
		snprintf(cand[ncand++], sizeof(cand[0]), "%s%s", stem, ext[i]);
	d = opendir(dir);
	if (!d)
		return -TVH_ERR_IO;
	while ((de = readdir(d)) != NULL) {
		for (unsigned i = 0; i < ncand && i < best; i++) {
			if (strcasecmp(de->d_name, cand[i]))
				continue;
			free(hit);
			hit = strdup(de->d_name);
			best = i;
			break;
		}
	}
	closedir(d);
	if (!hit)
		return -TVH_ERR_NOT_FOUND;
	if (asprintf(path, "%s/%s", dir, hit) < 0) {
		*path = NULL;
		free(hit);
		return -TVH_ERR_NOMEM;
	}
	free(hit);
	return 0;
}

int tvh_images_load(const struct tvh_images *im, const char *dir,
		    struct tvh_symtab *st, FILE *log,
		    struct tvh_images_load_stats *ls)
{
	memset(ls, 0, sizeof(*ls));
	for (size_t i = 0; i < im->n; i++) {
		const struct tvh_image *img = &im->v[i];
		char *path;
		int err;

		if (tvh_symtab_find(st, img->base) >= 0)
			continue;
		err = tvh_image_find(dir, img->name, &path);
		if (err == -TVH_ERR_NOT_FOUND) {
			ls->missing++;
			continue;
		}
		if (err)
			return err;
		err = tvh_symtab_add_at(st, path, true, img->base);
		if (err == -TVH_ERR_NOMEM) {
			free(path);
			return err;
		}
		if (err < 0) {
			ls->bad++;
			if (log)
				fprintf(log, "image \"%s\" at 0x%llx: %s\n", img->name,
					(unsigned long long)img->base, st->error);
		} else {
			ls->found++;
		}
		free(path);
	}
	return 0;
}
