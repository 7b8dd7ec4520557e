/* SPDX-License-Identifier: MIT */
/*
 * test_host_x86len.c - branch lengths (host-tools/lib/x86_len.c) against the
 * assembler: every form is assembled at test time between labels, and
 * the label distances are the expected lengths.
 */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host-tools/lib/x86_len.h"
#include "tests/host/helpers.h"

#define NFORMS 37

static const char asm_src[] =
	"	.text\n"
	"	.globl L0\n"
	"L0:	jz L0\n"
	"L1:	jz far\n"
	"L2:	jmp far\n"
	"L3:	jmp L3\n"
	"L4:	call far\n"
	"L5:	ret\n"
	"L6:	ret $8\n"
	"L7:	lret\n"
	"L8:	lret $16\n"
	"L9:	call *%rax\n"
	"L10:	call *(%rax)\n"
	"L11:	call *8(%rax)\n"
	"L12:	call *0x1000(%rax)\n"
	"L13:	call *(%rax,%rbx,4)\n"
	"L14:	call *0x10(%rsp)\n"
	"L15:	call *0x12345678(,%rbx,8)\n"
	"L16:	call *far(%rip)\n"
	"L17:	jmp *%r11\n"
	"L18:	jmp *8(%r12)\n"
	"L19:	notrack jmp *%rax\n"
	"L20:	bnd jmp far\n"
	"L21:	ljmp *(%rax)\n"
	"L22:	lcall *(%rax)\n"
	"L23:	.byte 0x48, 0xff, 0x28\n"          /* rex.w ljmp *(%rax) */
	"L24:	loop L24\n"
	"L25:	jrcxz L25\n"
	"L26:	syscall\n"
	"L27:	sysretq\n"
	"L28:	sysenter\n"
	"L29:	sysexit\n"
	"L30:	int $0x80\n"
	"L31:	int3\n"
	"L32:	iretq\n"
	"L33:	.byte 0xf1\n"                      /* int1 */
	"L34:	addr32 call *(%eax)\n"
	"L35:	.byte 0x3e\n	jz far\n"          /* branch hint prefix */
	"L36:	call *-0x80(%rbp,%r13,2)\n"
	"L37:	nop\n"
	"	.skip 300\n"
	"far:	ret\n";

static uint8_t *text_of(const char *obj, size_t *len)
{
	int fd = open(obj, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	uint8_t *out = NULL;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		gelf_getshdr(scn, &sh);
		if (strcmp(elf_strptr(elf, shstrndx, sh.sh_name), ".text"))
			continue;
		d = elf_getdata(scn, NULL);
		out = malloc(d->d_size);
		assert_non_null(out);
		memcpy(out, d->d_buf, d->d_size);
		*len = d->d_size;
	}
	elf_end(elf);
	close(fd);
	assert_non_null(out);
	return out;
}

static void test_against_assembler(void **state)
{
	char *obj = th_compile("branches", "S", asm_src, "-c");
	uint64_t at[NFORMS + 1];
	uint8_t *text;
	size_t len;

	(void)state;
	assert_non_null(obj);
	text = text_of(obj, &len);
	for (int i = 0; i <= NFORMS; i++) {
		char name[16];

		snprintf(name, sizeof(name), "L%d", i);
		at[i] = th_elf_sym(obj, name);
	}
	for (int i = 0; i < NFORMS; i++) {
		unsigned want = (unsigned)(at[i + 1] - at[i]);
		unsigned got = tvh_x86_branch_len(text + at[i], len - at[i]);

		if (got != want)
			fail_msg("L%d: length %u, assembler says %u", i, got, want);
		/* One byte short of the instruction is "unknown". */
		assert_int_equal(tvh_x86_branch_len(text + at[i], want - 1), 0);
	}
	/* Sanity: the forms above cover the rel8/rel32 choices we meant. */
	assert_int_equal(at[1] - at[0], 2);
	assert_int_equal(at[2] - at[1], 6);
	/* The nop after the last form is not a branch. */
	assert_int_equal(tvh_x86_branch_len(text + at[NFORMS], len - at[NFORMS]), 0);
	free(text);
	free(obj);
}

static void test_not_branches(void **state)
{
	static const struct {
		uint8_t b[16];
		size_t n;
	} v[] = {
		{ { 0x90 }, 1 },                       /* nop */
		{ { 0x48, 0x89, 0xc3 }, 3 },           /* mov %rax,%rbx */
		{ { 0x0f, 0x0b }, 2 },                 /* ud2 */
		{ { 0xff, 0xc0 }, 2 },                 /* inc %eax (ff /0) */
		{ { 0xff, 0x30 }, 2 },                 /* push (%rax) (ff /6) */
		{ { 0x0f, 0x01, 0xc1 }, 3 },           /* vmcall */
		{ { 0xff }, 1 },                       /* cut before ModRM */
		{ { 0x0f }, 1 },
		{ { 0x66, 0x66 }, 2 },                 /* prefixes only */
		{ { 0x48 }, 1 },                       /* REX only */
		{ { 0 }, 0 },
	};

	(void)state;
	for (unsigned i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		assert_int_equal(tvh_x86_branch_len(v[i].b, v[i].n), 0);
	/* Prefixes past 15 bytes: no instruction is longer. */
	{
		uint8_t b[20];

		memset(b, 0x66, sizeof(b));
		b[19] = 0xc3;
		assert_int_equal(tvh_x86_branch_len(b, sizeof(b)), 0);
		assert_int_equal(tvh_x86_branch_len(b + 5, 15), 15);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_against_assembler),
		cmocka_unit_test(test_not_branches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
