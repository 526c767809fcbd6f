/*
 * exception.c - the diagnosis printed when the CPU faults.
 *
 * It must work when everything else is broken (heap corrupted, stack overflowed, locks
 * held), so it formats by hand straight to the console (../diag.c): no printf, no malloc. It prints the
 * vector and its name, the error code decoded for #PF, RIP with its offset in the image
 * (feed that to `tools/symbolize`), the control and general registers, and a
 * frame-pointer backtrace that only follows frames inside the known stacks. Then it
 * halts, exits QEMU (tests) or resets, as configured.
 */
#include <stdint.h>
#include "arch.h"
#include "cpu.h"
#include "../diag.h"

#define EXIT_CODE_FAULT 0x7f /* QEMU then exits with status 0xff */

static uint64_t image_lo, image_hi, stack_lo, stack_hi;
static enum arch_fault_action fault_action;
static volatile int in_exception;

static const char *const vector_names[32] = {
	"#DE Divide Error", "#DB Debug", "NMI Non-maskable Interrupt", "#BP Breakpoint",
	"#OF Overflow", "#BR BOUND Range Exceeded", "#UD Invalid Opcode", "#NM Device Not Available",
	"#DF Double Fault", "Coprocessor Segment Overrun", "#TS Invalid TSS", "#NP Segment Not Present",
	"#SS Stack-Segment Fault", "#GP General Protection", "#PF Page Fault", "reserved 15",
	"#MF x87 Floating-Point Error", "#AC Alignment Check", "#MC Machine Check",
	"#XM SIMD Floating-Point", "#VE Virtualization", "#CP Control Protection", "reserved 22",
	"reserved 23", "reserved 24", "reserved 25", "reserved 26", "reserved 27",
	"#HV Hypervisor Injection", "#VC VMM Communication", "#SX Security", "reserved 31",
};

/* Record the layout the diagnosis needs. */
void arch_exception_setup(uint64_t image_base, uint64_t image_size, uint64_t slo, uint64_t shi,
			  enum arch_fault_action action)
{
	image_lo = image_base;
	image_hi = image_base + image_size;
	stack_lo = slo;
	stack_hi = shi;
	fault_action = action;
}

/* Vector name. */
const char *arch_vector_name(uint64_t vector)
{
	return vector < 32 ? vector_names[vector] : "unexpected interrupt";
}

#define put diag_put
#define put_hex diag_put_hex
#define put_dec diag_put_dec
#define put_reg diag_put_reg

/* " (image+0x...)" when addr is inside the image. */
static void put_image_offset(uint64_t addr)
{
	diag_put_image_offset(addr, image_lo, image_hi);
}

static int on_known_stack(uint64_t p)
{
	uint64_t ist_lo, ist_hi;
	arch_ist_stack_bounds(&ist_lo, &ist_hi);
	return (p >= stack_lo && p + 16 <= stack_hi) || (p >= ist_lo && p + 16 <= ist_hi);
}


static void put_page_fault_reason(uint64_t err)
{
	put(" (");
	put(err & 1 ? "protection violation" : "not present");
	put(err & 2 ? ", write" : ", read");
	if (err & 16)
		put(", instruction fetch");
	if (err & 8)
		put(", reserved bit set");
	put(err & 4 ? ", user" : ", kernel");
	put(")");
}

/* Print the diagnosis, then halt, exit QEMU or reset. */
void arch_exception(struct arch_regs *r)
{
	const struct diag_ctx diag = { image_lo, image_hi, on_known_stack };
	if (in_exception++) {
		put("\r\n*** nested CPU exception during diagnosis, vector ");
		put_dec(r->vector);
		put(" at RIP ");
		put_hex(r->rip);
		put("; halting\r\n");
		arch_halt();
	}
	put("\r\n*** CPU EXCEPTION: vector ");
	put_dec(r->vector);
	put(" ");
	put(arch_vector_name(r->vector));
	put(", error code ");
	put_hex(r->error);
	if (r->vector == 14)
		put_page_fault_reason(r->error);
	put("\r\nRIP=");
	put_hex(r->rip);
	put_image_offset(r->rip);
	put(" ");
	put_reg("CS", r->cs);
	put(" ");
	put_reg("RFLAGS", r->rflags);
	put("\r\n");
	put_reg("RSP", r->rsp);
	put(" ");
	put_reg("SS", r->ss);
	put(" ");
	put_reg("CR2", read_cr2());
	put("\r\n");
	put_reg("CR0", read_cr0());
	put(" ");
	put_reg("CR3", read_cr3());
	put(" ");
	put_reg("CR4", read_cr4());
	put("\r\n");
	put_reg("RAX", r->rax); put(" "); put_reg("RBX", r->rbx); put(" "); put_reg("RCX", r->rcx); put("\r\n");
	put_reg("RDX", r->rdx); put(" "); put_reg("RSI", r->rsi); put(" "); put_reg("RDI", r->rdi); put("\r\n");
	put_reg("RBP", r->rbp); put(" "); put_reg("R8 ", r->r8); put(" "); put_reg("R9 ", r->r9); put("\r\n");
	put_reg("R10", r->r10); put(" "); put_reg("R11", r->r11); put(" "); put_reg("R12", r->r12); put("\r\n");
	put_reg("R13", r->r13); put(" "); put_reg("R14", r->r14); put(" "); put_reg("R15", r->r15); put("\r\n");
	put("image base ");
	put_hex(image_lo);
	put(" (symbolize offsets with tools/symbolize)\r\n");
	diag_put_backtrace(&diag, r->rbp);
	diag_put_stack_scan(&diag, r->rsp, "RSP");

	switch (fault_action) {
	case ARCH_FAULT_EXIT:
		put("*** exiting QEMU (test mode)\r\n");
		arch_qemu_exit(EXIT_CODE_FAULT);
	case ARCH_FAULT_REBOOT:
		put("*** resetting\r\n");
		arch_reboot();
	default:
		put("*** halted\r\n");
		arch_halt();
	}
}
