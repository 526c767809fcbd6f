"""tests/lab/nvmet_rdma_tests.py: the appliance's NVMe/RDMA target (issue 17) against Linux's own
nvme-rdma initiator over Linux soft RoCE (rdma_rxe), run by tests/lab/run-tests.

Topology (a): a Linux guest (10.10.0.2, rxe0 on eth0) and the appliance (10.10.0.10, its own rxe0)
on one captured link. The appliance boots with an nvmetcli configuration that exports vol0
(/dev/nvme0n1, only HOST_OK allowed) on an RDMA port (trtype rdma, adrfam ipv4, trsvcid 4420) and
on a TCP port.

nvmet_rdma   nvme discover -t rdma (the log entry's RDMA TSAS as nvme-cli prints it), connect with
             2 I/O queues, 8 x 4 KiB written and read back, fio verify 4 KiB random + 128 KiB
             sequential, the console's RDMA queues, disconnect (queues freed), reconnect and read
             back, a host NQN not on the allowlist refused, keep-alive expiry (a 2 s KATO, the host silenced: the controller is killed,
             its RDMA queues freed), then the capture: every RoCE frame dissects (NVMe over RDMA
             included), none malformed. Host-DRAM bytes per payload byte of 8 MiB of 128 KiB fio
             writes, then reads (verified), as tests/lab/nvmet_p2p_tests.py counts them for NVMe/TCP:
             <= 0.10 here at MTU 1500 and <= 0.03 in a second lab booted at MTU 9000 (path MTU
             4096), every payload in device memory (`stats nvmet_rdma`: rdma p2p, no DRAM fallback).
             Under netem on the host's eth0 (NETEM: 1 % of the frames Linux sends lost, 1 % sent
             ahead of the others) fio verify 4 KiB random + 128 KiB sequential loses nothing, with
             Linux's nvme-rdma reloaded without memory-registration WRs (host_without_fast_reg: Linux
             6.1 rxe cannot retransmit across them); netem's counters and the capture (frames that
             overtook earlier ones, PSN holes filled by the late original or by a retransmission)
             prove the loss and the reordering really happened on the RoCE frames.
"""
import os
import re
import shutil
import time

import capture
import topo
from baseline_tests import appliance_esp, expect
from lab import Lab, LabError
from net_tests import Appliance
from nvmet_p2p_tests import LIMITS, delta  # the bounds and the method of NVMe/TCP's P2P test
from nvmet_tests import HOST_BAD, HOST_OK, NQN, SH, fio_verify

APP = topo.APPLIANCE_IP
# netem on the host's eth0, i.e. on what Linux sends the appliance: its capsules (SEND), its ACKs
# of the appliance's RDMA WRITEs and SENDs, its RDMA READ responses. 1 % lost; 1 % sent at once,
# ahead of the others, which wait 1 ms. No correlation on reorder: this lab's earlier "reorder
# 0.5% 50%" never fired in Linux 6.1's netem (requeues 0, no frame out of order in the capture),
# and "5% 50%" 0-5 times in ~75,000 frames. Reordering in RC is expensive (each overtaking request
# costs a sequence NAK and a go-back-N retransmission; a READ response ahead of its turn the rest
# of the READ): at 5 % fio took minutes, at 1 % 30-50 s for the jobs below on a loaded machine.
NETEM = "delay 1ms loss 1% reorder 1%"
NETEM_MIN = {"dropped": 100, "requeues": 100, "overtaking": 100, "filled_late": 30, "filled_by_resend": 10}
NVMET_JSON = """{
  "hosts": [ { "nqn": "%(ok)s" } ],
  "ports": [
    { "portid": 1, "addr": { "trtype": "rdma", "adrfam": "ipv4", "traddr": "%(app)s", "trsvcid": "4420" },
      "subsystems": [ "%(nqn)s" ] },
    { "portid": 2, "addr": { "trtype": "tcp", "adrfam": "ipv4", "traddr": "%(app)s", "trsvcid": "4420" },
      "subsystems": [ "%(nqn)s" ] } ],
  "subsystems": [
    { "nqn": "%(nqn)s", "allowed_hosts": [ "%(ok)s" ],
      "attr": { "allow_any_host": "0", "serial": "p2pstore0001", "model": "p2pstore" },
      "namespaces": [ { "nsid": 1, "enable": 1, "device": { "path": "/dev/nvme0n1" } } ] } ]
}
""" % {"ok": HOST_OK, "app": APP, "nqn": NQN}


def boot(lab, mtu=1500):
    """Boot the appliance with NVMET_JSON (at this MTU) and the Linux guest with rxe0 on lab;
    (appliance, linux)."""
    esp = os.path.join(lab.rundir, f"esp-nvmet-rdma-{mtu}")
    shutil.rmtree(esp, ignore_errors=True)
    shutil.copytree(appliance_esp(), esp)
    os.makedirs(os.path.join(esp, "p2pstore"), exist_ok=True)
    with open(os.path.join(esp, "p2pstore", "nvmet.json"), "w") as f:
        f.write(NVMET_JSON)
    with open(os.path.join(esp, "p2pstore", "p2pstore.cfg"), "w") as f:
        f.write(f"panic = exit\nnet.mtu = {mtu}\n")
    dev, linux = topo.appliance_topology(lab, esp)
    try:
        lab.start()
        dev.expect(r"nvmet: target started from nvmet\.json: 2 ports, 1 subsystems", timeout=90)
        dev.expect(r"rdma: NVMe/RDMA listening on rdma_cm port 4420", timeout=30)  # may follow the prompt
    except Exception as e:
        raise LabError(f"nvmet rdma lab did not boot: {e}")
    linux.run(f"echo {HOST_OK} > /etc/nvme/hostnqn", check=True)
    if mtu != 1500:
        # before rxe0: its path MTU follows eth0's; wait until the link carries traffic again
        r = linux.run(f"ip link set eth0 mtu {mtu} && for i in $(seq 30); do ping -c 1 -W 1 {APP} >/dev/null "
                      f"&& exit 0; done; exit 1", timeout=60)
        expect(r.rc == 0, f"no ping reply from the appliance after the MTU change:\n{r.out}")
    topo.rxe_up(linux)
    return Appliance(dev), linux


def connect(linux, opts="", host=""):
    hostopt = f"--hostnqn={host}" if host else ""
    return linux.run(SH + f"""
        nvme connect -t rdma -a {APP} -s 4420 -n {NQN} {opts} {hostopt} || {{ dmesg | tail -20; exit 1; }}
        c=$(ctrl {NQN} {host}) || {{ echo "no live controller"; exit 1; }}
        b=$(blk {NQN}) || {{ echo "no block device"; exit 1; }}
        echo "CTRL=$c BLK=$b" """, timeout=120)


def rdma_queues(app):
    out = app.cmd("nvmet")
    return re.findall(r"^\s+qpn (0x[0-9a-f]+) <- \S+ qid (\d+) cntlid \S+ (\w+): credits (\d+)/(\d+)", out, re.M), out


def host_without_fast_reg(linux):
    """Reload Linux's nvme-rdma with register_always=N and give fio hugepage buffers, so that no
    I/O needs a memory-registration work request: a buffer in one piece goes by the PD's rkey
    (4 KiB in one page; 128 KiB in one 2 MiB page), and the send queue holds SENDs only.

    Linux 6.1 rxe cannot retransmit across a fast-registration (REG_MR) WR: its retry goes back
    to the oldest unacknowledged WR and executes the REG_MR WRs behind it, already executed, once
    more; rxe_reg_fast_mr refuses an MR that is not free ("rxe_reg_fast_mr: mr->lkey = ... not
    free") and the QP sends nothing more. Measured here with netem loss alone (docs/lab.md): the
    appliance NAKs the lost capsule's PSN, Linux resends that one capsule and never the ones
    behind it, its I/Os time out after 30 s and nvme-rdma resets the controller in a loop."""
    r = linux.run("""
        modprobe -r nvme_rdma && modprobe nvme_rdma register_always=N || exit 1
        echo 16 > /proc/sys/vm/nr_hugepages
        echo "register_always=$(cat /sys/module/nvme_rdma/parameters/register_always)"
        grep HugePages_Total /proc/meminfo""", timeout=60)
    m = re.search(r"HugePages_Total:\s+(\d+)", r.out)
    expect(r.rc == 0 and "register_always=N" in r.out and m and int(m.group(1)) >= 8,
           f"nvme-rdma reload / hugepages failed (rc {r.rc}):\n{r.out}")


def rc_counters(app):
    """The appliance's RC QPs' counters from `rdma`, summed: responder sequence NAKs and
    duplicates, requester retransmissions and timeouts."""
    out = app.cmd("rdma")
    c = {"naks_seq": 0, "dups": 0, "retransmits": 0, "timeouts": 0}
    for m in re.finditer(r"requester: .* retransmits (\d+) timeouts (\d+) ", out):
        c["retransmits"] += int(m.group(1))
        c["timeouts"] += int(m.group(2))
    for m in re.finditer(r"responder: acks \d+ dups (\d+) .* naks seq (\d+) ", out):
        c["dups"] += int(m.group(1))
        c["naks_seq"] += int(m.group(2))
    return c


def netem_fio(app, linux, pcap):
    """fio verify (4 KiB random writes at queue depth 8, 128 KiB sequential at 4) through a fresh
    connection while netem NETEM runs on the host's eth0; asserts that netem dropped and reordered
    at least NETEM_MIN frames and that the capture shows it. Returns a dict of the figures."""
    host_without_fast_reg(linux)
    nlog = int(linux.run("dmesg | wc -l", timeout=30).out.split()[-1])
    linux.run(f"tc qdisc replace dev eth0 root netem {NETEM}", check=True)
    t0, e0 = time.monotonic(), time.time()
    try:
        c = connect(linux)
        m = re.search(r"CTRL=(nvme\d+) BLK=(/dev/\S+)", c.out)
        expect(c.rc == 0 and m, f"connect under netem failed:\n{c.out[-1500:]}")
        fio = fio_verify(linux, [("nrnd", m.group(2), "randwrite", "4k", "4M", "16M", "--iodepth=8 --mem=shmhuge"),
                                 ("nseq", m.group(2), "write", "128k", "8M", "32M", "--iodepth=4 --mem=shmhuge")],
                         timeout=300)
        rc = rc_counters(app)
        q = linux.run("tc -s qdisc show dev eth0", timeout=30).out
    finally:
        linux.run("tc qdisc del dev eth0 root", timeout=30)
        linux.run(f"nvme disconnect -n {NQN}", timeout=120)
    e1 = time.time()
    log = linux.run(f"dmesg | tail -n +{nlog + 1} | grep -E 'timeout|error recovery|Reconnecting|not free'",
                    timeout=30).out
    expect(not log.strip(), f"Linux's nvme-rdma stalled under netem:\n{log[-1500:]}")
    st = {"fio_secs": fio.secs, "secs": time.monotonic() - t0, **rc}
    for k, rx in (("dropped", r"dropped (\d+)"), ("requeues", r"requeues (\d+)"), ("sent", r"Sent \d+ bytes (\d+) pkt")):
        m = re.search(rx, q)
        expect(m, f"no {k} in netem's counters: {q}")
        st[k] = int(m.group(1))
    st.update(capture.roce_sequence(pcap, topo.INITIATOR_IP, e0, e1))
    short = {k: (st[k], n) for k, n in NETEM_MIN.items() if st[k] < n}
    expect(not short, f"netem '{NETEM}' did too little (have, want): {short}; {st}")
    expect(st["unfilled"] == 0, f"PSN holes never filled in the capture: {st}")
    return st


def counters(app):
    """Host-DRAM bytes (`stats dma`: device DMA to and from DRAM and CPU bytes in DRAM, the NIC's
    descriptors included, as tests/lab/nvmet_p2p_tests.py counts them) and the RDMA placement."""
    c = {}
    dma = app.cmd("stats dma")
    m = re.search(r"^\s+host-dram\s+dma-to-device (\d+) B\s+dma-from-device (\d+) B\s+cpu (\d+) B", dma, re.M)
    expect(m, f"no host-dram line in stats dma:\n{dma[-1500:]}")
    c["host"] = sum(map(int, m.groups()))
    t = app.cmd("stats nvmet_rdma")
    m = re.search(r"rdma p2p: (\w+), reads (\d+) \((\d+) B\) writes (\d+) \((\d+) B\)", t)
    expect(m, f"no rdma p2p line:\n{t[-1500:]}")
    c["p2p_reads"], c["p2p_read_bytes"], c["p2p_writes"], c["p2p_write_bytes"] = map(int, m.groups()[1:])
    fb = re.search(r"rdma dram fallback:(.*)$", t, re.M)
    expect(fb, f"no rdma dram fallback line:\n{t[-1500:]}")
    for name, n, _ in re.findall(r" ([a-z0-9-]+) (\d+) \((\d+) B\)", fb.group(1)):
        c["dram_" + name] = int(n)
    # write data left in the NIC's receive buffers, and the bytes copied out of them (CMB -> CMB)
    m = re.search(r"rdma write in place: (\d+) \((\d+) B\)", t)
    cp = re.search(r"rdma write copied:(.*)$", t, re.M)
    expect(m and cp, f"no rdma write in place / copied lines:\n{t[-1500:]}")
    c["inplace_bytes"] = int(m.group(2))
    m = re.search(r"rdma in-capsule in place: (\d+) \((\d+) B\)", t)
    expect(m, f"no rdma in-capsule in place line:\n{t[-1500:]}")
    c["inline_inplace_bytes"] = int(m.group(2))
    c["copied_bytes"] = sum(int(b) for _, _, b in re.findall(r" ([a-z0-9-]+) (\d+) \((\d+) B\)", cp.group(1)))
    return c


def dram_ratio(app, linux, dev, mtu, mib=8):
    """fio 128 KiB sequential writes, then reads verified, of mib MiB: host-DRAM bytes per payload
    byte for each, asserted <= LIMITS[mtu], every payload in device memory. Returns the figures."""
    fio = (f"fio --name=dram --filename={dev} --direct=1 --ioengine=libaio --bs=128k --size={mib}M "
           f"--iodepth=8 --offset=48M --verify=crc32c --output-format=terse --terse-version=3")
    out = {}
    for phase, args in (("write", "--rw=write --do_verify=0"), ("read", "--rw=write --verify_only")):
        before = counters(app)
        r = linux.run(f"{fio} {args} || exit 1; echo FIO-OK", timeout=300)
        expect(r.rc == 0 and "FIO-OK" in r.out, f"fio {phase} at MTU {mtu} failed (rc {r.rc}):\n{r.out[-1500:]}")
        after = counters(app)
        d = delta(after, before)
        payload = mib << 20
        ratio = d["host"] / payload
        terse = [ln for ln in r.out.splitlines() if ln.startswith("3;")]
        fields = terse[-1].split(";") if terse else []
        bw = int(fields[6 if phase == "read" else 47]) if len(fields) > 47 else 0
        out[phase] = (ratio, bw, d["inplace_bytes"], d["copied_bytes"])
        key = "p2p_write_bytes" if phase == "write" else "p2p_read_bytes"
        expect(d[key] >= payload, f"MTU {mtu} {phase}: payload not in device memory: {d}")
        if phase == "write":
            expect(d["inplace_bytes"] >= payload and d["copied_bytes"] == 0,
                   f"MTU {mtu} write: data not gathered from the NIC's buffers in place: {d}")
        fallbacks = {k: v for k, v in d.items() if k.startswith("dram_") and v}
        expect(not fallbacks, f"MTU {mtu} {phase}: payloads through DRAM: {fallbacks}")
        if ratio > LIMITS[mtu]:
            expect(False, f"MTU {mtu} {phase}: {ratio:.3f} host-DRAM bytes per payload byte (limit {LIMITS[mtu]}): "
                   f"{d['host']} B for {payload} B; {d}\n{app.cmd('stats rdma')}\n{app.cmd('nic')}")
    # 4 KiB random writes: the data comes in the capsule, left in the NIC's buffers too
    before = counters(app)
    r = linux.run(f"fio --name=dram4k --filename={dev} --direct=1 --ioengine=libaio --bs=4k --size=2M "
                  f"--iodepth=8 --offset=48M --rw=randwrite --output-format=terse --terse-version=3 "
                  f"|| exit 1; echo FIO-OK", timeout=300)
    expect(r.rc == 0 and "FIO-OK" in r.out, f"fio 4 KiB writes at MTU {mtu} failed (rc {r.rc}):\n{r.out[-1500:]}")
    d = delta(counters(app), before)
    expect(d["inline_inplace_bytes"] >= 2 << 20, f"MTU {mtu}: 4 KiB writes not in the NIC's buffers in place: {d}")
    out["write4k"] = (d["host"] / (2 << 20), 0, d["inline_inplace_bytes"], d["copied_bytes"])
    return out


def ratio_text(mtu, res):
    return (f"MTU {mtu}: write {res['write'][0]:.3f} host-DRAM B/B ({res['write'][1] / 1024:.1f} MiB/s, "
            f"{res['write'][2]} B in place in the NIC's buffers, {res['write'][3]} B copied out of them), "
            f"read {res['read'][0]:.3f} ({res['read'][1] / 1024:.1f} MiB/s), 4 KiB writes {res['write4k'][0]:.3f} "
            f"({res['write4k'][2]} B in the capsule in place)")


def jumbo(s):
    """The appliance and the host at MTU 9000 (path MTU 4096): host-DRAM bytes per payload byte."""
    with Lab("tests-nvmet-rdma-9000") as lab:
        s.extra_rundirs.append(lab.rundir)
        app, linux = boot(lab, 9000)
        c = connect(linux)
        m = re.search(r"CTRL=(nvme\d+) BLK=(/dev/\S+)", c.out)
        expect(c.rc == 0 and m, f"nvme connect -t rdma at MTU 9000 failed (rc {c.rc}):\n{c.out[-2000:]}")
        try:
            return dram_ratio(app, linux, m.group(2), 9000)
        finally:
            linux.run(f"nvme disconnect -n {NQN}", timeout=60)


def test_nvmet_rdma(s):
    """Linux nvme-rdma over rxe -> the appliance: discover, connect (2 I/O queues), read-back, fio
    verify, console, disconnect/reconnect, refused host, clean capture."""
    with Lab("tests-nvmet-rdma") as lab:
        s.extra_rundirs.append(lab.rundir)
        app, linux = boot(lab)
        text = session(app, linux, lab.links[0].pcap)
    return text + "; " + ratio_text(9000, jumbo(s))


def session(app, linux, pcap):
    t0 = time.monotonic()
    r = linux.run(f"nvme discover -t rdma -a {APP} -s 4420", timeout=90)
    expect(r.rc == 0 and f"subnqn:  {NQN}" in r.out and "trtype:  rdma" in r.out,
           f"nvme discover -t rdma failed (rc {r.rc}):\n{r.out}\n{linux.run('dmesg | tail -20').out}")
    expect(re.search(r"rdma_prtype: not specified", r.out) and re.search(r"rdma_qptype: connected", r.out)
           and re.search(r"rdma_cms:\s+rdma-cm", r.out), f"RDMA TSAS not as Linux expects:\n{r.out}")
    c = connect(linux, "-i 2")
    m = re.search(r"CTRL=(nvme\d+) BLK=(/dev/\S+)", c.out)
    expect(c.rc == 0 and m, f"nvme connect -t rdma failed (rc {c.rc}):\n{c.out[-2000:]}\n{app.cmd('stats nvmet_rdma')[-1500:]}")
    dev = m.group(2)
    try:
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
        fio = fio_verify(linux, [("rnd", dev, "randwrite", "4k", "2M", "32M", "--iodepth=16"),
                                 ("seq", dev, "write", "128k", "4M", "40M", "--iodepth=8")], timeout=400)
        qs, text = rdma_queues(app)
        # Linux caps -i at its online CPUs (1 in this guest): the admin queue and 1..2 I/O queues
        qids = sorted(q[1] for q in qs)
        expect(2 <= len(qs) <= 3 and qids[0] == "0" and qids[1] == "1", f"RDMA queues:\n{text}")
        m = re.search(r"rdma-read (\d+) \((\d+) B\) rdma-write (\d+) \((\d+) B\) in-capsule (\d+)", text)
        expect(m and int(m.group(2)) >= 4 << 20 and int(m.group(4)) >= 6 << 20 and int(m.group(5)) > 0,
               f"RDMA data counters:\n{text}")
        rd, wr = int(m.group(2)), int(m.group(4))
        ratios = dram_ratio(app, linux, dev, 1500)
    finally:
        d = linux.run(f"nvme disconnect -n {NQN}", timeout=60)
    expect(d.rc == 0 and "disconnected 1 controller" in d.out, f"nvme disconnect (rc {d.rc}):\n{d.out}")
    for _ in range(50):
        qs, text = rdma_queues(app)
        if not qs:
            break
        time.sleep(0.2)
    expect(not qs, f"RDMA queues left after disconnect:\n{text}")

    # reconnect: the data written before reads back
    c = connect(linux)
    m = re.search(r"CTRL=(nvme\d+) BLK=(/dev/\S+)", c.out)
    expect(c.rc == 0 and m, f"reconnect failed:\n{c.out[-1500:]}")
    rb = linux.run(f"""
        for k in 0 1 2 3 4 5 6 7; do
          dd if={m.group(2)} of=/tmp/r$k bs=4096 count=1 skip=$((k * 1000 + 3)) iflag=direct 2>/dev/null
          cmp /tmp/w$k /tmp/r$k || exit 1
        done
        echo SAME""", timeout=60)
    linux.run(f"nvme disconnect -n {NQN}", timeout=60)
    expect("SAME" in rb.out, f"after reconnect the data differs:\n{rb.out}")

    # a host NQN not on the allowlist: Connect Invalid Host
    t_bad = time.monotonic()
    bad = linux.run(f"nvme connect -t rdma -a {APP} -s 4420 -n {NQN} --hostnqn={HOST_BAD}; echo rc=$?; "
                    "dmesg | tail -5", timeout=90)
    expect("rc=0" not in bad.out, f"a host not on the allowlist connected:\n{bad.out}")
    secs = time.monotonic() - t0
    bad_secs = time.monotonic() - t_bad

    # netem on the host's side: loss and reordering; fio verify loses nothing
    nt = netem_fio(app, linux, pcap)
    # keep-alive expiry: a 2 s KATO, then every frame of the host dropped; the appliance kills the
    # controller, disconnects (DREQ) and frees its RDMA queues
    c = connect(linux, "-k 2 -c 1 -l 3")
    expect(c.rc == 0, f"connect with KATO 2 s failed:\n{c.out[-1500:]}")
    expired = int(re.search(r"keep-alive expiries (\d+)", app.cmd("nvmet")).group(1))
    linux.run("tc qdisc add dev eth0 root netem loss 100%", check=True)
    try:
        t1 = time.monotonic()
        while time.monotonic() - t1 < 15:
            qs, text = rdma_queues(app)
            if not qs:
                break
            time.sleep(0.5)
        ka_secs = time.monotonic() - t1
        expect(not qs, f"RDMA queues still there {ka_secs:.1f} s after the host went silent:\n{text}")
        now = int(re.search(r"keep-alive expiries (\d+)", text).group(1))
        expect(now == expired + 1, f"keep-alive expiry not counted ({expired} -> {now}):\n{text}")
    finally:
        linux.run("tc qdisc del dev eth0 root", timeout=30)
        linux.run(f"nvme disconnect -n {NQN}", timeout=60)

    roce = capture.count(pcap, "udp.port == 4791 && infiniband")
    nvme = capture.count(pcap, "nvme-rdma")
    bad_t, tolerated = capture.problems(pcap, "udp.port == 4791")
    expect(roce > 0 and nvme > 0, f"capture: {roce} RoCE packets, {nvme} NVMe/RDMA")
    expect(not bad_t, f"malformed RoCE/NVMe-RDMA frames: {bad_t[:5]}")
    netem = (f"under netem '{NETEM}' fio verify (4 KiB random 4 MiB + 128 KiB sequential 8 MiB) in "
             f"{nt['fio_secs']:.1f} s ({nt['secs']:.1f} s with connect and disconnect): netem dropped {nt['dropped']} "
             f"and sent {nt['requeues']} ahead of {nt['sent']} frames; the capture: {nt['overtaking']} of "
             f"{nt['frames']} frames from the host overtook one sent before, {nt['holes']} PSN holes in its "
             f"requests filled by the late original {nt['filled_late']}, by a retransmission "
             f"{nt['filled_by_resend']}; the appliance's RC QPs: {nt['naks_seq']} sequence NAKs, {nt['dups']} "
             f"duplicates, {nt['retransmits']} retransmissions ({nt['timeouts']} after a timeout)")
    return (f"discover (RDMA TSAS), connect {len(qids) - 1} I/O queue(s) (-i 2), 8 x 4 KiB read back, fio verify (4 KiB "
            f"random 2 MiB + 128 KiB sequential 4 MiB) in {fio.secs:.1f} s, RDMA READ {rd} B WRITE {wr} B, disconnect frees {len(qids)} queues, reconnect reads "
            f"back, {HOST_BAD} refused in {bad_secs:.1f} s ({secs:.0f} s); {netem}; KATO 2 s: queues gone {ka_secs:.1f} s after the "
            f"host went silent; {roce} RoCE packets ({nvme} NVMe/RDMA) dissected, "
            f"none malformed, {len(tolerated)} tolerated (tshark nvme-rdma log-page bug); {ratio_text(1500, ratios)}")


TESTS = [
    ("nvmet_rdma", test_nvmet_rdma),
]
