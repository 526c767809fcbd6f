#!/usr/bin/python3
"""tools/bench/odp.py - `make bench BENCH=odp`: on-demand paging of rxe0 over NVMe (issue 16).

Two labs booted together, each on one uncaptured link: (a) tests/lab/odp_tests.py's setup: the
appliance with a 4 MiB ODP region over nvme2 (from byte 32 MiB) and a resident pool of 256 frames
(1 MiB), and a Linux 6.1 client guest with soft RoCE (rxe) running tools/lab/odp_client.c; (b) the
peer: the same Linux client guest and a second Linux 6.1 guest whose rxe serves it through
`odp_client serve`: an ordinary pinned 4 MiB MR in its DRAM behind the same rdma_cm REP. The client's random mode: one 4 KiB RDMA READ or WRITE in flight
(half each, random 4 KiB-aligned pages, every READ byte checked). Both regions are first written
whole; then two working sets, each against the appliance and then the Linux peer:
  fits:   the first 512 KiB (128 pages, half the pool), made resident first (`rdma odp prefetch`,
          then a random pass): hits, no faults expected;
  4x:     the whole 4 MiB (1024 pages, 4x the pool): most accesses fault.
For each: operations per second and MB/s of payload (appliance / Linux), faults and RNR NAKs per
operation, the fault service time p50/p99 (the appliance's histogram, this phase's share), and
the bytes moved to and from the drive per payload byte. Writes docs/bench-odp.md.
"""
import contextlib
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402  (sets up the lab's import path)
import topo  # noqa: E402
from lab import Lab  # noqa: E402

sys.path.insert(0, os.path.join(bl.TOP, "tests", "lab"))
from hostile_tests import put_binary  # noqa: E402
from odp_tests import build_client, client, odp_counters, odp_lab, odp_ready  # noqa: E402

REGION, FRAMES = 4 << 20, 256
CFG = f"panic = exit\nrdma.odp.region = nvme2n1 {REGION >> 20}M 32M\nrdma.odp.frames = {FRAMES}\n"
OPS_FIT = int(os.environ.get("BENCH_ODP_OPS_FIT", "2000"))
OPS_BIG = int(os.environ.get("BENCH_ODP_OPS_BIG", "2000"))
PHASES = [("fits (512 KiB, pool 1 MiB)", 512 << 10, OPS_FIT, True), ("4x (4 MiB, pool 1 MiB)", REGION, OPS_BIG, False)]
PEER_IP = topo.TARGET_IP


def quantile(hist, q):
    """The bucket bound (us) under which q/1000 of hist's samples lie; 0 for none."""
    total = sum(hist.values())
    acc = 0
    for bound in sorted(hist):
        acc += hist[bound]
        if acc * 1000 >= total * q:
            return bound
    return 0


def payload_of(out):
    m = re.search(r"ODP-CLIENT-OK \S+ (\d+) B in", out)
    if not m:
        raise bl.BenchError(f"odp_client printed no summary:\n{out[-800:]}")
    return int(m.group(1))


def run_labs():
    with contextlib.ExitStack() as stack:
        lab = stack.enter_context(Lab("bench-odp", capture=False))
        plab = stack.enter_context(Lab("bench-odp-linux", capture=False))
        dev, linux, binary = odp_lab(lab, CFG)
        plink = plab.link("link0")
        plinux = plab.guest("initiator", ip=f"{topo.INITIATOR_IP}/24", links=[plink])
        peer = plab.guest("server", ip=f"{PEER_IP}/24", links=[plink])
        lab.start()
        plab.start()
        app = odp_ready(dev, [linux], binary, REGION >> 20)
        for g in (plinux, peer):
            topo.rxe_up(g)
            put_binary(g, build_client(plab.rundir), "/tmp/odp_client")
        peer.run(f"(timeout 3000 /tmp/odp_client {PEER_IP} 7180 serve {REGION} >/tmp/s.log 2>&1 &) ; "
                 "for i in $(seq 50); do grep -q serving /tmp/s.log && exit 0; sleep 0.1; done; cat /tmp/s.log; exit 1",
                 timeout=30, check=True)
        fill_ms, _ = client(linux, app, "write", timeout=300)
        client(plinux, app, "write", timeout=300, addr=PEER_IP)
        rows = []
        for name, wset, ops, warm in PHASES:
            env = f"ODP_SET={wset} ODP_OPS={ops}"
            if warm:
                app.cmd(f"rdma odp prefetch 0 {wset}")
                client(linux, app, "random", timeout=600, env=f"ODP_SET={wset} ODP_OPS={ops // 4}")
            before, load = odp_counters(app)[0], bl.loadavg()
            ms, out = client(linux, app, "random", timeout=900, env=env)
            after = odp_counters(app)[0]
            payload = payload_of(out)
            peer_ms, _ = client(plinux, app, "random", timeout=600, env=env, addr=PEER_IP)
            hist = {b: n - before["hist"].get(b, 0) for b, n in after["hist"].items()}
            drive = (after["bytes_in"] - before["bytes_in"]) + (after["bytes_out"] - before["bytes_out"])
            rows.append(dict(name=name, ops=ops, ms=max(ms, 1), peer_ms=max(peer_ms, 1), payload=payload,
                             faults=(after["faults"] - before["faults"]) / ops, rnr=(after["rnr"] - before["rnr"]) / ops,
                             p50=quantile(hist, 500), p99=quantile(hist, 990), drive=drive / payload, load=load))
            print(f"bench-odp: {name}: appliance {ops * 1000 / rows[-1]['ms']:.0f} ops/s, Linux rxe "
                  f"{ops * 1000 / rows[-1]['peer_ms']:.0f} ops/s", flush=True)
        return fill_ms, rows


def main():
    bl.lab_setup()
    t_all, load0 = time.monotonic(), bl.loadavg()
    fill_ms, rows = run_labs()
    text = [
        f"# ODP benchmark: RDMA to an NVMe-backed region vs Linux rxe to pinned DRAM ({bl.now_utc()})",
        "",
        f"Machine: {bl.machine()}; appliance and scripts at {bl.revision()}. Host load average (1/5/15 min) "
        f"before / after: {load0} / {bl.loadavg()}; other helpers' QEMU runs share the 2 cores: compare within "
        "one run.",
        "",
        "`make bench BENCH=odp` (tools/bench/odp.py): the appliance (QEMU 7.2 TCG, no KVM) serves a 4 MiB ODP "
        f"region over nvme2 with a 1 MiB resident pool ({FRAMES} frames of 4 KiB); a Linux 6.1 guest's rdma_rxe "
        "runs `tools/lab/odp_client.c random`: one 4 KiB RDMA READ or WRITE in flight (half each, random "
        "aligned pages, every READ byte checked). The peer (a second lab booted alongside) is the same Linux "
        "client guest against a Linux 6.1 server guest whose rdma_rxe serves it with `odp_client serve`: an ordinary pinned 4 MiB MR in its DRAM "
        "behind the same rdma_cm REP (no paging at all). "
        f"Filling the appliance's region first (1024 sequential 4 KiB WRITEs, most of them faulting) took {fill_ms} ms.",
        "",
        "| working set | ops | appliance ops/s | Linux rxe ops/s | appliance / Linux | appliance payload MB/s "
        "| faults/op | RNR NAKs/op | fault service p50 / p99 (us, bucket bound) | drive bytes per payload byte "
        "| load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        a, b = r["ops"] * 1000 / r["ms"], r["ops"] * 1000 / r["peer_ms"]
        text.append(f"| {r['name']} | {r['ops']} | {a:.0f} | {b:.0f} | {bl.ratio(a, b)} "
                    f"| {r['payload'] / 1e3 / r['ms']:.2f} | {r['faults']:.2f} | {r['rnr']:.2f} "
                    f"| {r['p50']} / {r['p99']} | {r['drive']:.2f} | {r['load']} |")
    text += [
        "",
        "Fault service time is the appliance's own histogram (fault to page resident, power-of-two buckets; "
        "this phase's share). A fault costs the page-in plus the requester's RNR timer (Linux rxe: the RNR "
        "NAK's timer field, at least one jiffy): the working set that fits runs at the speed of the RoCE "
        "round trip, the one 4x larger at the speed of RNR retries. Drive bytes per payload byte: a fault "
        "reads its 4 KiB page; evicting a dirty page (half the operations are WRITEs) writes 4 KiB more. "
        "Figures vary by tens of percent with the shared "
        "machine's load.",
        "",
        f"Bench wall time {time.monotonic() - t_all:.0f} s.",
        "",
    ]
    bl.write_doc("bench-odp.md", "\n".join(text))


if __name__ == "__main__":
    sys.exit(main())
