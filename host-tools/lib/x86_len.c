/* SPDX-License-Identifier: MIT */
/*
 * x86_len.c - branch instruction lengths for drcov: vmm/x86_decode (the
 * MTF backend's decoder, SDM Vol. 2 opcode maps) in 64-bit mode, keeping
 * only control transfers.
 */
#include "host-tools/lib/x86_len.h"
#include "vmm/lib/x86_decode.h"

unsigned tvh_x86_branch_len(const uint8_t *p, size_t n)
{
	struct x86_insn insn;

	if (!p || x86_decode(p, n, X86_MODE_64, &insn) <= 0)
		return 0;
	return insn.branch != X86_BR_NONE ? insn.len : 0;
}
