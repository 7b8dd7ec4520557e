/* SPDX-License-Identifier: MIT */
/*
 * elfpack.c - elfpack IN OUT: rewrite an x86-64 ELF executable (the
 * kernel's vmlinux) keeping only what a loader needs: the ELF header,
 * its PT_LOAD program headers and their file bytes, packed one after the
 * other, each segment's trailing zero bytes dropped (p_filesz shrinks,
 * p_memsz stays: the loader zeroes the rest, as for any .bss).
 *
 * Debian's vmlinux (62 MiB) carries its .bss, .brk and .init.scratch as
 * file bytes, non-loaded sections and the relocation table; packed it is
 * ~36 MiB, which is what the bench's loader (linuxload.c) reads under
 * Bochs.  A host tool, built and run by scripts/linux-fixture.sh.
 *
 * Exit status 0, or 1 with a message (not an ELF64 x86-64 executable,
 * I/O error).
 */
#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "elfpack: %s: %s\n", path, what);
	return 1;
}

int main(int argc, char **argv)
{
	FILE *in, *out;
	unsigned char *buf;
	long len;
	Elf64_Ehdr eh, oh;
	Elf64_Phdr *ph, *op;
	uint64_t off;
	int n = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: elfpack IN OUT\n");
		return 2;
	}
	in = fopen(argv[1], "rb");
	if (!in || fseek(in, 0, SEEK_END) != 0 || (len = ftell(in)) < (long)sizeof(eh) ||
	    fseek(in, 0, SEEK_SET) != 0)
		return fail("cannot read", argv[1]);
	buf = malloc((size_t)len);
	if (!buf || fread(buf, 1, (size_t)len, in) != (size_t)len)
		return fail("cannot read", argv[1]);
	fclose(in);

	memcpy(&eh, buf, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_machine != EM_X86_64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > (uint64_t)len)
		return fail("not an ELF64 x86-64 executable", argv[1]);
	ph = (Elf64_Phdr *)(buf + eh.e_phoff);
	op = calloc(eh.e_phnum, sizeof(*op));
	if (!op)
		return fail("out of memory", argv[1]);

	off = sizeof(Elf64_Ehdr);
	for (int i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD)
			off += sizeof(Elf64_Phdr);
	for (int i = 0; i < eh.e_phnum; i++) {
		uint64_t fs = ph[i].p_filesz;

		if (ph[i].p_type != PT_LOAD)
			continue;
		if (ph[i].p_offset + fs > (uint64_t)len)
			return fail("segment beyond the end of the file", argv[1]);
		while (fs > 0 && buf[ph[i].p_offset + fs - 1] == 0)
			fs--;
		op[n] = ph[i];
		op[n].p_offset = off;
		op[n].p_filesz = fs;
		off += fs;
		n++;
	}

	oh = eh;
	oh.e_phoff = sizeof(Elf64_Ehdr);
	oh.e_phnum = (Elf64_Half)n;
	oh.e_shoff = 0;
	oh.e_shnum = 0;
	oh.e_shstrndx = SHN_UNDEF;
	out = fopen(argv[2], "wb");
	if (!out || fwrite(&oh, sizeof(oh), 1, out) != 1 ||
	    fwrite(op, sizeof(*op), (size_t)n, out) != (size_t)n)
		return fail("cannot write", argv[2]);
	for (int i = 0, j = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (fwrite(buf + ph[i].p_offset, 1, op[j].p_filesz, out) != op[j].p_filesz)
			return fail("cannot write", argv[2]);
		j++;
	}
	if (fclose(out) != 0)
		return fail("cannot write", argv[2]);
	free(op);
	free(buf);
	return 0;
}
