#!/usr/bin/python3
"""tools/bench/nvmet_profile.py - `make bench BENCH=nvmet_profile`: where the appliance's time goes
during the NVMe/TCP jobs of `make bench BENCH=nvmet` (issue 18), in a shorter run.

Boots the labs of tools/bench/nvmet.py (the judge stays BENCH=nvmet) for each mode in
BENCH_PROFILE_MODES (default "cmb linux"; also "dram", "cmb-rxdram": the CMB mode with its receive
descriptors in host DRAM, "cmb-poll": the CMB mode with `loop.halt_us = 0`,
never halting; "cmb-512k": `nvmet.write_budget_kib = 512`, the budget of before; "linux": Linux
nvmet-tcp in a target guest, perf only), and runs the same four fio jobs (BENCH_FIO_SECS, default here
10 s; BENCH_FIO_QD, default 16). Around each job it takes:
  - host `perf record -e cpu-clock -g` on the target's QEMU process (Debian's linux-perf), split by
    thread (the TCG vCPU, QEMU's main loop with the device models, workers) and by binary (QEMU,
    glib, libc, the kernel): what runs outside the guest's own code; and the vCPU thread's samples
    by what they run (vcpu_split): the guest's own code (TCG's translated blocks, perf's "[JIT]"),
    QEMU's device models and MMIO dispatch called from it, TCG's runtime (translation, softmmu,
    the exec loop), the host kernel and libraries. The guest-code share times the CPU per I/O is
    the target software's own cost under emulation, the figure to hold the appliance and Linux to;
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

MODES = os.environ.get("BENCH_PROFILE_MODES", "cmb linux").split()
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
# ... and with the NIC's receive descriptors in host DRAM instead of behind the data in the CMB (the
# descriptor reads and write-backs then cost host-DRAM bytes instead of device-memory accesses)
nvmet.MODES.setdefault("cmb-rxdram", ("appliance, CMB mode, nic.rx_ring = dram",
                                      nvmet.MODES["cmb"][1] + "nic.rx_ring = dram\n"))
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


# QEMU functions that are device models or the memory/MMIO dispatch the guest's register and CMB
# accesses go through (everything else of QEMU's in the vCPU thread is TCG's own runtime)
DEVICE_RE = re.compile(r"^(e1000|net_|qemu_send|qemu_net|qemu_deliver|nvme_|pci|msix|msi_|apic|ioapic|"
                       r"memory_region|address_space|flatview|dma_|subpage|io_mem|memory_ldst|ldl_|lduw_|"
                       r"stl_|stw_|stq_|ldq_|serial|pic_|hpet|pit_|acpi|ich9|lpc|fw_cfg|blk_|bdrv_|"
                       r"qemu_irq|qemu_set_irq|cpu_physical_memory|tx_pkt|rx_pkt|iov_)")
VCPU_PARTS = ("guest code", "device models and MMIO", "TCG runtime", "host kernel and libraries")


def vcpu_split(data):
    """{part: share % of all the process's samples} for the vCPU threads ("CPU n/TCG"), by what the
    sample ran: VCPU_PARTS."""
    r = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "comm,dso,sym", "--stdio",
                        "-g", "none", "-t", "|", "--percent-limit", "0"], capture_output=True, text=True,
                       timeout=300)
    out = dict.fromkeys(VCPU_PARTS, 0.0)
    syms = collections.Counter()  # (part, QEMU symbol): share, for the top lists
    for line in r.stdout.splitlines():
        f = [x.strip() for x in line.split("|")]
        if len(f) != 4 or not f[0].endswith("%") or not re.match(r"CPU \d+/TCG", f[1]):
            continue
        share, dso, sym = float(f[0][:-1]), f[2], re.sub(r"^\[.\]\s*", "", f[3])
        if dso.startswith("[JIT]") or dso == "[unknown]":
            part = "guest code"
        elif dso.startswith("qemu-system"):
            part = "device models and MMIO" if DEVICE_RE.match(sym) else "TCG runtime"
        else:
            part = "host kernel and libraries"
        out[part] += share
        if dso.startswith("qemu-system"):
            syms[(part, sym)] += share
    return out, syms


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
    app, pid = getattr(t, "app", None), t.pids["target"]  # Linux's target: perf only
    c0 = counters(app) if app else {}
    with tempfile.TemporaryDirectory(prefix="nvmet-perf.") as tmp:
        data = os.path.join(tmp, "perf.data")
        perf = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "499", "-g", "-p", str(pid),
                                 "-o", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if app:
            app.cmd(f"prof start {PROF_HZ}")
        f = t.job(name, rw, bs)
        if app:
            app.cmd("prof stop")
        perf.send_signal(signal.SIGINT)
        perf.wait(timeout=120)
        split, (vsplit, vsyms) = perf_split(data), vcpu_split(data)
    funcs = prof_functions(app.cmd("prof show all", timeout=120)) if app else []
    c1 = counters(app) if app else {}
    f["perf"] = split
    f["vcpu_split"], f["vcpu_syms"] = vsplit, vsyms
    f["prof"] = funcs
    f["delta"] = {k: c1[k] - c0.get(k, 0) for k in c1 if c1[k] != c0.get(k, 0)}
    return f


def vcpu_table(runs):
    """The target CPU per I/O split by what it ran (vcpu_split), every mode side by side, and the
    guest code's per-I/O cost of Linux over the appliance's (lines of the doc)."""
    lines = ["", "## The target's CPU per I/O by what it ran", "",
             "Host CPU microseconds per I/O of the target's QEMU process (`target CPU us/IO` above) split by host "
             "perf's samples: in the vCPU thread, the guest's own code (TCG's translated blocks), QEMU's device "
             "models and MMIO dispatch called from it (register and CMB accesses, the e1000e's transmit), TCG's "
             "runtime (translation, softmmu, its exec loop) and the host kernel and libraries (halting, "
             "signals); outside it, QEMU's main loop and workers (the device models' receive side, DMA, "
             "block I/O, the network backend). Only the guest code is the target software's own work; the "
             "rest is emulation that a hardware NIC and drive do not charge to the CPU.", "",
             "| job | target | CPU us/IO | guest code | device models + MMIO | TCG runtime | host kernel + libs "
             "(vCPU) | main loop + workers |", "|---|---|---|---|---|---|---|---|"]
    for name, _, _ in nvmet.JOBS:
        for mode, t in runs.items():
            f = t.jobs.get(name)
            if not f or "vcpu_split" not in f:
                continue
            us, v = f["us_per_io"], f["vcpu_split"]
            other = max(0.0, 100 - sum(v.values()))
            cells = " | ".join(f"{us * v[p] / 100:.0f}" for p in VCPU_PARTS)
            lines.append(f"| {name} | {mode} | {us:.0f} | {cells} | {us * other / 100:.0f} |")
    if "linux" in runs:
        lines += ["", "Guest code per I/O, Linux nvmet-tcp's over the appliance's (how many times less of its "
                  "own CPU the appliance spends per I/O; the issue's aim is >= 5):", ""]
        for name, _, _ in nvmet.JOBS:
            lf = runs["linux"].jobs.get(name)
            for mode, t in runs.items():
                f = t.jobs.get(name)
                if mode == "linux" or not f or not lf or "vcpu_split" not in f:
                    continue
                a = f["us_per_io"] * f["vcpu_split"]["guest code"]
                b = lf["us_per_io"] * lf["vcpu_split"]["guest code"]
                lines.append(f"- {name}, {mode}: {b / a:.2f}x" if a else f"- {name}, {mode}: no samples")
    return lines


def main():
    bl.lab_setup()
    loads = [bl.loadavg()]
    t0 = time.monotonic()
    runs, failed = {}, {}
    for mode in MODES:
        try:
            with Lab(f"bench-nvmet-profile-{mode}", capture=False) as lab:
                t = nvmet.LinuxTarget(lab) if mode == "linux" else nvmet.ApplianceTarget(lab, mode)
                lab.start()
                t.ready()
                for name, rw, bs in nvmet.JOBS:
                    profile_job(t, name, rw, bs)
                if mode != "linux":
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
        f"`make bench BENCH=nvmet_profile` (tools/bench/nvmet_profile.py): the labs of "
        f"`make bench BENCH=nvmet` one at a time (modes: {', '.join(MODES)}; `linux` is Linux nvmet-tcp), the same "
        f"fio jobs (iodepth {nvmet.QD}, {nvmet.SECS} s each), and around each job host `perf record -e cpu-clock -g` "
        f"on the target's QEMU process; for the appliance also the in-image profiler (`prof start {PROF_HZ}`, summed "
        "per function by `tools/symbolize --prof`) and its loop, nvmet_tcp and tcp counters.",
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
    lines += vcpu_table(runs)
    for mode, t in runs.items():
        for name, _, _ in nvmet.JOBS:
            f = t.jobs.get(name)
            if not f:
                continue
            lines += ["", f"## {name}, {mode} mode", "",
                      "Host perf, the target's QEMU process (% of its samples; thread, binary):", "",
                      "| thread | binary | share |", "|---|---|---|"]
            for (comm, dso), share in sorted(f["perf"].items(), key=lambda kv: -kv[1]):
                lines.append(f"| {comm} | {dso} | {share:.1f} % |")
            for part in ("TCG runtime", "device models and MMIO"):
                top = sorted(((sh, sym) for (p, sym), sh in f.get("vcpu_syms", {}).items() if p == part),
                             reverse=True)[:8]
                if top:
                    lines += ["", f"The vCPU thread's {part}, top QEMU functions (% of all samples): " +
                              ", ".join(f"`{sym}` {sh:.1f} %" for sh, sym in top) + "."]
            if not f["prof"]:
                continue
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
