/* SPDX-License-Identifier: MIT */
#ifndef TV_VERSION_H
#define TV_VERSION_H

#define TV_VERSION "0.1.0"
/*
 * The same version as numbers (keep in step with TV_VERSION; a unit test
 * checks it).  TV_VERSION_CODE is what CPUID leaf 0x40000001 EAX and the
 * TV_HC_PROBE hypercall report: major << 16 | minor << 8 | patch.
 */
#define TV_VERSION_MAJOR 0
#define TV_VERSION_MINOR 1
#define TV_VERSION_PATCH 0
#define TV_VERSION_CODE ((TV_VERSION_MAJOR << 16) | (TV_VERSION_MINOR << 8) | TV_VERSION_PATCH)
#ifndef TV_GIT
#define TV_GIT "unknown"
#endif

#endif /* TV_VERSION_H */
