/*
 * entry.S - arch_enter_kernel(stack_top, fn, arg): leave the firmware's stack.
 * AAPCS64: x0 = stack_top, x1 = fn, x2 = arg.
 *
 * The appliance runs on SP_EL0 (SPSel = 0); SP_EL1 points at a separate exception stack,
 * which the CPU switches to on every exception, so that a kernel stack overflow into its
 * guard page is still diagnosed (the role x86's IST stack plays). x29 = x30 = 0 end
 * frame-pointer backtraces.
 */
	.text
	.globl arch_enter_kernel
	.type arch_enter_kernel, %function
arch_enter_kernel:
	msr daifset, #0xf           /* interrupts stay masked: WFI still wakes on a pending one */
	adrp x9, arm64_exception_stack_top
	add x9, x9, :lo12:arm64_exception_stack_top
	mov sp, x9                  /* SP_EL1 (SPSel is 1 here) */
	msr spsel, #0
	and x0, x0, #~15
	mov sp, x0                  /* SP_EL0 */
	mov x29, #0
	mov x30, #0
	mov x0, x2
	br x1
	.size arch_enter_kernel, . - arch_enter_kernel

	.data
	.balign 16
	.globl arm64_exception_stack_lo
	.hidden arm64_exception_stack_lo
arm64_exception_stack_lo:
	.skip 16384
	.globl arm64_exception_stack_top
	.hidden arm64_exception_stack_top
arm64_exception_stack_top:
	.section .note.GNU-stack,"",%progbits
