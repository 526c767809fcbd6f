"""tests/lab/baseline_tests.py: the lab's checks on the baseline topology (Linux initiator <-> Linux
nvmet target), run by tests/lab/run-tests. Each test raises on failure and may return a short note.
All tests share one boot (Session); a test run alone generates the traffic it needs itself."""
import fcntl
import os
import re
import shutil
import subprocess
import threading
import time

import capture
import topo
from lab import CommandTimeout, Lab, LabError
from labproc import tagged_processes


class Session:
    """One baseline lab, booted on first use and torn down at the end of the run. run-tests makes
    one per lane: "tests" for the main sequence, "tests-lane2" for the second lane, whose labs
    shared between tests (net, net_bulk, nvmet) are its own too (shared_name)."""

    def __init__(self, name="tests"):
        self.lab = Lab(name)
        self._booted = None
        self.did = set()        # traffic already generated: "nvme-tcp", "roce"
        self.extra_rundirs = []  # other labs started by tests

    def shared_name(self, kind):
        """The run directory name of this session's shared lab of this kind ("net", "net-bulk",
        "nvmet"): tests-net etc. for the main lane, tests-lane2-net etc. for the second."""
        return f"{self.lab.name}-{kind}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.lab.close()
        return False

    def guests(self):
        """(target, initiator), booting them the first time."""
        if self._booted is None:
            try:
                t, i = topo.baseline(self.lab)
                self.lab.start()
                self._booted = (t, i)
            except Exception as e:
                self._booted = e
        if isinstance(self._booted, Exception):
            raise LabError(f"baseline lab did not boot: {self._booted}")
        return self._booted

    def rundirs(self):
        """Run directories of every lab this session started (for the teardown check)."""
        return [self.lab.rundir] + self.extra_rundirs

    def summary(self):
        """Boot times and link drops, for the run's closing lines."""
        if not isinstance(self._booted, tuple):
            return "not booted"
        boots = ", ".join(f"{g.name} booted in {g.boot_secs:.1f} s" for g in self._booted)
        return f"{boots}; host UDP RcvbufErrors +{self.lab.rcvbuf_errors()}"


def expect(cond, msg):
    """Fail the test with msg unless cond."""
    if not cond:
        raise AssertionError(msg)


def test_boot(s):
    """Both guests boot with every lab module loaded, eth0 up with TSO off, the real ip/tc/modprobe
    (not busybox's), and reach each other over the link."""
    t, i = s.guests()
    for g in (t, i):
        expect(not g.modules_failed, f"{g.name}: modules failed to load: {g.modules_failed}")
        expect(g.carrier, f"{g.name}: eth0 had no carrier when the guest said it was ready")
        r = g.run("ethtool -k eth0 | grep '^tcp-segmentation-offload:'; ip -V; modprobe --version;"
                  " type -p ip tc modprobe", check=True)
        expect("tcp-segmentation-offload: off" in r.out, f"{g.name}: TSO not off: {r.out}")
        expect("iproute2" in r.out and "kmod version" in r.out, f"{g.name}: not the real tools: {r.out}")
        # busybox's tc has no netem: this fails if the trap is back.
        g.run("tc qdisc add dev eth0 root netem delay 1ms && tc qdisc del dev eth0 root", check=True)
        expect(g.run("lsmod | grep -c '^nvmet_tcp\\|^nvme_tcp\\|^rdma_rxe'").out.strip() == "3",
               f"{g.name}: lab modules not listed by lsmod")
    r = i.run(f"ping -c 3 -W 5 {topo.TARGET_IP}", timeout=30)
    expect(r.rc == 0, f"initiator cannot ping the target: {r.out}")
    return f"boot {t.boot_secs:.1f} s / {i.boot_secs:.1f} s"


def test_runner(s):
    """The runner reports exit codes and output exactly, and recovers from a command timeout."""
    _, i = s.guests()
    r = i.run("echo out; echo err >&2; printf 'no newline'; exit 7")
    expect(r.rc == 7, f"exit code {r.rc}, want 7")
    expect(r.out == "out\nerr\nno newline", f"output {r.out!r}")
    expect(i.run("read x; echo got=$x").out.strip() == "got=", "command stdin is not /dev/null")
    big = i.run("seq 1 20000 | md5sum; seq 1 20000").out.splitlines()
    expect(big[1:] == [str(n) for n in range(1, 20001)] and len(big) == 20001, "long output mangled")
    t0 = time.monotonic()
    try:
        i.run("sleep 30", timeout=2)
        raise AssertionError("no CommandTimeout for sleep 30 with timeout 2")
    except CommandTimeout:
        pass
    expect(time.monotonic() - t0 < 15, "timeout took too long to recover")
    expect(i.run("echo alive").out == "alive\n", "shell not usable after a timeout")
    # The teardown check (run-tests) looks for processes by their LAB_RUN tag: it must see the QEMUs.
    tagged = set(tagged_processes(s.lab.rundir))
    qemus = {g.proc.pid for g in s.guests()}
    expect(qemus <= tagged, f"LAB_RUN tag not found on the guests' QEMUs {qemus} (found {tagged})")


def fio_verify(guest, dev, size_mb, timeout):
    """fio writes dev with 4 KiB random writes and 128 KiB sequential writes (the R2T/H2CData path of
    NVMe/TCP), each verified by reading back with crc32c; raises unless fio reports no errors."""
    half = size_mb // 2
    r = guest.run(f"fio --direct=1 --ioengine=libaio --iodepth=16 --verify=crc32c --verify_fatal=1"
                  f" --filename={dev} --group_reporting=0"
                  f" --name=rand4k --rw=randwrite --bs=4k --size={half}M"
                  f" --name=seq128k --stonewall --rw=write --bs=128k --offset={half}M --size={half}M",
                  timeout=timeout)
    errs = re.findall(r"err=\s*(\d+)", r.out)
    expect(r.rc == 0 and errs and all(e == "0" for e in errs),
           f"fio failed (rc {r.rc}): {r.out[-1500:]}")
    iops = re.findall(r"(?:write|read): IOPS=([\d.k]+)", r.out)
    return f"fio IOPS {'/'.join(iops)} in {r.secs:.1f} s"


def nvme_session(s, transport, size_mb, fio_timeout):
    """Export, discover, connect, fio with verify, and a clean disconnect over one transport."""
    t, i = s.guests()
    if transport == "rdma":
        topo.rxe_up(t)
        topo.rxe_up(i)
    topo.nvmet_export(t, transport)
    r = i.run(f"nvme discover -t {transport} -a {topo.TARGET_IP} -s {topo.NVME_PORT}", timeout=60)
    expect(r.rc == 0 and topo.NQN in r.out, f"discovery did not list {topo.NQN}: {r.out}")
    dev = topo.nvme_connect(i, transport)
    try:
        note = fio_verify(i, dev, size_mb, fio_timeout)
    finally:
        r = topo.nvme_disconnect(i)
    expect(r.rc == 0 and "disconnected 1 controller" in r.out, f"disconnect: {r.out}")
    r = i.run("ls /sys/class/nvme 2>/dev/null | wc -l; dmesg | grep -ci 'nvme.*\\(error\\|timeout\\)'")
    n_ctrl, n_err = r.out.split()
    expect(n_ctrl == "0", "a controller is left after nvme disconnect")
    expect(n_err == "0", f"nvme errors in the initiator's kernel log: {i.run('dmesg | tail').out}")
    s.did.add(f"nvme-{transport}")
    return note


def test_nvme_tcp(s):
    """Linux initiator -> Linux nvmet-tcp: discover, connect, fio verify 32 MiB, disconnect."""
    return nvme_session(s, "tcp", 32, 240)


def test_nvme_rdma(s):
    """Linux initiator -> Linux nvmet-rdma over rxe: discover, connect, fio verify 8 MiB, disconnect."""
    return nvme_session(s, "rdma", 8, 240)


def test_rxe_pingpong(s, iters=200):
    """Two Linux guests run ibv_rc_pingpong over rxe (RC, 4 KiB, iteration mode), both ends exit 0."""
    t, i = s.guests()
    topo.rxe_up(t)
    topo.rxe_up(i)
    pp = f"ibv_rc_pingpong -d rxe0 -g 1 -s 4096 -n {iters}"
    t.run(f"rm -f /tmp/pp.*; ( {pp} >/tmp/pp.log 2>&1; echo $? >/tmp/pp.rc ) & sleep 0.5", check=True)
    r = i.run(f"for n in 1 2 3 4 5; do {pp} {topo.TARGET_IP} && exit 0; sleep 1; done; exit 1",
              timeout=120)
    expect(r.rc == 0, f"client failed: {r.out[-800:]}")
    srv = t.run("for n in $(seq 100); do [ -s /tmp/pp.rc ] && break; sleep 0.1; done;"
                " cat /tmp/pp.log; echo server_rc=$(cat /tmp/pp.rc)", timeout=30)
    expect("server_rc=0" in srv.out, f"server failed: {srv.out[-800:]}")
    m = re.search(r"(\d+) iters in ([\d.]+) seconds", r.out)
    expect(m and m.group(1) == str(iters), f"client did not report {iters} iterations: {r.out}")
    s.did.add("roce")
    return f"{iters} iterations"


def test_tshark(s):
    """tshark reads the link capture: NVMe/TCP PDUs and RoCE v2 packets are there, none malformed
    and none with an expert error."""
    capture.self_check(s.lab.rundir)
    t, i = s.guests()
    if "nvme-tcp" not in s.did:  # run alone: make a little NVMe/TCP traffic first
        topo.nvmet_export(t, "tcp")
        dev = topo.nvme_connect(i, "tcp")
        i.run(f"dd if=/dev/urandom of={dev} bs=128k count=8 oflag=direct &&"
              f" dd if={dev} of=/dev/null bs=128k count=8 iflag=direct", check=True)
        topo.nvme_disconnect(i)
    if "roce" not in s.did:
        test_rxe_pingpong(s, iters=20)
    pcap = s.lab.links[0].pcap
    expect(os.path.getsize(pcap) > 24, "capture is empty")
    pdus = capture.histogram(pcap, "nvme-tcp", "nvme-tcp.type")
    # 0 ICReq, 1 ICResp, 4 CapsuleCmd, 5 CapsuleResp, 6 H2CData, 7 C2HData, 9 R2T
    for typ in ("0", "1", "4", "5", "6", "7", "9"):
        expect(pdus[typ] > 0, f"no NVMe/TCP PDU of type {typ} in the capture: {dict(pdus)}")
    roce = capture.histogram(pcap, "udp.dstport == 4791 && infiniband", "infiniband.bth.opcode")
    expect(sum(roce.values()) > 0, "no RoCE v2 packets in the capture")
    bad, tolerated = capture.problems(pcap)
    expect(not bad, f"{len(bad)} malformed/expert-error packets, first: {bad[:5]}")
    return (f"{sum(pdus.values())} NVMe/TCP PDUs {dict(sorted(pdus.items()))}, "
            f"{sum(roce.values())} RoCE v2 packets, {os.path.getsize(pcap) >> 20} MiB pcap, "
            f"{len(tolerated)} tolerated (tshark nvme-rdma log-page bug)")


TESTS = [
    ("boot", test_boot),
    ("runner", test_runner),
    ("nvme_tcp", test_nvme_tcp),
    ("nvme_rdma", test_nvme_rdma),
    ("rxe_pingpong", test_rxe_pingpong),
    ("tshark", test_tshark),
]


_esp_lock = threading.Lock()  # one `make image` when both lanes ask at once


def appliance_esp():
    """The appliance's ESP directory: $LAB_ESP, else build/esp, or build/arm64/esp when P2P_ARCH
    is arm64 (made with `make ARCH=... image` if absent); tools/qemu-run boots the same ARCH."""
    with _esp_lock:
        return _appliance_esp()


_images_made = set()


def _appliance_esp():
    """The ESP the lab boots: LAB_ESP as given, else the tree's own image, brought up to date by
    `make image` once per run (an image left from an older tree would otherwise be booted as it
    is; the run's lanes take turns through a lock, and an up-to-date image costs ~0.6 s)."""
    arch = os.environ.get("P2P_ARCH", "x86_64")
    build = ["build", "arm64"] if arch == "arm64" else ["build"]
    efi = "BOOTAA64.EFI" if arch == "arm64" else "BOOTX64.EFI"
    if os.environ.get("LAB_ESP"):
        return os.environ["LAB_ESP"]
    esp = os.path.join(topo.TOP, *build, "esp")
    if arch not in _images_made:
        os.makedirs(os.path.join(topo.TOP, "build"), exist_ok=True)
        with open(os.path.join(topo.TOP, "build", ".lab-image.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            p = subprocess.run(["make", "-C", topo.TOP, f"ARCH={arch}", "image"], capture_output=True,
                               text=True, timeout=900)
        expect(p.returncode == 0, f"make image failed: {p.stdout[-800:]}{p.stderr[-800:]}")
        _images_made.add(arch)
    expect(os.path.isfile(os.path.join(esp, "EFI", "BOOT", efi)), f"no {efi} in {esp} after make image")
    return esp


def test_appliance_plumbing(s):
    """Topology (a): the appliance boots through tools/qemu-run with its NIC on a captured lab link
    next to a Linux initiator; the initiator pings it, and both sides' frames (ARP, ICMP) are in the
    capture."""
    esp = appliance_esp()
    # A private copy: qemu-run serves the ESP as a writable FAT directory.
    copy = os.path.join(s.lab.rundir, "esp")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(esp, copy)
    with Lab("tests-appliance") as lab:
        s.extra_rundirs.append(lab.rundir)
        appliance, initiator = topo.appliance_topology(lab, copy)
        lab.start()
        appliance.expect(r"p2pstore>", timeout=90)
        r = initiator.run(f"ping -c 3 -W 1 {topo.APPLIANCE_IP}", timeout=30)
        pcap = lab.links[0].pcap
        mine = capture.count(pcap, f"arp.src.proto_ipv4 == {topo.INITIATOR_IP} && "
                                   f"arp.dst.proto_ipv4 == {topo.APPLIANCE_IP}")
        expect(mine > 0, "the initiator's ARP requests for the appliance are not in the capture")
        theirs = capture.count(pcap, "eth.src == 52:54:00:a0:00:01")
        replies = capture.count(pcap, f"icmp.type == 0 && ip.src == {topo.APPLIANCE_IP}")
        expect(r.rc == 0 and re.search(r"\b3 (packets )?received", r.out), f"ping of the appliance failed (rc {r.rc}):\n{r.out}")
        expect(replies >= 3, f"{replies} ICMP echo replies from the appliance in the capture")
        return (f"appliance at its prompt; {mine} initiator ARPs captured; {theirs} frames from the "
                f"appliance, {replies} echo replies; ping 3/3")


TESTS.append(("appliance_plumbing", test_appliance_plumbing))


# The appliance's NVMe/TCP target against the Linux initiator (issue 8) lives in nvmet_tests.py;
# registered here so that every runner that takes baseline_tests.TESTS runs it. (nvmet_tests
# imports appliance_esp and expect from this module, defined above: the late import is safe.)
from nvmet_tests import TESTS as NVMET_TESTS  # noqa: E402

TESTS.extend(NVMET_TESTS)

# The P2P data path's assertion (host-DRAM bytes per payload byte at MTU 1500 and 9000) lives in
# nvmet_p2p_tests.py; registered the same way.
from nvmet_p2p_tests import TESTS as NVMET_P2P_TESTS  # noqa: E402

TESTS.extend(NVMET_P2P_TESTS)
