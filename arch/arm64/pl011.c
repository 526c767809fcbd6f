/*
 * pl011.c - the serial console on an Arm PL011 (or SBSA generic) UART, polled.
 *
 * The UART is the one ACPI's SPCR table names (Serial Port Console Redirection, Microsoft
 * spec rev. 1.04+). The firmware has already programmed its baud rate and line format
 * (the UART clock is not described anywhere we could compute a divisor from), so this
 * file only makes sure transmit and receive are on and interrupts masked.
 */
#include <errno.h>
#include <string.h>
#include "../acpi.h"
#include "../cpu_ops.h"
#include "arch.h"

/* PL011 registers (PrimeCell UART PL011 TRM, 3.2). */
#define UARTDR 0x000     /* data */
#define UARTFR 0x018     /* flags */
#define UARTCR 0x030     /* control */
#define UARTIMSC 0x038   /* interrupt mask set/clear */
#define FR_RXFE (1u << 4) /* receive FIFO empty */
#define FR_TXFF (1u << 5) /* transmit FIFO full */
#define CR_UARTEN (1u << 0)
#define CR_TXE (1u << 8)
#define CR_RXE (1u << 9)

/* SPCR fields. */
#define SPCR_INTERFACE_TYPE 36       /* 0x03 PL011, 0x0e SBSA generic UART, 0x0f/0x10 SBSA-32 */
#define SPCR_BASE_ADDRESS 40         /* Generic Address Structure */
#define SPCR_MIN_LENGTH 52
#define SPCR_TYPE_PL011 0x03
#define SPCR_TYPE_SBSA_32BIT 0x0d
#define SPCR_TYPE_SBSA 0x0e
#define GAS_SPACE_MEMORY 0

#define UART_TX_SPIN 1000000

static volatile uint32_t *uart;

static inline uint32_t reg_read(unsigned off)
{
	return uart[off / 4];
}

static inline void reg_write(unsigned off, uint32_t v)
{
	uart[off / 4] = v;
}

/* The console UART named by SPCR. */
int arch_console_init(void)
{
	const uint8_t *spcr = acpi_find_table("SPCR");
	uint32_t len;
	uint64_t base;

	if (!spcr)
		return -ENODEV;
	memcpy(&len, spcr + 4, 4);
	if (len < SPCR_MIN_LENGTH || spcr[SPCR_BASE_ADDRESS] != GAS_SPACE_MEMORY)
		return -ENODEV;
	uint8_t type = spcr[SPCR_INTERFACE_TYPE];
	if (type != SPCR_TYPE_PL011 && type != SPCR_TYPE_SBSA && type != SPCR_TYPE_SBSA_32BIT)
		return -ENODEV;
	memcpy(&base, spcr + SPCR_BASE_ADDRESS + 4, 8);
	if (!base || base & 0xfff)
		return -ENODEV;
	uart = (volatile uint32_t *)(uintptr_t)base;
	if (type == SPCR_TYPE_PL011) {
		reg_write(UARTIMSC, 0);
		reg_write(UARTCR, reg_read(UARTCR) | CR_UARTEN | CR_TXE | CR_RXE);
	}
	return 0;
}

/* Send bytes. */
void arch_console_write(const char *buf, size_t len)
{
	if (!uart)
		return;
	for (size_t i = 0; i < len; i++) {
		for (unsigned spin = 0; (reg_read(UARTFR) & FR_TXFF) && spin < UART_TX_SPIN; spin++)
			arch_cpu_relax();
		reg_write(UARTDR, (uint8_t)buf[i]);
	}
}

/* Receive a byte if one is waiting. */
int arch_console_getc(void)
{
	if (!uart || (reg_read(UARTFR) & FR_RXFE))
		return -1;
	return (int)(reg_read(UARTDR) & 0xff);
}

/* The UART's register page. */
uint64_t arm64_console_base(void)
{
	return (uint64_t)(uintptr_t)uart;
}

/* None: the console is polled. */
uint64_t arch_console_wakes(void)
{
	return 0;
}

/* Not on arm64 yet: the console is polled. */
int arch_console_wake(void)
{
	return -ENOTSUP;
}
