/* SPDX-License-Identifier: MIT */
/*
 * mem.c - memory-access listing and sharing report (see mem.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/ksyms.h"
#include "host-tools/lib/mem.h"
#include "host-tools/lib/text.h"

void tvh_mem_init(struct tvh_mem *m)
{
	memset(m, 0, sizeof(*m));
	m->only_cpu = -1;
	tvh_cputab_init(&m->cpus, sizeof(struct tvh_mem_cpu));
}

void tvh_mem_free(struct tvh_mem *m)
{
	for (size_t i = 0; i < m->nw; i++)
		free(m->w[i].label);
	free(m->w);
	free(m->v);
	tvh_cputab_free(&m->cpus, NULL);
	memset(m, 0, sizeof(*m));
	m->only_cpu = -1;
}

/* The traced machine's bytes: printable ASCII but space kept, the rest '_'. */
static char *sanitise(const char *s, uint32_t len)
{
	char *o = malloc((size_t)len + 1);

	if (!o)
		return NULL;
	for (uint32_t i = 0; i < len; i++)
		o[i] = s[i] > 0x20 && s[i] < 0x7f ? s[i] : '_';
	o[len] = 0;
	return o;
}

static int add_access(struct tvh_mem *m, uint32_t cpu, const struct trace_event *r)
{
	struct tvh_mem_access *a;

	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 256;
		struct tvh_mem_access *v = realloc(m->v, cap * sizeof(*v));

		if (!v)
			return -TVH_ERR_NOMEM;
		m->v = v;
		m->cap = cap;
	}
	a = &m->v[m->n++];
	*a = (struct tvh_mem_access){
		.cpu = cpu, .flags = r->u.mem.flags, .seq = r->seq, .tsc = r->tsc,
		.rip = r->u.mem.rip, .cr3 = r->u.mem.cr3, .gla = r->u.mem.gla,
		.gpa = r->u.mem.gpa, .gpa2 = r->u.mem.gpa2, .old = r->u.mem.old,
		.new_val = r->u.mem.new_val, .id = r->u.mem.id, .size = r->u.mem.size,
		.cpl = r->u.mem.cpl,
	};
	return 0;
}

static int add_watch(struct tvh_mem *m, uint32_t cpu, const struct trace_event *r)
{
	struct tvh_mem_watch *w;
	char *label;

	if (m->nw == m->wcap) {
		size_t cap = m->wcap ? 2 * m->wcap : 16;
		struct tvh_mem_watch *v = realloc(m->w, cap * sizeof(*v));

		if (!v)
			return -TVH_ERR_NOMEM;
		m->w = v;
		m->wcap = cap;
	}
	label = sanitise(r->u.mem_watch.label, r->u.mem_watch.label_len);
	if (!label)
		return -TVH_ERR_NOMEM;
	w = &m->w[m->nw++];
	*w = (struct tvh_mem_watch){
		.cpu = cpu, .op = r->u.mem_watch.op, .mode = r->u.mem_watch.mode,
		.origin = r->u.mem_watch.origin, .id = r->u.mem_watch.id,
		.tsc = r->tsc, .lo = r->u.mem_watch.lo, .hi = r->u.mem_watch.hi,
		.gla = r->u.mem_watch.gla, .cr3 = r->u.mem_watch.cr3, .label = label,
	};
	return 0;
}

int tvh_mem_event(void *ctx, const struct tvh_event *ev)
{
	struct tvh_mem *m = ctx;
	const struct trace_event *r = ev->rec;
	struct tvh_mem_cpu *c;
	int ret = 0;

	if (ev->kind == TVH_EV_MALFORMED) {
		if (r->type >= TV_REC_MEM && r->type <= TV_REC_MEM_STATS) {
			m->bad++;
			m->bad_by_type[r->type - TV_REC_MEM]++;
		}
		return 0;
	}
	if (ev->kind != TVH_EV_RECORD || r->type < TV_REC_MEM || r->type > TV_REC_MEM_STATS)
		return 0;
	c = tvh_cputab_get(&m->cpus, ev->cpu);
	if (!c) {
		ret = -TVH_ERR_NOMEM;
	} else if (r->type == TV_REC_MEM) {
		c->accesses++;
		if (m->only_cpu < 0 || (uint64_t)m->only_cpu == ev->cpu)
			ret = add_access(m, ev->cpu, r);
	} else if (r->type == TV_REC_MEM_WATCH) {
		ret = add_watch(m, ev->cpu, r);
	} else {
		/* Since boot: the last one is the CPU's total. */
		c->have_stats = true;
		c->recorded = r->u.mem_stats.recorded;
		c->filtered = r->u.mem_stats.filtered;
		c->collateral = r->u.mem_stats.collateral;
		c->steps = r->u.mem_stats.steps;
		c->undecoded = r->u.mem_stats.undecoded;
		c->outside_window = r->u.mem_stats.outside_window;
	}
	if (ret && !m->err)
		m->err = ret;
	return ret;
}

static int cmp_access(const void *pa, const void *pb)
{
	const struct tvh_mem_access *a = pa, *b = pb;

	if (a->tsc != b->tsc)
		return a->tsc < b->tsc ? -1 : 1;
	if (a->cpu != b->cpu)
		return a->cpu < b->cpu ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int cmp_watch(const void *pa, const void *pb)
{
	const struct tvh_mem_watch *a = pa, *b = pb;

	if (a->tsc != b->tsc)
		return a->tsc < b->tsc ? -1 : 1;
	return a->cpu < b->cpu ? -1 : a->cpu > b->cpu;
}

void tvh_mem_sort(struct tvh_mem *m)
{
	if (m->n > 1)
		qsort(m->v, m->n, sizeof(*m->v), cmp_access);
	if (m->nw > 1)
		qsort(m->w, m->nw, sizeof(*m->w), cmp_watch);
}

int tvh_mem_data_name(const struct tvh_mem *m, struct tvh_symtab *st, bool have_gla,
		      uint64_t gla, uint64_t gpa, char *buf, size_t n)
{
	const char *name, *mod;
	struct tvh_sym s;
	uint64_t off;
	int len;

	if (!n)
		return 0;
	buf[0] = 0;
	/* The guest's own names first: the latest label that covers gpa. */
	for (size_t i = m ? m->nw : 0; i-- > 0;) {
		const struct tvh_mem_watch *w = &m->w[i];

		if (w->op != TV_MEMW_REMOVE && w->label[0] && gpa >= w->lo && gpa < w->hi) {
			len = snprintf(buf, n, "%s+0x%" PRIx64, w->label, gpa - w->lo);
			return len < 0 ? 0 : (size_t)len < n ? len : (int)n - 1;
		}
	}
	if (!have_gla || !st)
		return 0;
	if (st->ksyms && !tvh_ksyms_lookup_data(st->ksyms, gla, &name, &off, &mod)) {
		len = mod ? snprintf(buf, n, "%s+0x%" PRIx64 " [%s]", name, off, mod) :
		      snprintf(buf, n, "%s+0x%" PRIx64, name, off);
		return len < 0 ? 0 : (size_t)len < n ? len : (int)n - 1;
	}
	if (!(st->nmods || st->regions) || tvh_sym_lookup(st, gla, &s))
		return 0;
	/* A kernel symbol of another kind names code, not this data. */
	if (s.func && !s.ksym)
		len = snprintf(buf, n, "%s+0x%" PRIx64, s.func, s.func_offset);
	else if (!s.func && s.module_name)
		len = snprintf(buf, n, "%s+0x%" PRIx64, s.module_name, s.module_offset);
	else
		return 0;
	return len < 0 ? 0 : (size_t)len < n ? len : (int)n - 1;
}

const char *tvh_mem_kind(uint32_t f)
{
	static const char *const names[8] = {
		"?", "r", "w", "rw", "?+lock", "r+lock", "w+lock", "rw+lock",
	};
	unsigned i = (f & TV_MEMF_READ ? 1u : 0u) | (f & TV_MEMF_WRITE ? 2u : 0u) |
		     (f & TV_MEMF_LOCK ? 4u : 0u);

	return names[i];
}

static const char *origin_name(unsigned o)
{
	return o == TV_MEMW_FROM_CONFIG ? "config" : o == TV_MEMW_FROM_HYPERCALL ? "hypercall" :
	       o == TV_MEMW_FROM_CONTROL ? "control" : "?";
}

static const char *op_name(unsigned op)
{
	return op == TV_MEMW_ARM ? "armed" : op == TV_MEMW_REMOVE ? "removed" :
	       op == TV_MEMW_LABEL ? "label" : "?";
}

static const char *mode_name(unsigned mode)
{
	return mode == TV_MEMW_MODE_R ? "r" : mode == TV_MEMW_MODE_W ? "w" :
	       mode == TV_MEMW_MODE_RW ? "rw" : "-";
}

/* The code symbol of a, or "" (st NULL or naming nothing). */
static void code_name(struct tvh_symtab *st, uint64_t a, char *buf, size_t n)
{
	buf[0] = 0;
	if (st && tvh_symtab_usable(st))
		tvh_sym_format(st, a, buf, n);
}

struct totals {
	uint64_t recorded, filtered, collateral, steps, undecoded, outside_window;
	unsigned cpus_with_stats;
};

static void sum_stats(const struct tvh_mem *m, struct totals *t)
{
	memset(t, 0, sizeof(*t));
	for (uint32_t i = 0; i < m->cpus.len; i++) {
		const struct tvh_mem_cpu *c = tvh_cputab_peek(&m->cpus, i);

		if (!c || !c->have_stats)
			continue;
		t->cpus_with_stats++;
		t->recorded = tvh_sat_add(t->recorded, c->recorded);
		t->filtered = tvh_sat_add(t->filtered, c->filtered);
		t->collateral = tvh_sat_add(t->collateral, c->collateral);
		t->steps = tvh_sat_add(t->steps, c->steps);
		t->undecoded = tvh_sat_add(t->undecoded, c->undecoded);
		t->outside_window = tvh_sat_add(t->outside_window, c->outside_window);
	}
}

static void text_watches(const struct tvh_mem *m, FILE *out)
{
	for (size_t i = 0; i < m->nw; i++) {
		const struct tvh_mem_watch *w = &m->w[i];

		fprintf(out, "# watch %u %s", w->id, op_name(w->op));
		if (w->op != TV_MEMW_REMOVE)
			fprintf(out, " 0x%" PRIx64 "-0x%" PRIx64, w->lo, w->hi);
		if (w->op == TV_MEMW_ARM)
			fprintf(out, " %s", mode_name(w->mode));
		fprintf(out, " by %s on cpu%u tsc %" PRIu64, origin_name(w->origin), w->cpu,
			w->tsc);
		if (w->gla)
			fprintf(out, " gla=0x%" PRIx64 " cr3=0x%" PRIx64, w->gla, w->cr3);
		if (w->label[0])
			fprintf(out, " \"%s\"", w->label);
		fputc('\n', out);
	}
}

static void text_access(const struct tvh_mem *m, struct tvh_symtab *st,
			const struct tvh_mem_access *a, FILE *out)
{
	char sym[512], name[512];

	code_name(st, a->rip, sym, sizeof(sym));
	fprintf(out, "cpu%u %" PRIu64 " 0x%" PRIx64 " %s %s ", a->cpu, a->tsc, a->rip,
		sym[0] ? sym : "-", tvh_mem_kind(a->flags));
	if (a->size)
		fprintf(out, "%u", a->size);
	else
		fputc('?', out);
	if (a->flags & TV_MEMF_LINEAR)
		fprintf(out, " gla=0x%" PRIx64, a->gla);
	else
		fputs(" gla=?", out);
	fprintf(out, " gpa=0x%" PRIx64, a->gpa);
	if (a->flags & TV_MEMF_SPLIT)
		fprintf(out, " split=0x%" PRIx64, a->gpa2);
	if (a->flags & TV_MEMF_OLD)
		fprintf(out, " old=0x%" PRIx64, a->old);
	if (a->flags & TV_MEMF_NEW)
		fprintf(out, " new=0x%" PRIx64, a->new_val);
	if (a->flags & TV_MEMF_STRING)
		fputs(" string", out);
	if (a->flags & TV_MEMF_IMPLICIT)
		fputs(" stack", out);
	if (a->flags & TV_MEMF_UNDECODED)
		fputs(" undecoded", out);
	if (a->cpl)
		fprintf(out, " cpl=%u", a->cpl);
	if (tvh_mem_data_name(m, st, a->flags & TV_MEMF_LINEAR, a->gla, a->gpa, name,
			      sizeof(name)) > 0)
		fprintf(out, " %s", name);
	fputc('\n', out);
}

static void text_tail(const struct tvh_mem *m, const struct tvh_stats *s, FILE *out)
{
	uint64_t reads = 0, writes = 0, locked = 0;
	struct totals t;

	for (size_t i = 0; i < m->n; i++) {
		reads += !!(m->v[i].flags & TV_MEMF_READ);
		writes += !!(m->v[i].flags & TV_MEMF_WRITE);
		locked += !!(m->v[i].flags & TV_MEMF_LOCK);
	}
	fprintf(out, "# accesses: %zu (reads %" PRIu64 ", writes %" PRIu64 ", locked %"
		PRIu64 ")", m->n, reads, writes, locked);
	for (uint32_t i = 0; i < m->cpus.len; i++) {
		const struct tvh_mem_cpu *c = tvh_cputab_peek(&m->cpus, i);

		if (c && c->accesses)
			fprintf(out, ", cpu%u %" PRIu64, i, c->accesses);
	}
	fputc('\n', out);
	for (uint32_t i = 0; i < m->cpus.len; i++) {
		const struct tvh_mem_cpu *c = tvh_cputab_peek(&m->cpus, i);

		if (c && c->have_stats)
			fprintf(out, "# cpu%u: recorded %" PRIu64 ", filtered %" PRIu64
				", collateral %" PRIu64 ", steps %" PRIu64 ", undecoded %"
				PRIu64 ", outside window %" PRIu64 "\n", i, c->recorded,
				c->filtered, c->collateral, c->steps, c->undecoded,
				c->outside_window);
	}
	sum_stats(m, &t);
	if (t.cpus_with_stats)
		fprintf(out, "# hypervisor (since boot, %u CPU%s): recorded %" PRIu64
			", filtered %" PRIu64 ", collateral %" PRIu64 ", steps %" PRIu64
			", undecoded %" PRIu64 ", outside window %" PRIu64 "\n",
			t.cpus_with_stats, t.cpus_with_stats == 1 ? "" : "s", t.recorded,
			t.filtered, t.collateral, t.steps, t.undecoded, t.outside_window);
	if (s)
		fprintf(out, "# lost records: %" PRIu64 "; malformed records: %" PRIu64,
			tvh_stats_lost(s), s->malformed);
	else
		fputs("# lost records: ?; malformed records: ?", out);
	fprintf(out, " (memory records %" PRIu64 ")\n", m->bad);
}

static void json_hex(FILE *out, const char *key, uint64_t v, bool comma)
{
	fprintf(out, "%s\"%s\": \"0x%" PRIx64 "\"", comma ? ", " : "", key, v);
}

static void json_str(FILE *out, const char *key, const char *s)
{
	fprintf(out, ", \"%s\": ", key);
	if (s && s[0])
		tvh_json_string(out, s, strlen(s));
	else
		fputs("null", out);
}

static void json_counters(FILE *out, uint64_t recorded, uint64_t filtered,
			  uint64_t collateral, uint64_t steps, uint64_t undecoded,
			  uint64_t outside)
{
	fprintf(out, "\"recorded\": %" PRIu64 ", \"filtered\": %" PRIu64 ", \"collateral\": %"
		PRIu64 ", \"steps\": %" PRIu64 ", \"undecoded\": %" PRIu64
		", \"outside_window\": %" PRIu64, recorded, filtered, collateral, steps,
		undecoded, outside);
}

static void json_list(const struct tvh_mem *m, struct tvh_symtab *st,
		      const struct tvh_stats *s, FILE *out)
{
	static const struct { uint32_t bit; const char *name; } fl[] = {
		{ TV_MEMF_STRING, "string" }, { TV_MEMF_IMPLICIT, "stack" },
		{ TV_MEMF_SPLIT, "split" }, { TV_MEMF_UNDECODED, "undecoded" },
	};
	char sym[512], name[512];
	struct totals t;
	bool first;

	fputs("{\"accesses\": [", out);
	for (size_t i = 0; i < m->n; i++) {
		const struct tvh_mem_access *a = &m->v[i];

		code_name(st, a->rip, sym, sizeof(sym));
		tvh_mem_data_name(m, st, a->flags & TV_MEMF_LINEAR, a->gla, a->gpa, name,
				  sizeof(name));
		fprintf(out, "%s\n  {\"cpu\": %u, \"tsc\": %" PRIu64, i ? "," : "", a->cpu, a->tsc);
		json_hex(out, "rip", a->rip, true);
		json_str(out, "symbol", sym);
		fprintf(out, ", \"read\": %s, \"write\": %s, \"lock\": %s, \"size\": %u",
			a->flags & TV_MEMF_READ ? "true" : "false",
			a->flags & TV_MEMF_WRITE ? "true" : "false",
			a->flags & TV_MEMF_LOCK ? "true" : "false", a->size);
		if (a->flags & TV_MEMF_LINEAR)
			json_hex(out, "gla", a->gla, true);
		else
			fputs(", \"gla\": null", out);
		json_hex(out, "gpa", a->gpa, true);
		if (a->flags & TV_MEMF_SPLIT)
			json_hex(out, "gpa2", a->gpa2, true);
		if (a->flags & TV_MEMF_OLD)
			json_hex(out, "old", a->old, true);
		if (a->flags & TV_MEMF_NEW)
			json_hex(out, "new", a->new_val, true);
		json_hex(out, "cr3", a->cr3, true);
		fprintf(out, ", \"cpl\": %u, \"watch\": %u, \"flags\": [", a->cpl, a->id);
		first = true;
		for (size_t k = 0; k < sizeof(fl) / sizeof(fl[0]); k++)
			if (a->flags & fl[k].bit) {
				fprintf(out, "%s\"%s\"", first ? "" : ", ", fl[k].name);
				first = false;
			}
		fputc(']', out);
		json_str(out, "name", name);
		fputc('}', out);
	}
	fputs("],\n\"watches\": [", out);
	for (size_t i = 0; i < m->nw; i++) {
		const struct tvh_mem_watch *w = &m->w[i];

		fprintf(out, "%s\n  {\"id\": %u, \"op\": \"%s\", \"mode\": \"%s\", \"origin\": \"%s\","
			" \"cpu\": %u, \"tsc\": %" PRIu64, i ? "," : "", w->id, op_name(w->op),
			mode_name(w->mode), origin_name(w->origin), w->cpu, w->tsc);
		json_hex(out, "lo", w->lo, true);
		json_hex(out, "hi", w->hi, true);
		json_hex(out, "gla", w->gla, true);
		json_hex(out, "cr3", w->cr3, true);
		json_str(out, "label", w->label);
		fputc('}', out);
	}
	fputs("],\n\"cpus\": [", out);
	first = true;
	for (uint32_t i = 0; i < m->cpus.len; i++) {
		const struct tvh_mem_cpu *c = tvh_cputab_peek(&m->cpus, i);

		if (!c)
			continue;
		fprintf(out, "%s\n  {\"cpu\": %u, \"accesses\": %" PRIu64 ", \"stats\": ",
			first ? "" : ",", i, c->accesses);
		first = false;
		if (c->have_stats) {
			fputc('{', out);
			json_counters(out, c->recorded, c->filtered, c->collateral, c->steps,
				      c->undecoded, c->outside_window);
			fputs("}}", out);
		} else {
			fputs("null}", out);
		}
	}
	sum_stats(m, &t);
	fputs("],\n\"totals\": {", out);
	json_counters(out, t.recorded, t.filtered, t.collateral, t.steps, t.undecoded,
		      t.outside_window);
	fprintf(out, "},\n\"lost_records\": %" PRIu64 ", \"malformed_records\": %" PRIu64
		", \"bad_memory_records\": %" PRIu64 "}\n", s ? tvh_stats_lost(s) : 0,
		s ? s->malformed : 0, m->bad);
}

int tvh_mem_list(struct tvh_mem *m, struct tvh_symtab *st, const struct tvh_stats *s,
		 bool json, FILE *out)
{
	tvh_mem_sort(m);
	if (json) {
		json_list(m, st, s, out);
	} else {
		text_watches(m, out);
		for (size_t i = 0; i < m->n; i++)
			text_access(m, st, &m->v[i], out);
		text_tail(m, s, out);
	}
	return ferror(out) ? -TVH_ERR_IO : 0;
}

/* ---- the sharing report ---------------------------------------------------- */

const char *tvh_mem_share_name(enum tvh_mem_share k)
{
	switch (k) {
	case TVH_SHARE_PRIVATE: return "private";
	case TVH_SHARE_READ: return "read-shared";
	case TVH_SHARE_FALSE: return "false-sharing";
	case TVH_SHARE_TRUE: return "true-sharing";
	}
	return "?";
}

/* An access's bytes in its line (an undecoded one: its first byte). */
static uint64_t byte_mask(const struct tvh_mem_access *a)
{
	unsigned off = (unsigned)(a->gpa & (TVH_MEM_LINE - 1));
	unsigned n = a->size ? a->size : 1;

	if (n > TVH_MEM_LINE - off)
		n = TVH_MEM_LINE - off;
	return (n == 64 ? ~0ull : ((1ull << n) - 1)) << off;
}

struct order {
	uint64_t line;
	size_t pos;              /* index in the time-sorted accesses */
};

static int cmp_order(const void *pa, const void *pb)
{
	const struct order *a = pa, *b = pb;

	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

struct site_key {
	uint32_t off;
	uint64_t rip;
};

static int cmp_site_key(const void *pa, const void *pb)
{
	const struct site_key *a = pa, *b = pb;

	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	return a->rip < b->rip ? -1 : a->rip > b->rip;
}

static int cmp_site(const void *pa, const void *pb)
{
	const struct tvh_mem_site *a = pa, *b = pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return a->rip < b->rip ? -1 : a->rip > b->rip;
}

static int cmp_line(const void *pa, const void *pb)
{
	const struct tvh_mem_line *a = pa, *b = pb;

	if (a->transfers != b->transfers)
		return a->transfers > b->transfers ? -1 : 1;
	if (a->accesses != b->accesses)
		return a->accesses > b->accesses ? -1 : 1;
	return a->gpa < b->gpa ? -1 : a->gpa > b->gpa;
}

static void line_free(struct tvh_mem_line *l)
{
	for (uint32_t i = 0; i < l->noffs; i++) {
		free(l->offs[i].cpus);
		free(l->offs[i].sites);
	}
	free(l->offs);
	free(l->cpus);
}

void tvh_mem_sharing_free(struct tvh_mem_sharing *sh)
{
	for (size_t i = 0; i < sh->n; i++)
		line_free(&sh->v[i]);
	free(sh->v);
	memset(sh, 0, sizeof(*sh));
}

/* Add cpu to the sorted set v[0..*n) (room for one more is there). */
static void cpu_set_add(uint32_t *v, uint32_t *n, uint32_t cpu)
{
	uint32_t i = 0;

	while (i < *n && v[i] < cpu)
		i++;
	if (i < *n && v[i] == cpu)
		return;
	memmove(v + i + 1, v + i, (*n - i) * sizeof(*v));
	v[i] = cpu;
	(*n)++;
}

static struct tvh_mem_line_cpu *line_cpu(struct tvh_mem_line *l, uint32_t cpu)
{
	uint32_t i = 0;

	while (i < l->ncpus && l->cpus[i].cpu < cpu)
		i++;
	if (i < l->ncpus && l->cpus[i].cpu == cpu)
		return &l->cpus[i];
	memmove(l->cpus + i + 1, l->cpus + i, (l->ncpus - i) * sizeof(*l->cpus));
	memset(&l->cpus[i], 0, sizeof(l->cpus[i]));
	l->cpus[i].cpu = cpu;
	l->ncpus++;
	return &l->cpus[i];
}

static enum tvh_mem_share classify(const struct tvh_mem_line *l)
{
	bool any_write = false;

	if (l->ncpus < 2)
		return TVH_SHARE_PRIVATE;
	for (uint32_t i = 0; i < l->ncpus; i++) {
		any_write |= l->cpus[i].wmask != 0;
		for (uint32_t j = 0; j < l->ncpus; j++)
			if (i != j && (l->cpus[i].wmask & (l->cpus[j].rmask | l->cpus[j].wmask)))
				return TVH_SHARE_TRUE;
	}
	return any_write ? TVH_SHARE_FALSE : TVH_SHARE_READ;
}

/*
 * One line from the accesses acc[ord[0..n).pos] (time order).  cpus is
 * sized for n distinct CPUs; offsets: at most TVH_MEM_LINE.
 */
static int build_line(const struct tvh_mem_access *acc, const struct order *ord, size_t n,
		      struct tvh_mem_line *l)
{
	struct tvh_mem_offset offs[TVH_MEM_LINE];
	uint32_t *ocpus[TVH_MEM_LINE] = { 0 };
	struct site_key *keys = NULL;
	const struct tvh_mem_access *prev = NULL;
	bool used[TVH_MEM_LINE] = { false };
	uint32_t noffs = 0;
	size_t s = 0;
	int ret = -TVH_ERR_NOMEM;

	memset(l, 0, sizeof(*l));
	memset(offs, 0, sizeof(offs));
	l->gpa = ord[0].line;
	l->cpus = calloc(n, sizeof(*l->cpus));
	keys = malloc(n * sizeof(*keys));
	if (!l->cpus || !keys)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct tvh_mem_access *a = &acc[ord[i].pos];
		uint32_t off = (uint32_t)(a->gpa & (TVH_MEM_LINE - 1));
		struct tvh_mem_offset *o = &offs[off];
		struct tvh_mem_line_cpu *c = line_cpu(l, a->cpu);
		bool r = a->flags & TV_MEMF_READ, w = a->flags & TV_MEMF_WRITE;
		uint8_t sz = a->size;

		if (!l->have_gla && (a->flags & TV_MEMF_LINEAR)) {
			l->have_gla = true;
			l->gla = a->gla - off;
		}
		l->accesses++;
		l->reads += r;
		l->writes += w;
		l->locked += !!(a->flags & TV_MEMF_LOCK);
		if (prev && prev->cpu != a->cpu && (w || (prev->flags & TV_MEMF_WRITE)))
			l->transfers++;
		prev = a;
		c->accesses++;
		c->reads += r;
		c->writes += w;
		if (r)
			c->rmask |= byte_mask(a);
		if (w)
			c->wmask |= byte_mask(a);
		if (!r && !w)   /* undecoded without a direction: a touch */
			c->rmask |= byte_mask(a);
		if (!used[off]) {
			used[off] = true;
			o->off = off;
			o->size_min = o->size_max = sz;
			ocpus[off] = malloc(n * sizeof(uint32_t));
			if (!ocpus[off])
				goto out;
			o->cpus = ocpus[off];
		}
		if (sz < o->size_min)
			o->size_min = sz;
		if (sz > o->size_max)
			o->size_max = sz;
		o->accesses++;
		o->reads += r;
		o->writes += w;
		o->locked += !!(a->flags & TV_MEMF_LOCK);
		cpu_set_add(o->cpus, &o->ncpus, a->cpu);
		keys[i] = (struct site_key){ .off = off, .rip = a->rip };
	}
	l->share = classify(l);
	for (unsigned k = 0; k < TVH_MEM_LINE; k++)
		noffs += used[k];
	l->offs = calloc(noffs, sizeof(*l->offs));
	if (!l->offs)
		goto out;
	l->noffs = noffs;
	/* Code locations per offset: sort (off, rip), count the runs. */
	qsort(keys, n, sizeof(*keys), cmp_site_key);
	for (unsigned k = 0, j = 0; k < TVH_MEM_LINE; k++) {
		struct tvh_mem_offset *o;

		if (!used[k])
			continue;
		o = &l->offs[j++];
		*o = offs[k];
		ocpus[k] = NULL;   /* owned by the line now */
		o->sites = malloc(o->accesses * sizeof(*o->sites));
		if (!o->sites)
			goto out;
		while (s < n && keys[s].off < k)
			s++;
		for (; s < n && keys[s].off == k; s++) {
			if (o->nsites && o->sites[o->nsites - 1].rip == keys[s].rip)
				o->sites[o->nsites - 1].count++;
			else
				o->sites[o->nsites++] = (struct tvh_mem_site){ keys[s].rip, 1 };
		}
		qsort(o->sites, o->nsites, sizeof(*o->sites), cmp_site);
	}
	ret = 0;
out:
	for (unsigned k = 0; k < TVH_MEM_LINE; k++)
		free(ocpus[k]);
	free(keys);
	if (ret)
		line_free(l);
	return ret;
}

int tvh_mem_sharing_build(struct tvh_mem *m, struct tvh_mem_sharing *sh)
{
	struct order *ord;
	size_t lines = 0;

	memset(sh, 0, sizeof(*sh));
	tvh_mem_sort(m);
	if (!m->n)
		return 0;
	ord = malloc(m->n * sizeof(*ord));
	if (!ord)
		return -TVH_ERR_NOMEM;
	for (size_t i = 0; i < m->n; i++)
		ord[i] = (struct order){ m->v[i].gpa & ~(uint64_t)(TVH_MEM_LINE - 1), i };
	qsort(ord, m->n, sizeof(*ord), cmp_order);
	for (size_t i = 0; i < m->n; i++)
		lines += !i || ord[i].line != ord[i - 1].line;
	sh->v = calloc(lines, sizeof(*sh->v));
	if (!sh->v) {
		free(ord);
		return -TVH_ERR_NOMEM;
	}
	for (size_t i = 0; i < m->n;) {
		size_t j = i;

		while (j < m->n && ord[j].line == ord[i].line)
			j++;
		if (build_line(m->v, ord + i, j - i, &sh->v[sh->n])) {
			free(ord);
			tvh_mem_sharing_free(sh);
			return -TVH_ERR_NOMEM;
		}
		sh->by_share[sh->v[sh->n].share]++;
		sh->n++;
		i = j;
	}
	sh->accesses = m->n;
	free(ord);
	qsort(sh->v, sh->n, sizeof(*sh->v), cmp_line);
	return 0;
}

static void line_name(const struct tvh_mem *m, struct tvh_symtab *st,
		      const struct tvh_mem_line *l, char *buf, size_t n)
{
	tvh_mem_data_name(m, st, l->have_gla, l->gla, l->gpa, buf, n);
}

static void sizes(FILE *out, const struct tvh_mem_offset *o)
{
	if (!o->size_max)
		fputc('?', out);
	else if (o->size_min == o->size_max)
		fprintf(out, "%u", o->size_max);
	else
		fprintf(out, "%u-%u", o->size_min, o->size_max);
}

static void text_sharing(const struct tvh_mem_sharing *sh, const struct tvh_mem *m,
			 struct tvh_symtab *st, const struct tvh_stats *s, unsigned top,
			 FILE *out)
{
	char name[512], sym[512];

	fprintf(out, "# sharing: %zu cache lines of %u bytes (by guest-physical address), %"
		PRIu64 " accesses; false sharing %" PRIu64 ", true sharing %" PRIu64
		", read-shared %" PRIu64 ", private %" PRIu64 "\n", sh->n, TVH_MEM_LINE,
		sh->accesses, sh->by_share[TVH_SHARE_FALSE], sh->by_share[TVH_SHARE_TRUE],
		sh->by_share[TVH_SHARE_READ], sh->by_share[TVH_SHARE_PRIVATE]);
	for (size_t i = 0; i < sh->n; i++) {
		const struct tvh_mem_line *l = &sh->v[i];

		line_name(m, st, l, name, sizeof(name));
		fprintf(out, "line 0x%" PRIx64 " %s cpus ", l->gpa, name[0] ? name : "-");
		for (uint32_t k = 0; k < l->ncpus; k++)
			fprintf(out, "%s%u", k ? "," : "", l->cpus[k].cpu);
		fprintf(out, " reads %" PRIu64 " writes %" PRIu64 " locked %" PRIu64
			" transfers %" PRIu64 " %s offsets ", l->reads, l->writes, l->locked,
			l->transfers, tvh_mem_share_name(l->share));
		for (uint32_t k = 0; k < l->noffs; k++)
			fprintf(out, "%s+0x%x", k ? "," : "", l->offs[k].off);
		fputc('\n', out);
		for (uint32_t k = 0; k < l->noffs; k++) {
			const struct tvh_mem_offset *o = &l->offs[k];
			uint32_t ns = top && o->nsites > top ? top : o->nsites;

			fprintf(out, "  +0x%x size ", o->off);
			sizes(out, o);
			fputs(" cpus ", out);
			for (uint32_t c = 0; c < o->ncpus; c++)
				fprintf(out, "%s%u", c ? "," : "", o->cpus[c]);
			fprintf(out, " reads %" PRIu64 " writes %" PRIu64 " locked %" PRIu64 ":",
				o->reads, o->writes, o->locked);
			for (uint32_t c = 0; c < ns; c++) {
				code_name(st, o->sites[c].rip, sym, sizeof(sym));
				fprintf(out, "%s 0x%" PRIx64 "%s%s x%" PRIu64, c ? "," : "",
					o->sites[c].rip, sym[0] ? " " : "", sym, o->sites[c].count);
			}
			if (ns < o->nsites)
				fprintf(out, ", ... %u more", o->nsites - ns);
			fputc('\n', out);
		}
	}
	if (s)
		fprintf(out, "# lost records: %" PRIu64 "; malformed records: %" PRIu64
			" (memory records %" PRIu64 ")\n", tvh_stats_lost(s), s->malformed, m->bad);
}

static void json_cpus(FILE *out, const uint32_t *v, uint32_t n, size_t stride)
{
	fputc('[', out);
	for (uint32_t k = 0; k < n; k++)
		fprintf(out, "%s%u", k ? ", " : "",
			*(const uint32_t *)((const uint8_t *)v + k * stride));
	fputc(']', out);
}

static void json_sharing(const struct tvh_mem_sharing *sh, const struct tvh_mem *m,
			 struct tvh_symtab *st, const struct tvh_stats *s, unsigned top,
			 FILE *out)
{
	char name[512], sym[512];

	fputs("{\"lines\": [", out);
	for (size_t i = 0; i < sh->n; i++) {
		const struct tvh_mem_line *l = &sh->v[i];

		line_name(m, st, l, name, sizeof(name));
		fprintf(out, "%s\n  {", i ? "," : "");
		json_hex(out, "line", l->gpa, false);
		if (l->have_gla)
			json_hex(out, "gla", l->gla, true);
		else
			fputs(", \"gla\": null", out);
		json_str(out, "name", name);
		fputs(", \"cpus\": ", out);
		json_cpus(out, &l->cpus[0].cpu, l->ncpus, sizeof(l->cpus[0]));
		fprintf(out, ", \"accesses\": %" PRIu64 ", \"reads\": %" PRIu64 ", \"writes\": %"
			PRIu64 ", \"locked\": %" PRIu64 ", \"transfers\": %" PRIu64
			", \"sharing\": \"%s\", \"offsets\": [", l->accesses, l->reads, l->writes,
			l->locked, l->transfers, tvh_mem_share_name(l->share));
		for (uint32_t k = 0; k < l->noffs; k++) {
			const struct tvh_mem_offset *o = &l->offs[k];
			uint32_t ns = top && o->nsites > top ? top : o->nsites;

			fprintf(out, "%s{\"offset\": %u, \"size_min\": %u, \"size_max\": %u,"
				" \"cpus\": ", k ? ", " : "", o->off, o->size_min, o->size_max);
			json_cpus(out, o->cpus, o->ncpus, sizeof(o->cpus[0]));
			fprintf(out, ", \"accesses\": %" PRIu64 ", \"reads\": %" PRIu64
				", \"writes\": %" PRIu64 ", \"locked\": %" PRIu64
				", \"sites\": %u, \"top\": [", o->accesses, o->reads, o->writes,
				o->locked, o->nsites);
			for (uint32_t c = 0; c < ns; c++) {
				code_name(st, o->sites[c].rip, sym, sizeof(sym));
				fprintf(out, "%s{", c ? ", " : "");
				json_hex(out, "rip", o->sites[c].rip, false);
				json_str(out, "symbol", sym);
				fprintf(out, ", \"count\": %" PRIu64 "}", o->sites[c].count);
			}
			fputs("]}", out);
		}
		fputs("]}", out);
	}
	fprintf(out, "],\n\"summary\": {\"lines\": %zu, \"accesses\": %" PRIu64
		", \"false_sharing\": %" PRIu64 ", \"true_sharing\": %" PRIu64
		", \"read_shared\": %" PRIu64 ", \"private\": %" PRIu64 "},\n"
		"\"lost_records\": %" PRIu64 ", \"malformed_records\": %" PRIu64
		", \"bad_memory_records\": %" PRIu64 "}\n", sh->n, sh->accesses,
		sh->by_share[TVH_SHARE_FALSE], sh->by_share[TVH_SHARE_TRUE],
		sh->by_share[TVH_SHARE_READ], sh->by_share[TVH_SHARE_PRIVATE],
		s ? tvh_stats_lost(s) : 0, s ? s->malformed : 0, m->bad);
}

int tvh_mem_sharing_write(const struct tvh_mem_sharing *sh, const struct tvh_mem *m,
			  struct tvh_symtab *st, const struct tvh_stats *s,
			  unsigned top, bool json, FILE *out)
{
	if (json)
		json_sharing(sh, m, st, s, top, out);
	else
		text_sharing(sh, m, st, s, top, out);
	return ferror(out) ? -TVH_ERR_IO : 0;
}
