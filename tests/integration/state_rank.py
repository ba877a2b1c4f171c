#!/usr/bin/python3
"""A rank for state.bats, saving and loading through procmgr's state
socket with the procmgr module. MODE (argv[1]):

cutoff  generation 0 saves 'blob' (version 1), begins a second save, writes
        half of it and SIGKILLs itself; generation 1 loads 'blob' and says
        what it got.
limit   a save over the site's per-rank limit is refused, the rank goes
        on and saves again within it.
hold    saves 'secret', says so, waits for GO (a file), loads it again and
        says whether it is intact.
fill    saves MIB MiB (argv[2]), waits until the buddy holds it (safe),
        says so, waits for GO.
safe    saves 'model' and says what saved() says at once and once the
        buddy node acknowledged the version (procmgr.saved()'s safe).
rate    saves MIB MiB (argv[2]) and says how long until it was safe.
hugetlb saves 'huge' from a hugetlbfs memory file (MFD_HUGETLB, which
        sendfile cannot read), then 'model' as usual, and says whether each
        became safe within 30 s.
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
import procmgr  # noqa: E402
from procmgr import state  # noqa: E402

gen = procmgr.restart_count()
rank = procmgr.rank()


def log(msg):
    print(f"[rank {rank} gen {gen}] {msg}", flush=True)


def wait_go():
    go = os.environ["GO"]
    while not os.path.exists(go):
        time.sleep(0.05)


def wait_safe(name, version, limit=60):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        s = procmgr.saved()[name]
        if s["version"] == version and s["safe"]:
            return time.monotonic() - t0
        time.sleep(0.01)
    return None


def main():
    mode = sys.argv[1]
    n = 1 << 20
    if mode == "cutoff":
        if gen == 0:
            log("saved version %d" % procmgr.save("blob", b"A" * n, step=1))
            text, _ = state._client.ask("begin blob %d" % n)
            fd = os.memfd_create("half", os.MFD_ALLOW_SEALING)
            os.ftruncate(fd, n)
            os.pwrite(fd, b"B" * (n // 2), 0)
            log("begun a second save (%s), killing myself half way" % text)
            os.kill(os.getpid(), signal.SIGKILL)
        view, info = procmgr.load_info("blob")
        intact = view is not None and bytes(view) == b"A" * n
        log("restored version %d step %d size %d: %s" % (
            info["version"], info["step"], info["size"], "intact" if intact else "CORRUPT"))
        return 0 if intact else 1
    if mode == "limit":
        log("saved version %d" % procmgr.save("small", b"s" * (n // 2), step=1))
        try:
            procmgr.save("big", b"b" * (2 * n), step=2)
            log("big save ACCEPTED")
            return 1
        except procmgr.StateError as e:
            log("refused: %s" % e)
        log("went on: saved version %d" % procmgr.save("small", b"t" * (n // 2), step=3))
        log("saved: %s" % sorted(procmgr.saved()))
        return 0
    if mode == "hold":
        procmgr.save("secret", b"rank %d's secret" % rank, step=1)
        log("saved secret")
        wait_go()
        view = procmgr.load("secret")
        log("secret %s" % ("intact" if bytes(view) == b"rank %d's secret" % rank
                           else "CHANGED"))
        return 0
    if mode == "fill":
        mib = int(sys.argv[2])
        v = procmgr.save("fill", bytearray(mib << 20), step=1)
        if wait_safe("fill", v) is None:
            log("NOT SAFE after 60 s")
            return 1
        log("saved %d MiB" % mib)
        wait_go()
        return 0
    if mode == "safe":
        v = procmgr.save("model", b"m" * n, step=7)
        log("saved version %d, safe at once: %s" % (v, procmgr.saved()["model"]["safe"]))
        took = wait_safe("model", v)
        if took is None:
            log("version %d NOT SAFE after 60 s" % v)
            return 1
        log("version %d safe: True (the buddy holds it)" % v)
        v = procmgr.save("model", b"n" * n, step=8)
        log("version %d safe at once: %s" % (v, procmgr.saved()["model"]["safe"]))
        log("version %d safe: %s" % (v, wait_safe("model", v) is not None))
        return 0
    if mode == "rate":
        mib = int(sys.argv[2])
        v = procmgr.save("rated", bytearray(mib << 20), step=1)
        took = wait_safe("rated", v, limit=120)
        if took is None:
            log("NOT SAFE after 120 s")
            return 1
        log("%d MiB safe after %d ms" % (mib, took * 1000))
        return 0
    if mode == "hugetlb":
        import mmap
        size = 2 << 20  # one huge page (2 MiB, the default size)
        fd = os.memfd_create("huge", os.MFD_CLOEXEC | os.MFD_HUGETLB | os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, size)
        with mmap.mmap(fd, size) as m:
            m[:size] = b"h" * size
        text, _ = state._client.ask("begin huge %d" % size)
        text, _ = state._client.ask("commit %s 1" % text.split()[1], fd)
        os.close(fd)
        log("saved huge: %s" % text)
        v = procmgr.save("model", b"m" * n, step=1)
        for name, ver in (("model", v), ("huge", int(text.split()[1]))):
            log("%s version %d safe: %s" % (name, ver, wait_safe(name, ver, limit=30) is not None))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
