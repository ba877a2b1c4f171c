"""An unmodified script for --procmgr-warm=python: (tests/integration/
warm.bats): it knows nothing of procmgr. Logs what a script sees (its
argv, __name__, sys.path[0], the generation's environment, whether json
was imported before it ran, whether this process is a fork of procmgr's
python fork server: its command line is the server's, and the name of its
parent; with SHOW_PATH, where its modules come from), crashes as
CRASH_RANK in generation 0 once CRASH_GO exists, and waits for ever with
HOLD set."""
import os
import sys
import time

PRELOADED = "json" in sys.modules
with open("/proc/self/cmdline", "rb") as f:
    FORKED = b"procmgr/standby.py" in f.read()
with open("/proc/%d/comm" % os.getppid()) as f:
    PARENT = f.read().strip()
fd = os.open(os.environ["PM_LOG"], os.O_WRONLY | os.O_APPEND)
os.write(fd, ("script %d name=%s argv=%s path0=%s gen=%s rank=%s preloaded=%s forked=%s "
                "parent=%s\n" % (
    os.getpid(), __name__, ",".join(sys.argv), sys.path[0],
    os.environ.get("PROCMGR_RESTART_COUNT", ""), os.environ.get("RANK", ""),
    PRELOADED, FORKED, PARENT)).encode())
if os.environ.get("SHOW_PATH"):
    # Where modules come from: the working directory never (as `python
    # script.py`), the module next to the script preloaded under warm.
    os.write(fd, ("path %d gen=%s path0=%s cwd_in_path=%s warmnext=%s\n" % (
        os.getpid(), os.environ.get("PROCMGR_RESTART_COUNT", ""), sys.path[0],
        any(p in ("", ".", os.getcwd()) for p in sys.path),
        getattr(sys.modules.get("warmnext"), "WHERE", "-"))).encode())
os.close(fd)
if os.environ.get("PROCMGR_RESTART_COUNT") == "0" and \
        os.environ.get("RANK") == os.environ.get("CRASH_RANK"):
    while not os.path.exists(os.environ["CRASH_GO"]):
        time.sleep(0.01)
    sys.exit(1)
while os.environ.get("HOLD"):
    time.sleep(1)
