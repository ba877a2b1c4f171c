#!/usr/bin/python3
"""What saving every step costs a training loop, through procmgr itself.

    srun -N1 -n1 --procmgr /usr/bin/python3 bench/state/loop_cost.py \
        [--size 64M] [--steps 10] [--trials 7] [--work N]

A loop with SIZE bytes of parameters (one float32 tensor): each step does
a fixed amount of compute that reads the parameters (a forward and
backward pass stand-in: matrix products on a copy-free view) and then
changes every parameter in place (the optimizer's step). Ways, interleaved
trial by trial, each timed per step over --steps steps:
  none          no save (the baseline)
  memcpy        a copy of the parameters into a buffer made once, after the
                optimizer (the limit the issue names: "a memcpy")
  procmgr       procmgr.save after the optimizer, waited for (swap: the
                default, the file of two versions back written again)
  procmgr_commit  the same with PROCMGR_STATE_SWAP=0: a fresh file per
                version, sealed (the default before swap)
  procmgr_bg    procmgr.save(..., wait=False) after the optimizer, its
                wait() just before the next optimizer step (the compute in
                between reads the parameters only)
  procmgr_copied  procmgr.save(..., wait=False) after the optimizer and its
                copied() at once (the loop blocked for the copy only; the
                hand-over in the background, waited for before the next save)
  procmgr_map, procmgr_copied_map
                procmgr and procmgr_copied with PROCMGR_STATE_PREPARE=map
                (the next file mapped and every page touched ahead, instead
                of only allocated)
  torch_save    torch.save to a local file after the optimizer
The cost of a way is the median over trials of its step time minus none's in
the same trial; the figure is that cost over memcpy's (the issue's aim: at
most 1.1).
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
import procmgr  # noqa: E402


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="64M")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--trials", type=int, default=7)
    ap.add_argument("--work", type=int, default=384, help="matrix side of the compute")
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--ways", default="", help="comma-separated subset (none and memcpy always)")
    a = ap.parse_args()
    if not procmgr.state.available():
        print("loop_cost: run it under srun --procmgr (no PROCMGR_STATE_SOCK)", file=sys.stderr)
        return 2
    size = parse_size(a.size)
    params = torch.rand(size // 4)
    dst = torch.empty_like(params)
    buf = params.numpy().data
    m = params[: a.work * a.work].view(a.work, a.work)
    path = os.path.join(a.dir, "pm-loop-cost-%s.pt" % os.environ.get("SLURM_JOB_ID", "x"))
    pending = [None]

    def compute():
        # Reads the parameters only, as forward and backward do.
        x = m
        for _ in range(8):
            x = torch.mm(x, m).clamp_(-1, 1)
        return float(x[0, 0])

    def optimizer():
        params.mul_(0.9999)

    def after(way, step):
        os.environ["PROCMGR_STATE_PREPARE"] = "map" if way.endswith("_map") else "1"
        # The map ways and procmgr_commit as before swap: a fresh file per
        # version, sealed by procmgrd.
        os.environ["PROCMGR_STATE_SWAP"] = "0" if way.endswith(("_map", "_commit")) else "1"
        if way == "memcpy":
            dst.copy_(params)
        elif way == "procmgr":
            procmgr.save("loop", buf, step=step)
        elif way == "procmgr_commit":
            procmgr.save("loop_commit", buf, step=step)
        elif way == "procmgr_bg":
            pending[0] = procmgr.save("loop_bg", buf, step=step, wait=False)
        elif way == "procmgr_map":
            procmgr.save("loop_map", buf, step=step)
        elif way in ("procmgr_copied", "procmgr_copied_map"):
            pending[0] = procmgr.save(way, buf, step=step, wait=False)
            pending[0].copied()
        elif way == "torch_save":
            torch.save(params, path)

    def before_optimizer():
        if pending[0] is not None:
            pending[0].wait()
            pending[0] = None

    ways = ["none", "memcpy", "procmgr", "procmgr_bg", "procmgr_copied", "procmgr_commit",
            "procmgr_map", "procmgr_copied_map", "torch_save"]
    if a.ways:
        ways = [w for w in ways if w in ("none", "memcpy") or w in a.ways.split(",")]
    print("# load average %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    res = {w: [] for w in ways}
    blocked = {w: [] for w in ways}
    print("way trial step_median_s blocked_median_s")
    for k in range(a.trials):
        for w in ways:
            times, waits = [], []
            for s in range(a.steps):
                t0 = time.perf_counter()
                compute()
                t1 = time.perf_counter()
                before_optimizer()
                t1b = time.perf_counter()
                optimizer()
                t2 = time.perf_counter()
                after(w, s)
                t3 = time.perf_counter()
                times.append(t3 - t0)
                # The loop waiting on the save: the call itself, and a
                # background save's wait before the optimizer.
                waits.append((t1b - t1) + (t3 - t2))
            before_optimizer()
            med = statistics.median(times)
            res[w].append(med)
            blocked[w].append(statistics.median(waits))
            print(w, k, "%.4f" % med, "%.4f" % blocked[w][-1], flush=True)
    base = statistics.median(res["none"])
    bm = statistics.median(blocked["memcpy"])
    # Each trial's way against the same trial's none (the machine's load
    # moves between trials more than within one).
    cost = {w: statistics.median([x - n for x, n in zip(res[w], res["none"])]) for w in ways}
    print("# %d MiB, %d steps x %d trials: step without saving %.1f ms (median)"
          % (size >> 20, a.steps, a.trials, base * 1e3))
    for w in ways[1:]:
        b = statistics.median(blocked[w])
        print("# %s: +%.1f ms per step, %.2fx memcpy's cost; the loop blocked %.1f ms, %.2fx memcpy's"
              % (w, cost[w] * 1e3, cost[w] / cost["memcpy"] if cost["memcpy"] > 0 else float("nan"),
                 b * 1e3, b / bm if bm > 0 else float("nan")))
    if os.path.exists(path):
        os.unlink(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
