"""DHCP (net/dhcp.c) against QEMU's user network (slirp's DHCP server: a peer the appliance
did not write), and the fallback to the static settings when no server answers; the default
NVMe/TCP target starting on the leased address with the commands to reach it."""
import re
import time

import pexpect

from harness import Appliance, strip_ansi


def log_wait(app, pattern, timeout=30):
    """Wait for pattern anywhere in the serial log (before or after the prompt); the match."""
    end = time.monotonic() + timeout
    while True:
        with open(app.log_path, errors="replace") as f:
            m = re.search(pattern, strip_ansi(f.read()))
        if m or time.monotonic() > end:
            assert m, f"{pattern!r} not on the console within {timeout} s"
            return m
        try:  # the log is what pexpect has read: read on
            app.proc.read_nonblocking(65536, timeout=0.2)
        except pexpect.TIMEOUT:
            pass


def test_lease_from_qemu_user_network_and_ping_the_router():
    app = Appliance("test_dhcp", config="panic = exit\n")
    try:
        app.boot()
        log_wait(app, r"dhcp: bound to 10\.0\.2\.15/255\.255\.255\.0 router 10\.0\.2\.2 from server 10\.0\.2\.2, "
                     r"lease 86400 s", timeout=30)
        out = app.cmd("ip -q")
        assert "address 10.0.2.15 netmask 255.255.255.0 gateway 10.0.2.2" in out, out
        m = re.search(r"dhcp: BOUND server 10\.0\.2\.2 lease 86400 s expires in (\d+) s T1 in (\d+) s T2 in (\d+) s "
                      r"router 10\.0\.2\.2 dns 10\.0\.2\.3", out)
        assert m, out
        left, t1, t2 = (int(x) for x in m.groups())
        assert 86000 < left <= 86400 and 43000 < t1 <= 43200 and 75000 < t2 <= 75600, out
        assert re.search(r"discovers 1 requests 1 retransmits 0 offers 1 acks 1 naks 0 bad 0", out), out
        app.send("ping 10.0.2.2 2\r")
        for seq in range(2):
            app.wait_for(rf"bytes from 10\.0\.2\.2: icmp_seq={seq} time=[\d.]+ ms", timeout=20)
        # no nvmet.json: the default target on the leased address, and the warning
        log_wait(app, r"nvmet: ANY host may connect", timeout=10)
        log_wait(app, r"nvme discover -t tcp -a 10\.0\.2\.15 -s 4420")
        log_wait(app, r"nvme connect -t tcp -a 10\.0\.2\.15 -s 4420 -n nqn\.2026-11\.org\.p2pstore:default-[0-9a-f]{16}")
        out = app.cmd("nvmet")
        assert "port 1: tcp 10.0.2.15:4420, 1 subsystems" in out, out
        for i in range(3):
            assert f"nvme{i}n1" in out, out
    finally:
        app.close()


def test_no_server_falls_back_to_the_static_settings():
    cfg = ("panic = exit\nnet.dhcp_timeout = 3\nnet.fallback_address = 10.0.2.77\nnet.gateway = 10.0.2.2\n")
    # restrict=on with no DHCP: slirp's DHCP server answers only with dhcpstart; an isolated
    # user network without it is the 'nobody answers' case
    app = Appliance("test_dhcp_fallback", config=cfg, netdev="socket,udp=127.0.0.1:1,localaddr=127.0.0.1:0")
    try:
        app.boot()
        log_wait(app, r"dhcp: no lease after 3 s: using the static address 10\.0\.2\.77", timeout=30)
        out = app.cmd("ip -q")
        assert "address 10.0.2.77 netmask 255.255.255.0 gateway 10.0.2.2" in out, out
        assert re.search(r"dhcp: FALLBACK\n\s+discovers [12] requests 0 .* fallbacks 1", out), out
    finally:
        app.close()
