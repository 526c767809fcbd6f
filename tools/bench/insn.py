#!/usr/bin/env python3
"""tools/bench/insn.py: instructions per I/O of the data path, counted by callgrind (issue 18).

Runs build/bench/insn_datapath (tests/bench/insn_datapath.c: the real net/, NVMe/TCP target and NVMe
host driver core over the fake NIC and the fake drive) under Debian's valgrind --tool=callgrind. The
program dumps one callgrind profile per job (4 KiB and 128 KiB writes and reads, 4 KiB with data
digests, 4 KiB and 128 KiB reads with their data in the drive's CMB, 4 KiB writes and reads at queue
depth 16). From each profile this script keeps the appliance's own instructions: every instruction
executed in a function of the appliance's sources (any file of the binary outside tests/), plus
what the C library functions they call directly (memcpy, memset, ...) execute. The host's TCP and
NVMe/TCP (tests/unit/...), the fake NIC and the fake drive (the hardware's work) and the harness
are left out. The count is deterministic: the same build gives the same figure on any machine.

  insn.py              the full run (N=64 I/Os per job): table + top functions into docs/bench-insn.md
  insn.py --check      the regression guard of `make test`: N=16, each job's figure within its bound
                       (BOUNDS below); prints "insn: P passed, F failed"
  insn.py --n N --no-doc   another N, print only
"""
import argparse
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.join(os.environ.get("BUILD", os.path.join(TOP, "build")), "bench", "insn_datapath")

# Instructions per I/O the appliance's code may spend on each job before `make test` fails: the
# figures of docs/bench-insn.md plus ~8 % headroom (so a real regression of a few hundred
# instructions per 4 KiB I/O trips it, a reformatting does not). Lower them when the code gets faster.
BOUNDS = {
    "write-4k": 3300,
    "read-4k": 3200,
    "write-128k": 30400,
    "read-128k": 20300,
    "write-4k-ddgst": 37000,
    "read-4k-ddgst": 36800,
    "read-4k-cmb": 3200,
    "read-128k-cmb": 17600,
    "write-4k-qd16": 3100,
    "read-4k-qd16": 2700,
}
AIM_4K = 3000  # the aim per 4 KiB I/O, digests excluded
TOP_N = 15

NAME_RE = re.compile(r"^\((\d+)\)(?: (.*))?$")


class Profile:
    """One callgrind dump: self cost per function, calls between functions with their inclusive
    cost, and the object and file each function lives in."""

    def __init__(self, path, names):
        self.job = None
        self.self_cost = collections.Counter()        # fn -> Ir
        self.calls = collections.Counter()            # (caller fn, callee fn) -> inclusive Ir
        self.where = {}                                # fn -> (object, file)
        self.names = names  # callgrind compresses names across the dumps of one run: shared, in order
        self._parse(path)

    def _name(self, kind, text):
        m = NAME_RE.match(text)
        if not m:
            return text
        ident, name = m.group(1), m.group(2)
        table = self.names[kind]
        if name is not None:
            table[ident] = name
        return table.get(ident, "?")

    def _parse(self, path):
        ob = fl = fn = None
        cob = cfn = None
        pending_call = False
        with open(path, errors="replace") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line or line.startswith("#"):
                    continue
                c = line[0]
                if c.isdigit() or c in "+-*":
                    parts = line.split()
                    cost = int(parts[1]) if len(parts) > 1 else 0
                    if pending_call:  # the inclusive cost of the call just named
                        self.calls[(fn, cfn)] += cost
                        self.where.setdefault(cfn, (cob, None))
                        pending_call = False
                        cob = ob  # cob= names the next call's object only
                    else:
                        self.self_cost[fn] += cost
                    continue
                if line.startswith("desc: Trigger: Client Request: job "):
                    self.job = line.split("job ", 1)[1].split()
                    continue
                key, _, val = line.partition("=")
                if key == "ob":
                    ob = cob = self._name("ob", val)
                elif key == "fl":
                    fl = self._name("fl", val)
                elif key in ("fi", "fe"):
                    self._name("fl", val)
                elif key == "fn":
                    fn = self._name("fn", val)
                    cob = ob
                    where = self.where.get(fn)
                    if where is None or where[1] is None:
                        self.where[fn] = (ob, fl)
                elif key == "cob":
                    cob = self._name("ob", val)
                elif key in ("cfi", "cfl"):
                    self._name("fl", val)
                elif key == "cfn":
                    cfn = self._name("fn", val)
                elif key == "calls":
                    pending_call = True

    def kind(self, fn, binary):
        """'ours' (the appliance's sources), 'test' (host, fakes, harness) or 'lib' (C library)."""
        ob, fl = self.where.get(fn, (None, None))
        if ob != binary:
            return "lib"
        fl = fl or ""
        if fl.startswith(TOP + "/"):
            fl = fl[len(TOP) + 1:]
        return "test" if fl.startswith("tests/") or fl in ("", "?", "???") else "ours"

    def ours(self, binary):
        """The appliance's instructions: its functions' own, plus the library calls they make.
        Returns (total, per-function Counter, per-library-function Counter)."""
        per_fn = collections.Counter()
        per_lib = collections.Counter()
        for fn, cost in self.self_cost.items():
            if self.kind(fn, binary) == "ours":
                per_fn[fn] += cost
        for (caller, callee), cost in self.calls.items():
            if self.kind(caller, binary) == "ours" and self.kind(callee, binary) == "lib":
                per_lib[callee] += cost
        return sum(per_fn.values()) + sum(per_lib.values()), per_fn, per_lib


def run(n):
    """Run the program under callgrind; a list of (job, n, Profile, all instructions)."""
    if not os.path.exists(BIN):
        sys.exit(f"insn: {BIN} missing (make {os.path.relpath(BIN, TOP)})")
    with tempfile.TemporaryDirectory(prefix="insn.") as tmp:
        out = os.path.join(tmp, "cg.out")
        r = subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--callgrind-out-file={out}",
                            BIN, str(n)], capture_output=True, text=True, timeout=600)
        if r.returncode:
            sys.stderr.write(r.stdout + r.stderr)
            sys.exit(f"insn: {BIN} failed under callgrind (exit {r.returncode})")
        shape = {}  # job -> (passes, frames in, frames out) of its measured I/Os
        for m in re.finditer(r"^job (\S+): \d+ I/Os, (\d+) poll-loop passes, (\d+) frames in, (\d+) frames out$",
                             r.stdout, re.M):
            shape[m.group(1)] = tuple(int(x) for x in m.groups()[1:])
        results = []
        names = {"fn": {}, "fl": {}, "ob": {}}
        for path in sorted(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1])):
            p = Profile(path, names)
            if not p.job:
                continue
            results.append((p.job[0], int(p.job[1]), p, sum(p.self_cost.values()), shape.get(p.job[0], (0, 0, 0))))
        return results


def short(fn):
    return fn.split("@", 1)[0] if fn else "?"


def folder(p, fn, binary):
    """The source folder of one of the appliance's functions (net/tcp, drivers/nvme/target, ...)."""
    fl = p.where.get(fn, (None, ""))[1] or ""
    if fl.startswith(TOP + "/"):
        fl = fl[len(TOP) + 1:]
    return os.path.dirname(fl) or "?"


def report(results, n):
    """The table and the top functions, as markdown; and {job: instructions per I/O}."""
    per_io = {}
    lines = ["| job | I/Os | appliance instructions per I/O | of which C library | poll-loop passes per I/O | "
             "frames in / out per I/O | everything per I/O (host, fakes too) |",
             "|---|---|---|---|---|---|---|"]
    tops = []
    folders = collections.defaultdict(collections.Counter)
    for job, count, p, everything, (passes, fin, fout) in results:
        total, per_fn, per_lib = p.ours(BIN)
        per_io[job] = total / count
        lines.append(f"| {job} | {count} | {total / count:,.0f} | {sum(per_lib.values()) / count:,.0f} | "
                     f"{passes / count:.1f} | {fin / count:.1f} / {fout / count:.1f} | {everything / count:,.0f} |")
        for fn, c in per_fn.items():
            folders[job][folder(p, fn, BIN)] += c
        folders[job]["C library"] += sum(per_lib.values())
        both = collections.Counter()
        for fn, c in per_fn.items():
            both[short(fn)] += c
        for fn, c in per_lib.items():
            both[short(fn) + " (libc)"] += c
        t = [f"**{job}** ({total / count:,.0f} per I/O):", "", "| function | instructions per I/O | share |", "|---|---|---|"]
        for fn, c in both.most_common(TOP_N):
            t.append(f"| `{fn}` | {c / count:,.0f} | {100 * c / total:.1f} % |")
        tops.append("\n".join(t))
    jobs = [r[0] for r in results]
    names = sorted({f for j in jobs for f in folders[j]}, key=lambda f: -sum(folders[j][f] for j in jobs))
    count = {r[0]: r[1] for r in results}
    lines += ["", "By source folder (instructions per I/O):", "",
              "| folder | " + " | ".join(jobs) + " |", "|---|" + "---|" * len(jobs)]
    for f in names:
        lines.append(f"| {f} | " + " | ".join(f"{folders[j][f] / count[j]:,.0f}" for j in jobs) + " |")
    return "\n".join(lines), "\n\n".join(tops), per_io


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="regression guard: bounds, no doc")
    ap.add_argument("--n", type=int, default=None, help="I/Os per job (64; 16 with --check)")
    ap.add_argument("--no-doc", action="store_true", help="print only, do not write docs/bench-insn.md")
    a = ap.parse_args()
    n = a.n or (16 if a.check else 64)
    results = run(n)
    table, tops, per_io = report(results, n)
    if a.check:
        passed = failed = 0
        for job, bound in BOUNDS.items():
            got = per_io.get(job)
            if got is None or got > bound:
                failed += 1
                print(f"FAIL insn {job}: {'not run' if got is None else f'{got:,.0f}'} instructions per I/O, bound {bound:,}")
            else:
                passed += 1
                print(f"PASS insn {job}: {got:,.0f} instructions per I/O (bound {bound:,})")
        print(f"insn: {passed} passed, {failed} failed")
        return 1 if failed else 0
    sys.path.insert(0, HERE)
    import benchlib
    aim = per_io.get("write-4k", 0), per_io.get("read-4k", 0)
    bounds = ", ".join(f"{job} {b:,}" for job, b in BOUNDS.items())
    text = f"""# Instructions per I/O on the data path ({benchlib.now_utc()})

Machine: {benchlib.machine().split(", QEMU")[0]}; valgrind {subprocess.run(['valgrind', '--version'], capture_output=True, text=True).stdout.strip()}; code at {benchlib.revision()}.

`make bench BENCH=insn` (tools/bench/insn.py over tests/bench/insn_datapath.c): the executable data path
(docs/architecture.md) built as the image is (gcc -O2, no sanitizers) runs each job on a fresh connection, {n} I/Os
after 4 of warm-up, under callgrind. The fake NIC offers the e1000e's offloads (header split with the payload in
"device memory", receive and transmit checksums, transmit gather from device memory), so TCP checksums no byte in
software; write data stays in the NIC's buffers; read data goes through DRAM, except in the `-cmb` jobs, where the
drive (its CMB enabled as QEMU's nvme offers it, NVMe 1.4 CMBMSC, I/O submission queues in it) writes it into its
CMB and the NIC gathers it from there, as the CMB mode serves reads (the harness hands out the CMB's upper half
in 4 KiB pieces: the image's own P2P allocator does that on the appliance and is not counted here). The fake
drive runs the commands rung in a poll-loop pass at the start of the next one, as QEMU's nvme and a real drive
answer microseconds after the doorbell, long after the pass that rang it. The `-qd16`
jobs keep 16 commands outstanding against a host that acknowledges as Linux's does (every second full segment,
else after its delayed-ACK time): writes as rounds of 16 in-capsule CapsuleCmds sent back to back, reads as a
stream that sends a new Read as each completes (the judge's queue depth; the other jobs run one I/O at a time). Counted: every instruction executed in the appliance's own functions (any source outside tests/: net/,
net/tcp/, drivers/nic/netdev.c, drivers/nvme/, drivers/nvme/target/, mm/, lib/) plus what the C library routines
they call directly execute (memcpy, memset, ...). Not counted: the host (its TCP and NVMe/TCP), the fake NIC and
the fake drive (the hardware's work on the appliance) and the harness. The count is deterministic: the same code
gives the same figures on any machine; `make test` runs the same with 16 I/Os per job against the bounds of
tools/bench/insn.py (`make insn-check`).

{table}

The issue's aim: <= {AIM_4K:,} instructions per 4 KiB I/O without digests; now {aim[0]:,.0f} per 4 KiB write and
{aim[1]:,.0f} per 4 KiB read.

The regression guard: `make test` (phase `insn`, `make insn-check`, ~3 s) runs the same jobs with 16 I/Os each
and fails when a job's figure exceeds its bound in tools/bench/insn.py ({bounds}): the figures above plus ~8 %, so
a regression of a few hundred instructions per 4 KiB I/O trips it. Whoever makes the path faster lowers the bounds
in the same commit.

## Top functions (self instructions per I/O; "(libc)": C library routines called from the appliance's code)

{tops}
"""
    if a.no_doc:
        print(text)
    else:
        benchlib.write_doc("bench-insn.md", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
