/*
 * descriptors.c - the appliance's own GDT, TSS and IDT.
 *
 * The firmware's tables live in boot-services memory that the page allocator will
 * reuse, so the appliance installs its own before anything else: a flat 64-bit code
 * and data segment, a TSS whose IST1 stack takes double faults, NMIs and machine
 * checks (so a kernel stack overflow still gets diagnosed), and an IDT whose 32
 * exception vectors and catch-all enter arch_exception() (exception.c), plus the timer,
 * spurious and device-MSI stubs of isr.S.
 */
#include <stdint.h>
#include "../irq.h"
#include "arch.h"

#define GDT_KERNEL_CODE 0x08
#define GDT_KERNEL_DATA 0x10
#define GDT_TSS 0x18

/* Descriptor bits (Intel SDM vol. 3, 3.4.5). */
#define SEG_PRESENT (1ull << 47)
#define SEG_DPL0 (0ull << 45)
#define SEG_CODE_DATA (1ull << 44) /* S: code or data, not system */
#define SEG_EXEC (1ull << 43)
#define SEG_RW (1ull << 41)        /* readable code / writable data */
#define SEG_LONG (1ull << 53)      /* L: 64-bit code */
#define SEG_GRAN (1ull << 55)
#define SEG_LIMIT_MAX (0xffffull | (0xfull << 48))
#define TSS_TYPE_AVAIL (0x9ull << 40)

#define IDT_GATE_INTERRUPT 0x8e    /* present, DPL0, 64-bit interrupt gate */
#define IST_DOUBLE_FAULT 1

struct __attribute__((packed)) tss64 {
	uint32_t reserved0;
	uint64_t rsp[3];
	uint64_t reserved1;
	uint64_t ist[7];
	uint64_t reserved2;
	uint16_t reserved3;
	uint16_t iomap_base;
};

struct __attribute__((packed)) idt_gate {
	uint16_t offset_low;
	uint16_t selector;
	uint8_t ist;
	uint8_t type_attr;
	uint16_t offset_mid;
	uint32_t offset_high;
	uint32_t reserved;
};

struct __attribute__((packed)) table_pointer {
	uint16_t limit;
	uint64_t base;
};

static uint64_t gdt[5];
static struct tss64 tss;
static struct idt_gate idt[256];
static uint8_t ist_stack[16384] __attribute__((aligned(16)));

extern const uint64_t arch_isr_table[32]; /* isr.S */
extern void arch_isr_unexpected(void);    /* isr.S */
extern void arch_isr_timer(void);         /* isr.S */
extern void arch_isr_spurious(void);      /* isr.S */
extern const uint64_t arch_isr_device_table[ARCH_IRQ_MAX]; /* isr.S: device MSI stubs */

static void idt_set(unsigned vec, uint64_t handler, uint8_t ist)
{
	idt[vec].offset_low = handler & 0xffff;
	idt[vec].selector = GDT_KERNEL_CODE;
	idt[vec].ist = ist;
	idt[vec].type_attr = IDT_GATE_INTERRUPT;
	idt[vec].offset_mid = (handler >> 16) & 0xffff;
	idt[vec].offset_high = handler >> 32;
	idt[vec].reserved = 0;
}

/* Install GDT, TSS and IDT. */
void arch_descriptors_init(void)
{
	uint64_t tss_base = (uint64_t)(uintptr_t)&tss;
	uint64_t tss_limit = sizeof(tss) - 1;
	struct table_pointer gdtr, idtr;

	gdt[0] = 0;
	gdt[1] = SEG_PRESENT | SEG_DPL0 | SEG_CODE_DATA | SEG_EXEC | SEG_RW | SEG_LONG | SEG_GRAN | SEG_LIMIT_MAX;
	gdt[2] = SEG_PRESENT | SEG_DPL0 | SEG_CODE_DATA | SEG_RW | SEG_GRAN | SEG_LIMIT_MAX;
	gdt[3] = (tss_limit & 0xffff) | ((tss_base & 0xffffff) << 16) | TSS_TYPE_AVAIL | SEG_PRESENT |
		 ((tss_limit >> 16 & 0xf) << 48) | ((tss_base >> 24 & 0xff) << 56);
	gdt[4] = tss_base >> 32;
	tss.ist[IST_DOUBLE_FAULT - 1] = (uint64_t)(uintptr_t)(ist_stack + sizeof(ist_stack));
	tss.iomap_base = sizeof(tss);

	gdtr.limit = sizeof(gdt) - 1;
	gdtr.base = (uint64_t)(uintptr_t)gdt;
	__asm__ volatile(
		"lgdt %0\n\t"
		"mov %1, %%ds\n\t"
		"mov %1, %%es\n\t"
		"mov %1, %%ss\n\t"
		"xor %%eax, %%eax\n\t"
		"mov %%eax, %%fs\n\t"
		"mov %%eax, %%gs\n\t"
		"lea 1f(%%rip), %%rax\n\t"
		"pushq %2\n\t"
		"pushq %%rax\n\t"
		"lretq\n"
		"1:\n\t"
		"ltr %w3\n\t"
		:
		: "m"(gdtr), "r"((uint64_t)GDT_KERNEL_DATA), "i"(GDT_KERNEL_CODE), "r"(GDT_TSS)
		: "rax", "memory");

	for (unsigned v = 0; v < 256; v++)
		idt_set(v, (uint64_t)(uintptr_t)arch_isr_unexpected, 0);
	for (unsigned v = 0; v < 32; v++) {
		uint8_t ist = (v == 2 || v == 8 || v == 18) ? IST_DOUBLE_FAULT : 0; /* NMI, #DF, #MC */
		idt_set(v, arch_isr_table[v], ist);
	}
	idt_set(ARCH_VECTOR_TIMER, (uint64_t)(uintptr_t)arch_isr_timer, 0);
	for (unsigned i = 0; i < ARCH_IRQ_MAX; i++)
		idt_set(ARCH_VECTOR_DEVICE_FIRST + i, arch_isr_device_table[i], 0);
	idt_set(ARCH_VECTOR_SPURIOUS, (uint64_t)(uintptr_t)arch_isr_spurious, 0);
	idtr.limit = sizeof(idt) - 1;
	idtr.base = (uint64_t)(uintptr_t)idt;
	__asm__ volatile("lidt %0" : : "m"(idtr) : "memory");
}

/* The double-fault stack, for the diagnosis to tell which stack a frame is on. */
void arch_ist_stack_bounds(uint64_t *lo, uint64_t *hi)
{
	*lo = (uint64_t)(uintptr_t)ist_stack;
	*hi = *lo + sizeof(ist_stack);
}
