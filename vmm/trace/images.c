/* SPDX-License-Identifier: MIT */
/*
 * images.c - the ExitBootServices rescan of the EFI debug image info
 * table (see images.h).
 */
#include "vmm/trace/images.h"

#include "vmm/hw/hw.h"
#include "vmm/lib/log.h"
#include "vmm/trace/cpu.h"
#include "vmm/vmx/vcpu.h"

#define IMAGES_LOGGED 8u   /* images named in the log per rescan */

static struct efi_img_seen *known;
static uint64_t st_pa;
static uint32_t walking;   /* one CPU at a time */

struct rescan {
	struct tv_trace_ring *ring;   /* NULL: the CPU does not trace */
	uint64_t tsc;
	uint32_t added, named, old, refused;
};

void trace_images_init(struct efi_img_seen *seen, uint64_t efi_system_table)
{
	known = seen;
	st_pa = efi_system_table;
	__atomic_store_n(&walking, 0, __ATOMIC_RELEASE);
}

/* The engine's guest-physical reader (identity-mapped guest memory). */
static int read_guest(void *opaque, uint64_t gpa, void *buf, size_t len)
{
	(void)opaque;
	return trace_guest_read_phys(gpa, buf, len);
}

static int rescan_one(void *ctx, const struct efi_img *img)
{
	struct rescan *r = ctx;
	int rc = efi_img_seen_add(known, img->base, img->size);

	if (rc > 0) {
		r->old++;
		return 0;
	}
	if (rc < 0) {
		r->refused++;
		return 0;
	}
	if (r->ring)
		trace_append_image(r->ring, r->tsc, TV_IMG_LOADER, img->base, img->size,
				   img->name, img->name_len);
	if (r->added < IMAGES_LOGGED)
		log_info("images: loader image %s at %#llx (%llu bytes)",
			 img->name_len ? img->name : "(no name)", (unsigned long long)img->base,
			 (unsigned long long)img->size);
	r->added++;
	r->named += img->debug_path ? 1u : 0u;
	return 0;
}

uint32_t trace_images_ebs(struct per_cpu *cpu)
{
	struct efi_img_reader rd = { read_guest, NULL };
	struct efi_img_stats st;
	struct rescan r = { 0 };
	int rc;

	/* Nothing kept at boot (no table, or no CPU traces): nothing to compare with. */
	if (!known || !known->n || !st_pa)
		return 0;
	if (__atomic_exchange_n(&walking, 1, __ATOMIC_ACQUIRE)) {
		log_warn("images: cpu %u: ExitBootServices: another CPU is rescanning the image table",
			 cpu->index);
		return 0;
	}
	r.ring = cpu->trace ? cpu->trace->b.ring : NULL;
	r.tsc = hw_rdtsc();
	rc = efi_images_walk(&rd, st_pa, rescan_one, &r, &st);
	__atomic_store_n(&walking, 0, __ATOMIC_RELEASE);
	if (rc) {
		log_warn("images: cpu %u: ExitBootServices: no debug image info table readable: images loaded after boot not recorded",
			 cpu->index);
		return 0;
	}
	log_info("images: cpu %u: ExitBootServices: %u images loaded after boot recorded as loader (%u with a debug path; %u known; %u skipped)%s",
		 cpu->index, r.added, r.named, r.old, st.skipped,
		 r.ring ? "" : ": this CPU does not trace, none in a ring");
	if (r.refused || st.truncated)
		log_warn("images: cpu %u: %u images not recorded (the set of %u is full)%s", cpu->index,
			 r.refused, EFI_IMG_SEEN_MAX, st.truncated ? ", the table cut to its bound" : "");
	return r.ring ? r.added : 0;
}
