/* SPDX-License-Identifier: MIT */
/*
 * x86_decode.h - instruction length decoder and branch classifier.
 *
 * The MTF tracing backend single-steps the guest: after every instruction
 * it has the previous and the new RIP, and must tell whether the
 * instruction at the previous RIP was a control transfer, and which kind.
 * x86_decode() sizes one instruction from its raw bytes and classifies it;
 * nothing else about the operands is interpreted.
 *
 * Written from the Intel SDM Vol. 2 opcode maps (Appendix A, Tables A-2,
 * and the group table A-6) and the VEX/EVEX prefix formats
 * (2: 2.3, 2.7).  Intel behaviour is modelled where AMD differs: in 64-bit
 * mode near branches ignore the 66 prefix (rel32, 64-bit RIP), SYSENTER
 * and SYSEXIT exist, there is no XOP and no 3DNow!.  docs/DECODER.md lists
 * what is decoded, the limits and how it is checked against objdump.
 *
 * Pure code: no allocation, no globals written, no floating point; safe in
 * VMX root on any CPU at once.
 */
#ifndef TV_X86_DECODE_H
#define TV_X86_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define X86_MAX_INSN_LEN 15   /* SDM 2: 2.3.11, longer is #GP */

/*
 * The code size the CPU is in: the default operand and address size of
 * the code segment.  Real mode, virtual-8086 mode and protected mode with
 * CS.D = 0 are X86_MODE_16; CS.D = 1 is X86_MODE_32; IA-32e mode with
 * CS.L = 1 is X86_MODE_64 (compatibility mode uses CS.D like protected
 * mode).
 */
enum x86_mode {
	X86_MODE_16 = 16,
	X86_MODE_32 = 32,
	X86_MODE_64 = 64,
};

/* Errors: x86_decode() returns the negated value (-X86_ERR_TRUNCATED). */
enum x86_err {
	X86_ERR_TRUNCATED = 1,  /* avail ends before the instruction does: fetch more */
	X86_ERR_INVALID = 2,    /* undefined opcode, or a #UD encoding (see below) */
	X86_ERR_TOO_LONG = 3,   /* more than 15 bytes (prefix run): #GP on the CPU */
	X86_ERR_ARG = 4,        /* NULL pointer or bad mode */
};

/*
 * What kind of control transfer an instruction is, finer than
 * enum tv_branch_kind (x86_branch_kind() maps it).
 */
enum x86_branch {
	X86_BR_NONE = 0,    /* not a control transfer (UD2, VMCALL, XBEGIN: none) */
	X86_BR_JCC,         /* Jcc rel8/rel16/rel32, JCXZ/JECXZ/JRCXZ, LOOP/LOOPE/LOOPNE */
	X86_BR_JMP,         /* JMP rel8/rel16/rel32 (EB, E9) */
	X86_BR_JMP_IND,     /* JMP r/m (FF /4) */
	X86_BR_CALL,        /* CALL rel16/rel32 (E8) */
	X86_BR_CALL_IND,    /* CALL r/m (FF /2) */
	X86_BR_RET,         /* near RET, RET imm16 (C3, C2) */
	X86_BR_FAR_JMP,     /* JMP ptr16:16/32 (EA), JMP m16:16/32/64 (FF /5) */
	X86_BR_FAR_CALL,    /* CALL ptr16:16/32 (9A), CALL m16:16/32/64 (FF /3) */
	X86_BR_FAR_RET,     /* far RET, RET imm16 (CB, CA) */
	X86_BR_INT,         /* INT n, INT3, INTO, INT1 (CD, CC, CE, F1) */
	X86_BR_SYSCALL,     /* SYSCALL, SYSENTER (0F 05, 0F 34) */
	X86_BR_SYSRET,      /* SYSRET, SYSEXIT, REX.W forms too (0F 07, 0F 35) */
	X86_BR_IRET,        /* IRET, IRETD, IRETQ (CF) */
	X86_BR_COUNT
};

/* How the opcode was encoded. */
enum x86_encoding {
	X86_ENC_LEGACY = 0,
	X86_ENC_VEX = 1,    /* C4 / C5 */
	X86_ENC_EVEX = 2,   /* 62 */
};

/* Opcode maps (VEX.mmmmm / EVEX.mmm numbering). */
enum x86_map {
	X86_MAP_PRIMARY = 0,  /* one-byte opcodes */
	X86_MAP_0F = 1,
	X86_MAP_0F38 = 2,
	X86_MAP_0F3A = 3,
	X86_MAP_EVEX5 = 5,    /* AVX512-FP16 */
	X86_MAP_EVEX6 = 6,
};

/* struct x86_insn.flags */
#define X86_F_MODRM   (1u << 0)   /* modrm holds a ModR/M byte */
#define X86_F_SIB     (1u << 1)   /* sib holds a SIB byte */
#define X86_F_REL     (1u << 2)   /* rel holds a branch displacement */
#define X86_F_LOCK    (1u << 3)   /* F0 */
#define X86_F_REP     (1u << 4)   /* F3 seen (REP/REPE, or a mandatory prefix) */
#define X86_F_REPNE   (1u << 5)   /* F2 seen */
#define X86_F_OPSIZE  (1u << 6)   /* 66 seen */
#define X86_F_ADSIZE  (1u << 7)   /* 67 seen */
#define X86_F_W       (1u << 8)   /* REX.W, VEX.W or EVEX.W set */
#define X86_F_RIPREL  (1u << 9)   /* 64-bit mode RIP-relative memory operand */

struct x86_insn {
	uint8_t len;          /* total bytes, 1..15 */
	uint8_t mode;         /* the enum x86_mode it was decoded in */
	uint8_t opsize;       /* effective operand size in bits: 16, 32, 64 */
	uint8_t addrsize;     /* effective address size in bits: 16, 32, 64 */
	uint8_t encoding;     /* enum x86_encoding */
	uint8_t map;          /* enum x86_map */
	uint8_t opcode;       /* the opcode byte within map */
	uint8_t modrm;        /* valid with X86_F_MODRM */
	uint8_t sib;          /* valid with X86_F_SIB */
	uint8_t rex;          /* REX byte in effect (64-bit mode), 0 if none */
	uint8_t seg;          /* last segment-override prefix byte, 0 if none */
	uint8_t npfx;         /* legacy + REX prefix bytes before the opcode/VEX/EVEX */
	uint8_t disp_size;    /* displacement bytes: 0, 1, 2, 4 */
	uint8_t imm_size;     /* immediate bytes in all (ENTER 3, ptr16:32 6) */
	uint16_t flags;       /* X86_F_* */
	uint8_t branch;       /* enum x86_branch */
	uint16_t imm2;        /* second immediate: ptr16:xx selector, ENTER's ib */
	int64_t disp;         /* sign-extended displacement */
	uint64_t imm;         /* first immediate as encoded (zero-extended); ptr: offset */
	int64_t rel;          /* with X86_F_REL: sign-extended displacement from next IP */
	/*
	 * VEX/EVEX only (0 for legacy encodings), for the access decoder
	 * (x86_access.h): the vector length L (0: 128, 1: 256, 2: 512 bits),
	 * the implied mandatory prefix pp (0 none, 1 66, 2 F3, 3 F2) and
	 * the R, X, B register-extension bits un-inverted, in REX's bit
	 * positions 2:0, so rex | vex_rxb extends ModR/M and SIB alike.
	 */
	uint8_t vex_l;
	uint8_t vex_pp;
	uint8_t vex_rxb;
};

/*
 * x86_decode - size and classify the instruction at bytes[0].
 *
 * avail is how many bytes are readable there (more than 15 are never
 * looked at).  The caller that reads guest memory up to a page end and
 * gets -X86_ERR_TRUNCATED reads the next page and calls again.
 *
 * Opcodes are sized from the maps; within groups and ModR/M forms only
 * the encodings that are #UD on every Intel CPU and would change the
 * answer are refused (FF /7, FE /2-7, 8F /1-7, C6/C7 /1-6, 0F 00 /6-7,
 * 0F BA /0-3, far FF /3 and /5 with a register operand, VEX/EVEX after
 * 66/F2/F3/F0/REX, a bad VEX/EVEX map).  Other reserved encodings with a
 * ModR/M byte (unassigned 0F 38 / 0F 3A / VEX / EVEX opcodes, LOCK on a
 * register, a mandatory prefix that is missing) are sized like their
 * neighbours: the CPU would #UD on them before they complete, so the
 * tracer never sees them retire.
 *
 * Returns the length (1..15, also in out->len) or
 *   -X86_ERR_TRUNCATED  the instruction continues past avail
 *   -X86_ERR_INVALID    undefined or refused encoding (above); APX (REX2,
 *                       EVEX map 4), XOP and 3DNow! are refused too
 *   -X86_ERR_TOO_LONG   the encoding needs more than 15 bytes
 *   -X86_ERR_ARG        bytes or out NULL, mode not 16/32/64
 * On error *out is zeroed except out->mode.
 */
int x86_decode(const uint8_t *bytes, size_t avail, enum x86_mode mode,
	       struct x86_insn *out);

/*
 * x86_branch_target - the destination of a direct near branch (Jcc, JCXZ,
 * LOOP, JMP rel, CALL rel) at ip (the offset in CS, i.e. EIP/RIP, not the
 * linear address): ip + len + rel, truncated to 16 bits when the operand
 * size is 16 and to 32 bits outside 64-bit mode (SDM 2 JMP/Jcc/CALL:
 * "IF OperandSize = 16 THEN EIP <- EIP AND 0000FFFFH").  Returns false
 * (target untouched) for anything else, far and indirect branches too.
 */
bool x86_branch_target(const struct x86_insn *insn, uint64_t ip, uint64_t *target);

/* x86_branch_kind - the enum tv_branch_kind of a class (TV_BR_UNKNOWN for NONE). */
uint8_t x86_branch_kind(enum x86_branch br);

/* Names for logs and tests: "jcc", "call_ind", ...; "?" when out of range. */
const char *x86_branch_name(enum x86_branch br);

/* Text for a return value of x86_decode ("unknown error" otherwise). */
const char *x86_strerror(int err);

#endif /* TV_X86_DECODE_H */
