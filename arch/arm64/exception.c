/*
 * exception.c - the diagnosis printed when the CPU takes an exception.
 *
 * It must work when everything else is broken, so it formats by hand straight to the
 * console (../diag.c): no printf, no malloc. It runs on the exception stack (SP_EL1,
 * entry.S), so a kernel stack overflow is diagnosed too. It prints the vector table entry,
 * ESR_EL1 decoded (exception class; for aborts the fault status, level, read/write and
 * FAR_EL1), the PC with its offset in the image (feed that to `tools/symbolize`), the
 * system registers that explain a translation fault, x0-x30, and a frame-pointer
 * backtrace that only follows frames inside the known stacks. Then it halts, exits QEMU
 * (tests) or resets, as configured.
 */
#include <stdint.h>
#include "../cpu_ops.h"
#include "../diag.h"
#include "arch.h"

#define EXIT_CODE_FAULT 0x7f /* QEMU then exits with status 0xff */
#define PAGE_SIZE 4096

/* ESR_EL1 fields (ARM ARM D17.2.37). */
#define ESR_EC(esr) (((esr) >> 26) & 0x3f)
#define ESR_ISS(esr) ((esr) & 0x1ffffff)
#define ISS_ABORT_FNV (1u << 10) /* FAR not valid */
#define ISS_ABORT_WNR (1u << 6)  /* write, not read (data aborts) */
#define ISS_ABORT_FSC(iss) ((iss) & 0x3f)
#define EC_INSN_ABORT_SAME 0x21
#define EC_DATA_ABORT_SAME 0x25
#define EC_INSN_ABORT_LOWER 0x20
#define EC_DATA_ABORT_LOWER 0x24

static uint64_t image_lo, image_hi, stack_lo, stack_hi;
static enum arch_fault_action fault_action;
static volatile int in_exception;

extern char arm64_vectors[];
extern char arm64_exception_stack_lo[], arm64_exception_stack_top[];

static const char *const entry_names[16] = {
	"Synchronous (current EL, SP_EL0)", "IRQ (current EL, SP_EL0)", "FIQ (current EL, SP_EL0)",
	"SError (current EL, SP_EL0)", "Synchronous (current EL, SP_ELx)", "IRQ (current EL, SP_ELx)",
	"FIQ (current EL, SP_ELx)", "SError (current EL, SP_ELx)", "Synchronous (lower EL, AArch64)",
	"IRQ (lower EL, AArch64)", "FIQ (lower EL, AArch64)", "SError (lower EL, AArch64)",
	"Synchronous (lower EL, AArch32)", "IRQ (lower EL, AArch32)", "FIQ (lower EL, AArch32)",
	"SError (lower EL, AArch32)",
};

/* Install the vector table. */
void arch_descriptors_init(void)
{
	ARCH_WRITE_SYSREG(vbar_el1, (uint64_t)(uintptr_t)arm64_vectors);
	__asm__ volatile("isb");
}

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

/* Exception class name (ESR_EL1.EC). */
const char *arch_vector_name(uint64_t ec)
{
	switch (ec) {
	case 0x00: return "Unknown reason (undefined instruction)";
	case 0x01: return "WFI/WFE trapped";
	case 0x07: return "SVE/SIMD/FP access trapped";
	case 0x0e: return "Illegal Execution state";
	case 0x15: return "SVC";
	case 0x16: return "HVC";
	case 0x17: return "SMC";
	case 0x18: return "MSR/MRS/system instruction trapped";
	case EC_INSN_ABORT_LOWER: return "Instruction Abort (lower EL)";
	case EC_INSN_ABORT_SAME: return "Instruction Abort (same EL)";
	case 0x22: return "PC alignment fault";
	case EC_DATA_ABORT_LOWER: return "Data Abort (lower EL)";
	case EC_DATA_ABORT_SAME: return "Data Abort (same EL)";
	case 0x26: return "SP alignment fault";
	case 0x2c: return "Floating-point exception";
	case 0x2f: return "SError";
	case 0x30: case 0x31: return "Breakpoint";
	case 0x32: case 0x33: return "Software Step";
	case 0x34: case 0x35: return "Watchpoint";
	case 0x3c: return "BRK instruction";
	default: return "reserved exception class";
	}
}

/* Fault status code of an abort (ARM ARM D17.2.37, DFSC/IFSC). */
static void put_fault_status(uint32_t fsc)
{
	unsigned level = fsc & 3;
	switch (fsc & 0x3c) {
	case 0x00: diag_put("address size fault, level "); diag_put_dec(level); return;
	case 0x04: diag_put("translation fault, level "); diag_put_dec(level); return;
	case 0x08: diag_put("access flag fault, level "); diag_put_dec(level); return;
	case 0x0c: diag_put("permission fault, level "); diag_put_dec(level); return;
	}
	switch (fsc) {
	case 0x10: diag_put("synchronous external abort"); return;
	case 0x21: diag_put("alignment fault"); return;
	case 0x30: diag_put("TLB conflict abort"); return;
	default: diag_put("fault status "); diag_put_hex(fsc); return;
	}
}

static void put_abort(const struct arch_regs *r)
{
	uint32_t iss = ESR_ISS(r->esr);
	uint64_t ec = ESR_EC(r->esr);
	diag_put(" (");
	put_fault_status(ISS_ABORT_FSC(iss));
	if (ec == EC_DATA_ABORT_SAME || ec == EC_DATA_ABORT_LOWER)
		diag_put(iss & ISS_ABORT_WNR ? ", write" : ", read");
	else
		diag_put(", instruction fetch");
	if (iss & ISS_ABORT_FNV) {
		diag_put(", FAR not valid)");
		return;
	}
	diag_put(" at ");
	diag_put_hex(r->far);
	diag_put(")");
	if (stack_lo && r->far < stack_lo && r->far >= stack_lo - PAGE_SIZE)
		diag_put("\r\n    the address is the kernel stack's guard page: kernel stack overflow");
	else if (r->far < PAGE_SIZE)
		diag_put("\r\n    the address is in page 0: a NULL pointer dereference");
}

static int on_known_stack(uint64_t p)
{
	uint64_t xlo = (uint64_t)(uintptr_t)arm64_exception_stack_lo;
	uint64_t xhi = (uint64_t)(uintptr_t)arm64_exception_stack_top;
	return (p >= stack_lo && p + 16 <= stack_hi) || (p >= xlo && p + 16 <= xhi);
}


/* Print the diagnosis, then halt, exit QEMU or reset. */
void arch_exception(struct arch_regs *r)
{
	const struct diag_ctx diag = { image_lo, image_hi, on_known_stack };
	uint64_t ec = ESR_EC(r->esr);

	if (in_exception++) {
		diag_put("\r\n*** nested CPU exception during diagnosis, vector ");
		diag_put_dec(r->vector);
		diag_put(" ESR ");
		diag_put_hex(r->esr);
		diag_put(" at PC ");
		diag_put_hex(r->elr);
		diag_put("; halting\r\n");
		arch_halt();
	}
	diag_put("\r\n*** CPU EXCEPTION: vector ");
	diag_put_dec(r->vector);
	diag_put(" ");
	diag_put(r->vector < 16 ? entry_names[r->vector] : "?");
	diag_put(", EC ");
	diag_put_hex(ec);
	diag_put(" ");
	diag_put(arch_vector_name(ec));
	diag_put(", ESR ");
	diag_put_hex(r->esr);
	if (ec == EC_DATA_ABORT_SAME || ec == EC_DATA_ABORT_LOWER || ec == EC_INSN_ABORT_SAME ||
	    ec == EC_INSN_ABORT_LOWER)
		put_abort(r);
	diag_put("\r\nPC=");
	diag_put_hex(r->elr);
	diag_put_image_offset(r->elr, image_lo, image_hi);
	diag_put(" ");
	diag_put_reg("SPSR", r->spsr);
	diag_put("\r\nLR=");
	diag_put_hex(r->x[30]);
	diag_put_image_offset(r->x[30], image_lo, image_hi);
	diag_put(" ");
	diag_put_reg("SP", r->sp);
	diag_put(" ");
	diag_put_reg("FAR", r->far);
	diag_put("\r\n");
	diag_put_reg("SCTLR", ARCH_READ_SYSREG(sctlr_el1));
	diag_put(" ");
	diag_put_reg("TCR", ARCH_READ_SYSREG(tcr_el1));
	diag_put(" ");
	diag_put_reg("TTBR0", ARCH_READ_SYSREG(ttbr0_el1));
	diag_put("\r\n");
	for (unsigned i = 0; i < 31; i++) {
		char name[4] = { 'x', (char)('0' + i / 10), (char)('0' + i % 10), 0 };
		if (i < 10) {
			name[1] = (char)('0' + i);
			name[2] = ' ';
		}
		diag_put_reg(name, r->x[i]);
		diag_put(i % 4 == 3 || i == 30 ? "\r\n" : " ");
	}
	diag_put("image base ");
	diag_put_hex(image_lo);
	diag_put(" (symbolize offsets with tools/symbolize)\r\n");
	diag_put_backtrace(&diag, r->x[29]);
	diag_put_stack_scan(&diag, r->sp, "SP");

	switch (fault_action) {
	case ARCH_FAULT_EXIT:
		diag_put("*** exiting QEMU (test mode)\r\n");
		arch_qemu_exit(EXIT_CODE_FAULT);
	case ARCH_FAULT_REBOOT:
		diag_put("*** resetting\r\n");
		arch_reboot();
	default:
		diag_put("*** halted\r\n");
		arch_halt();
	}
}
