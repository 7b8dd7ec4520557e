/* SPDX-License-Identifier: MIT */
/*
 * libc_glue.h - the system calls newlib expects, for a machine with no OS.
 */
#ifndef TV_LIBC_GLUE_H
#define TV_LIBC_GLUE_H

#include <stddef.h>

/* libc_glue_set_heap - give sbrk() a region; before this, sbrk fails. */
void libc_glue_set_heap(void *base, size_t size);

#endif /* TV_LIBC_GLUE_H */
