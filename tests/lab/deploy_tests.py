"""tests/lab/deploy_tests.py: the appliance as a new user deploys it (issue 20), run by tests/lab/run-tests.

deploy_default: topology (a) with nothing configured: the ESP has no nvmet.json and its
p2pstore.cfg sets no address, the drives' backing files are kept across two boots (--disks).
  1. No DHCP server on the link: after net.dhcp_timeout (5 s) the appliance falls back to its
     static 10.10.0.10 and serves every local namespace there. The Linux guest runs the
     `nvme discover` and `nvme connect` commands exactly as the console printed them, sees the
     three namespaces and writes 4 MiB of random data to the first one (direct I/O).
  2. The guest starts busybox's udhcpd (a DHCP server this project did not write) with a 30 s
     lease; the appliance is powered off from its console and booted again. It gets 10.10.0.100
     by DHCP (router and DNS from the server), renews at T1 (a REQUEST unicast to the server,
     ACKed: the lease restarts), serves the same subsystem (same NQN: it derives from the
     drives' serials) on the leased address; the guest connects with the printed commands
     again, reads the 4 MiB back equal, runs fio verify on the second namespace and disconnects.
"""
import os
import re
import shutil
import time

import topo
from baseline_tests import appliance_esp, expect
from lab import Lab
from net_tests import Appliance
from nvmet_tests import fio_verify

LEASED = "10.10.0.100"
LEASE_S = 30
UDHCPD_CONF = f"""start {LEASED}
end {LEASED}
interface eth0
max_leases 8
lease_file /tmp/udhcpd.leases
pidfile /tmp/udhcpd.pid
min_lease 20
option subnet 255.255.255.0
option router {topo.INITIATOR_IP}
option dns {topo.INITIATOR_IP}
option lease {LEASE_S}
"""
NQN_RX = r"nqn\.2026-11\.org\.p2pstore:default-[0-9a-f]{16}"
DATA_MIB = 4

# Linux side: the namespaces of subsystem $1 once all three are there (10 s at most).
NS_OF = r"""ns_of() {
  for i in $(seq 100); do
    for s in /sys/class/nvme-subsystem/nvme-subsys*; do
      [ "$(cat $s/subsysnqn 2>/dev/null)" = "$1" ] || continue
      n=$(ls $s | grep -c 'n[0-9]*$'); [ "$n" -ge 3 ] && { ls $s | grep 'n[0-9]*$' | sort; return 0; }
    done
    sleep 0.1
  done
  return 1
}
"""


def printed_commands(dev, addr):
    """The console's `nvme discover`/`nvme connect` lines for addr, and the NQN; the any-host warning."""
    d = dev.expect(rf"nvmet:   (nvme discover -t tcp -a {re.escape(addr)} -s 4420)\r*\n", timeout=30)
    c = dev.expect(rf"nvmet:   (nvme connect -t tcp -a {re.escape(addr)} -s 4420 -n ({NQN_RX}))\r*\n", timeout=10)
    dev.expect(r"ANY host may connect", timeout=10)
    # the prompt came before or after these lines: skip past it, so that the next console
    # command waits for its own prompt
    time.sleep(1)
    with dev._cond:
        dev._pos = len(dev._buf)
    return d.group(1), c.group(1), c.group(2)


def connect_printed(linux, discover, connect, nqn, addr):
    """Run the printed commands on the Linux guest; return its block devices of nqn."""
    r = linux.run(discover, timeout=60)
    expect(r.rc == 0 and f"subnqn:  {nqn}" in r.out and f"traddr:  {addr}" in r.out,
           f"`{discover}` (rc {r.rc}):\n{r.out}")
    r = linux.run(f"{NS_OF}{connect} || {{ dmesg | tail; exit 1; }}\nns_of {nqn}", timeout=90)
    devs = re.findall(r"^(nvme\d+n\d+)$", r.out, re.M)
    expect(r.rc == 0 and len(devs) == 3, f"`{connect}`: {len(devs)} namespaces (rc {r.rc}):\n{r.out}")
    return [f"/dev/{d}" for d in devs]


def test_deploy_default(s):
    """Fallback to static and the default target; then DHCP from udhcpd, renewal, the same target."""
    lab = Lab("tests-deploy", capture=False)
    s.extra_rundirs.append(lab.rundir)
    try:
        esp = os.path.join(lab.rundir, "esp")
        shutil.rmtree(esp, ignore_errors=True)
        shutil.copytree(appliance_esp(), esp)
        os.makedirs(os.path.join(esp, "p2pstore"), exist_ok=True)
        if os.path.exists(os.path.join(esp, "p2pstore", "nvmet.json")):
            os.remove(os.path.join(esp, "p2pstore", "nvmet.json"))
        cfg = os.path.join(esp, "p2pstore", "p2pstore.cfg")
        with open(cfg, "w") as f:
            f.write("panic = exit\nnet.dhcp_timeout = 5\n")
        disks = os.path.join(lab.rundir, "disks")
        shutil.rmtree(disks, ignore_errors=True)
        os.makedirs(disks)
        link = lab.link("link0")
        linux = lab.guest("initiator", ip=f"{topo.INITIATOR_IP}/24", links=[link])
        dev = lab.appliance(esp, link, run_args=["--disks", disks])
        lab.start()

        # 1. no server: the static fallback, served by default
        dev.expect(rf"dhcp: no lease after 5 s: using the static address {re.escape(topo.APPLIANCE_IP)}", timeout=90)
        discover, connect, nqn = printed_commands(dev, topo.APPLIANCE_IP)
        app = Appliance(dev)
        out = app.cmd("ip -q")
        expect(re.search(r"dhcp: FALLBACK", out) and re.search(r"fallbacks 1", out), f"`ip` after the fallback:\n{out}")
        devs = connect_printed(linux, discover, connect, nqn, topo.APPLIANCE_IP)
        r = linux.run(f"dd if=/dev/urandom of=/tmp/data bs=1M count={DATA_MIB} 2>/dev/null && "
                      f"dd if=/tmp/data of={devs[0]} bs=1M oflag=direct 2>&1 && md5sum </tmp/data && "
                      f"nvme disconnect -n {nqn}", timeout=120)
        m = re.search(r"^([0-9a-f]{32})", r.out, re.M)
        expect(r.rc == 0 and m and "disconnected 1 controller" in r.out, f"write through the fallback address:\n{r.out}")
        written = m.group(1)

        # 2. a Linux DHCP server, then a second boot on the same drives
        r = linux.run(f"cat > /tmp/udhcpd.conf <<'EOF'\n{UDHCPD_CONF}EOF\n"
                      "touch /tmp/udhcpd.leases\n"
                      "busybox udhcpd -f -a 100 /tmp/udhcpd.conf >/tmp/udhcpd.log 2>&1 &\n"
                      "sleep 0.5; kill -0 $! || { cat /tmp/udhcpd.log; exit 1; }", timeout=30)
        expect(r.rc == 0, f"udhcpd did not start:\n{r.out}")
        dev.send("poweroff\r")
        deadline = time.monotonic() + 60
        while dev.child.isalive() and time.monotonic() < deadline:
            time.sleep(0.2)
        expect(not dev.child.isalive(), "QEMU did not exit after poweroff")
        with open(cfg, "w") as f:
            f.write("panic = exit\nnet.dhcp_timeout = 120\n")
        t0 = time.monotonic()
        dev.start()
        dev.expect(rf"dhcp: bound to {re.escape(LEASED)}/255\.255\.255\.0 router {re.escape(topo.INITIATOR_IP)} "
                   rf"from server {re.escape(topo.INITIATOR_IP)}, lease {LEASE_S} s", timeout=90)
        bound_s = time.monotonic() - t0
        discover, connect, nqn2 = printed_commands(dev, LEASED)
        expect(nqn2 == nqn, f"the default subsystem's NQN changed across boots: {nqn} then {nqn2}")
        out = app.cmd("ip -q")
        expect(re.search(rf"dhcp: BOUND server {re.escape(topo.INITIATOR_IP)} lease {LEASE_S} s", out)
               and re.search(rf"router {re.escape(topo.INITIATOR_IP)} dns {re.escape(topo.INITIATOR_IP)}", out), out)

        # renewal at T1 (15 s): unicast REQUEST, udhcpd ACKs, the lease starts again
        deadline = time.monotonic() + 3 * LEASE_S
        while time.monotonic() < deadline:
            out = app.cmd("ip -q")
            if re.search(r"renewals [1-9]\d* rebinds 0 expiries 0", out) and "dhcp: BOUND" in out:
                break
            time.sleep(2)
        expect(re.search(r"renewals [1-9]\d* rebinds 0 expiries 0", out) and "dhcp: BOUND" in out,
               f"no renewal by the server within {3 * LEASE_S} s:\n{out}")
        acks = int(re.search(r"acks (\d+)", out).group(1))
        expect(acks >= 2, f"renewal without a second ACK:\n{out}")
        leases = linux.run("kill -USR1 $(cat /tmp/udhcpd.pid); sleep 0.5; "  # SIGUSR1: write the lease file now
                           "busybox dumpleases -f /tmp/udhcpd.leases", timeout=20).out
        expect(LEASED in leases, f"udhcpd's lease file does not list {LEASED}:\n{leases}")

        # the same subsystem on the leased address: the data written before, and fio verify
        devs = connect_printed(linux, discover, connect, nqn, LEASED)
        try:
            r = linux.run(f"dd if={devs[0]} bs=1M count={DATA_MIB} iflag=direct 2>/dev/null | md5sum", timeout=120)
            expect(r.rc == 0 and written in r.out, f"read back {r.out.strip()!r}, wrote {written}")
            fio_verify(linux, [("deploy", devs[1], "randwrite", "4k", "8M", "0", "--iodepth=8")])
            state = app.cmd("nvmet")
            expect(re.search(r"^1 controllers, ", state, re.M), f"the appliance's view:\n{state}")
        finally:
            linux.run(f"nvme disconnect -n {nqn}", timeout=60)
        return (f"fallback to {topo.APPLIANCE_IP} after 5 s, {DATA_MIB} MiB written there; leased {LEASED} from "
                f"udhcpd {bound_s:.0f} s after the second boot began, renewed at T1 ({acks} ACKs); default target "
                f"{nqn} (same NQN on both boots): 3 namespaces, data read back equal, fio verify 8 MiB OK")
    finally:
        lab.close()


TESTS = [("deploy_default", test_deploy_default)]
