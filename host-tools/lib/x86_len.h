/* SPDX-License-Identifier: MIT */
/*
 * x86_len.h - length of a control-transfer instruction (64-bit mode).
 *
 * Branch records give the address of the branch instruction (`from`),
 * not its length; drcov's basic blocks must include it.  The bytes are
 * decoded by vmm/x86_decode (every instruction of the SDM opcode maps,
 * Intel's 64-bit rules: the 66h prefix does not shorten a near branch's
 * rel32); only control transfers count: Jcc, JMP, CALL, RET, LOOP/JrCXZ,
 * far forms, SYSCALL/SYSRET, SYSENTER/SYSEXIT, INT n/INT3/INT1/INTO, IRET.
 * Anything else is "unknown" (0); the caller falls back.
 */
#ifndef TVH_X86_LEN_H
#define TVH_X86_LEN_H

#include <stddef.h>
#include <stdint.h>

/* Length in bytes of the branch at p[0..n), or 0 if not one we know or n is short. */
unsigned tvh_x86_branch_len(const uint8_t *p, size_t n);

#endif /* TVH_X86_LEN_H */
