#!/usr/bin/python3
"""A trial's rank for sweep.bats's state tests (issue 32): it loads
'model', says in $W/seen what it found ("TRIAL RANK RESTART FOUND", FOUND
the bytes another run saved, "none" if nothing), then MODE (argv[1]);
argv[2] is $W, the test's directory:

once      saves "TRIAL:RANK:RESTART" and ends.
failonce  saves it, and once every rank of the trial has, fails (exit 3)
          on its first run: a restart in place follows, which must find
          its own save.
safe      saves it padded to 1 MiB, waits until the buddy node holds
          that version (procmgr.saved()'s safe), ends.
hold      saves nothing, says "up" in $W/up, waits for $W/go, ends.
holdsave  hold, saving it padded to 1 MiB first on the trial's first run
          only ($W has a marker per trial and rank).
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))
import procmgr  # noqa: E402

W = sys.argv[2]
trial = os.environ["PROCMGR_TRIAL"]
rank = procmgr.rank()
restart = procmgr.restart_count()


def say(path, line):
    with open(os.path.join(W, path), "a") as f:
        f.write(line + "\n")


def main():
    mode = sys.argv[1]
    view = procmgr.load("model")
    found = "none" if view is None else bytes(view).rstrip(b"\0").decode()
    say("seen", "%s %d %d %s" % (trial, rank, restart, found))
    mine = ("%s:%d:%d" % (trial, rank, restart)).encode()
    if mode in ("safe", "holdsave"):
        mine = mine.ljust(1 << 20, b"\0")
    marker = os.path.join(W, "saved.%s.%d" % (trial, rank))
    if mode != "hold" and (mode != "holdsave" or not os.path.exists(marker)):
        procmgr.save("model", mine, step=1)
        open(marker, "w").close()
        if mode == "safe":
            t0 = time.monotonic()
            while not procmgr.saved()["model"]["safe"]:
                if time.monotonic() - t0 > 60:
                    say("seen", "%s %d never safe" % (trial, rank))
                    return 1
                time.sleep(0.02)
    if mode == "failonce" and restart == 0:
        # Every rank's save is in before any fails: the first failure stops
        # the trial's other ranks, and one stopped before its save would
        # find nothing at the restart for a reason of the test's own.
        world = int(os.environ["WORLD_SIZE"])
        t0 = time.monotonic()
        while not all(os.path.exists(os.path.join(W, "saved.%s.%d" % (trial, r)))
                      for r in range(world)):
            if time.monotonic() - t0 > 60:
                say("seen", "%s %d the others never saved" % (trial, rank))
                return 1
            time.sleep(0.02)
        return 3
    if mode in ("hold", "holdsave"):
        say("up", "%s %d %s" % (trial, rank, os.environ.get("SLURMD_NODENAME", "?")))
        while not os.path.exists(os.path.join(W, "go")):
            time.sleep(0.05)
    return 0


sys.exit(main())
