/*
 * uart16550.h - polled 16550 UART (the serial console).
 */
#ifndef ARCH_X86_64_UART16550_H
#define ARCH_X86_64_UART16550_H

#include <stddef.h>
#include <stdint.h>

#define UART_COM1 0x3f8

/* Program 8N1 at `baud`, FIFOs on, interrupts off. Returns 0, or -ENODEV when the
 * scratch register does not read back (no UART at that port). */
int uart_init(uint16_t port, uint32_t baud);

/* Send len bytes, waiting (bounded) for room in the transmitter. */
void uart_write(const char *buf, size_t len);

/* A received byte, or -1 when none is waiting. */
int uart_getc(void);

#endif
