/* SPDX-License-Identifier: MIT */
/*
 * hooks.h - the tracer's side of vmm/exit/hooks.h: what it does at the
 * exit path's hook points.
 */
#ifndef TV_TRACE_HOOKS_H
#define TV_TRACE_HOOKS_H

/*
 * trace_hooks_register - register the tracer's exit hooks (exit_hooks_set):
 * before entry (with code snapshots' EPT flush), NMI, #DB, MTF, EPT
 * execute fetch (the address trigger, then code snapshots), EPT write
 * (code snapshots' re-arm), guest reset, and the MSR policy.  Always, whatever the source: with none configured each
 * hook finds nothing to do (no ring, nothing owned).  Called by hv_init
 * right after trace_engine_init, and at boot before the MSR bitmaps are
 * built (msr_bitmap_build asks the MSR hook): each image registers its
 * own copy of the table.
 */
void trace_hooks_register(void);

#endif /* TV_TRACE_HOOKS_H */
