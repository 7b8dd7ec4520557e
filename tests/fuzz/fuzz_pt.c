/* SPDX-License-Identifier: MIT */
/*
 * fuzz_pt.c - libFuzzer target: the PT decode path of pt.c (libipt's
 * instruction-flow decoder with the host tools' item reporting, resync
 * after errors) over arbitrary PT bytes, with a fixed code image (a loop
 * of NOPs, a Jcc, a call and a ret, an indirect jump) so that decoding
 * gets past the first instruction; in both output modes.
 */
#include <intel-pt.h>
#include <string.h>

#include "host-tools/lib/pt.h"

#define CODE_BASE 0x1000u

/* nop x4; je -6; call +1; int3; ret; jmp *%rax */
static const uint8_t code[] = {
	0x90, 0x90, 0x90, 0x90, 0x74, 0xfa, 0xe8, 0x01, 0x00, 0x00, 0x00,
	0xcc, 0xc3, 0xff, 0xe0,
};

static int read_code(uint8_t *buf, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *ctx)
{
	(void)asid;
	(void)ctx;
	if (ip < CODE_BASE || ip - CODE_BASE >= sizeof(code))
		return -pte_nomap;
	if (size > sizeof(code) - (ip - CODE_BASE))
		size = sizeof(code) - (ip - CODE_BASE);
	memcpy(buf, code + (ip - CODE_BASE), size);
	return (int)size;
}

static int item(void *ctx, const struct tvh_pt_item *it)
{
	(void)ctx;
	(void)it;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pt_image *img;
	struct tvh_pt_opts o = { 0 };
	struct tvh_pt_stats st;

	if (!img) {
		img = pt_image_alloc("fuzz");
		pt_image_set_callback(img, read_code, NULL);
	}
	tvh_pt_decode(data, size, 0, img, &o, item, NULL, &st);
	o.branches = true;
	tvh_pt_decode(data, size, 0, img, &o, item, NULL, &st);
	return 0;
}
