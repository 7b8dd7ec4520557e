/* SPDX-License-Identifier: MIT */
/*
 * report.c - hottest functions and edges (see report.h).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/ksyms.h"
#include "host-tools/lib/report.h"
#include "host-tools/lib/stream.h"

static uint64_t mix2(uint64_t a, uint64_t b)
{
	uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);

	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ull;
	x ^= x >> 32;
	return x;
}

static void counts_free(struct tvh_counts *c)
{
	free(c->k1);
	free(c->k2);
	free(c->n);
	free(c->x);
	free(c->kind);
	free(c->used);
	memset(c, 0, sizeof(*c));
}

static int counts_grow(struct tvh_counts *c)
{
	struct tvh_counts g = { 0 };

	g.cap = c->cap ? c->cap * 2 : 1024;
	g.wide = c->wide;
	g.k1 = malloc(g.cap * sizeof(*g.k1));
	g.k2 = malloc(g.cap * sizeof(*g.k2));
	g.n = malloc(g.cap * sizeof(*g.n));
	g.x = g.wide ? malloc(g.cap * sizeof(*g.x)) : NULL;
	g.kind = malloc(g.cap);
	g.used = calloc(g.cap, 1);
	if (!g.k1 || !g.k2 || !g.n || (g.wide && !g.x) || !g.kind || !g.used) {
		counts_free(&g);
		return -TVH_ERR_NOMEM;
	}
	for (size_t i = 0; i < c->cap; i++) {
		size_t j;

		if (!c->used[i])
			continue;
		j = mix2(c->k1[i], c->k2[i]) & (g.cap - 1);
		while (g.used[j])
			j = (j + 1) & (g.cap - 1);
		g.used[j] = 1;
		g.k1[j] = c->k1[i];
		g.k2[j] = c->k2[i];
		g.n[j] = c->n[i];
		if (g.wide)
			g.x[j] = c->x[i];
		g.kind[j] = c->kind[i];
	}
	g.len = c->len;
	counts_free(c);
	*c = g;
	return 0;
}

/* Add n, n2, n3 (wide only) to (k1, k2), its index in *slot; 0 or -TVH_ERR_NOMEM. */
static int counts_add3(struct tvh_counts *c, uint64_t k1, uint64_t k2, uint64_t n,
		       uint64_t n2, uint64_t n3, uint8_t kind, size_t *slot)
{
	size_t i;

	if ((c->len + 1) * 2 > c->cap && counts_grow(c))
		return -TVH_ERR_NOMEM;
	i = mix2(k1, k2) & (c->cap - 1);
	while (c->used[i] && (c->k1[i] != k1 || c->k2[i] != k2))
		i = (i + 1) & (c->cap - 1);
	if (!c->used[i]) {
		c->used[i] = 1;
		c->k1[i] = k1;
		c->k2[i] = k2;
		c->n[i] = 0;
		if (c->wide)
			c->x[i] = (struct tvh_count2){ 0, 0 };
		c->len++;
	}
	c->n[i] += n;
	if (n2 || n3) {          /* wide tables only */
		c->x[i].n2 += n2;
		c->x[i].n3 += n3;
	}
	c->kind[i] = kind;
	*slot = i;
	return 0;
}

static int counts_add2(struct tvh_counts *c, uint64_t k1, uint64_t k2,
		       uint64_t n, uint64_t n2, uint8_t kind)
{
	size_t slot;

	return counts_add3(c, k1, k2, n, n2, 0, kind, &slot);
}

static int counts_add(struct tvh_counts *c, uint64_t k1, uint64_t k2,
		      uint64_t n, uint8_t kind)
{
	return counts_add2(c, k1, k2, n, 0, kind);
}

void tvh_report_cpu_free(struct tvh_report_cpu *rc)
{
	counts_free(&rc->targets);
	counts_free(&rc->edges);
	counts_free(&rc->srcs);
	counts_free(&rc->errs);
}

/* The tables that keep n2, n3 (before their first add). */
static void report_cpu_wide(struct tvh_report_cpu *rc)
{
	rc->targets.wide = rc->srcs.wide = rc->errs.wide = true;
}

/* The key of an address: (addr, lower half after the CPU went to the kernel). */
static uint64_t late_of(const struct tvh_report_cpu *rc, uint64_t addr)
{
	return rc->kernel_seen && addr < TVH_KSYM_UPPER;
}

/* PT bytes from the CPU's last position to off (the decoder's offset there). */
static uint64_t pt_bytes(struct tvh_report_cpu *rc, uint64_t off)
{
	uint64_t bytes = off > rc->pt_at ? off - rc->pt_at : 0;

	rc->pt = true;
	rc->pt_at += bytes;
	return bytes;
}

/* PT decoded (ptbranch.h): insns and the bytes up to off go to addr's phase. */
static int pt_add(struct tvh_report_cpu *rc, uint64_t addr, uint64_t insns,
		  uint64_t off)
{
	uint64_t bytes = pt_bytes(rc, off);

	rc->prev_live = false;
	if (!insns && !bytes)
		return 0;
	return counts_add2(&rc->srcs, addr, late_of(rc, addr), insns, bytes, 0);
}

/*
 * A PT branch's instructions ran in the block its source ends: the one
 * the CPU's previous branch went to, in targets at prev_slot while that
 * table has not grown (x: insns, bytes; no second lookup), else the
 * source's own entry in srcs (the first branch, after an error or a run's end).
 */
static int pt_branch(struct tvh_report_cpu *rc, const struct tvh_event *ev)
{
	const struct trace_event *r = ev->rec;
	struct tvh_counts *t = &rc->targets;

	if (rc->prev_live && rc->prev_cap == t->cap) {
		t->x[rc->prev_slot].n2 += ev->insns;
		t->x[rc->prev_slot].n3 += pt_bytes(rc, ev->pt_offset);
		return 0;
	}
	if (rc->prev_live) {
		size_t slot;

		return counts_add3(t, rc->last_to, late_of(rc, rc->last_to), 0, ev->insns,
				   pt_bytes(rc, ev->pt_offset), r->u.branch.kind, &slot);
	}
	return pt_add(rc, r->u.branch.from, ev->insns, ev->pt_offset);
}

static int pt_gap(struct tvh_report_cpu *rc, const struct tvh_event *ev)
{
	uint64_t ip, end;
	int ret;

	rc->prev_live = false;
	if (ev->gap != TVH_GAP_PT_ERROR) {
		/* Bytes lost before the run at pt_offset + count: not decoded. */
		if (ev->gap != TVH_GAP_PT_CUT && ev->pt_offset + ev->count > rc->pt_at)
			rc->pt_at = ev->pt_offset + ev->count;
		return 0;
	}
	ip = ev->ip ? ev->ip : rc->last_to;
	ret = pt_add(rc, ip, ev->insns, ev->pt_offset);
	if (!ret)
		ret = counts_add2(&rc->errs, ip, late_of(rc, ip), 1, ev->skipped, 0);
	end = ev->pt_offset + ev->skipped;
	if (end > rc->pt_at)
		rc->pt_at = end;
	return ret;
}

int tvh_report_event(void *ctx, const struct tvh_event *ev)
{
	struct tvh_report_cpu *rc = ctx;
	const struct trace_event *r = ev->rec;
	int ret;

	if (!rc->targets.wide)
		report_cpu_wide(rc);
	if (ev->kind == TVH_EV_PT_GAP)
		return pt_gap(rc, ev);
	/* ptbranch.h: the instructions after a run's last branch. */
	if (ev->kind == TVH_EV_PT && !ev->len)
		return ev->insns ? pt_add(rc, rc->last_to, ev->insns, ev->pt_offset) : 0;
	if (ev->kind != TVH_EV_RECORD)
		return 0;
	if (r->type != TV_REC_BRANCH && r->type != TV_REC_BRANCH_COMPACT &&
	    r->type != TV_REC_LBR)
		return 0;
	/* Before this branch moves kernel_seen: the block's key as it was. */
	if (ev->pt) {
		ret = pt_branch(rc, ev);
		if (ret)
			return ret;
	}
	rc->branches++;
	/* k2: the target is in the lower half and the CPU was in the kernel before. */
	if (r->u.branch.to >= TVH_KSYM_UPPER)
		rc->kernel_seen = true;
	ret = counts_add3(&rc->targets, r->u.branch.to,
			  rc->kernel_seen && r->u.branch.to < TVH_KSYM_UPPER, 1, 0, 0,
			  r->u.branch.kind, &rc->prev_slot);
	rc->last_to = r->u.branch.to;
	rc->prev_cap = rc->targets.cap;
	rc->prev_live = ev->pt;
	if (!ret)
		ret = counts_add(&rc->edges, r->u.branch.from, r->u.branch.to, 1,
				 r->u.branch.kind);
	return ret;
}

struct func_row {
	char *name;              /* owned */
	uint64_t branches, blocks;
};

struct edge_row {
	uint64_t from, to, n;
	uint8_t kind;
};

static int cmp_edge(const void *a, const void *b)
{
	const struct edge_row *x = a, *y = b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->to < y->to ? -1 : x->to > y->to;
}

static int cmp_name(const void *a, const void *b)
{
	const struct func_row *x = a, *y = b;

	return strcmp(x->name, y->name);
}

static int cmp_func(const void *a, const void *b, void *arg)
{
	const struct func_row *x = a, *y = b;
	enum tvh_report_sort sort_key = *(const enum tvh_report_sort *)arg;
	uint64_t xa = sort_key == TVH_SORT_BLOCKS ? x->blocks : x->branches;
	uint64_t ya = sort_key == TVH_SORT_BLOCKS ? y->blocks : y->branches;
	uint64_t xb = sort_key == TVH_SORT_BLOCKS ? x->branches : x->blocks;
	uint64_t yb = sort_key == TVH_SORT_BLOCKS ? y->branches : y->blocks;

	if (xa != ya)
		return xa > ya ? -1 : 1;
	if (xb != yb)
		return xb > yb ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Function name of a target: "func (module)", "module+0xoff", "0xaddr". */
static char *func_name(struct tvh_symtab *st, uint64_t a)
{
	struct tvh_sym s;
	char *out = NULL;
	int n;

	if (!st || tvh_sym_lookup(st, a, &s))
		n = asprintf(&out, "0x%" PRIx64, a);
	else if (s.func)
		n = asprintf(&out, "%s (%s)", s.func, s.module_name);
	else
		n = asprintf(&out, "%s+0x%" PRIx64, s.module_name, s.module_offset);
	return n < 0 ? NULL : out;
}

static void sym_addr(FILE *out, struct tvh_symtab *st, uint64_t a)
{
	char buf[512];

	fprintf(out, "0x%" PRIx64, a);
	if (st && tvh_sym_format(st, a, buf, sizeof(buf)) > 0)
		fprintf(out, " %s", buf);
}

static double pct(uint64_t n, uint64_t total)
{
	return total ? 100.0 * (double)n / (double)total : 0.0;
}

/* Functions: sort targets' names, then fold equal names. */
static int functions(const struct tvh_counts *t, struct tvh_symtab *st,
		     struct func_row **rows_out, size_t *nrows)
{
	struct func_row *rows = calloc(t->len ? t->len : 1, sizeof(*rows));
	size_t n = 0, k = 0;

	if (!rows)
		return -TVH_ERR_NOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->used[i])
			continue;
		rows[n].name = func_name(st, t->k1[i]);
		if (!rows[n].name) {
			while (n)
				free(rows[--n].name);
			free(rows);
			return -TVH_ERR_NOMEM;
		}
		rows[n].branches = t->n[i];
		rows[n].blocks = 1;
		n++;
	}
	/* Group by name (any order), then fold. */
	qsort(rows, n, sizeof(*rows), cmp_name);
	for (size_t i = 0; i < n; i++) {
		if (k && !strcmp(rows[k - 1].name, rows[i].name)) {
			rows[k - 1].branches += rows[i].branches;
			rows[k - 1].blocks += rows[i].blocks;
			free(rows[i].name);
			continue;
		}
		rows[k++] = rows[i];
	}
	*rows_out = rows;
	*nrows = k;
	return 0;
}

const char *tvh_phase_name(enum tvh_phase p)
{
	static const char *const names[TVH_PHASES] = { "firmware", "loader",
						       "kernel", "user" };

	return p < TVH_PHASES ? names[p] : "?";
}

enum tvh_phase tvh_report_phase(struct tvh_symtab *st, uint64_t addr, bool late)
{
	const struct tvh_region *rg = st && st->regions ?
				      tvh_regions_find(st->regions, addr) : NULL;
	const char *name, *mod;
	uint64_t off;
	int m;

	if (rg && rg->kind == TV_IMG_LOADER)
		return TVH_PHASE_LOADER;
	if (rg && rg->kind == TV_IMG_FIRMWARE)
		return TVH_PHASE_FIRMWARE;
	if ((rg && rg->kind == TV_IMG_KERNEL) || addr >= TVH_KSYM_UPPER)
		return TVH_PHASE_KERNEL;
	if (st && st->ksyms && !tvh_ksyms_lookup(st->ksyms, addr, &name, &off, &mod))
		return TVH_PHASE_KERNEL;
	m = st ? tvh_symtab_find_exec(st, addr) : -1;
	if (m >= 0 && !strncmp(st->mods[m].name, "vmlinux", 7))
		return TVH_PHASE_KERNEL;
	return late ? TVH_PHASE_USER : TVH_PHASE_FIRMWARE;
}

/* Per phase: PT instructions, bytes decoded, errors, bytes skipped. */
struct phase_insns {
	bool pt;
	uint64_t insns[TVH_PHASES], bytes[TVH_PHASES];
	uint64_t errors[TVH_PHASES], skipped[TVH_PHASES];
};

static void sum_insns(struct tvh_report_cpu *const *rc, size_t n,
		      struct tvh_symtab *st, struct phase_insns *pi)
{
	memset(pi, 0, sizeof(*pi));
	for (size_t c = 0; c < n; c++) {
		const struct tvh_counts *s = &rc[c]->srcs, *e = &rc[c]->errs;
		const struct tvh_counts *t = &rc[c]->targets;

		pi->pt |= rc[c]->pt;
		for (size_t i = 0; rc[c]->pt && i < t->cap; i++)
			if (t->used[i] && (t->x[i].n2 || t->x[i].n3)) {
				enum tvh_phase p = tvh_report_phase(st, t->k1[i], t->k2[i]);

				pi->insns[p] += t->x[i].n2;
				pi->bytes[p] += t->x[i].n3;
			}
		for (size_t i = 0; i < s->cap; i++)
			if (s->used[i]) {
				enum tvh_phase p = tvh_report_phase(st, s->k1[i], s->k2[i]);

				pi->insns[p] += s->n[i];
				pi->bytes[p] += s->x[i].n2;
			}
		for (size_t i = 0; i < e->cap; i++)
			if (e->used[i]) {
				enum tvh_phase p = tvh_report_phase(st, e->k1[i], e->k2[i]);

				pi->errors[p] += e->n[i];
				pi->skipped[p] += e->x[i].n2;
			}
	}
}

/*
 * The instructions table (report.h): one line per phase, '-' where
 * unknown.  decoded = insns / (insns + skipped x insns per decoded byte
 * of the phase, else of the capture).
 */
static void write_insns(const struct phase_insns *pi, const char *title, FILE *out)
{
	uint64_t ti = 0, tb = 0;

	for (int p = 0; p < TVH_PHASES; p++) {
		ti += pi->insns[p];
		tb += pi->bytes[p];
	}
	if (!pi->pt)
		fprintf(out, "# %s: instructions per phase: unknown ('-'), branch records "
			"do not count them (PT only)\n", title);
	else
		fprintf(out, "# %s: instructions per phase, PT decoded: insns and PT bytes "
			"decoded, decode errors and the PT bytes skipped after them (to the "
			"sync decoding resumed at) in the phase of the error's last IP; "
			"decoded = insns / (insns + an estimate of the insns in the skipped "
			"bytes: skipped x the phase's insns per ptbyte, or the capture's where "
			"the phase has no ptbytes)\n", title);
	fprintf(out, "%12s %12s %8s %12s %8s  %s\n", "insns", "ptbytes", "errors",
		"skipped", "decoded", "phase");
	for (int p = 0; p < TVH_PHASES; p++) {
		const char *name = tvh_phase_name((enum tvh_phase)p);
		double rate, est;

		if (!pi->pt) {
			fprintf(out, "%12s %12s %8s %12s %8s  %s\n", "-", "-", "-", "-", "-",
				name);
			continue;
		}
		fprintf(out, "%12" PRIu64 " %12" PRIu64 " %8" PRIu64 " %12" PRIu64,
			pi->insns[p], pi->bytes[p], pi->errors[p], pi->skipped[p]);
		rate = pi->bytes[p] ? (double)pi->insns[p] / (double)pi->bytes[p] :
		       tb ? (double)ti / (double)tb : 0.0;
		est = (double)pi->skipped[p] * rate;
		if (pi->insns[p] + est > 0)
			fprintf(out, " %7.2f%%  %s\n",
				100.0 * (double)pi->insns[p] / ((double)pi->insns[p] + est), name);
		else
			fprintf(out, " %8s  %s\n", "-", name);
	}
}

/* The phases section: per phase branches, blocks, hottest functions. */
static int write_phases(const struct tvh_counts *lt, uint64_t branches,
			struct tvh_report_cpu *const *rc, size_t n,
			struct tvh_symtab *st, const struct tvh_report_opts *o,
			FILE *out)
{
	struct phase_insns pi;
	struct tvh_counts ph[TVH_PHASES];
	uint64_t nb[TVH_PHASES] = { 0 };
	int ret = 0;

	memset(ph, 0, sizeof(ph));
	for (size_t i = 0; i < lt->cap && !ret; i++) {
		enum tvh_phase p;

		if (!lt->used[i])
			continue;
		p = tvh_report_phase(st, lt->k1[i], lt->k2[i]);
		nb[p] += lt->n[i];
		ret = counts_add(&ph[p], lt->k1[i], 0, lt->n[i], 0);
	}
	if (!ret) {
		fprintf(out, "# %s: boot phases (firmware: firmware IMAGE records and "
			"lower-half code before the kernel ran; loader: images loaded "
			"after boot (the OS loader, the kernel's EFI stub); kernel: "
			"upper half and the kernel's symbols; user: "
			"lower-half code outside images after it)\n", o->title);
		fprintf(out, "%12s %8s %8s  %s\n", "branches", "%", "blocks", "phase");
		for (int p = 0; p < TVH_PHASES; p++)
			fprintf(out, "%12" PRIu64 " %7.2f%% %8zu  %s\n", nb[p],
				pct(nb[p], branches), ph[p].len,
				tvh_phase_name((enum tvh_phase)p));
		sum_insns(rc, n, st, &pi);
		write_insns(&pi, o->title, out);
	}
	for (int p = 0; p < TVH_PHASES && !ret; p++) {
		struct func_row *rows = NULL;
		size_t nrows = 0, top;

		if (!nb[p])
			continue;
		ret = functions(&ph[p], st, &rows, &nrows);
		if (ret)
			break;
		qsort_r(rows, nrows, sizeof(*rows), cmp_func, (void *)&o->sort);
		fprintf(out, "#\n# %s: hottest functions (%zu function%s)\n",
			tvh_phase_name((enum tvh_phase)p), nrows, nrows == 1 ? "" : "s");
		fprintf(out, "%12s %8s %8s  %s\n", "branches", "%", "blocks", "function");
		top = o->top && o->top < nrows ? o->top : nrows;
		for (size_t i = 0; i < top; i++)
			fprintf(out, "%12" PRIu64 " %7.2f%% %8" PRIu64 "  %s\n",
				rows[i].branches, pct(rows[i].branches, nb[p]),
				rows[i].blocks, rows[i].name);
		for (size_t i = 0; i < nrows; i++)
			free(rows[i].name);
		free(rows);
	}
	if (!ret)
		fputs("#\n", out);
	for (int p = 0; p < TVH_PHASES; p++)
		counts_free(&ph[p]);
	return ret;
}

int tvh_report_write(struct tvh_report_cpu *const *rc, size_t n,
		     struct tvh_symtab *st, const struct tvh_report_opts *o,
		     FILE *out)
{
	struct tvh_counts t = { 0 }, e = { 0 }, lt = { 0 };
	struct func_row *rows = NULL;
	struct edge_row *edges = NULL;
	uint64_t branches = 0;
	size_t nrows = 0, nedges = 0, top;
	int ret = 0;

	for (size_t c = 0; c < n && !ret; c++) {
		branches += rc[c]->branches;
		for (size_t i = 0; i < rc[c]->targets.cap && !ret; i++)
			if (rc[c]->targets.used[i]) {
				ret = counts_add(&t, rc[c]->targets.k1[i], 0,
						 rc[c]->targets.n[i], 0);
				if (!ret && o->phases)
					ret = counts_add(&lt, rc[c]->targets.k1[i],
							 rc[c]->targets.k2[i],
							 rc[c]->targets.n[i], 0);
			}
		for (size_t i = 0; i < rc[c]->edges.cap && !ret; i++)
			if (rc[c]->edges.used[i])
				ret = counts_add(&e, rc[c]->edges.k1[i],
						 rc[c]->edges.k2[i], rc[c]->edges.n[i],
						 rc[c]->edges.kind[i]);
	}
	if (!ret)
		ret = functions(&t, st, &rows, &nrows);
	if (!ret) {
		edges = calloc(e.len ? e.len : 1, sizeof(*edges));
		if (!edges)
			ret = -TVH_ERR_NOMEM;
	}
	if (ret)
		goto out;
	for (size_t i = 0; i < e.cap; i++)
		if (e.used[i])
			edges[nedges++] = (struct edge_row){ e.k1[i], e.k2[i], e.n[i],
							     e.kind[i] };
	qsort_r(rows, nrows, sizeof(*rows), cmp_func, (void *)&o->sort);
	qsort(edges, nedges, sizeof(*edges), cmp_edge);

	if (o->phases) {
		ret = write_phases(&lt, branches, rc, n, st, o, out);
		if (ret)
			goto out;
	}
	fprintf(out, "# %s: %" PRIu64 " branches, %zu functions, %zu basic blocks, "
		"%zu edges\n", o->title, branches, nrows, t.len, nedges);
	fprintf(out, "#\n# hottest functions (by %s)\n",
		o->sort == TVH_SORT_BLOCKS ? "basic blocks executed in them" :
		"branches landing in them");
	fprintf(out, "%12s %8s %8s  %s\n", "branches", "%", "blocks", "function");
	top = o->top && o->top < nrows ? o->top : nrows;
	for (size_t i = 0; i < top; i++)
		fprintf(out, "%12" PRIu64 " %7.2f%% %8" PRIu64 "  %s\n",
			rows[i].branches, pct(rows[i].branches, branches),
			rows[i].blocks, rows[i].name);
	fprintf(out, "#\n# hottest edges (from -> to)\n");
	fprintf(out, "%12s %8s  %-8s %s\n", "count", "%", "kind", "edge");
	top = o->top && o->top < nedges ? o->top : nedges;
	for (size_t i = 0; i < top; i++) {
		fprintf(out, "%12" PRIu64 " %7.2f%%  %-8s ", edges[i].n,
			pct(edges[i].n, branches), tvh_branch_kind_name(edges[i].kind));
		sym_addr(out, st, edges[i].from);
		fputs(" -> ", out);
		sym_addr(out, st, edges[i].to);
		fputc('\n', out);
	}
	if (ferror(out))
		ret = -TVH_ERR_IO;
out:
	for (size_t i = 0; i < nrows; i++)
		free(rows[i].name);
	free(rows);
	free(edges);
	counts_free(&t);
	counts_free(&e);
	counts_free(&lt);
	return ret;
}
