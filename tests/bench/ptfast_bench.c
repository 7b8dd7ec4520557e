/* SPDX-License-Identifier: MIT */
/*
 * ptfast_bench.c - the fast PT decoder (host-tools/lib/ptfast.c) against
 * a plain libipt instruction-flow loop (pt_insn_sync_forward /
 * pt_insn_next / pt_insn_event, what ptxed does), same stream, same code:
 *
 *   ptfast_bench MIB [THREADS]
 *
 * The stream is tests/host/ptgen.c's: random code (3000 blocks of 64-bit
 * code, some 32- and 16-bit), a random execution with RET compression,
 * PSB+ every 4 KiB, a few interrupts, TIP.PGD/PGE, OVF and mode changes.
 * Prints one key=value line: libipt (one thread), ptfast coverage mode,
 * taken-branch flow mode and the tools' flow (opts.libipt_branches, with
 * time: what script/report/coverage/timeline get), one thread, best of 3;
 * coverage and the tools' flow over 1..THREADS threads; the ratios
 * (libipt time / ptfast time), the instruction counts (ptfast's modes and
 * pieces must agree: MISMATCH otherwise; libipt's is printed beside), the
 * block cache's peak size and the process's peak RSS.
 *
 * Built by `make BUILD=... $BUILD/bench/ptfast_bench` (host-tools/host.mk);
 * run by tests/bench/ptfast_bench.sh in `make bench`.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <intel-pt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "host-tools/lib/ptfast.h"
#include "tests/host/ptgen.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t plain_libipt(const uint8_t *buf, size_t len, struct pt_image *img,
			     uint64_t *branches)
{
	struct pt_config cfg;
	struct pt_insn_decoder *d;
	uint64_t n = 0, br = 0;

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
			br += insn.iclass != ptic_other;
		}
	}
	pt_insn_free_decoder(d);
	*branches = br;
	return n;
}

static int count_branch(void *ctx, const struct tvh_ptf_item *it)
{
	uint64_t *n = ctx;

	if (it->kind == TVH_PTF_BRANCH)
		(*n)++;
	return 0;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 64;
	unsigned threads = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 2;
	struct ptgen_opts go = { .seed = 1, .bytes = mib << 20, .retcomp = 1,
				 .psb_every = 4096, .p_async = 1, .p_disable = 2,
				 .p_ovf = 0, .p_mode = 2, .p_timing = 30, .p_pip = 10,
				 .nblocks = 3000, .long_tnt = 1 };
	struct ptgen g;
	struct pt_image *img;
	struct tvh_ptf_opts cov = { .read = tvh_ptf_image_read, .coverage = true };
	struct tvh_ptf_opts flow = { .read = tvh_ptf_image_read };
	struct tvh_ptf_opts tools = { .read = tvh_ptf_image_read, .libipt_branches = true };
	double t_tools = 1e30, t_tpar[65];
	uint64_t n_tools = 0, n_tpar = 0;
	struct rusage ru;
	struct tvh_ptf_stats st;
	double t, t_ipt, t_cov = 1e30, t_flow = 1e30, t_par[65];
	uint64_t n_ipt, ipt_br, n_cov = 0, n_flow = 0, n_par = 0, nbr = 0, peak = 0;
	int mismatch = 0;

	if (threads < 1 || threads > 64)
		threads = 2;
	t = now();
	if (ptgen_make(&g, &go)) {
		fprintf(stderr, "ptfast_bench: generator failed\n");
		return 1;
	}
	fprintf(stderr, "ptfast_bench: %zu bytes of PT generated in %.1f s\n", g.len, now() - t);
	cov.read_ctx = flow.read_ctx = tools.read_ctx = &g.image;
	img = pt_image_alloc("bench");
	pt_image_set_callback(img, tvh_ptf_image_read, &g.image);
	t = now();
	n_ipt = plain_libipt(g.buf, g.len, img, &ipt_br);
	t_ipt = now() - t;
	for (int rep = 0; rep < 3; rep++) {
		struct tvh_ptf_decoder *d = tvh_ptf_alloc(&cov);
		struct tvh_ptf_cov c;

		t = now();
		tvh_ptf_decode(d, g.buf, g.len, 0, NULL, NULL, &st);
		tvh_ptf_coverage(d, &c);
		t = now() - t;
		if (t < t_cov)
			t_cov = t;
		n_cov = st.insns;
		if (st.peak_cache_bytes > peak)
			peak = st.peak_cache_bytes;
		tvh_ptf_cov_free(&c);
		tvh_ptf_free(d);
		d = tvh_ptf_alloc(&flow);
		nbr = 0;
		t = now();
		tvh_ptf_decode(d, g.buf, g.len, 0, count_branch, &nbr, &st);
		t = now() - t;
		if (t < t_flow)
			t_flow = t;
		n_flow = st.insns;
		tvh_ptf_free(d);
		d = tvh_ptf_alloc(&tools);
		t = now();
		tvh_ptf_decode(d, g.buf, g.len, 0, count_branch, &n_tools, &st);
		t = now() - t;
		if (t < t_tools)
			t_tools = t;
		tvh_ptf_free(d);
	}
	n_tools /= 3;
	for (unsigned k = 1; k <= threads; k++) {
		struct tvh_ptf_cov c;

		t_par[k] = 1e30;
		for (int rep = 0; rep < 3; rep++) {
			t = now();
			tvh_ptf_decode_parallel(g.buf, g.len, 0, &cov, k, NULL, NULL, &c, &st);
			t = now() - t;
			if (t < t_par[k])
				t_par[k] = t;
			n_par = c.insns;
			tvh_ptf_cov_free(&c);
		}
		mismatch |= n_par != n_cov;
		t_tpar[k] = 1e30;
		for (int rep = 0; rep < 3; rep++) {
			t = now();
			tvh_ptf_decode_parallel(g.buf, g.len, 0, &tools, k, NULL, NULL, NULL, &st);
			t = now() - t;
			if (t < t_tpar[k])
				t_tpar[k] = t;
			n_tpar = st.insns;
		}
		mismatch |= n_tpar != n_cov;
	}
	/* ptfast's modes and pieces must agree; libipt's count is printed
	 * (it differs where libipt refuses part of a generated stream). */
	mismatch |= n_cov != n_flow;
	printf("pt_bytes=%zu insns=%" PRIu64 " ptfast_insns=%" PRIu64 " branches=%" PRIu64
	       " libipt_s=%.3f libipt_minsn_s=%.1f cov_s=%.3f flow_s=%.3f"
	       " cov_ratio=%.1f flow_ratio=%.1f tools_s=%.3f tools_ratio=%.1f"
	       " tools_branches=%" PRIu64 " peak_cache_kib=%" PRIu64,
	       g.len, n_ipt, n_cov, nbr, t_ipt, (double)n_ipt / 1e6 / t_ipt, t_cov, t_flow,
	       t_ipt / t_cov, t_ipt / t_flow, t_tools, t_ipt / t_tools, n_tools, peak >> 10);
	for (unsigned k = 1; k <= threads; k++)
		printf(" cov_t%u_s=%.3f cov_t%u_ratio=%.1f tools_t%u_s=%.3f tools_t%u_ratio=%.1f",
		       k, t_par[k], k, t_ipt / t_par[k], k, t_tpar[k], k, t_ipt / t_tpar[k]);
	getrusage(RUSAGE_SELF, &ru);
	printf(" peak_rss_mib=%ld", ru.ru_maxrss >> 10);
	printf("%s\n", mismatch ? " MISMATCH" : "");
	pt_image_free(img);
	ptgen_free(&g);
	return mismatch;
}
