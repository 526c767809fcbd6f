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

#endif
