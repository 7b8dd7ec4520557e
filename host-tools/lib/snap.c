/* SPDX-License-Identifier: MIT */
/*
 * snap.c - the code snapshot store (see snap.h).
 *
 * Loading keeps two tables: contents by hash (open addressing; a slot
 * assembles its chunks, then holds the verified page) and the snapshots
 * in arrival order.  tvh_snap_finish resolves each snapshot's content,
 * computes validity ends (sorted by gpa, then time) and sorts an index
 * by linear page for lookups (binary search, then a scan of that page's
 * snapshots: a page has a handful, one per re-arm or address space).
 *
 * Verified contents stay in malloc'ed pages up to spill_bytes; past it
 * they are appended (through a small write buffer) to an unlinked file
 * in the spill directory, which finish maps read-only: the kernel pages
 * those contents in and out as decoders touch them, so a capture with
 * more distinct code than memory still decodes, and hit.page stays a
 * plain pointer, valid until tvh_snap_free, for any number of readers.
 */
#define _GNU_SOURCE              /* O_TMPFILE */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "host-tools/lib/error.h"
#include "host-tools/lib/snap.h"

#define PAGE_MASK (~(uint64_t)(TV_CODE_PAGE - 1))
#define ALL_CHUNKS ((uint8_t)((1u << TV_CODE_CHUNKS) - 1))

/* Contents appended to the spill file between two writes (256 KiB). */
#define WBUF_PAGES 64u

/* SLOT_GOOD: verified, in page; SLOT_FILE: verified, at off in the spill file. */
enum slot_state { SLOT_FREE = 0, SLOT_ASSEMBLING, SLOT_GOOD, SLOT_FILE };

struct content {
	uint64_t hash;
	union {
		uint8_t *page;   /* TV_CODE_PAGE bytes once a chunk came */
		uint64_t off;    /* SLOT_FILE */
	} u;
	uint8_t have;            /* bitmap of chunks present (assembling) */
	uint8_t state;           /* enum slot_state */
};

struct fw_extent {
	uint64_t lo, hi;         /* pages [lo, hi) */
};

struct snapshot {
	uint64_t gpa, linear, cr3, tsc, end, hash;
	const uint8_t *page;     /* the content, NULL when missing */
	uint32_t cpu;
	uint8_t flags;
};

struct tvh_snap {
	struct content *tab;     /* power-of-two size, at most 1/2 full */
	size_t tab_size, tab_used;
	struct fw_extent *fw;    /* firmware IMAGE records: physical extents */
	size_t nfw, fw_cap;
	struct snapshot *snaps;
	size_t nsnaps, cap;
	const struct snapshot **by_linear;   /* after finish: with linear and content */
	size_t nlinear;
	struct tvh_snap_stats st;
	bool finished;
	/* The spill file: created at the first content past spill_bytes. */
	uint64_t spill_bytes;
	char *dir;
	int fd;                  /* -1: none (yet, or closed once mapped) */
	uint64_t file_len;       /* bytes written, and buffered in wbuf */
	uint8_t *wbuf;           /* WBUF_PAGES pages not yet written */
	size_t wlen;
	const uint8_t *map;      /* after finish: file_len bytes, read-only */
	int err;                 /* sticky: the first spill failure */
	int io_errno;            /*   and its errno */
};

/* ---- contents by hash ----------------------------------------------------- */

static size_t slot_of(uint64_t hash, size_t size)
{
	/* The hash is FNV-1a already; fold the high bits in for small tables. */
	return (size_t)(hash ^ (hash >> 29) ^ (hash >> 47)) & (size - 1);
}

static struct content *content_find(const struct tvh_snap *s, uint64_t hash)
{
	size_t i;

	if (!s->tab_size)
		return NULL;
	for (i = slot_of(hash, s->tab_size); s->tab[i].state != SLOT_FREE;
	     i = (i + 1) & (s->tab_size - 1))
		if (s->tab[i].hash == hash)
			return &s->tab[i];
	return NULL;
}

static int content_grow(struct tvh_snap *s)
{
	size_t size = s->tab_size ? 2 * s->tab_size : 1024;
	struct content *tab = calloc(size, sizeof(*tab));

	if (!tab)
		return -TVH_ERR_NOMEM;
	for (size_t k = 0; k < s->tab_size; k++) {
		size_t i;

		if (s->tab[k].state == SLOT_FREE)
			continue;
		for (i = slot_of(s->tab[k].hash, size); tab[i].state != SLOT_FREE;
		     i = (i + 1) & (size - 1))
			;
		tab[i] = s->tab[k];
	}
	free(s->tab);
	s->tab = tab;
	s->tab_size = size;
	return 0;
}

/* The slot of hash, made (assembling, no chunk) when new; NULL: no memory. */
static struct content *content_get(struct tvh_snap *s, uint64_t hash)
{
	struct content *c = content_find(s, hash);
	size_t i;

	if (c)
		return c;
	if (2 * (s->tab_used + 1) > s->tab_size && content_grow(s))
		return NULL;
	for (i = slot_of(hash, s->tab_size); s->tab[i].state != SLOT_FREE;
	     i = (i + 1) & (s->tab_size - 1))
		;
	c = &s->tab[i];
	c->hash = hash;
	c->state = SLOT_ASSEMBLING;
	s->tab_used++;
	return c;
}

/* ---- the spill file ------------------------------------------------------- */

/* A failure of the file: sticky (every later add and finish return it), errno kept. */
static int io_failed(struct tvh_snap *s)
{
	s->io_errno = errno ? errno : EIO;
	s->err = -TVH_ERR_IO;
	s->st.spill_errors++;
	errno = s->io_errno;
	return s->err;
}

/*
 * An unlinked file in dir: O_TMPFILE where the file system has it (never
 * visible under a name), else mkstemp and unlink at once.  Either way
 * the file's blocks go back when the store closes it, even on a crash.
 */
static int spill_open(struct tvh_snap *s)
{
	char *path;
	size_t n;

	s->fd = open(s->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (s->fd >= 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return io_failed(s);
	n = strlen(s->dir) + sizeof("/tvh-snap-XXXXXX");
	path = malloc(n);
	if (!path)
		return -TVH_ERR_NOMEM;
	snprintf(path, n, "%s/tvh-snap-XXXXXX", s->dir);
	s->fd = mkstemp(path);
	if (s->fd < 0) {
		free(path);
		return io_failed(s);
	}
	unlink(path);
	free(path);
	return 0;
}

/* Write the buffered contents; a short write is retried, no space is ENOSPC. */
static int spill_flush(struct tvh_snap *s)
{
	size_t done = 0;

	while (done < s->wlen) {
		ssize_t n = write(s->fd, s->wbuf + done, s->wlen - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!n)
				errno = ENOSPC;
			return io_failed(s);
		}
		done += (size_t)n;
	}
	s->wlen = 0;
	return 0;
}

/* Append a verified content to the file; *off: where it will be. */
static int spill(struct tvh_snap *s, const uint8_t *page, uint64_t *off)
{
	int ret;

	if (s->err)
		return s->err;
	if (s->fd < 0) {
		ret = spill_open(s);
		if (ret)
			return ret;
	}
	if (!s->wbuf) {
		s->wbuf = malloc((size_t)WBUF_PAGES * TV_CODE_PAGE);
		if (!s->wbuf)
			return -TVH_ERR_NOMEM;
	}
	memcpy(s->wbuf + s->wlen, page, TV_CODE_PAGE);
	s->wlen += TV_CODE_PAGE;
	*off = s->file_len;
	s->file_len += TV_CODE_PAGE;
	if (s->wlen == (size_t)WBUF_PAGES * TV_CODE_PAGE)
		return spill_flush(s);
	return 0;
}

/* At finish: the rest written, the file mapped read-only, the descriptor closed. */
static int spill_map(struct tvh_snap *s)
{
	void *m;
	int ret;

	if (s->fd < 0 || !s->file_len)
		return 0;
	ret = spill_flush(s);
	if (ret)
		return ret;
	free(s->wbuf);
	s->wbuf = NULL;
	/* MAP_SHARED: clean file pages the kernel may drop and read again. */
	m = mmap(NULL, (size_t)s->file_len, PROT_READ, MAP_SHARED, s->fd, 0);
	if (m == MAP_FAILED)
		return io_failed(s);
	s->map = m;
	close(s->fd);
	s->fd = -1;
	return 0;
}

static int add_chunk(struct tvh_snap *s, uint64_t hash, uint32_t chunk,
		     const uint8_t *bytes)
{
	struct content *c = content_get(s, hash);

	if (!c)
		return -TVH_ERR_NOMEM;
	if (c->state != SLOT_ASSEMBLING)
		return 0;                /* sent again (two CPUs raced): have it */
	if (!c->u.page) {
		c->u.page = malloc(TV_CODE_PAGE);
		if (!c->u.page)
			return -TVH_ERR_NOMEM;
	}
	memcpy(c->u.page + (size_t)chunk * TV_CODE_CHUNK, bytes, TV_CODE_CHUNK);
	c->have |= (uint8_t)(1u << chunk);
	if (c->have != ALL_CHUNKS)
		return 0;
	if (tv_code_hash(c->u.page) == hash) {
		if (s->st.mem_bytes + TV_CODE_PAGE > s->spill_bytes) {
			uint64_t off;
			int ret = spill(s, c->u.page, &off);

			if (ret)
				return ret;
			free(c->u.page);
			c->u.off = off;
			c->state = SLOT_FILE;
			s->st.spilled_bytes += TV_CODE_PAGE;
		} else {
			c->state = SLOT_GOOD;
			s->st.mem_bytes += TV_CODE_PAGE;
		}
		s->st.contents++;
		s->st.bytes += TV_CODE_PAGE;
	} else {
		/* Damaged on the way, or chunks of two contents: never guess. */
		s->st.bad_hash++;
		c->have = 0;             /* a later good copy may still come */
	}
	return 0;
}

/* ---- building ------------------------------------------------------------- */

/* "64M", "0", "1g": bytes with an optional K, M or G; false when not that. */
static bool parse_size(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long n;
	unsigned shift = 0;

	if (!v || *v < '0' || *v > '9')
		return false;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno)
		return false;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end || (shift && n > (UINT64_MAX >> shift)))
		return false;
	*out = (uint64_t)n << shift;
	return true;
}

void tvh_snap_opts_default(struct tvh_snap_opts *o)
{
	const char *dir = getenv("TMPDIR");

	o->spill_bytes = TVH_SNAP_SPILL_DEFAULT;
	(void)parse_size(getenv("TVH_SNAP_SPILL_BYTES"), &o->spill_bytes);
	o->dir = dir && *dir ? dir : "/tmp";
}

struct tvh_snap *tvh_snap_new_opts(const struct tvh_snap_opts *opts)
{
	struct tvh_snap_opts d;
	struct tvh_snap *s;

	if (!opts) {
		tvh_snap_opts_default(&d);
		opts = &d;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fd = -1;
	s->spill_bytes = opts->spill_bytes;
	s->dir = strdup(opts->dir ? opts->dir : "/tmp");
	if (!s->dir) {
		free(s);
		return NULL;
	}
	return s;
}

struct tvh_snap *tvh_snap_new(void)
{
	return tvh_snap_new_opts(NULL);
}

static int add_code(struct tvh_snap *s, uint32_t cpu, const struct trace_event *r)
{
	struct snapshot *sn;

	s->st.records++;
	if (r->info & TV_CODEF_NEW)
		s->st.new_records++;
	if (r->info & TV_CODEF_REARM)
		s->st.rearms++;
	if (r->info & TV_CODEF_USER)
		s->st.user++;
	if (!(r->info & TV_CODEF_LINEAR))
		s->st.no_linear++;
	if (s->nsnaps == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 256;
		struct snapshot *v = realloc(s->snaps, cap * sizeof(*v));

		if (!v)
			return -TVH_ERR_NOMEM;
		s->snaps = v;
		s->cap = cap;
	}
	sn = &s->snaps[s->nsnaps++];
	memset(sn, 0, sizeof(*sn));
	sn->gpa = r->u.code.gpa & PAGE_MASK;
	sn->linear = r->u.code.linear & PAGE_MASK;
	sn->cr3 = r->u.code.cr3;
	sn->tsc = r->tsc;
	sn->hash = r->u.code.hash;
	sn->cpu = cpu;
	sn->flags = r->info;
	return 0;
}

/* A firmware image's physical extent (IMAGE records name firmware by physical base). */
static int add_fw_image(struct tvh_snap *s, uint64_t base, uint64_t size)
{
	uint64_t lo = base & PAGE_MASK, hi = (base + size + TV_CODE_PAGE - 1) & PAGE_MASK;

	if (!size || hi <= lo || hi - lo > (1ull << 32))   /* wrapped or absurd: not an extent */
		return 0;
	if (s->nfw == s->fw_cap) {
		size_t cap = s->fw_cap ? 2 * s->fw_cap : 64;
		struct fw_extent *v = realloc(s->fw, cap * sizeof(*v));

		if (!v)
			return -TVH_ERR_NOMEM;
		s->fw = v;
		s->fw_cap = cap;
	}
	s->fw[s->nfw++] = (struct fw_extent){ lo, hi };
	return 0;
}

int tvh_snap_add(struct tvh_snap *s, const struct tvh_event *ev)
{
	const struct trace_event *r = ev->rec;

	if (s->err)
		return s->err;
	if (s->finished || !r)
		return 0;
	if (ev->kind == TVH_EV_MALFORMED) {
		if (r->type == TV_REC_CODE || r->type == TV_REC_CODE_DATA)
			s->st.bad_records++;
		return 0;
	}
	if (ev->kind != TVH_EV_RECORD)
		return 0;
	if (r->type == TV_REC_CODE)
		return add_code(s, ev->cpu, r);
	if (r->type == TV_REC_IMAGE && r->u.image.kind == TV_IMG_FIRMWARE)
		return add_fw_image(s, r->u.image.base, r->u.image.size);
	if (r->type != TV_REC_CODE_DATA)
		return 0;
	s->st.data_records++;
	if (r->aux >= TV_CODE_CHUNKS) {  /* the reader checks it; a store never trusts */
		s->st.bad_records++;
		return 0;
	}
	return add_chunk(s, r->u.code_data.hash, r->aux, r->u.code_data.bytes);
}

static int cmp_gpa_time(const void *a, const void *b)
{
	const struct snapshot *x = a, *y = b;

	if (x->gpa != y->gpa)
		return x->gpa < y->gpa ? -1 : 1;
	if (x->tsc != y->tsc)
		return x->tsc < y->tsc ? -1 : 1;
	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

static int cmp_linear_time(const void *a, const void *b)
{
	const struct snapshot *x = *(const struct snapshot *const *)a;
	const struct snapshot *y = *(const struct snapshot *const *)b;

	if (x->linear != y->linear)
		return x->linear < y->linear ? -1 : 1;
	if (x->tsc != y->tsc)
		return x->tsc < y->tsc ? -1 : 1;
	return x < y ? -1 : x > y;
}

/*
 * Kernel pages executed under a second linear address.  A snapshot is
 * taken at a page's first execution after each change, under the linear
 * address of that execution; the same guest-physical page executed
 * through another mapping costs no exit and brings no record.  Linux runs
 * its first instructions through the identity mapping (startup_64 at its
 * physical address), then the same pages through its high mapping: in the
 * fixture's boot, page 0x2401000 (__x86_indirect_thunk_rax) was
 * snapshotted at linear 0x2401000, and under 0xffffffff81e01000 only once
 * alternatives had patched it.  A lookup at the high address before then
 * found only the patched page (rule 2), and the retpoline decoded as
 * `jmp *%rax`: the same packets, until a VM exit fell inside it ("trace
 * stream does not match query", 64 times in a whole boot).  So: an
 * upper-half linear page whose kernel snapshots all name one gpa also
 * sees every other kernel snapshot of that gpa, whatever linear address it
 * was taken under (a copy at this linear page, same start and end: a
 * gpa's contents follow each other in time whatever the mapping).  User
 * pages are left alone: a lower-half page maps different gpas in
 * different processes and over time.  Returns 0 or -TVH_ERR_NOMEM.
 */
struct alias_pair {
	uint64_t linear, gpa;
};

static int cmp_pair_linear(const void *a, const void *b)
{
	const struct alias_pair *x = a, *y = b;

	if (x->linear != y->linear)
		return x->linear < y->linear ? -1 : 1;
	return x->gpa < y->gpa ? -1 : x->gpa > y->gpa;
}

static int cmp_pair_gpa(const void *a, const void *b)
{
	const struct alias_pair *x = a, *y = b;

	if (x->gpa != y->gpa)
		return x->gpa < y->gpa ? -1 : 1;
	return x->linear < y->linear ? -1 : x->linear > y->linear;
}

static bool alias_kernel(const struct snapshot *sn)
{
	return sn->page && (sn->flags & TV_CODEF_LINEAR) && !(sn->flags & TV_CODEF_USER);
}

/* First index of gpa in snaps[0, n) (sorted by gpa, then time). */
static size_t chain_of(const struct snapshot *v, size_t n, uint64_t gpa)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].gpa < gpa)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int add_aliases(struct tvh_snap *s)
{
	size_t nreal = s->nsnaps, np = 0, u = 0, extra = 0;
	struct alias_pair *p = malloc((nreal ? nreal : 1) * sizeof(*p));

	if (!p)
		return -TVH_ERR_NOMEM;
	for (size_t i = 0; i < nreal; i++)
		if (alias_kernel(&s->snaps[i]) && (s->snaps[i].linear >> 63))
			p[np++] = (struct alias_pair){ s->snaps[i].linear, s->snaps[i].gpa };
	/* One pair per linear page that names a single gpa. */
	qsort(p, np, sizeof(*p), cmp_pair_linear);
	for (size_t i = 0; i < np;) {
		size_t j = i + 1;
		bool single = true;

		for (; j < np && p[j].linear == p[i].linear; j++)
			if (p[j].gpa != p[i].gpa)
				single = false;
		if (single)
			p[u++] = p[i];
		i = j;
	}
	qsort(p, u, sizeof(*p), cmp_pair_gpa);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < u; i++) {
			for (size_t m = chain_of(s->snaps, nreal, p[i].gpa);
			     m < nreal && s->snaps[m].gpa == p[i].gpa; m++) {
				struct snapshot *c;

				if (!alias_kernel(&s->snaps[m]) || s->snaps[m].linear == p[i].linear)
					continue;
				if (!pass) {
					extra++;
					continue;
				}
				c = &s->snaps[s->nsnaps++];
				*c = s->snaps[m];
				c->linear = p[i].linear;
				s->st.aliases++;
			}
		}
		if (!pass && extra && nreal + extra > s->cap) {
			struct snapshot *v = realloc(s->snaps, (nreal + extra) * sizeof(*v));

			if (!v) {
				free(p);
				return -TVH_ERR_NOMEM;
			}
			s->snaps = v;
			s->cap = nreal + extra;
		}
	}
	free(p);
	return 0;
}

/*
 * Firmware runtime code under the OS's mapping of it.  The firmware runs
 * its runtime drivers at their physical addresses; SetVirtualAddressMap
 * then moves each runtime region to one virtual address (Linux: below
 * 0xffffffff00000000) and applies the images' relocations there.  Pages a
 * relocation wrote are re-armed and snapshotted again at their first
 * execution through the new mapping; pages it did not write run through
 * it with no exit, so the only snapshots of such a page are under its
 * physical address.  In the fixture's boot, GetVariable at
 * 0xfffffffeff86d000 called into 0xfffffffeff8a5000 (gpa 0x3f8a5000,
 * snapshotted only at linear 0x3f8a5000): "no memory mapped", 6 times.
 * So: within one firmware IMAGE record's physical extent, when every
 * upper-half kernel snapshot names one offset (linear - gpa), each other
 * executed page of the extent with no snapshot at gpa + offset gets copies
 * of its kernel snapshots there (same start and end: its contents in
 * time, whatever the mapping).  An extent with two offsets (the OS mapped
 * its regions apart) is left alone and counted; a linear page some other
 * gpa's snapshot holds is never filled.  nsorted: snaps[0, nsorted) are
 * sorted by gpa and time.  Returns 0 or -TVH_ERR_NOMEM.
 */
static int cmp_extent(const void *a, const void *b)
{
	const struct fw_extent *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool has_u64(const uint64_t *v, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo] == key;
}

static int add_runtime_maps(struct tvh_snap *s, size_t nsorted)
{
	size_t nall = s->nsnaps, nlin = 0, extra = 0, nfw = 0;
	uint64_t *lin;

	if (!s->nfw || !nsorted)
		return 0;
	/* Upper-half linear pages some snapshot holds (the sorted part and the aliases). */
	lin = malloc(nall * sizeof(*lin));
	if (!lin)
		return -TVH_ERR_NOMEM;
	for (size_t i = 0; i < nall; i++)
		if (alias_kernel(&s->snaps[i]) && (s->snaps[i].linear >> 63))
			lin[nlin++] = s->snaps[i].linear;
	qsort(lin, nlin, sizeof(*lin), cmp_u64);
	qsort(s->fw, s->nfw, sizeof(*s->fw), cmp_extent);
	for (size_t i = 0; i < s->nfw; i++)          /* the same image, recorded again */
		if (!nfw || s->fw[i].lo != s->fw[nfw - 1].lo || s->fw[i].hi != s->fw[nfw - 1].hi)
			s->fw[nfw++] = s->fw[i];
	s->nfw = nfw;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t e = 0; e < s->nfw; e++) {
			size_t first = chain_of(s->snaps, nsorted, s->fw[e].lo), m;
			uint64_t off = 0;
			bool have = false, two = false;

			for (m = first; m < nsorted && s->snaps[m].gpa < s->fw[e].hi; m++) {
				const struct snapshot *sn = &s->snaps[m];

				if (!alias_kernel(sn) || !(sn->linear >> 63) || sn->linear == sn->gpa)
					continue;
				if (have && sn->linear - sn->gpa != off)
					two = true;
				off = sn->linear - sn->gpa;
				have = true;
			}
			if (!have)
				continue;
			if (two) {
				if (pass)
					s->st.runtime_conflicts++;
				continue;
			}
			for (m = first; m < nsorted && s->snaps[m].gpa < s->fw[e].hi;) {
				uint64_t gpa = s->snaps[m].gpa, at = gpa + off;
				size_t end = m;

				while (end < nsorted && s->snaps[end].gpa == gpa)
					end++;
				if (!has_u64(lin, nlin, at)) {
					for (size_t k = m; k < end; k++) {
						struct snapshot *c;

						if (!alias_kernel(&s->snaps[k]))
							continue;
						if (!pass) {
							extra++;
							continue;
						}
						c = &s->snaps[s->nsnaps++];
						*c = s->snaps[k];
						c->linear = at;
						s->st.runtime_maps++;
					}
				}
				m = end;
			}
		}
		if (!pass && extra && s->nsnaps + extra > s->cap) {
			struct snapshot *v = realloc(s->snaps, (s->nsnaps + extra) * sizeof(*v));

			if (!v) {
				free(lin);
				return -TVH_ERR_NOMEM;
			}
			s->snaps = v;
			s->cap = s->nsnaps + extra;
		}
	}
	free(lin);
	return 0;
}

int tvh_snap_finish(struct tvh_snap *s)
{
	size_t n = 0;
	int ret;

	if (s->err) {
		errno = s->io_errno;
		return s->err;
	}
	if (s->finished)
		return 0;
	ret = spill_map(s);
	if (ret)
		return ret;
	for (size_t k = 0; k < s->tab_size; k++) {
		struct content *c = &s->tab[k];

		if (c->state == SLOT_ASSEMBLING && c->have)
			s->st.missing_chunks +=
				TV_CODE_CHUNKS - (uint64_t)__builtin_popcount(c->have);
		/* Partial contents never complete now: their memory goes back. */
		if (c->state == SLOT_ASSEMBLING) {
			free(c->u.page);
			c->u.page = NULL;
		}
	}
	/* Arrival order is lost here; nothing after finish needs it. */
	if (s->nsnaps)
		qsort(s->snaps, s->nsnaps, sizeof(*s->snaps), cmp_gpa_time);
	for (size_t i = 0; i < s->nsnaps; i++) {
		struct snapshot *sn = &s->snaps[i];
		const struct content *c = content_find(s, sn->hash);

		sn->page = !c ? NULL : c->state == SLOT_GOOD ? c->u.page :
			   c->state == SLOT_FILE ? s->map + c->u.off : NULL;
		if (!sn->page)
			s->st.missing_data++;
		if (!i || s->snaps[i - 1].gpa != sn->gpa)
			s->st.pages++;
		sn->end = i + 1 < s->nsnaps && s->snaps[i + 1].gpa == sn->gpa ?
			  s->snaps[i + 1].tsc : UINT64_MAX;
		if (sn->page && (sn->flags & TV_CODEF_LINEAR))
			n++;
	}
	{
		size_t nsorted = s->nsnaps;
		int aret = add_aliases(s);

		if (!aret)
			aret = add_runtime_maps(s, nsorted);
		if (aret)
			return aret;
	}
	n += (size_t)(s->st.aliases + s->st.runtime_maps);
	if (n) {
		s->by_linear = malloc(n * sizeof(*s->by_linear));
		if (!s->by_linear)
			return -TVH_ERR_NOMEM;
		for (size_t i = 0; i < s->nsnaps; i++)
			if (s->snaps[i].page && (s->snaps[i].flags & TV_CODEF_LINEAR))
				s->by_linear[s->nlinear++] = &s->snaps[i];
		qsort(s->by_linear, s->nlinear, sizeof(*s->by_linear), cmp_linear_time);
	}
	s->finished = true;
	return 0;
}

static int load_fn(void *ctx, const struct tvh_event *ev)
{
	return tvh_snap_add(ctx, ev);
}

int tvh_snap_load_opts(struct tvt_reader *r, struct tvh_progress *progress,
		       const struct tvh_snap_opts *opts, struct tvh_snap **out)
{
	struct tvh_walk_opts wo = { .cpu = -1, .want_pt = false, .progress = progress };
	struct tvh_snap *s = tvh_snap_new_opts(opts);
	struct tvh_stats st;
	int ret;

	*out = NULL;
	if (!s)
		return -TVH_ERR_NOMEM;
	ret = tvh_walk(r, &wo, load_fn, s, &st);
	tvh_stats_free(&st);
	if (!ret)
		ret = tvh_snap_finish(s);
	if (ret) {
		int e = s->err ? s->io_errno : errno;

		tvh_snap_free(s);
		errno = e;               /* -TVH_ERR_IO: the spill file's errno */
		return ret;
	}
	*out = s;
	return 0;
}

int tvh_snap_load(struct tvt_reader *r, struct tvh_progress *progress,
		  struct tvh_snap **out)
{
	return tvh_snap_load_opts(r, progress, NULL, out);
}

void tvh_snap_free(struct tvh_snap *s)
{
	if (!s)
		return;
	for (size_t k = 0; k < s->tab_size; k++)
		if (s->tab[k].state == SLOT_GOOD || s->tab[k].state == SLOT_ASSEMBLING)
			free(s->tab[k].u.page);
	if (s->map)
		munmap((void *)s->map, (size_t)s->file_len);
	if (s->fd >= 0)
		close(s->fd);
	free(s->wbuf);
	free(s->dir);
	free(s->tab);
	free(s->snaps);
	free(s->fw);
	free(s->by_linear);
	free(s);
}

bool tvh_snap_empty(const struct tvh_snap *s)
{
	return !s || !s->nlinear;
}

void tvh_snap_get_stats(const struct tvh_snap *s, struct tvh_snap_stats *st)
{
	if (s)
		*st = s->st;
	else
		memset(st, 0, sizeof(*st));
}

/* ---- lookup --------------------------------------------------------------- */

/* Index of the first by_linear entry whose page is >= linear. */
static size_t first_of(const struct tvh_snap *s, uint64_t linear)
{
	size_t lo = 0, hi = s->nlinear;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->by_linear[mid]->linear < linear)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

enum {
	R_SAME_VALID, R_SAME_NEXT, R_ANY_VALID, R_ANY_NEXT, R_SAME_PAST, R_ANY_PAST,
	R_MAX
};

int tvh_snap_lookup(const struct tvh_snap *s, uint64_t cr3, uint64_t ip,
		    uint64_t tsc, struct tvh_snap_hit *hit)
{
	const struct snapshot *best[R_MAX] = { NULL };
	uint64_t linear = ip & PAGE_MASK, q = cr3 & TVH_SNAP_CR3_MASK;

	if (!s || !s->finished)
		return -TVH_ERR_NOT_FOUND;
	/* Ascending time: "latest" rules take the last match, "next" the first. */
	for (size_t i = first_of(s, linear);
	     i < s->nlinear && s->by_linear[i]->linear == linear; i++) {
		const struct snapshot *sn = s->by_linear[i];
		bool same = !q || !(sn->flags & TV_CODEF_USER) ||
			    (sn->cr3 & TVH_SNAP_CR3_MASK) == q;

		if (sn->tsc <= tsc && tsc < sn->end) {
			best[same ? R_SAME_VALID : R_ANY_VALID] = sn;
			if (same)
				best[R_ANY_VALID] = sn;
		} else if (sn->tsc > tsc) {
			if (same && !best[R_SAME_NEXT])
				best[R_SAME_NEXT] = sn;
			if (!best[R_ANY_NEXT])
				best[R_ANY_NEXT] = sn;
		} else {
			if (same)
				best[R_SAME_PAST] = sn;
			best[R_ANY_PAST] = sn;
		}
	}
	for (unsigned r = 0; r < R_MAX; r++) {
		const struct snapshot *sn = best[r];

		if (!sn)
			continue;
		hit->page = sn->page;
		hit->linear = sn->linear;
		hit->gpa = sn->gpa;
		hit->cr3 = sn->cr3;
		hit->start = sn->tsc;
		hit->end = sn->end;
		hit->hash = sn->hash;
		hit->flags = sn->flags;
		hit->cpu = sn->cpu;
		return 0;
	}
	return -TVH_ERR_NOT_FOUND;
}

void tvh_snap_span(const struct tvh_snap *s, uint64_t ip, uint64_t tsc,
		   uint64_t *lo, uint64_t *hi)
{
	uint64_t linear = ip & PAGE_MASK;

	*lo = 0;
	*hi = UINT64_MAX;
	if (!s || !s->finished)
		return;
	for (size_t i = first_of(s, linear);
	     i < s->nlinear && s->by_linear[i]->linear == linear; i++) {
		const struct snapshot *sn = s->by_linear[i];
		const uint64_t t[2] = { sn->tsc, sn->end };

		for (unsigned k = 0; k < 2; k++) {
			if (t[k] == UINT64_MAX)
				continue;
			if (t[k] <= tsc && t[k] > *lo)
				*lo = t[k];
			else if (t[k] > tsc && t[k] < *hi)
				*hi = t[k];
		}
	}
}

size_t tvh_snap_read(const struct tvh_snap *s, uint64_t cr3, uint64_t ip,
		     uint64_t tsc, uint8_t *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		struct tvh_snap_hit hit;
		uint64_t at = ip + done;
		size_t off = (size_t)(at & (TV_CODE_PAGE - 1));
		size_t n = TV_CODE_PAGE - off;

		if (tvh_snap_lookup(s, cr3, at, tsc, &hit))
			break;
		if (n > len - done)
			n = len - done;
		memcpy(buf + done, hit.page + off, n);
		done += n;
	}
	return done;
}

/* ---- cursor --------------------------------------------------------------- */

void tvh_snap_cursor_init(struct tvh_snap_cursor *c, const struct tvh_snap *s)
{
	memset(c, 0, sizeof(*c));
	c->s = s;
	for (unsigned i = 0; i < TVH_SNAP_CURSOR_WAYS; i++)
		c->e[i].linear = 1;
}

size_t tvh_snap_cursor_read(struct tvh_snap_cursor *c, uint64_t cr3, uint64_t ip,
			    uint64_t tsc, uint8_t *buf, size_t len)
{
	uint64_t q = cr3 & TVH_SNAP_CR3_MASK;
	size_t done = 0;

	while (done < len) {
		uint64_t at = ip + done, linear = at & PAGE_MASK;
		size_t off = (size_t)(at & (TV_CODE_PAGE - 1));
		size_t n = TV_CODE_PAGE - off;
		unsigned w = (unsigned)((linear >> 12) % TVH_SNAP_CURSOR_WAYS);

		if (c->e[w].linear != linear || c->e[w].cr3 != q || c->e[w].tsc != tsc) {
			struct tvh_snap_hit hit;

			c->misses++;
			c->e[w].linear = linear;
			c->e[w].cr3 = q;
			c->e[w].tsc = tsc;
			c->e[w].page = tvh_snap_lookup(c->s, q, at, tsc, &hit) ? NULL : hit.page;
		} else {
			c->hits++;
		}
		if (!c->e[w].page)
			break;
		if (n > len - done)
			n = len - done;
		memcpy(buf + done, c->e[w].page + off, n);
		done += n;
	}
	return done;
}
