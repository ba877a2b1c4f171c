#!/usr/bin/python3
"""Where a save's time goes beyond the memory copy: the ways procmgr.save
could fill the memory file, each timed from the first byte copied until
the file is sealed (what the training loop waits for), interleaved trial
by trial with two copies of the same bytes into a buffer made once (the
limit): a plain memcpy (ctypes.memmove, one thread) and torch's copy_.

    /usr/bin/python3 bench/state/save_ways.py [--sizes 64M,256M,1G] [--trials 7]

Ways (the file is made before the clock starts, as procmgr.save's
background "prepare" does; its time is printed apart as prepare_s):
  pwrite_fresh     a fresh memfd, pwrite (no preparation: the first save)
  pwrite_falloc    memfd + posix_fallocate ahead; pwrite by up to 4 threads
                   (procmgr.save until this change)
  map_touched      memfd + fallocate + a writable MAP_POPULATE mapping whose
                   every page was written once ahead; the save is a memmove
                   into it (2 threads), munmap, seal (procmgr.save now)
  map_touched_1t   the same with one thread
  map_populated    the mapping populated but never written ahead
Each way's memory file is sealed and closed before the next is made: at
most three copies of SIZE at once (the source, the memcpy's buffer, one
file), so 4 GiB needs 12 GiB free.
"""
import argparse
import ctypes
import fcntl
import gc
import mmap
import os
import resource
import statistics
import threading
import time

import torch

SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def minflt():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def memmove_parts(dst, src, n, parts):
    step = (n // parts + 4095) & ~4095
    ths = [threading.Thread(target=ctypes.memmove,
                            args=(dst + i * step, src + i * step, min(step, n - i * step)))
           for i in range(1, parts) if i * step < n]
    for t in ths:
        t.start()
    ctypes.memmove(dst, src, min(step, n))
    for t in ths:
        t.join()


def pwrite_parts(fd, view, n, parts):
    step = (n // parts + 4095) & ~4095

    def part(a, b):
        while a < b:
            a += os.pwrite(fd, view[a:b], a)
    ths = [threading.Thread(target=part, args=(i * step, min(n, (i + 1) * step)))
           for i in range(1, parts) if i * step < n]
    for t in ths:
        t.start()
    part(0, min(step, n))
    for t in ths:
        t.join()


def memfd(n, falloc):
    fd = os.memfd_create("bench", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, n)
    if falloc:
        os.posix_fallocate(fd, 0, n)
    return fd


def mapped(n, touch):
    fd = memfd(n, True)
    m = mmap.mmap(fd, n, mmap.MAP_SHARED | mmap.MAP_POPULATE, mmap.PROT_READ | mmap.PROT_WRITE)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        m.madvise(mmap.MADV_HUGEPAGE)
    c = ctypes.c_char.from_buffer(m)
    if touch:
        ctypes.memset(ctypes.addressof(c), 0, n)
    return [fd, m, c]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="64M,256M,1G")
    ap.add_argument("--trials", type=int, default=7)
    a = ap.parse_args()
    cpus = os.cpu_count() or 1
    print("# load average at start %.2f %.2f %.2f, %d CPUs, torch threads %d"
          % (os.getloadavg() + (cpus, torch.get_num_threads())))
    print("size way trial seconds minflt")
    for size in [parse_size(s) for s in a.sizes.split(",")]:
        t = torch.rand(size // 4)
        dst = torch.empty_like(t)
        dst.copy_(t)
        src = t.data_ptr()
        view = memoryview(t.numpy()).cast("B")
        res = {}
        prep = {}

        def timed(way, prepare, run):
            t0 = time.perf_counter()
            ctx = prepare()
            prep.setdefault(way, []).append(time.perf_counter() - t0)
            f0 = minflt()
            t0 = time.perf_counter()
            run(ctx)
            dt = time.perf_counter() - t0
            res.setdefault(way, []).append(dt)
            return dt, minflt() - f0

        def sealed(fd):
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
            os.close(fd)

        phases = {}

        def by_map(parts, way):
            def run(ctx):
                fd, m, c = ctx
                ctx.clear()  # the mapping's last exports, so that it can close
                t0 = time.perf_counter()
                memmove_parts(ctypes.addressof(c), src, size, parts)
                t1 = time.perf_counter()
                del c
                m.close()
                t2 = time.perf_counter()
                sealed(fd)
                t3 = time.perf_counter()
                for ph, x in (("copy", t1 - t0), ("munmap", t2 - t1), ("seal", t3 - t2)):
                    phases.setdefault((way, ph), []).append(x)
            return run

        ways = {
            "memcpy": (lambda: None, lambda _: ctypes.memmove(dst.data_ptr(), src, size)),
            "torch_copy_": (lambda: None, lambda _: dst.copy_(t)),
            "pwrite_fresh": (lambda: None,
                             lambda _: [fd := memfd(size, False),
                                        pwrite_parts(fd, view, size, 1), sealed(fd)]),
            "pwrite_falloc": (lambda: memfd(size, True),
                              lambda fd: [pwrite_parts(fd, view, size,
                                                       min(4, cpus) if size >= 16 << 20 else 1),
                                          sealed(fd)]),
            "map_touched": (lambda: mapped(size, True), by_map(min(2, cpus), "map_touched")),
            "map_touched_1t": (lambda: mapped(size, True), by_map(1, "map_touched_1t")),
            "map_populated": (lambda: mapped(size, False), by_map(min(2, cpus), "map_populated")),
        }
        for k in range(a.trials):
            for w, (p, r) in ways.items():
                dt, flt = timed(w, p, r)
                gc.collect()
                print(size, w, k, "%.4f" % dt, flt, flush=True)
        base = statistics.median(res["memcpy"])
        for w in ways:
            m = statistics.median(res[w])
            print("# %d MiB %s median %.4f s, %.2fx memcpy; prepare %.4f s"
                  % (size >> 20, w, m, m / base, statistics.median(prep[w])), flush=True)
        for (w, ph), xs in phases.items():
            print("#   %s %s median %.4f s (%.2fx memcpy)"
                  % (w, ph, statistics.median(xs), statistics.median(xs) / base))
        del t, dst, view
        gc.collect()
    print("# load average at end %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
