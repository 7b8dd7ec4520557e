/* SPDX-License-Identifier: MIT */
/*
 * test_x86_access.c - the memory operands of decoded instructions and
 * their linear addresses (vmm/lib/x86_access.c), from hand-assembled
 * bytes (SDM Vol. 2 encodings; each checked with GNU as/objdump when
 * written): loads and stores of every size, MOVZX/MOVSX, RMW and locked
 * forms, strings with and without REP, stack operands, RIP-relative,
 * SIB, FS/GS, 32-bit and 16-bit addressing, MOVNTI, SSE/AVX, a
 * page-crossing operand and what is not modelled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vmm/lib/x86_access.h"
#include "vmm/lib/x86_decode.h"

#define RD   X86_ACC_READ
#define WR   X86_ACC_WRITE
#define RMW  (X86_ACC_READ | X86_ACC_WRITE)
#define LK   X86_ACC_LOCK
#define STR  X86_ACC_STRING
#define REP  X86_ACC_REP
#define IMP  X86_ACC_IMPLICIT

#define FS_BASE 0x00007f0000000000ull
#define GS_BASE 0xffff888000000000ull

static struct x86_regs regs;

static void regs_default(uint8_t stack_size)
{
	memset(&regs, 0, sizeof(regs));
	for (unsigned i = 0; i < 16; i++)
		regs.gpr[i] = 0x1000ull * (i + 1);     /* RAX 0x1000, RCX 0x2000, ... R15 0x10000 */
	regs.rip = 0x400000;
	regs.seg_base[X86_SEG_DS] = 0x100;           /* ignored in 64-bit mode */
	regs.seg_base[X86_SEG_SS] = 0x200;
	regs.seg_base[X86_SEG_ES] = 0x300;
	regs.seg_base[X86_SEG_FS] = FS_BASE;
	regs.seg_base[X86_SEG_GS] = GS_BASE;
	regs.stack_size = stack_size;
}

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;

	while (*s) {
		unsigned v;

		if (*s == ' ') {
			s++;
			continue;
		}
		assert_true(n < cap);
		assert_int_equal(sscanf(s, "%2x", &v), 1);
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

struct want {
	uint8_t kind, flags;
	uint16_t size;
	uint64_t addr;
	uint8_t seg;
};

static struct x86_insn insn;

/* Decode hex in mode; expect n operands (or the error n < 0) as listed. */
static void check(const char *hex, enum x86_mode mode, int n, const struct want *w)
{
	uint8_t b[16];
	size_t len = unhex(hex, b, sizeof(b));
	struct x86_accesses acc;
	int rc;

	assert_int_equal(x86_decode(b, len, mode, &insn), (int)len);
	rc = x86_access_decode(&insn, &acc);
	if (rc != n)
		fail_msg("%s: %d operands, want %d (%s)", hex, rc, n, x86_access_strerror(rc));
	assert_int_equal(acc.n, n < 0 ? 0 : n);
	for (int i = 0; i < n; i++) {
		uint64_t lin = 0;

		if (acc.op[i].kind != w[i].kind || acc.op[i].flags != w[i].flags ||
		    acc.op[i].size != w[i].size)
			fail_msg("%s op %d: kind %u flags %#x size %u, want %u %#x %u", hex, i,
				 acc.op[i].kind, acc.op[i].flags, acc.op[i].size, w[i].kind,
				 w[i].flags, w[i].size);
		assert_int_equal(x86_access_address(&insn, &acc.op[i], &regs, &lin), 0);
		if (lin != w[i].addr)
			fail_msg("%s op %d: address %#llx, want %#llx", hex, i,
				 (unsigned long long)lin, (unsigned long long)w[i].addr);
		if (w[i].seg)
			assert_int_equal(acc.op[i].seg, w[i].seg);
	}
}

#define M(fl, sz, a)   { X86_ACC_MODRM, (fl), (sz), (a), 0 }
#define ONE(hex, fl, sz, a)  check(hex, X86_MODE_64, 1, (const struct want[]){ M(fl, sz, a) })

static void test_mov_loads_stores(void **state)
{
	(void)state;
	regs_default(64);
	ONE("8a 03", RD, 1, 0x4000);                     /* mov al, [rbx] */
	ONE("66 8b 03", RD, 2, 0x4000);                  /* mov ax, [rbx] */
	ONE("8b 03", RD, 4, 0x4000);                     /* mov eax, [rbx] */
	ONE("48 8b 43 08", RD, 8, 0x4008);               /* mov rax, [rbx+8] */
	ONE("88 01", WR, 1, 0x2000);                     /* mov [rcx], al */
	ONE("66 89 0a", WR, 2, 0x3000);                  /* mov [rdx], cx */
	ONE("89 0e", WR, 4, 0x7000);                     /* mov [rsi], ecx */
	ONE("48 89 0f", WR, 8, 0x8000);                  /* mov [rdi], rcx */
	ONE("c6 03 01", WR, 1, 0x4000);                  /* mov byte [rbx], 1 */
	ONE("48 c7 03 01 00 00 00", WR, 8, 0x4000);      /* mov qword [rbx], 1 */
	ONE("0f b6 06", RD, 1, 0x7000);                  /* movzx eax, byte [rsi] */
	ONE("0f b7 06", RD, 2, 0x7000);                  /* movzx eax, word [rsi] */
	ONE("48 0f be 07", RD, 1, 0x8000);               /* movsx rax, byte [rdi] */
	ONE("0f bf 07", RD, 2, 0x8000);                  /* movsx eax, word [rdi] */
	ONE("48 63 03", RD, 4, 0x4000);                  /* movsxd rax, dword [rbx] */
	ONE("0f c3 03", WR, 4, 0x4000);                  /* movnti [rbx], eax */
	ONE("48 0f c3 03", WR, 8, 0x4000);               /* movnti [rbx], rax */
	check("48 a1 88 77 66 55 44 33 22 11", X86_MODE_64, 1, (const struct want[]){
		{ X86_ACC_MOFFS, RD, 8, 0x1122334455667788ull, X86_SEG_DS } });
	check("a2 00 10 00 00 00 00 00 00", X86_MODE_64, 1, (const struct want[]){
		{ X86_ACC_MOFFS, WR, 1, 0x1000, 0 } });
}

static void test_rmw_and_locked(void **state)
{
	(void)state;
	regs_default(64);
	ONE("01 03", RMW, 4, 0x4000);                    /* add [rbx], eax */
	ONE("00 03", RMW, 1, 0x4000);                    /* add [rbx], al */
	ONE("03 03", RD, 4, 0x4000);                     /* add eax, [rbx] */
	ONE("39 03", RD, 4, 0x4000);                     /* cmp [rbx], eax */
	ONE("83 3b 05", RD, 4, 0x4000);                  /* cmp dword [rbx], 5 */
	ONE("83 03 05", RMW, 4, 0x4000);                 /* add dword [rbx], 5 */
	ONE("80 0b 01", RMW, 1, 0x4000);                 /* or byte [rbx], 1 */
	ONE("85 03", RD, 4, 0x4000);                     /* test [rbx], eax */
	ONE("f0 83 03 01", RMW | LK, 4, 0x4000);         /* lock add dword [rbx], 1 */
	ONE("f0 0f c1 03", RMW | LK, 4, 0x4000);         /* lock xadd [rbx], eax */
	ONE("f0 48 0f b1 0b", RMW | LK, 8, 0x4000);      /* lock cmpxchg [rbx], rcx */
	ONE("0f b1 0b", RMW, 4, 0x4000);                 /* cmpxchg [rbx], ecx: writes always */
	ONE("87 03", RMW | LK, 4, 0x4000);               /* xchg [rbx], eax: implicitly locked */
	ONE("86 03", RMW | LK, 1, 0x4000);               /* xchg [rbx], al */
	ONE("f0 0f c7 0b", RMW | LK, 8, 0x4000);         /* lock cmpxchg8b [rbx] */
	ONE("f0 48 0f c7 0b", RMW | LK, 16, 0x4000);     /* lock cmpxchg16b [rbx] */
	ONE("ff 03", RMW, 4, 0x4000);                    /* inc dword [rbx] */
	ONE("48 ff 0b", RMW, 8, 0x4000);                 /* dec qword [rbx] */
	ONE("fe 03", RMW, 1, 0x4000);                    /* inc byte [rbx] */
	ONE("f0 fe 0b", RMW | LK, 1, 0x4000);            /* lock dec byte [rbx] */
	ONE("f7 13", RMW, 4, 0x4000);                    /* not dword [rbx] */
	ONE("f7 23", RD, 4, 0x4000);                     /* mul dword [rbx] */
	ONE("d1 23", RMW, 4, 0x4000);                    /* shl dword [rbx], 1 */
	ONE("0f ba 2b 03", RMW, 4, 0x4000);              /* bts dword [rbx], 3 */
	ONE("0f 94 03", WR, 1, 0x4000);                  /* sete [rbx] */
	ONE("0f 44 03", RD, 4, 0x4000);                  /* cmove eax, [rbx]: reads always */
}

static void test_bit_string_offset(void **state)
{
	(void)state;
	regs_default(64);
	/* bt [rbx], eax with eax = 0x1000: bit 4096 = 128 dwords on */
	check("0f a3 03", X86_MODE_64, 1, (const struct want[]){
		{ X86_ACC_BITSTR, RD, 4, 0x4200, 0 } });
	regs.gpr[0] = 0xffffffffull;                    /* eax = -1: the dword below */
	check("f0 0f ab 03", X86_MODE_64, 1, (const struct want[]){
		{ X86_ACC_BITSTR, RMW | LK, 4, 0x3ffc, 0 } });
	regs.gpr[0] = (uint64_t)-65;                    /* rax = -65: two qwords below */
	check("48 0f a3 03", X86_MODE_64, 1, (const struct want[]){
		{ X86_ACC_BITSTR, RD, 8, 0x4000 - 16, 0 } });
}

static void test_strings(void **state)
{
	(void)state;
	regs_default(64);
	check("a4", X86_MODE_64, 2, (const struct want[]){          /* movsb */
		{ X86_ACC_STR_SRC, RD | STR, 1, 0x7000, X86_SEG_DS },
		{ X86_ACC_STR_DST, WR | STR, 1, 0x8000, X86_SEG_ES } });
	check("f3 48 a5", X86_MODE_64, 2, (const struct want[]){    /* rep movsq */
		{ X86_ACC_STR_SRC, RD | STR | REP, 8, 0x7000, 0 },
		{ X86_ACC_STR_DST, WR | STR | REP, 8, 0x8000, 0 } });
	check("aa", X86_MODE_64, 1, (const struct want[]){          /* stosb */
		{ X86_ACC_STR_DST, WR | STR, 1, 0x8000, 0 } });
	check("f3 ab", X86_MODE_64, 1, (const struct want[]){       /* rep stosd */
		{ X86_ACC_STR_DST, WR | STR | REP, 4, 0x8000, 0 } });
	check("ac", X86_MODE_64, 1, (const struct want[]){          /* lodsb */
		{ X86_ACC_STR_SRC, RD | STR, 1, 0x7000, 0 } });
	check("66 ad", X86_MODE_64, 1, (const struct want[]){       /* lodsw */
		{ X86_ACC_STR_SRC, RD | STR, 2, 0x7000, 0 } });
	check("f3 a6", X86_MODE_64, 2, (const struct want[]){       /* repe cmpsb */
		{ X86_ACC_STR_SRC, RD | STR | REP, 1, 0x7000, 0 },
		{ X86_ACC_STR_DST, RD | STR | REP, 1, 0x8000, 0 } });
	check("f2 ae", X86_MODE_64, 1, (const struct want[]){       /* repne scasb */
		{ X86_ACC_STR_DST, RD | STR | REP, 1, 0x8000, 0 } });
	/* fs: override on the source only; the destination is always ES */
	check("64 a4", X86_MODE_64, 2, (const struct want[]){
		{ X86_ACC_STR_SRC, RD | STR, 1, FS_BASE + 0x7000, X86_SEG_FS },
		{ X86_ACC_STR_DST, WR | STR, 1, 0x8000, X86_SEG_ES } });
	/* 32-bit address size in 64-bit mode: ESI, EDI */
	regs.gpr[6] = 0x1234567000ull;
	check("67 a4", X86_MODE_64, 2, (const struct want[]){
		{ X86_ACC_STR_SRC, RD | STR, 1, 0x34567000, 0 },
		{ X86_ACC_STR_DST, WR | STR, 1, 0x8000, 0 } });
}

static void test_stack(void **state)
{
	(void)state;
	regs_default(64);
	check("53", X86_MODE_64, 1, (const struct want[]){          /* push rbx */
		{ X86_ACC_PUSH, WR | IMP, 8, 0x4ff8, X86_SEG_SS } });
	check("5b", X86_MODE_64, 1, (const struct want[]){          /* pop rbx */
		{ X86_ACC_POP, RD | IMP, 8, 0x5000, X86_SEG_SS } });
	check("66 53", X86_MODE_64, 1, (const struct want[]){       /* push bx */
		{ X86_ACC_PUSH, WR | IMP, 2, 0x4ffe, 0 } });
	check("6a 01", X86_MODE_64, 1, (const struct want[]){       /* push 1 */
		{ X86_ACC_PUSH, WR | IMP, 8, 0x4ff8, 0 } });
	check("e8 00 00 00 00", X86_MODE_64, 1, (const struct want[]){   /* call rel32 */
		{ X86_ACC_PUSH, WR | IMP, 8, 0x4ff8, 0 } });
	check("c3", X86_MODE_64, 1, (const struct want[]){          /* ret */
		{ X86_ACC_POP, RD | IMP, 8, 0x5000, 0 } });
	check("ff 13", X86_MODE_64, 2, (const struct want[]){       /* call [rbx] */
		M(RD, 8, 0x4000), { X86_ACC_PUSH, WR | IMP, 8, 0x4ff8, 0 } });
	check("ff d0", X86_MODE_64, 1, (const struct want[]){       /* call rax */
		{ X86_ACC_PUSH, WR | IMP, 8, 0x4ff8, 0 } });
	check("ff 33", X86_MODE_64, 2, (const struct want[]){       /* push qword [rbx] */
		M(RD, 8, 0x4000), { X86_ACC_PUSH, WR | IMP, 8, 0x4ff8, 0 } });
	check("8f 03", X86_MODE_64, 2, (const struct want[]){       /* pop qword [rbx] */
		{ X86_ACC_POP, RD | IMP, 8, 0x5000, 0 }, M(WR, 8, 0x4000) });
	check("9c", X86_MODE_64, 1, (const struct want[]){          /* pushfq */
		{ X86_ACC_PUSH, WR | IMP, 8, 0x4ff8, 0 } });
	check("c9", X86_MODE_64, 1, (const struct want[]){          /* leave: pops at rbp */
		{ X86_ACC_LEAVE, RD | IMP, 8, 0x6000, X86_SEG_SS } });
	check("48 cf", X86_MODE_64, 1, (const struct want[]){       /* iretq: five qwords */
		{ X86_ACC_POP, RD | IMP, 40, 0x5000, 0 } });
	/* 32-bit code: 4-byte pushes, the SS base added, a 16-bit stack wraps */
	regs_default(32);
	check("53", X86_MODE_32, 1, (const struct want[]){
		{ X86_ACC_PUSH, WR | IMP, 4, 0x200 + 0x4ffc, 0 } });
	regs_default(16);
	regs.gpr[4] = 0x10002;
	check("53", X86_MODE_32, 1, (const struct want[]){          /* sp = 2: wraps to 0xfffe */
		{ X86_ACC_PUSH, WR | IMP, 4, 0x200 + 0xfffe, 0 } });
}

static void test_addressing(void **state)
{
	(void)state;
	regs_default(64);
	ONE("48 8b 05 10 00 00 00", RD, 8, 0x400000 + 7 + 0x10);   /* mov rax, [rip+0x10] */
	ONE("8b 05 f0 ff ff ff", RD, 4, 0x400000 + 6 - 0x10);      /* mov eax, [rip-0x10] */
	ONE("8b 44 8b 10", RD, 4, 0x4000 + 0x2000 * 4 + 0x10);     /* [rbx+rcx*4+0x10] */
	ONE("42 8b 04 c3", RD, 4, 0x4000 + 0x9000 * 8);            /* [rbx+r8*8] */
	ONE("41 8b 03", RD, 4, 0xc000);                            /* [r11] */
	ONE("8b 04 8d 00 10 00 00", RD, 4, 0x2000 * 4 + 0x1000);   /* [rcx*4+0x1000] */
	ONE("8b 04 24", RD, 4, 0x5000);                            /* [rsp]: SIB, no index */
	ONE("8b 04 25 00 20 00 00", RD, 4, 0x2000);                /* [0x2000] */
	check("8b 45 f8", X86_MODE_64, 1, (const struct want[]){   /* [rbp-8]: SS by default */
		{ X86_ACC_MODRM, RD, 4, 0x5ff8, X86_SEG_SS } });
	check("41 8b 45 f8", X86_MODE_64, 1, (const struct want[]){   /* [r13-8]: DS */
		{ X86_ACC_MODRM, RD, 4, 0xdff8, X86_SEG_DS } });
	check("64 48 8b 04 25 28 00 00 00", X86_MODE_64, 1, (const struct want[]){  /* fs:[0x28] */
		{ X86_ACC_MODRM, RD, 8, FS_BASE + 0x28, X86_SEG_FS } });
	check("65 48 8b 03", X86_MODE_64, 1, (const struct want[]){   /* gs:[rbx] */
		{ X86_ACC_MODRM, RD, 8, GS_BASE + 0x4000, X86_SEG_GS } });
}

static void test_no_memory(void **state)
{
	(void)state;
	regs_default(64);
	check("48 8d 03", X86_MODE_64, 0, NULL);         /* lea rax, [rbx] */
	check("0f 1f 00", X86_MODE_64, 0, NULL);         /* nop dword [rax] */
	check("0f 18 03", X86_MODE_64, 0, NULL);         /* prefetchnta [rbx] */
	check("01 d8", X86_MODE_64, 0, NULL);            /* add eax, ebx */
	check("0f 0b", X86_MODE_64, 0, NULL);            /* ud2 */
	check("90", X86_MODE_64, 0, NULL);               /* nop */
	check("0f 01 3b", X86_MODE_64, 0, NULL);         /* invlpg [rbx] */
}

static void test_mode32(void **state)
{
	(void)state;
	regs_default(32);
	check("8b 03", X86_MODE_32, 1, (const struct want[]){      /* DS base added */
		{ X86_ACC_MODRM, RD, 4, 0x100 + 0x4000, X86_SEG_DS } });
	check("8b 45 fc", X86_MODE_32, 1, (const struct want[]){   /* [ebp-4]: SS */
		{ X86_ACC_MODRM, RD, 4, 0x200 + 0x5ffc, X86_SEG_SS } });
	check("66 89 03", X86_MODE_32, 1, (const struct want[]){
		{ X86_ACC_MODRM, WR, 2, 0x100 + 0x4000, 0 } });
	check("67 8b 07", X86_MODE_32, 1, (const struct want[]){   /* [bx]: 16-bit addressing */
		{ X86_ACC_MODRM, RD, 4, 0x100 + 0x4000, 0 } });
	check("67 8b 02", X86_MODE_32, 1, (const struct want[]){   /* [bp+si]: SS */
		{ X86_ACC_MODRM, RD, 4, 0x200 + ((0x6000 + 0x7000) & 0xffff), X86_SEG_SS } });
	regs.seg_base[X86_SEG_DS] = 0xfffff000ull;                 /* base + offset wraps at 4 GiB */
	check("8b 03", X86_MODE_32, 1, (const struct want[]){
		{ X86_ACC_MODRM, RD, 4, 0x3000, 0 } });
	check("8b 05 00 10 00 00", X86_MODE_32, 1, (const struct want[]){   /* disp32, no RIP */
		{ X86_ACC_MODRM, RD, 4, 0x0, 0 } });
}

static void test_vector(void **state)
{
	(void)state;
	regs_default(64);
	ONE("0f 10 03", RD, 16, 0x4000);                 /* movups xmm0, [rbx] */
	ONE("f3 0f 10 03", RD, 4, 0x4000);               /* movss */
	ONE("f2 0f 11 03", WR, 8, 0x4000);               /* movsd [rbx], xmm0 */
	ONE("66 0f 6f 03", RD, 16, 0x4000);              /* movdqa */
	ONE("f3 0f 7f 03", WR, 16, 0x4000);              /* movdqu [rbx], xmm0 */
	ONE("0f 6f 03", RD, 8, 0x4000);                  /* movq mm0, [rbx] */
	ONE("0f 29 03", WR, 16, 0x4000);                 /* movaps [rbx], xmm0 */
	ONE("66 0f e7 03", WR, 16, 0x4000);              /* movntdq [rbx], xmm0 */
	ONE("66 0f d6 03", WR, 8, 0x4000);               /* movq [rbx], xmm0 */
	ONE("66 0f fe 03", RD, 16, 0x4000);              /* paddd xmm0, [rbx] */
	ONE("c5 fc 10 03", RD, 32, 0x4000);              /* vmovups ymm0, [rbx] */
	ONE("c5 fe 6f 03", RD, 32, 0x4000);              /* vmovdqu ymm0, [rbx] */
	ONE("c5 f9 7f 03", WR, 16, 0x4000);              /* vmovdqa [rbx], xmm0 */
	ONE("c5 fd e7 03", WR, 32, 0x4000);              /* vmovntdq [rbx], ymm0 */
	ONE("c4 c1 7c 10 00", RD, 32, 0x9000);           /* vmovups ymm0, [r8]: VEX.B */
	ONE("c4 a1 78 10 04 c3", RD, 16, 0x4000 + 0x9000 * 8);   /* vmovups xmm0, [rbx+r8*8]: VEX.X */
	ONE("c4 e2 7d 18 03", RD, 4, 0x4000);            /* vbroadcastss ymm0, [rbx] */
	ONE("f3 0f 6f 03", RD, 16, 0x4000);              /* movdqu xmm0, [rbx] */
}

static void test_page_crossing(void **state)
{
	struct x86_accesses acc;
	uint64_t lin;
	uint8_t b[4];

	(void)state;
	regs_default(64);
	regs.gpr[3] = 0x4ffc;                            /* an 8-byte load from 4 bytes before a page end */
	assert_int_equal(x86_decode(b, unhex("48 8b 03", b, sizeof(b)), X86_MODE_64, &insn), 3);
	assert_int_equal(x86_access_decode(&insn, &acc), 1);
	assert_int_equal(x86_access_address(&insn, &acc.op[0], &regs, &lin), 0);
	assert_int_equal(lin, 0x4ffc);
	assert_int_equal(acc.op[0].size, 8);
	assert_true(((lin + acc.op[0].size - 1) & ~0xfffull) != (lin & ~0xfffull));
}

static void test_not_modelled(void **state)
{
	uint8_t b[8];
	struct x86_accesses acc;

	(void)state;
	regs_default(64);
	check("d9 03", X86_MODE_64, -X86_ACC_EUNKNOWN, NULL);           /* fld dword [rbx] */
	check("0f ae 03", X86_MODE_64, -X86_ACC_EUNKNOWN, NULL);        /* fxsave [rbx] */
	check("62 f1 7c 48 10 03", X86_MODE_64, -X86_ACC_EUNKNOWN, NULL);   /* vmovups zmm0, [rbx] */
	check("cd 80", X86_MODE_64, -X86_ACC_EUNKNOWN, NULL);           /* int 0x80: the CPU's pushes */
	check("c4 e2 7d 90 04 c3", X86_MODE_64, -X86_ACC_EUNKNOWN, NULL);   /* vpgatherdd */
	check("d9 c0", X86_MODE_64, 0, NULL);                           /* fld st0: no memory */
	/* an undecodable sequence: FF /7 is #UD; the access decoder refuses an empty insn */
	assert_int_equal(x86_decode(b, unhex("ff ff", b, sizeof(b)), X86_MODE_64, &insn),
			 -X86_ERR_INVALID);
	assert_int_equal(x86_access_decode(&insn, &acc), -X86_ACC_EARG);
	assert_int_equal(acc.n, 0);
	assert_int_equal(x86_access_decode(NULL, &acc), -X86_ACC_EARG);
	assert_int_equal(x86_access_decode(&insn, NULL), -X86_ACC_EARG);
	assert_string_equal(x86_access_strerror(-X86_ACC_EUNKNOWN), "memory operand not modelled");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mov_loads_stores),
		cmocka_unit_test(test_rmw_and_locked),
		cmocka_unit_test(test_bit_string_offset),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_stack),
		cmocka_unit_test(test_addressing),
		cmocka_unit_test(test_no_memory),
		cmocka_unit_test(test_mode32),
		cmocka_unit_test(test_vector),
		cmocka_unit_test(test_page_crossing),
		cmocka_unit_test(test_not_modelled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
