/*
 * uart16550.c - polled 16550 UART driver. Its receive interrupt (IER.ERBFI, FIFO trigger
 * at one byte) can be turned on as a wake-up for the idle loop: the byte is still read by
 * polling, the interrupt only ends a halt.
 */
#include <errno.h>
#include "../irq.h"
#include "cpu.h"
#include "arch.h"
#include "uart16550.h"

/* Register offsets (16550 data sheet names). */
#define UART_RBR 0 /* receive buffer (read, DLAB=0) */
#define UART_THR 0 /* transmit holding (write, DLAB=0) */
#define UART_DLL 0 /* divisor latch low (DLAB=1) */
#define UART_IER 1 /* interrupt enable (DLAB=0) */
#define UART_DLM 1 /* divisor latch high (DLAB=1) */
#define UART_FCR 2 /* FIFO control (write) */
#define UART_LCR 3 /* line control */
#define UART_MCR 4 /* modem control */
#define UART_LSR 5 /* line status */
#define UART_SCR 7 /* scratch */

#define LCR_8N1 0x03   /* 8 data bits, no parity, 1 stop bit */
#define LCR_DLAB 0x80  /* divisor latch access */
#define FCR_ENABLE 0x01
#define FCR_CLEAR_RX 0x02
#define FCR_CLEAR_TX 0x04
#define FCR_TRIGGER_14 0xc0
#define MCR_DTR 0x01
#define MCR_RTS 0x02
#define MCR_OUT2 0x08
#define LSR_DR 0x01    /* data ready */
#define LSR_THRE 0x20  /* transmit holding register empty */
#define IER_ERBFI 0x01 /* received data available interrupt */
#define COM1_ISA_IRQ 4

#define UART_CLOCK 115200
#define UART_TX_SPIN 1000000

static uint16_t uart_port;

/* Initialise the UART. */
int uart_init(uint16_t port, uint32_t baud)
{
	uint16_t div = (uint16_t)(UART_CLOCK / (baud ? baud : UART_CLOCK));

	outb(port + UART_SCR, 0x5a);
	if (inb(port + UART_SCR) != 0x5a)
		return -ENODEV;
	outb(port + UART_IER, 0);
	outb(port + UART_LCR, LCR_DLAB);
	outb(port + UART_DLL, div & 0xff);
	outb(port + UART_DLM, div >> 8);
	outb(port + UART_LCR, LCR_8N1);
	outb(port + UART_FCR, FCR_ENABLE | FCR_CLEAR_RX | FCR_CLEAR_TX | FCR_TRIGGER_14);
	outb(port + UART_MCR, MCR_DTR | MCR_RTS | MCR_OUT2);
	uart_port = port;
	return 0;
}

/* Send bytes. */
void uart_write(const char *buf, size_t len)
{
	if (!uart_port)
		return;
	for (size_t i = 0; i < len; i++) {
		for (unsigned spin = 0; !(inb(uart_port + UART_LSR) & LSR_THRE) && spin < UART_TX_SPIN; spin++)
			cpu_relax();
		outb(uart_port + UART_THR, (uint8_t)buf[i]);
	}
}

/* Receive a byte if one is waiting. */
int uart_getc(void)
{
	if (!uart_port || !(inb(uart_port + UART_LSR) & LSR_DR))
		return -1;
	return inb(uart_port + UART_RBR);
}

/* The serial console on COM1. */
int arch_console_init(void)
{
	return uart_init(UART_COM1, 115200);
}

/* Console output. */
void arch_console_write(const char *buf, size_t len)
{
	uart_write(buf, len);
}

/* Console input. */
int arch_console_getc(void)
{
	return uart_getc();
}

static unsigned wake_vector;

/* Interrupts of the receive vector. */
uint64_t arch_console_wakes(void)
{
	return wake_vector ? arch_irq_count(wake_vector) : 0;
}

/* Receive interrupt as a wake-up, set up once. */
int arch_console_wake(void)
{
	static int state = 1; /* 1: not tried, 0: on, <0: failed */
	struct arch_irq_msg m;

	if (state <= 0)
		return state;
	if (!uart_port) {
		state = -ENODEV;
		return state;
	}
	if ((state = arch_irq_alloc("uart", &m)) || (state = arch_ioapic_route_isa(COM1_ISA_IRQ, m.vector)))
		return state;
	outb(uart_port + UART_FCR, FCR_ENABLE);  /* trigger at 1 byte (FIFO contents kept) */
	outb(uart_port + UART_IER, IER_ERBFI);  /* MCR.OUT2 (set at init) gates the IRQ line */
	wake_vector = m.vector;
	return 0;
}
