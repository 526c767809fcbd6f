"""NVMe host driver in the default topology: patterns written through the console from host-DRAM
and from CMB buffers are checked in the drives' backing files from the host side (an oracle the
appliance cannot fake), read back and verified, copied drive A -> drive B through A's CMB and
checked in B's backing file; the CMB and copy paths move zero host-DRAM payload bytes; I/O past
the namespace end fails cleanly; the far drive (own root port, no allowlist) refuses the copy."""
import re

import pytest

from harness import Appliance

LBA = 512


def pattern(seed, start, length):
    """The console's pattern: byte at absolute offset o is (seed ^ (o * 7) ^ (o >> 9)) & 0xff."""
    return bytes((seed ^ (o * 7) ^ (o >> 9)) & 0xFF for o in range(start, start + length))


@pytest.fixture(scope="module")
def app():
    a = Appliance("test_nvme", "panic = exit\n")
    try:
        a.boot()
        yield a
    finally:
        a.close()


def backing_files(app):
    """nvmeN -> its raw backing file, from the QEMU command line qemu-run built."""
    with open(f"/proc/{app.qemu_pid()}/cmdline", "rb") as f:
        args = f.read().decode().split("\0")
    files = {}
    for a in args:
        m = re.match(r"if=none,id=nvd(\d),format=raw,file=(\S+)", a)
        if m:
            files[int(m.group(1))] = m.group(2)
    return files


def read_back(path, lba, nlb):
    with open(path, "rb") as f:
        f.seek(lba * LBA)
        return f.read(nlb * LBA)


def dma(out):
    m = re.search(r"host-dram-dma (\d+) B device-dma (\d+) B", out)
    assert m, out
    return int(m.group(1)), int(m.group(2))


def test_three_drives_live_with_cmbs(app):
    out = app.cmd("nvme list")
    assert "3 controller(s)" in out, out
    assert len(re.findall(r"live mn \"QEMU NVMe Ctrl\" .* cmb usable", out)) == 3, out
    assert out.count("ns 1: 131072 blocks of 512 B (64 MiB)") == 3, out
    cmb = app.cmd("nvme cmb 0")
    assert "CMB 1.4 scheme" in cmb and "CMBSZ 0x0004021d" in cmb and "usable (CMSE verified)" in cmb, cmb
    # CMBSZ.SQS = 1: the I/O SQ is fetched from the CMB; every I/O test below goes through it
    assert "I/O SQs in CMB: 1 (4 KiB at its start, not published)" in cmb, cmb
    # CBA = the BAR's bus address (above 4 GiB on both machines), CMSE | CRE
    m = re.search(r"CMBMSC 0x([0-9a-f]+)\b.*\n.*BAR2 offset 0x0 bus 0x([0-9a-f]+)", cmb)
    assert m and int(m.group(1), 16) == int(m.group(2), 16) | 3 and int(m.group(2), 16) >= 1 << 32, \
        "CBA | CMSE | CRE:\n" + cmb
    assert "published as P2P memory" in cmb, cmb
    idc = app.cmd("nvme id-ctrl 0")
    assert "sgls 0x1" in idc and "mdts 7 (max 512 KiB/cmd)" in idc, idc


def test_write_from_host_dram_lands_in_the_backing_file(app):
    files = backing_files(app)
    out = app.cmd("nvme write 0 100 300 17", timeout=60)
    host, dev = dma(out)
    assert host == 300 * LBA and dev == 0, out
    assert read_back(files[0], 100, 300) == pattern(17, 100 * LBA, 300 * LBA)
    assert "verify: ok" in app.cmd("nvme verify 0 100 300 17", timeout=60)


def test_write_from_the_cmb_moves_no_host_dram_byte(app):
    files = backing_files(app)
    out = app.cmd("nvme write 0 4096 1024 99 cmb", timeout=120)
    host, dev = dma(out)
    assert host == 0 and dev == 1024 * LBA, out
    assert read_back(files[0], 4096, 1024) == pattern(99, 4096 * LBA, 1024 * LBA)
    out = app.cmd("nvme verify 0 4096 1024 99 cmb", timeout=120)
    assert "verify: ok" in out and dma(out)[0] == 0, out
    out = app.cmd("nvme verify 0 4096 1024 98", timeout=120)
    assert "MISMATCH" in out, "a wrong seed must not verify:\n" + out


def test_copy_a_to_b_through_a_cmb(app):
    files = backing_files(app)
    app.cmd("nvme write 0 8192 512 55", timeout=60)
    out = app.cmd("nvme copy 0 1 8192 512 1000", timeout=120)
    assert "through nvme0's CMB" in out, out
    host, dev = dma(out)
    assert host == 0, "no payload byte in host DRAM:\n" + out
    assert dev == 2 * 512 * LBA, out
    assert read_back(files[1], 1000, 512) == pattern(55, 8192 * LBA, 512 * LBA)
    print(out.strip())


def test_far_drive_copy_refused_and_io_past_the_end_fails_cleanly(app):
    out = app.cmd("nvme copy 0 2 0 8")
    assert "copy refused: refused: no common upstream bridge" in out, out
    out = app.cmd("nvme read 0 131070 8")
    assert "read failed: -34" in out, out
    assert "3 controller(s)" in app.cmd("nvme list"), "still responsive"
    stats = app.cmd("stats")
    assert re.search(r"nvme0: .* timeouts 0 aborts 0", stats), stats
    assert "nvme host-dram bytes per payload byte" in stats, stats
