"""harness.py - drive the appliance over its serial console in QEMU.

Appliance(name, config) builds a private ESP (the image plus \\p2pstore\\p2pstore.cfg),
boots it through tools/qemu-run (the one place that knows the QEMU command line) and
gives: wait_for(regex), cmd(line) -> output, exit_status(). Every byte of the serial
console goes to build/test-logs/<name>.log; a timeout raises AssertionError with the
tail of that log, so a failure always shows what the appliance printed.

ARCH (P2P_ARCH, exported by `make ARCH=...`, default x86_64) selects the image the tests
boot: build/ for x86_64, build/arm64/ for arm64. Tests that check architecture-specific
output (exception names, the clock's reference, the idle wake-up) branch on it.
"""
import os
import re
import shutil
import signal
import subprocess
import time

import json
import socket

import pexpect

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARCH = os.environ.get("P2P_ARCH", "x86_64")
BUILD = os.path.join(TOP, "build", "arm64") if ARCH == "arm64" else os.path.join(TOP, "build")
EFI_NAME = {"x86_64": "BOOTX64.EFI", "arm64": "BOOTAA64.EFI"}[ARCH]
ADDR2LINE = {"x86_64": "addr2line", "arm64": "aarch64-linux-gnu-addr2line"}[ARCH]
PROMPT = "p2pstore> "
ANSI = re.compile(r"\x1b\[[0-9;=?]*[A-Za-z]")


def strip_ansi(text):
    """Remove terminal escape sequences (OVMF clears the screen, the editor redraws)."""
    return ANSI.sub("", text).replace("\r", "")


class Appliance:
    """One appliance boot in QEMU, driven over the serial console."""

    def __init__(self, name, config="panic = exit\n", qemu_args=(), boot_timeout=None, netdev=None, files=None,
                 disk=None, run_args=()):
        """disk: boot this disk image (tools/qemu-run --disk) instead of the ESP directory built here;
        run_args: more tools/qemu-run options (e.g. --fault-drive CONF)."""
        self.name = name
        self.esp = os.path.join(BUILD, "test-esp", name)
        self.log_path = os.path.join(BUILD, "test-logs", name + ".log")
        shutil.rmtree(self.esp, ignore_errors=True)
        os.makedirs(os.path.join(self.esp, "EFI", "BOOT"))
        os.makedirs(os.path.join(self.esp, "p2pstore"))
        os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        shutil.copy(os.path.join(BUILD, "esp", "EFI", "BOOT", EFI_NAME),
                    os.path.join(self.esp, "EFI", "BOOT", EFI_NAME))
        if config is not None:
            with open(os.path.join(self.esp, "p2pstore", "p2pstore.cfg"), "w") as f:
                f.write(config)
        for fname, text in (files or {}).items():  # more files in \p2pstore\ (e.g. nvmet.json)
            with open(os.path.join(self.esp, "p2pstore", fname), "w") as f:
                f.write(text)
        self.log = open(self.log_path, "w")
        self.started = time.monotonic()
        args = (["--disk", disk] if disk else ["--esp", self.esp]) + ["--no-reboot"]
        args += ["--netdev", netdev] if netdev else []
        args += list(run_args)
        args += ["--"] + list(qemu_args) if qemu_args else []
        self.proc = pexpect.spawn(os.path.join(TOP, "tools", "qemu-run"), args, encoding="utf-8",
                                  codec_errors="replace", timeout=30, logfile=self.log,
                                  dimensions=(50, 200))
        self.boot_timeout = boot_timeout or float(os.environ.get("P2P_BOOT_TIMEOUT", "120"))
        self.transcript = ""

    def _fail(self, what):
        self.log.flush()
        with open(self.log_path, errors="replace") as f:
            tail = strip_ansi(f.read())[-4000:]
        raise AssertionError(f"{self.name}: {what}\n--- serial log tail ({self.log_path}) ---\n{tail}")

    def wait_for(self, pattern, timeout=30):
        """Wait for a regex on the console; returns the text before it and the match."""
        try:
            self.proc.expect(pattern, timeout=timeout)
        except pexpect.TIMEOUT:
            self._fail(f"timed out after {timeout}s waiting for {pattern!r}")
        except pexpect.EOF:
            self._fail(f"QEMU exited while waiting for {pattern!r}")
        return strip_ansi(self.proc.before), self.proc.match

    def boot(self):
        """Wait for the first prompt; returns the boot text."""
        before, _ = self.wait_for(re.escape(PROMPT), timeout=self.boot_timeout)
        self.boot_text = before
        self.boot_seconds = time.monotonic() - self.started
        return before

    def send(self, data):
        """Type raw bytes (escape sequences, control keys) on the console."""
        self.proc.send(data)

    def cmd(self, line, timeout=20):
        """Type a command line, wait for the next prompt, return what it printed."""
        self.proc.send(line + "\r")
        before, _ = self.wait_for(re.escape(PROMPT), timeout=timeout)
        out = strip_ansi(before)
        # drop the echo of the typed line
        first, _, rest = out.partition("\n")
        self.transcript += PROMPT + line + "\n" + rest
        return rest

    def exit_status(self, timeout=60):
        """Wait for QEMU to exit; returns its exit status."""
        try:
            self.proc.expect(pexpect.EOF, timeout=timeout)
        except pexpect.TIMEOUT:
            self._fail(f"QEMU did not exit within {timeout}s")
        self.proc.close()
        return self.proc.exitstatus if self.proc.exitstatus is not None else -self.proc.signalstatus

    def qemu_pid(self):
        """PID of the QEMU process (the child of tools/qemu-run)."""
        with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
            for pid in f.read().split():
                with open(f"/proc/{pid}/comm") as c:
                    if c.read().startswith("qemu-system"):
                        return int(pid)
        raise AssertionError("no QEMU process under tools/qemu-run")

    def qemu_cpu_seconds(self):
        """User + system CPU time consumed by the QEMU process so far."""
        with open(f"/proc/{self.qemu_pid()}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self):
        """Stop QEMU (the whole process group qemu-run started) and close the log."""
        if self.proc.isalive():
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + 10
            while self.proc.isalive() and time.monotonic() < deadline:
                time.sleep(0.1)
            if self.proc.isalive():
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.close(force=True)
        self.log.close()


class Qmp:
    """A minimal QMP client on a unix socket (QEMU's -qmp unix:PATH,server=on,wait=off)."""

    def __init__(self, path, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.file = self.sock.makefile("rw")
        self.events = []
        json.loads(self.file.readline())  # greeting
        self.execute("qmp_capabilities")

    def execute(self, command, **args):
        msg = {"execute": command}
        if args:
            msg["arguments"] = args
        self.file.write(json.dumps(msg) + "\n")
        self.file.flush()
        while True:
            reply = json.loads(self.file.readline())
            if "return" in reply:
                return reply["return"]
            if "error" in reply:
                raise RuntimeError(reply["error"])
            self.events.append(reply)  # asynchronous events, in order

    def hmp(self, line):
        return self.execute("human-monitor-command", **{"command-line": line})

    def wait_event(self, name, timeout=30):
        """The next asynchronous event called name (already received ones first)."""
        deadline = time.monotonic() + timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("event") == name:
                    return self.events.pop(i)
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"QMP event {name} not seen in {timeout}s: {self.events[-5:]}")
            self.sock.settimeout(left)
            try:
                line = self.file.readline()
            finally:
                self.sock.settimeout(None)
            if line:
                self.events.append(json.loads(line))

    def close(self):
        self.sock.close()


def symbolize(offsets, chain=False):
    """Map image offsets (ints) to function names with addr2line on build/p2pstore.so: the innermost
    function of the debug information (where the image's link-time optimizer inlined a function, the
    one it was written in). chain=True: each offset's inline chain instead, a list from the innermost
    function to the one whose frame it is."""
    out = subprocess.run([ADDR2LINE, "-a", "-f", "-i", "-e", os.path.join(BUILD, "p2pstore.so")]
                         + [hex(o) for o in offsets], capture_output=True, text=True, check=True).stdout
    chains = []
    for line in out.splitlines():
        if line.startswith("0x"):
            chains.append([])
            pair = 0
        elif pair % 2 == 0:
            chains[-1].append(line)
            pair += 1
        else:
            pair += 1
    return chains if chain else [c[0] for c in chains]
