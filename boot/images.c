/* SPDX-License-Identifier: MIT */
/*
 * images.c - see images.h.  The walk itself is vmm/lib/efi_images.c; at
 * boot the firmware's memory is read where it lies.
 */
#include <efi.h>

#include "boot/efi_util.h"
#include "boot/images.h"
#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/trace/ring.h"

struct record_ctx {
	struct tv_trace_ring *const *rings;
	size_t n;
	struct efi_img_seen *seen;
	uint64_t tsc;
};

static int record_one(void *ctx, const struct efi_img *img)
{
	struct record_ctx *c = ctx;

	for (size_t i = 0; i < c->n; i++)
		if (c->rings[i])
			trace_append_image(c->rings[i], c->tsc, TV_IMG_FIRMWARE, img->base,
					   img->size, img->name, img->name_len);
	if (c->seen)
		(void)efi_img_seen_add(c->seen, img->base, img->size);   /* full: counted */
	return 0;
}

size_t images_record(struct tv_trace_ring *const *rings, size_t n, struct efi_img_seen *seen)
{
	struct efi_img_reader rd = { efi_img_read_direct, NULL };
	struct record_ctx c = { rings, n, seen, hw_rdtsc() };
	struct efi_img_stats st;

	if (efi_images_walk(&rd, (uint64_t)(uintptr_t)efi_st, record_one, &c, &st)) {
		log_info("images: the firmware publishes no debug image info table");
		return 0;
	}
	log_info("images: %llu firmware images recorded (%llu with a debug path)",
		 (unsigned long long)st.images, (unsigned long long)st.named);
	if (st.skipped || st.truncated)
		log_info("images: %u of %u table slots skipped (unreadable or not a loaded image)%s",
			 st.skipped, st.table_size, st.truncated ? ", the table cut to its bound" : "");
	if (seen && seen->refused)
		log_warn("images: %u firmware images beyond the %u kept for the ExitBootServices rescan: they will count as loaded after boot",
			 seen->refused, EFI_IMG_SEEN_MAX);
	return st.images;
}
