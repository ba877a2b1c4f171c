#!/usr/bin/python3
"""The ranks' state through procmgr itself (procmgr.save / load on a real
procmgrd, not a stand-in), against torch.save to a local file, the same
with fsync, and a plain memory copy (the limit): the time the training loop
is blocked per save, interleaved trial by trial. Then the restore after a
restart: generation 0 saves SIZE through procmgr and to a file and exits 1;
procmgr restarts it, and generation 1 times procmgr.load (a mapping) and
the bytes read into a tensor, against torch.load of the file.

Run as one rank under procmgr, on the testbed or a node:

    srun -N1 -n1 --procmgr-restart=on-failure:1 /usr/bin/python3 \\
        bench/state/procmgr_bench.py [--sizes 64M,1G] [--trials 5] [--dir /var/tmp]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
import procmgr  # noqa: E402
import torch  # noqa: E402


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def save_file(path, t, sync):
    torch.save(t, path + ".tmp")
    if sync:
        fd = os.open(path + ".tmp", os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
    os.replace(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="64M,1G")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--dir", default="/var/tmp")
    ap.add_argument("--restore-size", default="1G")
    ap.add_argument("--ways", default="",
                    help="comma-separated subset of the ways (all by default): fewer copies "
                         "of SIZE held at once for the large sizes")
    a = ap.parse_args()
    path = os.path.join(a.dir, "pm-bench-state-%s.pt" % os.environ.get("SLURM_JOB_ID", "x"))
    size_r = parse_size(a.restore_size)
    if procmgr.restart_count() == 1:
        t0 = time.perf_counter()
        view, info = procmgr.load_info("restore")
        t1 = time.perf_counter()
        t = torch.frombuffer(view, dtype=torch.float32).clone()  # every byte read
        t2 = time.perf_counter()
        d = torch.load(path)
        t3 = time.perf_counter()
        assert torch.equal(t, d)
        os.unlink(path)
        print("# restore %d MiB after a restart: procmgr.load %.2f ms (mapped), "
              "+ read into a tensor %.1f ms; torch.load of the file %.1f ms; "
              "version %d, %d ms old" % (size_r >> 20, (t1 - t0) * 1e3, (t2 - t0) * 1e3,
                                        (t3 - t2) * 1e3, info["version"], info["age_ms"]),
              flush=True)
        return 0
    pending = []

    def copied_only(h):
        h.copied()
        pending.append(h)

    print("# load average %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    print("size way trial seconds")
    for size in [parse_size(s) for s in a.sizes.split(",")]:
        t = torch.rand(size // 4)
        dst = torch.empty_like(t)
        buf = t.numpy().data
        ways = {
            "memcpy": lambda: dst.copy_(t),
            "procmgr_save": lambda: procmgr.save("bench", buf, step=1),
            # The loop blocked only until the bytes are copied; the hand-over
            # (unmap, seal, reply) in the background, waited for after the
            # clock stops (as the next save would).
            "procmgr_copied": lambda: copied_only(procmgr.save("bench_c", buf, step=1,
                                                                wait=False)),
            # Without the next version's file allocated in the background
            # (what every save cost before it was).
            "procmgr_save_fresh": lambda: procmgr.save("bench_fresh", buf, step=1,
                                                       prepare=False),
            "torch_save": lambda: save_file(path, t, False),
            "torch_save_fsync": lambda: save_file(path, t, True),
        }
        if a.ways:
            ways = {w: f for w, f in ways.items() if w in a.ways.split(",") or w == "memcpy"}
        res = {w: [] for w in ways}
        for k in range(a.trials):
            for w, f in ways.items():
                t0 = time.perf_counter()
                f()
                dt = time.perf_counter() - t0
                if pending:
                    pending.pop().wait()
                res[w].append(dt)
                print(size, w, k, "%.4f" % dt, flush=True)
        base = statistics.median(res["memcpy"])
        for w in ways:
            m = statistics.median(res[w])
            print("# %d MiB %s median %.4f s, %.2fx memcpy" % (size >> 20, w, m, m / base),
                  flush=True)
        del t, dst, buf
    # Drop the bench's own blob before the restore's: the node's limit.
    procmgr.save("bench", b"x", step=0)
    procmgr.save("bench_fresh", b"x", step=0)
    procmgr.save("bench_c", b"x", step=0)
    t = torch.rand(size_r // 4)
    procmgr.save("restore", t.numpy().data, step=7)
    torch.save(t, path)
    print("# generation 0 saved %d MiB for the restore; exiting 1" % (size_r >> 20), flush=True)
    os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
