"""tests/lab/durable_tests.py: acknowledged means durable across a power-off (issue 21), run by
tests/lab/run-tests.

nvmet_durable: a Linux initiator and the appliance on one uncaptured link; the appliance exports
/dev/nvme0n1 (vol0, any host) and keeps its drives' backing files in the lab's run directory
(tools/qemu-run --disks), so a second boot finds what the first one wrote. Linux writes two 8 MiB
regions through NVMe/TCP with fio and crc32c verify headers: one with --sync=1 (O_SYNC direct
writes, which Linux sends as FUA because the target reports a volatile write cache) and one with
--fsync=1 (a Flush after every write). The appliance's counters show FUA writes and Flushes at
the target and at the drive; then it is powered off from its console while the host is still
connected (each drive flushed and sent CC.SHN, outcome printed), booted again on the same backing
files; the host's controller reconnects by itself and fio --verify_only reads both regions back
equal.
Under QEMU the backing files sit in the host's page cache, so this proves the sequence and that
nothing acknowledged is lost over a power-off and reboot; the power-cut semantics themselves are
proven against the fake drive's volatile cache in the unit tests (test_nvmet_durable)."""
import os
import re
import shutil
import time

import topo
from baseline_tests import appliance_esp, expect
from lab import Lab
from net_tests import PROMPT, Appliance
from nvmet_tests import SH

NQN = "nqn.2026-11.org.p2pstore:durable0"
NVMET_JSON = """{
  "ports": [ { "portid": 1, "addr": { "trtype": "tcp", "adrfam": "ipv4", "traddr": "%(app)s",
               "trsvcid": "4420" }, "subsystems": [ "%(nqn)s" ] } ],
  "subsystems": [
    { "nqn": "%(nqn)s", "attr": { "allow_any_host": "1", "serial": "p2pdurable01", "model": "p2pstore" },
      "namespaces": [ { "nsid": 1, "enable": 1, "device": { "path": "/dev/nvme0n1" } } ] } ]
}
""" % {"app": topo.APPLIANCE_IP, "nqn": NQN}

# Two regions, the same job lines for the write and the verify-only pass (fio regenerates the
# same headers and seeds from the same parameters).
JOBS = [("fua", "--sync=1", 0), ("fsync", "--fsync=1", 8 << 20)]


def fio_lines(dev, verify_only):
    out = []
    for name, mode, offset in JOBS:
        phase = "--verify_only" if verify_only else "--do_verify=0"
        out.append(f"fio --name={name} --filename={dev} --rw=write --bs=64k --size=8M --offset={offset} "
                   f"--direct=1 --ioengine=psync {mode} --verify=crc32c {phase} --randrepeat=1 "
                   f"--output-format=terse --terse-version=3 || exit 1")
    return "\n".join(out)


def connect(linux):
    r = linux.run(SH + f"""
        nvme connect -t tcp -a {topo.APPLIANCE_IP} -s 4420 -n {NQN} || {{ dmesg | tail -20; exit 1; }}
        c=$(ctrl {NQN}) || exit 1
        b=$(blk {NQN}) || exit 1
        echo "BLK=$b"
        cat /sys/block/${{b#/dev/}}/queue/write_cache /sys/block/${{b#/dev/}}/queue/fua""", timeout=90)
    m = re.search(r"BLK=(/dev/\S+)\n(\S.*)\n(\d)", r.out)
    expect(r.rc == 0 and m, f"nvme connect failed (rc {r.rc}):\n{r.out[-1500:]}")
    return m.group(1), m.group(2), m.group(3)


def boot_wait(dev):
    dev.expect(r"nvmet: target started from nvmet\.json: 1 ports, 1 subsystems", timeout=120)
    dev.expect(re.escape(PROMPT), timeout=30)


def test_nvmet_durable(s):
    lab = Lab("tests-durable", capture=False)
    s.extra_rundirs.append(lab.rundir)
    try:
        disks = os.path.join(lab.rundir, "disks")
        shutil.rmtree(disks, ignore_errors=True)
        esp = topo.appliance_esp_copy(lab, "esp-durable", appliance_esp(),
                                      {"nvmet.json": NVMET_JSON, "p2pstore.cfg": "panic = exit\n"})
        link = lab.link("link0")
        linux = lab.guest("initiator", ip=f"{topo.INITIATOR_IP}/24", links=[link])
        dev = lab.appliance(esp, link, run_args=["--disks", disks])
        lab.start()
        boot_wait(dev)
        app = Appliance(dev)
        blk, wc, fua = connect(linux)
        expect(wc == "write back" and fua == "1",
               f"Linux should see a volatile write cache with FUA (write_cache {wc!r}, fua {fua!r})")
        r = linux.run(fio_lines(blk, False) + "\necho FIO-OK", timeout=600)
        expect(r.rc == 0 and "FIO-OK" in r.out, f"fio writes failed:\n{r.out[-1500:]}")
        tgt = app.cmd("nvmet")
        m = re.search(r"durability: fua writes (\d+) \(emulated (\d+)\) flushes (\d+)", tgt)
        expect(m and int(m.group(1)) >= 128 and int(m.group(3)) >= 128,
               f"expected >= 128 FUA writes and >= 128 Flushes at the target:\n{tgt[-1200:]}")
        drv = app.cmd("stats nvme")
        d = re.search(r"nvme0: durability vwc 1 fua (\d+) flushes (\d+)", drv)
        expect(d and int(d.group(1)) >= 128 and int(d.group(2)) >= 128,
               f"expected FUA writes and Flushes at drive nvme0:\n{drv[-1200:]}")
        # power off with the host still connected: every drive flushed and notified
        dev.send("poweroff\r")
        for n in range(3):
            dev.expect(rf"nvme{n}: shutdown complete in \d+ ms \(1 namespace\(s\) flushed, CSTS.SHST complete\)",
                       timeout=60)
        deadline = time.monotonic() + 60
        while dev.child.isalive() and time.monotonic() < deadline:
            time.sleep(0.2)
        expect(not dev.child.isalive(), "QEMU did not exit after poweroff")
        # the same backing files, a second boot
        dev.start()
        boot_wait(dev)
        # the host's controller reconnects by itself (reconnect delay 10 s): wait for it
        r = linux.run(SH + f"""
            for i in $(seq 18); do c=$(ctrl {NQN}) && break; done
            [ -n "$c" ] || {{ dmesg | tail -20; exit 1; }}
            b=$(blk {NQN}) || exit 1
            echo "BLK=$b" """, timeout=200)
        m2 = re.search(r"BLK=(/dev/\S+)", r.out)
        expect(r.rc == 0 and m2, f"the host did not reconnect after the reboot:\n{r.out[-1500:]}")
        blk = m2.group(1)
        r = linux.run(fio_lines(blk, True) + "\necho VERIFY-OK", timeout=600)
        expect(r.rc == 0 and "VERIFY-OK" in r.out, f"data lost over the power-off:\n{r.out[-2000:]}")
        linux.run(f"nvme disconnect -n {NQN}", timeout=60)
        return (f"fua writes {m.group(1)}, flushes {m.group(3)} at the target; drive fua {d.group(1)} "
                f"flushes {d.group(2)}; 16 MiB verified after poweroff + reboot")
    finally:
        lab.close()


TESTS = [("nvmet_durable", test_nvmet_durable)]
