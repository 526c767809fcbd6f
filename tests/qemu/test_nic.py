"""e1000e on the default topology: bring-up (MAC, link), packet split into the CMB of the nearest
NVMe drive (published by the NVMe driver, or by `p2p publish` when it is not), the MAC-loopback
self-test (payload gathered from DRAM, then from device memory; every frame split at 42 with
its header in DRAM and its payload read back equal from device memory), counters showing
payload bytes in device memory and only headers in DRAM, jumbo MTU, and plain mode."""
import re

APPLIANCE_CONFIG = "panic = exit\n"
MAC = "52:54:00:a0:00:01"


def counters(out):
    rx = re.search(r"rx: frames (\d+) bytes host (\d+) device (\d+) split (\d+) non-split (\d+) "
                   r"csum ok (\d+) bad (\d+) dropped (\d+)", out)
    tx = re.search(r"tx: frames (\d+) bytes host (\d+) device (\d+) csum-offload (\d+)", out)
    assert rx and tx, out
    return [int(x) for x in rx.groups()], [int(x) for x in tx.groups()]


def ensure_provider(appliance):
    """The NVMe driver publishes its CMBs; publish one ourselves only if it did not."""
    out = appliance.cmd("nic")
    if "payload -> device memory" in out:
        return out
    lspci = appliance.cmd("lspci")
    nvme = re.findall(r"([0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) 1b36:0010", lspci)
    assert nvme, lspci
    print("no provider published by the NVMe driver: publishing", nvme[0], "BAR2 for the test")
    appliance.cmd(f"p2p publish {nvme[0]} 2")
    appliance.cmd("nic mode split")
    return appliance.cmd("nic")


def test_nic_is_up_with_the_mac_and_split_into_device_memory(appliance):
    out = ensure_provider(appliance)
    assert f"mac {MAC} link up mtu 1500" in out, out
    assert re.search(r"rx mode: split, headers -> DRAM \(256 B\), payload -> device memory: "
                     r"[0-9a-f:.]+ BAR2, distance \d+", out), out
    assert "RDH/RDT units 2" in out, out


def test_selftest_loopback_splits_into_device_memory(appliance):
    n = 64
    before_rx, before_tx = counters(appliance.cmd("nic"))
    out = appliance.cmd(f"nic selftest {n}", timeout=180)
    print(out)
    assert "selftest: PASS" in out, out
    for phase in ("tx-from-dram", "tx-from-device", "tx-from-device-2frags"):
        m = re.search(phase + r": (\d+)/(\d+) frames ok, split (\d+), header bytes DRAM (\d+), payload bytes (\d+) "
                      r"\(device (\d+) in (\d+) frames\), read back (\d+), rx csum ok (\d+), udp csum verified (\d+)",
                      out)
        assert m, out
        ok, total, split, hdr, pay, pay_dev, dev_frames, read, csum_hw, csum_sw = map(int, m.groups())
        assert ok == total == split == dev_frames == csum_hw == csum_sw == n, out
        assert hdr == 42 * n, out
        assert pay == pay_dev == read and pay > 1400 * 2, out
    assert "stray frames 0, buffers still held 0/0, tx in flight 0" in out, out
    after_rx, after_tx = counters(appliance.cmd("nic"))
    d_rx = [a - b for a, b in zip(after_rx, before_rx)]
    d_tx = [a - b for a, b in zip(after_tx, before_tx)]
    frames, host, device, split = d_rx[0], d_rx[1], d_rx[2], d_rx[3]
    assert frames >= 3 * n and split >= 3 * n, (d_rx, out)
    # only headers in DRAM: 42 bytes per selftest frame (other frames, if any, are tiny)
    assert host <= 42 * frames + 128, d_rx
    assert device >= 64 * frames, d_rx
    print(f"rx: {frames} frames, host DRAM {host} B, device memory {device} B "
          f"({host / (host + device):.3f} host bytes per byte)")
    # tx: two thirds of the payload came from device memory; the 2-fragment frames went
    # through the DRAM bounce (QEMU 7.2 gathers one device piece of <= 4 KiB per frame)
    assert d_tx[0] >= 3 * n and d_tx[2] > 0 and d_tx[3] >= 3 * n, d_tx
    print(f"tx: {d_tx[0]} frames, host {d_tx[1]} B, device {d_tx[2]} B, csum offload {d_tx[3]}")
    out = appliance.cmd("nic")
    m = re.search(r"tx dma: NIC read DRAM (\d+) B device (\d+) B; bounced to DRAM (\d+) frames", out)
    assert m and int(m.group(2)) > 0 and int(m.group(3)) >= n, out
    print(m.group(0))


def test_selftest_jumbo_mtu(appliance):
    out = appliance.cmd("nic mtu 9000")
    assert "mtu 9000, frame up to 9022 B, buffers 256 + 9216 B" in out, out
    out = appliance.cmd("nic selftest 8", timeout=180)
    print(out)
    assert "selftest: PASS" in out, out
    assert "payload up to 8972 B" in out, out
    out = appliance.cmd("nic mtu 1500")
    assert "mtu 1500" in out, out


def test_plain_mode_and_back(appliance):
    assert "mtu 1500" in appliance.cmd("nic")
    out = appliance.cmd("nic mode plain")
    out = appliance.cmd("nic")
    assert "rx mode: plain, frames -> DRAM (2048 B)" in out, out
    out = appliance.cmd("nic selftest 4", timeout=120)
    assert "selftest: PASS" in out, out  # the self-test switches to split and back
    assert "rx mode: plain" in appliance.cmd("nic")
    appliance.cmd("nic mode split")
    assert "payload -> device memory" in appliance.cmd("nic")


def test_tso_auto_probe_sees_qemu_ip_fragments_and_keeps_tso_off(appliance):
    """nic.tso = auto (the default) sends one TSO frame to itself in MAC loopback: QEMU 7.2's e1000e
    cuts it into IPv4 fragments instead of TCP segments (docs/platform.md), so TSO stays off and says why;
    `nic tso on|off` switch it for the stack (NETDEV_F_TSO, 0x10 in features)."""
    out = appliance.cmd("nic")
    assert "tso: off (the loopback probe got IPv4 fragments, not TCP segments)" in out, out
    m = re.search(r"features 0x([0-9a-f]+)", out)
    assert m and not int(m.group(1), 16) & 0x10, out
    out = appliance.cmd("nic tso probe")
    assert "tso off (the loopback probe got IPv4 fragments, not TCP segments)" in out, out
    log = appliance.cmd("log show", timeout=30)
    assert re.search(r"TSO off: the device sends IPv4 fragments instead of TCP segments \(loopback probe, "
                     r"4 frames back", log), log
    out = appliance.cmd("nic tso on")
    assert "tso on (console)" in out, out
    out = appliance.cmd("nic")
    m = re.search(r"features 0x([0-9a-f]+)", out)
    assert m and int(m.group(1), 16) & 0x10, out
    assert re.search(r"tso: on \(console\); frames \d+ -> segments \d+, up to 65280 B each", out), out
    appliance.cmd("nic tso off")
    out = appliance.cmd("nic")
    assert "tso: off (console)" in out and "up to 0 B each" in out, out
    assert "stray" not in out
