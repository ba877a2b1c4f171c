"""A rank for tests/integration/warm.bats: the warm contract without torch.

Logs "up PID gen=G" when it starts (G empty for a standby: no generation
yet), says ready (unless NO_READY), logs "start PID gen=G rank=R
restart=T", and in generation 0 rank CRASH_RANK exits 1 once the file
CRASH_GO exists (the test makes it when every standby waits). Other
generations end at once, 0."""
import os
import sys
import time

import procmgr

LOG = os.environ["PM_LOG"]


def log(line):
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


log("up %d gen=%s" % (os.getpid(), os.environ.get("PROCMGR_RESTART_COUNT", "")))
if not os.environ.get("NO_READY"):
    procmgr.ready()
gen = os.environ.get("PROCMGR_RESTART_COUNT", "")
rank = os.environ.get("RANK", "")
log("start %d gen=%s rank=%s restart=%s argv=%s" % (
    os.getpid(), gen, rank, os.environ.get("TORCHELASTIC_RESTART_COUNT", ""),
    ",".join(sys.argv[1:])))
if gen == "0" and rank == os.environ.get("CRASH_RANK"):
    go = os.environ.get("CRASH_GO")
    while go and not os.path.exists(go):
        time.sleep(0.01)
    sys.exit(1)
if gen == "0" and os.environ.get("HOLD"):
    while not os.path.exists(os.environ["HOLD"]):
        time.sleep(0.01)
sys.exit(0)
