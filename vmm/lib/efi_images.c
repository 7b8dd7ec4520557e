/* SPDX-License-Identifier: MIT */
/*
 * efi_images.c - the walk of the EFI debug image info table through a
 * physical-memory reader (contract in efi_images.h).  Layouts are the
 * 64-bit ones (UEFI 2.10), declared here as offsets: no efi.h below boot/.
 */
#include "vmm/lib/efi_images.h"

#include <stdio.h>
#include <string.h>

#include "vmm/lib/pe_debug.h"

/* EFI system table (4.3): "IBI SYST", NumberOfTableEntries, ConfigurationTable. */
#define ST_SIGNATURE       0x5453595320494249ull
#define ST_NUM_ENTRIES     104u
#define ST_CONFIG_TABLE    112u
#define CONFIG_ENTRY       24u     /* EFI_GUID + VendorTable (4.6) */

/* EFI_DEBUG_IMAGE_INFO_TABLE_HEADER (18.4.2). */
#define HDR_UPDATE_STATUS  0u
#define HDR_TABLE_SIZE     4u
#define HDR_TABLE          8u
#define HDR_BYTES          16u
#define UPDATE_IN_PROGRESS 0x1u

/* EFI_DEBUG_IMAGE_INFO_NORMAL: ImageInfoType, LoadedImageProtocolInstance. */
#define NORMAL_TYPE        0u
#define NORMAL_LOADED      8u
#define NORMAL_BYTES       16u
#define IMAGE_INFO_NORMAL  1u

/* EFI_LOADED_IMAGE_PROTOCOL (9.1): FilePath, ImageBase, ImageSize. */
#define LI_FILE_PATH       32u
#define LI_IMAGE_BASE      64u
#define LI_IMAGE_SIZE      72u
#define LI_BYTES           80u

/* Slots read at once. */
#define SLOT_CHUNK         64u

/* 49152e77-1ada-4764-b7a2-7afefed95e8b, as it lies in memory */
static const uint8_t debug_table_guid[16] = {
	0x77, 0x2e, 0x15, 0x49, 0xda, 0x1a, 0x64, 0x47,
	0xb7, 0xa2, 0x7a, 0xfe, 0xfe, 0xd9, 0x5e, 0x8b,
};

static uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

int efi_img_read_direct(void *opaque, uint64_t pa, void *buf, size_t len)
{
	(void)opaque;
	memcpy(buf, (const void *)(uintptr_t)pa, len);
	return 0;
}

/* len bytes at pa, in pieces that never cross a 4 KiB boundary; 0 or -1. */
static int rd_span(const struct efi_img_reader *rd, uint64_t pa, void *buf, size_t len)
{
	uint8_t *b = buf;

	if (!pa || pa + len < pa)
		return -1;   /* NULL, or a range that wraps */
	while (len) {
		size_t n = 4096 - (size_t)(pa & 4095);

		if (n > len)
			n = len;
		if (rd->read_phys(rd->opaque, pa, b, n))
			return -1;
		pa += n;
		b += n;
		len -= n;
	}
	return 0;
}

/* The debug image info table header's address from the system table, or 0. */
static uint64_t find_table(const struct efi_img_reader *rd, uint64_t st_pa)
{
	uint8_t e[CONFIG_ENTRY];
	uint64_t sig, n, table;

	if (rd_span(rd, st_pa, &sig, 8) || sig != ST_SIGNATURE ||
	    rd_span(rd, st_pa + ST_NUM_ENTRIES, &n, 8) ||
	    rd_span(rd, st_pa + ST_CONFIG_TABLE, &table, 8) || !table)
		return 0;
	if (n > EFI_IMG_CONFIG_MAX)
		n = EFI_IMG_CONFIG_MAX;
	for (uint64_t i = 0; i < n; i++) {
		if (rd_span(rd, table + i * CONFIG_ENTRY, e, sizeof(e)))
			return 0;
		if (!memcmp(e, debug_table_guid, sizeof(debug_table_guid)))
			return ld64(e + 16);
	}
	return 0;
}

/* [off, off + n) inside an image of size bytes, without overflow. */
static bool in_image(uint64_t size, uint64_t off, uint64_t n)
{
	return off <= size && n <= size - off;
}

/*
 * The CodeView path of the image at base, copied piece by piece: the
 * headers, the debug directory's entries, one record.  true: img->name set.
 */
static bool codeview_name(const struct efi_img_reader *rd, struct efi_img *img)
{
	uint8_t hdr[EFI_IMG_HDR_BYTES];
	uint8_t ent[EFI_IMG_DEBUG_ENTRIES * PE_DEBUG_ENTRY_SIZE];
	uint8_t rec[24 + EFI_IMG_NAME_MAX + 1];
	size_t hlen = img->size < sizeof(hdr) ? (size_t)img->size : sizeof(hdr);
	uint32_t dir, dir_bytes, nent;

	if (rd_span(rd, img->base, hdr, hlen) || pe_debug_dir(hdr, hlen, &dir, &dir_bytes) ||
	    !in_image(img->size, dir, dir_bytes))
		return false;
	nent = dir_bytes / PE_DEBUG_ENTRY_SIZE;
	if (nent > EFI_IMG_DEBUG_ENTRIES)
		nent = EFI_IMG_DEBUG_ENTRIES;
	if (!nent || rd_span(rd, img->base + dir, ent, nent * PE_DEBUG_ENTRY_SIZE))
		return false;
	for (uint32_t i = 0; i < nent; i++) {
		uint32_t type, data, n;
		const char *path;
		size_t len;

		pe_debug_entry(ent + i * PE_DEBUG_ENTRY_SIZE, &type, &data, &n);
		if (type != PE_DEBUG_CODEVIEW || !data || !in_image(img->size, data, n))
			continue;
		if (n > sizeof(rec))
			n = sizeof(rec);   /* a longer path is not terminated in it: refused below */
		if (rd_span(rd, img->base + data, rec, n) ||
		    pe_codeview_record(rec, n, &path, &len) || len > EFI_IMG_NAME_MAX)
			continue;
		memcpy(img->name, path, len);
		img->name[len] = 0;
		img->name_len = len;
		return true;
	}
	return false;
}

/*
 * A name from the device path at dp: the firmware-volume file GUID (media
 * node 4/6, how EDK2 names its drivers) or the first file path node (4/4,
 * UTF-16 kept as ASCII, '?' for the rest).  Nodes are read one by one;
 * the walk ends at an end node, a length under 4, an unreadable node or
 * after EFI_IMG_DEVPATH_NODES.
 */
static void devpath_name(const struct efi_img_reader *rd, uint64_t dp, struct efi_img *img)
{
	uint8_t n[4 + 2 * (EFI_IMG_NAME_MAX + 1)];

	for (unsigned guard = 0; dp && guard < EFI_IMG_DEVPATH_NODES; guard++) {
		uint16_t len;

		if (rd_span(rd, dp, n, 4))
			return;
		len = (uint16_t)(n[2] | n[3] << 8);
		if (n[0] == 0x7f || len < 4)
			return;
		if (n[0] == 4 && n[1] == 6 && len >= 20) {
			const uint8_t *g = n + 4;
			int k;

			if (rd_span(rd, dp, n, 20))
				return;
			k = snprintf(img->name, sizeof(img->name),
				     "FvFile(%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x)",
				     g[3], g[2], g[1], g[0], g[5], g[4], g[7], g[6], g[8], g[9],
				     g[10], g[11], g[12], g[13], g[14], g[15]);
			img->name_len = k > 0 ? (size_t)k : 0;
			return;
		}
		if (n[0] == 4 && n[1] == 4) {
			size_t want = len < sizeof(n) ? len : sizeof(n), k = 0;

			if (rd_span(rd, dp, n, want))
				return;
			for (size_t i = 4; i + 1 < want && k < EFI_IMG_NAME_MAX; i += 2) {
				uint16_t ch = (uint16_t)(n[i] | n[i + 1] << 8);

				if (!ch)
					break;
				img->name[k++] = ch < 0x80 && ch >= 0x20 ? (char)ch : '?';
			}
			img->name[k] = 0;
			img->name_len = k;
			return;
		}
		if (dp + len < dp)
			return;
		dp += len;
	}
}

/* One slot: 1 an image (img filled), 0 empty, -1 skipped. */
static int read_slot(const struct efi_img_reader *rd, uint64_t entry, struct efi_img *img)
{
	uint8_t normal[NORMAL_BYTES], li[LI_BYTES];
	uint64_t loaded;

	if (!entry)
		return 0;
	if (rd_span(rd, entry, normal, sizeof(normal)) ||
	    ld32(normal + NORMAL_TYPE) != IMAGE_INFO_NORMAL)
		return -1;
	loaded = ld64(normal + NORMAL_LOADED);
	if (!loaded || rd_span(rd, loaded, li, sizeof(li)))
		return -1;
	img->base = ld64(li + LI_IMAGE_BASE);
	img->size = ld64(li + LI_IMAGE_SIZE);
	if (!img->base || !img->size || img->size > EFI_IMG_SIZE_MAX ||
	    img->base + img->size < img->base)
		return -1;
	img->name[0] = 0;
	img->name_len = 0;
	img->debug_path = codeview_name(rd, img);
	if (!img->debug_path)
		devpath_name(rd, ld64(li + LI_FILE_PATH), img);
	return 1;
}

int efi_images_walk(const struct efi_img_reader *rd, uint64_t st_pa, efi_img_fn fn, void *ctx,
		    struct efi_img_stats *stats)
{
	struct efi_img_stats local;
	struct efi_img img;
	uint8_t hdr[HDR_BYTES];
	uint64_t hdr_pa, table, slots[SLOT_CHUNK];
	uint32_t n;

	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	if (!rd || !rd->read_phys || !fn || !st_pa)
		return EFI_IMG_ERR_ARG;
	hdr_pa = find_table(rd, st_pa);
	if (!hdr_pa || rd_span(rd, hdr_pa, hdr, sizeof(hdr)))
		return EFI_IMG_ERR_NO_TABLE;
	stats->updating = (ld32(hdr + HDR_UPDATE_STATUS) & UPDATE_IN_PROGRESS) != 0;
	stats->table_size = ld32(hdr + HDR_TABLE_SIZE);
	table = ld64(hdr + HDR_TABLE);
	if (!table)
		return EFI_IMG_ERR_NO_TABLE;
	n = stats->table_size;
	if (n > EFI_IMG_TABLE_MAX) {
		n = EFI_IMG_TABLE_MAX;
		stats->truncated = true;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = i % SLOT_CHUNK;
		int rc;

		/* A chunk of slots at once; an unreadable chunk skips its slots. */
		if (!k) {
			uint32_t cnt = n - i < SLOT_CHUNK ? n - i : SLOT_CHUNK;

			if (rd_span(rd, table + (uint64_t)i * 8, slots, (size_t)cnt * 8)) {
				stats->slots += cnt;
				stats->skipped += cnt;
				i += cnt - 1;
				continue;
			}
		}
		stats->slots++;
		img.slot = i;
		rc = read_slot(rd, slots[k], &img);
		if (rc == 0) {
			stats->empty++;
			continue;
		}
		if (rc < 0) {
			stats->skipped++;
			continue;
		}
		stats->images++;
		stats->named += img.debug_path ? 1u : 0u;
		rc = fn(ctx, &img);
		if (rc)
			return rc;
	}
	return 0;
}

bool efi_img_seen_has(const struct efi_img_seen *s, uint64_t base, uint64_t size)
{
	uint32_t n = s->n < EFI_IMG_SEEN_MAX ? s->n : EFI_IMG_SEEN_MAX;

	for (uint32_t i = 0; i < n; i++)
		if (s->v[i].base == base && s->v[i].size == size)
			return true;
	return false;
}

int efi_img_seen_add(struct efi_img_seen *s, uint64_t base, uint64_t size)
{
	if (efi_img_seen_has(s, base, size))
		return 1;
	if (s->n >= EFI_IMG_SEEN_MAX) {
		s->refused++;
		return -1;
	}
	s->v[s->n].base = base;
	s->v[s->n].size = size;
	s->n++;
	return 0;
}
