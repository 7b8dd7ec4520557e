/* SPDX-License-Identifier: MIT */
/*
 * test_x86_decode.c - the instruction length decoder and branch
 * classifier (vmm/lib/x86_decode.c).
 *
 * Two kinds of evidence:
 *  - hand-written vectors from the SDM for every branch class and the
 *    length oddities, in 16-, 32- and 64-bit code;
 *  - ground truth that shares nothing with the decoder's tables: GNU
 *    objdump's view of real binaries and of an assembler file of edge
 *    cases, written by tests/unit/vmm/lib/gen_x86_vectors.sh into
 *    build/x86_vectors.txt (or $TV_X86_VECTORS).  The test runs the
 *    script when the file is missing or older than the script, and skips
 *    (not passes) when objdump is not installed and there is no file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "vmm/trace/format.h"
#include "vmm/lib/x86_decode.h"

#define TRUNC   (-X86_ERR_TRUNCATED)
#define INVALID (-X86_ERR_INVALID)
#define TOOLONG (-X86_ERR_TOO_LONG)

/* Repository root, from argv[0] (build/host/test_x86_decode) or ".". */
static char repo_root[4096] = ".";

/* Hex string ("48 8b 05 ...", spaces optional) to bytes; returns the count. */
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

struct vec {
	enum x86_mode mode;
	const char *hex;
	int want;               /* length, or a negative error */
	enum x86_branch br;
};

/* Decode v with 0xCC padding after it (the decoder must stop on its own). */
static int decode_padded(const struct vec *v, struct x86_insn *in, size_t *nbytes)
{
	uint8_t buf[32];
	size_t n;

	memset(buf, 0xcc, sizeof(buf));
	n = unhex(v->hex, buf, sizeof(buf));
	if (nbytes)
		*nbytes = n;
	return x86_decode(buf, sizeof(buf), v->mode, in);
}

static void check_vectors(const struct vec *v, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		struct x86_insn in;
		uint8_t buf[32];
		size_t n;
		int rc = decode_padded(&v[i], &in, &n);

		if (rc != v[i].want || (rc > 0 && in.branch != v[i].br)) {
			print_error("mode %d bytes %s: got %d (%s), want %d (%s)\n",
				    v[i].mode, v[i].hex, rc,
				    rc > 0 ? x86_branch_name(in.branch) : x86_strerror(rc),
				    v[i].want, x86_branch_name(v[i].br));
			fail();
		}
		if (rc <= 0)
			continue;
		assert_int_equal(in.len, rc);
		/* The exact bytes suffice; one fewer is a truncation, at every cut. */
		unhex(v[i].hex, buf, sizeof(buf));
		assert_int_equal(x86_decode(buf, (size_t)rc, v[i].mode, &in), rc);
		for (int cut = 0; cut < rc; cut++) {
			int r = x86_decode(buf, (size_t)cut, v[i].mode, &in);

			if (r != TRUNC) {
				print_error("mode %d bytes %s cut at %d: got %d\n",
					    v[i].mode, v[i].hex, cut, r);
				fail();
			}
		}
		(void)n;
	}
}

#define CHECK(tab) check_vectors(tab, sizeof(tab) / sizeof(tab[0]))

/* --- branch classes ------------------------------------------------------- */

static void test_branches_64(void **state)
{
	static const struct vec v[] = {
		{ 64, "74 05", 2, X86_BR_JCC },
		{ 64, "0f 84 00 00 00 00", 6, X86_BR_JCC },
		{ 64, "66 0f 84 00 00 00 00", 7, X86_BR_JCC },   /* Intel: 66 ignored */
		{ 64, "2e 74 00", 3, X86_BR_JCC },               /* hint prefix */
		{ 64, "e3 fe", 2, X86_BR_JCC },                  /* jrcxz */
		{ 64, "67 e3 fe", 3, X86_BR_JCC },               /* jecxz */
		{ 64, "e2 fe", 2, X86_BR_JCC },
		{ 64, "e1 fe", 2, X86_BR_JCC },
		{ 64, "e0 fe", 2, X86_BR_JCC },
		{ 64, "eb 00", 2, X86_BR_JMP },
		{ 64, "e9 00 00 00 00", 5, X86_BR_JMP },
		{ 64, "66 e9 00 00 00 00", 6, X86_BR_JMP },
		{ 64, "f2 e9 00 00 00 00", 6, X86_BR_JMP },      /* bnd jmp */
		{ 64, "ff e0", 2, X86_BR_JMP_IND },
		{ 64, "41 ff e3", 3, X86_BR_JMP_IND },
		{ 64, "3e ff e0", 3, X86_BR_JMP_IND },           /* notrack */
		{ 64, "ff 25 00 00 00 00", 6, X86_BR_JMP_IND },  /* RIP-relative */
		{ 64, "ff 24 c5 00 10 00 00", 7, X86_BR_JMP_IND },
		{ 64, "e8 00 00 00 00", 5, X86_BR_CALL },
		{ 64, "66 e8 00 00 00 00", 6, X86_BR_CALL },
		{ 64, "ff d0", 2, X86_BR_CALL_IND },
		{ 64, "ff 14 25 78 56 34 12", 7, X86_BR_CALL_IND },
		{ 64, "ff 54 24 08", 4, X86_BR_CALL_IND },
		{ 64, "41 ff 94 24 00 01 00 00", 8, X86_BR_CALL_IND },
		{ 64, "c3", 1, X86_BR_RET },
		{ 64, "c2 08 00", 3, X86_BR_RET },
		{ 64, "f3 c3", 2, X86_BR_RET },
		{ 64, "f2 c3", 2, X86_BR_RET },
		{ 64, "66 c3", 2, X86_BR_RET },
		{ 64, "48 c3", 2, X86_BR_RET },
		{ 64, "ff 18", 2, X86_BR_FAR_CALL },
		{ 64, "48 ff 18", 3, X86_BR_FAR_CALL },
		{ 64, "ff 28", 2, X86_BR_FAR_JMP },
		{ 64, "48 ff 6c 24 08", 5, X86_BR_FAR_JMP },
		{ 64, "cb", 1, X86_BR_FAR_RET },
		{ 64, "48 cb", 2, X86_BR_FAR_RET },
		{ 64, "ca 10 00", 3, X86_BR_FAR_RET },
		{ 64, "cc", 1, X86_BR_INT },
		{ 64, "cd 80", 2, X86_BR_INT },
		{ 64, "f1", 1, X86_BR_INT },
		{ 64, "0f 05", 2, X86_BR_SYSCALL },
		{ 64, "0f 34", 2, X86_BR_SYSCALL },
		{ 64, "0f 07", 2, X86_BR_SYSRET },
		{ 64, "48 0f 07", 3, X86_BR_SYSRET },
		{ 64, "0f 35", 2, X86_BR_SYSRET },
		{ 64, "48 0f 35", 3, X86_BR_SYSRET },
		{ 64, "cf", 1, X86_BR_IRET },
		{ 64, "48 cf", 2, X86_BR_IRET },
		{ 64, "66 cf", 2, X86_BR_IRET },
		/* not branches */
		{ 64, "0f 0b", 2, X86_BR_NONE },                 /* ud2 */
		{ 64, "0f 01 c1", 3, X86_BR_NONE },              /* vmcall */
		{ 64, "c7 f8 00 00 00 00", 6, X86_BR_NONE },     /* xbegin */
		{ 64, "c6 f8 01", 3, X86_BR_NONE },              /* xabort */
		{ 64, "ff c0", 2, X86_BR_NONE },                 /* inc eax */
		{ 64, "ff 30", 2, X86_BR_NONE },                 /* push (rax) */
		/* refused */
		{ 64, "ff d8", INVALID, 0 },                     /* far call, register */
		{ 64, "ff e8", INVALID, 0 },
		{ 64, "ff 38", INVALID, 0 },                     /* FF /7 */
		{ 64, "ce", INVALID, 0 },                        /* into */
		{ 64, "ea 00 00 00 00 10 00", INVALID, 0 },
		{ 64, "9a 00 00 00 00 10 00", INVALID, 0 },
	};

	(void)state;
	CHECK(v);
}

static void test_branches_32(void **state)
{
	static const struct vec v[] = {
		{ 32, "74 05", 2, X86_BR_JCC },
		{ 32, "0f 8f 00 00 00 00", 6, X86_BR_JCC },
		{ 32, "66 0f 84 00 00", 5, X86_BR_JCC },         /* rel16 */
		{ 32, "e3 fe", 2, X86_BR_JCC },                  /* jecxz */
		{ 32, "67 e3 fe", 3, X86_BR_JCC },               /* jcxz */
		{ 32, "e2 fe", 2, X86_BR_JCC },
		{ 32, "eb 00", 2, X86_BR_JMP },
		{ 32, "e9 00 00 00 00", 5, X86_BR_JMP },
		{ 32, "66 e9 00 00", 4, X86_BR_JMP },
		{ 32, "e8 00 00 00 00", 5, X86_BR_CALL },
		{ 32, "66 e8 00 00", 4, X86_BR_CALL },
		{ 32, "ff e0", 2, X86_BR_JMP_IND },
		{ 32, "ff 25 00 10 00 00", 6, X86_BR_JMP_IND },  /* absolute disp32 */
		{ 32, "ff 24 85 00 10 00 00", 7, X86_BR_JMP_IND },
		{ 32, "ff d0", 2, X86_BR_CALL_IND },
		{ 32, "ff 10", 2, X86_BR_CALL_IND },
		{ 32, "c3", 1, X86_BR_RET },
		{ 32, "c2 04 00", 3, X86_BR_RET },
		{ 32, "ea 78 56 34 12 10 00", 7, X86_BR_FAR_JMP },
		{ 32, "66 ea 34 12 10 00", 6, X86_BR_FAR_JMP },
		{ 32, "9a 78 56 34 12 10 00", 7, X86_BR_FAR_CALL },
		{ 32, "66 9a 34 12 10 00", 6, X86_BR_FAR_CALL },
		{ 32, "ff 1d 00 10 00 00", 6, X86_BR_FAR_CALL },
		{ 32, "ff 28", 2, X86_BR_FAR_JMP },
		{ 32, "cb", 1, X86_BR_FAR_RET },
		{ 32, "ca 08 00", 3, X86_BR_FAR_RET },
		{ 32, "cc", 1, X86_BR_INT },
		{ 32, "cd 21", 2, X86_BR_INT },
		{ 32, "ce", 1, X86_BR_INT },
		{ 32, "f1", 1, X86_BR_INT },
		{ 32, "0f 34", 2, X86_BR_SYSCALL },
		{ 32, "0f 05", 2, X86_BR_SYSCALL },
		{ 32, "0f 35", 2, X86_BR_SYSRET },
		{ 32, "0f 07", 2, X86_BR_SYSRET },
		{ 32, "cf", 1, X86_BR_IRET },
		{ 32, "66 cf", 2, X86_BR_IRET },
	};

	(void)state;
	CHECK(v);
}

static void test_branches_16(void **state)
{
	static const struct vec v[] = {
		{ 16, "74 05", 2, X86_BR_JCC },
		{ 16, "0f 84 00 00", 4, X86_BR_JCC },            /* rel16 */
		{ 16, "66 0f 84 00 00 00 00", 7, X86_BR_JCC },   /* rel32 */
		{ 16, "e3 fe", 2, X86_BR_JCC },                  /* jcxz */
		{ 16, "67 e3 fe", 3, X86_BR_JCC },               /* jecxz */
		{ 16, "e9 00 00", 3, X86_BR_JMP },
		{ 16, "66 e9 00 00 00 00", 6, X86_BR_JMP },
		{ 16, "e8 00 00", 3, X86_BR_CALL },
		{ 16, "66 e8 00 00 00 00", 6, X86_BR_CALL },
		{ 16, "ff d0", 2, X86_BR_CALL_IND },
		{ 16, "ff 17", 2, X86_BR_CALL_IND },             /* (bx) */
		{ 16, "ff 56 10", 3, X86_BR_CALL_IND },          /* 0x10(bp) */
		{ 16, "ff 26 34 12", 4, X86_BR_JMP_IND },        /* [0x1234] */
		{ 16, "ea 34 12 00 10", 5, X86_BR_FAR_JMP },
		{ 16, "66 ea 78 56 34 12 10 00", 8, X86_BR_FAR_JMP },
		{ 16, "9a f0 ff 00 f0", 5, X86_BR_FAR_CALL },
		{ 16, "ff 1f", 2, X86_BR_FAR_CALL },
		{ 16, "ff 2e 34 12", 4, X86_BR_FAR_JMP },
		{ 16, "c3", 1, X86_BR_RET },
		{ 16, "c2 02 00", 3, X86_BR_RET },
		{ 16, "66 c3", 2, X86_BR_RET },
		{ 16, "cb", 1, X86_BR_FAR_RET },
		{ 16, "ca 04 00", 3, X86_BR_FAR_RET },
		{ 16, "cf", 1, X86_BR_IRET },
		{ 16, "cd 10", 2, X86_BR_INT },
		{ 16, "cc", 1, X86_BR_INT },
		{ 16, "ce", 1, X86_BR_INT },
	};

	(void)state;
	CHECK(v);
}

/* --- lengths ------------------------------------------------------------- */

static void test_immediates(void **state)
{
	static const struct vec v[] = {
		/* MOV r, imm: Iv is the only 8-byte immediate */
		{ 64, "48 b8 11 22 33 44 55 66 77 88", 10, 0 },
		{ 64, "49 bf 11 22 33 44 55 66 77 88", 10, 0 },
		{ 64, "66 48 b8 11 22 33 44 55 66 77 88", 11, 0 },  /* REX.W beats 66 */
		{ 64, "b8 44 33 22 11", 5, 0 },
		{ 64, "66 b8 34 12", 4, 0 },
		{ 64, "41 b0 12", 3, 0 },
		{ 64, "48 c7 c0 ff ff ff ff", 7, 0 },           /* Iz stays 4 with REX.W */
		{ 32, "b8 44 33 22 11", 5, 0 },
		{ 32, "66 b8 34 12", 4, 0 },
		{ 16, "b8 34 12", 3, 0 },
		{ 16, "66 b8 78 56 34 12", 6, 0 },
		/* moffs: address size */
		{ 64, "a0 88 77 66 55 44 33 22 11", 9, 0 },
		{ 64, "48 a1 88 77 66 55 44 33 22 11", 10, 0 },
		{ 64, "66 a3 88 77 66 55 44 33 22 11", 10, 0 },
		{ 64, "67 a0 44 33 22 11", 6, 0 },
		{ 32, "a1 78 56 34 12", 5, 0 },
		{ 32, "67 a1 34 12", 4, 0 },
		{ 32, "66 67 a1 34 12", 5, 0 },
		{ 16, "a1 34 12", 3, 0 },
		{ 16, "67 a1 78 56 34 12", 6, 0 },
		/* Iz */
		{ 32, "05 78 56 34 12", 5, 0 },
		{ 32, "66 05 34 12", 4, 0 },
		{ 16, "05 34 12", 3, 0 },
		{ 16, "66 05 78 56 34 12", 6, 0 },
		{ 64, "48 05 78 56 34 12", 6, 0 },
		{ 64, "68 78 56 34 12", 5, 0 },                 /* push: d64, Iz */
		{ 64, "66 68 34 12", 4, 0 },
		{ 64, "6a 01", 2, 0 },
		{ 64, "69 c0 78 56 34 12", 6, 0 },
		{ 64, "6b c0 03", 3, 0 },
		{ 16, "69 c0 34 12", 4, 0 },
		{ 64, "81 c1 78 56 34 12", 6, 0 },
		{ 64, "83 c1 01", 3, 0 },
		{ 64, "80 c1 01", 3, 0 },
		{ 32, "82 c1 01", 3, 0 },
		{ 64, "82 c1 01", INVALID, 0 },
		/* F6/F7 group 3: only TEST (/0, alias /1) has an immediate */
		{ 64, "f6 c0 01", 3, 0 },
		{ 64, "f6 08 01", 3, 0 },
		{ 64, "f6 d0", 2, 0 },
		{ 64, "f6 38", 2, 0 },
		{ 64, "f7 c0 78 56 34 12", 6, 0 },
		{ 64, "66 f7 c0 34 12", 5, 0 },
		{ 64, "48 f7 c0 78 56 34 12", 7, 0 },
		{ 64, "f7 00 78 56 34 12", 6, 0 },
		{ 64, "f7 c8 01 00 00 00", 6, 0 },
		{ 64, "f7 d0", 2, 0 },
		{ 64, "f7 d8", 2, 0 },
		{ 64, "f7 74 24 04", 4, 0 },                    /* div [rsp+4] */
		{ 16, "f7 c0 34 12", 4, 0 },
		{ 16, "66 f7 c0 78 56 34 12", 7, 0 },
		{ 16, "f7 07 34 12", 4, 0 },
		/* ENTER iw, ib; RET iw */
		{ 64, "c8 10 00 01", 4, 0 },
		{ 32, "c8 10 00 01", 4, 0 },
		{ 16, "66 c8 10 00 01", 5, 0 },
		/* C0/C1 and 0F-map Ib */
		{ 64, "c1 e0 03", 3, 0 },
		{ 64, "0f ba e0 03", 4, 0 },
		{ 64, "0f a4 c3 03", 4, 0 },
		{ 64, "0f ac c3 03", 4, 0 },
		{ 64, "66 0f 70 c1 1b", 5, 0 },
		{ 64, "0f 71 d0 02", 4, 0 },
		{ 64, "0f c2 c1 01", 4, 0 },
		{ 64, "0f c4 c0 01", 4, 0 },
		{ 64, "0f c5 c0 01", 4, 0 },
		{ 64, "0f c6 c1 01", 4, 0 },
		/* in/out, int */
		{ 64, "e4 60", 2, 0 },
		{ 64, "e6 80", 2, 0 },
		{ 64, "ec", 1, 0 },
	};

	(void)state;
	CHECK(v);
}

static void test_modrm_sib_disp(void **state)
{
	static const struct vec v[] = {
		/* 32/64-bit addressing */
		{ 64, "8b 00", 2, 0 },
		{ 64, "8b 04 24", 3, 0 },                       /* SIB */
		{ 64, "8b 45 00", 3, 0 },                       /* rbp needs disp8 */
		{ 64, "41 8b 45 00", 4, 0 },                    /* r13 too */
		{ 64, "41 8b 04 24", 4, 0 },                    /* r12 needs SIB */
		{ 64, "8b 05 00 00 00 00", 6, 0 },              /* RIP-relative */
		{ 64, "8b 04 25 00 00 00 00", 7, 0 },           /* SIB, no base */
		{ 64, "41 8b 04 25 00 00 00 00", 8, 0 },        /* REX.B does not change it */
		{ 64, "8b 44 24 08", 4, 0 },
		{ 64, "8b 84 24 00 01 00 00", 7, 0 },
		{ 64, "8b 0c 85 00 00 00 00", 7, 0 },
		{ 64, "8b 44 2d 08", 4, 0 },                    /* SIB base rbp, mod 01 */
		{ 64, "8b 84 2d 00 01 00 00", 7, 0 },
		{ 64, "8b c0", 2, 0 },
		{ 64, "67 8b 00", 3, 0 },
		{ 64, "67 8b 05 00 00 00 00", 7, 0 },           /* EIP-relative */
		{ 32, "8b 05 00 10 00 00", 6, 0 },
		{ 32, "8b 04 24", 3, 0 },
		{ 32, "8b 04 25 00 10 00 00", 7, 0 },
		/* 16-bit addressing: no SIB, disp16 */
		{ 16, "8b 00", 2, 0 },                          /* (bx,si) */
		{ 16, "8b 04", 2, 0 },                          /* (si): r/m 100 is no SIB */
		{ 16, "8b 06 34 12", 4, 0 },                    /* [disp16] */
		{ 16, "8b 46 00", 3, 0 },
		{ 16, "8b 86 34 12", 4, 0 },
		{ 16, "8b 05", 2, 0 },                          /* (di): r/m 101 is no disp */
		{ 32, "67 8b 06 34 12", 5, 0 },
		{ 32, "67 8b 04", 3, 0 },
		{ 16, "67 8b 04 24", 4, 0 },
		{ 16, "67 8b 05 78 56 34 12", 7, 0 },
		{ 16, "67 8b 44 24 10", 5, 0 },
		/* MOV to/from CR and DR ignore mod: always a register, no SIB/disp */
		{ 64, "0f 20 c0", 3, 0 },
		{ 64, "0f 20 00", 3, 0 },
		{ 64, "0f 22 45", 3, 0 },
		{ 64, "0f 21 84", 3, 0 },
		{ 64, "44 0f 20 c0", 4, 0 },                    /* cr8 */
		{ 16, "0f 22 06", 3, 0 },
		/* x87: ModR/M, no immediate */
		{ 64, "d9 7d fe", 3, 0 },
		{ 64, "de c1", 2, 0 },
		{ 16, "dd 06 34 12", 4, 0 },
		/* SSE maps */
		{ 64, "66 0f 38 00 c1", 5, 0 },
		{ 64, "0f 38 f0 00", 4, 0 },
		{ 64, "f2 48 0f 38 f1 c3", 6, 0 },
		{ 64, "66 0f 3a 0f c1 03", 6, 0 },
		{ 64, "66 0f 3a 0f 44 24 08 03", 8, 0 },
		{ 64, "66 0f 3a 61 05 00 00 00 00 00", 10, 0 },   /* RIP-rel + ib */
		{ 64, "0f 1f 44 00 00", 5, 0 },
		{ 64, "66 2e 0f 1f 84 00 00 00 00 00", 10, 0 },
		{ 64, "f3 0f 1e fa", 4, 0 },                    /* endbr64 */
		{ 64, "0f 0d 08", 3, 0 },
		{ 64, "0f b9 c0", 3, 0 },                       /* ud1 */
		{ 64, "0f ff 40 10", 4, 0 },                    /* ud0 */
		{ 64, "0f 77", 2, 0 },                          /* emms */
		{ 64, "0f 37", 2, 0 },                          /* getsec */
		{ 64, "0f c8", 2, 0 },
		{ 64, "49 0f c9", 3, 0 },
		{ 64, "0f c7 0f", 3, 0 },                       /* cmpxchg8b */
		{ 64, "0f 01 d0", 3, 0 },                       /* xgetbv */
		{ 64, "0f 01 10", 3, 0 },                       /* lgdt */
		{ 64, "0f ae f0", 3, 0 },                       /* mfence */
		{ 64, "0f 00 d8", 3, 0 },                       /* ltr */
		{ 64, "0f 78 c3", 3, 0 },                       /* vmread */
		{ 64, "f0 0f b1 0a", 4, 0 },
		{ 32, "0f a0", 2, 0 },
	};

	(void)state;
	CHECK(v);
}

static void test_mode_specific_opcodes(void **state)
{
	static const struct vec v[] = {
		/* invalid in 64-bit mode, fine elsewhere */
		{ 64, "06", INVALID, 0 }, { 32, "06", 1, 0 },
		{ 64, "07", INVALID, 0 }, { 32, "07", 1, 0 },
		{ 64, "0e", INVALID, 0 }, { 16, "0e", 1, 0 },
		{ 64, "16", INVALID, 0 }, { 64, "17", INVALID, 0 },
		{ 64, "1e", INVALID, 0 }, { 64, "1f", INVALID, 0 },
		{ 64, "27", INVALID, 0 }, { 32, "27", 1, 0 },
		{ 64, "2f", INVALID, 0 }, { 64, "37", INVALID, 0 }, { 64, "3f", INVALID, 0 },
		{ 64, "60", INVALID, 0 }, { 32, "60", 1, 0 },
		{ 64, "61", INVALID, 0 }, { 16, "61", 1, 0 },
		{ 64, "d4 0a", INVALID, 0 }, { 32, "d4 0a", 2, 0 },
		{ 64, "d5 0a", INVALID, 0 }, { 16, "d5 0a", 2, 0 },   /* REX2 not handled */
		{ 64, "d6", INVALID, 0 }, { 32, "d6", 1, 0 },         /* SALC */
		/* 40-4F: REX in 64-bit mode, INC/DEC elsewhere */
		{ 32, "40", 1, 0 }, { 16, "4f", 1, 0 }, { 32, "66 48", 2, 0 },
		{ 64, "48 90", 2, 0 },
		/* 63: ARPL / MOVSXD, both ModR/M */
		{ 32, "63 c0", 2, 0 }, { 64, "48 63 c3", 3, 0 },
		/* undefined opcodes */
		{ 64, "0f 04", INVALID, 0 }, { 64, "0f 0a", INVALID, 0 },
		{ 64, "0f 0c", INVALID, 0 }, { 64, "0f 0e", INVALID, 0 },
		{ 64, "0f 0f c1 b4", INVALID, 0 },                /* 3DNow! */
		{ 64, "0f 24 c0", INVALID, 0 }, { 64, "0f 26 c0", INVALID, 0 },
		{ 64, "0f 36", INVALID, 0 }, { 64, "0f 39", INVALID, 0 },
		{ 64, "0f 3b", INVALID, 0 }, { 64, "0f 3f", INVALID, 0 },
		{ 64, "0f 7a", INVALID, 0 }, { 64, "0f a6", INVALID, 0 },
		{ 64, "0f a7", INVALID, 0 },
		/* group slots that are #UD */
		{ 64, "fe c0", 2, 0 }, { 64, "fe d0", INVALID, 0 },
		{ 64, "8f c0", 2, 0 }, { 64, "8f c8", INVALID, 0 },       /* no XOP */
		{ 64, "c6 c8 01", INVALID, 0 }, { 64, "c7 d0 00 00 00 00", INVALID, 0 },
		{ 64, "0f 00 f0", INVALID, 0 }, { 64, "0f 00 38", INVALID, 0 },
		{ 64, "0f ba c0 03", INVALID, 0 }, { 64, "0f ba e0 03", 4, 0 },
	};

	uint8_t rex = 0x48;
	struct x86_insn in;

	(void)state;
	CHECK(v);
	/* a REX byte is a prefix in 64-bit mode: the opcode is still to come */
	assert_int_equal(x86_decode(&rex, 1, X86_MODE_64, &in), TRUNC);
	assert_int_equal(x86_decode(&rex, 1, X86_MODE_32, &in), 1);
}

static void test_prefixes(void **state)
{
	static const struct vec v[] = {
		{ 64, "f0 48 01 c0", 4, 0 },
		{ 64, "48 66 90", 3, 0 },                        /* REX before 66 is dropped */
		{ 64, "66 48 90", 3, 0 },
		{ 64, "48 40 b8 44 33 22 11", 7, 0 },            /* only the last REX counts */
		{ 64, "40 48 b8 11 22 33 44 55 66 77 88", 11, 0 },
		{ 64, "64 48 8b 04 25 28 00 00 00", 9, 0 },
		{ 64, "26 2e 36 3e 64 65 90", 7, 0 },
		{ 64, "f3 48 a5", 3, 0 },
		{ 32, "f2 ae", 2, 0 },
		/* 15 bytes is the limit; the 16th is #GP */
		{ 64, "66 66 66 66 66 66 66 66 66 66 66 66 66 66 90", 15, 0 },
		{ 64, "66 66 66 66 66 66 66 66 66 66 66 66 66 66 66 90", TOOLONG, 0 },
		{ 16, "26 26 26 26 26 26 26 26 26 26 26 26 26 26 26", TOOLONG, 0 },
		{ 64, "66 66 66 66 66 66 66 66 66 66 66 66 66 05 34 12", TOOLONG, 0 },
		{ 64, "66 66 66 66 66 66 66 66 66 66 66 66 05 34 12", 15, 0 },
		{ 64, "2e 2e 2e 2e 2e 2e 2e 2e 2e 2e 2e 48 b8 11 22 33 44 55 66 77 88",
		  TOOLONG, 0 },
	};
	uint8_t buf[16];
	struct x86_insn in;

	(void)state;
	CHECK(v);

	/* A 17-byte instruction reported as too long once 15 bytes are seen, */
	memset(buf, 0x66, sizeof(buf));
	assert_int_equal(x86_decode(buf, 15, X86_MODE_64, &in), TOOLONG);
	/* but as truncated while fewer are, so the caller fetches more. */
	assert_int_equal(x86_decode(buf, 10, X86_MODE_64, &in), TRUNC);
	/* When the prefixes are known to need more than 15, say so early. */
	memcpy(buf, (const uint8_t[]){ 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
				       0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x05 }, 14);
	assert_int_equal(x86_decode(buf, 14, X86_MODE_64, &in), TOOLONG);
}

static void test_vex_evex(void **state)
{
	static const struct vec v[] = {
		/* VEX, 64-bit */
		{ 64, "c5 f8 77", 3, 0 },                        /* vzeroupper: no ModR/M */
		{ 64, "c5 fc 77", 3, 0 },                        /* vzeroall */
		{ 64, "c5 f5 fe d0", 4, 0 },
		{ 64, "c5 fd 6f 05 78 56 34 12", 8, 0 },         /* RIP-relative */
		{ 64, "c4 e3 fd 00 c8 01", 6, 0 },               /* vpermq: map 3, ib */
		{ 64, "c4 e2 7d 58 c0", 5, 0 },                  /* map 2 */
		{ 64, "c4 e3 69 4a c1 30", 6, 0 },               /* vblendvps: is4 */
		{ 64, "c5 f9 70 c8 01", 5, 0 },                  /* map 1 with ib */
		{ 64, "c5 f9 c5 c0 01", 5, 0 },
		{ 64, "c5 f1 c4 c8 01", 5, 0 },
		{ 64, "c5 f4 c6 d0 01", 5, 0 },                  /* vshufps */
		{ 64, "c5 fc c2 c1 01", 5, 0 },                  /* vcmpps */
		{ 64, "c5 f1 73 d8 03", 5, 0 },                  /* vpsrldq */
		{ 64, "c5 f9 6f c1", 4, 0 },                     /* map 1, no ib */
		{ 64, "c4 41 7e 6f 01", 5, 0 },
		{ 64, "c4 e2 78 49 00", 5, 0 },                  /* ldtilecfg */
		{ 64, "67 c5 f9 6f 00", 5, 0 },                  /* 67 is allowed */
		{ 64, "2e c5 f9 6f 00", 5, 0 },
		{ 64, "66 c5 f8 77", INVALID, 0 },
		{ 64, "f3 c5 f8 77", INVALID, 0 },
		{ 64, "f2 c4 e3 fd 00 c8 01", INVALID, 0 },
		{ 64, "f0 c5 f8 77", INVALID, 0 },
		{ 64, "40 c5 f8 77", INVALID, 0 },
		{ 64, "c4 e0 7d 58 c0", INVALID, 0 },            /* map 0 */
		{ 64, "c4 e4 7d 58 c0", INVALID, 0 },            /* map 4 */
		/* VEX in 32/16-bit code: only with ModR/M-like bits 7:6 = 11 */
		{ 32, "c5 f5 fe d0", 4, 0 },
		{ 32, "c4 e3 fd 00 c8 01", 6, 0 },
		{ 32, "c5 06", 2, 0 },                           /* lds eax, [esi] */
		{ 32, "c4 05 78 56 34 12", 6, 0 },               /* les eax, [disp32] */
		{ 32, "66 c5 06", 3, 0 },                        /* lds with 66: fine */
		{ 32, "66 c5 f8 77", INVALID, 0 },
		{ 16, "c5 f5 fe d0", 4, 0 },
		{ 16, "c5 06 34 12", 4, 0 },                     /* lds ax, [0x1234] */
		{ 16, "c4 1f", 2, 0 },
		/* EVEX, 64-bit */
		{ 64, "62 f1 6d 48 fe d9", 6, 0 },
		{ 64, "62 f1 6d c9 fe 58 01", 7, 0 },            /* disp8*N is one byte */
		{ 64, "62 f1 6d 48 fe 98 00 10 00 00", 10, 0 },
		{ 64, "62 f1 7d 48 70 c8 01", 7, 0 },            /* map 1 ib */
		{ 64, "62 f3 7d 48 25 d0 ff", 7, 0 },            /* vpternlogd */
		{ 64, "62 f1 7c 48 c2 ca 01", 7, 0 },            /* vcmpps */
		{ 64, "62 e1 7d 08 c5 c0 01", 7, 0 },            /* vpextrw xmm16 */
		{ 64, "62 f5 6c 48 58 d9", 6, 0 },               /* map 5 (FP16) */
		{ 64, "62 f6 6d 48 98 d9", 6, 0 },               /* map 6 */
		{ 64, "62 61 fe 48 6f 05 00 00 00 00", 10, 0 },  /* RIP-relative */
		{ 64, "62 f4 6d 48 fe d9", INVALID, 0 },         /* map 4: APX */
		{ 64, "62 f0 6d 48 fe d9", INVALID, 0 },         /* map 0 */
		{ 64, "62 f1 69 48 fe d9", INVALID, 0 },         /* P1 bit 2 clear */
		{ 64, "66 62 f1 6d 48 fe d9", INVALID, 0 },
		{ 64, "41 62 f1 6d 48 fe d9", INVALID, 0 },
		/* EVEX in 32/16-bit code, BOUND otherwise */
		{ 32, "62 f1 6d 48 fe d9", 6, 0 },
		{ 32, "62 f1 6d 48 fe 58 01", 7, 0 },
		{ 32, "62 00", 2, 0 },                           /* bound eax, [eax] */
		{ 32, "62 05 78 56 34 12", 6, 0 },
		{ 16, "62 07", 2, 0 },
		{ 16, "62 06 34 12", 4, 0 },
		{ 16, "62 f1 6d 48 fe d9", 6, 0 },
	};
	struct x86_insn in;
	uint8_t b[16];

	(void)state;
	CHECK(v);

	assert_int_equal(x86_decode(b, unhex("c4 e3 fd 00 c8 01", b, sizeof(b)),
				    X86_MODE_64, &in), 6);
	assert_int_equal(in.encoding, X86_ENC_VEX);
	assert_int_equal(in.map, X86_MAP_0F3A);
	assert_int_equal(in.opcode, 0x00);
	assert_true(in.flags & X86_F_W);
	assert_int_equal(in.imm, 1);
	assert_int_equal(x86_decode(b, unhex("62 f5 6c 48 58 d9", b, sizeof(b)),
				    X86_MODE_64, &in), 6);
	assert_int_equal(in.encoding, X86_ENC_EVEX);
	assert_int_equal(in.map, X86_MAP_EVEX5);
	assert_int_equal(in.opcode, 0x58);
	assert_int_equal(in.modrm, 0xd9);
	assert_int_equal(x86_decode(b, unhex("62 00", b, sizeof(b)), X86_MODE_32, &in), 2);
	assert_int_equal(in.encoding, X86_ENC_LEGACY);
	assert_int_equal(in.opcode, 0x62);
	/* The LES/VEX choice needs the byte after C4: without it, truncated. */
	b[0] = 0xc4;
	assert_int_equal(x86_decode(b, 1, X86_MODE_32, &in), TRUNC);
	assert_int_equal(x86_decode(b, 1, X86_MODE_64, &in), TRUNC);
}

/* --- decoded fields ------------------------------------------------------- */

static void test_fields(void **state)
{
	struct x86_insn in;
	uint8_t b[16];

	(void)state;
	/* mov rax, [rsp + rbx*4 + 0x12345678] with fs: and 67 */
	assert_int_equal(x86_decode(b, unhex("64 48 8b 84 9c 78 56 34 12", b, sizeof(b)),
				    X86_MODE_64, &in), 9);
	assert_int_equal(in.npfx, 2);
	assert_int_equal(in.seg, 0x64);
	assert_int_equal(in.rex, 0x48);
	assert_int_equal(in.opsize, 64);
	assert_int_equal(in.addrsize, 64);
	assert_int_equal(in.map, X86_MAP_PRIMARY);
	assert_int_equal(in.opcode, 0x8b);
	assert_true(in.flags & X86_F_MODRM);
	assert_true(in.flags & X86_F_SIB);
	assert_true(in.flags & X86_F_W);
	assert_int_equal(in.modrm, 0x84);
	assert_int_equal(in.sib, 0x9c);
	assert_int_equal(in.disp_size, 4);
	assert_int_equal(in.disp, 0x12345678);
	assert_int_equal(in.imm_size, 0);

	/* negative disp8, RIP-relative with negative disp32 */
	assert_int_equal(x86_decode(b, unhex("8b 45 f8", b, sizeof(b)), X86_MODE_64, &in), 3);
	assert_int_equal(in.disp, -8);
	assert_int_equal(x86_decode(b, unhex("48 8d 05 f0 ff ff ff", b, sizeof(b)),
				    X86_MODE_64, &in), 7);
	assert_true(in.flags & X86_F_RIPREL);
	assert_int_equal(in.disp, -16);
	assert_int_equal(x86_decode(b, unhex("8b 05 f0 ff ff ff", b, sizeof(b)),
				    X86_MODE_32, &in), 6);
	assert_false(in.flags & X86_F_RIPREL);

	/* immediates */
	assert_int_equal(x86_decode(b, unhex("48 b8 88 77 66 55 44 33 22 11", b, sizeof(b)),
				    X86_MODE_64, &in), 10);
	assert_int_equal(in.imm_size, 8);
	assert_true(in.imm == 0x1122334455667788ull);
	assert_int_equal(x86_decode(b, unhex("c8 34 12 05", b, sizeof(b)), X86_MODE_32, &in), 4);
	assert_int_equal(in.imm, 0x1234);
	assert_int_equal(in.imm2, 5);
	assert_int_equal(in.imm_size, 3);
	assert_int_equal(x86_decode(b, unhex("ea 78 56 34 12 10 00", b, sizeof(b)),
				    X86_MODE_32, &in), 7);
	assert_int_equal(in.imm, 0x12345678);
	assert_int_equal(in.imm2, 0x10);
	assert_int_equal(x86_decode(b, unhex("ea 34 12 00 f0", b, sizeof(b)), X86_MODE_16, &in), 5);
	assert_int_equal(in.imm, 0x1234);
	assert_int_equal(in.imm2, 0xf000);

	/* operand and address sizes */
	assert_int_equal(x86_decode(b, unhex("50", b, sizeof(b)), X86_MODE_64, &in), 1);
	assert_int_equal(in.opsize, 64);                         /* d64 */
	assert_int_equal(x86_decode(b, unhex("66 50", b, sizeof(b)), X86_MODE_64, &in), 2);
	assert_int_equal(in.opsize, 16);
	assert_int_equal(x86_decode(b, unhex("66 e8 00 00 00 00", b, sizeof(b)),
				    X86_MODE_64, &in), 6);
	assert_int_equal(in.opsize, 64);                         /* f64 */
	assert_int_equal(x86_decode(b, unhex("01 c0", b, sizeof(b)), X86_MODE_64, &in), 2);
	assert_int_equal(in.opsize, 32);
	assert_int_equal(x86_decode(b, unhex("66 67 01 00", b, sizeof(b)), X86_MODE_16, &in), 4);
	assert_int_equal(in.opsize, 32);
	assert_int_equal(in.addrsize, 32);
	assert_true(in.flags & X86_F_OPSIZE);
	assert_true(in.flags & X86_F_ADSIZE);
	assert_int_equal(x86_decode(b, unhex("67 01 00", b, sizeof(b)), X86_MODE_32, &in), 3);
	assert_int_equal(in.addrsize, 16);
	assert_int_equal(x86_decode(b, unhex("f0 f3 f2 01 00", b, sizeof(b)), X86_MODE_32, &in), 5);
	assert_true(in.flags & X86_F_LOCK);
	assert_true(in.flags & X86_F_REP);
	assert_true(in.flags & X86_F_REPNE);

	/* 0F maps */
	assert_int_equal(x86_decode(b, unhex("66 0f 3a 0f c1 03", b, sizeof(b)),
				    X86_MODE_64, &in), 6);
	assert_int_equal(in.map, X86_MAP_0F3A);
	assert_int_equal(in.opcode, 0x0f);
	assert_int_equal(in.imm, 3);
	assert_int_equal(x86_decode(b, unhex("0f 38 f0 00", b, sizeof(b)), X86_MODE_64, &in), 4);
	assert_int_equal(in.map, X86_MAP_0F38);
	assert_int_equal(in.opcode, 0xf0);
}

/* --- targets --------------------------------------------------------------- */

static uint64_t target_of(enum x86_mode mode, const char *hex, uint64_t ip)
{
	struct x86_insn in;
	uint8_t b[16];
	uint64_t t = 0xdeadbeef;

	assert_true(x86_decode(b, unhex(hex, b, sizeof(b)), mode, &in) > 0);
	assert_true(x86_branch_target(&in, ip, &t));
	return t;
}

static void test_targets(void **state)
{
	struct x86_insn in;
	uint8_t b[16];
	uint64_t t = 0x1234;

	(void)state;
	/* 64-bit: rel8/rel32 sign-extended, 66 ignored, 64-bit wrap */
	assert_true(target_of(64, "eb fe", 0x1000) == 0x1000);
	assert_true(target_of(64, "74 10", 0x1000) == 0x1012);
	assert_true(target_of(64, "e8 fb ff ff ff", 0x1000) == 0x1000);
	assert_true(target_of(64, "e9 00 00 00 80", 0xffffffff80001000ull) ==
		    0xffffffff80001005ull - 0x80000000ull);
	assert_true(target_of(64, "0f 85 00 01 00 00", 0x7ffffffff000ull) == 0x7ffffffff106ull);
	assert_true(target_of(64, "66 e8 00 00 01 00", 0xffff0000ull) == 0x100000006ull);
	assert_true(target_of(64, "eb 00", 0xfffffffffffffffeull) == 0);
	assert_true(target_of(64, "e2 fe", 0x4000) == 0x4000);
	assert_true(target_of(64, "67 e3 10", 0x4000) == 0x4013);
	/* 32-bit: EIP wraps at 4 GiB; 66 makes it 16 bits */
	assert_true(target_of(32, "e9 20 00 00 00", 0xfffffff0u) == 0x15);
	assert_true(target_of(32, "eb 80", 0x10) == 0xffffff92u);
	assert_true(target_of(32, "66 e9 00 10", 0x12345) == 0x3349);
	assert_true(target_of(32, "66 0f 84 00 10", 0xfff0) == 0x0ff5);
	/* 16-bit: IP wraps at 64 KiB; 66 makes it 32 bits */
	assert_true(target_of(16, "eb e0", 0) == 0xffe2);
	assert_true(target_of(16, "e9 00 f0", 0x2000) == 0x1003);
	assert_true(target_of(16, "e8 fd ff", 0x100) == 0x100);
	assert_true(target_of(16, "66 e9 00 f0 ff ff", 0x10) == 0xfffff016u);
	assert_true(target_of(16, "67 e2 fd", 0x100) == 0x100);
	assert_true(target_of(16, "0f 84 f0 ff", 0x8) == 0xfffc);

	/* no target for anything but direct near branches */
	assert_int_equal(x86_decode(b, unhex("ff e0", b, sizeof(b)), X86_MODE_64, &in), 2);
	assert_false(x86_branch_target(&in, 0, &t));
	assert_int_equal(x86_decode(b, unhex("c3", b, sizeof(b)), X86_MODE_64, &in), 1);
	assert_false(x86_branch_target(&in, 0, &t));
	assert_int_equal(x86_decode(b, unhex("ea 78 56 34 12 10 00", b, sizeof(b)),
				    X86_MODE_32, &in), 7);
	assert_false(x86_branch_target(&in, 0, &t));
	assert_int_equal(x86_decode(b, unhex("c7 f8 10 00 00 00", b, sizeof(b)),
				    X86_MODE_64, &in), 6);   /* xbegin: not a branch */
	assert_false(x86_branch_target(&in, 0, &t));
	assert_int_equal(x86_decode(b, unhex("90", b, sizeof(b)), X86_MODE_64, &in), 1);
	assert_false(x86_branch_target(&in, 0, &t));
	assert_false(x86_branch_target(NULL, 0, &t));
	assert_true(t == 0x1234);
}

/* --- small API pieces ------------------------------------------------------ */

static void test_kinds_names_errors(void **state)
{
	struct x86_insn in;
	uint8_t b[4] = { 0x90 };

	(void)state;
	assert_int_equal(x86_branch_kind(X86_BR_NONE), TV_BR_UNKNOWN);
	assert_int_equal(x86_branch_kind(X86_BR_JCC), TV_BR_JCC);
	assert_int_equal(x86_branch_kind(X86_BR_JMP), TV_BR_JMP);
	assert_int_equal(x86_branch_kind(X86_BR_JMP_IND), TV_BR_JMP_IND);
	assert_int_equal(x86_branch_kind(X86_BR_CALL), TV_BR_CALL);
	assert_int_equal(x86_branch_kind(X86_BR_CALL_IND), TV_BR_CALL_IND);
	assert_int_equal(x86_branch_kind(X86_BR_RET), TV_BR_RET);
	assert_int_equal(x86_branch_kind(X86_BR_FAR_JMP), TV_BR_FAR);
	assert_int_equal(x86_branch_kind(X86_BR_FAR_CALL), TV_BR_FAR);
	assert_int_equal(x86_branch_kind(X86_BR_FAR_RET), TV_BR_FAR);
	assert_int_equal(x86_branch_kind(X86_BR_INT), TV_BR_SYSCALL);
	assert_int_equal(x86_branch_kind(X86_BR_SYSCALL), TV_BR_SYSCALL);
	assert_int_equal(x86_branch_kind(X86_BR_SYSRET), TV_BR_SYSRET);
	assert_int_equal(x86_branch_kind(X86_BR_IRET), TV_BR_SYSRET);
	assert_int_equal(x86_branch_kind(X86_BR_COUNT), TV_BR_UNKNOWN);
	for (int i = 0; i < X86_BR_COUNT; i++)
		assert_string_not_equal(x86_branch_name((enum x86_branch)i), "?");
	assert_string_equal(x86_branch_name(X86_BR_CALL_IND), "call_ind");
	assert_string_equal(x86_branch_name(X86_BR_COUNT), "?");
	assert_string_equal(x86_strerror(TRUNC), "instruction continues past the bytes given");
	assert_string_equal(x86_strerror(0), "unknown error");
	assert_string_not_equal(x86_strerror(INVALID), "unknown error");
	assert_string_not_equal(x86_strerror(TOOLONG), "unknown error");
	assert_string_not_equal(x86_strerror(-X86_ERR_ARG), "unknown error");

	assert_int_equal(x86_decode(b, 1, X86_MODE_64, NULL), -X86_ERR_ARG);
	assert_int_equal(x86_decode(NULL, 1, X86_MODE_64, &in), -X86_ERR_ARG);
	assert_int_equal(x86_decode(b, 1, (enum x86_mode)8, &in), -X86_ERR_ARG);
	assert_int_equal(x86_decode(b, 0, X86_MODE_64, &in), TRUNC);
	/* on error everything but the mode is cleared */
	b[0] = 0xe8;
	assert_int_equal(x86_decode(b, 3, X86_MODE_32, &in), TRUNC);
	assert_int_equal(in.len, 0);
	assert_int_equal(in.opcode, 0);
	assert_int_equal(in.mode, 32);
}

/*
 * Every one-byte opcode in every mode: the result is a length within
 * bounds or a defined error, never a crash or an over-read (ASan watches
 * the exact-size heap buffer).
 */
static void test_exhaustive_no_overread(void **state)
{
	static const enum x86_mode modes[] = { X86_MODE_16, X86_MODE_32, X86_MODE_64 };
	unsigned seed = 12345;

	(void)state;
	for (unsigned m = 0; m < 3; m++) {
		for (unsigned i = 0; i < 3 * 65536; i++) {
			uint8_t *p;
			size_t n = 1 + i % 15;
			struct x86_insn in;
			int rc;

			p = malloc(n);
			assert_non_null(p);
			for (size_t k = 0; k < n; k++) {
				seed = seed * 1103515245u + 12345u;
				p[k] = (uint8_t)(seed >> 16);
			}
			if (i < 65536) {   /* every first-two-byte pair once */
				p[0] = (uint8_t)i;
				if (n > 1)
					p[1] = (uint8_t)(i >> 8);
			}
			rc = x86_decode(p, n, modes[m], &in);
			assert_true(rc == TRUNC || rc == INVALID || rc == TOOLONG ||
				    (rc >= 1 && rc <= (int)n && in.len == rc));
			free(p);
		}
	}
}

/* --- objdump ground truth ---------------------------------------------------- */

static enum x86_branch class_from_name(const char *s)
{
	for (int i = 0; i < X86_BR_COUNT; i++)
		if (strcmp(s, x86_branch_name((enum x86_branch)i)) == 0)
			return (enum x86_branch)i;
	return X86_BR_COUNT;
}

/*
 * Where objdump decodes what an Intel CPU refuses, the decoder follows the
 * SDM and returns -X86_ERR_INVALID: AMD XOP (8F with map >= 8), AMD
 * 3DNow! (0F 0E, 0F 0F), VIA PadLock (0F A6, 0F A7), and VEX/EVEX after
 * 66/F2/F3/F0 or REX (#UD, SDM 2 2.3.2).  Found by looking at the bytes
 * only, independent of the decoder's tables.  Returns why, or NULL.
 */
static const char *not_intel(int mode, const uint8_t *b, size_t n)
{
	size_t i = 0;
	bool vex_bad = false;

	while (i < n) {
		if (b[i] == 0x66 || b[i] == 0xf0 || b[i] == 0xf2 || b[i] == 0xf3) {
			vex_bad = true;
		} else if (b[i] == 0x26 || b[i] == 0x2e || b[i] == 0x36 || b[i] == 0x3e ||
			   b[i] == 0x64 || b[i] == 0x65 || b[i] == 0x67) {
			/* allowed before VEX */
		} else if (mode == 64 && (b[i] & 0xf0) == 0x40) {
			vex_bad = true;
		} else {
			break;
		}
		i++;
	}
	if (i + 1 >= n)
		return NULL;
	if (b[i] == 0x8f && (b[i + 1] & 0x1f) >= 8)
		return "XOP";
	if (b[i] == 0x0f && (b[i + 1] == 0x0e || b[i + 1] == 0x0f))
		return "3DNow!";
	if (b[i] == 0x0f && (b[i + 1] == 0xa6 || b[i + 1] == 0xa7))
		return "PadLock";
	if ((b[i] == 0xc4 || b[i] == 0xc5 || b[i] == 0x62) && vex_bad &&
	    (mode == 64 || (b[i + 1] & 0xc0) == 0xc0))
		return "VEX/EVEX after a prefix";
	return NULL;
}

static bool file_older_than(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) != 0 || stat(b, &sb) != 0)
		return false;
	return sa.st_mtime < sb.st_mtime;
}

static void test_objdump_vectors(void **state)
{
	char path[4200], script[4200], cmd[9000], line[512];
	const char *env = getenv("TV_X86_VECTORS");
	unsigned long total = 0, per_mode[65] = { 0 }, bad = 0, targets = 0;
	unsigned long not_intel_count = 0;
	FILE *f;

	(void)state;
	snprintf(script, sizeof(script), "%s/tests/unit/vmm/lib/gen_x86_vectors.sh", repo_root);
	if (env && *env)
		snprintf(path, sizeof(path), "%s", env);
	else
		snprintf(path, sizeof(path), "%s/build/x86_vectors.txt", repo_root);

	if (access(path, R_OK) != 0 || file_older_than(path, script)) {
		int st;

		snprintf(cmd, sizeof(cmd), "bash '%s' '%s'", script, path);
		st = system(cmd);
		if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
			/* An older file is still objdump's word: use it. */
			if (access(path, R_OK) != 0) {
				print_message("objdump not installed: ground-truth vectors skipped\n");
				skip();
			}
			print_message("objdump not installed: using the existing %s\n", path);
			st = 0;
		}
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			print_error("%s failed (status %d)\n", cmd, st);
			fail();
		}
	}
	f = fopen(path, "r");
	if (!f) {
		print_error("cannot open %s\n", path);
		fail();
	}
	while (fgets(line, sizeof(line), f)) {
		char addr_s[40], hex[64], cls_s[16], tgt_s[40], mn[40], src[64];
		uint8_t buf[32];
		struct x86_insn in;
		enum x86_branch want_br;
		int mode, rc;
		size_t n;
		bool mismatch = false;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%d %39s %63s %15s %39s %39s %63s", &mode, addr_s, hex,
			   cls_s, tgt_s, mn, src) != 7) {
			print_error("malformed vector line: %s", line);
			fail();
		}
		if (mode != 16 && mode != 32 && mode != 64) {
			print_error("bad mode in vector line: %s", line);
			fail();
		}
		memset(buf, 0xcc, sizeof(buf));
		n = unhex(hex, buf, 16);
		want_br = class_from_name(cls_s);
		assert_true(want_br != X86_BR_COUNT);
		total++;
		per_mode[mode]++;

		rc = x86_decode(buf, sizeof(buf), (enum x86_mode)mode, &in);
		if (rc != (int)n || in.branch != want_br) {
			mismatch = true;
		} else {
			/* exact bytes decode the same; one fewer is truncated */
			struct x86_insn in2;

			if (x86_decode(buf, n, (enum x86_mode)mode, &in2) != rc ||
			    x86_decode(buf, n - 1, (enum x86_mode)mode, &in2) != TRUNC)
				mismatch = true;
		}
		if (!mismatch && strcmp(tgt_s, "-") != 0 && strcmp(addr_s, "-") != 0) {
			uint64_t ip = strtoull(addr_s, NULL, 16);
			uint64_t want = strtoull(tgt_s, NULL, 16), got = 0;
			/* objdump does not wrap 16-bit IPs; the CPU does (SDM JMP). */
			uint64_t mask = in.opsize == 16 ? 0xffff :
					mode != 64 ? 0xffffffffull : ~0ull;

			if (!x86_branch_target(&in, ip, &got) || (got & mask) != (want & mask))
				mismatch = true;
			else
				targets++;
		}
		if (mismatch && rc == INVALID && not_intel(mode, buf, n)) {
			if (not_intel_count < 5)
				print_message("not Intel (%s), refused as the SDM says: %d %s %s (%s)\n",
					      not_intel(mode, buf, n), mode, addr_s, hex, mn);
			not_intel_count++;
			per_mode[mode]--;
			continue;
		}
		if (mismatch) {
			if (bad < 40)
				print_error("objdump mismatch: %d %s %s (%s, %s from %s): "
					    "decoder %d %s\n", mode, addr_s, hex, mn, cls_s, src,
					    rc, rc > 0 ? x86_branch_name(in.branch) : x86_strerror(rc));
			bad++;
		}
	}
	fclose(f);
	print_message("objdump-verified instructions: %lu (16-bit %lu, 32-bit %lu, "
		      "64-bit %lu), branch targets %lu, not Intel %lu, mismatches %lu\n",
		      total - not_intel_count, per_mode[16], per_mode[32], per_mode[64],
		      targets, not_intel_count, bad);
	assert_true(total > 1000);
	assert_true(per_mode[64] > 0);
	assert_int_equal(bad, 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_branches_64),
		cmocka_unit_test(test_branches_32),
		cmocka_unit_test(test_branches_16),
		cmocka_unit_test(test_immediates),
		cmocka_unit_test(test_modrm_sib_disp),
		cmocka_unit_test(test_mode_specific_opcodes),
		cmocka_unit_test(test_prefixes),
		cmocka_unit_test(test_vex_evex),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_targets),
		cmocka_unit_test(test_kinds_names_errors),
		cmocka_unit_test(test_exhaustive_no_overread),
		cmocka_unit_test(test_objdump_vectors),
	};
	const char *marker = argc > 0 ? strstr(argv[0], "/build/host/") : NULL;

	if (argc > 0 && strncmp(argv[0], "build/host/", 11) == 0)
		snprintf(repo_root, sizeof(repo_root), ".");
	else if (marker)
		snprintf(repo_root, sizeof(repo_root), "%.*s", (int)(marker - argv[0]), argv[0]);
	return cmocka_run_group_tests_name("test_x86_decode", tests, NULL, NULL);
}
