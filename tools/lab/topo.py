"""tools/lab/topo.py: the lab's topologies and the guest-side recipes they use.

(b) baseline: a Linux initiator and a Linux target guest (emulated NVMe drive exported by nvmet over
    TCP and, over soft RoCE, RDMA) on one captured link. This is what the appliance is compared with.
(a) appliance: a Linux initiator and the appliance (tools/qemu-run) on one captured link.

Addresses exist only on the lab's emulated link (QEMU dgram over host loopback UDP).
"""
import os
import re

# lab.py is the runner these recipes drive (Lab, Guest.run).

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

NET = "10.10.0"
TARGET_IP, INITIATOR_IP, APPLIANCE_IP = f"{NET}.1", f"{NET}.2", f"{NET}.10"
NQN = "nqn.2026-11.org.p2pstore:lab-target"
NVME_PORT = 4420


def baseline(lab, nvme_mb=256):
    """Declare the baseline guests on one link; return (target, initiator). Call lab.start() next."""
    link = lab.link("link0")
    # The initiator's NIC carries the link's capture (filter-dump on its netdev).
    initiator = lab.guest("initiator", ip=f"{INITIATOR_IP}/24", links=[link])
    target = lab.guest("target", ip=f"{TARGET_IP}/24", links=[link], nvme_mb=nvme_mb)
    return target, initiator


def pin_static_address(esp):
    """The lab's links have no DHCP server: unless the ESP's p2pstore.cfg sets net.address, pin the
    appliance to APPLIANCE_IP (else it would wait net.dhcp_timeout for its fallback address)."""
    cfg = os.path.join(esp, "p2pstore", "p2pstore.cfg")
    text = open(cfg).read() if os.path.exists(cfg) else ""
    if not re.search(r"^\s*net\.address\s*=", text, re.M):
        os.makedirs(os.path.dirname(cfg), exist_ok=True)
        with open(cfg, "w") as f:
            f.write(text + ("" if text.endswith("\n") or not text else "\n") + f"net.address = {APPLIANCE_IP}\n")


def appliance_esp_copy(lab, name, src, files):
    """A copy of the appliance's ESP directory src at lab.rundir/name (replacing an old one) with
    p2pstore/FILE holding TEXT for each FILE: TEXT of files (nvmet.json, p2pstore.cfg, ...), the
    appliance's address pinned (pin_static_address); returns its path."""
    import shutil
    esp = os.path.join(lab.rundir, name)
    shutil.rmtree(esp, ignore_errors=True)
    shutil.copytree(src, esp)
    os.makedirs(os.path.join(esp, "p2pstore"), exist_ok=True)
    for fname, text in files.items():
        with open(os.path.join(esp, "p2pstore", fname), "w") as f:
            f.write(text)
    pin_static_address(esp)
    return esp


# The namespaces (nsid and block device) a Linux initiator has of subsystem $1, one per line.
NS_LIST_SH = r"""
nslist() {
  for s in /sys/class/nvme-subsystem/nvme-subsys*; do
    [ "$(cat $s/subsysnqn 2>/dev/null)" = "$1" ] || continue
    for n in $s/nvme*n*; do [ -b /dev/${n##*/} ] && echo "NS $(cat $n/nsid) /dev/${n##*/}"; done
  done | sort -u
}
"""


def connect_namespaces(initiator, nqn, count, addr=APPLIANCE_IP, timeout=90):
    """nvme connect (TCP) to subsystem nqn at addr and wait until count namespace block devices
    are there; return (controller name nvmeX, {nsid: block device}). A failure raises with the
    guest's kernel log."""
    r = initiator.run(NS_LIST_SH + f"""
        nvme connect -t tcp -a {addr} -s {NVME_PORT} -n {nqn} || {{ dmesg | tail -20; exit 1; }}
        for i in $(seq 100); do
          for c in /sys/class/nvme/nvme*; do
            [ "$(cat $c/subsysnqn 2>/dev/null)" = {nqn} ] && [ "$(cat $c/state 2>/dev/null)" = live ] && \
              echo "CTRL=${{c##*/}}"
          done | head -1 > /tmp/ctrl
          nslist {nqn} > /tmp/ns
          [ -s /tmp/ctrl ] && [ $(wc -l < /tmp/ns) = {count} ] && break; sleep 0.1
        done
        cat /tmp/ctrl /tmp/ns""", timeout=timeout)
    ns = {int(k): v for k, v in re.findall(r"^NS (\d+) (/dev/\S+)$", r.out, re.M)}
    m = re.search(r"CTRL=(nvme\d+)", r.out)
    if r.rc != 0 or not m or len(ns) != count:
        raise AssertionError(f"nvme connect {nqn}: want {count} namespaces (rc {r.rc}):\n{r.out[-1500:]}")
    return m.group(1), ns


def appliance_topology(lab, esp, extra=(), static=True):
    """Topology (a): declare a Linux initiator and the appliance (from ESP directory esp, through
    tools/qemu-run) on one captured link; return (appliance, initiator). Call lab.start() next.
    static: pin the appliance's address (pin_static_address); False leaves it to DHCP.
    The appliance-side checks belong to the NIC driver issue."""
    if static:
        pin_static_address(esp)
    link = lab.link("link0")
    initiator = lab.guest("initiator", ip=f"{INITIATOR_IP}/24", links=[link])
    appliance = lab.appliance(esp, link, extra=extra)
    return appliance, initiator


def rxe_up(guest, timeout=30):
    """Add the soft RoCE device rxe0 on eth0 and wait for its RoCE v2 IPv4 GID (index 1)."""
    guest.run(f"""
        rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev eth0 || exit 1
        for i in $(seq {timeout * 10}); do
          gid=$(cat /sys/class/infiniband/rxe0/ports/1/gids/1 2>/dev/null)
          case $gid in *:ffff:*) [ "$gid" != "0000:0000:0000:0000:0000:0000:0000:0000" ] && exit 0;; esac
          sleep 0.1
        done
        echo "no RoCE v2 GID on rxe0"; exit 1
    """, timeout=timeout + 10, check=True)


def nvmet_export(target, transport, dev="/dev/nvme0n1", port_id=None, timeout=30):
    """Export dev from the target guest through nvmet's configfs on transport 'tcp' or 'rdma'
    (rdma needs rxe_up first). Idempotent: a second call for the same transport does nothing."""
    port_id = port_id or {"tcp": 1, "rdma": 2}[transport]
    target.run(f"""
        set -e
        cfg=/sys/kernel/config/nvmet
        sub=$cfg/subsystems/{NQN}
        for i in $(seq 50); do [ -b {dev} ] && break; sleep 0.1; done
        [ -b {dev} ] || {{ echo "no block device {dev}"; exit 1; }}
        if [ ! -d $sub ]; then
          mkdir $sub
          echo 1 > $sub/attr_allow_any_host
          mkdir $sub/namespaces/1
          echo -n {dev} > $sub/namespaces/1/device_path
          echo 1 > $sub/namespaces/1/enable
        fi
        port=$cfg/ports/{port_id}
        if [ ! -d $port ]; then
          mkdir $port
          echo ipv4 > $port/addr_adrfam
          echo {transport} > $port/addr_trtype
          echo {TARGET_IP} > $port/addr_traddr
          echo {NVME_PORT} > $port/addr_trsvcid
          ln -s $sub $port/subsystems/{NQN}
        fi
        echo exported {dev} as {NQN} on {transport} {TARGET_IP}:{NVME_PORT}
    """, timeout=timeout, check=True)


def nvme_connect(initiator, transport, timeout=60, addr=TARGET_IP, nqn=NQN):
    """Connect the initiator to the target's subsystem (by default the Linux target's; addr and nqn
    name another, e.g. the appliance's); return the block device path it got."""
    r = initiator.run(f"""
        set -e
        nvme connect -t {transport} -a {addr} -s {NVME_PORT} -n {nqn}
        for i in $(seq 100); do
          # The namespace's block device hangs off its subsystem (native multipath: nvmeXnY).
          for s in /sys/class/nvme-subsystem/nvme-subsys*; do
            [ "$(cat $s/subsysnqn 2>/dev/null)" = "{nqn}" ] || continue
            for n in $s/nvme*n*; do [ -b /dev/${{n##*/}} ] && {{ echo DEV=/dev/${{n##*/}}; exit 0; }}; done
          done
          sleep 0.1
        done
        echo "no namespace block device appeared"; exit 1
    """, timeout=timeout, check=True)
    return r.out.split("DEV=")[-1].split()[0]


def nvme_disconnect(initiator, timeout=60):
    """Disconnect the initiator from the subsystem; return the Result (its output names the count)."""
    return initiator.run(f"nvme disconnect -n {NQN}", timeout=timeout)
