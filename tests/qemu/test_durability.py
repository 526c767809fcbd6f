"""Durability at the drives, read from QEMU's own NVMe trace events (an oracle the appliance cannot
fake): a console Flush reaches the drive as an NVM Flush; `poweroff` flushes every drive and then
sends each a shutdown notification (CC.SHN: QEMU traces "shutdown bit set") before QEMU exits, with
the outcome printed per drive; a panic with `panic = reboot` does the same before the reset.
QEMU 7.2's trace events do not show CDW12.FUA (and its nvme ignores FUA), so a FUA write is proven
from the submission queue entry the drive fetched: the test reads I/O SQ 1 through QEMU's monitor
(physical memory, `xp`) and finds the console's write with CDW12.FUA set, next to a plain write
without it."""
import os
import re

from harness import BUILD, Appliance, Qmp

TRACE_EVENTS = ("pci_nvme_io_cmd", "pci_nvme_mmio_shutdown_set")


def traced(name, config="panic = exit\n"):
    path = os.path.join(BUILD, "test-logs", name + ".trace")
    if os.path.exists(path):
        os.unlink(path)
    os.makedirs(os.path.join(BUILD, "run"), exist_ok=True)  # a fresh clone has none yet
    qmp_path = os.path.join(BUILD, "run", name + ".qmp")
    if os.path.exists(qmp_path):
        os.unlink(qmp_path)
    args = ["-qmp", f"unix:{qmp_path},server=on,wait=off"]
    for ev in TRACE_EVENTS:
        args += ["-trace", ev]
    app = Appliance(name, config, qemu_args=args + ["-D", path])
    app.qmp_path = qmp_path
    return app, path


def sq_writes(app, sq_line):
    """{slba: cdw12} of every Write (opcode 0x01) in the SQ that `nvme id-ctrl` located, read
    from guest-physical memory by QEMU's monitor."""
    m = re.search(r"I/O SQ 1 at bus address (0x[0-9a-f]+) \((CMB|host DRAM)\), (\d+) x 64 B entries", sq_line)
    assert m, sq_line
    qmp = Qmp(app.qmp_path)
    try:
        dump = qmp.hmp(f"xp /{int(m.group(3)) * 16}wx {m.group(1)}")
    finally:
        qmp.close()
    words = [int(w, 16) for w in re.findall(r"0x([0-9a-f]{8})(?=\s|$)", re.sub(r"^[0-9a-f]+:", "", dump, flags=re.M))]
    assert len(words) == int(m.group(3)) * 16, dump[:300]
    out = {}
    for i in range(0, len(words), 16):
        sqe = words[i:i + 16]
        if sqe[0] & 0xff == 0x01:
            out[sqe[10] | sqe[11] << 32] = sqe[12]
    return out


def events(path):
    """('flush', sqid) / ('write', sqid) / ('shn',) in trace order."""
    out = []
    with open(path, errors="replace") as f:
        for line in f:
            if "shutdown bit set" in line:
                out.append(("shn",))
                continue
            m = re.search(r"pci_nvme_io_cmd cid \d+ nsid 0x[0-9a-f]+ sqid (\d+) opc 0x[0-9a-f]+ opname '(\w+)'", line)
            if m and m.group(2) in ("NVME_NVM_CMD_FLUSH", "NVME_NVM_CMD_WRITE"):
                out.append(("flush" if m.group(2).endswith("FLUSH") else "write", int(m.group(1))))
    return out


def check_shutdown_order(ev, drives=3):
    """After the last write, each drive in turn: a Flush, then its CC.SHN (drive by drive)."""
    last_write = max((i for i, e in enumerate(ev) if e[0] == "write"), default=-1)
    tail = [e[0] for e in ev[last_write + 1:]]
    assert tail.count("shn") == drives, ev[-12:]
    assert "".join("f" if t == "flush" else "s" for t in tail).endswith("fs" * drives), ev[-12:]


def test_poweroff_flushes_every_drive_then_sends_the_shutdown_notification():
    app, path = traced("test_durability_poweroff")
    try:
        app.boot()
        out = app.cmd("nvme id-ctrl 0")
        assert "volatile write cache present" in out, out  # QEMU's nvme reports VWC = 1
        sq_line = out
        out = app.cmd("nvme write 0 64 8 9")
        assert "wrote 4096 B" in out, out
        out = app.cmd("nvme write 0 96 8 9 fua")
        assert "wrote 4096 B with FUA" in out, out
        w = sq_writes(app, sq_line)
        assert w.get(96) == (1 << 30) | 7, w     # CDW12: FUA (bit 30), NLB 8 (0-based)
        assert w.get(64) == 7, w                 # the plain write: no FUA
        n0 = len([e for e in events(path) if e[0] == "flush"])
        out = app.cmd("nvme flush 0 1")
        assert "flush nsid 1: done" in out, out
        ev = events(path)
        assert len([e for e in ev if e[0] == "flush"]) == n0 + 1, ev[-5:]
        assert ev[-1] == ("flush", 1), ev[-5:]   # on I/O queue 1, after the write
        assert ("write", 1) in ev
        out = app.cmd("stats nvme")
        assert re.search(r"nvme0: durability vwc 1 fua 1 flushes 1 shutdown no", out), out
        app.send("poweroff\r")
        before, m = app.wait_for(r"nvme2: shutdown (complete|FAILED)[^\n]*\n", timeout=60)
        text = before + m.group(0)
        assert app.exit_status() == 0
        for d in range(3):
            assert re.search(rf"nvme{d}: shutdown complete in \d+ ms \(1 namespace\(s\) flushed, CSTS.SHST complete\)",
                             text), text[-1500:]
        check_shutdown_order(events(path))
    finally:
        app.close()


def test_a_panic_with_panic_reboot_flushes_and_notifies_before_the_reset():
    app, path = traced("test_durability_panic", "panic = reboot\n")
    try:
        app.boot()
        app.cmd("nvme write 1 0 8 3")
        app.send("fault ud\r")
        before, _ = app.wait_for(r"nvme2: shutdown (complete|FAILED)[^\n]*\n", timeout=60)
        assert "*** resetting" in before, before[-1500:]
        assert "reboot: flushing and shutting down 3 NVMe controller(s)" in before, before[-1500:]
        assert app.exit_status() == 0  # --no-reboot: the reset ends QEMU
        check_shutdown_order(events(path))
    finally:
        app.close()
