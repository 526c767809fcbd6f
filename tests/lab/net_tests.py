"""tests/lab/net_tests.py: interop tests of the appliance's NIC (e1000e header split) and TCP/IP stack
against a real Linux peer (issue 7), run by tests/lab/run-tests after the baseline tests.

Topology (a): a Linux guest (10.10.0.2) and the appliance (10.10.0.10, net.address's default) on one
captured lab link. One appliance lab boots on the first net test and every net test shares it. The
Linux side drives the appliance's TCP services (discard 9, echo 7, chargen 19) with socat, which
half-closes at EOF on stdin (shutdown(SHUT_WR)) and then waits for the appliance's FIN, so a transfer
ends when the appliance has seen every byte (discard) or sent every byte back (echo). Payloads are
random files in the guest's tmpfs; what comes back is compared by sha256sum; what the appliance
received is compared with its own payload counters. The appliance's console counters (`nic`, `tcp`)
are read before and after each transfer to check where the payload went (device memory) and what
host DRAM carried (headers).

Sizes: LAB_NET_MB (default 32) MiB per transfer on the captured link; `net_bulk256` moves 256 MiB each
way (discard, echo) and `net_netem` LAB_NETEM_MB (default 256) MiB each way under netem, on an
uncaptured appliance lab (a capture of that would be ~800 MB): one lab for both when they run in one
lane, each its own when run-tests runs net_netem in its second lane (each lane has its own).
"""
import collections
import hashlib
import os
import re
import shutil
import subprocess
import time

import capture
import topo
from lab import CommandTimeout, Lab, LabError

MB = int(os.environ.get("LAB_NET_MB", "32"))
NETEM_MB = int(os.environ.get("LAB_NETEM_MB", "256"))  # per direction under netem
APP = topo.APPLIANCE_IP
PROMPT = "p2pstore> "
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Header bytes a frame may put in host DRAM per payload byte on the split path: Ethernet 14 + IPv4 20
# + TCP 20..32 (timestamps) = 66 B in front of a full 1448..1460 B MSS is 0.046. Bulk transfers are
# almost all full segments; 0.06 leaves room for the handful of short ones and no room for payload.
HEADERS_ONLY = 0.06
CHARGEN_LINE = bytes(range(33, 105)) + b"\r\n"   # RFC 864 line as net/tcp/tcp_service.c sends it


def expect(cond, msg):
    """Fail the test with msg unless cond."""
    if not cond:
        raise AssertionError(msg)


class Appliance:
    """The appliance's console as a command runner."""

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
        """The NIC's and TCP's counters by memory class, from `nic` and `tcp`."""
        nic, tcp = self.cmd("nic"), self.cmd("tcp")
        c = {}

        def grab(rx, text, names):
            m = re.search(rx, text)
            if not m:
                raise LabError(f"appliance counters not found ({rx!r}) in: {text[-1500:]}")
            c.update(zip(names, map(int, m.groups())))
        grab(r"rx dma: header buffers (\d+) B \(DRAM\), data buffers DRAM (\d+) B device (\d+) B", nic,
             ("rx_hdr", "rx_data_host", "rx_data_dev"))
        grab(r"rx: frames (\d+) .* csum ok (\d+) bad (\d+) dropped (\d+)", nic,
             ("rx_frames", "rx_csum_ok", "rx_csum_bad", "rx_dropped"))
        grab(r"tx: frames (\d+) ", nic, ("tx_frames",))
        grab(r"tx dma: NIC read DRAM (\d+) B device (\d+) B; bounced to DRAM (\d+) frames (\d+) B", nic,
             ("tx_read_host", "tx_read_dev", "tx_bounced", "tx_bounce_bytes"))
        grab(r"payload rx host-dram (\d+) device (\d+); tx host-dram (\d+) device (\d+)", tcp,
             ("rx_pay_host", "rx_pay_dev", "tx_pay_host", "tx_pay_dev"))
        grab(r"segs in (\d+) out (\d+) bad-csum (\d+) bad-header (\d+)", tcp,
             ("segs_in", "segs_out", "tcp_bad_csum", "tcp_bad_header"))
        grab(r"retransmits (\d+) fast (\d+) timeouts (\d+) dup (\d+) ooo (\d+) ooo-drops (\d+)", tcp,
             ("retransmits", "fast_retransmits", "timeouts", "dup", "ooo", "ooo_drops"))
        grab(r"accepted (\d+)", tcp, ("accepted",))
        grab(r"sack blocks-out (\d+) dsack-out (\d+); rx budget: starved (\d+) window-kicks (\d+) "
             r"budget-drops (\d+); tx segments cut at device-gather limits (\d+)", tcp,
             ("sack_blocks", "dsack", "starved", "window_kicks", "budget_drops", "tx_cut"))
        c["connections"] = open_connections(tcp)
        return c

    @staticmethod
    def delta(after, before):
        return {k: after[k] - before.get(k, 0) for k in after}


class NetLab:
    """The appliance lab (topology (a)), booted once on first use; closed by close()."""

    def __init__(self, name="tests-net", capture_link=True):
        self.name, self.capture_link = name, capture_link
        self.lab = None
        self._booted = None
        self.moved = {}      # what the tests moved: name -> bytes (for the header-split summary)

    def start(self):
        if self._booted is None:
            try:
                from baseline_tests import appliance_esp
                esp_src = appliance_esp()
                self.lab = Lab(self.name, capture=self.capture_link)
                esp = os.path.join(self.lab.rundir, "esp")   # qemu-run serves it writable: a copy
                shutil.rmtree(esp, ignore_errors=True)
                shutil.copytree(esp_src, esp)
                os.makedirs(os.path.join(esp, "p2pstore"), exist_ok=True)
                with open(os.path.join(esp, "p2pstore", "p2pstore.cfg"), "w") as f:
                    f.write("panic = exit\nnet.services = on\n")   # discard/echo/chargen are off by default
                dev, linux = topo.appliance_topology(self.lab, esp)
                t0 = time.monotonic()
                self.lab.start()
                dev.expect(re.escape(PROMPT), timeout=120)
                self.boot_secs = time.monotonic() - t0
                self._booted = (Appliance(dev), linux)
            except Exception as e:
                self._booted = e
        if isinstance(self._booted, Exception):
            raise LabError(f"appliance lab did not boot: {self._booted}")
        return self._booted

    def close(self):
        if self.lab:
            self.lab.close()


def net(s):
    """The session's appliance lab (created on first use; run-tests closes it)."""
    if getattr(s, "net", None) is None:
        s.net = NetLab(s.shared_name("net"))
        s.extra_rundirs.append(os.path.join(topo.TOP, "build", "lab", s.net.name))
    return s.net.start()


def open_connections(tcp):
    """The connections (not listeners) in the appliance's `tcp` output."""
    return len([ln for ln in tcp.splitlines()
                if re.match(r"\s+\d+\.\d+\.\d+\.\d+\s*:\d+", ln) and " LISTEN " not in ln])


def tcp_sample(app):
    """Open connections, payload into device memory each way and connections accepted, from one `tcp`."""
    tcp = app.cmd("tcp")
    m = re.search(r"payload rx host-dram \d+ device (\d+); tx host-dram \d+ device (\d+)", tcp)
    a = re.search(r"accepted (\d+)", tcp)
    if not m or not a:
        raise LabError(f"appliance tcp counters not found in: {tcp[-1500:]}")
    return {"connections": open_connections(tcp), "rx_pay_dev": int(m.group(1)),
            "tx_pay_dev": int(m.group(2)), "accepted": int(a.group(1))}


def make_blob(linux, path, mb):
    """A file of mb MiB of random bytes in the guest's tmpfs; returns its sha256."""
    r = linux.run(f"dd if=/dev/urandom of={path} bs=1M count={mb} iflag=fullblock 2>&1 >/dev/null"
                  f" && sha256sum {path}", timeout=60 + mb)
    expect(r.rc == 0, f"could not make {path}: {r.out}")
    return r.out.split()[-2]


def appliance_state(app):
    """The appliance's `tcp` and `nic` output, for a failure message."""
    try:
        return f"appliance tcp:\n{app.cmd('tcp')}\nappliance nic:\n{app.cmd('nic')}"
    except Exception as e:  # noqa: BLE001 - the console may be what is broken
        return f"(appliance console does not answer: {e})"


def socat_to(linux, port, src, timeout, sink="sha256sum", app=None):
    """Send file src to the appliance's port and pipe what comes back into sink; half-close at EOF and
    wait for the appliance's FIN. Returns (Result, seconds the transfer took). On a timeout the
    failure carries the appliance's tcp/nic state (and the Linux socket's)."""
    try:
        r, secs = _socat_to(linux, port, src, timeout, sink)
    except CommandTimeout as e:
        ss = linux.run(f"ss -tni dst {APP}; tc -s qdisc show dev eth0", timeout=30).out
        raise AssertionError(f"transfer to port {port} stalled: {e}\nLinux:\n{ss}\n"
                             f"{appliance_state(app) if app else ''}")
    if r.rc != 0 and app:
        r.out += "\n" + appliance_state(app)
    return r, secs


def _socat_to(linux, port, src, timeout, sink):
    r = linux.run(f"set -o pipefail; t0=$EPOCHREALTIME;"
                  f" socat -T {timeout} -t {timeout} - TCP:{APP}:{port} <{src} | {sink};"
                  f" rc=$?; echo T0=$t0 T1=$EPOCHREALTIME; exit $rc", timeout=timeout + 30)
    m = re.search(r"T0=([\d.]+) T1=([\d.]+)", r.out)
    if m:
        r.out = r.out[:m.start()]
    return r, float(m.group(2)) - float(m.group(1)) if m else r.secs


def mbps(nbytes, secs):
    return nbytes / secs / 1e6 if secs > 0 else 0.0


def linux_retrans(linux):
    """Linux's count of retransmitted TCP segments (TcpRetransSegs)."""
    m = re.search(r"TcpRetransSegs\s+(\d+)", linux.run("nstat -az TcpRetransSegs").out)
    return int(m.group(1)) if m else 0


def expect_payload(tag, got, want, resent, exact, mss=1460):
    """The appliance's payload byte count: every byte once, plus at most what Linux sent again
    (resent segments of up to mss bytes: a frame the link lost while the appliance's ring was
    full, an RTO under TCG load); with exact, nothing more. Duplication on the link (netem) lifts
    the upper bound."""
    expect(got >= want and (not exact or got <= want + resent * mss),
           f"{tag}: the appliance counted {got} payload bytes in, sent {want}, Linux retransmitted "
           f"{resent} segments")


def discard(app, linux, mb, tag, exact=True, blob="/tmp/d.bin"):
    """mb MiB to the discard service (from blob, made here unless given as (path, sha256)). socat's
    clean end proves the appliance took every byte in order (it closes only after the FIN, which
    follows the last byte). Its TCP counts the payload bytes that arrived: mb MiB plus Linux's
    retransmissions on a clean link (exact), at least that with duplication. Returns (delta
    counters, seconds)."""
    path = blob[0] if isinstance(blob, tuple) else blob
    if not isinstance(blob, tuple):
        make_blob(linux, path, mb)
    before = app.counters()
    retrans0 = linux_retrans(linux)
    r, secs = socat_to(linux, 9, path, 120 + 4 * mb, sink="wc -c", app=app)
    after = app.counters()
    d = Appliance.delta(after, before)
    expect(r.rc == 0, f"{tag}: socat to discard failed (rc {r.rc}): {r.out[-800:]}")
    expect(r.out.split()[0] == "0", f"{tag}: discard sent data back: {r.out[-300:]}")
    d["linux_retrans"] = linux_retrans(linux) - retrans0
    expect_payload(tag, d["rx_pay_dev"] + d["rx_pay_host"], mb << 20, d["linux_retrans"], exact)
    return d, secs


def echo(app, linux, mb, tag, exact=True, blob="/tmp/e.bin", mss=1460):
    """mb MiB through the echo service (from blob, made here unless given as (path, sha256)): what
    comes back must hash like what went. Returns (delta counters, seconds)."""
    path, want = blob if isinstance(blob, tuple) else (blob, make_blob(linux, blob, mb))
    before = app.counters()
    retrans0 = linux_retrans(linux)
    r, secs = socat_to(linux, 7, path, 120 + 8 * mb, app=app)
    after = app.counters()
    d = Appliance.delta(after, before)
    expect(r.rc == 0, f"{tag}: socat to echo failed (rc {r.rc}): {r.out[-800:]}")
    got = r.out.split()[0]
    expect(got == want, f"{tag}: echo of {mb} MiB came back as sha256 {got}, sent {want}")
    d["linux_retrans"] = linux_retrans(linux) - retrans0
    expect_payload(tag, d["rx_pay_dev"] + d["rx_pay_host"], mb << 20, d["linux_retrans"], exact, mss)
    return d, secs


def test_net_ping(s):
    """The Linux guest pings the appliance (and the appliance's own ping reaches the Linux guest)."""
    app, linux = net(s)
    r = linux.run(f"ping -c 5 -W 5 {APP}", timeout=60)
    expect(r.rc == 0 and " 0% packet loss" in r.out, f"ping of the appliance failed: {r.out}")
    r2 = linux.run(f"ping -c 20 -i 0.05 -s 1400 -W 5 {APP}", timeout=60)
    expect(r2.rc == 0 and " 0% packet loss" in r2.out, f"1400-byte ping of the appliance failed: {r2.out}")
    app.cmd(f"ping {topo.INITIATOR_IP} 3")
    m = app.dev.expect(r"ping \S+: (\d+) sent, (\d+) received", timeout=30)
    expect(m.group(1) == "3" and m.group(2) == "3", f"appliance ping of the Linux guest: {m.group(0)}")
    rtt = re.search(r"min/avg/max = ([\d.]+)/([\d.]+)", r.out)
    return f"5 + 20 (1400 B) echo requests answered, avg {rtt.group(2) if rtt else '?'} ms; appliance -> Linux 3/3"


def test_net_discard(s):
    """LAB_NET_MB MiB Linux -> appliance discard (port 9): every byte counted, in device memory."""
    app, linux = net(s)
    d, secs = discard(app, linux, MB, "discard")
    expect(d["rx_pay_host"] == 0, f"discard: {d['rx_pay_host']} payload bytes landed in host DRAM")
    s.net.moved["discard"] = MB << 20
    return (f"{MB} MiB in {secs:.1f} s = {mbps(MB << 20, secs):.1f} MB/s; Linux retransmits "
            f"{d['linux_retrans']}")


def test_net_echo(s):
    """LAB_NET_MB MiB through the echo service (port 7), sha256 equal both ways."""
    app, linux = net(s)
    d, secs = echo(app, linux, MB, "echo")
    s.net.moved["echo"] = MB << 20
    return (f"{MB} MiB each way in {secs:.1f} s = {mbps(MB << 20, secs):.1f} MB/s; retransmits "
            f"{d['retransmits']} (timeouts {d['timeouts']}), Linux {d['linux_retrans']}")


def test_net_chargen(s, mb=8):
    """8 MiB from the chargen service (port 19): the byte stream is exactly the RFC 864 line repeated."""
    app, linux = net(s)
    n = mb << 20
    want = hashlib.sha256((CHARGEN_LINE * (n // len(CHARGEN_LINE) + 1))[:n]).hexdigest()
    r = linux.run(f"set -o pipefail; socat -u TCP:{APP}:19 - 2>/dev/null | head -c {n} | sha256sum",
                  timeout=180)
    got = r.out.split()[0] if r.out.split() else ""
    expect(got == want, f"chargen: the first {mb} MiB hash {got}, want {want}: {r.out[-300:]}")
    return f"{mb} MiB in {r.secs:.1f} s (command time)"


NETEM = "loss 5% duplicate 5% delay 2ms reorder 25% 50%"
STALL_SECS = 60


def test_net_netem(s, mb=None):
    """256 MiB to discard and 256 MiB through echo with 5 % loss, 5 % duplication and reordering on the
    Linux side (tc netem on eth0), on the lane's uncaptured lab (bulk(); a capture would be ~800 MB):
    nothing lost, nothing corrupted; the appliance saw duplicates and out-of-order segments.
    Under this loss each connection's congestion window, not the appliance's CPU, sets the pace
    (2 MB/s against 16 MB/s on a clean link), so the two transfers run at once on two connections
    from one blob in the guest's tmpfs (512 MiB: one 256 MiB blob at a time): half the wall time of
    running them one after the other, the same bytes under the same netem."""
    app, linux = bulk(s)
    mb = mb or NETEM_MB
    linux.run("rm -f /tmp/d.bin /tmp/e.bin /tmp/n.bin /tmp/n.discard")
    want = make_blob(linux, "/tmp/n.bin", mb)
    linux.run(f"tc qdisc replace dev eth0 root netem {NETEM}", check=True)
    tmo = 120 + 8 * mb
    try:
        before = app.counters()
        retrans0 = linux_retrans(linux)
        # discard in the background (its byte count back from the appliance and timing into a file),
        # echo in the foreground through sha256sum; both start from the same blob.
        try:
            r = linux.run(
                f"( t0=$EPOCHREALTIME; socat -T {tmo} -t {tmo} - TCP:{APP}:9 </tmp/n.bin | wc -c"
                f" >/tmp/n.discard; rc=${{PIPESTATUS[0]}}; echo \"D rc=$rc T0=$t0 T1=$EPOCHREALTIME\""
                f" >>/tmp/n.discard ) & dpid=$!;"
                f" t0=$EPOCHREALTIME; socat -T {tmo} -t {tmo} - TCP:{APP}:7 </tmp/n.bin | sha256sum;"
                f" rc=${{PIPESTATUS[0]}}; echo \"E rc=$rc T0=$t0 T1=$EPOCHREALTIME\"; wait $dpid;"
                f" cat /tmp/n.discard", timeout=tmo + 30)
        except CommandTimeout as e:
            ss = linux.run(f"ss -tni dst {APP}; tc -s qdisc show dev eth0", timeout=30).out
            raise AssertionError(f"netem transfers stalled: {e}\nLinux:\n{ss}\n{appliance_state(app)}")
        d = Appliance.delta(app.counters(), before)
        resent = linux_retrans(linux) - retrans0
        q = linux.run("tc -s qdisc show dev eth0").out
    finally:
        linux.run("tc qdisc del dev eth0 root", check=False)
        linux.run("rm -f /tmp/n.bin /tmp/n.discard", check=False)
    ends = {m.group(1): (int(m.group(2)), float(m.group(4)) - float(m.group(3)))
            for m in re.finditer(r"([DE]) rc=(\d+) T0=([\d.]+) T1=([\d.]+)", r.out)}
    expect(set(ends) == {"D", "E"}, f"netem: a transfer did not report its end: {r.out[-800:]}\n"
                                    f"{appliance_state(app)}")
    expect(ends["D"][0] == 0, f"netem discard: socat failed (rc {ends['D'][0]}): {r.out[-800:]}\n"
                              f"{appliance_state(app)}")
    expect(ends["E"][0] == 0, f"netem echo: socat failed (rc {ends['E'][0]}): {r.out[-800:]}\n"
                              f"{appliance_state(app)}")
    got = re.search(r"^([0-9a-f]{64})\s", r.out, re.M)
    expect(got and got.group(1) == want,
           f"netem echo: {mb} MiB came back as sha256 {got.group(1) if got else '?'}, sent {want}")
    back = re.search(r"^(\d+)\s*\nD rc=", r.out, re.M)
    expect(back and back.group(1) == "0", f"netem discard: discard sent data back: {r.out[-300:]}")
    # The two streams' payload bytes at the appliance: each byte of both at least once (duplicates
    # and Linux's retransmissions on top); the socat ends and the sha256 prove each stream whole.
    expect_payload("netem discard + echo", d["rx_pay_dev"] + d["rx_pay_host"], 2 * (mb << 20), resent,
                   exact=False)
    drops = re.search(r"dropped (\d+)", q)
    expect(drops and int(drops.group(1)) > 0, f"netem dropped nothing: {q}")
    expect(d["dup"] > 0 and d["ooo"] > 0,
           f"the appliance saw no duplicate ({d['dup']}) or out-of-order ({d['ooo']}) segment")
    s1, s2 = ends["D"][1], ends["E"][1]
    return (f"{mb} MiB discard {s1:.1f} s ({mbps(mb << 20, s1):.1f} MB/s) alongside {mb} MiB echo "
            f"{s2:.1f} s ({mbps(mb << 20, s2):.1f} MB/s each way) with '{NETEM}', sha256 equal: netem "
            f"dropped {drops.group(1)}; appliance dup {d['dup']} ooo {d['ooo']} ooo-drops "
            f"{d['ooo_drops']} retransmits {d['retransmits']} (timeouts {d['timeouts']})")


def test_net_concurrent(s, conns=100, kib=256):
    """100 concurrent echo connections of 256 KiB each, each with its own random data: every one comes
    back intact, the appliance held many at once, and all are closed at the end."""
    app, linux = net(s)
    linux.run(f"rm -rf /tmp/cc; mkdir /tmp/cc; for i in $(seq {conns}); do"
              f" dd if=/dev/urandom of=/tmp/cc/$i bs=1K count={kib} 2>/dev/null; done;"
              f" cd /tmp/cc && sha256sum $(seq {conns}) >want", timeout=120, check=True)
    before = app.counters()
    retrans0 = linux_retrans(linux)
    t0 = time.monotonic()
    linux.run(f"cd /tmp/cc; rm -f done; ( for i in $(seq {conns}); do"
              f" ( socat -T 300 -t 300 - TCP:{APP}:7 <$i >$i.out 2>$i.err; echo $? >$i.rc ) & done;"
              f" wait; touch done ) >/dev/null 2>&1 &", check=True)
    # The peak is sampled: one `tcp` per round (what it needs: open connections, payload, accepted)
    # rather than the full counters, and Linux asked whether all are done every 4th round, so the
    # samples come ~3x as often as with both (the peak was 55-63 against a bound of 50).
    peak, last, t_progress, n = 0, None, time.monotonic(), 0
    while True:
        c = tcp_sample(app)
        peak = max(peak, c["connections"])
        n += 1
        if n % 4 == 0 and linux.run("[ -e /tmp/cc/done ]").rc == 0:
            break
        moved = (c["rx_pay_dev"], c["tx_pay_dev"], c["accepted"])
        if moved != last:
            last, t_progress = moved, time.monotonic()
        if time.monotonic() - t_progress > STALL_SECS:
            state = appliance_state(app)
            left = linux.run("cd /tmp/cc; ls *.rc 2>/dev/null | wc -l; ss -tn state established | wc -l").out
            raise AssertionError(
                f"concurrent echo stalled: no payload moved and no connection accepted for {STALL_SECS} s "
                f"({c['accepted'] - before['accepted']} of {conns} accepted, up to {peak} open at once; "
                f"finished/Linux established: {left.split()})\n{state}")
        time.sleep(0.1)
    secs = time.monotonic() - t0
    r = linux.run(f"cd /tmp/cc; bad=0; for i in $(seq {conns}); do"
                  f" [ \"$(cat $i.rc)\" = 0 ] || {{ echo \"conn $i: socat rc $(cat $i.rc): $(cat $i.err)\"; bad=1; }};"
                  f" mv $i.out $i; done; sha256sum -c want | grep -v ': OK$'; echo bad=$bad", timeout=120)
    if not (r.out.strip().endswith("bad=0") and r.out.strip() == "bad=0"):
        # the appliance's admission and reset counters say whether it refused or evicted one
        counters = "\n".join(ln for ln in app.cmd("tcp").splitlines() if not ln.startswith("  "))
        expect(False, f"concurrent echo: failures: {r.out[-1500:]}\nappliance tcp counters:\n{counters}")
    for _ in range(50):  # the appliance closes each after its FIN: give the last ACKs a moment
        after = app.counters()
        if after["connections"] == 0:
            break
        time.sleep(0.2)
    d = Appliance.delta(after, before)
    expect(d["accepted"] == conns, f"the appliance accepted {d['accepted']} connections, want {conns}")
    expect(after["connections"] == 0, f"{after['connections']} connections left open on the appliance: "
                                      f"{app.cmd('tcp')[-1500:]}")
    # Every byte once, plus what Linux sent again (a frame the link dropped while the appliance's
    # ring was busy, an RTO under TCG load): no more.
    resent = linux_retrans(linux) - retrans0
    expect_payload("concurrent echo", d["rx_pay_dev"] + d["rx_pay_host"], conns * kib * 1024, resent, True)
    expect(peak >= conns // 2, f"only {peak} connections were open at once on the appliance")
    s.net.moved["concurrent"] = conns * kib * 1024
    return (f"{conns} x {kib} KiB echoed intact in {secs:.1f} s, up to {peak} connections open at "
            f"once on the appliance; appliance retransmits {d['retransmits']}, Linux retransmits {resent}; "
            f"windows held small for want of buffers {d['starved']} times, window updates {d['window_kicks']}, "
            f"budget drops {d['budget_drops']}")


def test_net_split(s, mb=None):
    """Header split verified from the appliance's counters during a discard and an echo transfer:
    received payload lands in device memory and host DRAM carries only headers, both ways."""
    app, linux = net(s)
    mb = mb or max(4, MB // 2)
    d1, _ = discard(app, linux, mb, "split discard")
    d2, _ = echo(app, linux, mb, "split echo")
    pay = mb << 20
    notes = []
    for tag, d in (("discard", d1), ("echo", d2)):
        expect(d["rx_pay_host"] == 0 and d["rx_data_host"] == 0,
               f"{tag}: payload in host DRAM on receive: tcp {d['rx_pay_host']} B, NIC data buffers "
               f"{d['rx_data_host']} B")
        expect(d["rx_data_dev"] >= pay, f"{tag}: only {d['rx_data_dev']} B into device memory for {pay} B")
        rx = d["rx_hdr"] / pay
        expect(rx <= HEADERS_ONLY, f"{tag}: receive put {d['rx_hdr']} B in host DRAM for {pay} payload "
                                   f"bytes ({rx:.3f} per payload byte, headers only is <= {HEADERS_ONLY})")
        notes.append(f"{tag} rx {rx:.3f}")
    # Echo sends the received device-memory fragments back: the NIC should gather the payload from
    # device memory behind headers read from DRAM.
    d = d2
    expect(d["tx_pay_host"] == 0, f"echo: the stack sent {d['tx_pay_host']} payload bytes from host DRAM")
    tx = d["tx_read_host"] / pay
    expect(tx <= HEADERS_ONLY,
           f"echo: the NIC read {d['tx_read_host']} B from host DRAM ({tx:.3f} per payload byte; "
           f"{d['tx_bounced']} frames / {d['tx_bounce_bytes']} B bounced through DRAM) and "
           f"{d['tx_read_dev']} B from device memory to send {pay} payload bytes")
    notes.append(f"echo tx {tx:.3f}")
    # TCP cuts its segments at the NIC's device-gather limits (one device piece of <= 4 KiB per frame
    # in QEMU 7.2): no echoed frame needs the driver's DRAM bounce.
    expect(d["tx_bounced"] == 0, f"echo: {d['tx_bounced']} frames ({d['tx_bounce_bytes']} B) bounced through DRAM")
    total = (d1["rx_hdr"] + d2["rx_hdr"] + d2["tx_read_host"]) / (3 * pay)
    return f"host-DRAM bytes per payload byte: {', '.join(notes)}; overall {total:.3f} ({mb} MiB each)"


def test_net_jumbo(s, mb=None):
    """MTU 9000 on both sides (the appliance's `nic mtu`, Linux's `ip link`): an echo transfer comes back
    intact, payload in device memory both ways, and no frame bounced through DRAM although every
    received 8960-byte segment is longer than the 4 KiB the NIC gathers from device memory in one
    piece (TCP cuts the echoed segments at that limit)."""
    app, linux = net(s)
    mb = mb or max(4, MB // 4)
    out = app.cmd("nic mtu 9000")
    expect("mtu 9000" in out, f"appliance: nic mtu 9000: {out}")
    try:
        linux.run("ip link set eth0 mtu 9000", check=True)
        # The guest's e1000e resets its link on an MTU change: wait until it carries traffic again.
        r = linux.run(f"for i in $(seq 30); do ping -c 1 -W 1 {APP} >/dev/null && exit 0; done; exit 1",
                      timeout=60)
        expect(r.rc == 0, "no ping reply from the appliance after the MTU change")
        # a segment Linux sends again may be a whole jumbo one (MSS 8960)
        d, secs = echo(app, linux, mb, "jumbo echo", mss=8960)
    finally:
        linux.run("ip link set eth0 mtu 1500", check=False)
        for _ in range(50):   # the MTU changes once the stack holds no receive buffer
            if "mtu 1500" in app.cmd("nic mtu 1500"):
                break
            time.sleep(0.2)
    pay = mb << 20
    expect(d["rx_pay_host"] == 0 and d["tx_pay_host"] == 0,
           f"jumbo echo: payload through host DRAM: rx {d['rx_pay_host']} tx {d['tx_pay_host']}")
    expect(d["tx_bounced"] == 0, f"jumbo echo: {d['tx_bounced']} frames ({d['tx_bounce_bytes']} B) bounced "
                                 f"through DRAM")
    expect(d["tx_cut"] > 0, "jumbo echo: no segment was cut at the device-gather limit")
    rx, tx = d["rx_hdr"] / pay, d["tx_read_host"] / pay
    expect(rx <= HEADERS_ONLY and tx <= HEADERS_ONLY, f"jumbo echo: host DRAM per payload byte rx {rx:.3f} tx {tx:.3f}")
    s.net.moved["jumbo"] = pay
    return (f"{mb} MiB echoed at MTU 9000 in {secs:.1f} s = {mbps(pay, secs):.1f} MB/s (retransmits "
            f"{d['retransmits']}, timeouts {d['timeouts']}, Linux {d['linux_retrans']}); host-DRAM bytes per "
            f"payload byte rx {rx:.3f} tx {tx:.3f}; {d['tx_cut']} segments cut at the 4 KiB gather limit, "
            f"0 bounced")


def tshark_rows(pcap, display_filter, fields, opts=()):
    """Rows of fields of the packets in pcap matching display_filter, with tshark preferences opts."""
    cmd = ["tshark", "-n", *opts, "-r", pcap, "-Y", display_filter, "-T", "fields", "-E", "separator=\t"]
    for f in fields:
        cmd += ["-e", f]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise LabError(f"tshark failed ({p.returncode}) on {pcap}: {p.stderr.strip()[-500:]}")
    return [line.split("\t") for line in p.stdout.splitlines() if line]


def test_net_tshark(s):
    """tshark over the appliance link's capture: no malformed packet, no expert error, and with TCP and
    IP checksum validation on, no bad checksum on any frame from the appliance (and many good ones)."""
    app, linux = net(s)
    if not s.net.moved:  # run alone: make some traffic first
        discard(app, linux, 4, "tshark discard")
        echo(app, linux, 4, "tshark echo")
    pcap = s.net.lab.links[0].pcap
    # The service ports carry random bytes: decode them as plain data, or tshark's heuristic
    # dissectors (Thrift, ...) guess a protocol in them and call the guess malformed.
    data = [a for p in (7, 9, 19) for a in ("-d", f"tcp.port=={p},data")] + capture.NO_GUESSES
    opts = data + ["-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE"]
    bad = tshark_rows(pcap, f"_ws.malformed || _ws.expert.severity == {capture.EXPERT_ERROR}",
                      ["frame.number", "frame.protocols", "_ws.expert.message"], data)
    expect(not bad, f"{len(bad)} malformed/expert-error packets, first: {bad[:5]}")
    src = f"ip.src == {APP}"
    # One tshark pass over the appliance's frames gives what three gave (each reads the whole
    # ~300 MB capture): the IP checksum status of each, the TCP checksum status of those with TCP
    # (a field tshark leaves empty without a TCP layer, as the filter "tcp" did), and the frames
    # with a bad TCP checksum ("0" among the status values, as the filter "== 0" did).
    every = tshark_rows(pcap, src, ["frame.number", "ip.checksum.status", "tcp.checksum.status",
                                    "tcp.checksum", "tcp.checksum_calculated"], opts)
    ipst = collections.Counter(r[1] for r in every if r[1])
    status = collections.Counter(r[2] for r in every if r[2])
    # checksum.status: 0 Bad, 1 Good, 2 Unverified. One narrow exception, counted in the note: a TCP
    # checksum field of 0xffff where 0x0000 is computed (tshark: "0xffff instead of 0x0000, see RFC
    # 1624", a Warning). Both are one's-complement zero, the RFC 1071 sum over the segment verifies and
    # Linux accepts it; QEMU 7.2's e1000e checksum offload (net_tx_pkt_do_sw_csum) writes it with
    # net_checksum_finish_nozero, for TCP as for UDP, about once in 65,536 segments.
    rows = [[r[0], r[3], r[4]] for r in every if "0" in r[2].split(",")]
    alt_zero = [r for r in rows if r[1:] == ["0xffff", "0x0000"]]
    really_bad = [r for r in rows if r not in alt_zero]
    expect(not really_bad and ipst.get("0", 0) == 0,
           f"bad checksums on frames from the appliance: tcp {really_bad[:5]} ip {dict(ipst)}")
    expect(status.get("1", 0) > 1000, f"too few TCP checksums verified good: {dict(status)}")
    bad2 = tshark_rows(pcap, f"({src}) && (_ws.malformed || _ws.expert.severity == {capture.EXPERT_ERROR})",
                       ["frame.number", "frame.protocols", "_ws.expert.message"], opts)
    expect(not bad2, f"expert errors with checksum validation on, frames from the appliance: {bad2[:5]}")
    n = sum(status.values())
    return (f"{n} TCP segments from the appliance, {status.get('1', 0)} checksums good, 0 bad, "
            f"{len(alt_zero)} with 0xffff for 0x0000 (QEMU's offload, valid); "
            f"{os.path.getsize(pcap) >> 20} MiB pcap")


def bulk(s):
    """The session's (the lane's) uncaptured appliance lab for the 256 MiB transfers (net_bulk256, net_netem),
    booted on first use; run-tests closes it."""
    if getattr(s, "net_bulk", None) is None:
        s.net_bulk = NetLab(s.shared_name("net-bulk"), capture_link=False)
        s.extra_rundirs.append(os.path.join(topo.TOP, "build", "lab", s.net_bulk.name))
    return s.net_bulk.start()


def test_net_bulk256(s):
    """256 MiB to discard and 256 MiB through echo, on an uncaptured appliance lab (a capture of this
    would be ~800 MB); what the echo sent back went out without a DRAM bounce."""
    app, linux = bulk(s)
    linux.run("rm -f /tmp/d.bin /tmp/e.bin")   # the guest's tmpfs holds one 256 MiB blob at a time
    blob = ("/tmp/b.bin", make_blob(linux, "/tmp/b.bin", 256))   # one blob for both: one dd, not two
    try:
        d1, s1 = discard(app, linux, 256, "bulk discard", blob=blob)
        d2, s2 = echo(app, linux, 256, "bulk echo", blob=blob)
    finally:
        linux.run("rm -f /tmp/b.bin", check=False)
    pay = 256 << 20
    expect(d2["tx_bounced"] == 0, f"bulk echo: {d2['tx_bounced']} frames bounced through DRAM")
    return (f"256 MiB discard {s1:.1f} s ({mbps(pay, s1):.1f} MB/s), 256 MiB echo {s2:.1f} s "
            f"({mbps(pay, s2):.1f} MB/s each way), sha256 equal; host DRAM per payload byte rx "
            f"{d1['rx_hdr'] / pay:.3f} (discard), echo tx {d2['tx_read_host'] / pay:.3f}; Linux retransmits "
            f"{d1['linux_retrans']} + {d2['linux_retrans']}")


TESTS = [
    ("net_ping", test_net_ping),
    ("net_discard", test_net_discard),
    ("net_echo", test_net_echo),
    ("net_chargen", test_net_chargen),
    ("net_split", test_net_split),
    ("net_jumbo", test_net_jumbo),
    ("net_concurrent", test_net_concurrent),
    ("net_tshark", test_net_tshark),
    ("net_bulk256", test_net_bulk256),
    ("net_netem", test_net_netem),
]
OPTIONAL = []
