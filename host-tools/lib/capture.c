/* SPDX-License-Identifier: MIT */
/*
 * capture.c - the capture directory of one session (capture.h,
 * docs/CAPTURE.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "host-tools/lib/capture.h"
#include "host-tools/lib/error.h"
#include "host-tools/lib/le.h"
#include "host-tools/lib/text.h"
#include "vmm/trace/format.h"
#include "vmm/version.h"

/* ---- errors ------------------------------------------------------------- */

static int cap_fail(struct cap *c, int err)
{
	if (!c->error) {
		c->error = err;
		c->saved_errno = errno;
	}
	return err;
}

static int cap_io(struct cap *c)
{
	return cap_fail(c, -TVH_ERR_IO);
}

static int run_flush(struct cap *c, struct cap_cpu *p);

/* ---- names -------------------------------------------------------------- */

const char *cap_source_name(unsigned source)
{
	const char *name = tv_source_name(source);

	if (source == TV_SOURCE_NONE)
		return "none";
	return name ? name : "unknown";
}

const char *cap_vendor_name(unsigned vendor_id)
{
	switch (vendor_id) {
	case TVP_VENDOR_INTEL: return "intel";
	case TVP_VENDOR_AMD: return "amd";
	case TVP_VENDOR_OTHER: return "other";
	default: return "unknown";
	}
}

int cap_dir_name(char *out, size_t cap, const char *machine, size_t machine_len,
		 uint64_t session)
{
	size_t n = 0;
	int len;

	if (!out || cap < 1 + 17 + 1)
		return -TVH_ERR_INVALID;
	if (machine_len > CAP_MACHINE_DIR)
		machine_len = CAP_MACHINE_DIR;
	for (size_t i = 0; machine && i < machine_len && machine[i] && n + 18 < cap; i++) {
		char ch = machine[i];
		bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
			    (ch == '.' && n > 0);   /* never ".", ".." or a hidden name */

		out[n++] = keep ? ch : '_';
	}
	if (!n) {
		if (cap < sizeof("unknown") + 17)
			return -TVH_ERR_INVALID;
		memcpy(out, "unknown", 7);
		n = 7;
	}
	len = snprintf(out + n, cap - n, "-%016" PRIx64, session);
	if (len < 0 || (size_t)len >= cap - n)
		return -TVH_ERR_INVALID;
	return (int)n + len;
}

/* Length of a NUL-padded fixed field. */
static size_t field_len(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}

/* ---- files -------------------------------------------------------------- */

static int mkdir_p(const char *path)
{
	char buf[CAP_DIR_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, path, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -1;
		buf[i] = path[i];
	}
	return 0;
}

static int path_in(const struct cap *c, char *out, size_t cap, const char *name)
{
	int n = snprintf(out, cap, "%s/%s", c->dir, name);

	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* ---- JSON --------------------------------------------------------------- */

/* JSON strings: text.h's escaper, the one the exporters use. */
static void json_cstr(FILE *f, const char *s)
{
	tvh_json_string(f, s, strlen(s));
}

static void json_ranges(FILE *f, const struct cap_range *r, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s{\"first\": %" PRIu64 ", \"count\": %" PRIu64 "}",
			i ? ", " : "", r[i].first, r[i].end - r[i].first);
	fputc(']', f);
}

static uint64_t ranges_total(const struct cap_range *r, size_t n)
{
	uint64_t t = 0;

	for (size_t i = 0; i < n; i++)
		t += r[i].end - r[i].first;
	return t;
}

/* Write path via path.tmp and rename, so a reader never sees half a file. */
static int write_atomic(struct cap *c, const char *name,
			void (*body)(const struct cap *, FILE *))
{
	char path[CAP_DIR_MAX + 32], tmp[CAP_DIR_MAX + 40];
	FILE *f;
	int bad;

	if (path_in(c, path, sizeof(path), name))
		return cap_fail(c, -TVH_ERR_INVALID);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return cap_io(c);
	body(c, f);
	bad = ferror(f);
	if (fflush(f) || fsync(fileno(f)))
		bad = 1;
	if (fclose(f))
		bad = 1;
	if (bad || rename(tmp, path)) {
		unlink(tmp);
		return cap_io(c);
	}
	return 0;
}

static void time_iso(FILE *f, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;
	char buf[40];

	if (!ns || !gmtime_r(&t, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm)) {
		fputs("null", f);
		return;
	}
	fprintf(f, "\"%s.%09" PRIu64 "Z\"", buf, ns % 1000000000u);
}

static void meta_body(const struct cap *c, FILE *f)
{
	const struct tvp_hello *h = &c->hello;
	bool first = true;

	fprintf(f, "{\n  \"format\": \"tracevisor-capture\",\n  \"format_version\": 1,\n");
	fprintf(f, "  \"session_id\": \"%016" PRIx64 "\",\n", c->session);
	fprintf(f, "  \"protocol_version\": %u,\n", TVP_VERSION);
	fprintf(f, "  \"receiver_version\": ");
	json_cstr(f, TV_VERSION);
	fprintf(f, ",\n  \"peer\": ");
	json_cstr(f, c->peer);
	fprintf(f, ",\n  \"start_unix_ns\": %" PRIu64 ",\n  \"start_time\": ", c->start_ns);
	time_iso(f, c->start_ns);
	fprintf(f, ",\n  \"end_unix_ns\": ");
	if (c->closed)
		fprintf(f, "%" PRIu64, c->end_ns);
	else
		fputs("null", f);
	fprintf(f, ",\n  \"end_time\": ");
	if (c->closed)
		time_iso(f, c->end_ns);
	else
		fputs("null", f);
	fprintf(f, ",\n  \"complete\": %s,\n", c->closed ? "true" : "false");
	fprintf(f, "  \"hello_received\": %s,\n", c->have_hello ? "true" : "false");
	fprintf(f, "  \"files\": {\"trace\": \"trace.tvt\", \"losses\": \"losses.json\", "
		"\"losses_text\": \"losses.txt\", \"pt\": [");
	for (uint32_t i = 0; i < c->ncpus; i++)
		if (c->cpus[i] && c->cpus[i]->have_pt) {
			fprintf(f, "%s\"cpu%u.pt\"", first ? "" : ", ", i);
			first = false;
		}
	fprintf(f, "]}");
	/* the machine's buffer sizes in force, from its CONFIG "buffers" record */
	fprintf(f, ",\n  \"buffers\": ");
	if (c->have_buffers)
		tvh_buffers_json(f, &c->buffers);
	else
		fputs("null", f);
	if (!c->have_hello) {
		fprintf(f, ",\n  \"machine\": null,\n  \"cpu_count\": %u\n}\n", c->ncpus);
		return;
	}
	fprintf(f, ",\n  \"machine\": ");
	tvh_json_string(f, h->machine, field_len(h->machine, TVP_MACHINE_LEN));
	fprintf(f, ",\n  \"sender_version\": ");
	tvh_json_string(f, h->sw_version, field_len(h->sw_version, TVP_SWVER_LEN));
	fprintf(f, ",\n  \"cpu\": {\"vendor\": ");
	tvh_json_string(f, h->vendor, field_len(h->vendor, TVP_VENDOR_LEN));
	fprintf(f, ", \"vendor_id\": \"%s\", \"family\": %u, \"model\": %u, \"stepping\": %u},\n",
		cap_vendor_name(h->vendor_id), h->family, h->model, h->stepping);
	fprintf(f, "  \"cpu_count\": %u,\n", h->cpu_count);
	fprintf(f, "  \"trace\": {\"source\": \"%s\", \"overflow\": \"%s\", \"ring_bytes\": %" PRIu64
		", \"capabilities\": [", cap_source_name(h->source),
		h->overflow == TV_OVERFLOW_OVERWRITE ? "overwrite" : "stop", h->ring_bytes);
	first = true;
	for (unsigned s = TV_SOURCE_NONE + 1; s <= TV_SOURCE_MAX; s++)
		if (h->caps & TVP_CAP_SOURCE(s)) {
			fprintf(f, "%s\"%s\"", first ? "" : ", ", tv_source_name(s));
			first = false;
		}
	fprintf(f, "], \"control_key\": %s, \"pt_streams\": %s, \"caps\": %" PRIu32 "},\n",
		h->caps & TVP_CAP_CONTROL ? "true" : "false",
		h->caps & TVP_CAP_PT_STREAM ? "true" : "false", h->caps);
	fprintf(f, "  \"tsc_hz\": %" PRIu64 ",\n  \"boot_tsc\": %" PRIu64
		",\n  \"sender_unix_ns\": %" PRIu64 "\n}\n", h->tsc_hz, h->boot_tsc, h->unix_ns);
}

static void losses_body(const struct cap *c, FILE *f)
{
	bool first = true;

	fprintf(f, "{\n  \"session_id\": \"%016" PRIx64 "\",\n  \"complete\": %s,\n",
		c->session, c->closed ? "true" : "false");
	fprintf(f, "  \"total\": {\"records\": %" PRIu64 ", \"bytes\": %" PRIu64
		", \"declared_lost\": %" PRIu64 ", \"pt_bytes\": %" PRIu64 "},\n",
		c->records, c->bytes, c->lost, c->pt_bytes);
	fprintf(f, "  \"cpus\": [");
	for (uint32_t i = 0; i < c->ncpus; i++) {
		const struct cap_cpu *p = c->cpus[i];

		if (!p)
			continue;
		fprintf(f, "%s\n    {\"cpu\": %u, \"records_received\": %" PRIu64
			", \"bytes\": %" PRIu64 ", \"first_seq\": %" PRIu64 ", \"next_seq\": %" PRIu64,
			first ? "" : ",", i, p->records, p->bytes, p->have_seq ? p->first_seq : 0,
			p->have_seq ? p->next_seq : 0);
		first = false;
		fprintf(f, ",\n     \"duplicates\": %" PRIu64 ", \"retransmit_requests\": %" PRIu64
			", \"records_requested_again\": %" PRIu64 ", \"dropped_ahead\": %" PRIu64
			", \"datagrams\": %" PRIu64,
			p->st.duplicates, p->st.retransmit_reqs, p->st.nacked_records,
			p->st.dropped_ahead, p->st.datagrams);
		fprintf(f, ",\n     \"declared_lost\": %" PRIu64 ", \"declared_lost_ranges\": ", p->lost);
		json_ranges(f, p->loss, p->nloss);
		fprintf(f, ",\n     \"missing_at_close\": %" PRIu64 ", \"missing_at_close_ranges\": ",
			ranges_total(p->missing, p->st.nmissing));
		json_ranges(f, p->missing, p->st.nmissing);
		fprintf(f, ",\n     \"lost_records_in_stream\": %" PRIu64, p->lost_in_stream);
		fprintf(f, ",\n     \"pt_bytes\": %" PRIu64 ", \"pt_gap_bytes\": %" PRIu64,
			p->pt_bytes, p->pt_gap_bytes);
		if (p->have_hb)
			fprintf(f, ",\n     \"sender\": {\"produced\": %" PRIu64 ", \"sent\": %" PRIu64
				", \"retransmitted\": %" PRIu64 ", \"lost_overwrite\": %" PRIu64
				", \"head_seq\": %" PRIu64 ", \"acked\": %" PRIu64
				", \"ring_dropped\": %" PRIu64 "}",
				p->hb.produced, p->hb.sent, p->hb.retransmitted, p->hb.lost_overwrite,
				p->hb.head_seq, p->hb.acked, p->hb.ring_dropped);
		else
			fprintf(f, ",\n     \"sender\": null");
		fputc('}', f);
	}
	fprintf(f, "\n  ]\n}\n");
}

void cap_summary(const struct cap *c, FILE *f)
{
	uint64_t dup = 0, req = 0, miss = 0;

	fprintf(f, "session %016" PRIx64 " from %s, machine ", c->session,
		c->peer[0] ? c->peer : "?");
	if (c->have_hello)   /* the machine's bytes: quoted, escaped (no terminal control) */
		tvh_quoted(f, c->hello.machine, field_len(c->hello.machine, TVP_MACHINE_LEN));
	else
		fputs("unknown (no HELLO)", f);
	fprintf(f, "%s\n", c->closed ? "" : " (open)");
	fprintf(f, "%-5s %12s %10s %10s %10s %14s %10s\n", "cpu", "records", "dups",
		"nack-reqs", "lost", "missing-close", "pt-bytes");
	for (uint32_t i = 0; i < c->ncpus; i++) {
		const struct cap_cpu *p = c->cpus[i];
		uint64_t m;

		if (!p)
			continue;
		m = ranges_total(p->missing, p->st.nmissing);
		fprintf(f, "cpu%-2u %12" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64
			" %14" PRIu64 " %10" PRIu64 "\n", i, p->records, p->st.duplicates,
			p->st.retransmit_reqs, p->lost, m, p->pt_bytes);
		for (size_t k = 0; k < p->nloss; k++)
			fprintf(f, "      lost (overwritten before ack): seq %" PRIu64 "..%" PRIu64
				" (%" PRIu64 ")\n", p->loss[k].first, p->loss[k].end - 1,
				p->loss[k].end - p->loss[k].first);
		for (size_t k = 0; k < p->st.nmissing; k++)
			fprintf(f, "      missing at close: seq %" PRIu64 "..%" PRIu64 " (%" PRIu64 ")\n",
				p->missing[k].first, p->missing[k].end - 1,
				p->missing[k].end - p->missing[k].first);
		dup += p->st.duplicates;
		req += p->st.retransmit_reqs;
		miss += m;
	}
	fprintf(f, "total %12" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %14" PRIu64
		" %10" PRIu64 "\n", c->records, dup, req, c->lost, miss, c->pt_bytes);
}

static void summary_body(const struct cap *c, FILE *f)
{
	cap_summary(c, f);
}

/* ---- open --------------------------------------------------------------- */

int cap_init(struct cap *c, const char *outdir, uint64_t session, const char *peer,
	     uint64_t now_ns)
{
	if (!c || !outdir || !session || strlen(outdir) >= sizeof(c->outdir))
		return -TVH_ERR_INVALID;
	memset(c, 0, sizeof(*c));
	memcpy(c->outdir, outdir, strlen(outdir) + 1);
	c->session = session;
	c->start_ns = now_ns;
	if (peer)
		snprintf(c->peer, sizeof(c->peer), "%s", peer);
	return 0;
}

/* The machine name of the HELLO ("" without one), NUL terminated; its length. */
static size_t hello_machine(const struct cap *c, char machine[TVP_MACHINE_LEN + 1])
{
	size_t mlen = 0;

	if (c->have_hello) {
		mlen = field_len(c->hello.machine, TVP_MACHINE_LEN);
		memcpy(machine, c->hello.machine, mlen);
	}
	machine[mlen] = '\0';
	return mlen;
}

/*
 * A new, empty directory outdir/<name>, or <name>.1, .2, ... when taken
 * (never one that exists: mkdir says who got it); its path in
 * out[0..CAP_DIR_MAX).  Returns 0, -TVH_ERR_INVALID (too long) or
 * -TVH_ERR_IO (errno kept).
 */
static int new_dir(const struct cap *c, const char *name, char *out)
{
	for (unsigned k = 0;; k++) {
		int n;

		if (k == 0)
			n = snprintf(out, CAP_DIR_MAX, "%s/%s", c->outdir, name);
		else
			n = snprintf(out, CAP_DIR_MAX, "%s/%s.%u", c->outdir, name, k);
		if (n < 0 || (size_t)n >= CAP_DIR_MAX - 16)
			return -TVH_ERR_INVALID;
		if (!mkdir(out, 0755))
			return 0;
		if (errno != EEXIST || k >= 999)
			return -TVH_ERR_IO;
	}
}

int cap_begin(struct cap *c)
{
	char name[CAP_MACHINE_DIR + 32], path[CAP_DIR_MAX + 32];
	struct tvt_file_info info;
	char machine[TVP_MACHINE_LEN + 1];
	size_t mlen;
	int n, err;

	if (!c || !c->session || c->closed)
		return -TVH_ERR_INVALID;
	if (c->f)
		return 0;
	if (c->error)
		return c->error;
	mlen = hello_machine(c, machine);
	n = cap_dir_name(name, sizeof(name), machine, mlen, c->session);
	if (n < 0)
		return cap_fail(c, n);
	if (mkdir_p(c->outdir))
		return cap_io(c);
	err = new_dir(c, name, c->dir);
	if (err) {
		c->dir[0] = '\0';
		return cap_fail(c, err);
	}
	c->dir_named = c->have_hello;
	if (path_in(c, path, sizeof(path), "trace.tvt"))
		return cap_fail(c, -TVH_ERR_INVALID);
	c->f = fopen(path, "wb");
	if (!c->f)
		return cap_io(c);
	memset(&info, 0, sizeof(info));
	info.version = TVT_VERSION;
	info.session_id = c->session;
	info.created_unix_ns = c->start_ns;
	info.trace_version = TV_TRACE_VERSION;
	info.machine = machine;
	err = tvt_writer_init(&c->w, c->f, &info);
	if (!err)
		err = tvt_writer_finish(&c->w);
	if (!err)
		err = write_atomic(c, "meta.json", meta_body);
	if (err) {
		fclose(c->f);
		c->f = NULL;
		return cap_fail(c, err);
	}
	/* What arrived before the files existed. */
	for (uint32_t i = 0; i < c->ncpus; i++)
		if (c->cpus[i] && c->cpus[i]->run_len >= CAP_RUN_BYTES)
			run_flush(c, c->cpus[i]);
	c->pending = 0;
	return c->error;
}

int cap_open(struct cap *c, const char *outdir, uint64_t session,
	     const struct tvp_hello *hello, const char *peer, uint64_t now_ns)
{
	int err = cap_init(c, outdir, session, peer, now_ns);

	if (err)
		return err;
	if (hello) {
		c->have_hello = true;
		c->hello = *hello;
	}
	return cap_begin(c);
}

/*
 * The directory was made before the HELLO (as "unknown-<session>"): give
 * it the machine's name now.  The new name is taken with mkdir first (so
 * nothing that exists is replaced), then the directory is renamed onto
 * that empty one; the open files (trace.tvt, cpuN.pt) go with it, and
 * every later path is made from c->dir.  Tried once; when it fails the
 * directory keeps its name (meta.json has the machine either way).
 */
static void dir_rename(struct cap *c)
{
	char name[CAP_MACHINE_DIR + 32], unnamed[CAP_MACHINE_DIR + 32];
	char machine[TVP_MACHINE_LEN + 1], to[CAP_DIR_MAX];
	size_t mlen = hello_machine(c, machine);

	c->dir_named = true;
	if (!c->dir[0] || cap_dir_name(name, sizeof(name), machine, mlen, c->session) < 0 ||
	    cap_dir_name(unnamed, sizeof(unnamed), NULL, 0, c->session) < 0 ||
	    !strcmp(name, unnamed))
		return;        /* no name in the HELLO (or "unknown"): nothing to change */
	if (new_dir(c, name, to))
		return;
	if (rename(c->dir, to)) {
		rmdir(to);
		return;
	}
	memcpy(c->dir, to, strlen(to) + 1);
}

int cap_set_hello(struct cap *c, const struct tvp_hello *hello)
{
	if (!c || !hello || c->closed || !c->session)
		return -TVH_ERR_INVALID;
	c->have_hello = true;
	c->hello = *hello;
	if (!c->f)
		return cap_begin(c);
	if (!c->dir_named)
		dir_rename(c);
	return write_atomic(c, "meta.json", meta_body);
}

/* ---- CPUs and runs -------------------------------------------------------- */

static struct cap_cpu *cpu_get(struct cap *c, uint32_t cpu)
{
	struct cap_cpu *p;

	if (cpu >= TVP_MAX_CPUS)
		return NULL;
	p = c->cpus[cpu];
	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->cpu = cpu;
	c->cpus[cpu] = p;
	if (cpu + 1 > c->ncpus)
		c->ncpus = cpu + 1;
	return p;
}

static int run_flush(struct cap *c, struct cap_cpu *p)
{
	int err;

	if (!p->run_len || !c->f)
		return 0;          /* no files yet: the run waits in memory */
	err = tvt_write_chunk(&c->w, p->cpu, TVT_KIND_RECORDS, p->run_flags, p->run_first,
			      p->run, p->run_len);
	if (!err)
		err = tvt_writer_finish(&c->w);
	p->run_len = 0;
	p->run_records = 0;
	p->chunks++;
	return err ? cap_fail(c, err) : 0;
}

static int run_append(struct cap *c, struct cap_cpu *p, uint64_t seq, const uint8_t *rec,
		      size_t size)
{
	if (p->run_len && p->run_first + p->run_records != seq) {
		int err = run_flush(c, p);

		if (err)
			return err;
	}
	if (!p->run_len) {
		p->run_first = seq;
		p->run_flags = p->start_known && seq == p->start_seq ? TVT_CHUNK_F_STREAM_START : 0;
	}
	if (p->run_len + size > p->run_cap) {
		size_t ncap = p->run_cap ? p->run_cap * 2 : 16384;
		uint8_t *n;

		while (ncap < p->run_len + size)
			ncap *= 2;
		n = realloc(p->run, ncap);
		if (!n)
			return cap_fail(c, -TVH_ERR_NOMEM);
		p->run = n;
		p->run_cap = ncap;
	}
	memcpy(p->run + p->run_len, rec, size);
	p->run_len += size;
	p->run_records++;
	if (!p->have_seq) {
		p->have_seq = true;
		p->first_seq = seq;
	}
	p->next_seq = seq + 1;
	p->records++;
	p->bytes += size;
	c->records++;
	c->bytes += size;
	if (rec[0] == TV_REC_LOST && size >= sizeof(struct tv_rec_lost))
		p->lost_in_stream += tvh_le64(rec + 16);
	if (rec[0] == TV_REC_CONFIG && !c->have_buffers && size >= sizeof(struct tv_rec_text) &&
	    tvh_le32(rec + 4) <= size - sizeof(struct tv_rec_text) &&
	    tvh_buffers_parse((const char *)rec + sizeof(struct tv_rec_text), tvh_le32(rec + 4),
			      &c->buffers)) {
		c->have_buffers = true;
		if (c->f) {
			int err = write_atomic(c, "meta.json", meta_body);

			if (err)
				return err;
		}
	}
	if (!c->f)
		c->pending += size;
	else if (p->run_len >= CAP_RUN_BYTES)
		return run_flush(c, p);
	return 0;
}

int cap_records(struct cap *c, uint32_t cpu, uint64_t first_seq,
		const void *records, size_t len, bool has_base, uint64_t base_to)
{
	const uint8_t *rec = records;
	struct cap_cpu *p;
	uint64_t seq = first_seq;
	size_t off;
	int err;

	if (!c || !c->session || c->closed || (!records && len) || cpu >= TVP_MAX_CPUS)
		return -TVH_ERR_INVALID;
	if (c->error)
		return c->error;
	/* Check the tiling first, so a bad payload writes nothing. */
	for (off = 0; off < len;) {
		size_t size;

		if (len - off < sizeof(struct tv_rec))
			return -TVH_ERR_INVALID;
		size = tvh_le16(rec + off + 2);
		if (size < sizeof(struct tv_rec) || (size & 7) || size > TV_REC_MAX_SIZE ||
		    size > len - off)
			return -TVH_ERR_INVALID;
		off += size;
	}
	p = cpu_get(c, cpu);
	if (!p)
		return cap_fail(c, -TVH_ERR_NOMEM);
	for (off = 0; off < len; seq++) {
		size_t size = tvh_le16(rec + off + 2);

		if (off == 0 && has_base && rec[0] == TV_REC_BRANCH_COMPACT &&
		    size == sizeof(struct tv_rec_branch_compact) &&
		    (!p->have_seq || p->next_seq != seq)) {
			uint8_t full[TV_REC_BRANCH_SIZE];

			full[0] = TV_REC_BRANCH;
			full[1] = rec[1];                    /* kind */
			tvh_put_le16(full + 2, TV_REC_BRANCH_SIZE);
			tvh_put_le32(full + 4, 0);           /* a compact branch has no flags */
			tvh_put_le64(full + 8, base_to + tvh_le32(rec + 4));
			tvh_put_le64(full + 16, tvh_le64(rec + 8));
			err = run_append(c, p, seq, full, sizeof(full));
			p->expanded++;
		} else {
			err = run_append(c, p, seq, rec + off, size);
		}
		if (err)
			return err;
		off += size;
	}
	return 0;
}

int cap_stream_start(struct cap *c, uint32_t cpu, uint64_t seq)
{
	struct cap_cpu *p;

	if (!c || !c->session || cpu >= TVP_MAX_CPUS)
		return -TVH_ERR_INVALID;
	p = cpu_get(c, cpu);
	if (!p)
		return cap_fail(c, -TVH_ERR_NOMEM);
	p->start_known = true;
	p->start_seq = seq;
	if (p->run_len && p->run_first == seq)
		p->run_flags |= TVT_CHUNK_F_STREAM_START;
	return 0;
}

/* Close the cpuN.pt written least recently (cap_pt reopens it to append). */
static void pt_close_lru(struct cap *c)
{
	struct cap_cpu *lru = NULL;

	for (uint32_t i = 0; i < c->ncpus; i++) {
		struct cap_cpu *p = c->cpus[i];

		if (p && p->pt && (!lru || p->pt_stamp < lru->pt_stamp))
			lru = p;
	}
	if (!lru)
		return;
	if (fclose(lru->pt))
		cap_io(c);
	lru->pt = NULL;
	c->pt_open--;
}

int cap_pt(struct cap *c, uint32_t cpu, uint64_t offset, const void *bytes, size_t len)
{
	struct cap_cpu *p;
	int err;

	if (!c || !c->session || c->closed || !bytes || !len || cpu >= TVP_MAX_CPUS)
		return -TVH_ERR_INVALID;
	if (c->error)
		return c->error;
	/* PT is written at once: a HELLO that comes later renames the directory. */
	err = cap_begin(c);
	if (err)
		return err;
	p = cpu_get(c, cpu);
	if (!p)
		return cap_fail(c, -TVH_ERR_NOMEM);
	if (!p->pt) {
		char name[32], path[CAP_DIR_MAX + 32];

		/* File descriptors are bounded: the least recently written file goes. */
		if (c->pt_open >= CAP_PT_OPEN_MAX)
			pt_close_lru(c);
		snprintf(name, sizeof(name), "cpu%u.pt", cpu);
		if (path_in(c, path, sizeof(path), name))
			return cap_fail(c, -TVH_ERR_INVALID);
		p->pt = fopen(path, p->have_pt ? "ab" : "wb");
		if (!p->pt)
			return cap_io(c);
		c->pt_open++;
		if (!p->have_pt) {
			p->have_pt = true;
			p->pt_first = offset;
			p->pt_next = offset;
		}
	}
	p->pt_stamp = ++c->pt_clock;
	if (offset != p->pt_next)
		p->pt_gap_bytes += offset - p->pt_next;
	/* The raw file is the concatenation; gaps are in losses.json. */
	if (fwrite(bytes, 1, len, p->pt) != len || fflush(p->pt))
		return cap_io(c);
	err = tvt_write_chunk(&c->w, cpu, TVT_KIND_PT, 0, offset, bytes, len);
	if (!err)
		err = tvt_writer_finish(&c->w);
	if (err)
		return cap_fail(c, err);
	p->pt_next = offset + len;
	p->pt_bytes += len;
	c->pt_bytes += len;
	return 0;
}

int cap_loss(struct cap *c, uint32_t cpu, uint64_t first, uint64_t count)
{
	struct cap_cpu *p;
	uint64_t end = first + count;
	size_t i;

	if (!c || c->closed || !count || cpu >= TVP_MAX_CPUS)
		return -TVH_ERR_INVALID;
	p = cpu_get(c, cpu);
	if (!p)
		return cap_fail(c, -TVH_ERR_NOMEM);
	/*
	 * Insert [first, end), merge with neighbours, count only new records.
	 * The ranges are sorted and disjoint: the first that ends at or after
	 * first is found by bisection (O(log n) per notice; a notice after the
	 * last range, the usual case, moves nothing).
	 */
	if (end < first)
		end = UINT64_MAX;   /* a range that wraps stops at the end of the space */
	{
		size_t lo = 0, hi = p->nloss;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (p->loss[mid].end < first)
				lo = mid + 1;
			else
				hi = mid;
		}
		i = lo;
	}
	if (i == p->nloss || p->loss[i].first > end) {
		if (p->nloss == p->loss_cap) {
			size_t ncap = p->loss_cap ? p->loss_cap * 2 : 8;
			struct cap_range *n = realloc(p->loss, ncap * sizeof(*n));

			if (!n)
				return cap_fail(c, -TVH_ERR_NOMEM);
			p->loss = n;
			p->loss_cap = ncap;
		}
		memmove(p->loss + i + 1, p->loss + i, (p->nloss - i) * sizeof(*p->loss));
		p->loss[i].first = first;
		p->loss[i].end = end;
		p->nloss++;
		p->lost += end - first;
		c->lost += end - first;
		return 0;
	}
	/* Overlaps or touches loss[i] (and maybe those after it). */
	{
		uint64_t before = 0, added;
		size_t j = i;

		/* Only the ranges merged change: their sum before, the union after. */
		while (j + 1 < p->nloss && p->loss[j + 1].first <= end)
			j++;
		for (size_t k = i; k <= j; k++)
			before += p->loss[k].end - p->loss[k].first;
		if (first < p->loss[i].first)
			p->loss[i].first = first;
		if (p->loss[j].end > end)
			end = p->loss[j].end;
		p->loss[i].end = end;
		memmove(p->loss + i + 1, p->loss + j + 1, (p->nloss - j - 1) * sizeof(*p->loss));
		p->nloss -= j - i;
		added = (p->loss[i].end - p->loss[i].first) - before;
		p->lost += added;
		c->lost += added;
	}
	return 0;
}

int cap_heartbeat(struct cap *c, const struct tvp_hb_cpu *e)
{
	struct cap_cpu *p;

	if (!c || !e || e->cpu >= TVP_MAX_CPUS)
		return -TVH_ERR_INVALID;
	p = cpu_get(c, e->cpu);
	if (!p)
		return cap_fail(c, -TVH_ERR_NOMEM);
	p->have_hb = true;
	p->hb = *e;
	return 0;
}

int cap_set_stream(struct cap *c, uint32_t cpu, const struct cap_stream_stats *st)
{
	struct cap_cpu *p;
	struct cap_range *m = NULL;

	if (!c || !st || cpu >= TVP_MAX_CPUS || (st->nmissing && !st->missing))
		return -TVH_ERR_INVALID;
	p = cpu_get(c, cpu);
	if (!p)
		return cap_fail(c, -TVH_ERR_NOMEM);
	if (st->nmissing) {
		m = malloc(st->nmissing * sizeof(*m));
		if (!m)
			return cap_fail(c, -TVH_ERR_NOMEM);
		memcpy(m, st->missing, st->nmissing * sizeof(*m));
	}
	free(p->missing);
	p->missing = m;
	p->st = *st;
	p->st.missing = m;
	p->have_stats = true;
	return 0;
}

int cap_flush(struct cap *c)
{
	int err = 0;

	if (!c || !c->session)
		return -TVH_ERR_INVALID;
	if (!c->f)
		return c->error;
	for (uint32_t i = 0; i < c->ncpus; i++) {
		int e;

		if (!c->cpus[i])
			continue;
		e = run_flush(c, c->cpus[i]);
		if (e && !err)
			err = e;
	}
	return err ? err : c->error;
}

/* A ring snapshot from the sender's heartbeat and HELLO (TVT_KIND_RING). */
static int write_ring(struct cap *c, const struct cap_cpu *p)
{
	uint8_t b[sizeof(struct tv_trace_ring)];

	memset(b, 0, sizeof(b));
	tvh_put_le32(b + 0, TV_TRACE_MAGIC);
	tvh_put_le16(b + 4, TV_TRACE_VERSION);
	tvh_put_le16(b + 6, sizeof(struct tv_trace_ring));
	tvh_put_le32(b + 8, p->cpu);
	tvh_put_le32(b + 16, c->have_hello ? c->hello.source : 0);
	tvh_put_le32(b + 20, c->have_hello ? c->hello.overflow : 0);
	tvh_put_le64(b + 24, c->have_hello ? c->hello.ring_bytes : 0);
	/* Without a heartbeat yet, the ring got at least as far as we did. */
	tvh_put_le64(b + 56, p->have_hb ? p->hb.head_seq : p->next_seq); /* next_seq */
	tvh_put_le64(b + 64, p->hb.ring_dropped);             /* lost_records */
	tvh_put_le64(b + 80, c->have_hello ? c->hello.tsc_hz : 0);
	tvh_put_le64(b + 88, c->have_hello ? c->hello.boot_tsc : 0);
	tvh_put_le64(b + 104, TV_CHAIN_NONE);                 /* chain_pos */
	return tvt_write_chunk(&c->w, p->cpu, TVT_KIND_RING, 0, 0, b, sizeof(b));
}

int cap_close(struct cap *c, uint64_t now_ns)
{
	int err;

	if (!c)
		return -TVH_ERR_INVALID;
	if (c->closed)
		return c->error;
	if (!c->f && c->session)
		cap_begin(c);        /* whatever was received gets written */
	if (c->f) {
		cap_flush(c);
		for (uint32_t i = 0; i < c->ncpus; i++) {
			struct cap_cpu *p = c->cpus[i];

			/* Source and TSC rate reach the readers through the
			 * snapshot: write one when either message came. */
			if (p && (p->have_hb || (c->have_hello && p->have_seq))) {
				err = write_ring(c, p);
				if (err)
					cap_fail(c, err);
			}
			if (p && p->pt) {
				if (fclose(p->pt))
					cap_io(c);
				p->pt = NULL;
				c->pt_open--;
			}
		}
		err = tvt_writer_finish(&c->w);
		if (err)
			cap_fail(c, err);
		if (fsync(fileno(c->f)))
			cap_io(c);
		if (fclose(c->f))
			cap_io(c);
		c->f = NULL;
	}
	/* Nothing more is written: the runs' memory (up to REC_BEGIN_BYTES held
	 * before a HELLO) goes now, not when the summary is dropped. */
	for (uint32_t i = 0; i < c->ncpus; i++)
		if (c->cpus[i]) {
			free(c->cpus[i]->run);
			c->cpus[i]->run = NULL;
			c->cpus[i]->run_len = c->cpus[i]->run_cap = 0;
		}
	c->closed = true;
	c->end_ns = now_ns;
	if (!c->dir[0])
		return c->error;
	write_atomic(c, "meta.json", meta_body);
	write_atomic(c, "losses.json", losses_body);
	write_atomic(c, "losses.txt", summary_body);
	return c->error;
}

void cap_free(struct cap *c)
{
	if (!c)
		return;
	if (!c->closed && c->f)
		cap_close(c, 0);
	for (uint32_t i = 0; i < c->ncpus; i++) {
		struct cap_cpu *p = c->cpus[i];

		if (!p)
			continue;
		if (p->pt) {
			fclose(p->pt);
			c->pt_open--;
		}
		free(p->run);
		free(p->loss);
		free(p->missing);
		free(p);
		c->cpus[i] = NULL;
	}
	c->ncpus = 0;
}
