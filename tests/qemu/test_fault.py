"""The exception diagnosis: a deliberate fault must print the vector, the faulting RIP/PC
(which symbolizes to the function that faulted), CR2 or ESR/FAR decoded, and a backtrace
through the console command; with `panic = exit` QEMU then exits with status 0xff."""
import re

import pytest

from harness import ARCH, Appliance, symbolize

if ARCH == "arm64":
    CASES = {
        "pf": dict(vector=r"vector 0 Synchronous \(current EL, SP_EL0\), EC 0x0+25 Data Abort \(same EL\), "
                          r"ESR 0x[0-9a-f]+ \(translation fault, level \d, write at 0x0+\)",
                   function="arch_fault_null_write", cr2=None),
        "stack": dict(vector=r"vector 0 Synchronous \(current EL, SP_EL0\), EC 0x0+25 Data Abort \(same EL\).*\n"
                             r"    the address is the kernel stack's guard page: kernel stack overflow",
                      function="fault_stack_overflow_depth", cr2=None),
    }
    PC, SP = "PC", "SP"
    REGS = ("x0 ", "x15", "x30", "SPSR", "SCTLR", "TCR", "TTBR0", "FAR")
else:
    CASES = {
        "pf": dict(vector=r"vector 14 #PF Page Fault, error code 0x0+2 \(not present, write, kernel\)",
                   function="arch_fault_null_write", cr2="0x0000000000000000"),
        "stack": dict(vector=r"vector 8 #DF Double Fault", function="fault_stack_overflow_depth", cr2=None),
    }
    PC, SP = "RIP", "RSP"
    REGS = ("RAX", "RBX", "R15", "CR0", "CR3", "CR4", "RFLAGS")


@pytest.mark.parametrize("kind", sorted(CASES))
def test_fault_diagnosis(kind):
    case = CASES[kind]
    app = Appliance("fault_" + kind)
    try:
        app.boot()
        app.send(f"fault {kind}\r")
        text, _ = app.wait_for(r"\*\*\* exiting QEMU \(test mode\)", timeout=60)
        assert re.search(case["vector"], text), text
        rip = re.search(PC + r"=0x([0-9a-f]+) \(image\+0x([0-9a-f]+)\)", text)
        assert rip, text
        assert symbolize([int(rip.group(2), 16)])[0] == case["function"], text
        if case["cr2"]:
            assert "CR2=" + case["cr2"] in text
        for reg in REGS:
            assert reg + "=" in text or reg + " =" in text, reg
        frames = [int(x, 16) for x in re.findall(r"#\d+ 0x[0-9a-f]+ \(image\+0x([0-9a-f]+)\)", text)]
        assert frames, "no backtrace frames:\n" + text
        names = symbolize(frames)
        if kind == "stack":
            # a stack overflow's chain is the recursion itself, as deep as the walk goes
            assert len(names) >= 8 and set(names) == {case["function"]}, names
        else:
            # arch_fault_null_write is a frameless leaf: the frame chain starts at its caller's
            # caller; the stack scan still finds the caller itself. The walk ends in kmain's frame
            # (the last address's inline chain ends in kmain: the image inlines the loop into it).
            chains = symbolize(frames, chain=True)
            assert "console_run_line" in names and chains[-1][-1] == "kmain", chains
            scan = re.search(r"stack scan \(image addresses above " + SP + r"\):([^\n]*)", text).group(1)
            scanned = symbolize([int(x, 16) for x in re.findall(r"\+0x([0-9a-f]+)", scan)])
            assert "fault_command" in scanned, scanned
        assert app.exit_status() == 0xFF
    finally:
        app.close()
