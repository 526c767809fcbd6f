#!/usr/bin/python3
"""tools/bench/net.py - `make bench BENCH=net`: the appliance's NIC + TCP/IP stack against Linux (issue 7).

One run, two labs booted together, each on an uncaptured link (captures cost ~15 %, docs/platform.md),
every guest a QEMU 7.2 TCG machine with one vCPU and an emulated e1000e (82574L) on a dgram link:
  (a) a Linux client guest (10.10.0.2) and the appliance (10.10.0.10): its TCP services discard (9),
      chargen (19, sent from host DRAM by design) and echo (7, the received device-memory fragments
      sent back);
  (b) the same Linux client and a Linux server guest (10.10.0.1, e1000e too: the same NIC model)
      running the same services with socat: discard to /dev/null, a file of random bytes in tmpfs as
      the chargen-like source, cat as echo.
Each transfer is one TCP connection of BENCH_NET_MB MiB (default 64) started by the client with socat,
run against both servers one right after the other, BENCH_NET_ROUNDS rounds (default 3, median kept);
its time is the client's wall clock from connect to the last byte (discard: the server's FIN after the
last byte). For each transfer the run records the host CPU time of both QEMU processes (the server's
and the client's), and the host-DRAM bytes: the appliance's `stats dma` (NIC DMA and CPU copies in
host DRAM), Linux's eth0 byte counters (the frames its e1000e moved through DRAM: a lower bound that
leaves out the copies to and from user space). Prints appliance/Linux ratios and writes them, dated,
with the machine and the load, to docs/bench-net.md.
"""
import contextlib
import hashlib
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib as bl  # noqa: E402  (sets up the lab's import path)
import topo  # noqa: E402
from lab import Lab  # noqa: E402

MB = int(os.environ.get("BENCH_NET_MB", "64"))
ROUNDS = int(os.environ.get("BENCH_NET_ROUNDS", "3"))
NBYTES = MB << 20
CHARGEN_LINE = bytes(range(33, 105)) + b"\r\n"   # RFC 864, as net/tcp/tcp_service.c sends it
SERVER_IP = topo.TARGET_IP                       # the Linux server guest in lab (b)
TRANSFERS = ("discard", "chargen", "echo", "chargen-tso")
# chargen-tso: chargen again with TCP segmentation offload forced on in both servers (`nic tso on`,
# `ethtool -K eth0 tso on`). QEMU 7.2's e1000e then sends IPv4 fragments, not TCP segments, for both
# (docs/platform.md; the appliance's nic.tso = auto keeps it off for that reason): the client reassembles.


def timed(guest, cmd, timeout):
    """Run cmd in guest; return (seconds by the guest's clock around cmd, its output). Raises when it
    exits non-zero."""
    r = guest.run(f"t0=$EPOCHREALTIME; {cmd}; rc=$?; echo T0=$t0 T1=$EPOCHREALTIME; exit $rc",
                  timeout=timeout)
    m = re.search(r"T0=([\d.]+) T1=([\d.]+)", r.out)
    if r.rc != 0 or not m:
        raise bl.BenchError(f"bench-net: {cmd!r} failed (rc {r.rc}): {r.out[-800:]}")
    return float(m.group(2)) - float(m.group(1)), r.out[:m.start()]


def eth_bytes(guest):
    """(rx_bytes, tx_bytes) of the guest's eth0: frame bytes its NIC moved in and out of DRAM."""
    r = guest.run("cat /sys/class/net/eth0/statistics/rx_bytes /sys/class/net/eth0/statistics/tx_bytes",
                  check=True)
    rx, tx = map(int, r.out.split()[:2])
    return rx, tx


def make_blob(guest, path):
    """NBYTES of random bytes at path in the guest's tmpfs; returns their sha256."""
    r = guest.run(f"dd if=/dev/urandom of={path} bs=1M count={MB} iflag=fullblock 2>/dev/null"
                  f" && sha256sum {path}", timeout=120 + MB, check=True)
    return r.out.split()[-2]


def transfer(kind, client, addr, want_echo, want_chargen):
    """One transfer of NBYTES between client and the server at addr; returns seconds. Checks what
    arrived: discard sends nothing back, chargen/echo bring back exactly NBYTES (echo: the same
    sha256 as what went; chargen: want_chargen, the sha256 of the server's stream)."""
    t = 120 + 4 * MB
    if kind == "discard":
        secs, out = timed(client, f"set -o pipefail; socat -T {t} -t {t} - TCP:{addr}:9 </tmp/b.bin | wc -c",
                          t + 30)
        if out.split()[-1] != "0":
            raise bl.BenchError(f"discard at {addr} sent data back: {out[-300:]}")
    elif kind in ("chargen", "chargen-tso"):
        # no pipefail: head closes the pipe after NBYTES and socat dies of it (the appliance's
        # chargen never ends); the hash of the first NBYTES says whether they all arrived
        secs, out = timed(client, f"socat -u TCP:{addr}:19 - 2>/dev/null | head -c {NBYTES} | sha256sum", t + 30)
        if out.split()[-2] != want_chargen:
            raise bl.BenchError(f"chargen at {addr}: the first {NBYTES} bytes hash {out[-200:]!r}, "
                                f"want {want_chargen}")
    else:
        secs, out = timed(client, f"set -o pipefail; socat -T {t} -t {t} - TCP:{addr}:7 </tmp/b.bin | sha256sum",
                          t + 30)
        if out.split()[-2] != want_echo:
            raise bl.BenchError(f"echo at {addr} came back different: {out[-300:]}")
    return secs


class ApplianceSide:
    """Lab (a): a Linux client and the appliance. declare(), then (after lab.start()) ready()."""

    def __init__(self, lab):
        self.lab = lab
        esp = bl.appliance_esp(lab.rundir, "panic = exit\nnet.services = on\n")
        self.dev, self.client = topo.appliance_topology(lab, esp, extra=bl.NAMED_THREADS)

    def ready(self):
        self.dev.expect(re.escape(bl.PROMPT), timeout=180)
        self.app = bl.Console(self.dev)
        self.pids = {"server": bl.qemu_pid(self.dev), "client": bl.qemu_pid(self.client)}
        self.want = make_blob(self.client, "/tmp/b.bin")
        self.chargen_want = hashlib.sha256((CHARGEN_LINE * (NBYTES // len(CHARGEN_LINE) + 1))[:NBYTES]).hexdigest()

    def measure(self, kind):
        """One transfer; its figures."""
        if kind == "chargen-tso" and "tso on" not in self.app.cmd("nic tso on"):
            raise bl.BenchError("the appliance did not turn TSO on")
        c0, d0 = self.app.counters(), bl.dram_counters(self.app)
        meter = bl.CpuMeter(self.pids).start()
        try:
            secs = transfer(kind, self.client, topo.APPLIANCE_IP, self.want, self.chargen_want)
        finally:
            cpu = meter.stop()
            if kind == "chargen-tso":
                self.app.cmd("nic tso probe")   # back to nic.tso = auto's verdict
        c1, d1 = self.app.counters(), bl.dram_counters(self.app)
        d = bl.Console.delta(c1, c0)
        host = bl.dram_delta(d1, d0)["host-dram"]
        rx_in = d["rx_pay_dev"] + d["rx_pay_host"]
        # every byte once at least (a segment the client sent again counts twice)
        if not kind.startswith("chargen") and rx_in < NBYTES:
            raise bl.BenchError(f"{kind}: the appliance counted {rx_in} payload bytes in, sent {NBYTES}")
        moved = NBYTES * (2 if kind == "echo" else 1)   # payload bytes through the appliance
        return dict(secs=secs, cpu=cpu, host=host, dram_per_byte=sum(host) / moved,
                    retransmits=d["retransmits"], timeouts=d["timeouts"], tx_bounce=d["tx_bounce_bytes"])


class LinuxSide:
    """Lab (b): the same Linux client and a Linux server guest on the same NIC model."""

    def __init__(self, lab):
        self.lab = lab
        link = lab.link("link0")
        self.client = lab.guest("initiator", ip=f"{topo.INITIATOR_IP}/24", links=[link])
        self.server = lab.guest("server", ip=f"{SERVER_IP}/24", links=[link])

    def ready(self):
        self.pids = {"server": bl.qemu_pid(self.server), "client": bl.qemu_pid(self.client)}
        self.want = make_blob(self.client, "/tmp/b.bin")
        self.chargen_want = make_blob(self.server, "/tmp/c.bin")
        self.server.run("""
            for s in "-u TCP-LISTEN:9,reuseaddr,fork GOPEN:/dev/null" \\
                     "-U TCP-LISTEN:19,reuseaddr,fork OPEN:/tmp/c.bin,rdonly" \\
                     "-t 60 TCP-LISTEN:7,reuseaddr,fork EXEC:cat"; do
              setsid socat $s </dev/null >/dev/null 2>&1 &
            done
            for i in $(seq 100); do
              [ "$(ss -Hltn '( sport = :9 or sport = :19 or sport = :7 )' | wc -l)" = 3 ] && exit 0
              sleep 0.1
            done
            ss -ltn; exit 1""", timeout=60, check=True)

    def tso(self, on):
        """TSO on or off in the server's e1000e, then wait until the link carries traffic again."""
        self.server.run(f"ethtool -K eth0 tso {'on' if on else 'off'}", check=True)
        self.server.run(f"for i in $(seq 50); do ping -c1 -W1 {topo.INITIATOR_IP} >/dev/null && exit 0; done; exit 1",
                        timeout=90, check=True)

    def measure(self, kind):
        """One transfer; its figures."""
        if kind == "chargen-tso":
            self.tso(True)
        e0 = eth_bytes(self.server)
        meter = bl.CpuMeter(self.pids).start()
        try:
            secs = transfer(kind, self.client, SERVER_IP, self.want, self.chargen_want)
        finally:
            cpu = meter.stop()
            e1 = eth_bytes(self.server)
            if kind == "chargen-tso":
                self.tso(False)
        moved = NBYTES * (2 if kind == "echo" else 1)
        nic = (e1[0] - e0[0]) + (e1[1] - e0[1])
        return dict(secs=secs, cpu=cpu, nic=nic, dram_per_byte=nic / moved)


def run_labs():
    """Boot both labs, then ROUNDS rounds of every transfer, the two servers one right after the
    other (alternating which goes first), so that both see the same host load. Returns
    ({kind: median-rate run}, {kind: [rates]}) per side, and the labs' UDP drops."""
    runs = {"appliance": {k: [] for k in TRANSFERS}, "linux": {k: [] for k in TRANSFERS}}
    with contextlib.ExitStack() as stack:
        labs = {"appliance": stack.enter_context(Lab("bench-net-appliance", capture=False)),
                "linux": stack.enter_context(Lab("bench-net-linux", capture=False))}
        sides = {"appliance": ApplianceSide(labs["appliance"]), "linux": LinuxSide(labs["linux"])}
        for name in sides:
            labs[name].start()
        for side in sides.values():
            side.ready()
        for rnd in range(ROUNDS):
            order = ["appliance", "linux"] if rnd % 2 == 0 else ["linux", "appliance"]
            for kind in TRANSFERS:
                for name in order:
                    r = sides[name].measure(kind)
                    runs[name][kind].append(r)
                    print(f"bench-net: round {rnd + 1} {kind} {name}: {NBYTES / r['secs'] / 1e6:.1f} MB/s", flush=True)
        drops = {n: lab.rcvbuf_errors() for n, lab in labs.items()}
    out, rates = {}, {}
    for name, per in runs.items():
        out[name] = {k: sorted(v, key=lambda r: r["secs"])[len(v) // 2] for k, v in per.items()}
        rates[name] = {k: [NBYTES / r["secs"] / 1e6 for r in v] for k, v in per.items()}
        out[name]["boot"] = drops[name]
    return out["appliance"], out["linux"], rates


def main():
    bl.lab_setup()
    t_all = time.monotonic()
    load0 = bl.loadavg()
    app, lin, rates = run_labs()
    load1 = bl.loadavg()
    mbs = {k: (NBYTES / app[k]["secs"] / 1e6, NBYTES / lin[k]["secs"] / 1e6) for k in TRANSFERS}

    def busy(r, who):   # % of a host core that QEMU process used over the transfer
        return f"{r['cpu'][who] / r['cpu']['wall'] * 100:.0f} %"

    def ms_per_mb(r, who):   # host CPU ms of that QEMU process per MB of payload each way
        return r["cpu"][who] * 1000 / (NBYTES / 1e6)

    lines = [
        f"# Network benchmark: the appliance's TCP/IP vs Linux ({bl.now_utc()})",
        "",
        f"Machine: {bl.machine()}; appliance and scripts at {bl.revision()}. Host load average (1/5/15 min) "
        f"before / after: {load0} / {load1}; other helpers' QEMU runs share the 2 cores, so figures vary by "
        "tens of percent between runs: compare within one run. Both labs run at once (the idle one costs a "
        f"few % of a core) and each transfer goes to both servers one right after the other, {ROUNDS} rounds "
        "(alternating which goes first); the tables show each side's median round.",
        "",
        f"`make bench BENCH=net` (tools/bench/net.py), {MB} MiB per transfer, one TCP connection each, started "
        "by the same Linux client guest (Linux 6.1, e1000e, TSO off) with socat. Server: (a) the appliance "
        "(e1000e behind the PCIe switch, header split into nvme0's CMB) and its discard/chargen/echo services, "
        "(b) a Linux 6.1 guest on the same emulated NIC (e1000e, dgram link, no capture) with socat servers "
        "(discard to /dev/null, a tmpfs file as chargen, cat as echo). Appliance -> Linux is chargen "
        "(payload written by the CPU into host DRAM, by design) and echo (the received device-memory "
        "fragments sent back, both directions at once).",
        "",
        "| transfer | appliance MB/s | Linux MB/s | appliance/Linux | server QEMU CPU ms/MB (appliance / Linux) "
        "| ratio | of which vCPU (appliance / Linux) | client QEMU CPU ms/MB (with appliance / with Linux) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    names = {"discard": "Linux -> server, discard (9)", "chargen": "server -> Linux, chargen (19)",
             "echo": "echo (7), each way",
             "chargen-tso": "server -> Linux, chargen (19), TSO forced on in both servers (QEMU 7.2: IPv4 fragments)"}
    for k in TRANSFERS:
        a, b = mbs[k]
        sa, sl = ms_per_mb(app[k], "server"), ms_per_mb(lin[k], "server")
        ca, cl = ms_per_mb(app[k], "client"), ms_per_mb(lin[k], "client")
        va, vl = ms_per_mb(app[k], "server.vcpu"), ms_per_mb(lin[k], "server.vcpu")
        lines.append(f"| {names[k]} | {a:.1f} | {b:.1f} | {bl.ratio(a, b)} | {sa:.1f} / {sl:.1f} | "
                     f"{bl.ratio(sa, sl)} | {va:.1f} / {vl:.1f} | {ca:.1f} / {cl:.1f} |")
    lines += [
        "",
        "Every round, MB/s: " + "; ".join(
            f"{k} appliance {', '.join(f'{x:.1f}' for x in rates['appliance'][k])}, Linux "
            f"{', '.join(f'{x:.1f}' for x in rates['linux'][k])}" for k in TRANSFERS) + ".",
        "",
        "The last row forces TCP segmentation offload on in both servers (the appliance's `nic tso on`, "
        "Linux's `ethtool -K eth0 tso on`); QEMU 7.2's e1000e then sends IPv4 fragments of each TSO frame "
        "instead of TCP segments and the client reassembles them, which is why the appliance's nic.tso = auto "
        "keeps it off (its loopback probe sees the fragments). The row shows what fewer, larger frames save "
        "under that emulation; real 82574L segmentation would not load the client with reassembly.",
        "",
        "The receiving QEMU process is the server's for discard, the client's for chargen, both for echo. "
        "CPU time is /proc/PID/stat utime+stime of the whole QEMU process (vCPU and I/O threads) over "
        "the transfer, divided by the MB moved one way; of which vCPU: the TCG vCPU thread alone (guest "
        "code and its device register accesses), the rest is QEMU's device work (dgram backend, NIC DMA).",
        "",
        "Busy, in % of one host core over each transfer (server QEMU / client QEMU): " + "; ".join(
            f"{k}: appliance lab {busy(app[k], 'server')} / {busy(app[k], 'client')}, Linux lab "
            f"{busy(lin[k], 'server')} / {busy(lin[k], 'client')}" for k in TRANSFERS)
        + ". A transfer whose rate is the same in both labs while neither server is busy is limited by "
        "the Linux client (its e1000e receive path under TCG is the slow one), not by the server.",
        "",
        "Host-DRAM bytes per payload byte on the server side (echo: per byte in plus byte out):",
        "",
        "| transfer | appliance: host-DRAM bytes (NIC DMA to / from DRAM, CPU) | per payload byte "
        "| Linux: e1000e frame bytes (lower bound) | per payload byte |",
        "|---|---|---|---|---|",
    ]
    for k in TRANSFERS:
        h = app[k]["host"]
        lines.append(f"| {k} | {h[0]} / {h[1]} / {h[2]} | {app[k]['dram_per_byte']:.3f} | {lin[k]['nic']} | "
                     f"{lin[k]['dram_per_byte']:.3f} |")
    lines += [
        "",
        "The appliance's figure is everything it counts in host DRAM (`stats dma`: headers, the NIC's "
        "descriptor fetches and write-backs in DRAM, payload DMA and CPU reads/writes). Linux's is only what its e1000e moved "
        "through DRAM (eth0 rx_bytes + tx_bytes); each payload byte is also copied between the socket and "
        "socat's buffer (at least two more DRAM touches), so Linux's true figure is higher.",
        f"Appliance TCP in the median rounds: retransmits {sum(app[k]['retransmits'] for k in TRANSFERS)} "
        f"(timeouts {sum(app[k]['timeouts'] for k in TRANSFERS)}); tx bounced through DRAM "
        f"{sum(app[k]['tx_bounce'] for k in TRANSFERS)} B. Host UDP receive-buffer drops (dgram links): "
        f"appliance lab {app['boot']}, Linux lab {lin['boot']}. Bench wall time {time.monotonic() - t_all:.0f} s.",
        "",
    ]
    bl.write_doc("bench-net.md", "\n".join(lines))


if __name__ == "__main__":
    main()
