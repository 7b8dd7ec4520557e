/* SPDX-License-Identifier: MIT */
/*
 * images.h - the firmware's loaded images, from the EFI debug image info
 * table (UEFI spec, "EFI Debug Support Table"), as IMAGE sideband records
 * in the trace so host tools can symbolize firmware addresses.
 */
#ifndef TV_IMAGES_H
#define TV_IMAGES_H

#include <stddef.h>

#include "vmm/trace/format.h"

/*
 * images_record - append one TV_REC_IMAGE (kind TV_IMG_FIRMWARE: base,
 * size, the image's CodeView debug path when it has one) per loaded image
 * to each of the n rings.  Returns the number of images found (0 when the
 * firmware publishes no table; logged at info).
 */
size_t images_record(struct tv_trace_ring *const *rings, size_t n);

#endif /* TV_IMAGES_H */
