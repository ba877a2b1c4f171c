#!/usr/bin/python3
"""The cost of saving a rank's state, by way: into a memory file handed over
a Unix socket and sealed by the receiver (procmgr's mechanism, runtime/io/
memblob.c), torch.save to a local file, the same with fsync, and a plain
memory copy of the same bytes (the limit). Interleaved trial by trial.

This measures the mechanism only: the receiver is a thread of this process
doing what procmgrd does on a save (receive the descriptor, seal it), not
procmgrd itself, which does not take saves yet.

    /usr/bin/python3 bench/state/save.py [--sizes 64M,1G] [--trials 5] [--dir /var/tmp]
"""
import argparse, fcntl, os, socket, statistics, sys, tempfile, threading, time

import torch

SEALS = fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def receiver(sock, held):
    while True:
        msg, fds, _, _ = socket.recv_fds(sock, 256, 1)
        if not msg:
            return
        fd = fds[0]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, SEALS)
        old = held.pop(0) if held else None
        held.append(fd)  # the new version replaces the old one
        if old is not None:
            os.close(old)
        sock.sendall(b"OK\n")


def save_memfd(sock, t):
    """What procmgr.save does: the tensor's bytes into a sealable memory
    file, the descriptor sent; blocked until it is sealed. write(), not a
    mapping: copying through a fresh shared mapping takes a page fault per
    4 KiB page (17x slower here under load)."""
    buf = t.numpy().data.cast("B")
    fd = os.memfd_create("state", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, len(buf))
    n = 0
    while n < len(buf):
        n += os.pwrite(fd, buf[n:], n)
    socket.send_fds(sock, [b"SAVE model %d\n" % len(buf)], [fd])
    os.close(fd)
    assert sock.recv(3) == b"OK\n"


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
    a = ap.parse_args()
    a_sock, b_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    held = []
    th = threading.Thread(target=receiver, args=(b_sock, held), daemon=True)
    th.start()
    d = tempfile.mkdtemp(prefix="pm-bench-state-", dir=a.dir)
    path = os.path.join(d, "ckpt.pt")
    print("size way trial seconds")
    try:
        for size in [parse_size(s) for s in a.sizes.split(",")]:
            t = torch.rand(size // 4)  # float32
            dst = torch.empty_like(t)
            ways = {
                "memcpy": lambda: dst.copy_(t),
                "procmgr_memfd": lambda: save_memfd(a_sock, t),
                "torch_save": lambda: save_file(path, t, False),
                "torch_save_fsync": lambda: save_file(path, t, True),
            }
            res = {w: [] for w in ways}
            for k in range(a.trials):
                for w, f in ways.items():
                    t0 = time.perf_counter()
                    f()
                    dt = time.perf_counter() - t0
                    res[w].append(dt)
                    print(size, w, k, "%.4f" % dt, flush=True)
            base = statistics.median(res["memcpy"])
            for w in ways:
                m = statistics.median(res[w])
                print("# %s %s median %.4f s, %.2fx memcpy" % (a.sizes and size, w, m, m / base),
                      flush=True)
            del t, dst
    finally:
        a_sock.close()
        th.join(5)
        for fd in held:
            os.close(fd)
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)


if __name__ == "__main__":
    main()
