"""tools/bench/benchlib.py: what the lab benchmarks (net.py, nvmet.py) share.

The machine line for the docs (cores, CPU model, QEMU version, TCG, load), the host CPU time of a
guest's QEMU process (/proc/PID/stat utime + stime, every thread), the appliance's host-DRAM byte
counters (`stats dma`), a private ESP copy with a p2pstore.cfg (and an nvmet.json), and the doc writer.
The lab runner (tools/lab/lab.py) boots the guests; benchmarks use uncaptured links (docs/platform.md:
captures cost ~15 %).
"""
import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tools", "lab"))

CLK_TCK = os.sysconf("SC_CLK_TCK")
PROMPT = "p2pstore> "
# QEMU arguments that name its threads ("CPU 0/TCG"), for vcpu_secs(); the lab's Linux guests have them
NAMED_THREADS = ["-name", "appliance,debug-threads=on"]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class BenchError(Exception):
    """A benchmark could not measure what it set out to (the message says what and where)."""


def lab_setup():
    """Install what the lab needs (tools/lab/setup, as tests/lab/run-tests does); the guest image is
    built or reused when a Lab starts."""
    subprocess.run([os.path.join(TOP, "tools", "lab", "setup")], check=True, timeout=900)


def now_utc():
    """The date and time of a run, for the docs."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def loadavg():
    """The host's 1/5/15-minute load averages as a string (other helpers' runs share the cores)."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def machine():
    """One line naming the host: node, cores, CPU model, QEMU version, accelerator."""
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    try:
        out = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True,
                             timeout=30).stdout
        qemu = re.search(r"version (\S+)", out).group(1)
    except (OSError, AttributeError, subprocess.SubprocessError):
        qemu = "?"
    return f"{platform.node()}, {os.cpu_count()} cores ({model}), QEMU {qemu} TCG (no KVM), guests -smp 1"


def revision():
    """The commit the run measured, '-dirty' with local changes outside docs/ (where the benchmarks
    write their own results)."""
    try:
        def git(*args):
            return subprocess.run(["git", "-C", TOP, *args], capture_output=True, text=True,
                                  timeout=30).stdout.strip()
        head = git("rev-parse", "--short", "HEAD") or "?"
        return head + ("-dirty" if git("status", "--porcelain", "--", ".", ":!docs") else "")
    except (OSError, subprocess.SubprocessError):
        return "?"


def qemu_pid(node):
    """The pid of the QEMU process behind a lab Guest (its Popen) or Appliance (a child of the
    tools/qemu-run script that pexpect started)."""
    if getattr(node, "proc", None) is not None:
        return node.proc.pid
    script = node.child.pid
    for _ in range(100):
        try:
            with open(f"/proc/{script}/task/{script}/children") as f:
                kids = [int(p) for p in f.read().split()]
        except OSError:
            kids = []
        for k in kids:
            try:
                with open(f"/proc/{k}/comm") as f:
                    if f.read().startswith("qemu-system"):
                        return k
            except OSError:
                pass
        time.sleep(0.1)
    raise BenchError(f"{node.name}: no QEMU process under tools/qemu-run (pid {script})")


def cpu_secs(pid):
    """Host CPU seconds (user + system, all threads) the process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # after "pid (comm)": state is fields[0]; utime and stime are stat fields 14 and 15
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def vcpu_secs(pid):
    """Host CPU seconds of the process's TCG vCPU threads ("CPU n/TCG"): guest code and the device
    register accesses it makes (MMIO, port I/O, including CMB loads and stores). The rest of the
    process's time is QEMU's main loop and workers: network backend, DMA, block I/O."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                text = f.read()
        except OSError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        if comm.startswith("CPU "):
            fields = text.rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / CLK_TCK
    return total


class CpuMeter:
    """CPU time of several QEMU processes over an interval (all threads, and the vCPU threads alone)."""

    def __init__(self, pids):
        self.pids = dict(pids)
        self.t0 = None

    def _now(self):
        t = {n: cpu_secs(p) for n, p in self.pids.items()}
        t.update({n + ".vcpu": vcpu_secs(p) for n, p in self.pids.items()})
        return t

    def start(self):
        self.t0 = self._now()
        self.wall0 = time.monotonic()
        return self

    def stop(self):
        """{name: CPU s, name.vcpu: of which the vCPU threads, wall: elapsed s} since start()."""
        d = {n: v - self.t0[n] for n, v in self._now().items()}
        d["wall"] = time.monotonic() - self.wall0
        return d


class Console:
    """The appliance's serial console (a lab Appliance) as a command runner."""

    def __init__(self, dev):
        self.dev = dev

    def cmd(self, line, timeout=60):
        """Type a console command, wait for the next prompt, return its output without ANSI codes."""
        start = self.dev._pos
        self.dev.send(line + "\r")
        m = self.dev.expect(re.escape(PROMPT), timeout=timeout)
        text = ANSI.sub("", self.dev._buf[start:m.start()]).replace("\r", "")
        return text.split("\n", 1)[1] if "\n" in text else ""

    def counters(self):
        """The few `tcp` and `nic` counters the benchmarks report (payload bytes by memory class,
        retransmissions, frames bounced through DRAM on transmit)."""
        tcp, nic = self.cmd("tcp"), self.cmd("nic")
        c = {}
        for rx, text, names in (
                (r"payload rx host-dram (\d+) device (\d+); tx host-dram (\d+) device (\d+)", tcp,
                 ("rx_pay_host", "rx_pay_dev", "tx_pay_host", "tx_pay_dev")),
                (r"retransmits (\d+) fast (\d+) timeouts (\d+)", tcp, ("retransmits", "fast", "timeouts")),
                (r"bounced to DRAM (\d+) frames (\d+) B", nic, ("tx_bounced", "tx_bounce_bytes"))):
            m = re.search(rx, text)
            if not m:
                raise BenchError(f"appliance counters not found ({rx!r}) in:\n{text[-1500:]}")
            c.update(zip(names, map(int, m.groups())))
        return c

    @staticmethod
    def delta(after, before):
        """Counter differences after - before."""
        return {k: after[k] - before[k] for k in after}


STATS_DMA = re.compile(r"^\s*(host-dram|device)\s+dma-to-device (\d+) B\s+dma-from-device (\d+) B\s+cpu (\d+) B",
                       re.M)


def dram_counters(console):
    """The appliance's `stats dma`: {'host-dram'|'device': (dma-to-device, dma-from-device, cpu)} bytes."""
    text = console.cmd("stats dma")
    out = {m.group(1): tuple(map(int, m.group(2, 3, 4))) for m in STATS_DMA.finditer(text)}
    if len(out) != 2:
        raise BenchError(f"appliance `stats dma` not understood:\n{text}")
    return out


def dram_delta(after, before):
    """Bytes per memory class between two dram_counters(): {'host-dram': (to, from, cpu), ...}."""
    return {k: tuple(a - b for a, b in zip(after[k], before[k])) for k in after}


def appliance_esp(rundir, cfg, nvmet_json=None):
    """A private copy of the appliance's ESP (build/esp, or $LAB_ESP like the lab tests) in rundir with \\p2pstore\\
    p2pstore.cfg = cfg (and nvmet.json when given); qemu-run serves the ESP writable."""
    src = os.environ.get("LAB_ESP") or os.path.join(TOP, "build", "esp")
    if not os.path.isfile(os.path.join(src, "EFI", "BOOT", "BOOTX64.EFI")):
        raise BenchError(f"no appliance image in {src} (make image)")
    esp = os.path.join(rundir, "esp")
    shutil.rmtree(esp, ignore_errors=True)
    shutil.copytree(src, esp)
    os.makedirs(os.path.join(esp, "p2pstore"), exist_ok=True)
    with open(os.path.join(esp, "p2pstore", "p2pstore.cfg"), "w") as f:
        f.write(cfg)
    if nvmet_json:
        with open(os.path.join(esp, "p2pstore", "nvmet.json"), "w") as f:
            f.write(nvmet_json)
    return esp


def write_doc(name, text):
    """Write docs/NAME with text (and print it)."""
    print(text)
    with open(os.path.join(TOP, "docs", name), "w") as f:
        f.write(text)


def ratio(a, b):
    """a / b as text, '-' when b is 0."""
    return f"{a / b:.2f}" if b else "-"
