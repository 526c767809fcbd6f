#!/usr/bin/python3
"""tools/bench/nvmet_profile.py - `make bench BENCH=nvmet_profile`: where the appliance's time goes
during the NVMe/TCP jobs of `make bench BENCH=nvmet` (issue 18), in a shorter run.

Boots the appliance lab(s) of tools/bench/nvmet.py only (no Linux target: the judge stays
BENCH=nvmet), for each mode in BENCH_PROFILE_MODES (default "cmb"; also "dram", and "cmb-poll": the CMB mode with
`loop.halt_us = 0`, never halting; "cmb-512k": `nvmet.write_budget_kib = 512`, the budget of before), and runs
the same four fio jobs (BENCH_FIO_SECS, default here 10 s; BENCH_FIO_QD, default 16). Around each
job it takes:
  - host `perf record -e cpu-clock -g` on the appliance's QEMU process (Debian's linux-perf), split by
    thread (the TCG vCPU, QEMU's main loop with the device models, workers) and by binary (QEMU,
    glib, libc, the kernel): what runs outside the guest's own code;
  - the in-image profiler (`prof start 1000` .. `prof show all`, summed per function by
    tools/symbolize --prof): which of the appliance's functions the vCPU is in, halted included;
  - `stats loop`, `stats nvmet_tcp` and `tcp` before and after: halts, passes, waits for buffers and
    windows.
Writes docs/bench-nvmet-profile.md.
"""
import collections
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("BENCH_FIO_SECS", "10")
import benchlib as bl  # noqa: E402
import nvmet  # noqa: E402
from lab import Lab  # noqa: E402

MODES = os.environ.get("BENCH_PROFILE_MODES", "cmb").split()
# more modes than nvmet.py's: the CMB mode polling only (no idle halts), to weigh the halts
nvmet.MODES.setdefault("cmb-poll", ("appliance, CMB mode, no idle halts (loop.halt_us = 0)",
                                    nvmet.MODES["cmb"][1] + "loop.halt_us = 0\n"))
# ... and with the write budget of before (512 KiB: 2 x 128 KiB writes per host between R2T and completion)
nvmet.MODES.setdefault("dram-noirq", ("appliance, DRAM fallback, devices polled (pci.msix_wake = off)",
                                      nvmet.MODES["dram"][1] + "pci.msix_wake = off\n"))
nvmet.MODES.setdefault("dram-512k", ("appliance, DRAM fallback, nvmet.write_budget_kib = 512",
                                     nvmet.MODES["dram"][1] + "nvmet.write_budget_kib = 512\n"))
nvmet.MODES.setdefault("cmb-noirq", ("appliance, CMB mode, devices polled (pci.msix_wake = off)",
                                     nvmet.MODES["cmb"][1] + "pci.msix_wake = off\n"))
nvmet.MODES.setdefault("cmb-512k", ("appliance, CMB mode, nvmet.write_budget_kib = 512",
                                    nvmet.MODES["cmb"][1] + "nvmet.write_budget_kib = 512\n"))
PROF_HZ = 1000
TOP_FUNCS = 15
SYMBOLIZE = os.path.join(bl.TOP, "tools", "symbolize")


def perf_split(data):
    """{(thread, binary): share %} of a perf.data file, from perf report."""
    r = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "comm,dso", "--stdio", "-g", "none",
                        "--percent-limit", "0.5"], capture_output=True, text=True, timeout=300)
    out = {}
    for m in re.finditer(r"^\s+([\d.]+)%\s+(.+?)\s{2,}(\S+)\s*$", r.stdout, re.M):
        out[(m.group(2).strip(), m.group(3))] = float(m.group(1))
    return out


def prof_functions(text):
    """[(share %, function, file)] from `prof show all` through tools/symbolize --prof."""
    r = subprocess.run([SYMBOLIZE, "--prof"], input=text, capture_output=True, text=True, timeout=60)
    rows = []
    for m in re.finditer(r"^\s*\d+\s+([\d.]+)%\s+(\S+)[ \t]*(\S*)$", r.stdout, re.M):
        rows.append((float(m.group(1)), m.group(2), m.group(3)))
    return rows


def counters(app):
    """The loop, nvmet_tcp and tcp figures compared before/after a job: {name: int}."""
    c = {}
    for section in ("stats loop", "stats nvmet_tcp", "tcp"):
        text = app.cmd(section, timeout=60)
        for m in re.finditer(r"([a-z][\w -]*?) (\d+)(?=[,;\s]|$)", text):
            key = f"{section.split()[-1]}: {m.group(1).strip()}"
            if key not in c:
                c[key] = int(m.group(2))
    return c


def profile_job(t, name, rw, bs):
    """One fio job with host perf and the in-image profiler around it."""
    app, pid = t.app, t.pids["target"]
    c0 = counters(app)
    with tempfile.TemporaryDirectory(prefix="nvmet-perf.") as tmp:
        data = os.path.join(tmp, "perf.data")
        perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "499", "-g", "-p", str(pid),
                                 "-o", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        app.cmd(f"prof start {PROF_HZ}")
        f = t.job(name, rw, bs)
        app.cmd("prof stop")
        perf.send_signal(signal.SIGINT)
        perf.wait(timeout=120)
        split = perf_split(data)
    funcs = prof_functions(app.cmd("prof show all", timeout=120))
    c1 = counters(app)
    f["perf"] = split
    f["prof"] = funcs
    f["delta"] = {k: c1[k] - c0.get(k, 0) for k in c1 if c1[k] != c0.get(k, 0)}
    return f


def main():
    bl.lab_setup()
    loads = [bl.loadavg()]
    t0 = time.monotonic()
    runs, failed = {}, {}
    for mode in MODES:
        try:
            with Lab(f"bench-nvmet-profile-{mode}", capture=False) as lab:
                t = nvmet.ApplianceTarget(lab, mode)
                lab.start()
                t.ready()
                for name, rw, bs in nvmet.JOBS:
                    profile_job(t, name, rw, bs)
                t.finish()
                runs[mode] = t
        except Exception as e:  # one mode's lab failing must not lose the others' figures
            failed[mode] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            print(f"bench-nvmet-profile: mode {mode} failed: {failed[mode]}", flush=True)
    if not runs:
        return 1
    loads.append(bl.loadavg())
    lines = [
        f"# Where the appliance's time goes during NVMe/TCP I/O ({bl.now_utc()})",
        "",
        f"Machine: {bl.machine()}; appliance and scripts at {bl.revision()}. Host load average before / after: "
        f"{' / '.join(loads)}. Run time {time.monotonic() - t0:.0f} s.",
        "",
        f"`make bench BENCH=nvmet_profile` (tools/bench/nvmet_profile.py): the appliance lab of "
        f"`make bench BENCH=nvmet` alone (modes: {', '.join(MODES)}), the same fio jobs (iodepth {nvmet.QD}, "
        f"{nvmet.SECS} s each), and around each job host `perf record -e cpu-clock -g` on the appliance's QEMU "
        f"process, the in-image profiler (`prof start {PROF_HZ}`, summed per function by `tools/symbolize --prof`) "
        "and the appliance's loop, nvmet_tcp and tcp counters.",
        "",
        "| job | mode | IOPS | MB/s | lat mean us | target CPU us/IO | of which vCPU | target QEMU busy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, _, _ in nvmet.JOBS:
        for mode, t in runs.items():
            f = t.jobs.get(name)
            if not f:
                continue
            lines.append(f"| {name} | {mode} | {f['iops']:.0f} | {f['bytes'] / f['secs'] / 1e6:.1f} | "
                         f"{f['lat_mean']:.0f} | {f['us_per_io']:.0f} | {f['vcpu_us_per_io']:.0f} | "
                         f"{100 * f['target_busy']:.0f} % |")
    lines += [f"Mode {m} failed: {why}." for m, why in failed.items()]
    for mode, t in runs.items():
        for name, _, _ in nvmet.JOBS:
            f = t.jobs.get(name)
            if not f:
                continue
            lines += ["", f"## {name}, {mode} mode", "",
                      "Host perf, the appliance's QEMU process (% of its samples; thread, binary):", "",
                      "| thread | binary | share |", "|---|---|---|"]
            for (comm, dso), share in sorted(f["perf"].items(), key=lambda kv: -kv[1]):
                lines.append(f"| {comm} | {dso} | {share:.1f} % |")
            lines += ["", "In-image profiler (% of the vCPU's samples; `arch_idle` is the halted CPU):", "",
                      "| function | file | share |", "|---|---|---|"]
            for share, fn, fl in f["prof"][:TOP_FUNCS]:
                lines.append(f"| `{fn}` | {fl} | {share:.1f} % |")
            per_io = {k: v / f["ios"] for k, v in f["delta"].items()} if f["ios"] else {}
            interesting = [k for k in sorted(per_io) if re.search(
                r"passes|idle|halts|wait|zero|window|retrans|r2t|h2c|c2h|resp|deferred|starv|kick|dup|ack", k)]
            lines += ["", "Counters over the job, per I/O: " + (", ".join(
                f"{k} {per_io[k]:.2f}" for k in interesting) or "none changed") + "."]
    bl.write_doc("bench-nvmet-profile.md", "\n".join(lines) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
