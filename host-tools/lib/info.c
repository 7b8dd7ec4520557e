/* SPDX-License-Identifier: MIT */
/*
 * info.c - a capture's contents at a glance (see info.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "host-tools/lib/dump.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/info.h"
#include "host-tools/lib/stream.h"
#include "host-tools/lib/text.h"

bool tvh_buffers_parse(const char *text, size_t len, struct tvh_buffers *b)
{
	static const char tag[] = "buffers ";
	struct tvh_buffers v;
	size_t i = sizeof(tag) - 1;

	if (!text || len < i || memcmp(text, tag, i))
		return false;
	memset(&v, 0, sizeof(v));
	while (i < len) {
		size_t name = i, nlen;
		uint64_t n = 0;
		bool digits = false, over = false;

		while (i < len && text[i] != '=' && text[i] != ' ')
			i++;
		nlen = i - name;
		if (i < len && text[i] == '=') {
			for (i++; i < len && text[i] >= '0' && text[i] <= '9'; i++) {
				if (n > (UINT64_MAX - 9) / 10)
					over = true;
				n = n * 10 + (uint64_t)(text[i] - '0');
				digits = true;
			}
		}
		if (i < len && text[i] != ' ')
			digits = false;   /* "12x": malformed, skipped */
		while (i < len && text[i] != ' ')
			i++;
		while (i < len && text[i] == ' ')
			i++;
		if (!digits || over)
			continue;
#define FIELD(f) (nlen == sizeof(#f) - 1 && !memcmp(text + name, #f, nlen))
		if (FIELD(ring_bytes))
			v.ring_bytes = n;
		else if (FIELD(stream_bytes))
			v.stream_bytes = n;
		else if (FIELD(output_bytes))
			v.output_bytes = n;
		else if (FIELD(output_region_bytes))
			v.output_region_bytes = n;
		else if (FIELD(output_regions))
			v.output_regions = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
		else if (FIELD(drain_us))
			v.drain_us = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
#undef FIELD
	}
	*b = v;
	return true;
}

void tvh_buffers_json(FILE *out, const struct tvh_buffers *b)
{
	fprintf(out, "{\"ring_bytes\": %" PRIu64 ", \"stream_bytes\": %" PRIu64
		", \"output_bytes\": %" PRIu64 ", \"output_regions\": %" PRIu32
		", \"output_region_bytes\": %" PRIu64 ", \"drain_us\": %" PRIu32 "}",
		b->ring_bytes, b->stream_bytes, b->output_bytes, b->output_regions,
		b->output_region_bytes, b->drain_us);
}

bool tvh_snap_log_parse(const char *text, size_t len, uint32_t *cpu,
			struct tvh_snap_counter *v, unsigned *n)
{
	static const char tag[] = "snap: cpu ";
	size_t i = sizeof(tag) - 1;
	uint64_t c = 0;
	unsigned k = 0;

	if (!text || len <= i || memcmp(text, tag, i))
		return false;
	if (text[i] < '0' || text[i] > '9')
		return false;
	for (; i < len && text[i] >= '0' && text[i] <= '9'; i++) {
		c = c * 10 + (uint64_t)(text[i] - '0');
		if (c > UINT32_MAX)
			return false;
	}
	if (i + 1 >= len || text[i] != ':' || text[i + 1] != ' ')
		return false;
	i += 2;
	/* "NAME VALUE" items, ", " between: the value is the last word. */
	while (i < len && k < TVH_SNAP_COUNTERS) {
		size_t start = i, end, sp;
		uint64_t val = 0;
		bool digits = false, over = false;

		while (i < len && text[i] != ',')
			i++;
		end = i;
		for (sp = end; sp > start && text[sp - 1] != ' '; sp--)
			;
		for (size_t j = sp; j < end; j++) {
			if (text[j] < '0' || text[j] > '9') {
				digits = false;
				break;
			}
			if (val > (UINT64_MAX - 9) / 10)
				over = true;
			val = val * 10 + (uint64_t)(text[j] - '0');
			digits = true;
		}
		if (digits && !over && sp > start + 1) {
			size_t nl = sp - 1 - start;

			if (nl >= sizeof(v[k].name))
				nl = sizeof(v[k].name) - 1;
			memcpy(v[k].name, text + start, nl);
			v[k].name[nl] = '\0';
			v[k++].value = val;
		}
		while (i < len && (text[i] == ',' || text[i] == ' '))
			i++;
	}
	*cpu = (uint32_t)c;
	*n = k;
	return k > 0;
}

void tvh_info_init(struct tvh_info *in)
{
	memset(in, 0, sizeof(*in));
	tvh_cputab_init(&in->cpus, sizeof(struct tvh_info_cpu));
	in->snap = tvh_snap_new();
	if (!in->snap)
		in->err = -TVH_ERR_NOMEM;
}

void tvh_info_free(struct tvh_info *in)
{
	tvh_cputab_free(&in->cpus, NULL);
	tvh_images_free(&in->images);
	tvh_snap_free(in->snap);
	in->snap = NULL;
}

int tvh_info_event(void *ctx, const struct tvh_event *ev)
{
	struct tvh_info *in = ctx;
	const struct trace_event *r = ev->rec;
	struct tvh_info_cpu *c;

	if (in->snap) {
		int ret = tvh_snap_add(in->snap, ev);

		/* A spill file failure stays in the store: its line says why
		 * (snap_lines), and the rest of the capture is still shown. */
		if (ret && ret != -TVH_ERR_IO)
			return ret;
	}
	if (ev->kind == TVH_EV_MALFORMED && r->type >= TV_REC_MEM &&
	    r->type <= TV_REC_MEM_STATS)
		in->mem_bad++;
	if (ev->kind != TVH_EV_RECORD)
		return 0;
	c = tvh_cputab_get(&in->cpus, ev->cpu);
	if (!c)
		return -TVH_ERR_NOMEM;
	if (r->has_tsc && r->tsc) {
		if (!c->have_tsc || r->tsc < c->first_tsc)
			c->first_tsc = r->tsc;
		if (!c->have_tsc || r->tsc > c->last_tsc)
			c->last_tsc = r->tsc;
		c->have_tsc = true;
	}
	switch (r->type) {
	case TV_REC_CONFIG:
		if (!c->have_buffers)
			c->have_buffers = tvh_buffers_parse(r->u.text.text, r->u.text.len, &c->buffers);
		break;
	case TV_REC_START:
		c->windows++;
		break;
	case TV_REC_LOG: {
		struct tvh_snap_counter v[TVH_SNAP_COUNTERS];
		uint32_t who;
		unsigned n;

		/* The counters are the CPU's since boot: the last line counts. */
		if (tvh_snap_log_parse(r->u.text.text, r->u.text.len, &who, v, &n)) {
			memcpy(c->snap, v, n * sizeof(v[0]));
			c->nsnap = n;
		}
		break;
	}
	case TV_REC_BRANCH:
	case TV_REC_BRANCH_COMPACT:
	case TV_REC_LBR:
		c->branches++;
		break;
	case TV_REC_MEM:
		c->mem_accesses++;
		break;
	case TV_REC_MEM_WATCH:
		c->mem_watch_ops[r->u.mem_watch.op & 3]++;
		break;
	case TV_REC_MEM_STATS:
		/* Since boot: the last one counts. */
		c->have_mem_stats = true;
		c->mem_stats[0] = r->u.mem_stats.recorded;
		c->mem_stats[1] = r->u.mem_stats.filtered;
		c->mem_stats[2] = r->u.mem_stats.collateral;
		c->mem_stats[3] = r->u.mem_stats.steps;
		c->mem_stats[4] = r->u.mem_stats.undecoded;
		c->mem_stats[5] = r->u.mem_stats.outside_window;
		break;
	case TV_REC_IMAGE: {
		int ret = tvh_images_add(&in->images, ev->cpu, r->u.image.kind,
					 r->u.image.base, r->u.image.size, r->tsc,
					 r->u.image.name, r->u.image.name_len);

		return ret < 0 ? ret : 0;
	}
	default:
		break;
	}
	return 0;
}

static void span(FILE *out, uint64_t ticks, uint64_t hz)
{
	uint64_t us;

	if (!hz) {
		fprintf(out, "%" PRIu64 " TSC ticks (frequency unknown)", ticks);
		return;
	}
	us = (uint64_t)((unsigned __int128)ticks * 1000000u / hz);
	fprintf(out, "%" PRIu64 ".%06" PRIu64 " s (%" PRIu64 " ticks at %" PRIu64
		" Hz)", us / 1000000u, us % 1000000u, ticks, hz);
}

/* bytes as KiB or MiB where whole, else bytes */
static void size(FILE *out, uint64_t b)
{
	if (b && !(b & ((1u << 20) - 1)))
		fprintf(out, "%" PRIu64 " MiB", b >> 20);
	else if (b && !(b & 1023))
		fprintf(out, "%" PRIu64 " KiB", b >> 10);
	else
		fprintf(out, "%" PRIu64 " bytes", b);
}

/* The buffer sizes in force on the machine (its CONFIG "buffers" record). */
static void buffers_line(FILE *out, const struct tvh_buffers *b)
{
	fputs("    buffers: record ring ", out);
	size(out, b->ring_bytes);
	if (b->stream_bytes) {
		fputs(", stream ring ", out);
		size(out, b->stream_bytes);
	}
	if (b->output_bytes) {
		fputs(", hardware output ", out);
		size(out, b->output_bytes);
		if (b->output_regions > 1) {
			fprintf(out, " (%" PRIu32 " x ", b->output_regions);
			size(out, b->output_region_bytes);
			fputc(')', out);
		}
	}
	if (b->drain_us)
		fprintf(out, ", drain tick %" PRIu32 " us", b->drain_us);
	fputc('\n', out);
}

/* The code snapshots: what the records hold, then the hypervisor's counters. */
static void snap_lines(const struct tvh_info *in, FILE *out)
{
	struct tvh_snap_counter sum[TVH_SNAP_COUNTERS];
	struct tvh_snap_stats ss;
	unsigned nsum = 0, cpus = 0;
	int ret;

	/* Idempotent; the store is the info's own (pointer member of a const). */
	if (!in->snap)
		return;
	ret = tvh_snap_finish(in->snap);
	if (ret == -TVH_ERR_IO) {
		struct tvh_snap_opts so;
		int e = errno;

		tvh_snap_opts_default(&so);
		fprintf(out, "code snapshots: %s: the spill file in %s (TMPDIR;"
			" TVH_SNAP_SPILL_BYTES bounds the memory before it): %s\n",
			tvh_errstr(ret), so.dir, strerror(e));
		return;
	}
	if (ret) {
		fprintf(out, "code snapshots: %s\n", tvh_errstr(ret));
		return;
	}
	tvh_snap_get_stats(in->snap, &ss);
	if (ss.records || ss.data_records) {
		fprintf(out, "code snapshots: %" PRIu64 " (new %" PRIu64 ", re-armed %"
			PRIu64 ", user %" PRIu64 "), %" PRIu64 " pages, %" PRIu64
			" contents = ", ss.records, ss.new_records, ss.rearms, ss.user,
			ss.pages, ss.contents);
		size(out, ss.bytes);
		if (ss.spilled_bytes) {
			fputs(" (", out);
			size(out, ss.spilled_bytes);
			fputs(" in the spill file)", out);
		}
		fprintf(out, "; bad hash %" PRIu64 ", missing %" PRIu64 " (chunks %"
			PRIu64 "), bad records %" PRIu64 "\n", ss.bad_hash,
			ss.missing_data, ss.missing_chunks, ss.bad_records);
		if (ss.aliases || ss.runtime_maps || ss.runtime_conflicts)
			fprintf(out, "code snapshots under a second mapping: %" PRIu64
				" kernel (high and identity), %" PRIu64 " firmware runtime"
				" (the OS's mapping of its image); %" PRIu64
				" firmware images mapped at two offsets, not filled\n",
				ss.aliases, ss.runtime_maps, ss.runtime_conflicts);
	}
	/* Summed by name over the CPUs, in the order the first line gives. */
	for (uint32_t i = 0; i < in->cpus.len; i++) {
		const struct tvh_info_cpu *c = tvh_cputab_peek(&in->cpus, i);

		if (!c || !c->nsnap)
			continue;
		cpus++;
		for (unsigned k = 0; k < c->nsnap; k++) {
			unsigned j;

			for (j = 0; j < nsum && strcmp(sum[j].name, c->snap[k].name); j++)
				;
			if (j == nsum) {
				if (nsum == TVH_SNAP_COUNTERS)
					continue;
				sum[nsum] = c->snap[k];
				sum[nsum++].value = 0;
			}
			sum[j].value = tvh_sat_add(sum[j].value, c->snap[k].value);
		}
	}
	if (!cpus)
		return;
	fputs("  hypervisor:", out);
	for (unsigned j = 0; j < nsum; j++)
		fprintf(out, "%s %s %" PRIu64, j ? "," : "", sum[j].name, sum[j].value);
	fprintf(out, " (%u CPU%s)\n", cpus, cpus == 1 ? "" : "s");
}

/*
 * Memory-access tracing: the accesses the capture holds, the hypervisor's
 * counters (each CPU's last TV_REC_MEM_STATS, summed) and the watches.
 */
static void mem_lines(const struct tvh_info *in, FILE *out)
{
	uint64_t acc = 0, ops[4] = { 0 }, st[6] = { 0 };
	unsigned cpus = 0;

	for (uint32_t i = 0; i < in->cpus.len; i++) {
		const struct tvh_info_cpu *c = tvh_cputab_peek(&in->cpus, i);

		if (!c)
			continue;
		acc = tvh_sat_add(acc, c->mem_accesses);
		for (unsigned k = 0; k < 4; k++)
			ops[k] = tvh_sat_add(ops[k], c->mem_watch_ops[k]);
		if (c->have_mem_stats) {
			cpus++;
			for (unsigned k = 0; k < 6; k++)
				st[k] = tvh_sat_add(st[k], c->mem_stats[k]);
		}
	}
	if (!acc && !cpus && !in->mem_bad && !ops[TV_MEMW_ARM] && !ops[TV_MEMW_LABEL] &&
	    !ops[TV_MEMW_REMOVE])
		return;
	fprintf(out, "memory accesses: %" PRIu64 " in the capture", acc);
	if (cpus)
		fprintf(out, "; hypervisor (%u CPU%s, since boot): recorded %" PRIu64
			", filtered %" PRIu64 ", collateral %" PRIu64 ", steps %" PRIu64
			", undecoded %" PRIu64 ", outside window %" PRIu64, cpus,
			cpus == 1 ? "" : "s", st[0], st[1], st[2], st[3], st[4], st[5]);
	if (in->mem_bad)
		fprintf(out, "; malformed memory records %" PRIu64, in->mem_bad);
	fputc('\n', out);
	fprintf(out, "  watches: %" PRIu64 " armed, %" PRIu64 " removed, %" PRIu64 " labels\n",
		ops[TV_MEMW_ARM], ops[TV_MEMW_REMOVE], ops[TV_MEMW_LABEL]);
}

int tvh_info_write(const struct tvh_info *in, const struct tvt_reader *r,
		   const struct tvh_stats *s, const char *path, FILE *out)
{
	unsigned kinds[4] = { 0 };
	bool any_tsc = false;
	uint64_t lo = UINT64_MAX, hi = 0, hz = 0;

	fprintf(out, "file: %s (%" PRIu64 " bytes)\n", path, r->size);
	tvh_dump_header(out, r, false);
	fprintf(out, "cpus: %u\n", s->ncpus);
	for (uint32_t i = 0; i < s->ncpus; i++) {
		const struct tvh_cpu_stats *c = &s->cpus[i];
		const struct tvh_info_cpu *ic = tvh_cputab_peek(&in->cpus, c->cpu);
		/* TIME records first; else the ring snapshot's rate. */
		uint64_t cpu_hz = c->tsc_hz ? c->tsc_hz : c->have_ring ? c->ring.tsc_hz : 0;

		fprintf(out, "  cpu%u: source %s, %" PRIu64 " records, %" PRIu64
			" branches, %" PRIu64 " trace windows, ", c->cpu,
			c->have_ring ? tvh_source_name(c->ring.source) : "unknown",
			c->records, ic ? ic->branches : 0, ic ? ic->windows : 0);
		if (ic && ic->have_tsc) {
			fprintf(out, "tsc %" PRIu64 "..%" PRIu64 " = ", ic->first_tsc,
				ic->last_tsc);
			span(out, ic->last_tsc - ic->first_tsc, cpu_hz);
			any_tsc = true;
			if (ic->first_tsc < lo)
				lo = ic->first_tsc;
			if (ic->last_tsc > hi)
				hi = ic->last_tsc;
			if (cpu_hz)
				hz = cpu_hz;
		} else {
			fputs("no TSC", out);
		}
		fprintf(out, "; lost %" PRIu64 " records",
			tvh_sat_add(c->lost_gap + c->lost_head, c->lost_rec));
		if (c->have_ring)
			fprintf(out, " (ring counter %" PRIu64 ")", c->ring.lost_records);
		if (c->have_pt)
			fprintf(out, ", PT %" PRIu64 " bytes (lost %" PRIu64 ")",
				c->pt_bytes, c->pt_gap + c->pt_head + c->pt_lost);
		fputc('\n', out);
		if (ic && ic->have_buffers)
			buffers_line(out, &ic->buffers);
	}
	fputs("time span: ", out);
	if (any_tsc)
		span(out, hi - lo, hz);
	else
		fputs("unknown (no TSC in the records)", out);
	fputc('\n', out);
	for (size_t i = 0; i < in->images.n; i++)
		kinds[in->images.v[i].kind & 3]++;
	fprintf(out, "images: %zu (firmware %u, loader %u, kernel %u, other %u)\n",
		in->images.n, kinds[TV_IMG_FIRMWARE], kinds[TV_IMG_LOADER],
		kinds[TV_IMG_KERNEL], kinds[TV_IMG_OTHER]);
	for (size_t i = 0; i < in->images.n; i++) {
		const struct tvh_image *im = &in->images.v[i];

		if (im->kind == TV_IMG_FIRMWARE)
			continue;
		/* The name comes from the traced machine: escaped, like dump's. */
		fprintf(out, "  %s 0x%" PRIx64 "..0x%" PRIx64 " ",
			tvh_image_kind_name(im->kind), im->base, im->base + im->size);
		tvh_quoted(out, im->name, strlen(im->name));
		fputc('\n', out);
	}
	snap_lines(in, out);
	mem_lines(in, out);
	tvh_dump_summary(out, s);
	return ferror(out) ? -TVH_ERR_IO : 0;
}
