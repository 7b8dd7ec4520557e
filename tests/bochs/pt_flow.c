/* SPDX-License-Identifier: MIT */
/*
 * pt_flow.c - decode an Intel PT stream with libipt, for the Bochs PT
 * model test (tests/bochs/pt-model.sh, docs/BOCHS-MODEL.md).  Independent
 * of tracevisor: only libipt and the guest program's ELF.
 *
 *   pt-flow flow TRACE ELF BASE...  instruction flow: one "0xIP" line per
 *                                   executed instruction, events as
 *                                   "# event ..." lines (the ELF mapped at
 *                                   each BASE: a program and its aliases)
 *   pt-flow packets TRACE           one line per packet: its name and, for
 *                                   IP packets, "ipc=N"
 *
 * TRACE is the raw PT byte stream, ELF the guest program (build/pttest.so)
 * whose executable sections are mapped at each BASE + their address.
 * Exit status: 0 the stream decoded to its end without an error; 1 a
 * decode error (printed as "# error OFFSET MESSAGE"); 2 bad usage or input.
 */
#include <elf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <intel-pt.h>

static uint8_t *read_all(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		return NULL;
	for (;;) {
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap ? cap * 2 : 65536);

			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	*size = n;
	return buf;
}

/* Every SHF_EXECINSTR section of the ELF at base + sh_addr. */
static int map_elf(struct pt_image *image, const char *path, uint64_t base)
{
	size_t size;
	uint8_t *elf = read_all(path, &size);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)elf;
	int mapped = 0;

	if (!elf || size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size) {
		free(elf);
		return -1;
	}
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(elf + eh->e_shoff);

	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (!(sh[i].sh_flags & SHF_EXECINSTR) || sh[i].sh_type != SHT_PROGBITS || !sh[i].sh_size)
			continue;
		int err = pt_image_add_file(image, path, sh[i].sh_offset, sh[i].sh_size, NULL,
					    base + sh[i].sh_addr);
		if (err < 0) {
			fprintf(stderr, "pt-flow: mapping section %u: %s\n", i, pt_errstr(pt_errcode(err)));
			free(elf);
			return -1;
		}
		mapped++;
	}
	free(elf);
	return mapped ? 0 : -1;
}

static void print_event(const struct pt_event *ev)
{
	switch (ev->type) {
	case ptev_enabled:
		printf("# event enabled 0x%016" PRIx64 "\n", ev->variant.enabled.ip);
		break;
	case ptev_disabled:
		if (ev->ip_suppressed)
			printf("# event disabled\n");
		else
			printf("# event disabled 0x%016" PRIx64 "\n", ev->variant.disabled.ip);
		break;
	case ptev_async_disabled:
		printf("# event async-disabled at 0x%016" PRIx64 "\n", ev->variant.async_disabled.at);
		break;
	case ptev_async_branch:
		printf("# event async-branch 0x%016" PRIx64 " -> 0x%016" PRIx64 "\n",
		       ev->variant.async_branch.from, ev->variant.async_branch.to);
		break;
	case ptev_paging:
		printf("# event paging cr3 0x%016" PRIx64 "\n", ev->variant.paging.cr3);
		break;
	case ptev_overflow:
		printf("# event overflow\n");
		break;
	case ptev_exec_mode:
		printf("# event exec-mode %d\n", (int)ev->variant.exec_mode.mode);
		break;
	case ptev_stop:
		printf("# event stop\n");
		break;
	default:
		printf("# event type %d\n", (int)ev->type);
		break;
	}
}

static int flow(const uint8_t *buf, size_t size, const char *elf, char **bases, int nbases)
{
	struct pt_config config;
	struct pt_insn_decoder *dec;
	struct pt_image *image;
	uint64_t ninsn = 0, offset = 0;
	int status, errors = 0, syncs = 0;

	pt_config_init(&config);
	config.begin = (uint8_t *)buf;
	config.end = (uint8_t *)buf + size;
	dec = pt_insn_alloc_decoder(&config);
	if (!dec)
		return 2;
	image = pt_insn_get_image(dec);
	for (int i = 0; i < nbases; i++) {
		if (map_elf(image, elf, strtoull(bases[i], NULL, 0)) < 0) {
			fprintf(stderr, "pt-flow: cannot map %s at %s\n", elf, bases[i]);
			pt_insn_free_decoder(dec);
			return 2;
		}
	}

	for (;;) {
		status = pt_insn_sync_forward(dec);
		if (status < 0) {
			if (pt_errcode(status) != pte_eos) {
				pt_insn_get_offset(dec, &offset);
				printf("# error 0x%" PRIx64 " sync: %s\n", offset, pt_errstr(pt_errcode(status)));
				errors++;
			}
			break;
		}
		syncs++;
		for (;;) {
			struct pt_insn insn;

			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_insn_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
				print_event(&ev);
			}
			if (status < 0 || (status & pts_eos))
				break;
			status = pt_insn_next(dec, &insn, sizeof(insn));
			if (status < 0)
				break;
			printf("0x%016" PRIx64 "\n", insn.ip);
			ninsn++;
		}
		if (status < 0 && pt_errcode(status) != pte_eos) {
			pt_insn_get_offset(dec, &offset);
			printf("# error 0x%" PRIx64 " %s\n", offset, pt_errstr(pt_errcode(status)));
			errors++;
		}
		if (status >= 0 || pt_errcode(status) == pte_eos)
			break;
	}
	printf("# end insns %" PRIu64 " syncs %d errors %d\n", ninsn, syncs, errors);
	pt_insn_free_decoder(dec);
	return errors ? 1 : 0;
}

static const char *pkt_name(enum pt_packet_type t)
{
	switch (t) {
	case ppt_pad: return "pad";
	case ppt_psb: return "psb";
	case ppt_psbend: return "psbend";
	case ppt_fup: return "fup";
	case ppt_tip: return "tip";
	case ppt_tip_pge: return "tip.pge";
	case ppt_tip_pgd: return "tip.pgd";
	case ppt_tnt_8: return "tnt.8";
	case ppt_tnt_64: return "tnt.64";
	case ppt_mode: return "mode";
	case ppt_pip: return "pip";
	case ppt_vmcs: return "vmcs";
	case ppt_cbr: return "cbr";
	case ppt_tsc: return "tsc";
	case ppt_tma: return "tma";
	case ppt_mtc: return "mtc";
	case ppt_cyc: return "cyc";
	case ppt_stop: return "stop";
	case ppt_ovf: return "ovf";
	default: return "other";
	}
}

static int packets(const uint8_t *buf, size_t size)
{
	struct pt_config config;
	struct pt_packet_decoder *dec;
	struct pt_packet pkt;
	uint64_t offset = 0;
	int status, errors = 0, n = 0;

	pt_config_init(&config);
	config.begin = (uint8_t *)buf;
	config.end = (uint8_t *)buf + size;
	dec = pt_pkt_alloc_decoder(&config);
	if (!dec)
		return 2;
	status = pt_pkt_sync_forward(dec);
	if (status < 0) {
		printf("# error 0x0 sync: %s\n", pt_errstr(pt_errcode(status)));
		pt_pkt_free_decoder(dec);
		return 1;
	}
	pt_pkt_get_offset(dec, &offset);
	printf("# first-sync 0x%" PRIx64 "\n", offset);
	for (;;) {
		pt_pkt_get_offset(dec, &offset);
		status = pt_pkt_next(dec, &pkt, sizeof(pkt));
		if (status < 0) {
			if (pt_errcode(status) != pte_eos) {
				printf("# error 0x%" PRIx64 " %s\n", offset, pt_errstr(pt_errcode(status)));
				errors++;
			}
			break;
		}
		n++;
		switch (pkt.type) {
		case ppt_fup:
		case ppt_tip:
		case ppt_tip_pge:
		case ppt_tip_pgd:
			printf("0x%06" PRIx64 " %s ipc=%d ip=0x%" PRIx64 "\n", offset, pkt_name(pkt.type),
			       (int)pkt.payload.ip.ipc, pkt.payload.ip.ip);
			break;
		case ppt_tnt_8:
		case ppt_tnt_64:
			printf("0x%06" PRIx64 " %s bits=%u\n", offset, pkt_name(pkt.type),
			       (unsigned)pkt.payload.tnt.bit_size);
			break;
		case ppt_mode:
			printf("0x%06" PRIx64 " mode leaf=%d csl=%d csd=%d\n", offset, (int)pkt.payload.mode.leaf,
			       (int)pkt.payload.mode.bits.exec.csl, (int)pkt.payload.mode.bits.exec.csd);
			break;
		case ppt_pip:
			printf("0x%06" PRIx64 " pip cr3=0x%" PRIx64 " nr=%d\n", offset, pkt.payload.pip.cr3,
			       (int)pkt.payload.pip.nr);
			break;
		case ppt_cbr:
			printf("0x%06" PRIx64 " cbr ratio=%u\n", offset, (unsigned)pkt.payload.cbr.ratio);
			break;
		case ppt_tsc:
			printf("0x%06" PRIx64 " tsc 0x%" PRIx64 "\n", offset, pkt.payload.tsc.tsc);
			break;
		default:
			printf("0x%06" PRIx64 " %s\n", offset, pkt_name(pkt.type));
			break;
		}
	}
	printf("# end packets %d errors %d\n", n, errors);
	pt_pkt_free_decoder(dec);
	return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	size_t size;
	uint8_t *buf;
	int rc;

	if (argc < 3 || (strcmp(argv[1], "flow") == 0 && argc < 5) ||
	    (strcmp(argv[1], "packets") == 0 && argc != 3) ||
	    (strcmp(argv[1], "flow") != 0 && strcmp(argv[1], "packets") != 0)) {
		fprintf(stderr, "usage: pt-flow flow TRACE ELF BASE... | pt-flow packets TRACE\n");
		return 2;
	}
	buf = read_all(argv[2], &size);
	if (!buf) {
		fprintf(stderr, "pt-flow: cannot read %s\n", argv[2]);
		return 2;
	}
	if (strcmp(argv[1], "flow") == 0)
		rc = flow(buf, size, argv[3], argv + 4, argc - 4);
	else
		rc = packets(buf, size);
	free(buf);
	return rc;
}
