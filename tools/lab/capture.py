"""tools/lab/capture.py: read the lab's link captures with tshark (Debian's tshark 4.0).

tshark dissects NVMe/TCP on TCP 4420 and RoCE v2 on UDP 4791 (BTH opcodes), but does not check the
RoCE ICRC (PLATFORM.md): a check of that belongs with the appliance's RoCE tests.
"""
import collections
import subprocess

from labproc import LabError

EXPERT_ERROR = 8388608          # _ws.expert.severity value of "Error" (tshark -G values)


def tshark_fields(pcap, display_filter, fields, timeout=300):
    """Rows (lists of field strings) of the packets in pcap that match display_filter."""
    cmd = ["tshark", "-n", "-r", pcap, "-Y", display_filter, "-T", "fields", "-E", "separator=\t"]
    for f in fields:
        cmd += ["-e", f]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise LabError(f"tshark failed ({p.returncode}) on {pcap} with {display_filter!r}: "
                       f"{p.stderr.strip()[-500:]}")
    return [line.split("\t") for line in p.stdout.splitlines() if line]


def count(pcap, display_filter):
    """How many packets in pcap match display_filter."""
    return len(tshark_fields(pcap, display_filter, ["frame.number"]))


def histogram(pcap, display_filter, field):
    """Counter of field's values (each value of a multi-valued field counted) over matching packets."""
    c = collections.Counter()
    for row in tshark_fields(pcap, display_filter, [field]):
        for v in row[0].split(","):
            if v:
                c[v] += 1
    return c


def problems(pcap, display_filter="frame"):
    """Frame numbers and protocols of packets tshark finds malformed or flags with an expert Error."""
    rows = tshark_fields(pcap, f"({display_filter}) && (_ws.malformed || "
                               f"_ws.expert.severity == {EXPERT_ERROR})",
                         ["frame.number", "frame.protocols", "_ws.expert.message"])
    return rows
