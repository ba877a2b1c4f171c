# A rank of the introspection tests (run by Debian's /usr/bin/python3, whose
# frames gdb can read with python3-dbg): rank STUCK_RANK beats once, then
# spins in spin() for ever; the others beat in work() for RUN seconds. Each
# logs its start in $PM_LOG first.
import os
import time


def beat():
    path = os.environ.get("PROCMGR_HEARTBEAT")
    if path:
        open(path, "a").close()
        os.utime(path)


def spin():
    while True:
        time.sleep(0.1)


def work():
    # The heartbeat inline, not through beat(): a stack taken at any moment
    # then has work() as its innermost Python frame (a rank caught inside
    # beat() made the hang test's summary "3 distinct" once, in CI).
    path = os.environ.get("PROCMGR_HEARTBEAT")
    end = time.time() + float(os.environ.get("RUN", "300"))
    while time.time() < end:
        if path:
            open(path, "a").close()
            os.utime(path)
        time.sleep(0.2)


rank = os.environ["RANK"]
with open(os.environ["PM_LOG"], "a") as log:
    log.write("start rank=%s gen=%s pid=%d\n" % (rank, os.environ.get("PROCMGR_RESTART_COUNT"), os.getpid()))
# COLLECTIVE=1: every rank joins a gloo process group (torch) and beats
# after one all_reduce; then rank STUCK_RANK spins while the others wait
# for it in the next all_reduce.
if os.environ.get("COLLECTIVE"):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method="env://")
    t = torch.ones(4)
    dist.all_reduce(t)
    beat()
    if rank == os.environ.get("STUCK_RANK"):
        spin()
    dist.all_reduce(t)
    dist.destroy_process_group()
    raise SystemExit(0)
beat()
if rank == os.environ.get("STUCK_RANK"):
    spin()
work()
