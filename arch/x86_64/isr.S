/*
 * isr.S - exception entry stubs.
 *
 * Every stub leaves the same frame (struct arch_regs in arch.h): the general registers,
 * the vector number, an error code (0 when the CPU pushes none) and the CPU's own
 * RIP/CS/RFLAGS/RSP/SS, then calls arch_exception(regs).
 */
#include "../prof.h"

	.text

.macro ISR_NOERR vec
isr_\vec:
	pushq $0
	pushq $\vec
	jmp isr_common
.endm

.macro ISR_ERR vec
isr_\vec:
	pushq $\vec
	jmp isr_common
.endm

/* Vectors whose exceptions push an error code: 8 10 11 12 13 14 17 21 29 30. */
ISR_NOERR 0
ISR_NOERR 1
ISR_NOERR 2
ISR_NOERR 3
ISR_NOERR 4
ISR_NOERR 5
ISR_NOERR 6
ISR_NOERR 7
ISR_ERR 8
ISR_NOERR 9
ISR_ERR 10
ISR_ERR 11
ISR_ERR 12
ISR_ERR 13
ISR_ERR 14
ISR_NOERR 15
ISR_NOERR 16
ISR_ERR 17
ISR_NOERR 18
ISR_NOERR 19
ISR_NOERR 20
ISR_ERR 21
ISR_NOERR 22
ISR_NOERR 23
ISR_NOERR 24
ISR_NOERR 25
ISR_NOERR 26
ISR_NOERR 27
ISR_NOERR 28
ISR_ERR 29
ISR_ERR 30
ISR_NOERR 31

/*
 * LAPIC timer (lapic.c): it ends an idle halt; while the sampling profiler runs
 * (arch_prof.on, ../prof.h) it also records the interrupted RIP in arch_prof.ring and,
 * in TSC-deadline mode (arch_prof.period != 0), arms the next sample at TSC + period.
 * Only general registers are touched (saved here), so the interrupted code, which may
 * be anywhere, sees nothing. Acknowledge (EOI) and return.
 */
	.globl arch_isr_timer
arch_isr_timer:
	pushq %rax
	pushq %rcx
	pushq %rdx
	pushq %rsi
	leaq arch_prof(%rip), %rsi
	cmpl $0, ARCH_PROF_OFF_ON(%rsi)
	je 1f
	movq ARCH_PROF_OFF_HEAD(%rsi), %rcx
	andl $(ARCH_PROF_RING - 1), %ecx
	movq 32(%rsp), %rax                    /* the CPU's frame: RIP first */
	movq ARCH_PROF_OFF_RING(%rsi), %rdx    /* the ring (set while on) */
	movq %rax, (%rdx,%rcx,8)
	incq ARCH_PROF_OFF_HEAD(%rsi)
	cmpq $0, ARCH_PROF_OFF_PERIOD(%rsi)
	je 1f
	rdtsc
	shlq $32, %rdx
	orq %rdx, %rax
	addq ARCH_PROF_OFF_PERIOD(%rsi), %rax
	movq %rax, %rdx
	shrq $32, %rdx
	movl $0x6e0, %ecx                      /* IA32_TSC_DEADLINE */
	wrmsr
1:	movq arch_lapic_eoi_register(%rip), %rax
	movl $0, (%rax)
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rax
	iretq

/*
 * Device MSIs (irq.c, ../irq.h): each vector's stub counts it (its own counter and the
 * total), writes EOI and returns; the interrupt's only job was to end an idle halt.
 * incq changes only the flags, which iretq restores.
 */
.macro ISR_DEVICE n
isr_device_\n:
	incq arch_irq_counts+8*\n(%rip)
	incq arch_irq_all(%rip)
	pushq %rax
	movq arch_lapic_eoi_register(%rip), %rax
	movl $0, (%rax)
	popq %rax
	iretq
.endm
	.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	ISR_DEVICE \n
	.endr

/* LAPIC spurious interrupt: no EOI (SDM 10.9), just return. */
	.globl arch_isr_spurious
arch_isr_spurious:
	iretq

	.globl arch_isr_unexpected
arch_isr_unexpected:
	pushq $0
	pushq $255
	jmp isr_common

isr_common:
	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	cld
	mov %rsp, %rdi
	mov %rsp, %rbx
	and $-16, %rsp
	call arch_exception
	mov %rbx, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbx
	popq %rax
	add $16, %rsp
	iretq

	.section .data.rel.ro, "aw"
	.balign 8
	.globl arch_isr_table
arch_isr_table:
	.irp vec, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.quad isr_\vec
	.endr

	.balign 8
	.globl arch_isr_device_table
arch_isr_device_table:
	.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	.quad isr_device_\n
	.endr

	.section .note.GNU-stack,"",@progbits
