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
"""
import base64
import hashlib
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
from nvmet_tests import APP, HOST_OK, NQN, NQN1, NvmetLab, connect, disconnect, wait_ctrls

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


TESTS = [("nvmet_auth", test_nvmet_auth)]
