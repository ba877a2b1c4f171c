#!/usr/bin/python3
"""Buddy replication's throughput (issue 23): rank 0 saves SIZE bytes
through procmgr and times until procmgr.saved() says the version is safe
(its node's procmgrd sent it to its buddy, which keeps it and acknowledged
it), against a plain TCP copy of the same bytes from rank 0 to rank 1 (the
buddy's node, over the same addresses: the limit), interleaved trial by
trial. The plain copy writes from memory with socket.sendfile of a memory
file and reads into a preallocated buffer, as procmgrd's link does.

Two ranks on two nodes, one per node, under procmgr (node 0's buddy is
node 1 in a 2-node step):

    srun -N2 -n2 --ntasks-per-node=1 --procmgr /usr/bin/python3 \\
        bench/state/replicate.py [--sizes 64M,512M] [--trials 5] --dir SHARED_DIR
"""
import argparse
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
import procmgr  # noqa: E402


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def wait_file(path):
    while not os.path.exists(path):
        time.sleep(0.01)
    with open(path) as f:
        return f.read().strip()


def receiver(a, sizes):
    """Rank 1: one plain TCP copy per trial, into a buffer made once."""
    ls = socket.socket()
    ls.bind((socket.gethostbyname(os.environ["SLURMD_NODENAME"]), 0))
    ls.listen(1)
    host, port = ls.getsockname()
    tmp = os.path.join(a.dir, "replicate.addr.tmp")
    with open(tmp, "w") as f:
        f.write("%s %d" % (host, port))
    os.replace(tmp, os.path.join(a.dir, "replicate.addr"))
    for size in sizes:
        buf = bytearray(size)
        view = memoryview(buf)
        for _ in range(a.trials):
            c, _ = ls.accept()
            got = 0
            while got < size:
                n = c.recv_into(view[got:], size - got)
                if not n:
                    raise SystemExit("plain copy cut off")
                got += n
            c.sendall(b"k")
            c.close()
        del view, buf
    wait_file(os.path.join(a.dir, "replicate.done"))
    return 0


def sender(a, sizes):
    host, port = wait_file(os.path.join(a.dir, "replicate.addr")).split()
    print("size way trial seconds GiB/s")
    for size in sizes:
        fd = os.memfd_create("bench")
        os.ftruncate(fd, size)
        os.pwrite(fd, os.urandom(1 << 20) * (size >> 20), 0)
        data = os.pread(fd, size, 0)
        res = {"tcp": [], "procmgr": [], "save": []}
        for k in range(a.trials):
            t0 = time.perf_counter()
            with socket.create_connection((host, int(port))) as c:
                with os.fdopen(os.dup(fd), "rb") as f:
                    c.sendfile(f, 0, size)
                assert c.recv(1) == b"k"
            res["tcp"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            v = procmgr.save("bench", data, step=k + 1)
            t1 = time.perf_counter()
            while True:
                s = procmgr.saved()["bench"]
                if s["version"] == v and s["safe"]:
                    break
                time.sleep(0.001)
            # The replication alone: from the save's return to safe.
            res["procmgr"].append(time.perf_counter() - t1)
            res["save"].append(t1 - t0)
            for w in res:
                print(size, w, k, "%.4f" % res[w][-1], "%.2f" % (size / res[w][-1] / 2**30),
                      flush=True)
        base = statistics.median(res["tcp"])
        for w in res:
            m = statistics.median(res[w])
            print("# %d MiB %s median %.4f s (%.2f GiB/s), %.2fx the plain copy's time"
                  % (size >> 20, w, m, size / m / 2**30, m / base), flush=True)
        os.close(fd)
        del data
    procmgr.save("bench", b"x")
    open(os.path.join(a.dir, "replicate.done"), "w").close()
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="64M,512M")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--dir", required=True, help="a directory both ranks see")
    a = ap.parse_args()
    sizes = [parse_size(s) for s in a.sizes.split(",")]
    if int(os.environ["RANK"]) == 1:
        return receiver(a, sizes)
    return sender(a, sizes)


if __name__ == "__main__":
    sys.exit(main())
