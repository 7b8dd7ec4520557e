/* SPDX-License-Identifier: MIT */
/*
 * chrome.c - Chrome trace-event JSON writer (see chrome.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "host-tools/lib/chrome.h"
#include "host-tools/lib/cputab.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/pt.h"
#include "host-tools/lib/text.h"

enum frame_kind { FRAME_CALL = 0, FRAME_TRAP = 1 };

struct anchor {
	uint64_t seq;
	uint64_t tsc;
};

struct cpu_time {
	/* pass 1 */
	struct anchor *a;
	size_t n, cap;
	bool prev_no_tsc;
	bool any_tsc;
	/* pass 2 */
	bool seen;
	size_t next;
	bool have_last;
	uint64_t last_seq, last_tsc;
	bool have_us;
	double last_us;
	uint8_t *stack;
	uint32_t depth;
	uint32_t phantom;        /* calls beyond TVH_CHROME_MAX_DEPTH */
	/* PT branches: their own clock (they come after the CPU's records) */
	bool have_pt_us;
	double pt_last_us;
	/* the PT decoding wrapper's context for this CPU (ptbranch.h) */
	void *ptbr;
	bool ptbr_begun;
};

struct chrome {
	const struct tvh_chrome_opts *o;
	FILE *out;
	struct tvh_cputab cpus;
	struct tvh_chrome_stats *cs;
	bool have_min;
	uint64_t min_tsc;
	uint64_t hz;
	bool first_event;
	struct tvh_ptbr *ptbr;   /* PT decoding; NULL: PT only counted */
	int ptbr_err;            /* the wrapper's begin failed */
};

static void cpu_fini(void *p)
{
	struct cpu_time *c = p;

	free(c->a);
	free(c->stack);
}

/* ---- pass 1: where the TSC values are ---------------------------------- */

static int pass1(void *ctx, const struct tvh_event *ev)
{
	struct chrome *ch = ctx;
	const struct trace_event *r = ev->rec;
	struct cpu_time *c;

	if (ev->kind != TVH_EV_RECORD || r->type == TV_REC_PAD)
		return 0;
	c = tvh_cputab_get(&ch->cpus, ev->cpu);
	if (!c)
		return -TVH_ERR_NOMEM;
	if (!r->has_tsc || !r->tsc) {
		c->prev_no_tsc = true;
		return 0;
	}
	if (!ch->have_min || r->tsc < ch->min_tsc) {
		ch->min_tsc = r->tsc;
		ch->have_min = true;
	}
	c->any_tsc = true;
	if (c->prev_no_tsc) {
		/* Only anchors that end a run of TSC-less records are kept. */
		if (c->n == c->cap) {
			size_t cap = c->cap ? 2 * c->cap : 64;
			struct anchor *a = realloc(c->a, cap * sizeof(*a));

			if (!a)
				return -TVH_ERR_NOMEM;
			c->a = a;
			c->cap = cap;
		}
		c->a[c->n++] = (struct anchor){ r->seq, r->tsc };
	}
	c->prev_no_tsc = false;
	return 0;
}

/* ---- pass 2: events ------------------------------------------------------ */

static double rec_time(struct chrome *ch, struct cpu_time *c,
		       const struct trace_event *r)
{
	double us;

	if (!ch->cs->tsc_time || !c->any_tsc) {
		us = (double)r->seq;
	} else {
		uint64_t t;

		if (r->has_tsc && r->tsc) {
			t = r->tsc;
			c->have_last = true;
			c->last_seq = r->seq;
			c->last_tsc = r->tsc;
		} else {
			const struct anchor *nx;

			while (c->next < c->n && c->a[c->next].seq <= r->seq)
				c->next++;
			nx = c->next < c->n ? &c->a[c->next] : NULL;
			if (c->have_last && nx && nx->tsc >= c->last_tsc &&
			    nx->seq > c->last_seq)
				t = c->last_tsc + (uint64_t)((unsigned __int128)
					(nx->tsc - c->last_tsc) * (r->seq - c->last_seq) /
					(nx->seq - c->last_seq));
			else if (c->have_last)
				t = c->last_tsc;
			else if (nx)
				t = nx->tsc;
			else
				t = ch->min_tsc;
		}
		us = t >= ch->min_tsc ? (double)(t - ch->min_tsc) * 1e6 / (double)ch->hz : 0;
	}
	if (c->have_us && us < c->last_us)
		us = c->last_us;
	c->last_us = us;
	c->have_us = true;
	return us;
}

/* A PT branch's time: the decoder's TSC, else the branch index. */
static double pt_time(struct chrome *ch, struct cpu_time *c,
		      const struct trace_event *r)
{
	double us;

	if (ch->cs->tsc_time && r->has_tsc)
		us = r->tsc >= ch->min_tsc ?
		     (double)(r->tsc - ch->min_tsc) * 1e6 / (double)ch->hz : 0;
	else if (ch->cs->tsc_time)
		us = c->have_pt_us ? c->pt_last_us : 0;
	else
		us = (double)r->seq;
	if (c->have_pt_us && us < c->pt_last_us)
		us = c->pt_last_us;
	c->pt_last_us = us;
	c->have_pt_us = true;
	return us;
}

static double last_time(const struct cpu_time *c)
{
	double us = c->have_us ? c->last_us : 0;

	return c->have_pt_us && c->pt_last_us > us ? c->pt_last_us : us;
}

/* Starts an event object: {"ph":"X","pid":0,"tid":N,"ts":T */
static void ev_open(struct chrome *ch, char ph, uint32_t cpu, double ts)
{
	fputs(ch->first_event ? "\n" : ",\n", ch->out);
	ch->first_event = false;
	fprintf(ch->out, "{\"ph\":\"%c\",\"pid\":0,\"tid\":%u,\"ts\":%.3f", ph,
		cpu, ts);
	ch->cs->events++;
}

static void put_hex_arg(FILE *f, const char *key, uint64_t v, bool comma)
{
	fprintf(f, "%s\"%s\":\"0x%" PRIx64 "\"", comma ? "," : "", key, v);
}

static void slice_close(struct chrome *ch, uint32_t cpu, struct cpu_time *c, double ts)
{
	ev_open(ch, 'E', cpu, ts);
	fputs("}", ch->out);
	c->depth--;
}

static void close_all(struct chrome *ch, uint32_t cpu, struct cpu_time *c,
		      double ts, uint64_t *counter)
{
	*counter += c->depth;
	while (c->depth)
		slice_close(ch, cpu, c, ts);
	c->phantom = 0;
}

/* Instant event; name is already a JSON-safe C string, text is escaped. */
static void instant(struct chrome *ch, uint32_t cpu, double ts, const char *cat,
		    const char *name, const char *text, size_t text_len)
{
	ev_open(ch, 'i', cpu, ts);
	fprintf(ch->out, ",\"s\":\"t\",\"cat\":\"%s\",\"name\":", cat);
	if (text) {
		char *buf = malloc(strlen(name) + text_len + 1);

		if (buf) {
			memcpy(buf, name, strlen(name));
			memcpy(buf + strlen(name), text, text_len);
			tvh_json_string(ch->out, buf, strlen(name) + text_len);
			free(buf);
		} else {
			tvh_json_string(ch->out, name, strlen(name));
		}
	} else {
		tvh_json_string(ch->out, name, strlen(name));
	}
	ch->cs->instants++;
}

static void target_name(struct chrome *ch, uint64_t to, char *buf, size_t n)
{
	struct tvh_sym s;

	if (ch->o->st && !tvh_sym_lookup(ch->o->st, to, &s)) {
		if (s.func && !s.func_offset)
			snprintf(buf, n, "%s", s.func);
		else if (s.func)
			snprintf(buf, n, "%s+0x%" PRIx64, s.func, s.func_offset);
		else
			snprintf(buf, n, "%s+0x%" PRIx64, s.module_name, s.module_offset);
	} else {
		snprintf(buf, n, "0x%" PRIx64, to);
	}
}

static int branch(struct chrome *ch, uint32_t cpu, struct cpu_time *c,
		  const struct trace_event *r, double ts)
{
	uint8_t kind = r->u.branch.kind;
	char name[512];

	switch (kind) {
	case TV_BR_CALL:
	case TV_BR_CALL_IND:
	case TV_BR_SYSCALL:
	case TV_BR_EXCEPTION:
	case TV_BR_INTERRUPT: {
		bool call = kind == TV_BR_CALL || kind == TV_BR_CALL_IND;
		size_t len = 0;

		if (c->depth >= TVH_CHROME_MAX_DEPTH) {
			c->phantom++;
			ch->cs->too_deep++;
			return 0;
		}
		if (!call)
			len = (size_t)snprintf(name, sizeof(name), "%s: ",
					       tvh_branch_kind_name(kind));
		target_name(ch, r->u.branch.to, name + len, sizeof(name) - len);
		ev_open(ch, 'B', cpu, ts);
		fprintf(ch->out, ",\"cat\":\"%s\",\"name\":", call ? "call" : tvh_branch_kind_name(kind));
		tvh_json_string(ch->out, name, strlen(name));
		fputs(",\"args\":{", ch->out);
		put_hex_arg(ch->out, "from", r->u.branch.from, false);
		put_hex_arg(ch->out, "to", r->u.branch.to, true);
		fputs("}}", ch->out);
		if (c->depth % 256 == 0) {
			uint8_t *s = realloc(c->stack, c->depth + 256);

			if (!s)
				return -TVH_ERR_NOMEM;
			c->stack = s;
		}
		c->stack[c->depth++] = call ? FRAME_CALL : FRAME_TRAP;
		ch->cs->slices++;
		return 1;
	}
	case TV_BR_RET:
		if (c->phantom) {
			c->phantom--;
		} else if (c->depth && c->stack[c->depth - 1] == FRAME_CALL) {
			slice_close(ch, cpu, c, ts);
		} else {
			ch->cs->unmatched_returns++;
		}
		return 0;
	case TV_BR_SYSRET: {
		uint32_t i = c->depth;

		c->phantom = 0;
		while (i && c->stack[i - 1] != FRAME_TRAP)
			i--;
		if (!i) {
			ch->cs->unmatched_returns++;
			return 0;
		}
		while (c->depth >= i)
			slice_close(ch, cpu, c, ts);
		return 0;
	}
	default:
		return 0;
	}
}

/* A loss in the decoded PT (ptbranch.h): the call stack is unknown after it. */
static int pt_loss(struct chrome *ch, uint32_t cpu, struct cpu_time *c,
		   const struct tvh_event *ev)
{
	double ts = c->have_pt_us ? c->pt_last_us : 0;
	char name[160];

	close_all(ch, cpu, c, ts, &ch->cs->closed_by_loss);
	if (ev->gap == TVH_GAP_PT_ERROR)
		snprintf(name, sizeof(name), "PT decode error at offset 0x%" PRIx64
			 ": %s", ev->pt_offset, tvh_pt_errstr(ev->err));
	else
		snprintf(name, sizeof(name), "PT lost: %" PRIu64 " bytes at offset 0x%"
			 PRIx64 "%s", ev->count, ev->pt_offset, ev->gap == TVH_GAP_PT_CUT ?
			 " (counted by PT_SYNC)" : "");
	instant(ch, cpu, ts, "lost", name, NULL, 0);
	fputs("}", ch->out);
	ch->cs->pt_losses++;
	return 0;
}

static int pass2(void *ctx, const struct tvh_event *ev)
{
	struct chrome *ch = ctx;
	const struct trace_event *r = ev->rec;
	struct cpu_time *c;
	char name[160];
	double ts;

	if (ev->cpu == UINT32_MAX || ev->kind == TVH_EV_PT ||
	    (ev->kind == TVH_EV_PT_GAP && !ch->ptbr) || ev->kind == TVH_EV_RING ||
	    ev->kind == TVH_EV_CHUNK_ERROR)
		return 0;
	c = tvh_cputab_get(&ch->cpus, ev->cpu);
	if (!c)
		return -TVH_ERR_NOMEM;
	c->seen = true;
	if (ev->kind == TVH_EV_PT_GAP)
		return pt_loss(ch, ev->cpu, c, ev);
	if (ev->kind == TVH_EV_RECORD && ev->pt) {
		int ret;

		ts = pt_time(ch, c, r);
		ret = branch(ch, ev->cpu, c, r, ts);
		if (ret > 0)
			ch->cs->pt_slices++;
		return ret < 0 ? ret : 0;
	}
	if (ev->kind == TVH_EV_GAP) {
		ts = c->have_us ? c->last_us : 0;
		close_all(ch, ev->cpu, c, ts, &ch->cs->closed_by_loss);
		snprintf(name, sizeof(name), "lost %" PRIu64 " records (%s)",
			 ev->count, ev->gap == TVH_GAP_HEAD ?
			 "before the capture" : "sequence gap");
		instant(ch, ev->cpu, ts, "lost", name, NULL, 0);
		fprintf(ch->out, ",\"args\":{\"first_seq\":%" PRIu64 ",\"count\":%" PRIu64 "}}",
			ev->seq, ev->count);
		return 0;
	}
	if (ev->kind == TVH_EV_MALFORMED) {
		ts = c->have_us ? c->last_us : 0;
		snprintf(name, sizeof(name), "malformed record seq %" PRIu64 ": %s",
			 r->seq, tvh_errstr(ev->err));
		instant(ch, ev->cpu, ts, "error", name, NULL, 0);
		fputs("}", ch->out);
		return 0;
	}
	if (r->type == TV_REC_PAD)
		return 0;
	ts = rec_time(ch, c, r);
	switch (r->type) {
	case TV_REC_BRANCH:
	case TV_REC_BRANCH_COMPACT:
	case TV_REC_LBR: {
		int ret = branch(ch, ev->cpu, c, r, ts);

		return ret < 0 ? ret : 0;
	}
	case TV_REC_CR3:
		snprintf(name, sizeof(name), "cr3 0x%" PRIx64, r->u.cr3.cr3);
		instant(ch, ev->cpu, ts, "cr3", name, NULL, 0);
		fputs(",\"args\":{", ch->out);
		put_hex_arg(ch->out, "cr3", r->u.cr3.cr3, false);
		put_hex_arg(ch->out, "rip", r->u.cr3.rip, true);
		fputs("}}", ch->out);
		return 0;
	case TV_REC_START:
	case TV_REC_STOP:
		if (r->type == TV_REC_STOP)
			close_all(ch, ev->cpu, c, ts, &ch->cs->closed_by_loss);
		snprintf(name, sizeof(name), "%s (%s)",
			 r->type == TV_REC_START ? "start" : "stop",
			 tvh_trigger_name(r->u.startstop.trigger));
		instant(ch, ev->cpu, ts, "trace", name, NULL, 0);
		fputs(",\"args\":{", ch->out);
		put_hex_arg(ch->out, "rip", r->u.startstop.rip, false);
		fprintf(ch->out, ",\"tsc\":%" PRIu64 "}}", r->tsc);
		return 0;
	case TV_REC_LOST:
		close_all(ch, ev->cpu, c, ts, &ch->cs->closed_by_loss);
		snprintf(name, sizeof(name), "lost %" PRIu64 " records (LOST)",
			 r->u.lost.records);
		instant(ch, ev->cpu, ts, "lost", name, NULL, 0);
		fputs("}", ch->out);
		return 0;
	case TV_REC_MARKER:
		instant(ch, ev->cpu, ts, "marker", "marker: ", r->u.marker.label,
			r->u.marker.label_len);
		fprintf(ch->out, ",\"args\":{\"value\":\"0x%" PRIx64 "\"}}",
			r->u.marker.value);
		return 0;
	case TV_REC_LOG:
		instant(ch, ev->cpu, ts, "log", "log: ", r->u.text.text,
			r->u.text.len);
		fprintf(ch->out, ",\"args\":{\"level\":%u}}", r->u.text.level);
		return 0;
	case TV_REC_CONFIG:
		instant(ch, ev->cpu, ts, "config", "config: ", r->u.text.text,
			r->u.text.len);
		fputs("}", ch->out);
		return 0;
	case TV_REC_IMAGE:
		instant(ch, ev->cpu, ts, "image", "image: ", r->u.image.name,
			r->u.image.name_len);
		fputs(",\"args\":{", ch->out);
		put_hex_arg(ch->out, "base", r->u.image.base, false);
		put_hex_arg(ch->out, "size", r->u.image.size, true);
		fprintf(ch->out, ",\"kind\":\"%s\"}}", tvh_image_kind_name(r->u.image.kind));
		return 0;
	default:
		return 0;
	}
}

/*
 * PT: pass 2 goes through ptbranch's wrapper (tvh_ptbr_ops) driven here
 * on one thread, so that the JSON is written in one order: the wrapper
 * hands each CPU's records on at once and its decoded PT branches at the
 * end of the CPU's stream (ptbr_finish, ascending CPU order).
 */
static void *inner_begin(void *ctx, uint32_t cpu)
{
	(void)cpu;
	return ctx;              /* pass2 takes the writer, the CPU is in ev */
}

static int inner_end(void *ctx, uint32_t cpu, void *cpu_ctx, bool aborted)
{
	(void)ctx;
	(void)cpu;
	(void)cpu_ctx;
	(void)aborted;
	return 0;
}

static const struct tvh_pwalk_ops inner_ops = {
	.begin = inner_begin, .event = pass2, .end = inner_end,
};

static int pass2_pt(void *ctx, const struct tvh_event *ev)
{
	struct chrome *ch = ctx;
	struct cpu_time *c;

	if (ev->cpu == UINT32_MAX)
		return 0;
	c = tvh_cputab_get(&ch->cpus, ev->cpu);
	if (!c)
		return -TVH_ERR_NOMEM;
	if (!c->ptbr_begun) {
		c->ptbr = tvh_ptbr_ops.begin(ch->ptbr, ev->cpu);
		if (!c->ptbr)
			return -TVH_ERR_NOMEM;
		c->ptbr_begun = true;
	}
	return tvh_ptbr_ops.event(c->ptbr, ev);
}

/* End every CPU's wrapper in ascending order (decodes its PT). */
static int ptbr_finish(struct chrome *ch, bool aborted)
{
	int ret = 0;

	for (uint32_t cpu = 0; cpu < ch->cpus.len; cpu++) {
		struct cpu_time *c = tvh_cputab_peek(&ch->cpus, cpu);
		int r;

		if (!c || !c->ptbr_begun)
			continue;
		r = tvh_ptbr_ops.end(ch->ptbr, cpu, c->ptbr, aborted || ret);
		c->ptbr_begun = false;
		c->ptbr = NULL;
		if (r && !ret)
			ret = r;
	}
	return ret;
}

int tvh_chrome_write(struct tvt_reader *r, const struct tvh_chrome_opts *o,
		     FILE *out, struct tvh_chrome_stats *cs)
{
	struct tvh_ptbr b;
	struct tvh_walk_opts wo = { .cpu = o->cpu, .progress = o->progress };
	struct chrome ch = { .o = o, .out = out, .cs = cs, .first_event = true };
	struct tvh_stats st1;
	int ret;

	memset(cs, 0, sizeof(*cs));
	tvh_cputab_init(&ch.cpus, sizeof(struct cpu_time));
	tvh_progress_restart(o->progress, "chrome (1/2: time)");
	ret = tvh_walk(r, &wo, pass1, &ch, &st1);
	if (!ret) {
		for (uint32_t i = 0; i < st1.ncpus && !ch.hz; i++)
			ch.hz = st1.cpus[i].tsc_hz;
		for (uint32_t i = 0; i < st1.ncpus && !ch.hz; i++)
			if (st1.cpus[i].have_ring)
				ch.hz = st1.cpus[i].ring.tsc_hz;
	}
	tvh_stats_free(&st1);
	if (ret)
		goto out;
	cs->tsc_hz = ch.hz;
	cs->tsc_time = !o->sequence_time && ch.hz && ch.have_min;

	fputs("{\"traceEvents\":[", out);
	tvh_progress_restart(o->progress, "chrome (2/2: events)");
	if (o->pt_image) {
		tvh_ptbr_init(&b, &inner_ops, &ch, o->pt_image, NULL);
		b.opts.snap = o->snap;
		b.fast = o->pt_fast;
		ch.ptbr = &b;
		wo.want_pt = true;
		ret = tvh_walk(r, &wo, pass2_pt, &ch, &cs->walk);
		{
			int fret = ptbr_finish(&ch, ret != 0);

			if (!ret)
				ret = fret;
		}
		cs->pt_decoded = true;
		cs->pt = b.stats;
	} else {
		ret = tvh_walk(r, &wo, pass2, &ch, &cs->walk);
	}
	if (ret)
		goto out;
	for (uint32_t cpu = 0; cpu < ch.cpus.len; cpu++) {
		struct cpu_time *c = tvh_cputab_peek(&ch.cpus, cpu);

		if (!c || !c->seen)
			continue;
		close_all(&ch, cpu, c, last_time(c), &cs->closed_at_end);
		fputs(ch.first_event ? "\n" : ",\n", out);
		ch.first_event = false;
		fprintf(out, "{\"ph\":\"M\",\"pid\":0,\"tid\":%u,\"name\":\"thread_name\","
			"\"args\":{\"name\":\"cpu %u\"}},\n"
			"{\"ph\":\"M\",\"pid\":0,\"tid\":%u,\"name\":\"thread_sort_index\","
			"\"args\":{\"sort_index\":%u}}", cpu, cpu, cpu, cpu);
		cs->events += 2;
	}
	fputs(ch.first_event ? "\n" : ",\n", out);
	fputs("{\"ph\":\"M\",\"pid\":0,\"name\":\"process_name\",\"args\":{\"name\":", out);
	{
		const char *m = r->info.machine ? r->info.machine : "";
		char buf[TVT_MAX_NAME + 32];
		int n = snprintf(buf, sizeof(buf), "tracevisor: %s", m);

		tvh_json_string(out, buf, n > 0 ? (size_t)n : 0);
	}
	fputs("}}\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{", out);
	fprintf(out, "\"tool\":\"tracevisor\",\"session\":\"0x%016" PRIx64 "\","
		"\"machine\":", r->info.session_id);
	tvh_json_string(out, r->info.machine ? r->info.machine : "",
			r->info.machine ? strlen(r->info.machine) : 0);
	fprintf(out, ",\"time_base\":\"%s\",\"tsc_hz\":%" PRIu64
		",\"lost_records\":%" PRIu64 ",\"malformed_records\":%" PRIu64
		",\"bad_chunks\":%" PRIu64 "}}\n",
		cs->tsc_time ? "tsc" : "sequence", ch.hz,
		tvh_stats_lost(&cs->walk), cs->walk.malformed, cs->walk.bad_chunks);
	cs->events++;
	if (fflush(out) || ferror(out))
		ret = -TVH_ERR_IO;
out:
	if (ch.ptbr)
		ptbr_finish(&ch, true);
	tvh_cputab_free(&ch.cpus, cpu_fini);
	return ret;
}
