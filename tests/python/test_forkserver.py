"""procmgr's python fork server (python/procmgr/standby.py) run for real
as procmgr-rank runs it: this process is the supervisor (a child
subreaper, the warm channel's other end); the server imports, says ready,
and forks each generation's process, which must become our child, run
the script as `python script.py` would and end with the script's status."""
import ctypes
import os
import socket
import subprocess
import sys
import tempfile
import unittest

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
BOOT = ("import sys; sys.path.insert(0, %r)\n"
        "from procmgr.standby import main\nmain()\n" % SRC)

SCRIPT = r"""
import json, os, sys
PRE = "preload_me" in sys.modules
with open(os.environ["OUT"], "a") as f:
    f.write("%d|%d|%d|%s|%s|%s|%s|%s\n" % (os.getpid(), os.getppid(), os.getpgid(0),
            __name__, ",".join(sys.argv), os.environ.get("GEN_VAR", "-"),
            os.environ.get("PROCMGR_WARM_FD", "-"), PRE))
sys.exit(int(os.environ.get("CODE", "0")))
"""


def subreaper():
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER


class ForkServer(unittest.TestCase):
    def setUp(self):
        if not subreaper():
            self.skipTest("no PR_SET_CHILD_SUBREAPER")
        self.dir = tempfile.mkdtemp()
        self.script = os.path.join(self.dir, "script.py")
        with open(self.script, "w") as f:
            f.write(SCRIPT)
        self.out = os.path.join(self.dir, "out")
        with open(os.path.join(self.dir, "preload_me.py"), "w") as f:
            f.write("X = 1\n")
        with open(os.path.join(self.dir, "threads_me.py"), "w") as f:
            f.write("import threading, time\n"
                    "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n")

    def server(self, mods):
        ours, theirs = socket.socketpair()
        env = dict(os.environ, OUT=self.out, PROCMGR_WARM_FD=str(theirs.fileno()),
                   PYTHONPATH=self.dir)
        p = subprocess.Popen([sys.executable, "-c", BOOT, mods, "--", self.script, "a", "b c"],
                             env=env, pass_fds=(theirs.fileno(),), stderr=subprocess.PIPE,
                             start_new_session=False)
        theirs.close()
        self.addCleanup(ours.close)
        self.sock = ours
        return p, ours.makefile("rwb", buffering=0)

    def generation(self, ch, gen, code):
        ch.write(b"env GEN_VAR=g%d\nenv CODE=%d\nstart %d\n" % (gen, code, gen))
        line = ch.readline()
        self.assertRegex(line, rb"^pid [0-9]+\n$")
        pid = int(line.split()[1])
        # Ours to wait for: reparented to us, not the server's.
        wpid, status = os.waitpid(pid, 0)
        self.assertEqual(wpid, pid)
        self.assertTrue(os.WIFEXITED(status))
        self.assertEqual(os.WEXITSTATUS(status), code)
        return pid

    def test_each_generation_is_a_fork_of_one_server(self):
        p, ch = self.server("preload_me,json")
        self.assertEqual(ch.readline(), b"ready\n")
        a = self.generation(ch, 1, 3)
        b = self.generation(ch, 2, 0)
        self.assertNotEqual(a, b)
        self.assertIsNone(p.poll())  # the server stays for the next one
        with open(self.out) as f:
            lines = [l.split("|") for l in f.read().splitlines()]
        self.assertEqual(len(lines), 2)
        for (pid, ppid, pgid, name, argv, var, fd, pre), want, gen in zip(lines, (a, b), (1, 2)):
            self.assertEqual(int(pid), want)
            self.assertEqual(int(ppid), os.getpid())   # the supervisor's child
            self.assertEqual(int(pgid), want)          # its own process group
            self.assertEqual(name, "__main__")
            self.assertEqual(argv, "%s,a,b c" % self.script)
            self.assertEqual(var, "g%d" % gen)         # the generation's environment
            self.assertEqual(fd, "-")                  # not the server's channel
            self.assertEqual(pre, "True")              # imported once, by the server
        ch.close()
        self.sock.close()
        self.assertEqual(p.wait(timeout=30), 0)        # the channel closed: it ends
        p.stderr.close()

    def test_a_thread_before_the_fork_is_refused(self):
        p, ch = self.server("threads_me")
        self.assertEqual(ch.read(), b"")               # never says ready
        self.assertEqual(p.wait(timeout=30), 78)       # PM_WARM_REFUSED_EXIT
        err = p.stderr.read().decode()
        self.assertIn("2 threads run in the fork server after importing threads_me", err)
        self.assertIn("every generation starts cold", err)
        self.assertFalse(os.path.exists(self.out))
        p.stderr.close()


if __name__ == "__main__":
    unittest.main()
