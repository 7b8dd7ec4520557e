/*
 * lwIP architecture port for tracevisor: freestanding x86_64, newlib headers.
 *
 * lwIP's own arch.h includes <stdint.h>, <inttypes.h>, <limits.h>,
 * <ctype.h> and <stddef.h>; newlib (plus gcc's freestanding headers)
 * provides all of them, so none of the LWIP_NO_*_H switches are set except
 * for <unistd.h>, which lwIP only wants for ssize_t and which we take from
 * <sys/types.h> instead.
 *
 * The functions declared here are implemented in net/ (not in lwIP):
 *   tv_rand32()      - random 32-bit value for port numbers and DHCP xids.
 *   tv_lwip_diag()   - printf-like diagnostic sink (only with LWIP_DEBUG).
 *   tv_lwip_assert() - lwIP assertion failure; never returns.
 */
#ifndef TV_LWIP_ARCH_CC_H
#define TV_LWIP_ARCH_CC_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * newlib's <limits.h> has no SSIZE_MAX. Without it lwIP's arch.h would
 * typedef its own 'int ssize_t', which clashes with newlib's (long on
 * x86_64). Define it to match newlib's _ssize_t (signed __SIZE_TYPE__).
 */
#ifndef SSIZE_MAX
#if __SIZEOF_SIZE_T__ == __SIZEOF_LONG__
#define SSIZE_MAX LONG_MAX
#else
#define SSIZE_MAX INT_MAX
#endif
#endif

/* ssize_t comes from <sys/types.h> above; keep <unistd.h> out of lwIP. */
#define LWIP_NO_UNISTD_H 1

/*
 * BYTE_ORDER: newlib's <sys/types.h> defines it (as little-endian) in the
 * default gnu modes; under a strict -std=c11 it does not, and lwIP's arch.h
 * then defaults to LITTLE_ENDIAN. Both are right for x86_64.
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tracevisor's lwIP port assumes a little-endian target"
#endif

uint32_t tv_rand32(void);
void tv_lwip_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tv_lwip_assert(const char *msg, const char *file, int line)
	__attribute__((noreturn));

#define LWIP_RAND() ((u32_t)tv_rand32())

/* x is a parenthesised printf argument list: LWIP_PLATFORM_DIAG(("%d", v)). */
#define LWIP_PLATFORM_DIAG(x) do { tv_lwip_diag x; } while (0)
#define LWIP_PLATFORM_ASSERT(x) tv_lwip_assert((x), __FILE__, __LINE__)

#endif /* TV_LWIP_ARCH_CC_H */
