/* SPDX-License-Identifier: MIT */
/*
 * pt_fixture.h - a small program assembled at test time and its Intel PT
 * trace, encoded packet by packet with libipt's encoder: the independent
 * ground truth for PT decoding (test_host_pt, test_host_cli).
 *
 *   _start: mov $3,%ecx
 *   i_call: call func          func: add $1,%edx
 *           dec %ecx                 ret
 *           jnz i_call
 *           lea target(%rip),%rax
 *           jmp *%rax    -> target: nop
 *                                   jmp *%rbx   (leaves: TIP.PGD OUTSIDE)
 */
#ifndef TVH_TEST_PT_FIXTURE_H
#define TVH_TEST_PT_FIXTURE_H

#include <intel-pt.h>
#include <stddef.h>
#include <stdint.h>

#define PTF_OUTSIDE 0xdead000ull

struct pt_fixture {
	char *elf;                       /* path, malloc'ed */
	uint64_t flow[32];               /* executed instructions, in order */
	unsigned nflow;
	struct {
		uint64_t from, to;
		enum pt_insn_class c;
	} taken[16];                     /* taken transfers, in order */
	unsigned ntaken;
};

/* Assembles the program (th_compile) and fills flow/taken; 0 or -1. */
int ptf_build(struct pt_fixture *f);
void ptf_free(struct pt_fixture *f);
uint64_t ptf_sym(const struct pt_fixture *f, const char *name);

/*
 * ptf_encode - append one whole run (PSB, PSBEND, MODE.Exec, TIP.PGE,
 * TNT, TIP, TIP.PGD) to buf at *len (cap bytes).  tnt_first: the first
 * TNT bit, 1 is the truth, 0 breaks the first compressed return.
 */
void ptf_encode(const struct pt_fixture *f, uint8_t *buf, size_t cap,
		size_t *len, int tnt_first);

/* The packets of a run, in order, and ptf_encode_at's pkt_off[] indexes. */
enum { PTF_PSB, PTF_PSBEND, PTF_MODE, PTF_TIP_PGE, PTF_TNT, PTF_TIP, PTF_TIP_PGD,
       PTF_NPACKETS };

/* ptf_encode that also gives each packet's offset in buf (pkt_off may be
 * NULL); pkt_off[PTF_NPACKETS] is the end of the run. */
void ptf_encode_at(const struct pt_fixture *f, uint8_t *buf, size_t cap,
		   size_t *len, int tnt_first, size_t pkt_off[PTF_NPACKETS + 1]);

/*
 * ptf_encode_cut - a stream with a loss in it, as the hypervisor writes
 * one (the lost bytes take no stream offsets): a run up to its TNT
 * (ending at *cut, where the TIP for `jmp *%rax` should come), then a
 * stray TNT (what the hardware wrote after the loss), then a whole run
 * whose PSB is at *resume.  Decoded straight across *cut, the stray TNT
 * is a decode error; split at *cut, both pieces decode cleanly.
 */
void ptf_encode_cut(const struct pt_fixture *f, uint8_t *buf, size_t cap,
		    size_t *len, size_t *cut, size_t *resume);

/*
 * ptf_encode_tsc - ptf_encode's run (truth bits) with time: a TSC packet
 * of tsc0 in the PSB+, then one before each of the six TNT bits (each in
 * its own 1-bit TNT packet) and before the TIP, tsc0 + k * step for the
 * k-th (k = 1..7).  Returns the number of TSC packets written (8).
 */
unsigned ptf_encode_tsc(const struct pt_fixture *f, uint8_t *buf, size_t cap,
			size_t *len, uint64_t tsc0, uint64_t step);

#endif /* TVH_TEST_PT_FIXTURE_H */
