"""tools/lab/capture.py: read the lab's link captures with tshark (Debian's tshark 4.0).

tshark dissects NVMe/TCP on TCP 4420 and RoCE v2 on UDP 4791 (BTH opcodes), but does not check the
RoCE ICRC (docs/platform.md): a check of that belongs with the appliance's RoCE tests.
"""
import collections
import os
import struct
import subprocess

from labproc import LabError

EXPERT_ERROR = 8388608          # _ws.expert.severity value of "Error" (tshark -G values)

# tshark's RPC-over-RDMA dissector guesses its header in the payload of any RoCE SEND and RDMA
# WRITE (perftest's and rping's buffers included) and calls the guess malformed; nothing in the
# lab speaks NFS over RDMA, so the guess is off wherever the lab looks for malformed frames.
NO_GUESSES = ["--disable-protocol", "rpcordma"]


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


def _problem_rows(pcap, display_filter, extra=()):
    cmd_filter = f"({display_filter}) && (_ws.malformed || _ws.expert.severity == {EXPERT_ERROR})"
    cmd = ["tshark", "-n", "-r", pcap, *NO_GUESSES, *extra, "-Y", cmd_filter, "-T", "fields", "-E", "separator=\t",
           "-e", "frame.number", "-e", "frame.protocols", "-e", "_ws.expert.message"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise LabError(f"tshark failed ({p.returncode}) on {pcap}: {p.stderr.strip()[-500:]}")
    return [line.split("\t") for line in p.stdout.splitlines() if line]


def problems(pcap, display_filter="frame"):
    """(bad, tolerated): rows [frame number, protocols, expert message] of packets tshark finds
    malformed or flags with an expert Error.

    Tolerated: tshark 4.0's NVMe-over-RDMA payload dissector nests each entry of the Commands
    Supported and Effects log page one tree level deeper when the page arrives in RDMA WRITE
    Middle/Last segments, overflows its tree depth and calls the frame malformed. Such a frame (its
    deepest protocol is nvme-rdma) still counts as bad unless it dissects cleanly with nvme-rdma
    disabled, i.e. its Ethernet/IP/UDP/BTH/RETH headers are sound."""
    rows = _problem_rows(pcap, display_filter)
    suspects = [r[0] for r in rows if r[1].endswith(":nvme-rdma")]
    tolerated = []
    if suspects:
        again = _problem_rows(pcap, " || ".join(f"frame.number == {n}" for n in suspects[:200]),
                              ["--disable-protocol", "nvme-rdma"])
        still = {r[0] for r in again} | set(suspects[200:])
        tolerated = [r for r in rows if r[0] in suspects and r[0] not in still]
    bad = [r for r in rows if r not in tolerated]
    return bad, tolerated


def _ip_id_before(a, b):
    """IPv4 ID a was given before b (16-bit serial order)."""
    return 0 < (b - a) % 65536 < 32768


# RC request opcodes (IBTA table 38): SEND, RDMA WRITE, READ request, the atomics, SEND with Invalidate.
RC_REQUESTS = set(range(0, 13)) | {19, 20, 22, 23}


def roce_sequence(pcap, src, since=None, until=None):
    """What the RoCE v2 frames that src sent (between host times since and until, seconds since
    the epoch; None: all) show of loss and reordering on the way to the capture. Linux rxe numbers
    its IPv4 datagrams in send order (the ID only grows, by random steps after an idle spell), so a
    frame is out of order when a frame sent before it (a lower ID) follows it. In src's request
    packets (RC SEND, RDMA WRITE, atomics: one PSN each, in order per QP) a PSN more than one above the
    highest so far opens holes; each hole is filled either by the late original (an ID below the
    frame that jumped it: reordered) or by a retransmission (above it: the original was lost), or
    never. A READ request takes a PSN per response, so the jump after one opens no hole. (READ
    responses take the PSNs of the other side's READ requests, with its other packets' PSNs between
    them, so they are counted in frames and overtaking only.) A dict:
    frames (all RC packets), overtaking (frames that arrived before one sent earlier), requests,
    holes, filled_late, filled_by_resend, unfilled, resent (request PSNs seen again)."""
    flt = f"udp.port == 4791 && ip.src == {src} && infiniband.bth.opcode <= 23"
    if since is not None:
        flt += f" && frame.time_epoch >= {since:.6f}"
    if until is not None:
        flt += f" && frame.time_epoch <= {until:.6f}"
    rows = tshark_fields(pcap, flt, ["ip.id", "infiniband.bth.destqp", "infiniband.bth.opcode", "infiniband.bth.psn"])
    res = {"frames": len(rows), "overtaking": 0, "requests": 0, "holes": 0, "filled_late": 0, "filled_by_resend": 0,
           "unfilled": 0, "resent": 0}
    ids = [int(r[0], 16) for r in rows]
    low = None
    for i in reversed(ids):  # a frame overtook another when an ID below its own comes after it
        if low is not None and _ip_id_before(low, i):
            res["overtaking"] += 1
        else:
            low = i
    streams = {}
    for ipid, (_, qp, op, psn) in zip(ids, rows):
        if int(op) not in RC_REQUESTS:
            continue
        res["requests"] += 1
        key, psn = qp, int(psn)
        s = streams.get(key)
        if s is None or not -65536 < (psn - s["hi"] + 0x800000) % 0x1000000 - 0x800000 < 65536:
            if s is not None:
                res["unfilled"] += len(s["holes"])
            streams[key] = {"hi": psn, "holes": {}, "read": int(op) == 12}  # a new connection on this QP
            continue
        d = (psn - s["hi"] + 0x800000) % 0x1000000 - 0x800000
        if d > 0:
            if not s["read"]:
                for k in range(1, d):
                    s["holes"][(s["hi"] + k) % 0x1000000] = ipid
                res["holes"] += d - 1
            s["hi"], s["read"] = psn, int(op) == 12
        elif psn in s["holes"]:
            jumper = s["holes"].pop(psn)
            res["filled_late" if _ip_id_before(ipid, jumper) else "filled_by_resend"] += 1
        else:
            res["resent"] += 1
    res["unfilled"] += sum(len(s["holes"]) for s in streams.values())
    return res


def _ipv4(proto, payload):
    """An IPv4 header (10.10.0.2 -> 10.10.0.1, DF, checksum filled in) followed by payload."""
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, 0x4000, 64, proto, 0,
                    bytes([10, 10, 0, 2]), bytes([10, 10, 0, 1]))
    s = sum(struct.unpack("!10H", h))
    s = (s >> 16) + (s & 0xFFFF)
    s = ~(s + (s >> 16)) & 0xFFFF
    return h[:10] + struct.pack("!H", s) + h[12:] + payload


def write_broken_pcap(path):
    """Write a pcap of two broken frames the malformation check must flag: a RoCE v2 datagram too
    short for its BTH, and an NVMe/TCP CapsuleCmd whose PDU header is cut short (plen 8 < hlen 72)."""
    eth = bytes.fromhex("5254001ab001" "5254001ab002" "0800")
    roce = _ipv4(17, struct.pack("!HHHH", 50000, 4791, 10, 0) + b"\x04\x00")
    nvme = _ipv4(6, struct.pack("!HHIIBBHHH", 50001, 4420, 1, 1, 5 << 4, 0x18, 65535, 0, 0)
                 + struct.pack("<BBBBI", 4, 0, 72, 0, 8))
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, frame in enumerate((eth + roce, eth + nvme)):
            f.write(struct.pack("<IIII", i, 0, len(frame), len(frame)) + frame)


def self_check(tmpdir):
    """Prove the malformation check can fail: it must flag both frames of write_broken_pcap."""
    path = os.path.join(tmpdir, "broken.pcap")
    write_broken_pcap(path)
    bad, _ = problems(path)
    protos = sorted(r[1].rsplit(":", 1)[-1] for r in bad)
    if protos != ["infiniband", "nvme-tcp"]:
        raise LabError(f"tshark's malformation check missed crafted broken frames: {bad}")
