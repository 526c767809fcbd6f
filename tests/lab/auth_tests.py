"""tests/lab/auth_tests.py: DH-HMAC-CHAP in-band authentication (issue 19) on the appliance, run by
tests/lab/run-tests as `nvmet_auth` (~30 s: its own boot, then under a second per host; ffdhe8192 with
SHA-512, bidirectional: admin queue 0.42 s, I/O queue 0.31 s host side included, 2026-11-25).

The lab guest's kernel is Debian's 6.1 (linux-image-6.1.0-*-amd64), built with CONFIG_NVME_AUTH and
CONFIG_NVME_TARGET_AUTH unset: neither `nvme connect --dhchap-secret` nor Linux nvmet can
authenticate there. So the host side is tools/lab/dhchap_host.c (ours, static, over Debian's
libmbedcrypto) in the guest, and the Linux parts check what the 6.1 host does support:
  - nvme-cli 2.3 accepts the configured secrets (`nvme check-dhchap-key`, CRC and length);
  - for every hash (SHA-256/384/512) and DH group (null, ffdhe2048..8192) that Linux offers, one
    host (its own NQN and key in nvmet.json), half of them bidirectional: the admin queue and an
    I/O queue authenticate, commands before that get Authentication Required, the controller's
    response checks out; with a wrong host key the controller answers Failure1, with a wrong
    controller key the host refuses the controller;
  - Linux's own initiator, as a host that has a key configured, cannot connect (its kernel has no
    DH-HMAC-CHAP: Connect asks for it), and a host without a key still connects as before;
  - the appliance logs each refusal once and frees every controller.

`nvmet_auth_linux` boots the lab's second kernel flavour (bookworm-backports' 6.12, built with NVMe
host and target authentication: tools/lab/build-image-bpo) next to the appliance and makes the same
proof with Linux's own host: nvme-cli 2.3 makes the secrets (`gen-dhchap-key --secret -m 0..3`), and
`nvme connect --dhchap-secret [--dhchap-ctrl-secret]` authenticates for every hash and DH group, a
write read back through the namespace; wrong host and controller secrets are refused. The same hosts
and secrets against Linux 6.12 nvmet (configfs, in the same guest over 127.0.0.1) are the reference,
with connect times side by side (~2 min with the boot: 2026-11-25, 128 s on a loaded machine; the two
refusals by Linux nvmet take the host's admin timeout each, set to 10 s for them).
"""
import base64
import hashlib
import hmac
import json
import os
import re
import struct
import subprocess
import time
import zlib

import topo
from baseline_tests import expect
from hostile_tests import put_binary
from nvmet_tests import APP, HOST_OK, NQN, NQN1, SH, NvmetLab, connect, disconnect, wait_ctrls

SRC = os.path.join(topo.TOP, "tools", "lab", "dhchap_host.c")
HASHES = {1: "hmac(sha256)", 2: "hmac(sha384)", 3: "hmac(sha512)"}
GROUPS = {0: "null", 1: "ffdhe2048", 2: "ffdhe3072", 3: "ffdhe4096", 4: "ffdhe6144", 5: "ffdhe8192"}
# (hash id, group id, key transformation hash, bidirectional): every hash and every group once
CASES = [(1, 0, 1, False), (2, 1, 2, True), (3, 2, 3, False), (1, 3, 0, True), (2, 4, 2, False), (3, 5, 3, True)]


def host_nqn(i):
    return f"nqn.2026-11.org.p2pstore:auth-host{i}"


def secret(tag, hm, n):
    """A DHHC-1 secret as nvme gen-dhchap-key writes it: base64(key || CRC-32 LE)."""
    key = hashlib.sha512(tag.encode()).digest()[:n]
    return "DHHC-1:%02d:%s:" % (hm, base64.b64encode(key + struct.pack("<I", zlib.crc32(key))).decode())


def keys(i):
    h, g, hm, bidir = CASES[i]
    n = {0: 32, 1: 32, 2: 48, 3: 64}[hm]
    return secret(f"host {i}", hm, n), secret(f"ctrl {i}", hm, n) if bidir else ""


def nvmet_json():
    hosts = [{"nqn": HOST_OK}]
    for i, (h, g, _, _) in enumerate(CASES):
        k, ck = keys(i)
        hosts.append({"nqn": host_nqn(i), "dhchap_key": k, "dhchap_ctrl_key": ck,
                      "dhchap_hash": HASHES[h], "dhchap_dhgroup": GROUPS[g]})
    allowed = [h["nqn"] for h in hosts]
    return json.dumps({
        "hosts": hosts,
        "ports": [{"portid": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": APP, "trsvcid": "4420"},
                   "subsystems": [NQN, NQN1]}],
        "subsystems": [
            {"nqn": NQN, "allowed_hosts": allowed,
             "attr": {"allow_any_host": "0", "serial": "p2pstore0001", "model": "p2pstore"},
             "namespaces": [{"nsid": 1, "enable": 1, "device": {"path": "/dev/nvme0n1"}}]},
            {"nqn": NQN1, "attr": {"allow_any_host": "1", "serial": "p2pstore0002", "model": "p2pstore"},
             "namespaces": [{"nsid": 1, "enable": 1, "device": {"path": "/dev/nvme1n1"}}]}]}, indent=1)


def build_host(rundir):
    out = os.path.join(rundir, "dhchap_host")
    p = subprocess.run(["gcc", "-static", "-Os", "-s", "-Wall", "-Wextra", "-Werror", "-o", out, SRC,
                        "-lmbedcrypto", "-lz"], capture_output=True, text=True, timeout=120)
    expect(p.returncode == 0, f"building dhchap_host.c failed: {p.stderr[-1500:]}")
    return out


def run_host(linux, i, key=None, ctrl_key=None, timeout=240):
    k, ck = keys(i)
    key = key or k
    ck = ctrl_key if ctrl_key is not None else (ck or "-")
    return linux.run(f"timeout {timeout - 10} /tmp/dhchap_host {APP} 4420 {NQN} {host_nqn(i)} '{key}' '{ck}' 012345",
                     timeout=timeout)


def test_nvmet_auth(s):
    lab = NvmetLab(name="tests-auth", nvmet_json=nvmet_json())
    s.extra_rundirs.append(os.path.join(topo.TOP, "build", "lab", lab.name))
    try:
        app, linux = lab.start()
        put_binary(linux, build_host(lab.lab.rundir), dest="/tmp/dhchap_host")
        # nvme-cli 2.3 reads the configured secrets as valid
        for i in range(len(CASES)):
            for k in keys(i):
                if k:
                    r = linux.run(f"nvme check-dhchap-key --key='{k}'", timeout=30)
                    expect(r.rc == 0, f"nvme check-dhchap-key {k}: {r.out}")
        times = []
        for i, (h, g, _, bidir) in enumerate(CASES):
            t0 = time.monotonic()
            r = run_host(linux, i)
            m = re.search(r"AUTH-OK .* admin (\d+) ms io (\d+) ms", r.out)
            expect(r.rc == 0 and m, f"host {i} ({HASHES[h]}, {GROUPS[g]}, bidirectional {bidir}):\n{r.out[-1500:]}")
            times.append(f"{HASHES[h][5:-1]}/{GROUPS[g]}{'/bidi' if bidir else ''} {m.group(1)}+{m.group(2)} ms")
            expect(time.monotonic() - t0 < 200, "too slow")
        wait_ctrls(app, 0)
        # a wrong host key: Failure1 (authentication failed, explanation 01h)
        wrong = secret("not the key", 1, 32)
        r = run_host(linux, 0, key=wrong)
        expect(r.rc != 0 and re.search(r"Failure1 from the controller, reason 1 explanation 1", r.out),
               f"wrong host key:\n{r.out[-800:]}")
        # a wrong controller key (the host checks the controller): the host refuses it
        r = run_host(linux, 1, ctrl_key=secret("not the ctrl key", 2, 48))
        expect(r.rc != 0 and "the controller's response is wrong" in r.out, f"wrong controller key:\n{r.out[-800:]}")
        # Linux's initiator as a keyed host: Connect asks for authentication its kernel cannot do
        k, _ = keys(0)
        r = linux.run(f"dmesg -c >/dev/null; nvme connect -t tcp -a {APP} -s 4420 -n {NQN} --hostnqn={host_nqn(0)}"
                      f" --dhchap-secret='{k}'; echo rc=$?; dmesg | tail -5", timeout=90)
        expect("rc=0" not in r.out, f"Linux connected as a keyed host without authenticating:\n{r.out}")
        linux_says = (re.findall(r"nvme.*(?:auth|Auth).*", r.out) or [r.out.strip().splitlines()[-1]])[0].strip()
        # a host without a key connects as before
        connect(linux, NQN)
        disconnect(linux, NQN)
        state = wait_ctrls(app, 0, secs=40)
        expect(re.search(r"^0 controllers, ", state, re.M), f"controllers left:\n{state}")
        m = re.search(r"authentication: (\d+) queues authenticated, (\d+) failed", state)
        expect(m and int(m.group(1)) >= 2 * len(CASES) and int(m.group(2)) >= 1,
               f"authentication counters:\n{state}")
        log = app.cmd("log show")
        expect(re.search(rf"host {re.escape(host_nqn(0))} not authenticated: wrong response", log),
               "wrong key not logged:\n" + log[-1500:])
        return f"{'; '.join(times)}; Linux 6.1 as a keyed host: {linux_says[:80]!r}"
    finally:
        lab.close()


# --- nvmet_auth_linux: Linux 6.12's own DH-HMAC-CHAP host (the "bpo" kernel flavour) --------------------

REF_NQN = "nqn.2026-11.org.p2pstore:linux-ref"   # Linux nvmet's subsystem, in the initiator guest itself
REF_PORT = 4421
LINUX_REFUSAL_TIMEOUT = 10  # s: the Linux host's admin timeout while Linux nvmet refuses it


def raw_key(tag, hm):
    """The key bytes handed to `nvme gen-dhchap-key --secret=HEX` (32, 48 or 64 bytes)."""
    return hashlib.sha512(tag.encode()).digest()[:{0: 32, 1: 32, 2: 48, 3: 64}[hm]]


def cli_secret(key, hm, nqn):
    """What nvme-cli 2.3's `gen-dhchap-key --secret=HEX -m HM -n NQN` prints: with HM 1-3 it stores the
    key already transformed (HMAC-SHA-256/384/512 keyed with it over NQN || "NVMe-over-Fabrics"), then
    CRC-32 LE appended, base64. Computed independently here; the guest's nvme-cli must print exactly this."""
    if hm:
        key = hmac.new(key, nqn.encode() + b"NVMe-over-Fabrics", {1: "sha256", 2: "sha384", 3: "sha512"}[hm]).digest()
    return "DHHC-1:%02d:%s:" % (hm, base64.b64encode(key + struct.pack("<I", zlib.crc32(key))).decode())


def linux_keys(i):
    """Host i's (host secret, controller secret or "", [(gen-dhchap-key command, what it must print)])."""
    _, _, hm, bidir = CASES[i]
    hk, ck = raw_key(f"linux host {i}", hm), raw_key(f"linux ctrl {i}", hm)
    gens = [(f"nvme gen-dhchap-key --secret={hk.hex()} -m {hm} -n {host_nqn(i)}", cli_secret(hk, hm, host_nqn(i)))]
    if bidir:
        gens.append((f"nvme gen-dhchap-key --secret={ck.hex()} -m {hm} -n {NQN}", cli_secret(ck, hm, NQN)))
    return gens[0][1], gens[1][1] if bidir else "", gens


def linux_nvmet_json():
    """nvmet_json() with the Linux-host secrets."""
    cfg = json.loads(nvmet_json())
    for h in cfg["hosts"]:
        if h["nqn"] != HOST_OK:
            i = int(h["nqn"].rsplit("host", 1)[1])
            h["dhchap_key"], h["dhchap_ctrl_key"], _ = linux_keys(i)
    return json.dumps(cfg, indent=1)


def linux_nvmet_ref(linux):
    """Linux nvmet in the initiator guest on 127.0.0.1:REF_PORT: subsystem REF_NQN (a 64 MiB file on
    tmpfs, buffered), the same hosts, secrets, hashes and DH groups as the appliance, through configfs."""
    lines = ["set -e", "cfg=/sys/kernel/config/nvmet", "truncate -s 64M /tmp/ref.img",
             f"s=$cfg/subsystems/{REF_NQN}", "mkdir $s", "echo 0 > $s/attr_allow_any_host"]
    for i, (h, g, _, _) in enumerate(CASES):
        k, ck, _ = linux_keys(i)
        d = f"$cfg/hosts/{host_nqn(i)}"
        lines += [f"mkdir {d}", f"echo '{k}' > {d}/dhchap_key", f"echo '{HASHES[h]}' > {d}/dhchap_hash",
                  f"echo {GROUPS[g]} > {d}/dhchap_dhgroup", f"ln -s {d} $s/allowed_hosts/"]
        if ck:
            lines.append(f"echo '{ck}' > {d}/dhchap_ctrl_key")
    lines += ["mkdir $s/namespaces/1", "echo 1 > $s/namespaces/1/buffered_io",
              "echo -n /tmp/ref.img > $s/namespaces/1/device_path", "echo 1 > $s/namespaces/1/enable",
              "p=$cfg/ports/9", "mkdir $p", "echo ipv4 > $p/addr_adrfam", "echo tcp > $p/addr_trtype",
              "echo 127.0.0.1 > $p/addr_traddr", f"echo {REF_PORT} > $p/addr_trsvcid", "ln -s $s $p/subsystems/"]
    linux.run("\n".join(lines), timeout=60, check=True)


def linux_connect(linux, addr, port, sub, i, key=None, ckey=None, rw=True):
    """nvme connect as host i with --dhchap-secret (and --dhchap-ctrl-secret when it has one), then
    (rw) 256 KiB written and read back through the namespace, and disconnect. Return (rc, connect ms,
    output: nvme-cli's words, the kernel's nvme lines, RW-OK)."""
    k, ck, _ = linux_keys(i)
    key, ckey = key or k, ck if ckey is None else ckey
    copt = f"--dhchap-ctrl-secret='{ckey}'" if ckey else ""
    io = "" if not rw else f"""
        b=$(blk {sub}) || {{ echo "no block device for {sub}"; nvme disconnect -n {sub}; exit 1; }}
        dd if=/dev/urandom of=/tmp/w bs=64k count=4 2>/dev/null
        dd if=/tmp/w of=$b bs=64k seek={4 * i} oflag=direct conv=fsync 2>/dev/null &&
          dd if=$b of=/tmp/r bs=64k skip={4 * i} count=4 iflag=direct 2>/dev/null && cmp /tmp/w /tmp/r && echo RW-OK"""
    r = linux.run(SH + f"""
        dmesg -c >/dev/null
        t0=$EPOCHREALTIME
        nvme connect -t tcp -a {addr} -s {port} -n {sub} --hostnqn={host_nqn(i)} --dhchap-secret='{key}' {copt}
        rc=$?
        echo "CONNECT rc=$rc t0=$t0 t1=$EPOCHREALTIME"
        [ $rc = 0 ] && {{ ctrl {sub} {host_nqn(i)} >/dev/null || echo "no live controller"; }}
        dmesg | grep -iE 'nvme'
        [ $rc = 0 ] || exit 1
        {io}
        nvme disconnect -n {sub} >/dev/null
    """, timeout=180)
    m = re.search(r"CONNECT rc=(\d+) t0=([\d.]+) t1=([\d.]+)", r.out)
    expect(m, f"host {i} connect to {addr}: no result:\n{r.out[-1500:]}")
    return int(m.group(1)), round((float(m.group(3)) - float(m.group(2))) * 1000), r.out


def said(out):
    """Linux's words about a refused connect: nvme-cli's and the kernel's lines naming the failure."""
    return [ln.strip() for ln in out.splitlines() if re.search(r"(?i)auth|fail|error|could not", ln)][:3]


def test_nvmet_auth_linux(s):
    lab = NvmetLab(name="tests-auth-linux", nvmet_json=linux_nvmet_json(), kernel="bpo")
    s.extra_rundirs.append(os.path.join(topo.TOP, "build", "lab", lab.name))
    try:
        app, linux = lab.start()
        r = linux.run("uname -r; nvme version", timeout=30)
        expect(re.match(r"6\.12\.", r.out), f"not the 6.12 (bpo) guest:\n{r.out}")
        kver = r.out.split()[0]
        # nvme-cli 2.3 makes the secrets both targets are configured with
        for i in range(len(CASES)):
            for cmd, want in linux_keys(i)[2]:
                r = linux.run(cmd, timeout=30)
                expect(r.rc == 0 and r.out.strip() == want, f"{cmd}: {r.out!r}, configured {want!r}")
        linux_nvmet_ref(linux)
        targets = ((APP, 4420, NQN), ("127.0.0.1", REF_PORT, REF_NQN))
        rows = []
        for i, (h, g, hm, bidir) in enumerate(CASES):
            row = [f"{HASHES[h][5:-1]}/{GROUPS[g]}/m{hm}{'/bidi' if bidir else ''}"]
            for addr, port, sub in targets:
                rc, ms, out = linux_connect(linux, addr, port, sub, i)
                expect(rc == 0 and "RW-OK" in out, f"host {i} ({row[0]}) to {sub}:\n{out[-1500:]}")
                # Linux names what it negotiated: the target's pinned hash and group
                auth = rf"qid 0: authenticated with hash {re.escape(HASHES[h])} dhgroup {GROUPS[g]}"
                expect(re.search(auth, out), f"host {i} to {sub}: no '{auth}':\n{out[-1500:]}")
                row.append(ms)
            rows.append(row)
        wait_ctrls(app, 0)
        # wrong secrets on both targets: a wrong host key, and a wrong controller key (bidirectional host 1)
        wrong = cli_secret(raw_key("not the key", 1), 1, host_nqn(0))
        wrong_ctrl = cli_secret(raw_key("not the ctrl key", 2), 2, NQN)
        says = {}
        for addr, port, sub in targets:
            if sub == REF_NQN:
                # Linux nvmet drops the controller on a failed transaction ("fatal error") instead of
                # answering the host's next AUTH command, which then waits for its admin timeout
                # (60 s by default): 10 s here, for these two refusals only
                linux.run(f"echo {LINUX_REFUSAL_TIMEOUT} > /sys/module/nvme_core/parameters/admin_timeout", check=True)
            rc, _, out = linux_connect(linux, addr, port, sub, 0, key=wrong, rw=False)
            expect(rc != 0, f"a wrong host key connected to {sub}:\n{out}")
            says[sub] = said(out)
            rc, _, out = linux_connect(linux, addr, port, sub, 1, ckey=wrong_ctrl, rw=False)
            expect(rc != 0, f"a wrong controller key connected to {sub}:\n{out}")
            says[sub + " (controller key)"] = said(out)
        state = wait_ctrls(app, 0, secs=40)
        expect(re.search(r"^0 controllers, ", state, re.M), f"controllers left:\n{state}")
        log = app.cmd("log show")
        for i in range(len(CASES)):
            n = len(re.findall(rf"host {re.escape(host_nqn(i))} authenticated", log))
            expect(n >= 2, f"host {i}: {n} queues authenticated in the appliance's log (admin + I/O expected)")
        expect(re.search(rf"host {re.escape(host_nqn(0))} not authenticated", log), "wrong key not logged:\n" + log[-1500:])
        with open(os.path.join(lab.lab.rundir, "auth-linux.txt"), "w") as f:
            f.write(f"kernel {kver}\ncase appliance_connect_ms linux_nvmet_connect_ms\n")
            f.write("".join(f"{r[0]} {r[1]} {r[2]}\n" for r in rows))
            f.write("".join(f"wrong key, {k}: {v}\n" for k, v in says.items()))
        table = "; ".join(f"{r[0]} {r[1]}/{r[2]} ms" for r in rows)
        return f"Linux {kver}, connect appliance/Linux nvmet: {table}; wrong key: {says[NQN][:2]}"
    finally:
        lab.close()


TESTS = [("nvmet_auth", test_nvmet_auth), ("nvmet_auth_linux", test_nvmet_auth_linux)]
