"""tools/lab/labproc.py: process groups and host knobs for the lab runner (tools/lab/lab.py).

Every process the lab starts is a session leader (its own process group) and carries the environment
tag LAB_RUN=<run directory>, so teardown kills exactly those groups, and a later run in the same run
directory can find and end the leftovers of a run that was killed before it could clean up. Nothing is
ever killed by name.
"""
import atexit
import fcntl
import os
import signal
import subprocess
import threading
import time


class LabError(Exception):
    """Something in the lab failed; the message says what and where."""


def _on_sigterm(signum, frame):
    # Turn SIGTERM into an exception so `with Lab()` blocks and atexit handlers tear down.
    raise SystemExit(128 + signum)


class ProcGroup:
    """The process groups started for one run directory."""

    def __init__(self, rundir):
        self.rundir = rundir
        self.pidfile = os.path.join(rundir, "pids")
        # One lab per run directory at a time: the lock is held for this object's lifetime.
        self._lock = open(os.path.join(rundir, ".lock"), "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LabError(f"another lab is running in {rundir} (use another name or LAB_RUNDIR)")
        self.procs = {}          # name -> (pid, Popen or None)
        atexit.register(self.kill_all)
        # (signal handlers can only be set from the main thread; run-tests' second lane creates its
        # labs in another thread, after the main thread's first lab set the handler)
        if (threading.current_thread() is threading.main_thread()
                and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
            signal.signal(signal.SIGTERM, _on_sigterm)

    def _tagged(self, pid):
        """True when pid is alive and was started by a lab with this run directory."""
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                return f"LAB_RUN={self.rundir}".encode() in f.read().split(b"\0")
        except OSError:
            return False

    def reap_stale(self):
        """End process groups left by an earlier run in this run directory (checked by tag)."""
        try:
            with open(self.pidfile) as f:
                pids = [int(line.split()[0]) for line in f if line.strip()]
        except FileNotFoundError:
            return
        for pid in pids:
            if self._tagged(pid):
                self._kill_group(pid)
        os.unlink(self.pidfile)

    def spawn(self, name, args):
        """Start args in a new session, output to RUNDIR/NAME.qemu.log; return the Popen."""
        log = open(os.path.join(self.rundir, f"{name}.qemu.log"), "wb")
        env = dict(os.environ, LAB_RUN=self.rundir)
        p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True, env=env)
        log.close()
        self._record(name, p.pid, p)
        return p

    def adopt(self, name, pid):
        """Record a session leader started elsewhere (e.g. by pexpect.spawn) for teardown."""
        self._record(name, pid, None)

    def _record(self, name, pid, popen):
        self.procs[name] = (pid, popen)
        with open(self.pidfile, "a") as f:
            f.write(f"{pid} {name}\n")

    def tail(self, name, n=600):
        """The last n characters of a spawned process's output log."""
        try:
            with open(os.path.join(self.rundir, f"{name}.qemu.log"), errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""

    @staticmethod
    def _kill_group(pgid, grace=5.0):
        """SIGTERM the group, wait up to grace seconds, then SIGKILL it."""
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            try:
                os.waitpid(pgid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.05)
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def kill_all(self):
        """End every process group this object started; safe to call more than once."""
        for name, (pid, popen) in list(self.procs.items()):
            self._kill_group(pid)
            if popen is not None:
                try:
                    popen.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            del self.procs[name]
        try:
            os.unlink(self.pidfile)
        except FileNotFoundError:
            pass


def tagged_processes(rundir):
    """Pids of live processes carrying LAB_RUN=rundir (started by a lab in that run directory)."""
    tag = f"LAB_RUN={rundir}".encode()
    pids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    if tag in f.read().split(b"\0"):
                        pids.append(int(d))
            except OSError:
                pass
    return pids


def udp_rcvbuf_errors():
    """The host's UDP RcvbufErrors counter (dgram links drop frames when it grows)."""
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Udp:")]
    return int(rows[1][rows[0].index("RcvbufErrors")])


_rmem = {"users": 0, "old": None}
_rmem_lock = threading.Lock()  # labs of run-tests' two lanes start and end in two threads


def raise_rmem_default(size):
    """Raise net.core.rmem_default (and rmem_max) to at least size while the QEMUs open their UDP
    sockets; return a function that drops this claim, or None when not permitted. The old values
    come back when the last claim in this process is dropped (labs may overlap, also in two threads)."""
    paths = ["/proc/sys/net/core/rmem_max", "/proc/sys/net/core/rmem_default"]
    with _rmem_lock:
        if _rmem["users"] == 0:
            try:
                old = [int(open(p).read()) for p in paths]
                for p, v in zip(paths, old):
                    if v < size:
                        with open(p, "w") as f:
                            f.write(str(size))
            except OSError:
                return None
            _rmem["old"] = old
        _rmem["users"] += 1
    released = []

    def restore():
        with _rmem_lock:
            if released:
                return
            released.append(True)
            _rmem["users"] -= 1
            if _rmem["users"] > 0:
                return
            for p, v in zip(reversed(paths), reversed(_rmem["old"])):
                try:
                    with open(p, "w") as f:
                        f.write(str(v))
                except OSError:
                    pass
    return restore
