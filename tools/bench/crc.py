#!/usr/bin/python3
"""tools/bench/crc.py - `make bench BENCH=crc`: GB/s of the digest engines on this machine's real CPU
(hosted, not under QEMU): CRC32C (NVMe/TCP digests) and CRC32 (RoCE ICRC) of lib/crc32.c (slicing-by-8,
and its SSE4.2 instruction path for CRC32C) and of Intel ISA-L (Debian's libisal), each checked against
the others first (tests/bench/crc_speed.c). Writes docs/bench-crc.md. Under QEMU TCG the ranking differs
(the instruction is an emulated helper): the image's boot-time calibration (crc32c_calibrate) chooses there.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402

BIN = os.path.join(bl.TOP, "build", "bench", "crc_speed")
MIB = int(os.environ.get("BENCH_CRC_MIB", "256"))


def main():
    r = subprocess.run([BIN, str(MIB)], capture_output=True, text=True, timeout=600)
    if r.returncode:
        sys.stderr.write(r.stdout + r.stderr)
        return 1
    text = f"""# Digest engines on the host CPU ({bl.now_utc()})

Machine: {bl.machine().split(", QEMU")[0]}; code at {bl.revision()}; load average {bl.loadavg()}.

`make bench BENCH=crc` (tools/bench/crc.py over tests/bench/crc_speed.c): {MIB} MiB hashed per engine and buffer
size, one core, after checking that every engine gives the same CRC as the others (continued CRCs included).
ISA-L is Debian's libisal (2.30), linked as its shared library: Debian's libisal-dev ships no static libisal.a,
so putting ISA-L into the image means building it from Debian's isa-l source package (as tools/setup does for
newlib), and its `crc32_ieee` (a non-reflected CRC32) has the name of lib/crc32.c's reflected one.

{r.stdout.strip()}

Under QEMU TCG the order is different: docs/platform.md measured the SSE4.2 instruction ~6x slower than slicing-by-8
there (an emulated helper per instruction); the image's boot-time calibration (`crc32c_calibrate`) times the
engines it has and keeps the faster.
"""
    bl.write_doc("bench-crc.md", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
