/*
 * diag.h - formatting for the exception diagnosis (diag.c): straight to the console, no
 * printf and no heap, so that it works when everything else is broken.
 */
#ifndef ARCH_DIAG_H
#define ARCH_DIAG_H

#include <stdint.h>

/* A NUL-terminated string. */
void diag_put(const char *s);

/* 0x and 16 hex digits. */
void diag_put_hex(uint64_t v);

/* Decimal. */
void diag_put_dec(uint64_t v);

/* "NAME=0x...". */
void diag_put_reg(const char *name, uint64_t v);

/* " (image+0x...)" when addr lies in [image_lo, image_hi). */
void diag_put_image_offset(uint64_t addr, uint64_t image_lo, uint64_t image_hi);

/* Where the diagnosis may read: the address range of the image's code and a test for
 * "p..p+16 lies on a known stack" (the kernel stack or the exception stack). */
struct diag_ctx {
	uint64_t image_lo, image_hi;
	int (*on_stack)(uint64_t p);
};

/* The frame-pointer chain from fp: both architectures keep [fp] = the caller's fp and
 * [fp + 8] = the return address. At most 16 frames; stops off the known stacks. */
void diag_put_backtrace(const struct diag_ctx *c, uint64_t fp);

/* Image addresses found on the stack above sp (sp_name: "RSP" or "SP"): the call chain
 * through code built without frame pointers (newlib) that the frame walk cannot follow. */
void diag_put_stack_scan(const struct diag_ctx *c, uint64_t sp, const char *sp_name);

#endif
