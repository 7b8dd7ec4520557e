/* SPDX-License-Identifier: MIT */
/*
 * libc_glue.c - newlib's system-call layer (x86_64-elf, MISSING_SYSCALL_NAMES:
 * the hooks are named write, sbrk, ... except _exit).  There is no OS and
 * no file: I/O goes through the logger, never through stdio, so everything
 * but sbrk fails with ENOSYS or EBADF.
 */
#include "boot/libc_glue.h"

#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "vmm/hw/hw.h"

static uint8_t *heap_base, *heap_end, *heap_brk;

void libc_glue_set_heap(void *base, size_t size)
{
	heap_base = heap_brk = base;
	heap_end = heap_base + size;
}

void *sbrk(ptrdiff_t incr);
void *sbrk(ptrdiff_t incr)
{
	uint8_t *old = heap_brk;

	if (!heap_base || incr > heap_end - heap_brk || incr < heap_base - heap_brk) {
		errno = ENOMEM;
		return (void *)-1;
	}
	heap_brk += incr;
	return old;
}

int write(int fd, const void *buf, size_t len);
int write(int fd, const void *buf, size_t len)
{
	(void)fd; (void)buf; (void)len;
	errno = EBADF;
	return -1;
}

int read(int fd, void *buf, size_t len);
int read(int fd, void *buf, size_t len)
{
	(void)fd; (void)buf; (void)len;
	errno = EBADF;
	return -1;
}

int close(int fd);
int close(int fd)
{
	(void)fd;
	errno = EBADF;
	return -1;
}

off_t lseek(int fd, off_t off, int whence);
off_t lseek(int fd, off_t off, int whence)
{
	(void)fd; (void)off; (void)whence;
	errno = ESPIPE;
	return -1;
}

int fstat(int fd, struct stat *st);
int fstat(int fd, struct stat *st)
{
	(void)fd;
	st->st_mode = S_IFCHR;
	return 0;
}

int isatty(int fd);
int isatty(int fd)
{
	(void)fd;
	return 1;
}

int getpid(void);
int getpid(void)
{
	return 1;
}

int kill(int pid, int sig);
int kill(int pid, int sig)
{
	(void)pid; (void)sig;
	errno = ENOSYS;
	return -1;
}

void _exit(int status);
void _exit(int status)
{
	(void)status;
	hw_stop_cpu();
}
