#!/usr/bin/python3
"""tools/bench/nvmet_wire.py - `make bench BENCH=nvmet_wire`: where the time of a 128 KiB NVMe/TCP
command goes on the wire, the appliance against Linux nvmet-tcp (issue 18).

Boots, together, the appliance lab of tools/bench/nvmet.py in each mode of BENCH_WIRE_MODES (default
"cmb") and the Linux nvmet-tcp lab, all on CAPTURED links (captures cost ~15 %: compare captured to
captured), runs the jobs of BENCH_WIRE_JOBS (default 128 KiB sequential write and read; fio QD
BENCH_FIO_QD, BENCH_FIO_SECS, default 10 s) on each target one right after the other, then reads
each capture (the initiator's side of the link):

  - per command, from the NVMe/TCP PDUs (TCP byte streams reassembled here; tshark's nvme-tcp
    dissection of the same capture gives the PDU counts it is checked against): writes capsule ->
    R2T -> first H2CData byte -> last H2CData byte -> response; reads capsule -> first C2HData byte
    -> last -> response;
  - how many commands are in each phase on average over the job (the target's queue as the wire sees it);
  - with BENCH_WIRE_TSHARK=1, tshark's count of the PDUs by type (a check of the PDU cut; ~1 min per
    capture of this size);
  - TCP: the receive window each side advertised, bytes in flight against it, how long the receiver
    took to ACK, retransmitted segments, and idle gaps (no frame either way for >= 1 ms).

Writes docs/bench-nvmet-wire.md. The analysis alone: nvmet_wire.py --pcap FILE [--port 4420].
"""
import collections
import contextlib
import os
import statistics
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("BENCH_FIO_SECS", "10")
os.environ.setdefault("BENCH_NVMET_SWEEP", "0")
import benchlib as bl  # noqa: E402
import nvmet  # noqa: E402

PORT = 4420
GAP_NS = 1_000_000
PDU_NAMES = {0: "ICReq", 1: "ICResp", 2: "H2CTermReq", 3: "C2HTermReq", 4: "CapsuleCmd", 5: "CapsuleResp",
             6: "H2CData", 7: "C2HData", 9: "R2T"}
MODES = os.environ.get("BENCH_WIRE_MODES", "cmb").split()
JOB_KEYS = os.environ.get("BENCH_WIRE_JOBS", "write read").split()
ROUNDS = int(os.environ.get("BENCH_WIRE_ROUNDS", "1"))  # the job list this many times, alternating targets
JOBS = {"write": ("128 KiB seq write", "write", "128k"), "read": ("128 KiB seq read", "read", "128k"),
        "randwrite": ("4 KiB rand write", "randwrite", "4k"), "randread": ("4 KiB rand read", "randread", "4k")}


def frames(path):
    """(t_ns, src, dst, sport, dport, seq, ack, flags, win, opts, payload) of every IPv4 TCP frame."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic == 0xA1B2C3D4:
        e, nano = "<", False
    elif magic == 0xA1B23C4D:
        e, nano = "<", True
    else:
        raise ValueError(f"{path}: not a little-endian pcap")
    off = 24
    n = len(data)
    while off + 16 <= n:
        sec, frac, incl, _orig = struct.unpack_from(e + "IIII", data, off)
        off += 16
        pkt = data[off:off + incl]
        off += incl
        if len(pkt) < 54 or pkt[12:14] != b"\x08\x00":
            continue
        ihl = (pkt[14] & 15) * 4
        if pkt[23] != 6:
            continue
        tot = struct.unpack_from("!H", pkt, 16)[0]
        ip = pkt[14:14 + tot]
        src, dst = ip[12:16], ip[16:20]
        tcp = ip[ihl:]
        sport, dport, seq, ack, doff, flags, win = struct.unpack_from("!HHIIBBH", tcp, 0)
        thl = (doff >> 4) * 4
        t = sec * 1_000_000_000 + (frac if nano else frac * 1000)
        yield t, src, dst, sport, dport, seq, ack, flags, win, tcp[20:thl], bytes(tcp[thl:])


def wscale(opts):
    """The window-scale option's shift in a SYN's options, or None."""
    i = 0
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(opts):
            break
        ln = opts[i + 1]
        if kind == 3 and ln == 3:
            return opts[i + 2]
        i += max(ln, 2)
    return None


class Direction:
    """One direction of a TCP connection: its byte stream with the time each byte first arrived in order."""

    def __init__(self):
        self.isn = None
        self.next = None             # next in-order sequence number
        self.chunks = []             # (stream offset, t_ns, length) of in-order arrivals
        self.buf = bytearray()
        self.ooo = {}                # seq -> (t, payload)
        self.retrans = 0
        self.segs = 0
        self.seg_bytes = []
        self.wscale = None
        self.max_sent = 0            # highest offset sent (for flight)


def reassemble(path, port=PORT):
    """{conn: {'c2t': Direction, 't2c': Direction, 'events': [...]}} for the connections to port.
    events: (t, kind, dir, values) for ACK/window analysis: ('seg', dir, end_off), ('ack', dir, acked_off, win)."""
    conns = {}
    for t, src, dst, sport, dport, seq, ack, flags, win, opts, pay in frames(path):
        if dport == port:
            key, d = (src, sport), "c2t"
        elif sport == port:
            key, d = (dst, dport), "t2c"
        else:
            continue
        c = conns.setdefault(key, {"c2t": Direction(), "t2c": Direction(), "events": [], "syn_ws": {}})
        me, other = c[d], c["t2c" if d == "c2t" else "c2t"]
        if flags & 0x02:  # SYN
            me.isn = seq
            me.next = (seq + 1) & 0xFFFFFFFF
            me.wscale = wscale(opts)
            continue
        if me.isn is None:
            continue
        # window advertised by this side, acknowledging the other side's stream
        if flags & 0x10 and other.isn is not None:
            scale = (me.wscale or 0) if (me.wscale is not None and other.wscale is not None) else 0
            acked = (ack - other.isn - 1) & 0xFFFFFFFF
            c["events"].append((t, "ack", d, acked, win << scale))
        if not pay:
            continue
        me.segs += 1
        me.seg_bytes.append(len(pay))
        rel = (seq - me.isn - 1) & 0xFFFFFFFF
        cur = (me.next - me.isn - 1) & 0xFFFFFFFF
        if rel + len(pay) <= cur:
            me.retrans += 1
            continue
        if rel > cur:
            me.ooo[rel] = (t, pay)
            continue
        pay = pay[cur - rel:]
        me.chunks.append((cur, t, len(pay)))
        me.buf += pay
        cur += len(pay)
        while me.ooo:
            nxt = [k for k in me.ooo if k <= cur]
            if not nxt:
                break
            for k in nxt:
                t2, p2 = me.ooo.pop(k)
                if k + len(p2) > cur:
                    p2 = p2[cur - k:]
                    me.chunks.append((cur, t2, len(p2)))
                    me.buf += p2
                    cur += len(p2)
        me.next = (me.isn + 1 + cur) & 0xFFFFFFFF
        me.max_sent = max(me.max_sent, cur)
        c["events"].append((t, "seg", d, cur, 0))
    return conns


def byte_times(direction):
    """A function: stream offset -> time (ns) the byte arrived in order."""
    import bisect
    offs = [o for o, _, _ in direction.chunks]
    times = [t for _, t, _ in direction.chunks]

    def at(off):
        i = bisect.bisect_right(offs, off) - 1
        return times[max(i, 0)]
    return at


def pdus(direction):
    """[(type, start_t, end_t, header bytes)] of the NVMe/TCP PDUs in a reassembled direction."""
    at = byte_times(direction)
    buf, out, off = direction.buf, [], 0
    while off + 8 <= len(buf):
        ptype, _flags, hlen, _pdo, plen = struct.unpack_from("<BBBBI", buf, off)
        if plen < 8 or off + plen > len(buf):
            break
        out.append((ptype, at(off), at(off + plen - 1), bytes(buf[off:off + max(hlen, 8)])))
        off += plen
    return out


def commands(conn):
    """Per command (keyed by cid, in order): dict of times: cmd, r2t, data0, data1, resp; plus op."""
    c2t, t2c = pdus(conn["c2t"]), pdus(conn["t2c"])
    live, done = {}, []
    merged = sorted([(p[1], "c2t", p) for p in c2t] + [(p[1], "t2c", p) for p in t2c], key=lambda x: x[0])
    for _, d, (ptype, t0, t1, hdr) in merged:
        if ptype == 4 and len(hdr) >= 12:
            opc, cid = hdr[8], struct.unpack_from("<H", hdr, 10)[0]
            nlb = struct.unpack_from("<H", hdr, 56)[0] + 1 if len(hdr) >= 58 else 0
            live[cid] = {"op": opc, "cmd": t1, "cid": cid, "blocks": nlb}
        elif ptype == 9 and len(hdr) >= 20:
            cid = struct.unpack_from("<H", hdr, 8)[0]
            if cid in live:
                live[cid].setdefault("r2t", t1)
                live[cid]["r2ts"] = live[cid].get("r2ts", 0) + 1
        elif ptype in (6, 7) and len(hdr) >= 20:
            cid = struct.unpack_from("<H", hdr, 8)[0]
            if cid in live:
                live[cid].setdefault("data0", t0)
                live[cid]["data1"] = t1
                if ptype == 7 and hdr[1] & 0x08:  # C2HData SUCCESS: no response capsule follows
                    live[cid]["resp"] = t1
                    done.append(live.pop(cid))
        elif ptype == 5 and len(hdr) >= 24:
            cid = struct.unpack_from("<H", hdr, 20)[0]
            if cid in live:
                live[cid]["resp"] = t1
                done.append(live.pop(cid))
    return done


def stat(values):
    """'mean / median / p90' in ms of values in ns."""
    if not values:
        return "-"
    v = sorted(values)
    return (f"{statistics.mean(v) / 1e6:.1f} / {v[len(v) // 2] / 1e6:.1f} / {v[int(len(v) * 0.9)] / 1e6:.1f}")


def analyse(path, op=None, blocks=None, port=PORT):
    """The wire figures of the capture's I/O commands (of NVMe opcode op, 1 write 2 read, and of
    blocks 512-byte blocks, when given: the capture's clock is QEMU's, so jobs are told apart by what
    they send, not by time): a dict."""
    conns = reassemble(path, port)
    io = [(k, c) for k, c in conns.items() if len(c["c2t"].buf) + len(c["t2c"].buf) > 1 << 20]
    if not io:
        raise bl.BenchError(f"{path}: no I/O connection to port {port}")
    key, conn = max(io, key=lambda kc: len(kc[1]["c2t"].buf) + len(kc[1]["t2c"].buf))
    cmds = [c for c in commands(conn) if c["op"] in (1, 2) and "resp" in c]
    if op is not None:
        cmds = [c for c in cmds if c["op"] == op and (blocks is None or c["blocks"] == blocks)]
    if not cmds:
        raise bl.BenchError(f"{path}: no complete I/O commands")
    cmds.sort(key=lambda c: c["cmd"])
    t0, t1 = cmds[0]["cmd"], max(c["resp"] for c in cmds)
    # the job's own time: rounds of the same job (BENCH_WIRE_ROUNDS) are apart by other targets' turns
    span, start, end = 0, cmds[0]["cmd"], cmds[0]["resp"]
    for c in cmds[1:]:
        if c["cmd"] - end > 2_000_000_000:
            span += end - start
            start = c["cmd"]
        end = max(end, c["resp"])
    span += end - start
    out = {"cmds": len(cmds), "span_s": span / 1e9, "writes": sum(c["op"] == 1 for c in cmds)}
    w = out["writes"] * 2 > len(cmds)
    out["op"] = "write" if w else "read"
    lat = [c["resp"] - c["cmd"] for c in cmds]
    out["lat"] = stat(lat)
    if w:
        phases = [("capsule -> R2T", "cmd", "r2t"), ("R2T -> first H2CData byte", "r2t", "data0"),
                  ("first -> last H2CData byte", "data0", "data1"), ("last H2CData byte -> response", "data1", "resp")]
        out["r2ts_per_cmd"] = statistics.mean(c.get("r2ts", 0) for c in cmds)
    else:
        phases = [("capsule -> first C2HData byte", "cmd", "data0"), ("first -> last C2HData byte", "data0", "data1"),
                  ("last C2HData byte -> response", "data1", "resp")]
    out["phases"] = []
    for name, a, b in phases:
        vals = [c[b] - c[a] for c in cmds if a in c and b in c]
        # average number of commands in this phase at any time (Little's law over the span)
        occ = sum(vals) / span if span else 0
        out["phases"].append((name, stat(vals), occ))
    out["inflight"] = sum(lat) / span if span else 0
    # TCP: the data direction
    dd = "c2t" if w else "t2c"
    rd = "t2c" if w else "c2t"
    data_dir = conn[dd]
    out["seg_mean"] = statistics.mean(data_dir.seg_bytes) if data_dir.seg_bytes else 0
    out["retrans"] = conn["c2t"].retrans, conn["t2c"].retrans
    out["segs"] = conn["c2t"].segs, conn["t2c"].segs
    # window / flight / ack delay of the data direction, within the commands' span
    sent_t = []         # (offset end, t) of the data direction's in-order arrivals
    wins, flights, ackd = [], [], []
    last_ack, last_win = 0, 0
    full = 0
    evs = [e for e in conn["events"] if t0 <= e[0] <= t1]
    pending = collections.deque()
    stall_win = stall_other = 0      # pauses of the data sender >= GAP_NS: window full at their start or not
    last_seg_t, last_full, last_off, full_since = None, False, 0, 0
    win_time = win_eps = 0           # time the sender could not send for a full window, and how often
    for t, kind, d, off, win in evs:
        if kind == "seg" and d == dd:
            if last_seg_t is not None and t - last_seg_t >= GAP_NS:
                if last_full:
                    stall_win += t - last_seg_t
                else:
                    stall_other += t - last_seg_t
            pending.append((off, t))
            flight = off - last_ack
            flights.append(flight)
            now_full = bool(last_win) and flight >= last_win - 1500
            if now_full and not last_full:
                full_since = t
            last_full = now_full
            full += last_full
            last_seg_t, last_off = t, off
        elif kind == "ack" and d == rd:
            if last_full and off + win - last_off >= 1500:
                # the window opened again: the time since the segment that filled it was the window's
                win_time += t - full_since
                win_eps += 1
                last_full = False
            if off > last_ack:
                while pending and pending[0][0] <= off:
                    o, ts = pending.popleft()
                    if o == off or not pending or pending[0][0] > off:
                        ackd.append(t - ts)
                last_ack = off
            last_win = win
            wins.append(win)
    out["win"] = (min(wins) if wins else 0, statistics.median(wins) if wins else 0, max(wins) if wins else 0)
    out["flight"] = (statistics.mean(flights) if flights else 0, max(flights) if flights else 0)
    out["window_full"] = full / len(flights) if flights else 0
    out["ack_delay"] = stat(ackd)
    out["stalls"] = (stall_win / 1e6, stall_other / 1e6)
    out["win_full"] = (win_time / span if span else 0, win_eps / len(cmds))
    # idle gaps: no frame in either direction for >= GAP_NS
    times = sorted(e[0] for e in evs)
    gaps = [b - a for a, b in zip(times, times[1:]) if GAP_NS <= b - a <= 2_000_000_000]
    out["gaps"] = (len(gaps), sum(gaps) / 1e6, sum(gaps) / span if span else 0)
    # the data on the wire: payload bytes / span
    out["mbs"] = sum(c["blocks"] for c in cmds) * 512 / 1e6 / (span / 1e9) if span else 0
    # tshark's view, for a check of our PDU cut: PDU counts by type
    return out


def main_secs(pid):
    """Host CPU seconds of a QEMU process's main thread (its device models' work outside the vCPU:
    the network backend, e1000e receive DMA, NVMe DMA; the thread whose id is the process's)."""
    with open(f"/proc/{pid}/task/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / bl.CLK_TCK


def tshark_counts(path):
    """{pdu type name: count} from tshark's nvme-tcp dissection (the check of our own PDU cut)."""
    import capture
    h = capture.histogram(path, "nvme-tcp", "nvme-tcp.type")
    return {PDU_NAMES.get(int(k), k): v for k, v in h.items()}


def report(title, a):
    lines = [f"### {title}: {a['cmds']} commands in {a['span_s']:.1f} s ({a['mbs']:.1f} MB/s on the wire), "
             f"{a['inflight']:.1f} in flight on average", "",
             "| phase | mean / median / p90 ms | commands in it on average |", "|---|---|---|",
             f"| whole command (capsule -> response) | {a['lat']} | {a['inflight']:.1f} |"]
    for name, s, occ in a["phases"]:
        lines.append(f"| {name} | {s} | {occ:.1f} |")
    lines += ["", f"TCP, the data direction: segments {a['seg_mean']:.0f} B on average; receive window min / median / max "
              f"{a['win'][0]} / {a['win'][1]:.0f} / {a['win'][2]} B; bytes in flight mean {a['flight'][0]:.0f}, "
              f"max {a['flight'][1]}; segments sent with the window (nearly) full {100 * a['window_full']:.0f} %; "
              f"ACK delay (segment -> the ACK covering it) {a['ack_delay']} ms; retransmitted segments "
              f"initiator {a['retrans'][0]}, target {a['retrans'][1]} (of {a['segs'][0]} / {a['segs'][1]}); "
              f"idle gaps >= 1 ms: {a['gaps'][0]}, {a['gaps'][1]:.0f} ms ({100 * a['gaps'][2]:.1f} % of the span); "
              f"pauses >= 1 ms of the data sender: {a['stalls'][0]:.0f} ms with the receive window full, "
              f"{a['stalls'][1]:.0f} ms with room in it; the receive window was full (flight >= window - 1500 B, "
              f"from the segment that filled it to the ACK that opened it) {100 * a['win_full'][0]:.0f} % of the span, "
              f"{a['win_full'][1]:.1f} times per command."]
    if "r2ts_per_cmd" in a:
        lines[-1] += f" R2Ts per write: {a['r2ts_per_cmd']:.2f}."
    return lines


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--pcap":
        for op, what in ((1, "128 KiB writes"), (2, "128 KiB reads")):
            try:
                print("\n".join(report(f"{sys.argv[2]}, {what}", analyse(sys.argv[2], op, 256))) + "\n")
            except bl.BenchError as e:
                print(e)
        print(tshark_counts(sys.argv[2]))
        return 0
    from lab import Lab
    bl.lab_setup()
    loads = [bl.loadavg()]
    t_start = time.monotonic()
    res = collections.defaultdict(dict)
    with contextlib.ExitStack() as stack:
        labs = {m: stack.enter_context(Lab(f"bench-nvmet-wire-{m.replace('/', '_')}", capture=True))
                for m in MODES + ["linux"]}
        targets = {}
        for m in MODES:
            # "MODE@DIR": the appliance image from ESP directory DIR (e.g. a build of the commit before a
            # fix), so that before and after run back to back in one run
            base, _, esp = m.partition("@")
            saved = os.environ.get("LAB_ESP")
            if esp:
                os.environ["LAB_ESP"] = esp
            try:
                targets[m] = nvmet.ApplianceTarget(labs[m], base)
            finally:
                if esp:
                    os.environ.pop("LAB_ESP", None)
                    if saved is not None:
                        os.environ["LAB_ESP"] = saved
            if esp:
                targets[m].title += f" ({os.path.basename(esp.rstrip('/'))})"
        targets["linux"] = nvmet.LinuxTarget(labs["linux"])
        for lab in labs.values():
            lab.start()
        for t in targets.values():
            t.ready()
        order = list(targets)
        marks = collections.defaultdict(list)
        for i, jk in enumerate(JOB_KEYS * ROUNDS):
            name, rw, bs = JOBS[jk]
            for key in order[i % len(order):] + order[:i % len(order)]:
                t = targets[key]
                pid = t.pids["target"]
                m0, t0 = main_secs(pid), time.time_ns()
                f = t.job(name, rw, bs)
                f["main_us_per_io"] = (main_secs(pid) - m0) * 1e6 / f["ios"] if f["ios"] else 0
                marks[key].append((name, t0, time.time_ns(), f))
        for key, t in targets.items():
            t.finish()
    loads.append(bl.loadavg())
    lines = [f"# NVMe/TCP on the wire: the appliance vs Linux nvmet-tcp ({bl.now_utc()})", "",
             f"Machine: {bl.machine()}; appliance and scripts at {bl.revision()}. Host load average before / after: "
             f"{' / '.join(loads)}. Run time {time.monotonic() - t_start:.0f} s.", "",
             f"`make bench BENCH=nvmet_wire` (tools/bench/nvmet_wire.py): the labs of `make bench BENCH=nvmet` "
             f"(modes {', '.join(MODES)} and Linux nvmet-tcp) on captured links (a capture costs ~15 %: compare these "
             f"figures with each other, not with docs/bench-nvmet.md), fio iodepth {nvmet.QD}, {nvmet.SECS} s per job, "
             f"{ROUNDS} round(s) of the jobs, each job on every target one after the other. Times are the initiator's (its QEMU writes the "
             "capture), per command from the NVMe/TCP PDUs of the I/O connection; mean / median / p90; 'commands "
             "in it on average' is the phase's total time over the span (Little's law): where the queue depth "
             "of 16 sits.", ""]
    def med(vals):
        return statistics.median(vals) if vals else 0

    summary = ["| job | target | fio MB/s per round | median | target CPU us/IO (vCPU, QEMU main thread), median |",
               "|---|---|---|---|---|"]
    body = []
    for key, t in targets.items():
        pcap = labs[key].links[0].pcap
        for jk in JOB_KEYS:
            name, rw, bs = JOBS[jk]
            fs = [f for n, _, _, f in marks[key] if n == name]
            mbs = [f["bytes"] / f["secs"] / 1e6 for f in fs]
            cpu = (f"{med([f['us_per_io'] for f in fs]):.0f} ({med([f['vcpu_us_per_io'] for f in fs]):.0f}, "
                   f"{med([f['main_us_per_io'] for f in fs]):.0f})")
            summary.append(f"| {name} | {t.title} | {', '.join(f'{m:.1f}' for m in mbs)} | {med(mbs):.1f} | {cpu} |")
            try:
                a = analyse(pcap, 1 if "write" in rw else 2, int(bs[:-1]) * 2)
            except bl.BenchError as e:
                body += [f"### {name}, {t.title}: {e}", ""]
                continue
            res[key][name] = a
            body += report(f"{name}, {t.title} (fio median {med(mbs):.1f} MB/s over {len(fs)} round(s); "
                           f"target CPU per I/O {cpu} us)", a) + [""]
        if os.environ.get("BENCH_WIRE_TSHARK", "0") == "0":
            continue
        try:
            body.append(f"tshark's nvme-tcp PDU counts over the whole capture ({t.title}): "
                        + ", ".join(f"{k} {v}" for k, v in sorted(tshark_counts(pcap).items())) + ".")
        except Exception as e:  # noqa: BLE001
            body.append(f"tshark on {t.title}'s capture failed: {str(e)[:200]}")
        body.append("")
    lines += summary + [""] + body
    bl.write_doc("bench-nvmet-wire.md", "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
