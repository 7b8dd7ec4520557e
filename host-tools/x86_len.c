/* SPDX-License-Identifier: MIT */
/*
 * x86_len.c - control-transfer instruction lengths (SDM 2A chapter 2:
 * prefixes, REX, ModR/M, SIB, displacement; opcode maps ).
 */
#include <stdbool.h>

#include "host-tools/x86_len.h"

/* Bytes taken by ModR/M + SIB + displacement at p (64-bit addressing;
 * 67h selects 32-bit addressing, which has the same layout). */
static unsigned modrm_len(const uint8_t *p, size_t n)
{
	uint8_t modrm, mod, rm;
	unsigned len = 1;

	if (n < 1)
		return 0;
	modrm = p[0];
	mod = modrm >> 6;
	rm = modrm & 7;
	if (mod == 3)
		return 1;
	if (rm == 4) {                     /* SIB follows */
		if (n < 2)
			return 0;
		len++;
		if (mod == 0 && (p[1] & 7) == 5)
			len += 4;          /* no base: disp32 */
	} else if (mod == 0 && rm == 5) {
		len += 4;                  /* RIP-relative disp32 */
	}
	if (mod == 1)
		len += 1;
	else if (mod == 2)
		len += 4;
	return len <= n ? len : 0;
}

static bool is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0xf0: case 0xf2: case 0xf3:                  /* lock, rep (bnd) */
	case 0x2e: case 0x36: case 0x3e: case 0x26:       /* segments, hints, notrack */
	case 0x64: case 0x65: case 0x66: case 0x67:
		return true;
	default:
		return false;
	}
}

unsigned tvh_x86_branch_len(const uint8_t *p, size_t n)
{
	size_t i = 0;
	unsigned m;
	uint8_t op;

	if (n > 15)
		n = 15;
	while (i < n && is_legacy_prefix(p[i]))
		i++;
	if (i < n && (p[i] & 0xf0) == 0x40)       /* REX */
		i++;
	if (i >= n)
		return 0;
	op = p[i++];
	switch (op) {
	case 0x70 ... 0x7f:          /* Jcc rel8 */
	case 0xe0 ... 0xe3:          /* LOOPNE, LOOPE, LOOP, JrCXZ */
	case 0xeb:                   /* JMP rel8 */
	case 0xcd:                   /* INT imm8 */
		m = 1;
		break;
	case 0xe8:                   /* CALL rel32 */
	case 0xe9:                   /* JMP rel32 */
		m = 4;
		break;
	case 0xc3: case 0xcb:        /* RET, RETF */
	case 0xcc: case 0xf1:        /* INT3, INT1 */
	case 0xcf:                   /* IRET (REX.W: IRETQ) */
		m = 0;
		break;
	case 0xc2: case 0xca:        /* RET imm16, RETF imm16 */
		m = 2;
		break;
	case 0x0f:
		if (i >= n)
			return 0;
		op = p[i++];
		if (op >= 0x80 && op <= 0x8f)          /* Jcc rel32 */
			m = 4;
		else if (op == 0x05 || op == 0x07 ||   /* SYSCALL, SYSRET */
			 op == 0x34 || op == 0x35)     /* SYSENTER, SYSEXIT */
			m = 0;
		else
			return 0;
		break;
	case 0xff: {                 /* /2 CALL, /3 CALLF, /4 JMP, /5 JMPF r/m */
		unsigned reg;

		if (i >= n)
			return 0;
		reg = (p[i] >> 3) & 7;
		if (reg < 2 || reg > 5)
			return 0;
		m = modrm_len(p + i, n - i);
		if (!m)
			return 0;
		break;
	}
	default:
		return 0;
	}
	return i + m <= n ? (unsigned)(i + m) : 0;
}
