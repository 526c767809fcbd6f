"""PCIe on the default topology: `lspci` against QEMU's own view of the machine (QMP query-pci:
bus/device/function, ids, BAR addresses and sizes), the tree (switch behind a root port, far NVMe
on its own), ACS bits written by the policy and read back both by the appliance and, independently,
through QEMU's monitor (physical reads of ECAM), the `p2p` matrix with reasons, P2P memory mapped
write-combining, provider choice and allocation; a second boot with the host bridge allowlisted
and a port forced isolated through the config file."""
import os
import re

import pytest

from harness import ARCH, Appliance, BUILD, Qmp

# The host bridge each machine puts at 00:00.0: q35's MCH, virt's generic PCIe host bridge.
HOST_BRIDGE = {"x86_64": "8086:29c0", "arm64": "1b36:0008"}[ARCH]
BDF_LINE = re.compile(r"^[|+\- ]*([0-9a-f]{2}):([0-9a-f]{2})\.([0-7]) ([0-9a-f]{4}):([0-9a-f]{4}) (.*)$")
CMD_LINE = re.compile(r"^    class [0-9a-f]{6} .* command 0x([0-9a-f]{4})$")
BAR_LINE = re.compile(r"^    BAR(\d) (io|mem32|mem64)( prefetchable)? 0x([0-9a-f]+) size \S+ \(0x([0-9a-f]+)\)(.*)$")


def boot(name, config):
    os.makedirs(os.path.join(BUILD, "run"), exist_ok=True)
    qmp_path = os.path.join(BUILD, "run", f"{name}.qmp")
    if os.path.exists(qmp_path):
        os.unlink(qmp_path)
    app = Appliance(name, config=config, qemu_args=["-qmp", f"unix:{qmp_path},server=on,wait=off"])
    app.boot()
    # the ECAM window the appliance found in ACPI's MCFG (q35: 0xb0000000, virt: 0x4010000000)
    m = re.search(r"pci: ECAM 0x([0-9a-f]+) segment 0 ", app.boot_text)
    assert m, app.boot_text[-2000:]
    app.ecam = int(m.group(1), 16)
    return app, Qmp(qmp_path)


@pytest.fixture(scope="module")
def machine():
    app, qmp = boot("test_pci", "panic = exit\n")
    try:
        yield app, qmp
    finally:
        qmp.close()
        app.close()


def qmp_devices(qmp):
    """Every function QEMU knows, flattened: {(bus, dev, fn): device dict}."""
    out = {}

    def walk(devices):
        for d in devices:
            out[(d["bus"], d["slot"], d["function"])] = d
            bridge = d.get("pci_bridge")
            if bridge and bridge.get("devices"):
                walk(bridge["devices"])

    for bus in qmp.execute("query-pci"):
        walk(bus["devices"])
    return out


def parse_lspci(text):
    """{(bus, dev, fn): {"vendor", "device", "rest", "command", "bars": {n: (kind, pref, addr, size, flags)},
    "lines"}}"""
    funcs, cur = {}, None
    for line in text.splitlines():
        m = BDF_LINE.match(line)
        if m:
            key = (int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16))
            cur = funcs[key] = {"vendor": int(m.group(4), 16), "device": int(m.group(5), 16),
                                "rest": m.group(6), "command": None, "bars": {}, "lines": [line]}
            continue
        if cur is None:
            continue
        cur["lines"].append(line)
        c = CMD_LINE.match(line)
        if c:
            cur["command"] = int(c.group(1), 16)
        b = BAR_LINE.match(line)
        if b:
            cur["bars"][int(b.group(1))] = (b.group(2), bool(b.group(3)), int(b.group(4), 16),
                                            int(b.group(5), 16), b.group(6))
    return funcs


def ecam_read16(app, qmp, bus, dev, fn, off):
    addr = app.ecam + (bus << 20) + (dev << 15) + (fn << 12) + off
    out = qmp.hmp(f"xp /1hx {addr:#x}")
    return int(out.split(":")[1].split()[0], 16)


def matrix_row(out, provider):
    """The `p2p` distance matrix's row of one provider: {client BDF: entry} (columns follow the tree)."""
    header = re.search(r"^distance \(provider row.*\n\s+(.*)$", out, re.M).group(1).split()
    row = re.search(rf"^{provider}\s+(.*)$", out, re.M).group(1).split()
    assert len(row) == len(header), out
    return dict(zip(header, row))


def find(funcs, pred):
    return [k for k, f in funcs.items() if pred(f)]


def bdf(k):
    return f"{k[0]:02x}:{k[1]:02x}.{k[2]:x}"


def test_lspci_matches_qemu_query_pci(machine):
    app, qmp = machine
    text = app.cmd("lspci -v")
    mine = parse_lspci(text)
    qemu = qmp_devices(qmp)
    assert set(mine) == set(qemu), f"lspci {sorted(mine)} vs QMP {sorted(qemu)}"
    checked_bars = 0
    for key, q in qemu.items():
        f = mine[key]
        assert (f["vendor"], f["device"]) == (q["id"]["vendor"], q["id"]["device"]), key
        for r in q.get("regions", []):
            assert r["bar"] in f["bars"], f"{bdf(key)} BAR{r['bar']} missing:\n" + "\n".join(f["lines"])
            kind, pref, addr, size, _ = f["bars"][r["bar"]]
            # QEMU reports a BAR whose decode is off in the command register as unmapped (-1):
            # AAVMF leaves its boot disk's memory decode off after ExitBootServices
            decode = 0x1 if r["type"] == "io" else 0x2
            assert f["command"] is not None, "\n".join(f["lines"])
            if not f["command"] & decode:
                addr = -1
            assert (addr, size) == (r["address"], r["size"]), f"{bdf(key)} BAR{r['bar']}: {addr:#x}/{size:#x} vs {r}"
            assert (kind == "io") == (r["type"] == "io")
            if r["type"] == "memory":
                assert pref == r.get("prefetch", False)
                assert (kind == "mem64") == r.get("mem_type_64", False)
            checked_bars += 1
        assert len(f["bars"]) == len(q.get("regions", [])), f"{bdf(key)}: extra BARs"
    assert checked_bars >= 12
    m = re.search(r"(\d+) functions, segment 0000 buses 00-ff, enumerated in (\d+) us, (\d+) anomalies", text)
    assert m and int(m.group(1)) == len(qemu) and m.group(3) == "0", text[-300:]
    print(f"{len(qemu)} functions and {checked_bars} BARs match QMP; enumeration {m.group(2)} us")


def test_tree_is_the_default_topology(machine):
    app, _ = machine
    mine = parse_lspci(app.cmd("lspci"))
    nvme = sorted(find(mine, lambda f: (f["vendor"], f["device"]) == (0x1B36, 0x0010)))
    nic = find(mine, lambda f: (f["vendor"], f["device"]) == (0x8086, 0x10D3))
    ups = find(mine, lambda f: "switch upstream port" in f["rest"])
    downs = find(mine, lambda f: "switch downstream port" in f["rest"])
    roots = find(mine, lambda f: "[root port]" in f["rest"])
    assert len(nvme) == 3 and len(nic) == 1 and len(ups) == 1 and len(downs) == 3 and len(roots) == 2
    text = app.cmd("lspci")
    lines = text.splitlines()
    # the switch, its NVMe pair and the NIC are indented below the first root port
    idx = {bdf(k): i for i, k in enumerate(mine)}
    for k in nvme[:2] + nic:
        line = next(l for l in lines if bdf(k) in l)
        assert line.startswith("|  |  +- "), line
    far = next(l for l in lines if bdf(nvme[2]) in l)
    assert far.startswith("+- "), far
    for k in roots:
        assert "x1 2.5GT/s" in next(l for l in lines if l.startswith(bdf(k)))
    assert idx


def test_capabilities_link_and_acs_bits(machine):
    app, qmp = machine
    mine = parse_lspci(app.cmd("lspci -v"))
    roots = find(mine, lambda f: "[root port]" in f["rest"])
    for k in roots:
        block = "\n".join(mine[k]["lines"])
        assert "ACS@0x148" in block and "PCIe@" in block and "MSI-X@" in block, block
        m = re.search(r"ACS@0x148: cap 0x005f \(SV TB RR CR UF DT\) ctrl 0x([0-9a-f]{4}) \(([A-Z ]+)\) firmware 0x0000 "
                      r"policy (\S+) verified", block)
        assert m, block
        # auto policy without an allowlisted host bridge: no allowed path crosses a root port
        assert m.group(3) == "isolated" and m.group(1) == "001d" and m.group(2) == "SV RR CR UF", block
        # read back independently through QEMU's monitor (a physical read of the ECAM window)
        assert ecam_read16(app, qmp, k[0], k[1], k[2], 0x148 + 6) == 0x001D
        assert "link: x1 2.5GT/s" in block
    for k in find(mine, lambda f: "switch" in f["rest"]):
        assert "ACS" not in "\n".join(mine[k]["lines"]), "x3130 ports have no ACS in QEMU"


def test_p2p_matrix_and_reasons(machine):
    app, _ = machine
    out = app.cmd("p2p")
    assert f"policy: pci.acs=auto; host bridge 00:00.0 {HOST_BRIDGE} not allowlisted" in out, out
    mine = parse_lspci(app.cmd("lspci"))
    nvme = sorted(find(mine, lambda f: (f["vendor"], f["device"]) == (0x1B36, 0x0010)))
    nic = find(mine, lambda f: (f["vendor"], f["device"]) == (0x8086, 0x10D3))[0]
    a, b, far = (bdf(k) for k in nvme)
    ups = bdf(find(mine, lambda f: "switch upstream port" in f["rest"])[0])
    for x, y in ((a, b), (a, bdf(nic)), (b, bdf(nic))):
        assert re.search(rf"^  {x} -> {y}: distance 4, below common upstream switch upstream port {ups}$", out, re.M), out
    for x in (a, b, bdf(nic)):
        assert re.search(rf"^  {x} -> {far}: refused: no common upstream bridge and host bridge 00:00.0 "
                         rf"\({HOST_BRIDGE}\) is not on p2p.host_bridge_allowlist$", out, re.M), out
    row = matrix_row(out, a)
    assert [row[k] for k in (a, b, bdf(nic), far)] == ["0", "4", "4", "-"], row


def test_publish_cmb_write_combining_find_and_alloc(machine):
    app, _ = machine
    mine = parse_lspci(app.cmd("lspci -v"))
    nvme = sorted(find(mine, lambda f: (f["vendor"], f["device"]) == (0x1B36, 0x0010)))
    nic = bdf(find(mine, lambda f: (f["vendor"], f["device"]) == (0x8086, 0x10D3))[0])
    a, b, far = nvme
    providers = app.cmd("p2p")
    for k in (a, b):
        if f"  {bdf(k)} BAR2" not in providers:  # a driver may already have published its CMB
            out = app.cmd(f"p2p publish {bdf(k)} 2")
            assert "mapped write-combining" in out, out
    cmb = mine[a]["bars"][2][2]
    regs = mine[a]["bars"][0][2]
    assert "write-combining" in app.cmd(f"vm {cmb + 0x123000:#x}")
    assert "uncached" in app.cmd(f"vm {regs:#x}")
    out = app.cmd("p2p")
    # the NVMe driver keeps its I/O SQs at the start of the CMB and publishes the rest
    m = re.search(rf"^  {bdf(a)} BAR2 \[0x([0-9a-f]+)-0x([0-9a-f]+)\] size (\d+) KiB free (\d+) KiB", out, re.M)
    assert m, out
    start, end, size_kib, free_kib = int(m.group(1), 16), int(m.group(2), 16), int(m.group(3)), int(m.group(4))
    assert end == cmb + (64 << 20) - 1 and cmb <= start < cmb + (1 << 20), out
    assert size_kib == (end + 1 - start) >> 10 and free_kib <= size_kib, out  # the NIC may hold RX buffers
    out = app.cmd(f"p2p find {bdf(b)} {nic}")
    assert f"nearest provider {bdf(b)} BAR2 total distance 4" in out, out
    out = app.cmd(f"p2p find {nic}")
    assert f"nearest provider {bdf(a)} BAR2 total distance 4" in out, "tie: lowest BDF\n" + out
    # the far drive may use its own CMB (the NVMe driver publishes it: distance 0), but no
    # provider can serve it together with a device behind the switch
    out = app.cmd(f"p2p find {bdf(far)}")
    assert "no compatible provider" in out or f"nearest provider {bdf(far)} BAR2 total distance 0" in out, out
    out = app.cmd(f"p2p find {bdf(far)} {nic}")
    assert "no compatible provider: refused: no common upstream bridge" in out, out
    def in_use():
        m = re.search(rf"p2p {bdf(a)} BAR2 in-use (\d+) B", app.cmd("stats pci"))
        assert m
        return int(m.group(1))
    before = in_use()
    out = app.cmd(f"p2p alloc {bdf(a)} 10000")
    m = re.search(r"allocated 0x([0-9a-f]+) class device", out)
    got = int(m.group(1), 16) if m else 0
    assert start <= got < end, out
    assert re.search(rf"{bdf(a)} BAR2 .* free {free_kib - 12} KiB ", app.cmd("p2p")), "10000 B = 3 x 4 KiB chunks"
    assert app.cmd(f"p2p free {bdf(a)} 0x{got:x} 10000") == ""
    assert re.search(rf"{bdf(a)} BAR2 .* free {free_kib} KiB ", app.cmd("p2p"))
    assert in_use() == before, "the allocation is returned exactly"


@pytest.fixture(scope="module")
def allowlisted():
    app, qmp = boot("test_pci_allow", f"panic = exit\np2p.host_bridge_allowlist = {HOST_BRIDGE}\n"
                                      "pci.acs.isolate = 00:11.0\n")
    try:
        yield app, qmp
    finally:
        qmp.close()
        app.close()


def test_allowlist_and_isolate_list_from_the_config_file(allowlisted):
    app, qmp = allowlisted
    assert "unknown setting" not in app.boot_text
    mine = parse_lspci(app.cmd("lspci -v"))
    roots = sorted(find(mine, lambda f: "[root port]" in f["rest"]))
    opened, forced = roots
    assert bdf(forced) == "00:11.0"
    assert "policy p2p-path verified" in "\n".join(mine[opened]["lines"])
    assert ecam_read16(app, qmp, *opened, 0x148 + 6) == 0x0001, "SV only: RR/CR/EC clear"
    assert "policy isolated verified" in "\n".join(mine[forced]["lines"])
    assert ecam_read16(app, qmp, *forced, 0x148 + 6) == 0x001D
    out = app.cmd("p2p")
    assert f"host bridge 00:00.0 {HOST_BRIDGE} allowlisted" in out
    nvme = sorted(find(mine, lambda f: (f["vendor"], f["device"]) == (0x1B36, 0x0010)))
    a, far = bdf(nvme[0]), bdf(nvme[2])
    # the far drive's port is isolated: its ACS redirect forces traffic up, and the host bridge
    # is allowlisted, so the route goes through it (Linux: PCI_P2PDMA_MAP_THRU_HOST_BRIDGE)
    assert re.search(rf"^  {a} -> {far}: distance 6, no common upstream bridge: through host bridge 00:00.0 "
                     rf"\({HOST_BRIDGE}\), allowlisted$", out, re.M), out
    nic = bdf(find(mine, lambda f: (f["vendor"], f["device"]) == (0x8086, 0x10D3))[0])
    row = matrix_row(out, a)
    assert [row[k] for k in (a, bdf(nvme[1]), nic, far)] == ["0", "4", "4", "h6"], row
