#!/usr/bin/python3
"""tools/bench/odp.py - `make bench BENCH=odp`: on-demand paging of rxe0 over NVMe (issue 16).

One lab: the appliance with a 4 MiB ODP region over nvme2 (from byte 32 MiB) and a resident pool of
256 frames (1 MiB), and a Linux 6.1 guest with soft RoCE (rxe) running tools/lab/odp_client.c (one
4 KiB RDMA READ or WRITE in flight, half each, random 4 KiB-aligned pages; the client checks every
byte it READs). The region is first written whole; then two working sets:
  fits:   the first 512 KiB (128 pages, half the pool), warmed up first: hits, no faults expected;
  4x:     the whole 4 MiB (1024 pages, 4x the pool): most accesses fault.
For each: operations per second and MB/s of payload, faults and RNR NAKs per operation, the fault
service time p50/p99 (the appliance's histogram, this phase's share), and the bytes moved to and
from the drive per payload byte. Writes docs/bench-odp.md.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402  (sets up the lab's import path)
import topo  # noqa: E402
from lab import Lab  # noqa: E402

sys.path.insert(0, os.path.join(bl.TOP, "tests", "lab"))
from hostile_tests import put_binary  # noqa: E402

CFG = "panic = exit\nrdma.odp.region = nvme2n1 4M 32M\nrdma.odp.frames = 256\n"
SEED = 0x41
OPS_FIT = int(os.environ.get("BENCH_ODP_OPS_FIT", "1000"))
OPS_BIG = int(os.environ.get("BENCH_ODP_OPS_BIG", "400"))
PHASES = [("fits (512 KiB, pool 1 MiB)", 512 << 10, OPS_FIT, True), ("4x (4 MiB, pool 1 MiB)", 4 << 20, OPS_BIG, False)]


def odp_state(con):
    out = con.cmd("rdma odp")
    c = {}
    for name, rx in (("faults", r"faults (\d+)"), ("rnr", r"rnr-naks (\d+)"), ("bytes_in", r"page-ins \d+ \((\d+) B\)"),
                     ("bytes_out", r"page-outs \d+ \((\d+) B\)")):
        m = re.search(rx, out)
        if not m:
            raise bl.BenchError(f"`rdma odp` has no {name}:\n{out}")
        c[name] = int(m.group(1))
    m = re.search(r"histogram \(us\):([^\n]*)", out)
    c["hist"] = {int(b): int(n) for b, n in re.findall(r"<(\d+):(\d+)", m.group(1) if m else "")}
    return c


def quantile(hist, q):
    total = sum(hist.values())
    if not total:
        return 0
    acc = 0
    for bound in sorted(hist):
        acc += hist[bound]
        if acc * 1000 >= total * q:
            return bound
    return max(hist)


def client(linux, mode, env="", timeout=600):
    r = linux.run(f"{env} timeout {timeout - 10} /tmp/odp_client {topo.APPLIANCE_IP} 7180 {mode} {SEED} 2>&1; "
                  f"echo rc=$?", timeout=timeout)
    m = re.search(r"ODP-CLIENT-OK \S+ (\d+) B in (\d+) ms", r.out)
    if not (m and "rc=0" in r.out):
        raise bl.BenchError(f"odp_client {mode} failed:\n{r.out[-1500:]}")
    return int(m.group(1)), int(m.group(2))


def main():
    bl.lab_setup()
    lab = Lab("bench-odp", capture=False)
    try:
        esp = bl.appliance_esp(lab.rundir, CFG)
        topo.pin_static_address(esp)
        binary = os.path.join(lab.rundir, "odp_client")
        subprocess.run(["gcc", "-O2", "-o", binary, os.path.join(bl.TOP, "tools", "lab", "odp_client.c"),
                        "-libverbs", "-lrdmacm"], check=True, timeout=120)
        link = lab.link("link0")
        linux = lab.guest("initiator", ip=f"{topo.INITIATOR_IP}/24", links=[link])
        dev = lab.appliance(esp, link, run_args=["--disks", os.path.join(lab.rundir, "disks")])
        lab.start()
        dev.expect(re.escape(bl.PROMPT), timeout=120)
        con = bl.Console(dev)
        topo.rxe_up(linux)
        put_binary(linux, binary, "/tmp/odp_client")
        linux.run(f"ping -c 3 -W 2 {topo.APPLIANCE_IP}", timeout=30)  # the neighbour entry rdma_cm resolves through
        _, fill_ms = client(linux, "write")
        rows = []
        for name, wset, ops, warm in PHASES:
            if warm:
                client(linux, "random", f"ODP_SET={wset} ODP_OPS={ops // 2}")
            before, load = odp_state(con), bl.loadavg()
            payload, ms = client(linux, "random", f"ODP_SET={wset} ODP_OPS={ops}")
            after = odp_state(con)
            hist = {b: after["hist"].get(b, 0) - before["hist"].get(b, 0) for b in after["hist"]}
            drive = (after["bytes_in"] - before["bytes_in"]) + (after["bytes_out"] - before["bytes_out"])
            rows.append((name, ops, ms, payload, (after["faults"] - before["faults"]) / ops,
                         (after["rnr"] - before["rnr"]) / ops, quantile(hist, 500), quantile(hist, 990),
                         drive / payload if payload else 0, load))
        text = [f"# ODP benchmark (`make bench BENCH=odp`)\n",
                f"Measured {bl.now_utc()} on {bl.machine()}; revision {bl.revision()}.\n",
                "The appliance (QEMU 7.2 TCG) serves a 4 MiB ODP region over nvme2 with a 1 MiB resident pool "
                "(256 frames); a Linux 6.1 guest's soft RoCE runs `tools/lab/odp_client.c` random: one 4 KiB RDMA "
                "READ or WRITE in flight (half each, random aligned pages, every READ byte checked). "
                f"Filling the region first (1024 sequential 4 KiB WRITEs) took {fill_ms} ms.\n",
                "| working set | ops | ops/s | payload MB/s | faults/op | RNR NAKs/op | fault service p50 / p99 (us, "
                "bucket bound) | drive bytes per payload byte | load |",
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for name, ops, ms, payload, fpo, rpo, p50, p99, dpp, load in rows:
            text.append(f"| {name} | {ops} | {ops * 1000 / ms:.0f} | {payload / 1e3 / ms:.2f} | {fpo:.2f} | {rpo:.2f} "
                        f"| {p50} / {p99} | {dpp:.2f} | {load} |")
        text.append("\nA fault costs the page-in plus the requester's RNR timer (Linux: at least one jiffy, 4 ms): "
                    "the working set that fits runs at the speed of the RoCE round trip, the one 4x larger at the "
                    "speed of RNR retries; a dirty page evicted costs a write too (drive bytes per payload byte "
                    "above 1). Figures vary by tens of percent with the shared machine's load.\n")
        bl.write_doc("bench-odp.md", "\n".join(text))
    finally:
        lab.close()


if __name__ == "__main__":
    sys.exit(main())
