/* SPDX-License-Identifier: MIT */
/*
 * pt_fixture.c - see pt_fixture.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/host/helpers.h"
#include "tests/host/pt_fixture.h"

static const char asm_src[] =
	"	.text\n"
	"	.globl _start\n"
	"_start:\n"
	"i_mov:	mov $3, %ecx\n"
	"i_call:	call func\n"
	"i_dec:	dec %ecx\n"
	"i_jnz:	jnz i_call\n"
	"i_lea:	lea target(%rip), %rax\n"
	"i_jmp:	jmp *%rax\n"
	"	ud2\n"
	"target:\n"
	"i_nop:	nop\n"
	"i_jmp2:	jmp *%rbx\n"
	"func:\n"
	"i_add:	add $1, %edx\n"
	"i_ret:	ret\n";

uint64_t ptf_sym(const struct pt_fixture *f, const char *name)
{
	return th_elf_sym(f->elf, name);
}

static void take(struct pt_fixture *f, const char *from, const char *to,
		 enum pt_insn_class c)
{
	f->taken[f->ntaken].from = ptf_sym(f, from);
	f->taken[f->ntaken].to = to ? ptf_sym(f, to) : PTF_OUTSIDE;
	f->taken[f->ntaken++].c = c;
}

int ptf_build(struct pt_fixture *f)
{
	memset(f, 0, sizeof(*f));
	f->elf = th_compile("pt_prog", "S", asm_src,
			    "-nostdlib -static -no-pie -Wl,-e,_start -Wl,--build-id=none");
	if (!f->elf)
		return -1;
	f->flow[f->nflow++] = ptf_sym(f, "i_mov");
	for (int i = 0; i < 3; i++) {
		f->flow[f->nflow++] = ptf_sym(f, "i_call");
		f->flow[f->nflow++] = ptf_sym(f, "i_add");
		f->flow[f->nflow++] = ptf_sym(f, "i_ret");
		f->flow[f->nflow++] = ptf_sym(f, "i_dec");
		f->flow[f->nflow++] = ptf_sym(f, "i_jnz");
		take(f, "i_call", "i_add", ptic_call);
		take(f, "i_ret", "i_dec", ptic_return);
		if (i < 2)
			take(f, "i_jnz", "i_call", ptic_cond_jump);
	}
	f->flow[f->nflow++] = ptf_sym(f, "i_lea");
	f->flow[f->nflow++] = ptf_sym(f, "i_jmp");
	f->flow[f->nflow++] = ptf_sym(f, "i_nop");
	f->flow[f->nflow++] = ptf_sym(f, "i_jmp2");
	take(f, "i_jmp", "i_nop", ptic_jump);
	take(f, "i_jmp2", NULL, ptic_jump);
	return 0;
}

void ptf_free(struct pt_fixture *f)
{
	free(f->elf);
	memset(f, 0, sizeof(*f));
}

static struct pt_packet pkt(enum pt_packet_type t)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = t;
	return p;
}

static struct pt_packet ip_pkt(enum pt_packet_type t, uint64_t ip)
{
	struct pt_packet p = pkt(t);

	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = ip;
	return p;
}

void ptf_encode(const struct pt_fixture *f, uint8_t *buf, size_t cap,
		size_t *len, int tnt_first)
{
	ptf_encode_at(f, buf, cap, len, tnt_first, NULL);
}

void ptf_encode_at(const struct pt_fixture *f, uint8_t *buf, size_t cap,
		   size_t *len, int tnt_first, size_t pkt_off[PTF_NPACKETS + 1])
{
	struct pt_config cfg;
	struct pt_encoder *e;
	struct pt_packet p[PTF_NPACKETS];
	uint64_t off;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + cap;
	e = pt_alloc_encoder(&cfg);
	assert_non_null(e);
	assert_int_equal(pt_enc_sync_set(e, *len), 0);
	p[0] = pkt(ppt_psb);
	p[1] = pkt(ppt_psbend);
	p[2] = pkt(ppt_mode);
	p[2].payload.mode.leaf = pt_mol_exec;
	p[2].payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	p[3] = ip_pkt(ppt_tip_pge, ptf_sym(f, "_start"));
	/* ret jnz ret jnz ret jnz, the oldest in the most significant bit. */
	p[4] = pkt(ppt_tnt_8);
	p[4].payload.tnt.bit_size = 6;
	p[4].payload.tnt.payload = ((uint64_t)(tnt_first & 1) << 5) | 0x1e;
	p[5] = ip_pkt(ppt_tip, ptf_sym(f, "target"));
	p[6] = ip_pkt(ppt_tip_pgd, PTF_OUTSIDE);
	for (int i = 0; i < PTF_NPACKETS; i++) {
		if (pkt_off) {
			assert_int_equal(pt_enc_get_offset(e, &off), 0);
			pkt_off[i] = (size_t)off;
		}
		assert_true(pt_enc_next(e, &p[i]) > 0);
	}
	assert_int_equal(pt_enc_get_offset(e, &off), 0);
	if (pkt_off)
		pkt_off[PTF_NPACKETS] = (size_t)off;
	pt_free_encoder(e);
	*len = (size_t)off;
}

void ptf_encode_cut(const struct pt_fixture *f, uint8_t *buf, size_t cap,
		    size_t *len, size_t *cut, size_t *resume)
{
	size_t a[PTF_NPACKETS + 1], n = 0, tnt;

	ptf_encode_at(f, buf, cap, &n, 1, a);
	tnt = a[PTF_TIP] - a[PTF_TNT];
	*cut = a[PTF_TIP];
	assert_true(*cut + tnt < cap);
	memmove(buf + *cut, buf + a[PTF_TNT], tnt);
	*resume = *cut + tnt;
	*len = *resume;
	ptf_encode(f, buf, cap, len, 1);
}

unsigned ptf_encode_tsc(const struct pt_fixture *f, uint8_t *buf, size_t cap,
			size_t *len, uint64_t tsc0, uint64_t step)
{
	struct pt_config cfg;
	struct pt_encoder *e;
	struct pt_packet p[32];
	unsigned n = 0, ntsc = 0;
	uint64_t off;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + cap;
	e = pt_alloc_encoder(&cfg);
	assert_non_null(e);
	assert_int_equal(pt_enc_sync_set(e, *len), 0);
	p[n++] = pkt(ppt_psb);
	p[n] = pkt(ppt_tsc);
	p[n++].payload.tsc.tsc = tsc0 + step * ntsc++;
	p[n++] = pkt(ppt_psbend);
	p[n] = pkt(ppt_mode);
	p[n].payload.mode.leaf = pt_mol_exec;
	p[n++].payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	p[n++] = ip_pkt(ppt_tip_pge, ptf_sym(f, "_start"));
	/* ret jnz ret jnz ret jnz: all taken but the last jnz. */
	for (int i = 0; i < 6; i++) {
		p[n] = pkt(ppt_tsc);
		p[n++].payload.tsc.tsc = tsc0 + step * ntsc++;
		p[n] = pkt(ppt_tnt_8);
		p[n].payload.tnt.bit_size = 1;
		p[n++].payload.tnt.payload = i == 5 ? 0 : 1;
	}
	p[n] = pkt(ppt_tsc);
	p[n++].payload.tsc.tsc = tsc0 + step * ntsc++;
	p[n++] = ip_pkt(ppt_tip, ptf_sym(f, "target"));
	p[n++] = ip_pkt(ppt_tip_pgd, PTF_OUTSIDE);
	for (unsigned i = 0; i < n; i++)
		assert_true(pt_enc_next(e, &p[i]) > 0);
	assert_int_equal(pt_enc_get_offset(e, &off), 0);
	pt_free_encoder(e);
	*len = (size_t)off;
	return ntsc;
}
