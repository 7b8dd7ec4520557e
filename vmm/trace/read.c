/* SPDX-License-Identifier: MIT */
/*
 * trace_read.c - validating record reader (see trace_read.h).
 *
 * Every field is loaded byte by byte as little endian, so the buffer may
 * have any alignment and the host any byte order.  Bounds: a record is
 * decoded only once its whole size lies inside the buffer, and its size is
 * checked against the type before any field beyond the header is read.
 */
#include "vmm/trace/read.h"

#include <string.h>

#define LOG_LEVEL_MAX 3u   /* enum log_level: err, warn, info, debug */

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)le16(p) | ((uint32_t)le16(p + 2) << 16);
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | ((uint64_t)le32(p + 4) << 32);
}

void trace_reader_init(struct trace_reader *rd)
{
	memset(rd, 0, sizeof(*rd));
	rd->stopped = true;
}

void trace_reader_feed(struct trace_reader *rd, const void *buf, size_t len,
		       uint64_t first_seq, bool contiguous)
{
	uint64_t expect = rd->fed ? rd->next_seq : 0;

	/* From 0 for the first feed: the records before it were never seen. */
	if (first_seq > expect)
		rd->stats.missed += first_seq - expect;
	if (!contiguous || !rd->fed || first_seq != rd->next_seq || rd->stopped)
		rd->have_prev = false;
	rd->buf = buf;
	rd->len = buf ? len : 0;
	rd->pos = 0;
	rd->next_seq = first_seq;
	rd->stopped = false;
	rd->fed = true;
}

/* Size of the fixed-size types (exact), 0 for the others. */
static uint16_t fixed_size(uint8_t type, uint32_t aux)
{
	switch (type) {
	case TV_REC_BRANCH:
		return (aux & TV_BRF_TSC) ? TV_REC_BRANCH_TSC_SIZE : TV_REC_BRANCH_SIZE;
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
	case TV_REC_CODE:
		return sizeof(struct tv_rec_code);
	case TV_REC_CODE_DATA:
		return sizeof(struct tv_rec_code_data);
	case TV_REC_MEM:
		return sizeof(struct tv_rec_mem);
	case TV_REC_MEM_STATS:
		return sizeof(struct tv_rec_mem_stats);
	default:
		return 0;
	}
}

/* The fixed part before the text of the variable-size types, 0 for the others. */
static uint32_t text_offset(uint8_t type)
{
	switch (type) {
	case TV_REC_CONFIG:
	case TV_REC_LOG:
		return sizeof(struct tv_rec_text);
	case TV_REC_IMAGE:
		return sizeof(struct tv_rec_image);
	case TV_REC_MARKER:
		return sizeof(struct tv_rec_marker);
	default:
		return 0;
	}
}

/* Does the size match the type?  (Unknown types are checked elsewhere.) */
static bool size_matches(const struct trace_event *ev)
{
	uint16_t want = fixed_size(ev->type, ev->aux);
	uint32_t toff = text_offset(ev->type);

	if (want)
		return ev->size == want;
	if (toff)  /* aux <= size - toff follows; 64-bit sum: aux is untrusted */
		return (uint64_t)ev->size == TV_REC_ALIGN((uint64_t)toff + ev->aux);
	if (ev->type == TV_REC_MEM_WATCH)  /* the label is the rest, NUL padded */
		return ev->size >= sizeof(struct tv_rec_mem_watch);
	return true;  /* PAD: any size */
}

static int decode_branch(struct trace_reader *rd, const uint8_t *p, struct trace_event *ev)
{
	ev->u.branch.from = le64(p + 8);
	ev->u.branch.to = le64(p + 16);
	ev->u.branch.flags = ev->aux;
	ev->u.branch.kind = ev->info;
	if (ev->aux & TV_BRF_TSC) {
		ev->has_tsc = true;
		ev->tsc = le64(p + 24);
	}
	/* Its `to` is sound even with an unknown kind: the chain goes on. */
	rd->prev_to = ev->u.branch.to;
	rd->have_prev = true;
	return ev->info < TV_BR_KIND_MAX ? 0 : TRACE_ERR_REC_FIELD;
}

static int decode_compact(struct trace_reader *rd, const uint8_t *p, struct trace_event *ev)
{
	bool had_prev = rd->have_prev;

	ev->u.branch.compact = true;
	ev->u.branch.kind = ev->info;
	ev->u.branch.to = le64(p + 8);
	ev->u.branch.from = had_prev ? rd->prev_to + ev->aux : 0;
	/* The next compact record's base is this `to`, known either way. */
	rd->prev_to = ev->u.branch.to;
	rd->have_prev = true;
	if (!had_prev)
		return TRACE_ERR_NO_PREV;
	return ev->info < TV_BR_KIND_MAX ? 0 : TRACE_ERR_REC_FIELD;
}

static int decode_startstop(struct trace_reader *rd, const uint8_t *p, struct trace_event *ev)
{
	ev->u.startstop.rip = le64(p + 16);
	ev->u.startstop.trigger = ev->aux;
	if (ev->type == TV_REC_START)
		rd->have_prev = false;   /* a sync point: a full branch follows */
	if (ev->aux > TV_TRIG_MAX)
		return TRACE_ERR_REC_FIELD;
	if (ev->type == TV_REC_START && ev->aux > TV_TRIG_RECEIVER)
		return TRACE_ERR_REC_FIELD;  /* FULL, LIMIT: reasons to stop only */
	return 0;
}

/* TV_REC_MEM (docs/MEMTRACE.md): flags that contradict each other are damage. */
static int decode_mem(const uint8_t *p, struct trace_event *ev)
{
	uint32_t f = ev->aux & 0xfffu;

	ev->u.mem.rip = le64(p + 16);
	ev->u.mem.cr3 = le64(p + 24);
	ev->u.mem.gla = le64(p + 32);
	ev->u.mem.gpa = le64(p + 40);
	ev->u.mem.gpa2 = le64(p + 48);
	ev->u.mem.old = le64(p + 56);
	ev->u.mem.new_val = le64(p + 64);
	ev->u.mem.flags = f;
	ev->u.mem.cpl = (uint8_t)((ev->aux >> TV_MEMF_CPL_SHIFT) & 3u);
	ev->u.mem.id = (uint16_t)(ev->aux >> TV_MEMF_ID_SHIFT);
	ev->u.mem.size = ev->info;
	if (!(f & (TV_MEMF_READ | TV_MEMF_WRITE | TV_MEMF_UNDECODED)))
		return TRACE_ERR_REC_FIELD;
	if ((f & TV_MEMF_NEW) && !(f & TV_MEMF_WRITE))
		return TRACE_ERR_REC_FIELD;
	if ((f & TV_MEMF_UNDECODED) && ev->info)
		return TRACE_ERR_REC_FIELD;
	if ((f & TV_MEMF_SPLIT) && (ev->u.mem.gpa2 & 0xfffu))
		return TRACE_ERR_REC_FIELD;
	return 0;
}

static int decode_mem_watch(const uint8_t *p, struct trace_event *ev)
{
	uint32_t room = ev->size - (uint32_t)sizeof(struct tv_rec_mem_watch);
	const char *label = (const char *)p + sizeof(struct tv_rec_mem_watch);
	uint32_t n = 0;

	ev->u.mem_watch.lo = le64(p + 16);
	ev->u.mem_watch.hi = le64(p + 24);
	ev->u.mem_watch.gla = le64(p + 32);
	ev->u.mem_watch.cr3 = le64(p + 40);
	while (n < room && label[n])
		n++;
	ev->u.mem_watch.label = label;
	ev->u.mem_watch.label_len = n;
	ev->u.mem_watch.op = ev->info;
	ev->u.mem_watch.id = (uint16_t)ev->aux;
	ev->u.mem_watch.mode = (uint8_t)(ev->aux >> 16);
	ev->u.mem_watch.origin = (uint8_t)(ev->aux >> 24);
	if (ev->info < TV_MEMW_ARM || ev->info > TV_MEMW_LABEL)
		return TRACE_ERR_REC_FIELD;
	if (ev->u.mem_watch.origin < TV_MEMW_FROM_CONFIG ||
	    ev->u.mem_watch.origin > TV_MEMW_FROM_CONTROL)
		return TRACE_ERR_REC_FIELD;
	if (ev->info == TV_MEMW_ARM &&
	    (ev->u.mem_watch.mode < TV_MEMW_MODE_R || ev->u.mem_watch.mode > TV_MEMW_MODE_RW))
		return TRACE_ERR_REC_FIELD;
	if (ev->info != TV_MEMW_REMOVE && ev->u.mem_watch.lo >= ev->u.mem_watch.hi)
		return TRACE_ERR_REC_FIELD;
	return 0;
}

/* The fields after the header; the size already matches the type. */
static int decode_fields(struct trace_reader *rd, const uint8_t *p, struct trace_event *ev)
{
	if (ev->type != TV_REC_PAD && ev->type != TV_REC_BRANCH &&
	    ev->type != TV_REC_BRANCH_COMPACT && ev->type != TV_REC_LBR &&
	    ev->type != TV_REC_CODE_DATA) {
		ev->has_tsc = true;
		ev->tsc = le64(p + 8);
	}
	switch (ev->type) {
	case TV_REC_PAD:
		return 0;
	case TV_REC_BRANCH:
		return decode_branch(rd, p, ev);
	case TV_REC_BRANCH_COMPACT:
		return decode_compact(rd, p, ev);
	case TV_REC_LBR:
		ev->u.branch.from = le64(p + 8);
		ev->u.branch.to = le64(p + 16);
		ev->u.branch.lbr_info = le64(p + 24);
		ev->u.branch.flags = ev->aux;
		ev->u.branch.kind = ev->info;
		return ev->info < TV_BR_KIND_MAX ? 0 : TRACE_ERR_REC_FIELD;
	case TV_REC_CR3:
		ev->u.cr3.cr3 = le64(p + 16);
		ev->u.cr3.rip = le64(p + 24);
		return 0;
	case TV_REC_START:
	case TV_REC_STOP:
		return decode_startstop(rd, p, ev);
	case TV_REC_TIME:
		ev->u.time.tsc_hz = le64(p + 16);
		ev->u.time.unix_ns = le64(p + 24);
		return 0;
	case TV_REC_CONFIG:
	case TV_REC_LOG:
		ev->u.text.text = (const char *)p + sizeof(struct tv_rec_text);
		ev->u.text.len = ev->aux;
		ev->u.text.level = ev->info;
		return ev->type == TV_REC_LOG && ev->info > LOG_LEVEL_MAX ? TRACE_ERR_REC_FIELD : 0;
	case TV_REC_IMAGE:
		ev->u.image.base = le64(p + 16);
		ev->u.image.size = le64(p + 24);
		ev->u.image.name = (const char *)p + sizeof(struct tv_rec_image);
		ev->u.image.name_len = ev->aux;
		ev->u.image.kind = ev->info;
		return ev->info <= TV_IMG_OTHER ? 0 : TRACE_ERR_REC_FIELD;
	case TV_REC_LOST:
		ev->u.lost.records = le64(p + 16);
		rd->have_prev = false;   /* records are missing before this point */
		rd->stats.lost += ev->u.lost.records;
		return 0;
	case TV_REC_MARKER:
		ev->u.marker.value = le64(p + 16);
		ev->u.marker.label = (const char *)p + sizeof(struct tv_rec_marker);
		ev->u.marker.label_len = ev->aux;
		return 0;
	case TV_REC_PT_SYNC:
		ev->u.pt_sync.pt_offset = le64(p + 16);
		ev->u.pt_sync.pt_lost = le64(p + 24);
		return 0;
	case TV_REC_CODE:
		ev->u.code.gpa = le64(p + 16);
		ev->u.code.linear = le64(p + 24);
		ev->u.code.cr3 = le64(p + 32);
		ev->u.code.hash = le64(p + 40);
		/* only the TV_CODEF_* bits; pages are 4 KiB aligned */
		if (ev->info & ~TV_CODEF_ALL)
			return TRACE_ERR_REC_FIELD;
		return ((ev->u.code.gpa | ev->u.code.linear) & (TV_CODE_PAGE - 1)) ?
		       TRACE_ERR_REC_FIELD : 0;
	case TV_REC_CODE_DATA:
		ev->u.code_data.hash = le64(p + 8);
		ev->u.code_data.bytes = p + 16;
		ev->u.code_data.chunk = ev->aux;
		return ev->aux < TV_CODE_CHUNKS ? 0 : TRACE_ERR_REC_FIELD;
	case TV_REC_MEM:
		return decode_mem(p, ev);
	case TV_REC_MEM_WATCH:
		return decode_mem_watch(p, ev);
	case TV_REC_MEM_STATS:
		ev->u.mem_stats.recorded = le64(p + 16);
		ev->u.mem_stats.filtered = le64(p + 24);
		ev->u.mem_stats.collateral = le64(p + 32);
		ev->u.mem_stats.steps = le64(p + 40);
		ev->u.mem_stats.undecoded = le64(p + 48);
		ev->u.mem_stats.outside_window = le64(p + 56);
		return 0;
	default:
		return TRACE_ERR_REC_TYPE;
	}
}

/* The rest of the buffer cannot be parsed: one malformed run. */
static int stop_buffer(struct trace_reader *rd, int err)
{
	rd->stats.bad_records++;
	rd->stats.bad_bytes += rd->len - rd->pos;
	rd->pos = rd->len;
	rd->stopped = true;
	rd->have_prev = false;
	return err;
}

/* Decode the sound-headed record at pos; err for field problems. */
static int decode_record(struct trace_reader *rd, const uint8_t *p, struct trace_event *ev)
{
	if (ev->type >= TV_REC_TYPE_MAX) {
		/* A branch type of a newer producer would make the chain wrong. */
		rd->have_prev = false;
		return TRACE_ERR_REC_TYPE;
	}
	if (!size_matches(ev)) {
		if (ev->type == TV_REC_BRANCH || ev->type == TV_REC_BRANCH_COMPACT)
			rd->have_prev = false;   /* its `to` cannot be trusted */
		return TRACE_ERR_REC_FIELD;
	}
	return decode_fields(rd, p, ev);
}

int trace_reader_next(struct trace_reader *rd, struct trace_event *ev)
{
	const uint8_t *p;
	size_t left;
	int err;

	if (rd->stopped || rd->pos >= rd->len)
		return 0;
	memset(ev, 0, sizeof(*ev));
	ev->seq = rd->next_seq;
	ev->offset = rd->pos;
	left = rd->len - rd->pos;
	if (left < sizeof(struct tv_rec))
		return stop_buffer(rd, TRACE_ERR_TRUNCATED);
	p = rd->buf + rd->pos;
	ev->type = p[0];
	ev->info = p[1];
	ev->size = le16(p + 2);
	ev->aux = le32(p + 4);
	if (ev->size < sizeof(struct tv_rec) || (ev->size & 7u) || ev->size > TV_REC_MAX_SIZE)
		return stop_buffer(rd, TRACE_ERR_REC_SIZE);
	if (ev->size > left)
		return stop_buffer(rd, TRACE_ERR_TRUNCATED);

	rd->pos += ev->size;
	rd->next_seq++;
	err = decode_record(rd, p, ev);
	if (err) {
		rd->stats.bad_records++;
		rd->stats.bad_bytes += ev->size;
		return err;
	}
	rd->stats.records++;
	rd->stats.bytes += ev->size;
	return 1;
}

static const char *name_of(const char *const *names, unsigned n, unsigned i)
{
	return i < n && names[i] ? names[i] : "?";
}

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

const char *trace_rec_type_name(unsigned type)
{
	static const char *const names[] = {
		[TV_REC_PAD] = "PAD", [TV_REC_BRANCH] = "BRANCH",
		[TV_REC_BRANCH_COMPACT] = "BRANCH_COMPACT", [TV_REC_LBR] = "LBR",
		[TV_REC_CR3] = "CR3", [TV_REC_START] = "START",
		[TV_REC_STOP] = "STOP", [TV_REC_CONFIG] = "CONFIG",
		[TV_REC_TIME] = "TIME", [TV_REC_LOG] = "LOG",
		[TV_REC_IMAGE] = "IMAGE", [TV_REC_LOST] = "LOST",
		[TV_REC_MARKER] = "MARKER", [TV_REC_PT_SYNC] = "PT_SYNC",
		[TV_REC_CODE] = "CODE", [TV_REC_CODE_DATA] = "CODE_DATA",
		[TV_REC_MEM] = "MEM", [TV_REC_MEM_WATCH] = "MEM_WATCH",
		[TV_REC_MEM_STATS] = "MEM_STATS",
	};

	return name_of(names, ARRAY_LEN(names), type);
}

const char *trace_trigger_name(unsigned trigger)
{
	static const char *const names[] = {
		[TV_TRIG_BOOT] = "boot", [TV_TRIG_HYPERCALL] = "hypercall",
		[TV_TRIG_ADDRESS] = "address",
		[TV_TRIG_EXIT_BOOT_SERVICES] = "exit-boot-services",
		[TV_TRIG_KERNEL_ENTRY] = "kernel-entry",
		[TV_TRIG_RECEIVER] = "receiver", [TV_TRIG_FULL] = "full",
		[TV_TRIG_LIMIT] = "limit", [TV_TRIG_GUEST_RESET] = "guest-reset",
		[TV_TRIG_GUEST_POWEROFF] = "guest-power-off",
	};

	return name_of(names, ARRAY_LEN(names), trigger);
}

const char *trace_branch_kind_name(unsigned kind)
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
