"""Drive faults injected by QEMU itself on a fourth NVMe drive (tools/qemu-run --fault-drive: QEMU's
blkdebug driver under nvme9, alone on a hotplug-capable root port), one boot (~40 s):
- media errors: a read of a poisoned LBA fails with the drive's own status (Unrecovered Read
  Error), a write of another poisoned LBA with Write Fault; the LBAs around them and the other
  drives keep working, with no controller reset; the per-drive state and counters show it;
- a drive that stops answering (QMP block_set_io_throttle at 1 B/s): the command times out, the
  Abort is not honoured, the controller is reset (QEMU drains the stuck request when CC.EN drops),
  the command comes back failed, the drive is live again with its CMB provider republished, and
  once the throttle is lifted it serves I/O; the other drives never notice.
A console reset of the faulty drive re-initialises it and it serves I/O again.
A second boot (~25 s) unplugs the drive with QMP device_del (the slot's attention button): the
appliance flushes it, sends CC.SHN, takes its CMB provider away and powers the slot off, QEMU
deletes the device; the drive shows `removed`, its I/O fails with -ENODEV, the other drives keep
serving; device_add puts it back: the slot is powered on, the function enumerated, its BARs placed
in the port's windows, the same controller (same name) comes back live with its namespace and data."""
import os
import re
import time

from harness import BUILD, Appliance, Qmp

# blkdebug sectors are 512-byte sectors of the image: LBA 100 fails reads, LBA 200 fails writes.
BLKDEBUG = """[inject-error]
event = "read_aio"
errno = "5"
sector = "100"

[inject-error]
event = "write_aio"
errno = "5"
sector = "200"
"""


def boot(name):
    tmp = os.path.join(BUILD, "test-logs", name)
    os.makedirs(tmp, exist_ok=True)
    conf = os.path.join(tmp, "blkdebug.conf")
    with open(conf, "w") as f:
        f.write(BLKDEBUG)
    os.makedirs(os.path.join(BUILD, "run"), exist_ok=True)  # a fresh clone has none yet
    qmp_path = os.path.join(BUILD, "run", name + ".qmp")
    if os.path.exists(qmp_path):
        os.unlink(qmp_path)
    app = Appliance(name, "panic = exit\n", run_args=["--fault-drive", conf],
                    qemu_args=["-qmp", f"unix:{qmp_path},server=on,wait=off"])
    app.boot()
    out = app.cmd("nvme list")
    m = re.search(r"^(\d+) (nvme\d+) \S+ live .*sn \"p2pfaulty\"", out, re.M)
    assert m, out
    return app, Qmp(qmp_path), m.group(1), m.group(2)


def throttle(qmp, bps):
    qmp.execute("block_set_io_throttle", id="nvme9", bps=bps, bps_rd=0, bps_wr=0, iops=0, iops_rd=0, iops_wr=0)


def test_media_errors_and_a_drive_that_stops_answering():
    app, qmp, n, name = boot("test_drive_faults")
    try:
        out = app.cmd(f"nvme read {n} 100 1")
        assert f"{name}: lba 100: read failed: -5" in out, out
        assert re.search(rf"{name}: q1 cid \d+ opcode 0x02: status 0x281 unrecovered read error", out), out
        out = app.cmd(f"nvme write {n} 200 1 7")
        assert f"{name}: lba 200: write failed: -5" in out, out
        assert re.search(rf"{name}: q1 cid \d+ opcode 0x01: status 0x280 write fault", out), out
        # neighbours and other drives are fine
        for cmd in (f"nvme write {n} 96 4 3", f"nvme verify {n} 96 4 3", f"nvme write {n} 201 8 4",
                    f"nvme verify {n} 201 8 4", "nvme write 0 0 8 5", "nvme verify 0 0 8 5"):
            out = app.cmd(cmd)
            assert "failed" not in out and "mismatch" not in out, (cmd, out)
        out = app.cmd("stats nvme")
        assert re.search(rf"{name}: last error status 0x280 write fault", out), out
        assert re.search(rf"{name}: state live errors 2 timeouts 0 aborts 0 lost 0 resets 0", out), out

        # stops answering: the first request after the throttle passes and fills the bucket
        # (512 B at 1 B/s), the next one would wait ~8 minutes
        throttle(qmp, 1)
        app.cmd(f"nvme read {n} 0 1")
        t0 = time.monotonic()
        out = app.cmd(f"nvme write {n} 300 8 6", timeout=60)
        fail_s = time.monotonic() - t0
        m = re.search(rf"{name}: lba 300: write failed: (-\d+)", out)
        assert m and m.group(1) in ("-116", "-11"), out   # newlib -ETIMEDOUT / -EAGAIN: retry it
        assert re.search(rf"{name}: controller reset: ", out), out
        assert re.search(rf"{name}: reset complete in \d+ ms", out), out
        assert f"{name}: CMB provider published again after the reset" in out, out
        out = app.cmd("stats nvme")
        m = re.search(rf"{name}: state live errors \d+ timeouts 1 aborts 1 lost \d+ resets 1 \(failed 0, "
                      rf"last (\d+) ms", out)
        assert m, out
        print(f"stopped answering: the write failed after {fail_s:.1f} s, reset {m.group(1)} ms")
        app.cmd("nvme verify 0 0 8 5")  # the others never noticed
        throttle(qmp, 0)
        for cmd in (f"nvme write {n} 300 8 6", f"nvme verify {n} 300 8 6", f"nvme verify {n} 201 8 4"):
            out = app.cmd(cmd)
            assert "failed" not in out and "MISMATCH" not in out, (cmd, out)

        out = app.cmd(f"nvme reset {n}")
        assert re.search(rf"{name}: reset done \(\d+ ms\), state live", out), out
        out = app.cmd(f"nvme verify {n} 201 8 4")
        assert "verify: ok" in out, out
    finally:
        qmp.close()
        app.close()


def test_hot_unplug_and_hot_add_back():
    app, qmp, n, name = boot("test_drive_hotplug")
    try:
        app.cmd(f"nvme write {n} 64 8 9")
        app.cmd("nvme write 0 8 8 2")
        t0 = time.monotonic()
        qmp.execute("device_del", id="nvme9")
        before, _ = app.wait_for(r"slot powered off: the card may be removed", timeout=30)
        qmp.wait_event("DEVICE_DELETED", timeout=30)
        del_s = time.monotonic() - t0
        assert "attention button: detaching the card" in before, before
        assert re.search(rf"{name}: shutdown complete in \d+ ms", before), before
        assert re.search(rf"{name}: device removed", before), before
        out = app.cmd("stats nvme")
        assert re.search(rf"{name}: state removed .* removals 1", out), out
        out = app.cmd(f"nvme read {n} 64 8")
        assert f"{name}: lba 64: read failed: -19" in out or "No such device" in out, out
        out = app.cmd("nvme verify 0 8 8 2")
        assert "verify: ok" in out, out
        out = app.cmd("lspci")
        assert "p2pfaulty" not in out
        m = re.search(r"^\S*?([0-9a-f]{2}:00\.0) 1b36:0010", out, re.M)
        assert not m, out  # no NVMe function left below the slot

        t0 = time.monotonic()
        qmp.execute("device_add", driver="nvme", id="nvme9", bus="rp9", drive="faulty", serial="p2pfaulty",
                    cmb_size_mb=16)
        before, m = app.wait_for(rf"{name}: \S+ hot-added: live again with (\d+) namespace", timeout=30)
        add_s = time.monotonic() - t0
        assert "card present: powering the slot on" in before, before
        assert re.search(r"BAR0 placed at 0x[0-9a-f]+", before), before
        out = app.cmd(f"nvme verify {n} 64 8 9")
        assert "verify: ok" in out, out  # the data written before the removal
        out = app.cmd("stats nvme")
        assert re.search(rf"{name}: state live .* removals 1", out), out
        out = app.cmd(f"nvme cmb {n}")
        assert "published" in out or "CMB" in out, out
        print(f"hot-unplug: device_del to slot off and DEVICE_DELETED {del_s:.1f} s; "
              f"device_add to live again {add_s:.1f} s")
    finally:
        qmp.close()
        app.close()
