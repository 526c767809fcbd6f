/*
 * entry.S - arch_enter_kernel(stack_top, fn, arg): switch to the appliance's stack.
 * SysV: rdi = stack_top, rsi = fn, rdx = arg. rbp = 0 ends backtraces.
 */
	.text
	.globl arch_enter_kernel
	.type arch_enter_kernel, @function
arch_enter_kernel:
	cli
	mov %rdi, %rsp
	and $-16, %rsp
	xor %ebp, %ebp
	mov %rdx, %rdi
	push %rbp            /* fake return address 0: the backtrace stops here */
	jmp *%rsi
	.size arch_enter_kernel, . - arch_enter_kernel
	.section .note.GNU-stack,"",@progbits
