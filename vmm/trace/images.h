/* SPDX-License-Identifier: MIT */
/*
 * images.h - the images loaded after tracevisor's boot, recorded at the
 * OS loader's ExitBootServices.
 *
 * At boot, boot/images.c records every image of the EFI debug image info
 * table as TV_IMG_FIRMWARE and keeps their (base, size) in the boot info
 * (struct efi_img_seen).  What is loaded later, while tracevisor already
 * runs the machine as its guest - the OS loader it chainloads and what
 * that loader loads (e.g. Linux's EFI stub, by LoadImage/StartImage) - is
 * in the same table by the time the loader calls ExitBootServices.  So at
 * that event (TV_HC_EVENT from the thunk of boot/ebs_hook.c) the resident
 * copy walks the table again in VMX root (vmm/lib/efi_images.h), reading
 * the guest's memory only through the engine's guest-physical reader
 * (trace_guest_read_phys: firmware memory is identity-mapped), and
 * appends one TV_REC_IMAGE of kind TV_IMG_LOADER per image not seen
 * before, to the ring of the CPU that made the call (the CPU running the
 * loader; nothing is recorded if that CPU does not trace).  Each image
 * recorded joins the set, so a second ExitBootServices call (a loader
 * retries when its memory map key went stale) records only what is new
 * again; once the set is full (EFI_IMG_SEEN_MAX) no more are recorded
 * (counted), which bounds what a guest that rewrites the table and calls
 * again and again can put in the ring.  One CPU walks at a time; a call
 * while another CPU walks returns without walking.
 */
#ifndef TV_TRACE_IMAGES_H
#define TV_TRACE_IMAGES_H

#include <stdint.h>

#include "vmm/lib/efi_images.h"

struct per_cpu;

/*
 * trace_images_init - the set of images seen so far (boot's, kept and
 * grown by the rescans; it must outlive them) and the EFI system table's
 * guest-physical address (0: no rescan).  known NULL or empty (boot
 * recorded nothing: no table, or no CPU traces): no rescan.
 */
void trace_images_init(struct efi_img_seen *known, uint64_t efi_system_table);

/*
 * trace_images_ebs - the rescan, on the calling CPU (VMX root).  Returns
 * the number of images recorded (0 too when there is no rescan, no table,
 * or another CPU is walking); logs one line per call:
 *   "images: cpu N: ExitBootServices: K images loaded after boot recorded
 *    as loader (D with a debug path; B known; S skipped)"
 * and up to 8 lines naming the images, "images: loader image NAME at
 * 0xBASE (SIZE bytes)".
 */
uint32_t trace_images_ebs(struct per_cpu *cpu);

#endif /* TV_TRACE_IMAGES_H */
