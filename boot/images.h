/* SPDX-License-Identifier: MIT */
/*
 * images.h - the firmware's loaded images, from the EFI debug image info
 * table (UEFI spec, "EFI Debug Support Table"), as IMAGE sideband records
 * in the trace so host tools can symbolize firmware addresses.
 */
#ifndef TV_IMAGES_H
#define TV_IMAGES_H

#include <stddef.h>

#include "vmm/lib/efi_images.h"
#include "vmm/trace/format.h"

/*
 * images_record - append one TV_REC_IMAGE (kind TV_IMG_FIRMWARE: base,
 * size, the image's CodeView debug path, else its device path's name) per
 * loaded image to each of the n rings (NULL entries skipped), and add each
 * to seen (may be NULL): the resident copy rescans the table at
 * ExitBootServices and records the images not in it (vmm/trace/images.h).
 * Returns the number of images found (0 when the firmware publishes no
 * table; logged at info).
 */
size_t images_record(struct tv_trace_ring *const *rings, size_t n, struct efi_img_seen *seen);

#endif /* TV_IMAGES_H */
