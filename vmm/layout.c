/* SPDX-License-Identifier: MIT */
/*
 * layout.c - see layout.h.
 */
#include "vmm/layout.h"

#include <stdbool.h>
#include <string.h>

struct cursor {
	uint64_t off;
	bool overflow;
};

static uint64_t page_up(uint64_t n, bool *overflow)
{
	if (n > UINT64_MAX - (HV_PAGE - 1)) {
		*overflow = true;
		return 0;
	}
	return (n + HV_PAGE - 1) & ~(HV_PAGE - 1);
}

/* Place count parts of bytes each at the cursor; returns where. */
static uint64_t take(struct cursor *c, uint64_t count, uint64_t bytes)
{
	uint64_t at = c->off, n;

	if (__builtin_mul_overflow(count, bytes, &n) || __builtin_add_overflow(c->off, n, &c->off))
		c->overflow = true;
	return at;
}

static bool page_multiple(uint64_t n)
{
	return (n & (HV_PAGE - 1)) == 0;
}

static int check(const struct hv_layout_req *r, uint64_t base_pa)
{
	if (!r->ncpus || r->ntraced > r->ncpus || !page_multiple(base_pa) || !page_multiple(r->ring_bytes) ||
	    !page_multiple(r->guest_bytes) || !page_multiple(r->hidden_bytes) ||
	    !page_multiple(r->pool_extra_bytes) || r->pool_extra_bytes > UINT64_MAX / 2)
		return HV_LAYOUT_EINVAL;
	if (r->hidden_bytes &&
	    (r->hidden_align < HV_PAGE || (r->hidden_align & (r->hidden_align - 1)) ||
	     (r->hidden_bytes & (r->hidden_align - 1))))
		return HV_LAYOUT_EINVAL;
	return 0;
}

int hv_layout_compute(const struct hv_layout_req *r, uint64_t base_pa, struct hv_layout *l)
{
	struct cursor c = { 0, false };
	uint64_t cpus_bytes;
	uint32_t nt;
	int rc;

	memset(l, 0, sizeof(*l));
	rc = check(r, base_pa);
	if (rc)
		return rc;
	if (__builtin_mul_overflow((uint64_t)r->ncpus, r->cpu_struct_bytes, &cpus_bytes))
		return HV_LAYOUT_EOVERFLOW;
	l->image_bytes = page_up(r->image_bytes, &c.overflow);
	l->cpus_bytes = page_up(cpus_bytes, &c.overflow);
	l->info_bytes = page_up(r->info_bytes, &c.overflow);
	l->nic_dma_bytes = page_up(r->nic_dma_bytes, &c.overflow);
	l->exporter_bytes = page_up(r->exporter_bytes, &c.overflow);
	l->percpu_bytes = HV_PERCPU_BYTES;
	l->pool_bytes = HV_POOL_BYTES + r->pool_extra_bytes;   /* bounded by check() */
	l->ring_bytes = r->ring_bytes;
	l->guest_bytes = r->guest_bytes;
	l->hidden_bytes = r->hidden_bytes;
	l->ntraced = nt = r->ntraced ? r->ntraced : r->ncpus;

	l->image_off = take(&c, 1, l->image_bytes);
	l->cpus_off = take(&c, 1, l->cpus_bytes);
	l->info_off = take(&c, 1, l->info_bytes);
	l->idt_off = take(&c, 1, HV_PAGE);
	l->guest_tss_off = take(&c, 1, HV_PAGE);
	/* Shared by all CPUs: the CPU only reads them (SDM 3C 25.6.4). */
	l->io_bitmap_a_off = take(&c, 1, HV_PAGE);
	l->io_bitmap_b_off = take(&c, 1, HV_PAGE);
	l->ff_page_off = take(&c, 1, HV_PAGE);
	l->nic_dma_off = take(&c, 1, l->nic_dma_bytes);
	l->exporter_off = take(&c, 1, l->exporter_bytes);
	l->percpu_off = take(&c, r->ncpus, l->percpu_bytes);
	l->pool_off = take(&c, 1, l->pool_bytes);
	l->ring_off = take(&c, nt, l->ring_bytes);
	l->guest_off = take(&c, nt, l->guest_bytes);
	if (l->hidden_bytes) {
		uint64_t pa, mask = r->hidden_align - 1;

		/* aligned by physical address; the slack is reserved whatever the base */
		if (__builtin_add_overflow(base_pa, c.off, &pa) || pa > UINT64_MAX - mask)
			c.overflow = true;
		else
			l->hidden_off = ((pa + mask) & ~mask) - base_pa;
		take(&c, nt, l->hidden_bytes);
		take(&c, 1, r->hidden_align);
	} else {
		l->hidden_off = c.off;
	}
	l->total = c.off;
	if (c.overflow) {
		memset(l, 0, sizeof(*l));
		return HV_LAYOUT_EOVERFLOW;
	}
	return 0;
}

const char *hv_layout_strerror(int rc)
{
	switch (rc) {
	case 0: return "ok";
	case HV_LAYOUT_EINVAL: return "invalid request (no CPU, more traced CPUs than CPUs, unaligned size or base, bad alignment)";
	case HV_LAYOUT_EOVERFLOW: return "sizes overflow 64 bits";
	default: return "unknown error";
	}
}
