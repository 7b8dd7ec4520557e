/* SPDX-License-Identifier: MIT */
/*
 * x86_decode.c - table-driven x86 instruction length decoder (SDM 2,
 * Appendix A opcode maps; 2.1 instruction format; 2.3 VEX; 2.7 EVEX).
 *
 * An instruction is
 *   [legacy prefixes] [REX] opcode (1-3 bytes) [ModR/M [SIB] [disp]] [imm]
 * or
 *   [67/segment prefixes] VEX/EVEX opcode [ModR/M [SIB] [disp]] [imm]
 * The tables give, per opcode, whether a ModR/M byte follows, the kind of
 * immediate, mode restrictions, the operand-size rule in 64-bit mode and
 * the branch class; groups (ModR/M.reg selects the instruction) refine
 * that.  Everything else follows from the prefixes and the mode.
 */
#include "vmm/lib/x86_decode.h"

#include <string.h>

#include "vmm/trace/format.h"

/* --- opcode attributes ---------------------------------------------------- */

/* Immediate / relative-offset kinds (bits 3:0), SDM A.2.2 operand codes. */
enum imm_kind {
	IK_NONE = 0,
	IK_B,       /* Ib: 1 byte */
	IK_W,       /* Iw: 2 bytes */
	IK_Z,       /* Iz: 2 with a 16-bit operand size, else 4 */
	IK_V,       /* Iv: 2, 4 or 8 by operand size (MOV r, imm only) */
	IK_MOFFS,   /* Ob/Ov: address-size offset (A0-A3) */
	IK_PTR,     /* Ap: ptr16:16 or ptr16:32 by operand size */
	IK_WB,      /* Iw, Ib (ENTER) */
	IK_JB,      /* Jb: rel8 */
	IK_JZ,      /* Jz: rel16 or rel32 by operand size */
};

#define A_IMM(k)    ((uint32_t)(k))
#define A_IMM_MASK  0xfu
#define A_MODRM     (1u << 4)    /* a ModR/M byte follows the opcode */
#define A_INVALID   (1u << 5)    /* undefined: #UD */
#define A_I64       (1u << 6)    /* invalid in 64-bit mode */
#define A_D64       (1u << 7)    /* 64-bit mode: operand size defaults to 64 */
#define A_F64       (1u << 8)    /* 64-bit mode: operand size forced to 64 (Intel) */
#define A_MODREG    (1u << 9)    /* ModR/M.mod ignored, always a register (MOV CR/DR) */
#define A_MEMONLY   (1u << 10)   /* ModR/M must name memory (far indirect) */
#define A_BR_SHIFT  11           /* bits 14:11: enum x86_branch */
#define A_BR(b)     ((uint32_t)(b) << A_BR_SHIFT)
#define A_BR_MASK   (0xfu << A_BR_SHIFT)
#define A_GRP_SHIFT 16           /* bits 19:16: group table index */
#define A_GRP(g)    ((uint32_t)(g) << A_GRP_SHIFT)
#define A_GRP_MASK  (0xfu << A_GRP_SHIFT)

_Static_assert(X86_BR_COUNT <= 16, "branch class fits A_BR_MASK");

/* Groups (SDM Table A-6) whose ModR/M.reg changes validity or attributes. */
enum grp {
	GRP_NONE = 0,
	GRP_1A,     /* 8F: POP Ev */
	GRP_3B,     /* F6: TEST Eb, Ib at /0 (and its alias /1) */
	GRP_3Z,     /* F7: TEST Ev, Iz at /0 and /1 */
	GRP_4,      /* FE: INC/DEC Eb */
	GRP_5,      /* FF: INC, DEC, CALLN, CALLF, JMPN, JMPF, PUSH */
	GRP_11,     /* C6/C7: MOV Ex, Ix; XABORT / XBEGIN at /7 */
	GRP_6,      /* 0F 00 */
	GRP_8,      /* 0F BA: BT/BTS/BTR/BTC Ev, Ib */
	GRP_COUNT
};

/* Shorthands for the maps below. */
#define _     0u
#define M     A_MODRM
#define MB    (A_MODRM | A_IMM(IK_B))
#define MZ    (A_MODRM | A_IMM(IK_Z))
#define IB    A_IMM(IK_B)
#define IW    A_IMM(IK_W)
#define IZ    A_IMM(IK_Z)
#define X     A_INVALID
#define PFX   A_INVALID   /* prefixes are consumed before the table is read */
#define I64   A_I64
#define D64   A_D64
#define JB    (A_IMM(IK_JB) | A_F64)
#define JZ    (A_IMM(IK_JZ) | A_F64)
#define JCC8  (JB | A_BR(X86_BR_JCC))
#define JCC32 (JZ | A_BR(X86_BR_JCC))
#define MOFFS A_IMM(IK_MOFFS)
#define IV    A_IMM(IK_V)
#define CR    (A_MODRM | A_MODREG)

/*
 * One-byte opcode map, SDM 2 Table A-2.  40-4F are INC/DEC outside 64-bit
 * mode (REX, consumed as a prefix, inside it); 62, C4, C5 are EVEX/VEX
 * where the next byte says so (x86_decode) and BOUND, LES, LDS otherwise.
 */
static const uint32_t map_primary[] = {
/*        0      1      2      3      4      5      6        7        8      9      a      b      c      d      e        f */
/* 0 */   M,     M,     M,     M,     IB,    IZ,    I64,     I64,     M,     M,     M,     M,     IB,    IZ,    I64,     X,
/* 1 */   M,     M,     M,     M,     IB,    IZ,    I64,     I64,     M,     M,     M,     M,     IB,    IZ,    I64,     I64,
/* 2 */   M,     M,     M,     M,     IB,    IZ,    PFX,     I64,     M,     M,     M,     M,     IB,    IZ,    PFX,     I64,
/* 3 */   M,     M,     M,     M,     IB,    IZ,    PFX,     I64,     M,     M,     M,     M,     IB,    IZ,    PFX,     I64,
/* 4 */   _,     _,     _,     _,     _,     _,     _,       _,       _,     _,     _,     _,     _,     _,     _,       _,
/* 5 */   D64,   D64,   D64,   D64,   D64,   D64,   D64,     D64,     D64,   D64,   D64,   D64,   D64,   D64,   D64,     D64,
/* 6 */   I64,   I64,   M|I64, M,     PFX,   PFX,   PFX,     PFX,     IZ|D64, MZ,   IB|D64, MB,   _,     _,     _,       _,
/* 7 */   JCC8,  JCC8,  JCC8,  JCC8,  JCC8,  JCC8,  JCC8,    JCC8,    JCC8,  JCC8,  JCC8,  JCC8,  JCC8,  JCC8,  JCC8,    JCC8,
/* 8 */   MB,    MZ,    MB|I64, MB,   M,     M,     M,       M,       M,     M,     M,     M,     M,     M,     M,       M|D64|A_GRP(GRP_1A),
/* 9 */   _,     _,     _,     _,     _,     _,     _,       _,       _,     _,     A_IMM(IK_PTR)|I64|A_BR(X86_BR_FAR_CALL), _, D64, D64, _, _,
/* a */   MOFFS, MOFFS, MOFFS, MOFFS, _,     _,     _,       _,       IB,    IZ,    _,     _,     _,     _,     _,       _,
/* b */   IB,    IB,    IB,    IB,    IB,    IB,    IB,      IB,      IV,    IV,    IV,    IV,    IV,    IV,    IV,      IV,
/* c */   MB,    MB,    IW|A_F64|A_BR(X86_BR_RET), A_F64|A_BR(X86_BR_RET), M|I64, M|I64,
	  MB|A_GRP(GRP_11), MZ|A_GRP(GRP_11), A_IMM(IK_WB)|D64, D64,
	  IW|A_BR(X86_BR_FAR_RET), A_BR(X86_BR_FAR_RET), A_BR(X86_BR_INT), IB|A_BR(X86_BR_INT),
	  I64|A_BR(X86_BR_INT), A_BR(X86_BR_IRET),
/* d */   M,     M,     M,     M,     IB|I64, IB|I64, I64,   _,       M,     M,     M,     M,     M,     M,     M,       M,
/* e */   JCC8,  JCC8,  JCC8,  JCC8,  IB,    IB,    IB,      IB,
	  JZ|A_BR(X86_BR_CALL), JZ|A_BR(X86_BR_JMP), A_IMM(IK_PTR)|I64|A_BR(X86_BR_FAR_JMP),
	  JB|A_BR(X86_BR_JMP), _, _, _, _,
/* f */   PFX,   A_BR(X86_BR_INT), PFX, PFX, _,   _,     M|A_GRP(GRP_3B), M|A_GRP(GRP_3Z),
	  _,     _,     _,     _,     _,     _,     M|A_GRP(GRP_4), M|A_GRP(GRP_5),
};

/*
 * Two-byte map 0F xx, SDM 2 Table A-3.  Mandatory prefixes (66/F2/F3)
 * select among SSE forms but never change the length here.  0F 0E/0F are
 * AMD (FEMMS, 3DNow!); 0F 24/26 were MOV to/from test registers (386/486).
 */
static const uint32_t map_0f[] = {
/*        0      1      2      3      4      5      6      7      8      9      a      b      c      d      e      f */
/* 0 */   M|A_GRP(GRP_6), M, M, M,  X,     A_BR(X86_BR_SYSCALL), _, A_BR(X86_BR_SYSRET),
	  _,     _,     X,     _,     X,     M,     X,     X,
/* 1 */   M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,
/* 2 */   CR,    CR,    CR,    CR,    X,     X,     X,     X,     M,     M,     M,     M,     M,     M,     M,     M,
/* 3 */   _,     _,     _,     _,     A_BR(X86_BR_SYSCALL), A_BR(X86_BR_SYSRET), X, _,
	  X,     X,     X,     X,     X,     X,     X,     X,   /* 38, 3A: escapes, handled before */
/* 4 */   M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,
/* 5 */   M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,
/* 6 */   M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,
/* 7 */   MB,    MB,    MB,    MB,    M,     M,     M,     _,     M,     M,     X,     X,     M,     M,     M,     M,
/* 8 */   JCC32, JCC32, JCC32, JCC32, JCC32, JCC32, JCC32, JCC32, JCC32, JCC32, JCC32, JCC32, JCC32, JCC32, JCC32, JCC32,
/* 9 */   M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,
/* a */   D64,   D64,   _,     M,     MB,    M,     X,     X,     D64,   D64,   _,     M,     MB,    M,     M,     M,
/* b */   M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     MB|A_GRP(GRP_8), M, M,   M,     M,     M,
/* c */   M,     M,     MB,    M,     MB,    MB,    MB,    M,     _,     _,     _,     _,     _,     _,     _,     _,
/* d */   M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,
/* e */   M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,
/* f */   M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,     M,
};

_Static_assert(sizeof(map_primary) == 256 * sizeof(uint32_t), "one-byte map has 256 entries");
_Static_assert(sizeof(map_0f) == 256 * sizeof(uint32_t), "0F map has 256 entries");

/*
 * Group refinements, indexed [group][ModR/M.reg]; ORed into the opcode's
 * attributes.  A_IMM here sets the immediate the opcode entry left out.
 */
static const uint32_t groups[GRP_COUNT][8] = {
	[GRP_1A] = { _, X, X, X, X, X, X, X },
	[GRP_3B] = { IB, IB, _, _, _, _, _, _ },   /* /1: undocumented TEST alias */
	[GRP_3Z] = { IZ, IZ, _, _, _, _, _, _ },
	[GRP_4] = { _, _, X, X, X, X, X, X },
	[GRP_5] = {
		_, _,
		A_F64 | A_BR(X86_BR_CALL_IND),
		A_MEMONLY | A_BR(X86_BR_FAR_CALL),
		A_F64 | A_BR(X86_BR_JMP_IND),
		A_MEMONLY | A_BR(X86_BR_FAR_JMP),
		D64, X,
	},
	[GRP_11] = { _, X, X, X, X, X, X, _ },
	[GRP_6] = { _, _, _, _, _, _, X, X },
	[GRP_8] = { X, X, X, X, _, _, _, _ },
};

#undef _
#undef M
#undef MB
#undef MZ
#undef IB
#undef IW
#undef IZ
#undef X
#undef PFX
#undef I64
#undef D64
#undef JB
#undef JZ
#undef JCC8
#undef JCC32
#undef MOFFS
#undef IV
#undef CR

/*
 * 0F 38 xx: every opcode takes a ModR/M byte and no immediate; 0F 3A xx:
 * ModR/M and Ib (SDM Tables ).  VEX and EVEX maps follow the
 * same rule, and in map 1 (0F) the Ib opcodes are the same as legacy.
 */
static bool map1_has_ib(uint8_t op)
{
	return (op >= 0x70 && op <= 0x73) || op == 0xc2 || op == 0xc4 ||
	       op == 0xc5 || op == 0xc6;
}

/* --- decoder state ------------------------------------------------------- */

struct dec {
	const uint8_t *b;
	size_t avail;   /* min(avail, 15) */
	size_t pos;
};

/* Next byte, or the error for running out of it. */
static int next_byte(struct dec *d, uint8_t *v)
{
	if (d->pos >= X86_MAX_INSN_LEN)
		return -X86_ERR_TOO_LONG;
	if (d->pos >= d->avail)
		return -X86_ERR_TRUNCATED;
	*v = d->b[d->pos++];
	return 0;
}

/* The byte at pos without consuming it. */
static int peek_byte(const struct dec *d, uint8_t *v)
{
	if (d->pos >= X86_MAX_INSN_LEN)
		return -X86_ERR_TOO_LONG;
	if (d->pos >= d->avail)
		return -X86_ERR_TRUNCATED;
	*v = d->b[d->pos];
	return 0;
}

/* Little-endian value of n bytes at off (n <= 8, already known available). */
static uint64_t le_value(const uint8_t *b, size_t off, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)b[off + i] << (8 * i);
	return v;
}

static int64_t sign_extend(uint64_t v, unsigned bytes)
{
	if (bytes == 0)
		return 0;
	if (bytes >= 8)
		return (int64_t)v;
	/* Two's complement by arithmetic, not by shifting a negative value. */
	v &= (1ull << (8 * bytes)) - 1;
	if (v >> (8 * bytes - 1))
		return (int64_t)(v - (1ull << (8 * bytes)));
	return (int64_t)v;
}

/*
 * Operand size (SDM 2: 2.2.1.2 and Table 2-4 for 64-bit mode; 3A 3.6 for
 * the D flag): 66 flips the default outside 64-bit mode; in 64-bit mode
 * REX.W wins over 66, D64 opcodes default to 64 and F64 ones ignore both.
 */
static uint8_t operand_size(enum x86_mode mode, uint32_t attr, bool p66, bool rex_w)
{
	if (mode == X86_MODE_64) {
		if (attr & A_F64)
			return 64;
		if (rex_w)
			return 64;
		if (p66)
			return 16;
		return (attr & A_D64) ? 64 : 32;
	}
	if (mode == X86_MODE_16)
		return p66 ? 32 : 16;
	return p66 ? 16 : 32;
}

static uint8_t address_size(enum x86_mode mode, bool p67)
{
	switch (mode) {
	case X86_MODE_16:
		return p67 ? 32 : 16;
	case X86_MODE_32:
		return p67 ? 16 : 32;
	default:
		return p67 ? 32 : 64;
	}
}

/*
 * ModR/M, SIB and displacement (SDM 2 Tables 2-1, 2-2, 2-3).  16-bit
 * addressing: no SIB, disp16 for mod 00 r/m 110 and mod 10.  32/64-bit:
 * r/m 100 brings a SIB byte, mod 00 with r/m 101 (RIP-relative in 64-bit
 * mode) or SIB.base 101 a disp32.  REX.B/X never change the size.
 */
static int modrm_operand(struct dec *d, struct x86_insn *out, bool mod_ignored)
{
	uint8_t modrm, sib, mod, rm;
	int rc;

	rc = next_byte(d, &modrm);
	if (rc)
		return rc;
	out->modrm = modrm;
	out->flags |= X86_F_MODRM;
	mod = modrm >> 6;
	rm = modrm & 7;
	if (mod_ignored || mod == 3)
		return 0;
	if (out->addrsize == 16) {
		if (mod == 1)
			out->disp_size = 1;
		else if (mod == 2 || rm == 6)
			out->disp_size = 2;
		return 0;
	}
	if (rm == 4) {
		rc = next_byte(d, &sib);
		if (rc)
			return rc;
		out->sib = sib;
		out->flags |= X86_F_SIB;
	}
	if (mod == 1) {
		out->disp_size = 1;
	} else if (mod == 2) {
		out->disp_size = 4;
	} else if (rm == 5) {
		out->disp_size = 4;
		if (out->mode == X86_MODE_64)
			out->flags |= X86_F_RIPREL;
	} else if (rm == 4 && (out->sib & 7) == 5) {
		out->disp_size = 4;
	}
	return 0;
}

/* Immediate bytes of kind k for the operand/address sizes decided. */
static unsigned imm_bytes(enum imm_kind k, const struct x86_insn *in)
{
	switch (k) {
	case IK_B:
	case IK_JB:
		return 1;
	case IK_W:
		return 2;
	case IK_Z:
	case IK_JZ:
		return in->opsize == 16 ? 2 : 4;
	case IK_V:
		return in->opsize / 8u;
	case IK_MOFFS:
		return in->addrsize / 8u;
	case IK_PTR:
		return (in->opsize == 16 ? 2u : 4u) + 2u;
	case IK_WB:
		return 3;
	default:
		return 0;
	}
}

/*
 * VEX (C4 3-byte, C5 2-byte) and EVEX (62) prefixes, SDM 2: 2.3.5, 2.7.1.
 * d->pos is at the C4/C5/62 byte.  Sets map and opcode; then the common
 * tail reads ModR/M (all but VZEROUPPER/VZEROALL, VEX 0F 77) and Ib.
 */
static int vex_evex(struct dec *d, struct x86_insn *out, uint8_t esc, uint32_t *attr)
{
	uint8_t p0, p1, p2, op;
	int rc;

	d->pos++;   /* the escape byte */
	if (esc == 0xc5) {
		rc = next_byte(d, &p0);
		if (rc)
			return rc;
		out->encoding = X86_ENC_VEX;
		out->map = X86_MAP_0F;
		/* C5: R~ vvvv~ L pp (2.3.5.5); X and B are implied 0. */
		out->vex_rxb = (p0 & 0x80) ? 0 : 4;
		out->vex_l = (p0 >> 2) & 1;
		out->vex_pp = p0 & 3;
	} else if (esc == 0xc4) {
		rc = next_byte(d, &p0);
		if (rc)
			return rc;
		rc = next_byte(d, &p1);
		if (rc)
			return rc;
		out->encoding = X86_ENC_VEX;
		out->map = p0 & 0x1f;
		if (out->map < X86_MAP_0F || out->map > X86_MAP_0F3A)
			return -X86_ERR_INVALID;
		if (p1 & 0x80)
			out->flags |= X86_F_W;
		/* C4: R~ X~ B~ mmmmm, then W vvvv~ L pp (2.3.5.5). */
		out->vex_rxb = (uint8_t)((~p0 >> 5) & 7);
		out->vex_l = (p1 >> 2) & 1;
		out->vex_pp = p1 & 3;
	} else {
		rc = next_byte(d, &p0);
		if (rc)
			return rc;
		rc = next_byte(d, &p1);
		if (rc)
			return rc;
		rc = next_byte(d, &p2);
		if (rc)
			return rc;
		out->encoding = X86_ENC_EVEX;
		out->map = p0 & 7;
		/* Map 4 is APX (promoted legacy opcodes), 7 unassigned. */
		if (out->map == 0 || out->map == 4 || out->map == 7)
			return -X86_ERR_INVALID;
		/* P1 bit 2 is fixed to 1 (2.7.1); 0 is #UD. */
		if (!(p1 & 0x04))
			return -X86_ERR_INVALID;
		if (p1 & 0x80)
			out->flags |= X86_F_W;
		/* P0: R~ X~ B~ R'~ 0 mmm; P1: W vvvv~ 1 pp; P2: z L'L b V'~ aaa (2.7.1). */
		out->vex_rxb = (uint8_t)((~p0 >> 5) & 7);
		out->vex_pp = p1 & 3;
		out->vex_l = (p2 >> 5) & 3;
	}
	rc = next_byte(d, &op);
	if (rc)
		return rc;
	out->opcode = op;
	*attr = A_MODRM;
	if (out->encoding == X86_ENC_VEX && out->map == X86_MAP_0F && op == 0x77)
		*attr = 0;
	if (out->map == X86_MAP_0F3A || (out->map == X86_MAP_0F && map1_has_ib(op)))
		*attr |= A_IMM(IK_B);
	return 0;
}

int x86_decode(const uint8_t *bytes, size_t avail, enum x86_mode mode,
	       struct x86_insn *out)
{
	struct dec d;
	uint32_t attr = 0;
	bool p66 = false, p67 = false;
	uint8_t b, rex = 0, prefixes_vex_forbids = 0;
	unsigned nimm;
	size_t imm_off;
	int rc;

	if (!out)
		return -X86_ERR_ARG;
	memset(out, 0, sizeof(*out));
	out->mode = (uint8_t)mode;
	if (!bytes || (mode != X86_MODE_16 && mode != X86_MODE_32 && mode != X86_MODE_64))
		return -X86_ERR_ARG;
	d.b = bytes;
	d.avail = avail < X86_MAX_INSN_LEN ? avail : X86_MAX_INSN_LEN;
	d.pos = 0;

	/*
	 * Legacy prefixes in any order and number (2.1.1); in 64-bit mode a
	 * REX byte counts only right before the opcode: one followed by a
	 * legacy prefix is ignored (2.2.1).
	 */
	for (;;) {
		rc = peek_byte(&d, &b);
		if (rc)
			goto fail;
		switch (b) {
		case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
			out->seg = b;
			break;
		case 0x66:
			p66 = true;
			out->flags |= X86_F_OPSIZE;
			prefixes_vex_forbids = 1;
			break;
		case 0x67:
			p67 = true;
			out->flags |= X86_F_ADSIZE;
			break;
		case 0xf0:
			out->flags |= X86_F_LOCK;
			prefixes_vex_forbids = 1;
			break;
		case 0xf2:
			out->flags |= X86_F_REPNE;
			prefixes_vex_forbids = 1;
			break;
		case 0xf3:
			out->flags |= X86_F_REP;
			prefixes_vex_forbids = 1;
			break;
		default:
			if (mode == X86_MODE_64 && (b & 0xf0) == 0x40) {
				d.pos++;
				rex = b;
				continue;
			}
			goto prefixes_done;
		}
		d.pos++;
		rex = 0;
	}
prefixes_done:
	out->npfx = (uint8_t)d.pos;
	out->rex = rex;
	if (rex & 0x08)
		out->flags |= X86_F_W;
	out->addrsize = address_size(mode, p67);

	/*
	 * C4/C5/62: always VEX/EVEX in 64-bit mode; elsewhere only when the
	 * next byte has bits 7:6 = 11, which as a ModR/M byte would be the
	 * register form LES/LDS/BOUND do not have (2.3.5, 2.7.1).
	 */
	if (b == 0xc4 || b == 0xc5 || b == 0x62) {
		bool is_vex = mode == X86_MODE_64;

		if (!is_vex) {
			uint8_t nb;

			d.pos++;
			rc = peek_byte(&d, &nb);
			d.pos--;
			if (rc)
				goto fail;
			is_vex = (nb & 0xc0) == 0xc0;
		}
		if (is_vex) {
			/* 66, F2, F3, F0 or REX before VEX/EVEX: #UD (2.3.2). */
			if (prefixes_vex_forbids || rex) {
				rc = -X86_ERR_INVALID;
				goto fail;
			}
			rc = vex_evex(&d, out, b, &attr);
			if (rc)
				goto fail;
			/* For the record only: no VEX/EVEX length depends on it. */
			out->opsize = operand_size(mode, 0, false,
						   mode == X86_MODE_64 && (out->flags & X86_F_W));
			goto operands;
		}
	}

	d.pos++;
	out->encoding = X86_ENC_LEGACY;
	if (b != 0x0f) {
		out->map = X86_MAP_PRIMARY;
		out->opcode = b;
		attr = map_primary[b];
	} else {
		rc = next_byte(&d, &b);
		if (rc)
			goto fail;
		if (b == 0x38 || b == 0x3a) {
			out->map = b == 0x38 ? X86_MAP_0F38 : X86_MAP_0F3A;
			rc = next_byte(&d, &b);
			if (rc)
				goto fail;
			attr = A_MODRM | (out->map == X86_MAP_0F3A ? A_IMM(IK_B) : 0);
		} else {
			out->map = X86_MAP_0F;
			attr = map_0f[b];
		}
		out->opcode = b;
	}
	/* 64-bit mode: D5 would be REX2 (APX), not handled; D4/D5 are I64 anyway. */
	if ((attr & A_INVALID) || (mode == X86_MODE_64 && (attr & A_I64))) {
		rc = -X86_ERR_INVALID;
		goto fail;
	}

operands:
	/* Group attributes depend on ModR/M.reg: read it before sizing. */
	if (attr & A_MODRM) {
		uint32_t g = (attr & A_GRP_MASK) >> A_GRP_SHIFT;
		uint8_t m;

		rc = peek_byte(&d, &m);
		if (rc)
			goto fail;
		if (g) {
			attr |= groups[g][(m >> 3) & 7];
			if (attr & A_INVALID) {
				rc = -X86_ERR_INVALID;
				goto fail;
			}
		}
		if ((attr & A_MEMONLY) && (m >> 6) == 3) {
			rc = -X86_ERR_INVALID;
			goto fail;
		}
	}
	if (out->encoding == X86_ENC_LEGACY)
		out->opsize = operand_size(mode, attr, p66, rex & 0x08);
	if (attr & A_MODRM) {
		rc = modrm_operand(&d, out, attr & A_MODREG);
		if (rc)
			goto fail;
	}

	nimm = imm_bytes((enum imm_kind)(attr & A_IMM_MASK), out);
	imm_off = d.pos + out->disp_size;
	if (imm_off + nimm > X86_MAX_INSN_LEN) {
		rc = -X86_ERR_TOO_LONG;
		goto fail;
	}
	if (imm_off + nimm > d.avail) {
		rc = -X86_ERR_TRUNCATED;
		goto fail;
	}
	out->disp = sign_extend(le_value(bytes, d.pos, out->disp_size), out->disp_size);
	out->imm_size = (uint8_t)nimm;
	switch ((enum imm_kind)(attr & A_IMM_MASK)) {
	case IK_PTR:
		/* ptr16:16 / ptr16:32: the offset, then the selector. */
		out->imm = le_value(bytes, imm_off, nimm - 2);
		out->imm2 = (uint16_t)le_value(bytes, imm_off + nimm - 2, 2);
		break;
	case IK_WB:
		out->imm = le_value(bytes, imm_off, 2);
		out->imm2 = bytes[imm_off + 2];
		break;
	case IK_JB:
	case IK_JZ:
		out->imm = le_value(bytes, imm_off, nimm);
		out->rel = sign_extend(out->imm, nimm);
		out->flags |= X86_F_REL;
		break;
	default:
		out->imm = le_value(bytes, imm_off, nimm);
		break;
	}
	out->len = (uint8_t)(imm_off + nimm);
	out->branch = (uint8_t)((attr & A_BR_MASK) >> A_BR_SHIFT);
	return out->len;

fail:
	memset(out, 0, sizeof(*out));
	out->mode = (uint8_t)mode;
	return rc;
}

bool x86_branch_target(const struct x86_insn *insn, uint64_t ip, uint64_t *target)
{
	uint64_t t;

	if (!insn || !target || !(insn->flags & X86_F_REL))
		return false;
	if (insn->branch != X86_BR_JCC && insn->branch != X86_BR_JMP &&
	    insn->branch != X86_BR_CALL)
		return false;
	t = ip + insn->len + (uint64_t)insn->rel;
	if (insn->opsize == 16)
		t &= 0xffffull;
	else if (insn->mode != X86_MODE_64)
		t &= 0xffffffffull;
	*target = t;
	return true;
}

uint8_t x86_branch_kind(enum x86_branch br)
{
	static const uint8_t kinds[X86_BR_COUNT] = {
		[X86_BR_NONE] = TV_BR_UNKNOWN,
		[X86_BR_JCC] = TV_BR_JCC,
		[X86_BR_JMP] = TV_BR_JMP,
		[X86_BR_JMP_IND] = TV_BR_JMP_IND,
		[X86_BR_CALL] = TV_BR_CALL,
		[X86_BR_CALL_IND] = TV_BR_CALL_IND,
		[X86_BR_RET] = TV_BR_RET,
		[X86_BR_FAR_JMP] = TV_BR_FAR,
		[X86_BR_FAR_CALL] = TV_BR_FAR,
		[X86_BR_FAR_RET] = TV_BR_FAR,
		[X86_BR_INT] = TV_BR_SYSCALL,
		[X86_BR_SYSCALL] = TV_BR_SYSCALL,
		[X86_BR_SYSRET] = TV_BR_SYSRET,
		[X86_BR_IRET] = TV_BR_SYSRET,
	};

	if ((unsigned)br >= X86_BR_COUNT)
		return TV_BR_UNKNOWN;
	return kinds[br];
}

const char *x86_branch_name(enum x86_branch br)
{
	static const char *const names[X86_BR_COUNT] = {
		[X86_BR_NONE] = "none",
		[X86_BR_JCC] = "jcc",
		[X86_BR_JMP] = "jmp",
		[X86_BR_JMP_IND] = "jmp_ind",
		[X86_BR_CALL] = "call",
		[X86_BR_CALL_IND] = "call_ind",
		[X86_BR_RET] = "ret",
		[X86_BR_FAR_JMP] = "far_jmp",
		[X86_BR_FAR_CALL] = "far_call",
		[X86_BR_FAR_RET] = "far_ret",
		[X86_BR_INT] = "int",
		[X86_BR_SYSCALL] = "syscall",
		[X86_BR_SYSRET] = "sysret",
		[X86_BR_IRET] = "iret",
	};

	if ((unsigned)br >= X86_BR_COUNT)
		return "?";
	return names[br];
}

const char *x86_strerror(int err)
{
	switch (err) {
	case -X86_ERR_TRUNCATED:
		return "instruction continues past the bytes given";
	case -X86_ERR_INVALID:
		return "undefined or unsupported opcode";
	case -X86_ERR_TOO_LONG:
		return "instruction longer than 15 bytes";
	case -X86_ERR_ARG:
		return "bad argument";
	default:
		return "unknown error";
	}
}
