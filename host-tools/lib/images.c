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
#include "host-tools/lib/ksyms.h"
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
	struct tvh_images *im = ctx;
	int ret;

	if (ev->kind != TVH_EV_RECORD)
		return 0;
	if (r->type == TV_REC_START && r->u.startstop.trigger == TV_TRIG_KERNEL_ENTRY &&
	    !im->have_kernel_entry) {
		im->have_kernel_entry = true;
		im->kernel_entry_cpu = ev->cpu;
		im->kernel_entry = r->u.startstop.rip;
		im->kernel_entry_tsc = r->tsc;
		return 0;
	}
	if (r->type != TV_REC_IMAGE)
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

void tvh_image_short_name(const char *name, char *buf, size_t n)
{
	char base[256];

	name_parts(name, base, sizeof(base), buf, n);
}

int tvh_images_regions(const struct tvh_images *im, struct tvh_regions *out)
{
	for (size_t i = 0; i < im->n; i++) {
		const struct tvh_image *img = &im->v[i];
		char name[256];
		int err;

		if (!img->size)
			continue;
		tvh_image_short_name(img->name, name, sizeof(name));
		if (!name[0])
			snprintf(name, sizeof(name), "image@0x%llx",
				 (unsigned long long)img->base);
		err = tvh_regions_add(out, img->base, img->size, name, strlen(name),
				      img->kind);
		if (err)
			return err;
	}
	tvh_regions_sort(out);
	return 0;
}

int tvh_images_relocate_ksyms(const struct tvh_images *im, struct tvh_ksyms *k,
			      char *msg, size_t n)
{
	const struct tvh_image *kimg = NULL;
	uint64_t start_off = k->startup_64 ? k->startup_64 - k->text : 0;

	for (size_t i = 0; i < im->n && !kimg; i++)
		if (im->v[i].kind == TV_IMG_KERNEL)
			kimg = &im->v[i];
	if (kimg && kimg->base >= TVH_KSYM_UPPER) {
		tvh_ksyms_relocate(k, kimg->base - k->text);
		snprintf(msg, n, "relocated by 0x%llx: the kernel's IMAGE record puts "
			 "_text at 0x%llx (the file's at 0x%llx)",
			 (unsigned long long)(kimg->base - k->text),
			 (unsigned long long)kimg->base, (unsigned long long)k->text);
		return 1;
	}
	if (kimg) {
		tvh_ksyms_phys_alias(k, kimg->base);
		snprintf(msg, n, "the kernel's IMAGE record puts _text at physical "
			 "0x%llx: its code there is named too; virtual addresses as in "
			 "the file", (unsigned long long)kimg->base);
		return 1;
	}
	if (im->have_kernel_entry && im->kernel_entry >= TVH_KSYM_UPPER &&
	    k->startup_64) {
		tvh_ksyms_relocate(k, im->kernel_entry - k->startup_64);
		snprintf(msg, n, "relocated by 0x%llx: the kernel_entry window starts "
			 "at 0x%llx, the file's startup_64 is 0x%llx",
			 (unsigned long long)(im->kernel_entry - k->startup_64),
			 (unsigned long long)im->kernel_entry,
			 (unsigned long long)k->startup_64);
		return 1;
	}
	if (im->have_kernel_entry && im->kernel_entry < TVH_KSYM_UPPER &&
	    im->kernel_entry >= start_off) {
		tvh_ksyms_phys_alias(k, im->kernel_entry - start_off);
		snprintf(msg, n, "the kernel_entry window starts at physical 0x%llx "
			 "(startup_64): the kernel's text is named at its physical "
			 "address 0x%llx too; virtual addresses as in the file (the "
			 "capture holds no KASLR offset)",
			 (unsigned long long)im->kernel_entry,
			 (unsigned long long)(im->kernel_entry - start_off));
		return 1;
	}
	snprintf(msg, n, "used as in the file: the capture holds no kernel IMAGE "
		 "record and no kernel_entry window to relocate it by (right for "
		 "a kernel without KASLR or a kallsyms of the traced boot)");
	return 0;
}
