#!/usr/bin/python3
"""A rank for security.bats that floods its node's procmgrd (issue 32
item 4). Generation 0: rank 0 waits for $FLOOD_DIR/go.flood, then opens up
to N (argv[1]) connections to each socket a rank can reach on its node,
the state socket (PROCMGR_STATE_SOCK) and the supervisors' socket
(PROCMGR_SOCK), holding every one, and says how many procmgrd closed;
writes $FLOOD_DIR/flooded, waits for $FLOOD_DIR/go.close, closes them and
saves through the state socket as usual. Every rank writes its pid to
$FLOOD_DIR/pid.RANK and waits (the test kills one: a restart).
Generation 1: every rank says so and exits 0."""
import os
import resource
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
import procmgr  # noqa: E402

D = os.environ["FLOOD_DIR"]
gen = procmgr.restart_count()
rank = procmgr.rank()


def log(msg):
    print(f"[rank {rank} gen {gen}] {msg}", flush=True)


def wait_file(name, limit=120):
    t0 = time.monotonic()
    while not os.path.exists(os.path.join(D, name)):
        if time.monotonic() - t0 > limit:
            log(f"no {name} after {limit} s")
            sys.exit(3)
        time.sleep(0.05)


def flood(path, kind, n, limit_s=20):
    """Up to n connections to path, within limit_s: (held, how many the
    other end closed)."""
    socks, t0 = [], time.monotonic()
    while len(socks) < n and time.monotonic() - t0 < limit_s:
        s = socket.socket(socket.AF_UNIX, kind | socket.SOCK_NONBLOCK)
        try:
            s.connect(path)
        except BlockingIOError:  # the backlog is full: procmgrd is behind
            s.close()
            time.sleep(0.002)
            continue
        except OSError as e:
            s.close()
            log(f"connect {path}: {e}")
            time.sleep(0.01)
            continue
        socks.append(s)
    time.sleep(2)  # procmgrd has accepted (and closed) what it will
    closed = 0
    for s in socks:
        try:
            closed += not s.recv(4096)  # non-blocking: b"" once procmgrd closed it
        except BlockingIOError:
            pass  # held open
        except OSError:
            closed += 1
    return socks, closed


def main():
    with open(os.path.join(D, f"pid.{rank}.{gen}"), "w") as f:
        f.write(str(os.getpid()))
    if gen > 0:
        log("done")
        return 0
    if rank == 0:
        n = int(sys.argv[1])
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        wait_file("go.flood")
        st, st_closed = flood(os.environ["PROCMGR_STATE_SOCK"], socket.SOCK_SEQPACKET, n)
        su, su_closed = flood(os.environ["PROCMGR_SOCK"], socket.SOCK_STREAM, n)
        log(f"flood: state socket {len(st)} opened, {st_closed} closed by procmgrd, "
            f"{len(st) - st_closed} held; supervisors' socket {len(su)} opened, "
            f"{su_closed} closed by procmgrd, {len(su) - su_closed} held")
        open(os.path.join(D, "flooded"), "w").close()
        wait_file("go.close")
        for s in st + su:
            s.close()
        log(f"saved after the flood: version {procmgr.save('after', b'x' * 4096, step=1)}")
    time.sleep(120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
