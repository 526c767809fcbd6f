#!/usr/bin/env python3
"""tools/bench/nvmet_repeat.py: one fio job shape, again and again, on one lab of the appliance.

A diagnostic beside `make bench BENCH=nvmet`, not part of it: the judge runs each job once per round
on a lab that has run the others before it, so a figure that depends on what ran earlier in the same
lab shows there as noise between runs. This boots one appliance lab (CMB or DRAM mode, as the judge
does, or the judge's Linux nvmet-tcp target) and the Linux initiator, then runs each job of a list N times in turn, printing each run's
figures as the judge prints them.

  tools/bench/nvmet_repeat.py [cmb|dram|linux] [N] [JOB ...]   (from the repository's top, after make image)

JOB is rw:bs:iodepth:numjobs (default: randread:4k:16:4 randread:4k:16:1, the judge's 4-job run and
its 4 KiB random reads). BENCH_FIO_SECS sets each run's length (default 10).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("BENCH_FIO_SECS", "10")
import benchlib as bl  # noqa: E402
import nvmet  # noqa: E402
from lab import Lab  # noqa: E402

DEFAULT_JOBS = ["randread:4k:16:4", "randread:4k:16:1"]


def main(argv):
    mode = argv[1] if len(argv) > 1 else "cmb"
    n = int(argv[2]) if len(argv) > 2 else 3
    jobs = [j.split(":") for j in (argv[3:] or DEFAULT_JOBS)]
    if mode not in ("cmb", "dram", "linux") or n < 1 or any(len(j) != 4 for j in jobs):
        sys.exit(__doc__)
    bl.lab_setup()
    with Lab("nvmet-repeat-" + mode, capture=False) as lab:
        t = nvmet.LinuxTarget(lab) if mode == "linux" else nvmet.ApplianceTarget(lab, mode)
        lab.start()
        t.ready()
        for i in range(n):
            for rw, bs, qd, numjobs in jobs:
                f = t.job(f"{rw} {bs} QD {qd} x {numjobs} (run {i + 1})", rw, bs, int(qd), int(numjobs))
                print(f"  busy (cores): target {f['target_busy']:.2f} (vCPU {f['target_vcpu_busy']:.2f}), "
                      f"initiator {f['initiator_busy']:.2f} (vCPU {f['initiator_vcpu_busy']:.2f}), "
                      f"initiator rx interrupts per I/O {f['init_rx_irq_per_io']:.2f}, host load {os.getloadavg()[0]:.1f}",
                      flush=True)


if __name__ == "__main__":
    main(sys.argv)
