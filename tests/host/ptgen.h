/* SPDX-License-Identifier: MIT */
/*
 * ptgen.h - random code layouts and Intel PT streams for them, encoded
 * with libipt's packet encoder, the way the hardware writes them: the
 * generator executes the code itself (random TNT outcomes and indirect
 * targets) and emits TNT/TIP/FUP/PGE/PGD/OVF/MODE/PIP/PSB+ and timing
 * packets (SDM 3C 33.3).  Input for the differential test of the fast
 * decoder against libipt (test_host_ptfast.c) and for benches.
 */
#ifndef TVH_TEST_PTGEN_H
#define TVH_TEST_PTGEN_H

#include <stddef.h>
#include <stdint.h>

#include "host-tools/lib/ptfast.h"

struct ptgen_opts {
	uint64_t seed;
	size_t bytes;            /* stop after about this much trace */
	unsigned psb_every;      /* bytes between PSB+ (0: only the first) */
	int retcomp;             /* compress returns (TNT bit) when possible */
	unsigned p_async;        /* per mille per block: FUP+TIP interrupt */
	unsigned p_disable;      /* per mille per indirect: TIP.PGD, later TIP.PGE */
	unsigned p_ovf;          /* per mille per block: OVF */
	unsigned p_mode;         /* per mille per indirect: MODE.Exec to another mode */
	unsigned p_timing;       /* per mille per packet: a timing packet */
	unsigned p_pip;          /* per mille per far branch: PIP (async paging) */
	unsigned nblocks;        /* blocks per region (64-bit; 32/16-bit: a quarter) */
	int long_tnt;            /* use long TNT packets too */
	int tsc_only;            /* timing packets: PAD, TSC and CBR only (no MTC, CYC) */
};

struct ptgen {
	struct tvh_ptf_image image;   /* the code */
	uint8_t *buf;                 /* the trace */
	size_t len;
	uint64_t branches;            /* taken branches the generator executed */
};

/* Build code and trace; 0 or -1 (encoder failure or no memory). */
int ptgen_make(struct ptgen *g, const struct ptgen_opts *o);
void ptgen_free(struct ptgen *g);

#endif /* TVH_TEST_PTGEN_H */
