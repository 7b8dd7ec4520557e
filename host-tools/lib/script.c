/* SPDX-License-Identifier: MIT */
/*
 * script.c - branches as text (see script.h).
 */
#include <inttypes.h>

#include "host-tools/lib/script.h"
#include "host-tools/lib/stream.h"

void tvh_script_init(struct tvh_script *s, FILE *out, struct tvh_symtab *st,
		     bool all)
{
	s->out = out;
	s->st = st && tvh_symtab_usable(st) ? st : NULL;
	s->all = all;
	s->dump = (struct tvh_dump){ .out = out, .st = s->st, .records = all };
	s->branches = 0;
}

static void addr(struct tvh_script *s, uint64_t a)
{
	char buf[512];

	fprintf(s->out, "0x%" PRIx64, a);
	if (s->st && tvh_sym_format(s->st, a, buf, sizeof(buf)) > 0)
		fprintf(s->out, " %s", buf);
}

int tvh_script_event(void *ctx, const struct tvh_event *ev)
{
	struct tvh_script *s = ctx;
	const struct trace_event *r = ev->rec;
	uint32_t f;

	if (ev->kind != TVH_EV_RECORD ||
	    (r->type != TV_REC_BRANCH && r->type != TV_REC_BRANCH_COMPACT &&
	     r->type != TV_REC_LBR))
		return tvh_dump_event(&s->dump, ev);
	f = r->u.branch.flags;
	fprintf(s->out, "cpu%-3u %10" PRIu64 "  %-9s ", ev->cpu, r->seq,
		tvh_branch_kind_name(r->u.branch.kind));
	addr(s, r->u.branch.from);
	fputs(" => ", s->out);
	addr(s, r->u.branch.to);
	if (r->has_tsc)
		fprintf(s->out, " tsc=%" PRIu64, r->tsc);
	if (f & TV_BRF_MISPRED)
		fputs(" mispred", s->out);
	if (f & TV_BRF_IN_TSX)
		fputs(" in-tsx", s->out);
	if (f & TV_BRF_TSX_ABORT)
		fputs(" tsx-abort", s->out);
	if (r->type == TV_REC_LBR)
		fputs(" lbr", s->out);
	if (ev->pt)
		fprintf(s->out, " pt@0x%" PRIx64, ev->pt_offset);
	fputc('\n', s->out);
	s->branches++;
	return 0;
}
