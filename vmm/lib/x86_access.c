/* SPDX-License-Identifier: MIT */
/*
 * x86_access.c - the memory operands of a decoded instruction and their
 * linear addresses.  Contract and limits in x86_access.h.
 *
 * One function per opcode map.  Each names, for the opcodes that touch
 * memory, the operands in the order the instruction performs them, with
 * the size and direction from the SDM Vol. 2 instruction pages.  An
 * opcode not listed has no memory operand (a register form, LEA, the
 * hint NOPs and prefetches, which never fault).
 */
#include "vmm/lib/x86_access.h"

#include <string.h>

/* --- building the list ------------------------------------------------------------ */

static int add(struct x86_accesses *o, uint8_t kind, uint8_t flags, unsigned size, uint8_t seg)
{
	if (o->n >= X86_ACC_MAX)
		return -X86_ACC_EARG;
	o->op[o->n].kind = kind;
	o->op[o->n].flags = flags;
	o->op[o->n].size = (uint16_t)size;
	o->op[o->n].seg = seg;
	o->n++;
	return 0;
}

/* A segment-override prefix, else dflt (SDM Vol. 1 3.7.4). */
static uint8_t seg_or(const struct x86_insn *in, uint8_t dflt)
{
	switch (in->seg) {
	case 0x26: return X86_SEG_ES;
	case 0x2e: return X86_SEG_CS;
	case 0x36: return X86_SEG_SS;
	case 0x3e: return X86_SEG_DS;
	case 0x64: return X86_SEG_FS;
	case 0x65: return X86_SEG_GS;
	default: return dflt;
	}
}

static bool mem_form(const struct x86_insn *in)
{
	return (in->flags & X86_F_MODRM) && (in->modrm >> 6) != 3;
}

/* The REX (or VEX/EVEX) extension bits: R 2, X 1, B 0. */
static unsigned rxb(const struct x86_insn *in)
{
	return (unsigned)((in->rex | in->vex_rxb) & 7);
}

/*
 * The base register of the ModR/M operand (0..15), or -1 when there is
 * none (disp-only, RIP-relative); 16-bit forms answer for BP (5) only.
 */
static int modrm_base(const struct x86_insn *in)
{
	unsigned mod = in->modrm >> 6, rm = in->modrm & 7;

	if (in->addrsize == 16) {
		if (rm == 2 || rm == 3 || (rm == 6 && mod != 0))
			return 5;   /* BP+SI, BP+DI, BP+disp */
		return -1;
	}
	if (rm == 4) {
		unsigned base = in->sib & 7;

		if (base == 5 && mod == 0)
			return -1;
		return (int)(base | ((rxb(in) & 1) << 3));
	}
	if (rm == 5 && mod == 0)
		return -1;
	return (int)(rm | ((rxb(in) & 1) << 3));
}

/* SS when the base is rSP or rBP (SDM Vol. 1 3.7.4, Vol. 2 Table 2-1), else DS; then the override. */
static uint8_t modrm_seg(const struct x86_insn *in)
{
	int base = modrm_base(in);

	return seg_or(in, (base == 4 || base == 5) ? X86_SEG_SS : X86_SEG_DS);
}

static int modrm_op(struct x86_accesses *o, const struct x86_insn *in, uint8_t flags, unsigned size)
{
	return add(o, X86_ACC_MODRM, flags, size, modrm_seg(in));
}

static int push(struct x86_accesses *o, unsigned size)
{
	return add(o, X86_ACC_PUSH, X86_ACC_WRITE | X86_ACC_IMPLICIT, size, X86_SEG_SS);
}

static int pop(struct x86_accesses *o, unsigned size)
{
	return add(o, X86_ACC_POP, X86_ACC_READ | X86_ACC_IMPLICIT, size, X86_SEG_SS);
}

#define RD    X86_ACC_READ
#define WR    X86_ACC_WRITE
#define RMW   (X86_ACC_READ | X86_ACC_WRITE)

/* The mandatory prefix in VEX's pp numbering: 0 none, 1 66, 2 F3, 3 F2 (F2/F3 win over 66). */
static unsigned mand_pp(const struct x86_insn *in)
{
	if (in->encoding != X86_ENC_LEGACY)
		return in->vex_pp;
	if (in->flags & X86_F_REPNE)
		return 3;
	if (in->flags & X86_F_REP)
		return 2;
	return (in->flags & X86_F_OPSIZE) ? 1 : 0;
}

/* The vector operand: 16 bytes (XMM), 32 with VEX.L (YMM). */
static unsigned vec(const struct x86_insn *in)
{
	return in->encoding == X86_ENC_VEX ? 16u << (in->vex_l & 1) : 16u;
}

/* Packed / scalar SSE forms: F3 single (4), F2 double (8), else the vector. */
static unsigned sse_size(const struct x86_insn *in)
{
	switch (mand_pp(in)) {
	case 2: return 4;
	case 3: return 8;
	default: return vec(in);
	}
}

/* MMX (no prefix, legacy: 8 bytes) or SSE/AVX (66, or VEX: the vector). */
static unsigned mmx_or_vec(const struct x86_insn *in)
{
	if (in->encoding == X86_ENC_VEX || mand_pp(in) == 1)
		return vec(in);
	return mand_pp(in) == 2 ? 16u : 8u;
}

/* --- the one-byte map (SDM Vol. 2 Table A-2) ------------------------------------ */

static int map_primary(const struct x86_insn *in, struct x86_accesses *o)
{
	uint8_t op = in->opcode, reg = (in->modrm >> 3) & 7;
	bool m = mem_form(in);
	unsigned v = in->opsize / 8u, bv = (op & 1) ? v : 1u;
	uint8_t lock = (in->flags & X86_F_LOCK) ? X86_ACC_LOCK : 0;
	uint8_t str = X86_ACC_STRING | ((in->flags & (X86_F_REP | X86_F_REPNE)) ? X86_ACC_REP : 0);
	int rc;

	/* ADD, OR, ADC, SBB, AND, SUB, XOR, CMP: Eb,Gb Ev,Gv Gb,Eb Gv,Ev */
	if (op < 0x40 && (op & 7) < 4) {
		if (!m)
			return 0;
		if ((op & 2) || (op & 0x38) == 0x38)
			return modrm_op(o, in, RD, bv);
		return modrm_op(o, in, RMW | lock, bv);
	}
	switch (op) {
	case 0x06: case 0x0e: case 0x16: case 0x1e:    /* PUSH ES/CS/SS/DS */
	case 0x50: case 0x51: case 0x52: case 0x53: case 0x54: case 0x55: case 0x56: case 0x57:
	case 0x68: case 0x6a: case 0x9c:                /* PUSH imm, PUSHF */
		return push(o, v);
	case 0x07: case 0x17: case 0x1f:                /* POP ES/SS/DS */
	case 0x58: case 0x59: case 0x5a: case 0x5b: case 0x5c: case 0x5d: case 0x5e: case 0x5f:
	case 0x9d:                                      /* POPF */
		return pop(o, v);
	case 0x60:                                      /* PUSHA: eight registers */
		return push(o, 8 * v);
	case 0x61:                                      /* POPA */
		return pop(o, 8 * v);
	case 0x62:                                      /* BOUND */
		return m ? -X86_ACC_EUNKNOWN : 0;
	case 0x63:                                      /* MOVSXD Gv, Ed / ARPL Ew, Gw */
		if (!m)
			return 0;
		if (in->mode == X86_MODE_64)
			return modrm_op(o, in, RD, 4);
		return modrm_op(o, in, RMW, 2);
	case 0x69: case 0x6b:                           /* IMUL Gv, Ev, imm */
		return m ? modrm_op(o, in, RD, v) : 0;
	case 0x6c: case 0x6d:                           /* INS: ES:rDI */
		return add(o, X86_ACC_STR_DST, WR | str, op == 0x6c ? 1u : (v > 4 ? 4u : v), X86_SEG_ES);
	case 0x6e: case 0x6f:                           /* OUTS: DS:rSI */
		return add(o, X86_ACC_STR_SRC, RD | str, op == 0x6e ? 1u : (v > 4 ? 4u : v),
			   seg_or(in, X86_SEG_DS));
	case 0x80: case 0x81: case 0x82: case 0x83:     /* group 1: /7 is CMP */
		if (!m)
			return 0;
		return modrm_op(o, in, reg == 7 ? RD : (RMW | lock), bv);
	case 0x84: case 0x85:                           /* TEST */
	case 0x8a: case 0x8b:                           /* MOV Gx, Ex */
		return m ? modrm_op(o, in, RD, bv) : 0;
	case 0x86: case 0x87:                           /* XCHG: locked with memory (SDM 2 XCHG) */
		return m ? modrm_op(o, in, RMW | X86_ACC_LOCK, bv) : 0;
	case 0x88: case 0x89:                           /* MOV Ex, Gx */
		return m ? modrm_op(o, in, WR, bv) : 0;
	case 0x8c:                                      /* MOV Ew, Sreg: 16 bits to memory */
		return m ? modrm_op(o, in, WR, 2) : 0;
	case 0x8e:                                      /* MOV Sreg, Ew */
		return m ? modrm_op(o, in, RD, 2) : 0;
	case 0x8f:                                      /* POP Ev: the pop, then the store */
		rc = pop(o, v);
		if (rc || !m)
			return rc;
		return modrm_op(o, in, WR, v);
	case 0x9a:                                      /* CALL far ptr: CS and the return address */
		return push(o, 2 * v);
	case 0xa0: case 0xa1:                           /* MOV AL/rAX, moffs */
		return add(o, X86_ACC_MOFFS, RD, bv, seg_or(in, X86_SEG_DS));
	case 0xa2: case 0xa3:                           /* MOV moffs, AL/rAX */
		return add(o, X86_ACC_MOFFS, WR, bv, seg_or(in, X86_SEG_DS));
	case 0xa4: case 0xa5:                           /* MOVS */
		rc = add(o, X86_ACC_STR_SRC, RD | str, bv, seg_or(in, X86_SEG_DS));
		return rc ? rc : add(o, X86_ACC_STR_DST, WR | str, bv, X86_SEG_ES);
	case 0xa6: case 0xa7:                           /* CMPS */
		rc = add(o, X86_ACC_STR_SRC, RD | str, bv, seg_or(in, X86_SEG_DS));
		return rc ? rc : add(o, X86_ACC_STR_DST, RD | str, bv, X86_SEG_ES);
	case 0xaa: case 0xab:                           /* STOS */
		return add(o, X86_ACC_STR_DST, WR | str, bv, X86_SEG_ES);
	case 0xac: case 0xad:                           /* LODS */
		return add(o, X86_ACC_STR_SRC, RD | str, bv, seg_or(in, X86_SEG_DS));
	case 0xae: case 0xaf:                           /* SCAS */
		return add(o, X86_ACC_STR_DST, RD | str, bv, X86_SEG_ES);
	case 0xc0: case 0xc1: case 0xd0: case 0xd1: case 0xd2: case 0xd3:   /* shifts, rotates */
		return m ? modrm_op(o, in, RMW, bv) : 0;
	case 0xc2: case 0xc3:                           /* RET */
		return pop(o, v);
	case 0xc4: case 0xc5:                           /* LES, LDS (legacy: VEX never gets here) */
		return m ? -X86_ACC_EUNKNOWN : 0;
	case 0xc6: case 0xc7:                           /* MOV Ex, imm */
		return m ? modrm_op(o, in, WR, bv) : 0;
	case 0xc8:                                      /* ENTER imm16, 0 pushes rBP */
		return in->imm2 ? -X86_ACC_EUNKNOWN : push(o, v);
	case 0xc9:                                      /* LEAVE: rSP = rBP, then POP rBP */
		return add(o, X86_ACC_LEAVE, RD | X86_ACC_IMPLICIT, v, X86_SEG_SS);
	case 0xca: case 0xcb:                           /* far RET: the return address and CS */
		return pop(o, 2 * v);
	case 0xcf:                                      /* IRET: RIP, CS, RFLAGS (+ RSP, SS in 64-bit mode) */
		return pop(o, (in->mode == X86_MODE_64 ? 5u : 3u) * v);
	case 0xcc: case 0xcd: case 0xce: case 0xf1:     /* INT: the CPU's own pushes, maybe another stack */
		return -X86_ACC_EUNKNOWN;
	case 0xd7:                                      /* XLAT */
		return add(o, X86_ACC_XLAT, RD, 1, seg_or(in, X86_SEG_DS));
	case 0xd8: case 0xd9: case 0xda: case 0xdb: case 0xdc: case 0xdd: case 0xde: case 0xdf:
		return m ? -X86_ACC_EUNKNOWN : 0;      /* x87 */
	case 0xe8:                                      /* CALL rel */
		return push(o, v);
	case 0xf6: case 0xf7:                           /* group 3 */
		if (!m)
			return 0;
		if (reg == 2 || reg == 3)               /* NOT, NEG */
			return modrm_op(o, in, RMW | lock, bv);
		return modrm_op(o, in, RD, bv);         /* TEST, MUL, IMUL, DIV, IDIV */
	case 0xfe:                                      /* INC/DEC Eb */
		return m ? modrm_op(o, in, RMW | lock, 1) : 0;
	case 0xff:                                      /* group 5 */
		switch (reg) {
		case 0: case 1:                         /* INC, DEC */
			return m ? modrm_op(o, in, RMW | lock, v) : 0;
		case 2:                                 /* CALL Ev: load the target, push */
			rc = m ? modrm_op(o, in, RD, v) : 0;
			return rc ? rc : push(o, v);
		case 3:                                 /* CALL far m16:v */
			rc = modrm_op(o, in, RD, v + 2);
			return rc ? rc : push(o, 2 * v);
		case 4:                                 /* JMP Ev */
			return m ? modrm_op(o, in, RD, v) : 0;
		case 5:                                 /* JMP far m16:v */
			return modrm_op(o, in, RD, v + 2);
		case 6:                                 /* PUSH Ev: load, push */
			rc = m ? modrm_op(o, in, RD, v) : 0;
			return rc ? rc : push(o, v);
		default:
			return -X86_ACC_EUNKNOWN;
		}
	default:
		return 0;
	}
}

/* --- the two-byte map 0F (Table A-3), legacy and VEX -------------------------- */

static int map_0f(const struct x86_insn *in, struct x86_accesses *o)
{
	uint8_t op = in->opcode, reg = (in->modrm >> 3) & 7;
	bool m = mem_form(in);
	unsigned v = in->opsize / 8u, bv = (op & 1) ? v : 1u, w48 = (in->flags & X86_F_W) ? 8u : 4u;
	uint8_t lock = (in->flags & X86_F_LOCK) ? X86_ACC_LOCK : 0;
	unsigned pp = mand_pp(in);

	switch (op) {
	case 0xa0: case 0xa8:                           /* PUSH FS/GS */
		return push(o, v);
	case 0xa1: case 0xa9:                           /* POP FS/GS */
		return pop(o, v);
	default:
		break;
	}
	if (!m)
		return 0;
	switch (op) {
	case 0x00:                                      /* group 6 */
		if (reg <= 1)                           /* SLDT, STR */
			return modrm_op(o, in, WR, 2);
		if (reg <= 5)                           /* LLDT, LTR, VERR, VERW */
			return modrm_op(o, in, RD, 2);
		return -X86_ACC_EUNKNOWN;
	case 0x01:                                      /* group 7 */
		switch (reg) {
		case 0: case 1:                         /* SGDT, SIDT */
			return modrm_op(o, in, WR, in->mode == X86_MODE_64 ? 10 : 6);
		case 2: case 3:                         /* LGDT, LIDT */
			return modrm_op(o, in, RD, in->mode == X86_MODE_64 ? 10 : 6);
		case 4:                                 /* SMSW */
			return modrm_op(o, in, WR, 2);
		case 6:                                 /* LMSW */
			return modrm_op(o, in, RD, 2);
		case 7:                                 /* INVLPG: no access */
			return 0;
		default:
			return -X86_ACC_EUNKNOWN;
		}
	case 0x02: case 0x03:                           /* LAR, LSL */
		return modrm_op(o, in, RD, 2);
	case 0x0d: case 0x18: case 0x19: case 0x1a: case 0x1b: case 0x1c: case 0x1d: case 0x1e: case 0x1f:
		return 0;                               /* prefetches, hint NOPs */
	case 0x10:                                      /* MOVUPS/MOVSS/MOVUPD/MOVSD load */
		return modrm_op(o, in, RD, sse_size(in));
	case 0x11:                                      /* ... store */
		return modrm_op(o, in, WR, sse_size(in));
	case 0x12: case 0x16:                           /* MOVLPS/MOVHPS load; F3: MOVSLDUP/MOVSHDUP */
		return modrm_op(o, in, RD, pp == 2 ? vec(in) : 8u);
	case 0x13: case 0x17:                           /* MOVLPS/MOVHPS store */
		return modrm_op(o, in, WR, 8);
	case 0x14: case 0x15: case 0x28:                /* UNPCK, MOVAPS load */
		return modrm_op(o, in, RD, vec(in));
	case 0x29: case 0x2b:                           /* MOVAPS store, MOVNTPS */
		return modrm_op(o, in, WR, vec(in));
	case 0x2a:                                      /* CVTPI2PS (m64) / CVTSI2SS (r/m32/64) */
		return modrm_op(o, in, RD, pp >= 2 ? w48 : 8u);
	case 0x2c: case 0x2d:                           /* CVT(T)PS2PI, CVT(T)SS2SI, CVT(T)SD2SI */
		return modrm_op(o, in, RD, pp == 2 ? 4u : 8u);
	case 0x2e: case 0x2f:                           /* (U)COMISS / (U)COMISD */
		return modrm_op(o, in, RD, pp == 1 ? 8u : 4u);
	case 0x6e:                                      /* MOVD/MOVQ load */
		return modrm_op(o, in, RD, w48);
	case 0x7e:                                      /* F3: MOVQ xmm, m64; else MOVD/MOVQ store */
		if (pp == 2)
			return modrm_op(o, in, RD, 8);
		return modrm_op(o, in, WR, w48);
	case 0x7f: case 0xe7:                           /* MOVQ/MOVDQA/MOVDQU store, MOVNTQ/MOVNTDQ */
		return modrm_op(o, in, WR, mmx_or_vec(in));
	case 0x78: case 0x79:                           /* VMREAD, VMWRITE */
		return -X86_ACC_EUNKNOWN;
	case 0xa3:                                      /* BT Ev, Gv */
		return add(o, X86_ACC_BITSTR, RD, v, modrm_seg(in));
	case 0xab: case 0xb3: case 0xbb:                /* BTS, BTR, BTC Ev, Gv */
		return add(o, X86_ACC_BITSTR, RMW | lock, v, modrm_seg(in));
	case 0xa4: case 0xa5: case 0xac: case 0xad:     /* SHLD, SHRD */
		return modrm_op(o, in, RMW, v);
	case 0xaf:                                      /* IMUL Gv, Ev */
		return modrm_op(o, in, RD, v);
	case 0xae:                                      /* group 15 */
		switch (reg) {
		case 2:                                 /* LDMXCSR */
			return modrm_op(o, in, RD, 4);
		case 3:                                 /* STMXCSR */
			return modrm_op(o, in, WR, 4);
		case 7:                                 /* CLFLUSH: a read as far as EPT is concerned */
			return modrm_op(o, in, RD, 1);
		default:                                /* FXSAVE, FXRSTOR, XSAVE, XRSTOR, ... */
			return -X86_ACC_EUNKNOWN;
		}
	case 0xb0: case 0xb1:                           /* CMPXCHG: always writes (SDM 2 CMPXCHG) */
	case 0xc0: case 0xc1:                           /* XADD */
		return modrm_op(o, in, RMW | lock, bv);
	case 0xb2: case 0xb4: case 0xb5:                /* LSS, LFS, LGS: m16:v */
		return modrm_op(o, in, RD, v + 2);
	case 0xb6: case 0xbe:                           /* MOVZX/MOVSX Gv, Eb */
		return modrm_op(o, in, RD, 1);
	case 0xb7: case 0xbf:                           /* MOVZX/MOVSX Gv, Ew */
		return modrm_op(o, in, RD, 2);
	case 0xb8: case 0xbc: case 0xbd:                /* POPCNT, BSF/TZCNT, BSR/LZCNT */
		return modrm_op(o, in, RD, v);
	case 0xba:                                      /* group 8: BT, BTS, BTR, BTC Ev, Ib */
		return modrm_op(o, in, reg == 4 ? RD : (RMW | lock), v);
	case 0xc2:                                      /* CMPPS/CMPSS/... */
		return modrm_op(o, in, RD, sse_size(in));
	case 0xc3:                                      /* MOVNTI */
		return modrm_op(o, in, WR, v);
	case 0xc4:                                      /* PINSRW */
		return modrm_op(o, in, RD, 2);
	case 0xc6:                                      /* SHUFPS/PD */
		return modrm_op(o, in, RD, vec(in));
	case 0xc7:                                      /* group 9 */
		if (reg == 1)                           /* CMPXCHG8B / CMPXCHG16B */
			return modrm_op(o, in, RMW | lock, (in->flags & X86_F_W) ? 16u : 8u);
		return -X86_ACC_EUNKNOWN;
	case 0xd6:                                      /* 66: MOVQ xmm/m64 store */
		return modrm_op(o, in, WR, 8);
	case 0xf0:                                      /* F2: LDDQU */
		return modrm_op(o, in, RD, vec(in));
	case 0xf7:                                      /* MASKMOVQ/MASKMOVDQU: DS:rDI, register form */
		return 0;
	default:
		break;
	}
	if (op >= 0x40 && op <= 0x4f)                   /* CMOVcc: always reads */
		return modrm_op(o, in, RD, v);
	if (op >= 0x51 && op <= 0x5f)                   /* SSE arithmetic */
		return modrm_op(o, in, RD, sse_size(in));
	if (op >= 0x90 && op <= 0x9f)                   /* SETcc */
		return modrm_op(o, in, WR, 1);
	if ((op >= 0x60 && op <= 0x7d) || op >= 0xd0)   /* MMX/SSE integer loads and arithmetic */
		return modrm_op(o, in, RD, mmx_or_vec(in));
	return -X86_ACC_EUNKNOWN;
}

/* --- 0F 38 and 0F 3A (Tables ), legacy and VEX ------------------------- */

static int map_0f38(const struct x86_insn *in, struct x86_accesses *o)
{
	uint8_t op = in->opcode;
	unsigned pp = mand_pp(in), v = in->opsize / 8u, w48 = (in->flags & X86_F_W) ? 8u : 4u;

	if (!mem_form(in))
		return 0;
	if (in->encoding == X86_ENC_LEGACY) {
		if (op == 0xf0 || op == 0xf1) {
			if (pp == 3)                    /* CRC32 Gd, Eb / Ev */
				return modrm_op(o, in, RD, op == 0xf0 ? 1u : v);
			return modrm_op(o, in, op == 0xf0 ? RD : WR, v);   /* MOVBE */
		}
		return modrm_op(o, in, RD, pp == 1 ? 16u : 8u);
	}
	switch (op) {
	case 0x18: case 0x58: return modrm_op(o, in, RD, 4);    /* VBROADCASTSS, VPBROADCASTD */
	case 0x19: case 0x59: return modrm_op(o, in, RD, 8);    /* VBROADCASTSD, VPBROADCASTQ */
	case 0x1a: case 0x5a: return modrm_op(o, in, RD, 16);   /* VBROADCASTF128/I128 */
	case 0x78: return modrm_op(o, in, RD, 1);               /* VPBROADCASTB */
	case 0x79: return modrm_op(o, in, RD, 2);               /* VPBROADCASTW */
	case 0x2c: case 0x2d: case 0x2e: case 0x2f:             /* VMASKMOV: conditional */
	case 0x8c: case 0x8e:                                   /* VPMASKMOV */
	case 0x90: case 0x91: case 0x92: case 0x93:             /* gathers (VSIB) */
		return -X86_ACC_EUNKNOWN;
	default:
		break;
	}
	if (op >= 0xf0)                                 /* BMI1/BMI2: general-purpose registers */
		return modrm_op(o, in, RD, w48);
	return modrm_op(o, in, RD, vec(in));
}

static int map_0f3a(const struct x86_insn *in, struct x86_accesses *o)
{
	uint8_t op = in->opcode;
	unsigned w48 = (in->flags & X86_F_W) ? 8u : 4u;

	if (!mem_form(in))
		return 0;
	switch (op) {
	case 0x14: return modrm_op(o, in, WR, 1);       /* PEXTRB */
	case 0x15: return modrm_op(o, in, WR, 2);       /* PEXTRW */
	case 0x16: return modrm_op(o, in, WR, w48);     /* PEXTRD/Q */
	case 0x17: return modrm_op(o, in, WR, 4);       /* EXTRACTPS */
	case 0x19: case 0x39: case 0x1d:                /* VEXTRACTF128/I128, VCVTPS2PH */
		return modrm_op(o, in, WR, op == 0x1d ? 8u << in->vex_l : 16u);
	case 0x20: return modrm_op(o, in, RD, 1);       /* PINSRB */
	case 0x21: return modrm_op(o, in, RD, 4);       /* INSERTPS */
	case 0x22: return modrm_op(o, in, RD, w48);     /* PINSRD/Q */
	case 0x18: case 0x38: return modrm_op(o, in, RD, 16);   /* VINSERTF128/I128 */
	case 0x0f:                                      /* PALIGNR: MMX without 66 */
		return modrm_op(o, in, RD, mmx_or_vec(in));
	default:
		return modrm_op(o, in, RD, vec(in));
	}
}

#undef RD
#undef WR
#undef RMW

int x86_access_decode(const struct x86_insn *insn, struct x86_accesses *out)
{
	int rc;

	if (!out)
		return -X86_ACC_EARG;
	memset(out, 0, sizeof(*out));
	if (!insn || !insn->len)
		return -X86_ACC_EARG;
	if (insn->encoding == X86_ENC_EVEX)
		/* disp8 is scaled by a per-instruction N (SDM 2 2.7.5): not modelled. */
		return mem_form(insn) ? -X86_ACC_EUNKNOWN : 0;
	switch (insn->map) {
	case X86_MAP_PRIMARY:
		rc = map_primary(insn, out);
		break;
	case X86_MAP_0F:
		rc = map_0f(insn, out);
		break;
	case X86_MAP_0F38:
		rc = map_0f38(insn, out);
		break;
	case X86_MAP_0F3A:
		rc = map_0f3a(insn, out);
		break;
	default:
		rc = -X86_ACC_EUNKNOWN;
		break;
	}
	if (rc < 0) {
		memset(out, 0, sizeof(*out));
		return rc;
	}
	return out->n;
}

/* --- addresses ---------------------------------------------------------------------- */

static uint64_t trunc_to(uint64_t v, unsigned bits)
{
	return bits >= 64 ? v : v & ((1ull << bits) - 1);
}

/* The effective address of the ModR/M operand (SDM 2 Tables 2-1, 2-2, 2-3; 2.2.1.6). */
static uint64_t modrm_ea(const struct x86_insn *in, const struct x86_regs *r)
{
	unsigned mod = in->modrm >> 6, rm = in->modrm & 7, ext = rxb(in);
	uint64_t ea = (uint64_t)in->disp;

	if (in->addrsize == 16) {
		static const int8_t base16[8] = { 3, 3, 5, 5, 6, 7, 5, 3 };   /* BX BX BP BP SI DI BP BX */
		static const int8_t index16[8] = { 6, 7, 6, 7, -1, -1, -1, -1 };

		if (rm == 6 && mod == 0)
			return trunc_to(ea, 16);
		ea += r->gpr[base16[rm]];
		if (index16[rm] >= 0)
			ea += r->gpr[index16[rm]];
		return trunc_to(ea, 16);
	}
	if (rm == 4) {
		unsigned base = in->sib & 7, index = ((in->sib >> 3) & 7) | ((ext & 2) << 2);

		if (!(base == 5 && mod == 0))
			ea += r->gpr[base | ((ext & 1) << 3)];
		if (index != 4)                         /* index 100b without REX.X: none */
			ea += r->gpr[index] << (in->sib >> 6);
	} else if (rm == 5 && mod == 0) {
		if (in->flags & X86_F_RIPREL)
			ea += r->rip + in->len;         /* relative to the next instruction */
	} else {
		ea += r->gpr[rm | ((ext & 1) << 3)];
	}
	return trunc_to(ea, in->addrsize);
}

/* BT/BTS/BTR/BTC with a register offset: the word the (signed) bit offset selects (SDM 2 BT). */
static uint64_t bitstr_ea(const struct x86_insn *in, const struct x86_regs *r)
{
	unsigned bits = in->opsize, greg = ((in->modrm >> 3) & 7) | ((rxb(in) & 4) << 1);
	uint64_t off = trunc_to(r->gpr[greg], bits);
	int64_t s;
	unsigned shift = bits == 16 ? 4 : bits == 32 ? 5 : 6;

	/* sign-extend the offset from the operand size, arithmetically */
	if (bits < 64 && (off >> (bits - 1)))
		s = (int64_t)(off | ~((1ull << bits) - 1));
	else
		s = (int64_t)off;
	s = s < 0 ? -(int64_t)(((uint64_t)-s + ((1ull << shift) - 1)) >> shift) : (int64_t)((uint64_t)s >> shift);
	return trunc_to(modrm_ea(in, r) + (uint64_t)s * (bits / 8u), in->addrsize);
}

int x86_access_address(const struct x86_insn *insn, const struct x86_access *a,
		       const struct x86_regs *r, uint64_t *linear)
{
	unsigned asz, ssz;
	uint64_t off, base;

	if (!insn || !a || !r || !linear || a->seg >= X86_SEG_COUNT)
		return -X86_ACC_EARG;
	asz = insn->addrsize ? insn->addrsize : 64;
	ssz = r->stack_size ? r->stack_size : 64;
	switch (a->kind) {
	case X86_ACC_MODRM:
		if (!mem_form(insn))
			return -X86_ACC_EARG;
		off = modrm_ea(insn, r);
		break;
	case X86_ACC_BITSTR:
		if (!mem_form(insn))
			return -X86_ACC_EARG;
		off = bitstr_ea(insn, r);
		break;
	case X86_ACC_MOFFS:
		off = trunc_to(insn->imm, asz);
		break;
	case X86_ACC_STR_SRC:
		off = trunc_to(r->gpr[6], asz);
		break;
	case X86_ACC_STR_DST:
		off = trunc_to(r->gpr[7], asz);
		break;
	case X86_ACC_PUSH:
		off = trunc_to(r->gpr[4] - a->size, ssz);
		break;
	case X86_ACC_POP:
		off = trunc_to(r->gpr[4], ssz);
		break;
	case X86_ACC_LEAVE:
		off = trunc_to(r->gpr[5], ssz);
		break;
	case X86_ACC_XLAT:
		off = trunc_to(r->gpr[3] + (r->gpr[0] & 0xff), asz);
		break;
	default:
		return -X86_ACC_EARG;
	}
	base = r->seg_base[a->seg];
	if (insn->mode == X86_MODE_64) {
		/* SDM 3A 3.4.4: CS, DS, ES, SS bases are treated as 0 in 64-bit mode. */
		*linear = (a->seg == X86_SEG_FS || a->seg == X86_SEG_GS) ? off + base : off;
	} else {
		*linear = (base + off) & 0xffffffffull;
	}
	return 0;
}

const char *x86_access_strerror(int err)
{
	switch (err) {
	case 0:
		return "ok";
	case -X86_ACC_EUNKNOWN:
		return "memory operand not modelled";
	case -X86_ACC_EARG:
		return "bad argument";
	default:
		return "unknown error";
	}
}
