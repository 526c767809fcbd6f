/*
 * libc_glue.c - newlib's system calls for the appliance (see libc_glue.h).
 *
 * newlib (built --disable-newlib-supplied-syscalls) calls these for stdio and malloc.
 * There is no file system: descriptors 0-2 are the serial console, everything else
 * fails with EBADF.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include "../arch/cpu_ops.h"
#include "libc_glue.h"

#undef errno
extern int errno;

static unsigned char *heap_base;
static size_t heap_size;
static size_t heap_brk;
static uint64_t heap_refused;
static libc_write_fn console_write;
static libc_getc_fn console_getc;
static libc_exit_fn exit_fn;

/* Set the malloc arena. */
void libc_heap_set(void *base, size_t size)
{
	heap_base = base;
	heap_size = size;
	heap_brk = 0;
}

/* Arena use. */
void libc_heap_stats(struct libc_heap_stats *st)
{
	st->size = heap_size;
	st->brk = heap_brk;
	st->refused = heap_refused;
}

/* Install console hooks. */
void libc_set_console(libc_write_fn write_fn, libc_getc_fn getc_fn)
{
	console_write = write_fn;
	console_getc = getc_fn;
}

/* Install the exit hook. */
void libc_set_exit(libc_exit_fn fn)
{
	exit_fn = fn;
}

/* Grow the heap by incr bytes (never shrinks below 0, never past the arena). */
void *sbrk(ptrdiff_t incr)
{
	if (!heap_base || (incr > 0 && (size_t)incr > heap_size - heap_brk) ||
	    (incr < 0 && (size_t)-incr > heap_brk)) {
		heap_refused++;
		errno = ENOMEM;
		return (void *)-1;
	}
	void *old = heap_base + heap_brk;
	heap_brk += incr;
	return old;
}

/* Console output with LF sent as CRLF. */
int write(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	size_t start = 0;

	if (fd != 1 && fd != 2) {
		errno = EBADF;
		return -1;
	}
	if (!console_write)
		return (int)len;
	for (size_t i = 0; i < len; i++) {
		if (p[i] == '\n') {
			console_write(p + start, i - start);
			console_write("\r\n", 2);
			start = i + 1;
		}
	}
	console_write(p + start, len - start);
	return (int)len;
}

/* Console input: whatever bytes are waiting, at least one (blocking until then). */
int read(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t n = 0;
	int c;

	if (fd != 0 || !console_getc) {
		errno = EBADF;
		return -1;
	}
	while (n == 0 && len > 0) {
		while (n < len && (c = console_getc()) >= 0)
			p[n++] = (char)c;
	}
	return (int)n;
}

int close(int fd)
{
	(void)fd;
	errno = EBADF;
	return -1;
}

int fstat(int fd, struct stat *st)
{
	if (fd < 0 || fd > 2) {
		errno = EBADF;
		return -1;
	}
	st->st_mode = S_IFCHR;
	return 0;
}

int isatty(int fd)
{
	return fd >= 0 && fd <= 2;
}

off_t lseek(int fd, off_t off, int whence)
{
	(void)fd;
	(void)off;
	(void)whence;
	errno = ESPIPE;
	return -1;
}

int kill(int pid, int sig)
{
	(void)pid;
	(void)sig;
	if (exit_fn)
		exit_fn(128 + sig);
	errno = EINVAL;
	return -1;
}

int getpid(void)
{
	return 1;
}

/* exit(), abort() and failed asserts end here. */
void _exit(int status)
{
	if (exit_fn)
		exit_fn(status);
	arch_cpu_stop();
}
