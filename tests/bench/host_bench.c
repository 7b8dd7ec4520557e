/* SPDX-License-Identifier: MIT */
/*
 * host_bench.c - host-tools throughput (tests/bench/host_bench.sh runs it):
 *
 *   host_bench pt MIB THREADS
 *     Builds MIB MiB of Intel PT with libipt's encoder for a known loop
 *     (8 NOPs and a taken JE back, a PSB+ every 4 KiB) and decodes it three
 *     ways, best of 3 each: a plain libipt instruction-flow loop
 *     (pt_insn_sync_forward / pt_insn_next / pt_insn_event, what ptxed
 *     does), tvh_pt_decode (the host tools' decoder, one thread) and
 *     tvh_pt_decode_parallel (THREADS threads, cut at PSBs).  All three
 *     must count the same instructions.  Prints one line of key=value.
 *
 *   host_bench tvt OUT.tvt ELF RECORDS CPUS
 *     Writes a trace of RECORDS branch records (3 of 4 compact) over CPUS
 *     CPUs whose addresses lie in ELF's executable segments, for timing
 *     `tracevisor script/report --image ELF` on it.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host-tools/lib/le.h"
#include "host-tools/lib/pt.h"
#include "host-tools/lib/sym.h"
#include "host-tools/lib/tvt.h"
#include "vmm/trace/format.h"

#define CODE 0x1000u
static const uint8_t code[] = { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
				0x74, 0xf6 };              /* je CODE */

static int read_code(uint8_t *buf, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *ctx)
{
	(void)asid;
	(void)ctx;
	if (ip < CODE || ip - CODE >= sizeof(code))
		return -pte_nomap;
	if (size > sizeof(code) - (ip - CODE))
		size = sizeof(code) - (ip - CODE);
	memcpy(buf, code + (ip - CODE), size);
	return (int)size;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void enc(struct pt_encoder *e, struct pt_packet *p)
{
	if (pt_enc_next(e, p) < 0) {
		fprintf(stderr, "host_bench: encoder failed\n");
		exit(1);
	}
	memset(p, 0, sizeof(*p));
}

/* The stream; *insns: instructions it encodes. */
static uint8_t *make_pt(size_t size, size_t *len, uint64_t *insns)
{
	uint8_t *buf = malloc(size + 4096);
	struct pt_config cfg;
	struct pt_encoder *e;
	struct pt_packet p;
	uint64_t off = 0, next_psb = 0, taken = 0;
	int first = 1;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + size + 4096;
	e = pt_alloc_encoder(&cfg);
	memset(&p, 0, sizeof(p));
	while (off < size) {
		if (off >= next_psb) {
			p.type = ppt_psb;
			enc(e, &p);
			p.type = ppt_mode;
			p.payload.mode.leaf = pt_mol_exec;
			p.payload.mode.bits.exec.csl = 1;
			enc(e, &p);
			if (!first) {
				p.type = ppt_fup;
				p.payload.ip.ipc = pt_ipc_sext_48;
				p.payload.ip.ip = CODE;
				enc(e, &p);
			}
			p.type = ppt_psbend;
			enc(e, &p);
			if (first) {
				p.type = ppt_tip_pge;
				p.payload.ip.ipc = pt_ipc_sext_48;
				p.payload.ip.ip = CODE;
				enc(e, &p);
				first = 0;
			}
			next_psb += 4096;
		}
		p.type = ppt_tnt_8;
		p.payload.tnt.bit_size = 6;
		p.payload.tnt.payload = 0x3f;       /* six taken JEs */
		enc(e, &p);
		taken += 6;
		pt_enc_get_offset(e, &off);
	}
	/* A last not-taken JE runs off the code: the decoder stops there. */
	p.type = ppt_tnt_8;
	p.payload.tnt.bit_size = 1;
	p.payload.tnt.payload = 0;
	enc(e, &p);
	p.type = ppt_tip_pgd;
	p.payload.ip.ipc = pt_ipc_suppressed;
	enc(e, &p);
	pt_enc_get_offset(e, &off);
	pt_free_encoder(e);
	*len = (size_t)off;
	*insns = taken * 9 + 9;
	return buf;
}

/* What ptxed does, counting instead of printing. */
static uint64_t plain_libipt(const uint8_t *buf, size_t len, struct pt_image *img)
{
	struct pt_config cfg;
	struct pt_insn_decoder *d;
	uint64_t n = 0;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	d = pt_insn_alloc_decoder(&cfg);
	pt_insn_set_image(d, img);
	for (;;) {
		int st = pt_insn_sync_forward(d);

		if (st < 0)
			break;
		for (;;) {
			struct pt_insn insn;
			struct pt_event ev;

			while (st & pts_event_pending) {
				st = pt_insn_event(d, &ev, sizeof(ev));
				if (st < 0)
					break;
			}
			if (st < 0 || (st & pts_eos))
				break;
			st = pt_insn_next(d, &insn, sizeof(insn));
			if (st < 0)
				break;
			n++;
		}
	}
	pt_insn_free_decoder(d);
	return n;
}

static int bench_pt(size_t mib, unsigned threads)
{
	struct pt_image *imgs[64];
	struct tvh_pt_opts o = { 0 };
	struct tvh_pt_stats st;
	size_t len;
	uint64_t want, n;
	uint8_t *buf = make_pt(mib << 20, &len, &want);
	double best[3] = { 1e30, 1e30, 1e30 };
	uint64_t got[3] = { 0, 0, 0 };

	if (threads < 1 || threads > 64)
		threads = 1;
	for (unsigned i = 0; i < threads; i++) {
		imgs[i] = pt_image_alloc("bench");
		pt_image_set_callback(imgs[i], read_code, NULL);
	}
	for (int rep = 0; rep < 3; rep++) {
		double t = now();

		n = plain_libipt(buf, len, imgs[0]);
		t = now() - t;
		got[0] = n;
		if (t < best[0])
			best[0] = t;
		t = now();
		tvh_pt_decode(buf, len, 0, imgs[0], &o, NULL, NULL, &st);
		t = now() - t;
		got[1] = st.insns;
		if (t < best[1])
			best[1] = t;
		t = now();
		tvh_pt_decode_parallel(buf, len, 0, imgs, threads, &o, NULL, NULL, &st);
		t = now() - t;
		got[2] = st.insns;
		if (t < best[2])
			best[2] = t;
	}
	printf("pt_bytes=%zu pt_insns=%" PRIu64 " threads=%u "
	       "libipt_mib_s=%.1f single_mib_s=%.1f parallel_mib_s=%.1f "
	       "libipt_minsn_s=%.1f single_ratio=%.2f parallel_ratio=%.2f%s\n",
	       len, got[0], threads, (double)len / 1048576 / best[0],
	       (double)len / 1048576 / best[1], (double)len / 1048576 / best[2],
	       (double)got[0] / 1e6 / best[0], best[0] / best[1], best[0] / best[2],
	       got[0] == got[1] && got[1] == got[2] ? "" : " MISMATCH");
	for (unsigned i = 0; i < threads; i++)
		pt_image_free(imgs[i]);
	free(buf);
	(void)want;
	return got[0] == got[1] && got[1] == got[2] ? 0 : 1;
}

static int bench_tvt(const char *out, const char *elf, uint64_t records, unsigned cpus)
{
	struct tvh_symtab st;
	struct tvt_file_info info = { .trace_version = TV_TRACE_VERSION, .machine = "bench" };
	struct tvt_writer w;
	const struct tvh_module *m;
	uint64_t lo = 0, span = 0, x = 88172645463325252ull;
	uint8_t *buf;
	FILE *f;

	tvh_symtab_init(&st);
	if (tvh_symtab_add(&st, elf) < 0) {
		fprintf(stderr, "host_bench: %s: %s\n", elf, st.error);
		return 1;
	}
	m = &st.mods[0];
	for (unsigned i = 0; i < m->nsegs; i++)
		if (m->segs[i].flags & 1) {           /* PF_X */
			lo = m->segs[i].vaddr + m->bias;
			span = m->segs[i].memsz;
			break;
		}
	f = fopen(out, "wb");
	if (!f || !span || tvt_writer_init(&w, f, &info))
		return 1;
	buf = malloc(1 << 20);
	for (unsigned c = 0; c < cpus; c++) {
		uint64_t per = records / cpus, seq = 0, prev_to = 0;

		while (seq < per) {
			size_t n = 0;
			uint64_t first = seq;

			while (seq < per && n + 32 <= (1u << 20)) {
				uint64_t from, to;

				x ^= x << 13; x ^= x >> 7; x ^= x << 17;
				to = lo + (x % span);
				from = prev_to + (x >> 40) % 64;
				if (seq % 4 && seq != first && from - prev_to < 1u << 16) {
					buf[n] = TV_REC_BRANCH_COMPACT;
					buf[n + 1] = TV_BR_JCC;
					tvh_put_le16(buf + n + 2, 16);
					tvh_put_le32(buf + n + 4, (uint32_t)(from - prev_to));
					tvh_put_le64(buf + n + 8, to);
					n += 16;
				} else {
					buf[n] = TV_REC_BRANCH;
					buf[n + 1] = TV_BR_CALL;
					tvh_put_le16(buf + n + 2, TV_REC_BRANCH_SIZE);
					tvh_put_le32(buf + n + 4, 0);
					tvh_put_le64(buf + n + 8, from);
					tvh_put_le64(buf + n + 16, to);
					n += TV_REC_BRANCH_SIZE;
				}
				prev_to = to;
				seq++;
			}
			tvt_write_chunk(&w, c, TVT_KIND_RECORDS, first ? 0 : TVT_CHUNK_F_STREAM_START,
					first, buf, n);
		}
	}
	free(buf);
	tvh_symtab_free(&st);
	if (tvt_writer_finish(&w) || fclose(f))
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "pt"))
		return bench_pt(strtoul(argv[2], NULL, 0), (unsigned)strtoul(argv[3], NULL, 0));
	if (argc == 6 && !strcmp(argv[1], "tvt"))
		return bench_tvt(argv[2], argv[3], strtoull(argv[4], NULL, 0),
				 (unsigned)strtoul(argv[5], NULL, 0));
	fprintf(stderr, "usage: host_bench pt MIB THREADS | tvt OUT ELF RECORDS CPUS\n");
	return 2;
}
