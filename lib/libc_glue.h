/*
 * libc_glue.h - what newlib needs from the appliance: a heap, a console, an exit.
 *
 * newlib is built without its own system calls; lib/libc_glue.c provides sbrk, write,
 * read and friends on top of hooks that the boot code installs.
 */
#ifndef LIB_LIBC_GLUE_H
#define LIB_LIBC_GLUE_H

#include <stddef.h>
#include <stdint.h>

typedef void (*libc_write_fn)(const char *buf, size_t len);
typedef int (*libc_getc_fn)(void);           /* a byte, or -1 when none is waiting */
typedef void (*libc_exit_fn)(int status) __attribute__((noreturn));

/* Give malloc its arena: sbrk grows inside [base, base + size) and refuses beyond. */
void libc_heap_set(void *base, size_t size);

struct libc_heap_stats {
	uint64_t size;      /* arena bytes */
	uint64_t brk;       /* bytes handed to malloc so far */
	uint64_t refused;   /* sbrk calls refused for lack of room */
};

/* Fill *st with the arena's use. */
void libc_heap_stats(struct libc_heap_stats *st);

/* Route stdout/stderr (with "\n" sent as "\r\n") and stdin. */
void libc_set_console(libc_write_fn write_fn, libc_getc_fn getc_fn);

/* What exit() and abort() end in. */
void libc_set_exit(libc_exit_fn fn);

#endif
