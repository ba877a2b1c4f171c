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
SERVER = os.path.join(SRC, "procmgr", "standby.py")  # run as a file, as procmgr-rank does

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
        p = subprocess.Popen([sys.executable, SERVER, mods, "--", self.script, "a", "b c"],
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


class Path0(unittest.TestCase):
    """standby.path0: what python puts first on sys.path for each kind of
    command, against what the interpreter itself put there."""

    def setUp(self):
        sys.path.insert(0, SRC)
        from procmgr import standby
        sys.path.remove(SRC)
        self.path0 = standby.path0
        self.top = tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", self.top])
        os.mkdir(os.path.join(self.top, "real"))
        os.mkdir(os.path.join(self.top, "app"))
        os.symlink("real", os.path.join(self.top, "link"))
        show = "import sys; print(sys.path[0] if sys.path else '')\n"
        for f in ("real/s.py", "app/__main__.py"):
            with open(os.path.join(self.top, f), "w") as out:
                out.write(show)
        import zipfile
        with zipfile.ZipFile(os.path.join(self.top, "app.zip"), "w") as z:
            z.writestr("__main__.py", show)

    def flags(self, isolated=0, safe_path=False):
        return type("F", (), {"isolated": isolated, "safe_path": safe_path})()

    def python_says(self, opts, target):
        return subprocess.run([sys.executable] + opts + [target], cwd=self.top, check=True,
                              stdout=subprocess.PIPE, text=True).stdout.strip()

    def test_like_the_interpreter(self):
        cwd = os.getcwd()
        os.chdir(self.top)
        try:
            for target in ("real/s.py", "link/s.py", os.path.join(self.top, "link/s.py"),
                           "app", "app.zip"):
                with self.subTest(target=target):
                    self.assertEqual(self.path0("script", target, self.flags()),
                                     self.python_says([], target))
            for target in ("app", "app.zip"):  # run from themselves even under -I
                self.assertEqual(self.path0("script", target, self.flags(isolated=1)),
                                 self.python_says(["-I"], target))
            self.assertEqual(self.path0("module", "m", self.flags()), self.top)
            for f in (self.flags(isolated=1), self.flags(safe_path=True)):
                self.assertIsNone(self.path0("script", "real/s.py", f))
                self.assertIsNone(self.path0("module", "m", f))
        finally:
            os.chdir(cwd)


WARMARGV = os.environ.get("PM_TEST_WARMARGV", "")

# What a script sees of where modules come from: sys.path, and whether the
# module next to it (preloaded by the server, or its own import) is there.
PATH_SCRIPT = r"""
import json, os, sys
import colorsys, csv  # the script's own imports, after the fork
with open("/proc/self/cmdline", "rb") as f:
    forked = b"procmgr/standby.py" in f.read()
try:
    from next_to_script import WHERE
except ImportError:
    WHERE = None  # -I: neither its directory nor PYTHONPATH
with open(os.environ["OUT"], "a") as f:
    f.write(json.dumps({"path": sys.path, "forked": forked, "next": WHERE}) + "\n")
"""

# A module another user planted: says it was imported (through posix, a
# builtin: never found on sys.path, so a planted os.py works too).
PLANT = ("import posix as _p\n"
         "_fd = _p.open(%r, _p.O_WRONLY | _p.O_APPEND | _p.O_CREAT, 0o666)\n"
         "_p.write(_fd, b'%s\\n')\n"
         "_p.close(_fd)\n")


def planted_names():
    """Every module name a python might import: the standard library's
    (3.10+), every top-level module loaded here, the site hooks, and the
    test's own."""
    names = set(getattr(sys, "stdlib_module_names", ())) | set(sys.builtin_module_names)
    names |= {m.split(".")[0] for m in sys.modules}
    names |= {"sitecustomize", "usercustomize", "procmgr", "next_to_script", "json",
              "email", "colorsys", "csv", "runpy", "socket", "gc", "time"}
    return sorted(n for n in names if n.isidentifier() and n != "__main__")


def interpreters():
    """This python, Debian's, and PM_TEST_PYTHONS (colon-separated, e.g.
    older ones, by hand)."""
    found = []
    for py in [sys.executable, "/usr/bin/python3"] + \
            [p for p in os.environ.get("PM_TEST_PYTHONS", "").split(":") if p]:
        real = os.path.realpath(py)
        if os.access(py, os.X_OK) and real not in [os.path.realpath(f) for f in found]:
            found.append(py)
    return found


@unittest.skipUnless(os.access(WARMARGV, os.X_OK),
                     "no pm-warmargv (PM_TEST_WARMARGV; make check builds it)")
class ModulePath(unittest.TestCase):
    """The server run with the command line procmgr-rank builds
    (common/warm.c through tests/unit/pm-warmargv) in a working directory
    that is not the script's, where every module name is planted: the
    server and its generation find modules exactly as `python script.py`
    (same options) does from there, the module next to the script
    first, and nothing planted is imported."""

    def setUp(self):
        if not subreaper():
            self.skipTest("no PR_SET_CHILD_SUBREAPER")
        self.top = tempfile.mkdtemp()
        self.addCleanup(subprocess.run, ["rm", "-rf", self.top])
        self.sdir = os.path.join(self.top, "scripts")
        self.cwd = os.path.join(self.top, "shared")
        self.pp = os.path.join(self.top, "pythonpath")
        for d in (self.sdir, self.cwd, self.pp):
            os.mkdir(d)
        self.script = os.path.join(self.sdir, "script.py")
        with open(self.script, "w") as f:
            f.write(PATH_SCRIPT)
        with open(os.path.join(self.sdir, "next_to_script.py"), "w") as f:
            f.write("WHERE = 'script'\n")
        with open(os.path.join(self.pp, "next_to_script.py"), "w") as f:
            f.write("WHERE = 'pythonpath'\n")
        self.mark = os.path.join(self.top, "planted")
        for name in planted_names():
            with open(os.path.join(self.cwd, name + ".py"), "w") as f:
                f.write(PLANT % (self.mark, name))
        self.out = os.path.join(self.top, "out")
        self.env = dict(os.environ, OUT=self.out, PYTHONPATH=self.pp)
        for name in ("PYTHONSAFEPATH", "PYTHONSTARTUP", "PYTHONHOME", "PROCMGR_WARM_FD"):
            self.env.pop(name, None)

    def planted(self):
        try:
            with open(self.mark) as f:
                return f.read().split()
        except FileNotFoundError:
            return []

    def record(self):
        with open(self.out) as f:
            lines = f.read().splitlines()
        os.unlink(self.out)
        self.assertEqual(len(lines), 1)
        return __import__("json").loads(lines[0])

    def cold(self, py, opts):
        subprocess.run([py] + opts + [self.script], cwd=self.cwd, env=self.env, check=True,
                       timeout=60)
        return self.record()

    def warm(self, py, opts, mods):
        argv = subprocess.run([WARMARGV, SERVER, mods, py] + opts + [self.script],
                              stdout=subprocess.PIPE, check=True).stdout
        argv = [a.decode() for a in argv.split(b"\0")[:-1]]
        self.assertEqual(argv[argv.index("--") + 1:], opts + [self.script])
        ours, theirs = socket.socketpair()
        self.addCleanup(ours.close)
        p = subprocess.Popen(argv, cwd=self.cwd, env=dict(self.env, PROCMGR_WARM_FD=str(
            theirs.fileno())), pass_fds=(theirs.fileno(),), stderr=subprocess.PIPE)
        theirs.close()
        ch = ours.makefile("rwb", buffering=0)
        ready = ch.readline()
        if ready != b"ready\n":
            p.kill()
            self.fail("the server did not say ready (%r; modules imported from the working "
                      "directory: %s): %s" % (ready, self.planted(), p.stderr.read().decode()))
        ch.write(b"start 1\n")
        line = ch.readline()
        self.assertRegex(line, rb"^pid [0-9]+\n$")
        _, status = os.waitpid(int(line.split()[1]), 0)
        self.assertEqual(status, 0)
        ch.close()
        ours.close()
        self.assertEqual(p.wait(timeout=30), 0)
        p.stderr.close()
        return self.record()

    def test_the_plant_is_live(self):
        # The control: what -c (the server's start before) does there.
        subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, %r)\n"
                        "from procmgr.standby import main" % SRC], cwd=self.cwd, env=self.env,
                       stderr=subprocess.DEVNULL, timeout=60)
        # Up to 3.13 -c runs and imports socket from here; 3.14 registers
        # the -c source with linecache first, and the planted linecache
        # (imported from here) fails that before the code runs: live either way.
        self.assertTrue({"socket", "linecache"} & set(self.planted()), self.planted())

    def test_modules_found_as_python_script_py_finds_them(self):
        for py in interpreters():
            safe = subprocess.run([py, "-P", "-c", "pass"], stderr=subprocess.DEVNULL).returncode == 0
            for opts in ([], ["-u", "-B"], ["-E"], ["-s"], ["-I"]) + ((["-P"],) if safe else ()):
                with self.subTest(py=py, opts=opts):
                    if os.path.exists(self.mark):
                        os.unlink(self.mark)  # said by an earlier case already
                    cold = self.cold(py, opts)
                    no_path0 = "-I" in opts or "-P" in opts
                    mods = "json,email.message" + ("" if no_path0 else ",next_to_script")
                    warm = self.warm(py, opts, mods)
                    self.assertTrue(warm["forked"])
                    self.assertFalse(cold["forked"])
                    self.assertEqual(warm["path"], cold["path"])
                    self.assertNotIn("", warm["path"])
                    self.assertNotIn(self.cwd, warm["path"])
                    if no_path0:
                        self.assertNotIn(self.sdir, warm["path"])
                    else:
                        self.assertEqual(warm["path"][0], self.sdir)
                    self.assertEqual(warm["next"], cold["next"])
                    self.assertEqual(warm["next"], {"-I": None, "-P": "pythonpath"}.get(
                        opts[0] if opts else "", "script"))
                    self.assertEqual(self.planted(), [])


if __name__ == "__main__":
    unittest.main()
