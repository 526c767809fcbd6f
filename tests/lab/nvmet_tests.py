"""tests/lab/nvmet_tests.py: the appliance's NVMe-oF target against Linux's own NVMe/TCP initiator
(issue 8), run by tests/lab/run-tests.

Topology (a): a Linux guest (10.10.0.2) and the appliance (10.10.0.10) on one captured lab link,
booted once on the first nvmet test and shared by all of them (run-tests closes it). The appliance
boots with an nvmetcli configuration (\\p2pstore\\nvmet.json) exporting two subsystems:
  vol0 (/dev/nvme0n1): allow_any_host 0, only HOST_OK may connect (the guest's /etc/nvme/hostnqn);
  vol1 (/dev/nvme1n1): allow_any_host 1.
Each test connects what it needs and disconnects before it returns (also on failure), so any of
them can run alone:
  nvmet_tcp        discover, connect, nvme list, 4 KiB direct writes read back, fio verify,
                   disconnect frees the controller, tshark finds no malformed PDU
  nvmet_admin      id-ctrl (fields checked), id-ns, error and SMART log pages, list-subsys
  nvmet_queues     two controllers with read, write and poll queues each, fio verify with 4 jobs
                   at iodepth 32 (4 KiB random and 128 KiB sequential), the console's view of
                   hosts, addresses and per-queue counters while they run
  nvmet_digest     header digest, data digest and both: fio verify, tshark validates every digest
  nvmet_reconnect  a pattern written, disconnect, reconnect, read back equal
  nvmet_kato       keep-alive expiry after the host goes silent (all its traffic dropped):
                   teardown within KATO + slack, queues and pools freed, a new connect works
                   and reads the data written before
  nvmet_allowlist  a host NQN not on vol0's list is refused (Connect Invalid Host), the
                   appliance logs it, its discovery log page does not list vol0
"""
import collections
import json
import os
import re
import subprocess
import time

import capture
import topo
from baseline_tests import appliance_esp, expect
from lab import Lab, LabError
from net_tests import PROMPT, Appliance

NQN = "nqn.2026-11.org.p2pstore:vol0"
NQN1 = "nqn.2026-11.org.p2pstore:vol1"
HOST_OK = "nqn.2026-11.org.p2pstore:lab-initiator"
HOST_BAD = "nqn.2026-11.org.p2pstore:intruder"
APP = topo.APPLIANCE_IP
NVMET_JSON = """{
  "hosts": [ { "nqn": "%(ok)s" } ],
  "ports": [ { "portid": 1, "addr": { "trtype": "tcp", "adrfam": "ipv4", "traddr": "%(app)s",
               "trsvcid": "4420" }, "subsystems": [ "%(nqn)s", "%(nqn1)s" ] } ],
  "subsystems": [
    { "nqn": "%(nqn)s", "allowed_hosts": [ "%(ok)s" ],
      "attr": { "allow_any_host": "0", "serial": "p2pstore0001", "model": "p2pstore" },
      "namespaces": [ { "nsid": 1, "enable": 1, "device": { "path": "/dev/nvme0n1" } } ] },
    { "nqn": "%(nqn1)s",
      "attr": { "allow_any_host": "1", "serial": "p2pstore0002", "model": "p2pstore" },
      "namespaces": [ { "nsid": 1, "enable": 1, "device": { "path": "/dev/nvme1n1" } } ] }
  ]
}
""" % {"ok": HOST_OK, "app": APP, "nqn": NQN, "nqn1": NQN1}

# Guest-side helpers, prepended to the scripts that need them.
SH = r"""
# ctrl NQN [HOSTNQN]: the live controller (nvmeX) connected to subsystem NQN (as HOSTNQN), after connect
ctrl() {
  for i in $(seq 100); do
    for c in /sys/class/nvme/nvme*; do
      [ "$(cat $c/subsysnqn 2>/dev/null)" = "$1" ] || continue
      [ -z "$2" ] || [ "$(cat $c/hostnqn 2>/dev/null)" = "$2" ] || continue
      [ "$(cat $c/state 2>/dev/null)" = live ] && { echo ${c##*/}; return 0; }
    done
    sleep 0.1
  done
  return 1
}
# blk NQN: the namespace block device of subsystem NQN
blk() {
  for i in $(seq 100); do
    for s in /sys/class/nvme-subsystem/nvme-subsys*; do
      [ "$(cat $s/subsysnqn 2>/dev/null)" = "$1" ] || continue
      for n in $s/nvme*n*; do [ -b /dev/${n##*/} ] && { echo /dev/${n##*/}; return 0; }; done
    done
    sleep 0.1
  done
  return 1
}
"""


class NvmetLab:
    """The appliance with the nvmet.json above and a Linux initiator, booted once on first use."""

    def __init__(self, name="tests-nvmet", extra_cfg="", nvmet_json=NVMET_JSON, kernel=None):
        self.name, self.extra_cfg, self.nvmet_json = name, extra_cfg, nvmet_json
        self.kernel = kernel  # the Linux guest's kernel flavour (lab.build_image)
        self.lab = None
        self._booted = None

    def start(self):
        if self._booted is None:
            try:
                self.lab = Lab(self.name, kernel=self.kernel)
                esp = topo.appliance_esp_copy(self.lab, "esp-nvmet", appliance_esp(),
                                              {"nvmet.json": self.nvmet_json,
                                               "p2pstore.cfg": "panic = exit\n" + self.extra_cfg})
                dev, linux = topo.appliance_topology(self.lab, esp)
                t0 = time.monotonic()
                self.lab.start()
                dev.expect(r"nvmet: target started from nvmet\.json: 1 ports, 2 subsystems", timeout=90)
                dev.expect(re.escape(PROMPT), timeout=30)
                self.boot_secs = time.monotonic() - t0
                linux.run(f"echo {HOST_OK} > /etc/nvme/hostnqn", check=True)
                self._booted = (Appliance(dev), linux)
            except Exception as e:
                self._booted = e
        if isinstance(self._booted, Exception):
            raise LabError(f"nvmet lab did not boot: {self._booted}")
        return self._booted

    def close(self):
        if self.lab:
            self.lab.close()


def nvmet_lab(s):
    """The session's nvmet lab (created on first use; run-tests closes it)."""
    if getattr(s, "nvmet", None) is None:
        s.nvmet = NvmetLab(s.shared_name("nvmet"))
        s.extra_rundirs.append(os.path.join(topo.TOP, "build", "lab", s.nvmet.name))
    return s.nvmet.start()


def dma_counters(text):
    """{class: (dma-to-device, dma-from-device, cpu)} from the appliance's `stats dma`."""
    out = {}
    for m in re.finditer(r"^\s+(host-dram|device)\s+dma-to-device (\d+) B\s+dma-from-device (\d+) B\s+cpu (\d+) B",
                         text, re.M):
        out[m.group(1)] = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
    expect(len(out) == 2, "stats dma:\n" + text)
    return out


def connect(linux, nqn=NQN, opts="", host="", timeout=90):
    """nvme connect to nqn with extra options (as host NQN host, default /etc/nvme/hostnqn);
    return (ctrl name nvmeX, block device). A failure shows the guest's kernel log."""
    hostopt = f"--hostnqn={host}" if host else ""
    r = linux.run(SH + f"""
        nvme connect -t tcp -a {APP} -s 4420 -n {nqn} {opts} {hostopt} || {{ dmesg | tail -20; exit 1; }}
        c=$(ctrl {nqn} {host}) || {{ echo "no live controller for {nqn}"; exit 1; }}
        b=$(blk {nqn}) || {{ echo "no block device for {nqn}"; exit 1; }}
        echo "CTRL=$c BLK=$b" """, timeout=timeout)
    m = re.search(r"CTRL=(nvme\d+) BLK=(/dev/\S+)", r.out)
    expect(r.rc == 0 and m, f"nvme connect {nqn} {opts} failed (rc {r.rc}):\n{r.out[-1500:]}")
    return m.group(1), m.group(2)


def disconnect(linux, nqn=NQN, timeout=60):
    """nvme disconnect -n nqn; return its Result."""
    return linux.run(f"nvme disconnect -n {nqn}", timeout=timeout)


def wait_ctrls(app, n, secs=10.0):
    """Poll `nvmet` until it shows n controllers; return the last output."""
    deadline = time.monotonic() + secs
    while True:
        out = app.cmd("nvmet")
        if re.search(rf"^{n} controllers, ", out, re.M) or time.monotonic() > deadline:
            return out
        time.sleep(0.2)


def pools(app):
    """{pool name: objects in use} from the appliance's `mem`."""
    out = app.cmd("mem")
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s*(nvmet-\S+)\s+.*?\bin-use (\d+)", out, re.M)}


def fio_verify(linux, jobs, timeout=300):
    """Run fio job lines (name, file, rw, bs, size, offset, extra) with crc32c verify; raise on failure."""
    lines = []
    for name, dev, rw, bs, size, offset, extra in jobs:
        lines.append(f"fio --name={name} --filename={dev} --direct=1 --ioengine=libaio --rw={rw} --bs={bs} "
                     f"--size={size} --offset={offset} --verify=crc32c --output-format=terse --terse-version=3 "
                     f"{extra} || exit 1")
    r = linux.run("\n".join(lines) + "\necho FIO-OK", timeout=timeout)
    errs = "\n".join(ln for ln in r.out.splitlines() if re.search(r"err=|verify|fio: |error|bad", ln))
    expect(r.rc == 0 and "FIO-OK" in r.out, f"fio verify failed (rc {r.rc}):\n{errs[-3000:]}\n{r.out[-800:]}")
    return r


def check_console(state):
    """The `nvmet` view while the initiator is connected to vol0: the host (NQN, address), its
    queues (peer address:port, commands, bytes, errors, in flight), the DRAM fallback reasons."""
    cntlid, line = ctrl_line(state, NQN, HOST_OK)
    expect(cntlid and f"from {topo.INITIATOR_IP}," in line, f"no controller of {HOST_OK} from "
           f"{topo.INITIATOR_IP}:\n{state}")
    qrows = re.findall(r"^\s+qid (\d+) \(live, (\d+) entries, sqhd \d+, (\d+) in flight\) "
                       rf"{re.escape(topo.INITIATOR_IP)}:(\d+): cmds (\d+) done (\d+) errors (\d+) "
                       r"read (\d+) B write (\d+) B", state, re.M)
    expect(len(qrows) >= 2 and len({q[3] for q in qrows}) == len(qrows), f"queue lines:\n{state}")
    io = [q for q in qrows if q[0] != "0"]
    expect(io and int(io[0][4]) > 0 and int(io[0][7]) > 0 and int(io[0][8]) > 0,
           f"I/O queue counters:\n{state}")
    m = re.search(r"^dram fallback: (.*)$", state, re.M)
    expect(m and "p2p-refused " in m.group(1) and len(re.findall(r"[a-z0-9-]+ \d+ \(\d+ B\)", m.group(1))) >= 5,
           f"no DRAM fallback reasons:\n{state}")
    expect(re.search(r"^payload: p2p (auto|off), device memory reads \d+", state, re.M), f"no payload line:\n{state}")


def test_nvmet_tcp_linux_initiator(s):
    """Linux nvme-cli -> the appliance's NVMe/TCP target: discover, connect, list, 4 KiB I/O read
    back equal at 8 offsets, fio verify, the appliance's counters, disconnect, a clean capture."""
    app, linux = nvmet_lab(s)
    r = linux.run(f"nvme discover -t tcp -a {APP} -s 4420", timeout=60)
    expect(r.rc == 0 and f"subnqn:  {NQN}" in r.out and f"subnqn:  {NQN1}" in r.out
           and f"traddr:  {APP}" in r.out, f"nvme discover failed (rc {r.rc}):\n{r.out}")
    _, dev = connect(linux)
    try:
        listing = linux.run("nvme list", timeout=30).out
        expect(re.search(r"p2pstore0001\s+p2pstore\s+1\s+67\.11\s+MB", listing), "nvme list:\n" + listing)
        io = linux.run(f"""
            set -e
            for k in 0 1 2 3 4 5 6 7; do
              head -c 4096 /dev/urandom > /tmp/w$k
              dd if=/tmp/w$k of={dev} bs=4096 count=1 seek=$((k * 1000 + 3)) oflag=direct 2>/dev/null
            done
            for k in 0 1 2 3 4 5 6 7; do
              dd if={dev} of=/tmp/r$k bs=4096 count=1 skip=$((k * 1000 + 3)) iflag=direct 2>/dev/null
              cmp /tmp/w$k /tmp/r$k
            done
            echo ALL-EQUAL""", timeout=120)
        expect(io.rc == 0 and "ALL-EQUAL" in io.out, f"read-back differs (rc {io.rc}):\n{io.out}")
        before = dma_counters(app.cmd("stats dma"))
        fio_verify(linux, [("seq", dev, "write", "128k", "8M", "16M", "--iodepth=8"),
                           ("rnd", dev, "randrw", "4k", "4M", "32M", "--iodepth=16")])
        after = dma_counters(app.cmd("stats dma"))
        to_dev_host = after["host-dram"][0] - before["host-dram"][0]
        to_dev_dev = after["device"][0] - before["device"][0]
        expect(to_dev_dev + to_dev_host >= 12 << 20, f"write payload not counted: {before} -> {after}")
        state = app.cmd("nvmet")
        m = re.search(rf"subsystem {re.escape(NQN)}:.*?\n(?:  ns .*\n)*  read (\d+) cmds (\d+) B, write (\d+) cmds (\d+) B",
                      state)
        expect(m and int(m.group(3)) >= 8 and int(m.group(4)) >= 8 * 4096 and int(m.group(1)) >= 8,
               "appliance counters:\n" + state)
        expect(re.search(r"^1 controllers, \d+ queues", state, re.M), "one controller connected:\n" + state)
        check_console(state)
    finally:
        r = disconnect(linux)
    expect(r.rc == 0 and "disconnected 1 controller" in r.out, f"nvme disconnect (rc {r.rc}):\n{r.out}")
    gone = wait_ctrls(app, 0)
    expect(re.search(r"^0 controllers, 0 queues", gone, re.M), "controller not freed after disconnect:\n" + gone)

    pcap = s.nvmet.lab.links[0].pcap
    pdus = capture.count(pcap, "nvme-tcp")
    bad, tolerated = capture.problems(pcap, "nvme-tcp || tcp.port == 4420")
    expect(pdus > 0, "no NVMe/TCP PDU in the capture")
    expect(not bad and not tolerated, f"malformed NVMe/TCP frames: {bad[:5]}")
    r2t = capture.count(pcap, "nvme-tcp.type == 9")
    expect(r2t > 0, "no R2T in the capture: the 128 KiB writes did not use R2T/H2CData")
    return (f"discover, connect, {dev} listed, 8 x 4 KiB read back equal, fio verify 128 KiB seq "
            f"+ 4 KiB rand, disconnect; {pdus} NVMe/TCP PDUs ({r2t} R2T) dissected, none malformed; "
            f"drives read write data: {to_dev_dev} B from device memory, {to_dev_host} B from host DRAM")



def ctrl_line(state, nqn, host=None):
    """The console's `ctrl N on NQN ...` line for nqn (and host): (cntlid, line) or (None, None)."""
    for m in re.finditer(rf"^ctrl (\d+) on {re.escape(nqn)} .*$", state, re.M):
        if host is None or f"host {host}," in m.group(0):
            return int(m.group(1)), m.group(0)
    return None, None


def guest_json(linux, cmd):
    """Run an nvme-cli command with -o json in the guest; return the parsed object."""
    r = linux.run(cmd + " -o json", timeout=60)
    expect(r.rc == 0 and "{" in r.out, f"{cmd} failed (rc {r.rc}):\n{r.out[-1500:]}")
    return json.loads(r.out[r.out.index("{"):r.out.rindex("}") + 1])


def test_nvmet_admin(s):
    """nvme id-ctrl (subnqn, cntlid as the console shows it and different for two controllers of
    one subsystem, sgls, ioccsz/iorcsz, mdts against Linux's max_hw_sectors_kb, kas, ctratt,
    fabrics fields), id-ns against the drive's size, the error log page recording a failed read
    (LBA out of range), the SMART log counting commands, list-subsys."""
    app, linux = nvmet_lab(s)
    c0, b0 = connect(linux)
    try:
        c1, b1 = connect(linux, NQN1)
        # a second controller of vol1, from the kernel's own host NQN (nvme-cli 2.3 refuses a second
        # connection to one subsystem whatever the host NQN: write the options to the kernel)
        r = linux.run(SH + f"""
            echo transport=tcp,traddr={APP},trsvcid=4420,nqn={NQN1},duplicate_connect > /dev/nvme-fabrics || exit 1
            for i in $(seq 100); do
              for c in /sys/class/nvme/nvme*; do
                [ "$(cat $c/subsysnqn)" = {NQN1} ] && [ ${{c##*/}} != {c1} ] && [ "$(cat $c/state)" = live ] &&
                  {{ echo CTRL2=${{c##*/}}; exit 0; }}
              done; sleep 0.1
            done; exit 1""", timeout=60)
        expect(r.rc == 0 and "CTRL2=" in r.out, f"second controller of {NQN1}:\n{r.out}")
        c2 = r.out.split("CTRL2=")[1].split()[0]
        state = app.cmd("nvmet")
        ids = {c: guest_json(linux, f"nvme id-ctrl /dev/{c}") for c in (c0, c1, c2)}
        cntlids_console = sorted(int(x) for x in re.findall(rf"^ctrl (\d+) on {re.escape(NQN1)} ", state, re.M))
        expect(sorted([ids[c1]["cntlid"], ids[c2]["cntlid"]]) == cntlids_console
               and ids[c1]["cntlid"] != ids[c2]["cntlid"],
               f"vol1's controller IDs: Linux {ids[c1]['cntlid']}, {ids[c2]['cntlid']}; console:\n{state}")
        expect(ctrl_line(state, NQN)[0] == ids[c0]["cntlid"], f"vol0 cntlid {ids[c0]['cntlid']}:\n{state}")
        hw_kb = int(linux.run(f"cat /sys/block/{b0[5:]}/queue/max_hw_sectors_kb", check=True).out.split()[-1])
        for c, nqn in ((c0, NQN), (c1, NQN1)):
            d = ids[c]
            expect(d["subnqn"] == nqn, f"{c} subnqn {d['subnqn']!r}")
            expect(d["cntrltype"] == 1, f"{c} cntrltype {d['cntrltype']} (1: I/O controller)")
            expect(d["sgls"] & 3 and d["msdbd"] == 1, f"{c} sgls {d['sgls']:#x} msdbd {d['msdbd']}")
            expect(d["ioccsz"] >= 4 and d["iorcsz"] == 1 and d["icdoff"] == 0,
                   f"{c} ioccsz {d['ioccsz']} iorcsz {d['iorcsz']} icdoff {d['icdoff']}")
            expect(d["kas"] == 10, f"{c} kas {d['kas']} (1 s granularity)")
            expect(d["ctratt"] & 1, f"{c} ctratt {d['ctratt']:#x}: 128-bit host identifier not set")
            expect(d["fcatt"] == 0 and d["maxcmd"] >= 32, f"{c} fcatt {d['fcatt']} maxcmd {d['maxcmd']}")
            expect(1 <= d["mdts"] <= 8, f"{c} mdts {d['mdts']}")
        mdts_kb = (4096 << ids[c0]["mdts"]) // 1024
        expect(hw_kb == mdts_kb, f"Linux max_hw_sectors_kb {hw_kb}, MDTS says {mdts_kb}")

        ns = guest_json(linux, f"nvme id-ns {b0}")
        size = int(linux.run(f"blockdev --getsize64 {b0}", check=True).out.split()[-1])
        ds = ns["lbafs"][ns["flbas"] & 0xf]["ds"]
        expect(ns["nsze"] << ds == size == 64 << 20 and ns["ncap"] == ns["nsze"],
               f"id-ns nsze {ns['nsze']} ds {ds}, device {size} B")
        expect(int(ns["nguid"], 16) != 0, f"id-ns nguid {ns['nguid']}")

        nblocks = ns["nsze"]
        r = linux.run(f"nvme read {b0} --start-block={nblocks} --block-count=0 --data-size=512 --data=/dev/null")
        expect(r.rc != 0, f"a read past the end succeeded:\n{r.out}")
        errs = guest_json(linux, f"nvme error-log /dev/{c0} --log-entries=16")["errors"]
        hit = [e for e in errs if e["error_count"] and e["sqid"] > 0 and e["lba"] == nblocks
               and (e["status_field"] & 0xff == 0x80 or (e["status_field"] >> 1) & 0xff == 0x80)]
        expect(hit, f"the error log does not record the LBA-out-of-range read: {errs[:3]}")
        smart = guest_json(linux, f"nvme smart-log /dev/{c0}")
        expect(int(smart["host_read_commands"]) >= 1 and int(smart["avail_spare"]) == 100,
               f"smart-log: {smart}")
        r = linux.run("nvme list-subsys", timeout=30)
        expect(r.rc == 0 and NQN in r.out and NQN1 in r.out and f"tcp traddr={APP}" in r.out
               and r.out.count("live") >= 3, f"nvme list-subsys:\n{r.out}")
    finally:
        disconnect(linux, NQN1)
        disconnect(linux, NQN)
    gone = wait_ctrls(app, 0)
    expect(re.search(r"^0 controllers, 0 queues", gone, re.M), "controllers not freed:\n" + gone)
    admin_errs = [(e["sqid"], e["cmdid"], hex(e["status_field"])) for e in errs if e["error_count"] and e["sqid"] == 0]
    return (f"id-ctrl cntlid {ids[c0]['cntlid']}/{ids[c1]['cntlid']}/{ids[c2]['cntlid']} mdts {ids[c0]['mdts']} "
            f"({hw_kb} KiB) ioccsz {ids[c0]['ioccsz']} sgls {ids[c0]['sgls']:#x} ctratt {ids[c0]['ctratt']:#x}; "
            f"id-ns {ns['nsze']} blocks; error log entry {hit[0]['error_count']} (admin errors of Linux's own "
            f"commands: {admin_errs}); smart; list-subsys")


def test_nvmet_queues(s):
    """Two controllers (vol0, vol1), each with read, write and poll I/O queues; fio verify with 2
    jobs per device at iodepth 32 (4 KiB random read/write, then 128 KiB sequential); the console
    shows the hosts, their addresses, every queue with counters and commands in flight, and the
    DRAM fallback reasons; every queue is freed on disconnect."""
    app, linux = nvmet_lab(s)
    opts = "-i 1 -W 1 -P 1"  # one each of default, read and poll queues (the guest has 1 CPU)
    _, b0 = connect(linux, NQN, opts)
    try:
        _, b1 = connect(linux, NQN1, opts)
        state = app.cmd("nvmet")
        nq = int(re.search(r"^2 controllers, (\d+) queues", state, re.M).group(1)) if \
            re.search(r"^2 controllers, (\d+) queues", state, re.M) else 0
        expect(nq == 8, f"expected 2 controllers with 3 I/O queues each:\n{state}")
        common = "--direct=1 --ioengine=libaio --iodepth=32 --verify=crc32c --numjobs=2 --group_reporting"
        linux.run(f"""
            (fio {common} --offset_increment=8M --name=r0 --filename={b0} --rw=randrw --bs=4k --size=4M --offset=8M \
                 --name=r1 --filename={b1} --rw=randrw --bs=4k --size=4M --offset=8M > /tmp/fio-rand.out 2>&1;
             echo "rc=$?" >> /tmp/fio-rand.out) &
            echo started""", check=True)
        busy, inflight_max = "", 0
        for _ in range(60):
            busy = app.cmd("nvmet")
            inflight = [int(x) for x in re.findall(r"^\s+qid [1-9]\d* \(live, .*?(\d+) in flight\)", busy, re.M)]
            inflight_max = max([inflight_max] + inflight)
            done = linux.run("grep -h '^rc=' /tmp/fio-rand.out || true").out
            if "rc=" in done:
                break
            time.sleep(0.5)
        r = linux.run("cat /tmp/fio-rand.out", timeout=30)
        errs = "\n".join(ln for ln in r.out.splitlines() if re.search(r"err=|verify|fio: |error|bad", ln))
        expect("rc=0" in r.out, f"fio 4 KiB randrw verify on 2 controllers failed:\n{errs[-3000:]}\n"
               f"{r.out[-800:]}")
        fio_verify(linux, [("s0", b0, "write", "128k", "8M", "32M", "--iodepth=32 --numjobs=2 --offset_increment=8M"),
                           ("s1", b1, "write", "128k", "8M", "32M", "--iodepth=32 --numjobs=2 --offset_increment=8M"),
                           # polled reads (io_uring, IORING_SETUP_IOPOLL) go to vol0's poll queue
                           ("p0", b0, "randread", "4k", "1M", "32M", "--ioengine=io_uring --hipri --iodepth=4 --verify=0")])
        state = app.cmd("nvmet")
        # hosts with their addresses, queues with counters
        for nqn in (NQN, NQN1):
            cntlid, line = ctrl_line(state, nqn, HOST_OK)
            expect(cntlid and f"from {topo.INITIATOR_IP}" in line, f"no controller of {HOST_OK} from "
                   f"{topo.INITIATOR_IP} on {nqn}:\n{state}")
        qrows = re.findall(r"^\s+qid (\d+) \(live, (\d+) entries, sqhd \d+, (\d+) in flight\) "
                           r"(\S+): cmds (\d+) done (\d+) errors (\d+) read (\d+) B write (\d+) B", state, re.M)
        io_busy = [q for q in qrows if q[0] != "0" and int(q[4]) > 1]  # the Connect is one
        expect(len(io_busy) >= 5, f"fewer than 5 of the 6 I/O queues carried commands (vol1's poll queue "
               f"stays idle):\n{state}")
        expect(all(q[3].startswith(topo.INITIATOR_IP + ":") for q in qrows), f"queue peers:\n{state}")
        rd = sum(int(q[7]) for q in qrows)
        wr = sum(int(q[8]) for q in qrows)
        # 4 x 8 MiB sequential written and read back, 4 x 4 MiB of random I/O about half each way
        expect(rd >= 40 << 20 and wr >= 36 << 20, f"per-queue byte counters: read {rd} write {wr}:\n{state}")
        expect(re.search(r"^dram fallback: ", state, re.M), f"no DRAM fallback line:\n{state}")
    finally:
        disconnect(linux, NQN1)
        disconnect(linux, NQN)
    gone = wait_ctrls(app, 0)
    expect(re.search(r"^0 controllers, 0 queues", gone, re.M), "queues not freed:\n" + gone)
    return (f"2 controllers, {nq} queues; fio verify 4 jobs iodepth 32 (4 KiB randrw, 128 KiB seq); "
            f"{len(io_busy)} I/O queues busy, up to {inflight_max} commands in flight on one queue; "
            f"read {rd >> 20} MiB write {wr >> 20} MiB by queue counters")


def pcap_frames(pcap):
    """Frames in the capture so far (capinfos reads record headers only: fast). QEMU may be
    writing a record right now: a file cut short is read again a moment later."""
    for _ in range(10):
        p = subprocess.run(["capinfos", "-c", "-M", pcap], capture_output=True, text=True, timeout=120)
        m = re.search(r"Number of packets:\s+(\d+)", p.stdout)
        if p.returncode == 0 and m:
            return int(m.group(1))
        time.sleep(0.3)
    raise LabError(f"capinfos {pcap}: {p.stdout[-300:]} {p.stderr[-300:]}")


def pcap_slice(pcap, first, last, out):
    """Frames first..last (1-based) of pcap written to out, for tshark passes that need only one
    test's traffic (the whole session's capture grows to hundreds of MB)."""
    p = subprocess.run(["editcap", "-r", pcap, out, f"{first}-{last}"], capture_output=True, text=True,
                       timeout=300)
    expect(p.returncode == 0 and os.path.exists(out), f"editcap {pcap}: {p.stderr[-500:]}")
    return out


def tshark_digests(pcap):
    """One tshark pass over the NVMe/TCP PDUs of pcap with header and data digest validation on:
    (header digest statuses, data digest statuses, ICResp digest grants) as Counters of tshark's
    values (status 1 good, 0 bad; grant 1 header, 2 data, 3 both)."""
    fields = ["frame.number", "nvme-tcp.type", "nvme-tcp.icresp.digest", "nvme-tcp.hdgst.status",
              "nvme-tcp.ddgst.status"]
    cmd = ["tshark", "-n", "-r", pcap, "-o", "nvme-tcp.check_hdgst:TRUE", "-o", "nvme-tcp.check_ddgst:TRUE",
           "-Y", "nvme-tcp", "-T", "fields", "-E", "separator=\t"]
    for f in fields:
        cmd += ["-e", f]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise LabError(f"tshark failed on {pcap}: {p.stderr[-500:]}")
    hd, dd, grants = collections.Counter(), collections.Counter(), collections.Counter()
    for line in p.stdout.splitlines():
        row = (line.split("\t") + [""] * len(fields))[:len(fields)]
        for v in row[3].split(","):
            if v:
                hd[v] += 1
        for v in row[4].split(","):
            if v:
                dd[v] += 1
        for g in row[2].split(","):
            if g:
                grants[g] += 1
    return hd, dd, grants


def test_nvmet_digest(s):
    """nvme connect with header digest (-g), data digest (-G) and both: fio verify (4 KiB random,
    128 KiB sequential through R2T/H2CData and C2HData) over each; tshark validates every digest
    of the capture (CRC32C): none bad, and the ICResp granted what each ICReq asked."""
    app, linux = nvmet_lab(s)
    ran = []
    whole = s.nvmet.lab.links[0].pcap
    start = pcap_frames(whole)
    for opts in ("-g", "-G", "-g -G"):
        _, dev = connect(linux, NQN, opts)
        try:
            fio_verify(linux, [("dr", dev, "randrw", "4k", "2M", "48M", "--iodepth=16"),
                               ("ds", dev, "write", "128k", "4M", "52M", "--iodepth=8")])
            ran.append(opts)
        finally:
            disconnect(linux, NQN)
        wait_ctrls(app, 0)
    time.sleep(1)  # the capture's last frames reach the file
    pcap = pcap_slice(whole, start + 1, pcap_frames(whole), os.path.join(s.nvmet.lab.rundir, "digest.pcap"))
    hd, dd, grants = tshark_digests(pcap)
    expect(hd["1"] > 100 and dd["1"] > 100 and hd["0"] == 0 and dd["0"] == 0,
           f"digests validated by tshark: header {dict(hd)}, data {dict(dd)}")
    expect(all(grants[v] >= 1 for v in ("1", "2", "3")), f"ICResp digests granted: {dict(grants)}")
    bad, _ = capture.problems(pcap, "nvme-tcp || tcp.port == 4420")
    expect(not bad, f"malformed NVMe/TCP frames: {bad[:5]}")
    return f"fio verify with {', '.join(ran)}; tshark: {hd['1']} header and {dd['1']} data digests good, none bad"


PATTERN = r"""
head -c 1048576 /dev/urandom > /tmp/pat-{tag}
dd if=/tmp/pat-{tag} of={dev} bs=1M count=1 seek={mb} oflag=direct 2>/dev/null || exit 1
sync; echo WRITTEN"""
CHECK = r"""
dd if={dev} of=/tmp/back-{tag} bs=1M count=1 skip={mb} iflag=direct 2>/dev/null || exit 1
cmp /tmp/pat-{tag} /tmp/back-{tag} && echo SAME"""


def test_nvmet_reconnect(s):
    """1 MiB of random data written, disconnect (the controller is freed), a new connect gets a
    new controller ID (dynamic model) and reads the same bytes back."""
    app, linux = nvmet_lab(s)
    _, dev = connect(linux)
    try:
        first, _ = ctrl_line(app.cmd("nvmet"), NQN)
        r = linux.run(PATTERN.format(tag="rc", dev=dev, mb=40), timeout=60)
        expect(r.rc == 0 and "WRITTEN" in r.out, f"pattern write failed:\n{r.out}")
    finally:
        disconnect(linux)
    gone = wait_ctrls(app, 0)
    expect(re.search(r"^0 controllers, 0 queues", gone, re.M), "not freed after disconnect:\n" + gone)
    _, dev = connect(linux)
    try:
        second, _ = ctrl_line(app.cmd("nvmet"), NQN)
        r = linux.run(CHECK.format(tag="rc", dev=dev, mb=40), timeout=60)
        expect(r.rc == 0 and "SAME" in r.out, f"data differs after reconnect:\n{r.out}")
    finally:
        disconnect(linux)
    expect(first is not None and second is not None and first != second,
           f"controller IDs {first} then {second}: expected a new dynamic ID")
    wait_ctrls(app, 0)
    return f"1 MiB read back equal after disconnect + reconnect; cntlid {first} -> {second}"


def stat_counter(state, name):
    m = re.search(rf"\b{name} (\d+)", state)
    expect(m, f"no counter {name!r} in:\n{state}")
    return int(m.group(1))


def test_nvmet_kato(s):
    """Keep-alive expiry: connect with a 2 s keep-alive, write a pattern, drop every frame the host
    sends (netem loss 100%: it dies without a word); the appliance tears the controller down within
    the KATO it was given + 4 s (KAS granularity 1 s, this test's polling, a loaded host), frees every
    queue and pool object, logs the expiry; traffic restored, a new connect reads the pattern back."""
    app, linux = nvmet_lab(s)
    _, dev = connect(linux, NQN, "-k 2 -c 1 -l 3")
    cut = False
    try:
        state = app.cmd("nvmet")
        _, line = ctrl_line(state, NQN)
        kato_ms = int(re.search(r"kato (\d+) ms", line).group(1))
        expect(0 < kato_ms <= 15000, f"kato {kato_ms} ms: {line}")
        expired = stat_counter(state, "keep-alive expiries")
        r = linux.run(PATTERN.format(tag="ka", dev=dev, mb=44), timeout=60)
        expect(r.rc == 0 and "WRITTEN" in r.out, f"pattern write failed:\n{r.out}")
        # an idle host that keeps sending Keep Alive keeps its controller: 3 x KATO
        time.sleep(3 * kato_ms / 1000)
        idle = app.cmd("nvmet")
        expect(ctrl_line(idle, NQN)[0] is not None and stat_counter(idle, "keep-alive expiries") == expired,
               f"the controller of a live idle host expired:\n{idle}")
        linux.run("tc qdisc add dev eth0 root netem loss 100%", check=True)
        cut = True
        t0 = time.monotonic()
        gone = wait_ctrls(app, 0, kato_ms / 1000 + 10)
        secs = time.monotonic() - t0
        expect(re.search(r"^0 controllers, 0 queues", gone, re.M), f"not torn down after {secs:.1f} s:\n{gone}")
        # KATO + KAS granularity (1 s) + this test's polling of the console: measured 1.9 s for a 2 s
        # KATO; + 4 s leaves room for a loaded 2-core host and stays far below any TCP-level timeout
        expect(secs <= kato_ms / 1000 + 4, f"torn down after {secs:.1f} s, KATO {kato_ms} ms")
        expect(stat_counter(gone, "keep-alive expiries") == expired + 1, "expiry not counted:\n" + gone)
        used = pools(app)
        expect(used.get("nvmet-ctrl", -1) == 0 and used.get("nvmet-queue", -1) == 0,
               f"nvmet pools in use after the teardown: {used}")
        log = app.cmd("log show")
        expect(re.search(rf"keep-alive timeout \({kato_ms} ms\)", log), "no keep-alive log line:\n" + log[-1500:])
    finally:
        if cut:
            linux.run("tc qdisc del dev eth0 root", timeout=30)
        disconnect(linux)  # the host's controller may still be reconnecting
    wait_ctrls(app, 0)
    _, dev = connect(linux)
    try:
        r = linux.run(CHECK.format(tag="ka", dev=dev, mb=44), timeout=60)
        expect(r.rc == 0 and "SAME" in r.out, f"data differs after the keep-alive teardown:\n{r.out}")
    finally:
        disconnect(linux)
    wait_ctrls(app, 0)
    return f"KATO {kato_ms} ms: torn down {secs:.1f} s after the host went silent, pools free; new connect reads back"


def test_nvmet_allowlist(s):
    """A host NQN not on vol0's allowed_hosts (allow_any_host 0): its discovery log page lists vol1
    only, nvme connect to vol0 fails (Linux reports the host not allowed), the appliance logs the
    refusal and counts it; the same host may connect to vol1 (allow_any_host 1)."""
    app, linux = nvmet_lab(s)
    r = linux.run(f"nvme discover -t tcp -a {APP} -s 4420 --hostnqn={HOST_BAD}", timeout=60)
    expect(r.rc == 0 and f"subnqn:  {NQN1}" in r.out and NQN not in r.out,
           f"discovery for {HOST_BAD} (rc {r.rc}):\n{r.out}")
    refused = stat_counter(app.cmd("nvmet"), "refused")
    r = linux.run(f"dmesg -c >/dev/null; nvme connect -t tcp -a {APP} -s 4420 -n {NQN} --hostnqn={HOST_BAD};"
                  " echo rc=$?; dmesg", timeout=60)
    expect("rc=0" not in r.out and re.search(r"not allowed", r.out), f"connect of {HOST_BAD} to {NQN}:\n{r.out}")
    state = app.cmd("nvmet")
    expect(stat_counter(state, "refused") == refused + 1 and re.search(r"^0 controllers, ", state, re.M),
           "refusal not counted or a controller left:\n" + state)
    log = app.cmd("log show")
    expect(re.search(rf"connect refused on port 1: host not allowed \(host {re.escape(HOST_BAD)}, subsystem "
                     rf"{re.escape(NQN)}, qid 0\)", log),
           "no refusal in the appliance log:\n" + log[-1500:])
    linux_line = re.search(r".*not allowed.*", r.out).group(0).strip()
    connect(linux, NQN1, host=HOST_BAD)
    disconnect(linux, NQN1)
    wait_ctrls(app, 0)
    return f"refused; Linux: {linux_line!r}; discovery for the intruder lists vol1 only"


# nvmet_digest early: its tshark pass reads the whole capture so far.
TESTS = [("nvmet_tcp", test_nvmet_tcp_linux_initiator), ("nvmet_digest", test_nvmet_digest),
         ("nvmet_admin", test_nvmet_admin), ("nvmet_queues", test_nvmet_queues),
         ("nvmet_reconnect", test_nvmet_reconnect), ("nvmet_kato", test_nvmet_kato),
         ("nvmet_allowlist", test_nvmet_allowlist)]
OPTIONAL = []  # tests run by name only (tests/lab/run-tests knows this list)
