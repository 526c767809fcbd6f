"""tools/lab/lab.py: the Linux peer lab runner (a library for Debian's /usr/bin/python3 + python3-pexpect).

A Lab starts QEMU guests (Linux peers from tools/lab/build-image, and the appliance through
tools/qemu-run) joined by point-to-point Ethernet links, runs commands in the Linux guests with their
output and exit codes, captures each link to a pcap for tshark, and tears everything down: it kills only
the process groups it started (each QEMU runs in its own session).

    with Lab("demo") as lab:
        link = lab.link("net0")
        a = lab.guest("a", ip="10.10.0.1/24", links=[link])
        b = lab.guest("b", ip="10.10.0.2/24", links=[link])
        lab.start()
        print(b.run("ping -c1 10.10.0.1").out)

Links are `-netdev dgram` pairs on loopback UDP ports (the fast choice, docs/platform.md); the guests'
addresses live only on that emulated link. Commands travel on the guest's second serial port (ttyS1),
base64-encoded, and end with a marker line carrying the exit code; the kernel console (ttyS0) goes to a
log file in the run directory.
"""
import base64
import os
import re
import secrets
import socket
import subprocess
import threading
import time

import pexpect
import pexpect.fdpexpect

from labproc import ProcGroup, LabError, udp_rcvbuf_errors, raise_rmem_default

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
QEMU = "qemu-system-x86_64"
BOOT_TIMEOUT = float(os.environ.get("LAB_BOOT_TIMEOUT", "120"))


class CommandTimeout(LabError):
    """A guest command ran past its timeout (it was interrupted with ^C)."""


class Result:
    """What a guest command did: exit code `rc` and combined stdout+stderr `out`."""

    def __init__(self, cmd, rc, out, secs):
        self.cmd, self.rc, self.out, self.secs = cmd, rc, out, secs

    def __repr__(self):
        return f"Result(rc={self.rc}, {self.secs:.1f}s, out={self.out[-300:]!r})"


def _summary(cmd, n=100):
    """The first non-blank line of a command, shortened, for error messages."""
    line = next((ln.strip() for ln in cmd.splitlines() if ln.strip()), "")
    return line if len(line) <= n else line[:n] + "..."


_ports_given = set()            # every port free_udp_port handed out in this process
_ports_lock = threading.Lock()


def free_udp_port():
    """A currently free loopback UDP port (the kernel picks it), never one this process handed out
    before: two labs declared at once (run-tests' two lanes) could otherwise both get a port that
    the kernel saw free again between the first one's pick and its QEMU's bind."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with _ports_lock:
            if port not in _ports_given:
                _ports_given.add(port)
                return port


def build_image(kernel=None):
    """Build or reuse the cached guest image; return its directory (vmlinuz, initrd.img).
    kernel: None for the default (Debian 12's kernel), "bpo" for bookworm-backports' (build-image-bpo)."""
    script = {None: "build-image", "bpo": "build-image-bpo"}[kernel]
    out = subprocess.run([os.path.join(HERE, script)], stdout=subprocess.PIPE, text=True,
                         timeout=1800)
    if out.returncode != 0:
        raise LabError(f"tools/lab/{script} failed (see its messages above)")
    return out.stdout.strip().splitlines()[-1]


class Link:
    """A point-to-point Ethernet link: two dgram endpoints on loopback UDP ports, optionally captured."""

    def __init__(self, lab, name, capture):
        self.lab, self.name = lab, name
        self.ports = (free_udp_port(), free_udp_port())
        self.pcap = os.path.join(lab.rundir, f"{name}.pcap") if capture else None
        self.ends_used = 0
        self.captured = False

    def netdev(self, end, nid):
        """The -netdev dgram spec for one end (0 or 1) of the link, with netdev id nid (None: no id,
        for tools/qemu-run, which adds its own)."""
        local, remote = self.ports[end], self.ports[1 - end]
        ident = f"id={nid}," if nid else ""
        return (f"dgram,{ident}local.type=inet,local.host=127.0.0.1,local.port={local},"
                f"remote.type=inet,remote.host=127.0.0.1,remote.port={remote}")

    def take_end(self):
        """Claim the next free end of the link (each link joins exactly two NICs)."""
        if self.ends_used >= 2:
            raise LabError(f"link {self.name} already joins two NICs")
        self.ends_used += 1
        return self.ends_used - 1

    def capture_args(self, nid):
        """Extra QEMU args that dump this link's traffic (both directions) from netdev nid, once."""
        if not self.pcap or self.captured:
            return []
        self.captured = True
        return ["-object", f"filter-dump,id=dump-{self.name},netdev={nid},file={self.pcap}"]


class Guest:
    """A Linux peer guest: Debian kernel + lab initramfs, a NIC per link, optional emulated NVMe drive."""

    def __init__(self, lab, name, ip, links, mem_mb=1024, nvme_mb=0, nvme_cmb_mb=0, user_net=False):
        self.lab, self.name, self.ip = lab, name, ip
        self.user_net = user_net         # a NIC on QEMU's user network after the links: the host is 10.0.2.2
        self.addr = ip.split("/")[0] if ip else None
        self.links, self.mem_mb, self.nvme_mb = links, mem_mb, nvme_mb
        self.nvme_cmb_mb = nvme_cmb_mb   # a CMB on the drive, as the appliance's drives have
        self.console = os.path.join(lab.rundir, f"{name}.console.log")
        self.sock = os.path.join(lab.rundir, f"{name}.cmd.sock")
        self.proc = None
        self.chan = None
        self._sockobj = None

    def qemu_args(self, image):
        """The QEMU command line for this guest (smp 1,maxcpus=2: the shadow-doorbell hang trap)."""
        args = [QEMU, "-machine", "q35", "-accel", "tcg", "-smp", "1,maxcpus=2",
                "-m", str(self.mem_mb), "-nodefaults", "-display", "none", "-no-reboot",
                # named threads ("CPU 0/TCG"): host tools and benchmarks can tell the vCPU apart
                "-name", f"{self.name},debug-threads=on",
                "-monitor", "none",
                "-kernel", os.path.join(image, "vmlinuz"),
                "-initrd", os.path.join(image, "initrd.img"),
                "-append", f"console=ttyS0 quiet panic=-1 lab.name={self.name} "
                           f"lab.ip={self.ip or ''} lab.cmd=ttyS1",
                "-chardev", f"file,id=con,path={self.console}", "-serial", "chardev:con",
                "-chardev", f"socket,id=cmd,path={self.sock},server=on,wait=off",
                "-serial", "chardev:cmd"]
        for i, link in enumerate(self.links):
            nid = f"net{i}"
            args += ["-netdev", link.netdev(link.take_end(), nid),
                     "-device", f"e1000e,netdev={nid},mac={self.lab.mac()},romfile="]
            args += link.capture_args(nid)
        if self.user_net:
            args += ["-netdev", "user,id=netu,net=10.0.2.0/24",
                     "-device", f"e1000e,netdev=netu,mac={self.lab.mac()},romfile="]
        if self.nvme_mb:
            img = os.path.join(self.lab.rundir, f"{self.name}.nvme.img")
            with open(img, "wb") as f:
                f.truncate(self.nvme_mb << 20)
            cmb = f",cmb_size_mb={self.nvme_cmb_mb}" if self.nvme_cmb_mb else ""
            args += ["-drive", f"file={img},if=none,id=nvm0,format=raw",
                     "-device", f"nvme,drive=nvm0,serial=lab{self.name}{cmb}"]
        return args

    def start(self, image):
        """Start QEMU in its own process group (does not wait for the boot)."""
        self.t_start = time.monotonic()
        self.proc = self.lab.procs.spawn(self.name, self.qemu_args(image))

    def wait_ready(self, timeout=BOOT_TIMEOUT):
        """Wait for /init's ready line on the console, then open the command port."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise LabError(f"{self.name}: QEMU exited ({self.proc.returncode}) during boot: "
                               f"{self.lab.procs.tail(self.name)} console: {text[-500:]}")
            try:
                with open(self.console, errors="replace") as f:
                    text = f.read()
            except FileNotFoundError:
                pass
            m = re.search(r"lab-init: ready .*carrier=(\d) modules_failed=\[(.*)\]", text)
            if m:
                self.boot_secs = time.monotonic() - self.t_start
                self.carrier = m.group(1) == "1"
                self.modules_failed = m.group(2).split()
                self._open_channel(deadline)
                return self
            time.sleep(0.2)
        raise LabError(f"{self.name}: not ready after {timeout:.0f} s; console: {text[-800:]}")

    def _open_channel(self, deadline):
        """Connect to the command port and put its shell in a quiet, marker-friendly state."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(self.sock)
        self._sockobj = s
        self.chan = pexpect.fdpexpect.fdspawn(s.fileno(), encoding="utf-8", codec_errors="replace",
                                              timeout=30)
        self.chan.logfile_read = open(os.path.join(self.lab.rundir, f"{self.name}.cmd.log"), "a")
        self._sync(max(5.0, deadline - time.monotonic()))

    def _sync(self, timeout):
        """Make the shell quiet (no echo, no prompt, no line editing) and wait until it answers."""
        # Bytes that reach the port before the shell has opened it can be lost: resend until answered.
        tok = secrets.token_hex(4)
        deadline = time.monotonic() + timeout
        while True:
            self.chan.send("\x03")
            self.chan.send(f"\nset +o emacs +o vi; stty -echo; PS1= PS2=; echo SYNC_$((40+2))_{tok}\n")
            try:
                self.chan.expect(f"SYNC_42_{tok}\r?\n", timeout=2)
                return
            except pexpect.TIMEOUT:
                if time.monotonic() > deadline:
                    raise LabError(f"{self.name}: the command port does not answer "
                                   f"(see {self.chan.logfile_read.name})")

    def run(self, cmd, timeout=60, check=False):
        """Run a bash script in the guest; return Result(rc, out). Raises CommandTimeout after
        interrupting it when it runs longer than timeout, LabError when check and rc != 0."""
        if self.chan is None:
            raise LabError(f"{self.name}: not started")
        tok = secrets.token_hex(6)
        path = f"/tmp/.lab.{tok}"
        # The trap turns ^C (sent on a timeout) into a normal exit 130: an interactive bash drops the
        # rest of its command line, our end marker included, when a foreground job dies of SIGINT.
        b64 = base64.b64encode(("trap 'exit 130' INT\n" + cmd).encode()).decode()
        lines = [b64[i:i + 76] for i in range(0, len(b64), 76)] or [""]
        t0 = time.monotonic()
        self.chan.send(f"base64 -d >{path} <<'__LAB_EOF__'\n" + "\n".join(lines) + "\n__LAB_EOF__\n"
                       f"bash {path} </dev/null 2>&1; echo \"__LAB_END_{tok} rc=$?\"; rm -f {path}\n")
        end = re.compile(rf"__LAB_END_{tok} rc=(\d+)\r?\n")
        try:
            self.chan.expect(end, timeout=timeout)
        except pexpect.TIMEOUT:
            partial = self.chan.before
            self.chan.send("\x03")
            try:
                self.chan.expect(end, timeout=10)
            except pexpect.TIMEOUT:
                self._sync(15)
            raise CommandTimeout(f"{self.name}: timed out after {timeout} s: {_summary(cmd)!r}; "
                                 f"output so far: {partial[-1500:]!r}")
        except pexpect.EOF:
            raise LabError(f"{self.name}: command port closed (did QEMU exit?) running {_summary(cmd)!r}")
        out = self.chan.before.replace("\r\n", "\n").replace("\r", "")
        # The guest's shell may echo what was typed (its line editor awake again under load: seen
        # once in CI, 2026-11-29, the heredoc and command line ahead of the output); the command
        # line ends with this unique path, so whatever precedes it is echo, not output.
        typed = f"; rm -f {path}\n"
        if typed in out:
            out = out[out.rindex(typed) + len(typed):]
        res = Result(cmd, int(self.chan.match.group(1)), out, time.monotonic() - t0)
        if check and res.rc != 0:
            raise LabError(f"{self.name}: exit {res.rc} from {_summary(cmd)!r}; output: {out[-1500:]!r}")
        return res

    def interact(self):
        """Hand the command port to the person at this terminal (escape with ^])."""
        cols, rows = os.get_terminal_size() if os.isatty(1) else (80, 24)
        self.chan.send(f"stty echo rows {rows} cols {cols}; PS1='\\h# '; set -o emacs\n")
        print(f"--- {self.name}: interactive shell (leave with ^]) ---", flush=True)
        self.chan.logfile_read = None
        self._interact_fd(self._sockobj.fileno())

    @staticmethod
    def _interact_fd(fd):
        """Copy bytes between this tty (raw mode) and fd until ^] or EOF."""
        import select
        import termios
        import tty
        stdin = 0
        old = termios.tcgetattr(stdin) if os.isatty(stdin) else None
        try:
            if old:
                tty.setraw(stdin)
            while True:
                r, _, _ = select.select([stdin, fd], [], [])
                if fd in r:
                    data = os.read(fd, 4096)
                    if not data:
                        return
                    os.write(1, data)
                if stdin in r:
                    data = os.read(stdin, 1024)
                    if not data or b"\x1d" in data:
                        return
                    os.write(fd, data)
        finally:
            if old:
                termios.tcsetattr(stdin, termios.TCSADRAIN, old)

    def close(self):
        """Close the command port (the process group is ended by the Lab)."""
        if self._sockobj:
            self._sockobj.close()
            self._sockobj = None


class Appliance:
    """The appliance under QEMU, started through tools/qemu-run (the one place its QEMU command line
    lives) with its NIC on a lab link. Its serial console is readable with expect().

    qemu-run's contract: `--netdev SPEC` becomes `-netdev SPEC,id=net0` plus an e1000e on net0, and
    the arguments after `--` are appended to QEMU's command line."""

    NETDEV_ID = "net0"

    def __init__(self, lab, name, esp, link, extra, run_args=()):
        self.lab, self.name, self.esp, self.link, self.extra = lab, name, esp, link, list(extra)
        self.run_args = list(run_args)  # tools/qemu-run options (e.g. --disks DIR)
        self.log = os.path.join(lab.rundir, f"{name}.serial.log")
        self.end = link.take_end()
        self.child = None

    def command(self):
        """The tools/qemu-run command that starts the appliance with its NIC on the link."""
        qemu_run = os.path.join(TOP, "tools", "qemu-run")
        if not os.access(qemu_run, os.X_OK):
            raise LabError(f"{qemu_run} is missing: the appliance's QEMU command line lives there")
        extra = self.link.capture_args(self.NETDEV_ID) + self.extra
        cmd = [qemu_run, "--esp", self.esp, "--netdev", self.link.netdev(self.end, None)] + self.run_args
        return cmd + (["--"] + extra if extra else [])

    def start(self):
        """Spawn tools/qemu-run under a pty (its own session and process group) and drain its
        console into the log continuously, so the appliance never blocks on a full pty."""
        cmd = self.command()
        self.child = pexpect.spawn(cmd[0], cmd[1:], cwd=TOP, env=dict(os.environ, LAB_RUN=self.lab.rundir))
        self.lab.procs.adopt(self.name, self.child.pid)
        self._buf, self._pos, self._cond = "", 0, threading.Condition()
        self._eof = False  # a second start() after the first QEMU exited (power-off, reboot)
        threading.Thread(target=self._drain, name=f"{self.name}-console", daemon=True).start()
        return self

    def _drain(self):
        """Copy the console into self._buf and the log file until the pty closes."""
        with open(self.log, "a", errors="replace") as log:
            while True:
                try:
                    data = os.read(self.child.child_fd, 4096)
                except OSError:
                    data = b""
                text = data.decode("utf-8", "replace")
                log.write(text)
                log.flush()
                with self._cond:
                    self._buf += text
                    self._eof = not data
                    self._cond.notify_all()
                if not data:
                    return

    def expect(self, pattern, timeout=60):
        """Wait for regex pattern in the console output after the previous match; return the match."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                m = rx.search(self._buf, self._pos)
                if m:
                    self._pos = m.end()
                    return m
                left = deadline - time.monotonic()
                if left <= 0 or getattr(self, "_eof", False):
                    raise LabError(f"{self.name}: {pattern!r} not seen on the console "
                                   f"({'it closed' if left > 0 else f'{timeout} s'}); "
                                   f"last output: {self._buf[-800:]!r}")
                self._cond.wait(min(left, 1.0))

    def send(self, text):
        """Type text on the appliance's serial console."""
        os.write(self.child.child_fd, text.encode())


class Lab:
    """A set of guests and links with one run directory; a context manager that always tears down."""

    def __init__(self, name="lab", rundir=None, capture=True, kernel=None):
        self.name, self.capture = name, capture
        self.kernel = kernel             # the guests' kernel flavour (build_image)
        self.rundir = rundir or os.environ.get("LAB_RUNDIR") or os.path.join(TOP, "build", "lab", name)
        os.makedirs(self.rundir, exist_ok=True)
        self.procs = ProcGroup(self.rundir)
        self.procs.reap_stale()
        for f in os.listdir(self.rundir):
            if f.endswith((".pcap", ".log", ".img", ".sock")):
                os.unlink(os.path.join(self.rundir, f))
        self.links, self.guests, self.appliances = [], [], []
        self._mac = 0
        self._rmem_restore = None
        self.rcvbuf_errors_at_start = udp_rcvbuf_errors()

    def mac(self):
        """A fresh locally administered MAC address for the next NIC."""
        self._mac += 1
        return f"52:54:00:1a:b0:{self._mac:02x}"

    def link(self, name, capture=None):
        """A new point-to-point link; captured to RUNDIR/NAME.pcap unless capture is False."""
        link = Link(self, name, self.capture if capture is None else capture)
        self.links.append(link)
        return link

    def guest(self, name, ip=None, links=(), **kw):
        """Declare a Linux peer guest (mem_mb=, nvme_mb= for an emulated NVMe drive, nvme_cmb_mb= to
        give that drive a controller memory buffer)."""
        g = Guest(self, name, ip, list(links), **kw)
        self.guests.append(g)
        return g

    def appliance(self, esp, link, name="appliance", extra=(), run_args=()):
        """Declare the appliance booted from ESP directory esp, its NIC on link; start() starts it
        (after the Linux guests, so a link's capture stays on the Linux side when it has one).
        run_args go to tools/qemu-run (--disks DIR keeps the drives across a power-off and a
        second start())."""
        a = Appliance(self, name, esp, link, extra, run_args)
        self.appliances.append(a)
        return a

    def _raise_rmem(self):
        if self._rmem_restore is None:
            self._rmem_restore = raise_rmem_default(4 << 20) or False

    def start(self, timeout=BOOT_TIMEOUT):
        """Boot every declared guest in parallel and wait until all are ready."""
        image = build_image(self.kernel)
        self._raise_rmem()
        for g in self.guests:
            g.start(image)
        for a in self.appliances:
            a.start()
        for g in self.guests:
            g.wait_ready(timeout)
        return self

    def rcvbuf_errors(self):
        """UDP receive-buffer drops on the host since this lab started (frames the links lost)."""
        return udp_rcvbuf_errors() - self.rcvbuf_errors_at_start

    def close(self):
        """Tear down: close ports, end every process group this lab started, restore sysctls."""
        for g in self.guests:
            g.close()
        self.procs.kill_all()
        if self._rmem_restore:
            self._rmem_restore()
            self._rmem_restore = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
