#!/usr/bin/python3
"""tools/bench/nvmet_rdma.py - `make bench BENCH=nvmet_rdma` (and the NVMe/RDMA section of
`make bench BENCH=nvmet`): the appliance's NVMe/RDMA target against Linux nvmet-rdma, and against
its own NVMe/TCP (issue 17).

One run, three labs booted together on uncaptured links, the same Linux 6.1 initiator guest (1 vCPU,
e1000e, rdma_rxe for RDMA) in each:
  (a) the appliance in its default (CMB) mode over NVMe/RDMA on its own software RoCE;
  (b) the same appliance configuration over NVMe/TCP;
  (c) a Linux 6.1 target guest exporting the same drive (64 MiB, 64 MiB CMB) through nvmet-rdma on
      rdma_rxe over the same e1000e.
The fio jobs, their order and the measurements are tools/bench/nvmet.py's (JOBS, fio, figures and its
Target classes): IOPS, MB/s, latency mean and p99, the target QEMU's host CPU per I/O, host-DRAM bytes
per payload byte (the appliance: `stats dma`; Linux: a lower bound, its NIC's frames plus the drive's
DMA). Each job runs on the three targets one right after the other (the first rotating), so all see
the same host load. section() returns the markdown section; run alone, main() puts it into
docs/bench-nvmet.md in place of the previous one (after the NVMe/TCP part that nvmet.py writes).
"""
import contextlib
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402  (sets up the lab's import path)
import nvmet as nb  # noqa: E402  (the NVMe/TCP bench: its jobs, fio runner and targets)
import topo  # noqa: E402
from lab import Lab  # noqa: E402

HEADING = "## NVMe/RDMA: the appliance vs Linux nvmet-rdma, and vs its own NVMe/TCP"
NVMET_JSON = """{
  "hosts": [],
  "ports": [ { "portid": 1, "addr": { "trtype": "rdma", "adrfam": "ipv4", "traddr": "%(a)s", "trsvcid": "%(p)d" },
               "subsystems": [ "%(n)s" ] },
             { "portid": 2, "addr": { "trtype": "tcp", "adrfam": "ipv4", "traddr": "%(a)s", "trsvcid": "%(p)d" },
               "subsystems": [ "%(n)s" ] } ],
  "subsystems": [ { "nqn": "%(n)s", "attr": { "allow_any_host": "1", "serial": "p2pbench0002", "model": "p2pstore" },
                    "namespaces": [ { "nsid": 1, "enable": 1, "device": { "path": "/dev/nvme0n1" } } ] } ]
}
""" % {"a": topo.APPLIANCE_IP, "p": topo.NVME_PORT, "n": nb.APP_NQN}
KEYS = ("rdma", "tcp", "linux")
IN_CAPSULE_NOTE = (
    "4 KiB writes come in the capsule (in-capsule data, IOCCSZ 4 KiB): the RC responder copies them into "
    "the capsule's receive buffer in host DRAM and the drive reads them there, so the appliance's RDMA 4 "
    "KiB random write moves about 2 host-DRAM bytes per payload byte (as Linux does for every job); 128 "
    "KiB writes (RDMA READ into the CMB) and reads (RDMA WRITE from the CMB) keep the payload out of host"
    " DRAM. Linux could not use the drive's CMB (its dmesg below) and moves every payload through DRAM."
)


class Appliance(nb.ApplianceTarget):
    """Lab (a) or (b): the appliance with an RDMA and a TCP port, the initiator on one of them."""

    def __init__(self, lab, transport):  # noqa: super().__init__ is the NVMe/TCP modes' setup
        self.lab, self.mode, self.transport = lab, transport, transport
        self.title = f"appliance NVMe/{transport.upper()}"
        esp = bl.appliance_esp(lab.rundir, "panic = exit\n", NVMET_JSON)
        self.dev, self.init_node = topo.appliance_topology(lab, esp, extra=bl.NAMED_THREADS)

    def ready(self):
        self.dev.expect(r"nvmet: target started from nvmet\.json: 2 ports, 1 subsystems", timeout=180)
        self.dev.expect(re.escape(bl.PROMPT), timeout=60)
        self.app = bl.Console(self.dev)
        if self.transport == "rdma":
            topo.rxe_up(self.init_node)
            for _ in range(100):  # the transport starts once rxe0 is up (logged)
                if "rdma:" in self.app.cmd("stats nvmet_rdma"):
                    break
                time.sleep(0.1)
        blk = topo.nvme_connect(self.init_node, self.transport, addr=topo.APPLIANCE_IP, nqn=nb.APP_NQN)
        self._setup(self.init_node, self.dev, blk)
        self.d0 = bl.dram_counters(self.app)

    def finish(self):
        self.dram_total = bl.dram_delta(bl.dram_counters(self.app), self.d0)
        text = self.app.cmd("stats nvmet_rdma" if self.transport == "rdma" else "stats nvmet_tcp", timeout=60)
        if self.transport == "rdma":  # how the RoCE packets went: zero-copy, retransmissions
            text += "\n" + self.app.cmd("stats rdma", timeout=60)
        self.notes = [ln.strip() for ln in text.splitlines()
                      if re.search(r"^(rdma p2p|rdma dram fallback|p2p|payload|dram fallback|tx zero-copy|rc:)",
                                   ln.strip())]
        self.initiator.run(f"nvme disconnect -n {nb.APP_NQN}", timeout=60)


class LinuxRdma(nb.LinuxTarget):
    """Lab (c): Linux nvmet-rdma on rdma_rxe in a target guest with the same drive and NIC."""
    title = "Linux nvmet-rdma"

    def ready(self):
        topo.rxe_up(self.target)
        topo.rxe_up(self.init_node)
        topo.nvmet_export(self.target, "rdma")
        self._setup(self.init_node, self.target, topo.nvme_connect(self.init_node, "rdma"))


def run_labs():
    """The three labs at once; each job on every target in turn. Returns {key: Target}."""
    with contextlib.ExitStack() as stack:
        labs = {k: stack.enter_context(Lab(f"bench-nvmet-rdma-{k}", capture=False)) for k in KEYS}
        targets = {"rdma": Appliance(labs["rdma"], "rdma"), "tcp": Appliance(labs["tcp"], "tcp"),
                   "linux": LinuxRdma(labs["linux"])}
        for lab in labs.values():
            lab.start()
        for t in targets.values():
            t.ready()
            t.measure_idle()
        for i, (name, rw, bs) in enumerate(nb.JOBS):
            for key in KEYS[i % 3:] + KEYS[:i % 3]:
                t = targets[key]
                if t.failed:
                    continue
                try:
                    t.job(name, rw, bs)
                except Exception as e:  # noqa: BLE001  (a hung target: the others go on)
                    t.failed = f"{name}: {str(e)[-300:]}"
                    print(f"bench-nvmet-rdma: {t.title} failed at {t.failed}", flush=True)
        for t in targets.values():
            t.notes, t.dram_total = [], None
            if not t.failed:
                try:
                    t.finish()
                except Exception as e:  # noqa: BLE001
                    t.failed = f"finish: {str(e)[-200:]}"
    return targets


def section():
    """Run the three labs; the markdown section (a list of lines)."""
    bl.lab_setup()
    t_all = time.monotonic()
    load0 = bl.loadavg()
    targets = run_labs()
    runs = {k: dict(title=t.title, jobs=t.jobs, idle=t.idle) for k, t in targets.items()}
    lines = [
        HEADING + f" ({bl.now_utc()})",
        "",
        f"Machine: {bl.machine()}; appliance and scripts at {bl.revision()}; host load "
        f"average before / after {load0} / {bl.loadavg()}. `make bench BENCH=nvmet_rdma` "
        "(tools/bench/nvmet_rdma.py, also run by BENCH=nvmet): the fio jobs and measurements of the NVMe/TCP "
        f"table above (iodepth {nb.QD}, {nb.SECS} s per job, jobs in this order on a fresh drive) from the same "
        "Linux 6.1 initiator guest, here over its rdma_rxe, against (a) the appliance over NVMe/RDMA on its own "
        "software RoCE (CMB mode: write data lands in the CMB by header split, read data is sent from the CMB), "
        "(b) the same appliance over NVMe/TCP, (c) Linux 6.1 nvmet-rdma on rdma_rxe in a target guest with the "
        "same drive and NIC. The three labs run at once, each job on the three targets one after the other.",
        "",
        "| job | target | IOPS | MB/s | lat mean us | lat p99 us | target CPU us/IO | of which vCPU | host-DRAM B/B |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, _, _ in nb.JOBS:
        lines += [nb.row(runs[k], name) for k in KEYS]
    lines += ["", "Ratios (IOPS: higher is better; latency and CPU per I/O: lower is better):", "",
              "| job | RDMA / Linux IOPS | lat mean | CPU/IO | host-DRAM B/B | RDMA / TCP IOPS | lat mean | CPU/IO "
              "| host-DRAM B/B |", "|---|---|---|---|---|---|---|---|---|"]
    for name, _, _ in nb.JOBS:
        f = {k: runs[k]["jobs"].get(name) for k in KEYS}
        cells = []
        for other in ("linux", "tcp"):
            a, o = f["rdma"], f[other]
            if not a or not o:
                cells += ["failed", "", "", ""]
                continue
            cells += [bl.ratio(a["iops"], o["iops"]), bl.ratio(a["lat_mean"], o["lat_mean"]),
                      bl.ratio(a["us_per_io"], o["us_per_io"]),
                      bl.ratio(a["dram_per_byte"] or 0, o["dram_per_byte"] or 0)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "%s" % IN_CAPSULE_NOTE]
    lines += ["", "Idle: the target's QEMU process used " + ", ".join(
        f"{runs[k]['idle'] * 100:.0f} % of a core ({runs[k]['title']})" for k in KEYS) + " with the initiator connected."]
    for k, t in targets.items():
        if t.failed:
            lines.append(f"{t.title} FAILED at {t.failed}; its later jobs were skipped.")
        if t.notes:
            lines.append(f"{t.title}: {'; '.join(t.notes)[:900]}.")
    lines += [f"Bench wall time {time.monotonic() - t_all:.0f} s.", ""]
    return lines


def main():
    """Run alone: replace the NVMe/RDMA section of docs/bench-nvmet.md (or append it)."""
    text = section()
    path = os.path.join(bl.TOP, "docs", "bench-nvmet.md")
    old = open(path).read() if os.path.exists(path) else ""
    keep = old.split(HEADING)[0].rstrip("\n")
    bl.write_doc("bench-nvmet.md", (keep + "\n\n" if keep else "") + "\n".join(text))


if __name__ == "__main__":
    main()
