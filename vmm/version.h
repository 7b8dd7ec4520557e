/* SPDX-License-Identifier: MIT */
#ifndef TV_VERSION_H
#define TV_VERSION_H

#define TV_VERSION "0.1.0"
#ifndef TV_GIT
#define TV_GIT "unknown"
#endif

#endif /* TV_VERSION_H */
