/* SPDX-License-Identifier: MIT */
/*
 * stream.c - minimal record iterator (stopgap until vmm/trace_read lands,
 * see stream.h).  Layouts and rules are those of vmm/trace_format.h.
 */
#include <string.h>

#include "host-tools/le.h"
#include "host-tools/stream.h"

void tvh_stream_init(struct tvh_stream *s)
{
	memset(s, 0, sizeof(*s));
	s->stopped = true;
}

void tvh_stream_feed(struct tvh_stream *s, const void *buf, size_t len,
		     uint64_t first_seq, bool contiguous)
{
	s->buf = buf;
	s->len = buf ? len : 0;
	s->pos = 0;
	s->next_seq = first_seq;
	s->stopped = false;
	if (!contiguous)
		s->have_prev = false;
}

/* Exact size of the fixed-size types; 0 for variable-size ones. */
static uint16_t fixed_size(uint8_t type, uint32_t aux)
{
	switch (type) {
	case TV_REC_BRANCH:
		return (aux & TV_BRF_TSC) ? 32 : 24;
	case TV_REC_BRANCH_COMPACT:
		return sizeof(struct tv_rec_branch_compact);
	case TV_REC_LBR:
		return sizeof(struct tv_rec_lbr);
	case TV_REC_CR3:
		return sizeof(struct tv_rec_cr3);
	case TV_REC_START:
	case TV_REC_STOP:
		return sizeof(struct tv_rec_startstop);
	case TV_REC_TIME:
		return sizeof(struct tv_rec_time);
	case TV_REC_LOST:
		return sizeof(struct tv_rec_lost);
	case TV_REC_PT_SYNC:
		return sizeof(struct tv_rec_pt_sync);
	default:
		return 0;
	}
}

/* Variable-size types: the fixed part before the text. */
static uint32_t text_offset(uint8_t type)
{
	switch (type) {
	case TV_REC_CONFIG:
	case TV_REC_LOG:
		return 16;
	case TV_REC_IMAGE:
		return 32;
	case TV_REC_MARKER:
		return 24;
	default:
		return 0;
	}
}

static int decode_fields(struct tvh_stream *s, const uint8_t *p,
			 struct tvh_record *r)
{
	uint16_t want = fixed_size(r->type, r->aux);
	uint32_t toff = text_offset(r->type);

	if ((want && r->size != want) ||
	    (toff && (uint64_t)r->size != TV_REC_ALIGN((uint64_t)toff + r->aux))) {
		/* A branch of the wrong size: its `to` cannot be trusted. */
		if (r->type == TV_REC_BRANCH || r->type == TV_REC_BRANCH_COMPACT)
			s->have_prev = false;
		return -TVH_ERR_REC_FIELD;
	}
	if (r->type != TV_REC_PAD && r->type != TV_REC_BRANCH_COMPACT &&
	    r->type != TV_REC_LBR && r->type != TV_REC_BRANCH) {
		r->has_tsc = true;
		r->tsc = tvh_le64(p + 8);
	}

	switch (r->type) {
	case TV_REC_PAD:
		return 0;
	case TV_REC_BRANCH:
		r->u.branch.from = tvh_le64(p + 8);
		r->u.branch.to = tvh_le64(p + 16);
		r->u.branch.flags = r->aux;
		r->u.branch.kind = r->info;
		if (r->aux & TV_BRF_TSC) {
			r->has_tsc = true;
			r->tsc = tvh_le64(p + 24);
		}
		if (r->info >= TV_BR_KIND_MAX)
			return -TVH_ERR_REC_FIELD;
		s->prev_to = r->u.branch.to;
		s->have_prev = true;
		return 0;
	case TV_REC_BRANCH_COMPACT: {
		bool had_prev = s->have_prev;

		r->u.branch.compact = true;
		r->u.branch.kind = r->info;
		r->u.branch.to = tvh_le64(p + 8);
		r->u.branch.from = had_prev ? s->prev_to + r->aux : 0;
		/* The chain goes on from this `to` even when `from` is unknown. */
		s->prev_to = r->u.branch.to;
		s->have_prev = true;
		if (!had_prev)
			return -TVH_ERR_REC_NO_PREV;
		if (r->info >= TV_BR_KIND_MAX)
			return -TVH_ERR_REC_FIELD;
		return 0;
	}
	case TV_REC_LBR:
		r->u.branch.from = tvh_le64(p + 8);
		r->u.branch.to = tvh_le64(p + 16);
		r->u.branch.lbr_info = tvh_le64(p + 24);
		r->u.branch.flags = r->aux;
		r->u.branch.kind = r->info;
		return r->info < TV_BR_KIND_MAX ? 0 : -TVH_ERR_REC_FIELD;
	case TV_REC_CR3:
		r->u.cr3.cr3 = tvh_le64(p + 16);
		r->u.cr3.rip = tvh_le64(p + 24);
		return 0;
	case TV_REC_START:
	case TV_REC_STOP:
		r->u.startstop.rip = tvh_le64(p + 16);
		r->u.startstop.trigger = r->aux;
		/* The producer writes a full branch after START (trace_format.h). */
		if (r->type == TV_REC_START)
			s->have_prev = false;
		if (r->aux > TV_TRIG_LIMIT)
			return -TVH_ERR_REC_FIELD;
		if (r->type == TV_REC_START &&
		    (r->aux == TV_TRIG_FULL || r->aux == TV_TRIG_LIMIT))
			return -TVH_ERR_REC_FIELD;
		return 0;
	case TV_REC_TIME:
		r->u.time.tsc_hz = tvh_le64(p + 16);
		r->u.time.unix_ns = tvh_le64(p + 24);
		return 0;
	case TV_REC_CONFIG:
	case TV_REC_LOG:
		r->u.text.text = (const char *)p + 16;
		r->u.text.len = r->aux;
		r->u.text.level = r->info;
		if (r->type == TV_REC_LOG && r->info > 3)
			return -TVH_ERR_REC_FIELD;
		return 0;
	case TV_REC_IMAGE:
		r->u.image.base = tvh_le64(p + 16);
		r->u.image.size = tvh_le64(p + 24);
		r->u.image.name = (const char *)p + 32;
		r->u.image.name_len = r->aux;
		r->u.image.kind = r->info;
		return r->info <= TV_IMG_OTHER ? 0 : -TVH_ERR_REC_FIELD;
	case TV_REC_LOST:
		r->u.lost.records = tvh_le64(p + 16);
		s->have_prev = false;
		return 0;
	case TV_REC_MARKER:
		r->u.marker.value = tvh_le64(p + 16);
		r->u.marker.label = (const char *)p + 24;
		r->u.marker.label_len = r->aux;
		return 0;
	case TV_REC_PT_SYNC:
		r->u.pt_sync.pt_offset = tvh_le64(p + 16);
		r->u.pt_sync.pt_lost = tvh_le64(p + 24);
		return 0;
	default:
		/* A branch type of a newer producer would make the chain wrong. */
		r->has_tsc = false;
		s->have_prev = false;
		return -TVH_ERR_REC_TYPE;
	}
}

/* The rest of the buffer cannot be parsed. */
static int stop(struct tvh_stream *s, int err)
{
	s->pos = s->len;
	s->stopped = true;
	s->have_prev = false;
	return err;
}

int tvh_next_record(struct tvh_stream *s, struct tvh_record *r)
{
	const uint8_t *p;
	size_t left;
	int err;

	if (s->stopped || s->pos >= s->len)
		return 0;
	memset(r, 0, sizeof(*r));
	r->seq = s->next_seq;
	r->offset = s->pos;
	left = s->len - s->pos;
	if (left < sizeof(struct tv_rec))
		return stop(s, -TVH_ERR_TRUNCATED);
	p = s->buf + s->pos;
	r->type = p[0];
	r->info = p[1];
	r->size = tvh_le16(p + 2);
	r->aux = tvh_le32(p + 4);
	if (r->size < sizeof(struct tv_rec) || (r->size & 7) ||
	    r->size > TV_REC_MAX_SIZE)
		return stop(s, -TVH_ERR_REC_SIZE);
	if (r->size > left)
		return stop(s, -TVH_ERR_TRUNCATED);
	s->pos += r->size;
	s->next_seq++;
	err = decode_fields(s, p, r);
	return err ? err : 1;
}

static const char *name_of(const char *const *names, unsigned n, unsigned i)
{
	return i < n && names[i] ? names[i] : "?";
}

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

const char *tvh_rec_type_name(unsigned type)
{
	static const char *const names[] = {
		[TV_REC_PAD] = "PAD", [TV_REC_BRANCH] = "BRANCH",
		[TV_REC_BRANCH_COMPACT] = "BRANCH_COMPACT", [TV_REC_LBR] = "LBR",
		[TV_REC_CR3] = "CR3", [TV_REC_START] = "START",
		[TV_REC_STOP] = "STOP", [TV_REC_CONFIG] = "CONFIG",
		[TV_REC_TIME] = "TIME", [TV_REC_LOG] = "LOG",
		[TV_REC_IMAGE] = "IMAGE", [TV_REC_LOST] = "LOST",
		[TV_REC_MARKER] = "MARKER", [TV_REC_PT_SYNC] = "PT_SYNC",
	};

	return name_of(names, ARRAY_LEN(names), type);
}

const char *tvh_branch_kind_name(unsigned kind)
{
	static const char *const names[] = {
		[TV_BR_UNKNOWN] = "unknown", [TV_BR_JCC] = "jcc",
		[TV_BR_JMP] = "jmp", [TV_BR_JMP_IND] = "jmp-ind",
		[TV_BR_CALL] = "call", [TV_BR_CALL_IND] = "call-ind",
		[TV_BR_RET] = "ret", [TV_BR_FAR] = "far",
		[TV_BR_SYSCALL] = "syscall", [TV_BR_SYSRET] = "sysret",
		[TV_BR_EXCEPTION] = "exception", [TV_BR_INTERRUPT] = "interrupt",
	};

	return name_of(names, ARRAY_LEN(names), kind);
}

const char *tvh_trigger_name(unsigned trigger)
{
	static const char *const names[] = {
		[TV_TRIG_BOOT] = "boot", [TV_TRIG_HYPERCALL] = "hypercall",
		[TV_TRIG_ADDRESS] = "address",
		[TV_TRIG_EXIT_BOOT_SERVICES] = "exit-boot-services",
		[TV_TRIG_KERNEL_ENTRY] = "kernel-entry",
		[TV_TRIG_RECEIVER] = "receiver", [TV_TRIG_FULL] = "full",
		[TV_TRIG_LIMIT] = "limit",
	};

	return name_of(names, ARRAY_LEN(names), trigger);
}

const char *tvh_image_kind_name(unsigned kind)
{
	static const char *const names[] = {
		[TV_IMG_FIRMWARE] = "firmware", [TV_IMG_LOADER] = "loader",
		[TV_IMG_KERNEL] = "kernel", [TV_IMG_OTHER] = "other",
	};

	return name_of(names, ARRAY_LEN(names), kind);
}

const char *tvh_source_name(unsigned source)
{
	static const char *const names[] = {
		[TV_SOURCE_NONE] = "none", [TV_SOURCE_MTF] = "mtf",
		[TV_SOURCE_BTF] = "btf", [TV_SOURCE_LBR] = "lbr",
		[TV_SOURCE_BTS] = "bts", [TV_SOURCE_PT] = "pt",
	};

	return name_of(names, ARRAY_LEN(names), source);
}
