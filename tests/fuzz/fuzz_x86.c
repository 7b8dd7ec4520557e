/* SPDX-License-Identifier: MIT */
/*
 * fuzz_x86.c - libFuzzer target: vmm/x86_decode in every mode, the branch
 * target computation, and the host tools' branch-length wrapper.
 * Checks the decoder's contract: a length in 1..15 that fits the input.
 */
#include <stdlib.h>

#include "host-tools/lib/x86_len.h"
#include "vmm/lib/x86_decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum x86_mode modes[] = { X86_MODE_16, X86_MODE_32, X86_MODE_64 };
	struct x86_insn insn;
	uint64_t target;
	unsigned blen;

	for (unsigned m = 0; m < 3; m++) {
		int n = x86_decode(data, size, modes[m], &insn);

		if (n > 0) {
			if (n > 15 || (size_t)n > size)
				abort();
			x86_branch_target(&insn, 0xfff0, &target);
		}
	}
	blen = tvh_x86_branch_len(data, size);
	if (blen > 15 || blen > size)
		abort();
	return 0;
}
