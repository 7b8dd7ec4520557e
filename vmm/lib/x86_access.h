/* SPDX-License-Identifier: MIT */
/*
 * x86_access.h - the memory accesses of one decoded instruction.
 *
 * Memory-access tracing (vmm/trace/memwatch.h, docs/MEMTRACE.md) stops a
 * guest instruction at an EPT violation on a watched page and must say
 * which bytes it reads and writes: the violation names one address, the
 * instruction may touch two (MOVS, CALL [mem], PUSH [mem]).  From a
 * struct x86_insn (x86_decode.h) this module lists up to X86_ACC_MAX
 * operands - where each lives (the ModR/M operand, a string operand, the
 * stack, ...), its size, whether it is read, written or both, locked -
 * and computes each one's linear address from a register file.
 *
 * Written from the SDM Vol. 2 instruction pages and the opcode maps
 * (Appendix A); the addressing forms are Vol. 2 2.1.5 (Tables 2-1 to
 * 2-3), 2.2.1.6 (RIP-relative) and Vol. 1 3.7.5 (effective address),
 * segment defaults Vol. 1 3.7.4 and Vol. 3A 3.4.4 (64-bit mode: only FS
 * and GS bases apply).
 *
 * What it does not model (x86_access_decode returns -X86_ACC_EUNKNOWN:
 * the caller records the violation's own facts): x87 memory operands,
 * FXSAVE/XSAVE/XRSTOR and friends, EVEX (disp8*N compression), VSIB
 * gathers and scatters, ENTER with a nesting level, BOUND, far pointers
 * loaded by LDS/LES/LSS, descriptor-table and TSS accesses made by the
 * CPU itself (INT n, far transfers through gates, IRET's stack switch is
 * modelled only as the pops of the current stack), and the guest's
 * page-table walks.  Operand sizes of SSE/AVX forms follow the mandatory
 * prefix (none/66: the vector, F3: 4 bytes, F2: 8 bytes for the scalar
 * arithmetic and moves) and VEX.L; MMX forms are 8 bytes.
 *
 * Pure code: no globals written, no allocation; safe on every CPU at once.
 */
#ifndef TV_X86_ACCESS_H
#define TV_X86_ACCESS_H

#include <stdbool.h>
#include <stdint.h>

#include "vmm/lib/x86_decode.h"

#define X86_ACC_MAX 3

/* Where an operand lives. */
enum x86_acc_kind {
	X86_ACC_MODRM = 1,     /* the ModR/M memory operand (mod != 3) */
	X86_ACC_MOFFS,         /* MOV A0-A3: [seg:moffs] */
	X86_ACC_STR_SRC,       /* string source: seg:rSI (DS, overridable) */
	X86_ACC_STR_DST,       /* string destination: ES:rDI (never overridden) */
	X86_ACC_PUSH,          /* the stack slot a push writes: SS:[rSP - size] */
	X86_ACC_POP,           /* the stack slot a pop reads: SS:[rSP] */
	X86_ACC_LEAVE,         /* LEAVE's pop: SS:[rBP] */
	X86_ACC_XLAT,          /* XLAT: seg:[rBX + AL] */
	X86_ACC_BITSTR,        /* BT/BTS/BTR/BTC m, r: the ModR/M address plus the bit offset's word */
};

/* struct x86_access.flags (the same meanings as the TV_MEMF_* bits they become) */
#define X86_ACC_READ     (1u << 0)
#define X86_ACC_WRITE    (1u << 1)
#define X86_ACC_LOCK     (1u << 2)   /* LOCK prefix, or XCHG with memory (implicitly locked) */
#define X86_ACC_STRING   (1u << 3)   /* one iteration of a string instruction */
#define X86_ACC_IMPLICIT (1u << 4)   /* the stack of PUSH/POP/CALL/RET/... */
#define X86_ACC_REP      (1u << 5)   /* a REP/REPE/REPNE string instruction */

/* Segment registers in the Sreg encoding (ModR/M.reg of MOV Sreg, SDM Vol. 2 3.1.1.3). */
enum x86_seg {
	X86_SEG_ES = 0,
	X86_SEG_CS = 1,
	X86_SEG_SS = 2,
	X86_SEG_DS = 3,
	X86_SEG_FS = 4,
	X86_SEG_GS = 5,
	X86_SEG_COUNT
};

struct x86_access {
	uint8_t kind;            /* enum x86_acc_kind */
	uint8_t flags;           /* X86_ACC_* */
	uint16_t size;           /* bytes, 1..512 */
	uint8_t seg;             /* enum x86_seg the address is in */
};

struct x86_accesses {
	uint8_t n;               /* operands in op[] */
	struct x86_access op[X86_ACC_MAX];
};

/*
 * The register file the addresses come from: the GPRs in encoding order
 * (RAX, RCX, RDX, RBX, RSP, RBP, RSI, RDI, R8..R15), the RIP of the
 * instruction (not the next one), the segment bases and the stack's
 * address size (64 in 64-bit mode, else 32 or 16 by SS.B).
 */
struct x86_regs {
	uint64_t gpr[16];
	uint64_t rip;
	uint64_t seg_base[X86_SEG_COUNT];
	uint8_t stack_size;      /* 16, 32 or 64 */
};

#define X86_ACC_EUNKNOWN 1   /* a memory operand this module does not model */
#define X86_ACC_EARG     2   /* NULL argument, an operand that does not belong to insn */

/*
 * x86_access_decode - the memory operands of insn, in the order the
 * instruction performs them (CALL [m]: the load of the target, then the
 * push; MOVS: source then destination; POP [m]: the pop, then the
 * store).  Returns the count (0: no memory operand, e.g. LEA, NOP Ev,
 * a register form) or -X86_ACC_EUNKNOWN / -X86_ACC_EARG; out->n is the
 * count (0 on error).
 */
int x86_access_decode(const struct x86_insn *insn, struct x86_accesses *out);

/*
 * x86_access_address - the linear address of operand a of insn with
 * registers r: the effective address truncated to the address size
 * (the stack's for stack operands), plus the segment base (in 64-bit
 * mode only FS and GS have one), truncated to 32 bits outside 64-bit
 * mode.  Returns 0 (*linear set) or -X86_ACC_EARG.
 */
int x86_access_address(const struct x86_insn *insn, const struct x86_access *a,
		       const struct x86_regs *r, uint64_t *linear);

/* Text for a return value of the functions above. */
const char *x86_access_strerror(int err);

#endif /* TV_X86_ACCESS_H */
