/*
 * diag.c - the exception diagnosis' output helpers (diag.h), shared by both
 * architectures' exception.c.
 */
#include "arch.h"
#include "diag.h"

/* Write a string. */
void diag_put(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	arch_console_write(s, n);
}

/* Write a 64-bit hex value. */
void diag_put_hex(uint64_t v)
{
	char buf[18] = "0x";
	static const char digits[] = "0123456789abcdef";
	for (int i = 0; i < 16; i++)
		buf[2 + i] = digits[(v >> (60 - 4 * i)) & 0xf];
	arch_console_write(buf, 18);
}

/* Write a decimal value. */
void diag_put_dec(uint64_t v)
{
	char buf[21];
	int i = 20;
	buf[i] = 0;
	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	diag_put(buf + i);
}

/* Write NAME=value. */
void diag_put_reg(const char *name, uint64_t v)
{
	diag_put(name);
	diag_put("=");
	diag_put_hex(v);
}

/* Write the offset of addr in the image, when it is inside. */
void diag_put_image_offset(uint64_t addr, uint64_t image_lo, uint64_t image_hi)
{
	if (addr >= image_lo && addr < image_hi) {
		diag_put(" (image+");
		diag_put_hex(addr - image_lo);
		diag_put(")");
	}
}

/* The frame-pointer chain (see diag.h). */
void diag_put_backtrace(const struct diag_ctx *c, uint64_t fp)
{
	diag_put("backtrace (frame pointers):\r\n");
	for (int depth = 0; depth < 16; depth++) {
		if (fp & 7 || !c->on_stack(fp))
			break;
		uint64_t ret = ((const uint64_t *)(uintptr_t)fp)[1];
		uint64_t next = ((const uint64_t *)(uintptr_t)fp)[0];
		if (ret == 0)
			break;
		diag_put("  #");
		diag_put_dec((uint64_t)depth);
		diag_put(" ");
		diag_put_hex(ret);
		diag_put_image_offset(ret, c->image_lo, c->image_hi);
		diag_put("\r\n");
		if (next <= fp)
			break; /* frames must move up the stack */
		fp = next;
	}
}

/* Image addresses on the stack above sp (see diag.h). */
void diag_put_stack_scan(const struct diag_ctx *c, uint64_t sp, const char *sp_name)
{
	unsigned shown = 0;
	diag_put("stack scan (image addresses above ");
	diag_put(sp_name);
	diag_put("):");
	for (unsigned i = 0; i < 64 && shown < 12; i++) {
		uint64_t p = sp + 8ull * i;
		if (!c->on_stack(p))
			break;
		uint64_t v = *(const uint64_t *)(uintptr_t)p;
		if (v >= c->image_lo && v < c->image_hi) {
			diag_put(" +");
			diag_put_hex(v - c->image_lo);
			shown++;
		}
	}
	diag_put("\r\n");
}
