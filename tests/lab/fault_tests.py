"""tests/lab/fault_tests.py: drive faults as a Linux host sees them through NVMe/TCP (issue 22), run by
tests/lab/run-tests.

nvmet_drive_faults: the appliance with a fault drive (tools/qemu-run --fault-drive: nvme3 over QEMU's
blkdebug, which fails reads of LBA 100 and writes of LBA 200) exports it as nsid 1 and nvme0 as
nsid 2 of one subsystem; a Linux initiator connects.
- Media errors: while fio writes and verifies other LBAs of nsid 1 and all of a region of nsid 2,
  dd reads LBA 100 and writes LBA 200 with O_DIRECT: each fails with EIO, Linux logs the drive's own
  status (sct 0x2 / sc 0x81 Unrecovered Read Error, sc 0x80 Write Fault, both with DNR as the drive set it:
  no retry), dd sees ENODATA (Linux's BLK_STS_MEDIUM), the host's Error log (`nvme error-log`)
  holds the status with the LBA, fio verifies clean on both namespaces.
- A drive that stops answering: QMP block_set_io_throttle slows nvme3 to 1 B/s; a 4 KiB write from
  Linux times out at the appliance (5 s), the Abort is ignored (1 s), the drive is reset and the
  write fails back with a retryable status (DNR clear, in the host's Error log); once the reset is seen the throttle is lifted and
  Linux's own retry completes the write: dd succeeds and reads back equal, fio on nsid 2 meanwhile
  verifies clean. The time from the write to its completion is reported."""
import os
import re
import shutil
import sys
import tempfile
import threading
import time

import topo
from baseline_tests import appliance_esp, expect
from lab import Lab
from net_tests import PROMPT, Appliance
from nvmet_tests import SH

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "qemu"))
from harness import Qmp  # noqa: E402

NQN = "nqn.2026-11.org.p2pstore:faults0"
NVMET_JSON = """{
  "ports": [ { "portid": 1, "addr": { "trtype": "tcp", "adrfam": "ipv4", "traddr": "%(app)s",
               "trsvcid": "4420" }, "subsystems": [ "%(nqn)s" ] } ],
  "subsystems": [
    { "nqn": "%(nqn)s", "attr": { "allow_any_host": "1", "serial": "p2pfaults01", "model": "p2pstore" },
      "namespaces": [ { "nsid": 1, "enable": 1, "device": { "path": "/dev/nvme3n1" } },
                      { "nsid": 2, "enable": 1, "device": { "path": "/dev/nvme0n1" } } ] } ]
}
""" % {"app": topo.APPLIANCE_IP, "nqn": NQN}

BLKDEBUG = """[inject-error]
event = "read_aio"
errno = "5"
sector = "100"

[inject-error]
event = "write_aio"
errno = "5"
sector = "200"
"""


def fio(name, dev, offset, size):
    return (f"fio --name={name} --filename={dev} --rw=randwrite --bs=4k --offset={offset} --size={size} "
            f"--direct=1 --ioengine=libaio --iodepth=4 --verify=crc32c --do_verify=1 --randrepeat=1 "
            f"--output-format=terse --terse-version=3 >/tmp/{name}.out 2>&1; echo \"FIO {name} rc=$?\"")


# busybox's date has no %N: milliseconds since boot from /proc/uptime (centiseconds)
MS = 'ms() { read u _ < /proc/uptime; echo $(( ${u%.*}${u#*.} * 10 )); }\n'


def throttle(qmp, bps):
    qmp.execute("block_set_io_throttle", id="nvme9", bps=bps, bps_rd=0, bps_wr=0, iops=0, iops_rd=0, iops_wr=0)


def test_nvmet_drive_faults(s):
    lab = Lab("tests-faults", capture=False)
    s.extra_rundirs.append(lab.rundir)
    qdir = tempfile.mkdtemp(prefix="p2pqmp")
    qmp = None
    try:
        esp = os.path.join(lab.rundir, "esp-faults")
        shutil.rmtree(esp, ignore_errors=True)
        shutil.copytree(appliance_esp(), esp)
        os.makedirs(os.path.join(esp, "p2pstore"), exist_ok=True)
        with open(os.path.join(esp, "p2pstore", "nvmet.json"), "w") as f:
            f.write(NVMET_JSON)
        with open(os.path.join(esp, "p2pstore", "p2pstore.cfg"), "w") as f:
            f.write("panic = exit\n")
        conf = os.path.join(lab.rundir, "blkdebug.conf")
        with open(conf, "w") as f:
            f.write(BLKDEBUG)
        topo.pin_static_address(esp)
        qmp_path = os.path.join(qdir, "qmp")
        link = lab.link("link0")
        linux = lab.guest("initiator", ip=f"{topo.INITIATOR_IP}/24", links=[link])
        dev = lab.appliance(esp, link, run_args=["--fault-drive", conf],
                            extra=["-qmp", f"unix:{qmp_path},server=on,wait=off"])
        lab.start()
        dev.expect(r"nvmet: target started from nvmet\.json: 1 ports, 1 subsystems", timeout=120)
        dev.expect(re.escape(PROMPT), timeout=30)
        app = Appliance(dev)
        qmp = Qmp(qmp_path)
        r = linux.run(SH + f"""
            nvme connect -t tcp -a {topo.APPLIANCE_IP} -s 4420 -n {NQN} || {{ dmesg | tail -20; exit 1; }}
            c=$(ctrl {NQN}) || exit 1
            echo "CTRL=$c"
            for i in $(seq 50); do
              for s in /sys/class/nvme-subsystem/nvme-subsys*; do
                [ "$(cat $s/subsysnqn)" = {NQN} ] || continue
                for n in $s/nvme*n*; do [ -b /dev/${{n##*/}} ] && echo "NS $(cat $n/nsid) /dev/${{n##*/}}"; done
              done | sort -u > /tmp/ns; [ $(wc -l < /tmp/ns) = 2 ] && break; sleep 0.1
            done
            cat /tmp/ns""", timeout=90)
        ns = dict(re.findall(r"^NS (\d) (/dev/\S+)$", r.out, re.M))
        mc = re.search(r"CTRL=(nvme\d+)", r.out)
        expect(r.rc == 0 and mc and len(ns) == 2, f"nvme connect failed (rc {r.rc}):\n{r.out[-1500:]}")
        ctrl, ns1, ns2 = mc.group(1), ns["1"], ns["2"]

        # --- media errors, with fio verifying elsewhere on both namespaces meanwhile
        r = linux.run(MS + f"""
            dmesg -c >/dev/null
            ({fio("near", ns1, "1M", "2M")}) &
            ({fio("other", ns2, "0", "4M")}) &
            t0=$(ms)
            dd if={ns1} of=/dev/null bs=512 skip=100 count=1 iflag=direct 2>&1; echo "READ rc=$? ms=$(( $(ms) - t0 ))"
            t0=$(ms)
            dd if=/dev/urandom of={ns1} bs=512 seek=200 count=1 oflag=direct 2>&1; echo "WRITE rc=$? ms=$(( $(ms) - t0 ))"
            wait
            dmesg | grep -i -E "nvme|error" | tail -20
            nvme error-log /dev/{ctrl} -e 8 -o json""", timeout=300)
        out = r.out
        rd = re.search(r"READ rc=(\d+) ms=(\d+)", out)
        wr = re.search(r"WRITE rc=(\d+) ms=(\d+)", out)
        expect(rd and rd.group(1) != "0" and wr and wr.group(1) != "0", f"dd should fail with EIO:\n{out[-3000:]}")
        # Linux turns a media status into BLK_STS_MEDIUM, which reaches dd as ENODATA
        expect(out.count("No data available") >= 2, f"dd should report ENODATA:\n{out[-3000:]}")
        expect(re.search(r"LBA 100, 1 blocks, I/O Error \(sct 0x2 / sc 0x81\) DNR", out),
               f"Linux should log Unrecovered Read Error (sct 0x2 / sc 0x81) at LBA 100:\n{out[-3000:]}")
        expect(re.search(r"LBA 200, 1 blocks, I/O Error \(sct 0x2 / sc 0x80\) DNR", out),
               f"Linux should log Write Fault (sct 0x2 / sc 0x80) at LBA 200:\n{out[-3000:]}")
        expect("FIO near rc=0" in out and "FIO other rc=0" in out, f"fio verify failed elsewhere:\n{out[-3000:]}")
        # Error Information log entries (nvme-cli's status_field: the status without the phase
        # tag, DNR in bit 14)
        lbas = {int(lba): int(st) for st, lba in
                re.findall(r'"status_field"\s*:\s*(\d+),.*?"lba"\s*:\s*(\d+)', out, re.S)}
        expect(lbas.get(100, 0) == 0x4281 and lbas.get(200, 0) == 0x4280,
               f"the host's Error log should hold 0x281 at LBA 100 and 0x280 at LBA 200: {lbas}\n{out[-2000:]}")
        media = (f"read of LBA 100 failed (ENODATA, sct 0x2/sc 0x81 DNR) after {rd.group(2)} ms, write of LBA 200 "
                 f"(sct 0x2/sc 0x80 DNR) after {wr.group(2)} ms")

        # --- a drive that stops answering
        throttle(qmp, 1)
        linux.run(f"dd if={ns1} of=/dev/null bs=512 count=1 skip=8 iflag=direct", timeout=60)  # fills the bucket
        seen = {}

        def lift():
            try:
                dev.expect(r"nvme3: reset complete in (\d+) ms", timeout=60)
                seen["reset"] = time.monotonic()
            finally:
                throttle(qmp, 0)
        th = threading.Thread(target=lift, daemon=True)
        th.start()
        t0 = time.monotonic()
        r = linux.run(MS + f"""
            ({fio("busy", ns2, "8M", "4M")}) &
            head -c 4096 /dev/urandom > /tmp/blk
            t0=$(ms)
            dd if=/tmp/blk of={ns1} bs=4096 seek=2048 count=1 oflag=direct 2>&1; echo "STALL rc=$? ms=$(( $(ms) - t0 ))"
            dd if={ns1} of=/tmp/back bs=4096 skip=2048 count=1 iflag=direct 2>/dev/null
            cmp /tmp/blk /tmp/back && echo SAME
            wait
            dmesg | grep -i nvme | tail -8
            nvme error-log /dev/{ctrl} -e 2 -o json""", timeout=180)
        th.join(65)
        out = r.out
        st = re.search(r"STALL rc=(\d+) ms=(\d+)", out)
        expect(st and st.group(1) == "0" and "SAME" in out,
               f"the stalled write should complete after the reset and read back equal:\n{out[-3000:]}")
        expect("reset" in seen, "the appliance did not reset the stalled drive")
        expect("FIO busy rc=0" in out, f"fio on the other namespace failed:\n{out[-2000:]}")
        stalls = [int(st) for st, lba in re.findall(r'"status_field"\s*:\s*(\d+),.*?"lba"\s*:\s*(\d+)', out, re.S)
                  if int(lba) == 2048 * 8]
        expect(stalls and not stalls[0] & 0x4000,
               f"the host's Error log should show the stalled write's retryable status (DNR clear):\n{out[-2500:]}")
        drv = app.cmd("stats nvme")
        m = re.search(r"nvme3: state live errors \d+ timeouts (\d+) aborts (\d+) lost \d+ resets (\d+)", drv)
        expect(m and int(m.group(1)) >= 1 and int(m.group(3)) >= 1, f"nvme3 counters:\n{drv[-1500:]}")
        linux.run(f"nvme disconnect -n {NQN}", timeout=60)
        return (f"{media}; stalled 4 KiB write failed back with status 0x{stalls[0] & 0x7ff:03x} (DNR clear) "
                f"and completed by Linux's retry after {st.group(2)} ms (appliance timeout 5 s + Abort 1 s + "
                f"reset), timeouts {m.group(1)} resets {m.group(3)}; "
                f"fio verify clean on both namespaces")
    finally:
        if qmp:
            qmp.close()
        shutil.rmtree(qdir, ignore_errors=True)
        lab.close()


TESTS = [("nvmet_drive_faults", test_nvmet_drive_faults)]
