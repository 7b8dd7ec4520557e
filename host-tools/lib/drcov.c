/* SPDX-License-Identifier: MIT */
/*
 * drcov.c - basic blocks from branches, drcov writer (see drcov.h).
 */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/drcov.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/le.h"
#include "host-tools/lib/x86_len.h"

struct drcov_chain {
	bool have;
	uint64_t start;          /* `to` of the last branch */
};

void tvh_drcov_init(struct tvh_drcov *d, struct tvh_symtab *st)
{
	memset(d, 0, sizeof(*d));
	d->st = st;
	tvh_cputab_init(&d->chain, sizeof(struct drcov_chain));
}

void tvh_drcov_free(struct tvh_drcov *d)
{
	free(d->bbs);
	free(d->bb_approx);
	free(d->set);
	tvh_cputab_free(&d->chain, NULL);
	memset(d, 0, sizeof(*d));
}

static uint64_t bb_key(const struct tvh_drcov_bb *b)
{
	/* +1 keeps 0 free as the empty-slot marker. */
	return ((uint64_t)b->mod_id << 48 | (uint64_t)b->size << 32 | b->start) + 1;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	return x;
}

/* Insert key; 1 new, 0 present, -TVH_ERR_NOMEM. */
static int set_insert(struct tvh_drcov *d, uint64_t key)
{
	size_t i, mask;

	if ((d->nbbs + 1) * 2 > d->set_cap) {
		size_t cap = d->set_cap ? d->set_cap * 2 : 1024;
		uint64_t *n = calloc(cap, sizeof(*n));

		if (!n)
			return -TVH_ERR_NOMEM;
		for (size_t k = 0; k < d->set_cap; k++) {
			if (!d->set[k])
				continue;
			i = mix(d->set[k]) & (cap - 1);
			while (n[i])
				i = (i + 1) & (cap - 1);
			n[i] = d->set[k];
		}
		free(d->set);
		d->set = n;
		d->set_cap = cap;
	}
	mask = d->set_cap - 1;
	i = mix(key) & mask;
	while (d->set[i]) {
		if (d->set[i] == key)
			return 0;
		i = (i + 1) & mask;
	}
	d->set[i] = key;
	return 1;
}

/* Keep bb once; 1 new, 0 known, -TVH_ERR_NOMEM. */
static int add_bb(struct tvh_drcov *d, const struct tvh_drcov_bb *bb, bool approx)
{
	int ret = set_insert(d, bb_key(bb));

	if (ret <= 0)
		return ret;
	if (d->nbbs == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 1024;
		struct tvh_drcov_bb *n = realloc(d->bbs, cap * sizeof(*n));
		uint8_t *a;

		if (!n)
			return -TVH_ERR_NOMEM;
		d->bbs = n;
		a = realloc(d->bb_approx, cap);
		if (!a)
			return -TVH_ERR_NOMEM;
		d->bb_approx = a;
		d->cap = cap;
	}
	d->bb_approx[d->nbbs] = approx;
	d->bbs[d->nbbs++] = *bb;
	d->stats.unique++;
	if (approx)
		d->stats.approx++;
	return 1;
}

uint64_t tvh_drcov_base(const struct tvh_module *m, uint64_t *end)
{
	uint64_t lo, hi;

	*end = m->end;
	if (m->end - m->base <= UINT32_MAX || !tvh_module_exec_span(m, &lo, &hi))
		return m->base;
	*end = hi;
	return lo;
}

/*
 * Regions stand for modules only when no module was given (a capture
 * decoded from its code snapshots): with files, blocks outside them stay
 * dropped as before.
 */
static size_t nregions(const struct tvh_symtab *st)
{
	return !st->nmods && st->regions ? st->regions->n : 0;
}

/* A region's module id (nmods + index), -1 when addr is in none. */
static int region_id(const struct tvh_symtab *st, uint64_t addr)
{
	const struct tvh_region *rg;

	if (!nregions(st) || !(rg = tvh_regions_find(st->regions, addr)))
		return -1;
	return (int)(st->nmods + (size_t)(rg - st->regions->v));
}

int tvh_drcov_add(struct tvh_drcov *d, uint64_t start, uint64_t end, bool approx)
{
	int ms = tvh_symtab_find_exec(d->st, start), me;
	uint64_t base, mend;
	struct tvh_drcov_bb bb;

	d->stats.blocks++;
	if (end < start) {
		d->stats.backwards++;
		return 0;
	}
	if (end == start) {
		d->stats.empty++;
		return 0;
	}
	if (ms < 0)
		ms = region_id(d->st, start);
	if (ms < 0) {
		d->stats.outside++;
		return 0;
	}
	me = tvh_symtab_find_exec(d->st, end - 1);
	if (me < 0)
		me = region_id(d->st, end - 1);
	if (me != ms) {
		d->stats.cross_module++;
		return 0;
	}
	if ((unsigned)ms < d->st->nmods)
		base = tvh_drcov_base(&d->st->mods[ms], &mend);
	else
		base = d->st->regions->v[(unsigned)ms - d->st->nmods].base;
	if (end - start > TVH_DRCOV_MAX_BB || start - base > UINT32_MAX ||
	    ms > UINT16_MAX) {
		d->stats.too_big++;
		return 0;
	}
	bb.start = (uint32_t)(start - base);
	bb.size = (uint16_t)(end - start);
	bb.mod_id = (uint16_t)ms;
	return add_bb(d, &bb, approx);
}

int tvh_drcov_merge(struct tvh_drcov *dst, const struct tvh_drcov *src)
{
	const struct tvh_drcov_stats *s = &src->stats;

	for (size_t i = 0; i < src->nbbs; i++) {
		int ret = add_bb(dst, &src->bbs[i], src->bb_approx[i]);

		if (ret < 0)
			return ret;
	}
	dst->stats.blocks += s->blocks;
	dst->stats.outside += s->outside;
	dst->stats.cross_module += s->cross_module;
	dst->stats.backwards += s->backwards;
	dst->stats.too_big += s->too_big;
	dst->stats.empty += s->empty;
	return 0;
}

static const char *mod_name(const struct tvh_symtab *st, unsigned id)
{
	return id < st->nmods ? st->mods[id].name : st->regions->v[id - st->nmods].name;
}

int tvh_drcov_write_modoff(const struct tvh_drcov *d, FILE *out)
{
	fprintf(out, "# tracevisor coverage: %zu basic blocks, module+offset "
		"(hex, from the module's base)\n", d->nbbs);
	for (size_t i = 0; i < d->nbbs; i++)
		fprintf(out, "%s+%" PRIx32 "\n", mod_name(d->st, d->bbs[i].mod_id),
			d->bbs[i].start);
	return ferror(out) ? -TVH_ERR_IO : 0;
}

/* End (exclusive) of the block closed by the branch at `from`. */
static uint64_t block_end(struct tvh_drcov *d, uint64_t from, uint8_t kind,
			  bool *approx)
{
	uint8_t bytes[15];
	size_t n;
	unsigned len;

	*approx = false;
	if (kind == TV_BR_EXCEPTION || kind == TV_BR_INTERRUPT)
		return from;
	n = tvh_sym_read(d->st, from, bytes, sizeof(bytes));
	len = tvh_x86_branch_len(bytes, n);
	if (!len) {
		*approx = true;
		len = 1;
	}
	return from + len;
}

int tvh_drcov_event(void *ctx, const struct tvh_event *ev)
{
	struct tvh_drcov *d = ctx;
	struct drcov_chain *c = tvh_cputab_get(&d->chain, ev->cpu);
	const struct trace_event *r = ev->rec;

	if (ev->cpu == UINT32_MAX)
		return 0;
	if (!c)
		return -TVH_ERR_NOMEM;
	switch (ev->kind) {
	case TVH_EV_RECORD:
		break;
	case TVH_EV_MALFORMED:
	case TVH_EV_GAP:
	case TVH_EV_PT_GAP:      /* PT lost or undecodable (ptbranch.h) */
		c->have = false;
		return 0;
	default:
		return 0;
	}
	switch (r->type) {
	case TV_REC_BRANCH:
	case TV_REC_BRANCH_COMPACT:
	case TV_REC_LBR:
		if (c->have) {
			bool approx = false;
			uint64_t end = r->u.branch.from;
			int ret;

			/* A `from` before the start stays an end < start: dropped, counted. */
			if (end >= c->start)
				end = block_end(d, end, r->u.branch.kind, &approx);
			ret = tvh_drcov_add(d, c->start, end, approx);
			if (ret < 0)
				return ret;
		}
		c->have = true;
		c->start = r->u.branch.to;
		return 0;
	case TV_REC_LOST:
	case TV_REC_START:
	case TV_REC_STOP:
		c->have = false;
		return 0;
	default:
		return 0;
	}
}

int tvh_drcov_write(const struct tvh_drcov *d, FILE *out, const char *flavor)
{
	const struct tvh_symtab *st = d->st;
	size_t nreg = nregions(st);

	fprintf(out, "DRCOV VERSION: 2\n");
	fprintf(out, "DRCOV FLAVOR: %s\n", flavor ? flavor : "tracevisor");
	fprintf(out, "Module Table: version 2, count %zu\n", st->nmods + nreg);
	fprintf(out, "Columns: id, base, end, entry, checksum, timestamp, path\n");
	for (unsigned i = 0; i < st->nmods; i++) {
		const struct tvh_module *m = &st->mods[i];
		char *abs = realpath(m->path, NULL);
		uint64_t end, base = tvh_drcov_base(m, &end);

		fprintf(out, "%u, 0x%016" PRIx64 ", 0x%016" PRIx64 ", 0x%016" PRIx64
			", 0x%08x, 0x%08x, %s\n", i, base, end, m->entry,
			0u, 0u, abs ? abs : m->path);
		free(abs);
	}
	for (size_t i = 0; i < nreg; i++) {
		const struct tvh_region *rg = &st->regions->v[i];

		/* No file: the IMAGE record's name stands for the path. */
		fprintf(out, "%zu, 0x%016" PRIx64 ", 0x%016" PRIx64 ", 0x%016" PRIx64
			", 0x%08x, 0x%08x, %s\n", st->nmods + i, rg->base, rg->end,
			(uint64_t)0, 0u, 0u, rg->name);
	}
	fprintf(out, "BB Table: %zu bbs\n", d->nbbs);
	for (size_t i = 0; i < d->nbbs; i++) {
		uint8_t b[8];

		tvh_put_le32(b, d->bbs[i].start);
		tvh_put_le16(b + 4, d->bbs[i].size);
		tvh_put_le16(b + 6, d->bbs[i].mod_id);
		if (fwrite(b, 1, sizeof(b), out) != sizeof(b))
			return -TVH_ERR_IO;
	}
	return ferror(out) ? -TVH_ERR_IO : 0;
}
