/*
 * vectors.S - the exception vector table (VBAR_EL1) and its common entry.
 *
 * 16 entries of 128 bytes (ARM ARM D1.10.2): {current EL with SP_EL0, current EL with
 * SP_ELx, lower EL AArch64, lower EL AArch32} x {synchronous, IRQ, FIQ, SError}. Every
 * entry builds the same frame (struct arch_regs in arch.h) on the exception stack
 * (SP_EL1, entry.S) and calls arch_exception(regs), which never returns: the appliance
 * keeps interrupts masked, so nothing here is expected to be resumed.
 */
#define FRAME_SIZE (38 * 8) /* 37 words, kept 16-byte aligned */

	.text
	.balign 2048
	.globl arm64_vectors
	.hidden arm64_vectors
arm64_vectors:
	.irp idx, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
	.balign 128
	sub sp, sp, #FRAME_SIZE
	stp x0, x1, [sp, #0]
	mov x0, #\idx
	b arm64_exception_common
	.endr

arm64_exception_common:
	stp x2, x3, [sp, #16]
	stp x4, x5, [sp, #32]
	stp x6, x7, [sp, #48]
	stp x8, x9, [sp, #64]
	stp x10, x11, [sp, #80]
	stp x12, x13, [sp, #96]
	stp x14, x15, [sp, #112]
	stp x16, x17, [sp, #128]
	stp x18, x19, [sp, #144]
	stp x20, x21, [sp, #160]
	stp x22, x23, [sp, #176]
	stp x24, x25, [sp, #192]
	stp x26, x27, [sp, #208]
	stp x28, x29, [sp, #224]
	/* the interrupted SP: SP_EL0 for entries 0-3, this stack before the frame for 4-7 */
	mrs x2, sp_el0
	add x3, sp, #FRAME_SIZE
	cmp x0, #4
	csel x2, x3, x2, hs
	stp x30, x2, [sp, #240]
	mrs x3, elr_el1
	mrs x4, spsr_el1
	stp x3, x4, [sp, #256]
	mrs x3, esr_el1
	mrs x4, far_el1
	stp x3, x4, [sp, #272]
	str x0, [sp, #288]         /* vector index */
	/* a frame record linking the backtrace to the interrupted code */
	ldr x29, [sp, #232]
	mov x0, sp
	bl arch_exception
1:	wfi
	b 1b
	.size arm64_exception_common, . - arm64_exception_common
	.section .note.GNU-stack,"",%progbits
