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
  verifies clean. The time from the write to its completion is reported.

nvmet_drive_hotplug: the same two namespaces; Linux runs fio verify in a loop on nsid 2 (nvme0, which
stays) while nvme9 (nsid 1's drive, on the hot-plug root port rp9) is unplugged with QMP device_del and
added back with device_add. The appliance flushes and shuts the drive down, the namespace leaves the
active namespace list and a Namespace Attribute Changed notice names it: Linux rescans and removes the
block device (`nvme list-ns` no longer lists it). After device_add the namespace rejoins the list with
another notice, Linux adds the block device again, and the 1 MiB written before the unplug reads back
equal. fio verifies clean throughout, with no I/O slower than STALL_BOUND_MS."""
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
        esp = topo.appliance_esp_copy(lab, "esp-faults", appliance_esp(),
                                      {"nvmet.json": NVMET_JSON, "p2pstore.cfg": "panic = exit\n"})
        conf = os.path.join(lab.rundir, "blkdebug.conf")
        with open(conf, "w") as f:
            f.write(BLKDEBUG)
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
        ctrl, ns = topo.connect_namespaces(linux, NQN, 2)
        ns1, ns2 = ns[1], ns[2]

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


STALL_BOUND_MS = 2000  # the slowest fio I/O on the surviving namespace while the other drive comes and goes


def fio_loop(dev):
    """fio verify runs (4 KiB random writes, crc32c) on dev, one after another while /tmp/go exists
    and at least two (on a loaded host one run of 2 MiB can outlast the whole unplug and return:
    14 s measured with the lab's other lane running at load 7); each run's rc, wall time and
    largest I/O latency (ns) go to /tmp/fio.log."""
    return f"""
        touch /tmp/go; rm -f /tmp/fio.log
        (i=0; while [ -e /tmp/go ] || [ $i -lt 2 ]; do
           t0=$(ms)
           fio --name=surv --filename={dev} --rw=randwrite --bs=4k --size=2M --direct=1 --ioengine=libaio \
               --iodepth=4 --verify=crc32c --do_verify=1 --randrepeat=0 --output-format=json --output=/tmp/fio.json
           rc=$?
           lat=$(awk '/"lat_ns"/ {{f=1}} f && /"max"/ {{gsub(/[^0-9]/, "", $3); print $3; f=0}}' /tmp/fio.json | sort -n | tail -1)
           err=$(grep -c '"error" : [1-9]' /tmp/fio.json)
           echo "FIO run $i rc=$rc err=$err ms=$(( $(ms) - t0 )) maxlat_ns=$lat" >> /tmp/fio.log
           i=$((i + 1))
         done) &
        fio_pid=$!"""


def test_nvmet_drive_hotplug(s):
    lab = Lab("tests-hotplug", capture=False)
    s.extra_rundirs.append(lab.rundir)
    qdir = tempfile.mkdtemp(prefix="p2pqmp")
    qmp = None
    try:
        esp = topo.appliance_esp_copy(lab, "esp-hotplug", appliance_esp(),
                                      {"nvmet.json": NVMET_JSON, "p2pstore.cfg": "panic = exit\n"})
        conf = os.path.join(lab.rundir, "blkdebug.conf")
        with open(conf, "w") as f:
            f.write(BLKDEBUG)  # LBAs 100 and 200 fail: this test stays clear of them
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
        drv = app.cmd("nvme list")
        m = re.search(r"^\d+ (nvme\d+) \S+ live .*sn \"p2pfaulty\"", drv, re.M)
        expect(m, f"no fault drive:\n{drv}")
        fname = m.group(1)
        ctrl, ns = topo.connect_namespaces(linux, NQN, 2)
        ns1, ns2 = ns[1], ns[2]
        # 1 MiB at 1 MiB of nsid 1 (clear of blkdebug's LBAs), to read back after the drive's return
        r = linux.run(f"""
            head -c 1048576 /dev/urandom > /tmp/pat
            dd if=/tmp/pat of={ns1} bs=64k seek=16 oflag=direct 2>/dev/null && md5sum < /tmp/pat""", timeout=60)
        expect(r.rc == 0, f"write before the unplug failed:\n{r.out[-800:]}")
        md5 = r.out.split()[0]

        ev, err = {}, []

        def plug():
            try:
                time.sleep(3)  # fio is running
                start = len(dev._buf)
                t0 = time.monotonic()
                qmp.execute("device_del", id="nvme9")
                dev.expect(r"nsid 1: \S+ is gone: out of the active namespace list", timeout=30)
                ev["gone"] = time.monotonic() - t0
                qmp.wait_event("DEVICE_DELETED", timeout=30)
                ev["deleted"] = time.monotonic() - t0
                time.sleep(4)  # Linux removes the block device meanwhile
                ev["del_log"] = dev._buf[start:]
                start = len(dev._buf)
                t1 = time.monotonic()
                qmp.execute("device_add", driver="nvme", id="nvme9", bus="rp9", drive="faulty", serial="p2pfaulty",
                            cmb_size_mb=16)
                dev.expect(r"nsid 1: \S+ is back: in the active namespace list again", timeout=30)
                ev["back"] = time.monotonic() - t1
                ev["add_log"] = dev._buf[start:]
            except Exception as e:  # reported by the main thread
                err.append(e)
        th = threading.Thread(target=plug, daemon=True)
        th.start()
        r = linux.run(MS + topo.NS_LIST_SH + f"""
            dmesg -c >/dev/null
            {fio_loop(ns2)}
            t0=$(ms)
            for k in $(seq 300); do [ -b {ns1} ] || break; sleep 0.1; done
            [ -b {ns1} ] && echo "STILL {ns1}" || echo "GONE at=$(ms)"
            echo "LISTNS $(nvme list-ns /dev/{ctrl} | tr '\\n' ' ')"
            b=
            for k in $(seq 300); do b=$(nslist {NQN} | awk '$2 == 1 {{print $3}}'); [ -n "$b" ] && break; sleep 0.1; done
            echo "BACK $b at=$(ms)"
            echo "LISTNS2 $(nvme list-ns /dev/{ctrl} | tr '\\n' ' ')"
            sleep 2; rm -f /tmp/go; wait $fio_pid
            cat /tmp/fio.log
            [ -n "$b" ] && dd if=$b bs=64k skip=16 count=16 iflag=direct 2>/dev/null | md5sum | sed 's/^/READBACK /'
            dmesg | grep -i nvme""", timeout=150)
        th.join(70)
        out = r.out
        expect(not err, f"hot-plug sequence failed: {err and err[0]}\nLinux:\n{out[-2000:]}")
        gone = re.search(r"GONE at=(\d+)", out)
        back = re.search(r"BACK (/dev/\S+) at=(\d+)", out)
        expect(gone, f"Linux kept {ns1} after the drive was unplugged:\n{out[-2500:]}")
        lst = re.search(r"LISTNS (.*)", out).group(1)
        expect("0x1" not in lst and "0x2" in lst, f"nvme list-ns after the unplug should hold nsid 2 only: {lst}")
        # Linux's log (uptime, as the script's ms) of the two notices: removal, return
        rescans = [float(t) for t in re.findall(r"^\[\s*(\d+\.\d+)\] nvme nvme\d+: rescanning namespaces", out, re.M)]
        expect(len(rescans) >= 2, f"Linux should log a namespace rescan for each notice:\n{out[-2500:]}")
        expect(back, f"nsid 1 did not come back on the host:\n{out[-2500:]}")
        expect(f"READBACK {md5}" in out, f"the data written before the unplug did not read back equal:\n{out[-2500:]}")
        runs = re.findall(r"FIO run (\d+) rc=(\d+) err=(\d+) ms=(\d+) maxlat_ns=(\d+)", out)
        expect(len(runs) >= 2 and all(rc == "0" and e == "0" for _, rc, e, _, _ in runs),
               f"fio verify on the surviving namespace failed:\n{out[-2500:]}")
        maxlat = max(int(x[4]) for x in runs) // 1000000
        expect(maxlat <= STALL_BOUND_MS, f"an I/O on the surviving namespace took {maxlat} ms (bound "
               f"{STALL_BOUND_MS} ms):\n{out[-2500:]}")
        expect(re.search(rf"{fname}: shutdown complete in \d+ ms", ev["del_log"]), ev["del_log"][-1500:])
        expect(re.search(rf"{fname}: \S+ hot-added: live again", ev["add_log"]), ev["add_log"][-1500:])
        kernel = [ln for ln in out.splitlines() if ln.startswith("[") and "nvme" in ln]
        print("hotplug: Linux logged:\n  " + "\n  ".join(kernel[:8]), flush=True)
        rm_ms = int(gone.group(1)) - int(rescans[0] * 1000)
        add_ms = int(back.group(2)) - int(rescans[1] * 1000)
        linux.run(f"nvme disconnect -n {NQN}", timeout=60)
        return (f"device_del: target namespace gone {ev['gone']:.2f} s, DEVICE_DELETED {ev['deleted']:.2f} s, "
                f"Linux rescanned and removed {ns1} within {rm_ms} ms of its notice; device_add: target namespace "
                f"back {ev['back']:.2f} s, Linux's {back.group(1)} back within {add_ms} ms of the rescan; data read "
                f"back equal; "
                f"fio verify {len(runs)} runs clean on nsid 2, slowest I/O {maxlat} ms (bound {STALL_BOUND_MS} ms)")
    finally:
        if qmp:
            qmp.close()
        shutil.rmtree(qdir, ignore_errors=True)
        lab.close()


TESTS = [("nvmet_drive_faults", test_nvmet_drive_faults), ("nvmet_drive_hotplug", test_nvmet_drive_hotplug)]
