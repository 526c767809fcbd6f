#!/usr/bin/python3
"""tools/bench/nvmet.py - `make bench BENCH=nvmet`: the appliance's NVMe/TCP target against Linux
nvmet-tcp (issue 8).

One run, three labs booted together, each on an uncaptured link (captures cost ~15 %), the same
Linux 6.1 initiator guest (1 vCPU, e1000e, TSO off, nvme-tcp with one I/O queue) in each:
  (a) the appliance, CMB mode (default config: e1000e header split into nvme0's CMB, nvmet.p2p = auto);
  (b) the appliance, DRAM fallback (`nic.rx_mode = plain`, `nvmet.p2p = off`: every payload through
      host DRAM);
  (c) a Linux 6.1 target guest exporting its drive through nvmet-tcp (configfs).
Same emulated hardware on the storage side: a QEMU `nvme` drive of 64 MiB with a 64 MiB CMB (the
appliance exports nvme0, which is that; the Linux target's drive gets the same size and CMB), an
e1000e on a dgram link, one vCPU, 1 GiB. Differences that remain are stated in the doc: the appliance
machine's PCIe switch and two more drives, and its `-cpu max` (Linux guests: QEMU's default CPU).

Each fio job runs on the three targets one right after the other (which goes first rotates from job to
job), so all see the same host load. Each target gets the same fio jobs on a fresh drive, in this order (the first fills the drive, so the
reads read written data): 128 KiB sequential write, 128 KiB sequential read, 4 KiB random write, 4 KiB
random read; libaio, direct, iodepth BENCH_FIO_QD (default 16), BENCH_FIO_SECS seconds each (default
15), fixed random seed, JSON output parsed here. Then a queue-depth sweep (4 KiB random read at iodepth
1, 4 and 64 beside the table's 16) and a 4-job run (fio numjobs=4, iodepth 16 each, group reporting:
64 I/Os in flight from four submitters over the I/O queues nvme-tcp made, one per initiator vCPU; run
BENCH_NVMET_MULTI_RUNS times, default 3, the median shown); BENCH_NVMET_SWEEP=0 leaves both out. For each job: IOPS, MB/s, latency mean and p99 (fio's
lat_ns, submission to completion), the host CPU time of the target's QEMU process (/proc/PID/stat
utime+stime over the job) divided by the I/Os fio completed, and the host-DRAM bytes per payload byte
(the appliance: `stats dma`; Linux: a lower bound, its NIC frames plus the drive's DMA). Prints
appliance/Linux ratios and writes them, dated, with the machine and the load, to docs/bench-nvmet.md.
"""
import contextlib
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402  (sets up the lab's import path)
import topo  # noqa: E402
from lab import Lab  # noqa: E402

SECS = int(os.environ.get("BENCH_FIO_SECS", "15"))
QD = int(os.environ.get("BENCH_FIO_QD", "16"))
SWEEP = os.environ.get("BENCH_NVMET_SWEEP", "1") != "0"
# BENCH_NVMET_ROUNDS=N runs the main jobs N times over (each round every target in turn) and reports,
# per job and target, the round with the median IOPS: single 15 s runs on a shared 2-core host vary by
# tens of percent.
ROUNDS = max(1, int(os.environ.get("BENCH_NVMET_ROUNDS", "1")))
SWEEP_QDS = (1, 4, 64)   # beside QD (16) of the main table
MULTI_JOBS = 4
# The multi-job run is bimodal on this initiator (docs/performance.md, "The 4-job run is the initiator's"): it
# runs BENCH_NVMET_MULTI_RUNS times on each target (default 3) and the table shows the median run.
MULTI_RUNS = max(1, int(os.environ.get("BENCH_NVMET_MULTI_RUNS", "3")))
DRIVE_MB = 64            # tools/qemu-run's drives; the Linux target's drive is made the same
CMB_MB = 64              # nvme0's CMB in tools/qemu-run
IDLE_SECS = 5
APP_NQN = "nqn.2026-11.org.p2pstore:bench"
JOBS = [  # (name, fio rw, block size)
    ("128 KiB seq write", "write", "128k"),
    ("128 KiB seq read", "read", "128k"),
    ("4 KiB rand write", "randwrite", "4k"),
    ("4 KiB rand read", "randread", "4k"),
]
NVMET_JSON = """{
  "hosts": [],
  "ports": [ { "portid": 1, "addr": { "trtype": "tcp", "adrfam": "ipv4", "traddr": "%s",
               "trsvcid": "%d" }, "subsystems": [ "%s" ] } ],
  "subsystems": [ { "nqn": "%s", "attr": { "allow_any_host": "1", "serial": "p2pbench0001",
                    "model": "p2pstore" },
                    "namespaces": [ { "nsid": 1, "enable": 1, "device": { "path": "/dev/nvme0n1" } } ] } ]
}
""" % (topo.APPLIANCE_IP, topo.NVME_PORT, APP_NQN, APP_NQN)
MODES = {
    "cmb": ("appliance, CMB mode", "panic = exit\n"),
    "dram": ("appliance, DRAM fallback", "panic = exit\nnic.rx_mode = plain\nnvmet.p2p = off\n"),
}


def fio(initiator, dev, rw, bs, qd=QD, numjobs=1):
    """One fio job (numjobs submitters, reported as one) against dev; returns fio's JSON job object."""
    r = initiator.run(f"fio --name=bench --filename={dev} --direct=1 --ioengine=libaio --rw={rw} --bs={bs}"
                      f" --iodepth={qd} --numjobs={numjobs} --group_reporting --time_based --runtime={SECS}"
                      f" --size={DRIVE_MB}M --randseed=1"
                      f" --lat_percentiles=1 --output-format=json", timeout=SECS + 90)
    text = r.out
    try:
        job = json.loads(text[text.index("{"):text.rindex("}") + 1])["jobs"][0]
    except (ValueError, KeyError, IndexError):
        raise bl.BenchError(f"fio {rw} {bs} on {dev}: no JSON (rc {r.rc}): {text[-1500:]}")
    if r.rc != 0 or job.get("error"):
        raise bl.BenchError(f"fio {rw} {bs} on {dev} failed (rc {r.rc}, error {job.get('error')}): {text[-800:]}")
    return job


def figures(job):
    """IOPS, bytes, I/O count and latency (us) of a fio job, whichever direction it ran."""
    side = job["write"] if job["write"]["total_ios"] else job["read"]
    lat = side["lat_ns"]
    return dict(iops=side["iops"], bytes=side["io_bytes"], ios=side["total_ios"], secs=side["runtime"] / 1000,
                lat_mean=lat["mean"] / 1000, lat_p99=lat.get("percentile", {}).get("99.000000", 0) / 1000)


def rx_interrupts(guest):
    """The guest's e1000e receive interrupts so far (its eth0-rx vectors in /proc/interrupts)."""
    r = guest.run("grep eth0-rx /proc/interrupts", timeout=60)
    return sum(int(n) for ln in r.out.splitlines() for n in ln.split()[1:] if n.isdigit())


def eth_bytes(guest):
    """rx_bytes + tx_bytes of the guest's eth0: frame bytes its NIC moved through DRAM."""
    r = guest.run("cat /sys/class/net/eth0/statistics/rx_bytes /sys/class/net/eth0/statistics/tx_bytes",
                  check=True)
    return sum(map(int, r.out.split()[:2]))


class Target:
    """One lab: a Linux initiator and a target. Subclasses declare the guests in __init__ and
    connect in ready(); job() runs one fio job and measures the target around it."""
    failed = None  # the job (and why) at which this target stopped answering: its later jobs are skipped

    def _setup(self, initiator, target_node, blk):
        self.initiator, self.blk = initiator, blk
        self.pids = {"target": bl.qemu_pid(target_node), "initiator": bl.qemu_pid(initiator)}
        self.jobs = {}
        self.rounds = {}  # name -> the figures of every round

    def measure_idle(self):
        """The target QEMU's CPU share over IDLE_SECS with the initiator connected and quiet."""
        meter = bl.CpuMeter(self.pids).start()
        time.sleep(IDLE_SECS)
        c = meter.stop()
        self.idle = c["target"] / c["wall"]

    def dram(self):
        """The target's host-DRAM byte count so far (what counts differs by target)."""
        raise NotImplementedError

    def payload_dram(self, f):
        """Host-DRAM bytes the job's payload itself adds (beyond dram()'s count)."""
        return 0

    def job(self, name, rw, bs, qd=QD, numjobs=1):
        """Run one fio job; record and return its figures."""
        d0 = self.dram()
        irq0 = rx_interrupts(self.initiator)
        meter = bl.CpuMeter(self.pids).start()
        job = fio(self.initiator, self.blk, rw, bs, qd, numjobs)
        cpu = meter.stop()
        f = figures(job)
        f["init_rx_irq_per_io"] = (rx_interrupts(self.initiator) - irq0) / f["ios"] if f["ios"] else 0
        f["cpu"] = cpu["target"]
        f["us_per_io"] = cpu["target"] * 1e6 / f["ios"] if f["ios"] else 0
        f["vcpu_us_per_io"] = cpu["target.vcpu"] * 1e6 / f["ios"] if f["ios"] else 0
        f["target_busy"], f["initiator_busy"] = cpu["target"] / cpu["wall"], cpu["initiator"] / cpu["wall"]
        f["target_vcpu_busy"] = cpu["target.vcpu"] / cpu["wall"]
        f["initiator_vcpu_busy"] = cpu["initiator.vcpu"] / cpu["wall"]
        f["dram"] = self.dram() - d0 + self.payload_dram(f)
        f["dram_per_byte"] = f["dram"] / f["bytes"] if f["bytes"] else None
        rounds = self.rounds.setdefault(name, [])
        rounds.append(f)
        self.jobs[name] = sorted(rounds, key=lambda r: r["iops"])[(len(rounds) - 1) // 2]
        print(f"bench-nvmet: {name}, {self.title}: {f['iops']:.0f} IOPS, {f['bytes'] / f['secs'] / 1e6:.1f} MB/s, "
              f"mean {f['lat_mean']:.0f} us, p99 {f['lat_p99']:.0f} us, target CPU {f['us_per_io']:.0f} us/IO "
              f"(vCPU {f['vcpu_us_per_io']:.0f})", flush=True)
        return f


class ApplianceTarget(Target):
    """Lab (a) or (b): the appliance in mode 'cmb' or 'dram'."""

    def __init__(self, lab, mode):
        self.lab, self.mode = lab, mode
        self.title, cfg = MODES[mode]
        esp = bl.appliance_esp(lab.rundir, cfg, NVMET_JSON)
        self.dev, self.init_node = topo.appliance_topology(lab, esp, extra=bl.NAMED_THREADS)

    def ready(self):
        self.dev.expect(r"nvmet: target started from nvmet\.json: 1 ports, 1 subsystems", timeout=180)
        self.dev.expect(re.escape(bl.PROMPT), timeout=60)
        self.app = bl.Console(self.dev)
        self.p2p_off_known = "nvmet.p2p = off" in self.app.cmd("log show", timeout=60)
        blk = topo.nvme_connect(self.init_node, "tcp", addr=topo.APPLIANCE_IP, nqn=APP_NQN)
        self._setup(self.init_node, self.dev, blk)
        self.d0 = bl.dram_counters(self.app)

    def dram(self):
        return sum(bl.dram_counters(self.app)["host-dram"])

    def finish(self):
        """Totals and the target's own counters; disconnect."""
        self.dram_total = bl.dram_delta(bl.dram_counters(self.app), self.d0)
        state = self.app.cmd("nvmet", timeout=60)
        self.notes = [ln.strip() for ln in state.splitlines()
                      if re.search(r"^\s*ns \d+:|read \d+ cmds|^commands ", ln)]
        topo.nvme_disconnect(self.initiator)


class LinuxTarget(Target):
    """Lab (c): Linux nvmet-tcp in a target guest with the same drive (size, CMB) and NIC."""
    title = "Linux nvmet-tcp"
    mode = "linux"

    def __init__(self, lab):
        self.lab = lab
        link = lab.link("link0")
        self.init_node = lab.guest("initiator", ip=f"{topo.INITIATOR_IP}/24", links=[link])
        self.target = lab.guest("target", ip=f"{topo.TARGET_IP}/24", links=[link], nvme_mb=DRIVE_MB,
                                nvme_cmb_mb=CMB_MB)

    def ready(self):
        topo.nvmet_export(self.target, "tcp")
        self._setup(self.init_node, self.target, topo.nvme_connect(self.init_node, "tcp"))

    def dram(self):
        return eth_bytes(self.target)

    def payload_dram(self, f):
        # the drive's DMA of the payload lands in (or leaves) DRAM too: with the NIC's frames a lower bound
        return f["bytes"]

    def finish(self):
        cmb = self.target.run("dmesg | grep -i cmb | tail -2").out.strip()
        self.notes = [cmb] if cmb else []
        topo.nvme_disconnect(self.initiator)


def run_labs():
    """Boot the three labs together, then each fio job on every target in turn (the first target
    rotating from job to job), so that all three see the same host load. Returns {mode: Target}."""
    with contextlib.ExitStack() as stack:
        labs = {m: stack.enter_context(Lab(f"bench-nvmet-{m}", capture=False)) for m in ("cmb", "dram", "linux")}
        targets = {"cmb": ApplianceTarget(labs["cmb"], "cmb"), "dram": ApplianceTarget(labs["dram"], "dram"),
                   "linux": LinuxTarget(labs["linux"])}
        for lab in labs.values():
            lab.start()
        for t in targets.values():
            t.ready()
        for t in targets.values():
            t.measure_idle()
        order = list(targets)
        runs = [(name, rw, bs, QD, 1) for name, rw, bs in JOBS] * ROUNDS + \
               [(name, "randread", "4k", qd, nj) for name, qd, nj in extra_jobs()
                for _ in range(MULTI_RUNS if nj > 1 else 1)]
        for i, (name, rw, bs, qd, numjobs) in enumerate(runs):
            for key in order[i % 3:] + order[:i % 3]:
                t = targets[key]
                if t.failed:
                    continue
                try:
                    t.job(name, rw, bs, qd, numjobs)
                except (bl.BenchError, Exception) as e:  # a hung target: the others go on
                    t.failed = f"{name}: {str(e)[-300:]}"
                    print(f"bench-nvmet: {t.title} failed at {t.failed}", flush=True)
        for t in targets.values():
            t.queues = "?"
            if not t.failed:
                t.queues = t.initiator.run("cat /sys/block/nvme*n*/mq/*/nr_tags 2>/dev/null | wc -l").out.split()[-1]
        for key, t in targets.items():
            t.notes, t.dram_total = [], None
            if not t.failed:
                try:
                    t.finish()
                except Exception as e:  # noqa: BLE001
                    t.failed = f"finish: {str(e)[-200:]}"
            t.rcvbuf = labs[key].rcvbuf_errors()
    return targets


def extra_jobs():
    """(name, iodepth, numjobs) of the sweep and the multi-job run: 4 KiB random reads."""
    if not SWEEP:
        return []
    return ([(f"4 KiB rand read QD {qd}", qd, 1) for qd in SWEEP_QDS]
            + [(f"4 KiB rand read {MULTI_JOBS} jobs x QD {QD}", QD, MULTI_JOBS)])


def row(r, name):
    if name not in r["jobs"]:
        return f"| {name} | {r['title']} | failed | | | | | | |"
    f = r["jobs"][name]
    dpb = f"{f['dram_per_byte']:.3f}" if f["dram_per_byte"] is not None else "-"
    return (f"| {name} | {r['title']} | {f['iops']:.0f} | {f['bytes'] / f['secs'] / 1e6:.1f} | {f['lat_mean']:.0f} | "
            f"{f['lat_p99']:.0f} | {f['us_per_io']:.0f} | {f['vcpu_us_per_io']:.0f} | {dpb} |")


def main():
    bl.lab_setup()
    t_all = time.monotonic()
    loads = [bl.loadavg()]
    targets = run_labs()
    loads.append(bl.loadavg())
    runs = {k: dict(title=t.title, jobs=t.jobs, idle=t.idle, notes=t.notes, rcvbuf=t.rcvbuf, queues=t.queues,
                    failed=t.failed,
                    p2p_off_known=getattr(t, "p2p_off_known", None), dram_total=getattr(t, "dram_total", None))
            for k, t in targets.items()}
    lin = runs["linux"]
    lines = [
        f"# NVMe/TCP target benchmark: the appliance vs Linux nvmet-tcp ({bl.now_utc()})",
        "",
        f"Machine: {bl.machine()}; appliance and scripts at {bl.revision()}. Host load average (1/5/15 min) "
        f"before / after: {' / '.join(loads)}; other helpers' QEMU runs share the 2 cores, so figures vary "
        "by tens of percent between runs: compare within one run. The three labs run at once and each job "
        "goes to the three targets one right after the other (the idle ones cost a few % of a core).",
        "",
        f"`make bench BENCH=nvmet` (tools/bench/nvmet.py): fio 3.33 from the same Linux 6.1 initiator guest "
        f"(nvme-tcp, one I/O queue), libaio, direct, iodepth {QD}, {SECS} s per job, jobs in the order shown "
        f"on a fresh {DRIVE_MB} MiB drive, against (a) the appliance in its CMB mode, (b) the appliance in its "
        "DRAM-fallback mode (`nic.rx_mode = plain`, `nvmet.p2p = off`), (c) Linux 6.1 nvmet-tcp in a target "
        f"guest. Every target: QEMU `nvme` drive, {DRIVE_MB} MiB, {CMB_MB} MiB CMB; e1000e on an uncaptured dgram "
        "link; 1 vCPU, 1 GiB. Not the same: the appliance's machine has its NIC and drive behind a PCIe switch "
        "and two more drives, and runs `-cpu max` (the Linux guests QEMU's default CPU).",
        "",
        "Target CPU us/IO: host CPU time (utime+stime, all threads) of the target's QEMU process over the "
        "job divided by the I/Os fio completed: not fooled by a slow initiator, but it includes what the "
        "target burns while idle (below). Of which vCPU: the TCG vCPU thread alone (guest code and its "
        "device register accesses, CMB loads and stores included); the rest is QEMU's own work for the "
        "devices (dgram network backend, e1000e and NVMe DMA, block I/O), much the same for every target. Latency: fio's lat_ns (submission to completion), mean and p99, us. "
        "Host-DRAM B/B: host-DRAM bytes per payload byte; the appliance's from `stats dma` (device DMA "
        "and CPU copies), Linux's a lower bound (its e1000e's frame bytes plus the drive's DMA; the copies "
        "between socket buffers and nvmet's pages are left out).",
        "",
        "| job | target | IOPS | MB/s | lat mean us | lat p99 us | target CPU us/IO | of which vCPU | host-DRAM B/B |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, _, _ in JOBS:
        for key in ("cmb", "dram", "linux"):
            lines.append(row(runs[key], name))
    if ROUNDS > 1:
        lines += ["", f"{ROUNDS} rounds of these jobs (each round every target in turn); the table shows each "
                  "job's median round by IOPS. MB/s of every round, in order:", "",
                  "| job | " + " | ".join(runs[k]["title"] for k in ("cmb", "dram", "linux")) + " |",
                  "|---|---|---|---|"]
        for name, _, _ in JOBS:
            cells = [", ".join(f"{f['bytes'] / f['secs'] / 1e6:.1f}" for f in targets[k].rounds.get(name, []))
                     for k in ("cmb", "dram", "linux")]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if SWEEP:
        lines += [
            "",
            f"Queue-depth sweep and {MULTI_JOBS} submitters (4 KiB random read, {SECS} s each; QD {QD} is the "
            "table's row above; the initiator's nvme-tcp had " + ", ".join(
                f"{runs[k]['queues']} I/O queue(s) to {runs[k]['title']}" for k in ("cmb", "dram", "linux"))
            + "):",
            "",
            "| job | target | IOPS | MB/s | lat mean us | lat p99 us | target CPU us/IO | of which vCPU | host-DRAM B/B |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for name, _, _ in extra_jobs():
            for key in ("cmb", "dram", "linux"):
                lines.append(row(runs[key], name))
        multi = extra_jobs()[-1][0]
        mruns = [f for k in targets for f in targets[k].rounds.get(multi, [])]
        ibusy = (f"{min(f['initiator_vcpu_busy'] for f in mruns) * 100:.0f}-"
                 f"{max(f['initiator_vcpu_busy'] for f in mruns) * 100:.0f} %") if mruns else "?"
        lines += ["", f"The {MULTI_JOBS}-job run, every run in order ({MULTI_RUNS} on each target; the table shows the "
                  "median by IOPS): IOPS, and the initiator's receive interrupts per I/O. The Linux initiator (one "
                  f"vCPU, its thread busy {ibusy} of a core in these runs) settles in one of two modes whatever the target: one "
                  "receive interrupt per I/O or more (about half the IOPS) or one per several I/Os; compare targets "
                  "in the same mode (docs/performance.md, \"The 4-job run is the initiator's\").", "",
                  "| target | runs: IOPS (initiator rx interrupts per I/O) |", "|---|---|"]
        for key in ("cmb", "dram", "linux"):
            cells = ", ".join(f"{f['iops']:.0f} ({f['init_rx_irq_per_io']:.2f})"
                              for f in targets[key].rounds.get(multi, []))
            lines.append(f"| {runs[key]['title']} | {cells or 'failed'} |")
        lines += ["", "| job | CMB / DRAM IOPS | CMB / Linux IOPS | DRAM / Linux IOPS |", "|---|---|---|---|"]
        for name in [n for n, _, _ in extra_jobs()] + ["4 KiB rand read"]:
            c, d, li = (runs[k]["jobs"].get(name, {}).get("iops", 0) for k in ("cmb", "dram", "linux"))
            lines.append(f"| {name} | {bl.ratio(c, d)} | {bl.ratio(c, li)} | {bl.ratio(d, li)} |")
    lines += [
        "",
        "Ratios appliance / Linux (IOPS: higher is better; CPU/IO and latency: lower is better; "
        "Linux CPU/IO over the appliance's is how many times less CPU the appliance spends per I/O, the "
        "issue's aim is >= 5):",
        "",
        "| job | mode | IOPS | lat mean | lat p99 | CPU/IO | Linux CPU/IO / appliance's | aim 5x "
        "| vCPU only: Linux / appliance's |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    met = []
    for name, _, _ in JOBS:
        lf = lin["jobs"].get(name)
        for key in ("cmb", "dram"):
            af = runs[key]["jobs"].get(name)
            if not af or not lf:
                lines.append(f"| {name} | {key} | failed | | | | | | |")
                continue
            less = lf["us_per_io"] / af["us_per_io"] if af["us_per_io"] else 0
            met.append(less >= 5)
            lines.append(f"| {name} | {key} | {bl.ratio(af['iops'], lf['iops'])} | "
                         f"{bl.ratio(af['lat_mean'], lf['lat_mean'])} | {bl.ratio(af['lat_p99'], lf['lat_p99'])} | "
                         f"{bl.ratio(af['us_per_io'], lf['us_per_io'])} | {less:.2f}x | "
                         f"{'met' if less >= 5 else 'not met'} | "
                         f"{bl.ratio(lf['vcpu_us_per_io'], af['vcpu_us_per_io'])}x |")
    lines += [
        "",
        "Where the host CPU went (% of one host core over the job; vCPU share: the target's vCPU thread "
        "in its QEMU process's CPU time):",
        "",
        "| job | target | target QEMU busy | of which vCPU | initiator QEMU busy |",
        "|---|---|---|---|---|",
    ]
    for name, _, _ in JOBS:
        for key in ("cmb", "dram", "linux"):
            f = runs[key]["jobs"].get(name)
            if not f:
                lines.append(f"| {name} | {runs[key]['title']} | failed | | |")
                continue
            share = f["vcpu_us_per_io"] / f["us_per_io"] if f["us_per_io"] else 0
            lines.append(f"| {name} | {runs[key]['title']} | {f['target_busy'] * 100:.0f} % | {share * 100:.0f} % | "
                         f"{f['initiator_busy'] * 100:.0f} % |")
    allf = [runs[k]["jobs"][n] for k in runs for n, _, _ in JOBS if n in runs[k]["jobs"]]
    busiest_target = max(f["target_busy"] for f in allf)
    initiator_min, initiator_max = min(f["initiator_busy"] for f in allf), max(f["initiator_busy"] for f in allf)
    if initiator_min >= 0.85:
        bound = (f"the initiator's QEMU used {initiator_min * 100:.0f}-{initiator_max * 100:.0f} % of a core: the "
                 "Linux initiator limits IOPS")
    else:
        bound = (f"nor was the initiator ({initiator_min * 100:.0f}-{initiator_max * 100:.0f} % of a core): the "
                 "host's other load (load average above) shares the 2 cores, so the rates are set by host "
                 "scheduling as much as by either side's software")
    outside = [1 - f["vcpu_us_per_io"] / f["us_per_io"] for f in allf if f["us_per_io"]]
    lines += [
        "",
        "Reading the CPU figures. Under TCG every target pays the same emulation for the same traffic: "
        "QEMU's e1000e and NVMe models, their DMA and the dgram link run in the target's own QEMU process, "
        f"outside its vCPU ({min(outside) * 100:.0f}-{max(outside) * 100:.0f} % of the target's CPU in this run), "
        "and guest instructions cost tens of host instructions each, device register accesses (the CMB in "
        "CMB mode) far more. That floor is in both the appliance's and Linux's figure, so the ratio is "
        "compressed towards 1 whatever the target's own software costs; on hardware the NIC and the drive "
        "do that work and the per-I/O cost is the target's software alone, which is what the 5x aim is "
        f"about. No target was saturated (the busiest used {busiest_target * 100:.0f} % of a core), {bound}. "
        "The targets' CPU per I/O includes what they spend between I/Os (the appliance's poll loop spins for "
        "20 us after the last work (loop.spin_us), then halts until a device interrupt or the next timer; after "
        "4 wake-ups in a row sooner than 250 us (loop.poll_wakes, loop.quick_us) it polls instead, halting "
        "250 us at a time (loop.halt_us) with the device interrupts masked; Linux sleeps until an interrupt).",
    ]
    lines += [
        "",
        "Idle: the target's QEMU process used " + ", ".join(
            f"{runs[k]['idle'] * 100:.0f} % of a core ({runs[k]['title']})" for k in ("cmb", "dram", "linux"))
        + f" over {IDLE_SECS} s before the jobs, with the initiator connected and quiet.",
        f"The 5x CPU aim is met in {sum(met)} of {len(met)} job/mode pairs in this run.",
    ]
    if not runs["dram"]["p2p_off_known"]:
        lines.append("This build did not acknowledge `nvmet.p2p = off` in its log: the DRAM-fallback run "
                     "had only `nic.rx_mode = plain`.")
    for key in ("cmb", "dram", "linux"):
        if runs[key]["failed"]:
            lines.append(f"{runs[key]['title']} FAILED at {runs[key]['failed']}; its later jobs were skipped.")
    for key in ("cmb", "dram"):
        r = runs[key]
        if not r["dram_total"]:
            continue
        h, d = r["dram_total"]["host-dram"], r["dram_total"]["device"]
        lines.append(f"{r['title']}: over all jobs host-DRAM DMA to/from devices {h[0]} / {h[1]} B, CPU {h[2]} B; "
                     f"device memory DMA {d[0]} / {d[1]} B, CPU {d[2]} B.")
        if r["notes"]:
            lines.append(f"Its `nvmet` counters: {'; '.join(r['notes'])[:600]}.")
    if lin["notes"]:
        lines.append(f"Linux target's dmesg on the CMB: {'; '.join(lin['notes'])[:300]} (when Linux cannot "
                     "register the CMB as P2P memory it does not use it at all, not even for submission queues; "
                     "the appliance's drives fetch their submission queues from the CMB, `nvme.sq_in_cmb`).")
    lines += [
        "Host UDP receive-buffer drops (dgram links): " + ", ".join(
            f"{runs[k]['title']} {runs[k]['rcvbuf']}" for k in ("cmb", "dram", "linux"))
        + f". Bench wall time {time.monotonic() - t_all:.0f} s.",
        "",
    ]
    if os.environ.get("BENCH_NVMET_RDMA", "1") != "0":  # the NVMe/RDMA section: tools/bench/nvmet_rdma.py
        import nvmet_rdma
        lines += ["", *nvmet_rdma.section()]
    bl.write_doc("bench-nvmet.md", "\n".join(lines))


if __name__ == "__main__":
    main()
