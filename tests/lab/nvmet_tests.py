"""tests/lab/nvmet_tests.py: the appliance's NVMe-oF target against Linux's own NVMe/TCP initiator
(issue 8), run by tests/lab/run-tests.

Topology (a): a Linux guest (10.10.0.2) and the appliance (10.10.0.10) on one captured lab link.
The appliance boots with an nvmetcli configuration (\\p2pstore\\nvmet.json) exporting its first
local drive; the Linux guest runs nvme-cli: discover, connect, nvme list, 4 KiB direct writes and
reads compared by content, disconnect. tshark then checks every NVMe/TCP PDU of the capture.
Then fio with verify: 128 KiB sequential writes (R2T + H2CData) and 4 KiB random read/write.
"""
import os
import re
import shutil

import capture
import topo
from baseline_tests import appliance_esp, expect
from lab import Lab

NQN = "nqn.2026-11.org.p2pstore:vol0"
NVMET_JSON = """{
  "hosts": [],
  "ports": [ { "portid": 1, "addr": { "trtype": "tcp", "adrfam": "ipv4", "traddr": "10.10.0.10",
               "trsvcid": "4420" }, "subsystems": [ "%s" ] } ],
  "subsystems": [ { "nqn": "%s", "attr": { "allow_any_host": "1", "serial": "p2pstore0001",
                    "model": "p2pstore" },
                    "namespaces": [ { "nsid": 1, "enable": 1, "device": { "path": "/dev/nvme0n1" } } ] } ]
}
""" % (NQN, NQN)


def dma_counters(text):
    """{class: (dma-to-device, dma-from-device, cpu)} from the appliance's `stats dma`."""
    out = {}
    for m in re.finditer(r"^\s+(host-dram|device)\s+dma-to-device (\d+) B\s+dma-from-device (\d+) B\s+cpu (\d+) B",
                         text, re.M):
        out[m.group(1)] = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
    expect(len(out) == 2, "stats dma:\n" + text)
    return out


def console(app, line, timeout=30):
    """Type a command on the appliance's console; return what it printed before the next prompt."""
    app.send(line + "\r")
    return app.expect(r"(?s)(.*?)p2pstore> ", timeout=timeout).group(1)


def test_nvmet_tcp_linux_initiator(s):
    """Linux nvme-cli -> the appliance's NVMe/TCP target: discover, connect, list, 4 KiB I/O read
    back equal at 8 offsets, the appliance's counters, disconnect, a clean capture."""
    esp = os.path.join(s.lab.rundir, "esp-nvmet")
    shutil.rmtree(esp, ignore_errors=True)
    shutil.copytree(appliance_esp(), esp)
    os.makedirs(os.path.join(esp, "p2pstore"), exist_ok=True)
    with open(os.path.join(esp, "p2pstore", "nvmet.json"), "w") as f:
        f.write(NVMET_JSON)
    with open(os.path.join(esp, "p2pstore", "p2pstore.cfg"), "w") as f:
        f.write("panic = exit\n")
    with Lab("tests-nvmet") as lab:
        s.extra_rundirs.append(lab.rundir)
        app, linux = topo.appliance_topology(lab, esp)
        lab.start()
        app.expect(r"nvmet: target started from nvmet\.json: 1 ports, 1 subsystems", timeout=90)
        app.expect(r"p2pstore> ", timeout=30)

        r = linux.run(f"nvme discover -t tcp -a {topo.APPLIANCE_IP} -s 4420", timeout=60)
        expect(r.rc == 0 and f"subnqn:  {NQN}" in r.out and f"traddr:  {topo.APPLIANCE_IP}" in r.out,
               f"nvme discover failed (rc {r.rc}):\n{r.out}")
        r = linux.run(f"nvme connect -t tcp -a {topo.APPLIANCE_IP} -s 4420 -n {NQN}", timeout=60)
        expect(r.rc == 0, f"nvme connect failed (rc {r.rc}):\n{r.out}")
        r = linux.run("""
            for i in $(seq 50); do
              dev=$(nvme list 2>/dev/null | awk '$2 ~ /^\\/dev\\/ng/ && /p2pstore0001/ {print $1; exit}')
              [ -n "$dev" ] && { echo $dev; exit 0; }
              sleep 0.1
            done; nvme list; exit 1""", timeout=30)
        expect(r.rc == 0, "no block device with serial p2pstore0001 after connect:\n" + r.out)
        dev = r.out.strip().splitlines()[-1]
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
        before = dma_counters(console(app, "stats dma"))
        fio = linux.run(f"""
            fio --name=seq --filename={dev} --direct=1 --ioengine=libaio --rw=write --bs=128k --size=8M \
                --iodepth=8 --verify=crc32c --offset=16M --output-format=terse --terse-version=3 || exit 1
            fio --name=rnd --filename={dev} --direct=1 --ioengine=libaio --rw=randrw --bs=4k --size=4M \
                --iodepth=16 --verify=crc32c --offset=32M --output-format=terse --terse-version=3 || exit 2
            echo FIO-OK""", timeout=300)
        expect(fio.rc == 0 and "FIO-OK" in fio.out, f"fio verify failed (rc {fio.rc}):\n{fio.out[-1500:]}")
        after = dma_counters(console(app, "stats dma"))
        # what the drives read for the writes: from device memory (the NIC's CMB fragments)
        to_dev_host = after["host-dram"][0] - before["host-dram"][0]
        to_dev_dev = after["device"][0] - before["device"][0]
        # At MTU 1500 a 128 KiB write arrives in ~91 fragments, more than the 32 segments a
        # command takes today, so the transport gathers it into DRAM: report, do not assert yet.
        expect(to_dev_dev + to_dev_host >= 12 << 20, f"write payload not counted: {before} -> {after}")
        state = console(app, "nvmet")
        m = re.search(r"read (\d+) cmds (\d+) B, write (\d+) cmds (\d+) B", state)
        expect(m and int(m.group(3)) >= 8 and int(m.group(4)) >= 8 * 4096 and int(m.group(1)) >= 8,
               "appliance counters:\n" + state)
        expect(re.search(r"^1 controllers, \d+ queues", state, re.M), "one controller connected:\n" + state)

        r = linux.run(f"nvme disconnect -n {NQN}", timeout=60)
        expect(r.rc == 0 and "disconnected 1 controller" in r.out, f"nvme disconnect (rc {r.rc}):\n{r.out}")
        gone = ""
        for _ in range(50):
            gone = console(app, "nvmet")
            if re.search(r"^0 controllers, 0 queues", gone, re.M):
                break
        expect(re.search(r"^0 controllers, 0 queues", gone, re.M), "controller not freed after disconnect:\n" + gone)

        pcap = lab.links[0].pcap
        pdus = capture.count(pcap, "nvme-tcp")
        bad, tolerated = capture.problems(pcap, "nvme-tcp || tcp.port == 4420")
        expect(pdus > 0, "no NVMe/TCP PDU in the capture")
        expect(not bad and not tolerated, f"malformed NVMe/TCP frames: {bad[:5]}")
        r2t = capture.count(pcap, "nvme-tcp.type == 9")
        expect(r2t > 0, "no R2T in the capture: the 128 KiB writes did not use R2T/H2CData")
        return (f"discover, connect, {dev} listed, 8 x 4 KiB read back equal, fio verify 128 KiB seq "
                f"+ 4 KiB rand, disconnect; {pdus} NVMe/TCP PDUs ({r2t} R2T) dissected, none malformed; "
                f"drives read write data: {to_dev_dev} B from device memory, {to_dev_host} B from host DRAM")


TESTS = [("nvmet_tcp", test_nvmet_tcp_linux_initiator)]
