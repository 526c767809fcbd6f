"""tests/lab/odp_tests.py: on-demand paging of rxe0 over NVMe (issue 16) against Linux soft RoCE.

roce_odp: the appliance boots with 256 MiB of memory (QEMU -m) and a 1 GiB ODP region over nvme2
(from byte 32 MiB; the drive's backing file is made 1088 MiB, sparse): the remote region is 4x the
appliance's whole DRAM, and its resident pool is 32 frames (128 KiB). The Linux guest adds rxe0 and
puts 1% loss on its link (netem). tools/lab/odp_client.c (ours, built on the host against Debian's
libibverbs/librdmacm and copied in) connects with rdma_cm to port 7180, learns the region's
address and rkey from the REP's private data, RDMA WRITEs a pattern across all of it, one 4 KiB
page every 4 MiB from the first byte to the last (256 pages, ODP_STRIDE; every page faults: RNR
NAKs, page-ins, write-backs of the pages before), READs them all back byte-exact (most were paged
out), and runs Fetch&Add and Compare&Swap on a word of every 32nd of them (paged out by then). With dirty pages still resident and no flush, the appliance powers off (its
shutdown hook writes them back before the drives shut down) and boots again on the same drives,
and a new client READs the whole region back byte-exact from the namespace. Counters (faults, RNR NAKs, page-ins/outs, fault service p50/p99) are reported.
"""
import os
import re
import shutil
import subprocess
import time

import topo
from baseline_tests import appliance_esp, expect
from hostile_tests import put_binary
from lab import Lab
from net_tests import PROMPT, Appliance

CLIENT = os.path.join(topo.TOP, "tools", "lab", "odp_client.c")
PAGES, FRAMES = 256, 32            # pages touched by the client, resident pool
MEMORY_MIB, REGION_MIB = 256, 1024  # the appliance's DRAM and the region 4x its size
STRIDE = REGION_MIB * 1024 * 1024 // PAGES
CONFIG = f"panic = exit\nrdma.odp.region = nvme2n1 {REGION_MIB}M 32M\nrdma.odp.frames = {FRAMES}\n"
STRIDE_ENV = f"ODP_STRIDE={STRIDE}"
SEED = 0x3C
LOSS = os.environ.get("LAB_ODP_LOSS", "1")  # netem loss on the Linux side, percent


def build_client(rundir):
    out = os.path.join(rundir, "odp_client")
    p = subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", out, CLIENT, "-libverbs", "-lrdmacm"],
                       capture_output=True, text=True, timeout=120)
    expect(p.returncode == 0, f"building odp_client.c failed: {p.stderr[-1500:]}")
    return out


def odp_counters(app):
    """The pool's counters from `rdma odp` (also bytes_in/bytes_out of page-ins/outs and the fault
    service histogram {bucket bound us: count}), and the text."""
    out = app.cmd("rdma odp")
    c = {}
    for name, rx in (("faults", r"faults (\d+)"), ("rnr", r"rnr-naks (\d+)"), ("pageins", r"page-ins (\d+)"),
                     ("pageouts", r"page-outs (\d+)"), ("resident", r"resident (\d+)"),
                     ("bytes_in", r"page-ins \d+ \((\d+) B\)"), ("bytes_out", r"page-outs \d+ \((\d+) B\)"),
                     ("p50", r"p50 <= (\d+) us"), ("p99", r"p99 <= (\d+) us")):
        m = re.search(rx, out)
        expect(m, f"`rdma odp` has no {name}:\n{out[-1500:]}")
        c[name] = int(m.group(1))
    m = re.search(r"histogram \(us\):([^\n]*)", out)
    c["hist"] = {int(b): int(n) for b, n in re.findall(r"<(\d+):(\d+)", m.group(1) if m else "")}
    return c, out


def odp_lab(lab, config, esp_name="esp-odp", memory_mib=None, nvme2_mib=None):
    """Declare the ODP lab on link0: the Linux initiator and the appliance booting a copy of its
    ESP with p2pstore.cfg = config (address pinned) and its drives in lab.rundir/disks (nvme2
    nvme2_mib large, sparse, when given); with memory_mib, QEMU's -m for the appliance; build
    odp_client. Returns (dev, linux, client binary). Call lab.start() then odp_ready()."""
    disks = os.path.join(lab.rundir, "disks")
    shutil.rmtree(disks, ignore_errors=True)
    run_args = ["--disks", disks] + (["--memory", f"{memory_mib}M"] if memory_mib else [])
    if nvme2_mib:
        os.makedirs(disks)
        with open(os.path.join(disks, "nvme2.img"), "wb") as f:
            f.truncate(nvme2_mib << 20)
    esp = topo.appliance_esp_copy(lab, esp_name, appliance_esp(), {"p2pstore.cfg": config})
    link = lab.link("link0")
    linux = lab.guest("initiator", ip=f"{topo.INITIATOR_IP}/24", links=[link])
    dev = lab.appliance(esp, link, run_args=run_args)
    return dev, linux, build_client(lab.rundir)


def odp_ready(dev, guests, binary, region_mib):
    """After lab.start(): wait for the appliance's ODP region line and prompt, bring up rxe0 in
    each Linux guest and copy odp_client in as /tmp/odp_client. Returns the Appliance console."""
    dev.expect(rf"ODP region {region_mib} MiB over nvme2n1", timeout=120)
    dev.expect(re.escape(PROMPT), timeout=30)
    for g in guests:
        topo.rxe_up(g)
        put_binary(g, binary, "/tmp/odp_client")
    return Appliance(dev)


def client(linux, app, mode, timeout=120, env="", addr=topo.APPLIANCE_IP):
    """Run odp_client MODE in the guest (environment env, against addr) and return (ms, its
    output); while it runs past 10 s, keep a snapshot of both sides (the appliance's QPs and
    pager, Linux's QP) for the failure report."""
    linux.run(f"rm -f /tmp/c.log; ({env} timeout {timeout - 10} /tmp/odp_client {addr} 7180 {mode} {SEED} "
              f">/tmp/c.log 2>&1; echo rc=$? >>/tmp/c.log) </dev/null >/dev/null 2>&1 &", check=True)
    deadline, snap = time.monotonic() + timeout, ""
    t0 = time.monotonic()
    while time.monotonic() < deadline:
        out = linux.run("cat /tmp/c.log", timeout=30).out
        if "rc=" in out:
            break
        if not snap and time.monotonic() - t0 > 10:
            snap = (app.cmd("rdma odp") + app.cmd("rdma")[-2000:] +
                    linux.run("rdma res show qp -dd 2>&1 | tail -5", timeout=30).out)
        time.sleep(1)
    m = re.search(r"ODP-CLIENT-OK \S+ \d+ B in (\d+) ms", out)
    if not (m and "rc=0" in out):
        hw = linux.run("cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep . *", timeout=30).out
        expect(False, f"odp_client {mode} failed:\n{out[-1500:]}\nwhile it ran:\n{snap}\nafter:\n"
               f"{app.cmd('rdma odp')}\nLinux rxe0 counters:\n{hw[-1500:]}")
    return int(m.group(1)), out


def test_roce_odp(s):
    t_start = time.monotonic()
    lab = Lab("tests-odp", capture=False)
    s.extra_rundirs.append(lab.rundir)
    try:
        dev, linux, binary = odp_lab(lab, CONFIG, memory_mib=MEMORY_MIB, nvme2_mib=32 + REGION_MIB + 32)
        lab.start()
        app = odp_ready(dev, [linux], binary, REGION_MIB)
        if LOSS != "0":
            linux.run(f"tc qdisc add dev eth0 root netem loss {LOSS}%", check=True)
        t_w, _ = client(linux, app, "write", env=STRIDE_ENV)
        after_w, _ = odp_counters(app)
        expect(after_w["faults"] >= 1, f"no faults while writing: {after_w}")
        t_r, _ = client(linux, app, "read", env=STRIDE_ENV)
        after_r, _ = odp_counters(app)
        expect(after_r["pageins"] - after_w["pageins"] >= PAGES - FRAMES,
               f"the READ pass should page most of the region back in: {after_w} -> {after_r}")
        t_a, _ = client(linux, app, "atomic", env=STRIDE_ENV)
        after_a, text = odp_counters(app)
        expect(after_a["rnr"] > after_r["rnr"], f"atomics on paged-out pages should fault: {after_r} -> {after_a}")
        expect(after_a["resident"] <= FRAMES, f"the pool is bounded:\n{text}")
        # power off without a flush: the shutdown hook writes the dirty pages back; then the same
        # backing files, a second boot, the same configuration
        expect(re.search(r"resident \d+ dirty [1-9]", text), f"dirty pages left for the shutdown hook:\n{text}")
        dev.send("poweroff\r")
        dev.expect(r"rdma odp: \d+ dirty page\(s\) written back and flushed", timeout=60)
        deadline = time.monotonic() + 60
        while dev.child.isalive() and time.monotonic() < deadline:
            time.sleep(0.2)
        expect(not dev.child.isalive(), "QEMU did not exit after poweroff")
        dev.start()
        dev.expect(rf"ODP region {REGION_MIB} MiB over nvme2n1", timeout=120)
        dev.expect(re.escape(PROMPT), timeout=30)
        t_r2, _ = client(linux, app, "read", env=STRIDE_ENV)
        after_boot, _ = odp_counters(app)
        expect(after_boot["pageins"] >= PAGES, f"the read after the reboot came from the drive: {after_boot}")
        return (f"{REGION_MIB} MiB region on a {MEMORY_MIB} MiB appliance ({PAGES} pages touched, one every "
                f"{STRIDE >> 20} MiB), {FRAMES}-frame pool, {LOSS}% loss: write {t_w} ms, read {t_r} ms, atomics {t_a} ms "
                f"(faults {after_a['faults']}, RNR NAKs {after_a['rnr']}, page-ins {after_a['pageins']}, "
                f"page-outs {after_a['pageouts']}, fault service p50 <= {after_a['p50']} us p99 <= {after_a['p99']} us);"
                f" after poweroff (no flush) + boot read back byte-exact in {t_r2} ms; {time.monotonic() - t_start:.0f} s")
    finally:
        lab.close()


TESTS = [("roce_odp", test_roce_odp)]
