/* SPDX-License-Identifier: MIT */
/*
 * dump.c - text dump and summary (see dump.h).
 */
#include <inttypes.h>
#include <string.h>

#include <intel-pt.h>

#include "host-tools/lib/dump.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/mem.h"
#include "host-tools/lib/pt.h"
#include "host-tools/lib/text.h"

void tvh_dump_header(FILE *out, const struct tvt_reader *r, bool columns)
{
	const char *m = r->info.machine ? r->info.machine : "";

	fprintf(out, "# tracevisor trace: session 0x%016" PRIx64 ", machine ",
		r->info.session_id);
	tvh_quoted(out, m, strlen(m));
	fprintf(out, ", trace format %u", r->info.trace_version);
	if (r->info.created_unix_ns)
		fprintf(out, ", created %" PRIu64 ".%09" PRIu64 " (unix)",
			r->info.created_unix_ns / UINT64_C(1000000000),
			r->info.created_unix_ns % UINT64_C(1000000000));
	fputc('\n', out);
	if (columns)
		fprintf(out, "%12s %-5s %-8s %s\n", "SEQ", "CPU", "TYPE", "FIELDS");
}

static void addr(FILE *out, uint64_t a, struct tvh_symtab *st)
{
	char buf[512];

	fprintf(out, "0x%" PRIx64, a);
	if (st && (st->nmods || st->ksyms) && tvh_sym_format(st, a, buf, sizeof(buf)) > 0)
		fprintf(out, " %s", buf);
}

static void tsc(FILE *out, const struct trace_event *r)
{
	if (r->has_tsc)
		fprintf(out, " tsc=%" PRIu64, r->tsc);
}

void tvh_dump_fields(FILE *out, const struct trace_event *r, struct tvh_symtab *st)
{
	switch (r->type) {
	case TV_REC_PAD:
		fprintf(out, "size=%u", r->size);
		break;
	case TV_REC_BRANCH:
	case TV_REC_BRANCH_COMPACT:
	case TV_REC_LBR:
		addr(out, r->u.branch.from, st);
		fputs(" -> ", out);
		addr(out, r->u.branch.to, st);
		fprintf(out, " %s", tvh_branch_kind_name(r->u.branch.kind));
		tsc(out, r);
		if (r->type == TV_REC_LBR)
			fprintf(out, " info=0x%" PRIx64, r->u.branch.lbr_info);
		if (r->u.branch.flags & TV_BRF_MISPRED)
			fputs(" mispred", out);
		if (r->u.branch.flags & TV_BRF_IN_TSX)
			fputs(" in-tsx", out);
		if (r->u.branch.flags & TV_BRF_TSX_ABORT)
			fputs(" tsx-abort", out);
		if (r->type == TV_REC_LBR && (r->u.branch.flags & TV_BRF_LBR_FULL))
			fputs(" lbr-full", out);
		if (r->u.branch.compact)
			fputs(" compact", out);
		break;
	case TV_REC_CR3:
		fprintf(out, "cr3=0x%" PRIx64 " rip=0x%" PRIx64, r->u.cr3.cr3,
			r->u.cr3.rip);
		tsc(out, r);
		break;
	case TV_REC_START:
	case TV_REC_STOP:
		fprintf(out, "trigger=%s rip=0x%" PRIx64,
			tvh_trigger_name(r->u.startstop.trigger), r->u.startstop.rip);
		tsc(out, r);
		break;
	case TV_REC_TIME:
		fprintf(out, "tsc_hz=%" PRIu64 " unix_ns=%" PRIu64,
			r->u.time.tsc_hz, r->u.time.unix_ns);
		tsc(out, r);
		break;
	case TV_REC_CONFIG:
		tvh_quoted(out, r->u.text.text, r->u.text.len);
		tsc(out, r);
		break;
	case TV_REC_LOG:
		fprintf(out, "level=%u ", r->u.text.level);
		tvh_quoted(out, r->u.text.text, r->u.text.len);
		tsc(out, r);
		break;
	case TV_REC_IMAGE:
		fprintf(out, "%s base=0x%" PRIx64 " size=0x%" PRIx64 " ",
			tvh_image_kind_name(r->u.image.kind), r->u.image.base,
			r->u.image.size);
		tvh_quoted(out, r->u.image.name, r->u.image.name_len);
		tsc(out, r);
		break;
	case TV_REC_LOST:
		fprintf(out, "records=%" PRIu64, r->u.lost.records);
		tsc(out, r);
		break;
	case TV_REC_MARKER:
		fprintf(out, "value=0x%" PRIx64 " ", r->u.marker.value);
		tvh_quoted(out, r->u.marker.label, r->u.marker.label_len);
		tsc(out, r);
		break;
	case TV_REC_PT_SYNC:
		fprintf(out, "pt_offset=%" PRIu64 " pt_lost=%" PRIu64,
			r->u.pt_sync.pt_offset, r->u.pt_sync.pt_lost);
		tsc(out, r);
		break;
	case TV_REC_CODE:
		fprintf(out, "gpa=0x%" PRIx64 " linear=", r->u.code.gpa);
		if (r->info & TV_CODEF_LINEAR)
			addr(out, r->u.code.linear, st);
		else
			fputs("?", out);
		fprintf(out, " cr3=0x%" PRIx64 " hash=%016" PRIx64 "%s%s%s%s",
			r->u.code.cr3, r->u.code.hash,
			r->info & TV_CODEF_NEW ? " new" : "",
			r->info & TV_CODEF_REARM ? " rearm" : "",
			r->info & TV_CODEF_USER ? " user" : "",
			r->info & TV_CODEF_PTIP ? " sipi-ip" : "");
		tsc(out, r);
		break;
	case TV_REC_CODE_DATA:
		/* The first bytes only: the page is in the file, `pt-decode` reads it. */
		fprintf(out, "hash=%016" PRIx64 " chunk=%u bytes=0x%x..0x%x:",
			r->u.code_data.hash, r->u.code_data.chunk,
			r->u.code_data.chunk * TV_CODE_CHUNK,
			(r->u.code_data.chunk + 1) * TV_CODE_CHUNK);
		for (unsigned i = 0; i < 16; i++)
			fprintf(out, " %02x", r->u.code_data.bytes[i]);
		fputs(" ...", out);
		break;
	case TV_REC_MEM:
		fputs("rip=", out);
		addr(out, r->u.mem.rip, st);
		fprintf(out, " %s size=%u", tvh_mem_kind(r->u.mem.flags), r->u.mem.size);
		if (r->u.mem.flags & TV_MEMF_LINEAR)
			fprintf(out, " gla=0x%" PRIx64, r->u.mem.gla);
		fprintf(out, " gpa=0x%" PRIx64, r->u.mem.gpa);
		if (r->u.mem.flags & TV_MEMF_SPLIT)
			fprintf(out, " gpa2=0x%" PRIx64, r->u.mem.gpa2);
		if (r->u.mem.flags & TV_MEMF_OLD)
			fprintf(out, " old=0x%" PRIx64, r->u.mem.old);
		if (r->u.mem.flags & TV_MEMF_NEW)
			fprintf(out, " new=0x%" PRIx64, r->u.mem.new_val);
		fprintf(out, " cr3=0x%" PRIx64 " cpl=%u watch=%u%s%s%s", r->u.mem.cr3,
			r->u.mem.cpl, r->u.mem.id,
			r->u.mem.flags & TV_MEMF_STRING ? " string" : "",
			r->u.mem.flags & TV_MEMF_IMPLICIT ? " stack" : "",
			r->u.mem.flags & TV_MEMF_UNDECODED ? " undecoded" : "");
		tsc(out, r);
		break;
	case TV_REC_MEM_WATCH:
		fprintf(out, "%s id=%u mode=%u origin=%u lo=0x%" PRIx64 " hi=0x%" PRIx64,
			r->u.mem_watch.op == TV_MEMW_ARM ? "arm" :
			r->u.mem_watch.op == TV_MEMW_REMOVE ? "remove" : "label",
			r->u.mem_watch.id, r->u.mem_watch.mode, r->u.mem_watch.origin,
			r->u.mem_watch.lo, r->u.mem_watch.hi);
		if (r->u.mem_watch.gla || r->u.mem_watch.cr3)
			fprintf(out, " gla=0x%" PRIx64 " cr3=0x%" PRIx64, r->u.mem_watch.gla,
				r->u.mem_watch.cr3);
		fputc(' ', out);
		tvh_quoted(out, r->u.mem_watch.label, r->u.mem_watch.label_len);
		tsc(out, r);
		break;
	case TV_REC_MEM_STATS:
		fprintf(out, "recorded=%" PRIu64 " filtered=%" PRIu64 " collateral=%" PRIu64
			" steps=%" PRIu64 " undecoded=%" PRIu64 " outside_window=%" PRIu64,
			r->u.mem_stats.recorded, r->u.mem_stats.filtered,
			r->u.mem_stats.collateral, r->u.mem_stats.steps,
			r->u.mem_stats.undecoded, r->u.mem_stats.outside_window);
		tsc(out, r);
		break;
	default:
		fprintf(out, "type=%u size=%u", r->type, r->size);
		break;
	}
}

static const char *short_type(uint8_t type)
{
	return type == TV_REC_BRANCH_COMPACT ? "BRANCH" : tvh_rec_type_name(type);
}

int tvh_dump_event(void *ctx, const struct tvh_event *ev)
{
	struct tvh_dump *d = ctx;
	const struct trace_event *r = ev->rec;
	FILE *out = d->out;

	switch (ev->kind) {
	case TVH_EV_RECORD:
		if (!d->records)
			return 0;
		fprintf(out, "%12" PRIu64 " cpu%-2u %-8s ", r->seq, ev->cpu,
			short_type(r->type));
		tvh_dump_fields(out, r, d->st);
		fputc('\n', out);
		return 0;
	case TVH_EV_MALFORMED:
		fprintf(out, "%12" PRIu64 " cpu%-2u %-8s type=%u info=%u size=%u aux=0x%x"
			" at file offset 0x%" PRIx64 ": %s\n", r->seq, ev->cpu,
			"BAD", r->type, r->info, r->size, r->aux, ev->file_offset,
			tvh_errstr(ev->err));
		if (!tvh_record_error_is_skippable(ev->err))
			fprintf(out, "%12s cpu%-2u %-8s rest of the chunk not parsed\n",
				"-", ev->cpu, "BAD");
		return 0;
	case TVH_EV_GAP:
		fprintf(out, "%12s cpu%-2u %-8s seq %" PRIu64 "..%" PRIu64 ": %"
			PRIu64 " records lost (%s)\n", "-", ev->cpu, "GAP", ev->seq,
			ev->seq + ev->count - 1, ev->count,
			ev->gap == TVH_GAP_HEAD ? "before the first chunk" :
			"sequence gap");
		return 0;
	case TVH_EV_PT:
		if (d->records)
			fprintf(out, "%12s cpu%-2u %-8s offset=0x%" PRIx64 " bytes=%"
				PRIu64 "\n", "-", ev->cpu, "PT", ev->pt_offset, ev->len);
		return 0;
	case TVH_EV_PT_GAP:
		if (ev->gap == TVH_GAP_PT_ERROR) {
			fprintf(out, "%12s cpu%-2u %-8s offset 0x%" PRIx64 ": PT decode error: %s"
				" (resumes at the next PSB)\n", "-", ev->cpu, "PT_GAP",
				ev->pt_offset, tvh_pt_errstr(ev->err));
			return 0;
		}
		fprintf(out, "%12s cpu%-2u %-8s offset 0x%" PRIx64 ": %" PRIu64
			" PT bytes lost (%s)\n", "-", ev->cpu, "PT_GAP", ev->pt_offset,
			ev->count, ev->gap == TVH_GAP_HEAD ? "before the first chunk" :
			ev->gap == TVH_GAP_PT_CUT ? "counted by PT_SYNC" : "offset gap");
		return 0;
	case TVH_EV_RING:
		if (!d->records)
			return 0;
		fprintf(out, "%12s cpu%-2u %-8s source=%s overflow=%s data_size=%"
			PRIu64 " head=%" PRIu64 " tail=%" PRIu64 " tail_seq=%" PRIu64
			" next_seq=%" PRIu64 " lost_records=%" PRIu64 " lost_bytes=%"
			PRIu64 " tsc_hz=%" PRIu64 "\n", "-", ev->cpu, "RING",
			tvh_source_name(ev->ring->source),
			(ev->ring->flags & 3) == TV_OVERFLOW_OVERWRITE ? "overwrite" : "stop",
			ev->ring->data_size, ev->ring->head, ev->ring->tail,
			ev->ring->tail_seq, ev->ring->next_seq,
			ev->ring->lost_records, ev->ring->lost_bytes, ev->ring->tsc_hz);
		return 0;
	case TVH_EV_CHUNK_ERROR:
		if (ev->cpu == UINT32_MAX)
			fprintf(out, "%12s %-5s %-8s chunk at file offset 0x%" PRIx64
				": %s\n", "-", "-", "BAD_CHUNK", ev->file_offset,
				tvh_errstr(ev->err));
		else
			fprintf(out, "%12s cpu%-2u %-8s chunk at file offset 0x%" PRIx64
				": %s\n", "-", ev->cpu, "BAD_CHUNK", ev->file_offset,
				tvh_errstr(ev->err));
		return 0;
	}
	return 0;
}

void tvh_dump_summary(FILE *out, const struct tvh_stats *s)
{
	uint64_t gap = 0, head = 0, lost_rec = 0, ring = 0, orphan = 0, dup = 0;
	bool any_ring = false;

	fprintf(out, "# summary\n");
	fprintf(out, "chunks: %" PRIu64 " (records %" PRIu64 ", pt %" PRIu64
		", ring %" PRIu64 ", unknown kind %" PRIu64 "), damaged %" PRIu64
		" (truncated %" PRIu64 "), bytes skipped %" PRIu64 "\n", s->chunks,
		s->chunks_by_kind[TVT_KIND_RECORDS], s->chunks_by_kind[TVT_KIND_PT],
		s->chunks_by_kind[TVT_KIND_RING], s->chunks_by_kind[0], s->bad_chunks,
		s->truncated_chunks, s->skipped_bytes);
	fprintf(out, "records: %" PRIu64 "\n", s->records);
	for (unsigned t = 0; t < TV_REC_TYPE_MAX; t++)
		if (s->by_type[t])
			fprintf(out, "  %-15s %" PRIu64 "\n", tvh_rec_type_name(t),
				s->by_type[t]);
	for (uint32_t i = 0; i < s->ncpus; i++) {
		const struct tvh_cpu_stats *c = &s->cpus[i];

		if (c->have_seq) {
			fprintf(out, "cpu%u: %" PRIu64 " records, seq %" PRIu64 "..%" PRIu64,
				c->cpu, c->records, c->first_seq,
				c->next_seq ? c->next_seq - 1 : 0);
			fprintf(out, ", lost %" PRIu64 " (gaps %" PRIu64
				", before first chunk %" PRIu64 ", LOST records %" PRIu64 ")",
				tvh_sat_add(c->lost_gap + c->lost_head, c->lost_rec), c->lost_gap,
				c->lost_head, c->lost_rec);
		} else {
			fprintf(out, "cpu%u: no record stream", c->cpu);
		}
		if (c->have_ring)
			fprintf(out, ", ring counter %" PRIu64 " (%s, %s)",
				c->ring.lost_records, tvh_source_name(c->ring.source),
				(c->ring.flags & 3) == TV_OVERFLOW_OVERWRITE ?
				"overwrite" : "stop");
		if (c->malformed)
			fprintf(out, ", malformed %" PRIu64, c->malformed);
		if (c->dup)
			fprintf(out, ", duplicates %" PRIu64, c->dup);
		if (c->have_pt)
			fprintf(out, ", pt %" PRIu64 " bytes (lost %" PRIu64 " in gaps, %"
				PRIu64 " before first chunk, %" PRIu64 " per PT_SYNC)",
				c->pt_bytes, c->pt_gap, c->pt_head, c->pt_lost);
		fputc('\n', out);
		for (unsigned t = 0; t < TV_REC_TYPE_MAX; t++)
			if (c->by_type[t])
				fprintf(out, "  %-15s %" PRIu64 "\n", tvh_rec_type_name(t),
					c->by_type[t]);
		gap = tvh_sat_add(gap, c->lost_gap);
		head = tvh_sat_add(head, c->lost_head);
		lost_rec = tvh_sat_add(lost_rec, c->lost_rec);
		orphan += c->orphan_compact;
		dup += c->dup;
		if (c->have_ring) {
			ring = tvh_sat_add(ring, c->ring.lost_records);
			any_ring = true;
		}
	}
	fprintf(out, "lost records: %" PRIu64 " (sequence gaps %" PRIu64
		", before first chunk %" PRIu64 ", LOST records %" PRIu64 ")",
		tvh_sat_add(tvh_sat_add(gap, head), lost_rec), gap, head, lost_rec);
	if (any_ring)
		fprintf(out, "; ring counters say %" PRIu64, ring);
	fputc('\n', out);
	fprintf(out, "malformed records: %" PRIu64, s->malformed);
	if (orphan)
		fprintf(out, " (%" PRIu64 " compact without a full branch)", orphan);
	fputc('\n', out);
	if (dup)
		fprintf(out, "duplicate records (overlapping chunks): %" PRIu64 "\n", dup);
}
