"""On-demand paging of rxe0 over an NVMe namespace, on the real image and drive: a 4 MiB region
at 32 MiB into nvme2's namespace with a resident pool of 64 frames (256 KiB, a sixteenth of it)
from the configuration; the console's fill writes a pattern through the pager (every page faulted
in, most written back and evicted), flush makes it durable (write-backs then an NVMe Flush) and
the drive's backing file holds it (an oracle the appliance cannot fake); verify reads it back
after invalidation, page by page from the drive; counters and the fault service histogram show
in `rdma odp` and `stats`. Last, a fill without flush and `poweroff`: the shutdown hook writes the
dirty pages back before the drives' own flush and shutdown notification, and the backing file holds
them after QEMU has exited; the same for a panic with `panic = reboot` (a second, short boot)."""
import os
import re
import shutil

import pytest

from harness import BUILD, Appliance

OFF = 32 << 20
SIZE = 4 << 20
SEED = 0x5A
SEED2 = 0x3C
DISKS = os.path.join(BUILD, "test-disks", "test_roce_odp")
CONFIG = "rdma.odp.region = nvme2n1 4M 32M\nrdma.odp.frames = 64\n"


def pattern(seed, start, length):
    """The console's pattern: byte at region offset o is (seed ^ (o * 7) ^ (o >> 9)) & 0xff."""
    return bytes((seed ^ (o * 7) ^ (o >> 9)) & 0xFF for o in range(start, start + length))


@pytest.fixture(scope="module")
def app():
    shutil.rmtree(DISKS, ignore_errors=True)
    a = Appliance("test_roce_odp", "panic = exit\n" + CONFIG, run_args=["--disks", DISKS])
    try:
        a.boot()
        yield a
    finally:
        a.close()


def backing_file(app, n):
    with open(f"/proc/{app.qemu_pid()}/cmdline", "rb") as f:
        args = f.read().decode().split("\0")
    for a in args:
        m = re.match(r"if=none,id=nvd(\d),format=raw,file=(\S+)", a)
        if m and int(m.group(1)) == n:
            return m.group(2)
    raise AssertionError("no backing file for nvme%d" % n)


def counter(out, name):
    m = re.search(r"\b" + name + r" (\d+)", out)
    assert m, out
    return int(m.group(1))


def test_the_configured_region_starts_with_nothing_resident(app):
    assert "ODP region 4 MiB over nvme2n1 at 33554432, 64 frames (256 KiB)" in app.boot_text, app.boot_text
    out = app.cmd("rdma odp")
    assert "odp pool: 64 frames of 4096 B (host DRAM): resident 0 dirty 0" in out, out
    assert "region odp0: 4194304 B over nvme2n1 from LBA 65536 (512 B blocks)" in out, out
    assert "rdma_cm port 7180" in out, out


def test_fill_through_the_pager_then_flush_lands_on_the_drive(app):
    out = app.cmd("rdma odp fill 0 4M %d" % SEED, timeout=120)
    assert "fill: ok, 4194304 B" in out, out
    out = app.cmd("rdma odp")
    # every page came in once: by its own fault or by read-ahead behind a sequential fault
    assert counter(out, "page-ins") == 1024, out
    assert counter(out, "faults") + counter(out, "prefetches") == 1024, out
    assert counter(out, "resident") <= 64, out
    # the region is 16x the pool: all but the last frames' worth were written back to make room
    assert counter(out, "page-outs") >= 1024 - 64, out
    assert "flush started" in app.cmd("rdma odp flush")
    app.wait_for(r"rdma odp: flush done, contents durable", timeout=60)
    out = app.cmd("rdma odp")
    assert "dirty 0" in out and "last flush: ok" in out, out
    assert counter(out, "flushes") == 1, out
    with open(backing_file(app, 2), "rb") as f:
        f.seek(OFF)
        data = f.read(SIZE)
    assert data == pattern(SEED, 0, SIZE), "the drive's backing file holds the flushed pattern"


def test_verify_after_invalidation_reads_every_page_back_from_the_drive(app):
    before = counter(app.cmd("rdma odp"), "page-ins")
    assert "invalidate: " in app.cmd("rdma odp invalidate 0 4M")
    assert "resident 0" in app.cmd("rdma odp")
    out = app.cmd("rdma odp verify 0 4M %d" % SEED, timeout=120)
    assert "verify: ok, 4194304 B" in out, out
    out = app.cmd("rdma odp")
    assert counter(out, "page-ins") - before == 1024, out
    m = re.search(r"fault service p50 <= (\d+) us p99 <= (\d+) us", out)
    assert m and 0 < int(m.group(1)) <= int(m.group(2)), out
    st = app.cmd("stats")
    assert "odp pool: 64 frames" in st, st


def test_console_refuses_bad_arguments(app):
    assert "usage: rdma odp reg" in app.cmd("rdma odp reg nvme9n1")
    assert "rdma odp reg: " in app.cmd("rdma odp reg nvme2n1 4M 8M")  # one region at a time: -EEXIST
    assert "usage: rdma odp fill" in app.cmd("rdma odp fill 0 4K")


def test_poweroff_writes_dirty_pages_back_before_the_drives_shut_down(app):
    out = app.cmd("rdma odp fill 0 1M %d" % SEED2, timeout=120)
    assert "fill: ok, 1048576 B" in out, out
    m = re.search(r"resident \d+ dirty (\d+)", app.cmd("rdma odp"))
    assert m and int(m.group(1)) > 0, "dirty pages left for the shutdown hook"
    dirty = int(m.group(1))
    app.send("poweroff\r")
    before, m = app.wait_for(r"nvme2: shutdown (complete|FAILED)[^\n]*\n", timeout=60)
    assert app.exit_status() == 0
    hook = before.find("rdma odp: %d dirty page(s) written back and flushed" % dirty)
    drives = before.find("poweroff: flushing and shutting down")
    assert 0 <= hook < drives, before[-1500:]
    assert "shutdown complete" in m.group(0), m.group(0)
    with open(os.path.join(DISKS, "nvme2.img"), "rb") as f:
        f.seek(OFF)
        data = f.read(SIZE)
    assert data[:1 << 20] == pattern(SEED2, 0, 1 << 20), "the last writes reached the drive without a flush"
    assert data[1 << 20:] == pattern(SEED, 1 << 20, SIZE - (1 << 20)), "the rest as flushed before"
    shutil.rmtree(DISKS, ignore_errors=True)


def test_a_panic_with_panic_reboot_writes_dirty_pages_back_too():
    disks = DISKS + "-panic"
    shutil.rmtree(disks, ignore_errors=True)
    a = Appliance("test_roce_odp_panic", "panic = reboot\n" + CONFIG, run_args=["--disks", disks])
    try:
        a.boot()
        out = a.cmd("rdma odp fill 0 512K %d" % SEED2, timeout=120)
        assert "fill: ok, 524288 B" in out, out
        a.send("fault ud\r")
        before, _ = a.wait_for(r"nvme2: shutdown (complete|FAILED)[^\n]*\n", timeout=60)
        assert a.exit_status() == 0  # --no-reboot: the reset ends QEMU
        hook = before.find("dirty page(s) written back and flushed")
        drives = before.find("reboot: flushing and shutting down")
        assert 0 <= hook < drives, before[-1500:]
        with open(os.path.join(disks, "nvme2.img"), "rb") as f:
            f.seek(OFF)
            data = f.read(512 << 10)
        assert data == pattern(SEED2, 0, 512 << 10), "the region's writes reached the drive before the reset"
    finally:
        a.close()
        shutil.rmtree(disks, ignore_errors=True)
